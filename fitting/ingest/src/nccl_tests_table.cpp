// nccl-tests table tokenizing: header detection, rank lines, rows (by the header's column names,
// never by fixed widths), glued numbers. Hand-written scanning only: no regex on log text.
//
//   before 2.13  : size count type [redop] [root] | time algbw busbw error | (same, in-place)
//                  (AllGather/AllToAll print no redop, Broadcast a root and no redop; a header
//                  column may be printed blank in the rows, as the redop of old alltoall_perf)
//   2.13 - 2.17  : size count type redop root | time algbw busbw #wrong | (same, in-place)
//   current      : the same, optionally `#bitdiff`, `i_min i_max i_p99 i_cv%` (-I) per half and a
//                  `timestamp` column; rccl-tests prints the same tables.
#include "nccl_tests_detail.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace scalefit::ingest::detail {

bool is_time_col(const std::string &c) {
  return c == "time" || c == "cputime";
}

std::string join(const std::vector<std::string> &v, const char *sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i)
      out += sep;
    out += v[i];
  }
  return out;
}

std::optional<Op> op_from_binary(std::string tok, std::string *stem) {
  while (!tok.empty() && (tok.back() == ':' || tok.back() == ',' || tok.back() == ';' ||
                          tok.back() == '"' || tok.back() == '\''))
    tok.pop_back();
  while (!tok.empty() && (tok.front() == '"' || tok.front() == '\''))
    tok.erase(tok.begin());
  const auto slash = tok.find_last_of('/');
  if (slash != std::string::npos)
    tok = tok.substr(slash + 1);
  std::string base = tok;
  if (base.size() > 4 && base.compare(base.size() - 4, 4, "_mpi") == 0)
    base.resize(base.size() - 4);
  if (base.size() <= 5 || base.compare(base.size() - 5, 5, "_perf") != 0)
    return std::nullopt;
  base.resize(base.size() - 5);
  if (!std::all_of(base.begin(), base.end(), [](char c) {
        return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
      }))
    return std::nullopt;
  if (stem)
    *stem = base;
  return parse_op(base);
}

std::optional<Op> op_from_banner(const std::vector<std::string> &toks) {
  if (toks.size() < 4)
    return std::nullopt;
  if (const auto op = op_from_binary(toks[3]))
    return op;
  if (toks.size() > 4 && toks[4].size() > 2 && toks[4].front() == '(')
    return op_from_binary(toks[4].substr(1, toks[4].size() - 2));
  return std::nullopt;
}

bool is_table_header(const std::vector<std::string> &toks) {
  return !toks.empty() && toks[0] == "size" &&
         std::count(toks.begin(), toks.end(), "type") == 1 &&
         std::any_of(toks.begin(), toks.end(), is_time_col);
}

std::optional<RankLine> parse_rank_line(const std::vector<std::string> &toks, long line) {
  // Rank N [Group G] Pid P on HOST device D [busid] NAME... (nccl-tests); scalefit-bench prints
  // `Rank N Node M Pid - on HOST device D NAME...` (its node index; no pid of other ranks' hosts).
  std::size_t i = 0;
  if (i < toks.size() && toks[i] == "#")
    ++i;
  if (i + 1 >= toks.size() || toks[i] != "Rank")
    return std::nullopt;
  const auto rank = to_i64(toks[i + 1]);
  if (!rank || *rank < 0 || *rank >= kMaxRecordRanks)
    return std::nullopt;
  i += 2;
  if (i + 1 < toks.size() && (toks[i] == "Group" || toks[i] == "Node"))
    i += 2;
  if (i + 1 >= toks.size() || toks[i] != "Pid" || !(to_i64(toks[i + 1]) || toks[i + 1] == "-"))
    return std::nullopt;
  i += 2;
  if (i + 1 >= toks.size() || toks[i] != "on")
    return std::nullopt;
  RankLine rl;
  rl.rank = static_cast<int>(*rank);
  rl.host = toks[i + 1];
  rl.line = line;
  i += 2;
  if (i + 1 < toks.size() && toks[i] == "device")
    i += 2;
  if (i < toks.size() && toks[i].front() == '[') {
    while (i < toks.size() && toks[i].back() != ']')
      ++i;
    ++i;
  }
  std::vector<std::string> rest(toks.begin() + static_cast<long>(std::min(i, toks.size())),
                                toks.end());
  rl.device = join(rest);
  return rl;
}

bool split_glued(std::vector<std::string> &toks, std::string &what) {
  // A token "-?D+.DD D+(.D+)?": the first number has exactly 2 decimals (nccl-tests' %.2f).
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const std::string &t = toks[i];
    std::size_t p = t.size() && t[0] == '-' ? 1 : 0;
    const std::size_t int_begin = p;
    while (p < t.size() && std::isdigit(static_cast<unsigned char>(t[p])))
      ++p;
    if (p == int_begin || p >= t.size() || t[p] != '.')
      continue;
    const std::size_t cut = p + 3;
    if (cut >= t.size() || !std::isdigit(static_cast<unsigned char>(t[p + 1])) ||
        !std::isdigit(static_cast<unsigned char>(t[p + 2])))
      continue;
    // The rest must be D+(.D+)?
    std::size_t q = cut, dots = 0;
    bool ok = std::isdigit(static_cast<unsigned char>(t[q])) != 0;
    for (; q < t.size() && ok; ++q) {
      if (t[q] == '.')
        ok = ++dots == 1 && q + 1 < t.size();
      else
        ok = std::isdigit(static_cast<unsigned char>(t[q])) != 0;
    }
    if (!ok)
      continue;
    const std::string a = t.substr(0, cut), b = t.substr(cut);
    what = "'" + t + "' read as '" + a + "' '" + b + "'";
    toks[i] = a;
    toks.insert(toks.begin() + static_cast<long>(i) + 1, b);
    return true;
  }
  return false;
}

std::size_t expected_tokens(const std::vector<std::string> &cols) {
  return cols.size() + (!cols.empty() && cols.back() == "timestamp" ? 1 : 0);
}

namespace {

std::vector<std::string> without(std::vector<std::string> cols, const std::string &name) {
  cols.erase(std::remove(cols.begin(), cols.end(), name), cols.end());
  return cols;
}

} // namespace

std::optional<RawRow> map_row(const std::vector<std::string> &header,
                              const std::vector<std::string> &toks, long line,
                              std::optional<Op> op) {
  std::vector<std::vector<std::string>> variants{header};
  // Before 2.13 some collectives print a header column blank in the rows (alltoall_perf's
  // redop); from 2.13 on redop and root are always printed ("none", -1).
  const bool old_format = std::count(header.begin(), header.end(), "#wrong") == 0;
  const bool has_redop = std::count(header.begin(), header.end(), "redop") > 0;
  const bool has_root = std::count(header.begin(), header.end(), "root") > 0;
  if (!old_format) {
    // A fork that prints nothing under redop for ops without a reduction (allgather).
    if (has_redop && (!op || !op_has_redop(*op)))
      variants.push_back(without(header, "redop"));
  } else if (has_redop && has_root) {
    // One of the two blank: a root is an integer, a redop is a name.
    const auto type_it = std::find(header.begin(), header.end(), "type");
    const std::size_t after_type = static_cast<std::size_t>(type_it - header.begin()) + 1;
    const bool next_is_int = after_type < toks.size() && to_i64(toks[after_type]).has_value();
    variants.push_back(without(header, next_is_int ? "redop" : "root"));
    variants.push_back(without(without(header, "redop"), "root"));
  } else if (has_redop) {
    variants.push_back(without(header, "redop"));
  } else if (has_root) {
    variants.push_back(without(header, "root"));
  }
  for (const auto &cols : variants) {
    if (expected_tokens(cols) != toks.size())
      continue;
    if (&cols != &variants.front()) {
      // A header with a blank column must still put a name under "type" and a number (or
      // N/A) under the first time.
      const auto ti = std::find(cols.begin(), cols.end(), "type");
      const auto tm = std::find_if(cols.begin(), cols.end(), is_time_col);
      if (ti == cols.end() || tm == cols.end())
        continue;
      const std::string &type_tok = toks[static_cast<std::size_t>(ti - cols.begin())];
      const std::string &time_tok = toks[static_cast<std::size_t>(tm - cols.begin())];
      if (to_double(type_tok) || (!to_double(time_tok) && time_tok != "N/A"))
        continue;
      const auto ro = std::find(cols.begin(), cols.end(), "root");
      if (!old_format && ro != cols.end() &&
          !to_i64(toks[static_cast<std::size_t>(ro - cols.begin())]))
        continue;
    }
    RawRow row;
    row.line = line;
    int half = -1;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const std::string &c = cols[i];
      if (c == "timestamp") {
        row.timestamp = toks[i] + " " + toks[i + 1];
        break;
      }
      if (is_time_col(c)) {
        ++half;
        row.halves.emplace_back();
      }
      if (half < 0)
        row.prefix[c] = toks[i];
      else
        row.halves[static_cast<std::size_t>(half)].cols[is_time_col(c) ? "time" : c] = toks[i];
    }
    return row;
  }
  return std::nullopt;
}

namespace {

/// nccl-tests' result columns since 2.13: size count type redop root, then time algbw busbw #wrong
/// out of place and in place.
const std::vector<std::string> kStandardColumns{"size", "count", "type", "redop", "root",
                                                "time", "algbw", "busbw", "#wrong", "time",
                                                "algbw", "busbw", "#wrong"};

} // namespace

std::optional<Section> headerless_section(const std::vector<std::string> &lines) {
  const auto number = [](const std::string &t) { return to_double(t).has_value() || t == "N/A"; };
  Section s;
  s.columns = kStandardColumns;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view t = detail::strip_prefixes(lines[i]).text;
    if (t.empty())
      continue;
    if (t.front() == '#') {
      if (!s.rows.empty() && t.find("Avg bus bandwidth") != std::string_view::npos)
        s.footer = true;
      continue;
    }
    const auto toks = split_ws(t);
    if (toks.size() != kStandardColumns.size() || !to_u64(toks[0]) || !to_u64(toks[1]) ||
        !parse_dtype(toks[2]) || (!parse_redop(toks[3]) && toks[3] != "none") || !to_i64(toks[4]))
      continue;
    if (!std::all_of(toks.begin() + 5, toks.end(), number))
      continue;
    const long ln = static_cast<long>(i) + 1;
    if (auto row = detail::map_row(s.columns, toks, ln)) {
      if (s.rows.empty())
        s.header_line = ln;
      s.rows.push_back(std::move(*row));
      s.last_row_line = ln;
    }
  }
  if (s.rows.size() < 2)
    return std::nullopt;
  return s;
}

void warn_repeated_sizes(const Section &s, Diagnostics &diag) {
  std::map<std::string, long> first_line;
  int repeats = 0;
  long first_repeat = 0;
  for (const auto &r : s.rows)
    if (const auto it = r.prefix.find("size"); it != r.prefix.end() && it->second != "0") {
      const auto [at, fresh] = first_line.try_emplace(it->second, r.line);
      if (!fresh && repeats++ == 0)
        first_repeat = r.line;
    }
  if (repeats > 0)
    diag.warn(first_repeat, "size",
              std::to_string(repeats) +
                  " rows repeat a size of the same table: several processes printed it "
                  "(nccl-tests built without MPI=1 under mpirun?); fitting will refuse the "
                  "conflicting points");
}

} // namespace scalefit::ingest::detail
