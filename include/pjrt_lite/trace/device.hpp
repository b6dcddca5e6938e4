#pragma once
// Traced devices and memory spaces: each wraps one of the inner client's, forwards every
// call and reports it. Owned by their Traced client and immutable after it is built.

#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/trace/forward.hpp"

namespace pjrt_lite::inline v0_1::trace {

/// A memory space of a Traced client. Satisfies PjRtMemorySpace. Thread-safe as far as the
/// sink is.
template <PjRtClient C, Sink S>
class TracedMemorySpace {
 public:
  using memory_space_concept = memory_space_tag;
  using inner_type = typename C::memory_space_type;
  using device_type = TracedDevice<C, S>;

  TracedMemorySpace(Traced<C, S>* client, inner_type* inner) : client_(client), inner_(inner) {}
  TracedMemorySpace(const TracedMemorySpace&) = delete;
  TracedMemorySpace& operator=(const TracedMemorySpace&) = delete;

  [[nodiscard]] int id() const {
    return tracer().call("memory_space", inner_, "id", {}, [&] { return inner_->id(); });
  }
  [[nodiscard]] std::string_view kind() const {
    return tracer().call("memory_space", inner_, "kind", {},
                         [&]() -> std::string_view { return inner_->kind(); });
  }
  [[nodiscard]] int kind_id() const {
    return tracer().call("memory_space", inner_, "kind_id", {}, [&] { return inner_->kind_id(); });
  }
  [[nodiscard]] std::span<TracedDevice<C, S>* const> devices() const {
    return tracer().call("memory_space", inner_, "devices", {},
                         [&] { return std::span<TracedDevice<C, S>* const>(devices_); });
  }
  [[nodiscard]] std::string debug_string() const {
    return tracer().call("memory_space", inner_, "debug_string", {},
                         [&] { return std::string(inner_->debug_string()); });
  }
  [[nodiscard]] std::string to_string() const {
    return tracer().call("memory_space", inner_, "to_string", {},
                         [&] { return std::string(inner_->to_string()); });
  }
  /// The Traced client this memory space belongs to (not reported).
  [[nodiscard]] Traced<C, S>* client() const { return client_; }
  /// The wrapped memory space (not reported).
  [[nodiscard]] inner_type* inner() const { return inner_; }
  /// For trace records: the inner memory space's debug string.
  [[nodiscard]] std::string trace_describe() const { return std::string(inner_->debug_string()); }

 private:
  friend class Traced<C, S>;
  Tracer<S>& tracer() const { return client_->tracer(); }

  Traced<C, S>* client_;
  inner_type* inner_;
  std::vector<TracedDevice<C, S>*> devices_;  // filled by the client
};

/// A device of a Traced client. Satisfies PjRtDevice. Thread-safe as far as the sink is.
template <PjRtClient C, Sink S>
class TracedDevice {
 public:
  using device_concept = device_tag;
  using inner_type = typename C::device_type;
  using memory_space_type = TracedMemorySpace<C, S>;

  TracedDevice(Traced<C, S>* client, inner_type* inner) : client_(client), inner_(inner) {}
  TracedDevice(const TracedDevice&) = delete;
  TracedDevice& operator=(const TracedDevice&) = delete;

  [[nodiscard]] int id() const {
    return tracer().call("device", inner_, "id", {}, [&] { return inner_->id(); });
  }
  [[nodiscard]] int process_index() const {
    return tracer().call("device", inner_, "process_index", {},
                         [&] { return inner_->process_index(); });
  }
  [[nodiscard]] int local_hardware_id() const {
    return tracer().call("device", inner_, "local_hardware_id", {},
                         [&] { return inner_->local_hardware_id(); });
  }
  [[nodiscard]] std::string_view device_kind() const {
    return tracer().call("device", inner_, "device_kind", {},
                         [&]() -> std::string_view { return inner_->device_kind(); });
  }
  [[nodiscard]] bool is_addressable() const {
    return tracer().call("device", inner_, "is_addressable", {},
                         [&] { return inner_->is_addressable(); });
  }
  [[nodiscard]] const DeviceAttributeMap& attributes() const {
    return tracer().call("device", inner_, "attributes", {},
                         [&]() -> const DeviceAttributeMap& { return inner_->attributes(); });
  }
  [[nodiscard]] std::string debug_string() const {
    return tracer().call("device", inner_, "debug_string", {},
                         [&] { return std::string(inner_->debug_string()); });
  }
  [[nodiscard]] std::string to_string() const {
    return tracer().call("device", inner_, "to_string", {},
                         [&] { return std::string(inner_->to_string()); });
  }
  [[nodiscard]] std::span<TracedMemorySpace<C, S>* const> memory_spaces() const {
    return tracer().call("device", inner_, "memory_spaces", {},
                         [&] { return std::span<TracedMemorySpace<C, S>* const>(memory_spaces_); });
  }
  /// The wrapper of the inner device's default memory space, or its error unchanged.
  [[nodiscard]] StatusOr<TracedMemorySpace<C, S>*> default_memory_space() const {
    return tracer().call("device", inner_, "default_memory_space", {},
                         [&] { return wrap_memory_space(inner_->default_memory_space()); });
  }
  /// As the inner device's memory_space_by_kind, where it has one.
  [[nodiscard]] StatusOr<TracedMemorySpace<C, S>*> memory_space_by_kind(
      std::string_view kind) const requires requires(const inner_type& d) {
    d.memory_space_by_kind(kind);
  }
  {
    return tracer().call("device", inner_, "memory_space_by_kind", std::string(kind),
                         [&] { return wrap_memory_space(inner_->memory_space_by_kind(kind)); });
  }
  /// The Traced client this device belongs to (not reported).
  [[nodiscard]] Traced<C, S>* client() const { return client_; }
  /// The wrapped device (not reported).
  [[nodiscard]] inner_type* inner() const { return inner_; }
  /// For trace records: the inner device's debug string.
  [[nodiscard]] std::string trace_describe() const { return std::string(inner_->debug_string()); }

 private:
  friend class Traced<C, S>;
  Tracer<S>& tracer() const { return client_->tracer(); }

  // The inner result may be a pointer or a StatusOr of one.
  template <class R>
  StatusOr<TracedMemorySpace<C, S>*> wrap_memory_space(R&& r) const {
    if constexpr (detail::IsStatusOr<std::remove_cvref_t<R>>::value) {
      if (!r.ok()) return r.status();
      return client_->wrap(*r);
    } else {
      return client_->wrap(r);
    }
  }

  Traced<C, S>* client_;
  inner_type* inner_;
  std::vector<TracedMemorySpace<C, S>*> memory_spaces_;  // filled by the client
};

}  // namespace pjrt_lite::trace
