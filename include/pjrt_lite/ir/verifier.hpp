#pragma once
// The verifier re-checks a whole graph: for graphs that come from a parser, a deserializer or
// a transform that edits GraphParts directly. A GraphBuilder's graphs pass by construction.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pjrt_lite/core/compiled_once.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {
/// verify() without the graph's name in the error.
PJRT_LITE_COMPILED_ONCE Status verify_graph(const Graph& g);
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

#if !defined(PJRT_LITE_CPU_EXTERN_KERNELS)
#include "pjrt_lite/ir/detail/verify_graph.hpp"  // IWYU pragma: export
#endif
