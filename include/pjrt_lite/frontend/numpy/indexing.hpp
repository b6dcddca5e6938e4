#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Integer-array indexing on tensors, as gather and scatter: jnp.take along an axis, and
// JAX's functional index updates x.at[i].set(v) / .add(v) / .multiply(v) / .min(v) / .max(v),
// written at(x)[i].set(v). Negative indices count from the end, as in JAX.

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/numpy/creation.hpp"
#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// What take does with an index outside [-n, n): kFill (JAX's default) gives the fill value
/// (NaN for inexact types, the lowest value for signed integers, the highest for unsigned,
/// true for booleans); kClip clamps the index into range.
enum class TakeMode { kFill, kClip };

namespace detail {
// Indices as s32 with negative ones counted from the end of a dimension of `n`.
inline Tensor wrap_negative(const Tensor& indices, std::int64_t n) {
  const Tensor i = astype(indices, DType::kS32);
  return where(i < 0, i + static_cast<std::int32_t>(n), i);
}

inline Literal fill_value(DType dtype) {
  if (is_inexact(dtype))
    return scalar_literal(dtype, std::numeric_limits<double>::quiet_NaN());
  if (is_unsigned_integral(dtype) || dtype == DType::kPred)
    return pjrt_lite::detail::extreme_scalar(dtype, false);
  return pjrt_lite::detail::extreme_scalar(dtype, true);
}
}  // namespace detail

/// jnp.take(x, indices, axis): the slices of `x` along `axis` that the integer `indices` name;
/// the result's shape is x's with dimension `axis` replaced by the indices' shape.
inline Tensor take(Tensor x, Tensor indices, std::int64_t axis, TakeMode mode = TakeMode::kFill) {
  Trace* t = detail::resolve("take", {&x, &indices});
  if (t == nullptr) return Tensor();
  if (!is_integral(indices.dtype()))
    return detail::fail(t, invalid_argument_error(str_cat(
                               "take: the indices must be integers, got ", indices.shape())));
  auto a = detail::axis_index(t, "take", axis, x.rank());
  if (!a) return Tensor();
  const std::int64_t n = x.dim(*a), q = indices.rank(), r = x.rank();
  Tensor i = detail::wrap_negative(indices, n);
  std::vector<std::int64_t> idims = i.dims();
  idims.push_back(1);
  GatherAttrs g;
  for (std::int64_t d = 0; d < r; ++d) {
    if (d < *a) g.offset_dims.push_back(d);
    if (d > *a) g.offset_dims.push_back(d + q - 1);
  }
  g.collapsed_slice_dims = {*a};
  g.start_index_map = {*a};
  g.index_vector_dim = q;
  g.slice_sizes = x.dims();
  g.slice_sizes[static_cast<std::size_t>(*a)] = 1;
  if (n == 0 && mode == TakeMode::kClip)
    return detail::fail(t, invalid_argument_error(str_cat(
                               "take: cannot clip indices into the empty dimension ", *a, " of ",
                               x.shape())));
  Tensor gathered =
      t->wrap(t->builder().gather(x.value(), reshape(i, idims).value(), std::move(g)));
  if (mode == TakeMode::kClip) return gathered;
  // In range where 0 <= i < n; broadcast that over the gathered slices.
  Tensor ok = (i >= 0) & (i < static_cast<std::int32_t>(n));
  std::vector<std::int64_t> odims = gathered.dims(), bdims;
  for (std::int64_t d = 0; d < q; ++d) bdims.push_back(*a + d);
  ok = t->wrap(t->builder().broadcast_in_dim(ok.value(), odims, bdims));
  const Tensor fill = detail::constant_in(t, detail::fill_value(x.dtype()));
  return where(ok, gathered, fill);
}
inline Tensor take(const Tensor& x, const std::vector<std::int64_t>& indices, std::int64_t axis,
                   TakeMode mode = TakeMode::kFill) {
  Tensor y = x;
  if (detail::resolve("take", {&y}) == nullptr) return Tensor();
  Literal l = Literal::from_span<std::int64_t>(indices, {static_cast<std::int64_t>(indices.size())})
                  .value();
  return take(y, array(std::move(l)), axis, mode);
}

/// x.at[indices] of JAX: an update of the rows of `x` (slices along axis 0) that the integer
/// `indices` name. Each method returns the updated array (x itself is unchanged); the
/// values broadcast to indices.shape + x.shape[1:] and take x's dtype. Indices out of range
/// drop their update, as JAX's default mode does; with repeated indices, add and multiply
/// combine every update and set keeps one of them.
class IndexUpdate {
 public:
  IndexUpdate(Tensor x, Tensor indices) : x_(std::move(x)), indices_(std::move(indices)) {}

  [[nodiscard]] Tensor set(const Tensor& v) const { return apply("at[].set", OpCode::kParameter, v); }
  [[nodiscard]] Tensor add(const Tensor& v) const { return apply("at[].add", OpCode::kAdd, v); }
  [[nodiscard]] Tensor multiply(const Tensor& v) const {
    return apply("at[].multiply", OpCode::kMultiply, v);
  }
  [[nodiscard]] Tensor min(const Tensor& v) const { return apply("at[].min", OpCode::kMinimum, v); }
  [[nodiscard]] Tensor max(const Tensor& v) const { return apply("at[].max", OpCode::kMaximum, v); }
  template <Scalar S>
  [[nodiscard]] Tensor set(S v) const { return set(detail::weak(x_, v)); }
  template <Scalar S>
  [[nodiscard]] Tensor add(S v) const { return add(detail::weak(x_, v)); }
  template <Scalar S>
  [[nodiscard]] Tensor multiply(S v) const { return multiply(detail::weak(x_, v)); }
  template <Scalar S>
  [[nodiscard]] Tensor min(S v) const { return min(detail::weak(x_, v)); }
  template <Scalar S>
  [[nodiscard]] Tensor max(S v) const { return max(detail::weak(x_, v)); }

 private:
  Tensor apply(const char* name, OpCode op, Tensor v) const {
    Tensor x = x_, indices = indices_;
    Trace* t = detail::resolve(name, {&x, &indices, &v});
    if (t == nullptr) return Tensor();
    if (!is_integral(indices.dtype()))
      return detail::fail(t, invalid_argument_error(str_cat(
                                 name, ": the indices must be integers, got ", indices.shape())));
    if (x.rank() == 0)
      return detail::fail(t, invalid_argument_error(str_cat(name, ": cannot index a rank-0 tensor")));
    const std::int64_t q = indices.rank(), r = x.rank();
    Tensor i = detail::wrap_negative(indices, x.dim(0));
    std::vector<std::int64_t> udims = i.dims();
    for (std::int64_t d = 1; d < r; ++d) udims.push_back(x.dim(d));
    const std::vector<std::int64_t> vdims = v.dims();
    bool fits = vdims.size() <= udims.size();
    for (std::size_t d = 0; fits && d < vdims.size(); ++d) {
      const std::int64_t to = udims[udims.size() - vdims.size() + d];
      fits = vdims[d] == 1 || vdims[d] == to;
    }
    if (!fits)
      return detail::fail(t, invalid_argument_error(str_cat(
                                 name, ": values ", v.shape(), " do not broadcast to the updated ",
                                 Shape(x.dtype(), udims), " (indices ", indices.shape(),
                                 " then the rows of ", x.shape(), ")")));
    v = broadcast_to(astype(v, x.dtype()), udims);
    std::vector<std::int64_t> idims = i.dims();
    idims.push_back(1);
    ScatterAttrs s;
    for (std::int64_t d = 1; d < r; ++d) s.update_window_dims.push_back(q + d - 1);
    s.inserted_window_dims = {0};
    s.scatter_dims_to_operand_dims = {0};
    s.index_vector_dim = q;
    return t->wrap(t->builder().scatter(x.value(), reshape(i, idims).value(), v.value(), op,
                                        std::move(s)));
  }

  Tensor x_, indices_;
};

/// The indexer of at(x): at(x)[i] with an integer tensor or a C++ integer.
class IndexUpdateHelper {
 public:
  explicit IndexUpdateHelper(Tensor x) : x_(std::move(x)) {}
  IndexUpdate operator[](const Tensor& indices) const { return IndexUpdate(x_, indices); }
  IndexUpdate operator[](std::int64_t index) const {
    Tensor x = x_;
    if (detail::resolve("at[]", {&x}) == nullptr) return IndexUpdate(x, Tensor());
    return IndexUpdate(x, full({}, index, DType::kS64));
  }

 private:
  Tensor x_;
};

/// JAX's x.at: at(x)[i].set(v) is x with row i replaced by v; .add(v) adds to it.
inline IndexUpdateHelper at(const Tensor& x) { return IndexUpdateHelper(x); }

}  // namespace np

}  // namespace pjrt_lite
