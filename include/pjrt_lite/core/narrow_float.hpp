#pragma once
// The bit-level encoding of the narrow floating-point formats (f8, f6, f4), described by one
// parametrised format rather than a type per format. Each element is stored in one byte, in
// its low bits (the high bits are zero when written, ignored when read). The semantics follow
// ml_dtypes (what JAX uses): decoding is exact; encoding rounds to nearest even, and what
// happens to NaN, infinity, zero, negative values and overflow depends on the format's kind.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace pjrt_lite::inline v0_1 {

/// What a narrow float format does with special values.
enum class NarrowFloatKind : std::uint8_t {
  kIeee,        // IEEE-like: the all-ones exponent holds +-inf (mantissa 0) and NaNs
  kFiniteNan,   // "FN": no infinity; all-ones exponent and mantissa (S.1111.111) is NaN
  kFnuz,        // "FNUZ": no infinity, no negative zero; 0x80 is the one NaN
  kExponentOnly,// E8M0: unsigned, no zero, value 2^(e - 127); 0xFF is NaN
  kFiniteOnly,  // the MX f6/f4 formats: no infinity, no NaN
};

/// A narrow float format: exponent and mantissa widths, exponent bias and kind.
struct NarrowFloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  NarrowFloatKind kind;

  /// Bits per element: sign (none for E8M0), exponent, mantissa.
  [[nodiscard]] constexpr int bits() const {
    return (kind == NarrowFloatKind::kExponentOnly ? 0 : 1) + exponent_bits + mantissa_bits;
  }
  [[nodiscard]] constexpr std::uint32_t sign_bit() const {
    return kind == NarrowFloatKind::kExponentOnly ? 0u : 1u << (exponent_bits + mantissa_bits);
  }
  /// The pattern of the largest finite value.
  [[nodiscard]] constexpr std::uint32_t max_finite() const {
    const std::uint32_t exp_ones = (1u << exponent_bits) - 1, man_ones = (1u << mantissa_bits) - 1;
    switch (kind) {
      case NarrowFloatKind::kIeee: return ((exp_ones - 1) << mantissa_bits) | man_ones;
      case NarrowFloatKind::kFiniteNan: return (exp_ones << mantissa_bits) | (man_ones - 1);
      case NarrowFloatKind::kFnuz: return 0x7F;
      case NarrowFloatKind::kExponentOnly: return 0xFE;
      case NarrowFloatKind::kFiniteOnly: return (exp_ones << mantissa_bits) | man_ones;
    }
    return 0;
  }
};

namespace detail {

/// The pattern of a NaN of sign `negative`, as ml_dtypes writes one: IEEE formats a quiet
/// NaN (exponent all ones, top mantissa bit set), FN formats S.1..1, FNUZ 0x80, E8M0 0xFF.
/// The MX formats have no NaN; ml_dtypes gives them the sign-bit-only pattern (-0) for +NaN
/// and +0 for -NaN.
constexpr std::uint8_t narrow_nan(const NarrowFloatFormat& f, bool negative) {
  const std::uint32_t sign = negative ? f.sign_bit() : 0u;
  const std::uint32_t exp_ones = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
  switch (f.kind) {
    case NarrowFloatKind::kIeee:
      return static_cast<std::uint8_t>(sign | exp_ones | (1u << (f.mantissa_bits - 1)));
    case NarrowFloatKind::kFiniteNan:
      return static_cast<std::uint8_t>(sign | exp_ones | ((1u << f.mantissa_bits) - 1));
    case NarrowFloatKind::kFnuz: return 0x80;
    case NarrowFloatKind::kExponentOnly: return 0xFF;
    case NarrowFloatKind::kFiniteOnly: return static_cast<std::uint8_t>(negative ? 0u : f.sign_bit());
  }
  return 0;
}

/// What an infinity or a finite value too large for the format becomes: +-inf where there
/// is one, else NaN, except the MX formats, which saturate to +-max.
constexpr std::uint8_t narrow_overflow(const NarrowFloatFormat& f, bool negative) {
  const std::uint32_t sign = negative ? f.sign_bit() : 0u;
  switch (f.kind) {
    case NarrowFloatKind::kIeee:
      return static_cast<std::uint8_t>(sign | (((1u << f.exponent_bits) - 1) << f.mantissa_bits));
    case NarrowFloatKind::kFiniteOnly: return static_cast<std::uint8_t>(sign | f.max_finite());
    default: return narrow_nan(f, negative);
  }
}

}  // namespace detail

/// The value of the low f.bits() bits of `bits` in format f (exact in a float). A NaN keeps
/// the pattern's sign.
inline float decode_narrow_float(const NarrowFloatFormat& f, std::uint8_t bits) {
  const std::uint32_t b = bits & ((1u << f.bits()) - 1);
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.kind == NarrowFloatKind::kExponentOnly)
    return b == 0xFF ? nan : std::ldexp(1.0f, static_cast<int>(b) - f.bias);
  const bool negative = (b & f.sign_bit()) != 0;
  const std::uint32_t exp_ones = (1u << f.exponent_bits) - 1, man_ones = (1u << f.mantissa_bits) - 1;
  const std::uint32_t e = (b >> f.mantissa_bits) & exp_ones, m = b & man_ones;
  const float sign = negative ? -1.0f : 1.0f;
  if (f.kind == NarrowFloatKind::kIeee && e == exp_ones)
    return m == 0 ? sign * std::numeric_limits<float>::infinity() : std::copysign(nan, sign);
  if (f.kind == NarrowFloatKind::kFiniteNan && e == exp_ones && m == man_ones) return std::copysign(nan, sign);
  if (f.kind == NarrowFloatKind::kFnuz && b == 0x80) return -nan;
  // Subnormals (e == 0) have no implicit one and the exponent of e == 1.
  const auto significand = static_cast<float>(e == 0 ? m : (m | (1u << f.mantissa_bits)));
  const int exponent = (e == 0 ? 1 : static_cast<int>(e)) - f.bias - f.mantissa_bits;
  return sign * std::ldexp(significand, exponent);
}

/// `x` in format f, rounded to nearest even (the pattern in the low bits of the byte). Taking
/// a double lets f64 values round once; a float converts to it exactly. When `overflowed` is
/// given, it is set to whether a finite x rounded beyond the largest finite value.
inline std::uint8_t encode_narrow_float(const NarrowFloatFormat& f, double x, bool* overflowed = nullptr) {
  if (overflowed != nullptr) *overflowed = false;
  const bool negative = std::signbit(x);
  if (std::isnan(x)) return detail::narrow_nan(f, negative);
  if (std::isinf(x)) return detail::narrow_overflow(f, negative);
  const bool unsigned_format = f.kind == NarrowFloatKind::kExponentOnly;
  if (x == 0.0) {
    if (unsigned_format) return detail::narrow_nan(f, false);  // E8M0 has no zero
    return f.kind == NarrowFloatKind::kFnuz || !negative ? 0 : static_cast<std::uint8_t>(f.sign_bit());
  }
  if (unsigned_format && negative) return detail::narrow_nan(f, false);

  // |x| = significand * 2^(unbiased - 52) with the implicit one at bit 52.
  const std::uint64_t xb = std::bit_cast<std::uint64_t>(std::fabs(x));
  std::uint64_t significand = xb & ((std::uint64_t{1} << 52) - 1);
  int unbiased;
  if ((xb >> 52) != 0) {
    significand |= std::uint64_t{1} << 52;
    unbiased = static_cast<int>(xb >> 52) - 1023;
  } else {  // a subnormal double: normalise
    const int shift = std::countl_zero(significand) - 11;
    significand <<= shift;
    unbiased = -1022 - shift;
  }
  // The biased exponent minus one: the implicit one, kept in the shifted significand, adds
  // the one back when the two are summed, and a carry out of rounding moves up an exponent.
  // Below the normal range the significand shifts further right (a subnormal, or zero).
  const int biased_minus_one = unbiased + f.bias - 1;
  const int shift = std::min(52 - f.mantissa_bits + std::max(0, -biased_minus_one), 54);
  // Round to nearest even at bit `shift`: add half an ulp, minus one when the kept lsb is 0.
  const std::uint64_t kept_lsb = (significand >> shift) & 1;
  significand += kept_lsb + (std::uint64_t{1} << (shift - 1)) - 1;
  const std::uint64_t pattern =
      (significand >> shift) + (static_cast<std::uint64_t>(std::max(0, biased_minus_one)) << f.mantissa_bits);
  if (pattern > f.max_finite()) {
    if (overflowed != nullptr) *overflowed = true;
    return detail::narrow_overflow(f, negative);
  }
  if (!negative || unsigned_format) return static_cast<std::uint8_t>(pattern);
  if (f.kind == NarrowFloatKind::kFnuz && pattern == 0) return 0;  // no negative zero
  return static_cast<std::uint8_t>(pattern | f.sign_bit());
}

/// The value of the low `bits` bits of `b` as a narrow integer (two's complement when signed).
constexpr std::int64_t decode_narrow_int(std::uint8_t b, int bits, bool is_signed) {
  const auto v = static_cast<std::int64_t>(b & ((1u << bits) - 1));
  return is_signed && (v >> (bits - 1)) != 0 ? v - (std::int64_t{1} << bits) : v;
}

/// `v` wrapped to a `bits`-bit integer and stored as ml_dtypes stores one: a signed value
/// sign-extended through the byte (so the byte read as int8 is the value), an unsigned one
/// in the low bits.
constexpr std::uint8_t encode_narrow_int(std::int64_t v, int bits, bool is_signed) {
  const auto low = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) & ((1u << bits) - 1));
  return static_cast<std::uint8_t>(is_signed ? static_cast<std::uint64_t>(decode_narrow_int(low, bits, true))
                                             : low);
}

}  // namespace pjrt_lite
