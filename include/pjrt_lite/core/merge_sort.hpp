#pragma once
// A stable merge sort of a permutation that only ever calls `less` on two elements of it and
// never reads outside the two arrays it is given. std::sort and std::stable_sort may read out
// of bounds or loop when the comparison is not a strict weak order; sort's comparator is a
// user's region, so both backends sort with this instead. With a strict weak order it sorts
// as std::stable_sort does; with any other comparison it still ends, having made at most
// n * ceil(log2 n) comparisons, and leaves a permutation of the input.

#include <algorithm>
#include <cstdint>
#include <span>

namespace pjrt_lite::inline v0_1 {

/// Sorts `order` (n element indices) by `less(a, b)` on those indices, stably: an element
/// moves ahead of an earlier one only when less(later, earlier) holds. `scratch` must hold at
/// least order.size() entries. Allocates nothing. Thread-compatible.
template <class Less>
void stable_merge_sort(std::span<std::int64_t> order, std::span<std::int64_t> scratch,
                       Less&& less) {
  const auto n = static_cast<std::int64_t>(order.size());
  if (n < 2 || static_cast<std::int64_t>(scratch.size()) < n) return;
  std::int64_t* src = order.data();
  std::int64_t* dst = scratch.data();
  for (std::int64_t width = 1; width < n; width *= 2) {
    for (std::int64_t lo = 0; lo < n; lo += 2 * width) {
      const std::int64_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      std::int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) dst[k++] = less(src[j], src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    std::swap(src, dst);
  }
  if (src != order.data()) std::copy(src, src + n, order.data());
}

}  // namespace pjrt_lite
