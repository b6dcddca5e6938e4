#pragma once
// A traced buffer: owns one of the inner client's buffers, forwards every call and reports it.

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/trace/device.hpp"
#include "pjrt_lite/trace/forward.hpp"

namespace pjrt_lite::inline v0_1::trace {

/// A buffer of a Traced client. Satisfies PjRtBuffer; move-only if the inner buffer is, and
/// like cpu::Buffer not to be dropped when returned (destroying it destroys the inner one). In
/// records a buffer is named by the inner buffer's id() where it has one (stable across
/// moves), else by its own address. Thread-safe as the inner buffer is.
template <PjRtClient C, Sink S>
class [[nodiscard]] TracedBuffer {
 public:
  using buffer_concept = buffer_tag;
  using inner_type = typename C::buffer_type;
  using device_type = TracedDevice<C, S>;
  using memory_space_type = TracedMemorySpace<C, S>;

  explicit TracedBuffer(Traced<C, S>* client, inner_type inner)
      : client_(client), inner_(std::move(inner)) {}
  TracedBuffer(TracedBuffer&&) noexcept = default;
  TracedBuffer& operator=(TracedBuffer&&) noexcept = default;

  [[nodiscard]] const Shape& on_device_shape() const {
    return tracer().call("buffer", id(), "on_device_shape", {},
                         [&]() -> const Shape& { return inner_.on_device_shape(); });
  }
  [[nodiscard]] DType dtype() const {
    return tracer().call("buffer", id(), "dtype", {}, [&] { return inner_.dtype(); });
  }
  [[nodiscard]] std::span<const std::int64_t> dims() const {
    return tracer().call("buffer", id(), "dims", {},
                         [&] { return std::span<const std::int64_t>(inner_.dims()); });
  }
  [[nodiscard]] StatusOr<std::int64_t> on_device_size_in_bytes() const {
    return tracer().call("buffer", id(), "on_device_size_in_bytes", {},
                         [&] { return inner_.on_device_size_in_bytes(); });
  }
  [[nodiscard]] TracedDevice<C, S>* device() const {
    return tracer().call("buffer", id(), "device", {},
                         [&] { return client_->wrap(inner_.device()); });
  }
  [[nodiscard]] TracedMemorySpace<C, S>* memory_space() const {
    return tracer().call("buffer", id(), "memory_space", {},
                         [&] { return client_->wrap(inner_.memory_space()); });
  }
  [[nodiscard]] bool is_deleted() const {
    return tracer().call("buffer", id(), "is_deleted", {}, [&] { return inner_.is_deleted(); });
  }
  void delete_buffer() {
    tracer().call("buffer", id(), "delete_buffer", {}, [&] { inner_.delete_buffer(); });
  }
  [[nodiscard]] Future<void> get_ready_future() const {
    return tracer().call("buffer", id(), "get_ready_future", {},
                         [&] { return inner_.get_ready_future(); });
  }
  [[nodiscard]] Future<Literal> to_literal() const {
    return tracer().call("buffer", id(), "to_literal", {}, [&] { return inner_.to_literal(); });
  }
  [[nodiscard]] Future<void> copy_raw_to_host(void* dst, std::int64_t offset,
                                              std::int64_t size) const {
    return tracer().call(
        "buffer", id(), "copy_raw_to_host",
        str_cat("dst=", detail::format_address(dst), " offset=", offset, " size=", size),
        [&] { return inner_.copy_raw_to_host(dst, offset, size); });
  }

  // ---- What the inner buffer has beyond the concept.
  Status copy_raw_from_host(const void* src, std::int64_t offset, std::int64_t size) requires
      requires(inner_type& b, const void* p, std::int64_t n) {
    b.copy_raw_from_host(p, n, n);
  }
  {
    return tracer().call(
        "buffer", id(), "copy_raw_from_host",
        str_cat("src=", detail::format_address(src), " offset=", offset, " size=", size),
        [&] { return inner_.copy_raw_from_host(src, offset, size); });
  }
  [[nodiscard]] StatusOr<TracedBuffer> copy_to_device(TracedDevice<C, S>* device) const requires
      requires(const inner_type& b, typename C::device_type* d) {
    b.copy_to_device(d);
  }
  {
    return tracer().call(
        "buffer", id(), "copy_to_device", describe(device), [&]() -> StatusOr<TracedBuffer> {
          auto r = inner_.copy_to_device(device != nullptr ? device->inner() : nullptr);
          if (!r.ok()) return r.status();
          return TracedBuffer(client_, std::move(r).value());
        });
  }
  [[nodiscard]] StatusOr<TracedBuffer> copy_to_memory_space(TracedMemorySpace<C, S>* memory_space)
      const requires requires(const inner_type& b, typename C::memory_space_type* m) {
    b.copy_to_memory_space(m);
  }
  {
    return tracer().call("buffer", id(), "copy_to_memory_space", describe(memory_space),
                         [&]() -> StatusOr<TracedBuffer> {
                           auto r = inner_.copy_to_memory_space(
                               memory_space != nullptr ? memory_space->inner() : nullptr);
                           if (!r.ok()) return r.status();
                           return TracedBuffer(client_, std::move(r).value());
                         });
  }
  [[nodiscard]] auto acquire_external_reference() const requires requires(const inner_type& b) {
    b.acquire_external_reference();
  }
  {
    return tracer().call("buffer", id(), "acquire_external_reference", {},
                         [&] { return inner_.acquire_external_reference(); });
  }
  [[nodiscard]] std::string to_string() const requires requires(const inner_type& b) {
    b.to_string();
  }
  {
    return tracer().call("buffer", id(), "to_string", {},
                         [&] { return std::string(inner_.to_string()); });
  }

  /// The Traced client this buffer belongs to (not reported).
  [[nodiscard]] Traced<C, S>* client() const { return client_; }
  /// The wrapped buffer (not reported).
  [[nodiscard]] inner_type& inner() { return inner_; }
  [[nodiscard]] const inner_type& inner() const { return inner_; }
  /// What names this buffer in records: the inner buffer's id() if it has one, else this.
  [[nodiscard]] const void* id() const {
    if constexpr (requires { inner_.id(); })
      return inner_.id();
    else
      return this;
  }
  /// For trace records: id() as an address.
  [[nodiscard]] std::string trace_describe() const { return detail::format_address(id()); }

 private:
  Tracer<S>& tracer() const { return client_->tracer(); }

  Traced<C, S>* client_;
  inner_type inner_;
};

}  // namespace pjrt_lite::trace
