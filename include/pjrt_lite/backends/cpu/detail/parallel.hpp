#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// parallel_for over a CPU executor: splits [0, n) into blocks that the calling thread and the
// executor's workers claim one at a time, and waits without spinning or taking a lock. The
// region's shared state lives on the caller's stack and each scheduled task fits
// UniqueFunction's inline storage.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "pjrt_lite/core/spin.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// A non-owning reference to a callable `void(std::int64_t begin, std::int64_t end, int worker)`.
class RangeFn {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, RangeFn>)
      RangeFn(F& f)  // NOLINT: implicit, it is only ever a parameter
      : object_(&f), call_([](void* o, std::int64_t b, std::int64_t e, int w) {
          (*static_cast<F*>(o))(b, e, w);
        }) {}
  void operator()(std::int64_t begin, std::int64_t end, int worker) const {
    call_(object_, begin, end, worker);
  }

 private:
  void* object_;
  void (*call_)(void*, std::int64_t, std::int64_t, int);
};

/// Counts the parallel regions whose helpers have all finished, process-wide: what a caller
/// waiting for its helpers sleeps on (std::atomic::wait, a futex where there is one). Static
/// storage, so the last helper of a region can wake its caller after the caller's stack state
/// may already be gone.
inline std::atomic<std::uint32_t> regions_done{0};

/// Blocks per worker in a parallel region: a worker that the OS stalls (the machine is
/// shared, or the worker is still waking up) leaves its later blocks to the others, so one
/// late thread cannot hold up the whole region by its full share.
inline constexpr std::int64_t kBlocksPerWorker = 8;

/// The end of a parallel loop on the caller: waits until `running` helpers are done, running
/// queued tasks meanwhile. Returns how long it waited with nothing to run (nanoseconds): the
/// time the helpers that had started kept it.
template <class E>
std::int64_t wait_for_helpers(E* executor, std::atomic<int>& running) {
  // Help while waiting: when the caller is itself a worker (an asynchronous execution), the
  // helpers may sit in the queue behind it, and every worker may be waiting the same way.
  for (;;) {
    if (running.load() == 0) return 0;
    if (!executor->try_run_one()) break;
  }
  const auto idle_since = std::chrono::steady_clock::now();
  const auto idle = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - idle_since)
        .count();
  };
  // The queue is empty, so every helper is running somewhere and will finish, most often
  // within microseconds: poll a while before sleeping.
  if (pjrt_lite::detail::spin_until([&] { return running.load() == 0; })) return idle();
  // Then sleep until some region completes, and look again: reading the count after the
  // epoch means a completion after that read changes the epoch, and wait() returns at once.
  for (;;) {
    const std::uint32_t epoch = regions_done.load();
    if (running.load() == 0) return idle();
    regions_done.wait(epoch);
  }
}

/// Runs fn over [0, n) in blocks of at least `grain` elements on up to `max_workers` threads,
/// the caller included. Threads claim blocks from a shared counter until none are left.
/// Worker indices are 0..workers-1 (0 is the caller) and a worker runs its blocks one after
/// another, so a kernel can give each worker its own scratch. Blocks until done. Returns
/// whether other threads were asked to help (false: the caller ran it all).
template <class E>
bool parallel_for(E* executor, int max_workers, std::int64_t n, std::int64_t grain, RangeFn fn) {
  if (n <= 0) return false;
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t most_blocks = (n + grain - 1) / grain;
  const auto workers = static_cast<int>(std::min<std::int64_t>(max_workers, most_blocks));
  if (executor == nullptr || executor->num_threads() == 0 || workers <= 1) {
    fn(0, n, 0);
    return false;
  }
  // A pool whose workers have lately kept the caller waiting (the machine is busy) runs the
  // loop on the caller alone for a while.
  constexpr bool kGoverned = requires { executor->split_governor(); };
  if constexpr (kGoverned) {
    if (!executor->split_governor().may_split()) {
      fn(0, n, 0);
      return false;
    }
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  // The caller's stack holds the shared state, so every helper must be done touching it
  // before the caller returns. A helper's last touch is its decrement of `running`; the one
  // that brings it to zero then wakes the caller through regions_done, which has static
  // storage, so no helper ever touches a returned caller's stack. No lock on either side.
  struct Shared {
    RangeFn fn;
    std::int64_t n, blocks;
    std::atomic<std::int64_t> next{0};
    std::atomic<int> running;

    void drain(int worker) {
      for (;;) {
        const std::int64_t b = next.fetch_add(1, std::memory_order_relaxed);
        if (b >= blocks) return;
        fn(n * b / blocks, n * (b + 1) / blocks, worker);
      }
    }
  } shared{fn, n, std::min<std::int64_t>(most_blocks, workers * kBlocksPerWorker), {}, workers - 1};
  for (int w = 1; w < workers; ++w) {
    executor->schedule([&shared, w] {
      shared.drain(w);
      if (shared.running.fetch_sub(1) == 1) {
        regions_done.fetch_add(1);
        regions_done.notify_all();
      }
    });
  }
  shared.drain(0);
  const std::int64_t work_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  const std::int64_t wait_ns = wait_for_helpers(executor, shared.running);
  if constexpr (kGoverned) executor->split_governor().record(work_ns, wait_ns);
  return true;
}

}  // namespace pjrt_lite::cpu::detail
