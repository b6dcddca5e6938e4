#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Sorting on tensors: jnp.sort and jnp.argsort (stable, NaN last) along an axis, and
// lax.top_k over the last axis.

#include <cstdint>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// jnp.sort: the elements in ascending order along `axis` (floats in total order, NaN last);
/// descending reverses that order.
inline Tensor sort(Tensor x, std::int64_t axis = -1, bool descending = false) {
  Trace* t = detail::resolve("sort", {&x});
  if (t == nullptr) return Tensor();
  if (is_complex(x.dtype()))
    return detail::fail(t, invalid_argument_error("sort: complex numbers have no order here"));
  auto a = detail::axis_index(t, "sort", axis, x.rank());
  if (!a) return Tensor();
  const Tensor sorted = t->wrap(t->builder().sort(x.value(), *a, ComparisonDirection::kLt, true));
  return descending ? t->wrap(t->builder().reverse(sorted.value(), {*a})) : sorted;
}

/// jnp.argsort: s32 indices that sort `x` along `axis`, stably (equal elements keep their
/// order; with descending, too, as jnp.argsort(descending=True) does).
inline Tensor argsort(Tensor x, std::int64_t axis = -1, bool descending = false) {
  Trace* t = detail::resolve("argsort", {&x});
  if (t == nullptr) return Tensor();
  if (is_complex(x.dtype()))
    return detail::fail(t, invalid_argument_error("argsort: complex numbers have no order here"));
  auto a = detail::axis_index(t, "argsort", axis, x.rank());
  if (!a) return Tensor();
  GraphBuilder& b = t->builder();
  // Descending and stable: sort the reversed array ascending, then reverse the result and
  // map the indices back, so equal elements still come in their original order.
  Value keys = descending ? b.reverse(x.value(), {*a}) : x.value();
  StatusOr<Graph> comparator =
      make_sort_comparator(ComparisonDirection::kLt, x.dtype(), {DType::kS32});
  if (!comparator.ok()) return detail::fail(t, comparator.status().with_context("argsort"));
  Value iota = b.iota(Shape(DType::kS32, x.dims()), *a);
  Value index = b.sort({keys, iota}, std::move(*comparator), *a, true)[1];
  if (!descending) return t->wrap(index);
  const auto last = static_cast<std::int32_t>(x.dim(*a) - 1);
  return last - t->wrap(b.reverse(index, {*a}));
}

/// lax.top_k: the k largest elements along the last axis, largest first, and their s32
/// indices (ties by lower index).
inline std::pair<Tensor, Tensor> top_k(Tensor x, std::int64_t k) {
  Trace* t = detail::resolve("top_k", {&x});
  if (t == nullptr) return {};
  if (x.rank() == 0)
    return {detail::fail(t, invalid_argument_error("top_k: the operand must have rank 1 or more")),
            Tensor()};
  if (k < 0 || k > x.dim(-1))
    return {detail::fail(t, invalid_argument_error(str_cat("top_k: k = ", k,
                                                           " is outside [0, ", x.dim(-1),
                                                           "], the last dimension of ", x.shape()))),
            Tensor()};
  std::vector<Value> r = t->builder().top_k(x.value(), k);
  return {t->wrap(r[0]), t->wrap(r[1])};
}

}  // namespace np

}  // namespace pjrt_lite
