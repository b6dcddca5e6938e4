// The consumer without the CPU kernels: builds a graph, prints it as StableHLO, reads it back
// and compares fingerprints, and awaits a future. It checks that the target's include
// directories and dependencies (Eigen, threads) reach a user's translation unit at the
// cost of a light build; main.cpp also compiles and runs a program.
#include <cstdio>
#include <pjrt_lite/ir/builder.hpp>
#include <pjrt_lite/ir/fingerprint.hpp>
#include <pjrt_lite/stablehlo/parser.hpp>
#include <pjrt_lite/stablehlo/printer.hpp>

pjrt_lite::StatusOr<int> half_of_42();

int main() {
  using namespace pjrt_lite;
  GraphBuilder b("affine");
  Value x = b.parameter(Shape(DType::kF32, {3}));
  Value y = b.add(b.multiply(x, b.broadcast_in_dim(b.constant(2.0f), {3}, {})),
                  b.broadcast_in_dim(b.constant(1.0f), {3}, {}));
  Graph graph = b.build({y}).value();
  StatusOr<Graph> back = parse_stablehlo(to_stablehlo(graph));
  const bool ok = back.ok() && fingerprint(*back) == fingerprint(graph) && half_of_42().value() == 21;
  std::printf("consumer (light): %s\n", ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
