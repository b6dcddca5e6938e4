#pragma once
// Bounded spinning before a thread sleeps. Waking a sleeping thread costs a system call on
// one side and a scheduler round trip on the other, longer than the gaps at which the
// kernels of a program hand work to the pool (measured: docs/DECISIONS.md, "The
// steady-state execute path takes no lock"). So a thread that runs out of work polls for a
// short while first, then sleeps: an idle pool stops using CPU within kSpinBeforeSleep.

#include <chrono>
#include <cstdint>

namespace pjrt_lite::inline v0_1::detail {

/// How long a thread with nothing to do polls before it sleeps.
inline constexpr std::chrono::microseconds kSpinBeforeSleep{50};

/// Tells the core that this is a polling loop (a pause on x86, a yield hint on ARM).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

/// Polls `done` for up to kSpinBeforeSleep; true as soon as it returns true, false if the
/// time ran out first.
template <class Done>
bool spin_until(Done done) {
  if (done()) return true;
  const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (std::uint32_t i = 1;; ++i) {
    cpu_relax();
    if (done()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return false;
  }
}

}  // namespace pjrt_lite::detail
