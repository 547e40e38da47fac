/// \file nccl_profiler_abi.h
/// The contract between scalefit's NCCL profiler plugin (nccl_profiler_plugin.cpp, built as
/// bin/scalefit-nccl-profiler) and its reader in the bench library (nccl_profiler.cpp): a plain
/// C struct and three C functions the plugin exports, found by dlsym. Private to the bench: no
/// NCCL header is needed on either side. The symbol names carry the version, so a reader and a
/// plugin of different versions find nothing rather than misread each other.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Version of this contract; part of the exported symbol names below.
#define SCALEFIT_PROFILER_ABI_VERSION 1

/// Fixed capacity of each text field, terminator included (NCCL's names are at most 14 chars).
#define SCALEFIT_PROFILER_NAME_CAP 32

/// The last collective NCCL announced on one communicator (a ncclProfileColl event), copied out
/// of NCCL's event descriptor when the event started.
typedef struct {
  char func[SCALEFIT_PROFILER_NAME_CAP];     ///< "AllReduce", "AllGather", ... (ncclFuncToString)
  char algo[SCALEFIT_PROFILER_NAME_CAP];     ///< "RING", "TREE", "NVLS", ... (ncclAlgoToString)
  char proto[SCALEFIT_PROFILER_NAME_CAP];    ///< "LL", "LL128", "SIMPLE" (ncclProtoToString)
  char datatype[SCALEFIT_PROFILER_NAME_CAP]; ///< "ncclFloat32", ... (ncclDatatypeToString)
  uint64_t count;                            ///< elements per rank, as passed to the call
  uint64_t seen;    ///< collective events on this communicator name since init or reset
  int32_t channels; ///< channels (CTAs) NCCL planned for the collective (descriptor nChannels)
  int32_t n_warps;  ///< warps per CTA (descriptor nWarps)
} scalefit_profiler_choice_v1;

/// Copies the record of communicator `comm_name` (NCCL's ncclConfig_t::commName; "" for a
/// communicator created without one) into `*out`. Returns 1 when a communicator of that name was
/// initialized and has seen at least one collective, 0 otherwise (then `*out` is untouched).
typedef int (*scalefit_profiler_query_v1_fn)(const char *comm_name,
                                             scalefit_profiler_choice_v1 *out);
/// Forgets what was seen on `comm_name` (null: on every communicator); `seen` restarts at 0.
typedef void (*scalefit_profiler_reset_v1_fn)(const char *comm_name);
/// Number of ncclProfiler init calls minus finalize calls so far (live communicator contexts).
typedef int (*scalefit_profiler_live_v1_fn)(void);

#define SCALEFIT_PROFILER_QUERY_SYMBOL "scalefit_profiler_query_v1"
#define SCALEFIT_PROFILER_RESET_SYMBOL "scalefit_profiler_reset_v1"
#define SCALEFIT_PROFILER_LIVE_SYMBOL "scalefit_profiler_live_v1"

#ifdef __cplusplus
}
#endif
