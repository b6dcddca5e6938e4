#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// reduce_window and select_and_scatter on the CPU. Both walk windows in the reference
// interpreter's schedule (results, then window elements, in row-major order) and run their
// bodies as scalar TilePrograms, so any body the reduce kernel's general path runs runs here,
// and results match the reference bit for bit. Every address computation is planned at
// compile time; a run walks fixed-size index arrays and allocates nothing.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/reduce_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/tile_program.hpp"
#include "pjrt_lite/core/strided_copy.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// The geometry shared by both kernels: which input element a window element reads.
class WindowGeometry {
 public:
  /// The most dimensions an input may have here: runs keep indices in arrays this long.
  static constexpr std::size_t kMaxRank = 64;
  using Index = std::array<std::int64_t, kMaxRank>;

  static StatusOr<WindowGeometry> make(OpCode op, std::span<const std::int64_t> input_dims,
                                       std::span<const std::int64_t> window_counts,
                                       const WindowAttrs& a) {
    if (input_dims.size() > kMaxRank)
      return unimplemented_error(
          str_cat("cpu: ", op_name(op), " of rank above ", kMaxRank, " is not supported"));
    WindowGeometry g;
    g.input_dims_.assign(input_dims.begin(), input_dims.end());
    g.counts_.assign(window_counts.begin(), window_counts.end());
    g.a_ = a;
    g.input_strides_ = dense_byte_strides(g.input_dims_, 1);
    return g;
  }

  [[nodiscard]] std::size_t rank() const { return input_dims_.size(); }
  [[nodiscard]] const std::vector<std::int64_t>& counts() const { return counts_; }
  [[nodiscard]] const std::vector<std::int64_t>& window() const { return a_.window_dimensions; }

  /// The element offset in the input that window element `w` of window `r` reads, or -1 for
  /// padding and dilation holes.
  [[nodiscard]] std::int64_t input_offset(const Index& r, const Index& w) const {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < input_dims_.size(); ++d) {
      const std::int64_t dilated =
          r[d] * a_.window_strides[d] + w[d] * a_.window_dilations[d] - a_.padding_low[d];
      if (dilated < 0 || dilated % a_.base_dilations[d] != 0) return -1;
      const std::int64_t x = dilated / a_.base_dilations[d];
      if (x >= input_dims_[d]) return -1;
      offset += x * input_strides_[d];
    }
    return offset;
  }

  /// The next row-major index of `sizes` in `index`; false after the last.
  static bool step(Index& index, const std::vector<std::int64_t>& sizes) {
    for (std::size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) return true;
      index[d] = 0;
    }
    return false;
  }

 private:
  std::vector<std::int64_t> input_dims_, input_strides_, counts_;
  WindowAttrs a_;
};

/// A scalar body lowered to a TileProgram, with its externals array in the kernel's scratch:
/// parameters first, then results, then the body's constants.
struct ScalarBody {
  TileProgram program;
  std::vector<const std::byte*> constants;
  std::int64_t externals_offset = 0;  // in scratch, after the program's own scratch

  /// Lowers `body` and reserves its scratch at `scratch_bytes`, which grows.
  Status lower(const Graph& body, std::int64_t& scratch_bytes) {
    PJRT_LITE_RETURN_IF_ERROR(lower_scalar_graph(body, program, constants));
    scratch_offset = scratch_bytes;
    externals_offset = scratch_offset + (program.scratch_bytes() + 63) / 64 * 64;
    const std::size_t externals =
        body.parameters().size() + body.outputs().size() + constants.size();
    scratch_bytes = externals_offset + static_cast<std::int64_t>(externals * sizeof(std::byte*));
    scratch_bytes = (scratch_bytes + 63) / 64 * 64;
    params = body.parameters().size();
    results = body.outputs().size();
    return ok_status();
  }
  /// The externals array, with the constants filled in.
  std::byte** externals(std::byte* scratch) const {
    auto** e = reinterpret_cast<std::byte**>(scratch + externals_offset);
    for (std::size_t c = 0; c < constants.size(); ++c)
      e[params + results + c] = const_cast<std::byte*>(constants[c]);
    return e;
  }
  void run(std::byte** externals, std::byte* scratch) const {
    program.run(externals, 0, 1, scratch + scratch_offset);
  }

  std::int64_t scratch_offset = 0;
  std::size_t params = 0, results = 0;
};

class ReduceWindowKernel final : public Kernel {
 public:
  /// Plans reduce_window(inputs..., inits...) with `body` into `dsts`. An error means the
  /// body or a rank is beyond what the CPU runs.
  static StatusOr<std::unique_ptr<ReduceWindowKernel>> make(const Shape& input, const Shape& result,
                                                            const WindowAttrs& a, const Graph& body,
                                                            std::span<const DType> input_dtypes,
                                                            std::vector<std::int32_t> input_slots,
                                                            std::vector<std::int32_t> init_slots,
                                                            std::vector<std::int32_t> dst_slots) {
    auto k = std::unique_ptr<ReduceWindowKernel>(new ReduceWindowKernel());
    PJRT_LITE_ASSIGN_OR_RETURN(
        k->geometry_, WindowGeometry::make(OpCode::kReduceWindow, input.dims(), result.dims(), a));
    const std::size_t count = input_slots.size();
    for (std::size_t i = 0; i < count; ++i) {
      const DType t = body.shape(body.parameters()[i]).dtype();
      if (t != input_dtypes[i])
        return unimplemented_error(
            "cpu: reduce_window whose body computes in a wider type than its input");
      k->esizes_.push_back(static_cast<std::int64_t>(byte_size(t)));
    }
    k->inputs_ = std::move(input_slots);
    k->inits_ = std::move(init_slots);
    k->dsts_ = std::move(dst_slots);
    k->result_count_ = result.element_count();
    // Accumulators and the body's results: 64 bytes each hold any element.
    k->acc_offset_ = 0;
    k->scratch_bytes = static_cast<std::int64_t>(2 * 64 * count);
    PJRT_LITE_RETURN_IF_ERROR(k->body_.lower(body, k->scratch_bytes));
    std::int64_t window = 1;
    for (std::int64_t w : a.window_dimensions) window *= w;
    k->flops = static_cast<double>(k->result_count_ * window);
    for (std::int64_t e : k->esizes_)
      k->bytes_accessed += (input.element_count() + k->result_count_) * e;
    return k;
  }

  void run(const RunContext& ctx) const override {
    if (result_count_ == 0) return;
    const std::size_t count = inputs_.size();
    std::byte* acc = ctx.scratch + acc_offset_;
    std::byte* results = acc + 64 * count;
    std::byte** externals = body_.externals(ctx.scratch);
    for (std::size_t i = 0; i < count; ++i) {
      externals[i] = acc + 64 * i;
      externals[2 * count + i] = results + 64 * i;
    }
    WindowGeometry::Index r{}, w{};
    std::int64_t out = 0;
    do {
      for (std::size_t i = 0; i < count; ++i)
        std::memcpy(acc + 64 * i, ctx.slots[inits_[i]], static_cast<std::size_t>(esizes_[i]));
      do {
        const std::int64_t at = geometry_.input_offset(r, w);
        for (std::size_t i = 0; i < count; ++i)
          externals[count + i] =
              at < 0 ? ctx.slots[inits_[i]] : ctx.slots[inputs_[i]] + at * esizes_[i];
        body_.run(externals, ctx.scratch);
        for (std::size_t i = 0; i < count; ++i)
          std::memcpy(acc + 64 * i, results + 64 * i, static_cast<std::size_t>(esizes_[i]));
      } while (WindowGeometry::step(w, geometry_.window()));
      for (std::size_t i = 0; i < count; ++i)
        std::memcpy(ctx.slots[dsts_[i]] + out * esizes_[i], acc + 64 * i,
                    static_cast<std::size_t>(esizes_[i]));
      ++out;
    } while (WindowGeometry::step(r, geometry_.counts()));
  }

 private:
  ReduceWindowKernel() = default;

  WindowGeometry geometry_;
  std::vector<std::int32_t> inputs_, inits_, dsts_;
  std::vector<std::int64_t> esizes_;
  std::int64_t result_count_ = 0, acc_offset_ = 0;
  ScalarBody body_;
};

class SelectAndScatterKernel final : public Kernel {
 public:
  /// Plans select_and_scatter(operand, source, init) with its two bodies into `dst`.
  static StatusOr<std::unique_ptr<SelectAndScatterKernel>> make(
      const Shape& operand, const Shape& source, const WindowAttrs& a, const Graph& select,
      const Graph& scatter, std::int32_t operand_slot, std::int32_t source_slot,
      std::int32_t init_slot, std::int32_t dst_slot) {
    auto k = std::unique_ptr<SelectAndScatterKernel>(new SelectAndScatterKernel());
    PJRT_LITE_ASSIGN_OR_RETURN(
        k->geometry_,
        WindowGeometry::make(OpCode::kSelectAndScatter, operand.dims(), source.dims(), a));
    if (scatter.shape(scatter.outputs()[0]).dtype() != operand.dtype())
      return unimplemented_error(
          "cpu: select_and_scatter whose scatter body computes in a wider type than its operand");
    k->operand_slot_ = operand_slot;
    k->source_slot_ = source_slot;
    k->init_slot_ = init_slot;
    k->dst_slot_ = dst_slot;
    k->esize_ = static_cast<std::int64_t>(byte_size(operand.dtype()));
    k->operand_count_ = operand.element_count();
    k->source_count_ = source.element_count();
    k->scratch_bytes = 64;  // select's result
    PJRT_LITE_RETURN_IF_ERROR(k->select_.lower(select, k->scratch_bytes));
    PJRT_LITE_RETURN_IF_ERROR(k->scatter_.lower(scatter, k->scratch_bytes));
    std::int64_t window = 1;
    for (std::int64_t w : a.window_dimensions) window *= w;
    k->flops = static_cast<double>(k->source_count_ * window);
    k->bytes_accessed = (2 * operand.element_count() + source.element_count()) * k->esize_;
    return k;
  }

  void run(const RunContext& ctx) const override {
    std::byte* out = ctx.slots[dst_slot_];
    const std::byte* init = ctx.slots[init_slot_];
    for (std::int64_t e = 0; e < operand_count_; ++e)
      std::memcpy(out + e * esize_, init, static_cast<std::size_t>(esize_));
    if (source_count_ == 0) return;
    const std::byte* operand = ctx.slots[operand_slot_];
    const std::byte* source = ctx.slots[source_slot_];
    std::byte* keep = ctx.scratch;  // select's i1 result
    std::byte** select = select_.externals(ctx.scratch);
    std::byte** scatter = scatter_.externals(ctx.scratch);
    select[2] = keep;
    WindowGeometry::Index r{}, w{};
    std::int64_t s = 0;
    do {
      std::int64_t selected = -1;
      do {
        const std::int64_t at = geometry_.input_offset(r, w);
        if (at < 0) continue;
        if (selected >= 0) {
          select[0] = const_cast<std::byte*>(operand) + selected * esize_;
          select[1] = const_cast<std::byte*>(operand) + at * esize_;
          select_.run(select, ctx.scratch);
          bool kept = false;
          std::memcpy(&kept, keep, 1);
          if (kept) continue;
        }
        selected = at;
      } while (WindowGeometry::step(w, geometry_.window()));
      if (selected >= 0) {
        std::byte* element = out + selected * esize_;
        scatter[0] = element;
        scatter[1] = const_cast<std::byte*>(source) + s * esize_;
        scatter[2] = element;  // the body reads both parameters before it writes
        scatter_.run(scatter, ctx.scratch);
      }
      ++s;
    } while (WindowGeometry::step(r, geometry_.counts()));
  }

 private:
  SelectAndScatterKernel() = default;

  WindowGeometry geometry_;
  std::int32_t operand_slot_ = -1, source_slot_ = -1, init_slot_ = -1, dst_slot_ = -1;
  std::int64_t esize_ = 0, operand_count_ = 0, source_count_ = 0;
  ScalarBody select_, scatter_;
};

}  // namespace pjrt_lite::cpu::detail
