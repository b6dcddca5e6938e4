#pragma once
// The executors a CPU client runs transfers and (later) kernels on: a fixed pool of worker
// threads that sleep when idle, and an inline executor that runs everything on the caller.

#include <algorithm>
#include <bit>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/unique_function.hpp"

namespace pjrt_lite::cpu {

using Task = UniqueFunction<void()>;

namespace detail {

/// A FIFO of tasks in a ring buffer that doubles when full and never shrinks, so once it has
/// held the most tasks a program queues at a time, pushing and popping allocate nothing
/// (a std::deque allocates and frees a block every few elements as it moves). Not
/// thread-safe: the pool guards it with its mutex.
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

}  // namespace detail

/// A fixed set of worker threads over one FIFO queue. Idle workers block on a condition
/// variable, so an idle pool burns no CPU. Scheduling allocates nothing once the queue has
/// grown to the most tasks ever waiting at once (and a task's captures fit Task's inline
/// storage). The destructor runs every task already scheduled
/// (including tasks those tasks schedule) and then joins the workers. All methods are
/// thread-safe.
class ThreadPool {
 public:
  using executor_concept = executor_tag;

  /// `num_threads` <= 0 means one per hardware thread.
  explicit ThreadPool(int num_threads = 0) {
    if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    workers_.reserve(static_cast<std::size_t>(num_threads));
    for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  /// Queues `task` to run on some worker. Thread-safe; callable from a worker.
  void schedule(Task task) {
    {
      std::lock_guard lock(mu_);
      queue_.push(std::move(task));
    }
    cv_.notify_one();
  }

  [[nodiscard]] int num_threads() const { return static_cast<int>(workers_.size()); }

  /// Runs one queued task on the calling thread, if there is one. Lets a thread that waits
  /// for tasks it scheduled help instead of blocking a worker. Thread-safe.
  bool try_run_one() {
    Task task;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return false;
      task = queue_.pop();
    }
    task();
    return true;
  }

  /// True on one of this pool's workers.
  [[nodiscard]] bool in_pool_thread() const {
    return current_pool() == this;
  }

 private:
  static const ThreadPool*& current_pool() {
    thread_local const ThreadPool* pool = nullptr;
    return pool;
  }

  void work() {
    current_pool() = this;
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      Task task = queue_.pop();
      lock.unlock();
      task();
      task.reset();  // destroy captures outside the lock too
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  detail::TaskQueue queue_;
  bool stopping_ = false;
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
