#pragma once
// The executors a CPU client runs transfers and (later) kernels on: a fixed pool of worker
// threads that sleep when idle, and an inline executor that runs everything on the caller.

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/unique_function.hpp"

namespace pjrt_lite::cpu {

using Task = UniqueFunction<void()>;

/// A fixed set of worker threads over one FIFO queue. Idle workers block on a condition
/// variable, so an idle pool burns no CPU. The destructor runs every task already scheduled
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
      queue_.push_back(std::move(task));
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
      task = std::move(queue_.front());
      queue_.pop_front();
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
      Task task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      task.reset();  // destroy captures outside the lock too
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
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
