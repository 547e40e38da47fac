// Check data: small-integer inputs exact in every type, and typed load/store.
#include "scalefit/bench/checkdata.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace scalefit::bench {

double exact_integer_limit(DType t) {
  switch (t) {
  case DType::half:
    return 2048;
  case DType::bfloat16:
    return 256;
  case DType::int8:
  case DType::uint8:
    return 127;
  default:
    return 16777216; // 2^24: float's exact integers
  }
}

CheckPattern check_pattern(DType t, RedOp r, int nranks) {
  CheckPattern p;
  const double limit = exact_integer_limit(t);
  const int n = std::max(1, nranks);
  switch (r) {
  case RedOp::sum:
  case RedOp::avg:
    p.base = 0;
    p.period = static_cast<int>(std::clamp(std::floor(limit / n) + 1, 1.0, 8.0));
    while (p.period & (p.period - 1))
      --p.period; // a power of two: input() masks
    break;
  case RedOp::prod:
    p.base = 1;
    p.period = (n < 63 && std::ldexp(1.0, n) <= limit) ? 2 : 1;
    break;
  case RedOp::max:
  case RedOp::min:
    p.base = 0;
    p.period = 8;
    break;
  }
  p.reduced.resize(static_cast<std::size_t>(p.period));
  for (int i = 0; i < p.period; ++i)
    p.reduced[static_cast<std::size_t>(i)] = reduce_inputs(p, r, n, static_cast<std::size_t>(i));
  if (r == RedOp::avg && is_integer_type(t))
    for (double &v : p.reduced)
      v = std::trunc(v); // NCCL's integer avg: the sum divided by nranks in the type (SumPostDiv)
  return p;
}

bool is_integer_type(DType t) {
  switch (t) {
  case DType::int8:
  case DType::uint8:
  case DType::int32:
  case DType::uint32:
  case DType::int64:
  case DType::uint64:
    return true;
  default:
    return false;
  }
}

double reduce_inputs(const CheckPattern &p, RedOp r, int nranks, std::size_t i) {
  double acc = p.input(0, i);
  for (int k = 1; k < nranks; ++k) {
    const double v = p.input(k, i);
    switch (r) {
    case RedOp::sum:
    case RedOp::avg:
      acc += v;
      break;
    case RedOp::prod:
      acc *= v;
      break;
    case RedOp::max:
      acc = std::max(acc, v);
      break;
    case RedOp::min:
      acc = std::min(acc, v);
      break;
    }
  }
  return r == RedOp::avg ? acc / nranks : acc;
}

std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u)
    return static_cast<std::uint16_t>(sign | 0x7c00u); // overflow to inf
  if (absx < 0x38800000u) {                            // subnormal half or zero
    if (absx < 0x33000000u)
      return static_cast<std::uint16_t>(sign);
    const std::uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(absx >> 23); // 14 + (113 - exp)
    std::uint32_t h = mant >> (shift);
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u)))
      ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = ((absx >> 23) - 112) << 10 | ((absx >> 13) & 0x3ffu);
  const std::uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31)
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

float bf16_bits_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

namespace {

template <class T> void put(void *b, std::size_t i, T v) {
  static_cast<T *>(b)[i] = v;
}
template <class T> T get(const void *b, std::size_t i) {
  return static_cast<const T *>(b)[i];
}

} // namespace

void store_value(DType t, void *b, std::size_t i, double v) {
  switch (t) {
  case DType::int8:
    put<std::int8_t>(b, i, static_cast<std::int8_t>(v));
    break;
  case DType::uint8:
    put<std::uint8_t>(b, i, static_cast<std::uint8_t>(v));
    break;
  case DType::int32:
    put<std::int32_t>(b, i, static_cast<std::int32_t>(v));
    break;
  case DType::uint32:
    put<std::uint32_t>(b, i, static_cast<std::uint32_t>(v));
    break;
  case DType::int64:
    put<std::int64_t>(b, i, static_cast<std::int64_t>(v));
    break;
  case DType::uint64:
    put<std::uint64_t>(b, i, static_cast<std::uint64_t>(v));
    break;
  case DType::half:
    put<std::uint16_t>(b, i, float_to_half_bits(static_cast<float>(v)));
    break;
  case DType::bfloat16:
    put<std::uint16_t>(b, i, float_to_bf16_bits(static_cast<float>(v)));
    break;
  case DType::float32:
    put<float>(b, i, static_cast<float>(v));
    break;
  case DType::float64:
    put<double>(b, i, v);
    break;
  }
}

double load_value(DType t, const void *b, std::size_t i) {
  switch (t) {
  case DType::int8:
    return get<std::int8_t>(b, i);
  case DType::uint8:
    return get<std::uint8_t>(b, i);
  case DType::int32:
    return get<std::int32_t>(b, i);
  case DType::uint32:
    return get<std::uint32_t>(b, i);
  case DType::int64:
    return static_cast<double>(get<std::int64_t>(b, i));
  case DType::uint64:
    return static_cast<double>(get<std::uint64_t>(b, i));
  case DType::half:
    return half_bits_to_float(get<std::uint16_t>(b, i));
  case DType::bfloat16:
    return bf16_bits_to_float(get<std::uint16_t>(b, i));
  case DType::float32:
    return get<float>(b, i);
  case DType::float64:
    return get<double>(b, i);
  }
  return 0;
}

void fill_inputs(DType t, void *buffer, std::size_t count, const CheckPattern &p, int rank,
                 std::size_t first_index) {
  // The values repeat with the period: encode them once, then copy element bytes.
  const std::size_t esize = dtype_size(t);
  const auto period = static_cast<std::size_t>(p.period);
  std::vector<unsigned char> encoded(esize * period);
  for (std::size_t k = 0; k < period; ++k)
    store_value(t, encoded.data(), k, p.base + static_cast<double>(k));
  auto *out = static_cast<unsigned char *>(buffer);
  const std::size_t phase0 = (static_cast<std::size_t>(rank) + first_index) % period;
  // Write one whole period of elements, then copy it forward in doubling chunks (memcpy speed).
  const std::size_t head = std::min(count, period);
  for (std::size_t i = 0; i < head; ++i)
    std::memcpy(out + i * esize, encoded.data() + ((phase0 + i) % period) * esize, esize);
  for (std::size_t done = head; done < count;) {
    const std::size_t chunk = std::min(done - done % period, count - done);
    std::memcpy(out + done * esize, out, chunk * esize);
    done += chunk;
  }
}

} // namespace scalefit::bench
