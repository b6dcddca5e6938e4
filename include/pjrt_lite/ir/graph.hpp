#pragma once
// Graph: a tensor program in SSA form. Nodes are in definition order (every operand refers to
// an earlier node), each with an opcode, operand Values, typed attributes, static result
// shapes and, for ops with regions (reduce, while, case, ...), bodies that are themselves
// Graphs. A graph lists its parameters (by number) and its outputs. Graphs are values:
// copyable, movable, compared by content, and never changed in place; transforms build new
// ones (GraphBuilder, or to_parts/from_parts).

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/core/assert.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"

namespace pjrt_lite::inline v0_1 {

/// A handle to one result of one node: a node index and a result index. `builder` is the id of
/// the GraphBuilder that made the Value, so a builder can reject another's values; it is 0
/// for the Values held inside a Graph. Default-constructed Values are invalid.
struct Value {
  std::int32_t node = -1;
  std::int32_t index = 0;
  std::uint32_t builder = 0;

  [[nodiscard]] constexpr bool valid() const { return node >= 0 && index >= 0; }
  /// The same node and result, detached from any builder: the form Graphs store.
  [[nodiscard]] constexpr Value detached() const { return Value{node, index, 0}; }
  friend constexpr bool operator==(const Value&, const Value&) = default;
};

/// "%3" for result 0 of node 3, "%3#1" for its result 1.
inline std::string to_string(Value v) {
  if (!v.valid()) return "%<invalid>";
  return v.index == 0 ? str_cat("%", v.node) : str_cat("%", v.node, "#", v.index);
}

class Graph;

/// One operation. Plain data; a Graph's nodes are reached through const references only.
struct Node {
  OpCode op = OpCode::kParameter;
  std::vector<Value> operands;
  Attributes attrs;
  /// One shape per result: exactly one except for the ops of is_variadic_result (reduce,
  /// reduce_window, while, case, if).
  std::vector<Shape> results;
  /// The regions of the op (body_count): reduce's body, while's cond and body, case's
  /// branches, ...; empty for ops without regions.
  std::vector<Graph> bodies;

  /// The attributes as the alternative A, which must be the one this op takes.
  template <class A>
  [[nodiscard]] const A& attr() const {
    const A* a = std::get_if<A>(&attrs);
    PJRT_LITE_ASSERT(a != nullptr, "Node::attr<A>() with A not this node's attributes");
    return *a;
  }
  [[nodiscard]] const Shape& shape(std::size_t result = 0) const { return results[result]; }

  friend bool operator==(const Node& a, const Node& b);
};

/// The raw contents of a graph, for code that builds or rewrites graphs node by node (parsers,
/// deserializers, transforms). Nothing is checked until verify().
struct GraphParts {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Value> outputs;
};

/// A tensor program. Immutable; thread-safe for concurrent reads.
class Graph {
 public:
  /// An empty graph named "" with no nodes and no outputs.
  Graph() = default;

  /// Assembles a graph from parts without checking them: call verify() (verifier.hpp) on
  /// anything that did not come from a GraphBuilder. Values are stored detached.
  static Graph from_parts(GraphParts parts) {
    Graph g;
    g.name_ = std::move(parts.name);
    g.nodes_ = std::move(parts.nodes);
    g.outputs_ = std::move(parts.outputs);
    for (Node& n : g.nodes_)
      for (Value& v : n.operands) v = v.detached();
    for (Value& v : g.outputs_) v = v.detached();
    for (std::size_t i = 0; i < g.nodes_.size(); ++i)
      if (g.nodes_[i].op == OpCode::kParameter)
        g.parameters_.push_back(Value{static_cast<std::int32_t>(i), 0, 0});
    // Ordered by number; the verifier reports duplicate or missing numbers.
    std::stable_sort(g.parameters_.begin(), g.parameters_.end(), [&](Value a, Value b) {
      return g.parameter_number(a) < g.parameter_number(b);
    });
    return g;
  }
  /// The parts, for building a changed copy.
  [[nodiscard]] GraphParts to_parts() const& { return GraphParts{name_, nodes_, outputs_}; }
  [[nodiscard]] GraphParts to_parts() && {
    return GraphParts{std::move(name_), std::move(nodes_), std::move(outputs_)};
  }

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::span<const Node> nodes() const { return nodes_; }
  [[nodiscard]] std::int64_t num_nodes() const { return static_cast<std::int64_t>(nodes_.size()); }
  [[nodiscard]] const Node& node(std::int64_t i) const {
    PJRT_LITE_ASSERT(i >= 0 && i < num_nodes(), "Graph::node index out of range");
    return nodes_[static_cast<std::size_t>(i)];
  }
  [[nodiscard]] const Node& node(Value v) const { return node(v.node); }
  /// The parameter nodes' values, ordered by parameter number (0..n-1 in a verified graph).
  [[nodiscard]] std::span<const Value> parameters() const { return parameters_; }
  [[nodiscard]] std::int64_t num_parameters() const {
    return static_cast<std::int64_t>(parameters_.size());
  }
  /// What the graph returns, in order; a value may appear several times.
  [[nodiscard]] std::span<const Value> outputs() const { return outputs_; }
  /// True when `v` names an existing result of this graph.
  [[nodiscard]] bool contains(Value v) const {
    return v.valid() && v.node < num_nodes() &&
           static_cast<std::size_t>(v.index) <
               nodes_[static_cast<std::size_t>(v.node)].results.size();
  }
  /// The shape of a value of this graph.
  [[nodiscard]] const Shape& shape(Value v) const {
    PJRT_LITE_ASSERT(contains(v), "Graph::shape of a value not in the graph");
    return nodes_[static_cast<std::size_t>(v.node)].results[static_cast<std::size_t>(v.index)];
  }
  [[nodiscard]] std::vector<Shape> parameter_shapes() const {
    std::vector<Shape> out;
    for (Value v : parameters_) out.push_back(shape(v));
    return out;
  }
  [[nodiscard]] std::vector<Shape> output_shapes() const {
    std::vector<Shape> out;
    for (Value v : outputs_) out.push_back(shape(v));
    return out;
  }
  /// The parameter and output shapes, as a body's type.
  [[nodiscard]] Signature signature() const {
    return Signature{parameter_shapes(), output_shapes()};
  }

  /// Same name, nodes (bodies included) and outputs.
  friend bool operator==(const Graph& a, const Graph& b) {
    return a.name_ == b.name_ && a.nodes_ == b.nodes_ && a.outputs_ == b.outputs_;
  }

 private:
  std::int64_t parameter_number(Value v) const {
    const auto* p = std::get_if<ParameterAttrs>(&nodes_[static_cast<std::size_t>(v.node)].attrs);
    return p ? p->number : -1;
  }

  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Value> parameters_;
  std::vector<Value> outputs_;
};

inline bool operator==(const Node& a, const Node& b) {
  return a.op == b.op && a.operands == b.operands && a.attrs == b.attrs && a.results == b.results &&
         a.bodies == b.bodies;
}

/// True for a node of an op with a side effect (has_side_effect: send, recv, infeed,
/// outfeed), or whose regions hold one at any depth: such a node is never removed, merged or
/// evaluated ahead of time.
inline bool has_side_effects(const Node& n) {
  if (has_side_effect(n.op)) return true;
  for (const Graph& body : n.bodies)
    for (const Node& inner : body.nodes())
      if (has_side_effects(inner)) return true;
  return false;
}

}  // namespace pjrt_lite
