#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// Program: what compiling a graph for the CPU produces, independent of any client or device.
// Every array of an execution has a slot; kernels run in order over the slots; temporaries
// and kernel scratch live in one arena whose size is known at compile time. Running a
// program allocates nothing: the per-execution state (arena, slot table, argument holds) is
// recycled between executions.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/buffer.hpp"
#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/observer.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu {

namespace detail {

enum class SlotKind : std::uint8_t { kParameter, kConstant, kTemp, kOutput };

struct Slot {
  SlotKind kind;
  std::int32_t index = 0;   // parameter or output number
  std::int64_t offset = 0;  // kTemp: bytes into the arena
  std::int64_t bytes = 0;
  const Literal* constant = nullptr;  // kConstant
};

/// The mutable state of one execution, recycled between executions.
struct RunState {
  std::vector<std::byte*> slot_addresses;
  pjrt_lite::detail::AlignedBytes arena;
  std::vector<BufferHold> holds;   // one per argument
  std::vector<MemoryRef> outputs;  // one per output
  // The donated arguments in the order an execute reserves them (room for one per argument).
  std::vector<int> donation_order;
  // The participant the execution runs for (replica_id, partition_id, collectives), or null.
  CollectiveContext* collectives = nullptr;
  // The queues of the device the execution runs on, and the first error of a kernel that
  // runs outside a grid (an infeed that timed out).
  FeedQueues* feeds = nullptr;
  Status status;
  // How many threads the execution's kernels may split across; 0: the program's own. The
  // participants of a grid run at once and share the machine's threads.
  int max_workers = 0;
};

class Program {
 public:
  Graph graph;  // the optimized graph; owns the constants the slots point at
  std::vector<Slot> slots;
  std::vector<std::unique_ptr<Kernel>> kernels;
  /// For each node of `graph`, the kernel that computes it, or -1 (parameters, constants,
  /// aliases): the fusion groups, for pictures of the program.
  std::vector<std::int32_t> node_kernel;
  std::vector<Shape> parameter_shapes;
  std::vector<Shape> output_shapes;
  std::vector<std::int32_t> output_slots;
  /// For each parameter, the output whose memory a donated argument may become, or -1.
  std::vector<std::int32_t> donation_target;
  std::int64_t arena_bytes = 0;
  std::int64_t scratch_offset = 0;
  int max_workers = 1;
  KernelIsa kernel_isa = compiled_kernel_isa();  // the build of the kernels it runs
  /// Some kernel (here or in a region) is a collective: every participant must run at once.
  bool has_collectives = false;
  /// (channel id, size of its largest message) of every channel its send and recv ops use,
  /// here or in a region, each id once: the rendezvous's mailboxes.
  std::vector<std::pair<std::int64_t, std::int64_t>> channels;
  /// Some send or recv names no source_target_pairs (any participant may take its message):
  /// such channels stay within one process.
  bool unpaired_channels = false;

  /// Notes a message of `bytes` on channel `id`.
  void add_channel(std::int64_t id, std::int64_t bytes) {
    for (auto& [c, b] : channels)
      if (c == id) {
        b = std::max(b, bytes);
        return;
      }
    channels.emplace_back(id, bytes);
  }
  CostAnalysis cost;
  MemoryStats memory;
  std::string text;

  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() { delete cached_.exchange(nullptr); }

  /// A RunState for one execution: the cached one if free, else a new one. Lock-free.
  [[nodiscard]] std::unique_ptr<RunState> acquire_state() const {
    if (RunState* s = cached_.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<RunState>(s);
    auto s = std::make_unique<RunState>();
    s->slot_addresses.resize(slots.size());
    s->arena = pjrt_lite::detail::allocate_aligned(static_cast<std::size_t>(arena_bytes));
    s->holds.resize(parameter_shapes.size());
    s->outputs.resize(output_shapes.size());
    s->donation_order.resize(parameter_shapes.size());
    return s;
  }
  /// Gives a state back (its holds released) for the next execution.
  void release_state(std::unique_ptr<RunState> s) const {
    for (BufferHold& h : s->holds) h = BufferHold{};
    for (auto& m : s->outputs) m.reset();
    s->collectives = nullptr;
    s->feeds = nullptr;
    s->status = Status();
    s->max_workers = 0;
    RunState* expected = nullptr;
    if (cached_.compare_exchange_strong(expected, s.get(), std::memory_order_release)) s.release();
  }

  /// Runs every kernel, each reported to `observer` if it is not null. `state.holds` and
  /// `state.outputs` must be filled.
  template <class E>
  void run(RunState& state, E* executor, Observer* observer = nullptr) const {
    bind_slots(state.slot_addresses.data(), state.arena.get(),
               [&](std::size_t p) { return state.holds[p].memory->data; },
               [&](std::size_t o) { return state.outputs[o]->data; });
    RunContext ctx{state.slot_addresses.data(), state.arena.get() + scratch_offset, executor,
                   state.max_workers > 0 ? std::min(state.max_workers, max_workers) : max_workers,
                   [](void* e, int workers, std::int64_t n, std::int64_t grain, RangeFn fn) {
                     return parallel_for(static_cast<E*>(e), workers, n, grain, fn);
                   },
                   state.collectives, state.feeds, &state.status};
    if (observer == nullptr) {
      for (const auto& k : kernels) k->run(ctx);
      return;
    }
    for (const auto& k : kernels) {
      ObservedSpan span(observer, SpanKind::kKernel, k->text, k->bytes_accessed);
      k->run(ctx);
    }
  }

  /// Runs the program inside a kernel of another program (a loop body, a branch), on the
  /// caller's executor: parameter p at `parameters[p]`, output j written to `outputs[j]`,
  /// the slot table in `slot_table` (slots.size() entries) and temporaries and scratch in
  /// `arena` (arena_bytes, 64-byte aligned). Allocates nothing; not observed kernel by kernel.
  void run_nested(std::byte** slot_table, std::byte* arena, std::byte* const* parameters,
                  std::byte* const* outputs, const RunContext& outer) const {
    bind_slots(slot_table, arena, [&](std::size_t p) { return parameters[p]; },
               [&](std::size_t o) { return outputs[o]; });
    RunContext ctx{slot_table, arena + scratch_offset, outer.executor, outer.max_workers, outer.parallel_fn,
                   outer.collectives, outer.feeds, outer.status};
    for (const auto& k : kernels) k->run(ctx);
  }

 private:
  /// Fills the slot table: parameters and outputs from the callbacks, constants from the
  /// graph, temporaries in `arena`.
  template <class ParameterAt, class OutputAt>
  void bind_slots(std::byte** table, std::byte* arena, ParameterAt parameter_at, OutputAt output_at) const {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const Slot& s = slots[i];
      switch (s.kind) {
        case SlotKind::kParameter: table[i] = parameter_at(static_cast<std::size_t>(s.index)); break;
        case SlotKind::kConstant: table[i] = static_cast<std::byte*>(const_cast<void*>(s.constant->untyped_data())); break;
        case SlotKind::kTemp: table[i] = arena + s.offset; break;
        case SlotKind::kOutput: table[i] = output_at(static_cast<std::size_t>(s.index)); break;
      }
    }
  }

  mutable std::atomic<RunState*> cached_{nullptr};
};

}  // namespace detail
}  // namespace pjrt_lite::cpu
