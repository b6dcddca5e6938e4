// Concurrency under load: 8 threads for a bounded time share one client and two executables.
// Some execute (synchronously and asynchronously, donating or not), some create, copy, delete
// and read back buffers, some chain futures across threads. Every result is compared with
// what the host computes; a deadlock hangs the test (ctest's timeout catches it), and the
// concurrency executable runs under ThreadSanitizer in CI (.ci/checks/30-sanitizers.sh).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"

namespace stress_test {

using namespace pjrt_lite;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kN = 96;  // small enough that each thread runs many rounds
constexpr std::int64_t kDims[] = {kN};

/// y = x * w + x (int32, wrapping never reached with the inputs below), exact on every path.
Graph affine_graph() {
  GraphBuilder b("affine_s32");
  Value x = b.parameter(Shape(DType::kS32, {kN}));
  Value w = b.parameter(Shape(DType::kS32, {kN}));
  return b.build({b.add(b.multiply(x, w), x)}).value();
}

/// The sum of x along its only dimension, and x reversed.
Graph sum_reverse_graph() {
  GraphBuilder b("sum_reverse_s32");
  Value x = b.parameter(Shape(DType::kS32, {kN}));
  Value zero = b.constant(std::int32_t{0});
  return b.build({b.reduce(x, zero, OpCode::kAdd, {0}), b.reverse(x, {0})}).value();
}

std::vector<std::int32_t> pattern(std::uint32_t seed) {
  std::vector<std::int32_t> v(kN);
  for (std::int64_t i = 0; i < kN; ++i) v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((seed * 31 + static_cast<std::uint32_t>(i) * 7) % 201) - 100;
  return v;
}

/// The failures seen on worker threads; doctest's CHECK is not thread-safe, so workers record
/// and the main thread reports.
class Failures {
 public:
  void add(std::string what) {
    std::lock_guard lock(mu_);
    if (list_.size() < 20) list_.push_back(std::move(what));
    ++count_;
  }
  void report() {
    std::lock_guard lock(mu_);
    for (const std::string& f : list_) FAIL_CHECK(f);
    CHECK(count_ == 0);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> list_;
  int count_ = 0;
};

template <class T>
bool equal_to(const StatusOr<Literal>& got, const std::vector<T>& expected) {
  if (!got.ok() || got->element_count() != static_cast<std::int64_t>(expected.size())) return false;
  auto data = got->data<T>();
  return std::equal(data.begin(), data.end(), expected.begin());
}

}  // namespace

TEST_CASE("stress: 8 threads execute, donate, copy, delete, read back and chain futures") {
  auto client = cpu::Client<>::create({.device_count = 2, .thread_count = 2}).value();
  // Loaded on both devices, so any thread may run them on either.
  const cpu::CompileOptions both{.device_ids = {0, 1}};
  auto affine = client->compile(affine_graph(), both).value();
  auto sum_reverse = client->compile(sum_reverse_graph(), both).value();
  Failures failures;
  std::atomic<std::int64_t> operations{0};
  const auto deadline = Clock::now() + std::chrono::milliseconds(1500);

  auto executor = [&](int thread) {
    for (std::uint32_t round = 0; Clock::now() < deadline; ++round) {
      const std::uint32_t seed = static_cast<std::uint32_t>(thread) * 100003u + round;
      const std::vector<std::int32_t> x = pattern(seed), w = pattern(seed + 1);
      std::vector<std::int32_t> expected(kN);
      for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = x[i] * w[i] + x[i];
      cpu::Device<>* device = client->devices()[round % 2];
      auto xb = client->buffer_from_host_buffer(std::span<const std::int32_t>(x), kDims, device);
      auto wb = client->buffer_from_host_buffer(std::span<const std::int32_t>(w), kDims, device);
      if (!xb.ok() || !wb.ok()) {
        failures.add("buffer_from_host_buffer failed");
        continue;
      }
      ExecuteOptions options;
      options.mode = round % 2 == 0 ? ExecutionMode::kAsynchronous : ExecutionMode::kSynchronous;
      const bool donate = thread % 2 == 1;
      if (donate) options.donated_arguments = {0};
      cpu::Buffer<>* args[] = {&*xb, &*wb};
      auto out = affine.execute_sharded(args, device, options);
      if (!out.ok()) {
        failures.add("execute: " + out.status().to_string());
        continue;
      }
      if (donate && !xb->is_deleted()) failures.add("a donated argument is still alive");
      if (!equal_to((*out)[0].to_literal().await(), expected)) failures.add("affine: wrong result");
      // The same inputs through the second executable, read back twice at once.
      cpu::Buffer<>* one[] = {&*wb};
      auto sr = sum_reverse.execute_sharded(one, device, {.mode = ExecutionMode::kAsynchronous, .donated_arguments = {}});
      if (!sr.ok()) {
        failures.add("execute sum_reverse: " + sr.status().to_string());
        continue;
      }
      std::int32_t sum = 0;
      for (std::int32_t v : w) sum += v;
      std::vector<std::int32_t> reversed(w.rbegin(), w.rend());
      Future<Literal> a = (*sr)[0].to_literal();
      Future<Literal> b = (*sr)[1].to_literal();
      if (!equal_to(a.await(), std::vector<std::int32_t>{sum})) failures.add("sum: wrong result");
      if (!equal_to(b.await(), reversed)) failures.add("reverse: wrong result");
      operations += 2;
    }
  };

  auto buffer_churn = [&](int thread) {
    for (std::uint32_t round = 0; Clock::now() < deadline; ++round) {
      const std::vector<std::int32_t> x = pattern(static_cast<std::uint32_t>(thread) * 7919u + round);
      auto b = client->buffer_from_host_buffer(std::span<const std::int32_t>(x), kDims);
      if (!b.ok()) {
        failures.add("buffer_from_host_buffer failed");
        continue;
      }
      auto copy = b->copy_to_device(client->devices()[1]);
      if (!copy.ok()) {
        failures.add("copy_to_device: " + copy.status().to_string());
        continue;
      }
      Future<Literal> before_delete = b->to_literal();
      b->delete_buffer();  // pending reads keep the memory
      if (!equal_to(before_delete.await(), x)) failures.add("read issued before delete: wrong contents");
      if (b->to_literal().await().ok()) failures.add("a deleted buffer read back");
      if (!equal_to(copy->to_literal().await(), x)) failures.add("copy: wrong contents");
      // Execute on the copy while it is deleted from another path: either OK and right, or
      // FAILED_PRECONDITION, never anything else.
      cpu::Buffer<>* args[] = {&*copy, &*copy};
      auto out = affine.execute_sharded(args, client->devices()[1]);
      if (!out.ok()) {
        failures.add("execute on a live copy: " + out.status().to_string());
        continue;
      }
      copy->delete_buffer();
      std::vector<std::int32_t> expected(kN);
      for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = x[i] * x[i] + x[i];
      if (!equal_to((*out)[0].to_literal().await(), expected)) failures.add("execute on a copy: wrong result");
      ++operations;
    }
  };

  auto future_chains = [&](int thread) {
    for (std::uint32_t round = 0; Clock::now() < deadline; ++round) {
      const std::vector<std::int32_t> x = pattern(static_cast<std::uint32_t>(thread) * 104729u + round);
      auto xb = client->buffer_from_host_buffer(std::span<const std::int32_t>(x), kDims);
      if (!xb.ok()) {
        failures.add("buffer_from_host_buffer failed");
        continue;
      }
      // A promise fulfilled on another thread, chained through map and then into a read-back.
      auto [promise, future] = make_promise<std::int32_t>();
      std::thread setter([p = std::move(promise), v = x[0]]() mutable { p.set_value(v); });
      Future<std::int64_t> chained =
          future.map([](const std::int32_t& v) { return static_cast<std::int64_t>(v) * 2; })
              .then([&, b = &*xb](const std::int64_t& twice) {
                return b->to_literal().map([twice](const Literal& l) {
                  return twice + static_cast<std::int64_t>(l.data<std::int32_t>()[kN - 1]);
                });
              });
      const auto& r = chained.await();
      setter.join();
      if (!r.ok() || *r != 2 * static_cast<std::int64_t>(x[0]) + x[kN - 1]) failures.add("future chain: wrong result");
      // An error travels down a chain and skips the mapped functions.
      auto [bad, bad_future] = make_promise<int>();
      std::thread failer([p = std::move(bad)]() mutable { p.set_error(internal_error("injected")); });
      Future<int> after = bad_future.map([](const int& v) { return v + 1; });
      const auto& e = after.await();
      failer.join();
      if (e.ok() || e.status().message() != "injected") failures.add("future chain: error not propagated");
      ++operations;
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    if (t < 4) threads.emplace_back(executor, t);
    else if (t < 6) threads.emplace_back(buffer_churn, t);
    else threads.emplace_back(future_chains, t);
  }
  for (std::thread& t : threads) t.join();
  failures.report();
  CHECK(operations.load() > 0);
  MESSAGE("operations checked: " << operations.load());
}

TEST_CASE("stress: executes donating the same buffers in opposite orders never deadlock, and one wins each round") {
  // Each round, two threads execute x * w + x donating both arguments, one listing them as
  // {0, 1} and the other as {1, 0} with the arguments swapped: both want the same two buffers.
  // Exactly one wins (its result is exact, both buffers end deleted); the other is refused
  // and changes nothing. A donation that held one buffer while waiting for the other would
  // deadlock here.
  auto client = cpu::Client<>::create({.thread_count = 2}).value();
  auto exe = client->compile(affine_graph()).value();
  cpu::Device<>* device = client->devices()[0];
  Failures failures;
  const std::vector<std::int32_t> xs = pattern(3), ws = pattern(4);
  std::vector<std::int32_t> expected(kN);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = xs[i] * ws[i] + xs[i];
  std::vector<std::int32_t> swapped(kN);  // the loser's arguments are (w, x): w * x + w
  for (std::size_t i = 0; i < swapped.size(); ++i) swapped[i] = ws[i] * xs[i] + ws[i];
  int rounds_won = 0;
  for (int round = 0; round < 300; ++round) {
    auto x = client->buffer_from_host_buffer(std::span<const std::int32_t>(xs), kDims).value();
    auto w = client->buffer_from_host_buffer(std::span<const std::int32_t>(ws), kDims).value();
    std::atomic<bool> go{false};
    StatusOr<std::vector<cpu::Buffer<>>> results[2] = {std::vector<cpu::Buffer<>>{}, std::vector<cpu::Buffer<>>{}};
    auto run = [&](int side) {
      while (!go.load()) std::this_thread::yield();
      std::vector<cpu::Buffer<>*> args = side == 0 ? std::vector<cpu::Buffer<>*>{&x, &w} : std::vector<cpu::Buffer<>*>{&w, &x};
      ExecuteOptions options;
      options.mode = ExecutionMode::kSynchronous;
      options.donated_arguments = side == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 0};
      results[side] = exe.execute_sharded(args, device, options);
    };
    std::thread a(run, 0), b(run, 1);
    go = true;
    a.join();
    b.join();
    const int winners = int(results[0].ok()) + int(results[1].ok());
    if (winners != 1) {
      failures.add(str_cat("round ", round, ": ", winners, " executes succeeded"));
      continue;
    }
    const int winner = results[0].ok() ? 0 : 1;
    if (results[1 - winner].status().code() != StatusCode::kFailedPrecondition)
      failures.add(str_cat("round ", round, ": the loser got ", results[1 - winner].status().to_string()));
    if (!x.is_deleted() || !w.is_deleted()) failures.add(str_cat("round ", round, ": a donated buffer survived"));
    if (!equal_to((*results[winner])[0].to_literal().await(), winner == 0 ? expected : swapped))
      failures.add(str_cat("round ", round, ": wrong result"));
    ++rounds_won;
  }
  failures.report();
  CHECK(rounds_won == 300);
}

}  // namespace stress_test
