#pragma once
// What the benchmark's translation units share: each workload's sizes and input data, and the
// hooks between bench_main.cpp (pjrt_lite and the Eigen twins) and torch_peer.cpp (the
// LibTorch peers). Neither Eigen, pjrt_lite nor torch is included here, so torch's headers and
// ours are never compiled together.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pjrt_lite_bench {

/// Threads that compute in a threaded workload, on every side: the calling thread and
/// kThreads - 1 pool threads. 2 unless the environment sets PJRT_LITE_BENCH_THREADS to a power
/// of two up to 64 (the workloads split batches of 256 rows evenly):
/// `PJRT_LITE_BENCH_THREADS=1` runs every threaded workload on the caller alone, the LibTorch
/// peers on one intra-op thread.
inline int bench_threads() {
  const char* text = std::getenv("PJRT_LITE_BENCH_THREADS");
  if (text == nullptr || *text == '\0') return 2;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1 || n > 64 || (n & (n - 1)) != 0) {
    std::fprintf(stderr, "PJRT_LITE_BENCH_THREADS=%s: want 1, 2, 4, 8, 16, 32 or 64 threads\n", text);
    std::exit(2);
  }
  return static_cast<int>(n);
}
inline const int kThreads = bench_threads();

/// The process's one T, built on first use: the inputs are large, and a run filtered to a few
/// workloads builds only theirs.
template <class T>
const T& built_once() {
  static T t;
  return t;
}

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
inline const Vectors16M& vectors() { return built_once<Vectors16M>(); }

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
inline const MlpWeights& mlp_weights() { return built_once<MlpWeights>(); }
inline std::vector<float> mlp_input(std::int64_t batch) { return values(batch * kIn, 1.0f, 0.7f); }
/// The regression target of mlp_grad_b256's loss 0.5 * sum((mlp(x) - t)^2).
inline std::vector<float> mlp_target(std::int64_t batch) { return values(batch * kOut, 0.5f, 0.9f); }

// ---- qlinear_256x1024 and linear_256x1024: a linear layer [256, 1024] x [1024, 1024],
// quantized as an int8 inference export writes it (activations per tensor, scale kQScaleX;
// weights stored as s8, scale kQScaleW; the product requantized to s8, scale kQScaleY, then
// dequantized; every zero point 0), and the same layer in f32 on the dequantized weights.

inline constexpr std::int64_t kQRows = 256, kQDepth = 1024, kQCols = 1024;
inline constexpr float kQScaleX = 0.02f, kQScaleW = 0.004f, kQScaleY = 0.5f;

/// s8 values in [-128, 127], `n` of them, a fixed pattern per `seed`.
inline std::vector<std::int8_t> int8_values(std::int64_t n, int seed) {
  std::vector<std::int8_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<std::int8_t>((i * (2 * seed + 7) + seed) % 256 - 128);
  return v;
}
/// The layer's activations in [-1, 1], a fixed pattern, [kQRows, kQDepth].
inline std::vector<float> qlinear_input() {
  std::vector<float> x(static_cast<std::size_t>(kQRows * kQDepth));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<std::int64_t>(i * 37 % 2001) - 1000) / 1000.0f;
  return x;
}
/// The layer's stored weights, [kQDepth in, kQCols out].
inline std::vector<std::int8_t> qlinear_weights() { return int8_values(kQDepth * kQCols, 5); }

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
/// attention_512x256's tokens (same width and heads).
inline constexpr std::int64_t kLongTokens = 512;
/// "attention_128x256", "attention_512x256".
inline std::string attention_name(std::int64_t tokens) {
  return "attention_" + std::to_string(tokens) + "x" + std::to_string(kModel);
}
inline std::vector<float> attention_input(std::int64_t tokens = kTokens) {
  return values(tokens * kModel, 1.0f, 0.25f);
}
/// The projection `i` (0..3: query, key, value, output), [256 in, 256 out].
inline std::vector<float> attention_weight(int i) {
  return values(kModel * kModel, 0.0625f, 0.1f + 0.7f * static_cast<float>(i));
}

// ---- RMS norm over the rows of f32[256, 1024]: x * rsqrt(mean(x^2) + eps) * gamma.

inline constexpr float kRmsNormEps = 1e-6f;
inline std::vector<float> rms_norm_gamma() { return values(kCols, 0.5f, 0.9f); }

// ---- ResNet basic block, batch 1, NHWC, 56x56x64: conv3x3 -> batch norm -> relu -> conv3x3
// -> batch norm -> + input -> relu. The convolutions have no bias (as in ResNet); the batch
// norms are in inference form, their statistics and affine parameters given per channel.

inline constexpr float kBatchNormEps = 1e-5f;
/// The block's convolution `i` (0, 1), HWIO [3, 3, 64, 64].
inline std::vector<float> resnet_kernel(int i) {
  return values(kConvTaps * kConvChannels * kConvChannels, 0.05f, 0.6f + 0.9f * static_cast<float>(i));
}
/// Batch norm `i` (0, 1) of the block: y = (x - mean) / sqrt(var + eps) * gamma + beta.
struct BatchNorm {
  explicit BatchNorm(int i)
      : gamma(values(kConvChannels, 0.5f, 0.3f + float(i))), beta(values(kConvChannels, 0.2f, 0.7f + float(i))),
        mean(values(kConvChannels, 0.3f, 1.3f + float(i))), var(values(kConvChannels, 0.4f, 1.9f + float(i))) {
    for (float& v : var) v += 1.0f;  // in [0.6, 1.4]
  }
  /// The per-channel scale and shift the inference form applies: y = x * scale + shift.
  std::vector<float> scale() const {
    std::vector<float> s(gamma.size());
    for (std::size_t c = 0; c < s.size(); ++c) s[c] = gamma[c] / std::sqrt(var[c] + kBatchNormEps);
    return s;
  }
  std::vector<float> shift() const {
    const std::vector<float> s = scale();
    std::vector<float> t(beta.size());
    for (std::size_t c = 0; c < t.size(); ++c) t[c] = beta[c] - mean[c] * s[c];
    return t;
  }
  std::vector<float> gamma, beta, mean, var;
};

// ---- One LSTM cell step: gates = x W + h U + b ([32, 2048], in the order input, forget,
// cell, output, as torch::nn::LSTMCell), c' = sigmoid(f) c + sigmoid(i) tanh(g),
// h' = sigmoid(o) tanh(c'). W and U row-major [in, 4 * hidden].

inline constexpr std::int64_t kLstmBatch = 32, kLstmInput = 512, kLstmHidden = 512,
                              kLstmGates = 4 * kLstmHidden;
inline std::vector<float> lstm_x() { return values(kLstmBatch * kLstmInput, 1.0f, 0.15f); }
inline std::vector<float> lstm_h() { return values(kLstmBatch * kLstmHidden, 0.8f, 0.45f); }
inline std::vector<float> lstm_c() { return values(kLstmBatch * kLstmHidden, 1.0f, 0.85f); }
inline std::vector<float> lstm_w() { return values(kLstmInput * kLstmGates, 0.04f, 0.1f); }
inline std::vector<float> lstm_u() { return values(kLstmHidden * kLstmGates, 0.04f, 1.1f); }
inline std::vector<float> lstm_b() { return values(kLstmGates, 0.1f, 2.1f); }

// ---- A post-norm transformer encoder layer, 128 tokens, width 256, 4 heads, FFN 1024:
// y1 = layer_norm(x + attention(x)) (attention_128x256's projections, no biases),
// y = layer_norm(y1 + gelu(y1 W1 + b1) W2 + b2), gelu in its tanh form
// (0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), BERT's and GPT-2's).

inline constexpr std::int64_t kFfn = 1024;
inline std::vector<float> encoder_w1() { return values(kModel * kFfn, 0.0625f, 3.1f); }
inline std::vector<float> encoder_b1() { return values(kFfn, 0.1f, 3.3f); }
inline std::vector<float> encoder_w2() { return values(kFfn * kModel, 0.03f, 3.7f); }
inline std::vector<float> encoder_b2() { return values(kModel, 0.1f, 3.9f); }
/// Layer norm `i` (0, 1) of the layer, [256].
inline std::vector<float> encoder_gamma(int i) { return values(kModel, 0.5f, 4.1f + float(i)); }
inline std::vector<float> encoder_beta(int i) { return values(kModel, 0.2f, 4.5f + float(i)); }

// ---- Sweeps: sweep_mul_<n> (x * y) and sweep_sum_<n> (the sum over the last dimension) of
// f32[n / 1024, 1024], n = 4K, 64K, 256K and 1M elements.

inline constexpr std::int64_t kSweepCols = 1024;
inline constexpr std::int64_t kSweepSizes[] = {4096, 65536, 262144, 1048576};
inline std::vector<float> sweep_x(std::int64_t n) { return values(n, 1.0f, 0.35f); }
inline std::vector<float> sweep_y(std::int64_t n) { return values(n, 1.0f, 1.35f); }
/// "4K", "64K", "256K", "1M".
inline std::string sweep_size_name(std::int64_t n) {
  return n >= (1 << 20) ? std::to_string(n >> 20) + "M" : std::to_string(n >> 10) + "K";
}

// ---- Hooks between the translation units.

/// The MLP's forward pass on `batch` rows of `x` into `out` (plain Eigen, one thread).
void mlp_reference(const float* x, std::int64_t batch, float* out);
/// dL/dW1 of mlp_grad_b256's loss over `batch` rows (plain Eigen, one thread), [kIn, kHidden].
void mlp_grad_w1_reference(const float* x, const float* t, std::int64_t batch, float* gw1);

/// The output of a model workload (layer_norm_256x1024, softmax_256x1024, rms_norm_256x1024,
/// conv3x3_56x56x64, attention_128x256, attention_512x256, resnet_block_56x56x64,
/// transformer_encoder_128x256; for lstm_cell_b32_h512 h' then c', concatenated), computed by
/// plain Eigen on one thread; empty for another name.
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
