#pragma once
// Small value types shared by every runtime backend's API: how a host buffer may be used,
// device attributes, execution options and cache statistics.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace pjrt_lite::inline v0_1 {

/// What the runtime may do with the host memory given to buffer_from_host_buffer, and when
/// the caller gets it back (the `on_done` callback). PJRT's four host-buffer semantics.
enum class HostBufferSemantics {
  /// Copied before the call returns; on_done runs before it returns.
  kImmutableOnlyDuringCall,
  /// The caller keeps the data unchanged until on_done, which runs once the transfer is done.
  kImmutableUntilTransferCompletes,
  /// The buffer may alias the data, which the caller keeps unchanged until on_done; on_done
  /// runs when the buffer's memory is released. The runtime never writes to it.
  kImmutableZeroCopy,
  /// Like kImmutableZeroCopy, but the runtime may also write to the data (e.g. when the
  /// buffer is donated to an execution).
  kMutableZeroCopy,
};

constexpr std::string_view host_buffer_semantics_name(HostBufferSemantics s) {
  switch (s) {
    case HostBufferSemantics::kImmutableOnlyDuringCall: return "ImmutableOnlyDuringCall";
    case HostBufferSemantics::kImmutableUntilTransferCompletes: return "ImmutableUntilTransferCompletes";
    case HostBufferSemantics::kImmutableZeroCopy: return "ImmutableZeroCopy";
    case HostBufferSemantics::kMutableZeroCopy: return "MutableZeroCopy";
  }
  return "?";
}

/// A value in a device description's attribute map.
using DeviceAttribute = std::variant<std::int64_t, std::string, bool, std::vector<std::int64_t>>;
using DeviceAttributeMap = std::map<std::string, DeviceAttribute, std::less<>>;

/// Where an execution runs.
enum class ExecutionMode {
  /// The backend chooses: asynchronous when it has worker threads.
  kDefault,
  /// execute() returns after the outputs are computed, having run on the calling thread.
  kSynchronous,
  /// execute() returns at once; the outputs' ready futures say when they are computed.
  kAsynchronous,
};

/// Per-call options of LoadedExecutable::execute and its variants.
struct ExecuteOptions {
  /// The caller's number for this launch, as in PJRT; the CPU client does not read it.
  int launch_id = 0;
  ExecutionMode mode = ExecutionMode::kDefault;
  /// Indices of arguments the caller donates: each such buffer is deleted by the call and
  /// its memory may back an output.
  std::vector<int> donated_arguments;
};

/// The counters of a bounded cache (a client's compile cache, a jitted function's signature
/// cache). `hits` and `misses` count lookups; `evictions` counts entries dropped to stay
/// within `capacity` (least recently used first); `size` is how many entries it holds now.
/// hits, misses and evictions only grow; clear() empties the cache but keeps them.
struct CacheStats {
  std::int64_t hits = 0, misses = 0;
  std::int64_t evictions = 0;
  std::int64_t size = 0;
  std::int64_t capacity = 0;

  friend bool operator==(const CacheStats&, const CacheStats&) = default;
};

}  // namespace pjrt_lite
