// The distributed CPU client over MPI, run by `mpirun -np 2` (or more): every rank runs every
// test case, in the same order. Each rank builds the whole grid's arguments from the same
// seeds, runs the grid in the reference interpreter (all participants, in-process) as the
// oracle, and runs its own participants on its devices of the distributed client; the
// collectives and send/recv between ranks go over MPI. Bad input: devices of another rank,
// a rank that never executes (DEADLINE_EXCEEDED, not a hang), ranks whose control flow
// diverges, channels without a known peer.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/mpi.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "test_util.hpp"

namespace mpi_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;
using Client = cpu::Client<cpu::ThreadPool>;
using Buffer = cpu::Buffer<cpu::ThreadPool>;

namespace {

constexpr int kDevicesPerRank = 2;

std::unique_ptr<Client>& client_slot() {
  static std::unique_ptr<Client> c;
  return c;
}

/// The distributed client, made at the first test (a collective call over every rank).
Client& client() {
  std::unique_ptr<Client>& c = client_slot();
  if (!c) {
    auto made = mpi::create_client({.device_count = kDevicesPerRank, .thread_count = 2});
    REQUIRE_MESSAGE(made.ok(), made.status().to_string());
    c = std::move(made).value();
  }
  return *c;
}

/// Whether two f32 literals agree within `tolerance`, relative to the larger magnitude.
bool close(const Literal& a, const Literal& b, double tolerance) {
  if (a.shape() != b.shape()) return false;
  const std::vector<float> x = values_of<float>(a), y = values_of<float>(b);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::abs(double{x[i]} - double{y[i]}) > tolerance * std::max({1.0, std::abs(double{x[i]}), std::abs(double{y[i]})}))
      return false;
  return true;
}

int rank() { return client().process_index(); }
int ranks() { return client().process_count(); }

/// Participant k's arguments: `shapes`' values drawn from seed k (the same in every rank).
std::vector<Literal> arguments_of(int k, const std::vector<Shape>& shapes) {
  std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(k));
  std::vector<Literal> out;
  for (const Shape& s : shapes) {
    Literal l(s);
    if (s.dtype() == kF32) {
      std::uniform_real_distribution<float> u(-2.0f, 2.0f);
      for (float& v : l.data<float>()) v = u(rng);
    } else {
      for (std::int64_t& v : l.data<std::int64_t>()) v = static_cast<std::int64_t>(rng() % 1000) - 500;
    }
    out.push_back(std::move(l));
  }
  return out;
}

struct Grid {
  int replicas = 1, partitions = 1;
  std::vector<int> device_ids;  // per participant; empty: the default assignment
};

/// Runs `g` on the grid: the reference interpreter for every participant, then this rank's
/// participants on the distributed client; checks each of them against the reference
/// (`tolerance` 0: bit for bit).
void check_against_reference(const Graph& g, const Grid& grid, double tolerance = 0) {
  const int n = grid.replicas * grid.partitions;
  std::vector<Shape> shapes;
  for (Value p : g.parameters()) shapes.push_back(g.shape(p));
  std::vector<std::vector<Literal>> args;
  for (int k = 0; k < n; ++k) args.push_back(arguments_of(k, shapes));
  reference::ParallelOptions o;
  o.num_replicas = grid.replicas;
  o.num_partitions = grid.partitions;
  auto want = reference::evaluate_parallel(g, args, o);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());

  cpu::CompileOptions options;
  options.num_replicas = grid.replicas;
  options.num_partitions = grid.partitions;
  options.collective_timeout_ms = 60000;
  if (!grid.device_ids.empty()) options.device_assignment = cpu::DeviceAssignment{grid.replicas, grid.partitions, grid.device_ids};
  auto exe = client().compile(g, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  const auto devices = exe->addressable_devices();
  std::vector<std::vector<Buffer>> buffers(devices.size());
  std::vector<std::vector<Buffer*>> pointers(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    REQUIRE(devices[i]->process_index() == rank());
    const int k = exe->participant_of(i);
    const int device = grid.device_ids.empty() ? k : grid.device_ids[static_cast<std::size_t>(k)];
    CHECK(devices[i]->id() == device);
    for (const Literal& a : args[static_cast<std::size_t>(k)])
      buffers[i].push_back(client().buffer_from_literal(a, devices[i]->default_memory_space().value()).value());
    for (Buffer& b : buffers[i]) pointers[i].push_back(&b);
  }
  auto out = exe->execute(pointers);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto k = static_cast<std::size_t>(exe->participant_of(i));
    CAPTURE(k);
    REQUIRE((*out)[i].size() == (*want)[k].size());
    for (std::size_t j = 0; j < (*out)[i].size(); ++j) {
      CAPTURE(j);
      const Literal got = (*out)[i][j].to_literal().await().value();
      if (tolerance == 0)
        CHECK_MESSAGE(got == (*want)[k][j], got.to_string(), " expected ", (*want)[k][j].to_string());
      else
        CHECK_MESSAGE(close(got, (*want)[k][j], tolerance), got.to_string(), " expected ", (*want)[k][j].to_string());
    }
  }
}

Graph parse(std::string_view text) {
  StatusOr<Graph> g = parse_stablehlo(text);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

constexpr std::string_view kAdd = R"(({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %s = stablehlo.add %a, %b : tensor<i64>
        stablehlo.return %s : tensor<i64>
    }))";

/// Every collective at once on a 2-replica grid of `partitions` partitions: cross-replica
/// groups of the two replicas, the flattened ids of every participant, and the replica and
/// partition ids.
std::string every_collective(int partitions) {
  const int n = 2 * partitions;
  std::string all_ids;
  for (int k = 0; k < n; ++k) all_ids += str_cat(k ? ", " : "", k);
  return str_cat(R"(func.func @main(%x: tensor<4x2xi64>) -> (tensor<4x2xi64>, tensor<4x2xi64>, tensor<8x2xi64>, tensor<2x2xi64>, tensor<2x4xi64>, tensor<4x2xi64>, tensor<4x2xi64>, tensor<ui32>, tensor<ui32>) {
    %sum = "stablehlo.all_reduce"(%x) )", kAdd, R"( {
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<4x2xi64>) -> tensor<4x2xi64>
    %every = "stablehlo.all_reduce"(%sum) )", kAdd, R"( {
      replica_groups = dense<[[)", all_ids, R"(]]> : tensor<1x)", n, R"(xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids
    } : (tensor<4x2xi64>) -> tensor<4x2xi64>
    %gathered = "stablehlo.all_gather"(%x) {
      all_gather_dim = 0 : i64,
      replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>
    } : (tensor<4x2xi64>) -> tensor<8x2xi64>
    %scattered = "stablehlo.reduce_scatter"(%x) )", kAdd, R"( {
      scatter_dimension = 0 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<4x2xi64>) -> tensor<2x2xi64>
    %swapped = "stablehlo.all_to_all"(%x) {
      split_dimension = 0 : i64,
      concat_dimension = 1 : i64,
      split_count = 2 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<4x2xi64>) -> tensor<2x4xi64>
    %permuted = "stablehlo.collective_permute"(%x) {
      source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>
    } : (tensor<4x2xi64>) -> tensor<4x2xi64>
    %broadcast = "stablehlo.collective_broadcast"(%x) {
      replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>
    } : (tensor<4x2xi64>) -> tensor<4x2xi64>
    %r = "stablehlo.replica_id"() : () -> tensor<ui32>
    %p = "stablehlo.partition_id"() : () -> tensor<ui32>
    return %sum, %every, %gathered, %scattered, %swapped, %permuted, %broadcast, %r, %p : tensor<4x2xi64>, tensor<4x2xi64>, tensor<8x2xi64>, tensor<2x2xi64>, tensor<2x4xi64>, tensor<4x2xi64>, tensor<4x2xi64>, tensor<ui32>, tensor<ui32>
  })");
}

}  // namespace

TEST_CASE("mpi: the client lists every rank's devices and addresses its own") {
  Client& c = client();
  REQUIRE(ranks() >= 2);
  CHECK(c.device_count() == kDevicesPerRank * ranks());
  CHECK(c.addressable_device_count() == kDevicesPerRank);
  for (auto* d : c.devices()) {
    CAPTURE(d->id());
    CHECK(d->process_index() == d->id() / kDevicesPerRank);
    CHECK(d->local_hardware_id() == d->id() % kDevicesPerRank);
    CHECK(d->is_addressable() == (d->process_index() == rank()));
  }
  for (int i = 0; i < kDevicesPerRank; ++i) {
    auto* d = c.lookup_addressable_device(i).value();
    CHECK(d->id() == rank() * kDevicesPerRank + i);
    CHECK(c.addressable_devices()[static_cast<std::size_t>(i)] == d);
  }
  check_error(c.lookup_addressable_device(kDevicesPerRank).status(), StatusCode::kInvalidArgument, "local hardware id");
  // Another rank's device holds no buffers here, and runs no program of one device.
  auto* other = c.lookup_device(((rank() + 1) % ranks()) * kDevicesPerRank).value();
  CHECK_FALSE(other->is_addressable());
  CHECK(other->memory_spaces().empty());
  const std::vector<float> values = {1, 2};
  const std::vector<std::int64_t> dims = {2};
  check_error(c.buffer_from_host_buffer<float>(values, dims, other).status(), StatusCode::kFailedPrecondition,
              "not addressable");
  check_error(other->transfer_to_infeed(Literal(Shape(kF32, {2}))), StatusCode::kFailedPrecondition, "not addressable");
  cpu::CompileOptions one;
  one.device_ids = {other->id()};
  check_error(c.compile(parse("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> { return %x : tensor<2xf32> }"), one)
                  .status(),
              StatusCode::kInvalidArgument, "not to this process");
}

TEST_CASE("mpi: every collective across ranks equals the reference interpreter") {
  // The default assignment puts replica r's partitions on rank r (2 partitions per rank):
  // the cross-replica groups meet across ranks.
  check_against_reference(parse(every_collective(kDevicesPerRank)), Grid{2, kDevicesPerRank, {}});
  // Partitions across ranks: participant (r, p) on rank p, so each rank holds one
  // participant of each replica and the flattened groups interleave the ranks.
  std::vector<int> ids;
  for (int r = 0; r < 2; ++r)
    for (int p = 0; p < kDevicesPerRank; ++p) ids.push_back(p * kDevicesPerRank + r);
  check_against_reference(parse(every_collective(kDevicesPerRank)), Grid{2, kDevicesPerRank, ids});
}

TEST_CASE("mpi: a float all_reduce with a max and a sum, in a loop, across every rank's devices") {
  // One replica per device of every rank; the loop's collectives repeat with the same
  // buffers, which the exchange reuses.
  const int n = kDevicesPerRank * ranks();
  const std::string text = str_cat(R"(func.func @main(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
    %m = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.maximum %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %zero = stablehlo.constant dense<0> : tensor<i64>
    %w:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i64>, tensor<3x5xf32>
      cond {
        %three = stablehlo.constant dense<3> : tensor<i64>
        %c = stablehlo.compare LT, %i, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        %one = stablehlo.constant dense<1> : tensor<i64>
        %next = stablehlo.add %i, %one : tensor<i64>
        %s = "stablehlo.all_reduce"(%acc) ({
          ^bb0(%a: tensor<f32>, %b: tensor<f32>):
            %t = stablehlo.add %a, %b : tensor<f32>
            stablehlo.return %t : tensor<f32>
        }) : (tensor<3x5xf32>) -> tensor<3x5xf32>
        %scale = stablehlo.constant dense<0.25> : tensor<3x5xf32>
        %scaled = stablehlo.multiply %s, %scale : tensor<3x5xf32>
        stablehlo.return %next, %scaled : tensor<i64>, tensor<3x5xf32>
      }
    return %m, %w#1 : tensor<3x5xf32>, tensor<3x5xf32>
  })");
  check_against_reference(parse(text), Grid{n, 1, {}}, 1e-6);
}

TEST_CASE("mpi: send and recv between ranks, over replicas and over partitions") {
  // A ring over replicas (channel <= 0) on a grid of one replica per device: each sends its
  // x to the next, the last to the first, across the ranks' boundaries.
  const int n = kDevicesPerRank * ranks();
  std::string pairs;
  for (int k = 0; k < n; ++k) pairs += str_cat(k ? ", " : "", "[", k, ", ", (k + 1) % n, "]");
  const std::string ring = str_cat(R"(func.func @main(%x: tensor<3x2xi64>) -> (tensor<3x2xi64>, tensor<3x2xi64>) {
    %t = stablehlo.after_all : !stablehlo.token
    %s = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 2>,
      source_target_pairs = dense<[)", pairs, R"(]> : tensor<)", n, R"(x2xi64>
    } : (tensor<3x2xi64>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%s) {
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 3>,
      source_target_pairs = dense<[)", pairs, R"(]> : tensor<)", n, R"(x2xi64>
    } : (!stablehlo.token) -> (tensor<3x2xi64>, !stablehlo.token)
    %sum = stablehlo.add %r#0, %x : tensor<3x2xi64>
    return %r#0, %sum : tensor<3x2xi64>, tensor<3x2xi64>
  })");
  check_against_reference(parse(ring), Grid{n, 1, {}});
  // Over partitions (channel > 0) on 2 replicas x n/2 partitions, partition p sending to p + 1
  // and the last to nobody (its receiver gets zeros), twice in a row on one channel.
  const int partitions = n / 2;
  std::string line;
  for (int p = 0; p + 1 < partitions; ++p) line += str_cat(p ? ", " : "", "[", p, ", ", p + 1, "]");
  if (partitions < 2) return;
  const std::string twice = str_cat(R"(func.func @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
    %t = stablehlo.after_all : !stablehlo.token
    %s1 = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 7, type = 2>,
      source_target_pairs = dense<[)", line, R"(]> : tensor<)", partitions - 1, R"(x2xi64>
    } : (tensor<4xi64>, !stablehlo.token) -> !stablehlo.token
    %r1:2 = "stablehlo.recv"(%s1) {
      channel_handle = #stablehlo.channel_handle<handle = 7, type = 3>,
      source_target_pairs = dense<[)", line, R"(]> : tensor<)", partitions - 1, R"(x2xi64>
    } : (!stablehlo.token) -> (tensor<4xi64>, !stablehlo.token)
    %y = stablehlo.add %x, %x : tensor<4xi64>
    %s2 = "stablehlo.send"(%y, %r1#1) {
      channel_handle = #stablehlo.channel_handle<handle = 7, type = 2>,
      source_target_pairs = dense<[)", line, R"(]> : tensor<)", partitions - 1, R"(x2xi64>
    } : (tensor<4xi64>, !stablehlo.token) -> !stablehlo.token
    %r2:2 = "stablehlo.recv"(%s2) {
      channel_handle = #stablehlo.channel_handle<handle = 7, type = 3>,
      source_target_pairs = dense<[)", line, R"(]> : tensor<)", partitions - 1, R"(x2xi64>
    } : (!stablehlo.token) -> (tensor<4xi64>, !stablehlo.token)
    return %r1#0, %r2#0 : tensor<4xi64>, tensor<4xi64>
  })");
  // Partition p of replica r on rank p % ranks: neighbours sit on different ranks.
  std::vector<int> ids;
  std::vector<int> used(static_cast<std::size_t>(ranks()), 0);
  for (int r = 0; r < 2; ++r)
    for (int p = 0; p < partitions; ++p) {
      const int owner = p % ranks();
      ids.push_back(owner * kDevicesPerRank + used[static_cast<std::size_t>(owner)]++);
    }
  check_against_reference(parse(twice), Grid{2, partitions, ids});
}

TEST_CASE("mpi: a rank that never executes fails the others' execute with DEADLINE_EXCEEDED") {
  const int n = kDevicesPerRank * ranks();
  const Graph g = parse(str_cat(R"(func.func @main(%x: tensor<2xi64>) -> tensor<2xi64> {
    %s = "stablehlo.all_reduce"(%x) )", kAdd, R"( : (tensor<2xi64>) -> tensor<2xi64>
    return %s : tensor<2xi64>
  })"));
  cpu::CompileOptions options;
  options.num_replicas = n;
  options.collective_timeout_ms = 300;
  auto exe = client().compile(g, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  if (rank() != 0) return;  // the others compile it and never run it
  std::vector<std::vector<Buffer>> buffers(exe->addressable_devices().size());
  std::vector<std::vector<Buffer*>> pointers(buffers.size());
  const std::vector<std::int64_t> values = {1, 2};
  const std::vector<std::int64_t> dims = {2};
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    buffers[i].push_back(client().buffer_from_host_buffer<std::int64_t>(values, dims, exe->addressable_devices()[i]).value());
    pointers[i].push_back(&buffers[i][0]);
  }
  auto out = exe->execute(pointers);
  check_error(out.status(), StatusCode::kDeadlineExceeded, "did not take part");
  // The executable's communicator is out of step for good: it says so at once.
  auto again = exe->execute(pointers);
  check_error(again.status(), StatusCode::kDeadlineExceeded, "out of step");
}

TEST_CASE("mpi: ranks whose control flow diverges, and channels without a peer, are clear errors") {
  // One participant per rank; rank 0's branch runs an all_reduce, the others' a
  // collective_permute of the same size: every rank sees that the others are elsewhere.
  cpu::CompileOptions options;
  options.num_replicas = ranks();
  options.collective_timeout_ms = 20000;
  options.device_assignment = cpu::DeviceAssignment{ranks(), 1, {}};
  for (int r = 0; r < ranks(); ++r) options.device_assignment->device_ids.push_back(r * kDevicesPerRank);
  std::string pairs;
  for (int r = 0; r < ranks(); ++r) pairs += str_cat(r ? ", " : "", "[", r, ", ", (r + 1) % ranks(), "]");
  const Graph diverging = parse(str_cat(R"(func.func @main(%x: tensor<4xi64>) -> tensor<4xi64> {
    %id = "stablehlo.replica_id"() : () -> tensor<ui32>
    %zero = stablehlo.constant dense<0> : tensor<ui32>
    %first = stablehlo.compare EQ, %id, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
    %r = "stablehlo.if"(%first) ({
      %s = "stablehlo.all_reduce"(%x) )", kAdd, R"( : (tensor<4xi64>) -> tensor<4xi64>
      stablehlo.return %s : tensor<4xi64>
    }, {
      %p = "stablehlo.collective_permute"(%x) {
        source_target_pairs = dense<[)", pairs, R"(]> : tensor<)", ranks(), R"(x2xi64>
      } : (tensor<4xi64>) -> tensor<4xi64>
      stablehlo.return %p : tensor<4xi64>
    }) : (tensor<i1>) -> tensor<4xi64>
    return %r : tensor<4xi64>
  })"));
  auto exe = client().compile(diverging, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  REQUIRE(exe->addressable_devices().size() == 1);
  const std::vector<std::int64_t> values = {1, 2, 3, 4};
  const std::vector<std::int64_t> dims = {4};
  Buffer x = client().buffer_from_host_buffer<std::int64_t>(values, dims, exe->addressable_devices()[0]).value();
  std::vector<std::vector<Buffer*>> args = {{&x}};
  check_error(exe->execute(args).status(), StatusCode::kFailedPrecondition, "control flow diverged");

  // A send without source_target_pairs may be taken by anyone: across ranks it has no
  // known peer, and every rank refuses it at compile.
  const Graph anyone = parse(R"(func.func @main(%x: tensor<4xi64>) -> tensor<4xi64> {
    %t = stablehlo.after_all : !stablehlo.token
    %s = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 2>
    } : (tensor<4xi64>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%s) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 3>
    } : (!stablehlo.token) -> (tensor<4xi64>, !stablehlo.token)
    return %r#0 : tensor<4xi64>
  })");
  check_error(client().compile(anyone, options).status(), StatusCode::kUnimplemented, "without source_target_pairs");
}

TEST_CASE("mpi: a sharded program runs its parts on every rank's devices") {
  // Partitions on every device of every rank: rows of x split (a product with no collective),
  // the row sums over the split rows all-reduced, a product over a split contracting
  // dimension all-reduced across the ranks.
  const int n = kDevicesPerRank * ranks();
  const std::string text = str_cat(
      "module @jit_sharded attributes {mhlo.num_partitions = ", n, " : i32} {\n",
      "  func.func public @main(%x: tensor<", 2 * n, "x6xf32> {mhlo.sharding = \"{devices=[", n, ",1]<=[", n, "]}\"},\n",
      "      %w: tensor<6x5xf32>, %a: tensor<3x", 2 * n, "xf32> {mhlo.sharding = \"{devices=[1,", n, "]<=[", n, "]}\"},\n",
      "      %b: tensor<", 2 * n, "x4xf32> {mhlo.sharding = \"{devices=[", n, ",1]<=[", n, "]}\"})\n",
      "      -> (tensor<", 2 * n, "x5xf32> {mhlo.sharding = \"{devices=[", n, ",1]<=[", n, "]}\"}, tensor<6xf32>, tensor<3x4xf32>) {\n",
      "    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<", 2 * n, "x6xf32>, tensor<6x5xf32>) -> tensor<", 2 * n, "x5xf32>\n",
      "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n",
      "    %1 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<", 2 * n, "x6xf32>, tensor<f32>) -> tensor<6xf32>\n",
      "    %2 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x", 2 * n, "xf32>, tensor<", 2 * n, "x4xf32>) -> tensor<3x4xf32>\n",
      "    return %0, %1, %2 : tensor<", 2 * n, "x5xf32>, tensor<6xf32>, tensor<3x4xf32>\n  }\n}\n");
  auto exe = client().compile(text);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(exe->gathered_ops().empty());
  const Graph whole = parse(text);
  const std::vector<Literal> args = arguments_of(0, whole.parameter_shapes());
  const std::vector<Literal> want = evaluate_ok(whole, args);
  const std::size_t local = exe->addressable_devices().size();
  REQUIRE(local == static_cast<std::size_t>(kDevicesPerRank));
  std::vector<std::vector<Buffer>> buffers(local);
  std::vector<std::vector<Buffer*>> lists(local);
  for (std::size_t k = 0; k < local; ++k) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      Literal part = require_ok(shard_of(args[i], exe->parameter_shardings()[i], exe->participant_of(k)));
      buffers[k].push_back(
          require_ok(client().buffer_from_literal(part, exe->addressable_devices()[k]->memory_spaces()[0])));
    }
    for (Buffer& b : buffers[k]) lists[k].push_back(&b);
  }
  auto out = exe->execute(lists);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  for (std::size_t k = 0; k < local; ++k)
    for (std::size_t j = 0; j < want.size(); ++j) {
      CAPTURE(k);
      CAPTURE(j);
      const Literal expected = require_ok(shard_of(want[j], exe->output_shardings()[j], exe->participant_of(k)));
      CHECK(close(require_ok((*out)[k][j].to_literal().await()), expected, 1e-5));
    }
}

}  // namespace mpi_test

int main(int argc, char** argv) {
  auto env = pjrt_lite::mpi::Environment::init(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().to_string().c_str());
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  doctest::Context context(argc, argv);
  if (rank != 0) {
    // Every rank checks; one prints the summary.
    context.setOption("no-intro", true);
    context.setOption("no-version", true);
  }
  const int failed = context.run();
  // The client (and its executables' communicators) ends before MPI does.
  mpi_test::client_slot().reset();
  return failed;
}
