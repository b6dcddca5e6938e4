// pjrt_lite_bench_isa: what the builds of the kernels are worth. Compiled with the project's
// default flags (no -march) and linked with the project's pjrt_lite::cpu_kernels, as a user's
// plain CMake build is, it runs model layers with each build of the kernels this machine has
// (CompileOptions::kernel_isa): `<workload>/<isa>`, e.g. conv3x3_56x56x64/baseline and
// conv3x3_56x56x64/x86-64-v3. The default build picks the first that the CPU runs
// (`pjrt_lite kernels` in the context). Each workload checks that every build's result is
// close to the first one's.
#include "common.hpp"

#include <cstdio>
#include <map>
#include <optional>

namespace pjrt_lite_bench {
namespace {

struct Workload {
  const char* name;
  Graph graph;
  std::vector<std::vector<float>> args;
  std::vector<std::vector<std::int64_t>> dims;
  double flops;
};

Workload conv3x3() {
  const std::vector<std::int64_t> dims{1, kConvSize, kConvSize, kConvChannels};
  return {"conv3x3_56x56x64", conv3x3_bias_relu_graph(), {conv_input(), conv_kernel(), conv_bias()},
          {dims, {3, 3, kConvChannels, kConvChannels}, {kConvChannels}},
          2.0 * kConvSize * kConvSize * kConvTaps * kConvChannels * kConvChannels};
}

Workload attention() {
  GraphBuilder b("attention");
  Value x = b.parameter(Shape(DType::kF32, {kTokens, kModel}));
  Value w[4];
  for (Value& v : w) v = b.parameter(Shape(DType::kF32, {kModel, kModel}));
  Value y = attention_graph(b, x, w, kTokens);
  std::vector<std::vector<float>> args{attention_input()};
  std::vector<std::vector<std::int64_t>> dims{{kTokens, kModel}};
  for (int i = 0; i < 4; ++i) {
    args.push_back(attention_weight(i));
    dims.push_back({kModel, kModel});
  }
  return {"attention_128", take(b.build({y}), "build"), args, dims,
          4 * 2.0 * kTokens * kModel * kModel + 2 * 2.0 * kTokens * kTokens * kModel};
}

Workload layer_norm() {
  GraphBuilder b("layer_norm");
  Value x = b.parameter(Shape(DType::kF32, {kRows, kCols}));
  Value gamma = b.parameter(Shape(DType::kF32, {kCols}));
  Value beta = b.parameter(Shape(DType::kF32, {kCols}));
  Value y = layer_norm_graph(b, x, gamma, beta, kRows, kCols, kLayerNormEps);
  return {"layer_norm_256x1024", take(b.build({y}), "build"), {rows_input(), layer_norm_gamma(), layer_norm_beta()},
          {{kRows, kCols}, {kCols}, {kCols}}, 0};
}

Workload gemm() {
  constexpr std::int64_t n = 1024;
  GraphBuilder b("gemm");
  Value x = b.parameter(Shape(DType::kF32, {n, n}));
  Value y = b.parameter(Shape(DType::kF32, {n, n}));
  return {"gemm_1024", take(b.build({b.dot(x, y)}), "build"), {gemm_lhs(n), gemm_rhs(n)}, {{n, n}, {n, n}},
          2.0 * n * n * n};
}

/// gemm_int8_1024/<isa>: the s8 x s8 -> s32 product of gemm_1024's size; every build's
/// result must equal the first one's exactly.
void run_gemm_int8(benchmark::State& state, cpu::KernelIsa isa) {
  constexpr std::int64_t n = 1024;
  cpu::CompileOptions options;
  options.kernel_isa = isa;
  Program<cpu::ThreadPool> p(gemm_int8_graph(n), {int8_matrix(n, 1), int8_matrix(n, 2)}, options);
  for (auto _ : state) p.run();
  state.counters["ops"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  static std::optional<Literal> first;
  Literal got = p.output_literal(0);
  if (!first) first = std::move(got);
  else if (!(got == *first)) state.SkipWithError("two builds of the kernels disagree on gemm_int8");
}

/// The first build's output of each workload, which the others must match.
std::map<std::string, std::vector<float>>& first_outputs() {
  static std::map<std::string, std::vector<float>> outputs;
  return outputs;
}

void run_workload(benchmark::State& state, const Workload& w, cpu::KernelIsa isa) {
  cpu::CompileOptions options;
  options.kernel_isa = isa;
  Program<cpu::ThreadPool> p(w.graph, w.args, w.dims, ExecutionMode::kSynchronous, options);
  for (auto _ : state) p.run();
  if (w.flops > 0)
    state.counters["flops"] = benchmark::Counter(w.flops, benchmark::Counter::kIsIterationInvariantRate);
  const std::vector<float> got = p.output(0);
  auto [it, first] = first_outputs().emplace(w.name, got);
  if (first) return;
  const std::vector<float>& want = it->second;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-3f * (1.0f + std::abs(want[i]))) {
      state.SkipWithError(("two builds of the kernels disagree at element " + std::to_string(i)).c_str());
      return;
    }
}

}  // namespace
}  // namespace pjrt_lite_bench

int main(int argc, char** argv) {
  using namespace pjrt_lite_bench;
  const std::vector<cpu::KernelIsa> isas = cpu::available_kernel_isas();
  std::string names;
  for (cpu::KernelIsa isa : isas) names += std::string(names.empty() ? "" : ", ") + std::string(cpu::kernel_isa_name(isa));
  benchmark::AddCustomContext("pjrt_lite kernels", std::string(cpu::kernel_isa_name(isas.front())));
  benchmark::AddCustomContext("pjrt_lite kernel builds", names);
  static const Workload workloads[] = {conv3x3(), attention(), layer_norm(), gemm()};
  for (const Workload& w : workloads)
    for (cpu::KernelIsa isa : isas)
      benchmark::RegisterBenchmark((std::string(w.name) + "/" + std::string(cpu::kernel_isa_name(isa))).c_str(),
                                   [&w, isa](benchmark::State& state) { run_workload(state, w, isa); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
  for (cpu::KernelIsa isa : isas)
    benchmark::RegisterBenchmark(("gemm_int8_1024/" + std::string(cpu::kernel_isa_name(isa))).c_str(),
                                 [isa](benchmark::State& state) { run_gemm_int8(state, isa); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
