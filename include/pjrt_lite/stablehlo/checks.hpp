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

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/ulp.hpp"
#include "pjrt_lite/stablehlo/module.hpp"

namespace pjrt_lite::stablehlo {

inline constexpr std::int64_t kCloseUlps = 3;
inline constexpr double kAlmostEqTolerance = 1e-3;

namespace detail {
template <class T>
bool component_matches(CheckKind kind, T a, T b) {
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
    return std::abs(x - y) <= kAlmostEqTolerance || ulp_distance(a, b) <= kCloseUlps;
  } else {
    return a == b;
  }
}
}  // namespace detail

/// OK when `actual` passes `kind` against `expected`; otherwise what differed and where.
inline Status evaluate_check(CheckKind kind, const Literal& actual, const Literal& expected) {
  if (!actual.shape().same_type_and_dims(expected.shape()))
    return invalid_argument_error(str_cat(check_kind_name(kind), ": actual ", actual.shape(),
                                          " but expected ", expected.shape()));
  const Literal a = actual.with_default_layout(), e = expected.with_default_layout();
  Status result;
  visit_dtype(a.dtype(), [&]<class T>(std::type_identity<T>) {
    auto x = a.data<T>();
    auto y = e.data<T>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      bool ok;
      if constexpr (is_complex_v<T>)
        ok = detail::component_matches(kind, x[i].real(), y[i].real()) &&
             detail::component_matches(kind, x[i].imag(), y[i].imag());
      else
        ok = detail::component_matches(kind, x[i], y[i]);
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

}  // namespace pjrt_lite::stablehlo
