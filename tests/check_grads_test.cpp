// check_grads (check_grads.hpp: JAX's method, f64, forward and reverse mode, orders 1 and 2)
// over every op of the IR: each op is either differentiated by a graph checked here at order
// 2 (most at order 1 under a sanitizer: case_order in check_grads.hpp), has zero derivatives
// (checked zero in both modes), has no floating-point values to differentiate, or is a known
// gap whose missing rule is checked to be UNIMPLEMENTED (so a new rule fails this test until
// it moves to the checked list). A test also checks that the four lists cover every opcode,
// so a new op must be placed in one.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "check_grads.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/frontend/linalg.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "test_util.hpp"

namespace check_grads_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

using Case = GradCase;
using Body = GraphBody;
constexpr auto make = &graph_of;

Value full(GraphBuilder& b, double v, std::vector<std::int64_t> dims) {
  return b.broadcast_in_dim(b.scalar(kF64, v), std::move(dims), {});
}

/// The graph jit traces for a front-end function of f64 arguments of `shapes`.
template <class F>
Graph lowered(const std::string& name, F f, const std::vector<Shape>& shapes) {
  std::vector<Literal> args;
  for (const Shape& s : shapes) args.emplace_back(s);
  auto j = jit(grad_client(), [&](const std::vector<Tensor>& x) { return f(x); }, JitOptions{.name = name});
  return require_ok(j.lower(args));
}

Case unary(OpCode op, double lo, double hi) {
  return {std::string(op_name(op)), make(std::string(op_name(op)), {f64({3})}, [&](GraphBuilder& b, const auto& p) {
            return std::vector<Value>{b.unary(op, p[0])};
          }),
          lo, hi};
}
Case binary(OpCode op, double lo, double hi) {
  return {std::string(op_name(op)),
          make(std::string(op_name(op)), {f64({3}), f64({3})},
               [&](GraphBuilder& b, const auto& p) { return std::vector<Value>{b.binary(op, p[0], p[1])}; }),
          lo, hi};
}

/// f64[5] scattered into by f64[3] at `at` (element indices), combining with `op`.
Graph scatter_case(OpCode op, std::vector<std::int32_t> at, bool unique) {
  return make("scatter", {f64({5}), f64({static_cast<std::int64_t>(at.size())})}, [&](GraphBuilder& b, const auto& p) {
    ScatterAttrs s;
    s.inserted_window_dims = {0};
    s.scatter_dims_to_operand_dims = {0};
    s.index_vector_dim = 1;
    s.unique_indices = unique;
    Literal idx(Shape(kS32, {static_cast<std::int64_t>(at.size()), 1}));
    std::copy(at.begin(), at.end(), idx.data<std::int32_t>().begin());
    return std::vector<Value>{b.scatter(p[0], b.constant(idx), p[1], op, s)};
  });
}

/// (a, b) -> a b + a + b = (a + 1)(b + 1) - 1: associative, identity 0, no kind of its own.
Graph associative_body() {
  GraphBuilder body("shifted_product");
  Value l = body.parameter(f64({}));
  Value r = body.parameter(f64({}));
  return build_ok(body, {body.add(body.add(body.multiply(l, r), l), r)});
}

std::vector<Case> checked_cases() {
  using np::Tensor;
  std::vector<Case> c;
  for (auto [op, lo, hi] : std::vector<std::tuple<OpCode, double, double>>{
           {OpCode::kAbs, 0.3, 2},      {OpCode::kNegate, -2, 2},   {OpCode::kExponential, -2, 2},
           {OpCode::kExponentialMinusOne, -2, 2}, {OpCode::kLog, 0.5, 2}, {OpCode::kLogPlusOne, 0, 2},
           {OpCode::kSqrt, 0.5, 2},     {OpCode::kRsqrt, 0.5, 2},   {OpCode::kCbrt, 0.5, 2},
           {OpCode::kTanh, -2, 2},      {OpCode::kLogistic, -2, 2}, {OpCode::kSine, -2, 2},
           {OpCode::kCosine, -2, 2},    {OpCode::kTan, -1, 1},      {OpCode::kAcosh, 1.5, 3},
           {OpCode::kAsin, -0.8, 0.8},  {OpCode::kAsinh, -2, 2},    {OpCode::kAtan, -2, 2},
           {OpCode::kAtanh, -0.8, 0.8}, {OpCode::kCosh, -2, 2},     {OpCode::kSinh, -2, 2},
           {OpCode::kErf, -2, 2},       {OpCode::kErfc, -2, 2},     {OpCode::kErfInv, -0.8, 0.8},
           {OpCode::kLgamma, 0.5, 3},   {OpCode::kDigamma, 0.5, 3}, {OpCode::kBesselI1e, -3, 3}})
    c.push_back(unary(op, lo, hi));
  c.push_back(unary(OpCode::kAbs, -2, -0.3));
  // digamma between its poles at -1 and 0 (trigamma's reflection), far out (its asymptotic
  // series), and bessel_i1e past 15 (i0e's asymptotic series).
  c.push_back(unary(OpCode::kDigamma, -0.8, -0.2));
  c.push_back(unary(OpCode::kDigamma, 20, 40));
  c.push_back(unary(OpCode::kBesselI1e, 16, 30));
  c.push_back(unary(OpCode::kBesselI1e, -30, -16));
  // Multiplying (unique indices, JAX's condition for the updates), max and min scatters, one
  // index out of bounds (its update dropped), two updates on one element for max and min.
  c.push_back({"scatter (multiply)", scatter_case(OpCode::kMultiply, {1, 3, 7}, true)});
  // Reduces with a body of no kind of their own (JAX's tree of pairwise applications): an odd
  // count (a padded half), rows, everything, and two inputs reduced together.
  c.push_back({"reduce (another body, 5)", make("reduce_other", {f64({5})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.reduce(p[0], b.scalar(kF64, 0), associative_body(), {0})};
               }), -0.5, 0.5});
  c.push_back({"reduce (another body, rows)", make("reduce_rows", {f64({2, 3})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.reduce(p[0], b.scalar(kF64, 0), associative_body(), {1})};
               }), -0.5, 0.5});
  c.push_back({"reduce (another body, all)", make("reduce_all", {f64({3, 2})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.reduce(p[0], b.scalar(kF64, 0), associative_body(), {1, 0})};
               }), -0.5, 0.5});
  // reduce_window with such a body or two inputs: one slice per window position.
  c.push_back({"reduce_window (another body)", make("window_other", {f64({5})}, [](GraphBuilder& b, const auto& p) {
                 return b.reduce_window({p[0]}, {b.scalar(kF64, 0)}, associative_body(), WindowAttrs{{2}, {1}});
               }), -0.5, 0.5});
  c.push_back({"reduce_window (another body, strides, padding, dilations)",
               make("window_2d", {f64({3, 4})}, [](GraphBuilder& b, const auto& p) {
                 WindowAttrs w{{2, 2}, {2, 1}, {2, 1}, {1, 2}, {1, 0}, {0, 1}};
                 return b.reduce_window({p[0]}, {b.scalar(kF64, 0)}, associative_body(), w);
               }), -0.5, 0.5});
  c.push_back({"reduce_window max and min with dilations",
               make("dilated_pools", {f64({6})}, [](GraphBuilder& b, const auto& p) {
                 Value mx = b.reduce_window(p[0], b.scalar(kF64, -INFINITY), OpCode::kMaximum, WindowAttrs{{2}, {1}, {1}, {2}});
                 Value mn = b.reduce_window(p[0], b.scalar(kF64, INFINITY), OpCode::kMinimum,
                                            WindowAttrs{{2}, {2}, {2}, {1}, {1}, {1}});
                 return std::vector<Value>{mx, mn};
               })});
  c.push_back({"reduce_window (two inputs)", make("window_pair", {f64({4}), f64({4})}, [](GraphBuilder& b, const auto& p) {
                 GraphBuilder body("sum_and_product");
                 std::vector<Value> q;
                 for (int k = 0; k < 4; ++k) q.push_back(body.parameter(f64({})));
                 const Graph g = build_ok(body, {body.add(q[0], q[2]), body.multiply(q[1], q[3])});
                 return b.reduce_window({p[0], p[1]}, {b.scalar(kF64, 0), b.scalar(kF64, 1)}, g, WindowAttrs{{3}, {1}});
               })});
  c.push_back({"reduce (two inputs, another body)", make("reduce_pair", {f64({3}), f64({3})}, [](GraphBuilder& b, const auto& p) {
                 GraphBuilder body("sum_and_product");
                 std::vector<Value> q;
                 for (int k = 0; k < 4; ++k) q.push_back(body.parameter(f64({})));
                 const Graph g = build_ok(body, {body.add(q[0], q[2]), body.multiply(q[1], q[3])});
                 return b.reduce({p[0], p[1]}, {b.scalar(kF64, 0), b.scalar(kF64, 1)}, g, {0});
               })});
  c.push_back({"scatter (max)", scatter_case(OpCode::kMaximum, {1, 3, 3}, false)});
  c.push_back({"scatter (min)", scatter_case(OpCode::kMinimum, {4, 0, 4}, false)});
  for (auto [op, lo, hi] : std::vector<std::tuple<OpCode, double, double>>{
           {OpCode::kAdd, -2, 2},     {OpCode::kSubtract, -2, 2}, {OpCode::kMultiply, -2, 2},
           {OpCode::kDivide, 0.5, 2}, {OpCode::kPower, 0.5, 2},   {OpCode::kMaximum, -2, 2},
           {OpCode::kMinimum, -2, 2}, {OpCode::kAtan2, 0.5, 2}})
    c.push_back(binary(op, lo, hi));
  // rem(x + 3, y + 2): the quotient stays in (1, 2), away from rem's jumps.
  c.push_back({"remainder", make("remainder", {f64({3}), f64({3})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{
                     b.remainder(b.add(p[0], full(b, 3, {3})), b.add(p[1], full(b, 2, {3})))};
               }),
               0.1, 0.9});
  c.push_back({"complex, real, imag", make("complex", {f64({3}), f64({3})}, [](GraphBuilder& b, const auto& p) {
                 Value z = b.multiply(b.complex(p[0], p[1]), b.complex(p[1], p[0]));
                 return std::vector<Value>{b.add(b.real(z), b.imag(z))};
               })});
  c.push_back({"convert", make("convert", {f64({3})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.multiply(b.real(b.convert(p[0], kC128)), p[0])};
               })});
  c.push_back({"compare, select", make("select", {f64({3}), f64({3})}, [](GraphBuilder& b, const auto& p) {
                 Value gt = b.compare(p[0], p[1], ComparisonDirection::kGt);
                 return std::vector<Value>{b.select(gt, b.multiply(p[0], p[0]), p[1])};
               })});
  c.push_back({"clamp", make("clamp", {f64({3}), f64({3})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{
                     b.clamp(b.subtract(p[1], full(b, 1, {3})), p[0], b.add(p[1], full(b, 1, {3})))};
               })});
  c.push_back({"shapes", make("shapes", {f64({2, 3})}, [](GraphBuilder& b, const auto& p) {
                 Value x = p[0];
                 Value t = b.transpose(b.multiply(x, x), {1, 0});                        // [3, 2]
                 Value r = b.reshape(t, {6});                                            // [6]
                 Value s = b.slice(r, {1}, {6}, {2});                                    // [3]
                 Value bc = b.broadcast_in_dim(s, {2, 3}, {1});                          // [2, 3]
                 Value cat = b.concatenate({bc, b.reverse(x, {0, 1})}, 0);              // [4, 3]
                 Value pd = b.pad(cat, b.scalar(kF64, 0.5), {1, -1}, {0, 1}, {1, 0});     // [8, 3]
                 Value ds = b.dynamic_slice(pd, {b.scalar(kS32, 2), b.scalar(kS32, 1)}, {3, 2});
                 Value du = b.dynamic_update_slice(pd, b.sine(ds), {b.scalar(kS32, 4), b.scalar(kS32, 0)});
                 return std::vector<Value>{du};
               })});
  c.push_back({"reduce", make("reduce", {f64({2, 3})}, [](GraphBuilder& b, const auto& p) {
                 Value s = b.reduce(p[0], b.scalar(kF64, 0), OpCode::kAdd, {1});
                 Value m = b.reduce(p[0], b.scalar(kF64, 1), OpCode::kMultiply, {1});
                 Value x = b.reduce(p[0], b.scalar(kF64, -INFINITY), OpCode::kMaximum, {1});
                 Value n = b.reduce(p[0], b.scalar(kF64, INFINITY), OpCode::kMinimum, {0});
                 Value a = b.argmax(p[0], 1)[0];
                 return std::vector<Value>{b.add(b.add(s, m), b.multiply(x, a)), n};
               })});
  c.push_back({"dot_general", make("dot", {f64({2, 3}), f64({3, 2})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.dot(p[0], p[1])};
               })});
  c.push_back({"reduce_precision", make("reduce_precision", {f64({3})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.reduce_precision(b.multiply(p[0], p[0]), 11, 52)};
               })});
  c.push_back({"reduce_window", make("reduce_window", {f64({5})}, [](GraphBuilder& b, const auto& p) {
                 Value s = b.reduce_window(p[0], b.scalar(kF64, 0), OpCode::kAdd, WindowAttrs{{2}, {1}});
                 Value m = b.reduce_window(p[0], b.scalar(kF64, -INFINITY), OpCode::kMaximum, WindowAttrs{{2}, {1}});
                 return std::vector<Value>{b.multiply(s, m)};
               })});
  c.push_back({"select_and_scatter", make("select_and_scatter", {f64({4}), f64({2})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.multiply(
                     b.select_and_scatter(p[0], p[1], b.scalar(kF64, 0), ComparisonDirection::kGe, OpCode::kAdd,
                                          WindowAttrs{{2}, {2}}),
                     p[0])};
               })});
  c.push_back({"fft", make("fft", {f64({4}), f64({4})}, [](GraphBuilder& b, const auto& p) {
                 Value z = b.fft(b.complex(p[0], p[1]), FftType::kFft, {4});
                 Value r = b.fft(p[0], FftType::kRfft, {4});
                 return std::vector<Value>{b.add(b.real(z), b.imag(z)), b.imag(r)};
               })});
  c.push_back({"triangular_solve", make("triangular_solve", {f64({3, 3}), f64({3, 2})}, [](GraphBuilder& b, const auto& p) {
                 // A well-conditioned lower triangle: the diagonal shifted by 3.
                 Value eye = b.convert(b.compare(b.iota(Shape(kS32, {3, 3}), 0), b.iota(Shape(kS32, {3, 3}), 1),
                                                 ComparisonDirection::kEq),
                                       kF64);
                 Value a = b.add(p[0], b.multiply(eye, full(b, 3, {3, 3})));
                 return std::vector<Value>{b.triangular_solve(a, p[1], TriangularSolveAttrs{})};
               })});
  c.push_back({"top_k", make("top_k", {f64({5})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.top_k(p[0], 2)[0]};
               })});
  // The ops the front end emits for its functions: convolution, gather, scatter, sort,
  // cumulative sums and products, and control flow (while, case, if).
  c.push_back({"convolution", lowered("convolution", [](const auto& x) {
                 return np::conv_general_dilated(x[0], x[1], {2}, np::Padding("SAME"));
               }, {f64({1, 2, 5}), f64({3, 2, 2})})});
  c.push_back({"gather, scatter", lowered("gather_scatter", [](const auto& x) {
                 Tensor g = np::take(x[0], std::vector<std::int64_t>{2, 0, 2}, 0);
                 return np::at(g)[1].add(x[1]) + np::at(g)[0].set(x[1] * x[1]);
               }, {f64({3, 2}), f64({2})})});
  c.push_back({"sort, cumsum, cumprod", lowered("sort", [](const auto& x) {
                 return np::sort(x[0]) * np::cumsum(x[0]) + np::cumprod(x[0]);
               }, {f64({4})})});
  c.push_back({"while, case, if", lowered("control_flow", [](const auto& x) {
                 Tensor loop = fori_loop(0, 3, [](const Tensor&, const Tensor& v) { return sin(v) * 1.5; }, x[0]);
                 Tensor branch = cond(np::sum(x[0]) > 0.0, [](const Tensor& v) { return v * v; },
                                      [](const Tensor& v) { return exp(v); }, x[0]);
                 std::vector<std::function<Tensor(const Tensor&)>> fns = {[](const Tensor& v) { return v * 2.0; },
                                                                           [](const Tensor& v) { return cos(v); }};
                 Tensor sw = switch_(np::full({}, 1, DType::kS32), fns, x[0]);
                 return loop + branch + sw;
               }, {f64({3})})});
  // The bare linalg op (jaxlib's LAPACK routines as an export calls them) by the IR's rules:
  // getrf of a well-conditioned matrix (tests/linalg_grad_test.cpp checks every routine with a
  // rule, and the refusal of the others).
  c.push_back({"linalg (getrf: lu)", make("lu", {f64({3, 3})}, [](GraphBuilder& b, const auto& p) {
                 const Value shift = b.broadcast_in_dim(b.scalar(kF64, 4), {3, 3}, {});
                 const Value eye = b.select(b.compare(b.iota(Shape(kS32, {3, 3}), 0), b.iota(Shape(kS32, {3, 3}), 1),
                                                      ComparisonDirection::kEq),
                                            shift, b.broadcast_in_dim(b.scalar(kF64, 0), {3, 3}, {}));
                 return std::vector<Value>{b.linalg({b.add(p[0], eye)}, LinalgAttrs{})[0]};
               }),
               -0.5, 0.5});
  // The front end's linear algebra: np::linalg's custom_jvp nodes carry JAX's rules over the
  // bare linalg op; inputs in [-0.5, 0.5] keep the matrices well conditioned
  // (tests/linalg_grad_test.cpp checks every function).
  c.push_back({"np::linalg (cholesky, slogdet, solve)", lowered("linalg", [](const auto& x) {
                 const Tensor s = np::matmul(x[0], x[0].T()) + 3.0 * np::eye(3, kF64);
                 const Tensor a = x[0] + 4.0 * np::eye(3, kF64);
                 return np::sum(np::linalg::cholesky(s)) + np::linalg::slogdet(a).second +
                        np::sum(np::linalg::solve(a, x[0]));
               }, {f64({3, 3})}), -0.5, 0.5});
  return c;
}

/// Graphs of ops whose derivative is zero: their output, in f64, depends on x only through
/// them.
std::vector<Case> zero_cases() {
  std::vector<Case> c;
  for (OpCode op : {OpCode::kSign, OpCode::kFloor, OpCode::kCeil, OpCode::kRoundNearestAfz,
                    OpCode::kRoundNearestEven})
    c.push_back(unary(op, -2, 2));
  c.push_back({"is_finite, compare", make("is_finite", {f64({3})}, [](GraphBuilder& b, const auto& p) {
                 Value f = b.convert(b.is_finite(p[0]), kF64);
                 Value g = b.convert(b.compare(p[0], full(b, 0, {3}), ComparisonDirection::kGt), kF64);
                 return std::vector<Value>{b.add(f, g)};
               })});
  c.push_back({"integer ops", make("integers", {f64({3})}, [](GraphBuilder& b, const auto& p) {
                 Value i = b.convert(b.multiply(p[0], full(b, 100, {3})), kS32);
                 Value one = b.broadcast_in_dim(b.scalar(kS32, 1), {3}, {});
                 Value v = b.add(b.popcnt(i), b.count_leading_zeros(b.not_(i)));
                 v = b.add(v, b.xor_(b.and_(i, one), b.or_(i, one)));
                 v = b.add(v, b.shift_left(i, one));
                 v = b.add(v, b.add(b.shift_right_arithmetic(i, one), b.shift_right_logical(i, one)));
                 v = b.add(v, b.iota(Shape(kS32, {3}), 0));
                 v = b.add(v, b.convert(b.bitcast_convert(p[0], kS64), kS32));
                 Value bits = b.rng_bit_generator(b.constant(Literal::vector<std::uint64_t>({1, 2})), Shape(kU32, {3}))[1];
                 return std::vector<Value>{b.add(b.convert(v, kF64), b.convert(bits, kF64))};
               })});
  return c;
}

/// What has no rule: each graph must be refused (UNIMPLEMENTED) in the mode given.
struct Gap {
  std::string name;
  Graph g;
  bool forward;  // the mode that is refused (reverse mode fails wherever forward mode does)
  std::string message;
};

// The LAPACK routines JAX never differentiates after lowering them stay gaps (geqrf, orgqr,
// geev, ...: JAX's qr and eig rules apply to the primitives they implement).
std::vector<Gap> known_gaps() {
  std::vector<Gap> c;
  // As in JAX, which defines no derivative for nextafter.
  c.push_back({"next_after", binary(OpCode::kNextAfter, 0.5, 2).g, true, "next_after"});
  c.push_back({"linalg (geqrf: qr)", make("qr", {f64({3, 3})}, [](GraphBuilder& b, const auto& p) {
                 LinalgAttrs a;
                 a.routine = LinalgRoutine::kGeqrf;
                 return std::vector<Value>{b.linalg({p[0]}, a)[0]};
               }),
               true, "linalg geqrf"});
  c.push_back({"scatter (multiply, repeated indices)", scatter_case(OpCode::kMultiply, {1, 1}, false), true,
               "unique_indices=True"});
  c.push_back({"reduce_window (another body, traced initial value)",
               make("window_init", {f64({4}), f64({})}, [](GraphBuilder& b, const auto& p) {
                 return b.reduce_window({p[0]}, {p[1]}, associative_body(), WindowAttrs{{2}, {1}});
               }),
               true, "initial values"});
  // As in JAX: a general reduce's initial values must not carry tangents.
  c.push_back({"reduce (another body, traced initial value)",
               make("reduce_other", {f64({4}), f64({})}, [](GraphBuilder& b, const auto& p) {
                 return std::vector<Value>{b.reduce(p[0], p[1], associative_body(), {0})};
               }),
               true, "initial values"});
  return c;
}

// The opcodes of g and of its regions.
void collect_ops(const Graph& g, std::set<OpCode>& out) {
  for (const Node& n : g.nodes()) {
    out.insert(n.op);
    for (const Graph& body : n.bodies) collect_ops(body, out);
  }
}

}  // namespace

TEST_CASE("check_grads: every op with a rule, forward and reverse mode, orders 1 and 2") {
  std::mt19937_64 rng(2406);
  const std::vector<Case> cases = checked_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    CAPTURE(c.name);
    check_grads(c.g, rng, c.lo, c.hi, case_order(c.order, i));  // most at order 1 under a sanitizer
  }
}

TEST_CASE("check_grads: lgamma's second derivative is trigamma, bessel_i1e's derivative uses i0e, as closed forms say") {
  // jvp of jvp with unit tangents: output 3 is the second derivative, output 1 the first.
  auto derivatives = [](OpCode op, const std::vector<double>& xs) {
    const auto n = static_cast<std::int64_t>(xs.size());
    const Graph g = make("f", {f64({n})}, [&](GraphBuilder& b, const auto& p) { return std::vector<Value>{b.unary(op, p[0])}; });
    const Graph j2 = require_ok(jvp_graph(require_ok(jvp_graph(g, {true})), {true, false}));
    const Literal x = Literal::from_span<double>(xs, {n}).value();
    const Literal one = Literal::from_span<double>(std::vector<double>(xs.size(), 1.0), {n}).value();
    return run_checked_on_cpu(j2, {x, one, one});
  };
  // trigamma(n) = pi^2/6 - sum_{k < n} 1/k^2; trigamma(1/2) = pi^2/2; trigamma(x) = trigamma(x + 1) + 1/x^2.
  const long double pi2 = std::numbers::pi_v<long double> * std::numbers::pi_v<long double>;
  long double h29 = 0;
  for (int k = 1; k < 30; ++k) h29 += 1.0L / (k * k);
  const std::vector<double> xs{0.5, 1, 3, -0.5, 30};
  const std::vector<long double> trigamma{pi2 / 2, pi2 / 6, pi2 / 6 - 1.25L, pi2 / 2 + 4, pi2 / 6 - h29};
  const std::vector<Literal> lg = derivatives(OpCode::kLgamma, xs);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(xs[i]);
    CHECK(std::abs(lg[3].data<double>()[i] - double(trigamma[i])) <= 1e-12 * std::abs(double(trigamma[i])));
  }
  // i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), with I0 and I1 by their power series in long double.
  const std::vector<double> bx{0.3, -2, 10, 14.9, 15.1, 25, -40};
  const std::vector<Literal> be = derivatives(OpCode::kBesselI1e, bx);
  for (std::size_t i = 0; i < bx.size(); ++i) {
    CAPTURE(bx[i]);
    const long double x = bx[i], q = x * x / 4;
    long double i0 = 0, i1 = 0, t0 = 1, t1 = x / 2;
    for (int k = 0; k < 200; ++k) {
      i0 += t0;
      i1 += t1;
      t0 *= q / ((k + 1.0L) * (k + 1));
      t1 *= q / ((k + 1.0L) * (k + 2));
    }
    const long double e = std::exp(-std::fabs(x));
    const long double want = e * i0 - e * i1 * ((x > 0 ? 1 : -1) + 1 / x);
    CHECK(std::abs(be[1].data<double>()[i] - double(want)) <= 1e-11 * std::abs(double(want)) + 1e-15);
  }
  // At 0 the limit 1/2 (JAX's rule), not 0/0.
  const std::vector<Literal> at0 = derivatives(OpCode::kBesselI1e, {0.0});
  CHECK(at0[1].data<double>()[0] == 0.5);
}

TEST_CASE("check_grads: a max scatter shares the tangent among the values that attain an element") {
  // x = [1, 5, 2, 0, 0], updates [5, 3, 7] at [1, 1, 2]: element 1 is attained by x[1] and
  // update 0 (each takes half), element 2 by update 2 alone; update 1 loses.
  const Graph g = scatter_case(OpCode::kMaximum, {1, 1, 2}, false);
  const Graph j = require_ok(jvp_graph(g, {true, true}));
  const Literal x = Literal::from_span<double>(std::vector<double>{1, 5, 2, 0, 0}, {5}).value();
  const Literal u = Literal::from_span<double>(std::vector<double>{5, 3, 7}, {3}).value();
  const Literal tx = Literal::from_span<double>(std::vector<double>{10, 20, 30, 40, 50}, {5}).value();
  const Literal tu = Literal::from_span<double>(std::vector<double>{1, 2, 3}, {3}).value();
  const std::vector<Literal> out = run_checked_on_cpu(j, {x, u, tx, tu});
  CHECK(out[0].data<double>()[1] == 5);
  const std::vector<double> want{10, (20 + 1) / 2.0, 3, 40, 50};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(out[1].data<double>()[i] == want[i]);
}

TEST_CASE("check_grads: piecewise-constant and integer ops have zero derivatives in both modes") {
  std::mt19937_64 rng(2407);
  for (const Case& c : zero_cases()) {
    CAPTURE(c.name);
    const Literal x = random_literal<double>(rng, c.g.shape(c.g.parameters()[0]), c.lo, c.hi);
    const Literal v = random_literal<double>(rng, x.shape(), -1, 1);
    const std::vector<Literal> fwd = run_checked_on_cpu(require_ok(jvp_graph(c.g, {true})), {x, v});
    const std::vector<Literal> rev = run_checked_on_cpu(require_ok(vjp_graph(c.g, {true})), {x, v});
    for (double t : fwd[1].data<double>()) CHECK(t == 0.0);
    for (double t : rev[1].data<double>()) CHECK(t == 0.0);
  }
}

TEST_CASE("check_grads: the known gaps are still refused (a new rule must move its op to the checked list)") {
  for (const Gap& gap : known_gaps()) {
    CAPTURE(gap.name);
    const std::vector<bool> wrt(static_cast<std::size_t>(gap.g.num_parameters()), true);
    StatusOr<Graph> fwd = jvp_graph(gap.g, wrt);
    StatusOr<Graph> rev = vjp_graph(gap.g, wrt);
    if (gap.forward) {
      CHECK_MESSAGE(!fwd.ok(), gap.name, " now has a forward-mode rule: check it in checked_cases()");
      if (!fwd.ok()) check_error(fwd.status(), StatusCode::kUnimplemented, gap.message);
    } else {
      CHECK_MESSAGE(fwd.ok(), gap.name, ": forward mode was expected to work");
    }
    CHECK_MESSAGE(!rev.ok(), gap.name, " now has a reverse-mode rule: check it in checked_cases()");
    if (!rev.ok()) check_error(rev.status(), StatusCode::kUnimplemented, gap.message);
  }
}

TEST_CASE("check_grads: the checked, zero and gap lists cover every opcode of the IR") {
  // Parameters, constants and a process's place in its grid take no operands: nothing to
  // differentiate. The token ops' results are tokens, or data from outside the program
  // (recv, infeed): zero tangents, as every value that is not a float (autodiff.hpp).
  std::set<OpCode> covered{OpCode::kParameter, OpCode::kConstant, OpCode::kReplicaId, OpCode::kPartitionId,
                           OpCode::kAfterAll,  OpCode::kSend,     OpCode::kRecv,      OpCode::kInfeed,
                           OpCode::kOutfeed};
  // The collectives' rules need a grid to run: tests/parallel_test.cpp checks them there, in
  // both modes, against central differences of the devices' summed outputs.
  covered.insert({OpCode::kAllReduce, OpCode::kAllGather, OpCode::kReduceScatter, OpCode::kAllToAll,
                  OpCode::kCollectivePermute, OpCode::kCollectiveBroadcast});
  for (const Case& c : checked_cases()) collect_ops(c.g, covered);
  for (const Case& c : zero_cases()) collect_ops(c.g, covered);
  for (const Gap& gap : known_gaps()) collect_ops(gap.g, covered);
  for (std::size_t k = 0; k < kOpCodeCount; ++k) {
    const auto op = static_cast<OpCode>(k);
    CHECK_MESSAGE(covered.count(op) == 1, op_name(op), " is in no list of check_grads_test.cpp: add a case");
  }
}

}  // namespace check_grads_test
