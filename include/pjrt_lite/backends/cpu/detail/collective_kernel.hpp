#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// replica_id, partition_id and the collectives on the CPU. Which participants meet, and in
// which order, is worked out at compile time for every participant (the grid is part of the
// compile options), so at run time a collective is: publish the operands' addresses, meet
// the others at the executable's rendezvous (rendezvous.hpp), read the group's operands in
// place into this participant's results, and leave when every participant is done reading.
// all_reduce and reduce_scatter fold the group's operands in group order through their
// computation, lowered to a TileProgram that runs over whole arrays. In a grid that spans
// processes, the other processes' operands are read from the rendezvous's copy of them.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/reduce_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/rendezvous.hpp"
#include "pjrt_lite/backends/cpu/detail/strided.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// For every participant (replica * num_partitions + partition), the participants of its
/// group in group order, or none (collective_permute's and collective_broadcast's outsiders).
/// INVALID_ARGUMENT for ids outside the grid or, where every participant needs a group, a
/// participant in none.
inline StatusOr<std::vector<std::vector<int>>> participant_groups(const Node& n, int replicas, int partitions) {
  const auto& a = n.attr<CollectiveAttrs>();
  const OpCode op = n.op;
  const bool by_partition = a.channel_id > 0 && (op == OpCode::kAllToAll || op == OpCode::kCollectivePermute ||
                                                 op == OpCode::kCollectiveBroadcast);
  const bool flat = a.channel_id > 0 && a.use_global_device_ids;
  const bool both = a.channel_id > 0 && !flat && !by_partition && op != OpCode::kAllToAll &&
                    op != OpCode::kCollectiveBroadcast && op != OpCode::kCollectivePermute;
  const int limit = flat ? replicas * partitions : by_partition ? partitions : replicas;
  const char* unit = flat ? "process" : by_partition ? "partition" : "replica";
  for (std::int64_t id : a.groups)
    if (id >= limit)
      return invalid_argument_error(str_cat(op_name(op), ": ", op == OpCode::kCollectivePermute ? "source_target_pairs" : "replica_groups",
                                            " names ", unit, " ", id, " but the grid has ", limit, " ",
                                            unit, "s"));
  std::vector<std::vector<int>> out(static_cast<std::size_t>(replicas * partitions));
  if (op == OpCode::kCollectivePermute) {
    // Everyone named by a pair, in the participant's line of the grid, meets; the group's
    // order does not matter (each participant copies from its one source).
    for (int k = 0; k < replicas * partitions; ++k) {
      const int r = k / partitions, p = k % partitions;
      const int mine = by_partition ? p : r;
      bool named = false;
      for (std::int64_t id : a.groups) named |= id == mine;
      if (!named) continue;
      std::vector<int>& g = out[static_cast<std::size_t>(k)];
      for (std::int64_t id : a.groups) {
        const int member = by_partition ? r * partitions + static_cast<int>(id) : static_cast<int>(id) * partitions + p;
        if (std::find(g.begin(), g.end(), member) == g.end()) g.push_back(member);
      }
      std::sort(g.begin(), g.end());
    }
    return out;
  }
  // The row of ids holding `id` (an empty list is one row of every id).
  auto row_of = [&](int id) -> std::vector<int> {
    if (a.groups.empty()) {
      std::vector<int> all;
      for (int i = 0; i < limit; ++i) all.push_back(i);
      return all;
    }
    for (std::size_t r = 0; r < a.group_count(); ++r) {
      const std::vector<std::int64_t> row = a.group_ids(r);  // without all_reduce's -1 padding
      if (std::find(row.begin(), row.end(), id) != row.end()) return std::vector<int>(row.begin(), row.end());
    }
    return {};
  };
  for (int k = 0; k < replicas * partitions; ++k) {
    const int r = k / partitions, p = k % partitions;
    const int id = flat ? k : by_partition ? p : r;
    const std::vector<int> row = row_of(id);
    std::vector<int>& g = out[static_cast<std::size_t>(k)];
    if (row.empty()) {
      if (op == OpCode::kCollectiveBroadcast) continue;
      return invalid_argument_error(str_cat(op_name(op), ": replica_groups leave ", unit, " ", id,
                                            " out; they must cover every ", unit, " of the grid"));
    }
    if (flat) {
      g = row;
    } else if (by_partition) {
      for (int q : row) g.push_back(r * partitions + q);
    } else if (both) {
      for (int q = 0; q < partitions; ++q)
        for (int s : row) g.push_back(s * partitions + q);
    } else {
      for (int s : row) g.push_back(s * partitions + p);
    }
  }
  return out;
}

/// replica_id and partition_id: the participant's position, 0 outside a grid.
class ProcessPositionKernel final : public Kernel {
 public:
  bool replica = true;
  std::int32_t dst_slot = -1;
  void run(const RunContext& ctx) const override {
    const std::uint32_t v = ctx.collectives == nullptr ? 0u
                            : static_cast<std::uint32_t>(replica ? ctx.collectives->replica : ctx.collectives->partition);
    std::memcpy(ctx.slots[dst_slot], &v, sizeof v);
  }
};

/// One collective of any kind; the fields a kind does not use stay empty.
class CollectiveKernel final : public Kernel {
 public:
  OpCode op = OpCode::kAllReduce;
  std::int32_t site = 0;  // the collective's number, the same in every participant
  int participants = 1;
  std::vector<std::int32_t> operand_slots, result_slots;
  std::vector<std::int64_t> operand_bytes, result_bytes;
  std::vector<std::vector<int>> groups;  // per participant
  std::vector<int> permute_source;       // collective_permute: per participant, or -1
  bool dynamic_root = false;             // collective_broadcast: roots in the last operand
  // all_reduce, reduce_scatter: the computation over whole arrays.
  TileProgram body;
  std::vector<const std::byte*> body_constants;
  std::int64_t body_scratch_offset = 0, externals_offset = 0;
  // all_gather, reduce_scatter, all_to_all: per operand, the operand viewed as [outer, d,
  // inner] around the split or gathered dimension, and (all_to_all) the part's copy pattern.
  std::vector<std::int64_t> outer, dim, inner, element_size;
  std::vector<StridedCopy> part_copy;          // all_to_all: one part of a sender into the result
  std::vector<std::int64_t> part_src_step;     // bytes between parts along split_dimension
  std::vector<std::int64_t> part_dst_step;     // bytes between parts along concat_dimension

  /// Scratch: the operand address table first (room for one pointer per operand).
  void plan_scratch() {
    std::int64_t at = round_up(static_cast<std::int64_t>(operand_slots.size() * sizeof(std::byte*)));
    body_scratch_offset = at;
    at += round_up(body.scratch_bytes());
    externals_offset = at;
    at += round_up(static_cast<std::int64_t>((3 + body_constants.size()) * sizeof(std::byte*)));
    scratch_bytes = at;
  }

  void run(const RunContext& ctx) const override {
    CollectiveContext* c = ctx.collectives;
    if (c == nullptr || !c->status.ok() || c->rendezvous == nullptr) {
      // No grid (a program compiled for one participant runs alone), or an earlier
      // collective failed. Alone, a bad dynamic root has no status to fail: its result is
      // zeros.
      if (c == nullptr && participants == 1) {
        if (!compute(ctx, 0, [&](int) { return operand_table(ctx); }).ok()) zero(ctx);
        return;
      }
      zero(ctx);
      return;
    }
    const std::byte* const* mine = operand_table(ctx);
    Rendezvous& rv = *c->rendezvous;
    if (Status s = rv.arrive(c->participant, site, mine, operand_bytes, static_cast<std::int32_t>(op)); !s.ok()) {
      c->status = s;
      zero(ctx);
      return;
    }
    if (Status s = compute(ctx, c->participant, [&](int j) { return rv.peer(j); }); !s.ok()) {
      c->status = s;
      zero(ctx);
    }
    if (Status s = rv.leave(c->participant); !s.ok() && c->status.ok()) c->status = s;
  }

 private:
  static std::int64_t round_up(std::int64_t n) { return (n + 63) / 64 * 64; }

  const std::byte* const* operand_table(const RunContext& ctx) const {
    auto** table = reinterpret_cast<const std::byte**>(ctx.scratch);
    for (std::size_t i = 0; i < operand_slots.size(); ++i) table[i] = ctx.slots[operand_slots[i]];
    return table;
  }
  void zero(const RunContext& ctx) const {
    for (std::size_t i = 0; i < result_slots.size(); ++i)
      if (result_bytes[i] > 0) std::memset(ctx.slots[result_slots[i]], 0, static_cast<std::size_t>(result_bytes[i]));
  }
  static void copy(std::byte* dst, const std::byte* src, std::int64_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, static_cast<std::size_t>(bytes));
  }
  /// dst[0, n) = body(dst[0, n), x[0, n)), elementwise.
  void combine(const RunContext& ctx, std::byte* dst, const std::byte* x, std::int64_t n) const {
    if (n == 0) return;
    auto** ext = reinterpret_cast<std::byte**>(ctx.scratch + externals_offset);
    ext[0] = dst;
    ext[1] = const_cast<std::byte*>(x);
    ext[2] = dst;
    for (std::size_t k = 0; k < body_constants.size(); ++k) ext[3 + k] = const_cast<std::byte*>(body_constants[k]);
    body.run(ext, 0, n, ctx.scratch + body_scratch_offset);
  }

  /// This participant's results from the group's operands; INVALID_ARGUMENT for a dynamic
  /// root outside the group.
  template <class Peer>
  Status compute(const RunContext& ctx, int k, Peer peer) const {
    const std::vector<int>& group = groups[static_cast<std::size_t>(k)];
    if (op == OpCode::kCollectivePermute) {
      const int source = permute_source[static_cast<std::size_t>(k)];
      if (source < 0) zero(ctx);
      else copy(ctx.slots[result_slots[0]], peer(source)[0], result_bytes[0]);
      return ok_status();
    }
    if (group.empty()) {
      zero(ctx);
      return ok_status();
    }
    const auto n = static_cast<std::int64_t>(group.size());
    const auto me = static_cast<std::int64_t>(std::find(group.begin(), group.end(), k) - group.begin());
    for (std::size_t i = 0; i < result_slots.size(); ++i) {
      std::byte* out = ctx.slots[result_slots[i]];
      switch (op) {
        case OpCode::kCollectiveBroadcast: {
          std::int32_t root = 0;
          if (dynamic_root) {
            // This participant's roots: its last operand, an s32 per result.
            std::memcpy(&root, peer(k)[result_slots.size()] + i * sizeof root, sizeof root);
            if (root < 0 || root >= n)
              return invalid_argument_error(str_cat("collective_broadcast: root ", i, " of participant ", k,
                                                    " is ", root, ", outside its group of ", n));
          }
          copy(out, peer(group[static_cast<std::size_t>(root)])[i], result_bytes[i]);
          break;
        }
        case OpCode::kAllReduce: {
          copy(out, peer(group[0])[i], result_bytes[i]);
          const std::int64_t count = result_bytes[i] / element_size[i];
          for (std::int64_t m = 1; m < n; ++m) combine(ctx, out, peer(group[static_cast<std::size_t>(m)])[i], count);
          break;
        }
        case OpCode::kReduceScatter: {
          // Only this participant's part: rows of `part` elements at o * dim + me * part.
          const std::int64_t part = dim[i] / n * inner[i], es = element_size[i];
          for (std::int64_t o = 0; o < outer[i]; ++o) {
            std::byte* dst = out + o * part * es;
            const std::int64_t from = (o * dim[i] * inner[i] + me * part) * es;
            copy(dst, peer(group[0])[i] + from, part * es);
            for (std::int64_t m = 1; m < n; ++m) combine(ctx, dst, peer(group[static_cast<std::size_t>(m)])[i] + from, part);
          }
          break;
        }
        case OpCode::kAllGather: {
          const std::int64_t block = dim[i] * inner[i] * element_size[i];
          for (std::int64_t m = 0; m < n; ++m) {
            const std::byte* src = peer(group[static_cast<std::size_t>(m)])[i];
            for (std::int64_t o = 0; o < outer[i]; ++o) copy(out + (o * n + m) * block, src + o * block, block);
          }
          break;
        }
        case OpCode::kAllToAll:
          if (part_copy[i].count() == 0) break;
          for (std::int64_t m = 0; m < n; ++m)
            part_copy[i].run(out + m * part_dst_step[i], peer(group[static_cast<std::size_t>(m)])[i] + me * part_src_step[i]);
          break;
        default: break;
      }
    }
    return ok_status();
  }
};

/// A number for each collective kernel, the same in every participant of one executable
/// (they share its program): the order the compiler made them in.
inline std::int32_t next_collective_site() {
  static std::atomic<std::int32_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace pjrt_lite::cpu::detail
