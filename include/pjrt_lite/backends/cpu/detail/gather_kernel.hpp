#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// gather on the CPU: for each index vector of start_indices (row-major), the clamped start
// and the batching offsets give the slice's first element; a strided copy planned at compile
// time moves the slice to the result. A run allocates nothing.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/strided.hpp"
#include "pjrt_lite/core/strided_copy.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class GatherKernel final : public Kernel {
 public:
  static constexpr std::size_t kMaxGatherRank = 64;

  static StatusOr<std::unique_ptr<GatherKernel>> make(const Shape& operand, const Shape& indices,
                                                      const Shape& result, const GatherAttrs& a,
                                                      std::int32_t operand_slot,
                                                      std::int32_t indices_slot,
                                                      std::int32_t dst_slot) {
    if (static_cast<std::size_t>(std::max({operand.rank(), indices.rank(), result.rank()})) >
        kMaxGatherRank)
      return unimplemented_error(
          str_cat("cpu: gather of rank above ", kMaxGatherRank, " is not supported"));
    auto k = std::unique_ptr<GatherKernel>(new GatherKernel());
    k->operand_slot_ = operand_slot;
    k->indices_slot_ = indices_slot;
    k->dst_slot_ = dst_slot;
    k->index_dtype_ = indices.dtype();
    k->index_esize_ = static_cast<std::int64_t>(byte_size(indices.dtype()));
    const auto esize = static_cast<std::int64_t>(byte_size(operand.dtype()));
    const std::vector<std::int64_t> operand_strides = dense_byte_strides(operand.dims(), esize);
    const std::vector<std::int64_t> result_strides = dense_byte_strides(result.dims(), esize);
    const std::vector<std::int64_t> index_strides = dense_byte_strides(indices.dims(), 1);

    const std::vector<std::int64_t> batch_axes = scatter_batch_axes(result.rank(), a.offset_dims);
    std::vector<std::int64_t> index_dims;
    for (std::int64_t d = 0; d < indices.rank(); ++d)
      if (d != a.index_vector_dim) index_dims.push_back(d);
    for (std::size_t j = 0; j < batch_axes.size(); ++j) {
      k->batch_sizes_.push_back(result.dim(batch_axes[j]));
      k->batch_result_strides_.push_back(result_strides[static_cast<std::size_t>(batch_axes[j])]);
      k->batch_index_strides_.push_back(index_strides[static_cast<std::size_t>(index_dims[j])]);
    }
    k->index_vector_stride_ = a.index_vector_dim < indices.rank()
                                  ? index_strides[static_cast<std::size_t>(a.index_vector_dim)]
                                  : 0;
    for (std::int64_t d : a.start_index_map) {
      k->start_strides_.push_back(operand_strides[static_cast<std::size_t>(d)]);
      k->start_limits_.push_back(operand.dim(d) - a.slice_sizes[static_cast<std::size_t>(d)]);
    }
    for (std::size_t i = 0; i < a.operand_batching_dims.size(); ++i) {
      const std::int64_t d_start = a.start_indices_batching_dims[i];
      k->batching_.push_back({operand_strides[static_cast<std::size_t>(a.operand_batching_dims[i])],
                              d_start - (d_start < a.index_vector_dim ? 0 : 1)});
    }
    // The slice: offset dims of the result against the operand's uncollapsed dims.
    std::size_t o = 0;
    for (std::int64_t d = 0; d < operand.rank(); ++d) {
      if (std::ranges::find(a.collapsed_slice_dims, d) != a.collapsed_slice_dims.end() ||
          std::ranges::find(a.operand_batching_dims, d) != a.operand_batching_dims.end())
        continue;
      const auto axis = static_cast<std::size_t>(a.offset_dims[o++]);
      k->slice_.dims.push_back(a.slice_sizes[static_cast<std::size_t>(d)]);
      k->slice_.dst_strides.push_back(result_strides[axis]);
      k->slice_.src_strides.push_back(operand_strides[static_cast<std::size_t>(d)]);
    }
    k->slice_.element_size = esize;
    k->slice_.simplify();
    k->empty_ = result.element_count() == 0;
    k->bytes_accessed = 2 * result.byte_size() + indices.byte_size();
    return k;
  }

  void run(const RunContext& ctx) const override {
    if (empty_) return;
    std::byte* out = ctx.slots[dst_slot_];
    const std::byte* operand = ctx.slots[operand_slot_];
    const std::byte* indices = ctx.slots[indices_slot_];
    std::array<std::int64_t, kMaxGatherRank> batch{};
    const std::size_t n_batch = batch_sizes_.size();
    do {
      std::int64_t index_offset = 0, dst_offset = 0, src_offset = 0;
      for (std::size_t j = 0; j < n_batch; ++j) {
        index_offset += batch[j] * batch_index_strides_[j];
        dst_offset += batch[j] * batch_result_strides_[j];
      }
      for (std::size_t s = 0; s < start_strides_.size(); ++s) {
        const std::int64_t at = index_offset + static_cast<std::int64_t>(s) * index_vector_stride_;
        const std::int64_t start = std::clamp<std::int64_t>(
            read_index(indices + at * index_esize_, index_dtype_), 0, start_limits_[s]);
        src_offset += start * start_strides_[s];
      }
      for (const auto& [stride, axis] : batching_)
        src_offset += batch[static_cast<std::size_t>(axis)] * stride;
      slice_.run(out + dst_offset, operand + src_offset);
    } while (next(batch, batch_sizes_));
  }

 private:
  GatherKernel() = default;

  static bool next(std::array<std::int64_t, kMaxGatherRank>& index,
                   const std::vector<std::int64_t>& sizes) {
    for (std::size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) return true;
      index[d] = 0;
    }
    return false;
  }

  std::int32_t operand_slot_ = -1, indices_slot_ = -1, dst_slot_ = -1;
  DType index_dtype_ = DType::kInvalid;
  std::int64_t index_esize_ = 0;
  std::vector<std::int64_t> batch_sizes_, batch_result_strides_, batch_index_strides_;
  std::int64_t index_vector_stride_ = 0;
  std::vector<std::int64_t> start_strides_, start_limits_;
  std::vector<std::pair<std::int64_t, std::int64_t>>
      batching_;  // (operand byte stride, batch axis)
  StridedCopy slice_;
  bool empty_ = false;
};

}  // namespace pjrt_lite::cpu::detail
