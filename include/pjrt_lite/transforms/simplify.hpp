#pragma once
// simplify: algebraic simplification, constant folding, CSE and DCE, repeated until the
// graph stops changing. One pass opens work for another (folding makes constants that the
// algebra can use, the algebra makes duplicates for CSE, all of them leave dead code).

#include <cstdint>
#include <utility>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/algebraic.hpp"
#include "pjrt_lite/transforms/cse.hpp"
#include "pjrt_lite/transforms/dce.hpp"
#include "pjrt_lite/transforms/fold.hpp"

namespace pjrt_lite::inline v0_1 {

/// Limits of simplify.
struct SimplifyOptions {
  /// Rounds of all four passes at most; each round but the last changes the graph.
  int max_rounds = 16;
  /// fold_constants' max_elements.
  std::int64_t max_fold_elements = kDefaultMaxFoldElements;
};

/// Runs algebraic_simplify, fold_constants (with `eval`), common_subexpression_elimination
/// and dead_code_elimination in rounds until a round changes nothing or max_rounds have run,
/// and returns the result: the same outputs and parameters, verified, bodies simplified too.
/// At a fixed point simplify(simplify(g)) == simplify(g). INVALID_ARGUMENT if `g` does not
/// verify; INTERNAL if the evaluator returns results of the wrong number or shape.
template <NodeEvaluator Evaluator>
StatusOr<Graph> simplify(const Graph& g, Evaluator&& eval, SimplifyOptions options = {}) {
  PJRT_LITE_RETURN_IF_ERROR(verify(g).with_context("simplify"));
  Graph current = g;
  for (int round = 0; round < options.max_rounds; ++round) {
    PJRT_LITE_ASSIGN_OR_RETURN(Graph next, detail::simplify_algebra(current));
    PJRT_LITE_ASSIGN_OR_RETURN(
        next, detail::fold_constants_verified(next, eval, options.max_fold_elements));
    PJRT_LITE_ASSIGN_OR_RETURN(next, detail::eliminate_common_subexpressions(next));
    PJRT_LITE_ASSIGN_OR_RETURN(next, detail::eliminate_dead_code(next));
    const bool changed = !(next == current);
    current = std::move(next);
    if (!changed) break;
  }
  return current;
}

}  // namespace pjrt_lite
