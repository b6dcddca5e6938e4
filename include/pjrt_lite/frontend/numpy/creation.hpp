#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Arrays made from nothing but values and sizes, in the innermost active trace: array, full,
// zeros, ones and their *_like forms, arange and eye.

#include <cstdint>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// A constant array in the innermost active trace.
inline Tensor array(Literal value) {
  Trace* t = detail::current_trace();
  return t ? detail::constant_in(t, std::move(value)) : Tensor();
}
/// An array of `dims` filled with `value`, of `dtype`, in the innermost active trace.
template <Scalar S>
Tensor full(std::vector<std::int64_t> dims, S value, DType dtype = dtype_of<S>) {
  Trace* t = detail::current_trace();
  if (t == nullptr) return Tensor();
  if (!is_valid(dtype)) return detail::fail(t, invalid_argument_error("full: invalid dtype"));
  GraphBuilder& b = t->builder();
  return t->wrap(
      b.broadcast_in_dim(b.constant(detail::scalar_literal(dtype, value)), std::move(dims), {}));
}
inline Tensor zeros(std::vector<std::int64_t> dims, DType dtype = DType::kF32) {
  return full(std::move(dims), 0, dtype);
}
inline Tensor ones(std::vector<std::int64_t> dims, DType dtype = DType::kF32) {
  return full(std::move(dims), 1, dtype);
}
template <Scalar S>
Tensor full_like(Tensor x, S value) {
  Trace* t = detail::resolve("full_like", {&x});
  if (t == nullptr) return Tensor();
  GraphBuilder& b = t->builder();
  return t->wrap(
      b.broadcast_in_dim(b.constant(detail::scalar_literal(x.dtype(), value)), x.dims(), {}));
}
inline Tensor zeros_like(const Tensor& x) { return full_like(x, 0); }
inline Tensor ones_like(const Tensor& x) { return full_like(x, 1); }
/// 0, 1, ..., n-1.
inline Tensor arange(std::int64_t n, DType dtype = DType::kS32) {
  Trace* t = detail::current_trace();
  if (t == nullptr) return Tensor();
  return t->wrap(t->builder().iota(Shape(dtype, {n}), 0));
}
/// The n x n identity.
inline Tensor eye(std::int64_t n, DType dtype = DType::kF32) {
  Trace* t = detail::current_trace();
  if (t == nullptr) return Tensor();
  GraphBuilder& b = t->builder();
  Value rows = b.iota(Shape(DType::kS64, {n, n}), 0), cols = b.iota(Shape(DType::kS64, {n, n}), 1);
  return t->wrap(b.convert(b.compare(rows, cols, ComparisonDirection::kEq), dtype));
}

}  // namespace np

}  // namespace pjrt_lite
