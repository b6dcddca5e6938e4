// Tests of the CPU convolution kernel (backends/cpu/detail/conv_kernel.hpp) against the
// reference interpreter: every path the kernel takes (window taps read in place for
// contiguous features, gathered rows for other layouts and types, the depthwise loop) over
// layouts, strides, both dilations, padding, both kinds of groups, odd channel counts, 1x1
// kernels, kernels larger than their input, batches and element types; and shapes large
// enough to split across threads and to take several blocks of rows, depth and columns.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "sanitizers.hpp"
#include "test_util.hpp"

namespace conv_kernel_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

constexpr std::string_view kNhwc = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]";
constexpr std::string_view kNchw = "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]";

struct Case {
  std::vector<std::int64_t> lhs, rhs;
  std::string_view dn;
  ConvolutionAttrs window;
};

ConvolutionAttrs attrs(const Case& c) {
  ConvolutionAttrs a = c.window;
  Status s = parse_convolution_dimension_numbers(c.dn, a);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return a;
}

/// Small integers for every type (sums stay exact in every float type), random signs.
Literal random_input(std::mt19937_64& rng, DType t, const std::vector<std::int64_t>& dims) {
  Literal l(Shape(t, dims));
  std::uniform_int_distribution<int> u(-3, 3);
  visit_dtype(t, [&]<class T>(std::type_identity<T>) {
    for (T& v : l.data<T>()) {
      if constexpr (std::is_floating_point_v<T>)
        v = static_cast<T>(u(rng)) + static_cast<T>(0.25) * static_cast<T>(u(rng));
      else
        v = convert_element<T>(static_cast<double>(u(rng)));
    }
  });
  return l;
}

/// For each thread count, the largest difference between the CPU's and the reference's
/// results, relative to max(1, |reference|); integers must match exactly (0 or 1). The
/// reference runs once for all the thread counts. Without `reference`, the first thread
/// count's result stands in for it and the others must be the same bits (0 or 1).
std::vector<double> run_case(const Case& c, DType t, std::uint64_t seed,
                             const std::vector<int>& thread_counts, bool reference = true) {
  std::mt19937_64 rng(seed);
  GraphBuilder b("conv");
  Value x = b.parameter(Shape(t, c.lhs));
  Value k = b.parameter(Shape(t, c.rhs));
  const Graph g = build_ok(b, {b.convolution(x, k, attrs(c))});
  const std::vector<Literal> args = {random_input(rng, t, c.lhs), random_input(rng, t, c.rhs)};
  std::optional<Literal> want;
  if (reference) want = evaluate_ok(g, args)[0];
  std::vector<double> worst_by_count;
  for (int threads : thread_counts) {
    auto client = cpu::Client<>::create({.device_count = 1, .thread_count = threads}).value();
    auto exe = client->compile(g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    std::vector<cpu::Client<>::buffer_type> buffers;
    std::vector<cpu::Client<>::buffer_type*> pointers;
    for (const Literal& a : args) buffers.push_back(client->buffer_from_literal(a).value());
    for (auto& buf : buffers) pointers.push_back(&buf);
    auto out = exe->execute_sharded(pointers, client->devices()[0]);
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    const Literal got = (*out)[0].to_literal().await().value();
    if (!reference) {
      if (!want) want = got;
      worst_by_count.push_back(got == *want ? 0 : 1);
      continue;
    }
    REQUIRE(got.shape() == want->shape());
    double worst = 0;
    visit_dtype(t, [&]<class T>(std::type_identity<T>) {
      const auto w = want->data<T>();
      const auto h = got.data<T>();
      for (std::size_t i = 0; i < w.size(); ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          const double d = std::abs(static_cast<double>(h[i]) - static_cast<double>(w[i]));
          worst = std::max(worst, d / std::max(1.0, std::abs(static_cast<double>(w[i]))));
        } else if (!(h[i] == w[i])) {
          worst = 1;
        }
      }
    });
    worst_by_count.push_back(worst);
  }
  return worst_by_count;
}

void check_cases(const std::vector<Case>& cases, const std::vector<DType>& types,
                 const std::vector<int>& thread_counts = {2}, bool reference = true) {
  std::uint64_t seed = 1;
  for (const Case& c : cases)
    for (DType t : types) {
      const double tolerance = !reference ? 0 : t == DType::kF32 ? 1e-5 : t == DType::kF64 ? 1e-12 : 0;
      const std::vector<double> worst = run_case(c, t, seed++, thread_counts, reference);
      for (std::size_t i = 0; i < worst.size(); ++i)
        CHECK_MESSAGE(worst[i] <= tolerance, dtype_name(t), " ", c.dn, " lhs ", c.lhs.size(),
                      "-d, ", thread_counts[i], " threads: worst ", worst[i],
                      reference ? " against the reference" : " against the first thread count");
    }
}

/// An 8-bit convolution: operands of types `lt` and `rt` (s8 or u8, every byte value; with
/// `seven_bit_lhs` the lhs within [-64, 63] or [0, 127], where CPUs without VNNI sum byte
/// pairs) converted to `out` (s32 or u32) and convolved, on the CPU with each of
/// `thread_counts` threads (which multiplies the 8-bit values in Int8Gemm unless the
/// convolution is depthwise) and once in the reference interpreter; the results must match
/// bit for bit. Without `reference`, the results of the first thread count stand in for the
/// reference's.
void check_8_bit(const Case& c, DType lt, DType rt, DType out, std::uint64_t seed,
                 const std::vector<int>& thread_counts, bool reference = true, bool seven_bit_lhs = false) {
  CAPTURE(c.dn);
  CAPTURE(dtype_name(lt));
  CAPTURE(dtype_name(rt));
  CAPTURE(dtype_name(out));
  std::mt19937_64 rng(seed);
  GraphBuilder b("conv8");
  Value x = b.parameter(Shape(lt, c.lhs));
  Value k = b.parameter(Shape(rt, c.rhs));
  const ConvolutionAttrs a = attrs(c);
  const Graph g = build_ok(b, {b.convolution(b.convert(x, out), b.convert(k, out), a)});
  std::vector<Literal> args = {Literal(Shape(lt, c.lhs)), Literal(Shape(rt, c.rhs))};
  for (Literal& l : args)
    for (std::byte& v : l.bytes()) v = static_cast<std::byte>(rng());
  if (seven_bit_lhs)
    for (std::byte& v : args[0].bytes())
      v = static_cast<std::byte>(lt == DType::kS8 ? static_cast<std::uint8_t>(v) % 128 - 64 : static_cast<std::uint8_t>(v) % 128);
  std::optional<Literal> want;
  if (reference) want = evaluate_ok(g, args)[0];
  const bool depthwise = a.feature_group_count > 1 && c.rhs[static_cast<std::size_t>(a.kernel_input_feature_dimension)] == 1 &&
                         a.feature_group_count == g.output_shapes()[0].dim(a.output_feature_dimension);
  for (int threads : thread_counts) {
    CAPTURE(threads);
    auto client = cpu::Client<>::create({.device_count = 1, .thread_count = threads}).value();
    auto exe = client->compile(g);
    REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
    CHECK(contains(exe->optimized_program_text(), "convolution(8-bit") == !depthwise);
    std::vector<cpu::Client<>::buffer_type> buffers;
    std::vector<cpu::Client<>::buffer_type*> pointers;
    for (const Literal& l : args) buffers.push_back(client->buffer_from_literal(l).value());
    for (auto& buf : buffers) pointers.push_back(&buf);
    auto result = exe->execute_sharded(pointers, client->devices()[0]);
    REQUIRE_MESSAGE(result.ok(), result.status().to_string());
    const Literal got = (*result)[0].to_literal().await().value();
    if (!want) want = got;
    CHECK(got == *want);
  }
}

}  // namespace

TEST_CASE("conv kernel: 8-bit integer convolutions multiply the 8-bit values, as the reference does") {
  // Every layout, window and group case above, every signedness pair and both 32-bit results,
  // results written in place (NHWC-like) and scattered (others); shapes with depths over one
  // block of Int8Gemm, split across threads; empty sums. The depthwise ones keep the wide path.
  // Under a sanitizer (-O0, where the reference's loops take most of the time) the large
  // shapes are smaller and checked without the reference, their results on one thread and on
  // three the same bits; the first still takes two blocks of rows on one thread (480 rows of
  // 576 bytes, in blocks of 452: 256 KiB of gathered windows).
  const bool small = testing::kAddressSanitizer || testing::kThreadSanitizer;
  const std::vector<Case> cases = {
      {{3, 7, 9, 5}, {3, 3, 5, 11}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      {{2, 10, 11, 3},
       {3, 2, 3, 7},
       kNhwc,
       {.window_strides = {2, 1}, .padding_low = {1, 2}, .padding_high = {2, 0}, .lhs_dilation = {2, 1},
        .rhs_dilation = {1, 3}, .window_reversal = {0, 1}}},
      {{2, 6, 6, 9}, {3, 3, 3, 6}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 3}},
      {{4, 5, 5, 6}, {2, 2, 6, 4}, kNhwc, {.batch_group_count = 2}},
      {{2, 5, 8, 7}, {6, 5, 3, 3}, kNchw, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      {{7, 3, 2, 6}, {4, 6, 2, 3}, "[0, b, 1, f]x[1, i, o, 0]->[f, 1, b, 0]", {.padding_low = {1, 0}, .lhs_dilation = {1, 2}}},
      {{2, 30, 7}, {4, 7, 5}, "[b, 0, f]x[0, i, o]->[b, 0, f]", {.padding_low = {3}, .rhs_dilation = {2}}},
      {{1, 8, 7, 13}, {3, 3, 1, 13}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 13}},
      {{2, 4, 4, 0}, {3, 3, 0, 5}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases)
    for (DType lt : {DType::kS8, DType::kU8})
      for (DType rt : {DType::kS8, DType::kU8})
        for (bool seven_bit : {false, true})
          check_8_bit(c, lt, rt, lt == rt ? DType::kS32 : DType::kU32, seed++, {2}, true, seven_bit);
  const std::vector<Case> large = {
      {{small ? 1 : 2, 24, 20, 64}, {3, 3, 64, 48}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      {{1, 3, small ? 4 : 10, 300}, {1, 2, 300, 40}, kNhwc, {}},
      {{1, 40, small ? 6 : 16, small ? 6 : 16}, {24, 40, 3, 3}, kNchw, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
  };
  for (const Case& c : large) check_8_bit(c, DType::kS8, DType::kS8, DType::kS32, seed++, {1, 3}, /*reference=*/!small);
}

TEST_CASE("conv kernel: NHWC reads taps in place, with strides, dilations, padding and odd sizes") {
  const std::vector<Case> cases = {
      // SAME 3x3, channels not a multiple of any vector width, batch 3.
      {{3, 7, 9, 5}, {3, 3, 5, 11}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      // 1x1 kernel, stride 2.
      {{2, 9, 8, 13}, {1, 1, 13, 17}, kNhwc, {.window_strides = {2, 2}}},
      // A kernel larger than its input, padded; negative padding on the other dimension.
      {{1, 3, 6, 4}, {5, 3, 4, 6}, kNhwc, {.padding_low = {2, -1}, .padding_high = {2, 0}}},
      // Dilations of both operands, strides, a reversed window.
      {{2, 10, 11, 3},
       {3, 2, 3, 7},
       kNhwc,
       {.window_strides = {2, 1},
        .padding_low = {1, 2},
        .padding_high = {2, 0},
        .lhs_dilation = {2, 1},
        .rhs_dilation = {1, 3},
        .window_reversal = {0, 1}}},
      // Feature groups of 3 inputs and 2 outputs; batch groups.
      {{2, 6, 6, 9}, {3, 3, 3, 6}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 3}},
      {{4, 5, 5, 6}, {2, 2, 6, 4}, kNhwc, {.batch_group_count = 2}},
      // 1-D and 3-D.
      {{2, 30, 7}, {4, 7, 5}, "[b, 0, f]x[0, i, o]->[b, 0, f]", {.padding_low = {3}, .rhs_dilation = {2}}},
      {{1, 4, 5, 3, 6}, {2, 3, 2, 6, 5}, "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]", {.padding_high = {1, 0, 1}}},
  };
  check_cases(cases, {DType::kF32, DType::kF64, DType::kS32, DType::kU8, DType::kF16});
}

TEST_CASE("conv kernel: NCHW and transposed layouts gather their rows") {
  const std::vector<Case> cases = {
      {{2, 5, 8, 7}, {6, 5, 3, 3}, kNchw, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      {{3, 16, 6, 5}, {9, 16, 1, 1}, kNchw, {.window_strides = {1, 2}}},
      {{1, 6, 9, 9},
       {4, 3, 3, 2},
       kNchw,
       {.window_strides = {2, 2}, .padding_low = {0, 1}, .padding_high = {1, 1}, .rhs_dilation = {2, 1}, .feature_group_count = 2}},
      // Every dimension somewhere else.
      {{7, 3, 2, 6}, {4, 6, 2, 3}, "[0, b, 1, f]x[1, i, o, 0]->[f, 1, b, 0]", {.padding_low = {1, 0}, .lhs_dilation = {1, 2}}},
      {{4, 6, 5, 5}, {3, 3, 4, 6}, "[b, f, 0, 1]x[0, 1, o, i]->[1, b, f, 0]", {.batch_group_count = 2}},
  };
  check_cases(cases, {DType::kF32, DType::kF64, DType::kS64, DType::kS8, DType::kBF16});
}

TEST_CASE("conv kernel: depthwise, NHWC and NCHW, with multipliers and strides") {
  const std::vector<Case> cases = {
      // 64 channels (the vector loop), 13 (its tail), 3 (scalars); batch 2.
      {{2, 9, 10, 64}, {3, 3, 1, 64}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 64}},
      {{1, 8, 7, 13}, {3, 3, 1, 13}, kNhwc, {.window_strides = {2, 1}, .padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 13}},
      {{3, 6, 6, 3}, {5, 5, 1, 3}, kNhwc, {.padding_low = {2, 2}, .padding_high = {2, 2}, .rhs_dilation = {1, 2}, .feature_group_count = 3}},
      {{2, 12, 7, 7}, {12, 1, 3, 3}, kNchw, {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 12}},
      // A channel multiplier of 2 (two outputs per group) takes the product path.
      {{1, 7, 7, 8}, {3, 3, 1, 16}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 8}},
      // Interior windows read at fixed distances from their first tap, the others tap by tap:
      // a reversed window, uneven padding and a stride; a dilated lhs, where no window is
      // regular; one and three spatial dimensions.
      {{2, 11, 9, 40},
       {3, 2, 1, 40},
       kNhwc,
       {.window_strides = {1, 2}, .padding_low = {2, 0}, .padding_high = {0, 3}, .window_reversal = {1, 0}, .feature_group_count = 40}},
      {{1, 6, 7, 24}, {3, 3, 1, 24}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}, .lhs_dilation = {2, 1}, .feature_group_count = 24}},
      {{3, 30, 16}, {5, 1, 16}, "[b, 0, f]x[0, i, o]->[b, 0, f]", {.padding_low = {4}, .padding_high = {1}, .rhs_dilation = {2}, .feature_group_count = 16}},
      {{1, 5, 4, 6, 32},
       {2, 3, 2, 1, 32},
       "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]",
       {.padding_low = {0, 1, 1}, .padding_high = {1, 1, 0}, .window_reversal = {0, 1, 1}, .feature_group_count = 32}},
  };
  check_cases(cases, {DType::kF32, DType::kF64, DType::kS32});
}

TEST_CASE("conv kernel: large shapes split across threads and take several blocks") {
  // Under a sanitizer (an -O0 build, where the reference's loops would take minutes) the
  // spatial sizes shrink and the reference is left out: the results on one thread and on two
  // must be the same bits. The reference runs on every layout, window and type in the cases
  // above. The shapes still split across the threads, take several blocks of depth and of
  // columns where they did, and the first still several blocks of rows on one thread (361
  // rows, in blocks of 336 for f32 and 340 for s32: 256 KiB over a block of 3 taps x 64
  // features).
  const bool small = testing::kAddressSanitizer || testing::kThreadSanitizer;
  const std::int64_t batch = small ? 1 : 2, rows = small ? 19 : 40, columns = small ? 19 : 36,
                     positions = small ? 2 : 9, side = small ? 6 : 20, image = small ? 16 : 56;
  const std::vector<Case> cases = {
      // Several blocks of rows on each worker; depth 9 x 64 in blocks of whole taps.
      {{batch, rows, columns, 64}, {3, 3, 64, 64}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      // More input features than one depth block holds (pieces of one tap), and more output
      // features than one block of columns.
      {{1, positions, small ? 4 : 10, 600}, {1, 2, 600, 300}, kNhwc, {}},
      {{1, 300, side, side}, {70, 300, 3, 1}, kNchw, {.padding_low = {1, 0}, .padding_high = {1, 0}}},
      {{2, image, image, 64}, {3, 3, 1, 64}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}, .feature_group_count = 64}},
  };
  check_cases(cases, {DType::kF32, DType::kS32}, {1, 2}, /*reference=*/!small);
}

TEST_CASE("conv kernel: empty sums and empty results") {
  const std::vector<Case> cases = {
      // Zero input features: every output is 0.
      {{2, 4, 4, 0}, {3, 3, 0, 5}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      // An empty spatial dimension padded to a non-empty result: every tap reads padding.
      {{1, 0, 4, 3}, {1, 3, 3, 2}, kNhwc, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
      // Zero output features.
      {{1, 4, 4, 3}, {3, 3, 3, 0}, kNhwc, {}},
  };
  check_cases(cases, {DType::kF32, DType::kS32});
}

}  // namespace conv_kernel_test
