#pragma once
// Processes over MPI: a cpu::Transport whose processes are the ranks of an MPI communicator,
// and the distributed CPU client made from it. Header-only like the rest of pjrt_lite; a
// translation unit that includes it links MPI (CMake: pjrt_lite::mpi, defined when MPI is
// found).
//
//   int main(int argc, char** argv) {
//     auto env = pjrt_lite::mpi::Environment::init(&argc, &argv).value();  // outlives the client
//     auto client = pjrt_lite::mpi::create_client({.device_count = 2}).value();
//     // client->devices(): every rank's devices; addressable_devices(): this rank's two.
//     // compile a grid over all of them and execute it in every rank: collectives and
//     // send/recv between ranks go over MPI.
//   }
//
// Every rank that hosts participants of a grid compiles that program, in the same order as
// the others (each such compile makes the executable's own communicator, a collective call
// among those ranks), and calls execute for it. Every MPI call is non-blocking and polled
// until its deadline (CompileOptions::collective_timeout_ms), so a rank that never comes
// fails the others' execute with DEADLINE_EXCEEDED instead of hanging; the executable's
// communicator is unusable after that (its collectives are out of step), and says so.
// Every collective is an MPI all-gather of the operands of every rank's participants: each
// rank computes its own participants' results from the copies, with the same kernels as a
// grid within one process (simple and exact, at the cost of moving every operand to every
// rank).

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/client.hpp"
#include "pjrt_lite/backends/cpu/transport.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1::mpi {

namespace detail {

/// MPI's text for error code `rc`.
inline std::string error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return str_cat("MPI error ", rc);
  return std::string(text, static_cast<std::size_t>(length));
}

/// Serializes this library's MPI calls (all of them short and non-blocking), which MPI
/// initialized at MPI_THREAD_SERIALIZED needs and MPI_THREAD_MULTIPLE allows.
inline std::mutex& call_mutex() {
  static std::mutex mu;
  return mu;
}

inline bool finalized() {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}

}  // namespace detail

/// MPI initialized (at MPI_THREAD_MULTIPLE) for as long as the object lives, unless it
/// already was: then it leaves MPI to its owner. Make it first in main() so that it is
/// destroyed after every client and executable (MPI_Finalize ends every communicator).
class Environment {
 public:
  /// Initializes MPI if it is not yet; FAILED_PRECONDITION when MPI runs at a thread level
  /// below MPI_THREAD_SERIALIZED (the runtime calls MPI from its participants' threads).
  static StatusOr<Environment> init(int* argc = nullptr, char*** argv = nullptr) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    Environment env;
    if (initialized == 0) {
      int provided = MPI_THREAD_SINGLE;
      if (const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided); rc != MPI_SUCCESS)
        return internal_error(str_cat("MPI_Init_thread: ", detail::error_text(rc)));
      env.owned_ = true;
    }
    MPI_Query_thread(&env.thread_level_);
    if (env.thread_level_ < MPI_THREAD_SERIALIZED)
      return failed_precondition_error(str_cat("MPI runs at thread level ", env.thread_level_,
                                               "; pjrt_lite needs MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE"));
    return env;
  }
  Environment(Environment&& other) noexcept
      : owned_(std::exchange(other.owned_, false)), thread_level_(other.thread_level_) {}
  Environment& operator=(Environment&&) = delete;
  Environment(const Environment&) = delete;
  ~Environment() {
    if (owned_ && !detail::finalized()) MPI_Finalize();
  }

  /// MPI's thread level (MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE).
  [[nodiscard]] int thread_level() const { return thread_level_; }

 private:
  Environment() = default;
  bool owned_ = false;
  int thread_level_ = MPI_THREAD_SINGLE;
};

/// The processes of an MPI communicator (its own duplicate of it), as a cpu::Transport.
/// Thread-safe: several executables' participants call it at once.
class Transport final : public cpu::Transport {
 public:
  /// A transport over a duplicate of `comm` (a collective call over it). MPI must be
  /// initialized (Environment).
  static StatusOr<std::unique_ptr<Transport>> create(MPI_Comm comm = MPI_COMM_WORLD) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0 || detail::finalized())
      return failed_precondition_error("mpi::Transport: MPI is not initialized (make an mpi::Environment first)");
    MPI_Comm dup = MPI_COMM_NULL;
    std::lock_guard lock(detail::call_mutex());
    if (const int rc = MPI_Comm_dup(comm, &dup); rc != MPI_SUCCESS)
      return internal_error(str_cat("MPI_Comm_dup: ", detail::error_text(rc)));
    return std::unique_ptr<Transport>(new Transport(dup));
  }
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  ~Transport() override {
    if (comm_ != MPI_COMM_NULL && !detail::finalized()) {
      std::lock_guard lock(detail::call_mutex());
      MPI_Comm_free(&comm_);
    }
  }

  [[nodiscard]] int process_index() const override { return rank_; }
  [[nodiscard]] int process_count() const override { return size_; }
  [[nodiscard]] int max_tag() const override { return max_tag_; }
  /// The communicator (the transport's own duplicate).
  [[nodiscard]] MPI_Comm communicator() const { return comm_; }

  StatusOr<std::unique_ptr<cpu::Transport>> split(std::span<const int> processes) override {
    PJRT_LITE_RETURN_IF_ERROR(usable("split"));
    for (std::size_t i = 0; i < processes.size(); ++i)
      if (processes[i] < 0 || processes[i] >= size_ || (i > 0 && processes[i] <= processes[i - 1]))
        return invalid_argument_error(str_cat("mpi::Transport::split: process list entry ", i, " (", processes[i],
                                              ") is outside 0..", size_ - 1, " or out of order"));
    bool member = false;
    for (int p : processes) member |= p == rank_;
    if (!member)
      return invalid_argument_error(str_cat("mpi::Transport::split: process ", rank_, " is not in the list"));
    std::lock_guard lock(detail::call_mutex());
    MPI_Group all = MPI_GROUP_NULL, some = MPI_GROUP_NULL;
    MPI_Comm out = MPI_COMM_NULL;
    int rc = MPI_Comm_group(comm_, &all);
    if (rc == MPI_SUCCESS)
      rc = MPI_Group_incl(all, static_cast<int>(processes.size()), processes.data(), &some);
    // Blocking, among the listed processes only: they compile the same programs in order.
    if (rc == MPI_SUCCESS) rc = MPI_Comm_create_group(comm_, some, kSplitTag, &out);
    if (some != MPI_GROUP_NULL) MPI_Group_free(&some);
    if (all != MPI_GROUP_NULL) MPI_Group_free(&all);
    if (rc != MPI_SUCCESS) return internal_error(str_cat("MPI_Comm_create_group: ", detail::error_text(rc)));
    return std::unique_ptr<cpu::Transport>(new Transport(out));
  }

  Status all_gather(std::span<const std::byte> mine, std::span<std::byte> all, std::span<const std::int64_t> counts,
                    Deadline deadline) override {
    PJRT_LITE_RETURN_IF_ERROR(usable("all_gather"));
    if (counts.size() != static_cast<std::size_t>(size_))
      return invalid_argument_error(str_cat("mpi all_gather: ", counts.size(), " counts for ", size_, " processes"));
    // MPI counts are ints: the buffers are sized once and reused.
    counts_.resize(counts.size());
    displacements_.resize(counts.size());
    std::int64_t at = 0;
    for (std::size_t p = 0; p < counts.size(); ++p) {
      if (at + counts[p] > std::numeric_limits<int>::max())
        return unimplemented_error(str_cat("mpi all_gather: ", at + counts[p],
                                           " bytes in one exchange; MPI counts stop at 2^31 - 1"));
      counts_[p] = static_cast<int>(counts[p]);
      displacements_[p] = static_cast<int>(at);
      at += counts[p];
    }
    if (static_cast<std::int64_t>(mine.size()) != counts[static_cast<std::size_t>(rank_)] ||
        static_cast<std::int64_t>(all.size()) < at)
      return invalid_argument_error("mpi all_gather: the buffers do not match the counts");
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(detail::call_mutex());
      const int rc = MPI_Iallgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(), counts_.data(),
                                     displacements_.data(), MPI_BYTE, comm_, &request);
      if (rc != MPI_SUCCESS) return internal_error(str_cat("MPI_Iallgatherv: ", detail::error_text(rc)));
    }
    return complete(request, deadline, "all_gather", nullptr);
  }

  Status send(int to, int tag, std::span<const std::byte> data, Deadline deadline) override {
    PJRT_LITE_RETURN_IF_ERROR(usable("send"));
    PJRT_LITE_RETURN_IF_ERROR(check_peer("send", to, tag, data.size()));
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(detail::call_mutex());
      const int rc = MPI_Isend(data.data(), static_cast<int>(data.size()), MPI_BYTE, to, tag, comm_, &request);
      if (rc != MPI_SUCCESS) return internal_error(str_cat("MPI_Isend: ", detail::error_text(rc)));
    }
    return complete(request, deadline, "send", nullptr);
  }

  Status recv(int from, int tag, std::span<std::byte> data, Deadline deadline) override {
    PJRT_LITE_RETURN_IF_ERROR(usable("recv"));
    PJRT_LITE_RETURN_IF_ERROR(check_peer("recv", from, tag, data.size()));
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(detail::call_mutex());
      const int rc = MPI_Irecv(data.data(), static_cast<int>(data.size()), MPI_BYTE, from, tag, comm_, &request);
      if (rc != MPI_SUCCESS) return internal_error(str_cat("MPI_Irecv: ", detail::error_text(rc)));
    }
    MPI_Status status;
    PJRT_LITE_RETURN_IF_ERROR(complete(request, deadline, "recv", &status));
    int received = 0;
    {
      std::lock_guard lock(detail::call_mutex());
      MPI_Get_count(&status, MPI_BYTE, &received);
    }
    if (received != static_cast<int>(data.size()))
      return invalid_argument_error(str_cat("mpi recv: process ", from, " sent ", received, " bytes with tag ", tag,
                                            ", the receiver expected ", data.size()));
    return ok_status();
  }

 private:
  static constexpr int kSplitTag = 0x706a;

  explicit Transport(MPI_Comm comm) : comm_(comm) {
    // Errors come back as codes (and become a Status) instead of aborting every rank.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found);
    if (found != 0 && value != nullptr) max_tag_ = *static_cast<int*>(value);
  }

  Status usable(std::string_view what) const {
    if (broken_.load(std::memory_order_acquire)) {
      std::lock_guard lock(broken_mu_);
      return broken_status_.with_context(str_cat("mpi ", what, ": the communicator is out of step after"));
    }
    return ok_status();
  }
  Status check_peer(std::string_view what, int peer, int tag, std::size_t bytes) const {
    if (peer < 0 || peer >= size_)
      return invalid_argument_error(str_cat("mpi ", what, ": process ", peer, " is outside 0..", size_ - 1));
    if (tag < 0 || tag > max_tag_)
      return invalid_argument_error(str_cat("mpi ", what, ": tag ", tag, " is outside 0..", max_tag_));
    if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      return unimplemented_error(str_cat("mpi ", what, ": a message of ", bytes, " bytes; MPI counts stop at 2^31 - 1"));
    return ok_status();
  }

  /// Polls `request` until it completes or the deadline passes: the first spins yield the
  /// core, the later ones sleep for a few microseconds. OpenMPI progresses inside MPI_Test.
  Status complete(MPI_Request& request, Deadline deadline, std::string_view what, MPI_Status* status) {
    for (int spin = 0;; ++spin) {
      int done = 0;
      int rc = MPI_SUCCESS;
      {
        std::lock_guard lock(detail::call_mutex());
        rc = MPI_Test(&request, &done, status != nullptr ? status : MPI_STATUS_IGNORE);
      }
      if (rc != MPI_SUCCESS) {
        if (status != nullptr && status->MPI_ERROR == MPI_ERR_TRUNCATE)
          return invalid_argument_error(str_cat("mpi ", what, ": the message is longer than the receiver expected"));
        return internal_error(str_cat("mpi ", what, ": ", detail::error_text(rc)));
      }
      if (done != 0) return ok_status();
      if (std::chrono::steady_clock::now() >= deadline) {
        // The request stays posted: this communicator's messages are out of step for good.
        Status s = deadline_exceeded_error(str_cat("mpi ", what, ": a process did not take part before the deadline"));
        std::lock_guard lock(broken_mu_);
        if (!broken_.load(std::memory_order_relaxed)) {
          broken_status_ = s;
          broken_.store(true, std::memory_order_release);
        }
        return s;
      }
      if (spin < 256)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, max_tag_ = 32767;
  std::vector<int> counts_, displacements_;  // all_gather's, reused
  std::atomic<bool> broken_{false};
  mutable std::mutex broken_mu_;
  Status broken_status_;
};

/// The distributed CPU client of the ranks of `comm`: each rank's `options.device_count`
/// devices (the same number in every rank, checked), device ids rank-major, process_index
/// the rank. A collective call over `comm`; MPI must be initialized (Environment).
template <class E = cpu::ThreadPool>
StatusOr<std::unique_ptr<cpu::Client<E>>> create_client(cpu::ClientOptions options = {}, MPI_Comm comm = MPI_COMM_WORLD) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, Transport::create(comm));
  std::vector<int> counts(static_cast<std::size_t>(transport->process_count()));
  {
    std::lock_guard lock(detail::call_mutex());
    if (const int rc = MPI_Allgather(&options.device_count, 1, MPI_INT, counts.data(), 1, MPI_INT, transport->communicator());
        rc != MPI_SUCCESS)
      return internal_error(str_cat("mpi::create_client: MPI_Allgather: ", detail::error_text(rc)));
  }
  for (std::size_t p = 0; p < counts.size(); ++p)
    if (counts[p] != options.device_count)
      return invalid_argument_error(str_cat("mpi::create_client: process ", p, " asks for ", counts[p],
                                            " devices and process ", transport->process_index(), " for ",
                                            options.device_count, "; every process must have as many"));
  options.transport = std::move(transport);
  return cpu::Client<E>::create(options);
}

}  // namespace pjrt_lite::mpi
