#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// The activation functions of jax.nn, on tensors: relu and sigmoid.

#include "pjrt_lite/frontend/numpy/creation.hpp"
#include "pjrt_lite/frontend/numpy/elementwise.hpp"
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

}  // namespace np

}  // namespace pjrt_lite
