#pragma once
// CPU devices and their memory spaces. Both are owned by their Client and live as long as it;
// they are immutable after the client is created, so every method is thread-safe.

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/feeds.hpp"
#include "pjrt_lite/backends/cpu/forward.hpp"
#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1::cpu {

/// The kinds of memory each CPU device has, in the order of their kind ids. On a CPU all
/// three are host memory; they exist so that programs written for accelerators, which place
/// data by kind, run unchanged.
inline constexpr std::string_view kMemoryKinds[] = {"device", "pinned_host", "unpinned_host"};

template <class E>
class MemorySpace {
 public:
  using memory_space_concept = memory_space_tag;
  using device_type = Device<E>;

  MemorySpace(Client<E>* client, int id, int kind_id, Device<E>* device)
      : client_(client), id_(id), kind_id_(kind_id), devices_{device} {}
  MemorySpace(const MemorySpace&) = delete;
  MemorySpace& operator=(const MemorySpace&) = delete;

  /// Unique among the client's memory spaces.
  [[nodiscard]] int id() const { return id_; }
  /// "device", "pinned_host" or "unpinned_host".
  [[nodiscard]] std::string_view kind() const { return kMemoryKinds[kind_id_]; }
  [[nodiscard]] int kind_id() const { return kind_id_; }
  [[nodiscard]] std::span<Device<E>* const> devices() const { return devices_; }
  [[nodiscard]] Client<E>* client() const { return client_; }
  /// "cpu:0/device".
  [[nodiscard]] std::string debug_string() const {
    return str_cat(devices_[0]->debug_string(), "/", kind());
  }
  /// "MemorySpace(id=0, kind=device, device=0)".
  [[nodiscard]] std::string to_string() const {
    return str_cat("MemorySpace(id=", id_, ", kind=", kind(), ", device=", devices_[0]->id(), ")");
  }

 private:
  Client<E>* client_;
  int id_;
  int kind_id_;
  std::vector<Device<E>*> devices_;
};

template <class E>
class Device {
 public:
  using device_concept = device_tag;
  using memory_space_type = MemorySpace<E>;

  Device(Client<E>* client, int id, int process_index, DeviceAttributeMap attributes, int local_hardware_id = -1,
         bool addressable = true)
      : client_(client), id_(id), process_index_(process_index),
        local_hardware_id_(local_hardware_id < 0 ? id : local_hardware_id), addressable_(addressable),
        attributes_(std::move(attributes)) {}
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  /// Unique across the client (across its processes, for a distributed client).
  [[nodiscard]] int id() const { return id_; }
  /// The process whose device it is.
  [[nodiscard]] int process_index() const { return process_index_; }
  /// The index among the devices of its process.
  [[nodiscard]] int local_hardware_id() const { return local_hardware_id_; }
  [[nodiscard]] std::string_view device_kind() const { return "cpu"; }
  /// Whether this process can place buffers on it and run on it: false for another
  /// process's device of a distributed client, which has no memory spaces here.
  [[nodiscard]] bool is_addressable() const { return addressable_; }
  /// Named facts about the device: core and thread counts, the SIMD sets in use, coords.
  [[nodiscard]] const DeviceAttributeMap& attributes() const { return attributes_; }
  /// "cpu:0".
  [[nodiscard]] std::string debug_string() const { return str_cat("cpu:", id_); }
  /// "CpuDevice(id=0)".
  [[nodiscard]] std::string to_string() const { return str_cat("CpuDevice(id=", id_, ")"); }
  [[nodiscard]] Client<E>* client() const { return client_; }

  /// This device's memory spaces, indexed by kind id.
  [[nodiscard]] std::span<MemorySpace<E>* const> memory_spaces() const { return memory_spaces_; }
  /// Where buffers go when no memory space is named: the "device" kind. FAILED_PRECONDITION
  /// for another process's device.
  [[nodiscard]] StatusOr<MemorySpace<E>*> default_memory_space() const {
    if (memory_spaces_.empty())
      return failed_precondition_error(str_cat("device ", debug_string(), " belongs to process ", process_index_,
                                               " and is not addressable from this one"));
    return memory_spaces_.front();
  }
  /// Queues `values` for the next infeed op a program runs on this device (PJRT's
  /// TransferToInfeed): one entry, taken whole by one infeed whose result types are the
  /// values' (else that execution fails INVALID_ARGUMENT). Thread-safe.
  Status transfer_to_infeed(std::vector<Literal> values) {
    if (!addressable_) return default_memory_space().status().with_context("transfer_to_infeed");
    for (std::size_t i = 0; i < values.size(); ++i)
      if (is_token(values[i].dtype()))
        return invalid_argument_error(str_cat("transfer_to_infeed: value ", i, " is a token"));
    feeds_.push_infeed(std::move(values));
    return ok_status();
  }
  Status transfer_to_infeed(const Literal& value) { return transfer_to_infeed(std::vector<Literal>{value}); }
  /// The oldest entry an outfeed op of a program on this device produced (PJRT's
  /// TransferFromOutfeed), waiting up to `timeout` for one: DEADLINE_EXCEEDED if none comes.
  /// Thread-safe.
  StatusOr<std::vector<Literal>> transfer_from_outfeed(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    if (!addressable_) return default_memory_space().status().with_context("transfer_from_outfeed");
    return feeds_.pop_outfeed(timeout, debug_string());
  }
  /// The queues the device's executions read and write (detail).
  [[nodiscard]] detail::FeedQueues& feed_queues() { return feeds_; }

  /// The memory space of `kind` ("device", "pinned_host", "unpinned_host"), or NOT_FOUND.
  [[nodiscard]] StatusOr<MemorySpace<E>*> memory_space_by_kind(std::string_view kind) const {
    if (memory_spaces_.empty()) return default_memory_space().status();
    for (MemorySpace<E>* m : memory_spaces_)
      if (m->kind() == kind) return m;
    return not_found_error(str_cat("device ", debug_string(), " has no memory space of kind '",
                                   kind, "' (it has device, pinned_host, unpinned_host)"));
  }

 private:
  friend class Client<E>;

  Client<E>* client_;
  int id_;
  int process_index_;
  int local_hardware_id_;
  bool addressable_;
  DeviceAttributeMap attributes_;
  std::vector<MemorySpace<E>*> memory_spaces_;
  detail::FeedQueues feeds_;
};

}  // namespace pjrt_lite::cpu
