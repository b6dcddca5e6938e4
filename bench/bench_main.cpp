// pjrt_lite's benchmarks. Every workload is registered as `<workload>/pjrt_lite`,
// `<workload>/eigen` (a hand-written twin doing the same work with the same threads) and, when
// the bench is built with Torch, `<workload>/libtorch` (bench/torch_peer.cpp), so that one run
// of the binary gives all of them and their ratios. bench/run.sh runs it and regenerates
// bench/RESULTS.md.
//
// This file holds the core workloads (per-call overhead, streaming, GEMM, the MLP and its
// gradient, compiling, round trips), the hooks of workloads.hpp and main; the model workloads
// are in layers.cpp, conv.cpp and models.cpp, the inline vs pooled sweeps in sweeps.cpp, and
// what they share (clients, Program, TwinPool) in common.hpp.
#include "common.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"

namespace pjrt_lite_bench {
namespace {

// ---- tiny_mul_add_4: y = x * 2 + 1 on 4 f32, inline execution: the per-call overhead.

void tiny_mul_add_4_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("tiny_mul_add_4");
  Value x = b.parameter(Shape(DType::kF32, {4}));
  Value y = b.add(b.multiply(x, b.broadcast_in_dim(b.constant(2.0f), {4}, {})),
                  b.broadcast_in_dim(b.constant(1.0f), {4}, {}));
  Program<cpu::InlineExecutor> p(b, {y}, {{1, 2, 3, 4}}, {{4}});
  for (auto _ : state) p.run();
  const float want[4] = {3, 5, 7, 9};
  check_close(state, p.output(0), want, 0);
}

// The kernel alone: a twin cannot do what the measured call does (a program looked up and
// run through an API), so this is the floor of the arithmetic, not a peer; LibTorch's op
// dispatch is the peer (torch_peer.cpp).
void tiny_mul_add_4_eigen(benchmark::State& state) {
  Eigen::ArrayXf x(4), y(4);
  x << 1, 2, 3, 4;
  for (auto _ : state) {
    benchmark::DoNotOptimize(x.data());  // x may have changed: the work cannot be hoisted
    y = x * 2.0f + 1.0f;
    benchmark::DoNotOptimize(y.data());  // and y is read: the work cannot be dropped
    benchmark::ClobberMemory();
  }
  const float want[4] = {3, 5, 7, 9};
  check_close(state, std::vector<float>(y.data(), y.data() + 4), want, 0);
}

// ---- axpy_16M and copy_16M: memory bound.

void axpy_16M_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("axpy_16M");
  Value x = b.parameter(Shape(DType::kF32, {k16M}));
  Value y = b.parameter(Shape(DType::kF32, {k16M}));
  Value z = b.parameter(Shape(DType::kF32, {k16M}));
  const auto& v = vectors();
  Program<cpu::ThreadPool> p(b, {b.add(b.multiply(x, y), z)}, {v.a, v.b, v.c},
                             {{k16M}, {k16M}, {k16M}});
  for (auto _ : state) p.run();
  state.SetBytesProcessed(state.iterations() * 4 * kVectorBytes);
  std::vector<float> want(static_cast<std::size_t>(k16M));
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = v.a[i] * v.b[i] + v.c[i];
  check_close(state, p.output(0), want.data(), 1e-6);
}

void axpy_16M_eigen(benchmark::State& state) {
  const auto& v = vectors();
  std::vector<float> out(static_cast<std::size_t>(k16M));
  for (auto _ : state) {
    twin_parallel(k16M, kElementwiseBlocks, [&](std::int64_t b, std::int64_t e) {
      Array(out.data() + b, e - b) =
          ConstArray(v.a.data() + b, e - b) * ConstArray(v.b.data() + b, e - b) +
          ConstArray(v.c.data() + b, e - b);
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 4 * kVectorBytes);
}

void copy_16M_pjrt_lite(benchmark::State& state) {
  // The program's output is a copy of its parameter (an output has memory of its own).
  GraphBuilder b("copy_16M");
  Value x = b.parameter(Shape(DType::kF32, {k16M}));
  Program<cpu::ThreadPool> p(b, {x}, {vectors().a}, {{k16M}});
  for (auto _ : state) p.run();
  state.SetBytesProcessed(state.iterations() * 2 * kVectorBytes);
  check_close(state, p.output(0), vectors().a.data(), 0);
}

void copy_16M_eigen(benchmark::State& state) {
  std::vector<float> out(static_cast<std::size_t>(k16M));
  const float* a = vectors().a.data();
  for (auto _ : state) {
    twin_parallel(k16M, kElementwiseBlocks, [&](std::int64_t b, std::int64_t e) {
      Array(out.data() + b, e - b) = ConstArray(a + b, e - b);
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kVectorBytes);
}

// ---- chain_16M: tanh(a * b + exp(-a)) * 0.5 + b, compute bound.

void chain_16M_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("chain_16M");
  Value x = b.parameter(Shape(DType::kF32, {k16M}));
  Value y = b.parameter(Shape(DType::kF32, {k16M}));
  Value half = b.broadcast_in_dim(b.constant(0.5f), {k16M}, {});
  Value out =
      b.add(b.multiply(b.tanh(b.add(b.multiply(x, y), b.exponential(b.negate(x)))), half), y);
  const auto& v = vectors();
  Program<cpu::ThreadPool> p(b, {out}, {v.a, v.b}, {{k16M}, {k16M}});
  for (auto _ : state) p.run();
  state.SetItemsProcessed(state.iterations() * k16M);
  std::vector<float> want(static_cast<std::size_t>(k16M));
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] = std::tanh(v.a[i] * v.b[i] + std::exp(-v.a[i])) * 0.5f + v.b[i];
  check_close(state, p.output(0), want.data(), 1e-5);
}

void chain_16M_eigen(benchmark::State& state) {
  const auto& v = vectors();
  std::vector<float> out(static_cast<std::size_t>(k16M));
  for (auto _ : state) {
    twin_parallel(k16M, kElementwiseBlocks, [&](std::int64_t b, std::int64_t e) {
      ConstArray x(v.a.data() + b, e - b), y(v.b.data() + b, e - b);
      Array(out.data() + b, e - b) = (x * y + (-x).exp()).tanh() * 0.5f + y;
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * k16M);
}

// ---- gemm_256 and gemm_1024: f32 matmul.

template <std::int64_t N>
void gemm_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("gemm");
  Value x = b.parameter(Shape(DType::kF32, {N, N}));
  Value y = b.parameter(Shape(DType::kF32, {N, N}));
  const auto av = gemm_lhs(N), bv = gemm_rhs(N);
  Program<cpu::ThreadPool> p(b, {b.dot(x, y)}, {av, bv}, {{N, N}, {N, N}});
  for (auto _ : state) p.run();
  state.counters["flops"] =
      benchmark::Counter(2.0 * N * N * N, benchmark::Counter::kIsIterationInvariantRate);
  RowMatrix want =
      Eigen::Map<const RowMatrix>(av.data(), N, N) * Eigen::Map<const RowMatrix>(bv.data(), N, N);
  check_close(state, p.output(0), want.data(), 1e-4);
}

template <std::int64_t N>
void gemm_eigen(benchmark::State& state) {
  // One block of rows per thread, as pjrt_lite's dot kernel splits a product.
  const auto av = gemm_lhs(N), bv = gemm_rhs(N);
  std::vector<float> out(static_cast<std::size_t>(N * N));
  Eigen::Map<const RowMatrix> b(bv.data(), N, N);
  for (auto _ : state) {
    twin_parallel(N, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      Eigen::Map<RowMatrix>(out.data() + r0 * N, r1 - r0, N).noalias() =
          Eigen::Map<const RowMatrix>(av.data() + r0 * N, r1 - r0, N) * b;
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * N * N * N, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- gemm_int8_256 and gemm_int8_1024: s8 x s8 -> s32 matmul, as StableHLO's i8
// dot_general with an i32 result arrives (converts, then the product); compare with
// gemm_256/gemm_1024, the f32 product of the same size. The twin multiplies the same values
// as int32 matrices in Eigen, one block of rows per thread. gemm_int8_7bit_*: the same with
// A's values in [-64, 63] (activations quantized to 7 bits, as x86 int8 inference does), where
// CPUs without VNNI can sum byte products in 16 bits exactly.

using IntMatrix = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Int8Map = Eigen::Map<const Eigen::Matrix<std::int8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

/// gemm_int8's A: full-range s8 values, or (kSevenBitA) each halved (rounded down), in [-64, 63].
template <std::int64_t N, bool kSevenBitA>
Literal int8_lhs() {
  Literal a = int8_matrix(N, 1);
  if constexpr (kSevenBitA)
    for (std::int8_t& v : a.data<std::int8_t>()) v = static_cast<std::int8_t>(v >> 1);
  return a;
}

template <std::int64_t N, bool kSevenBitA = false>
void gemm_int8_pjrt_lite(benchmark::State& state) {
  const Literal av = int8_lhs<N, kSevenBitA>(), bv = int8_matrix(N, 2);
  Program<cpu::ThreadPool> p(gemm_int8_graph(N), {av, bv});
  for (auto _ : state) p.run();
  state.counters["ops"] = benchmark::Counter(2.0 * N * N * N, benchmark::Counter::kIsIterationInvariantRate);
  const IntMatrix want = Int8Map(av.data<std::int8_t>().data(), N, N).cast<std::int32_t>() *
                         Int8Map(bv.data<std::int8_t>().data(), N, N).cast<std::int32_t>();
  const Literal got = p.output_literal(0);
  if (!std::equal(want.data(), want.data() + N * N, got.data<std::int32_t>().begin()))
    state.SkipWithError("gemm_int8: the product differs from Eigen's");
}

template <std::int64_t N, bool kSevenBitA = false>
void gemm_int8_eigen(benchmark::State& state) {
  const Literal av = int8_lhs<N, kSevenBitA>(), bv = int8_matrix(N, 2);
  IntMatrix out(N, N), a(N, N), b(N, N);
  for (auto _ : state) {
    twin_parallel(N, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      a.middleRows(r0, r1 - r0) = Int8Map(av.data<std::int8_t>().data() + r0 * N, r1 - r0, N).cast<std::int32_t>();
      b.middleRows(r0, r1 - r0) = Int8Map(bv.data<std::int8_t>().data() + r0 * N, r1 - r0, N).cast<std::int32_t>();
    });
    twin_parallel(N, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      out.middleRows(r0, r1 - r0).noalias() = a.middleRows(r0, r1 - r0) * b;
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["ops"] = benchmark::Counter(2.0 * N * N * N, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- qlinear_256x1024 and linear_256x1024 (workloads.hpp) as StableHLO text. The quantized
// twin does the same arithmetic by hand: quantize, an int32 product in Eigen, requantize in
// f64, dequantize.

constexpr const char* kQLinearStableHlo = R"(func.func @main(%x: tensor<256x1024xf32>, %w: tensor<1024x1024x!quant.uniform<i8:f32, 4.000000e-03>>) -> tensor<256x1024xf32> {
  %xq = stablehlo.uniform_quantize %x : (tensor<256x1024xf32>) -> tensor<256x1024x!quant.uniform<i8:f32, 2.000000e-02>>
  %y = stablehlo.dot_general %xq, %w, contracting_dims = [1] x [0] : (tensor<256x1024x!quant.uniform<i8:f32, 2.000000e-02>>, tensor<1024x1024x!quant.uniform<i8:f32, 4.000000e-03>>) -> tensor<256x1024x!quant.uniform<i8:f32, 5.000000e-01>>
  %r = stablehlo.uniform_dequantize %y : (tensor<256x1024x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
})";

constexpr const char* kLinearStableHlo = R"(func.func @main(%x: tensor<256x1024xf32>, %w: tensor<1024x1024xf32>) -> tensor<256x1024xf32> {
  %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<256x1024xf32>, tensor<1024x1024xf32>) -> tensor<256x1024xf32>
  return %y : tensor<256x1024xf32>
})";

/// The quantized twin's layer, rows [r0, r1): quantize, multiply in int32, requantize,
/// dequantize; `xq` and `sums` are the twin's buffers.
void qlinear_rows(const float* x, const IntMatrix& w, IntMatrix& xq, IntMatrix& sums, float* y, std::int64_t r0,
                  std::int64_t r1) {
  for (std::int64_t i = r0 * kQDepth; i < r1 * kQDepth; ++i)
    xq.data()[i] = static_cast<std::int32_t>(std::nearbyint(std::clamp(x[i] / kQScaleX, -128.0f, 127.0f)));
  sums.middleRows(r0, r1 - r0).noalias() = xq.middleRows(r0, r1 - r0) * w;
  const double multiplier = static_cast<double>(kQScaleX) * static_cast<double>(kQScaleW) / static_cast<double>(kQScaleY);
  for (std::int64_t i = r0 * kQCols; i < r1 * kQCols; ++i) {
    const double q = std::nearbyint(std::clamp(static_cast<double>(sums.data()[i]) * multiplier, -128.0, 127.0));
    y[i] = static_cast<float>(q) * kQScaleY;
  }
}

void qlinear_256x1024_pjrt_lite(benchmark::State& state) {
  const std::vector<float> x = qlinear_input();
  const Literal w = int8_literal({kQDepth, kQCols}, 5);  // the values of qlinear_weights()
  Program<cpu::ThreadPool> p(take(parse_stablehlo(kQLinearStableHlo), "parse"),
                             {take(Literal::from_span<float>(x, {kQRows, kQDepth}), "x"), w});
  for (auto _ : state) p.run();
  state.counters["ops"] = benchmark::Counter(2.0 * kQRows * kQDepth * kQCols, benchmark::Counter::kIsIterationInvariantRate);
  const IntMatrix wm = Int8Map(w.data<std::int8_t>().data(), kQDepth, kQCols).cast<std::int32_t>();
  IntMatrix xq(kQRows, kQDepth), sums(kQRows, kQCols);
  std::vector<float> want(static_cast<std::size_t>(kQRows * kQCols));
  qlinear_rows(x.data(), wm, xq, sums, want.data(), 0, kQRows);
  const Literal got = p.output_literal(0);
  const auto g = got.data<float>();
  check_close(state, std::vector<float>(g.begin(), g.end()), want.data(), 0.0);
}

void qlinear_256x1024_eigen(benchmark::State& state) {
  const std::vector<float> x = qlinear_input();
  const Literal w = int8_literal({kQDepth, kQCols}, 5);
  const IntMatrix wm = Int8Map(w.data<std::int8_t>().data(), kQDepth, kQCols).cast<std::int32_t>();
  IntMatrix xq(kQRows, kQDepth), sums(kQRows, kQCols);
  std::vector<float> y(static_cast<std::size_t>(kQRows * kQCols));
  for (auto _ : state) {
    twin_parallel(kQRows, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      qlinear_rows(x.data(), wm, xq, sums, y.data(), r0, r1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["ops"] = benchmark::Counter(2.0 * kQRows * kQDepth * kQCols, benchmark::Counter::kIsIterationInvariantRate);
}

/// The f32 layer's weights: the quantized layer's, dequantized.
std::vector<float> linear_weights() {
  std::vector<float> f;
  for (std::int8_t v : qlinear_weights()) f.push_back(static_cast<float>(v) * kQScaleW);
  return f;
}

void linear_256x1024_pjrt_lite(benchmark::State& state) {
  Program<cpu::ThreadPool> p(std::string_view(kLinearStableHlo), {qlinear_input(), linear_weights()},
                             {{kQRows, kQDepth}, {kQDepth, kQCols}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(2.0 * kQRows * kQDepth * kQCols, benchmark::Counter::kIsIterationInvariantRate);
  const std::vector<float> x = qlinear_input(), w = linear_weights();
  RowMatrix want = Eigen::Map<const RowMatrix>(x.data(), kQRows, kQDepth) * Eigen::Map<const RowMatrix>(w.data(), kQDepth, kQCols);
  check_close(state, p.output(0), want.data(), 1e-3);
}

void linear_256x1024_eigen(benchmark::State& state) {
  const std::vector<float> xv = qlinear_input(), wv = linear_weights();
  const Eigen::Map<const RowMatrix> x(xv.data(), kQRows, kQDepth), w(wv.data(), kQDepth, kQCols);
  RowMatrix out(kQRows, kQCols);
  for (auto _ : state) {
    twin_parallel(kQRows, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      out.middleRows(r0, r1 - r0).noalias() = x.middleRows(r0, r1 - r0) * w;
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(2.0 * kQRows * kQDepth * kQCols, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- mlp_b1 and mlp_b256: a 64-256-256-8 MLP, tanh after the hidden layers.

/// The MLP's forward pass on a [batch, 64] input; parameters x, w1, b1, w2, b2, w3, b3.
Value mlp_forward(GraphBuilder& b, std::int64_t batch) {
  Value x = b.parameter(Shape(DType::kF32, {batch, kIn}));
  Value w1 = b.parameter(Shape(DType::kF32, {kIn, kHidden}));
  Value b1 = b.parameter(Shape(DType::kF32, {kHidden}));
  Value w2 = b.parameter(Shape(DType::kF32, {kHidden, kHidden}));
  Value b2 = b.parameter(Shape(DType::kF32, {kHidden}));
  Value w3 = b.parameter(Shape(DType::kF32, {kHidden, kOut}));
  Value b3 = b.parameter(Shape(DType::kF32, {kOut}));
  Value h1 = b.tanh(b.add(b.dot(x, w1), b.broadcast_in_dim(b1, {batch, kHidden}, {1})));
  Value h2 = b.tanh(b.add(b.dot(h1, w2), b.broadcast_in_dim(b2, {batch, kHidden}, {1})));
  return b.add(b.dot(h2, w3), b.broadcast_in_dim(b3, {batch, kOut}, {1}));
}

/// h = tanh(h + b), b added to every row. In two steps: Eigen evaluates tanh of a row-wise
/// broadcast expression one scalar at a time, and of a plain array in packets (a third of
/// mlp_b256's twin went to scalar tanh when it was one expression).
void bias_tanh(RowMatrix& h, const Eigen::Map<const Row>& b) {
  h.rowwise() += b;
  h.array() = h.array().tanh();
}

/// The same forward pass with plain Eigen matrices on one thread, the hidden layers in `h1`
/// and `h2` (sized by the caller or on first use, then reused); the twins' work and the
/// check for every side.
void mlp_eigen(const float* x, std::int64_t batch, float* out, RowMatrix& h1, RowMatrix& h2) {
  const auto& w = mlp_weights();
  Eigen::Map<const RowMatrix> xm(x, batch, kIn), w1(w.w1.data(), kIn, kHidden),
      w2(w.w2.data(), kHidden, kHidden), w3(w.w3.data(), kHidden, kOut);
  Eigen::Map<const Row> b1(w.b1.data(), kHidden), b2(w.b2.data(), kHidden), b3(w.b3.data(), kOut);
  Eigen::Map<RowMatrix> y(out, batch, kOut);
  h1.resize(batch, kHidden);
  h2.resize(batch, kHidden);
  h1.noalias() = xm * w1;
  bias_tanh(h1, b1);
  h2.noalias() = h1 * w2;
  bias_tanh(h2, b2);
  y.noalias() = h2 * w3;
  y.rowwise() += b3;
}

template <class E, std::int64_t Batch>
void mlp_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("mlp");
  Value y = mlp_forward(b, Batch);
  const auto& w = mlp_weights();
  const auto x = mlp_input(Batch);
  Program<E> p(b, {y}, {x, w.w1, w.b1, w.w2, w.b2, w.w3, w.b3},
               {{Batch, kIn},
                {kIn, kHidden},
                {kHidden},
                {kHidden, kHidden},
                {kHidden},
                {kHidden, kOut},
                {kOut}});
  for (auto _ : state) p.run();
  std::vector<float> want(static_cast<std::size_t>(Batch * kOut));
  mlp_reference(x.data(), Batch, want.data());
  check_close(state, p.output(0), want.data(), 1e-4);
}

void mlp_b1_pjrt_lite(benchmark::State& state) { mlp_pjrt_lite<cpu::InlineExecutor, 1>(state); }

void mlp_b1_eigen(benchmark::State& state) {
  // Batch 1 is far below any threading threshold on both sides: one thread, row vectors.
  const auto& w = mlp_weights();
  const auto xv = mlp_input(1);
  Eigen::Map<const Row> x(xv.data(), kIn), b1(w.b1.data(), kHidden), b2(w.b2.data(), kHidden),
      b3(w.b3.data(), kOut);
  Eigen::Map<const RowMatrix> w1(w.w1.data(), kIn, kHidden), w2(w.w2.data(), kHidden, kHidden),
      w3(w.w3.data(), kHidden, kOut);
  Row h1(kHidden), h2(kHidden), y(kOut);
  for (auto _ : state) {
    benchmark::DoNotOptimize(xv.data());
    h1.noalias() = x * w1;
    h1 = (h1 + b1).array().tanh().matrix();
    h2.noalias() = h1 * w2;
    h2 = (h2 + b2).array().tanh().matrix();
    y.noalias() = h2 * w3;
    y += b3;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  std::vector<float> want(kOut);
  mlp_reference(xv.data(), 1, want.data());
  check_close(state, std::vector<float>(y.data(), y.data() + kOut), want.data(), 1e-5);
}

void mlp_b256_pjrt_lite(benchmark::State& state) { mlp_pjrt_lite<cpu::ThreadPool, 256>(state); }

void mlp_b256_eigen(benchmark::State& state) {
  // Each thread takes half of the batch through all three layers: no synchronization
  // between layers, the best a hand-written version can do.
  constexpr std::int64_t kBatch = 256;
  const auto xv = mlp_input(kBatch);
  std::vector<float> yv(kBatch * kOut);
  // Each block's hidden layers, sized once.
  std::vector<RowMatrix> h1(static_cast<std::size_t>(kThreads), RowMatrix(kBatch / kThreads, kHidden));
  std::vector<RowMatrix> h2 = h1;
  for (auto _ : state) {
    twin_parallel(kBatch, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      const auto t = static_cast<std::size_t>(r0 * kThreads / kBatch);
      mlp_eigen(xv.data() + r0 * kIn, r1 - r0, yv.data() + r0 * kOut, h1[t], h2[t]);
    });
    benchmark::DoNotOptimize(yv.data());
    benchmark::ClobberMemory();
  }
  std::vector<float> want(static_cast<std::size_t>(kBatch * kOut));
  mlp_reference(xv.data(), kBatch, want.data());
  check_close(state, yv, want.data(), 1e-4);
}

// ---- mlp_grad_b256: the gradient of 0.5 * sum((mlp(x) - t)^2) with respect to every weight,
// through the front end (jit of grad); the twin is hand-written backpropagation.

template <class T>
struct MlpParams {
  T w1, b1, w2, b2, w3, b3;
};

Tensor mlp_tensor(const MlpParams<Tensor>& p, const Tensor& x) {
  Tensor h1 = tanh(matmul(x, p.w1) + p.b1);
  Tensor h2 = tanh(matmul(h1, p.w2) + p.b2);
  return matmul(h2, p.w3) + p.b3;
}

/// Hand-written backpropagation of rows [x, x + rows): every activation, delta and gradient
/// in matrices sized once by the constructor and reused by every call.
struct MlpBackprop {
  explicit MlpBackprop(std::int64_t rows)
      : h1(rows, kHidden), h2(rows, kHidden), dz1(rows, kHidden), dz2(rows, kHidden),
        d(rows, kOut), gw1(kIn, kHidden), gw2(kHidden, kHidden), gw3(kHidden, kOut),
        gb1(kHidden), gb2(kHidden), gb3(kOut) {}

  void run(const float* x, const float* t) {
    const auto& w = mlp_weights();
    const std::int64_t rows = h1.rows();
    Eigen::Map<const RowMatrix> xm(x, rows, kIn), tm(t, rows, kOut),
        w1(w.w1.data(), kIn, kHidden), w2(w.w2.data(), kHidden, kHidden),
        w3(w.w3.data(), kHidden, kOut);
    Eigen::Map<const Row> b1(w.b1.data(), kHidden), b2(w.b2.data(), kHidden),
        b3(w.b3.data(), kOut);
    h1.noalias() = xm * w1;
    bias_tanh(h1, b1);
    h2.noalias() = h1 * w2;
    bias_tanh(h2, b2);
    d.noalias() = h2 * w3;
    d = (d.rowwise() + b3) - tm;
    gw3.noalias() = h2.transpose() * d;
    gb3 = d.colwise().sum();
    dz2.noalias() = d * w3.transpose();
    dz2.array() *= 1.0f - h2.array().square();
    gw2.noalias() = h1.transpose() * dz2;
    gb2 = dz2.colwise().sum();
    dz1.noalias() = dz2 * w2.transpose();
    dz1.array() *= 1.0f - h1.array().square();
    gw1.noalias() = xm.transpose() * dz1;
    gb1 = dz1.colwise().sum();
  }

  /// Adds another part's gradients to these.
  void accumulate(const MlpBackprop& o) {
    gw1 += o.gw1;
    gw2 += o.gw2;
    gw3 += o.gw3;
    gb1 += o.gb1;
    gb2 += o.gb2;
    gb3 += o.gb3;
  }

  RowMatrix h1, h2, dz1, dz2, d, gw1, gw2, gw3;
  Row gb1, gb2, gb3;
};

void mlp_grad_b256_pjrt_lite(benchmark::State& state) {
  if (kThreads == 1) {
    state.SkipWithError("runs on the pooled client only; PJRT_LITE_BENCH_THREADS=1 leaves it out");
    return;
  }
  auto client = make_client<cpu::ThreadPool>();
  const auto& w = mlp_weights();
  const auto x = mlp_input(kGradBatch), t = mlp_target(kGradBatch);
  auto upload = [&](const std::vector<float>& v, std::vector<std::int64_t> dims) {
    return take(client->buffer_from_host_buffer(std::span<const float>(v), dims), "upload");
  };
  MlpParams<cpu::Buffer<cpu::ThreadPool>> params{
      upload(w.w1, {kIn, kHidden}), upload(w.b1, {kHidden}),       upload(w.w2, {kHidden, kHidden}),
      upload(w.b2, {kHidden}),      upload(w.w3, {kHidden, kOut}), upload(w.b3, {kOut})};
  auto xb = upload(x, {kGradBatch, kIn}), tb = upload(t, {kGradBatch, kOut});
  auto g = jit(*client, grad([](const MlpParams<Tensor>& p, const Tensor& x, const Tensor& t) {
    return sum(square(mlp_tensor(p, x) - t)) * 0.5f;
  }));
  take(g.executable(params, xb, tb), "compile");
  std::vector<cpu::Buffer<cpu::ThreadPool>*> args{&params.w1, &params.b1, &params.w2, &params.b2,
                                                  &params.w3, &params.b3, &xb,        &tb};
  std::vector<cpu::Buffer<cpu::ThreadPool>> grads;
  ExecuteOptions options;
  options.mode = ExecutionMode::kSynchronous;
  for (auto _ : state) {
    Status s = g.execute(args, grads, options);
    if (!s.ok()) die(s, "execute");
  }
  // Check dW1, the end of the backward pass, against the twin's.
  std::vector<float> want_w1(static_cast<std::size_t>(kIn * kHidden));
  mlp_grad_w1_reference(x.data(), t.data(), kGradBatch, want_w1.data());
  Literal got = take(grads[0].to_literal().await(), "to_literal");
  std::vector<float> got_v(got.data<float>().begin(), got.data<float>().end());
  check_close(state, got_v, want_w1.data(), 1e-3);
}

void mlp_grad_b256_eigen(benchmark::State& state) {
  // Each thread backpropagates half of the batch into its own part; the parts' gradients are
  // then summed into the first, as pjrt_lite's products sum over the whole batch.
  const auto x = mlp_input(kGradBatch), t = mlp_target(kGradBatch);
  const std::int64_t kRows = kGradBatch / kThreads;
  std::vector<MlpBackprop> parts(kThreads, MlpBackprop(kRows));
  for (auto _ : state) {
    twin_parallel(kGradBatch, kThreads, [&](std::int64_t r0, std::int64_t) {
      parts[static_cast<std::size_t>(r0 / kRows)].run(x.data() + r0 * kIn, t.data() + r0 * kOut);
    });
    for (int k = 1; k < kThreads; ++k) parts[0].accumulate(parts[static_cast<std::size_t>(k)]);
    benchmark::DoNotOptimize(parts[0].gw1.data());
    benchmark::ClobberMemory();
  }
  std::vector<float> want_w1(static_cast<std::size_t>(kIn * kHidden));
  mlp_grad_w1_reference(x.data(), t.data(), kGradBatch, want_w1.data());
  check_close(state,
              std::vector<float>(parts[0].gw1.data(), parts[0].gw1.data() + parts[0].gw1.size()),
              want_w1.data(), 1e-3);
}


// ---- jit_call_tiny: a cache-hit call of a jitted y = x * 2 + 1 on 4 f32, buffers in and out,
// inline execution. Its difference to tiny_mul_add_4/pjrt_lite (the executable called
// directly) is jit's own per-call cost: the signature lookup.

void jit_call_tiny_pjrt_lite(benchmark::State& state) {
  auto client = make_client<cpu::InlineExecutor>();
  const std::vector<float> x{1, 2, 3, 4};
  auto arg =
      take(client->buffer_from_host_buffer(std::span<const float>(x), std::vector<std::int64_t>{4}),
           "upload");
  auto f = jit(*client, [](const Tensor& v) { return v * 2.0f + 1.0f; });
  take(f.executable(arg), "compile");
  cpu::Buffer<cpu::InlineExecutor>* args[] = {&arg};
  std::vector<cpu::Buffer<cpu::InlineExecutor>> out;
  ExecuteOptions options;
  options.mode = ExecutionMode::kSynchronous;
  for (auto _ : state) {
    Status s = f.execute(args, out, options);
    if (!s.ok()) die(s, "execute");
  }
  Literal l = take(out[0].to_literal().await(), "to_literal");
  const float want[4] = {3, 5, 7, 9};
  check_close(state, std::vector<float>(l.data<float>().begin(), l.data<float>().end()), want, 0);
}

// ---- compile_1000: compiling a 1000-op element-wise graph (no twin).

void compile_1000_pjrt_lite(benchmark::State& state) {
  constexpr int kOps = 1000;
  GraphBuilder b("compile_1000");
  Value x = b.parameter(Shape(DType::kF32, {1024}));
  Value p = b.parameter(Shape(DType::kF32, {1024}));
  Value v = x;
  // A cycle of four ops that no simplification removes.
  for (int i = 0; i < kOps; ++i) {
    switch (i % 4) {
      case 0: v = b.add(v, p); break;
      case 1: v = b.multiply(v, p); break;
      case 2: v = b.tanh(v); break;
      default: v = b.subtract(v, p); break;
    }
  }
  Graph graph = take(b.build({v}), "build");
  for (auto _ : state) {
    // A fresh client per compile: the compile cache would answer a second compile.
    state.PauseTiming();
    auto client = take(cpu::Client<cpu::InlineExecutor>::create(), "client");
    state.ResumeTiming();
    {
      auto exe = client->compile(graph);
      if (!exe.ok()) die(exe.status(), "compile");
      benchmark::DoNotOptimize(exe);
      state.PauseTiming();  // destroying the executable and the client is not compiling
    }
    client.reset();
    state.ResumeTiming();
  }
  state.counters["ops"] = benchmark::Counter(kOps, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- roundtrip_4: put 4 f32 on the device and read them back.

void roundtrip_4_pjrt_lite(benchmark::State& state) {
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 1}).value();
  const float host[4] = {1, 2, 3, 4};
  const std::int64_t dims[1] = {4};
  for (auto _ : state) {
    auto buffer = client->buffer_from_host_buffer(
        std::as_bytes(std::span<const float>(host)), DType::kF32, dims, std::nullopt,
        HostBufferSemantics::kImmutableOnlyDuringCall, nullptr, client->devices()[0]);
    StatusOr<Literal> back = buffer->to_literal().await();
    benchmark::DoNotOptimize(back.value().untyped_data());
  }
}

void roundtrip_4_eigen(benchmark::State& state) {
  const float host[4] = {1, 2, 3, 4};
  for (auto _ : state) {
    // The same work by hand: an aligned device copy, then an aligned host copy of it.
    benchmark::DoNotOptimize(host);
    Eigen::ArrayXf device = Eigen::Map<const Eigen::ArrayXf>(host, 4);
    Eigen::ArrayXf back = device;
    benchmark::DoNotOptimize(back.data());
    benchmark::ClobberMemory();
  }
}

}  // namespace

void register_core_workloads() {
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  using benchmark::kNanosecond;
  add_workload("tiny_mul_add_4", tiny_mul_add_4_pjrt_lite, tiny_mul_add_4_eigen, kNanosecond);
  add_workload("axpy_16M", axpy_16M_pjrt_lite, axpy_16M_eigen, kMillisecond);
  add_workload("copy_16M", copy_16M_pjrt_lite, copy_16M_eigen, kMillisecond);
  add_workload("chain_16M", chain_16M_pjrt_lite, chain_16M_eigen, kMillisecond);
  add_workload("gemm_256", gemm_pjrt_lite<256>, gemm_eigen<256>, kMicrosecond);
  add_workload("gemm_1024", gemm_pjrt_lite<1024>, gemm_eigen<1024>, kMillisecond);
  add_workload("gemm_int8_256", gemm_int8_pjrt_lite<256>, gemm_int8_eigen<256>, kMicrosecond);
  add_workload("gemm_int8_1024", gemm_int8_pjrt_lite<1024>, gemm_int8_eigen<1024>, kMillisecond);
  add_workload("gemm_int8_7bit_1024", gemm_int8_pjrt_lite<1024, true>, gemm_int8_eigen<1024, true>, kMillisecond);
  add_workload("qlinear_256x1024", qlinear_256x1024_pjrt_lite, qlinear_256x1024_eigen, kMicrosecond);
  add_workload("linear_256x1024", linear_256x1024_pjrt_lite, linear_256x1024_eigen, kMicrosecond);
  add_workload("mlp_b1", mlp_b1_pjrt_lite, mlp_b1_eigen, kMicrosecond);
  add_workload("mlp_b256", mlp_b256_pjrt_lite, mlp_b256_eigen, kMicrosecond);
  add_workload("mlp_grad_b256", mlp_grad_b256_pjrt_lite, mlp_grad_b256_eigen, kMicrosecond);
  add_workload("jit_call_tiny", jit_call_tiny_pjrt_lite, tiny_mul_add_4_eigen, kNanosecond);
  add_workload("compile_1000", compile_1000_pjrt_lite, nullptr, kMillisecond);
  add_workload("roundtrip_4", roundtrip_4_pjrt_lite, roundtrip_4_eigen, kNanosecond);
}

// ---- The hooks of workloads.hpp that need Eigen.

void mlp_reference(const float* x, std::int64_t batch, float* out) {
  RowMatrix h1, h2;
  mlp_eigen(x, batch, out, h1, h2);
}

void mlp_grad_w1_reference(const float* x, const float* t, std::int64_t batch, float* gw1) {
  MlpBackprop backprop(batch);
  backprop.run(x, t);
  Eigen::Map<RowMatrix>(gw1, kIn, kHidden) = backprop.gw1;
}

void check_close(benchmark::State& state, const float* got, const float* want, std::size_t n,
                 double tolerance, const char* who) {
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(double(got[i]) - double(want[i])) /
                                std::max(1.0, std::abs(double(want[i]))));
  state.counters["max_error"] = worst;
  if (!(worst <= tolerance)) state.SkipWithError(who);
}

std::vector<float> model_reference(std::string_view workload) {
  if (auto y = layer_reference(workload); !y.empty()) return y;
  if (auto y = conv_reference(workload); !y.empty()) return y;
  return models_reference(workload);
}

#ifndef PJRT_LITE_BENCH_TORCH
BenchFn torch_peer(std::string_view) { return nullptr; }
void torch_thread_policy(char**) {}
std::string torch_description() { return {}; }
#endif

}  // namespace pjrt_lite_bench

int main(int argc, char** argv) {
  using namespace pjrt_lite_bench;
  torch_thread_policy(argv);
  register_core_workloads();
  register_layer_workloads();
  register_conv_workloads();
  register_model_workloads();
  register_sweep_workloads();
  if (const std::string torch = torch_description(); !torch.empty())
    benchmark::AddCustomContext("libtorch", torch);
  // Every kernel family (element-wise loops, row kernels, GEMM, convolution, the rest) runs
  // the one build picked at run time (or kernels.cpp's, -march=native, with
  // PJRT_LITE_BENCH_NATIVE_KERNELS).
  benchmark::AddCustomContext("pjrt_lite kernels",
                              std::string(cpu::kernel_isa_name(cpu::available_kernel_isas().front())));
  benchmark::AddCustomContext("threads per threaded workload", std::to_string(kThreads));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
