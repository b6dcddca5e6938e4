#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Element-wise functions and operators on tensors and weakly typed C++ scalars, with numpy
// broadcasting and JAX's type promotion: the unary math functions, arithmetic (true division,
// numpy's remainder), bitwise and comparison operators, conj, where and clip.

#include <string>
#include <type_traits>
#include <vector>

#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

namespace detail {

// The operands promoted to one dtype and broadcast to one shape, numpy style.
inline Trace* coerce(const char* op, std::vector<Tensor*> xs, bool promote = true) {
  Trace* t = nullptr;
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (!(t = resolve(op, {xs[0], xs[i]}))) return nullptr;
  for (Tensor* x : xs) *x = t->lift(*x);
  std::vector<std::int64_t> dims;
  for (Tensor* x : xs) {
    const std::vector<std::int64_t> d = x->dims();
    if (d.size() > dims.size()) dims.insert(dims.begin(), d.size() - dims.size(), 1);
    for (std::size_t i = 0; i < d.size(); ++i) {
      std::int64_t& to = dims[dims.size() - d.size() + i];
      if (to == 1) {
        to = d[i];
      } else if (d[i] != 1 && d[i] != to) {
        std::string shapes;
        for (Tensor* y : xs) shapes += (shapes.empty() ? "" : " and ") + y->shape().to_string();
        t->fail(invalid_argument_error(
            str_cat(op, ": shapes ", shapes, " do not broadcast (numpy rules)")));
        return nullptr;
      }
    }
  }
  std::vector<DType> dtypes;
  for (Tensor* x : xs) dtypes.push_back(x->dtype());
  const DType dtype = promote_types(dtypes);
  for (Tensor* x : xs) {
    if (promote) *x = astype(*x, dtype);
    *x = broadcast_to(*x, dims);
  }
  return t->ok() ? t : nullptr;
}

inline Tensor binary(OpCode op, Tensor a, Tensor b) {
  Trace* t = coerce(op_name(op).data(), {&a, &b});
  if (t == nullptr) return Tensor();
  return t->wrap(t->builder().binary(op, a.value(), b.value()));
}

inline Tensor compare(ComparisonDirection dir, Tensor a, Tensor b) {
  Trace* t = coerce("compare", {&a, &b});
  if (t == nullptr) return Tensor();
  return t->wrap(t->builder().compare(a.value(), b.value(), dir));
}

// Integers and booleans become f32 for the functions that are only defined on real numbers,
// as jnp.sin of an int32 array is an f32 array.
inline Tensor inexact(const Tensor& x) {
  return is_inexact(x.dtype()) ? x : astype(x, DType::kF32);
}

inline Tensor unary(OpCode op, Tensor x, bool needs_inexact) {
  Trace* t = resolve(op_name(op).data(), {&x});
  if (t == nullptr) return Tensor();
  if (needs_inexact) x = inexact(x);
  return t->wrap(t->builder().unary(op, x.value()));
}

template <Scalar S>
Tensor weak(const Tensor& like, S value) {
  Tensor x = like;
  Trace* t = resolve("scalar operand", {&x});
  if (t == nullptr) return Tensor();
  return constant_in(t, scalar_literal(weak_dtype<S>(x.dtype()), value));
}

}  // namespace detail

#define PJRT_LITE_NP_UNARY(name, opcode, inexact) \
  inline Tensor name(const Tensor& x) { return detail::unary(OpCode::opcode, x, inexact); }
PJRT_LITE_NP_UNARY(abs, kAbs, false)
PJRT_LITE_NP_UNARY(negative, kNegate, false)
PJRT_LITE_NP_UNARY(sign, kSign, false)
PJRT_LITE_NP_UNARY(exp, kExponential, true)
PJRT_LITE_NP_UNARY(expm1, kExponentialMinusOne, true)
PJRT_LITE_NP_UNARY(log, kLog, true)
PJRT_LITE_NP_UNARY(log1p, kLogPlusOne, true)
PJRT_LITE_NP_UNARY(sqrt, kSqrt, true)
PJRT_LITE_NP_UNARY(rsqrt, kRsqrt, true)
PJRT_LITE_NP_UNARY(cbrt, kCbrt, true)
PJRT_LITE_NP_UNARY(tanh, kTanh, true)
PJRT_LITE_NP_UNARY(sin, kSine, true)
PJRT_LITE_NP_UNARY(cos, kCosine, true)
PJRT_LITE_NP_UNARY(tan, kTan, true)
PJRT_LITE_NP_UNARY(floor, kFloor, true)
PJRT_LITE_NP_UNARY(ceil, kCeil, true)
/// Round half to even, as numpy.round.
PJRT_LITE_NP_UNARY(round, kRoundNearestEven, true)
PJRT_LITE_NP_UNARY(isfinite, kIsFinite, true)
PJRT_LITE_NP_UNARY(real, kReal, false)
PJRT_LITE_NP_UNARY(imag, kImag, false)
#undef PJRT_LITE_NP_UNARY

/// Logical not of booleans, bitwise not of integers.
inline Tensor operator~(const Tensor& x) { return detail::unary(OpCode::kNot, x, false); }
inline Tensor operator!(const Tensor& x) { return detail::unary(OpCode::kNot, x, false); }
inline Tensor operator-(const Tensor& x) { return negative(x); }
inline Tensor operator+(const Tensor& x) { return x; }

#define PJRT_LITE_NP_BINARY(name, opcode)                         \
  inline Tensor name(const Tensor& a, const Tensor& b) {          \
    return detail::binary(OpCode::opcode, a, b);                  \
  }                                                               \
  template <Scalar S>                                             \
  Tensor name(const Tensor& a, S b) {                             \
    return detail::binary(OpCode::opcode, a, detail::weak(a, b)); \
  }                                                               \
  template <Scalar S>                                             \
  Tensor name(S a, const Tensor& b) {                             \
    return detail::binary(OpCode::opcode, detail::weak(b, a), b); \
  }
PJRT_LITE_NP_BINARY(add, kAdd)
PJRT_LITE_NP_BINARY(subtract, kSubtract)
PJRT_LITE_NP_BINARY(multiply, kMultiply)
PJRT_LITE_NP_BINARY(maximum, kMaximum)
PJRT_LITE_NP_BINARY(minimum, kMinimum)
PJRT_LITE_NP_BINARY(power, kPower)
PJRT_LITE_NP_BINARY(arctan2, kAtan2)
PJRT_LITE_NP_BINARY(bitwise_and, kAnd)
PJRT_LITE_NP_BINARY(bitwise_or, kOr)
PJRT_LITE_NP_BINARY(bitwise_xor, kXor)
#undef PJRT_LITE_NP_BINARY

/// True division: integer operands divide as f32, as in jax.numpy.
inline Tensor divide(const Tensor& a, const Tensor& b) {
  const bool ints = !is_inexact(promote_types(a.dtype(), b.dtype()));
  return detail::binary(OpCode::kDivide, ints ? detail::inexact(a) : a,
                        ints ? detail::inexact(b) : b);
}
template <Scalar S>
Tensor divide(const Tensor& a, S b) {
  Tensor x = std::is_floating_point_v<S> ? a : detail::inexact(a);
  return divide(x, detail::weak(x, b));
}
template <Scalar S>
Tensor divide(S a, const Tensor& b) {
  Tensor x = std::is_floating_point_v<S> ? b : detail::inexact(b);
  return divide(detail::weak(x, a), x);
}

/// numpy's remainder: the result has the sign of the divisor.
inline Tensor remainder(const Tensor& a, const Tensor& b) {
  Tensor x = a, y = b;
  Trace* t = detail::coerce("remainder", {&x, &y});
  if (t == nullptr) return Tensor();
  GraphBuilder& g = t->builder();
  Value r = g.remainder(x.value(), y.value());
  Value zero = g.broadcast_in_dim(g.constant(detail::scalar_literal(x.dtype(), 0)), x.dims(), {});
  Value fix = g.and_(g.compare(r, zero, ComparisonDirection::kNe),
                     g.xor_(g.compare(r, zero, ComparisonDirection::kLt),
                            g.compare(y.value(), zero, ComparisonDirection::kLt)));
  return t->wrap(g.select(fix, g.add(r, y.value()), r));
}
template <Scalar S>
Tensor remainder(const Tensor& a, S b) {
  return remainder(a, detail::weak(a, b));
}
template <Scalar S>
Tensor remainder(S a, const Tensor& b) {
  return remainder(detail::weak(b, a), b);
}

#define PJRT_LITE_NP_OPERATOR(op, fn)                                              \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  template <Scalar S>                                                              \
  Tensor operator op(const Tensor& a, S b) {                                       \
    return fn(a, b);                                                               \
  }                                                                                \
  template <Scalar S>                                                              \
  Tensor operator op(S a, const Tensor& b) {                                       \
    return fn(a, b);                                                               \
  }
PJRT_LITE_NP_OPERATOR(+, add)
PJRT_LITE_NP_OPERATOR(-, subtract)
PJRT_LITE_NP_OPERATOR(*, multiply)
PJRT_LITE_NP_OPERATOR(/, divide)
PJRT_LITE_NP_OPERATOR(&, bitwise_and)
PJRT_LITE_NP_OPERATOR(|, bitwise_or)
PJRT_LITE_NP_OPERATOR(^, bitwise_xor)
#undef PJRT_LITE_NP_OPERATOR

inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a = a + b; }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a = a - b; }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a = a * b; }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a = a / b; }

#define PJRT_LITE_NP_COMPARE(op, dir)                                        \
  inline Tensor operator op(const Tensor& a, const Tensor& b) {              \
    return detail::compare(ComparisonDirection::dir, a, b);                  \
  }                                                                          \
  template <Scalar S>                                                        \
  Tensor operator op(const Tensor& a, S b) {                                 \
    return detail::compare(ComparisonDirection::dir, a, detail::weak(a, b)); \
  }                                                                          \
  template <Scalar S>                                                        \
  Tensor operator op(S a, const Tensor& b) {                                 \
    return detail::compare(ComparisonDirection::dir, detail::weak(b, a), b); \
  }
PJRT_LITE_NP_COMPARE(==, kEq)
PJRT_LITE_NP_COMPARE(!=, kNe)
PJRT_LITE_NP_COMPARE(<, kLt)
PJRT_LITE_NP_COMPARE(<=, kLe)
PJRT_LITE_NP_COMPARE(>, kGt)
PJRT_LITE_NP_COMPARE(>=, kGe)
#undef PJRT_LITE_NP_COMPARE

/// x * x.
inline Tensor square(const Tensor& x) { return x * x; }
/// The complex conjugate; real arrays are returned unchanged.
inline Tensor conj(Tensor x) {
  Trace* t = detail::resolve("conj", {&x});
  if (t == nullptr || !is_complex(x.dtype())) return x;
  GraphBuilder& b = t->builder();
  return t->wrap(b.complex(b.real(x.value()), b.negate(b.imag(x.value()))));
}

/// cond ? a : b element-wise, with numpy broadcasting; cond must be boolean.
inline Tensor where(Tensor cond, Tensor a, Tensor b) {
  Trace* t = detail::coerce("where", {&a, &b});
  if (t == nullptr) return Tensor();
  Tensor c = cond;
  if (!(t = detail::coerce("where", {&c, &a, &b}, false))) return Tensor();
  if (c.dtype() != DType::kPred)
    return detail::fail(
        t, invalid_argument_error(str_cat("where: the condition must be pred, got ", c.shape())));
  return t->wrap(t->builder().select(c.value(), a.value(), b.value()));
}
template <Scalar S>
Tensor where(const Tensor& cond, const Tensor& a, S b) {
  return where(cond, a, detail::weak(a, b));
}
template <Scalar S>
Tensor where(const Tensor& cond, S a, const Tensor& b) {
  return where(cond, detail::weak(b, a), b);
}

/// min(max(x, lo), hi).
template <class Lo, class Hi>
Tensor clip(const Tensor& x, const Lo& lo, const Hi& hi) {
  return minimum(maximum(x, lo), hi);
}

}  // namespace np

}  // namespace pjrt_lite
