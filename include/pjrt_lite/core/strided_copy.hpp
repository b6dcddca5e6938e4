#pragma once
// Checking and gathering arrays described by byte strides (numpy-style), into dense
// row-major memory.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <vector>

#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

/// The byte strides of `dims` stored densely in row-major order with `element_size`-byte
/// elements.
inline std::vector<std::int64_t> dense_byte_strides(std::span<const std::int64_t> dims,
                                                    std::int64_t element_size) {
  std::vector<std::int64_t> strides(dims.size());
  std::int64_t stride = element_size;
  for (std::size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  return strides;
}

/// Checks that `byte_strides` describe an array of `shape` (default layout) inside `data_size`
/// bytes without two elements sharing a byte. Returns how many bytes the array spans.
/// Strides that interleave dimensions are rejected even when they happen not to collide.
inline StatusOr<std::int64_t> check_byte_strides(const Shape& shape,
                                                 std::span<const std::int64_t> byte_strides,
                                                 std::int64_t data_size) {
  const std::int64_t rank = shape.rank();
  if (static_cast<std::int64_t>(byte_strides.size()) != rank)
    return invalid_argument_error(str_cat("byte_strides has ", byte_strides.size(),
                                          " entries for a rank-", rank, " array"));
  for (std::int64_t d = 0; d < rank; ++d)
    if (byte_strides[d] < 0)
      return invalid_argument_error(
          str_cat("byte_strides[", d, "] is negative (", byte_strides[d], ")"));
  if (shape.element_count() == 0) return std::int64_t{0};

  const auto element_size = static_cast<std::int64_t>(byte_size(shape.dtype()));
  std::vector<std::int64_t> order(static_cast<std::size_t>(rank));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::int64_t a, std::int64_t b) { return byte_strides[a] < byte_strides[b]; });
  std::int64_t spanned = element_size;  // bytes covered by one step of the faster dimensions
  std::int64_t extent = element_size;
  for (std::int64_t d : order) {
    if (shape.dim(d) == 1) continue;  // a dimension of size 1 never steps
    if (byte_strides[d] < spanned)
      return invalid_argument_error(str_cat(
          "byte_strides ", Shape::dims_string(byte_strides), " make elements of ", shape,
          " overlap: dimension ", d, " steps ", byte_strides[d],
          " bytes but the faster dimensions span ", spanned));
    spanned = byte_strides[d] * shape.dim(d);
    extent += byte_strides[d] * (shape.dim(d) - 1);
  }
  if (extent > data_size)
    return invalid_argument_error(str_cat("byte_strides ", Shape::dims_string(byte_strides),
                                          " reach byte ", extent, " of ", shape,
                                          " but the data holds only ", data_size, " bytes"));
  return extent;
}

/// Copies the array at `src` with `byte_strides` (already checked) into dense row-major `dst`.
inline void gather_strided(const std::byte* src, std::span<const std::int64_t> dims,
                           std::span<const std::int64_t> byte_strides, std::int64_t element_size,
                           std::byte* dst) {
  const std::size_t rank = dims.size();
  std::int64_t count = 1;
  for (std::int64_t d : dims) count *= d;
  if (count == 0 || element_size == 0) return;  // nothing to copy (a token holds no bytes)
  if (rank == 0 || std::equal(byte_strides.begin(), byte_strides.end(),
                              dense_byte_strides(dims, element_size).begin())) {
    std::memcpy(dst, src, static_cast<std::size_t>(count * element_size));
    return;
  }
  // Walk the outer dimensions with an odometer; copy the innermost one in a tight loop.
  const std::int64_t inner = dims[rank - 1];
  const std::int64_t inner_stride = byte_strides[rank - 1];
  const auto esize = static_cast<std::size_t>(element_size);
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;
  for (std::int64_t row = 0, rows = count / inner; row < rows; ++row) {
    const std::byte* s = src + offset;
    if (inner_stride == element_size) {
      std::memcpy(dst, s, esize * static_cast<std::size_t>(inner));
      dst += esize * static_cast<std::size_t>(inner);
    } else {
      for (std::int64_t i = 0; i < inner; ++i, dst += esize, s += inner_stride)
        std::memcpy(dst, s, esize);
    }
    for (std::size_t d = rank - 1; d-- > 0;) {
      offset += byte_strides[d];
      if (++index[d] < dims[d]) break;
      offset -= byte_strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace pjrt_lite
