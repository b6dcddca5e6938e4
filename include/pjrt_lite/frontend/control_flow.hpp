#pragma once
// Control flow for the front end, as jax.lax has it: cond, switch_, while_loop, fori_loop and
// scan. Each traces its C++ callables into graphs of their own and emits the IR's if, case or
// while op with those graphs as regions, in the caller's trace:
//
//   Tensor y = cond(x > 0.0, [](Tensor x) { return x * 2.0; }, [](Tensor x) { return -x; }, x);
//   Tensor p = fori_loop(0, 10, [](Tensor i, Tensor c) { return c * 2.0; }, x);   // x * 2^10
//   auto [last, all] = scan([](Tensor c, Tensor x) { return std::pair{c + x, c + x}; }, z, xs);
//
// Operands and carries are trees of Tensors (frontend/tree.hpp). A region takes its values
// as parameters and captures nothing, so the outer tensors a callable closes over are passed
// in as extra operands (a loop carries them unchanged). Errors (branches or a loop body whose
// results do not match, a predicate that is not a scalar) are recorded in the caller's trace
// and come out of jit as a Status, worded as JAX words them.
//
// Differentiation: forward mode through all of them. Reverse mode through cond and switch_,
// and through fori_loop with int bounds and scan (their loops run a fixed number of times,
// which transforms/detail/control_flow_rules.hpp recognizes); reverse mode through
// while_loop, or fori_loop with Tensor bounds, is refused as JAX refuses it.
// Not thread-safe: like every traced op, called by the thread that builds the trace.

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/tensor.hpp"
#include "pjrt_lite/frontend/transforms.hpp"
#include "pjrt_lite/frontend/tree.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

inline std::string describe_shapes(const std::vector<Shape>& shapes) {
  std::string out = "(";
  for (std::size_t k = 0; k < shapes.size(); ++k) out += str_cat(k ? ", " : "", shapes[k]);
  return out + ")";
}

inline std::vector<Shape> output_shapes(const Graph& g) {
  std::vector<Shape> out;
  for (Value v : g.outputs()) out.push_back(g.shape(v));
  return out;
}

inline bool same_shapes(const std::vector<Shape>& a, const std::vector<Shape>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!a[k].same_type_and_dims(b[k])) return false;
  return true;
}

/// A region taking parameters of `shapes` that returns `g` applied to the parameters
/// `args` (by number), then the parameters `passthrough`.
inline StatusOr<Graph> region_of(const std::string& name, const std::vector<Shape>& shapes,
                                 const Graph& g, const std::vector<std::size_t>& args,
                                 const std::vector<std::size_t>& passthrough) {
  GraphBuilder b(name);
  std::vector<Value> params;
  for (const Shape& s : shapes) params.push_back(b.parameter(s));
  std::vector<Value> in;
  for (std::size_t k : args) in.push_back(params[k]);
  std::vector<Value> out = b.inline_graph(g, in);
  for (std::size_t k : passthrough) out.push_back(params[k]);
  return b.build(out);
}

inline std::vector<std::size_t> index_range(std::size_t from, std::size_t count) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < count; ++k) out.push_back(from + k);
  return out;
}

inline std::vector<Shape> shapes_of(const std::vector<Tensor>& ts) {
  std::vector<Shape> out;
  for (const Tensor& t : ts) out.push_back(t.shape());
  return out;
}

/// The trace control flow emits into: the innermost one, with every tensor of `ts` lifted
/// into it; null (error recorded when there is a trace) when one is unusable.
inline Trace* emit_trace(const char* name, std::vector<Tensor>& ts) {
  Trace* t = report_trace();
  if (t == nullptr) return nullptr;
  for (std::size_t k = 0; k < ts.size(); ++k) {
    if (!ts[k].valid()) {
      t->fail(invalid_argument_error(
          str_cat(name, ": operand leaf ", k, " is an invalid Tensor (or not a Tensor)")));
      return nullptr;
    }
    ts[k] = t->lift(ts[k]);
    if (!ts[k].valid()) return nullptr;
  }
  return t;
}

inline std::vector<Value> values_of(const std::vector<Tensor>& ts) {
  std::vector<Value> out;
  for (const Tensor& t : ts) out.push_back(t.value());
  return out;
}

/// cond and switch_: `index` (s32 scalar, or the pred of an if when `is_if`) selects one of
/// the traced branches, all run on `operands` (leaves) and their own captures.
template <class Out>
Out emit_branches(const char* name, bool is_if, Tensor selector,
                  std::vector<StatusOr<Traced<Out>>> branches, std::vector<Tensor> operands) {
  for (auto& br : branches)
    if (!br.ok()) {
      report(br.status());
      return Out{};
    }
  const std::vector<Shape> first = output_shapes(branches[0]->graph);
  for (std::size_t k = 1; k < branches.size(); ++k) {
    const std::vector<Shape> other = output_shapes(branches[k]->graph);
    if (!same_shapes(first, other)) {
      report(invalid_argument_error(
          is_if ? str_cat(name, ": true_fun and false_fun output must have identical types, got ",
                          describe_shapes(other), " and ", describe_shapes(first))
                : str_cat(name, ": branch 0 and ", k,
                          " outputs must have identical types, got ", describe_shapes(first),
                          " and ", describe_shapes(other))));
      return invalid_like(branches[0]->skeleton);
    }
  }
  const std::size_t n = operands.size();
  std::vector<Tensor> all = operands;
  std::vector<std::size_t> capture_start;
  for (auto& br : branches) {
    capture_start.push_back(all.size());
    all.insert(all.end(), br->captures.begin(), br->captures.end());
  }
  all.push_back(selector);
  Trace* t = emit_trace(name, all);
  if (t == nullptr) return invalid_like(branches[0]->skeleton);
  selector = all.back();
  all.pop_back();
  const std::vector<Shape> shapes = shapes_of(all);
  std::vector<Graph> regions;
  for (std::size_t k = 0; k < branches.size(); ++k) {
    std::vector<std::size_t> args = index_range(0, n);
    for (std::size_t c = 0; c < branches[k]->captures.size(); ++c)
      args.push_back(capture_start[k] + c);
    StatusOr<Graph> r = region_of(str_cat(name, "_branch", k), shapes, branches[k]->graph, args, {});
    if (!r.ok()) {
      t->fail(r.status().with_context(name));
      return invalid_like(branches[0]->skeleton);
    }
    regions.push_back(std::move(r).value());
  }
  GraphBuilder& b = t->builder();
  std::vector<Value> out;
  if (is_if) {
    // regions are (false, true), as switch_ numbers them; if takes (true, false).
    out = b.if_op(selector.value(), values_of(all), std::move(regions[1]), std::move(regions[0]));
  } else {
    out = b.case_op(selector.value(), values_of(all), std::move(regions));
  }
  if (!t->ok()) return invalid_like(branches[0]->skeleton);
  std::vector<Tensor> wrapped;
  for (Value v : out) wrapped.push_back(t->wrap(v));
  std::size_t next = 0;
  return tree::unflatten<Tensor>(branches[0]->skeleton, wrapped, next);
}

/// A rank-0 pred or number `what` as an operand of cond/switch_, or an error.
inline StatusOr<Tensor> scalar_selector(const char* name, const char* what, const Tensor& x) {
  if (!x.valid()) return invalid_argument_error(str_cat(name, ": ", what, " is an invalid Tensor"));
  if (x.rank() != 0)
    return invalid_argument_error(
        str_cat(name, ": ", what, " must be a scalar, got an array of shape ", x.shape()));
  if (is_complex(x.dtype()))
    return invalid_argument_error(
        str_cat(name, ": ", what, " type must be either boolean or number, got ", dtype_name(x.dtype())));
  return x;
}

/// The leaf shapes of a tree, or an error naming `name` and `what`.
template <class T>
StatusOr<std::vector<Shape>> tree_shapes(const char* name, const char* what, const T& t) {
  std::vector<Shape> shapes;
  for (const Tensor& x : tensor_leaves(t)) {
    if (!x.valid())
      return invalid_argument_error(
          str_cat(name, ": ", what, " leaf ", shapes.size(), " is an invalid Tensor (or not a Tensor)"));
    shapes.push_back(x.shape());
  }
  return shapes;
}

/// A fixed-count loop: i from `lower` while i < `upper` (both s32 constants), carrying
/// (i, carry..., invariant...) through `step`, a graph from (i, carry..., invariant...) to
/// carry'. This is the form transforms/detail/control_flow_rules.hpp differentiates in
/// reverse mode. Returns the carry's final values.
inline StatusOr<std::vector<Value>> counted_loop(GraphBuilder& b, std::int32_t lower, std::int32_t upper,
                                       const std::vector<Value>& carry,
                                       const std::vector<Value>& invariant, const Graph& step) {
  std::vector<Shape> shapes{Shape(DType::kS32, {})};
  for (Value v : carry) shapes.push_back(b.shape(v).value_or(Shape()));
  for (Value v : invariant) shapes.push_back(b.shape(v).value_or(Shape()));
  GraphBuilder cb("cond");
  std::vector<Value> cp;
  for (const Shape& s : shapes) cp.push_back(cb.parameter(s));
  StatusOr<Graph> cond =
      cb.build({cb.compare(cp[0], cb.constant(upper), ComparisonDirection::kLt)});
  GraphBuilder bb("body");
  std::vector<Value> bp;
  for (const Shape& s : shapes) bp.push_back(bb.parameter(s));
  std::vector<Value> out{bb.add(bp[0], bb.constant(std::int32_t{1}))};
  for (Value v : bb.inline_graph(step, bp)) out.push_back(v);
  for (std::size_t k = 1 + carry.size(); k < bp.size(); ++k) out.push_back(bp[k]);
  StatusOr<Graph> body = bb.build(out);
  PJRT_LITE_RETURN_IF_ERROR(cond.status());
  PJRT_LITE_RETURN_IF_ERROR(body.status());
  std::vector<Value> operands{b.constant(lower)};
  operands.insert(operands.end(), carry.begin(), carry.end());
  operands.insert(operands.end(), invariant.begin(), invariant.end());
  std::vector<Value> r = b.while_loop(operands, std::move(cond).value(), std::move(body).value());
  PJRT_LITE_RETURN_IF_ERROR(b.status());
  return std::vector<Value>{r.begin() + 1, r.begin() + 1 + static_cast<std::ptrdiff_t>(carry.size())};
}

inline Status checked_int32(const char* name, const char* what, std::int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX)
    return invalid_argument_error(str_cat(name, ": ", what, " ", v, " does not fit in s32"));
  return ok_status();
}

}  // namespace detail

/// jax.lax.cond: true_fn(operands...) when the rank-0 `pred` is true (for a number: nonzero),
/// else false_fn(operands...). Both must return the same type, with leaves of the same
/// shapes.
template <class TrueFn, class FalseFn, class... Ops>
auto cond(const Tensor& pred, TrueFn true_fn, FalseFn false_fn, const Ops&... operands) {
  using Out = std::invoke_result_t<TrueFn&, const tree::Rebind<Ops, Tensor>&...>;
  static_assert(std::is_same_v<Out, std::invoke_result_t<FalseFn&, const tree::Rebind<Ops, Tensor>&...>>,
                "cond: true_fn and false_fn must return the same type");
  StatusOr<Tensor> p = detail::scalar_selector("cond", "the predicate", pred);
  if (!p.ok()) {
    detail::report(p.status());
    return Out{};
  }
  Tensor selector = *p;
  if (!is_pred(selector.dtype())) selector = selector != np::zeros_like(selector);
  StatusOr<std::vector<Shape>> shapes = detail::leaf_shapes("cond", operands...);
  if (!shapes.ok()) {
    detail::report(shapes.status());
    return Out{};
  }
  std::vector<StatusOr<detail::Traced<Out>>> branches;
  branches.push_back(detail::trace_function("cond false_fn", false_fn, *shapes, operands...));
  branches.push_back(detail::trace_function("cond true_fn", true_fn, *shapes, operands...));
  return detail::emit_branches<Out>("cond", true, selector, std::move(branches),
                                    detail::tensor_leaves(operands...));
}

/// jax.lax.switch: branches[index](operands...), the index clamped into range as JAX clamps
/// it. Every branch returns the same type, with leaves of the same shapes. Branches of
/// different lambda types go in a std::vector of std::function.
template <class F, class... Ops>
auto switch_(const Tensor& index, const std::vector<F>& branches, const Ops&... operands) {
  using Out = std::invoke_result_t<const F&, const tree::Rebind<Ops, Tensor>&...>;
  auto fail = [](Status s) {
    detail::report(s);
    return Out{};
  };
  StatusOr<Tensor> i = detail::scalar_selector("switch", "the index", index);
  if (!i.ok()) return fail(i.status());
  if (!is_integral(i->dtype()) && !is_pred(i->dtype()))
    return fail(invalid_argument_error(
        str_cat("switch: the index must be an integer scalar, got ", dtype_name(i->dtype()))));
  if (branches.empty()) return fail(invalid_argument_error("switch: empty branches"));
  StatusOr<std::vector<Shape>> shapes = detail::leaf_shapes("switch", operands...);
  if (!shapes.ok()) return fail(shapes.status());
  Tensor selector = np::clip(i->astype(DType::kS32), 0, static_cast<int>(branches.size()) - 1);
  std::vector<StatusOr<detail::Traced<Out>>> traced;
  for (const F& f : branches) {
    F copy = f;
    traced.push_back(detail::trace_function("switch branch", copy, *shapes, operands...));
  }
  return detail::emit_branches<Out>("switch", false, selector, std::move(traced),
                                    detail::tensor_leaves(operands...));
}

/// jax.lax.while_loop: starting from `init`, carry = body_fn(carry) while cond_fn(carry)
/// (a rank-0 pred) holds. body_fn returns a tree of the type and shapes of `init`. Reverse
/// mode cannot differentiate it (the number of turns is not known when the graph is
/// built); use fori_loop with int bounds or scan.
template <class CondFn, class BodyFn, class Init>
auto while_loop(CondFn cond_fn, BodyFn body_fn, const Init& init) {
  using Carry = tree::Rebind<Init, Tensor>;
  using CondOut = std::invoke_result_t<CondFn&, const Carry&>;
  using BodyOut = std::invoke_result_t<BodyFn&, const Carry&>;
  static_assert(std::is_same_v<BodyOut, Carry>,
                "while_loop: body_fn must return the carry's type (the type of init)");
  static_assert(std::is_same_v<CondOut, Tensor>, "while_loop: cond_fn must return a Tensor");
  auto fail = [&](Status s) {
    detail::report(s);
    return detail::invalid_like(Carry(init));
  };
  StatusOr<std::vector<Shape>> shapes = detail::tree_shapes("while_loop", "init", init);
  if (!shapes.ok()) return fail(shapes.status());
  auto c = detail::trace_function("while_loop cond_fun", cond_fn, *shapes, init);
  if (!c.ok()) return fail(c.status());
  const std::vector<Shape> cond_out = detail::output_shapes(c->graph);
  if (cond_out.size() != 1 || cond_out[0].rank() != 0 || !is_pred(cond_out[0].dtype()))
    return fail(invalid_argument_error(
        str_cat("while_loop: cond_fun must return a boolean scalar, but got output type(s) ",
                detail::describe_shapes(cond_out))));
  auto body = detail::trace_function("while_loop body_fun", body_fn, *shapes, init);
  if (!body.ok()) return fail(body.status());
  const std::vector<Shape> body_out = detail::output_shapes(body->graph);
  if (!detail::same_shapes(body_out, *shapes))
    return fail(invalid_argument_error(str_cat(
        "while_loop: body_fun output and input must have identical types, got input ",
        detail::describe_shapes(*shapes), " and output ", detail::describe_shapes(body_out))));
  const std::size_t n = shapes->size();
  std::vector<Tensor> all = detail::tensor_leaves(init);
  all.insert(all.end(), c->captures.begin(), c->captures.end());
  all.insert(all.end(), body->captures.begin(), body->captures.end());
  Trace* t = detail::emit_trace("while_loop", all);
  if (t == nullptr) return detail::invalid_like(Carry(init));
  const std::vector<Shape> all_shapes = detail::shapes_of(all);
  std::vector<std::size_t> cond_args = detail::index_range(0, n);
  for (std::size_t k = 0; k < c->captures.size(); ++k) cond_args.push_back(n + k);
  std::vector<std::size_t> body_args = detail::index_range(0, n);
  for (std::size_t k = 0; k < body->captures.size(); ++k)
    body_args.push_back(n + c->captures.size() + k);
  StatusOr<Graph> cond_region = detail::region_of("cond", all_shapes, c->graph, cond_args, {});
  StatusOr<Graph> body_region = detail::region_of("body", all_shapes, body->graph, body_args,
                                                  detail::index_range(n, all.size() - n));
  if (!cond_region.ok() || !body_region.ok()) {
    t->fail((cond_region.ok() ? body_region.status() : cond_region.status()).with_context("while_loop"));
    return detail::invalid_like(Carry(init));
  }
  std::vector<Value> r = t->builder().while_loop(detail::values_of(all), std::move(cond_region).value(),
                                                 std::move(body_region).value());
  if (!t->ok()) return detail::invalid_like(Carry(init));
  std::vector<Tensor> out;
  for (std::size_t k = 0; k < n; ++k) out.push_back(t->wrap(r[k]));
  std::size_t next = 0;
  return tree::unflatten<Tensor>(Carry(init), out, next);
}

/// jax.lax.fori_loop with static bounds: carry = body_fn(i, carry) for i = lower, ...,
/// upper - 1 (an s32 scalar Tensor). Runs a fixed number of times, so reverse mode can
/// differentiate it (as JAX lowers such a loop to scan).
template <class BodyFn, class Init>
auto fori_loop(std::int64_t lower, std::int64_t upper, BodyFn body_fn, const Init& init) {
  using Carry = tree::Rebind<Init, Tensor>;
  using BodyOut = std::invoke_result_t<BodyFn&, const Tensor&, const Carry&>;
  static_assert(std::is_same_v<BodyOut, Carry>,
                "fori_loop: body_fn must return the carry's type (the type of init)");
  auto fail = [&](Status s) {
    detail::report(s);
    return detail::invalid_like(Carry(init));
  };
  Status range = detail::checked_int32("fori_loop", "lower", lower);
  if (range.ok()) range = detail::checked_int32("fori_loop", "upper", upper);
  if (!range.ok()) return fail(range);
  StatusOr<std::vector<Shape>> shapes = detail::tree_shapes("fori_loop", "init", init);
  if (!shapes.ok()) return fail(shapes.status());
  std::vector<Shape> body_shapes{Shape(DType::kS32, {})};
  body_shapes.insert(body_shapes.end(), shapes->begin(), shapes->end());
  auto body = detail::trace_function("fori_loop body_fun", body_fn, body_shapes, Tensor(), init);
  if (!body.ok()) return fail(body.status());
  const std::vector<Shape> body_out = detail::output_shapes(body->graph);
  if (!detail::same_shapes(body_out, *shapes))
    return fail(invalid_argument_error(str_cat(
        "fori_loop: body_fun output and input must have identical types, got input ",
        detail::describe_shapes(*shapes), " and output ", detail::describe_shapes(body_out))));
  const std::size_t n = shapes->size();
  std::vector<Tensor> all = detail::tensor_leaves(init);
  all.insert(all.end(), body->captures.begin(), body->captures.end());
  Trace* t = detail::emit_trace("fori_loop", all);
  if (t == nullptr) return detail::invalid_like(Carry(init));
  std::vector<Value> values = detail::values_of(all);
  std::vector<Value> carry(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<Value> invariant(values.begin() + static_cast<std::ptrdiff_t>(n), values.end());
  StatusOr<std::vector<Value>> r = detail::counted_loop(
      t->builder(), static_cast<std::int32_t>(lower), static_cast<std::int32_t>(upper), carry,
      invariant, body->graph);
  if (!r.ok()) t->fail(r.status().with_context("fori_loop"));
  if (!t->ok()) return detail::invalid_like(Carry(init));
  std::vector<Tensor> out;
  for (Value v : *r) out.push_back(t->wrap(v));
  std::size_t next = 0;
  return tree::unflatten<Tensor>(Carry(init), out, next);
}

/// jax.lax.fori_loop with traced bounds (rank-0 integer Tensors): a while_loop, which
/// reverse mode cannot differentiate.
template <class BodyFn, class Init>
auto fori_loop(const Tensor& lower, const Tensor& upper, BodyFn body_fn, const Init& init) {
  using Carry = tree::Rebind<Init, Tensor>;
  auto fail = [&](Status s) {
    detail::report(s);
    return detail::invalid_like(Carry(init));
  };
  for (const Tensor* b : {&lower, &upper}) {
    StatusOr<Tensor> s = detail::scalar_selector("fori_loop", "a bound", *b);
    if (!s.ok()) return fail(s.status());
    if (!is_integral(s->dtype()))
      return fail(invalid_argument_error(
          str_cat("fori_loop: the bounds must be integers, got ", dtype_name(s->dtype()))));
  }
  using State = std::tuple<Tensor, Tensor, Carry>;
  const State start{lower.astype(DType::kS32), upper.astype(DType::kS32), Carry(init)};
  const State end = while_loop(
      [](const State& s) { return std::get<0>(s) < std::get<1>(s); },
      [&body_fn](const State& s) {
        return State{std::get<0>(s) + 1, std::get<1>(s), body_fn(std::get<0>(s), std::get<2>(s))};
      },
      start);
  return std::get<2>(end);
}

/// jax.lax.scan: for each i along the leading dimension of the leaves of `xs`,
/// (carry, y_i) = f(carry, xs[i]); returns (the final carry, the y_i stacked along a new
/// leading dimension). f returns a std::pair (or two-element tuple) of a carry like `init` and
/// a tree of Tensors. Runs a fixed number of times, so reverse mode can differentiate it.
template <class F, class Init, class Xs>
auto scan(F f, const Init& init, const Xs& xs) {
  using Carry = tree::Rebind<Init, Tensor>;
  using X = tree::Rebind<Xs, Tensor>;
  using FOut = std::invoke_result_t<F&, const Carry&, const X&>;
  using CarryOut = std::remove_cvref_t<decltype(std::get<0>(std::declval<FOut>()))>;
  using Y = std::remove_cvref_t<decltype(std::get<1>(std::declval<FOut>()))>;
  static_assert(std::is_same_v<CarryOut, Carry>,
                "scan: f must return (carry, y) with the carry of init's type");
  using Result = std::pair<Carry, Y>;
  auto fail = [&](Status s) {
    detail::report(s);
    return Result{detail::invalid_like(Carry(init)), Y{}};
  };
  StatusOr<std::vector<Shape>> carry_shapes = detail::tree_shapes("scan", "init", init);
  if (!carry_shapes.ok()) return fail(carry_shapes.status());
  StatusOr<std::vector<Shape>> xs_shapes = detail::tree_shapes("scan", "xs", xs);
  if (!xs_shapes.ok()) return fail(xs_shapes.status());
  if (xs_shapes->empty())
    return fail(invalid_argument_error("scan: xs has no leaves, so the length is unknown"));
  std::int64_t length = -1;
  std::vector<Shape> x_shapes;
  for (std::size_t k = 0; k < xs_shapes->size(); ++k) {
    const Shape& s = (*xs_shapes)[k];
    if (s.rank() == 0)
      return fail(invalid_argument_error(
          str_cat("scan: xs leaf ", k, " is a scalar; scan needs a leading axis to scan over")));
    if (length >= 0 && s.dim(0) != length)
      return fail(invalid_argument_error(str_cat(
          "scan: scan got values with different leading axis sizes: ", length, " and ", s.dim(0),
          " (xs leaf ", k, ")")));
    length = s.dim(0);
    x_shapes.push_back(Shape(s.dtype(), {s.dims().begin() + 1, s.dims().end()}));
  }
  Status range = detail::checked_int32("scan", "length", length);
  if (!range.ok()) return fail(range);
  std::vector<Shape> f_shapes = *carry_shapes;
  f_shapes.insert(f_shapes.end(), x_shapes.begin(), x_shapes.end());
  auto traced = detail::trace_function("scan f", f, f_shapes, Carry(init), X(xs));
  if (!traced.ok()) return fail(traced.status());
  const std::size_t nc = carry_shapes->size(), nx = x_shapes.size();
  const std::vector<Shape> f_out = detail::output_shapes(traced->graph);
  const std::vector<Shape> carry_out(f_out.begin(), f_out.begin() + static_cast<std::ptrdiff_t>(nc));
  if (!detail::same_shapes(carry_out, *carry_shapes))
    return fail(invalid_argument_error(str_cat(
        "scan: the input carry and the carry output of f must have identical types, got input ",
        detail::describe_shapes(*carry_shapes), " and output ", detail::describe_shapes(carry_out))));
  const std::vector<Shape> y_shapes(f_out.begin() + static_cast<std::ptrdiff_t>(nc), f_out.end());
  const std::size_t ny = y_shapes.size();
  std::vector<Tensor> all = detail::tensor_leaves(init, xs);
  all.insert(all.end(), traced->captures.begin(), traced->captures.end());
  Trace* t = detail::emit_trace("scan", all);
  if (t == nullptr) return Result{detail::invalid_like(Carry(init)), Y{}};
  GraphBuilder& b = t->builder();
  // The step: (i, carry..., ys..., xs..., captures...) -> (carry'..., ys'...).
  GraphBuilder sb("scan_step");
  Value i = sb.parameter(Shape(DType::kS32, {}));
  std::vector<Value> carry_p, ys_p, xs_p, cap_p;
  for (const Shape& s : *carry_shapes) carry_p.push_back(sb.parameter(s));
  for (const Shape& s : y_shapes) {
    std::vector<std::int64_t> dims{length};
    dims.insert(dims.end(), s.dims().begin(), s.dims().end());
    ys_p.push_back(sb.parameter(Shape(s.dtype(), dims)));
  }
  for (const Shape& s : *xs_shapes) xs_p.push_back(sb.parameter(s));
  for (const Tensor& c : traced->captures) cap_p.push_back(sb.parameter(c.shape()));
  const Value zero = sb.constant(std::int32_t{0});
  auto starts = [&](std::int64_t rank) {
    std::vector<Value> v{i};
    for (std::int64_t d = 1; d < rank; ++d) v.push_back(zero);
    return v;
  };
  std::vector<Value> f_args = carry_p;
  for (std::size_t k = 0; k < nx; ++k) {
    const Shape& s = (*xs_shapes)[k];
    std::vector<std::int64_t> sizes{1};
    sizes.insert(sizes.end(), s.dims().begin() + 1, s.dims().end());
    f_args.push_back(sb.reshape(sb.dynamic_slice(xs_p[k], starts(s.rank()), sizes),
                                {s.dims().begin() + 1, s.dims().end()}));
  }
  f_args.insert(f_args.end(), cap_p.begin(), cap_p.end());
  std::vector<Value> f_res = sb.inline_graph(traced->graph, f_args);
  std::vector<Value> step_out(f_res.begin(), f_res.begin() + static_cast<std::ptrdiff_t>(nc));
  for (std::size_t k = 0; k < ny && sb.ok(); ++k) {
    std::vector<std::int64_t> dims{1};
    dims.insert(dims.end(), y_shapes[k].dims().begin(), y_shapes[k].dims().end());
    step_out.push_back(sb.dynamic_update_slice(ys_p[k], sb.reshape(f_res[nc + k], dims),
                                               starts(y_shapes[k].rank() + 1)));
  }
  StatusOr<Graph> step = sb.build(step_out);
  if (!step.ok()) {
    t->fail(step.status().with_context("scan"));
    return Result{detail::invalid_like(Carry(init)), Y{}};
  }
  std::vector<Value> values = detail::values_of(all);
  std::vector<Value> carry(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(nc));
  for (const Shape& s : y_shapes) {
    std::vector<std::int64_t> dims{length};
    dims.insert(dims.end(), s.dims().begin(), s.dims().end());
    carry.push_back(b.broadcast_in_dim(b.scalar(s.dtype(), 0), dims, {}));
  }
  std::vector<Value> invariant(values.begin() + static_cast<std::ptrdiff_t>(nc), values.end());
  StatusOr<std::vector<Value>> r =
      detail::counted_loop(b, 0, static_cast<std::int32_t>(length), carry, invariant, *step);
  if (!r.ok()) t->fail(r.status().with_context("scan"));
  if (!t->ok()) return Result{detail::invalid_like(Carry(init)), Y{}};
  std::vector<Tensor> out;
  for (Value v : *r) out.push_back(t->wrap(v));
  std::size_t next = 0;
  Carry c = tree::unflatten<Tensor>(Carry(init), out, next);
  Y ys = tree::unflatten<Tensor>(std::get<1>(traced->skeleton), out, next);
  return Result{std::move(c), std::move(ys)};
}

}  // namespace pjrt_lite
