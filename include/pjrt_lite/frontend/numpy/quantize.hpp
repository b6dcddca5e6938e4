#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Uniform quantization of tensors, with StableHLO's meaning of a `!quant.uniform` type: a
// float x is stored as the integer round_half_even(x / scale + zero_point), clamped to the
// storage range, and read back as (q - zero_point) * scale. Per tensor, or per index of one
// dimension (`axis`). The quantized tensor is its storage integers, a Tensor of the storage
// type; the parameters travel beside it in a Quantization.
//
//   np::Quantization q{.storage = DType::kS8, .scales = {0.05}, .zero_points = {-3}};
//   Tensor w8 = np::quantize(w, q);           // s8
//   Tensor w2 = np::dequantize(w8, q);        // f32, within scale / 2 of w where not clamped

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/frontend/numpy/creation.hpp"
#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// The parameters of a uniform quantization (StableHLO's `!quant.uniform<storage<min:max>:
/// expressed:axis, {scale:zero_point, ...}>`).
struct Quantization {
  DType storage = DType::kS8;
  /// One per tensor, or one per index of `axis`; positive and finite.
  std::vector<double> scales = {1.0};
  /// As many as the scales, inside the storage range.
  std::vector<std::int64_t> zero_points = {0};
  /// The quantized dimension, or -1 for one scale and zero point for the whole tensor.
  std::int64_t axis = -1;
  /// The storage range; the storage type's whole range when unset.
  std::optional<std::int64_t> storage_min = std::nullopt;
  std::optional<std::int64_t> storage_max = std::nullopt;
};

namespace detail {

/// The storage range of `q`, or an INVALID_ARGUMENT naming what is wrong with `q` for a
/// tensor of `dims`.
inline StatusOr<std::pair<std::int64_t, std::int64_t>> quantization_range(const Quantization& q, const char* op,
                                                                         const std::vector<std::int64_t>& dims) {
  if (!is_integral(q.storage) || q.storage == DType::kPred || bit_width(q.storage) > 32)
    return invalid_argument_error(str_cat(op, ": the storage type ", dtype_name(q.storage), " is not an integer type of at most 32 bits"));
  const int bits = bit_width(q.storage);
  const bool is_signed = is_signed_integral(q.storage);
  const std::int64_t type_min = is_signed ? -(std::int64_t{1} << (bits - 1)) : 0;
  const std::int64_t type_max = is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
  const std::int64_t lo = q.storage_min.value_or(type_min), hi = q.storage_max.value_or(type_max);
  if (!(type_min <= lo && lo < hi && hi <= type_max))
    return invalid_argument_error(str_cat(op, ": the storage range [", lo, ", ", hi, "] is empty or outside ", dtype_name(q.storage)));
  if (q.scales.empty() || q.scales.size() != q.zero_points.size())
    return invalid_argument_error(str_cat(op, ": ", q.scales.size(), " scales and ", q.zero_points.size(),
                                          " zero points; one of each per tensor or per index of the axis"));
  for (double s : q.scales)
    if (!(s > 0) || !std::isfinite(s)) return invalid_argument_error(str_cat(op, ": the scale ", s, " is not positive and finite"));
  for (std::int64_t z : q.zero_points)
    if (z < lo || z > hi)
      return invalid_argument_error(str_cat(op, ": the zero point ", z, " is outside the storage range [", lo, ", ", hi, "]"));
  if (q.axis < 0) {
    if (q.scales.size() != 1)
      return invalid_argument_error(str_cat(op, ": ", q.scales.size(), " scales need an axis to index them"));
  } else if (q.axis >= static_cast<std::int64_t>(dims.size()) ||
             dims[static_cast<std::size_t>(q.axis)] != static_cast<std::int64_t>(q.scales.size())) {
    return invalid_argument_error(str_cat(op, ": axis ", q.axis, " of a tensor of dimensions ", Shape(DType::kF32, dims),
                                          " does not have ", q.scales.size(), " indices, one per scale"));
  }
  return std::pair{lo, hi};
}

/// `values` as a constant of `dtype` that broadcasts against a tensor of `rank` dimensions
/// along `axis` (a scalar when there is one value).
template <class T>
Tensor quantization_constant(const std::vector<T>& values, DType dtype, std::int64_t rank, std::int64_t axis) {
  std::vector<double> v(values.begin(), values.end());
  std::vector<std::int64_t> dims;
  if (axis >= 0) {
    dims.assign(static_cast<std::size_t>(rank), 1);
    dims[static_cast<std::size_t>(axis)] = static_cast<std::int64_t>(v.size());
  }
  Literal lit = *Literal::from_span<double>(std::span<const double>(v), std::span<const std::int64_t>(dims))->convert(dtype);
  return array(std::move(lit));
}

}  // namespace detail

/// round_half_even(x / scale + zero_point) clamped to the storage range, as the storage type.
/// x must be a float tensor; the arithmetic is in its type.
inline Tensor quantize(Tensor x, const Quantization& q) {
  Trace* t = detail::resolve("quantize", {&x});
  if (t == nullptr) return Tensor();
  if (!is_floating(x.dtype()))
    return detail::fail(t, invalid_argument_error(str_cat("quantize: ", x.shape(), " is not a float tensor")));
  auto range = detail::quantization_range(q, "quantize", x.dims());
  if (!range.ok()) return detail::fail(t, range.status());
  const DType f = x.dtype();
  Tensor y = x / detail::quantization_constant(q.scales, f, x.rank(), q.axis) +
             detail::quantization_constant(q.zero_points, f, x.rank(), q.axis);
  y = clip(y, detail::quantization_constant(std::vector<std::int64_t>{range->first}, f, 0, -1),
           detail::quantization_constant(std::vector<std::int64_t>{range->second}, f, 0, -1));
  return round(y).astype(q.storage);
}

/// (q - zero_point) * scale in `expressed`, the subtraction in 32 (64) bits so it cannot wrap.
inline Tensor dequantize(Tensor stored, const Quantization& q, DType expressed = DType::kF32) {
  Trace* t = detail::resolve("dequantize", {&stored});
  if (t == nullptr) return Tensor();
  if (stored.dtype() != q.storage)
    return detail::fail(t, invalid_argument_error(str_cat("dequantize: ", stored.shape(), " is not of the storage type ", dtype_name(q.storage))));
  if (!is_floating(expressed))
    return detail::fail(t, invalid_argument_error(str_cat("dequantize: the expressed type ", dtype_name(expressed), " is not a float type")));
  auto range = detail::quantization_range(q, "dequantize", stored.dims());
  if (!range.ok()) return detail::fail(t, range.status());
  const DType wide = bit_width(q.storage) < 32 ? DType::kS32 : DType::kS64;
  Tensor centred = stored.astype(wide) - detail::quantization_constant(q.zero_points, wide, stored.rank(), q.axis);
  return centred.astype(expressed) * detail::quantization_constant(q.scales, expressed, stored.rank(), q.axis);
}

}  // namespace np
}  // namespace pjrt_lite
