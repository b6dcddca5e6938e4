#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// RowKernel: reductions over the trailing dimensions fused with the element-wise ops that
// produce their inputs and the ones that consume their results, row by row. Softmax and
// layer norm are the shapes it is for: for each row, a pass over the row folds it into a
// per-row value (max, sum), a few scalar ops turn those into others (mean, 1 / sqrt(var)),
// and the next pass reads them as splats. A row is small enough to stay in cache between
// passes, so memory is read about once and written once, whatever the number of passes.
//
// The kernel is a list of stages, each a TileProgram: a pass runs once per row over the row's
// elements, a scalar stage once per block of rows over one element per row. The rows go in
// blocks of block_rows: every stage runs over the block's rows before the next stage, so a
// scalar stage (a mean, 1 / sqrt(var)) is one dispatch for the block instead of one per
// row, while the block's rows (a few KiB each) stay in cache between passes. An external
// address of an array is rebased per row: element offset ((row * mul) / div) % mod (mod 0:
// none), which covers arrays of the full shape (mul = row length), per-row values (mul = 1),
// arrays every row reads alike (mul = 0) and vectors broadcast along the rows (div = elements
// per vector element); a worker-local buffer by the row's place in the block times mul.
// A pass over rows of at most one tile whose addresses all move by a fixed step per row
// (every case above but a vector read at a row's pace through div or mod) runs over the
// block's rows in one call of its program (TileProgram::run_rows), rebased once per block.

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
/// A block of rows spans at most this many bytes of the widest full-row array, and at most
/// kMaxBlockRows rows: a quarter of a 256 KiB L2, so each pass reads the block from cache.
/// Layer norm of f32[256, 1024] on one thread ran fastest in blocks of 16 rows of the 1, 4, 8
/// and 16 tried (docs/DECISIONS.md, "A row kernel runs in blocks of rows").
inline constexpr std::int64_t kRowBlockBytes = 64 * 1024;
inline constexpr std::int64_t kMaxBlockRows = 16;

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
    bool pass = false;   // a pass over each row; else a scalar stage over each block
    std::int64_t n = 1;  // elements per run: the row length, or block_rows
    std::vector<std::int32_t> uses;  // the externals the program reads or writes (finish_planning)
    // A pass whose row is one tile and whose externals move by a fixed number of bytes from
    // one row to the next runs over a block's rows in one call (finish_planning): step[e] is
    // external e's move.
    bool block_at_once = false;
    std::vector<std::int64_t> step;
  };

  std::vector<External> externals;
  std::vector<Stage> stages;
  std::int64_t rows = 0;
  std::int64_t row_elements = 0;
  std::int64_t block_rows = 1;
  std::int64_t local_bytes = 0;  // per worker: a block's rows kept between passes, per-row values
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
      s.uses.clear();
      for (const TileProgram::Reg& r : s.program.regs())
        if (r.external >= 0 && std::find(s.uses.begin(), s.uses.end(), r.external) == s.uses.end()) s.uses.push_back(r.external);
      // An external's element offset (row * mul / div) % mod moves by mul per row when div is
      // 1 and the offset never wraps.
      const auto linear = [&](std::int32_t e) {
        const External& x = externals[static_cast<std::size_t>(e)];
        return x.slot < 0 || (x.div == 1 && (x.mod == 0 || x.mul == 0 || x.mod >= rows * x.mul));
      };
      s.block_at_once = s.pass && block_rows > 1 && s.n <= kRowTileElements && std::all_of(s.uses.begin(), s.uses.end(), linear);
      s.step.assign(externals.size(), 0);
      for (const std::int32_t e : s.uses) {
        const External& x = externals[static_cast<std::size_t>(e)];
        s.step[static_cast<std::size_t>(e)] = x.mul * x.element_size;
      }
    }
    workers = max_workers;
    per_worker_ = table_bytes() + stage_bytes_ + round_up(local_bytes);
    scratch_bytes = workers * per_worker_;
  }

  void run(const RunContext& ctx) const override {
    // Blocks start at multiples of block_rows whatever the split, so each row's per-row
    // values sit in the same vector lane (or the scalar edge) on one thread or many: the bits
    // never depend on the split.
    auto body = [&](std::int64_t k0, std::int64_t k1, int worker) {
      std::byte* own = ctx.scratch + worker * per_worker_;
      auto** table = reinterpret_cast<std::byte**>(own);
      std::byte* stage_scratch = own + table_bytes();
      std::byte* local = stage_scratch + stage_bytes_;
      // Points stage s's externals at row r, the block starting at row `first`.
      auto rebase = [&](const Stage& s, std::int64_t r, std::int64_t first) {
        for (const std::int32_t e : s.uses) {
          const External& x = externals[static_cast<std::size_t>(e)];
          if (x.slot < 0) {
            table[e] = local + x.local + (r - first) * x.mul * x.element_size;
            continue;
          }
          std::int64_t at = r * x.mul;
          if (x.div > 1) at /= x.div;
          if (x.mod > 0) at %= x.mod;
          table[e] = ctx.slots[x.slot] + at * x.element_size;
        }
      };
      for (std::int64_t block = k0; block < k1; ++block) {
        const std::int64_t b0 = block * block_rows, b1 = std::min(rows, b0 + block_rows);
        for (const Stage& s : stages) {
          if (!s.pass) {
            rebase(s, b0, b0);
            s.program.run(table, 0, b1 - b0, stage_scratch);
            continue;
          }
          if (s.block_at_once) {
            rebase(s, b0, b0);
            s.program.run_rows(table, s.step.data(), b1 - b0, s.n, stage_scratch);
            continue;
          }
          for (std::int64_t r = b0; r < b1; ++r) {
            rebase(s, r, b0);
            s.program.run(table, 0, s.n, stage_scratch);
          }
        }
      }
    };
    const std::int64_t blocks = (rows + block_rows - 1) / block_rows;
    if (blocks > 1 && workers > 1 && rows * row_elements >= kParallelMinElements)
      split.run(ctx, blocks, std::max<std::int64_t>(1, kParallelGrain / (row_elements * block_rows)), body);
    else
      body(0, blocks, 0);
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
