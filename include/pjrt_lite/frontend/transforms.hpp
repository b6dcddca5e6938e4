#pragma once
// Function transformations over traced C++ functions, as in JAX: jvp, vjp, grad,
// value_and_grad, jacfwd, jacrev, vmap.
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

// value_and_grad's work: (f(args...), the gradients of the arguments ArgNums).
template <bool WithValue, std::size_t... ArgNums, class F, class... Args>
auto value_and_grad_impl(const char* name, F& f, const Args&... args) {
  static_assert(sizeof...(ArgNums) > 0);
  using Out = std::invoke_result_t<F&, const Args&...>;
  using ArgTuple = std::tuple<Args...>;
  using Grads = std::conditional_t<sizeof...(ArgNums) == 1,
                                   std::tuple_element_t<detail_first<ArgNums...>, ArgTuple>,
                                   std::tuple<std::tuple_element_t<ArgNums, ArgTuple>...>>;
  static_assert(detail_sorted<ArgNums...>(), "grad: list the argument numbers in increasing order");
  const ArgTuple all{args...};
  auto invalid = [&]() {
    if constexpr (sizeof...(ArgNums) == 1)
      return invalid_like(std::get<detail_first<ArgNums...>>(all));
    else
      return Grads{invalid_like(std::get<ArgNums>(all))...};
  };
  auto result = [&](Tensor value, Grads grads) {
    if constexpr (WithValue)
      return std::pair<Tensor, Grads>{value, std::move(grads)};
    else
      return grads;
  };
  auto fail = [&](Status s) {
    report(s);
    return result(Tensor(), invalid());
  };
  static_assert(std::is_same_v<std::remove_cvref_t<Out>, Tensor>,
                "grad: the function must return one Tensor, a scalar");
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
  const Shape out = traced->graph.output_shapes()[0];
  if (out.rank() != 0 || !is_floating(out.dtype()))
    return fail(invalid_argument_error(
        str_cat(name, ": the function must return a real scalar, it returned ", out,
                " (use vjp or jacrev for other results)")));
  wrt.resize(traced->graph.parameters().size(), false);
  StatusOr<Graph> g = vjp_graph(traced->graph, wrt);
  if (!g.ok()) return fail(g.status());
  Trace* trace = report_trace();
  std::vector<Tensor> inputs = concat(tensor_leaves(args...), traced->captures);
  Tensor one = np::detail::constant_in(trace, np::detail::scalar_literal(out.dtype(), 1));
  inputs.push_back(one);
  std::vector<Tensor> r = inline_into(trace, *g, std::move(inputs));
  if (!trace->ok()) return result(Tensor(), invalid());
  // r = [value, cotangents of the wrt leaves in order]; rebuild each picked argument.
  std::vector<Tensor> grads(r.begin() + 1, r.end());
  std::size_t next = 0;
  auto rebuild = [&](const auto& arg) { return tree::unflatten<Tensor>(arg, grads, next); };
  if constexpr (sizeof...(ArgNums) == 1) {
    return result(r[0], rebuild(std::get<detail_first<ArgNums...>>(all)));
  } else {
    // Braced initialization evaluates in order: the cotangents come in argument order.
    return result(r[0], Grads{rebuild(std::get<ArgNums>(all))...});
  }
}

}  // namespace detail

namespace detail {
// grad and value_and_grad: ArgNums default to the first argument.
template <bool WithValue, std::size_t... ArgNums, class F>
auto grad_transform(const char* name, F f) {
  return [name, f = std::move(f)](const auto&... args) mutable {
    if constexpr (sizeof...(ArgNums) == 0)
      return value_and_grad_impl<WithValue, 0>(name, f, args...);
    else
      return value_and_grad_impl<WithValue, ArgNums...>(name, f, args...);
  };
}
}  // namespace detail

/// The gradient of a function returning a real scalar with respect to its arguments
/// ArgNums (default: the first), as jax.grad: the same tree as that argument, or a tuple
/// for several. Arguments must be listed in increasing order.
template <std::size_t... ArgNums, class F>
auto grad(F f) {
  return detail::grad_transform<false, ArgNums...>("grad", std::move(f));
}

/// (f(args...), grad(f)(args...)), computed together.
template <std::size_t... ArgNums, class F>
auto value_and_grad(F f) {
  return detail::grad_transform<true, ArgNums...>("value_and_grad", std::move(f));
}

// ---- Batching ---------------------------------------------------------------------------------

/// The axis of an argument that vmap maps over, or kNotMapped (std::nullopt).
using InAxis = std::optional<std::int64_t>;
inline constexpr InAxis kNotMapped = std::nullopt;

/// f mapped over an axis of its arguments, as jax.vmap: in_axes gives one axis per argument
/// (empty: axis 0 for all), applied to every leaf of that argument; each result leaf gets
/// the mapped axis first.
template <class F>
auto vmap(F f, std::vector<InAxis> in_axes = {}) {
  return [f = std::move(f), in_axes = std::move(in_axes)](const auto&... args) mutable {
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
    StatusOr<Graph> g = batch_graph(traced->graph, batched, *size);
    if (!g.ok()) return fail(g.status());
    Trace* trace = detail::report_trace();
    std::vector<Tensor> out =
        detail::inline_into(trace, *g, detail::concat(leaves, traced->captures));
    if (!trace->ok()) return detail::invalid_like(traced->skeleton);
    std::size_t next = 0;
    return tree::unflatten<Tensor>(traced->skeleton, out, next);
  };
}

// ---- Jacobians ----------------------------------------------------------------------------------

/// The Jacobian of a function of one Tensor returning one Tensor, by forward mode (one jvp
/// per input element, batched with vmap): shape out.dims + in.dims.
template <class F>
auto jacfwd(F f) {
  return [f = std::move(f)](const Tensor& x) mutable -> Tensor {
    if (!x.valid()) {
      detail::report(invalid_argument_error("jacfwd: the argument is an invalid Tensor"));
      return Tensor();
    }
    const std::int64_t n = x.size();
    std::vector<std::int64_t> basis_dims{n};
    for (std::int64_t d : x.dims()) basis_dims.push_back(d);
    Tensor basis = np::reshape(np::eye(n, x.dtype()), basis_dims);
    Tensor columns = vmap([&](const Tensor& t) { return jvp(f, x, t).second; })(basis);
    if (!columns.valid()) return Tensor();
    // columns: [n] + out dims; the Jacobian is out dims + in dims.
    std::vector<std::int64_t> dims = x.dims();
    const std::vector<std::int64_t> cdims = columns.dims();
    dims.insert(dims.end(), cdims.begin() + 1, cdims.end());
    Tensor j = np::reshape(columns, dims);
    const std::int64_t in_rank = x.rank(), out_rank = static_cast<std::int64_t>(cdims.size()) - 1;
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 0; d < out_rank; ++d) perm.push_back(in_rank + d);
    for (std::int64_t d = 0; d < in_rank; ++d) perm.push_back(d);
    return np::transpose(j, perm);
  };
}

/// The Jacobian by reverse mode (one pullback per output element, batched with vmap).
template <class F>
auto jacrev(F f) {
  return [f = std::move(f)](const Tensor& x) mutable -> Tensor {
    if (!x.valid()) {
      detail::report(invalid_argument_error("jacrev: the argument is an invalid Tensor"));
      return Tensor();
    }
    auto forward = vjp(f, x);  // not a structured binding: lambdas below capture it
    const Tensor y = forward.first;
    const auto& pullback = forward.second;
    if (!y.valid()) return Tensor();
    const std::int64_t m = y.size();
    std::vector<std::int64_t> basis_dims{m};
    for (std::int64_t d : y.dims()) basis_dims.push_back(d);
    Tensor basis = np::reshape(np::eye(m, y.dtype()), basis_dims);
    Tensor rows = vmap([&](const Tensor& ct) { return std::get<0>(pullback(ct)); })(basis);
    if (!rows.valid()) return Tensor();
    std::vector<std::int64_t> dims = y.dims();
    for (std::int64_t d : x.dims()) dims.push_back(d);
    return np::reshape(rows, dims);
  };
}

}  // namespace pjrt_lite
