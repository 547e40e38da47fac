// What an nccl-tests table does not print in its rows: the operation, the number of ranks and
// the number of nodes, with the source of each.
//
// op:     `# Collective test starting: <bin>`, else a `*_perf` binary on a command line, else the
//         columns (redop/root/count), else --op, else the file name among column-compatible ops.
// nranks: 1. the count column, exact for AllGather/ReduceScatter/AllToAll (size = count * type
//            size * n);
//         2. busbw/algbw, exact where the printed precision pins one integer: busbw = algbw *
//            2(n-1)/n (AllReduce) or (n-1)/n (AllGather, ReduceScatter, AllToAll); every row's
//            interval of n (from the printed decimals) is intersected;
//         3. rccl-tests JSON "gpus", NCCL init lines (`nRanks N`), the Rank lines (largest rank + 1,
//            they may be partial: `...`, 2 of 16 printed, a log cut short), a launcher's -np;
//            when (2) leaves several integers, the first of these inside its interval wins;
//         4. --nranks; else 1 with a warning.
//         When the Rank lines and the busbw/algbw factor disagree, the factor wins (warned).
// nnodes: 1. distinct hosts of Rank lines that list every rank;
//         2. NCCL init lines (`nNodes N`);
//         3. the Rank lines' host pattern (ranks 0..k-1 on one host, rank k on another: k ranks
//            per node, nodes = n / k);
//         4. --nnodes, or a launcher's -N / host list;
//         5. a lower bound: distinct hosts among partial Rank lines, NCCL INFO lines and launcher
//            prefixes, and 2 when a channel goes `via NET/...` (only inter-node traffic uses the
//            network); the record says `lower bound`;
//         6. unknown: 1 in the record (it needs a number), nnodes_from "unknown (assumed 1)" and a
//            warning naming --nnodes. Host names count by their short name (before the first
//            '.'), so one host printed two ways is one node.
#include "nccl_tests_detail.hpp"

#include <algorithm>
#include <cmath>

namespace scalefit::ingest::detail {
namespace {

/// Row's dtype size, or 0 when the type is unknown.
std::size_t row_type_size(const RawRow &r) {
  const auto it = r.prefix.find("type");
  if (it == r.prefix.end())
    return 0;
  const auto t = parse_dtype(it->second);
  return t ? dtype_size(*t) : 0;
}

/// Ratio size / (count * type size) of the largest readable row: 1 for AllReduce-like ops,
/// nranks for AllGather/ReduceScatter/AllToAll. nullopt when there is no count column.
std::optional<double> count_ratio(const Section &s) {
  const RawRow *best = nullptr;
  std::uint64_t best_size = 0;
  for (const auto &r : s.rows) {
    const auto sit = r.prefix.find("size"), cit = r.prefix.find("count");
    if (sit == r.prefix.end() || cit == r.prefix.end())
      continue;
    const auto size = to_u64(sit->second), count = to_u64(cit->second);
    if (!size || *size == 0 || !count || *count == 0 || row_type_size(r) == 0)
      continue;
    if (*size > best_size) {
      best = &r;
      best_size = *size;
    }
  }
  if (!best)
    return std::nullopt;
  const double size = static_cast<double>(*to_u64(best->prefix.at("size")));
  const double count = static_cast<double>(*to_u64(best->prefix.at("count")));
  return size / (count * static_cast<double>(row_type_size(*best)));
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
  // nccl-tests prints redop "sum" for SendRecv too: a reducing column fits it when count = size.
  if (reduces) {
    if (!known)
      return {Op::allreduce, Op::reducescatter, Op::sendrecv};
    if (divided)
      return {Op::reducescatter};
    // One rank (a single-GPU run): ReduceScatter's count is the whole size too.
    if (s.ranks.size() == 1 && !s.rank_list_elided)
      return {Op::allreduce, Op::sendrecv, Op::reducescatter};
    return {Op::allreduce, Op::sendrecv};
  }
  if (!known)
    return {Op::allgather, Op::alltoall, Op::sendrecv};
  if (divided)
    return {Op::allgather, Op::alltoall};
  return {Op::sendrecv, Op::allgather, Op::alltoall}; // n = 1 gives ratio 1 for all three
}

std::string compact(const std::string &s) {
  std::string out;
  for (char c : to_lower(s))
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

/// Picks the op named in the file name among candidates ("..._alltoall.txt" -> alltoall).
std::optional<Op> op_from_file_name(const std::string &file, const std::vector<Op> &cands) {
  const std::string name = compact(base_name(file));
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

Op decide_op(const Section &s, const IngestOptions &opt, Diagnostics &diag) {
  const long line = s.header_line;
  const std::optional<Op> file_op = s.op_banner ? s.op_banner : s.op_cmd;
  const auto cands = ops_from_columns(s);
  // alltoallv_perf's columns are alltoall_perf's (no redop, root -1, count per peer).
  const bool fits = file_op && (std::find(cands.begin(), cands.end(), *file_op) != cands.end() ||
                                (*file_op == Op::alltoallv &&
                                 std::find(cands.begin(), cands.end(), Op::alltoall) != cands.end()));
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
  // AllGather vs AllToAll, AllReduce vs SendRecv: nccl-tests checks AllGather and AllReduce in
  // place but prints N/A for AllToAll's and SendRecv's in-place #wrong (no in-place check), while
  // the out-of-place #wrong is a count.
  const auto has = [&](Op op) { return std::find(cands.begin(), cands.end(), op) != cands.end(); };
  // nccl-tests before 2.13 prints an `error` column (max abs error) instead: AllToAll was checked
  // in place there, where its grouped sends overwrite their own input, so its in-place error is
  // nonzero on every row while the out-of-place one is 0; AllGather is exact both ways.
  int oop_num = 0, ip_num = 0, ip_na = 0;
  int err_rows = 0, oop_exact = 0, ip_wrong = 0;
  for (const auto &r : s.rows) {
    if (r.halves.size() < 2)
      continue;
    const auto &oc = r.halves[0].cols, &ic = r.halves[1].cols;
    if (const auto o = oc.find("#wrong"), i = ic.find("#wrong"); o != oc.end() && i != ic.end()) {
      oop_num += to_double(o->second).has_value();
      ip_num += to_double(i->second).has_value();
      ip_na += i->second == "N/A";
    }
    if (const auto o = oc.find("error"), i = ic.find("error"); o != oc.end() && i != ic.end()) {
      ++err_rows;
      const auto oe = to_double(o->second), ie = to_double(i->second);
      oop_exact += oe && *oe == 0;
      ip_wrong += ie && *ie > 0;
    }
  }
  const bool told = oop_num > 0 && (ip_num > 0 || ip_na > 0);
  const bool checked_in_place = ip_num > 0 || ip_na == 0;
  const auto pick = [&](Op checked, Op unchecked) -> std::optional<Op> {
    if (cands.size() != 2 || !has(checked) || !has(unchecked))
      return std::nullopt;
    if (told) {
      const Op op = checked_in_place ? checked : unchecked;
      diag.note(line, "operation " + std::string(op_name(op)) +
                          " told by the in-place #wrong column (" +
                          (op == unchecked ? "N/A: no in-place check, as " + std::string(op_name(op))
                                           : "checked in place, as " + std::string(op_name(op))) +
                          ")");
      return op;
    }
    return std::nullopt;
  };
  if (const auto op = pick(Op::allgather, Op::alltoall))
    return *op;
  if (cands.size() == 2 && has(Op::allgather) && has(Op::alltoall) && err_rows > 0 &&
      oop_exact == err_rows && ip_wrong == err_rows) {
    diag.note(line, "operation alltoall told by the error columns (exact out of place, wrong in "
                    "place on every row: nccl-tests before 2.13 checked AllToAll in place, where "
                    "its sends overwrite their own input; AllGather is exact both ways)");
    return Op::alltoall;
  }
  if (const auto op = pick(Op::allreduce, Op::sendrecv))
    return *op;
  // Without a banner, a command line, a telling file name or checked #wrong columns (-c 0),
  // AllGather and AllToAll print the same columns, counts and bus factor ((n-1)/n): the curve is
  // the same either way, only its name is a guess, so read it and say which to pass.
  if (cands.size() == 2 && has(Op::allgather) && has(Op::alltoall)) {
    diag.warn(line, "op",
              "the columns fit allgather and alltoall (same counts and bus factor) and no banner, "
              "command line, file name or in-place #wrong column tells them apart; read as "
              "allgather (pass --op alltoall if it is)");
    return Op::allgather;
  }
  if (cands.size() == 2 && has(Op::allreduce) && has(Op::sendrecv)) {
    diag.warn(line, "op",
              "the columns fit allreduce and sendrecv (nccl-tests prints redop 'sum' for both) and "
              "no #wrong column tells them apart; read as allreduce (pass --op sendrecv if it is)");
    return Op::allreduce;
  }
  std::vector<std::string> names;
  for (Op op : cands)
    names.emplace_back(op_name(op));
  diag.fail(line, "op",
            "cannot tell the operation from the log (columns fit " + join(names, ", ") +
                "); pass --op");
}

/// Interval of n that every row's printed busbw/algbw allows (each value known to half a unit of
/// its last printed decimal). nullopt when the factor does not depend on n or no row constrains
/// it (algbw printed as 0.00 everywhere).
struct NInterval {
  double lo = 1, hi = 1e9;
  int rows = 0;
};

std::optional<NInterval> nranks_interval_from_bw(const Section &s, Op op) {
  if (op == Op::reduce || op == Op::broadcast || op == Op::sendrecv)
    return std::nullopt;
  // n(r): AllReduce r = 2(n-1)/n -> n = 2/(2-r); others r = (n-1)/n -> n = 1/(1-r).
  const double top = op == Op::allreduce ? 2.0 : 1.0;
  const auto n_of = [&](double r) {
    return r >= top ? 1e9 : std::max(1.0, top / (top - r));
  };
  NInterval iv;
  for (const auto &r : s.rows)
    for (const auto &h : r.halves) {
      const auto ai = h.cols.find("algbw"), bi = h.cols.find("busbw");
      if (ai == h.cols.end() || bi == h.cols.end())
        continue;
      const auto a = to_double(ai->second), b = to_double(bi->second);
      if (!a || !b || *a <= 0 || *b < 0)
        continue;
      const bool expo = ai->second.find_first_of("eE") != std::string::npos ||
                        bi->second.find_first_of("eE") != std::string::npos;
      const double ha = expo ? 0.05 * *a : 0.5 * std::pow(10.0, -decimals(ai->second));
      const double hb = expo ? 0.05 * *b : 0.5 * std::pow(10.0, -decimals(bi->second));
      if (*a - ha <= 0)
        continue;
      const double rlo = std::max(0.0, (*b - hb) / (*a + ha));
      const double rhi = (*b + hb) / (*a - ha);
      const double lo = n_of(rlo), hi = n_of(rhi);
      if (hi >= 1e9 && lo <= 1)
        continue; // no information
      // A row inconsistent with the others (a rounding glitch) is skipped, not allowed to
      // empty the interval.
      if (iv.rows > 0 && (hi < iv.lo - 1e-9 || lo > iv.hi + 1e-9))
        continue;
      iv.lo = std::max(iv.lo, lo);
      iv.hi = std::min(iv.hi, hi);
      ++iv.rows;
    }
  if (iv.rows == 0)
    return std::nullopt;
  return iv;
}

/// Integers in [lo, hi] (with a small tolerance) that are valid rank counts (1..2^24), at most
/// `cap` of them counted.
std::vector<int> integers_in(const NInterval &iv, int cap = 3) {
  std::vector<int> out;
  const double lo = std::ceil(iv.lo - 1e-6);
  const double hi = std::min(std::floor(iv.hi + 1e-6), static_cast<double>(kMaxRecordRanks));
  for (double k = std::max(1.0, lo); k <= hi && static_cast<int>(out.size()) < cap; k += 1)
    out.push_back(static_cast<int>(k));
  return out;
}

bool inside(const NInterval &iv, int n) {
  return n >= iv.lo - 1e-6 && n <= iv.hi + 1e-6;
}

} // namespace

Derived derive(const Section &s, const LogFacts &facts, const IngestOptions &opt,
               Diagnostics &diag) {
  Derived d;
  d.op = decide_op(s, opt, diag);
  const long line = s.header_line;
  // Current-format rows read without their redop column (a fork prints none for allgather).
  if (std::count(s.columns.begin(), s.columns.end(), "#wrong") > 0 &&
      std::count(s.columns.begin(), s.columns.end(), "redop") > 0) {
    const auto blank = std::count_if(s.rows.begin(), s.rows.end(),
                                     [](const RawRow &r) { return !r.prefix.count("redop"); });
    const std::string what = std::to_string(blank) + " row(s) print nothing under redop";
    if (blank > 0 && op_has_redop(d.op))
      diag.warn(line, "redop",
                what + " but " + std::string(op_name(d.op)) + " reduces; read as sum");
    else if (blank > 0)
      diag.note(line, what + " (" + std::string(op_name(d.op)) +
                          " has no reduction, as some forks print it): read without it");
  }

  // Rank lines: distinct ranks, in rank order.
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
  const int listed = static_cast<int>(by_rank.size());
  const int listed_span = by_rank.empty() ? 0 : by_rank.rbegin()->first + 1;

  // ---- nranks ----
  std::optional<int> exact; // from the count column
  if (count_divided_by_ranks(d.op))
    if (const auto ratio = count_ratio(s)) {
      const double n = std::round(*ratio);
      if (n >= 1 && n <= static_cast<double>(kMaxRecordRanks) && std::fabs(*ratio - n) < 1e-9)
        exact = static_cast<int>(n);
    }
  const auto iv = nranks_interval_from_bw(s, d.op);
  std::optional<int> bw_n;
  std::vector<int> bw_ints;
  if (iv) {
    bw_ints = integers_in(*iv);
    if (bw_ints.size() == 1)
      bw_n = bw_ints.front();
  }
  // Other sources, most trusted first.
  std::vector<std::pair<int, std::string>> others;
  if (s.json_nranks)
    others.emplace_back(*s.json_nranks, "JSON gpus field");
  if (facts.info_nranks)
    others.emplace_back(*facts.info_nranks, "NCCL init lines (nRanks)");
  if (listed > 0)
    others.emplace_back(std::max(listed, listed_span), listed_span > listed || s.rank_list_elided
                                                           ? "rank lines (partial list)"
                                                           : "rank lines");
  if (facts.launch.nranks)
    others.emplace_back(*facts.launch.nranks, "launcher command line");
  if (facts.alloc.nranks)
    others.emplace_back(*facts.alloc.nranks, "batch allocation (salloc/sbatch/#SBATCH/#PBS)");
  if (!facts.prefix_ranks.empty())
    others.emplace_back(*facts.prefix_ranks.rbegin() + 1, "launcher output prefixes (lower bound)");

  const bool complete_list = listed > 0 && listed == listed_span && !s.rank_list_elided;
  if (complete_list && (!exact || *exact == listed) && (!iv || inside(*iv, listed))) {
    d.nranks = listed;
    d.nranks_from = "rank lines";
  } else if (exact) {
    d.nranks = *exact;
    d.nranks_from = "count column";
  } else if (bw_n) {
    d.nranks = *bw_n;
    d.nranks_from = "busbw/algbw";
  } else {
    bool chosen = false;
    for (const auto &[n, from] : others) {
      if (iv && !inside(*iv, n))
        continue;
      d.nranks = n;
      d.nranks_from = from;
      chosen = true;
      break;
    }
    if (!chosen && opt.nranks && (!iv || inside(*iv, *opt.nranks))) {
      d.nranks = *opt.nranks;
      d.nranks_from = "--nranks";
      chosen = true;
    }
    if (!chosen && iv && iv->hi < 1e8 && iv->hi <= 1.5 * iv->lo) {
      // The factor bounds n but the precision leaves several integers and nothing else fits:
      // the power of two inside, else the middle.
      int pick = static_cast<int>(std::lround((iv->lo + iv->hi) / 2));
      for (int p = 1; p <= kMaxRecordRanks; p *= 2)
        if (inside(*iv, p)) {
          pick = p;
          break;
        }
      d.nranks = std::max(1, pick);
      d.nranks_from = "busbw/algbw (estimate)";
      diag.warn(line, "nranks",
                "busbw/algbw bounds the ranks to " + std::to_string(iv->lo) + ".." +
                    std::to_string(iv->hi) + " only; using " + std::to_string(d.nranks) +
                    " (pass --nranks)");
      chosen = true;
    }
    if (!chosen) {
      if (!others.empty()) {
        d.nranks = others.front().first;
        d.nranks_from = others.front().second;
      } else if (iv && iv->hi < 1e8) {
        // Too imprecise to pick one count: the smallest the factor allows, flagged.
        d.nranks = std::max(2, static_cast<int>(std::ceil(iv->lo - 1e-6)));
        d.nranks_from = "busbw/algbw (lower bound)";
        diag.warn(line, "nranks",
                  "the log lists no ranks and busbw/algbw only bounds them to " +
                      std::to_string(static_cast<int>(std::ceil(iv->lo - 1e-6))) + ".." +
                      std::to_string(static_cast<int>(std::floor(iv->hi + 1e-6))) + "; using " +
                      std::to_string(d.nranks) + " (pass --nranks)");
      } else {
        d.nranks = 1;
        d.nranks_from = "default";
        diag.warn(line, "nranks",
                  "the log lists no ranks and " + std::string(op_name(d.op)) +
                      "'s busbw does not reveal them; assuming 1 rank (pass --nranks)");
      }
    }
  }
  if (exact && bw_n && *bw_n != *exact)
    diag.warn(line, "busbw",
              "busbw/algbw implies " + std::to_string(*bw_n) + " ranks, the count column " +
                  std::to_string(*exact));
  if (listed > 0 && std::max(listed, listed_span) != d.nranks &&
      d.nranks_from.rfind("rank lines", 0) != 0)
    diag.warn(line, "nranks",
              "the log lists " + std::to_string(listed) + " rank line(s) (ranks up to " +
                  std::to_string(listed_span - 1) + ") but " + d.nranks_from + " gives " +
                  std::to_string(d.nranks) + " ranks; using " + std::to_string(d.nranks));
  if (opt.nranks && *opt.nranks != d.nranks && d.nranks_from != "--nranks")
    diag.warn(line, "nranks",
              "--nranks " + std::to_string(*opt.nranks) + " ignored: the log gives " +
                  std::to_string(d.nranks) + " (" + d.nranks_from + ")");

  // ---- nnodes ----
  const bool full_list = listed == d.nranks && listed_span == d.nranks && !s.rank_list_elided;
  // Host pattern of the rank lines: ranks 0..k-1 on the first host, rank k on another.
  std::optional<int> pattern_rpn;
  if (by_rank.size() >= 2 && by_rank.begin()->first == 0) {
    const std::string &h0 = by_rank.begin()->second->host;
    int expect = 0;
    for (const auto &[rank, rl] : by_rank) {
      if (rank != expect)
        break; // a gap: the boundary is not seen
      if (rl->host != h0) {
        pattern_rpn = rank;
        break;
      }
      ++expect;
    }
  }
  // Hosts named anywhere, by short name: NCCL INFO lines print `node-a`, Rank lines may print
  // `node-a.cluster.local`; counting both would claim a node the log does not show.
  std::set<std::string> seen_hosts;
  for (const auto *names : {&facts.info_hosts, &facts.prefix_hosts, &facts.map_hosts})
    for (const auto &h : *names)
      seen_hosts.insert(h.substr(0, h.find('.')));
  for (const auto &h : d.hosts)
    seen_hosts.insert(h.substr(0, h.find('.')));
  int lower = static_cast<int>(seen_hosts.size());
  std::string lower_from = "host names in the log";
  if (facts.via_net_line > 0 && lower < 2) {
    lower = 2;
    lower_from = "a channel via " + facts.via_net + " (line " +
                 std::to_string(facts.via_net_line) + ")";
  }
  if (full_list && !d.hosts.empty()) {
    d.nnodes = static_cast<int>(d.hosts.size());
    d.nnodes_from = "rank lines";
  } else if (facts.info_nnodes) {
    d.nnodes = *facts.info_nnodes;
    d.nnodes_from = "NCCL init lines (nNodes)";
  } else if (pattern_rpn && d.nranks % *pattern_rpn == 0) {
    d.nnodes = d.nranks / *pattern_rpn;
    d.nnodes_from = "rank lines' host pattern (" + std::to_string(*pattern_rpn) + " per host)";
  } else if (opt.nnodes) {
    d.nnodes = *opt.nnodes;
    d.nnodes_from = "--nnodes";
  } else if (const auto launched = detail::nodes_from_launch(facts.launch, facts.map_hosts.size(),
                                                              facts.alloc, d.nranks)) {
    d.nnodes = launched->first;
    d.nnodes_from = launched->second;
  } else if (lower >= 2) {
    d.nnodes = lower;
    d.nnodes_from = "lower bound: " + lower_from;
    d.nnodes_lower_bound = true;
    diag.note(line, "at least " + std::to_string(lower) + " nodes (" + lower_from +
                        "); the exact count is unknown (pass --nnodes)");
  } else {
    // Nothing says: the record needs a number, so 1, but flagged and warned, never silent. One
    // host among partial Rank lines (only `rank 127 ... on host-31`) says nothing of the others.
    d.nnodes = 1;
    d.nnodes_from = "unknown (assumed 1)";
    const std::string seen =
        lower == 1 && listed > 0 && !full_list
            ? "the log shows 1 host among partial rank lines (" + std::to_string(listed) +
                  " of " + std::to_string(d.nranks) + " ranks)"
            : lower == 1 ? "the log names 1 host but no rank list" : "the log names no hosts";
    diag.warn(line, "nnodes",
              seen + ": the node count is unknown; assuming 1 node (pass --nnodes)");
  }
  if (opt.nnodes && *opt.nnodes != d.nnodes && d.nnodes_from != "--nnodes")
    diag.warn(line, "nnodes",
              "--nnodes " + std::to_string(*opt.nnodes) + " ignored: the log gives " +
                  std::to_string(d.nnodes) + " (" + d.nnodes_from + ")");
  if (!d.nnodes_lower_bound && lower > d.nnodes && d.nnodes_from != "rank lines")
    diag.warn(line, "nnodes",
              "the log names " + std::to_string(lower) + " hosts but " + d.nnodes_from +
                  " gives " + std::to_string(d.nnodes) + " nodes");
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

} // namespace scalefit::ingest::detail
