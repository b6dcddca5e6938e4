// How to time an op or a whole program with pjrt_lite: compile once, warm up (the first runs
// fill the client's memory pools and the executable's run state), then time many synchronous
// executes and report the median and the best, with throughput from the executable's own
// cost_analysis(). For statistics across runs and machines use Google Benchmark, as bench/
// does; this shows the pattern with nothing but <chrono>.
//
//   ./build/examples/microbenchmark
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"

using namespace pjrt_lite;

namespace {
struct Timing {
  double median_us = 0, best_us = 0;
};

/// Times `iterations` executes of `exe` on `args`, each waited for, after `warmup` untimed ones.
StatusOr<Timing> time_executable(cpu::LoadedExecutable<>& exe, std::span<cpu::Buffer<>* const> args, int warmup,
                                 int iterations) {
  cpu::Device<>* device = exe.addressable_devices()[0];
  ExecuteOptions options;
  options.mode = ExecutionMode::kSynchronous;  // the call returns when the outputs are computed
  std::vector<cpu::Buffer<>> results;
  std::vector<double> us;
  for (int i = 0; i < warmup + iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    PJRT_LITE_RETURN_IF_ERROR(exe.execute_sharded(args, device, options, results));
    for (const auto& r : results) PJRT_LITE_RETURN_IF_ERROR(r.get_ready_future().await());
    const auto stop = std::chrono::steady_clock::now();
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  std::sort(us.begin(), us.end());
  return Timing{us[us.size() / 2], us.front()};
}

StatusOr<cpu::Buffer<>> filled(cpu::Client<>& client, std::vector<std::int64_t> dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.001f * static_cast<float>(i));
  return client.buffer_from_host_buffer(std::span<const float>(values), dims);
}

Status run(cpu::Client<>& client, const char* name, const Graph& graph, std::vector<cpu::Buffer<>>& inputs) {
  PJRT_LITE_ASSIGN_OR_RETURN(cpu::LoadedExecutable<> exe, client.compile(graph));
  std::vector<cpu::Buffer<>*> args;
  for (auto& b : inputs) args.push_back(&b);
  PJRT_LITE_ASSIGN_OR_RETURN(Timing t, time_executable(exe, args, 10, 200));
  const cpu::CostAnalysis& cost = exe.cost_analysis();
  std::printf("%-28s median %9.1f us  best %9.1f us  %7.2f GB/s  %7.2f GFLOP/s\n", name, t.median_us, t.best_us,
              double(cost.bytes_accessed) / (t.median_us * 1e3), cost.flops / (t.median_us * 1e3));
  return ok_status();
}

Status main_impl() {
  PJRT_LITE_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Client<>> client, cpu::Client<>::create({}));
  std::printf("CPU client, %d worker thread(s) plus the caller; 200 timed runs after 10 warm-up runs\n",
              client->executor().num_threads());
  {  // One op: a vector add, bound by memory bandwidth.
    constexpr std::int64_t n = 1 << 20;
    GraphBuilder b("add");
    Value x = b.parameter(Shape(DType::kF32, {n})), y = b.parameter(Shape(DType::kF32, {n}));
    PJRT_LITE_ASSIGN_OR_RETURN(Graph graph, b.build({b.add(x, y)}));
    std::vector<cpu::Buffer<>> inputs;
    PJRT_LITE_ASSIGN_OR_RETURN(auto xb, filled(*client, {n}));
    PJRT_LITE_ASSIGN_OR_RETURN(auto yb, filled(*client, {n}));
    inputs.push_back(std::move(xb));
    inputs.push_back(std::move(yb));
    PJRT_LITE_RETURN_IF_ERROR(run(*client, "add f32[1048576]", graph, inputs));
  }
  {  // A program: a dense layer, bound by the matrix product.
    constexpr std::int64_t n = 256;
    GraphBuilder b("dense");
    Value x = b.parameter(Shape(DType::kF32, {n, n})), w = b.parameter(Shape(DType::kF32, {n, n}));
    Value bias = b.parameter(Shape(DType::kF32, {n}));
    Value y = b.tanh(b.add(b.dot(x, w), b.broadcast_in_dim(bias, {n, n}, {1})));
    PJRT_LITE_ASSIGN_OR_RETURN(Graph graph, b.build({y}));
    std::vector<cpu::Buffer<>> inputs;
    PJRT_LITE_ASSIGN_OR_RETURN(auto xb, filled(*client, {n, n}));
    PJRT_LITE_ASSIGN_OR_RETURN(auto wb, filled(*client, {n, n}));
    PJRT_LITE_ASSIGN_OR_RETURN(auto bb, filled(*client, {n}));
    inputs.push_back(std::move(xb));
    inputs.push_back(std::move(wb));
    inputs.push_back(std::move(bb));
    PJRT_LITE_RETURN_IF_ERROR(run(*client, "tanh(x @ w + b) f32[256,256]", graph, inputs));
  }
  return ok_status();
}
}  // namespace

int main() {
  if (Status s = main_impl(); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}
