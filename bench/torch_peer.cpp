// The LibTorch peers of pjrt_lite's benchmarks: `<workload>/libtorch`, what a C++ user would
// write with LibTorch instead of pjrt_lite for the same work on the same data (workloads.hpp).
// Built only when CMake finds Torch, in a translation unit of its own, so torch's headers and
// flags never meet pjrt_lite's (bench/CMakeLists.txt).
//
// How the peers are written: eager ATen ops, with outputs and temporaries allocated before the
// timing loop and written by the `_out` and in-place forms of the ops (the twins' buffer
// reuse); inference under torch::NoGradGuard; the gradient through autograd
// (torch::autograd::grad), as a LibTorch user computes one. Torch runs on as many threads as
// pjrt_lite's client computes on: torch::set_num_threads(n) before each benchmark, n =
// kThreads for the threaded workloads and 1 for the inline ones. That sets OpenMP's thread
// count, which ATen's parallel loops and an OpenMP build of the BLAS (Debian's
// libopenblas0-openmp) both follow; inter-op threads are not used (nothing runs
// asynchronously) and are set to one. OpenMP's idle threads poll as long as pjrt_lite's do
// before they sleep, and an OpenBLAS older than the CPU runs the kernels of the newest core
// it has that the CPU runs (torch_thread_policy below).
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/jit.h>
#include <torch/script.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "workloads.hpp"

namespace pjrt_lite_bench {
namespace {

/// A tensor of its own holding `v` with shape `dims` (torch's allocator, 64-byte aligned), as
/// pjrt_lite's side uploads its arguments into buffers of its own.
at::Tensor tensor(const std::vector<float>& v, at::IntArrayRef dims) {
  return torch::from_blob(const_cast<float*>(v.data()), dims, at::kFloat).clone();
}

void use_threads(int n) { at::set_num_threads(n); }

void check(benchmark::State& state, const at::Tensor& got, const float* want, double tolerance) {
  const at::Tensor c = got.contiguous();
  check_close(state, c.data_ptr<float>(), want, static_cast<std::size_t>(c.numel()), tolerance,
              "libtorch disagrees with the reference");
}

// ---- tiny_mul_add_4: the program's two ops as two op calls into a preallocated output:
// what torch's per-op dispatch costs for the per-call overhead pjrt_lite measures.

void tiny_mul_add_4(benchmark::State& state) {
  use_threads(1);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor({1, 2, 3, 4}, {4});
  const at::Tensor two = at::scalar_tensor(2.0f);
  at::Tensor y = at::empty({4});
  for (auto _ : state) {
    at::mul_out(y, x, two);
    y.add_(1.0f);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  const float want[4] = {3, 5, 7, 9};
  check(state, y, want, 0);
}

// ---- jit_call_tiny: a call of a TorchScript function (torch::jit::compile), torch's way of
// calling a compiled function from C++; the result is a new tensor each call.

void jit_call_tiny(benchmark::State& state) {
  use_threads(1);
  torch::NoGradGuard no_grad;
  auto unit = torch::jit::compile("def f(x):\n    return x * 2.0 + 1.0\n");
  torch::jit::Function& f = unit->get_function("f");
  const at::Tensor x = tensor({1, 2, 3, 4}, {4});
  std::vector<c10::IValue> stack;
  for (int i = 0; i < 10; ++i) {  // the profiling executor optimizes after its first runs
    stack.assign(1, x);
    f.run(stack);
  }
  for (auto _ : state) {
    stack.assign(1, x);
    f.run(stack);
    benchmark::DoNotOptimize(stack.back().toTensor().data_ptr());
  }
  const float want[4] = {3, 5, 7, 9};
  check(state, stack.back().toTensor(), want, 0);
}

// ---- axpy_16M, copy_16M, chain_16M: one fused op where torch has one (addcmul, copy_), the
// chain as its six element-wise ops in place on two preallocated temporaries.

void axpy_16M(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const auto& v = vectors();
  const at::Tensor a = tensor(v.a, {k16M}), b = tensor(v.b, {k16M}), c = tensor(v.c, {k16M});
  at::Tensor out = at::empty({k16M});
  for (auto _ : state) {
    at::addcmul_out(out, c, a, b);  // c + a * b
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 4 * kVectorBytes);
  std::vector<float> want(static_cast<std::size_t>(k16M));
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = v.a[i] * v.b[i] + v.c[i];
  check(state, out, want.data(), 1e-6);
}

void copy_16M(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor a = tensor(vectors().a, {k16M});
  at::Tensor out = at::empty({k16M});
  for (auto _ : state) {
    out.copy_(a);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kVectorBytes);
  check(state, out, vectors().a.data(), 0);
}

void chain_16M(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const auto& v = vectors();
  const at::Tensor a = tensor(v.a, {k16M}), b = tensor(v.b, {k16M});
  at::Tensor t = at::empty({k16M}), e = at::empty({k16M}), out = at::empty({k16M});
  for (auto _ : state) {
    at::mul_out(t, a, b);
    at::neg_out(e, a);
    e.exp_();
    t.add_(e).tanh_();
    at::add_out(out, b, t, 0.5);  // b + 0.5 * t
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * k16M);
  std::vector<float> want(static_cast<std::size_t>(k16M));
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] = std::tanh(v.a[i] * v.b[i] + std::exp(-v.a[i])) * 0.5f + v.b[i];
  check(state, out, want.data(), 1e-5);
}

// ---- gemm_256, gemm_1024: at::mm_out (the BLAS's sgemm).

template <std::int64_t N>
void gemm(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const auto av = gemm_lhs(N), bv = gemm_rhs(N);
  const at::Tensor a = tensor(av, {N, N}), b = tensor(bv, {N, N});
  at::Tensor out = at::empty({N, N});
  for (auto _ : state) {
    at::mm_out(out, a, b);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * N * N * N, benchmark::Counter::kIsIterationInvariantRate);
  // The reference: a double-precision product of a few rows.
  std::vector<float> want(static_cast<std::size_t>(4 * N));
  at::Tensor got = out.narrow(0, 0, 4);
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < N; ++k) s += double(av[i * N + k]) * double(bv[k * N + j]);
      want[static_cast<std::size_t>(i * N + j)] = static_cast<float>(s);
    }
  check(state, got, want.data(), 1e-4);
}

// ---- qlinear_256x1024: the quantized layer as a LibTorch user runs it. quantize_per_tensor
// (quint8 with zero point 64: the s8 values shifted, which x86's quantized kernels take; the
// activations, within [-50, 50] at scale kQScaleX, then fit 7 bits, [14, 114], as PyTorch's
// reduce_range keeps them on x86: its AVX2 kernels multiply u8 by s8 in 16-bit pair sums,
// which saturate with zero point 128, 178 x 127 x 2 > 32767; the same quantized values either way),
// quantized::linear on the prepacked s8 weights ([out, in]; requantized to quint8, scale
// kQScaleY, zero point 128), dequantize. The engine: oneDNN where this LibTorch has it, else
// QNNPACK, else FBGEMM. Quantized ops have no `_out` forms, so each iteration allocates its
// three results. linear_256x1024: at::mm_out on the dequantized weights.

/// Sets the engine the quantized peers run on for this process and names it in the
/// benchmark's label; false, with the benchmark skipped, when this LibTorch has none.
bool use_quantized_engine(benchmark::State& state) {
  const auto& engines = at::globalContext().supportedQEngines();
  for (at::QEngine e : {at::QEngine::ONEDNN, at::QEngine::QNNPACK, at::QEngine::FBGEMM})
    if (std::find(engines.begin(), engines.end(), e) != engines.end()) {
      at::globalContext().setQEngine(e);
      state.SetLabel(c10::toString(e));
      return true;
    }
  state.SkipWithError("this LibTorch has no quantized engine");
  return false;
}

/// The layer's result computed in plain loops: quantize, exact integer sums, requantize in
/// f64, dequantize (the arithmetic of bench_main.cpp's twin).
std::vector<float> qlinear_reference(const std::vector<float>& x, const std::vector<std::int8_t>& w) {
  std::vector<std::int32_t> xq(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    xq[i] = static_cast<std::int32_t>(std::nearbyint(std::clamp(x[i] / kQScaleX, -128.0f, 127.0f)));
  const double multiplier = double(kQScaleX) * double(kQScaleW) / double(kQScaleY);
  std::vector<float> y(static_cast<std::size_t>(kQRows * kQCols));
  std::vector<std::int64_t> sums(static_cast<std::size_t>(kQCols));
  for (std::int64_t i = 0; i < kQRows; ++i) {
    std::fill(sums.begin(), sums.end(), 0);
    for (std::int64_t k = 0; k < kQDepth; ++k) {
      const std::int64_t a = xq[static_cast<std::size_t>(i * kQDepth + k)];
      const std::int8_t* row = w.data() + k * kQCols;
      for (std::int64_t j = 0; j < kQCols; ++j) sums[static_cast<std::size_t>(j)] += a * row[j];
    }
    for (std::int64_t j = 0; j < kQCols; ++j) {
      const double q = std::nearbyint(std::clamp(double(sums[static_cast<std::size_t>(j)]) * multiplier, -128.0, 127.0));
      y[static_cast<std::size_t>(i * kQCols + j)] = static_cast<float>(q) * kQScaleY;
    }
  }
  return y;
}

void qlinear_256x1024(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  if (!use_quantized_engine(state)) return;
  const std::vector<float> xv = qlinear_input();
  const std::vector<std::int8_t> wv = qlinear_weights();
  const at::Tensor x = tensor(xv, {kQRows, kQDepth});
  at::Tensor w = at::empty({kQCols, kQDepth}, at::kChar);  // [out, in]
  for (std::int64_t i = 0; i < kQDepth; ++i)
    for (std::int64_t j = 0; j < kQCols; ++j) w.data_ptr<std::int8_t>()[j * kQDepth + i] = wv[static_cast<std::size_t>(i * kQCols + j)];
  const at::Tensor wq = at::_make_per_tensor_quantized_tensor(w, kQScaleW, 0);
  auto& dispatcher = c10::Dispatcher::singleton();
  torch::jit::Stack stack{wq, c10::IValue()};
  dispatcher.findSchemaOrThrow("quantized::linear_prepack", "").callBoxed(&stack);
  const c10::IValue packed = stack[0];
  const c10::OperatorHandle linear = dispatcher.findSchemaOrThrow("quantized::linear", "");
  at::Tensor y;
  for (auto _ : state) {
    stack = {at::quantize_per_tensor(x, kQScaleX, 64, at::kQUInt8), packed, double{kQScaleY}, std::int64_t{128}};
    linear.callBoxed(&stack);
    y = stack[0].toTensor().dequantize();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["ops"] = benchmark::Counter(2.0 * kQRows * kQDepth * kQCols, benchmark::Counter::kIsIterationInvariantRate);
  // One step of the output's quantization apart at most: the engine requantizes in f32.
  check(state, y, qlinear_reference(xv, wv).data(), kQScaleY);
}

// ---- conv3x3_int8_56x56x64: the 8-bit 3x3 convolution as a LibTorch user runs one:
// quantized::conv2d on quint8 activations and the prepacked qint8 kernel (the workload's s8
// values, per tensor, zero point 0, scale 1), requantized to quint8 with an output scale that
// spans the sums. The activations are the workload's halved to 7 bits (u = (x + 128) / 2,
// zero point 64): PyTorch's x86 engines multiply u8 by s8 in 16-bit pair sums that saturate
// on full-range activations (tried: 167 output steps off), which is why PyTorch quantizes
// activations with reduce_range on x86. The same work as pjrt_lite's convolution, not the
// same op (s32 sums there, no requantization); quantized ops have no `_out` forms, so each
// iteration allocates its result.

void conv3x3_int8_56x56x64(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  if (!use_quantized_engine(state)) return;
  constexpr std::int64_t kPixels = kConvSize * kConvSize, kC = kConvChannels;
  std::vector<std::int32_t> xv;  // NHWC, the 7-bit activations less their zero point
  for (std::int8_t v : int8_values(kPixels * kC, 3)) xv.push_back((v + 128) / 2 - 64);
  const std::vector<std::int8_t> kv = int8_values(kConvTaps * kC * kC, 4);  // HWIO
  // The s32 sums in plain loops (SAME padding), and the output scale that spans them.
  std::vector<double> want(static_cast<std::size_t>(kPixels * kC), 0.0);
  for (std::int64_t y = 0; y < kConvSize; ++y)
    for (std::int64_t x = 0; x < kConvSize; ++x)
      for (std::int64_t t = 0; t < kConvTaps; ++t) {
        const std::int64_t iy = y + t / 3 - 1, ix = x + t % 3 - 1;
        if (iy < 0 || iy >= kConvSize || ix < 0 || ix >= kConvSize) continue;
        for (std::int64_t i = 0; i < kC; ++i) {
          const double a = xv[static_cast<std::size_t>((iy * kConvSize + ix) * kC + i)];
          for (std::int64_t o = 0; o < kC; ++o)
            want[static_cast<std::size_t>((y * kConvSize + x) * kC + o)] += a * kv[static_cast<std::size_t>((t * kC + i) * kC + o)];
        }
      }
  double largest = 1;
  for (double w : want) largest = std::max(largest, std::abs(w));
  const double out_scale = largest / 127;
  at::Tensor xu = at::empty({1, kConvSize, kConvSize, kC}, at::kByte);
  for (std::size_t i = 0; i < xv.size(); ++i) xu.data_ptr<std::uint8_t>()[i] = static_cast<std::uint8_t>(xv[i] + 64);
  const at::Tensor qx = at::_make_per_tensor_quantized_tensor(xu.permute({0, 3, 1, 2}).contiguous(at::MemoryFormat::ChannelsLast), 1.0, 64);
  at::Tensor k = at::empty({3, 3, kC, kC}, at::kChar);
  std::copy(kv.begin(), kv.end(), k.data_ptr<std::int8_t>());
  const at::Tensor qk = at::_make_per_tensor_quantized_tensor(k.permute({3, 2, 0, 1}).contiguous(), 1.0, 0);  // OIHW
  auto& dispatcher = c10::Dispatcher::singleton();
  const std::vector<std::int64_t> one{1, 1};
  torch::jit::Stack stack{qk, c10::IValue(), one, one, one, std::int64_t{1}};
  dispatcher.findSchemaOrThrow("quantized::conv2d_prepack", "").callBoxed(&stack);
  const c10::IValue packed = stack[0];
  const c10::OperatorHandle conv = dispatcher.findSchemaOrThrow("quantized::conv2d", "new");
  at::Tensor out;
  for (auto _ : state) {
    stack = {qx, packed, out_scale, std::int64_t{128}};
    conv.callBoxed(&stack);
    out = stack[0].toTensor();
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.counters["ops"] = benchmark::Counter(2.0 * kPixels * kConvTaps * kC * kC, benchmark::Counter::kIsIterationInvariantRate);
  // Within one step of the output's scale (the engine requantizes in f32).
  const at::Tensor got = out.dequantize().permute({0, 2, 3, 1}).contiguous();
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(got.data_ptr<float>()[i]) - want[i]));
  state.counters["max_error_steps"] = worst / out_scale;
  if (worst > 1.01 * out_scale) state.SkipWithError("libtorch's quantized convolution disagrees with the reference");
}

void linear_256x1024(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const std::vector<float> xv = qlinear_input();
  std::vector<float> wv;
  for (std::int8_t v : qlinear_weights()) wv.push_back(static_cast<float>(v) * kQScaleW);
  const at::Tensor x = tensor(xv, {kQRows, kQDepth}), w = tensor(wv, {kQDepth, kQCols});
  at::Tensor out = at::empty({kQRows, kQCols});
  for (auto _ : state) {
    at::mm_out(out, x, w);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * kQRows * kQDepth * kQCols, benchmark::Counter::kIsIterationInvariantRate);
  std::vector<float> want(static_cast<std::size_t>(4 * kQCols));
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < kQCols; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < kQDepth; ++k) s += double(xv[static_cast<std::size_t>(i * kQDepth + k)]) * double(wv[static_cast<std::size_t>(k * kQCols + j)]);
      want[static_cast<std::size_t>(i * kQCols + j)] = static_cast<float>(s);
    }
  check(state, out.narrow(0, 0, 4), want.data(), 1e-4);
}

// ---- mlp_b1, mlp_b256: what torch::nn::Linear computes (addmm with the bias), into
// preallocated activations.

struct Mlp {
  at::Tensor w1, b1, w2, b2, w3, b3;
  Mlp() {
    const auto& w = mlp_weights();
    w1 = tensor(w.w1, {kIn, kHidden});
    b1 = tensor(w.b1, {kHidden});
    w2 = tensor(w.w2, {kHidden, kHidden});
    b2 = tensor(w.b2, {kHidden});
    w3 = tensor(w.w3, {kHidden, kOut});
    b3 = tensor(w.b3, {kOut});
  }
};

template <std::int64_t Batch, bool kThreaded>
void mlp(benchmark::State& state) {
  use_threads(kThreaded ? kThreads : 1);
  torch::NoGradGuard no_grad;
  const Mlp m;
  const auto xv = mlp_input(Batch);
  const at::Tensor x = tensor(xv, {Batch, kIn});
  at::Tensor h1 = at::empty({Batch, kHidden}), h2 = at::empty({Batch, kHidden}),
             y = at::empty({Batch, kOut});
  for (auto _ : state) {
    at::addmm_out(h1, m.b1, x, m.w1).tanh_();
    at::addmm_out(h2, m.b2, h1, m.w2).tanh_();
    at::addmm_out(y, m.b3, h2, m.w3);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  std::vector<float> want(static_cast<std::size_t>(Batch * kOut));
  mlp_reference(xv.data(), Batch, want.data());
  check(state, y, want.data(), 1e-4);
}

// ---- mlp_grad_b256: autograd of the same loss with respect to every weight.

void mlp_grad_b256(benchmark::State& state) {
  use_threads(kThreads);
  Mlp m;
  std::vector<at::Tensor> params{m.w1, m.b1, m.w2, m.b2, m.w3, m.b3};
  for (at::Tensor& p : params) p.set_requires_grad(true);
  const auto xv = mlp_input(kGradBatch), tv = mlp_target(kGradBatch);
  const at::Tensor x = tensor(xv, {kGradBatch, kIn}), t = tensor(tv, {kGradBatch, kOut});
  std::vector<at::Tensor> grads;
  for (auto _ : state) {
    at::Tensor h1 = at::addmm(params[1], x, params[0]).tanh();
    at::Tensor h2 = at::addmm(params[3], h1, params[2]).tanh();
    at::Tensor y = at::addmm(params[5], h2, params[4]);
    at::Tensor loss = (y - t).square().sum() * 0.5;
    grads = torch::autograd::grad({loss}, params);
    benchmark::DoNotOptimize(grads[0].data_ptr());
  }
  std::vector<float> want_w1(static_cast<std::size_t>(kIn * kHidden));
  mlp_grad_w1_reference(xv.data(), tv.data(), kGradBatch, want_w1.data());
  check(state, grads[0], want_w1.data(), 1e-3);
}

// ---- roundtrip_4: a tensor of its own from host memory, and its values back in host memory.

void roundtrip_4(benchmark::State& state) {
  use_threads(1);
  float host[4] = {1, 2, 3, 4};
  for (auto _ : state) {
    benchmark::DoNotOptimize(host);
    at::Tensor device = torch::from_blob(host, {4}, at::kFloat).clone();
    const float* p = device.data_ptr<float>();
    std::vector<float> back(p, p + 4);
    benchmark::DoNotOptimize(back.data());
    benchmark::ClobberMemory();
  }
}

// ---- Model layers: ATen's own layer norm and softmax into preallocated outputs; the
// convolution as at::conv2d on channels-last tensors (the NHWC data as it is; torch has no
// out= form, so its output is allocated per call) then an in-place relu; attention (128 and
// 512 tokens) as its matrix products, softmax and head merge into preallocated tensors.

void layer_norm_256x1024(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(rows_input(), {kRows, kCols});
  const at::Tensor gamma = tensor(layer_norm_gamma(), {kCols}), beta = tensor(layer_norm_beta(), {kCols});
  at::Tensor y = at::empty({kRows, kCols}), mean = at::empty({kRows, 1}), rstd = at::empty({kRows, 1});
  for (auto _ : state) {
    at::native_layer_norm_out(y, mean, rstd, x, {kCols}, gamma, beta, kLayerNormEps);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  check(state, y, model_reference("layer_norm_256x1024").data(), 1e-5);
}

void softmax_256x1024(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(rows_input(), {kRows, kCols});
  at::Tensor y = at::empty({kRows, kCols});
  for (auto _ : state) {
    at::_softmax_out(y, x, 1, false);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  check(state, y, model_reference("softmax_256x1024").data(), 1e-6);
}

/// conv2d + bias + relu_ on `batch` NHWC images of 56 x 56 x 64, seen as an NCHW tensor in
/// channels-last layout; the HWIO kernel ([window, window, 64 / groups, 64]) as OIHW, laid out
/// channels-last once before the loop (a model's weights are prepared once).
void conv_layer(benchmark::State& state, std::string_view workload, std::int64_t batch, std::int64_t window,
                std::int64_t groups, const std::vector<float>& kernel, double tolerance) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x =
      tensor(conv_input_batch(batch), {batch, kConvSize, kConvSize, kConvChannels}).permute({0, 3, 1, 2});
  const at::Tensor k = tensor(kernel, {window, window, kConvChannels / groups, kConvChannels})
                           .permute({3, 2, 0, 1})
                           .contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor bias = tensor(conv_bias(), {kConvChannels});
  at::Tensor y;
  for (auto _ : state) {
    y = at::conv2d(x, k, bias, /*stride=*/1, /*padding=*/window / 2, /*dilation=*/1, groups);
    y.relu_();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["flops"] = benchmark::Counter(
      2.0 * static_cast<double>(batch * kConvSize * kConvSize * window * window * (kConvChannels / groups) * kConvChannels),
      benchmark::Counter::kIsIterationInvariantRate);
  check(state, y.permute({0, 2, 3, 1}), model_reference(workload).data(), tolerance);
}

void conv3x3_56x56x64(benchmark::State& state) {
  conv_layer(state, "conv3x3_56x56x64", 1, 3, 1, conv_kernel(), 1e-4);
}
void conv3x3_b8_56x56x64(benchmark::State& state) {
  conv_layer(state, "conv3x3_b8_56x56x64", kConvBatch, 3, 1, conv_kernel(), 1e-4);
}
void conv1x1_56x56x64(benchmark::State& state) {
  conv_layer(state, "conv1x1_56x56x64", 1, 1, 1, conv1x1_kernel(), 1e-4);
}
void depthwise3x3_56x56x64(benchmark::State& state) {
  conv_layer(state, "depthwise3x3_56x56x64", 1, 3, kConvChannels, depthwise_kernel(), 1e-5);
}

/// Self-attention of `tokens` tokens as its matrix products, softmax and head merge into
/// tensors allocated once.
struct Attention {
  explicit Attention(std::int64_t tokens)
      : tokens(tokens), q(at::empty({tokens, kModel})), k(at::empty({tokens, kModel})),
        v(at::empty({tokens, kModel})), scores(at::empty({kHeads, tokens, tokens})),
        probs(at::empty({kHeads, tokens, tokens})), o(at::empty({kHeads, tokens, kHeadDim})),
        merged(at::empty({tokens, kHeads, kHeadDim})) {
    for (int i = 0; i < 4; ++i) w[i] = tensor(attention_weight(i), {kModel, kModel});
  }
  at::Tensor heads(const at::Tensor& m) const { return m.view({tokens, kHeads, kHeadDim}).transpose(0, 1); }
  void run(const at::Tensor& x, at::Tensor& y) {
    at::mm_out(q, x, w[0]);
    at::mm_out(k, x, w[1]);
    at::mm_out(v, x, w[2]);
    at::bmm_out(scores, heads(q), heads(k).transpose(1, 2));
    scores.mul_(1.0 / std::sqrt(double(kHeadDim)));
    at::_softmax_out(probs, scores, 2, false);
    at::bmm_out(o, probs, heads(v));
    merged.copy_(o.transpose(0, 1));
    at::mm_out(y, merged.view({tokens, kModel}), w[3]);
  }
  std::int64_t tokens;
  at::Tensor w[4], q, k, v, scores, probs, o, merged;
};

template <std::int64_t Tokens>
void attention(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(attention_input(Tokens), {Tokens, kModel});
  Attention a(Tokens);
  at::Tensor y = at::empty({Tokens, kModel});
  for (auto _ : state) {
    a.run(x, y);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  check(state, y, model_reference(attention_name(Tokens)).data(), 1e-4);
}

// ---- rms_norm_256x1024: LibTorch 1.13 has no RMS norm op, so what a user writes:
// x * rsqrt(mean(x^2, -1, keepdim) + eps) * gamma, into preallocated tensors.

void rms_norm_256x1024(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(rows_input(), {kRows, kCols}), gamma = tensor(rms_norm_gamma(), {kCols});
  at::Tensor sq = at::empty({kRows, kCols}), ms = at::empty({kRows, 1}), y = at::empty({kRows, kCols});
  for (auto _ : state) {
    at::mul_out(sq, x, x);
    at::mean_out(ms, sq, {1}, /*keepdim=*/true);
    ms.add_(kRmsNormEps).rsqrt_();
    at::mul_out(y, x, ms);
    y.mul_(gamma);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  check(state, y, model_reference("rms_norm_256x1024").data(), 1e-5);
}

// ---- resnet_block_56x56x64: what torchvision's BasicBlock runs in eval mode, channels-last:
// conv2d (no bias), batch_norm with running statistics, relu_, conv2d, batch_norm, add_ the
// input, relu_. conv2d and batch_norm allocate their outputs (no out= forms).

void resnet_block_56x56x64(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(conv_input(), {1, kConvSize, kConvSize, kConvChannels}).permute({0, 3, 1, 2});
  at::Tensor k[2];
  for (int i = 0; i < 2; ++i)
    k[i] = tensor(resnet_kernel(i), {3, 3, kConvChannels, kConvChannels})
               .permute({3, 2, 0, 1})
               .contiguous(at::MemoryFormat::ChannelsLast);
  struct Bn {
    at::Tensor gamma, beta, mean, var;
  } bn[2];
  for (int i = 0; i < 2; ++i) {
    const BatchNorm p(i);
    bn[i] = {tensor(p.gamma, {kConvChannels}), tensor(p.beta, {kConvChannels}),
             tensor(p.mean, {kConvChannels}), tensor(p.var, {kConvChannels})};
  }
  auto batch_norm = [&](const at::Tensor& v, int i) {
    return at::batch_norm(v, bn[i].gamma, bn[i].beta, bn[i].mean, bn[i].var, /*training=*/false,
                          /*momentum=*/0.1, kBatchNormEps, /*cudnn_enabled=*/false);
  };
  at::Tensor y;
  for (auto _ : state) {
    at::Tensor a = batch_norm(at::conv2d(x, k[0], {}, 1, 1), 0);
    a.relu_();
    y = batch_norm(at::conv2d(a, k[1], {}, 1, 1), 1);
    y.add_(x).relu_();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["flops"] =
      benchmark::Counter(2 * 2.0 * kConvSize * kConvSize * kConvTaps * kConvChannels * kConvChannels,
                         benchmark::Counter::kIsIterationInvariantRate);
  check(state, y.permute({0, 2, 3, 1}), model_reference("resnet_block_56x56x64").data(), 1e-4);
}

// ---- lstm_cell_b32_h512: at::lstm_cell, what torch::nn::LSTMCell calls, with its weights
// in torch's layout ([4 * hidden, in], transposed once before the loop) and the bias as b_ih.
// It allocates its gates and outputs per call.

void lstm_cell_b32_h512(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(lstm_x(), {kLstmBatch, kLstmInput});
  const at::Tensor h = tensor(lstm_h(), {kLstmBatch, kLstmHidden}), c = tensor(lstm_c(), {kLstmBatch, kLstmHidden});
  const at::Tensor w_ih = tensor(lstm_w(), {kLstmInput, kLstmGates}).t().contiguous();
  const at::Tensor w_hh = tensor(lstm_u(), {kLstmHidden, kLstmGates}).t().contiguous();
  const at::Tensor b = tensor(lstm_b(), {kLstmGates});
  std::tuple<at::Tensor, at::Tensor> hc;
  for (auto _ : state) {
    hc = at::lstm_cell(x, {h, c}, w_ih, w_hh, b, {});
    benchmark::DoNotOptimize(std::get<0>(hc).data_ptr());
  }
  check(state, at::cat({std::get<0>(hc).flatten(), std::get<1>(hc).flatten()}),
        model_reference("lstm_cell_b32_h512").data(), 1e-4);
}

// ---- transformer_encoder_128x256: the attention above, then add_out, native_layer_norm_out,
// addmm_out (nn::Linear), gelu_out with approximate="tanh", addmm_out, add_,
// native_layer_norm_out, all into tensors allocated once.

void transformer_encoder_128x256(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(attention_input(kTokens), {kTokens, kModel});
  Attention attn(kTokens);
  const at::Tensor w1 = tensor(encoder_w1(), {kModel, kFfn}), b1 = tensor(encoder_b1(), {kFfn});
  const at::Tensor w2 = tensor(encoder_w2(), {kFfn, kModel}), b2 = tensor(encoder_b2(), {kModel});
  const at::Tensor g1 = tensor(encoder_gamma(0), {kModel}), be1 = tensor(encoder_beta(0), {kModel});
  const at::Tensor g2 = tensor(encoder_gamma(1), {kModel}), be2 = tensor(encoder_beta(1), {kModel});
  at::Tensor a = at::empty({kTokens, kModel}), t = at::empty({kTokens, kModel}),
             y1 = at::empty({kTokens, kModel}), h = at::empty({kTokens, kFfn}),
             g = at::empty({kTokens, kFfn}), f = at::empty({kTokens, kModel}),
             y = at::empty({kTokens, kModel}), mean = at::empty({kTokens, 1}), rstd = at::empty({kTokens, 1});
  for (auto _ : state) {
    attn.run(x, a);
    at::add_out(t, x, a);
    at::native_layer_norm_out(y1, mean, rstd, t, {kModel}, g1, be1, kLayerNormEps);
    at::addmm_out(h, b1, y1, w1);
    at::gelu_out(g, h, "tanh");
    at::addmm_out(f, b2, g, w2);
    f.add_(y1);
    at::native_layer_norm_out(y, mean, rstd, f, {kModel}, g2, be2, kLayerNormEps);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  check(state, y, model_reference("transformer_encoder_128x256").data(), 1e-4);
}

// ---- Sweeps: at::mul_out and at::sum_out (over the last dimension) into a preallocated
// output on kThreads threads; ATen's grain size decides whether a size is split.

template <bool Sum, std::int64_t N>
void sweep(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const std::int64_t rows = N / kSweepCols;
  const auto xv = sweep_x(N), yv = sweep_y(N);
  const at::Tensor x = tensor(xv, {rows, kSweepCols}), y = tensor(yv, {rows, kSweepCols});
  at::Tensor out = Sum ? at::empty({rows}) : at::empty({rows, kSweepCols});
  for (auto _ : state) {
    if constexpr (Sum)
      at::sum_out(out, x, {1});
    else
      at::mul_out(out, x, y);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * N);
  std::vector<float> want;
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < kSweepCols; ++c) {
      const auto i = static_cast<std::size_t>(r * kSweepCols + c);
      if (Sum)
        s += xv[i];
      else
        want.push_back(xv[i] * yv[i]);
    }
    if (Sum) want.push_back(static_cast<float>(s));
  }
  check(state, out, want.data(), Sum ? 1e-5 : 0);
}

}  // namespace

BenchFn torch_peer(std::string_view workload) {
  struct Peer {
    std::string_view workload;
    BenchFn fn;
  };
  static const Peer peers[] = {
      {"tiny_mul_add_4", tiny_mul_add_4},
      {"jit_call_tiny", jit_call_tiny},
      {"axpy_16M", axpy_16M},
      {"copy_16M", copy_16M},
      {"chain_16M", chain_16M},
      {"gemm_256", gemm<256>},
      {"gemm_1024", gemm<1024>},
      {"qlinear_256x1024", qlinear_256x1024},
      {"linear_256x1024", linear_256x1024},
      {"mlp_b1", mlp<1, false>},
      {"mlp_b256", mlp<256, true>},
      {"mlp_grad_b256", mlp_grad_b256},
      {"roundtrip_4", roundtrip_4},
      {"layer_norm_256x1024", layer_norm_256x1024},
      {"softmax_256x1024", softmax_256x1024},
      {"conv3x3_56x56x64", conv3x3_56x56x64},
      {"conv3x3_b8_56x56x64", conv3x3_b8_56x56x64},
      {"conv1x1_56x56x64", conv1x1_56x56x64},
      {"depthwise3x3_56x56x64", depthwise3x3_56x56x64},
      {"conv3x3_int8_56x56x64", conv3x3_int8_56x56x64},
      {"attention_128x256", attention<kTokens>},
      {"rms_norm_256x1024", rms_norm_256x1024},
      {"attention_512x256", attention<kLongTokens>},
      {"resnet_block_56x56x64", resnet_block_56x56x64},
      {"lstm_cell_b32_h512", lstm_cell_b32_h512},
      {"transformer_encoder_128x256", transformer_encoder_128x256},
      {"sweep_mul_4K", sweep<false, 4096>},
      {"sweep_mul_64K", sweep<false, 65536>},
      {"sweep_mul_256K", sweep<false, 262144>},
      {"sweep_mul_1M", sweep<false, 1048576>},
      {"sweep_sum_4K", sweep<true, 4096>},
      {"sweep_sum_64K", sweep<true, 65536>},
      {"sweep_sum_256K", sweep<true, 262144>},
      {"sweep_sum_1M", sweep<true, 1048576>},
  };
  static const bool interop = [] {
    at::set_num_interop_threads(1);  // only before any inter-op work; none is ever queued
    return true;
  }();
  (void)interop;
  for (const Peer& p : peers)
    if (p.workload == workload) return p.fn;
  return nullptr;
}

/// The name of the core whose kernels OpenBLAS runs, when OpenBLAS is the BLAS (else empty).
std::string openblas_core() {
  using CoreName = char* (*)();
  const auto corename = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return corename != nullptr ? std::string(corename()) : std::string();
}

/// OpenBLAS picks its kernels by CPU model when it loads, and a release older than the CPU
/// (Debian 12's 0.3.21 on Sapphire Rapids) falls back to Prescott, SSE3: its sgemm then ran at
/// a fifth of its SkylakeX kernels' speed on that CPU (19 against 110 GFLOP/s on one thread).
/// A LibTorch user on such a machine sets OPENBLAS_CORETYPE; so does the peer, to the newest
/// core of OpenBLAS this CPU runs, unless the variable is set already. True if it set it.
bool choose_openblas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || openblas_core() != "Prescott") return false;
#if defined(__x86_64__) || defined(__i386__)
  const char* core = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
  if (core == nullptr) return false;
  setenv("OPENBLAS_CORETYPE", core, 1);
  return true;
#else
  return false;
#endif
}

void torch_thread_policy(char** argv) {
  // Both variables are read when the libraries load: set them, then execute again.
  bool again = choose_openblas_core();
  if (std::getenv("GOMP_SPINCOUNT") == nullptr && std::getenv("OMP_WAIT_POLICY") == nullptr) {
    // libgomp waits `GOMP_SPINCOUNT` polls of one pause instruction each: time some pauses.
    constexpr int kPauses = 100000;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPauses; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    const double pause_ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / kPauses;
    const long count = std::max(1L, static_cast<long>(50000.0 / std::max(pause_ns, 0.1)));
    setenv("GOMP_SPINCOUNT", std::to_string(count).c_str(), 1);
    again = true;
  }
  if (!again) return;
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "pjrt_lite_bench: could not re-execute (%s); LibTorch keeps OpenMP's polling and "
               "OpenBLAS's own choice of kernels\n", std::strerror(errno));
}

std::string torch_description() {
  std::string s = "LibTorch " TORCH_VERSION;
  // The kernels' instruction set and the BLAS that the dynamic linker picked (Debian's
  // libblas.so.3 is an alternative: reference BLAS, OpenBLAS, BLIS...).
  const std::string config = at::show_config();
  if (const auto at = config.find("CPU capability usage: "); at != std::string::npos)
    s += ", kernels for " + config.substr(at + 22, config.find('\n', at) - at - 22);
  Dl_info info{};
  if (void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_"); sgemm != nullptr && dladdr(sgemm, &info) != 0) {
    char path[PATH_MAX];
    s += ", sgemm from ";
    s += realpath(info.dli_fname, path) != nullptr ? path : info.dli_fname;
  }
  if (const std::string core = openblas_core(); !core.empty()) {
    const char* chosen = std::getenv("OPENBLAS_CORETYPE");
    s += ", OpenBLAS kernels for " + core + " (OPENBLAS_CORETYPE=" + (chosen != nullptr ? chosen : "unset") + ")";
  }
  s += ", ATen parallel backend OpenMP, intra-op threads as pjrt_lite's, inter-op threads 1, "
       "GOMP_SPINCOUNT=";
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  s += spin != nullptr ? spin : "unset";
  s += ", OMP_WAIT_POLICY=";
  s += policy != nullptr ? policy : "unset";
  return s;
}

}  // namespace pjrt_lite_bench
