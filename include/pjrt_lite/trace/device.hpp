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

/// What a traced memory space and a traced device share: their client, the wrapped object,
/// and reporting each forwarded call as a call of the `kind` object (`Kind::kName`).
template <PjRtClient C, Sink S, class Inner, class Kind>
class TracedHandle {
 public:
  using inner_type = Inner;

  TracedHandle(Traced<C, S>* client, inner_type* inner) : client_(client), inner_(inner) {}
  TracedHandle(const TracedHandle&) = delete;
  TracedHandle& operator=(const TracedHandle&) = delete;

  [[nodiscard]] int id() const {
    return call("id", [&] { return inner_->id(); });
  }
  [[nodiscard]] std::string debug_string() const {
    return call("debug_string", [&] { return std::string(inner_->debug_string()); });
  }
  [[nodiscard]] std::string to_string() const {
    return call("to_string", [&] { return std::string(inner_->to_string()); });
  }
  /// The Traced client this belongs to (not reported).
  [[nodiscard]] Traced<C, S>* client() const { return client_; }
  /// The wrapped object (not reported).
  [[nodiscard]] inner_type* inner() const { return inner_; }
  /// For trace records: the inner object's debug string.
  [[nodiscard]] std::string trace_describe() const { return std::string(inner_->debug_string()); }

 protected:
  /// Runs fn() and reports it as `method`, with the forwarding method's line.
  template <class F>
  decltype(auto) call(std::string_view method, F&& fn, std::string arguments = {},
                      SourceLocation where = SourceLocation::current()) const {
    return client_->tracer().call(Kind::kName, inner_, method, std::move(arguments), std::forward<F>(fn), where);
  }

  Traced<C, S>* client_;
  inner_type* inner_;
};

struct MemorySpaceKind {
  static constexpr std::string_view kName = "memory_space";
};
struct DeviceKind {
  static constexpr std::string_view kName = "device";
};

/// A memory space of a Traced client. Satisfies PjRtMemorySpace. Thread-safe as far as the
/// sink is.
template <PjRtClient C, Sink S>
class TracedMemorySpace : public TracedHandle<C, S, typename C::memory_space_type, MemorySpaceKind> {
  using Base = TracedHandle<C, S, typename C::memory_space_type, MemorySpaceKind>;
  using Base::call, Base::inner_;

 public:
  using memory_space_concept = memory_space_tag;
  using device_type = TracedDevice<C, S>;
  using Base::Base;

  [[nodiscard]] std::string_view kind() const {
    return call("kind", [&]() -> std::string_view { return inner_->kind(); });
  }
  [[nodiscard]] int kind_id() const {
    return call("kind_id", [&] { return inner_->kind_id(); });
  }
  [[nodiscard]] std::span<TracedDevice<C, S>* const> devices() const {
    return call("devices", [&] { return std::span<TracedDevice<C, S>* const>(devices_); });
  }

 private:
  friend class Traced<C, S>;
  std::vector<TracedDevice<C, S>*> devices_;  // filled by the client
};

/// A device of a Traced client. Satisfies PjRtDevice. Thread-safe as far as the sink is.
template <PjRtClient C, Sink S>
class TracedDevice : public TracedHandle<C, S, typename C::device_type, DeviceKind> {
  using Base = TracedHandle<C, S, typename C::device_type, DeviceKind>;
  using Base::call, Base::client_, Base::inner_;

 public:
  using device_concept = device_tag;
  using memory_space_type = TracedMemorySpace<C, S>;
  using Base::Base;

  [[nodiscard]] int process_index() const {
    return call("process_index", [&] { return inner_->process_index(); });
  }
  [[nodiscard]] int local_hardware_id() const {
    return call("local_hardware_id", [&] { return inner_->local_hardware_id(); });
  }
  [[nodiscard]] std::string_view device_kind() const {
    return call("device_kind", [&]() -> std::string_view { return inner_->device_kind(); });
  }
  [[nodiscard]] bool is_addressable() const {
    return call("is_addressable", [&] { return inner_->is_addressable(); });
  }
  [[nodiscard]] const DeviceAttributeMap& attributes() const {
    return call("attributes", [&]() -> const DeviceAttributeMap& { return inner_->attributes(); });
  }
  [[nodiscard]] std::span<TracedMemorySpace<C, S>* const> memory_spaces() const {
    return call("memory_spaces", [&] { return std::span<TracedMemorySpace<C, S>* const>(memory_spaces_); });
  }
  /// The wrapper of the inner device's default memory space, or its error unchanged.
  [[nodiscard]] StatusOr<TracedMemorySpace<C, S>*> default_memory_space() const {
    return call("default_memory_space", [&] { return wrap_memory_space(inner_->default_memory_space()); });
  }
  /// As the inner device's memory_space_by_kind, where it has one.
  [[nodiscard]] StatusOr<TracedMemorySpace<C, S>*> memory_space_by_kind(
      std::string_view kind) const requires requires(const typename C::device_type& d) {
    d.memory_space_by_kind(kind);
  }
  {
    return call("memory_space_by_kind", [&] { return wrap_memory_space(inner_->memory_space_by_kind(kind)); }, std::string(kind));
  }

 private:
  friend class Traced<C, S>;
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

  std::vector<TracedMemorySpace<C, S>*> memory_spaces_;  // filled by the client
};

}  // namespace pjrt_lite::trace
