#pragma once
// The SPMD partitioner: a program written for whole values, with shardings on its arguments,
// results and some of its values (ShardingPlan), becomes the one program every partition
// runs on its parts of the values, with the collectives that exchange what a part needs.
//
//   ShardingPlan plan;                   // what the StableHLO reader records (module.hpp)
//   plan.num_partitions = 2;
//   plan.arguments = {Sharding::tiled({2, 1}), std::nullopt};
//   StatusOr<PartitionedProgram> p = partition(graph, plan);
//   // p->graph takes f32[4,16] (half of f32[8,16]) and the whole second argument.
//
// Partitioned natively, each partition computing only its part:
//   - element-wise ops (operands brought to the sharding of the most-split one);
//   - broadcast_in_dim, transpose, and reshape where a split dimension stays the major one
//     of its group of merged or split dimensions;
//   - dot_general split on batch, free or contracting dimensions (contracting: partial sums
//     then an all_reduce, or a reduce_scatter when the product is asked to be split along a
//     dimension the partial sums' groups can split);
//   - reduce over split dimensions when its body is add, multiply, max, min, and or or with
//     its identity as the initial value (partial reductions, then an all_reduce with the
//     body), over unsplit dimensions with any body;
//   - convolution split on the batch, the output feature or the input feature dimension
//     (the last with an all_reduce); spatial dimensions are gathered first.
// Every other op gathers its split operands whole (all_gather along each split dimension),
// runs whole on every partition, and gives a replicated result: correct, slower; the
// gathered ops are listed in PartitionedProgram::gathered. Manual values (the body of a
// shard_map) are each partition's own and their ops, collectives included, run as written.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/sharding.hpp"
#include "pjrt_lite/transforms/dce.hpp"

namespace pjrt_lite::inline v0_1 {

/// The shardings a program over `num_partitions` partitions carries.
struct ShardingPlan {
  std::int64_t num_partitions = 1;
  /// Per parameter and per output; none (or an empty list) is replicated.
  std::vector<std::optional<Sharding>> arguments = {};
  std::vector<std::optional<Sharding>> results = {};
  /// Values constrained to a sharding where they are made (XLA's @Sharding custom call,
  /// Shardy's sharding_constraint).
  std::vector<std::pair<Value, Sharding>> constraints = {};
  /// Nodes whose result is this partition's part of their operand 0 under `sharding`, a
  /// manual value (shard_map's entry: SPMDFullToShardShape). In the graph they take the part
  /// with a dynamic_slice at the partition's offsets, so the unpartitioned graph means the
  /// same on every partition.
  struct Entry {
    std::int32_t node = -1;
    Sharding sharding;
  };
  std::vector<Entry> to_manual = {};
  /// Nodes whose result is the whole value of which `part` (a manual value) is this
  /// partition's part under `sharding` (shard_map's exit: SPMDShardToFullShape). In the
  /// graph they are the last of the all_gathers that assemble it.
  struct Exit {
    std::int32_t node = -1;
    Value part;
    Sharding sharding;
  };
  std::vector<Exit> from_manual = {};

  /// Nothing is split: every argument, result and constrained value whole, no manual part.
  [[nodiscard]] bool trivial() const {
    auto whole = [](const std::vector<std::optional<Sharding>>& l) {
      return std::all_of(l.begin(), l.end(), [](const auto& s) { return !s || s->is_whole(); });
    };
    return whole(arguments) && whole(results) && to_manual.empty() && from_manual.empty() &&
           std::all_of(constraints.begin(), constraints.end(), [](const auto& c) { return c.second.is_whole(); });
  }
};

/// What partition() makes: the program each partition runs, the shardings of its parameters
/// and outputs (kManual for an output that is each partition's own), and the ops that
/// gathered split operands whole.
struct PartitionedProgram {
  Graph graph;
  std::vector<Sharding> parameter_shardings;
  std::vector<Sharding> output_shardings;
  std::vector<std::string> gathered;
};

namespace detail {

/// Every partition's position in a tiled sharding's array, or all zeros when it is whole.
inline std::vector<std::vector<std::int64_t>> positions_of(const Sharding& s, std::int64_t n) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::int64_t p = 0; p < n; ++p) {
    std::vector<std::int64_t> pos = s.kind == Sharding::Kind::kTiled ? s.position(p) : std::vector<std::int64_t>{};
    if (s.kind == Sharding::Kind::kTiled) pos.pop_back();  // the copy number holds nothing
    out.push_back(std::move(pos));
  }
  return out;
}

/// Partitions hold the same parts under a and b (both for values of one rank).
inline bool same_parts(const Sharding& a, const Sharding& b, std::int64_t n) {
  if (a.is_whole() || b.is_whole()) return a.is_whole() == b.is_whole();
  return a.tiles == b.tiles && positions_of(a, n) == positions_of(b, n);
}

/// The sharding of a value of rank map.size() whose dimension j is cut as dimension map[j]
/// of `s` is (-1: not cut), each partition keeping its position along the mapped dimensions;
/// the positions along the others become copies. Requires a map that names each dimension
/// of s at most once.
inline Sharding project(const Sharding& s, const std::vector<std::int64_t>& map, std::int64_t n) {
  std::vector<std::int64_t> tiles(map.size(), 1);
  bool cut = false;
  for (std::size_t j = 0; j < map.size(); ++j)
    if (map[j] >= 0) {
      tiles[j] = s.tiles_at(static_cast<std::size_t>(map[j]));
      cut = cut || tiles[j] > 1;
    }
  if (!cut || s.kind != Sharding::Kind::kTiled) return Sharding::replicated();
  std::int64_t count = 1;
  for (std::int64_t t : tiles) count *= t;
  Sharding out = Sharding::tiled(tiles, std::vector<std::int64_t>(static_cast<std::size_t>(n)), n / count);
  std::vector<bool> mapped(s.tiles.size(), false);
  for (std::int64_t m : map)
    if (m >= 0) mapped[static_cast<std::size_t>(m)] = true;
  for (std::int64_t p = 0; p < n; ++p) {
    const std::vector<std::int64_t> pos = s.position(p);
    std::int64_t flat = 0, copy = 0;
    for (std::size_t j = 0; j < map.size(); ++j)
      flat = flat * tiles[j] + (map[j] >= 0 ? pos[static_cast<std::size_t>(map[j])] : 0);
    for (std::size_t d = 0; d < s.tiles.size(); ++d)
      if (!mapped[d]) copy = copy * s.tiles[d] + pos[d];
    copy = copy * s.replication + pos.back();
    out.devices[static_cast<std::size_t>(flat * out.replication + copy)] = p;
  }
  return out;
}

/// The groups of partitions that differ only in their positions along `dims` of s, each
/// ordered by those positions, flattened (rows of the product of their tile counts).
inline std::pair<std::vector<std::int64_t>, std::int64_t> groups_along(const Sharding& s,
                                                                        const std::vector<std::size_t>& dims,
                                                                        std::int64_t n) {
  std::int64_t size = 1;
  for (std::size_t d : dims) size *= s.tiles[d];
  std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> rows;
  for (std::int64_t p = 0; p < n; ++p) {
    std::vector<std::int64_t> key = s.position(p);
    std::int64_t at = 0;
    for (std::size_t d : dims) {
      at = at * s.tiles[d] + key[d];
      key[d] = 0;
    }
    auto& row = rows[key];
    row.resize(static_cast<std::size_t>(size), -1);
    row[static_cast<std::size_t>(at)] = p;
  }
  std::vector<std::int64_t> flat;
  for (const auto& [key, row] : rows) flat.insert(flat.end(), row.begin(), row.end());
  return {std::move(flat), size};
}

/// A collective among groups of partitions named by their ids (flattened ids, as
/// use_global_device_ids reads them), on a channel of its own.
inline CollectiveAttrs partition_collective(std::vector<std::int64_t> groups, std::int64_t size,
                                            std::int64_t& channel) {
  CollectiveAttrs a;
  a.groups = std::move(groups);
  a.group_size = size;
  a.channel_id = channel++;
  a.channel_type = 1;
  a.use_global_device_ids = true;
  return a;
}

}  // namespace detail

/// This partition's offset along each dimension of a part of shape `part` under s.
inline std::vector<Value> partition_offsets(GraphBuilder& b, const Sharding& s, const Shape& part, std::int64_t n) {
  std::vector<Value> out;
  Value position;
  for (std::size_t d = 0; d < static_cast<std::size_t>(part.rank()); ++d) {
    if (s.tiles_at(d) == 1) {
      out.push_back(b.constant(std::int32_t{0}));
      continue;
    }
    if (!position.valid()) position = b.convert(b.partition_id(), DType::kS32);
    std::vector<std::int32_t> table(static_cast<std::size_t>(n));
    for (std::int64_t p = 0; p < n; ++p)
      table[static_cast<std::size_t>(p)] = static_cast<std::int32_t>(s.position(p)[d] * part.dims()[d]);
    Literal t = Literal::from_span<std::int32_t>(table, {n}).value();
    out.push_back(b.reshape(b.dynamic_slice(b.constant(std::move(t)), {position}, {1}), {}));
  }
  return out;
}

/// This partition's part under s (over n partitions) of a whole value of shape `global`:
/// a dynamic_slice at the partition's offsets.
inline StatusOr<Value> take_part(GraphBuilder& b, Value whole, const Sharding& s, const Shape& global,
                                       std::int64_t n) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape part, shard_shape(global, s));
  return b.dynamic_slice(whole, partition_offsets(b, s, part, n),
                         std::vector<std::int64_t>(part.dims().begin(), part.dims().end()));
}

/// The whole value from this partition's part under s: an all_gather along each split
/// dimension among the partitions that differ only there (channel ids from `channel` on).
inline Value gather_whole(GraphBuilder& b, Value part, const Sharding& s, std::int64_t n,
                               std::int64_t& channel) {
  for (std::size_t d = 0; d < s.tiles.size() && s.kind == Sharding::Kind::kTiled; ++d) {
    if (s.tiles[d] == 1) continue;
    auto [groups, size] = detail::groups_along(s, {d}, n);
    CollectiveAttrs a = detail::partition_collective(std::move(groups), size, channel);
    a.dimension = static_cast<std::int64_t>(d);
    part = b.all_gather({part}, std::move(a)).front();
  }
  return part;
}

namespace detail {

/// A value of the partitioned program: its sharding, or manual.
struct PartValue {
  Value v;
  Sharding s;
};

class Partitioner {
 public:
  Partitioner(const Graph& g, const ShardingPlan& plan) : g_(g), plan_(plan), n_(plan.num_partitions), b_(g.name()) {}

  StatusOr<PartitionedProgram> run() {
    if (n_ < 1) return invalid_argument_error(str_cat("partition: ", n_, " partitions"));
    for (const auto& c : plan_.constraints) constraint_[{c.first.node, c.first.index}] = c.second;
    for (std::size_t k = 0; k < g_.outputs().size() && k < plan_.results.size(); ++k)
      if (plan_.results[k]) desired_[{g_.outputs()[k].node, g_.outputs()[k].index}] = *plan_.results[k];
    for (const auto& [key, s] : constraint_) desired_[key] = s;
    for (const auto& e : plan_.to_manual) to_manual_[e.node] = &e;
    for (const auto& e : plan_.from_manual) from_manual_[e.node] = &e;
    PartitionedProgram out;
    out.parameter_shardings.resize(static_cast<std::size_t>(g_.num_parameters()));
    values_.resize(static_cast<std::size_t>(g_.num_nodes()));
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i) {
      PJRT_LITE_RETURN_IF_ERROR(emit(i, out));
      if (!b_.ok()) return b_.status().with_context(str_cat("partition: %", i, " (", op_name(g_.node(i).op), ")"));
    }
    std::vector<Value> outputs;
    for (std::size_t k = 0; k < g_.outputs().size(); ++k) {
      const Value o = g_.outputs()[k];
      PartValue pv = at(o);
      Sharding want = k < plan_.results.size() && plan_.results[k] ? *plan_.results[k] : Sharding::replicated();
      if (pv.s.is_manual()) {
        outputs.push_back(pv.v);
        out.output_shardings.push_back(Sharding::manual());
        continue;
      }
      PJRT_LITE_RETURN_IF_ERROR(want.check(static_cast<std::size_t>(g_.shape(o).rank()), n_)
                                    .with_context(str_cat("partition: result ", k)));
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, reshard(pv, want, g_.shape(o)));
      outputs.push_back(v);
      out.output_shardings.push_back(want.is_whole() ? Sharding::replicated() : want);
    }
    PJRT_LITE_ASSIGN_OR_RETURN(Graph built, b_.build(outputs));
    PJRT_LITE_ASSIGN_OR_RETURN(out.graph, dead_code_elimination(built));
    out.gathered = std::move(gathered_);
    return out;
  }

 private:
  PartValue at(Value v) const { return values_[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]; }

  // ---- Moving data between shardings ---------------------------------------------------

  StatusOr<Value> slice_part(Value whole, const Sharding& s, const Shape& global) {
    return take_part(b_, whole, s, global, n_);
  }
  Value gather_whole(Value part, const Sharding& s) { return pjrt_lite::gather_whole(b_, part, s, n_, next_channel_); }
  /// The value `from` held under `to` instead.
  StatusOr<Value> reshard(const PartValue& from, const Sharding& to, const Shape& global) {
    if (from.s.is_manual())
      return unimplemented_error("partition: a manual value used as a whole one without SPMDShardToFullShape");
    if (same_parts(from.s, to, n_)) return from.v;
    const Value whole = from.s.is_whole() ? from.v : gather_whole(from.v, from.s);
    if (to.is_whole()) return whole;
    return slice_part(whole, to, global);
  }
  StatusOr<Value> reshard(Value global_value, const Sharding& to) {
    const PartValue pv = at(global_value);
    const Node& node = g_.node(global_value.node);
    if (pv.s.is_whole() && to.kind == Sharding::Kind::kTiled && !to.is_whole() &&
        node.op == OpCode::kBroadcastInDim && !at(node.operands[0]).s.is_manual()) {
      // A whole broadcast asked for in parts: broadcast the operand's part to the part's
      // shape rather than slicing the whole broadcast (a bias added to split activations).
      const auto& a = node.attr<BroadcastInDimAttrs>();
      const Shape& in = g_.shape(node.operands[0]);
      std::vector<std::int64_t> map(static_cast<std::size_t>(in.rank()), -1);
      for (std::size_t k = 0; k < map.size(); ++k)
        if (in.dims()[k] == a.dims[static_cast<std::size_t>(a.broadcast_dimensions[k])]) map[k] = a.broadcast_dimensions[k];
      PJRT_LITE_ASSIGN_OR_RETURN(Value part, reshard(at(node.operands[0]), project(to, map, n_), in));
      PJRT_LITE_ASSIGN_OR_RETURN(Shape out, shard_shape(node.shape(), to));
      return b_.op(OpCode::kBroadcastInDim, {part},
                   BroadcastInDimAttrs{std::vector<std::int64_t>(out.dims().begin(), out.dims().end()),
                                       a.broadcast_dimensions})
          .front();
    }
    return reshard(pv, to, g_.shape(global_value));
  }
  /// all_reduce of a partial result over the partitions that differ along `dims` of s.
  Value sum_over(Value partial, const Sharding& s, const std::vector<std::size_t>& dims, Graph body) {
    auto [groups, size] = groups_along(s, dims, n_);
    return b_.all_reduce({partial}, std::move(body), partition_collective(std::move(groups), size, next_channel_)).front();
  }

  /// Partial results (one per partition of each group along `cut` of `lead`) combined with
  /// `op`: a reduce_scatter when the value is asked to be split along a result dimension the
  /// groups can split (each partition keeps its part of the sum), else an all_reduce. `map`
  /// gives the result dimensions' places in `lead`.
  StatusOr<PartValue> combine(const Node& node, Value partial, const Sharding& lead, const std::vector<std::size_t>& cut,
                              OpCode op, const std::vector<std::int64_t>& map) {
    const Sharding base = project(lead, map, n_);
    PJRT_LITE_ASSIGN_OR_RETURN(Graph body, make_binary_body(op, node.shape().dtype()));
    auto [groups, size] = groups_along(lead, cut, n_);
    const auto want = desired_.find({current_, 0});
    if (want != desired_.end() && !want->second.is_whole() && want->second.kind == Sharding::Kind::kTiled) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape part, shard_shape(node.shape(), base));
      for (std::size_t d = 0; d < map.size(); ++d) {
        if (base.tiles_at(d) != 1 || part.dims()[d] % size != 0) continue;
        const Sharding scattered = split_by_groups(base, d, groups, size);
        if (!same_parts(scattered, want->second, n_)) continue;
        CollectiveAttrs a = partition_collective(groups, size, next_channel_);
        a.dimension = static_cast<std::int64_t>(d);
        return PartValue{b_.reduce_scatter(partial, std::move(body), std::move(a)), scattered};
      }
    }
    return PartValue{sum_over(partial, lead, cut, std::move(body)), base};
  }
  /// `base` with dimension d (whole in base) split among the members of each group, in
  /// their order.
  Sharding split_by_groups(const Sharding& base, std::size_t d, const std::vector<std::int64_t>& groups,
                           std::int64_t size) const {
    std::vector<std::int64_t> tiles(base.kind == Sharding::Kind::kTiled ? base.tiles : std::vector<std::int64_t>());
    tiles.resize(std::max(tiles.size(), d + 1), 1);
    tiles[d] = size;
    std::int64_t count = 1;
    for (std::int64_t t : tiles) count *= t;
    Sharding out = Sharding::tiled(tiles, std::vector<std::int64_t>(static_cast<std::size_t>(n_), -1), n_ / count);
    std::map<std::int64_t, std::int64_t> copies;
    for (std::int64_t p = 0; p < n_; ++p) {
      std::vector<std::int64_t> pos =
          base.kind == Sharding::Kind::kTiled ? base.position(p) : std::vector<std::int64_t>(tiles.size() + 1, 0);
      pos.pop_back();
      pos.resize(tiles.size(), 0);
      const auto at = std::find(groups.begin(), groups.end(), p) - groups.begin();
      pos[d] = at % size;
      std::int64_t flat = 0;
      for (std::size_t j = 0; j < tiles.size(); ++j) flat = flat * tiles[j] + pos[j];
      out.devices[static_cast<std::size_t>(flat * out.replication + copies[flat]++)] = p;
    }
    return out;
  }

  // ---- One node ------------------------------------------------------------------------

  Status emit(std::int64_t i, PartitionedProgram& out) {
    const Node& node = g_.node(i);
    auto& slot = values_[static_cast<std::size_t>(i)];
    const auto index = static_cast<std::int32_t>(i);
    current_ = index;
    if (auto it = from_manual_.find(index); it != from_manual_.end()) {
      PartValue part = at(it->second->part);
      slot = {PartValue{part.v, it->second->sharding}};
      return ok_status();
    }
    if (auto it = to_manual_.find(index); it != to_manual_.end()) {
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, reshard(node.operands.at(0), it->second->sharding));
      slot = {PartValue{v, Sharding::manual()}};
      return ok_status();
    }
    if (node.op == OpCode::kParameter) {
      const std::int64_t number = node.attr<ParameterAttrs>().number;
      const auto k = static_cast<std::size_t>(number);
      Sharding s = k < plan_.arguments.size() && plan_.arguments[k] ? *plan_.arguments[k] : Sharding::replicated();
      PJRT_LITE_RETURN_IF_ERROR(s.check(static_cast<std::size_t>(node.shape().rank()), n_)
                                    .with_context(str_cat("partition: argument ", number)));
      if (s.is_whole()) s = Sharding::replicated();
      PJRT_LITE_ASSIGN_OR_RETURN(Shape part, shard_shape(node.shape(), s));
      slot = {PartValue{b_.parameter(number, part), s}};
      out.parameter_shardings[k] = s;
    } else if (std::any_of(node.operands.begin(), node.operands.end(),
                           [&](Value v) { return at(v).s.is_manual(); }) ||
               is_collective(node.op) || is_process_position(node.op)) {
      PJRT_LITE_RETURN_IF_ERROR(emit_manual(node, slot));
    } else if (is_elementwise(node.op)) {
      PJRT_LITE_RETURN_IF_ERROR(emit_elementwise(node, slot));
    } else if (node.op == OpCode::kBroadcastInDim) {
      const auto& a = node.attr<BroadcastInDimAttrs>();
      const Shape& in = g_.shape(node.operands[0]);
      std::vector<std::int64_t> map(a.dims.size(), -1);
      for (std::size_t k = 0; k < a.broadcast_dimensions.size(); ++k)
        if (in.dims()[k] == a.dims[static_cast<std::size_t>(a.broadcast_dimensions[k])])
          map[static_cast<std::size_t>(a.broadcast_dimensions[k])] = static_cast<std::int64_t>(k);
      PJRT_LITE_RETURN_IF_ERROR(emit_mapped(node, slot, map));
    } else if (node.op == OpCode::kTranspose) {
      PJRT_LITE_RETURN_IF_ERROR(emit_mapped(node, slot, node.attr<TransposeAttrs>().permutation));
    } else if (node.op == OpCode::kReshape) {
      PJRT_LITE_RETURN_IF_ERROR(emit_reshape(node, slot));
    } else if (node.op == OpCode::kDotGeneral) {
      PJRT_LITE_RETURN_IF_ERROR(emit_dot(node, slot));
    } else if (node.op == OpCode::kReduce) {
      PJRT_LITE_RETURN_IF_ERROR(emit_reduce(node, slot));
    } else if (node.op == OpCode::kConvolution) {
      PJRT_LITE_RETURN_IF_ERROR(emit_convolution(node, slot));
    } else {
      PJRT_LITE_RETURN_IF_ERROR(emit_whole(node, slot));
    }
    for (std::size_t r = 0; r < slot.size(); ++r) {
      auto c = constraint_.find({index, static_cast<std::int32_t>(r)});
      if (c == constraint_.end() || c->second.is_manual() || slot[r].s.is_manual()) continue;
      const Shape& global = node.shape(r);
      PJRT_LITE_RETURN_IF_ERROR(c->second.check(static_cast<std::size_t>(global.rank()), n_)
                                    .with_context(str_cat("partition: the sharding constraint on %", i)));
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, reshard(slot[r], c->second, global));
      slot[r] = PartValue{v, c->second.is_whole() ? Sharding::replicated() : c->second};
    }
    return ok_status();
  }

  /// The op on local values with its own attributes and bodies; results `shardings`.
  void add(const Node& node, const std::vector<Value>& operands, std::vector<PartValue>& slot,
           const std::vector<Sharding>& shardings) {
    std::vector<Value> results = b_.op(node.op, operands, node.attrs, node.bodies);
    slot.clear();
    for (std::size_t r = 0; r < results.size(); ++r)
      slot.push_back(PartValue{results[r], r < shardings.size() ? shardings[r] : shardings.back()});
  }
  /// The same op with `attrs` (its shape attributes given for the parts).
  void add(const Node& node, const std::vector<Value>& operands, std::vector<PartValue>& slot,
           const Sharding& s, Attributes attrs) {
    Value r = b_.op(node.op, operands, std::move(attrs), node.bodies).front();
    slot = {PartValue{r, s}};
  }

  /// Each partition's own values, and whole ones, in an op that runs as written.
  Status emit_manual(const Node& node, std::vector<PartValue>& slot) {
    std::vector<Value> operands;
    for (Value v : node.operands) {
      const PartValue pv = at(v);
      if (pv.s.is_manual()) {
        operands.push_back(pv.v);
      } else {
        PJRT_LITE_ASSIGN_OR_RETURN(Value w, reshard(pv, Sharding::replicated(), g_.shape(v)));
        operands.push_back(w);
      }
    }
    add(node, operands, slot, {Sharding::manual()});
    return ok_status();
  }

  /// Every operand whole, the op as written, whole results.
  Status emit_whole(const Node& node, std::vector<PartValue>& slot) {
    std::vector<Value> operands;
    bool gathered = false;
    for (Value v : node.operands) {
      const PartValue pv = at(v);
      gathered = gathered || !pv.s.is_whole();
      PJRT_LITE_ASSIGN_OR_RETURN(Value w, reshard(pv, Sharding::replicated(), g_.shape(v)));
      operands.push_back(w);
    }
    if (gathered) gathered_.emplace_back(op_name(node.op));
    add(node, operands, slot, {Sharding::replicated()});
    return ok_status();
  }

  Status emit_elementwise(const Node& node, std::vector<PartValue>& slot) {
    const std::int64_t rank = node.shape().rank();
    Sharding target = Sharding::replicated();
    for (Value v : node.operands)
      if (g_.shape(v).rank() == rank && at(v).s.tile_count() > target.tile_count()) target = at(v).s;
    std::vector<Value> operands;
    for (Value v : node.operands) {
      if (g_.shape(v).rank() != rank) {
        PJRT_LITE_ASSIGN_OR_RETURN(Value w, reshard(v, Sharding::replicated()));
        operands.push_back(w);
      } else {
        PJRT_LITE_ASSIGN_OR_RETURN(Value w, reshard(v, target));
        operands.push_back(w);
      }
    }
    add(node, operands, slot, {target});
    return ok_status();
  }

  /// The part of each result dimension's shape under s.
  StatusOr<Attributes> part_attrs(const Node& node, const Sharding& s) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape part, shard_shape(node.shape(), s));
    std::vector<std::int64_t> dims(part.dims().begin(), part.dims().end());
    Attributes attrs = node.attrs;
    if (auto* b = std::get_if<BroadcastInDimAttrs>(&attrs)) b->dims = dims;
    if (auto* r = std::get_if<ReshapeAttrs>(&attrs)) r->dims = dims;
    return attrs;
  }

  /// An op whose result dimension j is operand dimension map[j] (-1: none): the operand as
  /// it is, the result cut the same way.
  Status emit_mapped(const Node& node, std::vector<PartValue>& slot, const std::vector<std::int64_t>& map) {
    const PartValue in = at(node.operands[0]);
    const Sharding s = project(in.s, map, n_);
    // Cuts of dimensions the result does not keep are gathered first.
    std::vector<std::int64_t> back(static_cast<std::size_t>(g_.shape(node.operands[0]).rank()), -1);
    for (std::size_t j = 0; j < map.size(); ++j)
      if (map[j] >= 0) back[static_cast<std::size_t>(map[j])] = map[j];
    const Sharding kept = project(in.s, back, n_);
    if (!same_parts(kept, in.s, n_)) gathered_.emplace_back(op_name(node.op));
    PJRT_LITE_ASSIGN_OR_RETURN(Value v, reshard(in, kept, g_.shape(node.operands[0])));
    PJRT_LITE_ASSIGN_OR_RETURN(Attributes attrs, part_attrs(node, s));
    add(node, {v}, slot, s, std::move(attrs));
    return ok_status();
  }

  /// reshape: each group of input dimensions that becomes a group of output dimensions with
  /// the same element count may be cut along its major dimension, which then cuts the major
  /// dimension of the output group.
  Status emit_reshape(const Node& node, std::vector<PartValue>& slot) {
    const Shape& in = g_.shape(node.operands[0]);
    const Shape& outs = node.shape();
    const PartValue pv = at(node.operands[0]);
    std::vector<std::int64_t> map(static_cast<std::size_t>(outs.rank()), -1);
    bool ok = true;
    std::size_t i = 0, o = 0;
    const auto ri = static_cast<std::size_t>(in.rank()), ro = static_cast<std::size_t>(outs.rank());
    while (i < ri || o < ro) {
      // One group: dimensions [i, i2) and [o, o2) with equal products.
      std::size_t i2 = i, o2 = o;
      std::int64_t pi = 1, po = 1;
      if (i2 < ri) pi *= in.dims()[i2++];
      if (o2 < ro) po *= outs.dims()[o2++];
      while (pi != po) {
        if (pi < po && i2 < ri) pi *= in.dims()[i2++];
        else if (po < pi && o2 < ro) po *= outs.dims()[o2++];
        else break;
      }
      // Trailing dimensions of size 1 join the group.
      while (i2 < ri && in.dims()[i2] == 1 && (o2 >= ro || outs.dims()[o2] != 1)) ++i2;
      while (o2 < ro && outs.dims()[o2] == 1 && (i2 >= ri || in.dims()[i2] != 1)) ++o2;
      if (pi != po) {
        ok = false;
        break;
      }
      std::size_t major_in = i, major_out = o;
      while (major_in < i2 && in.dims()[major_in] == 1) ++major_in;
      while (major_out < o2 && outs.dims()[major_out] == 1) ++major_out;
      for (std::size_t d = i; d < i2; ++d) {
        const std::int64_t t = pv.s.tiles_at(d);
        if (t == 1) continue;
        if (d != major_in || major_out >= o2 || outs.dims()[major_out] % t != 0) ok = false;
        else map[major_out] = static_cast<std::int64_t>(d);
      }
      if (i2 == i && o2 == o) break;
      i = i2;
      o = o2;
    }
    if (!ok || pv.s.is_whole()) {
      if (!pv.s.is_whole()) gathered_.emplace_back("reshape");
      PJRT_LITE_ASSIGN_OR_RETURN(Value w, reshard(pv, Sharding::replicated(), in));
      add(node, {w}, slot, {Sharding::replicated()});
      return ok_status();
    }
    const Sharding s = project(pv.s, map, n_);
    PJRT_LITE_ASSIGN_OR_RETURN(Attributes attrs, part_attrs(node, s));
    add(node, {pv.v}, slot, s, std::move(attrs));
    return ok_status();
  }

  /// dot_general: the more-cut operand leads; the other is brought to the same cuts of the
  /// batch and contracting dimensions it shares (its free dimensions whole), the parts
  /// multiply, and partial sums over cut contracting dimensions are all-reduced.
  Status emit_dot(const Node& node, std::vector<PartValue>& slot) {
    const auto& dn = node.attr<DotDimensionNumbers>();
    const Value lhs = node.operands[0], rhs = node.operands[1];
    const std::int64_t rl = g_.shape(lhs).rank(), rr = g_.shape(rhs).rank();
    auto free_dims = [](std::int64_t rank, const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
      std::vector<std::int64_t> f;
      for (std::int64_t d = 0; d < rank; ++d)
        if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) f.push_back(d);
      return f;
    };
    const std::vector<std::int64_t> fl = free_dims(rl, dn.lhs_batching_dimensions, dn.lhs_contracting_dimensions);
    const std::vector<std::int64_t> fr = free_dims(rr, dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions);
    if (is_complex(node.shape().dtype()) || node.shape().dtype() == DType::kPred) return emit_whole(node, slot);
    const bool lead_lhs = at(lhs).s.tile_count() >= at(rhs).s.tile_count();
    const PartValue lead = at(lead_lhs ? lhs : rhs);
    if (lead.s.is_whole() && at(lead_lhs ? rhs : lhs).s.is_whole()) {
      add(node, {at(lhs).v, at(rhs).v}, slot, {Sharding::replicated()});
      return ok_status();
    }
    const auto& lead_batch = lead_lhs ? dn.lhs_batching_dimensions : dn.rhs_batching_dimensions;
    const auto& lead_contract = lead_lhs ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
    const auto& other_batch = lead_lhs ? dn.rhs_batching_dimensions : dn.lhs_batching_dimensions;
    const auto& other_contract = lead_lhs ? dn.rhs_contracting_dimensions : dn.lhs_contracting_dimensions;
    const Value other = lead_lhs ? rhs : lhs;
    std::vector<std::int64_t> other_map(static_cast<std::size_t>(lead_lhs ? rr : rl), -1);
    for (std::size_t k = 0; k < other_batch.size(); ++k) other_map[static_cast<std::size_t>(other_batch[k])] = lead_batch[k];
    for (std::size_t k = 0; k < other_contract.size(); ++k)
      other_map[static_cast<std::size_t>(other_contract[k])] = lead_contract[k];
    PJRT_LITE_ASSIGN_OR_RETURN(Value o, reshard(other, project(lead.s, other_map, n_)));
    const Value l = lead_lhs ? lead.v : o, r = lead_lhs ? o : lead.v;
    const Value product = b_.op(node.op, {l, r}, node.attrs).front();
    std::vector<std::size_t> cut;
    for (std::int64_t d : lead_contract)
      if (lead.s.tiles_at(static_cast<std::size_t>(d)) > 1) cut.push_back(static_cast<std::size_t>(d));
    // Result dimensions: batch, lhs free, rhs free.
    std::vector<std::int64_t> map(lead_batch.begin(), lead_batch.end());
    for (std::int64_t d : fl) map.push_back(lead_lhs ? d : -1);
    for (std::int64_t d : fr) map.push_back(lead_lhs ? -1 : d);
    if (cut.empty()) {
      slot = {PartValue{product, project(lead.s, map, n_)}};
      return ok_status();
    }
    PJRT_LITE_ASSIGN_OR_RETURN(PartValue combined, combine(node, product, lead.s, cut, OpCode::kAdd, map));
    slot = {combined};
    return ok_status();
  }

  /// The body is `op(p0, p1)` for one of the reductions whose partial results combine with
  /// the same op, and `init` is that op's identity.
  std::optional<OpCode> combinable(const Node& node) const {
    if (node.operands.size() != 2 || node.bodies.size() != 1) return std::nullopt;
    const Graph& body = node.bodies[0];
    if (body.outputs().size() != 1) return std::nullopt;
    const Node& root = body.node(body.outputs()[0].node);
    const OpCode op = root.op;
    if (root.operands.size() != 2 || body.node(root.operands[0].node).op != OpCode::kParameter ||
        body.node(root.operands[1].node).op != OpCode::kParameter || root.operands[0].node == root.operands[1].node)
      return std::nullopt;
    const Node& init = g_.node(node.operands[1].node);
    if (init.op != OpCode::kConstant) return std::nullopt;
    const Literal& value = *init.attr<ConstantAttrs>().value;
    const DType t = value.dtype();
    if (is_complex(t)) return std::nullopt;
    StatusOr<Literal> as_double = value.convert(DType::kF64);
    if (!as_double.ok() || as_double->element_count() != 1) return std::nullopt;
    const double x = as_double->data<double>()[0];
    const bool floating = is_floating(t);
    const double inf = std::numeric_limits<double>::infinity();
    switch (op) {
      case OpCode::kAdd: return x == 0 ? std::optional(op) : std::nullopt;
      case OpCode::kMultiply: return x == 1 ? std::optional(op) : std::nullopt;
      case OpCode::kMaximum:
        if (floating ? x == -inf : x == lowest_of(t)) return op;
        return std::nullopt;
      case OpCode::kMinimum:
        if (floating ? x == inf : x == highest_of(t)) return op;
        return std::nullopt;
      case OpCode::kAnd: return t == DType::kPred && x == 1 ? std::optional(op) : std::nullopt;
      case OpCode::kOr: return t == DType::kPred && x == 0 ? std::optional(op) : std::nullopt;
      default: return std::nullopt;
    }
  }
  static double lowest_of(DType t) {
    switch (t) {
      case DType::kS8: return -128.0;
      case DType::kS16: return -32768.0;
      case DType::kS32: return -2147483648.0;
      case DType::kS64: return -9223372036854775808.0;
      default: return is_signed_integral(t) ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    }
  }
  static double highest_of(DType t) {
    switch (t) {
      case DType::kS8: return 127.0;
      case DType::kS16: return 32767.0;
      case DType::kS32: return 2147483647.0;
      case DType::kS64: return 9223372036854775807.0;
      case DType::kU8: return 255.0;
      case DType::kU16: return 65535.0;
      case DType::kU32: return 4294967295.0;
      case DType::kU64: return 18446744073709551615.0;
      default: return std::numeric_limits<double>::quiet_NaN();
    }
  }

  /// reduce: inputs brought to the first one's cuts; cut reduced dimensions are reduced in
  /// parts and all-reduced when the body allows, gathered first when it does not.
  Status emit_reduce(const Node& node, std::vector<PartValue>& slot) {
    const std::size_t k = node.operands.size() / 2;
    const Value first = node.operands[0];
    const auto& dims = node.attr<ReduceAttrs>().dimensions;
    const auto rank = static_cast<std::size_t>(g_.shape(first).rank());
    Sharding s = at(first).s;
    std::vector<std::size_t> cut;
    for (std::int64_t d : dims)
      if (s.tiles_at(static_cast<std::size_t>(d)) > 1) cut.push_back(static_cast<std::size_t>(d));
    const std::optional<OpCode> combine_op = cut.empty() ? std::nullopt : combinable(node);
    if (!cut.empty() && !combine_op) {
      std::vector<std::int64_t> keep(rank);
      for (std::size_t d = 0; d < rank; ++d) keep[d] = static_cast<std::int64_t>(d);
      for (std::size_t d : cut) keep[d] = -1;
      s = project(s, keep, n_);
      cut.clear();
      gathered_.emplace_back("reduce");
    }
    std::vector<Value> operands;
    for (std::size_t j = 0; j < node.operands.size(); ++j) {
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, reshard(node.operands[j], j < k ? s : Sharding::replicated()));
      operands.push_back(v);
    }
    std::vector<Value> results = b_.op(node.op, operands, node.attrs, node.bodies);
    std::vector<std::int64_t> map;
    for (std::size_t d = 0; d < rank; ++d)
      if (std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(d)) == dims.end())
        map.push_back(static_cast<std::int64_t>(d));
    if (!cut.empty()) {
      PJRT_LITE_ASSIGN_OR_RETURN(PartValue combined, combine(node, results[0], s, cut, *combine_op, map));
      slot = {combined};
      return ok_status();
    }
    const Sharding out = project(s, map, n_);
    slot.clear();
    for (Value r : results) slot.push_back(PartValue{r, out});
    return ok_status();
  }

  /// convolution: cuts of spatial dimensions gathered; the more-cut operand leads, the
  /// other takes the same cut of the input feature dimension, and partial sums over a cut
  /// input feature dimension are all-reduced. Grouped convolutions split the batch only.
  Status emit_convolution(const Node& node, std::vector<PartValue>& slot) {
    const ConvolutionAttrs a = node.attr<ConvolutionAttrs>();
    const Value lhs = node.operands[0], rhs = node.operands[1];
    const auto rl = static_cast<std::size_t>(g_.shape(lhs).rank());
    if (a.batch_group_count != 1 || is_complex(node.shape().dtype())) return emit_whole(node, slot);
    std::vector<std::int64_t> lhs_keep(rl, -1), rhs_keep(rl, -1);
    lhs_keep[static_cast<std::size_t>(a.input_batch_dimension)] = a.input_batch_dimension;
    rhs_keep[static_cast<std::size_t>(a.kernel_output_feature_dimension)] = a.kernel_output_feature_dimension;
    if (a.feature_group_count == 1) {
      lhs_keep[static_cast<std::size_t>(a.input_feature_dimension)] = a.input_feature_dimension;
      rhs_keep[static_cast<std::size_t>(a.kernel_input_feature_dimension)] = a.kernel_input_feature_dimension;
    } else {
      rhs_keep[static_cast<std::size_t>(a.kernel_output_feature_dimension)] = -1;
    }
    const Sharding ls = project(at(lhs).s, lhs_keep, n_), rs = project(at(rhs).s, rhs_keep, n_);
    if (!same_parts(ls, at(lhs).s, n_) || !same_parts(rs, at(rhs).s, n_)) gathered_.emplace_back("convolution");
    const bool lead_lhs = ls.tile_count() >= rs.tile_count();
    const Sharding& lead = lead_lhs ? ls : rs;
    std::vector<std::int64_t> other_map(rl, -1);
    if (a.feature_group_count == 1) {
      if (lead_lhs) other_map[static_cast<std::size_t>(a.kernel_input_feature_dimension)] = a.input_feature_dimension;
      else other_map[static_cast<std::size_t>(a.input_feature_dimension)] = a.kernel_input_feature_dimension;
    }
    const Sharding other = project(lead, other_map, n_);
    PJRT_LITE_ASSIGN_OR_RETURN(Value l, reshard(lhs, lead_lhs ? lead : other));
    PJRT_LITE_ASSIGN_OR_RETURN(Value r, reshard(rhs, lead_lhs ? other : lead));
    const Value product = b_.op(node.op, {l, r}, node.attrs).front();
    const std::int64_t contract = lead_lhs ? a.input_feature_dimension : a.kernel_input_feature_dimension;
    std::vector<std::int64_t> map(rl, -1);
    if (lead_lhs) map[static_cast<std::size_t>(a.output_batch_dimension)] = a.input_batch_dimension;
    else map[static_cast<std::size_t>(a.output_feature_dimension)] = a.kernel_output_feature_dimension;
    if (a.feature_group_count == 1 && lead.tiles_at(static_cast<std::size_t>(contract)) > 1) {
      PJRT_LITE_ASSIGN_OR_RETURN(PartValue combined,
                                 combine(node, product, lead, {static_cast<std::size_t>(contract)}, OpCode::kAdd, map));
      slot = {combined};
      return ok_status();
    }
    slot = {PartValue{product, project(lead, map, n_)}};
    return ok_status();
  }

  const Graph& g_;
  const ShardingPlan& plan_;
  std::int64_t n_;
  GraphBuilder b_;
  std::vector<std::vector<PartValue>> values_;
  std::map<std::pair<std::int32_t, std::int32_t>, Sharding> constraint_;
  /// The sharding a value is asked to have where it is made or returned.
  std::map<std::pair<std::int32_t, std::int32_t>, Sharding> desired_;
  std::int32_t current_ = -1;  // the node being emitted
  std::map<std::int32_t, const ShardingPlan::Entry*> to_manual_;
  std::map<std::int32_t, const ShardingPlan::Exit*> from_manual_;
  std::vector<std::string> gathered_;
  std::int64_t next_channel_ = 1 << 20;
};

}  // namespace detail

/// The program each of plan.num_partitions partitions runs (see the top of this file).
/// INVALID_ARGUMENT for a sharding that does not fit its value or the partition count;
/// UNIMPLEMENTED for a dimension that does not divide evenly among its tiles.
inline StatusOr<PartitionedProgram> partition(const Graph& g, const ShardingPlan& plan) {
  PJRT_LITE_RETURN_IF_ERROR(verify(g).with_context("partition"));
  detail::Partitioner p(g, plan);
  return p.run();
}

}  // namespace pjrt_lite
