#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// sort and top_k on the CPU. sort runs its comparator region as a scalar TileProgram (as the
// reduce and window kernels run their bodies) inside the stable merge sort both backends use
// (core/merge_sort.hpp), so any comparator the reference runs runs here with the same
// permutation, and one that is no strict weak order cannot make the sort read out of bounds.
// top_k compares in C++ directly. Permutations live in kernel scratch planned at compile time;
// a run allocates nothing.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <type_traits>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/elementwise.hpp"
#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/window_kernel.hpp"
#include "pjrt_lite/core/merge_sort.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// The rows of a row-major array along one dimension: `count` rows of `length` elements,
/// `stride` elements apart.
struct Rows {
  std::int64_t count = 0, length = 0, stride = 1;

  static Rows along(std::span<const std::int64_t> dims, std::size_t dim) {
    Rows r;
    r.length = dims[dim];
    for (std::size_t d = dim + 1; d < dims.size(); ++d) r.stride *= dims[d];
    r.count = 1;
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (d != dim) r.count *= dims[d];
    return r;
  }
  /// The element offset of row r's first element.
  [[nodiscard]] std::int64_t start(std::int64_t r) const {
    return (r / stride) * length * stride + r % stride;
  }
  /// Scratch for a permutation of one row and the merge sort's second array, 64-byte rounded.
  [[nodiscard]] std::int64_t order_bytes() const {
    return (2 * length * static_cast<std::int64_t>(sizeof(std::int64_t)) + 63) / 64 * 64;
  }
};

class SortKernel final : public Kernel {
 public:
  /// Plans sort(inputs...) of `input`'s dims along `a.dimension` with `comparator` into
  /// `dst_slots`. An error means the comparator holds an op the CPU cannot run as a scalar.
  static StatusOr<std::unique_ptr<SortKernel>> make(const Shape& input, const SortAttrs& a, const Graph& comparator,
                                                    std::span<const DType> dtypes, std::vector<std::int32_t> input_slots,
                                                    std::vector<std::int32_t> dst_slots) {
    auto k = std::unique_ptr<SortKernel>(new SortKernel());
    const std::int64_t dim = a.dimension < 0 ? a.dimension + input.rank() : a.dimension;
    k->rows_ = Rows::along(input.dims(), static_cast<std::size_t>(dim));
    for (DType t : dtypes) k->esizes_.push_back(static_cast<std::int64_t>(byte_size(t)));
    k->inputs_ = std::move(input_slots);
    k->dsts_ = std::move(dst_slots);
    // The comparator's i1 result, then the permutation arrays, then the comparator's program.
    k->order_offset_ = 64;
    k->scratch_bytes = k->order_offset_ + k->rows_.order_bytes();
    PJRT_LITE_RETURN_IF_ERROR(k->body_.lower(comparator, k->scratch_bytes));
    const double n = static_cast<double>(k->rows_.length);
    k->flops = static_cast<double>(k->rows_.count) * n * std::max(1.0, std::ceil(std::log2(std::max(n, 1.0))));
    for (std::int64_t e : k->esizes_) k->bytes_accessed += 2 * input.element_count() * e;
    return k;
  }

  void run(const RunContext& ctx) const override {
    if (rows_.count == 0 || rows_.length == 0) return;
    const std::size_t n = inputs_.size();
    std::byte* keep = ctx.scratch;
    auto* order = reinterpret_cast<std::int64_t*>(ctx.scratch + order_offset_);
    std::span<std::int64_t> row_order(order, static_cast<std::size_t>(rows_.length));
    std::span<std::int64_t> merge(order + rows_.length, static_cast<std::size_t>(rows_.length));
    std::byte** externals = body_.externals(ctx.scratch);
    externals[2 * n] = keep;
    for (std::int64_t r = 0; r < rows_.count; ++r) {
      const std::int64_t start = rows_.start(r);
      std::iota(row_order.begin(), row_order.end(), std::int64_t{0});
      stable_merge_sort(row_order, merge, [&](std::int64_t x, std::int64_t y) {
        for (std::size_t i = 0; i < n; ++i) {
          std::byte* base = ctx.slots[inputs_[i]] + start * esizes_[i];
          externals[2 * i] = base + x * rows_.stride * esizes_[i];
          externals[2 * i + 1] = base + y * rows_.stride * esizes_[i];
        }
        body_.run(externals, ctx.scratch);
        bool before = false;
        std::memcpy(&before, keep, 1);
        return before;
      });
      for (std::size_t i = 0; i < n; ++i) {
        const auto es = static_cast<std::size_t>(esizes_[i]);
        const std::byte* src = ctx.slots[inputs_[i]] + start * esizes_[i];
        std::byte* dst = ctx.slots[dsts_[i]] + start * esizes_[i];
        for (std::int64_t j = 0; j < rows_.length; ++j)
          std::memcpy(dst + j * rows_.stride * esizes_[i], src + row_order[static_cast<std::size_t>(j)] * rows_.stride * esizes_[i], es);
      }
    }
  }

 private:
  SortKernel() = default;

  Rows rows_;
  std::vector<std::int32_t> inputs_, dsts_;
  std::vector<std::int64_t> esizes_;
  std::int64_t order_offset_ = 0;
  ScalarBody body_;
};

class TopKKernel final : public Kernel {
 private:
  // The helpers come first: clang wants a member template defined before a member
  // function body takes its address.
  using RowsFn = void (*)(const TopKKernel&, const RunContext&);
  TopKKernel() = default;

  /// The order top_k sorts by, descending: totalOrder for floats (the half types through the
  /// exact widening to float), the value otherwise.
  template <class T>
  static auto key(T v) {
    if constexpr (sizeof(T) == 2 && is_float_v<T>) return ew::total_order_key(static_cast<float>(v));
    else if constexpr (is_float_v<T>) return ew::total_order_key(v);
    else return v;
  }

  template <class T>
  static void run_rows(const TopKKernel& self, const RunContext& ctx) {
    const Rows& rows = self.rows_;
    if (rows.length == 0) return;
    const T* in = reinterpret_cast<const T*>(ctx.slots[self.operand_slot_]);
    T* values = reinterpret_cast<T*>(ctx.slots[self.values_slot_]);
    auto* indices = reinterpret_cast<std::int32_t*>(ctx.slots[self.indices_slot_]);
    auto* order = reinterpret_cast<std::int64_t*>(ctx.scratch);
    std::span<std::int64_t> row_order(order, static_cast<std::size_t>(rows.length));
    std::span<std::int64_t> merge(order + rows.length, static_cast<std::size_t>(rows.length));
    for (std::int64_t r = 0; r < rows.count; ++r) {
      const T* row = in + r * rows.length;
      std::iota(row_order.begin(), row_order.end(), std::int64_t{0});
      stable_merge_sort(row_order, merge, [&](std::int64_t x, std::int64_t y) { return key(row[y]) < key(row[x]); });
      for (std::int64_t j = 0; j < self.k_; ++j) {
        values[r * self.k_ + j] = row[row_order[static_cast<std::size_t>(j)]];
        indices[r * self.k_ + j] = static_cast<std::int32_t>(row_order[static_cast<std::size_t>(j)]);
      }
    }
  }

 public:
  /// Plans top_k(operand) with `k` into the values and indices slots.
  static StatusOr<std::unique_ptr<TopKKernel>> make(const Shape& operand, std::int64_t k, std::int32_t operand_slot,
                                                    std::int32_t values_slot, std::int32_t indices_slot) {
    auto kernel = std::unique_ptr<TopKKernel>(new TopKKernel());
    kernel->rows_ = Rows::along(operand.dims(), static_cast<std::size_t>(operand.rank() - 1));
    kernel->k_ = k;
    kernel->operand_slot_ = operand_slot;
    kernel->values_slot_ = values_slot;
    kernel->indices_slot_ = indices_slot;
    kernel->fn_ = visit_dtype(operand.dtype(), [&]<class T>(std::type_identity<T>) -> RowsFn {
      if constexpr (is_complex_v<T>) return nullptr;
      else return &TopKKernel::run_rows<T>;
    });
    if (kernel->fn_ == nullptr)
      return unimplemented_error(str_cat("cpu: top_k on ", dtype_name(operand.dtype())));
    kernel->scratch_bytes = kernel->rows_.order_bytes();
    const double n = static_cast<double>(kernel->rows_.length);
    kernel->flops = static_cast<double>(kernel->rows_.count) * n * std::max(1.0, std::ceil(std::log2(std::max(n, 1.0))));
    kernel->bytes_accessed = operand.byte_size() + kernel->rows_.count * k * (static_cast<std::int64_t>(byte_size(operand.dtype())) + 4);
    return kernel;
  }

  void run(const RunContext& ctx) const override { fn_(*this, ctx); }

 private:
  Rows rows_;
  std::int64_t k_ = 0;
  std::int32_t operand_slot_ = -1, values_slot_ = -1, indices_slot_ = -1;
  RowsFn fn_ = nullptr;
};

}  // namespace pjrt_lite::cpu::detail
