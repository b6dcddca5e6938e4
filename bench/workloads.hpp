#pragma once
// What the benchmark's translation units share: each workload's sizes and input data, and the
// hooks between bench_main.cpp (pjrt_lite and the Eigen twins) and torch_peer.cpp (the
// LibTorch peers). Neither Eigen, pjrt_lite nor torch is included here, so torch's headers and
// ours are never compiled together.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pjrt_lite_bench {

/// Threads that compute in a threaded workload, on every side: the calling thread and
/// kThreads - 1 pool threads.
inline constexpr int kThreads = 2;

/// A deterministic input: scale * sin(0.001 * i + phase).
inline std::vector<float> values(std::int64_t n, float scale, float phase) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = scale * std::sin(0.001f * static_cast<float>(i) + phase);
  return v;
}

// ---- Streaming workloads: three vectors of 16M f32.

inline constexpr std::int64_t k16M = std::int64_t{1} << 24;
inline constexpr std::int64_t kVectorBytes = k16M * 4;

struct Vectors16M {
  std::vector<float> a = values(k16M, 1.0f, 0.0f), b = values(k16M, 0.5f, 1.0f),
                     c = values(k16M, 0.25f, 2.0f);
};
inline const Vectors16M& vectors() {
  static Vectors16M v;
  return v;
}

// ---- GEMM: the two operands of an N x N product, row-major.

inline std::vector<float> gemm_lhs(std::int64_t n) { return values(n * n, 1.0f, 0.0f); }
inline std::vector<float> gemm_rhs(std::int64_t n) { return values(n * n, 1.0f, 0.5f); }

// ---- The 64-256-256-8 MLP (tanh after the hidden layers), row-major weights [in, out].

inline constexpr std::int64_t kIn = 64, kHidden = 256, kOut = 8;
inline constexpr std::int64_t kGradBatch = 256;

struct MlpWeights {
  std::vector<float> w1 = values(kIn * kHidden, 0.1f, 0.1f), b1 = values(kHidden, 0.1f, 0.2f);
  std::vector<float> w2 = values(kHidden * kHidden, 0.06f, 0.3f), b2 = values(kHidden, 0.1f, 0.4f);
  std::vector<float> w3 = values(kHidden * kOut, 0.06f, 0.5f), b3 = values(kOut, 0.1f, 0.6f);
};
inline const MlpWeights& mlp_weights() {
  static MlpWeights w;
  return w;
}
inline std::vector<float> mlp_input(std::int64_t batch) { return values(batch * kIn, 1.0f, 0.7f); }
/// The regression target of mlp_grad_b256's loss 0.5 * sum((mlp(x) - t)^2).
inline std::vector<float> mlp_target(std::int64_t batch) { return values(batch * kOut, 0.5f, 0.9f); }

// ---- Model layers: layer norm and softmax over the rows of f32[256, 1024]; a 3x3
// convolution 64 -> 64 channels on 56x56, NHWC with an HWIO kernel, SAME padding, bias and
// relu, batch 1; self-attention of 128 tokens, model width 256, 4 heads of 64.

inline constexpr std::int64_t kRows = 256, kCols = 1024;
inline constexpr float kLayerNormEps = 1e-5f;
inline std::vector<float> rows_input() { return values(kRows * kCols, 2.0f, 0.3f); }
inline std::vector<float> layer_norm_gamma() { return values(kCols, 0.5f, 1.1f); }
inline std::vector<float> layer_norm_beta() { return values(kCols, 0.2f, 0.4f); }

inline constexpr std::int64_t kConvSize = 56, kConvChannels = 64, kConvTaps = 9;
inline std::vector<float> conv_input() {
  return values(kConvSize * kConvSize * kConvChannels, 1.0f, 0.2f);
}
/// [3, 3, 64 in, 64 out] (HWIO).
inline std::vector<float> conv_kernel() {
  return values(kConvTaps * kConvChannels * kConvChannels, 0.05f, 0.6f);
}
inline std::vector<float> conv_bias() { return values(kConvChannels, 0.1f, 0.8f); }

// More convolutions on the same 56x56x64 NHWC activations (each + bias + relu): the 3x3 at
// batch 8, a 1x1 (kernel [1, 1, 64, 64]) and a depthwise 3x3 (kernel [3, 3, 1, 64], 64 groups).
inline constexpr std::int64_t kConvBatch = 8;
inline std::vector<float> conv_input_batch(std::int64_t batch) {
  return values(batch * kConvSize * kConvSize * kConvChannels, 1.0f, 0.2f);
}
inline std::vector<float> conv1x1_kernel() { return values(kConvChannels * kConvChannels, 0.15f, 0.3f); }
inline std::vector<float> depthwise_kernel() { return values(kConvTaps * kConvChannels, 0.3f, 0.9f); }

inline constexpr std::int64_t kTokens = 128, kModel = 256, kHeads = 4, kHeadDim = kModel / kHeads;
inline std::vector<float> attention_input() { return values(kTokens * kModel, 1.0f, 0.25f); }
/// The projection `i` (0..3: query, key, value, output), [256 in, 256 out].
inline std::vector<float> attention_weight(int i) {
  return values(kModel * kModel, 0.0625f, 0.1f + 0.7f * static_cast<float>(i));
}

// ---- Hooks between the translation units.

/// The MLP's forward pass on `batch` rows of `x` into `out` (plain Eigen, one thread).
void mlp_reference(const float* x, std::int64_t batch, float* out);
/// dL/dW1 of mlp_grad_b256's loss over `batch` rows (plain Eigen, one thread), [kIn, kHidden].
void mlp_grad_w1_reference(const float* x, const float* t, std::int64_t batch, float* gw1);

/// The output of a model-layer workload (layer_norm_256x1024, softmax_256x1024,
/// conv3x3_56x56x64, attention_128x256), computed by plain Eigen on one thread.
std::vector<float> model_reference(std::string_view workload);

/// The largest |got - want| relative to max(1, |want|), as the `max_error` counter; skips the
/// benchmark with an error naming `who` beyond `tolerance`.
void check_close(benchmark::State& state, const float* got, const float* want, std::size_t n,
                 double tolerance, const char* who);

using BenchFn = void (*)(benchmark::State&);

/// The LibTorch peer of a workload, or nullptr when it has none or the bench was built
/// without Torch (torch_peer.cpp defines it; bench_main.cpp's fallback returns nullptr).
BenchFn torch_peer(std::string_view workload);
/// Called first in main: LibTorch's threads are OpenMP's (libgomp), whose idle threads poll
/// up to 300,000 pause instructions (about 10 ms here) before they sleep, where pjrt_lite's
/// and the twins' poll 50 us. On a shared machine that difference alone made torch's threaded
/// workloads 10-30 times slower, so unless GOMP_SPINCOUNT or OMP_WAIT_POLICY is set already,
/// this sets GOMP_SPINCOUNT to the pauses that take 50 us and re-executes the binary (libgomp
/// reads it when it loads). A no-op without Torch.
void torch_thread_policy(char** argv);
/// Torch's version, build options and thread settings, for the benchmark's context; empty
/// without Torch.
std::string torch_description();

}  // namespace pjrt_lite_bench
