#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// The activation functions of jax.nn, on tensors: relu and sigmoid.

#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// max(x, 0).
inline Tensor relu(const Tensor& x) { return maximum(x, 0); }
/// 1 / (1 + exp(-x)), in one op (logistic).
inline Tensor sigmoid(const Tensor& x) { return detail::unary(OpCode::kLogistic, x, true); }

}  // namespace np

}  // namespace pjrt_lite
