#pragma once
// The verifier re-checks a whole graph: for graphs that come from a parser, a deserializer or
// a transform that edits GraphParts directly. A GraphBuilder's graphs pass by construction.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {
/// Streams as "node %i" in an error message.
struct NodeName {
  std::int64_t index;
  friend std::ostream& operator<<(std::ostream& os, NodeName n) {
    return os << "node %" << n.index;
  }
};

inline Status verify_graph(const Graph& g) {
  const std::int64_t n = g.num_nodes();
  std::vector<std::int64_t> parameter_node;  // parameter number -> node, -1 when unused
  for (std::int64_t i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    // Named only on the error path: formatting it for every node dominated compile time.
    const NodeName where{i};
    if (!is_valid(node.op))
      return invalid_argument_error(
          str_cat(where, ": invalid opcode (enum value ", static_cast<int>(node.op), ")"));
    // Operands first: inference must only ever see shapes that exist.
    std::vector<Shape> operand_shapes;
    for (std::size_t k = 0; k < node.operands.size(); ++k) {
      const Value v = node.operands[k];
      if (!v.valid() || v.node >= i || !g.contains(v))
        return invalid_argument_error(str_cat(where, ": ", op_name(node.op), ": operand ", k,
                                              " is ", to_string(v),
                                              ", which is not a result of a node before %", i));
      operand_shapes.push_back(g.shape(v));
    }
    std::vector<Signature> body_signatures;
    for (std::size_t k = 0; k < node.bodies.size(); ++k) {
      const Graph& body = node.bodies[k];
      if (Status s = verify_graph(body); !s.ok())
        return s.with_context(
            str_cat(where, ": ", op_name(node.op), ": body ", k, " '", body.name(), "'"));
      body_signatures.push_back(body.signature());
    }
    StatusOr<std::vector<Shape>> inferred =
        infer_shapes(node.op, operand_shapes, node.attrs, body_signatures);
    if (!inferred.ok()) return inferred.status().with_context(str_cat(where));
    if (inferred->size() != node.results.size())
      return invalid_argument_error(str_cat(where, ": ", op_name(node.op), ": has ",
                                            node.results.size(), " result(s) but inference gives ",
                                            inferred->size()));
    for (std::size_t r = 0; r < node.results.size(); ++r)
      if (node.results[r] != (*inferred)[r])
        return invalid_argument_error(str_cat(where, ": ", op_name(node.op), ": result ", r,
                                              " has shape ", node.results[r],
                                              " but inference gives ", (*inferred)[r]));
    if (node.op == OpCode::kParameter) {
      const std::int64_t number = node.attr<ParameterAttrs>().number;  // >= 0: inference checked
      if (number >= n)
        return invalid_argument_error(
            str_cat(where, ": parameter number ", number, " is not below the node count ", n));
      if (static_cast<std::int64_t>(parameter_node.size()) <= number)
        parameter_node.resize(static_cast<std::size_t>(number) + 1, -1);
      std::int64_t& slot = parameter_node[static_cast<std::size_t>(number)];
      if (slot >= 0)
        return invalid_argument_error(
            str_cat(where, ": parameter number ", number, " is already used by node %", slot));
      slot = i;
    }
  }
  for (std::size_t p = 0; p < parameter_node.size(); ++p)
    if (parameter_node[p] < 0)
      return invalid_argument_error(str_cat("parameter numbers must be 0..",
                                            parameter_node.size() - 1, " without gaps, but ", p,
                                            " is missing"));
  for (std::size_t k = 0; k < g.outputs().size(); ++k)
    if (!g.contains(g.outputs()[k]))
      return invalid_argument_error(str_cat("output ", k, " is ", to_string(g.outputs()[k]),
                                            ", which is not a value of the graph"));
  return ok_status();
}
}  // namespace detail

/// OK when the graph is well formed: every operand is a result of an earlier node, every
/// node's attributes are its op's, its result shapes are exactly what shape inference gives
/// (default layouts), parameters are numbered 0..n-1 without gaps or repeats, outputs exist,
/// and every body passes too. Otherwise INVALID_ARGUMENT naming the graph, node and reason.
inline Status verify(const Graph& g) {
  Status s = detail::verify_graph(g);
  if (s.ok()) return s;
  return s.with_context(str_cat("graph '", g.name(), "'"));
}

/// from_parts followed by verify: the way in for graphs from outside the program.
inline StatusOr<Graph> make_verified_graph(GraphParts parts) {
  Graph g = Graph::from_parts(std::move(parts));
  PJRT_LITE_RETURN_IF_ERROR(verify(g));
  return g;
}

}  // namespace pjrt_lite
