// Spec-derived alpha-beta communication curves and Megatron group placement.
#include "scalefit/estimator/comm_model.hpp"

#include "scalefit/core/error.hpp"

#include <algorithm>

namespace scalefit::estimator {

CommGroup group_shape(int nranks, int stride, int gpus_per_node) {
  CommGroup g;
  if (nranks <= 1) // no communicator: one rank on one node (most layouts' CP, EP, PP groups)
    return g;
  g.nranks = nranks;
  stride = std::max(1, stride);
  if (stride >= gpus_per_node) {
    g.ranks_per_node = 1;
  } else {
    g.ranks_per_node = std::max(1, std::min(g.nranks, gpus_per_node / stride));
  }
  g.nnodes = (g.nranks + g.ranks_per_node - 1) / g.ranks_per_node;
  return g;
}

SpecCommModel::SpecCommModel(const SystemConfig &system)
    : m_intra(system.intra), m_inter(system.inter), m_gpus_per_node(system.gpus_per_node) {}

CommPrice SpecCommModel::price(Op op, const CommGroup &g, double bytes) const {
  CommPrice p;
  if (g.nranks <= 1 || bytes <= 0)
    return p;
  const double factor = op == Op::sendrecv ? 1.0 : busbw_factor(op, g.nranks);
  const double intra_gbps = m_intra.bandwidth_gbps * m_intra.efficiency;
  double bw_gbps = intra_gbps;
  double latency_us = m_intra.latency_us;
  if (g.nnodes > 1 && (op == Op::alltoall || op == Op::alltoallv)) {
    // All-to-all: every rank's data is its own, so nothing is shared on the way. The part of a
    // rank's send buffer bound for other nodes, (n - rpn) / n, leaves through the rank's share
    // of its node's NICs (the node's NICs over its GPUs: the concurrent groups of the same shape
    // take the rest); the part for its own node goes over NVLink at the same time. (A ring
    // AllGather, in contrast, brings each byte into a node once for all its ranks: the node's
    // NICs together, below.)
    p.source = 1;
    const double n = g.nranks, rpn = g.ranks_per_node;
    const double nic_share_gbps = m_inter.bandwidth_gbps * m_inter.efficiency / m_gpus_per_node;
    const double t_inter = bytes * (n - rpn) / n / (nic_share_gbps * 1e3);
    const double t_intra = bytes * (rpn - 1) / n / (intra_gbps * 1e3);
    p.time_us = m_inter.latency_us + std::max(t_inter, t_intra);
    return p;
  }
  if (g.nnodes > 1) {
    p.source = 1;
    latency_us = m_inter.latency_us;
    bw_gbps = m_inter.bandwidth_gbps * m_inter.efficiency * g.ranks_per_node / m_gpus_per_node;
    if (g.ranks_per_node > 1)
      bw_gbps = std::min(bw_gbps, intra_gbps);
  }
  p.time_us = latency_us + bytes * factor / (bw_gbps * 1e3); // GB/s = 1e3 B/us
  return p;
}

std::string SpecCommModel::source_name(int source) const {
  return source == 1 ? "spec:inter" : "spec:intra";
}

#ifdef SCALEFIT_ESTIMATOR_NO_FIT
bool fit_support_available() {
  return false;
}
std::shared_ptr<const CommModel> make_fit_comm_model(const std::string &fit_path,
                                                     std::shared_ptr<const CommModel>, DType,
                                                     AlltoallMatrix) {
  throw InputError("this scalefit was built without scalefit::fitting; cannot price by a fit file",
                   fit_path, 0, "--fit");
}
#endif

}  // namespace scalefit::estimator
