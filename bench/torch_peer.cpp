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
// before they sleep (torch_thread_policy below).
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/jit.h>
#include <torch/script.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
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

template <std::int64_t Batch, int Threads>
void mlp(benchmark::State& state) {
  use_threads(Threads);
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
// out= form, so its output is allocated per call) then an in-place relu; attention as its
// matrix products, softmax and head merge into preallocated tensors.

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

void conv3x3_56x56x64(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  // NHWC data seen as an NCHW tensor in channels-last layout; the HWIO kernel as OIHW,
  // laid out channels-last once before the loop (a model's weights are prepared once).
  const at::Tensor x = tensor(conv_input(), {1, kConvSize, kConvSize, kConvChannels}).permute({0, 3, 1, 2});
  const at::Tensor k = tensor(conv_kernel(), {3, 3, kConvChannels, kConvChannels})
                           .permute({3, 2, 0, 1})
                           .contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor bias = tensor(conv_bias(), {kConvChannels});
  at::Tensor y;
  for (auto _ : state) {
    y = at::conv2d(x, k, bias, /*stride=*/1, /*padding=*/1);
    y.relu_();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * kConvSize * kConvSize * kConvTaps * kConvChannels * kConvChannels,
                         benchmark::Counter::kIsIterationInvariantRate);
  check(state, y.permute({0, 2, 3, 1}), model_reference("conv3x3_56x56x64").data(), 1e-4);
}

void attention_128x256(benchmark::State& state) {
  use_threads(kThreads);
  torch::NoGradGuard no_grad;
  const at::Tensor x = tensor(attention_input(), {kTokens, kModel});
  at::Tensor w[4];
  for (int i = 0; i < 4; ++i) w[i] = tensor(attention_weight(i), {kModel, kModel});
  at::Tensor q = at::empty({kTokens, kModel}), k = at::empty({kTokens, kModel}),
             v = at::empty({kTokens, kModel}), scores = at::empty({kHeads, kTokens, kTokens}),
             probs = at::empty({kHeads, kTokens, kTokens}), o = at::empty({kHeads, kTokens, kHeadDim}),
             merged = at::empty({kTokens, kHeads, kHeadDim}), y = at::empty({kTokens, kModel});
  auto heads = [](const at::Tensor& m) { return m.view({kTokens, kHeads, kHeadDim}).transpose(0, 1); };
  const double scale = 1.0 / std::sqrt(double(kHeadDim));
  for (auto _ : state) {
    at::mm_out(q, x, w[0]);
    at::mm_out(k, x, w[1]);
    at::mm_out(v, x, w[2]);
    at::bmm_out(scores, heads(q), heads(k).transpose(1, 2));
    scores.mul_(scale);
    at::_softmax_out(probs, scores, 2, false);
    at::bmm_out(o, probs, heads(v));
    merged.copy_(o.transpose(0, 1));
    at::mm_out(y, merged.view({kTokens, kModel}), w[3]);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  check(state, y, model_reference("attention_128x256").data(), 1e-4);
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
      {"mlp_b1", mlp<1, 1>},
      {"mlp_b256", mlp<256, kThreads>},
      {"mlp_grad_b256", mlp_grad_b256},
      {"roundtrip_4", roundtrip_4},
      {"layer_norm_256x1024", layer_norm_256x1024},
      {"softmax_256x1024", softmax_256x1024},
      {"conv3x3_56x56x64", conv3x3_56x56x64},
      {"attention_128x256", attention_128x256},
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

void torch_thread_policy(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  // libgomp waits `GOMP_SPINCOUNT` polls of one pause instruction each: time some pauses.
  constexpr int kPauses = 100000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPauses; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  const double pause_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kPauses;
  const long count = std::max(1L, static_cast<long>(50000.0 / std::max(pause_ns, 0.1)));
  setenv("GOMP_SPINCOUNT", std::to_string(count).c_str(), 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "pjrt_lite_bench: could not re-execute with GOMP_SPINCOUNT=%ld (%s); "
               "OpenMP keeps its default polling\n", count, std::strerror(errno));
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
