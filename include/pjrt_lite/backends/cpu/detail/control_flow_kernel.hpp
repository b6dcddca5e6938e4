#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// Control flow on the CPU: while, case and if run their regions as Programs compiled by the
// same compiler, nested inside one kernel. Everything a region needs per execution (its slot
// table, its arena, the loop-carried values) is planned into the kernel's scratch at compile
// time, so running a loop allocates nothing however many times it turns.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/program.hpp"
#include "pjrt_lite/backends/cpu/detail/rendezvous.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// Bytes rounded up to a multiple of 64, the alignment of every block in a scratch layout.
inline std::int64_t round_up_64(std::int64_t n) { return (n + 63) / 64 * 64; }

/// Where a region's slot table and arena go in the kernel's scratch. Regions run one at a
/// time, so they all share one block: as large as the largest region needs.
struct RegionMemory {
  std::int64_t table_bytes = 0;  // the largest slot table
  std::int64_t bytes = 0;        // table and arena of the largest region

  void fit(const Program& p) {
    const std::int64_t table = round_up_64(static_cast<std::int64_t>(p.slots.size() * sizeof(std::byte*)));
    table_bytes = std::max(table_bytes, table);
    bytes = std::max(bytes, table + p.arena_bytes);
  }
  /// Runs `p` with the block at `block`.
  void run(const Program& p, std::byte* block, std::byte* const* parameters, std::byte* const* outputs,
           const RunContext& ctx) const {
    p.run_nested(reinterpret_cast<std::byte**>(block), block + table_bytes, parameters, outputs, ctx);
  }
};

/// while(operands...): the carried values live in two sets of buffers in scratch, the
/// current and the next, whose roles swap after each turn of the body (no copy). The
/// operands are copied in before the first turn and the current values out after the last.
class WhileKernel final : public Kernel {
 public:
  WhileKernel(std::shared_ptr<const Program> cond, std::shared_ptr<const Program> body,
              std::vector<std::int32_t> operand_slots, std::vector<std::int32_t> result_slots,
              std::vector<std::int64_t> value_bytes)
      : cond_(std::move(cond)), body_(std::move(body)), operands_(std::move(operand_slots)),
        results_(std::move(result_slots)), bytes_(std::move(value_bytes)) {
    region_.fit(*cond_);
    region_.fit(*body_);
    // Layout: region block | predicate | 2 pointer arrays | 2 sets of value buffers.
    std::int64_t at = round_up_64(region_.bytes);
    pred_offset_ = at;
    at += 64;
    pointers_offset_ = at;
    at += round_up_64(static_cast<std::int64_t>(2 * bytes_.size() * sizeof(std::byte*)));
    for (int set = 0; set < 2; ++set)
      for (std::int64_t b : bytes_) {
        buffer_offsets_.push_back(at);
        at += round_up_64(b);
      }
    scratch_bytes = at;
  }

  void run(const RunContext& ctx) const override {
    const std::size_t n = bytes_.size();
    auto** current = reinterpret_cast<std::byte**>(ctx.scratch + pointers_offset_);
    std::byte** next = current + n;
    for (std::size_t i = 0; i < n; ++i) {
      current[i] = ctx.scratch + buffer_offsets_[i];
      next[i] = ctx.scratch + buffer_offsets_[n + i];
      copy(current[i], ctx.slots[operands_[i]], bytes_[i]);
    }
    std::byte* block = ctx.scratch;
    std::byte* pred = ctx.scratch + pred_offset_;
    while (true) {
      region_.run(*cond_, block, current, &pred, ctx);
      if (!*reinterpret_cast<const bool*>(pred)) break;
      // A failed collective leaves zeros behind, which need not end the loop: stop here.
      if (ctx.collectives != nullptr && !ctx.collectives->status.ok()) break;
      region_.run(*body_, block, current, next, ctx);
      std::swap(current, next);
    }
    for (std::size_t i = 0; i < n; ++i) copy(ctx.slots[results_[i]], current[i], bytes_[i]);
  }

 private:
  static void copy(std::byte* dst, const std::byte* src, std::int64_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, static_cast<std::size_t>(bytes));
  }

  std::shared_ptr<const Program> cond_, body_;
  std::vector<std::int32_t> operands_, results_;
  std::vector<std::int64_t> bytes_;
  RegionMemory region_;
  std::int64_t pred_offset_ = 0, pointers_offset_ = 0;
  std::vector<std::int64_t> buffer_offsets_;
};

/// case(index, operands...) and if(pred, operands...): runs the chosen branch with the
/// operands' memory as its parameters and the results' memory as its outputs.
class CaseKernel final : public Kernel {
 public:
  CaseKernel(OpCode op, std::vector<std::shared_ptr<const Program>> branches, std::int32_t selector_slot,
             std::vector<std::int32_t> operand_slots, std::vector<std::int32_t> result_slots)
      : is_if_(op == OpCode::kIf), branches_(std::move(branches)), selector_(selector_slot),
        operands_(std::move(operand_slots)), results_(std::move(result_slots)) {
    for (const auto& b : branches_) region_.fit(*b);
    pointers_offset_ = round_up_64(region_.bytes);
    scratch_bytes =
        pointers_offset_ + round_up_64(static_cast<std::int64_t>((operands_.size() + results_.size()) * sizeof(std::byte*)));
  }

  void run(const RunContext& ctx) const override {
    auto** parameters = reinterpret_cast<std::byte**>(ctx.scratch + pointers_offset_);
    std::byte** outputs = parameters + operands_.size();
    for (std::size_t i = 0; i < operands_.size(); ++i) parameters[i] = ctx.slots[operands_[i]];
    for (std::size_t i = 0; i < results_.size(); ++i) outputs[i] = ctx.slots[results_[i]];
    region_.run(*branches_[branch(ctx.slots[selector_])], ctx.scratch, parameters, outputs, ctx);
  }

 private:
  /// The branch to run: if's true is branch 0; an out-of-range case index is the last branch.
  [[nodiscard]] std::size_t branch(const std::byte* selector) const {
    if (is_if_) return *reinterpret_cast<const bool*>(selector) ? 0 : 1;
    std::int32_t index = 0;
    std::memcpy(&index, selector, sizeof index);
    const std::size_t n = branches_.size();
    return index >= 0 && static_cast<std::size_t>(index) < n ? static_cast<std::size_t>(index) : n - 1;
  }

  bool is_if_;
  std::vector<std::shared_ptr<const Program>> branches_;
  std::int32_t selector_;
  std::vector<std::int32_t> operands_, results_;
  RegionMemory region_;
  std::int64_t pointers_offset_ = 0;
};

}  // namespace pjrt_lite::cpu::detail
