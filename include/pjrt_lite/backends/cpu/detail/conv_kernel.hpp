#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// convolution on the CPU as an implicit GEMM: the result is [output positions, output
// features] = [positions, kernel taps x input features] x [taps x input features, output
// features] for each batch and group, but the left matrix (im2col) is never built. The kernel
// is packed once per run into panels of the micro-kernel's width (packed_gemm.hpp); a block of
// output positions then runs tile by tile, and each tile reads its window taps where they are:
// when input features are contiguous (NHWC and alike) and the element type is the one the
// product computes in, the micro-kernel gets a pointer per (position, tap), with a row of
// zeros for a tap on padding or in a dilation hole; otherwise the tile's rows are gathered
// (and widened) into a small buffer first. Blocks of positions, over every batch, split
// across the client's threads.
//
// A depthwise convolution (one input and one output feature per group) is no product: each
// output feature sums its own channel over the window, vectorized across channels.
//
// 8-bit integer operands with a 32-bit result (the compiler's 8-bit convolutions: converts
// from s8/u8 to s32/u32 feeding a convolution) gather a block of rows' windows as bytes, an
// explicit im2col block, and multiply it by the kernel in Int8Gemm (int8_gemm.hpp).
//
// Every buffer is kernel scratch planned at compile time, so a run allocates nothing. Each
// element type computes in one type: f16 and bf16 in f32 (rounded once at the end, as
// dot_general does), integers in unsigned arithmetic of at least 32 bits (whose low bits are
// the wrapped result), pred as a count of true products (any, at the end).

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/gemm.hpp"
#include "pjrt_lite/backends/cpu/detail/int8_gemm.hpp"
#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/packed_gemm.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class ConvKernel final : public Kernel {
 public:
  /// The most spatial dimensions the kernel takes; the compiler rejects more.
  static constexpr std::size_t kMaxConvSpatial = 16;

  /// Whether convolution(lhs, rhs) -> result with `a` has one input and one output feature
  /// per group (of several): a depthwise convolution.
  static bool depthwise(const Shape& rhs, const Shape& result, const ConvolutionAttrs& a) {
    const std::int64_t groups = a.feature_group_count * a.batch_group_count;
    return a.batch_group_count == 1 && groups > 1 && rhs.dim(a.kernel_input_feature_dimension) == 1 &&
           result.dim(a.output_feature_dimension) == groups;
  }

  /// Whether the kernel multiplies the 8-bit values of `lhs` and `rhs` into `result`'s 32-bit
  /// sums (Int8Gemm): any convolution but a depthwise one.
  static bool multiplies_8_bit(const Shape& lhs, const Shape& rhs, const Shape& result, const ConvolutionAttrs& a) {
    return Int8Gemm::multiplies(lhs.dtype(), rhs.dtype(), result.dtype()) && !depthwise(rhs, result, a);
  }

  /// Plans convolution(lhs, rhs) -> result with `a` (already checked by shape inference); all
  /// three arrays are dense row-major. The result is of the operands' type, or a 32-bit
  /// integer type for 8-bit integer operands (multiplies_8_bit).
  ConvKernel(const Shape& lhs, const Shape& rhs, const Shape& result, const ConvolutionAttrs& a, int workers,
             std::int32_t lhs_slot, std::int32_t rhs_slot, std::int32_t dst_slot)
      : dtype_(lhs.dtype()), lhs_slot_(lhs_slot), rhs_slot_(rhs_slot), dst_slot_(dst_slot) {
    int8_ = multiplies_8_bit(lhs, rhs, result, a);
    lhs_signed_ = lhs.dtype() == DType::kS8;
    rhs_signed_ = rhs.dtype() == DType::kS8;
    const auto lhs_strides = element_strides(lhs);
    const auto rhs_strides = element_strides(rhs);
    const auto out_strides = element_strides(result);
    auto at = [](const std::vector<std::int64_t>& v, std::int64_t d) { return v[static_cast<std::size_t>(d)]; };
    spatial_ = a.input_spatial_dimensions.size();
    groups_ = a.feature_group_count * a.batch_group_count;
    batch_ = result.dim(a.output_batch_dimension);
    group_inputs_ = rhs.dim(a.kernel_input_feature_dimension);
    group_outputs_ = result.dim(a.output_feature_dimension) / groups_;
    lhs_batch_stride_ = at(lhs_strides, a.input_batch_dimension);
    lhs_feature_stride_ = at(lhs_strides, a.input_feature_dimension);
    // A batch group reads the lhs batch block after the previous group's; a feature group the
    // next block of input features.
    lhs_group_offset_ = a.batch_group_count > 1 ? batch_ * lhs_batch_stride_ : group_inputs_ * lhs_feature_stride_;
    if (groups_ == 1) lhs_group_offset_ = 0;
    rhs_in_stride_ = at(rhs_strides, a.kernel_input_feature_dimension);
    rhs_out_stride_ = at(rhs_strides, a.kernel_output_feature_dimension);
    out_batch_stride_ = at(out_strides, a.output_batch_dimension);
    out_feature_stride_ = at(out_strides, a.output_feature_dimension);
    positions_ = 1;
    taps_ = 1;
    std::vector<std::vector<std::int64_t>> regular_deltas;  // per spatial dimension (note_regular_positions)
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
          const std::int64_t padded = o * a.window_strides[d] + tap * a.rhs_dilation[d] - a.padding_low[d];
          const bool valid = padded >= 0 && padded % a.lhs_dilation[d] == 0 && padded / a.lhs_dilation[d] < in_size;
          table.push_back(valid ? padded / a.lhs_dilation[d] * at(lhs_strides, a.input_spatial_dimensions[d]) : -1);
        }
      regular_deltas.push_back(note_regular_positions(table, out_size, kernel_size));
    }
    combine_regular_deltas(regular_deltas);
    depth_ = taps_ * group_inputs_;
    rows_ = batch_ * positions_;
    lhs_empty_ = lhs.element_count() == 0;
    depthwise_ = depthwise(rhs, result, a);
    if (int8_)
      plan_int8(workers);
    else
      visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) { plan<T, typename GemmComputeType<T>::type>(workers); });
    flops = 2.0 * static_cast<double>(batch_ * groups_) * static_cast<double>(positions_) *
            static_cast<double>(depth_) * static_cast<double>(group_outputs_);
    bytes_accessed = (lhs.element_count() + rhs.element_count() + result.element_count()) *
                     static_cast<std::int64_t>(byte_size(dtype_));
  }

  bool adopt_epilogue(std::unique_ptr<FusedKernel>& loop) override {
    // Products whose blocks of rows are whole rows of the result, in place: one group,
    // features contiguous; not the empty ones, which have no blocks.
    const bool floating = dtype_ == DType::kF32 || dtype_ == DType::kF64;
    if (batch_ == 0 || positions_ == 0 || group_outputs_ == 0 || depth_ == 0 || lhs_empty_) return false;
    if (depthwise_) {
      // A depthwise one runs the loop on each block of positions it finished, whole rows of
      // channels when the result's rows are its positions in order.
      if (!floating || !depthwise_vectorized() || !rows_are_matrix()) return false;
    } else if (!(int8_ || floating) || !direct_ || groups_ != 1) {
      return false;
    }
    epilogue_.adopt(loop, *this);
    return true;
  }

  void run(const RunContext& ctx) const override {
    epilogue_.bind(ctx);
    if (int8_) {
      Int8Gemm::with_signedness(lhs_signed_, rhs_signed_, [&]<bool kSignedL, bool kSignedR>() {
        run_int8<kSignedL, kSignedR>(ctx);
      });
      return;
    }
    visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) { run_typed<T>(ctx); });
  }

 private:
  /// Where a row of the implicit product (one output position of one batch) reads and writes.
  struct Row {
    std::int64_t lhs, out;  // offsets of its batch and position (a tap adds its own)
    std::int64_t pos[kMaxConvSpatial];
  };

  static std::vector<std::int64_t> element_strides(const Shape& s) {
    std::vector<std::int64_t> strides(static_cast<std::size_t>(s.rank()));
    std::int64_t stride = 1;
    for (std::int64_t d = s.rank() - 1; d >= 0; --d) {
      strides[static_cast<std::size_t>(d)] = stride;
      stride *= s.dim(d);
    }
    return strides;
  }

  static std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

  std::int64_t reserve(std::int64_t bytes) {
    const std::int64_t offset = scratch_bytes;
    scratch_bytes += round_up(bytes, 64);
    return offset;
  }

  /// Chooses the blocking and lays out the scratch. The depth splits into blocks of whole
  /// taps (of up to kDepthBlock values) or, when one tap has more input features than that, of
  /// one tap's features, so each block is a run of the packed kernel that stays in L1 while
  /// a block of rows passes it.
  template <class T, class C>
  void plan(int workers) {
    using Tile = MicroTile<C>;
    constexpr std::int64_t kDepthBlock = 256;
    constexpr std::int64_t kCacheBytes = std::int64_t{1} << 18;  // what a block of rows keeps in L2
    const auto size = static_cast<std::int64_t>(sizeof(C));
    indirect_ = std::is_same_v<T, C> && lhs_feature_stride_ == 1;
    if (depthwise_) {
      // The kernel as [taps][channels]; each worker's sums of one position, and its offsets.
      workers_ = splits(rows_ * taps_ * groups_) ? std::max(workers, 1) : 1;
      packed_ = reserve(taps_ * groups_ * size);
      row_info_at_ = round_up(groups_ * size, 64);
      windows_at_ = row_info_at_ + round_up(kDepthwiseRows * static_cast<std::int64_t>(sizeof(Row)), 64);
      slice_bytes_ = windows_at_ + round_up(taps_ * 8, 64);
      slices_ = reserve(slice_bytes_ * workers_);
      return;
    }
    if (group_inputs_ <= kDepthBlock) {
      chunk_ = group_inputs_;
      // As many blocks as kDepthBlock needs, of equal numbers of taps.
      const std::int64_t most = std::clamp<std::int64_t>(kDepthBlock / std::max<std::int64_t>(group_inputs_, 1), 1, taps_);
      const std::int64_t blocks = (taps_ + most - 1) / most;
      block_taps_ = (taps_ + blocks - 1) / blocks;
    } else {
      const std::int64_t pieces = (group_inputs_ + kDepthBlock - 1) / kDepthBlock;
      chunk_ = (group_inputs_ + pieces - 1) / pieces;
      block_taps_ = 1;
    }
    n_pad_ = round_up(std::max<std::int64_t>(group_outputs_, 1), Tile::kNr);
    nc_ = std::min<std::int64_t>(n_pad_, round_up(256, Tile::kNr));
    const std::int64_t block_depth = block_taps_ * chunk_;
    mc_ = std::min({kCacheBytes / std::max<std::int64_t>(block_depth * size, 1), kCacheBytes / (nc_ * size),
                    kCacheBytes / (taps_ * 8)});
    mc_ = std::max<std::int64_t>(mc_ / Tile::kMr * Tile::kMr, Tile::kMr);
    mc_ = std::min(mc_, round_up(std::max<std::int64_t>(rows_, 1), Tile::kMr));
    workers_ = splits(rows_ * depth_ * group_outputs_) ? std::max(workers, 1) : 1;
    packed_ = reserve(groups_ * n_pad_ * depth_ * size);
    zeros_ = reserve(chunk_ * size);
    // Where the micro-kernel's sums go: straight into the result when it computes in the
    // result's type, features are contiguous and every panel is whole; otherwise into a
    // block of sums copied out (narrowed) when the block's depth is done.
    direct_ = std::is_same_v<T, C> && out_feature_stride_ == 1 && group_outputs_ % Tile::kNr == 0;
    // Per worker: one tile's row pointers for one depth block (gathered, or moved to a later
    // piece of the input features), the block of rows' result rows, descriptions, and window
    // offsets (gathered) or tap pointers (in place), one window's offsets, its gathered rows
    // (when not read in place) and its sums (when not written in place; when written in place,
    // one row of them that the rows past the end of a last partial tile write).
    c_rows_at_ = round_up(Tile::kMr * block_taps_ * static_cast<std::int64_t>(sizeof(void*)), 64);
    row_info_at_ = c_rows_at_ + round_up(mc_ * static_cast<std::int64_t>(sizeof(void*)), 64);
    windows_at_ = row_info_at_ + round_up(mc_ * static_cast<std::int64_t>(sizeof(Row)), 64);
    window_at_ = windows_at_ + round_up(mc_ * taps_ * 8, 64);
    rows_at_ = window_at_ + round_up(taps_ * 8, 64);
    sums_at_ = rows_at_ + (indirect_ ? 0 : round_up(Tile::kMr * block_depth * size, 64));
    slice_bytes_ = sums_at_ + round_up((direct_ ? n_pad_ : mc_ * nc_) * size, 64);
    slices_ = reserve(slice_bytes_ * workers_);
  }

  /// The 8-bit product's blocking: blocks of rows whose gathered windows (bytes) fill about
  /// 256 KiB; per worker, their descriptions, one window's offsets, the gathered block, its sums
  /// (unless they go straight into a result whose rows are a matrix of all the features) and
  /// Int8Gemm's packed panels. The kernel is repacked once per run as [group][depth][output].
  void plan_int8(int workers) {
    constexpr std::int64_t kMr = Int8Gemm::kMr;
    mc_ = std::clamp<std::int64_t>((std::int64_t{1} << 18) / std::max<std::int64_t>(depth_, 1), kMr, 512) / kMr * kMr;
    mc_ = std::min(mc_, round_up(std::max<std::int64_t>(rows_, 1), kMr));
    workers_ = splits(rows_ * depth_ * group_outputs_) ? std::max(workers, 1) : 1;
    packed_ = reserve(groups_ * depth_ * group_outputs_);
    direct_ = rows_are_matrix();
    windows_at_ = round_up(mc_ * static_cast<std::int64_t>(sizeof(Row)), 64);
    rows_at_ = windows_at_ + round_up(taps_ * 8, 64);
    sums_at_ = rows_at_ + round_up(mc_ * depth_, 64);
    gemm_at_ = sums_at_ + (direct_ ? 0 : round_up(mc_ * group_outputs_ * 4, 64));
    slice_bytes_ = gemm_at_ + Int8Gemm::scratch_bytes(group_outputs_, depth_);
    slices_ = reserve(slice_bytes_ * workers_);
  }

  /// Whether row m of the product (batch, then output positions in order) is the result's
  /// features at m * (all features), contiguous: an NHWC-like result.
  bool rows_are_matrix() const {
    std::int64_t stride = groups_ * group_outputs_;
    if (out_feature_stride_ != 1) return false;
    for (std::size_t d = spatial_; d-- > 0;) {
      if (out_spatial_strides_[d] != stride && out_sizes_[d] != 1) return false;
      stride *= out_sizes_[d];
    }
    return out_batch_stride_ == stride || batch_ == 1;
  }

  /// Rows a depthwise worker describes at a time.
  static constexpr std::int64_t kDepthwiseRows = 32;

  /// A position along a spatial dimension whose taps all read the lhs at fixed distances
  /// from its first tap's (an interior position when the lhs is not dilated): its first tap's
  /// offset in regular_first_, kIrregular otherwise.
  static constexpr std::int64_t kIrregular = std::numeric_limits<std::int64_t>::min();

  /// Notes which positions of the last spatial dimension's tap table (`size` positions of
  /// `taps` taps) are regular, against the distances of the first whose taps are all valid;
  /// returns those distances (none when no position's taps are all valid).
  std::vector<std::int64_t> note_regular_positions(const std::vector<std::int64_t>& table, std::int64_t size,
                                                   std::int64_t taps) {
    auto& first = regular_first_.emplace_back(static_cast<std::size_t>(size), kIrregular);
    std::vector<std::int64_t> deltas;
    for (std::int64_t o = 0; o < size; ++o) {
      const std::int64_t* along = table.data() + o * taps;
      if (std::any_of(along, along + taps, [](std::int64_t offset) { return offset < 0; })) continue;
      if (deltas.empty())
        for (std::int64_t t = 0; t < taps; ++t) deltas.push_back(along[t] - along[0]);
      bool same = true;
      for (std::int64_t t = 0; t < taps; ++t) same = same && along[t] - along[0] == deltas[static_cast<std::size_t>(t)];
      if (same) first[static_cast<std::size_t>(o)] = along[0];
    }
    return deltas;
  }

  /// The offset of every tap of a regular window from its first, in window()'s order, from
  /// each spatial dimension's distances.
  void combine_regular_deltas(const std::vector<std::vector<std::int64_t>>& along_dimensions) {
    window_deltas_.assign(1, 0);
    for (const auto& deltas : along_dimensions) {
      if (deltas.empty()) {  // no regular position along this dimension: no regular window
        window_deltas_.clear();
        return;
      }
      std::vector<std::int64_t> next;
      next.reserve(window_deltas_.size() * deltas.size());
      for (std::int64_t base : window_deltas_)
        for (std::int64_t delta : deltas) next.push_back(base + delta);
      window_deltas_ = std::move(next);
    }
  }

  /// Whether a depthwise run takes the vectorized rows (depthwise_row): floating point
  /// computed in its own type, channels contiguous in the lhs and the result.
  bool depthwise_vectorized() const {
    return (dtype_ == DType::kF32 || dtype_ == DType::kF64) && lhs_feature_stride_ == 1 && out_feature_stride_ == 1;
  }

  /// Whether work of `macs` multiply-adds splits across the workers.
  [[nodiscard]] static bool splits(std::int64_t macs) { return macs >= (std::int64_t{1} << 17); }

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

  /// Runs fn(begin, end, worker) over [0, n), split across the planned workers when `split`.
  static void for_range(const RunContext& ctx, int workers, bool split, std::int64_t n, std::int64_t grain, auto&& fn) {
    if (split && workers > 1 && ctx.parallel_fn != nullptr)
      ctx.parallel_fn(ctx.executor, std::min(ctx.max_workers, workers), n, grain, RangeFn(fn));
    else
      fn(std::int64_t{0}, n, 0);
  }

  /// The rows [m0, m0 + count) of the product, as positions and offsets (`lhs` includes the
  /// batch but not the group).
  void describe_rows(std::int64_t m0, std::int64_t count, Row* rows) const {
    std::int64_t b = m0 / std::max<std::int64_t>(positions_, 1), rest = m0 - b * positions_;
    std::int64_t pos[kMaxConvSpatial];
    for (std::size_t d = spatial_; d-- > 0;) {
      pos[d] = rest % out_sizes_[d];
      rest /= out_sizes_[d];
    }
    for (std::int64_t r = 0; r < count; ++r) {
      Row& row = rows[r];
      row.lhs = b * lhs_batch_stride_;
      row.out = b * out_batch_stride_;
      for (std::size_t d = 0; d < spatial_; ++d) {
        row.pos[d] = pos[d];
        row.out += pos[d] * out_spatial_strides_[d];
      }
      std::size_t d = spatial_;
      for (; d-- > 0;) {
        if (++pos[d] < out_sizes_[d]) break;
        pos[d] = 0;
      }
      if (d == static_cast<std::size_t>(-1)) ++b;
    }
  }

  /// The lhs offset of every tap of `row`'s window (its batch included, its group not), -1
  /// where the tap reads padding or a dilation hole. A regular window (every tap inside the
  /// lhs, at the fixed distances) is its first tap's offset plus each tap's distance; the
  /// others are built one spatial dimension at a time, so a tap costs a lookup and an add.
  void window(const Row& row, std::int64_t* out) const {
    if (!window_deltas_.empty()) {
      std::int64_t first = row.lhs;
      std::size_t d = 0;
      for (; d < spatial_; ++d) {
        const std::int64_t offset = regular_first_[d][static_cast<std::size_t>(row.pos[d])];
        if (offset == kIrregular) break;
        first += offset;
      }
      if (d == spatial_) {
        // Locals: stores through `out` could otherwise alias the members, reloaded every tap.
        const std::int64_t* deltas = window_deltas_.data();
        const std::int64_t taps = taps_;
        for (std::int64_t t = 0; t < taps; ++t) out[t] = first + deltas[t];
        return;
      }
    }
    out[0] = row.lhs;
    std::int64_t size = 1;
    for (std::size_t d = 0; d < spatial_; ++d) {
      const std::int64_t k = kernel_sizes_[d];
      const std::int64_t* along = tap_offsets_[d].data() + row.pos[d] * k;
      for (std::int64_t j = size; j-- > 0;) {
        const std::int64_t base = out[j];
        for (std::int64_t t = k; t-- > 0;) out[j * k + t] = base < 0 || along[t] < 0 ? -1 : base + along[t];
      }
      size *= k;
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
      zero_output(out);
      return;
    }
    if (depthwise_)
      run_depthwise<T, C>(ctx, lhs, rhs, out);
    else
      run_product<T, C>(ctx, lhs, rhs, out);
  }

  template <class T>
  void zero_output(T* out) const {
    Row row;
    for (std::int64_t m = 0; m < rows_; ++m) {
      describe_rows(m, 1, &row);
      for (std::int64_t o = 0; o < groups_ * group_outputs_; ++o) out[row.out + o * out_feature_stride_] = T{};
    }
  }

  /// packed[g][panel][d][0..kNr) = rhs[input feature d % group_inputs, tap d / group_inputs,
  /// output feature g * group_outputs + panel * kNr + j], zero beyond the group's features.
  template <class T, class C>
  void pack_kernel(const T* rhs, C* packed) const {
    constexpr std::int64_t kNr = MicroTile<C>::kNr;
    for (std::int64_t tap = 0; tap < taps_; ++tap) {
      const std::int64_t offset = kernel_tap_offset(tap);
      for (std::int64_t g = 0; g < groups_; ++g)
        for (std::int64_t n0 = 0; n0 < n_pad_; n0 += kNr) {
          C* panel = packed + (g * n_pad_ + n0) * depth_;
          const std::int64_t width = std::clamp<std::int64_t>(group_outputs_ - n0, 0, kNr);
          for (std::int64_t i = 0; i < group_inputs_; ++i) {
            C* dst = panel + (tap * group_inputs_ + i) * kNr;
            const T* src = rhs + offset + i * rhs_in_stride_ + (g * group_outputs_ + n0) * rhs_out_stride_;
            for (std::int64_t j = 0; j < width; ++j) dst[j] = widen<T, C>(src[j * rhs_out_stride_]);
            std::fill(dst + width, dst + kNr, C(0));
          }
        }
    }
  }

  template <class T, class C>
  void run_product(const RunContext& ctx, const T* lhs, const T* rhs, T* out) const {
    using Tile = MicroTile<C>;
    constexpr std::int64_t kMr = Tile::kMr, kNr = Tile::kNr;
    C* packed = reinterpret_cast<C*>(ctx.scratch + packed_);
    C* zeros = reinterpret_cast<C*>(ctx.scratch + zeros_);
    pack_kernel<T, C>(rhs, packed);
    std::fill(zeros, zeros + chunk_, C(0));
    const std::int64_t tiles = (rows_ + kMr - 1) / kMr;
    const std::int64_t pieces = (group_inputs_ + chunk_ - 1) / chunk_;  // of one tap's features
    constexpr bool kSameType = std::is_same_v<T, C>;
    const bool in_place = kSameType && indirect_;
    for (std::int64_t g = 0; g < groups_; ++g) {
      const T* lhs_group = lhs + g * lhs_group_offset_;
      T* out_group = out + g * group_outputs_ * out_feature_stride_;
      const C* kernel = packed + g * n_pad_ * depth_;
      auto block = [&](std::int64_t t0, std::int64_t t1, int worker) {
        std::byte* slice = ctx.scratch + slices_ + slice_bytes_ * worker;
        auto** ptrs = reinterpret_cast<const C**>(slice);
        auto** c_rows = reinterpret_cast<C**>(slice + c_rows_at_);
        Row* rows = reinterpret_cast<Row*>(slice + row_info_at_);
        auto* windows = reinterpret_cast<std::int64_t*>(slice + windows_at_);
        auto** taps = reinterpret_cast<const C**>(slice + windows_at_);
        auto* one_window = reinterpret_cast<std::int64_t*>(slice + window_at_);
        C* gathered = reinterpret_cast<C*>(slice + rows_at_);
        C* sums = reinterpret_cast<C*>(slice + sums_at_);
        for (std::int64_t m0 = t0 * kMr; m0 < std::min(t1 * kMr, rows_); m0 += mc_) {
          const std::int64_t m1 = std::min({m0 + mc_, t1 * kMr, rows_});
          const std::int64_t padded = round_up(m1 - m0, kMr);  // whole tiles
          describe_rows(m0, m1 - m0, rows);
          // Where each row's sums go (the micro-kernel adds the panel's first column): its row
          // of the result, or of the block's sums; rows past the end share a row of scratch.
          for (std::int64_t i = 0; i < padded; ++i) {
            if constexpr (kSameType) {
              if (direct_) {
                c_rows[i] = i < m1 - m0 ? out_group + rows[i].out : sums;
                continue;
              }
            }
            c_rows[i] = sums + i * nc_;
          }
          // Each row's window: in place, a pointer per tap, laid out per tile as the
          // micro-kernel reads them ([tile][tap][row]; zeros for padding and past the end),
          // so that a tile's depth block is a slice of the table; gathered, its offsets.
          if (in_place) {
            const C* const base = reinterpret_cast<const C*>(lhs_group);
            const C* const zero_row = zeros;
            const std::int64_t window_taps = taps_;
            for (std::int64_t i = 0; i < padded; ++i) {
              const C** at = taps + (i / kMr) * window_taps * kMr + i % kMr;
              if (i >= m1 - m0) {
                for (std::int64_t t = 0; t < window_taps; ++t) at[t * kMr] = zero_row;
                continue;
              }
              window(rows[i], one_window);
              for (std::int64_t t = 0; t < window_taps; ++t)
                at[t * kMr] = one_window[t] < 0 ? zero_row : base + one_window[t];
            }
          } else {
            for (std::int64_t i = 0; i < m1 - m0; ++i) window(rows[i], windows + i * taps_);
          }
          for (std::int64_t n0 = 0; n0 < n_pad_; n0 += nc_) {
            const std::int64_t n1 = std::min(n0 + nc_, n_pad_);
            // Direct sums are the result's rows, whose columns start at 0; the block's sums
            // start at n0.
            const std::int64_t c_first = direct_ ? 0 : n0;
            bool first = true;
            for (std::int64_t tap0 = 0; tap0 < taps_; tap0 += block_taps_) {
              const std::int64_t ntaps = std::min(block_taps_, taps_ - tap0);
              for (std::int64_t piece = 0; piece < pieces; ++piece, first = false) {
                const std::int64_t i0 = piece * chunk_, len = std::min(chunk_, group_inputs_ - i0);
                for (std::int64_t r0 = m0; r0 < m1; r0 += kMr) {
                  const std::int64_t count = std::min(kMr, m1 - r0);
                  // The tile's rows: a pointer per (tap, row) into the lhs, or its rows
                  // gathered; rows past the end read zeros.
                  const C* const* tile_rows = ptrs;
                  std::int64_t segments = ntaps, seg_len = len;
                  if (in_place) {
                    const C* const* table = taps + (r0 - m0) * taps_ + tap0 * kMr;
                    if (i0 == 0) {
                      tile_rows = table;
                    } else {
                      for (std::int64_t k = 0; k < ntaps * kMr; ++k) ptrs[k] = table[k] == zeros ? zeros : table[k] + i0;
                    }
                  } else {
                    const std::int64_t* window_of = windows + (r0 - m0) * taps_ + tap0;
                    for (std::int64_t r = 0; r < kMr; ++r) {
                      C* dst = gathered + r * ntaps * len;
                      ptrs[r] = dst;
                      for (std::int64_t t = 0; t < ntaps; ++t, dst += len) {
                        const std::int64_t o = r < count ? window_of[r * taps_ + t] : -1;
                        if (o < 0) {
                          std::fill(dst, dst + len, C(0));
                          continue;
                        }
                        const T* src = lhs_group + o + i0 * lhs_feature_stride_;
                        for (std::int64_t i = 0; i < len; ++i) dst[i] = widen<T, C>(src[i * lhs_feature_stride_]);
                      }
                    }
                    segments = 1;
                    seg_len = ntaps * len;
                  }
                  // The kernel rows of this depth block: taps [tap0, tap0 + ntaps), features
                  // [i0, i0 + len); consecutive in a panel (several taps only when len is all).
                  const std::int64_t depth0 = tap0 * group_inputs_ + i0;
                  for (std::int64_t j = n0; j < n1; j += kNr)
                    micro_kernel<C>(segments, seg_len, tile_rows, kernel + j * depth_ + depth0 * kNr, len,
                                    c_rows + (r0 - m0), j - c_first, !first);
                }
              }
            }
            if (direct_) continue;
            // The block's sums into the result.
            const std::int64_t width = std::min(n1, group_outputs_) - n0;
            for (std::int64_t m = m0; m < m1; ++m) {
              const C* src = sums + (m - m0) * nc_;
              T* dst = out_group + rows[m - m0].out + n0 * out_feature_stride_;
              if (out_feature_stride_ == 1) {
                for (std::int64_t o = 0; o < width; ++o) dst[o] = narrow<T, C>(src[o]);
              } else {
                for (std::int64_t o = 0; o < width; ++o) dst[o * out_feature_stride_] = narrow<T, C>(src[o]);
              }
            }
          }
          // Rows [m0, m1) are final: whole rows of the result when an epilogue was adopted.
          epilogue_.run(ctx, rows[0].out, rows[0].out + (m1 - m0) * group_outputs_, worker);
        }
      };
      for_range(ctx, workers_, workers_ > 1, tiles, std::max<std::int64_t>(1, 32 / kMr), block);
    }
  }

  /// The 8-bit product: per group, blocks of rows gather their windows' bytes (zeros on
  /// padding) into a row-major block [rows, taps x input features] that Int8Gemm multiplies
  /// by the group's kernel [taps x input features, outputs].
  template <bool kSignedL, bool kSignedR>
  void run_int8(const RunContext& ctx) const {
    const auto* lhs = reinterpret_cast<const std::uint8_t*>(ctx.slots[lhs_slot_]);
    const auto* rhs = reinterpret_cast<const std::uint8_t*>(ctx.slots[rhs_slot_]);
    auto* out = reinterpret_cast<std::int32_t*>(ctx.slots[dst_slot_]);
    if (batch_ == 0 || positions_ == 0 || group_outputs_ == 0) return;
    if (depth_ == 0 || lhs_empty_) {
      zero_output(out);
      return;
    }
    auto* kernel = reinterpret_cast<std::uint8_t*>(ctx.scratch + packed_);
    for (std::int64_t tap = 0; tap < taps_; ++tap) {
      const std::int64_t offset = kernel_tap_offset(tap);
      for (std::int64_t g = 0; g < groups_; ++g)
        for (std::int64_t i = 0; i < group_inputs_; ++i) {
          std::uint8_t* dst = kernel + (g * depth_ + tap * group_inputs_ + i) * group_outputs_;
          const std::uint8_t* src = rhs + offset + i * rhs_in_stride_ + g * group_outputs_ * rhs_out_stride_;
          for (std::int64_t o = 0; o < group_outputs_; ++o) dst[o] = src[o * rhs_out_stride_];
        }
    }
    const std::int64_t features = groups_ * group_outputs_;
    const std::int64_t blocks = (rows_ + mc_ - 1) / mc_;
    for (std::int64_t g = 0; g < groups_; ++g) {
      const std::uint8_t* lhs_group = lhs + g * lhs_group_offset_;
      std::int32_t* out_group = out + g * group_outputs_ * out_feature_stride_;
      const std::uint8_t* kernel_group = kernel + g * depth_ * group_outputs_;
      auto block = [&](std::int64_t b0, std::int64_t b1, int worker) {
        std::byte* slice = ctx.scratch + slices_ + slice_bytes_ * worker;
        Row* rows = reinterpret_cast<Row*>(slice);
        auto* windows = reinterpret_cast<std::int64_t*>(slice + windows_at_);
        auto* gathered = reinterpret_cast<std::uint8_t*>(slice + rows_at_);
        auto* sums = reinterpret_cast<std::int32_t*>(slice + sums_at_);
        for (std::int64_t m0 = b0 * mc_; m0 < std::min(b1 * mc_, rows_); m0 += mc_) {
          const std::int64_t count = std::min(mc_, rows_ - m0);
          describe_rows(m0, count, rows);
          for (std::int64_t r = 0; r < count; ++r) {
            window(rows[r], windows);
            std::uint8_t* dst = gathered + r * depth_;
            for (std::int64_t t = 0; t < taps_; ++t, dst += group_inputs_) {
              const std::int64_t o = windows[t];
              if (o < 0) {
                std::memset(dst, 0, static_cast<std::size_t>(group_inputs_));
              } else if (lhs_feature_stride_ == 1) {
                std::memcpy(dst, lhs_group + o, static_cast<std::size_t>(group_inputs_));
              } else {
                for (std::int64_t i = 0; i < group_inputs_; ++i) dst[i] = lhs_group[o + i * lhs_feature_stride_];
              }
            }
          }
          std::int32_t* c = direct_ ? out_group + rows[0].out : sums;
          // With an epilogue (one group, direct), each block of rows Int8Gemm finishes.
          Epilogue::OnRows on_rows(epilogue_, ctx, rows[0].out, features, worker);
          Int8Gemm::run<kSignedL, kSignedR>(count, group_outputs_, depth_, gathered, depth_, kernel_group,
                                            group_outputs_, c, direct_ ? features : group_outputs_,
                                            slice + gemm_at_, direct_ ? on_rows.done() : RowsDone{});
          if (direct_) continue;
          for (std::int64_t r = 0; r < count; ++r)
            for (std::int64_t o = 0; o < group_outputs_; ++o)
              out_group[rows[r].out + o * out_feature_stride_] = sums[r * group_outputs_ + o];
        }
      };
      for_range(ctx, workers_, workers_ > 1, blocks, 1, block);
    }
  }

  /// The rhs offset of kernel tap `tap` (taps numbered row-major over the kernel's spatial
  /// dimensions).
  std::int64_t kernel_tap_offset(std::int64_t tap) const {
    std::int64_t offset = 0;
    for (std::size_t d = spatial_; d-- > 0;) {
      offset += tap % kernel_sizes_[d] * rhs_spatial_strides_[d];
      tap /= kernel_sizes_[d];
    }
    return offset;
  }

  /// One input and one output feature per group: result[b, p, g] = sum over taps of
  /// lhs[b, p's window tap, g] * rhs[tap, g].
  template <class T, class C>
  void run_depthwise(const RunContext& ctx, const T* lhs, const T* rhs, T* out) const {
    C* packed = reinterpret_cast<C*>(ctx.scratch + packed_);
    for (std::int64_t tap = 0; tap < taps_; ++tap) {
      const std::int64_t offset = kernel_tap_offset(tap);
      for (std::int64_t g = 0; g < groups_; ++g) packed[tap * groups_ + g] = widen<T, C>(rhs[offset + g * rhs_out_stride_]);
    }
    const bool vectorized = depthwise_vectorized();
    auto block = [&](std::int64_t m0, std::int64_t m1, int worker) {
      std::byte* slice = ctx.scratch + slices_ + slice_bytes_ * worker;
      C* sums = reinterpret_cast<C*>(slice);
      Row* rows = reinterpret_cast<Row*>(slice + row_info_at_);
      auto* offsets = reinterpret_cast<std::int64_t*>(slice + windows_at_);
      if constexpr (std::is_same_v<T, C> && std::is_floating_point_v<C>) {
        if (vectorized) return depthwise_lines<C>(ctx, lhs, packed, out, m0, m1, offsets, worker);
      }
      for (std::int64_t c0 = m0; c0 < m1; c0 += kDepthwiseRows) {
        const std::int64_t count = std::min(kDepthwiseRows, m1 - c0);
        describe_rows(c0, count, rows);
        for (std::int64_t r = 0; r < count; ++r) {
          T* dst = out + rows[r].out;
          window(rows[r], offsets);
          std::fill(sums, sums + groups_, C(0));
          for (std::int64_t t = 0; t < taps_; ++t) {
            if (offsets[t] < 0) continue;
            const T* src = lhs + offsets[t];
            const C* w = packed + t * groups_;
            for (std::int64_t i = 0; i < groups_; ++i) sums[i] += widen<T, C>(src[i * lhs_feature_stride_]) * w[i];
          }
          for (std::int64_t i = 0; i < groups_; ++i) dst[i * out_feature_stride_] = narrow<T, C>(sums[i]);
        }
      }
    };
    for_range(ctx, workers_, workers_ > 1, rows_, 64, block);
  }

  /// Rows [m0, m1) of a depthwise convolution with contiguous channels, a run of positions
  /// along the last spatial dimension at a time: a position whose window is regular reads its
  /// taps at window_deltas_ from its first, the others tap by tap through window(). The
  /// epilogue, if any, runs on each run of positions as soon as it is done.
  template <class C>
  void depthwise_lines(const RunContext& ctx, const C* lhs, const C* packed, C* out, std::int64_t m0, std::int64_t m1,
                       std::int64_t* offsets, int worker) const {
    constexpr std::int64_t kMostPositions = 128;  // per run, so that the epilogue finds them in cache
    const std::int64_t line = spatial_ > 0 ? out_sizes_.back() : 1;
    const std::int64_t out_step = spatial_ > 0 ? out_spatial_strides_.back() : 0;
    for (std::int64_t m = m0; m < m1;) {
      const std::int64_t o0 = m % line, count = std::min({line - o0, m1 - m, kMostPositions});
      Row row;
      describe_rows(m, 1, &row);
      // The line's first tap offset along every dimension but the last.
      std::int64_t first = row.lhs;
      bool regular = spatial_ > 0 && !window_deltas_.empty();
      for (std::size_t d = 0; regular && d + 1 < spatial_; ++d) {
        const std::int64_t offset = regular_first_[d][static_cast<std::size_t>(row.pos[d])];
        regular = offset != kIrregular;
        if (regular) first += offset;
      }
      const std::int64_t* along = regular ? regular_first_.back().data() : nullptr;
      for (std::int64_t o = o0; o < o0 + count;) {
        C* dst = out + row.out + (o - o0) * out_step;
        if (along != nullptr && along[o] != kIrregular) {
          // A run of regular positions, each window the last one's moved by the same step.
          std::int64_t end = o + 1;
          const std::int64_t step = end < o0 + count && along[end] != kIrregular ? along[end] - along[o] : 0;
          while (end < o0 + count && along[end] != kIrregular && along[end] - along[end - 1] == step) ++end;
          depthwise_run<C>(lhs + first + along[o], end - o, step, packed, dst, out_step);
          o = end;
        } else {
          if (spatial_ > 0) row.pos[spatial_ - 1] = o;
          window(row, offsets);
          depthwise_row<C, true>(lhs, packed, offsets, dst);
          ++o;
        }
      }
      epilogue_.run(ctx, m * groups_, (m + count) * groups_, worker);
      m += count;
    }
  }

  /// One position of a depthwise convolution with contiguous channels: eight, then four,
  /// then one vector of channels at a time stay in registers over every tap (unrolled by a
  /// fold: as a loop over an array, g++ kept the sums in memory and stored and reloaded them
  /// every tap). Eight independent sums keep both FMA pipes busy: with four, each tap waited
  /// for the last one's FMA latency (a 64-channel 3x3 position took about twice as long).
  /// Tap t reads base + offsets[t], skipped when kChecked and the offset is negative.
  template <class C, bool kChecked>
  void depthwise_row(const C* base, const C* packed, const std::int64_t* offsets, C* dst) const {
    using L = Lanes<C>;
    constexpr std::int64_t kW = L::kSize;
    std::int64_t g = 0;
    for (; g + 8 * kW <= groups_; g += 8 * kW) depthwise_packets<C, kChecked, 8>(g, base, packed, offsets, dst);
    for (; g + 4 * kW <= groups_; g += 4 * kW) depthwise_packets<C, kChecked, 4>(g, base, packed, offsets, dst);
    for (; g + kW <= groups_; g += kW) depthwise_packets<C, kChecked, 1>(g, base, packed, offsets, dst);
    for (; g < groups_; ++g) {
      C acc = 0;
      for (std::int64_t t = 0; t < taps_; ++t)
        if (!kChecked || offsets[t] >= 0) acc += base[offsets[t] + g] * packed[t * groups_ + g];
      dst[g] = acc;
    }
  }

  /// `count` regular depthwise positions whose windows start at `first`, `step` apart, their
  /// results at `dst`, `out_step` apart: two positions at a time share each load of the
  /// kernel (three loads for two FMAs instead of four), then a last one alone.
  template <class C>
  void depthwise_run(const C* first, std::int64_t count, std::int64_t step, const C* packed, C* dst,
                     std::int64_t out_step) const {
    using L = Lanes<C>;
    constexpr std::int64_t kW = L::kSize;
    const std::int64_t* deltas = window_deltas_.data();
    std::int64_t p = 0;
    for (; p + 2 <= count; p += 2) {
      const C* base = first + p * step;
      C* to = dst + p * out_step;
      std::int64_t g = 0;
      for (; g + 4 * kW <= groups_; g += 4 * kW) depthwise_pair<C, 4>(g, base, step, packed, deltas, to, out_step);
      for (; g + kW <= groups_; g += kW) depthwise_pair<C, 1>(g, base, step, packed, deltas, to, out_step);
      for (; g < groups_; ++g) {
        C acc0 = 0, acc1 = 0;
        for (std::int64_t t = 0; t < taps_; ++t) {
          const C w = packed[t * groups_ + g];
          acc0 += base[deltas[t] + g] * w;
          acc1 += base[step + deltas[t] + g] * w;
        }
        to[g] = acc0;
        to[out_step + g] = acc1;
      }
    }
    if (p < count) depthwise_row<C, false>(first + p * step, packed, deltas, dst + p * out_step);
  }

  /// Keeps `v` in a register: g++ otherwise folds a value that two FMAs read into both as a
  /// memory operand, loading it twice.
  template <class V>
  static void in_register([[maybe_unused]] V& v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__("" : "+x"(v));
#endif
  }

  /// kPackets vectors of channels from channel g of two regular positions (depthwise_run),
  /// the second's window `step` after the first's: the same sums, in the same order, as
  /// depthwise_packets gives each.
  template <class C, int kPackets>
  void depthwise_pair(std::int64_t g, const C* base, std::int64_t step, const C* packed, const std::int64_t* deltas,
                      C* dst, std::int64_t out_step) const {
    using L = Lanes<C>;
    using P = typename L::Packet;
    constexpr std::int64_t kW = L::kSize;
    [&]<int... J>(std::integer_sequence<int, J...>) {
      P acc0[] = {(static_cast<void>(J), L::zero())...};
      P acc1[] = {(static_cast<void>(J), L::zero())...};
      for (std::int64_t t = 0; t < taps_; ++t) {
        const C* src = base + deltas[t] + g;
        const C* w = packed + t * groups_ + g;
        (
            [&] {
              P wj = L::load(w + J * kW);
              in_register(wj);
              acc0[J] = L::madd(L::load(src + J * kW), wj, acc0[J]);
              acc1[J] = L::madd(L::load(src + step + J * kW), wj, acc1[J]);
            }(),
            ...);
      }
      (L::store(dst + g + J * kW, acc0[J]), ...);
      (L::store(dst + out_step + g + J * kW, acc1[J]), ...);
    }(std::make_integer_sequence<int, kPackets>{});
  }

  /// kPackets vectors of channels from channel g of one depthwise position (depthwise_row).
  template <class C, bool kChecked, int kPackets>
  void depthwise_packets(std::int64_t g, const C* base, const C* packed, const std::int64_t* offsets, C* dst) const {
    using L = Lanes<C>;
    using P = typename L::Packet;
    constexpr std::int64_t kW = L::kSize;
    [&]<int... J>(std::integer_sequence<int, J...>) {
      P acc[] = {(static_cast<void>(J), L::zero())...};
      for (std::int64_t t = 0; t < taps_; ++t) {
        if (kChecked && offsets[t] < 0) continue;
        const C* src = base + offsets[t] + g;
        const C* w = packed + t * groups_ + g;
        ((acc[J] = L::madd(L::load(src + J * kW), L::load(w + J * kW), acc[J])), ...);
      }
      (L::store(dst + g + J * kW, acc[J]), ...);
    }(std::make_integer_sequence<int, kPackets>{});
  }

  DType dtype_;
  std::int32_t lhs_slot_, rhs_slot_, dst_slot_;
  std::size_t spatial_ = 0;
  std::int64_t groups_ = 1, batch_ = 0, group_inputs_ = 0, group_outputs_ = 0;
  std::int64_t lhs_batch_stride_ = 0, lhs_feature_stride_ = 0, lhs_group_offset_ = 0;
  std::int64_t rhs_in_stride_ = 0, rhs_out_stride_ = 0, out_batch_stride_ = 0, out_feature_stride_ = 0;
  std::int64_t positions_ = 1, taps_ = 1, depth_ = 0, rows_ = 0;
  bool lhs_empty_ = false, depthwise_ = false, indirect_ = false, direct_ = false;
  Epilogue epilogue_;
  bool int8_ = false, lhs_signed_ = false, rhs_signed_ = false;  // 8-bit operands, 32-bit sums
  std::vector<std::int64_t> out_sizes_, kernel_sizes_, out_spatial_strides_, rhs_spatial_strides_;
  std::vector<std::vector<std::int64_t>> tap_offsets_;
  // Regular windows (depthwise_lines): per spatial dimension, each position's first tap offset
  // or kIrregular; the whole window's distances from its first tap.
  std::vector<std::vector<std::int64_t>> regular_first_;
  std::vector<std::int64_t> window_deltas_;
  // Blocking: rows per block (mc_), columns per block (nc_, of n_pad_ = the group's outputs
  // rounded up to the micro-kernel's width), taps per depth block and features per piece.
  std::int64_t mc_ = 1, nc_ = 1, n_pad_ = 0, block_taps_ = 1, chunk_ = 1;
  // Scratch: the packed kernel, a row of zeros, then one slice per worker laid out as the
  // tile's lhs row pointers, its result row pointers, row descriptions, window offsets,
  // gathered rows and sums (a depthwise slice: sums, row descriptions, one window).
  std::int64_t packed_ = 0, zeros_ = 0, slices_ = 0, slice_bytes_ = 0;
  std::int64_t c_rows_at_ = 0, row_info_at_ = 0, windows_at_ = 0, window_at_ = 0, rows_at_ = 0, sums_at_ = 0, gemm_at_ = 0;
  int workers_ = 1;
};

}  // namespace pjrt_lite::cpu::detail
