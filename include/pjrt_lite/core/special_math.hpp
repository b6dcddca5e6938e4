#pragma once
// The special functions of CHLO's element-wise ops that the C library lacks (erf_inv,
// digamma, bessel_i1e), and next_after on every floating-point element type. Each backend
// computes these ops in double through the functions here and rounds once to the element
// type, so the backends agree with each other bit for bit.

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

namespace pjrt_lite::inline v0_1::special {

// The C library's functions on double, as single functions whose addresses can be taken.
inline double acosh(double x) { return std::acosh(x); }
inline double asin(double x) { return std::asin(x); }
inline double asinh(double x) { return std::asinh(x); }
inline double atan(double x) { return std::atan(x); }
inline double atanh(double x) { return std::atanh(x); }
inline double erf(double x) { return std::erf(x); }
inline double erfc(double x) { return std::erfc(x); }
/// log |Gamma(x)|. glibc's std::lgamma writes the sign of Gamma(x) to the global `signgam`, a
/// data race when kernels run on several threads; its reentrant form returns the sign through
/// a local instead.
inline double lgamma(double x) {
#if defined(__GLIBC__)
  int sign = 0;
  return ::lgamma_r(x, &sign);
#else
  return std::lgamma(x);
#endif
}

// The complex forms of acosh .. sinh: the C library's principal branches on complex<double>.
inline std::complex<double> acosh(std::complex<double> z) { return std::acosh(z); }
inline std::complex<double> asin(std::complex<double> z) { return std::asin(z); }
inline std::complex<double> asinh(std::complex<double> z) { return std::asinh(z); }
inline std::complex<double> atan(std::complex<double> z) { return std::atan(z); }
inline std::complex<double> atanh(std::complex<double> z) { return std::atanh(z); }
inline std::complex<double> cosh(std::complex<double> z) { return std::cosh(z); }
inline std::complex<double> sinh(std::complex<double> z) { return std::sinh(z); }

/// F at z computed in complex<double> and rounded to z's type T (complex<float> or
/// complex<double>), so that every backend agrees bit for bit.
template <std::complex<double> (*F)(std::complex<double>), class T>
T in_complex_double(T z) {
  const std::complex<double> r = F(std::complex<double>(z.real(), z.imag()));
  using R = typename T::value_type;
  return T(static_cast<R>(r.real()), static_cast<R>(r.imag()));
}

/// F at x computed in double and rounded to x's type T (f16, bf16, float or double). The
/// half types go through float, which holds every double result's f16/bf16 rounding but one
/// in 2^29 ties.
template <double (*F)(double), class T>
T in_double(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(F(static_cast<double>(x)));
  } else {
    return static_cast<T>(static_cast<float>(F(static_cast<double>(static_cast<float>(x)))));
  }
}

/// cosh and sinh as CHLO defines them, so that results agree with other StableHLO consumers
/// bit for bit or nearly: in double, the C library's; in float and the half types (computed
/// in float), CHLO's decomposition e^(x + log 1/2) ± e^(-x + log 1/2), whose rounding of the
/// exponent costs a few ulp at large |x| against the exact value, and for sinh at |x| < 1,
/// where that difference would cancel, the exact value rounded to the element type.
template <class T>
T cosh(T x) {
  if constexpr (std::is_same_v<T, double>) {
    return std::cosh(x);
  } else {
    const float f = static_cast<float>(x), log_half = -std::numbers::ln2_v<float>;
    return static_cast<T>(std::exp(f + log_half) + std::exp(-f + log_half));
  }
}
template <class T>
T sinh(T x) {
  if constexpr (std::is_same_v<T, double>) {
    return std::sinh(x);
  } else {
    const float f = static_cast<float>(x), log_half = -std::numbers::ln2_v<float>;
    if (std::fabs(f) < 1) return static_cast<T>(static_cast<float>(std::sinh(double{f})));
    return static_cast<T>(std::exp(f + log_half) - std::exp(-f + log_half));
  }
}

/// The inverse of erf on [-1, 1]: ±inf at ±1, NaN outside.
inline double erf_inv(double y) {
  if (std::isnan(y) || std::fabs(y) > 1) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(y) == 1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  const double a = std::fabs(y);
  // erf(x) = 2x/sqrt(pi) (1 - x^2/3 + ...): below 1e-9 the cubic term is under double's ulp.
  if (a < 1e-9) return y * std::sqrt(std::numbers::pi) / 2;
  // Winitzki's closed-form approximation (relative error about 2e-3) as the start, then
  // Newton steps on erf(x) = a, or on erfc(x) = 1 - a in the tail, where 1 - a is exact and
  // erf(x) would have lost the digits that decide x.
  const double k = 0.147;
  const double l = std::log((1 - a) * (1 + a));
  const double t = 2 / (std::numbers::pi * k) + l / 2;
  double x = std::sqrt(std::sqrt(t * t - l / k) - t);
  const double half_sqrt_pi = std::sqrt(std::numbers::pi) / 2;
  for (int i = 0; i < 8; ++i) {
    const double step = a <= 0.5 ? (std::erf(x) - a) * half_sqrt_pi * std::exp(x * x)
                                 : ((1 - a) - std::erfc(x)) * half_sqrt_pi * std::exp(x * x);
    x -= step;
    if (std::fabs(step) <= std::fabs(x) * 1e-17) break;
  }
  return std::copysign(x, y);
}

/// The digamma function psi = Gamma'/Gamma; NaN at the poles 0, -1, -2, ...
inline double digamma(double x) {
  if (std::isnan(x) || x == -std::numeric_limits<double>::infinity())
    return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0 && x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  double result = 0;
  if (x < 0) {
    // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x). tan has period 1: reduce to x's
    // distance r from the nearest integer, exact (x - floor(x) is rounded for x in (-1/2, 0),
    // and pi frac near 1 would be a large relative error in the tangent).
    const double r = x - std::nearbyint(x);
    result = -std::numbers::pi / std::tan(std::numbers::pi * r);
    x = 1 - x;
  }
  // Recurrence psi(x) = psi(x + 1) - 1/x up to where the asymptotic series converges to
  // double precision (its next term at 10 is below 1e-16).
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double r = 1 / (x * x);
  // -sum B_2k / (2k x^2k), k = 1..7.
  const double series =
      r * (-1.0 / 12 +
           r * (1.0 / 120 +
                r * (-1.0 / 252 +
                     r * (1.0 / 240 + r * (-1.0 / 132 + r * (691.0 / 32760 + r * (-1.0 / 12)))))));
  return result + std::log(x) - 0.5 / x + series;
}

/// exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1 (odd in x).
inline double bessel_i1e(double x) {
  if (std::isnan(x) || x == 0) return x;
  const double a = std::fabs(x);
  double r;
  if (a < 1e-4) {
    // The series (a / 2)(1 + a^2 / 8 + a^4 / 192), exact to double below 1e-4, where the C++
    // library's cyl_bessel_i loses digits (1e-13 relative at 1e-300).
    const double a2 = a * a;
    r = a / 2 * (1 + a2 / 8 * (1 + a2 / 24)) * std::exp(-a);
  } else if (a <= 500) {
    r = std::cyl_bessel_i(1.0, a) * std::exp(-a);
  } else {
    // Hankel's expansion: I1(a) e^-a ~ (2 pi a)^-1/2 sum_k (-1)^k prod_j (4 - (2j-1)^2) / (k!
    // (8a)^k).
    double term = 1, sum = 1;
    for (int k = 1; k <= 8; ++k) {
      const double m = 2.0 * k - 1;
      term *= -(4 - m * m) / (k * 8 * a);
      sum += term;
    }
    r = sum / std::sqrt(2 * std::numbers::pi * a);
  }
  return std::copysign(r, x);
}

/// The next value of type T after x in the direction of y (y if they are equal, NaN if either
/// is): C's nextafter, for f16 and bf16 too, which the C library does not have.
template <class T>
T next_after(T x, T y) {
  using Bits = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
  double fx, fy;
  if constexpr (std::is_floating_point_v<T>) {
    fx = static_cast<double>(x);
    fy = static_cast<double>(y);
  } else {
    fx = static_cast<float>(x);
    fy = static_cast<float>(y);
  }
  if (std::isnan(fx) || std::isnan(fy)) return std::isnan(fx) ? x : y;
  if (fx == fy) return y;
  constexpr Bits kSign = Bits{1} << (sizeof(T) * 8 - 1);
  if (fx == 0) {
    // The smallest subnormal, signed toward y.
    return std::bit_cast<T>(static_cast<Bits>(fy < 0 ? kSign | 1 : 1));
  }
  const auto bits = std::bit_cast<Bits>(x);
  // Away from zero when y lies further out on x's side: one more in the magnitude bits.
  const bool away = (fx < fy) == (fx > 0);
  return std::bit_cast<T>(static_cast<Bits>(away ? bits + 1 : bits - 1));
}

/// reduce_precision of x: x rounded to the float format with `exponent_bits` and
/// `mantissa_bits` (round to nearest, ties to even), overflowing to infinity and underflowing
/// (below that format's smallest normal) to zero with x's sign, in T. NaN stays x, except that
/// a format without mantissa bits has no NaN: there NaN becomes +infinity, as in XLA's
/// emitter and the StableHLO interpreter. Works on the bits of T itself: widening f16 to float
/// first would let f16's subnormals survive an exponent reduction that flushes them in f16.
/// Widths at or above T's own leave x alone.
template <class T>
T reduce_precision(T x, std::int64_t exponent_bits, std::int64_t mantissa_bits) {
  using Bits = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
  constexpr int kMantissa = std::numeric_limits<T>::digits - 1;
  constexpr int kExponent = static_cast<int>(sizeof(T) * 8) - 1 - kMantissa;
  constexpr Bits kSign = Bits{1} << (sizeof(T) * 8 - 1);
  constexpr Bits kExponentMask = static_cast<Bits>(((Bits{1} << kExponent) - 1) << kMantissa);
  const Bits in = std::bit_cast<Bits>(x);
  if ((in & kExponentMask) == kExponentMask && (in & ~(kSign | kExponentMask)) != 0)
    return mantissa_bits > 0 ? x : std::bit_cast<T>(kExponentMask);
  Bits bits = in;
  if (mantissa_bits < kMantissa) {
    // Add half an ulp of the new format less one, plus the last kept bit (ties to even), then
    // cut: a carry out of the mantissa correctly bumps the exponent.
    const int drop = kMantissa - static_cast<int>(mantissa_bits);
    const Bits last_kept = static_cast<Bits>(Bits{1} << drop);
    const Bits half_less_one = static_cast<Bits>((last_kept >> 1) - 1);
    const Bits odd = static_cast<Bits>((bits & last_kept) >> drop);
    bits = static_cast<Bits>((bits + half_less_one + odd) & ~static_cast<Bits>(last_kept - 1));
  }
  if (exponent_bits < kExponent) {
    const Bits sign = in & kSign;
    const Bits exponent = bits & kExponentMask;
    const std::int64_t bias = (std::int64_t{1} << (kExponent - 1)) - 1;
    const std::int64_t reduced_bias = (std::int64_t{1} << (exponent_bits - 1)) - 1;
    const auto max_exponent = static_cast<Bits>(bias + reduced_bias);
    const auto min_exponent = static_cast<Bits>(bias - reduced_bias);
    if (exponent > static_cast<Bits>(max_exponent << kMantissa))
      bits = sign | kExponentMask;
    else if (exponent <= static_cast<Bits>(min_exponent << kMantissa))
      bits = sign;
  }
  return std::bit_cast<T>(bits);
}

}  // namespace pjrt_lite::special
