#pragma once
// How the processes of a distributed CPU client reach each other. A client made with a
// Transport (ClientOptions::transport) is one process of several: its devices() are every
// process's devices and its addressable_devices() its own, and an executable whose grid
// spans processes meets the other processes' participants at its collectives and send/recv
// through the transport. pjrt_lite/mpi.hpp implements it over MPI; a test may implement it
// over anything that moves bytes.
//
// The interface is small on purpose: an all-gather of bytes (every collective is one: each
// process receives every participant's operands and computes its own participants' results
// locally, as the in-process rendezvous does), and tagged point-to-point messages for send
// and recv. Every call takes a deadline and fails DEADLINE_EXCEEDED past it instead of
// hanging; after such a failure a transport may refuse everything (its messages are out of
// step), and says so.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1::cpu {

class Transport {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  virtual ~Transport() = default;

  /// This process's index among the transport's processes, and how many there are.
  [[nodiscard]] virtual int process_index() const = 0;
  [[nodiscard]] virtual int process_count() const = 0;

  /// A transport among `processes` (indices of this transport's processes, ascending, this
  /// one among them) whose messages never mix with this transport's or another split's: an
  /// executable's collectives run in their own order. Every listed process must make the
  /// same splits in the same order (the program's compiles); the others make none.
  [[nodiscard]] virtual StatusOr<std::unique_ptr<Transport>> split(std::span<const int> processes) = 0;

  /// Every process contributes `mine` (counts[process_index()] bytes); `all` receives process
  /// p's contribution at the sum of counts[0..p), counts[p] bytes long. INVALID_ARGUMENT when
  /// sizes disagree, DEADLINE_EXCEEDED when a process does not take part in time.
  virtual Status all_gather(std::span<const std::byte> mine, std::span<std::byte> all,
                            std::span<const std::int64_t> counts, Deadline deadline) = 0;

  /// Sends `data` to process `to` with `tag` (0 to max_tag()); returns once `data` may be
  /// reused. Messages of one tag from one process arrive in the order they were sent.
  virtual Status send(int to, int tag, std::span<const std::byte> data, Deadline deadline) = 0;
  /// Receives the next message with `tag` from process `from` into `data`, which it must
  /// fill exactly (INVALID_ARGUMENT otherwise).
  virtual Status recv(int from, int tag, std::span<std::byte> data, Deadline deadline) = 0;
  /// The largest tag send and recv take.
  [[nodiscard]] virtual int max_tag() const = 0;
};

}  // namespace pjrt_lite::cpu
