// Where an OSU paste's job shape comes from besides its tables (OMB prints no process count):
// the command lines that start osu_* binaries (through a launcher, after a prompt, continued
// with '\', wrapped by a mail client), batch allocations and job maps; split from osu.cpp.
#include "html.hpp"
#include "lines.hpp"
#include "osu_detail.hpp"
#include "text.hpp"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <string_view>

namespace scalefit::ingest::detail {
namespace {

/// OMB tests that print one figure per run and no message size: osu_barrier's and osu_ibarrier's
/// latency, osu_init's start-up time, osu_hello. Each: its binary, and its title as parse_title
/// returns it (lower case, without "OSU MPI" and "Test vX").
struct SizelessTest {
  std::string_view binary, title;
};
constexpr SizelessTest kSizelessTests[] = {{"osu_barrier", "barrier"},
                                           {"osu_ibarrier", "non-blocking barrier"},
                                           {"osu_init", "init"},
                                           {"osu_hello", "hello"}};

} // namespace

bool sizeless_test(const std::string &title) {
  const std::string t = to_lower(title);
  return std::any_of(std::begin(kSizelessTests), std::end(kSizelessTests),
                     [&](const SizelessTest &x) { return t.rfind(x.title, 0) == 0; });
}

bool sizeless_binary(const std::string &tok) {
  const std::string b = detail::base_name(tok);
  return std::any_of(std::begin(kSizelessTests), std::end(kSizelessTests),
                     [&](const SizelessTest &x) { return b == x.binary; });
}

namespace {

/// A token of a command pasted in prose or Markdown, without the backticks, quotes or emphasis
/// asterisks around it (`*srun -p part` ... `./osu_bibw*` in a mail client's bold).
std::string unquote(std::string t) {
  const auto wrap = [](char c) { return c == '`' || c == '"' || c == '\'' || c == '*'; };
  while (!t.empty() && (wrap(t.back()) || t.back() == ';'))
    t.pop_back();
  std::size_t b = 0;
  while (b < t.size() && wrap(t[b]))
    ++b;
  return t.substr(b);
}

/// Whether the osu_* binary at toks[k] starts a command although no launcher precedes it: it is
/// the line's first token, or follows a shell prompt (`$`, `user@host:~$`, `[u@h dir]#`, `>`,
/// `%`), environment settings (`MV2_USE_CUDA=1`) or a wrapper with options (`numactl -N 0`,
/// `taskset -c 2`, `time`). A binary named in prose ("running osu_latency locally") is not a
/// command: it still hints at the test, not at the command line.
bool starts_command(const std::vector<std::string> &toks, std::size_t k) {
  if (k == 0)
    return true;
  const std::string &prev = toks[k - 1];
  const char last = prev.empty() ? ' ' : prev.back();
  if (last == '$' || last == '#' || last == '>' || last == '%' ||
      prev.find('=') != std::string::npos)
    return true;
  static const std::set<std::string> wrappers{"time",   "numactl",    "taskset",    "nice", "env",
                                              "stdbuf", "hwloc-bind", "likwid-pin", "nsys"};
  for (std::size_t j = 0; j < k; ++j)
    if (wrappers.count(detail::base_name(toks[j])) || (toks[j].size() > 1 && toks[j][0] == '-'))
      return true;
  return false;
}

/// Whether a '#' comment line holds a command: a launcher within its first three tokens
/// ("# srun -n2 ...", "### Running: mpirun ..."), not one mentioned further on in prose.
bool comment_command(const std::vector<std::string> &toks) {
  const std::size_t n = std::min<std::size_t>(toks.size(), 3);
  return std::any_of(toks.begin(), toks.begin() + static_cast<long>(n), detail::is_launcher);
}

} // namespace

Launch scan_launch(const std::vector<SourceLine> &lines) {
  Launch out;
  detail::CommandJoiner joiner;
  std::vector<std::string> held; // a launcher line waiting for its binary
  int held_for = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view text = detail::strip_prefixes(lines[i].text).text;
    // A comment line counts only when it holds a launcher ("### Running: srun -n2 ...").
    const bool comment = !text.empty() && text.front() == '#';
    const auto line_toks = split_ws(text);
    if (line_toks.empty())
      continue;
    detail::fill_missing(out.alloc, detail::allocation_shape(line_toks));
    if (const auto h = detail::job_map_host(line_toks))
      out.map_hosts.insert(*h);
    std::vector<std::string> toks = joiner.feed(line_toks);
    if (toks.empty())
      continue; // continued on the next line
    for (auto &t : toks) {
      t = unquote(t);
      // TACC's ibrun echoes what it runs: "IBRUN: Command string is [mpirun_rsh -np 48 ...
      // ./osu_allreduce]": the brackets around the command are not part of its tokens.
      if (t.size() > 1 && t.front() == '[' && detail::is_launcher(std::string_view(t).substr(1)))
        t.erase(0, 1);
      if (t.size() > 1 && t.back() == ']' && detail::base_name(t).rfind("osu_", 0) == 0)
        t.pop_back();
    }
    std::size_t k = 0;
    while (k < toks.size() && detail::base_name(toks[k]).rfind("osu_", 0) != 0)
      ++k;
    const bool launcher_before =
        std::any_of(toks.begin(), toks.begin() + static_cast<long>(k), detail::is_launcher);
    if (comment && k < toks.size() && !comment_command(toks)) {
      held.clear(); // a remark that names a binary or a launcher in passing
      if (const auto test = detail::test_from_binary(toks[k]))
        out.binaries.emplace_back(i, *test);
      continue;
    }
    if (k == toks.size()) {
      // No binary: a launcher line may continue on the next lines without a backslash.
      if (!comment && std::any_of(toks.begin(), toks.end(), detail::is_launcher)) {
        held = toks;
        held_for = 0;
      } else if (!held.empty() && (comment || ++held_for >= 4)) {
        held.clear();
      } else if (!held.empty()) {
        held.insert(held.end(), toks.begin(), toks.end());
      }
      continue;
    }
    if (!launcher_before && !held.empty() && !comment) {
      toks.insert(toks.begin(), held.begin(), held.end());
      k += held.size();
    }
    held.clear();
    if (const auto test = detail::test_from_binary(toks[k]))
      out.binaries.emplace_back(i, *test);
    if (sizeless_binary(toks[k]))
      continue; // nothing of it is read (below): its command is not the file's
    std::size_t from = k;
    for (std::size_t j = 0; j < k; ++j)
      if (detail::is_launcher(toks[j])) {
        from = j;
        break;
      }
    if ((comment && from == k) || (from == k && !starts_command(toks, k)))
      continue;
    if (from == k) // no launcher: the command starts after the prompt (wrappers, settings kept)
      for (std::size_t j = 0; j < k; ++j)
        if (!toks[j].empty() && std::string_view("$#>%").find(toks[j].back()) != std::string::npos)
          from = j + 1;
    LaunchCommand cmd;
    cmd.index = i;
    for (std::size_t j = from; j < toks.size(); ++j)
      cmd.text += (j == from ? "" : " ") + toks[j];
    cmd.shape = detail::launch_shape(toks, k);
    if (out.commands.empty()) {
      out.command_line = cmd.text;
      out.shape = cmd.shape;
    }
    out.commands.push_back(std::move(cmd));
  }
  return out;
}

} // namespace scalefit::ingest::detail
