#pragma once
// Futures and promises for asynchronous results, modelled on PJRT's: a Promise is the one
// writer, any number of Future copies are readers, and the result is a Status (void) or a
// StatusOr<T>, so errors travel through the same channel as values and nothing throws.
//
// Design notes:
//  - One heap allocation per promise/future pair holds the shared state (none for
//    make_ready_future(), whose OK state is shared by all callers), and one per callback
//    registered before the result (its list node, which holds a UniqueFunction: a callable
//    of up to UniqueFunction's kInlineBytes inside it, a larger one in a second block).
//    Nothing takes a lock: readiness is an atomic word that polling reads and blocked
//    threads sleep on (std::atomic::wait), and callbacks wait on a lock-free list.
//  - Each callback runs exactly once: the fulfilling thread closes the list and runs what it
//    held, in registration order; a callback registered after that runs at once on the
//    registering thread.
//  - A promise that dies unfulfilled fulfils its future with ABORTED, so an abandoned
//    producer can never leave a consumer blocked forever.
//  - A producer may offer the work that fulfils a future (an asynchronous execution does,
//    when it hands a program to a worker): a thread that awaits the future before any worker
//    has started that work runs it itself instead of sleeping, so awaiting work that is still
//    queued costs no hand-off. Futures made by map() and then() follow the future they come
//    from, so awaiting them runs its offered work too.
//  - `std::move(future).await()` moves the result out, as PJRT's `Await() &&`, when no one
//    else can still read it: the state counts the Future objects that share it (for a
//    non-void T; Future<void> has nothing to move and counts nothing), and records when the
//    callbacks queued before the result have all run.

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/core/spin.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/unique_function.hpp"

namespace pjrt_lite::inline v0_1 {

template <class T = void>
class Future;
template <class T = void>
class Promise;

namespace detail {
template <class T>
struct FutureResultOf {
  using type = StatusOr<T>;
};
template <>
struct FutureResultOf<void> {
  using type = Status;
};
}  // namespace detail

/// What a Future<T> resolves to: StatusOr<T>, or a plain Status for Future<void>.
template <class T>
using FutureResult = typename detail::FutureResultOf<T>::type;

template <class T = void>
std::pair<Promise<T>, Future<T>> make_promise();

namespace detail {

inline const Status& status_of(const Status& s) { return s; }
template <class T>
Status status_of(const StatusOr<T>& s) {
  return s.status();
}

// An error slot must never hold OK: for Future<void> an OK Status would read as success.
inline Status ensure_error(Status error) {
  if (error.ok()) return internal_error("an OK Status was passed where an error was required");
  return error;
}

// Whether a T can be copied out of a shared state. std::vector reports itself copyable
// whatever its elements are, so look inside it.
template <class T>
struct IsCopyable : std::bool_constant<std::is_copy_constructible_v<T>> {};
template <class T, class A>
struct IsCopyable<std::vector<T, A>> : IsCopyable<T> {};

// Where the pieces of offered work wait to run while it runs (the pool it was handed to, whose
// parallel loops queue their blocks there): run_one runs one queued piece on the calling
// thread, false if none is queued. A thread that waits for work another thread took runs
// those pieces instead of sleeping, so it helps with what it waits for.
struct WorkHelpers {
  bool (*run_one)(void* executor) = nullptr;
  void* executor = nullptr;
  bool run() const { return run_one != nullptr && run_one(executor); }
};

// Work that fulfils a future, offered to whichever thread gets to it first: the worker it was
// handed to, or a thread about to sleep on the future, which then runs it itself rather than
// waiting for a worker to wake up and start it (what an asynchronous execution offers). A
// state may follow another, whose work its waiters run instead (a host copy that waits on a
// buffer's ready future). Offered at most once; taken exactly once.
class OfferedWork {
 public:
  // Once, by the producer; the work must fulfil this state (or the promise it holds will).
  // `helpers` must outlive every wait on this state.
  void offer(UniqueFunction<void()> work, WorkHelpers helpers = {}) {
    work_ = std::move(work);
    helpers_ = helpers;
    offered_.store(kOffered, std::memory_order_release);
  }
  // Runs the offered work here if nobody has taken it; true if it ran.
  bool run_if_offered() {
    std::uint32_t expected = kOffered;
    if (!offered_.compare_exchange_strong(expected, kTaken, std::memory_order_acquire,
                                          std::memory_order_relaxed))
      return false;
    UniqueFunction<void()> work = std::move(work_);
    work();
    return true;
  }
  // Before the state is shared: waiters of this state run `upstream`'s work.
  void follow(std::shared_ptr<OfferedWork> upstream) noexcept { upstream_ = std::move(upstream); }
  // What a thread does before it sleeps on the state: runs the first work not yet taken here
  // or upstream. Where it ran none but another thread took some (it is running now), says so
  // with the helpers of the first such.
  struct Help {
    bool running = false;
    WorkHelpers helpers;
  };
  Help help() {
    Help h;
    for (OfferedWork* w = this; w != nullptr; w = w->upstream_.get()) {
      if (w->run_if_offered()) return {};
      if (!h.running && w->offered_.load(std::memory_order_acquire) == kTaken) h = {true, w->helpers_};
    }
    return h;
  }

 private:
  static constexpr std::uint32_t kNone = 0, kOffered = 1, kTaken = 2;
  std::atomic<std::uint32_t> offered_{kNone};
  UniqueFunction<void()> work_;
  WorkHelpers helpers_;
  std::shared_ptr<OfferedWork> upstream_;
};

// The state shared by a Promise and its Futures, without a lock. The first fulfil() claims
// the state, writes the result, closes the callback list, then publishes the result through
// ready_ (release), so a reader that saw ready_ may read the result. Callbacks wait on a
// LIFO list pushed by compare-and-swap; fulfil() swaps in a sentinel that closes it and runs
// what it took, oldest first, then sets ready_ to kCallbacksRun; a callback that finds the
// list closed runs on its own thread. Waiters sleep on ready_ (std::atomic::wait, a futex
// where there is one), after running the state's offered work if nobody has taken it. For a
// non-void T, futures_ counts the Future objects holding the state, so that one that is alone
// may move the result out.
template <class T>
class FutureState : public OfferedWork {
 public:
  using Result = FutureResult<T>;
  using Callback = UniqueFunction<void(const Result&)>;

  // ready_'s values.
  static constexpr std::uint32_t kPending = 0;
  static constexpr std::uint32_t kReady = 1;         // the result is readable
  static constexpr std::uint32_t kCallbacksRun = 2;  // ... and no queued callback reads it

  FutureState() = default;
  explicit FutureState(Result ready)
      : result_(std::move(ready)), callbacks_(closed()), claimed_(true), ready_(kCallbacksRun) {}
  FutureState(const FutureState&) = delete;
  FutureState& operator=(const FutureState&) = delete;
  ~FutureState() {
    Node* n = callbacks_.load(std::memory_order_acquire);
    if (n == closed()) return;
    while (n != nullptr) delete std::exchange(n, n->next);  // never fulfilled: never run
  }

  bool is_ready() const noexcept { return ready_.load(std::memory_order_acquire) != kPending; }

  // Only after is_ready() returned true (or wait() returned).
  const Result& result() const noexcept { return *result_; }

  const Result& wait() {
    if (!is_ready()) {
      const Help h = help();
      // Work another thread runs now most often ends within microseconds: run its queued
      // pieces, and poll a while between them before sleeping (a futex wake-up costs more).
      if (h.running) {
        while (!is_ready() && pjrt_lite::detail::spin_until([&] { return is_ready() || h.helpers.run(); })) {
        }
      }
    }
    while (!is_ready()) ready_.wait(kPending, std::memory_order_acquire);
    return *result_;
  }

  // For a non-void T: the Future objects that hold this state. A new one counts itself
  // (relaxed: it is made from one that already counts); one that lets go releases what it
  // read of the result to take_result().
  void add_future() noexcept { futures_.fetch_add(1, std::memory_order_relaxed); }
  void remove_future() noexcept { futures_.fetch_sub(1, std::memory_order_release); }

  // After wait(), by the caller's Future, which still counts itself: the result, moved out
  // if that Future is the only one left and no queued callback is still reading it, else
  // copied. A T that cannot be copied waits for the callbacks to finish, and is refused
  // with FAILED_PRECONDITION while other Futures share it.
  Result take_result() requires(!std::is_void_v<T>) {
    if (futures_.load(std::memory_order_acquire) == 1) {
      if constexpr (!IsCopyable<T>::value) {
        std::uint32_t r = ready_.load(std::memory_order_acquire);
        while (r != kCallbacksRun) {
          ready_.wait(r, std::memory_order_acquire);
          r = ready_.load(std::memory_order_acquire);
        }
      }
      if (ready_.load(std::memory_order_acquire) == kCallbacksRun) return std::move(*result_);
    }
    if constexpr (IsCopyable<T>::value) {
      return *result_;
    } else {
      return failed_precondition_error(
          "await() && on a Future whose move-only value other Futures share: only the last "
          "copy may move it out");
    }
  }

  // Returns false, and drops `result`, if someone else got there first.
  bool fulfil(Result result) {
    if (claimed_.exchange(true, std::memory_order_acq_rel)) return false;
    result_.emplace(std::move(result));
    // Closed before the result is published, so that with no callback queued the state is
    // at once kCallbacksRun. A callback registered in between finds the list closed and runs
    // on its own thread (the exchange publishes result_ to it).
    Node* newest_first = callbacks_.exchange(closed(), std::memory_order_acq_rel);
    if (newest_first == nullptr) {
      ready_.store(kCallbacksRun, std::memory_order_release);
      ready_.notify_all();
      return true;
    }
    ready_.store(kReady, std::memory_order_release);
    ready_.notify_all();
    // Oldest first: the list holds the newest at its head.
    Node* oldest_first = nullptr;
    while (newest_first != nullptr) {
      Node* n = std::exchange(newest_first, newest_first->next);
      n->next = oldest_first;
      oldest_first = n;
    }
    while (oldest_first != nullptr) {
      Node* n = std::exchange(oldest_first, oldest_first->next);
      n->callback(*result_);
      delete n;
    }
    ready_.store(kCallbacksRun, std::memory_order_release);
    ready_.notify_all();  // for take_result() of a move-only value
    return true;
  }

  // Leaves `cb` untouched and returns false when the list is closed (the result is there),
  // so the caller runs it itself.
  bool try_add_callback(Callback& cb) {
    Node* head = callbacks_.load(std::memory_order_acquire);
    if (head == closed()) return false;
    auto* node = new Node{std::move(cb), head};
    while (!callbacks_.compare_exchange_weak(node->next, node, std::memory_order_release,
                                             std::memory_order_acquire)) {
      if (node->next == closed()) {
        cb = std::move(node->callback);
        delete node;
        return false;
      }
    }
    return true;
  }

 private:
  struct Node {
    Callback callback;
    Node* next;
  };
  // The closed list's sentinel: an address no Node has.
  Node* closed() const noexcept {
    return reinterpret_cast<Node*>(const_cast<std::atomic<std::uint32_t>*>(&ready_));
  }

  std::optional<Result> result_;
  std::atomic<Node*> callbacks_{nullptr};
  std::atomic<bool> claimed_{false};
  std::atomic<std::uint32_t> ready_{kPending};
  std::atomic<std::uint32_t> futures_{0};  // non-void T only
};

// A reference into static storage lets await() on an invalid future return the same
// `const StatusOr<T>&` type as a valid one.
template <class T>
const FutureResult<T>& invalid_future_result() {
  static const FutureResult<T> result(failed_precondition_error(
      "await or on_ready on an invalid Future (default-constructed or moved-from)"));
  return result;
}

template <class T>
struct IsFuture : std::false_type {};
template <class T>
struct IsFuture<Future<T>> : std::true_type {};

// What f(value) returns, with value being `const T&`, or nothing for T = void.
template <class F, class T>
struct CallResult {
  using type = std::invoke_result_t<F&, const T&>;
};
template <class F>
struct CallResult<F, void> {
  using type = std::invoke_result_t<F&>;
};
template <class F, class T>
using CallResultT = typename CallResult<F, T>::type;

template <class F, class T>
concept InvocableWithValue = (std::is_void_v<T> && std::invocable<F&>) ||
                             (!std::is_void_v<T> && std::invocable<F&, const T&>);

// The value type of the future map() produces from a callback returning R: void for a
// Status, U for a StatusOr<U>, else R.
template <class R>
struct MapValue : std::type_identity<R> {};
template <>
struct MapValue<Status> : std::type_identity<void> {};
template <class U>
struct MapValue<StatusOr<U>> : std::type_identity<U> {};
template <class R>
using MapValueT = typename MapValue<std::remove_cvref_t<R>>::type;

// Precondition: `result` is OK.
template <class T, class F>
decltype(auto) call_with_value(F& f, const FutureResult<T>& result) {
  if constexpr (std::is_void_v<T>) {
    (void)result;
    return std::invoke(f);
  } else {
    return std::invoke(f, *result);
  }
}

struct FutureAccess {
  template <class T>
  static Future<T> future(std::shared_ptr<FutureState<T>> state) {
    return Future<T>(std::move(state));
  }
  template <class T>
  static Promise<T> promise(std::shared_ptr<FutureState<T>> state) {
    return Promise<T>(std::move(state));
  }
  // The offered-work side of a promise's or a future's state (null for an invalid one).
  template <class T>
  static std::shared_ptr<OfferedWork> work(const Promise<T>& promise) {
    return promise.state_;
  }
  template <class T>
  static std::shared_ptr<OfferedWork> work(const Future<T>& future) {
    return future.state_;
  }
};

}  // namespace detail

/// The read side of an asynchronous result. Copies share one state. Distinct Future objects
/// may be used from any threads at once; one object is not safe to assign while another
/// thread uses it (the same rule as std::shared_ptr).
template <class T>
class Future {
  static_assert(!std::is_reference_v<T>, "Future<T&> is not supported; use a pointer");

 public:
  using value_type = T;
  using result_type = FutureResult<T>;
  /// Non-void results are returned by reference so move-only values can be inspected.
  using AwaitResult = std::conditional_t<std::is_void_v<T>, Status, const FutureResult<T>&>;

  /// Invalid: there is no promise behind it, so await() reports FAILED_PRECONDITION.
  Future() noexcept = default;
  Future(const Future& other) noexcept : state_(other.state_) { add_future(); }
  /// Leaves `other` invalid.
  Future(Future&& other) noexcept = default;
  Future& operator=(const Future& other) noexcept {
    // Counted in before the old state is let go: a count never dips below its true value.
    Future copy(other);
    return *this = std::move(copy);
  }
  /// Leaves `other` invalid.
  Future& operator=(Future&& other) noexcept {
    if (this != &other) {
      remove_future();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  ~Future() { remove_future(); }

  /// False for a default-constructed or moved-from future.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  /// Lock-free, so safe to poll. False for an invalid future, which will never have a result.
  [[nodiscard]] bool is_ready() const noexcept { return state_ != nullptr && state_->is_ready(); }

  /// Sleeps rather than spins; the reference lives as long as any copy of this future.
  AwaitResult await() const& {
    if (!state_) return detail::invalid_future_result<T>();
    return state_->wait();
  }

  /// As PJRT's `Await() &&`: sleeps until the result is there, then moves it out, so
  /// `buffer.to_literal().await().value()` copies no array. It moves only what no one else
  /// can still read: when this is the last Future of its promise and every on_ready callback
  /// queued before the result has run; otherwise it copies (a move-only value instead waits
  /// for those callbacks, and is FAILED_PRECONDITION while other Futures share it). Leaves
  /// this future invalid, as a move does.
  [[nodiscard]] FutureResult<T> await() && {
    if (!state_) return detail::status_of(detail::invalid_future_result<T>());
    Future self(std::move(*this));  // counted until the end of the call
    self.state_->wait();
    if constexpr (std::is_void_v<T>) {
      return self.state_->result();
    } else {
      return self.state_->take_result();
    }
  }

  /// Thread-safe: f runs once, here if ready, else on the fulfilling thread in registration order.
  template <class F>
    requires std::invocable<F&, const FutureResult<T>&>
  void on_ready(F f) const {
    if (!state_) {
      std::invoke(f, detail::invalid_future_result<T>());
      return;
    }
    if (state_->is_ready()) {
      std::invoke(f, state_->result());
      return;
    }
    typename detail::FutureState<T>::Callback cb(std::move(f));
    // Lost the race with the fulfiller: the waiter list is gone, so run here instead.
    if (!state_->try_add_callback(cb)) cb(state_->result());
  }

  /// f(const T&) (f() for void) returns U, StatusOr<U>, Status or void; errors skip f entirely.
  template <class F>
    requires detail::InvocableWithValue<F, T>
  [[nodiscard]] auto map(F f) const -> Future<detail::MapValueT<detail::CallResultT<F, T>>> {
    using R = detail::CallResultT<F, T>;
    using U = detail::MapValueT<R>;
    auto pf = make_promise<U>();
    if (state_) pf.second.state_->follow(state_);
    on_ready([p = std::move(pf.first), f = std::move(f)](const FutureResult<T>& r) mutable {
      if (!r.ok()) {
        p.set_error(detail::status_of(r));
      } else if constexpr (std::is_void_v<R>) {
        detail::call_with_value<T>(f, r);
        p.set_value();
      } else if constexpr (std::is_same_v<std::remove_cvref_t<R>, Status> ||
                           std::is_same_v<std::remove_cvref_t<R>, StatusOr<U>>) {
        p.set(detail::call_with_value<T>(f, r));
      } else {
        p.set_value(detail::call_with_value<T>(f, r));
      }
    });
    return std::move(pf.second);
  }

  /// As map, but f returns Future<U>, flattened; U must be copyable as the inner state is shared.
  template <class F>
    requires detail::InvocableWithValue<F, T>
  [[nodiscard]] auto then(F f) const -> std::remove_cvref_t<detail::CallResultT<F, T>> {
    using Inner = std::remove_cvref_t<detail::CallResultT<F, T>>;
    static_assert(detail::IsFuture<Inner>::value,
                  "then() needs f to return a Future; use map() for plain values");
    using U = typename Inner::value_type;
    static_assert(std::is_void_v<U> || std::is_copy_constructible_v<U>,
                  "then() copies the inner future's result, so its value type must be copyable");
    auto pf = make_promise<U>();
    if (state_) pf.second.state_->follow(state_);
    on_ready([p = std::move(pf.first), f = std::move(f)](const FutureResult<T>& r) mutable {
      if (!r.ok()) {
        p.set_error(detail::status_of(r));
        return;
      }
      Inner inner = detail::call_with_value<T>(f, r);
      inner.on_ready([p = std::move(p)](const FutureResult<U>& ir) mutable { p.set(ir); });
    });
    return std::move(pf.second);
  }

 private:
  friend struct detail::FutureAccess;
  template <class>
  friend class Future;
  explicit Future(std::shared_ptr<detail::FutureState<T>> state) noexcept
      : state_(std::move(state)) {
    add_future();
  }

  void add_future() noexcept {
    if constexpr (!std::is_void_v<T>)
      if (state_ != nullptr) state_->add_future();
  }
  void remove_future() noexcept {
    if constexpr (!std::is_void_v<T>)
      if (state_ != nullptr) state_->remove_future();
  }

  std::shared_ptr<detail::FutureState<T>> state_;
};

/// The write side: fulfils its future exactly once. Move-only, because a second writer
/// would make "who fulfils" ambiguous.
template <class T>
class Promise {
 public:
  /// Invalid: every set call returns false.
  Promise() noexcept = default;
  Promise(Promise&&) noexcept = default;
  /// Abandons the promise held before, which aborts its future if still unfulfilled.
  Promise& operator=(Promise&& other) noexcept {
    if (this != &other) {
      abandon();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  Promise(const Promise&) = delete;
  Promise& operator=(const Promise&) = delete;
  /// Fulfils the future with ABORTED if nobody did, so no waiter blocks forever.
  ~Promise() { abandon(); }

  /// False for a default-constructed or moved-from promise.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  /// Thread-safe: of racing set calls exactly one wins and returns true.
  template <class U = T>
    requires(std::is_same_v<U, T> && !std::is_void_v<U>)
  bool set_value(std::type_identity_t<U> value) {
    return set(FutureResult<T>(std::move(value)));
  }

  /// Thread-safe: of racing set calls exactly one wins and returns true.
  bool set_value()
    requires std::is_void_v<T>
  {
    return set(Status());
  }

  /// OK becomes INTERNAL so a caller bug cannot read as success. Thread-safe, like set_value.
  bool set_error(Status error) {
    return set(FutureResult<T>(detail::ensure_error(std::move(error))));
  }

  /// Runs queued callbacks on this thread before returning. Thread-safe, like set_value.
  bool set(FutureResult<T> result) {
    return state_ != nullptr && state_->fulfil(std::move(result));
  }

 private:
  friend struct detail::FutureAccess;
  explicit Promise(std::shared_ptr<detail::FutureState<T>> state) noexcept
      : state_(std::move(state)) {}

  void abandon() {
    if (state_ != nullptr && !state_->is_ready()) {
      state_->fulfil(FutureResult<T>(aborted_error("promise destroyed before it was fulfilled")));
    }
  }

  std::shared_ptr<detail::FutureState<T>> state_;
};

/// A connected pair sharing one heap-allocated state.
template <class T>
std::pair<Promise<T>, Future<T>> make_promise() {
  auto state = std::make_shared<detail::FutureState<T>>();
  Promise<T> promise = detail::FutureAccess::promise(state);
  return {std::move(promise), detail::FutureAccess::future(std::move(state))};
}

/// Already fulfilled with `value`; awaiting it never blocks.
template <class T>
Future<T> make_ready_future(T value) {
  return detail::FutureAccess::future(
      std::make_shared<detail::FutureState<T>>(FutureResult<T>(std::move(value))));
}

/// Already fulfilled with OK. Allocates nothing: every call shares one process-wide state,
/// which is safe because a ready state is immutable and runs callbacks at once instead of
/// storing them. The state is never freed, and the futures point to it without owning it
/// (an aliasing shared_ptr with no control block), so copying and dropping them counts no
/// references: no atomic operation, and no cache line that every thread's executions write.
/// Thread-safe.
inline Future<void> make_ready_future() {
  static const std::shared_ptr<detail::FutureState<void>> ready_ok(
      std::shared_ptr<void>(), new detail::FutureState<void>(Status()));  // NOLINT: lives as long as the process
  return detail::FutureAccess::future(ready_ok);
}

/// Already failed with `error`; an OK status becomes INTERNAL, as with Promise::set_error.
template <class T = void>
Future<T> make_error_future(Status error) {
  return detail::FutureAccess::future(std::make_shared<detail::FutureState<T>>(
      FutureResult<T>(detail::ensure_error(std::move(error)))));
}

namespace detail {

/// Before `derived` is shared: a thread that awaits it runs `upstream`'s offered work, when
/// `derived`'s result is computed from `upstream`'s.
template <class T, class U>
void follow(const Future<T>& derived, const Future<U>& upstream) {
  if (std::shared_ptr<OfferedWork> d = FutureAccess::work(derived)) d->follow(FutureAccess::work(upstream));
}

// Counts arrivals down to zero without a lock. The first error claims first_error_ through
// has_error_; its write is published to the last arrival by the acq_rel fetch_sub chain.
class JoinState {
 public:
  JoinState(std::size_t count, Promise<void> promise)
      : remaining_(count), promise_(std::move(promise)) {}

  template <class R>
  void arrive(const R& result) {
    if (!result.ok() && !has_error_.exchange(true, std::memory_order_relaxed)) {
      first_error_ = status_of(result);
    }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      promise_.set(std::move(first_error_));
    }
  }

 private:
  std::atomic<std::size_t> remaining_;
  std::atomic<bool> has_error_{false};
  Status first_error_;
  Promise<void> promise_;
};

}  // namespace detail

/// Ready once every input is: OK, or the first error to arrive in time. Callable from any thread.
template <class T>
Future<void> join(std::span<const Future<T>> futures) {
  if (futures.empty()) return make_ready_future();
  auto pf = make_promise<void>();
  auto state = std::make_shared<detail::JoinState>(futures.size(), std::move(pf.first));
  for (const Future<T>& f : futures) {
    f.on_ready([state](const FutureResult<T>& r) { state->arrive(r); });
  }
  return std::move(pf.second);
}

/// As the span overload; exists because a vector does not deduce to std::span<const Future<T>>.
template <class T>
Future<void> join(const std::vector<Future<T>>& futures) {
  return join(std::span<const Future<T>>(futures));
}

/// As the span overload, for futures of different value types.
template <class... Ts>
Future<void> join(const Future<Ts>&... futures) {
  if constexpr (sizeof...(Ts) == 0) {
    return make_ready_future();
  } else {
    auto pf = make_promise<void>();
    auto state = std::make_shared<detail::JoinState>(sizeof...(Ts), std::move(pf.first));
    (futures.on_ready([state](const FutureResult<Ts>& r) { state->arrive(r); }), ...);
    return std::move(pf.second);
  }
}

}  // namespace pjrt_lite
