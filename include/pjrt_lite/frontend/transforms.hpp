#pragma once
// Function transformations over traced C++ functions, as in JAX: jvp, linearize, vjp, grad,
// value_and_grad (both with has_aux), vmap (in_axes and out_axes). The Jacobians and the
// Hessian are in frontend/jacobians.hpp, stop_gradient, custom_jvp and custom_vjp in
// frontend/custom_derivatives.hpp; jit (frontend/jit.hpp) called on Tensors inlines.
//
//   auto f = [](Tensor x) { return -(sin(x) * 2.0) + x; };
//   auto df = grad(f);                        // a function of Tensors again
//   auto ddf = grad(grad(f));                 // transformations compose
//   auto batched = vmap(grad(f));             // ... in any order
//   auto exe = jit(client, ddf);              // and run through jit (frontend/jit.hpp)
//
// Each transformation traces the function into a graph of its own (nested in the caller's
// trace), transforms the graph (transforms/autodiff.hpp, transforms/batching.hpp) and inlines
// the result into the caller's trace. Arguments and results are trees of Tensors
// (frontend/tree.hpp). Tensors of an outer trace that the function closes over are
// constants to grad and jvp and unbatched to vmap. Errors go to the caller's trace (see
// tensor.hpp) and come out of jit as a Status.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/tensor.hpp"
#include "pjrt_lite/frontend/tree.hpp"
#include "pjrt_lite/transforms/autodiff.hpp"
#include "pjrt_lite/transforms/batching.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

// The leaves of trees of Tensors, in order.
template <class... Ts>
std::vector<Tensor> tensor_leaves(const Ts&... trees) {
  std::vector<Tensor> out;
  (tree::for_each_leaf(trees,
                       [&](const auto& leaf) {
                         if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Tensor>)
                           out.push_back(leaf);
                         else
                           out.push_back(Tensor());  // not a tensor: reported by the caller
                       }),
   ...);
  return out;
}

// The trace to report to: the innermost active one.
inline Trace* report_trace() { return np::detail::current_trace(); }

/// A function traced into a graph of its own: its parameters are the leaves of the arguments
/// and then the captured outer tensors; its outputs the leaves of the result.
template <class Out>
struct Traced {
  Graph graph;
  std::size_t num_inputs = 0;
  std::vector<Tensor> captures;  // tensors of the enclosing trace
  Out skeleton{};                // the result's structure (its tensors are dead)
  std::size_t num_outputs = 0;
};

/// Traces f on arguments of the same structure as `args` whose leaves have `shapes`, in a
/// trace nested in the current one.
template <class F, class... Args>
auto trace_function(const char* name, F& f, const std::vector<Shape>& shapes, const Args&... args)
    -> StatusOr<Traced<std::invoke_result_t<F&, const Args&...>>> {
  using Out = std::invoke_result_t<F&, const Args&...>;
  static_assert(!std::is_void_v<Out>, "the traced function must return its result");
  Trace trace(name);
  TraceScope scope(trace);
  std::vector<Tensor> params;
  for (const Shape& s : shapes) params.push_back(trace.parameter(s));
  std::size_t next = 0;
  Traced<Out> r;
  r.num_inputs = params.size();
  // Braced initialization runs left to right, so parameters go to the leaves in order.
  std::tuple<tree::Rebind<Args, Tensor>...> inputs{tree::unflatten<Tensor>(args, params, next)...};
  Out out = std::apply(f, inputs);
  if constexpr (!tree::IsTree<Out>) {
    return invalid_argument_error(str_cat(name,
                                          ": the function must return a Tensor or a tree of "
                                          "Tensors (tuple, pair, array, vector, aggregate)"));
  } else {
    std::size_t k = 0;
    bool non_tensor = false;
    tree::for_each_leaf(out, [&](const auto& leaf) {
      if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Tensor>) non_tensor = true;
      ++k;
    });
    if (non_tensor)
      return invalid_argument_error(str_cat(name,
                                            ": the function returned a value that is not a "
                                            "Tensor (a C++ number?); return Tensors, e.g. "
                                            "full_like(x, value)"));
    std::vector<Value> outputs;
    for (Tensor t : tensor_leaves(out)) {
      if (!t.valid() && trace.ok())
        trace.fail(invalid_argument_error(str_cat(
            name, ": the function returned an invalid Tensor (output ", outputs.size(), ")")));
      if (!trace.ok()) break;
      outputs.push_back(trace.lift(t).value());
    }
    PJRT_LITE_RETURN_IF_ERROR(trace.status().with_context(name));
    PJRT_LITE_ASSIGN_OR_RETURN(r.graph, trace.builder().build(outputs));
    for (const auto& c : trace.captures()) r.captures.push_back(c.outer);
    r.skeleton = std::move(out);
    r.num_outputs = outputs.size();
    return r;
  }
}

/// The shapes of the leaves of Tensor trees, or an error naming an invalid one.
template <class... Args>
StatusOr<std::vector<Shape>> leaf_shapes(const char* name, const Args&... args) {
  std::vector<Shape> shapes;
  for (const Tensor& t : tensor_leaves(args...)) {
    if (!t.valid())
      return invalid_argument_error(str_cat(name, ": argument leaf ", shapes.size(),
                                            " is an invalid Tensor (or not a Tensor)"));
    shapes.push_back(t.shape());
  }
  return shapes;
}

/// Inlines `g` into the trace of `args` and returns its outputs as Tensors.
inline std::vector<Tensor> inline_into(Trace* t, const Graph& g, std::vector<Tensor> args) {
  std::vector<Value> values;
  for (Tensor& a : args) {
    a = t->lift(a);
    values.push_back(a.value());
  }
  std::vector<Tensor> out;
  for (Value v : t->builder().inline_graph(g, values)) out.push_back(t->wrap(v));
  return out;
}

// The tree of invalid tensors shaped like `like`, what a failed transformation returns.
template <class T>
T invalid_like(const T& like) {
  return tree::map<Tensor>(like, [](const auto&) { return Tensor(); });
}

// Records `s` in the reporting trace (when it is an error).
inline bool report(const Status& s) {
  if (s.ok()) return true;
  if (Trace* t = report_trace()) t->fail(s);
  return false;
}

template <class T>
std::vector<T> concat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace detail

// ---- Forward mode --------------------------------------------------------------------------

/// (f(primals...), the directional derivative of f at primals along tangents), each a tree
/// like f's result. `primals` and `tangents` are tuples of trees of the same structure and
/// shapes. Tangents of non-floating-point primals are ignored.
template <class F, class... Args>
auto jvp(F f, const std::tuple<Args...>& primals, const std::tuple<Args...>& tangents) {
  using Out = std::invoke_result_t<F&, const Args&...>;
  using Pair = std::pair<Out, Out>;
  auto fail = [](Status s) {
    detail::report(s);
    return Pair{};
  };
  StatusOr<std::vector<Shape>> shapes =
      std::apply([](const auto&... a) { return detail::leaf_shapes("jvp", a...); }, primals);
  if (!shapes.ok()) return fail(shapes.status());
  const std::vector<Tensor> p =
      std::apply([](const auto&... a) { return detail::tensor_leaves(a...); }, primals);
  const std::vector<Tensor> t =
      std::apply([](const auto&... a) { return detail::tensor_leaves(a...); }, tangents);
  if (p.size() != t.size())
    return fail(
        invalid_argument_error(str_cat("jvp: ", t.size(), " tangents for ", p.size(), " primals")));
  std::vector<Tensor> tangent_args;
  std::vector<bool> wrt;
  for (std::size_t k = 0; k < p.size(); ++k) {
    if (!t[k].valid())
      return fail(invalid_argument_error(str_cat("jvp: tangent ", k, " is an invalid Tensor")));
    if (!t[k].shape().same_type_and_dims(p[k].shape()))
      return fail(invalid_argument_error(str_cat("jvp: tangent ", k, " has shape ", t[k].shape(),
                                                 " but its primal has ", p[k].shape())));
    wrt.push_back(is_inexact(p[k].dtype()));
    if (wrt.back()) tangent_args.push_back(t[k]);
  }
  auto traced = std::apply(
      [&](const auto&... a) { return detail::trace_function("jvp", f, *shapes, a...); }, primals);
  if (!traced.ok()) return fail(traced.status());
  wrt.resize(traced->graph.parameters().size(), false);  // captures are constants
  StatusOr<Graph> g = jvp_graph(traced->graph, wrt);
  if (!g.ok()) return fail(g.status());
  Trace* trace = detail::report_trace();
  std::vector<Tensor> args = detail::concat(detail::concat(p, traced->captures), tangent_args);
  std::vector<Tensor> out = detail::inline_into(trace, *g, std::move(args));
  if (!trace->ok())
    return Pair{detail::invalid_like(traced->skeleton), detail::invalid_like(traced->skeleton)};
  std::size_t next = 0;
  Out y = tree::unflatten<Tensor>(traced->skeleton, out, next);
  Out ty = tree::unflatten<Tensor>(traced->skeleton, out, next);
  return Pair{std::move(y), std::move(ty)};
}

/// jvp of a function of one Tensor.
template <class F>
auto jvp(F f, const Tensor& primal, const Tensor& tangent) {
  return jvp(std::move(f), std::tuple<Tensor>{primal}, std::tuple<Tensor>{tangent});
}

/// The linear function linearize returns: maps tangents of f's arguments (as many trees as
/// f takes, shaped like the primals) to the tangent of f's result at the primals. Call it
/// while the trace that made it is being built; each call adds the jvp's ops to it (in a
/// compiled program the primal part is shared with the result by CSE).
template <class Out, class... Args>
class Linearized {
 public:
  Linearized() = default;
  Linearized(std::shared_ptr<const Graph> graph, std::vector<Tensor> inputs, std::vector<bool> wrt,
             std::size_t num_outputs, Out skeleton)
      : graph_(std::move(graph)),
        inputs_(std::move(inputs)),
        wrt_(std::move(wrt)),
        num_outputs_(num_outputs),
        skeleton_(std::move(skeleton)) {}

  Out operator()(const Args&... tangents) const {
    auto fail = [&](Status s) {
      detail::report(s);
      return detail::invalid_like(skeleton_);
    };
    if (graph_ == nullptr)
      return fail(failed_precondition_error("linearize: the linear function is empty (linearize failed)"));
    const std::vector<Tensor> t = detail::tensor_leaves(tangents...);
    if (t.size() != wrt_.size())
      return fail(invalid_argument_error(
          str_cat("linearize: ", t.size(), " tangent leaves for ", wrt_.size(), " primal leaves")));
    std::vector<Tensor> args = inputs_;
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (!t[k].valid())
        return fail(invalid_argument_error(str_cat("linearize: tangent ", k, " is an invalid Tensor")));
      if (!t[k].shape().same_type_and_dims(inputs_[k].shape()))
        return fail(invalid_argument_error(str_cat("linearize: tangent ", k, " has shape ", t[k].shape(),
                                                   " but its primal has ", inputs_[k].shape())));
      if (wrt_[k]) args.push_back(t[k]);
    }
    Trace* trace = detail::report_trace();
    if (trace == nullptr)
      return fail(failed_precondition_error("linearize: the linear function was called outside a trace"));
    std::vector<Tensor> out = detail::inline_into(trace, *graph_, std::move(args));
    if (!trace->ok()) return detail::invalid_like(skeleton_);
    std::size_t next = num_outputs_;  // skip the primal outputs
    return tree::unflatten<Tensor>(skeleton_, out, next);
  }

 private:
  std::shared_ptr<const Graph> graph_;
  std::vector<Tensor> inputs_;  // primal leaves, then captures
  std::vector<bool> wrt_;       // per primal leaf: takes a tangent (floating point)
  std::size_t num_outputs_ = 0;
  Out skeleton_;
};

/// (f(primals...), the linear map tangents -> jvp), as jax.linearize.
template <class F, class... Args>
auto linearize(F f, const Args&... primals) {
  using Out = std::invoke_result_t<F&, const Args&...>;
  using Result = std::pair<Out, Linearized<Out, Args...>>;
  auto fail = [](Status s) {
    detail::report(s);
    return Result{};
  };
  StatusOr<std::vector<Shape>> shapes = detail::leaf_shapes("linearize", primals...);
  if (!shapes.ok()) return fail(shapes.status());
  auto traced = detail::trace_function("linearize", f, *shapes, primals...);
  if (!traced.ok()) return fail(traced.status());
  std::vector<bool> wrt;
  for (const Shape& s : *shapes) wrt.push_back(is_inexact(s.dtype()));
  std::vector<bool> all = wrt;
  all.resize(traced->graph.parameters().size(), false);
  StatusOr<Graph> g = jvp_graph(traced->graph, all);
  if (!g.ok()) return fail(g.status());
  Trace* trace = detail::report_trace();
  const std::vector<Tensor> inputs = detail::concat(detail::tensor_leaves(primals...), traced->captures);
  std::vector<Tensor> y = detail::inline_into(trace, traced->graph, inputs);
  if (!trace->ok()) return Result{};
  std::size_t n = 0;
  Out out = tree::unflatten<Tensor>(traced->skeleton, y, n);
  return Result{std::move(out),
                Linearized<Out, Args...>(std::make_shared<const Graph>(*std::move(g)), inputs,
                                         std::move(wrt), traced->num_outputs, traced->skeleton)};
}

// ---- Reverse mode --------------------------------------------------------------------------

/// The pullback of vjp: maps a cotangent of f's result to the cotangents of f's arguments
/// (a tuple, one tree per argument; zeros for non-floating-point leaves). Call it while the
/// trace that made it is being built.
template <class Out, class... Args>
class Pullback {
 public:
  Pullback() = default;
  Pullback(std::shared_ptr<const Graph> graph, std::vector<Tensor> inputs, std::vector<bool> seeded,
           std::tuple<Args...> args, Out skeleton)
      : graph_(std::move(graph)),
        inputs_(std::move(inputs)),
        seeded_(std::move(seeded)),
        args_(std::move(args)),
        skeleton_(std::move(skeleton)) {}

  std::tuple<Args...> operator()(const Out& cotangent) const {
    auto fail = [&](Status s) {
      detail::report(s);
      return std::apply(
          [](const auto&... a) { return std::tuple<Args...>{detail::invalid_like(a)...}; }, args_);
    };
    if (graph_ == nullptr)
      return fail(failed_precondition_error("vjp: the pullback is empty (vjp failed)"));
    const std::vector<Tensor> ct = detail::tensor_leaves(cotangent);
    if (ct.size() != seeded_.size())
      return fail(invalid_argument_error(
          str_cat("vjp: the cotangent has ", ct.size(), " leaves, the result ", seeded_.size())));
    std::vector<Tensor> args = inputs_;
    const std::vector<Tensor> outs = detail::tensor_leaves(skeleton_);
    for (std::size_t k = 0; k < ct.size(); ++k) {
      if (!seeded_[k]) continue;
      if (!ct[k].valid())
        return fail(invalid_argument_error(str_cat("vjp: cotangent ", k, " is an invalid Tensor")));
      args.push_back(ct[k]);
    }
    Trace* trace = detail::report_trace();
    if (trace == nullptr)
      return fail(failed_precondition_error("vjp: the pullback was called outside a trace"));
    std::vector<Tensor> out = detail::inline_into(trace, *graph_, std::move(args));
    if (!trace->ok()) return fail(ok_status());
    std::size_t next = seeded_.size();  // skip the primal outputs
    return std::apply(
        [&](const auto&... a) {
          return std::tuple<Args...>{tree::unflatten<Tensor>(a, out, next)...};
        },
        args_);
  }

 private:
  std::shared_ptr<const Graph> graph_;
  std::vector<Tensor> inputs_;  // primal leaves, then captures
  std::vector<bool> seeded_;    // which result leaves take a cotangent
  std::tuple<Args...> args_;
  Out skeleton_;
};

/// (f(args...), its pullback), as jax.vjp.
template <class F, class... Args>
auto vjp(F f, const Args&... args) {
  using Out = std::invoke_result_t<F&, const Args&...>;
  using Result = std::pair<Out, Pullback<Out, Args...>>;
  auto fail = [](Status s) {
    detail::report(s);
    return Result{};
  };
  StatusOr<std::vector<Shape>> shapes = detail::leaf_shapes("vjp", args...);
  if (!shapes.ok()) return fail(shapes.status());
  auto traced = detail::trace_function("vjp", f, *shapes, args...);
  if (!traced.ok()) return fail(traced.status());
  std::vector<bool> wrt;
  for (const Shape& s : *shapes) wrt.push_back(is_inexact(s.dtype()));
  wrt.resize(traced->graph.parameters().size(), false);
  StatusOr<Graph> g = vjp_graph(traced->graph, wrt);
  if (!g.ok()) return fail(g.status());
  // The pullback's graph returns the cotangents of every primal leaf: put zeros in for the
  // ones without one, so the result has one tree per argument.
  GraphBuilder b(str_cat(traced->graph.name(), "_pullback"));
  std::vector<Value> params;
  for (std::int64_t k = 0; k < g->num_parameters(); ++k)
    params.push_back(b.parameter(g->shape(g->parameters()[static_cast<std::size_t>(k)])));
  std::vector<Value> r = b.inline_graph(*g, params);
  std::vector<Value> outputs(r.begin(),
                             r.begin() + static_cast<std::ptrdiff_t>(traced->num_outputs));
  std::size_t next = traced->num_outputs;
  for (std::size_t k = 0; k < shapes->size(); ++k) {
    const Shape& s = (*shapes)[k];
    outputs.push_back(wrt[k] ? r[next++]
                             : b.broadcast_in_dim(b.scalar(s.dtype(), 0),
                                                  {s.dims().begin(), s.dims().end()}, {}));
  }
  StatusOr<Graph> pullback = b.build(outputs);
  if (!pullback.ok()) return fail(pullback.status());
  std::vector<bool> seeded;
  for (Value v : traced->graph.outputs())
    seeded.push_back(is_inexact(traced->graph.shape(v).dtype()));
  Trace* trace = detail::report_trace();
  const std::vector<Tensor> inputs =
      detail::concat(detail::tensor_leaves(args...), traced->captures);
  std::vector<Tensor> y = detail::inline_into(trace, traced->graph, inputs);
  if (!trace->ok()) return Result{};
  std::size_t n = 0;
  Out out = tree::unflatten<Tensor>(traced->skeleton, y, n);
  return Result{
      std::move(out),
      Pullback<Out, Args...>(std::make_shared<const Graph>(*std::move(pullback)), inputs,
                             std::move(seeded), std::tuple<Args...>{args...}, traced->skeleton)};
}

/// The tag that asks grad and value_and_grad for a function returning (value, aux), as
/// jax.grad's has_aux=True: aux (a tree of Tensors) comes back next to the gradient, not
/// differentiated.
struct HasAux {
  explicit HasAux() = default;
};
inline constexpr HasAux has_aux{};

namespace detail {

template <std::size_t First, std::size_t...>
inline constexpr std::size_t detail_first = First;

template <std::size_t... N>
constexpr bool detail_sorted() {
  constexpr std::array<std::size_t, sizeof...(N)> v{N...};
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i - 1] >= v[i]) return false;
  return true;
}

// The aux part of a has_aux function's result (Out itself when there is none).
template <class Out, bool WithAux>
struct AuxOf {
  using type = Tensor;
};
template <class Out>
struct AuxOf<Out, true> {
  using type = std::remove_cvref_t<std::tuple_element_t<1, Out>>;
};

// value_and_grad's work: (f(args...), the gradients of the arguments ArgNums); with WithAux,
// f returns (value, aux) and the value is (value, aux).
template <bool WithValue, bool WithAux, std::size_t... ArgNums, class F, class... Args>
auto value_and_grad_impl(const char* name, F& f, const Args&... args) {
  static_assert(sizeof...(ArgNums) > 0);
  using Out = std::invoke_result_t<F&, const Args&...>;
  using ArgTuple = std::tuple<Args...>;
  using Grads = std::conditional_t<sizeof...(ArgNums) == 1,
                                   std::tuple_element_t<detail_first<ArgNums...>, ArgTuple>,
                                   std::tuple<std::tuple_element_t<ArgNums, ArgTuple>...>>;
  using Aux = typename AuxOf<Out, WithAux>::type;
  static_assert(detail_sorted<ArgNums...>(), "grad: list the argument numbers in increasing order");
  static_assert(((ArgNums < sizeof...(Args)) && ...),
                "grad: an argument number is not less than the number of arguments");
  if constexpr (WithAux)
    static_assert(std::tuple_size_v<Out> == 2 &&
                      std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, Out>>, Tensor>,
                  "grad with has_aux: the function must return a pair (a scalar Tensor, aux)");
  else
    static_assert(std::is_same_v<std::remove_cvref_t<Out>, Tensor>,
                  "grad: the function must return one Tensor, a scalar (or a pair (scalar, aux) "
                  "with has_aux)");
  const ArgTuple all{args...};
  auto invalid = [&]() {
    if constexpr (sizeof...(ArgNums) == 1)
      return invalid_like(std::get<detail_first<ArgNums...>>(all));
    else
      return Grads{invalid_like(std::get<ArgNums>(all))...};
  };
  auto result = [&](Tensor value, Aux aux, Grads grads) {
    if constexpr (WithValue && WithAux)
      return std::pair<std::pair<Tensor, Aux>, Grads>{{value, std::move(aux)}, std::move(grads)};
    else if constexpr (WithValue)
      return std::pair<Tensor, Grads>{value, std::move(grads)};
    else if constexpr (WithAux)
      return std::pair<Grads, Aux>{std::move(grads), std::move(aux)};
    else
      return grads;
  };
  auto fail = [&](Status s) {
    report(s);
    return result(Tensor(), Aux{}, invalid());
  };
  StatusOr<std::vector<Shape>> shapes = leaf_shapes(name, args...);
  if (!shapes.ok()) return fail(shapes.status());
  // Leaves of the differentiated arguments.
  std::vector<bool> wrt;
  constexpr std::array<std::size_t, sizeof...(ArgNums)> nums{ArgNums...};
  std::size_t position = 0;
  auto mark = [&](const auto& arg) {
    const bool on = std::find(nums.begin(), nums.end(), position) != nums.end();
    tree::for_each_leaf(arg, [&](const auto&) { wrt.push_back(on); });
    ++position;
  };
  (mark(args), ...);
  for (std::size_t k = 0; k < wrt.size(); ++k)
    if (wrt[k] && !is_floating((*shapes)[k].dtype()))
      return fail(
          invalid_argument_error(str_cat(name, ": argument leaf ", k, " has type ", (*shapes)[k],
                                         "; grad needs floating-point inputs (astype them, or "
                                         "leave them out of argnums)")));
  auto traced = trace_function(name, f, *shapes, args...);
  if (!traced.ok()) return fail(traced.status());
  const std::vector<Shape> outs = traced->graph.output_shapes();
  const Shape out = outs[0];
  if (out.rank() != 0 || !is_floating(out.dtype()))
    return fail(invalid_argument_error(
        str_cat(name, ": the function must return a real scalar", WithAux ? " (and aux)" : "",
                ", it returned ", out, " (use vjp or jacrev for other results)")));
  wrt.resize(traced->graph.parameters().size(), false);
  StatusOr<Graph> g = vjp_graph(traced->graph, wrt);
  if (!g.ok()) return fail(g.status());
  Trace* trace = report_trace();
  std::vector<Tensor> inputs = concat(tensor_leaves(args...), traced->captures);
  // The cotangents: 1 for the value, 0 for the aux leaves that take one.
  inputs.push_back(np::detail::constant_in(trace, np::detail::scalar_literal(out.dtype(), 1)));
  for (std::size_t k = 1; k < outs.size(); ++k)
    if (is_inexact(outs[k].dtype()))
      inputs.push_back(np::zeros({outs[k].dims().begin(), outs[k].dims().end()}, outs[k].dtype()));
  std::vector<Tensor> r = inline_into(trace, *g, std::move(inputs));
  if (!trace->ok()) return result(Tensor(), Aux{}, invalid());
  // r = [value, aux leaves, cotangents of the wrt leaves in order]; rebuild each picked
  // argument.
  std::vector<Tensor> grads(r.begin() + static_cast<std::ptrdiff_t>(outs.size()), r.end());
  Aux aux{};
  if constexpr (WithAux) {
    std::size_t from = 1;
    aux = tree::unflatten<Tensor>(std::get<1>(traced->skeleton), r, from);
  }
  std::size_t next = 0;
  auto rebuild = [&](const auto& arg) { return tree::unflatten<Tensor>(arg, grads, next); };
  if constexpr (sizeof...(ArgNums) == 1) {
    return result(r[0], std::move(aux), rebuild(std::get<detail_first<ArgNums...>>(all)));
  } else {
    // Braced initialization evaluates in order: the cotangents come in argument order.
    return result(r[0], std::move(aux), Grads{rebuild(std::get<ArgNums>(all))...});
  }
}

// grad and value_and_grad: ArgNums default to the first argument.
template <bool WithValue, bool WithAux, std::size_t... ArgNums, class F>
auto grad_transform(const char* name, F f) {
  return [name, f = std::move(f)](const auto&... args) mutable {
    if constexpr (sizeof...(ArgNums) == 0)
      return value_and_grad_impl<WithValue, WithAux, 0>(name, f, args...);
    else
      return value_and_grad_impl<WithValue, WithAux, ArgNums...>(name, f, args...);
  };
}
}  // namespace detail

/// The gradient of a function returning a real scalar with respect to its arguments
/// ArgNums (default: the first), as jax.grad: the same tree as that argument, or a tuple
/// for several. Arguments must be listed in increasing order.
template <std::size_t... ArgNums, class F>
auto grad(F f) {
  return detail::grad_transform<false, false, ArgNums...>("grad", std::move(f));
}
/// grad of a function returning (value, aux): (the gradient, aux).
template <std::size_t... ArgNums, class F>
auto grad(F f, HasAux) {
  return detail::grad_transform<false, true, ArgNums...>("grad", std::move(f));
}

/// (f(args...), grad(f)(args...)), computed together.
template <std::size_t... ArgNums, class F>
auto value_and_grad(F f) {
  return detail::grad_transform<true, false, ArgNums...>("value_and_grad", std::move(f));
}
/// value_and_grad of a function returning (value, aux): ((value, aux), the gradient).
template <std::size_t... ArgNums, class F>
auto value_and_grad(F f, HasAux) {
  return detail::grad_transform<true, true, ArgNums...>("value_and_grad", std::move(f));
}

// ---- Batching ---------------------------------------------------------------------------------

/// The axis of an argument that vmap maps over, or kNotMapped (std::nullopt).
using InAxis = std::optional<std::int64_t>;
inline constexpr InAxis kNotMapped = std::nullopt;

/// f mapped over an axis of its arguments, as jax.vmap: in_axes gives one axis per argument
/// (empty: axis 0 for all), applied to every leaf of that argument. out_axes places the
/// mapped axis of the results: empty for axis 0 everywhere, one entry for every result leaf,
/// or one per result leaf; negative axes count from the end of the mapped result, and
/// kNotMapped returns a result that does not depend on a mapped input without the axis (an
/// error for one that does, as in JAX).
template <class F>
auto vmap(F f, std::vector<InAxis> in_axes = {}, std::vector<InAxis> out_axes = {}) {
  return [f = std::move(f), in_axes = std::move(in_axes),
          out_axes = std::move(out_axes)](const auto&... args) mutable {
    using Out = std::invoke_result_t<F&, const std::remove_cvref_t<decltype(args)>&...>;
    auto fail = [](Status s) {
      detail::report(s);
      return Out{};
    };
    constexpr std::size_t n_args = sizeof...(args);
    if (!in_axes.empty() && in_axes.size() != n_args)
      return fail(invalid_argument_error(
          str_cat("vmap: in_axes has ", in_axes.size(), " entries for ", n_args, " arguments")));
    std::vector<Tensor> leaves;
    std::vector<bool> batched;
    std::vector<Shape> shapes;
    std::optional<std::int64_t> size;
    Status error;
    std::size_t index = 0;
    auto take = [&](const auto& arg) {
      const InAxis axis = in_axes.empty() ? InAxis{0} : in_axes[index];
      tree::for_each_leaf(arg, [&](const auto& leaf) {
        Tensor t;
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Tensor>) t = leaf;
        if (!error.ok()) return;
        if (!t.valid()) {
          error = invalid_argument_error(
              str_cat("vmap: argument ", index, " has an invalid Tensor leaf"));
          return;
        }
        if (axis) {
          const std::int64_t a = *axis < 0 ? *axis + t.rank() : *axis;
          if (a < 0 || a >= t.rank()) {
            error =
                invalid_argument_error(str_cat("vmap: in_axes[", index, "] = ", *axis,
                                               " is out of range for a leaf of shape ", t.shape()));
            return;
          }
          if (size && *size != t.dim(a)) {
            error = invalid_argument_error(str_cat("vmap: argument ", index, " has size ", t.dim(a),
                                                   " on its mapped axis, an earlier one ", *size));
            return;
          }
          size = t.dim(a);
          t = np::moveaxis(t, a, 0);
          std::vector<std::int64_t> dims = t.dims();
          dims.erase(dims.begin());
          shapes.push_back(Shape(t.dtype(), dims));
        } else {
          shapes.push_back(t.shape());
        }
        leaves.push_back(t);
        batched.push_back(axis.has_value());
      });
      ++index;
    };
    (take(args), ...);
    if (!error.ok()) return fail(error);
    if (!size)
      return fail(
          invalid_argument_error("vmap: no argument is mapped (every in_axes is kNotMapped)"));
    auto traced = detail::trace_function("vmap", f, shapes, args...);
    if (!traced.ok()) return fail(traced.status());
    batched.resize(traced->graph.parameters().size(), false);  // captures are unbatched
    const std::size_t n_out = traced->num_outputs;
    if (out_axes.size() > 1 && out_axes.size() != n_out)
      return fail(invalid_argument_error(str_cat("vmap: out_axes has ", out_axes.size(),
                                                 " entries for ", n_out,
                                                 " result leaves (give one, or one per leaf)")));
    std::vector<bool> batched_outputs;
    StatusOr<Graph> g = batch_graph(traced->graph, batched, *size, &batched_outputs);
    if (!g.ok()) return fail(g.status());
    Trace* trace = detail::report_trace();
    std::vector<Tensor> out =
        detail::inline_into(trace, *g, detail::concat(leaves, traced->captures));
    if (!trace->ok()) return detail::invalid_like(traced->skeleton);
    for (std::size_t k = 0; k < out.size() && !out_axes.empty(); ++k) {
      const InAxis axis = out_axes.size() == 1 ? out_axes[0] : out_axes[k];
      if (!axis) {
        if (batched_outputs[k])
          return fail(invalid_argument_error(str_cat(
              "vmap: out_axes for result leaf ", k,
              " is kNotMapped, but the result depends on a mapped input (jax: vmap has mapped "
              "output but out_axes is None)")));
        out[k] = out[k][0];
        continue;
      }
      const std::int64_t rank = out[k].rank();
      const std::int64_t a = *axis < 0 ? *axis + rank : *axis;
      if (a < 0 || a >= rank)
        return fail(invalid_argument_error(str_cat("vmap: out_axes = ", *axis,
                                                   " is out of range for result leaf ", k,
                                                   " of mapped shape ", out[k].shape())));
      if (a != 0) out[k] = np::moveaxis(out[k], 0, a);
    }
    std::size_t next = 0;
    return tree::unflatten<Tensor>(traced->skeleton, out, next);
  };
}

}  // namespace pjrt_lite
