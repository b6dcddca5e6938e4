#pragma once
// CPU buffers: arrays in host memory with PJRT's ownership and lifetime rules.

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string_view>
#include <thread>
#include <utility>

#include "pjrt_lite/backends/cpu/forward.hpp"
#include "pjrt_lite/backends/cpu/observer.hpp"
#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/slot_cache.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/strided_copy.hpp"
#include "pjrt_lite/core/unique_function.hpp"
#include "pjrt_lite/future.hpp"

namespace pjrt_lite::inline v0_1::cpu {

/// Every buffer's memory is aligned to at least this many bytes (zero-copy host memory that
/// is less aligned is copied instead). Kernels must not assume more.
inline constexpr std::size_t kMinBufferAlignment = 16;

namespace detail {

class MemoryRef;
class MemoryPool;
template <class E>
class BufferStatePool;

/// A block of host memory backing one or more buffers' lifetimes. It is shared by the buffer,
/// by every pending operation that reads or writes it, and by external references, so it is
/// released only when the last of them lets go; then a zero-copy block calls the owner's
/// on_done, and a pooled block goes back to its client's MemoryPool. The header and the data
/// the runtime owns share one allocation, and the reference count is intrusive (MemoryRef),
/// so a block costs one allocation, or none when a pool recycles it.
class DeviceMemory {
 public:
  std::byte* data = nullptr;  // null for an empty block
  std::size_t size = 0;       // bytes of the array it holds
  /// False for kImmutableZeroCopy memory, which the runtime must never write.
  bool writable = true;

  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  /// `size` bytes of uninitialized memory, aligned to kHostAlignment, that no pool recycles;
  /// null when the memory cannot be had. Thread-safe.
  static MemoryRef allocate(std::size_t size);
  /// The caller's `data` (zero-copy): not owned, and `on_release` (may be empty) runs on the
  /// thread that drops the last reference. Thread-safe.
  static MemoryRef wrap(std::byte* data, std::size_t size, bool writable,
                        UniqueFunction<void()> on_release);

 private:
  friend class MemoryRef;
  friend class MemoryPool;

  DeviceMemory() = default;
  ~DeviceMemory() {
    if (on_release) on_release();
  }

  // The header takes whole alignment units, so the data after it is aligned as well.
  static constexpr std::size_t header_bytes() {
    return (sizeof(DeviceMemory) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  }
  // A header followed by `capacity` owned bytes, in one kHostAlignment-aligned allocation;
  // null when the memory cannot be had (never throws).
  static DeviceMemory* create(std::size_t capacity) {
    if (capacity > std::numeric_limits<std::size_t>::max() - header_bytes()) return nullptr;
    void* raw = ::operator new(header_bytes() + capacity, std::align_val_t{kHostAlignment}, std::nothrow);
    if (raw == nullptr) return nullptr;
    auto* m = ::new (raw) DeviceMemory();
    m->capacity_ = capacity;
    if (capacity > 0) m->data = static_cast<std::byte*>(raw) + header_bytes();
    return m;
  }
  static void destroy(DeviceMemory* m) noexcept {
    m->~DeviceMemory();  // runs a zero-copy on_release before the header goes
    ::operator delete(static_cast<void*>(m), std::align_val_t{kHostAlignment});
  }
  static void last_reference_gone(DeviceMemory* m) noexcept;

  UniqueFunction<void()> on_release;   // zero-copy blocks only
  std::atomic<std::size_t> refs_{0};   // MemoryRefs to this block
  std::size_t capacity_ = 0;           // owned bytes after the header (a size class if pooled)
  std::shared_ptr<MemoryPool> pool_;   // the pool to go back to; set only while live
  DeviceMemory* next_free_ = nullptr;  // the pool's free-list link
  std::size_t size_class_ = 0;         // the pool's size class of capacity_
};

/// A counted reference to a DeviceMemory, used like std::shared_ptr<DeviceMemory> but
/// intrusive, so that copying one never allocates. The last reference to go releases the
/// block. Distinct MemoryRefs to one block may be copied and dropped from any threads; one
/// MemoryRef object is not safe to assign while another thread uses it.
class MemoryRef {
 public:
  MemoryRef() noexcept = default;
  MemoryRef(std::nullptr_t) noexcept {}  // NOLINT: implicit like a pointer
  MemoryRef(const MemoryRef& other) noexcept : m_(other.m_) {
    // Relaxed suffices: a new reference can only come from an existing one.
    if (m_) m_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  MemoryRef(MemoryRef&& other) noexcept : m_(std::exchange(other.m_, nullptr)) {}
  MemoryRef& operator=(MemoryRef other) noexcept {
    std::swap(m_, other.m_);
    return *this;
  }
  ~MemoryRef() { reset(); }

  void reset() noexcept {
    DeviceMemory* m = std::exchange(m_, nullptr);
    // acq_rel: every use by other holders happens before the block is reused or freed.
    if (m && m->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      DeviceMemory::last_reference_gone(m);
  }

  [[nodiscard]] DeviceMemory* get() const noexcept { return m_; }
  DeviceMemory* operator->() const noexcept { return m_; }
  DeviceMemory& operator*() const noexcept { return *m_; }
  explicit operator bool() const noexcept { return m_ != nullptr; }
  /// How many MemoryRefs share the block (0 for null). Exact only while no other thread
  /// copies or drops one, as with std::shared_ptr::use_count.
  [[nodiscard]] long use_count() const noexcept {
    return m_ ? static_cast<long>(m_->refs_.load(std::memory_order_acquire)) : 0;
  }

  friend bool operator==(const MemoryRef& a, const MemoryRef& b) noexcept { return a.m_ == b.m_; }
  friend bool operator==(const MemoryRef& a, std::nullptr_t) noexcept { return a.m_ == nullptr; }

 private:
  friend class DeviceMemory;
  friend class MemoryPool;
  // Takes the first reference to a fresh or recycled block.
  explicit MemoryRef(DeviceMemory* adopted) noexcept : m_(adopted) {
    m_->refs_.store(1, std::memory_order_relaxed);
  }

  DeviceMemory* m_ = nullptr;
};

/// Recycles the memory of one client's buffers, so that a loop which drops its outputs and
/// then allocates the same sizes again never reaches the heap. Free blocks are kept in LIFO
/// lists by size class, four classes per power of two from 64 bytes (so a block is at most a
/// quarter larger than its request), and hold at most `budget_bytes` in all, headers
/// included; a block released past the budget is freed. Every live pooled block holds the
/// pool by shared_ptr, so a block released after its client is gone (an ExternalReference, a
/// late transfer) still finds it; close(), from the client's destructor, frees the free
/// blocks and makes later releases free theirs directly. Thread-safe, and without a lock in
/// the steady state: each size class keeps its first kSlotsPerClass free blocks in a
/// SlotCache (atomic slots), and only blocks beyond those go on a list under a mutex, held
/// for a few pointer operations, never across an allocation, a free or user code.
class MemoryPool {
 public:
  /// Free blocks per size class held in lock-free slots; more go on the locked list.
  static constexpr std::size_t kSlotsPerClass = 4;

  explicit MemoryPool(std::size_t budget_bytes) : budget_(budget_bytes) {}
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;
  ~MemoryPool() {
    drain_slots();
    free_all(free_);
  }

  /// `size` bytes of uninitialized memory aligned to kHostAlignment: a free block of its size
  /// class if `pool` has one, else a new block that goes back to `pool` when released.
  /// Unpooled when `pool` is null or closed, or the size is 0 or too big for the budget. Null
  /// when the memory cannot be had. Thread-safe.
  static MemoryRef allocate(const std::shared_ptr<MemoryPool>& pool, std::size_t size) {
    if (pool == nullptr || size == 0 || size > pool->budget_) return DeviceMemory::allocate(size);
    const std::size_t size_class = class_of(size);
    const std::size_t capacity = class_bytes(size_class);
    // A block the budget could never keep is not worth rounding up.
    if (DeviceMemory::header_bytes() + capacity > pool->budget_)
      return DeviceMemory::allocate(size);
    if (pool->closed_.load(std::memory_order_acquire)) return DeviceMemory::allocate(size);
    DeviceMemory* m = pool->slots_[size_class].take();
    if (m == nullptr && pool->overflow_.load(std::memory_order_relaxed) > 0) {
      std::lock_guard lock(pool->mu_);
      if ((m = pool->free_[size_class]) != nullptr) {
        pool->free_[size_class] = m->next_free_;
        pool->overflow_.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    if (m != nullptr) {
      pool->free_bytes_.fetch_sub(DeviceMemory::header_bytes() + m->capacity_,
                                  std::memory_order_relaxed);
    } else {
      m = DeviceMemory::create(capacity);
      if (m == nullptr) return nullptr;
      m->size_class_ = size_class;
    }
    m->next_free_ = nullptr;
    m->size = size;
    m->writable = true;
    m->pool_ = pool;
    return MemoryRef(m);
  }

  /// Frees the free blocks now and every block released from now on. Idempotent;
  /// thread-safe.
  void close() {
    closed_.store(true, std::memory_order_seq_cst);
    drain_slots();
    FreeLists lists{};
    {
      std::lock_guard lock(mu_);
      lists.swap(free_);
      overflow_.store(0, std::memory_order_relaxed);
    }
    free_all(lists);
    free_bytes_.store(0, std::memory_order_relaxed);
  }

  /// Bytes held in free blocks, headers included; at most the budget. Thread-safe; exact
  /// when no other thread allocates or releases at the time.
  [[nodiscard]] std::size_t free_bytes() const { return free_bytes_.load(std::memory_order_relaxed); }
  /// How many free blocks are held. Thread-safe, exact in the same way. Counted when asked
  /// rather than kept: a count kept up to date cost two atomic operations per execute.
  [[nodiscard]] std::size_t free_blocks() const {
    std::size_t blocks = overflow_.load(std::memory_order_relaxed);
    for (const auto& slots : slots_) blocks += slots.count();
    return blocks;
  }

  /// The bytes a block for a request of `size` (> 0) bytes holds.
  static constexpr std::size_t capacity_for(std::size_t size) {
    return class_bytes(class_of(size));
  }

 private:
  friend class DeviceMemory;

  // Class 0 holds 64 bytes; then for each k >= 6 four classes span (2^k, 2^(k+1)] in steps of
  // 2^(k-2). Only sizes up to the budget (below 2^63) are pooled, so k stays below 63.
  static constexpr std::size_t kClasses = 1 + 4 * (63 - 6);
  using FreeLists = std::array<DeviceMemory*, kClasses>;

  static constexpr std::size_t class_of(std::size_t size) {
    if (size <= 64) return 0;
    const auto k = static_cast<std::size_t>(std::bit_width(size - 1) - 1);  // 2^k < size <= 2^(k+1)
    const std::size_t step = std::size_t{1} << (k - 2);
    const std::size_t quarter = (size - (std::size_t{1} << k) + step - 1) / step;  // 1..4
    return 1 + 4 * (k - 6) + (quarter - 1);
  }
  static constexpr std::size_t class_bytes(std::size_t size_class) {
    if (size_class == 0) return 64;
    const std::size_t k = 6 + (size_class - 1) / 4;
    return (std::size_t{1} << k) + ((size_class - 1) % 4 + 1) * (std::size_t{1} << (k - 2));
  }

  // Keeps `m` (whose last reference is gone) if the budget allows; false means free it. The
  // budget is reserved first, so the count never exceeds it; a block put while close() runs
  // stays in its slot until the destructor.
  bool put(DeviceMemory* m) noexcept {
    if (closed_.load(std::memory_order_acquire)) return false;
    const std::size_t bytes = DeviceMemory::header_bytes() + m->capacity_;
    std::size_t held = free_bytes_.load(std::memory_order_relaxed);
    do {
      if (bytes > budget_ - held) return false;
    } while (!free_bytes_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
    if (slots_[m->size_class_].put(m)) return true;
    std::lock_guard lock(mu_);
    m->next_free_ = free_[m->size_class_];
    free_[m->size_class_] = m;
    overflow_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void drain_slots() noexcept {
    for (pjrt_lite::detail::SlotCache<DeviceMemory, kSlotsPerClass>& slots : slots_)
      while (DeviceMemory* m = slots.take()) DeviceMemory::destroy(m);
  }

  static void free_all(FreeLists& lists) noexcept {
    for (DeviceMemory*& head : lists)
      while (head != nullptr) DeviceMemory::destroy(std::exchange(head, head->next_free_));
  }

  std::array<pjrt_lite::detail::SlotCache<DeviceMemory, kSlotsPerClass>, kClasses> slots_;
  std::mutex mu_;     // guards free_, the overflow beyond the slots
  FreeLists free_{};  // singly linked through DeviceMemory::next_free_
  std::atomic<std::size_t> overflow_{0};  // blocks on free_, so that allocate skips the lock at 0
  std::atomic<std::size_t> free_bytes_{0};  // never above budget_
  const std::size_t budget_;
  std::atomic<bool> closed_{false};
};

inline MemoryRef DeviceMemory::allocate(std::size_t size) {
  DeviceMemory* m = create(size);
  if (m == nullptr) return nullptr;
  m->size = size;
  return MemoryRef(m);
}

inline MemoryRef DeviceMemory::wrap(std::byte* data, std::size_t size, bool writable,
                                    UniqueFunction<void()> on_release) {
  DeviceMemory* m = create(0);
  if (m == nullptr) {
    if (on_release) on_release();  // the caller's data is not needed after all
    return nullptr;
  }
  m->data = data;
  m->size = size;
  m->writable = writable;
  m->on_release = std::move(on_release);
  return MemoryRef(m);
}

inline void DeviceMemory::last_reference_gone(DeviceMemory* m) noexcept {
  // The local keeps the pool alive through put(); if it is the last owner, the pool (and
  // with it `m`, now on a free list) is freed when it goes, after `m` is no longer touched.
  std::shared_ptr<MemoryPool> pool = std::move(m->pool_);
  if (pool == nullptr || !pool->put(m)) destroy(m);
}

// BufferState::access: the buffer is deleted or donated; an operation holds it alone; the
// count of readers in.
inline constexpr std::uint32_t kBufferGone = 1u << 31;
inline constexpr std::uint32_t kBufferExclusive = 1u << 30;
inline constexpr std::uint32_t kBufferReaders = kBufferExclusive - 1;

/// Waits out another thread's few instructions: spins a little, then yields the core.
inline void back_off(int& spins) {
  if (++spins > 16) std::this_thread::yield();
}

/// The memory of a live buffer and the future that says when its contents are defined.
struct BufferHold {
  MemoryRef memory;
  Future<void> ready;
};

template <class E>
struct BufferState {
  Client<E>* client = nullptr;
  MemorySpace<E>* memory_space = nullptr;
  Shape shape;
  Future<void> ready;
  // Who uses `memory`, without a lock: kGone once deleted or donated; kExclusive while an
  // operation that changes it (delete, donate, copy_raw_from_host) runs; below those, how
  // many readers are copying it (taking a hold: a few instructions). See Buffer::read_state.
  std::atomic<std::uint32_t> access{0};
  MemoryRef memory;  // null once deleted or donated
  // Where the state goes when its buffer is destroyed; set only while live.
  std::shared_ptr<BufferStatePool<E>> pool;
  BufferState* next_free = nullptr;  // the pool's free-list link
};

/// Recycles the states behind one client's buffers, so making a buffer in a steady-state
/// loop allocates nothing: a recycled state keeps its shape, whose dimension vectors then
/// take the next shape without allocating. Keeps at most kMaxFree states; like MemoryPool,
/// live states hold it by shared_ptr and close() frees the free ones. Thread-safe: the first
/// kSlots free states sit in a SlotCache (no lock); more go on a list under a mutex.
template <class E>
class BufferStatePool {
 public:
  static constexpr std::size_t kMaxFree = 1024;  // on the list, beyond the slots
  static constexpr std::size_t kSlots = 16;

  BufferStatePool() = default;
  BufferStatePool(const BufferStatePool&) = delete;
  BufferStatePool& operator=(const BufferStatePool&) = delete;
  ~BufferStatePool() {
    drain_slots();
    free_all(free_);
  }

  /// A free state of `pool`, or a new one (also when `pool` is null). Thread-safe.
  static BufferState<E>* take(const std::shared_ptr<BufferStatePool>& pool) {
    BufferState<E>* s = nullptr;
    if (pool != nullptr && !pool->closed_.load(std::memory_order_acquire)) {
      s = pool->slots_.take();
      if (s == nullptr) {
        std::lock_guard lock(pool->mu_);
        if ((s = pool->free_) != nullptr) {
          pool->free_ = s->next_free;
          --pool->free_count_;
        }
      }
    }
    if (s == nullptr) s = new BufferState<E>();
    s->next_free = nullptr;
    s->pool = pool;
    return s;
  }

  /// Ends the life of a buffer's state: back to its pool, or freed. Thread-safe.
  static void give_back(BufferState<E>* s) noexcept {
    std::shared_ptr<BufferStatePool> pool = std::move(s->pool);
    // Dropped here rather than in the pool: the memory may run a zero-copy on_done, which
    // must not run under the pool's lock, and must not wait for the state's reuse.
    s->memory.reset();
    s->ready = Future<void>();
    s->client = nullptr;
    s->memory_space = nullptr;
    if (pool == nullptr || !pool->put(s)) delete s;
  }

  /// Frees the free states now and every state given back from now on. Idempotent;
  /// thread-safe.
  void close() {
    closed_.store(true, std::memory_order_seq_cst);
    drain_slots();
    BufferState<E>* list = nullptr;
    {
      std::lock_guard lock(mu_);
      list = std::exchange(free_, nullptr);
      free_count_ = 0;
    }
    free_all(list);
  }

 private:
  // A state put while close() runs stays in its slot until the destructor.
  bool put(BufferState<E>* s) noexcept {
    if (closed_.load(std::memory_order_acquire)) return false;
    if (slots_.put(s)) return true;
    std::lock_guard lock(mu_);
    if (free_count_ >= kMaxFree) return false;
    s->next_free = free_;
    free_ = s;
    ++free_count_;
    return true;
  }

  void drain_slots() noexcept {
    while (BufferState<E>* s = slots_.take()) delete s;
  }

  static void free_all(BufferState<E>* list) noexcept {
    while (list != nullptr) delete std::exchange(list, list->next_free);
  }

  pjrt_lite::detail::SlotCache<BufferState<E>, kSlots> slots_;
  std::mutex mu_;                   // guards the list beyond the slots
  BufferState<E>* free_ = nullptr;  // singly linked through BufferState::next_free
  std::size_t free_count_ = 0;
  std::atomic<bool> closed_{false};
};

/// Lets a Buffer's unique_ptr give its state back to the pool instead of deleting it.
template <class E>
struct BufferStateDeleter {
  void operator()(BufferState<E>* s) const noexcept { BufferStatePool<E>::give_back(s); }
};

template <class E>
using BufferStatePtr = std::unique_ptr<BufferState<E>, BufferStateDeleter<E>>;

struct BufferAccess;

}  // namespace detail

/// Keeps a buffer's memory alive (and unmoved) after the buffer is deleted, e.g. while a
/// foreign library reads it. Movable; the memory is released with the last reference.
class ExternalReference {
 public:
  explicit ExternalReference(detail::MemoryRef memory) : memory_(std::move(memory)) {}
  [[nodiscard]] void* data() const { return memory_->data; }
  [[nodiscard]] std::size_t size() const { return memory_->size; }

 private:
  detail::MemoryRef memory_;
};

/// An array on one device's memory space. Move-only, like PJRT's unique_ptr<PjRtBuffer>:
/// destroying it deletes it, so the compiler warns where a returned Buffer is dropped. Memory
/// is released only after every pending use (transfers, executions, external references) is
/// done. All const methods and delete_buffer() are thread-safe.
///
/// A moved-from Buffer is safe to use, and says so: every operation that returns a Status or
/// a Future fails with FAILED_PRECONDITION "... the buffer was moved from"; is_deleted() is
/// true, dtype() is kInvalid, on_device_shape() is the invalid Shape, dims() is empty,
/// memory_space(), device() and client() are null, and delete_buffer() does nothing.
template <class E>
class [[nodiscard]] Buffer {
 public:
  using buffer_concept = buffer_tag;
  using device_type = Device<E>;
  using memory_space_type = MemorySpace<E>;

  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  ~Buffer() = default;

  [[nodiscard]] const Shape& on_device_shape() const {
    static const Shape kNoShape;  // a moved-from buffer's
    return state_ ? state_->shape : kNoShape;
  }
  [[nodiscard]] DType dtype() const { return on_device_shape().dtype(); }
  [[nodiscard]] std::span<const std::int64_t> dims() const { return on_device_shape().dims(); }
  /// The layout of the contents as PJRT states it (PjRtBuffer::layout): the dimensions from
  /// minor to major, {rank - 1, ..., 0} for the default row-major.
  [[nodiscard]] std::vector<std::int64_t> minor_to_major() const { return pjrt_lite::minor_to_major(on_device_shape()); }
  [[nodiscard]] MemorySpace<E>* memory_space() const { return state_ ? state_->memory_space : nullptr; }
  [[nodiscard]] Device<E>* device() const {
    return state_ && state_->memory_space ? state_->memory_space->devices()[0] : nullptr;
  }
  [[nodiscard]] Client<E>* client() const { return state_ ? state_->client : nullptr; }

  /// The bytes the buffer occupies, or FAILED_PRECONDITION once deleted.
  [[nodiscard]] StatusOr<std::int64_t> on_device_size_in_bytes() const {
    PJRT_LITE_ASSIGN_OR_RETURN(detail::BufferHold hold, acquire("on_device_size_in_bytes"));
    return static_cast<std::int64_t>(hold.memory->size);
  }

  /// Ready when the contents are defined (the transfer or execution that writes them is done),
  /// or holds the error that prevented it. For a deleted or donated buffer, as in PJRT, a
  /// future holding FAILED_PRECONDITION "get_ready_future: buffer ... has been deleted or
  /// donated" (PJRT's own clients say INVALID_ARGUMENT there; this library reports every use
  /// of a deleted buffer as FAILED_PRECONDITION).
  [[nodiscard]] Future<void> get_ready_future() const {
    if (!state_) return make_error_future<void>(moved_from_error("get_ready_future"));
    Future<void> ready;
    if (!read_state([&] { ready = state_->ready; }))
      return make_error_future<void>(gone_error("get_ready_future"));
    return ready;
  }

  /// True once deleted or donated (and for a moved-from buffer).
  [[nodiscard]] bool is_deleted() const {
    return !state_ || (state_->access.load(std::memory_order_acquire) & detail::kBufferGone) != 0;
  }

  /// Drops this buffer's claim on its memory; later uses fail with FAILED_PRECONDITION.
  /// Pending uses keep the memory until they finish. Idempotent.
  void delete_buffer() {
    if (!state_) return;
    detail::MemoryRef released;
    change_state([&] {
      released = std::move(state_->memory);
      return true;
    });
    // `released` goes here, after the state is free again: it may run a zero-copy on_done.
  }

  /// The contents, copied to a host Literal once ready. Copies of at least the client's
  /// async_transfer_threshold_bytes run on the client's executor.
  [[nodiscard]] Future<Literal> to_literal() const {
    StatusOr<detail::BufferHold> hold = acquire("to_literal");
    if (!hold.ok()) return make_error_future<Literal>(hold.status());
    auto [promise, future] = make_promise<Literal>();
    pjrt_lite::detail::follow(future, hold->ready);
    Shape shape = state_->shape;
    const auto bytes = static_cast<std::int64_t>(hold->memory->size);
    run_when_ready(
        SpanKind::kDeviceToHost, "to_literal", std::move(*hold), bytes,
        [shape = std::move(shape)](const Status& status, const detail::DeviceMemory& memory) -> StatusOr<Literal> {
          if (!status.ok()) return status;
          StatusOr<Literal> literal = Literal::create(shape);
          if (!literal.ok()) return literal.status().with_context("to_literal");
          if (memory.size) std::memcpy(literal->untyped_data(), memory.data, memory.size);
          return literal;
        },
        [promise = std::move(promise)](StatusOr<Literal> literal) mutable {
          if (literal.ok())
            promise.set_value(std::move(literal).value());
          else
            promise.set_error(literal.status());
        });
    return future;
  }

  /// Copies bytes [offset, offset + size) of the contents to `dst` once ready. OUT_OF_RANGE
  /// if the range leaves the buffer.
  [[nodiscard]] Future<void> copy_raw_to_host(void* dst, std::int64_t offset, std::int64_t size) const {
    StatusOr<detail::BufferHold> hold = acquire("copy_raw_to_host");
    if (!hold.ok()) return make_error_future<void>(hold.status());
    const auto total = static_cast<std::int64_t>(hold->memory->size);
    if (offset < 0 || size < 0 || offset > total || size > total - offset)
      return make_error_future<void>(out_of_range_error(
          str_cat("copy_raw_to_host: bytes [", offset, ", ", offset + size, ") of buffer ",
                  state_->shape, " are outside its ", total, " bytes")));
    if (dst == nullptr && size > 0)
      return make_error_future<void>(invalid_argument_error("copy_raw_to_host: dst is null"));
    // A small copy of a ready buffer happens here and now, without a promise: a control loop
    // reading its results back then allocates nothing.
    if (hold->ready.is_ready() && !offloaded(size)) {
      Status status = hold->ready.await();
      if (!status.ok()) return make_error_future<void>(std::move(status));
      detail::ObservedSpan span(state_->client->observer(), SpanKind::kDeviceToHost, "copy_raw_to_host", size);
      if (size > 0) std::memcpy(dst, hold->memory->data + offset, static_cast<std::size_t>(size));
      return make_ready_future();
    }
    auto [promise, future] = make_promise<void>();
    pjrt_lite::detail::follow(future, hold->ready);
    run_when_ready(
        SpanKind::kDeviceToHost, "copy_raw_to_host", std::move(*hold), size,
        [dst, offset, size](const Status& status, const detail::DeviceMemory& memory) {
          if (status.ok() && size > 0) std::memcpy(dst, memory.data + offset, static_cast<std::size_t>(size));
          return status;
        },
        [promise = std::move(promise)](const Status& status) mutable { promise.set(status); });
    return future;
  }

  /// Overwrites bytes [offset, offset + size) of the contents with `src`, here and now: how a
  /// control loop feeds each tick's input through one buffer without allocating. Only memory
  /// that nothing else can see is written: FAILED_PRECONDITION while a transfer, an execution,
  /// another buffer or an external reference still shares it, when the buffer is deleted,
  /// when it views host memory read-only (kImmutableZeroCopy), or when the operation that
  /// defined its contents failed or is still running; OUT_OF_RANGE if the range leaves the
  /// buffer. Never blocks. Thread-safe.
  Status copy_raw_from_host(const void* src, std::int64_t offset, std::int64_t size) {
    if (!state_) return moved_from_error("copy_raw_from_host");
    Status status;
    // Holding the state alone, no new use can take the memory: the count only falls.
    if (!change_state([&] {
          status = copy_raw_alone(src, offset, size);
          return false;
        }))
      return gone_error("copy_raw_from_host");
    return status;
  }

  /// A copy of this buffer in `memory_space` (of the same client). Returns at once; the new
  /// buffer's ready future says when the copy is done, or carries this buffer's error.
  [[nodiscard]] StatusOr<Buffer> copy_to_memory_space(MemorySpace<E>* memory_space) const {
    if (!state_) return moved_from_error("copy_to_memory_space");
    if (memory_space == nullptr)
      return invalid_argument_error("copy_to_memory_space: memory space is null");
    if (memory_space->client() != state_->client)
      return invalid_argument_error(str_cat("copy_to_memory_space: memory space ",
                                            memory_space->debug_string(),
                                            " belongs to another client"));
    PJRT_LITE_ASSIGN_OR_RETURN(detail::BufferHold hold, acquire("copy_to_memory_space"));
    detail::MemoryRef destination = state_->client->allocate_memory(hold.memory->size);
    if (destination == nullptr)
      return pjrt_lite::detail::allocation_error(
          str_cat("copy_to_memory_space: a copy of buffer ", state_->shape), hold.memory->size);
    auto [promise, future] = make_promise<void>();
    const auto bytes = static_cast<std::int64_t>(hold.memory->size);
    run_when_ready(
        SpanKind::kDeviceToDevice, "copy_to_memory_space", std::move(hold), bytes,
        [destination](const Status& status, const detail::DeviceMemory& source) {
          if (status.ok() && source.size) std::memcpy(destination->data, source.data, source.size);
          return status;
        },
        [promise = std::move(promise)](const Status& status) mutable { promise.set(status); });
    return make(state_->client, memory_space, state_->shape, std::move(destination), std::move(future));
  }

  /// A copy of this buffer in the same memory space, its elements laid out in
  /// `minor_to_major` order (PJRT's layouts; empty: row-major): how a buffer meets an
  /// executable compiled with CompileOptions::argument_layouts. Returns at once, as
  /// copy_to_memory_space. INVALID_ARGUMENT unless the order names each dimension once.
  [[nodiscard]] StatusOr<Buffer> copy_to_layout(std::span<const std::int64_t> minor_to_major) const {
    if (!state_) return moved_from_error("copy_to_layout");
    PJRT_LITE_ASSIGN_OR_RETURN(Shape target, with_minor_to_major(state_->shape, minor_to_major, "copy_to_layout"));
    PJRT_LITE_ASSIGN_OR_RETURN(detail::BufferHold hold, acquire("copy_to_layout"));
    detail::MemoryRef destination = state_->client->allocate_memory(hold.memory->size);
    if (destination == nullptr)
      return pjrt_lite::detail::allocation_error(str_cat("copy_to_layout: a copy of buffer ", state_->shape),
                                                 hold.memory->size);
    // The target's bytes are row-major over its dimensions taken major to minor; each steps
    // through the source by that dimension's stride in the source's layout.
    const std::vector<std::int64_t> from = state_->shape.byte_strides();
    std::vector<std::int64_t> dims, strides;
    for (std::int64_t d : target.major_to_minor()) {
      dims.push_back(target.dim(d));
      strides.push_back(from[static_cast<std::size_t>(d)]);
    }
    auto [promise, future] = make_promise<void>();
    const auto bytes = static_cast<std::int64_t>(hold.memory->size);
    run_when_ready(
        SpanKind::kDeviceToDevice, "copy_to_layout", std::move(hold), bytes,
        [destination, dims = std::move(dims), strides = std::move(strides),
         esize = static_cast<std::int64_t>(byte_size(target.dtype()))](const Status& status,
                                                                        const detail::DeviceMemory& source) {
          if (status.ok() && source.size) gather_strided(source.data, dims, strides, esize, destination->data);
          return status;
        },
        [promise = std::move(promise)](const Status& status) mutable { promise.set(status); });
    return make(state_->client, state_->memory_space, target, std::move(destination), std::move(future));
  }

  /// A copy of this buffer in `device`'s default memory space.
  [[nodiscard]] StatusOr<Buffer> copy_to_device(Device<E>* device) const {
    if (!state_) return moved_from_error("copy_to_device");
    if (device == nullptr) return invalid_argument_error("copy_to_device: device is null");
    if (device->client() != state_->client)
      return invalid_argument_error(str_cat("copy_to_device: device ", device->debug_string(),
                                            " belongs to another client"));
    PJRT_LITE_ASSIGN_OR_RETURN(MemorySpace<E>* memory_space, device->default_memory_space());
    return copy_to_memory_space(memory_space);
  }

  /// Keeps the memory alive and in place until the reference is dropped, even if the buffer
  /// is deleted. The contents are defined once get_ready_future() is ready.
  [[nodiscard]] StatusOr<ExternalReference> acquire_external_reference() const {
    PJRT_LITE_ASSIGN_OR_RETURN(detail::BufferHold hold, acquire("acquire_external_reference"));
    return ExternalReference(std::move(hold.memory));
  }

  /// "Buffer(f32[2,3] on cpu:0/device)".
  [[nodiscard]] std::string to_string() const {
    if (!state_) return "Buffer(moved from)";
    return str_cat("Buffer(", state_->shape, " on ", state_->memory_space->debug_string(),
                   is_deleted() ? ", deleted)" : ")");
  }

  /// An address that identifies this buffer while it lives (for logs).
  [[nodiscard]] const void* id() const { return state_.get(); }

 private:
  // The runtime's own members (the client and executables make buffers over memory they
  // allocate and hold a live buffer's memory while they use it) are reached through
  // detail::BufferAccess, not by users.
  friend struct detail::BufferAccess;
  explicit Buffer(detail::BufferStatePtr<E> state) : state_(std::move(state)) {}

  // detail::BufferAccess::make and ::acquire say what these do.
  static Buffer make(Client<E>* client, MemorySpace<E>* memory_space, const Shape& shape,
                     detail::MemoryRef memory, Future<void> ready) {
    // Passed by reference: a conditional expression would copy the pool's shared_ptr (two
    // atomic operations per buffer).
    static const std::shared_ptr<detail::BufferStatePool<E>> no_pool;
    detail::BufferStatePtr<E> state(
        detail::BufferStatePool<E>::take(client != nullptr ? client->buffer_state_pool_ : no_pool));
    state->client = client;
    state->memory_space = memory_space;
    state->shape = shape;
    state->memory = std::move(memory);
    state->ready = std::move(ready);
    // A buffer without memory is born deleted.
    state->access.store(state->memory == nullptr ? detail::kBufferGone : 0, std::memory_order_relaxed);
    return Buffer(std::move(state));
  }

  [[nodiscard]] StatusOr<detail::BufferHold> acquire(std::string_view what) const {
    if (!state_) return moved_from_error(what);
    detail::BufferHold hold;
    if (!read_state([&] { hold = detail::BufferHold{state_->memory, state_->ready}; }))
      return gone_error(what);
    return hold;
  }
  [[nodiscard]] StatusOr<detail::BufferHold> acquire(std::string_view what,
                                                     std::size_t index) const {
    if (!state_) return moved_from_error(what, " ", index);
    detail::BufferHold hold;
    if (!read_state([&] { hold = detail::BufferHold{state_->memory, state_->ready}; }))
      return gone_error(what, " ", index);
    return hold;
  }

  /// Donation as a transaction, for an execute that donates several buffers and must leave
  /// every one as it was when it fails: reserve_donation() holds a live buffer alone (other
  /// uses wait) or fails naming operand `index` of `what` when it is deleted or donated; then
  /// commit_donation() takes the memory and deletes the buffer, or cancel_donation() lets it
  /// go unchanged, each exactly once after a successful reserve. A caller reserving several
  /// buffers reserves them in the order of their id(), so that two such callers never wait
  /// on each other. Only an execute does this (a reservation left open would stall every
  /// other use of the buffer).
  friend class LoadedExecutable<E>;
  [[nodiscard]] Status reserve_donation(std::string_view what, std::size_t index) {
    if (!state_) return moved_from_error(what, " ", index);
    if (!hold_alone()) return gone_error(what, " ", index);
    return ok_status();
  }
  /// The memory of a reserved buffer.
  [[nodiscard]] const detail::MemoryRef& reserved_memory() const { return state_->memory; }
  [[nodiscard]] detail::BufferHold commit_donation() {
    detail::BufferHold hold{std::move(state_->memory), state_->ready};
    let_go(true);
    return hold;
  }
  void cancel_donation() { let_go(false); }

  // The buffer's memory changes hands without a lock (BufferState::access): readers count
  // themselves in for the few instructions of copying a MemoryRef, and an operation that
  // changes the memory first marks the state exclusive, then waits for the readers already
  // in to leave. Neither side waits unless the other is in that short window, so a
  // steady-state execute takes no lock and never sleeps here.

  /// Runs read() with state_->memory and state_->ready stable: true, or false (read() not
  /// run) once the buffer is deleted or donated.
  template <class F>
  bool read_state(F&& read) const {
    std::atomic<std::uint32_t>& access = state_->access;
    for (int spins = 0;; detail::back_off(spins)) {
      const std::uint32_t was = access.fetch_add(1, std::memory_order_acquire);
      if ((was & (detail::kBufferGone | detail::kBufferExclusive)) == 0) break;
      access.fetch_sub(1, std::memory_order_relaxed);
      if ((was & detail::kBufferGone) != 0) return false;
    }
    read();
    access.fetch_sub(1, std::memory_order_release);
    return true;
  }

  /// Runs change() with the state held alone (no reader in, no other change): change()
  /// returns whether the buffer is now deleted or donated. Returns false (change() not run)
  /// when it already was.
  template <class F>
  bool change_state(F&& change) {
    if (!hold_alone()) return false;
    let_go(change());
    return true;
  }

  /// Marks the state exclusive and waits for the readers in to leave: false (nothing held)
  /// when the buffer is deleted or donated.
  bool hold_alone() {
    std::atomic<std::uint32_t>& access = state_->access;
    std::uint32_t seen = access.load(std::memory_order_relaxed);
    for (int spins = 0;;) {
      if ((seen & detail::kBufferGone) != 0) return false;
      if ((seen & detail::kBufferExclusive) != 0) {
        detail::back_off(spins);
        seen = access.load(std::memory_order_relaxed);
      } else if (access.compare_exchange_weak(seen, seen | detail::kBufferExclusive,
                                              std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
        break;
      }
    }
    for (int spins = 0; (access.load(std::memory_order_acquire) & detail::kBufferReaders) != 0;)
      detail::back_off(spins);
    return true;
  }

  /// Ends hold_alone(), marking the buffer deleted if `gone`. Readers that counted
  /// themselves in meanwhile (and will leave again) keep their counts.
  void let_go(bool gone) {
    state_->access.fetch_xor(gone ? detail::kBufferExclusive | detail::kBufferGone : detail::kBufferExclusive,
                             std::memory_order_release);
  }

  // copy_raw_from_host's checks and copy, with the state held alone and not deleted.
  Status copy_raw_alone(const void* src, std::int64_t offset, std::int64_t size) {
    const detail::MemoryRef& memory = state_->memory;
    const auto total = static_cast<std::int64_t>(memory->size);
    if (offset < 0 || size < 0 || offset > total || size > total - offset)
      return out_of_range_error(str_cat("copy_raw_from_host: bytes [", offset, ", ", offset + size,
                                        ") of buffer ", state_->shape, " are outside its ", total,
                                        " bytes"));
    if (src == nullptr && size > 0)
      return invalid_argument_error("copy_raw_from_host: src is null");
    if (!memory->writable)
      return failed_precondition_error(
          str_cat("copy_raw_from_host: buffer ", state_->shape,
                  " is a read-only view of host memory (kImmutableZeroCopy)"));
    if (const long users = memory.use_count() - 1; users > 0)
      return failed_precondition_error(str_cat(
          "copy_raw_from_host: the memory of buffer ", state_->shape, " is still shared by ", users,
          " pending operation(s), buffer(s) or external reference(s)"));
    // Never waits: a real-time caller must not stall here.
    if (!state_->ready.is_ready())
      return failed_precondition_error(
          str_cat("copy_raw_from_host: buffer ", state_->shape,
                  " is not ready yet (await get_ready_future() first)"));
    if (Status defined = state_->ready.await(); !defined.ok())
      return failed_precondition_error(str_cat("copy_raw_from_host: the contents of buffer ",
                                               state_->shape,
                                               " were never defined: ", defined.to_string()));
    detail::ObservedSpan span(state_->client->observer(), SpanKind::kHostToDevice,
                              "copy_raw_from_host", size);
    if (size > 0) std::memcpy(memory->data + offset, src, static_cast<std::size_t>(size));
    return ok_status();
  }


  template <class... Name>
  static Status moved_from_error(const Name&... name) {
    return failed_precondition_error(str_cat(name..., ": the buffer was moved from"));
  }

  template <class... Name>
  Status gone_error(const Name&... name) const {
    return failed_precondition_error(str_cat(name..., ": buffer ", state_->shape, " on ",
                                             state_->memory_space->debug_string(),
                                             " has been deleted or donated"));
  }

  /// Whether a host copy of `bytes` runs on the client's executor: only an executor with
  /// threads, since an inline one would run it here anyway.
  bool offloaded(std::int64_t bytes) const {
    return state_->client->executor().num_threads() > 0 &&
           bytes >= state_->client->options().async_transfer_threshold_bytes;
  }

  /// Once the buffer is ready, runs work(status of the ready future, memory), lets the memory
  /// go, then runs done(what work returned): inline for small copies (of `bytes`), on the
  /// client's executor for large ones. `hold` keeps the memory alive until work has run, and no
  /// longer: a thread that done wakes (through a promise) finds the buffer's memory held by
  /// the buffer alone, so a loop that reads its result back and executes again gets the same
  /// block for the next output. The client's observer, if any, hears of the work as a span of
  /// `kind` named `what` (a string literal), before done runs.
  template <class Work, class Done>
  void run_when_ready(SpanKind kind, std::string_view what, detail::BufferHold hold, std::int64_t bytes, Work work,
                      Done done) const {
    const bool offload = offloaded(bytes);
    E* executor = &state_->client->executor();
    Future<void> ready = hold.ready;
    auto finish = [kind, what, bytes](Observer* observer, const Status& status, detail::MemoryRef& memory, Work& work,
                                      Done& done) {
      auto result = [&] {
        detail::ObservedSpan span(status.ok() ? observer : nullptr, kind, what, bytes);
        return work(status, *memory);
      }();
      memory = nullptr;
      done(std::move(result));
    };
    ready.on_ready([memory = std::move(hold.memory), work = std::move(work), done = std::move(done), offload, executor,
                    observer = state_->client->observer(), finish](const Status& status) mutable {
      if (offload && status.ok()) {
        executor->schedule([memory = std::move(memory), work = std::move(work), done = std::move(done), observer,
                            finish]() mutable { finish(observer, Status(), memory, work, done); });
      } else {
        finish(observer, status, memory, work, done);
      }
    });
  }

  detail::BufferStatePtr<E> state_;
};

namespace detail {

/// The runtime's door into Buffer (the client, executables and the runtime's own tests):
/// a buffer over memory it allocated, and a live buffer's memory held while it is used.
struct BufferAccess {
  /// A buffer over `memory`, defined once `ready` is. Its state comes from the client's pool
  /// and `shape` is copied into the recycled one, so in a steady state this allocates
  /// nothing. Thread-safe.
  template <class E>
  static Buffer<E> make(Client<E>* client, MemorySpace<E>* memory_space, const Shape& shape,
                        MemoryRef memory, Future<void> ready) {
    return Buffer<E>::make(client, memory_space, shape, std::move(memory), std::move(ready));
  }
  /// The memory and ready future of a live buffer, or FAILED_PRECONDITION naming `what`
  /// (and operand `index` of it, formatted only on failure). Allocates nothing unless it fails.
  template <class E>
  static StatusOr<BufferHold> acquire(const Buffer<E>& buffer, std::string_view what) {
    return buffer.acquire(what);
  }
  template <class E>
  static StatusOr<BufferHold> acquire(const Buffer<E>& buffer, std::string_view what, std::size_t index) {
    return buffer.acquire(what, index);
  }
};

}  // namespace detail

}  // namespace pjrt_lite::cpu
