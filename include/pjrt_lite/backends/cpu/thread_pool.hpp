#pragma once
// The executors a CPU client runs transfers and kernels on: a fixed pool of worker threads
// that sleep when idle, and an inline executor that runs everything on the caller.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/spin.hpp"
#include "pjrt_lite/core/unique_function.hpp"

namespace pjrt_lite::inline v0_1::cpu {

using Task = UniqueFunction<void()>;

namespace detail {

/// A FIFO of tasks in a ring buffer that doubles when full and never shrinks, so once it has
/// held the most tasks a program queues at a time, pushing and popping allocate nothing
/// (a std::deque allocates and frees a block every few elements as it moves). Not
/// thread-safe: the pool keeps its overflow in one, under a mutex.
class TaskQueue {
 public:
  explicit TaskQueue(std::size_t initial_capacity = 64)
      : capacity_(std::bit_ceil(std::max<std::size_t>(initial_capacity, 1))),
        slots_(std::make_unique<Task[]>(capacity_)) {}

  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::size_t size() const { return size_; }

  void push(Task task) {
    if (size_ == capacity_) grow();
    slots_[(head_ + size_) & (capacity_ - 1)] = std::move(task);
    ++size_;
  }

  /// Precondition: !empty(). Leaves the slot empty, so a popped task's captures live only in
  /// the returned Task.
  Task pop() {
    Task task = std::move(slots_[head_]);
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
    return task;
  }

 private:
  void grow() {
    auto bigger = std::make_unique<Task[]>(capacity_ * 2);
    for (std::size_t i = 0; i < size_; ++i)
      bigger[i] = std::move(slots_[(head_ + i) & (capacity_ - 1)]);
    slots_ = std::move(bigger);
    capacity_ *= 2;
    head_ = 0;
  }

  std::size_t capacity_;  // a power of two, so wrapping is a mask
  std::unique_ptr<Task[]> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

/// A bounded multi-producer, multi-consumer FIFO of tasks without a lock: a ring of cells
/// whose sequence numbers say whose turn each cell is (a producer's when it equals the
/// position being pushed, a consumer's when it is one past the position being popped), and
/// two counters claimed by compare-and-swap. Capacity a power of two.
class TaskRing {
 public:
  explicit TaskRing(std::size_t capacity)
      : mask_(std::bit_ceil(std::max<std::size_t>(capacity, 2)) - 1),
        cells_(std::make_unique<Cell[]>(mask_ + 1)) {
    for (std::size_t i = 0; i <= mask_; ++i) cells_[i].turn.store(i, std::memory_order_relaxed);
  }

  /// Moves `task` in and returns true, or returns false (task untouched) when full.
  bool try_push(Task& task) {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::size_t turn = cell.turn.load(std::memory_order_acquire);
      if (turn == pos) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.task = std::move(task);
          cell.turn.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (turn < pos) {
        return false;  // the cell still holds the task pushed one lap ago
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  /// Moves the oldest task into `out` and returns true, or returns false when empty (or
  /// when the oldest is still being pushed).
  bool try_pop(Task& out) {
    std::size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::size_t turn = cell.turn.load(std::memory_order_acquire);
      if (turn == pos + 1) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          out = std::move(cell.task);  // leaves the cell empty: the captures move to `out`
          cell.turn.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (turn < pos + 1) {
        return false;
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }

 private:
  struct Cell {
    std::atomic<std::size_t> turn{0};
    Task task;
  };
  const std::size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<std::size_t> tail_{0};  // the next position to push
  alignas(64) std::atomic<std::size_t> head_{0};  // the next position to pop
};

/// Whether parallel loops on a pool should use its workers right now. A loop's caller waits
/// at its end for every worker that took a block; a worker that the OS has descheduled
/// mid-block (another process keeps the cores busy) makes it wait a scheduler time slice,
/// milliseconds for microseconds of work. So each loop reports how long its caller worked
/// and then waited: a wait far beyond the work marks the pool contended, and the next loops
/// run on the caller alone, for a stretch that doubles with each contended loop (up to
/// kMaxSkip loops) and halves with each loop whose helpers kept up. Races between loops only
/// blur the count. Lock-free.
class SplitGovernor {
 public:
  static constexpr std::int64_t kMaxSkip = 4096;
  /// A wait counts as contended beyond this many times the caller's own work, plus kSlackNs.
  static constexpr std::int64_t kWaitFactor = 4;
  static constexpr std::int64_t kSlackNs = 50'000;

  /// Whether the next loop may hand blocks to workers.
  bool may_split() {
    if (skip_left_.load(std::memory_order_relaxed) <= 0) return true;
    skip_left_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  /// After a loop that used workers: the caller's time on its own blocks, and its wait for
  /// the workers after that.
  void record(std::int64_t work_ns, std::int64_t wait_ns) {
    std::int64_t stretch = stretch_.load(std::memory_order_relaxed);
    if (wait_ns > kWaitFactor * work_ns + kSlackNs) {
      stretch = std::min(kMaxSkip, std::max<std::int64_t>(16, 2 * stretch));
      skip_left_.store(stretch, std::memory_order_relaxed);
    } else {
      stretch /= 2;
    }
    stretch_.store(stretch, std::memory_order_relaxed);
  }
  /// Loops still to run on the caller alone.
  [[nodiscard]] std::int64_t skipping() const { return skip_left_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> skip_left_{0};
  std::atomic<std::int64_t> stretch_{0};
};

}  // namespace detail

/// A fixed set of worker threads over one task queue. Scheduling and taking a task take no
/// lock while fewer than kRingCapacity tasks wait (a TaskRing); beyond that, tasks overflow
/// to a queue under a mutex (a TaskQueue, which doubles when full), and run after the ring's.
/// Idle workers sleep on an atomic counter (std::atomic::wait, a futex where there is one),
/// so an idle pool burns no CPU. Scheduling allocates nothing (a task's captures fit Task's
/// inline storage). The destructor runs every task already scheduled (including tasks those
/// tasks schedule) and then joins the workers. All methods are thread-safe.
class ThreadPool {
 public:
  using executor_concept = executor_tag;

  /// Tasks that can wait at once without a lock.
  static constexpr std::size_t kRingCapacity = 1024;

  /// `num_threads` <= 0 means one per hardware thread.
  explicit ThreadPool(int num_threads = 0) : ring_(kRingCapacity) {
    if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    workers_.reserve(static_cast<std::size_t>(num_threads));
    for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() {
    stopping_.store(true);
    posted_.fetch_add(1);
    posted_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  /// Queues `task` to run on some worker. Thread-safe; callable from a worker.
  void schedule(Task task) {
    // Once tasks overflow, later ones follow them there until the overflow drains.
    if (overflowed_.load() > 0 || !ring_.try_push(task)) {
      std::lock_guard lock(overflow_mu_);
      overflow_.push(std::move(task));
      overflowed_.fetch_add(1);
    }
    // A worker that found nothing read `posted_` before looking: this change wakes it, or
    // makes its wait return at once.
    posted_.fetch_add(1);
    if (sleeping_.load() > 0) posted_.notify_one();
  }

  [[nodiscard]] int num_threads() const { return static_cast<int>(workers_.size()); }

  /// Runs one queued task on the calling thread, if there is one. Lets a thread that waits
  /// for tasks it scheduled help instead of blocking a worker. Thread-safe.
  bool try_run_one() {
    Task task;
    if (!try_take(task)) return false;
    task();
    return true;
  }

  /// True on one of this pool's workers.
  [[nodiscard]] bool in_pool_thread() const {
    return current_pool() == this;
  }

  /// Whether parallel loops should use the workers now (see detail::SplitGovernor).
  [[nodiscard]] detail::SplitGovernor& split_governor() { return governor_; }

 private:
  static const ThreadPool*& current_pool() {
    thread_local const ThreadPool* pool = nullptr;
    return pool;
  }

  bool try_take(Task& task) {
    if (ring_.try_pop(task)) return true;
    if (overflowed_.load() == 0) return false;
    std::lock_guard lock(overflow_mu_);
    if (overflow_.empty()) return false;
    task = overflow_.pop();
    overflowed_.fetch_sub(1);
    return true;
  }

  void work() {
    current_pool() = this;
    Task task;
    for (;;) {
      const std::uint32_t seen = posted_.load();
      if (try_take(task)) {
        task();
        task.reset();  // destroy the captures before sleeping
        continue;
      }
      if (stopping_.load()) return;  // stopping and drained
      // A program's next parallel kernel usually follows within microseconds.
      if (pjrt_lite::detail::spin_until([&] { return posted_.load() != seen; })) continue;
      sleeping_.fetch_add(1);
      posted_.wait(seen);
      sleeping_.fetch_sub(1);
    }
  }

  detail::TaskRing ring_;
  std::atomic<std::size_t> overflowed_{0};  // tasks in overflow_
  std::mutex overflow_mu_;
  detail::TaskQueue overflow_;
  std::atomic<std::uint32_t> posted_{0};  // bumped by every schedule and by the destructor
  std::atomic<int> sleeping_{0};          // workers in posted_.wait
  std::atomic<bool> stopping_{false};
  detail::SplitGovernor governor_;
  std::vector<std::thread> workers_;
};

/// Runs every task at once on the thread that schedules it: no threads, no queue, no
/// allocation. For control loops that must stay on their own thread.
class InlineExecutor {
 public:
  using executor_concept = executor_tag;

  explicit InlineExecutor(int /*num_threads*/ = 0) {}
  void schedule(Task task) { task(); }
  bool try_run_one() { return false; }
  [[nodiscard]] int num_threads() const { return 0; }
  [[nodiscard]] bool in_pool_thread() const { return false; }
};

}  // namespace pjrt_lite::cpu
