#pragma once
// Addressing elements in the reference interpreter: every op is written as "for each result
// index, find the operand index", and these helpers walk the indices in row-major (ascending
// lexicographic) order, the order the spec uses for reduce and reshape, and copy single
// elements whatever their type.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

/// Steps `index` to the next multi-index of `dims` in row-major order, the last dimension
/// fastest. Returns false, with `index` back at all zeros, after the last one.
inline bool next_index(std::span<std::int64_t> index, std::span<const std::int64_t> dims) {
  for (std::size_t d = dims.size(); d-- > 0;) {
    if (++index[d] < dims[d]) return true;
    index[d] = 0;
  }
  return false;
}

/// Calls f(index) for every multi-index of `dims` in row-major order: once, with an empty
/// index, for rank 0; never when some dimension is 0.
template <class F>
void for_each_index(std::span<const std::int64_t> dims, F&& f) {
  if (std::ranges::any_of(dims, [](std::int64_t d) { return d == 0; })) return;
  std::vector<std::int64_t> index(dims.size(), 0);
  do {
    f(std::span<const std::int64_t>(index));
  } while (next_index(index, dims));
}

/// Copies the element at memory position `from` of `in` to memory position `to` of `out`,
/// which must have the same element type. Moving bytes rather than values keeps the data
/// movement ops free of any arithmetic (a NaN's payload and -0 arrive as they left).
inline void copy_element(const Literal& in, std::int64_t from, Literal& out, std::int64_t to) {
  const auto size = static_cast<std::int64_t>(byte_size(in.dtype()));
  std::memcpy(static_cast<std::byte*>(out.untyped_data()) + to * size,
              static_cast<const std::byte*>(in.untyped_data()) + from * size,
              static_cast<std::size_t>(size));
}

}  // namespace pjrt_lite::reference::detail
