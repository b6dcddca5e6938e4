#pragma once
// What the benchmark's pjrt_lite-side translation units share (bench_main.cpp: the core
// workloads, registration and main; layers.cpp: norms, softmax, attention; conv.cpp:
// convolutions; models.cpp: ResNet block, LSTM cell, transformer encoder; sweeps.cpp: the
// inline vs pooled sweeps): the bench clients, Program, the twins' thread pool TwinPool, the
// graph pieces and hand-written row kernels that several workloads use, and registration.
//
// Threads: the threaded workloads run pjrt_lite on a ThreadPool client with one worker (the
// calling thread is the second), and the twins the same way through TwinPool: the calling
// thread and one thread of Eigen's ThreadPool, set up once, claim the same blocks pjrt_lite's
// parallel_for would split the work into, and wait the way it waits. The single-threaded
// workloads (tiny, mlp_b1, roundtrip) use an inline client and plain Eigen.
// Every twin writes into outputs and temporaries allocated before its timing loop, and keeps
// its result alive (benchmark::DoNotOptimize on the output after the work).
// Programs execute synchronously (ExecutionMode::kSynchronous) into a reused result list,
// the control-loop way, except the sweeps, which measure the default mode; clients keep
// enough pooled memory to recycle 64 MiB outputs.
//
// Every file that includes this is compiled with PJRT_LITE_CPU_EXTERN_KERNELS: the compiler
// and the kernels are compiled once, in kernels.cpp.
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
#include "pjrt_lite/ir/builder.hpp"
#include "workloads.hpp"

namespace pjrt_lite_bench {

using namespace pjrt_lite;

// ---- Clients and programs

/// Pooled device memory of the bench clients: room to recycle every output of a workload.
inline constexpr std::int64_t kPoolBytes = std::int64_t{1} << 30;

[[noreturn]] inline void die(const Status& s, const char* where) {
  std::fprintf(stderr, "%s: %s\n", where, s.to_string().c_str());
  std::abort();
}

template <class T>
T take(StatusOr<T> v, const char* where) {
  if (!v.ok()) die(v.status(), where);
  return std::move(v).value();
}

/// A client of kThreads - 1 workers (at least one: a pool of 0 means one per hardware thread;
/// a threaded workload on one thread runs on the inline client, `Program`).
template <class E>
std::unique_ptr<cpu::Client<E>> make_client() {
  return take(
      cpu::Client<E>::create({.thread_count = std::max(1, kThreads - 1), .memory_pool_bytes = kPoolBytes}),
      "client");
}

/// s8 values in [-128, 127] of shape `dims`, a fixed pattern per `seed`: the operands of
/// gemm_int8 (n x n matrices) and conv3x3_int8.
inline Literal int8_literal(const std::vector<std::int64_t>& dims, int seed) {
  Literal l(Shape(DType::kS8, dims));
  const std::vector<std::int8_t> v = int8_values(l.shape().element_count(), seed);
  std::copy(v.begin(), v.end(), l.data<std::int8_t>().begin());
  return l;
}
inline Literal int8_matrix(std::int64_t n, int seed) { return int8_literal({n, n}, seed); }

/// s8 x s8 -> s32 matmul as StableHLO's i8 dot_general with an i32 result arrives: converts,
/// then the product.
inline Graph gemm_int8_graph(std::int64_t n) {
  GraphBuilder b("gemm_int8");
  Value x = b.parameter(Shape(DType::kS8, {n, n}));
  Value y = b.parameter(Shape(DType::kS8, {n, n}));
  return take(b.build({b.dot(b.convert(x, DType::kS32), b.convert(y, DType::kS32))}), "build");
}

/// A compiled program with its arguments on the device. run() executes it in `mode`: by
/// default synchronously; in another mode it executes and then awaits the first output, as
/// a caller that needs the result does.
template <class E>
class ProgramOn {
 public:
  /// From a graph, or from StableHLO text as a JAX export prints it (client->compile(text)).
  ProgramOn(const Graph& graph, const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims,
          ExecutionMode mode = ExecutionMode::kSynchronous, const cpu::CompileOptions& options = {})
      : client_(make_client<E>()) {
    exe_.emplace(take(client_->compile(graph, options), "compile"));
    set_up(args, dims, mode);
  }
  ProgramOn(std::string_view stablehlo_text, const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims,
          ExecutionMode mode = ExecutionMode::kSynchronous)
      : client_(make_client<E>()) {
    exe_.emplace(take(client_->compile(stablehlo_text), "compile StableHLO"));
    set_up(args, dims, mode);
  }
  /// From a graph and arguments of any element type.
  ProgramOn(const Graph& graph, const std::vector<Literal>& args, const cpu::CompileOptions& options = {})
      : client_(make_client<E>()) {
    exe_.emplace(take(client_->compile(graph, options), "compile"));
    for (const Literal& a : args) args_.push_back(take(client_->buffer_from_literal(a), "upload"));
    finish_set_up(ExecutionMode::kSynchronous);
  }

  void run() {
    Status s = exe_->execute_sharded(arg_ptrs_, client_->devices()[0], options_, results_);
    if (!s.ok()) die(s, "execute");
    if (options_.mode != ExecutionMode::kSynchronous) {
      s = results_[0].get_ready_future().await();
      if (!s.ok()) die(s, "await");
    }
  }

  /// Output `j` of the last run, on the host.
  std::vector<float> output(std::size_t j) {
    Literal l = take(results_[j].to_literal().await(), "to_literal");
    const auto* p = static_cast<const float*>(l.untyped_data());
    return std::vector<float>(p, p + l.shape().element_count());
  }
  /// Output `j` of the last run as a literal.
  Literal output_literal(std::size_t j) { return take(results_[j].to_literal().await(), "to_literal"); }

 private:
  void set_up(const std::vector<std::vector<float>>& args,
              const std::vector<std::vector<std::int64_t>>& dims, ExecutionMode mode) {
    for (std::size_t i = 0; i < args.size(); ++i)
      args_.push_back(take(
          client_->buffer_from_host_buffer(std::span<const float>(args[i]), dims[i]), "upload"));
    finish_set_up(mode);
  }
  void finish_set_up(ExecutionMode mode) {
    for (auto& a : args_) arg_ptrs_.push_back(&a);
    options_.mode = mode;
    for (int i = 0; i < kWarmupRuns; ++i) run();
  }

  /// Runs before timing, as a twin allocates and touches its outputs before its loop: the
  /// first allocates the outputs, which every later run reuses (an execute into results_
  /// lets the previous ones go first), and takes their page faults (on a VM a fresh 64 MiB
  /// output cost about 100 ms of faults, twenty times the run that wrote it); each split
  /// loop's eight learning runs (four split, four alone; SplitLearner) follow, after which it
  /// runs the faster way. Ten covers both.
  static constexpr int kWarmupRuns = 10;

  std::unique_ptr<cpu::Client<E>> client_;
  std::optional<cpu::LoadedExecutable<E>> exe_;
  std::vector<cpu::Buffer<E>> args_;
  std::vector<cpu::Buffer<E>*> arg_ptrs_;
  std::vector<cpu::Buffer<E>> results_;
  ExecuteOptions options_;
};

/// ProgramOn<E>, except that a threaded workload (cpu::ThreadPool) runs on the inline client
/// when the bench runs on one thread (PJRT_LITE_BENCH_THREADS=1).
template <class E>
class Program {
 public:
  Program(const Graph& graph, const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims,
          ExecutionMode mode = ExecutionMode::kSynchronous, const cpu::CompileOptions& options = {}) {
    emplace(graph, args, dims, mode, options);
  }
  Program(std::string_view stablehlo_text, const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims,
          ExecutionMode mode = ExecutionMode::kSynchronous) {
    emplace(stablehlo_text, args, dims, mode);
  }
  Program(const Graph& graph, const std::vector<Literal>& args, const cpu::CompileOptions& options = {}) {
    emplace(graph, args, options);
  }
  Program(GraphBuilder& b, const std::vector<Value>& outputs,
          const std::vector<std::vector<float>>& args,
          const std::vector<std::vector<std::int64_t>>& dims,
          ExecutionMode mode = ExecutionMode::kSynchronous)
      : Program(take(b.build(outputs), "build"), args, dims, mode) {}

  void run() { alone_ ? alone_->run() : own_->run(); }
  std::vector<float> output(std::size_t j) { return alone_ ? alone_->output(j) : own_->output(j); }
  Literal output_literal(std::size_t j) { return alone_ ? alone_->output_literal(j) : own_->output_literal(j); }

 private:
  template <class... A>
  void emplace(const A&... a) {
    if (std::is_same_v<E, cpu::ThreadPool> && kThreads == 1)
      alone_.emplace(a...);
    else
      own_.emplace(a...);
  }

  std::optional<ProgramOn<E>> own_;
  std::optional<ProgramOn<cpu::InlineExecutor>> alone_;
};

// ---- The twins' threads

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
  TwinPool() : pool_(std::max(1, kThreads - 1)) {}  // one idle thread on one thread

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
inline const std::int64_t kElementwiseBlocks = kThreads * 8;

template <class F>
inline void twin_parallel(std::int64_t n, std::int64_t blocks, F&& fn) {
  TwinPool::get().parallel_for(n, blocks, fn);
}

using Array = Eigen::Map<Eigen::ArrayXf>;
using ConstArray = Eigen::Map<const Eigen::ArrayXf>;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Row = Eigen::RowVectorXf;

inline void check_close(benchmark::State& state, const std::vector<float>& got, const float* want,
                 double tolerance) {
  pjrt_lite_bench::check_close(state, got.data(), want, got.size(), tolerance,
                               "pjrt_lite and the Eigen twin disagree");
}

// ---- Graph pieces and hand-written row kernels shared by several workloads

inline Value broadcast_scalar(GraphBuilder& b, float v, std::vector<std::int64_t> dims) {
  return b.broadcast_in_dim(b.constant(v), std::move(dims), {});
}

/// Softmax over the last dimension of `x` (rank 2 or 3): exp(x - max) / sum.
inline Value softmax_last(GraphBuilder& b, Value x, const std::vector<std::int64_t>& dims) {
  const auto last = static_cast<std::int64_t>(dims.size()) - 1;
  std::vector<std::int64_t> keep_dims;
  for (std::int64_t d = 0; d < last; ++d) keep_dims.push_back(d);
  Value mx = b.reduce(x, b.constant(-std::numeric_limits<float>::infinity()), OpCode::kMaximum,
                      {last});
  Value e = b.exponential(b.subtract(x, b.broadcast_in_dim(mx, dims, keep_dims)));
  Value sum = b.reduce(e, b.constant(0.0f), OpCode::kAdd, {last});
  return b.divide(e, b.broadcast_in_dim(sum, dims, keep_dims));
}

/// A 3x3 convolution of NHWC data with an HWIO kernel, stride 1, SAME padding.
inline ConvolutionAttrs nhwc_conv3x3_attrs() {
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
  return attrs;
}

/// conv3x3_56x56x64's graph: a 3x3 SAME convolution of [1, 56, 56, 64] NHWC activations, +
/// bias, relu; parameters activations, HWIO kernel, bias.
inline Graph conv3x3_bias_relu_graph() {
  GraphBuilder b("conv3x3");
  const std::vector<std::int64_t> dims{1, kConvSize, kConvSize, kConvChannels};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value k = b.parameter(Shape(DType::kF32, {3, 3, kConvChannels, kConvChannels}));
  Value bias = b.parameter(Shape(DType::kF32, {kConvChannels}));
  Value conv = b.convolution(x, k, nhwc_conv3x3_attrs());
  Value y = b.maximum(b.add(conv, b.broadcast_in_dim(bias, dims, {3})), broadcast_scalar(b, 0.0f, dims));
  return take(b.build({y}), "build conv3x3");
}

/// Layer norm over the rows of x [rows, cols] as a framework exports it: mean, centred
/// values, variance, rsqrt, then scale and shift broadcast along the rows.
inline Value layer_norm_graph(GraphBuilder& b, Value x, Value gamma, Value beta, std::int64_t rows,
                              std::int64_t cols, float eps) {
  const std::vector<std::int64_t> dims{rows, cols};
  Value inv_n = broadcast_scalar(b, 1.0f / static_cast<float>(cols), {rows});
  Value mean = b.multiply(b.reduce(x, b.constant(0.0f), OpCode::kAdd, {1}), inv_n);
  Value xc = b.subtract(x, b.broadcast_in_dim(mean, dims, {0}));
  Value var = b.multiply(b.reduce(b.multiply(xc, xc), b.constant(0.0f), OpCode::kAdd, {1}), inv_n);
  Value rstd = b.rsqrt(b.add(var, broadcast_scalar(b, eps, {rows})));
  return b.add(b.multiply(b.multiply(xc, b.broadcast_in_dim(rstd, dims, {0})),
                          b.broadcast_in_dim(gamma, dims, {1})),
               b.broadcast_in_dim(beta, dims, {1}));
}

/// Self-attention of x [tokens, kModel] with the projections w[0..3] (query, key, value,
/// output; [kModel, kModel], no biases), kHeads heads: the graph a framework exports.
inline Value attention_graph(GraphBuilder& b, Value x, const Value (&w)[4], std::int64_t tokens) {
  auto heads = [&](Value m) { return b.reshape(b.dot(x, m), {tokens, kHeads, kHeadDim}); };
  Value q = heads(w[0]), k = heads(w[1]), v = heads(w[2]);
  const std::vector<std::int64_t> score_dims{kHeads, tokens, tokens};
  Value scores = b.multiply(b.dot_general(q, k, {{1}, {1}, {2}, {2}}),
                            broadcast_scalar(b, 1.0f / std::sqrt(float(kHeadDim)), score_dims));
  Value o = b.dot_general(softmax_last(b, scores, score_dims), v, {{0}, {1}, {2}, {0}});
  Value merged = b.reshape(b.transpose(o, {1, 0, 2}), {tokens, kModel});
  return b.dot(merged, w[3]);
}

/// Layer norm of rows [r0, r1) of x [.., n]: (x - mean) / sqrt(var + eps) * gamma + beta.
inline void layer_norm_rows(const float* x, const float* gamma, const float* beta, float* y,
                            std::int64_t n, float eps, std::int64_t r0, std::int64_t r1) {
  ConstArray g(gamma, n), bt(beta, n);
  for (std::int64_t r = r0; r < r1; ++r) {
    ConstArray row(x + r * n, n);
    Array out(y + r * n, n);
    out = row - row.mean();
    const float rstd = 1.0f / std::sqrt(out.square().mean() + eps);
    out = out * rstd * g + bt;
  }
}

/// Softmax of rows [r0, r1) of a row-major [.., n] matrix.
inline void softmax_rows(const float* x, float* y, std::int64_t n, std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    ConstArray row(x + r * n, n);
    Array out(y + r * n, n);
    out = (row - row.maxCoeff()).exp();
    out /= out.sum();
  }
}

/// Self-attention by hand for `tokens` tokens: the projections by blocks of tokens, each
/// head's scores, softmax and weighted values by head, the output projection by blocks of
/// tokens; every matrix sized once.
struct Attention {
  explicit Attention(std::int64_t tokens)
      : tokens(tokens), q(tokens, kModel), k(tokens, kModel), v(tokens, kModel), o(tokens, kModel) {
    for (int i = 0; i < 4; ++i) w[i] = attention_weight(i);
    scores.assign(kHeads, RowMatrix(tokens, tokens));
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
    softmax_rows(s.data(), s.data(), tokens, 0, tokens);
    o.middleCols(cols, kHeadDim).noalias() = s * v.middleCols(cols, kHeadDim);
  }
  void output(float* y, std::int64_t r0, std::int64_t r1) const {
    Eigen::Map<RowMatrix>(y + r0 * kModel, r1 - r0, kModel).noalias() =
        o.middleRows(r0, r1 - r0) * weight(3);
  }
  /// The whole layer on the twins' threads, into y [tokens, kModel].
  void run(const float* x, float* y) {
    twin_parallel(tokens, kThreads, [&](std::int64_t r0, std::int64_t r1) { project(x, r0, r1); });
    twin_parallel(kHeads, kHeads, [&](std::int64_t h, std::int64_t) { head(h); });
    twin_parallel(tokens, kThreads, [&](std::int64_t r0, std::int64_t r1) { output(y, r0, r1); });
  }
  /// The same on the calling thread alone (the references).
  void run_serial(const float* x, float* y) {
    project(x, 0, tokens);
    for (std::int64_t h = 0; h < kHeads; ++h) head(h);
    output(y, 0, tokens);
  }

  std::int64_t tokens;
  std::vector<float> w[4];
  RowMatrix q, k, v, o;
  std::vector<RowMatrix> scores;
};

// ---- Registration: each file registers its workloads; each side that is missing is left out.

/// Times are wall-clock; the CPU column is the whole process's CPU time (every thread), which
/// a loaded machine disturbs less than the wall clock.
inline void add_variant(const std::string& name, BenchFn fn, benchmark::TimeUnit unit) {
  if (fn != nullptr)
    benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(unit)->UseRealTime()->MeasureProcessCPUTime();
}

/// `<name>/pjrt_lite`, then `<name>/eigen` and `<name>/libtorch` when they exist, one after
/// another so that the three see the machine in the same state.
inline void add_workload(const char* name, BenchFn pjrt_lite, BenchFn eigen, benchmark::TimeUnit unit) {
  add_variant(std::string(name) + "/pjrt_lite", pjrt_lite, unit);
  add_variant(std::string(name) + "/eigen", eigen, unit);
  add_variant(std::string(name) + "/libtorch", torch_peer(name), unit);
}

/// The workloads of each file, in the order of the issue; main calls them in this order.
void register_core_workloads();   // bench_main.cpp
void register_layer_workloads();  // layers.cpp
void register_conv_workloads();   // conv.cpp
void register_model_workloads();  // models.cpp
void register_sweep_workloads();  // sweeps.cpp

/// model_reference's part for each file's workloads; empty for a name it does not know.
std::vector<float> layer_reference(std::string_view workload);
std::vector<float> conv_reference(std::string_view workload);
std::vector<float> models_reference(std::string_view workload);

}  // namespace pjrt_lite_bench
