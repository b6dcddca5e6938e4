// Tests of CPU compilation and execution: results against closed forms, fusion and memory
// planning, PJRT's execution doors, donation, asynchronous execution, and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <complex>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <limits>
#include <thread>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/gemm.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/byte_io.hpp"
#include "pjrt_lite/trace/traced.hpp"
#include "control_flow.hpp"
#include "sanitizers.hpp"
#include "test_util.hpp"

namespace cpu_executable_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

std::unique_ptr<cpu::Client<>> make_client(int devices = 2) {
  return cpu::Client<>::create({.device_count = devices, .thread_count = 2}).value();
}

/// Compiles `graph`, runs it on `args` on device 0, and returns the outputs as literals.
template <class C>
std::vector<Literal> run(C& client, const Graph& graph, const std::vector<Literal>& args, cpu::CompileOptions options = {}) {
  return run_on(client, graph, args, options);
}

ExecuteOptions async_options() {
  ExecuteOptions o;
  o.mode = ExecutionMode::kAsynchronous;
  return o;
}

/// `v` as an f32 or f64 vector literal.
Literal float_vector(DType t, const std::vector<double>& v) {
  const auto n = static_cast<std::int64_t>(v.size());
  if (t == DType::kF64) return Literal::from_span<double>(v, {n}).value();
  const std::vector<float> f(v.begin(), v.end());
  return Literal::from_span<float>(f, {n}).value();
}

/// An f64 literal as f32 (each value rounded) or f64 (itself), for `t`.
Literal in_dtype(DType t, const Literal& f64) {
  if (t == DType::kF64) return f64;
  const auto dims = f64.shape().dims();
  Literal narrow(Shape(DType::kF32, std::vector<std::int64_t>(dims.begin(), dims.end())));
  const auto from = f64.data<double>();
  auto to = narrow.data<float>();
  for (std::size_t i = 0; i < from.size(); ++i) to[i] = static_cast<float>(from[i]);
  return narrow;
}

/// `n` values around +-30 with, every 7th, an edge of exp's packet code on either side (where
/// it overflows, underflows to denormals and zero, infinities, NaN, signed zeros, denormals,
/// the bounds of its range).
std::vector<double> exp_edge_values(std::int64_t n) {
  const double inf = std::numeric_limits<double>::infinity();
  const double edges[] = {0.0, -0.0, 1.0, -1.0, 86.9, -86.9, 87.5, -87.5, 88.5, -88.5, 700.0, -700.0, 708.5, -708.5,
                          709.5, -709.5, 745.5, -745.5, 800.0, -800.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(),
                          1e-40, -1e-310,
                          // The bounds of the packet code's range, (-87, 88) for f32 and (-708,
                          // 709) for f64, and the f32 values just inside them.
                          -87.0, 88.0, 87.99999237060547, -86.99999237060547, -708.0, 709.0};
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = i % 7 == 3 ? edges[(i / 7) % std::size(edges)] : std::sin(0.37 * static_cast<double>(i)) * 30;
  return v;
}

/// Element i of an f32 or f64 literal, as a double.
double element(const Literal& l, std::int64_t i) {
  return l.dtype() == DType::kF32 ? double(l.data<float>()[static_cast<std::size_t>(i)]) : l.data<double>()[static_cast<std::size_t>(i)];
}

/// Runs `g` fused and unfused and checks that every output is the same bits, except that a
/// NaN may come out with either sign (AVX2's exp keeps the sign of a negated NaN, its lone
/// exp does not; a NaN's sign means nothing). Returns the fused outputs.
template <class C>
std::vector<Literal> check_fused_bits(C& client, const Graph& g, const std::vector<Literal>& args) {
  const auto fused = run(client, g, args);
  const auto unfused = run(client, g, args, {.optimize = true, .fuse = false});
  for (std::size_t k = 0; k < fused.size(); ++k) {
    std::size_t differ = 0;
    for (std::int64_t i = 0; i < fused[k].shape().element_count(); ++i) {
      const double a = element(fused[k], i), u = element(unfused[k], i);
      if (std::isnan(a) && std::isnan(u)) continue;
      differ += std::memcmp(&a, &u, sizeof a) != 0;
    }
    CAPTURE(k);
    CHECK(differ == 0);
  }
  return fused;
}

template <class T>
Literal iota_literal(std::vector<std::int64_t> dims, T start = T(0)) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(start + static_cast<T>(i));
  return Literal::from_span<T>(v, dims).value();
}

}  // namespace

TEST_CASE("cpu executable: a fused element-wise chain equals its closed form") {
  auto client = make_client();
  const std::int64_t n = 10000;  // several tiles, with a ragged last one
  GraphBuilder b("chain");
  Value x = b.parameter(Shape(DType::kF32, {n}));
  Value y = b.parameter(Shape(DType::kF32, {n}));
  Value half = b.broadcast_in_dim(b.constant(0.5f), {n}, {});
  // One statement per op: the fused group's text below lists ops in the order they were
  // built, which nested calls would leave to the compiler's order of evaluating arguments.
  Value e = b.exponential(b.negate(x));
  Value xy = b.multiply(x, y);
  Value out = b.add(b.multiply(b.tanh(b.add(xy, e)), half), y);
  Graph g = build_ok(b, {out});
  std::vector<float> xs(n), ys(n);
  for (std::int64_t i = 0; i < n; ++i) {
    xs[i] = std::sin(0.001f * static_cast<float>(i));
    ys[i] = std::cos(0.002f * static_cast<float>(i));
  }
  auto result = run(*client, g, {Literal::from_span<float>(xs, {n}).value(), Literal::from_span<float>(ys, {n}).value()});
  const auto got = result[0].data<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    const double expect = std::tanh(double(xs[i]) * ys[i] + std::exp(-double(xs[i]))) * 0.5 + ys[i];
    REQUIRE(std::abs(got[i] - expect) <= 4e-6 * std::max(1.0, std::abs(expect)));
  }
  auto exe = client->compile(g).value();
  // One loop for the whole chain: a single kernel, no temporaries.
  CHECK(contains(exe.optimized_program_text(), "1 kernels"));
  CHECK(contains(exe.optimized_program_text(),
                 "fusion[broadcast_in_dim, negate, exponential, multiply, add, tanh, multiply, add]($3, $1, $2) : [10000] (2 multiply-adds, 1 exp of a negation)"));
  CHECK(exe.cost_analysis().transcendentals == 2.0 * n);
}

TEST_CASE("cpu executable: a value squared inside a fused loop frees its tile once") {
  // t * t is t's last use: its scratch tile returns to the loop's free list once, not twice,
  // so the two values made next get tiles of their own. Against the reference, every dtype
  // the loop computes in.
  auto client = make_client();
  for (DType t : {DType::kF32, DType::kF64, DType::kS32, DType::kU8, DType::kF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("square");
    const std::int64_t n = 3000;
    Value a = b.convert(b.parameter(Shape(DType::kF32, {n})), t);
    auto splat = [&](float v) { return b.broadcast_in_dim(b.convert(b.constant(v), t), {n}, {}); };
    Value s = b.add(a, splat(1));
    Value square = b.multiply(s, s);
    Value v = b.multiply(a, splat(2));
    Value w = b.subtract(a, splat(3));
    Graph g = build_ok(b, {b.convert(b.add(square, b.multiply(v, w)), DType::kF64)});
    std::vector<float> av(n);
    for (std::int64_t i = 0; i < n; ++i) av[static_cast<std::size_t>(i)] = float(i % 7);
    const std::vector<Literal> args = {Literal::from_span<float>(av, {n}).value()};
    auto got = run(*client, g, args);
    auto want = reference::evaluate(g, args);
    REQUIRE(want.ok());
    CHECK(got[0] == (*want)[0]);
  }
}

TEST_CASE("cpu executable: products feeding sums become multiply-adds that match the reference") {
  // a * b + c, a * b - c, c - a * b, a splat factor, and two products the loop must keep: one
  // read twice and one that is a result of its own. Several tiles, split across workers.
  auto client = make_client();
  const std::int64_t n = 9000;
  for (DType t : {DType::kF32, DType::kF64, DType::kBF16, DType::kS32}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("multiply_add");
    Value a = b.convert(b.parameter(Shape(DType::kF32, {n})), t);
    Value c = b.convert(b.parameter(Shape(DType::kF32, {n})), t);
    Value k = b.broadcast_in_dim(b.convert(b.constant(3.0f), t), {n}, {});
    Value add = b.add(b.multiply(a, c), k);
    Value sub_after = b.subtract(b.multiply(a, k), c);
    Value sub_from = b.subtract(c, b.multiply(c, c));
    Value shared = b.multiply(a, a);  // read by two sums: stays a product of its own
    Value kept = b.multiply(c, k);    // also a result of the program
    Value total = b.add(b.add(b.add(add, sub_after), b.add(sub_from, shared)), b.add(shared, kept));
    Graph g = build_ok(b, {b.convert(total, DType::kF64), b.convert(kept, DType::kF64)});
    std::vector<float> av(n), cv(n);
    for (std::int64_t i = 0; i < n; ++i) {
      av[static_cast<std::size_t>(i)] = t == DType::kS32 ? float(i % 97 - 48) : std::sin(0.01f * float(i));
      cv[static_cast<std::size_t>(i)] = t == DType::kS32 ? float(i % 13 - 6) : std::cos(0.03f * float(i));
    }
    const std::vector<Literal> args = {Literal::from_span<float>(av, {n}).value(), Literal::from_span<float>(cv, {n}).value()};
    auto got = run(*client, g, args);
    auto want = reference::evaluate(g, args);
    REQUIRE(want.ok());
    for (std::size_t r = 0; r < 2; ++r) {
      const auto gv = got[r].data<double>();
      const auto wv = (*want)[r].data<double>();
      double worst = 0;
      for (std::size_t i = 0; i < gv.size(); ++i) worst = std::max(worst, std::abs(gv[i] - wv[i]));
      // Exactly rounded ops; an FMA-capable build may fuse a product and its sum (one rounding).
      CHECK(worst <= (t == DType::kF32 ? 1e-5 : t == DType::kF64 ? 1e-12 : 0.0));
    }
    const std::string text = client->compile(g).value().optimized_program_text();
    if (t == DType::kF32 || t == DType::kF64) CHECK(contains(text, "(3 multiply-adds)"));
    else CHECK(!contains(text, "multiply-add"));  // bf16 rounds each product; integers have none
  }
}

TEST_CASE("cpu executable: a broadcast along leading dimensions fuses and matches the reference") {
  // Element i of a bias broadcast is element i % size of the bias. 37 x 3 x 100 elements:
  // tiles of 256 start in the middle of the 300- and 100-element patterns, and the loop is
  // long enough to be split across the pool's workers.
  auto client = make_client();
  for (DType t : {DType::kF32, DType::kF16}) {
    CAPTURE(dtype_name(t));
    GraphBuilder b("bias");
    const std::vector<std::int64_t> dims = {37, 3, 100};
    Value x = b.convert(b.parameter(Shape(DType::kF32, dims)), t);
    Value bias = b.convert(b.parameter(Shape(DType::kF32, {3, 100})), t);
    Value row = b.convert(b.parameter(Shape(DType::kF32, {100})), t);
    Value sum = b.add(b.add(x, b.broadcast_in_dim(bias, dims, {1, 2})), b.broadcast_in_dim(row, dims, {2}));
    Graph g = build_ok(b, {b.convert(b.tanh(sum), DType::kF32)});
    auto values = [](std::vector<std::int64_t> shape, float phase) {
      std::int64_t n = 1;
      for (auto d : shape) n *= d;
      std::vector<float> v(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
      return Literal::from_span<float>(v, shape).value();
    };
    const std::vector<Literal> args = {values(dims, 0.f), values({3, 100}, 1.f), values({100}, 2.f)};
    auto got = run(*client, g, args);
    auto want = reference::evaluate(g, args);
    REQUIRE(want.ok());
    const auto g0 = got[0].data<float>();
    const auto w0 = (*want)[0].data<float>();
    REQUIRE(g0.size() == w0.size());
    const double tolerance = t == DType::kF32 ? 1e-5 : 2e-3;  // f16: one rounding step
    double worst = 0;
    for (std::size_t i = 0; i < g0.size(); ++i) worst = std::max(worst, std::abs(double(g0[i]) - double(w0[i])));
    CHECK(worst <= tolerance);
    if (t == DType::kF32) {
      // Without a transcendental function the bits are the reference's: each tile reads the
      // 100-element pattern from its own place in it.
      GraphBuilder e("scaled");
      Value ex = e.parameter(Shape(t, dims)), ebias = e.parameter(Shape(t, {3, 100})), erow = e.parameter(Shape(t, {100}));
      const Graph exact = build_ok(e, {e.multiply(e.add(ex, e.broadcast_in_dim(erow, dims, {2})),
                                                  e.broadcast_in_dim(ebias, dims, {1, 2}))});
      CHECK(run(*client, exact, args)[0] == reference::evaluate(exact, args).value()[0]);
    }
    // The broadcasts read the bias inside the loop: nothing is materialized at full size.
    auto exe = client->compile(g).value();
    // The fused group that computes tanh holds both broadcasts.
    const std::string text = exe.optimized_program_text();
    CAPTURE(text);
    const std::size_t tanh_at = text.find("tanh", text.find("cpu program"));
    REQUIRE(tanh_at != std::string::npos);
    const std::size_t fusion = text.rfind("fusion[", tanh_at);
    REQUIRE(fusion != std::string::npos);
    const std::string group = text.substr(fusion, text.find(']', fusion) - fusion);
    std::size_t broadcasts = 0;
    for (std::size_t at = group.find("broadcast_in_dim"); at != std::string::npos;
         at = group.find("broadcast_in_dim", at + 1))
      ++broadcasts;
    CHECK(broadcasts == 2);
    CHECK(contains(group, "tanh"));
  }
}

TEST_CASE("cpu executable: copies of a megabyte and more, split across threads, equal the reference") {
  // Past a megabyte a copy is split into element ranges that start and end inside rows: a
  // plain copy is one row, a slice or a reverse a few long ones, a transpose many short ones.
  auto client = make_client(1);
  GraphBuilder b("moves");
  Value x = b.parameter(Shape(DType::kS32, {3, 100003}));
  Value y = b.parameter(Shape(DType::kS32, {641, 513}));
  Value z = b.parameter(Shape(DType::kF64, {300007}));
  const std::vector<Value> outputs = {
      x,                                                       // the output's own copy of a parameter
      b.slice(x, {0, 1}, {3, 100002}, {1, 1}),                 // three rows, each cut at both ends
      b.slice(x, {1, 0}, {3, 100003}, {1, 3}),                 // a strided inner dimension
      b.reverse(x, {1}),                                       // negative strides
      b.transpose(y, {1, 0}),                                  // 513 rows of 641 scattered elements
      b.concatenate({z, z}, 0),                                // two one-row pieces
      b.pad(z, b.constant(-1.0), {3}, {-5}, {0}),              // a fill, then a shifted copy
  };
  const Graph g = build_ok(b, outputs);
  std::vector<Literal> args = {iota_literal<std::int32_t>({3, 100003}), iota_literal<std::int32_t>({641, 513}, 7),
                               iota_literal<double>({300007}, 0.5)};
  const std::vector<Literal> got = run(*client, g, args);
  const std::vector<Literal> want = reference::evaluate(g, args).value();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == want[i]);
  }
}

TEST_CASE("cpu executable: exp of a negation, or of a difference with a broadcast scalar, is one instruction, bit for bit the two ops") {
  // Edge values where exp's packet code hands over to the C library between ordinary ones, in
  // a length that ends in a partial packet. Unfused, negate or subtract and exp are kernels
  // of their own.
  auto client = make_client();
  for (DType t : {DType::kF32, DType::kF64}) {
    CAPTURE(dtype_name(t));
    const std::int64_t n = 1001;
    GraphBuilder b("exp_neg");
    Value x = b.parameter(Shape(t, {n}));
    Value e = b.exponential(b.negate(x));
    Graph g = build_ok(b, {e, b.multiply(e, x)});
    GraphBuilder kept("exp_neg_kept");  // the negation is an output too: it stays an op
    Value y = kept.parameter(Shape(t, {n}));
    Value minus = kept.negate(y);
    Graph h = build_ok(kept, {kept.exponential(minus), minus});
    const Literal arg = float_vector(t, exp_edge_values(n));
    check_fused_bits(*client, g, {arg});
    check_fused_bits(*client, h, {arg});
    CHECK(contains(client->compile(g).value().optimized_program_text(), "(1 exp of a negation)"));
    CHECK(!contains(client->compile(h).value().optimized_program_text(), "negation"));

    // exp(x - s), with shifts that keep the edges, move them and make every difference
    // infinite or NaN. The scalar is a parameter, so the subtraction is no constant to fold.
    GraphBuilder db("exp_difference");
    Value dx = db.parameter(Shape(t, {n}));
    Value s = db.parameter(Shape(t, {}));
    Value de = db.exponential(db.subtract(dx, db.broadcast_in_dim(s, {n}, {})));
    Graph d = build_ok(db, {de, db.multiply(de, dx)});
    const std::vector<double> v = exp_edge_values(n);
    for (const double shift : {0.5, -0.0, std::numeric_limits<double>::infinity()}) {
      CAPTURE(shift);
      const Literal scalar = t == DType::kF32 ? Literal::scalar(static_cast<float>(shift)) : Literal::scalar(shift);
      const auto fused = check_fused_bits(*client, d, {float_vector(t, v), scalar});
      // And within a few ULP of the closed form (the C library's exp of the difference).
      for (std::int64_t i = 0; i < n; ++i) {
        const double diff = t == DType::kF32 ? double(static_cast<float>(v[static_cast<std::size_t>(i)]) - static_cast<float>(shift))
                                             : v[static_cast<std::size_t>(i)] - shift;
        const double want = t == DType::kF32 ? double(std::exp(static_cast<float>(diff))) : std::exp(diff);
        const double got = element(fused[0], i);
        if (std::isnan(want)) {
          CHECK(std::isnan(got));
        } else if (std::isinf(want)) {
          CHECK(got == want);
        } else {
          CAPTURE(diff);
          CHECK(std::abs(got - want) <= 4 * std::abs(want) * (t == DType::kF32 ? 1.2e-7 : 2.3e-16));
        }
      }
    }
    CHECK(contains(client->compile(d).value().optimized_program_text(), "(1 exp of a difference)"));
  }
}

TEST_CASE("cpu executable: unfused execution gives the same results") {
  auto client = make_client();
  GraphBuilder b("unfused");
  Value x = b.parameter(Shape(DType::kF64, {3000}));
  Value out = b.multiply(b.sqrt(b.abs(x)), b.log_plus_one(b.abs(x)));
  Graph g = build_ok(b, {out});
  Literal arg = iota_literal<double>({3000}, -1500.0);
  auto fused = run(*client, g, {arg});
  auto unfused = run(*client, g, {arg}, {.optimize = true, .fuse = false});
  CHECK(fused[0] == unfused[0]);
  CHECK(contains(client->compile(g, {.optimize = true, .fuse = false}).value().optimized_program_text(), "4 kernels"));
}

TEST_CASE("cpu executable: f16 and bf16 compute through f32 and round once per op") {
  auto client = make_client();
  for (DType t : {DType::kF16, DType::kBF16}) {
    GraphBuilder b("half");
    Value x = b.parameter(Shape(t, {5}));
    Value y = b.multiply(b.add(x, x), x);
    Graph g = build_ok(b, {y});
    Literal arg = Literal::vector<float>({0.1f, -2.5f, 3.3f, 100.0f, 1e-3f}).convert(t).value();
    Literal got = run(*client, g, {arg})[0].convert(DType::kF32).value();
    Literal wide = arg.convert(DType::kF32).value();
    for (int i = 0; i < 5; ++i) {
      const float xi = wide.data<float>()[i];
      // Round after each op, as the spec's per-op semantics require.
      const float sum = Literal::scalar(xi + xi).convert(t).value().convert(DType::kF32).value().data<float>()[0];
      const float expect = Literal::scalar(sum * xi).convert(t).value().convert(DType::kF32).value().data<float>()[0];
      CHECK(got.data<float>()[i] == expect);
    }
  }
}

TEST_CASE("cpu executable: integer semantics without undefined behaviour") {
  auto client = make_client();
  GraphBuilder b("ints");
  Value x = b.parameter(Shape(DType::kS32, {4}));
  Value y = b.parameter(Shape(DType::kS32, {4}));
  Graph g = build_ok(b, {b.divide(x, y), b.remainder(x, y), b.add(x, x), b.shift_left(x, y), b.shift_right_arithmetic(x, y)});
  const std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  auto out = run(*client, g, {Literal::vector<std::int32_t>({7, kMin, -7, kMin}), Literal::vector<std::int32_t>({0, -1, 2, 40})});
  CHECK(out[0] == Literal::vector<std::int32_t>({-1, kMin, -3, kMin / 40}));
  CHECK(out[1] == Literal::vector<std::int32_t>({7, 0, -1, kMin % 40}));
  CHECK(out[2] == Literal::vector<std::int32_t>({14, 0, -14, 0}));      // wraps
  CHECK(out[3] == Literal::vector<std::int32_t>({7, 0, -28, 0}));       // -1 as a shift is huge: 0
  CHECK(out[4] == Literal::vector<std::int32_t>({7, -1, -2, -1}));      // sign fill
}

TEST_CASE("cpu executable: data movement ops") {
  auto client = make_client();
  Literal a = iota_literal<std::int32_t>({2, 3, 4});  // a[i][j][k] = 12 i + 4 j + k
  auto at = [](std::int64_t i, std::int64_t j, std::int64_t k) { return static_cast<std::int32_t>(12 * i + 4 * j + k); };

  SUBCASE("transpose") {
    GraphBuilder b("t");
    Value x = b.parameter(a.shape());
    Literal t = run(*client, build_ok(b, {b.transpose(x, {2, 0, 1})}), {a})[0];
    CHECK(t.shape() == Shape(DType::kS32, {4, 2, 3}));
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 4; ++k) CHECK(t.get<std::int32_t>({k, i, j}) == at(i, j, k));
  }
  SUBCASE("broadcast_in_dim") {
    GraphBuilder b("bcast");
    Value x = b.parameter(Shape(DType::kS32, {3, 1}));
    Literal t = run(*client, build_ok(b, {b.broadcast_in_dim(x, {2, 3, 5}, {1, 2})}), {iota_literal<std::int32_t>({3, 1})})[0];
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 5; ++k) CHECK(t.get<std::int32_t>({i, j, k}) == j);
  }
  SUBCASE("slice with strides, and reverse") {
    GraphBuilder b("slice");
    Value x = b.parameter(a.shape());
    auto out = run(*client, build_ok(b, {b.slice(x, {0, 1, 1}, {2, 3, 4}, {1, 1, 2}), b.reverse(x, {0, 2})}), {a});
    CHECK(out[0].shape() == Shape(DType::kS32, {2, 2, 2}));
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 2; ++j)
        for (std::int64_t k = 0; k < 2; ++k) CHECK(out[0].get<std::int32_t>({i, j, k}) == at(i, 1 + j, 1 + 2 * k));
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 4; ++k) CHECK(out[1].get<std::int32_t>({i, j, k}) == at(1 - i, j, 3 - k));
  }
  SUBCASE("concatenate") {
    GraphBuilder b("concat");
    Value x = b.parameter(a.shape());
    Value y = b.parameter(Shape(DType::kS32, {2, 1, 4}));
    Literal c = run(*client, build_ok(b, {b.concatenate({x, y, x}, 1)}), {a, iota_literal<std::int32_t>({2, 1, 4}, 100)})[0];
    CHECK(c.shape() == Shape(DType::kS32, {2, 7, 4}));
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t k = 0; k < 4; ++k) {
        CHECK(c.get<std::int32_t>({i, 2, k}) == at(i, 2, k));
        CHECK(c.get<std::int32_t>({i, 3, k}) == 100 + 4 * i + k);
        CHECK(c.get<std::int32_t>({i, 6, k}) == at(i, 2, k));
      }
  }
  SUBCASE("pad with negative edges and interior padding") {
    GraphBuilder b("pad");
    Value x = b.parameter(Shape(DType::kS32, {2, 3}));
    Value p = b.pad(x, b.constant(std::int32_t{-1}), {1, -1}, {0, 2}, {1, 1});
    // The spec's rule: operand (i, j) lands at (1 + 2 i, -1 + 2 j) when inside [0, 4) x [0, 6).
    Literal r = run(*client, build_ok(b, {p}), {iota_literal<std::int32_t>({2, 3})})[0];
    REQUIRE(r.shape() == Shape(DType::kS32, {4, 6}));
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 6; ++j) {
        std::int32_t expect = -1;
        if ((i - 1) % 2 == 0 && i >= 1 && (j + 1) % 2 == 0 && (j + 1) / 2 < 3) expect = static_cast<std::int32_t>(3 * ((i - 1) / 2) + (j + 1) / 2);
        CHECK(r.get<std::int32_t>({i, j}) == expect);
      }
  }
  SUBCASE("dynamic_slice and dynamic_update_slice clamp their starts") {
    GraphBuilder b("dyn");
    Value x = b.parameter(Shape(DType::kS32, {4, 5}));
    Value i = b.parameter(Shape(DType::kS64, {}));
    Value j = b.parameter(Shape(DType::kS64, {}));
    Value upd = b.parameter(Shape(DType::kS32, {2, 2}));
    Graph g = build_ok(b, {b.dynamic_slice(x, {i, j}, {2, 3}), b.dynamic_update_slice(x, upd, {i, j})});
    Literal m = iota_literal<std::int32_t>({4, 5});
    auto out = run(*client, g, {m, Literal::scalar<std::int64_t>(3), Literal::scalar<std::int64_t>(-7),
                                Literal::from_span<std::int32_t>(std::vector<std::int32_t>{-1, -2, -3, -4}, {2, 2}).value()});
    // Starts clamp to (2, 0) for the 2x3 slice and to (2, 0) for the 2x2 update.
    for (std::int64_t r = 0; r < 2; ++r)
      for (std::int64_t c = 0; c < 3; ++c) CHECK(out[0].get<std::int32_t>({r, c}) == 5 * (2 + r) + c);
    for (std::int64_t r = 0; r < 4; ++r)
      for (std::int64_t c = 0; c < 5; ++c) {
        const bool in = r >= 2 && c < 2;
        CHECK(out[1].get<std::int32_t>({r, c}) == (in ? -(1 + 2 * (r - 2) + c) : 5 * r + c));
      }
  }
  SUBCASE("iota and reshape") {
    GraphBuilder b("iota");
    Value i = b.iota(Shape(DType::kF32, {2, 3}), 1);
    Literal r = run(*client, build_ok(b, {b.reshape(i, {3, 2})}), {})[0];
    CHECK(r == Literal::from_span<float>(std::vector<float>{0, 1, 2, 0, 1, 2}, {3, 2}).value());
  }
}

TEST_CASE("cpu executable: a loop after a product runs in the product's blocks, with the loop's own bits") {
  // dot_general and convolution followed by an element-wise loop over their result (bias +
  // relu; an 8-bit product's requantization): the loop runs inside the product, block by
  // block. The oracle is the same program in two parts, the product alone and then the loop
  // on its result: the bits must be equal, on two threads and on one, and within rounding of
  // the reference interpreter (exactly, for the integer products).
  auto two = make_client(1);
  auto one = cpu::Client<>::create({.device_count = 1, .thread_count = 1}).value();
  std::mt19937_64 rng(21);
  auto dims_of = [](const Shape& s) { return std::vector<std::int64_t>(s.dims().begin(), s.dims().end()); };
  auto random = [&](DType t, const std::vector<std::int64_t>& dims) {
    Literal l(Shape(t, dims));
    if (t == kF32) {
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (float& v : l.data<float>()) v = u(rng);
    } else {
      for (std::byte& v : l.bytes()) v = static_cast<std::byte>(rng());
    }
    return l;
  };
  ConvolutionAttrs nhwc{.padding_low = {1, 1},
                        .padding_high = {1, 1},
                        .input_batch_dimension = 0,
                        .input_feature_dimension = 3,
                        .input_spatial_dimensions = {1, 2},
                        .kernel_input_feature_dimension = 2,
                        .kernel_output_feature_dimension = 3,
                        .kernel_spatial_dimensions = {0, 1},
                        .output_batch_dimension = 0,
                        .output_feature_dimension = 3,
                        .output_spatial_dimensions = {1, 2}};
  struct Case {
    std::string name;
    DType in;  // f32, or s8/u8 into s32 sums
    std::vector<std::int64_t> lhs, rhs;
    bool conv;
    bool transcendental = false;  // a tanh in the loop: it stays a kernel of its own
    std::int64_t groups = 1;      // a convolution's feature groups
  };
  // Under a sanitizer (-O0, where Eigen's GEMM and the reference run many times slower) the
  // f32 product is smaller; it still splits its rows across the threads.
  const std::int64_t f32_rows = testing::kUnderSanitizer ? 96 : 300, f32_cols = testing::kUnderSanitizer ? 64 : 130;
  const std::vector<Case> cases = {
      {"dot f32", kF32, {f32_rows, 200}, {200, f32_cols}, false},
      {"batched dot f32", kF32, {2, 64, 96}, {2, 96, 40}, false},
      {"conv f32", kF32, {2, 9, 10, 8}, {3, 3, 8, 32}, true},
      // Depthwise: 800 positions of 48 channels split across threads, the loop on each
      // block of positions.
      {"depthwise conv f32", kF32, {2, 20, 20, 48}, {3, 3, 1, 48}, true, false, 48},
      {"dot s8", kS8, {131, 601}, {601, 40}, false},
      {"dot u8", kU8, {64, 77}, {77, 48}, false},
      {"dot s8, wide (columns split across threads)", kS8, {24, 300}, {300, 200}, false},
      {"conv s8", kS8, {2, 12, 11, 24}, {3, 3, 24, 40}, true},
      {"dot f32, tanh", kF32, {40, 30}, {30, 20}, false, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const bool f32 = c.in == kF32;
    const DType sums = f32 ? kF32 : kS32;
    auto product = [&](GraphBuilder& b, Value x, Value w) {
      if (!f32) {
        x = b.convert(x, kS32);
        w = b.convert(w, kS32);
      }
      if (c.conv) {
        ConvolutionAttrs a = nhwc;
        a.feature_group_count = c.groups;
        return b.convolution(x, w, a);
      }
      return b.dot_general(x, w, matmul_dimensions(static_cast<std::int64_t>(c.lhs.size())));
    };
    // The loop: bias + relu (f32), or a requantization into s8 (the integer sums).
    auto loop = [&](GraphBuilder& b, Value p, Value bias) {
      const std::vector<std::int64_t> dims = dims_of(b.shape(p).value());
      const std::int64_t last = static_cast<std::int64_t>(dims.size()) - 1;
      if (f32) {
        Value y = b.add(p, b.broadcast_in_dim(bias, dims, {last}));
        if (c.transcendental) return b.tanh(y);
        return b.maximum(y, b.broadcast_in_dim(b.constant(0.0f), dims, {}));
      }
      Value y = b.multiply(b.convert(p, kF64), b.broadcast_in_dim(b.convert(bias, kF64), dims, {last}));
      y = b.add(y, b.broadcast_in_dim(b.constant(3.0), dims, {}));
      y = b.clamp(b.constant(-128.0), y, b.constant(127.0));
      return b.convert(b.round_nearest_even(y), kS8);
    };
    GraphBuilder b("fused");
    Value x = b.parameter(Shape(c.in, c.lhs)), w = b.parameter(Shape(c.in, c.rhs));
    const Shape sum_shape = b.shape(product(b, x, w)).value();
    const std::int64_t features = sum_shape.dim(sum_shape.rank() - 1);
    Value bias = b.parameter(Shape(kF32, {features}));
    Graph g = build_ok(b, {loop(b, product(b, x, w), bias)});
    GraphBuilder pb("product");
    Value px = pb.parameter(Shape(c.in, c.lhs)), pw = pb.parameter(Shape(c.in, c.rhs));
    Graph product_alone = build_ok(pb, {product(pb, px, pw)});
    GraphBuilder lb("loop");
    Value lp = lb.parameter(Shape(sums, dims_of(sum_shape)));
    Value lbias = lb.parameter(Shape(kF32, {features}));
    Graph loop_alone = build_ok(lb, {loop(lb, lp, lbias)});

    Literal xl = random(c.in, c.lhs), wl = random(c.in, c.rhs), bl = random(kF32, {features});
    if (!f32)  // scales that keep the requantized values mostly inside s8 (u8 sums are all positive)
      for (float& v : bl.data<float>()) v = c.in == kU8 ? 2e-5f + std::abs(v) * 6e-5f : 0.001f + std::abs(v) * 0.002f;
    const std::string listing = two->compile(g).value().optimized_program_text();
    CAPTURE(listing);
    CHECK(contains(listing, "then in its blocks") == !c.transcendental);
    for (auto* client : {two.get(), one.get()}) {
      const Literal sums_literal = run(*client, product_alone, {xl, wl})[0];
      const Literal want = run(*client, loop_alone, {sums_literal, bl})[0];
      const Literal got = run(*client, g, {xl, wl, bl})[0];
      if (c.transcendental) {
        CHECK(got.shape() == want.shape());
        continue;
      }
      CHECK(got == want);
    }
    // Under a sanitizer the reference checks only the products of up to 2^18 multiply-adds
    // (the u8 one and the tanh one: an integer and a float product, a requantization and a
    // bias loop); at -O0 the larger ones took most of the test in its loops. Their CPU paths
    // (f32 and 8-bit blocks of rows and depth, columns split across threads) all still ran
    // above on both clients, against the program in two parts.
    const std::int64_t depth = c.conv ? c.rhs[0] * c.rhs[1] * c.rhs[2] : c.lhs.back();
    if (testing::kUnderSanitizer && sum_shape.element_count() * depth > (std::int64_t{1} << 18)) continue;
    const Literal reference = evaluate_ok(g, {xl, wl, bl})[0];
    const Literal got = run(*two, g, {xl, wl, bl})[0];
    if (f32) {
      const auto r = reference.data<float>(), v = got.data<float>();
      REQUIRE(r.size() == v.size());
      float worst = 0;
      for (std::size_t i = 0; i < r.size(); ++i) worst = std::max(worst, std::abs(r[i] - v[i]));
      CHECK(worst < 1e-4f);
    } else {
      CHECK(got == reference);
      // Not all clamped: the requantization is exercised, not only its bounds.
      const auto q = got.data<std::int8_t>();
      CHECK(std::count_if(q.begin(), q.end(), [](std::int8_t v) { return v > -128 && v < 127; }) > static_cast<std::ptrdiff_t>(q.size() / 4));
    }
  }
}

TEST_CASE("cpu executable: 8-bit integer products multiply the 8-bit values, as naive loops do") {
  // dot_general of 32-bit integers whose operands are converts from s8 or u8 (StableHLO's
  // i8 x i8 -> i32) runs on the 8-bit values: odd depths and sizes off the register tile,
  // depths over one block, batches, contracting dimensions stored first, rows split across
  // threads; every case with each build of the kernels (the baseline's portable micro-kernel
  // and AVX2's), against a loop over the 8-bit literals.
  auto client = make_client();
  const std::vector<cpu::KernelIsa> isas = cpu::available_kernel_isas();
  std::mt19937_64 rng(8);
  struct Case {
    std::int64_t batch, m, k, n;
    bool lhs_k_first;
  };
  SUBCASE("random operands of every signedness, against loops") {
    // The last two are wide (more columns than rows): their columns split across threads.
    for (const Case& c : {Case{1, 1, 1, 1, false}, Case{1, 5, 7, 3, false}, Case{2, 9, 33, 17, true},
                          Case{1, 70, 601, 40, false}, Case{1, 131, 64, 48, true}, Case{3, 20, 2, 31, false},
                          Case{1, 16, 300, 200, false}, Case{2, 24, 70, 261, true}})
      for (DType lt : {kS8, kU8})
        for (DType rt : {kS8, kU8}) {
          const std::vector<std::int64_t> ldims = c.lhs_k_first ? std::vector<std::int64_t>{c.batch, c.k, c.m}
                                                                : std::vector<std::int64_t>{c.batch, c.m, c.k};
          const std::vector<std::int64_t> rdims = {c.batch, c.k, c.n};
          Literal xl(Shape(lt, ldims)), yl(Shape(rt, rdims));
          for (Literal* l : {&xl, &yl})
            for (std::byte& v : l->bytes()) v = static_cast<std::byte>(rng());
          // The operands' values, then their products summed by loops; the same 32 bits for
          // an s32 and a u32 result.
          auto values = [](const Literal& l) {
            std::vector<std::int64_t> out;
            for (std::byte b : l.bytes()) {
              const auto v = std::to_integer<std::uint8_t>(b);
              out.push_back(l.shape().dtype() == kS8 ? static_cast<std::int8_t>(v) : v);
            }
            return out;
          };
          const std::vector<std::int64_t> xv = values(xl), yv = values(yl);
          std::vector<std::uint32_t> want;
          for (std::int64_t bb = 0; bb < c.batch; ++bb)
            for (std::int64_t i = 0; i < c.m; ++i)
              for (std::int64_t j = 0; j < c.n; ++j) {
                std::int64_t acc = 0;
                for (std::int64_t p = 0; p < c.k; ++p) {
                  const std::int64_t li = c.lhs_k_first ? (bb * c.k + p) * c.m + i : (bb * c.m + i) * c.k + p;
                  acc += xv[static_cast<std::size_t>(li)] * yv[static_cast<std::size_t>((bb * c.k + p) * c.n + j)];
                }
                want.push_back(static_cast<std::uint32_t>(acc));
              }
          for (DType out : {kS32, kU32}) {
            CAPTURE(c.m);
            CAPTURE(c.k);
            CAPTURE(c.n);
            CAPTURE(dtype_name(lt));
            CAPTURE(dtype_name(rt));
            GraphBuilder b("i8dot");
            Value x = b.parameter(Shape(lt, ldims));
            Value y = b.parameter(Shape(rt, rdims));
            DotDimensionNumbers dims{{0}, {0}, {c.lhs_k_first ? 1 : 2}, {1}};
            Graph g = build_ok(b, {b.dot_general(b.convert(x, out), b.convert(y, out), dims)});
            for (cpu::KernelIsa isa : isas) {
              CAPTURE(cpu::kernel_isa_name(isa));
              cpu::CompileOptions options;
              options.kernel_isa = isa;
              auto exe = client->compile(g, options);
              REQUIRE(exe.ok());
              CHECK(contains(exe->optimized_program_text(), "dot_general(8-bit"));
              CHECK(contains(exe->optimized_program_text(), ": 1 kernels,"));  // no convert runs
              Literal r = run(*client, g, {xl, yl}, options)[0];
              std::vector<std::uint32_t> got(want.size());
              std::memcpy(got.data(), r.bytes().data(), got.size() * 4);
              CHECK(got == want);
            }
          }
        }
  }
  SUBCASE("a convert that something else reads still runs, and the product still reads 8 bits") {
    GraphBuilder b("shared");
    Value x = b.parameter(Shape(kS8, {4, 6}));
    Value y = b.parameter(Shape(kS8, {6, 3}));
    Value wide = b.convert(x, kS32);
    Graph g = build_ok(b, {b.dot(wide, b.convert(y, kS32)), wide});
    Literal xl = iota_literal<std::int8_t>({4, 6}, -12), yl = iota_literal<std::int8_t>({6, 3}, -9);
    auto out = run(*client, g, {xl, yl});
    CHECK(contains(client->compile(g).value().optimized_program_text(), "dot_general(8-bit"));
    CHECK(out[1] == xl.convert(kS32).value());
    CHECK(out[0] == evaluate_ok(g, {xl, yl})[0]);
  }
}

TEST_CASE("cpu executable: dot_general against naive loops") {
  auto client = make_client();
  SUBCASE("matmul, large enough to split across threads") {
    const std::int64_t m = 96, k = 80, n = 72;
    GraphBuilder b("mm");
    Value x = b.parameter(Shape(DType::kF64, {m, k}));
    Value y = b.parameter(Shape(DType::kF64, {k, n}));
    Graph g = build_ok(b, {b.dot(x, y)});
    Literal xl = iota_literal<double>({m, k}), yl = iota_literal<double>({k, n});
    for (double& v : xl.data<double>()) v = std::sin(v);
    for (double& v : yl.data<double>()) v = std::cos(v);
    Literal r = run(*client, g, {xl, yl})[0];
    // Row-major operands and result, read through their spans: Literal::get recomputes the
    // layout for every element.
    REQUIRE(r.shape() == Shape(DType::kF64, {m, n}));
    const auto xs = xl.data<double>(), ys = yl.data<double>(), rs = r.data<double>();
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::int64_t p = 0; p < k; ++p)
          acc += xs[static_cast<std::size_t>(i * k + p)] * ys[static_cast<std::size_t>(p * n + j)];
        REQUIRE(rs[static_cast<std::size_t>(i * n + j)] == doctest::Approx(acc).epsilon(1e-12));
      }
    CHECK(client->compile(g).value().cost_analysis().flops == 2.0 * m * n * k);
  }
  SUBCASE("batched, contracting over a leading dimension") {
    // lhs [b=2, k=3, m=4], rhs [k=3, b=2, n=5]: out[b, m, n] = sum_k lhs[b, k, m] * rhs[k, b, n].
    GraphBuilder b("bmm");
    Value x = b.parameter(Shape(DType::kS32, {2, 3, 4}));
    Value y = b.parameter(Shape(DType::kS32, {3, 2, 5}));
    DotDimensionNumbers dims{{0}, {1}, {1}, {0}};
    Literal xl = iota_literal<std::int32_t>({2, 3, 4}), yl = iota_literal<std::int32_t>({3, 2, 5}, -10);
    Literal r = run(*client, build_ok(b, {b.dot_general(x, y, dims)}), {xl, yl})[0];
    REQUIRE(r.shape() == Shape(DType::kS32, {2, 4, 5}));
    for (std::int64_t bb = 0; bb < 2; ++bb)
      for (std::int64_t i = 0; i < 4; ++i)
        for (std::int64_t j = 0; j < 5; ++j) {
          std::int32_t acc = 0;
          for (std::int64_t p = 0; p < 3; ++p) acc += xl.get<std::int32_t>({bb, p, i}) * yl.get<std::int32_t>({p, bb, j});
          CHECK(r.get<std::int32_t>({bb, i, j}) == acc);
        }
  }
  SUBCASE("operands stored transposed, as a backward pass has them") {
    // Every combination of a left operand stored [batch, K, M] or [batch, M, K] and a right
    // operand stored [batch, N, K] or [batch, K, N], with blocks of two dimensions, large
    // enough to split across threads; against naive loops over the logical indices.
    const std::int64_t bs = 2, m0 = 8, m1 = 8, k0 = 8, k1 = 8, n = 64;
    for (bool lt : {false, true})
      for (bool rt : {false, true})
        for (DType t : {DType::kF32, DType::kF64}) {
          CAPTURE(lt);
          CAPTURE(rt);
          GraphBuilder b("tdot");
          // lhs logical dims: batch 0, m0, m1, k0, k1; stored with the K block first when lt.
          const std::vector<std::int64_t> lhs_dims = lt ? std::vector<std::int64_t>{bs, k0, k1, m0, m1}
                                                        : std::vector<std::int64_t>{bs, m0, m1, k0, k1};
          const std::vector<std::int64_t> rhs_dims = rt ? std::vector<std::int64_t>{bs, n, k0, k1}
                                                        : std::vector<std::int64_t>{bs, k0, k1, n};
          Value x = b.parameter(Shape(t, lhs_dims));
          Value y = b.parameter(Shape(t, rhs_dims));
          DotDimensionNumbers dims{{0}, {0}, lt ? std::vector<std::int64_t>{1, 2} : std::vector<std::int64_t>{3, 4},
                                   rt ? std::vector<std::int64_t>{2, 3} : std::vector<std::int64_t>{1, 2}};
          Literal xl = iota_literal<double>(lhs_dims), yl = iota_literal<double>(rhs_dims);
          for (double& v : xl.data<double>()) v = std::sin(v);
          for (double& v : yl.data<double>()) v = std::cos(v);
          Literal r = run(*client, build_ok(b, {b.dot_general(x, y, dims)}), {xl.convert(t).value(), yl.convert(t).value()})[0];
          REQUIRE(r.shape() == Shape(t, {bs, m0, m1, n}));
          Literal rd = r.convert(DType::kF64).value();
          // Row-major, read through the spans (Literal::get recomputes the layout each time).
          const auto xs = xl.data<double>(), ys = yl.data<double>(), rs = rd.data<double>();
          for (std::int64_t bb = 0; bb < bs; ++bb)
            for (std::int64_t i0 = 0; i0 < m0; ++i0)
              for (std::int64_t i1 = 0; i1 < m1; ++i1)
                for (std::int64_t j = 0; j < n; ++j) {
                  double acc = 0;
                  for (std::int64_t p0 = 0; p0 < k0; ++p0)
                    for (std::int64_t p1 = 0; p1 < k1; ++p1) {
                      const std::int64_t li = lt ? (((bb * k0 + p0) * k1 + p1) * m0 + i0) * m1 + i1
                                                 : (((bb * m0 + i0) * m1 + i1) * k0 + p0) * k1 + p1;
                      const std::int64_t ri = rt ? ((bb * n + j) * k0 + p0) * k1 + p1
                                                 : ((bb * k0 + p0) * k1 + p1) * n + j;
                      acc += xs[static_cast<std::size_t>(li)] * ys[static_cast<std::size_t>(ri)];
                    }
                  REQUIRE(rs[static_cast<std::size_t>(((bb * m0 + i0) * m1 + i1) * n + j)] ==
                          doctest::Approx(acc).epsilon(t == DType::kF32 ? 1e-5 : 1e-12));
                }
        }
  }
}

TEST_CASE("cpu executable: GEMM packing buffers planned at compile time fit every product up to their rows") {
  using namespace cpu::detail;
  // Eigen's blocking is not monotone in the row count; the plan must hold every product a
  // worker can be handed (1..max_rows rows), or the kernel falls back to an allocating path.
  auto misses = [](auto tag) {
    using C = typename decltype(tag)::type;
    std::int64_t missed = 0, products = 0;
    for (std::int64_t cols : {2, 17, 64, 256, 1024, 4096})
      for (std::int64_t depth : {1, 48, 64, 576, 1024, 5000})
        for (std::int64_t max_rows : {20, 1820, 4096}) {
          std::int64_t bytes = 0;
          const GemmScratch plan = GemmScratch::plan<C>(max_rows, cols, depth, 1, bytes);
          for (std::int64_t rows = 1; rows <= max_rows; rows += rows < 200 ? 1 : 7) {
            if (!gemm_packs<C>(rows, cols, depth)) continue;
            ++products;
            missed += !plan.fits<C>(rows, cols, depth);
          }
        }
    CHECK(products > 10000);
    return missed;
  };
  // f32 and f64 products run on PanelGemm, whose scratch depends on the columns and depth
  // alone; the products that keep Eigen's blocking are complex and integer ones.
  CHECK(misses(std::type_identity<std::complex<float>>()) == 0);
  CHECK(misses(std::type_identity<std::complex<double>>()) == 0);
  CHECK(misses(std::type_identity<unsigned>()) == 0);

  // And the product in planned buffers equals the naive sums, split across two workers'
  // slices, with row-major and column-major (transposed) operands.
  const std::int64_t m = 300, n = 200, k = 500;
  std::int64_t bytes = 0;
  const GemmScratch plan = GemmScratch::plan<double>(m, n, k, 2, bytes);
  REQUIRE(plan.slice_bytes > 0);
  pjrt_lite::detail::AlignedBytes scratch = pjrt_lite::detail::allocate_aligned(static_cast<std::size_t>(bytes));
  std::vector<double> a(m * k), b(k * n), at(k * m), bt(n * k), c(m * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) at[static_cast<std::size_t>(j * m + i)] = a[static_cast<std::size_t>(i * k + j)] = std::sin(0.1 * double(i * k + j));
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j) bt[static_cast<std::size_t>(j * k + i)] = b[static_cast<std::size_t>(i * n + j)] = std::cos(0.07 * double(i * n + j));
  // The naive sums, once, through plain pointers (at -O0 every index into a vector is a
  // function call).
  std::vector<double> sums(m * n);
  const double *ap = a.data(), *bp = b.data();
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t t = 0; t < k; ++t) acc += ap[i * k + t] * bp[t * n + j];
      sums[static_cast<std::size_t>(i * n + j)] = acc;
    }
  auto worst = [&] {
    double w = 0;
    for (std::size_t i = 0; i < sums.size(); ++i) w = std::max(w, std::abs(sums[i] - c[i]));
    return w;
  };
  const std::int64_t split = 113;
  gemm_into<double>(split, n, k, a.data(), k, b.data(), n, c.data(), n, plan, plan.slice(scratch.get(), 0));
  gemm_into<double>(m - split, n, k, a.data() + split * k, k, b.data(), n, c.data() + split * n, n, plan,
                    plan.slice(scratch.get(), 1));
  CHECK(worst() <= 1e-11);
  std::fill(c.begin(), c.end(), 99.0);  // the product overwrites, it does not accumulate
  gemm_into<double, true, true>(m, n, k, at.data(), m, bt.data(), k, c.data(), n, plan, plan.slice(scratch.get(), 1));
  CHECK(worst() <= 1e-11);
  CHECK(plan.slice(scratch.get(), 2) == nullptr);  // no third worker was planned
}

TEST_CASE("cpu executable: the panel GEMM equals the naive sums at every edge, and a split by rows or columns keeps its bits") {
  using namespace cpu::detail;
  // Strips of fewer rows than the micro-kernel's, panels of fewer columns, depths across one
  // or more blocks, operands row- and column-major, b read in place (few rows) and packed.
  auto check = [](auto tag) {
    using C = typename decltype(tag)::type;
    using G = PanelGemm<C>;
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> dist(-1, 1);
    std::int64_t products = 0;
    const std::int64_t ms[] = {2, G::kMr - 1, G::kMr + 1, G::kPackRows - 1, G::kPackRows + 1, 4 * G::kMr + 3};
    const std::int64_t ns[] = {3, G::kNr, G::kNr + 1, G::kNc + 2 * G::kNr + 5};
    const std::int64_t ks[] = {1, G::kKc - 1, G::kKc + 1, 2 * G::kKc + 9};
    for (std::int64_t m : ms)
      for (std::int64_t n : ns)
        for (std::int64_t k : ks) {
          std::vector<C> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
          for (C& x : a) x = static_cast<C>(dist(gen));
          for (C& x : b) x = static_cast<C>(dist(gen));
          std::vector<C> at(a.size()), bt(b.size());  // the column-major copies
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t t = 0; t < k; ++t) at[static_cast<std::size_t>(t * m + i)] = a[static_cast<std::size_t>(i * k + t)];
          for (std::int64_t t = 0; t < k; ++t)
            for (std::int64_t j = 0; j < n; ++j) bt[static_cast<std::size_t>(j * k + t)] = b[static_cast<std::size_t>(t * n + j)];
          std::vector<double> sums(static_cast<std::size_t>(m * n)), bound(sums.size());
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j)
              for (std::int64_t t = 0; t < k; ++t) {
                const double p = double(a[static_cast<std::size_t>(i * k + t)]) * double(b[static_cast<std::size_t>(t * n + j)]);
                sums[static_cast<std::size_t>(i * n + j)] += p;
                bound[static_cast<std::size_t>(i * n + j)] += std::abs(p);
              }
          std::vector<C> scratch(static_cast<std::size_t>(G::scratch_elements(n, k)));
          const double eps = std::numeric_limits<C>::epsilon() * double(k + 2);
          auto run = [&]<bool kLhsColumns, bool kRhsColumns>(std::int64_t r0, std::int64_t r1, std::int64_t j0,
                                                              std::int64_t j1, std::vector<C>& c) {
            const C* ap = kLhsColumns ? at.data() + r0 : a.data() + r0 * k;
            const C* bp = kRhsColumns ? bt.data() + j0 * k : b.data() + j0;
            G::template run<kLhsColumns, kRhsColumns>(r1 - r0, j1 - j0, k, ap, kLhsColumns ? m : k, bp,
                                                       kRhsColumns ? k : n, c.data() + r0 * n + j0, n, scratch.data());
          };
          auto layouts = [&]<bool kLhsColumns, bool kRhsColumns>() {
            std::vector<C> whole(sums.size(), C(99)), parts(sums.size(), C(-99));
            run.template operator()<kLhsColumns, kRhsColumns>(0, m, 0, n, whole);
            std::int64_t worst = 0;
            for (std::size_t i = 0; i < sums.size(); ++i)
              worst += !(std::abs(double(whole[i]) - sums[i]) <= eps * bound[i]);
            CHECK_MESSAGE(worst == 0, m, "x", n, "x", k, " layouts ", kLhsColumns, kRhsColumns);
            // Four calls, cut at a row and a column that fall inside a strip and a panel.
            const std::int64_t rc = m / 2 + 1, jc = std::min<std::int64_t>(n - 1, G::kNr / 2 + 1);
            run.template operator()<kLhsColumns, kRhsColumns>(0, rc, 0, jc, parts);
            run.template operator()<kLhsColumns, kRhsColumns>(0, rc, jc, n, parts);
            run.template operator()<kLhsColumns, kRhsColumns>(rc, m, 0, jc, parts);
            run.template operator()<kLhsColumns, kRhsColumns>(rc, m, jc, n, parts);
            CHECK_MESSAGE(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(C)) == 0, m, "x", n, "x", k);
            ++products;
          };
          layouts.template operator()<false, false>();
          layouts.template operator()<false, true>();
          layouts.template operator()<true, false>();
          layouts.template operator()<true, true>();
        }
    CHECK(products == 6 * 4 * 4 * 4);
  };
  check(std::type_identity<float>());
  check(std::type_identity<double>());
}

TEST_CASE("cpu executable: reductions") {
  auto client = make_client();
  Literal a = iota_literal<float>({3, 4, 5});
  auto sum_over = [&](std::vector<std::int64_t> dims) {
    GraphBuilder b("sum");
    Value x = b.parameter(a.shape());
    return run(*client, build_ok(b, {b.reduce(x, b.constant(0.0f), OpCode::kAdd, dims)}), {a})[0];
  };
  Literal s1 = sum_over({1});
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t k = 0; k < 5; ++k) CHECK(s1.get<float>({i, k}) == float(4 * 20 * i + (0 + 5 + 10 + 15) + 4 * k));
  Literal s02 = sum_over({0, 2});  // not adjacent: transposed first
  for (std::int64_t j = 0; j < 4; ++j) {
    float expect = 0;
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t k = 0; k < 5; ++k) expect += float(20 * i + 5 * j + k);
    CHECK(s02.get<float>({j}) == expect);
  }
  CHECK(sum_over({0, 1, 2}).get<float>({}) == float(59 * 60 / 2));

  SUBCASE("max propagates NaN; an empty reduction gives the init value") {
    GraphBuilder b("max");
    Value x = b.parameter(Shape(DType::kF32, {2, 3}));
    Value e = b.parameter(Shape(DType::kF32, {0, 3}));
    Value lowest = b.constant(-std::numeric_limits<float>::infinity());
    Graph g = build_ok(b, {b.reduce(x, lowest, OpCode::kMaximum, {1}), b.reduce(e, b.constant(-0.0f), OpCode::kAdd, {0})});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto out = run(*client, g, {Literal::from_span<float>(std::vector<float>{1, nan, 3, -4, -5, -6}, {2, 3}).value(),
                                Literal(Shape(DType::kF32, {0, 3}))});
    CHECK(std::isnan(out[0].get<float>({0})));
    CHECK(out[0].get<float>({1}) == -4.0f);
    CHECK(out[1] == Literal::vector<float>({-0.0f, -0.0f, -0.0f}));
  }
  SUBCASE("variadic argmax: first index of the maximum") {
    GraphBuilder b("argmax");
    Value x = b.parameter(Shape(DType::kS32, {2, 5}));
    auto am = b.argmax(x, 1, DType::kS32);
    auto out = run(*client, build_ok(b, {am[0], am[1]}),
                   {Literal::from_span<std::int32_t>(std::vector<std::int32_t>{3, 9, 1, 9, 0, -5, -2, -8, -2, -9}, {2, 5}).value()});
    CHECK(out[0] == Literal::vector<std::int32_t>({9, -2}));
    CHECK(out[1] == Literal::vector<std::int32_t>({1, 1}));
  }
}

TEST_CASE("cpu executable: outputs that are parameters, constants or repeated") {
  auto client = make_client();
  GraphBuilder b("outs");
  Value x = b.parameter(Shape(DType::kU8, {3}));
  Value c = b.constant(Literal::vector<std::uint8_t>({7, 8, 9}));
  Value y = b.add(x, c);
  auto out = run(*client, build_ok(b, {x, c, y, y, b.reshape(y, {3, 1})}), {Literal::vector<std::uint8_t>({1, 2, 250})});
  CHECK(out[0] == Literal::vector<std::uint8_t>({1, 2, 250}));
  CHECK(out[1] == Literal::vector<std::uint8_t>({7, 8, 9}));
  CHECK(out[2] == Literal::vector<std::uint8_t>({8, 10, 3}));
  CHECK(out[3] == out[2]);
  CHECK(out[4] == Literal::from_span<std::uint8_t>(std::vector<std::uint8_t>{8, 10, 3}, {3, 1}).value());
}

TEST_CASE("cpu executable: temporaries share arena space when their lifetimes allow") {
  auto client = make_client();
  GraphBuilder b("arena");
  Value x = b.parameter(Shape(DType::kF32, {64, 64}));
  Value t = x;
  for (int i = 0; i < 6; ++i) t = b.transpose(b.exponential(t), {1, 0});  // each step a temporary
  auto exe = client->compile(build_ok(b, {t})).value();
  const auto& stats = exe.memory_stats();
  CHECK(stats.argument_bytes == 64 * 64 * 4);
  CHECK(stats.output_bytes == 64 * 64 * 4);
  // 11 temporaries of 16 KiB are alive at most two at a time, plus loop scratch.
  CHECK(stats.temp_bytes < 6 * 64 * 64 * 4);
  CHECK(stats.temp_bytes - stats.scratch_bytes >= 64 * 64 * 4);  // transposes do not fuse
  CHECK(stats.scratch_bytes >= 0);
}

TEST_CASE("cpu executable: a slice stride larger than its dimension, as the reference") {
  // Found by fuzzing the deserializer: the byte stride of a dimension with one result element
  // was the slice stride times the input's, which overflowed for a huge stride.
  auto client = make_client();
  GraphBuilder b("wide_stride");
  Value x = b.parameter(Shape(DType::kS16, {3, 4}));
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 2;
  Graph g = build_ok(b, {b.slice(x, {1, 0}, {3, 4}, {huge, 3})});
  CHECK(g.shape(g.outputs()[0]).dims()[0] == 1);
  const std::vector<Literal> args = {
      Literal::from_span<std::int16_t>(std::vector<std::int16_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4})
          .value()};
  auto got = run(*client, g, args);
  auto want = reference::evaluate(g, args);
  REQUIRE(want.ok());
  CHECK(got[0] == (*want)[0]);
  CHECK(got[0] == Literal::from_span<std::int16_t>(std::vector<std::int16_t>{4, 7}, {1, 2}).value());
}

TEST_CASE("cpu executable: a fully fused program has no temporaries, only its loop's scratch") {
  auto client = make_client();
  GraphBuilder b("fused");
  Value x = b.parameter(Shape(DType::kF32, {4096}));
  Value y = b.parameter(Shape(DType::kF32, {4096}));
  Value t = b.tanh(b.add(b.multiply(x, y), b.exponential(b.negate(x))));
  const Graph g = build_ok(b, {t, b.multiply(t, y)});
  auto exe = client->compile(g).value();
  const auto& stats = exe.memory_stats();
  CHECK(stats.scratch_bytes > 0);
  CHECK(stats.temp_bytes == stats.scratch_bytes);
  auto unfused = client->compile(g, {.fuse = false}).value();
  CHECK(unfused.memory_stats().temp_bytes - unfused.memory_stats().scratch_bytes >= 4096 * 4);
}

TEST_CASE("cpu executable: the three doors and the devices they run on") {
  auto client = make_client(3);
  GraphBuilder b("double");
  Value x = b.parameter(Shape(DType::kS64, {2}));
  Graph g = build_ok(b, {b.add(x, x)});
  auto exe = client->compile(g, {.device_ids = {0, 2}}).value();
  REQUIRE(exe.addressable_devices().size() == 2);
  auto a0 = client->buffer_from_literal(Literal::vector<std::int64_t>({1, 2}), client->devices()[0]->memory_spaces()[0]).value();
  auto a2 = client->buffer_from_literal(Literal::vector<std::int64_t>({5, 6}), client->devices()[2]->memory_spaces()[0]).value();
  std::vector<std::vector<cpu::Buffer<>*>> per_device = {{&a0}, {&a2}};
  auto all = exe.execute(per_device).value();
  REQUIRE(all.size() == 2);
  CHECK(all[0][0].device() == client->devices()[0]);
  CHECK(all[1][0].device() == client->devices()[2]);
  CHECK(all[1][0].to_literal().await().value() == Literal::vector<std::int64_t>({10, 12}));

  cpu::Buffer<>* args2[] = {&a2};
  CHECK(exe.execute_sharded(args2, client->devices()[2]).value()[0].to_literal().await().value() ==
        Literal::vector<std::int64_t>({10, 12}));
  Status not_addressable = exe.execute_sharded(args2, client->devices()[1]).status();
  CHECK(contains(not_addressable.message(), "cpu:1 is not one of the executable's addressable devices"));
  CHECK(contains(exe.execute_portable(args2, client->devices()[2]).status().message(), "portable execution needs one"));

  auto single = client->compile(g).value();
  auto a1 = client->buffer_from_literal(Literal::vector<std::int64_t>({-1, 4}), client->devices()[1]->memory_spaces()[0]).value();
  cpu::Buffer<>* args1[] = {&a1};
  auto portable = single.execute_portable(args1, client->devices()[1]).value();
  CHECK(portable[0].device() == client->devices()[1]);
  CHECK(portable[0].to_literal().await().value() == Literal::vector<std::int64_t>({-2, 8}));
  auto again = client->compile(g, {.device_ids = {0, 2}}).value();
  CHECK(client->compile_cache_stats().first == 1);  // the same graph and options: a cache hit
}

TEST_CASE("cpu executable: arguments listed in place, and execute on a one-device executable") {
  auto client = make_client(2);
  cpu::Device<>* d0 = client->devices()[0];
  cpu::Device<>* d1 = client->devices()[1];
  GraphBuilder b("difference");
  Value x = b.parameter(Shape(DType::kS64, {2}));
  Value y = b.parameter(Shape(DType::kS64, {2}));
  Graph g = build_ok(b, {b.subtract(x, y)});  // not symmetric: swapped arguments would show
  auto exe = require_ok(client->compile(g));  // loaded on device 0
  auto a = client->buffer_from_literal(Literal::vector<std::int64_t>({10, 20})).value();
  auto c = client->buffer_from_literal(Literal::vector<std::int64_t>({1, 2})).value();
  const Literal a_minus_c = Literal::vector<std::int64_t>({9, 18});
  auto value = [](const cpu::Buffer<>& out) { return out.to_literal().await().value(); };

  // execute_sharded and execute_portable take a braced list of buffer pointers.
  auto sharded = require_ok(exe.execute_sharded({&a, &c}, d0));
  CHECK(value(sharded.at(0)) == a_minus_c);
  auto a1 = client->buffer_from_literal(Literal::vector<std::int64_t>({10, 20}), d1->memory_spaces()[0]).value();
  auto c1 = client->buffer_from_literal(Literal::vector<std::int64_t>({1, 2}), d1->memory_spaces()[0]).value();
  auto portable = require_ok(exe.execute_portable({&a1, &c1}, d1));
  CHECK(portable.at(0).device() == d1);
  CHECK(value(portable.at(0)) == a_minus_c);

  // execute with one argument list runs on the executable's one device.
  static_assert(std::is_same_v<decltype(exe.execute({&a, &c})), StatusOr<std::vector<cpu::Buffer<>>>>);
  auto single = require_ok(exe.execute({&a, &c}));
  REQUIRE(single.size() == 1);
  CHECK(single[0].device() == d0);
  CHECK(value(single[0]) == a_minus_c);
  std::vector<cpu::Buffer<>*> swapped = {&c, &a};
  CHECK(value(exe.execute(swapped).value().at(0)) == Literal::vector<std::int64_t>({-9, -18}));
  // Options pass through: a donated argument is deleted.
  auto donated = client->buffer_from_literal(Literal::vector<std::int64_t>({10, 20})).value();
  auto after_donation = require_ok(exe.execute({&donated, &c}, {.donated_arguments = {0}}));
  CHECK(donated.is_deleted());
  CHECK(value(after_donation.at(0)) == a_minus_c);
  // The per-device form is unchanged: one list per device, a list of outputs per device.
  std::vector<std::vector<cpu::Buffer<>*>> lists = {{&a, &c}};
  auto per_device = require_ok(exe.execute(lists));
  CHECK(value(per_device.at(0).at(0)) == a_minus_c);

  // The listed form reports the span form's errors.
  check_error(exe.execute_sharded({&a}, d0), StatusCode::kInvalidArgument, "1 arguments given, the program takes 2");
  check_error(exe.execute({&a, nullptr}), StatusCode::kInvalidArgument, "argument 1 is null");
  // An executable on two devices wants a list per device, and says so.
  auto both = require_ok(client->compile(g, {.device_ids = {0, 1}}));
  check_error(both.execute({&a, &c}), StatusCode::kInvalidArgument, "execute: the executable is loaded on 2 devices");
}

TEST_CASE("cpu executable: executing into the same result list reuses the previous outputs' memory") {
  // y = x * 3 + step over 64K f32, run on the caller (synchronous, and the default mode for a
  // program this small) and handed to a worker (asynchronous).
  constexpr std::int64_t kN = 1 << 16;
  auto client = make_client(1);
  GraphBuilder b("scale");
  Value x = b.parameter(Shape(DType::kF32, {kN}));
  Value step = b.parameter(Shape(DType::kF32, {}));
  Graph g = build_ok(b, {b.add(b.multiply(x, b.broadcast_in_dim(b.constant(3.0f), {kN}, {})),
                               b.broadcast_in_dim(step, {kN}, {}))});
  auto exe = require_ok(client->compile(g));
  std::vector<float> xs(kN);
  for (std::int64_t i = 0; i < kN; ++i) xs[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) - 48.0f;
  auto xb = client->buffer_from_host_buffer(std::span<const float>(xs), std::vector<std::int64_t>{kN}).value();
  auto data_of = [](const cpu::Buffer<>& buffer) { return buffer.acquire_external_reference().value().data(); };
  auto require = [](const Status& s) { REQUIRE_MESSAGE(s.ok(), s.to_string()); };

  for (ExecutionMode mode : {ExecutionMode::kSynchronous, ExecutionMode::kDefault, ExecutionMode::kAsynchronous}) {
    CAPTURE(static_cast<int>(mode));
    std::vector<cpu::Buffer<>> results;
    std::set<const void*> homes;
    ExecuteOptions options;
    options.mode = mode;
    for (int i = 0; i < 6; ++i) {
      auto sb = client->buffer_from_literal(Literal::scalar(static_cast<float>(i))).value();
      cpu::Buffer<>* args[] = {&xb, &sb};
      require(exe.execute_sharded(args, client->devices()[0], options, results));
      REQUIRE(results.size() == 1);
      require(results[0].get_ready_future().await());
      homes.insert(data_of(results[0]));
      std::vector<float> got(kN);
      require(results[0].copy_raw_to_host(got.data(), 0, kN * 4).await());
      for (std::int64_t j = 0; j < kN; j += 997)
        CHECK(got[static_cast<std::size_t>(j)] == xs[static_cast<std::size_t>(j)] * 3.0f + static_cast<float>(i));
    }
    // The first run's output memory backs every later one.
    CHECK(homes.size() == 1);
  }

  // An argument that is one of the previous results stays valid: the list is cleared only
  // once the arguments are held, and the new output cannot take that memory.
  std::vector<cpu::Buffer<>> results;
  auto zero = client->buffer_from_literal(Literal::scalar(0.0f)).value();
  cpu::Buffer<>* first_args[] = {&xb, &zero};
  require(exe.execute_sharded(first_args, client->devices()[0], {}, results));
  const void* previous = data_of(results.at(0));
  cpu::Buffer<>* fed_back[] = {&results[0], &zero};
  require(exe.execute_sharded(fed_back, client->devices()[0], {}, results));
  REQUIRE(results.size() == 1);
  CHECK(data_of(results[0]) != previous);
  std::vector<float> got(kN);
  require(results[0].copy_raw_to_host(got.data(), 0, kN * 4).await());
  for (std::int64_t j = 0; j < kN; j += 997)
    CHECK(got[static_cast<std::size_t>(j)] == xs[static_cast<std::size_t>(j)] * 9.0f);
}

TEST_CASE("cpu executable: a traced executable takes the same listed arguments, one record per call") {
  using Recorded = Traced<cpu::Client<>, trace::RecordingSink>;
  auto client = Recorded::create(cpu::ClientOptions{.device_count = 1, .thread_count = 2}).value();
  GraphBuilder b("difference");
  Value x = b.parameter(Shape(DType::kS64, {2}));
  Value y = b.parameter(Shape(DType::kS64, {2}));
  auto exe = require_ok(client->compile(build_ok(b, {b.subtract(x, y)})));
  auto a = client->buffer_from_literal(Literal::vector<std::int64_t>({10, 20})).value();
  auto c = client->buffer_from_literal(Literal::vector<std::int64_t>({1, 2})).value();
  Recorded::device_type* d0 = client->devices()[0];
  // Nothing for the place: the default memory space, through the traced client too.
  const std::vector<std::int64_t> host = {3, 4};
  const std::int64_t dims[] = {2};
  auto e = client->buffer_from_host_buffer(std::as_bytes(std::span(host)), DType::kS64, dims, std::nullopt,
                                           HostBufferSemantics::kImmutableOnlyDuringCall, nullptr, nullptr).value();
  CHECK(e.memory_space() == client->devices()[0]->default_memory_space().value());
  client->sink().take();
  const Literal a_minus_c = Literal::vector<std::int64_t>({9, 18});
  CHECK(exe.execute_sharded({&a, &c}, d0).value().at(0).inner().to_literal().await().value() == a_minus_c);
  CHECK(exe.execute_portable({&a, &c}, d0).value().at(0).inner().to_literal().await().value() == a_minus_c);
  CHECK(exe.execute({&a, &c}).value().at(0).inner().to_literal().await().value() ==
        Literal::vector<std::int64_t>({9, 18}));
  CHECK(exe.execute({&e, &c}).value().at(0).inner().to_literal().await().value() ==
        Literal::vector<std::int64_t>({2, 2}));
  std::vector<std::string> methods;
  for (const auto& r : client->sink().records()) methods.push_back(r.method);
  CHECK(methods == std::vector<std::string>{"execute_sharded", "execute_portable", "execute", "execute"});
}

TEST_CASE("cpu executable: bad execute calls get a clear status") {
  auto client = make_client();
  auto other = make_client(1);
  GraphBuilder b("addxy");
  Value x = b.parameter(Shape(DType::kF32, {2}));
  Value y = b.parameter(Shape(DType::kF32, {2}));
  auto exe = client->compile(build_ok(b, {b.add(x, y)})).value();
  auto good = client->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  auto wrong_shape = client->buffer_from_literal(Literal::vector<float>({1, 2, 3})).value();
  auto wrong_dtype = client->buffer_from_literal(Literal::vector<double>({1, 2})).value();
  auto on_device1 = client->buffer_from_literal(Literal::vector<float>({1, 2}), client->devices()[1]->memory_spaces()[0]).value();
  auto foreign = other->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  cpu::Device<>* d0 = client->devices()[0];
  auto expect = [&](std::vector<cpu::Buffer<>*> args, std::string_view message, ExecuteOptions options = {}) {
    Status s = exe.execute_sharded(args, d0, options).status();
    CHECK_MESSAGE(contains(s.message(), message), s.to_string());
    CHECK_FALSE(s.ok());
  };
  expect({&good}, "1 arguments given, the program takes 2");
  expect({&good, &wrong_shape}, "argument 1 has shape f32[3] but parameter 1 takes f32[2]");
  expect({&wrong_dtype, &good}, "argument 0 has shape f64[2] but parameter 0 takes f32[2]");
  expect({&good, &on_device1}, "argument 1 is on cpu:1 but the execution runs on cpu:0");
  expect({&foreign, &good}, "argument 0 belongs to another client");
  expect({&good, nullptr}, "argument 1 is null");
  expect({&good, &good}, "argument 0 is donated but is also passed as argument 1", {.donated_arguments = {0}});
  expect({&good, &good}, "donated_arguments[0] = 2 is not an argument index (0..1)", {.donated_arguments = {2}});
  CHECK_FALSE(good.is_deleted());  // a rejected call donates nothing
  auto deleted = client->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  deleted.delete_buffer();
  Status s = exe.execute_sharded(std::vector<cpu::Buffer<>*>{&good, &deleted}, d0).status();
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(contains(s.message(), "argument 1: buffer f32[2] on cpu:0/device has been deleted or donated"));
  exe.delete_executable();
  CHECK(exe.execute_sharded(std::vector<cpu::Buffer<>*>{&good, &good}, d0).status().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("cpu executable: a donated argument is deleted and its memory backs the output") {
  auto client = make_client();
  GraphBuilder b("inplace");
  Value x = b.parameter(Shape(DType::kF32, {1000}));
  Value y = b.parameter(Shape(DType::kF32, {1000}));
  auto exe = client->compile(build_ok(b, {b.add(b.multiply(x, y), x)})).value();
  CHECK(exe.donation_targets()[0] == 0);
  auto xb = client->buffer_from_literal(iota_literal<float>({1000})).value();
  auto yb = client->buffer_from_literal(iota_literal<float>({1000}, 1.0f)).value();
  const void* x_memory = cpu::detail::BufferAccess::acquire(xb, "test").value().memory->data;
  cpu::Buffer<>* args[] = {&xb, &yb};
  auto out = exe.execute_sharded(args, client->devices()[0], {.donated_arguments = {0}}).value();
  CHECK(xb.is_deleted());
  CHECK_FALSE(yb.is_deleted());
  CHECK(out[0].acquire_external_reference().value().data() == x_memory);
  Literal r = out[0].to_literal().await().value();
  for (int i = 0; i < 1000; ++i) CHECK(r.data<float>()[i] == float(i) * float(i + 1) + float(i));
  Status again = exe.execute_sharded(args, client->devices()[0]).status();
  CHECK(contains(again.message(), "argument 0: buffer f32[1000] on cpu:0/device has been deleted or donated"));
}

TEST_CASE("cpu executable: donation is a transaction: a rejected execute leaves every argument as it was") {
  auto client = make_client();
  GraphBuilder b("sum3");
  Value x = b.parameter(Shape(DType::kF32, {64}));
  Value y = b.parameter(Shape(DType::kF32, {64}));
  Value z = b.parameter(Shape(DType::kF32, {64}));
  auto exe = client->compile(build_ok(b, {b.add(b.add(x, y), z)})).value();
  cpu::Device<>* d0 = client->devices()[0];
  const Literal xs = iota_literal<float>({64}), ys = iota_literal<float>({64}, 100.0f), zs = iota_literal<float>({64}, 7.0f);
  auto xb = client->buffer_from_literal(xs).value();
  auto yb = client->buffer_from_literal(ys).value();
  auto zb = client->buffer_from_literal(zs).value();

  // Donations are reserved in the order of the buffers' ids: the deleted argument is the one
  // with the largest id, so both others are reserved first and must be let go unchanged.
  for (const std::vector<int>& donated : {std::vector<int>{0, 1, 2}, std::vector<int>{2, 1, 0}}) {
    CAPTURE(donated.front());
    std::vector<cpu::Buffer<>> three;
    for (const Literal* l : {&xs, &ys, &zs}) three.push_back(client->buffer_from_literal(*l).value());
    std::size_t last = 0;
    for (std::size_t i = 1; i < 3; ++i)
      if (std::less<const void*>()(three[last].id(), three[i].id())) last = i;
    three[last].delete_buffer();
    cpu::Buffer<>* args[] = {&three[0], &three[1], &three[2]};
    ExecuteOptions options = sync_options();
    options.donated_arguments = donated;
    const Status s = exe.execute_sharded(args, d0, options).status();
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK_MESSAGE(contains(s.message(), str_cat("donated argument ", last, ": buffer f32[64] on cpu:0/device has been "
                                                                        "deleted or donated")),
                  s.to_string());
    const Literal* values[] = {&xs, &ys, &zs};
    for (std::size_t i = 0; i < 3; ++i) {
      if (i == last) continue;
      CHECK_FALSE(three[i].is_deleted());
      CHECK(three[i].to_literal().await().value() == *values[i]);
      // Let go, not held: the buffer can be written in place and deleted again.
      CHECK(three[i].copy_raw_from_host(values[i]->untyped_data(), 0, 256).ok());
    }
  }
  // Every donation reserved, then an output that cannot be allocated (2^40 floats): the
  // execute is RESOURCE_EXHAUSTED naming that output and the donated argument survives.
  {
    GraphBuilder hb("huge_output");
    Value v = hb.parameter(Shape(DType::kF32, {64}));
    auto huge = client->compile(build_ok(hb, {hb.negate(v), hb.broadcast_in_dim(v, {std::int64_t{1} << 34, 64}, {1})}));
    REQUIRE_MESSAGE(huge.ok(), huge.status().to_string());
    auto donor = client->buffer_from_literal(xs).value();
    cpu::Buffer<>* args[] = {&donor};
    ExecuteOptions options = sync_options();
    options.donated_arguments = {0};
    const Status s = huge->execute_sharded(args, d0, options).status();
    CHECK(s.code() == StatusCode::kResourceExhausted);
    CHECK_MESSAGE(contains(s.message(), "output 1"), s.to_string());
    CHECK_FALSE(donor.is_deleted());
    CHECK(donor.to_literal().await().value() == xs);
  }
  // A donated argument that is fine, next to a deleted argument that is not donated.
  {
    auto gone = client->buffer_from_literal(zs).value();
    gone.delete_buffer();
    cpu::Buffer<>* args[] = {&xb, &yb, &gone};
    ExecuteOptions options = sync_options();
    options.donated_arguments = {0};
    CHECK(exe.execute_sharded(args, d0, options).status().code() == StatusCode::kFailedPrecondition);
    CHECK_FALSE(xb.is_deleted());
  }
  // The same arguments then run, and donation commits: the donated buffers are deleted.
  cpu::Buffer<>* args[] = {&xb, &yb, &zb};
  ExecuteOptions options = sync_options();
  options.donated_arguments = {2, 0};
  auto out = exe.execute_sharded(args, d0, options);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  CHECK(xb.is_deleted());
  CHECK_FALSE(yb.is_deleted());
  CHECK(zb.is_deleted());
  const Literal r = (*out)[0].to_literal().await().value();
  for (int i = 0; i < 64; ++i) CHECK(r.data<float>()[i] == float(i) + float(100 + i) + float(7 + i));

  // execute() over several devices checks every device's arguments before any device runs.
  GraphBuilder nb("negate");
  Value v = nb.parameter(Shape(DType::kF32, {4}));
  auto both = client->compile(build_ok(nb, {nb.negate(v)}), {.device_ids = {0, 1}}).value();
  auto on0 = client->buffer_from_literal(Literal::vector<float>({1, 2, 3, 4})).value();
  auto on1 = client->buffer_from_literal(Literal::vector<float>({1, 2, 3, 4}), client->devices()[1]->memory_spaces()[0]).value();
  on1.delete_buffer();
  const std::vector<std::vector<cpu::Buffer<>*>> lists{{&on0}, {&on1}};
  ExecuteOptions donate = sync_options();
  donate.donated_arguments = {0};
  const auto failed = both.execute(lists, donate);
  CHECK(failed.status().code() == StatusCode::kFailedPrecondition);
  CHECK_FALSE(on0.is_deleted());
  CHECK(on0.to_literal().await().value() == Literal::vector<float>({1, 2, 3, 4}));
  // A buffer donated on one device and passed to another is refused before anything runs.
  const std::vector<std::vector<cpu::Buffer<>*>> shared{{&on0}, {&on0}};
  const auto twice = both.execute(shared, donate);
  CHECK(twice.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(contains(twice.status().message(), "argument 0 is donated but is also passed to device cpu:1"),
                twice.status().to_string());
  CHECK_FALSE(on0.is_deleted());
}

TEST_CASE("cpu executable: asynchronous execution waits for arguments and forwards their errors") {
  auto client = make_client();
  GraphBuilder b("neg");
  Value x = b.parameter(Shape(DType::kF64, {3}));
  auto exe = client->compile(build_ok(b, {b.negate(x)})).value();
  for (bool fail : {false, true}) {
    auto [promise, ready] = make_promise<void>();
    auto memory = cpu::detail::DeviceMemory::allocate(24);
    const double values[3] = {1, -2, 3};
    std::memcpy(memory->data, values, 24);
    auto pending = cpu::detail::BufferAccess::make(client.get(), client->memory_spaces()[0], Shape(DType::kF64, {3}), memory, ready);
    cpu::Buffer<>* args[] = {&pending};
    auto out = exe.execute_sharded(args, client->devices()[0], async_options()).value();
    CHECK_FALSE(out[0].get_ready_future().is_ready());  // returned without blocking
    if (fail) promise.set_error(data_loss_error("transfer failed"));
    else promise.set_value();
    auto result = out[0].to_literal().await();
    if (fail) CHECK(result.status().message() == "transfer failed");
    else CHECK(result.value() == Literal::vector<double>({-1, 2, -3}));
  }
}

TEST_CASE("cpu executable: compile errors and the compile cache") {
  auto client = make_client();
  GraphBuilder b("cache");
  Value x = b.parameter(Shape(DType::kF32, {2}));
  Graph g = build_ok(b, {b.sine(x)});
  CHECK(client->compile(g, {.device_ids = {}}).status().code() == StatusCode::kInvalidArgument);
  CHECK(contains(client->compile(g, {.device_ids = {5}}).status().message(), "no device with id 5"));
  CHECK(contains(client->compile(g, {.device_ids = {1, 1}}).status().message(), "device 1 appears twice"));
  auto before = client->compile_cache_stats();
  auto e1 = client->compile(g).value();
  auto e2 = client->compile(g).value();
  auto e3 = client->compile(g, {.optimize = true, .fuse = false}).value();
  auto after = client->compile_cache_stats();
  CHECK(after.first - before.first == 1);   // e2
  CHECK(after.second - before.second == 2);  // e1, e3
}

TEST_CASE("cpu executable: serialize and deserialize, and corrupt blobs are rejected") {
  auto client = make_client();
  GraphBuilder b("serial");
  Value x = b.parameter(Shape(DType::kF32, {3}));
  Value y = b.tanh(b.multiply(x, b.broadcast_in_dim(b.constant(3.0f), {3}, {})));
  auto exe = client->compile(build_ok(b, {y, b.reduce(y, b.constant(0.0f), OpCode::kMaximum, {0})}),
                             {.optimize = true, .fuse = false, .device_ids = {1}})
                 .value();
  const std::vector<std::byte> bytes = exe.serialize();
  auto back = client->deserialize_executable(bytes);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  CHECK(back->compile_options() == exe.compile_options());
  CHECK(fingerprint(back->source_graph()) == fingerprint(exe.source_graph()));
  CHECK(back->optimized_program_text() == exe.optimized_program_text());
  auto arg = client->buffer_from_literal(Literal::vector<float>({0.1f, -0.2f, 0.3f}), client->devices()[1]->memory_spaces()[0]).value();
  cpu::Buffer<>* args[] = {&arg};
  auto a = exe.execute_sharded(args, client->devices()[1]).value();
  auto c = back->execute_sharded(args, client->devices()[1]).value();
  for (std::size_t k = 0; k < 2; ++k) CHECK(a[k].to_literal().await().value() == c[k].to_literal().await().value());

  std::vector<std::byte> foreign = bytes;
  foreign[0] = std::byte{'X'};
  CHECK(contains(client->deserialize_executable(foreign).status().message(), "not a pjrt_lite CPU executable"));
  std::vector<std::byte> future = bytes;
  future[4] = std::byte{9};
  CHECK(contains(client->deserialize_executable(future).status().message(), "format version 9 is not supported"));
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    Status s = client->deserialize_executable(std::span(bytes).first(cut)).status();
    REQUIRE_FALSE(s.ok());
  }
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::vector<std::byte> flipped = bytes;
    flipped[at] ^= std::byte{0x20};
    REQUIRE_FALSE(client->deserialize_executable(flipped).ok());
  }
  // A valid blob for devices this client lacks: compiles nothing, says which device.
  auto small = make_client(1);
  CHECK(contains(small->deserialize_executable(bytes).status().message(), "no device with id 1"));
}

TEST_CASE("cpu executable: while, case and if equal their closed forms, optimized or not") {
  auto client = make_client();
  for (cpu::CompileOptions options : {cpu::CompileOptions{}, cpu::CompileOptions{.optimize = false, .fuse = false}}) {
    CAPTURE(options.optimize);
    for (std::int32_t n : {-1, 0, 1, 7, 50}) {
      CAPTURE(n);
      const std::int32_t m = std::max(n, 0);
      CHECK(run(*client, testing::sum_to_n(), {Literal::scalar(n)}, options)[0] == Literal::scalar(m * (m + 1) / 2));
      CHECK(run(*client, testing::sum_of_sums(), {Literal::scalar(n)}, options)[0] ==
            Literal::scalar(m * (m + 1) * (m + 2) / 6));
    }
    const Literal x = Literal::vector<float>({1, -2, 0.25f});
    const Literal y = Literal::scalar(-1.0f);
    auto expected = [&](std::int32_t k) { return testing::scaled_branch_result(x, -1.0f, k); };
    const Graph cases = testing::case_graph(3);
    for (std::int32_t index : {0, 1, 2, 3, -5}) {
      CAPTURE(index);
      CHECK(run(*client, cases, {Literal::scalar(index), x, y}, options) == expected(testing::selected_branch(index, 3)));
    }
    for (bool pred : {true, false})
      CHECK(run(*client, testing::if_graph(), {Literal::scalar(pred), x, y}, options) == expected(pred ? 1 : 2));
  }
  // A loop whose values are all constants is not folded at compile time: it runs per execute.
  GraphBuilder b("constant_loop");
  std::vector<Value> r = b.while_loop({b.constant(1), b.constant(0), b.constant(100)}, testing::counter_cond(),
                                      testing::counter_body());
  auto exe = client->compile(build_ok(b, {r[1]}));
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(contains(exe->optimized_program_text(), "while("));
  // Cost analysis counts the loop's cond and body once: two adds and a compare.
  CHECK(exe->cost_analysis().flops == 3);
  CHECK(run(*client, build_ok(b, {r[1]}), {})[0] == Literal::scalar(5050));
}

TEST_CASE("cpu executable: concurrent executions of a loop keep their carried values apart") {
  auto client = make_client();
  auto exe = client->compile(testing::sum_of_sums());
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const std::int32_t n = 10 + t;
      auto arg = client->buffer_from_literal(Literal::scalar(n)).value();
      cpu::Buffer<>* args[] = {&arg};
      for (int k = 0; k < 20; ++k) {
        auto out = exe->execute_sharded(args, client->devices()[0], sync_options());
        if (!out.ok() || (*out)[0].to_literal().await().value() != Literal::scalar(n * (n + 1) * (n + 2) / 6)) ++wrong[static_cast<std::size_t>(t)];
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == std::vector<int>(4, 0));
}

TEST_CASE("cpu executable: rng_bit_generator split across threads equals the reference") {
  // Large enough that the kernel hands ranges of elements to the pool's workers, each with a
  // block cache of its own: a block must come out the same whichever thread computes it.
  auto client = make_client(1);
  const std::pair<RngAlgorithm, std::vector<std::uint64_t>> cases[] = {
      {RngAlgorithm::kThreeFry, {0x1234, 77}}, {RngAlgorithm::kPhilox, {0x9876, 5, 3}}};
  for (const auto& c : cases) {
    const auto words = static_cast<std::int64_t>(c.second.size());
    for (DType t : {DType::kU32, DType::kF64, DType::kU16}) {
      GraphBuilder b("rng");
      std::vector<Value> r =
          b.rng_bit_generator(b.parameter(Shape(DType::kU64, {words})), Shape(t, {301, 400}), c.first);
      const Graph g = build_ok(b, r);
      std::vector<Literal> args;
      args.push_back(Literal::from_span<std::uint64_t>(c.second, {words}).value());
      const std::vector<Literal> cpu = run(*client, g, args);
      const std::vector<Literal> want = reference::evaluate(g, args).value();
      REQUIRE(cpu.size() == 2);
      CHECK(cpu[0] == want[0]);
      CHECK(std::memcmp(cpu[1].untyped_data(), want[1].untyped_data(), want[1].size_bytes()) == 0);
    }
  }
}

TEST_CASE("cpu executable: a thread that awaits an asynchronous execution no worker has started runs it itself") {
  // The client's only worker is kept busy, so an execution handed to it cannot start there:
  // awaiting an output (directly, or through a host copy or map()) must run it on this thread.
  auto client = cpu::Client<>::create({.thread_count = 1}).value();
  GraphBuilder b("neg");
  Value x = b.parameter(Shape(DType::kF32, {4}));
  auto exe = client->compile(build_ok(b, {b.negate(x)})).value();
  auto input = client->buffer_from_literal(Literal::vector<float>({1, -2, 3, -4})).value();
  for (int how = 0; how < 3; ++how) {
    CAPTURE(how);
    std::atomic<bool> release{false}, worker_busy{false};
    client->executor().schedule([&] {
      worker_busy.store(true);
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      worker_busy.store(false);
    });
    while (!worker_busy.load()) std::this_thread::yield();
    // Should this thread sleep instead, the worker is released after 20 s and the checks
    // below fail rather than the test hanging.
    std::thread fallback([&] {
      for (int i = 0; i < 2000 && !release.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      release.store(true);
    });
    auto out = exe.execute({&input}, async_options()).value();
    Literal got;
    if (how == 0) {
      CHECK(out[0].get_ready_future().await().ok());
      got = out[0].to_literal().await().value();
    } else if (how == 1) {
      got = out[0].to_literal().await().value();
    } else {
      got = out[0].to_literal().map([](const Literal& l) { return l; }).await().value();
    }
    const bool ran_here = !release.load();
    release.store(true);
    fallback.join();
    while (worker_busy.load()) std::this_thread::yield();  // the blocker reads this iteration's flags
    CHECK(ran_here);
    CHECK(got == Literal::vector<float>({-1, 2, -3, 4}));
  }
}

// ---- Fusion beyond element-wise: vector broadcasts inside loops, row kernels (a reduce over
// the trailing dimensions with its producers and consumers), and what must not fuse.

namespace {

/// A literal of `shape` with values from a fixed pattern: signed small integers for integer
/// types (wrapping for unsigned), values in about [-3, 3] for floats.
Literal pattern_literal(const Shape& shape, int seed) {
  Literal lit(shape);
  visit_dtype(shape.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_floating_point_v<T> || std::is_integral_v<T>) {
      auto d = lit.data<T>();
      for (std::size_t i = 0; i < d.size(); ++i) {
        const double v = 3 * std::sin(0.731 * static_cast<double>(i) + seed) + 0.01 * static_cast<double>(i % 7);
        if constexpr (std::is_floating_point_v<T>) d[i] = static_cast<T>(v);
        else d[i] = static_cast<T>(static_cast<std::int64_t>(std::floor(v * 5)));
      }
    }
  });
  return lit;
}

/// A rank-0 literal of type `t` holding `v`.
Literal scalar_literal(DType t, double v) {
  return visit_dtype(t, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_arithmetic_v<T>) return Literal::scalar(static_cast<T>(v));
    else return Literal::scalar(0.0f);
  });
}

/// The largest difference between two literals of a float type, relative to max(1, |want|).
double worst_difference(const Literal& got, const Literal& want) {
  double worst = 0;
  visit_dtype(want.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_floating_point_v<T>) {
      const auto g = got.data<T>();
      const auto w = want.data<T>();
      for (std::size_t i = 0; i < w.size(); ++i) {
        const double d = std::abs(double(g[i]) - double(w[i])) / std::max(1.0, std::abs(double(w[i])));
        worst = std::max(worst, std::isnan(d) && std::isnan(double(g[i])) == std::isnan(double(w[i])) ? 0.0 : std::isnan(d) ? INFINITY : d);
      }
    }
  });
  return worst;
}

/// Runs `g` on the CPU and on the reference and checks each output: integer outputs equal,
/// float outputs within `tolerance` (0: the same bytes).
void check_with_reference(const Graph& g, const std::vector<Literal>& args, double tolerance) {
  auto client = make_client(1);
  const std::vector<Literal> got = run(*client, g, args);
  const std::vector<Literal> want = reference::evaluate(g, args).value();
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    CAPTURE(k);
    REQUIRE(got[k].shape() == want[k].shape());
    if (tolerance == 0 || !is_floating(want[k].dtype()))
      CHECK(std::memcmp(got[k].untyped_data(), want[k].untyped_data(), want[k].size_bytes()) == 0);
    else
      CHECK(worst_difference(got[k], want[k]) <= tolerance);
  }
}

/// Runs `g` on a client of two threads and on one of one thread: the outputs must be the same
/// bytes, however the work was split.
void check_with_one_thread(const Graph& g, const std::vector<Literal>& args) {
  auto two = make_client(1);
  auto one = cpu::Client<>::create({.device_count = 1, .thread_count = 1}).value();
  const std::vector<Literal> got = run(*two, g, args), want = run(*one, g, args);
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    CAPTURE(k);
    CHECK(got[k] == want[k]);
  }
}

std::string listing(const Graph& g) { return make_client(1)->compile(g).value().optimized_program_text(); }

std::vector<std::int64_t> range(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> r;
  for (std::int64_t d = from; d < to; ++d) r.push_back(d);
  return r;
}

/// Softmax over the dimensions from `first` on of a parameter of `dims`.
Graph softmax_graph(DType t, const std::vector<std::int64_t>& dims, std::int64_t first) {
  GraphBuilder b("softmax");
  Value x = b.parameter(Shape(t, dims));
  const auto rank = static_cast<std::int64_t>(dims.size());
  const std::vector<std::int64_t> rows(dims.begin(), dims.begin() + first);
  Value low = b.constant(scalar_literal(t, -std::numeric_limits<double>::infinity()));
  Value m = b.reduce(x, low, OpCode::kMaximum, range(first, rank));
  Value e = b.exponential(b.subtract(x, b.broadcast_in_dim(m, dims, range(0, first))));
  Value sum = b.reduce(e, b.constant(scalar_literal(t, 0.0)), OpCode::kAdd, range(first, rank));
  return build_ok(b, {b.divide(e, b.broadcast_in_dim(sum, dims, range(0, first)))});
}

/// Layer norm over the dimensions from `first` on, with gamma and beta of those dimensions.
/// x * rsqrt(mean(x^2) + eps) * gamma over the trailing dims from `first` on, as JAX exports
/// it with keepdims=True: the mean reshaped to keep the row dims as 1s, scaled and shifted in
/// that shape, broadcast back along every dim.
Graph rms_norm_keepdims_graph(DType t, const std::vector<std::int64_t>& dims, std::int64_t first) {
  GraphBuilder b("rms_norm");
  const auto rank = static_cast<std::int64_t>(dims.size());
  std::vector<std::int64_t> kept(dims.begin(), dims.begin() + first);
  const std::vector<std::int64_t> row(dims.begin() + first, dims.end());
  std::int64_t count = 1;
  for (std::int64_t d : row) count *= d;
  kept.resize(dims.size(), 1);
  Value x = b.parameter(Shape(t, dims));
  Value gamma = b.parameter(Shape(t, row));
  Value sums = b.reduce(b.multiply(x, x), b.constant(scalar_literal(t, 0.0)), OpCode::kAdd, range(first, rank));
  Value mean = b.divide(b.reshape(sums, kept), b.broadcast_in_dim(b.constant(scalar_literal(t, static_cast<double>(count))), kept, {}));
  Value rstd = b.rsqrt(b.add(mean, b.broadcast_in_dim(b.constant(scalar_literal(t, 1e-6)), kept, {})));
  Value y = b.multiply(b.multiply(x, b.broadcast_in_dim(rstd, dims, range(0, rank))),
                      b.broadcast_in_dim(gamma, dims, range(first, rank)));
  return build_ok(b, {y});
}

Graph layer_norm_graph(DType t, const std::vector<std::int64_t>& dims, std::int64_t first) {
  GraphBuilder b("layer_norm");
  const auto rank = static_cast<std::int64_t>(dims.size());
  const std::vector<std::int64_t> rows(dims.begin(), dims.begin() + first), row(dims.begin() + first, dims.end());
  std::int64_t count = 1;
  for (std::int64_t d : row) count *= d;
  Value x = b.parameter(Shape(t, dims));
  Value gamma = b.parameter(Shape(t, row));
  Value beta = b.parameter(Shape(t, row));
  Value inv = b.broadcast_in_dim(b.constant(scalar_literal(t, 1.0 / static_cast<double>(count))), rows, {});
  Value zero = b.constant(scalar_literal(t, 0.0));
  Value mean = b.multiply(b.reduce(x, zero, OpCode::kAdd, range(first, rank)), inv);
  Value xc = b.subtract(x, b.broadcast_in_dim(mean, dims, range(0, first)));
  Value var = b.multiply(b.reduce(b.multiply(xc, xc), zero, OpCode::kAdd, range(first, rank)), inv);
  Value eps = b.broadcast_in_dim(b.constant(scalar_literal(t, 1e-5)), rows, {});
  Value rstd = b.rsqrt(b.add(var, eps));
  Value y = b.add(b.multiply(b.multiply(xc, b.broadcast_in_dim(rstd, dims, range(0, first))),
                             b.broadcast_in_dim(gamma, dims, range(first, rank))),
                  b.broadcast_in_dim(beta, dims, range(first, rank)));
  return build_ok(b, {y});
}

}  // namespace

TEST_CASE("cpu executable: a batch of products split across threads by whole products gives one thread's bits") {
  // Batches of 2, 4 and 12 products go to the workers whole (12 of 32 x 32 x 32 are too small
  // to split one by one, together large enough); 3 products of a size that splits keep
  // splitting each product. Operands laid out as attention's heads have them: the right one
  // [batch, N, K] (scores) or [batch, K, N] (weighted values), the left one [batch, M, K].
  struct Case {
    std::int64_t batch, m, k, n;
    bool rhs_transposed;
  };
  const Case cases[] = {{2, 96, 80, 72, false}, {4, 128, 64, 128, true}, {4, 128, 128, 64, false},
                        {12, 32, 32, 32, true},  {3, 96, 80, 72, true}};
  for (DType t : {DType::kF32, DType::kF64, DType::kS32}) {
    for (const Case& c : cases) {
      CAPTURE(dtype_name(t));
      CAPTURE(c.batch);
      CAPTURE(c.m);
      GraphBuilder b("batched");
      const std::vector<std::int64_t> rhs_dims =
          c.rhs_transposed ? std::vector<std::int64_t>{c.batch, c.n, c.k} : std::vector<std::int64_t>{c.batch, c.k, c.n};
      Value x = b.parameter(Shape(t, {c.batch, c.m, c.k}));
      Value y = b.parameter(Shape(t, rhs_dims));
      const DotDimensionNumbers dims{{0}, {0}, {2}, {c.rhs_transposed ? 2 : 1}};
      // A bias added after the product: the loop runs in the product's blocks.
      Value bias = b.broadcast_in_dim(b.constant(scalar_literal(t, 1)), {c.batch, c.m, c.n}, {});
      const Graph g = build_ok(b, {b.add(b.dot_general(x, y, dims), bias)});
      const std::vector<Literal> args = {pattern_literal(Shape(t, {c.batch, c.m, c.k}), 1),
                                         pattern_literal(Shape(t, rhs_dims), 2)};
      check_with_reference(g, args, t == DType::kF32 ? 1e-5 : 1e-12);
      check_with_one_thread(g, args);
    }
  }
}

TEST_CASE("cpu fusion: softmax and layer norm over rows run as one row kernel and match the reference") {
  // Rows that are no multiple of the vector width, one row, one-element rows, rows of two
  // dimensions, and enough rows to be split across the pool. The sums run in another order
  // than the reference's, hence the tolerance.
  constexpr std::int64_t kSplitRows = 300;  // rows of 203: four blocks for the pool's threads
  const std::pair<std::vector<std::int64_t>, std::int64_t> shapes[] = {
      {{37, 203}, 1}, {{1, 7}, 1}, {{5, 1}, 1}, {{2, 3, 17}, 2}, {{3, 4, 5}, 1}, {{kSplitRows, 203}, 1}};
  for (DType t : {DType::kF32, DType::kF64}) {
    for (const auto& shape : shapes) {
      // Named, not a structured binding: clang 14 cannot capture a binding in a lambda.
      const std::vector<std::int64_t>& dims = shape.first;
      const std::int64_t first = shape.second;
      CAPTURE(dtype_name(t));
      CAPTURE(Shape::dims_string(dims));
      const double tolerance = t == DType::kF32 ? 2e-5 : 1e-12;
      // Under a sanitizer the rows split across the pool are checked against one thread's
      // bits instead: at -O0 the reference's reductions over them took most of the test, and
      // the reference runs the same reductions on the other shapes.
      const bool split = dims[0] == kSplitRows;
      auto check = [&](const Graph& g, const std::vector<Literal>& args, double tol) {
        if (testing::kUnderSanitizer && split) check_with_one_thread(g, args);
        else check_with_reference(g, args, tol);
      };
      const Graph soft = softmax_graph(t, dims, first);
      check(soft, {pattern_literal(Shape(t, dims), 1)}, tolerance);
      const std::string soft_text = listing(soft);
      CAPTURE(soft_text);
      CHECK(contains(soft_text, ": 1 kernels"));
      CHECK(contains(soft_text, "row fusion[reduce(maximum), broadcast_in_dim, subtract, exponential, reduce(add), broadcast_in_dim, divide]"));
      // The max, then exp(x - max) kept and summed, then the division: the row is read from
      // memory once and written once; the subtraction of the max happens inside the exp.
      CHECK(contains(soft_text, "3 passes over each; 1 exp of a difference)"));
      const std::vector<std::int64_t> row(dims.begin() + first, dims.end());
      const Graph norm = layer_norm_graph(t, dims, first);
      check(norm,
            {pattern_literal(Shape(t, dims), 2), pattern_literal(Shape(t, row), 3), pattern_literal(Shape(t, row), 4)},
            tolerance * 10);
      const std::string norm_text = listing(norm);
      CAPTURE(norm_text);
      CHECK(contains(norm_text, ": 1 kernels"));
      CHECK(contains(norm_text, "3 passes over each"));
      // x - mean is computed again in the last pass instead of kept, so the variance's pass
      // sums the squared deviations as it makes them and the last pass scales them at once.
      if (Shape(t, row).element_count() > 1)
        CHECK(contains(norm_text, "1 multiply-add, 1 sum of squared differences, 1 pair of scalar ops)"));
      // keepdims: the reshape to [rows..., 1...] sinks into the broadcast, one row kernel
      // (rows of one element have no broadcast left to sink into: the identity goes first).
      const Graph rms = rms_norm_keepdims_graph(t, dims, first);
      check(rms, {pattern_literal(Shape(t, dims), 5), pattern_literal(Shape(t, row), 6)}, tolerance * 10);
      const std::string rms_text = listing(rms);
      CAPTURE(rms_text);
      if (Shape(t, row).element_count() > 1) {
        CHECK(contains(rms_text, ": 1 kernels"));
        CHECK(contains(rms_text, "2 passes over each"));
      }
    }
  }
}

/// `g` matches the reference within `tolerance` (and, unless `threads_alike` is false, gives
/// one thread's bits on the pool), and its listing holds `text`.
void check_row_kernel(const Graph& g, const std::vector<Literal>& args, std::string_view text, bool threads_alike = true) {
  check_with_reference(g, args, 2e-5);
  if (threads_alike) check_with_one_thread(g, args);
  const std::string got = listing(g);
  CAPTURE(got);
  CHECK(contains(got, text));
}

TEST_CASE("cpu fusion: a row kernel runs its per-row stages over blocks of rows, the bits the same on any number of threads") {
  // Rows of 64 f32, of 203 f64 and of 1024 f32 go in blocks of 16, of 4096 f32 in blocks of 4
  // (at most 64 KiB of each full-row array); the row counts leave a partial block at the end,
  // and 301 rows of 64 split across the pool's threads.
  SUBCASE("softmax and layer norm") {
    struct Case {
      DType t;
      std::vector<std::int64_t> dims;
      std::int64_t block;
    };
    const Case cases[] = {
        {DType::kF32, {37, 64}, 16}, {DType::kF64, {29, 203}, 16}, {DType::kF32, {21, 1024}, 16},
        {DType::kF32, {9, 4096}, 4},   {DType::kF32, {301, 64}, 16}};
    for (const Case& c : cases) {
      const DType t = c.t;
      const std::vector<std::int64_t>& dims = c.dims;
      CAPTURE(dtype_name(t));
      CAPTURE(Shape::dims_string(dims));
      const std::vector<std::int64_t> row(dims.begin() + 1, dims.end());
      const double tolerance = t == DType::kF32 ? 2e-4 : 1e-11;
      // A row of one tile (up to 1024 elements) goes through each pass a block at a time.
      const std::string blocks =
          str_cat(" rows of ", row[0], " in blocks of ", c.block, row[0] <= 1024 ? ", each pass one call per block," : ", ");
      const Graph norm = layer_norm_graph(t, dims, 1);
      const std::vector<Literal> norm_args = {pattern_literal(Shape(t, dims), 2), pattern_literal(Shape(t, row), 3),
                                              pattern_literal(Shape(t, row), 4)};
      check_with_reference(norm, norm_args, tolerance);
      check_with_one_thread(norm, norm_args);
      CHECK(contains(listing(norm), blocks));
      const Graph soft = softmax_graph(t, dims, 1);
      check_with_reference(soft, {pattern_literal(Shape(t, dims), 1)}, tolerance);
      check_with_one_thread(soft, {pattern_literal(Shape(t, dims), 1)});
      CHECK(contains(listing(soft), blocks));
    }
  }
  SUBCASE("a scalar stage reads a per-row input and writes a per-row output") {
    const std::vector<std::int64_t> dims = {45, 100};
    GraphBuilder b("per_row");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value w = b.parameter(Shape(DType::kF32, {45}));
    Value s = b.reduce(x, b.constant(0.0f), OpCode::kAdd, {1});
    Value t = b.add(b.multiply(s, w), b.broadcast_in_dim(b.constant(0.5f), {45}, {}));
    Value y = b.multiply(x, b.broadcast_in_dim(t, dims, {0}));
    const Graph g = build_ok(b, {y, t});
    const std::vector<Literal> args = {pattern_literal(Shape(DType::kF32, dims), 5), pattern_literal(Shape(DType::kF32, {45}), 6)};
    check_row_kernel(g, args, "45 rows of 100 in blocks of 16,");
  }
  SUBCASE("a pass over a block of rows fills per-row values read as tiles and repeats vectors within each row") {
    // Rows [4, 8] of 37 rows: select reads the row's mean as a tile (no scalar form), u
    // repeats every 8 elements of a row and v holds each value for 8; a second reduction
    // sums the result in the pass that makes it. The last block has 5 rows.
    const std::vector<std::int64_t> dims = {37, 4, 8};
    GraphBuilder b("lifted");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value u = b.parameter(Shape(DType::kF32, {8}));
    Value v = b.parameter(Shape(DType::kF32, {4}));
    Value mean = b.multiply(b.reduce(x, b.constant(0.0f), OpCode::kAdd, {1, 2}), b.broadcast_in_dim(b.constant(1.0f / 32), {37}, {}));
    Value m = b.broadcast_in_dim(mean, dims, {0});
    Value lifted = b.select(b.compare(x, m, ComparisonDirection::kGt), x, m);
    Value y = b.add(b.multiply(lifted, b.broadcast_in_dim(u, dims, {2})), b.broadcast_in_dim(v, dims, {1}));
    Value total = b.reduce(y, b.constant(0.0f), OpCode::kAdd, {1, 2});
    const Graph g = build_ok(b, {y, total});
    const std::vector<Literal> args = {pattern_literal(Shape(DType::kF32, dims), 9), pattern_literal(Shape(DType::kF32, {8}), 10),
                                       pattern_literal(Shape(DType::kF32, {4}), 11)};
    check_row_kernel(g, args, "37 rows of 32 in blocks of 16, each pass one call per block, 2 passes over each");
  }
  SUBCASE("a pass that reads a vector at the pace of a group of rows goes row by row") {
    // v[i] of rows (i, j) steps once every five rows: no fixed step per row, so the division's
    // pass rebases each row, while the sum's pass still takes the block at once.
    const std::vector<std::int64_t> dims = {6, 5, 40};
    GraphBuilder b("grouped_pass");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value v = b.parameter(Shape(DType::kF32, {6}));
    Value s = b.reduce(x, b.constant(0.0f), OpCode::kAdd, {2});
    Value y = b.multiply(b.divide(x, b.broadcast_in_dim(s, dims, {0, 1})), b.broadcast_in_dim(v, dims, {0}));
    const Graph g = build_ok(b, {y});
    const std::vector<Literal> args = {pattern_literal(Shape(DType::kF32, dims), 12), pattern_literal(Shape(DType::kF32, {6}), 13)};
    check_row_kernel(g, args, "30 rows of 40 in blocks of 16, 1 pass one call per block, 2 passes over each");
  }
  SUBCASE("a per-row value broadcast from fewer rows keeps the rows one by one") {
    // Rows [6, 5] of 40: the per-row value v[i] of rows (i, j) steps once every five rows, which
    // a scalar stage cannot read as one run over a block.
    const std::vector<std::int64_t> dims = {6, 5, 40};
    GraphBuilder b("grouped");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value v = b.parameter(Shape(DType::kF32, {6}));
    Value s = b.reduce(x, b.constant(0.0f), OpCode::kAdd, {2});
    Value t = b.add(s, b.broadcast_in_dim(v, {6, 5}, {0}));
    Value y = b.divide(x, b.broadcast_in_dim(t, dims, {0, 1}));
    const Graph g = build_ok(b, {y});
    const std::vector<Literal> args = {pattern_literal(Shape(DType::kF32, dims), 7), pattern_literal(Shape(DType::kF32, {6}), 8)};
    check_row_kernel(g, args, "30 rows of 40, ", false);
  }
}

/// `fused` against `kept`, the same program with one value kept as a tile of its own so that
/// the superinstruction `name` cannot form: outputs 0 and 1 have the same bytes, `fused`'s
/// listing names it and `kept`'s does not, and `fused` matches the reference within `tolerance`.
void check_superinstruction(const Graph& fused, const Graph& kept, const std::vector<Literal>& args,
                            std::string_view name, double tolerance) {
  auto client = make_client(1);
  const std::vector<Literal> got = run(*client, fused, args), want = run(*client, kept, args);
  for (std::size_t k = 0; k < 2; ++k) {
    CAPTURE(k);
    CHECK(std::memcmp(got[k].untyped_data(), want[k].untyped_data(), want[k].size_bytes()) == 0);
  }
  CHECK(contains(listing(fused), str_cat("1 ", name)));
  CHECK(!contains(listing(kept), name));
  check_with_reference(fused, args, tolerance);
}

TEST_CASE("cpu fusion: a sum of products in a row kernel is one instruction, bit for bit the product tile's sum") {
  // Rows of 203 and of 2000 (more than one row tile), f32 and f64: sum(x * y) over each row,
  // and the same program that also takes the product's maximum, so that the product stays a
  // tile of its own that the sum reads (an output would not do: a row of an output starts
  // where the row does, not aligned as a tile, and Eigen sums from the first aligned packet).
  for (DType t : {DType::kF32, DType::kF64}) {
    for (const std::int64_t cols : {203, 2000}) {
      CAPTURE(dtype_name(t));
      CAPTURE(cols);
      const std::vector<std::int64_t> dims{37, cols};
      auto program = [&](bool keep_product) {
        GraphBuilder b("sum_of_products");
        Value x = b.parameter(Shape(t, dims));
        Value y = b.parameter(Shape(t, dims));
        Value product = b.multiply(x, y);
        Value sums = b.reduce(product, b.constant(scalar_literal(t, 0.0)), OpCode::kAdd, {1});
        Value scaled = b.multiply(x, b.broadcast_in_dim(sums, dims, {0}));
        Value top = b.reduce(keep_product ? product : x, b.constant(scalar_literal(t, -1e30)), OpCode::kMaximum, {1});
        return build_ok(b, {sums, scaled, top});
      };
      check_superinstruction(program(false), program(true),
                             {pattern_literal(Shape(t, dims), 7), pattern_literal(Shape(t, dims), 8)}, "sum of products",
                             t == DType::kF32 ? 1e-3 : 1e-10);
    }
  }
}

TEST_CASE("cpu fusion: a sum of squared deviations in a row kernel is one instruction, bit for bit the deviations' tile summed") {
  // The variance of rows of 203 and of 2000, f32 and f64, and the same program that also
  // takes the deviations' maximum, so that the deviation stays a tile of its own that the
  // squares read.
  for (DType t : {DType::kF32, DType::kF64}) {
    for (const std::int64_t cols : {203, 2000}) {
      CAPTURE(dtype_name(t));
      CAPTURE(cols);
      const std::vector<std::int64_t> dims{37, cols};
      auto program = [&](bool keep_deviation) {
        GraphBuilder b("variance");
        Value x = b.parameter(Shape(t, dims));
        Value zero = b.constant(scalar_literal(t, 0.0));
        Value inv = b.broadcast_in_dim(b.constant(scalar_literal(t, 1.0 / static_cast<double>(cols))), {37}, {});
        Value mean = b.multiply(b.reduce(x, zero, OpCode::kAdd, {1}), inv);
        Value d = b.subtract(x, b.broadcast_in_dim(mean, dims, {0}));
        Value var = b.reduce(b.multiply(d, d), zero, OpCode::kAdd, {1});
        Value scaled = b.multiply(d, b.broadcast_in_dim(var, dims, {0}));
        Value top = b.reduce(keep_deviation ? d : x, b.constant(scalar_literal(t, -1e30)), OpCode::kMaximum, {1});
        return build_ok(b, {var, scaled, top});
      };
      check_superinstruction(program(false), program(true), {pattern_literal(Shape(t, dims), 9)},
                             "sum of squared differences", t == DType::kF32 ? 1e-3 : 1e-10);
    }
  }
}

TEST_CASE("cpu fusion: broadcast scalars and vectors read in place give the reference's bits") {
  // An add, subtract, multiply or divide whose other operand is a broadcast scalar reads the
  // scalar itself; a vector broadcast along the last dimension is read in place wherever a
  // tile lies inside one period of it and copied where a tile wraps around; a per-row value
  // in a row kernel is one scalar per row. Each op rounds once, as on the reference: the
  // same bytes.
  for (DType t : {DType::kF32, DType::kF64}) {
    CAPTURE(dtype_name(t));
    {
      const std::vector<std::int64_t> dims = {40, 300};  // tiles of 256 cross rows of 300
      GraphBuilder b("splats");
      Value x = b.parameter(Shape(t, dims));
      Value s = b.parameter(Shape(t, {}));
      Value v = b.parameter(Shape(t, {300}));
      Value bs = b.broadcast_in_dim(s, dims, {});
      Value bc = b.broadcast_in_dim(b.constant(scalar_literal(t, 0.375)), dims, {});
      Value bv = b.broadcast_in_dim(v, dims, {1});
      const Graph g = build_ok(b, {b.add(x, bs), b.subtract(bs, x), b.multiply(x, bc), b.divide(bs, x),
                                   b.divide(x, bs), b.add(b.multiply(x, bs), bv), b.add(bs, bs),
                                   b.subtract(b.multiply(bv, bs), x)});
      check_with_reference(g, {pattern_literal(Shape(t, dims), 5), scalar_literal(t, -1.75),
                               pattern_literal(Shape(t, {300}), 6)}, 0);
      // Two ops with a scalar each, and a product with one factor scaled, are one instruction
      // each: the same bits as the ops one after the other.
      GraphBuilder b2("scalar_chains");
      Value x2 = b2.parameter(Shape(t, dims));
      Value s2 = b2.parameter(Shape(t, {}));
      Value v2 = b2.parameter(Shape(t, {300}));
      Value bs2 = b2.broadcast_in_dim(s2, dims, {});
      Value bc2 = b2.broadcast_in_dim(b2.constant(scalar_literal(t, 0.375)), dims, {});
      Value bv2 = b2.broadcast_in_dim(v2, dims, {1});
      const Graph chains = build_ok(b2, {b2.multiply(b2.subtract(x2, bs2), bc2), b2.divide(b2.add(x2, bc2), bs2),
                                         b2.multiply(b2.multiply(x2, bs2), bv2), b2.multiply(bv2, b2.subtract(x2, bc2))});
      check_with_reference(chains, {pattern_literal(Shape(t, dims), 7), scalar_literal(t, 2.5),
                                    pattern_literal(Shape(t, {300}), 8)}, 0);
      const std::string text = listing(chains);
      CAPTURE(text);
      CHECK(contains(text, "2 pairs of scalar ops"));
      CHECK(contains(text, "2 scaled products"));
    }
    // Rows longer than a row kernel's tile (1024): the row's scale is read in place in both
    // tiles; the row's maximum is one scalar per row.
    for (std::int64_t cols : {std::int64_t{2000}, std::int64_t{203}}) {
      CAPTURE(cols);
      const std::vector<std::int64_t> dims = {9, cols};
      GraphBuilder b("rows");
      Value x = b.parameter(Shape(t, dims));
      Value gamma = b.parameter(Shape(t, {cols}));
      Value low = b.constant(scalar_literal(t, -std::numeric_limits<double>::infinity()));
      Value m = b.broadcast_in_dim(b.reduce(x, low, OpCode::kMaximum, {1}), dims, {0});
      const Graph g = build_ok(b, {b.multiply(b.subtract(x, m), b.broadcast_in_dim(gamma, dims, {1}))});
      check_with_reference(g, {pattern_literal(Shape(t, dims), 7), pattern_literal(Shape(t, {cols}), 8)}, 0);
      CHECK(contains(listing(g), "row fusion"));
    }
  }
}

TEST_CASE("cpu fusion: a maximum or minimum of an add, subtract or multiply is one instruction, bit for bit the two ops") {
  // A bias and a relu (the operand a zero splat), a minimum with the op second, a maximum of
  // two tiles; NaNs, signed zeros and infinities where the two instructions' packet and
  // scalar paths decide which operand wins, in a length that ends in a partial packet.
  auto client = make_client();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType t : {DType::kF32, DType::kF64}) {
    CAPTURE(dtype_name(t));
    const std::int64_t n = 1001;
    const std::vector<std::int64_t> dims = {n};
    GraphBuilder b("bounded");
    Value x = b.parameter(Shape(t, dims)), y = b.parameter(Shape(t, dims)), z = b.parameter(Shape(t, dims));
    Value zero = b.broadcast_in_dim(b.constant(scalar_literal(t, 0.0)), dims, {});
    const Graph g = build_ok(b, {b.maximum(b.add(x, y), zero), b.minimum(z, b.multiply(x, y)),
                                 b.maximum(b.subtract(x, y), z)});
    const std::string text = listing(g);
    CAPTURE(text);
    std::size_t single = 0;
    for (std::size_t at = text.find("1 bounded op)"); at != std::string::npos; at = text.find("1 bounded op)", at + 1)) ++single;
    CHECK((contains(text, "3 bounded ops") || single == 3));
    const double edges[] = {0.0, -0.0, 1.5, -1.5, inf, -inf, nan, 2.0, -2.0, 0.25};
    std::vector<double> xs(static_cast<std::size_t>(n)), ys(xs.size()), zs(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      xs[i] = edges[i % 10];
      ys[i] = edges[(i / 10) % 10];
      zs[i] = edges[(i / 100) % 10];
    }
    check_fused_bits(*client, g, {float_vector(t, xs), float_vector(t, ys), float_vector(t, zs)});
    // Without NaNs the bits are the reference's too.
    for (auto* v : {&xs, &ys, &zs})
      for (double& e : *v)
        if (std::isnan(e)) e = -3.0;
    check_with_reference(g, {float_vector(t, xs), float_vector(t, ys), float_vector(t, zs)}, 0);

    // A bound that is one broadcast scalar is read as one value; the CPU's max and min
    // instruction serves every bound but NaN and the zero whose sign the other zero wins
    // against, which take the general comparison.
    GraphBuilder sb("scalar_bound");
    Value sx = sb.parameter(Shape(t, dims)), sy = sb.parameter(Shape(t, dims)), s = sb.parameter(Shape(t, {}));
    Value bs = sb.broadcast_in_dim(s, dims, {});
    const Graph sg = build_ok(sb, {sb.maximum(sb.add(sx, sy), bs), sb.minimum(bs, sb.multiply(sx, sy)),
                                   sb.maximum(bs, sb.subtract(sx, sy)), sb.minimum(sb.subtract(sy, sx), bs)});
    const std::string scalar_text = listing(sg);
    CAPTURE(scalar_text);
    CHECK((contains(scalar_text, "4 bounded ops") || contains(scalar_text, "1 bounded op)")));
    for (const double bound : {0.0, -0.0, 1.5, -inf, nan}) {
      CAPTURE(bound);
      for (auto* v : {&xs, &ys}) {
        for (std::size_t i = 0; i < v->size(); ++i) (*v)[i] = edges[(v == &xs ? i : i / 10) % 10];
      }
      check_fused_bits(*client, sg, {float_vector(t, xs), float_vector(t, ys), scalar_literal(t, bound)});
    }
  }
}

TEST_CASE("cpu fusion: integer reductions fused with producers and consumers equal the reference") {
  // Integer sums, products, maxima and minima are exact in any order (sums wrap).
  for (DType t : {DType::kS32, DType::kU8, DType::kS64}) {
    CAPTURE(dtype_name(t));
    const std::vector<std::int64_t> dims = {19, 37};
    GraphBuilder b("ints");
    Value x = b.parameter(Shape(t, dims));
    Value v = b.parameter(Shape(t, {37}));
    Value flag = b.parameter(Shape(DType::kPred, {}));
    // A scalar operand inside a row pass (select's predicate) reads as a splat.
    Value sq = b.select(flag, b.multiply(x, x), b.clamp(b.constant(scalar_literal(t, 2.0)), x, b.constant(scalar_literal(t, 9.0))));
    Value s = b.reduce(sq, b.constant(scalar_literal(t, 0.0)), OpCode::kAdd, {1});
    Value m = b.reduce(b.add(x, b.broadcast_in_dim(v, dims, {1})), b.constant(scalar_literal(t, 0.0)), OpCode::kMaximum, {1});
    Value lo = b.reduce(x, b.constant(scalar_literal(t, 100.0)), OpCode::kMinimum, {1});
    Value p = b.reduce(b.add(x, x), b.constant(scalar_literal(t, 1.0)), OpCode::kMultiply, {1});
    Value y = b.subtract(b.add(x, b.broadcast_in_dim(s, dims, {0})), b.broadcast_in_dim(m, dims, {0}));
    const Graph g = build_ok(b, {y, b.add(lo, p)});
    for (bool f : {true, false})
      check_with_reference(g, {pattern_literal(Shape(t, dims), 5), pattern_literal(Shape(t, {37}), 6), Literal::scalar(f)}, 0);
    const std::string text = listing(g);
    CAPTURE(text);
    CHECK(contains(text.substr(text.find("row fusion[") == std::string::npos ? 0 : text.find("row fusion[")), "select"));
    CHECK(contains(text, "row fusion["));
  }
}

TEST_CASE("cpu fusion: max and min over rows and what reads them are bit for bit the reference") {
  // Rows with NaN, infinities and zeros of both signs, where a vectorized extremum would pick
  // differently than the element-by-element fold.
  for (DType t : {DType::kF32, DType::kF64}) {
    CAPTURE(dtype_name(t));
    const std::vector<std::int64_t> dims = {9, 300};
    GraphBuilder b("extrema");
    Value x = b.parameter(Shape(t, dims));
    Value mx = b.reduce(x, b.constant(scalar_literal(t, -std::numeric_limits<double>::infinity())), OpCode::kMaximum, {1});
    Value mn = b.reduce(x, b.constant(scalar_literal(t, std::numeric_limits<double>::infinity())), OpCode::kMinimum, {1});
    Value y = b.subtract(x, b.broadcast_in_dim(mx, dims, {0}));
    const Graph g = build_ok(b, {y, mx, mn});
    Literal arg(Shape(DType::kF64, dims));
    auto a = arg.data<double>();
    const double specials[] = {0.0, -0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::size_t r = i / 300;
      a[i] = r < 3 ? -std::abs(std::sin(0.1 * static_cast<double>(i))) : std::sin(0.1 * static_cast<double>(i));
      if (r == 1 && i % 300 == 250) a[i] = 0.0;  // max is +0 of a row with -0 too
      if (r == 1 && i % 300 == 17) a[i] = -0.0;
      if (r == 2 && i % 53 == 0) a[i] = -0.0;      // max is -0
      if (r == 4 && i % 300 == 299) a[i] = std::numeric_limits<double>::quiet_NaN();
      if (r == 5) a[i] = specials[i % 4];
    }
    check_with_reference(g, {in_dtype(t, arg)}, 0);
    CHECK(contains(listing(g), "row fusion["));
  }
}

TEST_CASE("cpu fusion: a row's max and min find a NaN or a signed zero wherever it sits, at every row length") {
  // The extremum runs in chains of four packets, then single packets, then elements: rows of
  // every length around those steps (16 f32 or 8 f64 lanes under AVX-512, fewer below), with
  // one NaN in turn at the first element, in the middle and at the last, and rows whose
  // extremum is a zero of either sign beside zeros of the other.
  for (DType t : {DType::kF32, DType::kF64}) {
    for (std::int64_t n : {1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 71, 127, 128, 129, 200}) {
      CAPTURE(dtype_name(t));
      CAPTURE(n);
      const std::vector<std::int64_t> dims = {6, n};
      GraphBuilder b("extrema");
      Value x = b.parameter(Shape(t, dims));
      Value mx = b.reduce(x, b.constant(scalar_literal(t, -std::numeric_limits<double>::infinity())), OpCode::kMaximum, {1});
      Value mn = b.reduce(x, b.constant(scalar_literal(t, std::numeric_limits<double>::infinity())), OpCode::kMinimum, {1});
      const Graph g = build_ok(b, {mx, mn});
      Literal arg(Shape(DType::kF64, dims));
      auto a = arg.data<double>();
      const double nan = std::numeric_limits<double>::quiet_NaN();
      for (std::int64_t r = 0; r < 6; ++r) {
        for (std::int64_t i = 0; i < n; ++i) a[static_cast<std::size_t>(r * n + i)] = std::cos(0.7 * static_cast<double>(i + r));
        double* row = a.data() + r * n;
        if (r == 0) row[0] = nan;
        if (r == 1) row[n / 2] = nan;
        if (r == 2) row[n - 1] = nan;
        if (r == 3) row[0] = -nan;  // the sign of a NaN is no number either
        if (r >= 4) {
          // Every element at or below -1 (r == 4: the max is a zero) or at or above 1 (r == 5:
          // the min is), with zeros of both signs at the ends.
          for (std::int64_t i = 0; i < n; ++i) row[i] = (r == 4 ? -1.0 : 1.0) * (1.0 + std::abs(row[i]));
          row[n - 1] = r == 4 ? -0.0 : 0.0;
          row[0] = r == 4 ? 0.0 : -0.0;
          if (n == 1) row[0] = r == 4 ? -0.0 : 0.0;
        }
      }
      check_with_reference(g, {in_dtype(t, arg)}, 0);
    }
  }
}

TEST_CASE("cpu fusion: reductions over leading or middle dimensions do not take the row path") {
  const std::vector<std::int64_t> dims = {6, 5, 4};
  for (const std::vector<std::int64_t>& reduced : {std::vector<std::int64_t>{0}, std::vector<std::int64_t>{1},
                                                   std::vector<std::int64_t>{0, 2}}) {
    GraphBuilder b("not_rows");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value s = b.reduce(x, b.constant(0.0f), OpCode::kAdd, reduced);
    std::vector<std::int64_t> kept;
    for (std::int64_t d = 0; d < 3; ++d)
      if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
    const Graph g = build_ok(b, {b.subtract(x, b.broadcast_in_dim(s, dims, kept))});
    check_with_reference(g, {pattern_literal(Shape(DType::kF32, dims), 7)}, 1e-5);
    CHECK(!contains(listing(g), "row fusion"));
  }
}

TEST_CASE("cpu fusion: a reduced value that leaves the row group still gives the right answer") {
  const std::vector<std::int64_t> dims = {23, 41};
  SUBCASE("read by consumers of other shapes and returned") {
    GraphBuilder b("shared");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value s = b.reduce(x, b.constant(0.0f), OpCode::kAdd, {1});
    Value per_row = b.divide(x, b.broadcast_in_dim(s, dims, {0}));
    Value across = b.multiply(b.broadcast_in_dim(s, {7, 23}, {1}), b.broadcast_in_dim(b.constant(2.0f), {7, 23}, {}));
    const Graph g = build_ok(b, {per_row, across, s});
    check_with_reference(g, {pattern_literal(Shape(DType::kF32, dims), 8)}, 2e-5);
    CHECK(contains(listing(g), "row fusion["));
  }
  SUBCASE("a path that leaves the group and comes back") {
    GraphBuilder b("reenters");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value m = b.reduce(x, b.constant(-INFINITY), OpCode::kMaximum, {1});
    Value flipped = b.reverse(m, {0});  // not row by row: the group may not wrap it
    Value y = b.subtract(x, b.broadcast_in_dim(flipped, dims, {0}));
    Value z = b.multiply(y, b.broadcast_in_dim(m, dims, {0}));
    const Graph g = build_ok(b, {z, flipped});
    check_with_reference(g, {pattern_literal(Shape(DType::kF32, dims), 9)}, 0);
  }
  SUBCASE("read outside the group before the group's last op") {
    GraphBuilder b("early_reader");
    Value x = b.parameter(Shape(DType::kF32, dims));
    Value s = b.reduce(x, b.constant(0.0f), OpCode::kAdd, {1});
    Value outside = b.reverse(s, {0});
    Value y = b.divide(x, b.broadcast_in_dim(s, dims, {0}));
    const Graph g = build_ok(b, {outside, y});
    check_with_reference(g, {pattern_literal(Shape(DType::kF32, dims), 10)}, 2e-5);
  }
}

TEST_CASE("cpu fusion: vector broadcasts along any dimensions fuse into element-wise loops bit for bit") {
  // Along the leading dimension, the trailing one, a middle one, through a dimension of size
  // one, and to a shape whose other dimensions are all one; tiles start mid-row.
  for (DType t : {DType::kF32, DType::kF64, DType::kS32}) {
    CAPTURE(dtype_name(t));
    for (const std::vector<std::int64_t>& dims :
         {std::vector<std::int64_t>{37, 203}, std::vector<std::int64_t>{1, 9}, std::vector<std::int64_t>{9, 1}}) {
      CAPTURE(Shape::dims_string(dims));
      GraphBuilder b("broadcasts");
      Value x = b.parameter(Shape(t, dims));
      Value col = b.parameter(Shape(t, {dims[0]}));
      Value row = b.parameter(Shape(t, {dims[1]}));
      Value column_matrix = b.parameter(Shape(t, {dims[0], 1}));
      Value y = b.maximum(b.subtract(x, b.broadcast_in_dim(col, dims, {0})), b.broadcast_in_dim(row, dims, {1}));
      Value z = b.add(y, b.broadcast_in_dim(column_matrix, dims, {0, 1}));
      const Graph g = build_ok(b, {z});
      check_with_reference(g, {pattern_literal(Shape(t, dims), 11), pattern_literal(Shape(t, {dims[0]}), 12),
                               pattern_literal(Shape(t, {dims[1]}), 13), pattern_literal(Shape(t, {dims[0], 1}), 14)}, 0);
      const std::string text = listing(g);
      CAPTURE(text);
      CHECK(contains(text, ": 1 kernels"));
      CHECK(!contains(text.substr(text.find("cpu program")), "= broadcast_in_dim("));
    }
    const std::vector<std::int64_t> cube = {4, 5, 6};
    GraphBuilder b("middle");
    Value x = b.parameter(Shape(t, cube));
    Value mid = b.parameter(Shape(t, {5}));
    Value lead = b.parameter(Shape(t, {4, 5}));
    const Graph g = build_ok(b, {b.subtract(b.multiply(x, b.broadcast_in_dim(mid, cube, {1})), b.broadcast_in_dim(lead, cube, {0, 1}))});
    check_with_reference(g, {pattern_literal(Shape(t, cube), 15), pattern_literal(Shape(t, {5}), 16),
                             pattern_literal(Shape(t, {4, 5}), 17)}, t == DType::kS32 ? 0 : 1e-6);
    CHECK(contains(listing(g), ": 1 kernels"));
  }
}

TEST_CASE("cpu fusion: a transpose that keeps the layout is a view, not a copy") {
  // [1, 5, 1, 7] -> [1, 1, 5, 7]: only dimensions of size one move. A real transpose of the
  // same array stays a copy.
  GraphBuilder b("views");
  Value x = b.parameter(Shape(DType::kF32, {1, 5, 1, 7}));
  Value moved = b.transpose(x, {2, 0, 1, 3});
  Value swapped = b.transpose(x, {0, 3, 2, 1});
  const Graph g = build_ok(b, {b.exponential(moved), b.negate(swapped)});
  check_with_reference(g, {pattern_literal(Shape(DType::kF32, {1, 5, 1, 7}), 18)}, 1e-6);  // Eigen's exp
  const std::string text = listing(g);
  CAPTURE(text);
  CHECK(contains(text, ": 3 kernels"));  // exp's loop, the real transpose, negate's loop
  const Graph h = build_ok(b, {moved});  // an output of its own: copied once
  check_with_reference(h, {pattern_literal(Shape(DType::kF32, {1, 5, 1, 7}), 19)}, 0);
}

}  // namespace cpu_executable_test

namespace cpu_executable_test {

namespace {

/// conv 3x3 NHWC + bias + relu, a matrix product, and layer norm's rows: every kernel family
/// whose inner loops Eigen or the packed GEMM vectorize.
Graph kernel_families_graph() {
  GraphBuilder b("kernel_families");
  Value image = b.parameter(Shape(DType::kF32, {2, 9, 9, 8}));
  Value filter = b.parameter(Shape(DType::kF32, {3, 3, 8, 16}));
  Value bias = b.parameter(Shape(DType::kF32, {16}));
  Value lhs = b.parameter(Shape(DType::kF32, {37, 70}));
  Value rhs = b.parameter(Shape(DType::kF32, {70, 45}));
  ConvolutionAttrs conv;
  conv.padding_low = {1, 1};
  conv.padding_high = {1, 1};
  conv.input_batch_dimension = 0;
  conv.input_feature_dimension = 3;
  conv.input_spatial_dimensions = {1, 2};
  conv.kernel_spatial_dimensions = {0, 1};
  conv.kernel_input_feature_dimension = 2;
  conv.kernel_output_feature_dimension = 3;
  conv.output_batch_dimension = 0;
  conv.output_feature_dimension = 3;
  conv.output_spatial_dimensions = {1, 2};
  Value c = b.add(b.convolution(image, filter, conv), b.broadcast_in_dim(bias, {2, 9, 9, 16}, {3}));
  Value relu = b.maximum(c, b.broadcast_in_dim(b.constant(0.0f), {2, 9, 9, 16}, {}));
  Value product = b.dot_general(lhs, rhs, DotDimensionNumbers{{}, {}, {1}, {0}});
  Value sum = b.reduce(product, b.constant(0.0f), OpCode::kAdd, {1});
  Value mean = b.divide(sum, b.broadcast_in_dim(b.constant(45.0f), {37}, {}));
  Value centered = b.subtract(product, b.broadcast_in_dim(mean, {37, 45}, {0}));
  Value var = b.reduce(b.multiply(centered, centered), b.constant(0.0f), OpCode::kAdd, {1});
  Value scale = b.rsqrt(b.add(b.divide(var, b.broadcast_in_dim(b.constant(45.0f), {37}, {})),
                              b.broadcast_in_dim(b.constant(1e-5f), {37}, {})));
  Value norm = b.tanh(b.multiply(centered, b.broadcast_in_dim(scale, {37, 45}, {0})));
  return build_ok(b, {relu, norm});
}

}  // namespace

TEST_CASE("cpu executable: every build of the kernels this process has computes what the reference does") {
  const std::vector<cpu::KernelIsa> isas = cpu::available_kernel_isas();
  REQUIRE(!isas.empty());
  auto client = make_client();
  const Graph g = kernel_families_graph();
  std::mt19937_64 rng(7);
  std::vector<Literal> args;
  for (const Shape& s : g.parameter_shapes()) args.push_back(random_literal<float>(rng, s, -1, 1));
  const std::vector<Literal> want = evaluate_ok(g, args);
  // The default is the best build this CPU runs.
  CHECK(client->compile(g).value().kernel_isa() == isas.front());
  for (cpu::KernelIsa isa : isas) {
    CAPTURE(cpu::kernel_isa_name(isa));
    cpu::CompileOptions options;
    options.kernel_isa = isa;
    CHECK(client->compile(g, options).value().kernel_isa() == isa);
    const std::vector<Literal> got = run(*client, g, args, options);
    REQUIRE(got.size() == want.size());
    for (std::size_t r = 0; r < want.size(); ++r) {
      const auto gv = got[r].data<float>();
      const auto wv = want[r].data<float>();
      REQUIRE(gv.size() == wv.size());
      double worst = 0;
      for (std::size_t i = 0; i < gv.size(); ++i)
        worst = std::max(worst, double(std::abs(gv[i] - wv[i])) / (1.0 + std::abs(double(wv[i]))));
      CAPTURE(r);
      CHECK(worst < 2e-5);
    }
  }
}

namespace {

/// f32 or f64 values across the whole range: every binade's random mantissas, denormals,
/// zeros, infinities, NaN and negatives.
template <class T>
Literal sqrt_inputs(std::mt19937_64& rng) {
  std::vector<T> v = {T(0), -T(0), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                      std::numeric_limits<T>::quiet_NaN(), T(-1), T(-0.5), std::numeric_limits<T>::denorm_min(),
                      std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(1), T(4), T(2)};
  std::uniform_real_distribution<T> mantissa(T(1), T(2));
  for (int e = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;
       e <= std::numeric_limits<T>::max_exponent; ++e)
    for (int k = 0; k < 3; ++k) v.push_back(std::ldexp(mantissa(rng), e - 1));
  for (int k = 0; k < 2000; ++k) v.push_back(mantissa(rng) * T(1 << (k % 20)));  // squares and near-squares
  for (int k = 0; k < 64; ++k) v.push_back(T(k) * T(k));
  Literal l(Shape(dtype_of<T>, {static_cast<std::int64_t>(v.size())}));
  std::copy(v.begin(), v.end(), l.data<T>().begin());
  return l;
}

template <class T>
void check_sqrt_rounding(cpu::Client<>& client, cpu::KernelIsa isa, OpCode op) {
  std::mt19937_64 rng(11);
  const Literal x = sqrt_inputs<T>(rng);
  GraphBuilder b("sqrt");
  const Graph g = build_ok(b, {b.unary(op, b.parameter(x.shape()))});
  cpu::CompileOptions options;
  options.kernel_isa = isa;
  const std::vector<Literal> got = run(client, g, {x}, options);
  REQUIRE(got.size() == 1);
  const auto in = x.data<T>();
  const auto out = got[0].data<T>();
  REQUIRE(out.size() == in.size());
  int wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const T want = op == OpCode::kSqrt ? std::sqrt(in[i]) : T(1) / std::sqrt(in[i]);
    const bool same = std::isnan(want) ? std::isnan(out[i]) : std::memcmp(&want, &out[i], sizeof(T)) == 0;
    if (!same && wrong++ < 3) CHECK_MESSAGE(same, op_name(op), "(", in[i], ") = ", out[i], ", not ", want);
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("cpu executable: sqrt and rsqrt round as the C library's on every build of the kernels") {
  // IEEE 754 rounds a square root once; rsqrt is 1 / sqrt, two roundings. The oracle is the C
  // library's std::sqrt, bit for bit, on f32 and f64 from denormals to infinity.
  auto client = make_client();
  for (cpu::KernelIsa isa : cpu::available_kernel_isas()) {
    CAPTURE(cpu::kernel_isa_name(isa));
    for (OpCode op : {OpCode::kSqrt, OpCode::kRsqrt}) {
      check_sqrt_rounding<float>(*client, isa, op);
      check_sqrt_rounding<double>(*client, isa, op);
    }
  }
}

TEST_CASE("cpu executable: the builds of the kernels the CMake build was asked for are there, and others are refused") {
  const std::vector<cpu::KernelIsa> isas = cpu::available_kernel_isas();
  auto has = [&](cpu::KernelIsa isa) { return std::find(isas.begin(), isas.end(), isa) != isas.end(); };
  // PJRT_LITE_KERNEL_LEVELS of this build, as the tests' compile definition (',' for ';').
  const std::string_view levels = PJRT_LITE_TEST_KERNEL_LEVELS;
  for (cpu::KernelIsa isa : {cpu::KernelIsa::kX86_64_V3, cpu::KernelIsa::kX86_64_V4}) {
    CAPTURE(cpu::kernel_isa_name(isa));
    if (contains(levels, cpu::kernel_isa_name(isa))) CHECK(has(isa) == cpu::cpu_runs_kernel_isa(isa));
  }
  // Best first: a level above another comes before it.
  if (has(cpu::KernelIsa::kX86_64_V3) && isas.front() != cpu::KernelIsa::kX86_64_V4)
    CHECK(isas.front() == cpu::KernelIsa::kX86_64_V3);
  auto client = make_client();
  GraphBuilder b("negate");
  const Graph g = build_ok(b, {b.negate(b.parameter(Shape(DType::kF32, {4})))});
  for (cpu::KernelIsa isa : {cpu::KernelIsa::kBaseline, cpu::KernelIsa::kX86_64_V3, cpu::KernelIsa::kX86_64_V4}) {
    if (has(isa)) continue;
    CAPTURE(cpu::kernel_isa_name(isa));
    cpu::CompileOptions options;
    options.kernel_isa = isa;
    auto exe = client->compile(g, options);
    REQUIRE(!exe.ok());
    CHECK((exe.status().code() == StatusCode::kInvalidArgument || exe.status().code() == StatusCode::kFailedPrecondition));
    CHECK(contains(exe.status().message(), cpu::kernel_isa_name(isa)));
  }
}

// ---- Custom layouts (PJRT's argument and result layouts) --------------------------------------

namespace {

/// The elements of the row-major literal `l` of dims [r, c] in column-major order: what a
/// buffer laid out minor to major as {0, 1} holds, byte for byte.
template <class T>
std::vector<T> column_major(const Literal& l) {
  const std::int64_t r = l.shape().dim(0), c = l.shape().dim(1);
  const std::vector<T> v = values_of<T>(l);
  std::vector<T> out;
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < r; ++i) out.push_back(v[static_cast<std::size_t>(i * c + j)]);
  return out;
}

template <class T>
std::vector<T> raw_contents(const cpu::Buffer<>& b) {
  std::vector<T> out(static_cast<std::size_t>(b.on_device_shape().element_count()));
  REQUIRE(b.copy_raw_to_host(out.data(), 0, static_cast<std::int64_t>(out.size() * sizeof(T))).await().ok());
  return out;
}

}  // namespace

TEST_CASE("cpu layouts: executables take and make the layouts the compile options name") {
  auto client = make_client();
  // x (s32[2,3], column-major) . y (s32[3,4]) in column-major, and x + 1 row-major.
  GraphBuilder b("laid_out");
  Value x = b.parameter(Shape(kS32, {2, 3}));
  Value y = b.parameter(Shape(kS32, {3, 4}));
  Value one = b.broadcast_in_dim(b.constant(std::int32_t{1}), {2, 3}, {});
  const Graph g = build_ok(b, {b.dot(x, y), b.add(x, one)});
  std::mt19937_64 rng(5);
  std::vector<Literal> args;
  for (const Shape& s : {Shape(kS32, {2, 3}), Shape(kS32, {3, 4})}) {
    Literal l(s);
    for (std::int32_t& v : l.data<std::int32_t>()) v = static_cast<std::int32_t>(rng() % 19) - 9;
    args.push_back(std::move(l));
  }
  const std::vector<Literal> want = evaluate_ok(g, args);

  cpu::CompileOptions options;
  options.argument_layouts = {{0, 1}, {}};
  options.result_layouts = {{0, 1}, {1, 0}};
  auto exe = client->compile(g, options).value();
  CHECK(exe.parameter_layouts() == std::vector<std::vector<std::int64_t>>{{0, 1}, {1, 0}});
  CHECK(exe.output_layouts() == std::vector<std::vector<std::int64_t>>{{0, 1}, {1, 0}});
  CHECK(exe.parameter_shapes()[0] == with_minor_to_major(Shape(kS32, {2, 3}), std::vector<std::int64_t>{0, 1}).value());

  auto x_rows = client->buffer_from_literal(args[0]).value();
  auto y_rows = client->buffer_from_literal(args[1]).value();
  CHECK(x_rows.minor_to_major() == std::vector<std::int64_t>{1, 0});
  // A row-major x is refused, naming both layouts.
  check_error(exe.execute({&x_rows, &y_rows}).status(), StatusCode::kInvalidArgument,
              "argument 0 is laid out minor to major as [1,0] but parameter 0 takes [0,1]");
  // copy_to_layout makes the column-major copy: its bytes are x's columns.
  auto x_cols = x_rows.copy_to_layout(std::vector<std::int64_t>{0, 1}).value();
  CHECK(x_cols.minor_to_major() == std::vector<std::int64_t>{0, 1});
  CHECK(raw_contents<std::int32_t>(x_cols) == column_major<std::int32_t>(args[0]));
  const Literal x_back = x_cols.to_literal().await().value();
  CHECK(x_back.shape().major_to_minor()[0] == 1);
  CHECK(x_back.with_default_layout() == args[0]);

  auto out = exe.execute({&x_cols, &y_rows}).value();
  REQUIRE(out.size() == 2);
  CHECK(out[0].minor_to_major() == std::vector<std::int64_t>{0, 1});
  CHECK(raw_contents<std::int32_t>(out[0]) == column_major<std::int32_t>(want[0]));
  CHECK(out[0].to_literal().await().value().with_default_layout() == want[0]);
  CHECK(out[1].minor_to_major() == std::vector<std::int64_t>{1, 0});
  CHECK(out[1].to_literal().await().value() == want[1]);
  // Back to row-major by a copy.
  auto dot_rows = out[0].copy_to_layout(std::vector<std::int64_t>{1, 0}).value();
  CHECK(raw_contents<std::int32_t>(dot_rows) == values_of<std::int32_t>(want[0]));

  // Serialization keeps the layouts; the compile cache tells layouts apart.
  auto again = client->deserialize_executable(exe.serialize()).value();
  CHECK(again.parameter_layouts() == exe.parameter_layouts());
  CHECK(again.output_layouts() == exe.output_layouts());
  auto plain = client->compile(g).value();
  CHECK(plain.parameter_layouts() == std::vector<std::vector<std::int64_t>>{{1, 0}, {1, 0}});
  CHECK(plain.execute({&x_rows, &y_rows}).value()[0].to_literal().await().value() == want[0]);
  // A blob of format version 3 (before layouts and argument memory kinds: their three
  // counts, zero here, absent) still loads, with row-major layouts. Byte 42 is where default
  // options' counts begin.
  std::vector<std::byte> v3 = plain.serialize();
  REQUIRE(v3.size() > 60);
  for (std::size_t k = 42; k < 54; ++k) REQUIRE(v3[k] == std::byte{0});
  v3.erase(v3.begin() + 42, v3.begin() + 54);
  v3[4] = std::byte{3};
  const std::uint64_t checksum = fnv1a64(std::span<const std::byte>(v3).first(v3.size() - 8));
  std::memcpy(v3.data() + v3.size() - 8, &checksum, 8);
  auto old = client->deserialize_executable(v3);
  REQUIRE_MESSAGE(old.ok(), old.status().to_string());
  CHECK(old->parameter_layouts() == plain.parameter_layouts());
  CHECK(old->compile_options() == plain.compile_options());
}

TEST_CASE("cpu layouts: every order of a rank-3 array, through copies and a program") {
  auto client = make_client();
  const Shape s(kF32, {2, 3, 4});
  Literal x(s);
  for (std::size_t i = 0; i < x.data<float>().size(); ++i) x.data<float>()[i] = static_cast<float>(i);
  auto rows = client->buffer_from_literal(x).value();
  GraphBuilder b("negate");
  const Graph g = build_ok(b, {b.negate(b.parameter(s))});
  const Literal negated = evaluate_ok(g, {x})[0];
  std::vector<std::int64_t> order = {0, 1, 2};
  do {
    CAPTURE(Shape::dims_string(order));
    auto laid = rows.copy_to_layout(order).value();
    // Element (i, j, k) sits at the offset its strides in this layout give.
    const Shape target = with_minor_to_major(s, order).value();
    const std::vector<std::int64_t> strides = target.byte_strides();
    const std::vector<float> raw = raw_contents<float>(laid);
    bool placed = true;
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 4; ++k)
          placed &= raw[static_cast<std::size_t>((i * strides[0] + j * strides[1] + k * strides[2]) / 4)] ==
                    static_cast<float>(i * 12 + j * 4 + k);
    CHECK(placed);
    cpu::CompileOptions options;
    options.argument_layouts = {order};
    options.result_layouts = {order};
    auto exe = client->compile(g, options).value();
    auto out = exe.execute({&laid}).value();
    CHECK(out[0].minor_to_major() == order);
    CHECK(out[0].to_literal().await().value().with_default_layout() == negated);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_CASE("cpu layouts: bad layouts are clear errors, and StableHLO's mhlo.layout_mode names them") {
  auto client = make_client();
  GraphBuilder b("id");
  const Graph g = build_ok(b, {b.negate(b.parameter(Shape(kF32, {2, 3})))});
  cpu::CompileOptions options;
  options.argument_layouts = {{0, 0}};
  check_error(client->compile(g, options).status(), StatusCode::kInvalidArgument,
              "CompileOptions.argument_layouts[0]: minor-to-major [0,0] is not an order of the 2 dimensions");
  options.argument_layouts = {{0, 1}, {0, 1}};
  check_error(client->compile(g, options).status(), StatusCode::kInvalidArgument,
              "argument_layouts lists 2 layouts for the 1 parameters");
  options.argument_layouts = {};
  options.result_layouts = {{2, 1, 0}};
  check_error(client->compile(g, options).status(), StatusCode::kInvalidArgument, "result_layouts[0]");
  auto buffer = client->buffer_from_literal(Literal(Shape(kF32, {2, 3}))).value();
  check_error(buffer.copy_to_layout(std::vector<std::int64_t>{1}).status(), StatusCode::kInvalidArgument,
              "copy_to_layout: minor-to-major [1] is not an order");

  // JAX writes the layouts it was asked for as mhlo.layout_mode; "default" names none.
  const std::string text = R"(func.func public @main(%x: tensor<2x3xf32> {mhlo.layout_mode = "{0,1}"}, %y: tensor<2x3xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3xf32> {mhlo.layout_mode = "{0,1}"}) {
    %s = stablehlo.add %x, %y : tensor<2x3xf32>
    return %s : tensor<2x3xf32>
  })";
  auto exe = client->compile(text).value();
  CHECK(exe.parameter_layouts() == std::vector<std::vector<std::int64_t>>{{0, 1}, {1, 0}});
  CHECK(exe.output_layouts() == std::vector<std::vector<std::int64_t>>{{0, 1}});
  Literal x(Shape(kF32, {2, 3}));
  for (std::size_t i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i) * 0.5f;
  auto xr = client->buffer_from_literal(x).value();
  auto xc = xr.copy_to_layout(std::vector<std::int64_t>{0, 1}).value();
  auto sum = exe.execute({&xc, &xr}).value();
  Literal doubled(Shape(kF32, {2, 3}));
  for (std::size_t i = 0; i < 6; ++i) doubled.data<float>()[i] = static_cast<float>(i);
  CHECK(sum[0].to_literal().await().value().with_default_layout() == doubled);
  std::string tiled = text;
  tiled.replace(tiled.find("{0,1}"), 5, "{0,1:T(8,128)}");
  check_error(client->compile(tiled).status(), StatusCode::kUnimplemented, "tiled layouts are not supported");
}

}  // namespace cpu_executable_test
