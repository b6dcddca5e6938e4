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
//
// A grid may span processes (a distributed client, transport.hpp). Then the participants of
// this process meet as above, and at each collective the last of them to arrive exchanges
// every local participant's operands with the other processes in one all-gather: peer(j)
// of a participant in another process points into the copy received. A send to, or a recv
// from, another process's participant is a tagged message of the transport (the data's
// types hashed, then its bytes); a send or recv that names no peer (no source_target_pairs)
// stays within the process. The exchange buffers grow to the largest collective at its
// first run and are reused after.

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

#include "pjrt_lite/backends/cpu/transport.hpp"
#include "pjrt_lite/core/literal.hpp"
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

/// The participants of a grid that spans processes: the transport among the processes
/// that run them, and the process (the transport's index) that runs each participant.
/// Empty: every participant runs in this process.
struct RemoteParticipants {
  std::unique_ptr<Transport> transport;
  std::vector<int> process;  // per participant
};

/// The meeting point of the participants of one executable. Thread-safe.
class Rendezvous {
 public:
  /// `channels`: the (channel id, size of its largest message) of every channel the
  /// program's send and recv ops use, each id once.
  Rendezvous(int num_replicas, int num_partitions, std::chrono::milliseconds timeout,
             std::span<const std::pair<std::int64_t, std::int64_t>> channels = {}, RemoteParticipants remote = {})
      : num_replicas_(num_replicas), num_partitions_(num_partitions), timeout_(timeout),
        slots_(static_cast<std::size_t>(num_replicas * num_partitions)),
        contexts_(static_cast<std::size_t>(num_replicas * num_partitions)), transport_(std::move(remote.transport)),
        me_(transport_ ? transport_->process_index() : 0), process_(std::move(remote.process)) {
    if (!transport_) process_.assign(static_cast<std::size_t>(participants()), 0);
    members_.resize(transport_ ? static_cast<std::size_t>(transport_->process_count()) : 1);
    for (int k = 0; k < participants(); ++k) {
      members_[static_cast<std::size_t>(process_[static_cast<std::size_t>(k)])].push_back(k);
      if (process_[static_cast<std::size_t>(k)] == me_) local_.push_back(k);
    }
    remote_tables_.resize(slots_.size());
    gather_counts_.resize(members_.size());
    std::vector<std::pair<std::int64_t, std::int64_t>> sorted(channels.begin(), channels.end());
    std::sort(sorted.begin(), sorted.end());
    std::int64_t largest = 0;
    for (const auto& [id, bytes] : sorted) {
      channel_ids_.push_back(id);
      largest = std::max(largest, bytes);
      for (int box = 0; box <= participants(); ++box) {
        mailboxes_.emplace_back();
        // Only this process's participants receive here (and anyone, at the last box).
        if (box == participants() || is_local(box)) mailboxes_.back().data.resize(static_cast<std::size_t>(bytes));
      }
    }
    if (transport_ && !channel_ids_.empty())
      for (std::size_t i = 0; i < local_.size(); ++i)
        message_buffers_.emplace_back(static_cast<std::size_t>(kHeaderBytes + largest));
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
  /// The participants this process runs, ascending (all of them without a transport).
  [[nodiscard]] std::span<const int> local_participants() const { return local_; }
  [[nodiscard]] bool is_local(int k) const { return process_[static_cast<std::size_t>(k)] == me_; }
  /// Whether some participants run in other processes.
  [[nodiscard]] bool distributed() const { return transport_ != nullptr; }

  /// Participant k's context, for a run that begins (begin_run) and ends (end_run) around it.
  CollectiveContext* begin_run(int k) {
    std::lock_guard lock(mu_);
    if (active_ == 0 && !failure_.ok()) {
      // Nobody is inside a collective: the counters may start again.
      for (Slot& s : slots_) s = Slot{};
      for (Mailbox& m : mailboxes_) m.full = false;
      exchanged_ = 0;
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
  /// of addresses, `operand_bytes` long each, that stays valid until leave()) and waits for
  /// every participant. On success, peer(j) gives participant j's array. `kind` names the
  /// collective to the other processes, which check that they are at the same one.
  Status arrive(int k, std::int32_t site, const std::byte* const* operands,
                std::span<const std::int64_t> operand_bytes = {}, std::int32_t kind = 0) {
    std::unique_lock lock(mu_);
    if (!failure_.ok()) return failure_;
    Slot& mine = slots_[static_cast<std::size_t>(k)];
    const std::uint64_t seq = ++mine.arrived;
    mine.site = site;
    mine.operands = operands;
    cv_.notify_all();
    auto all_arrived = [&] {
      for (int j : local_)
        if (slots_[static_cast<std::size_t>(j)].arrived < seq) return false;
      return true;
    };
    PJRT_LITE_RETURN_IF_ERROR(wait(lock, all_arrived, k, "arrive at"));
    for (int j : local_)
      if (slots_[static_cast<std::size_t>(j)].site != site)
        return fail_locked(failed_precondition_error(str_cat(
            "participant ", k, " is at collective #", site, " but participant ", j, " at #",
            slots_[static_cast<std::size_t>(j)].site, ": the participants' control flow diverged")));
    if (!transport_ || exchanged_ >= seq) return ok_status();
    if (exchanging_) {
      // Another participant of this process exchanges for everyone. Its transport call
      // returns by its own deadline, with the error that says what went wrong: this wait
      // only guards against that promise being broken.
      const bool done = cv_.wait_until(lock, std::chrono::steady_clock::now() + 2 * timeout_ + std::chrono::seconds(1),
                                       [&] { return exchanged_ >= seq || !failure_.ok(); });
      if (!failure_.ok()) return failure_;
      if (!done)
        return fail_locked(deadline_exceeded_error(str_cat("collective: participant ", k, " waited ",
                                                           2 * timeout_.count() + 1000,
                                                           " ms for the exchange with the other processes")));
      return ok_status();
    }
    exchanging_ = true;
    Status s = exchange(lock, seq, operand_bytes, kind);
    exchanging_ = false;
    if (!s.ok()) return fail_locked(std::move(s));
    exchanged_ = seq;
    cv_.notify_all();
    return ok_status();
  }
  /// Participant j's operand addresses, between arrive() and leave().
  [[nodiscard]] const std::byte* const* peer(int j) const {
    const auto i = static_cast<std::size_t>(j);
    return is_local(j) ? slots_[i].operands : remote_tables_[i].data();
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
      for (int j : local_)
        if (slots_[static_cast<std::size_t>(j)].left < seq) return false;
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

  /// send by local participant k to participant `to` of another process: the data's types
  /// (`key`) and its bytes, as one message of the transport tagged with mailbox `box`.
  Status post_remote(int k, int to, int box, std::uint64_t key, std::span<const std::byte* const> parts,
                     std::span<const std::int64_t> sizes) {
    PJRT_LITE_RETURN_IF_ERROR(check_tag(box));
    std::span<std::byte> message = message_buffer(k, sizes);
    std::memcpy(message.data(), &key, sizeof key);
    std::int64_t at = kHeaderBytes;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (sizes[i] > 0) std::memcpy(message.data() + at, parts[i], static_cast<std::size_t>(sizes[i]));
      at += sizes[i];
    }
    Status s = transport_->send(process_[static_cast<std::size_t>(to)], box, message,
                                std::chrono::steady_clock::now() + timeout_);
    if (!s.ok()) fail(s);
    return s;
  }
  /// recv by local participant k from participant `from` of another process, through the
  /// message tagged with k's mailbox `box`; INVALID_ARGUMENT when its types are not `key`.
  Status take_remote(int k, int from, int box, std::uint64_t key, std::span<std::byte* const> parts,
                     std::span<const std::int64_t> sizes) {
    PJRT_LITE_RETURN_IF_ERROR(check_tag(box));
    std::span<std::byte> message = message_buffer(k, sizes);
    Status s = transport_->recv(process_[static_cast<std::size_t>(from)], box, message,
                                std::chrono::steady_clock::now() + timeout_);
    if (s.ok()) {
      std::uint64_t sent = 0;
      std::memcpy(&sent, message.data(), sizeof sent);
      if (sent != key)
        s = invalid_argument_error(str_cat("recv: participant ", k, " received data of other types than its recv's from participant ",
                                           from, " in another process"));
    }
    if (!s.ok()) {
      fail(s);
      return s;
    }
    std::int64_t at = kHeaderBytes;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (sizes[i] > 0) std::memcpy(parts[i], message.data() + at, static_cast<std::size_t>(sizes[i]));
      at += sizes[i];
    }
    return ok_status();
  }

  /// Records a failure that makes every waiter give up.
  void fail(const Status& s) {
    std::lock_guard lock(mu_);
    (void)fail_locked(s);
  }

  /// Runs fn(arg, i) for every participant of this process at once (i indexes
  /// local_participants()): 0 on the caller, the others on threads of the rendezvous
  /// (started at the first call, then reused). One team run at a time: concurrent callers
  /// wait their turn.
  void run_team(void (*fn)(void*, int), void* arg) {
    std::lock_guard run_lock(team_run_mu_);
    {
      std::lock_guard lock(team_mu_);
      if (team_.empty())
        for (int i = 1; i < static_cast<int>(local_.size()); ++i) team_.emplace_back([this, i] { team_loop(i); });
      team_fn_ = fn;
      team_arg_ = arg;
      team_pending_ = static_cast<int>(local_.size()) - 1;
      ++team_generation_;
    }
    team_cv_.notify_all();
    fn(arg, 0);
    std::unique_lock lock(team_mu_);
    team_done_cv_.wait(lock, [&] { return team_pending_ == 0; });
  }

 private:
  /// What leads an exchange's contribution, and a message (the data's key), in bytes.
  static constexpr std::int64_t kHeaderBytes = 64;

  /// A buffer that only grows; aligned for any element type.
  struct Staging {
    pjrt_lite::detail::AlignedBytes data;
    std::size_t size = 0;
    Staging() = default;
    explicit Staging(std::size_t n) { (void)reserve(n); }
    /// At least n bytes (null if they cannot be allocated).
    std::byte* reserve(std::size_t n) {
      if (n > size) {
        data = pjrt_lite::detail::allocate_aligned(n);
        size = data ? n : 0;
      }
      return data.get();
    }
  };

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

  static std::int64_t round_up(std::int64_t n) { return (n + kHeaderBytes - 1) / kHeaderBytes * kHeaderBytes; }

  /// The exchange of collective number `seq` with the other processes, by the participant
  /// that arrived last here, under `lock` (released during the transport's call): each
  /// process's contribution is a header (the collective's kind and size) and then each of
  /// its participants' operands, ascending, each padded to 64 bytes.
  Status exchange(std::unique_lock<std::mutex>& lock, std::uint64_t seq, std::span<const std::int64_t> operand_bytes,
                  std::int32_t kind) {
    std::int64_t per = 0;
    for (std::int64_t b : operand_bytes) per += round_up(b);
    std::int64_t total = 0;
    for (std::size_t p = 0; p < members_.size(); ++p) {
      gather_counts_[p] = kHeaderBytes + static_cast<std::int64_t>(members_[p].size()) * per;
      total += gather_counts_[p];
    }
    const auto me = static_cast<std::size_t>(me_);
    std::byte* out = send_buffer_.reserve(static_cast<std::size_t>(gather_counts_[me]));
    std::byte* in = receive_buffer_.reserve(static_cast<std::size_t>(total));
    if (out == nullptr || in == nullptr)
      return resource_exhausted_error(str_cat("collective: ", total, " bytes to exchange with the other processes"));
    const std::int64_t header[3] = {kind, per, static_cast<std::int64_t>(operand_bytes.size())};
    std::memset(out, 0, static_cast<std::size_t>(kHeaderBytes));
    std::memcpy(out, header, sizeof header);
    std::int64_t at = kHeaderBytes;
    for (int j : local_)
      for (std::size_t i = 0; i < operand_bytes.size(); ++i) {
        if (operand_bytes[i] > 0)
          std::memcpy(out + at, slots_[static_cast<std::size_t>(j)].operands[i], static_cast<std::size_t>(operand_bytes[i]));
        at += round_up(operand_bytes[i]);
      }
    lock.unlock();
    Status s = transport_->all_gather(std::span<const std::byte>(out, static_cast<std::size_t>(gather_counts_[me])),
                                      std::span<std::byte>(in, static_cast<std::size_t>(total)), gather_counts_,
                                      std::chrono::steady_clock::now() + timeout_);
    lock.lock();
    if (!s.ok()) return s.with_context(str_cat("collective #", seq, " of the run"));
    std::int64_t offset = 0;
    for (std::size_t p = 0; p < members_.size(); ++p) {
      std::int64_t theirs[3];
      std::memcpy(theirs, in + offset, sizeof theirs);
      if (theirs[0] != header[0] || theirs[1] != header[1] || theirs[2] != header[2])
        return failed_precondition_error(str_cat(
            "collective #", seq, " of the run: process ", p, " is at a collective of kind ", theirs[0], " with ", theirs[2],
            " operands of ", theirs[1], " bytes per participant, this process at kind ", header[0], " with ", header[2],
            " of ", header[1], ": the processes' control flow diverged"));
      at = offset + kHeaderBytes;
      for (int j : members_[p]) {
        std::vector<const std::byte*>& table = remote_tables_[static_cast<std::size_t>(j)];
        table.resize(operand_bytes.size());
        for (std::size_t i = 0; i < operand_bytes.size(); ++i) {
          table[i] = in + at;
          at += round_up(operand_bytes[i]);
        }
      }
      offset += gather_counts_[p];
    }
    return ok_status();
  }
  Status check_tag(int box) const {
    if (box < 0 || box > transport_->max_tag())
      return unimplemented_error(str_cat("send/recv: mailbox ", box, " is beyond the transport's largest tag ",
                                         transport_->max_tag(), " (too many channels x participants)"));
    return ok_status();
  }
  /// Local participant k's message buffer, `sizes` and the header long.
  std::span<std::byte> message_buffer(int k, std::span<const std::int64_t> sizes) {
    std::int64_t bytes = kHeaderBytes;
    for (std::int64_t b : sizes) bytes += b;
    const auto i = static_cast<std::size_t>(std::find(local_.begin(), local_.end(), k) - local_.begin());
    return {message_buffers_[i].data.get(), static_cast<std::size_t>(bytes)};
  }

  template <class Pred>
  Status wait(std::unique_lock<std::mutex>& lock, Pred done, int k, std::string_view what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    const bool ok = cv_.wait_until(lock, deadline, [&] { return done() || !failure_.ok(); });
    if (!failure_.ok() && !done()) return failure_;
    if (!ok) {
      int missing = 0;
      for (int j : local_)
        missing += slots_[static_cast<std::size_t>(j)].arrived < slots_[static_cast<std::size_t>(k)].arrived ? 1 : 0;
      return fail_locked(deadline_exceeded_error(str_cat(
          "collective: participant ", k, " waited ", timeout_.count(), " ms to ", what,
          " a collective; ", missing, " of ", local_.size(),
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
  // A grid across processes: the transport, each participant's process, each process's
  // participants (ascending), this process's; the last collective exchanged and whether an
  // exchange is under way; the exchange's buffers and, per local participant, a message's.
  std::unique_ptr<Transport> transport_;
  int me_;
  std::vector<int> process_;
  std::vector<std::vector<int>> members_;
  std::vector<int> local_;
  std::uint64_t exchanged_ = 0;
  bool exchanging_ = false;
  Staging send_buffer_, receive_buffer_;
  std::vector<std::int64_t> gather_counts_;
  std::vector<std::vector<const std::byte*>> remote_tables_;
  std::vector<Staging> message_buffers_;

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
