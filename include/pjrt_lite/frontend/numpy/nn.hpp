#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// The basics of jax.nn, on tensors: relu, sigmoid, gelu (tanh and exact), logsumexp,
// softmax, log_softmax and one_hot. The exponentials subtract the maximum first, as JAX
// does, so large inputs neither overflow nor lose every digit.

#include <cstdint>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/numpy/creation.hpp"
#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/reductions.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// max(x, 0), NaN staying NaN; its derivative is 1 where x > 0 and 0 elsewhere, 0 included
/// (jax.nn.relu's rule, where max's derivative would split the tie at 0 into 1/2).
inline Tensor relu(const Tensor& x) {
  const Tensor keep = (x > 0) | (x != x);  // x != x: NaN
  return where(keep, x, zeros_like(x));
}
/// 1 / (1 + exp(-x)), in one op (logistic).
inline Tensor sigmoid(const Tensor& x) { return detail::unary(OpCode::kLogistic, x, true); }

/// The error function, element-wise (jax.scipy.special.erf / lax.erf).
inline Tensor erf(const Tensor& x) { return detail::unary(OpCode::kErf, x, true); }

/// jax.nn.gelu: x * Phi(x) with Phi the standard normal CDF. approximate (JAX's default)
/// uses 0.5 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) for Phi; otherwise the exact
/// 0.5 (1 + erf(x / sqrt(2))).
inline Tensor gelu(const Tensor& x, bool approximate = true) {
  const Tensor y = detail::inexact(x);
  if (approximate) {
    const double c = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
    return 0.5 * y * (1.0 + tanh(c * (y + 0.044715 * (y * y * y))));
  }
  return 0.5 * y * (1.0 + erf(y * (1.0 / std::numbers::sqrt2)));
}

namespace detail {
// The maximum over `axes` with its dimensions kept, 0 where it is not finite (so an
// all -inf row gives -inf, not NaN, and +inf propagates), as jax.nn.logsumexp shifts.
inline Tensor finite_max(const Tensor& x, const std::vector<std::int64_t>& axes) {
  const Tensor m = max(x, axes, true);
  return where(isfinite(m), m, zeros_like(m));
}
}  // namespace detail

/// log(sum(exp(x))) over `axes` (all when empty), computed as m + log(sum(exp(x - m))) with m
/// the finite maximum, as jax.nn.logsumexp.
inline Tensor logsumexp(const Tensor& x, std::vector<std::int64_t> axes = {},
                        bool keepdims = false) {
  Tensor y = x;
  Trace* t = detail::resolve("logsumexp", {&y});
  if (t == nullptr) return Tensor();
  if (is_complex(y.dtype()))
    return detail::fail(t, invalid_argument_error("logsumexp: complex inputs are not supported"));
  y = detail::inexact(y);
  auto ax = detail::reduce_axes(t, "logsumexp", std::move(axes), y.rank());
  if (!ax) return Tensor();
  const Tensor m = detail::finite_max(y, *ax);
  const Tensor r = log(sum(exp(y - m), *ax, true)) + m;
  return keepdims ? r : squeeze(r, *ax);
}

namespace detail {
/// x (as an inexact type) minus its maximum along `axis`, and that axis's index: where
/// softmax and log_softmax start. Nothing when `x` or `axis` is bad (reported).
inline std::optional<std::pair<Tensor, std::int64_t>> max_shifted(const char* name, const Tensor& x,
                                                                   std::int64_t axis) {
  Tensor y = x;
  Trace* t = resolve(name, {&y});
  if (t == nullptr) return std::nullopt;
  y = inexact(y);
  auto a = axis_index(t, name, axis, y.rank());
  if (!a) return std::nullopt;
  return std::pair{y - max(y, {*a}, true), *a};
}
}  // namespace detail

/// exp(x) / sum(exp(x)) along `axis`, with the maximum subtracted first (jax.nn.softmax).
inline Tensor softmax(const Tensor& x, std::int64_t axis = -1) {
  auto shifted = detail::max_shifted("softmax", x, axis);
  if (!shifted) return Tensor();
  const Tensor e = exp(shifted->first);
  return e / sum(e, {shifted->second}, true);
}

/// x - logsumexp(x) along `axis`, computed as (x - max) - log(sum(exp(x - max)))
/// (jax.nn.log_softmax).
inline Tensor log_softmax(const Tensor& x, std::int64_t axis = -1) {
  auto shifted = detail::max_shifted("log_softmax", x, axis);
  if (!shifted) return Tensor();
  return shifted->first - log(sum(exp(shifted->first), {shifted->second}, true));
}

/// jax.nn.one_hot: x's integer entries as one-hot vectors of `num_classes` along a new axis
/// `axis` (the last by default) of `dtype`; an entry outside [0, num_classes) gives a zero
/// vector.
inline Tensor one_hot(Tensor x, std::int64_t num_classes, DType dtype = DType::kF32,
                      std::int64_t axis = -1) {
  Trace* t = detail::resolve("one_hot", {&x});
  if (t == nullptr) return Tensor();
  if (!is_integral(x.dtype()))
    return detail::fail(t, invalid_argument_error(str_cat(
                               "one_hot: the indices must be integers, got ", x.shape())));
  if (num_classes < 0)
    return detail::fail(t, invalid_argument_error(str_cat(
                               "one_hot: num_classes must not be negative, got ", num_classes)));
  auto a = detail::axis_index(t, "one_hot", axis, x.rank() + 1);
  if (!a) return Tensor();
  std::vector<std::int64_t> dims = x.dims();
  dims.insert(dims.begin() + *a, num_classes);
  GraphBuilder& b = t->builder();
  const Tensor classes = t->wrap(b.iota(Shape(x.dtype(), dims), *a));
  return astype(expand_dims(x, *a) == classes, dtype);
}

}  // namespace np

}  // namespace pjrt_lite
