// Compiles y = x * 2 + 1 for the CPU, runs it on a threadless client, and checks the result.
#include <cstdio>
#include <pjrt_lite/cpu.hpp>
#include <pjrt_lite/ir/builder.hpp>

pjrt_lite::StatusOr<int> half_of_42();

int main() {
  using namespace pjrt_lite;
  auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
  GraphBuilder b("affine");
  Value x = b.parameter(Shape(DType::kF32, {3}));
  Value y = b.add(b.multiply(x, b.broadcast_in_dim(b.constant(2.0f), {3}, {})),
                  b.broadcast_in_dim(b.constant(1.0f), {3}, {}));
  auto exe = client->compile(b.build({y}).value()).value();
  auto arg = client->buffer_from_literal(Literal::vector<float>({-1, 0, 1.5f})).value();
  cpu::Buffer<cpu::InlineExecutor>* args[] = {&arg};
  Literal out = exe.execute_sharded(args, client->devices()[0]).value()[0].to_literal().await().value();
  const bool ok = out == Literal::vector<float>({-1, 1, 4}) && half_of_42().value() == 21;
  std::printf("consumer: %s\n", ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
