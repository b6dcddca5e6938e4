// Sweeps: an element-wise multiply (sweep_mul_<n>: x * y) and a row reduction (sweep_sum_<n>:
// the sum over the last dimension) of f32[n / 1024, 1024] for n = 4K, 64K, 256K and 1M
// elements, each on the inline client (`<sweep>/pjrt_lite_inline`) and on the pooled client
// (`<sweep>/pjrt_lite_pooled`, cpu::ThreadPool with kThreads - 1 workers), in the default
// execution mode (ExecuteOptions{}: the backend chooses, and the caller then awaits the
// output, as a user who needs the result does; `_pooled_sync` is the pooled client in
// ExecutionMode::kSynchronous, for comparison). `_busy` variants run the same with one
// competitor thread spinning on a volatile counter for the whole timing loop, as another
// process keeping a core busy would. `<sweep>/eigen` is the arithmetic alone on one thread
// (the floor), `<sweep>/libtorch` the ATen op into a preallocated output on kThreads threads
// (ATen's own grain size decides whether it splits). bench/results_table.py prints the
// pooled / inline ratios. With PJRT_LITE_BENCH_THREADS=1 the pooled variants run on the inline
// client too (common.hpp's Program).
#include <iterator>
#include <thread>
#include <utility>

#include "common.hpp"

namespace pjrt_lite_bench {
namespace {

enum class SweepOp { kMul, kSum };

/// One thread spinning until destroyed: a competitor for the CPUs.
class BusyThread {
 public:
  BusyThread() : thread_([this] {
    while (!stop_.load(std::memory_order_relaxed)) counter_ = counter_ + 1;
  }) {}
  ~BusyThread() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }
  BusyThread(const BusyThread&) = delete;
  BusyThread& operator=(const BusyThread&) = delete;

 private:
  std::atomic<bool> stop_{false};
  volatile std::uint64_t counter_ = 0;
  std::thread thread_;
};

/// The expected output, computed in double.
std::vector<float> sweep_reference(SweepOp op, std::int64_t n) {
  const auto x = sweep_x(n), y = sweep_y(n);
  std::vector<float> want;
  if (op == SweepOp::kMul) {
    want.resize(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * y[i];
  } else {
    const std::int64_t rows = n / kSweepCols;
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (std::int64_t c = 0; c < kSweepCols; ++c) s += x[static_cast<std::size_t>(r * kSweepCols + c)];
      want.push_back(static_cast<float>(s));
    }
  }
  return want;
}

constexpr double sweep_tolerance(SweepOp op) { return op == SweepOp::kMul ? 0 : 1e-5; }

template <class E, SweepOp Op, std::int64_t N, bool Busy, ExecutionMode Mode = ExecutionMode::kDefault>
void sweep_pjrt_lite(benchmark::State& state) {
  const std::int64_t rows = N / kSweepCols;
  GraphBuilder b("sweep");
  Value x = b.parameter(Shape(DType::kF32, {rows, kSweepCols}));
  std::vector<std::vector<float>> args{sweep_x(N)};
  std::vector<std::vector<std::int64_t>> dims{{rows, kSweepCols}};
  Value out;
  if constexpr (Op == SweepOp::kMul) {
    Value y = b.parameter(Shape(DType::kF32, {rows, kSweepCols}));
    args.push_back(sweep_y(N));
    dims.push_back({rows, kSweepCols});
    out = b.multiply(x, y);
  } else {
    out = b.reduce(x, b.constant(0.0f), OpCode::kAdd, {1});
  }
  Program<E> p(b, {out}, args, dims, Mode);
  {
    std::optional<BusyThread> busy;
    if constexpr (Busy) busy.emplace();
    for (auto _ : state) p.run();
  }
  state.SetItemsProcessed(state.iterations() * N);
  check_close(state, p.output(0), sweep_reference(Op, N).data(), sweep_tolerance(Op));
}

template <SweepOp Op, std::int64_t N>
void sweep_eigen(benchmark::State& state) {
  const std::int64_t rows = N / kSweepCols;
  const auto x = sweep_x(N), y = sweep_y(N);
  std::vector<float> out(static_cast<std::size_t>(Op == SweepOp::kMul ? N : rows));
  for (auto _ : state) {
    benchmark::DoNotOptimize(x.data());
    if constexpr (Op == SweepOp::kMul) {
      Array(out.data(), N) = ConstArray(x.data(), N) * ConstArray(y.data(), N);
    } else {
      Eigen::Map<Eigen::VectorXf>(out.data(), rows) =
          Eigen::Map<const RowMatrix>(x.data(), rows, kSweepCols).rowwise().sum();
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * N);
  check_close(state, out, sweep_reference(Op, N).data(), sweep_tolerance(Op));
}

template <SweepOp Op, std::int64_t N>
void add_sweep(const char* op) {
  const std::string name = std::string("sweep_") + op + "_" + sweep_size_name(N);
  const auto unit = benchmark::kMicrosecond;
  add_variant(name + "/pjrt_lite_inline", sweep_pjrt_lite<cpu::InlineExecutor, Op, N, false>, unit);
  add_variant(name + "/pjrt_lite_pooled", sweep_pjrt_lite<cpu::ThreadPool, Op, N, false>, unit);
  // The same on the caller (the pool helping), to compare the default mode's hand-off with.
  add_variant(name + "/pjrt_lite_pooled_sync",
              sweep_pjrt_lite<cpu::ThreadPool, Op, N, false, ExecutionMode::kSynchronous>, unit);
  add_variant(name + "/eigen", sweep_eigen<Op, N>, unit);
  add_variant(name + "/libtorch", torch_peer(name), unit);
  add_variant(name + "/pjrt_lite_inline_busy", sweep_pjrt_lite<cpu::InlineExecutor, Op, N, true>, unit);
  add_variant(name + "/pjrt_lite_pooled_busy", sweep_pjrt_lite<cpu::ThreadPool, Op, N, true>, unit);
}

template <SweepOp Op, std::size_t... I>
void add_sweeps(const char* op, std::index_sequence<I...>) {
  (add_sweep<Op, kSweepSizes[I]>(op), ...);
}

}  // namespace

void register_sweep_workloads() {
  constexpr auto sizes = std::make_index_sequence<std::size(kSweepSizes)>();
  add_sweeps<SweepOp::kMul>("mul", sizes);
  add_sweeps<SweepOp::kSum>("sum", sizes);
}

}  // namespace pjrt_lite_bench
