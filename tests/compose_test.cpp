// Transformations that compose (issue 24, item 4): jit inside grad/vmap/jvp, jit's
// static_argnums and donate_argnums, stop_gradient, custom_jvp, custom_vjp, linearize,
// hessian, value_and_grad with has_aux, vmap's out_axes, jacfwd/jacrev over several argnums
// and trees. Oracles: closed forms, and central differences of the plain function
// (check_grads.hpp), never the code under test.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "check_grads.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "test_util.hpp"

namespace compose_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;
using namespace pjrt_lite::np;

namespace {

using Tensors = std::vector<Tensor>;

double scalar(const Literal& l) { return l.data<double>()[0]; }

Literal vec(std::vector<double> v) {
  Literal l(Shape(kF64, {static_cast<std::int64_t>(v.size())}));
  for (std::size_t i = 0; i < v.size(); ++i) l.data<double>()[i] = v[i];
  return l;
}

void check_values(const Literal& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.data<double>().size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK_MESSAGE(std::abs(got.data<double>()[i] - want[i]) <= tol * (1 + std::abs(want[i])), "element ", i,
                  ": ", got.data<double>()[i], " != ", want[i]);
}

template <class T>
struct Params {
  T w, b;
};

}  // namespace

TEST_CASE("compose: a jitted function called on Tensors inlines, so grad, vmap and jvp see through it") {
  auto& client = grad_client();
  auto f = jit(client, [](const Tensor& x) { return sin(x) * x; });
  // grad(jit(f)) against the closed form cos(x) x + sin(x).
  auto g = jit(client, grad([&](const Tensor& x) { return f(x); }));
  for (double x : {-1.3, 0.2, 2.5})
    CHECK(scalar(g(x).value()) == doctest::Approx(std::cos(x) * x + std::sin(x)).epsilon(1e-14));
  // vmap(jit(f)) and jvp(jit(f)).
  auto batched = jit(client, vmap([&](const Tensor& x) { return f(x); }));
  check_values(batched(vec({0.5, -2.0})).value(), {std::sin(0.5) * 0.5, std::sin(-2.0) * -2.0});
  auto tangent = jit(client, [&](const Tensor& x) { return jvp(f, x, ones_like(x)).second; });
  CHECK(scalar(tangent(0.7).value()) == doctest::Approx(std::cos(0.7) * 0.7 + std::sin(0.7)).epsilon(1e-14));
  // The inlined calls never compiled f on its own.
  CHECK(f.trace_count() == 0);
  // jit inside jit, with a scalar and a Literal argument next to the Tensor (constants).
  auto h = jit(client, [](const Tensor& x, const Tensor& y) { return x * y; });
  auto outer = jit(client, [&](const Tensor& x) { return h(x, 3.0) + h(x, Literal::scalar(1.0)); });
  CHECK(scalar(outer(2.0).value()) == 8.0);
  // grad(grad(jit(f))): -sin(x) x + 2 cos(x).
  auto g2 = jit(client, grad(grad([&](const Tensor& x) { return f(x); })));
  CHECK(scalar(g2(0.4).value()) == doctest::Approx(-std::sin(0.4) * 0.4 + 2 * std::cos(0.4)).epsilon(1e-13));
}

TEST_CASE("compose: jit's static_argnums pass values as they are and key the cache on them") {
  auto& client = grad_client();
  auto f = jit<1>(client, [](const Tensor& x, int power) {
    Tensor r = ones_like(x);
    for (int i = 0; i < power; ++i) r = r * x;
    return r;
  });
  CHECK(scalar(f(2.0, 3).value()) == 8.0);
  CHECK(scalar(f(2.0, 2).value()) == 4.0);
  CHECK(f.trace_count() == 2);
  CHECK(scalar(f(5.0, 3).value()) == 125.0);  // a hit: same shapes, same static value
  CHECK(f.trace_count() == 2);
  auto named = jit<0>(client, [](const std::string& op, const Tensor& x) { return op == "neg" ? -x : x; });
  CHECK(scalar(named(std::string("neg"), 1.5).value()) == -1.5);
  CHECK(scalar(named(std::string("id"), 1.5).value()) == 1.5);
  // Inside a trace, the static argument still goes as it is.
  auto g = jit(client, grad([&](const Tensor& x) { return f(x, 3); }));
  CHECK(scalar(g(2.0).value()) == doctest::Approx(12.0));
}

TEST_CASE("compose: jit's donate_argnums donates buffers, and bad lists are statuses") {
  auto& client = grad_client();
  auto f = jit(client, [](const Tensor& x, const Tensor& y) { return x * 2.0 + y; },
               JitOptions{.name = "donating", .donate_argnums = {0}});
  auto x = client.buffer_from_literal(vec({1, 2, 3})).value();
  auto y = client.buffer_from_literal(vec({10, 20, 30})).value();
  check_values(f(x, y).value(), {12, 24, 36});
  CHECK(x.is_deleted());
  CHECK_FALSE(y.is_deleted());
  // Host values: their staged copies are donated.
  check_values(f(vec({1, 1, 1}), vec({0, 1, 2})).value(), {2, 3, 4});
  auto out_of_range = jit(client, [](const Tensor& x) { return x; }, JitOptions{.donate_argnums = {1}});
  check_error(out_of_range(1.0).status(), StatusCode::kInvalidArgument, "donate_argnums[0] = 1");
  auto twice = jit(client, [](const Tensor& x) { return x; }, JitOptions{.donate_argnums = {0, 0}});
  check_error(twice(1.0).status(), StatusCode::kInvalidArgument, "donated twice");
  auto static_donated = jit<1>(client, [](const Tensor& x, int) { return x; }, JitOptions{.donate_argnums = {1}});
  check_error(static_donated(1.0, 2).status(), StatusCode::kInvalidArgument, "static");
}

TEST_CASE("compose: stop_gradient has zero derivatives in every mode and order") {
  auto& client = grad_client();
  // d/dx [x^2 sg(x)] = 2 x sg(x); d2 = 2 sg(x).
  auto f = [](const Tensor& x) { return x * x * stop_gradient(x); };
  CHECK(scalar(jit(client, f)(3.0).value()) == 27.0);
  CHECK(scalar(jit(client, grad(f))(3.0).value()) == 18.0);
  CHECK(scalar(jit(client, grad(grad(f)))(3.0).value()) == 6.0);
  CHECK(scalar(jit(client, [&](const Tensor& x) { return jvp(f, x, ones_like(x)).second; })(3.0).value()) == 18.0);
  // On a tree, under vmap, and with integer leaves left alone.
  auto tree_fn = [](const Tensor& x) {
    auto [a, b] = stop_gradient(std::pair{x, x * 2.0});
    return sum(a * x + b);
  };
  check_values(jit(client, vmap(grad(tree_fn)))(vec({1, 2})).value(), {1, 2});
  auto with_int = jit(client, [](const Tensor& x) { return stop_gradient(x.astype(DType::kS32)).astype(DType::kF64) + x; });
  CHECK(scalar(with_int(2.5).value()) == 4.5);
}

TEST_CASE("compose: custom_jvp's rule is what jvp, grad and their compositions use") {
  auto& client = grad_client();
  // jax's example: log(1 + exp(x)) whose plain derivative is NaN at large x.
  auto log1pexp = custom_jvp([](const Tensor& x) { return log(1.0 + exp(x)); },
                             [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                               const Tensor& x = std::get<0>(p);
                               return std::pair{log(1.0 + exp(x)), std::get<0>(t) * (1.0 - 1.0 / (1.0 + exp(x)))};
                             });
  CHECK(std::isnan(scalar(jit(client, grad([](const Tensor& x) { return log(1.0 + exp(x)); }))(1000.0).value())));
  CHECK(scalar(jit(client, grad(log1pexp))(1000.0).value()) == 1.0);
  CHECK(scalar(jit(client, log1pexp)(0.0).value()) == doctest::Approx(std::log(2.0)));
  // A rule that disagrees with the function on purpose, to see which one runs: the primal
  // runs sin, the rule says the derivative is 2 cos; its own derivative gives order 2.
  auto f = custom_jvp([](const Tensor& x) { return sin(x); },
                      [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                        const Tensor& x = std::get<0>(p);
                        return std::pair{sin(x), 2.0 * cos(x) * std::get<0>(t)};
                      });
  const double x0 = 0.3;
  CHECK(scalar(jit(client, f)(x0).value()) == doctest::Approx(std::sin(x0)).epsilon(1e-15));
  CHECK(scalar(jit(client, grad(f))(x0).value()) == doctest::Approx(2 * std::cos(x0)).epsilon(1e-15));
  CHECK(scalar(jit(client, [&](const Tensor& x) { return jvp(f, x, ones_like(x)).second; })(x0).value()) ==
        doctest::Approx(2 * std::cos(x0)).epsilon(1e-15));
  CHECK(scalar(jit(client, grad(grad(f)))(x0).value()) == doctest::Approx(-2 * std::sin(x0)).epsilon(1e-14));
  CHECK(scalar(jit(client, [&](const Tensor& x) { return jvp(grad(f), x, ones_like(x)).second; })(x0).value()) ==
        doctest::Approx(-2 * std::sin(x0)).epsilon(1e-14));
  // Through vmap both ways, jacfwd, jacrev and linearize.
  const Literal xs = vec({0.1, -0.7, 1.2});
  const std::vector<double> twice_cos = {2 * std::cos(0.1), 2 * std::cos(-0.7), 2 * std::cos(1.2)};
  check_values(jit(client, vmap(grad(f)))(xs).value(), twice_cos, 1e-14);
  check_values(jit(client, grad([&](const Tensor& x) { return sum(vmap(f)(x)); }))(xs).value(), twice_cos, 1e-14);
  const Literal jf = jit(client, jacfwd([&](const Tensor& x) { return vmap(f)(x); }))(xs).value();
  const Literal jr = jit(client, jacrev([&](const Tensor& x) { return vmap(f)(x); }))(xs).value();
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      const double want = i == j ? twice_cos[static_cast<std::size_t>(i)] : 0.0;
      CHECK(jf.get<double>({i, j}) == doctest::Approx(want).epsilon(1e-14));
      CHECK(jr.get<double>({i, j}) == doctest::Approx(want).epsilon(1e-14));
    }
  auto lin = jit(client, [&](const Tensor& x, const Tensor& t) { return linearize(f, x).second(t); });
  CHECK(scalar(lin(x0, 0.5).value()) == doctest::Approx(std::cos(x0)).epsilon(1e-15));
  // Several arguments, one of them an integer (its tangent is zeros of its type).
  auto scaled = custom_jvp([](const Tensor& x, const Tensor& n) { return x * n.astype(DType::kF64); },
                           [](const std::tuple<Tensor, Tensor>& p, const std::tuple<Tensor, Tensor>& t) {
                             const Tensor n = std::get<1>(p).astype(DType::kF64);
                             return std::pair{std::get<0>(p) * n, std::get<0>(t) * n * 10.0};
                           });
  auto gs = jit(client, [&](const Tensor& x) { return grad(scaled)(x, full({}, 3, DType::kS32)); });
  CHECK(scalar(gs(1.0).value()) == 30.0);
}

TEST_CASE("compose: custom_vjp's bwd is what reverse mode uses, and forward mode is refused") {
  auto& client = grad_client();
  // jax's clip_gradient: the identity whose cotangent is clipped to [-1, 1].
  auto clip_gradient = custom_vjp([](const Tensor& x) { return x; },
                                  [](const Tensor& x) { return std::pair{x, x}; },
                                  [](const Tensor&, const Tensor& ct) { return std::tuple{clip(ct, -1.0, 1.0)}; });
  auto g = jit(client, grad([&](const Tensor& x) { return 5.0 * clip_gradient(x); }));
  CHECK(scalar(g(2.0).value()) == 1.0);
  CHECK(scalar(jit(client, clip_gradient)(2.0).value()) == 2.0);
  // Residuals used, and a bwd that scales on purpose: grad = 3 cos, grad(grad) = -3 sin.
  auto f = custom_vjp([](const Tensor& x) { return sin(x); },
                      [](const Tensor& x) { return std::pair{sin(x), cos(x)}; },
                      [](const Tensor& c, const Tensor& ct) { return std::tuple{3.0 * c * ct}; });
  const double x0 = 0.8;
  CHECK(scalar(jit(client, grad(f))(x0).value()) == doctest::Approx(3 * std::cos(x0)).epsilon(1e-15));
  CHECK(scalar(jit(client, grad(grad(f)))(x0).value()) == doctest::Approx(-3 * std::sin(x0)).epsilon(1e-14));
  check_values(jit(client, vmap(grad(f)))(vec({0.1, 0.2})).value(), {3 * std::cos(0.1), 3 * std::cos(0.2)}, 1e-14);
  check_values(jit(client, grad([&](const Tensor& x) { return sum(vmap(f)(x)); }))(vec({0.1, 0.2})).value(),
               {3 * std::cos(0.1), 3 * std::cos(0.2)}, 1e-14);
  // jacfwd(jacrev(f)) differentiates the bwd, as jax.hessian does.
  CHECK(scalar(jit(client, hessian(f))(x0).value()) == doctest::Approx(-3 * std::sin(x0)).epsilon(1e-14));
  auto forward = jit(client, [&](const Tensor& x) { return jvp(f, x, ones_like(x)).second; });
  check_error(forward(x0).status(), StatusCode::kUnimplemented, "can't apply forward-mode autodiff (jvp) to a custom_vjp function");
}

TEST_CASE("compose: custom rules that do not fit the function are statuses") {
  auto& client = grad_client();
  auto wrong_tangent = custom_jvp([](const Tensor& x) { return x; },
                                  [](const std::tuple<Tensor>& p, const std::tuple<Tensor>&) {
                                    return std::pair{std::get<0>(p), zeros({2}, DType::kF64)};
                                  });
  check_error(jit(client, grad(wrong_tangent))(1.0).status(), StatusCode::kInvalidArgument,
              "the rule's tangent output leaf 0 has shape");
  auto wrong_dtype = custom_jvp([](const Tensor& x) { return x; },
                                [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                                  return std::pair{std::get<0>(p), std::get<0>(t).astype(DType::kF32)};
                                });
  check_error(jit(client, wrong_dtype)(1.0).status(), StatusCode::kInvalidArgument, "tangent output");
  auto wrong_bwd = custom_vjp([](const Tensor& x) { return x; }, [](const Tensor& x) { return std::pair{x, x}; },
                              [](const Tensor&, const Tensor& ct) { return std::tuple{concatenate({ct, ct})}; });
  check_error(jit(client, grad(wrong_bwd))(vec({1, 2})).status(), StatusCode::kInvalidArgument,
              "bwd's cotangent 0 has shape");
  auto two_cts = custom_vjp([](const Tensor& x) { return x; }, [](const Tensor& x) { return std::pair{x, x}; },
                            [](const Tensor&, const Tensor& ct) { return std::tuple{ct, ct}; });
  check_error(jit(client, grad(two_cts))(1.0).status(), StatusCode::kInvalidArgument, "one per argument leaf");
  // Differentiating with respect to a value the function closes over.
  auto closes = jit(client, grad([](const Tensor& w) {
    auto f = custom_jvp([&](const Tensor& x) { return x * w; },
                        [&](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                          return std::pair{std::get<0>(p) * w, std::get<0>(t) * w};
                        });
    return f(full({}, 2.0, DType::kF64));
  }));
  check_error(closes(1.0).status(), StatusCode::kInvalidArgument, "closes over");
  // Wrong argnums: an integer argument.
  auto int_arg = jit(client, [](const Tensor& x) { return grad([](const Tensor& n) { return sum(n.astype(DType::kF64)); })(x); });
  check_error(int_arg(Literal::scalar(std::int32_t{2})).status(), StatusCode::kInvalidArgument, "floating-point");
}

TEST_CASE("compose: linearize gives the jvp as a linear function") {
  auto& client = grad_client();
  auto f = [](const Tensor& x, const Tensor& y) { return sin(x) * y; };
  auto both = jit(client, [&](const Tensor& x, const Tensor& y, const Tensor& tx, const Tensor& ty) {
    auto [out, f_jvp] = linearize(f, x, y);
    return std::pair{out, f_jvp(tx, ty)};
  });
  auto [y, t] = both(0.4, 2.0, 0.5, -1.0).value();
  CHECK(scalar(y) == doctest::Approx(std::sin(0.4) * 2.0).epsilon(1e-15));
  CHECK(scalar(t) == doctest::Approx(std::cos(0.4) * 2.0 * 0.5 + std::sin(0.4) * -1.0).epsilon(1e-15));
  auto bad = jit(client, [&](const Tensor& x) { return linearize(f, x, x).second(x, zeros({2}, DType::kF64)); });
  check_error(bad(1.0).status(), StatusCode::kInvalidArgument, "tangent 1 has shape");
}

TEST_CASE("compose: hessian against closed forms, one and several arguments") {
  auto& client = grad_client();
  // sum(x^3): diag(6 x).
  const Literal h = jit(client, hessian([](const Tensor& x) { return sum(x * x * x); }))(vec({1, -2})).value();
  CHECK(h.dims()[0] == 2);
  CHECK(h.dims()[1] == 2);
  check_values(h, {6, 0, 0, -12});
  // x^T A x: A + A^T.
  Literal a(Shape(kF64, {2, 2}));
  for (std::size_t i = 0; i < 4; ++i) a.data<double>()[i] = std::vector<double>{1, 2, 5, 3}[i];
  auto quad = jit(client, [](const Tensor& x, const Tensor& m) { return hessian([&](const Tensor& v) { return sum(v * matmul(m, v)); })(x); });
  check_values(quad(vec({0.3, 0.7}), a).value(), {2, 7, 7, 6});
  // sum(x * y) over (x, y): ((0, I), (I, 0)).
  auto mixed = jit(client, hessian<0, 1>([](const Tensor& x, const Tensor& y) { return sum(x * y); }));
  auto hs = mixed(vec({1, 2}), vec({3, 4})).value();
  check_values(std::get<0>(std::get<0>(hs)), {0, 0, 0, 0});
  check_values(std::get<1>(std::get<0>(hs)), {1, 0, 0, 1});
  check_values(std::get<0>(std::get<1>(hs)), {1, 0, 0, 1});
}

TEST_CASE("compose: value_and_grad and grad with has_aux") {
  auto& client = grad_client();
  auto f = [](const Tensor& x) { return std::pair{sum(x * x), std::pair{x * 2.0, max(x)}}; };
  auto vg = jit(client, value_and_grad(f, has_aux));
  auto [value_aux, g] = vg(vec({1, -3})).value();
  CHECK(scalar(value_aux.first) == 10.0);
  check_values(value_aux.second.first, {2, -6});
  CHECK(scalar(value_aux.second.second) == 1.0);
  check_values(g, {2, -6});
  auto [g2, aux] = jit(client, grad(f, has_aux))(vec({1, -3})).value();
  check_values(g2, {2, -6});
  check_values(aux.first, {2, -6});
  // Several argnums with aux.
  auto h = [](const Tensor& x, const Tensor& y) { return std::pair{sum(x * y), y}; };
  auto [gs, y] = jit(client, grad<0, 1>(h, has_aux))(vec({1, 2}), vec({3, 4})).value();
  check_values(std::get<0>(gs), {3, 4});
  check_values(std::get<1>(gs), {1, 2});
  check_values(y, {3, 4});
  // The value must be a scalar.
  auto not_scalar = jit(client, grad([](const Tensor& x) { return std::pair{x, x}; }, has_aux));
  check_error(not_scalar(vec({1, 2})).status(), StatusCode::kInvalidArgument, "real scalar (and aux)");
}

TEST_CASE("compose: vmap's out_axes place the mapped axis, kNotMapped returns unmapped results") {
  auto& client = grad_client();
  Literal m(Shape(kF64, {2, 3}));
  for (std::size_t i = 0; i < 6; ++i) m.data<double>()[i] = static_cast<double>(i);
  // Rows mapped, and the result's mapped axis last: the transpose of 2 m.
  auto f = jit(client, vmap([](const Tensor& row) { return row * 2.0; }, {0}, {1}));
  const Literal r = f(m).value();
  CHECK(r.dims()[0] == 3);
  CHECK(r.dims()[1] == 2);
  check_values(r, {0, 6, 2, 8, 4, 10});
  // -1 is the last axis too; one entry per result leaf; kNotMapped for a constant result.
  auto g = jit(client, vmap([](const Tensor& row) { return std::pair{row * 1.0, full({}, 7.0, DType::kF64)}; },
                            {0}, {-1, kNotMapped}));
  auto [a, c] = g(m).value();
  check_values(a, {0, 3, 1, 4, 2, 5});
  CHECK(c.dims().empty());
  CHECK(scalar(c) == 7.0);
  auto bad = jit(client, vmap([](const Tensor& row) { return row; }, {0}, {kNotMapped}));
  check_error(bad(m).status(), StatusCode::kInvalidArgument, "out_axes is None");
  auto count = jit(client, vmap([](const Tensor& row) { return std::pair{row, row}; }, {0}, {0, 0, 0}));
  check_error(count(m).status(), StatusCode::kInvalidArgument, "out_axes has 3 entries for 2 result leaves");
  auto range = jit(client, vmap([](const Tensor& row) { return row; }, {0}, {2}));
  check_error(range(m).status(), StatusCode::kInvalidArgument, "out of range");
}

TEST_CASE("compose: jacfwd and jacrev over several argnums and trees, against differences") {
  auto& client = grad_client();
  // f(p, x) = tanh(p.w * x + p.b) for vectors: d/dw = diag(x s), d/db = diag(s), s = 1 - y^2;
  // d/dx = diag(w s).
  auto f = [](const Params<Tensor>& p, const Tensor& x) { return tanh(p.w * x + p.b); };
  const Params<Literal> p{vec({0.5, -1.0}), vec({0.1, 0.2})};
  const Literal x = vec({0.3, 0.9});
  auto expected = [&](int which) {
    std::vector<double> out(4, 0.0);
    for (std::size_t i = 0; i < 2; ++i) {
      const double w = p.w.data<double>()[i], b = p.b.data<double>()[i], xi = x.data<double>()[i];
      const double s = 1 - std::tanh(w * xi + b) * std::tanh(w * xi + b);
      out[i * 3] = which == 0 ? xi * s : which == 1 ? s : w * s;
    }
    return out;
  };
  for (bool forward : {true, false}) {
    CAPTURE(forward);
    auto j = forward ? jit(client, [&](const Params<Tensor>& q, const Tensor& y) { return jacfwd<0, 1>(f)(q, y); })(p, x).value()
                     : jit(client, [&](const Params<Tensor>& q, const Tensor& y) { return jacrev<0, 1>(f)(q, y); })(p, x).value();
    check_values(std::get<0>(j).w, expected(0), 1e-14);
    check_values(std::get<0>(j).b, expected(1), 1e-14);
    check_values(std::get<1>(j), expected(2), 1e-14);
  }
  // A tree result: each leaf gets its Jacobian; shapes out.dims + in.dims.
  auto g = [](const Tensor& x) { return std::pair{sum(x * x), x * 3.0}; };
  auto [js, jv] = jit(client, jacrev(g))(vec({1, 2, 3})).value();
  check_values(js, {2, 4, 6});
  CHECK(jv.dims()[0] == 3);
  CHECK(jv.dims()[1] == 3);
  check_values(jv, {3, 0, 0, 0, 3, 0, 0, 0, 3});
  // Integer inputs are refused.
  auto ints = jit(client, [](const Tensor& n) { return jacfwd([](const Tensor& m) { return m.astype(DType::kF64); })(n); });
  check_error(ints(Literal::scalar(std::int32_t{1})).status(), StatusCode::kInvalidArgument, "floating-point inputs");
}

TEST_CASE("compose: check_grads through the transformations (orders 1 and 2)") {
  std::mt19937_64 rng(2424);
  const std::vector<Literal> x = {vec({0.3, -0.8, 1.1}), vec({0.5, 0.2, -0.4})};
  // jit inlined and custom_jvp with its true derivative (the rule must agree with the
  // differences), vmap and linearize inside.
  auto jitted = jit(grad_client(), [](const Tensor& a, const Tensor& b) { return sin(a) * b; });
  auto softplus = custom_jvp([](const Tensor& v) { return log(1.0 + exp(v)); },
                             [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                               const Tensor& v = std::get<0>(p);
                               return std::pair{log(1.0 + exp(v)), std::get<0>(t) * sigmoid(v)};
                             });
  auto cube = custom_vjp([](const Tensor& v) { return v * v * v; },
                         [](const Tensor& v) { return std::pair{v * v * v, v}; },
                         [](const Tensor& v, const Tensor& ct) { return std::tuple{3.0 * v * v * ct}; });
  check_grads_fn<2>([&](const Tensors& a) { return jitted(a[0], a[1]) + softplus(a[0] * a[1]); }, x, rng);
  check_grads_fn<2>(
      [&](const Tensors& a) {
        return vmap([&](const Tensor& u, const Tensor& v) { return tanh(u) * exp(v); })(a[0], a[1]);
      },
      x, rng);
  check_grads_fn<2>(
      [&](const Tensors& a) { return linearize([](const Tensor& u) { return sin(u) * u; }, a[0]).second(a[1]); }, x,
      rng);
  // custom_vjp has no forward mode: its check is reverse against the closed form.
  auto gc = jit(grad_client(), grad([&](const Tensor& v) { return sum(cube(v)); }));
  check_values(gc(vec({1, -2})).value(), {3, 12});
}

}  // namespace compose_test
