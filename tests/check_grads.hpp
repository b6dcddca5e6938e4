#pragma once
// check_grads, as JAX's jax.test_util.check_grads does it: in f64, forward mode against
// central differences along a random direction v, reverse mode against forward mode by
// <vjp(w), v> == <w, jvp(v)>, and both again on the derivative functions x -> jvp(x, v) and
// x -> vjp(x, w) for order 2, with lax_autodiff_test's f64 tolerance (1e-5) and
// check_grads' step (1e-4). The oracle is always the function itself (its finite
// differences). Two forms: over a Graph (jvp_graph / vjp_graph, run by the reference
// interpreter and checked against the CPU client), and over a front-end function of a
// std::vector<Tensor> (jvp / vjp through jit on the CPU client), which checks the
// transformations of frontend/ too.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/transforms/autodiff.hpp"
#include "sanitizers.hpp"
#include "test_util.hpp"

namespace pjrt_lite::testing {

inline constexpr double kGradTol = 1e-5;   // lax_autodiff_test's gradient tolerance for f64
inline constexpr double kGradStep = 1e-4;  // JAX check_grads' finite-difference step

/// f64[dims].
inline Shape f64(std::vector<std::int64_t> dims) { return Shape(DType::kF64, std::move(dims)); }

/// A function for check_grads: its graph, the interval its arguments are drawn from, and the
/// order of derivatives checked.
struct GradCase {
  std::string name;
  Graph g;
  double lo = -2, hi = 2;
  int order = 2;
};

using GraphBody = std::function<std::vector<Value>(GraphBuilder&, const std::vector<Value>&)>;

/// A graph of parameters of `inputs` whose outputs are `body`'s.
inline Graph graph_of(const std::string& name, const std::vector<Shape>& inputs, const GraphBody& body) {
  GraphBuilder b(name);
  std::vector<Value> p;
  for (const Shape& s : inputs) p.push_back(b.parameter(s));
  return build_ok(b, body(b, p));
}

inline double inner(const std::vector<Literal>& a, const std::vector<Literal>& b) {
  double s = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    for (std::size_t i = 0; i < a[k].data<double>().size(); ++i)
      s += a[k].data<double>()[i] * b[k].data<double>()[i];
  return s;
}

inline bool grad_close(double a, double b) {
  return std::abs(a - b) <= kGradTol + kGradTol * std::abs(b);
}

/// The order to check case `index` of a list of cases at: `order`, but under a sanitizer only
/// every kSanitizerStride-th case goes beyond order 1. Order 2 runs the same rules and graph
/// passes again on the larger derivative graphs, and at -O0 under a sanitizer took most of
/// the lists' time; every case still checks both modes at order 1 there.
inline int case_order(int order, std::size_t index) {
  return index % static_cast<std::size_t>(kSanitizerStride) == 0 ? order : std::min(order, 1);
}

inline std::vector<Literal> slice_of(const std::vector<Literal>& v, std::size_t from) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.end()};
}

/// The CPU client the gradient checks share.
inline cpu::Client<>& grad_client() {
  static auto client = cpu::Client<>::create().value();
  return *client;
}

/// Runs `g` on the shared CPU client.
inline std::vector<Literal> run_cpu(const Graph& g, const std::vector<Literal>& args) {
  return run_on(grad_client(), g, args);
}

/// The interpreter's results, checked against the CPU client's.
inline std::vector<Literal> run_checked_on_cpu(const Graph& g, const std::vector<Literal>& args) {
  std::vector<Literal> ref = evaluate_ok(g, args);
  std::vector<Literal> cpu = run_cpu(g, args);
  REQUIRE(cpu.size() == ref.size());
  for (std::size_t k = 0; k < ref.size(); ++k)
    for (std::size_t i = 0; i < ref[k].data<double>().size(); ++i) {
      const double a = ref[k].data<double>()[i], c = cpu[k].data<double>()[i];
      CHECK_MESSAGE(std::abs(a - c) <= 1e-9 + 1e-9 * std::abs(a), g.name(), " output ", k, "[", i,
                    "]: interpreter ", a, ", cpu ", c);
    }
  return ref;
}

/// `inner`'s outputs with x bound to parameters and `fixed` bound to constants: the
/// function x -> inner(x, fixed)[from:].
inline Graph bound(const Graph& inner_graph, std::size_t n_x, const std::vector<Literal>& fixed,
                   std::size_t from, const std::string& name) {
  GraphBuilder b(name);
  std::vector<Value> args;
  for (std::size_t k = 0; k < n_x; ++k)
    args.push_back(b.parameter(inner_graph.shape(inner_graph.parameters()[k])));
  for (const Literal& l : fixed) args.push_back(b.constant(l));
  std::vector<Value> out = b.inline_graph(inner_graph, args);
  return build_ok(b, {out.begin() + static_cast<std::ptrdiff_t>(from), out.end()});
}

/// check_grads(g, x, order, modes=(fwd, rev)) for a graph of f64 parameters and outputs, at
/// a point drawn from [lo, hi).
inline void check_grads(const Graph& g, std::mt19937_64& rng, double lo, double hi, int order) {
  CAPTURE(g.name());
  const std::size_t n = static_cast<std::size_t>(g.num_parameters());
  const std::size_t m = g.outputs().size();
  std::vector<Literal> x, v, w;
  for (Value p : g.parameters()) {
    x.push_back(random_literal<double>(rng, g.shape(p), lo, hi));
    v.push_back(random_literal<double>(rng, g.shape(p), -1, 1));
  }
  for (const Shape& s : g.output_shapes()) w.push_back(random_literal<double>(rng, s, -1, 1));
  const std::vector<bool> all(n, true);

  // Forward mode against central differences along v.
  StatusOr<Graph> jvp = jvp_graph(g, all);
  REQUIRE_MESSAGE(jvp.ok(), jvp.status().to_string());
  std::vector<Literal> jargs = x;
  jargs.insert(jargs.end(), v.begin(), v.end());
  const std::vector<Literal> jout = run_checked_on_cpu(*jvp, jargs);
  REQUIRE(jout.size() == 2 * m);
  std::vector<Literal> xp = x, xm = x;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < x[k].data<double>().size(); ++i) {
      xp[k].data<double>()[i] += kGradStep * v[k].data<double>()[i];
      xm[k].data<double>()[i] -= kGradStep * v[k].data<double>()[i];
    }
  const std::vector<Literal> fp = evaluate_ok(g, xp), fm = evaluate_ok(g, xm);
  for (std::size_t o = 0; o < m; ++o)
    for (std::size_t i = 0; i < fp[o].data<double>().size(); ++i) {
      const double fd = (fp[o].data<double>()[i] - fm[o].data<double>()[i]) / (2 * kGradStep);
      const double ad = jout[m + o].data<double>()[i];
      CHECK_MESSAGE(grad_close(ad, fd), "jvp output ", o, "[", i, "] = ", ad, ", differences give ", fd);
    }

  // Reverse mode against forward mode.
  StatusOr<Graph> vjp = vjp_graph(g, all);
  REQUIRE_MESSAGE(vjp.ok(), vjp.status().to_string());
  std::vector<Literal> vargs = x;
  vargs.insert(vargs.end(), w.begin(), w.end());
  const std::vector<Literal> vout = run_checked_on_cpu(*vjp, vargs);
  REQUIRE(vout.size() == m + n);
  const double lhs = inner(slice_of(vout, m), v), rhs = inner(w, slice_of(jout, m));
  CHECK_MESSAGE(grad_close(lhs, rhs), "<vjp(w), v> = ", lhs, ", <w, jvp(v)> = ", rhs);

  if (order < 2) return;
  // The derivative functions x -> jvp(x, v) and x -> vjp(x, w), checked at order 1.
  check_grads(bound(*jvp, n, v, m, g.name() + "_jvp"), rng, lo, hi, order - 1);
  check_grads(bound(*vjp, n, w, m, g.name() + "_vjp"), rng, lo, hi, order - 1);
}

// ---- The front-end form --------------------------------------------------------------------

/// The leaves of a tree of Literals, in order.
template <class T>
std::vector<Literal> literal_leaves(const T& t) {
  std::vector<Literal> out;
  tree::for_each_leaf(t, [&](const Literal& l) { out.push_back(l); });
  return out;
}

/// Constants of the innermost trace holding `values`.
inline std::vector<Tensor> constants(const std::vector<Literal>& values) {
  std::vector<Tensor> out;
  for (const Literal& l : values) out.push_back(np::array(l));
  return out;
}

/// A front-end function of std::vector<Tensor> with its result flattened to its leaves,
/// behind one type: check_grads_fn then compiles jit, jvp and vjp once per order rather than
/// once per function (each lambda's own instantiations cost a test file minutes of compile).
using LeafFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

template <class F>
LeafFn leaf_fn(F f) {
  return [f = std::move(f)](const std::vector<Tensor>& a) {
    std::vector<Tensor> out;
    tree::for_each_leaf(f(a), [&](const Tensor& t) { out.push_back(t); });
    return out;
  };
}

template <int Order>
void check_grads_leaves(const LeafFn& f, const std::vector<Literal>& x, std::mt19937_64& rng);

/// check_grads for a front-end function f(std::vector<Tensor>) returning a tree of f64
/// Tensors, at `x`, to `Order`: jvp, vjp and central differences all run through jit on the
/// CPU client, so this checks the front end's transformations (and what they compose with)
/// as well as the rules.
template <int Order, class F>
void check_grads_fn(const F& f, const std::vector<Literal>& x, std::mt19937_64& rng) {
  check_grads_leaves<Order>(leaf_fn(f), x, rng);
}

template <int Order>
void check_grads_leaves(const LeafFn& f, const std::vector<Literal>& x, std::mt19937_64& rng) {
  using Tensors = std::vector<Tensor>;
  auto& client = grad_client();
  auto value = jit(client, [&](const Tensors& a) { return f(a); });
  std::vector<Literal> v;
  for (const Literal& l : x) v.push_back(random_literal<double>(rng, l.shape(), -1, 1));
  const std::vector<Literal> y = literal_leaves(value(x).value());
  std::vector<Literal> w;
  for (const Literal& l : y) w.push_back(random_literal<double>(rng, l.shape(), -1, 1));

  // Forward mode against central differences along v.
  auto forward = jit(client, [&](const Tensors& a, const Tensors& t) {
    return jvp(f, std::tuple<Tensors>{a}, std::tuple<Tensors>{t}).second;
  });
  const std::vector<Literal> jv = literal_leaves(forward(x, v).value());
  REQUIRE(jv.size() == y.size());
  std::vector<Literal> xp = x, xm = x;
  for (std::size_t k = 0; k < x.size(); ++k)
    for (std::size_t i = 0; i < x[k].data<double>().size(); ++i) {
      xp[k].data<double>()[i] += kGradStep * v[k].data<double>()[i];
      xm[k].data<double>()[i] -= kGradStep * v[k].data<double>()[i];
    }
  const std::vector<Literal> fp = literal_leaves(value(xp).value());
  const std::vector<Literal> fm = literal_leaves(value(xm).value());
  for (std::size_t o = 0; o < y.size(); ++o)
    for (std::size_t i = 0; i < y[o].data<double>().size(); ++i) {
      const double fd = (fp[o].data<double>()[i] - fm[o].data<double>()[i]) / (2 * kGradStep);
      const double ad = jv[o].data<double>()[i];
      CHECK_MESSAGE(grad_close(ad, fd), "order ", Order, ": jvp output ", o, "[", i, "] = ", ad,
                    ", differences give ", fd);
    }

  // Reverse mode against forward mode.
  auto reverse = jit(client, [&](const Tensors& a, const std::vector<Tensor>& ct) {
    auto forward_pass = vjp(f, a);
    std::size_t next = 0;
    return std::get<0>(forward_pass.second(tree::unflatten<Tensor>(forward_pass.first, ct, next)));
  });
  const std::vector<Literal> ct = literal_leaves(reverse(x, w).value());
  REQUIRE(ct.size() == x.size());
  const double lhs = inner(ct, v), rhs = inner(w, jv);
  CHECK_MESSAGE(grad_close(lhs, rhs), "order ", Order, ": <vjp(w), v> = ", lhs, ", <w, jvp(v)> = ", rhs);

  if constexpr (Order > 1) {
    check_grads_leaves<Order - 1>(
        [&f, v](const Tensors& a) {
          return jvp(f, std::tuple<Tensors>{a}, std::tuple<Tensors>{constants(v)}).second;
        },
        x, rng);
    check_grads_leaves<Order - 1>(
        [&f, w](const Tensors& a) {
          auto forward_pass = vjp(f, a);
          std::size_t next = 0;
          return std::get<0>(
              forward_pass.second(tree::unflatten<Tensor>(forward_pass.first, constants(w), next)));
        },
        x, rng);
  }
}

}  // namespace pjrt_lite::testing
