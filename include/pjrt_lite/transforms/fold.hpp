#pragma once
// Constant folding: nodes whose operands are all constants become constants, computed by an
// evaluator the caller provides (the reference interpreter's, in practice), so this layer
// needs no kernels of its own.

#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/rewriter.hpp"

namespace pjrt_lite::inline v0_1 {

/// Satisfied by callables `StatusOr<std::vector<Literal>>(const Node&, std::span<const
/// Literal* const>)` that compute a node's results from its operands' values, one Literal
/// per result. An error means "cannot evaluate this one" (e.g. UNIMPLEMENTED), not failure.
template <class F>
concept NodeEvaluator = std::invocable<F&, const Node&, std::span<const Literal* const>> &&
    std::convertible_to<std::invoke_result_t<F&, const Node&, std::span<const Literal* const>>,
                        StatusOr<std::vector<Literal>>>;

/// How many elements fold_constants puts in one constant at most, by default.
inline constexpr std::int64_t kDefaultMaxFoldElements = std::int64_t{1} << 16;

namespace detail {

/// fold_constants on a graph known to be verified.
template <class Evaluator>
StatusOr<Graph> fold_constants_verified(const Graph& g, Evaluator& eval,
                                        std::int64_t max_elements) {
  GraphRewriter rw(g);
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    if (node.op == OpCode::kParameter || node.op == OpCode::kConstant) {
      rw.copy(i);
      continue;
    }
    auto fold_body = [&](const Graph& body) {
      return fold_constants_verified(body, eval, max_elements);
    };
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Graph> bodies, rewrite_bodies(node, fold_body));
    std::vector<Value> operands = rw.map_operands(node);
    std::vector<const Literal*> literals;
    for (Value v : operands) {
      const Node& def = rw.node(v);
      if (def.op != OpCode::kConstant) break;
      literals.push_back(&def.attr<ConstantAttrs>().literal());
    }
    // Counting before evaluating keeps iota and broadcast_in_dim from ever materializing a
    // huge array, even briefly.
    std::int64_t elements = 0;
    for (const Shape& s : node.results)
      elements = s.element_count() > std::numeric_limits<std::int64_t>::max() - elements
                     ? std::numeric_limits<std::int64_t>::max()
                     : elements + s.element_count();
    // Control flow is never folded: a loop over constants may run for long (or forever), and
    // compiling must not. Nor are the token ops: a token is no constant, and the others act.
    if (literals.size() == operands.size() && elements <= max_elements &&
        !is_control_flow(node.op) && !is_token_op(node.op)) {
      StatusOr<std::vector<Literal>> folded = eval(node, std::span<const Literal* const>(literals));
      if (folded.ok()) {
        if (folded->size() != node.results.size())
          return internal_error(str_cat("fold_constants: the evaluator returned ", folded->size(),
                                        " literals for node %", i, " (", op_name(node.op), ") of ",
                                        node.results.size(), " results"));
        std::vector<Value> values;
        for (std::size_t r = 0; r < node.results.size(); ++r) {
          Literal& lit = (*folded)[r];
          if (!lit.shape().same_type_and_dims(node.results[r]))
            return internal_error(str_cat("fold_constants: the evaluator returned ", lit.shape(),
                                          " for result ", r, " of node %", i, " (",
                                          op_name(node.op), "), which is ", node.results[r]));
          Node constant{OpCode::kConstant,
                        {},
                        ConstantAttrs{std::make_shared<const Literal>(lit.with_default_layout())},
                        {node.results[r]},
                        {}};
          values.push_back(rw.append(std::move(constant)).front());
        }
        rw.replace(i, std::move(values));
        continue;
      }
      // An evaluator error leaves the node as it is.
    }
    rw.replace(i, rw.append(Node{node.op, std::move(operands), node.attrs, node.results,
                                 std::move(bodies)}));
  }
  return std::move(rw).finish("fold_constants");
}

}  // namespace detail

/// A copy of `g` in which every node whose operands are all constants (iota too, having
/// none; parameters and constants never) is replaced by constants holding
/// `eval(node, operand_literals)`, in bodies too. `node` is the node as it is in `g`.
/// Folding goes forward, so chains of constant computations fold in one pass. A node stays
/// as it is when the evaluator returns an error or when its results would have more than
/// `max_elements` elements in all. The folded-away operands are left for
/// dead_code_elimination. INVALID_ARGUMENT if `g` does not verify; INTERNAL if the
/// evaluator returns results of the wrong number or shape.
template <NodeEvaluator Evaluator>
StatusOr<Graph> fold_constants(const Graph& g, Evaluator&& eval,
                               std::int64_t max_elements = kDefaultMaxFoldElements) {
  PJRT_LITE_RETURN_IF_ERROR(verify(g).with_context("fold_constants"));
  return detail::fold_constants_verified(g, eval, max_elements);
}

}  // namespace pjrt_lite
