#pragma once
// IWYU pragma: private, include "pjrt_lite/ir/verifier.hpp"
// The definition of detail::verify_graph: inline in every translation unit (included by
// verifier.hpp), or compiled once in pjrt_lite::cpu_kernels (see core/compiled_once.hpp).

#include <cstdint>
#include <ostream>
#include <vector>

#include "pjrt_lite/ir/verifier.hpp"

namespace pjrt_lite::inline v0_1::detail {

/// Streams as "node %i" in an error message.
struct NodeName {
  std::int64_t index;
  friend std::ostream& operator<<(std::ostream& os, NodeName n) {
    return os << "node %" << n.index;
  }
};

PJRT_LITE_COMPILED_ONCE Status verify_graph(const Graph& g) {
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

}  // namespace pjrt_lite::detail
