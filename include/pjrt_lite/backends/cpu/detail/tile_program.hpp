#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// TileProgram: a fused group of element-wise ops compiled to a tiny register bytecode and
// interpreted over tiles of a few hundred contiguous elements. Registers are tiles: either a
// window into an operand or result buffer ("external"), a tile filled with one scalar
// ("splat"), a tile filled from a short array whose elements repeat ("periodic": a vector
// broadcast along any block of consecutive dimensions, element i being element
// (i / repeat) % period of the vector), a scratch tile in L1, or a fixed address that a
// reduction accumulates a whole tile into ("accumulator"). Each instruction is a
// pre-resolved kernel pointer, so running a program is a loop of indirect calls over
// cache-resident tiles: one pass over memory for the whole group, the numexpr approach.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/elementwise.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// Elements per tile: 256 f32 are 1 KiB, so dozens of registers fit in L1. Smaller tiles
/// cost more dispatch per element; larger ones run each op longer over freshly streamed
/// memory before the next op's arithmetic can overlap with the loads. 256 ran fastest of
/// 128 to 1024 (the figures are in docs/DECISIONS.md, "Fusion groups").
inline constexpr std::int64_t kTileElements = 256;
/// A program of one instruction has no next op to overlap with: it streams in longer tiles,
/// with less dispatch (measured: docs/DECISIONS.md, "Fusion groups").
inline constexpr std::int64_t kSingleOpTileElements = 1024;

class TileProgram {
 public:
  enum class RegKind : std::uint8_t { kExternal, kSplat, kPeriodic, kScratch, kAccumulator };
  struct Reg {
    RegKind kind;
    DType dtype;
    std::int32_t external = -1;       // kExternal, kSplat, kPeriodic, kAccumulator: which external address
    std::int64_t scratch_offset = 0;  // kSplat, kPeriodic, kScratch: bytes into the worker's scratch
    std::int64_t period = 0;          // kPeriodic: elements of the pattern
    std::int64_t repeat = 1;          // kPeriodic: consecutive elements that read one pattern element
    bool tile = true;                 // kSplat: some instruction reads it as a filled tile
    bool stable = false;              // kSplat, kPeriodic: no instruction writes its external address
    // kPeriodic, stable, one element per position and at most a tile long: its slot holds a
    // tile and a period, filled with the pattern once per run of several tiles, and each tile
    // reads it from its start's place in the pattern.
    bool prefilled = false;
  };
  struct Instr {
    TileFn fn;
    OpCode op;
    std::int32_t out;
    std::int32_t in[3] = {-1, -1, -1};
    ComparisonDirection direction = ComparisonDirection::kEq;
    ComparisonType comparison = ComparisonType::kFloat;
    std::int64_t exponent_bits = 0, mantissa_bits = 0;  // reduce_precision
    DType from = DType::kInvalid, to = DType::kInvalid;  // convert
    std::uint8_t scalars = 0;  // bit k set: input k is read as one scalar (a splat)
  };
  /// How many instructions finalize() made of two or three, by kind (the listing shows them).
  struct Combined {
    std::int32_t multiply_adds = 0;        // x * y + z, x * y - z, z - x * y
    std::int32_t negated_exps = 0;         // exp(-x)
    std::int32_t exps_of_differences = 0;  // exp(x - s)
    std::int32_t sums_of_products = 0;     // acc += sum(x * y)
    std::int32_t sums_of_squared_differences = 0;  // acc += sum((x - s)^2)
    std::int32_t scalar_pairs = 0;                 // (x op a) op b
    std::int32_t scaled_products = 0;              // (x op s) * y
    std::int32_t bounded_ops = 0;                  // max(x op y, z), min(x op y, z)
  };

  /// A register over external address `e` (an operand or result array), read or written at
  /// the current element.
  std::int32_t external(std::int32_t e, DType dtype) { return add_reg({RegKind::kExternal, dtype, e, 0}); }
  /// A register holding the scalar at external address `e` in every lane.
  std::int32_t splat(std::int32_t e, DType dtype) { return add_reg({RegKind::kSplat, dtype, e, 0}); }
  /// A register whose element i is element (i / `repeat`) % `period` of external address `e`.
  std::int32_t periodic(std::int32_t e, DType dtype, std::int64_t period, std::int64_t repeat = 1) {
    return add_reg({RegKind::kPeriodic, dtype, e, 0, period, repeat});
  }
  /// The one element at external address `e`, which accumulate instructions combine whole
  /// tiles into (it does not move with the tile).
  std::int32_t accumulator(std::int32_t e, DType dtype) { return add_reg({RegKind::kAccumulator, dtype, e, 0}); }
  /// A fresh scratch register.
  std::int32_t scratch(DType dtype) { return add_reg({RegKind::kScratch, dtype, -1, 0}); }
  [[nodiscard]] DType dtype(std::int32_t reg) const { return regs_[static_cast<std::size_t>(reg)].dtype; }

  /// Appends `op` computing `out` from `ins`; f16/bf16 operands are widened to f32 around it
  /// so the op rounds once (next_after and reduce_precision work in their own type and are
  /// never widened).
  /// UNIMPLEMENTED if the CPU has no kernel.
  Status emit(const Node& node, std::int32_t out, std::vector<std::int32_t> ins) {
    const DType operand = node.op == OpCode::kSelect ? dtype(ins[1]) : dtype(ins[0]);
    if (computes_in_f32(operand) && node.op != OpCode::kConvert && node.op != OpCode::kSelect &&
        node.op != OpCode::kNextAfter && node.op != OpCode::kReducePrecision) {
      for (std::int32_t& r : ins) {
        if (!computes_in_f32(dtype(r))) continue;
        std::int32_t wide = scratch(DType::kF32);
        PJRT_LITE_RETURN_IF_ERROR(emit_raw(OpCode::kConvert, dtype(r), DType::kF32, wide, {r}, node));
        r = wide;
      }
      const DType result = dtype(out);
      if (!computes_in_f32(result)) return emit_raw(node.op, DType::kF32, result, out, ins, node);
      std::int32_t wide_out = scratch(DType::kF32);
      PJRT_LITE_RETURN_IF_ERROR(emit_raw(node.op, DType::kF32, DType::kF32, wide_out, ins, node));
      return emit_raw(OpCode::kConvert, DType::kF32, result, out, {wide_out}, node);
    }
    return emit_raw(node.op, operand, dtype(out), out, ins, node);
  }

  /// Appends a copy (an identity convert) from `in` to `out`.
  Status emit_copy(std::int32_t out, std::int32_t in) {
    TileFn fn = find_tile_kernel(OpCode::kConvert, dtype(in), dtype(out));
    Instr instr{fn, OpCode::kConvert, out, {in, -1, -1}};
    instr.from = dtype(in);
    instr.to = dtype(out);
    code_.push_back(instr);
    return ok_status();
  }

  /// Appends `acc = op(acc, in[0], ..., in[n-1])` for each tile: a reduction fused into the
  /// loop that computes its input. `acc` is an accumulator() register. Sums and products of
  /// floats combine each tile in Eigen's vectorized order, not element by element.
  /// UNIMPLEMENTED if the CPU has no such kernel.
  Status emit_accumulate(OpCode op, std::int32_t acc, std::int32_t in) {
    TileFn fn = find_accumulate_kernel(op, dtype(in));
    if (fn == nullptr || dtype(acc) != dtype(in))
      return unimplemented_error(str_cat("cpu: no fused reduction kernel for ", op_name(op), " on ", dtype_name(dtype(in))));
    code_.push_back(Instr{fn, OpCode::kReduce, acc, {in, -1, -1}});
    return ok_status();
  }

  /// Combines instructions, then lays out scratch registers (reusing tiles whose value is
  /// dead) after the last emit. `tile_elements` > 0 sets the tile length instead of the
  /// default (kTileElements, or kSingleOpTileElements for one instruction).
  void finalize(std::int64_t tile_elements = 0) {
    fuse_multiply_add();
    fuse_negated_exp();
    read_splats_as_scalars();
    fuse_exp_of_difference();
    fuse_sum_of_products();
    fuse_squared_differences();
    fuse_scalar_pairs();
    fuse_scaled_products();
    fuse_bounded_ops();
    mark_splats_read_as_tiles();
    std::vector<std::int64_t> last_use(regs_.size(), -1);
    for (std::size_t i = 0; i < code_.size(); ++i) {
      for (std::int32_t r : code_[i].in)
        if (r >= 0) last_use[static_cast<std::size_t>(r)] = static_cast<std::int64_t>(i);
      last_use[static_cast<std::size_t>(code_[i].out)] =
          std::max(last_use[static_cast<std::size_t>(code_[i].out)], static_cast<std::int64_t>(i));
    }
    std::int64_t widest = 1;
    for (const Reg& r : regs_) widest = std::max<std::int64_t>(widest, static_cast<std::int64_t>(byte_size(r.dtype)));
    tile_elements_ = tile_elements > 0 ? tile_elements : code_.size() == 1 ? kSingleOpTileElements : kTileElements;
    const std::int64_t kSlotBytes = (tile_elements_ * widest + 63) / 64 * 64;  // one tile of any register
    std::int64_t next = 0;
    for (Reg& r : regs_)
      if ((r.kind == RegKind::kSplat && r.tile) || r.kind == RegKind::kPeriodic) {
        r.prefilled = r.kind == RegKind::kPeriodic && r.stable && r.repeat == 1 && r.period <= tile_elements_;
        r.scratch_offset = next;
        next += r.prefilled ? ((tile_elements_ + r.period) * static_cast<std::int64_t>(byte_size(r.dtype)) + 63) / 64 * 64
                            : kSlotBytes;
      }
    // Scratch tiles: a free list of slots, each one tile wide; a tile is freed after its last use.
    std::vector<std::int64_t> free_slots;
    std::vector<bool> placed(regs_.size(), false);
    for (std::size_t i = 0; i < code_.size(); ++i) {
      const auto out = static_cast<std::size_t>(code_[i].out);
      if (regs_[out].kind == RegKind::kScratch && !placed[out]) {
        if (free_slots.empty()) {
          regs_[out].scratch_offset = next;
          next += kSlotBytes;
        } else {
          regs_[out].scratch_offset = free_slots.back();
          free_slots.pop_back();
        }
        placed[out] = true;
      }
      const auto& in = code_[i].in;
      for (std::size_t k = 0; k < 3; ++k) {
        if (in[k] < 0 || std::find(in, in + k, in[k]) != in + k) continue;  // x * x frees x once
        const auto ur = static_cast<std::size_t>(in[k]);
        if (regs_[ur].kind == RegKind::kScratch && last_use[ur] == static_cast<std::int64_t>(i) && ur != out)
          free_slots.push_back(regs_[ur].scratch_offset);
      }
    }
    windows_.clear();
    periodics_.clear();
    binds_.clear();
    for (std::size_t i = 0; i < regs_.size(); ++i) {
      const Reg& r = regs_[i];
      const auto reg = static_cast<std::int32_t>(i);
      const auto size = static_cast<std::int64_t>(byte_size(r.dtype));
      if (r.kind == RegKind::kExternal) windows_.push_back({reg, r.external, 0, size});
      if (r.kind == RegKind::kPeriodic) periodics_.push_back({reg, r.external, 0, size});
      // An accumulator, and a splat only read as one scalar, are read where they lie.
      if (r.kind == RegKind::kAccumulator || (r.kind == RegKind::kSplat && !r.tile))
        binds_.push_back({reg, r.external, -1, size});
      else if (r.kind == RegKind::kSplat)
        binds_.push_back({reg, r.external, r.scratch_offset, size});  // filled
      else if (r.kind == RegKind::kScratch)
        binds_.push_back({reg, -1, r.scratch_offset, size});
    }
    pointer_table_offset_ = next;
    scratch_bytes_ = next + static_cast<std::int64_t>(regs_.size() * sizeof(std::byte*));
  }

  /// Bytes of scratch one worker needs to run the program.
  [[nodiscard]] std::int64_t scratch_bytes() const { return scratch_bytes_; }
  [[nodiscard]] const std::vector<Instr>& code() const { return code_; }
  [[nodiscard]] const Combined& combined() const { return combined_; }
  [[nodiscard]] const std::vector<Reg>& regs() const { return regs_; }

  /// Elements per tile: run() starts a tile at `begin` and every tile_elements() after it.
  [[nodiscard]] std::int64_t tile_elements() const { return tile_elements_; }

  /// Runs elements [begin, end) of a finalize()d program. `externals[e]` is the address of
  /// element 0 of external e; `scratch` is scratch_bytes() bytes, 16-byte aligned, owned by
  /// this worker.
  void run(std::byte* const* externals, std::int64_t begin, std::int64_t end, std::byte* scratch) const {
    auto** ptr = reinterpret_cast<std::byte**>(scratch + pointer_table_offset_);
    for (const Bind& b : binds_) {
      if (b.offset < 0) {
        ptr[b.reg] = externals[b.external];
        continue;
      }
      ptr[b.reg] = scratch + b.offset;
      if (b.external >= 0) fill_value(ptr[b.reg], externals[b.external], std::min(tile_elements_, end - begin), b.size);
    }
    const bool several_tiles = end - begin > tile_elements_;
    if (several_tiles)
      for (const Bind& m : periodics_) {
        const Reg& r = regs_[static_cast<std::size_t>(m.reg)];
        if (r.prefilled)
          fill_periodic(scratch + r.scratch_offset, externals[r.external], r.period, 1, 0,
                        tile_elements_ + r.period - 1, m.size);
      }
    TileArgs args;
    for (std::int64_t pos = begin; pos < end; pos += tile_elements_) {
      args.n = std::min(tile_elements_, end - pos);
      for (const Bind& w : windows_) ptr[w.reg] = externals[w.external] + pos * w.size;
      for (const Bind& m : periodics_) {
        const Reg& r = regs_[static_cast<std::size_t>(m.reg)];
        if (several_tiles && r.prefilled) {
          ptr[m.reg] = scratch + r.scratch_offset + pos % r.period * m.size;
        } else if (r.stable && r.repeat == 1 && pos % r.period + args.n <= r.period) {
          // The tile is a run of the pattern itself (a row's scale in a row kernel, a vector
          // as long as the tile): read it in place.
          ptr[m.reg] = externals[r.external] + pos % r.period * m.size;
        } else {
          ptr[m.reg] = scratch + r.scratch_offset;
          fill_periodic(ptr[m.reg], externals[r.external], r.period, r.repeat, pos, args.n, m.size);
        }
      }
      run_code(ptr, args);
    }
  }

  /// Runs a program of one tile `count` times over `n` (at most tile_elements()) elements,
  /// external e advanced by `step[e]` bytes from one run to the next: each run computes what
  /// run(externals, 0, n, scratch) computes with every external so advanced. A row kernel's
  /// pass over a block of rows, one tile per row, in one call: the registers are bound by a
  /// few additions per row instead of a call and its setup.
  void run_rows(std::byte* const* externals, const std::int64_t* step, std::int64_t count, std::int64_t n,
                std::byte* scratch) const {
    auto** ptr = reinterpret_cast<std::byte**>(scratch + pointer_table_offset_);
    for (const Bind& b : binds_)
      if (b.external < 0) ptr[b.reg] = scratch + b.offset;  // scratch tiles: the same every run
    TileArgs args;
    args.n = n;
    for (std::int64_t t = 0; t < count; ++t) {
      const auto at = [&](std::int32_t e) { return externals[e] + t * step[e]; };
      for (const Bind& b : binds_) {
        if (b.external < 0) continue;
        if (b.offset < 0) {
          ptr[b.reg] = at(b.external);
          continue;
        }
        ptr[b.reg] = scratch + b.offset;
        fill_value(ptr[b.reg], at(b.external), n, b.size);
      }
      for (const Bind& w : windows_) ptr[w.reg] = at(w.external);
      for (const Bind& m : periodics_) {
        const Reg& r = regs_[static_cast<std::size_t>(m.reg)];
        if (r.stable && r.repeat == 1 && n <= r.period) {
          ptr[m.reg] = at(r.external);
        } else {
          ptr[m.reg] = scratch + r.scratch_offset;
          fill_periodic(ptr[m.reg], at(r.external), r.period, r.repeat, 0, n, m.size);
        }
      }
      run_code(ptr, args);
    }
  }

 private:
  /// Runs every instruction once over the registers' current tiles (`args.n` elements).
  void run_code(std::byte* const* ptr, TileArgs& args) const {
    for (const Instr& ins : code_) {
      for (int k = 0; k < 3; ++k) args.in[k] = ins.in[k] >= 0 ? ptr[ins.in[k]] : nullptr;
      args.out = ptr[ins.out];
      args.direction = ins.direction;
      args.comparison = ins.comparison;
      args.exponent_bits = ins.exponent_bits;
      args.mantissa_bits = ins.mantissa_bits;
      args.from = ins.from;
      args.to = ins.to;
      ins.fn(args);
    }
  }

  /// Writes elements [pos, pos + n) of the sequence whose element i is element
  /// (i / repeat) % period of `pattern` into `tile`.
  static void fill_periodic(std::byte* tile, const std::byte* pattern, std::int64_t period, std::int64_t repeat,
                            std::int64_t pos, std::int64_t n, std::int64_t size) {
    if (repeat == 1) {
      std::int64_t from = pos % period;
      for (std::int64_t k = 0; k < n;) {
        const std::int64_t take = std::min(n - k, period - from);
        std::memcpy(tile + k * size, pattern + from * size, static_cast<std::size_t>(take * size));
        k += take;
        from = 0;
      }
      return;
    }
    std::int64_t from = (pos / repeat) % period, into = pos % repeat;
    for (std::int64_t k = 0; k < n;) {
      const std::int64_t take = std::min(n - k, repeat - into);
      fill_value(tile + k * size, pattern + from * size, take, size);
      k += take;
      into = 0;
      if (++from == period) from = 0;
    }
  }

  /// Writes `count` copies of the `size`-byte element at `value` to `dst`.
  static void fill_value(std::byte* dst, const std::byte* value, std::int64_t count, std::int64_t size) {
    auto fill = [&]<class U>(std::type_identity<U>) {
      U v;
      std::memcpy(&v, value, sizeof(U));
      for (std::int64_t k = 0; k < count; ++k) std::memcpy(dst + k * static_cast<std::int64_t>(sizeof(U)), &v, sizeof(U));
    };
    switch (size) {
      case 1: fill(std::type_identity<std::uint8_t>{}); break;
      case 2: fill(std::type_identity<std::uint16_t>{}); break;
      case 4: fill(std::type_identity<std::uint32_t>{}); break;
      case 8: fill(std::type_identity<std::uint64_t>{}); break;
      default:
        for (std::int64_t k = 0; k < count; ++k) std::memcpy(dst + k * size, value, static_cast<std::size_t>(size));
    }
  }

  /// Per register, how many instruction operands read it, and the instruction that writes it
  /// (-1 for none).
  [[nodiscard]] std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>> dataflow() const {
    std::vector<std::int32_t> uses(regs_.size(), 0), producer(regs_.size(), -1);
    for (std::size_t i = 0; i < code_.size(); ++i) {
      for (std::int32_t r : code_[i].in)
        if (r >= 0) ++uses[static_cast<std::size_t>(r)];
      producer[static_cast<std::size_t>(code_[i].out)] = static_cast<std::int32_t>(i);
    }
    return {std::move(uses), std::move(producer)};
  }

  /// Removes the instructions marked in `dropped`, keeping the others' order.
  void erase(const std::vector<bool>& dropped) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < code_.size(); ++i)
      if (!dropped[i]) code_[kept++] = code_[i];
    code_.resize(kept);
  }

  /// Replaces a floating-point product that feeds only a sum or a difference by one
  /// multiply-add instruction at the sum: a pass over the tile less, and a scratch tile less.
  /// Moving the product's reads down to the sum is safe because every register is written
  /// once, before anything reads it.
  void fuse_multiply_add() {
    const auto [uses, producer] = dataflow();
    std::vector<bool> dropped(code_.size(), false);
    for (Instr& sum : code_) {
      if (sum.op != OpCode::kAdd && sum.op != OpCode::kSubtract) continue;
      for (int k = 0; k < 2; ++k) {
        const auto product = static_cast<std::size_t>(sum.in[k]);
        if (regs_[product].kind != RegKind::kScratch || uses[product] != 1 || producer[product] < 0) continue;
        const auto p = static_cast<std::size_t>(producer[product]);
        const Instr& mul = code_[p];
        if (mul.op != OpCode::kMultiply || dtype(mul.in[0]) != dtype(sum.out) || dtype(sum.in[1 - k]) != dtype(sum.out))
          continue;
        const auto form = sum.op == OpCode::kAdd ? ew::MulAddForm::kAdd
                          : k == 0               ? ew::MulAddForm::kSubtractAfter
                                                 : ew::MulAddForm::kSubtractFrom;
        TileFn fn = find_multiply_add_kernel(form, dtype(sum.out));
        if (fn == nullptr) continue;
        sum = Instr{fn, sum.op, sum.out, {mul.in[0], mul.in[1], sum.in[1 - k]}};
        dropped[p] = true;
        ++combined_.multiply_adds;
        break;
      }
    }
    erase(dropped);
  }

  /// Gives add, subtract, multiply and divide of f32/f64 whose one operand is a splat the
  /// kernel that reads that operand as one scalar; a splat that no instruction then reads as a
  /// tile is never filled (in a row kernel a splat is a per-row value, filled again for every
  /// row). The same arithmetic on the same values: the bits do not change.
  void read_splats_as_scalars() {
    // A splat or periodic register is read where it lies only if nothing the program writes
    // (an accumulator, a result) is its value: a filled tile holds the value from before.
    for (Reg& r : regs_) {
      if (r.kind != RegKind::kSplat && r.kind != RegKind::kPeriodic) continue;
      r.stable = std::none_of(code_.begin(), code_.end(), [&](const Instr& ins) {
        const Reg& w = regs_[static_cast<std::size_t>(ins.out)];
        return w.kind != RegKind::kScratch && w.external == r.external;
      });
    }
    for (Instr& ins : code_) {
      if (ins.in[0] < 0 || ins.in[1] < 0 || ins.in[2] >= 0) continue;
      auto stable_splat = [&](std::int32_t reg) {
        const Reg& r = regs_[static_cast<std::size_t>(reg)];
        return r.kind == RegKind::kSplat && r.stable;
      };
      const bool splat0 = stable_splat(ins.in[0]);
      const bool splat1 = stable_splat(ins.in[1]);
      if (splat0 == splat1 || dtype(ins.in[0]) != dtype(ins.out) || dtype(ins.in[1]) != dtype(ins.out)) continue;
      const auto side = splat0 ? ew::ScalarSide::kScalarLeft : ew::ScalarSide::kScalarRight;
      TileFn fn = find_scalar_operand_kernel(ins.op, dtype(ins.out), side);
      if (fn == nullptr) continue;
      ins.fn = fn;
      ins.scalars = splat0 ? 0b01 : 0b10;
    }
  }

  /// A splat is filled as a tile only if some instruction reads it as one.
  void mark_splats_read_as_tiles() {
    for (Reg& r : regs_)
      if (r.kind == RegKind::kSplat) r.tile = false;
    for (const Instr& ins : code_)
      for (int k = 0; k < 3; ++k)
        if (ins.in[k] >= 0 && (ins.scalars >> k & 1) == 0) regs_[static_cast<std::size_t>(ins.in[k])].tile = true;
  }

  /// Calls `combine(reader, k, producer)` for each input k of each instruction that is a
  /// scratch register one instruction writes and only the reader reads (in any of its
  /// inputs); `combine` returns true when it made the reader one instruction doing both, and
  /// the producer is then dropped. Returns how many it combined.
  template <class Combine>
  std::int32_t fuse_sole_producer(Combine combine) {
    const auto [uses, producer] = dataflow();
    std::vector<bool> dropped(code_.size(), false);
    std::int32_t fused = 0;
    for (Instr& reader : code_) {
      for (int k = 0; k < 3; ++k) {
        if (reader.in[k] < 0) continue;
        const auto r = static_cast<std::size_t>(reader.in[k]);
        const auto reads = std::count(reader.in, reader.in + 3, reader.in[k]);
        if (regs_[r].kind != RegKind::kScratch || uses[r] != reads || producer[r] < 0) continue;
        const auto p = static_cast<std::size_t>(producer[r]);
        if (dropped[p] || !combine(reader, k, code_[p])) continue;
        dropped[p] = true;
        ++fused;
        break;
      }
    }
    erase(dropped);
    return fused;
  }

  /// True for an add, subtract, multiply or divide of a tile (in[0]) and a scalar (in[1]).
  bool is_scalar_right(const Instr& ins) const {
    return ins.scalars == 0b10 && ins.in[2] < 0 && dtype(ins.in[0]) == dtype(ins.out) &&
           ins.fn == find_scalar_operand_kernel(ins.op, dtype(ins.out), ew::ScalarSide::kScalarRight);
  }

  /// exp(-x), a negation whose result only an exp reads, as one instruction that negates inside
  /// the exp's packet loop: a pass over the tile less, and the first pass to read x from memory
  /// is then one with arithmetic to overlap the loads with.
  void fuse_negated_exp() {
    combined_.negated_exps = fuse_sole_producer([&](Instr& exp, int k, const Instr& neg) {
      if (k != 0 || exp.op != OpCode::kExponential || neg.op != OpCode::kNegate || dtype(neg.in[0]) != dtype(exp.out)) return false;
      TileFn fn = find_negated_exp_kernel(dtype(exp.out));
      if (fn == nullptr) return false;
      exp = Instr{fn, OpCode::kExponential, exp.out, {neg.in[0], -1, -1}};
      return true;
    });
  }

  /// exp(x - s), a subtraction of a scalar (read_splats_as_scalars) whose result only an exp
  /// reads, as one instruction: softmax's exp(x - max), a pass over the tile less.
  void fuse_exp_of_difference() {
    combined_.exps_of_differences = fuse_sole_producer([&](Instr& exp, int k, const Instr& sub) {
      if (k != 0 || exp.op != OpCode::kExponential || exp.in[1] >= 0 || sub.op != OpCode::kSubtract ||
          !is_scalar_right(sub) || dtype(sub.in[0]) != dtype(exp.out))
        return false;
      TileFn fn = find_exp_of_difference_kernel(dtype(exp.out));
      if (fn == nullptr) return false;
      exp = Instr{fn, OpCode::kExponential, exp.out, {sub.in[0], sub.in[1], -1}};
      exp.scalars = 0b10;
      return true;
    });
  }

  /// A sum of a product that only the sum reads (layer norm's sum of squares) as one
  /// instruction that sums the products as it makes them: no product tile written and read.
  void fuse_sum_of_products() {
    combined_.sums_of_products = fuse_sole_producer([&](Instr& acc, int k, const Instr& mul) {
      if (k != 0 || acc.op != OpCode::kReduce || acc.fn != find_accumulate_kernel(OpCode::kAdd, dtype(acc.out)) ||
          mul.op != OpCode::kMultiply || mul.scalars != 0 || dtype(mul.in[0]) != dtype(acc.out) ||
          dtype(mul.in[1]) != dtype(acc.out))
        return false;
      TileFn fn = find_accumulate_products_kernel(dtype(acc.out));
      if (fn == nullptr) return false;
      acc = Instr{fn, OpCode::kReduce, acc.out, {mul.in[0], mul.in[1], -1}};
      return true;
    });
  }

  /// A sum of products of a deviation with itself, (x - s) * (x - s) with s a broadcast
  /// scalar (a variance), as one instruction: no tile of deviations written and read.
  void fuse_squared_differences() {
    combined_.sums_of_squared_differences = fuse_sole_producer([&](Instr& acc, int k, const Instr& sub) {
      if (k != 0 || acc.op != OpCode::kReduce || acc.in[1] != acc.in[0] ||
          acc.fn != find_accumulate_products_kernel(dtype(acc.out)) || sub.op != OpCode::kSubtract ||
          !is_scalar_right(sub) || dtype(sub.out) != dtype(acc.out))
        return false;
      TileFn fn = find_accumulate_squared_differences_kernel(dtype(acc.out));
      if (fn == nullptr) return false;
      acc = Instr{fn, OpCode::kReduce, acc.out, {sub.in[0], sub.in[1], -1}};
      acc.scalars = 0b10;
      --combined_.sums_of_products;  // that sum of products is now this instruction
      return true;
    });
  }

  /// Two ops with a broadcast scalar each, the first read only by the second ((x - mean) *
  /// rstd), as one instruction.
  void fuse_scalar_pairs() {
    combined_.scalar_pairs = fuse_sole_producer([&](Instr& second, int k, const Instr& first) {
      if (k != 0 || !is_scalar_right(second) || !is_scalar_right(first)) return false;
      TileFn fn = find_scalar_pair_kernel(first.op, second.op, dtype(second.out));
      if (fn == nullptr) return false;
      second = Instr{fn, second.op, second.out, {first.in[0], first.in[1], second.in[1]}};
      second.scalars = 0b110;
      return true;
    });
  }

  /// A product of two tiles whose one factor is an op with a broadcast scalar that only the
  /// product reads ((x * rstd) * gamma) as one instruction.
  void fuse_scaled_products() {
    combined_.scaled_products = fuse_sole_producer([&](Instr& mul, int k, const Instr& scaled) {
      if (k > 1 || mul.op != OpCode::kMultiply || mul.scalars != 0 || mul.in[2] >= 0 || mul.in[0] == mul.in[1] ||
          dtype(mul.in[1 - k]) != dtype(mul.out) || mul.fn != find_tile_kernel(OpCode::kMultiply, dtype(mul.out), dtype(mul.out)) ||
          !is_scalar_right(scaled) || dtype(scaled.out) != dtype(mul.out))
        return false;
      TileFn fn = find_scaled_product_kernel(scaled.op, k == 0, dtype(mul.out));
      if (fn == nullptr) return false;
      mul = Instr{fn, OpCode::kMultiply, mul.out, {scaled.in[0], scaled.in[1], mul.in[1 - k]}};
      mul.scalars = 0b010;
      return true;
    });
  }

  /// A maximum or minimum of another tile and an add, subtract or multiply of two tiles that
  /// only it reads (a bias and a relu: max(x + b, 0)) as one instruction.
  void fuse_bounded_ops() {
    combined_.bounded_ops = fuse_sole_producer([&](Instr& bound, int k, const Instr& op) {
      const DType t = dtype(bound.out);
      auto plain = [&](const Instr& ins) {
        return ins.scalars == 0 && ins.in[2] < 0 && dtype(ins.in[0]) == t && dtype(ins.in[1]) == t &&
               ins.fn == find_tile_kernel(ins.op, t, t);
      };
      if (k > 1 || (bound.op != OpCode::kMaximum && bound.op != OpCode::kMinimum) || bound.in[0] == bound.in[1] ||
          !plain(bound) || !plain(op))
        return false;
      // A broadcast scalar bound (relu's 0) is read as one value.
      const bool scalar_bound = regs_[static_cast<std::size_t>(bound.in[1 - k])].kind == RegKind::kSplat;
      TileFn fn = find_bounded_op_kernel(op.op, bound.op == OpCode::kMaximum, k == 0, scalar_bound, t);
      if (fn == nullptr) return false;
      bound = Instr{fn, bound.op, bound.out, {op.in[0], op.in[1], bound.in[1 - k]}};
      if (scalar_bound) bound.scalars = 0b100;
      return true;
    });
  }

  std::int32_t add_reg(Reg r) {
    regs_.push_back(r);
    return static_cast<std::int32_t>(regs_.size() - 1);
  }

  Status emit_raw(OpCode op, DType operand, DType result, std::int32_t out, const std::vector<std::int32_t>& ins,
                  const Node& node) {
    if (op == OpCode::kCompare && is_complex(operand)) {
      const auto direction = node.attr<CompareAttrs>().direction;
      if (direction != ComparisonDirection::kEq && direction != ComparisonDirection::kNe)
        return unimplemented_error(str_cat("cpu: compare ", comparison_direction_name(direction), " on ",
                                           dtype_name(operand), ": complex numbers have no order"));
    }
    TileFn fn = find_tile_kernel(op, operand, result);
    if (fn == nullptr)
      return unimplemented_error(str_cat("cpu: no kernel for ", op_name(op), " on ", dtype_name(operand)));
    Instr instr{fn, op, out};
    for (std::size_t k = 0; k < ins.size() && k < 3; ++k) instr.in[k] = ins[k];
    if (op == OpCode::kConvert) {
      instr.from = operand;
      instr.to = result;
    }
    if (node.op == OpCode::kCompare) {
      const auto& attrs = node.attr<CompareAttrs>();
      instr.direction = attrs.direction;
      instr.comparison = attrs.type == ComparisonType::kNotype ? default_comparison_type(operand) : attrs.type;
    }
    if (node.op == OpCode::kReducePrecision) {
      const auto& attrs = node.attr<ReducePrecisionAttrs>();
      instr.exponent_bits = attrs.exponent_bits;
      instr.mantissa_bits = attrs.mantissa_bits;
    }
    code_.push_back(instr);
    return ok_status();
  }

  /// Where run() points register `reg`: at external address `external` (offset < 0), at
  /// `offset` bytes into the worker's scratch, filled with the element at `external` when
  /// that is >= 0 (a splat read as a tile), or (windows and periodic fills) at the tile's
  /// elements of `external`.
  struct Bind {
    std::int32_t reg;
    std::int32_t external;
    std::int64_t offset;
    std::int64_t size;  // bytes per element
  };

  std::vector<Reg> regs_;
  std::vector<Instr> code_;
  // Set by finalize(): the registers set once per run, and those set per tile.
  std::vector<Bind> binds_, windows_, periodics_;
  Combined combined_;
  std::int64_t tile_elements_ = kTileElements;  // set by finalize()
  std::int64_t pointer_table_offset_ = 0;
  std::int64_t scratch_bytes_ = 0;
};

}  // namespace pjrt_lite::cpu::detail
