// Destroying a client with work in flight: the work completes (or its futures fail with a
// Status), every future a caller still holds is ready afterwards, and no worker thread is
// left behind. Leaks are LeakSanitizer's to find: the suite runs under ASan in CI.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <thread>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"

namespace lifetime_test {

using namespace pjrt_lite;

namespace {

/// Threads of this process, from /proc (Linux); -1 where /proc is absent. A thread is started
/// and joined first, so that a sanitizer's own background thread, which starts with the first
/// thread, is already there and counted on both sides of a comparison.
std::int64_t thread_count() {
  static const bool warmed_up = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)warmed_up;
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/task", ec);
  if (ec) return -1;
  return std::distance(it, std::filesystem::directory_iterator());
}

constexpr std::int64_t kN = 1 << 16;  // 256 KiB of f32: transfers of this size run on the pool

}  // namespace

TEST_CASE("lifetime: destroying a client with executions and transfers in flight") {
  const std::int64_t threads_before = thread_count();
  std::vector<Future<Literal>> results;
  std::vector<float> expected_chain(kN);
  std::vector<float> host(kN);
  std::iota(host.begin(), host.end(), 0.0f);
  for (std::int64_t i = 0; i < kN; ++i) expected_chain[static_cast<std::size_t>(i)] = (host[static_cast<std::size_t>(i)] * 2 + 1) * 2 + 1;
  {
    auto client = cpu::Client<>::create({.device_count = 2, .thread_count = 3}).value();
    CHECK(thread_count() == threads_before + 3);
    GraphBuilder b("twice_plus_one");
    Value x = b.parameter(Shape(DType::kF32, {kN}));
    Value two = b.broadcast_in_dim(b.constant(2.0f), {kN}, {});
    Value one = b.broadcast_in_dim(b.constant(1.0f), {kN}, {});
    auto exe = client->compile(b.build({b.add(b.multiply(x, two), one)}).value()).value();
    const std::int64_t dims[] = {kN};
    for (int round = 0; round < 8; ++round) {
      // A transfer that runs on the pool, an execution that waits for it, a second execution
      // that waits for the first, a copy to the other device and a read-back: all in flight.
      auto in = client->buffer_from_host_buffer(std::as_bytes(std::span<const float>(host)), DType::kF32, dims,
                                                std::nullopt, HostBufferSemantics::kImmutableUntilTransferCompletes,
                                                nullptr, static_cast<cpu::MemorySpace<>*>(nullptr));
      REQUIRE(in.ok());
      cpu::Buffer<>* a1[] = {&*in};
      auto first = exe.execute_sharded(a1, client->devices()[0], {.mode = ExecutionMode::kAsynchronous, .donated_arguments = {}});
      REQUIRE(first.ok());
      cpu::Buffer<>* a2[] = {&(*first)[0]};
      auto second = exe.execute_sharded(a2, client->devices()[0], {.mode = ExecutionMode::kAsynchronous, .donated_arguments = {0}});
      REQUIRE(second.ok());
      auto moved = (*second)[0].copy_to_device(client->devices()[1]);
      REQUIRE(moved.ok());
      results.push_back(moved->to_literal());
      results.push_back((*second)[0].to_literal());
    }
    // Buffers, the executable and then the client go out of scope here with all of it queued.
  }
  // Every future is ready now: the client finished its work before it went away.
  for (const Future<Literal>& f : results) CHECK(f.is_ready());
  for (const Future<Literal>& f : results) {
    const auto& r = f.await();
    if (r.ok()) {
      CHECK(r->element_count() == kN);
      CHECK(std::equal(r->data<float>().begin(), r->data<float>().end(), expected_chain.begin()));
    } else {
      // Failing instead of completing is allowed, with a message that says why.
      CHECK(!r.status().message().empty());
    }
  }
  CHECK(thread_count() == threads_before);
}

TEST_CASE("lifetime: an unfulfilled promise fails its future when dropped, so no waiter hangs") {
  Future<int> orphan;
  {
    auto [promise, future] = make_promise<int>();
    orphan = future;
  }
  const auto& r = orphan.await();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kAborted);
  CHECK(r.status().message().find("promise destroyed before it was fulfilled") != std::string::npos);
}

TEST_CASE("lifetime: many clients created and destroyed leave no thread behind") {
  const std::int64_t threads_before = thread_count();
  for (int k = 0; k < 20; ++k) {
    auto client = cpu::Client<>::create({.thread_count = 2}).value();
    std::vector<float> v(1024, 1.0f);
    const std::int64_t dims[] = {1024};
    auto b = client->buffer_from_host_buffer(std::span<const float>(v), dims);
    REQUIRE(b.ok());
    Future<Literal> l = b->to_literal();
    b->delete_buffer();
    CHECK(l.await().ok());
  }
  // In one process with the other tests, threads an earlier test ended may still be leaving
  // when this one counts: the count may fall but must not rise (20 clients of 2 workers each
  // would leave 40), so a thread that is still going is given a moment to go.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (thread_count() > threads_before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(thread_count() <= threads_before);
}

}  // namespace lifetime_test
