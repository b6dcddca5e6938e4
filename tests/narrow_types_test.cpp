// The narrow types: s2/s4/u2/u4 and the f8/f6/f4 floats. Oracles written here, apart from
// the code under test: a closed-form decoder per format family, hand-derived rounding and
// overflow results, and hand-computed program outputs checked on the CPU client and the
// reference interpreter.

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/ir/serialize.hpp"
#include "pjrt_lite/stablehlo/stablehlo.hpp"

namespace narrow_types_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// A format as the papers and ml_dtypes' comments describe it, written independently of
/// narrow_float.hpp: field widths, bias, and which encodings are special.
struct Oracle {
  DType dtype;
  int exp_bits, man_bits, bias;
  bool has_sign, ieee_specials, fn_nan, fnuz, e8m0;
};

constexpr Oracle kFormats[] = {
    {DType::kF8E3M4, 3, 4, 3, true, true, false, false, false},
    {DType::kF8E4M3, 4, 3, 7, true, true, false, false, false},
    {DType::kF8E4M3FN, 4, 3, 7, true, false, true, false, false},
    {DType::kF8E4M3FNUZ, 4, 3, 8, true, false, false, true, false},
    {DType::kF8E4M3B11FNUZ, 4, 3, 11, true, false, false, true, false},
    {DType::kF8E5M2, 5, 2, 15, true, true, false, false, false},
    {DType::kF8E5M2FNUZ, 5, 2, 16, true, false, false, true, false},
    {DType::kF8E8M0FNU, 8, 0, 127, false, false, false, false, true},
    {DType::kF6E2M3FN, 2, 3, 1, true, false, false, false, false},
    {DType::kF6E3M2FN, 3, 2, 3, true, false, false, false, false},
    {DType::kF4E2M1FN, 2, 1, 1, true, false, false, false, false},
};

/// The value of pattern `b` in format `o`: (-1)^s * 2^(e - bias) * 1.m, or 2^(1 - bias) * 0.m
/// for e == 0, with the format's special encodings.
double oracle_value(const Oracle& o, unsigned b) {
  const unsigned total = (o.has_sign ? 1u : 0u) + static_cast<unsigned>(o.exp_bits + o.man_bits);
  const bool s = o.has_sign && ((b >> (total - 1)) & 1u);
  const unsigned e = (b >> o.man_bits) & ((1u << o.exp_bits) - 1);
  const unsigned m = b & ((1u << o.man_bits) - 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (o.e8m0) return b == 255 ? nan : std::pow(2.0, static_cast<int>(b) - 127);
  if (o.fnuz && b == 0x80) return nan;
  const unsigned e_max = (1u << o.exp_bits) - 1, m_max = (1u << o.man_bits) - 1;
  if (o.ieee_specials && e == e_max) return m == 0 ? (s ? -INFINITY : INFINITY) : nan;
  if (o.fn_nan && e == e_max && m == m_max) return nan;
  const double frac = static_cast<double>(m) / std::pow(2.0, o.man_bits);
  const double mag = e == 0 ? std::pow(2.0, 1 - o.bias) * frac : std::pow(2.0, static_cast<int>(e) - o.bias) * (1 + frac);
  return s ? -mag : mag;
}

int total_bits(const Oracle& o) { return (o.has_sign ? 1 : 0) + o.exp_bits + o.man_bits; }

/// A literal of `t` holding the given stored bytes.
Literal from_bits(DType t, const std::vector<std::uint8_t>& bits) {
  const Shape s(t, {static_cast<std::int64_t>(bits.size())});
  return require_ok(Literal::from_bytes(s, std::as_bytes(std::span<const std::uint8_t>(bits))));
}

std::vector<std::uint8_t> bits_of(const Literal& l) {
  std::span<const std::uint8_t> b = l.narrow_bits();
  return {b.begin(), b.end()};
}

/// The stored bytes of `values` converted from f64 to `t` (one rounding).
std::vector<std::uint8_t> encode(DType t, std::vector<double> values) {
  const Literal wide = require_ok(Literal::from_span<double>(values, {static_cast<std::int64_t>(values.size())}));
  return bits_of(require_ok(wide.convert(t)));
}

std::vector<float> decode(const Literal& l) { return values_of<float>(require_ok(l.convert(DType::kF32))); }

/// @main of `text` on the CPU client and on the reference interpreter; both must agree
/// bit for bit, and the CPU's outputs are returned.
std::vector<Literal> run_both(std::string_view text, const std::vector<Literal>& args) {
  const Graph g = require_ok(require_ok(stablehlo::parse_module(text)).main());
  std::vector<Literal> ref = require_ok(reference::evaluate(g, args));
  std::vector<Literal> cpu = run_on_cpu(g, args);
  REQUIRE(cpu.size() == ref.size());
  for (std::size_t k = 0; k < cpu.size(); ++k) CHECK_MESSAGE(cpu[k] == ref[k], "output ", k, ": cpu ", cpu[k], " reference ", ref[k]);
  return cpu;
}

}  // namespace

TEST_CASE("narrow types: every pattern of every float format decodes as the closed form says") {
  for (const Oracle& o : kFormats) {
    CAPTURE(dtype_name(o.dtype));
    CHECK(bit_width(o.dtype) == total_bits(o));
    CHECK(byte_size(o.dtype) == 1);
    std::vector<std::uint8_t> all;
    for (unsigned b = 0; b < (1u << total_bits(o)); ++b) all.push_back(static_cast<std::uint8_t>(b));
    const std::vector<float> got = decode(from_bits(o.dtype, all));
    for (unsigned b = 0; b < all.size(); ++b) {
      CAPTURE(b);
      const double want = oracle_value(o, b);
      if (std::isnan(want)) CHECK(std::isnan(got[b]));
      else CHECK(static_cast<double>(got[b]) == want);
      if (want == 0) CHECK(std::signbit(got[b]) == std::signbit(want));
    }
  }
}

TEST_CASE("narrow types: encoding a decoded pattern gives the pattern back (every non-NaN)") {
  for (const Oracle& o : kFormats) {
    CAPTURE(dtype_name(o.dtype));
    std::vector<std::uint8_t> all;
    for (unsigned b = 0; b < (1u << total_bits(o)); ++b)
      if (!std::isnan(oracle_value(o, b))) all.push_back(static_cast<std::uint8_t>(b));
    const Literal f32 = require_ok(from_bits(o.dtype, all).convert(DType::kF32));
    CHECK(bits_of(require_ok(f32.convert(o.dtype))) == all);
    const Literal f64 = require_ok(from_bits(o.dtype, all).convert(DType::kF64));
    CHECK(bits_of(require_ok(f64.convert(o.dtype))) == all);
  }
}

TEST_CASE("narrow types: midpoints round to even, and overflow and specials follow each format") {
  using T = DType;
  const double inf = INFINITY, nan = NAN;
  // f8E4M3FN: 1 = 0x38, 1.125 = 0x39, 1.25 = 0x3A; 448 = 0x7E is the largest, 480 would be
  // 0x7F (NaN): 464 is the midpoint and rounds to the even 448; beyond is NaN.
  CHECK(encode(T::kF8E4M3FN, {1.0625, 1.1875, 448, 464, 465, 1e6, -1e6, inf, -0.0, nan}) ==
        std::vector<std::uint8_t>{0x38, 0x3A, 0x7E, 0x7E, 0x7F, 0x7F, 0xFF, 0x7F, 0x80, 0x7F});
  // From f64 directly: just above a midpoint rounds up, where going through f32 (which
  // drops the 2^-40) would land on the midpoint and round to even.
  CHECK(encode(T::kF8E4M3FN, {1.0625 + std::ldexp(1.0, -40)}) == std::vector<std::uint8_t>{0x39});
  // f8E5M2: 57344 = 0x7B (odd mantissa), so its midpoint with 65536 rounds up, to inf 0x7C.
  CHECK(encode(T::kF8E5M2, {57344, 61439, 61440, -inf, nan}) ==
        std::vector<std::uint8_t>{0x7B, 0x7B, 0x7C, 0xFC, 0x7E});
  // f8E4M3 (IEEE-like, bias 7): 240 = 0x77 is the largest; 248 ties up to inf 0x78.
  CHECK(encode(T::kF8E4M3, {240, 247, 248}) == std::vector<std::uint8_t>{0x77, 0x77, 0x78});
  // f8E3M4: 15.5 = 0x6F the largest, inf 0x70.
  CHECK(encode(T::kF8E3M4, {15.5, 16, 0.25}) == std::vector<std::uint8_t>{0x6F, 0x70, 0x10});
  // FNUZ: no -0, one NaN 0x80 which is also what overflow and infinities give.
  CHECK(encode(T::kF8E4M3FNUZ, {-0.0, 240, 1e6, -1e6, -inf, nan, -std::ldexp(1.0, -12)}) ==
        std::vector<std::uint8_t>{0x00, 0x7F, 0x80, 0x80, 0x80, 0x80, 0x00});
  CHECK(encode(T::kF8E4M3B11FNUZ, {30, 1, std::ldexp(1.0, -13)}) == std::vector<std::uint8_t>{0x7F, 0x58, 0x01});
  CHECK(encode(T::kF8E5M2FNUZ, {57344, 1}) == std::vector<std::uint8_t>{0x7F, 0x40});
  // E8M0: powers of two only; a tie rounds up (the implicit one is the odd last bit); no
  // zero, no negatives: both NaN 0xFF; underflow gives the smallest, 2^-127.
  CHECK(encode(T::kF8E8M0FNU, {1, 1.5, 3, 0, -1, std::ldexp(1.0, -127), std::ldexp(1.0, -130), std::ldexp(1.0, 127), 1e39}) ==
        std::vector<std::uint8_t>{0x7F, 0x80, 0x81, 0xFF, 0xFF, 0x00, 0x00, 0xFE, 0xFF});
  // f4E2M1FN: {0, 0.5, 1, 1.5, 2, 3, 4, 6}; 5 ties to the even 4; 7 rounds past 6 and
  // saturates, as do infinities; NaN has no encoding (ml_dtypes writes the sign-only pattern).
  CHECK(encode(T::kF4E2M1FN, {5, 7, 100, -100, inf, 0.25, 0.75, nan}) ==
        std::vector<std::uint8_t>{0x6, 0x7, 0x7, 0xF, 0x7, 0x0, 0x2, 0x8});
  // f6E2M3FN: 7.5 largest; 0.0625 is half the smallest subnormal and ties to 0;
  // 0.1875 ties to the even 0.25.
  CHECK(encode(T::kF6E2M3FN, {7.5, 8, 0.0625, 0.1875, -1}) == std::vector<std::uint8_t>{0x1F, 0x1F, 0x00, 0x02, 0x28});
  // f6E3M2FN: 28 largest (odd mantissa): the midpoint 30 rounds away and saturates.
  CHECK(encode(T::kF6E3M2FN, {28, 30, 0.0625}) == std::vector<std::uint8_t>{0x1F, 0x1F, 0x01});
}

TEST_CASE("narrow types: integers wrap in their width, floats saturate into it") {
  const Literal ints = Literal::vector<std::int32_t>({7, 8, -9, 15, 16, -8, 2, -3});
  CHECK(values_of<std::int32_t>(require_ok(require_ok(ints.convert(DType::kS4)).convert(DType::kS32))) ==
        std::vector<std::int32_t>{7, -8, 7, -1, 0, -8, 2, -3});
  CHECK(values_of<std::int32_t>(require_ok(require_ok(ints.convert(DType::kU4)).convert(DType::kS32))) ==
        std::vector<std::int32_t>{7, 8, 7, 15, 0, 8, 2, 13});
  CHECK(values_of<std::int32_t>(require_ok(require_ok(ints.convert(DType::kS2)).convert(DType::kS32))) ==
        std::vector<std::int32_t>{-1, 0, -1, -1, 0, 0, -2, 1});
  CHECK(values_of<std::int32_t>(require_ok(require_ok(ints.convert(DType::kU2)).convert(DType::kS32))) ==
        std::vector<std::int32_t>{3, 0, 3, 3, 0, 0, 2, 1});
  // s4 is stored sign-extended: -1 is the byte 0xFF, as ml_dtypes stores int4.
  CHECK(bits_of(require_ok(Literal::vector<std::int32_t>({-1, 7}).convert(DType::kS4))) == std::vector<std::uint8_t>{0xFF, 0x07});
  const Literal floats = Literal::vector<float>({7.9f, 100.0f, -100.0f, NAN, -2.5f});
  CHECK(values_of<std::int32_t>(require_ok(require_ok(floats.convert(DType::kS4)).convert(DType::kS32))) ==
        std::vector<std::int32_t>{7, 7, -8, 0, -2});
  CHECK(values_of<std::int32_t>(require_ok(require_ok(floats.convert(DType::kU2)).convert(DType::kS32))) ==
        std::vector<std::int32_t>{3, 3, 0, 0, 0});
  // Between narrow types: s4 -> f4E2M1FN -> u4.
  const Literal s4 = require_ok(Literal::vector<std::int32_t>({-3, 5, 7}).convert(DType::kS4));
  CHECK(decode(require_ok(s4.convert(DType::kF4E2M1FN))) == std::vector<float>{-3, 4, 6});
  CHECK(require_ok(s4.convert(DType::kF8E4M3FN)).to_string() == "f8e4m3fn[3] {-3, 5, 7}");
  CHECK(s4.to_string() == "s4[3] {-3, 5, 7}");
}

TEST_CASE("narrow types: f8E4M3FN add, multiply, compare, convert and dot on the CPU and the reference") {
  constexpr std::string_view text = R"(
func.func @main(%a: tensor<4xf8E4M3FN>, %b: tensor<4xf8E4M3FN>) -> (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>, tensor<4xi1>, tensor<4xf32>, tensor<f8E4M3FN>) {
  %0 = stablehlo.add %a, %b : tensor<4xf8E4M3FN>
  %1 = stablehlo.multiply %a, %b : tensor<4xf8E4M3FN>
  %2 = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) -> tensor<4xi1>
  %3 = stablehlo.convert %0 : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  %4 = stablehlo.dot_general %b, %b, contracting_dims = [0] x [0] : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) -> tensor<f8E4M3FN>
  return %0, %1, %2, %3, %4 : tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>, tensor<4xi1>, tensor<4xf32>, tensor<f8E4M3FN>
}
)";
  const Literal a = require_ok(Literal::vector<float>({1, 1.125f, 448, -2}).convert(DType::kF8E4M3FN));
  const Literal b = require_ok(Literal::vector<float>({0.0625f, 1, 8, 3}).convert(DType::kF8E4M3FN));
  const std::vector<Literal> out = run_both(text, {a, b});
  // 1 + 1/16 and 1.125 + 1 are midpoints that round to even; 456 rounds down to 448.
  CHECK(bits_of(out[0]) == std::vector<std::uint8_t>{0x38, 0x40, 0x7E, 0x38});
  // 0.0625 = 0x18, 1.125, 448 * 8 overflows to NaN, -6 = 0xCC.
  CHECK(bits_of(out[1]) == std::vector<std::uint8_t>{0x18, 0x39, 0x7F, 0xCC});
  CHECK(values_of<bool>(out[2]) == std::vector<bool>{true, true, true, false});
  const std::vector<float> sum = values_of<float>(out[3]);
  CHECK(sum[0] == 1.0f);
  CHECK(sum[1] == 2.0f);
  CHECK(sum[2] == 448.0f);
  CHECK(sum[3] == 1.0f);
  // 1/256 + 1 + 64 + 9 in f32, rounded once: 72 (the f8 step there is 8) = 0x69.
  CHECK(bits_of(out[4]) == std::vector<std::uint8_t>{0x69});
}

TEST_CASE("narrow types: i4 and ui4 arithmetic wraps, bit ops see 4 bits, on the CPU and the reference") {
  constexpr std::string_view text = R"(
func.func @main(%a: tensor<4xi4>, %b: tensor<4xi4>) -> (tensor<4xi4>, tensor<4xi4>, tensor<4xi1>, tensor<4xi32>, tensor<i4>, tensor<4xi4>, tensor<4xi4>, tensor<4xi4>, tensor<4xui4>) {
  %0 = stablehlo.add %a, %b : tensor<4xi4>
  %1 = stablehlo.multiply %a, %b : tensor<4xi4>
  %2 = stablehlo.compare  LT, %a, %b,  SIGNED : (tensor<4xi4>, tensor<4xi4>) -> tensor<4xi1>
  %3 = stablehlo.convert %a : (tensor<4xi4>) -> tensor<4xi32>
  %4 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<4xi4>, tensor<4xi4>) -> tensor<i4>
  %c = stablehlo.constant dense<1> : tensor<4xi4>
  %5 = stablehlo.shift_right_logical %a, %c : tensor<4xi4>
  %6 = stablehlo.popcnt %a : tensor<4xi4>
  %7 = stablehlo.count_leading_zeros %a : tensor<4xi4>
  %u = stablehlo.convert %a : (tensor<4xi4>) -> tensor<4xui4>
  %cu = stablehlo.constant dense<3> : tensor<4xui4>
  %8 = stablehlo.subtract %u, %cu : tensor<4xui4>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4xi4>, tensor<4xi4>, tensor<4xi1>, tensor<4xi32>, tensor<i4>, tensor<4xi4>, tensor<4xi4>, tensor<4xi4>, tensor<4xui4>
}
)";
  const Literal a = require_ok(Literal::vector<std::int32_t>({7, -8, 3, -1}).convert(DType::kS4));
  const Literal b = require_ok(Literal::vector<std::int32_t>({1, -1, 5, -1}).convert(DType::kS4));
  const std::vector<Literal> out = run_both(text, {a, b});
  auto ints = [](const Literal& l) { return values_of<std::int32_t>(require_ok(l.convert(DType::kS32))); };
  CHECK(ints(out[0]) == std::vector<std::int32_t>{-8, 7, -8, -2});  // 8, -9, 8 wrap
  CHECK(ints(out[1]) == std::vector<std::int32_t>{7, -8, -1, 1});   // 8, 15 wrap
  CHECK(values_of<bool>(out[2]) == std::vector<bool>{false, true, true, false});
  CHECK(values_of<std::int32_t>(out[3]) == std::vector<std::int32_t>{7, -8, 3, -1});
  CHECK(ints(out[4]) == std::vector<std::int32_t>{-1});  // 7 + 8 + 15 + 1 = 31 = -1 mod 16
  // 0111 >> 1, 1000 >> 1, 0011 >> 1, 1111 >> 1 with zeros shifted in.
  CHECK(ints(out[5]) == std::vector<std::int32_t>{3, 4, 1, 7});
  CHECK(ints(out[6]) == std::vector<std::int32_t>{3, 1, 2, 4});
  CHECK(ints(out[7]) == std::vector<std::int32_t>{1, 0, 2, 0});
  CHECK(ints(out[8]) == std::vector<std::int32_t>{4, 5, 0, 12});  // 7-3, 8-3, 3-3, 15-3
}

TEST_CASE("narrow types: f4, f6 and E8M0 arithmetic on the CPU and the reference") {
  constexpr std::string_view text = R"(
func.func @main(%a: tensor<4xf4E2M1FN>, %b: tensor<4xf4E2M1FN>, %c: tensor<2xf6E3M2FN>, %d: tensor<2xf8E8M0FNU>) -> (tensor<4xf4E2M1FN>, tensor<2xf6E3M2FN>, tensor<2xf8E8M0FNU>) {
  %0 = stablehlo.add %a, %b : tensor<4xf4E2M1FN>
  %1 = stablehlo.multiply %c, %c : tensor<2xf6E3M2FN>
  %2 = stablehlo.multiply %d, %d : tensor<2xf8E8M0FNU>
  return %0, %1, %2 : tensor<4xf4E2M1FN>, tensor<2xf6E3M2FN>, tensor<2xf8E8M0FNU>
}
)";
  const Literal a = require_ok(Literal::vector<float>({1, 4, 6, -0.5f}).convert(DType::kF4E2M1FN));
  const Literal b = require_ok(Literal::vector<float>({0.5f, 1, 6, 0.5f}).convert(DType::kF4E2M1FN));
  const Literal c = require_ok(Literal::vector<float>({3, 6}).convert(DType::kF6E3M2FN));
  const Literal d = require_ok(Literal::vector<float>({2, 0.5f}).convert(DType::kF8E8M0FNU));
  const std::vector<Literal> out = run_both(text, {a, b, c, d});
  // 1.5; 5 ties to the even 4; 12 saturates to 6; -0.5 + 0.5 = +0.
  CHECK(bits_of(out[0]) == std::vector<std::uint8_t>{0x3, 0x6, 0x7, 0x0});
  CHECK(decode(out[1]) == std::vector<float>{8, 28});  // 36 saturates at 28
  CHECK(decode(out[2]) == std::vector<float>{4, 0.25f});
}

TEST_CASE("narrow types: bitcast_convert splits and joins bits little-end first") {
  constexpr std::string_view text = R"(
func.func @main(%a: tensor<2xi8>, %b: tensor<3xf8E4M3FN>, %c: tensor<2xi4>) -> (tensor<2x2xi4>, tensor<3xui8>, tensor<2xf4E2M1FN>, tensor<i8>, tensor<2x4xui2>) {
  %0 = stablehlo.bitcast_convert %a : (tensor<2xi8>) -> tensor<2x2xi4>
  %1 = stablehlo.bitcast_convert %b : (tensor<3xf8E4M3FN>) -> tensor<3xui8>
  %2 = stablehlo.bitcast_convert %c : (tensor<2xi4>) -> tensor<2xf4E2M1FN>
  %3 = stablehlo.bitcast_convert %c : (tensor<2xi4>) -> tensor<i8>
  %4 = stablehlo.bitcast_convert %a : (tensor<2xi8>) -> tensor<2x4xui2>
  return %0, %1, %2, %3, %4 : tensor<2x2xi4>, tensor<3xui8>, tensor<2xf4E2M1FN>, tensor<i8>, tensor<2x4xui2>
}
)";
  const Literal a = Literal::vector<std::int8_t>({0x7A, -2});  // 0111'1010, 1111'1110
  const Literal b = require_ok(Literal::vector<float>({1, -2, 448}).convert(DType::kF8E4M3FN));
  const Literal c = require_ok(Literal::vector<std::int32_t>({-6, 7}).convert(DType::kS4));
  const std::vector<Literal> out = run_both(text, {a, b, c});
  auto ints = [](const Literal& l) { return values_of<std::int32_t>(require_ok(l.convert(DType::kS32))); };
  CHECK(ints(out[0]) == std::vector<std::int32_t>{-6, 7, -2, -1});
  CHECK(values_of<std::uint8_t>(out[1]) == std::vector<std::uint8_t>{0x38, 0xC0, 0x7E});
  CHECK(bits_of(out[2]) == std::vector<std::uint8_t>{0xA, 0x7});  // -1 and 6 in f4E2M1FN
  CHECK(values_of<std::int8_t>(out[3]) == std::vector<std::int8_t>{0x7A});
  CHECK(ints(out[4]) == std::vector<std::int32_t>{2, 2, 3, 1, 2, 3, 3, 3});
  // Widths that do not divide each other are refused.
  const auto bad = stablehlo::parse_module(R"(
func.func @main(%a: tensor<2xi8>) -> tensor<2xf6E2M3FN> {
  %0 = stablehlo.bitcast_convert %a : (tensor<2xi8>) -> tensor<2xf6E2M3FN>
  return %0 : tensor<2xf6E2M3FN>
}
)");
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.status().message(), "neither width divides"));
}

TEST_CASE("narrow types: bitcast_convert of i1 takes one bit per element, the lowest first") {
  constexpr std::string_view text = R"(
func.func @main(%a: tensor<2x8xi1>, %b: tensor<i16>, %c: tensor<4xi1>, %d: tensor<ui4>) -> (tensor<2xui8>, tensor<16xi1>, tensor<i4>, tensor<4xi1>, tensor<3xi1>) {
  %0 = stablehlo.bitcast_convert %a : (tensor<2x8xi1>) -> tensor<2xui8>
  %1 = stablehlo.bitcast_convert %b : (tensor<i16>) -> tensor<16xi1>
  %2 = stablehlo.bitcast_convert %c : (tensor<4xi1>) -> tensor<i4>
  %3 = stablehlo.bitcast_convert %d : (tensor<ui4>) -> tensor<4xi1>
  %4 = stablehlo.bitcast_convert %c : (tensor<4xi1>) -> tensor<4xi1>
  %5 = stablehlo.slice %4 [0:3] : (tensor<4xi1>) -> tensor<3xi1>
  return %0, %1, %2, %3, %5 : tensor<2xui8>, tensor<16xi1>, tensor<i4>, tensor<4xi1>, tensor<3xi1>
}
)";
  // Row 0: bits 1, 3, 7 -> 0x8A; row 1: every bit -> 0xFF.
  const std::array<bool, 16> a_bits = {false, true, false, true, false, false, false, true,
                                       true,  true, true,  true, true,  true,  true,  true};
  const Literal a = require_ok(Literal::from_span<bool>(a_bits, {2, 8}));
  const Literal b = Literal::scalar<std::int16_t>(static_cast<std::int16_t>(0x8001));
  const Literal c = Literal::vector<bool>({false, true, true, true});  // 0b1110 = -2 in i4
  const Literal d = require_ok(Literal::scalar<std::uint32_t>(9).convert(DType::kU4));  // 0b1001
  const std::vector<Literal> out = run_both(text, {a, b, c, d});
  CHECK(values_of<std::uint8_t>(out[0]) == std::vector<std::uint8_t>{0x8A, 0xFF});
  std::vector<bool> bits(16, false);
  bits[0] = bits[15] = true;
  CHECK(values_of<bool>(out[1]) == bits);
  CHECK(values_of<std::int32_t>(require_ok(out[2].convert(DType::kS32))) == std::vector<std::int32_t>{-2});
  CHECK(values_of<bool>(out[3]) == std::vector<bool>{true, false, false, true});
  CHECK(values_of<bool>(out[4]) == std::vector<bool>{false, true, true});
}

namespace {

__extension__ using Wide = __int128;

/// The high half of the w-bit product of a and b (their values, signed or not), the oracle of
/// chlo.mulhi: the exact product in 128 bits, shifted down by w.
std::int64_t mulhi_oracle(std::int64_t a, std::int64_t b, int w, bool is_signed) {
  if (!is_signed && w == 64) {
    __extension__ using UWide = unsigned __int128;
    const UWide p = static_cast<UWide>(static_cast<std::uint64_t>(a)) * static_cast<std::uint64_t>(b);
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(p >> 64));
  }
  const Wide p = static_cast<Wide>(a) * static_cast<Wide>(b);
  return static_cast<std::int64_t>(p >> w);  // an arithmetic shift: the high half's value
}

}  // namespace

TEST_CASE("narrow types: chlo.mulhi gives the high half of the full product at every integer width") {
  const DType types[] = {DType::kS2, DType::kS4, DType::kS8, DType::kS16, DType::kS32, DType::kS64,
                         DType::kU2, DType::kU4, DType::kU8, DType::kU16, DType::kU32, DType::kU64};
  std::mt19937_64 rng(7);
  for (DType t : types) {
    CAPTURE(dtype_name(t));
    const int w = bit_width(t);
    const bool is_signed = is_signed_integral(t);
    // The extremes and their neighbours, then random values, as int64 values of t.
    const std::int64_t lo = is_signed ? (w == 64 ? std::numeric_limits<std::int64_t>::min() : -(std::int64_t{1} << (w - 1))) : 0;
    const std::int64_t hi = is_signed ? (w == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t{1} << (w - 1)) - 1)
                                      : (w == 64 ? -1 : (std::int64_t{1} << w) - 1);  // u64's max as its bits
    std::vector<std::int64_t> a = {lo, lo, hi, hi, 0, 1, -1, lo + 1, hi, hi - 1};
    std::vector<std::int64_t> b = {lo, hi, hi, lo, hi, hi, lo, -1, 1, hi};
    for (int k = 0; k < 22; ++k) {
      std::uint64_t x = rng(), y = rng();
      if (w < 64) x %= std::uint64_t{1} << w, y %= std::uint64_t{1} << w;
      auto value = [&](std::uint64_t bits) {
        return is_signed && w < 64 && bits >= (std::uint64_t{1} << (w - 1)) ? static_cast<std::int64_t>(bits) - (std::int64_t{1} << w)
                                                                              : static_cast<std::int64_t>(bits);
      };
      a.push_back(value(x));
      b.push_back(value(y));
    }
    if (!is_signed)  // -1 above stands for the top value; for unsigned types take its bits
      for (auto* v : {&a, &b})
        for (std::int64_t& e : *v)
          if (e < 0 && w < 64) e += std::int64_t{1} << w;
    const DType wide = is_signed ? DType::kS64 : DType::kU64;
    auto literal = [&](const std::vector<std::int64_t>& v) {
      Literal l(Shape(wide, {static_cast<std::int64_t>(v.size())}));
      std::memcpy(l.untyped_data(), v.data(), l.size_bytes());
      return require_ok(l.convert(t));
    };
    const std::string type = str_cat("tensor<", a.size(), "x", stablehlo::element_type_name(t), ">");
    const std::string text = str_cat("func.func @main(%a: ", type, ", %b: ", type, ") -> ", type, " {\n",
                                     "  %0 = \"chlo.mulhi\"(%a, %b) : (", type, ", ", type, ") -> ", type, "\n",
                                     "  return %0 : ", type, "\n}\n");
    const std::vector<Literal> out = run_both(text, {literal(a), literal(b)});
    const Literal got = require_ok(out[0].convert(wide));
    for (std::size_t k = 0; k < a.size(); ++k) {
      CAPTURE(a[k]);
      CAPTURE(b[k]);
      std::int64_t want = mulhi_oracle(a[k], b[k], w, is_signed);
      if (!is_signed && w < 64) want &= (std::int64_t{1} << w) - 1;
      std::int64_t have = 0;
      std::memcpy(&have, static_cast<const std::byte*>(got.untyped_data()) + k * 8, 8);
      CHECK(have == want);
    }
  }
  // The spec's kind of example: 64 * 4 = 256 in i8 has high byte 1; -64 * 4 = -256 has -1.
  const std::vector<Literal> out = run_both(R"(
func.func @main(%a: tensor<2xi8>, %b: tensor<2xi8>) -> tensor<2xi8> {
  %0 = chlo.mulhi %a, %b : tensor<2xi8>, tensor<2xi8> -> tensor<2xi8>
  return %0 : tensor<2xi8>
}
)", {Literal::vector<std::int8_t>({64, -64}), Literal::vector<std::int8_t>({4, 4})});
  CHECK(values_of<std::int8_t>(out[0]) == std::vector<std::int8_t>{1, -1});
  // Floats and mixed types are refused.
  const auto floats = stablehlo::parse_module(R"(
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "chlo.mulhi"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)");
  REQUIRE_FALSE(floats.ok());
  CHECK(contains(floats.status().message(), "chlo.mulhi takes integers, not f32"));
}

TEST_CASE("narrow types: dense literals parse in decimal and hex and print back the same") {
  constexpr std::string_view text = R"(
func.func @main() -> (tensor<4xf8E4M3FN>, tensor<2xi4>, tensor<3xui2>, tensor<2xf8E5M2>, tensor<70xi4>, tensor<f6E2M3FN>) {
  %0 = stablehlo.constant dense<[1.0, 0.5, 448.0, -2.0]> : tensor<4xf8E4M3FN>
  %1 = stablehlo.constant dense<"0x0F07"> : tensor<2xi4>
  %2 = stablehlo.constant dense<[0, 3, 2]> : tensor<3xui2>
  %3 = stablehlo.constant dense<[0x7C, 0xFF]> : tensor<2xf8E5M2>
  %4 = stablehlo.iota dim = 0 : tensor<70xi4>
  %5 = stablehlo.constant dense<-7.5> : tensor<f6E2M3FN>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf8E4M3FN>, tensor<2xi4>, tensor<3xui2>, tensor<2xf8E5M2>, tensor<70xi4>, tensor<f6E2M3FN>
}
)";
  const Graph g = require_ok(require_ok(stablehlo::parse_module(text)).main());
  const std::vector<Literal> out = run_both(text, {});
  CHECK(bits_of(out[0]) == std::vector<std::uint8_t>{0x38, 0x30, 0x7E, 0xC0});
  CHECK(bits_of(out[1]) == std::vector<std::uint8_t>{0xFF, 0x07});  // 0x0F is -1 in i4
  CHECK(bits_of(out[2]) == std::vector<std::uint8_t>{0, 3, 2});
  CHECK(bits_of(out[3]) == std::vector<std::uint8_t>{0x7C, 0xFF});
  const std::vector<std::int32_t> iota = values_of<std::int32_t>(require_ok(out[4].convert(DType::kS32)));
  CHECK(iota[9] == -7);  // 9 wraps
  CHECK(bits_of(out[5]) == std::vector<std::uint8_t>{0x3F});
  // Printed and parsed again: the same graph, and a large constant goes through hex.
  const std::string printed = to_stablehlo(g);
  CHECK(contains(printed, "tensor<4xf8E4M3FN>"));
  CHECK(contains(printed, "0x7C"));
  const Graph again = require_ok(require_ok(stablehlo::parse_module(printed)).main());
  CHECK(again == g);
  GraphBuilder bld;
  std::vector<std::int32_t> many(100);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<std::int32_t>(i % 16) - 8;
  const Literal big = require_ok(require_ok(Literal::from_span<std::int32_t>(many, {100})).convert(DType::kS4));
  const Graph bg = build_ok(bld, {bld.constant(big)});
  const std::string big_text = to_stablehlo(bg);
  CHECK(contains(big_text, "dense<\"0x08090A0B0C0D0E0F0001"));  // low bits only, as MLIR stores them
  CHECK(require_ok(require_ok(stablehlo::parse_module(big_text)).main()) == bg);
  // The binary form keeps them too.
  CHECK(require_ok(deserialize_graph(serialize(bg))) == bg);
}

TEST_CASE("narrow types: bad dense values and unknown type names are refused with a clear status") {
  auto status_of = [](std::string_view type, std::string_view value) {
    const std::string text = str_cat("func.func @main() -> tensor<", type, "> {\n  %0 = stablehlo.constant dense<", value,
                                     "> : tensor<", type, ">\n  return %0 : tensor<", type, ">\n}\n");
    return stablehlo::parse_module(text).status();
  };
  check_error(status_of("i4", "8"), StatusCode::kInvalidArgument, "out of range for i4");
  check_error(status_of("ui2", "-1"), StatusCode::kInvalidArgument, "out of range for ui2");
  check_error(status_of("f8E4M3FN", "500.0"), StatusCode::kInvalidArgument, "out of range for f8E4M3FN");
  check_error(status_of("f8E4M3FN", "0x100"), StatusCode::kInvalidArgument, "does not fit in the 8 bits");
  check_error(status_of("f4E2M1FN", "0x10"), StatusCode::kInvalidArgument, "does not fit in the 4 bits");
  check_error(status_of("f8E4M3FN", "inf"), StatusCode::kInvalidArgument, "has no infinity");
  check_error(status_of("f6E2M3FN", "nan"), StatusCode::kInvalidArgument, "has no NaN");
  const Status unknown = status_of("f8E9M9", "1.0");
  CHECK_FALSE(unknown.ok());
  CHECK(contains(unknown.message(), "f8E9M9"));
  check_error(dtype_from_name("f8e9m9").status(), StatusCode::kInvalidArgument, "f8e4m3fn");
  CHECK(dtype_from_name("f8e4m3b11fnuz").value() == DType::kF8E4M3B11FNUZ);
}

TEST_CASE("narrow types: ops with bodies round every step, on the CPU as in the reference") {
  // reduce, reduce_window, an argmax-style reduce of two operands, sort, scatter,
  // select_and_scatter and a cumulative sum on f8E4M3FN, i4 and ui4: the CPU widens the op
  // and its body, rounding or wrapping each step's result back to the narrow type.
  constexpr std::string_view text = R"(
func.func @main(%a: tensor<3xf8E4M3FN>, %w: tensor<2x4xf8E4M3FN>, %s: tensor<5xi4>, %u: tensor<4xui4>) -> (tensor<f8E4M3FN>, tensor<2x2xf8E4M3FN>, tensor<2xf8E4M3FN>, tensor<2xi32>, tensor<5xi4>, tensor<4xui4>, tensor<2x4xf8E4M3FN>, tensor<5xi4>) {
  %z = stablehlo.constant dense<0.0> : tensor<f8E4M3FN>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf8E4M3FN>, tensor<f8E4M3FN>) -> tensor<f8E4M3FN>
  %lo = stablehlo.constant dense<-448.0> : tensor<f8E4M3FN>
  %1 = "stablehlo.reduce_window"(%w, %lo) ({
    ^bb0(%x: tensor<f8E4M3FN>, %y: tensor<f8E4M3FN>):
      %m = stablehlo.maximum %x, %y : tensor<f8E4M3FN>
      stablehlo.return %m : tensor<f8E4M3FN>
  }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>} : (tensor<2x4xf8E4M3FN>, tensor<f8E4M3FN>) -> tensor<2x2xf8E4M3FN>
  %idx = stablehlo.iota dim = 1 : tensor<2x4xi32>
  %zi = stablehlo.constant dense<0> : tensor<i32>
  %2:2 = stablehlo.reduce(%w init: %lo), (%idx init: %zi) across dimensions = [1] : (tensor<2x4xf8E4M3FN>, tensor<2x4xi32>, tensor<f8E4M3FN>, tensor<i32>) -> (tensor<2xf8E4M3FN>, tensor<2xi32>)
    reducer(%v0: tensor<f8E4M3FN>, %v1: tensor<f8E4M3FN>) (%i0: tensor<i32>, %i1: tensor<i32>) {
      %ge = stablehlo.compare GE, %v0, %v1, FLOAT : (tensor<f8E4M3FN>, tensor<f8E4M3FN>) -> tensor<i1>
      %v = stablehlo.select %ge, %v0, %v1 : tensor<i1>, tensor<f8E4M3FN>
      %i = stablehlo.select %ge, %i0, %i1 : tensor<i1>, tensor<i32>
      stablehlo.return %v, %i : tensor<f8E4M3FN>, tensor<i32>
    }
  %3 = "stablehlo.sort"(%s) ({
    ^bb0(%p: tensor<i4>, %q: tensor<i4>):
      %lt = stablehlo.compare LT, %p, %q, SIGNED : (tensor<i4>, tensor<i4>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<5xi4>) -> tensor<5xi4>
  %ind = stablehlo.constant dense<[[0], [0], [3]]> : tensor<3x1xi32>
  %upd = stablehlo.constant dense<[9, 9, 1]> : tensor<3xui4>
  %4 = "stablehlo.scatter"(%u, %ind, %upd) ({
    ^bb0(%o: tensor<ui4>, %n: tensor<ui4>):
      %t = stablehlo.add %o, %n : tensor<ui4>
      stablehlo.return %t : tensor<ui4>
  }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<4xui4>, tensor<3x1xi32>, tensor<3xui4>) -> tensor<4xui4>
  %src = stablehlo.constant dense<[[1.0, 1.0], [0.0625, 1.0]]> : tensor<2x2xf8E4M3FN>
  %5 = "stablehlo.select_and_scatter"(%w, %src, %z) ({
    ^bb0(%x: tensor<f8E4M3FN>, %y: tensor<f8E4M3FN>):
      %g = stablehlo.compare GE, %x, %y, FLOAT : (tensor<f8E4M3FN>, tensor<f8E4M3FN>) -> tensor<i1>
      stablehlo.return %g : tensor<i1>
  }, {
    ^bb0(%x: tensor<f8E4M3FN>, %y: tensor<f8E4M3FN>):
      %t = stablehlo.add %x, %y : tensor<f8E4M3FN>
      stablehlo.return %t : tensor<f8E4M3FN>
  }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>} : (tensor<2x4xf8E4M3FN>, tensor<2x2xf8E4M3FN>, tensor<f8E4M3FN>) -> tensor<2x4xf8E4M3FN>
  %zs = stablehlo.constant dense<0> : tensor<i4>
  %6 = "stablehlo.reduce_window"(%s, %zs) ({
    ^bb0(%x: tensor<i4>, %y: tensor<i4>):
      %t = stablehlo.add %x, %y : tensor<i4>
      stablehlo.return %t : tensor<i4>
  }) {window_dimensions = array<i64: 5>, padding = dense<[[4, 0]]> : tensor<1x2xi64>} : (tensor<5xi4>, tensor<i4>) -> tensor<5xi4>
  return %0, %1, %2#0, %2#1, %3, %4, %5, %6 : tensor<f8E4M3FN>, tensor<2x2xf8E4M3FN>, tensor<2xf8E4M3FN>, tensor<2xi32>, tensor<5xi4>, tensor<4xui4>, tensor<2x4xf8E4M3FN>, tensor<5xi4>
}
)";
  // 16 + 1 rounds to 16 (its neighbours are 15 and 18), twice: per-step rounding gives 16
  // where one rounding of 18 would give 18.
  const Literal a = require_ok(Literal::vector<float>({16, 1, 1}).convert(DType::kF8E4M3FN));
  const Literal w = require_ok(require_ok(Literal::from_span<float>(std::vector<float>{1, 3, -2, 0.5f, -448, 448, 7, 7}, {2, 4}))
                                   .convert(DType::kF8E4M3FN));
  const Literal si = require_ok(Literal::vector<std::int32_t>({5, -8, 7, -1, 0}).convert(DType::kS4));
  const Literal ui = require_ok(Literal::vector<std::int32_t>({15, 2, 3, 4}).convert(DType::kU4));
  const std::vector<Literal> out = run_both(text, {a, w, si, ui});
  auto ints = [](const Literal& l) { return values_of<std::int32_t>(require_ok(l.convert(DType::kS32))); };
  CHECK(decode(out[0]) == std::vector<float>{16});
  CHECK(decode(out[1]) == std::vector<float>{3, 0.5f, 448, 7});
  CHECK(decode(out[2]) == std::vector<float>{3, 448});
  CHECK(values_of<std::int32_t>(out[3]) == std::vector<std::int32_t>{1, 1});
  CHECK(ints(out[4]) == std::vector<std::int32_t>{-8, -1, 0, 5, 7});
  CHECK(ints(out[5]) == std::vector<std::int32_t>{1, 2, 3, 5});  // 15 + 9 + 9 = 33 wraps to 1
  // The maxima receive the source: 1 at 3, 1 at 0.5, 0.0625 at 448, 1 at the first 7.
  CHECK(decode(out[6]) == std::vector<float>{0, 1, 0, 1, 0, 0.0625f, 1, 0});
  // Prefix sums wrapping in 4 bits: 5, -3, 4, 3, 3.
  CHECK(ints(out[7]) == std::vector<std::int32_t>{5, -3, 4, 3, 3});
}

TEST_CASE("narrow types: Tensors of them in jit, with weak scalars keeping the narrow type") {
  auto client = cpu::Client<cpu::InlineExecutor>::create().value();
  auto f = jit(client, [](np::Tensor x) { return std::make_tuple(x * 2.0 + 1, x.astype(DType::kF32)); });
  // 200 is the midpoint of 192 and 208 and rounds to the even 192.
  const Literal x = require_ok(Literal::vector<float>({1, 3, 200}).convert(DType::kF8E4M3FN));
  auto [y, wide] = f(x).value();
  CHECK(y.dtype() == DType::kF8E4M3FN);
  // Each op rounds: 2 * 192 = 384, and 385 rounds back to 384 (the step there is 32).
  CHECK(decode(y) == std::vector<float>{3, 7, 384});
  CHECK(values_of<float>(wide) == std::vector<float>{1, 3, 192});
  auto g = jit(client, [](np::Tensor a, np::Tensor b) { return a + b; });
  const Literal a = require_ok(Literal::vector<std::int32_t>({7, -8}).convert(DType::kS4));
  const Literal b = Literal::vector<std::int8_t>({1, -1});
  const Literal sum = g(a, b).value();
  CHECK(sum.dtype() == DType::kS8);  // s4 and s8 meet at s8, as in JAX
  CHECK(values_of<std::int8_t>(sum) == std::vector<std::int8_t>{8, -9});
  CHECK(promote_types(DType::kU4, DType::kS4) == DType::kS8);
}

}  // namespace narrow_types_test
