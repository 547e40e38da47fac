// `scalefit-bench comm`: validation, context, guards, the sweep over ops, shapes, types and
// sizes, checks, table and records. The timing loop is sampling.cpp's; MPI helpers world.cpp's.
#include "scalefit/bench/comm.hpp"

#include "comm_setup.hpp"

#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/check.hpp"
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/groups.hpp"
#include "scalefit/bench/guard.hpp"
#include "scalefit/bench/output.hpp"
#include "scalefit/bench/pairs.hpp"
#include "scalefit/bench/progress_board.hpp"
#include "scalefit/bench/repeat.hpp"
#include "scalefit/bench/sampling.hpp"
#include "scalefit/bench/sysinfo.hpp"
#include "scalefit/bench/table.hpp"
#include "scalefit/bench/verify.hpp"
#include "scalefit/bench/world.hpp"
#include "scalefit/core/csv.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/timing.hpp"
#include "scalefit/core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>

#ifndef SCALEFIT_VERSION
#define SCALEFIT_VERSION "0.0.0"
#endif

namespace scalefit::bench {

using namespace detail;
int run_comm(const CommOptions &o, const std::string &command_line) {
  const int rank = world_rank(), nranks = world_size();
  int local_rank = 0, local_size = 1;
  const NodeLayout layout = detect_layout(o.emulate_nodes, local_rank, local_size);

  // --- Backend ---------------------------------------------------------------------------------
  std::string backend_name = o.backend;
  if (o.backend == "nccl" && !nccl_built())
    throw InputError("scalefit-bench was not built with NCCL (configure with "
                     "-DSCALEFIT_ENABLE_CUDA=ON and NCCL_HOME); use --backend mpi",
                     "", 0, "--backend nccl");
  // Only ask CUDA when a GPU backend may be chosen (no CUDA initialization for --backend mpi).
  int gpus = (nccl_built() && o.backend != "mpi") ? visible_gpu_count() : 0, min_gpus = 0;
  SCALEFIT_MPI_CHECK(MPI_Allreduce(&gpus, &min_gpus, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (o.backend == "nccl")
    agree_or_throw(gpus > 0
                       ? ""
                       : "no GPU visible on rank " + std::to_string(rank) + " (" + host_name() +
                             "): cudaGetDeviceCount failed or found 0 "
                             "devices; use --backend mpi",
                   "--backend nccl");
  if (o.backend == "auto")
    backend_name = (nccl_built() && min_gpus > 0) ? "nccl" : "mpi";

  // --- Everything decidable from the options, before building anything -------------------------
  const std::vector<DType> dtypes = sweep_dtypes(o, backend_name);
  validate_for_backend(o, backend_name, dtypes);
  const std::vector<GroupShape> shapes = enumerate_shapes(layout, o.groups);
  if (const std::string why = unavailable_groups(layout, o.groups); !why.empty()) {
    if (shapes.empty() && std::find(o.groups.begin(), o.groups.end(), GroupKind::pairs) == o.groups.end())
      throw InputError(why + ": nothing to measure", "", 0, "--groups"); // alike on every rank
    if (rank == 0)
      std::fprintf(stderr, "scalefit-bench: note: %s; measuring the other groups\n", why.c_str());
  }
  if (std::any_of(o.ops.begin(), o.ops.end(), op_has_root))
    for (const GroupShape &s : shapes)
      if (o.root >= s.nranks)
        throw InputError("root " + std::to_string(o.root) + " is not a rank of group shape " +
                             s.label() + " (" + std::to_string(s.nranks) + " ranks)",
                         "", 0, "-r");
  const std::vector<std::uint64_t> sizes =
      size_sweep(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);

  // --- Context and output file (rank 0 judges and locks; every rank agrees) ---------------------
  const std::vector<std::string> hosts_per_rank = allgather_strings(host_name());
  if (backend_name == "nccl") { // one rank per GPU, judged before NCCL or a buffer touches one
    const std::vector<std::string> picked = allgather_strings(gpu_identity(local_rank));
    agree_or_throw(rank == 0 ? shared_gpu_refusal(hosts_per_rank, picked) : "", "-np");
  }
  ContextRecord ctx =
      initial_context(o, backend_name, layout, hosts_per_rank, dtypes, command_line);
  ResumeState resume;
  std::unique_ptr<OutputLock> lock;
  std::string out_error;
  if (rank == 0 && !o.out.empty()) {
    try {
      // Judge first (creates nothing), then lock (two jobs never write one file), then read the
      // file again under the lock: what a job still running appended is seen.
      (void)prepare_output(o.out, o.resume, ctx);
      if (!is_device_output(o.out)) // a device (/dev/full) is written in place, unlocked
        lock = std::make_unique<OutputLock>(o.out);
      resume = prepare_output(o.out, o.resume, ctx);
    } catch (const InputError &e) {
      out_error = e.what();
    }
  }
  agree_or_throw(out_error, "");
  std::set<std::string> done_keys;
  {
    std::string joined;
    for (const auto &[k, m] : resume.done)
      joined += k + "\n";
    joined = bcast_string(joined, 0);
    for (std::size_t pos = 0, nl; (nl = joined.find('\n', pos)) != std::string::npos; pos = nl + 1)
      done_keys.insert(joined.substr(pos, nl - pos));
  }

  // --- Backend instance, memory, and the run's description -----------------------------------
  NcclSettings nccl_settings;
  nccl_settings.graph_launches = o.graph_launches;
  nccl_settings.events_timer = o.events_timer;
  nccl_settings.nccl_mem_alloc = o.nccl_mem_alloc;
  nccl_settings.registration = o.registration;
  std::unique_ptr<Backend> backend = backend_name == "nccl"
                                         ? make_nccl_backend(local_rank, nccl_settings)
                                         : make_mpi_backend(o.sync_barrier);
  std::string cache_source;
  const std::uint64_t cache = backend->cache_bytes(&cache_source);
  const std::size_t rotation_bytes = o.hot ? 0 : static_cast<std::size_t>(2 * cache);
  const double mem_gbps = backend->memory_bandwidth_gbps();
  // The run's buffers: allocated once at the largest block's size (each block rotates through
  // the first part of them), so every page is faulted in before the first timed point and stays
  // warm; allocating per block timed the first pass through fresh pages (issue 20, Sec. 1).
  const RunBufferBytes run_bytes = run_buffer_bytes(o, backend_name, shapes, dtypes, sizes,
                                                    rotation_bytes, *backend, local_size);
  const std::size_t run_send_bytes = run_bytes.send, run_recv_bytes = run_bytes.recv;
  const std::vector<std::string> devices = allgather_strings(backend->device_name());
  ctx.devices = devices;
  ctx.versions = backend->versions();
  ctx.versions["scalefit"] = SCALEFIT_VERSION;
  ctx.start_time = utc_now_iso8601();
  const std::string time_definition = time_definition_line(o, backend->timer_name());
  ctx.extra["timer"] = timer_context(o, backend->timer_name());
  ctx.extra["buffers"] = {{"mode", o.hot ? "hot" : "rotate"},
                          {"cache_bytes", cache},
                          {"cache_source", cache_source},
                          {"rotation_bytes", rotation_bytes},
                          {"alloc", backend->buffer_alloc_name()},
                          {"registration", backend->registration_name()}};
  ctx.extra["alltoall"] = backend->alltoall_impl();
  if (const std::string p = backend->profiler_description(); !p.empty())
    ctx.extra["nccl_profiler"] = p; // where extra.nccl_algo/nccl_proto/nccl_channels come from
  ctx.extra["stop_rule"] = stop_rule_context(o);
  ctx.extra["outlier_rule"] = kOutlierRule;
  ctx.extra["modes_rule"] = kModesRule;
  if (mem_gbps > 0)
    ctx.extra["memory_bandwidth_gbps"] = mem_gbps;
  ctx.extra["placements"] = nlohmann::json::array();
  for (Placement p : o.placements)
    ctx.extra["placements"].push_back(placement_name(p));
  ctx.extra["timeout_s"] = o.timeout_s;
  ctx.extra["repeat"] = o.repeat;

  // Points to measure, for the progress total and the budget's shares.
  std::size_t total_points = 0;
  for (Op op : o.ops)
    for (const GroupShape &s : shapes)
      for (DType t : dtypes)
        for (Placement p : o.placements)
          if (not_run_reason(backend_name, op, p).empty())
            total_points += op_size_points(op, sizes, t, s.nranks).size();
  total_points -= std::min(total_points, done_keys.size());
  total_points *= static_cast<std::size_t>(o.repeat);

  if (rank == 0) {
    std::printf("%s", run_banner(o, backend_name, ctx, layout, rotation_bytes, cache, cache_source,
                                 *backend, hosts_per_rank, devices, done_keys.size())
                          .c_str());
    std::fflush(stdout);
  }

  std::unique_ptr<JsonlWriter> writer;
  std::unique_ptr<CsvWriter> csv; // --csv: a flat row per measurement
  auto write_record = [&](const nlohmann::json &j) { stop_every_rank_on_output_error(nranks, [&] {
    if (rank == 0 && !o.csv.empty() && j.value("type", "") == "measurement") {
      if (!csv)
        csv = std::make_unique<CsvWriter>(o.csv, comm_csv_header());
      csv->row(comm_csv_row(to_json(ctx), j));
    }
    if (rank != 0 || o.out.empty())
      return;
    if (!writer) {
      namespace fs = std::filesystem;
      const fs::path parent = fs::path(o.out).parent_path();
      if (!parent.empty())
        fs::create_directories(parent);
      if (resume.truncate_partial_line) {
        fs::resize_file(o.out, resume.valid_bytes);
        std::fprintf(stderr, "scalefit-bench: dropped %s of %s (%s)\n",
                     resume.dropped_nul_padding ? "a tail of NUL bytes" : "an unterminated last line",
                     o.out.c_str(), resume.dropped_nul_padding ? "a crash" : "a killed write");
      }
      writer = std::make_unique<JsonlWriter>(o.out);
      writer->write(to_json(ctx));
    }
    writer->write(j);
  }); };

  Watchdog watchdog(o.timeout_s);
  ProgressBoard board(hosts_per_rank); // progress reported to rank 0, named on a timeout
  if (o.timeout_s > 0)
    watchdog.set_board(&board);
  RepeatMerger repeats(o.repeat); // --repeat: one record per point from its runs
  Progress progress(total_points);
  const double run_start = MPI_Wtime();
  double timing_s = 0, check_s = 0; // rank 0's wall time in timing loops and in checks
  std::size_t points_left = total_points;
  std::optional<Buffers> bufs; // the run's buffers (run_send_bytes, run_recv_bytes), lazily
  std::int64_t wrong_total = 0;
  // Rank 0: per world rank, the points where it was the last to finish in >= half the samples.
  std::map<int, int> last_rank_points;
  int points_judged = 0;
  std::uint64_t point_id = 0;
  SweepBudget budget(o.repeat, o.max_ci > 0 ? o.max_ci : o.max_noise); // --budget's shares
  for (int sweep = 0; sweep < o.repeat; ++sweep)
  for (Op op : o.ops) {
    const Collective &coll = collective(op);
    for (const GroupShape &shape : shapes) {
      const std::vector<GroupMembership> members = assign_instances(layout, shape);
      const GroupMembership me = members[static_cast<std::size_t>(rank)];
      MPI_Comm sub = MPI_COMM_NULL;
      watchdog.set_point(fmt::format("creating the {} communicator", shape.label()), nullptr);
      watchdog.arm(60); // communicator creation (ncclCommSplit) may take seconds at scale
      SCALEFIT_MPI_CHECK(
          MPI_Comm_split(MPI_COMM_WORLD, me.color >= 0 ? me.color : MPI_UNDEFINED, me.key, &sub));
      std::unique_ptr<Comm> comm = backend->make_comm(sub, me.color, me.key);
      watchdog.disarm();
      const int instances = count_instances(members);
      bool warmed = false; // the communicator's one warm-up (first block with points)
      std::int64_t block_wrong = 0;
      bool block_above_memory = false, block_modes = false;
      double busbw_sum = 0;
      int busbw_n = 0;
      if (rank == 0) {
        std::printf("#\n# Collective test starting: %s (%s)%s\n", std::string(op_name(op)).c_str(),
                    std::string(coll.nccl_tests_name).c_str(),
                    o.repeat > 1 ? fmt::format(", run {} of {}", sweep + 1, o.repeat).c_str() : "");
        std::printf("# Group shape: %s: %d concurrent instance%s of %d ranks (%d node%s x %d)\n",
                    shape.label().c_str(), instances, instances == 1 ? "" : "s", shape.nranks,
                    shape.nnodes, shape.nnodes == 1 ? "" : "s", shape.ranks_per_node);
        std::printf("#\n%s", table_header(time_definition, backend_name == "nccl").c_str());
        for (Placement p : o.placements)
          if (const std::string why = not_run_reason(backend_name, op, p); !why.empty())
            std::printf("%s", not_run_note(placement_name(p), why).c_str());
        std::fflush(stdout);
      }
      for (DType dtype : dtypes) {
        const std::vector<SizePoint> points = op_size_points(op, sizes, dtype, shape.nranks);
        if (points.empty())
          continue;
        const auto [send_alloc, recv_alloc] =
            block_bytes(coll, points.back().count, dtype, shape.nranks, rotation_bytes);
        if (comm) {
          if (!bufs) // the first block with this rank in a group: the run's one allocation
            bufs.emplace(*backend, run_send_bytes, run_recv_bytes);
          comm->register_buffers(bufs->send, send_alloc, bufs->recv, recv_alloc);
        }
        if (!warmed) {
          warmed = true;
          watchdog.set_point(fmt::format("warming the {} communicator", shape.label()), comm.get());
          watchdog.arm(120);
          if (comm)
            warm_communicator(*comm, coll, *bufs, o, op, dtype, shape.nranks,
                              {points.back().count, points.front().count});
          watchdog.barrier();
          watchdog.disarm();
        }
        for (const SizePoint &pt : points) {
          CollArgs a;
          a.count = pt.count;
          a.dtype = dtype;
          a.redop = op_has_redop(op) ? o.redop : RedOp::sum;
          a.root = op_has_root(op) ? o.root : -1;
          a.matrix = o.alltoallv_matrix;
          a.rank = comm ? comm->rank() : 0;
          a.nranks = shape.nranks;
          std::string row = row_preamble(pt.bytes, pt.count, dtype_name(dtype),
                                         op_has_redop(op) ? redop_name(o.redop) : "none", a.root);
          std::string baseline_line;
          std::optional<CollChoice> row_choice_seen; // NCCL's algorithm/protocol (nccl)
          bool row_above_memory = false, row_modes = false;
          std::size_t measured = 0;
          for (Placement pl : {Placement::out_of_place, Placement::in_place}) {
            if (std::find(o.placements.begin(), o.placements.end(), pl) == o.placements.end()) {
              row += row_absent();
              continue;
            }
            if (!not_run_reason(backend_name, op, pl).empty()) {
              row += row_not_run(); // the context's not_run says why
              continue;
            }
            MeasurementRecord m;
            m.op = op;
            m.group = shape;
            m.dtype = dtype;
            m.redop = a.redop;
            m.root = a.root;
            m.placement = pl;
            if (op == Op::alltoallv) // the count matrix: its own curve (part of the key)
              m.method = alltoallv_matrix_name(a.matrix);
            m.bytes = pt.bytes;
            m.count = pt.count;
            const std::string key = m.key();
            if (done_keys.count(key)) {
              if (rank == 0) {
                const MeasurementRecord &old = resume.done.at(key);
                row += row_body(old.time_us, old.algbw_gbps, old.busbw_gbps, old.wrong);
                busbw_sum += old.busbw_gbps;
                ++busbw_n;
              }
              continue;
            }
            ++measured;
            ++point_id;
            // Rotation: step = the point's footprint (nccl-tests' max(sendBytes,
            // expectedBytes)); the extent is how far from the base it reaches.
            const std::size_t es = dtype_size(dtype);
            const std::size_t ns = coll.send_count(pt.count, shape.nranks) * es;
            const std::size_t nr = coll.recv_count(pt.count, shape.nranks) * es;
            const std::size_t rk = static_cast<std::size_t>(a.rank);
            const std::size_t extent =
                pl == Placement::out_of_place
                    ? std::max(ns, nr)
                    : std::max(ns + coll.send_inplace_offset(pt.count) * rk * es,
                               nr + coll.recv_inplace_offset(pt.count) * rk * es);
            const std::size_t alloc = pl == Placement::out_of_place
                                          ? std::min(send_alloc, recv_alloc)
                                          : recv_alloc;
            const Rotation rot = Rotation::make(std::max(ns, nr), extent, alloc, o.hot);
            const char *send = nullptr;
            char *recv = nullptr;
            if (comm) {
              auto [s0, r0] = placement_ptrs(coll, *bufs, a, pl);
              send = static_cast<const char *>(s0);
              recv = static_cast<char *>(r0);
            }
            Comm *cp = comm.get();
            std::size_t k = 0;
            const std::function<void()> run = [&coll, cp, send, recv, &a, &k, &rot] {
              const std::size_t shift = rot.step * k;
              if (++k == rot.steps)
                k = 0;
              coll.run(*cp, send + shift, recv + shift, a);
            };
            const std::string what = point_name(op, pt.bytes, dtype, pl, shape);
            if (o.timeout_s > 0)
              board.publish(point_id, what);
            watchdog.set_point(what, cp);
            // This point's cap: --max-time, or with --budget the remaining time over the
            // remaining points (capped by --max-time when that was given).
            SamplingPlan plan;
            plan.warmup_iters = o.warmup_iters > 0
                                    ? o.warmup_iters
                                    : (o.batch > 0 || o.graph_launches > 0 ? 0 : 1);
            plan.batch = o.batch;
            plan.graph_launches = std::max(1, o.graph_launches);
            plan.batch_time_us = o.batch_time_us;
            plan.rule = StopRule{o.min_time_s,  o.max_time_s,    o.max_noise,
                                 o.min_samples, o.max_samples,   o.fixed_samples,
                                 o.max_ci,      o.statistic};
            double uncertainty_before = std::numeric_limits<double>::quiet_NaN();
            if (o.budget_s > 0) {
              // Rank 0's clock and weights decide (SweepBudget); every rank gets the same cap.
              double share = 0;
              if (rank == 0)
                share = budget.share(o.budget_s, MPI_Wtime() - run_start, sweep, points_left,
                                     repeats, key, uncertainty_before);
              SCALEFIT_MPI_CHECK(MPI_Bcast(&share, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
              plan.rule.max_time_s = o.max_time_given ? std::min(o.max_time_s, share) : share;
              plan.rule.min_time_s = std::min(plan.rule.min_time_s, plan.rule.max_time_s);
              plan.rule.min_samples_at_cap = 2; // the budget outranks --min-samples at the cap
            }
            if (points_left > 0)
              --points_left;
            const double t_begin = MPI_Wtime();
            PointSamples t;
            double t_timed = t_begin;
            std::int64_t wrong = 0;
            std::optional<CollChoice> choice;
            try {
              if (comm)
                comm->reset_choice();
              t = time_point(cp, run, plan, point_id, watchdog);
              budget.visited(MPI_Wtime() - t_begin, t.elapsed_s); // sampling: what the cap bounds
              if (comm)
                choice = comm->last_choice(); // the last timed operation's, before the check
              t_timed = MPI_Wtime();
              timing_s += t_timed - t_begin;
              if (o.check) {
                watchdog.arm(1e-8 * static_cast<double>(send_alloc + recv_alloc)); // ~100 MB/s
                const std::int64_t mine =
                    comm ? check_point(*backend, *comm, coll, *bufs, a, pl) : 0;
                SCALEFIT_MPI_CHECK(
                    MPI_Allreduce(&mine, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
                watchdog.disarm();
                block_wrong += wrong;
                check_s += MPI_Wtime() - t_timed;
              }
              if (comm)
                comm->end_point(); // drop the point's graph while its buffers are registered
            } catch (const RuntimeError &e) {
              // A failed call or an asynchronous NCCL error (a dead link): name the point; main
              // exits 3 with MPI_Abort so the other ranks do not wait on this one.
              throw RuntimeError(fmt::format("{} (during {})", e.what(),
                                             point_name(op, pt.bytes, dtype, pl, shape)));
            }
            nlohmann::json baseline;
            if (o.baseline && op == Op::allreduce && pl == Placement::out_of_place) {
              baseline = time_baseline(cp, run, send, recv, a, rot, t.batch,
                                       summarize(t.max_us).max, std::max<int>(10, static_cast<int>(t.mean_us.size())),
                                       watchdog);
              baseline_line = baseline_summary(baseline, pt.bytes, t.batch);
            }
            if (rank == 0) {
              const Summary s = summarize(t.mean_us);
              const Summary smax = summarize(t.max_us);
              const double ci = claimed_interval(t.mean_us, o.statistic);
              m.time_us = statistic_of(s, o.statistic);
              m.algbw_gbps = gbps(static_cast<double>(pt.bytes), m.time_us);
              m.busbw_gbps = m.algbw_gbps * busbw_factor(op, shape.nranks);
              if (o.check)
                m.wrong = wrong;
              m.stats = s;
              m.iters_per_sample = t.batch;
              m.samples_us = t.mean_us;
              m.extra = nlohmann::json::object();
              m.extra["instances"] = instances;
              m.extra["statistic"] = statistic_name(o.statistic);
              m.extra["time_max_over_ranks_us"] = statistic_of(smax, o.statistic);
              m.extra["samples_max_over_ranks_us"] = t.max_us;
              m.extra["ci_rel"] = std::isfinite(ci) ? nlohmann::json(ci) : nlohmann::json();
              // Why the rule stopped, in StopRule::should_stop's order.
              m.extra["stop"] = o.fixed_samples > 0                      ? "fixed"
                                : static_cast<int>(s.n) >= o.max_samples ? "max-samples"
                                : t.elapsed_s >= plan.rule.max_time_s    ? "time-cap"
                                                                         : "precision";
              m.extra["time_cap_s"] = plan.rule.max_time_s;
              if (std::isfinite(uncertainty_before)) // a --budget revisit's weight came from it
                m.extra["uncertainty_before"] = uncertainty_before;
              m.extra["rotation_positions"] = rot.steps;
              if (o.graph_launches > 0)
                m.extra["graph_launches"] = o.graph_launches;
              if (choice) {
                m.extra["nccl_algo"] = choice->algo;
                m.extra["nccl_proto"] = choice->proto;
                m.extra["nccl_channels"] = choice->channels;
                if (!row_choice_seen)
                  row_choice_seen = choice;
              }
              m.extra["outlier_samples"] = outlier_indices(t.mean_us);
              m.extra["page_faults"] = t.page_faults; // during the timed samples, max over ranks
              if (const Modes modes = detect_modes(t.mean_us); modes.multimodal) {
                m.extra["modes"] = {{"low_us", modes.low},
                                    {"high_us", modes.high},
                                    {"high_share", modes.high_share},
                                    {"separation", modes.separation}};
                row_modes = block_modes = true;
              }
              // The rank that finished last most often (the max over ranks), and how often.
              if (nranks > 1)
                if (const auto last = most_often_last(t.slowest_rank)) {
                  m.extra["slowest_rank"] = last->first;
                  m.extra["slowest_rank_share"] = last->second;
                  ++points_judged;
                  if (last->second >= 0.5)
                    ++last_rank_points[last->first];
                }
              if (mem_gbps > 0 && m.algbw_gbps > mem_gbps) {
                m.extra["above_memory_bandwidth"] = true;
                row_above_memory = block_above_memory = true;
              }
              if (!baseline.is_null())
                m.extra["baseline"] = baseline;
              if (const auto merged = repeats.add(m))
                write_record(to_json(*merged));
              row += row_body(m.time_us, m.algbw_gbps, m.busbw_gbps, m.wrong);
              busbw_sum += m.busbw_gbps;
              ++busbw_n;
            }
          }
          if (rank == 0) {
            if (backend_name == "nccl")
              row += row_choice(row_choice_seen, op == Op::alltoall || op == Op::alltoallv ||
                                                     op == Op::sendrecv);
            std::printf("%s%s%s\n%s", row.c_str(), row_above_memory ? kAboveMemoryMark : "",
                        row_modes ? kModesMark : "", baseline_line.c_str());
            std::fflush(stdout);
            progress.advance(measured,
                             fmt::format("{} {} {} {} B", op_name(op), shape.label(),
                                         dtype_name(dtype), pt.bytes),
                             false);
          }
        }
        if (comm)
          comm->deregister_buffers(); // the block's registration; the run's buffers stay
      }
      wrong_total += block_wrong;
      if (rank == 0) {
        if (block_above_memory)
          std::printf("%s", above_memory_note(mem_gbps).c_str());
        if (block_modes)
          std::printf("%s", modes_note(statistic_name(o.statistic)).c_str());
        std::printf(
            "%s",
            table_footer(block_wrong, busbw_n ? busbw_sum / busbw_n : 0.0, op_name(op)).c_str());
        std::fflush(stdout);
        progress.advance(0, fmt::format("{} {} done", op_name(op), shape.label()), true);
      }
      watchdog.set_point("", nullptr);
      comm.reset();
      if (sub != MPI_COMM_NULL)
        MPI_Comm_free(&sub);
    }
  }
  if (o.timeout_s > 0)
    board.finish(); // every progress report taken before the communicator goes
  if (rank == 0)
    std::printf("%s", repeats.summary().c_str());
  // --groups pairs: every node against every other, every rank pair inside a node (pairs.hpp).
  if (std::find(o.groups.begin(), o.groups.end(), GroupKind::pairs) != o.groups.end())
    run_pairs({o, layout, hosts_per_rank, *backend, dtypes.front(), sizes, watchdog,
               [&](const MeasurementRecord &m) { write_record(to_json(m)); }});
  if (rank == 0)
    std::printf("%s", slowest_rank_summary(last_rank_points, points_judged, hosts_per_rank).c_str());
  if (rank == 0) {
    const double total_s = MPI_Wtime() - run_start;
    std::fprintf(stderr,
                 "scalefit-bench: finished in %.1f s: warm-up and timed samples %.1f s, checks "
                 "%.1f s, other %.1f s\n",
                 total_s, timing_s, check_s, total_s - timing_s - check_s);
  }
  return wrong_total > 0 ? kExitCheck : kExitOk;
}

} // namespace scalefit::bench
