// The --sweep GEMM shape grid (sweep.hpp documents the families).
#include "scalefit/kernels/sweep.hpp"

#include <cstdio>
#include <string>

namespace scalefit::kernels {

std::string_view sweep_grid_name(SweepGrid g) {
  return g == SweepGrid::full ? "full" : "small";
}

std::optional<SweepGrid> parse_sweep_grid(std::string_view name) {
  if (name == "small")
    return SweepGrid::small;
  if (name == "full")
    return SweepGrid::full;
  return std::nullopt;
}

namespace {

struct Grid {
  std::vector<KernelShape> out;
  void add(const char *family, std::int64_t m, std::int64_t n, std::int64_t k,
           std::int64_t batch = 1) {
    char name[96];
    if (batch > 1)
      std::snprintf(name, sizeof name, "%s.%lldx%lldx%lldx%lld", family, static_cast<long long>(m),
                    static_cast<long long>(n), static_cast<long long>(k),
                    static_cast<long long>(batch));
    else
      std::snprintf(name, sizeof name, "%s.%lldx%lldx%lld", family, static_cast<long long>(m),
                    static_cast<long long>(n), static_cast<long long>(k));
    KernelShape s;
    s.name = name;
    s.kind = batch > 1 ? KernelKind::batched_gemm : KernelKind::gemm;
    s.pass = Pass::fwd;
    s.m = m;
    s.n = n;
    s.k = k;
    s.batch = batch;
    s.per_layer = false;
    out.push_back(std::move(s));
  }
};

} // namespace

std::vector<KernelShape> sweep_shapes(SweepGrid grid) {
  Grid g;
  if (grid == SweepGrid::small) {
    for (std::int64_t x : {32, 64, 128, 256, 384})
      g.add("square", x, x, x);
    for (std::int64_t x : {127, 255})
      g.add("square_odd", x, x, x);
    for (std::int64_t m : {1, 8, 32})
      g.add("small_m", m, 256, 256);
    for (std::int64_t k : {8, 32})
      g.add("small_k", 256, 256, k);
    for (std::int64_t v : {50257, 50304})
      g.add("odd_n", 32, v, 64);
    g.add("tall", 512, 384, 128); // qkv-like: n = 3h, k = h (h = 128)
    g.add("tall", 512, 128, 512); // mlp down: k = 4h
    for (std::int64_t b : {8, 32})
      g.add("batched", 128, 128, 32, b);
    g.add("context", 128, 32, 128, 8);
    return g.out;
  }
  for (std::int64_t x : {256, 512, 1024, 2048, 4096, 8192, 16384})
    g.add("square", x, x, x);
  for (std::int64_t x : {1023, 2049, 4095, 8193})
    g.add("square_odd", x, x, x);
  for (std::int64_t m : {1, 8, 32, 128, 512, 2048})
    g.add("small_m", m, 8192, 8192);
  for (std::int64_t k : {16, 64, 256, 1024})
    g.add("small_k", 8192, 8192, k);
  for (std::int64_t m : {2048, 8192})
    for (std::int64_t k : {2048, 5120})
      for (std::int64_t v : {50257, 50304})
        g.add("odd_n", m, v, k);
  for (std::int64_t h : {2048, 5120, 8192}) { // GPT-1.3B, 13B, 175B-like hidden sizes, 8k tokens
    g.add("tall", 8192, 3 * h, h);
    g.add("tall", 8192, h, h);
    g.add("tall", 8192, 4 * h, h);
    g.add("tall", 8192, h, 4 * h);
  }
  for (std::int64_t b : {16, 64})
    for (std::int64_t s : {512, 2048})
      for (std::int64_t d : {64, 128})
        g.add("batched", s, s, d, b);
  for (std::int64_t s : {512, 2048})
    for (std::int64_t d : {64, 128})
      g.add("context", s, d, s, 64);
  return g.out;
}

} // namespace scalefit::kernels
