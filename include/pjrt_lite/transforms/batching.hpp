#pragma once
// Batching (vmap) of graphs: the same program over a leading batch dimension.
//
// Each value of the graph is either unbatched (the same for every batch element) or batched
// (its batch dimension first). Ops whose operands are all unbatched stay as they are. The
// others follow a batching rule: element-wise ops broadcast their unbatched operands, data
// movement and reductions shift their dimension attributes by one, dot_general gains a batch
// dimension. An op without a rule (a batched reduce initial value, batched dynamic indices,
// ...) is unrolled: run once per batch element on slices, and the results concatenated. So
// every graph batches, the common ops without a loop.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/detail/custom_rules.hpp"

namespace pjrt_lite::inline v0_1 {

/// vmap of a graph: the graph returned takes g's parameters, those with batched[k] set with a
/// leading dimension of size `batch`, and returns each of g's outputs with a leading
/// dimension of size `batch` (outputs that depend on no batched value are broadcast, and
/// `batched_outputs`, when given, says which outputs those are not).
inline StatusOr<Graph> batch_graph(const Graph& g, const std::vector<bool>& batched,
                                   std::int64_t batch,
                                   std::vector<bool>* batched_outputs = nullptr);

namespace detail {

class Batcher {
 public:
  struct BValue {
    Value value;
    bool batched = false;
  };

  Batcher(GraphBuilder& b, std::int64_t batch) : b_(b), batch_(batch) {}

  std::vector<BValue> apply(const Node& n, const std::vector<BValue>& in) {
    const bool any = std::any_of(in.begin(), in.end(), [](const BValue& v) { return v.batched; });
    if (!any) {
      std::vector<Value> ops;
      for (const BValue& v : in) ops.push_back(v.value);
      return wrap(b_.op(n.op, ops, n.attrs, n.bodies), false);
    }
    if (n.op == OpCode::kCase && !in[0].batched)
      if (const CustomRule r = custom_rule_of(n); r.kind != CustomRule::Kind::kNone)
        return custom(n, r, in);
    if (is_elementwise(n.op)) return elementwise(n, in);
    switch (n.op) {
      case OpCode::kBroadcastInDim: {
        const auto& a = std::get<BroadcastInDimAttrs>(n.attrs);
        std::vector<std::int64_t> bd{0};
        for (std::int64_t d : a.broadcast_dimensions) bd.push_back(d + 1);
        return one(b_.broadcast_in_dim(in[0].value, batched_dims(a.dims), bd));
      }
      case OpCode::kReshape:
        return one(b_.reshape(in[0].value, batched_dims(std::get<ReshapeAttrs>(n.attrs).dims)));
      case OpCode::kTranspose: {
        std::vector<std::int64_t> perm{0};
        for (std::int64_t p : std::get<TransposeAttrs>(n.attrs).permutation) perm.push_back(p + 1);
        return one(b_.transpose(in[0].value, perm));
      }
      case OpCode::kSlice: {
        auto a = std::get<SliceAttrs>(n.attrs);
        a.start_indices.insert(a.start_indices.begin(), 0);
        a.limit_indices.insert(a.limit_indices.begin(), batch_);
        a.strides.insert(a.strides.begin(), 1);
        return one(b_.slice(in[0].value, a.start_indices, a.limit_indices, a.strides));
      }
      case OpCode::kReverse: {
        std::vector<std::int64_t> dims;
        for (std::int64_t d : std::get<ReverseAttrs>(n.attrs).dimensions) dims.push_back(d + 1);
        return one(b_.reverse(in[0].value, dims));
      }
      case OpCode::kConcatenate: {
        std::vector<Value> ops;
        for (const BValue& v : in) ops.push_back(materialize(v));
        return one(b_.concatenate(ops, std::get<ConcatenateAttrs>(n.attrs).dimension + 1));
      }
      case OpCode::kPad: {
        if (in[1].batched) break;
        auto a = std::get<PadAttrs>(n.attrs);
        a.edge_padding_low.insert(a.edge_padding_low.begin(), 0);
        a.edge_padding_high.insert(a.edge_padding_high.begin(), 0);
        a.interior_padding.insert(a.interior_padding.begin(), 0);
        return one(b_.pad(in[0].value, in[1].value, a.edge_padding_low, a.edge_padding_high,
                          a.interior_padding));
      }
      case OpCode::kReduce: {
        const std::size_t inputs = in.size() / 2;
        bool init_batched = false;
        for (std::size_t k = inputs; k < in.size(); ++k)
          init_batched = init_batched || in[k].batched;
        if (init_batched) break;
        std::vector<Value> ops;
        for (std::size_t k = 0; k < in.size(); ++k)
          ops.push_back(k < inputs ? materialize(in[k]) : in[k].value);
        std::vector<std::int64_t> dims;
        for (std::int64_t d : std::get<ReduceAttrs>(n.attrs).dimensions) dims.push_back(d + 1);
        return wrap(b_.op(OpCode::kReduce, ops, ReduceAttrs{dims}, n.bodies), true);
      }
      case OpCode::kDotGeneral: return dot(n, in);
      case OpCode::kSort: {
        std::vector<Value> ops;
        for (const BValue& v : in) ops.push_back(materialize(v));
        auto a = std::get<SortAttrs>(n.attrs);
        if (a.dimension < 0) a.dimension += n.results[0].rank();
        ++a.dimension;
        return wrap(b_.op(OpCode::kSort, ops, a, n.bodies), true);
      }
      // Along the last dimension, which a leading batch dimension leaves last.
      case OpCode::kTopK: return wrap(b_.op(OpCode::kTopK, {in[0].value}, n.attrs), true);
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice: {
        const std::size_t first_index = n.op == OpCode::kDynamicSlice ? 1 : 2;
        bool index_batched = false;
        for (std::size_t k = first_index; k < in.size(); ++k)
          index_batched = index_batched || in[k].batched;
        if (index_batched) break;
        std::vector<Value> ops;
        for (std::size_t k = 0; k < first_index; ++k) ops.push_back(materialize(in[k]));
        const DType index_type =
            in.size() > first_index ? b_.shape(in[first_index].value)->dtype() : DType::kS32;
        ops.push_back(b_.scalar(index_type, 0));
        for (std::size_t k = first_index; k < in.size(); ++k) ops.push_back(in[k].value);
        if (n.op == OpCode::kDynamicSlice) {
          auto a = std::get<DynamicSliceAttrs>(n.attrs);
          a.slice_sizes.insert(a.slice_sizes.begin(), batch_);
          return wrap(b_.op(n.op, ops, a), true);
        }
        return wrap(b_.op(n.op, ops, n.attrs), true);
      }
      default: break;
    }
    return unroll(n, in);
  }

  /// v with its batch dimension, broadcast when it is unbatched.
  Value materialize(const BValue& v) {
    if (v.batched) return v.value;
    const Shape s = b_.shape(v.value).value_or(Shape());
    std::vector<std::int64_t> bd;
    for (std::int64_t d = 0; d < s.rank(); ++d) bd.push_back(d + 1);
    return b_.broadcast_in_dim(v.value, batched_dims(s.dims()), bd);
  }

 private:
  std::vector<std::int64_t> batched_dims(std::span<const std::int64_t> dims) const {
    std::vector<std::int64_t> out{batch_};
    out.insert(out.end(), dims.begin(), dims.end());
    return out;
  }
  static std::vector<BValue> wrap(const std::vector<Value>& vs, bool batched) {
    std::vector<BValue> out;
    for (Value v : vs) out.push_back(BValue{v, batched});
    return out;
  }
  static std::vector<BValue> one(Value v) { return {BValue{v, true}}; }

  // A node carrying a user rule (detail/custom_rules.hpp) stays one: its branches batched,
  // so the rule survives vmap. A custom_jvp's t operands are batched with their x (autodiff
  // passes tangents shaped like the batched x), a custom_vjp's ct operands always (every
  // result of the batched node is batched).
  std::vector<BValue> custom(const Node& n, const CustomRule& r, const std::vector<BValue>& in) {
    std::vector<bool> mask;
    for (std::size_t i = 1; i < in.size(); ++i) mask.push_back(in[i].batched);
    if (r.kind == CustomRule::Kind::kCustomJvp)
      for (std::size_t i = 0; i < r.k; ++i) mask[i] = mask[r.k + i] = mask[i] || mask[r.k + i];
    if (r.kind == CustomRule::Kind::kCustomVjp)
      for (std::size_t i = r.k; i < mask.size(); ++i) mask[i] = true;
    std::vector<Value> ops{in[0].value};
    for (std::size_t i = 1; i < in.size(); ++i)
      ops.push_back(mask[i - 1] ? materialize(in[i]) : in[i].value);
    std::vector<Graph> branches;
    for (const Graph& branch : n.bodies) {
      StatusOr<Graph> batched = batch_graph(branch, mask, batch_);
      if (batched.ok()) batched = renamed(*batched, branch.name());
      if (!batched.ok()) {
        if (status_.ok()) status_ = batched.status().with_context("vmap of a custom rule");
        return wrap(std::vector<Value>(n.results.size()), true);
      }
      branches.push_back(*std::move(batched));
    }
    return wrap(b_.op(n.op, ops, n.attrs, std::move(branches)), true);
  }

  // Every operand at [batch] + the result's dims (rank-0 operands of select and clamp
  // included), so the op applies unchanged.
  std::vector<BValue> elementwise(const Node& n, const std::vector<BValue>& in) {
    const std::vector<std::int64_t> full = batched_dims(n.results[0].dims());
    std::vector<Value> ops;
    for (const BValue& v : in) {
      const Shape s = b_.shape(v.value).value_or(Shape());
      const std::int64_t per_example_rank = v.batched ? s.rank() - 1 : s.rank();
      if (per_example_rank == n.results[0].rank()) {
        ops.push_back(materialize(v));
      } else {  // a rank-0 operand of select or clamp
        ops.push_back(v.batched ? b_.broadcast_in_dim(v.value, full, {0})
                                : b_.broadcast_in_dim(v.value, full, {}));
      }
    }
    return wrap(b_.op(n.op, ops, n.attrs, n.bodies), true);
  }

  std::vector<BValue> dot(const Node& n, const std::vector<BValue>& in) {
    auto dn = std::get<DotDimensionNumbers>(n.attrs);
    auto shift = [](std::vector<std::int64_t>& v) {
      for (auto& d : v) ++d;
    };
    const auto nb = static_cast<std::int64_t>(dn.lhs_batching_dimensions.size());
    if (in[0].batched && in[1].batched) {
      shift(dn.lhs_batching_dimensions);
      shift(dn.rhs_batching_dimensions);
      shift(dn.lhs_contracting_dimensions);
      shift(dn.rhs_contracting_dimensions);
      dn.lhs_batching_dimensions.insert(dn.lhs_batching_dimensions.begin(), 0);
      dn.rhs_batching_dimensions.insert(dn.rhs_batching_dimensions.begin(), 0);
      return one(b_.dot_general(in[0].value, in[1].value, dn));
    }
    // One side batched: its batch dimension is a free dimension, the first of that side's
    // free dimensions in the result; move it to the front.
    std::int64_t position = nb;
    if (in[0].batched) {
      shift(dn.lhs_batching_dimensions);
      shift(dn.lhs_contracting_dimensions);
    } else {
      shift(dn.rhs_batching_dimensions);
      shift(dn.rhs_contracting_dimensions);
      const Shape lhs = b_.shape(in[0].value).value_or(Shape());
      position = lhs.rank() - static_cast<std::int64_t>(dn.lhs_contracting_dimensions.size());
    }
    Value r = b_.dot_general(in[0].value, in[1].value, dn);
    if (position == 0) return one(r);
    const std::int64_t rank = n.results[0].rank() + 1;
    std::vector<std::int64_t> perm{position};
    for (std::int64_t d = 0; d < rank; ++d)
      if (d != position) perm.push_back(d);
    return one(b_.transpose(r, perm));
  }

  // The op once per batch element, results stacked.
  std::vector<BValue> unroll(const Node& n, const std::vector<BValue>& in) {
    std::vector<std::vector<Value>> parts(n.results.size());
    for (std::int64_t i = 0; i < batch_; ++i) {
      std::vector<Value> ops;
      for (const BValue& v : in) ops.push_back(v.batched ? element(v.value, i) : v.value);
      std::vector<Value> r = b_.op(n.op, ops, n.attrs, n.bodies);
      for (std::size_t k = 0; k < r.size() && k < parts.size(); ++k)
        parts[k].push_back(b_.reshape(r[k], batched_dims_of(n.results[k], 1)));
    }
    std::vector<BValue> out;
    for (std::size_t k = 0; k < n.results.size(); ++k) {
      if (batch_ == 0) {
        out.push_back(BValue{b_.broadcast_in_dim(b_.scalar(n.results[k].dtype(), 0),
                                                 batched_dims(n.results[k].dims()), {}),
                             true});
      } else {
        out.push_back(
            BValue{parts[k].size() == 1 ? parts[k][0] : b_.concatenate(parts[k], 0), true});
      }
    }
    return out;
  }
  static std::vector<std::int64_t> batched_dims_of(const Shape& s, std::int64_t lead) {
    std::vector<std::int64_t> out{lead};
    out.insert(out.end(), s.dims().begin(), s.dims().end());
    return out;
  }
  Value element(Value v, std::int64_t i) {
    const Shape s = b_.shape(v).value_or(Shape());
    std::vector<std::int64_t> start(static_cast<std::size_t>(s.rank()), 0);
    std::vector<std::int64_t> limit(s.dims().begin(), s.dims().end());
    start[0] = i;
    limit[0] = i + 1;
    std::vector<std::int64_t> dims(s.dims().begin() + 1, s.dims().end());
    return b_.reshape(b_.slice(v, start, limit), dims);
  }

  GraphBuilder& b_;
  std::int64_t batch_;
  Status status_;

 public:
  /// The first error of a rule that does not go through the builder.
  [[nodiscard]] const Status& status() const { return status_; }
};

}  // namespace detail

inline StatusOr<Graph> batch_graph(const Graph& g, const std::vector<bool>& batched,
                                   std::int64_t batch, std::vector<bool>* batched_outputs) {
  PJRT_LITE_RETURN_IF_ERROR(verify(g));
  const auto n = static_cast<std::size_t>(g.num_parameters());
  if (batched.size() != n)
    return invalid_argument_error(str_cat("batch_graph: batched has ", batched.size(),
                                          " entries for ", n, " parameters of '", g.name(), "'"));
  if (batch < 0)
    return invalid_argument_error(str_cat("batch_graph: batch size ", batch, " is negative"));
  GraphBuilder b(str_cat(g.name(), "_batched"));
  detail::Batcher batcher(b, batch);
  std::vector<std::vector<detail::Batcher::BValue>> values(static_cast<std::size_t>(g.num_nodes()));
  for (std::size_t k = 0; k < n; ++k) {
    const Value pv = g.parameters()[k];
    const Shape& s = g.shape(pv);
    std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end());
    if (batched[k]) dims.insert(dims.begin(), batch);
    values[static_cast<std::size_t>(pv.node)] = {
        {b.parameter(static_cast<std::int64_t>(k), Shape(s.dtype(), dims)), batched[k]}};
  }
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    if (node.op == OpCode::kParameter) continue;
    std::vector<detail::Batcher::BValue> in;
    for (Value v : node.operands)
      in.push_back(values[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
    values[static_cast<std::size_t>(i)] = batcher.apply(node, in);
    if (!batcher.status().ok()) return batcher.status();
    if (!b.ok())
      return b.status().with_context(
          str_cat("batch_graph of '", g.name(), "' at %", i, " (", op_name(node.op), ")"));
  }
  std::vector<Value> outputs;
  if (batched_outputs) batched_outputs->clear();
  for (Value v : g.outputs()) {
    const auto& bv = values[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)];
    if (batched_outputs) batched_outputs->push_back(bv.batched);
    outputs.push_back(batcher.materialize(bv));
  }
  return b.build(outputs);
}

}  // namespace pjrt_lite
