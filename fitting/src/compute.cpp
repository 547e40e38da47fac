// Compute fits: the tiled-wave GEMM model and the memory-bound and attention rates, fitted by
// weighted linear least squares (Eigen, column-pivoting QR) on relative error; leave-one-out.
#include "scalefit/fitting/compute.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"
#include "scalefit/core/jsonl.hpp"
#include "scalefit/core/validate.hpp"

#include "compute_detail.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>

namespace scalefit::fitting {
namespace {

using detail::canonical_dtype;
using detail::element_bytes;
using detail::is_gemm;
using detail::point_groups;

/// Output tiles cuBLAS uses for large GEMMs on Ampere/Hopper (CUTLASS's 128x128 and 128x256
/// threadblock tiles); the model takes whichever predicts the shorter time.
constexpr std::array<std::array<double, 2>, 2> kTiles{{{128, 128}, {128, 256}}};

/// True when a leading dimension is not a multiple of 16 bytes of elements: no TMA and no
/// vectorized loads, so cuBLAS falls back to slower kernels (cuBLAS docs, "Tensor Core usage":
/// leading dimensions multiples of 16 bytes). The GEMM is row-major, C (m x n) = A (m x k) B
/// (k x n), launched as the column-major C^T = B^T A^T (kernels/src/cublas_engine.cpp): the
/// leading dimensions are n, k and n, never m. So an odd m (a token count, a GEMV's 1) keeps the
/// aligned path. Fractional sizes (the estimator's average tokens per expert) are rounded first.
/// (Until 2026-11-28 an odd m counted too: the H200 sweep's m = 1 GEMV, memory-bound, then set
/// the odd rate and the all-odd and odd-n shapes came out 30-80% fast; docs/fit-file.md.)
bool odd_shape(const std::string &dtype, double /*m*/, double n, double k) {
  const double per = 16 / element_bytes(dtype);
  auto odd = [&](double x) { return std::fmod(std::round(x), per) != 0; };
  return odd(n) || odd(k);
}

/// The two GEMM features of a tile choice: W*sms*Tm*Tn*2*k and W*sms*Tm*Tn*2 [MFLOP].
std::array<double, 2> gemm_features(double m, double n, double k, double batch, int sms,
                                    const std::array<double, 2> &tile) {
  const double tiles = std::ceil(m / tile[0]) * std::ceil(n / tile[1]) * batch;
  const double waves = std::max(1.0, tiles / sms);
  const double per = waves * sms * tile[0] * tile[1] * 2 * 1e-6;
  return {per * k, per};
}

/// The grouped form: per group (m, n, k); tiles of every group share the waves, a tile's work is
/// its group's k. Equal groups give gemm_features exactly.
std::array<double, 2> grouped_features(const std::vector<std::array<double, 3>> &groups, int sms,
                                       const std::array<double, 2> &tile) {
  double tiles = 0, tile_k = 0;
  for (const auto &g : groups) {
    const double t = std::ceil(g[0] / tile[0]) * std::ceil(g[1] / tile[1]);
    tiles += t;
    tile_k += t * g[2];
  }
  if (!(tiles > 0))
    return {0, 0};
  const double waves = std::max(1.0, tiles / sms);
  const double per = waves * sms / tiles * tile[0] * tile[1] * 2 * 1e-6; // per tile, filled
  return {per * tile_k, per * tiles};
}

/// GEMM features of a point (grouped points with unequal groups through grouped_features, or
/// summed over the groups when they ran one GEMM each).
std::array<double, 2> point_features(const KernelPoint &p, int sms,
                                     const std::array<double, 2> &tile) {
  if (!p.group_tokens.empty() && p.per_group) {
    std::array<double, 2> x{0, 0};
    for (const auto &g : point_groups(p)) {
      const auto one = gemm_features(g[0], g[1], g[2], 1, sms, tile);
      x[0] += one[0];
      x[1] += one[1];
    }
    return x;
  }
  if (!p.group_tokens.empty())
    return grouped_features(point_groups(p), sms, tile);
  return gemm_features(p.m, p.n, p.k, p.batch, sms, tile);
}

/// The model's one input for non-GEMM kinds: bytes (memory-bound) or FLOPs (attention).
double flat_x(const KernelPoint &p) {
  return p.kind == KernelKind::attention_fused ? p.flops * 1e-6 : p.bytes * 1e-3;
}

/// Weighted least squares with non-negative coefficients by elimination: solves, drops the most
/// negative column, solves again. Columns that are all zero stay 0.
Eigen::VectorXd solve_nonneg(const Eigen::MatrixXd &A, const Eigen::VectorXd &y) {
  const Eigen::Index n = A.cols();
  std::vector<bool> active(n);
  for (Eigen::Index j = 0; j < n; ++j)
    active[j] = A.col(j).cwiseAbs().maxCoeff() > 0;
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(n);
  for (int round = 0; round < n; ++round) {
    std::vector<Eigen::Index> cols;
    for (Eigen::Index j = 0; j < n; ++j)
      if (active[j])
        cols.push_back(j);
    if (cols.empty())
      break;
    Eigen::MatrixXd B(A.rows(), static_cast<Eigen::Index>(cols.size()));
    for (std::size_t c = 0; c < cols.size(); ++c)
      B.col(static_cast<Eigen::Index>(c)) = A.col(cols[c]);
    const Eigen::VectorXd x = B.colPivHouseholderQr().solve(y);
    theta.setZero();
    Eigen::Index worst = -1;
    double worst_v = 0;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      theta[cols[c]] = x[static_cast<Eigen::Index>(c)];
      if (x[static_cast<Eigen::Index>(c)] < worst_v) {
        worst_v = x[static_cast<Eigen::Index>(c)];
        worst = cols[c];
      }
    }
    if (worst < 0)
      return theta;
    active[worst] = false;
  }
  return theta.cwiseMax(0.0);
}

ComputeFit fit_once(const std::vector<KernelPoint> &pts, int sms) {
  ComputeFit f;
  f.kind = pts.front().kind;
  f.dtype = pts.front().dtype;
  f.sms = sms;
  const Eigen::Index n = static_cast<Eigen::Index>(pts.size());
  if (!is_gemm(f.kind)) {
    // t = c0 + x / rate; c0 only when the points span more than one size.
    double lo = flat_x(pts.front()), hi = lo;
    for (const auto &p : pts) {
      lo = std::min(lo, flat_x(p));
      hi = std::max(hi, flat_x(p));
    }
    Eigen::MatrixXd A(n, 2);
    Eigen::VectorXd y = Eigen::VectorXd::Ones(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const KernelPoint &p = pts[static_cast<std::size_t>(i)];
      A(i, 0) = hi > 1.2 * lo ? 1.0 / p.time_us : 0.0;
      A(i, 1) = flat_x(p) / p.time_us;
    }
    const Eigen::VectorXd th = solve_nonneg(A, y);
    if (!(th[1] > 0))
      throw InputError("no positive rate fits the " + std::string(kernel_kind_name(f.kind)) +
                       " points");
    f.c0_us = th[0];
    (f.kind == KernelKind::attention_fused ? f.tflops : f.gbps) = 1.0 / th[1];
    return f;
  }
  // GEMM kinds: columns c0, 1/R, k0/R, 1/R_odd, k0_odd/R_odd; tiles to a fixed point.
  std::vector<int> tile(pts.size(), 0);
  Eigen::VectorXd th = Eigen::VectorXd::Zero(5);
  for (int iter = 0; iter < 8; ++iter) {
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, 5);
    Eigen::VectorXd y = Eigen::VectorXd::Ones(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const KernelPoint &p = pts[static_cast<std::size_t>(i)];
      const auto x = point_features(p, sms, kTiles[static_cast<std::size_t>(tile[i])]);
      const int c = odd_shape(p.dtype, p.m, p.n, p.k) ? 3 : 1;
      // Kernel launches of the point: one, or one per group when its groups ran in turn.
      A(i, 0) = (p.per_group && !p.group_tokens.empty() ? static_cast<double>(p.group_tokens.size())
                                                        : 1.0) /
                p.time_us;
      A(i, c) = x[0] / p.time_us;
      A(i, c + 1) = x[1] / p.time_us;
    }
    th = solve_nonneg(A, y);
    bool changed = false;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const KernelPoint &p = pts[i];
      const int c = odd_shape(p.dtype, p.m, p.n, p.k) ? 3 : 1;
      int best = 0;
      double best_t = 0;
      for (std::size_t t = 0; t < kTiles.size(); ++t) {
        const auto x = point_features(p, sms, kTiles[t]);
        const double tt = th[c] * x[0] + th[c + 1] * x[1];
        if (t == 0 || tt < best_t) {
          best_t = tt;
          best = static_cast<int>(t);
        }
      }
      changed |= best != tile[i];
      tile[i] = best;
    }
    if (!changed)
      break;
  }
  if (!(th[1] > 0) && !(th[3] > 0))
    throw InputError("no positive GEMM rate fits the points");
  f.c0_us = th[0];
  if (th[1] > 0) {
    f.tflops = 1.0 / th[1];
    f.k0 = th[2] / th[1];
  }
  if (th[3] > 0) {
    f.tflops_odd = 1.0 / th[3];
    f.k0_odd = th[4] / th[3];
  }
  if (!(f.tflops > 0)) { // only odd shapes measured: they set both
    f.tflops = f.tflops_odd;
    f.k0 = f.k0_odd;
  }
  return f;
}

void quality_in_sample(ComputeFit &f, const std::vector<KernelPoint> &pts) {
  f.quality.points = static_cast<int>(pts.size());
  double sum = 0, mx = 0;
  for (const auto &p : pts) {
    f.repeats.add(p.repeat_time_us);
    const double e = std::abs(f.predict_us(p) / p.time_us - 1) * 100;
    sum += e;
    mx = std::max(mx, e);
  }
  f.quality.mape_pct = sum / pts.size();
  f.quality.max_err_pct = mx;
}

std::size_t min_points(const std::vector<KernelPoint> &pts) {
  if (!is_gemm(pts.front().kind))
    return 1;
  bool odd = false, even = false;
  for (const auto &p : pts)
    (odd_shape(p.dtype, p.m, p.n, p.k) ? odd : even) = true;
  return odd && even ? 5 : 3;
}

} // namespace

const char *kernel_kind_name(KernelKind k) {
  switch (k) {
  case KernelKind::gemm:
    return "gemm";
  case KernelKind::batched_gemm:
    return "batched_gemm";
  case KernelKind::softmax:
    return "softmax";
  case KernelKind::memory:
    return "memory";
  case KernelKind::attention_fused:
    return "attention_fused";
  case KernelKind::grouped_gemm:
    return "grouped_gemm";
  }
  return "?";
}

std::optional<KernelKind> parse_kernel_kind(const std::string &name) {
  for (KernelKind k : {KernelKind::gemm, KernelKind::batched_gemm, KernelKind::softmax,
                       KernelKind::memory, KernelKind::attention_fused, KernelKind::grouped_gemm})
    if (name == kernel_kind_name(k))
      return k;
  if (name == "flash_attention" || name == "attention")
    return KernelKind::attention_fused;
  if (name == "elementwise" || name == "copy" || name == "memory_bound")
    return KernelKind::memory; // streaming kernels: their `bytes` field, else 2 m n batch
  return std::nullopt;
}

double ComputeFit::gemm_us(double m, double n, double k, double batch) const noexcept {
  const bool odd = tflops_odd > 0 && odd_shape(dtype, m, n, k);
  const double r = odd ? tflops_odd : tflops, kk = odd ? k0_odd : k0;
  double best = 0;
  for (std::size_t t = 0; t < kTiles.size(); ++t) {
    const auto x = gemm_features(m, n, k, batch, sms, kTiles[t]);
    const double v = (x[0] + kk * x[1]) / r;
    if (t == 0 || v < best)
      best = v;
  }
  return c0_us + best;
}

double ComputeFit::grouped_us(const std::vector<std::array<double, 3>> &groups) const noexcept {
  bool odd = false;
  for (const auto &g : groups)
    odd |= tflops_odd > 0 && odd_shape(dtype, g[0], g[1], g[2]);
  const double r = odd ? tflops_odd : tflops, kk = odd ? k0_odd : k0;
  double best = 0;
  for (std::size_t t = 0; t < kTiles.size(); ++t) {
    const auto x = grouped_features(groups, sms, kTiles[t]);
    const double v = (x[0] + kk * x[1]) / r;
    if (t == 0 || v < best)
      best = v;
  }
  return c0_us + best;
}

double ComputeFit::per_group_us(const std::vector<std::array<double, 3>> &groups) const noexcept {
  double t = 0;
  for (const auto &g : groups)
    t += gemm_us(g[0], g[1], g[2], 1);
  return t;
}

double ComputeFit::memory_us(double bytes) const noexcept {
  return c0_us + bytes * 1e-3 / gbps;
}

double ComputeFit::flops_us(double flops) const noexcept {
  return c0_us + flops * 1e-6 / tflops;
}

double ComputeFit::predict_us(const KernelPoint &p) const noexcept {
  if (is_gemm(kind) && !p.group_tokens.empty())
    return p.per_group ? per_group_us(point_groups(p)) : grouped_us(point_groups(p));
  if (is_gemm(kind))
    return gemm_us(p.m, p.n, p.k, p.batch);
  return kind == KernelKind::attention_fused ? flops_us(p.flops) : memory_us(p.bytes);
}

const ComputeFit *ComputeSection::find(const std::string &dtype, KernelKind kind) const {
  const std::string d = canonical_dtype(dtype);
  for (const ComputeFit &f : fits)
    if (f.kind == kind && f.dtype == d)
      return &f;
  for (const ComputeFit &f : fits)
    if (f.kind == kind && f.dtype == "any")
      return &f;
  return nullptr;
}

int device_sms(const std::string &device) {
  // NVIDIA H100 (SXM5) and H200 whitepapers: 132 SMs; A100: 108 SMs. H100 PCIe has 114.
  if (device.find("H100") != std::string::npos && device.find("PCIe") != std::string::npos)
    return 114;
  if (device.find("H100") != std::string::npos || device.find("H200") != std::string::npos)
    return 132;
  if (device.find("A100") != std::string::npos)
    return 108;
  return 1;
}

ComputeFit fit_compute(const std::vector<KernelPoint> &points, int sms, bool loo) {
  if (points.empty() || points.size() < min_points(points))
    throw InputError(fmt::format("{} points of {} {}: too few to fit (need {})", points.size(),
                                 points.empty() ? "" : points.front().dtype,
                                 points.empty() ? "" : kernel_kind_name(points.front().kind),
                                 points.empty() ? 1 : min_points(points)));
  ComputeFit f = fit_once(points, sms);
  quality_in_sample(f, points);
  if (loo && points.size() > min_points(points)) {
    // Leave one shape out: every point of the held-out shape goes (a layer's forward GEMM and
    // another's data gradient are often the same (m, n, k); keeping the twin would leak it).
    const auto same_shape = [](const KernelPoint &a, const KernelPoint &b) {
      return a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch && a.bytes == b.bytes &&
             a.flops == b.flops && a.group_tokens == b.group_tokens;
    };
    double sum = 0, mx = 0;
    int n = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      std::vector<KernelPoint> rest;
      for (std::size_t j = 0; j < points.size(); ++j)
        if (!same_shape(points[j], points[i]))
          rest.push_back(points[j]);
      if (rest.empty() || rest.size() < min_points(rest)) // every point one shape: nothing left
        continue;
      try {
        const ComputeFit g = fit_once(rest, sms);
        const double e = std::abs(g.predict_us(points[i]) / points[i].time_us - 1) * 100;
        sum += e;
        mx = std::max(mx, e);
        ++n;
      } catch (const InputError &) {
      }
    }
    if (n > 0) {
      f.quality.loo_mape_pct = sum / n;
      f.quality.loo_max_err_pct = mx;
    }
  }
  return f;
}

ComputeSection fit_compute_section(const std::vector<KernelPoint> &points,
                                   const std::string &device, const std::string &files, bool loo) {
  ComputeSection c;
  c.device = device;
  const int sms = device_sms(device);
  std::map<std::pair<std::string, int>, std::vector<KernelPoint>> groups;
  for (const KernelPoint &p : points)
    groups[{p.dtype, static_cast<int>(p.kind)}].push_back(p);
  for (const auto &[key, pts] : groups) {
    ComputeFit f = fit_compute(pts, sms, loo);
    f.source = files;
    c.fits.push_back(f);
    // The memory-bound rate of the estimator's elementwise kernels: the softmax's, unless
    // memory-bound kernels or copies were measured themselves.
    if (f.kind == KernelKind::softmax &&
        !groups.count({key.first, static_cast<int>(KernelKind::memory)}) &&
        !groups.count({"any", static_cast<int>(KernelKind::memory)})) {
      ComputeFit m = f;
      m.kind = KernelKind::memory;
      m.source = "softmax points of " + files;
      m.repeats = {}; // the softmax fit's: counted there, not twice
      c.fits.push_back(m);
    }
  }
  return c;
}

std::string compute_table(const ComputeSection &c) {
  if (c.fits.empty())
    return {};
  std::string o = fmt::format("compute fits on {} ({} SMs):\n", c.device.empty() ? "?" : c.device,
                              device_sms(c.device));
  o += fmt::format("{:<16} {:<5} {:>6} {:>8} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7} {:>7}\n", "kind",
                   "dtype", "points", "c0_us", "TFLOP/s", "k0", "odd_TF/s", "k0_odd", "GB/s",
                   "MAPE%", "LOO%");
  for (const ComputeFit &f : c.fits)
    o += fmt::format(
        "{:<16} {:<5} {:>6} {:>8.2f} {:>9.1f} {:>7.1f} {:>9.1f} {:>7.1f} {:>9.0f} {:>7.2f} {:>7}\n",
        kernel_kind_name(f.kind), f.dtype, f.quality.points, f.c0_us, f.tflops, f.k0, f.tflops_odd,
        f.k0_odd, f.gbps, f.quality.mape_pct,
        f.quality.loo_mape_pct < 0 ? std::string("-") : fmt::format("{:.2f}", f.quality.loo_mape_pct));
  return o;
}

} // namespace scalefit::fitting
