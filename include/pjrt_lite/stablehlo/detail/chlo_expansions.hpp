#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/bytecode.hpp"
// CHLO's element-wise ops written with StableHLO's element-wise ops, for portable artifacts,
// which hold no CHLO (JAX's serializer expands them before writing, too):
//
//   atan(x)  = atan2(x, 1)
//   asin(x)  = 2 atan2(x, 1 + sqrt((1 - x)(1 + x)))
//   sinh(x)  = (e + e / (e + 1)) / 2 with e = expm1(x) where |x| < 1, else in f64
//              sign(x) (g (g / 2) - 1 / (2 g g)) with g = exp(|x| / 2): no overflow before
//              sinh's own, and the halving of x exact; in f32 CHLO's e^(x + log 1/2) -
//              e^(-x + log 1/2), whose values JAX's programs expect (and the CPU computes)
//   cosh(x)  = g (g / 2) + 1 / (2 g g), g as above, in f64; CHLO's sum in f32
//   asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), or sign(x) (log|x| + log 2)
//              from sqrt(max) on
//   acosh(x) = log1p(y + sqrt(y (y + 2))) with y = x - 1, or log x + log 2 from sqrt(max) on;
//              NaN below 1
//   atanh(x) = (log1p(x) - log1p(-x)) / 2
//   erfc(x)  = 1 - erf(x) below 1/2; from 1/2 on exp(-x^2) h(x) / x, where h = x exp(x^2)
//              erfc(x) (which tends to 1/sqrt(pi)) is a Chebyshev series in t = (x - 3) /
//              (x + 3), and exp(-x^2) = exp(-xh^2) exp(-(x - xh)(x + xh)) with xh = x cut to
//              half its mantissa, so that xh^2 is exact
//   erf_inv  f64: Winitzki's closed form (relative error about 2e-3) refined by three Halley
//              steps on erf(x) = y, or on erfc(x) = 1 - y where y > 1/2 (1 - y is exact there,
//              and erf(x) would have lost the digits that decide x); f32: Giles's
//              single-precision polynomials, as XLA computes it; +-inf at +-1, NaN past them
//   lgamma   Lanczos's approximation (g = 7, 9 terms) from 1/2 on, the reflection
//              log(pi / |sin(pi x)|) - lgamma(1 - x) below (sin from x's distance to the
//              nearest integer), -log|x| for |x| under 1e-17 (1e-8 in f32), +inf at 0, the
//              negative integers and +-inf
//   digamma  psi(x) = psi(x + 10) - sum_k<10 1 / (x + k) below 10, then the asymptotic series
//              log z - 1 / (2z) - sum B_2k / (2k z^2k) to B_14; the reflection
//              psi(1 - x) - pi cot(pi r) below 0, r = x - round(x) (exact); NaN at 0 and the
//              negative integers
//   bessel_i1e  odd; |x| <= 2: |x| c(|x| - 1); 2 < |x| <= 8: d((|x| - 5) / 3); past 8:
//              e(16 / |x| - 1) / sqrt(|x|), with c, d and e Chebyshev series
//   next_after  on the bits: one step of the integer image toward y (the smallest subnormal
//              at zero), y where x == y, the NaN operand where there is one
//
// The Chebyshev coefficients below were fitted to the functions computed in 40-digit
// arithmetic, at 120 Chebyshev nodes; the series stop where the rest is below about 1e-18
// (f64) or 1e-9 (f32). f16 and bf16 compute in f32 and round once at the end; f32 computes in f32, as
// an artifact's reader on a device without f64 would. Complex values are not expanded (the
// writer refuses them, naming the op).

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

namespace chlo_series {
// kErfcTail: 24 terms for f64, the first 12 for f32
inline constexpr double kErfcTail[] = {
    4.9738135231679493e-1, 1.0706264326363667e-1, -5.5847669273843894e-2,
    2.0033048939530015e-2, -5.3753111002911614e-3, 1.0696344671245863e-3,
    -1.4255758991106122e-4, 7.2114833423680548e-6, 1.5635247496235981e-6,
    -3.4038844413593916e-7, 5.0011080285406264e-10, 8.1469767830983625e-9,
    -5.7921217765607117e-10, -1.9150378477062205e-10, 2.4547395601567412e-11,
    5.1452828483684407e-12, -8.6272771193863618e-13, -1.6731922304419078e-13,
    2.8759707379218096e-14, 6.4783341761999211e-15, -8.9787438376881393e-16,
    -2.801718451542642e-16, 2.3108158647737948e-17, 1.2610281825007675e-17,
};
// kI1eNear: 18 terms for f64, the first 11 for f32
inline constexpr double kI1eNear[] = {
    2.5419728307660605e-1, -1.8614670648327066e-1, 4.7922338053106144e-2,
    -9.7890762161414073e-3, 1.6662238479520602e-3, -2.4332400142500991e-4,
    3.1112561153598405e-5, -3.537110387592967e-6, 3.6188997442071135e-7,
    -3.3650067418390222e-8, 2.8669319308345318e-9, -2.253506636201581e-10,
    1.6438659802941666e-11, -1.118540536749965e-12, 7.1309452993911514e-14,
    -4.2761712147863665e-15, 2.4203988688957724e-16, -1.29715839818741e-17,
};
// kI1eMid: 25 terms for f64, the first 16 for f32
inline constexpr double kI1eMid[] = {
    1.6978541821375384e-1, -4.081701544471595e-2, 5.4715048223874629e-3,
    -3.7199867430543945e-5, -4.3501169617069644e-4, 2.5109873849454697e-4,
    -1.0387010560561069e-4, 3.633595171172561e-5, -1.1283779531380382e-5,
    3.1771772627955248e-6, -8.2078798542040135e-7, 1.9608259818179286e-7,
    -4.3574162839379962e-8, 9.0506229620202527e-9, -1.764216796822223e-9,
    3.238856123342663e-10, -5.6178391818434264e-11, 9.2324940428371492e-12,
    -1.4413186299625083e-12, 2.1424611174509566e-13, -3.038877038591557e-14,
    4.1211712051403038e-15, -5.3533930261795938e-16, 6.6722585571811789e-17,
    -7.9915889122213591e-18,
};
// kI1eLarge: 27 terms for f64, the first 7 for f32
inline constexpr double kI1eLarge[] = {
    3.8928811750914006e-1, -9.7610974913614684e-3, -1.1058893876262372e-4,
    -3.8825648088776904e-6, -2.5122362378702089e-7, -2.6314688468895195e-8,
    -3.835380385964237e-9, -5.5897434621965838e-10, -1.8974958123505412e-11,
    3.2526035830154882e-11, 1.4125807436613781e-11, 2.0356285441470895e-12,
    -7.1985517762459085e-13, -4.0835511110921973e-13, -2.1015418427726643e-14,
    4.2724400167119514e-14, 1.0420276984128803e-14, -3.8144030724370078e-15,
    -1.8803547755107824e-15, 3.3082023109209283e-16, 2.9626289976459501e-16,
    -3.209525921993424e-17, -4.6503053684893583e-17, 4.4143483230717079e-18,
    7.5172963108421048e-18, -9.3141788673268834e-19, -1.242193275194891e-18,
};
// Lanczos's coefficients for g = 7 and 9 terms.
inline constexpr double kLanczos[] = {
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
};
}  // namespace chlo_series

/// Whether node `n` of `g` is a CHLO op written as StableHLO ops in portable artifacts (on
/// real floating-point values; complex ones are not expanded).
inline bool has_chlo_expansion(const Graph& g, const Node& n) {
  const bool unary = n.op == OpCode::kAtan || n.op == OpCode::kAsin || n.op == OpCode::kSinh ||
                     n.op == OpCode::kCosh || n.op == OpCode::kAsinh || n.op == OpCode::kAcosh ||
                     n.op == OpCode::kAtanh || n.op == OpCode::kErfc || n.op == OpCode::kErfInv ||
                     n.op == OpCode::kLgamma || n.op == OpCode::kDigamma || n.op == OpCode::kBesselI1e;
  const bool arity = unary ? n.operands.size() == 1 : n.op == OpCode::kNextAfter && n.operands.size() == 2;
  return arity && is_floating(g.shape(n.operands[0]).dtype());
}

class ChloExpander {
 public:
  explicit ChloExpander(GraphBuilder& b) : b_(b) {}

  /// `op` (see has_chlo_expansion) of `operands`, real floating-point values.
  Value expand(OpCode op, std::span<const Value> operands) {
    if (op == OpCode::kNextAfter) return next_after(operands[0], operands[1]);
    const Value x = operands[0];
    const DType t = b_.shape(x).value_or(Shape()).dtype();
    const bool narrow = t == DType::kF16 || t == DType::kBF16;
    const Value v = narrow ? b_.convert(x, DType::kF32) : x;
    Value r;
    switch (op) {
      case OpCode::kAtan: r = b_.atan2(v, full(v, 1)); break;
      case OpCode::kAsin: r = asin(v); break;
      case OpCode::kSinh: r = is_f64(v) ? sinh(v) : chlo_sinh(v); break;
      case OpCode::kCosh:
        r = is_f64(v) ? b_.add(big_half(v), small_half(v)) : b_.add(exp_half(v, 1), exp_half(v, -1));
        break;
      case OpCode::kAsinh: r = asinh(v); break;
      case OpCode::kAcosh: r = acosh(v); break;
      case OpCode::kErfc: r = erfc(v); break;
      case OpCode::kErfInv: r = is_f64(v) ? erf_inv(v) : erf_inv_f32(v); break;
      case OpCode::kLgamma: r = lgamma(v); break;
      case OpCode::kDigamma: r = digamma(v); break;
      case OpCode::kBesselI1e: r = bessel_i1e(v); break;
      default:  // atanh
        r = b_.multiply(full(v, 0.5), b_.subtract(b_.log_plus_one(v), b_.log_plus_one(b_.negate(v))));
        break;
    }
    return narrow ? b_.convert(r, t) : r;
  }

 private:
  static constexpr double kLog2 = std::numbers::ln2;
  static constexpr double kPi = std::numbers::pi;

  Value full(Value like, double v) {
    const Shape s = b_.shape(like).value_or(Shape());
    return b_.broadcast_in_dim(b_.scalar(s.dtype(), v), {s.dims().begin(), s.dims().end()}, {});
  }
  Value cmp(Value x, double v, ComparisonDirection d) { return b_.compare(x, full(x, v), d); }
  /// sqrt of the largest finite value of x's type: past it, x^2 overflows.
  double sqrt_max(Value x) {
    return b_.shape(x).value_or(Shape()).dtype() == DType::kF64 ? std::sqrt(std::numeric_limits<double>::max())
                                                                : std::sqrt(double(std::numeric_limits<float>::max()));
  }

  /// exp(|x|) / 2 as g (g / 2), g = exp(|x| / 2), and exp(-|x|) / 2 as (1 / g) / (2 g).
  Value half_exp(Value x) { return b_.exponential(b_.multiply(b_.abs(x), full(x, 0.5))); }
  Value big_half(Value x) {
    const Value g = half_exp(x);
    return b_.multiply(g, b_.multiply(g, full(x, 0.5)));
  }
  Value small_half(Value x) {
    const Value g = half_exp(x);
    return b_.divide(b_.divide(full(x, 0.5), g), g);
  }

  /// e^(sign x + log 1/2), as CHLO decomposes cosh and sinh in f32 (and as the CPU computes
  /// them there): the results JAX's programs expect, a few ulp from the exact value at large |x|.
  Value exp_half(Value x, double sign) {
    const Value sx = sign > 0 ? x : b_.negate(x);
    return b_.exponential(b_.add(sx, full(x, double(-std::numbers::ln2_v<float>))));
  }
  /// sinh in f32: the expm1 form below 1 (where CHLO's difference would cancel), CHLO's above.
  Value chlo_sinh(Value x) {
    const Value e = b_.exponential_minus_one(x);
    const Value small = b_.multiply(full(x, 0.5), b_.add(e, b_.divide(e, b_.add(e, full(x, 1)))));
    return b_.select(cmp(b_.abs(x), 1, ComparisonDirection::kLt), small,
                     b_.subtract(exp_half(x, 1), exp_half(x, -1)));
  }
  Value asin(Value x) {
    const Value one = full(x, 1);
    const Value root = b_.sqrt(b_.multiply(b_.subtract(one, x), b_.add(one, x)));
    return b_.multiply(full(x, 2), b_.atan2(x, b_.add(one, root)));
  }
  Value sinh(Value x) {
    const Value e = b_.exponential_minus_one(x);
    const Value small = b_.multiply(full(x, 0.5), b_.add(e, b_.divide(e, b_.add(e, full(x, 1)))));
    const Value large = b_.multiply(b_.sign(x), b_.subtract(big_half(x), small_half(x)));
    return b_.select(cmp(b_.abs(x), 1, ComparisonDirection::kLt), small, large);
  }
  Value asinh(Value x) {
    const Value ax = b_.abs(x);
    const Value big = cmp(ax, sqrt_max(x), ComparisonDirection::kGe);
    const Value s = b_.select(big, full(x, 1), ax);  // the small branch away from overflow
    const Value s2 = b_.multiply(s, s);
    const Value small = b_.log_plus_one(
        b_.add(s, b_.divide(s2, b_.add(full(x, 1), b_.sqrt(b_.add(full(x, 1), s2))))));
    const Value large = b_.add(b_.log(ax), full(x, kLog2));
    return b_.multiply(b_.sign(x), b_.select(big, large, small));
  }
  Value acosh(Value x) {
    const Value big = cmp(x, sqrt_max(x), ComparisonDirection::kGe);
    const Value y = b_.select(big, full(x, 0), b_.subtract(x, full(x, 1)));
    const Value small = b_.log_plus_one(b_.add(y, b_.sqrt(b_.multiply(y, b_.add(y, full(x, 2))))));
    const Value large = b_.add(b_.log(x), full(x, kLog2));
    const Value r = b_.select(big, large, small);
    return b_.select(cmp(x, 1, ComparisonDirection::kLt), full(x, std::numeric_limits<double>::quiet_NaN()), r);
  }

  bool is_f64(Value x) { return b_.shape(x).value_or(Shape()).dtype() == DType::kF64; }
  Value lt(Value x, double v) { return cmp(x, v, ComparisonDirection::kLt); }
  /// x where `keep`, else the constant v: a branch of a select evaluated only inside its
  /// domain, so that its unused points compute nothing infinite or NaN.
  Value keep_or(Value keep, Value x, double v) { return b_.select(keep, x, full(x, v)); }
  /// c[0] + sum_k c[k] T_k(u) by Clenshaw's recurrence, the first `terms` coefficients.
  Value chebyshev(std::span<const double> c, std::size_t terms, Value u) {
    Value b1 = full(u, 0), b2 = full(u, 0);
    const Value two_u = b_.add(u, u);
    for (std::size_t k = terms - 1; k >= 1; --k) {
      const Value b0 = b_.subtract(b_.add(full(u, c[k]), b_.multiply(two_u, b1)), b2);
      b2 = b1;
      b1 = b0;
    }
    return b_.subtract(b_.add(full(u, c[0]), b_.multiply(u, b1)), b2);
  }
  /// The series' length for x's type: all of it in f64, the part above 1e-9 in f32.
  std::size_t terms(Value x, std::span<const double> c, std::size_t f32_terms) {
    return is_f64(x) ? c.size() : f32_terms;
  }

  /// exp(-x^2) for 0 <= x <= 28, with x^2 split so that its rounding does not reach the result.
  Value exp_minus_square(Value x) {
    const Value xh = b_.reduce_precision(x, is_f64(x) ? 11 : 8, is_f64(x) ? 25 : 11);
    const Value lo = b_.multiply(b_.subtract(x, xh), b_.add(x, xh));
    return b_.multiply(b_.exponential(b_.negate(b_.multiply(xh, xh))), b_.exponential(b_.negate(lo)));
  }
  Value erfc(Value x) {
    // Past 28 (f64) or 11 (f32) erfc is 0 in the type; the tail runs on [1/2, that].
    const Value tail_domain = cmp(x, 0.5, ComparisonDirection::kGe);
    const Value t_x = b_.minimum(keep_or(tail_domain, x, 1), full(x, is_f64(x) ? 28 : 11));
    const Value t = b_.subtract(full(x, 1), b_.divide(full(x, 6), b_.add(t_x, full(x, 3))));
    const Value u = b_.divide(b_.subtract(b_.multiply(full(x, 7), t), full(x, 1)), full(x, 6));
    const Value h = chebyshev(chlo_series::kErfcTail, terms(x, chlo_series::kErfcTail, 12), u);
    const Value tail = b_.divide(b_.multiply(exp_minus_square(t_x), h), t_x);
    return b_.select(tail_domain, tail, b_.subtract(full(x, 1), b_.erf(x)));
  }
  Value erf_inv(Value y) {
    const Value a = b_.abs(y), one = full(y, 1);
    const Value inside = lt(a, 1);
    const Value ai = keep_or(inside, a, 0.5);
    // Winitzki: x0^2 = sqrt(t^2 - w / k) - t, t = 2 / (pi k) + w / 2, w = log(1 - a^2).
    constexpr double k = 0.147;
    const Value w = b_.log(b_.multiply(b_.subtract(one, ai), b_.add(one, ai)));
    const Value t = b_.add(full(y, 2 / (kPi * k)), b_.multiply(w, full(y, 0.5)));
    const Value root = b_.sqrt(b_.subtract(b_.multiply(t, t), b_.divide(w, full(y, k))));
    Value x = b_.sqrt(b_.maximum(b_.subtract(root, t), full(y, 0)));
    const Value upper = cmp(ai, 0.5, ComparisonDirection::kGt);
    for (int step = 0; step < 3; ++step) {
      // Halley: x -= d / (1 + x d), d = f / f' with f'' / f' = -2x for erf and erfc alike.
      const Value f = b_.select(upper, b_.subtract(b_.subtract(one, ai), erfc(x)), b_.subtract(b_.erf(x), ai));
      const Value d = b_.multiply(b_.multiply(f, full(y, std::sqrt(kPi) / 2)), b_.exponential(b_.multiply(x, x)));
      x = b_.subtract(x, b_.divide(d, b_.add(one, b_.multiply(x, d))));
    }
    const Value at_one = b_.select(cmp(a, 1, ComparisonDirection::kEq), full(y, INFINITY), full(y, NAN));
    // y's sign by multiplication: x >= 0, and 0 keeps y's signed zero.
    return b_.multiply(b_.sign(y), b_.select(inside, x, at_one));
  }
  /// erf_inv in f32: Giles's single-precision polynomials in w = -log(1 - y^2) (w - 2.5 below
  /// 5, sqrt(w) - 3 above), as XLA computes it in f32 (about 2 ulp from the exact value).
  Value erf_inv_f32(Value y) {
    constexpr double kCentral[] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                   -0.00125372503, -0.00417768164, 0.246640727,    1.50140941};
    constexpr double kTail[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                                -0.0076224613,   0.00943887047,  1.00167406,    2.83297682};
    const Value one = full(y, 1);
    const Value w = b_.negate(b_.log(b_.multiply(b_.subtract(one, y), b_.add(one, y))));
    const Value central = lt(w, 5);
    const auto horner = [&](const double (&c)[9], Value t) {
      Value p = full(y, c[0]);
      for (int k = 1; k < 9; ++k) p = b_.add(full(y, c[k]), b_.multiply(p, t));
      return p;
    };
    const Value wc = b_.subtract(keep_or(central, w, 2.5), full(y, 2.5));
    const Value wt = b_.subtract(b_.sqrt(keep_or(b_.not_(central), w, 25)), full(y, 3));
    const Value x = b_.multiply(b_.select(central, horner(kCentral, wc), horner(kTail, wt)), y);
    // +-inf at +-1 (w is inf there), NaN past them (the log's NaN).
    return b_.select(cmp(b_.abs(y), 1, ComparisonDirection::kEq), b_.multiply(y, full(y, INFINITY)), x);
  }
  /// lgamma(z + 1) for z >= -1/2 by Lanczos's sum.
  Value lanczos(Value z) {
    Value sum = full(z, chlo_series::kLanczos[0]);
    for (int i = 1; i < 9; ++i) sum = b_.add(sum, b_.divide(full(z, chlo_series::kLanczos[i]), b_.add(z, full(z, i))));
    // (z + 1/2) log t - t with t = z + 7.5, as (z + 1/2)(log t - 1) - 7: no overflow before
    // lgamma's own.
    const Value log_t = b_.add(full(z, std::log(7.5)), b_.log_plus_one(b_.divide(z, full(z, 7.5))));
    const Value main = b_.subtract(b_.multiply(b_.add(z, full(z, 0.5)), b_.subtract(log_t, full(z, 1))), full(z, 7));
    return b_.add(b_.add(full(z, 0.5 * std::log(2 * kPi)), main), b_.log(sum));
  }
  /// x's distance to the nearest integer, signed: exact, where x - floor(x) is rounded for x
  /// in (-1/2, 0).
  Value from_nearest_integer(Value x) { return b_.subtract(x, b_.round_nearest_even(x)); }
  /// |sin(pi x)| from that distance, so that pi x's rounding does not reach it near the
  /// integers.
  Value abs_sin_pi(Value x) { return b_.sine(b_.multiply(full(x, kPi), b_.abs(from_nearest_integer(x)))); }
  Value lgamma(Value x) {
    const Value finite = b_.is_finite(x);
    const Value xf = keep_or(finite, x, 1);
    const Value reflect = lt(xf, 0.5);
    const Value y = b_.select(reflect, b_.subtract(full(x, 1), xf), xf);
    const Value lg = lanczos(b_.subtract(y, full(x, 1)));
    const Value reflected = b_.subtract(b_.subtract(full(x, std::log(kPi)), b_.log(abs_sin_pi(xf))), lg);
    const Value ax = b_.abs(x);
    const Value tiny = lt(ax, is_f64(x) ? 1e-17 : 1e-8);
    const Value r = b_.select(tiny, b_.negate(b_.log(ax)), b_.select(reflect, reflected, lg));
    // +inf at the poles (0 and the negative integers, where the reflection would be inf - inf
    // for huge ones) and at +-inf; NaN stays NaN (is_finite is false for it too).
    const Value pole = b_.and_(cmp(xf, 0, ComparisonDirection::kLe), b_.compare(xf, b_.floor(xf), ComparisonDirection::kEq));
    return b_.select(b_.or_(pole, cmp(ax, INFINITY, ComparisonDirection::kEq)), full(x, INFINITY),
                     b_.select(finite, r, x));
  }
  Value digamma(Value x) {
    const Value finite = b_.is_finite(x);
    const Value xf = keep_or(finite, x, 1);
    const Value fl = b_.floor(xf);
    const Value pole = b_.and_(cmp(xf, 0, ComparisonDirection::kLe), b_.compare(xf, fl, ComparisonDirection::kEq));
    const Value reflect = lt(xf, 0);
    // -pi cot(pi x) = -pi cot(pi r), r x's signed distance to the nearest integer (exact).
    const Value s = b_.multiply(full(x, kPi), keep_or(b_.and_(reflect, b_.not_(pole)), from_nearest_integer(xf), 0.25));
    const Value mirror = b_.negate(b_.multiply(full(x, kPi), b_.divide(b_.cosine(s), b_.sine(s))));
    const Value y = keep_or(b_.not_(pole), b_.select(reflect, b_.subtract(full(x, 1), xf), xf), 1);
    const Value shift = lt(y, 10);
    Value sum = full(x, 0);
    for (int k = 0; k < 10; ++k) sum = b_.add(sum, b_.divide(full(x, 1), b_.add(y, full(x, k))));
    const Value z = b_.select(shift, b_.add(y, full(x, 10)), y);
    // -sum B_2k / (2k z^2k), k = 1 .. 7.
    constexpr double kTerms[] = {-1.0 / 12, 1.0 / 120, -1.0 / 252, 1.0 / 240, -1.0 / 132, 691.0 / 32760, -1.0 / 12};
    const Value r = b_.divide(full(x, 1), b_.multiply(z, z));
    Value series = full(x, kTerms[6]);
    for (int k = 5; k >= 0; --k) series = b_.add(full(x, kTerms[k]), b_.multiply(r, series));
    Value psi = b_.add(b_.subtract(b_.log(z), b_.divide(full(x, 0.5), z)), b_.multiply(r, series));
    psi = b_.subtract(psi, b_.select(shift, sum, full(x, 0)));
    psi = b_.add(psi, b_.select(reflect, mirror, full(x, 0)));
    psi = b_.select(pole, full(x, NAN), psi);
    // +inf gives +inf, -inf NaN, NaN itself.
    return b_.select(finite, psi, b_.select(cmp(x, INFINITY, ComparisonDirection::kEq), x, full(x, NAN)));
  }
  Value bessel_i1e(Value x) {
    const Value a = b_.abs(x);
    // Three series, each well conditioned on its part: i1e(a) / a on [0, 2], i1e(a) on
    // [2, 8], sqrt(a) i1e(a) in 16 / a past 8.
    const Value near = cmp(a, 2, ComparisonDirection::kLe), mid = cmp(a, 8, ComparisonDirection::kLe);
    const Value an = keep_or(near, a, 1);
    const Value inner = b_.multiply(
        an, chebyshev(chlo_series::kI1eNear, terms(x, chlo_series::kI1eNear, 11), b_.subtract(an, full(x, 1))));
    const Value am = keep_or(b_.and_(mid, b_.not_(near)), a, 5);
    const Value middle = chebyshev(chlo_series::kI1eMid, terms(x, chlo_series::kI1eMid, 16),
                                   b_.divide(b_.subtract(am, full(x, 5)), full(x, 3)));
    const Value al = b_.select(mid, full(x, 16), a);  // NaN and inf stay here
    const Value outer = b_.divide(
        chebyshev(chlo_series::kI1eLarge, terms(x, chlo_series::kI1eLarge, 7),
                  b_.subtract(b_.divide(full(x, 16), al), full(x, 1))),
        b_.sqrt(al));
    // The sign by multiplication: the magnitude is >= 0, and 0 keeps x's signed zero.
    return b_.multiply(b_.sign(x), b_.select(near, inner, b_.select(mid, middle, outer)));
  }
  Value next_after(Value x, Value y) {
    const Shape s = b_.shape(x).value_or(Shape());
    const std::size_t bytes = byte_size(s.dtype());
    const DType bits_type = bytes == 2 ? DType::kS16 : bytes == 4 ? DType::kS32 : DType::kS64;
    const auto int_full = [&](std::int64_t v) {
      const Value c = bytes == 2   ? b_.constant(static_cast<std::int16_t>(v))
                      : bytes == 4 ? b_.constant(static_cast<std::int32_t>(v))
                                   : b_.constant(v);
      return b_.broadcast_in_dim(c, {s.dims().begin(), s.dims().end()}, {});
    };
    const Value bits = b_.bitcast_convert(x, bits_type);
    const Value zero = full(x, 0);
    // Away from zero (one more in the magnitude bits) when y lies further out on x's side.
    const Value away = b_.compare(b_.compare(x, y, ComparisonDirection::kLt), b_.compare(x, zero, ComparisonDirection::kGt),
                                  ComparisonDirection::kEq);
    const Value step = b_.select(away, b_.add(bits, int_full(1)), b_.subtract(bits, int_full(1)));
    // At zero: the smallest subnormal with y's sign (the sign bit is the integer's minimum).
    const std::int64_t sign_bit = bytes == 2 ? INT16_MIN : bytes == 4 ? INT32_MIN : INT64_MIN;
    const Value tiny = b_.select(b_.compare(y, zero, ComparisonDirection::kLt), int_full(sign_bit + 1), int_full(1));
    const Value moved = b_.bitcast_convert(b_.select(b_.compare(x, zero, ComparisonDirection::kEq), tiny, step), s.dtype());
    const Value x_nan = b_.compare(x, x, ComparisonDirection::kNe), y_nan = b_.compare(y, y, ComparisonDirection::kNe);
    const Value equal = b_.compare(x, y, ComparisonDirection::kEq);
    return b_.select(x_nan, x, b_.select(b_.or_(y_nan, equal), y, moved));
  }

  GraphBuilder& b_;
};

/// Whether `g` (or a region in it) holds an op of has_chlo_expansion.
inline bool needs_chlo_expansion(const Graph& g) {
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (has_chlo_expansion(g, n)) return true;
    for (const Graph& body : n.bodies)
      if (needs_chlo_expansion(body)) return true;
  }
  return false;
}

/// `g` with each op of has_chlo_expansion (in regions too) replaced by its StableHLO form.
inline StatusOr<Graph> expand_chlo(const Graph& g) {
  GraphBuilder b(g.name());
  ChloExpander chlo(b);
  std::vector<std::vector<Value>> values(static_cast<std::size_t>(g.num_nodes()));
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    std::vector<Value>& out = values[static_cast<std::size_t>(i)];
    if (n.op == OpCode::kParameter) {
      const auto& p = n.attr<ParameterAttrs>();
      out.push_back(b.parameter(p.number, p.shape));
      continue;
    }
    std::vector<Value> operands;
    for (Value v : n.operands) operands.push_back(values[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
    if (has_chlo_expansion(g, n)) {
      out.push_back(chlo.expand(n.op, operands));
      continue;
    }
    std::vector<Graph> bodies;
    for (const Graph& body : n.bodies) {
      PJRT_LITE_ASSIGN_OR_RETURN(Graph expanded, needs_chlo_expansion(body) ? expand_chlo(body) : StatusOr<Graph>(body));
      bodies.push_back(std::move(expanded));
    }
    out = b.op(n.op, operands, n.attrs, std::move(bodies));
  }
  std::vector<Value> outputs;
  for (Value v : g.outputs()) outputs.push_back(values[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
  return b.build(outputs);
}

}  // namespace pjrt_lite::stablehlo::detail
