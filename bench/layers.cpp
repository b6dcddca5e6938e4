// Row-wise layers and self-attention: layer_norm_256x1024, softmax_256x1024,
// rms_norm_256x1024, attention_128x256 and attention_512x256. pjrt_lite runs the graph a
// framework would export for the layer (rms_norm from StableHLO text, as JAX prints it); the
// twin is the layer written by hand over the same rows or heads on the same threads.
#include "common.hpp"

namespace pjrt_lite_bench {
namespace {

void layer_norm_256x1024_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("layer_norm");
  const std::vector<std::int64_t> dims{kRows, kCols};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value gamma = b.parameter(Shape(DType::kF32, {kCols}));
  Value beta = b.parameter(Shape(DType::kF32, {kCols}));
  Value y = layer_norm_graph(b, x, gamma, beta, kRows, kCols, kLayerNormEps);
  Program<cpu::ThreadPool> p(b, {y}, {rows_input(), layer_norm_gamma(), layer_norm_beta()},
                             {dims, {kCols}, {kCols}});
  for (auto _ : state) p.run();
  check_close(state, p.output(0), model_reference("layer_norm_256x1024").data(), 1e-5);
}

void layer_norm_256x1024_eigen(benchmark::State& state) {
  const auto x = rows_input(), gamma = layer_norm_gamma(), beta = layer_norm_beta();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    twin_parallel(kRows, kElementwiseBlocks, [&](std::int64_t r0, std::int64_t r1) {
      layer_norm_rows(x.data(), gamma.data(), beta.data(), y.data(), kCols, kLayerNormEps, r0, r1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  check_close(state, y, model_reference("layer_norm_256x1024").data(), 1e-5);
}

void softmax_256x1024_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("softmax");
  const std::vector<std::int64_t> dims{kRows, kCols};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Program<cpu::ThreadPool> p(b, {softmax_last(b, x, dims)}, {rows_input()}, {dims});
  for (auto _ : state) p.run();
  check_close(state, p.output(0), model_reference("softmax_256x1024").data(), 1e-6);
}

void softmax_256x1024_eigen(benchmark::State& state) {
  const auto x = rows_input();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    twin_parallel(kRows, kElementwiseBlocks, [&](std::int64_t r0, std::int64_t r1) {
      softmax_rows(x.data(), y.data(), kCols, r0, r1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  check_close(state, y, model_reference("softmax_256x1024").data(), 1e-6);
}

// ---- rms_norm_256x1024: x * rsqrt(mean(x^2) + eps) * gamma over the rows of f32[256, 1024],
// compiled from the StableHLO text that jax.jit(rms_norm).lower(x, gamma).as_text() prints
// for
//   def rms_norm(x, gamma):
//     return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * gamma
// (jnp.mean divides by the count; keepdims reshapes to [256, 1] before the broadcast).

constexpr const char* kRmsNormStableHlo = R"(module @jit_rms_norm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<256x1024xf32>, %arg1: tensor<1024xf32>) -> (tensor<256x1024xf32> {jax.result_info = ""}) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<256x1024xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<256x1024xf32>, tensor<f32>) -> tensor<256xf32>
    %2 = stablehlo.reshape %1 : (tensor<256xf32>) -> tensor<256x1xf32>
    %cst_0 = stablehlo.constant dense<1.024000e+03> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<256x1xf32>
    %4 = stablehlo.divide %2, %3 : tensor<256x1xf32>
    %cst_1 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<256x1xf32>
    %6 = stablehlo.add %4, %5 : tensor<256x1xf32>
    %7 = stablehlo.rsqrt %6 : tensor<256x1xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<256x1xf32>) -> tensor<256x1024xf32>
    %9 = stablehlo.multiply %arg0, %8 : tensor<256x1024xf32>
    %10 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<1024xf32>) -> tensor<256x1024xf32>
    %11 = stablehlo.multiply %9, %10 : tensor<256x1024xf32>
    return %11 : tensor<256x1024xf32>
  }
}
)";

/// RMS norm of rows [r0, r1) of x [.., kCols].
void rms_norm_rows(const float* x, const float* gamma, float* y, std::int64_t r0, std::int64_t r1) {
  ConstArray g(gamma, kCols);
  for (std::int64_t r = r0; r < r1; ++r) {
    ConstArray row(x + r * kCols, kCols);
    const float scale = 1.0f / std::sqrt(row.square().mean() + kRmsNormEps);
    Array(y + r * kCols, kCols) = row * scale * g;
  }
}

void rms_norm_256x1024_pjrt_lite(benchmark::State& state) {
  Program<cpu::ThreadPool> p(std::string_view(kRmsNormStableHlo), {rows_input(), rms_norm_gamma()},
                             {{kRows, kCols}, {kCols}});
  for (auto _ : state) p.run();
  check_close(state, p.output(0), model_reference("rms_norm_256x1024").data(), 1e-5);
}

void rms_norm_256x1024_eigen(benchmark::State& state) {
  const auto x = rows_input(), gamma = rms_norm_gamma();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    twin_parallel(kRows, kElementwiseBlocks, [&](std::int64_t r0, std::int64_t r1) {
      rms_norm_rows(x.data(), gamma.data(), y.data(), r0, r1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  check_close(state, y, model_reference("rms_norm_256x1024").data(), 1e-5);
}

// ---- attention_128x256 and attention_512x256: self-attention of 128 or 512 tokens, width
// 256, 4 heads of 64 (four projections without biases, softmax over the keys).

template <std::int64_t Tokens>
void attention_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("attention");
  Value x = b.parameter(Shape(DType::kF32, {Tokens, kModel}));
  Value w[4];
  for (Value& wi : w) wi = b.parameter(Shape(DType::kF32, {kModel, kModel}));
  std::vector<std::vector<float>> args{attention_input(Tokens)};
  std::vector<std::vector<std::int64_t>> dims{{Tokens, kModel}};
  for (int i = 0; i < 4; ++i) {
    args.push_back(attention_weight(i));
    dims.push_back({kModel, kModel});
  }
  Program<cpu::ThreadPool> p(b, {attention_graph(b, x, w, Tokens)}, args, dims);
  for (auto _ : state) p.run();
  check_close(state, p.output(0), model_reference(attention_name(Tokens)).data(), 1e-4);
}

template <std::int64_t Tokens>
void attention_eigen(benchmark::State& state) {
  const auto x = attention_input(Tokens);
  Attention a(Tokens);
  std::vector<float> y(static_cast<std::size_t>(Tokens * kModel));
  for (auto _ : state) {
    a.run(x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  check_close(state, y, model_reference(attention_name(Tokens)).data(), 1e-4);
}

}  // namespace

void register_layer_workloads() {
  using benchmark::kMicrosecond;
  add_workload("layer_norm_256x1024", layer_norm_256x1024_pjrt_lite, layer_norm_256x1024_eigen,
               kMicrosecond);
  add_workload("softmax_256x1024", softmax_256x1024_pjrt_lite, softmax_256x1024_eigen, kMicrosecond);
  add_workload("rms_norm_256x1024", rms_norm_256x1024_pjrt_lite, rms_norm_256x1024_eigen,
               kMicrosecond);
  add_workload("attention_128x256", attention_pjrt_lite<kTokens>, attention_eigen<kTokens>,
               kMicrosecond);
  add_workload("attention_512x256", attention_pjrt_lite<kLongTokens>,
               attention_eigen<kLongTokens>, kMicrosecond);
}

std::vector<float> layer_reference(std::string_view workload) {
  std::vector<float> y;
  if (workload == "layer_norm_256x1024" || workload == "softmax_256x1024" ||
      workload == "rms_norm_256x1024") {
    const auto x = rows_input();
    y.resize(x.size());
    if (workload == "softmax_256x1024")
      softmax_rows(x.data(), y.data(), kCols, 0, kRows);
    else if (workload == "rms_norm_256x1024")
      rms_norm_rows(x.data(), rms_norm_gamma().data(), y.data(), 0, kRows);
    else
      layer_norm_rows(x.data(), layer_norm_gamma().data(), layer_norm_beta().data(), y.data(),
                      kCols, kLayerNormEps, 0, kRows);
  } else if (workload == attention_name(kTokens) || workload == attention_name(kLongTokens)) {
    const std::int64_t tokens = workload == attention_name(kTokens) ? kTokens : kLongTokens;
    y.resize(static_cast<std::size_t>(tokens * kModel));
    Attention(tokens).run_serial(attention_input(tokens).data(), y.data());
  }
  return y;
}

}  // namespace pjrt_lite_bench
