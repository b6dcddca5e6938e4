#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Reductions over axes: sum, prod, max, min, mean (with keepdims), argmax and argmin.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

namespace detail {

// Normalized, sorted, distinct axes; all of them for an empty list.
inline std::optional<std::vector<std::int64_t>> reduce_axes(Trace* t, const char* op,
                                                            std::vector<std::int64_t> axes,
                                                            std::int64_t rank) {
  if (axes.empty())
    for (std::int64_t d = 0; d < rank; ++d) axes.push_back(d);
  for (auto& a : axes) {
    auto n = axis_index(t, op, a, rank);
    if (!n) return std::nullopt;
    a = *n;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    t->fail(invalid_argument_error(str_cat(op, ": an axis is listed twice")));
    return std::nullopt;
  }
  return axes;
}

inline Tensor keep_dims(const Tensor& reduced, const std::vector<std::int64_t>& axes,
                        std::vector<std::int64_t> dims) {
  for (std::int64_t a : axes) dims[static_cast<std::size_t>(a)] = 1;
  return reshape(reduced, std::move(dims));
}

inline Tensor reduce(const char* name, OpCode op, Tensor x, std::vector<std::int64_t> axes,
                     bool keepdims) {
  Trace* t = resolve(name, {&x});
  if (t == nullptr) return Tensor();
  if (op == OpCode::kAdd && x.dtype() == DType::kPred) x = astype(x, DType::kS32);
  auto ax = reduce_axes(t, name, std::move(axes), x.rank());
  if (!ax) return Tensor();
  GraphBuilder& b = t->builder();
  Value init;
  if (op == OpCode::kAdd)
    init = b.constant(scalar_literal(x.dtype(), 0));
  else if (op == OpCode::kMultiply)
    init = b.constant(scalar_literal(x.dtype(), 1));
  else if (is_complex(x.dtype()))
    return fail(t, invalid_argument_error(str_cat(name, ": complex numbers have no order")));
  else
    init = b.constant(pjrt_lite::detail::extreme_scalar(x.dtype(), op == OpCode::kMaximum));
  Tensor r = t->wrap(b.reduce(x.value(), init, op, *ax));
  return keepdims ? keep_dims(r, *ax, x.dims()) : r;
}

}  // namespace detail

/// Sum over `axes` (all when empty); booleans count as s32.
inline Tensor sum(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("sum", OpCode::kAdd, x, std::move(axes), keepdims);
}
inline Tensor prod(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("prod", OpCode::kMultiply, x, std::move(axes), keepdims);
}
inline Tensor max(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("max", OpCode::kMaximum, x, std::move(axes), keepdims);
}
inline Tensor min(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("min", OpCode::kMinimum, x, std::move(axes), keepdims);
}
/// The mean over `axes` (all when empty); integers average as f32.
inline Tensor mean(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  Tensor y = x;
  Trace* t = detail::resolve("mean", {&y});
  if (t == nullptr) return Tensor();
  auto ax = detail::reduce_axes(t, "mean", axes, y.rank());
  if (!ax) return Tensor();
  std::int64_t count = 1;
  for (std::int64_t a : *ax) count *= y.dim(a);
  return sum(detail::inexact(y), *ax, keepdims) / static_cast<double>(count);
}

namespace detail {
inline Tensor arg_reduce(bool is_max, Tensor x, std::int64_t axis, bool keepdims) {
  const char* name = is_max ? "argmax" : "argmin";
  Trace* t = resolve(name, {&x});
  if (t == nullptr) return Tensor();
  auto a = axis_index(t, name, axis, x.rank());
  if (!a) return Tensor();
  GraphBuilder& b = t->builder();
  std::vector<Value> r = is_max ? b.argmax(x.value(), *a) : b.argmin(x.value(), *a);
  Tensor index = t->wrap(r[1]);
  return keepdims ? keep_dims(index, {*a}, x.dims()) : index;
}
}  // namespace detail

/// The index (s32) of the largest element along `axis`: NaN wins, ties go to the first.
inline Tensor argmax(const Tensor& x, std::int64_t axis, bool keepdims = false) {
  return detail::arg_reduce(true, x, axis, keepdims);
}
inline Tensor argmin(const Tensor& x, std::int64_t axis, bool keepdims = false) {
  return detail::arg_reduce(false, x, axis, keepdims);
}

}  // namespace np

}  // namespace pjrt_lite
