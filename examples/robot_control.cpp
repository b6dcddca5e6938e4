// A robot's control loop: a policy MLP compiled once, then run every millisecond for 10 s
// on a threadless client (cpu::Client<cpu::InlineExecutor>): read the state, write the
// observation into its device buffer, execute, read the action back, step the plant. Prints
// the latency of each tick's policy call (p50 / p99 / max) and the heap allocations made
// during the loop, counted by the replaced global operator new below: none.
//
//   ./build/examples/robot_control [seconds]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <span>
#include <thread>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<std::int64_t> g_allocations{0};

void* counted_allocate(std::size_t size, std::size_t alignment) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (size == 0) size = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr) std::abort();  // this example runs out of memory loudly
  return p;
}
}  // namespace

// Every replaceable allocating form, so no allocation slips past the count.
void* operator new(std::size_t n) { return counted_allocate(n, 0); }
void* operator new[](std::size_t n) { return counted_allocate(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_allocate(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_allocate(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

using namespace pjrt_lite;
using InlineClient = cpu::Client<cpu::InlineExecutor>;
using InlineBuffer = cpu::Buffer<cpu::InlineExecutor>;

namespace {
constexpr std::int64_t kObs = 8, kHidden = 64, kAct = 2;
constexpr std::int64_t kObsDims[] = {1, kObs};

/// The weights of a deterministic (untrained) policy; a real one would load them.
std::vector<float> weights(std::int64_t rows, std::int64_t cols, float scale, float phase) {
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = scale * std::sin(0.7f * static_cast<float>(i) + phase);
  return w;
}

/// obs[8] -> tanh(64) -> tanh(64) -> tanh(2): the policy as a graph over parameters
/// (observation, w1, b1, w2, b2, w3, b3).
StatusOr<Graph> policy_graph() {
  GraphBuilder b("policy");
  Value obs = b.parameter(Shape(DType::kF32, {1, kObs}));
  Value x = obs;
  const std::int64_t widths[] = {kObs, kHidden, kHidden, kAct};
  for (int layer = 0; layer < 3; ++layer) {
    Value w = b.parameter(Shape(DType::kF32, {widths[layer], widths[layer + 1]}));
    Value bias = b.parameter(Shape(DType::kF32, {widths[layer + 1]}));
    x = b.tanh(b.add(b.dot(x, w), b.broadcast_in_dim(bias, {1, widths[layer + 1]}, {1})));
  }
  return b.build({x});
}

/// The same MLP in plain loops: the oracle the compiled policy is checked against.
void policy_reference(const float* obs, const std::vector<std::vector<float>>& params, float* action) {
  std::vector<double> x(obs, obs + kObs);
  const std::int64_t widths[] = {kObs, kHidden, kHidden, kAct};
  for (int layer = 0; layer < 3; ++layer) {
    const auto& w = params[static_cast<std::size_t>(2 * layer)];
    const auto& bias = params[static_cast<std::size_t>(2 * layer + 1)];
    std::vector<double> y(static_cast<std::size_t>(widths[layer + 1]));
    for (std::int64_t j = 0; j < widths[layer + 1]; ++j) {
      double acc = bias[static_cast<std::size_t>(j)];
      for (std::int64_t k = 0; k < widths[layer]; ++k)
        acc += x[static_cast<std::size_t>(k)] * w[static_cast<std::size_t>(k * widths[layer + 1] + j)];
      y[static_cast<std::size_t>(j)] = std::tanh(acc);
    }
    x = y;
  }
  for (std::int64_t j = 0; j < kAct; ++j) action[j] = static_cast<float>(x[static_cast<std::size_t>(j)]);
}

int fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.to_string().c_str());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 10.0;
  const auto ticks = static_cast<std::int64_t>(seconds * 1000);
  if (ticks <= 0) {
    std::fprintf(stderr, "usage: robot_control [seconds > 0]\n");
    return 2;
  }

  StatusOr<std::unique_ptr<InlineClient>> client_or = InlineClient::create({});
  if (!client_or.ok()) return fail(client_or.status());
  InlineClient& client = **client_or;
  StatusOr<Graph> graph = policy_graph();
  if (!graph.ok()) return fail(graph.status());
  StatusOr<cpu::LoadedExecutable<cpu::InlineExecutor>> exe = client.compile(*graph);
  if (!exe.ok()) return fail(exe.status());
  cpu::Device<cpu::InlineExecutor>* device = client.devices()[0];

  // The weights go to the device once; only the observation moves each tick.
  const std::int64_t widths[] = {kObs, kHidden, kHidden, kAct};
  std::vector<std::vector<float>> params;
  std::vector<InlineBuffer> param_buffers;
  for (int layer = 0; layer < 3; ++layer) {
    params.push_back(weights(widths[layer], widths[layer + 1], 1.5f / std::sqrt(float(widths[layer])), float(layer)));
    params.push_back(weights(1, widths[layer + 1], 0.1f, float(layer) + 0.5f));
    for (int p = 0; p < 2; ++p) {
      const std::vector<float>& host = params[params.size() - 2 + static_cast<std::size_t>(p)];
      const std::vector<std::int64_t> dims =
          p == 0 ? std::vector<std::int64_t>{widths[layer], widths[layer + 1]} : std::vector<std::int64_t>{widths[layer + 1]};
      StatusOr<InlineBuffer> buffer = client.buffer_from_host_buffer(std::span<const float>(host), dims);
      if (!buffer.ok()) return fail(buffer.status());
      param_buffers.push_back(std::move(buffer).value());
    }
  }

  // The plant: a unit point mass on a plane, pushed by the policy's action towards a target
  // that moves on a circle.
  float pos[2] = {0.5f, -0.2f}, vel[2] = {0, 0};
  alignas(16) float obs[kObs] = {};
  float action[kAct];
  // The observation's buffer is made once; each tick overwrites its contents in place.
  StatusOr<InlineBuffer> input = client.buffer_from_host_buffer(std::span<const float>(obs), kObsDims, device);
  if (!input.ok()) return fail(input.status());
  std::vector<InlineBuffer*> args(7);
  args[0] = &*input;
  for (std::size_t i = 0; i < param_buffers.size(); ++i) args[i + 1] = &param_buffers[i];
  std::vector<InlineBuffer> results;
  results.reserve(1);
  std::vector<double> latency_us(static_cast<std::size_t>(ticks));
  ExecuteOptions options;
  options.mode = ExecutionMode::kSynchronous;
  double worst_error = 0;

  auto tick = [&](std::int64_t t) -> Status {
    const float time = 0.001f * static_cast<float>(t);
    const float target[2] = {std::cos(time), std::sin(time)};
    obs[0] = pos[0], obs[1] = pos[1], obs[2] = vel[0], obs[3] = vel[1];
    obs[4] = target[0], obs[5] = target[1], obs[6] = target[0] - pos[0], obs[7] = target[1] - pos[1];
    PJRT_LITE_RETURN_IF_ERROR(input->copy_raw_from_host(obs, 0, sizeof(obs)));
    PJRT_LITE_RETURN_IF_ERROR(exe->execute_sharded(args, device, options, results));
    PJRT_LITE_RETURN_IF_ERROR(results[0].copy_raw_to_host(action, 0, sizeof(action)).await());
    results.clear();
    for (int i = 0; i < 2; ++i) {
      vel[i] += 0.001f * (4.0f * action[i] - 0.5f * vel[i]);
      pos[i] += 0.001f * vel[i];
    }
    return ok_status();
  };

  // Warm-up fills the client's pools and the executable's run state.
  for (std::int64_t t = 0; t < 10; ++t)
    if (Status s = tick(t); !s.ok()) return fail(s);
  {
    float expected[kAct];
    policy_reference(obs, params, expected);
    for (int i = 0; i < kAct; ++i) worst_error = std::max(worst_error, double(std::abs(expected[i] - action[i])));
  }

  std::printf("policy MLP %lld-%lld-%lld-%lld compiled once; running %lld ticks at 1 kHz on an inline executor\n",
              static_cast<long long>(kObs), static_cast<long long>(kHidden), static_cast<long long>(kHidden),
              static_cast<long long>(kAct), static_cast<long long>(ticks));
  using clock = std::chrono::steady_clock;
  auto next = clock::now();
  g_allocations.store(0);
  g_counting.store(true);
  for (std::int64_t t = 0; t < ticks; ++t) {
    next += std::chrono::microseconds(1000);
    const auto start = clock::now();
    Status status = tick(t);
    const auto stop = clock::now();
    if (!status.ok()) {
      g_counting.store(false);
      return fail(status);
    }
    latency_us[static_cast<std::size_t>(t)] = std::chrono::duration<double, std::micro>(stop - start).count();
    std::this_thread::sleep_until(next);
  }
  g_counting.store(false);
  const std::int64_t allocations = g_allocations.load();

  std::sort(latency_us.begin(), latency_us.end());
  auto at = [&](double q) { return latency_us[static_cast<std::size_t>(q * static_cast<double>(ticks - 1))]; };
  std::printf("policy latency: p50 %.1f us, p99 %.1f us, max %.1f us\n", at(0.5), at(0.99), latency_us.back());
  std::printf("heap allocations during the loop: %lld\n", static_cast<long long>(allocations));
  std::printf("policy vs plain C++ MLP: max abs difference %.2g\n", worst_error);
  return allocations == 0 && worst_error < 1e-5 ? 0 : 1;
}
