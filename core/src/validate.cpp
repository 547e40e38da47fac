#include "scalefit/core/validate.hpp"

#include "scalefit/core/error.hpp"

#include <fmt/format.h>

#include <cmath>

namespace scalefit {
namespace {

/// Length of the well-formed UTF-8 sequence starting at text[i], or 0 when it is not one.
std::size_t utf8_sequence(std::string_view text, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80)
    return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

bool Bounds::contains(double v) const noexcept {
  if (!std::isfinite(v)) return false;
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

std::string Bounds::text() const {
  return fmt::format("{}{:g}, {:g}{}", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
}

double require_in(double v, const Bounds &b, const std::string &field, const std::string &file,
                  long line) {
  if (!b.contains(v))
    throw InputError(fmt::format("expected a finite number in {}, got {:g}", b.text(), v), file, line,
                     field);
  return v;
}

std::int64_t require_int_in(std::int64_t v, std::int64_t lo, std::int64_t hi,
                            const std::string &field, const std::string &file, long line) {
  if (v < lo || v > hi)
    throw InputError(fmt::format("expected an integer in [{}, {}], got {}", lo, hi, v), file, line,
                     field);
  return v;
}

bool is_valid_utf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void require_utf8(std::string_view text, const std::string &file) {
  long line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0)
      throw InputError(fmt::format("byte 0x{:02X} at column {} is not UTF-8 (a Latin-1 name?); "
                                   "save the file as UTF-8",
                                   static_cast<unsigned char>(text[i]), i - line_start + 1),
                       file, line);
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
    i += n;
  }
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace scalefit
