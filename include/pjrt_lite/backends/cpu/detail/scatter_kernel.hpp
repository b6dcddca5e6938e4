#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// scatter on the CPU. The result starts as a copy of the input; then, for each index vector
// of scatter_indices (in row-major order) and each element of its update window (in
// row-major order), the result element the spec's result_index names, if in bounds, becomes
// body(element, update). That is the reference interpreter's schedule, so even updates that
// collide (and bodies that do not commute) give the reference's result. Every address
// computation is planned at compile time; a run walks fixed-size index arrays and allocates
// nothing.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/reduce_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/tile_program.hpp"
#include "pjrt_lite/core/strided_copy.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class ScatterKernel final : public Kernel {
 public:
  /// The most dimensions an operand may have here: run() keeps its indices in arrays this long.
  static constexpr std::size_t kMaxScatterRank = 64;

  /// Plans scatter(input, indices, updates) into `dst`. An error means the body or a rank is
  /// beyond what the CPU runs.
  static StatusOr<std::unique_ptr<ScatterKernel>> make(const Shape& input, const Shape& indices,
                                                       const Shape& updates, const ScatterAttrs& a,
                                                       const Graph& body, std::int32_t input_slot,
                                                       std::int32_t indices_slot,
                                                       std::int32_t updates_slot,
                                                       std::int32_t dst_slot) {
    if (static_cast<std::size_t>(std::max({input.rank(), indices.rank(), updates.rank()})) >
        kMaxScatterRank)
      return unimplemented_error(
          str_cat("cpu: scatter of rank above ", kMaxScatterRank, " is not supported"));
    if (body.shape(body.outputs()[0]).dtype() != input.dtype())
      return unimplemented_error("cpu: scatter whose body computes in a wider type than its input");
    auto k = std::unique_ptr<ScatterKernel>(new ScatterKernel());
    k->input_slot_ = input_slot;
    k->indices_slot_ = indices_slot;
    k->updates_slot_ = updates_slot;
    k->dst_slot_ = dst_slot;
    k->dtype_ = input.dtype();
    k->esize_ = static_cast<std::int64_t>(byte_size(input.dtype()));
    k->index_dtype_ = indices.dtype();
    k->index_esize_ = static_cast<std::int64_t>(byte_size(indices.dtype()));
    k->input_bytes_ = input.byte_size();
    k->input_dims_.assign(input.dims().begin(), input.dims().end());
    k->input_strides_ = dense_byte_strides(input.dims(), 1);
    const std::vector<std::int64_t> update_strides = dense_byte_strides(updates.dims(), 1);
    const std::vector<std::int64_t> index_strides = dense_byte_strides(indices.dims(), 1);

    // Scatter axes of the updates pair, in order, with the indices' dims but index_vector_dim.
    const std::vector<std::int64_t> scatter_axes =
        scatter_batch_axes(updates.rank(), a.update_window_dims);
    std::vector<std::int64_t> index_dims;
    for (std::int64_t d = 0; d < indices.rank(); ++d)
      if (d != a.index_vector_dim) index_dims.push_back(d);
    for (std::size_t j = 0; j < scatter_axes.size(); ++j) {
      k->scatter_sizes_.push_back(updates.dim(scatter_axes[j]));
      k->scatter_update_strides_.push_back(
          update_strides[static_cast<std::size_t>(scatter_axes[j])]);
      k->scatter_index_strides_.push_back(index_strides[static_cast<std::size_t>(index_dims[j])]);
    }
    const bool vector_dim = a.index_vector_dim < indices.rank();
    k->index_vector_stride_ =
        vector_dim ? index_strides[static_cast<std::size_t>(a.index_vector_dim)] : 0;
    k->start_dims_ = a.scatter_dims_to_operand_dims;
    for (std::size_t i = 0; i < a.input_batching_dims.size(); ++i) {
      const std::int64_t d_start = a.scatter_indices_batching_dims[i];
      k->batching_.push_back(
          {a.input_batching_dims[i], d_start - (d_start < a.index_vector_dim ? 0 : 1)});
    }
    std::size_t w = 0;
    for (std::int64_t d = 0; d < input.rank(); ++d) {
      if (std::ranges::find(a.inserted_window_dims, d) != a.inserted_window_dims.end() ||
          std::ranges::find(a.input_batching_dims, d) != a.input_batching_dims.end())
        continue;
      const std::int64_t axis = a.update_window_dims[w++];
      k->window_sizes_.push_back(updates.dim(axis));
      k->window_update_strides_.push_back(update_strides[static_cast<std::size_t>(axis)]);
      k->window_input_dims_.push_back(d);
    }
    k->update_count_ = updates.element_count();

    PJRT_LITE_RETURN_IF_ERROR(lower_scalar_graph(body, k->body_, k->body_constants_));
    k->externals_offset_ = (k->body_.scratch_bytes() + 63) / 64 * 64;
    k->scratch_bytes =
        k->externals_offset_ +
        static_cast<std::int64_t>((3 + k->body_constants_.size()) * sizeof(std::byte*));
    k->flops = static_cast<double>(k->update_count_);
    k->bytes_accessed = 2 * input.byte_size() + updates.byte_size() + indices.byte_size();
    return k;
  }

  void run(const RunContext& ctx) const override {
    std::byte* out = ctx.slots[dst_slot_];
    const std::byte* in = ctx.slots[input_slot_];
    // An empty input has null memory, which memcpy may not see even for zero bytes.
    if (out != in && input_bytes_ > 0) std::memcpy(out, in, static_cast<std::size_t>(input_bytes_));
    if (update_count_ == 0) return;
    const std::byte* indices = ctx.slots[indices_slot_];
    const std::byte* updates = ctx.slots[updates_slot_];
    auto** externals = reinterpret_cast<std::byte**>(ctx.scratch + externals_offset_);
    for (std::size_t c = 0; c < body_constants_.size(); ++c)
      externals[3 + c] = const_cast<std::byte*>(body_constants_[c]);

    const std::size_t rank = input_dims_.size();
    std::array<std::int64_t, kMaxScatterRank> scatter_index{}, window_index{}, base{};
    const std::size_t n_scatter = scatter_sizes_.size(), n_window = window_sizes_.size();
    do {
      // The start of this index vector's window: full_start_index + full_batching_index.
      std::int64_t index_offset = 0, update_base = 0;
      for (std::size_t j = 0; j < n_scatter; ++j) {
        index_offset += scatter_index[j] * scatter_index_strides_[j];
        update_base += scatter_index[j] * scatter_update_strides_[j];
      }
      std::fill_n(base.begin(), rank, 0);
      for (std::size_t s = 0; s < start_dims_.size(); ++s) {
        const std::int64_t at = index_offset + static_cast<std::int64_t>(s) * index_vector_stride_;
        base[static_cast<std::size_t>(start_dims_[s])] =
            read_index(indices + at * index_esize_, index_dtype_);
      }
      for (const auto& [dim, axis] : batching_)
        base[static_cast<std::size_t>(dim)] += scatter_index[static_cast<std::size_t>(axis)];
      std::fill_n(window_index.begin(), n_window, 0);
      do {
        std::int64_t update_offset = update_base, result_offset = 0;
        bool in_bounds = true;
        std::array<std::int64_t, kMaxScatterRank> full = base;
        for (std::size_t v = 0; v < n_window; ++v) {
          full[static_cast<std::size_t>(window_input_dims_[v])] += window_index[v];
          update_offset += window_index[v] * window_update_strides_[v];
        }
        for (std::size_t d = 0; d < rank; ++d) {
          in_bounds = in_bounds && full[d] >= 0 && full[d] < input_dims_[d];
          result_offset += full[d] * input_strides_[d];
        }
        if (in_bounds) {
          std::byte* element = out + result_offset * esize_;
          externals[0] = element;
          externals[1] = const_cast<std::byte*>(updates) + update_offset * esize_;
          externals[2] = element;  // the body reads both parameters before it writes
          body_.run(externals, 0, 1, ctx.scratch);
        }
      } while (step(window_index, window_sizes_));
    } while (step(scatter_index, scatter_sizes_));
  }

 private:
  ScatterKernel() = default;

  /// The next row-major index of `sizes` in `index`; false after the last (or for none: an
  /// empty `sizes` has the one index [], and a zero size has none, which update_count_ == 0
  /// already returned for).
  static bool step(std::array<std::int64_t, kMaxScatterRank>& index,
                   const std::vector<std::int64_t>& sizes) {
    for (std::size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) return true;
      index[d] = 0;
    }
    return false;
  }

  std::int32_t input_slot_ = -1, indices_slot_ = -1, updates_slot_ = -1, dst_slot_ = -1;
  DType dtype_ = DType::kInvalid, index_dtype_ = DType::kInvalid;
  std::int64_t esize_ = 0, index_esize_ = 0, input_bytes_ = 0, update_count_ = 0;
  std::vector<std::int64_t> input_dims_, input_strides_;
  std::vector<std::int64_t> scatter_sizes_, scatter_update_strides_, scatter_index_strides_;
  std::int64_t index_vector_stride_ = 0;
  std::vector<std::int64_t> start_dims_;
  std::vector<std::pair<std::int64_t, std::int64_t>> batching_;  // (input dim, scatter axis)
  std::vector<std::int64_t> window_sizes_, window_update_strides_, window_input_dims_;
  TileProgram body_;
  std::vector<const std::byte*> body_constants_;
  std::int64_t externals_offset_ = 0;
};

}  // namespace pjrt_lite::cpu::detail
