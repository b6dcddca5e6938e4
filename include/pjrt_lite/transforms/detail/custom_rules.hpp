#pragma once
// IWYU pragma: private, include "pjrt_lite/transforms/autodiff.hpp"
// User-defined derivative rules in a graph: stop_gradient, custom_jvp and custom_vjp (as
// jax.lax.stop_gradient, jax.custom_jvp and jax.custom_vjp), and how autodiff and vmap treat
// them.
//
// Each is a `case` node whose index is the constant 0, so that any backend runs it as it runs
// any case: branch 0, the primal function. What the other branch holds and how the node's
// operands are laid out is told by branch 0's name (kStopGradientName, kCustomJvpName,
// kCustomVjpName, followed by ":k:n" for the two rules). The graph stays self-contained:
// printing, serializing and running it need nothing but the IR.
//
//   stop_gradient  case(0, x...) -> x...; one branch, the identity. Its tangent is zero.
//   custom_jvp     case(0, x..., t...) -> (y..., ty...) over k values x (the function's n
//                  arguments, then the tensors it closes over) and one t per x. Branch 0:
//                  (f(x), zeros); branch 1: the user's rule (y, ty) = jvp(x, t). The node's
//                  t operands are zeros and its ty results unused; autodiff runs branch 1
//                  with the real tangents (forward mode) or transposes its ty in t (reverse
//                  mode: the rule's vjp in t, at t = 0, since the rule is linear in t).
//   custom_vjp     case(0, x..., ct...) -> (y..., ct_x...) with one ct per y. Branch 0:
//                  (f(x), zeros); branch 1: (fwd(x).y, bwd(fwd(x).res, ct)). Reverse mode
//                  computes y with fwd's ops (as JAX does) and sends the cotangents of y
//                  through branch 1; forward mode is refused, as in JAX.
//
// Derivatives of higher order differentiate the rule itself, as JAX does: the derivative
// graph holds the rule's ops (and the primal node again), which the next transformation sees
// like any others.

#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1 {

inline constexpr std::string_view kStopGradientName = "pjrt_lite.stop_gradient";
inline constexpr std::string_view kCustomJvpName = "pjrt_lite.custom_jvp";
inline constexpr std::string_view kCustomVjpName = "pjrt_lite.custom_vjp";

namespace detail {

/// Which user rule a node carries, and its sizes: k values x (the first n of them the
/// function's own arguments, the rest tensors it closes over).
struct CustomRule {
  enum class Kind { kNone, kStopGradient, kCustomJvp, kCustomVjp };
  Kind kind = Kind::kNone;
  std::size_t k = 0;
  std::size_t n = 0;
};

/// The name of a custom_jvp or custom_vjp node's branch 0.
inline std::string custom_rule_name(std::string_view prefix, std::size_t k, std::size_t n) {
  return str_cat(prefix, ":", k, ":", n);
}

/// The rule `node` carries (kNone for any other node).
inline CustomRule custom_rule_of(const Node& node) {
  CustomRule r;
  if (node.op != OpCode::kCase || node.bodies.empty()) return r;
  const std::string& name = node.bodies[0].name();
  const auto starts = [&](std::string_view p) { return name.compare(0, p.size(), p) == 0; };
  if (starts(kStopGradientName) && node.bodies.size() == 1) {
    r.kind = CustomRule::Kind::kStopGradient;
    r.k = r.n = node.operands.size() - 1;
    return r;
  }
  CustomRule::Kind kind;
  std::string_view rest;
  if (starts(kCustomJvpName)) {
    kind = CustomRule::Kind::kCustomJvp;
    rest = std::string_view(name).substr(kCustomJvpName.size());
  } else if (starts(kCustomVjpName)) {
    kind = CustomRule::Kind::kCustomVjp;
    rest = std::string_view(name).substr(kCustomVjpName.size());
  } else {
    return r;
  }
  // ":k:n", perhaps followed by a suffix a transformation added.
  std::size_t nums[2] = {0, 0};
  for (std::size_t& v : nums) {
    if (rest.empty() || rest[0] != ':') return r;
    rest.remove_prefix(1);
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (ec != std::errc()) return r;
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  }
  if (node.bodies.size() != 2 || nums[1] > nums[0] || node.operands.size() < 1 + nums[0])
    return r;
  r.kind = kind;
  r.k = nums[0];
  r.n = nums[1];
  return r;
}

/// `g` under another name (its parameters and outputs unchanged).
inline StatusOr<Graph> renamed(const Graph& g, const std::string& name) {
  if (g.name() == name) return g;
  GraphBuilder b(name);
  std::vector<Value> params;
  for (Value v : g.parameters()) params.push_back(b.parameter(g.shape(v)));
  return b.build(b.inline_graph(g, params));
}

}  // namespace detail

}  // namespace pjrt_lite
