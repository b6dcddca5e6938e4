#pragma once
// Derivatives the user decides, as JAX has them: stop_gradient (jax.lax.stop_gradient),
// custom_jvp (jax.custom_jvp with defjvp) and custom_vjp (jax.custom_vjp with defvjp).
//
//   auto safe_log1pexp = custom_jvp(
//       [](const Tensor& x) { return log1p(exp(x)); },
//       [](const std::tuple<Tensor>& primals, const std::tuple<Tensor>& tangents) {
//         const Tensor& x = std::get<0>(primals);
//         return std::pair{log1p(exp(x)), std::get<0>(tangents) * (1.0 - 1.0 / (1.0 + exp(x)))};
//       });
//   auto clip_gradient = custom_vjp(
//       [](const Tensor& x) { return x; },
//       [](const Tensor& x) { return std::pair{x, x}; },   // fwd: (output, residuals)
//       [](const Tensor&, const Tensor& ct) { return std::tuple{clip(ct, -1.0, 1.0)}; });  // bwd
//
// Calling one on Tensors traces the function and its rule and records both in the caller's
// trace as one node (transforms/detail/custom_rules.hpp), which runs the function; jvp, grad,
// linearize and the Jacobians use the rule (the rule's own derivatives give the higher
// orders), vmap batches both. A custom_vjp function has no forward mode (jvp, jacfwd refuse
// it, as JAX does). Tensors the functions close over are constants to the rule: differentiating
// with respect to one is an error (pass it as an argument instead), as in JAX.
//
// Errors (a rule whose outputs do not match the function's, a bwd that returns the wrong
// number or shapes of cotangents) are recorded in the caller's trace and come out of the
// enclosing jit or transformation as a Status.

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/tensor.hpp"
#include "pjrt_lite/frontend/transforms.hpp"
#include "pjrt_lite/frontend/tree.hpp"
#include "pjrt_lite/transforms/detail/custom_rules.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

// A rank-0 s32 zero (a custom node's case index) and zeros shaped like `s`, in `b`.
inline Value zeros_in(GraphBuilder& b, const Shape& s) {
  return b.broadcast_in_dim(b.scalar(s.dtype(), 0), {s.dims().begin(), s.dims().end()}, {});
}

/// Emits case(0, operands...) over `branches` in the trace of the operands (the innermost
/// active one) and returns its results.
inline std::vector<Tensor> emit_custom_node(std::vector<Tensor> operands,
                                            std::vector<Graph> branches) {
  Trace* t = report_trace();
  if (t == nullptr) return {};
  std::vector<Value> values;
  for (Tensor& o : operands) {
    o = t->lift(o);
    if (!o.valid()) return {};
    values.push_back(o.value());
  }
  GraphBuilder& b = t->builder();
  std::vector<Tensor> out;
  for (Value v : b.case_op(b.scalar(DType::kS32, 0), values, std::move(branches)))
    out.push_back(t->wrap(v));
  return out;
}

// The shapes of `g`'s outputs from `from` on, checked against `expected`; `what` names them.
inline Status check_shapes(const char* name, const char* what, const std::vector<Shape>& got,
                           const std::vector<Shape>& expected) {
  if (got.size() != expected.size())
    return invalid_argument_error(str_cat(name, ": ", what, " has ", got.size(),
                                          " leaves, it must have ", expected.size()));
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!got[k].same_type_and_dims(expected[k]))
      return invalid_argument_error(str_cat(name, ": ", what, " leaf ", k, " has shape ", got[k],
                                            ", it must be ", expected[k]));
  return ok_status();
}

inline std::vector<Shape> slice_shapes(const std::vector<Shape>& s, std::size_t from,
                                       std::size_t count) {
  return {s.begin() + static_cast<std::ptrdiff_t>(from),
          s.begin() + static_cast<std::ptrdiff_t>(from + count)};
}

}  // namespace detail

/// jax.lax.stop_gradient: the same values, with zero derivatives (in every mode and order).
/// `x` is a Tensor or a tree of them.
template <class T>
T stop_gradient(const T& x) {
  const std::vector<Tensor> leaves = detail::tensor_leaves(x);
  GraphBuilder b(std::string{kStopGradientName});
  std::vector<Value> params;
  for (const Tensor& t : leaves) {
    if (!t.valid()) {
      detail::report(invalid_argument_error("stop_gradient: an argument leaf is an invalid Tensor"));
      return detail::invalid_like(x);
    }
    params.push_back(b.parameter(t.shape()));
  }
  StatusOr<Graph> identity = b.build(params);
  if (!detail::report(identity.status())) return detail::invalid_like(x);
  std::vector<Graph> branches;
  branches.push_back(*std::move(identity));
  const std::vector<Tensor> out = detail::emit_custom_node(leaves, std::move(branches));
  if (out.size() != leaves.size()) return detail::invalid_like(x);
  std::size_t next = 0;
  return tree::unflatten<Tensor>(x, out, next);
}

namespace detail {

/// f traced on the leaves of its arguments, as custom_jvp and custom_vjp begin: the leaves'
/// shapes, the traced function, and the shapes of its result's leaves.
template <class Out>
struct TracedPrimal {
  std::vector<Shape> shapes;
  Traced<Out> traced;
  std::vector<Shape> y_shapes;
  std::size_t n = 0, m = 0;  // the leaves of the arguments and of the result
};

/// A custom node's operands: the arguments' leaves, then what the function and then its rule
/// close over; their shapes; and the name of the node's branches.
struct CustomOperands {
  std::vector<Tensor> operands;
  std::vector<Shape> shapes;
  std::string branch_name;
};
template <class Out, class... Args>
CustomOperands custom_operands(const TracedPrimal<Out>& p, const std::vector<Tensor>& rule_captures, std::string_view kind,
                               const Args&... args) {
  const std::vector<Tensor> captures = concat(p.traced.captures, rule_captures);
  CustomOperands c{concat(tensor_leaves(args...), captures), p.shapes, {}};
  for (const Tensor& t : captures) c.shapes.push_back(t.shape());
  c.branch_name = custom_rule_name(kind, c.operands.size(), p.n);
  return c;
}

/// Reports `s` in the caller's trace; the empty result a failed custom_jvp/custom_vjp call
/// returns.
template <class Out>
Out failed(const Status& s) {
  report(s);
  return Out{};
}

template <class F, class... Args>
auto trace_primal(const char* name, F& f, const Args&... args)
    -> StatusOr<TracedPrimal<std::invoke_result_t<F&, const Args&...>>> {
  TracedPrimal<std::invoke_result_t<F&, const Args&...>> p;
  PJRT_LITE_ASSIGN_OR_RETURN(p.shapes, leaf_shapes(name, args...));
  PJRT_LITE_ASSIGN_OR_RETURN(p.traced, trace_function(name, f, p.shapes, args...));
  p.y_shapes = p.traced.graph.output_shapes();
  p.n = p.shapes.size();
  p.m = p.y_shapes.size();
  return p;
}

/// What custom_jvp and custom_vjp record, once each has traced its function and rule: the
/// custom node over (the arguments' leaves, what `f` and the rule close over, zeros of
/// `zero_shapes`), whose branches are branch(false) (f) and branch(true) (the rule), and its
/// results as a tree shaped like `skeleton` (f's result); `outputs` is the node's result count.
template <class Out, class Branch>
Out record_custom_node(const char* name, const Out& skeleton, Branch&& branch, std::vector<Tensor> operands,
                       const std::vector<Shape>& zero_shapes, std::size_t outputs) {
  std::vector<Graph> branches;
  for (bool rule : {false, true}) {
    StatusOr<Graph> g = branch(rule);
    if (!g.ok()) {
      report(g.status().with_context(name));
      return Out{};
    }
    branches.push_back(*std::move(g));
  }
  Trace* trace = report_trace();
  for (const Shape& sh : zero_shapes) operands.push_back(trace->wrap(zeros_in(trace->builder(), sh)));
  const std::vector<Tensor> out = emit_custom_node(std::move(operands), std::move(branches));
  if (out.size() != outputs || !trace->ok()) return invalid_like(skeleton);
  std::size_t next = 0;
  return tree::unflatten<Tensor>(skeleton, out, next);
}

}  // namespace detail

/// A function with a user forward-mode rule, as jax.custom_jvp: calls run `f`; jvp, grad and
/// the rest differentiate through `rule(primals, tangents)`, which takes two std::tuples of
/// the arguments (trees of Tensors) and returns (f(primals...), the tangent of the result),
/// a std::pair of trees shaped like f's result. The tangent must be linear in `tangents`
/// (reverse mode transposes it). Tangents of integer arguments are zeros of their type.
template <class F, class Rule>
class CustomJvp {
 public:
  CustomJvp(F f, Rule rule) : f_(std::move(f)), rule_(std::move(rule)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Out = std::invoke_result_t<const F&, const Args&...>;
    constexpr const char* name = "custom_jvp";
    auto primal = detail::trace_primal(name, f_, args...);
    if (!primal.ok()) return detail::failed<Out>(primal.status());
    const auto& p = *primal;
    auto traced_rule = detail::trace_function("custom_jvp rule", rule_,
                                              detail::concat(p.shapes, p.shapes),
                                              std::tuple<Args...>{args...},
                                              std::tuple<Args...>{args...});
    if (!traced_rule.ok()) return detail::failed<Out>(traced_rule.status());
    const std::vector<Shape> rule_out = traced_rule->graph.output_shapes();
    if (rule_out.size() != 2 * p.m)
      return detail::failed<Out>(invalid_argument_error(
          str_cat(name, ": the rule returned ", rule_out.size(), " leaves; it must return (primal out, tangent out), ", p.m,
                  " leaves each, shaped like the function's result")));
    Status s = detail::check_shapes(name, "the rule's primal output", detail::slice_shapes(rule_out, 0, p.m), p.y_shapes);
    if (s.ok())
      s = detail::check_shapes(name, "the rule's tangent output", detail::slice_shapes(rule_out, p.m, p.m), p.y_shapes);
    if (!s.ok()) return detail::failed<Out>(s);
    // x: the arguments' leaves, then what f and the rule close over; t: one per x.
    detail::CustomOperands c = detail::custom_operands(p, traced_rule->captures, kCustomJvpName, args...);
    const std::vector<Shape>& x_shapes = c.shapes;
    const std::string& branch_name = c.branch_name;
    auto branch = [&](bool rule) -> StatusOr<Graph> {
      GraphBuilder b(rule ? branch_name + ".rule" : branch_name);
      std::vector<Value> x, t;
      for (const Shape& sh : x_shapes) x.push_back(b.parameter(sh));
      for (const Shape& sh : x_shapes) t.push_back(b.parameter(sh));
      std::vector<Value> out;
      if (!rule) {
        std::vector<Value> in(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(p.n));
        in.insert(in.end(), x.begin() + static_cast<std::ptrdiff_t>(p.n),
                  x.begin() + static_cast<std::ptrdiff_t>(p.n + p.traced.captures.size()));
        out = b.inline_graph(p.traced.graph, in);
        for (const Shape& sh : p.y_shapes) out.push_back(detail::zeros_in(b, sh));
      } else {
        std::vector<Value> in(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(p.n));
        in.insert(in.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(p.n));
        in.insert(in.end(), x.begin() + static_cast<std::ptrdiff_t>(p.n + p.traced.captures.size()), x.end());
        out = b.inline_graph(traced_rule->graph, in);
      }
      return b.build(out);
    };
    return detail::record_custom_node(name, p.traced.skeleton, branch, std::move(c.operands), x_shapes, 2 * p.m);
  }

 private:
  F f_;
  Rule rule_;
};

/// f with the forward-mode rule `rule` (see CustomJvp).
template <class F, class Rule>
CustomJvp<F, Rule> custom_jvp(F f, Rule rule) {
  return CustomJvp<F, Rule>(std::move(f), std::move(rule));
}

/// A function with a user reverse-mode rule, as jax.custom_vjp: calls run `f`; grad, vjp and
/// jacrev call `fwd(args...)`, which returns (f(args...), residuals) with residuals any tree
/// of Tensors, and `bwd(residuals, cotangent)`, which returns a std::tuple with one
/// cotangent tree per argument, shaped like it (those of integer arguments are ignored).
/// Forward mode is refused (UNIMPLEMENTED), as in JAX.
template <class F, class Fwd, class Bwd>
class CustomVjp {
 public:
  CustomVjp(F f, Fwd fwd, Bwd bwd) : f_(std::move(f)), fwd_(std::move(fwd)), bwd_(std::move(bwd)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Out = std::invoke_result_t<const F&, const Args&...>;
    constexpr const char* name = "custom_vjp";
    auto primal = detail::trace_primal(name, f_, args...);
    if (!primal.ok()) return detail::failed<Out>(primal.status());
    const auto& p = *primal;
    // The rule as one function: (args, ct) -> (fwd's output, bwd's cotangents).
    auto rule = [this](const std::tuple<Args...>& xs, const Out& ct) {
      auto forward = std::apply(fwd_, xs);
      return std::pair{std::move(forward.first), bwd_(forward.second, ct)};
    };
    auto traced_rule = detail::trace_function("custom_vjp rule", rule, detail::concat(p.shapes, p.y_shapes),
                                              std::tuple<Args...>{args...}, p.traced.skeleton);
    if (!traced_rule.ok()) return detail::failed<Out>(traced_rule.status());
    const std::vector<Shape> rule_out = traced_rule->graph.output_shapes();
    if (rule_out.size() != p.m + p.n)
      return detail::failed<Out>(invalid_argument_error(
          str_cat(name, ": fwd's output and bwd's cotangents have ", rule_out.size(),
                  " leaves; they must have ", p.m, " (shaped like the function's result) and ", p.n,
                  " (one per argument leaf: bwd returns a std::tuple with one tree per argument)")));
    Status s = detail::check_shapes(name, "fwd's output", detail::slice_shapes(rule_out, 0, p.m), p.y_shapes);
    for (std::size_t i = 0; s.ok() && i < p.n; ++i)
      if (is_inexact(p.shapes[i].dtype()) && !rule_out[p.m + i].same_type_and_dims(p.shapes[i]))
        s = invalid_argument_error(str_cat(name, ": bwd's cotangent ", i, " has shape ", rule_out[p.m + i],
                                           ", it must be the argument's, ", p.shapes[i]));
    if (!s.ok()) return detail::failed<Out>(s);
    detail::CustomOperands c = detail::custom_operands(p, traced_rule->captures, kCustomVjpName, args...);
    const std::vector<Shape>& x_shapes = c.shapes;
    const std::string& branch_name = c.branch_name;
    const std::size_t k = c.operands.size();
    const std::size_t nf = p.traced.captures.size();
    auto branch = [&](bool with_rule) -> StatusOr<Graph> {
      GraphBuilder b(with_rule ? branch_name + ".rule" : branch_name);
      std::vector<Value> x, ct;
      for (const Shape& sh : x_shapes) x.push_back(b.parameter(sh));
      for (const Shape& sh : p.y_shapes) ct.push_back(b.parameter(sh));
      std::vector<Value> out;
      if (!with_rule) {
        std::vector<Value> in(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(p.n + nf));
        out = b.inline_graph(p.traced.graph, in);
        for (const Shape& sh : x_shapes) out.push_back(detail::zeros_in(b, sh));
      } else {
        std::vector<Value> in(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(p.n));
        in.insert(in.end(), ct.begin(), ct.end());
        in.insert(in.end(), x.begin() + static_cast<std::ptrdiff_t>(p.n + nf), x.end());
        const std::vector<Value> r = b.inline_graph(traced_rule->graph, in);
        out.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(p.m));
        for (std::size_t i = 0; i < k; ++i)
          out.push_back(i < p.n && is_inexact(x_shapes[i].dtype()) ? r[p.m + i] : detail::zeros_in(b, x_shapes[i]));
      }
      return b.build(out);
    };
    return detail::record_custom_node(name, p.traced.skeleton, branch, std::move(c.operands), p.y_shapes, p.m + k);
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
};

/// f with the reverse-mode rule (fwd, bwd) (see CustomVjp).
template <class F, class Fwd, class Bwd>
CustomVjp<F, Fwd, Bwd> custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return CustomVjp<F, Fwd, Bwd>(std::move(f), std::move(fwd), std::move(bwd));
}

}  // namespace pjrt_lite
