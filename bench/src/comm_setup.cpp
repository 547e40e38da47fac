// Helpers of `scalefit-bench comm` without sweep state (see comm_setup.hpp).
#include "comm_setup.hpp"

#include "scalefit/bench/alltoallv.hpp"
#include "scalefit/bench/comm.hpp"
#include "scalefit/bench/guard.hpp"
#include "scalefit/bench/output.hpp"
#include "scalefit/bench/sysinfo.hpp"
#include "scalefit/bench/world.hpp"
#include "scalefit/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>

namespace scalefit::bench::detail {

/// The sweep's dtypes: -d's list, or with -d all every type the backend has.
std::vector<DType> sweep_dtypes(const CommOptions &o, const std::string &backend_name) {
  if (!o.all_dtypes)
    return o.dtypes;
  std::vector<DType> all = o.dtypes;
  for (DType t : {DType::float32, DType::float64, DType::half, DType::bfloat16, DType::int8,
                  DType::uint8, DType::int32, DType::uint32, DType::int64, DType::uint64})
    if ((backend_name == "nccl" || mpi_datatype(t) != MPI_DATATYPE_NULL) &&
        std::find(all.begin(), all.end(), t) == all.end())
      all.push_back(t);
  return all;
}

/// Backend-dependent validation (every rank alike).
void validate_for_backend(const CommOptions &o, const std::string &backend_name,
                          const std::vector<DType> &dtypes) {
  if (backend_name == "mpi") {
    for (DType t : dtypes)
      if (mpi_datatype(t) == MPI_DATATYPE_NULL)
        throw InputError("data type " + std::string(dtype_name(t)) +
                             " is not supported by the mpi backend (half and bfloat16 need "
                             "--backend nccl)",
                         "", 0, "-d");
    const bool reduces = std::any_of(o.ops.begin(), o.ops.end(), op_has_redop);
    if (reduces && mpi_op(o.redop) == MPI_OP_NULL)
      throw InputError("reduction " + std::string(redop_name(o.redop)) +
                           " is not supported by the mpi backend (avg needs --backend nccl)",
                       "", 0, "-o");
    if (o.graph_launches > 0)
      throw InputError("CUDA graphs need --backend nccl", "", 0, "-G");
    if (o.registration != 0)
      throw InputError("buffer registration (-R) is an NCCL feature: it needs --backend nccl", "",
                       0, "-R");
    if (o.alloc_given)
      throw InputError("--alloc chooses how GPU buffers are allocated: it needs --backend nccl "
                       "(the mpi backend uses host memory)",
                       "", 0, "--alloc");
    if (o.events_timer)
      throw InputError("CUDA events need --backend nccl (the mpi backend times with the host "
                       "clock, MPI_Wtime)",
                       "", 0, "--timer");
  } else if (o.baseline) {
    throw InputError("--baseline times a bare MPI_Allreduce loop: it needs --backend mpi", "", 0,
                     "--baseline");
  }
}

/// Bytes of the send and receive allocations of one (op, shape, dtype) block: its largest
/// point's buffers, or at least `rotation_bytes` each so the rotation leaves the cache.
std::pair<std::size_t, std::size_t> block_bytes(const Collective &coll, std::size_t cmax,
                                                DType t, int nranks, std::size_t rotation_bytes) {
  const std::size_t es = dtype_size(t);
  const std::size_t ns = coll.send_count(cmax, nranks) * es;
  const std::size_t nr = std::max(ns, coll.recv_count(cmax, nranks) * es);
  return {std::max(ns, rotation_bytes), std::max(nr, rotation_bytes)};
}

/// "what" for the watchdog and progress: "allreduce 1048576 B float out-of-place world n=4 ...".
std::string point_name(Op op, std::uint64_t bytes, DType t, Placement p, const GroupShape &s) {
  return fmt::format("{} {} B {} {} {}", op_name(op), bytes, dtype_name(t), placement_name(p),
                     s.label());
}


void warm_communicator(Comm &comm, const Collective &coll, Buffers &bufs, const CommOptions &o,
                       Op op, DType dtype, int nranks, const std::vector<std::size_t> &counts) {
  for (std::size_t count : counts) {
    CollArgs w;
    w.count = count;
    w.dtype = dtype;
    w.redop = op_has_redop(op) ? o.redop : RedOp::sum;
    w.root = op_has_root(op) ? o.root : -1;
    w.rank = comm.rank();
    w.nranks = nranks;
    for (int i = 0; i < std::max(1, o.warmup_iters); ++i)
      coll.run(comm, bufs.send, bufs.recv, w);
    comm.synchronize();
  }
}

std::optional<std::pair<int, double>> most_often_last(const std::vector<int> &slowest_rank) {
  if (slowest_rank.empty())
    return std::nullopt;
  std::map<int, int> last;
  for (int r : slowest_rank)
    ++last[r];
  const auto most = std::max_element(last.begin(), last.end(), [](const auto &x, const auto &y) {
    return x.second < y.second;
  });
  return std::pair{most->first,
                   static_cast<double>(most->second) / static_cast<double>(slowest_rank.size())};
}

std::string baseline_summary(const nlohmann::json &baseline, std::uint64_t bytes, int batch) {
  return fmt::format("# baseline {} B (medians of {} interleaved samples x {} ops; mean over "
                     "ranks): bare MPI_Allreduce loop {:.3f} us | harness {:.3f} us | overhead "
                     "{:+.3f} us ({:+.2f}%): {} the goal (<= 2% or 0.1 us); means {:.3f} vs "
                     "{:.3f} us\n",
                     bytes, baseline["samples"].get<int>(), batch,
                     baseline["bare_median_us"].get<double>(),
                     baseline["harness_median_us"].get<double>(),
                     baseline["overhead_us"].get<double>(), baseline["overhead_pct"].get<double>(),
                     baseline["within_goal"].get<bool>() ? "within" : "ABOVE",
                     baseline["bare_mean_us"].get<double>(),
                     baseline["harness_mean_us"].get<double>());
}

std::string slowest_rank_summary(const std::map<int, int> &last_rank_points, int points_judged,
                                 const std::vector<std::string> &hosts_per_rank) {
  std::string out;
  if (points_judged < 4 || hosts_per_rank.size() < 3)
    return out;
  for (const auto &[r, n] : last_rank_points)
    if (2 * n > points_judged)
      out += fmt::format("# slowest rank: rank {} ({}) finished last in most samples of {} of {} "
                         "points (records: slowest_rank, slowest_rank_share)\n",
                         r, hosts_per_rank.at(static_cast<std::size_t>(r)), n, points_judged);
  return out;
}

nlohmann::json sampling_context(const CommOptions &o) {
  return {{"mode", o.nccl_tests_mode ? "nccl-tests" : "adaptive"},
          {"batch", o.batch},
          {"warmup_iters", o.warmup_iters},
          {"graph_launches", o.graph_launches},
          {"communicator_warmup", "one operation at the largest and the smallest size of each "
                                  "communicator's sweep, before its points"}};
}

/// The banner rank 0 prints before the sweep (nccl-tests' header lines).
std::string run_banner(const CommOptions &o, const std::string &backend_name,
                       const ContextRecord &ctx, const NodeLayout &layout,
                       std::size_t rotation_bytes, std::uint64_t cache,
                       const std::string &cache_source, const Backend &backend,
                       const std::vector<std::string> &hosts, const std::vector<std::string> &devices,
                       std::size_t resumed) {
  auto version = [&ctx](const char *k) {
    const auto it = ctx.versions.find(k);
    return it == ctx.versions.end() ? std::string() : it->second;
  };
  std::string s = fmt::format(
      "# scalefit-bench comm: backend {} ({})\n", backend_name,
      backend_name == "nccl" ? "NCCL " + version("nccl") + ", CUDA runtime " + version("cuda")
                             : version("mpi"));
  const std::string iters =
      o.fixed_samples > 0
          ? fmt::format("{} samples", o.fixed_samples)
          : fmt::format("adaptive ({}, {:g}-{:g} s, {}-{} samples{})",
                        o.max_ci > 0 ? fmt::format("95% CI of the {} within +-{:g}%",
                                                   statistic_name(o.statistic), o.max_ci * 100)
                                     : fmt::format("noise < {:g}%", o.max_noise * 100),
                        o.min_time_s, o.max_time_s, o.min_samples, o.max_samples,
                        o.budget_s > 0 ? fmt::format(", budget {:g} s", o.budget_s) : "");
  s += fmt::format("# nRanks {} nNodes {}{} ranksPerNode {} minBytes {} maxBytes {} step: {}({}) "
                   "warmup iters: {} iters: {} validation: {} graph: {}\n",
                   layout.nranks(), layout.nnodes, layout.emulated ? " (emulated)" : "",
                   layout.ranks_per_node, o.min_bytes, o.max_bytes,
                   o.step_bytes > 0 ? o.step_bytes : o.step_factor,
                   o.step_bytes > 0 ? "bytes" : "factor", o.warmup_iters, iters, o.check ? 1 : 0,
                   o.graph_launches);
  s += fmt::format("# buffers: {}; {}, registration {}; alltoall: {}\n",
                   o.hot ? "hot (the same buffers every operation: --hot)"
                         : fmt::format("rotated by one message per operation through >= {} B (2 "
                                       "x {} B cache, {})",
                                       rotation_bytes, cache, cache_source),
                   backend.buffer_alloc_name(), backend.registration_name(),
                   backend.alltoall_impl());
  if (o.repeat > 1)
    s += fmt::format("# repeat: the sweep runs {} times; each point's record is its median run's, "
                     "with every run's time and busbw (extra.repeat)\n",
                     o.repeat);
  s += "#\n# Using devices\n";
  for (int r = 0; r < layout.nranks(); ++r) {
    const std::size_t i = static_cast<std::size_t>(r);
    s += fmt::format("#  Rank {:2d} Node {:2d} Pid {:>6} on {:>10} device {:2d} {}\n", r,
                     layout.node_of_rank[i], "-", i < hosts.size() ? hosts[i] : "",
                     backend_name == "nccl" ? layout.local_rank[i] : 0,
                     i < devices.size() ? devices[i] : "");
  }
  if (resumed > 0)
    s += fmt::format("# Resuming {}: {} points already measured are reused\n", o.out, resumed);
  return s;
}

std::string time_definition_line(const CommOptions &o, const std::string &timer_name) {
  return fmt::format(
      "{} over samples of the per-operation time, each sample's time averaged over ranks "
      "(nccl-tests' average; the max over ranks is recorded too); timer {}; {}",
      statistic_name(o.statistic), timer_name,
      o.sync_barrier ? "sync barrier (each operation timed alone, an untimed barrier after it: "
                       "OSU's and IMB's definition)"
                     : "back to back (nccl-tests' definition)");
}

nlohmann::json timer_context(const CommOptions &o, const std::string &timer_name) {
  return {{"name", timer_name},
          {"definition",
           timer_name == "events"
               ? "CUDA events recorded on the communicator's stream around each batch"
               : "host clock around a batch of back-to-back operations and a final stream "
                 "synchronize (nccl-tests' definition; MPI_Wtime on the mpi backend)"},
          {"across_ranks", "time_us: mean over ranks per sample; time_max_over_ranks_us: max"},
          {"sync", o.sync_barrier ? "barrier" : "back-to-back"},
          {"sync_definition",
           o.sync_barrier ? "each operation timed alone, then an untimed MPI_Barrier on the "
                            "group (OSU, IMB -sync 1)"
                          : "operations back to back, the batch under one clock (nccl-tests)"}};
}

nlohmann::json stop_rule_context(const CommOptions &o) {
  return {{"max_ci", o.max_ci},
          {"confidence", 0.95},
          {"max_noise", o.max_noise},
          {"min_samples", o.min_samples},
          {"max_samples", o.max_samples},
          {"min_time_s", o.min_time_s},
          {"max_time_s", o.max_time_s},
          {"budget_s", o.budget_s},
          {"fixed_samples", o.fixed_samples},
          {"interval", "ci_rel: max(relative half-width of the 95% CI of the statistic, "
                       "|statistic(first half) - statistic(second half)| / (2 statistic) of the "
                       "samples in time order)"}};
}

/// The context record of a comm run before its backend exists (comm.cpp completes it).
ContextRecord initial_context(const CommOptions &o, const std::string &backend_name,
                              const NodeLayout &layout,
                              const std::vector<std::string> &hosts_per_rank,
                              const std::vector<DType> &dtypes, const std::string &command_line) {
  const int nranks = static_cast<int>(hosts_per_rank.size());
  ContextRecord ctx;
  ctx.system = o.system;
  ctx.backend = backend_name;
  ctx.nranks = nranks;
  ctx.nnodes = layout.nnodes;
  ctx.ranks_per_node = layout.ranks_per_node;
  ctx.emulated_nodes = layout.emulated;
  for (int node = 0; node < layout.nnodes; ++node)
    for (int r = 0; r < nranks; ++r)
      if (layout.node_of_rank[static_cast<std::size_t>(r)] == node) {
        ctx.hosts.push_back(hosts_per_rank[static_cast<std::size_t>(r)]);
        break;
      }
  ctx.command_line = command_line;
  ctx.env = captured_env();
  ctx.extra = nlohmann::json::object();
  ctx.extra["dtypes"] = nlohmann::json::array();
  for (DType t : dtypes)
    ctx.extra["dtypes"].push_back(dtype_name(t));
  ctx.extra["tool"] = "scalefit-bench comm";
  if (auto a2av = alltoallv_context(o.ops, o.alltoallv_matrix); !a2av.is_null())
    ctx.extra["alltoallv"] = std::move(a2av);
  // (op, placement) combinations the backend does not run (N/A in the table), and why.
  if (const nlohmann::json nr = not_run_entries(backend_name, o.ops, o.placements); !nr.empty())
    ctx.extra["not_run"] = nr;
  // What --resume compares (output.hpp: check_same_method); buffers completed in comm.cpp.
  ctx.extra["statistic"] = statistic_name(o.statistic);
  ctx.extra["buffers"] = {{"mode", o.hot ? "hot" : "rotate"}};
  ctx.extra["timer"] = {{"sync", o.sync_barrier ? "barrier" : "back-to-back"}};
  ctx.extra["sampling"] = sampling_context(o); // adaptive or nccl-tests' batch of -n 20
  return ctx;
}

/// The run's one send and one receive allocation (every block's largest point), refused before
/// anything is allocated when they do not fit.
RunBufferBytes run_buffer_bytes(const CommOptions &o, const std::string &backend_name,
                                const std::vector<GroupShape> &shapes,
                                const std::vector<DType> &dtypes,
                                const std::vector<std::uint64_t> &sizes, std::size_t rotation_bytes,
                                Backend &backend, int local_size) {
  const int rank = world_rank();
  std::size_t run_send_bytes = 0, run_recv_bytes = 0;
  // Memory the sweep needs on this rank, before anything is allocated.
  std::uint64_t staging = 0;
  std::size_t largest_count = 0;
  DType largest_dtype = dtypes.front();
  for (Op op : o.ops)
    for (const GroupShape &s : shapes)
      for (DType t : dtypes) {
        const std::vector<SizePoint> pts = op_size_points(op, sizes, t, s.nranks);
        if (pts.empty())
          continue;
        if (pts.back().count > largest_count) {
          largest_count = pts.back().count;
          largest_dtype = t;
        }
        const auto [sb, rb] =
            block_bytes(collective(op), pts.back().count, t, s.nranks, rotation_bytes);
        run_send_bytes = std::max<std::size_t>(run_send_bytes, sb);
        run_recv_bytes = std::max<std::size_t>(run_recv_bytes, rb);
        staging = std::max<std::uint64_t>(staging, std::max(sb, rb));
      }
  // MPI-3 counts are C ints: a larger count would end the run mid-sweep (exit 3) after the
  // smaller sizes were measured; refuse it here, before anything runs.
  if (backend_name == "mpi" && largest_count > static_cast<std::size_t>(INT_MAX))
    agree_or_throw("-e gives a count of " + std::to_string(largest_count) + " " +
                       std::string(dtype_name(largest_dtype)) +
                       " elements per call, more than the mpi backend can pass (MPI-3 counts "
                       "are C ints: at most 2147483647); lower -e",
                   "-e");
  const std::uint64_t need = run_send_bytes + run_recv_bytes; // one allocation for the run
  const bool host = backend.host_accessible();
  std::string why = memory_refusal(need, backend.ranks_sharing_memory(local_size),
                                   backend.available_memory_bytes(),
                                   host ? "the node's MemAvailable" : "one GPU's free memory");
  if (why.empty() && !host && o.check)
    why = memory_refusal(staging, local_size, mem_available_bytes(),
                         "the node's MemAvailable (pinned check staging)");
  agree_or_throw(why.empty() ? "" : "rank " + std::to_string(rank) + ": " + why, "-e");
  return {run_send_bytes, run_recv_bytes};
}

} // namespace scalefit::bench::detail
