// Tests of sharded programs: shardings read from XLA's and Shardy's text forms, values split
// and assembled, the SPMD partitioner (which ops it partitions natively, which it gathers),
// and exported programs over several partitions run on the CPU client's devices, each
// checked against the same program evaluated whole by the reference interpreter (or, for
// shard_map bodies, against a closed form).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/sharding.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "pjrt_lite/transforms/spmd.hpp"
#include "test_util.hpp"

namespace spmd_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

constexpr auto f32s = &literal_of<float>;

/// 0, 1, 2, ... as f32 in shape `dims`.
Literal counting(std::vector<std::int64_t> dims) {
  Literal l(Shape(DType::kF32, dims));
  float x = 0;
  for (float& v : l.data<float>()) v = x++;
  return l;
}

/// Every element within a relative 1e-5 (absolute 1e-5 near zero); NaN only against NaN.
void check_close(const Literal& got, const Literal& want, const std::string& what) {
  REQUIRE_MESSAGE(got.shape().same_type_and_dims(want.shape()), what, ": ", got.shape(), " vs ", want.shape());
  const auto g = got.data<float>(), w = want.data<float>();
  for (std::size_t k = 0; k < g.size(); ++k) {
    const bool ok = std::isnan(w[k]) ? std::isnan(g[k]) : std::abs(g[k] - w[k]) <= 1e-5f * (1.0f + std::abs(w[k]));
    if (!ok) {
      FAIL_CHECK(what, ": element ", k, " is ", g[k], ", expected ", w[k]);
      return;
    }
  }
}

/// The module's @main evaluated whole by the reference interpreter.
std::vector<Literal> whole_reference(std::string_view text, const std::vector<Literal>& args) {
  stablehlo::Module m = require_ok(stablehlo::parse_module(text));
  const stablehlo::Function* f = m.find("main");
  REQUIRE(f != nullptr);
  return evaluate_ok(f->graph, args);
}

struct ShardedRun {
  std::vector<Literal> outputs;  // assembled
  std::vector<Sharding> parameter_shardings, output_shardings;
  std::vector<std::string> gathered;
  std::vector<Shape> parameter_parts;
};

/// `text` compiled by Client::compile on a client of `devices` devices, each argument split
/// by the executable's parameter shardings, every device run at once, the outputs assembled.
ShardedRun run_sharded(std::string_view text, const std::vector<Literal>& args, int devices) {
  auto client = cpu::Client<>::create({.device_count = devices, .thread_count = 2}).value();
  auto exe = client->compile(text);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  ShardedRun run;
  run.parameter_shardings = exe->parameter_shardings();
  run.output_shardings = exe->output_shardings();
  run.gathered = exe->gathered_ops();
  for (const Shape& s : exe->parameter_shapes()) run.parameter_parts.push_back(s);
  REQUIRE(run.parameter_shardings.size() == args.size());
  const std::size_t n = exe->addressable_devices().size();
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>>> buffers(n);
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>*>> lists(n);
  for (std::size_t k = 0; k < n; ++k) {
    const int partition = exe->participant_of(k);
    for (std::size_t i = 0; i < args.size(); ++i) {
      Literal part = require_ok(shard_of(args[i], run.parameter_shardings[i], partition));
      buffers[k].push_back(
          require_ok(client->buffer_from_literal(part, exe->addressable_devices()[k]->memory_spaces()[0])));
    }
    for (auto& b : buffers[k]) lists[k].push_back(&b);
  }
  auto out = exe->execute(lists);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  stablehlo::Module m = require_ok(stablehlo::parse_module(text));
  const Graph& g = m.find("main")->graph;
  for (std::size_t j = 0; j < run.output_shardings.size(); ++j) {
    std::vector<Literal> parts(n);
    for (std::size_t k = 0; k < n; ++k)
      parts[static_cast<std::size_t>(exe->participant_of(k))] = require_ok((*out)[k][j].to_literal().await());
    if (run.output_shardings[j].is_manual()) {
      run.outputs.push_back(parts[0]);
      continue;
    }
    run.outputs.push_back(require_ok(assemble(parts, run.output_shardings[j], g.shape(g.outputs()[j]))));
  }
  return run;
}

/// Runs `text` sharded and whole, and compares every output.
ShardedRun check_against_whole(std::string_view text, const std::vector<Literal>& args, int devices) {
  ShardedRun run = run_sharded(text, args, devices);
  const std::vector<Literal> want = whole_reference(text, args);
  REQUIRE(run.outputs.size() == want.size());
  for (std::size_t j = 0; j < want.size(); ++j) check_close(run.outputs[j], want[j], "output " + std::to_string(j));
  return run;
}

/// How many nodes of the partitioned program of `text`'s @main are `op`.
int count_ops(std::string_view text, OpCode op) {
  stablehlo::Module m = require_ok(stablehlo::parse_module(text));
  const stablehlo::Function* f = m.find("main");
  PartitionedProgram p = require_ok(partition(f->graph, f->sharding));
  int n = 0;
  for (std::int64_t i = 0; i < p.graph.num_nodes(); ++i) n += p.graph.node(i).op == op;
  return n;
}

Literal random_f32(std::mt19937_64& rng, std::vector<std::int64_t> dims) {
  return random_literal<float>(rng, Shape(DType::kF32, dims), -1.0, 1.0);
}

}  // namespace

TEST_CASE("sharding: XLA's text forms") {
  Sharding s = require_ok(parse_hlo_sharding("{devices=[2,1]0,1}"));
  CHECK(s.kind == Sharding::Kind::kTiled);
  CHECK(s.tiles == std::vector<std::int64_t>{2, 1});
  CHECK(s.devices == std::vector<std::int64_t>{0, 1});
  // The iota form with a transpose: iota(4) as [2,2], transposed: 0, 2, 1, 3.
  s = require_ok(parse_hlo_sharding("{devices=[2,2]<=[2,2]T(1,0)}"));
  CHECK(s.devices == std::vector<std::int64_t>{0, 2, 1, 3});
  s = require_ok(parse_hlo_sharding("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"));
  CHECK(s.tiles == std::vector<std::int64_t>{2, 1});
  CHECK(s.replication == 2);
  CHECK(s.describe() == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");
  CHECK(require_ok(parse_hlo_sharding(s.describe())) == s);
  CHECK(require_ok(parse_hlo_sharding("{replicated}")).is_whole());
  CHECK(require_ok(parse_hlo_sharding("{maximal device=1}")).device == 1);
  CHECK(require_ok(parse_hlo_sharding("{manual}")).is_manual());
  CHECK(require_ok(parse_hlo_sharding("{devices=[1,2]<=[2] metadata={op_name=\"x\"}}")).tiles ==
        std::vector<std::int64_t>{1, 2});
  std::vector<Sharding> tuple = require_ok(parse_hlo_shardings("{{devices=[2]0,1}, {replicated}}"));
  REQUIRE(tuple.size() == 2);
  CHECK(tuple[0].tiles == std::vector<std::int64_t>{2});
  CHECK(tuple[1].is_whole());

  check_error(parse_hlo_sharding("devices=[2]0,1"), StatusCode::kInvalidArgument, "expected {...}");
  check_error(parse_hlo_sharding("{devices=[2,2]0,1,2}"), StatusCode::kInvalidArgument, "lists 3 devices for 4 tiles");
  check_error(parse_hlo_sharding("{devices=[2]0,0}"), StatusCode::kInvalidArgument, "once");
  check_error(parse_hlo_sharding("{devices=[2]<=[3]}"), StatusCode::kInvalidArgument, "lists 3 devices for 2 tiles");
  check_error(parse_hlo_sharding("{devices=[1,1,2]<=[2] last_tile_dims={manual}}"), StatusCode::kUnimplemented,
              "last_tile_dims={manual}");
  check_error(parse_hlo_sharding("{unknown}"), StatusCode::kUnimplemented, "\"{unknown}\" is not read");
  check_error(parse_hlo_sharding("{devices=[2]<=[2]T(0,0)}"), StatusCode::kInvalidArgument, "not a permutation");
}

TEST_CASE("sharding: Shardy meshes become tile arrays") {
  const std::vector<std::pair<std::string, std::int64_t>> mesh = {{"x", 2}, {"y", 2}};
  // [{"x"}, {}]: rows over x, copies over y. Mesh position (x, y) holds device 2x + y.
  Sharding s = require_ok(sharding_on_mesh(mesh, {}, {{0}, {}}));
  CHECK(s.tiles == std::vector<std::int64_t>{2, 1});
  CHECK(s.replication == 2);
  CHECK(s.devices == std::vector<std::int64_t>{0, 1, 2, 3});
  // [{"y"}, {"x"}]: rows over y, columns over x: tile (r, c) on device 2c + r.
  s = require_ok(sharding_on_mesh(mesh, {}, {{1}, {0}}));
  CHECK(s.devices == std::vector<std::int64_t>{0, 2, 1, 3});
  // [{"x", "y"}]: x major.
  s = require_ok(sharding_on_mesh(mesh, {3, 2, 1, 0}, {{0, 1}}));
  CHECK(s.tiles == std::vector<std::int64_t>{4});
  CHECK(s.devices == std::vector<std::int64_t>{3, 2, 1, 0});
  check_error(sharding_on_mesh(mesh, {}, {{0}, {0}}), StatusCode::kInvalidArgument, "twice");
  check_error(sharding_on_mesh(mesh, {0, 1}, {{0}}), StatusCode::kInvalidArgument, "2 device ids for 4");
}

TEST_CASE("sharding: shard_of and assemble cut and join the tiles") {
  const Literal x = counting({4, 2});  // rows [0 1] [2 3] [4 5] [6 7]
  const Sharding rows = Sharding::tiled({2, 1}, {1, 0});  // partition 1 holds the first rows
  CHECK(values_of<float>(require_ok(shard_of(x, rows, 1))) == std::vector<float>{0, 1, 2, 3});
  CHECK(values_of<float>(require_ok(shard_of(x, rows, 0))) == std::vector<float>{4, 5, 6, 7});
  const Sharding cols = Sharding::tiled({1, 2});
  CHECK(values_of<float>(require_ok(shard_of(x, cols, 1))) == std::vector<float>{1, 3, 5, 7});
  std::vector<Literal> parts = {f32s({4, 5, 6, 7}, {2, 2}), f32s({0, 1, 2, 3}, {2, 2})};
  CHECK(require_ok(assemble(parts, rows, x.shape())) == x);
  check_error(shard_of(counting({3, 2}), rows, 0), StatusCode::kUnimplemented, "uneven sharding");
  check_error(assemble(std::vector<Literal>{parts[0]}, rows, x.shape()), StatusCode::kInvalidArgument,
              "1 parts for 2 partitions");
  check_error(shard_of(x, Sharding::manual(), 0), StatusCode::kInvalidArgument, "manual");
}

constexpr std::string_view kMlp = R"(
module @jit_mlp attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"},
                         %w1: tensor<16x32xf32> {mhlo.sharding = "{replicated}"},
                         %b1: tensor<32xf32> {mhlo.sharding = "{replicated}"},
                         %w2: tensor<32x4xf32> {mhlo.sharding = "{replicated}"})
      -> (tensor<8x4xf32> {jax.result_info = "", mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<32xf32>) -> tensor<8x32xf32>
    %2 = stablehlo.add %0, %1 : tensor<8x32xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<8x32xf32>
    %4 = stablehlo.maximum %2, %3 : tensor<8x32xf32>
    %5 = stablehlo.dot_general %4, %w2, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %6 = stablehlo.reduce(%5 init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0] : (tensor<8xf32>) -> tensor<8x4xf32>
    %8 = stablehlo.subtract %5, %7 : tensor<8x4xf32>
    %9 = stablehlo.exponential %8 : tensor<8x4xf32>
    return %9 : tensor<8x4xf32>
  }
})";

TEST_CASE("spmd: a batch-split MLP runs each device on its rows, with no collective") {
  std::mt19937_64 rng(1);
  const std::vector<Literal> args = {random_f32(rng, {8, 16}), random_f32(rng, {16, 32}), random_f32(rng, {32}),
                                     random_f32(rng, {32, 4})};
  ShardedRun run = check_against_whole(kMlp, args, 2);
  CHECK(run.gathered.empty());
  CHECK(run.parameter_parts[0].same_type_and_dims(Shape(DType::kF32, {4, 16})));
  CHECK(run.parameter_parts[1].same_type_and_dims(Shape(DType::kF32, {16, 32})));
  CHECK(run.output_shardings[0].tiles == std::vector<std::int64_t>{2, 1});
  CHECK(count_ops(kMlp, OpCode::kAllGather) == 0);
  CHECK(count_ops(kMlp, OpCode::kAllReduce) == 0);
  // The bias and the zeros are broadcast to each device's rows, not sliced from whole
  // broadcasts.
  CHECK(count_ops(kMlp, OpCode::kDynamicSlice) == 0);
}

constexpr std::string_view kContracting = R"(
module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<8x16xf32> {mhlo.sharding = "{devices=[1,2]<=[2]}"},
                         %w: tensor<16x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"})
      -> (tensor<8x4xf32> {mhlo.sharding = "{replicated}"}, tensor<16xf32> {mhlo.sharding = "{devices=[2]<=[2]}"},
          tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1]1,0}"}, tensor<8xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %c = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [0] : (tensor<8x16xf32>, tensor<f32>) -> tensor<16xf32>
    %2 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %3 = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
    return %0, %1, %2, %3 : tensor<8x4xf32>, tensor<16xf32>, tensor<8x4xf32>, tensor<8xf32>
  }
})";

TEST_CASE("spmd: a split contracting dimension sums partial products with an all_reduce, or a reduce_scatter") {
  std::mt19937_64 rng(2);
  const std::vector<Literal> args = {random_f32(rng, {8, 16}), random_f32(rng, {16, 4})};
  ShardedRun run = check_against_whole(kContracting, args, 2);
  CHECK(run.gathered.empty());
  CHECK(run.parameter_parts[0].same_type_and_dims(Shape(DType::kF32, {8, 8})));
  CHECK(run.parameter_parts[1].same_type_and_dims(Shape(DType::kF32, {8, 4})));
  // The product returned whole sums with an all_reduce; the row sums returned split keep
  // each partition's part of the sum (a reduce_scatter). The second product's rows are split
  // in the other order than the groups' ({devices=[2,1]1,0}): a reduce_scatter does not
  // fit, so it is all-reduced and sliced.
  CHECK(count_ops(kContracting, OpCode::kAllReduce) == 2);
  CHECK(count_ops(kContracting, OpCode::kReduceScatter) == 1);
  CHECK(count_ops(kContracting, OpCode::kAllGather) == 0);
}

// The tensor-parallel MLP layout: the first weight split by columns, the second by rows, the
// activations in between split by columns, one all_reduce at the end.
constexpr std::string_view kTensorParallel = R"(
module @jit_tp attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<4x8xf32> {mhlo.sharding = "{replicated}"},
                         %w1: tensor<8x16xf32> {mhlo.sharding = "{devices=[1,2]<=[2]}"},
                         %w2: tensor<16x8xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}) -> (tensor<4x8xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = stablehlo.tanh %0 : tensor<4x16xf32>
    %2 = stablehlo.dot_general %1, %w2, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    return %2 : tensor<4x8xf32>
  }
})";

TEST_CASE("spmd: a tensor-parallel MLP splits its weights and sums once") {
  std::mt19937_64 rng(9);
  const std::vector<Literal> args = {random_f32(rng, {4, 8}), random_f32(rng, {8, 16}), random_f32(rng, {16, 8})};
  ShardedRun run = check_against_whole(kTensorParallel, args, 2);
  CHECK(run.gathered.empty());
  CHECK(run.parameter_parts[1].same_type_and_dims(Shape(DType::kF32, {8, 8})));
  CHECK(run.parameter_parts[2].same_type_and_dims(Shape(DType::kF32, {8, 8})));
  CHECK(count_ops(kTensorParallel, OpCode::kAllReduce) == 1);
  CHECK(count_ops(kTensorParallel, OpCode::kAllGather) == 0);
}

constexpr std::string_view kMesh2x2 = R"(
module @jit_g attributes {mhlo.num_partitions = 4 : i32} {
  func.func public @main(%a: tensor<8x12xf32> {mhlo.sharding = "{devices=[2,2]<=[4]}"},
                         %b: tensor<12x6xf32> {mhlo.sharding = "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"})
      -> (tensor<8x6xf32> {mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"},
          tensor<8xf32> {mhlo.sharding = "{devices=[2,2]<=[4] last_tile_dim_replicate}"},
          tensor<6x8xf32> {mhlo.sharding = "{devices=[1,2,2]<=[4] last_tile_dim_replicate}"}) {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x12xf32>, tensor<12x6xf32>) -> tensor<8x6xf32>
    %c = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%a init: %c) applies stablehlo.maximum across dimensions = [1] : (tensor<8x12xf32>, tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.transpose %0, dims = [1, 0] : (tensor<8x6xf32>) -> tensor<6x8xf32>
    %3 = stablehlo.tanh %2 : tensor<6x8xf32>
    return %0, %1, %3 : tensor<8x6xf32>, tensor<8xf32>, tensor<6x8xf32>
  }
})";

TEST_CASE("spmd: a 2x2 device grid with partly replicated tiles") {
  std::mt19937_64 rng(3);
  const std::vector<Literal> args = {random_f32(rng, {8, 12}), random_f32(rng, {12, 6})};
  ShardedRun run = check_against_whole(kMesh2x2, args, 4);
  CHECK(run.gathered.empty());
  CHECK(run.parameter_parts[0].same_type_and_dims(Shape(DType::kF32, {4, 6})));
  CHECK(run.parameter_parts[1].same_type_and_dims(Shape(DType::kF32, {6, 6})));
}

constexpr std::string_view kConv = R"(
module @jit_conv attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<4x8x8x6xf32> {mhlo.sharding = "{devices=[2,1,1,1]<=[2]}"},
                         %k: tensor<3x3x6x8xf32> {mhlo.sharding = "{replicated}"},
                         %y: tensor<2x8x8x6xf32> {mhlo.sharding = "{replicated}"},
                         %k2: tensor<3x3x6x8xf32> {mhlo.sharding = "{devices=[1,1,1,2]<=[2]}"},
                         %z: tensor<2x8x8x6xf32> {mhlo.sharding = "{devices=[1,1,1,2]<=[2]}"},
                         %k3: tensor<3x3x6x8xf32> {mhlo.sharding = "{devices=[1,1,2,1]<=[2]}"},
                         %s: tensor<2x8x8x6xf32> {mhlo.sharding = "{devices=[1,2,1,1]<=[2]}"})
      -> (tensor<4x6x6x8xf32> {mhlo.sharding = "{devices=[2,1,1,1]<=[2]}"},
          tensor<2x6x6x8xf32> {mhlo.sharding = "{devices=[1,1,1,2]<=[2]}"},
          tensor<2x6x6x8xf32> {mhlo.sharding = "{replicated}"},
          tensor<2x6x6x8xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x8x8x6xf32>, tensor<3x3x6x8xf32>) -> tensor<4x6x6x8xf32>
    %1 = stablehlo.convolution(%y, %k2) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x8x8x6xf32>, tensor<3x3x6x8xf32>) -> tensor<2x6x6x8xf32>
    %2 = stablehlo.convolution(%z, %k3) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x8x8x6xf32>, tensor<3x3x6x8xf32>) -> tensor<2x6x6x8xf32>
    %3 = stablehlo.convolution(%s, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x8x8x6xf32>, tensor<3x3x6x8xf32>) -> tensor<2x6x6x8xf32>
    return %0, %1, %2, %3 : tensor<4x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>, tensor<2x6x6x8xf32>
  }
})";

TEST_CASE("spmd: convolutions split on batch, output feature and input feature, spatial splits gathered") {
  std::mt19937_64 rng(4);
  std::vector<Literal> args = {random_f32(rng, {4, 8, 8, 6}), random_f32(rng, {3, 3, 6, 8}),
                               random_f32(rng, {2, 8, 8, 6}), random_f32(rng, {3, 3, 6, 8}),
                               random_f32(rng, {2, 8, 8, 6}), random_f32(rng, {3, 3, 6, 8}),
                               random_f32(rng, {2, 8, 8, 6})};
  ShardedRun run = check_against_whole(kConv, args, 2);
  // Only the spatially split one gathers.
  CHECK(run.gathered == std::vector<std::string>{"convolution"});
  CHECK(count_ops(kConv, OpCode::kAllReduce) == 1);
}

constexpr std::string_view kShapes = R"(
module @jit_shapes attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<8x6xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"},
                         %y: tensor<8x6xf32> {mhlo.sharding = "{devices=[1,2]<=[2]}"})
      -> (tensor<2x4x6xf32> {mhlo.sharding = "{devices=[2,1,1]<=[2]}"}, tensor<48xf32> {mhlo.sharding = "{devices=[2]<=[2]}"},
          tensor<48xf32>, tensor<8x6xf32>, tensor<8x6xf32> {mhlo.sharding = "{devices=[1,2]<=[2]}"}) {
    %0 = stablehlo.reshape %x : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
    %1 = stablehlo.reshape %x : (tensor<8x6xf32>) -> tensor<48xf32>
    %2 = stablehlo.reshape %y : (tensor<8x6xf32>) -> tensor<48xf32>
    %3 = "stablehlo.sort"(%x) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %4 = stablehlo.add %x, %y : tensor<8x6xf32>
    %5 = stablehlo.custom_call @Sharding(%4) {mhlo.sharding = "{devices=[1,2]<=[2]}"} : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %6 = stablehlo.sine %5 : tensor<8x6xf32>
    return %0, %1, %2, %3, %6 : tensor<2x4x6xf32>, tensor<48xf32>, tensor<48xf32>, tensor<8x6xf32>, tensor<8x6xf32>
  }
})";

TEST_CASE("spmd: reshapes keep a major split, others and a sort gather, constraints reshard") {
  std::mt19937_64 rng(5);
  const std::vector<Literal> args = {random_f32(rng, {8, 6}), random_f32(rng, {8, 6})};
  ShardedRun run = check_against_whole(kShapes, args, 2);
  // The reshape of the column-split y flattens a minor split; the sort is along the split rows.
  CHECK(run.gathered == std::vector<std::string>{"reshape", "sort"});
  CHECK(run.output_shardings[2].is_whole());
}

constexpr std::string_view kReduceInit = R"(
module @jit_r attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<4x6xf32> {mhlo.sharding = "{devices=[1,2]<=[2]}"}) -> (tensor<4xf32>, tensor<4xf32>) {
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %0 = stablehlo.reduce(%x init: %one) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
    %two = stablehlo.constant dense<2.0> : tensor<f32>
    %1 = stablehlo.reduce(%x init: %two) applies stablehlo.multiply across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
})";

TEST_CASE("spmd: a reduction whose initial value is not its identity gathers instead of combining") {
  std::mt19937_64 rng(6);
  ShardedRun run = check_against_whole(kReduceInit, {random_f32(rng, {4, 6})}, 2);
  CHECK(run.gathered == std::vector<std::string>{"reduce", "reduce"});
  CHECK(count_ops(kReduceInit, OpCode::kAllReduce) == 0);
}

// shard_map as JAX lowers it without Shardy: x split in rows, each device sums its block with
// the other's (psum), the result replicated, and the blocks doubled back in place.
constexpr std::string_view kShardMap = R"(
module @jit_shmap attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"})
      -> (tensor<4x4xf32> {jax.result_info = "[0]", mhlo.sharding = "{replicated}"},
          tensor<8x4xf32> {jax.result_info = "[1]", mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<8x4xf32>) -> tensor<4x4xf32>
    %2:2 = call @shmap_body(%1) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    %3 = stablehlo.custom_call @Sharding(%2#0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = stablehlo.custom_call @Sharding(%2#1) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = stablehlo.custom_call @SPMDShardToFullShape(%5) {backend_config = "", mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<4x4xf32>) -> tensor<8x4xf32>
    return %4, %6 : tensor<4x4xf32>, tensor<8x4xf32>
  }
  func.func private @shmap_body(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %arg0, %arg0 : tensor<4x4xf32>
    return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
})";

TEST_CASE("spmd: shard_map bodies run on each device's block with their collectives") {
  const Literal x = counting({8, 4});
  ShardedRun run = run_sharded(kShardMap, {x}, 2);
  REQUIRE(run.outputs.size() == 2);
  // psum of the two row blocks, closed form: element (i, j) is x[i][j] + x[i + 4][j].
  std::vector<float> psum;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) psum.push_back(static_cast<float>(4 * i + j + 4 * (i + 4) + j));
  CHECK(values_of<float>(run.outputs[0]) == psum);
  std::vector<float> doubled;
  for (float v : x.data<float>()) doubled.push_back(2 * v);
  CHECK(values_of<float>(run.outputs[1]) == doubled);
  CHECK(run.gathered.empty());
  CHECK(run.parameter_parts[0].same_type_and_dims(Shape(DType::kF32, {4, 4})));
  // The unpartitioned graph means the same on every partition: the reference interpreter
  // runs it on both with the whole argument.
  stablehlo::Module m = require_ok(stablehlo::parse_module(kShardMap));
  reference::ParallelOptions o;
  o.num_partitions = 2;
  const std::vector<std::vector<Literal>> both = {{x}, {x}};
  auto whole = require_ok(reference::evaluate_parallel(m.find("main")->graph, both, o));
  CHECK(values_of<float>(whole[1][0]) == psum);
  CHECK(values_of<float>(whole[0][1]) == doubled);
}

// The same with Shardy's dialect: a mesh, sdy.sharding on arguments and results, a
// sharding constraint, and a manual computation over the mesh's axis.
constexpr std::string_view kShardy = R"(
module @jit_sdy attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>
  func.func public @main(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>},
                         %arg1: tensor<6x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>})
      -> (tensor<8x4xf32> {jax.result_info = "", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
          tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<8x4xf32>
    %2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x", "y"}, {}]>] manual_axes={"x", "y"} (%arg2: tensor<4x3xf32>) {
      %3 = "stablehlo.all_gather"(%arg2) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[3, 2], [1, 0]]> : tensor<2x2xi64>, use_global_device_ids}> : (tensor<4x3xf32>) -> tensor<4x6xf32>
      %4 = stablehlo.slice %3 [0:2, 0:6] : (tensor<4x6xf32>) -> tensor<2x6xf32>
      sdy.return %4 : tensor<2x6xf32>
    } : (tensor<8x6xf32>) -> tensor<8x6xf32>
    return %1, %2 : tensor<8x4xf32>, tensor<8x6xf32>
  }
})";

TEST_CASE("spmd: Shardy meshes, constraints and manual computations") {
  std::mt19937_64 rng(7);
  const std::vector<Literal> args = {counting({8, 6}), random_f32(rng, {6, 4})};
  ShardedRun run = run_sharded(kShardy, args, 4);
  REQUIRE(run.outputs.size() == 2);
  // Device ids [3, 2, 1, 0]: mesh position (x, y) is device 3 - 2x - y.
  CHECK(run.parameter_shardings[0].devices == std::vector<std::int64_t>{3, 2, 1, 0});
  const std::vector<Literal> whole = evaluate_ok(
      require_ok(stablehlo::parse_module(R"(
func.func @main(%a: tensor<8x6xf32>, %b: tensor<6x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
})")).find("main")->graph,
      args);
  check_close(run.outputs[0], whole[0], "the product");
  // Each device gathers its row block's columns (a 4x6 block) and keeps its first two rows;
  // the four results, split as [{"x", "y"}], are rows 0-1 and 4-5 of x, each twice.
  std::vector<float> want;
  for (int block : {0, 0, 1, 1})
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 6; ++j) want.push_back(static_cast<float>(6 * (4 * block + i) + j));
  CHECK(values_of<float>(run.outputs[1]) == want);
}

// Older GSPMD exports name no mhlo.num_partitions: the shardings say the program is for
// two devices. The shard_map body swaps the halves between the devices and adds one.
constexpr std::string_view kNoPartitionCount = R"(
module @jit_swap {
  func.func public @main(%arg0: tensor<4x3xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<4x3xf32> {jax.result_info = ""}) {
    %0 = call @swap(%arg0) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    return %0 : tensor<4x3xf32>
  }
  func.func private @swap(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{devices=[2,1]0,1}"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"} : (tensor<4x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.collective_permute"(%1) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %c = stablehlo.constant dense<1.0> : tensor<2x3xf32>
    %3 = stablehlo.add %2, %c : tensor<2x3xf32>
    %4 = stablehlo.custom_call @Sharding(%3) {mhlo.sharding = "{manual}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = stablehlo.custom_call @SPMDShardToFullShape(%4) {mhlo.sharding = "{devices=[2,1]0,1}"} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    return %5 : tensor<4x3xf32>
  }
})";

// The same as JAX writes it with Shardy: the meshes and shardings as frontend attributes
// (Shardy's round-trip form), the manual computation as GlobalToLocalShape, a call of its
// body, and LocalToGlobalShape.
constexpr std::string_view kShardyRoundTrip = R"(
module @jit_swap attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22a\22=2]>}"}, mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x3xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22a\22}, {}]>"}, mhlo.sharding = "{devices=[2,1]<=[2]}"}) -> (tensor<4x3xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22a\22}, {}]>]>", xla.sdy.manual_axes = "#sdy<manual_axes{\22a\22}>"}} : (tensor<4x3xf32>) -> tensor<2x3xf32>
    %1 = call @xla.sdy.manual_computation_body(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%1) {mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22a\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22a\22}, {}]>]>"}} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    %3 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%2) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\22a\22}, {}]>]>"}} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    return %3 : tensor<4x3xf32>
  }
  func.func @xla.sdy.manual_computation_body(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %c = stablehlo.constant dense<1.0> : tensor<2x3xf32>
    %1 = stablehlo.add %0, %c : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
})";

TEST_CASE("spmd: exports without a partition count, and Shardy's round-trip form") {
  const Literal x = counting({4, 3});
  // Rows 2-3 then rows 0-1, each plus one.
  std::vector<float> want;
  for (int i : {2, 3, 0, 1})
    for (int j = 0; j < 3; ++j) want.push_back(static_cast<float>(3 * i + j + 1));
  for (std::string_view text : {kNoPartitionCount, kShardyRoundTrip}) {
    ShardedRun run = run_sharded(text, {x}, 2);
    REQUIRE(run.outputs.size() == 1);
    CHECK(values_of<float>(run.outputs[0]) == want);
  }
  // The round-trip form's argument arrives in parts; the older export's whole.
  CHECK(run_sharded(kShardyRoundTrip, {x}, 2).parameter_parts[0].same_type_and_dims(Shape(DType::kF32, {2, 3})));
  CHECK(run_sharded(kNoPartitionCount, {x}, 2).parameter_parts[0].same_type_and_dims(Shape(DType::kF32, {4, 3})));
}

TEST_CASE("spmd: bad shardings and programs are refused with what is wrong") {
  auto client = cpu::Client<>::create({.device_count = 4, .thread_count = 1}).value();
  auto with_sharding = [](std::string_view sharding, std::string_view type = "tensor<8x6xf32>") {
    return str_cat("module @m attributes {mhlo.num_partitions = 2 : i32} {\n"
                   "  func.func public @main(%x: ", type, " {mhlo.sharding = \"", sharding, "\"}) -> ", type, " {\n",
                   "    %0 = stablehlo.negate %x : ", type, "\n    return %0 : ", type, "\n  }\n}\n");
  };
  check_error(client->compile(with_sharding("{devices=[3,1]<=[3]}")), StatusCode::kInvalidArgument,
              "spans 3 partition(s); the program runs on 2");
  check_error(client->compile(with_sharding("{devices=[2,1]<=[2]}", "tensor<7x6xf32>")), StatusCode::kUnimplemented,
              "uneven sharding: dimension 0");
  check_error(client->compile(with_sharding("{devices=[2]<=[2]}")), StatusCode::kInvalidArgument,
              "1 tile dimension(s) for a value of rank 2");
  check_error(client->compile(with_sharding("{devices=[2,1]0,7}")), StatusCode::kInvalidArgument, "once");
  check_error(client->compile(with_sharding("{devices=[2,1]<=[2]")), StatusCode::kInvalidArgument, "expected {...}");
  cpu::CompileOptions replicas;
  replicas.num_replicas = 2;
  check_error(client->compile(with_sharding("{devices=[2,1]<=[2]}"), replicas), StatusCode::kUnimplemented,
              "2 partitions and 2 replicas");
  // Two partitions on a client of one device.
  auto small = cpu::Client<>::create({.device_count = 1, .thread_count = 1}).value();
  CHECK_FALSE(small->compile(with_sharding("{devices=[2,1]<=[2]}")).ok());
  // shard_map's declared part does not match the sharding.
  check_error(client->compile(R"(
module @m attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"} : (tensor<8x4xf32>) -> tensor<8x2xf32>
    %2 = stablehlo.custom_call @SPMDShardToFullShape(%1) {mhlo.sharding = "{devices=[1,2]<=[2]}"} : (tensor<8x2xf32>) -> tensor<8x4xf32>
    return %2 : tensor<8x4xf32>
  }
})"),
              StatusCode::kInvalidArgument, "gives tensor<8x2xf32> but tensor<8x4xf32> split as {devices=[2,1]0,1}");
  // A Shardy sharding on a mesh the module does not declare, and a body manual over one axis of two.
  check_error(client->compile(R"(
module @m attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@nowhere, [{"x"}]>}) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
})"),
              StatusCode::kInvalidArgument, "the mesh @nowhere");
  check_error(client->compile(R"(
module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%a: tensor<4xf32>) {
      sdy.return %a : tensor<4xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
})"),
              StatusCode::kUnimplemented, "manual over some axes of @mesh only");
}

TEST_CASE("spmd: partition() on a built graph, with shardings given in the plan") {
  GraphBuilder b("f");
  const Value x = b.parameter(Shape(DType::kF32, {6, 4}));
  const Value y = b.parameter(Shape(DType::kF32, {4, 6}));
  const Value t = b.transpose(y, {1, 0});
  const Value s = b.multiply(b.exponential(x), t);
  const Value r = b.reduce(s, b.constant(0.0f), OpCode::kAdd, {0});
  const Graph g = build_ok(b, {s, r});
  ShardingPlan plan;
  plan.num_partitions = 3;
  plan.arguments = {Sharding::tiled({3, 1}), Sharding::tiled({1, 3})};
  plan.results = {Sharding::tiled({3, 1}), std::nullopt};
  PartitionedProgram p = require_ok(partition(g, plan));
  CHECK(p.gathered.empty());
  CHECK(p.graph.shape(p.graph.parameters()[0]).same_type_and_dims(Shape(DType::kF32, {2, 4})));
  std::mt19937_64 rng(8);
  const std::vector<Literal> args = {random_f32(rng, {6, 4}), random_f32(rng, {4, 6})};
  const std::vector<Literal> want = evaluate_ok(g, args);
  std::vector<std::vector<Literal>> parts(3);
  for (int k = 0; k < 3; ++k)
    for (std::size_t i = 0; i < 2; ++i) parts[static_cast<std::size_t>(k)].push_back(require_ok(shard_of(args[i], *plan.arguments[i], k)));
  reference::ParallelOptions o;
  o.num_partitions = 3;
  auto got = require_ok(reference::evaluate_parallel(p.graph, parts, o));
  std::vector<Literal> rows = {got[0][0], got[1][0], got[2][0]};
  check_close(require_ok(assemble(rows, p.output_shardings[0], Shape(DType::kF32, {6, 4}))), want[0], "s");
  for (int k = 0; k < 3; ++k) check_close(got[static_cast<std::size_t>(k)][1], want[1], "r");
  // A sharding the argument cannot take.
  plan.arguments = {Sharding::tiled({4, 1}), std::nullopt};
  check_error(partition(g, plan), StatusCode::kInvalidArgument, "argument 0");
}

}  // namespace spmd_test
