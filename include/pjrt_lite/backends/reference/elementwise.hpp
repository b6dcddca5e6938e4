#pragma once
// The element-wise ops of the reference interpreter over whole literals: unary and binary
// ops, compare, select, clamp and convert. Each maps a scalar_ops function over the
// elements. Operands are row-major literals of the shapes the node was inferred from, so
// element i of every operand sits at the same multi-index as element i of the result.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "pjrt_lite/backends/reference/index.hpp"
#include "pjrt_lite/backends/reference/scalar_ops.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/special_math.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

/// UNIMPLEMENTED naming the op and the element type: what the interpreter returns for any
/// (op, type) it has no meaning for, instead of crashing.
inline Status unsupported(OpCode op, DType dtype, std::string_view detail = "") {
  return unimplemented_error(
      str_cat(op_name(op), ": not implemented for element type ", dtype_name(dtype), detail));
}

/// OK when a kernel producing R elements, `count` of them, can fill `result`. Inference
/// guarantees it; checking turns a disagreement into an error rather than a stray write.
template <class R>
Status check_result(const Shape& result, std::int64_t count) {
  if (dtype_of<R> != result.dtype() || result.element_count() != count)
    return internal_error(str_cat("reference: a kernel makes ", count, " ", dtype_name(dtype_of<R>),
                                  " elements for result ", result));
  return ok_status();
}

/// result[i] = f(x[i]).
template <class T, class F>
StatusOr<Literal> map_unary(const Literal& x, const Shape& result, F f) {
  using R = std::remove_cvref_t<std::invoke_result_t<F, T>>;
  PJRT_LITE_RETURN_IF_ERROR(check_result<R>(result, x.element_count()));
  Literal out(result);
  std::span<const T> in = x.data<T>();
  std::span<R> o = out.data<R>();
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = f(in[i]);
  return out;
}

/// result[i] = f(a[i], b[i]); a and b have one shape.
template <class T, class F>
StatusOr<Literal> map_binary(const Literal& a, const Literal& b, const Shape& result, F f) {
  using R = std::remove_cvref_t<std::invoke_result_t<F, T, T>>;
  PJRT_LITE_RETURN_IF_ERROR(check_result<R>(result, a.element_count()));
  if (b.element_count() != a.element_count())
    return internal_error("reference: binary operands of different sizes");
  Literal out(result);
  std::span<const T> lhs = a.data<T>();
  std::span<const T> rhs = b.data<T>();
  std::span<R> o = out.data<R>();
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = f(lhs[i], rhs[i]);
  return out;
}

/// abs .. imag. The cases list the element types each op accepts (accepted_types).
inline StatusOr<Literal> eval_unary(OpCode op, const Literal& x, const Shape& result) {
  return visit_dtype(x.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    constexpr bool kPred = std::is_same_v<T, bool>;
    constexpr bool kInt = is_int_v<T>;
    constexpr bool kSigned = kInt && std::is_signed_v<T>;
    constexpr bool kFloat = is_float_v<T>;
    constexpr bool kInexact = kFloat || is_complex_v<T>;
    switch (op) {
      case OpCode::kAbs:
        if constexpr (kSigned || kInexact) return map_unary<T>(x, result, scalar::abs<T>);
        break;
      case OpCode::kNegate:
        if constexpr (kInt || kInexact) return map_unary<T>(x, result, scalar::negate<T>);
        break;
      case OpCode::kSign:
        if constexpr (kSigned || kInexact) return map_unary<T>(x, result, scalar::sign<T>);
        break;
      case OpCode::kExponential:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::exponential<T>);
        break;
      case OpCode::kExponentialMinusOne:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::exponential_minus_one<T>);
        break;
      case OpCode::kLog:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::log<T>);
        break;
      case OpCode::kLogPlusOne:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::log_plus_one<T>);
        break;
      case OpCode::kSqrt:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::sqrt<T>);
        break;
      case OpCode::kRsqrt:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::rsqrt<T>);
        break;
      case OpCode::kCbrt:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::cbrt<T>);
        break;
      case OpCode::kTanh:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::tanh<T>);
        break;
      case OpCode::kLogistic:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::logistic<T>);
        break;
      case OpCode::kSine:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::sine<T>);
        break;
      case OpCode::kCosine:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::cosine<T>);
        break;
      case OpCode::kTan:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::tan<T>);
        break;
      case OpCode::kFloor:
        if constexpr (kFloat) return map_unary<T>(x, result, scalar::floor<T>);
        break;
      case OpCode::kCeil:
        if constexpr (kFloat) return map_unary<T>(x, result, scalar::ceil<T>);
        break;
      case OpCode::kRoundNearestAfz:
        if constexpr (kFloat) return map_unary<T>(x, result, scalar::round_nearest_afz<T>);
        break;
      case OpCode::kRoundNearestEven:
        if constexpr (kFloat) return map_unary<T>(x, result, scalar::round_nearest_even<T>);
        break;
      case OpCode::kIsFinite:
        if constexpr (kFloat) return map_unary<T>(x, result, scalar::is_finite<T>);
        break;
      case OpCode::kNot:
        if constexpr (kPred || kInt) return map_unary<T>(x, result, scalar::not_<T>);
        break;
      case OpCode::kPopcnt:
        if constexpr (kInt) return map_unary<T>(x, result, scalar::popcnt<T>);
        break;
      case OpCode::kCountLeadingZeros:
        if constexpr (kInt) return map_unary<T>(x, result, scalar::count_leading_zeros<T>);
        break;
      case OpCode::kReal:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::real<T>);
        break;
      case OpCode::kImag:
        if constexpr (kInexact) return map_unary<T>(x, result, scalar::imag<T>);
        break;
        // CHLO: computed in double (complex<double>), rounded once (core/special_math.hpp).
#define PJRT_LITE_CHLO_UNARY(code, fn)                                                        \
  case OpCode::code:                                                                          \
    if constexpr (kFloat) return map_unary<T>(x, result, special::in_double<special::fn, T>); \
    break;
#define PJRT_LITE_CHLO_UNARY_C(code, fn, real_fn)                                  \
  case OpCode::code:                                                               \
    if constexpr (kFloat) return map_unary<T>(x, result, real_fn);                 \
    if constexpr (is_complex_v<T>)                                                 \
      return map_unary<T>(x, result, special::in_complex_double<special::fn, T>);  \
    break;
        PJRT_LITE_CHLO_UNARY_C(kAcosh, acosh, (special::in_double<special::acosh, T>))
        PJRT_LITE_CHLO_UNARY_C(kAsin, asin, (special::in_double<special::asin, T>))
        PJRT_LITE_CHLO_UNARY_C(kAsinh, asinh, (special::in_double<special::asinh, T>))
        PJRT_LITE_CHLO_UNARY_C(kAtan, atan, (special::in_double<special::atan, T>))
        PJRT_LITE_CHLO_UNARY_C(kAtanh, atanh, (special::in_double<special::atanh, T>))
        PJRT_LITE_CHLO_UNARY_C(kCosh, cosh, special::cosh<T>)
        PJRT_LITE_CHLO_UNARY_C(kSinh, sinh, special::sinh<T>)
#undef PJRT_LITE_CHLO_UNARY_C
        PJRT_LITE_CHLO_UNARY(kErf, erf)
        PJRT_LITE_CHLO_UNARY(kErfc, erfc)
        PJRT_LITE_CHLO_UNARY(kErfInv, erf_inv)
        PJRT_LITE_CHLO_UNARY(kLgamma, lgamma)
        PJRT_LITE_CHLO_UNARY(kDigamma, digamma)
        PJRT_LITE_CHLO_UNARY(kBesselI1e, bessel_i1e)
#undef PJRT_LITE_CHLO_UNARY
      default: break;
    }
    return unsupported(op, x.dtype());
  });
}

/// add .. complex, on operands of one shape. The cases list the element types each op
/// accepts (accepted_types).
inline StatusOr<Literal> eval_binary(OpCode op, const Literal& a, const Literal& b,
                                     const Shape& result) {
  return visit_dtype(a.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    constexpr bool kPred = std::is_same_v<T, bool>;
    constexpr bool kInt = is_int_v<T>;
    constexpr bool kFloat = is_float_v<T>;
    constexpr bool kInexact = kFloat || is_complex_v<T>;
    switch (op) {
      case OpCode::kAdd: return map_binary<T>(a, b, result, scalar::add<T>);
      case OpCode::kSubtract:
        if constexpr (kInt || kInexact) return map_binary<T>(a, b, result, scalar::subtract<T>);
        break;
      case OpCode::kMultiply: return map_binary<T>(a, b, result, scalar::multiply<T>);
      case OpCode::kDivide:
        if constexpr (kInt || kInexact) return map_binary<T>(a, b, result, scalar::divide<T>);
        break;
      case OpCode::kRemainder:
        // The spec leaves complex remainder TBD (#997); shape inference rejects it.
        if constexpr (kInt || kFloat) return map_binary<T>(a, b, result, scalar::remainder<T>);
        break;
      case OpCode::kPower:
        if constexpr (kInt || kInexact) return map_binary<T>(a, b, result, scalar::power<T>);
        break;
      case OpCode::kMaximum: return map_binary<T>(a, b, result, scalar::maximum<T>);
      case OpCode::kMinimum: return map_binary<T>(a, b, result, scalar::minimum<T>);
      case OpCode::kAtan2:
        if constexpr (kInexact) return map_binary<T>(a, b, result, scalar::atan2<T>);
        break;
      case OpCode::kNextAfter:
        if constexpr (kFloat) return map_binary<T>(a, b, result, special::next_after<T>);
        break;
      case OpCode::kAnd:
        if constexpr (kPred || kInt) return map_binary<T>(a, b, result, scalar::and_<T>);
        break;
      case OpCode::kOr:
        if constexpr (kPred || kInt) return map_binary<T>(a, b, result, scalar::or_<T>);
        break;
      case OpCode::kXor:
        if constexpr (kPred || kInt) return map_binary<T>(a, b, result, scalar::xor_<T>);
        break;
      case OpCode::kShiftLeft:
        if constexpr (kInt) return map_binary<T>(a, b, result, scalar::shift_left<T>);
        break;
      case OpCode::kShiftRightArithmetic:
        if constexpr (kInt) return map_binary<T>(a, b, result, scalar::shift_right_arithmetic<T>);
        break;
      case OpCode::kShiftRightLogical:
        if constexpr (kInt) return map_binary<T>(a, b, result, scalar::shift_right_logical<T>);
        break;
      case OpCode::kComplex:
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
          return map_binary<T>(a, b, result, scalar::complex<T>);
        break;
      default: break;
    }
    return unsupported(op, a.dtype());
  });
}

/// compare. Complex numbers compare only for EQ and NE, like XLA's evaluator: the spec's
/// lexicographic order on complex numbers is slated for removal (#560), so GE, GT, LE and LT
/// on complex are UNIMPLEMENTED rather than given a meaning that is going away.
inline StatusOr<Literal> eval_compare(const Literal& a, const Literal& b, const CompareAttrs& attrs,
                                      const Shape& result) {
  return visit_dtype(a.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    if constexpr (is_complex_v<T>) {
      if (attrs.direction != ComparisonDirection::kEq &&
          attrs.direction != ComparisonDirection::kNe)
        return unsupported(OpCode::kCompare, a.dtype(),
                           str_cat(" with direction ", comparison_direction_name(attrs.direction),
                                   " (complex numbers compare only for EQ and NE)"));
    }
    return map_binary<T>(
        a, b, result, [&](T x, T y) { return scalar::compare(x, y, attrs.direction, attrs.type); });
  });
}

/// select(pred, on_true, on_false); a rank-0 pred chooses for every element.
inline StatusOr<Literal> eval_select(const Literal& pred, const Literal& on_true,
                                     const Literal& on_false, const Shape& result) {
  Literal out(result);
  std::span<const bool> p = pred.data<bool>();
  for (std::int64_t i = 0; i < out.element_count(); ++i) {
    const bool choice = p[pred.shape().is_scalar() ? 0 : static_cast<std::size_t>(i)];
    copy_element(choice ? on_true : on_false, i, out, i);
  }
  return out;
}

/// clamp(min, operand, max) = minimum(maximum(operand, min), max), with min and max of rank
/// 0 applying to every element.
inline StatusOr<Literal> eval_clamp(const Literal& min, const Literal& operand, const Literal& max,
                                    const Shape& result) {
  return visit_dtype(operand.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    PJRT_LITE_RETURN_IF_ERROR(check_result<T>(result, operand.element_count()));
    Literal out(result);
    std::span<const T> lo = min.data<T>();
    std::span<const T> x = operand.data<T>();
    std::span<const T> hi = max.data<T>();
    std::span<T> o = out.data<T>();
    for (std::size_t i = 0; i < o.size(); ++i) {
      const T bound_lo = lo[min.shape().is_scalar() ? 0 : i];
      const T bound_hi = hi[max.shape().is_scalar() ? 0 : i];
      o[i] = scalar::minimum(scalar::maximum(x[i], bound_lo), bound_hi);
    }
    return out;
  });
}

/// convert, with convert_element's rules (StableHLO convert; float to integer saturates and
/// NaN becomes 0, where the spec leaves it TBD).
inline StatusOr<Literal> eval_convert(const Literal& x, const Shape& result) {
  if (is_narrow(x.dtype()) || is_narrow(result.dtype())) return x.convert(result.dtype());
  return visit_dtype(x.dtype(), [&]<class From>(std::type_identity<From>) -> StatusOr<Literal> {
    return visit_dtype(result.dtype(), [&]<class To>(std::type_identity<To>) -> StatusOr<Literal> {
      return map_unary<From>(x, result, [](From v) { return convert_element<To>(v); });
    });
  });
}

/// reduce_precision, element by element on the operand's own bits (special::reduce_precision).
inline StatusOr<Literal> eval_reduce_precision(const Literal& x, const ReducePrecisionAttrs& a,
                                               const Shape& result) {
  return visit_dtype(x.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    if constexpr (is_float_v<T>) {
      return map_unary<T>(x, result, [&](T v) {
        return special::reduce_precision<T>(v, a.exponent_bits, a.mantissa_bits);
      });
    } else {
      return unsupported(OpCode::kReducePrecision, x.dtype());
    }
  });
}

}  // namespace pjrt_lite::reference::detail
