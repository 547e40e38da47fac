// --out / --resume rules (see output.hpp).
#include "scalefit/bench/output.hpp"

#include "scalefit/bench/collective.hpp"
#include "scalefit/core/error.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace scalefit::bench {
namespace fs = std::filesystem;

bool same_context(const ContextRecord &a, const ContextRecord &b) {
  auto dtypes = [](const ContextRecord &c) {
    return c.extra.is_object() && c.extra.contains("dtypes") ? c.extra.at("dtypes")
                                                             : nlohmann::json();
  };
  return a.system == b.system && a.backend == b.backend && a.nranks == b.nranks &&
         a.nnodes == b.nnodes && a.ranks_per_node == b.ranks_per_node && dtypes(a) == dtypes(b);
}

namespace {

std::string describe(const ContextRecord &c) {
  auto d = c.extra.is_object() && c.extra.contains("dtypes") ? c.extra.at("dtypes").dump() : "[]";
  return "system '" + c.system + "', backend " + c.backend + ", " + std::to_string(c.nranks) +
         " ranks on " + std::to_string(c.nnodes) + " nodes x " + std::to_string(c.ranks_per_node) +
         ", dtypes " + d;
}

/// The nearest existing ancestor directory of `path` must be writable (we create the rest).
void check_creatable(const std::string &path) {
  fs::path dir = fs::absolute(fs::path(path)).parent_path();
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path())
    dir = dir.parent_path();
  if (!fs::is_directory(dir, ec))
    throw InputError("cannot create '" + path + "': '" + dir.string() + "' is not a directory", "",
                     0, "--out");
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError("cannot create '" + path + "': directory '" + dir.string() +
                         "' is not writable",
                     "", 0, "--out");
}

} // namespace

ResumeState prepare_output(const std::string &path, bool resume, const ContextRecord &ctx) {
  ResumeState state;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (!exists) {
    check_creatable(path);
    return state;
  }
  if (fs::is_directory(path, ec))
    throw InputError("'" + path + "' is a directory", "", 0, "--out");
  if (access(path.c_str(), W_OK) != 0)
    throw InputError("'" + path + "' is not writable", "", 0, "--out");
  const auto size = fs::file_size(path, ec);
  if (ec)
    throw InputError("cannot read '" + path + "': " + ec.message(), "", 0, "--out");
  if (size == 0)
    return state;
  if (!resume)
    throw InputError("'" + path +
                         "' already holds records; pass --resume to continue that "
                         "sweep, or choose a new --out file (nothing is overwritten)",
                     "", 0, "--out");
  // A killed run may have left an unterminated last line: ignore it (it holds no whole record).
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  state.valid_bytes = text.size();
  if (!text.empty() && text.back() != '\n') {
    const auto nl = text.find_last_of('\n');
    state.valid_bytes = nl == std::string::npos ? 0 : nl + 1;
    state.truncate_partial_line = true;
  }
  RecordSet set;
  if (state.valid_bytes > 0) {
    const std::string tmp = path + ".resume-check";
    if (state.truncate_partial_line) {
      {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(text.data(), static_cast<std::streamsize>(state.valid_bytes));
      }
      try {
        set = read_records(tmp);
      } catch (...) {
        fs::remove(tmp, ec);
        throw;
      }
      fs::remove(tmp, ec);
    } else {
      set = read_records(path);
    }
  }
  for (const ContextRecord &c : set.contexts)
    if (!same_context(c, ctx))
      throw InputError("'" + path + "' holds a different sweep (" + describe(c) +
                           ") than this run (" + describe(ctx) +
                           "); --resume continues only the same sweep: choose another --out",
                       "", 0, "--resume");
  for (const MeasurementRecord &m : set.measurements)
    state.done.emplace(m.key(), m);
  return state;
}

nlohmann::json not_run_entries(std::string_view backend, const std::vector<Op> &ops,
                               const std::vector<Placement> &placements) {
  nlohmann::json out = nlohmann::json::array();
  for (Op op : ops)
    for (Placement p : placements)
      if (const std::string why = not_run_reason(backend, op, p); !why.empty())
        out.push_back({{"op", op_name(op)}, {"placement", placement_name(p)}, {"why", why}});
  return out;
}

} // namespace scalefit::bench
