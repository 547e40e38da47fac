/// \file nccl_profiler.hpp
/// Which algorithm and protocol NCCL chose, per collective: the reader of scalefit's NCCL
/// profiler plugin (bin/scalefit-nccl-profiler, built from src/nccl_profiler_plugin.cpp), and a
/// parser of the line NCCL prints instead when asked (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING).
///
/// NCCL (2.23 and later) loads one profiler plugin per process, named by NCCL_PROFILER_PLUGIN
/// (a path, or NAME for libnccl-profiler-NAME.so), at the first communicator's init, and calls
/// its init with each communicator's ncclConfig_t::commName; it then announces every collective
/// with a ncclProfileColl event that carries the function, count, datatype, algorithm, protocol
/// and channel count (NCCL's ext-profiler/README.md; src/plugin/profiler.cc,
/// ncclProfilerStartTaskEvents). scalefit's plugin keeps, per communicator name, the last such
/// event and a count. Plain C++: no NCCL or CUDA header, so the CPU build tests it all.
///
/// Usage (the nccl backend, on every rank): install_profiler_plugin() before the first
/// ncclCommInitRank of the process; give each communicator a unique commName through
/// ncclConfig_t (ncclCommInitRankConfig, ncclCommSplit; NCCL keeps the pointer, so the string must
/// live as long as the communicator, and a split given no config inherits its parent's name);
/// after a point's timed operations and a stream synchronize, last_collective(name).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace scalefit::bench {

/// File name of the plugin, next to the scalefit-bench executable. No ".so": it is a shared
/// library, found by this exact path, and the GPU bundle copies bin/'s executables but no *.so*.
inline constexpr const char *k_profiler_plugin_file = "scalefit-nccl-profiler";

/// What NCCL chose for one collective.
struct CollChoice {
  std::string func;        ///< NCCL's function name: "AllReduce", "AllGather", "ReduceScatter", ...
  std::string algo;        ///< "RING", "TREE", "NVLS", "NVLS_TREE", "COLLNET_DIRECT", "PAT", ...
  std::string proto;       ///< "LL", "LL128", "SIMPLE"
  int channels = 0;        ///< channels (one CTA each) NCCL gave the collective
  std::string datatype;    ///< NCCL's name ("ncclFloat32"); "" from a tuning line
  std::uint64_t count = 0; ///< elements per rank as passed to NCCL; 0 from a tuning line
  std::uint64_t bytes = 0; ///< tuning line: NCCL's "Bytes" (count × element size) [B]; else 0
  std::uint64_t seen = 0;  ///< collectives seen on the communicator since init or reset (≥ 1)
};

/// Where the plugin is: $SCALEFIT_NCCL_PROFILER when set and non-empty (made absolute), else
/// k_profiler_plugin_file in the directory of /proc/self/exe. "" when /proc/self/exe cannot be
/// read. The file may not exist; install_profiler_plugin() checks.
std::string profiler_plugin_path();

/// Which profiler plugin NCCL will load in this process, as the context field `nccl_profiler`.
struct ProfilerStatus {
  enum class Source {
    scalefit, ///< ours: last_collective() reads it
    user,     ///< the user's NCCL_PROFILER_PLUGIN: NCCL loads theirs (one plugin per process)
    absent    ///< none of ours: could not be loaded, disabled, or not installed
  };
  Source source = Source::absent;
  std::string detail = "not installed"; ///< scalefit: the path; user: their value; else why

  /// True when last_collective() can answer.
  bool active() const { return source == Source::scalefit; }
  /// "scalefit plugin PATH", "user plugin NAME" or "absent: REASON".
  std::string describe() const;
};

/// Makes NCCL load scalefit's plugin: unless NCCL_PROFILER_PLUGIN is already set (then the
/// user's choice stands, Source::user; "none" gives Source::absent; their value naming this very
/// file gives Source::scalefit), dlopens `path` (RTLD_NOW) to check that it loads and exports
/// ncclProfiler_v5 and the query functions, keeps it loaded for the process's life (so what it
/// recorded survives NCCL unloading it with the last communicator), and sets
/// NCCL_PROFILER_PLUGIN to `path`. Must run before the process's first ncclCommInitRank*: NCCL
/// reads the variable when a communicator initializes and remembers a failed load. A value in
/// nccl.conf does not count as set (NCCL's conf file never overrides the environment, so ours
/// wins). Never throws: every failure is Source::absent with the reason (dlerror() text, a
/// missing file, a path of 255 characters or more, which NCCL's 255-byte name buffer truncates:
/// src/plugin/plugin_open.cc). Idempotent: later calls return the first call's status.
ProfilerStatus install_profiler_plugin(const std::string &path = profiler_plugin_path());

namespace detail {
/// install_profiler_plugin()'s decision, given NCCL_PROFILER_PLUGIN's value
/// (`nccl_profiler_plugin`, null when unset), without its side effects: the plugin is opened to
/// check it and closed again; nothing is latched and the environment is not touched.
ProfilerStatus probe_profiler_plugin(const std::string &path, const char *nccl_profiler_plugin);
} // namespace detail

/// The status install_profiler_plugin() returned; Source::absent "not installed" before.
ProfilerStatus profiler_status();

/// The last collective NCCL announced on the communicator named `comm_name` ("" for those created
/// without a name; communicators sharing a name share a record), read from the plugin NCCL
/// loaded. nullopt when the plugin is not loaded in this process (install_profiler_plugin() not
/// called or failed, or the user's plugin loaded instead), no communicator of that name was
/// initialized, or it has seen no collective since init or reset_collectives(). NCCL runs
/// alltoall, gather, scatter and send/recv as point-to-point tasks, a single-rank communicator as
/// a copy, and symmetric-memory copy-engine collectives without kernels: none of them announces a
/// collective, so they leave the record as it was. The record outlives the communicator.
std::optional<CollChoice> last_collective(const std::string &comm_name);

/// Forgets what the communicator `comm_name` has seen (its `seen` restarts at 0), so that the next
/// last_collective() reports only collectives issued after this call. No-op when not loaded.
void reset_collectives(const std::string &comm_name);

/// reset_collectives() for every communicator.
void reset_all_collectives();

/// Parses the line NCCL 2.28 logs on rank 0 of a communicator for each collective it plans when
/// NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS includes TUNING, from src/enqueue.cc (v2.28.9-1, lines
/// 741-743, in scheduleCollTasksToPlan):
///   INFO(NCCL_TUNING, "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}", func, bytes,
///        algo, proto, channelLo, channelHi)
/// with or without NCCL's prefix ("host:pid:tid [dev] NCCL INFO ", optionally after a
/// timestamp). channels = Hi − Lo + 1, bytes = NCCL's Bytes, seen = 1. nullopt for any other line.
/// A fallback where the plugin cannot be used: logging each collective costs a formatted write per
/// operation, so it must not run inside timed loops.
std::optional<CollChoice> parse_nccl_tuning_line(std::string_view line);

/// The table column: "ALGO/PROTO/CHANNELS" (e.g. "RING/LL128/4") for a choice; without one,
/// "unknown (user plugin NAME)" when the user's plugin is loaded, else "unknown".
std::string choice_column(const std::optional<CollChoice> &choice, const ProfilerStatus &status);

} // namespace scalefit::bench
