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

/// The value at extra[k1] (or extra[k1][k2]) of a context, or null where missing (older files).
nlohmann::json extra_at(const ContextRecord &c, const char *k1, const char *k2) {
  if (!c.extra.is_object() || !c.extra.contains(k1))
    return nullptr;
  const nlohmann::json &j = c.extra.at(k1);
  if (!k2)
    return j;
  return j.is_object() && j.contains(k2) ? j.at(k2) : nlohmann::json();
}

} // namespace

void check_same_method(const ContextRecord &file, const ContextRecord &run,
                       const std::string &path) {
  struct Field {
    const char *k1, *k2, *name, *option;
  };
  static constexpr Field kFields[] = {
      {"statistic", nullptr, "statistic", "--stat"},
      {"buffers", "mode", "buffers.mode", "--hot"},
      {"timer", "sync", "timer.sync", "--sync"},
      {"sampling", "mode", "sampling.mode", "--nccl-tests"},
      {"sampling", "batch", "sampling.batch", "--batch"},
      {"sampling", "graph_launches", "sampling.graph_launches", "-G"}};
  for (const Field &f : kFields) {
    const nlohmann::json a = extra_at(file, f.k1, f.k2), b = extra_at(run, f.k1, f.k2);
    if (!a.is_null() && !b.is_null() && a != b)
      throw InputError("'" + path + "' was measured with context " + f.name + " " + a.dump() +
                           ", this run with " + b.dump() +
                           ": --resume would mix incompatible points in one curve; rerun with "
                           "the file's " + f.option + " setting or choose another --out",
                       "", 0, f.option);
  }
}

bool is_device_output(const std::string &path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  return !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

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
  if (is_device_output(path)) {
    if (resume)
      throw InputError("'" + path + "' is a device or pipe, which holds no earlier points to "
                       "resume", "", 0, "--resume");
    return state; // written in place (a full disk, /dev/full, then fails at the first record)
  }
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
  // A crash (power loss) can leave the tail padded with NUL bytes, possibly with newlines among
  // them: drop the tail from the line holding the first NUL when nothing but NULs and newlines
  // follows it. NUL bytes followed by data stay, for read_records to name their line.
  if (const auto nul = text.find('\0'); nul != std::string::npos &&
                                         text.find_first_not_of(std::string("\0\n", 2), nul) ==
                                             std::string::npos) {
    const auto nl = nul == 0 ? std::string::npos : text.find_last_of('\n', nul - 1);
    state.valid_bytes = nl == std::string::npos ? 0 : nl + 1;
    state.truncate_partial_line = true;
    state.dropped_nul_padding = true;
  } else if (!text.empty() && text.back() != '\n') {
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
  for (const ContextRecord &c : set.contexts)
    check_same_method(c, ctx, path);
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
