// Convolution workloads: conv3x3_56x56x64 (3x3, 64 -> 64 channels, 56x56 NHWC, SAME, bias and
// relu, batch 1). pjrt_lite runs the graph a framework would export; the twin is an im2col
// convolution by chunks of output positions on the same threads.
#include "common.hpp"

namespace pjrt_lite_bench {
namespace {

/// The hand-written convolution: for output positions [p0, p1), in chunks of kConvChunk, an
/// im2col chunk [positions, 9 * 64] (zeros where the window leaves the image) times the
/// kernel [9 * 64, 64], plus the bias, then relu. `patches` is the caller's scratch.
constexpr std::int64_t kConvChunk = 128;
constexpr std::int64_t kConvDepth = kConvTaps * kConvChannels;
constexpr std::int64_t kConvPositions = kConvSize * kConvSize;

void conv_positions(const float* x, const float* kernel, const float* bias, float* y,
                    RowMatrix& patches, std::int64_t p0, std::int64_t p1) {
  Eigen::Map<const RowMatrix> k(kernel, kConvDepth, kConvChannels);
  Eigen::Map<const Row> b(bias, kConvChannels);
  for (std::int64_t c0 = p0; c0 < p1; c0 += kConvChunk) {
    const std::int64_t n = std::min(kConvChunk, p1 - c0);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t oh = (c0 + i) / kConvSize, ow = (c0 + i) % kConvSize;
      float* row = patches.data() + i * kConvDepth;
      for (std::int64_t kh = 0; kh < 3; ++kh)
        for (std::int64_t kw = 0; kw < 3; ++kw, row += kConvChannels) {
          const std::int64_t ih = oh + kh - 1, iw = ow + kw - 1;
          if (ih < 0 || ih >= kConvSize || iw < 0 || iw >= kConvSize)
            std::fill_n(row, kConvChannels, 0.0f);
          else
            std::copy_n(x + (ih * kConvSize + iw) * kConvChannels, kConvChannels, row);
        }
    }
    Eigen::Map<RowMatrix> out(y + c0 * kConvChannels, n, kConvChannels);
    out.noalias() = patches.topRows(n) * k;
    out = (out.rowwise() + b).cwiseMax(0.0f);
  }
}

/// Blocks of the convolution's output positions: pjrt_lite's kernel cuts them in about
/// 4 per thread.
constexpr std::int64_t kConvBlocks = kThreads * 4;

void conv3x3_56x56x64_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("conv3x3");
  const std::vector<std::int64_t> dims{1, kConvSize, kConvSize, kConvChannels};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value k = b.parameter(Shape(DType::kF32, {3, 3, kConvChannels, kConvChannels}));
  Value bias = b.parameter(Shape(DType::kF32, {kConvChannels}));
  Value conv = b.convolution(x, k, nhwc_conv3x3_attrs());
  Value y = b.maximum(b.add(conv, b.broadcast_in_dim(bias, dims, {3})), broadcast_scalar(b, 0.0f, dims));
  Program<cpu::ThreadPool> p(b, {y}, {conv_input(), conv_kernel(), conv_bias()},
                             {dims, {3, 3, kConvChannels, kConvChannels}, {kConvChannels}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  check_close(state, p.output(0), model_reference("conv3x3_56x56x64").data(), 1e-4);
}

void conv3x3_56x56x64_eigen(benchmark::State& state) {
  const auto x = conv_input(), kernel = conv_kernel(), bias = conv_bias();
  std::vector<float> y(static_cast<std::size_t>(kConvPositions * kConvChannels));
  std::vector<RowMatrix> patches(kConvBlocks, RowMatrix(kConvChunk, kConvDepth));
  for (auto _ : state) {
    twin_parallel(kConvPositions, kConvBlocks, [&](std::int64_t p0, std::int64_t p1) {
      conv_positions(x.data(), kernel.data(), bias.data(), y.data(),
                     patches[static_cast<std::size_t>(p0 * kConvBlocks / kConvPositions)], p0, p1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  check_close(state, y, model_reference("conv3x3_56x56x64").data(), 1e-4);
}

}  // namespace

void register_conv_workloads() {
  add_workload("conv3x3_56x56x64", conv3x3_56x56x64_pjrt_lite, conv3x3_56x56x64_eigen,
               benchmark::kMicrosecond);
}

std::vector<float> conv_reference(std::string_view workload) {
  std::vector<float> y;
  if (workload == "conv3x3_56x56x64") {
    y.resize(static_cast<std::size_t>(kConvPositions * kConvChannels));
    RowMatrix patches(kConvChunk, kConvDepth);
    conv_positions(conv_input().data(), conv_kernel().data(), conv_bias().data(), y.data(),
                   patches, 0, kConvPositions);
  }
  return y;
}

}  // namespace pjrt_lite_bench
