#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Contractions: numpy's matmul (batch dimensions broadcast), dot and tensordot.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// numpy matmul: vectors are promoted to matrices and back, leading dimensions are batch
/// dimensions that broadcast.
inline Tensor matmul(Tensor a, Tensor b) {
  Trace* t = detail::resolve("matmul", {&a, &b});
  if (t == nullptr) return Tensor();
  if (a.rank() == 0 || b.rank() == 0)
    return detail::fail(
        t, invalid_argument_error(str_cat("matmul: operands must not be scalars, got ", a.shape(),
                                          " and ", b.shape())));
  const DType dtype = promote_types(a.dtype(), b.dtype());
  a = astype(a, dtype);
  b = astype(b, dtype);
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a_vec) a = expand_dims(a, 0);
  if (b_vec) b = expand_dims(b, 1);
  if (a.dim(-1) != b.dim(-2))
    return detail::fail(t, invalid_argument_error(str_cat("matmul: contracting dimensions differ: ",
                                                          a.shape(), " and ", b.shape())));
  // Broadcast the batch dimensions.
  const std::int64_t nb = std::max(a.rank(), b.rank()) - 2;
  std::vector<std::int64_t> batch(static_cast<std::size_t>(nb), 1);
  for (const Tensor* x : {&a, &b}) {
    const std::vector<std::int64_t> d = x->dims();
    const std::int64_t xb = x->rank() - 2;
    for (std::int64_t i = 0; i < xb; ++i) {
      std::int64_t& to = batch[static_cast<std::size_t>(nb - xb + i)];
      if (to == 1)
        to = d[static_cast<std::size_t>(i)];
      else if (d[static_cast<std::size_t>(i)] != 1 && d[static_cast<std::size_t>(i)] != to)
        return detail::fail(
            t, invalid_argument_error(str_cat("matmul: batch dimensions of ", a.shape(), " and ",
                                              b.shape(), " do not broadcast")));
    }
  }
  auto with_batch = [&](const Tensor& x) {
    std::vector<std::int64_t> dims = batch;
    dims.push_back(x.dim(-2));
    dims.push_back(x.dim(-1));
    return broadcast_to(x, dims);
  };
  a = with_batch(a);
  b = with_batch(b);
  Tensor r = t->wrap(t->builder().dot_general(a.value(), b.value(), matmul_dimensions(nb + 2)));
  if (a_vec) r = squeeze(r, {-2});
  if (b_vec) r = squeeze(r, {-1});
  return r;
}

/// numpy dot for vectors and matrices (rank 1 or 2); matmul for the rest.
inline Tensor dot(const Tensor& a, const Tensor& b) { return matmul(a, b); }

/// numpy tensordot with explicit axes: a_axes[i] of a contracts with b_axes[i] of b; the
/// result has a's free dimensions, then b's.
inline Tensor tensordot(Tensor a, Tensor b, std::vector<std::int64_t> a_axes,
                        std::vector<std::int64_t> b_axes) {
  Trace* t = detail::resolve("tensordot", {&a, &b});
  if (t == nullptr) return Tensor();
  const DType dtype = promote_types(a.dtype(), b.dtype());
  a = astype(a, dtype);
  b = astype(b, dtype);
  for (auto& x : a_axes) x = x < 0 ? x + a.rank() : x;
  for (auto& x : b_axes) x = x < 0 ? x + b.rank() : x;
  return t->wrap(
      t->builder().dot_general(a.value(), b.value(), DotDimensionNumbers{{}, {}, a_axes, b_axes}));
}

}  // namespace np

}  // namespace pjrt_lite
