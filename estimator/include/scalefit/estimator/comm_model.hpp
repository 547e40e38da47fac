/// \file comm_model.hpp
/// How the estimator prices one communication message: a CommModel maps (operation, group shape,
/// bytes) to a time. The default prices every message from the system's spec-derived alpha-beta
/// tiers; with a fit file (`--fit`), fitted curves price the ops and group shapes they cover and
/// the spec tiers the rest, and each price says which source priced it.
#pragma once

#include "scalefit/core/collectives.hpp"
#include "scalefit/estimator/config.hpp"

#include <memory>
#include <string>

namespace scalefit::estimator {

/// A communicator's shape under Megatron placement (TP innermost, then DP, then PP).
struct CommGroup {
  int nranks = 1;         ///< ranks in the communicator
  int nnodes = 1;         ///< distinct nodes among them
  int ranks_per_node = 1; ///< ranks of this communicator on each of its nodes
};

/// Shape of a group of `nranks` ranks whose members are `stride` ranks apart in a rank order
/// filled node by node with `gpus_per_node` ranks per node (ranks r0, r0+stride, ...).
CommGroup group_shape(int nranks, int stride, int gpus_per_node);

/// The price of one operation.
struct CommPrice {
  double time_us = 0;        ///< time of one operation [us]
  int source = 0;            ///< id of what priced it; CommModel::source_name(source)
  bool extrapolated = false; ///< a fit used outside its measured range or node counts
};

/// Prices communication. Implementations must not allocate in price() once warmed up for a
/// given (op, group) (search and the benchmark rely on it); not thread-safe.
class CommModel {
public:
  virtual ~CommModel() = default;
  /// Time of one `op` moving `bytes` [B] (nccl-tests' size: the whole array) on group `g`.
  virtual CommPrice price(Op op, const CommGroup &g, double bytes) const = 0;
  /// Human-readable name of a price source ("spec:intra", "fit:allreduce n=8 (1x8)", ...).
  virtual std::string source_name(int source) const = 0;
  /// Whether a source id is a measured fit (rather than the spec tiers).
  virtual bool source_is_fit(int source) const = 0;
};

/// The spec-derived curves (Calculon's network model, papers README): time = latency +
/// bytes * busbw_factor(op, n) / (bandwidth * efficiency). A group inside one node uses the
/// intra tier (P2P bandwidth per GPU); a group across nodes shares its node's NICs with the
/// other groups of the same shape running at the same time, so it gets
/// NIC bandwidth * ranks_per_node / gpus_per_node (and no more than the intra tier when
/// ranks_per_node > 1). SendRecv uses factor 1. AllToAll(v) across nodes is the exception: each
/// rank's data is its own, so the (n - ranks_per_node) / n of a rank's buffer bound for other
/// nodes leaves through the rank's share of the NICs, NIC bandwidth / gpus_per_node (so an
/// all-to-all's busbw across nodes is of the order of one NIC's rate, not the node's), while the
/// rest goes over the intra tier at the same time. Sources: 0 "spec:intra", 1 "spec:inter".
class SpecCommModel final : public CommModel {
public:
  /// \param system the tiers and GPUs per node are copied.
  explicit SpecCommModel(const SystemConfig &system);
  CommPrice price(Op op, const CommGroup &g, double bytes) const override;
  std::string source_name(int source) const override;
  bool source_is_fit(int) const override { return false; }

private:
  CommTier m_intra, m_inter;
  int m_gpus_per_node;
};

/// Whether this build links scalefit::fitting (so `--fit` works).
bool fit_support_available();

/// The measured AllToAllv count matrix that prices MoE token dispatch/combine (bench/README.md,
/// `--alltoallv-matrix`): `uniform` (every peer the same count: balanced routing, alltoall's
/// traffic) or `skewed` (Zipf-popular experts per source rank: per-pair skew as a trained router
/// leaves it, every rank receiving the same total).
enum class AlltoallMatrix { uniform, skewed };

/// A CommModel that asks the fit file first (fitting/predict.hpp) for each (op, nranks, nnodes,
/// dtype) and falls back to `spec` where the file has no entry. Each (op, group) curve is
/// tabulated once (4 points per octave from 1 B to 2^44 B, log-log interpolation) so that
/// price() is cheap and allocation-free afterwards. Op::alltoall (the estimator's MoE
/// dispatch/combine) is priced by the file's alltoallv curve of `matrix` when it has one (skewed
/// falls back to uniform), else its alltoall curve, else the spec.
/// \throws InputError when the file is bad, or when the build has no fitting support.
std::shared_ptr<const CommModel> make_fit_comm_model(const std::string &fit_path,
                                                     std::shared_ptr<const CommModel> spec,
                                                     DType dtype,
                                                     AlltoallMatrix matrix = AlltoallMatrix::uniform);

}  // namespace scalefit::estimator
