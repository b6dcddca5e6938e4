// Tests of the simplification passes: the exact graph each pass makes (printed form, node
// count, fingerprint), what they must not touch (parameters, outputs, the input graph,
// inexact floating-point rewrites), idempotence, folding limits, and bodies.

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/transforms/simplify.hpp"
#include "test_util.hpp"

namespace transforms_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {



/// Adds and multiplies f32 arrays; anything else is UNIMPLEMENTED. Counts its calls.
struct TinyEvaluator {
  int* calls = nullptr;
  StatusOr<std::vector<Literal>> operator()(const Node& node,
                                            std::span<const Literal* const> args) const {
    if (calls) ++*calls;
    const bool add = node.op == OpCode::kAdd, mul = node.op == OpCode::kMultiply;
    if (!(add || mul) || args.size() != 2 || args[0]->dtype() != kF32)
      return unimplemented_error(str_cat("TinyEvaluator: ", op_name(node.op)));
    Literal out(node.results[0]);
    std::span<const float> a = args[0]->data<float>(), b = args[1]->data<float>();
    std::span<float> o = out.data<float>();
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = add ? a[i] + b[i] : a[i] * b[i];
    std::vector<Literal> results;
    results.push_back(std::move(out));
    return results;
  }
};

/// The pass must leave `g` as it is: equal graph, equal fingerprint.
void check_unchanged(const Graph& g, const Graph& after) {
  CHECK(after == g);
  CHECK(fingerprint(after) == fingerprint(g));
}

/// Runs `pass` twice: the second run must change nothing.
void check_idempotent(const std::function<StatusOr<Graph>(const Graph&)>& pass, const Graph& g) {
  const Graph once = require_ok(pass(g));
  const Graph twice = require_ok(pass(once));
  CHECK(twice == once);
  CHECK(to_string(twice) == to_string(once));
}

StatusOr<Graph> simplify_tiny(const Graph& g) { return simplify(g, TinyEvaluator{}); }
StatusOr<Graph> fold_tiny(const Graph& g) { return fold_constants(g, TinyEvaluator{}); }

/// Every pass, for checks that all of them share.
std::vector<std::pair<std::string_view, std::function<StatusOr<Graph>(const Graph&)>>>
all_passes() {
  return {{"dead_code_elimination", dead_code_elimination},
          {"common_subexpression_elimination", common_subexpression_elimination},
          {"fold_constants", fold_tiny},
          {"algebraic_simplify", algebraic_simplify},
          {"simplify", simplify_tiny}};
}

/// A literal of `dims` whose every element is +0 or -0; for complex types both parts are.
Literal signed_zeros(DType t, std::vector<std::int64_t> dims, bool negative) {
  Literal lit(Shape(t, std::move(dims)));
  const double zero = negative ? -0.0 : 0.0;
  visit_dtype(t, [&]<class T>(std::type_identity<T>) {
    for (T& x : lit.data<T>()) {
      if constexpr (is_complex_v<T>) {
        using R = typename T::value_type;
        x = T(static_cast<R>(zero), static_cast<R>(zero));
      } else {
        x = convert_element<T>(zero);
      }
    }
  });
  return lit;
}

}  // namespace

TEST_CASE("transforms: dead_code_elimination drops what no output needs, keeps parameters") {
  GraphBuilder b("dce");
  Value x = b.parameter(Shape(kF32, {3}));
  b.parameter(Shape(kS32, {}));  // unused, but part of the signature
  Value a = b.add(x, x);
  b.negate(b.multiply(x, x));  // dead
  std::vector<Value> am = b.argmax(x, 0);  // only the index is used: the reduce stays whole
  Value out = b.negate(a);
  const Graph g = build_ok(b, {out, am[1]});
  const Graph before = g;
  const Graph d = require_ok(dead_code_elimination(g));
  CHECK(g == before);  // the input is untouched
  CHECK(d.num_nodes() == g.num_nodes() - 2);
  CHECK(fingerprint(d) != fingerprint(g));
  CHECK(d.parameter_shapes() == g.parameter_shapes());
  CHECK(d.output_shapes() == g.output_shapes());
  const std::string text = to_string(d);
  CHECK(
      text.starts_with("graph dce {\n"
                       "  %0 = parameter {number=0} : f32[3]\n"
                       "  %1 = parameter {number=1} : s32[]\n"
                       "  %2 = add(%0, %0) : f32[3]\n"
                       "  %3 = iota {iota_dimension=0} : s32[3]\n"
                       "  %4 = constant {value=-inf} : f32[]\n"
                       "  %5 = constant {value=0} : s32[]\n"
                       "  %6:2 = reduce(%0, %3, %4, %5) {dimensions=[0]} : f32[], s32[]\n"));
  CHECK(
      text.ends_with("  %7 = negate(%2) : f32[3]\n"
                     "  return %7, %6#1\n"
                     "}\n"));
  check_idempotent(dead_code_elimination, g);
  // Nothing dead: the same graph comes back.
  check_unchanged(d, require_ok(dead_code_elimination(d)));

  // A graph with no outputs keeps its parameters and nothing else.
  GraphBuilder e("empty");
  Value p = e.parameter(Shape(kF32, {}));
  e.exponential(p);
  const Graph only_params = require_ok(dead_code_elimination(build_ok(e, {})));
  CHECK(to_string(only_params) ==
        "graph empty {\n"
        "  %0 = parameter {number=0} : f32[]\n"
        "  return\n"
        "}\n");
}

TEST_CASE("transforms: dead_code_elimination works inside reduce bodies") {
  GraphBuilder bb("sum_with_dead");
  Value p0 = bb.parameter(Shape(kF32, {}));
  Value p1 = bb.parameter(Shape(kF32, {}));
  bb.multiply(p0, p1);  // dead
  const Graph body = build_ok(bb, {bb.add(p0, p1)});
  GraphBuilder b("outer");
  Value x = b.parameter(Shape(kF32, {4}));
  const Graph g = build_ok(b, {b.reduce(x, b.constant(0.0f), body, {0})});
  const Graph d = require_ok(dead_code_elimination(g));
  CHECK(to_string(d) ==
        "graph outer {\n"
        "  %0 = parameter {number=0} : f32[4]\n"
        "  %1 = constant {value=0} : f32[]\n"
        "  %2 = reduce(%0, %1) {dimensions=[0]} : f32[]\n"
        "    graph sum_with_dead {\n"
        "      %0 = parameter {number=0} : f32[]\n"
        "      %1 = parameter {number=1} : f32[]\n"
        "      %2 = add(%0, %1) : f32[]\n"
        "      return %2\n"
        "    }\n"
        "  return %2\n"
        "}\n");
  CHECK(fingerprint(d) != fingerprint(g));
}

TEST_CASE("transforms: common_subexpression_elimination merges equal computations") {
  GraphBuilder b("cse");
  Value x = b.parameter(Shape(kF32, {3}));
  Value y = b.parameter(Shape(kF32, {3}));  // same shape as x: parameters never merge
  Value a1 = b.add(x, y);
  Value a2 = b.add(y, x);  // commutative: merges with a1
  Value s1 = b.subtract(x, y);
  Value s2 = b.subtract(y, x);  // not commutative: stays
  Value m1 = b.multiply(a1, b.broadcast_in_dim(b.constant(2.0f), {3}, {}));
  Value m2 = b.multiply(a2, b.broadcast_in_dim(b.constant(2.0f), {3}, {}));  // a whole chain
  Value z1 = b.constant(Literal::vector<float>({0.0f, 0.0f, 0.0f}));
  Value z2 = b.constant(Literal::vector<float>({-0.0f, 0.0f, 0.0f}));  // other bytes: stays
  Value n1 = b.constant(std::bit_cast<float>(0x7fc00001u));
  Value n2 = b.constant(std::bit_cast<float>(0x7fc00001u));  // NaNs with equal bits merge
  const Graph g = build_ok(b, {a1, a2, s1, s2, m1, m2, z1, z2, n1, n2, x, y});
  const Graph before = g;
  const Graph c = require_ok(common_subexpression_elimination(g));
  CHECK(g == before);
  CHECK(to_string(c) ==
        "graph cse {\n"
        "  %0 = parameter {number=0} : f32[3]\n"
        "  %1 = parameter {number=1} : f32[3]\n"
        "  %2 = add(%0, %1) : f32[3]\n"
        "  %3 = subtract(%0, %1) : f32[3]\n"
        "  %4 = subtract(%1, %0) : f32[3]\n"
        "  %5 = constant {value=2} : f32[]\n"
        "  %6 = broadcast_in_dim(%5) {broadcast_dimensions=[]} : f32[3]\n"
        "  %7 = multiply(%2, %6) : f32[3]\n"
        "  %8 = constant {value={0, 0, 0}} : f32[3]\n"
        "  %9 = constant {value={-0, 0, 0}} : f32[3]\n"
        "  %10 = constant {value=nan} : f32[]\n"
        "  return %2, %2, %3, %4, %7, %7, %8, %9, %10, %10, %0, %1\n"
        "}\n");
  CHECK(c.num_nodes() == 11);
  CHECK(c.num_parameters() == 2);
  CHECK(fingerprint(c) != fingerprint(g));
  check_idempotent(common_subexpression_elimination, g);
  check_unchanged(c, require_ok(common_subexpression_elimination(c)));
}

TEST_CASE("transforms: common_subexpression_elimination compares bodies up to names") {
  const Graph add_body = make_binary_body(OpCode::kAdd, kF32).value();
  GraphParts renamed = add_body.to_parts();
  renamed.name = "another_name";
  const Graph add_body2 = Graph::from_parts(std::move(renamed));
  const Graph max_body = make_binary_body(OpCode::kMaximum, kF32).value();

  GraphBuilder b("bodies");
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value zero = b.constant(0.0f);
  Value r1 = b.reduce(x, zero, add_body, {1});
  Value r2 = b.reduce(x, zero, add_body2, {1});  // same computation, other name: merges
  Value r3 = b.reduce(x, zero, max_body, {1});   // other body: stays
  Value r4 = b.reduce(x, zero, add_body, {0});   // other dimensions: stays
  const Graph g = build_ok(b, {r1, r2, r3, r4});
  const Graph c = require_ok(common_subexpression_elimination(g));
  CHECK(c.num_nodes() == g.num_nodes() - 1);
  CHECK(c.outputs()[0] == c.outputs()[1]);
  CHECK(c.outputs()[0] != c.outputs()[2]);
  CHECK(c.outputs()[0] != c.outputs()[3]);

  // Inside a body: the duplicate multiply merges.
  GraphBuilder bb("dup_body");
  Value p0 = bb.parameter(Shape(kF32, {}));
  Value p1 = bb.parameter(Shape(kF32, {}));
  Value m1 = bb.multiply(p0, p1);
  Value m2 = bb.multiply(p1, p0);
  const Graph body = build_ok(bb, {bb.add(m1, m2)});
  GraphBuilder ob("outer");
  Value y = ob.parameter(Shape(kF32, {4}));
  const Graph outer = build_ok(ob, {ob.reduce(y, ob.constant(0.0f), body, {0})});
  const Graph co = require_ok(common_subexpression_elimination(outer));
  CHECK(to_string(co.node(2).bodies[0]) ==
        "graph dup_body {\n"
        "  %0 = parameter {number=0} : f32[]\n"
        "  %1 = parameter {number=1} : f32[]\n"
        "  %2 = multiply(%0, %1) : f32[]\n"
        "  %3 = add(%2, %2) : f32[]\n"
        "  return %3\n"
        "}\n");
}

TEST_CASE("transforms: fold_constants folds chains and leaves what it cannot evaluate") {
  GraphBuilder b("fold");
  Value x = b.parameter(Shape(kF32, {2}));
  Value c1 = b.constant(Literal::vector<float>({1, 2}));
  Value c2 = b.constant(Literal::vector<float>({3, 4}));
  Value s = b.add(c1, c2);
  Value p = b.multiply(s, c2);   // folds too: s is a constant by then
  Value q = b.subtract(c1, c2);  // the evaluator cannot: stays
  Value r = b.add(x, p);         // x is not a constant: stays
  Value t = b.add(q, q);         // q did not fold, so neither does t
  const Graph g = build_ok(b, {r, q, t});
  const Graph before = g;
  int calls = 0;
  const Graph f = require_ok(fold_constants(g, TinyEvaluator{&calls}));
  CHECK(g == before);
  CHECK(calls == 3);  // s, p, q
  CHECK(to_string(f) ==
        "graph fold {\n"
        "  %0 = parameter {number=0} : f32[2]\n"
        "  %1 = constant {value={1, 2}} : f32[2]\n"
        "  %2 = constant {value={3, 4}} : f32[2]\n"
        "  %3 = constant {value={4, 6}} : f32[2]\n"
        "  %4 = constant {value={12, 24}} : f32[2]\n"
        "  %5 = subtract(%1, %2) : f32[2]\n"
        "  %6 = add(%0, %4) : f32[2]\n"
        "  %7 = add(%5, %5) : f32[2]\n"
        "  return %6, %5, %7\n"
        "}\n");
  CHECK(fingerprint(f) != fingerprint(g));
  check_idempotent(fold_tiny, g);
  // With DCE after it, the spent constants go.
  CHECK(require_ok(dead_code_elimination(f)).num_nodes() == 7);
}

TEST_CASE("transforms: fold_constants respects max_elements and never evaluates big nodes") {
  GraphBuilder b("limits");
  Value c = b.constant(Literal::vector<float>({1, 2, 3, 4}));
  Value s = b.add(c, c);
  const Graph g = build_ok(b, {s});
  check_unchanged(g, require_ok(fold_constants(g, TinyEvaluator{}, 3)));
  CHECK(require_ok(fold_constants(g, TinyEvaluator{}, 4)).node(1).op == OpCode::kConstant);
  check_unchanged(g, require_ok(fold_constants(g, TinyEvaluator{}, -1)));

  // A broadcast to a million elements and a big iota are never handed to the evaluator.
  GraphBuilder big("big");
  Value one = big.constant(1.0f);
  Value wide = big.broadcast_in_dim(one, {1000, 1000}, {});
  Value io = big.iota(Shape(kF32, {1000, 1000}), 0);
  Value small = big.iota(Shape(kF32, {4}), 0);
  const Graph bg = build_ok(big, {big.add(wide, io), small});
  int calls = 0;
  const Graph folded = require_ok(fold_constants(bg, TinyEvaluator{&calls}));
  CHECK(calls == 1);  // only the small iota, which the tiny evaluator declines
  check_unchanged(bg, folded);

  // An evaluator that answers with the wrong shape is a bug, reported as INTERNAL.
  auto wrong = [](const Node&, std::span<const Literal* const>) -> StatusOr<std::vector<Literal>> {
    std::vector<Literal> out;
    out.push_back(Literal::scalar(1.0f));
    return out;
  };
  const Status s_wrong = fold_constants(g, wrong).status();
  CHECK(s_wrong.code() == StatusCode::kInternal);
  CHECK(s_wrong.message().find("fold_constants: the evaluator returned f32[] for result 0 of "
                               "node %1 (add), which is f32[4]") != std::string_view::npos);
  auto none = [](const Node&, std::span<const Literal* const>) -> StatusOr<std::vector<Literal>> {
    return std::vector<Literal>{};
  };
  CHECK(fold_constants(g, none).status().code() == StatusCode::kInternal);
}

TEST_CASE("transforms: fold_constants works inside reduce bodies") {
  GraphBuilder bb("plus_three");
  Value p0 = bb.parameter(Shape(kF32, {}));
  Value p1 = bb.parameter(Shape(kF32, {}));
  Value three = bb.add(bb.constant(1.0f), bb.constant(2.0f));
  const Graph body = build_ok(bb, {bb.add(bb.add(p0, p1), three)});
  GraphBuilder b("outer");
  Value x = b.parameter(Shape(kF32, {4}));
  const Graph g = build_ok(b, {b.reduce(x, b.constant(0.0f), body, {0})});
  const Graph f = require_ok(simplify(g, TinyEvaluator{}));
  CHECK(to_string(f.node(2).bodies[0]) ==
        "graph plus_three {\n"
        "  %0 = parameter {number=0} : f32[]\n"
        "  %1 = parameter {number=1} : f32[]\n"
        "  %2 = constant {value=3} : f32[]\n"
        "  %3 = add(%0, %1) : f32[]\n"
        "  %4 = add(%3, %2) : f32[]\n"
        "  return %4\n"
        "}\n");
}

TEST_CASE("transforms: float x + 0.0 is never simplified, x + (-0.0) always is") {
  // Why: -0.0 + 0.0 is +0.0, so adding +0.0 changes x = -0.0; adding -0.0 changes nothing.
  for (float v : {-0.0f, 0.0f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::max()}) {
    CHECK(std::bit_cast<std::uint32_t>(v + -0.0f) == std::bit_cast<std::uint32_t>(v));
    CHECK(std::bit_cast<std::uint32_t>(v - 0.0f) == std::bit_cast<std::uint32_t>(v));
  }
  CHECK(std::signbit(-0.0f));
  CHECK_FALSE(std::signbit(-0.0f + 0.0f));
  CHECK_FALSE(std::signbit(-0.0f - -0.0f));
  // Exhaustively over the 16-bit types: adding -0.0 keeps every value's bits (NaNs stay
  // NaN); adding +0.0 keeps every value's bits but -0.0's.
  auto check_all_bits = [](auto type_tag) {
    using T = decltype(type_tag);
    int changed_by_plus_zero = 0;
    for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
      const T x = Eigen::numext::bit_cast<T>(static_cast<std::uint16_t>(bits));
      const T minus = static_cast<T>(static_cast<float>(x) + -0.0f);
      const T plus = static_cast<T>(static_cast<float>(x) + 0.0f);
      if (Eigen::numext::isnan(x)) {
        CHECK(Eigen::numext::isnan(minus));
        continue;
      }
      CHECK(Eigen::numext::bit_cast<std::uint16_t>(minus) == bits);
      if (Eigen::numext::bit_cast<std::uint16_t>(plus) != bits) {
        ++changed_by_plus_zero;
        CHECK(bits == 0x8000u);
      }
    }
    CHECK(changed_by_plus_zero == 1);
  };
  check_all_bits(f16{});
  check_all_bits(bf16{});

  // Every inexact type, every way of writing the zero, on either side.
  for (DType t : {kF16, kBF16, kF32, kF64, kC64, kC128}) {
    for (int form = 0; form < 3; ++form) {
      for (bool zero_on_left : {false, true}) {
        for (bool negative : {false, true}) {
          CAPTURE(dtype_name(t));
          CAPTURE(form);
          CAPTURE(zero_on_left);
          CAPTURE(negative);
          const std::vector<std::int64_t> dims =
              form == 2 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{2, 3};
          // x op zero, or zero op x, in a graph of its own.
          auto make = [&](OpCode op, bool left) {
            GraphBuilder b("z");
            Value x = b.parameter(Shape(t, dims));
            Value z = form == 0
                          ? b.broadcast_in_dim(b.constant(signed_zeros(t, {}, negative)), dims, {})
                      : form == 1 ? b.constant(signed_zeros(t, dims, negative))
                                  : b.constant(signed_zeros(t, {}, negative));
            return build_ok(b, {left ? b.binary(op, z, x) : b.binary(op, x, z)});
          };
          const Graph add = make(OpCode::kAdd, zero_on_left);
          const Graph simplified_add = require_ok(algebraic_simplify(add));
          if (negative) {
            CHECK(simplified_add.outputs()[0] == add.parameters()[0]);
            CHECK(fingerprint(simplified_add) != fingerprint(add));
          } else {
            check_unchanged(add, simplified_add);
          }
          // Subtraction is the mirror image: x - 0.0 is x, x - (-0.0) is not; 0 - x never.
          const Graph sub = make(OpCode::kSubtract, zero_on_left);
          const Graph simplified_sub = require_ok(algebraic_simplify(sub));
          if (negative || zero_on_left)
            check_unchanged(sub, simplified_sub);
          else
            CHECK(simplified_sub.outputs()[0] == sub.parameters()[0]);
        }
      }
    }
  }

  // A constant with one +0.0 among the -0.0s is not an identity either; nor is a NaN.
  GraphBuilder b("mixed");
  Value x = b.parameter(Shape(kF32, {2}));
  Value mixed = b.constant(Literal::vector<float>({-0.0f, 0.0f}));
  Value nan = b.broadcast_in_dim(b.constant(std::numeric_limits<float>::quiet_NaN()), {2}, {});
  const Graph g = build_ok(b, {b.add(x, mixed), b.add(nan, x), b.multiply(x, nan)});
  check_unchanged(g, require_ok(algebraic_simplify(g)));
}

TEST_CASE("transforms: algebraic_simplify of 0 and 1 depends on the element type") {
  auto simplifies = [](DType t, OpCode op, double c, bool c_on_left) {
    GraphBuilder b("t");
    Value x = b.parameter(Shape(t, {3}));
    Value k = b.broadcast_in_dim(b.scalar(t, c), {3}, {});
    const Graph g = build_ok(b, {c_on_left ? b.binary(op, k, x) : b.binary(op, x, k)});
    const Graph s = require_ok(algebraic_simplify(g));
    if (s == g) return std::string("kept");
    const Value out = s.outputs()[0];
    if (out == s.parameters()[0]) return std::string("x");
    if (s.node(out).op == OpCode::kBroadcastInDim) return std::string("c");
    return to_string(s);
  };
  for (DType t : kAllDTypes) {
    CAPTURE(dtype_name(t));
    const bool integer = is_integral(t), pred = is_pred(t), inexact = is_inexact(t);
    for (bool left : {false, true}) {
      // x + 0: integers and pred (x or false); for inexact types see the test above.
      if (!inexact) CHECK(simplifies(t, OpCode::kAdd, 0, left) == "x");
      // x * 1: everything but complex.
      CHECK(simplifies(t, OpCode::kMultiply, 1, left) == (is_complex(t) ? "kept" : "x"));
      // x * 0: integers and pred (x and false) only.
      CHECK(simplifies(t, OpCode::kMultiply, 0, left) == (integer || pred ? "c" : "kept"));
    }
    if (!pred) CHECK(simplifies(t, OpCode::kSubtract, 0, false) == "x");
    if (!pred) CHECK(simplifies(t, OpCode::kSubtract, 0, true) == "kept");  // 0 - x
    if (integer) CHECK(simplifies(t, OpCode::kAdd, 1, false) == "kept");
    if (pred) CHECK(simplifies(t, OpCode::kAdd, 1, false) == "kept");  // x or true
  }
}

TEST_CASE("transforms: algebraic_simplify structural rules") {
  GraphBuilder b("rules");
  Value x = b.parameter(Shape(kF32, {2, 3, 4}));
  Value s = b.parameter(Shape(kS32, {2, 3, 4}));
  Value p = b.parameter(Shape(kPred, {2, 3, 4}));
  std::vector<Value> outs = {
      b.negate(b.negate(x)),                              // 0: x
      b.negate(b.negate(s)),                              // 1: s (wraps both ways)
      b.transpose(x, {0, 1, 2}),                          // 2: x
      b.transpose(b.transpose(x, {1, 2, 0}), {2, 0, 1}),  // 3: x
      b.transpose(b.transpose(x, {1, 0, 2}), {0, 2, 1}),  // 4: one transpose
      b.reshape(x, {2, 3, 4}),                            // 5: x
      b.reshape(b.reshape(x, {6, 4}), {2, 3, 4}),         // 6: x
      b.reshape(b.reshape(x, {6, 4}), {24}),              // 7: one reshape
      b.broadcast_in_dim(x, {2, 3, 4}, {0, 1, 2}),        // 8: x
      b.convert(x, kF32),                                 // 9: x
      b.slice(x, {0, 0, 0}, {2, 3, 4}),                   // 10: x
      b.reverse(x, {}),                                   // 11: x
      b.reverse(b.reverse(x, {0, 2}), {2, 0}),            // 12: x
      b.select(b.constant(true), x, b.negate(x)),         // 13: x
      b.select(b.broadcast_in_dim(b.constant(false), {2, 3, 4}, {}), b.negate(x), x),  // 14: x
      b.select(p, x, x),                                                               // 15: x
  };
  const Graph g = build_ok(b, outs);
  const Graph s1 = require_ok(algebraic_simplify(g));
  CHECK(s1.parameter_shapes() == g.parameter_shapes());
  for (int k : {0, 2, 3, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15}) {
    CAPTURE(k);
    CHECK(s1.outputs()[static_cast<std::size_t>(k)] == s1.parameters()[0]);
  }
  CHECK(s1.outputs()[1] == s1.parameters()[1]);
  const Node& t = s1.node(s1.outputs()[4]);
  CHECK(t.op == OpCode::kTranspose);
  CHECK(t.operands[0] == s1.parameters()[0]);
  // result d is x's dimension p[q[d]]: p = {1,0,2}, q = {0,2,1} gives {1,2,0}.
  CHECK(t.attr<TransposeAttrs>().permutation == std::vector<std::int64_t>{1, 2, 0});
  CHECK(t.results[0] == Shape(kF32, {3, 4, 2}));
  const Node& r = s1.node(s1.outputs()[7]);
  CHECK(r.op == OpCode::kReshape);
  CHECK(r.operands[0] == s1.parameters()[0]);
  CHECK(fingerprint(s1) != fingerprint(g));
  check_idempotent(algebraic_simplify, g);
  // And DCE tidies up what the rewrites left behind.
  const std::string text = to_string(require_ok(dead_code_elimination(s1)));
  CHECK(text ==
        "graph rules {\n"
        "  %0 = parameter {number=0} : f32[2,3,4]\n"
        "  %1 = parameter {number=1} : s32[2,3,4]\n"
        "  %2 = parameter {number=2} : pred[2,3,4]\n"
        "  %3 = transpose(%0) {permutation=[1,2,0]} : f32[3,4,2]\n"
        "  %4 = reshape(%0) : f32[24]\n"
        "  return %0, %1, %0, %0, %3, %0, %0, %4, %0, %0, %0, %0, %0, %0, %0, %0\n"
        "}\n");

  // What must stay: a real transpose, a real slice, a reverse of a long dimension, reverse
  // of other dimensions, a select on a mixed constant, a broadcast that adds dimensions.
  GraphBuilder k("kept");
  Value y = k.parameter(Shape(kF32, {2, 3}));
  Value v = k.parameter(Shape(kF32, {1, 3}));
  const Graph kept = build_ok(
      k, {k.transpose(y, {1, 0}), k.slice(y, {0, 1}, {2, 3}), k.slice(y, {0, 0}, {2, 3}, {2, 1}),
          k.reverse(y, {1}), k.reverse(k.reverse(y, {0}), {1}), k.reverse(v, {0, 1}),
          k.select(k.constant(Literal::vector<bool>({true, false, true, false, true, false})),
                   k.reshape(y, {6}), k.reshape(y, {6})),
          k.broadcast_in_dim(v, {2, 3}, {0, 1}), k.convert(y, kF64)});
  const Graph kept_s = require_ok(algebraic_simplify(kept));
  CHECK(kept_s.num_nodes() == kept.num_nodes());
  // The select's branches are equal computations but two nodes: only CSE can tell.
  check_unchanged(kept, kept_s);
}

TEST_CASE("transforms: a transpose that swaps a dot's free blocks becomes the dot of swapped operands") {
  GraphBuilder b("dots");
  Value a = b.parameter(Shape(kF32, {5, 2, 3, 4}));  // batch 5, free [2, 3], contracting 4
  Value c = b.parameter(Shape(kF32, {4, 5, 6}));     // contracting 4, batch 5, free 6
  const DotDimensionNumbers dims{{0}, {1}, {3}, {0}};
  Value shared = b.dot_general(a, c, dims);  // [5, 2, 3, 6], also an output of its own
  const Graph g = build_ok(b, {b.transpose(b.dot_general(a, c, dims), {0, 3, 1, 2}),  // swaps: one dot
                               b.transpose(b.dot_general(a, c, dims), {0, 2, 1, 3}),  // within a block: kept
                               b.transpose(shared, {0, 3, 1, 2}), shared});            // dot used twice: kept
  const Graph s = require_ok(dead_code_elimination(require_ok(algebraic_simplify(g))));
  const Node& swapped = s.node(s.outputs()[0]);
  REQUIRE(swapped.op == OpCode::kDotGeneral);
  CHECK(swapped.operands == std::vector<Value>{s.parameters()[1], s.parameters()[0]});
  CHECK(swapped.attr<DotDimensionNumbers>() == DotDimensionNumbers{{1}, {0}, {0}, {3}});
  CHECK(swapped.results[0] == Shape(kF32, {5, 6, 2, 3}));
  CHECK(s.node(s.outputs()[1]).op == OpCode::kTranspose);
  CHECK(s.node(s.outputs()[2]).op == OpCode::kTranspose);
  // The same products summed over the same index: the reference gives the same bits.
  std::vector<Literal> args = {Literal(Shape(kF32, {5, 2, 3, 4})), Literal(Shape(kF32, {4, 5, 6}))};
  for (std::size_t k = 0; k < args.size(); ++k) {
    auto data = args[k].data<float>();
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.7f * static_cast<float>(i) + static_cast<float>(k));
  }
  const std::vector<Literal> before = reference::evaluate(g, args).value();
  const std::vector<Literal> after = reference::evaluate(s, args).value();
  CHECK(before == after);
  check_idempotent(algebraic_simplify, g);
}

TEST_CASE("transforms: a reshape that only inserts unit dims sinks through element-wise ops into the broadcast") {
  // rms norm as JAX exports it with keepdims=True: the row sums are reshaped [4] -> [4, 1],
  // scaled and shifted there, then broadcast back over the rows.
  GraphBuilder b("keepdims");
  Value x = b.parameter(Shape(kF32, {4, 6}));
  Value unit = b.parameter(Shape(kF32, {4, 1}));  // not a reshape: what it meets stays [4, 1]
  Value sums = b.reduce(b.multiply(x, x), b.constant(0.0f), OpCode::kAdd, {1});
  Value kept = b.reshape(sums, {4, 1});
  Value mean = b.divide(kept, b.broadcast_in_dim(b.constant(6.0f), {4, 1}, {}));
  Literal eps(Shape(kF32, {4, 1}));
  for (std::size_t i = 0; i < 4; ++i) eps.data<float>()[i] = 1e-3f * static_cast<float>(i + 1);
  Value shifted = b.add(mean, b.constant(std::move(eps)));
  Value clamped = b.select(b.compare(shifted, b.broadcast_in_dim(b.constant(0.5f), {4, 1}, {}), ComparisonDirection::kGt),
                           shifted, b.broadcast_in_dim(b.constant(0.5f), {4, 1}, {}));
  Value inv = b.rsqrt(clamped);
  Value y = b.multiply(x, b.broadcast_in_dim(inv, {4, 6}, {0, 1}));
  Value blocked = b.add(kept, unit);                   // a [4, 1] operand that is no reshape
  Value square = b.negate(b.reshape(sums, {2, 2}));    // not only unit dims
  // A value with a unit dim of its own: [1, 6] -> [1, 1, 6] -> [1, 2, 6] broadcasts [1, 6]
  // along dims 0 and 2.
  Value first = b.slice(x, {0, 0}, {1, 6}, {1, 1});
  Value wide = b.broadcast_in_dim(b.exponential(b.reshape(first, {1, 1, 6})), {1, 2, 6}, {0, 1, 2});
  const Graph g = build_ok(b, {y, blocked, square, wide});
  const Graph s = require_ok(dead_code_elimination(require_ok(algebraic_simplify(g))));
  // The scaling runs on [4] and the broadcast reads it along dimension 0.
  const Node& scaled = s.node(s.outputs()[0]);
  REQUIRE(scaled.op == OpCode::kMultiply);
  const Node& broadcast = s.node(scaled.operands[1]);
  REQUIRE(broadcast.op == OpCode::kBroadcastInDim);
  CHECK(broadcast.attr<BroadcastInDimAttrs>().broadcast_dimensions == std::vector<std::int64_t>{0});
  const Node& root = s.node(broadcast.operands[0]);
  CHECK(root.op == OpCode::kRsqrt);
  CHECK(root.results[0] == Shape(kF32, {4}));
  CHECK(s.node(root.operands[0]).op == OpCode::kSelect);
  CHECK(s.node(root.operands[0]).results[0] == Shape(kF32, {4}));
  // The other two keep their forms.
  CHECK(s.node(s.outputs()[1]).op == OpCode::kAdd);
  CHECK(s.node(s.outputs()[1]).results[0] == Shape(kF32, {4, 1}));
  CHECK(s.node(s.node(s.outputs()[2]).operands[0]).op == OpCode::kReshape);
  const Node& widened = s.node(s.outputs()[3]);
  REQUIRE(widened.op == OpCode::kBroadcastInDim);
  CHECK(widened.attr<BroadcastInDimAttrs>().broadcast_dimensions == std::vector<std::int64_t>{0, 2});
  CHECK(s.node(widened.operands[0]).op == OpCode::kExponential);
  CHECK(s.node(widened.operands[0]).results[0] == Shape(kF32, {1, 6}));
  // The same elements at the same indices: the reference gives the same bits.
  std::vector<Literal> args = {Literal(Shape(kF32, {4, 6})), Literal(Shape(kF32, {4, 1}))};
  for (std::size_t k = 0; k < args.size(); ++k) {
    auto data = args[k].data<float>();
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.9f * static_cast<float>(i) + static_cast<float>(k));
  }
  CHECK(reference::evaluate(g, args).value() == reference::evaluate(s, args).value());
  check_idempotent(algebraic_simplify, g);
}

TEST_CASE("transforms: slices that keep everything, reverses of size-1 dimensions") {
  GraphBuilder b("edge");
  Value x = b.parameter(Shape(kF32, {1, 3, 0}));
  const Graph g = build_ok(
      b, {b.slice(x, {0, 0, 0}, {1, 3, 0}, {5, 1, 7}), b.reverse(x, {0, 2}), b.reverse(x, {1})});
  const Graph s = require_ok(algebraic_simplify(g));
  CHECK(s.outputs()[0] == s.parameters()[0]);
  CHECK(s.outputs()[1] == s.parameters()[0]);
  CHECK(s.node(s.outputs()[2]).op == OpCode::kReverse);
}

TEST_CASE("transforms: simplify runs the passes to a fixed point") {
  GraphBuilder b("simplify");
  Value x = b.parameter(Shape(kF32, {3}));
  b.parameter(Shape(kS32, {}));  // unused
  Value zero = b.broadcast_in_dim(b.constant(-0.0f), {3}, {});
  Value one = b.broadcast_in_dim(b.constant(1.0f), {3}, {});
  Value a = b.add(x, zero);      // x
  Value m = b.multiply(a, one);  // x
  Value k = b.add(b.constant(Literal::vector<float>({1, 2, 3})),
                  b.constant(Literal::vector<float>({1, 1, 1})));  // folds to {2, 3, 4}
  Value d = b.add(m, k);
  Value e = b.add(k, b.transpose(b.negate(b.negate(x)), {0}));  // the same as d
  Value t = b.multiply(e, b.broadcast_in_dim(b.constant(2.0f), {3}, {}));
  const Graph g = build_ok(b, {d, e, t, b.negate(b.negate(x))});
  const Graph before = g;
  const Graph s = require_ok(simplify(g, TinyEvaluator{}));
  CHECK(g == before);
  CHECK(to_string(s) ==
        "graph simplify {\n"
        "  %0 = parameter {number=0} : f32[3]\n"
        "  %1 = parameter {number=1} : s32[]\n"
        "  %2 = constant {value={2, 3, 4}} : f32[3]\n"
        "  %3 = add(%0, %2) : f32[3]\n"
        "  %4 = constant {value=2} : f32[]\n"
        "  %5 = broadcast_in_dim(%4) {broadcast_dimensions=[]} : f32[3]\n"
        "  %6 = multiply(%3, %5) : f32[3]\n"
        "  return %3, %3, %6, %0\n"
        "}\n");
  CHECK(s.parameter_shapes() == g.parameter_shapes());
  CHECK(s.output_shapes() == g.output_shapes());
  CHECK(fingerprint(s) != fingerprint(g));
  check_idempotent(simplify_tiny, g);
  check_unchanged(s, require_ok(simplify(s, TinyEvaluator{})));

  // One round at most: a correct graph, though not the fixed point.
  const Graph one_round = require_ok(simplify(g, TinyEvaluator{}, SimplifyOptions{.max_rounds = 1}));
  CHECK(verify(one_round).ok());
  CHECK(one_round.output_shapes() == g.output_shapes());
}

TEST_CASE("transforms: every pass keeps unused parameters and the outputs") {
  GraphBuilder b("sig");
  b.parameter(Shape(kF32, {2}));
  Value used = b.parameter(Shape(kS32, {2}));
  b.parameter(Shape(kPred, {}));
  Value c = b.constant(Literal::vector<float>({1, 2}));
  const Graph g = build_ok(
      b, {b.add(used, b.broadcast_in_dim(b.constant(0), {2}, {})), b.add(c, c), used, used});
  for (const auto& entry : all_passes()) {
    // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    const std::string_view name = entry.first;
    const auto& pass = entry.second;
    CAPTURE(name);
    const Graph out = require_ok(pass(g));
    CHECK(out.num_parameters() == 3);
    CHECK(out.parameter_shapes() == g.parameter_shapes());
    CHECK(out.output_shapes() == g.output_shapes());
    CHECK(out.name() == "sig");
    CHECK(verify(out).ok());
    check_idempotent(pass, g);
  }
}

TEST_CASE("transforms: passes reject graphs that do not verify") {
  GraphBuilder b("bad");
  Value x = b.parameter(Shape(kF32, {2}));
  GraphParts parts = build_ok(b, {b.negate(x)}).to_parts();
  parts.nodes[1].results[0] = Shape(kF32, {3});
  const Graph bad = Graph::from_parts(std::move(parts));
  for (const auto& entry : all_passes()) {
    // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    const std::string_view name = entry.first;
    const auto& pass = entry.second;
    CAPTURE(name);
    const Status s = pass(bad).status();
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().starts_with(str_cat(name, ": graph 'bad': node %1: negate: result 0")));
  }
}

}  // namespace transforms_test
