#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// convolution on the CPU: im2col then GEMM. For each result batch and group, a block of output
// positions gathers its windows of the lhs into the rows of a [positions, kernel taps x group
// input features] matrix (zeros where a tap reads padding or a dilation hole), which one Eigen
// GEMM multiplies by the group's kernel packed as [kernel taps x group input features, group
// output features]. The blocks of positions split across the client's threads. Every buffer,
// the GEMM's packing buffers included (gemm.hpp), is kernel scratch, so a run allocates
// nothing.
//
// Each element type computes in one type that Eigen multiplies: f16 and bf16 in f32 (rounded
// once at the end, as dot_general does), integers in unsigned arithmetic of at least 32 bits
// (whose low bits are the wrapped result), pred as a count of true products (any, at the end).

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "pjrt_lite/backends/cpu/detail/gemm.hpp"
#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class ConvKernel final : public Kernel {
 public:
  /// Plans convolution(lhs, rhs) -> result with `a` (already checked by shape inference); all
  /// three arrays are dense row-major.
  ConvKernel(const Shape& lhs, const Shape& rhs, const Shape& result, const ConvolutionAttrs& a, int workers,
             std::int32_t lhs_slot, std::int32_t rhs_slot, std::int32_t dst_slot)
      : dtype_(lhs.dtype()), lhs_slot_(lhs_slot), rhs_slot_(rhs_slot), dst_slot_(dst_slot) {
    const auto lhs_strides = element_strides(lhs);
    const auto rhs_strides = element_strides(rhs);
    const auto out_strides = element_strides(result);
    auto at = [](const std::vector<std::int64_t>& v, std::int64_t d) {
      return v[static_cast<std::size_t>(d)];
    };
    spatial_ = a.input_spatial_dimensions.size();
    groups_ = a.feature_group_count * a.batch_group_count;
    batch_ = result.dim(a.output_batch_dimension);
    group_inputs_ = rhs.dim(a.kernel_input_feature_dimension);
    group_outputs_ = result.dim(a.output_feature_dimension) / groups_;
    lhs_batch_stride_ = at(lhs_strides, a.input_batch_dimension);
    lhs_feature_stride_ = at(lhs_strides, a.input_feature_dimension);
    // A batch group reads the lhs batch block after the previous group's; a feature group the
    // next block of input features.
    lhs_group_offset_ =
        a.batch_group_count > 1 ? batch_ * lhs_batch_stride_ : group_inputs_ * lhs_feature_stride_;
    if (groups_ == 1) lhs_group_offset_ = 0;
    rhs_in_stride_ = at(rhs_strides, a.kernel_input_feature_dimension);
    rhs_out_stride_ = at(rhs_strides, a.kernel_output_feature_dimension);
    out_batch_stride_ = at(out_strides, a.output_batch_dimension);
    out_feature_stride_ = at(out_strides, a.output_feature_dimension);
    positions_ = 1;
    taps_ = 1;
    for (std::size_t d = 0; d < spatial_; ++d) {
      const std::int64_t out_size = result.dim(a.output_spatial_dimensions[d]);
      const std::int64_t kernel_size = rhs.dim(a.kernel_spatial_dimensions[d]);
      const std::int64_t in_size = lhs.dim(a.input_spatial_dimensions[d]);
      out_sizes_.push_back(out_size);
      kernel_sizes_.push_back(kernel_size);
      out_spatial_strides_.push_back(at(out_strides, a.output_spatial_dimensions[d]));
      rhs_spatial_strides_.push_back(at(rhs_strides, a.kernel_spatial_dimensions[d]));
      positions_ *= out_size;
      taps_ *= kernel_size;
      // For each (output position, tap) along d: the lhs offset it reads, or -1 for padding
      // or a dilation hole.
      tap_offsets_.emplace_back();
      auto& table = tap_offsets_.back();
      for (std::int64_t o = 0; o < out_size; ++o)
        for (std::int64_t k = 0; k < kernel_size; ++k) {
          const std::int64_t tap = a.window_reversal[d] != 0 ? kernel_size - 1 - k : k;
          const std::int64_t padded =
              o * a.window_strides[d] + tap * a.rhs_dilation[d] - a.padding_low[d];
          const bool valid = padded >= 0 && padded % a.lhs_dilation[d] == 0 &&
                             padded / a.lhs_dilation[d] < in_size;
          table.push_back(valid ? padded / a.lhs_dilation[d] *
                                      at(lhs_strides, a.input_spatial_dimensions[d])
                                : -1);
        }
    }
    depth_ = taps_ * group_inputs_;
    // Blocks of output positions bound the im2col buffer to about 4 MiB.
    const std::int64_t row_bytes = std::max<std::int64_t>(depth_, 1) * compute_size();
    block_rows_ = std::clamp<std::int64_t>((std::int64_t{1} << 22) / row_bytes, 64,
                                           std::max<std::int64_t>(positions_, 64));
    block_rows_ = std::min(block_rows_, std::max<std::int64_t>(positions_, 1));
    auto reserve = [this](std::int64_t bytes) {
      const std::int64_t offset = scratch_bytes;
      scratch_bytes += (bytes + 63) / 64 * 64;
      return offset;
    };
    cols_scratch_ = reserve(block_rows_ * depth_ * compute_size());
    packed_scratch_ = reserve(groups_ * depth_ * group_outputs_ * compute_size());
    out_scratch_ = reserve(block_rows_ * group_outputs_ * compute_size());
    // Packing buffers for every worker that can run a block of positions (one when no block
    // is large enough to split).
    visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) {
      gemm_ = GemmScratch::plan<typename GemmComputeType<T>::type>(block_rows_, group_outputs_, depth_,
                                                                     splits(block_rows_) ? workers : 1, scratch_bytes);
    });
    flops = 2.0 * static_cast<double>(batch_ * groups_) * static_cast<double>(positions_) *
            static_cast<double>(depth_) * static_cast<double>(group_outputs_);
    lhs_empty_ = lhs.element_count() == 0;
    bytes_accessed = (lhs.element_count() + rhs.element_count() + result.element_count()) *
                     static_cast<std::int64_t>(byte_size(dtype_));
  }

  void run(const RunContext& ctx) const override {
    visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) { run_typed<T>(ctx); });
  }

 private:
  static std::vector<std::int64_t> element_strides(const Shape& s) {
    std::vector<std::int64_t> strides(static_cast<std::size_t>(s.rank()));
    std::int64_t stride = 1;
    for (std::int64_t d = s.rank() - 1; d >= 0; --d) {
      strides[static_cast<std::size_t>(d)] = stride;
      stride *= s.dim(d);
    }
    return strides;
  }

  /// Whether a block of `rows` output positions splits across the workers.
  [[nodiscard]] bool splits(std::int64_t rows) const {
    return static_cast<double>(rows) * static_cast<double>(depth_) * static_cast<double>(group_outputs_) >= 1 << 18 &&
           rows >= 32;
  }

  [[nodiscard]] std::int64_t compute_size() const {
    std::int64_t size = 0;
    visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) {
      size = static_cast<std::int64_t>(sizeof(typename GemmComputeType<T>::type));
    });
    return size;
  }

  template <class T, class C>
  static C widen(T x) {
    if constexpr (std::is_same_v<T, bool>) {
      return x ? 1u : 0u;
    } else if constexpr (is_int_v<T>) {
      return static_cast<C>(static_cast<std::make_unsigned_t<T>>(x));
    } else {
      return static_cast<C>(x);
    }
  }
  template <class T, class C>
  static T narrow(C x) {
    if constexpr (std::is_same_v<T, bool>) {
      return x != 0;
    } else if constexpr (is_int_v<T>) {
      // The low bits of the unsigned sum, seen as T (two's complement).
      const auto bits = static_cast<std::make_unsigned_t<T>>(x);
      T out;
      std::memcpy(&out, &bits, sizeof(T));
      return out;
    } else {
      return static_cast<T>(x);
    }
  }

  template <class T>
  void run_typed(const RunContext& ctx) const {
    using C = typename GemmComputeType<T>::type;
    const T* lhs = reinterpret_cast<const T*>(ctx.slots[lhs_slot_]);
    const T* rhs = reinterpret_cast<const T*>(ctx.slots[rhs_slot_]);
    T* out = reinterpret_cast<T*>(ctx.slots[dst_slot_]);
    if (batch_ == 0 || positions_ == 0 || group_outputs_ == 0) return;
    if (depth_ == 0 || lhs_empty_) {
      // No taps or no input features: every sum is empty. An empty lhs with a non-empty
      // result (a spatial dimension of size 0, padded) has every tap on padding, and its
      // memory is null, so not even a group's offset may be taken from it.
      for_each_output([&](std::int64_t, std::int64_t, std::int64_t offset, std::int64_t) {
        out[offset] = T{};
      });
      return;
    }
    C* cols = reinterpret_cast<C*>(ctx.scratch + cols_scratch_);
    C* packed = reinterpret_cast<C*>(ctx.scratch + packed_scratch_);
    C* result = reinterpret_cast<C*>(ctx.scratch + out_scratch_);
    pack_kernel<T, C>(rhs, packed);
    for (std::int64_t b = 0; b < batch_; ++b)
      for (std::int64_t g = 0; g < groups_; ++g) {
        const T* lhs_group = lhs + b * lhs_batch_stride_ + g * lhs_group_offset_;
        const C* kernel = packed + g * depth_ * group_outputs_;  // [depth, group outputs]
        for (std::int64_t p0 = 0; p0 < positions_; p0 += block_rows_) {
          const std::int64_t rows = std::min(block_rows_, positions_ - p0);
          auto block = [&](std::int64_t r0, std::int64_t r1, int worker) {
            im2col<T, C>(lhs_group, p0 + r0, p0 + r1, cols + r0 * depth_);
            gemm_into<C>(r1 - r0, group_outputs_, depth_, cols + r0 * depth_, depth_, kernel, group_outputs_,
                         result + r0 * group_outputs_, group_outputs_, gemm_, gemm_.slice(ctx.scratch, worker));
            write_rows<T, C>(
                result + r0 * group_outputs_, p0 + r0, p0 + r1,
                out + b * out_batch_stride_ + g * group_outputs_ * out_feature_stride_);
          };
          if (splits(rows))
            ctx.parallel(rows, std::max<std::int64_t>(16, rows / (4 * ctx.max_workers)), block);
          else
            block(0, rows, 0);
        }
      }
  }

  /// packed[g][tap * group_inputs + i][o] = rhs[i, tap..., g * group_outputs + o].
  template <class T, class C>
  void pack_kernel(const T* rhs, C* packed) const {
    std::int64_t row = 0;
    for (std::int64_t tap = 0; tap < taps_; ++tap) {
      std::int64_t offset = 0, rest = tap;
      for (std::size_t d = spatial_; d-- > 0;) {
        offset += rest % kernel_sizes_[d] * rhs_spatial_strides_[d];
        rest /= kernel_sizes_[d];
      }
      for (std::int64_t i = 0; i < group_inputs_; ++i, ++row)
        for (std::int64_t g = 0; g < groups_; ++g) {
          C* dst = packed + (g * depth_ + row) * group_outputs_;
          const T* src = rhs + offset + i * rhs_in_stride_ + g * group_outputs_ * rhs_out_stride_;
          for (std::int64_t o = 0; o < group_outputs_; ++o)
            dst[o] = widen<T, C>(src[o * rhs_out_stride_]);
        }
    }
  }

  /// Rows [p0, p1) of the im2col matrix (output positions, row-major over the output's
  /// spatial dimensions) into `cols`, one row of depth_ entries per position.
  template <class T, class C>
  void im2col(const T* lhs, std::int64_t p0, std::int64_t p1, C* cols) const {
    // The output position's index along each spatial dimension, kept as an odometer; taps the
    // same way. Fixed-size arrays: a rank above kMaxConvSpatial never gets here.
    std::int64_t pos[kMaxConvSpatial] = {}, tap[kMaxConvSpatial] = {};
    std::int64_t rest = p0;
    for (std::size_t d = spatial_; d-- > 0;) {
      pos[d] = rest % out_sizes_[d];
      rest /= out_sizes_[d];
    }
    for (std::int64_t p = p0; p < p1; ++p) {
      std::fill(tap, tap + spatial_, 0);
      for (std::int64_t t = 0; t < taps_; ++t) {
        std::int64_t offset = 0;
        bool valid = true;
        for (std::size_t d = 0; d < spatial_ && valid; ++d) {
          const std::int64_t o =
              tap_offsets_[d][static_cast<std::size_t>(pos[d] * kernel_sizes_[d] + tap[d])];
          valid = o >= 0;
          offset += o;
        }
        C* row = cols + t * group_inputs_;
        if (valid) {
          const T* src = lhs + offset;
          for (std::int64_t i = 0; i < group_inputs_; ++i)
            row[i] = widen<T, C>(src[i * lhs_feature_stride_]);
        } else {
          std::fill(row, row + group_inputs_, C{});
        }
        for (std::size_t d = spatial_; d-- > 0;) {
          if (++tap[d] < kernel_sizes_[d]) break;
          tap[d] = 0;
        }
      }
      cols += depth_;
      for (std::size_t d = spatial_; d-- > 0;) {
        if (++pos[d] < out_sizes_[d]) break;
        pos[d] = 0;
      }
    }
  }

  /// Rows [p0, p1) of a group's product into the result (`out` points at the group's first
  /// feature of the batch).
  template <class T, class C>
  void write_rows(const C* rows, std::int64_t p0, std::int64_t p1, T* out) const {
    for (std::int64_t p = p0; p < p1; ++p, rows += group_outputs_) {
      std::int64_t offset = 0, rest = p;
      for (std::size_t d = spatial_; d-- > 0;) {
        offset += rest % out_sizes_[d] * out_spatial_strides_[d];
        rest /= out_sizes_[d];
      }
      for (std::int64_t o = 0; o < group_outputs_; ++o)
        out[offset + o * out_feature_stride_] = narrow<T, C>(rows[o]);
    }
  }

  /// Calls f(batch, group, result offset, position) for every result element.
  template <class F>
  void for_each_output(F&& f) const {
    for (std::int64_t b = 0; b < batch_; ++b)
      for (std::int64_t g = 0; g < groups_; ++g)
        for (std::int64_t p = 0; p < positions_; ++p) {
          std::int64_t offset = b * out_batch_stride_, rest = p;
          for (std::size_t d = spatial_; d-- > 0;) {
            offset += rest % out_sizes_[d] * out_spatial_strides_[d];
            rest /= out_sizes_[d];
          }
          for (std::int64_t o = 0; o < group_outputs_; ++o)
            f(b, g, offset + (g * group_outputs_ + o) * out_feature_stride_, p);
        }
  }

 public:
  /// The most spatial dimensions the kernel takes; the compiler rejects more.
  static constexpr std::size_t kMaxConvSpatial = 16;

 private:
  DType dtype_;
  std::int32_t lhs_slot_, rhs_slot_, dst_slot_;
  std::size_t spatial_ = 0;
  std::int64_t groups_ = 1, batch_ = 0, group_inputs_ = 0, group_outputs_ = 0;
  std::int64_t lhs_batch_stride_ = 0, lhs_feature_stride_ = 0, lhs_group_offset_ = 0;
  std::int64_t rhs_in_stride_ = 0, rhs_out_stride_ = 0, out_batch_stride_ = 0,
               out_feature_stride_ = 0;
  std::int64_t positions_ = 1, taps_ = 1, depth_ = 0, block_rows_ = 1;
  bool lhs_empty_ = false;
  std::vector<std::int64_t> out_sizes_, kernel_sizes_, out_spatial_strides_, rhs_spatial_strides_;
  std::vector<std::vector<std::int64_t>> tap_offsets_;
  std::int64_t cols_scratch_ = 0, packed_scratch_ = 0, out_scratch_ = 0;
  GemmScratch gemm_;  // Eigen's packing buffers, one pair per worker
};

}  // namespace pjrt_lite::cpu::detail
