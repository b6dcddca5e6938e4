// Tests for pjrt_lite/future.hpp: promise/future fulfilment, callbacks and the threads they
// run on, map/then composition, join, and races between registration and fulfilment.

#include "pjrt_lite/future.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace future_test {

namespace {

using pjrt_lite::Future;
using pjrt_lite::FutureResult;
using pjrt_lite::make_error_future;
using pjrt_lite::make_promise;
using pjrt_lite::make_ready_future;
using pjrt_lite::Promise;
using pjrt_lite::Status;
using pjrt_lite::StatusCode;
using pjrt_lite::StatusOr;

// StatusCode has no operator<<, so compare names to get readable failures.
std::string_view code_name(const Status& s) { return pjrt_lite::status_code_name(s.code()); }
template <class T>
std::string_view code_name(const StatusOr<T>& s) {
  return pjrt_lite::status_code_name(s.status().code());
}

static_assert(std::is_same_v<FutureResult<int>, StatusOr<int>>);
static_assert(std::is_same_v<FutureResult<void>, Status>);
static_assert(std::is_copy_constructible_v<Future<int>>);
static_assert(!std::is_copy_constructible_v<Promise<int>>);
static_assert(std::is_nothrow_move_constructible_v<Promise<int>>);
static_assert(std::is_same_v<decltype(std::declval<Future<int>&>().await()), const StatusOr<int>&>);
static_assert(std::is_same_v<decltype(std::declval<Future<>&>().await()), Status>);
// The rvalue await returns the result by value: it is moved out, not referenced.
static_assert(std::is_same_v<decltype(std::declval<Future<int>>().await()), StatusOr<int>>);
static_assert(std::is_same_v<decltype(std::declval<Future<>>().await()), Status>);
static_assert(std::is_same_v<decltype(std::declval<const Future<int>&>().await()), const StatusOr<int>&>);

// A value that counts its copies and moves (per test: reset() first).
struct Counted {
  static inline std::atomic<int> copies{0};
  static inline std::atomic<int> moves{0};
  static void reset() {
    copies = 0;
    moves = 0;
  }
  explicit Counted(std::vector<int> v) : values(std::move(v)) {}
  Counted(const Counted& other) : values(other.values) { ++copies; }
  Counted(Counted&& other) noexcept : values(std::move(other.values)) { ++moves; }
  Counted& operator=(const Counted& other) {
    values = other.values;
    ++copies;
    return *this;
  }
  Counted& operator=(Counted&& other) noexcept {
    values = std::move(other.values);
    ++moves;
    return *this;
  }
  std::vector<int> values;
};

}  // namespace

TEST_CASE("future: make_ready_future is ready and holds its value") {
  Future<int> f = make_ready_future(42);
  CHECK(f.valid());
  CHECK(f.is_ready());
  REQUIRE(f.await().ok());
  CHECK(*f.await() == 42);

  Future<> v = make_ready_future();
  CHECK(v.is_ready());
  CHECK(v.await().ok());
}

TEST_CASE("future: make_error_future holds the error, and OK becomes INTERNAL") {
  Future<int> f = make_error_future<int>(pjrt_lite::not_found_error("no such buffer"));
  CHECK(f.is_ready());
  CHECK(f.await().status() == pjrt_lite::not_found_error("no such buffer"));

  Future<> v = make_error_future(pjrt_lite::cancelled_error("stop"));
  CHECK(v.await() == pjrt_lite::cancelled_error("stop"));

  Future<> ok_given = make_error_future(pjrt_lite::ok_status());
  CHECK(code_name(ok_given.await()) == "INTERNAL");
}

TEST_CASE("future: set_value then await returns the value") {
  auto [promise, future] = make_promise<std::string>();
  CHECK(promise.valid());
  CHECK(future.valid());
  CHECK_FALSE(future.is_ready());
  CHECK(promise.set_value("hello"));
  CHECK(future.is_ready());
  REQUIRE(future.await().ok());
  CHECK(*future.await() == "hello");
}

TEST_CASE("future: copies share one state") {
  auto [promise, future] = make_promise<int>();
  Future<int> copy = future;
  CHECK_FALSE(copy.is_ready());
  promise.set_value(7);
  CHECK(copy.is_ready());
  CHECK(&copy.await() == &future.await());
  CHECK(*copy.await() == 7);
}

TEST_CASE("future: await blocks until another thread sets the value") {
  auto [promise, future] = make_promise<int>();
  std::atomic<bool> returned{false};
  int seen = -1;
  std::thread waiter([&, f = future] {
    seen = *f.await();
    returned.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(returned.load());  // still blocked: nothing has been set
  promise.set_value(99);
  waiter.join();
  CHECK(returned.load());
  CHECK(seen == 99);
}

TEST_CASE("future: on_ready registered before fulfilment runs on the fulfilling thread") {
  auto [promise, future] = make_promise<int>();
  std::thread::id ran_on;
  int value = 0;
  int calls = 0;
  future.on_ready([&](const StatusOr<int>& r) {
    ran_on = std::this_thread::get_id();
    value = *r;
    ++calls;
  });
  CHECK(calls == 0);
  std::thread::id fulfiller_id;
  std::thread fulfiller([&, p = std::move(promise)]() mutable {
    fulfiller_id = std::this_thread::get_id();
    p.set_value(5);
  });
  fulfiller.join();
  CHECK(calls == 1);
  CHECK(value == 5);
  CHECK(ran_on == fulfiller_id);
  CHECK(ran_on != std::this_thread::get_id());
}

TEST_CASE("future: on_ready registered after fulfilment runs at once on the caller") {
  auto [promise, future] = make_promise<int>();
  std::thread fulfiller([p = std::move(promise)]() mutable { p.set_value(8); });
  fulfiller.join();
  std::thread::id ran_on;
  int value = 0;
  future.on_ready([&](const StatusOr<int>& r) {
    ran_on = std::this_thread::get_id();
    value = *r;
  });
  // Synchronous: both are set before on_ready returns.
  CHECK(value == 8);
  CHECK(ran_on == std::this_thread::get_id());
}

TEST_CASE("future: callbacks run in registration order") {
  auto [promise, future] = make_promise<>();
  std::vector<int> order;
  for (int i = 0; i < 6; ++i) {
    future.on_ready([&order, i](const Status& s) {
      CHECK(s.ok());
      order.push_back(i);
    });
  }
  CHECK(order.empty());
  promise.set_value();
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("future: await() && moves the value out of the last Future, without a copy") {
  Counted::reset();
  auto [promise, future] = make_promise<Counted>();
  std::thread fulfiller([p = std::move(promise)]() mutable { p.set_value(Counted({1, 2, 3})); });
  StatusOr<Counted> r = std::move(future).await();
  fulfiller.join();
  REQUIRE(r.ok());
  CHECK(r->values == std::vector<int>{1, 2, 3});
  CHECK(Counted::copies == 0);
  CHECK(Counted::moves > 0);
  // Like a move, it leaves the future invalid.
  CHECK_FALSE(future.valid());  // NOLINT(bugprone-use-after-move)
  CHECK(code_name(future.await()) == "FAILED_PRECONDITION");

  // The spelling of `buffer.to_literal().await().value()`: a temporary future, no copy.
  Counted::reset();
  Counted taken = make_ready_future(Counted({4, 5})).await().value();
  CHECK(taken.values == std::vector<int>{4, 5});
  CHECK(Counted::copies == 0);
}

TEST_CASE("future: await() && copies while another Future shares the value") {
  Counted::reset();
  auto [promise, future] = make_promise<Counted>();
  Future<Counted> other = future;
  promise.set_value(Counted({7, 8}));
  StatusOr<Counted> r = std::move(future).await();
  REQUIRE(r.ok());
  CHECK(r->values == std::vector<int>{7, 8});
  CHECK(Counted::copies == 1);
  // The other copy still reads the value, whole.
  REQUIRE(other.await().ok());
  CHECK(other.await()->values == std::vector<int>{7, 8});
  // Once it is the last one, it moves.
  Counted::reset();
  StatusOr<Counted> last = std::move(other).await();
  CHECK(last->values == std::vector<int>{7, 8});
  CHECK(Counted::copies == 0);
}

TEST_CASE("future: await() && copies while a queued callback is still reading the value") {
  Counted::reset();
  auto [promise, future] = make_promise<Counted>();
  std::atomic<bool> release{false};
  std::vector<int> seen_by_callback;
  {
    Future<Counted> watcher = future;  // registers, then goes away: `future` is the last one
    watcher.on_ready([&](const StatusOr<Counted>& r) {
      while (!release.load()) std::this_thread::yield();
      seen_by_callback = r->values;  // must still be whole
    });
  }
  std::thread fulfiller([p = std::move(promise)]() mutable { p.set_value(Counted({3, 1, 4})); });
  // The await returns as soon as the value is published, while the callback still blocks.
  StatusOr<Counted> r = std::move(future).await();
  release = true;
  fulfiller.join();
  REQUIRE(r.ok());
  CHECK(r->values == std::vector<int>{3, 1, 4});
  CHECK(seen_by_callback == std::vector<int>{3, 1, 4});
  CHECK(Counted::copies == 1);
}

TEST_CASE("future: await() && of a move-only value moves it, or refuses while it is shared") {
  auto [promise, future] = make_promise<std::unique_ptr<int>>();
  auto owned = std::make_unique<int>(42);
  const int* address = owned.get();
  promise.set_value(std::move(owned));
  {
    Future<std::unique_ptr<int>> other = future;
    StatusOr<std::unique_ptr<int>> refused = std::move(other).await();
    CHECK(code_name(refused) == "FAILED_PRECONDITION");
    CHECK(refused.status().message().find("only the last copy may move it out") != std::string::npos);
    // `future` still holds the pointer, untouched.
    CHECK(future.await()->get() == address);
  }
  StatusOr<std::unique_ptr<int>> r = std::move(future).await();
  REQUIRE(r.ok());
  CHECK(r->get() == address);
  CHECK(**r == 42);
}

TEST_CASE("future: await() && of a move-only value waits for the queued callbacks first") {
  auto [promise, future] = make_promise<std::unique_ptr<int>>();
  std::atomic<bool> release{false};
  std::atomic<bool> callback_done{false};
  int seen_by_callback = 0;
  {
    Future<std::unique_ptr<int>> watcher = future;
    watcher.on_ready([&](const StatusOr<std::unique_ptr<int>>& r) {
      while (!release.load()) std::this_thread::yield();
      seen_by_callback = **r;  // still there: the await has not taken it yet
      callback_done = true;
    });
  }
  std::thread fulfiller([p = std::move(promise)]() mutable { p.set_value(std::make_unique<int>(9)); });
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release = true;
  });
  StatusOr<std::unique_ptr<int>> r = std::move(future).await();
  CHECK(callback_done.load());  // the await returned only after the callback
  fulfiller.join();
  releaser.join();
  REQUIRE(r.ok());
  CHECK(**r == 9);
  CHECK(seen_by_callback == 9);
}

TEST_CASE("future: await() && on a void future, on an error and on an invalid future") {
  auto [promise, future] = make_promise<>();
  promise.set_value();
  CHECK(std::move(future).await().ok());
  CHECK_FALSE(future.valid());  // NOLINT(bugprone-use-after-move)
  CHECK(std::move(future).await().code() == StatusCode::kFailedPrecondition);  // NOLINT
  StatusOr<Counted> error = make_error_future<Counted>(pjrt_lite::not_found_error("gone")).await();
  CHECK(error.status() == pjrt_lite::not_found_error("gone"));
  CHECK(code_name(Future<Counted>().await()) == "FAILED_PRECONDITION");
}

TEST_CASE("future: a queued callback may return a value, which is ignored") {
  auto [promise, future] = make_promise<int>();
  int seen = 0;
  future.on_ready([&](const StatusOr<int>& r) { return seen = *r; });  // returns an int
  promise.set_value(6);
  CHECK(seen == 6);
}

TEST_CASE("future: void promise and future") {
  auto [promise, future] = make_promise<>();
  static_assert(std::is_same_v<decltype(future), Future<void>>);
  CHECK_FALSE(future.is_ready());
  CHECK(promise.set_value());
  CHECK(future.is_ready());
  CHECK(future.await().ok());
}

TEST_CASE("future: set_error delivers the error to await and on_ready") {
  auto [promise, future] = make_promise<int>();
  Status seen;
  future.on_ready([&](const StatusOr<int>& r) { seen = r.status(); });
  CHECK(promise.set_error(pjrt_lite::resource_exhausted_error("out of device memory")));
  CHECK(seen == pjrt_lite::resource_exhausted_error("out of device memory"));
  CHECK_FALSE(future.await().ok());
  CHECK(future.await().status() == pjrt_lite::resource_exhausted_error("out of device memory"));

  auto [vp, vf] = make_promise<>();
  CHECK(vp.set(pjrt_lite::data_loss_error("corrupt")));
  CHECK(vf.await() == pjrt_lite::data_loss_error("corrupt"));
}

TEST_CASE("future: set_error with an OK status becomes INTERNAL") {
  auto [promise, future] = make_promise<>();
  CHECK(promise.set_error(pjrt_lite::ok_status()));
  CHECK(code_name(future.await()) == "INTERNAL");

  auto [ip, ifut] = make_promise<int>();
  CHECK(ip.set_error(Status()));
  CHECK(code_name(ifut.await()) == "INTERNAL");
}

TEST_CASE("future: set with an OK Status fulfils a void future successfully") {
  auto [promise, future] = make_promise<>();
  CHECK(promise.set(Status()));
  CHECK(future.await().ok());
}

TEST_CASE("future: setting twice returns false and the first value stays") {
  auto [promise, future] = make_promise<int>();
  int calls = 0;
  future.on_ready([&](const StatusOr<int>&) { ++calls; });
  CHECK(promise.set_value(1));
  CHECK_FALSE(promise.set_value(2));
  CHECK_FALSE(promise.set_error(pjrt_lite::internal_error("late")));
  CHECK_FALSE(promise.set(StatusOr<int>(3)));
  CHECK(calls == 1);
  REQUIRE(future.await().ok());
  CHECK(*future.await() == 1);
}

TEST_CASE("future: a promise destroyed unset aborts its future") {
  Future<int> future;
  {
    auto pf = make_promise<int>();
    future = pf.second;
    CHECK_FALSE(future.is_ready());
  }
  REQUIRE(future.is_ready());
  CHECK(code_name(future.await()) == "ABORTED");
  CHECK(future.await().status().message() == "promise destroyed before it was fulfilled");

  Future<> vf;
  { vf = make_promise<>().second; }
  REQUIRE(vf.is_ready());
  CHECK(vf.await() == pjrt_lite::aborted_error("promise destroyed before it was fulfilled"));
}

TEST_CASE("future: move-assigning over an unset promise aborts its future") {
  auto [p1, f1] = make_promise<int>();
  auto [p2, f2] = make_promise<int>();
  p1 = std::move(p2);
  REQUIRE(f1.is_ready());
  CHECK(code_name(f1.await()) == "ABORTED");
  CHECK_FALSE(f2.is_ready());
  CHECK(p1.valid());
  CHECK_FALSE(p2.valid());  // NOLINT(bugprone-use-after-move): checking moved-from state
  CHECK_FALSE(p2.set_value(0));
  CHECK(p1.set_value(4));
  CHECK(*f2.await() == 4);
}

TEST_CASE("future: a fulfilled promise's destruction leaves the value alone") {
  Future<int> future;
  {
    auto pf = make_promise<int>();
    future = pf.second;
    pf.first.set_value(12);
  }
  CHECK(*future.await() == 12);
}

TEST_CASE("future: await on an invalid future is FAILED_PRECONDITION") {
  Future<int> f;
  CHECK_FALSE(f.valid());
  CHECK_FALSE(f.is_ready());
  CHECK(code_name(f.await()) == "FAILED_PRECONDITION");

  Future<> v;
  CHECK(code_name(v.await()) == "FAILED_PRECONDITION");

  Future<int> moved = make_ready_future(1);
  Future<int> target = std::move(moved);
  CHECK(code_name(moved.await()) == "FAILED_PRECONDITION");  // NOLINT(bugprone-use-after-move)
  CHECK(*target.await() == 1);

  int calls = 0;
  f.on_ready([&](const StatusOr<int>& r) {
    ++calls;
    CHECK(code_name(r) == "FAILED_PRECONDITION");
  });
  CHECK(calls == 1);
}

TEST_CASE("future: map to a plain value") {
  auto [promise, future] = make_promise<int>();
  Future<std::string> mapped = future.map([](const int& x) { return std::to_string(x * 2); });
  CHECK_FALSE(mapped.is_ready());
  promise.set_value(21);
  REQUIRE(mapped.is_ready());
  CHECK(*mapped.await() == "42");
}

TEST_CASE("future: map returning StatusOr forwards its value or its error") {
  auto half = [](const int& x) -> StatusOr<int> {
    if (x % 2 != 0) return pjrt_lite::invalid_argument_error("odd");
    return x / 2;
  };
  Future<int> good = make_ready_future(10).map(half);
  CHECK(*good.await() == 5);
  Future<int> bad = make_ready_future(3).map(half);
  CHECK(bad.await().status() == pjrt_lite::invalid_argument_error("odd"));
}

TEST_CASE("future: map returning Status gives a void future") {
  auto check_positive = [](const int& x) {
    return x > 0 ? Status() : pjrt_lite::out_of_range_error("not positive");
  };
  Future<> ok = make_ready_future(1).map(check_positive);
  CHECK(ok.await().ok());
  Future<> err = make_ready_future(-1).map(check_positive);
  CHECK(err.await() == pjrt_lite::out_of_range_error("not positive"));
}

TEST_CASE("future: map returning void gives a void future after f ran") {
  auto [promise, future] = make_promise<int>();
  int seen = 0;
  Future<> done = future.map([&seen](const int& x) { seen = x; });
  CHECK_FALSE(done.is_ready());
  CHECK(seen == 0);
  promise.set_value(6);
  CHECK(seen == 6);
  CHECK(done.await().ok());
}

TEST_CASE("future: map on a void future calls f with no arguments") {
  auto [promise, future] = make_promise<>();
  Future<int> mapped = future.map([] { return 17; });
  promise.set_value();
  CHECK(*mapped.await() == 17);
}

TEST_CASE("future: map forwards a source error without calling f") {
  int calls = 0;
  auto [promise, future] = make_promise<int>();
  Future<int> a = future.map([&](const int& x) {
    ++calls;
    return x;
  });
  Future<> b = future.map([&](const int&) {
    ++calls;
    return Status();
  });
  Future<> c = future.map([&](const int&) { ++calls; });
  Future<int> d = make_error_future(pjrt_lite::unavailable_error("down")).map([&] {
    ++calls;
    return 1;
  });
  promise.set_error(pjrt_lite::unavailable_error("down"));
  CHECK(calls == 0);
  CHECK(a.await().status() == pjrt_lite::unavailable_error("down"));
  CHECK(b.await() == pjrt_lite::unavailable_error("down"));
  CHECK(c.await() == pjrt_lite::unavailable_error("down"));
  CHECK(d.await().status() == pjrt_lite::unavailable_error("down"));
}

TEST_CASE("future: a chain of maps runs in order once the source is set") {
  auto [promise, future] = make_promise<int>();
  std::vector<int> steps;
  Future<std::size_t> end = future
                                .map([&](const int& x) {
                                  steps.push_back(1);
                                  return x + 1;
                                })
                                .map([&](const int& x) {
                                  steps.push_back(2);
                                  return x * 2;
                                })
                                .map([&](const int& x) {
                                  steps.push_back(3);
                                  return std::to_string(x);
                                })
                                .map([&](const std::string& s) {
                                  steps.push_back(4);
                                  return s.size();
                                });
  CHECK(steps.empty());
  CHECK_FALSE(end.is_ready());
  promise.set_value(49);  // (49 + 1) * 2 = 100 -> "100" -> 3
  CHECK(steps == std::vector<int>{1, 2, 3, 4});
  CHECK(*end.await() == 3u);
}

TEST_CASE("future: an error mid-chain skips the rest of the maps") {
  int later_calls = 0;
  Future<int> end = make_ready_future(1)
                        .map([](const int&) -> StatusOr<int> {
                          return pjrt_lite::failed_precondition_error("nope");
                        })
                        .map([&](const int& x) {
                          ++later_calls;
                          return x;
                        })
                        .map([&](const int& x) {
                          ++later_calls;
                          return x;
                        });
  CHECK(later_calls == 0);
  CHECK(end.await().status() == pjrt_lite::failed_precondition_error("nope"));
}

TEST_CASE("future: then flattens the inner future") {
  auto [outer_p, outer_f] = make_promise<int>();
  auto [inner_p, inner_f] = make_promise<std::string>();
  int seen = 0;
  Future<std::string> result = outer_f.then([&, inner = inner_f](const int& x) {
    seen = x;
    return inner;
  });
  static_assert(std::is_same_v<decltype(result), Future<std::string>>);
  outer_p.set_value(3);
  CHECK(seen == 3);
  CHECK_FALSE(result.is_ready());  // waits for the inner future, not just the outer one
  inner_p.set_value("inner");
  REQUIRE(result.is_ready());
  CHECK(*result.await() == "inner");

  Future<int> ready =
      make_ready_future(4).then([](const int& x) { return make_ready_future(x * 10); });
  CHECK(*ready.await() == 40);

  Future<int> from_void = make_ready_future().then([] { return make_ready_future(9); });
  CHECK(*from_void.await() == 9);

  Future<> to_void = make_ready_future(1).then([](const int&) { return make_ready_future(); });
  CHECK(to_void.await().ok());
}

TEST_CASE("future: then forwards an outer error without calling f and an inner error as is") {
  int calls = 0;
  Future<int> outer_err =
      make_error_future<int>(pjrt_lite::deadline_exceeded_error("late")).then([&](const int& x) {
        ++calls;
        return make_ready_future(x);
      });
  CHECK(calls == 0);
  CHECK(outer_err.await().status() == pjrt_lite::deadline_exceeded_error("late"));

  Future<int> inner_err = make_ready_future(1).then([&](const int&) {
    ++calls;
    return make_error_future<int>(pjrt_lite::unimplemented_error("inner"));
  });
  CHECK(calls == 1);
  CHECK(inner_err.await().status() == pjrt_lite::unimplemented_error("inner"));

  Future<> void_err = make_ready_future().then([] { return Future<>(); });
  CHECK(code_name(void_err.await()) == "FAILED_PRECONDITION");
}

TEST_CASE("future: move-only values") {
  auto [promise, future] = make_promise<std::unique_ptr<int>>();
  Future<int> deref = future.map([](const std::unique_ptr<int>& p) { return *p + 1; });
  Future<std::unique_ptr<int>> boxed =
      future.map([](const std::unique_ptr<int>& p) { return std::make_unique<int>(*p * 3); });
  CHECK(promise.set_value(std::make_unique<int>(42)));
  REQUIRE(future.await().ok());
  CHECK(**future.await() == 42);
  CHECK(*deref.await() == 43);
  CHECK(**boxed.await() == 126);

  Future<std::unique_ptr<int>> ready = make_ready_future(std::make_unique<int>(5));
  CHECK(**ready.await() == 5);
}

TEST_CASE("future: join of all-OK futures is ready only after the last one") {
  auto [p0, f0] = make_promise<int>();
  auto [p1, f1] = make_promise<int>();
  auto [p2, f2] = make_promise<int>();
  Future<> all = pjrt_lite::join(std::vector<Future<int>>{f0, f1, f2});
  p2.set_value(2);
  p0.set_value(0);
  CHECK_FALSE(all.is_ready());
  p1.set_value(1);
  REQUIRE(all.is_ready());
  CHECK(all.await().ok());
}

TEST_CASE("future: join reports the first error to arrive, once all are ready") {
  auto [p0, f0] = make_promise<int>();
  auto [p1, f1] = make_promise<int>();
  auto [p2, f2] = make_promise<int>();
  std::vector<Future<int>> futures{f0, f1, f2};
  Future<> all = pjrt_lite::join(std::span<const Future<int>>(futures));
  p2.set_error(pjrt_lite::not_found_error("first"));
  p0.set_error(pjrt_lite::internal_error("second"));
  CHECK_FALSE(all.is_ready());  // p1 is still pending
  p1.set_value(1);
  REQUIRE(all.is_ready());
  CHECK(all.await() == pjrt_lite::not_found_error("first"));
}

TEST_CASE("future: variadic join over mixed types") {
  auto [pi, fi] = make_promise<int>();
  auto [pv, fv] = make_promise<>();
  auto [ps, fs] = make_promise<std::string>();
  Future<> all = pjrt_lite::join(fi, fv, fs);
  pi.set_value(1);
  pv.set_error(pjrt_lite::cancelled_error("void one"));
  ps.set_error(pjrt_lite::internal_error("string one"));
  CHECK(all.await() == pjrt_lite::cancelled_error("void one"));

  Future<> ok = pjrt_lite::join(make_ready_future(1), make_ready_future(), make_ready_future(2.5));
  CHECK(ok.await().ok());
}

TEST_CASE("future: empty join is ready and OK") {
  Future<> from_vector = pjrt_lite::join(std::vector<Future<int>>{});
  CHECK(from_vector.is_ready());
  CHECK(from_vector.await().ok());
  Future<> from_span = pjrt_lite::join(std::span<const Future<>>{});
  CHECK(from_span.is_ready());
  CHECK(from_span.await().ok());
  Future<> from_nothing = pjrt_lite::join();
  CHECK(from_nothing.is_ready());
  CHECK(from_nothing.await().ok());
}

TEST_CASE("future: join over already-ready futures is ready at once") {
  std::vector<Future<int>> ready{make_ready_future(1), make_ready_future(2), make_ready_future(3)};
  Future<> all = pjrt_lite::join(ready);
  CHECK(all.is_ready());
  CHECK(all.await().ok());

  ready.push_back(make_error_future<int>(pjrt_lite::aborted_error("was ready")));
  Future<> with_error = pjrt_lite::join(ready);
  CHECK(with_error.is_ready());
  CHECK(with_error.await() == pjrt_lite::aborted_error("was ready"));
}

TEST_CASE("future: join treats an invalid input as FAILED_PRECONDITION") {
  Future<> all = pjrt_lite::join(std::vector<Future<int>>{make_ready_future(1), Future<int>()});
  CHECK(code_name(all.await()) == "FAILED_PRECONDITION");
}

TEST_CASE("future: stress on_ready racing fulfilment runs every callback exactly once") {
  constexpr int kRounds = 1000;
  constexpr int kRegistrars = 3;
  constexpr int kPerRegistrar = 4;
  std::atomic<int> runs{0};
  std::atomic<int> wrong_value{0};
  for (int round = 0; round < kRounds; ++round) {
    auto [promise, future] = make_promise<int>();
    std::atomic<int> arrived{0};
    auto start_together = [&arrived] {
      arrived.fetch_add(1);
      while (arrived.load() < kRegistrars + 1) std::this_thread::yield();
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kRegistrars; ++t) {
      threads.emplace_back([&, f = future] {
        start_together();
        for (int i = 0; i < kPerRegistrar; ++i) {
          f.on_ready([&, round](const StatusOr<int>& r) {
            if (!r.ok() || *r != round) wrong_value.fetch_add(1);
            runs.fetch_add(1);
          });
        }
      });
    }
    threads.emplace_back([&, p = std::move(promise)]() mutable {
      start_together();
      p.set_value(round);
    });
    for (std::thread& t : threads) t.join();
  }
  CHECK(runs.load() == kRounds * kRegistrars * kPerRegistrar);
  CHECK(wrong_value.load() == 0);
}

TEST_CASE("future: stress many futures joined across threads") {
  constexpr int kFutures = 400;
  constexpr int kThreads = 4;
  for (bool with_error : {false, true}) {
    std::vector<Promise<int>> promises;
    std::vector<Future<int>> futures;
    for (int i = 0; i < kFutures; ++i) {
      auto [p, f] = make_promise<int>();
      promises.push_back(std::move(p));
      futures.push_back(std::move(f));
    }
    Future<> all = pjrt_lite::join(futures);
    std::atomic<int> awaited_ok{0};
    std::thread waiter([&awaited_ok, all] {
      if (all.await().ok()) awaited_ok.fetch_add(1);
    });
    std::vector<std::thread> setters;
    for (int t = 0; t < kThreads; ++t) {
      setters.emplace_back([&, t] {
        for (int i = t; i < kFutures; i += kThreads) {
          // Exactly one error, so the expected outcome does not depend on scheduling.
          if (with_error && i == kFutures / 2) {
            promises[static_cast<std::size_t>(i)].set_error(pjrt_lite::internal_error("one bad"));
          } else {
            promises[static_cast<std::size_t>(i)].set_value(i);
          }
        }
      });
    }
    for (std::thread& t : setters) t.join();
    waiter.join();
    REQUIRE(all.is_ready());
    if (with_error) {
      CHECK(all.await() == pjrt_lite::internal_error("one bad"));
      CHECK(awaited_ok.load() == 0);
    } else {
      CHECK(all.await().ok());
      CHECK(awaited_ok.load() == 1);
    }
  }
}

// ---- Offered work: a waiter runs the work that fulfils its future when nobody has taken it.

namespace {

// The work of fulfilling `promise` with `value`, offered on its future; records the thread
// that ran it.
std::shared_ptr<pjrt_lite::detail::OfferedWork> offer_value(Promise<int> promise, int value,
                                                            std::atomic<std::thread::id>* ran_on) {
  std::shared_ptr<pjrt_lite::detail::OfferedWork> offered = pjrt_lite::detail::FutureAccess::work(promise);
  offered->offer([promise = std::move(promise), value, ran_on]() mutable {
    ran_on->store(std::this_thread::get_id());
    promise.set_value(value);
  });
  return offered;
}

}  // namespace

TEST_CASE("future: await runs offered work that no worker has started, and the worker then finds it taken") {
  auto [promise, future] = make_promise<int>();
  std::atomic<std::thread::id> ran_on{};
  auto offered = offer_value(std::move(promise), 7, &ran_on);
  REQUIRE(!future.is_ready());
  CHECK(future.await().value() == 7);
  CHECK(ran_on.load() == std::this_thread::get_id());
  CHECK_FALSE(offered->run_if_offered());  // the worker's turn: already taken
}

TEST_CASE("future: offered work a worker took first runs once, and the waiter sleeps until it is done") {
  auto [promise, future] = make_promise<int>();
  std::atomic<std::thread::id> ran_on{};
  auto offered = offer_value(std::move(promise), 9, &ran_on);
  std::thread worker([offered] { CHECK(offered->run_if_offered()); });
  worker.join();
  CHECK(future.await().value() == 9);
  CHECK(ran_on.load() != std::this_thread::get_id());
  CHECK_FALSE(offered->run_if_offered());
}

namespace {

// The pieces a running piece of work leaves for other threads (what a pool's parallel loop
// queues): run_one runs the newest, as a waiter's WorkHelpers do.
struct PieceQueue {
  std::mutex mu;
  std::vector<std::function<void()>> pieces;

  void push(std::function<void()> piece) {
    std::lock_guard lock(mu);
    pieces.push_back(std::move(piece));
  }
  static bool run_one(void* self) {
    auto* q = static_cast<PieceQueue*>(self);
    std::function<void()> piece;
    {
      std::lock_guard lock(q->mu);
      if (q->pieces.empty()) return false;
      piece = std::move(q->pieces.back());
      q->pieces.pop_back();
    }
    piece();
    return true;
  }
};

}  // namespace

TEST_CASE("future: a waiter whose offered work a worker took runs the pieces that work queues") {
  PieceQueue queue;
  auto [promise, future] = make_promise<int>();
  auto offered = pjrt_lite::detail::FutureAccess::work(promise);
  std::atomic<bool> started{false}, piece_done{false};
  std::atomic<std::thread::id> piece_ran_on{};
  offered->offer(
      [&, promise = std::move(promise)]() mutable {
        queue.push([&] {
          piece_ran_on.store(std::this_thread::get_id());
          piece_done.store(true);
        });
        started.store(true);
        // Waits for its piece as a parallel loop's caller waits for its helpers; for 10 s at
        // most, so a waiter that does not help fails the checks below instead of hanging.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!piece_done.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        promise.set_value(piece_done.load() ? 1 : 0);
      },
      {&PieceQueue::run_one, &queue});
  std::thread worker([offered] { CHECK(offered->run_if_offered()); });
  while (!started.load()) std::this_thread::yield();  // the worker has taken the work
  CHECK(future.await().value() == 1);
  CHECK(piece_ran_on.load() == std::this_thread::get_id());
  worker.join();
  CHECK(queue.pieces.empty());
}

TEST_CASE("future: map, then and follow() let a waiter run the upstream future's offered work") {
  SUBCASE("map") {
    auto [promise, future] = make_promise<int>();
    std::atomic<std::thread::id> ran_on{};
    auto offered = offer_value(std::move(promise), 20, &ran_on);
    Future<int> doubled = future.map([](int x) { return 2 * x; });
    CHECK(doubled.await().value() == 40);
    CHECK(ran_on.load() == std::this_thread::get_id());
  }
  SUBCASE("then") {
    auto [promise, future] = make_promise<int>();
    std::atomic<std::thread::id> ran_on{};
    auto offered = offer_value(std::move(promise), 5, &ran_on);
    Future<int> next = future.then([](int x) { return make_ready_future(x + 1); });
    CHECK(next.await().value() == 6);
    CHECK(ran_on.load() == std::this_thread::get_id());
  }
  SUBCASE("follow, two levels") {
    auto [promise, future] = make_promise<int>();
    std::atomic<std::thread::id> ran_on{};
    auto offered = offer_value(std::move(promise), 3, &ran_on);
    auto [p2, f2] = make_promise<int>();
    pjrt_lite::detail::follow(f2, future);
    future.on_ready([p2 = std::move(p2)](const StatusOr<int>& r) mutable { p2.set_value(r.value() * 10); });
    Future<int> f3 = f2.map([](int x) { return x + 1; });
    CHECK(f3.await().value() == 31);
    CHECK(ran_on.load() == std::this_thread::get_id());
  }
}

TEST_CASE("future: an error from offered work reaches the waiter that ran it") {
  auto [promise, future] = make_promise<int>();
  auto offered = pjrt_lite::detail::FutureAccess::work(promise);
  offered->offer([promise = std::move(promise)]() mutable { promise.set_error(pjrt_lite::internal_error("boom")); });
  const StatusOr<int>& r = future.await();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInternal);
  CHECK(r.status().message().find("boom") != std::string::npos);
}

}  // namespace future_test
