// Convolution workloads on 56x56x64 NHWC activations, each + bias + relu: conv3x3_56x56x64
// (3x3, 64 -> 64 channels, SAME, batch 1) and conv3x3_b8_56x56x64 (batch 8), conv1x1_56x56x64
// and depthwise3x3_56x56x64 (64 groups of one channel); conv3x3_int8_56x56x64 (s8 -> s32, no
// bias or relu); and gemm_same_flops, the 3x3
// convolution's implicit product as one GEMM ([3136, 576] x [576, 64], the same FLOPs), to
// read the convolution against. pjrt_lite runs the graph a framework would export; the twins
// are im2col, plain GEMM or per-channel loops by blocks of output positions on the same
// threads.
#include "common.hpp"

namespace pjrt_lite_bench {
namespace {

/// The hand-written convolution: for output positions [p0, p1), in chunks of kConvChunk, an
/// im2col chunk [positions, 9 * 64] (zeros where the window leaves the image) times the
/// kernel [9 * 64, 64], plus the bias, then relu. `patches` is the caller's scratch.
constexpr std::int64_t kConvChunk = 128;
constexpr std::int64_t kConvDepth = kConvTaps * kConvChannels;
constexpr std::int64_t kConvPositions = kConvSize * kConvSize;

/// The im2col rows of output positions [c0, c0 + n): each position's 3x3 window of 64
/// channels, zeros where it leaves the image.
template <class X, class T>
void im2col_chunk(const X* x, T* patches, std::int64_t c0, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t oh = (c0 + i) / kConvSize, ow = (c0 + i) % kConvSize;
    T* row = patches + i * kConvDepth;
    for (std::int64_t kh = 0; kh < 3; ++kh)
      for (std::int64_t kw = 0; kw < 3; ++kw, row += kConvChannels) {
        const std::int64_t ih = oh + kh - 1, iw = ow + kw - 1;
        if (ih < 0 || ih >= kConvSize || iw < 0 || iw >= kConvSize)
          std::fill_n(row, kConvChannels, T(0));
        else
          std::copy_n(x + (ih * kConvSize + iw) * kConvChannels, kConvChannels, row);
      }
  }
}

void conv_positions(const float* x, const float* kernel, const float* bias, float* y,
                    RowMatrix& patches, std::int64_t p0, std::int64_t p1) {
  Eigen::Map<const RowMatrix> k(kernel, kConvDepth, kConvChannels);
  Eigen::Map<const Row> b(bias, kConvChannels);
  for (std::int64_t c0 = p0; c0 < p1; c0 += kConvChunk) {
    const std::int64_t n = std::min(kConvChunk, p1 - c0);
    im2col_chunk(x, patches.data(), c0, n);
    Eigen::Map<RowMatrix> out(y + c0 * kConvChannels, n, kConvChannels);
    out.noalias() = patches.topRows(n) * k;
    out = (out.rowwise() + b).cwiseMax(0.0f);
  }
}

/// Blocks of the convolution's output positions: pjrt_lite's kernel cuts them in about
/// 4 per thread.
const std::int64_t kConvBlocks = kThreads * 4;

void conv3x3_56x56x64_pjrt_lite(benchmark::State& state) {
  const std::vector<std::int64_t> dims{1, kConvSize, kConvSize, kConvChannels};
  Program<cpu::ThreadPool> p(conv3x3_bias_relu_graph(), {conv_input(), conv_kernel(), conv_bias()},
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

// ---- The other convolution layers.

/// relu(conv(x, k) + bias) on NHWC [batch, 56, 56, 64], kernel [window, window, 64 / groups,
/// 64], SAME padding, `groups` feature groups.
Graph conv_layer_graph(std::int64_t batch, std::int64_t window, std::int64_t groups) {
  GraphBuilder b("conv_layer");
  const std::vector<std::int64_t> dims{batch, kConvSize, kConvSize, kConvChannels};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value k = b.parameter(Shape(DType::kF32, {window, window, kConvChannels / groups, kConvChannels}));
  Value bias = b.parameter(Shape(DType::kF32, {kConvChannels}));
  ConvolutionAttrs attrs = nhwc_conv3x3_attrs();
  attrs.padding_low = {window / 2, window / 2};
  attrs.padding_high = {window / 2, window / 2};
  attrs.feature_group_count = groups;
  Value y = b.maximum(b.add(b.convolution(x, k, attrs), b.broadcast_in_dim(bias, dims, {3})),
                      broadcast_scalar(b, 0.0f, dims));
  return take(b.build({y}), "build");
}

/// The 3x3 convolution of the positions [r0, r1) of all `batch` images, by image.
void conv3x3_batch_rows(const float* x, const float* kernel, const float* bias, float* y,
                        RowMatrix& patches, std::int64_t r0, std::int64_t r1) {
  const std::int64_t image = kConvPositions * kConvChannels;
  for (std::int64_t r = r0; r < r1;) {
    const std::int64_t i = r / kConvPositions, p0 = r % kConvPositions;
    const std::int64_t p1 = std::min(kConvPositions, p0 + (r1 - r));
    conv_positions(x + i * image, kernel, bias, y + i * image, patches, p0, p1);
    r += p1 - p0;
  }
}

/// The 1x1 convolution of positions [p0, p1): relu(x[p0:p1] * k + bias).
void conv1x1_positions(const float* x, const float* kernel, const float* bias, float* y, std::int64_t p0,
                       std::int64_t p1) {
  Eigen::Map<RowMatrix> out(y + p0 * kConvChannels, p1 - p0, kConvChannels);
  out.noalias() = Eigen::Map<const RowMatrix>(x + p0 * kConvChannels, p1 - p0, kConvChannels) *
                  Eigen::Map<const RowMatrix>(kernel, kConvChannels, kConvChannels);
  out = (out.rowwise() + Eigen::Map<const Row>(bias, kConvChannels)).cwiseMax(0.0f);
}

/// The depthwise 3x3 convolution of positions [p0, p1): each channel sums its own 3x3 window
/// (zeros outside the image) times its own 9 weights, + bias, relu.
void depthwise_positions(const float* x, const float* kernel, const float* bias, float* y, std::int64_t p0,
                         std::int64_t p1) {
  using Channels = Eigen::Array<float, kConvChannels, 1>;
  using ChannelMap = Eigen::Map<const Channels>;
  for (std::int64_t p = p0; p < p1; ++p) {
    const std::int64_t oh = p / kConvSize, ow = p % kConvSize;
    Channels acc = Channels::Zero();
    for (std::int64_t kh = 0; kh < 3; ++kh)
      for (std::int64_t kw = 0; kw < 3; ++kw) {
        const std::int64_t ih = oh + kh - 1, iw = ow + kw - 1;
        if (ih < 0 || ih >= kConvSize || iw < 0 || iw >= kConvSize) continue;
        acc += ChannelMap(x + (ih * kConvSize + iw) * kConvChannels) * ChannelMap(kernel + (kh * 3 + kw) * kConvChannels);
      }
    Eigen::Map<Channels>(y + p * kConvChannels) = (acc + ChannelMap(bias)).max(0.0f);
  }
}

/// One convolution layer workload: `batch` images, a `window` x `window` kernel in `groups`
/// groups; the twin runs `positions` over blocks of output positions (per image).
struct ConvLayer {
  std::int64_t batch, window, groups;
  std::vector<float> (*kernel)();
  void (*positions)(const float*, const float*, const float*, float*, std::int64_t, std::int64_t);
  double tolerance;

  std::vector<std::int64_t> kernel_dims() const { return {window, window, kConvChannels / groups, kConvChannels}; }
  double flops() const {
    return 2.0 * batch * kConvPositions * window * window * (kConvChannels / groups) * kConvChannels;
  }
};

constexpr ConvLayer kConv1x1{1, 1, 1, conv1x1_kernel, conv1x1_positions, 1e-4};
constexpr ConvLayer kDepthwise{1, 3, kConvChannels, depthwise_kernel, depthwise_positions, 1e-5};

template <const ConvLayer& L>
void conv_layer_pjrt_lite(benchmark::State& state) {
  const auto x = conv_input_batch(L.batch), kernel = L.kernel(), bias = conv_bias();
  Program<cpu::ThreadPool> p(conv_layer_graph(L.batch, L.window, L.groups), {x, kernel, bias},
                             {{L.batch, kConvSize, kConvSize, kConvChannels}, L.kernel_dims(), {kConvChannels}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(L.flops(), benchmark::Counter::kIsIterationInvariantRate);
  std::vector<float> want(x.size());
  L.positions(x.data(), kernel.data(), bias.data(), want.data(), 0, kConvPositions);
  check_close(state, p.output(0), want.data(), L.tolerance);
}

template <const ConvLayer& L>
void conv_layer_eigen(benchmark::State& state) {
  const auto x = conv_input_batch(L.batch), kernel = L.kernel(), bias = conv_bias();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    twin_parallel(kConvPositions, kConvBlocks, [&](std::int64_t p0, std::int64_t p1) {
      L.positions(x.data(), kernel.data(), bias.data(), y.data(), p0, p1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(L.flops(), benchmark::Counter::kIsIterationInvariantRate);
}

void conv3x3_b8_56x56x64_pjrt_lite(benchmark::State& state) {
  const auto x = conv_input_batch(kConvBatch), kernel = conv_kernel(), bias = conv_bias();
  Program<cpu::ThreadPool> p(conv_layer_graph(kConvBatch, 3, 1), {x, kernel, bias},
                             {{kConvBatch, kConvSize, kConvSize, kConvChannels},
                              {3, 3, kConvChannels, kConvChannels},
                              {kConvChannels}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(2.0 * kConvBatch * kConvPositions * kConvDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  std::vector<float> want(x.size());
  RowMatrix patches(kConvChunk, kConvDepth);
  conv3x3_batch_rows(x.data(), kernel.data(), bias.data(), want.data(), patches, 0, kConvBatch * kConvPositions);
  check_close(state, p.output(0), want.data(), 1e-4);
}

void conv3x3_b8_56x56x64_eigen(benchmark::State& state) {
  const auto x = conv_input_batch(kConvBatch), kernel = conv_kernel(), bias = conv_bias();
  std::vector<float> y(x.size());
  const std::int64_t kBlocks = kConvBlocks * 4;
  std::vector<RowMatrix> patches(kBlocks, RowMatrix(kConvChunk, kConvDepth));
  const std::int64_t rows = kConvBatch * kConvPositions;
  for (auto _ : state) {
    twin_parallel(rows, kBlocks, [&](std::int64_t r0, std::int64_t r1) {
      conv3x3_batch_rows(x.data(), kernel.data(), bias.data(), y.data(),
                         patches[static_cast<std::size_t>(r0 * kBlocks / rows)], r0, r1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(2.0 * rows * kConvDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void gemm_same_flops_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("gemm_same_flops");
  Value x = b.parameter(Shape(DType::kF32, {kConvPositions, kConvDepth}));
  Value y = b.parameter(Shape(DType::kF32, {kConvDepth, kConvChannels}));
  const auto av = values(kConvPositions * kConvDepth, 1.0f, 0.2f), bv = conv_kernel();
  Program<cpu::ThreadPool> p(b, {b.dot(x, y)}, {av, bv}, {{kConvPositions, kConvDepth}, {kConvDepth, kConvChannels}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  RowMatrix want = Eigen::Map<const RowMatrix>(av.data(), kConvPositions, kConvDepth) *
                   Eigen::Map<const RowMatrix>(bv.data(), kConvDepth, kConvChannels);
  check_close(state, p.output(0), want.data(), 1e-4);
}

void gemm_same_flops_eigen(benchmark::State& state) {
  // One block of rows per thread, as pjrt_lite's dot kernel splits a product.
  const auto av = values(kConvPositions * kConvDepth, 1.0f, 0.2f), bv = conv_kernel();
  std::vector<float> out(static_cast<std::size_t>(kConvPositions * kConvChannels));
  Eigen::Map<const RowMatrix> k(bv.data(), kConvDepth, kConvChannels);
  for (auto _ : state) {
    twin_parallel(kConvPositions, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      Eigen::Map<RowMatrix>(out.data() + r0 * kConvChannels, r1 - r0, kConvChannels).noalias() =
          Eigen::Map<const RowMatrix>(av.data() + r0 * kConvDepth, r1 - r0, kConvDepth) * k;
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// ---- conv3x3_int8_56x56x64: conv3x3_56x56x64's convolution on s8 activations and kernel
// into s32 sums, as StableHLO's i8 convolution with an i32 result arrives (converts, then the
// convolution), without bias and relu: read its ops/s against conv3x3_56x56x64's flops/s. The
// twin: the same im2col chunks as int32, times the int32 kernel in Eigen.
// conv3x3_int8_7bit_56x56x64: the same with activations in [-64, 63] (quantized to 7 bits,
// as x86 int8 inference does), where CPUs without VNNI sum byte pairs exactly.

using IntMatrix = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Graph conv3x3_int8_graph() {
  GraphBuilder b("conv3x3_int8");
  Value x = b.parameter(Shape(DType::kS8, {1, kConvSize, kConvSize, kConvChannels}));
  Value k = b.parameter(Shape(DType::kS8, {3, 3, kConvChannels, kConvChannels}));
  return take(b.build({b.convolution(b.convert(x, DType::kS32), b.convert(k, DType::kS32), nhwc_conv3x3_attrs())}),
              "build");
}

void conv_int8_positions(const std::int8_t* x, const IntMatrix& kernel, std::int32_t* y, IntMatrix& patches,
                         std::int64_t p0, std::int64_t p1) {
  for (std::int64_t c0 = p0; c0 < p1; c0 += kConvChunk) {
    const std::int64_t n = std::min(kConvChunk, p1 - c0);
    im2col_chunk(x, patches.data(), c0, n);
    Eigen::Map<IntMatrix>(y + c0 * kConvChannels, n, kConvChannels).noalias() = patches.topRows(n) * kernel;
  }
}

/// The twin's kernel as an int32 [9 x 64, 64] matrix and its result, computed once.
IntMatrix int8_kernel_matrix(const Literal& k) {
  IntMatrix m(kConvDepth, kConvChannels);
  std::copy_n(k.data<std::int8_t>().data(), kConvDepth * kConvChannels, m.data());
  return m;
}

/// The activations: full-range s8, or (kSevenBit) each halved, rounded down, into [-64, 63].
template <bool kSevenBit>
Literal conv_int8_input() {
  Literal x = int8_literal({1, kConvSize, kConvSize, kConvChannels}, 3);
  if constexpr (kSevenBit)
    for (std::int8_t& v : x.data<std::int8_t>()) v = static_cast<std::int8_t>(v >> 1);
  return x;
}

template <bool kSevenBit>
void conv3x3_int8_56x56x64_pjrt_lite(benchmark::State& state) {
  const Literal x = conv_int8_input<kSevenBit>(), k = int8_literal({3, 3, kConvChannels, kConvChannels}, 4);
  Program<cpu::ThreadPool> p(conv3x3_int8_graph(), {x, k});
  for (auto _ : state) p.run();
  state.counters["ops"] = benchmark::Counter(2.0 * kConvPositions * kConvDepth * kConvChannels,
                                             benchmark::Counter::kIsIterationInvariantRate);
  std::vector<std::int32_t> want(static_cast<std::size_t>(kConvPositions * kConvChannels));
  IntMatrix patches(kConvChunk, kConvDepth);
  conv_int8_positions(x.data<std::int8_t>().data(), int8_kernel_matrix(k), want.data(), patches, 0, kConvPositions);
  const Literal got = p.output_literal(0);
  if (!std::equal(want.begin(), want.end(), got.data<std::int32_t>().begin()))
    state.SkipWithError("conv3x3_int8: the convolution differs from the twin's");
}

template <bool kSevenBit>
void conv3x3_int8_56x56x64_eigen(benchmark::State& state) {
  const Literal x = conv_int8_input<kSevenBit>(), k = int8_literal({3, 3, kConvChannels, kConvChannels}, 4);
  const IntMatrix kernel = int8_kernel_matrix(k);
  std::vector<std::int32_t> y(static_cast<std::size_t>(kConvPositions * kConvChannels));
  std::vector<IntMatrix> patches(kConvBlocks, IntMatrix(kConvChunk, kConvDepth));
  for (auto _ : state) {
    twin_parallel(kConvPositions, kConvBlocks, [&](std::int64_t p0, std::int64_t p1) {
      conv_int8_positions(x.data<std::int8_t>().data(), kernel, y.data(),
                          patches[static_cast<std::size_t>(p0 * kConvBlocks / kConvPositions)], p0, p1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["ops"] = benchmark::Counter(2.0 * kConvPositions * kConvDepth * kConvChannels,
                                             benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

void register_conv_workloads() {
  add_workload("conv3x3_56x56x64", conv3x3_56x56x64_pjrt_lite, conv3x3_56x56x64_eigen,
               benchmark::kMicrosecond);
  add_workload("conv3x3_b8_56x56x64", conv3x3_b8_56x56x64_pjrt_lite, conv3x3_b8_56x56x64_eigen,
               benchmark::kMicrosecond);
  add_workload("conv1x1_56x56x64", conv_layer_pjrt_lite<kConv1x1>, conv_layer_eigen<kConv1x1>,
               benchmark::kMicrosecond);
  add_workload("depthwise3x3_56x56x64", conv_layer_pjrt_lite<kDepthwise>, conv_layer_eigen<kDepthwise>,
               benchmark::kMicrosecond);
  add_workload("gemm_same_flops", gemm_same_flops_pjrt_lite, gemm_same_flops_eigen, benchmark::kMicrosecond);
  add_workload("conv3x3_int8_56x56x64", conv3x3_int8_56x56x64_pjrt_lite<false>, conv3x3_int8_56x56x64_eigen<false>,
               benchmark::kMicrosecond);
  add_workload("conv3x3_int8_7bit_56x56x64", conv3x3_int8_56x56x64_pjrt_lite<true>,
               conv3x3_int8_56x56x64_eigen<true>, benchmark::kMicrosecond);
}

std::vector<float> conv_reference(std::string_view workload) {
  std::vector<float> y;
  if (workload == "conv3x3_56x56x64") {
    y.resize(static_cast<std::size_t>(kConvPositions * kConvChannels));
    RowMatrix patches(kConvChunk, kConvDepth);
    conv_positions(conv_input().data(), conv_kernel().data(), conv_bias().data(), y.data(),
                   patches, 0, kConvPositions);
  } else if (workload == "conv3x3_b8_56x56x64") {
    y.resize(static_cast<std::size_t>(kConvBatch * kConvPositions * kConvChannels));
    RowMatrix patches(kConvChunk, kConvDepth);
    conv3x3_batch_rows(conv_input_batch(kConvBatch).data(), conv_kernel().data(), conv_bias().data(), y.data(),
                       patches, 0, kConvBatch * kConvPositions);
  } else if (workload == "conv1x1_56x56x64" || workload == "depthwise3x3_56x56x64") {
    const ConvLayer& layer = workload == "conv1x1_56x56x64" ? kConv1x1 : kDepthwise;
    y.resize(static_cast<std::size_t>(kConvPositions * kConvChannels));
    layer.positions(conv_input().data(), layer.kernel().data(), conv_bias().data(), y.data(), 0, kConvPositions);
  }
  return y;
}

}  // namespace pjrt_lite_bench
