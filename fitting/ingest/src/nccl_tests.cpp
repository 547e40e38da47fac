// Reader of nccl-tests output (NVIDIA/nccl-tests, src/common.cu and the per-collective
// src/<coll>.cu). The table is read by its header's column names, never by fixed widths:
//
//   before 2.13  : size count type [redop] [root] | time algbw busbw error | time algbw busbw error
//                  (columns per collective: AllGather/AllToAll print no redop, Broadcast prints a
//                  root and no redop; a header column may also be printed blank in the rows, as
//                  the redop of old alltoall_perf; `error` is the max error, N/A with -c 0)
//   2.13 - 2.17  : size count type redop root | time algbw busbw #wrong | (same, in-place)
//   current      : `# nccl-tests version X`, `# Collective test starting: <bin>`, the same table,
//                  optionally `#bitdiff` and `i_min i_max i_p99 i_cv%` (-I) per half, an
//                  optional `timestamp` column, and `# Collective test concluded: <bin>`.
//
// nccl-tests prints `count` as the per-rank parameter count (nBytes / type size, which for
// AllGather/ReduceScatter/AllToAll is size / (type size * nranks)); scalefit's record holds the
// same (core's count_per_rank) and `bytes` = the `size` column.
#include "scalefit/ingest/ingest.hpp"

#include "text.hpp"

#include "scalefit/core/units.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

namespace scalefit::ingest {
namespace {

using detail::Diagnostics;
using detail::split_ws;
using detail::to_double;
using detail::to_i64;
using detail::to_lower;
using detail::to_u64;
using detail::trim;
using nlohmann::json;

struct RankLine {
  int rank = 0;
  std::string host;
  std::string device;
  long line = 0;
};

/// One placement's tokens by column name ("time", "algbw", "busbw", "#wrong", "i_min", ...).
struct RawHalf {
  std::map<std::string, std::string> cols;
};

struct RawRow {
  long line = 0;
  std::map<std::string, std::string> prefix; ///< size, count, type, redop, root
  std::vector<RawHalf> halves;               ///< out-of-place, in-place
  std::string timestamp;
};

struct Section {
  long header_line = 0;
  std::vector<std::string> columns;
  std::optional<Op> op_banner;
  std::optional<Op> op_cmd;
  std::string op_file_hint; ///< lower-case file name for tie-breaking
  std::vector<RankLine> ranks;
  std::vector<RawRow> rows;
  bool footer = false;
  long last_row_line = 0;
};

bool is_time_col(const std::string &c) {
  return c == "time" || c == "cputime";
}

/// "./build/all_reduce_perf_mpi:" -> allreduce; nullopt if the token is no *_perf binary.
/// `stem` receives the binary's stem even when it is not a supported op.
std::optional<Op> op_from_binary(std::string tok, std::string *stem = nullptr) {
  while (!tok.empty() && (tok.back() == ':' || tok.back() == ',' || tok.back() == ';'))
    tok.pop_back();
  const auto slash = tok.find_last_of('/');
  if (slash != std::string::npos)
    tok = tok.substr(slash + 1);
  static const std::regex re("^([A-Za-z_]+)_perf(_mpi)?$");
  std::smatch m;
  if (!std::regex_match(tok, m, re))
    return std::nullopt;
  if (stem)
    *stem = m[1].str();
  return parse_op(m[1].str());
}

/// Splits tokens where two fixed-point numbers were printed without a separator
/// ("2821923.322821923.32" -> "2821923.32" "2821923.32"); nccl-tests prints at most 2 decimals.
bool split_glued(std::vector<std::string> &toks, std::string &what) {
  static const std::regex re("^(-?[0-9]+\\.[0-9]{2})([0-9]+(\\.[0-9]+)?)$");
  for (std::size_t i = 0; i < toks.size(); ++i) {
    std::smatch m;
    if (std::regex_match(toks[i], m, re)) {
      what = "'" + toks[i] + "' read as '" + m[1].str() + "' '" + m[2].str() + "'";
      const std::string a = m[1].str(), b = m[2].str();
      toks[i] = a;
      toks.insert(toks.begin() + static_cast<long>(i) + 1, b);
      return true;
    }
  }
  return false;
}

std::size_t expected_tokens(const std::vector<std::string> &cols) {
  return cols.size() + (!cols.empty() && cols.back() == "timestamp" ? 1 : 0);
}

std::vector<std::string> without(std::vector<std::string> cols, const std::string &name) {
  cols.erase(std::remove(cols.begin(), cols.end(), name), cols.end());
  return cols;
}

/// Chooses the header variant the row's token count fits (full header, or a header with a
/// column printed blank in the rows) and maps tokens to column names.
std::optional<RawRow> map_row(const std::vector<std::string> &header,
                              const std::vector<std::string> &toks, long line) {
  std::vector<std::vector<std::string>> variants{header};
  // Before 2.13 some collectives print a header column blank in the rows (alltoall_perf's
  // redop); from 2.13 on redop and root are always printed ("none", -1).
  const bool old_format = std::count(header.begin(), header.end(), "#wrong") == 0;
  const bool has_redop = std::count(header.begin(), header.end(), "redop") > 0;
  const bool has_root = std::count(header.begin(), header.end(), "root") > 0;
  if (!old_format) {
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

std::string join(const std::vector<std::string> &v, const char *sep = " ") {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i)
      out += sep;
    out += v[i];
  }
  return out;
}

/// Row's dtype size, or 0 when the type is unknown.
std::size_t row_type_size(const RawRow &r) {
  const auto it = r.prefix.find("type");
  if (it == r.prefix.end())
    return 0;
  const auto t = parse_dtype(it->second);
  return t ? dtype_size(*t) : 0;
}

/// The row with the largest size whose size, count and type are readable and non-zero.
const RawRow *largest_row(const Section &s) {
  const RawRow *best = nullptr;
  std::uint64_t best_size = 0;
  for (const auto &r : s.rows) {
    const auto size = to_u64(r.prefix.at("size"));
    const auto cit = r.prefix.find("count");
    if (!size || *size == 0 || cit == r.prefix.end())
      continue;
    const auto count = to_u64(cit->second);
    if (!count || *count == 0 || row_type_size(r) == 0)
      continue;
    if (*size > best_size) {
      best = &r;
      best_size = *size;
    }
  }
  return best;
}

/// Ratio size / (count * type size) of the largest row: 1 for AllReduce-like ops, nranks for
/// AllGather/ReduceScatter/AllToAll. nullopt when there is no count column or no usable row.
std::optional<double> count_ratio(const Section &s) {
  const RawRow *r = largest_row(s);
  if (!r)
    return std::nullopt;
  const double size = static_cast<double>(*to_u64(r->prefix.at("size")));
  const double count = static_cast<double>(*to_u64(r->prefix.at("count")));
  return size / (count * static_cast<double>(row_type_size(*r)));
}

/// Operations compatible with the table's columns and values (redop, root, count).
std::vector<Op> ops_from_columns(const Section &s) {
  bool reduces = false, rooted = false;
  for (const auto &r : s.rows) {
    const auto rit = r.prefix.find("redop");
    if (rit != r.prefix.end() && rit->second != "none" && parse_redop(rit->second))
      reduces = true;
    const auto oit = r.prefix.find("root");
    if (oit != r.prefix.end()) {
      const auto root = to_i64(oit->second);
      if (root && *root >= 0)
        rooted = true;
    }
  }
  const auto ratio = count_ratio(s);
  const bool known = ratio.has_value();
  const bool divided = known && *ratio > 1.5;
  if (rooted)
    return {reduces ? Op::reduce : Op::broadcast};
  if (reduces) {
    if (!known)
      return {Op::allreduce, Op::reducescatter};
    return {divided ? Op::reducescatter : Op::allreduce};
  }
  if (!known)
    return {Op::allgather, Op::alltoall, Op::sendrecv};
  if (divided)
    return {Op::allgather, Op::alltoall};
  return {Op::sendrecv, Op::allgather, Op::alltoall}; // n = 1 gives ratio 1 for all three
}

std::string compact(std::string s) {
  std::string out;
  for (char c : to_lower(s))
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

/// Picks the op named in the file name among candidates ("..._alltoall.txt" -> alltoall).
std::optional<Op> op_from_file_name(const std::string &file, const std::vector<Op> &cands) {
  const std::string name = compact(detail::base_name(file));
  std::optional<Op> best;
  std::size_t best_len = 0;
  for (Op op : cands) {
    std::vector<std::string> aliases{std::string(op_name(op))};
    if (op == Op::broadcast)
      aliases.push_back("bcast");
    for (const auto &a : aliases) {
      // "reduce" is a substring of "allreduce"/"reducescatter": the longest match wins.
      if (name.find(a) != std::string::npos && a.size() > best_len) {
        best = op;
        best_len = a.size();
      }
    }
  }
  return best;
}

struct Derived {
  Op op = Op::allreduce;
  int nranks = 1;
  int nnodes = 1;
  std::string nranks_from;
  std::string nnodes_from;
  std::vector<std::string> hosts;
  std::vector<std::string> devices;
};

Op decide_op(const Section &s, const IngestOptions &opt, Diagnostics &diag) {
  const long line = s.header_line;
  std::optional<Op> file_op = s.op_banner ? s.op_banner : s.op_cmd;
  const auto cands = ops_from_columns(s);
  const bool fits = file_op && std::find(cands.begin(), cands.end(), *file_op) != cands.end();
  if (file_op) {
    if (!fits)
      diag.warn(line, "op",
                std::string("the log names ") + std::string(op_name(*file_op)) +
                    " but the table's redop/root/count columns do not fit it");
    if (opt.op && *opt.op != *file_op)
      diag.warn(line, "op",
                "--op " + std::string(op_name(*opt.op)) + " ignored: the log names " +
                    std::string(op_name(*file_op)));
    return *file_op;
  }
  if (cands.size() == 1) {
    if (opt.op && *opt.op != cands.front())
      diag.warn(line, "op",
                "--op " + std::string(op_name(*opt.op)) + " ignored: the table's columns are " +
                    std::string(op_name(cands.front())) + "'s");
    return cands.front();
  }
  if (opt.op) {
    if (std::find(cands.begin(), cands.end(), *opt.op) == cands.end())
      diag.warn(line, "op",
                "--op " + std::string(op_name(*opt.op)) + " does not fit the table's columns");
    return *opt.op;
  }
  if (const auto by_name = op_from_file_name(diag.file(), cands)) {
    diag.note(line, "operation " + std::string(op_name(*by_name)) +
                        " taken from the file name (the columns fit several ops)");
    return *by_name;
  }
  std::vector<std::string> names;
  for (Op op : cands)
    names.emplace_back(op_name(op));
  diag.fail(line, "op",
            "cannot tell the operation from the log (columns fit " + join(names, ", ") +
                "); pass --op");
}

/// nranks from busbw/algbw of the fastest row; nullopt when the factor does not depend on n or
/// no row is fast enough to read the ratio (algbw >= 1 GB/s, 2 decimals printed).
std::optional<double> nranks_from_bw(const Section &s, Op op) {
  if (op == Op::reduce || op == Op::broadcast || op == Op::sendrecv)
    return std::nullopt;
  double best_alg = 0, best_bus = 0;
  for (const auto &r : s.rows)
    for (const auto &h : r.halves) {
      const auto ai = h.cols.find("algbw"), bi = h.cols.find("busbw");
      if (ai == h.cols.end() || bi == h.cols.end())
        continue;
      const auto a = to_double(ai->second), b = to_double(bi->second);
      if (a && b && *a > best_alg) {
        best_alg = *a;
        best_bus = *b;
      }
    }
  if (best_alg < 1.0)
    return std::nullopt;
  const double r = best_bus / best_alg;
  if (op == Op::allreduce) {
    if (r >= 2.0 || r < 0)
      return std::nullopt;
    return 2.0 / (2.0 - r); // busbw = algbw * 2(n-1)/n
  }
  if (r >= 1.0 || r < 0)
    return std::nullopt;
  return 1.0 / (1.0 - r); // busbw = algbw * (n-1)/n
}

Derived derive(const Section &s, const IngestOptions &opt, Diagnostics &diag) {
  Derived d;
  d.op = decide_op(s, opt, diag);
  const long line = s.header_line;

  // Ranks and hosts from the "# Using devices" lines.
  std::map<int, const RankLine *> by_rank;
  for (const auto &rl : s.ranks) {
    if (by_rank.count(rl.rank))
      diag.warn(rl.line, "Rank",
                "rank " + std::to_string(rl.rank) +
                    " listed twice (several processes without MPI?); counting it once");
    else
      by_rank[rl.rank] = &rl;
  }
  for (const auto &[rank, rl] : by_rank) {
    if (std::find(d.hosts.begin(), d.hosts.end(), rl->host) == d.hosts.end())
      d.hosts.push_back(rl->host);
    d.devices.push_back(rl->device);
  }

  std::optional<int> exact; // from the count column
  if (count_divided_by_ranks(d.op)) {
    if (const auto ratio = count_ratio(s)) {
      const double n = std::round(*ratio);
      if (n >= 1 && std::fabs(*ratio - n) < 1e-9)
        exact = static_cast<int>(n);
    }
  }
  const auto from_bw = nranks_from_bw(s, d.op);
  std::optional<int> bw_n;
  if (from_bw) {
    const double n = std::round(*from_bw);
    if (n >= 1 && std::fabs(*from_bw - n) < 0.25)
      bw_n = static_cast<int>(n);
  }

  if (!by_rank.empty()) {
    d.nranks = static_cast<int>(by_rank.size());
    d.nranks_from = "rank lines";
  } else if (exact) {
    d.nranks = *exact;
    d.nranks_from = "count column";
  } else if (bw_n) {
    d.nranks = *bw_n;
    d.nranks_from = "busbw/algbw";
  } else if (opt.nranks) {
    d.nranks = *opt.nranks;
    d.nranks_from = "--nranks";
  } else {
    d.nranks = 1;
    d.nranks_from = "default";
    diag.warn(line, "nranks",
              "the log lists no ranks and " + std::string(op_name(d.op)) +
                  "'s busbw does not reveal them; assuming 1 rank (pass --nranks)");
  }
  if (exact && *exact != d.nranks)
    diag.warn(line, "count",
              "the count column implies " + std::to_string(*exact) + " ranks, not " +
                  std::to_string(d.nranks) + " (" + d.nranks_from + ")");
  else if (bw_n && *bw_n != d.nranks)
    diag.warn(line, "busbw",
              "busbw/algbw implies " + std::to_string(*bw_n) + " ranks, not " +
                  std::to_string(d.nranks) + " (" + d.nranks_from + ")");
  if (opt.nranks && *opt.nranks != d.nranks && d.nranks_from != "--nranks")
    diag.warn(line, "nranks",
              "--nranks " + std::to_string(*opt.nranks) + " ignored: the log gives " +
                  std::to_string(d.nranks) + " (" + d.nranks_from + ")");

  if (!d.hosts.empty()) {
    d.nnodes = static_cast<int>(d.hosts.size());
    d.nnodes_from = "rank lines";
    if (opt.nnodes && *opt.nnodes != d.nnodes)
      diag.warn(line, "nnodes",
                "--nnodes " + std::to_string(*opt.nnodes) + " ignored: the rank lines name " +
                    std::to_string(d.nnodes) + " hosts");
  } else if (opt.nnodes) {
    d.nnodes = *opt.nnodes;
    d.nnodes_from = "--nnodes";
  } else {
    d.nnodes = 1;
    d.nnodes_from = "default";
    diag.note(line, "the log names no hosts; assuming 1 node (pass --nnodes)");
  }
  if (d.nnodes < 1 || d.nnodes > d.nranks) {
    diag.warn(line, "nnodes",
              std::to_string(d.nnodes) + " nodes for " + std::to_string(d.nranks) +
                  " ranks; using " + std::to_string(std::clamp(d.nnodes, 1, d.nranks)));
    d.nnodes = std::clamp(d.nnodes, 1, d.nranks);
  }
  if (d.nranks % d.nnodes != 0)
    diag.warn(line, "nnodes",
              std::to_string(d.nranks) + " ranks do not divide evenly over " +
                  std::to_string(d.nnodes) + " nodes");
  return d;
}

/// Whether printed algbw agrees with size/time within the printed precision of both.
bool algbw_consistent(double bytes, const std::string &time_tok, double algbw,
                      const std::string &alg_tok) {
  const double t = *to_double(time_tok);
  if (t <= 0)
    return true;
  const double computed = gbps(bytes, t);
  const double t_half_ulp = 0.5 * std::pow(10.0, -detail::decimals(time_tok));
  const double bw_half_ulp = 0.5 * std::pow(10.0, -detail::decimals(alg_tok));
  // exponent notation ("1.2e+07") carries its own precision: allow 5%.
  const bool expo = time_tok.find_first_of("eE") != std::string::npos ||
                    alg_tok.find_first_of("eE") != std::string::npos;
  const double tol =
      expo ? 0.05 * computed : computed * (t_half_ulp / t) * 1.01 + bw_half_ulp + 1e-3 * computed;
  return std::fabs(computed - algbw) <= tol;
}

void build_records(const Section &s, const Derived &d, const IngestOptions &opt, Diagnostics &diag,
                   std::vector<MeasurementRecord> &out) {
  const GroupShape group{"world", d.nranks, d.nnodes, std::max(1, d.nranks / d.nnodes)};
  const bool cputime = std::find(s.columns.begin(), s.columns.end(), "cputime") != s.columns.end();
  for (const auto &r : s.rows) {
    const long line = r.line;
    const auto size = to_u64(r.prefix.at("size"));
    if (!size) {
      diag.warn(line, "size", "expected a byte count, got '" + r.prefix.at("size") + "'");
      continue;
    }
    if (*size == 0) {
      diag.note(line, "size 0 row skipped (count rounded down to 0 elements)");
      continue;
    }
    std::optional<DType> dtype;
    if (const auto it = r.prefix.find("type"); it != r.prefix.end()) {
      dtype = parse_dtype(it->second);
      if (!dtype && opt.dtype) {
        diag.warn(line, "type", "unknown type '" + it->second + "'; using --dtype");
        dtype = opt.dtype;
      }
      if (!dtype) {
        diag.warn(line, "type", "unknown type '" + it->second + "'; row skipped");
        continue;
      }
    } else {
      dtype = opt.dtype.value_or(DType::float32);
    }
    RedOp redop = RedOp::sum;
    if (const auto it = r.prefix.find("redop");
        it != r.prefix.end() && it->second != "none" && op_has_redop(d.op)) {
      if (const auto ro = parse_redop(it->second))
        redop = *ro;
      else
        diag.warn(line, "redop", "unknown reduction '" + it->second + "'; assuming sum");
    }
    int root = op_has_root(d.op) ? 0 : -1;
    if (const auto it = r.prefix.find("root"); it != r.prefix.end()) {
      if (const auto v = to_i64(it->second))
        root = static_cast<int>(*v);
      else
        diag.warn(line, "root", "expected an integer, got '" + it->second + "'");
    }
    if (const auto it = r.prefix.find("count"); it != r.prefix.end()) {
      const auto c = to_u64(it->second);
      if (!c) {
        diag.warn(line, "count", "expected an element count, got '" + it->second + "'");
      } else {
        const std::uint64_t per_rank = count_per_rank(d.op, *size, dtype_size(*dtype), d.nranks);
        if (*c != per_rank && *c != *size / dtype_size(*dtype))
          diag.warn(line, "count",
                    "count " + it->second + " does not match size " + std::to_string(*size) +
                        " for " + std::string(op_name(d.op)) + " on " + std::to_string(d.nranks) +
                        " ranks (expected " + std::to_string(per_rank) + ")");
      }
    }
    for (std::size_t h = 0; h < r.halves.size() && h < 2; ++h) {
      const auto &cols = r.halves[h].cols;
      const Placement pl = h == 0 ? Placement::out_of_place : Placement::in_place;
      const std::string where = std::string(placement_name(pl)) + " ";
      const auto get = [&](const char *name) -> const std::string * {
        const auto it = cols.find(name);
        return it == cols.end() ? nullptr : &it->second;
      };
      const std::string *time_tok = get("time");
      const auto time_us = time_tok ? to_double(*time_tok) : std::nullopt;
      if (!time_us || *time_us <= 0) {
        diag.warn(line, where + (cputime ? "cputime" : "time"),
                  "expected a positive time in us, got '" + (time_tok ? *time_tok : "") + "'; " +
                      where + "point skipped");
        continue;
      }
      MeasurementRecord m;
      m.op = d.op;
      m.group = group;
      m.dtype = *dtype;
      m.redop = redop;
      m.root = root;
      m.placement = pl;
      m.bytes = *size;
      m.count = count_per_rank(m.op, *size, dtype_size(*dtype), m.group.nranks);
      m.time_us = *time_us;
      m.extra = json::object();
      m.extra["source_line"] = line;
      if (cputime)
        m.extra["time_kind"] = "cputime";
      if (!r.timestamp.empty())
        m.extra["timestamp"] = r.timestamp;
      const double computed_alg = gbps(static_cast<double>(*size), *time_us);
      bool bad = false;
      const auto read_bw = [&](const char *name, double fallback) {
        const std::string *tok = get(name);
        if (!tok || *tok == "N/A")
          return fallback;
        const auto v = to_double(*tok);
        if (!v || *v < 0) {
          diag.warn(line, where + name,
                    "expected a bandwidth in GB/s, got '" + *tok + "'; " + where + "point skipped");
          bad = true;
          return fallback;
        }
        return *v;
      };
      m.algbw_gbps = read_bw("algbw", computed_alg);
      m.busbw_gbps = read_bw("busbw", computed_alg * busbw_factor(d.op, d.nranks));
      if (bad)
        continue;
      if (const std::string *a = get("algbw");
          a && *a != "N/A" &&
          !algbw_consistent(static_cast<double>(*size), *time_tok, m.algbw_gbps, *a))
        diag.warn(line, where + "algbw",
                  "algbw " + *a +
                      " GB/s disagrees with size/time = " + std::to_string(computed_alg) + " GB/s");
      if (const std::string *w = get("#wrong"); w && *w != "N/A") {
        const auto v = to_double(*w);
        if (!v || *v < 0 || *v != std::floor(*v))
          diag.warn(line, where + "#wrong", "expected a count of wrong elements, got '" + *w + "'");
        else
          m.wrong = static_cast<std::int64_t>(*v);
      }
      if (const std::string *e = get("error"); e && *e != "N/A") {
        if (const auto v = to_double(*e))
          m.extra["max_error"] = *v;
        else
          diag.warn(line, where + "error", "expected a number or N/A, got '" + *e + "'");
      }
      for (const auto &[col, key] :
           std::vector<std::pair<std::string, std::string>>{{"i_min", "i_min_us"},
                                                            {"i_max", "i_max_us"},
                                                            {"i_p99", "i_p99_us"},
                                                            {"i_cv%", "i_cv_pct"},
                                                            {"#bitdiff", "bitdiff"}}) {
        const std::string *tok = get(col.c_str());
        if (!tok || *tok == "N/A")
          continue;
        if (const auto v = to_double(*tok))
          m.extra[key] = *v;
        else
          diag.warn(line, where + col, "expected a number, got '" + *tok + "'");
      }
      out.push_back(std::move(m));
    }
  }
}

/// "system: 1 node, 8x A100 ..." from a provenance comment, up to the first ';'.
std::string system_from_comment(const std::string &first_comment) {
  const auto p = first_comment.find("system:");
  if (p == std::string::npos)
    return "";
  std::string s = first_comment.substr(p + 7);
  const auto semi = s.find(';');
  if (semi != std::string::npos)
    s = s.substr(0, semi);
  return std::string(trim(s));
}

std::string nccl_version_from_code(long code) {
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch (since 2.9); older major*1000+minor*100.
  if (code >= 10000)
    return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
           std::to_string(code % 100);
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 100) + "." +
         std::to_string(code % 100);
}

} // namespace

IngestResult read_nccl_tests(const std::string &path, const IngestOptions &opt) {
  detail::check_options(opt);
  const auto lines = detail::read_lines(path);
  Diagnostics diag(path, opt.strict);
  IngestResult res;
  ContextRecord &ctx = res.context;
  ctx.backend = "nccl-tests";

  static const std::regex rank_re(
      R"(^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+(?:\[[^\]]*\]\s*)?(.*)$)");
  static const std::regex nccl_ver_re(R"(NCCL version (\S+))");
  static const std::regex env_re(R"(NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S*))");

  std::string first_comment, params, tests_version, command_line;
  std::vector<Section> sections;
  Section *cur = nullptr;
  std::vector<RankLine> pending_ranks;
  std::optional<Op> pending_banner, pending_cmd;
  bool have_banner_format = false;

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i) + 1;
    const std::string_view t = trim(lines[i]);
    if (t.empty())
      continue;
    if (t.front() == '#') {
      const std::string body(trim(t.substr(1)));
      if (first_comment.empty() && !body.empty())
        first_comment = std::string(t);
      const auto toks = split_ws(body);
      if (body.rfind("nccl-tests version", 0) == 0) {
        have_banner_format = true;
        if (toks.size() > 2)
          tests_version = toks[2];
        for (const auto &tk : toks)
          if (tk.rfind("nccl-library=", 0) == 0)
            if (const auto code = to_i64(tk.substr(13)))
              ctx.versions["nccl"] = nccl_version_from_code(static_cast<long>(*code));
      } else if (body.rfind("Collective test starting:", 0) == 0) {
        have_banner_format = true;
        cur = nullptr; // the next table belongs to this test
        pending_ranks.clear();
        std::string stem;
        if (toks.size() > 3) {
          pending_banner = op_from_binary(toks[3], &stem);
          if (!pending_banner)
            diag.fail(ln, "op", "unsupported collective '" + toks[3] + "'");
        }
      } else if (body.rfind("Collective test concluded", 0) == 0 ||
                 body.rfind("Out of bounds values", 0) == 0 ||
                 body.rfind("Avg bus bandwidth", 0) == 0) {
        if (cur)
          cur->footer = true;
      } else if (body.rfind("Using devices", 0) == 0) {
        pending_ranks.clear();
      } else if (body.rfind("nThread", 0) == 0) {
        if (params.empty())
          params = body;
      } else if (std::smatch m; body.rfind("Rank", 0) == 0 && std::regex_match(body, m, rank_re)) {
        const auto rank = to_i64(m[1].str());
        if (!rank || *rank > 1 << 24)
          diag.warn(ln, "Rank", "rank number out of range: '" + m[1].str() + "'");
        else
          pending_ranks.push_back(
              {static_cast<int>(*rank), m[2].str(), std::string(trim(m[3].str())), ln});
      } else if (!toks.empty() && toks[0] == "size" &&
                 std::count(toks.begin(), toks.end(), "type") == 1 &&
                 std::any_of(toks.begin(), toks.end(), is_time_col)) {
        Section s;
        s.header_line = ln;
        s.columns = toks;
        s.op_banner = pending_banner;
        s.op_cmd = pending_cmd;
        s.ranks = pending_ranks;
        pending_banner.reset();
        sections.push_back(std::move(s));
        cur = &sections.back();
      }
      continue;
    }
    const std::string line_str(t);
    // Cheap guards first: real logs carry many thousands of NCCL INFO lines.
    if (line_str.find("NCCL version") != std::string::npos && !ctx.versions.count("nccl"))
      if (std::smatch m; std::regex_search(line_str, m, nccl_ver_re))
        ctx.versions["nccl"] = m[1].str();
    if (line_str.find("set by environment") != std::string::npos)
      if (std::smatch m; std::regex_search(line_str, m, env_re))
        ctx.env[m[1].str()] = m[2].str();
    auto toks = split_ws(t);
    if (cur && to_u64(toks[0])) {
      // A result row.
      auto row = map_row(cur->columns, toks, ln);
      std::string glued;
      while (!row && toks.size() < expected_tokens(cur->columns) && split_glued(toks, glued)) {
        row = map_row(cur->columns, toks, ln);
        if (row)
          diag.warn(ln, "", "numbers glued together: " + glued);
      }
      if (!row) {
        diag.warn(ln, "",
                  "cannot read row: expected " + std::to_string(expected_tokens(cur->columns)) +
                      " columns (" + join(cur->columns) + "), got " +
                      std::to_string(split_ws(t).size()) + " fields");
        continue;
      }
      cur->rows.push_back(std::move(*row));
      cur->last_row_line = ln;
      continue;
    }
    // Command lines (shell prompt, mpirun, library warnings naming the binary).
    bool named_binary = false;
    for (std::size_t k = 0; k < toks.size(); ++k) {
      if (toks[k].find("_perf") == std::string::npos)
        continue;
      std::string stem;
      const auto op = op_from_binary(toks[k], &stem);
      if (!stem.empty()) {
        named_binary = true;
        if (op) {
          pending_cmd = op;
        } else {
          diag.warn(ln, "op", "unsupported collective binary '" + toks[k] + "'");
        }
        if (command_line.empty()) {
          std::size_t from = k;
          for (std::size_t j = 0; j < k; ++j) {
            const std::string b = detail::base_name(toks[j]);
            if (b == "mpirun" || b == "mpiexec" || b == "srun") {
              from = j;
              break;
            }
          }
          std::vector<std::string> rest(toks.begin() + static_cast<long>(from), toks.end());
          command_line = join(rest);
        }
        break;
      }
    }
    if (named_binary || !cur)
      continue;
    // A row mixed with other output on one line ("host:12:12 [0] NCCL INFO ... 1024 256 float
    // ..."): recover it when the tail has exactly the table's fields.
    const std::size_t want = expected_tokens(cur->columns);
    if (want >= 3 && toks.size() > want) {
      const std::size_t k = toks.size() - want;
      if (to_u64(toks[k]) && to_u64(toks[k + 1]) && parse_dtype(toks[k + 2])) {
        std::vector<std::string> tail(toks.begin() + static_cast<long>(k), toks.end());
        if (auto row = map_row(cur->columns, tail, ln)) {
          diag.warn(ln, "",
                    "row mixed with other output on one line; read its last " +
                        std::to_string(want) + " fields");
          cur->rows.push_back(std::move(*row));
          cur->last_row_line = ln;
        }
      }
    }
  }

  if (sections.empty())
    diag.fail(0, "",
              "no nccl-tests result table found (expected a header '#  size  count  type ... "
              "time  algbw  busbw ...')");

  // A file may hold the op in its name only; every section gets the same tie-breaker.
  std::set<std::string> formats;
  int max_ranks = 0;
  json section_info = json::array();
  for (auto &s : sections) {
    const bool has_wrong = std::count(s.columns.begin(), s.columns.end(), "#wrong") > 0;
    formats.insert(have_banner_format ? "current" : has_wrong ? "2.13-2.17" : "pre-2.13");
    if (s.rows.empty()) {
      diag.warn(s.header_line, "", "result table without rows");
      continue;
    }
    if (!s.footer)
      diag.warn(s.last_row_line, "",
                "run cut off before the footer ('# Avg bus bandwidth'); kept the " +
                    std::to_string(s.rows.size()) + " rows measured");
    const Derived d = derive(s, opt, diag);
    const std::size_t before = res.measurements.size();
    build_records(s, d, opt, diag, res.measurements);
    section_info.push_back({{"header_line", s.header_line},
                            {"op", op_name(d.op)},
                            {"nranks", d.nranks},
                            {"nranks_from", d.nranks_from},
                            {"nnodes", d.nnodes},
                            {"nnodes_from", d.nnodes_from},
                            {"records", res.measurements.size() - before}});
    if (d.nranks > max_ranks) {
      max_ranks = d.nranks;
      ctx.nranks = d.nranks;
      ctx.nnodes = d.nnodes;
      ctx.ranks_per_node = std::max(1, d.nranks / d.nnodes);
      ctx.hosts = d.hosts;
      ctx.devices = d.devices;
    }
  }

  ctx.system = opt.system;
  if (ctx.system.empty()) {
    ctx.system = detail::file_stem(path);
    diag.note(0, "system name '" + ctx.system + "' taken from the file name (pass --system)");
  }
  if (!tests_version.empty())
    ctx.versions["nccl-tests"] = tests_version;
  ctx.command_line = command_line;
  ctx.source = json::object();
  ctx.source["file"] = detail::base_name(path);
  ctx.source["path"] = path;
  ctx.source["first_comment_line"] = first_comment;
  ctx.source["tool"] = "nccl-tests";
  if (!tests_version.empty())
    ctx.source["tool_version"] = tests_version;
  ctx.source["format"] =
      formats.size() == 1 ? *formats.begin() : join({formats.begin(), formats.end()}, ",");
  if (!params.empty())
    ctx.source["parameters"] = params;
  if (const auto desc = system_from_comment(first_comment); !desc.empty())
    ctx.source["system_description"] = desc;
  ctx.source["tables"] = section_info;
  ctx.source["ingested_at"] = utc_now_iso8601();
  res.warnings = diag.warnings();
  res.notes = diag.notes();
  ctx.source["warnings"] = res.warnings;
  ctx.source["notes"] = res.notes;
  return res;
}

} // namespace scalefit::ingest
