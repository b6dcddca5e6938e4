#pragma once
// Bounded spinning before a thread sleeps. Waking a sleeping thread costs a system call on
// one side and a scheduler round trip on the other, longer than the gaps at which the
// kernels of a program hand work to the pool (measured: docs/DECISIONS.md, "The
// steady-state execute path takes no lock"). So a thread that runs out of work polls for a
// short while first, then sleeps: an idle pool stops using CPU within kSpinBeforeSleep.
// Past its first kYieldAfter a poll also yields the core between looks: what it waits for is
// then no longer about to happen, and on a machine with more runnable threads than cores the
// thread it waits for (or another process) may need that core to get there.

#include <chrono>
#include <cstdint>
#include <thread>

namespace pjrt_lite::inline v0_1::detail {

/// How long a thread with nothing to do polls before it sleeps.
inline constexpr std::chrono::microseconds kSpinBeforeSleep{50};

/// How long a poll runs before it starts yielding the core between its looks. Measured on a
/// 2-vCPU VM with a third thread spinning beside a program that a worker ran while its caller
/// waited: without yields, the pooled client ran a 256K-1M element multiply or row sum at
/// 0.77-0.92x the inline client's speed; yielding after 10 us, at 0.95-1.0x, with the same
/// times on the quiet machine (docs/DECISIONS.md, "Polls yield after 10 us").
inline constexpr std::chrono::microseconds kYieldAfter{10};

/// Tells the core that this is a polling loop (a pause on x86, a yield hint on ARM).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

/// Polls `done` for up to kSpinBeforeSleep, yielding the core between looks after the first
/// kYieldAfter; true as soon as it returns true, false if the time ran out first.
template <class Done>
bool spin_until(Done done) {
  if (done()) return true;
  const auto start = std::chrono::steady_clock::now();
  const auto yield_from = start + kYieldAfter, until = start + kSpinBeforeSleep;
  for (std::uint32_t i = 1;; ++i) {
    cpu_relax();
    if (done()) return true;
    if (i % 64 == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) return false;
      if (now >= yield_from) std::this_thread::yield();
    }
  }
}

}  // namespace pjrt_lite::detail
