// pjrt_lite's benchmarks. Every workload is registered twice, `<workload>/pjrt_lite` and
// `<workload>/eigen` (a hand-written twin doing the same work with the same number of
// threads), so that one run of the binary gives both and their ratio. bench/run.sh runs it
// and regenerates bench/RESULTS.md.
//
// Threads: the threaded workloads run pjrt_lite on a ThreadPool client with one worker (the
// calling thread is the second), and the twin the same way: the calling thread and one
// thread of Eigen's ThreadPool each take half of the rows or elements. The single-threaded
// ones (tiny, mlp_b1, roundtrip) use an inline client and plain Eigen.
// Programs execute synchronously (ExecutionMode::kSynchronous) into a reused result list,
// the control-loop way; clients keep enough pooled memory to recycle 64 MiB outputs.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/ir/builder.hpp"

using namespace pjrt_lite;

namespace {

// ---- Shared set-up

/// Threads that compute in a threaded workload, on both sides.
constexpr int kThreads = 2;
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

std::vector<float> values(std::int64_t n, float scale, float phase) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = scale * std::sin(0.001f * static_cast<float>(i) + phase);
  return v;
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
  Program(GraphBuilder& b, const std::vector<Value>& outputs,
          const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims)
      : client_(make_client<E>()) {
    Graph graph = take(b.build(outputs), "build");
    exe_.emplace(take(client_->compile(graph), "compile"));
    for (std::size_t i = 0; i < args.size(); ++i)
      args_.push_back(take(
          client_->buffer_from_host_buffer(std::span<const float>(args[i]), dims[i]), "upload"));
    for (auto& a : args_) arg_ptrs_.push_back(&a);
    options_.mode = ExecutionMode::kSynchronous;
    run();  // warm-up: fills the pools and the run-state cache
  }

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

/// Runs fn(begin, end) over [0, n) in kThreads equal parts: one on the calling thread, the
/// others on Eigen's thread pool. The twins' way of using the same threads as pjrt_lite.
template <class F>
void twin_parallel(std::int64_t n, F fn) {
  static Eigen::ThreadPool pool(kThreads - 1);
  Eigen::Barrier done(kThreads - 1);
  for (int t = 1; t < kThreads; ++t)
    pool.Schedule([&fn, &done, n, t] {
      fn(n * t / kThreads, n * (t + 1) / kThreads);
      done.Notify();
    });
  fn(0, n / kThreads);
  done.Wait();
}

using Array = Eigen::Map<Eigen::ArrayXf>;
using ConstArray = Eigen::Map<const Eigen::ArrayXf>;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The largest |a - b| relative to max(1, |b|); the twins double as each other's check.
double max_error(const std::vector<float>& a, const float* b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst,
                     std::abs(double(a[i]) - double(b[i])) / std::max(1.0, std::abs(double(b[i]))));
  return worst;
}

void check_close(benchmark::State& state, const std::vector<float>& got, const float* want,
                 double tolerance) {
  const double err = max_error(got, want);
  state.counters["max_error"] = err;
  if (!(err <= tolerance)) state.SkipWithError("pjrt_lite and the Eigen twin disagree");
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

void tiny_mul_add_4_eigen(benchmark::State& state) {
  Eigen::ArrayXf x(4), y(4);
  x << 1, 2, 3, 4;
  for (auto _ : state) {
    benchmark::DoNotOptimize(x.data());
    y = x * 2.0f + 1.0f;
    benchmark::ClobberMemory();
  }
}

// ---- axpy_16M and copy_16M: memory bound.

constexpr std::int64_t k16M = std::int64_t{1} << 24;
constexpr std::int64_t kVectorBytes = k16M * 4;

struct Vectors16M {
  std::vector<float> a = values(k16M, 1.0f, 0.0f), b = values(k16M, 0.5f, 1.0f),
                     c = values(k16M, 0.25f, 2.0f);
};
const Vectors16M& vectors() {
  static Vectors16M v;
  return v;
}

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
    twin_parallel(k16M, [&](std::int64_t b, std::int64_t e) {
      Array(out.data() + b, e - b) =
          ConstArray(v.a.data() + b, e - b) * ConstArray(v.b.data() + b, e - b) +
          ConstArray(v.c.data() + b, e - b);
    });
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
    twin_parallel(k16M, [&](std::int64_t b, std::int64_t e) {
      Array(out.data() + b, e - b) = ConstArray(a + b, e - b);
    });
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
    twin_parallel(k16M, [&](std::int64_t b, std::int64_t e) {
      ConstArray x(v.a.data() + b, e - b), y(v.b.data() + b, e - b);
      Array(out.data() + b, e - b) = (x * y + (-x).exp()).tanh() * 0.5f + y;
    });
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
  const auto av = values(N * N, 1.0f, 0.0f), bv = values(N * N, 1.0f, 0.5f);
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
  const auto av = values(N * N, 1.0f, 0.0f), bv = values(N * N, 1.0f, 0.5f);
  std::vector<float> out(static_cast<std::size_t>(N * N));
  Eigen::Map<const RowMatrix> b(bv.data(), N, N);
  for (auto _ : state) {
    twin_parallel(N, [&](std::int64_t r0, std::int64_t r1) {
      Eigen::Map<RowMatrix>(out.data() + r0 * N, r1 - r0, N).noalias() =
          Eigen::Map<const RowMatrix>(av.data() + r0 * N, r1 - r0, N) * b;
    });
    benchmark::ClobberMemory();
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * N * N * N, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- mlp_b1 and mlp_b256: a 64-256-256-8 MLP, tanh after the hidden layers.

constexpr std::int64_t kIn = 64, kHidden = 256, kOut = 8;

struct MlpWeights {
  std::vector<float> w1 = values(kIn * kHidden, 0.1f, 0.1f), b1 = values(kHidden, 0.1f, 0.2f);
  std::vector<float> w2 = values(kHidden * kHidden, 0.06f, 0.3f), b2 = values(kHidden, 0.1f, 0.4f);
  std::vector<float> w3 = values(kHidden * kOut, 0.06f, 0.5f), b3 = values(kOut, 0.1f, 0.6f);
};
const MlpWeights& mlp_weights() {
  static MlpWeights w;
  return w;
}

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

/// The same forward pass with plain Eigen matrices on one thread, the hidden layers in `h1`
/// and `h2` (resized once, then reused); the twins' work and the check for both sides.
void mlp_eigen(const float* x, std::int64_t batch, float* out, RowMatrix& h1, RowMatrix& h2) {
  const auto& w = mlp_weights();
  using Row = Eigen::RowVectorXf;
  Eigen::Map<const RowMatrix> xm(x, batch, kIn), w1(w.w1.data(), kIn, kHidden),
      w2(w.w2.data(), kHidden, kHidden), w3(w.w3.data(), kHidden, kOut);
  Eigen::Map<const Row> b1(w.b1.data(), kHidden), b2(w.b2.data(), kHidden), b3(w.b3.data(), kOut);
  Eigen::Map<RowMatrix> y(out, batch, kOut);
  h1.resize(batch, kHidden);
  h2.resize(batch, kHidden);
  h1.noalias() = xm * w1;
  h1 = (h1.rowwise() + b1).array().tanh().matrix();
  h2.noalias() = h1 * w2;
  h2 = (h2.rowwise() + b2).array().tanh().matrix();
  y.noalias() = h2 * w3;
  y.rowwise() += b3;
}

void mlp_reference(const float* x, std::int64_t batch, float* out) {
  RowMatrix h1, h2;
  mlp_eigen(x, batch, out, h1, h2);
}

template <class E, std::int64_t Batch>
void mlp_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("mlp");
  Value y = mlp_forward(b, Batch);
  const auto& w = mlp_weights();
  const auto x = values(Batch * kIn, 1.0f, 0.7f);
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
  const auto xv = values(kIn, 1.0f, 0.7f);
  using Row = Eigen::RowVectorXf;
  Eigen::Map<const Row> x(xv.data(), kIn), b1(w.b1.data(), kHidden), b2(w.b2.data(), kHidden),
      b3(w.b3.data(), kOut);
  Eigen::Map<const RowMatrix> w1(w.w1.data(), kIn, kHidden), w2(w.w2.data(), kHidden, kHidden),
      w3(w.w3.data(), kHidden, kOut);
  Row h1(kHidden), h2(kHidden), y(kOut);
  for (auto _ : state) {
    h1.noalias() = x * w1;
    h1 = (h1 + b1).array().tanh().matrix();
    h2.noalias() = h1 * w2;
    h2 = (h2 + b2).array().tanh().matrix();
    y.noalias() = h2 * w3;
    y += b3;
    benchmark::DoNotOptimize(y.data());
  }
}

void mlp_b256_pjrt_lite(benchmark::State& state) { mlp_pjrt_lite<cpu::ThreadPool, 256>(state); }

void mlp_b256_eigen(benchmark::State& state) {
  // Each thread takes half of the batch through all three layers: no synchronization
  // between layers, the best a hand-written version can do.
  constexpr std::int64_t kBatch = 256;
  const auto xv = values(kBatch * kIn, 1.0f, 0.7f);
  std::vector<float> yv(kBatch * kOut);
  RowMatrix h1[kThreads], h2[kThreads];  // each thread's hidden layers
  for (auto _ : state) {
    twin_parallel(kBatch, [&](std::int64_t r0, std::int64_t r1) {
      const auto t = static_cast<std::size_t>(r0 * kThreads / kBatch);
      mlp_eigen(xv.data() + r0 * kIn, r1 - r0, yv.data() + r0 * kOut, h1[t], h2[t]);
    });
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

constexpr std::int64_t kGradBatch = 256;

/// Backpropagation by hand for rows [x, x + batch): dW1 into `gw1` (the other gradients are
/// computed too, as the pjrt_lite side computes them all).
void mlp_grad_rows(const float* x, const float* t, std::int64_t batch, RowMatrix& gw1,
                   RowMatrix& gw2, RowMatrix& gw3, Eigen::RowVectorXf& gb1, Eigen::RowVectorXf& gb2,
                   Eigen::RowVectorXf& gb3) {
  const auto& w = mlp_weights();
  using Row = Eigen::RowVectorXf;
  Eigen::Map<const RowMatrix> xm(x, batch, kIn), tm(t, batch, kOut), w1(w.w1.data(), kIn, kHidden),
      w2(w.w2.data(), kHidden, kHidden), w3(w.w3.data(), kHidden, kOut);
  Eigen::Map<const Row> b1(w.b1.data(), kHidden), b2(w.b2.data(), kHidden), b3(w.b3.data(), kOut);
  RowMatrix h1 = ((xm * w1).rowwise() + b1).array().tanh().matrix();
  RowMatrix h2 = ((h1 * w2).rowwise() + b2).array().tanh().matrix();
  RowMatrix d = ((h2 * w3).rowwise() + b3) - tm;
  gw3.noalias() = h2.transpose() * d;
  gb3 = d.colwise().sum();
  RowMatrix dz2 = ((d * w3.transpose()).array() * (1.0f - h2.array().square())).matrix();
  gw2.noalias() = h1.transpose() * dz2;
  gb2 = dz2.colwise().sum();
  RowMatrix dz1 = ((dz2 * w2.transpose()).array() * (1.0f - h1.array().square())).matrix();
  gw1.noalias() = xm.transpose() * dz1;
  gb1 = dz1.colwise().sum();
}

void mlp_grad_eigen(const float* x, const float* t, std::int64_t batch, RowMatrix& gw1) {
  RowMatrix gw2, gw3;
  Eigen::RowVectorXf gb1, gb2, gb3;
  mlp_grad_rows(x, t, batch, gw1, gw2, gw3, gb1, gb2, gb3);
}

void mlp_grad_b256_pjrt_lite(benchmark::State& state) {
  auto client = make_client<cpu::ThreadPool>();
  const auto& w = mlp_weights();
  const auto x = values(kGradBatch * kIn, 1.0f, 0.7f), t = values(kGradBatch * kOut, 0.5f, 0.9f);
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
  RowMatrix want_w1;
  mlp_grad_eigen(x.data(), t.data(), kGradBatch, want_w1);
  Literal got = take(grads[0].to_literal().await(), "to_literal");
  std::vector<float> got_v(got.data<float>().begin(), got.data<float>().end());
  check_close(state, got_v, want_w1.data(), 1e-3);
}

void mlp_grad_b256_eigen(benchmark::State& state) {
  // Each thread backpropagates half of the batch; the halves' gradients are summed.
  const auto x = values(kGradBatch * kIn, 1.0f, 0.7f), t = values(kGradBatch * kOut, 0.5f, 0.9f);
  RowMatrix gw1[kThreads], gw2[kThreads], gw3[kThreads];
  Eigen::RowVectorXf gb1[kThreads], gb2[kThreads], gb3[kThreads];
  RowMatrix total_w1;
  for (auto _ : state) {
    twin_parallel(kGradBatch, [&](std::int64_t r0, std::int64_t r1) {
      const auto k = static_cast<std::size_t>(r0 * kThreads / kGradBatch);
      mlp_grad_rows(x.data() + r0 * kIn, t.data() + r0 * kOut, r1 - r0, gw1[k], gw2[k], gw3[k],
                    gb1[k], gb2[k], gb3[k]);
    });
    total_w1 = gw1[0];
    for (int k = 1; k < kThreads; ++k) {
      total_w1 += gw1[k];
      gw2[0] += gw2[k];
      gw3[0] += gw3[k];
      gb1[0] += gb1[k];
      gb2[0] += gb2[k];
      gb3[0] += gb3[k];
    }
    benchmark::DoNotOptimize(total_w1.data());
  }
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
    Eigen::ArrayXf device = Eigen::Map<const Eigen::ArrayXf>(host, 4);
    Eigen::ArrayXf back = device;
    benchmark::DoNotOptimize(back.data());
  }
}

// ---- Registration: one line per workload. A twin of nullptr registers pjrt_lite alone.

using BenchFn = void (*)(benchmark::State&);

/// Times are wall-clock; the CPU column is the whole process's CPU time (every thread), which
/// a loaded machine disturbs less than the wall clock.
void add_workload(const char* name, BenchFn pjrt_lite, BenchFn eigen, benchmark::TimeUnit unit) {
  benchmark::RegisterBenchmark((std::string(name) + "/pjrt_lite").c_str(), pjrt_lite)
      ->Unit(unit)
      ->UseRealTime()
      ->MeasureProcessCPUTime();
  if (eigen != nullptr)
    benchmark::RegisterBenchmark((std::string(name) + "/eigen").c_str(), eigen)
        ->Unit(unit)
        ->UseRealTime()
        ->MeasureProcessCPUTime();
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
}

}  // namespace

int main(int argc, char** argv) {
  register_workloads();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
