// scalefit's NCCL profiler plugin driven as NCCL 2.28 drives it (dlopen, dlsym ncclProfiler_v5,
// init / startEvent / stopEvent / finalize), read back through the bench's reader; and the parser
// of NCCL's TUNING log line. CPU only: the plugin needs no NCCL.
#include "scalefit/bench/nccl_profiler.hpp"

#include "../support/paths.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <string>
#include <thread>

#ifndef SCALEFIT_PROFILER_PLUGIN_FILE
#error "SCALEFIT_PROFILER_PLUGIN_FILE must name the built plugin"
#endif

using namespace scalefit::bench;

namespace {

/// The plugin under test: $SCALEFIT_BIN_DIR/scalefit-nccl-profiler (a GPU bundle's copy), else
/// the one this build made.
std::string plugin_file() {
  return scalefit::test::bin_path("scalefit-nccl-profiler", SCALEFIT_PROFILER_PLUGIN_FILE);
}

// NCCL 2.28.9's declarations, transcribed here independently of the plugin's own
// (src/include/plugin/nccl_profiler.h, src/include/plugin/profiler/profiler_v5.h, _v4.h).
enum : std::uint64_t {
  ncclProfileGroup = 1 << 0,
  ncclProfileColl = 1 << 1,
  ncclProfileP2p = 1 << 2,
  ncclProfileProxyOp = 1 << 3,
  ncclProfileProxyStep = 1 << 4,
  ncclProfileProxyCtrl = 1 << 5,
  ncclProfileKernelCh = 1 << 6,
  ncclProfileNetPlugin = 1 << 7,
  ncclProfileGroupApi = 1 << 8,
  ncclProfileCollApi = 1 << 9,
  ncclProfileP2pApi = 1 << 10,
  ncclProfileKernelLaunch = 1 << 11,
};

struct Descr_v5 {
  std::uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *func;
      std::size_t count;
      const char *datatype;
      int root;
      void *stream;
      bool graphCaptured;
    } collApi;
    struct {
      std::uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      std::size_t count;
      int root;
      const char *datatype;
      std::uint8_t nChannels;
      std::uint8_t nWarps;
      const char *algo;
      const char *proto;
      void *parentGroup;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      std::size_t count;
      int peer;
      std::uint8_t nChannels;
      void *parentGroup;
    } p2p;
  };
};

struct Descr_v4 {
  std::uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      std::uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      std::size_t count;
      int root;
      const char *datatype;
      std::uint8_t nChannels;
      std::uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
  };
};

using Logger = void (*)(int, unsigned long, const char *, int, const char *, ...);

struct Profiler_v5 {
  const char *name;
  int (*init)(void **context, std::uint64_t commId, int *eActivationMask, const char *commName,
              int nNodes, int nranks, int rank, Logger logfn);
  int (*startEvent)(void *context, void **eHandle, Descr_v5 *eDescr);
  int (*stopEvent)(void *eHandle);
  int (*recordEventState)(void *eHandle, int eState, void *eStateArgs);
  int (*finalize)(void *context);
};

struct Profiler_v4 {
  const char *name;
  int (*init)(void **context, int *eActivationMask, const char *commName, std::uint64_t commHash,
              int nNodes, int nranks, int rank, Logger logfn);
  int (*startEvent)(void *context, void **eHandle, Descr_v4 *eDescr);
  int (*stopEvent)(void *eHandle);
  int (*recordEventState)(void *eHandle, int eState, void *eStateArgs);
  int (*finalize)(void *context);
};

int g_log_calls = 0;
void count_log(int, unsigned long, const char *, int, const char *, ...) {
  ++g_log_calls;
}

// A collective descriptor as ncclProfilerStartTaskEvents fills it.
Descr_v5 coll_v5(const char *func, const char *algo, const char *proto, int channels,
                 std::size_t count = 1024) {
  Descr_v5 d{};
  d.type = ncclProfileColl;
  d.rank = 0;
  d.coll.seqNumber = 7;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.root = -1;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = static_cast<std::uint8_t>(channels);
  d.coll.nWarps = 16;
  d.coll.algo = algo;
  d.coll.proto = proto;
  return d;
}

class NcclProfiler : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // The reader finds the plugin through this variable; the same file as bin/'s.
    setenv("SCALEFIT_NCCL_PROFILER", plugin_file().c_str(), 1);
    s_lib = dlopen(plugin_file().c_str(), RTLD_NOW | RTLD_LOCAL); // as NCCL opens it
    ASSERT_NE(s_lib, nullptr) << dlerror();
    s_v5 = static_cast<Profiler_v5 *>(dlsym(s_lib, "ncclProfiler_v5"));
    s_v4 = static_cast<Profiler_v4 *>(dlsym(s_lib, "ncclProfiler_v4"));
    ASSERT_NE(s_v5, nullptr);
    ASSERT_NE(s_v4, nullptr);
  }
  // s_lib stays open: the reader's records live in it.

  static void *init(const char *name, int *mask = nullptr) {
    void *ctx = nullptr;
    int m = -1;
    EXPECT_EQ(s_v5->init(&ctx, 0x1234, &m, name, 1, 2, 0, count_log), 0);
    EXPECT_NE(ctx, nullptr);
    if (mask != nullptr)
      *mask = m;
    return ctx;
  }

  static void start(void *ctx, Descr_v5 d) {
    void *handle = reinterpret_cast<void *>(0x1); // garbage, as NCCL's fields may hold
    EXPECT_EQ(s_v5->startEvent(ctx, &handle, &d), 0);
    if (handle != nullptr) {
      EXPECT_EQ(s_v5->stopEvent(handle), 0);
    }
    EXPECT_EQ(handle, nullptr) << "no handle: NCCL then makes no stopEvent call";
  }

  static inline void *s_lib = nullptr;
  static inline Profiler_v5 *s_v5 = nullptr;
  static inline Profiler_v4 *s_v4 = nullptr;
};

TEST_F(NcclProfiler, ExportsNamedV5AndV4) {
  EXPECT_STREQ(s_v5->name, "scalefit");
  EXPECT_STREQ(s_v4->name, "scalefit");
  for (auto *fn :
       {reinterpret_cast<void *>(s_v5->init), reinterpret_cast<void *>(s_v5->startEvent),
        reinterpret_cast<void *>(s_v5->stopEvent), reinterpret_cast<void *>(s_v5->recordEventState),
        reinterpret_cast<void *>(s_v5->finalize)})
    EXPECT_NE(fn, nullptr);
}

TEST_F(NcclProfiler, MaskAsksForCollectivesOnly) {
  int mask = 0;
  const int logs = g_log_calls;
  void *ctx = init("scalefit-test-mask", &mask);
  EXPECT_EQ(mask, static_cast<int>(ncclProfileColl));
  EXPECT_EQ(g_log_calls, logs + 1) << "one INFO line through NCCL's logger at init";
  EXPECT_EQ(s_v5->finalize(ctx), 0);
  void *ctx4 = nullptr;
  int mask4 = -1;
  EXPECT_EQ(s_v4->init(&ctx4, &mask4, "scalefit-test-mask4", 0x99, 1, 2, 1, nullptr), 0);
  EXPECT_EQ(mask4, static_cast<int>(ncclProfileColl));
  EXPECT_EQ(s_v4->finalize(ctx4), 0);
}

TEST_F(NcclProfiler, RecordsTheCollectiveNcclAnnounced) {
  void *ctx = init("scalefit-test-1");
  EXPECT_FALSE(last_collective("scalefit-test-1")) << "nothing seen yet";
  start(ctx, coll_v5("AllReduce", "RING", "LL128", 4, 4096));
  EXPECT_EQ(s_v5->finalize(ctx), 0);

  const auto c = last_collective("scalefit-test-1"); // after finalize: the record outlives it
  ASSERT_TRUE(c);
  EXPECT_EQ(c->func, "AllReduce");
  EXPECT_EQ(c->algo, "RING");
  EXPECT_EQ(c->proto, "LL128");
  EXPECT_EQ(c->channels, 4);
  EXPECT_EQ(c->datatype, "ncclFloat32");
  EXPECT_EQ(c->count, 4096u);
  EXPECT_EQ(c->seen, 1u);
  EXPECT_EQ(choice_column(c, ProfilerStatus{}), "RING/LL128/4");
  EXPECT_FALSE(last_collective("scalefit-test-unknown"));
}

TEST_F(NcclProfiler, KeepsCommunicatorsApartAndKeepsTheLast) {
  void *a = init("scalefit-test-2a");
  void *b = init("scalefit-test-2b");
  start(a, coll_v5("ReduceScatter", "RING", "SIMPLE", 8));
  start(b, coll_v5("AllGather", "NVLS", "SIMPLE", 16));
  start(a, coll_v5("ReduceScatter", "PAT", "LL", 2)); // the last one counts
  const auto ca = last_collective("scalefit-test-2a");
  const auto cb = last_collective("scalefit-test-2b");
  ASSERT_TRUE(ca);
  ASSERT_TRUE(cb);
  EXPECT_EQ(ca->algo, "PAT");
  EXPECT_EQ(ca->proto, "LL");
  EXPECT_EQ(ca->channels, 2);
  EXPECT_EQ(ca->seen, 2u);
  EXPECT_EQ(cb->func, "AllGather");
  EXPECT_EQ(cb->algo, "NVLS");
  EXPECT_EQ(cb->channels, 16);
  EXPECT_EQ(cb->seen, 1u);

  reset_collectives("scalefit-test-2a");
  EXPECT_FALSE(last_collective("scalefit-test-2a"));
  EXPECT_TRUE(last_collective("scalefit-test-2b")) << "reset touches one communicator";
  start(a, coll_v5("ReduceScatter", "RING", "LL128", 4));
  ASSERT_TRUE(last_collective("scalefit-test-2a"));
  EXPECT_EQ(last_collective("scalefit-test-2a")->seen, 1u);
  EXPECT_EQ(s_v5->finalize(a), 0);
  EXPECT_EQ(s_v5->finalize(b), 0);
}

TEST_F(NcclProfiler, RefusesEveryOtherEventWithoutRecording) {
  void *ctx = init("scalefit-test-3");
  start(ctx, coll_v5("Broadcast", "RING", "SIMPLE", 3));
  for (std::uint64_t type :
       {std::uint64_t{ncclProfileGroup}, std::uint64_t{ncclProfileP2p},
        std::uint64_t{ncclProfileProxyOp}, std::uint64_t{ncclProfileProxyStep},
        std::uint64_t{ncclProfileProxyCtrl}, std::uint64_t{ncclProfileKernelCh},
        std::uint64_t{ncclProfileNetPlugin}, std::uint64_t{ncclProfileGroupApi},
        std::uint64_t{ncclProfileCollApi}, std::uint64_t{ncclProfileP2pApi},
        std::uint64_t{ncclProfileKernelLaunch}}) {
    // A descriptor whose bytes would read as another collective if the type were ignored.
    Descr_v5 d = coll_v5("AllReduce", "TREE", "LL", 9);
    d.type = type;
    void *handle = reinterpret_cast<void *>(0x1);
    EXPECT_EQ(s_v5->startEvent(ctx, &handle, &d), 0);
    EXPECT_EQ(handle, nullptr) << "type " << type;
  }
  // A collective-API event, with its own union member, as NCCL offers it before the task.
  Descr_v5 api{};
  api.type = ncclProfileCollApi;
  api.collApi.func = "AllReduce";
  api.collApi.count = 5;
  void *handle = nullptr;
  EXPECT_EQ(s_v5->startEvent(ctx, &handle, &api), 0);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(s_v5->recordEventState(nullptr, 24, nullptr), 0);

  const auto c = last_collective("scalefit-test-3");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->func, "Broadcast");
  EXPECT_EQ(c->algo, "RING");
  EXPECT_EQ(c->seen, 1u) << "only the collective counted";
  EXPECT_EQ(s_v5->finalize(ctx), 0);
}

TEST_F(NcclProfiler, V4LayoutAndUnnamedCommunicators) {
  void *ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(s_v4->init(&ctx, &mask, nullptr, 0x42, 1, 8, 3, nullptr), 0);
  Descr_v4 d{};
  d.type = ncclProfileColl;
  d.coll.func = "Reduce";
  d.coll.count = 77;
  d.coll.datatype = "ncclBfloat16";
  d.coll.nChannels = 5;
  d.coll.algo = "TREE";
  d.coll.proto = "LL128";
  void *handle = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(s_v4->startEvent(ctx, &handle, &d), 0);
  EXPECT_EQ(handle, nullptr);
  const auto c = last_collective(""); // no commName: the empty name
  ASSERT_TRUE(c);
  EXPECT_EQ(c->func, "Reduce");
  EXPECT_EQ(c->algo, "TREE");
  EXPECT_EQ(c->proto, "LL128");
  EXPECT_EQ(c->channels, 5);
  EXPECT_EQ(c->count, 77u);
  EXPECT_EQ(s_v4->finalize(ctx), 0);
}

TEST_F(NcclProfiler, LongNamesAreCutNotOverrun) {
  void *ctx = init("scalefit-test-4");
  const std::string longname(100, 'X');
  start(ctx, coll_v5(longname.c_str(), nullptr, "SIMPLE", 1));
  const auto c = last_collective("scalefit-test-4");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->func, std::string(31, 'X'));
  EXPECT_EQ(c->algo, "") << "a null name reads as empty";
  EXPECT_EQ(s_v5->finalize(ctx), 0);
}

TEST_F(NcclProfiler, ConcurrentEventsAreAllCounted) {
  // NCCL starts events from the launching thread or a CUDA host callback; counts must not tear.
  // (A missing lock shows here only sometimes; under ThreadSanitizer, always.)
  void *a = init("scalefit-test-5a");
  void *b = init("scalefit-test-5b");
  constexpr int n = 20000;
  std::latch go(3); // start together, so the threads overlap
  auto drive = [&go](void *ctx, const char *algo) {
    go.arrive_and_wait();
    for (int i = 0; i < n; ++i) {
      Descr_v5 d = coll_v5("AllReduce", algo, "LL", 1 + i % 32);
      void *h = nullptr;
      s_v5->startEvent(ctx, &h, &d);
    }
  };
  std::thread t1(drive, a, "RING"), t2(drive, a, "RING"), t3(drive, b, "TREE");
  t1.join();
  t2.join();
  t3.join();
  ASSERT_TRUE(last_collective("scalefit-test-5a"));
  ASSERT_TRUE(last_collective("scalefit-test-5b"));
  EXPECT_EQ(last_collective("scalefit-test-5a")->seen, 2u * n);
  EXPECT_EQ(last_collective("scalefit-test-5b")->seen, 1u * n);
  EXPECT_EQ(last_collective("scalefit-test-5b")->algo, "TREE");
  EXPECT_EQ(s_v5->finalize(a), 0);
  EXPECT_EQ(s_v5->finalize(b), 0);
}

TEST_F(NcclProfiler, ProbeFollowsTheUsersChoice) {
  const std::string ours = plugin_file();
  const ProfilerStatus loaded = detail::probe_profiler_plugin(ours, nullptr);
  EXPECT_EQ(loaded.source, ProfilerStatus::Source::scalefit) << loaded.detail;
  EXPECT_EQ(loaded.describe(), "scalefit plugin " + ours);
  EXPECT_TRUE(loaded.active());

  const ProfilerStatus theirs = detail::probe_profiler_plugin(ours, "inspector");
  EXPECT_EQ(theirs.source, ProfilerStatus::Source::user);
  EXPECT_EQ(theirs.describe(), "user plugin inspector");
  EXPECT_EQ(choice_column(std::nullopt, theirs), "unknown (user plugin inspector)");
  EXPECT_EQ(choice_column(std::nullopt, loaded), "unknown");

  EXPECT_EQ(detail::probe_profiler_plugin(ours, "").source, ProfilerStatus::Source::scalefit)
      << "an empty value is unset, for NCCL too";
  EXPECT_EQ(detail::probe_profiler_plugin(ours, ours.c_str()).source,
            ProfilerStatus::Source::scalefit)
      << "the user named ours";
  const ProfilerStatus none = detail::probe_profiler_plugin(ours, "None");
  EXPECT_EQ(none.source, ProfilerStatus::Source::absent);
  EXPECT_EQ(none.describe().rfind("absent: ", 0), 0u) << none.describe();

  const ProfilerStatus missing = detail::probe_profiler_plugin("/nonexistent/plugin", nullptr);
  EXPECT_EQ(missing.source, ProfilerStatus::Source::absent);
  EXPECT_NE(missing.detail.find("/nonexistent/plugin"), std::string::npos);

  const std::string text = ::testing::TempDir() + "scalefit-not-a-library";
  std::ofstream(text) << "not an ELF file\n";
  const ProfilerStatus junk = detail::probe_profiler_plugin(text, nullptr);
  EXPECT_EQ(junk.source, ProfilerStatus::Source::absent);
  EXPECT_NE(junk.detail.find("cannot load"), std::string::npos) << junk.detail;
  std::filesystem::remove(text);

  const std::string deep = "/" + std::string(300, 'd') + "/scalefit-nccl-profiler";
  const ProfilerStatus too_long = detail::probe_profiler_plugin(deep, nullptr);
  EXPECT_EQ(too_long.source, ProfilerStatus::Source::absent);
  EXPECT_NE(too_long.detail.find("254"), std::string::npos) << too_long.detail;
}

TEST_F(NcclProfiler, InstallSetsNcclProfilerPluginOnce) {
  const std::string ours = plugin_file();
  EXPECT_EQ(profiler_plugin_path(), std::filesystem::absolute(ours).string());
  unsetenv("NCCL_PROFILER_PLUGIN");
  const ProfilerStatus st = install_profiler_plugin(ours);
  ASSERT_EQ(st.source, ProfilerStatus::Source::scalefit) << st.describe();
  const char *env = std::getenv("NCCL_PROFILER_PLUGIN");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(std::string(env), ours);
  EXPECT_EQ(profiler_status().describe(), st.describe());
  // Latched: a second call with another path changes nothing.
  EXPECT_EQ(install_profiler_plugin("/elsewhere").describe(), st.describe());
  EXPECT_EQ(std::string(std::getenv("NCCL_PROFILER_PLUGIN")), ours);
}

TEST(NcclProfilerPath, NextToTheExecutableByDefault) {
  const char *saved = std::getenv("SCALEFIT_NCCL_PROFILER");
  const std::string keep = saved != nullptr ? saved : "";
  unsetenv("SCALEFIT_NCCL_PROFILER");
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  EXPECT_EQ(profiler_plugin_path(), (exe.parent_path() / "scalefit-nccl-profiler").string());
  setenv("SCALEFIT_NCCL_PROFILER", "rel/plugin", 1);
  EXPECT_EQ(profiler_plugin_path(), (std::filesystem::current_path() / "rel/plugin").string());
  if (saved != nullptr)
    setenv("SCALEFIT_NCCL_PROFILER", keep.c_str(), 1);
  else
    unsetenv("SCALEFIT_NCCL_PROFILER");
}

// --- The TUNING line
// ------------------------------------------------------------------------------

// NCCL 2.28.9's format, src/enqueue.cc:741, and its INFO prefix, src/debug.cc:349 and 363.
constexpr const char *k_tuning_format =
    "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}";

std::string tuning_line(const char *func, long bytes, const char *algo, const char *proto, int lo,
                        int hi, bool prefix = true) {
  char msg[512];
  std::snprintf(msg, sizeof msg, k_tuning_format, func, bytes, algo, proto, lo, hi);
  return prefix ? std::string("gpu-node-07:12345:12399 [3] NCCL INFO ") + msg + "\n"
                : std::string(msg);
}

TEST(NcclTuningLine, ParsesNcclsFormat) {
  const auto c = parse_nccl_tuning_line(tuning_line("AllReduce", 8388608, "RING", "LL128", 0, 31));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->func, "AllReduce");
  EXPECT_EQ(c->algo, "RING");
  EXPECT_EQ(c->proto, "LL128");
  EXPECT_EQ(c->channels, 32);
  EXPECT_EQ(c->bytes, 8388608u);
  EXPECT_EQ(c->seen, 1u);

  const auto d = parse_nccl_tuning_line(
      tuning_line("ReduceScatter", 4096, "NVLS_TREE", "SIMPLE", 5, 5, false));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->func, "ReduceScatter");
  EXPECT_EQ(d->algo, "NVLS_TREE");
  EXPECT_EQ(d->proto, "SIMPLE");
  EXPECT_EQ(d->channels, 1);

  // With NCCL_DEBUG_TIMESTAMP_FORMAT's default prefix.
  EXPECT_TRUE(parse_nccl_tuning_line("[2025-01-02 03:04:05] " +
                                     tuning_line("AllGather", 1, "PAT", "LL", 2, 3)));
}

TEST(NcclTuningLine, RejectsOtherLines) {
  EXPECT_FALSE(parse_nccl_tuning_line(""));
  EXPECT_FALSE(parse_nccl_tuning_line("host:1:2 [0] NCCL INFO Channel 00/32 : 0 1 2 3"));
  // The TRACE line of the same function (src/enqueue.cc:746).
  EXPECT_FALSE(parse_nccl_tuning_line(
      "host:1:2 [0] 1.0 enqueue.cc:746 NCCL TRACE Collective AllReduce(Sum, ncclFloat32, RING, "
      "LL128) count=1 devFuncId=3 channel{Lo..Hi}={0..1} count{Lo,Mid,Hi}={1,0,0} "
      "chunkBytes{Lo,Mid,Hi}={1,0,0}"));
  const std::string good = tuning_line("AllReduce", 64, "TREE", "LL", 0, 1, false);
  EXPECT_TRUE(parse_nccl_tuning_line(good));
  EXPECT_FALSE(parse_nccl_tuning_line(good.substr(0, good.size() - 1))) << "cut short";
  EXPECT_FALSE(parse_nccl_tuning_line(good + " extra"));
  EXPECT_FALSE(parse_nccl_tuning_line(tuning_line("AllReduce", 64, "TREE", "LL", 3, 1)))
      << "Hi < Lo";
  EXPECT_FALSE(parse_nccl_tuning_line(tuning_line("AllReduce", -1, "TREE", "LL", 0, 1)));
  EXPECT_FALSE(parse_nccl_tuning_line(tuning_line("AllReduce", 64, "", "LL", 0, 1)));
}

} // namespace
