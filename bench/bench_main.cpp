// pjrt_lite's benchmarks. Every workload is registered twice, `<workload>/pjrt_lite` and
// `<workload>/eigen` (a hand-written twin doing the same work), so that one run of the binary
// gives both and their ratio.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include <Eigen/Core>

#include "pjrt_lite/cpu.hpp"

using namespace pjrt_lite;

namespace {

// roundtrip_4: put 4 f32 on the device and read them back.
void roundtrip_4_pjrt_lite(benchmark::State& state) {
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 1}).value();
  const float host[4] = {1, 2, 3, 4};
  const std::int64_t dims[1] = {4};
  for (auto _ : state) {
    auto buffer = client->buffer_from_host_buffer(std::as_bytes(std::span<const float>(host)), DType::kF32,
                                                  dims, std::nullopt,
                                                  HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                                  client->devices()[0]);
    StatusOr<Literal> back = buffer->to_literal().await();
    benchmark::DoNotOptimize(back.value().untyped_data());
  }
}
BENCHMARK(roundtrip_4_pjrt_lite)->Name("roundtrip_4/pjrt_lite");

void roundtrip_4_eigen(benchmark::State& state) {
  const float host[4] = {1, 2, 3, 4};
  for (auto _ : state) {
    // The same work by hand: an aligned device copy, then an aligned host copy of it.
    Eigen::ArrayXf device = Eigen::Map<const Eigen::ArrayXf>(host, 4);
    Eigen::ArrayXf back = device;
    benchmark::DoNotOptimize(back.data());
  }
}
BENCHMARK(roundtrip_4_eigen)->Name("roundtrip_4/eigen");

}  // namespace

BENCHMARK_MAIN();
