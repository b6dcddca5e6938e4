// Quantized types (`!quant.uniform`) in StableHLO programs: uniform_quantize and
// uniform_dequantize, the ops on quantized values, the integer products, and what the runner
// needs for StableHLO's own test files (split-input-file, check.eq). Oracles written here,
// apart from the code under test: the spec's formulas evaluated in double precision on
// scalars, integer sums in 64 bits, and hand-computed values; every program runs on the CPU
// client and the reference interpreter, which must agree bit for bit.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/stablehlo/stablehlo.hpp"

namespace quantized_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// @main of `text` on the CPU client and on the reference interpreter; both must agree bit for
/// bit. Returns the CPU's outputs.
std::vector<Literal> run_twice(std::string_view text, const std::vector<Literal>& args) {
  const Graph g = require_ok(require_ok(stablehlo::parse_module(text)).main());
  std::vector<Literal> ref = require_ok(reference::evaluate(g, args));
  std::vector<Literal> cpu = run_on_cpu(g, args);
  REQUIRE(cpu.size() == ref.size());
  for (std::size_t k = 0; k < cpu.size(); ++k)
    CHECK_MESSAGE(cpu[k] == ref[k], "output ", k, ": cpu ", cpu[k], " reference ", ref[k]);
  return cpu;
}

/// The spec's quantize of one value: x / scale + zero_point, clamped, rounded to nearest even.
std::int64_t quantize_one(double x, double scale, std::int64_t zp, std::int64_t lo, std::int64_t hi) {
  const double y = std::clamp(x / scale + static_cast<double>(zp), static_cast<double>(lo), static_cast<double>(hi));
  return static_cast<std::int64_t>(std::nearbyint(y));
}

double dequantize_one(std::int64_t q, double scale, std::int64_t zp) { return static_cast<double>(q - zp) * scale; }

template <class T>
Literal vec(const std::vector<T>& v, std::vector<std::int64_t> dims) {
  return require_ok(Literal::from_span<T>(std::span<const T>(v), std::span<const std::int64_t>(dims)));
}

std::vector<std::int64_t> ints_of(const Literal& l) { return values_of<std::int64_t>(require_ok(l.convert(kS64))); }

StatusOr<stablehlo::Module> parse(std::string_view text) { return stablehlo::parse_module(text); }

}  // namespace

TEST_CASE("quantized types: uniform_quantize rounds half to even and clamps to the storage range") {
  // Scales that are powers of two, so that x / scale is exact in f32 and the ties are ties.
  const std::string text = R"(
func.func @main(%x: tensor<8xf32>) -> (tensor<8xi8>, tensor<8xf32>, tensor<8xui8>) {
  %q = stablehlo.uniform_quantize %x : (tensor<8xf32>) -> tensor<8x!quant.uniform<i8<-100:100>:f32, 5.000000e-01:3>>
  %s = stablehlo.bitcast_convert %q : (tensor<8x!quant.uniform<i8<-100:100>:f32, 5.000000e-01:3>>) -> tensor<8xi8>
  %d = stablehlo.uniform_dequantize %q : (tensor<8x!quant.uniform<i8<-100:100>:f32, 5.000000e-01:3>>) -> tensor<8xf32>
  %u = stablehlo.uniform_quantize %x : (tensor<8xf32>) -> tensor<8x!quant.uniform<u8:f32, 2.500000e-01:10>>
  %us = stablehlo.bitcast_convert %u : (tensor<8x!quant.uniform<u8:f32, 2.500000e-01:10>>) -> tensor<8xui8>
  return %s, %d, %us : tensor<8xi8>, tensor<8xf32>, tensor<8xui8>
})";
  const std::vector<float> x = {1.25f, 0.75f, -0.25f, 0.0f, 1000.0f, -1000.0f, 3.1f, -7.4f};
  const std::vector<Literal> out = run_twice(text, {vec(x, {8})});
  const std::vector<std::int64_t> s = ints_of(out[0]), u = ints_of(out[2]);
  const std::vector<float> d = values_of<float>(out[1]);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(x[i]);
    const std::int64_t want = quantize_one(x[i], 0.5, 3, -100, 100);
    CHECK(s[i] == want);
    CHECK(d[i] == static_cast<float>(dequantize_one(want, 0.5, 3)));
    CHECK(u[i] == quantize_one(x[i], 0.25, 10, 0, 255));
  }
  // The ties by hand: 1.25 / 0.5 + 3 = 5.5 -> 6, 0.75 / 0.5 + 3 = 4.5 -> 4, -0.25 / 0.5 + 3 = 2.5 -> 2.
  CHECK(s[0] == 6);
  CHECK(s[1] == 4);
  CHECK(s[2] == 2);
  CHECK(s[4] == 100);
  CHECK(s[5] == -100);
}

TEST_CASE("quantized types: per-axis scales and zero points apply along their dimension, and requantizing merges them") {
  const std::string text = R"(
func.func @main(%x: tensor<3x2xf32>) -> (tensor<3x2xi8>, tensor<3x2xf32>, tensor<3x2xi8>) {
  %q = stablehlo.uniform_quantize %x : (tensor<3x2xf32>) -> tensor<3x2x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:-2}>>
  %s = stablehlo.bitcast_convert %q : (tensor<3x2x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:-2}>>) -> tensor<3x2xi8>
  %d = stablehlo.uniform_dequantize %q : (tensor<3x2x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:-2}>>) -> tensor<3x2xf32>
  %r = stablehlo.uniform_quantize %q : (tensor<3x2x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:-2}>>) -> tensor<3x2x!quant.uniform<i8:f32:1, {1.000000e+00:0,1.250000e-01:4}>>
  %rs = stablehlo.bitcast_convert %r : (tensor<3x2x!quant.uniform<i8:f32:1, {1.000000e+00:0,1.250000e-01:4}>>) -> tensor<3x2xi8>
  return %s, %d, %rs : tensor<3x2xi8>, tensor<3x2xf32>, tensor<3x2xi8>
})";
  const std::vector<float> x = {1.0f, 1.0f, -2.25f, 0.6f, 7.0f, -3.1f};
  const std::vector<Literal> out = run_twice(text, {vec(x, {3, 2})});
  const std::vector<std::int64_t> s = ints_of(out[0]), r = ints_of(out[2]);
  const std::vector<float> d = values_of<float>(out[1]);
  const double scale[2] = {0.5, 0.25}, to_scale[2] = {1.0, 0.125};
  const std::int64_t zp[2] = {1, -2}, to_zp[2] = {0, 4};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = i % 2;
    CAPTURE(i);
    const std::int64_t q = quantize_one(x[i], scale[c], zp[c], -128, 127);
    CHECK(s[i] == q);
    CHECK(d[i] == static_cast<float>(dequantize_one(q, scale[c], zp[c])));
    CHECK(r[i] == quantize_one(dequantize_one(q, scale[c], zp[c]), to_scale[c], to_zp[c], -128, 127));
  }
}

TEST_CASE("quantized types: element-wise ops dequantize, compute and quantize (add, multiply, tanh, compare)") {
  const std::string text = R"(
func.func @main(%a: tensor<6xi8>, %b: tensor<6xi8>) -> (tensor<6xi8>, tensor<6xi8>, tensor<6xi8>, tensor<6xi1>) {
  %qa = stablehlo.bitcast_convert %a : (tensor<6xi8>) -> tensor<6x!quant.uniform<i8:f32, 1.250000e-01:-3>>
  %qb = stablehlo.bitcast_convert %b : (tensor<6xi8>) -> tensor<6x!quant.uniform<i8:f32, 5.000000e-01:2>>
  %sum = stablehlo.add %qa, %qb : (tensor<6x!quant.uniform<i8:f32, 1.250000e-01:-3>>, tensor<6x!quant.uniform<i8:f32, 5.000000e-01:2>>) -> tensor<6x!quant.uniform<i8:f32, 2.500000e-01:1>>
  %prod = stablehlo.multiply %qa, %qb : (tensor<6x!quant.uniform<i8:f32, 1.250000e-01:-3>>, tensor<6x!quant.uniform<i8:f32, 5.000000e-01:2>>) -> tensor<6x!quant.uniform<i8:f32, 2.500000e-01:1>>
  %t = stablehlo.tanh %qa : (tensor<6x!quant.uniform<i8:f32, 1.250000e-01:-3>>) -> tensor<6x!quant.uniform<i8:f32, 7.812500e-03:0>>
  %lt = stablehlo.compare LT, %qa, %qb : (tensor<6x!quant.uniform<i8:f32, 1.250000e-01:-3>>, tensor<6x!quant.uniform<i8:f32, 5.000000e-01:2>>) -> tensor<6xi1>
  %s0 = stablehlo.bitcast_convert %sum : (tensor<6x!quant.uniform<i8:f32, 2.500000e-01:1>>) -> tensor<6xi8>
  %s1 = stablehlo.bitcast_convert %prod : (tensor<6x!quant.uniform<i8:f32, 2.500000e-01:1>>) -> tensor<6xi8>
  %s2 = stablehlo.bitcast_convert %t : (tensor<6x!quant.uniform<i8:f32, 7.812500e-03:0>>) -> tensor<6xi8>
  return %s0, %s1, %s2, %lt : tensor<6xi8>, tensor<6xi8>, tensor<6xi8>, tensor<6xi1>
})";
  const std::vector<std::int8_t> a = {-128, -3, 0, 17, 90, 127}, b = {-128, 2, -7, 40, 3, 127};
  const std::vector<Literal> out = run_twice(text, {vec(a, {6}), vec(b, {6})});
  const std::vector<std::int64_t> sum = ints_of(out[0]), prod = ints_of(out[1]), th = ints_of(out[2]);
  const std::vector<std::uint8_t> lt = values_of<std::uint8_t>(require_ok(out[3].convert(kU8)));
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    const double x = dequantize_one(a[i], 0.125, -3), y = dequantize_one(b[i], 0.5, 2);
    // Sums and products of these values are exact in f32 and in double alike.
    CHECK(sum[i] == quantize_one(x + y, 0.25, 1, -128, 127));
    CHECK(prod[i] == quantize_one(x * y, 0.25, 1, -128, 127));
    // tanh in f32 against double: within one step of the storage type.
    CHECK(std::abs(th[i] - quantize_one(std::tanh(x), 0.0078125, 0, -128, 127)) <= 1);
    CHECK((lt[i] != 0) == (x < y));
  }
}

TEST_CASE("quantized types: dot_general sums the integer products exactly") {
  // lhs zero point -128 (the shifted bytes are u8); rhs zero point 5 (the shifted values fit
  // no byte: the stored bytes are multiplied and the zero points' shares subtracted) or 0; an
  // i32 result scaled by lhs * rhs holds the sums themselves, and a requantized i8 result.
  for (const int rhs_zp : {5, 0}) {
    CAPTURE(rhs_zp);
    const std::string rq = str_cat("!quant.uniform<i8:f32, 1.250000e-01:", rhs_zp, ">");
    const std::string text = str_cat(R"(
func.func @main(%a: tensor<4x40xi8>, %b: tensor<40x3xi8>) -> (tensor<4x3xi32>, tensor<4x3xi8>) {
  %qa = stablehlo.bitcast_convert %a : (tensor<4x40xi8>) -> tensor<4x40x!quant.uniform<i8:f32, 3.906250e-03:-128>>
  %qb = stablehlo.bitcast_convert %b : (tensor<40x3xi8>) -> tensor<40x3x)", rq, R"(>
  %d = stablehlo.dot_general %qa, %qb, contracting_dims = [1] x [0] : (tensor<4x40x!quant.uniform<i8:f32, 3.906250e-03:-128>>, tensor<40x3x)", rq, R"(>) -> tensor<4x3x!quant.uniform<i32:f32, 4.8828125E-4>>
  %r = stablehlo.uniform_quantize %d : (tensor<4x3x!quant.uniform<i32:f32, 4.8828125E-4>>) -> tensor<4x3x!quant.uniform<i8:f32, 6.250000e-02:-7>>
  %s0 = stablehlo.bitcast_convert %d : (tensor<4x3x!quant.uniform<i32:f32, 4.8828125E-4>>) -> tensor<4x3xi32>
  %s1 = stablehlo.bitcast_convert %r : (tensor<4x3x!quant.uniform<i8:f32, 6.250000e-02:-7>>) -> tensor<4x3xi8>
  return %s0, %s1 : tensor<4x3xi32>, tensor<4x3xi8>
})");
    std::mt19937 rng(7);
    std::vector<std::int8_t> a(160), b(120);
    for (auto& v : a) v = static_cast<std::int8_t>(rng());
    for (auto& v : b) v = static_cast<std::int8_t>(rng());
    const std::vector<Literal> out = run_twice(text, {vec(a, {4, 40}), vec(b, {40, 3})});
    const std::vector<std::int64_t> sums = ints_of(out[0]), re = ints_of(out[1]);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j) {
        std::int64_t acc = 0;
        for (int k = 0; k < 40; ++k)
          acc += (a[static_cast<std::size_t>(i * 40 + k)] + 128) * (b[static_cast<std::size_t>(k * 3 + j)] - rhs_zp);
        CAPTURE(i);
        CAPTURE(j);
        CHECK(sums[static_cast<std::size_t>(i * 3 + j)] == acc);
        CHECK(re[static_cast<std::size_t>(i * 3 + j)] ==
              quantize_one(static_cast<double>(acc) * 4.8828125E-4, 0.0625, -7, -128, 127));
      }
    // Either way the CPU multiplies bytes.
    const Graph g = require_ok(require_ok(stablehlo::parse_module(text)).main());
    auto client = cpu::Client<>::create({.device_count = 1}).value();
    auto exe = client->compile(g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    CHECK(contains(exe->optimized_program_text(), "(8-bit"));
  }
}

TEST_CASE("quantized types: a batched dot_general with zero points that fit no byte multiplies the stored bytes") {
  // lhs [free 5, batch 2, contracting 6] zero point 3, rhs [batch 2, contracting 6, free 3]
  // zero point -7: the result [2, 5, 3] is the stored bytes' products less the zero points'
  // shares.
  const std::string text = R"(
func.func @main(%a: tensor<5x2x6xi8>, %b: tensor<2x6x3xi8>) -> tensor<2x5x3xi32> {
  %qa = stablehlo.bitcast_convert %a : (tensor<5x2x6xi8>) -> tensor<5x2x6x!quant.uniform<i8:f32, 5.000000e-01:3>>
  %qb = stablehlo.bitcast_convert %b : (tensor<2x6x3xi8>) -> tensor<2x6x3x!quant.uniform<i8:f32, 2.500000e-01:-7>>
  %d = stablehlo.dot_general %qa, %qb, batching_dims = [1] x [0], contracting_dims = [2] x [1] : (tensor<5x2x6x!quant.uniform<i8:f32, 5.000000e-01:3>>, tensor<2x6x3x!quant.uniform<i8:f32, 2.500000e-01:-7>>) -> tensor<2x5x3x!quant.uniform<i32:f32, 1.250000e-01>>
  %s = stablehlo.bitcast_convert %d : (tensor<2x5x3x!quant.uniform<i32:f32, 1.250000e-01>>) -> tensor<2x5x3xi32>
  return %s : tensor<2x5x3xi32>
})";
  std::mt19937 rng(5);
  std::vector<std::int8_t> a(60), b(36);
  for (auto& v : a) v = static_cast<std::int8_t>(rng());
  for (auto& v : b) v = static_cast<std::int8_t>(rng());
  a[0] = -128;
  b[0] = 127;
  const std::vector<std::int64_t> got = ints_of(run_twice(text, {vec(a, {5, 2, 6}), vec(b, {2, 6, 3})})[0]);
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j) {
        std::int64_t acc = 0;
        for (int k = 0; k < 6; ++k)
          acc += (a[static_cast<std::size_t>((i * 2 + n) * 6 + k)] - 3) * (b[static_cast<std::size_t>((n * 6 + k) * 3 + j)] + 7);
        CAPTURE(n);
        CAPTURE(i);
        CAPTURE(j);
        CHECK(got[static_cast<std::size_t>((n * 5 + i) * 3 + j)] == acc);
      }
  const Graph g = require_ok(require_ok(stablehlo::parse_module(text)).main());
  auto client = cpu::Client<>::create({.device_count = 1}).value();
  auto exe = client->compile(g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(contains(exe->optimized_program_text(), "(8-bit"));
}

TEST_CASE("quantized types: a layer that quantizes its input, dots it with zero points and requantizes runs on the bytes") {
  // The activations are quantized in the program, so the 8-bit lhs comes out of a fused loop
  // whose 32-bit conversion the zero-point correction's row sums also read: the product must
  // read the loop's bytes (which then have memory of their own), and the requantization runs
  // in the product's blocks. Against the reference interpreter, bit for bit, and against the
  // spec's arithmetic in double.
  const std::string text = R"(
func.func @main(%x: tensor<64x256xf32>, %w: tensor<256x40x!quant.uniform<i8:f32, 4.000000e-03:3>>) -> tensor<64x40xf32> {
  %xq = stablehlo.uniform_quantize %x : (tensor<64x256xf32>) -> tensor<64x256x!quant.uniform<i8:f32, 2.000000e-02:-5>>
  %y = stablehlo.dot_general %xq, %w, contracting_dims = [1] x [0] : (tensor<64x256x!quant.uniform<i8:f32, 2.000000e-02:-5>>, tensor<256x40x!quant.uniform<i8:f32, 4.000000e-03:3>>) -> tensor<64x40x!quant.uniform<i8:f32, 5.000000e-01:7>>
  %r = stablehlo.uniform_dequantize %y : (tensor<64x40x!quant.uniform<i8:f32, 5.000000e-01:7>>) -> tensor<64x40xf32>
  return %r : tensor<64x40xf32>
})";
  std::vector<float> x(64 * 256);
  std::vector<std::int8_t> w(256 * 40);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 2.5f * std::sin(0.37f * static_cast<float>(i));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::int8_t>((i * 29 + 3) % 256 - 128);
  const Literal got = run_twice(text, {vec(x, {64, 256}), vec(w, {256, 40})})[0];
  // uniform_quantize computes in the expressed type, f32; the requantization's scale in f64.
  auto quantize_x = [](float v) {
    return static_cast<std::int64_t>(std::nearbyint(std::clamp(v / 0.02f + -5.0f, -128.0f, 127.0f)));
  };
  int wrong = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 40; ++j) {
      std::int64_t acc = 0;
      for (int k = 0; k < 256; ++k)
        acc += (quantize_x(x[static_cast<std::size_t>(i * 256 + k)]) + 5) *
               (w[static_cast<std::size_t>(k * 40 + j)] - 3);
      const double scale = double(0.02f) * double(0.004f) / double(0.5f);
      const std::int64_t q = quantize_one(static_cast<double>(acc) * scale, 1.0, 7, -128, 127);
      wrong += got.data<float>()[static_cast<std::size_t>(i * 40 + j)] != static_cast<float>(dequantize_one(q, 0.5, 7));
    }
  CHECK(wrong == 0);
  const Graph g = require_ok(require_ok(stablehlo::parse_module(text)).main());
  auto client = cpu::Client<>::create({.device_count = 1}).value();
  auto exe = client->compile(g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(contains(exe->optimized_program_text(), "(8-bit"));
  CHECK(contains(exe->optimized_program_text(), "then in its blocks"));
}

TEST_CASE("quantized types: a convolution with per-channel kernel scales into a per-channel result") {
  // NHWC 1x5x5x3, kernel 3x3x3x2 per output channel (zero points 0), padding 1: the integer
  // sums scaled per channel by lhs * kernel[c] / result[c].
  const std::string text = R"(
func.func @main(%x: tensor<1x5x5x3xi8>, %k: tensor<3x3x3x2xi8>) -> tensor<1x5x5x2xi8> {
  %qx = stablehlo.bitcast_convert %x : (tensor<1x5x5x3xi8>) -> tensor<1x5x5x3x!quant.uniform<i8:f32, 2.500000e-01:3>>
  %qk = stablehlo.bitcast_convert %k : (tensor<3x3x3x2xi8>) -> tensor<3x3x3x2x!quant.uniform<i8:f32:3, {1.250000e-01,6.250000e-02}>>
  %c = stablehlo.convolution(%qx, %qk) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x5x3x!quant.uniform<i8:f32, 2.500000e-01:3>>, tensor<3x3x3x2x!quant.uniform<i8:f32:3, {1.250000e-01,6.250000e-02}>>) -> tensor<1x5x5x2x!quant.uniform<i8:f32:3, {4.000000e+00:-2,2.000000e+00:1}>>
  %s = stablehlo.bitcast_convert %c : (tensor<1x5x5x2x!quant.uniform<i8:f32:3, {4.000000e+00:-2,2.000000e+00:1}>>) -> tensor<1x5x5x2xi8>
  return %s : tensor<1x5x5x2xi8>
})";
  std::mt19937 rng(11);
  std::vector<std::int8_t> x(75), k(54);
  for (auto& v : x) v = static_cast<std::int8_t>(static_cast<int>(rng() % 60) - 30);
  for (auto& v : k) v = static_cast<std::int8_t>(static_cast<int>(rng() % 60) - 30);
  const std::vector<std::int64_t> got = ints_of(run_twice(text, {vec(x, {1, 5, 5, 3}), vec(k, {3, 3, 3, 2})})[0]);
  const double kscale[2] = {0.125, 0.0625}, oscale[2] = {4.0, 2.0};
  const std::int64_t ozp[2] = {-2, 1};
  for (int h = 0; h < 5; ++h)
    for (int w = 0; w < 5; ++w)
      for (int c = 0; c < 2; ++c) {
        std::int64_t acc = 0;
        for (int dh = 0; dh < 3; ++dh)
          for (int dw = 0; dw < 3; ++dw)
            for (int i = 0; i < 3; ++i) {
              const int ih = h + dh - 1, iw = w + dw - 1;
              if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5) continue;  // padding holds the real 0
              acc += (x[static_cast<std::size_t>((ih * 5 + iw) * 3 + i)] - 3) * k[static_cast<std::size_t>(((dh * 3 + dw) * 3 + i) * 2 + c)];
            }
        CAPTURE(h);
        CAPTURE(w);
        CAPTURE(c);
        const double real = static_cast<double>(acc) * 0.25 * kscale[c];
        CHECK(got[static_cast<std::size_t>((h * 5 + w) * 2 + c)] == quantize_one(real, oscale[c], ozp[c], -128, 127));
      }
}

TEST_CASE("quantized types: ops that move elements keep the integers, and a float lhs dots a quantized rhs") {
  const std::string text = R"(
func.func @main(%a: tensor<2x3xi8>, %f: tensor<4x2xf32>) -> (tensor<3x2xi8>, tensor<2x3xi8>, tensor<4x3xf32>) {
  %q = stablehlo.bitcast_convert %a : (tensor<2x3xi8>) -> tensor<2x3x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:0,1.000000e+00:-1}>>
  %t = stablehlo.transpose %q, dims = [1, 0] : (tensor<2x3x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:0,1.000000e+00:-1}>>) -> tensor<3x2x!quant.uniform<i8:f32:0, {5.000000e-01:1,2.500000e-01:0,1.000000e+00:-1}>>
  %m = stablehlo.maximum %q, %q : tensor<2x3x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:0,1.000000e+00:-1}>>
  %d = stablehlo.dot_general %f, %q, contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x3x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:0,1.000000e+00:-1}>>) -> tensor<4x3xf32>
  %s0 = stablehlo.bitcast_convert %t : (tensor<3x2x!quant.uniform<i8:f32:0, {5.000000e-01:1,2.500000e-01:0,1.000000e+00:-1}>>) -> tensor<3x2xi8>
  %s1 = stablehlo.bitcast_convert %m : (tensor<2x3x!quant.uniform<i8:f32:1, {5.000000e-01:1,2.500000e-01:0,1.000000e+00:-1}>>) -> tensor<2x3xi8>
  return %s0, %s1, %d : tensor<3x2xi8>, tensor<2x3xi8>, tensor<4x3xf32>
})";
  const std::vector<std::int8_t> a = {5, -7, 12, 0, 100, -128};
  const std::vector<float> f = {1, 2, -1, 0.5f, 3, -2, 0.25f, 4};
  const std::vector<Literal> out = run_twice(text, {vec(a, {2, 3}), vec(f, {4, 2})});
  CHECK(ints_of(out[0]) == std::vector<std::int64_t>{5, 0, -7, 100, 12, -128});
  CHECK(ints_of(out[1]) == std::vector<std::int64_t>{5, -7, 12, 0, 100, -128});
  const double scale[3] = {0.5, 0.25, 1.0};
  const std::int64_t zp[3] = {1, 0, -1};
  const std::vector<float> d = values_of<float>(out[2]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) {
      double want = 0;
      for (int k = 0; k < 2; ++k)
        want += f[static_cast<std::size_t>(i * 2 + k)] * dequantize_one(a[static_cast<std::size_t>(k * 3 + j)], scale[j], zp[j]);
      CHECK(d[static_cast<std::size_t>(i * 3 + j)] == doctest::Approx(want));
    }
}

TEST_CASE("quantized types: malformed quantized types and ops are refused with the reason") {
  auto program = [](std::string_view type, std::string_view op = "") {
    return str_cat("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %q = stablehlo.uniform_quantize %x : (tensor<2xf32>) -> tensor<2x",
                   type, ">\n", op, "  %d = stablehlo.uniform_dequantize %q : (tensor<2x", type, ">) -> tensor<2xf32>\n  return %d : tensor<2xf32>\n}");
  };
  check_error(parse(program("!quant.uniform<i8:f32, 0.0:1>")), StatusCode::kInvalidArgument, "not positive");
  check_error(parse(program("!quant.uniform<i8:f32, -1.0:1>")), StatusCode::kInvalidArgument, "not positive");
  check_error(parse(program("!quant.uniform<i8:f32, 1.0:200>")), StatusCode::kInvalidArgument, "zero point 200");
  check_error(parse(program("!quant.uniform<i8<-10:10>:f32, 1.0:11>")), StatusCode::kInvalidArgument, "outside its storage range");
  check_error(parse(program("!quant.uniform<i8<10:-10>:f32, 1.0:0>")), StatusCode::kInvalidArgument, "storage range");
  check_error(parse(program("!quant.uniform<i8<-300:10>:f32, 1.0:0>")), StatusCode::kInvalidArgument, "storage range");
  check_error(parse(program("!quant.uniform<f32:f32, 1.0:0>")), StatusCode::kInvalidArgument, "storage type");
  check_error(parse(program("!quant.uniform<i8:i32, 1.0:0>")), StatusCode::kInvalidArgument, "expressed type");
  check_error(parse(program("!quant.uniform<i8:f32:0, {1.0:0}>")), StatusCode::kInvalidArgument, "lists 1 scales");
  check_error(parse(program("!quant.uniform<i8:f32:1, {1.0:0,2.0:0}>")), StatusCode::kInvalidArgument, "does not exist");
  check_error(parse(program("!quant.uniform<i8:f32, {1.0:0,2.0:0}>")), StatusCode::kInvalidArgument, "per-tensor");
  check_error(parse(program("!quant.uniform<i8:f32, 1.0:0")), StatusCode::kInvalidArgument, "'>'");
  check_error(parse(program("!quant.calibrated<f32<-1.0:1.0>>")), StatusCode::kUnimplemented, "!quant.calibrated");
  check_error(parse(program("!quant.uniform<i64:f32, 1.0:0>")), StatusCode::kUnimplemented, "quantized type stored in i64");
  // A dequantize into the wrong type, a quantize of integers, a requantize that moves the axis.
  check_error(parse(R"(func.func @main(%x: tensor<2xi8>) -> tensor<2xf16> {
  %q = stablehlo.bitcast_convert %x : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 1.0:0>>
  %d = stablehlo.uniform_dequantize %q : (tensor<2x!quant.uniform<i8:f32, 1.0:0>>) -> tensor<2xf16>
  return %d : tensor<2xf16>
})"),
              StatusCode::kInvalidArgument, "not the expressed type");
  check_error(parse(R"(func.func @main(%x: tensor<2xi32>) -> tensor<2xi8> {
  %q = stablehlo.uniform_quantize %x : (tensor<2xi32>) -> tensor<2x!quant.uniform<i8:f32, 1.0:0>>
  %s = stablehlo.bitcast_convert %q : (tensor<2x!quant.uniform<i8:f32, 1.0:0>>) -> tensor<2xi8>
  return %s : tensor<2xi8>
})"),
              StatusCode::kInvalidArgument, "must be a float or quantized");
  check_error(parse(R"(func.func @main(%x: tensor<2x2xi8>) -> tensor<2x2xi8> {
  %q = stablehlo.bitcast_convert %x : (tensor<2x2xi8>) -> tensor<2x2x!quant.uniform<i8:f32:0, {1.0:0,2.0:0}>>
  %r = stablehlo.uniform_quantize %q : (tensor<2x2x!quant.uniform<i8:f32:0, {1.0:0,2.0:0}>>) -> tensor<2x2x!quant.uniform<i8:f32:1, {1.0:0,3.0:0}>>
  %s = stablehlo.bitcast_convert %r : (tensor<2x2x!quant.uniform<i8:f32:1, {1.0:0,3.0:0}>>) -> tensor<2x2xi8>
  return %s : tensor<2x2xi8>
})"),
              StatusCode::kUnimplemented, "quantization dimension");
}

TEST_CASE("quantized types: np::quantize and np::dequantize in jit, per tensor and per axis, and their bad parameters") {
  auto client = cpu::Client<cpu::InlineExecutor>::create().value();
  const np::Quantization per_tensor{.storage = DType::kU8, .scales = {0.25}, .zero_points = {10}};
  const np::Quantization per_axis{.storage = DType::kS8, .scales = {0.5, 0.125}, .zero_points = {1, -4}, .axis = 1,
                                  .storage_min = -100, .storage_max = 100};
  auto f = jit(client, [&](np::Tensor x) {
    const np::Tensor a = np::quantize(x, per_tensor), b = np::quantize(x, per_axis);
    return std::make_tuple(a, np::dequantize(a, per_tensor), b, np::dequantize(b, per_axis, DType::kF64));
  });
  const std::vector<float> x = {1.125f, -0.6f, 100.0f, -100.0f, 0.0625f, 2.4f};
  auto [a, da, b, db] = f(vec(x, {3, 2})).value();
  CHECK(a.dtype() == DType::kU8);
  CHECK(b.dtype() == DType::kS8);
  CHECK(db.dtype() == DType::kF64);
  const std::vector<std::int64_t> av = ints_of(a), bv = ints_of(b);
  const std::vector<float> dav = values_of<float>(da);
  const std::vector<double> dbv = values_of<double>(db);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    const std::size_t c = i % 2;
    const std::int64_t qa = quantize_one(x[i], 0.25, 10, 0, 255);
    const std::int64_t qb = quantize_one(x[i], per_axis.scales[c], per_axis.zero_points[c], -100, 100);
    CHECK(av[i] == qa);
    CHECK(bv[i] == qb);
    CHECK(dav[i] == static_cast<float>(dequantize_one(qa, 0.25, 10)));
    CHECK(dbv[i] == dequantize_one(qb, per_axis.scales[c], per_axis.zero_points[c]));
  }
  auto bad = [&](np::Quantization q) {
    auto g = jit(client, [q](np::Tensor t) { return np::quantize(t, q); });
    return g(vec(x, {3, 2})).status();
  };
  check_error(bad({.scales = {0.0}}), StatusCode::kInvalidArgument, "not positive");
  check_error(bad({.zero_points = {300}}), StatusCode::kInvalidArgument, "zero point 300");
  check_error(bad({.scales = {1, 2}, .zero_points = {0, 0}}), StatusCode::kInvalidArgument, "need an axis");
  check_error(bad({.scales = {1, 2, 3}, .zero_points = {0, 0, 0}, .axis = 1}), StatusCode::kInvalidArgument, "one per scale");
  check_error(bad({.storage = DType::kF32}), StatusCode::kInvalidArgument, "not an integer type");
  check_error(bad({.storage_min = 5, .storage_max = 5}), StatusCode::kInvalidArgument, "storage range");
  auto ints = jit(client, [&](np::Tensor t) { return np::quantize(t, per_tensor); });
  check_error(ints(vec(std::vector<std::int32_t>{1, 2}, {2})).status(), StatusCode::kInvalidArgument, "not a float tensor");
  auto wrong = jit(client, [&](np::Tensor t) { return np::dequantize(t, per_tensor); });
  check_error(wrong(vec(std::vector<std::int8_t>{1, 2}, {2})).status(), StatusCode::kInvalidArgument, "not of the storage type");
}

TEST_CASE("stablehlo runner: split-input-file parts, a single function as the entry, check.eq and tolerances") {
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 1}).value();
  const std::string parts = R"(// RUN: any
func.func @first() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = stablehlo.add %a, %a : tensor<2xi32>
  check.expect_eq_const %b, dense<[2, 4]> : tensor<2xi32>
  func.return
}

// -----

func.func @second() {
  %a = stablehlo.constant dense<5.0> : tensor<f64>
  check.expect_almost_eq_const %a, dense<5.1> : tensor<f64> {tolerance = 0.2 : f64}
  func.return
}
// // -----
module {
  func.func @main() -> tensor<i1> {
    %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %b = stablehlo.constant dense<[1.00005, 2.0]> : tensor<2xf32>
    %ok = stablehlo.custom_call @check.eq(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
    return %ok : tensor<i1>
  }
}
)";
  CHECK(stablehlo::split_input_file(parts).size() == 3);
  stablehlo::TestOutcome o = stablehlo::run_test_program(*client, parts);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);
  // The same with a part that fails: its number and its line in the file.
  std::string failing = parts;
  failing.replace(failing.find("dense<[2, 4]>"), 13, "dense<[2, 5]>");
  o = stablehlo::run_test_program(*client, failing);
  CHECK(o.verdict == stablehlo::Verdict::kFail);
  CHECK(contains(o.detail, "part 1 of 3"));
  CHECK(contains(o.detail, "line 5"));
  // check.eq on floats: within 1e-4; its result is whether it holds.
  const std::string far = R"(func.func @main() -> tensor<i1> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[1.001, 2.0]> : tensor<2xf32>
  %ok = stablehlo.custom_call @check.eq(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
  return %ok : tensor<i1>
})";
  o = stablehlo::run_test_program(*client, far);
  CHECK(o.verdict == stablehlo::Verdict::kFail);
  const stablehlo::Module m = require_ok(stablehlo::parse_module(far));
  const std::vector<Literal> held = run_on_cpu(m.functions[0].graph, {});
  CHECK(values_of<bool>(held[0]) == std::vector<bool>{false});
  // Two functions and no @main: nothing to run.
  o = stablehlo::run_test_program(*client, "func.func @a() { func.return }\nfunc.func @b() { func.return }");
  CHECK(o.verdict == stablehlo::Verdict::kFail);
  CHECK(contains(o.detail, "no function @main"));
  // check.eq's type must say i1.
  check_error(stablehlo::parse_module(R"(func.func @main() -> tensor<i32> {
  %a = stablehlo.constant dense<1> : tensor<i32>
  %ok = stablehlo.custom_call @check.eq(%a, %a) : (tensor<i32>, tensor<i32>) -> tensor<i32>
  return %ok : tensor<i32>
})"),
              StatusCode::kInvalidArgument, "check.eq returns one tensor<i1>");
}

TEST_CASE("stablehlo runner: nested tuples, and a part that checks nothing is UNCHECKED, not a pass") {
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 1}).value();
  // A tuple holding a tuple, taken apart again (the spec's tuple and get_tuple_element).
  const std::string nested = R"(func.func @main() {
  %v = stablehlo.constant dense<[1.5, 2.5]> : tensor<2xf32>
  %i = stablehlo.constant dense<7> : tensor<i64>
  %inner = stablehlo.tuple %i : tuple<tensor<i64>>
  %outer = stablehlo.tuple %v, %inner, %v : tuple<tensor<2xf32>, tuple<tensor<i64>>, tensor<2xf32>>
  %a = stablehlo.get_tuple_element %outer[0] : (tuple<tensor<2xf32>, tuple<tensor<i64>>, tensor<2xf32>>) -> tensor<2xf32>
  %t = stablehlo.get_tuple_element %outer[1] : (tuple<tensor<2xf32>, tuple<tensor<i64>>, tensor<2xf32>>) -> tuple<tensor<i64>>
  %b = stablehlo.get_tuple_element %t[0] : (tuple<tensor<i64>>) -> tensor<i64>
  %c = stablehlo.add %b, %b : tensor<i64>
  check.expect_eq_const %a, dense<[1.5, 2.5]> : tensor<2xf32>
  check.expect_eq_const %c, dense<14> : tensor<i64>
  func.return
})";
  stablehlo::TestOutcome o = stablehlo::run_test_program(*client, nested);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);
  auto replaced = [](std::string text, std::string_view from, std::string_view to) {
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  CHECK(stablehlo::run_test_program(*client, replaced(nested, "dense<14>", "dense<15>")).verdict == stablehlo::Verdict::kFail);
  // Taking a tensor for a tuple, or a tuple for a tensor, is an error that says which.
  check_error(stablehlo::parse_module(replaced(nested, "tensor<2xf32>>) -> tensor<2xf32>", "tensor<2xf32>>) -> tuple<tensor<i64>>")),
              StatusCode::kInvalidArgument, "element 0 of %outer is a tensor, not a tuple");
  check_error(stablehlo::parse_module(replaced(nested, "-> tuple<tensor<i64>>\n", "-> tensor<i64>\n")),
              StatusCode::kInvalidArgument, "element 1 of %outer is a tuple, not a tensor");
  // A tuple is no operand of an ordinary op.
  check_error(stablehlo::parse_module(replaced(nested, "stablehlo.add %b, %b", "stablehlo.add %t, %t")),
              StatusCode::kUnimplemented, "the tuple %t as an operand");

  // A program without checks runs (an error in it still fails) but proves nothing.
  const std::string unchecked = R"(func.func @main() {
  %v = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %t = stablehlo.tuple %v : tuple<tensor<2xf32>>
  func.return
})";
  o = stablehlo::run_test_program(*client, unchecked);
  CHECK(o.verdict == stablehlo::Verdict::kUnchecked);
  CHECK(contains(o.detail, "checks nothing"));
  CHECK(stablehlo::verdict_name(o.verdict) == "UNCHECKED");
  // In a file of parts: a skip outranks it, and it outranks a pass.
  const std::string skipped = "func.func @main() {\n  %t = \"stablehlo.rng\"() : () -> tensor<2xf32>\n  func.return\n}";
  o = stablehlo::run_test_program(*client, str_cat(nested, "\n// -----\n", unchecked));
  CHECK(o.verdict == stablehlo::Verdict::kUnchecked);
  CHECK(contains(o.detail, "part 2 of 2"));
  o = stablehlo::run_test_program(*client, str_cat(unchecked, "\n// -----\n", skipped, "\n// -----\n", nested));
  CHECK(o.verdict == stablehlo::Verdict::kSkip);
  CHECK(contains(o.detail, "part 2 of 3"));
}

}  // namespace quantized_test
