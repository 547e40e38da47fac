// `scalefit-bench comm`: validation, group shapes, the timing loop, checks, table and records.
#include "scalefit/bench/comm.hpp"

#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/check.hpp"
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/groups.hpp"
#include "scalefit/bench/output.hpp"
#include "scalefit/bench/table.hpp"
#include "scalefit/bench/verify.hpp"
#include "scalefit/core/csv.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/timing.hpp"
#include "scalefit/core/units.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

extern char **environ;

#ifndef SCALEFIT_VERSION
#define SCALEFIT_VERSION "0.0.0"
#endif

namespace scalefit::bench {
namespace {

constexpr int kMaxBatch = 1 << 20;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// Broadcasts a string from rank `root` of MPI_COMM_WORLD.
std::string bcast_string(std::string s, int root) {
  long long n = static_cast<long long>(s.size());
  SCALEFIT_MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD));
  s.resize(static_cast<std::size_t>(n));
  if (n > 0)
    SCALEFIT_MPI_CHECK(MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, root, MPI_COMM_WORLD));
  return s;
}

/// Every rank's string, on every rank (fixed width, truncated at 255 characters).
std::vector<std::string> allgather_strings(const std::string &mine) {
  constexpr int kWidth = 256;
  std::array<char, kWidth> buf{};
  std::strncpy(buf.data(), mine.c_str(), kWidth - 1);
  std::vector<char> all(static_cast<std::size_t>(kWidth * world_size()));
  SCALEFIT_MPI_CHECK(
      MPI_Allgather(buf.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < world_size(); ++r)
    out.emplace_back(all.data() + r * kWidth);
  return out;
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

NodeLayout detect_layout(int emulate_nodes, int &local_rank_out) {
  const int rank = world_rank(), n = world_size();
  // The real local rank picks the GPU even when nodes are emulated.
  MPI_Comm local = MPI_COMM_NULL;
  SCALEFIT_MPI_CHECK(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
  int key = rank;
  SCALEFIT_MPI_CHECK(MPI_Allreduce(&rank, &key, 1, MPI_INT, MPI_MIN, local));
  SCALEFIT_MPI_CHECK(MPI_Comm_rank(local, &local_rank_out));
  MPI_Comm_free(&local);
  if (emulate_nodes > 0)
    return emulated_layout(n, emulate_nodes);
  std::vector<int> keys(static_cast<std::size_t>(n));
  SCALEFIT_MPI_CHECK(MPI_Allgather(&key, 1, MPI_INT, keys.data(), 1, MPI_INT, MPI_COMM_WORLD));
  return layout_from_keys(keys);
}

std::map<std::string, std::string> captured_env() {
  std::map<std::string, std::string> env;
  for (char **e = environ; e && *e; ++e) {
    const std::string kv(*e);
    if (kv.rfind("NCCL_", 0) == 0 || kv.rfind("OMPI_", 0) == 0 || kv.rfind("UCX_", 0) == 0) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos)
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return env;
}

/// Stderr progress with an ETA (rank 0), at most every 2 s.
class Progress {
public:
  explicit Progress(std::size_t total) : m_total(total), m_start(MPI_Wtime()), m_last(m_start) {}
  void advance(std::size_t n, const std::string &what, bool force) {
    m_done += n;
    const double now = MPI_Wtime();
    if (!force && now - m_last < 2.0)
      return;
    m_last = now;
    const double el = now - m_start;
    const double eta = m_done > 0 ? el / static_cast<double>(m_done) *
                                        static_cast<double>(m_total - std::min(m_total, m_done))
                                  : 0;
    std::fprintf(stderr, "scalefit-bench: %zu/%zu points (%s), %.0f s elapsed, ETA %.0f s\n",
                 m_done, m_total, what.c_str(), el, eta);
    std::fflush(stderr);
  }

private:
  std::size_t m_total, m_done = 0;
  double m_start, m_last;
};

struct Timed {
  std::vector<double> samples_us; ///< per-operation time of each sample (max over ranks)
  int batch = 1;
};

/// Warm-up, batch calibration and the adaptive samples of one point. Every world rank calls it;
/// ranks without a communicator (`comm` null) only take part in the barriers and reductions.
Timed time_point(Comm *comm, const std::function<void()> &op, const CommOptions &o,
                 std::uint64_t point_id) {
  Timed t;
  // Warm-up: one operation alone (it pays the first-touch costs), then up to -w - 1 more as one
  // batch, capped at half of --max-time so that warming large sizes does not dominate a sweep.
  // The second batch calibrates the sample batch size. Every rank sees the same max values.
  const int warm = o.warmup_iters > 0 ? o.warmup_iters : (o.batch > 0 || o.graph_iters > 0 ? 0 : 1);
  double op_us = 0;
  if (warm > 0) {
    SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double local = comm ? comm->time_batch_us(1, op, 0) : 0.0;
    SCALEFIT_MPI_CHECK(MPI_Allreduce(&local, &op_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    const double budget_us = 0.5 * o.max_time_s * 1e6;
    const int more =
        static_cast<int>(std::min<double>(warm - 1, std::floor(budget_us / std::max(op_us, 1e-3))));
    if (more > 0) {
      double batch_us = 0;
      SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      const double l2 = comm ? comm->time_batch_us(more, op, 0) : 0.0;
      SCALEFIT_MPI_CHECK(MPI_Allreduce(&l2, &batch_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
      op_us = batch_us / more;
    }
  }
  t.batch = o.graph_iters > 0 ? o.graph_iters
            : o.batch > 0     ? o.batch
                              : calibrate_batch(op_us, o.batch_time_us, kMaxBatch);
  const StopRule rule{o.min_time_s,  o.max_time_s,  o.max_noise,
                      o.min_samples, o.max_samples, o.fixed_samples};
  const double start = MPI_Wtime();
  for (;;) {
    SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    // Elapsed time rides along with the batch time, so every rank gets the same max values and
    // takes the same stop decision (rank 0's decision, without a broadcast).
    const double local[2] = {comm ? comm->time_batch_us(t.batch, op, point_id) : 0.0,
                             MPI_Wtime() - start};
    double global[2] = {0, 0};
    SCALEFIT_MPI_CHECK(MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    t.samples_us.push_back(global[0] / t.batch);
    if (rule.should_stop(t.samples_us, global[1]))
      break;
  }
  return t;
}

/// --baseline: harness and bare MPI_Allreduce batches, interleaved so both see the same noise.
nlohmann::json time_baseline(Comm *comm, const std::function<void()> &op, const void *send,
                             void *recv, const CollArgs &a, int batch, int nsamples) {
  std::vector<double> harness, bare;
  const MPI_Comm mc = comm ? comm->mpi_comm() : MPI_COMM_NULL;
  const int count = static_cast<int>(a.count);
  const MPI_Datatype type = mpi_datatype(a.dtype);
  const MPI_Op mop = mpi_op(a.redop);
  for (int s = 0; s < nsamples; ++s) {
    double local = 0, global = 0;
    SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    local = comm ? comm->time_batch_us(batch, op, 0) : 0.0;
    SCALEFIT_MPI_CHECK(MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    harness.push_back(global / batch);
    SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    local = 0;
    if (mc != MPI_COMM_NULL) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < batch; ++i)
        MPI_Allreduce(send, recv, count, type, mop, mc);
      local = (MPI_Wtime() - t0) * 1e6;
    }
    SCALEFIT_MPI_CHECK(MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    bare.push_back(global / batch);
  }
  const Summary h = summarize(harness), b = summarize(bare);
  return {{"samples", nsamples},           {"iters_per_sample", batch},
          {"harness_median_us", h.median}, {"harness_mean_us", h.mean},
          {"bare_median_us", b.median},    {"bare_mean_us", b.mean}};
}

} // namespace

void agree_or_throw(const std::string &error, const std::string &field) {
  const int rank = world_rank(), n = world_size();
  int mine = error.empty() ? n : rank, first = n;
  SCALEFIT_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (first == n)
    return;
  throw InputError(bcast_string(error, first), "", 0, field);
}

int run_comm(const CommOptions &o, const std::string &command_line) {
  const int rank = world_rank(), nranks = world_size();
  int local_rank = 0;
  const NodeLayout layout = detect_layout(o.emulate_nodes, local_rank);

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
  const std::vector<DType> dtypes = [&] {
    if (!o.all_dtypes)
      return o.dtypes;
    std::vector<DType> all = o.dtypes;
    for (DType t : {DType::float32, DType::float64, DType::half, DType::bfloat16, DType::int8,
                    DType::uint8, DType::int32, DType::uint32, DType::int64, DType::uint64})
      if ((backend_name == "nccl" || mpi_datatype(t) != MPI_DATATYPE_NULL) &&
          std::find(all.begin(), all.end(), t) == all.end())
        all.push_back(t);
    return all;
  }();
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
    if (o.graph_iters > 0)
      throw InputError("CUDA graphs need --backend nccl", "", 0, "-G");
  } else if (o.baseline) {
    throw InputError("--baseline times a bare MPI_Allreduce loop: it needs --backend mpi", "", 0,
                     "--baseline");
  }
  const std::vector<GroupShape> shapes = enumerate_shapes(layout, o.groups);
  if (std::any_of(o.ops.begin(), o.ops.end(), op_has_root))
    for (const GroupShape &s : shapes)
      if (o.root >= s.nranks)
        throw InputError("root " + std::to_string(o.root) + " is not a rank of group shape " +
                             s.label() + " (" + std::to_string(s.nranks) + " ranks)",
                         "", 0, "-r");
  const std::vector<std::uint64_t> sizes =
      size_sweep(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);

  // --- Context and output file (rank 0 judges; every rank agrees) -------------------------------
  const std::vector<std::string> hosts_per_rank = allgather_strings(host_name());
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
  ResumeState resume;
  std::string out_error;
  if (rank == 0 && !o.out.empty()) {
    try {
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

  // --- Backend instance and the run's description ---------------------------------------------
  std::unique_ptr<Backend> backend =
      backend_name == "nccl" ? make_nccl_backend(local_rank, o.graph_iters) : make_mpi_backend();
  const std::vector<std::string> devices = allgather_strings(backend->device_name());
  ctx.devices = devices;
  ctx.versions = backend->versions();
  ctx.versions["scalefit"] = SCALEFIT_VERSION;
  ctx.start_time = utc_now_iso8601();

  // Points per block, for the progress total.
  std::size_t total_points = 0;
  for (Op op : o.ops)
    for (const GroupShape &s : shapes)
      for (DType t : dtypes)
        total_points += 2 * op_size_points(op, sizes, t, s.nranks).size();
  total_points -= std::min(total_points, done_keys.size());

  if (rank == 0) {
    std::printf("# scalefit-bench comm: backend %s (%s)\n", backend_name.c_str(),
                (backend_name == "nccl"
                     ? "NCCL " + ctx.versions["nccl"] + ", CUDA runtime " + ctx.versions["cuda"]
                     : ctx.versions["mpi"])
                    .c_str());
    std::printf(
        "# nRanks %d nNodes %d%s ranksPerNode %d minBytes %llu maxBytes %llu step: %llu(%s) "
        "warmup iters: %d iters: %s validation: %d graph: %d\n",
        nranks, layout.nnodes, layout.emulated ? " (emulated)" : "", layout.ranks_per_node,
        static_cast<unsigned long long>(o.min_bytes), static_cast<unsigned long long>(o.max_bytes),
        static_cast<unsigned long long>(o.step_bytes > 0 ? o.step_bytes : o.step_factor),
        o.step_bytes > 0 ? "bytes" : "factor", o.warmup_iters,
        o.fixed_samples > 0
            ? fmt::format("{} samples", o.fixed_samples).c_str()
            : fmt::format("adaptive (noise < {:g}%, {:g}-{:g} s, {}-{} samples)", o.max_noise * 100,
                          o.min_time_s, o.max_time_s, o.min_samples, o.max_samples)
                  .c_str(),
        o.check ? 1 : 0, o.graph_iters);
    std::printf("#\n# Using devices\n");
    for (int r = 0; r < nranks; ++r)
      std::printf("#  Rank %2d Node %2d Pid %6s on %10s device %2d %s\n", r,
                  layout.node_of_rank[static_cast<std::size_t>(r)], "-",
                  hosts_per_rank[static_cast<std::size_t>(r)].c_str(),
                  backend_name == "nccl" ? layout.local_rank[static_cast<std::size_t>(r)] : 0,
                  devices[static_cast<std::size_t>(r)].c_str());
    if (!done_keys.empty())
      std::printf("# Resuming %s: %zu points already measured are reused\n", o.out.c_str(),
                  done_keys.size());
    std::fflush(stdout);
  }

  std::unique_ptr<JsonlWriter> writer;
  std::unique_ptr<CsvWriter> csv; // --csv: a flat row per measurement
  auto write_record = [&](const nlohmann::json &j) {
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
        std::fprintf(stderr,
                     "scalefit-bench: dropped an unterminated last line of %s (a killed "
                     "write)\n",
                     o.out.c_str());
      }
      writer = std::make_unique<JsonlWriter>(o.out);
      writer->write(to_json(ctx));
    }
    writer->write(j);
  };

  Progress progress(total_points);
  const double run_start = MPI_Wtime();
  double timing_s = 0, check_s = 0; // rank 0's wall time in timing loops and in checks
  std::int64_t wrong_total = 0;
  std::uint64_t point_id = 0;
  for (Op op : o.ops) {
    const Collective &coll = collective(op);
    for (const GroupShape &shape : shapes) {
      const std::vector<GroupMembership> members = assign_instances(layout, shape);
      const GroupMembership me = members[static_cast<std::size_t>(rank)];
      MPI_Comm sub = MPI_COMM_NULL;
      SCALEFIT_MPI_CHECK(
          MPI_Comm_split(MPI_COMM_WORLD, me.color >= 0 ? me.color : MPI_UNDEFINED, me.key, &sub));
      std::unique_ptr<Comm> comm = backend->make_comm(sub, me.color, me.key);
      const int instances = count_instances(members);
      std::int64_t block_wrong = 0;
      double busbw_sum = 0;
      int busbw_n = 0;
      if (rank == 0) {
        std::printf("#\n# Collective test starting: %s (%s)\n", std::string(op_name(op)).c_str(),
                    std::string(coll.nccl_tests_name).c_str());
        std::printf("# Group shape: %s: %d concurrent instance%s of %d ranks (%d node%s x %d)\n",
                    shape.label().c_str(), instances, instances == 1 ? "" : "s", shape.nranks,
                    shape.nnodes, shape.nnodes == 1 ? "" : "s", shape.ranks_per_node);
        std::printf("#\n%s", table_header().c_str());
        std::fflush(stdout);
      }
      for (DType dtype : dtypes) {
        const std::vector<SizePoint> points = op_size_points(op, sizes, dtype, shape.nranks);
        if (points.empty())
          continue;
        const std::size_t cmax = points.back().count, es = dtype_size(dtype);
        const std::size_t ns = coll.send_count(cmax, shape.nranks) * es;
        const std::size_t nr = std::max(ns, coll.recv_count(cmax, shape.nranks) * es);
        std::optional<Buffers> bufs;
        if (comm)
          bufs.emplace(*backend, ns, nr);
        for (const SizePoint &pt : points) {
          CollArgs a;
          a.count = pt.count;
          a.dtype = dtype;
          a.redop = op_has_redop(op) ? o.redop : RedOp::sum;
          a.root = op_has_root(op) ? o.root : -1;
          a.rank = comm ? comm->rank() : 0;
          a.nranks = shape.nranks;
          std::string row = row_preamble(pt.bytes, pt.count, dtype_name(dtype),
                                         op_has_redop(op) ? redop_name(o.redop) : "none", a.root);
          std::string baseline_line;
          std::size_t measured = 0;
          for (Placement pl : {Placement::out_of_place, Placement::in_place}) {
            MeasurementRecord m;
            m.op = op;
            m.group = shape;
            m.dtype = dtype;
            m.redop = a.redop;
            m.root = a.root;
            m.placement = pl;
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
            const void *send = nullptr;
            void *recv = nullptr;
            if (comm)
              std::tie(send, recv) = placement_ptrs(coll, *bufs, a, pl);
            Comm *cp = comm.get();
            const std::function<void()> run = [&coll, cp, send, recv, &a] {
              coll.run(*cp, send, recv, a);
            };
            const double t_begin = MPI_Wtime();
            const Timed t = time_point(cp, run, o, point_id);
            const double t_timed = MPI_Wtime();
            timing_s += t_timed - t_begin;
            std::int64_t wrong = 0;
            if (o.check) {
              const std::int64_t mine = comm ? check_point(*backend, *comm, coll, *bufs, a, pl) : 0;
              SCALEFIT_MPI_CHECK(
                  MPI_Allreduce(&mine, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
              block_wrong += wrong;
              check_s += MPI_Wtime() - t_timed;
            }
            nlohmann::json baseline;
            if (o.baseline && op == Op::allreduce && pl == Placement::out_of_place) {
              baseline = time_baseline(cp, run, send, recv, a, t.batch,
                                       std::max<int>(10, static_cast<int>(t.samples_us.size())));
              const double hb = baseline["harness_median_us"], bb = baseline["bare_median_us"];
              baseline_line = fmt::format(
                  "# baseline {} B: bare MPI_Allreduce loop median {:.3f} us (mean {:.3f}) | "
                  "harness median {:.3f} us (mean {:.3f}) | overhead {:+.3f} us ({:+.2f}%), "
                  "{} interleaved samples x {} ops\n",
                  pt.bytes, bb, baseline["bare_mean_us"].get<double>(), hb,
                  baseline["harness_mean_us"].get<double>(), hb - bb,
                  bb > 0 ? (hb - bb) / bb * 100 : 0.0, baseline["samples"].get<int>(), t.batch);
            }
            if (rank == 0) {
              const Summary s = summarize(t.samples_us);
              m.time_us = s.mean;
              m.algbw_gbps = gbps(static_cast<double>(pt.bytes), s.mean);
              m.busbw_gbps = m.algbw_gbps * busbw_factor(op, shape.nranks);
              if (o.check)
                m.wrong = wrong;
              m.stats = s;
              m.iters_per_sample = t.batch;
              m.samples_us = t.samples_us;
              m.extra = nlohmann::json::object();
              m.extra["instances"] = instances;
              if (!baseline.is_null())
                m.extra["baseline"] = baseline;
              write_record(to_json(m));
              row += row_body(m.time_us, m.algbw_gbps, m.busbw_gbps, m.wrong);
              busbw_sum += m.busbw_gbps;
              ++busbw_n;
            }
          }
          if (rank == 0) {
            std::printf("%s\n%s", row.c_str(), baseline_line.c_str());
            std::fflush(stdout);
            progress.advance(measured,
                             fmt::format("{} {} {} {} B", op_name(op), shape.label(),
                                         dtype_name(dtype), pt.bytes),
                             false);
          }
        }
      }
      wrong_total += block_wrong;
      if (rank == 0) {
        std::printf(
            "%s",
            table_footer(block_wrong, busbw_n ? busbw_sum / busbw_n : 0.0, op_name(op)).c_str());
        std::fflush(stdout);
        progress.advance(0, fmt::format("{} {} done", op_name(op), shape.label()), true);
      }
      comm.reset();
      if (sub != MPI_COMM_NULL)
        MPI_Comm_free(&sub);
    }
  }
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
