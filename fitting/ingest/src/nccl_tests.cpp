// Reader of nccl-tests output (NVIDIA/nccl-tests src/common.cu, src/util.cu; rccl-tests prints
// the same tables): the line loop (launcher prefixes stripped, NCCL INFO lines read for facts,
// `#` optional before headers and Rank lines, as in logs pasted without it), the records and the
// context. Table tokenizing: nccl_tests_table.cpp; op/ranks/nodes: nccl_tests_infer.cpp; JSON:
// nccl_tests_json.cpp.
//
// nccl-tests prints `count` as the per-rank parameter count (nBytes / type size, which for
// AllGather/ReduceScatter/AllToAll is size / (type size * nranks)); scalefit's record holds the
// same (core's count_per_rank) and `bytes` = the `size` column.
#include "scalefit/ingest/ingest.hpp"

#include "lines.hpp"
#include "nccl_tests_detail.hpp"
#include "text.hpp"

#include "scalefit/core/units.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace scalefit::ingest {
namespace {

using detail::Diagnostics;
using detail::join;
using detail::RankLine;
using detail::RawRow;
using detail::Section;
using detail::split_ws;
using detail::to_double;
using detail::to_i64;
using detail::to_u64;
using detail::trim;
using nlohmann::json;

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

void build_records(const detail::Section &s, const detail::Derived &d, const IngestOptions &opt, Diagnostics &diag,
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
      if (const auto v = to_i64(it->second); v && *v >= -1 && *v < kMaxRecordRanks)
        root = static_cast<int>(*v);
      else
        diag.warn(line, "root", "expected a root rank in [0, 2^24) or -1 (none), got '" + it->second + "'");
    }
    std::optional<std::uint64_t> alltoallv_count;
    if (const auto it = r.prefix.find("count"); it != r.prefix.end()) {
      const auto c = to_u64(it->second);
      if (!c) {
        diag.warn(line, "count", "expected an element count, got '" + it->second + "'");
      } else {
        const std::uint64_t per_rank = count_per_rank(d.op, *size, dtype_size(*dtype), d.nranks);
        // alltoallv_perf's size is the largest rank's volume under its own matrix: with the
        // generated pattern each per-peer chunk is rounded down to 16 B, so n * count * type
        // size exceeds the size by less than 16 B per peer.
        const std::uint64_t full = *c * dtype_size(*dtype) * static_cast<std::uint64_t>(d.nranks);
        const bool a2av_ok = d.op == Op::alltoallv && full >= *size &&
                             full - *size < 16 * static_cast<std::uint64_t>(d.nranks);
        if (a2av_ok)
          alltoallv_count = *c;
        else if (*c != per_rank && *c != *size / dtype_size(*dtype))
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
      if (time_tok && *time_tok == "-") // scalefit-bench's "not measured" (one placement run)
        continue;
      const auto time_us = time_tok ? to_double(*time_tok) : std::nullopt;
      if (!time_us || !detail::plausible_time_us(*time_us)) {
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
      if (m.op == Op::alltoallv) {
        // nccl-tests' own count matrix (NCCL_TESTS_ALLTOALLV_SPREAD: distance-weighted at its
        // default 1.0, uniform at 0.0; or NCCL_TESTS_ALLTOALLV_MATRIX_FILE): the log does not
        // say which, so it is a curve of its own, apart from scalefit's uniform and skewed.
        m.method = "nccl-tests";
        if (alltoallv_count)
          m.count = *alltoallv_count;
      }
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
      if (!bad && (!detail::plausible_bandwidth_gbps(m.algbw_gbps) ||
                   !detail::plausible_bandwidth_gbps(m.busbw_gbps))) {
        diag.warn(line, where + "algbw",
                  "bandwidth beyond 1 PB/s (algbw " + std::to_string(m.algbw_gbps) +
                      " GB/s: size / time); " + where + "point skipped");
        bad = true;
      }
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
        // A count no buffer could hold (beyond 2^53, where doubles stop being exact integers)
        // is refused rather than cast: the cast of an out-of-range double is undefined.
        if (!v || *v < 0 || *v != std::floor(*v) || *v > 9007199254740992.0)
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


/// Text after `key` up to the next whitespace ("NCCL version 2.18.3+cuda12.2" -> "2.18.3+cuda12.2").
std::string word_after(std::string_view line, std::string_view key) {
  const auto p = line.find(key);
  if (p == std::string_view::npos)
    return "";
  std::string_view rest = trim(line.substr(p + key.size()));
  if (!rest.empty() && rest.front() == ':') // "RCCL version : 2.28.3"
    rest = trim(rest.substr(1));
  const auto e = rest.find_first_of(" \t");
  return std::string(rest.substr(0, e == std::string_view::npos ? rest.size() : e));
}

/// Facts from one NCCL INFO/WARN line (hosts, nRanks/nNodes, `via NET/`, network init).
void read_info(const detail::NcclInfo &info, long ln, detail::LogFacts &f, ContextRecord &ctx) {
  f.info_hosts.insert(info.host);
  const std::string_view b = info.body;
  if (b.find("NCCL version") != std::string_view::npos && !ctx.versions.count("nccl"))
    ctx.versions["nccl"] = word_after(b, "NCCL version");
  for (const char *k : {"nRanks", "nranks"})
    if (const auto n = detail::info_int_field(b, k); n && *n >= 1 && *n <= kMaxRecordRanks)
      f.info_nranks = std::max(f.info_nranks.value_or(0), static_cast<int>(*n));
  if (const auto n = detail::info_int_field(b, "nNodes"); n && *n >= 1 && *n <= kMaxRecordRanks)
    f.info_nnodes = std::max(f.info_nnodes.value_or(0), static_cast<int>(*n));
  if (const auto p = b.find("via NET/"); p != std::string_view::npos && f.via_net_line == 0) {
    f.via_net_line = ln;
    f.via_net = word_after(b.substr(p), "via");
  }
  if (f.net_init_line == 0 && (b.rfind("NET/", 0) == 0 || b.find("Using network") == 0))
    f.net_init_line = ln;
  if (const auto p = b.find(" set by environment to "); p != std::string_view::npos) {
    const auto k = b.rfind(' ', p - 1);
    const std::string key(b.substr(k == std::string_view::npos ? 0 : k + 1,
                                   p - (k == std::string_view::npos ? 0 : k + 1)));
    if (key.rfind("NCCL_", 0) == 0)
      ctx.env[key] = word_after(b.substr(p), "set by environment to");
  }
}

} // namespace

IngestResult read_nccl_tests(const std::string &path, const IngestOptions &opt) {
  detail::check_options(opt);
  const auto lines = detail::read_lines(path);
  Diagnostics diag(path, opt.strict);
  IngestResult res;
  ContextRecord &ctx = res.context;
  ctx.backend = "nccl-tests";

  std::string first_comment, params, tests_version, command_line, tool = "nccl-tests";
  std::vector<Section> sections;
  Section *cur = nullptr;
  std::vector<RankLine> pending_ranks;
  bool pending_elided = false;
  std::optional<Op> pending_banner, pending_cmd;
  bool have_banner_format = false, json_input = false;
  detail::LogFacts facts;
  detail::CommandJoiner joiner;

  if (detail::looks_like_json(lines)) {
    json_input = true;
    sections = detail::read_json_sections(lines, diag, tests_version, command_line);
  }

  for (std::size_t i = 0; i < lines.size() && !json_input; ++i) {
    const long ln = static_cast<long>(i) + 1;
    const detail::CleanLine cl = detail::strip_prefixes(lines[i]);
    if (cl.prefix_rank)
      facts.prefix_ranks.insert(*cl.prefix_rank);
    if (!cl.prefix_host.empty())
      facts.prefix_hosts.insert(cl.prefix_host);
    const std::string_view t = cl.text;
    if (t.empty())
      continue;
    const bool comment = t.front() == '#';
    const std::string body(comment ? trim(t.substr(1)) : t);
    if (comment && first_comment.empty() && !body.empty())
      first_comment = std::string(t);
    auto toks = split_ws(body);
    if (toks.empty())
      continue;
    // A command continued with trailing backslashes is read whole on its last line.
    const std::vector<std::string> &cmd = joiner.feed(toks);
    detail::fill_missing(facts.alloc, detail::allocation_shape(toks));
    if (const auto h = detail::job_map_host(toks))
      facts.map_hosts.insert(*h);

    // NCCL debug output: facts only (a row mixed into it is recovered below).
    const auto info = comment ? std::nullopt : detail::parse_nccl_info(t);
    if (info)
      read_info(*info, ln, facts, ctx);

    // A row whose size is -1, nan, inf or fractional: warned about, not taken for noise.
    if (!comment && !info && cur && detail::is_bad_size_token(toks[0]) &&
        toks.size() + 2 >= detail::expected_tokens(cur->columns)) {
      diag.warn(ln, "size", "expected a byte count, got '" + toks[0] + "'; row skipped");
      continue;
    }
    // A result row.
    if (!comment && !info && cur && to_u64(toks[0])) {
      // scalefit-bench's row flags after the last column (`~2modes`: bimodal samples), which
      // its footer explains: not columns.
      while (toks.size() > 1 && toks.back().size() > 1 && toks.back().front() == '~')
        toks.pop_back();
      auto row = detail::map_row(cur->columns, toks, ln, cur->named_op());
      std::string glued;
      while (!row && toks.size() < detail::expected_tokens(cur->columns) &&
             detail::split_glued(toks, glued)) {
        row = detail::map_row(cur->columns, toks, ln, cur->named_op());
        if (row)
          diag.warn(ln, "", "numbers glued together: " + glued);
      }
      if (!row) {
        diag.warn(ln, "",
                  "cannot read row: expected " +
                      std::to_string(detail::expected_tokens(cur->columns)) + " columns (" +
                      join(cur->columns) + "), got " + std::to_string(split_ws(body).size()) +
                      " fields");
        continue;
      }
      cur->rows.push_back(std::move(*row));
      cur->last_row_line = ln;
      continue;
    }

    if (!info) {
      // Banner, parameters, rank lines, header, footer: with or without the leading '#'.
      const auto starts = [&](std::string_view key) { return body.rfind(key, 0) == 0; };
      if (starts("nccl-tests version") || starts("rccl-tests version")) {
        have_banner_format = true;
        if (starts("rccl"))
          tool = "rccl-tests";
        if (toks.size() > 2)
          tests_version = toks[2];
        for (const auto &tk : toks)
          if (tk.rfind("nccl-library=", 0) == 0)
            if (const auto code = to_i64(tk.substr(13)))
              ctx.versions["nccl"] = nccl_version_from_code(static_cast<long>(*code));
        continue;
      }
      if (starts("Collective test starting:")) {
        have_banner_format = true;
        cur = nullptr; // the next table belongs to this test
        // The rank list stays: nccl-tests prints it after its banner (`Using devices` starts a
        // new one), scalefit-bench once before its first banner, for every test of the run.
        if (toks.size() > 3) {
          pending_banner = detail::op_from_banner(toks);
          if (!pending_banner)
            diag.fail(ln, "op", "unsupported collective '" + toks[3] + "'");
        }
        continue;
      }
      if (starts("Collective test concluded") || starts("Out of bounds values") ||
          starts("Avg bus bandwidth")) {
        if (cur)
          cur->footer = true;
        continue;
      }
      if (starts("Using devices")) {
        pending_ranks.clear();
        pending_elided = false;
        continue;
      }
      if (starts("nThread")) {
        if (params.empty())
          params = body;
        continue;
      }
      if (starts("Rank")) {
        if (auto rl = detail::parse_rank_line(toks, ln)) {
          pending_ranks.push_back(*rl);
          continue;
        }
      }
      if (body == "..." || body == "[...]" || body == "\xE2\x80\xA6" ||
          (starts("...") && !pending_ranks.empty())) {
        pending_elided = true;
        continue;
      }
      if (detail::is_table_header(toks)) {
        Section s;
        s.header_line = ln;
        s.columns = toks;
        s.op_banner = pending_banner;
        s.op_cmd = pending_cmd;
        s.ranks = pending_ranks;
        s.rank_list_elided = pending_elided;
        pending_banner.reset();
        sections.push_back(std::move(s));
        cur = &sections.back();
        continue;
      }
      if (comment)
        continue;
    }

    if (!info) {
      if (body.find("RCCL version") != std::string::npos && !ctx.versions.count("rccl"))
        ctx.versions["rccl"] = word_after(body, "RCCL version");
      else if (body.find("NCCL version") != std::string::npos && !ctx.versions.count("nccl"))
        ctx.versions["nccl"] = word_after(body, "NCCL version");
      // Command lines (shell prompt, mpirun, library warnings naming the binary).
      bool named_binary = false;
      for (std::size_t k = 0; k < cmd.size(); ++k) {
        if (cmd[k].find("_perf") == std::string::npos)
          continue;
        std::string stem;
        const auto op = detail::op_from_binary(cmd[k], &stem);
        if (stem.empty())
          continue;
        named_binary = true;
        if (op)
          pending_cmd = op;
        else
          diag.warn(ln, "op", "unsupported collective binary '" + cmd[k] + "'");
        detail::fill_missing(facts.launch, detail::launch_shape(cmd, k));
        if (command_line.empty()) {
          std::size_t from = k;
          for (std::size_t j = 0; j < k; ++j)
            if (detail::is_launcher(cmd[j])) {
              from = j;
              break;
            }
          command_line = join({cmd.begin() + static_cast<long>(from), cmd.end()});
        }
        break;
      }
      if (named_binary)
        continue;
    }
    if (!cur)
      continue;
    // A row mixed with other output on one line ("host:12:12 [0] NCCL INFO ... 1024 256 float
    // ..."): recover it when the tail has exactly the table's fields.
    const std::size_t want = detail::expected_tokens(cur->columns);
    if (want >= 3 && toks.size() > want) {
      const std::size_t k = toks.size() - want;
      if (to_u64(toks[k]) && to_u64(toks[k + 1]) && parse_dtype(toks[k + 2])) {
        std::vector<std::string> tail(toks.begin() + static_cast<long>(k), toks.end());
        if (auto row = detail::map_row(cur->columns, tail, ln, cur->named_op())) {
          diag.warn(ln, "",
                    "row mixed with other output on one line; read its last " +
                        std::to_string(want) + " fields");
          cur->rows.push_back(std::move(*row));
          cur->last_row_line = ln;
        }
      }
    }
  }

  if (sections.empty() && !json_input)
    if (auto s = detail::headerless_section(lines)) {
      diag.warn(s->header_line, "",
                "no table header: read " + std::to_string(s->rows.size()) +
                    " rows as nccl-tests' columns (" + detail::join(s->columns) + ")");
      s->op_cmd = pending_cmd;
      sections.push_back(std::move(*s));
    }
  if (sections.empty())
    diag.fail(0, "",
              "no nccl-tests result table found (expected a header '#  size  count  type ... "
              "time  algbw  busbw ...', or nccl-tests -J / rccl-tests JSON)");
  if (std::all_of(sections.begin(), sections.end(), [](const Section &s) { return s.rows.empty(); }))
    diag.fail(sections.front().header_line, "",
              std::string("the result table has a header") +
                  (sections.front().footer ? " and a footer" : "") +
                  " but no rows: the run measured nothing (did it fail or get cut before the "
                  "first size?)");

  std::set<std::string> formats;
  int max_ranks = 0;
  json section_info = json::array();
  for (auto &s : sections) {
    const bool has_wrong = std::count(s.columns.begin(), s.columns.end(), "#wrong") > 0;
    formats.insert(json_input           ? "json"
                   : have_banner_format ? "current"
                   : has_wrong          ? "2.13-2.17"
                                        : "pre-2.13");
    if (s.rows.empty()) {
      diag.warn(s.header_line, "", "result table without rows");
      continue;
    }
    if (!s.footer)
      diag.warn(s.last_row_line, "",
                "run cut off before the footer ('# Avg bus bandwidth'); kept the " +
                    std::to_string(s.rows.size()) + " rows measured");
    detail::warn_repeated_sizes(s, diag);
    const detail::Derived d = detail::derive(s, facts, opt, diag);
    const std::size_t before = res.measurements.size();
    build_records(s, d, opt, diag, res.measurements);
    section_info.push_back({{"header_line", s.header_line},
                            {"op", op_name(d.op)},
                            {"nranks", d.nranks},
                            {"nranks_from", d.nranks_from},
                            {"nnodes", d.nnodes},
                            {"nnodes_from", d.nnodes_from},
                            {"nnodes_lower_bound", d.nnodes_lower_bound},
                            {"rank_lines", s.ranks.size()},
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
  if (res.measurements.empty())
    diag.fail(sections.front().header_line, "",
              "no row of the result table could be read (see the warnings)");

  ctx.system = opt.system;
  if (ctx.system.empty()) {
    ctx.system = detail::file_stem(path);
    diag.note(0, "system name '" + ctx.system + "' taken from the file name (pass --system)");
  }
  if (!tests_version.empty())
    ctx.versions[tool] = tests_version;
  ctx.command_line = command_line;
  ctx.source = json::object();
  ctx.source["file"] = detail::base_name(path);
  ctx.source["path"] = path;
  ctx.source["first_comment_line"] = first_comment;
  ctx.source["tool"] = tool;
  if (!tests_version.empty())
    ctx.source["tool_version"] = tests_version;
  ctx.source["format"] =
      formats.size() == 1 ? *formats.begin() : join({formats.begin(), formats.end()}, ",");
  if (!params.empty())
    ctx.source["parameters"] = params;
  if (const auto desc = system_from_comment(first_comment); !desc.empty())
    ctx.source["system_description"] = desc;
  ctx.source["tables"] = section_info;
  if (!section_info.empty()) {
    ctx.source["nranks_from"] = section_info.front()["nranks_from"];
    ctx.source["nnodes_from"] = section_info.front()["nnodes_from"];
  }
  ctx.source["ingested_at"] = utc_now_iso8601();
  res.warnings = diag.warnings();
  res.notes = diag.notes();
  ctx.source["warnings"] = res.warnings;
  ctx.source["notes"] = res.notes;
  return res;
}

} // namespace scalefit::ingest
