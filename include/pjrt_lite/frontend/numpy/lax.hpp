#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// jax.lax's structural ops on tensors: pad (edge and interior), flip / rev, dynamic_slice and
// dynamic_update_slice with traced start indices, and the cumulative reductions cumsum,
// cumprod, cummax and cummin. The cumulative ones are a log-depth prefix scan of pads,
// slices and element-wise ops, so they have derivatives at every order wherever the
// element-wise op has one.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/numpy/creation.hpp"
#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// One dimension of lax.pad's padding_config: elements added before, after and between the
/// elements (lo and hi may be negative, which cuts).
struct PadConfig {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  std::int64_t interior = 0;
};

/// lax.pad: `x` with `config[d]` padding of `padding_value` (a rank-0 tensor of x's dtype, or
/// a C++ scalar) in each dimension d.
inline Tensor pad(Tensor x, Tensor padding_value, const std::vector<PadConfig>& config) {
  Trace* t = detail::resolve("pad", {&x, &padding_value});
  if (t == nullptr) return Tensor();
  if (static_cast<std::int64_t>(config.size()) != x.rank())
    return detail::fail(t, invalid_argument_error(str_cat("pad: ", config.size(),
                                                          " padding entries for an array ",
                                                          x.shape(), " of rank ", x.rank())));
  if (padding_value.rank() != 0)
    return detail::fail(t, invalid_argument_error(str_cat(
                               "pad: the padding value must be rank 0, got ", padding_value.shape())));
  std::vector<std::int64_t> lo, hi, interior;
  for (const PadConfig& c : config) {
    if (c.interior < 0)
      return detail::fail(t, invalid_argument_error(str_cat(
                                 "pad: interior padding must not be negative, got ", c.interior)));
    lo.push_back(c.lo);
    hi.push_back(c.hi);
    interior.push_back(c.interior);
  }
  padding_value = astype(padding_value, x.dtype());
  return t->wrap(t->builder().pad(x.value(), padding_value.value(), std::move(lo), std::move(hi),
                                  std::move(interior)));
}
template <Scalar S>
Tensor pad(const Tensor& x, S padding_value, const std::vector<PadConfig>& config) {
  return pad(x, detail::weak(x, padding_value), config);
}

/// numpy flip: the order of the elements reversed along `axes` (all when empty).
inline Tensor flip(Tensor x, std::vector<std::int64_t> axes = {}) {
  Trace* t = detail::resolve("flip", {&x});
  if (t == nullptr) return Tensor();
  if (axes.empty())
    for (std::int64_t d = 0; d < x.rank(); ++d) axes.push_back(d);
  for (auto& a : axes) {
    auto n = detail::axis_index(t, "flip", a, x.rank());
    if (!n) return Tensor();
    a = *n;
  }
  return t->wrap(t->builder().reverse(x.value(), std::move(axes)));
}
/// lax.rev: flip along `dimensions`.
inline Tensor rev(const Tensor& x, std::vector<std::int64_t> dimensions) {
  if (dimensions.empty()) return x;
  return flip(x, std::move(dimensions));
}

namespace detail {
// Start indices for a dynamic slice of `x`: each a rank-0 integer tensor, negative ones
// counted from the end (lax's allow_negative_indices), converted to s32.
inline std::optional<std::vector<Value>> start_values(Trace* t, const char* op, const Tensor& x,
                                                      std::vector<Tensor>& starts) {
  if (static_cast<std::int64_t>(starts.size()) != x.rank()) {
    t->fail(invalid_argument_error(str_cat(op, ": ", starts.size(), " start indices for ",
                                           x.shape(), ", which has rank ", x.rank())));
    return std::nullopt;
  }
  std::vector<Value> values;
  for (std::size_t d = 0; d < starts.size(); ++d) {
    Tensor& s = starts[d];
    s = t->lift(s);
    if (!s.valid()) return std::nullopt;
    if (s.rank() != 0 || !is_integral(s.dtype())) {
      t->fail(invalid_argument_error(str_cat(op, ": start index ", d,
                                             " must be a rank-0 integer, got ", s.shape())));
      return std::nullopt;
    }
    Tensor i = astype(s, DType::kS32);
    i = where(i < 0, i + static_cast<int>(x.dim(static_cast<std::int64_t>(d))), i);
    values.push_back(i.value());
  }
  return values;
}
inline std::vector<Tensor> starts_of(const std::vector<std::int64_t>& starts) {
  std::vector<Tensor> r;
  for (std::int64_t s : starts) r.push_back(full({}, s, DType::kS64));
  return r;
}
}  // namespace detail

/// lax.dynamic_slice: the `slice_sizes` block of `x` at `start_indices` (rank-0 integer
/// tensors, one per dimension; negative ones count from the end). As in XLA, a start is
/// clamped so the block stays inside `x`.
inline Tensor dynamic_slice(Tensor x, std::vector<Tensor> start_indices,
                            std::vector<std::int64_t> slice_sizes) {
  Trace* t = detail::resolve("dynamic_slice", {&x});
  if (t == nullptr) return Tensor();
  for (Tensor& s : start_indices)
    if (!(t = detail::resolve("dynamic_slice", {&x, &s}))) return Tensor();
  auto starts = detail::start_values(t, "dynamic_slice", x, start_indices);
  if (!starts) return Tensor();
  if (static_cast<std::int64_t>(slice_sizes.size()) != x.rank())
    return detail::fail(t, invalid_argument_error(str_cat("dynamic_slice: ", slice_sizes.size(),
                                                          " slice sizes for ", x.shape())));
  for (std::int64_t d = 0; d < x.rank(); ++d)
    if (slice_sizes[static_cast<std::size_t>(d)] < 0 ||
        slice_sizes[static_cast<std::size_t>(d)] > x.dim(d))
      return detail::fail(t, invalid_argument_error(str_cat(
                                 "dynamic_slice: slice size ", slice_sizes[static_cast<std::size_t>(d)],
                                 " of dimension ", d, " does not fit in ", x.shape())));
  return t->wrap(t->builder().dynamic_slice(x.value(), *starts, std::move(slice_sizes)));
}
inline Tensor dynamic_slice(const Tensor& x, const std::vector<std::int64_t>& start_indices,
                            std::vector<std::int64_t> slice_sizes) {
  Tensor y = x;
  if (detail::resolve("dynamic_slice", {&y}) == nullptr) return Tensor();
  return dynamic_slice(y, detail::starts_of(start_indices), std::move(slice_sizes));
}
// A braced list of integers, {1} included (which a vector of tensors would read as a size).
inline Tensor dynamic_slice(const Tensor& x, std::initializer_list<std::int64_t> start_indices,
                            std::vector<std::int64_t> slice_sizes) {
  return dynamic_slice(x, std::vector<std::int64_t>(start_indices), std::move(slice_sizes));
}

/// lax.dynamic_update_slice: `x` with `update` written at `start_indices` (as for
/// dynamic_slice, clamped so the update fits); the update takes x's dtype.
inline Tensor dynamic_update_slice(Tensor x, Tensor update, std::vector<Tensor> start_indices) {
  Trace* t = detail::resolve("dynamic_update_slice", {&x, &update});
  if (t == nullptr) return Tensor();
  for (Tensor& s : start_indices)
    if (!(t = detail::resolve("dynamic_update_slice", {&x, &s}))) return Tensor();
  update = t->lift(update);
  auto starts = detail::start_values(t, "dynamic_update_slice", x, start_indices);
  if (!starts) return Tensor();
  if (update.rank() != x.rank())
    return detail::fail(t, invalid_argument_error(str_cat("dynamic_update_slice: the update ",
                                                          update.shape(), " and the operand ",
                                                          x.shape(), " differ in rank")));
  for (std::int64_t d = 0; d < x.rank(); ++d)
    if (update.dim(d) > x.dim(d))
      return detail::fail(t, invalid_argument_error(str_cat("dynamic_update_slice: the update ",
                                                            update.shape(), " does not fit in ",
                                                            x.shape())));
  update = astype(update, x.dtype());
  return t->wrap(t->builder().dynamic_update_slice(x.value(), update.value(), *starts));
}
inline Tensor dynamic_update_slice(const Tensor& x, const Tensor& update,
                                   const std::vector<std::int64_t>& start_indices) {
  Tensor y = x;
  if (detail::resolve("dynamic_update_slice", {&y}) == nullptr) return Tensor();
  return dynamic_update_slice(y, update, detail::starts_of(start_indices));
}
inline Tensor dynamic_update_slice(const Tensor& x, const Tensor& update,
                                   std::initializer_list<std::int64_t> start_indices) {
  return dynamic_update_slice(x, update, std::vector<std::int64_t>(start_indices));
}

namespace detail {
// An inclusive prefix scan of `op` along `axis` (from the end when `reverse`), by
// Hillis-Steele doubling: at step s each element combines with the one s before it (the
// identity before the start), log2(n) steps of slice, pad and one element-wise op.
inline Tensor cumulative(const char* name, OpCode op, Tensor x, std::int64_t axis, bool reverse) {
  Trace* t = resolve(name, {&x});
  if (t == nullptr) return Tensor();
  auto a = axis_index(t, name, axis, x.rank());
  if (!a) return Tensor();
  if (x.dtype() == DType::kPred && (op == OpCode::kAdd || op == OpCode::kMultiply))
    x = astype(x, DType::kS32);
  Tensor identity;
  if (op == OpCode::kAdd) {
    identity = weak(x, 0);
  } else if (op == OpCode::kMultiply) {
    identity = weak(x, 1);
  } else {
    if (is_complex(x.dtype()))
      return fail(t, invalid_argument_error(str_cat(name, ": complex numbers have no order")));
    identity = constant_in(
        t, pjrt_lite::detail::extreme_scalar(x.dtype(), op == OpCode::kMaximum));
  }
  Tensor y = reverse ? flip(x, {*a}) : x;
  const std::int64_t n = x.dim(*a);
  for (std::int64_t s = 1; s < n; s *= 2) {
    std::vector<std::int64_t> start(static_cast<std::size_t>(x.rank()), 0), limit = y.dims();
    limit[static_cast<std::size_t>(*a)] = n - s;
    std::vector<PadConfig> shift(static_cast<std::size_t>(x.rank()));
    shift[static_cast<std::size_t>(*a)].lo = s;
    const Tensor before = pad(slice(y, start, limit), identity, shift);
    y = t->wrap(t->builder().binary(op, y.value(), before.value()));
  }
  return reverse ? flip(y, {*a}) : y;
}
}  // namespace detail

/// lax.cumsum: running sums along `axis`, from the end when `reverse`; booleans count as s32.
inline Tensor cumsum(const Tensor& x, std::int64_t axis = 0, bool reverse = false) {
  return detail::cumulative("cumsum", OpCode::kAdd, x, axis, reverse);
}
/// lax.cumprod: running products along `axis`.
inline Tensor cumprod(const Tensor& x, std::int64_t axis = 0, bool reverse = false) {
  return detail::cumulative("cumprod", OpCode::kMultiply, x, axis, reverse);
}
/// lax.cummax: running maxima along `axis`.
inline Tensor cummax(const Tensor& x, std::int64_t axis = 0, bool reverse = false) {
  return detail::cumulative("cummax", OpCode::kMaximum, x, axis, reverse);
}
/// lax.cummin: running minima along `axis`.
inline Tensor cummin(const Tensor& x, std::int64_t axis = 0, bool reverse = false) {
  return detail::cumulative("cummin", OpCode::kMinimum, x, axis, reverse);
}

}  // namespace np

}  // namespace pjrt_lite
