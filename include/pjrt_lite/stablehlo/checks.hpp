#pragma once
// Evaluating the `check.expect_*` calls of a StableHLO test program, with the meanings the
// StableHLO interpreter gives them: expect_eq is element-wise equality (NaN equals NaN),
// expect_close allows kCloseUlps units in the last place (non-finite values count as close),
// expect_almost_eq an absolute tolerance of kAlmostEqTolerance.
//
// expect_almost_eq is never stricter than expect_close: where the element type's spacing
// exceeds the absolute tolerance (f32 above 8192, f16 above 1, ...), an absolute tolerance
// would demand bit equality, which no "almost" check means. There a difference of at most
// kCloseUlps ULP passes too. (The corpus's two files that need this, complex64 pow and sin
// near 3e5, are marked RUN-DISABLED(inaccurate) upstream: the StableHLO interpreter's
// absolute-only comparison fails them on a one-ULP difference.)

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/ulp.hpp"
#include "pjrt_lite/stablehlo/module.hpp"

namespace pjrt_lite::inline v0_1::stablehlo {

inline constexpr std::int64_t kCloseUlps = 3;
inline constexpr double kAlmostEqTolerance = 1e-3;

namespace detail {
template <class T>
bool component_matches(CheckKind kind, T a, T b, double tolerance) {
  if constexpr (is_float_v<T>) {
    const double x = static_cast<double>(
        static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(a));
    const double y = static_cast<double>(
        static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(b));
    if (std::isnan(x) || std::isnan(y))
      return kind == CheckKind::kClose || (std::isnan(x) && std::isnan(y));
    if (kind == CheckKind::kEq) return x == y;
    if (kind == CheckKind::kClose)
      return !std::isfinite(x) || !std::isfinite(y) || x == y || ulp_distance(a, b) <= kCloseUlps;
    if (std::isinf(x) || std::isinf(y)) return x == y;
    return std::abs(x - y) <= tolerance || ulp_distance(a, b) <= kCloseUlps;
  } else {
    return a == b;
  }
}
}  // namespace detail

/// OK when `actual` passes `kind` against `expected`; otherwise what differed and where.
/// `tolerance` is kAlmostEq's absolute tolerance.
inline Status evaluate_check(CheckKind kind, const Literal& actual, const Literal& expected,
                             double tolerance = kAlmostEqTolerance) {
  if (!actual.shape().same_type_and_dims(expected.shape()))
    return invalid_argument_error(str_cat(check_kind_name(kind), ": actual ", actual.shape(),
                                          " but expected ", expected.shape()));
  if (is_token(actual.dtype())) return ok_status();  // a token holds no value
  // A narrow type's values are exact in the type it computes in: compare those.
  if (is_narrow(actual.dtype()))
    return evaluate_check(kind, *actual.convert(wide_dtype(actual.dtype())), *expected.convert(wide_dtype(actual.dtype())), tolerance);
  const Literal a = actual.with_default_layout(), e = expected.with_default_layout();
  Status result;
  visit_dtype(a.dtype(), [&]<class T>(std::type_identity<T>) {
    auto x = a.data<T>();
    auto y = e.data<T>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      bool ok;
      if constexpr (is_complex_v<T>)
        ok = detail::component_matches(kind, x[i].real(), y[i].real(), tolerance) &&
             detail::component_matches(kind, x[i].imag(), y[i].imag(), tolerance);
      else
        ok = detail::component_matches(kind, x[i], y[i], tolerance);
      if (!ok) {
        std::string got, want;
        pjrt_lite::detail::append_element(got, x[i]);
        pjrt_lite::detail::append_element(want, y[i]);
        result = invalid_argument_error(str_cat(check_kind_name(kind), ": element ", i, " of ",
                                                a.shape(), " is ", got, ", expected ", want));
        return;
      }
    }
  });
  return result;
}

/// How far, in units of the element type's epsilon times the largest magnitude in `expected`,
/// within_rounding lets an element stray: the rounding error of a sum or a substitution of a
/// few hundred terms in that type.
inline constexpr double kRoundingEpsilons = 64;

/// OK when every element of `actual` is within kRoundingEpsilons epsilons of the type, scaled
/// by the largest magnitude in `expected`, of the expected element: equal up to the rounding
/// of a computation done in another order. Integers must be equal. A narrow float's epsilon
/// is its own (2^-3 for f8e4m3fn).
inline Status within_rounding(const Literal& actual, const Literal& expected) {
  if (!actual.shape().same_type_and_dims(expected.shape()))
    return invalid_argument_error(str_cat("actual ", actual.shape(), " but expected ", expected.shape()));
  if (is_token(actual.dtype())) return ok_status();  // a token holds no value
  if (is_narrow_integral(actual.dtype()))
    return within_rounding(*actual.convert(DType::kS32), *expected.convert(DType::kS32));
  if (is_narrow_floating(actual.dtype())) {
    const Literal a = *actual.convert(DType::kF64), e = *expected.convert(DType::kF64);
    double largest = 0;
    for (double v : e.data<double>()) largest = std::max(largest, std::abs(v));
    const double bound =
        kRoundingEpsilons * std::ldexp(1.0, -narrow_float_format(actual.dtype()).mantissa_bits) * largest;
    for (std::size_t i = 0; i < a.data<double>().size(); ++i) {
      const double d = std::abs(a.data<double>()[i] - e.data<double>()[i]);
      if (!(d <= bound))
        return invalid_argument_error(str_cat("element ", i, " differs by ", d, ", more than ", bound));
    }
    return ok_status();
  }
  const Literal a = actual.with_default_layout(), e = expected.with_default_layout();
  Status result;
  visit_dtype(a.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (is_complex_v<T> || is_float_v<T>) {
      using R = std::conditional_t<is_complex_v<T>, c128, double>;
      auto x = a.data<T>();
      auto y = e.data<T>();
      double largest = 0;
      for (const T& v : y) largest = std::max(largest, std::abs(convert_element<R>(v)));
      const DType real = is_complex_v<T> ? (a.dtype() == DType::kC64 ? DType::kF32 : DType::kF64) : a.dtype();
      const double epsilon = real == DType::kF64 ? 0x1p-52 : real == DType::kF32 ? 0x1p-23 : real == DType::kBF16 ? 0x1p-7 : 0x1p-10;
      const double bound = kRoundingEpsilons * epsilon * largest;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double d = std::abs(convert_element<R>(x[i]) - convert_element<R>(y[i]));
        if (!(d <= bound)) {
          result = invalid_argument_error(str_cat("element ", i, " differs by ", d, ", more than ", bound));
          return;
        }
      }
    } else {
      if (!(a == e)) result = invalid_argument_error("integers differ");
    }
  });
  return result;
}

}  // namespace pjrt_lite::stablehlo
