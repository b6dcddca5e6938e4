#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// numpy's functions that move, cast and cut arrays without arithmetic: astype, broadcast_to,
// reshape, transpose, moveaxis, expand_dims, squeeze, slice, concatenate and stack; and the
// Tensor members that are these ops.

#include <cstdint>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

inline Tensor astype(Tensor x, DType dtype) {
  Trace* t = detail::resolve("astype", {&x});
  if (t == nullptr) return Tensor();
  if (x.dtype() == dtype) return x;
  return t->wrap(t->builder().convert(x.value(), dtype));
}

/// numpy broadcast_to: aligns trailing dimensions; size-1 dimensions stretch.
inline Tensor broadcast_to(Tensor x, std::vector<std::int64_t> dims) {
  Trace* t = detail::resolve("broadcast_to", {&x});
  if (t == nullptr) return Tensor();
  const std::vector<std::int64_t> from = x.dims();
  if (from == dims) return x;
  const auto r = static_cast<std::int64_t>(dims.size()), xr = x.rank();
  if (xr > r)
    return detail::fail(
        t, invalid_argument_error(str_cat("broadcast_to: cannot broadcast ", x.shape(),
                                          " to fewer dimensions ", Shape(x.dtype(), dims))));
  std::vector<std::int64_t> bdims;
  for (std::int64_t d = 0; d < xr; ++d) {
    const std::int64_t to = r - xr + d;
    if (from[d] != 1 && from[d] != dims[to])
      return detail::fail(
          t, invalid_argument_error(str_cat("broadcast_to: cannot broadcast ", x.shape(), " to ",
                                            Shape(x.dtype(), dims))));
    bdims.push_back(to);
  }
  return t->wrap(t->builder().broadcast_in_dim(x.value(), std::move(dims), std::move(bdims)));
}

inline Tensor reshape(Tensor x, std::vector<std::int64_t> dims) {
  Trace* t = detail::resolve("reshape", {&x});
  if (t == nullptr) return Tensor();
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return detail::fail(t, invalid_argument_error(str_cat(
                                 "reshape: dimension ", i, " is ", dims[i],
                                 "; only one dimension may be -1 and none other negative")));
    } else {
      known *= dims[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x.size() % known != 0)
      return detail::fail(t, invalid_argument_error(str_cat("reshape: cannot reshape ", x.shape(),
                                                            " with a -1 dimension")));
    dims[static_cast<std::size_t>(inferred)] = x.size() / known;
  }
  return t->wrap(t->builder().reshape(x.value(), std::move(dims)));
}

/// Dimensions permuted: result dimension i is x's dimension perm[i]; no perm reverses them.
inline Tensor transpose(Tensor x, std::vector<std::int64_t> perm = {}) {
  Trace* t = detail::resolve("transpose", {&x});
  if (t == nullptr) return Tensor();
  if (perm.empty())
    for (std::int64_t d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
  for (auto& p : perm)
    if (p < 0) p += x.rank();
  return t->wrap(t->builder().transpose(x.value(), std::move(perm)));
}

/// Moves dimension `from` to position `to`, keeping the others in order.
inline Tensor moveaxis(Tensor x, std::int64_t from, std::int64_t to) {
  Trace* t = detail::resolve("moveaxis", {&x});
  if (t == nullptr) return Tensor();
  auto f = detail::axis_index(t, "moveaxis", from, x.rank());
  auto d = detail::axis_index(t, "moveaxis", to, x.rank());
  if (!f || !d) return Tensor();
  std::vector<std::int64_t> perm;
  for (std::int64_t i = 0; i < x.rank(); ++i)
    if (i != *f) perm.push_back(i);
  perm.insert(perm.begin() + *d, *f);
  return transpose(x, std::move(perm));
}

/// A size-1 dimension inserted at `axis` (negative counts from the end of the result).
inline Tensor expand_dims(Tensor x, std::int64_t axis) {
  Trace* t = detail::resolve("expand_dims", {&x});
  if (t == nullptr) return Tensor();
  auto a = detail::axis_index(t, "expand_dims", axis, x.rank() + 1);
  if (!a) return Tensor();
  std::vector<std::int64_t> dims = x.dims();
  dims.insert(dims.begin() + *a, 1);
  return reshape(x, std::move(dims));
}

/// Size-1 dimensions removed: those in `axes`, or all of them.
inline Tensor squeeze(Tensor x, std::vector<std::int64_t> axes = {}) {
  Trace* t = detail::resolve("squeeze", {&x});
  if (t == nullptr) return Tensor();
  std::vector<bool> drop(static_cast<std::size_t>(x.rank()), axes.empty());
  for (std::int64_t axis : axes) {
    auto a = detail::axis_index(t, "squeeze", axis, x.rank());
    if (!a) return Tensor();
    if (x.dim(*a) != 1)
      return detail::fail(t, invalid_argument_error(str_cat("squeeze: dimension ", *a, " of ",
                                                            x.shape(), " is not 1")));
    drop[static_cast<std::size_t>(*a)] = true;
  }
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < x.rank(); ++d)
    if (!(drop[static_cast<std::size_t>(d)] && x.dim(d) == 1)) dims.push_back(x.dim(d));
  return reshape(x, std::move(dims));
}

/// Elements [start, limit) with step `strides` (1 when empty) in each dimension.
inline Tensor slice(Tensor x, std::vector<std::int64_t> start, std::vector<std::int64_t> limit,
                    std::vector<std::int64_t> strides = {}) {
  Trace* t = detail::resolve("slice", {&x});
  if (t == nullptr) return Tensor();
  return t->wrap(
      t->builder().slice(x.value(), std::move(start), std::move(limit), std::move(strides)));
}

/// Joins tensors along an existing axis; dtypes are promoted.
inline Tensor concatenate(std::vector<Tensor> xs, std::int64_t axis = 0) {
  Trace* t = detail::current_trace();
  if (xs.empty()) return detail::fail(t, invalid_argument_error("concatenate: no tensors"));
  // Resolve pairwise against the first so every tensor ends up in the innermost trace.
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (!detail::resolve("concatenate", {&xs[0], &xs[i]})) return Tensor();
  t = detail::resolve("concatenate", {&xs[0]});
  if (t == nullptr) return Tensor();
  for (auto& x : xs) x = t->lift(x);
  auto a = detail::axis_index(t, "concatenate", axis, xs[0].rank());
  if (!a) return Tensor();
  std::vector<DType> dtypes;
  for (const auto& x : xs) dtypes.push_back(x.dtype());
  const DType dtype = promote_types(dtypes);
  std::vector<Value> values;
  for (const auto& x : xs) values.push_back(astype(x, dtype).value());
  return t->wrap(t->builder().concatenate(values, *a));
}

/// Joins tensors of one shape along a new axis.
inline Tensor stack(std::vector<Tensor> xs, std::int64_t axis = 0) {
  for (auto& x : xs) x = expand_dims(x, axis);
  return concatenate(std::move(xs), axis);
}

inline Tensor Tensor::astype(DType dtype) const { return np::astype(*this, dtype); }
inline Tensor Tensor::reshape(std::vector<std::int64_t> dims) const {
  return np::reshape(*this, std::move(dims));
}
inline Tensor Tensor::T() const { return np::transpose(*this); }
inline std::int64_t Tensor::dim(std::int64_t axis) const {
  const Shape s = shape();
  const std::int64_t a = axis < 0 ? axis + s.rank() : axis;
  return a >= 0 && a < s.rank() ? s.dim(a) : -1;
}
inline Tensor Tensor::operator[](std::int64_t i) const {
  Tensor x = *this;
  Trace* t = detail::resolve("operator[]", {&x});
  if (t == nullptr) return Tensor();
  if (x.rank() == 0)
    return detail::fail(t, invalid_argument_error("operator[]: cannot index a rank-0 tensor"));
  const std::int64_t n = x.dim(0), k = i < 0 ? i + n : i;
  if (k < 0 || k >= n)
    return detail::fail(
        t, invalid_argument_error(str_cat("operator[]: index ", i,
                                          " is out of range for dimension 0 of ", x.shape())));
  std::vector<std::int64_t> start(static_cast<std::size_t>(x.rank()), 0), limit = x.dims();
  start[0] = k;
  limit[0] = k + 1;
  std::vector<std::int64_t> dims(limit.begin() + 1, limit.end());
  return np::reshape(np::slice(x, std::move(start), std::move(limit)), std::move(dims));
}

}  // namespace np

// A braced list of tensors is not an argument that finds np:: by lookup: these two are
// also reachable from pjrt_lite.
using np::concatenate;
using np::stack;

}  // namespace pjrt_lite
