// Kernels split across the thread pool: products, convolutions, fused element-wise chains and
// reductions large enough that each runs on several threads. Their bits must not depend on
// how many threads shared the work or on other executions running at the same time. This
// file is part of the concurrency executable, which CI also runs under ThreadSanitizer.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "test_util.hpp"

namespace parallel_kernels_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// A literal of `dims` whose element i is f(i).
template <class T, class F>
Literal filled(std::vector<std::int64_t> dims, F f) {
  Literal l(Shape(dtype_of<T>, dims));
  auto data = l.data<T>();
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = f(static_cast<T>(i));
  return l;
}

ConvolutionAttrs nhwc_hwio_same3x3() {
  return {.padding_low = {1, 1}, .padding_high = {1, 1}, .input_batch_dimension = 0, .input_feature_dimension = 3,
          .input_spatial_dimensions = {1, 2}, .kernel_input_feature_dimension = 2, .kernel_output_feature_dimension = 3,
          .kernel_spatial_dimensions = {0, 1}, .output_batch_dimension = 0, .output_feature_dimension = 3,
          .output_spatial_dimensions = {1, 2}};
}

}  // namespace

TEST_CASE("parallel kernels: the same bits however many threads share the work") {
  // Row counts that are no multiple of any register block, element counts that are no
  // multiple of a tile, and transcendental chains whose vector and scalar forms round apart:
  // each split of the work across threads must meet the same kernel paths as one thread.
  GraphBuilder b("split");
  Value x = b.parameter(Shape(DType::kF32, {203, 64}));
  Value w = b.parameter(Shape(DType::kF32, {64, 45}));
  Value v = b.parameter(Shape(DType::kF32, {50001}));
  Value image = b.parameter(Shape(DType::kF32, {2, 19, 23, 8}));
  Value kernel = b.parameter(Shape(DType::kF32, {3, 3, 8, 12}));
  Value y = b.tanh(b.dot(x, w));
  Value z = b.multiply(b.exponential(b.negate(v)), b.sine(v));
  Value c = b.convolution(image, kernel, nhwc_hwio_same3x3());
  // An 8-bit product wider than it is tall splits its columns across the threads, and the
  // loop after it runs on each thread's columns of each finished block of rows.
  Value xq = b.parameter(Shape(DType::kS8, {24, 300}));
  Value wq = b.parameter(Shape(DType::kS8, {300, 200}));
  Value bias = b.parameter(Shape(DType::kF32, {200}));
  Value q = b.dot(b.convert(xq, DType::kS32), b.convert(wq, DType::kS32));
  Value dequantized = b.add(b.multiply(b.convert(q, DType::kF32), b.broadcast_in_dim(b.constant(0.01f), {24, 200}, {})),
                            b.broadcast_in_dim(bias, {24, 200}, {1}));
  // f32 and f64 products wider than they are tall split their columns in units of 48 (the
  // last unit partial: 203 and 250 columns), the loop after them on each thread's columns;
  // the right operand read in place transposed ([N, K], contracting its dimension 1) too.
  Value xw = b.parameter(Shape(DType::kF32, {20, 70}));
  Value ww = b.parameter(Shape(DType::kF32, {70, 203}));
  Value wt = b.parameter(Shape(DType::kF64, {250, 70}));
  Value wide = b.tanh(b.dot(xw, ww));
  Value wide_t = b.dot_general(b.convert(xw, DType::kF64), wt, {{}, {}, {1}, {1}});
  const Graph graph = b.build({y, b.reduce(y, b.constant(0.0f), OpCode::kAdd, {0}), z, c,
                               b.reduce(c, b.constant(0.0f), OpCode::kAdd, {1, 2}), dequantized, wide, wide_t})
                          .value();
  const std::vector<Literal> args = {
      filled<float>({203, 64}, [](float i) { return std::cos(i * 0.37f); }),
      filled<float>({64, 45}, [](float i) { return std::sin(i) * 0.1f; }),
      filled<float>({50001}, [](float i) { return std::sin(i * 1e-3f) * 20.0f; }),
      filled<float>({2, 19, 23, 8}, [](float i) { return std::cos(i * 0.011f); }),
      filled<float>({3, 3, 8, 12}, [](float i) { return std::sin(i * 0.7f) * 0.2f; }),
      filled<std::int8_t>({24, 300}, [](std::int8_t i) { return static_cast<std::int8_t>(i * 7 + 3); }),
      filled<std::int8_t>({300, 200}, [](std::int8_t i) { return static_cast<std::int8_t>(i * 13 - 5); }),
      filled<float>({200}, [](float i) { return std::sin(i) * 0.5f; }),
      filled<float>({20, 70}, [](float i) { return std::cos(i * 0.13f); }),
      filled<float>({70, 203}, [](float i) { return std::sin(i * 0.29f) * 0.1f; }),
      filled<double>({250, 70}, [](double i) { return std::sin(i * 0.31) * 0.1; })};
  auto alone = cpu::Client<cpu::InlineExecutor>::create({}).value();
  const std::vector<Literal> expected = run_on(*alone, graph, args);
  for (int threads : {1, 2, 3, 6}) {
    CAPTURE(threads);
    auto client = cpu::Client<>::create({.thread_count = threads}).value();
    for (int round = 0; round < 3; ++round) {
      const std::vector<Literal> got = run_on(*client, graph, args);
      REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(got[i] == expected[i], "output " << i);
    }
  }
}

TEST_CASE("parallel kernels: concurrent executions of one executable") {
  auto client = cpu::Client<>::create({.device_count = 2, .thread_count = 2}).value();
  GraphBuilder b("affine");
  Value x = b.parameter(Shape(DType::kF32, {256, 64}));
  Value w = b.parameter(Shape(DType::kF32, {64, 32}));
  Value y = b.tanh(b.dot(x, w));
  auto exe = client->compile(b.build({b.reduce(y, b.constant(0.0f), OpCode::kAdd, {0}), y}).value()).value();
  auto wb = client->buffer_from_literal(filled<float>({64, 32}, [](float i) { return std::sin(i) * 0.1f; })).value();
  ExecuteOptions sync, async;
  async.mode = ExecutionMode::kAsynchronous;
  std::vector<Literal> expected;
  std::vector<cpu::Buffer<>> inputs;
  for (int t = 0; t < 8; ++t) {
    const auto shift = static_cast<float>(t);
    inputs.push_back(
        client->buffer_from_literal(filled<float>({256, 64}, [&](float i) { return std::cos(i * 0.01f + shift); }))
            .value());
    cpu::Buffer<>* args[] = {&inputs.back(), &wb};
    expected.push_back(exe.execute_sharded(args, client->devices()[0], sync).value()[0].to_literal().await().value());
  }
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        cpu::Buffer<>* args[] = {&inputs[static_cast<std::size_t>(t)], &wb};
        auto out = exe.execute_sharded(args, client->devices()[0], round % 2 ? async : sync);
        if (!out.ok() || !(out->at(0).to_literal().await().value() == expected[static_cast<std::size_t>(t)])) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
}

}  // namespace parallel_kernels_test
