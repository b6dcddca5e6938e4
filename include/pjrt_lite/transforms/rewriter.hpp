#pragma once
// GraphRewriter: the common shape of a graph-to-graph pass. A pass walks the source graph's
// nodes in order and, for each, copies it, replaces it by values already in the new graph,
// or appends new nodes; the rewriter keeps the map from source values to new values and
// verifies what comes out. Parameters keep their numbers, so a pass that copies every
// parameter keeps the graph's signature.

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/assert.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"
#include "pjrt_lite/ir/verifier.hpp"

namespace pjrt_lite::inline v0_1 {

/// Builds a new graph from a verified source graph, node by node. Values passed in as
/// operands are always values of the new graph. Keeps a pointer to `source`, which must
/// outlive it. Not thread-safe.
class GraphRewriter {
 public:
  explicit GraphRewriter(const Graph& source)
      : source_(&source), map_(static_cast<std::size_t>(source.num_nodes())) {
    parts_.name = source.name();
    parts_.nodes.reserve(static_cast<std::size_t>(source.num_nodes()));
  }

  [[nodiscard]] const Graph& source() const { return *source_; }

  /// The new value that stands for `old`, a value of a source node handled already.
  [[nodiscard]] Value map(Value old) const {
    PJRT_LITE_ASSERT(source_->contains(old), "GraphRewriter::map of a value not in the source");
    const std::vector<Value>& m = map_[static_cast<std::size_t>(old.node)];
    PJRT_LITE_ASSERT(static_cast<std::size_t>(old.index) < m.size(),
                     "GraphRewriter::map of a source node not handled yet");
    return m[static_cast<std::size_t>(old.index)];
  }
  /// The new values of a source node's operands.
  [[nodiscard]] std::vector<Value> map_operands(const Node& old) const {
    std::vector<Value> out;
    out.reserve(old.operands.size());
    for (Value v : old.operands) out.push_back(map(v));
    return out;
  }
  /// From now on the results of source node `old_node` stand for `values` of the new graph.
  void replace(std::int64_t old_node, std::vector<Value> values) {
    PJRT_LITE_ASSERT(values.size() == source_->node(old_node).results.size(),
                     "GraphRewriter::replace with the wrong number of values");
    map_[static_cast<std::size_t>(old_node)] = std::move(values);
  }

  /// Appends `node`, whose operands are values of the new graph and whose results are set,
  /// and returns its result values. Checked only by finish().
  std::vector<Value> append(Node node) {
    const auto index = static_cast<std::int32_t>(parts_.nodes.size());
    std::vector<Value> out;
    for (std::size_t r = 0; r < node.results.size(); ++r)
      out.push_back(Value{index, static_cast<std::int32_t>(r), 0});
    parts_.nodes.push_back(std::move(node));
    return out;
  }
  /// Appends a node of `op` with result shapes from shape inference.
  StatusOr<std::vector<Value>> append_inferred(OpCode op, std::vector<Value> operands,
                                               Attributes attrs, std::vector<Graph> bodies = {}) {
    std::vector<Shape> operand_shapes;
    for (Value v : operands) operand_shapes.push_back(shape(v));
    std::vector<Signature> signatures;
    for (const Graph& body : bodies) signatures.push_back(body.signature());
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> results,
                               infer_shapes(op, operand_shapes, attrs, signatures));
    return append(
        Node{op, std::move(operands), std::move(attrs), std::move(results), std::move(bodies)});
  }
  /// Appends a copy of source node `old_node` with its operands mapped and `bodies` in place
  /// of its own, and maps the source node's results to the copy's.
  std::vector<Value> copy(std::int64_t old_node, std::vector<Graph> bodies) {
    const Node& old = source_->node(old_node);
    std::vector<Value> values =
        append(Node{old.op, map_operands(old), old.attrs, old.results, std::move(bodies)});
    replace(old_node, values);
    return values;
  }
  /// copy() keeping the node's own bodies.
  std::vector<Value> copy(std::int64_t old_node) {
    return copy(old_node, source_->node(old_node).bodies);
  }

  /// A node of the new graph.
  [[nodiscard]] const Node& node(Value v) const {
    PJRT_LITE_ASSERT(v.node >= 0 && static_cast<std::size_t>(v.node) < parts_.nodes.size(),
                     "GraphRewriter::node of a value not in the new graph");
    return parts_.nodes[static_cast<std::size_t>(v.node)];
  }
  /// The shape of a value of the new graph.
  [[nodiscard]] const Shape& shape(Value v) const {
    return node(v).results[static_cast<std::size_t>(v.index)];
  }
  [[nodiscard]] std::int64_t num_nodes() const {
    return static_cast<std::int64_t>(parts_.nodes.size());
  }

  /// The new graph, returning the mapped outputs of the source. It is verified: a graph
  /// that does not verify is a bug of the pass named `pass`, reported as INTERNAL.
  StatusOr<Graph> finish(std::string_view pass) && {
    for (Value v : source_->outputs()) parts_.outputs.push_back(map(v));
    StatusOr<Graph> g = make_verified_graph(std::move(parts_));
    if (!g.ok())
      return internal_error(str_cat(pass,
                                    " produced a graph that does not verify (a bug in the "
                                    "pass): ",
                                    g.status().message()));
    return g;
  }

 private:
  const Graph* source_;
  std::vector<std::vector<Value>> map_;  // source node -> new value of each result
  GraphParts parts_;
};

/// The bodies of `node`, each run through `pass` (Graph -> StatusOr<Graph>).
template <class Pass>
StatusOr<std::vector<Graph>> rewrite_bodies(const Node& node, Pass&& pass) {
  std::vector<Graph> out;
  out.reserve(node.bodies.size());
  for (const Graph& body : node.bodies) {
    PJRT_LITE_ASSIGN_OR_RETURN(Graph rewritten, pass(body));
    out.push_back(std::move(rewritten));
  }
  return out;
}

}  // namespace pjrt_lite
