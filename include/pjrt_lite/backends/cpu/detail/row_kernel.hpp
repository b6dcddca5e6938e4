#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// RowKernel: reductions over the trailing dimensions fused with the element-wise ops that
// produce their inputs and the ones that consume their results, row by row. Softmax and
// layer norm are the shapes it is for: for each row, a pass over the row folds it into a
// per-row value (max, sum), a few scalar ops turn those into others (mean, 1 / sqrt(var)),
// and the next pass reads them as splats. A row is small enough to stay in cache between
// passes, so memory is read about once and written once, whatever the number of passes.
//
// The kernel is a list of stages, each a TileProgram run once per row: a pass runs over the
// row's elements, a scalar stage over one element. Every external address is rebased per
// row: element offset ((row * mul) / div) % mod (mod 0: none), which covers arrays of the
// full shape (mul = row length), per-row values (mul = 1), arrays every row reads alike
// (mul = 0) and vectors broadcast along the rows (div = elements per vector element).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/tile_program.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// A pass over a row of up to this many elements runs it as one tile: each instruction is
/// dispatched once per row instead of once per 256 elements, and the row's scratch tiles
/// (a few KiB each) still fit L1 together.
inline constexpr std::int64_t kRowTileElements = 1024;

class RowKernel final : public Kernel {
 public:
  /// An external address of the stages: a slot, or (slot -1) a worker-local buffer.
  struct External {
    std::int32_t slot = -1;
    std::int64_t local = 0;  // slot -1: bytes into the worker's local buffers
    std::int64_t mul = 0, div = 1, mod = 0;
    std::int64_t element_size = 0;

    [[nodiscard]] bool operator==(const External&) const = default;
  };
  struct Stage {
    TileProgram program;
    std::int64_t n = 1;  // elements the stage runs over per row: the row length or 1
  };

  std::vector<External> externals;
  std::vector<Stage> stages;
  std::int64_t rows = 0;
  std::int64_t row_elements = 0;
  std::int64_t local_bytes = 0;  // per worker: rows kept between passes, per-row values
  int workers = 1;
  SplitLearner split;

  /// The index of external `e`, added if new.
  std::int32_t external(const External& e) {
    for (std::size_t i = 0; i < externals.size(); ++i)
      if (externals[i] == e) return static_cast<std::int32_t>(i);
    externals.push_back(e);
    return static_cast<std::int32_t>(externals.size() - 1);
  }

  /// Bytes of worker-local memory for `bytes` more, 64-byte aligned; returns their offset.
  std::int64_t add_local(std::int64_t bytes) {
    const std::int64_t at = local_bytes;
    local_bytes += round_up(bytes);
    return at;
  }

  /// Finalizes the stages and sizes the scratch of `max_workers` workers.
  void finish_planning(int max_workers) {
    stage_bytes_ = 0;
    for (Stage& s : stages) {
      s.program.finalize(std::min(s.n, kRowTileElements));
      stage_bytes_ = std::max(stage_bytes_, round_up(s.program.scratch_bytes()));
    }
    workers = max_workers;
    per_worker_ = table_bytes() + stage_bytes_ + round_up(local_bytes);
    scratch_bytes = workers * per_worker_;
  }

  void run(const RunContext& ctx) const override {
    auto body = [&](std::int64_t r0, std::int64_t r1, int worker) {
      std::byte* own = ctx.scratch + worker * per_worker_;
      auto** table = reinterpret_cast<std::byte**>(own);
      std::byte* stage_scratch = own + table_bytes();
      std::byte* local = stage_scratch + stage_bytes_;
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::size_t e = 0; e < externals.size(); ++e) {
          const External& x = externals[e];
          std::int64_t at = r * x.mul;
          if (x.div > 1) at /= x.div;
          if (x.mod > 0) at %= x.mod;
          table[e] = (x.slot >= 0 ? ctx.slots[x.slot] : local + x.local) + at * x.element_size;
        }
        for (const Stage& s : stages) s.program.run(table, 0, s.n, stage_scratch);
      }
    };
    if (rows > 1 && workers > 1 && rows * row_elements >= kParallelMinElements)
      split.run(ctx, rows, std::max<std::int64_t>(1, kParallelGrain / row_elements), body);
    else
      body(0, rows, 0);
  }

 private:
  [[nodiscard]] std::int64_t table_bytes() const {
    return round_up(static_cast<std::int64_t>(externals.size() * sizeof(std::byte*)));
  }
  static std::int64_t round_up(std::int64_t n) { return (n + 63) / 64 * 64; }

  std::int64_t stage_bytes_ = 0;
  std::int64_t per_worker_ = 0;
};

}  // namespace pjrt_lite::cpu::detail
