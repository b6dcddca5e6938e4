#pragma once
// The data movement ops of the reference interpreter: each visits every result index, works
// out the operand index the spec's formula names, and copies that element's bytes. None of
// them looks at element values, so one function serves every element type.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "pjrt_lite/backends/reference/index.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

/// bitcast_convert: the operand's bytes reread as the result type. In row-major order the
/// spec's rule (a narrower type splits each element into a new minor dimension, a wider one
/// joins the minor dimension) keeps the bytes where they are, so this is one copy. The parts
/// come out in the host's byte order, which is little-endian on every host we build for.
inline StatusOr<Literal> eval_bitcast_convert(const Literal& x, const Shape& result) {
  Literal out(result);
  // A narrow type's or pred's elements are fewer bits than their bytes: cut and join the bits.
  if (is_bit_packed(x.dtype()) || is_bit_packed(result.dtype())) {
    if (x.element_count() * bitcast_width(x.dtype()) != out.element_count() * bitcast_width(result.dtype()))
      return internal_error(str_cat("reference: bitcast_convert of ", x.shape(), " to ", result,
                                    ": the numbers of bits differ"));
    bitcast_narrow_elements(x.untyped_data(), x.dtype(), out.untyped_data(), result.dtype(), x.element_count());
    return out;
  }
  if (out.size_bytes() != x.size_bytes())
    return internal_error(str_cat("reference: bitcast_convert of ", x.shape(), " (", x.size_bytes(),
                                  " bytes) to ", result, " (", out.size_bytes(), " bytes)"));
  if (out.size_bytes() > 0) std::memcpy(out.untyped_data(), x.untyped_data(), out.size_bytes());
  return out;
}

/// broadcast_in_dim: operand dimension d follows result dimension broadcast_dimensions[d],
/// or stays at 0 where it has size 1.
inline Literal eval_broadcast_in_dim(const Literal& x, const BroadcastInDimAttrs& attrs,
                                     const Shape& result) {
  Literal out(result);
  std::vector<std::int64_t> from(static_cast<std::size_t>(x.shape().rank()));
  for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
    for (std::size_t d = 0; d < from.size(); ++d)
      from[d] =
          x.dims()[d] == 1 ? 0 : index[static_cast<std::size_t>(attrs.broadcast_dimensions[d])];
    copy_element(x, x.linear_index(from), out, out.linear_index(index));
  });
  return out;
}

/// reshape: the k-th element in row-major order stays the k-th.
inline Literal eval_reshape(const Literal& x, const Shape& result) {
  Literal out(result);
  for (std::int64_t k = 0; k < out.element_count(); ++k) copy_element(x, k, out, k);
  return out;
}

/// transpose: result index d is operand index permutation[d].
inline Literal eval_transpose(const Literal& x, const TransposeAttrs& attrs, const Shape& result) {
  Literal out(result);
  std::vector<std::int64_t> from(static_cast<std::size_t>(x.shape().rank()));
  for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
    for (std::size_t d = 0; d < index.size(); ++d)
      from[static_cast<std::size_t>(attrs.permutation[d])] = index[d];
    copy_element(x, x.linear_index(from), out, out.linear_index(index));
  });
  return out;
}

/// slice: operand index = start + result index * stride.
inline Literal eval_slice(const Literal& x, const SliceAttrs& attrs, const Shape& result) {
  Literal out(result);
  std::vector<std::int64_t> from(static_cast<std::size_t>(x.shape().rank()));
  for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
    for (std::size_t d = 0; d < index.size(); ++d)
      from[d] = attrs.start_indices[d] + index[d] * attrs.strides[d];
    copy_element(x, x.linear_index(from), out, out.linear_index(index));
  });
  return out;
}

/// concatenate: along `dimension`, the first operand's indices come first, then the next's.
inline Literal eval_concatenate(std::span<const Literal* const> inputs,
                                const ConcatenateAttrs& attrs, const Shape& result) {
  Literal out(result);
  const auto dim = static_cast<std::size_t>(attrs.dimension);
  std::vector<std::int64_t> from(static_cast<std::size_t>(result.rank()));
  for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
    std::copy(index.begin(), index.end(), from.begin());
    std::size_t k = 0;  // the input that holds this index; empty inputs are skipped over
    while (from[dim] >= inputs[k]->dims()[dim]) {
      from[dim] -= inputs[k]->dims()[dim];
      ++k;
    }
    copy_element(*inputs[k], inputs[k]->linear_index(from), out, out.linear_index(index));
  });
  return out;
}

/// pad: result index = low + operand index * (interior + 1); every other result element is
/// the padding value. Negative low or high padding shifts operand elements out of range,
/// which drops them.
inline Literal eval_pad(const Literal& x, const Literal& padding_value, const PadAttrs& attrs,
                        const Shape& result) {
  Literal out(result);
  std::vector<std::int64_t> from(static_cast<std::size_t>(x.shape().rank()));
  for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
    bool in_operand = true;
    for (std::size_t d = 0; d < index.size() && in_operand; ++d) {
      const std::int64_t offset = index[d] - attrs.edge_padding_low[d];
      const std::int64_t step = attrs.interior_padding[d] + 1;
      from[d] = offset / step;
      in_operand = offset >= 0 && offset % step == 0 && from[d] < x.dims()[d];
    }
    if (in_operand)
      copy_element(x, x.linear_index(from), out, out.linear_index(index));
    else
      copy_element(padding_value, 0, out, out.linear_index(index));
  });
  return out;
}

/// reverse: along each listed dimension d, index i reads size(d) - 1 - i.
inline Literal eval_reverse(const Literal& x, const ReverseAttrs& attrs, const Shape& result) {
  Literal out(result);
  std::vector<std::int64_t> from(static_cast<std::size_t>(x.shape().rank()));
  for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
    std::copy(index.begin(), index.end(), from.begin());
    for (std::int64_t d : attrs.dimensions) {
      const auto i = static_cast<std::size_t>(d);
      from[i] = x.dims()[i] - 1 - index[i];
    }
    copy_element(x, x.linear_index(from), out, out.linear_index(index));
  });
  return out;
}

/// The integer at memory position `position` of `indices` as int64; u64 values beyond int64
/// become int64's max, which clamps (and counts as out of bounds) like the value itself.
inline std::int64_t read_index_at(const Literal& indices, std::int64_t position) {
  return visit_dtype(indices.dtype(), [&]<class T>(std::type_identity<T>) -> std::int64_t {
    if constexpr (is_int_v<T>) {
      const T v = indices.data<T>()[static_cast<std::size_t>(position)];
      if constexpr (std::is_unsigned_v<T> && sizeof(T) == sizeof(std::int64_t))
        if (v > static_cast<T>(std::numeric_limits<std::int64_t>::max()))
          return std::numeric_limits<std::int64_t>::max();
      return static_cast<std::int64_t>(v);
    } else {
      return 0;  // shape inference admits only integer indices
    }
  });
}

/// The value of a rank-0 integer literal (a start index) as int64.
inline std::int64_t read_start_index(const Literal& start) { return read_index_at(start, 0); }

/// The spec's adjusted start indices: clamp(0, start, operand size - window size), so the
/// window always lies inside the operand.
inline std::vector<std::int64_t> clamped_starts(std::span<const Literal* const> starts,
                                                std::span<const std::int64_t> operand_dims,
                                                std::span<const std::int64_t> window_dims) {
  std::vector<std::int64_t> out(operand_dims.size());
  for (std::size_t d = 0; d < out.size(); ++d)
    out[d] =
        std::clamp(read_start_index(*starts[d]), std::int64_t{0}, operand_dims[d] - window_dims[d]);
  return out;
}

/// dynamic_slice: operand index = adjusted start + result index.
inline Literal eval_dynamic_slice(const Literal& x, std::span<const Literal* const> starts,
                                  const Shape& result) {
  Literal out(result);
  const std::vector<std::int64_t> start = clamped_starts(starts, x.dims(), result.dims());
  std::vector<std::int64_t> from(start.size());
  for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
    for (std::size_t d = 0; d < index.size(); ++d) from[d] = start[d] + index[d];
    copy_element(x, x.linear_index(from), out, out.linear_index(index));
  });
  return out;
}

/// dynamic_update_slice: the operand, with the update written at the adjusted start.
inline Literal eval_dynamic_update_slice(const Literal& x, const Literal& update,
                                         std::span<const Literal* const> starts,
                                         const Shape& result) {
  Literal out(result);
  for (std::int64_t k = 0; k < out.element_count(); ++k) copy_element(x, k, out, k);
  const std::vector<std::int64_t> start = clamped_starts(starts, x.dims(), update.dims());
  std::vector<std::int64_t> to(start.size());
  for_each_index(update.dims(), [&](std::span<const std::int64_t> index) {
    for (std::size_t d = 0; d < index.size(); ++d) to[d] = start[d] + index[d];
    copy_element(update, update.linear_index(index), out, out.linear_index(to));
  });
  return out;
}

}  // namespace pjrt_lite::reference::detail
