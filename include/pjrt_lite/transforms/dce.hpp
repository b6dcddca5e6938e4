#pragma once
// Dead code elimination: drops the nodes that no output depends on.

#include <cstdint>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/rewriter.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {
/// dead_code_elimination on a graph known to be verified.
inline StatusOr<Graph> eliminate_dead_code(const Graph& g) {
  const auto n = static_cast<std::size_t>(g.num_nodes());
  std::vector<bool> live(n, false);
  for (Value v : g.outputs()) live[static_cast<std::size_t>(v.node)] = true;
  // Operands come before their users, so one backward sweep reaches everything.
  for (std::size_t i = n; i-- > 0;) {
    const Node& node = g.node(static_cast<std::int64_t>(i));
    if (node.op == OpCode::kParameter) live[i] = true;  // the signature must not change
    if (has_side_effects(node)) live[i] = true;       // a send or outfeed acts, used or not
    if (!live[i]) continue;
    for (Value v : node.operands) live[static_cast<std::size_t>(v.node)] = true;
  }
  GraphRewriter rw(g);
  for (std::size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    const auto index = static_cast<std::int64_t>(i);
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Graph> bodies,
                               rewrite_bodies(g.node(index), eliminate_dead_code));
    rw.copy(index, std::move(bodies));
  }
  return std::move(rw).finish("dead_code_elimination");
}
}  // namespace detail

/// A copy of `g` without the nodes that no output depends on, in bodies too. Every parameter
/// stays, used or not, so the signature does not change; a multi-result node stays whole
/// when any of its results is used. Nodes keep their relative order, so a graph without dead
/// code comes back equal to `g`. INVALID_ARGUMENT if `g` does not verify.
inline StatusOr<Graph> dead_code_elimination(const Graph& g) {
  PJRT_LITE_RETURN_IF_ERROR(verify(g).with_context("dead_code_elimination"));
  return detail::eliminate_dead_code(g);
}

}  // namespace pjrt_lite
