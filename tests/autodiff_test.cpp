// Tests of the graph transformations jvp_graph, vjp_graph and batch_graph, evaluated with the
// reference interpreter. Oracles: central finite differences for every differentiable op
// (f64, random inputs), the adjoint identity <vjp(u), v> == <u, jvp(v)>, and for batching
// the unbatched graph run once per batch element.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/transforms/autodiff.hpp"
#include "pjrt_lite/transforms/batching.hpp"
#include "control_flow.hpp"
#include "test_util.hpp"

namespace autodiff_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

double dot(const Literal& a, const Literal& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.data<double>().size(); ++i)
    s += a.data<double>()[i] * b.data<double>()[i];
  return s;
}

/// A test case: a graph of f64 parameters with one f64 output, and the range its inputs are
/// drawn from (kept away from singularities and kinks).
struct Case {
  std::string name;
  std::function<Value(GraphBuilder&, std::vector<Value>&)> build;
  std::vector<Shape> inputs;
  double lo = -2, hi = 2;
};

Graph make(const Case& c) {
  GraphBuilder b(c.name);
  std::vector<Value> params;
  for (const Shape& s : c.inputs) params.push_back(b.parameter(s));
  Value out = c.build(b, params);
  StatusOr<Graph> g = b.build({out});
  REQUIRE_MESSAGE(g.ok(), c.name, ": ", g.status().to_string());
  return *g;
}

// Checks vjp against central differences of <w, f(x)> and the adjoint identity with jvp.
void check_case(const Case& c, std::mt19937_64& rng) {
  CAPTURE(c.name);
  const Graph g = make(c);
  const Shape out_shape = g.output_shapes()[0];
  std::vector<Literal> x;
  for (const Shape& s : c.inputs) x.push_back(random_literal<double>(rng, s, c.lo, c.hi));
  const Literal w = random_literal<double>(rng, out_shape, -1, 1);
  const std::vector<bool> all(c.inputs.size(), true);

  StatusOr<Graph> vjp = vjp_graph(g, all);
  REQUIRE_MESSAGE(vjp.ok(), vjp.status().to_string());
  std::vector<Literal> vjp_args = x;
  vjp_args.push_back(w);
  const std::vector<Literal> vjp_out = evaluate_ok(*vjp, vjp_args);
  REQUIRE(vjp_out.size() == 1 + c.inputs.size());
  CHECK(vjp_out[0] == evaluate_ok(g, x)[0]);  // the primal output is the function's

  // Finite differences of <w, f(x)> per input element.
  const double h = 1e-6;
  for (std::size_t k = 0; k < x.size(); ++k) {
    for (std::size_t i = 0; i < x[k].data<double>().size(); ++i) {
      std::vector<Literal> xp = x, xm = x;
      xp[k].data<double>()[i] += h;
      xm[k].data<double>()[i] -= h;
      const double fd = (dot(w, evaluate_ok(g, xp)[0]) - dot(w, evaluate_ok(g, xm)[0])) / (2 * h);
      const double ad = vjp_out[1 + k].data<double>()[i];
      CAPTURE(k);
      CAPTURE(i);
      CHECK(ad == doctest::Approx(fd).epsilon(1e-5).scale(1.0));
    }
  }

  // <vjp(w), v> == <w, jvp(v)> for random tangents v.
  StatusOr<Graph> jvp = jvp_graph(g, all);
  REQUIRE_MESSAGE(jvp.ok(), jvp.status().to_string());
  std::vector<Literal> jvp_args = x;
  std::vector<Literal> v;
  for (const Shape& s : c.inputs) v.push_back(random_literal<double>(rng, s, -1, 1));
  jvp_args.insert(jvp_args.end(), v.begin(), v.end());
  const std::vector<Literal> jvp_out = evaluate_ok(*jvp, jvp_args);
  REQUIRE(jvp_out.size() == 2);
  CHECK(jvp_out[0] == evaluate_ok(g, x)[0]);
  double lhs = 0;
  for (std::size_t k = 0; k < x.size(); ++k) lhs += dot(vjp_out[1 + k], v[k]);
  const double rhs = dot(w, jvp_out[1]);
  CHECK(lhs == doctest::Approx(rhs).epsilon(1e-12).scale(1.0));
}

Shape f64(std::vector<std::int64_t> dims) { return Shape(kF64, std::move(dims)); }

Value full(GraphBuilder& b, double v, std::vector<std::int64_t> dims) {
  return b.broadcast_in_dim(b.scalar(kF64, v), std::move(dims), {});
}

std::vector<Case> unary_cases() {
  std::vector<Case> cases;
  struct U {
    OpCode op;
    double lo, hi;
  };
  for (U u : {U{OpCode::kAbs, 0.2, 2},        U{OpCode::kNegate, -2, 2},
              U{OpCode::kExponential, -2, 2}, U{OpCode::kExponentialMinusOne, -2, 2},
              U{OpCode::kLog, 0.3, 3},        U{OpCode::kLogPlusOne, -0.5, 2},
              U{OpCode::kSqrt, 0.3, 3},       U{OpCode::kRsqrt, 0.3, 3},
              U{OpCode::kCbrt, 0.3, 3},       U{OpCode::kTanh, -2, 2},
              U{OpCode::kLogistic, -3, 3},    U{OpCode::kSine, -3, 3},
              U{OpCode::kCosine, -3, 3},      U{OpCode::kTan, -1.2, 1.2},
              U{OpCode::kAcosh, 1.2, 4},      U{OpCode::kAsin, -0.8, 0.8},    U{OpCode::kAsinh, -3, 3},
              U{OpCode::kAtan, -3, 3},        U{OpCode::kAtanh, -0.8, 0.8},
              U{OpCode::kCosh, -2, 2},        U{OpCode::kSinh, -2, 2},
              U{OpCode::kErf, -2, 2},         U{OpCode::kErfc, -2, 2},
              U{OpCode::kErfInv, -0.9, 0.9},  U{OpCode::kLgamma, 0.3, 4}}) {
    cases.push_back(
        Case{std::string(op_name(u.op)),
             [op = u.op](GraphBuilder& b, std::vector<Value>& p) { return b.unary(op, p[0]); },
             {f64({2, 3})},
             u.lo,
             u.hi});
  }
  cases.push_back(Case{"abs_negative",
                       [](GraphBuilder& b, std::vector<Value>& p) { return b.abs(p[0]); },
                       {f64({4})},
                       -2,
                       -0.2});
  return cases;
}

std::vector<Case> binary_cases() {
  std::vector<Case> cases;
  struct B {
    OpCode op;
    double lo, hi;
  };
  for (B o :
       {B{OpCode::kAdd, -2, 2}, B{OpCode::kSubtract, -2, 2}, B{OpCode::kMultiply, -2, 2},
        B{OpCode::kDivide, 0.5, 2}, B{OpCode::kPower, 0.5, 2}, B{OpCode::kMaximum, -2, 2},
        B{OpCode::kMinimum, -2, 2}, B{OpCode::kAtan2, -2, 2}, B{OpCode::kRemainder, 0.3, 3}}) {
    cases.push_back(Case{
        std::string(op_name(o.op)),
        [op = o.op](GraphBuilder& b, std::vector<Value>& p) { return b.binary(op, p[0], p[1]); },
        {f64({3, 2}), f64({3, 2})},
        o.lo,
        o.hi});
  }
  return cases;
}

std::vector<Case> other_cases() {
  std::vector<Case> c;
  auto add = [&](std::string name, std::vector<Shape> in,
                 std::function<Value(GraphBuilder&, std::vector<Value>&)> f, double lo = -2,
                 double hi = 2) {
    c.push_back(Case{std::move(name), std::move(f), std::move(in), lo, hi});
  };
  add("select", {f64({5}), f64({5}), f64({5})}, [](GraphBuilder& b, auto& p) {
    return b.select(b.compare(p[0], full(b, 0, {5}), ComparisonDirection::kGt), p[1], p[2]);
  });
  add("clamp", {f64({6}), f64({6}), f64({6})}, [](GraphBuilder& b, auto& p) {
    // lo = p0 - 1 and hi = p0 + 1 around p1 in [-2, 2]: every branch is taken somewhere.
    return b.clamp(b.subtract(p[0], full(b, 1, {6})), p[1], b.add(p[0], full(b, 1, {6})));
  });
  add("clamp_scalar_bounds", {f64({}), f64({6}), f64({})}, [](GraphBuilder& b, auto& p) {
    return b.clamp(b.subtract(p[0], b.scalar(kF64, 0.5)), p[1], b.add(p[2], b.scalar(kF64, 0.5)));
  });
  add("convert_roundtrip", {f64({4})},
      [](GraphBuilder& b, auto& p) { return b.convert(b.convert(p[0], DType::kC128), kF64); });
  add("broadcast_in_dim", {f64({3, 1})}, [](GraphBuilder& b, auto& p) {
    return b.broadcast_in_dim(p[0], {2, 3, 4}, {1, 2});
  });
  add("reshape", {f64({2, 6})}, [](GraphBuilder& b, auto& p) { return b.reshape(p[0], {3, 4}); });
  add("transpose", {f64({2, 3, 4})}, [](GraphBuilder& b, auto& p) {
    return b.transpose(p[0], {2, 0, 1});
  });
  add("slice_strided", {f64({7, 5})}, [](GraphBuilder& b, auto& p) {
    return b.slice(p[0], {1, 0}, {7, 5}, {2, 3});
  });
  add("concatenate", {f64({2, 3}), f64({4, 3})}, [](GraphBuilder& b, auto& p) {
    return b.concatenate({p[0], p[1], p[0]}, 0);
  });
  add("pad", {f64({3, 4}), f64({})}, [](GraphBuilder& b, auto& p) {
    return b.pad(p[0], p[1], {1, -1}, {2, 0}, {1, 2});
  });
  add("reverse", {f64({3, 4})}, [](GraphBuilder& b, auto& p) { return b.reverse(p[0], {1}); });
  add("dynamic_slice", {f64({5, 4})}, [](GraphBuilder& b, auto& p) {
    return b.dynamic_slice(p[0], {b.constant(std::int32_t{1}), b.constant(std::int32_t{3})},
                           {3, 2});
  });
  add("dynamic_update_slice", {f64({5, 4}), f64({2, 2})}, [](GraphBuilder& b, auto& p) {
    return b.dynamic_update_slice(p[0], p[1],
                                  {b.constant(std::int32_t{2}), b.constant(std::int32_t{1})});
  });
  add("reduce_sum", {f64({3, 4}), f64({})},
      [](GraphBuilder& b, auto& p) { return b.reduce(p[0], p[1], OpCode::kAdd, {1}); });
  add("reduce_product", {f64({3, 4})}, [](GraphBuilder& b, auto& p) {
    return b.reduce(p[0], b.scalar(kF64, 1), OpCode::kMultiply, {0});
  });
  add("reduce_product_with_zero", {f64({3, 4})}, [](GraphBuilder& b, auto& p) {
    // Row 0 gets one exact zero: the derivative there is the product of the others.
    Value mask = b.compare(b.iota(Shape(DType::kS32, {3, 4}), 1),
                           b.broadcast_in_dim(b.constant(std::int32_t{0}), {3, 4}, {}),
                           ComparisonDirection::kEq);
    Value rows = b.compare(b.iota(Shape(DType::kS32, {3, 4}), 0),
                           b.broadcast_in_dim(b.constant(std::int32_t{0}), {3, 4}, {}),
                           ComparisonDirection::kEq);
    Value x = b.select(b.and_(mask, rows), full(b, 0, {3, 4}), p[0]);
    return b.reduce(x, b.scalar(kF64, 1), OpCode::kMultiply, {1});
  });
  add("reduce_max", {f64({3, 5})}, [](GraphBuilder& b, auto& p) {
    return b.reduce(p[0], b.scalar(kF64, -INFINITY), OpCode::kMaximum, {1});
  });
  add("reduce_min", {f64({3, 5})}, [](GraphBuilder& b, auto& p) {
    return b.reduce(p[0], b.scalar(kF64, INFINITY), OpCode::kMinimum, {0});
  });
  add("argmax_value", {f64({4, 3})}, [](GraphBuilder& b, auto& p) { return b.argmax(p[0], 0)[0]; });
  add("dot_general", {f64({2, 3, 4}), f64({2, 4, 5})}, [](GraphBuilder& b, auto& p) {
    return b.dot_general(p[0], p[1], DotDimensionNumbers{{0}, {0}, {2}, {1}});
  });
  add("dot_general_transposed_contraction", {f64({4, 3}), f64({5, 4})},
      [](GraphBuilder& b, auto& p) {
        return b.dot_general(p[0], p[1], DotDimensionNumbers{{}, {}, {0}, {1}});
      });
  add("dot_general_batch_last", {f64({3, 2, 4}), f64({4, 2})}, [](GraphBuilder& b, auto& p) {
    return b.dot_general(p[0], p[1], DotDimensionNumbers{{1}, {1}, {2}, {0}});
  });
  add("complex_parts", {f64({3}), f64({3})}, [](GraphBuilder& b, auto& p) {
    Value z = b.complex(p[0], p[1]);
    Value zz = b.multiply(z, z);
    return b.add(b.real(zz), b.imag(b.exponential(z)));
  });
  add(
      "complex_abs", {f64({3}), f64({3})},
      [](GraphBuilder& b, auto& p) { return b.abs(b.complex(p[0], p[1])); }, 0.3, 2);
  // f64's own format: the identity, through reduce_precision's rule.
  add("reduce_precision_e11m52", {f64({2, 3})},
      [](GraphBuilder& b, auto& p) { return b.multiply(b.reduce_precision(p[0], 11, 52), p[0]); });
  add("sort_rows", {f64({3, 4})}, [](GraphBuilder& b, auto& p) { return b.sort(p[0], 1); });
  add("sort_columns_descending", {f64({3, 4})},
      [](GraphBuilder& b, auto& p) { return b.sort(p[0], -2, ComparisonDirection::kGt); });
  add("sort_payload_by_key", {f64({5}), f64({5})}, [](GraphBuilder& b, auto& p) {
    Graph by_key = make_sort_comparator(ComparisonDirection::kLt, kF64, {kF64}).value();
    std::vector<Value> s = b.sort({p[0], p[1]}, std::move(by_key), 0, true);
    return b.add(b.multiply(s[0], s[1]), s[1]);
  });
  add("top_k", {f64({2, 5})}, [](GraphBuilder& b, auto& p) { return b.top_k(p[0], 3)[0]; });
  add("composite", {f64({4, 3}), f64({3})}, [](GraphBuilder& b, auto& p) {
    Value h = b.tanh(b.add(b.dot(p[0], p[1]), full(b, 0.5, {4})));
    return b.multiply(h, b.log_plus_one(b.multiply(h, h)));
  });
  return c;
}

}  // namespace

TEST_CASE(
    "autodiff: vjp of every differentiable op matches central differences, and jvp is its "
    "adjoint") {
  std::mt19937_64 rng(7);
  for (const auto& list : {unary_cases(), binary_cases(), other_cases()})
    for (const Case& c : list) check_case(c, rng);
}

TEST_CASE("autodiff: second derivatives match closed forms") {
  struct Fn {
    OpCode op;
    std::function<double(double)> second;
  };
  for (const Fn& f : {Fn{OpCode::kSine, [](double x) { return -std::sin(x); }},
                      Fn{OpCode::kExponential, [](double x) { return std::exp(x); }},
                      Fn{OpCode::kTanh, [](double x) {
                           const double t = std::tanh(x);
                           return -2 * t * (1 - t * t);
                         }}}) {
    CAPTURE(op_name(f.op));
    GraphBuilder b("f");
    Value x = b.parameter(Shape(kF64, {}));
    Graph g = b.build({b.unary(f.op, x)}).value();
    // d/dx of the vjp graph (with cotangent 1 bound) is the second derivative.
    Graph d1 = vjp_graph(g, {true}).value();
    GraphBuilder b2("df");
    Value x2 = b2.parameter(Shape(kF64, {}));
    Graph df = b2.build({b2.inline_graph(d1, {x2, b2.scalar(kF64, 1)})[1]}).value();
    Graph d2 = vjp_graph(df, {true}).value();
    for (double v : {-1.3, 0.2, 0.9}) {
      auto r = evaluate_ok(d2, {Literal::scalar(v), Literal::scalar(1.0)});
      CHECK(r[1].data<double>()[0] == doctest::Approx(f.second(v)).epsilon(1e-13));
    }
  }
  // A polynomial: p(x) = 3x^4 - 2x^3 + x - 5, p'' = 36x^2 - 12x.
  GraphBuilder b("poly");
  Value x = b.parameter(Shape(kF64, {}));
  auto c = [&](double v) { return b.scalar(kF64, v); };
  Value x2 = b.multiply(x, x), x3 = b.multiply(x2, x), x4 = b.multiply(x3, x);
  Value p = b.add(b.subtract(b.multiply(c(3), x4), b.multiply(c(2), x3)), b.subtract(x, c(5)));
  Graph g = b.build({p}).value();
  Graph d1 = jvp_graph(g, {true}).value();  // forward over reverse would do as well
  GraphBuilder b2("dpoly");
  Value y = b2.parameter(Shape(kF64, {}));
  Graph dp = b2.build({b2.inline_graph(d1, {y, b2.scalar(kF64, 1)})[1]}).value();
  Graph d2 = vjp_graph(dp, {true}).value();
  for (double v : {-2.0, 0.5, 3.0})
    CHECK(evaluate_ok(d2, {Literal::scalar(v), Literal::scalar(1.0)})[1].data<double>()[0] ==
          doctest::Approx(36 * v * v - 12 * v).epsilon(1e-13));
}

TEST_CASE("autodiff: bad inputs are statuses") {
  GraphBuilder b("ints");
  Value i = b.parameter(Shape(DType::kS32, {3}));
  Value f = b.parameter(Shape(kF64, {3}));
  Graph g = b.build({b.add(b.convert(i, kF64), f)}).value();
  StatusOr<Graph> r = vjp_graph(g, {true, true});
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("parameter 0") != std::string::npos);
  CHECK(r.status().message().find("s32[3]") != std::string::npos);
  StatusOr<Graph> wrong = jvp_graph(g, {true});
  CHECK(wrong.status().code() == StatusCode::kInvalidArgument);
  CHECK(wrong.status().message().find("wrt has 1 entries for 2 parameters") != std::string::npos);
  // Integer inputs that are not differentiated are fine; their path has zero tangent.
  StatusOr<Graph> ok = jvp_graph(g, {false, true});
  REQUIRE(ok.ok());
  // A reduce whose body is not element-wise (a reshape in it): JAX's tree of pairwise
  // applications cannot apply it to halves.
  GraphBuilder body_b("weird");
  Value a = body_b.parameter(Shape(kF64, {}));
  Value c = body_b.parameter(Shape(kF64, {}));
  Graph body = body_b.build({body_b.add(body_b.reshape(a, {}), c)}).value();
  GraphBuilder rb("r");
  Value x = rb.parameter(Shape(kF64, {4}));
  Graph rg = rb.build({rb.reduce(x, rb.scalar(kF64, 0), body, {0})}).value();
  StatusOr<Graph> rr = vjp_graph(rg, {true});
  CHECK(rr.status().code() == StatusCode::kUnimplemented);
  CHECK(rr.status().message().find("weird") != std::string::npos);
  CHECK(rr.status().message().find("reshape is not element-wise") != std::string::npos);
}

TEST_CASE("autodiff: a CHLO op without a derivative rule (next_after, as in JAX) is UNIMPLEMENTED, not zero") {
  for (OpCode op : {OpCode::kNextAfter}) {
    CAPTURE(op_name(op));
    GraphBuilder b("g");
    Value x = b.parameter(Shape(kF64, {3}));
    Graph g = b.build({is_binary(op) ? b.binary(op, x, x) : b.unary(op, x)}).value();
    StatusOr<Graph> r = vjp_graph(g, {true});
    CHECK(r.status().code() == StatusCode::kUnimplemented);
    CHECK(r.status().message().find(op_name(op)) != std::string::npos);
    CHECK(jvp_graph(g, {true}).status().code() == StatusCode::kUnimplemented);
  }
}

TEST_CASE("autodiff: reduce_precision rounds tangents and cotangents to its format") {
  // The rule treats reduce_precision as linear (as JAX does): jvp's tangent is the tangent
  // rounded to e5m10, and so is vjp's cotangent. The oracle rounds through f16.
  GraphBuilder b("rp");
  Value x = b.parameter(f64({5}));
  const Graph g = b.build({b.reduce_precision(x, 5, 10)}).value();
  const std::vector<double> v = {0.1, -0.3333, 1.0 / 3, 0.7071067811865476, -2.5e-3};
  auto rounded = [&] {
    std::vector<double> out;
    for (double e : v) out.push_back(static_cast<double>(static_cast<float>(f16(e))));
    return Literal::from_span<double>(out, {5}).value();
  };
  const Literal lv = Literal::from_span<double>(v, {5}).value();
  const std::vector<Literal> jvp = evaluate_ok(jvp_graph(g, {true}).value(), {lv, lv});
  CHECK(jvp[1] == rounded());
  const std::vector<Literal> vjp = evaluate_ok(vjp_graph(g, {true}).value(), {lv, lv});
  CHECK(vjp[1] == rounded());
}

TEST_CASE("batching: batch_graph equals the graph run per batch element") {
  std::mt19937_64 rng(11);
  for (const auto& list : {unary_cases(), binary_cases(), other_cases()}) {
    for (const Case& c : list) {
      CAPTURE(c.name);
      const Graph g = make(c);
      const std::int64_t batch = 3;
      // Batch every other input; the rest are shared.
      std::vector<bool> batched;
      std::vector<Literal> args;
      for (std::size_t k = 0; k < c.inputs.size(); ++k) {
        batched.push_back(k % 2 == 0);
        std::vector<std::int64_t> dims(c.inputs[k].dims().begin(), c.inputs[k].dims().end());
        if (batched.back()) dims.insert(dims.begin(), batch);
        args.push_back(random_literal<double>(rng, f64(dims), c.lo, c.hi));
      }
      StatusOr<Graph> bg = batch_graph(g, batched, batch);
      REQUIRE_MESSAGE(bg.ok(), bg.status().to_string());
      const Literal out = evaluate_ok(*bg, args)[0];
      const std::int64_t per = out.element_count() / batch;
      for (std::int64_t i = 0; i < batch; ++i) {
        std::vector<Literal> one;
        for (std::size_t k = 0; k < args.size(); ++k) {
          if (!batched[k]) {
            one.push_back(args[k]);
            continue;
          }
          Literal e(c.inputs[k]);
          const std::int64_t n = e.element_count();
          for (std::int64_t j = 0; j < n; ++j)
            e.data<double>()[static_cast<std::size_t>(j)] =
                args[k].data<double>()[static_cast<std::size_t>(i * n + j)];
          one.push_back(std::move(e));
        }
        const Literal expected = evaluate_ok(g, one)[0];
        for (std::int64_t j = 0; j < per; ++j)
          CHECK(out.data<double>()[static_cast<std::size_t>(i * per + j)] ==
                expected.data<double>()[static_cast<std::size_t>(j)]);
      }
    }
  }
}

TEST_CASE("batching: ops without a rule unroll, and bad inputs are statuses") {
  // A dynamic_slice whose start index is batched has no rule: it unrolls.
  GraphBuilder b("ds");
  Value x = b.parameter(Shape(kF64, {6}));
  Value i = b.parameter(Shape(DType::kS32, {}));
  Graph g = b.build({b.dynamic_slice(x, {i}, {2})}).value();
  Graph bg = batch_graph(g, {false, true}, 3).value();
  Literal xs = Literal::vector<double>({0, 1, 2, 3, 4, 5});
  Literal is = Literal::vector<std::int32_t>({4, 0, 9});  // 9 clamps to 4
  CHECK(evaluate_ok(bg, {xs, is})[0] ==
        Literal::from_span<double>(std::vector<double>{4, 5, 0, 1, 4, 5}, {3, 2}).value());
  // reduce_window has no batching rule either: it unrolls, and each batch row is pooled alone.
  GraphBuilder wb("pool");
  Value v = wb.parameter(Shape(kF64, {4}));
  Graph wg =
      wb.build({wb.reduce_window(v, wb.scalar(kF64, 0), OpCode::kAdd, WindowAttrs{{2}})}).value();
  Graph wbg = batch_graph(wg, {true}, 2).value();
  const Literal rows =
      Literal::from_span<double>(std::vector<double>{1, 2, 3, 4, 10, 20, 30, 40}, {2, 4}).value();
  CHECK(evaluate_ok(wbg, {rows})[0] ==
        Literal::from_span<double>(std::vector<double>{3, 5, 7, 30, 50, 70}, {2, 3}).value());
  CHECK(batch_graph(g, {true}, 3).status().code() == StatusCode::kInvalidArgument);
  CHECK(batch_graph(g, {true, false}, -1).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("autodiff: jvp carries tangents through while, case and if, and vjp transposes them") {
  // f(x, y) = (x * 2^3) * y by a loop that doubles x three times.
  GraphBuilder cb("cond");
  Value ci = cb.parameter(Shape(DType::kS32, {}));
  cb.parameter(Shape(kF64, {}));
  const Graph cond = cb.build({cb.compare(ci, cb.constant(3), ComparisonDirection::kLt)}).value();
  GraphBuilder bb("body");
  Value bi = bb.parameter(Shape(DType::kS32, {}));
  Value bx = bb.parameter(Shape(kF64, {}));
  const Graph body = bb.build({bb.add(bi, bb.constant(1)), bb.multiply(bx, bx)}).value();
  GraphBuilder b("powers");
  Value x = b.parameter(Shape(kF64, {}));
  Value y = b.parameter(Shape(kF64, {}));
  const Graph g = b.build({b.multiply(b.while_loop({b.constant(0), x}, cond, body)[1], y)}).value();
  // The loop squares x three times: x^8 * y, so d/dx = 8 x^7 y and d/dy = x^8.
  const double xv = 1.1, yv = -0.7;
  StatusOr<Graph> dx = jvp_graph(g, {true, false});
  REQUIRE_MESSAGE(dx.ok(), dx.status().to_string());
  std::vector<Literal> out = evaluate_ok(*dx, {Literal::scalar(xv), Literal::scalar(yv), Literal::scalar(1.0)});
  CHECK(out[0].data<double>()[0] == doctest::Approx(std::pow(xv, 8) * yv).epsilon(1e-14));
  CHECK(out[1].data<double>()[0] == doctest::Approx(8 * std::pow(xv, 7) * yv).epsilon(1e-14));
  StatusOr<Graph> both = jvp_graph(g, {true, true});
  REQUIRE_MESSAGE(both.ok(), both.status().to_string());
  out = evaluate_ok(*both, {Literal::scalar(xv), Literal::scalar(yv), Literal::scalar(0.5), Literal::scalar(2.0)});
  CHECK(out[1].data<double>()[0] ==
        doctest::Approx(0.5 * 8 * std::pow(xv, 7) * yv + 2.0 * std::pow(xv, 8)).epsilon(1e-14));
  // The loop runs a constant number of times (0 while < 3, step 1), so reverse mode
  // transposes it: d/dx = 8 x^7 y.
  StatusOr<Graph> r = vjp_graph(g, {true, false});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  out = evaluate_ok(*r, {Literal::scalar(xv), Literal::scalar(yv), Literal::scalar(1.0)});
  CHECK(out.back().data<double>()[0] == doctest::Approx(8 * std::pow(xv, 7) * yv).epsilon(1e-14));
  // With respect to y only, the loop is a constant: d/dy (x^8 * y) = x^8 in reverse mode too.
  StatusOr<Graph> dy = vjp_graph(g, {false, true});
  REQUIRE_MESSAGE(dy.ok(), dy.status().to_string());
  out = evaluate_ok(*dy, {Literal::scalar(xv), Literal::scalar(yv), Literal::scalar(1.0)});
  CHECK(out.back().data<double>()[0] == doctest::Approx(std::pow(xv, 8)).epsilon(1e-14));
  // case: branch k is x * k + y, so its tangent is tx * k + ty; the s32 result has none.
  const Graph cg = testing::case_graph(3);
  StatusOr<Graph> dc = jvp_graph(cg, {false, true, true});
  REQUIRE_MESSAGE(dc.ok(), dc.status().to_string());
  const Literal xs = Literal::vector<float>({1, 2, -3});
  const Literal tx = Literal::vector<float>({0.5f, -1, 2});
  for (std::int32_t index : {0, 2, 5}) {
    CAPTURE(index);
    const std::vector<Literal> d =
        evaluate_ok(*dc, {Literal::scalar(index), xs, Literal::scalar(1.0f), tx, Literal::scalar(0.25f)});
    const auto k = static_cast<float>(testing::selected_branch(index, 3));
    CHECK(d[2] == Literal::vector<float>({0.5f * k + 0.25f, -1 * k + 0.25f, 2 * k + 0.25f}));
    CHECK(d[3] == Literal::scalar(std::int32_t{0}));  // zeros for the integer result
  }
  // if: the transpose of branch k sends ct * k to x and sum(ct) to y.
  StatusOr<Graph> di = vjp_graph(testing::if_graph(), {false, true, true});
  REQUIRE_MESSAGE(di.ok(), di.status().to_string());
  for (bool pred : {true, false}) {
    const std::vector<Literal> d = evaluate_ok(
        *di, {Literal::scalar(pred), xs, Literal::scalar(1.0f), Literal::vector<float>({1, -2, 0.5f})});
    const float k = pred ? 1.0f : 2.0f;
    CHECK(d[2] == Literal::vector<float>({k, -2 * k, 0.5f * k}));
    CHECK(d[3] == Literal::scalar(-0.5f));
  }
}

TEST_CASE("batching: while, case and if unroll over the batch and equal per-element runs") {
  const Graph sum = testing::sum_to_n();
  const Graph bsum = batch_graph(sum, {true}, 4).value();
  const std::vector<Literal> sums = evaluate_ok(bsum, {Literal::vector<std::int32_t>({0, 1, 4, 10})});
  CHECK(sums[0] == Literal::vector<std::int32_t>({0, 1, 10, 55}));
  // A batched index picks a branch per element; x is shared.
  const Graph cases = testing::case_graph(3);
  const Graph bcases = batch_graph(cases, {true, false, false}, 3).value();
  const Literal x = Literal::vector<float>({1, 2, 3});
  const std::vector<Literal> r =
      evaluate_ok(bcases, {Literal::vector<std::int32_t>({2, 0, 9}), x, Literal::scalar(0.5f)});
  for (std::int32_t e = 0; e < 3; ++e) {
    const std::int32_t index = std::vector<std::int32_t>{2, 0, 9}[static_cast<std::size_t>(e)];
    const std::vector<Literal> one = evaluate_ok(cases, {Literal::scalar(index), x, Literal::scalar(0.5f)});
    for (std::int64_t j = 0; j < 3; ++j)
      CHECK(r[0].data<float>()[static_cast<std::size_t>(e * 3 + j)] ==
            one[0].data<float>()[static_cast<std::size_t>(j)]);
    CHECK(r[1].data<std::int32_t>()[static_cast<std::size_t>(e)] == one[1].data<std::int32_t>()[0]);
  }
}

}  // namespace autodiff_test
