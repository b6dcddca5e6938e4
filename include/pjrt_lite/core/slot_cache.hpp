#pragma once
// SlotCache<T, K>: up to K objects kept for reuse in K atomic slots, taken and given back
// without a lock. Each operation scans the slots once, so it is wait-free; it never reads
// through a pointer another thread may still own (a slot changes hands only by exchange or by
// a compare-and-swap from empty), so the ABA problem of a linked free list cannot arise.
// Backs the fast path of the CPU client's pools: a steady-state loop recycles the same few
// blocks, which fit the slots.

#include <array>
#include <atomic>
#include <cstddef>

namespace pjrt_lite::inline v0_1::detail {

template <class T, std::size_t K>
class SlotCache {
 public:
  SlotCache() = default;
  SlotCache(const SlotCache&) = delete;
  SlotCache& operator=(const SlotCache&) = delete;

  /// A kept object, now the caller's, or null when there is none.
  T* take() noexcept {
    for (std::atomic<T*>& slot : slots_) {
      if (slot.load(std::memory_order_relaxed) == nullptr) continue;
      if (T* p = slot.exchange(nullptr, std::memory_order_acquire)) return p;
    }
    return nullptr;
  }

  /// Keeps `p` (not null) in an empty slot: true, or false (and `p` stays the caller's) when
  /// every slot is full.
  bool put(T* p) noexcept {
    for (std::atomic<T*>& slot : slots_) {
      if (slot.load(std::memory_order_relaxed) != nullptr) continue;
      T* expected = nullptr;
      if (slot.compare_exchange_strong(expected, p, std::memory_order_release,
                                       std::memory_order_relaxed))
        return true;
    }
    return false;
  }

  /// How many objects are kept. Exact only while no other thread takes or puts.
  [[nodiscard]] std::size_t count() const noexcept {
    std::size_t n = 0;
    for (const std::atomic<T*>& slot : slots_) n += slot.load(std::memory_order_relaxed) != nullptr ? 1 : 0;
    return n;
  }

 private:
  std::array<std::atomic<T*>, K> slots_{};
};

}  // namespace pjrt_lite::detail
