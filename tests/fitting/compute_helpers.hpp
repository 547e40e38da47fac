/// \file compute_helpers.hpp
/// Helpers shared by the compute-fit tests (test_compute.cpp, test_compute_h200.cpp).
#pragma once

#include "scalefit/fitting/compute.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace scalefit::fitting::test {

/// Sum over a model's per-layer GEMM and batched-GEMM records: measured and predicted [us].
inline std::pair<double, double> layer_gemm_totals(const ComputeSection &c, const std::string &file,
                                                   bool logits) {
  double meas = 0, pred = 0;
  for (const KernelPoint &p : read_kernel_points(file)) {
    if (p.kind != KernelKind::gemm && p.kind != KernelKind::batched_gemm)
      continue;
    if ((p.name.rfind("logits", 0) == 0) != logits)
      continue;
    const ComputeFit *f = c.find(p.dtype, p.kind);
    EXPECT_NE(f, nullptr);
    meas += p.time_us;
    pred += f->predict_us(p);
  }
  return {meas, pred};
}

} // namespace scalefit::fitting::test
