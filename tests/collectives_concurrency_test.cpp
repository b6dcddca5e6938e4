// The collectives under concurrency, for ThreadSanitizer: a grid executable run many times
// in a row through execute (the executable's own threads) and through execute_sharded from a
// thread per participant, with results checked every turn, and a run that times out followed
// by runs that succeed.
#include <doctest/doctest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "test_util.hpp"

namespace collectives_concurrency_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// sum = all_reduce(x), gathered = all_gather(x * (replica + 1)), then a second all_reduce
/// of the gathered values: three collectives per run.
Graph grid_program(int replicas) {
  GraphBuilder b("grid");
  Value x = b.parameter(Shape(kS32, {64}));
  Value sum = b.all_reduce(x, OpCode::kAdd, CollectiveAttrs{});
  Value scale = b.broadcast_in_dim(b.add(b.convert(b.replica_id(), kS32), b.constant(std::int32_t{1})), {64}, {});
  std::vector<std::int64_t> all;
  for (int r = 0; r < replicas; ++r) all.push_back(r);
  Value gathered = b.all_gather({b.multiply(x, scale)}, CollectiveAttrs{all, replicas, 0, 0, false, 0, 0, 0})[0];
  Value total = b.all_reduce(gathered, OpCode::kAdd, CollectiveAttrs{});
  return build_ok(b, {sum, total});
}

}  // namespace

TEST_CASE("collectives concurrency: many grid executes, through execute and through execute_sharded per thread") {
  constexpr int kReplicas = 3;
  auto client = cpu::Client<>::create({.device_count = kReplicas, .thread_count = 2}).value();
  cpu::CompileOptions options;
  options.num_replicas = kReplicas;
  auto exe = client->compile(grid_program(kReplicas), options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  auto devices = exe->addressable_devices();
  for (int turn = 0; turn < 40; ++turn) {
    std::vector<cpu::Buffer<cpu::ThreadPool>> args;
    for (int k = 0; k < kReplicas; ++k) {
      std::vector<std::int32_t> v(64, turn + k);
      args.push_back(client->buffer_from_literal(Literal::from_span<std::int32_t>(v, {64}).value(), devices[static_cast<std::size_t>(k)]->memory_spaces()[0]).value());
    }
    std::vector<std::vector<Literal>> got(kReplicas);
    if (turn % 2 == 0) {
      std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>*>> lists;
      for (auto& a : args) lists.push_back({&a});
      auto out = exe->execute(lists);
      REQUIRE_MESSAGE(out.ok(), out.status().to_string());
      for (int k = 0; k < kReplicas; ++k)
        for (auto& b : (*out)[static_cast<std::size_t>(k)]) got[static_cast<std::size_t>(k)].push_back(b.to_literal().await().value());
    } else {
      std::vector<std::thread> threads;
      std::vector<Status> statuses(kReplicas);
      for (int k = 0; k < kReplicas; ++k)
        threads.emplace_back([&, k] {
          auto out = exe->execute_sharded({&args[static_cast<std::size_t>(k)]}, devices[static_cast<std::size_t>(k)]);
          if (!out.ok()) {
            statuses[static_cast<std::size_t>(k)] = out.status();
            return;
          }
          for (auto& b : *out) got[static_cast<std::size_t>(k)].push_back(b.to_literal().await().value());
        });
      for (auto& t : threads) t.join();
      for (const Status& s : statuses) REQUIRE_MESSAGE(s.ok(), s.to_string());
    }
    // sum: 3 * turn + 0 + 1 + 2; total: block r is (turn + r) * (r + 1) from each of the three.
    for (int k = 0; k < kReplicas; ++k) {
      CHECK(values_of<std::int32_t>(got[static_cast<std::size_t>(k)][0]) == std::vector<std::int32_t>(64, 3 * turn + 3));
      const std::vector<std::int32_t> total = values_of<std::int32_t>(got[static_cast<std::size_t>(k)][1]);
      REQUIRE(total.size() == 64u * kReplicas);
      CHECK(total[static_cast<std::size_t>(64 * k)] == kReplicas * (turn + k) * (k + 1));
    }
  }
}

TEST_CASE("collectives concurrency: a timed-out participant, then whole grids again") {
  auto client = cpu::Client<>::create({.device_count = 2, .thread_count = 1}).value();
  cpu::CompileOptions options;
  options.num_replicas = 2;
  options.collective_timeout_ms = 50;
  auto exe = client->compile(grid_program(2), options);
  REQUIRE(exe.ok());
  auto devices = exe->addressable_devices();
  auto a0 = client->buffer_from_literal(Literal::from_span<std::int32_t>(std::vector<std::int32_t>(64, 1), {64}).value(), devices[0]->memory_spaces()[0]).value();
  auto a1 = client->buffer_from_literal(Literal::from_span<std::int32_t>(std::vector<std::int32_t>(64, 2), {64}).value(), devices[1]->memory_spaces()[0]).value();
  for (int turn = 0; turn < 5; ++turn) {
    check_error(exe->execute_sharded({&a0}, devices[0]), StatusCode::kDeadlineExceeded, "never arrived");
    std::vector<std::vector<cpu::Buffer<cpu::ThreadPool>*>> lists = {{&a0}, {&a1}};
    auto out = exe->execute(lists);
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    CHECK(values_of<std::int32_t>((*out)[1][0].to_literal().await().value()) == std::vector<std::int32_t>(64, 3));
  }
}

}  // namespace collectives_concurrency_test
