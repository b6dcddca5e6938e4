#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// One data-movement primitive that transpose, broadcast_in_dim, slice, reverse, pad,
// concatenate, dynamic_slice and dynamic_update_slice all reduce to: walk `dims` in row-major
// order and copy each element from `src + sum(index * src_stride)` to
// `dst + sum(index * dst_stride)`. Strides are in bytes and may be zero (broadcast) or
// negative (reverse). Element types do not matter, only their size.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "pjrt_lite/core/strided_copy.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// A copy pattern fixed at compile time; only the base pointers change per execution.
struct StridedCopy {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> dst_strides;
  std::vector<std::int64_t> src_strides;
  std::int64_t element_size = 0;

  /// The copy of a dense row-major array of `dims` into a dense array whose dimension i is
  /// the source's dimension order[i] (a transpose), simplified.
  static StridedCopy permuting(std::span<const std::int64_t> dims, std::span<const std::int64_t> order,
                               std::int64_t element_size) {
    const auto src = dense_byte_strides(dims, element_size);
    StridedCopy copy;
    copy.element_size = element_size;
    for (std::int64_t d : order) {
      copy.dims.push_back(dims[static_cast<std::size_t>(d)]);
      copy.src_strides.push_back(src[static_cast<std::size_t>(d)]);
    }
    copy.dst_strides = dense_byte_strides(copy.dims, element_size);
    copy.simplify();
    return copy;
  }

  [[nodiscard]] std::int64_t count() const {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    return n;
  }

  /// Drops dimensions of size 1 and merges neighbours that are contiguous in both source and
  /// destination, so that most copies become a few long rows.
  void simplify() {
    std::vector<std::int64_t> d, ds, ss;
    for (std::size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] == 1) continue;
      if (!d.empty() && ds.back() == dst_strides[k] * dims[k] && ss.back() == src_strides[k] * dims[k]) {
        d.back() *= dims[k];
        ds.back() = dst_strides[k];
        ss.back() = src_strides[k];
        continue;
      }
      d.push_back(dims[k]);
      ds.push_back(dst_strides[k]);
      ss.push_back(src_strides[k]);
    }
    dims = std::move(d);
    dst_strides = std::move(ds);
    src_strides = std::move(ss);
  }

  /// Runs the copy for rows [row_begin, row_end) of the outer dimensions (all but the last).
  void run(std::byte* dst, const std::byte* src, std::int64_t row_begin, std::int64_t row_end) const {
    switch (element_size) {
      case 1: return run_sized<1>(dst, src, row_begin, row_end);
      case 2: return run_sized<2>(dst, src, row_begin, row_end);
      case 4: return run_sized<4>(dst, src, row_begin, row_end);
      case 8: return run_sized<8>(dst, src, row_begin, row_end);
      case 16: return run_sized<16>(dst, src, row_begin, row_end);
      default: return;
    }
  }
  void run(std::byte* dst, const std::byte* src) const { run(dst, src, 0, rows()); }

  /// Runs the copy for elements [first, last) in row-major order: a partial row, whole rows,
  /// a partial row. What splits a copy of few long rows (one, for a plain copy) across threads.
  void run_elements(std::byte* dst, const std::byte* src, std::int64_t first, std::int64_t last) const {
    if (dims.empty()) {
      if (first < last) std::memcpy(dst, src, static_cast<std::size_t>(element_size));
      return;
    }
    const std::int64_t inner = dims.back();
    if (inner == 0 || first >= last) return;
    std::int64_t row = first / inner;
    if (const std::int64_t col = first % inner; col != 0) {
      const std::int64_t take = std::min(inner - col, last - first);
      copy_row_part(dst, src, row, col, take);
      first += take;
      ++row;
    }
    const std::int64_t whole = (last - first) / inner;
    run(dst, src, row, row + whole);
    first += whole * inner;
    if (first < last) copy_row_part(dst, src, row + whole, 0, last - first);
  }
  /// The number of rows (products of all dimensions but the last).
  [[nodiscard]] std::int64_t rows() const {
    if (dims.empty()) return 1;
    std::int64_t n = 1;
    for (std::size_t k = 0; k + 1 < dims.size(); ++k) n *= dims[k];
    return n;
  }

 private:
  /// Copies elements [col, col + count) of row `row`.
  void copy_row_part(std::byte* dst, const std::byte* src, std::int64_t row, std::int64_t col, std::int64_t count) const {
    const std::size_t rank = dims.size();
    std::int64_t doff = 0, soff = 0;
    for (std::int64_t rest = row, k = static_cast<std::int64_t>(rank) - 2; k >= 0; --k) {
      doff += rest % dims[k] * dst_strides[k];
      soff += rest % dims[k] * src_strides[k];
      rest /= dims[k];
    }
    const std::int64_t ds = dst_strides[rank - 1], ss = src_strides[rank - 1];
    std::byte* d = dst + doff + col * ds;
    const std::byte* s = src + soff + col * ss;
    if (ds == element_size && ss == element_size) {
      std::memcpy(d, s, static_cast<std::size_t>(count * element_size));
      return;
    }
    for (std::int64_t i = 0; i < count; ++i, d += ds, s += ss) std::memcpy(d, s, static_cast<std::size_t>(element_size));
  }

  template <std::size_t kSize>
  void run_sized(std::byte* dst, const std::byte* src, std::int64_t row_begin, std::int64_t row_end) const {
    const std::size_t rank = dims.size();
    if (rank == 0) {
      std::memcpy(dst, src, kSize);
      return;
    }
    for (std::int64_t d : dims)
      if (d == 0) return;
    const std::int64_t inner = dims[rank - 1];
    const std::int64_t ds = dst_strides[rank - 1];
    const std::int64_t ss = src_strides[rank - 1];
    // The position of row_begin in the outer dimensions.
    std::array<std::int64_t, 16> index_small{};
    std::vector<std::int64_t> index_large;
    std::int64_t* index = index_small.data();
    if (rank > index_small.size()) {
      index_large.assign(rank, 0);
      index = index_large.data();
    }
    std::int64_t doff = 0, soff = 0;
    for (std::int64_t rest = row_begin, k = static_cast<std::int64_t>(rank) - 2; k >= 0; --k) {
      index[k] = rest % dims[k];
      rest /= dims[k];
      doff += index[k] * dst_strides[k];
      soff += index[k] * src_strides[k];
    }
    for (std::int64_t row = row_begin; row < row_end; ++row) {
      std::byte* d = dst + doff;
      const std::byte* s = src + soff;
      if (ds == static_cast<std::int64_t>(kSize) && ss == static_cast<std::int64_t>(kSize)) {
        std::memcpy(d, s, kSize * static_cast<std::size_t>(inner));
      } else {
        for (std::int64_t i = 0; i < inner; ++i, d += ds, s += ss) std::memcpy(d, s, kSize);
      }
      for (std::int64_t k = static_cast<std::int64_t>(rank) - 2; k >= 0; --k) {
        doff += dst_strides[k];
        soff += src_strides[k];
        if (++index[k] < dims[k]) break;
        doff -= dst_strides[k] * dims[k];
        soff -= src_strides[k] * dims[k];
        index[k] = 0;
      }
    }
  }
};

}  // namespace pjrt_lite::cpu::detail
