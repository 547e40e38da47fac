/// \file predict.hpp
/// CONTRACT between fitting/ and estimator/: how a fit file prices one collective.
/// fitting/ implements these; estimator/ calls them (through estimator's CommModel adaptor).
#pragma once

#include "scalefit/core/collectives.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace scalefit::fitting {

/// Which fitted curve to use: operation and group shape; dtype optional (any when unset).
struct CommQuery {
  Op op = Op::allreduce;
  int nranks = 1;                   ///< ranks in the communicator
  int nnodes = 1;                   ///< distinct nodes among them
  std::optional<DType> dtype;       ///< prefer entries of this dtype; any dtype when unset
  /// Prefer entries of this placement; out-of-place when unset (what a training step's
  /// collectives are: separate send and receive buffers).
  std::optional<Placement> placement;
  /// Only entries measured by this method ("osu_latency", ...; FitEntry::method). Empty: any,
  /// preferring a timed loop of the op (no method), then osu_latency (one message's time), then
  /// osu_bw, then osu_bibw and others.
  std::string method;
};

/// The fitted time of one message.
struct CommPrediction {
  double time_us = 0;               ///< predicted time per operation [us]
  double algbw_gbps = 0;            ///< bytes / time [GB/s]
  double busbw_gbps = 0;            ///< algbw * nccl-tests factor [GB/s]
  bool extrapolated = false;        ///< outside the measured size range, or a node count not measured
  std::string entry;                ///< id of the fit-file entry used (for "priced by" reports)
  std::string note;                 ///< how it was obtained (e.g. "scaling trend from 2,4 nodes")
};

class FitFile;  // defined in fit_file.hpp

/// A loaded fit file, shareable between estimator evaluations.
using FitFilePtr = std::shared_ptr<const FitFile>;

/// Loads and validates a fit file. \throws InputError naming the file, entry and field.
FitFilePtr load_fit_file(const std::string &path);

/// The node counts of the fit file's entries for `op` on `nranks` ranks, ascending and distinct
/// (empty when there is none). `predict --nranks N` without `--nnodes` uses the one count when
/// there is exactly one.
std::vector<int> entry_nnodes(const FitFile &fit, Op op, int nranks);

/// Prices `bytes` [B] for the query, or std::nullopt when the file has no entry for that op and
/// group shape (and no scaling trend reaches it).
std::optional<CommPrediction> predict(const FitFile &fit, const CommQuery &query, double bytes);

}  // namespace scalefit::fitting
