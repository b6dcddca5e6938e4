// Tests of the reference interpreter. Each builds a graph, evaluates it and compares with an
// independent oracle: the spec's worked examples, closed forms computed here with plain
// loops or std:: functions, or hand-worked edge cases (integer division by zero, shifts out
// of range, NaN in max/min, totalOrder, ties in rounding and argmax, f16 rounding, empty and
// rank-0 tensors). A final sweep runs every element-wise op on every type it accepts over
// edge values, so sanitizers see every path.

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/core/random_bits.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/transforms/autodiff.hpp"
#include "control_flow.hpp"
#include "test_util.hpp"

namespace reference_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

constexpr ComparisonDirection kEq = ComparisonDirection::kEq;
constexpr ComparisonDirection kNe = ComparisonDirection::kNe;
constexpr ComparisonDirection kGe = ComparisonDirection::kGe;
constexpr ComparisonDirection kGt = ComparisonDirection::kGt;
constexpr ComparisonDirection kLe = ComparisonDirection::kLe;
constexpr ComparisonDirection kLt = ComparisonDirection::kLt;
constexpr ComparisonDirection kAllDirections[] = {kEq, kNe, kGe, kGt, kLe, kLt};

template <class T>
constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
template <class T>
constexpr T kInf = std::numeric_limits<T>::infinity();

// ---- Building literals and graphs ---------------------------------------------------------

/// A literal of `dims` (row-major) holding `values`.
template <Element T>
Literal make(std::initializer_list<T> values, std::initializer_list<std::int64_t> dims) {
  StatusOr<Literal> l =
      Literal::from_span<T>(std::span<const T>(values.begin(), values.size()),
                            std::span<const std::int64_t>(dims.begin(), dims.size()));
  REQUIRE_MESSAGE(l.ok(), l.status().to_string());
  return *std::move(l);
}
/// The same from a vector (not for bool: std::vector<bool> has no contiguous storage).
template <Element T>
Literal make_from(const std::vector<T>& values, const std::vector<std::int64_t>& dims) {
  StatusOr<Literal> l =
      Literal::from_span<T>(std::span<const T>(values), std::span<const std::int64_t>(dims));
  REQUIRE_MESSAGE(l.ok(), l.status().to_string());
  return *std::move(l);
}


/// Evaluates the graph of `b` returning `outputs` on `args`; every step must succeed.
std::vector<Literal> run(const GraphBuilder& b, const std::vector<Value>& outputs,
                         const std::vector<Literal>& args = {}) {
  std::vector<Literal> r = evaluate_ok(build_ok(b, outputs), args);
  REQUIRE(r.size() == outputs.size());
  return r;
}
Literal run1(const GraphBuilder& b, Value output, const std::vector<Literal>& args = {}) {
  return run(b, {output}, args).front();
}

/// op(x) through a one-node graph on a parameter.
Literal apply(OpCode op, const Literal& x) {
  GraphBuilder b("unary");
  Value v = b.unary(op, b.parameter(x.shape()));
  return run1(b, v, {x});
}
/// op(x, y) through a one-node graph on two parameters.
Literal apply(OpCode op, const Literal& x, const Literal& y) {
  GraphBuilder b("binary");
  Value p = b.parameter(x.shape());
  Value q = b.parameter(y.shape());
  return run1(b, b.binary(op, p, q), {x, y});
}
Literal compare(const Literal& x, const Literal& y, ComparisonDirection d,
                ComparisonType t = ComparisonType::kNotype) {
  GraphBuilder b("compare");
  Value p = b.parameter(x.shape());
  Value q = b.parameter(y.shape());
  return run1(b, b.compare(p, q, d, t), {x, y});
}

// ---- Comparing results --------------------------------------------------------------------

template <class T>
auto bits_of(T x) {
  if constexpr (sizeof(T) == 2) {
    std::uint16_t b;
    std::memcpy(&b, &x, 2);
    return b;
  } else if constexpr (sizeof(T) == 4) {
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  } else {
    std::uint64_t b;
    std::memcpy(&b, &x, 8);
    return b;
  }
}

/// Equal values, where any NaN equals any NaN and -0 differs from +0 (bit equality).
template <class T>
bool same(T got, T want) {
  if constexpr (is_complex_v<T>) {
    return same(got.real(), want.real()) && same(got.imag(), want.imag());
  } else if constexpr (is_float_v<T>) {
    if (std::isnan(static_cast<double>(got)) && std::isnan(static_cast<double>(want))) return true;
    return bits_of(got) == bits_of(want);
  } else {
    return got == want;
  }
}

/// Within `rel` relative error (or `rel` absolute error near zero); NaN only matches NaN.
template <class T>
bool near(T got, T want, double rel) {
  if constexpr (is_complex_v<T>) {
    return near(got.real(), want.real(), rel) && near(got.imag(), want.imag(), rel);
  } else {
    const double g = static_cast<double>(got), w = static_cast<double>(want);
    if (std::isnan(w)) return std::isnan(g);
    if (std::isinf(w)) return g == w;
    return std::fabs(g - w) <= rel * std::max(1.0, std::fabs(w));
  }
}

/// `got` has element type T, the given dims, and exactly the values `want` (see same()).
template <Element T>
void expect(const Literal& got, const std::vector<T>& want, std::vector<std::int64_t> dims) {
  REQUIRE_MESSAGE(got.dtype() == dtype_of<T>, got.shape());
  CHECK_MESSAGE(std::vector<std::int64_t>(got.dims().begin(), got.dims().end()) == dims,
                got.shape());
  CHECK(got.shape().has_default_layout());
  REQUIRE(got.element_count() == static_cast<std::int64_t>(want.size()));
  std::span<const T> g = got.data<T>();
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK_MESSAGE(same(g[i], static_cast<T>(want[i])), "element ", i, " of ", got.to_string(),
                  " differs from ",
                  Literal::from_span<T>(std::span<const T>(&want[i], 1), {1})->to_string());
}
/// A rank-1 `got` of exactly `want`.
template <Element T>
void expect(const Literal& got, const std::vector<T>& want) {
  expect<T>(got, want, {static_cast<std::int64_t>(want.size())});
}
/// For pred results, which cannot use std::vector<bool> storage.
void expect_preds(const Literal& got, std::initializer_list<bool> want) {
  REQUIRE(got.dtype() == kPred);
  REQUIRE(got.element_count() == static_cast<std::int64_t>(want.size()));
  std::size_t i = 0;
  for (bool w : want) {
    CHECK_MESSAGE(got.data<bool>()[i] == w, "element ", i, " of ", got.to_string());
    ++i;
  }
}


// ---- Sample values for the sweep ----------------------------------------------------------

/// Edge values of a type: limits, ±1, 0, shift widths for integers; NaN, infinities, ±0,
/// extremes, subnormals and ties for floats; their pairs for complex.
Literal samples(DType dtype) {
  return visit_dtype(dtype, [&]<class T>(std::type_identity<T>) -> Literal {
    if constexpr (std::is_same_v<T, bool>) {
      return make<bool>({false, true}, {2});
    } else if constexpr (is_int_v<T>) {
      using L = std::numeric_limits<T>;
      const T bits = static_cast<T>(sizeof(T) * 8);
      std::vector<T> v = {L::min(),
                          static_cast<T>(L::min() + 1),
                          static_cast<T>(-1),
                          0,
                          1,
                          2,
                          3,
                          static_cast<T>(bits - 1),
                          bits,
                          static_cast<T>(bits + 1),
                          static_cast<T>(L::max() - 1),
                          L::max()};
      return make_from<T>(v, {static_cast<std::int64_t>(v.size())});
    } else if constexpr (is_float_v<T>) {
      using L = std::numeric_limits<T>;
      std::vector<T> v = {L::quiet_NaN(), -L::infinity(), L::lowest(), T(-2.5f),        T(-1.0f),
                          T(-0.5f),       T(-0.0f),       T(0.0f),     L::denorm_min(), L::min(),
                          T(0.5f),        T(1.0f),        T(1.5f),     T(3.0f),         T(100.0f),
                          L::max(),       L::infinity()};
      return make_from<T>(v, {static_cast<std::int64_t>(v.size())});
    } else {
      using R = typename T::value_type;
      const R parts[] = {kNaN<R>, -kInf<R>, R(-1.5), R(-0.0), R(0.0), R(0.5), R(1), R(3), kInf<R>};
      std::vector<T> v;
      for (R re : parts)
        for (R im : parts) v.emplace_back(re, im);
      return make_from<T>(v, {static_cast<std::int64_t>(v.size())});
    }
  });
}

/// Two literals that pair every sample with every sample: lhs[i*n+j] = s[i], rhs[..] = s[j].
std::pair<Literal, Literal> all_pairs(const Literal& s) {
  const std::int64_t n = s.element_count();
  Literal lhs(Shape(s.dtype(), {n * n})), rhs(Shape(s.dtype(), {n * n}));
  const auto size = static_cast<std::int64_t>(byte_size(s.dtype()));
  const auto* src = static_cast<const std::byte*>(s.untyped_data());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::memcpy(static_cast<std::byte*>(lhs.untyped_data()) + (i * n + j) * size, src + i * size,
                  static_cast<std::size_t>(size));
      std::memcpy(static_cast<std::byte*>(rhs.untyped_data()) + (i * n + j) * size, src + j * size,
                  static_cast<std::size_t>(size));
    }
  return {std::move(lhs), std::move(rhs)};
}

}  // namespace

// ---- Sources, arguments and errors --------------------------------------------------------

TEST_CASE("reference: parameters, constants and outputs come back in order") {
  GraphBuilder b("outputs");
  Value x = b.parameter(Shape(kF32, {2}));
  Value n = b.parameter(Shape(kS32, {}));
  Value c = b.constant(make<std::int64_t>({1, 2, 3, 4, 5, 6}, {2, 3}));
  std::vector<Literal> out = run(
      b, {n, c, x, x}, {Literal::vector<float>({1.5f, -2.0f}), Literal::scalar<std::int32_t>(7)});
  expect<std::int32_t>(out[0], {7}, {});
  expect<std::int64_t>(out[1], {1, 2, 3, 4, 5, 6}, {2, 3});
  expect<float>(out[2], {1.5f, -2.0f});
  expect<float>(out[3], {1.5f, -2.0f});
}

TEST_CASE("reference: wrong argument count, dtype or dims is INVALID_ARGUMENT") {
  GraphBuilder b("checked");
  Value x = b.parameter(Shape(kF32, {2}));
  Value y = b.parameter(Shape(kS32, {}));
  StatusOr<Graph> g = b.build({b.negate(x), y});
  REQUIRE(g.ok());
  const Literal good_x = Literal::vector<float>({1, 2});
  const Literal good_y = Literal::scalar<std::int32_t>(3);

  std::vector<Literal> args;
  args.push_back(good_x);
  check_error(reference::evaluate(*g, args).status(), StatusCode::kInvalidArgument,
              "graph 'checked' takes 2 argument(s), got 1");

  args = {Literal::vector<std::int32_t>({1, 2}), good_y};
  check_error(reference::evaluate(*g, args).status(), StatusCode::kInvalidArgument,
              "argument 0 has shape s32[2] but parameter 0 of graph 'checked' has shape f32[2]");

  args = {good_x, Literal::vector<std::int32_t>({3})};
  check_error(reference::evaluate(*g, args).status(), StatusCode::kInvalidArgument,
              "argument 1 has shape s32[1] but parameter 1 of graph 'checked' has shape s32[]");

  args = {good_x, Literal()};  // an empty literal has an invalid shape
  check_error(reference::evaluate(*g, args).status(), StatusCode::kInvalidArgument, "argument 1");

  args = {good_x, good_y};
  CHECK(reference::evaluate(*g, args).ok());
}

TEST_CASE("reference: an unverified graph is rejected, not run") {
  GraphBuilder b("lies");
  Value x = b.parameter(Shape(kF32, {2}));
  b.negate(x);
  GraphParts parts = b.build(std::vector<Value>{}).value().to_parts();
  parts.nodes[1].results[0] = Shape(kF32, {5});  // negate claims a bigger result
  parts.outputs = {Value{1, 0, 0}};
  Graph g = Graph::from_parts(std::move(parts));
  std::vector<Literal> args;
  args.push_back(Literal::vector<float>({1, 2}));
  check_error(reference::evaluate(g, args).status(), StatusCode::kInvalidArgument,
              "inference gives");
}

TEST_CASE("reference: arguments in a non-default layout are read through it") {
  // [[1, 2, 3], [4, 5, 6]] stored column-major.
  const std::vector<float> column_major = {1, 4, 2, 5, 3, 6};
  const std::int64_t dims[] = {2, 3}, layout[] = {1, 0};
  Shape shape = Shape::make(kF32, dims, layout).value();
  Literal arg =
      Literal::from_bytes(shape, std::as_bytes(std::span<const float>(column_major))).value();

  GraphBuilder b("layout");
  Value x = b.parameter(Shape(kF32, {2, 3}));
  std::vector<Literal> out = run(b, {x, b.add(x, x), b.transpose(x, {1, 0})}, {arg});
  expect<float>(out[0], {1, 2, 3, 4, 5, 6}, {2, 3});
  expect<float>(out[1], {2, 4, 6, 8, 10, 12}, {2, 3});
  expect<float>(out[2], {1, 4, 2, 5, 3, 6}, {3, 2});
}

TEST_CASE("reference: iota (spec examples) in integer, float and complex types") {
  GraphBuilder b("iota");
  std::vector<Literal> out = run(b, {b.iota(Shape(kS32, {4, 5}), 0), b.iota(Shape(kS32, {4, 5}), 1),
                                     b.iota(Shape(kF16, {3}), 0), b.iota(Shape(kC64, {2, 2}), 1)});
  expect<std::int32_t>(out[0], {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3},
                       {4, 5});
  expect<std::int32_t>(out[1], {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4},
                       {4, 5});
  expect<f16>(out[2], {f16(0.0f), f16(1.0f), f16(2.0f)});
  expect<c64>(out[3], {c64(0, 0), c64(1, 0), c64(0, 0), c64(1, 0)}, {2, 2});
}

// ---- Unary element-wise ops ---------------------------------------------------------------

TEST_CASE_TEMPLATE("reference: unary float ops are the std:: functions", T, float, double) {
  const Literal x = make_from<T>({T(-2.5), T(-1), T(-0.25), T(-0.0), T(0.0), T(0.25), T(1), T(2.5),
                                  T(30), kInf<T>, -kInf<T>, kNaN<T>},
                                 {12});
  auto check = [&](OpCode op, auto f) {
    CAPTURE(op_name(op));
    std::vector<T> want;
    for (T v : values_of<T>(x)) want.push_back(static_cast<T>(f(v)));
    expect<T>(apply(op, x), want);
  };
  check(OpCode::kExponential, [](T v) { return std::exp(v); });
  check(OpCode::kExponentialMinusOne, [](T v) { return std::expm1(v); });
  check(OpCode::kLog, [](T v) { return std::log(v); });
  check(OpCode::kLogPlusOne, [](T v) { return std::log1p(v); });
  check(OpCode::kSqrt, [](T v) { return std::sqrt(v); });
  check(OpCode::kRsqrt, [](T v) { return T(1) / std::sqrt(v); });
  check(OpCode::kTanh, [](T v) { return std::tanh(v); });
  check(OpCode::kLogistic, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
  check(OpCode::kSine, [](T v) { return std::sin(v); });
  check(OpCode::kCosine, [](T v) { return std::cos(v); });
  check(OpCode::kTan, [](T v) { return std::tan(v); });
  check(OpCode::kFloor, [](T v) { return std::floor(v); });
  check(OpCode::kCeil, [](T v) { return std::ceil(v); });
  check(OpCode::kAbs, [](T v) { return std::fabs(v); });
  check(OpCode::kNegate, [](T v) { return -v; });
  check(OpCode::kReal, [](T v) { return v; });
  check(OpCode::kImag, [](T) { return T(0); });
}

TEST_CASE_TEMPLATE("reference: cbrt is exact on perfect cubes and within an ulp elsewhere", T,
                   float, double) {
  std::vector<T> cubes, roots;
  for (int i = -100; i <= 100; ++i) {
    cubes.push_back(static_cast<T>(i * i * i));
    roots.push_back(static_cast<T>(i));
  }
  for (T special : {T(-0.0), kInf<T>, -kInf<T>, kNaN<T>}) {
    cubes.push_back(special);
    roots.push_back(special);
  }
  const auto n = static_cast<std::int64_t>(cubes.size());
  expect<T>(apply(OpCode::kCbrt, make_from<T>(cubes, {n})), roots);
  const std::vector<T> xs = {T(0.001), T(-2.5), T(3), T(1e30), T(-7e-20), T(123456.789)};
  const Literal got = apply(OpCode::kCbrt, make_from<T>(xs, {6}));
  for (std::size_t i = 0; i < xs.size(); ++i)
    CHECK(near(got.data<T>()[i], std::cbrt(xs[i]), 2 * std::numeric_limits<T>::epsilon()));
}

TEST_CASE("reference: CHLO functions against closed forms and identities") {
  const double pi = std::numbers::pi, gamma = 0.57721566490153286;
  auto f64s = [](std::vector<double> v) { return make_from<double>(v, {std::int64_t(v.size())}); };
  auto near = [](double got, double want, double rel) {
    CHECK_MESSAGE(std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want)), got, " vs ", want);
  };
  // Closed forms: psi(1) = -gamma, psi(1/2) = -gamma - 2 ln 2, psi(n + 1) = H_n - gamma, and
  // lgamma(n) = ln (n-1)!, lgamma(1/2) = ln sqrt(pi).
  std::vector<double> dg = values_of<double>(apply(OpCode::kDigamma, f64s({1, 0.5, 11, -0.5})));
  near(dg[0], -gamma, 1e-15);
  near(dg[1], -gamma - 2 * std::log(2.0), 1e-15);
  double h10 = 0;
  for (int k = 1; k <= 10; ++k) h10 += 1.0 / k;
  near(dg[2], h10 - gamma, 1e-15);
  near(dg[3], -gamma - 2 * std::log(2.0) + 2, 1e-14);  // psi(1/2) = psi(-1/2) + 1/(-1/2)
  std::vector<double> lg = values_of<double>(apply(OpCode::kLgamma, f64s({5, 0.5, 1})));
  near(lg[0], std::log(24.0), 1e-15);
  near(lg[1], 0.5 * std::log(pi), 1e-15);
  CHECK(lg[2] == 0.0);
  // Poles of digamma are NaN.
  for (double v : values_of<double>(apply(OpCode::kDigamma, f64s({0, -3})))) CHECK(std::isnan(v));
  // erf_inv inverts erf, also deep in the tail; ±1 map to ±inf, outside [-1, 1] is NaN.
  const std::vector<double> ys = {-0.999999, -0.5, -1e-12, 0.1, 0.7, 1 - 1e-15};
  std::vector<double> xi = values_of<double>(apply(OpCode::kErfInv, f64s(ys)));
  for (std::size_t i = 0; i < ys.size(); ++i) near(std::erf(xi[i]), ys[i], 1e-15);
  near(std::erfc(xi.back()), 1e-15, 1e-9);
  std::vector<double> edge = values_of<double>(apply(OpCode::kErfInv, f64s({1, -1, 1.5})));
  CHECK(edge[0] == std::numeric_limits<double>::infinity());
  CHECK(edge[1] == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(edge[2]));
  // bessel_i1e against its power series exp(-|x|) sum (x/2)^(2k+1) / (k! (k+1)!), summed in
  // long double; odd in x.
  const std::vector<double> bx = {-3, 0.5, 10, 600};
  std::vector<double> bi = values_of<double>(apply(OpCode::kBesselI1e, f64s(bx)));
  for (std::size_t i = 0; i < bx.size(); ++i) {
    const long double h = std::fabs(bx[i]) / 2;
    long double term = h, sum = 0;
    for (int k = 0; k < 2000 && term != 0; ++k) {
      sum += term;
      term *= h * h / ((k + 1.0L) * (k + 2.0L));
    }
    near(bi[i], static_cast<double>(std::copysign(sum * std::exp(-2 * h), bx[i])), 1e-13);
  }
  // The elementary ones against their defining identities.
  const std::vector<double> xs = {-0.9, -0.3, 0.0, 0.4, 0.8};
  std::vector<double> as = values_of<double>(apply(OpCode::kAsin, f64s(xs)));
  std::vector<double> cs = values_of<double>(apply(OpCode::kCosh, f64s(xs)));
  std::vector<double> ac = values_of<double>(apply(OpCode::kAcosh, f64s(cs)));
  std::vector<double> at = values_of<double>(apply(OpCode::kAtan, f64s(xs)));
  std::vector<double> ah = values_of<double>(apply(OpCode::kAsinh, f64s(xs)));
  std::vector<double> th = values_of<double>(apply(OpCode::kAtanh, f64s(xs)));
  std::vector<double> ch = values_of<double>(apply(OpCode::kCosh, f64s(xs)));
  std::vector<double> sh = values_of<double>(apply(OpCode::kSinh, f64s(xs)));
  std::vector<double> ef = values_of<double>(apply(OpCode::kErf, f64s(xs)));
  std::vector<double> ec = values_of<double>(apply(OpCode::kErfc, f64s(xs)));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    near(std::sin(as[i]), x, 1e-15);
    near(ac[i], std::fabs(x), 1e-13);  // acosh(cosh x) = |x|
    near(std::tan(at[i]), x, 1e-15);
    near((std::exp(ah[i]) - std::exp(-ah[i])) / 2, x, 1e-15);
    near(std::log((1 + x) / (1 - x)) / 2, th[i], 1e-14);
    near(ch[i], (std::exp(x) + std::exp(-x)) / 2, 1e-15);
    near(sh[i], (std::exp(x) - std::exp(-x)) / 2, 1e-14);
    near(ef[i] + ec[i], 1.0, 1e-15);
  }
  near(ef[4], 0.74210096470766049, 1e-15);  // erf(0.8)
  // f16: computed wide, rounded once.
  const Literal h = make_from<f16>({f16(0.5f), f16(-2.0f)}, {2});
  expect<f16>(apply(OpCode::kSinh, h),
              {f16(static_cast<float>(std::sinh(0.5))), f16(static_cast<float>(std::sinh(-2.0)))});
  // erf and the other special functions take real floats only: complex is rejected by shape
  // inference, naming the op.
  GraphBuilder b("c");
  b.erf(b.parameter(Shape(kC64, {2})));
  CHECK(b.status().code() == StatusCode::kInvalidArgument);
  CHECK(b.status().message().find("erf") != std::string::npos);
}

TEST_CASE("reference: complex acosh .. sinh are the principal branches of their closed forms") {
  using C = std::complex<double>;
  using CL = std::complex<long double>;
  // Points in every quadrant, on both sides of the branch cuts (the real axis beyond +-1 for
  // asin and atanh, the imaginary axis beyond +-i for asinh and atan, the real axis left of 1
  // for acosh), and far from the origin.
  const std::vector<C> zs = {{0.3, 0.4}, {-1.5, 0.2}, {2.0, -0.1}, {-0.7, -2.5}, {0.1, 3.0},
                             {-0.2, -1.7}, {5.0, 7.0}, {0.0, 0.0}, {3.0, 1e-3}, {-3.0, -1e-3}};
  auto run_c = [&](OpCode op) {
    return values_of<C>(apply(op, make_from<C>(zs, {static_cast<std::int64_t>(zs.size())})));
  };
  const std::vector<C> acosh = run_c(OpCode::kAcosh), asin = run_c(OpCode::kAsin),
                       asinh = run_c(OpCode::kAsinh), atan = run_c(OpCode::kAtan),
                       atanh = run_c(OpCode::kAtanh), cosh = run_c(OpCode::kCosh),
                       sinh = run_c(OpCode::kSinh);
  const CL i(0, 1);
  auto close = [](C got, CL want, const char* what, C z) {
    INFO(what, " at ", z.real(), "+", z.imag(), "i: got ", got.real(), "+", got.imag(), "i");
    CHECK(std::abs(CL(got) - want) <= 1e-13L * std::max(1.0L, std::abs(want)));
  };
  for (std::size_t k = 0; k < zs.size(); ++k) {
    const CL z(zs[k]);
    // The textbook logarithmic forms, whose principal square roots and logs put each cut
    // where the C library (and XLA) put it.
    close(asinh[k], std::log(z + std::sqrt(z * z + 1.0L)), "asinh", zs[k]);
    close(acosh[k], std::log(z + std::sqrt(z + 1.0L) * std::sqrt(z - 1.0L)), "acosh", zs[k]);
    close(atanh[k], (std::log(1.0L + z) - std::log(1.0L - z)) / 2.0L, "atanh", zs[k]);
    close(asin[k], -i * std::log(i * z + std::sqrt(1.0L - z * z)), "asin", zs[k]);
    close(atan[k], i / 2.0L * (std::log(1.0L - i * z) - std::log(1.0L + i * z)), "atan", zs[k]);
    close(cosh[k], (std::exp(z) + std::exp(-z)) / 2.0L, "cosh", zs[k]);
    close(sinh[k], (std::exp(z) - std::exp(-z)) / 2.0L, "sinh", zs[k]);
  }
  // c64 is computed in complex<double> and rounded once.
  const std::vector<std::complex<float>> zf = {{0.3f, 0.4f}, {-1.5f, 0.2f}};
  const std::vector<std::complex<float>> af =
      values_of<std::complex<float>>(apply(OpCode::kAsin, make_from<std::complex<float>>(zf, {2})));
  for (std::size_t k = 0; k < zf.size(); ++k) {
    const C want = std::asin(C(zf[k]));
    CHECK(af[k] == std::complex<float>(static_cast<float>(want.real()),
                                       static_cast<float>(want.imag())));
  }
}

// The published known-answer vectors of Threefry-2x32-20 and Philox-4x32-10 (Random123's
// kat_vectors).
using random_bits::philox4x32;
using random_bits::threefry2x32;
using Words2 = std::array<std::uint32_t, 2>;
using Words4 = std::array<std::uint32_t, 4>;
static_assert(threefry2x32(0, 0, 0, 0) == Words2{0x6b200159, 0x99ba4efe});
static_assert(threefry2x32(~0u, ~0u, ~0u, ~0u) == Words2{0x1cb996fc, 0xbb002be7});
static_assert(threefry2x32(0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3) ==
              Words2{0xc4923a9c, 0x483df7a0});
static_assert(philox4x32({0, 0, 0, 0}, 0, 0) == Words4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
static_assert(philox4x32({~0u, ~0u, ~0u, ~0u}, ~0u, ~0u) ==
              Words4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
static_assert(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0) ==
              Words4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});

namespace {

StatusOr<std::vector<Literal>> generate_bits(std::vector<std::uint64_t> state, Shape output,
                                             RngAlgorithm algorithm) {
  GraphBuilder b("rng");
  const auto words = static_cast<std::int64_t>(state.size());
  std::vector<Value> r =
      b.rng_bit_generator(b.parameter(Shape(kU64, {words})), std::move(output), algorithm);
  const StatusOr<Graph> g = b.build(r);
  if (!g.ok()) return g.status();
  std::vector<Literal> args;
  args.push_back(make_from<std::uint64_t>(state, {words}));
  return reference::evaluate(*g, args);
}

/// The output's elements widened to u64 (their bits, zero-extended).
std::vector<std::uint64_t> bits_of(const Literal& l) {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(l.element_count()));
  const std::size_t size = byte_size(l.dtype());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, static_cast<const std::byte*>(l.untyped_data()) + i * size, size);
    out[i] = v;
  }
  return out;
}

/// XLA's 32-bit THREE_FRY layout written out over multi-indices: halve the first even
/// dimension (else the first largest), number the halved shape's elements row-major from the
/// counter, and give element (..., j, ...) word j % 2 of block (..., j / 2, ...).
std::pair<std::vector<std::uint32_t>, std::uint64_t> threefry32_expected(
    std::uint64_t key, std::uint64_t counter, std::vector<std::int64_t> dims) {
  if (dims.empty()) dims = {1};
  std::size_t split = dims.size();
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (split == dims.size() && dims[d] % 2 == 0) split = d;
  if (split == dims.size()) split = static_cast<std::size_t>(std::max_element(dims.begin(), dims.end()) - dims.begin());
  std::vector<std::int64_t> half = dims;
  half[split] = (dims[split] + 1) / 2;
  std::int64_t n = 1, half_n = 1;
  for (std::size_t d = 0; d < dims.size(); ++d) n *= dims[d], half_n *= half[d];
  std::vector<std::uint32_t> out;
  std::vector<std::int64_t> idx(dims.size(), 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t linear = 0;
    for (std::size_t d = 0; d < dims.size(); ++d)
      linear = linear * half[d] + (d == split ? idx[d] / 2 : idx[d]);
    const std::uint64_t c = counter + static_cast<std::uint64_t>(linear);
    out.push_back(threefry2x32(static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32),
                               static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32))
                      [static_cast<std::size_t>(idx[split] % 2)]);
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return {out, counter + static_cast<std::uint64_t>(half_n)};
}

}  // namespace

TEST_CASE("reference: rng_bit_generator lays Threefry and Philox blocks out as XLA does") {
  const std::uint64_t key = 0x0123456789abcdefull, last = ~std::uint64_t{0};
  auto words_of = [](std::uint64_t k, std::uint64_t c) {
    return threefry2x32(static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32),
                        static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32));
  };
  // THREE_FRY, 64-bit elements: block counter + i as x0 | x1 << 32; the counter wraps.
  StatusOr<std::vector<Literal>> r = generate_bits({key, last}, Shape(kU64, {3}), RngAlgorithm::kThreeFry);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0] == Literal::vector<std::uint64_t>({key, 2}));
  const std::vector<std::uint64_t> wide = bits_of((*r)[1]);
  for (std::uint64_t i = 0; i < 3; ++i) {
    const auto [x0, x1] = words_of(key, last + i);
    CHECK(wide[i] == (x0 | std::uint64_t{x1} << 32));
  }
  // THREE_FRY, 32-bit elements: the halved layout, for a split along the first, the last, an
  // odd largest and a scalar's dimension; any 32-bit type holds the same bits.
  for (const std::vector<std::int64_t>& dims :
       {std::vector<std::int64_t>{4, 3}, {3, 4}, {5}, {3, 5}, {}, {3, 1, 2, 5}, {0, 4}}) {
    CAPTURE(dims.size());
    const auto [want, next] = threefry32_expected(key, 41, dims);
    for (DType t : {kU32, kF32, kS32}) {
      r = generate_bits({key, 41}, Shape(t, dims), RngAlgorithm::kThreeFry);
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      CHECK((*r)[0] == Literal::vector<std::uint64_t>({key, next}));
      const std::vector<std::uint64_t> got = bits_of((*r)[1]);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == want[i]);
    }
    // 8- and 16-bit elements: the low bits of the 32-bit ones of the same shape.
    for (DType t : {kBF16, kU16, kS8}) {
      r = generate_bits({key, 41}, Shape(t, dims), RngAlgorithm::kThreeFry);
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      CHECK((*r)[0] == Literal::vector<std::uint64_t>({key, next}));
      const std::vector<std::uint64_t> got = bits_of((*r)[1]);
      const std::uint64_t mask = byte_size(t) == 1 ? 0xff : 0xffff;
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == (want[i] & mask));
    }
  }
  // PHILOX: key state[0]; the 128-bit counter is [state[1], state[0]] for u64[2] and
  // [state[1], state[2]] for u64[3], carrying across the words; 32-bit elements take the four
  // words of each block in turn, 64-bit ones (w0, w1) then (w2, w3).
  auto philox_words = [&](std::uint64_t low, std::uint64_t high, std::uint64_t b) {
    const std::uint64_t l = low + b, h = high + (l < low ? 1 : 0);
    return philox4x32({static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(l >> 32),
                       static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(h >> 32)},
                      static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32));
  };
  r = generate_bits({key, 7}, Shape(kU32, {7}), RngAlgorithm::kPhilox);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0] == Literal::vector<std::uint64_t>({key, 9}));  // ceil(7 / 4) blocks
  std::vector<std::uint64_t> got = bits_of((*r)[1]);
  for (std::uint64_t i = 0; i < 7; ++i) CHECK(got[i] == philox_words(7, key, i / 4)[i % 4]);
  r = generate_bits({key, last - 1, 5}, Shape(kS64, {3}), RngAlgorithm::kPhilox);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0] == Literal::vector<std::uint64_t>({key, 0, 6}));  // two blocks, one carry
  got = bits_of((*r)[1]);
  for (std::uint64_t i = 0; i < 3; ++i) {
    const auto w = philox_words(last - 1, 5, i / 2);
    CHECK(got[i] == (i % 2 == 0 ? w[0] | std::uint64_t{w[1]} << 32 : w[2] | std::uint64_t{w[3]} << 32));
  }
  r = generate_bits({key, 7}, Shape(kU16, {7}), RngAlgorithm::kPhilox);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  got = bits_of((*r)[1]);
  for (std::uint64_t i = 0; i < 7; ++i) CHECK(got[i] == (philox_words(7, key, i / 4)[i % 4] & 0xffff));
  // DEFAULT is PHILOX, as on XLA's CPU backend.
  CHECK(generate_bits({key, 9}, Shape(kU32, {6}), RngAlgorithm::kDefault).value()[1] ==
        generate_bits({key, 9}, Shape(kU32, {6}), RngAlgorithm::kPhilox).value()[1]);
  // The empty output leaves the state as it was.
  r = generate_bits({key, 5}, Shape(kS64, {0, 4}), RngAlgorithm::kThreeFry);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK((*r)[0] == Literal::vector<std::uint64_t>({key, 5}));
}

TEST_CASE("reference: next_after steps one value of the element type") {
  expect<float>(
      apply(OpCode::kNextAfter, Literal::vector<float>({1, 1, 0, 2, -1}),
            Literal::vector<float>({2, 0, -1, 2, -kInf<float>})),
      {1 + 0x1p-23f, 1 - 0x1p-24f, -std::numeric_limits<float>::denorm_min(), 2, -1 - 0x1p-23f});
  expect<double>(
      apply(OpCode::kNextAfter, Literal::vector<double>({1}), Literal::vector<double>({5})),
      {1 + 0x1p-52});
  // The half types step in their own 10 (7) mantissa bits, not through float.
  expect<f16>(apply(OpCode::kNextAfter, make_from<f16>({f16(1.0f), f16(0.0f)}, {2}),
                    make_from<f16>({f16(2.0f), f16(1.0f)}, {2})),
              {f16(1.0f + 0x1p-10f), f16(0x1p-24f)});
  expect<bf16>(apply(OpCode::kNextAfter, make_from<bf16>({bf16(1.0f)}, {1}),
                     make_from<bf16>({bf16(0.0f)}, {1})),
               {bf16(1.0f - 0x1p-8f)});
  std::vector<float> nan =
      values_of<float>(apply(OpCode::kNextAfter, Literal::vector<float>({kNaN<float>, 1}),
                            Literal::vector<float>({1, kNaN<float>})));
  CHECK(std::isnan(nan[0]));
  CHECK(std::isnan(nan[1]));
}

/// reduce_precision(x, e, m) through a one-node graph.
Literal reduce_precision(const Literal& x, std::int64_t e, std::int64_t m) {
  GraphBuilder b("reduce_precision");
  Value v = b.reduce_precision(b.parameter(x.shape()), e, m);
  return run1(b, v, {x});
}

TEST_CASE("reference: reduce_precision (spec example) rounds to even, overflows and flushes") {
  // The spec's example: +Inf, NaN, +denormal, 0.0, 65519.0, 65520.0 to e5m10.
  const double nan = std::bit_cast<double>(std::uint64_t{0x7FFFFFFFFFFFFFFF});
  std::vector<double> got = values_of<double>(reduce_precision(
      Literal::vector<double>({kInf<double>, nan, 0x1p-1074, 0.0, 65519.0, 65520.0}), 5, 10));
  CHECK(got[0] == kInf<double>);
  CHECK(bits_of(got[1]) == bits_of(nan));  // the NaN itself, payload and all
  CHECK(bits_of(got[2]) == bits_of(0.0));
  CHECK(bits_of(got[3]) == bits_of(0.0));
  CHECK(got[4] == 65504.0);
  CHECK(got[5] == kInf<double>);
  // Ties go to even; the sign survives overflow and underflow.
  expect<float>(reduce_precision(Literal::vector<float>(
                                     {1 + 0x1p-11f, 1 + 3 * 0x1p-11f, -1e6f, -0x1p-20f, 0x1p-14f}),
                                 5, 10),
                {1.0f, 1 + 0x1p-9f, -kInf<float>, -0.0f, 0x1p-14f});
  // Widths at or above the type's own change nothing, f16 subnormals included.
  const Literal h = make_from<f16>({f16(0x1p-24f), f16(-3.5f), f16(65504.0f)}, {3});
  CHECK(reduce_precision(h, 5, 10) == h);
  CHECK(reduce_precision(h, 11, 52) == h);
  // mantissa_bits = 0 keeps powers of two only. A tie (3 between 2 and 4) goes to the even
  // exponent, 2, as XLA's bit-level rounding has it: the last kept bit is the exponent's.
  expect<float>(reduce_precision(Literal::vector<float>({3.0f, 5.0f, 0.7f, 6.0f}), 8, 0),
                {2.0f, 4.0f, 0.5f, 8.0f});
  // exponent_bits = 1 leaves no normal numbers: everything is 0 or infinity.
  expect<float>(reduce_precision(Literal::vector<float>({1.2f, 2.0f, 0.9f}), 1, 3),
                {0.0f, kInf<float>, 0.0f});
}

TEST_CASE("reference: reduce_precision to zero mantissa bits makes NaN +infinity") {
  // A format without mantissa bits has no NaN: XLA's emitter and the StableHLO interpreter
  // both give +infinity for a NaN of either sign there, and keep the NaN (payload and all)
  // whenever mantissa bits remain.
  const float nan = std::bit_cast<float>(std::uint32_t{0x7FC00123});
  const float negative_nan = std::bit_cast<float>(std::uint32_t{0xFFC00001});
  std::vector<float> got = values_of<float>(
      reduce_precision(Literal::vector<float>({nan, negative_nan, 3.0f, -kInf<float>}), 8, 0));
  CHECK(bits_of(got[0]) == bits_of(kInf<float>));
  CHECK(bits_of(got[1]) == bits_of(kInf<float>));
  CHECK(got[2] == 2.0f);
  CHECK(got[3] == -kInf<float>);
  std::vector<float> kept = values_of<float>(reduce_precision(Literal::vector<float>({nan, negative_nan}), 8, 1));
  CHECK(bits_of(kept[0]) == bits_of(nan));
  CHECK(bits_of(kept[1]) == bits_of(negative_nan));
  std::vector<double> wide = values_of<double>(reduce_precision(Literal::vector<double>({kNaN<double>, -kNaN<double>}), 11, 0));
  CHECK(wide[0] == kInf<double>);
  CHECK(wide[1] == kInf<double>);
  const Literal h = make_from<f16>({f16(kNaN<float>), f16(1.5f)}, {2});
  std::vector<f16> narrow = values_of<f16>(reduce_precision(h, 5, 0));
  CHECK(static_cast<float>(narrow[0]) == kInf<float>);
  CHECK(static_cast<float>(narrow[1]) == 2.0f);  // 1.5 is a tie between 1 and 2: to the even exponent
  const Literal bh = make_from<bf16>({bf16(kNaN<float>)}, {1});
  CHECK(static_cast<float>(values_of<bf16>(reduce_precision(bh, 8, 0))[0]) == kInf<float>);
}

TEST_CASE("reference: convert from complex to pred keeps the real part only") {
  // The StableHLO interpreter converts complex to any non-complex type through the real part:
  // (0, 1) is false. The oracle is that rule, spelled out per element.
  const std::vector<c64> values = {c64(0, 1), c64(1, 0), c64(0, 0), c64(-0.0f, -kInf<float>),
                                   c64(kNaN<float>, 0), c64(0, kNaN<float>), c64(-2.5f, 3), c64(1e-30f, 0)};
  GraphBuilder b("convert");
  Value x = b.parameter(Shape(DType::kC64, {static_cast<std::int64_t>(values.size())}));
  Literal out = run1(b, b.convert(x, DType::kPred), {make_from<c64>(values, {static_cast<std::int64_t>(values.size())})});
  std::vector<bool> got = values_of<bool>(out);
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO("element ", i);
    CHECK(got[i] == (values[i].real() != 0.0f || std::isnan(values[i].real())));
  }
  GraphBuilder b2("convert128");
  Value y = b2.parameter(Shape(DType::kC128, {2}));
  CHECK(values_of<bool>(run1(b2, b2.convert(y, DType::kPred), {make_from<c128>({c128(0, 7), c128(1e-300, 0)}, {2})})) ==
        std::vector<bool>{false, true});
}

TEST_CASE("reference: a result larger than memory is RESOURCE_EXHAUSTED naming its size") {
  GraphBuilder b("huge");
  Value big = b.iota(Shape(DType::kS32, {std::int64_t{1} << 41}), 0);  // 2^43 bytes: 8 TiB
  Value sum = b.reduce(big, b.constant(std::int32_t{0}), OpCode::kAdd, {0});
  const Graph g = b.build({sum}).value();
  StatusOr<std::vector<Literal>> out = reference::evaluate(g, {});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == StatusCode::kResourceExhausted);
  CHECK(out.status().message().find("iota: its result s32[2199023255552]: cannot allocate 8796093022208 bytes") !=
        std::string_view::npos);
}

TEST_CASE("reference: reduce_precision to e5m10 and e8m7 is converting to f16 and bf16 and back") {
  // Every 4099th f32 bit pattern: the oracle is Eigen's round-to-nearest-even conversion where
  // |x| is in f16's normal range. Below it reduce_precision rounds at 10 bits first, then
  // flushes: only what rounds up to 2^-14 survives.
  std::vector<float> xs;
  for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    if (!std::isnan(x)) xs.push_back(x);
  }
  const Literal x = make_from<float>(xs, {static_cast<std::int64_t>(xs.size())});
  const std::vector<float> half = values_of<float>(reduce_precision(x, 5, 10));
  const std::vector<float> brain = values_of<float>(reduce_precision(x, 8, 7));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(xs[i]);
    const float ax = std::abs(xs[i]);
    const float want_half = ax >= 0x1p-14f
                                ? static_cast<float>(f16(xs[i]))
                                : std::copysign(ax >= 0x1p-14f - 0x1p-26f ? 0x1p-14f : 0.0f, xs[i]);
    CHECK(bits_of(half[i]) == bits_of(want_half));
    CHECK(bits_of(brain[i]) == bits_of(static_cast<float>(bf16(xs[i]))));
  }
}

TEST_CASE("reference: sort equals std::stable_sort, along any dimension, ascending or not") {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> small(-3, 3);
  // Keys with many ties, and each element's own position as a payload: stability shows.
  const std::vector<std::int64_t> dims = {3, 5, 4};
  std::vector<std::int32_t> keys(60), where(60);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    keys[k] = small(rng);
    where[k] = static_cast<std::int32_t>(k);
  }
  const Literal lk = make_from<std::int32_t>(keys, dims), lw = make_from<std::int32_t>(where, dims);
  for (std::int64_t dim : {0, 1, 2, -1}) {
    for (ComparisonDirection d : {kLt, kGt}) {
      CAPTURE(dim);
      GraphBuilder b("sort");
      Value k = b.parameter(lk.shape());
      Value w = b.parameter(lw.shape());
      std::vector<Value> out =
          b.sort({k, w}, make_sort_comparator(d, kS32, {kS32}).value(), dim, true);
      const std::vector<Literal> got = run(b, out, {lk, lw});
      // The oracle: each row's (key, position) pairs through std::stable_sort.
      const auto axis = static_cast<std::size_t>(dim < 0 ? dim + 3 : dim);
      std::vector<std::int64_t> stride = {20, 4, 1};
      std::vector<std::int32_t> want_k(60), want_w(60);
      for (std::int64_t start = 0; start < 60; ++start) {
        std::vector<std::int64_t> at = {start / 20, start / 4 % 5, start % 4};
        if (at[axis] != 0) continue;
        std::vector<std::int64_t> row;
        for (std::int64_t j = 0; j < dims[axis]; ++j) row.push_back(start + j * stride[axis]);
        std::vector<std::int64_t> sorted = row;
        std::stable_sort(sorted.begin(), sorted.end(), [&](std::int64_t x, std::int64_t y) {
          return d == kLt ? keys[static_cast<std::size_t>(x)] < keys[static_cast<std::size_t>(y)]
                          : keys[static_cast<std::size_t>(x)] > keys[static_cast<std::size_t>(y)];
        });
        for (std::size_t j = 0; j < row.size(); ++j) {
          want_k[static_cast<std::size_t>(row[j])] = keys[static_cast<std::size_t>(sorted[j])];
          want_w[static_cast<std::size_t>(row[j])] = where[static_cast<std::size_t>(sorted[j])];
        }
      }
      CHECK(values_of<std::int32_t>(got[0]) == want_k);
      CHECK(values_of<std::int32_t>(got[1]) == want_w);
    }
  }
  // Floats in totalOrder: -NaN < -inf < -0 < +0 < inf < NaN.
  const float nan = kNaN<float>;
  GraphBuilder b("floats");
  Value f = b.parameter(Shape(kF32, {7}));
  const std::vector<float> fs = {nan, 1.0f, -0.0f, -kInf<float>, 0.0f, -nan, kInf<float>};
  const std::vector<float> sorted =
      values_of<float>(run1(b, b.sort(f, 0), {make_from<float>(fs, {7})}));
  std::vector<float> want = fs;
  auto total_order = [](float v) {  // IEEE totalOrder as an integer
    const auto i = std::bit_cast<std::int32_t>(v);
    return i < 0 ? std::numeric_limits<std::int32_t>::min() - i - 1 : i;
  };
  std::stable_sort(want.begin(), want.end(),
                   [&](float x, float y) { return total_order(x) < total_order(y); });
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(bits_of(sorted[i]) == bits_of(want[i]));
  CHECK(std::signbit(sorted[0]));
  CHECK(std::isnan(sorted[6]));
}

TEST_CASE("reference: sort with a comparator that is no strict weak order still permutes") {
  // "x <= y" and "always true" are not strict weak orders; std::sort may misbehave on them.
  // The result must still be a permutation of each row, of every operand alike.
  std::vector<std::int32_t> v(257);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<std::int32_t>((k * 37) % 11);
  const Literal x = make_from<std::int32_t>(v, {257});
  for (int which = 0; which < 2; ++which) {
    GraphBuilder cb("bad");
    Value p = cb.parameter(Shape(kS32, {}));
    Value q = cb.parameter(Shape(kS32, {}));
    Graph bad = cb.build({which == 0 ? cb.compare(p, q, kLe) : cb.compare(p, p, kEq)}).value();
    GraphBuilder b("sort");
    Value in = b.parameter(x.shape());
    std::vector<std::int32_t> got = values_of<std::int32_t>(run1(b, b.sort({in}, bad, 0)[0], {x}));
    std::vector<std::int32_t> a = v;
    std::sort(got.begin(), got.end());
    std::sort(a.begin(), a.end());
    CHECK(got == a);
  }
}

TEST_CASE("reference: top_k (hand-worked): largest first, ties by index, NaN on top") {
  GraphBuilder b("top_k");
  Value x = b.parameter(Shape(kF32, {2, 4}));
  const float nan = kNaN<float>;
  const Literal lx = make<float>({1, 3, 3, 2, nan, -kInf<float>, 0.0f, -0.0f}, {2, 4});
  std::vector<Value> two = b.top_k(x, 2);
  std::vector<Value> four = b.top_k(x, 4);
  std::vector<Value> none = b.top_k(x, 0);
  const std::vector<Literal> got = run(b, {two[0], two[1], four[0], four[1], none[0]}, {lx});
  const std::vector<float> v2 = values_of<float>(got[0]);
  CHECK(v2[0] == 3);
  CHECK(v2[1] == 3);
  CHECK(std::isnan(v2[2]));
  CHECK(bits_of(v2[3]) == bits_of(0.0f));
  CHECK(values_of<std::int32_t>(got[1]) == std::vector<std::int32_t>{1, 2, 0, 2});
  CHECK(values_of<std::int32_t>(got[3]) == std::vector<std::int32_t>{1, 2, 3, 0, 0, 2, 3, 1});
  const std::vector<float> v4 = values_of<float>(got[2]);
  CHECK(bits_of(v4[6]) == bits_of(-0.0f));
  CHECK(v4[7] == -kInf<float>);
  CHECK(got[4].shape() == Shape(kF32, {2, 0}));
  // Unsigned values at the top of their range, and pred.
  GraphBuilder u("u8");
  std::vector<Value> ut = u.top_k(u.parameter(Shape(kU8, {4})), 3);
  const std::vector<Literal> ug = run(u, ut, {make<std::uint8_t>({5, 255, 0, 255}, {4})});
  CHECK(values_of<std::uint8_t>(ug[0]) == std::vector<std::uint8_t>{255, 255, 5});
  CHECK(values_of<std::int32_t>(ug[1]) == std::vector<std::int32_t>{1, 3, 0});
  GraphBuilder pb("pred");
  std::vector<Value> pt = pb.top_k(pb.parameter(Shape(kPred, {3})), 2);
  const std::vector<Literal> pg = run(pb, pt, {make<bool>({false, true, true}, {3})});
  expect_preds(pg[0], {true, true});
  CHECK(values_of<std::int32_t>(pg[1]) == std::vector<std::int32_t>{1, 2});
}

TEST_CASE("reference: spec examples of unary ops") {
  expect<std::int32_t>(apply(OpCode::kAbs, Literal::vector<std::int32_t>({-2, 0, 2})), {2, 0, 2});
  expect<double>(apply(OpCode::kCbrt, Literal::vector<double>({0, 1, 8, 27})), {0, 1, 2, 3});
  expect<std::int64_t>(apply(OpCode::kPopcnt, Literal::vector<std::int64_t>({0, 1, 2, 127})),
                       {0, 1, 1, 7});
  expect<std::int32_t>(apply(OpCode::kNot, make<std::int32_t>({1, 2, 3, 4}, {2, 2})),
                       {-2, -3, -4, -5}, {2, 2});
  expect_preds(apply(OpCode::kNot, Literal::vector<bool>({true, false})), {false, true});
  expect<std::int32_t>(apply(OpCode::kNegate, Literal::vector<std::int32_t>({0, -2})), {0, 2});
  expect<c64>(apply(OpCode::kNegate, Literal::vector<c64>({c64(2.5f, 0.0f)})), {c64(-2.5f, -0.0f)});
  const Literal e = apply(OpCode::kExponential, make<double>({0, 1, 2, 3}, {2, 2}));
  expect<double>(e, {1.0, 2.7182818284590451, 7.3890560989306504, 20.085536923187668}, {2, 2});
}

TEST_CASE("reference: rounding ops break ties as named (spec examples)") {
  const Literal x = Literal::vector<double>({-2.5, 0.4, 0.5, 0.6, 2.5});
  expect<double>(apply(OpCode::kRoundNearestAfz, x), {-3.0, 0.0, 1.0, 1.0, 3.0});
  expect<double>(apply(OpCode::kRoundNearestEven, x), {-2.0, 0.0, 0.0, 1.0, 2.0});

  const Literal y = Literal::vector<float>(
      {-1.5f, -0.5f, -0.4f, 1.5f, 3.5f, 0.49999997f, 8388609.0f, kInf<float>, kNaN<float>, -0.0f});
  expect<float>(apply(OpCode::kRoundNearestAfz, y), {-2.0f, -1.0f, -0.0f, 2.0f, 4.0f, 0.0f,
                                                     8388609.0f, kInf<float>, kNaN<float>, -0.0f});
  expect<float>(apply(OpCode::kRoundNearestEven, y), {-2.0f, -0.0f, -0.0f, 2.0f, 4.0f, 0.0f,
                                                      8388609.0f, kInf<float>, kNaN<float>, -0.0f});
  expect<float>(apply(OpCode::kFloor, y), {-2.0f, -1.0f, -1.0f, 1.0f, 3.0f, 0.0f, 8388609.0f,
                                           kInf<float>, kNaN<float>, -0.0f});
  expect<float>(apply(OpCode::kCeil, y), {-1.0f, -0.0f, -0.0f, 2.0f, 4.0f, 1.0f, 8388609.0f,
                                          kInf<float>, kNaN<float>, -0.0f});

  const Literal h = Literal::vector<bf16>({bf16(2.5f), bf16(-3.5f)});
  expect<bf16>(apply(OpCode::kRoundNearestEven, h), {bf16(2.0f), bf16(-4.0f)});
  expect<bf16>(apply(OpCode::kRoundNearestAfz, h), {bf16(3.0f), bf16(-4.0f)});
}

TEST_CASE("reference: sign, abs and negate at the edges") {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const Literal i = Literal::vector<std::int32_t>({kMin, -5, 0, 7, kMax});
  expect<std::int32_t>(apply(OpCode::kSign, i), {-1, -1, 0, 1, 1});
  expect<std::int32_t>(apply(OpCode::kAbs, i), {kMin, 5, 0, 7, kMax});  // |INT_MIN| wraps
  expect<std::int32_t>(apply(OpCode::kNegate, i), {kMin, 5, 0, -7, -kMax});
  expect<std::int8_t>(apply(OpCode::kAbs, Literal::vector<std::int8_t>({-128, -127})), {-128, 127});
  expect<std::uint8_t>(apply(OpCode::kNegate, Literal::vector<std::uint8_t>({0, 1, 255})),
                       {0, 255, 1});

  // Spec example: NaN, -1, -0, +0, 1 keep their sign.
  const Literal f =
      Literal::vector<double>({kNaN<double>, -1.0, -0.0, 0.0, 1.0, -kInf<double>, 1e-310});
  expect<double>(apply(OpCode::kSign, f), {kNaN<double>, -1.0, -0.0, 0.0, 1.0, -1.0, 1.0});
  CHECK(std::isnan(apply(OpCode::kSign, f).data<double>()[0]));

  const Literal z = Literal::vector<c64>({c64(3, 4), c64(0, 0), c64(kNaN<float>, 1), c64(0, -2)});
  expect<c64>(apply(OpCode::kSign, z),
              {c64(0.6f, 0.8f), c64(0, 0), c64(kNaN<float>, kNaN<float>), c64(0, -1)});
  expect<float>(apply(OpCode::kAbs, z), {5.0f, 0.0f, kNaN<float>, 2.0f});
}

TEST_CASE("reference: is_finite, not, popcnt, real and imag") {
  expect_preds(
      apply(OpCode::kIsFinite, Literal::vector<float>({kInf<float>, -kInf<float>, kNaN<float>, 1.0f,
                                                       -0.0f, std::numeric_limits<float>::max()})),
      {false, false, false, true, true, true});
  expect_preds(apply(OpCode::kIsFinite, Literal::vector<f16>({f16(65504.0f), f16(kInf<float>)})),
               {true, false});
  expect<std::uint8_t>(apply(OpCode::kNot, Literal::vector<std::uint8_t>({0, 0x0F, 0xFF})),
                       {0xFF, 0xF0, 0});
  expect<std::int8_t>(apply(OpCode::kPopcnt, Literal::vector<std::int8_t>({-1, -128, 0x55})),
                      {8, 1, 4});
  expect<std::uint64_t>(apply(OpCode::kPopcnt, Literal::vector<std::uint64_t>({~0ull, 1ull << 63})),
                        {64, 1});
  const Literal z = Literal::vector<c128>({c128(1.5, -2), c128(-0.0, kInf<double>)});
  expect<double>(apply(OpCode::kReal, z), {1.5, -0.0});
  expect<double>(apply(OpCode::kImag, z), {-2.0, kInf<double>});
}

TEST_CASE("reference: f16 and bf16 compute in float and round once") {
  const std::vector<float> xs = {-3.7f, -1.0f, -0.1f, 0.0f, 0.3f, 1.0f, 2.2f, 7.9f};
  auto halves = [&]<class H>(std::type_identity<H>) {
    std::vector<H> v;
    for (float f : xs) v.push_back(H(f));
    return v;
  };
  auto check = [&]<class H>(std::type_identity<H> type) {
    const std::vector<H> h = halves(type);
    const Literal x = make_from<H>(h, {static_cast<std::int64_t>(h.size())});
    std::vector<H> rev(h.rbegin(), h.rend());
    const Literal y = make_from<H>(rev, {static_cast<std::int64_t>(rev.size())});
    auto unary = [&](OpCode op, auto f) {
      CAPTURE(op_name(op));
      std::vector<H> want;
      for (H v : h) want.push_back(H(f(static_cast<float>(v))));
      expect<H>(apply(op, x), want);
    };
    unary(OpCode::kExponential, [](float v) { return std::exp(v); });
    unary(OpCode::kLog, [](float v) { return std::log(v); });
    unary(OpCode::kTanh, [](float v) { return std::tanh(v); });
    unary(OpCode::kRsqrt, [](float v) { return 1.0f / std::sqrt(v); });
    unary(OpCode::kLogistic, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    auto binary = [&](OpCode op, auto f) {
      CAPTURE(op_name(op));
      std::vector<H> want;
      for (std::size_t i = 0; i < h.size(); ++i)
        want.push_back(H(f(static_cast<float>(h[i]), static_cast<float>(rev[i]))));
      expect<H>(apply(op, x, y), want);
    };
    binary(OpCode::kAdd, [](float a, float b) { return a + b; });
    binary(OpCode::kSubtract, [](float a, float b) { return a - b; });
    binary(OpCode::kMultiply, [](float a, float b) { return a * b; });
    binary(OpCode::kDivide, [](float a, float b) { return a / b; });
    binary(OpCode::kPower, [](float a, float b) { return std::pow(a, b); });
    binary(OpCode::kAtan2, [](float a, float b) { return std::atan2(a, b); });
    binary(OpCode::kRemainder, [](float a, float b) { return std::fmod(a, b); });
  };
  check(std::type_identity<f16>{});
  check(std::type_identity<bf16>{});

  // 2048 + 1 rounds back to 2048 in f16 at every step of a reduce; a dot accumulates in f32
  // (as XLA does) and reaches 2050, which f16 holds exactly.
  GraphBuilder b("f16_sum");
  Value x = b.parameter(Shape(kF16, {3}));
  Value sum = b.reduce(x, b.scalar(kF16, 0), OpCode::kAdd, {0});
  Value dot = b.dot(x, b.constant(make<f16>({f16(1.0f), f16(1.0f), f16(1.0f)}, {3})));
  std::vector<Literal> out =
      run(b, {sum, dot}, {Literal::vector<f16>({f16(2048.0f), f16(1.0f), f16(1.0f)})});
  expect<f16>(out[0], {f16(2048.0f)}, {});
  expect<f16>(out[1], {f16(2050.0f)}, {});
}

// ---- Binary element-wise ops --------------------------------------------------------------

TEST_CASE("reference: integer add, subtract and multiply wrap") {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const Literal a = Literal::vector<std::int32_t>({kMax, kMin, kMax, 3});
  const Literal b = Literal::vector<std::int32_t>({1, 1, 2, -4});
  expect<std::int32_t>(apply(OpCode::kAdd, a, b), {kMin, kMin + 1, kMin + 1, -1});
  expect<std::int32_t>(apply(OpCode::kSubtract, a, b), {kMax - 1, kMax, kMax - 2, 7});
  expect<std::int32_t>(apply(OpCode::kMultiply, a, b), {kMax, kMin, -2, -12});
  expect<std::int8_t>(apply(OpCode::kMultiply, Literal::vector<std::int8_t>({100, -128}),
                            Literal::vector<std::int8_t>({3, -1})),
                      {44, -128});
  expect<std::uint8_t>(apply(OpCode::kAdd, Literal::vector<std::uint8_t>({200}),
                             Literal::vector<std::uint8_t>({100})),
                       {44});
  // u16 * u16 would overflow int after C++'s integer promotion; the result must wrap.
  expect<std::uint16_t>(apply(OpCode::kMultiply, Literal::vector<std::uint16_t>({65535}),
                              Literal::vector<std::uint16_t>({65535})),
                        {1});
  expect<std::int64_t>(
      apply(OpCode::kAdd, Literal::vector<std::int64_t>({std::numeric_limits<std::int64_t>::max()}),
            Literal::vector<std::int64_t>({1})),
      {std::numeric_limits<std::int64_t>::min()});
  // Spec: add on pred is or; multiply is and.
  const Literal p = Literal::vector<bool>({false, false, true, true});
  const Literal q = Literal::vector<bool>({false, true, false, true});
  expect_preds(apply(OpCode::kAdd, p, q), {false, true, true, true});
  expect_preds(apply(OpCode::kMultiply, p, q), {false, false, false, true});
  expect<std::int32_t>(apply(OpCode::kAdd, make<std::int32_t>({1, 2, 3, 4}, {2, 2}),
                             make<std::int32_t>({5, 6, 7, 8}, {2, 2})),
                       {6, 8, 10, 12}, {2, 2});  // spec example
}

TEST_CASE("reference: integer divide and remainder, including by zero and INT_MIN / -1") {
  const Literal a = Literal::vector<std::int64_t>({17, -17, 17, -17});
  const Literal b = Literal::vector<std::int64_t>({3, 3, -3, -3});
  expect<std::int64_t>(apply(OpCode::kRemainder, a, b), {2, -2, 2, -2});  // spec example
  expect<std::int64_t>(apply(OpCode::kDivide, a, b), {5, -5, -5, 5});

  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  const Literal x = Literal::vector<std::int32_t>({7, -7, 0, kMin, kMin});
  const Literal y = Literal::vector<std::int32_t>({0, 0, 0, -1, 0});
  expect<std::int32_t>(apply(OpCode::kDivide, x, y), {-1, -1, -1, kMin, -1});
  expect<std::int32_t>(apply(OpCode::kRemainder, x, y), {7, -7, 0, 0, kMin});
  expect<std::int8_t>(apply(OpCode::kDivide, Literal::vector<std::int8_t>({-128, 5}),
                            Literal::vector<std::int8_t>({-1, 0})),
                      {-128, -1});
  expect<std::int8_t>(apply(OpCode::kRemainder, Literal::vector<std::int8_t>({-128, 5}),
                            Literal::vector<std::int8_t>({-1, 0})),
                      {0, 5});
  expect<std::uint32_t>(apply(OpCode::kDivide, Literal::vector<std::uint32_t>({9, 0, 9}),
                              Literal::vector<std::uint32_t>({0, 0, 4})),
                        {0xFFFFFFFFu, 0xFFFFFFFFu, 2});
  expect<std::uint32_t>(apply(OpCode::kRemainder, Literal::vector<std::uint32_t>({9, 9}),
                              Literal::vector<std::uint32_t>({0, 4})),
                        {9, 1});
}

TEST_CASE("reference: float divide and remainder follow IEEE and the dividend's sign") {
  const Literal a = Literal::vector<float>({17.1f, -17.1f, 17.1f, -17.1f});
  const Literal b = Literal::vector<float>({3.0f, 3.0f, -3.0f, -3.0f});
  expect<float>(apply(OpCode::kDivide, a, b),
                {17.1f / 3.0f, -17.1f / 3.0f, 17.1f / -3.0f, -17.1f / -3.0f});  // spec example
  expect<float>(apply(OpCode::kRemainder,
                      Literal::vector<float>({5.5f, -5.5f, 5.5f, -5.5f, 1.0f, kInf<float>, -0.0f}),
                      Literal::vector<float>({2.0f, 2.0f, -2.0f, -2.0f, 0.0f, 1.0f, 3.0f})),
                {1.5f, -1.5f, 1.5f, -1.5f, kNaN<float>, kNaN<float>, -0.0f});
  expect<double>(apply(OpCode::kDivide, Literal::vector<double>({1.0, -1.0, 0.0}),
                       Literal::vector<double>({0.0, 0.0, 0.0})),
                 {kInf<double>, -kInf<double>, kNaN<double>});
}

TEST_CASE("reference: integer power by squaring, wrapping, with negative exponents") {
  // Oracle: repeated multiplication in wrapping unsigned arithmetic.
  auto naive = []<class T>(T base, T exponent) -> T {
    if (exponent < 0) return base == 1 ? T(1) : base == -1 ? T(exponent % 2 == 0 ? 1 : -1) : T(0);
    std::uint64_t r = 1;
    for (T e = 0; e < exponent; ++e)
      r *= static_cast<std::uint64_t>(static_cast<std::int64_t>(base));
    return static_cast<T>(r);
  };
  auto check = [&]<class T>(std::type_identity<T>, int lo_base, int hi_base, int lo_exp,
                            int hi_exp) {
    std::vector<T> bases, exponents, want;
    for (int base = lo_base; base <= hi_base; ++base)
      for (int e = lo_exp; e <= hi_exp; ++e) {
        bases.push_back(static_cast<T>(base));
        exponents.push_back(static_cast<T>(e));
        want.push_back(naive(static_cast<T>(base), static_cast<T>(e)));
      }
    const auto n = static_cast<std::int64_t>(want.size());
    expect<T>(apply(OpCode::kPower, make_from<T>(bases, {n}), make_from<T>(exponents, {n})), want);
  };
  check(std::type_identity<std::int8_t>{}, -4, 4, -3, 20);
  check(std::type_identity<std::int32_t>{}, -7, 7, -5, 40);
  check(std::type_identity<std::int64_t>{}, -3, 3, -2, 70);
  check(std::type_identity<std::uint16_t>{}, 0, 6, 0, 30);

  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  expect<std::int32_t>(
      apply(OpCode::kPower, Literal::vector<std::int32_t>({2, 2, 0, 0, 1, -1, -1, 5}),
            Literal::vector<std::int32_t>({31, 10, 0, -1, -7, -3, -4, -1})),
      {kMin, 1024, 1, 0, 1, -1, 1, 0});
  expect<std::uint8_t>(apply(OpCode::kPower, Literal::vector<std::uint8_t>({3, 2, 255}),
                             Literal::vector<std::uint8_t>({5, 8, 255})),
                       {243, 0, 255});
}

TEST_CASE("reference: float and complex power") {
  // Spec example. It declares f64 but prints f32 results (0.333333343, and inf for 1e40,
  // which f64 holds), so it is checked in f32, and in f64 with the f64 values.
  expect<float>(
      apply(OpCode::kPower, Literal::vector<float>({-2.0f, -0.0f, -36.0f, 5.0f, 3.0f, 10000.0f}),
            Literal::vector<float>({2.0f, 2.0f, 1.1f, 2.0f, -1.0f, 10.0f})),
      {4.0f, 0.0f, kNaN<float>, 25.0f, 0.333333343f, kInf<float>});
  expect<double>(
      apply(OpCode::kPower, Literal::vector<double>({-2.0, -0.0, -36.0, 5.0, 3.0, 10000.0}),
            Literal::vector<double>({2.0, 2.0, 1.1, 2.0, -1.0, 10.0})),
      {4.0, 0.0, kNaN<double>, 25.0, 1.0 / 3.0, 1e40});
  const Literal z = Literal::vector<c128>({c128(1, 2), c128(-1, 0), c128(0.5, -0.25)});
  const Literal w = Literal::vector<c128>({c128(2, 0), c128(0.5, 0), c128(1.5, 2)});
  const Literal got = apply(OpCode::kPower, z, w);
  for (std::int64_t i = 0; i < 3; ++i)
    CHECK(near(got.data<c128>()[i], std::pow(z.data<c128>()[i], w.data<c128>()[i]), 1e-15));
}

TEST_CASE("reference: maximum and minimum propagate NaN and order -0 below +0") {
  const Literal a =
      Literal::vector<float>({kNaN<float>, 1.0f, -0.0f, 0.0f, -kInf<float>, 2.0f, kNaN<float>});
  const Literal b =
      Literal::vector<float>({1.0f, kNaN<float>, 0.0f, -0.0f, 3.0f, -2.0f, kNaN<float>});
  const Literal max = apply(OpCode::kMaximum, a, b);
  const Literal min = apply(OpCode::kMinimum, a, b);
  expect<float>(max, {kNaN<float>, kNaN<float>, 0.0f, 0.0f, 3.0f, 2.0f, kNaN<float>});
  expect<float>(min, {kNaN<float>, kNaN<float>, -0.0f, -0.0f, -kInf<float>, -2.0f, kNaN<float>});
  CHECK_FALSE(std::signbit(max.data<float>()[2]));
  CHECK(std::signbit(min.data<float>()[3]));

  expect<f16>(apply(OpCode::kMaximum, Literal::vector<f16>({f16(kNaN<float>), f16(-0.0f)}),
                    Literal::vector<f16>({f16(5.0f), f16(0.0f)})),
              {f16(kNaN<float>), f16(0.0f)});

  // Spec examples, and pred (or / and).
  expect<std::int32_t>(apply(OpCode::kMaximum, make<std::int32_t>({1, 2, 7, 8}, {2, 2}),
                             make<std::int32_t>({5, 6, 3, 4}, {2, 2})),
                       {5, 6, 7, 8}, {2, 2});
  expect<std::int32_t>(apply(OpCode::kMinimum, make<std::int32_t>({1, 2, 7, 8}, {2, 2}),
                             make<std::int32_t>({5, 6, 3, 4}, {2, 2})),
                       {1, 2, 3, 4}, {2, 2});
  const Literal p = Literal::vector<bool>({false, false, true, true});
  const Literal q = Literal::vector<bool>({false, true, false, true});
  expect_preds(apply(OpCode::kMaximum, p, q), {false, true, true, true});
  expect_preds(apply(OpCode::kMinimum, p, q), {false, false, false, true});
  expect<std::uint32_t>(apply(OpCode::kMaximum, Literal::vector<std::uint32_t>({0x80000000u}),
                              Literal::vector<std::uint32_t>({1})),
                        {0x80000000u});

  // Complex: lexicographic on (real, imag).
  const Literal z = Literal::vector<c64>({c64(1, 5), c64(2, 0), c64(-1, 3)});
  const Literal w = Literal::vector<c64>({c64(1, 7), c64(1, 9), c64(-1, 3)});
  expect<c64>(apply(OpCode::kMaximum, z, w), {c64(1, 7), c64(2, 0), c64(-1, 3)});
  expect<c64>(apply(OpCode::kMinimum, z, w), {c64(1, 5), c64(1, 9), c64(-1, 3)});
}

TEST_CASE("reference: atan2 in every quadrant, and complex atan2 of real values") {
  // Spec example: atan2([0, 1, -1], [0, 0, 0]) = [0, pi/2, -pi/2].
  const double pi = std::numbers::pi;
  const Literal got = apply(OpCode::kAtan2, Literal::vector<double>({0.0, 1.0, -1.0}),
                            Literal::vector<double>({0.0, 0.0, 0.0}));
  expect<double>(got, {0.0, pi / 2, -pi / 2});
  const std::vector<double> ys = {1, 1, -1, -1, 0.0, -0.0, 0.0, -0.0};
  const std::vector<double> xs = {1, -1, 1, -1, -1, -1, 1, 1};
  std::vector<double> want;
  for (std::size_t i = 0; i < ys.size(); ++i) want.push_back(std::atan2(ys[i], xs[i]));
  expect<double>(apply(OpCode::kAtan2, make_from<double>(ys, {8}), make_from<double>(xs, {8})),
                 want);

  // For real arguments (in the upper half plane of x + iy) the complex formula reduces to
  // the real atan2.
  const Literal zy = Literal::vector<c128>({c128(1, 0), c128(2, 0), c128(-1, 0)});
  const Literal zx = Literal::vector<c128>({c128(1, 0), c128(-3, 0), c128(1, 0)});
  const Literal z = apply(OpCode::kAtan2, zy, zx);
  CHECK(near(z.data<c128>()[0], c128(std::atan2(1.0, 1.0), 0), 1e-14));
  CHECK(near(z.data<c128>()[1], c128(std::atan2(2.0, -3.0), 0), 1e-14));
  CHECK(near(z.data<c128>()[2], c128(std::atan2(-1.0, 1.0), 0), 1e-14));
}

TEST_CASE("reference: and, or, xor on pred and integers") {
  const Literal p = Literal::vector<bool>({false, false, true, true});
  const Literal q = Literal::vector<bool>({false, true, false, true});
  expect_preds(apply(OpCode::kAnd, p, q), {false, false, false, true});
  expect_preds(apply(OpCode::kOr, p, q), {false, true, true, true});
  expect_preds(apply(OpCode::kXor, p, q), {false, true, true, false});
  const std::vector<std::int16_t> a = {0x0F0F, -1, 0, 0x1234};
  const std::vector<std::int16_t> b = {0x00FF, 0x5555, -1, -0x1234};
  std::vector<std::int16_t> want_and, want_or, want_xor;
  for (std::size_t i = 0; i < a.size(); ++i) {
    want_and.push_back(static_cast<std::int16_t>(a[i] & b[i]));
    want_or.push_back(static_cast<std::int16_t>(a[i] | b[i]));
    want_xor.push_back(static_cast<std::int16_t>(a[i] ^ b[i]));
  }
  const Literal x = make_from<std::int16_t>(a, {4}), y = make_from<std::int16_t>(b, {4});
  expect<std::int16_t>(apply(OpCode::kAnd, x, y), want_and);
  expect<std::int16_t>(apply(OpCode::kOr, x, y), want_or);
  expect<std::int16_t>(apply(OpCode::kXor, x, y), want_xor);
}

TEST_CASE("reference: shifts (spec examples) and amounts out of range") {
  constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
  expect<std::int64_t>(apply(OpCode::kShiftLeft, Literal::vector<std::int64_t>({-1, 0, 1}),
                             Literal::vector<std::int64_t>({1, 2, 3})),
                       {-2, 0, 8});
  expect<std::int64_t>(
      apply(OpCode::kShiftRightArithmetic, Literal::vector<std::int64_t>({-1, 0, 8}),
            Literal::vector<std::int64_t>({1, 2, 3})),
      {-1, 0, 1});
  expect<std::int64_t>(apply(OpCode::kShiftRightLogical, Literal::vector<std::int64_t>({-1, 0, 8}),
                             Literal::vector<std::int64_t>({1, 2, 3})),
                       {kMax64, 0, 1});

  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  const Literal amounts = Literal::vector<std::int32_t>({32, 33, -1, 31, 0});
  expect<std::int32_t>(
      apply(OpCode::kShiftLeft, Literal::vector<std::int32_t>({1, 1, 1, 1, 1}), amounts),
      {0, 0, 0, kMin, 1});
  expect<std::int32_t>(apply(OpCode::kShiftRightArithmetic,
                             Literal::vector<std::int32_t>({-8, -8, -8, -8, -8}), amounts),
                       {-1, -1, -1, -1, -8});
  expect<std::int32_t>(
      apply(OpCode::kShiftRightArithmetic, Literal::vector<std::int32_t>({8, 8, 8, 8, 8}), amounts),
      {0, 0, 0, 0, 8});
  expect<std::int32_t>(apply(OpCode::kShiftRightLogical,
                             Literal::vector<std::int32_t>({-8, -8, -8, -8, -8}), amounts),
                       {0, 0, 0, 1, -8});
  // Unsigned: arithmetic shifts copy the top bit; 255 is -1 read as unsigned, out of range.
  expect<std::uint8_t>(
      apply(OpCode::kShiftRightArithmetic, Literal::vector<std::uint8_t>({0x80, 0x40, 0x80}),
            Literal::vector<std::uint8_t>({1, 1, 255})),
      {0xC0, 0x20, 0xFF});
  expect<std::uint8_t>(apply(OpCode::kShiftLeft, Literal::vector<std::uint8_t>({0x81, 1}),
                             Literal::vector<std::uint8_t>({1, 8})),
                       {0x02, 0});
  expect<std::int8_t>(apply(OpCode::kShiftLeft, Literal::vector<std::int8_t>({1, -1}),
                            Literal::vector<std::int8_t>({7, 7})),
                      {-128, -128});
}

TEST_CASE("reference: complex construction, arithmetic and functions") {
  expect<c128>(apply(OpCode::kComplex, Literal::vector<double>({1.0, 3.0}),
                     Literal::vector<double>({2.0, 4.0})),
               {c128(1, 2), c128(3, 4)});  // spec example
  const std::vector<c64> zs = {c64(1, 2), c64(-0.5f, 0.25f), c64(3, -4), c64(0.001f, -0.002f)};
  const std::vector<c64> ws = {c64(2, -1), c64(0.1f, 0.1f), c64(-1, 0), c64(5, 5)};
  const Literal z = make_from<c64>(zs, {4}), w = make_from<c64>(ws, {4});
  auto binary = [&](OpCode op, auto f) {
    CAPTURE(op_name(op));
    std::vector<c64> want;
    for (std::size_t i = 0; i < zs.size(); ++i) want.push_back(f(zs[i], ws[i]));
    expect<c64>(apply(op, z, w), want);
  };
  binary(OpCode::kAdd, [](c64 a, c64 b) { return a + b; });
  binary(OpCode::kSubtract, [](c64 a, c64 b) { return a - b; });
  binary(OpCode::kMultiply, [](c64 a, c64 b) { return a * b; });
  binary(OpCode::kDivide, [](c64 a, c64 b) { return a / b; });

  const std::vector<c128> us = {c128(0.5, 0.5), c128(-2, 1), c128(1e-9, -2e-9), c128(0.3, -0.7)};
  const Literal u = make_from<c128>(us, {4});
  auto unary = [&](OpCode op, auto f, double tolerance) {
    CAPTURE(op_name(op));
    const Literal got = apply(op, u);
    for (std::size_t i = 0; i < us.size(); ++i)
      CHECK_MESSAGE(near(got.data<c128>()[i], c128(f(us[i])), tolerance), got.to_string());
  };
  unary(
      OpCode::kExponential, [](c128 v) { return std::exp(v); }, 0);
  unary(
      OpCode::kLog, [](c128 v) { return std::log(v); }, 0);
  unary(
      OpCode::kSqrt, [](c128 v) { return std::sqrt(v); }, 0);
  unary(
      OpCode::kRsqrt, [](c128 v) { return 1.0 / std::sqrt(v); }, 0);
  unary(
      OpCode::kSine, [](c128 v) { return std::sin(v); }, 0);
  unary(
      OpCode::kCosine, [](c128 v) { return std::cos(v); }, 0);
  unary(
      OpCode::kTan, [](c128 v) { return std::tan(v); }, 0);
  unary(
      OpCode::kTanh, [](c128 v) { return std::tanh(v); }, 0);
  unary(
      OpCode::kLogistic, [](c128 v) { return 1.0 / (1.0 + std::exp(-v)); }, 0);
  // expm1 and log1p stay accurate for tiny z, where exp(z) - 1 and log(1 + z) cancel: compare
  // with their Taylor series, which are exact to double precision there.
  unary(
      OpCode::kExponentialMinusOne,
      [](c128 v) { return std::abs(v) < 1e-6 ? v + v * v / 2.0 : std::exp(v) - 1.0; }, 1e-15);
  unary(
      OpCode::kLogPlusOne,
      [](c128 v) { return std::abs(v) < 1e-6 ? v - v * v / 2.0 : std::log(1.0 + v); }, 1e-15);
  const Literal small =
      apply(OpCode::kExponentialMinusOne, Literal::vector<c128>({c128(1e-9, -2e-9)}));
  CHECK(std::fabs(small.data<c128>()[0].real() / 1e-9 - 1.0) < 1e-8);  // relative, not absolute
  // cbrt is the principal cube root: cubing it gives z back, and its argument is arg(z) / 3.
  const Literal roots = apply(OpCode::kCbrt, u);
  for (std::size_t i = 0; i < us.size(); ++i) {
    const c128 r = roots.data<c128>()[i];
    CHECK(near(r * r * r, us[i], 1e-12));
    CHECK(std::fabs(std::arg(r) - std::arg(us[i]) / 3) < 1e-12);
  }
}

// ---- compare, select, clamp, convert, bitcast_convert -------------------------------------

TEST_CASE("reference: compare, every direction, on integers, unsigned and pred") {
  // Which of a < b, a == b, a > b each direction accepts.
  const std::map<ComparisonDirection, std::array<bool, 3>> accepts = {
      {ComparisonDirection::kEq, {false, true, false}}, {ComparisonDirection::kNe, {true, false, true}},
      {ComparisonDirection::kGe, {false, true, true}},  {ComparisonDirection::kGt, {false, false, true}},
      {ComparisonDirection::kLe, {true, true, false}},  {ComparisonDirection::kLt, {true, false, false}}};
  auto expected = [&](auto a, auto b, ComparisonDirection d) {
    return accepts.at(d)[a < b ? 0 : a == b ? 1 : 2];
  };
  const std::vector<std::int32_t> s = {-2, 0, 3};
  const std::vector<std::uint32_t> u = {0, 1, 0x80000000u};
  for (ComparisonDirection d : kAllDirections) {
    CAPTURE(comparison_direction_name(d));
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 3; ++j) {
        const Literal r = compare(Literal::scalar(s[i]), Literal::scalar(s[j]), d);
        CHECK(r.data<bool>()[0] == expected(s[i], s[j], d));
        const Literal v = compare(Literal::scalar(u[i]), Literal::scalar(u[j]), d);
        CHECK(v.data<bool>()[0] == expected(u[i], u[j], d));
      }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        const Literal r = compare(Literal::scalar(i == 1), Literal::scalar(j == 1), d);
        CHECK(r.data<bool>()[0] == expected(i, j, d));  // false < true
      }
  }
}

TEST_CASE("reference: compare FLOAT is IEEE, NaN unordered (spec example)") {
  expect_preds(
      compare(Literal::vector<float>({1.0f, 3.0f}), Literal::vector<float>({1.1f, 2.9f}), kLt),
      {true, false});
  const Literal a = Literal::vector<double>({kNaN<double>, kNaN<double>, 1.0, -0.0});
  const Literal b = Literal::vector<double>({kNaN<double>, 1.0, kNaN<double>, 0.0});
  expect_preds(compare(a, b, kEq), {false, false, false, true});
  expect_preds(compare(a, b, kNe), {true, true, true, false});
  expect_preds(compare(a, b, kLt), {false, false, false, false});
  expect_preds(compare(a, b, kLe), {false, false, false, true});
  expect_preds(compare(a, b, kGt), {false, false, false, false});
  expect_preds(compare(a, b, kGe), {false, false, false, true});
}

TEST_CASE("reference: compare TOTALORDER orders -NaN < -Inf < -0 < +0 < +Inf < +NaN") {
  auto check = [&]<class T>(std::type_identity<T>) {
    const T neg_nan = T(-std::numeric_limits<float>::quiet_NaN());
    const std::vector<T> ordered = {neg_nan,
                                    T(-kInf<float>),
                                    std::numeric_limits<T>::lowest(),
                                    T(-1.0f),
                                    T(-std::numeric_limits<T>::denorm_min()),
                                    T(-0.0f),
                                    T(0.0f),
                                    std::numeric_limits<T>::denorm_min(),
                                    T(1.0f),
                                    std::numeric_limits<T>::max(),
                                    T(kInf<float>),
                                    T(kNaN<float>)};
    REQUIRE(std::signbit(static_cast<float>(ordered[0])));
    REQUIRE_FALSE(std::signbit(static_cast<float>(ordered.back())));
    const auto n = static_cast<std::int64_t>(ordered.size());
    const Literal s = make_from<T>(ordered, {n});
    auto [lhs, rhs] = all_pairs(s);
    for (ComparisonDirection d : kAllDirections) {
      CAPTURE(comparison_direction_name(d));
      const Literal r = compare(lhs, rhs, d, ComparisonType::kTotalOrder);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const bool got = r.data<bool>()[static_cast<std::size_t>(i * n + j)];
          bool want = false;
          switch (d) {
            case ComparisonDirection::kEq: want = i == j; break;
            case ComparisonDirection::kNe: want = i != j; break;
            case ComparisonDirection::kGe: want = i >= j; break;
            case ComparisonDirection::kGt: want = i > j; break;
            case ComparisonDirection::kLe: want = i <= j; break;
            case ComparisonDirection::kLt: want = i < j; break;
          }
          CHECK_MESSAGE(got == want, "positions ", i, " and ", j);
        }
    }
  };
  check(std::type_identity<float>{});
  check(std::type_identity<double>{});
  check(std::type_identity<f16>{});
  check(std::type_identity<bf16>{});
}

TEST_CASE("reference: complex compare is EQ / NE only, and ordering is UNIMPLEMENTED") {
  const Literal a = Literal::vector<c64>({c64(1, 2), c64(1, 2), c64(kNaN<float>, 0)});
  const Literal b = Literal::vector<c64>({c64(1, 2), c64(1, -2), c64(kNaN<float>, 0)});
  expect_preds(compare(a, b, kEq), {true, false, false});
  expect_preds(compare(a, b, kNe), {false, true, true});

  GraphBuilder builder("complex_lt");
  Value x = builder.parameter(Shape(kC64, {3}));
  StatusOr<Graph> g = builder.build({builder.compare(x, x, kLt)});
  REQUIRE(g.ok());
  std::vector<Literal> args;
  args.push_back(a);
  Status s = reference::evaluate(*g, args).status();
  check_error(s, StatusCode::kUnimplemented, "compare: not implemented for element type c64");
  check_error(s, StatusCode::kUnimplemented, "LT");

  // The same from inside a reduce body keeps the body in the message.
  GraphBuilder body_builder("lt_body");
  Value acc = body_builder.parameter(Shape(kC64, {}));
  Value elem = body_builder.parameter(Shape(kC64, {}));
  Value pick = body_builder.select(body_builder.compare(acc, elem, kLt), acc, elem);
  GraphBuilder outer("reduce_lt");
  Value v = outer.parameter(Shape(kC64, {3}));
  Value r = outer.reduce(v, outer.constant(c64(0, 0)), body_builder.build(pick).value(), {0});
  StatusOr<Graph> rg = outer.build(r);
  REQUIRE(rg.ok());
  s = reference::evaluate(*rg, args).status();
  check_error(s, StatusCode::kUnimplemented, "reduce: body: graph 'lt_body'");
}

TEST_CASE("reference: select and clamp, with rank-0 operands broadcast (spec examples)") {
  GraphBuilder b("select");
  Value p = b.parameter(Shape(kPred, {2, 2}));
  Value t = b.parameter(Shape(kS32, {2, 2}));
  Value f = b.parameter(Shape(kS32, {2, 2}));
  Value s = b.parameter(Shape(kPred, {}));
  Literal pred(Shape(kPred, {2, 2}));
  pred.set<bool>({0, 1}, true);
  pred.set<bool>({1, 0}, true);
  std::vector<Literal> out = run(b, {b.select(p, t, f), b.select(s, t, f)},
                                 {pred, make<std::int32_t>({1, 2, 3, 4}, {2, 2}),
                                  make<std::int32_t>({5, 6, 7, 8}, {2, 2}), Literal::scalar(true)});
  expect<std::int32_t>(out[0], {5, 2, 3, 8}, {2, 2});
  expect<std::int32_t>(out[1], {1, 2, 3, 4}, {2, 2});

  GraphBuilder c("clamp");
  Value lo = c.parameter(Shape(kS32, {3}));
  Value x = c.parameter(Shape(kS32, {3}));
  Value hi = c.parameter(Shape(kS32, {3}));
  Value clamped = c.clamp(lo, x, hi);
  Value scalar_bounds = c.clamp(c.constant(4), x, c.constant(14));
  out = run(c, {clamped, scalar_bounds},
            {Literal::vector<std::int32_t>({5, 10, 15}), Literal::vector<std::int32_t>({3, 13, 23}),
             Literal::vector<std::int32_t>({10, 15, 20})});
  expect<std::int32_t>(out[0], {5, 13, 20});
  expect<std::int32_t>(out[1], {4, 13, 14});

  // Floats: NaN propagates through max and min; bounds that cross give max's bound.
  GraphBuilder d("clamp_float");
  Value y = d.parameter(Shape(kF32, {4}));
  Value z = d.clamp(d.constant(-1.0f), y, d.constant(1.0f));
  Value crossed = d.clamp(d.constant(2.0f), y, d.constant(1.0f));
  out = run(d, {z, crossed}, {Literal::vector<float>({kNaN<float>, -5.0f, 0.5f, 5.0f})});
  expect<float>(out[0], {kNaN<float>, -1.0f, 0.5f, 1.0f});
  expect<float>(out[1], {kNaN<float>, 1.0f, 1.0f, 1.0f});
}

TEST_CASE("reference: convert (spec example) with saturation, wrapping and pred") {
  GraphBuilder b("convert");
  Value i = b.parameter(Shape(kS64, {3}));
  Value f = b.parameter(Shape(kF32, {7}));
  Value w = b.parameter(Shape(kS32, {3}));
  Value z = b.parameter(Shape(kC64, {2}));
  std::vector<Literal> out =
      run(b,
          {b.convert(i, kC128), b.convert(f, kS32), b.convert(w, kU8), b.convert(f, kPred),
           b.convert(b.convert(f, kPred), kF32), b.convert(z, kF32), b.convert(f, kF16)},
          {Literal::vector<std::int64_t>({-1, 0, 1}),
           Literal::vector<float>({1.9f, -1.9f, kNaN<float>, 1e10f, -1e10f, -0.0f, 1.00048828125f}),
           Literal::vector<std::int32_t>({300, -1, 255}),
           Literal::vector<c64>({c64(1.5f, 9), c64(-2, -9)})});
  expect<c128>(out[0], {c128(-1, 0), c128(0, 0), c128(1, 0)});
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  expect<std::int32_t>(out[1], {1, -1, 0, kMax, kMin, 0, 1});
  expect<std::uint8_t>(out[2], {44, 255, 255});
  expect_preds(out[3], {true, true, true, true, true, false, true});
  expect<float>(out[4], {1, 1, 1, 1, 1, 0, 1});
  expect<float>(out[5], {1.5f, -2.0f});
  // 1 + 2^-11 is halfway between two f16 values: ties to even gives 1.
  expect<f16>(out[6], {f16(1.900390625f), f16(-1.900390625f), f16(kNaN<float>), f16(kInf<float>),
                       f16(-kInf<float>), f16(-0.0f), f16(1.0f)});
}

TEST_CASE("reference: bitcast_convert keeps the bits, splitting or joining the minor dimension") {
  // Spec example: 0x0123456789ABCDEF as f64 -> four 16-bit parts, little-endian.
  const std::uint64_t bits = 0x0123456789ABCDEFull;
  double d;
  std::memcpy(&d, &bits, 8);
  GraphBuilder b("bitcast");
  Value x = b.parameter(Shape(kF64, {}));
  Value parts = b.bitcast_convert(x, kU16);
  Value halves = b.bitcast_convert(x, kF16);
  Value back = b.bitcast_convert(halves, kF64);
  std::vector<Literal> out = run(b, {parts, halves, back}, {Literal::scalar(d)});
  expect<std::uint16_t>(out[0], {0xCDEF, 0x89AB, 0x4567, 0x0123}, {4});
  const std::vector<f16> hs = values_of<f16>(out[1]);
  REQUIRE(hs.size() == 4);
  CHECK(bits_of(hs[0]) == 0xCDEF);
  CHECK(bits_of(hs[3]) == 0x0123);
  CHECK(bits_of(out[2].data<double>()[0]) == bits);

  GraphBuilder c("bitcast_same_width");
  Value f = c.parameter(Shape(kF32, {2}));
  Value s = c.parameter(Shape(kS32, {1}));
  Value bytes = c.parameter(Shape(kU8, {2, 4}));
  Value z = c.parameter(Shape(kC64, {2}));
  out = run(c,
            {c.bitcast_convert(f, kU32), c.bitcast_convert(s, kU32), c.bitcast_convert(bytes, kU32),
             c.bitcast_convert(z, kC128)},
            {Literal::vector<float>({1.0f, -0.0f}), Literal::vector<std::int32_t>({-1}),
             make<std::uint8_t>({1, 2, 3, 4, 0xFF, 0, 0, 0x80}, {2, 4}),
             Literal::vector<c64>({c64(1, 2), c64(3, 4)})});
  expect<std::uint32_t>(out[0], {0x3F800000u, 0x80000000u});
  expect<std::uint32_t>(out[1], {0xFFFFFFFFu});
  expect<std::uint32_t>(out[2], {0x04030201u, 0x800000FFu});
  // Two c64 are the bytes of one c128 whose parts are the f32 pairs (1,2) and (3,4) reread.
  REQUIRE(out[3].element_count() == 1);
  CHECK(std::memcmp(out[3].untyped_data(),
                    Literal::vector<c64>({c64(1, 2), c64(3, 4)}).untyped_data(), 16) == 0);
}

// ---- Data movement ------------------------------------------------------------------------

TEST_CASE("reference: broadcast_in_dim, reshape and transpose (spec examples)") {
  GraphBuilder b("move");
  Value x = b.parameter(Shape(kS32, {1, 3}));
  Value y = b.parameter(Shape(kS32, {2, 3}));
  Value t = b.parameter(Shape(kS32, {2, 3, 2}));
  Value s = b.parameter(Shape(kF32, {}));
  std::vector<Literal> out =
      run(b,
          {b.broadcast_in_dim(x, {2, 3, 2}, {2, 1}), b.reshape(y, {3, 2}),
           b.transpose(t, {2, 1, 0}), b.broadcast_in_dim(s, {2, 2}, {}),
           b.broadcast_in_dim(y, {2, 4, 3}, {0, 2}), b.reshape(s, {1, 1})},
          {make<std::int32_t>({1, 2, 3}, {1, 3}), make<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}),
           make<std::int32_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2}),
           Literal::scalar(2.5f)});
  expect<std::int32_t>(out[0], {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}, {2, 3, 2});
  expect<std::int32_t>(out[1], {1, 2, 3, 4, 5, 6}, {3, 2});
  expect<std::int32_t>(out[2], {1, 7, 3, 9, 5, 11, 2, 8, 4, 10, 6, 12}, {2, 3, 2});
  expect<float>(out[3], {2.5f, 2.5f, 2.5f, 2.5f}, {2, 2});
  std::vector<std::int32_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back(i * 3 + k + 1);
  expect<std::int32_t>(out[4], want, {2, 4, 3});
  expect<float>(out[5], {2.5f}, {1, 1});
}

TEST_CASE("reference: slice, concatenate and reverse (spec examples)") {
  GraphBuilder b("move");
  Value x = b.parameter(Shape(kS64, {3, 4}));
  Value a = b.parameter(Shape(kS64, {3, 2}));
  Value c = b.parameter(Shape(kS64, {1, 2}));
  Value e = b.parameter(Shape(kS64, {0, 2}));
  std::vector<Literal> out =
      run(b,
          {b.slice(x, {1, 2}, {3, 4}), b.slice(x, {0, 1}, {3, 4}, {2, 2}), b.concatenate({a, c}, 0),
           b.concatenate({e, c, e, a}, 0), b.concatenate({a, a}, 1), b.reverse(a, {1}),
           b.reverse(a, {0, 1}), b.reverse(a, {})},
          {make<std::int64_t>({0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1}, {3, 4}),
           make<std::int64_t>({1, 2, 3, 4, 5, 6}, {3, 2}), make<std::int64_t>({7, 8}, {1, 2}),
           Literal(Shape(kS64, {0, 2}))});
  expect<std::int64_t>(out[0], {1, 1, 1, 1}, {2, 2});
  expect<std::int64_t>(out[1], {0, 0, 0, 1}, {2, 2});  // rows 0, 2; columns 1, 3
  expect<std::int64_t>(out[2], {1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  expect<std::int64_t>(out[3], {7, 8, 1, 2, 3, 4, 5, 6}, {4, 2});
  expect<std::int64_t>(out[4], {1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6}, {3, 4});
  expect<std::int64_t>(out[5], {2, 1, 4, 3, 6, 5}, {3, 2});
  expect<std::int64_t>(out[6], {6, 5, 4, 3, 2, 1}, {3, 2});
  expect<std::int64_t>(out[7], {1, 2, 3, 4, 5, 6}, {3, 2});
}

TEST_CASE("reference: pad (spec example) with interior, negative and mixed edges") {
  GraphBuilder b("pad");
  Value x = b.parameter(Shape(kS32, {2, 3}));
  Value zero = b.constant(0);
  Literal out = run1(b, b.pad(x, zero, {0, 1}, {2, 1}, {1, 2}),
                     {make<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3})});
  expect<std::int32_t>(out, {0, 1, 0, 0, 2, 0, 0, 3, 0,  //
                             0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                             0, 4, 0, 0, 5, 0, 0, 6, 0,  //
                             0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                             0, 0, 0, 0, 0, 0, 0, 0, 0},
                       {5, 9});

  // Oracle for rank 1: interior padding first, then each edge adds padding or, if negative,
  // drops elements.
  auto pad1d = [](const std::vector<std::int32_t>& v, std::int64_t low, std::int64_t high,
                  std::int64_t interior, std::int32_t pv) {
    std::vector<std::int32_t> mid;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) mid.insert(mid.end(), static_cast<std::size_t>(interior), pv);
      mid.push_back(v[i]);
    }
    if (low >= 0)
      mid.insert(mid.begin(), static_cast<std::size_t>(low), pv);
    else
      mid.erase(mid.begin(),
                mid.begin() + std::min<std::int64_t>(-low, static_cast<std::int64_t>(mid.size())));
    if (high >= 0)
      mid.insert(mid.end(), static_cast<std::size_t>(high), pv);
    else
      mid.erase(mid.end() - std::min<std::int64_t>(-high, static_cast<std::int64_t>(mid.size())),
                mid.end());
    return mid;
  };
  const std::vector<std::int32_t> v = {1, 2, 3, 4, 5};
  for (std::int64_t interior : {0, 1, 2})
    for (std::int64_t low = -4; low <= 2; ++low)
      for (std::int64_t high = -4; high <= 2; ++high) {
        const std::int64_t size = 5 + 4 * interior + low + high;
        if (size < 0) continue;
        CAPTURE(low);
        CAPTURE(high);
        CAPTURE(interior);
        GraphBuilder p("pad1d");
        Value y = p.parameter(Shape(kS32, {5}));
        Value padded = p.pad(y, p.constant(-9), {low}, {high}, {interior});
        expect<std::int32_t>(run1(p, padded, {make_from<std::int32_t>(v, {5})}),
                             pad1d(v, low, high, interior, -9));
      }
}

TEST_CASE("reference: dynamic_slice and dynamic_update_slice clamp their starts (spec examples)") {
  GraphBuilder b("dynamic");
  Value x = b.parameter(Shape(kS32, {4, 4}));
  Value u = b.parameter(Shape(kS32, {2, 2}));
  Value i = b.parameter(Shape(kS64, {}));
  Value j = b.parameter(Shape(kS64, {}));
  std::vector<Literal> out =
      run(b, {b.dynamic_slice(x, {i, j}, {2, 2}), b.dynamic_update_slice(x, u, {i, j})},
          {make<std::int32_t>({0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {4, 4}),
           make<std::int32_t>({1, 1, 1, 1}, {2, 2}), Literal::scalar<std::int64_t>(-1),
           Literal::scalar<std::int64_t>(3)});
  expect<std::int32_t>(out[0], {1, 1, 1, 1}, {2, 2});
  expect<std::int32_t>(out[1], {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {4, 4});

  std::vector<Literal> update_spec =
      run(b, {b.dynamic_update_slice(x, u, {i, j})},
          {make<std::int32_t>({1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, {4, 4}),
           make<std::int32_t>({1, 1, 1, 1}, {2, 2}), Literal::scalar<std::int64_t>(-1),
           Literal::scalar<std::int64_t>(3)});
  expect<std::int32_t>(update_spec[0], std::vector<std::int32_t>(16, 1), {4, 4});

  // Unsigned starts beyond int64 and small signed types clamp the same way.
  GraphBuilder c("dynamic_types");
  Value v = c.parameter(Shape(kF32, {5}));
  Value big = c.parameter(Shape(DType::kU64, {}));
  Value small = c.parameter(Shape(kS8, {}));
  out = run(c,
            {c.dynamic_slice(v, {big}, {2}), c.dynamic_slice(v, {small}, {3}),
             c.dynamic_update_slice(v, c.constant(Literal::vector<float>({-1, -2})), {small})},
            {Literal::vector<float>({0, 1, 2, 3, 4}), Literal::scalar<std::uint64_t>(~0ull),
             Literal::scalar<std::int8_t>(1)});
  expect<float>(out[0], {3, 4});
  expect<float>(out[1], {1, 2, 3});
  expect<float>(out[2], {0, -1, -2, 3, 4});
}

// ---- Reductions and contractions ----------------------------------------------------------

TEST_CASE("reference: reduce (spec example), over several dimensions, in index order") {
  GraphBuilder b("reduce");
  Value x = b.parameter(Shape(kS64, {1, 6}));
  expect<std::int64_t>(run1(b, b.reduce(x, b.constant<std::int64_t>(0), OpCode::kAdd, {1}),
                            {make<std::int64_t>({0, 1, 2, 3, 4, 5}, {1, 6})}),
                       {15}, {1});

  // Sums over {0, 2} of a 2x3x4 array against a plain loop; the dimension list's order
  // does not matter.
  std::vector<std::int32_t> values(24);
  for (int k = 0; k < 24; ++k) values[static_cast<std::size_t>(k)] = k * k - 7 * k;
  GraphBuilder c("reduce_dims");
  Value y = c.parameter(Shape(kS32, {2, 3, 4}));
  Value zero = c.constant(0);
  std::vector<Literal> out = run(
      c,
      {c.reduce(y, zero, OpCode::kAdd, {0, 2}), c.reduce(y, zero, OpCode::kAdd, {2, 0}),
       c.reduce(y, zero, OpCode::kAdd, {0, 1, 2}), c.reduce(y, c.constant(10), OpCode::kAdd, {})},
      {make_from<std::int32_t>(values, {2, 3, 4})});
  std::vector<std::int32_t> want(3, 0);
  std::int32_t total = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        want[static_cast<std::size_t>(j)] += values[static_cast<std::size_t>(i * 12 + j * 4 + k)];
        total += values[static_cast<std::size_t>(i * 12 + j * 4 + k)];
      }
  expect<std::int32_t>(out[0], want);
  expect<std::int32_t>(out[1], want);
  expect<std::int32_t>(out[2], {total}, {});
  std::vector<std::int32_t> plus_ten;  // no reduced dimension: body(init, x) per element
  for (std::int32_t v : values) plus_ten.push_back(v + 10);
  expect<std::int32_t>(out[3], plus_ten, {2, 3, 4});

  // acc = 2 * acc + x reads binary digits; only ascending index order gives 0b1011 = 11.
  GraphBuilder body("twice_plus");
  Value acc = body.parameter(Shape(kS32, {}));
  Value elem = body.parameter(Shape(kS32, {}));
  Graph twice_plus = body.build(body.add(body.multiply(acc, body.constant(2)), elem)).value();
  GraphBuilder d("ordered");
  Value digits = d.parameter(Shape(kS32, {2, 2}));
  Value along_rows = d.reduce(digits, d.constant(0), twice_plus, {0, 1});
  expect<std::int32_t>(run1(d, along_rows, {make<std::int32_t>({1, 0, 1, 1}, {2, 2})}), {11}, {});
}

TEST_CASE("reference: reduce over an empty dimension gives the init value") {
  GraphBuilder b("empty_reduce");
  Value x = b.parameter(Shape(kF32, {3, 0}));
  Value sum = b.reduce(x, b.constant(1.5f), OpCode::kAdd, {1});
  Value none = b.reduce(x, b.constant(1.5f), OpCode::kMaximum, {0});
  std::vector<Literal> out = run(b, {sum, none}, {Literal(Shape(kF32, {3, 0}))});
  expect<float>(out[0], {1.5f, 1.5f, 1.5f});
  expect<float>(out[1], {}, {0});
}

TEST_CASE("reference: variadic reduce: argmax and argmin with NaN and ties") {
  GraphBuilder b("argmax");
  Value x = b.parameter(Shape(kF32, {4, 4}));
  std::vector<Value> max = b.argmax(x, 1);
  std::vector<Value> min = b.argmin(x, 1, kS64);
  const float nan = kNaN<float>, inf = kInf<float>;
  std::vector<Literal> out = run(b, {max[0], max[1], min[0], min[1]},
                                 {make<float>({1, 3, 3, 2,              //
                                               5, nan, 7, nan,          //
                                               -inf, -inf, -inf, -inf,  //
                                               -0.0f, 0.0f, 2, -1},
                                              {4, 4})});
  expect<float>(out[0], {3, nan, -inf, 2});
  expect<std::int32_t>(out[1], {1, 1, 0, 2});  // ties: the lower index; NaN wins from where it is
  expect<float>(out[2], {1, nan, -inf, -1});
  expect<std::int64_t>(out[3], {0, 1, 0, 3});

  // Over the other dimension, with integers.
  GraphBuilder c("argmax_int");
  Value y = c.parameter(Shape(kU8, {3, 2}));
  std::vector<Value> m = c.argmax(y, 0);
  out = run(c, {m[0], m[1]}, {make<std::uint8_t>({4, 9, 7, 9, 7, 1}, {3, 2})});
  expect<std::uint8_t>(out[0], {7, 9});
  expect<std::int32_t>(out[1], {1, 0});
}

TEST_CASE("reference: reduce promotes its inputs to a wider body type") {
  GraphBuilder b("promote");
  Value x = b.parameter(Shape(kS8, {3}));
  Value sum =
      b.reduce(x, b.constant<std::int8_t>(-100), make_binary_body(OpCode::kAdd, kS32).value(), {0});
  Literal out = run1(b, sum, {Literal::vector<std::int8_t>({100, 100, 100})});
  expect<std::int32_t>(out, {200}, {});  // in s8 this would have wrapped
}

TEST_CASE("reference: dot_general (spec example), matmul, batches, several contractions") {
  GraphBuilder b("dot");
  Value l = b.parameter(Shape(kS64, {2, 2, 2}));
  Value r = b.parameter(Shape(kS64, {2, 2, 2}));
  Literal out = run1(b, b.dot_general(l, r, DotDimensionNumbers{{0}, {0}, {2}, {1}}),
                     {make<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}),
                      make<std::int64_t>({1, 0, 0, 1, 1, 0, 0, 1}, {2, 2, 2})});
  expect<std::int64_t>(out, {1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});

  // Matmul, vector dot and outer product against loops (small integers: exact in float).
  std::vector<float> a(12), m(8);
  for (int i = 0; i < 12; ++i) a[static_cast<std::size_t>(i)] = static_cast<float>(i % 5 - 2);
  for (int i = 0; i < 8; ++i) m[static_cast<std::size_t>(i)] = static_cast<float>(3 - i);
  GraphBuilder c("matmul");
  Value pa = c.parameter(Shape(kF32, {3, 4}));
  Value pm = c.parameter(Shape(kF32, {4, 2}));
  Value row = c.slice(pa, {0, 0}, {1, 4});
  Value vec = c.reshape(row, {4});
  std::vector<Literal> outs =
      run(c, {c.dot(pa, pm), c.dot(vec, vec), c.dot_general(vec, c.reshape(pm, {8}), {})},
          {make_from<float>(a, {3, 4}), make_from<float>(m, {4, 2})});
  std::vector<float> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      float s = 0;
      for (int k = 0; k < 4; ++k)
        s += a[static_cast<std::size_t>(i * 4 + k)] * m[static_cast<std::size_t>(k * 2 + j)];
      want.push_back(s);
    }
  expect<float>(outs[0], want, {3, 2});
  float self = 0;
  for (int k = 0; k < 4; ++k)
    self += a[static_cast<std::size_t>(k)] * a[static_cast<std::size_t>(k)];
  expect<float>(outs[1], {self}, {});
  // Without contracting dimensions each element is still a sum that starts from zero, so a
  // product of -0 comes out +0.
  std::vector<float> outer;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      outer.push_back(0.0f + a[static_cast<std::size_t>(i)] * m[static_cast<std::size_t>(j)]);
  expect<float>(outs[2], outer, {4, 8});

  // Batch dimension in different places; two contracting dimensions in swapped order.
  std::vector<std::int32_t> p(24), q(40), s(24), t(60);
  for (int i = 0; i < 24; ++i) p[static_cast<std::size_t>(i)] = i % 7 - 3;
  for (int i = 0; i < 40; ++i) q[static_cast<std::size_t>(i)] = i % 5 - 1;
  for (int i = 0; i < 24; ++i) s[static_cast<std::size_t>(i)] = (i * 5) % 11 - 5;
  for (int i = 0; i < 60; ++i) t[static_cast<std::size_t>(i)] = (i * 3) % 13 - 6;
  GraphBuilder e("general");
  Value pp = e.parameter(Shape(kS32, {2, 3, 4}));  // [batch, i, k]
  Value pq = e.parameter(Shape(kS32, {4, 2, 5}));  // [k, batch, j]
  Value ps = e.parameter(Shape(kS32, {3, 2, 4}));  // [a, i, c]
  Value pt = e.parameter(Shape(kS32, {4, 5, 3}));  // [c, j, a]
  outs = run(e,
             {e.dot_general(pp, pq, DotDimensionNumbers{{0}, {1}, {2}, {0}}),
              e.dot_general(ps, pt, DotDimensionNumbers{{}, {}, {0, 2}, {2, 0}})},
             {make_from<std::int32_t>(p, {2, 3, 4}), make_from<std::int32_t>(q, {4, 2, 5}),
              make_from<std::int32_t>(s, {3, 2, 4}), make_from<std::int32_t>(t, {4, 5, 3})});
  std::vector<std::int32_t> batched, contracted;
  for (int bt = 0; bt < 2; ++bt)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        std::int32_t sum = 0;
        for (int k = 0; k < 4; ++k)
          sum += p[static_cast<std::size_t>(bt * 12 + i * 4 + k)] *
                 q[static_cast<std::size_t>(k * 10 + bt * 5 + j)];
        batched.push_back(sum);
      }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j) {
      std::int32_t sum = 0;
      for (int aa = 0; aa < 3; ++aa)
        for (int cc = 0; cc < 4; ++cc)
          sum += s[static_cast<std::size_t>(aa * 8 + i * 4 + cc)] *
                 t[static_cast<std::size_t>(cc * 15 + j * 3 + aa)];
      contracted.push_back(sum);
    }
  expect<std::int32_t>(outs[0], batched, {2, 3, 5});
  expect<std::int32_t>(outs[1], contracted, {2, 5});
}

TEST_CASE("reference: dot_general on pred, complex and an empty contraction") {
  GraphBuilder b("dot_types");
  Value p = b.parameter(Shape(kPred, {2, 2}));
  Value z = b.parameter(Shape(kC64, {2}));
  Value e = b.parameter(Shape(kF32, {2, 0}));
  Literal preds(Shape(kPred, {2, 2}));
  preds.set<bool>({0, 1}, true);  // [[F, T], [F, F]]
  std::vector<Literal> out =
      run(b,
          {b.dot(p, p), b.dot(p, b.transpose(p, {1, 0})), b.dot(z, z),
           b.dot(e, b.transpose(e, {1, 0}))},
          {preds, Literal::vector<c64>({c64(1, 2), c64(3, -1)}), Literal(Shape(kF32, {2, 0}))});
  // [[F,T],[F,F]] @ itself = 0 (an or of ands); @ its transpose has one true.
  expect_preds(out[0], {false, false, false, false});
  expect_preds(out[1], {true, false, false, false});
  expect<c64>(out[2], {c64(1, 2) * c64(1, 2) + c64(3, -1) * c64(3, -1)}, {});
  expect<float>(out[3], {0, 0, 0, 0}, {2, 2});
}

// ---- Empty tensors, rank 0, evaluate_node -------------------------------------------------

TEST_CASE("reference: empty tensors pass through every kind of op") {
  GraphBuilder b("empty");
  Value x = b.parameter(Shape(kF32, {0, 3}));
  Value v = b.parameter(Shape(kF32, {2}));
  std::vector<Literal> out = run(
      b,
      {b.add(x, x), b.exponential(x), b.transpose(x, {1, 0}), b.slice(v, {1}, {1}),
       b.pad(b.slice(v, {0}, {0}), b.constant(7.0f), {2}, {1}), b.broadcast_in_dim(v, {0, 2}, {1}),
       b.iota(Shape(kS32, {0}), 0), b.concatenate({b.slice(v, {0}, {0}), v}, 0),
       b.select(b.constant(true), x, x), b.convert(x, kS8)},
      {Literal(Shape(kF32, {0, 3})), Literal::vector<float>({1, 2})});
  expect<float>(out[0], {}, {0, 3});
  expect<float>(out[1], {}, {0, 3});
  expect<float>(out[2], {}, {3, 0});
  expect<float>(out[3], {}, {0});
  expect<float>(out[4], {7, 7, 7});
  expect<float>(out[5], {}, {0, 2});
  expect<std::int32_t>(out[6], {}, {0});
  expect<float>(out[7], {1, 2});
  expect<float>(out[8], {}, {0, 3});
  expect<std::int8_t>(out[9], {}, {0, 3});
}

TEST_CASE("reference: rank-0 values") {
  GraphBuilder b("scalars");
  Value x = b.parameter(Shape(kF64, {}));
  Value y = b.parameter(Shape(kS32, {}));
  std::vector<Literal> out = run(
      b,
      {b.multiply(x, x), b.reshape(b.reshape(x, {1, 1, 1}), {}), b.transpose(y, {}),
       b.reverse(y, {}), b.dynamic_slice(y, {}, {}), b.dot(b.reshape(x, {1}), b.reshape(x, {1}))},
      {Literal::scalar(1.5), Literal::scalar<std::int32_t>(-4)});
  expect<double>(out[0], {2.25}, {});
  expect<double>(out[1], {1.5}, {});
  expect<std::int32_t>(out[2], {-4}, {});
  expect<std::int32_t>(out[3], {-4}, {});
  expect<std::int32_t>(out[4], {-4}, {});
  expect<double>(out[5], {2.25}, {});
}

TEST_CASE("reference: evaluate_node folds one node and checks its operands") {
  GraphBuilder b("fold");
  Value x = b.parameter(Shape(kS32, {3}));
  Value c = b.constant(Literal::vector<std::int32_t>({10, 20, 30}));
  Value sum = b.add(x, c);
  Value total = b.reduce(sum, b.constant(0), OpCode::kAdd, {0});
  Graph g = b.build({total}).value();
  const Node& add = g.node(sum.node);
  const Node& reduce = g.node(total.node);

  const Literal a = Literal::vector<std::int32_t>({1, 2, 3});
  const Literal k = Literal::vector<std::int32_t>({10, 20, 30});
  const Literal* operands[] = {&a, &k};
  StatusOr<std::vector<Literal>> folded = reference::evaluate_node(add, operands);
  REQUIRE_MESSAGE(folded.ok(), folded.status().to_string());
  REQUIRE(folded->size() == 1);
  expect<std::int32_t>(folded->front(), {11, 22, 33});

  const Literal init = Literal::scalar<std::int32_t>(4);
  const Literal* reduce_operands[] = {&folded->front(), &init};
  StatusOr<std::vector<Literal>> reduced = reference::evaluate_node(reduce, reduce_operands);
  REQUIRE_MESSAGE(reduced.ok(), reduced.status().to_string());
  expect<std::int32_t>(reduced->front(), {70}, {});

  const Literal wrong = Literal::vector<std::int32_t>({1, 2});
  const Literal* bad[] = {&a, &wrong};
  check_error(reference::evaluate_node(add, bad).status(), StatusCode::kInvalidArgument,
              "evaluate_node: add: operand 1 has shape s32[2]");
  const Literal* too_few[] = {&a};
  check_error(reference::evaluate_node(add, too_few).status(), StatusCode::kInvalidArgument,
              "takes 2 operand(s), got 1");
  const Literal widened = Literal::vector<std::int64_t>({1, 2, 3});
  const Literal widened_k = Literal::vector<std::int64_t>({1, 2, 3});
  const Literal* other_type[] = {&widened, &widened_k};
  check_error(reference::evaluate_node(add, other_type).status(), StatusCode::kInvalidArgument,
              "the operands give result(s) s64[3] but the node has s32[3]");
  check_error(reference::evaluate_node(g.node(x.node), {}).status(), StatusCode::kInvalidArgument,
              "parameter");
  const Literal* null_operand[] = {&a, nullptr};
  check_error(reference::evaluate_node(add, null_operand).status(), StatusCode::kInvalidArgument,
              "operand 1 is null");
  StatusOr<std::vector<Literal>> constant = reference::evaluate_node(g.node(c.node), {});
  REQUIRE(constant.ok());
  expect<std::int32_t>(constant->front(), {10, 20, 30});
}

// ---- The sweep ----------------------------------------------------------------------------

TEST_CASE("reference: every element-wise op runs on every type it accepts") {
  int unary_runs = 0, binary_runs = 0, compare_runs = 0, convert_runs = 0;
  for (DType t : kAllDTypes) {
    CAPTURE(dtype_name(t));
    const Literal s = samples(t);
    auto [lhs, rhs] = all_pairs(s);
    for (std::size_t i = 0; i < kOpCodeCount; ++i) {
      const auto op = static_cast<OpCode>(i);
      CAPTURE(op_name(op));
      if (is_unary(op)) {
        GraphBuilder b("sweep");
        Value v = b.unary(op, b.parameter(s.shape()));
        if (!b.ok()) continue;  // the op does not take this type
        std::vector<Literal> args;
        args.push_back(s);
        StatusOr<std::vector<Literal>> r = reference::evaluate(b.build(v).value(), args);
        CHECK_MESSAGE(r.ok(), r.status().to_string());
        ++unary_runs;
      } else if (is_binary(op)) {
        GraphBuilder b("sweep");
        Value p = b.parameter(lhs.shape());
        Value v = b.binary(op, p, b.parameter(rhs.shape()));
        if (!b.ok()) continue;
        std::vector<Literal> args;
        args.push_back(lhs);
        args.push_back(rhs);
        StatusOr<std::vector<Literal>> r = reference::evaluate(b.build(v).value(), args);
        CHECK_MESSAGE(r.ok(), r.status().to_string());
        ++binary_runs;
      }
    }
    for (ComparisonDirection d : kAllDirections) {
      for (ComparisonType type : {ComparisonType::kNotype, ComparisonType::kTotalOrder}) {
        if (type == ComparisonType::kTotalOrder && !is_floating(t)) continue;
        GraphBuilder b("sweep");
        Value p = b.parameter(lhs.shape());
        Value q = b.parameter(rhs.shape());
        Value v = b.compare(p, q, d, type);
        Value sel = b.select(v, p, q);
        Value clamped = b.clamp(p, q, p);
        std::vector<Literal> args;
        args.push_back(lhs);
        args.push_back(rhs);
        StatusOr<std::vector<Literal>> r =
            reference::evaluate(b.build({v, sel, clamped}).value(), args);
        const bool ordering = d != kEq && d != kNe;
        if (is_complex(t) && ordering)
          CHECK(r.status().code() == StatusCode::kUnimplemented);
        else
          CHECK_MESSAGE(r.ok(), r.status().to_string());
        ++compare_runs;
      }
    }
    for (DType to : kAllDTypes) {
      GraphBuilder b("sweep");
      Value p = b.parameter(s.shape());
      Value v = b.convert(p, to);
      std::vector<Value> outputs = {v};
      // bitcast_convert where its shape rule allows it: equal widths, or a split.
      if (!is_pred(t) && !is_pred(to) && is_complex(t) == is_complex(to) &&
          byte_size(to) <= byte_size(t))
        outputs.push_back(b.bitcast_convert(p, to));
      StatusOr<Graph> g = b.build(outputs);
      REQUIRE_MESSAGE(g.ok(), g.status().to_string());
      std::vector<Literal> args;
      args.push_back(s);
      StatusOr<std::vector<Literal>> r = reference::evaluate(*g, args);
      CHECK_MESSAGE(r.ok(), r.status().to_string());
      ++convert_runs;
    }
  }
  // Every (op, type) pair the type rules accept ran: complex takes only f32 and f64.
  int accepted_unary = 0, accepted_binary = 0;
  for (std::size_t i = 0; i < kOpCodeCount; ++i) {
    const auto op = static_cast<OpCode>(i);
    for (DType t : kAllDTypes) {
      if (!is_in(t, accepted_types(op))) continue;
      if (op == OpCode::kComplex && t != kF32 && t != kF64) continue;
      if (is_unary(op)) ++accepted_unary;
      if (is_binary(op)) ++accepted_binary;
    }
  }
  CHECK(unary_runs == accepted_unary);
  CHECK(binary_runs == accepted_binary);
  CHECK(compare_runs == 6 * 15 + 6 * 4);
  CHECK(convert_runs == 15 * 15);
}

TEST_CASE("reference: scatter adds or replaces in index order and drops what falls outside") {
  // Rows of a 2x3 input named by a 4x1 index array: row 1 twice, row 0 once, row 5 (outside).
  GraphBuilder b("scatter");
  Value x = b.parameter(Shape(kS32, {2, 3}));
  Value idx = b.parameter(Shape(kS64, {4, 1}));
  Value upd = b.parameter(Shape(kS32, {4, 3}));
  const ScatterAttrs rows{{1}, {0}, {}, {}, {0}, 1, false, false};
  std::vector<Literal> out =
      run(b,
          {b.scatter(x, idx, upd, OpCode::kAdd, rows),
           b.scatter(x, idx, upd, OpCode::kParameter, rows)},
          {make<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}), make<std::int64_t>({1, 0, 1, 5}, {4, 1}),
           make<std::int32_t>({10, 20, 30, 1, 1, 1, 100, 200, 300, 7, 7, 7}, {4, 3})});
  expect<std::int32_t>(out[0], {2, 3, 4, 114, 225, 336}, {2, 3});
  // Replacing: the later update of row 1 wins.
  expect<std::int32_t>(out[1], {1, 1, 1, 100, 200, 300}, {2, 3});

  // The spec checks bounds per element: a window starting at 3 of a size-5 input keeps its
  // first two elements and drops the third.
  GraphBuilder c("scatter_window");
  Value y = c.parameter(Shape(kF32, {5}));
  Value window = c.scatter(y, c.constant(Literal::vector<std::uint8_t>({3})),
                           c.constant(Literal::vector<float>({1.5f, 2.5f, 3.5f})),
                           OpCode::kParameter, ScatterAttrs{{0}, {}, {}, {}, {0}, 0, false, false});
  expect<float>(run1(c, window, {make<float>({0, 0, 0, 0, 0}, {5})}), {0, 0, 0, 1.5f, 2.5f}, {5});
}

TEST_CASE("reference: scatter with batching dimensions (spec formula)") {
  // Input dim 0 pairs with index dim 0: batch k's index picks a column of input row k.
  GraphBuilder b("scatter_batched");
  Value x = b.parameter(Shape(kS32, {2, 3}));
  Value idx = b.parameter(Shape(kS32, {2}));
  Value upd = b.parameter(Shape(kS32, {2}));
  Value r =
      b.scatter(x, idx, upd, OpCode::kAdd, ScatterAttrs{{}, {1}, {0}, {0}, {1}, 1, false, false});
  expect<std::int32_t>(run1(b, r,
                            {make<std::int32_t>({0, 0, 0, 0, 0, 0}, {2, 3}),
                             make<std::int32_t>({2, 0}, {2}), make<std::int32_t>({5, 9}, {2})}),
                       {0, 0, 5, 9, 0, 0}, {2, 3});
}

TEST_CASE("reference: gather (spec example shape) with clamped starts and batching") {
  // Rows of a 3x3 input: start 2 of a 2-row window clamps to 1; start -4 clamps to 0.
  GraphBuilder b("gather");
  Value x = b.parameter(Shape(kS32, {3, 3}));
  Value idx = b.parameter(Shape(kS64, {3}));
  Value r = b.gather(x, idx, GatherAttrs{{1, 2}, {}, {}, {}, {0}, 1, {2, 3}, false});
  expect<std::int32_t>(run1(b, r,
                            {make<std::int32_t>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}),
                             make<std::int64_t>({2, -4, 0}, {3})}),
                       {4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, {3, 2, 3});
  // Batching: row k of the input, column idx[k]; a huge u64 start clamps to the last column.
  GraphBuilder c("gather_batched");
  Value y = c.parameter(Shape(kS32, {2, 3}));
  Value j = c.parameter(Shape(DType::kU64, {2}));
  Value s = c.gather(y, j, GatherAttrs{{}, {1}, {0}, {0}, {1}, 1, {1, 1}, false});
  expect<std::int32_t>(run1(c, s,
                            {make<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}),
                             make<std::uint64_t>({1, 0xFFFFFFFFFFFFFFFFull}, {2})}),
                       {2, 6}, {2});
}

TEST_CASE("reference: reduce_window (spec example) with padding and both dilations") {
  GraphBuilder b("reduce_window");
  Value x = b.parameter(Shape(kS64, {3, 2}));
  WindowAttrs w{{2, 1}, {4, 1}, {2, 1}, {3, 1}, {2, 0}, {1, 0}};
  Value r = b.reduce_window(x, b.constant(std::int64_t{0}), OpCode::kAdd, w);
  expect<std::int64_t>(run1(b, r, {make<std::int64_t>({1, 2, 3, 4, 5, 6}, {3, 2})}), {0, 0, 3, 4},
                       {2, 2});
}

TEST_CASE("reference: cumsum and reverse cummax through reduce_window equal running loops") {
  const std::vector<std::int32_t> values = {3, -1, 4, 1, -5, 9, 2, -6};
  const auto n = static_cast<std::int64_t>(values.size());
  GraphBuilder b("cumulative");
  Value x = b.parameter(Shape(kS32, {n}));
  // JAX's cumsum: a window as long as the input, padded in front by n - 1 zeros.
  Value sum = b.reduce_window(x, b.constant(std::int32_t{0}), OpCode::kAdd,
                              WindowAttrs{{n}, {}, {}, {}, {n - 1}, {0}});
  // Reverse cummax: padded behind instead.
  Value max = b.reduce_window(x, b.constant(std::numeric_limits<std::int32_t>::min()),
                              OpCode::kMaximum, WindowAttrs{{n}, {}, {}, {}, {0}, {n - 1}});
  std::vector<Literal> out = run(b, {sum, max}, {make_from<std::int32_t>(values, {n})});
  std::vector<std::int32_t> running(values.size()), reverse_max(values.size());
  std::int32_t acc = 0;
  for (std::size_t i = 0; i < values.size(); ++i) running[i] = acc += values[i];
  std::int32_t best = std::numeric_limits<std::int32_t>::min();
  for (std::size_t i = values.size(); i-- > 0;) reverse_max[i] = best = std::max(best, values[i]);
  expect<std::int32_t>(out[0], running);
  expect<std::int32_t>(out[1], reverse_max);
}

TEST_CASE("reference: max_pool and avg-pool sums through reduce_window equal a direct loop") {
  // 2x2 windows with stride 2 over a 4x5 input, padded by one column on the right with the
  // init value, as a SAME-padded pool is.
  constexpr std::int64_t kRows = 4, kCols = 5;
  std::vector<float> values;
  for (std::int64_t i = 0; i < kRows * kCols; ++i)
    values.push_back(static_cast<float>((i * 7) % 11) - 5.0f);
  GraphBuilder b("pool");
  Value x = b.parameter(Shape(kF32, {kRows, kCols}));
  const WindowAttrs w{{2, 2}, {2, 2}, {}, {}, {0, 0}, {0, 1}};
  Value max = b.reduce_window(x, b.constant(-kInf<float>), OpCode::kMaximum, w);
  Value sum = b.reduce_window(x, b.constant(0.0f), OpCode::kAdd, w);
  std::vector<Literal> out = run(b, {max, sum}, {make_from<float>(values, {kRows, kCols})});
  std::vector<float> want_max, want_sum;
  for (std::int64_t r = 0; r < kRows; r += 2)
    for (std::int64_t c = 0; c < kCols; c += 2) {  // the padded width 6 holds 3 windows
      float m = -kInf<float>, s = 0.0f;
      for (std::int64_t i = r; i < r + 2; ++i)
        for (std::int64_t j = c; j < c + 2 && j < kCols; ++j) {
          m = std::max(m, values[static_cast<std::size_t>(i * kCols + j)]);
          s += values[static_cast<std::size_t>(i * kCols + j)];
        }
      want_max.push_back(m);
      want_sum.push_back(s);
    }
  expect<float>(out[0], want_max, {2, 3});
  expect<float>(out[1], want_sum, {2, 3});
}

TEST_CASE("reference: select_and_scatter (spec example) sends each source to its window's max") {
  GraphBuilder b("select_and_scatter");
  Value x = b.parameter(Shape(kS64, {4, 2}));
  Value src = b.parameter(Shape(kS64, {2, 2}));
  Value r = b.select_and_scatter(x, src, b.constant(std::int64_t{0}), ComparisonDirection::kGe,
                                 OpCode::kAdd, WindowAttrs{{3, 1}, {2, 1}, {}, {}, {0, 0}, {1, 0}});
  expect<std::int64_t>(run1(b, r,
                            {make<std::int64_t>({1, 5, 2, 5, 3, 6, 4, 4}, {4, 2}),
                             make<std::int64_t>({5, 6, 7, 8}, {2, 2})}),
                       {0, 0, 0, 0, 5, 14, 7, 0}, {4, 2});
}

TEST_CASE("reference: while loops equal their closed forms, nested ones too") {
  const Graph sum = testing::sum_to_n();
  const Graph sums = testing::sum_of_sums();
  for (std::int32_t n : {-3, 0, 1, 2, 10, 100}) {
    CAPTURE(n);
    const std::vector<Literal> args = {Literal::scalar(n)};
    const std::int32_t m = n < 0 ? 0 : n;
    StatusOr<std::vector<Literal>> r = reference::evaluate(sum, args);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK((*r)[0] == Literal::scalar(m * (m + 1) / 2));
    StatusOr<std::vector<Literal>> r2 = reference::evaluate(sums, args);
    REQUIRE_MESSAGE(r2.ok(), r2.status().to_string());
    CHECK((*r2)[0] == Literal::scalar(m * (m + 1) * (m + 2) / 6));
  }
}

TEST_CASE("reference: case runs the indexed branch, out-of-range indices the last, and if picks") {
  const Literal x = Literal::vector<float>({1, -2, 0.5f});
  const Literal y = Literal::scalar(3.0f);
  auto expected = [&](std::int32_t k) { return testing::scaled_branch_result(x, 3.0f, k); };
  for (std::int32_t branches : {1, 2, 4}) {
    const Graph g = testing::case_graph(branches);
    for (std::int32_t index : {-1, 0, 1, 3, 4, 1000, std::numeric_limits<std::int32_t>::min()}) {
      CAPTURE(branches);
      CAPTURE(index);
      StatusOr<std::vector<Literal>> r =
          reference::evaluate(g, std::vector<Literal>{Literal::scalar(index), x, y});
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      CHECK(*r == expected(testing::selected_branch(index, branches)));
    }
  }
  const Graph g = testing::if_graph();
  for (bool pred : {true, false}) {
    StatusOr<std::vector<Literal>> r =
        reference::evaluate(g, std::vector<Literal>{Literal::scalar(pred), x, y});
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(*r == expected(pred ? 1 : 2));
  }
}

// fft: shape inference and its errors, the reference against the transform's closed forms
// (delta, cosine, the inverses), and forward-mode autodiff.
namespace {

StatusOr<Graph> fft_graph(const Shape& operand, FftType type, std::vector<std::int64_t> length) {
  GraphBuilder b("fft");
  Value out = b.fft(b.parameter(operand), type, std::move(length));
  return b.build({out});
}

Literal fft_eval(const Shape& operand, FftType type, std::vector<std::int64_t> length,
                 const Literal& x) {
  StatusOr<Graph> g = fft_graph(operand, type, std::move(length));
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  auto r = reference::evaluate(*g, std::span<const Literal>(&x, 1));
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return std::move((*r)[0]);
}

Literal fft_random(const Shape& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Literal l(s);
  if (s.dtype() == DType::kC128)
    for (c128& v : l.data<c128>()) v = c128(u(rng), u(rng));
  else
    for (double& v : l.data<double>()) v = u(rng);
  return l;
}

}  // namespace

TEST_CASE("fft: shapes and the errors of shape inference") {
  auto shape_of = [](const Shape& s, FftType t, std::vector<std::int64_t> len) {
    StatusOr<Graph> g = fft_graph(s, t, std::move(len));
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    return g->node(g->outputs()[0]).results[0];
  };
  CHECK(shape_of(Shape(DType::kC64, {3, 8}), FftType::kFft, {8}) == Shape(DType::kC64, {3, 8}));
  CHECK(shape_of(Shape(DType::kF32, {2, 4, 17}), FftType::kRfft, {4, 17}) == Shape(DType::kC64, {2, 4, 9}));
  CHECK(shape_of(Shape(DType::kF64, {0}), FftType::kRfft, {0}) == Shape(DType::kC128, {0}));
  CHECK(shape_of(Shape(DType::kC128, {5, 17}), FftType::kIrfft, {5, 32}) == Shape(DType::kF64, {5, 32}));
  CHECK(shape_of(Shape(DType::kC64, {14, 0, 17}), FftType::kIrfft, {33}) == Shape(DType::kF32, {14, 0, 33}));
  auto error_of = [](const Shape& s, FftType t, std::vector<std::int64_t> len, std::string_view fragment) {
    StatusOr<Graph> g = fft_graph(s, t, std::move(len));
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(g.status().message().find(fragment) != std::string::npos, g.status().message());
  };
  error_of(Shape(DType::kF32, {8}), FftType::kFft, {8}, "FFT takes c64 or c128");
  error_of(Shape(DType::kC64, {8}), FftType::kRfft, {8}, "RFFT takes f32 or f64");
  error_of(Shape(DType::kF16, {8}), FftType::kRfft, {8}, "RFFT takes f32 or f64");
  error_of(Shape(DType::kF32, {8}), FftType::kIrfft, {8}, "IRFFT takes c64 or c128");
  error_of(Shape(DType::kC64, {8}), FftType::kFft, {}, "it takes 1 to 3");
  error_of(Shape(DType::kC64, {1, 1, 1, 1}), FftType::kFft, {1, 1, 1, 1}, "it takes 1 to 3");
  error_of(Shape(DType::kC64, {8}), FftType::kFft, {1, 8}, "has rank 1");
  error_of(Shape(DType::kC64, {8}), FftType::kFft, {-8}, "fft_length[0] = -8 is negative");
  error_of(Shape(DType::kC64, {4, 8}), FftType::kIfft, {5, 8}, "dimension 0 has size 4 but IFFT");
  error_of(Shape(DType::kF32, {8}), FftType::kRfft, {9}, "needs 9");
  error_of(Shape(DType::kC64, {8}), FftType::kIrfft, {8}, "needs 5");
  error_of(Shape(DType::kC64, {8}), static_cast<FftType>(7), {8}, "fft_type has invalid enum value 7");
}

TEST_CASE("fft: the reference matches the closed forms of the transform") {
  // A delta transforms to all ones; a cosine of frequency m to n/2 at m and n - m.
  for (std::int64_t n : {1, 5, 8, 12}) {
    Literal delta(Shape(DType::kC128, {n}));
    delta.data<c128>()[0] = 1;
    const Literal d = fft_eval(delta.shape(), FftType::kFft, {n}, delta);
    for (const c128& v : d.data<c128>()) CHECK(std::abs(v - c128(1)) < 1e-15);
    if (n < 5) continue;
    const std::int64_t m = 2;
    Literal wave(Shape(DType::kF64, {n}));
    for (std::int64_t j = 0; j < n; ++j)
      wave.data<double>()[static_cast<std::size_t>(j)] =
          std::cos(2 * std::numbers::pi * static_cast<double>(m * j) / static_cast<double>(n));
    const Literal w = fft_eval(wave.shape(), FftType::kRfft, {n}, wave);
    REQUIRE(w.dims()[0] == n / 2 + 1);
    for (std::int64_t k = 0; k <= n / 2; ++k) {
      const double want = k == m ? static_cast<double>(n) / 2 : 0.0;
      CHECK_MESSAGE(std::abs(w.data<c128>()[static_cast<std::size_t>(k)] - c128(want)) < 1e-12,
                    "n=", n, " k=", k);
    }
  }
  // IFFT(FFT(x)) == x over three dimensions, and a direct sum for one element.
  const Shape cs(DType::kC128, {2, 3, 4, 5});
  const Literal x = fft_random(cs, 1);
  const Literal fx = fft_eval(cs, FftType::kFft, {3, 4, 5}, x);
  c128 sum = 0;
  for (std::int64_t a = 0; a < 3; ++a)
    for (std::int64_t b = 0; b < 4; ++b)
      for (std::int64_t c = 0; c < 5; ++c) {
        const double angle = -2 * std::numbers::pi * (1.0 * a / 3 + 2.0 * b / 4 + 3.0 * c / 5);
        sum += x.get<c128>({1, a, b, c}) * std::polar(1.0, angle);
      }
  CHECK(std::abs(fx.get<c128>({1, 1, 2, 3}) - sum) < 1e-12);
  const Literal back = fft_eval(cs, FftType::kIfft, {3, 4, 5}, fx);
  for (std::size_t i = 0; i < back.data<c128>().size(); ++i)
    CHECK(std::abs(back.data<c128>()[i] - x.data<c128>()[i]) < 1e-14);
  // IRFFT(RFFT(x)) == x, even and odd last lengths.
  for (std::int64_t last : {6, 7}) {
    const Shape rs(DType::kF64, {3, 4, last});
    const Literal r = fft_random(rs, 2 + static_cast<std::uint64_t>(last));
    const Literal half = fft_eval(rs, FftType::kRfft, {4, last}, r);
    const Literal again = fft_eval(half.shape(), FftType::kIrfft, {4, last}, half);
    REQUIRE(again.shape() == rs);
    for (std::size_t i = 0; i < r.data<double>().size(); ++i)
      CHECK(std::abs(again.data<double>()[i] - r.data<double>()[i]) < 1e-14);
  }
}

TEST_CASE("fft: jvp is the fft of the tangent, and vjp is UNIMPLEMENTED") {
  const Shape cs(DType::kC128, {3, 6});
  StatusOr<Graph> g = fft_graph(cs, FftType::kFft, {6});
  REQUIRE(g.ok());
  StatusOr<Graph> jvp = jvp_graph(*g, {true});
  REQUIRE_MESSAGE(jvp.ok(), jvp.status().to_string());
  const Literal x = fft_random(cs, 3), dx = fft_random(cs, 4);
  const Literal args[] = {x, dx};
  auto out = reference::evaluate(*jvp, args);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  const Literal want = fft_eval(cs, FftType::kFft, {6}, dx);
  for (std::size_t i = 0; i < want.data<c128>().size(); ++i)
    CHECK(std::abs((*out)[1].data<c128>()[i] - want.data<c128>()[i]) < 1e-14);
  // The DFT matrix is symmetric: the cotangent dx goes back as fft(dx).
  StatusOr<Graph> vjp = vjp_graph(*g, {true});
  REQUIRE_MESSAGE(vjp.ok(), vjp.status().to_string());
  auto back = reference::evaluate(*vjp, args);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  for (std::size_t i = 0; i < want.data<c128>().size(); ++i)
    CHECK(std::abs((*back)[1].data<c128>()[i] - want.data<c128>()[i]) < 1e-14);
}

// triangular_solve: shape inference and its errors, the residual op(a) x - b of the reference on
// random well-conditioned systems of every attribute combination, and autodiff.
namespace {

StatusOr<Graph> solve_graph(const Shape& a, const Shape& b, TriangularSolveAttrs attrs) {
  GraphBuilder g("solve");
  const Value pa = g.parameter(a);  // a is parameter 0: arguments are evaluated in any order
  const Value pb = g.parameter(b);
  return g.build({g.triangular_solve(pa, pb, attrs)});
}

/// Random values in [-1, 1] with the diagonal of every trailing square moved to 4 + |v|, so the
/// triangles solved are well conditioned.
Literal solve_input(const Shape& s, std::uint64_t seed, bool square) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Literal l(s);
  const std::int64_t cols = s.dim(s.rank() - 1), rows = s.dim(s.rank() - 2);
  auto data = l.data<c128>();
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] = c128(u(rng), u(rng));
    const auto in_matrix = static_cast<std::int64_t>(i) % (rows * cols);
    if (square && in_matrix / cols == in_matrix % cols) data[i] += 4.0 + std::abs(u(rng));
  }
  return l;
}

}  // namespace

TEST_CASE("triangular_solve: shapes and the errors of shape inference") {
  const TriangularSolveAttrs left{true, true, false, Transpose::kNoTranspose};
  const TriangularSolveAttrs right{false, true, false, Transpose::kNoTranspose};
  StatusOr<Graph> ok = solve_graph(Shape(DType::kF32, {2, 8, 8}), Shape(DType::kF32, {2, 10, 8}), right);
  REQUIRE_MESSAGE(ok.ok(), ok.status().to_string());
  CHECK(ok->node(ok->outputs()[0]).results[0] == Shape(DType::kF32, {2, 10, 8}));
  auto error_of = [](const Shape& a, const Shape& b, TriangularSolveAttrs attrs, std::string_view fragment) {
    StatusOr<Graph> g = solve_graph(a, b, attrs);
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(g.status().message().find(fragment) != std::string::npos, g.status().message());
  };
  error_of(Shape(DType::kS32, {2, 2}), Shape(DType::kS32, {2, 2}), left, "takes floating-point or complex types");
  error_of(Shape(DType::kF32, {2, 2}), Shape(DType::kF64, {2, 2}), left, "b) has element type f64 but a has f32");
  error_of(Shape(DType::kF32, {2}), Shape(DType::kF32, {2}), left, "has rank 1; it needs 2 or more");
  error_of(Shape(DType::kF32, {2, 2}), Shape(DType::kF32, {1, 2, 2}), left, "has rank 3 but a");
  error_of(Shape(DType::kF32, {3, 2, 2}), Shape(DType::kF32, {4, 2, 2}), left, "batch dimension 0 of b");
  error_of(Shape(DType::kF32, {2, 3}), Shape(DType::kF32, {2, 3}), left, "is not square");
  error_of(Shape(DType::kF32, {3, 3}), Shape(DType::kF32, {2, 3}), left, "dimension 0 is 2 but a");
  error_of(Shape(DType::kF32, {3, 3}), Shape(DType::kF32, {3, 2}), right, "dimension 1 is 2 but a");
  error_of(Shape(DType::kF32, {2, 2}), Shape(DType::kF32, {2, 2}),
           TriangularSolveAttrs{true, true, false, static_cast<Transpose>(5)}, "transpose_a has invalid enum value 5");
}

TEST_CASE("triangular_solve: the reference's x satisfies op(a) x = b or x op(a) = b") {
  const Shape as(DType::kC128, {3, 5, 5});
  const Literal a = solve_input(as, 11, true);
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (bool unit : {true, false})
        for (Transpose t : {Transpose::kNoTranspose, Transpose::kTranspose, Transpose::kAdjoint}) {
          CAPTURE(left);
          CAPTURE(lower);
          CAPTURE(unit);
          CAPTURE(static_cast<int>(t));
          const Shape bs(DType::kC128, left ? std::vector<std::int64_t>{3, 5, 4} : std::vector<std::int64_t>{3, 4, 5});
          const Literal b = solve_input(bs, 12, false);
          const TriangularSolveAttrs attrs{left, lower, unit, t};
          StatusOr<Graph> g = solve_graph(as, bs, attrs);
          REQUIRE(g.ok());
          const Literal args[] = {a, b};
          auto r = reference::evaluate(*g, args);
          REQUIRE_MESSAGE(r.ok(), r.status().to_string());
          const Literal& x = (*r)[0];
          // op(a)[i][j] from the triangle read, as the spec defines it.
          auto op = [&](std::int64_t batch, std::int64_t i, std::int64_t j) {
            const std::int64_t r0 = t == Transpose::kNoTranspose ? i : j, c0 = t == Transpose::kNoTranspose ? j : i;
            c128 v = (lower ? c0 <= r0 : c0 >= r0) ? a.get<c128>({batch, r0, c0}) : c128(0);
            if (unit && r0 == c0) v = 1;
            return t == Transpose::kAdjoint ? std::conj(v) : v;
          };
          double worst = 0;
          for (std::int64_t batch = 0; batch < 3; ++batch)
            for (std::int64_t i = 0; i < bs.dim(1); ++i)
              for (std::int64_t j = 0; j < bs.dim(2); ++j) {
                c128 sum = 0;
                for (std::int64_t k = 0; k < 5; ++k)
                  sum += left ? op(batch, i, k) * x.get<c128>({batch, k, j}) : x.get<c128>({batch, i, k}) * op(batch, k, j);
                worst = std::max(worst, std::abs(sum - b.get<c128>({batch, i, j})));
              }
          CHECK(worst < 1e-13);
        }
  // The spec's example.
  Literal sa = Literal::from_span<float>(std::vector<float>{1, 0, 0, 2, 4, 0, 3, 5, 6}, {3, 3}).value();
  Literal sb = Literal::from_span<float>(std::vector<float>{2, 0, 0, 4, 8, 0, 6, 10, 12}, {3, 3}).value();
  StatusOr<Graph> g = solve_graph(sa.shape(), sb.shape(), {true, true, false, Transpose::kNoTranspose});
  REQUIRE(g.ok());
  const Literal args[] = {sa, sb};
  auto r = reference::evaluate(*g, args);
  REQUIRE(r.ok());
  CHECK((*r)[0].data<float>()[0] == 2.0f);
  CHECK((*r)[0].data<float>()[4] == 2.0f);
  CHECK((*r)[0].data<float>()[8] == 2.0f);
  CHECK((*r)[0].data<float>()[3] == 0.0f);
}

TEST_CASE("triangular_solve: jvp in b is a solve of the tangent, and in a and vjp are UNIMPLEMENTED") {
  const Shape as(DType::kC128, {4, 4}), bs(DType::kC128, {4, 3});
  const TriangularSolveAttrs attrs{true, false, false, Transpose::kAdjoint};
  StatusOr<Graph> g = solve_graph(as, bs, attrs);
  REQUIRE(g.ok());
  StatusOr<Graph> jvp = jvp_graph(*g, {false, true});
  REQUIRE_MESSAGE(jvp.ok(), jvp.status().to_string());
  const Literal a = solve_input(as, 21, true), b = solve_input(bs, 22, false), db = solve_input(bs, 23, false);
  const Literal args[] = {a, b, db};
  auto out = reference::evaluate(*jvp, args);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  const Literal solve_args[] = {a, db};
  auto want = reference::evaluate(*g, solve_args);
  REQUIRE(want.ok());
  for (std::size_t i = 0; i < (*want)[0].data<c128>().size(); ++i)
    CHECK(std::abs((*out)[1].data<c128>()[i] - (*want)[0].data<c128>()[i]) < 1e-14);
  // Both operands in both modes (checked against finite differences in autodiff_rules_test).
  CHECK(jvp_graph(*g, {true, false}).ok());
  CHECK(vjp_graph(*g, {true, true}).ok());
}

}  // namespace reference_test
