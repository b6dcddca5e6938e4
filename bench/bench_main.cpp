// pjrt_lite's benchmarks. Every workload is registered as `<workload>/pjrt_lite`,
// `<workload>/eigen` (a hand-written twin doing the same work with the same threads) and, when
// the bench is built with Torch, `<workload>/libtorch` (bench/torch_peer.cpp), so that one run
// of the binary gives all of them and their ratios. bench/run.sh runs it and regenerates
// bench/RESULTS.md.
//
// Threads: the threaded workloads run pjrt_lite on a ThreadPool client with one worker (the
// calling thread is the second), and the twins the same way through TwinPool: the calling
// thread and one thread of Eigen's ThreadPool, set up once, claim the same blocks pjrt_lite's
// parallel_for would split the work into, and wait the way it waits. The single-threaded
// workloads (tiny, mlp_b1, roundtrip) use an inline client and plain Eigen.
// Every twin writes into outputs and temporaries allocated before its timing loop, and keeps
// its result alive (benchmark::DoNotOptimize on the output after the work).
// Programs execute synchronously (ExecutionMode::kSynchronous) into a reused result list,
// the control-loop way; clients keep enough pooled memory to recycle 64 MiB outputs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "workloads.hpp"

using namespace pjrt_lite;
using namespace pjrt_lite_bench;

namespace {

// ---- Shared set-up

/// Pooled device memory of the bench clients: room to recycle every output of a workload.
constexpr std::int64_t kPoolBytes = std::int64_t{1} << 30;

[[noreturn]] void die(const Status& s, const char* where) {
  std::fprintf(stderr, "%s: %s\n", where, s.to_string().c_str());
  std::abort();
}

template <class T>
T take(StatusOr<T> v, const char* where) {
  if (!v.ok()) die(v.status(), where);
  return std::move(v).value();
}

template <class E>
std::unique_ptr<cpu::Client<E>> make_client() {
  return take(
      cpu::Client<E>::create({.thread_count = kThreads - 1, .memory_pool_bytes = kPoolBytes}),
      "client");
}

/// A compiled program with its arguments on the device, executed synchronously.
template <class E>
class Program {
 public:
  Program(const Graph& graph, const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims)
      : client_(make_client<E>()) {
    exe_.emplace(take(client_->compile(graph), "compile"));
    for (std::size_t i = 0; i < args.size(); ++i)
      args_.push_back(take(
          client_->buffer_from_host_buffer(std::span<const float>(args[i]), dims[i]), "upload"));
    for (auto& a : args_) arg_ptrs_.push_back(&a);
    options_.mode = ExecutionMode::kSynchronous;
    run();  // warm-up: fills the pools and the run-state cache
  }
  Program(GraphBuilder& b, const std::vector<Value>& outputs,
          const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims)
      : Program(take(b.build(outputs), "build"), args, dims) {}

  void run() {
    Status s = exe_->execute_sharded(arg_ptrs_, client_->devices()[0], options_, results_);
    if (!s.ok()) die(s, "execute");
  }

  /// Output `j` of the last run, on the host.
  std::vector<float> output(std::size_t j) {
    Literal l = take(results_[j].to_literal().await(), "to_literal");
    const auto* p = static_cast<const float*>(l.untyped_data());
    return std::vector<float>(p, p + l.shape().element_count());
  }

 private:
  std::unique_ptr<cpu::Client<E>> client_;
  std::optional<cpu::LoadedExecutable<E>> exe_;
  std::vector<cpu::Buffer<E>> args_;
  std::vector<cpu::Buffer<E>*> arg_ptrs_;
  std::vector<cpu::Buffer<E>> results_;
  ExecuteOptions options_;
};

/// The twins' threads: the calling thread and kThreads - 1 threads of Eigen's ThreadPool,
/// created once for the whole run. Eigen's idle workers poll for new work before they sleep
/// (5000 / threads attempts to steal a task, Eigen's own count), as pjrt_lite's pool threads
/// do (for 50 us, core/spin.hpp). A parallel region
/// follows pjrt_lite's parallel_for: [0, n) is cut into `blocks` equal ranges that the
/// threads claim one at a time from a shared counter; scheduling a helper allocates nothing
/// (the task captures one pointer, which std::function keeps inline); and the caller, out of
/// blocks, polls for up to 50 us before it sleeps on an atomic. So a twin and pjrt_lite pay
/// the same kind of hand-off per region and differ only in their kernels.
class TwinPool {
 public:
  static TwinPool& get() {
    static TwinPool pool;
    return pool;
  }

  /// Runs fn(begin, end) over `blocks` equal parts of [0, n), the caller included; returns
  /// when all are done. A block index is `begin * blocks / n`; one thread runs a block, so
  /// per-block scratch needs no lock.
  template <class F>
  void parallel_for(std::int64_t n, std::int64_t blocks, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    fn_ = &fn;
    call_ = [](void* f, std::int64_t b, std::int64_t e) { (*static_cast<Fn*>(f))(b, e); };
    n_ = n;
    blocks_ = blocks;
    next_.store(0, std::memory_order_relaxed);
    running_.store(kThreads - 1);
    for (int t = 1; t < kThreads; ++t) pool_.Schedule([this] { help(); });
    drain();
    wait();
  }

 private:
  TwinPool() : pool_(kThreads - 1) {}

  void drain() {
    for (;;) {
      const std::int64_t b = next_.fetch_add(1, std::memory_order_relaxed);
      if (b >= blocks_) return;
      call_(fn_, n_ * b / blocks_, n_ * (b + 1) / blocks_);
    }
  }
  void help() {
    drain();
    if (running_.fetch_sub(1) == 1) running_.notify_all();
  }
  void wait() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    for (std::uint32_t i = 1; running_.load() != 0; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) {
        for (int r = running_.load(); r != 0; r = running_.load()) running_.wait(r);
        return;
      }
    }
  }

  Eigen::ThreadPool pool_;
  void* fn_ = nullptr;
  void (*call_)(void*, std::int64_t, std::int64_t) = nullptr;
  std::int64_t n_ = 0, blocks_ = 0;
  std::atomic<std::int64_t> next_{0};
  std::atomic<int> running_{0};
};

/// Blocks of an element-wise region: pjrt_lite's parallel_for gives each thread 8.
constexpr std::int64_t kElementwiseBlocks = kThreads * 8;

template <class F>
void twin_parallel(std::int64_t n, std::int64_t blocks, F&& fn) {
  TwinPool::get().parallel_for(n, blocks, fn);
}

using Array = Eigen::Map<Eigen::ArrayXf>;
using ConstArray = Eigen::Map<const Eigen::ArrayXf>;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Row = Eigen::RowVectorXf;

void check_close(benchmark::State& state, const std::vector<float>& got, const float* want,
                 double tolerance) {
  pjrt_lite_bench::check_close(state, got.data(), want, got.size(), tolerance,
                               "pjrt_lite and the Eigen twin disagree");
}

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
  RowMatrix h1[kThreads], h2[kThreads];  // each block's hidden layers, sized once
  for (int t = 0; t < kThreads; ++t) {
    h1[t].resize(kBatch / kThreads, kHidden);
    h2[t].resize(kBatch / kThreads, kHidden);
  }
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
  constexpr std::int64_t kRows = kGradBatch / kThreads;
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

// ---- Model layers (workloads.hpp): layer norm, softmax, a 3x3 convolution, self-attention.
// pjrt_lite runs the graph a framework would export for the layer; the twin is the layer
// written by hand over the same rows, blocks or heads on the same threads.

Value broadcast_scalar(GraphBuilder& b, float v, std::vector<std::int64_t> dims) {
  return b.broadcast_in_dim(b.constant(v), std::move(dims), {});
}

/// Softmax over the last dimension of `x` (rank 2 or 3): exp(x - max) / sum.
Value softmax_last(GraphBuilder& b, Value x, const std::vector<std::int64_t>& dims) {
  const auto last = static_cast<std::int64_t>(dims.size()) - 1;
  std::vector<std::int64_t> kept(dims.begin(), dims.end() - 1), keep_dims;
  for (std::int64_t d = 0; d < last; ++d) keep_dims.push_back(d);
  Value mx = b.reduce(x, b.constant(-std::numeric_limits<float>::infinity()), OpCode::kMaximum,
                      {last});
  Value e = b.exponential(b.subtract(x, b.broadcast_in_dim(mx, dims, keep_dims)));
  Value sum = b.reduce(e, b.constant(0.0f), OpCode::kAdd, {last});
  return b.divide(e, b.broadcast_in_dim(sum, dims, keep_dims));
}

/// Layer norm of rows [r0, r1): (x - mean) / sqrt(var + eps) * gamma + beta.
void layer_norm_rows(const float* x, const float* gamma, const float* beta, float* y,
                     std::int64_t r0, std::int64_t r1) {
  ConstArray g(gamma, kCols), bt(beta, kCols);
  for (std::int64_t r = r0; r < r1; ++r) {
    ConstArray row(x + r * kCols, kCols);
    Array out(y + r * kCols, kCols);
    out = row - row.mean();
    const float rstd = 1.0f / std::sqrt(out.square().mean() + kLayerNormEps);
    out = out * rstd * g + bt;
  }
}

/// Softmax of rows [r0, r1) of a row-major [.., n] matrix.
void softmax_rows(const float* x, float* y, std::int64_t n, std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    ConstArray row(x + r * n, n);
    Array out(y + r * n, n);
    out = (row - row.maxCoeff()).exp();
    out /= out.sum();
  }
}

void layer_norm_256x1024_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("layer_norm");
  const std::vector<std::int64_t> dims{kRows, kCols};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value gamma = b.parameter(Shape(DType::kF32, {kCols}));
  Value beta = b.parameter(Shape(DType::kF32, {kCols}));
  Value inv_n = broadcast_scalar(b, 1.0f / kCols, {kRows});
  Value mean = b.multiply(b.reduce(x, b.constant(0.0f), OpCode::kAdd, {1}), inv_n);
  Value xc = b.subtract(x, b.broadcast_in_dim(mean, dims, {0}));
  Value var = b.multiply(b.reduce(b.multiply(xc, xc), b.constant(0.0f), OpCode::kAdd, {1}), inv_n);
  Value rstd = b.rsqrt(b.add(var, broadcast_scalar(b, kLayerNormEps, {kRows})));
  Value y = b.add(b.multiply(b.multiply(xc, b.broadcast_in_dim(rstd, dims, {0})),
                             b.broadcast_in_dim(gamma, dims, {1})),
                  b.broadcast_in_dim(beta, dims, {1}));
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
      layer_norm_rows(x.data(), gamma.data(), beta.data(), y.data(), r0, r1);
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
  ConvolutionAttrs attrs;
  attrs.padding_low = {1, 1};
  attrs.padding_high = {1, 1};
  attrs.input_batch_dimension = 0;
  attrs.input_spatial_dimensions = {1, 2};
  attrs.input_feature_dimension = 3;
  attrs.kernel_spatial_dimensions = {0, 1};
  attrs.kernel_input_feature_dimension = 2;
  attrs.kernel_output_feature_dimension = 3;
  attrs.output_batch_dimension = 0;
  attrs.output_spatial_dimensions = {1, 2};
  attrs.output_feature_dimension = 3;
  Value y = b.maximum(b.add(b.convolution(x, k, attrs), b.broadcast_in_dim(bias, dims, {3})),
                      broadcast_scalar(b, 0.0f, dims));
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

// ---- More convolutions (workloads.hpp): the 3x3 at batch 8, a 1x1 and a depthwise 3x3, each
// + bias + relu on the 56x56x64 NHWC activations; and gemm_same_flops, the 3x3 convolution's
// implicit product as one GEMM ([3136, 576] x [576, 64], the same FLOPs) to read
// conv3x3_56x56x64 against.

/// relu(conv(x, k) + bias) on NHWC [batch, 56, 56, 64], kernel [window, window, 64 / groups,
/// 64], SAME padding, `groups` feature groups.
Graph conv_layer_graph(std::int64_t batch, std::int64_t window, std::int64_t groups) {
  GraphBuilder b("conv_layer");
  const std::vector<std::int64_t> dims{batch, kConvSize, kConvSize, kConvChannels};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value k = b.parameter(Shape(DType::kF32, {window, window, kConvChannels / groups, kConvChannels}));
  Value bias = b.parameter(Shape(DType::kF32, {kConvChannels}));
  ConvolutionAttrs attrs;
  attrs.padding_low = {window / 2, window / 2};
  attrs.padding_high = {window / 2, window / 2};
  attrs.feature_group_count = groups;
  attrs.input_batch_dimension = 0;
  attrs.input_spatial_dimensions = {1, 2};
  attrs.input_feature_dimension = 3;
  attrs.kernel_spatial_dimensions = {0, 1};
  attrs.kernel_input_feature_dimension = 2;
  attrs.kernel_output_feature_dimension = 3;
  attrs.output_batch_dimension = 0;
  attrs.output_spatial_dimensions = {1, 2};
  attrs.output_feature_dimension = 3;
  Value y = b.maximum(b.add(b.convolution(x, k, attrs), b.broadcast_in_dim(bias, dims, {3})),
                      broadcast_scalar(b, 0.0f, dims));
  return take(b.build({y}), "build");
}

/// The 3x3 convolution of `batch` images over rows [r0, r1) of all their positions.
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
  constexpr std::int64_t kBlocks = kConvBlocks * 4;
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

/// The 1x1 convolution of positions [p0, p1): relu(x[p0:p1] * k + bias).
void conv1x1_positions(const float* x, const float* kernel, const float* bias, float* y, std::int64_t p0,
                       std::int64_t p1) {
  Eigen::Map<RowMatrix> out(y + p0 * kConvChannels, p1 - p0, kConvChannels);
  out.noalias() = Eigen::Map<const RowMatrix>(x + p0 * kConvChannels, p1 - p0, kConvChannels) *
                  Eigen::Map<const RowMatrix>(kernel, kConvChannels, kConvChannels);
  out = (out.rowwise() + Eigen::Map<const Row>(bias, kConvChannels)).cwiseMax(0.0f);
}

void conv1x1_56x56x64_pjrt_lite(benchmark::State& state) {
  const auto x = conv_input(), kernel = conv1x1_kernel(), bias = conv_bias();
  Program<cpu::ThreadPool> p(conv_layer_graph(1, 1, 1), {x, kernel, bias},
                             {{1, kConvSize, kConvSize, kConvChannels}, {1, 1, kConvChannels, kConvChannels}, {kConvChannels}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvChannels * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  std::vector<float> want(x.size());
  conv1x1_positions(x.data(), kernel.data(), bias.data(), want.data(), 0, kConvPositions);
  check_close(state, p.output(0), want.data(), 1e-4);
}

void conv1x1_56x56x64_eigen(benchmark::State& state) {
  const auto x = conv_input(), kernel = conv1x1_kernel(), bias = conv_bias();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    twin_parallel(kConvPositions, kConvBlocks, [&](std::int64_t p0, std::int64_t p1) {
      conv1x1_positions(x.data(), kernel.data(), bias.data(), y.data(), p0, p1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvChannels * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
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

void depthwise3x3_56x56x64_pjrt_lite(benchmark::State& state) {
  const auto x = conv_input(), kernel = depthwise_kernel(), bias = conv_bias();
  Program<cpu::ThreadPool> p(conv_layer_graph(1, 3, kConvChannels), {x, kernel, bias},
                             {{1, kConvSize, kConvSize, kConvChannels}, {3, 3, 1, kConvChannels}, {kConvChannels}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvTaps * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  std::vector<float> want(x.size());
  depthwise_positions(x.data(), kernel.data(), bias.data(), want.data(), 0, kConvPositions);
  check_close(state, p.output(0), want.data(), 1e-5);
}

void depthwise3x3_56x56x64_eigen(benchmark::State& state) {
  const auto x = conv_input(), kernel = depthwise_kernel(), bias = conv_bias();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    twin_parallel(kConvPositions, kConvBlocks, [&](std::int64_t p0, std::int64_t p1) {
      depthwise_positions(x.data(), kernel.data(), bias.data(), y.data(), p0, p1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(2.0 * kConvPositions * kConvTaps * kConvChannels,
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

/// Self-attention by hand: the projections by blocks of tokens, each head's scores, softmax
/// and weighted values by head, the output projection by blocks of tokens; every matrix
/// sized once.
struct Attention {
  Attention() : q(kTokens, kModel), k(kTokens, kModel), v(kTokens, kModel), o(kTokens, kModel) {
    for (int i = 0; i < 4; ++i) w[i] = attention_weight(i);
    scores.assign(kHeads, RowMatrix(kTokens, kTokens));
  }
  Eigen::Map<const RowMatrix> weight(int i) const { return {w[i].data(), kModel, kModel}; }

  void project(const float* x, std::int64_t r0, std::int64_t r1) {
    Eigen::Map<const RowMatrix> xs(x + r0 * kModel, r1 - r0, kModel);
    q.middleRows(r0, r1 - r0).noalias() = xs * weight(0);
    k.middleRows(r0, r1 - r0).noalias() = xs * weight(1);
    v.middleRows(r0, r1 - r0).noalias() = xs * weight(2);
  }
  void head(std::int64_t h) {
    RowMatrix& s = scores[static_cast<std::size_t>(h)];
    const auto cols = h * kHeadDim;
    s.noalias() = q.middleCols(cols, kHeadDim) * k.middleCols(cols, kHeadDim).transpose();
    s *= 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    softmax_rows(s.data(), s.data(), kTokens, 0, kTokens);
    o.middleCols(cols, kHeadDim).noalias() = s * v.middleCols(cols, kHeadDim);
  }
  void output(float* y, std::int64_t r0, std::int64_t r1) const {
    Eigen::Map<RowMatrix>(y + r0 * kModel, r1 - r0, kModel).noalias() =
        o.middleRows(r0, r1 - r0) * weight(3);
  }

  std::vector<float> w[4];
  RowMatrix q, k, v, o;
  std::vector<RowMatrix> scores;
};

void attention_128x256_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("attention");
  Value x = b.parameter(Shape(DType::kF32, {kTokens, kModel}));
  Value w[4];
  for (Value& wi : w) wi = b.parameter(Shape(DType::kF32, {kModel, kModel}));
  auto heads = [&](Value m) { return b.reshape(b.dot(x, m), {kTokens, kHeads, kHeadDim}); };
  Value q = heads(w[0]), k = heads(w[1]), v = heads(w[2]);
  const std::vector<std::int64_t> score_dims{kHeads, kTokens, kTokens};
  Value scores = b.multiply(b.dot_general(q, k, {{1}, {1}, {2}, {2}}),
                            broadcast_scalar(b, 1.0f / std::sqrt(float(kHeadDim)), score_dims));
  Value o = b.dot_general(softmax_last(b, scores, score_dims), v, {{0}, {1}, {2}, {0}});
  Value merged = b.reshape(b.transpose(o, {1, 0, 2}), {kTokens, kModel});
  Value y = b.dot(merged, w[3]);
  std::vector<std::vector<float>> args{attention_input()};
  std::vector<std::vector<std::int64_t>> dims{{kTokens, kModel}};
  for (int i = 0; i < 4; ++i) {
    args.push_back(attention_weight(i));
    dims.push_back({kModel, kModel});
  }
  Program<cpu::ThreadPool> p(b, {y}, args, dims);
  for (auto _ : state) p.run();
  check_close(state, p.output(0), model_reference("attention_128x256").data(), 1e-4);
}

void attention_128x256_eigen(benchmark::State& state) {
  const auto x = attention_input();
  Attention a;
  std::vector<float> y(static_cast<std::size_t>(kTokens * kModel));
  for (auto _ : state) {
    twin_parallel(kTokens, kThreads, [&](std::int64_t r0, std::int64_t r1) { a.project(x.data(), r0, r1); });
    twin_parallel(kHeads, kHeads, [&](std::int64_t h, std::int64_t) { a.head(h); });
    twin_parallel(kTokens, kThreads, [&](std::int64_t r0, std::int64_t r1) { a.output(y.data(), r0, r1); });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  check_close(state, y, model_reference("attention_128x256").data(), 1e-4);
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

// ---- Registration: one line per workload; each side that is missing is left out.

/// Times are wall-clock; the CPU column is the whole process's CPU time (every thread), which
/// a loaded machine disturbs less than the wall clock.
void add_variant(const std::string& name, BenchFn fn, benchmark::TimeUnit unit) {
  if (fn != nullptr)
    benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(unit)->UseRealTime()->MeasureProcessCPUTime();
}

/// `<name>/pjrt_lite`, then `<name>/eigen` and `<name>/libtorch` when they exist, one after
/// another so that the three see the machine in the same state.
void add_workload(const char* name, BenchFn pjrt_lite, BenchFn eigen, benchmark::TimeUnit unit) {
  add_variant(std::string(name) + "/pjrt_lite", pjrt_lite, unit);
  add_variant(std::string(name) + "/eigen", eigen, unit);
  add_variant(std::string(name) + "/libtorch", torch_peer(name), unit);
}

void register_workloads() {
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  using benchmark::kNanosecond;
  add_workload("tiny_mul_add_4", tiny_mul_add_4_pjrt_lite, tiny_mul_add_4_eigen, kNanosecond);
  add_workload("axpy_16M", axpy_16M_pjrt_lite, axpy_16M_eigen, kMillisecond);
  add_workload("copy_16M", copy_16M_pjrt_lite, copy_16M_eigen, kMillisecond);
  add_workload("chain_16M", chain_16M_pjrt_lite, chain_16M_eigen, kMillisecond);
  add_workload("gemm_256", gemm_pjrt_lite<256>, gemm_eigen<256>, kMicrosecond);
  add_workload("gemm_1024", gemm_pjrt_lite<1024>, gemm_eigen<1024>, kMillisecond);
  add_workload("mlp_b1", mlp_b1_pjrt_lite, mlp_b1_eigen, kMicrosecond);
  add_workload("mlp_b256", mlp_b256_pjrt_lite, mlp_b256_eigen, kMicrosecond);
  add_workload("mlp_grad_b256", mlp_grad_b256_pjrt_lite, mlp_grad_b256_eigen, kMicrosecond);
  add_workload("jit_call_tiny", jit_call_tiny_pjrt_lite, tiny_mul_add_4_eigen, kNanosecond);
  add_workload("compile_1000", compile_1000_pjrt_lite, nullptr, kMillisecond);
  add_workload("roundtrip_4", roundtrip_4_pjrt_lite, roundtrip_4_eigen, kNanosecond);
  add_workload("layer_norm_256x1024", layer_norm_256x1024_pjrt_lite, layer_norm_256x1024_eigen,
               kMicrosecond);
  add_workload("softmax_256x1024", softmax_256x1024_pjrt_lite, softmax_256x1024_eigen, kMicrosecond);
  add_workload("conv3x3_56x56x64", conv3x3_56x56x64_pjrt_lite, conv3x3_56x56x64_eigen,
               kMicrosecond);
  add_workload("attention_128x256", attention_128x256_pjrt_lite, attention_128x256_eigen,
               kMicrosecond);
  add_workload("conv3x3_b8_56x56x64", conv3x3_b8_56x56x64_pjrt_lite, conv3x3_b8_56x56x64_eigen, kMicrosecond);
  add_workload("conv1x1_56x56x64", conv1x1_56x56x64_pjrt_lite, conv1x1_56x56x64_eigen, kMicrosecond);
  add_workload("depthwise3x3_56x56x64", depthwise3x3_56x56x64_pjrt_lite, depthwise3x3_56x56x64_eigen,
               kMicrosecond);
  add_workload("gemm_same_flops", gemm_same_flops_pjrt_lite, gemm_same_flops_eigen, kMicrosecond);
}

}  // namespace

// ---- The hooks of workloads.hpp that need Eigen.

namespace pjrt_lite_bench {

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
  std::vector<float> y;
  if (workload == "layer_norm_256x1024" || workload == "softmax_256x1024") {
    const auto x = rows_input();
    y.resize(x.size());
    if (workload == "softmax_256x1024")
      softmax_rows(x.data(), y.data(), kCols, 0, kRows);
    else
      layer_norm_rows(x.data(), layer_norm_gamma().data(), layer_norm_beta().data(), y.data(), 0,
                      kRows);
  } else if (workload == "conv3x3_56x56x64") {
    y.resize(static_cast<std::size_t>(kConvPositions * kConvChannels));
    RowMatrix patches(kConvChunk, kConvDepth);
    conv_positions(conv_input().data(), conv_kernel().data(), conv_bias().data(), y.data(),
                   patches, 0, kConvPositions);
  } else if (workload == "attention_128x256") {
    y.resize(static_cast<std::size_t>(kTokens * kModel));
    const auto x = attention_input();
    Attention a;
    a.project(x.data(), 0, kTokens);
    for (std::int64_t h = 0; h < kHeads; ++h) a.head(h);
    a.output(y.data(), 0, kTokens);
  }
  return y;
}

#ifndef PJRT_LITE_BENCH_TORCH
BenchFn torch_peer(std::string_view) { return nullptr; }
void torch_thread_policy(char**) {}
std::string torch_description() { return {}; }
#endif

}  // namespace pjrt_lite_bench

int main(int argc, char** argv) {
  torch_thread_policy(argv);
  register_workloads();
  if (const std::string torch = torch_description(); !torch.empty())
    benchmark::AddCustomContext("libtorch", torch);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
