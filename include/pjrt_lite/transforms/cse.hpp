#pragma once
// Common subexpression elimination: one node for each distinct computation.

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/fingerprint.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/rewriter.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

/// True when two graphs compute the same thing the same way: equal but for the names of the
/// graphs and of their bodies, which do not change what they compute (see fingerprint.hpp).
inline bool same_computation(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes() || !std::ranges::equal(a.outputs(), b.outputs())) return false;
  for (std::int64_t i = 0; i < a.num_nodes(); ++i) {
    const Node& x = a.node(i);
    const Node& y = b.node(i);
    if (x.op != y.op || x.operands != y.operands || x.attrs != y.attrs || x.results != y.results ||
        x.bodies.size() != y.bodies.size())
      return false;
    for (std::size_t k = 0; k < x.bodies.size(); ++k)
      if (!same_computation(x.bodies[k], y.bodies[k])) return false;
  }
  return true;
}

/// The operands as CSE compares them: sorted for commutative ops, so a+b meets b+a.
inline std::vector<Value> canonical_operands(OpCode op, std::vector<Value> operands) {
  if (is_commutative(op))
    std::ranges::sort(operands, [](Value a, Value b) {
      return a.node != b.node ? a.node < b.node : a.index < b.index;
    });
  return operands;
}

/// common_subexpression_elimination on a graph known to be verified.
inline StatusOr<Graph> eliminate_common_subexpressions(const Graph& g) {
  GraphRewriter rw(g);
  // Hash of (op, canonical operands, attributes, bodies) -> new nodes with that hash.
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> seen;
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Graph> bodies,
                               rewrite_bodies(node, eliminate_common_subexpressions));
    // Each parameter is its own input, however alike two of them look; two receives of the
    // same token take two values.
    if (node.op == OpCode::kParameter || has_side_effects(node)) {
      rw.copy(i, std::move(bodies));
      continue;
    }
    std::vector<Value> operands = rw.map_operands(node);
    const std::vector<Value> key = canonical_operands(node.op, operands);
    Hasher h;
    h.i64(static_cast<std::int64_t>(node.op));
    for (Value v : key) {
      h.i64(v.node);
      h.i64(v.index);
    }
    hash_attributes(h, node.attrs);  // constants by shape and bytes
    for (const Graph& body : bodies) h.word(fingerprint(body));
    std::vector<std::int32_t>& bucket = seen[h.value()];

    bool merged = false;
    for (std::int32_t candidate : bucket) {
      const Node& c = rw.node(Value{candidate, 0, 0});
      if (c.op != node.op || canonical_operands(c.op, c.operands) != key || c.attrs != node.attrs ||
          c.bodies.size() != bodies.size())
        continue;
      bool same_bodies = true;
      for (std::size_t k = 0; k < bodies.size() && same_bodies; ++k)
        same_bodies = same_computation(c.bodies[k], bodies[k]);
      if (!same_bodies) continue;
      std::vector<Value> values;
      for (std::size_t r = 0; r < c.results.size(); ++r)
        values.push_back(Value{candidate, static_cast<std::int32_t>(r), 0});
      rw.replace(i, std::move(values));
      merged = true;
      break;
    }
    if (merged) continue;
    bucket.push_back(static_cast<std::int32_t>(rw.num_nodes()));
    rw.replace(i, rw.append(Node{node.op, std::move(operands), node.attrs, node.results,
                                 std::move(bodies)}));
  }
  return std::move(rw).finish("common_subexpression_elimination");
}

}  // namespace detail

/// A copy of `g` in which nodes that compute the same thing are merged into the first of
/// them: same op, same operands (in any order for commutative ops), equal attributes
/// (constants by shape and bytes, so 0.0 and -0.0 stay apart and NaNs with equal bits
/// merge) and bodies that are equal up to names. Works inside bodies too. Parameters are
/// never merged. One pass merges whole chains, so running it twice gives what running it
/// once did. Merged-away nodes disappear; nothing else is removed (see
/// dead_code_elimination). INVALID_ARGUMENT if `g` does not verify.
inline StatusOr<Graph> common_subexpression_elimination(const Graph& g) {
  PJRT_LITE_RETURN_IF_ERROR(verify(g).with_context("common_subexpression_elimination"));
  return detail::eliminate_common_subexpressions(g);
}

}  // namespace pjrt_lite
