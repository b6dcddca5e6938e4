// A game engine's particle system: 100k particles under gravity and drag, bouncing on the
// floor, integrated each frame by one compiled program whose element-wise ops fuse into a
// single pass over memory. Each frame's outputs are the next frame's inputs. Prints frames per
// second, and checks the final state against the same integration in plain C++.
//
//   ./build/examples/particles [frames]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"

using namespace pjrt_lite;

namespace {
constexpr std::int64_t kParticles = 100'000;
constexpr float kDt = 1.0f / 60, kGravity = 9.81f, kDrag = 0.1f, kRestitution = 0.8f;

/// (x, y, vx, vy) -> the same one frame later.
StatusOr<Graph> step_graph() {
  GraphBuilder b("particles_step");
  const Shape shape(DType::kF32, {kParticles});
  Value x = b.parameter(shape), y = b.parameter(shape), vx = b.parameter(shape), vy = b.parameter(shape);
  auto scalar = [&](float v) { return b.broadcast_in_dim(b.constant(v), {kParticles}, {}); };
  Value damping = scalar(1 - kDrag * kDt), dt = scalar(kDt);
  Value vx1 = b.multiply(vx, damping);
  Value vy1 = b.multiply(b.subtract(vy, scalar(kGravity * kDt)), damping);
  Value x1 = b.add(x, b.multiply(vx1, dt));
  Value y1 = b.add(y, b.multiply(vy1, dt));
  // Below the floor: mirror the position and reverse the vertical speed, losing some of it.
  Value below = b.compare(y1, scalar(0), ComparisonDirection::kLt);
  Value y2 = b.select(below, b.negate(y1), y1);
  Value vy2 = b.select(below, b.multiply(b.negate(vy1), scalar(kRestitution)), vy1);
  return b.build({x1, y2, vx1, vy2});
}

/// The same frame in plain C++, with the same f32 operations in the same order.
void step_reference(std::vector<float>* s) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(kParticles); ++i) {
    const float vx1 = s[2][i] * (1 - kDrag * kDt);
    const float vy1 = (s[3][i] - kGravity * kDt) * (1 - kDrag * kDt);
    const float x1 = s[0][i] + vx1 * kDt, y1 = s[1][i] + vy1 * kDt;
    s[0][i] = x1;
    s[1][i] = y1 < 0 ? -y1 : y1;
    s[2][i] = vx1;
    s[3][i] = y1 < 0 ? -vy1 * kRestitution : vy1;
  }
}

int fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.to_string().c_str());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  const int frames = argc > 1 ? std::atoi(argv[1]) : 600;
  if (frames <= 0) {
    std::fprintf(stderr, "usage: particles [frames > 0]\n");
    return 2;
  }
  StatusOr<std::unique_ptr<cpu::Client<>>> client_or = cpu::Client<>::create({});
  if (!client_or.ok()) return fail(client_or.status());
  cpu::Client<>& client = **client_or;
  StatusOr<Graph> graph = step_graph();
  if (!graph.ok()) return fail(graph.status());
  StatusOr<cpu::LoadedExecutable<>> exe = client.compile(*graph);
  if (!exe.ok()) return fail(exe.status());

  // Particles start on a line at heights 1..11 m with sideways speeds in [-1, 1] m/s.
  std::vector<float> state[4];
  for (auto& v : state) v.resize(static_cast<std::size_t>(kParticles));
  for (std::int64_t i = 0; i < kParticles; ++i) {
    const auto u = static_cast<float>(i) / static_cast<float>(kParticles);
    const auto k = static_cast<std::size_t>(i);
    state[0][k] = u;
    state[1][k] = 1 + 10 * u;
    state[2][k] = std::sin(37 * u);
    state[3][k] = 0;
  }
  const std::int64_t dims[] = {kParticles};
  std::vector<cpu::Buffer<>> current;
  for (const auto& v : state) {
    StatusOr<cpu::Buffer<>> buffer = client.buffer_from_host_buffer(std::span<const float>(v), dims);
    if (!buffer.ok()) return fail(buffer.status());
    current.push_back(std::move(buffer).value());
  }

  // One fused pass per frame: no intermediate array, only the tiles each worker computes in.
  const cpu::MemoryStats& memory = exe->memory_stats();
  std::printf("%lld particles, %d frames; temporaries: %lld bytes, loop scratch: %lld bytes\n",
              static_cast<long long>(kParticles), frames,
              static_cast<long long>(memory.temp_bytes - memory.scratch_bytes),
              static_cast<long long>(memory.scratch_bytes));
  cpu::Device<>* device = client.devices()[0];
  std::vector<cpu::Buffer<>*> args(4);
  std::vector<cpu::Buffer<>> next;
  const auto start = std::chrono::steady_clock::now();
  for (int f = 0; f < frames; ++f) {
    for (std::size_t i = 0; i < 4; ++i) args[i] = &current[i];
    if (Status s = exe->execute_sharded(args, device, {}, next); !s.ok()) return fail(s);
    std::swap(current, next);  // the old state is released when `next` is overwritten
  }
  if (Status s = current[0].get_ready_future().await(); !s.ok()) return fail(s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.0f frames per second (%.3f ms per frame)\n", frames / seconds, 1e3 * seconds / frames);

  // One more frame from the final state, on the CPU client and in plain C++: a frame is
  // deterministic, many frames are not comparable (a particle at the floor may bounce in one
  // and not the other after a difference in the last bit).
  std::vector<float> got(static_cast<std::size_t>(kParticles));
  for (std::size_t i = 0; i < 4; ++i) {
    if (Status s = current[i].copy_raw_to_host(state[i].data(), 0, kParticles * 4).await(); !s.ok()) return fail(s);
    args[i] = &current[i];
  }
  if (Status s = exe->execute_sharded(args, device, {}, next); !s.ok()) return fail(s);
  step_reference(state);
  double worst = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    if (Status s = next[i].copy_raw_to_host(got.data(), 0, kParticles * 4).await(); !s.ok()) return fail(s);
    for (std::size_t k = 0; k < got.size(); ++k)
      worst = std::max(worst, double(std::abs(got[k] - state[i][k])) / std::max(1.0, double(std::abs(state[i][k]))));
  }
  std::printf("one frame vs plain C++: max relative difference %.2g\n", worst);
  return worst < 1e-5 ? 0 : 1;
}
