/// \file fill.hpp
/// The counter-based uniform generator both engines fill their operands with: value i of stream
/// `seed` is a pure function of (seed, i), so a GPU kernel and a host loop (any thread split)
/// produce identical inputs, with no generator state and no host-to-device traffic.
/// Header usable from C++ and CUDA (__host__ __device__ under nvcc).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SCALEFIT_HD __host__ __device__
#else
#define SCALEFIT_HD
#endif

namespace scalefit::kernels {

/// SplitMix64's finalizer (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number
/// generators"; the mixing constants of java.util.SplittableRandom) applied to seed * golden
/// ratio + i. \returns a 64-bit hash, equidistributed over counters.
SCALEFIT_HD inline std::uint64_t splitmix64(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform value in [0, 1) from the top 24 bits of splitmix64(seed, i): exactly representable in
/// fp32 (24-bit mantissa).
SCALEFIT_HD inline float uniform_hash_value(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(splitmix64(seed, i) >> 40) * (1.0f / 16777216.0f);
}

} // namespace scalefit::kernels

#undef SCALEFIT_HD
