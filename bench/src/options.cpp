// Options of `scalefit-bench comm` (CLI11), their validation, and the size sweep.
#include "scalefit/bench/options.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace scalefit::bench {

std::string_view group_kind_name(GroupKind k) {
  switch (k) {
  case GroupKind::world:
    return "world";
  case GroupKind::intra:
    return "intra";
  case GroupKind::inter:
    return "inter";
  case GroupKind::pairs:
    return "pairs";
  }
  return "?";
}

void add_comm_options(CLI::App &app, RawCommArgs &raw) {
  app.add_option("--ops", raw.ops,
                 "Operations: all, or a comma list of allreduce, allgather, "
                 "reducescatter, reduce, broadcast, alltoall, alltoallv, sendrecv")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--alltoallv-matrix", raw.alltoallv_matrix,
                 "alltoallv's count matrix: uniform (count elements to every peer, as alltoall) "
                 "or skewed (MoE-like: Zipf shares 1/(q+1) of a rank's n*count elements by "
                 "popularity rank q, rotated per rank so every rank sends and receives n*count; "
                 "bench/README.md)")
      ->capture_default_str();
  app.add_option("--backend", raw.backend,
                 "mpi (host buffers) or nccl (one GPU per rank); auto: nccl when built with it "
                 "and a GPU is visible, else mpi")
      ->capture_default_str();
  app.add_option("-b,--minbytes", raw.min_bytes, "Smallest size [B] (K/M/G suffixes, 1024-based)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", raw.max_bytes, "Largest size [B]")->capture_default_str();
  app.add_option("-f,--stepfactor", raw.step_factor, "Multiply the size by this factor")
      ->capture_default_str()
      ->each([&raw](const std::string &) { raw.step_factor_given = true; });
  app.add_option("-i,--stepbytes", raw.step_bytes, "Add this many bytes instead of -f")
      ->each([&raw](const std::string &) { raw.step_bytes_given = true; });
  app.add_option("-d,--datatype", raw.dtypes,
                 "Data type(s): float, double, int32, int64, int8, uint8, uint32, uint64; half, "
                 "bfloat16 (nccl only); a comma list or all")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("-o,--op", raw.redop, "Reduction: sum, prod, max, min, avg (nccl only)")
      ->capture_default_str();
  app.add_option("-r,--root", raw.root, "Root rank of reduce and broadcast")->capture_default_str();
  app.add_option("-w,--warmup_iters", raw.warmup_iters,
                 "Warm-up operations before each point (the first alone, the rest as one batch); "
                 "every communicator is also warmed once at its sweep's largest and smallest size")
      ->capture_default_str()
      ->each([&raw](const std::string &) { raw.warmup_given = true; });
  app.add_option("-n,--iters", raw.fixed_samples,
                 "Timed samples per point, each a batch of --batch operations between two "
                 "synchronizations; 0: adaptive. Not nccl-tests' -n, which is the operations in "
                 "its one timed batch per size (here --batch; --nccl-tests sets --batch 20 as "
                 "nccl-tests' default -n 20)")
      ->capture_default_str();
  app.add_option("--batch", raw.batch,
                 "Operations per sample (what nccl-tests' -n counts); 0: calibrated from warm-up "
                 "to last --batch-time")
      ->capture_default_str()
      ->each([&raw](const std::string &) { raw.batch_given = true; });
  app.add_flag("--nccl-tests", raw.nccl_tests_mode,
               "Time as nccl-tests does by default, for a side-by-side: every sample is a batch "
               "of 20 operations (nccl-tests' -n 20) and the warm-up is 1 operation (its -w 1), "
               "unless --batch or -w say otherwise; samples repeat by the stop rule and the "
               "mean is reported");
  app.add_option("--batch-time", raw.batch_time_us, "Target duration of one sample [us]")
      ->capture_default_str();
  // nccl-tests takes -c 0/1; a bare -c means 1. No default_str: CLI11 would both show it and
  // substitute it for a bare -c; the help text states the default instead.
  app.add_option("-c,--check", raw.check,
                 "Check results in a separate untimed run: 0 or 1 (default 0); a bare -c means 1")
      ->expected(0, 1)
      ->type_name("0|1");
  app.add_option("-G,--cudagraph", raw.graph_launches,
                 "nccl: capture each point's sample batch once as a CUDA graph, upload it, launch "
                 "it once untimed, then time N launches per sample (nccl-tests' -G N: its -n "
                 "operations captured, the graph launched N times); the -c check also runs "
                 "through a graph")
      ->capture_default_str();
  app.add_option("--alloc", raw.alloc,
                 "nccl buffers: nccl (ncclMemAlloc, the default, as nccl-tests 2.19) or cuda "
                 "(cudaMalloc)");
  app.add_option("-R,--local_register", raw.registration,
                 "nccl buffer registration, as nccl-tests' -R: 0 none, 1 local "
                 "(ncclCommRegister), 2 symmetric (ncclCommWindowRegister; NCCL >= 2.27, "
                 "--alloc nccl)")
      ->capture_default_str();
  app.add_option("--min-time", raw.min_time_s, "Adaptive: minimum timed time per point [s]")
      ->capture_default_str();
  app.add_option("--max-time", raw.max_time_s,
                 "Adaptive: cap per point [s] (with --budget: also caps the budget's share)")
      ->capture_default_str()
      ->each([&raw](const std::string &) { raw.max_time_given = true; });
  app.add_option("--max-ci", raw.max_ci,
                 "Adaptive: stop when the 95% confidence interval of the reported statistic has "
                 "a relative half-width below this (0: use --max-noise)")
      ->capture_default_str();
  app.add_option("--max-noise", raw.max_noise,
                 "Adaptive with --max-ci 0: stop when stddev/mean of samples is below this")
      ->capture_default_str();
  app.add_option("--stat", raw.statistic,
                 "Statistic of the samples that time_us and the table report: median (the "
                 "default: preempted samples on a shared host do not pull it) or mean (as "
                 "nccl-tests; the default in --nccl-tests mode)")
      ->capture_default_str()
      ->each([&raw](const std::string &) { raw.statistic_given = true; });
  app.add_option("--sync", raw.sync,
                 "Timing definition: back-to-back (a batch of operations under one clock, as "
                 "nccl-tests) or barrier (mpi: each operation timed alone and followed by an "
                 "untimed barrier, as OSU and IMB time; for numbers to put beside theirs)")
      ->capture_default_str();
  app.add_option("--budget", raw.budget_s,
                 "Wall time for the whole sweep [s], all --repeat runs together; in the first run "
                 "each point may use the remaining time / remaining points, in later runs a share "
                 "weighted by its run-to-run uncertainty so far (1/4 to 4 shares: the budget goes "
                 "where the runs disagree) (0: no budget, --max-time per point)")
      ->capture_default_str();
  app.add_option("--placement", raw.placement, "Placements to time: out, in or both")
      ->capture_default_str();
  app.add_flag("--hot", raw.hot,
               "Keep the same buffers for every operation (cached case); default: rotate the "
               "buffers through >= 2x the last-level cache, as nccl-tests does");
  app.add_option("--timer", raw.timer,
                 "host: host clock around back-to-back ops and a final stream synchronize "
                 "(nccl-tests); events: CUDA events per batch (nccl only)")
      ->capture_default_str();
  app.add_option("--timeout", raw.timeout_s,
                 "Abort the job when a step (barrier, batch, gather) runs this long past its "
                 "expected time [s] (0: never; at most 1e6, as every duration option); rank 0 "
                 "then names the op, size, group and the ranks that had not arrived, from "
                 "progress the ranks report to it out of band")
      ->capture_default_str();
  app.add_option("--repeat", raw.repeat,
                 "Run the whole sweep N times (1..1000); each point's record is its median run's "
                 "and carries every run's time and busbw and their spread (extra.repeat), which "
                 "`scalefit report` draws as a band and `scalefit check` judges")
      ->capture_default_str();
  app.add_option("--min-samples", raw.min_samples, "Adaptive: floor on samples per point")
      ->capture_default_str();
  app.add_option("--max-samples", raw.max_samples, "Adaptive: ceiling on samples per point")
      ->capture_default_str();
  app.add_option("--groups", raw.groups,
                 "Group shapes: comma list of world, intra, inter, pairs (every node against "
                 "every other in round-robin rounds of concurrent pairs, and every rank pair "
                 "inside a node: SendRecv and AllReduce per pair, slow nodes named)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--emulate-nodes", raw.emulate_nodes,
                 "Split the ranks into K pseudo-nodes of contiguous ranks (0: real nodes)")
      ->capture_default_str();
  app.add_option("--out", raw.out, "Append JSON Lines records to this file");
  app.add_option("--csv", raw.csv, "Append one CSV row per measurement to this file (docs/records.md)");
  app.add_flag("--resume", raw.resume,
               "Continue --out: skip points it already holds for the same context");
  app.add_option("--system", raw.system, "System name recorded in the context")
      ->capture_default_str();
  app.add_flag("--baseline", raw.baseline,
               "Time a bare MPI_Allreduce loop beside allreduce points (mpi backend)");
}

namespace {

[[noreturn]] void bad(const std::string &field, const std::string &message) {
  throw InputError(message, "", 0, field);
}

} // namespace

CommOptions validate_comm_args(const RawCommArgs &raw) {
  CommOptions o;
  for (const std::string &name : raw.ops) {
    if (name == "all") {
      for (Op op : all_ops())
        if (std::find(o.ops.begin(), o.ops.end(), op) == o.ops.end())
          o.ops.push_back(op);
      continue;
    }
    const auto op = parse_op(name);
    if (!op)
      bad("--ops", "unknown operation '" + name +
                       "' (expected all, allreduce, allgather, "
                       "reducescatter, reduce, broadcast, alltoall, alltoallv, sendrecv)");
    if (std::find(o.ops.begin(), o.ops.end(), *op) == o.ops.end())
      o.ops.push_back(*op);
  }
  if (o.ops.empty())
    bad("--ops", "no operation given");
  if (const auto m = parse_alltoallv_matrix(raw.alltoallv_matrix))
    o.alltoallv_matrix = *m;
  else
    bad("--alltoallv-matrix", "expected uniform or skewed, got '" + raw.alltoallv_matrix + "'");
  if (raw.backend != "auto" && raw.backend != "mpi" && raw.backend != "nccl")
    bad("--backend", "expected auto, mpi or nccl, got '" + raw.backend + "'");
  o.backend = raw.backend;
  o.min_bytes = parse_bytes(raw.min_bytes, "-b");
  o.max_bytes = parse_bytes(raw.max_bytes, "-e");
  if (o.min_bytes > o.max_bytes)
    bad("-b",
        "minimum size " + raw.min_bytes + " is larger than maximum size (-e) " + raw.max_bytes);
  if (raw.step_factor_given && raw.step_bytes_given)
    bad("-f", "-f (step factor) and -i (step bytes) are exclusive");
  if (raw.step_bytes_given) {
    o.step_bytes = parse_bytes(raw.step_bytes, "-i");
    if (o.step_bytes == 0)
      bad("-i", "step bytes must be > 0");
    o.step_factor = 1;
  } else {
    if (!(raw.step_factor > 1) || raw.step_factor != std::floor(raw.step_factor))
      bad("-f", "step factor must be an integer > 1, got " + std::to_string(raw.step_factor));
    o.step_factor = static_cast<std::uint64_t>(raw.step_factor);
    if (o.min_bytes == 0)
      bad("-b", "minimum size must be > 0 with a step factor");
  }
  o.dtypes.clear();
  for (const std::string &name : raw.dtypes) {
    if (name == "all") {
      o.all_dtypes = true;
      continue;
    }
    const auto t = parse_dtype(name);
    if (!t)
      bad("-d", "unknown data type '" + name +
                    "' (expected float, double, half, bfloat16, "
                    "int8, uint8, int32, uint32, int64, uint64)");
    if (std::find(o.dtypes.begin(), o.dtypes.end(), *t) == o.dtypes.end())
      o.dtypes.push_back(*t);
  }
  if (o.dtypes.empty() && !o.all_dtypes)
    bad("-d", "no data type given");
  const auto r = parse_redop(raw.redop);
  if (!r)
    bad("-o", "unknown reduction '" + raw.redop + "' (expected sum, prod, max, min, avg)");
  o.redop = *r;
  if (raw.root < 0)
    bad("-r", "root must be >= 0");
  o.root = raw.root;
  if (raw.warmup_iters < 0)
    bad("-w", "warm-up iterations must be >= 0");
  o.warmup_iters = raw.warmup_iters;
  if (raw.fixed_samples < 0)
    bad("-n", "iterations must be >= 0 (0: adaptive)");
  o.fixed_samples = raw.fixed_samples;
  if (raw.batch < 0)
    bad("--batch", "must be >= 0 (0: calibrated)");
  o.batch = raw.batch;
  if (raw.check.size() > 1)
    bad("-c", "given more than once");
  if (!raw.check.empty()) {
    const std::string &c = raw.check.front();
    if (c != "" && c != "0" && c != "1")
      bad("-c", "expected 0 or 1, got '" + c + "'");
    o.check = c != "0";
  }
  if (raw.graph_launches < 0)
    bad("-G", "must be >= 0");
  o.graph_launches = raw.graph_launches;
  if (raw.registration < 0 || raw.registration > 2)
    bad("-R", "expected 0 (none), 1 (local) or 2 (symmetric), got " +
                  std::to_string(raw.registration));
  o.registration = raw.registration;
  if (!raw.alloc.empty() && raw.alloc != "nccl" && raw.alloc != "cuda")
    bad("--alloc", "expected nccl (ncclMemAlloc) or cuda (cudaMalloc), got '" + raw.alloc + "'");
  o.alloc_given = !raw.alloc.empty();
  o.nccl_mem_alloc = raw.alloc != "cuda";
  if (o.registration == 2 && !o.nccl_mem_alloc)
    bad("-R", "symmetric registration (-R 2) needs ncclMemAlloc buffers: drop --alloc cuda");
  o.nccl_tests_mode = raw.nccl_tests_mode;
  if (o.nccl_tests_mode) {
    if (!raw.batch_given)
      o.batch = kNcclTestsIters;
    if (!raw.warmup_given)
      o.warmup_iters = kNcclTestsWarmup;
  }
  for (const auto &[name, v] :
       {std::pair{"--min-time", raw.min_time_s}, std::pair{"--max-time", raw.max_time_s},
        std::pair{"--max-noise", raw.max_noise}, std::pair{"--max-ci", raw.max_ci},
        std::pair{"--batch-time", raw.batch_time_us}, std::pair{"--budget", raw.budget_s},
        std::pair{"--timeout", raw.timeout_s}, std::pair{"-f", raw.step_factor}})
    if (!std::isfinite(v))
      bad(name, "must be a finite number");
  if (!(raw.min_time_s >= 0))
    bad("--min-time", "must be >= 0");
  if (!(raw.max_time_s > 0))
    bad("--max-time", "must be > 0");
  if (raw.min_time_s > raw.max_time_s)
    bad("--min-time", "is larger than --max-time");
  if (!(raw.max_noise > 0))
    bad("--max-noise", "must be > 0");
  if (!(raw.batch_time_us > 0))
    bad("--batch-time", "must be > 0");
  if (raw.min_samples < 1)
    bad("--min-samples", "must be >= 1");
  if (raw.max_samples < raw.min_samples)
    bad("--max-samples", "is smaller than --min-samples");
  if (!(raw.max_ci >= 0 && raw.max_ci < 1))
    bad("--max-ci", "must be in [0, 1) (a relative half-width; 0: use --max-noise)");
  if (!(raw.budget_s >= 0))
    bad("--budget", "must be >= 0 (0: no budget)");
  if (!(raw.timeout_s >= 0))
    bad("--timeout", "must be >= 0 (0: never)");
  // Durations become int64 nanoseconds (watchdog) and sample counts: bound them where they are read.
  for (const auto &[name, v] :
       {std::pair{"--timeout", raw.timeout_s}, std::pair{"--budget", raw.budget_s},
        std::pair{"--max-time", raw.max_time_s}, std::pair{"--min-time", raw.min_time_s},
        std::pair{"--batch-time", raw.batch_time_us * 1e-6}})
    if (v > kMaxDurationS)
      bad(name, fmt::format("must be at most {:g} s (about 11.6 days), got {:g} s", kMaxDurationS,
                            v));
  if (raw.repeat < 1 || raw.repeat > 1000)
    bad("--repeat", "must be in 1..1000, got " + std::to_string(raw.repeat));
  o.repeat = raw.repeat;
  if (raw.sync == "barrier")
    o.sync_barrier = true;
  else if (raw.sync != "back-to-back")
    bad("--sync", "expected back-to-back or barrier, got '" + raw.sync + "'");
  if (o.sync_barrier && o.backend == "nccl")
    bad("--sync", "barrier is the mpi backend's definition (OSU, IMB); nccl times back to back, "
                  "as nccl-tests");
  // nccl-tests' average over its -n operations, unless --stat says otherwise.
  const std::string statistic =
      o.nccl_tests_mode && !raw.statistic_given ? std::string("mean") : raw.statistic;
  if (statistic == "mean")
    o.statistic = Statistic::mean;
  else if (statistic == "median")
    o.statistic = Statistic::median;
  else
    bad("--stat", "expected mean or median, got '" + raw.statistic + "'");
  if (raw.timer != "host" && raw.timer != "events")
    bad("--timer", "expected host or events, got '" + raw.timer + "'");
  o.events_timer = raw.timer == "events";
  o.placements = parse_placements(raw.placement);
  o.max_ci = raw.max_ci;
  o.budget_s = raw.budget_s;
  o.timeout_s = raw.timeout_s;
  o.hot = raw.hot;
  o.max_time_given = raw.max_time_given;
  o.min_time_s = raw.min_time_s;
  o.max_time_s = raw.max_time_s;
  o.max_noise = raw.max_noise;
  o.batch_time_us = raw.batch_time_us;
  o.min_samples = raw.min_samples;
  o.max_samples = raw.max_samples;
  o.groups.clear();
  for (const std::string &g : raw.groups) {
    GroupKind k;
    if (g == "world")
      k = GroupKind::world;
    else if (g == "intra")
      k = GroupKind::intra;
    else if (g == "inter")
      k = GroupKind::inter;
    else if (g == "pairs")
      k = GroupKind::pairs;
    else
      bad("--groups", "unknown group kind '" + g + "' (expected world, intra, inter, pairs)");
    if (std::find(o.groups.begin(), o.groups.end(), k) == o.groups.end())
      o.groups.push_back(k);
  }
  if (o.groups.empty())
    bad("--groups", "no group kind given");
  if (raw.emulate_nodes < 0)
    bad("--emulate-nodes", "must be >= 0");
  o.emulate_nodes = raw.emulate_nodes;
  if (raw.resume && raw.out.empty())
    bad("--resume", "needs --out FILE");
  if (raw.resume && std::find(o.groups.begin(), o.groups.end(), GroupKind::pairs) != o.groups.end())
    bad("--groups", "pairs are timed anew on every run: --resume cannot skip them (drop --resume "
                    "or run --groups pairs into its own --out)");
  if (raw.system.empty())
    bad("--system", "must not be empty");
  o.out = raw.out;
  o.csv = raw.csv;
  o.resume = raw.resume;
  o.system = raw.system;
  o.baseline = raw.baseline;
  (void)size_sweep(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);
  return o;
}

CommOptions parse_comm_args(const std::vector<std::string> &args) {
  CLI::App app{"comm"};
  RawCommArgs raw;
  add_comm_options(app, raw);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  return validate_comm_args(raw);
}

std::vector<std::uint64_t> size_sweep(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                      std::uint64_t step_factor, std::uint64_t step_bytes) {
  if (min_bytes > max_bytes)
    throw InputError("minimum size is larger than maximum size", "", 0, "-b");
  if (step_bytes == 0 && (step_factor <= 1 || min_bytes == 0))
    throw InputError("the size sweep does not advance (need -f > 1 and -b > 0, or -i > 0)", "", 0,
                     "-f");
  // Count first: -i 1 -e 8G would otherwise build a vector of 8 G sizes (64 GB) before anything.
  const std::uint64_t n =
      step_bytes > 0 ? (max_bytes - min_bytes) / step_bytes + 1 : 0; // factor sweeps are short
  if (n > kMaxSweepSizes)
    throw InputError("the sweep holds " + std::to_string(n) + " sizes (more than " +
                         std::to_string(kMaxSweepSizes) + "); raise -i or narrow -b/-e",
                     "", 0, "-i");
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min_bytes; s <= max_bytes;) {
    sizes.push_back(s);
    const std::uint64_t next = step_bytes > 0 ? s + step_bytes : s * step_factor;
    if (next <= s)
      break; // overflow
    s = next;
  }
  return sizes;
}

std::vector<Placement> parse_placements(const std::string &text) {
  if (text == "out")
    return {Placement::out_of_place};
  if (text == "in")
    return {Placement::in_place};
  if (text == "both")
    return {Placement::out_of_place, Placement::in_place};
  throw InputError("expected out, in or both, got '" + text + "'", "", 0, "--placement");
}

std::vector<SizePoint> op_size_points(Op op, const std::vector<std::uint64_t> &sizes, DType dtype,
                                      int nranks) {
  std::vector<SizePoint> points;
  std::set<std::uint64_t> seen;
  for (std::uint64_t s : sizes) {
    const std::size_t c = count_per_rank(op, s, dtype_size(dtype), nranks);
    if (c == 0)
      continue;
    const std::uint64_t b = effective_bytes(op, s, dtype_size(dtype), nranks);
    if (!seen.insert(b).second)
      continue;
    points.push_back({b, c});
  }
  return points;
}

} // namespace scalefit::bench
