// Tests of many processes running one program: replica_id and partition_id, the collectives
// (the spec's examples, inputs and outputs as the spec gives them), the CPU client's grid
// execution against the reference interpreter's evaluate_parallel, StableHLO printing and
// reading, and bad input (groups that do not fit the grid, a participant that never comes).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/printer.hpp"
#include "pjrt_lite/ir/serialize.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "pjrt_lite/stablehlo/printer.hpp"
#include "pjrt_lite/stablehlo/runner.hpp"
#include "test_util.hpp"

namespace collectives_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

constexpr auto i64s = &literal_of<std::int64_t>;

/// The reference interpreter's outputs of `g` on a grid, process k on args[k].
std::vector<std::vector<Literal>> reference_run(const Graph& g, std::int64_t replicas, std::int64_t partitions,
                                                const std::vector<std::vector<Literal>>& args) {
  reference::ParallelOptions o;
  o.num_replicas = replicas;
  o.num_partitions = partitions;
  auto r = reference::evaluate_parallel(g, args, o);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return std::move(r).value();
}

/// The CPU client's outputs of `g` compiled for the grid, participant k on args[k] (on
/// device k), every participant at once through execute.
std::vector<std::vector<Literal>> cpu_run(const Graph& g, int replicas, int partitions,
                                          const std::vector<std::vector<Literal>>& args, bool optimize = true) {
  const int n = replicas * partitions;
  auto client = cpu::Client<>::create({.device_count = n, .thread_count = 2}).value();
  cpu::CompileOptions options;
  options.num_replicas = replicas;
  options.num_partitions = partitions;
  options.optimize = optimize;
  auto exe = client->compile(g, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  REQUIRE(exe->addressable_devices().size() == static_cast<std::size_t>(n));
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>>> buffers(static_cast<std::size_t>(n));
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>*>> pointers(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    for (const Literal& a : args[static_cast<std::size_t>(k)])
      buffers[static_cast<std::size_t>(k)].push_back(
          client->buffer_from_literal(a, exe->addressable_devices()[static_cast<std::size_t>(k)]->memory_spaces()[0]).value());
    for (auto& b : buffers[static_cast<std::size_t>(k)]) pointers[static_cast<std::size_t>(k)].push_back(&b);
  }
  auto out = exe->execute(pointers);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  std::vector<std::vector<Literal>> literals(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k)
    for (auto& b : (*out)[static_cast<std::size_t>(k)])
      literals[static_cast<std::size_t>(k)].push_back(b.to_literal().await().value());
  return literals;
}

/// Runs `text`'s @main on both backends and checks each process's outputs against `expected`.
void check_both(std::string_view text, int replicas, int partitions, const std::vector<std::vector<Literal>>& args,
                const std::vector<std::vector<Literal>>& expected) {
  StatusOr<Graph> g = parse_stablehlo(text);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  const auto ref = reference_run(*g, replicas, partitions, args);
  const auto cpu = cpu_run(*g, replicas, partitions, args);
  for (std::size_t k = 0; k < expected.size(); ++k) {
    CAPTURE(k);
    REQUIRE(ref[k].size() == expected[k].size());
    REQUIRE(cpu[k].size() == expected[k].size());
    for (std::size_t j = 0; j < expected[k].size(); ++j) {
      CHECK_MESSAGE(ref[k][j] == expected[k][j], "reference: ", ref[k][j].to_string(), " expected ", expected[k][j].to_string());
      CHECK_MESSAGE(cpu[k][j] == expected[k][j], "cpu: ", cpu[k][j].to_string(), " expected ", expected[k][j].to_string());
    }
  }
  // The printed form reads back to the same graph.
  StatusOr<Graph> back = parse_stablehlo(to_stablehlo(*g));
  REQUIRE_MESSAGE(back.ok(), back.status().to_string(), "\n", to_stablehlo(*g));
  CHECK(to_stablehlo(*back) == to_stablehlo(*g));
  CHECK(deserialize_graph(serialize(*g)).value() == *g);
}

constexpr std::string_view kAddBody = R"(({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %s = stablehlo.add %a, %b : tensor<i64>
        stablehlo.return %s : tensor<i64>
    }))";

/// A @main that sums its operand of type `in` over the replica group [0, 1] and scatters the
/// sum along dimension 1 into `out`; a `channel_id` above 0 spans the partitions too.
std::string reduce_scatter_program(std::string_view in, std::string_view out, int channel_id) {
  return str_cat("func.func @main(%x: ", in, ") -> ", out, R"( {
    %r = "stablehlo.reduce_scatter"(%x) )", kAddBody, R"( {
      scatter_dimension = 1 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = )", channel_id, R"(, type = 0>
    } : ()", in, ") -> ", out, R"(
    return %r : )", out, R"(
  })");
}

}  // namespace

TEST_CASE("collectives: replica_id and partition_id give each process its place in the grid") {
  const std::string text = R"(func.func @main() -> (tensor<ui32>, tensor<ui32>) {
    %r = "stablehlo.replica_id"() : () -> tensor<ui32>
    %p = "stablehlo.partition_id"() : () -> tensor<ui32>
    return %r, %p : tensor<ui32>, tensor<ui32>
  })";
  std::vector<std::vector<Literal>> args(6), expected;
  for (std::uint32_t k = 0; k < 6; ++k)
    expected.push_back({Literal::scalar<std::uint32_t>(k / 3), Literal::scalar<std::uint32_t>(k % 3)});
  check_both(text, 2, 3, args, expected);
  // Outside a grid they do not fold to constants: evaluate says why.
  check_error(reference::evaluate(parse_stablehlo(text).value(), {}), StatusCode::kFailedPrecondition,
              "evaluate_parallel");
}

TEST_CASE("collectives: all_reduce, the spec's example") {
  const std::string text = str_cat(R"(func.func @main(%x: tensor<4xi64>, %y: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
    %r:2 = "stablehlo.all_reduce"(%x, %y) )", kAddBody, R"( {
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<4xi64>, tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>)
    return %r#0, %r#1 : tensor<4xi64>, tensor<4xi64>
  })");
  std::vector<std::vector<Literal>> args = {{i64s({1, 2, 3, 4}, {4}), i64s({9, 10, 11, 12}, {4})},
                                            {i64s({5, 6, 7, 8}, {4}), i64s({13, 14, 15, 16}, {4})}};
  const std::vector<Literal> out = {i64s({6, 8, 10, 12}, {4}), i64s({22, 24, 26, 28}, {4})};
  check_both(text, 2, 1, args, {out, out});
}

TEST_CASE("collectives: all_gather, the spec's example") {
  const std::string text = R"(func.func @main(%x: tensor<2x2xi64>, %y: tensor<2x2xi64>) -> (tensor<2x4xi64>, tensor<2x4xi64>) {
    %r:2 = "stablehlo.all_gather"(%x, %y) {
      all_gather_dim = 1 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<2x2xi64>, tensor<2x2xi64>) -> (tensor<2x4xi64>, tensor<2x4xi64>)
    return %r#0, %r#1 : tensor<2x4xi64>, tensor<2x4xi64>
  })";
  std::vector<std::vector<Literal>> args = {{i64s({1, 2, 3, 4}, {2, 2}), i64s({11, 12, 13, 14}, {2, 2})},
                                            {i64s({5, 6, 7, 8}, {2, 2}), i64s({15, 16, 17, 18}, {2, 2})}};
  const std::vector<Literal> out = {i64s({1, 2, 5, 6, 3, 4, 7, 8}, {2, 4}), i64s({11, 12, 15, 16, 13, 14, 17, 18}, {2, 4})};
  check_both(text, 2, 1, args, {out, out});
}

TEST_CASE("collectives: all_to_all, the spec's example") {
  const std::string text = R"(func.func @main(%x: tensor<2x4xi64>, %y: tensor<2x4xi64>) -> (tensor<4x2xi64>, tensor<4x2xi64>) {
    %r:2 = "stablehlo.all_to_all"(%x, %y) {
      split_dimension = 1 : i64,
      concat_dimension = 0 : i64,
      split_count = 2 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<2x4xi64>, tensor<2x4xi64>) -> (tensor<4x2xi64>, tensor<4x2xi64>)
    return %r#0, %r#1 : tensor<4x2xi64>, tensor<4x2xi64>
  })";
  std::vector<std::vector<Literal>> args = {
      {i64s({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}), i64s({17, 18, 19, 20, 21, 22, 23, 24}, {2, 4})},
      {i64s({9, 10, 11, 12, 13, 14, 15, 16}, {2, 4}), i64s({25, 26, 27, 28, 29, 30, 31, 32}, {2, 4})}};
  check_both(text, 2, 1, args,
             {{i64s({1, 2, 5, 6, 9, 10, 13, 14}, {4, 2}), i64s({17, 18, 21, 22, 25, 26, 29, 30}, {4, 2})},
              {i64s({3, 4, 7, 8, 11, 12, 15, 16}, {4, 2}), i64s({19, 20, 23, 24, 27, 28, 31, 32}, {4, 2})}});
}

TEST_CASE("collectives: collective_broadcast, the spec's example") {
  const std::string text = R"(func.func @main(%x: tensor<1x2xi64>) -> tensor<1x2xi64> {
    %r = "stablehlo.collective_broadcast"(%x) {
      replica_groups = dense<[[2, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<1x2xi64>) -> tensor<1x2xi64>
    return %r : tensor<1x2xi64>
  })";
  std::vector<std::vector<Literal>> args = {{i64s({1, 2}, {1, 2})}, {i64s({3, 4}, {1, 2})}, {i64s({5, 6}, {1, 2})},
                                            {i64s({7, 8}, {1, 2})}};
  check_both(text, 4, 1, args,
             {{i64s({0, 0}, {1, 2})}, {i64s({5, 6}, {1, 2})}, {i64s({5, 6}, {1, 2})}, {i64s({0, 0}, {1, 2})}});
}

TEST_CASE("collectives: collective_permute, the spec's example") {
  const std::string text = R"(func.func @main(%x: tensor<2x2xi64>) -> tensor<2x2xi64> {
    %r = "stablehlo.collective_permute"(%x) {
      source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<2x2xi64>) -> tensor<2x2xi64>
    return %r : tensor<2x2xi64>
  })";
  std::vector<std::vector<Literal>> args = {{i64s({1, 2, 3, 4}, {2, 2})}, {i64s({5, 6, 7, 8}, {2, 2})},
                                            {i64s({9, 10, 11, 12}, {2, 2})}};
  check_both(text, 3, 1, args,
             {{i64s({0, 0, 0, 0}, {2, 2})}, {i64s({1, 2, 3, 4}, {2, 2})}, {i64s({5, 6, 7, 8}, {2, 2})}});
}

TEST_CASE("collectives: reduce_scatter, the spec's example") {
  const std::string text = reduce_scatter_program("tensor<2x4xi64>", "tensor<2x2xi64>", 0);
  std::vector<std::vector<Literal>> args = {{i64s({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4})},
                                            {i64s({9, 10, 11, 12, 13, 14, 15, 16}, {2, 4})}};
  check_both(text, 2, 1, args, {{i64s({10, 12, 18, 20}, {2, 2})}, {i64s({14, 16, 22, 24}, {2, 2})}});
}

TEST_CASE("collectives: all_gather and reduce_scatter over replicas and partitions span num_partitions") {
  // cross_replica_and_partition (a channel, no use_global_device_ids) on a 2 x 2 grid: the
  // row [0, 1] meets on every partition, group order (0, 0), (1, 0), (0, 1), (1, 1); process
  // k = replica * 2 + partition.
  const std::string gather = R"(func.func @main(%x: tensor<1x2xi64>) -> tensor<1x8xi64> {
    %r = "stablehlo.all_gather"(%x) {
      all_gather_dim = 1 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>
    } : (tensor<1x2xi64>) -> tensor<1x8xi64>
    return %r : tensor<1x8xi64>
  })";
  std::vector<std::vector<Literal>> args;
  for (std::int64_t k = 0; k < 4; ++k) args.push_back({i64s({k, 10 + k}, {1, 2})});
  const Literal all = i64s({0, 10, 2, 12, 1, 11, 3, 13}, {1, 8});
  check_both(gather, 2, 2, args, {{all}, {all}, {all}, {all}});
  // The partitions come from the declared type, or from the module's mhlo.num_partitions.
  const Graph g = parse_stablehlo(gather).value();
  CHECK(g.node(1).attr<CollectiveAttrs>().num_partitions == 2);
  const std::string module = str_cat("module attributes {mhlo.num_partitions = 2 : i32} {\n", gather, "\n}");
  CHECK(parse_stablehlo(module).value() == g);
  std::string three = module;
  three.replace(three.find("= 2 : i32"), 9, "= 3 : i32");
  check_error(parse_stablehlo(three), StatusCode::kInvalidArgument, "tensor<1x8xi64>");

  const std::string scatter = reduce_scatter_program("tensor<1x8xi64>", "tensor<1x2xi64>", 1);
  // Process k holds k + 10 j at j: the sum over the four is 6 + 40 j, split in four parts of
  // two, part i to the i-th of the group.
  args.clear();
  for (std::int64_t k = 0; k < 4; ++k) {
    std::vector<std::int64_t> v;
    for (std::int64_t j = 0; j < 8; ++j) v.push_back(k + 10 * j);
    args.push_back({i64s(v, {1, 8})});
  }
  check_both(scatter, 2, 2, args,
             {{i64s({6, 46}, {1, 2})}, {i64s({166, 206}, {1, 2})}, {i64s({86, 126}, {1, 2})}, {i64s({246, 286}, {1, 2})}});

  // A grid of other partitions than the types were inferred for is refused by both backends.
  auto client = cpu::Client<>::create({.device_count = 4, .thread_count = 1}).value();
  cpu::CompileOptions options;
  options.num_replicas = 2;
  options.num_partitions = 1;
  check_error(client->compile(g, options), StatusCode::kInvalidArgument, "has 2 members on a grid of 2 x 1, but the op's types need 4");
  reference::ParallelOptions grid;
  grid.num_replicas = 2;
  std::vector<std::vector<Literal>> two = {{i64s({0, 1}, {1, 2})}, {i64s({2, 3}, {1, 2})}};
  check_error(reference::evaluate_parallel(g, two, grid), StatusCode::kInvalidArgument,
              "all_gather: the process group has 2 members but the result gathers 4");
  // num_partitions belongs to that mode and those ops only, and is positive.
  GraphBuilder b("bad");
  Value x = b.parameter(Shape(kF32, {2}));
  CollectiveAttrs cross_replica{{0, 1}, 2, 0, 0, false, 0, 0, 0};
  cross_replica.num_partitions = 2;
  b.all_gather({x}, cross_replica);
  check_error(b.status(), StatusCode::kInvalidArgument, "only all_gather and reduce_scatter over replicas and partitions");
  GraphBuilder b2("bad2");
  CollectiveAttrs zero{{0, 1}, 2, 1, 0, false, 0, 0, 0};
  zero.num_partitions = 0;
  b2.all_gather({b2.parameter(Shape(kF32, {2}))}, zero);
  check_error(b2.status(), StatusCode::kInvalidArgument, "num_partitions must be positive");
}

TEST_CASE("collectives: all_reduce's replica_groups may be ragged, padded with -1") {
  const std::string text = str_cat(R"(func.func @main(%x: tensor<2xi64>) -> tensor<2xi64> {
    %r = "stablehlo.all_reduce"(%x) )", kAddBody, R"( {
      replica_groups = dense<[[0, 2], [1, -1]]> : tensor<2x2xi64>
    } : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>
  })");
  std::vector<std::vector<Literal>> args = {{i64s({1, 2}, {2})}, {i64s({30, 40}, {2})}, {i64s({500, 600}, {2})}};
  check_both(text, 3, 1, args, {{i64s({501, 602}, {2})}, {i64s({30, 40}, {2})}, {i64s({501, 602}, {2})}});
  // Only all_reduce's rows are padded, only with -1, and only at their end.
  auto refused = [](OpCode op, std::vector<std::int64_t> groups) {
    GraphBuilder b("bad");
    Value x = b.parameter(Shape(kF32, {4}));
    const CollectiveAttrs a{std::move(groups), 2, 0, 0, false, 0, 0, 0};
    if (op == OpCode::kAllReduce) b.all_reduce(x, OpCode::kAdd, a);
    else b.all_gather({x}, a);
    return b.status();
  };
  check_error(refused(OpCode::kAllGather, {0, 1, 2, -1}), StatusCode::kInvalidArgument, "holds the negative id -1");
  check_error(refused(OpCode::kAllReduce, {0, 1, 2, -2}), StatusCode::kInvalidArgument, "only -1 pads a row");
  check_error(refused(OpCode::kAllReduce, {-1, 0, 1, 2}), StatusCode::kInvalidArgument, "row 0 has the id 0 after its -1 padding");
  CHECK(refused(OpCode::kAllReduce, {0, 1, 2, -1}).ok());
  // A process left out of every row is still an error.
  const Graph g = parse_stablehlo(text).value();
  auto client = cpu::Client<>::create({.device_count = 4, .thread_count = 1}).value();
  cpu::CompileOptions options;
  options.num_replicas = 4;
  check_error(client->compile(g, options), StatusCode::kInvalidArgument, "leave replica 3 out");
}

TEST_CASE("collectives: collective_broadcast with has_dynamic_root takes each result from the member its root names") {
  // The spec: result j comes from process_groups[i, root[j]].
  const std::string text = R"(func.func @main(%x: tensor<1x2xi64>, %y: tensor<2xi64>, %root: tensor<2xi32>) -> (tensor<1x2xi64>, tensor<2xi64>) {
    %r:2 = "stablehlo.collective_broadcast"(%x, %y, %root) {
      replica_groups = dense<[[2, 1, 0]]> : tensor<1x3xi64>,
      has_dynamic_root
    } : (tensor<1x2xi64>, tensor<2xi64>, tensor<2xi32>) -> (tensor<1x2xi64>, tensor<2xi64>)
    return %r#0, %r#1 : tensor<1x2xi64>, tensor<2xi64>
  })";
  // root = [1, 0]: x from the group's second member (replica 1), y from its first (replica 2).
  const Literal root = Literal::vector<std::int32_t>({1, 0});
  std::vector<std::vector<Literal>> args;
  for (std::int64_t k = 0; k < 4; ++k) args.push_back({i64s({k, k}, {1, 2}), i64s({10 * k, 10 * k + 1}, {2}), root});
  const std::vector<Literal> in_group = {i64s({1, 1}, {1, 2}), i64s({20, 21}, {2})};
  const std::vector<Literal> outside = {i64s({0, 0}, {1, 2}), i64s({0, 0}, {2})};
  check_both(text, 4, 1, args, {in_group, in_group, in_group, outside});
  CHECK(parse_stablehlo(text).value().node(3).results.size() == 2);
  // The roots are an s32[N] for N other operands.
  GraphBuilder b("bad");
  CollectiveAttrs a{{0, 1}, 2, 0, 0, false, 0, 0, 0};
  a.has_dynamic_root = true;
  b.collective_broadcast({b.parameter(Shape(kF32, {2})), b.parameter(Shape(kS32, {2}))}, a);
  check_error(b.status(), StatusCode::kInvalidArgument, "takes its roots as the last operand, an s32[1]");
  GraphBuilder b2("bad2");
  b2.all_reduce(b2.parameter(Shape(kF32, {2})), OpCode::kAdd, a);
  check_error(b2.status(), StatusCode::kInvalidArgument, "takes no has_dynamic_root");
  // A root outside the group fails the run on both backends.
  const Graph g = parse_stablehlo(text).value();
  for (auto& process : args) process[2] = Literal::vector<std::int32_t>({3, 0});
  reference::ParallelOptions grid;
  grid.num_replicas = 4;
  check_error(reference::evaluate_parallel(g, args, grid), StatusCode::kInvalidArgument, "root 0 of process");
  auto client = cpu::Client<>::create({.device_count = 4, .thread_count = 1}).value();
  cpu::CompileOptions options;
  options.num_replicas = 4;
  auto exe = client->compile(g, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>>> buffers(4);
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>*>> lists(4);
  for (std::size_t k = 0; k < 4; ++k) {
    for (const Literal& l : args[k])
      buffers[k].push_back(client->buffer_from_literal(l, exe->addressable_devices()[k]->memory_spaces()[0]).value());
    for (auto& buffer : buffers[k]) lists[k].push_back(&buffer);
  }
  check_error(exe->execute(lists), StatusCode::kInvalidArgument, "outside its group of 3");
}

TEST_CASE("collectives: the process-group strategies on a 2 x 2 grid, CPU against the reference") {
  // Each process holds its flattened id; every strategy sums over its groups.
  const CollectiveAttrs cross_replica{{0, 1}, 2, 0, 0, false, 0, 0, 0};
  const CollectiveAttrs replica_and_partition{{0, 1}, 2, 1, 1, false, 0, 0, 0};
  const CollectiveAttrs flattened{{0, 3, 1, 2}, 2, 1, 1, true, 0, 0, 0};
  const CollectiveAttrs cross_partition_gather{{0, 1}, 2, 1, 1, false, 0, 0, 2};
  GraphBuilder b("strategies");
  Value x = b.parameter(Shape(kF32, {3}));
  Value m = b.parameter(Shape(kS32, {2, 2}));
  std::vector<Value> outs;
  outs.push_back(b.all_reduce(x, OpCode::kAdd, cross_replica));
  outs.push_back(b.all_reduce(x, OpCode::kMaximum, replica_and_partition));
  outs.push_back(b.all_reduce(x, OpCode::kMultiply, flattened));
  outs.push_back(b.all_gather({x}, flattened)[0]);
  outs.push_back(b.all_to_all({m}, cross_partition_gather)[0]);
  outs.push_back(b.collective_permute(m, CollectiveAttrs{{0, 1, 1, 0}, 2, 1, 1, false, 0, 0, 0}));
  outs.push_back(b.collective_broadcast({m}, CollectiveAttrs{{1, 0}, 2, 1, 1, false, 0, 0, 0})[0]);
  outs.push_back(b.reduce_scatter(b.concatenate({x, x, x, x}, 0), make_binary_body(OpCode::kMinimum, kF32).value(),
                                  CollectiveAttrs{{0, 1, 2, 3}, 4, 1, 1, true, 0, 0, 0}));
  // A collective inside a loop body, and replica_id feeding arithmetic.
  outs.push_back(b.add(b.convert(b.replica_id(), kF32), b.convert(b.partition_id(), kF32)));
  const Graph g = build_ok(b, outs);
  std::vector<std::vector<Literal>> args;
  for (int k = 0; k < 4; ++k)
    args.push_back({Literal::vector<float>({1.0f + static_cast<float>(k), 0.5f * static_cast<float>(k), -2.0f}),
                    Literal::from_span<std::int32_t>(std::vector<std::int32_t>{10 * k, 10 * k + 1, 10 * k + 2, 10 * k + 3}, {2, 2}).value()});
  const auto ref = reference_run(g, 2, 2, args);
  for (bool optimize : {true, false}) {
    CAPTURE(optimize);
    const auto cpu = cpu_run(g, 2, 2, args, optimize);
    for (std::size_t k = 0; k < 4; ++k)
      for (std::size_t j = 0; j < outs.size(); ++j) {
        CAPTURE(k);
        CAPTURE(j);
        CHECK_MESSAGE(cpu[k][j] == ref[k][j], cpu[k][j].to_string(), " vs ", ref[k][j].to_string());
      }
  }
  // Cross-replica sum of x: processes (0, p) and (1, p) meet.
  CHECK(values_of<float>(ref[0][0]) == std::vector<float>({4.0f, 1.0f, -4.0f}));
  CHECK(values_of<float>(ref[1][0]) == std::vector<float>({6.0f, 2.0f, -4.0f}));
  // Flattened ids {0, 3} and {1, 2} multiply.
  CHECK(values_of<float>(ref[0][2]) == std::vector<float>({4.0f, 0.0f, 4.0f}));
  CHECK(values_of<float>(ref[1][2]) == std::vector<float>({6.0f, 0.5f, 4.0f}));
}

TEST_CASE("collectives: an all_reduce in a while body and a custom computation") {
  // Three turns of x = all_reduce(x) with (a, b) -> a * 2 + b on a 3 x 1 grid.
  GraphBuilder body_b("body");
  Value acc = body_b.parameter(Shape(kS32, {}));
  Value xb = body_b.parameter(Shape(kS32, {2}));
  GraphBuilder comp("comp");
  Value ca = comp.parameter(Shape(kS32, {}));
  Value cb = comp.parameter(Shape(kS32, {}));
  const Graph computation = build_ok(comp, {comp.add(comp.multiply(ca, comp.constant(std::int32_t{2})), cb)});
  Value reduced = body_b.all_reduce({xb}, computation, CollectiveAttrs{})[0];
  const Graph body = build_ok(body_b, {body_b.add(acc, body_b.constant(std::int32_t{1})), reduced});
  GraphBuilder cond_b("cond");
  Value c0 = cond_b.parameter(Shape(kS32, {}));
  cond_b.parameter(Shape(kS32, {2}));
  const Graph cond = build_ok(cond_b, {cond_b.compare(c0, cond_b.constant(std::int32_t{3}), ComparisonDirection::kLt)});
  GraphBuilder b("loop");
  Value x = b.parameter(Shape(kS32, {2}));
  std::vector<Value> loop = b.while_loop({b.constant(std::int32_t{0}), x}, cond, body);
  const Graph g = build_ok(b, {loop[1]});
  std::vector<std::vector<Literal>> args;
  for (std::int32_t k = 0; k < 3; ++k) args.push_back({Literal::vector<std::int32_t>({k + 1, -k})});
  const auto ref = reference_run(g, 3, 1, args);
  const auto cpu = cpu_run(g, 3, 1, args);
  for (std::size_t k = 0; k < 3; ++k) CHECK(cpu[k][0] == ref[k][0]);
  // One turn maps x_0, x_1, x_2 to (x_0 * 2 + x_1) * 2 + x_2 everywhere.
  auto turn = [](std::int64_t a, std::int64_t b2, std::int64_t c) { return (a * 2 + b2) * 2 + c; };
  std::int64_t v = turn(turn(turn(1, 2, 3), turn(1, 2, 3), turn(1, 2, 3)), turn(turn(1, 2, 3), turn(1, 2, 3), turn(1, 2, 3)),
                        turn(turn(1, 2, 3), turn(1, 2, 3), turn(1, 2, 3)));
  CHECK(values_of<std::int32_t>(ref[0][0])[0] == static_cast<std::int32_t>(v));
}

TEST_CASE("collectives: groups that do not fit the grid are clear errors") {
  auto client = cpu::Client<>::create({.device_count = 4, .thread_count = 1}).value();
  GraphBuilder b("bad");
  Value x = b.parameter(Shape(kF32, {2}));
  const Graph leaves_out = build_ok(b, {b.all_reduce(x, OpCode::kAdd, CollectiveAttrs{{0, 1}, 2, 0, 0, false, 0, 0, 0})});
  cpu::CompileOptions options;
  options.num_replicas = 3;
  check_error(client->compile(leaves_out, options), StatusCode::kInvalidArgument, "leave replica 2 out");
  GraphBuilder b2("bad2");
  Value y = b2.parameter(Shape(kF32, {2}));
  const Graph too_big = build_ok(b2, {b2.all_reduce(y, OpCode::kAdd, CollectiveAttrs{{0, 5}, 2, 0, 0, false, 0, 0, 0})});
  options.num_replicas = 2;
  check_error(client->compile(too_big, options), StatusCode::kInvalidArgument, "names replica 5");
  std::vector<std::vector<Literal>> two(2, std::vector<Literal>{Literal::vector<float>({1, 2})});
  reference::ParallelOptions grid;
  grid.num_replicas = 2;
  check_error(reference::evaluate_parallel(too_big, two, grid), StatusCode::kInvalidArgument, "group id 5");
  // An all_gather whose groups do not have the size its type was inferred for.
  GraphBuilder b3("bad3");
  Value z = b3.parameter(Shape(kF32, {2}));
  const Graph gather = build_ok(b3, {b3.all_gather({z}, CollectiveAttrs{{0, 1}, 2, 0, 0, false, 0, 0, 0})[0]});
  options.num_replicas = 4;
  check_error(client->compile(gather, options), StatusCode::kInvalidArgument, "leave replica 2 out");
  // The grid needs enough devices and a consistent assignment.
  options.num_replicas = 8;
  check_error(client->compile(gather, options), StatusCode::kInvalidArgument, "does not fit");
  options.num_replicas = 2;
  options.device_assignment = cpu::DeviceAssignment{1, 2, {0, 1}};
  check_error(client->compile(gather, options), StatusCode::kInvalidArgument, "device assignment is 1 x 2");
  // Shape rules: replica_groups rows, uniqueness, use_global_device_ids without a channel.
  GraphBuilder b4("bad4");
  Value w = b4.parameter(Shape(kF32, {3}));
  b4.all_reduce(w, OpCode::kAdd, CollectiveAttrs{{0, 0}, 2, 0, 0, false, 0, 0, 0});
  check_error(b4.status(), StatusCode::kInvalidArgument, "names 0 twice");
  GraphBuilder b5("bad5");
  b5.all_reduce(b5.parameter(Shape(kF32, {3})), OpCode::kAdd, CollectiveAttrs{{0, 1}, 2, 0, 0, true, 0, 0, 0});
  check_error(b5.status(), StatusCode::kInvalidArgument, "use_global_device_ids needs a channel_id");
  GraphBuilder b6("bad6");
  b6.all_gather({b6.parameter(Shape(kF32, {3}))}, CollectiveAttrs{{0, 1}, 2, 0, 0, false, 1, 0, 0});
  check_error(b6.status(), StatusCode::kInvalidArgument, "all_gather_dim 1 is out of range");
  GraphBuilder b7("bad7");
  b7.all_to_all({b7.parameter(Shape(kF32, {3}))}, CollectiveAttrs{{}, 0, 0, 0, false, 0, 0, 2});
  check_error(b7.status(), StatusCode::kInvalidArgument, "does not split into 2 parts");
}

TEST_CASE("collectives: mismatched shapes between processes are a clear error in the reference") {
  // Two programs (MPMD) whose all_reduce operands differ.
  GraphBuilder b1("a");
  const Graph g1 = build_ok(b1, {b1.all_reduce(b1.parameter(Shape(kF32, {2})), OpCode::kAdd, CollectiveAttrs{})});
  GraphBuilder b2("b");
  const Graph g2 = build_ok(b2, {b2.all_reduce(b2.parameter(Shape(kF32, {3})), OpCode::kAdd, CollectiveAttrs{})});
  const Graph* programs[] = {&g1, &g2};
  std::vector<std::vector<Literal>> args = {{Literal::vector<float>({1, 2})}, {Literal::vector<float>({1, 2, 3})}};
  reference::ParallelOptions grid;
  grid.num_replicas = 2;
  check_error(reference::evaluate_parallel(programs, args, grid), StatusCode::kInvalidArgument, "gives operand 0 as f32[");
}

TEST_CASE("collectives: a participant that never arrives ends the execute with DEADLINE_EXCEEDED") {
  GraphBuilder b("lonely");
  Value x = b.parameter(Shape(kF32, {2}));
  const Graph g = build_ok(b, {b.all_reduce(x, OpCode::kAdd, CollectiveAttrs{})});
  auto client = cpu::Client<>::create({.device_count = 2, .thread_count = 1}).value();
  cpu::CompileOptions options;
  options.num_replicas = 2;
  options.collective_timeout_ms = 100;
  auto exe = client->compile(g, options);
  REQUIRE(exe.ok());
  auto* d0 = exe->addressable_devices()[0];
  auto* d1 = exe->addressable_devices()[1];
  auto a0 = client->buffer_from_literal(Literal::vector<float>({1, 2}), d0->memory_spaces()[0]).value();
  auto a1 = client->buffer_from_literal(Literal::vector<float>({3, 4}), d1->memory_spaces()[0]).value();
  const auto start = std::chrono::steady_clock::now();
  auto alone = exe->execute_sharded({&a0}, d0);
  check_error(alone, StatusCode::kDeadlineExceeded, "never arrived");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  // The executable recovers: both participants, each from a thread of its own.
  StatusOr<std::vector<cpu::Buffer<cpu::ThreadPool>>> r0 = internal_error("not run"), r1 = internal_error("not run");
  std::thread t([&] { r1 = exe->execute_sharded({&a1}, d1); });
  r0 = exe->execute_sharded({&a0}, d0);
  t.join();
  REQUIRE_MESSAGE(r0.ok(), r0.status().to_string());
  REQUIRE_MESSAGE(r1.ok(), r1.status().to_string());
  CHECK(values_of<float>((*r0)[0].to_literal().await().value()) == std::vector<float>({4, 6}));
  CHECK(values_of<float>((*r1)[0].to_literal().await().value()) == std::vector<float>({4, 6}));
  // The reference interpreter gives up the same way when a process skips a collective.
  GraphBuilder other("skips");
  const Graph skips = build_ok(other, {other.parameter(Shape(kF32, {2}))});
  const Graph* programs[] = {&g, &skips};
  std::vector<std::vector<Literal>> args = {{Literal::vector<float>({1, 2})}, {Literal::vector<float>({3, 4})}};
  reference::ParallelOptions grid;
  grid.num_replicas = 2;
  grid.timeout = std::chrono::milliseconds(100);
  check_error(reference::evaluate_parallel(programs, args, grid), StatusCode::kDeadlineExceeded, "only 1 arrived");
}

TEST_CASE("collectives: a grid executable serializes with its grid and keeps running") {
  GraphBuilder b("grid");
  Value x = b.parameter(Shape(kS32, {2}));
  const Graph g = build_ok(b, {b.all_reduce(x, OpCode::kAdd, CollectiveAttrs{}), b.convert(b.replica_id(), kS32)});
  auto client = cpu::Client<>::create({.device_count = 3, .thread_count = 2}).value();
  cpu::CompileOptions options;
  options.num_replicas = 3;
  options.device_assignment = cpu::DeviceAssignment{3, 1, {2, 0, 1}};
  auto exe = client->compile(g, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->addressable_devices()[0]->id() == 2);
  auto again = client->deserialize_executable(exe->serialize());
  REQUIRE_MESSAGE(again.ok(), again.status().to_string());
  CHECK(again->compile_options() == exe->compile_options());
  for (int turn = 0; turn < 3; ++turn) {
    std::vector<cpu::Buffer<cpu::ThreadPool>> bufs;
    for (int k = 0; k < 3; ++k)
      bufs.push_back(client->buffer_from_literal(Literal::vector<std::int32_t>({k, turn}),
                                                 again->addressable_devices()[static_cast<std::size_t>(k)]->memory_spaces()[0])
                         .value());
    std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>*>> lists = {{&bufs[0]}, {&bufs[1]}, {&bufs[2]}};
    auto out = again->execute(lists);
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    for (int k = 0; k < 3; ++k) {
      CHECK(values_of<std::int32_t>((*out)[static_cast<std::size_t>(k)][0].to_literal().await().value()) ==
            std::vector<std::int32_t>({3, 3 * turn}));
      CHECK(values_of<std::int32_t>((*out)[static_cast<std::size_t>(k)][1].to_literal().await().value()) ==
            std::vector<std::int32_t>({k}));
    }
  }
  auto d = client->get_default_device_assignment(1, 3);
  REQUIRE(d.ok());
  CHECK(d->device_ids == std::vector<int>({0, 1, 2}));
  CHECK((*d)(0, 2) == 2);
}

namespace {

/// The verdict of a run_parallel test program on a client of eight devices.
stablehlo::TestOutcome run_program(const std::string& text) {
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 8}).value();
  return stablehlo::run_test_program(*client, text);
}

}  // namespace

TEST_CASE("collectives: interpreter.run_parallel programs, written from the spec's examples") {
  const std::string all_reduce = str_cat(R"(module @distribution_ops {
  func.func public @all_reduce(%operand0 : tensor<4xi64>, %operand1 : tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
    %result:2 = "stablehlo.all_reduce"(%operand0, %operand1) )", kAddBody, R"( {
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<4xi64>, tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>)
    return %result#0, %result#1 : tensor<4xi64>, tensor<4xi64>
  }
  func.func @main() {
    %inputs0 = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
    %inputs1 = stablehlo.constant dense<[9, 10, 11, 12]> : tensor<4xi64>
    %inputs2 = stablehlo.constant dense<[5, 6, 7, 8]> : tensor<4xi64>
    %inputs3 = stablehlo.constant dense<[13, 14, 15, 16]> : tensor<4xi64>
    %results:4 = "interpreter.run_parallel"(%inputs0, %inputs1, %inputs2, %inputs3) {
      programs=[[@all_reduce], [@all_reduce]]
    } : (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>)
    check.expect_eq_const %results#0, dense<[6, 8, 10, 12]> : tensor<4xi64>
    check.expect_eq_const %results#1, dense<[22, 24, 26, 28]> : tensor<4xi64>
    check.expect_eq_const %results#2, dense<[6, 8, 10, 12]> : tensor<4xi64>
    check.expect_eq_const %results#3, dense<[22, 24, 26, 28]> : tensor<4xi64>
    func.return
  }
})");
  stablehlo::TestOutcome o = run_program(all_reduce);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);

  const std::string replica_id = R"(module @distribution_ops {
  func.func @replica_id() -> tensor<ui32> {
    %result = stablehlo.replica_id : tensor<ui32>
    return %result : tensor<ui32>
  }
  func.func @partition_id() -> tensor<ui32> {
    %result = stablehlo.partition_id : tensor<ui32>
    return %result : tensor<ui32>
  }
  func.func @main() {
    %results:2 = "interpreter.run_parallel"() {
      programs=[[@replica_id], [@replica_id]]
    } : () -> (tensor<ui32>, tensor<ui32>)
    check.expect_eq_const %results#0, dense<0> : tensor<ui32>
    check.expect_eq_const %results#1, dense<1> : tensor<ui32>
    %parts:2 = "interpreter.run_parallel"() {
      programs=[[@partition_id, @partition_id]]
    } : () -> (tensor<ui32>, tensor<ui32>)
    check.expect_eq_const %parts#0, dense<0> : tensor<ui32>
    check.expect_eq_const %parts#1, dense<1> : tensor<ui32>
    func.return
  }
})";
  o = run_program(replica_id);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);

  const std::string permute = R"(module @distribution_ops {
  func.func @collective_permute(%operand : tensor<2x2xi64>) -> tensor<2x2xi64> {
    %result = "stablehlo.collective_permute"(%operand) {
      source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<2x2xi64>) -> tensor<2x2xi64>
    return %result : tensor<2x2xi64>
  }
  func.func @main() {
    %inputs0 = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
    %inputs1 = stablehlo.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>
    %inputs2 = stablehlo.constant dense<[[9, 10], [11, 12]]> : tensor<2x2xi64>
    %results:3 = "interpreter.run_parallel"(%inputs0, %inputs1, %inputs2) {
      programs=[[@collective_permute], [@collective_permute], [@collective_permute]]
    } : (tensor<2x2xi64>, tensor<2x2xi64>, tensor<2x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xi64>, tensor<2x2xi64>)
    check.expect_eq_const %results#0, dense<0> : tensor<2x2xi64>
    check.expect_eq_const %results#1, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
    check.expect_eq_const %results#2, dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>
    func.return
  }
})";
  o = run_program(permute);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);

  // A wrong expectation fails, naming the line of the check.
  std::string wrong = permute;
  wrong.replace(wrong.find("dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>\n    func.return"), 23, "dense<[[5, 6], [7, 9]]>");
  o = run_program(wrong);
  CHECK(o.verdict == stablehlo::Verdict::kFail);
  // Different functions per process (MPMD) run as one program that branches on the process:
  // replica 1's partition_id is 0.
  std::string mpmd = replica_id;
  mpmd.replace(mpmd.find("programs=[[@replica_id], [@replica_id]]"), 39, "programs=[[@replica_id], [@partition_id]]");
  o = run_program(mpmd);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kFail, o.detail);
  mpmd.replace(mpmd.find("%results#1, dense<1>"), 20, "%results#1, dense<0>");
  o = run_program(mpmd);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);
  // A grid larger than the client's devices is a skip too.
  auto small = cpu::Client<cpu::InlineExecutor>::create({.device_count = 1}).value();
  o = stablehlo::run_test_program(*small, permute);
  CHECK(o.verdict == stablehlo::Verdict::kSkip);
  CHECK(contains(o.detail, "needs 3 devices"));
}

TEST_CASE("collectives: collective_reduce keeps each group's reduction at its root") {
  // Written after the spec's examples: four replicas in one group, the root first or given.
  const std::string text = str_cat(R"(module @reduce {
  func.func @to_root(%x : tensor<1x2xi64>) -> tensor<1x2xi64> {
    %r = "stablehlo.collective_reduce"(%x) )", kAddBody, R"( {
      replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<1x2xi64>) -> tensor<1x2xi64>
    return %r : tensor<1x2xi64>
  }
  func.func @to_chosen(%x : tensor<1x2xi64>, %root : tensor<1xi32>) -> tensor<1x2xi64> {
    %r = "stablehlo.collective_reduce"(%x, %root) )", kAddBody, R"( {
      replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>,
      has_dynamic_root = true
    } : (tensor<1x2xi64>, tensor<1xi32>) -> tensor<1x2xi64>
    return %r : tensor<1x2xi64>
  }
  func.func @two_groups(%x : tensor<1x2xi64>) -> tensor<1x2xi64> {
    %r = "stablehlo.collective_reduce"(%x) )", kAddBody, R"( {
      replica_groups = dense<[[2, 0], [1, 3]]> : tensor<2x2xi64>
    } : (tensor<1x2xi64>) -> tensor<1x2xi64>
    return %r : tensor<1x2xi64>
  }
  func.func @main() {
    %a = stablehlo.constant dense<[[1, 2]]> : tensor<1x2xi64>
    %b = stablehlo.constant dense<[[3, 4]]> : tensor<1x2xi64>
    %c = stablehlo.constant dense<[[5, 6]]> : tensor<1x2xi64>
    %d = stablehlo.constant dense<[[7, 8]]> : tensor<1x2xi64>
    %root = stablehlo.constant dense<[3]> : tensor<1xi32>
    %r:4 = "interpreter.run_parallel"(%a, %b, %c, %d) {programs = [[@to_root], [@to_root], [@to_root], [@to_root]]}
        : (tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>) -> (tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>)
    check.expect_eq_const %r#0, dense<[[16, 20]]> : tensor<1x2xi64>
    check.expect_eq_const %r#1, dense<0> : tensor<1x2xi64>
    check.expect_eq_const %r#3, dense<0> : tensor<1x2xi64>
    %s:4 = "interpreter.run_parallel"(%a, %root, %b, %root, %c, %root, %d, %root) {programs = [[@to_chosen], [@to_chosen], [@to_chosen], [@to_chosen]]}
        : (tensor<1x2xi64>, tensor<1xi32>, tensor<1x2xi64>, tensor<1xi32>, tensor<1x2xi64>, tensor<1xi32>, tensor<1x2xi64>, tensor<1xi32>) -> (tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>)
    check.expect_eq_const %s#0, dense<0> : tensor<1x2xi64>
    check.expect_eq_const %s#3, dense<[[16, 20]]> : tensor<1x2xi64>
    %t:4 = "interpreter.run_parallel"(%a, %b, %c, %d) {programs = [[@two_groups], [@two_groups], [@two_groups], [@two_groups]]}
        : (tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>) -> (tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>)
    check.expect_eq_const %t#0, dense<0> : tensor<1x2xi64>
    check.expect_eq_const %t#1, dense<[[10, 12]]> : tensor<1x2xi64>
    check.expect_eq_const %t#2, dense<[[6, 8]]> : tensor<1x2xi64>
    check.expect_eq_const %t#3, dense<0> : tensor<1x2xi64>
    func.return
  }
})");
  stablehlo::TestOutcome o = run_program(text);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);
  // Across partitions a group spans replicas the text does not count: refused, named.
  const std::string partitions = str_cat(R"(func.func @main(%x : tensor<2xi64>) -> tensor<2xi64> {
  %r = "stablehlo.collective_reduce"(%x) )", kAddBody, R"( {
    replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>
  } : (tensor<2xi64>) -> tensor<2xi64>
  return %r : tensor<2xi64>
})");
  check_error(parse_stablehlo(partitions), StatusCode::kUnimplemented, "collective_reduce across partitions");
}

// ---- Tokens: after_all, send and recv, infeed and outfeed -----------------------------------

namespace {

ChannelAttrs channel(std::int64_t id, std::vector<std::int64_t> pairs = {}, std::vector<Shape> payload = {}) {
  ChannelAttrs a;
  a.channel_id = id;
  a.channel_type = 1;
  a.source_target_pairs = std::move(pairs);
  a.payload = std::move(payload);
  return a;
}

}  // namespace

TEST_CASE("tokens: send and recv pass each process's value round a ring, CPU against the reference") {
  // Three replicas; each sends its x to the next (channel <= 0: the pairs name replicas) and
  // receives the previous one's, then the two values and both tokens come back.
  const Shape t(kS64, {2, 2});
  GraphBuilder b("main");
  Value x = b.parameter(t);
  Value token = b.after_all();
  Value sent = b.send({x}, token, channel(0, {0, 1, 1, 2, 2, 0}));
  std::vector<Value> got = b.recv(b.after_all({sent}), channel(0, {0, 1, 1, 2, 2, 0}, {t}));
  REQUIRE(got.size() == 2);
  const Graph g = build_ok(b, {got[0], b.add(got[0], x), got[1]});
  std::vector<std::vector<Literal>> args;
  for (std::int64_t k = 0; k < 3; ++k) args.push_back({i64s({k, 10 * k, 100 * k, 1000 * k}, {2, 2})});
  const auto ref = reference_run(g, 3, 1, args);
  const auto cpu = cpu_run(g, 3, 1, args);
  for (std::int64_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    const std::int64_t from = (k + 2) % 3;
    const Literal expected = i64s({from, 10 * from, 100 * from, 1000 * from}, {2, 2});
    CHECK(ref[static_cast<std::size_t>(k)][0] == expected);
    CHECK(cpu[static_cast<std::size_t>(k)][0] == expected);
    CHECK(cpu[static_cast<std::size_t>(k)][1] == ref[static_cast<std::size_t>(k)][1]);
    CHECK(cpu[static_cast<std::size_t>(k)][2].shape() == Shape(DType::kToken, {}));
  }
  // Over partitions (channel > 0), with process 2 sending to nobody: process 0 receives zeros.
  GraphBuilder p("main");
  Value y = p.parameter(t);
  Value s1 = p.send({y}, p.after_all(), channel(3, {0, 1, 1, 2}));
  std::vector<Value> r1 = p.recv(s1, channel(3, {0, 1, 1, 2}, {t}));
  const Graph line = build_ok(p, {r1[0]});
  const auto ref_line = reference_run(line, 1, 3, args);
  const auto cpu_line = cpu_run(line, 1, 3, args);
  CHECK(ref_line[0][0] == i64s({0, 0, 0, 0}, {2, 2}));
  CHECK(cpu_line[0][0] == ref_line[0][0]);
  CHECK(cpu_line[1][0] == args[0][0]);
  CHECK(cpu_line[2][0] == args[1][0]);
  CHECK(ref_line[2][0] == args[1][0]);
  // StableHLO text, the IR's text and serialization keep every attribute.
  for (const Graph* graph : {&g, &line}) {
    const std::string text = to_stablehlo(*graph);
    CAPTURE(text);
    CHECK(contains(text, "!stablehlo.token"));
    CHECK(contains(text, "\"stablehlo.send\""));
    StatusOr<Graph> back = parse_stablehlo(text);
    REQUIRE_MESSAGE(back.ok(), back.status().to_string());
    CHECK(to_stablehlo(*back) == text);
    CHECK(deserialize_graph(serialize(*graph)).value() == *graph);
    CHECK(contains(to_string(*graph), "source_target_pairs=[[0,1], [1,2]"));
  }
}

TEST_CASE("tokens: interpreter.run_parallel programs with send, recv, infeed, outfeed and after_all") {
  // Process 0 sends twice on one channel, process 1 receives twice: first sent, first received.
  const std::string sequential = R"(module @tokens {
  func.func @producer(%x : tensor<3xi32>, %t : !stablehlo.token) -> !stablehlo.token {
    %t1 = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 4, type = 2>, is_host_transfer = true
    } : (tensor<3xi32>, !stablehlo.token) -> !stablehlo.token
    %y = stablehlo.multiply %x, %x : tensor<3xi32>
    %t2 = "stablehlo.send"(%y, %t1) {
      channel_handle = #stablehlo.channel_handle<handle = 4, type = 2>, is_host_transfer = true
    } : (tensor<3xi32>, !stablehlo.token) -> !stablehlo.token
    return %t2 : !stablehlo.token
  }
  func.func @consumer(%t : !stablehlo.token) -> (tensor<3xi32>, tensor<3xi32>) {
    %a:2 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 4, type = 3>, is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<3xi32>, !stablehlo.token)
    %b:2 = "stablehlo.recv"(%a#1) {
      channel_handle = #stablehlo.channel_handle<handle = 4, type = 3>, is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<3xi32>, !stablehlo.token)
    return %a#0, %b#0 : tensor<3xi32>, tensor<3xi32>
  }
  func.func @main() {
    %x = stablehlo.constant dense<[2, -3, 5]> : tensor<3xi32>
    %t = stablehlo.after_all : !stablehlo.token
    %r:3 = "interpreter.run_parallel"(%x, %t, %t) {
      programs=[[@producer], [@consumer]]
    } : (tensor<3xi32>, !stablehlo.token, !stablehlo.token) -> (!stablehlo.token, tensor<3xi32>, tensor<3xi32>)
    check.expect_eq_const %r#1, dense<[2, -3, 5]> : tensor<3xi32>
    check.expect_eq_const %r#2, dense<[4, 9, 25]> : tensor<3xi32>
    func.return
  }
})";
  stablehlo::TestOutcome o = run_program(sequential);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);

  // Infeed: each queue function is one entry; two infeeds of the same token take two entries.
  const std::string infeed = R"(module @tokens {
  func.func @reader(%t : !stablehlo.token) -> (tensor<2xf32>, tensor<2xf32>) {
    %a:2 = "stablehlo.infeed"(%t) {infeed_config = ""} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
    %b:2 = "stablehlo.infeed"(%t) {infeed_config = ""} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
    %c = stablehlo.add %a#0, %b#0 : tensor<2xf32>
    return %a#0, %c : tensor<2xf32>, tensor<2xf32>
  }
  func.func @first() -> tensor<2xf32> {
    %v = stablehlo.constant dense<[1.5, 2.0]> : tensor<2xf32>
    func.return %v : tensor<2xf32>
  }
  func.func @second() -> tensor<2xf32> {
    %v = stablehlo.constant dense<[10.0, 20.0]> : tensor<2xf32>
    func.return %v : tensor<2xf32>
  }
  func.func @main() {
    %t = stablehlo.after_all : !stablehlo.token
    %r:2 = "interpreter.run_parallel"(%t) {infeed = [@first, @second], programs = [[@reader]]}
        : (!stablehlo.token) -> (tensor<2xf32>, tensor<2xf32>)
    check.expect_eq_const %r#0, dense<[1.5, 2.0]> : tensor<2xf32>
    check.expect_eq_const %r#1, dense<[11.5, 22.0]> : tensor<2xf32>
    func.return
  }
})";
  o = run_program(infeed);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kPass, o.detail);
  // (An infeed with nothing left waits for the timeout and fails: "infeed and outfeed on one
  // device" below.)

  // after_all of several tokens, and an outfeed whose token nobody reads: it runs, checks
  // nothing, and is UNCHECKED.
  const std::string outfeed = R"(module @tokens {
  func.func @writer(%x : tensor<2xi64>, %t : !stablehlo.token) -> tensor<2xi64> {
    %u = stablehlo.after_all %t, %t : !stablehlo.token
    %o = "stablehlo.outfeed"(%x, %u) {outfeed_config = ""} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    return %x : tensor<2xi64>
  }
  func.func @main() {
    %x = stablehlo.constant dense<[7, 8]> : tensor<2xi64>
    %t = stablehlo.after_all : !stablehlo.token
    %r = "interpreter.run_parallel"(%x, %t) {programs = [[@writer]]} : (tensor<2xi64>, !stablehlo.token) -> tensor<2xi64>
    func.return
  }
})";
  o = run_program(outfeed);
  CHECK_MESSAGE(o.verdict == stablehlo::Verdict::kUnchecked, o.detail);
}

TEST_CASE("tokens: infeed and outfeed on one device through its host queues") {
  const Shape t(kF32, {3});
  GraphBuilder b("feeds");
  Value token = b.parameter(Shape(DType::kToken, {}));
  ChannelAttrs in;
  in.payload = {t, Shape(kS32, {})};
  std::vector<Value> first = b.infeed(token, in);
  std::vector<Value> second = b.infeed(first[2], in);
  Value sum = b.add(first[0], second[0]);
  Value done = b.outfeed({sum, second[1]}, second[2]);
  const Graph g = build_ok(b, {sum, done});
  // Neither simplification nor CSE merges the two infeeds, nor drops the outfeed.
  auto client = cpu::Client<>::create({.device_count = 1, .thread_count = 2}).value();
  auto exe = client->compile(g);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(contains(exe->optimized_program_text(), "outfeed"));
  auto* device = client->devices()[0];
  REQUIRE(device->transfer_to_infeed({Literal::vector<float>({1, 2, 3}), Literal::scalar(std::int32_t{7})}).ok());
  REQUIRE(device->transfer_to_infeed({Literal::vector<float>({10, 20, 30}), Literal::scalar(std::int32_t{8})}).ok());
  auto token_buffer = client->buffer_from_literal(Literal(Shape(DType::kToken, {}))).value();
  auto out = exe->execute({&token_buffer});
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  CHECK(values_of<float>((*out)[0].to_literal().await().value()) == std::vector<float>({11, 22, 33}));
  CHECK((*out)[1].on_device_shape() == Shape(DType::kToken, {}));
  auto entry = device->transfer_from_outfeed();
  REQUIRE_MESSAGE(entry.ok(), entry.status().to_string());
  REQUIRE(entry->size() == 2);
  CHECK(values_of<float>((*entry)[0]) == std::vector<float>({11, 22, 33}));
  CHECK((*entry)[1] == Literal::scalar(std::int32_t{8}));
  // Nothing more came out; an entry of the wrong types fails that execution.
  check_error(device->transfer_from_outfeed(std::chrono::milliseconds(10)), StatusCode::kDeadlineExceeded, "put nothing");
  REQUIRE(device->transfer_to_infeed(Literal::vector<float>({1, 2, 3})).ok());
  REQUIRE(device->transfer_to_infeed(Literal::vector<float>({1, 2, 3})).ok());
  auto bad = exe->execute({&token_buffer});
  REQUIRE(bad.ok());
  check_error((*bad)[0].to_literal().await(), StatusCode::kInvalidArgument, "infeed takes");
  check_error(device->transfer_to_infeed({Literal(Shape(DType::kToken, {}))}), StatusCode::kInvalidArgument, "token");
  // After the failed infeed the second did not run: its entry is still queued, and the next
  // execution takes it. Then, with the queue empty, the infeed gives up after the compile
  // options' timeout.
  cpu::CompileOptions quick;
  quick.collective_timeout_ms = 50;
  auto exe2 = client->compile(g, quick).value();
  auto leftover = exe2.execute({&token_buffer});
  REQUIRE(leftover.ok());
  check_error((*leftover)[0].to_literal().await(), StatusCode::kInvalidArgument, "infeed takes");
  auto late = exe2.execute({&token_buffer});
  REQUIRE(late.ok());
  check_error((*late)[0].to_literal().await(), StatusCode::kDeadlineExceeded, "nothing was fed");
  // The reference interpreter takes its queues from ParallelOptions.
  reference::ParallelOptions grid;
  grid.infeed = {{{Literal::vector<float>({1, 2, 3}), Literal::scalar(std::int32_t{1})},
                  {Literal::vector<float>({4, 5, 6}), Literal::scalar(std::int32_t{2})}}};
  std::vector<std::vector<std::vector<Literal>>> outfeed;
  grid.outfeed = &outfeed;
  std::vector<std::vector<Literal>> args(1);
  args[0].emplace_back(Shape(DType::kToken, {}));
  auto ref = reference::evaluate_parallel(g, args, grid);
  REQUIRE_MESSAGE(ref.ok(), ref.status().to_string());
  CHECK(values_of<float>((*ref)[0][0]) == std::vector<float>({5, 7, 9}));
  REQUIRE(outfeed.size() == 1);
  REQUIRE(outfeed[0].size() == 1);
  CHECK(outfeed[0][0][1] == Literal::scalar(std::int32_t{2}));
}

TEST_CASE("tokens: bad programs and bad input are clear errors") {
  const Shape t(kF32, {2});
  // A token is rank 0, converts to nothing, and flows only into the token ops and control flow.
  const std::vector<std::int64_t> dims = {2};
  check_error(Shape::make(DType::kToken, dims), StatusCode::kInvalidArgument, "no dimensions");
  check_error(Literal(Shape(DType::kToken, {})).convert(kF32), StatusCode::kInvalidArgument, "token");
  {
    GraphBuilder b("add_tokens");
    Value a = b.after_all();
    b.add(a, a);
    check_error(b.status(), StatusCode::kInvalidArgument, "operand 0 is a token");
  }
  {
    GraphBuilder b("constant_token");
    b.constant(Literal(Shape(DType::kToken, {})));
    check_error(b.status(), StatusCode::kInvalidArgument, "would be a token");
  }
  {
    GraphBuilder b("after_all_data");
    b.after_all({b.parameter(t)});
    check_error(b.status(), StatusCode::kInvalidArgument, "not a token");
  }
  {
    GraphBuilder b("send_without_token");
    Value x = b.parameter(t);
    b.op(OpCode::kSend, {x, x}, channel(1));
    check_error(b.status(), StatusCode::kInvalidArgument, "then a token");
  }
  {
    GraphBuilder b("pairs");
    b.send({b.parameter(t)}, b.after_all(), channel(1, {0, 1, 2}));
    check_error(b.status(), StatusCode::kInvalidArgument, "rows of two");
    GraphBuilder c("twice");
    c.send({c.parameter(t)}, c.after_all(), channel(1, {0, 1, 0, 2}));
    check_error(c.status(), StatusCode::kInvalidArgument, "source 0 twice");
  }
  // Text: a recv must end in a token; a token where data goes is refused.
  check_error(parse_stablehlo(R"(func.func @main(%t: !stablehlo.token) -> tensor<2xf32> {
  %r = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>} : (!stablehlo.token) -> tensor<2xf32>
  return %r : tensor<2xf32>
})"),
              StatusCode::kInvalidArgument, "then a !stablehlo.token");
  check_error(parse_stablehlo(R"(func.func @main(%t: !stablehlo.token) -> !stablehlo.token {
  %r = stablehlo.add %t, %t : !stablehlo.token
  return %r : !stablehlo.token
})"),
              StatusCode::kInvalidArgument, "token");
  // A send in an executable of one participant has nobody to reach.
  GraphBuilder alone("alone");
  Value sent = alone.send({alone.parameter(t)}, alone.after_all(), channel(1));
  const Graph lonely = build_ok(alone, {sent});
  auto client = cpu::Client<>::create({.device_count = 2, .thread_count = 1}).value();
  check_error(client->compile(lonely), StatusCode::kUnimplemented, "one participant");
  // A recv whose sender never sends: DEADLINE_EXCEEDED on both backends.
  GraphBuilder wait("waits");
  Value x = wait.parameter(t);
  std::vector<Value> r = wait.recv(wait.after_all(), channel(0, {0, 1}, {t}));
  const Graph waits = build_ok(wait, {wait.add(r[0], x)});
  cpu::CompileOptions options;
  options.num_replicas = 2;
  options.collective_timeout_ms = 100;
  auto exe = client->compile(waits, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>>> buffers(2);
  std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>*>> lists(2);
  for (std::size_t k = 0; k < 2; ++k) {
    buffers[k].push_back(client->buffer_from_literal(Literal::vector<float>({1, 2}), exe->addressable_devices()[k]->memory_spaces()[0]).value());
    lists[k].push_back(&buffers[k][0]);
  }
  check_error(exe->execute(lists), StatusCode::kDeadlineExceeded, "nothing was sent");
  reference::ParallelOptions grid;
  grid.num_replicas = 2;
  grid.timeout = std::chrono::milliseconds(100);
  const std::vector<std::vector<Literal>> args = {{Literal::vector<float>({1, 2})}, {Literal::vector<float>({1, 2})}};
  check_error(reference::evaluate_parallel(waits, args, grid), StatusCode::kDeadlineExceeded, "nothing was sent");
  // A recv of other types than the send's: INVALID_ARGUMENT on both backends.
  GraphBuilder mismatch("mismatch");
  Value y = mismatch.parameter(t);
  Value s = mismatch.send({y}, mismatch.after_all(), channel(-5, {0, 1}));
  std::vector<Value> got = mismatch.recv(s, channel(-5, {0, 1}, {Shape(kS32, {2})}));
  const Graph mismatched = build_ok(mismatch, {got[0]});
  auto exe2 = client->compile(mismatched, options);
  REQUIRE_MESSAGE(exe2.ok(), exe2.status().to_string());
  check_error(exe2->execute(lists), StatusCode::kInvalidArgument, "other types");
  check_error(reference::evaluate_parallel(mismatched, args, grid), StatusCode::kInvalidArgument, "but its types are");
  // Pairs that name a process outside the grid (channel > 0: partitions, of which there is one).
  GraphBuilder outside("outside");
  Value sent_out = outside.send({outside.parameter(t)}, outside.after_all(), channel(5, {0, 1}));
  const Graph beyond = build_ok(outside, {sent_out});
  check_error(client->compile(beyond, options), StatusCode::kInvalidArgument, "names partition 1 on a grid of 2 x 1");
  check_error(reference::evaluate_parallel(beyond, args, grid), StatusCode::kInvalidArgument,
              "names partition 1 on a grid of 2 x 1");
  // Outside a grid, the reference refuses rather than guesses.
  std::vector<Literal> one;
  one.push_back(Literal::vector<float>({1, 2}));
  check_error(reference::evaluate(waits, one), StatusCode::kFailedPrecondition, "grid of processes");
}

}  // namespace collectives_test
