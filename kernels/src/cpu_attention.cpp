// Causal attention on the CPU: the naive double reference (forward, backward) and the fused
// FlashAttention-style tiled kernels (online softmax; backward recomputes the scores).
#include "scalefit/kernels/attention.hpp"

#include "scalefit/kernels/engine.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

namespace scalefit::kernels {

namespace {

template <class T> using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using CMap = Eigen::Map<const RowMat<T>>;
template <class T> using MMap = Eigen::Map<RowMat<T>>;

constexpr std::int64_t kTile = 64; // query and key tile rows (Br = Bc)

/// Masks a score tile in place: entry (r, c) is query i0 + r against key j0 + c.
template <class T> void mask_tile(RowMat<T> &st, std::int64_t i0, std::int64_t j0) {
  const T ninf = -std::numeric_limits<T>::infinity();
  for (std::int64_t r = 0; r < st.rows(); ++r)
    for (std::int64_t c = std::max<std::int64_t>(0, i0 + r + 1 - j0); c < st.cols(); ++c)
      st(r, c) = ninf;
}

/// Scores of one head (s x s, scaled, -inf above the diagonal when causal), in double.
std::vector<double> naive_scores(const double *q, const double *k, std::int64_t s, std::int64_t d,
                                 double scale, bool causal) {
  std::vector<double> sc(static_cast<std::size_t>(s * s));
  for (std::int64_t i = 0; i < s; ++i)
    for (std::int64_t j = 0; j < s; ++j) {
      double acc = 0.0;
      for (std::int64_t p = 0; p < d; ++p)
        acc += q[i * d + p] * k[j * d + p];
      sc[static_cast<std::size_t>(i * s + j)] =
          causal && j > i ? -std::numeric_limits<double>::infinity() : acc * scale;
    }
  return sc;
}

} // namespace

std::vector<double> naive_attention(std::span<const double> q, std::span<const double> k,
                                    std::span<const double> v, std::int64_t batch, std::int64_t s,
                                    std::int64_t d, double scale, bool causal) {
  std::vector<double> out(static_cast<std::size_t>(batch * s * d), 0.0);
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    const double *qb = q.data() + bi * s * d, *kb = k.data() + bi * s * d,
                 *vb = v.data() + bi * s * d;
    const std::vector<double> p = naive_softmax(naive_scores(qb, kb, s, d, scale, causal), s, s);
    for (std::int64_t i = 0; i < s; ++i)
      for (std::int64_t j = 0; j < d; ++j) {
        double acc = 0.0;
        for (std::int64_t t = 0; t < s; ++t)
          acc += p[static_cast<std::size_t>(i * s + t)] * vb[t * d + j];
        out[static_cast<std::size_t>(bi * s * d + i * d + j)] = acc;
      }
  }
  return out;
}

std::vector<double> naive_attention_backward(std::span<const double> q, std::span<const double> k,
                                             std::span<const double> v,
                                             std::span<const double> dout, std::int64_t batch,
                                             std::int64_t s, std::int64_t d, double scale,
                                             bool causal) {
  const std::size_t n = static_cast<std::size_t>(batch * s * d);
  std::vector<double> grads(3 * n, 0.0);
  double *dq = grads.data(), *dk = grads.data() + n, *dv = grads.data() + 2 * n;
  std::vector<double> dp(static_cast<std::size_t>(s * s));
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    const std::int64_t off = bi * s * d;
    const double *qb = q.data() + off, *kb = k.data() + off, *vb = v.data() + off,
                 *gb = dout.data() + off;
    const std::vector<double> p = naive_softmax(naive_scores(qb, kb, s, d, scale, causal), s, s);
    auto P = [&](std::int64_t i, std::int64_t j) { return p[static_cast<std::size_t>(i * s + j)]; };
    for (std::int64_t i = 0; i < s; ++i)
      for (std::int64_t j = 0; j < s; ++j) {
        double acc = 0.0;
        for (std::int64_t t = 0; t < d; ++t)
          acc += gb[i * d + t] * vb[j * d + t];
        dp[static_cast<std::size_t>(i * s + j)] = acc;
      }
    for (std::int64_t i = 0; i < s; ++i) { // dS = P o (dP - sum_j P dP), in place in dp
      double row = 0.0;
      for (std::int64_t j = 0; j < s; ++j)
        row += P(i, j) * dp[static_cast<std::size_t>(i * s + j)];
      for (std::int64_t j = 0; j < s; ++j)
        dp[static_cast<std::size_t>(i * s + j)] =
            P(i, j) * (dp[static_cast<std::size_t>(i * s + j)] - row);
    }
    for (std::int64_t i = 0; i < s; ++i)
      for (std::int64_t t = 0; t < d; ++t) {
        double aq = 0.0, ak = 0.0, av = 0.0;
        for (std::int64_t j = 0; j < s; ++j) {
          aq += dp[static_cast<std::size_t>(i * s + j)] * kb[j * d + t];
          ak += dp[static_cast<std::size_t>(j * s + i)] * qb[j * d + t];
          av += P(j, i) * gb[j * d + t];
        }
        dq[off + i * d + t] = scale * aq;
        dk[off + i * d + t] = scale * ak;
        dv[off + i * d + t] = av;
      }
  }
  return grads;
}

template <class T>
void cpu_flash_attention_forward(const T *q, const T *k, const T *v, T *out, T *lse,
                                 std::int64_t batch, std::int64_t s, std::int64_t d, T scale,
                                 bool causal) {
  const std::int64_t tiles = (s + kTile - 1) / kTile;
  const T ninf = -std::numeric_limits<T>::infinity();
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic) if (batch * tiles > 1)
#endif
  for (std::int64_t job = 0; job < batch * tiles; ++job) {
    const std::int64_t bi = job / tiles, i0 = (job % tiles) * kTile,
                       br = std::min(kTile, s - i0), off = bi * s * d;
    const CMap<T> qi(q + off + i0 * d, br, d);
    RowMat<T> acc = RowMat<T>::Zero(br, d), st(br, kTile);
    Eigen::Array<T, Eigen::Dynamic, 1> m = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(br, ninf),
                                       l = Eigen::Array<T, Eigen::Dynamic, 1>::Zero(br);
    const std::int64_t kv_end = causal ? i0 + br : s;
    for (std::int64_t j0 = 0; j0 < kv_end; j0 += kTile) {
      const std::int64_t bc = std::min(kTile, s - j0);
      const CMap<T> kj(k + off + j0 * d, bc, d), vj(v + off + j0 * d, bc, d);
      st.resize(br, bc);
      st.noalias() = (qi * kj.transpose()) * scale;
      if (causal && j0 + bc > i0 + 1)
        mask_tile(st, i0, j0);
      for (std::int64_t r = 0; r < br; ++r) {
        const T mnew = std::max(m(r), st.row(r).maxCoeff()); // finite: key j0 <= query i0 + r
        const T corr = std::exp(m(r) - mnew);                 // exp(-inf) = 0 on the first tile
        st.row(r) = (st.row(r).array() - mnew).exp().matrix();
        l(r) = l(r) * corr + st.row(r).sum();
        acc.row(r) *= corr;
        m(r) = mnew;
      }
      acc.noalias() += st * vj;
    }
    MMap<T> o(out + off + i0 * d, br, d);
    for (std::int64_t r = 0; r < br; ++r) {
      o.row(r) = acc.row(r) / l(r);
      lse[bi * s + i0 + r] = m(r) + std::log(l(r));
    }
  }
}

template <class T>
void cpu_flash_attention_backward(const T *q, const T *k, const T *v, const T *out, const T *lse,
                                  const T *dout, T *dq, T *dk, T *dv, std::int64_t batch,
                                  std::int64_t s, std::int64_t d, T scale, bool causal) {
  // One head per thread (dQ accumulates over key tiles without atomics); FA2's loop order:
  // key/value tiles outside, query tiles inside.
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic) if (batch > 1)
#endif
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    const std::int64_t off = bi * s * d;
    const CMap<T> Q(q + off, s, d), K(k + off, s, d), V(v + off, s, d), O(out + off, s, d),
        dO(dout + off, s, d);
    MMap<T> dQ(dq + off, s, d), dK(dk + off, s, d), dV(dv + off, s, d);
    dQ.setZero();
    dK.setZero();
    dV.setZero();
    // D_i = rowsum(dO o O) = sum_j P_ij dP_ij.
    const Eigen::Matrix<T, Eigen::Dynamic, 1> D = (dO.array() * O.array()).rowwise().sum();
    RowMat<T> st, dp;
    for (std::int64_t j0 = 0; j0 < s; j0 += kTile) {
      const std::int64_t bc = std::min(kTile, s - j0);
      const auto kj = K.middleRows(j0, bc), vj = V.middleRows(j0, bc);
      auto dkj = dK.middleRows(j0, bc);
      auto dvj = dV.middleRows(j0, bc);
      for (std::int64_t i0 = causal ? (j0 / kTile) * kTile : 0; i0 < s; i0 += kTile) {
        const std::int64_t br = std::min(kTile, s - i0);
        const auto qi = Q.middleRows(i0, br), doi = dO.middleRows(i0, br);
        st.resize(br, bc);
        st.noalias() = (qi * kj.transpose()) * scale; // S, recomputed
        if (causal && j0 + bc > i0 + 1)
          mask_tile(st, i0, j0);
        for (std::int64_t r = 0; r < br; ++r) // P = exp(S - lse); masked entries give 0
          st.row(r) = (st.row(r).array() - lse[bi * s + i0 + r]).exp().matrix();
        dvj.noalias() += st.transpose() * doi;
        dp.resize(br, bc);
        dp.noalias() = doi * vj.transpose();
        for (std::int64_t r = 0; r < br; ++r) // dS = P o (dP - D)
          dp.row(r) = (st.row(r).array() * (dp.row(r).array() - D(i0 + r))).matrix();
        dQ.middleRows(i0, br).noalias() += (dp * kj) * scale;
        dkj.noalias() += (dp.transpose() * qi) * scale;
      }
    }
  }
}

template void cpu_flash_attention_forward<float>(const float *, const float *, const float *,
                                                 float *, float *, std::int64_t, std::int64_t,
                                                 std::int64_t, float, bool);
template void cpu_flash_attention_forward<double>(const double *, const double *, const double *,
                                                  double *, double *, std::int64_t, std::int64_t,
                                                  std::int64_t, double, bool);
template void cpu_flash_attention_backward<float>(const float *, const float *, const float *,
                                                  const float *, const float *, const float *,
                                                  float *, float *, float *, std::int64_t,
                                                  std::int64_t, std::int64_t, float, bool);
template void cpu_flash_attention_backward<double>(const double *, const double *, const double *,
                                                   const double *, const double *, const double *,
                                                   double *, double *, double *, std::int64_t,
                                                   std::int64_t, std::int64_t, double, bool);

} // namespace scalefit::kernels
