#pragma once
// The reference interpreter over a grid of processes: evaluate_parallel runs one program per
// process (num_replicas x num_partitions of them), each on a thread of its own, and the
// collectives meet through a plain mutex-and-condition-variable exchange. Like the rest of
// the reference backend it is written to be obviously correct, not fast: process groups are
// computed exactly as the spec's Python (cross_replica, cross_partition,
// cross_replica_and_partition, flattened_ids), every value is copied, and all_reduce folds
// its group element by element through its computation, in group order.
//
// A process reaches a collective, hands its operands to the exchange under a key made of
// its process group and how many collectives of that group it has run, and waits until
// every member of the group has handed in; a member that never comes ends the wait with
// DEADLINE_EXCEEDED after the timeout. Outside evaluate_parallel (no grid), replica_id,
// partition_id and the collectives are FAILED_PRECONDITION, so constant folding leaves them.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/reference/data_movement.hpp"
#include "pjrt_lite/backends/reference/index.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1::reference {

/// The grid of an evaluate_parallel run, how long a process waits for its group (or for a
/// value to receive), and the processes' host queues.
struct ParallelOptions {
  std::int64_t num_replicas = 1;
  std::int64_t num_partitions = 1;
  std::chrono::milliseconds timeout{10000};
  /// Per process (replica-major), the entries its infeed ops take in order: each the values
  /// of one infeed. Missing or too few: an infeed with nothing left fails INVALID_ARGUMENT.
  std::vector<std::vector<std::vector<Literal>>> infeed = {};
  /// Where the processes' outfeed ops put their values, per process (resized to the grid);
  /// null: nowhere.
  std::vector<std::vector<std::vector<Literal>>>* outfeed = nullptr;
};

namespace detail {

/// (replica_id, partition_id).
using ProcessId = std::pair<std::int64_t, std::int64_t>;

/// What the processes of one evaluate_parallel run share. Thread-safe.
class Exchange {
 public:
  explicit Exchange(ParallelOptions options) : options_(options) {}

  [[nodiscard]] const ParallelOptions& options() const { return options_; }

  /// Hands `mine` in as `me`'s contribution to the round `key` of `group` and returns every
  /// member's contribution, in group order, once all have handed in.
  StatusOr<std::vector<std::vector<Literal>>> meet(const std::vector<ProcessId>& group,
                                                   std::int64_t count, ProcessId me,
                                                   std::vector<Literal> mine) {
    std::unique_lock lock(mu_);
    Round& round = rounds_[{group, count}];
    if (round.values.empty()) round.values.resize(group.size());
    const auto at = static_cast<std::size_t>(
        std::find(group.begin(), group.end(), me) - group.begin());
    round.values[at] = std::move(mine);
    ++round.arrived;
    cv_.notify_all();
    const bool all = cv_.wait_for(lock, options_.timeout, [&] {
      return round.arrived == group.size() || !first_error_.ok();
    });
    if (!first_error_.ok() && round.arrived != group.size())
      return aborted_error(str_cat("process (", me.first, ", ", me.second,
                                   ") stopped waiting: another process failed"));
    if (!all)
      return deadline_exceeded_error(str_cat(
          "process (", me.first, ", ", me.second, ") waited ", options_.timeout.count(),
          " ms for its group of ", group.size(), " but only ", round.arrived, " arrived"));
    std::vector<std::vector<Literal>> out;
    for (const auto& v : round.values) {
      std::vector<Literal> copy;
      for (const Literal& l : v) copy.push_back(l);
      out.push_back(std::move(copy));
    }
    if (++round.left == group.size()) rounds_.erase({group, count});
    return out;
  }

  /// send: queues `values` on `channel` for `to` (kAnyProcess: for whichever process
  /// receives on the channel first).
  void post(std::int64_t channel, ProcessId to, std::vector<Literal> values) {
    std::lock_guard lock(mu_);
    mailboxes_[{channel, to}].push_back(std::move(values));
    cv_.notify_all();
  }
  /// recv: waits for the oldest message on `channel` for `to` and takes it.
  StatusOr<std::vector<Literal>> take(std::int64_t channel, ProcessId to, ProcessId me) {
    std::unique_lock lock(mu_);
    auto& box = mailboxes_[{channel, to}];
    const bool arrived = cv_.wait_for(lock, options_.timeout, [&] { return !box.empty() || !first_error_.ok(); });
    if (box.empty() && !first_error_.ok())
      return aborted_error(str_cat("process (", me.first, ", ", me.second, ") stopped waiting: another process failed"));
    if (!arrived)
      return deadline_exceeded_error(str_cat("recv: process (", me.first, ", ", me.second, ") waited ",
                                             options_.timeout.count(), " ms on channel ", channel,
                                             " but nothing was sent"));
    std::vector<Literal> values = std::move(box.front());
    box.pop_front();
    return values;
  }
  /// infeed: the next entry of `me`'s queue (ParallelOptions::infeed).
  StatusOr<std::vector<Literal>> next_infeed(std::size_t process) {
    std::lock_guard lock(mu_);
    if (infeed_taken_.size() <= process) infeed_taken_.resize(process + 1);
    std::size_t& taken = infeed_taken_[process];
    if (process >= options_.infeed.size() || taken >= options_.infeed[process].size())
      return invalid_argument_error(str_cat("infeed: process ", process, "'s queue holds ",
                                            process < options_.infeed.size() ? options_.infeed[process].size() : 0,
                                            " entries, and all were taken"));
    std::vector<Literal> entry;
    for (const Literal& l : options_.infeed[process][taken]) entry.push_back(l);
    ++taken;
    return entry;
  }
  /// outfeed: appends `values` to `process`'s outfeed queue.
  void put_outfeed(std::size_t process, std::vector<Literal> values) {
    std::lock_guard lock(mu_);
    if (options_.outfeed == nullptr) return;
    if (options_.outfeed->size() <= process) options_.outfeed->resize(process + 1);
    (*options_.outfeed)[process].push_back(std::move(values));
  }

  /// Records the failure of a process and wakes every waiter, which then gives up.
  void fail(const Status& s) {
    std::lock_guard lock(mu_);
    if (first_error_.ok()) first_error_ = s;
    cv_.notify_all();
  }
  /// The first failure recorded, or OK.
  [[nodiscard]] Status first_error() {
    std::lock_guard lock(mu_);
    return first_error_;
  }

 private:
  struct Round {
    std::vector<std::vector<Literal>> values;
    std::size_t arrived = 0;
    std::size_t left = 0;
  };
  ParallelOptions options_;
  std::map<std::pair<std::int64_t, ProcessId>, std::deque<std::vector<Literal>>> mailboxes_;
  std::vector<std::size_t> infeed_taken_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<std::vector<ProcessId>, std::int64_t>, Round> rounds_;
  Status first_error_;
};

/// A send with no source_target_pairs posts for whichever process receives first.
inline constexpr ProcessId kAnyProcess{-1, -1};

/// The process the current thread evaluates for, inside evaluate_parallel.
struct ProcessContext {
  Exchange* exchange = nullptr;
  ProcessId id;
  std::map<std::vector<ProcessId>, std::int64_t> rounds;  // collectives run, per group
};
inline thread_local ProcessContext* current_process = nullptr;

/// The spec's four strategies. cross_replica and cross_partition: each group of ids on one
/// axis (replicas or partitions), once for every index of the other axis (`others` of them).
inline std::vector<std::vector<ProcessId>> groups_along(const std::vector<std::vector<std::int64_t>>& groups,
                                                        std::int64_t others, bool groups_of_replicas) {
  std::vector<std::vector<ProcessId>> out;
  for (const auto& group : groups)
    for (std::int64_t other = 0; other < others; ++other) {
      std::vector<ProcessId> process_group;
      for (std::int64_t id : group)
        process_group.push_back(groups_of_replicas ? ProcessId(id, other) : ProcessId(other, id));
      out.push_back(std::move(process_group));
    }
  return out;
}
inline std::vector<std::vector<ProcessId>> cross_replica(
    const std::vector<std::vector<std::int64_t>>& replica_groups, std::int64_t partitions) {
  return groups_along(replica_groups, partitions, true);
}
inline std::vector<std::vector<ProcessId>> cross_partition(
    const std::vector<std::vector<std::int64_t>>& partition_groups, std::int64_t replicas) {
  return groups_along(partition_groups, replicas, false);
}
inline std::vector<std::vector<ProcessId>> cross_replica_and_partition(
    const std::vector<std::vector<std::int64_t>>& replica_groups, std::int64_t partitions) {
  std::vector<std::vector<ProcessId>> out;
  for (const auto& replica_group : replica_groups) {
    std::vector<ProcessId> process_group;
    for (std::int64_t partition_id = 0; partition_id < partitions; ++partition_id)
      for (std::int64_t replica_id : replica_group)
        process_group.emplace_back(replica_id, partition_id);
    out.push_back(process_group);
  }
  return out;
}
inline std::vector<std::vector<ProcessId>> flattened_ids(
    const std::vector<std::vector<std::int64_t>>& flattened_id_groups, std::int64_t partitions) {
  std::vector<std::vector<ProcessId>> out;
  for (const auto& flattened_id_group : flattened_id_groups) {
    std::vector<ProcessId> process_group;
    for (std::int64_t flattened_id : flattened_id_group)
      process_group.emplace_back(flattened_id / partitions, flattened_id % partitions);
    out.push_back(process_group);
  }
  return out;
}

/// The process groups of a collective node on the grid, by the spec's rules for its op.
/// Empty replica_groups name one group of every replica (or partition, or process); the -1
/// padding of all_reduce's rows names none.
inline StatusOr<std::vector<std::vector<ProcessId>>> process_groups(const Node& node,
                                                                   const ParallelOptions& grid) {
  const auto& a = node.attr<CollectiveAttrs>();
  const OpCode op = node.op;
  const bool partition_kind = a.channel_id > 0 && (op == OpCode::kAllToAll ||
                                                    op == OpCode::kCollectivePermute ||
                                                    op == OpCode::kCollectiveBroadcast);
  const bool flattened = a.channel_id > 0 && a.use_global_device_ids;
  const std::int64_t id_limit = flattened        ? grid.num_replicas * grid.num_partitions
                                : partition_kind ? grid.num_partitions
                                                 : grid.num_replicas;
  std::vector<std::vector<std::int64_t>> groups;
  for (std::size_t r = 0; r < a.group_count(); ++r) groups.push_back(a.group_ids(r));
  if (op == OpCode::kCollectivePermute) {
    // Every process named by a pair, per line of the grid, meets as one group.
    std::vector<std::int64_t> named;
    for (std::int64_t id : a.groups)
      if (std::find(named.begin(), named.end(), id) == named.end()) named.push_back(id);
    groups = {named};
    if (named.empty()) groups.clear();
  } else if (groups.empty()) {
    groups.emplace_back();
    for (std::int64_t id = 0; id < id_limit; ++id) groups.back().push_back(id);
  }
  for (const auto& g : groups)
    for (std::int64_t id : g)
      if (id >= id_limit)
        return invalid_argument_error(str_cat(op_name(op), ": group id ", id,
                                              " is not below the ", id_limit,
                                              flattened ? " processes" : partition_kind ? " partitions" : " replicas",
                                              " of the grid"));
  if (partition_kind) return cross_partition(groups, grid.num_replicas);
  if (op == OpCode::kCollectivePermute) return cross_replica(groups, grid.num_partitions);
  if (flattened) return flattened_ids(groups, grid.num_partitions);
  if (a.channel_id > 0 && op != OpCode::kAllToAll && op != OpCode::kCollectiveBroadcast)
    return cross_replica_and_partition(groups, grid.num_partitions);
  return cross_replica(groups, grid.num_partitions);
}

/// all_reduce of one array over the group's contributions: element by element, folding the
/// members in group order through `body`.
inline StatusOr<Literal> reduce_across(const Graph& body, std::span<const Literal* const> values,
                                       StatusOr<std::vector<Literal>> (*run)(const Graph&, std::span<const Literal* const>)) {
  Literal out(values[0]->shape());
  for (std::int64_t k = 0; k < out.element_count(); ++k) {
    Literal acc(Shape(out.dtype(), {}));
    copy_element(*values[0], k, acc, 0);
    for (std::size_t m = 1; m < values.size(); ++m) {
      Literal x(Shape(out.dtype(), {}));
      copy_element(*values[m], k, x, 0);
      const Literal* args[] = {&acc, &x};
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Literal> r,
                                 run(body, std::span<const Literal* const>(args, 2)));
      acc = std::move(r[0]);
    }
    copy_element(acc, 0, out, k);
  }
  return out;
}

/// Part `index` of `x` split into `parts` along `dim`.
inline Literal split_part(const Literal& x, std::int64_t dim, std::int64_t parts, std::int64_t index) {
  SliceAttrs s;
  std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
  const std::int64_t size = dims[static_cast<std::size_t>(dim)] / parts;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const bool split = static_cast<std::int64_t>(d) == dim;
    s.start_indices.push_back(split ? index * size : 0);
    s.limit_indices.push_back(split ? (index + 1) * size : dims[d]);
    s.strides.push_back(1);
  }
  dims[static_cast<std::size_t>(dim)] = size;
  return eval_slice(x, s, Shape(x.dtype(), dims));
}

/// replica_id, partition_id and the collectives, for the process of the calling thread.
/// `run` evaluates a region (the interpreter's graph walk).
inline StatusOr<std::vector<Literal>> eval_collective(
    const Node& node, std::span<const Literal* const> operands,
    StatusOr<std::vector<Literal>> (*run)(const Graph&, std::span<const Literal* const>)) {
  ProcessContext* process = current_process;
  if (process == nullptr)
    return failed_precondition_error(str_cat(
        op_name(node.op), ": runs only over a grid of processes (reference::evaluate_parallel)"));
  const ProcessId me = process->id;
  std::vector<Literal> out;
  if (node.op == OpCode::kReplicaId || node.op == OpCode::kPartitionId) {
    out.push_back(Literal::scalar(static_cast<std::uint32_t>(
        node.op == OpCode::kReplicaId ? me.first : me.second)));
    return out;
  }
  const ParallelOptions& grid = process->exchange->options();
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::vector<ProcessId>> groups, process_groups(node, grid));
  const std::vector<ProcessId>* group = nullptr;
  for (const auto& g : groups)
    if (std::find(g.begin(), g.end(), me) != g.end()) group = &g;
  const auto& a = node.attr<CollectiveAttrs>();
  if (group == nullptr) {
    // collective_permute and collective_broadcast give zeros to a process outside every
    // group; the other collectives need every process in one.
    if (node.op != OpCode::kCollectivePermute && node.op != OpCode::kCollectiveBroadcast)
      return invalid_argument_error(str_cat(op_name(node.op), ": process (", me.first, ", ",
                                            me.second, ") is in no process group"));
    for (const Shape& s : node.results) out.emplace_back(s);
    return out;
  }
  std::vector<Literal> mine;
  for (const Literal* l : operands) mine.push_back(*l);
  const std::int64_t count = process->rounds[*group]++;
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::vector<Literal>> all,
                             process->exchange->meet(*group, count, me, std::move(mine)));
  for (std::size_t m = 0; m < all.size(); ++m)
    for (std::size_t i = 0; i < operands.size(); ++i)
      if (all[m].size() != operands.size() ||
          !all[m][i].shape().same_type_and_dims(operands[i]->shape()))
        return invalid_argument_error(str_cat(
            op_name(node.op), ": process (", (*group)[m].first, ", ", (*group)[m].second,
            ") gives operand ", i, " as ", all[m].size() > i ? all[m][i].shape().to_string() : "nothing",
            " but process (", me.first, ", ", me.second, ") as ", operands[i]->shape()));
  const auto my_index = static_cast<std::int64_t>(
      std::find(group->begin(), group->end(), me) - group->begin());
  auto column = [&](std::size_t i) {
    std::vector<const Literal*> c;
    for (const auto& v : all) c.push_back(&v[i]);
    return c;
  };
  const auto n = static_cast<std::int64_t>(group->size());
  switch (node.op) {
    case OpCode::kAllReduce:
      for (std::size_t i = 0; i < operands.size(); ++i) {
        PJRT_LITE_ASSIGN_OR_RETURN(Literal r, reduce_across(node.bodies[0], column(i), run));
        out.push_back(std::move(r));
      }
      return out;
    case OpCode::kReduceScatter: {
      if (n != a.group_size * a.num_partitions)
        return invalid_argument_error(str_cat("reduce_scatter: the process group has ", n,
                                              " members but the result is one of ", a.group_size * a.num_partitions,
                                              " parts"));
      PJRT_LITE_ASSIGN_OR_RETURN(Literal r, reduce_across(node.bodies[0], column(0), run));
      out.push_back(split_part(r, a.dimension, n, my_index));
      return out;
    }
    case OpCode::kAllGather:
      if (n != a.group_size * a.num_partitions)
        return invalid_argument_error(str_cat("all_gather: the process group has ", n,
                                              " members but the result gathers ", a.group_size * a.num_partitions));
      for (std::size_t i = 0; i < operands.size(); ++i)
        out.push_back(eval_concatenate(column(i), ConcatenateAttrs{a.dimension}, node.results[i]));
      return out;
    case OpCode::kAllToAll:
      if (n != a.split_count)
        return invalid_argument_error(str_cat("all_to_all: the process group has ", n,
                                              " members but split_count is ", a.split_count));
      for (std::size_t i = 0; i < operands.size(); ++i) {
        std::vector<Literal> parts;
        for (const auto& v : all) parts.push_back(split_part(v[i], a.dimension, n, my_index));
        std::vector<const Literal*> pointers;
        for (const Literal& p : parts) pointers.push_back(&p);
        out.push_back(eval_concatenate(pointers, ConcatenateAttrs{a.concat_dimension}, node.results[i]));
      }
      return out;
    case OpCode::kCollectivePermute: {
      out.emplace_back(node.results[0]);
      // The pairs name replica (or partition) ids; the group lists processes of my line.
      const bool partitions = a.channel_id > 0;
      const std::int64_t my_id = partitions ? me.second : me.first;
      for (std::size_t r = 0; r < a.group_count(); ++r)
        if (a.group(r)[1] == my_id) {
          const std::int64_t source = a.group(r)[0];
          for (std::size_t m = 0; m < group->size(); ++m)
            if ((partitions ? (*group)[m].second : (*group)[m].first) == source) out[0] = all[m][0];
        }
      return out;
    }
    case OpCode::kCollectiveBroadcast:
      for (std::size_t i = 0; i < node.results.size(); ++i) {
        // The source: the group's first member, or the one at this process's root[i].
        std::int64_t source = 0;
        if (a.has_dynamic_root) {
          source = operands.back()->data<std::int32_t>()[i];
          if (source < 0 || source >= n)
            return invalid_argument_error(str_cat("collective_broadcast: root ", i, " of process (", me.first,
                                                  ", ", me.second, ") is ", source, ", outside its group of ", n));
        }
        out.push_back(all[static_cast<std::size_t>(source)][i]);
      }
      return out;
    default: return invalid_argument_error(str_cat(op_name(node.op), ": not a collective"));
  }
}

/// send, recv, infeed and outfeed, for the process of the calling thread. A send posts a copy
/// of its data and goes on; a recv waits for the oldest value sent to it on its channel. With
/// source_target_pairs, the ids are replica ids when channel_id <= 0 and partition ids
/// otherwise (the other coordinate is the process's own), as collective_permute's: a process
/// that is no source sends nothing, and one that is no target receives zeros. Without pairs,
/// any process's send reaches any process's recv on the channel, in the order sent.
inline StatusOr<std::vector<Literal>> eval_token_op(const Node& node, std::span<const Literal* const> operands) {
  ProcessContext* process = current_process;
  if (process == nullptr)
    return failed_precondition_error(str_cat(
        op_name(node.op), ": runs only over a grid of processes (reference::evaluate_parallel)"));
  const ProcessId me = process->id;
  const ParallelOptions& grid = process->exchange->options();
  const auto index = static_cast<std::size_t>(me.first * grid.num_partitions + me.second);
  const auto& a = node.attr<ChannelAttrs>();
  std::vector<Literal> out;
  const bool by_partition = a.channel_id > 0;
  const std::int64_t my_id = by_partition ? me.second : me.first;
  for (std::int64_t id : a.source_target_pairs)
    if (id >= (by_partition ? grid.num_partitions : grid.num_replicas))
      return invalid_argument_error(str_cat(op_name(node.op), ": source_target_pairs names ",
                                            by_partition ? "partition " : "replica ", id, " on a grid of ",
                                            grid.num_replicas, " x ", grid.num_partitions));
  auto process_of = [&](std::int64_t id) { return by_partition ? ProcessId(me.first, id) : ProcessId(id, me.second); };
  auto check_payload = [&](const std::vector<Literal>& values) -> Status {
    bool same = values.size() == a.payload.size();
    for (std::size_t i = 0; same && i < values.size(); ++i) same = values[i].shape().same_type_and_dims(a.payload[i]);
    if (same) return ok_status();
    std::string got, want;
    for (const Literal& v : values) got += str_cat(got.empty() ? "" : ", ", v.shape());
    for (const Shape& s : a.payload) want += str_cat(want.empty() ? "" : ", ", s);
    return invalid_argument_error(str_cat(op_name(node.op), ": process (", me.first, ", ", me.second, ") got (", got,
                                          ") but its types are (", want, ")"));
  };
  switch (node.op) {
    case OpCode::kSend:
    case OpCode::kOutfeed: {
      std::vector<Literal> data;
      for (std::size_t i = 0; i + 1 < operands.size(); ++i) data.push_back(*operands[i]);
      if (node.op == OpCode::kOutfeed) {
        process->exchange->put_outfeed(index, std::move(data));
      } else if (a.source_target_pairs.empty()) {
        process->exchange->post(a.channel_id, kAnyProcess, std::move(data));
      } else {
        for (std::size_t r = 0; r + 1 < a.source_target_pairs.size(); r += 2)
          if (a.source_target_pairs[r] == my_id)
            process->exchange->post(a.channel_id, process_of(a.source_target_pairs[r + 1]), std::move(data));
      }
      out.emplace_back(Shape(DType::kToken, {}));
      return out;
    }
    case OpCode::kRecv:
    case OpCode::kInfeed: {
      bool target = node.op == OpCode::kInfeed || a.source_target_pairs.empty();
      for (std::size_t r = 0; r + 1 < a.source_target_pairs.size(); r += 2) target |= a.source_target_pairs[r + 1] == my_id;
      if (target) {
        PJRT_LITE_ASSIGN_OR_RETURN(
            out, node.op == OpCode::kInfeed ? process->exchange->next_infeed(index)
                                           : process->exchange->take(a.channel_id,
                                                                     a.source_target_pairs.empty() ? kAnyProcess : me, me));
        PJRT_LITE_RETURN_IF_ERROR(check_payload(out));
      } else {
        for (const Shape& s : a.payload) out.emplace_back(s);
      }
      out.emplace_back(Shape(DType::kToken, {}));
      return out;
    }
    default: return invalid_argument_error(str_cat(op_name(node.op), ": not a send, recv, infeed or outfeed"));
  }
}

}  // namespace detail

}  // namespace pjrt_lite::reference
