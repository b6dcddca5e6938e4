#pragma once
// IWYU pragma: private, include "pjrt_lite/transforms/autodiff.hpp"
// Special functions that the derivative rules of the CHLO ops need and the IR has no op for,
// built from element-wise ops, so that their own derivatives follow by the same rules (the
// second derivative of digamma is the derivative of trigamma's composite, and so on):
//
//   trigamma(x)   polygamma(1, x) = sum 1 / (x + k)^2. Six steps of the recurrence
//                 psi1(z) = 1 / z^2 + psi1(z + 1) take z to at least 6.5, where the asymptotic
//                 series 1/z + 1/(2 z^2) + sum B_2k / z^(2k+1) (to B_14) is within 1e-13; below
//                 1/2 the reflection psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x).
//   bessel_i0e(x) exp(-|x|) I0(x): the power series sum (x^2/4)^k / (k!)^2 (48 terms) times
//                 exp(-|x|) up to |x| = 15, past it the asymptotic series
//                 (2 pi |x|)^-1/2 sum ((2k-1)!!)^2 / (k! (8 |x|)^k) (20 terms).
//
// Each branch of a select is evaluated at a point inside its own domain (the other branch's
// points replaced by a harmless constant), so neither value nor derivative of the unused branch
// can be inf or NaN.

#include <numbers>

#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::detail {

class SpecialFunctions {
 public:
  explicit SpecialFunctions(GraphBuilder& b) : b_(b) {}

  Value trigamma(Value x) {
    const Value reflect = lt(x, 0.5);
    // The series runs on z0 = x or 1 - x (both >= 1/2); the reflection on x below 1/2 only.
    Value z = b_.select(reflect, b_.subtract(full(x, 1.0), x), x);
    Value sum = full(x, 0.0);
    for (int k = 0; k < 6; ++k) {
      sum = b_.add(sum, b_.divide(full(x, 1.0), b_.multiply(z, z)));
      z = b_.add(z, full(x, 1.0));
    }
    const Value w = b_.divide(full(x, 1.0), z), w2 = b_.multiply(w, w);
    // B_2k / z^(2k+1) for 2k = 2 .. 14: 1/6, -1/30, 1/42, -1/30, 5/66, -691/2730, 7/6.
    constexpr double kBernoulli[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6};
    Value tail = full(x, kBernoulli[6]);
    for (int k = 5; k >= 0; --k) tail = b_.add(full(x, kBernoulli[k]), b_.multiply(w2, tail));
    Value series = b_.add(b_.add(w, b_.multiply(full(x, 0.5), w2)), b_.multiply(b_.multiply(w, w2), tail));
    const Value psi1 = b_.add(sum, series);
    const Value xr = b_.select(reflect, x, full(x, 0.25));
    const Value s = b_.sine(b_.multiply(full(x, std::numbers::pi), xr));
    const Value mirror = b_.divide(full(x, std::numbers::pi * std::numbers::pi), b_.multiply(s, s));
    return b_.select(reflect, b_.subtract(mirror, psi1), psi1);
  }

  Value bessel_i0e(Value x) {
    const Value ax = b_.abs(x);
    const Value small = lt(ax, 15.0);
    // Power series at |x| <= 15 (|x| = 1 for the other points).
    const Value xs = b_.select(small, ax, full(x, 1.0));
    const Value q = b_.multiply(b_.multiply(xs, xs), full(x, 0.25));
    Value term = full(x, 1.0), sum = full(x, 1.0);
    for (int k = 1; k <= 48; ++k) {
      term = b_.multiply(term, b_.multiply(q, full(x, 1.0 / (double(k) * k))));
      sum = b_.add(sum, term);
    }
    const Value power = b_.multiply(sum, b_.exponential(b_.negate(xs)));
    // Asymptotic series past 15 (|x| = 16 for the other points).
    const Value xl = b_.select(small, full(x, 16.0), ax);
    const Value r = b_.divide(full(x, 1.0), b_.multiply(xl, full(x, 8.0)));
    term = full(x, 1.0);
    sum = full(x, 1.0);
    for (int k = 1; k <= 20; ++k) {
      const double odd = 2.0 * k - 1;
      term = b_.multiply(term, b_.multiply(r, full(x, odd * odd / k)));
      sum = b_.add(sum, term);
    }
    const Value asymptotic = b_.multiply(sum, b_.rsqrt(b_.multiply(xl, full(x, 2 * std::numbers::pi))));
    return b_.select(small, power, asymptotic);
  }

 private:
  Value full(Value like, double v) {
    const Shape s = b_.shape(like).value_or(Shape());
    return b_.broadcast_in_dim(b_.scalar(s.dtype(), v), {s.dims().begin(), s.dims().end()}, {});
  }
  Value lt(Value x, double v) { return b_.compare(x, full(x, v), ComparisonDirection::kLt); }

  GraphBuilder& b_;
};

}  // namespace pjrt_lite::detail
