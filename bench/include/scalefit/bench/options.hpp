/// \file options.hpp
/// The options of `scalefit-bench comm`, named as nccl-tests names them where they overlap
/// (-b -e -f -i -d -o -r -w -n -c -G), and the message-size sweep they describe.
#pragma once

#include "scalefit/bench/alltoallv.hpp"
#include "scalefit/core/collectives.hpp"
#include "scalefit/core/timing.hpp"

#include <cstdint>
#include <string>
#include <vector>

// CLI11 is header-only and costs about 12 s of compile time per translation unit (Debian's 2.1):
// a forward declaration here, the header only where options are registered or parsed.
namespace CLI {
class App;
} // namespace CLI

namespace scalefit::bench {

/// Group-shape families swept by `--groups` (see groups.hpp).
enum class GroupKind { world, intra, inter, pairs };

/// Validated options of `scalefit-bench comm`. Sizes in bytes, times in seconds unless named _us.
struct CommOptions {
  std::vector<Op> ops;                   ///< --ops (all_ops() for "all")
  std::string backend = "auto";          ///< --backend: "auto", "mpi" or "nccl"
  std::uint64_t min_bytes = 8;           ///< -b [B], the whole array (nccl-tests' size)
  std::uint64_t max_bytes = 64ull << 20; ///< -e [B]
  std::uint64_t step_factor = 2;         ///< -f (used when step_bytes == 0)
  std::uint64_t step_bytes = 0;          ///< -i [B] (0: multiply by step_factor)
  std::vector<DType> dtypes{
      DType::float32};         ///< -d (a comma list; "all": every type the backend has)
  bool all_dtypes = false;     ///< -d all
  RedOp redop = RedOp::sum;    ///< -o
  int root = 0;                ///< -r, for reduce and broadcast
  int warmup_iters = 5;        ///< -w operations before timing each point
  int fixed_samples = 0;       ///< -n: timed samples per point (0: adaptive)
  int batch = 0;               ///< --batch: operations per sample (0: calibrated)
  bool check = false;          ///< -c 1: verify results in a separate untimed run
  /// -G N (nccl): each sample's batch captured once per point as a CUDA graph and launched N
  /// times (nccl-tests' -G); 0: eager.
  int graph_launches = 0;
  bool nccl_tests_mode = false; ///< --nccl-tests: batch of nccl-tests' -n (20) ops, -w 1
  bool nccl_mem_alloc = true;   ///< --alloc nccl (ncclMemAlloc, default) or cuda (cudaMalloc)
  bool alloc_given = false;     ///< --alloc given (refused on mpi)
  int registration = 0;         ///< -R 0|1|2: none, local, symmetric (nccl-tests' -R)
  double min_time_s = 0.01;    ///< --min-time: timed time before a precision stop [s]
  double max_time_s = 0.05;    ///< --max-time: stop a point after this long [s]
  bool max_time_given = false; ///< --max-time given explicitly (it then also caps --budget shares)
  double max_ci = 0.01;        ///< --max-ci: target relative 95% CI half-width (0: noise rule)
  double max_noise = 0.01;     ///< --max-noise: stop when stddev/mean is below (--max-ci 0)
  /// --stat: what time_us and the table report: the median of the samples by default (robust to
  /// preempted samples on a shared host); the mean in --nccl-tests mode, as nccl-tests.
  Statistic statistic = Statistic::median;
  double budget_s = 0;         ///< --budget: wall time for the whole sweep [s] (0: none)
  std::vector<Placement> placements{Placement::out_of_place}; ///< --placement out|in|both
  bool hot = false;            ///< --hot: no buffer rotation (data may stay in cache)
  /// --sync barrier (mpi): each operation timed alone with an untimed barrier after it (OSU's
  /// and IMB's definition); false (back-to-back, the default): nccl-tests' batch timing.
  bool sync_barrier = false;
  bool events_timer = false;   ///< --timer events (nccl); default host (nccl-tests')
  double timeout_s = 300;      ///< --timeout: abort the job when one op takes longer [s] (0: off)
  /// --repeat N: run the sweep N times; each point's record is its median run's, with every
  /// run's time and busbw in extra.repeat (repeat.hpp). 1: once.
  int repeat = 1;
  int min_samples = 5;         ///< --min-samples: floor on samples per point
  int max_samples = 1000;      ///< --max-samples: ceiling on samples per point
  double batch_time_us = 1000; ///< --batch-time: target duration of one sample [us]
  std::vector<GroupKind> groups{GroupKind::world}; ///< --groups
  int emulate_nodes = 0;        ///< --emulate-nodes K (0: nodes from shared memory)
  std::string out;              ///< --out FILE.jsonl ("" for none)
  std::string csv;              ///< --csv FILE.csv: one flat row per measurement ("" for none)
  bool resume = false;          ///< --resume
  std::string system = "local"; ///< --system NAME
  bool baseline = false;        ///< --baseline: bare MPI_Allreduce loop beside allreduce
  /// --alltoallv-matrix: alltoallv's count matrix (alltoallv.hpp)
  AlltoallvMatrix alltoallv_matrix = AlltoallvMatrix::uniform;
};

/// nccl-tests' defaults (src/common.cu of nccl-tests 2.19: iters = 20, warmup_iters = 1): the
/// operations in its one timed batch per size and its warm-up, which --nccl-tests adopts.
inline constexpr int kNcclTestsIters = 20;
inline constexpr int kNcclTestsWarmup = 1;

/// The most sizes one sweep may hold (a larger -b/-e/-i sweep is refused before anything runs).
inline constexpr std::size_t kMaxSweepSizes = 100000;

/// The longest duration any option takes [s] (--timeout, --budget, --max-time, --min-time,
/// --batch-time): 1e6 s, about 11.6 days. Durations become int64 nanoseconds in the watchdog
/// (which overflowed at 9.2e9 s and aborted at once); a larger value is refused (exit 2).
inline constexpr double kMaxDurationS = 1e6;

/// Raw text of the options as CLI11 parses them, before validation.
struct RawCommArgs {
  std::vector<std::string> ops{"all"};
  std::string backend = "auto";
  std::string min_bytes = "8", max_bytes = "64M", step_bytes;
  double step_factor = 2;
  std::vector<std::string> dtypes{"float"};
  std::string redop = "sum";
  int root = 0, warmup_iters = 5, fixed_samples = 0, batch = 0, graph_launches = 0;
  int registration = 0;
  std::string alloc;              ///< --alloc: "" (backend default), "nccl" or "cuda"
  bool nccl_tests_mode = false, warmup_given = false, batch_given = false;
  std::vector<std::string> check; ///< -c: empty (absent), "" (bare -c: 1), "0" or "1"
  double min_time_s = 0.01, max_time_s = 0.05, max_noise = 0.01, batch_time_us = 1000;
  double max_ci = 0.01, budget_s = 0, timeout_s = 300;
  std::string statistic = "median", placement = "out", timer = "host", sync = "back-to-back";
  bool statistic_given = false;
  bool hot = false, max_time_given = false;
  int min_samples = 5, max_samples = 1000;
  int repeat = 1; ///< --repeat
  std::vector<std::string> groups{"world"};
  int emulate_nodes = 0;
  std::string out, system = "local", csv;
  bool resume = false, baseline = false;
  std::string alltoallv_matrix = "uniform"; ///< --alltoallv-matrix
  bool step_factor_given = false, step_bytes_given = false;
};

/// Registers the options of `comm` on `app` (a CLI11 subcommand), bound to `raw`.
void add_comm_options(CLI::App &app, RawCommArgs &raw);

/// Validates raw arguments into options. Backend-specific checks (dtype support, GPU presence)
/// happen later, once the backend is known.
/// \throws InputError naming the argument for: unknown op, dtype, redop, group kind or backend;
///   min > max; -f <= 1; -i 0; -f and -i together; negative counts or times; min-time > max-time;
///   max-noise <= 0; max-ci < 0 or >= 1; min-samples > max-samples; --emulate-nodes < 0;
///   --resume without --out; unknown --alltoallv-matrix; unknown --stat/--placement/--timer/--alloc; -R not 0, 1 or 2;
///   -R 2 with --alloc cuda; --budget or --timeout < 0; a duration over kMaxDurationS (--timeout,
///   --budget, --max-time, --min-time, --batch-time); --repeat outside 1..1000;
///   non-finite numbers; a sweep of more than kMaxSweepSizes sizes.
CommOptions validate_comm_args(const RawCommArgs &raw);

/// Parses `comm`'s arguments (without the program and subcommand names) into options, as the
/// binary does; for tests. \throws CLI::ParseError for malformed flags, InputError as above.
CommOptions parse_comm_args(const std::vector<std::string> &args);

/// The requested sizes, nccl-tests' loop: min, then *factor (or +step_bytes) while <= max [B].
/// \throws InputError when the sweep is empty, does not advance (min 0 with a factor), or holds
///   more than kMaxSweepSizes sizes (e.g. -i 1 -e 8G: counted before any is stored).
std::vector<std::uint64_t> size_sweep(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                      std::uint64_t step_factor, std::uint64_t step_bytes);

/// One measurable size of an operation on n ranks.
struct SizePoint {
  std::uint64_t bytes = 0; ///< effective whole-array size (count rounded down) [B]
  std::size_t count = 0;   ///< per-rank count (nccl-tests' count column) [elements]
};

/// The points an operation measures for the requested sizes: per-rank count from core's
/// count_per_rank; sizes whose count rounds to 0 are skipped, and sizes that round to the same
/// effective size are measured once (nccl-tests would print them twice).
std::vector<SizePoint> op_size_points(Op op, const std::vector<std::uint64_t> &sizes, DType dtype,
                                      int nranks);

/// Placement names of --placement: "out" -> {out_of_place}, "in" -> {in_place}, "both" -> both.
/// \throws InputError (field --placement) otherwise.
std::vector<Placement> parse_placements(const std::string &text);

/// "world", "intra", "inter".
std::string_view group_kind_name(GroupKind k);

} // namespace scalefit::bench
