// Tests of the front end's control flow (frontend/control_flow.hpp): cond, switch_,
// while_loop, fori_loop and scan, run through jit on the CPU client, differentiated in both
// modes and batched with vmap. Oracles: closed forms and the same recurrences evaluated by
// plain C++ loops; derivatives against central finite differences in f64 (the function
// itself is the oracle), second derivatives against central differences of the first.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "test_util.hpp"

namespace control_flow_frontend_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

std::unique_ptr<cpu::Client<cpu::InlineExecutor>> make_client() {
  return cpu::Client<cpu::InlineExecutor>::create().value();
}

double scalar(const Literal& l) { return l.data<double>()[0]; }

Literal vec(std::vector<double> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Literal::from_span<double>(v, {n}).value();
}

constexpr double kStep = 1e-6;
constexpr double kTol = 1e-6;

bool close(double a, double b, double tol = kTol) {
  return std::abs(a - b) <= tol + tol * std::abs(b);
}

/// Checks a jitted scalar function f of one f64 array x, and jits of its grad and its jvp
/// (taking x and a direction), against central differences of f: the gradient per element
/// and the directional derivative along a random direction.
template <class F, class G, class J>
void check_derivatives(F& f, G& df, J& jf, const Literal& x, std::uint64_t seed) {
  const Literal g = df(x).value();
  REQUIRE(g.shape() == x.shape());
  for (std::size_t i = 0; i < x.data<double>().size(); ++i) {
    Literal up = x, down = x;
    up.data<double>()[i] += kStep;
    down.data<double>()[i] -= kStep;
    const double fd = (scalar(f(up).value()) - scalar(f(down).value())) / (2 * kStep);
    CHECK_MESSAGE(close(g.data<double>()[i], fd), "grad[", i, "] = ", g.data<double>()[i],
                  ", central difference ", fd);
  }
  std::mt19937_64 rng(seed);
  const Literal v = random_literal<double>(rng, x.shape(), -1, 1);
  Literal up = x, down = x;
  for (std::size_t i = 0; i < x.data<double>().size(); ++i) {
    up.data<double>()[i] += kStep * v.data<double>()[i];
    down.data<double>()[i] -= kStep * v.data<double>()[i];
  }
  const double fd = (scalar(f(up).value()) - scalar(f(down).value())) / (2 * kStep);
  const double t = scalar(jf(x, v).value());
  CHECK_MESSAGE(close(t, fd), "jvp ", t, ", central difference ", fd);
}

/// check_derivatives for a function of one f64 array returning a scalar.
template <class Fn>
void check_function(Fn fn, const Literal& x, std::uint64_t seed = 1) {
  auto client = make_client();
  auto f = jit(client, fn);
  auto df = jit(client, grad(fn));
  auto jf = jit(client, [fn](Tensor x, Tensor v) { return jvp(fn, x, v).second; });
  check_derivatives(f, df, jf, x, seed);
}

/// The second derivative of a scalar function of a scalar, grad(grad) and jvp(grad), against
/// central differences of grad.
template <class Fn>
void check_second_order(Fn fn, double x) {
  auto client = make_client();
  auto d1 = jit(client, grad(fn));
  auto d2 = jit(client, grad(grad(fn)));
  auto fwd_rev = jit(client, [fn](Tensor x) { return jvp(grad(fn), x, ones_like(x)).second; });
  const double fd =
      (scalar(d1(x + 1e-5).value()) - scalar(d1(x - 1e-5).value())) / (2 * 1e-5);
  const double rr = scalar(d2(x).value()), fr = scalar(fwd_rev(x).value());
  CHECK_MESSAGE(close(rr, fd, 1e-5), "grad(grad) ", rr, ", central difference of grad ", fd);
  CHECK_MESSAGE(close(fr, fd, 1e-5), "jvp(grad) ", fr, ", central difference of grad ", fd);
}

bool has(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("control flow: cond picks a branch by the predicate, with tree operands and closures") {
  auto client = make_client();
  auto f = jit(client, [](Tensor x, Tensor scale) {
    return cond(
        sum(x) > 0.0, [&](Tensor v) { return v * scale; }, [](Tensor v) { return -v; }, x);
  });
  CHECK(f(vec({1, 2}), 3.0).value() == vec({3, 6}));
  CHECK(f(vec({-1, -2}), 3.0).value() == vec({1, 2}));
  // A numeric predicate: nonzero is true. Tuple operands and a tuple result.
  auto g = jit(client, [](Tensor p, Tensor a, Tensor b) {
    using Pair = std::tuple<Tensor, Tensor>;
    return cond(
        p, [](const Pair& t) { return Pair{std::get<1>(t), std::get<0>(t)}; },
        [](const Pair& t) { return Pair{std::get<0>(t) * 2.0, std::get<1>(t) * 2.0}; },
        Pair{a, b});
  });
  auto [a1, b1] = g(std::int32_t{5}, 1.0, 2.0).value();
  CHECK(scalar(a1) == 2.0);
  CHECK(scalar(b1) == 1.0);
  auto [a0, b0] = g(std::int32_t{0}, 1.0, 2.0).value();
  CHECK(scalar(a0) == 2.0);
  CHECK(scalar(b0) == 4.0);
}

TEST_CASE("control flow: switch_ runs branch index, clamped into range as JAX clamps it") {
  auto client = make_client();
  std::vector<std::function<Tensor(const Tensor&)>> branches{
      [](const Tensor& x) { return x + 1.0; }, [](const Tensor& x) { return x * x; },
      [](const Tensor& x) { return sin(x); }};
  auto f = jit(client, [&](Tensor i, Tensor x) { return switch_(i, branches, x); });
  const double x = 0.7;
  const std::vector<double> expect{x + 1.0, x * x, std::sin(x)};
  for (std::int32_t i : {-3, 0, 1, 2, 9}) {
    CAPTURE(i);
    const std::size_t k = static_cast<std::size_t>(std::clamp(i, 0, 2));
    CHECK(scalar(f(i, x).value()) == expect[k]);
  }
}

TEST_CASE("control flow: while_loop computes closed forms") {
  auto client = make_client();
  // The sum 1 + ... + n over an (i, sum) tuple carry: n (n + 1) / 2.
  auto tri = jit(client, [](Tensor n) {
    using C = std::tuple<Tensor, Tensor>;
    C out = while_loop([&](const C& c) { return std::get<0>(c) <= n; },
                       [](const C& c) {
                         return C{std::get<0>(c) + 1, std::get<1>(c) + std::get<0>(c)};
                       },
                       C{full_like(n, 1), zeros_like(n)});
    return std::get<1>(out);
  });
  for (std::int32_t n : {0, 1, 7, 100})
    CHECK(tri(n).value() == Literal::scalar(std::int32_t{n * (n + 1) / 2}));
  // Doubling until at least 100: x * 2^ceil(log2(100 / x)).
  auto dbl = jit(client, [](Tensor x) {
    return while_loop([](const Tensor& v) { return v < 100.0; },
                      [](const Tensor& v) { return v * 2.0; }, x);
  });
  for (double x : {0.3, 3.0, 99.0, 150.0}) {
    double want = x;
    while (want < 100.0) want *= 2;
    CHECK(scalar(dbl(x).value()) == want);
  }
}

TEST_CASE("control flow: fori_loop with static and traced bounds") {
  auto client = make_client();
  // x * 2^n.
  auto pow2 = jit(client, [](Tensor x) {
    return fori_loop(0, 10, [](const Tensor&, const Tensor& c) { return c * 2.0; }, x);
  });
  CHECK(pow2(vec({1.5, -3})).value() == vec({1.5 * 1024, -3.0 * 1024}));
  // A recurrence that uses the counter, over a pair carry, against a C++ loop:
  // (a, b) <- (b, a + i * b * w) for i in [2, 7), w closed over.
  auto rec = jit(client, [](Tensor a, Tensor b, Tensor w) {
    using C = std::pair<Tensor, Tensor>;
    return fori_loop(
        2, 7,
        [&](const Tensor& i, const C& c) {
          return C{c.second, c.first + i.astype(DType::kF64) * c.second * w};
        },
        C{a, b});
  });
  double a = 0.5, b = -1.25;
  const double w = 0.3;
  for (int i = 2; i < 7; ++i) {
    const double na = b, nb = a + i * b * w;
    a = na;
    b = nb;
  }
  auto [ra, rb] = rec(0.5, -1.25, w).value();
  CHECK(scalar(ra) == doctest::Approx(a).epsilon(1e-15));
  CHECK(scalar(rb) == doctest::Approx(b).epsilon(1e-15));
  // Empty range: the carry unchanged. Traced bounds: the same loop as a while_loop.
  auto none = jit(client, [](Tensor x) {
    return fori_loop(5, 5, [](const Tensor&, const Tensor& c) { return c * 2.0; }, x);
  });
  CHECK(scalar(none(3.0).value()) == 3.0);
  auto traced = jit(client, [](Tensor lo, Tensor hi, Tensor x) {
    return fori_loop(lo, hi, [](const Tensor&, const Tensor& c) { return c * 2.0; }, x);
  });
  CHECK(scalar(traced(std::int32_t{3}, std::int32_t{8}, 1.0).value()) == 32.0);
  CHECK(scalar(traced(std::int32_t{8}, std::int32_t{3}, 1.0).value()) == 1.0);
}

TEST_CASE("control flow: scan gives the final carry and the stacked outputs") {
  auto client = make_client();
  // Cumulative sums of the rows of a [5, 2] matrix.
  auto cumsum_rows = jit(client, [](Tensor xs) {
    return scan([](const Tensor& c, const Tensor& x) { return std::pair{c + x, c + x}; },
                zeros_like(xs[0]), xs);
  });
  const std::vector<double> m{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto [last, ys] = cumsum_rows(Literal::from_span<double>(m, {5, 2}).value()).value();
  CHECK(last == vec({25, 30}));
  CHECK(ys == Literal::from_span<double>(std::vector<double>{1, 2, 4, 6, 9, 12, 16, 20, 25, 30},
                                         {5, 2})
                  .value());
  // A recurrence with two xs and a closure: c <- c * k + x1 * x2, y = (c^2, c > 1), against a C++
  // loop.
  auto rec = jit(client, [](Tensor c0, Tensor x1, Tensor x2, Tensor k) {
    using Y = std::tuple<Tensor, Tensor>;
    return scan(
        [&](const Tensor& c, const std::pair<Tensor, Tensor>& x) {
          Tensor n = c * k + x.first * x.second;
          return std::pair{n, Y{n * n, n > 1.0}};
        },
        c0, std::pair{x1, x2});
  });
  const std::vector<double> x1{0.5, -1, 2, 0.25}, x2{1, 3, -0.5, 8};
  auto [c, y] = rec(0.1, vec(x1), vec(x2), 0.9).value();
  double cv = 0.1;
  for (std::size_t i = 0; i < x1.size(); ++i) {
    cv = cv * 0.9 + x1[i] * x2[i];
    CHECK(std::get<0>(y).data<double>()[i] == doctest::Approx(cv * cv).epsilon(1e-15));
    CHECK(std::get<1>(y).data<bool>()[i] == (cv > 1.0));
  }
  CHECK(scalar(c) == doctest::Approx(cv).epsilon(1e-15));
}

TEST_CASE("control flow: jvp and grad through cond and switch_ equal central differences") {
  auto through_cond = [](Tensor x) {
    Tensor y = cond(
        x[0] > 0.0, [](Tensor v) { return sin(v) * v; }, [](Tensor v) { return exp(v * 0.5); },
        x);
    return sum(y * y);
  };
  check_function(through_cond, vec({0.7, -0.2, 1.3}), 1);
  check_function(through_cond, vec({-0.7, -0.2, 1.3}), 2);
  // A tuple operand, a closure and an integer operand that only one branch uses.
  auto with_closure = [](Tensor x) {
    Tensor w = x * 3.0;
    using Ops = std::tuple<Tensor, Tensor>;
    Tensor y = cond(
        sum(x) < 1.0, [&](const Ops& o) { return std::get<0>(o) * w + std::get<1>(o).astype(DType::kF64); },
        [&](const Ops& o) { return tanh(std::get<0>(o)) * w; }, Ops{x, full_like(x, 2).astype(DType::kS32)});
    return sum(y);
  };
  check_function(with_closure, vec({0.1, 0.2}), 3);
  check_function(with_closure, vec({1.1, 0.2}), 4);
  auto through_switch = [](Tensor x) {
    std::vector<std::function<Tensor(const Tensor&)>> branches{
        [](const Tensor& v) { return v * v; }, [](const Tensor& v) { return cos(v) * v; },
        [](const Tensor& v) { return log(v * v + 1.0); }};
    Tensor i = floor(x[0]).astype(DType::kS32);
    return sum(switch_(i, branches, x));
  };
  for (double first : {-2.5, 0.5, 1.5, 2.5, 7.5}) check_function(through_switch, vec({first, 0.4}), 5);
  check_second_order([](Tensor x) {
    return cond(
        x > 0.0, [](Tensor v) { return sin(v) * v * v; }, [](Tensor v) { return exp(v); }, x);
  }, 0.8);
}

TEST_CASE("control flow: jvp and grad through fori_loop and scan equal central differences") {
  // x * 2^n, then a nonlinear loop using the counter.
  check_function([](Tensor x) {
    return sum(fori_loop(0, 4, [](const Tensor& i, const Tensor& c) {
      return sin(c) * (i.astype(DType::kF64) + 1.0) + c * 0.5;
    }, x));
  }, vec({0.3, -0.8}), 6);
  // A pair carry with a closure that is differentiated too.
  check_function([](Tensor x) {
    Tensor w = x[1];
    using C = std::pair<Tensor, Tensor>;
    C r = fori_loop(1, 6, [&](const Tensor&, const C& c) {
      return C{c.first * w + c.second, tanh(c.first)};
    }, C{x[0], x[2]});
    return r.first * r.second;
  }, vec({0.4, 0.9, -0.3}), 7);
  // scan: a recurrence with xs, a closed-over weight and stacked outputs in the loss.
  check_function([](Tensor x) {
    Tensor xs = reshape(x, {3, 2});
    auto [c, ys] = scan([&](const Tensor& c, const Tensor& row) {
      Tensor n = tanh(c * x[0] + row);
      return std::pair{n, n * row};
    }, x[1] * ones_like(xs[0]), xs);
    return sum(ys) + sum(c * c);
  }, vec({0.3, -0.5, 1.2, 0.1, -0.7, 0.45}), 8);
  check_second_order([](Tensor x) {
    return fori_loop(0, 3, [](const Tensor&, const Tensor& c) { return sin(c) * 1.5 + c * c * 0.1; }, x);
  }, 0.6);
  check_second_order([](Tensor x) {
    Tensor xs = x * np::array(Literal::vector<double>({1.0, 2.0, 3.0}));
    return sum(scan([](const Tensor& c, const Tensor& r) {
      return std::pair{c * r + sin(c), c};
    }, x, xs).second);
  }, 0.35);
}

TEST_CASE("control flow: reverse mode through while_loop is refused with JAX's message") {
  auto client = make_client();
  const std::string jax =
      "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
      "dynamic start/stop values.";
  auto through_while = jit(client, grad([](Tensor x) {
    return while_loop([](const Tensor& v) { return v < 10.0; },
                      [](const Tensor& v) { return v * 2.0; }, x);
  }));
  StatusOr<Literal> r = through_while(1.5);
  CHECK(r.status().code() == StatusCode::kUnimplemented);
  CHECK_MESSAGE(has(r.status(), jax), r.status().message());
  auto traced_bounds = jit(client, [](Tensor n, Tensor x) {
    return grad([&](Tensor y) {
      return fori_loop(zeros_like(n), n, [](const Tensor&, const Tensor& c) { return c * 2.0; }, y);
    })(x);
  });
  r = traced_bounds(std::int32_t{3}, 1.5);
  CHECK(r.status().code() == StatusCode::kUnimplemented);
  CHECK_MESSAGE(has(r.status(), jax), r.status().message());
  // Forward mode through the same loop works: d/dx (x * 2^k) = 2^k, here k = 3 for x = 1.5.
  auto fwd = jit(client, [](Tensor x) {
    return jvp([](Tensor y) {
      return while_loop([](const Tensor& v) { return v < 10.0; },
                        [](const Tensor& v) { return v * 2.0; }, y);
    }, x, ones_like(x)).second;
  });
  CHECK(scalar(fwd(1.5).value()) == 8.0);
  // jvp through a while_loop with a traced-bound fori_loop inside checked against central
  // differences.
  auto f = [](Tensor x) {
    return sum(fori_loop(full_like(x[0], 0).astype(DType::kS32), full_like(x[0], 3).astype(DType::kS32),
                         [](const Tensor&, const Tensor& c) { return sin(c) + c; }, x));
  };
  auto jf = jit(client, f);
  auto tf = jit(client, [f](Tensor x, Tensor v) { return jvp(f, x, v).second; });
  const Literal x = vec({0.3, 1.1});
  const Literal v = vec({0.6, -0.4});
  const Literal up = vec({0.3 + kStep * 0.6, 1.1 - kStep * 0.4});
  const Literal down = vec({0.3 - kStep * 0.6, 1.1 + kStep * 0.4});
  const double fd = (scalar(jf(up).value()) - scalar(jf(down).value())) / (2 * kStep);
  CHECK(close(scalar(tf(x, v).value()), fd));
}

TEST_CASE("control flow: bad inputs are clear statuses") {
  auto client = make_client();
  SUBCASE("branches returning different shapes") {
    auto f = jit(client, [](Tensor x) {
      return cond(
          x[0] > 0.0, [](Tensor v) { return v; }, [](Tensor v) { return v[0]; }, x);
    });
    StatusOr<Literal> r = f(vec({1, 2}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "true_fun and false_fun output must have identical types, got "
                                  "(f64[2]) and (f64[])"),
                  r.status().message());
    std::vector<std::function<Tensor(const Tensor&)>> branches{
        [](const Tensor& v) { return v; }, [](const Tensor& v) { return v; },
        [](const Tensor& v) { return v.astype(DType::kF32); }};
    auto g = jit(client, [&](Tensor i, Tensor x) { return switch_(i, branches, x); });
    r = g(std::int32_t{0}, vec({1, 2}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "branch 0 and 2 outputs must have identical types, got (f64[2]) "
                                  "and (f32[2])"),
                  r.status().message());
  }
  SUBCASE("a predicate or index that is not a scalar") {
    auto f = jit(client, [](Tensor x) {
      return cond(
          x > 0.0, [](Tensor v) { return v; }, [](Tensor v) { return -v; }, x);
    });
    StatusOr<Literal> r = f(vec({1, 2}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "cond: the predicate must be a scalar, got an array of shape pred[2]"),
                  r.status().message());
    std::vector<std::function<Tensor(const Tensor&)>> one{[](const Tensor& v) { return v; }};
    auto g = jit(client, [&](Tensor x) { return switch_(x, one, x); });
    r = g(1.0);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "switch: the index must be an integer scalar, got f64"),
                  r.status().message());
  }
  SUBCASE("a loop body that changes the carry") {
    auto f = jit(client, [](Tensor x) {
      return while_loop([](const Tensor& v) { return sum(v) < 10.0; },
                        [](const Tensor& v) { return concatenate({v, v}); }, x);
    });
    StatusOr<Literal> r = f(vec({1, 2}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "while_loop: body_fun output and input must have identical types, "
                                  "got input (f64[2]) and output (f64[4])"),
                  r.status().message());
    auto g = jit(client, [](Tensor x) {
      return fori_loop(0, 3, [](const Tensor&, const Tensor& c) { return c.astype(DType::kF32); }, x);
    });
    r = g(1.0);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "fori_loop: body_fun output and input must have identical types, "
                                  "got input (f64[]) and output (f32[])"),
                  r.status().message());
    auto h = jit(client, [](Tensor xs) {
      return scan([](const Tensor& c, const Tensor& x) { return std::pair{c + x, c}; },
                  xs[0][0], xs);
    });
    auto hr = h(Literal::from_span<double>(std::vector<double>{1, 2, 3, 4}, {2, 2}).value());
    r = hr.status();
    CHECK_MESSAGE(has(r.status(), "scan: the input carry and the carry output of f must have "
                                  "identical types, got input (f64[]) and output (f64[2])"),
                  r.status().message());
  }
  SUBCASE("a while cond that is not a boolean scalar, and xs of different lengths") {
    auto f = jit(client, [](Tensor x) {
      return while_loop([](const Tensor& v) { return v; }, [](const Tensor& v) { return v; }, x);
    });
    StatusOr<Literal> r = f(1.0);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "cond_fun must return a boolean scalar, but got output type(s) (f64[])"),
                  r.status().message());
    auto g = jit(client, [](Tensor a, Tensor b) {
      return scan([](const Tensor& c, const std::pair<Tensor, Tensor>& x) {
        return std::pair{c + x.first + x.second, c};
      }, zeros_like(a[0]), std::pair{a, b}).first;
    });
    r = g(vec({1, 2}), vec({1, 2, 3}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(has(r.status(), "scan got values with different leading axis sizes: 2 and 3"),
                  r.status().message());
  }
}

TEST_CASE("control flow: vmap of cond, switch_, loops and scan equals per-element runs") {
  auto client = make_client();
  // A batched predicate: each element takes its own branch.
  auto f = [](Tensor x) {
    return cond(
        x > 0.0, [](Tensor v) { return v * 10.0; }, [](Tensor v) { return v - 1.0; }, x);
  };
  auto g = [](Tensor x) {
    return fori_loop(0, 3, [](const Tensor& i, const Tensor& c) { return c * c + i.astype(DType::kF64); }, x);
  };
  // A batched while predicate: elements stop after different numbers of turns.
  auto h = [](Tensor x) {
    return while_loop([](const Tensor& v) { return abs(v) < 50.0; }, [](const Tensor& v) { return v * 3.0; }, x);
  };
  auto s = [](Tensor x) {
    return scan([](const Tensor& c, const Tensor& r) { return std::pair{c * r, c + r}; }, x,
                np::array(Literal::vector<double>({1.5, -2.0, 0.5}))).second;
  };
  const Literal xs = vec({-2.0, 0.5, 3.0, 49.0});
  auto check_batched = [&](auto fn) {
    auto batched = jit(client, vmap(fn));
    auto single = jit(client, fn);
    StatusOr<Literal> b = batched(xs);
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    const std::int64_t per = b->shape().element_count() / 4;
    for (std::size_t e = 0; e < 4; ++e) {
      Literal one = single(xs.data<double>()[e]).value();
      for (std::int64_t j = 0; j < per; ++j)
        CHECK(b->data<double>()[e * static_cast<std::size_t>(per) + static_cast<std::size_t>(j)] ==
              one.data<double>()[static_cast<std::size_t>(j)]);
    }
  };
  check_batched(f);
  check_batched(g);
  check_batched(h);
  check_batched(s);
  // grad of a vmapped loop.
  auto dg = jit(client, grad([&](Tensor x) { return sum(vmap(g)(x)); }));
  auto d1 = jit(client, grad(g));
  Literal all = dg(xs).value();
  for (std::size_t e = 0; e < 4; ++e)
    CHECK(all.data<double>()[e] == doctest::Approx(scalar(d1(xs.data<double>()[e]).value())).epsilon(1e-14));
}

}  // namespace control_flow_frontend_test
