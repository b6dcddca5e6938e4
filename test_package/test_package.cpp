// The package's headers and their dependencies are found: build a graph, compile and run it.
#include <cstdio>
#include <pjrt_lite/cpu.hpp>
#include <pjrt_lite/ir/builder.hpp>

int main() {
  using namespace pjrt_lite;
  auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
  GraphBuilder b("negate");
  Value x = b.parameter(Shape(DType::kF32, {2}));
  auto exe = client->compile(b.build({b.negate(x)}).value()).value();
  auto arg = client->buffer_from_literal(Literal::vector<float>({1, -2})).value();
  cpu::Buffer<cpu::InlineExecutor>* args[] = {&arg};
  Literal out = exe.execute_sharded(args, client->devices()[0]).value()[0].to_literal().await().value();
  const bool ok = out == Literal::vector<float>({-1, 2});
  std::printf("pjrt_lite test_package: %s\n", ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
