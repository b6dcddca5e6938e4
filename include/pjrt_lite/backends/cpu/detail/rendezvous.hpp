#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// Where the participants of one executable (one per device: replica x partition) meet at
// their collectives, and the threads that run them side by side.
//
// Every participant runs the same compiled program, so every participant reaches the same
// collectives in the same order: a collective is a barrier of all participants, in two
// phases. Arrive: a participant publishes the addresses of its operands and waits until
// every participant has arrived at this collective. It then computes its own results by
// reading the others' operands in place. Leave: it waits until every participant has done
// the same, so nobody's operands change while another still reads them. Each participant's
// counters only grow, so a fast participant's next collective never mistakes itself for the
// last one.
//
// send and recv meet in mailboxes instead: one per channel and receiving participant, and
// one per channel for a send that names no receiver (any participant's recv on the channel
// takes it). A mailbox holds one message: a send copies its data in and goes on, unless the
// mailbox still holds the previous message, which it then waits to be taken; a recv waits
// for a message and copies it out.
//
// Everything is preallocated when the executable is made: one slot per participant, the
// mailboxes at the size of their channel's largest message, a mutex and a condition
// variable. A collective, a send and a recv allocate nothing. A wait that outlasts the
// timeout fails the collective with DEADLINE_EXCEEDED and marks the rendezvous failed:
// every waiter gives up, and the counters start again from zero at the next run that begins
// when no participant is running.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class Rendezvous;

/// What a kernel knows of the participant it runs for. `status` collects the first error of
/// its collectives; once it is not OK, later collectives do nothing but write zeros and
/// loops stop turning, so the run ends and the error is reported.
struct CollectiveContext {
  Rendezvous* rendezvous = nullptr;
  int participant = 0;  // replica * num_partitions + partition
  int replica = 0;
  int partition = 0;
  Status status;
};

/// The meeting point of the participants of one executable. Thread-safe.
class Rendezvous {
 public:
  /// `channels`: the (channel id, size of its largest message) of every channel the
  /// program's send and recv ops use, each id once.
  Rendezvous(int num_replicas, int num_partitions, std::chrono::milliseconds timeout,
             std::span<const std::pair<std::int64_t, std::int64_t>> channels = {})
      : num_replicas_(num_replicas), num_partitions_(num_partitions), timeout_(timeout),
        slots_(static_cast<std::size_t>(num_replicas * num_partitions)),
        contexts_(static_cast<std::size_t>(num_replicas * num_partitions)) {
    std::vector<std::pair<std::int64_t, std::int64_t>> sorted(channels.begin(), channels.end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [id, bytes] : sorted) {
      channel_ids_.push_back(id);
      for (int box = 0; box <= participants(); ++box) {
        mailboxes_.emplace_back();
        mailboxes_.back().data.resize(static_cast<std::size_t>(bytes));
      }
    }
    for (int k = 0; k < participants(); ++k) {
      CollectiveContext& c = contexts_[static_cast<std::size_t>(k)];
      c.rendezvous = this;
      c.participant = k;
      c.replica = k / num_partitions;
      c.partition = k % num_partitions;
    }
  }
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;
  ~Rendezvous() { stop_team(); }

  [[nodiscard]] int participants() const { return num_replicas_ * num_partitions_; }
  [[nodiscard]] int num_replicas() const { return num_replicas_; }
  [[nodiscard]] int num_partitions() const { return num_partitions_; }

  /// Participant k's context, for a run that begins (begin_run) and ends (end_run) around it.
  CollectiveContext* begin_run(int k) {
    std::lock_guard lock(mu_);
    if (active_ == 0 && !failure_.ok()) {
      // Nobody is inside a collective: the counters may start again.
      for (Slot& s : slots_) s = Slot{};
      for (Mailbox& m : mailboxes_) m.full = false;
      failure_ = Status();
    }
    ++active_;
    CollectiveContext* c = &contexts_[static_cast<std::size_t>(k)];
    c->status = Status();
    return c;
  }
  void end_run() {
    std::lock_guard lock(mu_);
    --active_;
  }

  /// Phase one of the collective at `site` for participant k: publishes `operands` (an array
  /// of addresses that stays valid until leave()) and waits for every participant. On
  /// success, peer(j) gives participant j's array.
  Status arrive(int k, std::int32_t site, const std::byte* const* operands) {
    std::unique_lock lock(mu_);
    if (!failure_.ok()) return failure_;
    Slot& mine = slots_[static_cast<std::size_t>(k)];
    const std::uint64_t seq = ++mine.arrived;
    mine.site = site;
    mine.operands = operands;
    cv_.notify_all();
    auto all_arrived = [&] {
      for (const Slot& s : slots_)
        if (s.arrived < seq) return false;
      return true;
    };
    PJRT_LITE_RETURN_IF_ERROR(wait(lock, all_arrived, k, "arrive at"));
    for (std::size_t j = 0; j < slots_.size(); ++j)
      if (slots_[j].site != site)
        return fail_locked(failed_precondition_error(str_cat(
            "participant ", k, " is at collective #", site, " but participant ", j, " at #",
            slots_[j].site, ": the participants' control flow diverged")));
    return ok_status();
  }
  /// Participant j's operand addresses, between arrive() and leave().
  [[nodiscard]] const std::byte* const* peer(int j) const {
    return slots_[static_cast<std::size_t>(j)].operands;
  }
  /// Phase two: participant k is done reading; waits until every participant is.
  Status leave(int k) {
    std::unique_lock lock(mu_);
    Slot& mine = slots_[static_cast<std::size_t>(k)];
    const std::uint64_t seq = mine.arrived;
    mine.left = seq;
    cv_.notify_all();
    if (!failure_.ok()) return failure_;
    auto all_left = [&] {
      for (const Slot& s : slots_)
        if (s.left < seq) return false;
      return true;
    };
    return wait(lock, all_left, k, "leave");
  }
  /// The mailbox of channel `channel_id` for participant `to`, or for any (to =
  /// participants()); -1 for a channel the program does not use.
  [[nodiscard]] int mailbox(std::int64_t channel_id, int to) const {
    const auto it = std::lower_bound(channel_ids_.begin(), channel_ids_.end(), channel_id);
    if (it == channel_ids_.end() || *it != channel_id) return -1;
    return static_cast<int>(it - channel_ids_.begin()) * (participants() + 1) + to;
  }

  /// send by participant k: copies `parts` (of `sizes` bytes), tagged with `key` (what the
  /// data's types hash to), into mailbox `box`, once it is empty.
  Status post(int k, int box, std::uint64_t key, std::span<const std::byte* const> parts,
              std::span<const std::int64_t> sizes) {
    std::unique_lock lock(mu_);
    PJRT_LITE_ASSIGN_OR_RETURN(Mailbox * m, open_mailbox(lock, box, false, [&] {
      return str_cat("send: participant ", k, " waited ", timeout_.count(),
                     " ms for its channel's previous message to be received");
    }));
    std::int64_t at = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (sizes[i] > 0) std::memcpy(m->data.data() + at, parts[i], static_cast<std::size_t>(sizes[i]));
      at += sizes[i];
    }
    m->key = key;
    m->full = true;
    cv_.notify_all();
    return ok_status();
  }
  /// recv by participant k: waits for a message in mailbox `box` and copies it into `parts`;
  /// INVALID_ARGUMENT when its types (`key`) are not the receiver's.
  Status take(int k, int box, std::uint64_t key, std::span<std::byte* const> parts,
              std::span<const std::int64_t> sizes) {
    std::unique_lock lock(mu_);
    PJRT_LITE_ASSIGN_OR_RETURN(Mailbox * m, open_mailbox(lock, box, true, [&] {
      return str_cat("recv: participant ", k, " waited ", timeout_.count(),
                     " ms, but nothing was sent to it on its channel");
    }));
    if (m->key != key)
      return fail_locked(invalid_argument_error(
          str_cat("recv: participant ", k, " received data of other types than its recv's")));
    std::int64_t at = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (sizes[i] > 0) std::memcpy(parts[i], m->data.data() + at, static_cast<std::size_t>(sizes[i]));
      at += sizes[i];
    }
    m->full = false;
    cv_.notify_all();
    return ok_status();
  }

  /// Records a failure that makes every waiter give up.
  void fail(const Status& s) {
    std::lock_guard lock(mu_);
    (void)fail_locked(s);
  }

  /// Runs fn(arg, k) for every participant k at once: 0 on the caller, the others on threads
  /// of the rendezvous (started at the first call, then reused). One team run at a time:
  /// concurrent callers wait their turn.
  void run_team(void (*fn)(void*, int), void* arg) {
    std::lock_guard run_lock(team_run_mu_);
    {
      std::lock_guard lock(team_mu_);
      if (team_.empty())
        for (int k = 1; k < participants(); ++k) team_.emplace_back([this, k] { team_loop(k); });
      team_fn_ = fn;
      team_arg_ = arg;
      team_pending_ = participants() - 1;
      ++team_generation_;
    }
    team_cv_.notify_all();
    fn(arg, 0);
    std::unique_lock lock(team_mu_);
    team_done_cv_.wait(lock, [&] { return team_pending_ == 0; });
  }

 private:
  struct Mailbox {
    bool full = false;
    std::uint64_t key = 0;
    std::vector<std::byte> data;
  };
  struct Slot {
    std::uint64_t arrived = 0;  // collectives arrived at, counted since the last reset
    std::uint64_t left = 0;     // collectives left
    std::int32_t site = -1;
    const std::byte* const* operands = nullptr;
  };

  template <class Pred>
  Status wait(std::unique_lock<std::mutex>& lock, Pred done, int k, std::string_view what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    const bool ok = cv_.wait_until(lock, deadline, [&] { return done() || !failure_.ok(); });
    if (!failure_.ok() && !done()) return failure_;
    if (!ok) {
      int missing = 0;
      for (const Slot& s : slots_) missing += s.arrived < slots_[static_cast<std::size_t>(k)].arrived ? 1 : 0;
      return fail_locked(deadline_exceeded_error(str_cat(
          "collective: participant ", k, " waited ", timeout_.count(), " ms to ", what,
          " a collective; ", missing, " of ", participants(),
          " participants never arrived")));
    }
    return ok_status();
  }
  /// Mailbox `box` once it is full (or empty), under `lock`; the rendezvous's failure, or
  /// DEADLINE_EXCEEDED with `timeout_message()` after the timeout. Allocates nothing unless
  /// it fails.
  template <class Message>
  StatusOr<Mailbox*> open_mailbox(std::unique_lock<std::mutex>& lock, int box, bool full, Message timeout_message) {
    if (box < 0 || static_cast<std::size_t>(box) >= mailboxes_.size())
      return internal_error(str_cat("rendezvous: there is no mailbox ", box));
    Mailbox& m = mailboxes_[static_cast<std::size_t>(box)];
    const bool ok = cv_.wait_until(lock, std::chrono::steady_clock::now() + timeout_,
                                   [&] { return m.full == full || !failure_.ok(); });
    if (!failure_.ok()) return failure_;
    if (!ok) return fail_locked(deadline_exceeded_error(timeout_message()));
    return &m;
  }
  Status fail_locked(Status s) {
    if (failure_.ok()) failure_ = s;
    cv_.notify_all();
    return s;
  }

  void team_loop(int k) {
    std::uint64_t seen = 0;
    while (true) {
      void (*fn)(void*, int) = nullptr;
      void* arg = nullptr;
      {
        std::unique_lock lock(team_mu_);
        team_cv_.wait(lock, [&] { return stop_ || team_generation_ != seen; });
        if (stop_) return;
        seen = team_generation_;
        fn = team_fn_;
        arg = team_arg_;
      }
      fn(arg, k);
      std::lock_guard lock(team_mu_);
      if (--team_pending_ == 0) team_done_cv_.notify_all();
    }
  }
  void stop_team() {
    {
      std::lock_guard lock(team_mu_);
      stop_ = true;
    }
    team_cv_.notify_all();
    for (std::thread& t : team_) t.join();
  }

  const int num_replicas_, num_partitions_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::vector<CollectiveContext> contexts_;
  std::vector<std::int64_t> channel_ids_;  // sorted
  std::vector<Mailbox> mailboxes_;
  int active_ = 0;
  Status failure_;

  std::mutex team_run_mu_;  // one team run at a time
  std::mutex team_mu_;
  std::condition_variable team_cv_, team_done_cv_;
  std::vector<std::thread> team_;
  void (*team_fn_)(void*, int) = nullptr;
  void* team_arg_ = nullptr;
  int team_pending_ = 0;
  std::uint64_t team_generation_ = 0;
  bool stop_ = false;
};

}  // namespace pjrt_lite::cpu::detail
