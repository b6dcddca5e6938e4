#pragma once
// parallel_for over a CPU executor: splits [0, n) into chunks, runs one on the calling thread
// and the rest on the executor's workers, and waits without spinning. The chunks' shared
// state lives on the caller's stack and each scheduled task fits UniqueFunction's inline
// storage.

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace pjrt_lite::cpu::detail {

/// A non-owning reference to a callable `void(std::int64_t begin, std::int64_t end, int worker)`.
class RangeFn {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, RangeFn>)
  RangeFn(F& f)  // NOLINT: implicit, it is only ever a parameter
      : object_(&f), call_([](void* o, std::int64_t b, std::int64_t e, int w) { (*static_cast<F*>(o))(b, e, w); }) {}
  void operator()(std::int64_t begin, std::int64_t end, int worker) const { call_(object_, begin, end, worker); }

 private:
  void* object_;
  void (*call_)(void*, std::int64_t, std::int64_t, int);
};

/// Runs fn over [0, n) in at most `max_workers` chunks of at least `grain` elements. Worker
/// indices are 0..chunks-1, so a kernel can give each its own scratch. Blocks until done.
template <class E>
void parallel_for(E* executor, int max_workers, std::int64_t n, std::int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  std::int64_t chunks = std::min<std::int64_t>(max_workers, (n + grain - 1) / std::max<std::int64_t>(grain, 1));
  if (executor == nullptr || executor->num_threads() == 0 || chunks <= 1) {
    fn(0, n, 0);
    return;
  }
  // The caller's stack holds the shared state, so the last worker must be done touching it
  // before the caller returns: the count is guarded by a mutex, which the worker releases
  // only after notifying, and the caller re-acquires before leaving.
  struct Shared {
    RangeFn fn;
    std::int64_t n, chunks;
    std::int64_t remaining;
    std::mutex mu;
    std::condition_variable done;
  } shared{fn, n, chunks, chunks - 1, {}, {}};
  for (std::int64_t c = 1; c < chunks; ++c) {
    executor->schedule([&shared, c] {
      shared.fn(shared.n * c / shared.chunks, shared.n * (c + 1) / shared.chunks, static_cast<int>(c));
      std::lock_guard lock(shared.mu);
      if (--shared.remaining == 0) shared.done.notify_one();
    });
  }
  fn(0, n / chunks, 0);
  // Help while waiting: when the caller is itself a worker (an asynchronous execution), the
  // chunks may sit in the queue behind it, and every worker may be waiting the same way.
  for (;;) {
    {
      std::lock_guard lock(shared.mu);
      if (shared.remaining == 0) return;
    }
    if (!executor->try_run_one()) break;
  }
  // The queue is empty, so every chunk is running somewhere and will notify.
  std::unique_lock lock(shared.mu);
  shared.done.wait(lock, [&] { return shared.remaining == 0; });
}

}  // namespace pjrt_lite::cpu::detail
