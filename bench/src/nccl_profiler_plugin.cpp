// scalefit's NCCL profiler plugin (bin/scalefit-nccl-profiler, a shared library NCCL loads when
// NCCL_PROFILER_PLUGIN holds its path): it records, per communicator name, the algorithm,
// protocol and channels of the last collective NCCL planned, and a count of collectives, for
// scalefit-bench's table and records. No NCCL header is used: the profiler ABI is plain C structs,
// declared here from NCCL 2.28.9's source (src/include/plugin/profiler/profiler_v5.h and
// profiler_v4.h; ext-profiler/README.md describes the interface), with the offsets this file reads
// checked below. It exports ncclProfiler_v5 (NCCL 2.28 looks it up first, src/plugin/profiler.cc)
// and ncclProfiler_v4 (NCCL 2.26-2.27), and the query functions of nccl_profiler_abi.h.
//
// Cost: the activation mask asks for collective events only. NCCL then also offers its group,
// group-API and collective-API events (their masks include ncclProfileColl); those are refused at
// the first comparison, with a null handle. A collective is recorded when its event starts (under
// one mutex, a few string copies) and no handle is returned, so NCCL makes no stopEvent call.
// NCCL starts collective events in the thread that launches the kernel, or from a CUDA host
// callback when the plan has proxy operations (src/enqueue.cc, hostStreamPlanTask): always before
// the user's stream passes the collective, so the record is complete after a stream synchronize.
#include "nccl_profiler_abi.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#define SCALEFIT_EXPORT __attribute__((visibility("default")))

namespace {

// --- The NCCL profiler ABI (LP64), as NCCL 2.28.9 defines it -------------------------------------

using NcclResult = int; // ncclResult_t; ncclSuccess = 0
constexpr NcclResult kNcclSuccess = 0;
constexpr int kProfileColl = 1 << 1; // ncclProfileColl (src/include/plugin/nccl_profiler.h)

// ncclDebugLogger_t (ext-profiler/example/nccl/common.h); level 3 = NCCL_LOG_INFO, flags 1 =
// NCCL_INIT.
using NcclLogger = void (*)(int level, unsigned long flags, const char *file, int line,
                            const char *fmt, ...);
constexpr int kLogInfo = 3;
constexpr unsigned long kLogInit = 1;

// The `coll` member of the descriptor's union (identical in v4 and v5 up to `proto`).
struct CollDescr {
  std::uint64_t seq_number;
  const char *func;
  const void *send_buff;
  void *recv_buff;
  std::size_t count;
  int root;
  const char *datatype;
  std::uint8_t n_channels;
  std::uint8_t n_warps;
  const char *algo;
  const char *proto;
};

// ncclProfilerEventDescr_v5_t. Only `coll`, the largest member, of the union is declared.
struct EventDescrV5 {
  std::uint64_t type; // ncclProfileColl, ...
  void *parent_obj;
  int rank;
  union {
    struct {
      CollDescr c;
      void *parent_group; // v5 only
    } coll;
  };
};

// ncclProfilerEventDescr_v4_t: `type` is one byte.
struct EventDescrV4 {
  std::uint8_t type;
  void *parent_obj;
  int rank;
  union {
    CollDescr coll;
  };
};

static_assert(sizeof(void *) == 8 && sizeof(std::size_t) == 8, "the layout below is LP64's");
static_assert(offsetof(EventDescrV5, type) == 0);
static_assert(offsetof(EventDescrV5, rank) == 16);
static_assert(offsetof(EventDescrV5, coll) == 24);
static_assert(offsetof(EventDescrV5, coll.c.func) == 32);
static_assert(offsetof(EventDescrV5, coll.c.count) == 56);
static_assert(offsetof(EventDescrV5, coll.c.datatype) == 72);
static_assert(offsetof(EventDescrV5, coll.c.n_channels) == 80);
static_assert(offsetof(EventDescrV5, coll.c.n_warps) == 81);
static_assert(offsetof(EventDescrV5, coll.c.algo) == 88);
static_assert(offsetof(EventDescrV5, coll.c.proto) == 96);
static_assert(sizeof(EventDescrV5) == 112, "coll (with parentGroup) is the union's largest member");
static_assert(offsetof(EventDescrV4, coll) == 24);
static_assert(offsetof(EventDescrV4, coll.n_channels) == 80);
static_assert(offsetof(EventDescrV4, coll.algo) == 88);
static_assert(offsetof(EventDescrV4, coll.proto) == 96);
static_assert(sizeof(EventDescrV4) == 104);

// ncclProfiler_v5_t.
struct ProfilerV5 {
  const char *name;
  NcclResult (*init)(void **context, std::uint64_t comm_id, int *activation_mask,
                     const char *comm_name, int n_nodes, int n_ranks, int rank, NcclLogger log);
  NcclResult (*start_event)(void *context, void **handle, EventDescrV5 *descr);
  NcclResult (*stop_event)(void *handle);
  NcclResult (*record_event_state)(void *handle, int state, void *state_args);
  NcclResult (*finalize)(void *context);
};

// ncclProfiler_v4_t: init's arguments in another order.
struct ProfilerV4 {
  const char *name;
  NcclResult (*init)(void **context, int *activation_mask, const char *comm_name,
                     std::uint64_t comm_hash, int n_nodes, int n_ranks, int rank, NcclLogger log);
  NcclResult (*start_event)(void *context, void **handle, EventDescrV4 *descr);
  NcclResult (*stop_event)(void *handle);
  NcclResult (*record_event_state)(void *handle, int state, void *state_args);
  NcclResult (*finalize)(void *context);
};

static_assert(offsetof(ProfilerV5, init) == 8 && offsetof(ProfilerV5, finalize) == 40);

// --- State ---------------------------------------------------------------------------------------

// One record per communicator name. Nodes of an unordered_map keep their address, so a context
// holds a pointer to its record; records outlive their communicators (the bench reads them after
// the point, possibly after the communicator is destroyed) and are never erased.
struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, scalefit_profiler_choice_v1> records;
};

// Never destroyed: NCCL's threads may still be calling while the process exits.
Registry &registry() {
  static Registry *r = new Registry;
  return *r;
}

std::atomic<int> g_live{0};

struct Context {
  scalefit_profiler_choice_v1 *record; // guarded by registry().mutex
};

void copy_name(char (&dst)[SCALEFIT_PROFILER_NAME_CAP], const char *src) {
  if (src == nullptr)
    src = "";
  std::size_t n = std::strlen(src);
  if (n >= SCALEFIT_PROFILER_NAME_CAP)
    n = SCALEFIT_PROFILER_NAME_CAP - 1;
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

NcclResult init_context(void **context, int *activation_mask, const char *comm_name, int rank,
                        NcclLogger log) {
  if (context == nullptr || activation_mask == nullptr)
    return 4; // ncclInvalidArgument: NCCL then goes on without the plugin
  // NCCL keeps one process-wide mask and every init overwrites it; ours is always the same.
  *activation_mask = kProfileColl;
  const std::string name = comm_name != nullptr ? comm_name : "";
  Registry &r = registry();
  Context *ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.records.try_emplace(name).first; // value-initialized: zeros
    ctx = new Context{&it->second};
  }
  *context = ctx;
  g_live.fetch_add(1, std::memory_order_relaxed);
  if (log != nullptr)
    log(kLogInfo, kLogInit, __FILE__, __LINE__,
        "scalefit profiler: recording collective algorithm/protocol of comm '%s' rank %d",
        name.c_str(), rank);
  return kNcclSuccess;
}

void record_coll(void *context, const CollDescr &c) {
  auto *ctx = static_cast<Context *>(context);
  std::lock_guard<std::mutex> lock(registry().mutex);
  scalefit_profiler_choice_v1 &rec = *ctx->record;
  copy_name(rec.func, c.func);
  copy_name(rec.algo, c.algo);
  copy_name(rec.proto, c.proto);
  copy_name(rec.datatype, c.datatype);
  rec.count = c.count;
  rec.channels = c.n_channels;
  rec.n_warps = c.n_warps;
  ++rec.seen;
}

NcclResult init_v5(void **context, std::uint64_t /*comm_id*/, int *activation_mask,
                   const char *comm_name, int /*n_nodes*/, int /*n_ranks*/, int rank,
                   NcclLogger log) {
  return init_context(context, activation_mask, comm_name, rank, log);
}

NcclResult init_v4(void **context, int *activation_mask, const char *comm_name,
                   std::uint64_t /*comm_hash*/, int /*n_nodes*/, int /*n_ranks*/, int rank,
                   NcclLogger log) {
  return init_context(context, activation_mask, comm_name, rank, log);
}

NcclResult start_event_v5(void *context, void **handle, EventDescrV5 *descr) {
  if (handle != nullptr)
    *handle = nullptr; // NCCL keeps (and later tests) whatever is written here
  if (context == nullptr || descr == nullptr || descr->type != kProfileColl)
    return kNcclSuccess;
  record_coll(context, descr->coll.c);
  return kNcclSuccess;
}

NcclResult start_event_v4(void *context, void **handle, EventDescrV4 *descr) {
  if (handle != nullptr)
    *handle = nullptr;
  if (context == nullptr || descr == nullptr || descr->type != kProfileColl)
    return kNcclSuccess;
  record_coll(context, descr->coll);
  return kNcclSuccess;
}

// No handle is ever returned, so NCCL has nothing to stop or update; both accept anything.
NcclResult stop_event(void * /*handle*/) {
  return kNcclSuccess;
}
NcclResult record_event_state(void * /*handle*/, int /*state*/, void * /*args*/) {
  return kNcclSuccess;
}

NcclResult finalize(void *context) {
  if (context == nullptr)
    return kNcclSuccess;
  delete static_cast<Context *>(context);
  g_live.fetch_sub(1, std::memory_order_relaxed);
  return kNcclSuccess;
}

} // namespace

extern "C" {

SCALEFIT_EXPORT ProfilerV5 ncclProfiler_v5 = {
    "scalefit", init_v5, start_event_v5, stop_event, record_event_state, finalize};
SCALEFIT_EXPORT ProfilerV4 ncclProfiler_v4 = {
    "scalefit", init_v4, start_event_v4, stop_event, record_event_state, finalize};

SCALEFIT_EXPORT int scalefit_profiler_query_v1(const char *comm_name,
                                               scalefit_profiler_choice_v1 *out) {
  if (out == nullptr)
    return 0;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.records.find(comm_name != nullptr ? comm_name : "");
  if (it == r.records.end() || it->second.seen == 0)
    return 0;
  *out = it->second;
  return 1;
}

SCALEFIT_EXPORT void scalefit_profiler_reset_v1(const char *comm_name) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (comm_name == nullptr) {
    for (auto &kv : r.records)
      kv.second = scalefit_profiler_choice_v1{};
    return;
  }
  const auto it = r.records.find(comm_name);
  if (it != r.records.end())
    it->second = scalefit_profiler_choice_v1{};
}

SCALEFIT_EXPORT int scalefit_profiler_live_v1(void) {
  return g_live.load(std::memory_order_relaxed);
}

} // extern "C"

static_assert(std::is_same_v<decltype(&scalefit_profiler_query_v1), scalefit_profiler_query_v1_fn>);
static_assert(std::is_same_v<decltype(&scalefit_profiler_reset_v1), scalefit_profiler_reset_v1_fn>);
static_assert(std::is_same_v<decltype(&scalefit_profiler_live_v1), scalefit_profiler_live_v1_fn>);
