#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The steps of a compiled CPU program. A Kernel reads and writes "slots" (the arrays of one
// execution: parameters, constants, temporaries in the arena, outputs) through a RunContext,
// whose addresses change per execution while everything else is fixed at compile time, so
// running a kernel allocates nothing.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "pjrt_lite/backends/cpu/detail/int8_gemm.hpp"
#include "pjrt_lite/backends/cpu/detail/parallel.hpp"
#include "pjrt_lite/backends/cpu/detail/strided.hpp"
#include "pjrt_lite/backends/cpu/detail/tile_program.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/strided_copy.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

struct CollectiveContext;  // rendezvous.hpp
class FeedQueues;          // feeds.hpp

/// What a kernel sees of one execution.
struct RunContext {
  std::byte* const* slots;  // base address of every slot
  std::byte* scratch;       // kernel scratch, 64-byte aligned, Kernel::scratch_bytes long
  void* executor;           // the client's executor, for parallel()
  int max_workers;
  bool (*parallel_fn)(void* executor, int max_workers, std::int64_t n, std::int64_t grain, RangeFn fn);
  /// The participant this execution runs for, in an executable of several (replicas x
  /// partitions); null for one that runs alone.
  CollectiveContext* collectives;
  /// The queues of the device the execution runs on (infeed, outfeed), or null.
  FeedQueues* feeds;
  /// Where a kernel outside a grid records the first error of its execution (infeed), or
  /// null.
  Status* status;

  /// Runs fn over [0, n) in chunks of at least `grain`, on up to max_workers threads.
  /// Returns whether other threads were asked to help.
  bool parallel(std::int64_t n, std::int64_t grain, RangeFn fn) const {
    return parallel_fn(executor, max_workers, n, grain, fn);
  }
};

/// Whether one kernel's loop is faster split across the workers or run on the caller alone,
/// learned from the kernel's own runs. Handing blocks to workers pays for itself only when the
/// loop is long enough and compute-bound enough on this machine at this load: a worker's
/// wake-up and the caller's wait cost microseconds, and two threads streaming from memory may
/// go no faster than one (docs/DECISIONS.md, "Each loop learns whether splitting pays", has
/// the figures). No fixed threshold fits every loop, machine and load, so each kernel times
/// both ways: its first kWarmup runs split, the next kWarmup run alone, and then it runs the
/// faster way, trying the other for kExploreRuns runs in a row now and then so that it follows
/// a change of load (a busy machine, other executions sharing the pool). In a row, because a
/// pool whose workers have had nothing to do for a while has them asleep: the first split run
/// pays their wake-up, which the next ones, like every split run of a loop that keeps
/// splitting, do not. An exploration comes every kExploreEvery runs while the two ways are
/// close, and less often the further apart they are, so that its slower runs add at most about
/// 1/kExploreShare to the time of the runs between (explore_every): a 64K-element multiply that
/// runs in 4.5 us on the caller and whose exploring splits take 18 us (the worker's wake-up
/// and the data moving to its core) explores once in about 1,200 runs, not once in 128.
///
/// Each way is judged by the median of its last kWindow runs: a run the OS stretched (a worker
/// descheduled mid-split, a page fault on the first run) is an outlier that must not turn the
/// decision, while a lasting change shows once it holds for half the window. The result never
/// depends on the choice (kernels split in blocks whose arithmetic does not depend on the
/// split). Concurrent runs update the samples with relaxed atomics: a lost update only blurs
/// them.
class SplitLearner {
 public:
  /// Runs of each way before the medians decide.
  static constexpr std::uint32_t kWarmup = 4;
  /// Once decided, kExploreRuns runs in a row go the other way, the last of every
  /// explore_every() runs: of every kExploreEvery while the two ways are close, of up to
  /// kMaxExploreEvery when the other way is far slower.
  static constexpr std::uint32_t kExploreEvery = 128;
  static constexpr std::uint32_t kMaxExploreEvery = 4096;
  static constexpr std::uint32_t kExploreRuns = 4;
  /// Explorations add at most about 1/kExploreShare to the time of the runs between them.
  static constexpr std::int64_t kExploreShare = 100;
  /// The runs of each way that its median is taken over.
  static constexpr std::uint32_t kWindow = 8;

  SplitLearner() = default;
  // A copied kernel learns afresh.
  SplitLearner(const SplitLearner& /*other*/) {}
  SplitLearner& operator=(const SplitLearner& /*other*/) { return *this; }

  /// Runs fn over [0, n) on the caller, or split in chunks of at least `grain` across the
  /// workers, whichever this kernel has found faster.
  void run(const RunContext& ctx, std::int64_t n, std::int64_t grain, RangeFn fn) const {
    if (ctx.max_workers <= 1 || ctx.parallel_fn == nullptr || (n + grain - 1) / std::max<std::int64_t>(grain, 1) <= 1) {
      fn(0, n, 0);
      return;
    }
    const bool split = choose();
    const auto start = std::chrono::steady_clock::now();
    const bool helped = split ? ctx.parallel(n, grain, fn) : (fn(0, n, 0), false);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    // A split that the pool's governor turned down ran alone: it counts as such.
    record(helped, ns.count());
  }

  /// The median (the lower of the middle two) of a way's last kWindow run times, 0 before its
  /// first run; for tests.
  [[nodiscard]] std::int64_t median_ns(bool split) const { return median_[split].load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint32_t runs(bool split) const { return count_[split].load(std::memory_order_relaxed); }

  /// The decision run() makes and the time it records, apart from the clock: whether the next
  /// run should split, and the time a run took that did (or did not) split.
  [[nodiscard]] bool choose() const {
    const std::uint32_t alone = count_[0].load(std::memory_order_relaxed);
    const std::uint32_t split = count_[1].load(std::memory_order_relaxed);
    if (split < kWarmup) return true;
    if (alone < kWarmup) return false;
    const std::int64_t alone_ns = median_[0].load(std::memory_order_relaxed);
    const std::int64_t split_ns = median_[1].load(std::memory_order_relaxed);
    const bool faster = split_ns < alone_ns;
    // The period follows the times as they are now: a chosen way that slows down to near the
    // other's brings the next exploration closer. The other way's cost is the mean of its
    // window but its longest run: its last explorations, their slow first runs included.
    const std::uint32_t every = explore_every(median_[faster].load(std::memory_order_relaxed),
                                              mean_[!faster].load(std::memory_order_relaxed));
    if (exploring_.load(std::memory_order_relaxed) > 0) {
      exploring_.fetch_sub(1, std::memory_order_relaxed);
      return !faster;
    }
    if (since_explored_.fetch_add(1, std::memory_order_relaxed) < every - kExploreRuns) return faster;
    since_explored_.store(0, std::memory_order_relaxed);
    exploring_.store(kExploreRuns - 1, std::memory_order_relaxed);
    return !faster;
  }
  /// The runs from one exploration's start to the next's, given the chosen way's median time
  /// and the other's mean (without its longest run): an exploration's kExploreRuns runs take
  /// (other - chosen) longer each than the chosen way would, which over the period's runs
  /// makes at most 1/kExploreShare of their time, within [kExploreEvery, kMaxExploreEvery].
  [[nodiscard]] static std::uint32_t explore_every(std::int64_t chosen_ns, std::int64_t other_ns) {
    if (other_ns <= chosen_ns) return kExploreEvery;
    const double extra = static_cast<double>(other_ns - chosen_ns) / static_cast<double>(std::max<std::int64_t>(chosen_ns, 1));
    const double runs = double{kExploreRuns} * double{kExploreShare} * extra;
    return static_cast<std::uint32_t>(std::clamp(runs, double{kExploreEvery}, double{kMaxExploreEvery}));
  }
  void record(bool split, std::int64_t ns) const {
    const std::uint32_t seen = count_[split].fetch_add(1, std::memory_order_relaxed);
    samples_[split][seen % kWindow].store(ns, std::memory_order_relaxed);
    const std::uint32_t held = std::min(seen + 1, kWindow);
    std::array<std::int64_t, kWindow> times{};
    std::int64_t total = 0, longest = 0;
    for (std::uint32_t i = 0; i < held; ++i) {
      times[i] = samples_[split][i].load(std::memory_order_relaxed);
      total += times[i];
      longest = std::max(longest, times[i]);
    }
    // The mean without the longest run: one run the OS stretched by milliseconds (the first
    // one's page faults) must not space the explorations out.
    mean_[split].store(held > 1 ? (total - longest) / (held - 1) : total, std::memory_order_relaxed);
    const auto middle = times.begin() + (held - 1) / 2;
    std::nth_element(times.begin(), middle, times.begin() + held);
    median_[split].store(*middle, std::memory_order_relaxed);
  }

 private:
  mutable std::atomic<std::int64_t> samples_[2][kWindow]{};
  mutable std::atomic<std::int64_t> median_[2]{};
  mutable std::atomic<std::int64_t> mean_[2]{};
  mutable std::atomic<std::uint32_t> count_[2]{};
  mutable std::atomic<std::uint32_t> since_explored_{0};  // runs the faster way since the last exploration
  mutable std::atomic<std::int32_t> exploring_{0};        // runs of the exploration under way still to go
};

/// One step of a compiled program.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const RunContext& ctx) const = 0;
  /// This kernel as a fused loop, or null: lets the planner look inside without RTTI.
  [[nodiscard]] virtual const class FusedKernel* as_fused() const { return nullptr; }
  /// Takes `loop` (a fused element-wise loop over this kernel's result, reading it element by
  /// element in order, whose result does not depend on where its blocks start) to run on
  /// each block of the result as soon as the block is complete, while it is in cache;
  /// false, leaving `loop` alone, where this kernel cannot.
  virtual bool adopt_epilogue(std::unique_ptr<class FusedKernel>& /*loop*/) { return false; }

  std::string text;                 // the step in the optimized program listing
  std::int64_t scratch_bytes = 0;   // for all workers together
  double flops = 0;                 // for cost analysis
  double transcendentals = 0;
  std::int64_t bytes_accessed = 0;
};

/// A fused group runs on several workers from kParallelMinElements elements on, in blocks
/// of at least kParallelGrain: waking a worker costs as much as a few thousand elements of
/// arithmetic (docs/DECISIONS.md, "A fused group runs on several workers").
inline constexpr std::int64_t kParallelMinElements = 4096;
inline constexpr std::int64_t kParallelGrain = 16384;

/// A fused element-wise group: one TileProgram over n elements, split across workers.
class FusedKernel final : public Kernel {
 public:
  TileProgram program;
  std::vector<std::int32_t> externals;  // the slot of each external register address
  std::int64_t n = 0;
  int workers = 1;
  SplitLearner split;

  [[nodiscard]] const FusedKernel* as_fused() const override { return this; }

  void run(const RunContext& ctx) const override {
    bind(ctx, ctx.scratch);
    if (n < kParallelMinElements || workers <= 1) {
      run_block(ctx.scratch, 0, n, 0);
      return;
    }
    // Blocks of whole tiles: every element then sits at the same place in the same tile as
    // on one thread (vector lanes or the scalar tail), so the bits never depend on the split.
    const std::int64_t tile = program.tile_elements();
    auto tiles = [&](std::int64_t t0, std::int64_t t1, int worker) {
      run_block(ctx.scratch, t0 * tile, std::min(t1 * tile, n), worker);
    };
    split.run(ctx, (n + tile - 1) / tile, std::max<std::int64_t>(1, kParallelGrain / tile), tiles);
  }

  /// Writes the table of external addresses at the start of `scratch` (this kernel's scratch,
  /// scratch_bytes long): once per run, before any run_block.
  void bind(const RunContext& ctx, std::byte* scratch) const {
    auto** table = reinterpret_cast<std::byte**>(scratch);
    for (std::size_t e = 0; e < externals.size(); ++e) table[e] = ctx.slots[externals[e]];
  }

  /// Runs elements [begin, end) with `worker`'s region of `scratch`.
  void run_block(std::byte* scratch, std::int64_t begin, std::int64_t end, int worker) const {
    program.run(reinterpret_cast<std::byte* const*>(scratch), begin, end,
                scratch + table_bytes() + worker * round_up(program.scratch_bytes()));
  }

  void finish_planning(int max_workers) {
    program.finalize();
    workers = max_workers;
    scratch_bytes = table_bytes() + workers * round_up(program.scratch_bytes());
  }

 private:
  [[nodiscard]] std::int64_t table_bytes() const {
    return round_up(static_cast<std::int64_t>(externals.size() * sizeof(std::byte*)));
  }
  static std::int64_t round_up(std::int64_t n) { return (n + 63) / 64 * 64; }
};

/// The epilogue a product kernel adopted (Kernel::adopt_epilogue): the loop, its scratch
/// after the product's own.
class Epilogue {
 public:
  /// Takes `loop` for `product`, whose scratch grows by the loop's.
  void adopt(std::unique_ptr<FusedKernel>& loop, Kernel& product) {
    loop_ = std::move(loop);
    scratch_at_ = (product.scratch_bytes + 63) / 64 * 64;
    product.scratch_bytes = scratch_at_ + loop_->scratch_bytes;
  }
  /// Once per run, before any block.
  void bind(const RunContext& ctx) const {
    if (loop_) loop_->bind(ctx, ctx.scratch + scratch_at_);
  }
  /// Elements [begin, end) of the loop (of the product's result), on `worker`.
  void run(const RunContext& ctx, std::int64_t begin, std::int64_t end, int worker) const {
    if (loop_) loop_->run_block(ctx.scratch + scratch_at_, begin, end, worker);
  }

  /// The loop on each block of rows an Int8Gemm product reports done: rows [r0, r1) of a
  /// product whose row r starts at element first + r * row_elements of the result, each
  /// row's elements [column0, column1) (all of them by default).
  class OnRows {
   public:
    OnRows(const Epilogue& epilogue, const RunContext& ctx, std::int64_t first, std::int64_t row_elements, int worker,
           std::int64_t column0 = 0, std::int64_t column1 = -1)
        : epilogue_(epilogue), ctx_(ctx), first_(first), row_elements_(row_elements),
          column0_(column0), column1_(column1 < 0 ? row_elements : column1), worker_(worker) {}
    /// For Int8Gemm::run; valid while this object lives.
    RowsDone done() { return RowsDone{&OnRows::call, this}; }

   private:
    static void call(void* self, std::int64_t r0, std::int64_t r1) {
      const auto& o = *static_cast<const OnRows*>(self);
      if (o.column0_ == 0 && o.column1_ == o.row_elements_)
        return o.epilogue_.run(o.ctx_, o.first_ + r0 * o.row_elements_, o.first_ + r1 * o.row_elements_, o.worker_);
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t row = o.first_ + r * o.row_elements_;
        o.epilogue_.run(o.ctx_, row + o.column0_, row + o.column1_, o.worker_);
      }
    }
    const Epilogue& epilogue_;
    const RunContext& ctx_;
    std::int64_t first_, row_elements_, column0_, column1_;
    int worker_;
  };

 private:
  std::unique_ptr<FusedKernel> loop_;
  std::int64_t scratch_at_ = 0;
};

/// Copies of at least this many bytes are split across workers, in blocks of a quarter of it.
inline constexpr std::int64_t kParallelCopyBytes = std::int64_t{1} << 20;

/// Data movement: optionally fill the result with a scalar (pad), then strided copies of
/// operands into it. Transpose, broadcast_in_dim, slice, reverse, concatenate, pad and copies
/// of reshapes are all this kernel with different patterns.
/// convert or bitcast_convert to or from a narrow type (s4, f8e4m3fn, ...), element by element
/// through core's convert_elements / bitcast_narrow_elements: the only kernel that reads or
/// writes narrow types, which every other op sees widened (transforms/widen_narrow.hpp).
class NarrowConvertKernel final : public Kernel {
 public:
  std::int32_t src_slot = -1, dst_slot = -1;
  DType from = DType::kInvalid, to = DType::kInvalid;
  std::int64_t count = 0;  // source elements
  bool bitcast = false;
  SplitLearner split;

  void run(const RunContext& ctx) const override {
    const std::byte* src = ctx.slots[src_slot];
    std::byte* dst = ctx.slots[dst_slot];
    if (bitcast) {
      bitcast_narrow_elements(src, from, dst, to, count);
      return;
    }
    const auto in = static_cast<std::int64_t>(byte_size(from)), out = static_cast<std::int64_t>(byte_size(to));
    auto body = [&](std::int64_t b, std::int64_t e, int) { convert_elements(src + b * in, from, dst + b * out, to, e - b); };
    split.run(ctx, count, kParallelGrain, body);
  }
};

class MoveKernel final : public Kernel {
 public:
  struct Piece {
    std::int32_t src_slot;
    std::int64_t src_offset;  // bytes; may point past the start for reversed dimensions
    std::int64_t dst_offset;
    StridedCopy copy;
    SplitLearner split = {};
  };
  std::int32_t dst_slot = -1;
  std::int64_t dst_bytes = 0;
  std::int32_t fill_slot = -1;  // a scalar to fill the result with first, or -1
  std::int64_t element_size = 0;
  std::vector<Piece> pieces;

  void run(const RunContext& ctx) const override {
    std::byte* dst = ctx.slots[dst_slot];
    if (fill_slot >= 0) {
      const std::byte* value = ctx.slots[fill_slot];
      for (std::int64_t off = 0; off < dst_bytes; off += element_size)
        std::memcpy(dst + off, value, static_cast<std::size_t>(element_size));
    }
    for (const Piece& p : pieces) {
      // An empty piece may come with an offset into an empty (null) buffer: nothing to copy,
      // and the pointer arithmetic itself would be undefined.
      if (p.copy.count() == 0) continue;
      const std::byte* src = ctx.slots[p.src_slot] + p.src_offset;
      std::byte* d = dst + p.dst_offset;
      if (p.copy.count() * element_size >= kParallelCopyBytes) {
        auto body = [&](std::int64_t b, std::int64_t e, int) { p.copy.run_elements(d, src, b, e); };
        p.split.run(ctx, p.copy.count(), kParallelCopyBytes / 4 / element_size, body);
      } else {
        p.copy.run(d, src);
      }
    }
  }
};

/// iota: the index along one dimension, converted to the element type.
class IotaKernel final : public Kernel {
 public:
  std::int32_t dst_slot = -1;
  Shape shape;
  std::int64_t dimension = 0;

  void run(const RunContext& ctx) const override {
    std::int64_t inner = 1;
    for (std::int64_t d = dimension + 1; d < shape.rank(); ++d) inner *= shape.dim(d);
    const std::int64_t extent = shape.dim(dimension);
    const std::int64_t n = shape.element_count();
    visit_dtype(shape.dtype(), [&]<class T>(std::type_identity<T>) {
      T* out = reinterpret_cast<T*>(ctx.slots[dst_slot]);
      for (std::int64_t i = 0; i < n; ++i) out[i] = convert_element<T>((i / inner) % extent);
    });
  }
};

/// Reads a start index of any integer type from a rank-0 slot.
inline std::int64_t read_index(const std::byte* p, DType t) {
  std::int64_t v = 0;
  visit_dtype(t, [&]<class T>(std::type_identity<T>) {
    if constexpr (is_int_v<T>) {
      T x;
      std::memcpy(&x, p, sizeof(T));
      // Unsigned indices beyond int64 clamp to the top; the caller clamps into range anyway.
      if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8)
        v = x > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(x);
      else
        v = static_cast<std::int64_t>(x);
    }
  });
  return v;
}

/// dynamic_slice and dynamic_update_slice: a strided copy whose offset is computed at run time
/// from clamped start indices.
class DynamicSliceKernel final : public Kernel {
 public:
  bool update = false;               // dynamic_update_slice: copy operand, then the update into it
  std::int32_t dst_slot = -1;
  std::int32_t operand_slot = -1;
  std::int32_t update_slot = -1;
  std::vector<std::int32_t> index_slots;
  DType index_dtype = DType::kS32;
  std::vector<std::int64_t> operand_dims;
  std::vector<std::int64_t> operand_strides;  // bytes, row-major
  std::vector<std::int64_t> window;  // slice sizes, or the update's dims
  std::int64_t element_size = 0;
  StridedCopy copy;                  // over `window`, strides for the operand and the window

  void run(const RunContext& ctx) const override {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < operand_dims.size(); ++d) {
      std::int64_t start = read_index(ctx.slots[index_slots[d]], index_dtype);
      start = std::clamp<std::int64_t>(start, 0, operand_dims[d] - window[d]);
      offset += start * operand_strides[d];
    }
    std::byte* dst = ctx.slots[dst_slot];
    if (update) {
      std::int64_t total = element_size;
      for (std::int64_t d : operand_dims) total *= d;
      // Empty arrays have null memory: neither memmove nor pointer offsets may touch them.
      if (total > 0 && dst != ctx.slots[operand_slot])
        std::memmove(dst, ctx.slots[operand_slot], static_cast<std::size_t>(total));
      if (copy.count() > 0) copy.run(dst + offset, ctx.slots[update_slot]);  // dst strides = operand's, src = dense update
    } else if (copy.count() > 0) {
      copy.run(dst, ctx.slots[operand_slot] + offset);  // dst dense window, src = operand's
    }
  }
};

}  // namespace pjrt_lite::cpu::detail
