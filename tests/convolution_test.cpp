// Tests of convolution: shape inference and its errors, the builder, the StableHLO text in
// both forms and the round trips (text, serialization), the reference interpreter against
// sums written out by hand, the CPU backend against the reference, and forward-mode autodiff
// against the bilinear rule's closed form. The sweep over every element type is in
// differential_test.cpp.

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/ir/serialize.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "pjrt_lite/stablehlo/printer.hpp"
#include "pjrt_lite/transforms/autodiff.hpp"
#include "sanitizers.hpp"
#include "test_util.hpp"

namespace convolution_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// Attributes with dimension numbers `dn` and the window (and groups) of `window`.
ConvolutionAttrs conv(std::string_view dn, ConvolutionAttrs window = {}) {
  Status s = parse_convolution_dimension_numbers(dn, window);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return window;
}

/// The result shape of convolution(lhs, rhs), or the builder's error.
StatusOr<Shape> infer(const Shape& lhs, const Shape& rhs, const ConvolutionAttrs& a) {
  GraphBuilder b("conv");
  Value out = b.convolution(b.parameter(lhs), b.parameter(rhs), a);
  if (!b.ok()) return b.status();
  return b.shape(out);
}

void check_error(const Shape& lhs, const Shape& rhs, const ConvolutionAttrs& a,
                 std::string_view fragment) {
  StatusOr<Shape> s = infer(lhs, rhs, a);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(s.status().message().find(fragment) != std::string::npos, s.status().message());
}

Literal iota_literal(const Shape& s, double scale, double offset) {
  Literal l(s);
  std::span<double> data = l.data<double>();
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = offset + scale * static_cast<double>((i * 7) % 11);
  return l;
}


Graph conv_graph(const Shape& lhs, const Shape& rhs, const ConvolutionAttrs& a) {
  GraphBuilder b("conv");
  Value x = b.parameter(lhs);
  Value k = b.parameter(rhs);
  StatusOr<Graph> g = b.build({b.convolution(x, k, a)});
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return *std::move(g);
}

}  // namespace

TEST_CASE("convolution: dimension numbers read and print back") {
  const ConvolutionAttrs a = conv("[b, 0, 1, f]x[o, i, 0, 1]->[f, 1, 0, b]");
  CHECK(a.input_batch_dimension == 0);
  CHECK(a.input_feature_dimension == 3);
  CHECK(a.input_spatial_dimensions == std::vector<std::int64_t>{1, 2});
  CHECK(a.kernel_output_feature_dimension == 0);
  CHECK(a.kernel_input_feature_dimension == 1);
  CHECK(a.kernel_spatial_dimensions == std::vector<std::int64_t>{2, 3});
  CHECK(a.output_feature_dimension == 0);
  CHECK(a.output_batch_dimension == 3);
  CHECK(a.output_spatial_dimensions == std::vector<std::int64_t>{2, 1});
  CHECK(convolution_dimension_numbers_string(a) == "[b, 0, 1, f]x[o, i, 0, 1]->[f, 1, 0, b]");
  for (auto [text, fragment] :
       {std::pair{"[b]x[i, o]->[b, f]", "needs at least two"},
        std::pair{"[b, 0, f]x[0, i, o]->[b, 0]", "'0' in the output list"},
        std::pair{"[b, 0, f]x[0, i, o]->[b, 1, f]", "'1' in the output list"},
        std::pair{"[b, b, f]x[0, i, o]->[b, 0, f]", "names 'b' twice"},
        std::pair{"[b, 0, f]x[0, 0, o]->[b, 0, f]", "spatial dimension 0 twice"},
        std::pair{"[b, 0, f]x[0, i, o]->[b, 0, f, 1]", "must have one rank"},
        std::pair{"[b, 0, f]x[0, i, o]", "expected '->'"},
        std::pair{"[b, 0, f]x[0, 1, i, o]->[b, 0, f]", "must have one rank"},
        std::pair{"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f] extra", "unexpected text"}}) {
    ConvolutionAttrs out;
    Status s = parse_convolution_dimension_numbers(text, out);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(s.message().find(fragment) != std::string::npos, s.message());
  }
}

TEST_CASE("convolution: shape inference follows the spec's num_windows") {
  // JAX's conv_general_dilated corpus shapes.
  auto shape = [](std::vector<std::int64_t> d) { return Shape(DType::kF32, d); };
  CHECK(infer(shape({1, 16, 2}), shape({3, 2, 2}),
              conv("[b, 0, f]x[0, i, o]->[b, 0, f]",
                   {.padding_low = {2}, .padding_high = {2}, .lhs_dilation = {2}}))
            .value() == shape({1, 33, 2}));
  CHECK(infer(shape({1, 3, 2, 2}), shape({64, 3, 7, 7}),
              conv("[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
                   {.window_strides = {2, 2}, .padding_low = {3, 3}, .padding_high = {3, 3}}))
            .value() == shape({1, 64, 1, 1}));
  CHECK(infer(shape({2, 3, 9, 10}), shape({3, 3, 10, 5}),
              conv("[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]"))
            .value() == shape({2, 3, 0, 6}));
  CHECK(infer(shape({2, 3, 9, 9}), shape({12, 1, 3, 3}),
              conv("[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]", {.feature_group_count = 3}))
            .value() == shape({2, 12, 7, 7}));
  CHECK(infer(shape({4, 3, 9}), shape({6, 3, 3}),
              conv("[b, f, 0]x[o, i, 0]->[b, f, 0]", {.batch_group_count = 2}))
            .value() == shape({2, 6, 7}));
  // Negative padding crops; a kernel of size 0 has windows everywhere.
  CHECK(infer(shape({1, 1, 8}), shape({1, 1, 3}),
              conv("[b, f, 0]x[o, i, 0]->[b, f, 0]", {.padding_low = {-2}, .padding_high = {-1}}))
            .value() == shape({1, 1, 3}));
  CHECK(infer(shape({1, 1, 4}), shape({1, 1, 0}), conv("[b, f, 0]x[o, i, 0]->[b, f, 0]")).value() ==
        shape({1, 1, 5}));
}

TEST_CASE("convolution: bad inputs are INVALID_ARGUMENT naming what is wrong") {
  const Shape lhs(DType::kF32, {2, 4, 9});
  const Shape rhs(DType::kF32, {6, 4, 3});
  const std::string_view dn = "[b, f, 0]x[o, i, 0]->[b, f, 0]";
  check_error(lhs, Shape(DType::kF64, {6, 4, 3}), conv(dn), "element type f64");
  check_error(lhs, Shape(DType::kF32, {6, 4}), conv(dn), "has rank 2");
  check_error(Shape(DType::kF32, {4}), Shape(DType::kF32, {4}), ConvolutionAttrs{},
              "need a batch and a feature dimension");
  check_error(lhs, Shape(DType::kF32, {6, 3, 3}), conv(dn), "rhs input feature size 3");
  check_error(lhs, rhs, conv(dn, {.feature_group_count = 3}),
              "feature_group_count = 3 does not divide the lhs feature size 4");
  check_error(lhs, Shape(DType::kF32, {5, 2, 3}), conv(dn, {.feature_group_count = 2}),
              "does not divide the rhs output feature size 5");
  check_error(lhs, rhs, conv(dn, {.batch_group_count = 4}),
              "batch_group_count = 4 does not divide the lhs batch size 2");
  check_error(Shape(DType::kF32, {4, 4, 9}), Shape(DType::kF32, {5, 4, 3}),
              conv(dn, {.batch_group_count = 2}), "does not divide the rhs output feature size 5");
  check_error(lhs, Shape(DType::kF32, {6, 2, 3}),
              conv(dn, {.feature_group_count = 2, .batch_group_count = 2}),
              "at most one of them may exceed 1");
  check_error(lhs, rhs, conv(dn, {.feature_group_count = 0}), "feature_group_count = 0");
  check_error(lhs, rhs, conv(dn, {.batch_group_count = -1}), "batch_group_count = -1");
  check_error(lhs, rhs, conv(dn, {.window_strides = {0}}), "window_strides[0] = 0");
  check_error(lhs, rhs, conv(dn, {.lhs_dilation = {-2}}), "lhs_dilation[0] = -2");
  check_error(lhs, rhs, conv(dn, {.rhs_dilation = {0}}), "rhs_dilation[0] = 0");
  check_error(lhs, rhs, conv(dn, {.window_reversal = {2}}), "window_reversal[0] = 2");
  check_error(lhs, rhs, conv(dn, {.window_strides = {1, 1}}), "window_strides [1,1] has 2");
  check_error(lhs, rhs, conv(dn, {.padding_low = {1, 1}, .padding_high = {1, 1}}),
              "padding_low [1,1] has 2");
  ConvolutionAttrs bad = conv(dn);
  bad.input_feature_dimension = 0;  // the batch dimension again
  check_error(lhs, rhs, bad, "input dimensions [batch, spatial..., feature] [0,2,0] repeats");
  bad = conv(dn);
  bad.kernel_spatial_dimensions = {3};
  check_error(lhs, rhs, bad, "is out of range for the rhs of rank 3");
  bad = conv(dn);
  bad.output_spatial_dimensions = {};
  check_error(lhs, rhs, bad, "output_spatial_dimensions [] has 0 entries");
  check_error(
      lhs, rhs,
      conv(dn, {.padding_low = {std::int64_t{1} << 62}, .padding_high = {std::int64_t{1} << 62}}),
      "overflows");
}

TEST_CASE("convolution: a 1-D convolution is the sum written out by hand") {
  // lhs [batch 2, width 7, features 3], kernel [width 3, in 3, out 2], stride 2, padding
  // (2, 1), lhs dilation 2, rhs dilation 2: out[b, x, o] = sum over k, i of
  // lhs_dilated_padded[b, 2x + 2k, i] * rhs[k, i, o].
  const Shape lhs(DType::kF64, {2, 7, 3}), rhs(DType::kF64, {3, 3, 2});
  const ConvolutionAttrs a = conv("[b, 0, f]x[0, i, o]->[b, 0, f]", {.window_strides = {2},
                                                                     .padding_low = {2},
                                                                     .padding_high = {1},
                                                                     .lhs_dilation = {2},
                                                                     .rhs_dilation = {2}});
  const Graph g = conv_graph(lhs, rhs, a);
  const Literal x = iota_literal(lhs, 0.5, -2), k = iota_literal(rhs, 0.25, -1);
  const std::vector<Literal> ref = evaluate_ok(g, {x, k});
  const std::vector<Literal> cpu = run_on_cpu(g, {x, k});
  // dilated width 13, padded 16, dilated window 5: (16 - 5) / 2 + 1 = 6 windows.
  REQUIRE(ref[0].shape() == Shape(DType::kF64, {2, 6, 2}));
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t w = 0; w < 6; ++w)
      for (std::int64_t o = 0; o < 2; ++o) {
        double sum = 0;
        for (std::int64_t t = 0; t < 3; ++t) {
          const std::int64_t padded = 2 * w + 2 * t - 2;  // position in the dilated lhs
          if (padded < 0 || padded % 2 != 0 || padded / 2 >= 7) continue;
          for (std::int64_t i = 0; i < 3; ++i)
            sum += x.get<double>({b, padded / 2, i}) * k.get<double>({t, i, o});
        }
        CHECK(ref[0].get<double>({b, w, o}) == doctest::Approx(sum).epsilon(1e-12));
        CHECK(cpu[0].get<double>({b, w, o}) == doctest::Approx(sum).epsilon(1e-12));
      }
}

TEST_CASE("convolution: the spec's example, window reversal and groups by hand") {
  // The spec's example: 4x4 lhs with lhs_dilation 2 and stride 4, 3x3 kernel of ones.
  {
    const Shape lhs(DType::kS64, {1, 4, 4, 1}), rhs(DType::kS64, {3, 3, 1, 1});
    Literal x(lhs);
    const std::int64_t values[] = {1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17};
    std::copy(std::begin(values), std::end(values), x.data<std::int64_t>().begin());
    Literal k(rhs);
    std::fill(k.data<std::int64_t>().begin(), k.data<std::int64_t>().end(), 1);
    const Graph g = conv_graph(lhs, rhs,
                               conv("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
                                    {.window_strides = {4, 4}, .lhs_dilation = {2, 2}}));
    for (const Literal& out : {evaluate_ok(g, {x, k})[0], run_on_cpu(g, {x, k})[0]}) {
      REQUIRE(out.shape() == Shape(DType::kS64, {1, 2, 2, 1}));
      CHECK(out.data<std::int64_t>()[0] == 10);
      CHECK(out.data<std::int64_t>()[1] == 26);
      CHECK(out.data<std::int64_t>()[2] == 46);
      CHECK(out.data<std::int64_t>()[3] == 62);
    }
  }
  // A reversed window multiplies the window's last element by the kernel's first: with
  // kernel [1, 10, 100], out[x] = 100 * l[x] + 10 * l[x + 1] + l[x + 2].
  {
    const Shape lhs(DType::kS32, {1, 1, 5}), rhs(DType::kS32, {1, 1, 3});
    Literal x(lhs), k(rhs);
    for (std::int32_t i = 0; i < 5; ++i)
      x.data<std::int32_t>()[static_cast<std::size_t>(i)] = i + 1;
    k.data<std::int32_t>()[0] = 1;
    k.data<std::int32_t>()[1] = 10;
    k.data<std::int32_t>()[2] = 100;
    const Graph g =
        conv_graph(lhs, rhs, conv("[b, f, 0]x[o, i, 0]->[b, f, 0]", {.window_reversal = {1}}));
    for (const Literal& out : {evaluate_ok(g, {x, k})[0], run_on_cpu(g, {x, k})[0]}) {
      REQUIRE(out.shape() == Shape(DType::kS32, {1, 1, 3}));
      CHECK(out.data<std::int32_t>()[0] == 123);
      CHECK(out.data<std::int32_t>()[1] == 234);
      CHECK(out.data<std::int32_t>()[2] == 345);
    }
  }
  // Feature groups: each output feature sees only its group's input features. Batch groups:
  // output feature block g reads lhs batch block g.
  {
    const Shape lhs(DType::kF64, {2, 1, 4}), rhs(DType::kF64, {1, 2, 4});  // [b, 0, f], [0, i, o]
    Literal x(lhs), k(rhs);
    for (std::size_t i = 0; i < 8; ++i) x.data<double>()[i] = static_cast<double>(i + 1);
    for (std::size_t i = 0; i < 8; ++i) k.data<double>()[i] = static_cast<double>(1 << i);
    const Graph fg =
        conv_graph(lhs, rhs, conv("[b, 0, f]x[0, i, o]->[b, 0, f]", {.feature_group_count = 2}));
    for (const Literal& out : {evaluate_ok(fg, {x, k})[0], run_on_cpu(fg, {x, k})[0]}) {
      REQUIRE(out.shape() == Shape(DType::kF64, {2, 1, 4}));
      for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t o = 0; o < 4; ++o) {
          const std::int64_t group = o / 2;
          double sum = 0;
          for (std::int64_t i = 0; i < 2; ++i)
            sum += x.get<double>({b, 0, group * 2 + i}) * k.get<double>({0, i, o});
          CHECK(out.get<double>({b, 0, o}) == sum);
        }
    }
    const Shape rhs4(DType::kF64, {1, 4, 4});
    Literal k4(rhs4);
    for (std::size_t i = 0; i < 16; ++i) k4.data<double>()[i] = static_cast<double>(i % 5);
    const Graph bg =
        conv_graph(lhs, rhs4, conv("[b, 0, f]x[0, i, o]->[b, 0, f]", {.batch_group_count = 2}));
    for (const Literal& out : {evaluate_ok(bg, {x, k4})[0], run_on_cpu(bg, {x, k4})[0]}) {
      REQUIRE(out.shape() == Shape(DType::kF64, {1, 1, 4}));
      for (std::int64_t o = 0; o < 4; ++o) {
        const std::int64_t batch = o / 2;
        double sum = 0;
        for (std::int64_t i = 0; i < 4; ++i)
          sum += x.get<double>({batch, 0, i}) * k4.get<double>({0, i, o});
        CHECK(out.get<double>({0, 0, o}) == sum);
      }
    }
  }
}

TEST_CASE("convolution: CPU equals the reference on large and odd layouts") {
  std::mt19937_64 rng(7);
  struct Case {
    std::vector<std::int64_t> lhs, rhs;
    std::string dn;
    ConvolutionAttrs window;
  };
  // Under a sanitizer the first case is one 20 x 18 image (the reference's loops at -O0 took
  // most of the test): its 360 rows still split across both threads, each part a block of
  // rows as at full size.
  const bool small = testing::kUnderSanitizer;
  const Case cases[] = {
      // Large enough to split across threads and to take several row and depth blocks.
      {{small ? 1 : 2, small ? 20 : 40, small ? 18 : 36, 8},
       {3, 3, 8, 16},
       "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
       {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      {{1, 200, 200, 32}, {1, 1, 32, 1}, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", {}},
      {{3, 6, 20, 18},
       {12, 2, 3, 3},
       "[b, f, 0, 1]x[o, i, 0, 1]->[f, 1, b, 0]",
       {.window_strides = {2, 1},
        .padding_low = {-1, 2},
        .padding_high = {1, -2},
        .lhs_dilation = {1, 2},
        .rhs_dilation = {2, 1},
        .feature_group_count = 3}},
      {{4, 5, 4, 3, 6},
       {2, 2, 2, 6, 4},
       "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, f, 0, 1, 2]",
       {.window_reversal = {1, 0, 1}, .batch_group_count = 2}},
  };
  for (const Case& c : cases) {
    const Shape lhs(DType::kF32, c.lhs), rhs(DType::kF32, c.rhs);
    const Graph g = conv_graph(lhs, rhs, conv(c.dn, c.window));
    const Literal x = random_literal<float>(rng, lhs, -2, 2), k = random_literal<float>(rng, rhs, -2, 2);
    const Literal ref = evaluate_ok(g, {x, k})[0];
    const Literal cpu = run_on_cpu(g, {x, k})[0];
    REQUIRE(ref.shape() == cpu.shape());
    double worst = 0;
    for (std::size_t i = 0; i < ref.data<float>().size(); ++i)
      worst = std::max(worst,
                       std::abs(static_cast<double>(ref.data<float>()[i]) - cpu.data<float>()[i]));
    CHECK_MESSAGE(worst < 1e-3, c.dn, ": largest difference ", worst);
  }
}

TEST_CASE("convolution: StableHLO text in both forms, round trips and serialization") {
  // The pretty form as JAX prints it, and the same op in the generic form.
  const char* pretty = R"(
    func.func @main(%a: tensor<1x16x2xf32>, %b: tensor<3x2x2xf32>) -> tensor<1x33x2xf32> {
      %0 = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[2, 2]], lhs_dilate = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x16x2xf32>, tensor<3x2x2xf32>) -> tensor<1x33x2xf32>
      return %0 : tensor<1x33x2xf32>
    })";
  const char* generic = R"(
    func.func @main(%a: tensor<1x16x2xf32>, %b: tensor<3x2x2xf32>) -> tensor<1x33x2xf32> {
      %0 = "stablehlo.convolution"(%a, %b) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 2>, padding = dense<2> : tensor<1x2xi64>, rhs_dilation = array<i64: 1>, window_strides = array<i64: 1>}> : (tensor<1x16x2xf32>, tensor<3x2x2xf32>) -> tensor<1x33x2xf32>
      return %0 : tensor<1x33x2xf32>
    })";
  StatusOr<Graph> a = parse_stablehlo(pretty);
  StatusOr<Graph> b = parse_stablehlo(generic);
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  CHECK(fingerprint(*a) == fingerprint(*b));
  const Graph built =
      conv_graph(Shape(DType::kF32, {1, 16, 2}), Shape(DType::kF32, {3, 2, 2}),
                 conv("[b, 0, f]x[0, i, o]->[b, 0, f]",
                      {.padding_low = {2}, .padding_high = {2}, .lhs_dilation = {2}}));
  CHECK(fingerprint(*a) == fingerprint(built));

  // Every window field, groups and reversal through print -> parse -> print.
  const ConvolutionAttrs full[] = {
      conv("[b, f, 0, 1]x[o, i, 0, 1]->[f, 1, b, 0]", {.window_strides = {2, 1},
                                                       .padding_low = {-1, 2},
                                                       .padding_high = {1, -2},
                                                       .lhs_dilation = {1, 2},
                                                       .rhs_dilation = {2, 1},
                                                       .feature_group_count = 3}),
      conv("[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, f, 0, 1, 2]",
           {.window_reversal = {1, 0, 1}, .batch_group_count = 2}),
  };
  const std::vector<std::int64_t> lhs_dims[] = {{3, 6, 20, 18}, {4, 5, 4, 3, 6}};
  const std::vector<std::int64_t> rhs_dims[] = {{12, 2, 3, 3}, {2, 2, 2, 6, 4}};
  for (std::size_t i = 0; i < 2; ++i) {
    const Graph g =
        conv_graph(Shape(DType::kF32, lhs_dims[i]), Shape(DType::kF32, rhs_dims[i]), full[i]);
    const std::string text = to_stablehlo(g);
    StatusOr<Graph> back = parse_stablehlo(text);
    REQUIRE_MESSAGE(back.ok(), back.status().to_string(), "\n", text);
    CHECK_MESSAGE(fingerprint(*back) == fingerprint(g), text);
    const std::string again = to_stablehlo(*back);
    StatusOr<Graph> twice = parse_stablehlo(again);
    REQUIRE_MESSAGE(twice.ok(), twice.status().to_string());
    CHECK(to_stablehlo(*twice) == again);
    const std::vector<std::byte> bytes = serialize(g);
    StatusOr<Graph> restored = deserialize_graph(bytes);
    REQUIRE_MESSAGE(restored.ok(), restored.status().to_string());
    CHECK(fingerprint(*restored) == fingerprint(g));
    CHECK(verify(*restored).ok());
  }
  // Malformed text: an error at the attribute, not a crash.
  const std::string bad =
      std::string(pretty).replace(std::string(pretty).find("[b, 0, f]x"), 10, "[b, 0, b]x");
  StatusOr<Graph> c = parse_stablehlo(bad);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(c.status().message().find("names 'b' twice") != std::string::npos,
                c.status().message());
  const std::string bad_window =
      std::string(pretty).replace(std::string(pretty).find("lhs_dilate"), 10, "lhs_dilute");
  StatusOr<Graph> d = parse_stablehlo(bad_window);
  REQUIRE_FALSE(d.ok());
  CHECK_MESSAGE(d.status().message().find("unknown convolution window field 'lhs_dilute'") !=
                    std::string::npos,
                d.status().message());
}

TEST_CASE("convolution: jvp is conv(dlhs, rhs) + conv(lhs, drhs), and vjp is its adjoint") {
  const Shape lhs(DType::kF64, {2, 3, 7}), rhs(DType::kF64, {4, 3, 3});
  const ConvolutionAttrs a =
      conv("[b, f, 0]x[o, i, 0]->[b, f, 0]",
           {.window_strides = {2}, .padding_low = {1}, .padding_high = {2}, .rhs_dilation = {2}});
  const Graph g = conv_graph(lhs, rhs, a);
  StatusOr<Graph> jvp = jvp_graph(g, {true, true});
  REQUIRE_MESSAGE(jvp.ok(), jvp.status().to_string());
  const Literal x = iota_literal(lhs, 0.5, -1), k = iota_literal(rhs, -0.25, 1);
  const Literal dx = iota_literal(lhs, 0.125, 0.5), dk = iota_literal(rhs, 0.75, -2);
  const std::vector<Literal> out = evaluate_ok(*jvp, {x, k, dx, dk});
  REQUIRE(out.size() == 2);
  const Literal expected_a = evaluate_ok(g, {dx, k})[0];
  const Literal expected_b = evaluate_ok(g, {x, dk})[0];
  for (std::size_t i = 0; i < out[1].data<double>().size(); ++i)
    CHECK(out[1].data<double>()[i] ==
          doctest::Approx(expected_a.data<double>()[i] + expected_b.data<double>()[i])
              .epsilon(1e-12));
  // vjp is jvp's adjoint: <vjp(w), (dx, dk)> == <w, jvp(dx, dk)>, here with w = x's jvp.
  StatusOr<Graph> vjp = vjp_graph(g, {true, true});
  REQUIRE_MESSAGE(vjp.ok(), vjp.status().to_string());
  const std::vector<Literal> back = evaluate_ok(*vjp, {x, k, out[1]});
  double reverse = 0, forward = 0;
  for (std::size_t i = 0; i < dx.data<double>().size(); ++i)
    reverse += back[1].data<double>()[i] * dx.data<double>()[i];
  for (std::size_t i = 0; i < dk.data<double>().size(); ++i)
    reverse += back[2].data<double>()[i] * dk.data<double>()[i];
  for (std::size_t i = 0; i < out[1].data<double>().size(); ++i)
    forward += out[1].data<double>()[i] * out[1].data<double>()[i];
  CHECK(reverse == doctest::Approx(forward).epsilon(1e-12));
}

}  // namespace convolution_test
