// A catalogue of bad inputs across the public API. Each case asserts the Status code and a
// fragment of the message that tells the user what to fix: a wrong input must never crash,
// hang or be silently accepted, and its error must name the culprit.
#include <doctest/doctest.h>

#include <array>
#include <utility>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/serialize.hpp"
#include "pjrt_lite/stablehlo/stablehlo.hpp"
#include "test_util.hpp"

namespace catalogue_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// The status a builder is left with after `f` adds to it.
template <class F>
Status builder_status(F f) {
  GraphBuilder b("catalogue");
  f(b);
  return b.status();
}

std::unique_ptr<cpu::Client<>> make_client() {
  return cpu::Client<>::create({.device_count = 2, .thread_count = 2}).value();
}

Graph add_graph() {
  GraphBuilder b("addxy");
  Value x = b.parameter(Shape(DType::kF32, {2}));
  Value y = b.parameter(Shape(DType::kF32, {2}));
  return b.build({b.add(x, y)}).value();
}

constexpr auto kInvalid = StatusCode::kInvalidArgument;

}  // namespace

TEST_CASE("catalogue: the builder") {
  check_error(builder_status([](GraphBuilder& b) { b.add(b.parameter(Shape(DType::kF32, {2})), b.parameter(Shape(DType::kF32, {3}))); }),
               kInvalid, "add");
  check_error(builder_status([](GraphBuilder& b) { b.add(b.parameter(Shape(DType::kF32, {2})), b.parameter(Shape(DType::kS32, {2}))); }),
               kInvalid, "add");
  check_error(builder_status([](GraphBuilder& b) { b.reshape(b.parameter(Shape(DType::kF32, {2, 3})), {4}); }),
               kInvalid, "reshape");
  check_error(builder_status([](GraphBuilder& b) { b.transpose(b.parameter(Shape(DType::kF32, {2, 3})), {0, 0}); }),
               kInvalid, "transpose");
  check_error(builder_status([](GraphBuilder& b) { b.slice(b.parameter(Shape(DType::kF32, {4})), {0}, {5}, {1}); }),
               kInvalid, "slice");
  check_error(builder_status([](GraphBuilder& b) { b.broadcast_in_dim(b.parameter(Shape(DType::kF32, {3})), {2, 4}, {1}); }),
               kInvalid, "broadcast_in_dim");
  check_error(builder_status([](GraphBuilder& b) { b.dot(b.parameter(Shape(DType::kF32, {2, 3})), b.parameter(Shape(DType::kF32, {4, 5}))); }),
               kInvalid, "dot");
  check_error(builder_status([](GraphBuilder& b) { b.concatenate({b.parameter(Shape(DType::kF32, {2})), b.parameter(Shape(DType::kF32, {2, 1}))}, 0); }),
               kInvalid, "concatenate");
  check_error(builder_status([](GraphBuilder& b) { b.reduce(b.parameter(Shape(DType::kF32, {2, 3})), b.constant(0.0f), OpCode::kAdd, {2}); }),
               kInvalid, "reduce");
  check_error(builder_status([](GraphBuilder& b) { b.unary(OpCode::kAdd, b.parameter(Shape(DType::kF32, {2}))); }),
               kInvalid, "is not a unary op");
  check_error(builder_status([](GraphBuilder& b) {
                 b.parameter(0, Shape(DType::kF32, {2}));
                 b.parameter(0, Shape(DType::kF32, {2}));
               }),
               kInvalid, "number 0 is already used");
  // A value of another builder.
  GraphBuilder other("other");
  Value foreign = other.parameter(Shape(DType::kF32, {2}));
  check_error(builder_status([&](GraphBuilder& b) { b.negate(foreign); }), kInvalid, "negate: operand 0");
  // The first error sticks, and build() reports it.
  GraphBuilder sticky("sticky");
  Value bad = sticky.reshape(sticky.parameter(Shape(DType::kF32, {3})), {2});
  check_error(sticky.build({bad}), kInvalid, "reshape");
}

TEST_CASE("catalogue: compile and the client") {
  check_error(cpu::Client<>::create({.device_count = 0}), kInvalid, "ClientOptions.device_count must be in [1, 1024]");
  check_error(cpu::Client<>::create({.thread_count = -1}), kInvalid, "ClientOptions.thread_count must be in [0, 4096]");
  check_error(cpu::Client<>::create({.memory_pool_bytes = -1}), kInvalid, "ClientOptions.memory_pool_bytes must be >= 0");
  check_error(cpu::Client<>::create({.compile_cache_capacity = -1}), kInvalid,
               "ClientOptions.compile_cache_capacity must be >= 0, got -1");
  auto client = make_client();
  check_error(client->compile(add_graph(), {.device_ids = {}}), kInvalid, "CompileOptions.device_ids is empty");
  check_error(client->compile(add_graph(), {.device_ids = {7}}), kInvalid, "no device with id 7");
  check_error(client->compile(add_graph(), {.device_ids = {1, 1}}), kInvalid, "device 1 appears twice");
  check_error(client->lookup_device(-1), kInvalid, "no device with id -1");
  check_error(reference::evaluate(add_graph(), {}), kInvalid, "takes 2 argument(s), got 0");
}

TEST_CASE("catalogue: execute") {
  auto client = make_client();
  auto exe = client->compile(add_graph()).value();
  auto good = client->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  auto wrong_shape = client->buffer_from_literal(Literal::vector<float>({1, 2, 3})).value();
  cpu::Device<>* d0 = client->devices()[0];
  auto run = [&](std::vector<cpu::Buffer<>*> args, ExecuteOptions options = {}) {
    return exe.execute_sharded(args, d0, options).status();
  };
  check_error(run({&good}), kInvalid, "1 arguments given, the program takes 2");
  check_error(run({&good, &wrong_shape}), kInvalid, "argument 1 has shape f32[3] but parameter 1 takes f32[2]");
  check_error(run({&good, nullptr}), kInvalid, "argument 1 is null");
  check_error(run({&good, &good}, {.donated_arguments = {0}}), kInvalid, "argument 0 is donated but is also passed as argument 1");
  check_error(run({&good, &good}, {.donated_arguments = {5}}), kInvalid, "donated_arguments[0] = 5 is not an argument index");
  check_error(exe.execute_sharded(std::vector<cpu::Buffer<>*>{&good, &good}, client->devices()[1]).status(),
               kInvalid, "cpu:1");
  auto deleted = client->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  deleted.delete_buffer();
  check_error(run({&good, &deleted}), StatusCode::kFailedPrecondition, "has been deleted or donated");
  exe.delete_executable();
  check_error(run({&good, &good}), StatusCode::kFailedPrecondition, "the executable has been deleted");
}

TEST_CASE("catalogue: buffers and transfers") {
  auto client = make_client();
  const std::array<std::int64_t, 1> two = {2};
  const std::array<std::int64_t, 1> negative = {-1};
  std::vector<float> host = {1, 2};
  auto make = [&](const void* data, std::span<const std::int64_t> dims, DType dtype = DType::kF32) {
    return client->buffer_from_host_buffer(std::span<const std::byte>(static_cast<const std::byte*>(data), data ? 8 : 0),
                                           dtype, dims, std::nullopt, HostBufferSemantics::kImmutableOnlyDuringCall,
                                           nullptr, static_cast<cpu::MemorySpace<>*>(nullptr));
  };
  check_error(make(nullptr, two), kInvalid, "data is null");
  check_error(make(host.data(), negative), kInvalid, "buffer_from_host_buffer");
  check_error(make(host.data(), two, DType::kInvalid), kInvalid, "buffer_from_host_buffer");
  check_error(client->buffer_from_literal(Literal()), kInvalid, "the literal has no valid shape");
  auto other = cpu::Client<>::create({}).value();
  check_error(client->buffer_from_literal(Literal::vector<float>({1}), other->memory_spaces()[0]), kInvalid,
               "belongs to another client");
  auto b = client->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  float dst[2];
  check_error(b.copy_raw_to_host(dst, 4, 8).await(), StatusCode::kOutOfRange, "copy_raw_to_host");
  check_error(b.copy_raw_to_host(nullptr, 0, 4).await(), kInvalid, "dst is null");
  check_error(b.copy_to_device(nullptr), kInvalid, "device is null");
  check_error(b.copy_to_memory_space(nullptr), kInvalid, "memory space is null");
  check_error(b.copy_to_device(other->devices()[0]), kInvalid, "copy_to_device: device");
  b.delete_buffer();
  check_error(b.to_literal().await(), StatusCode::kFailedPrecondition, "deleted");
  check_error(b.on_device_size_in_bytes(), StatusCode::kFailedPrecondition, "deleted");
  check_error(b.copy_to_device(client->devices()[1]), StatusCode::kFailedPrecondition, "deleted");
}

TEST_CASE("catalogue: futures") {
  Future<int> invalid;
  check_error(invalid.await(), StatusCode::kFailedPrecondition, "await or on_ready on an invalid Future");
  Future<int> abandoned;
  {
    auto pf = make_promise<int>();
    abandoned = pf.second;
  }
  check_error(abandoned.await(), StatusCode::kAborted, "promise destroyed before it was fulfilled");
  auto [p, f] = make_promise<int>();
  CHECK(p.set_error(Status()));  // an OK error is a caller bug and must not read as success
  check_error(f.await(), StatusCode::kInternal, "an OK Status was passed where an error was required");
  auto [p2, f2] = make_promise<int>();
  p2.set_error(not_found_error("upstream"));
  check_error(f2.map([](const int& v) { return v + 1; }).await(), StatusCode::kNotFound, "upstream");
}

TEST_CASE("catalogue: the StableHLO parser") {
  check_error(parse_stablehlo("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                                          "  %y = stablehlo.add %x, %x : tensor<3xf32>\n  return %y : tensor<2xf32>\n}"),
               kInvalid, "2:");
  check_error(parse_stablehlo("func.func @main("), kInvalid, "1:");
  check_error(parse_stablehlo("func.func @f() -> () { return }", "main"), StatusCode::kNotFound, "main");
  check_error(parse_stablehlo("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                                          "  %y = stablehlo.add %x, %z : tensor<2xf32>\n  return %y : tensor<2xf32>\n}"),
               kInvalid, "%z");
}

TEST_CASE("catalogue: the deserializers") {
  auto client = make_client();
  const std::vector<std::byte> garbage(32, std::byte{0x41});
  check_error(client->deserialize_executable(garbage), kInvalid, "no \"PJLX\" magic at byte 0");
  check_error(deserialize_graph(garbage), kInvalid, "deserialize_graph");
  auto exe = client->compile(add_graph()).value();
  std::vector<std::byte> bytes = exe.serialize();
  std::vector<std::byte> flipped = bytes;
  flipped[flipped.size() / 2] ^= std::byte{0x10};
  check_error(client->deserialize_executable(flipped), StatusCode::kDataLoss, "checksum mismatch");
  std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + 12);
  check_error(client->deserialize_executable(truncated), StatusCode::kDataLoss, "truncated");
  std::vector<std::byte> graph_bytes = serialize(add_graph());
  graph_bytes.resize(graph_bytes.size() - 3);
  check_error(deserialize_graph(graph_bytes), StatusCode::kDataLoss, "deserialize_graph");
}

TEST_CASE("catalogue: jit") {
  auto client = make_client();
  auto add = jit(*client, [](Tensor a, Tensor b) { return a + b; });
  check_error(add(Literal::vector<float>({1, 2, 3}), Literal::vector<float>({1, 2})), kInvalid,
               "f32[3] and f32[2] do not broadcast");
  auto not_a_tensor = jit(*client, [](Tensor) { return 1.0; });
  check_error(not_a_tensor(1.0f), kInvalid, "not a Tensor");
  auto bad_axis = jit(*client, [](Tensor x) { return sum(x, {3}); });
  check_error(bad_axis(Literal::vector<double>({1})), kInvalid, "axis 3 is out of range");
  auto bad_grad = jit(*client, grad([](Tensor x) { return x * 2.0; }));
  check_error(bad_grad(Literal::vector<double>({1, 2})), kInvalid, "must return a real scalar");
  // Buffers in: execute() before any call with that signature, and a deleted buffer.
  auto x = client->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  std::vector<cpu::Buffer<>> outputs;
  cpu::Buffer<>* args[] = {&x, &x};
  check_error(add.execute(args, outputs), StatusCode::kFailedPrecondition,
               "no executable for these buffers' shapes yet");
  // The success path, against the closed form 1 + 1, 2 + 2.
  StatusOr<Literal> sum = add(x, x);
  REQUIRE(sum.ok());
  CHECK(*sum == Literal::vector<float>({2, 4}));
  x.delete_buffer();
  check_error(add.execute(args, outputs), StatusCode::kFailedPrecondition, "has been deleted or donated");
}

// Sizes beyond any memory: 2^42 f32 elements are 16 TiB (17592186044416 bytes), 2^40 are
// 4 TiB (4398046511104 bytes). Each must come back as RESOURCE_EXHAUSTED naming the size,
// never end the process.
TEST_CASE("catalogue: programs and buffers larger than memory") {
  const Shape huge(DType::kF32, {std::int64_t{1} << 42});
  check_error(Literal::create(huge), StatusCode::kResourceExhausted, "cannot allocate 17592186044416 bytes");
  check_error(Literal::create(Shape(DType::kF32, {-1})), kInvalid, "dimension 0 is negative");
  auto client = make_client();
  check_error(client->create_uninitialized_buffer(huge, nullptr), StatusCode::kResourceExhausted,
               "create_uninitialized_buffer: a buffer of f32[4398046511104]: cannot allocate 17592186044416 bytes");

  // A temporary of 4 TiB: an iota summed up. The CPU compile plans it into the arena; the
  // reference evaluates the iota into a literal.
  const std::string iota_sum =
      "func.func @main() -> tensor<f32> {\n"
      "  %0 = stablehlo.iota dim = 0 : tensor<1099511627776xf32>\n"
      "  %1 = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %2 = stablehlo.reduce(%0 init: %1) applies stablehlo.add across dimensions = [0] :"
      " (tensor<1099511627776xf32>, tensor<f32>) -> tensor<f32>\n"
      "  return %2 : tensor<f32>\n}\n";
  StatusOr<Graph> iota_graph = parse_stablehlo(iota_sum);
  REQUIRE(iota_graph.ok());
  check_error(reference::evaluate(*iota_graph, {}), StatusCode::kResourceExhausted,
               "iota: its result f32[1099511627776]: cannot allocate 4398046511104 bytes");
  check_error(client->compile(iota_sum), StatusCode::kResourceExhausted, "cannot allocate 4398046511104 bytes");

  // A 16 TiB parameter: the program compiles (it needs no temporary), but no argument for it
  // can be made, on the host or on the device.
  const std::string big_parameter =
      "func.func @main(%x: tensor<4398046511104xf32>) -> tensor<f32> {\n"
      "  %1 = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %2 = stablehlo.reduce(%x init: %1) applies stablehlo.add across dimensions = [0] :"
      " (tensor<4398046511104xf32>, tensor<f32>) -> tensor<f32>\n"
      "  return %2 : tensor<f32>\n}\n";
  auto exe = client->compile(big_parameter);
  if (!exe.ok()) check_error(exe, StatusCode::kResourceExhausted, "bytes");
  StatusOr<Graph> parameter_graph = parse_stablehlo(big_parameter);
  REQUIRE(parameter_graph.ok());
  const Shape parameter = parameter_graph->shape(parameter_graph->parameters()[0]);
  check_error(Literal::create(parameter), StatusCode::kResourceExhausted, "cannot allocate 17592186044416 bytes");
  check_error(client->create_uninitialized_buffer(parameter, nullptr), StatusCode::kResourceExhausted,
               "cannot allocate 17592186044416 bytes");

  // A dense constant past the parser's limit.
  check_error(parse_stablehlo("func.func @main() -> tensor<4398046511104xf32> {\n"
                               "  %0 = stablehlo.constant dense<1.0> : tensor<4398046511104xf32>\n"
                               "  return %0 : tensor<4398046511104xf32>\n}\n"),
               StatusCode::kResourceExhausted, "tensor<4398046511104xf32> exceeds the limit of 1073741824 bytes");
}

// A moved-from buffer is not a crash: every operation says what happened.
TEST_CASE("catalogue: a moved-from buffer") {
  auto client = make_client();
  auto b = client->buffer_from_literal(Literal::vector<float>({1, 2})).value();
  cpu::Buffer<> taken = std::move(b);
  constexpr auto kGone = StatusCode::kFailedPrecondition;
  check_error(b.to_literal().await(), kGone, "to_literal: the buffer was moved from");
  check_error(b.get_ready_future().await(), kGone, "get_ready_future: the buffer was moved from");
  check_error(b.on_device_size_in_bytes(), kGone, "on_device_size_in_bytes: the buffer was moved from");
  float host[2] = {};
  check_error(b.copy_raw_to_host(host, 0, 8).await(), kGone, "copy_raw_to_host: the buffer was moved from");
  check_error(b.copy_raw_from_host(host, 0, 8), kGone, "copy_raw_from_host: the buffer was moved from");
  check_error(b.copy_to_device(client->devices()[1]), kGone, "copy_to_device: the buffer was moved from");
  check_error(b.copy_to_memory_space(client->memory_spaces()[0]), kGone,
               "copy_to_memory_space: the buffer was moved from");
  check_error(b.acquire_external_reference(), kGone, "acquire_external_reference: the buffer was moved from");
  b.delete_buffer();  // nothing to delete
  CHECK(b.is_deleted());
  CHECK(b.dtype() == DType::kInvalid);
  CHECK(b.on_device_shape() == Shape());
  CHECK(b.dims().empty());
  CHECK(b.memory_space() == nullptr);
  CHECK(b.device() == nullptr);
  CHECK(b.client() == nullptr);
  CHECK(b.to_string() == "Buffer(moved from)");
  // As an argument of an execution it is refused, not read.
  auto exe = client->compile(add_graph()).value();
  cpu::Buffer<>* args[] = {&taken, &b};
  CHECK_FALSE(exe.execute_sharded(args, client->devices()[0]).ok());
  // The buffer it moved into is whole.
  CHECK(taken.to_literal().await().value() == Literal::vector<float>({1, 2}));
}

}  // namespace catalogue_test
