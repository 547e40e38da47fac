/// \file checkdata.hpp
/// Data for correctness checks (-c): inputs that are small integers, so every sum, product, max
/// and min the collectives compute is exact in every type (fp16 holds integers up to 2048, bf16
/// up to 256, int8 up to 127); the expected values are computed from the same formula, so an
/// element is right only when it is bit-for-bit the exact result. (OSU's -c compares values that
/// are not exact in the type and fails spuriously; see STYLE.md.)
#pragma once

#include "scalefit/core/collectives.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace scalefit::bench {

/// Rank r's input element at index i (of its whole send buffer) is base + (r + i) % period.
struct CheckPattern {
  int base = 0;   ///< smallest input value
  int period = 8; ///< number of distinct input values: 1, 2, 4 or 8 (a power of two)
  /// reduced[i % period]: the inputs at index i reduced over all ranks (check_pattern fills it).
  std::vector<double> reduced;
  /// The input value of `rank` at element index `i`.
  double input(int rank, std::size_t i) const {
    return base + static_cast<double>((static_cast<std::size_t>(rank) + i) &
                                      static_cast<std::size_t>(period - 1));
  }
};

/// Largest integer every value of the type represents exactly and the range check uses:
/// half 2048, bfloat16 256, int8/uint8 127, others 2^24 (enough for any realistic rank count).
double exact_integer_limit(DType t);

/// The pattern for a reduction over `nranks` ranks that stays exact in `t`:
/// sum/avg: base 0, period the largest power of two <= min(8, limit / nranks + 1);
/// prod: values 1 and 2 while 2^nranks <= limit, else all 1; max/min: base 0, period 8.
/// Fills `reduced` with reduce_inputs for each residue; for avg on an integer type, with
/// trunc(sum / nranks), as NCCL computes it (ncclAvg on integers is the sum, then an integer
/// division by nranks: SumPostDiv; the inputs are >= 0, so trunc = floor).
CheckPattern check_pattern(DType t, RedOp r, int nranks);

/// Whether `t` is an integer type (int8, uint8, int32, uint32, int64, uint64).
bool is_integer_type(DType t);

/// Reduces over ranks 0..nranks-1 the inputs at element index i (exactly, in double), by
/// brute force. avg is sum / nranks.
double reduce_inputs(const CheckPattern &p, RedOp r, int nranks, std::size_t i);

/// Writes `value` (an integer exact in the type) as element `index` of a buffer of type `t`.
void store_value(DType t, void *buffer, std::size_t index, double value);
/// Reads element `index` of a buffer of type `t` as a double (exact for every element type
/// except 64-bit integers beyond 2^53).
double load_value(DType t, const void *buffer, std::size_t index);

/// Fills `count` elements with rank `rank`'s inputs for indices first_index, first_index+1, ...
void fill_inputs(DType t, void *buffer, std::size_t count, const CheckPattern &p, int rank,
                 std::size_t first_index = 0);

/// IEEE binary16 bits of a float (round to nearest even); bfloat16 bits likewise.
std::uint16_t float_to_half_bits(float f);
/// The float value of IEEE binary16 bits (exact: every half is a float).
float half_bits_to_float(std::uint16_t h);
/// bfloat16 bits of a float: the upper 16 bits, rounded to nearest even.
std::uint16_t float_to_bf16_bits(float f);
/// The float value of bfloat16 bits (exact).
float bf16_bits_to_float(std::uint16_t h);

} // namespace scalefit::bench
