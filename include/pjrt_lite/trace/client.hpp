#pragma once
// Traced<C, Sink>: a client that forwards every call to an inner client C and reports each
// one (object, method, arguments and result in short, error, duration, and the call stack if
// the sink asks) to a Sink chosen at compile time. Its devices, memory spaces, buffers and
// executables are wrappers that do the same. Nothing of this is in C: an untraced client
// carries no tracing code or data.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/trace/buffer.hpp"
#include "pjrt_lite/trace/device.hpp"
#include "pjrt_lite/trace/executable.hpp"
#include "pjrt_lite/trace/forward.hpp"

namespace pjrt_lite::inline v0_1 {

/// A client that reports every call to a Sink (trace::LogSink by default: one line per call
/// on stderr). Satisfies PjRtClient, and CompilingClient where C does. Create it around an
/// inner client, or with create(), which forwards to C::create. Not movable: its wrappers
/// point back at it. Thread-safe as far as C and the sink are.
template <PjRtClient C, trace::Sink S>
class Traced {
 public:
  using client_concept = client_tag;
  using inner_type = C;
  using sink_type = S;
  using device_type = trace::TracedDevice<C, S>;
  using memory_space_type = trace::TracedMemorySpace<C, S>;
  using buffer_type = trace::TracedBuffer<C, S>;
  using executable_type = trace::TracedExecutable<C, S>;

  /// Wraps `inner`, which must not be null, reporting to `sink`.
  explicit Traced(std::unique_ptr<C> inner, S sink = S())
      : inner_(std::move(inner)), tracer_(std::move(sink)) {
    PJRT_LITE_ASSERT(inner_ != nullptr, "Traced: the inner client is null");
    for (auto* m : inner_->memory_spaces()) {
      memory_spaces_.push_back(std::make_unique<memory_space_type>(this, m));
      memory_space_ptrs_.push_back(memory_spaces_.back().get());
      memory_space_of_[m] = memory_spaces_.back().get();
    }
    for (auto* d : inner_->devices()) {
      devices_.push_back(std::make_unique<device_type>(this, d));
      device_ptrs_.push_back(devices_.back().get());
      device_of_[d] = devices_.back().get();
    }
    for (auto* d : inner_->addressable_devices()) addressable_device_ptrs_.push_back(wrap(d));
    for (auto& d : devices_)
      for (auto* m : d->inner()->memory_spaces()) d->memory_spaces_.push_back(wrap(m));
    for (auto& m : memory_spaces_)
      for (auto* d : m->inner()->devices()) m->devices_.push_back(wrap(d));
  }
  Traced(const Traced&) = delete;
  Traced& operator=(const Traced&) = delete;

  /// C::create(args...) wrapped, reporting to a default-constructed sink; the creation is
  /// the first record. C's error is returned unchanged.
  template <class... Args>
  requires requires(Args&&... args) { C::create(std::forward<Args>(args)...); }
  static StatusOr<std::unique_ptr<Traced>> create(Args&&... args) {
    return create_with_sink(S(), std::forward<Args>(args)...);
  }
  /// As create(), reporting to `sink`.
  template <class... Args>
  requires requires(Args&&... args) { C::create(std::forward<Args>(args)...); }
  static StatusOr<std::unique_ptr<Traced>> create_with_sink(S sink, Args&&... args) {
    // The creation is reported by a Tracer of its own, since the client does not exist yet.
    trace::Tracer<S> creator(std::move(sink));
    auto inner = creator.call("client", nullptr, "create", {},
                              [&] { return C::create(std::forward<Args>(args)...); });
    if (!inner.ok()) return inner.status();
    return std::make_unique<Traced>(std::move(inner).value(), std::move(creator.sink()));
  }

  [[nodiscard]] std::string_view platform_name() const {
    return tracer_.call("client", id(), "platform_name", {},
                        [&]() -> std::string_view { return inner_->platform_name(); });
  }
  [[nodiscard]] std::string_view platform_version() const {
    return tracer_.call("client", id(), "platform_version", {},
                        [&]() -> std::string_view { return inner_->platform_version(); });
  }
  [[nodiscard]] int process_index() const {
    return tracer_.call("client", id(), "process_index", {},
                        [&] { return inner_->process_index(); });
  }
  [[nodiscard]] int device_count() const {
    return tracer_.call("client", id(), "device_count", {}, [&] { return inner_->device_count(); });
  }
  [[nodiscard]] int addressable_device_count() const {
    return tracer_.call("client", id(), "addressable_device_count", {},
                        [&] { return inner_->addressable_device_count(); });
  }
  [[nodiscard]] std::span<device_type* const> devices() const {
    return tracer_.call("client", id(), "devices", {},
                        [&] { return std::span<device_type* const>(device_ptrs_); });
  }
  [[nodiscard]] std::span<device_type* const> addressable_devices() const {
    return tracer_.call("client", id(), "addressable_devices", {},
                        [&] { return std::span<device_type* const>(addressable_device_ptrs_); });
  }
  [[nodiscard]] std::span<memory_space_type* const> memory_spaces() const {
    return tracer_.call("client", id(), "memory_spaces", {},
                        [&] { return std::span<memory_space_type* const>(memory_space_ptrs_); });
  }
  /// The wrapper of the inner client's device `id`, or its error unchanged.
  [[nodiscard]] StatusOr<device_type*> lookup_device(int device_id) const {
    return tracer_.call("client", id(), "lookup_device", std::to_string(device_id),
                        [&]() -> StatusOr<device_type*> {
                          auto r = inner_->lookup_device(device_id);
                          if (!r.ok()) return r.status();
                          return wrap(*r);
                        });
  }

  [[nodiscard]] StatusOr<buffer_type> buffer_from_host_buffer(
      std::span<const std::byte> data, DType dtype, std::span<const std::int64_t> dims,
      std::optional<std::span<const std::int64_t>> byte_strides, HostBufferSemantics semantics,
      UniqueFunction<void()> on_done, memory_space_type* memory_space) {
    return tracer_.call("client", id(), "buffer_from_host_buffer",
                        describe_host_buffer(data, dtype, dims, byte_strides, semantics,
                                             trace::describe(memory_space)),
                        [&]() -> StatusOr<buffer_type> {
                          return wrap(inner_->buffer_from_host_buffer(
                              data, dtype, dims, byte_strides, semantics, std::move(on_done),
                              memory_space != nullptr ? memory_space->inner() : nullptr));
                        });
  }
  /// buffer_from_host_buffer with `nullptr` for the place, or none: as C does with a null
  /// memory space (the CPU client: the first device's default). Without it a bare nullptr
  /// would match both the memory-space and the device overload.
  [[nodiscard]] StatusOr<buffer_type> buffer_from_host_buffer(
      std::span<const std::byte> data, DType dtype, std::span<const std::int64_t> dims,
      std::optional<std::span<const std::int64_t>> byte_strides, HostBufferSemantics semantics,
      UniqueFunction<void()> on_done = nullptr, std::nullptr_t = nullptr) {
    return buffer_from_host_buffer(data, dtype, dims, byte_strides, semantics, std::move(on_done),
                                   static_cast<memory_space_type*>(nullptr));
  }
  /// buffer_from_host_buffer onto `device`'s default memory space, where C has it.
  [[nodiscard]] StatusOr<buffer_type> buffer_from_host_buffer(
      std::span<const std::byte> data, DType dtype, std::span<const std::int64_t> dims,
      std::optional<std::span<const std::int64_t>> byte_strides, HostBufferSemantics semantics,
      UniqueFunction<void()> on_done, device_type* device) requires
      requires(C& c, typename C::device_type* d) {
    c.buffer_from_host_buffer(data, dtype, dims, byte_strides, semantics, std::move(on_done), d);
  }
  {
    return tracer_.call(
        "client", id(), "buffer_from_host_buffer",
        describe_host_buffer(data, dtype, dims, byte_strides, semantics, trace::describe(device)),
        [&]() -> StatusOr<buffer_type> {
          return wrap(inner_->buffer_from_host_buffer(
              data, dtype, dims, byte_strides, semantics, std::move(on_done),
              device != nullptr ? device->inner() : nullptr));
        });
  }
  /// The typed shorthand, where C has it: copies `values` (row-major `dims`) onto `device`.
  template <Element T>
  [[nodiscard]] StatusOr<buffer_type> buffer_from_host_buffer(
      std::span<const T> values, std::span<const std::int64_t> dims,
      device_type* device = nullptr) requires requires(C& c, typename C::device_type* d) {
    c.buffer_from_host_buffer(values, dims, d);
  }
  {
    return tracer_.call("client", id(), "buffer_from_host_buffer",
                        str_cat(trace::describe(dtype_of<T>), Shape::dims_string(dims), " on ",
                                trace::describe(device)),
                        [&]() -> StatusOr<buffer_type> {
                          return wrap(inner_->buffer_from_host_buffer(
                              values, dims, device != nullptr ? device->inner() : nullptr));
                        });
  }
  /// A buffer holding a copy of `literal`, where C has buffer_from_literal.
  [[nodiscard]] StatusOr<buffer_type> buffer_from_literal(
      const Literal& literal, memory_space_type* memory_space = nullptr) requires
      requires(C& c, typename C::memory_space_type* m) {
    c.buffer_from_literal(literal, m);
  }
  {
    return tracer_.call("client", id(), "buffer_from_literal",
                        str_cat(trace::describe(literal), " on ", trace::describe(memory_space)),
                        [&]() -> StatusOr<buffer_type> {
                          return wrap(inner_->buffer_from_literal(
                              literal, memory_space != nullptr ? memory_space->inner() : nullptr));
                        });
  }
  [[nodiscard]] StatusOr<buffer_type> create_uninitialized_buffer(const Shape& shape,
                                                                  memory_space_type* memory_space) {
    return tracer_.call("client", id(), "create_uninitialized_buffer",
                        str_cat(trace::describe(shape), " on ", trace::describe(memory_space)),
                        [&]() -> StatusOr<buffer_type> {
                          return wrap(inner_->create_uninitialized_buffer(
                              shape, memory_space != nullptr ? memory_space->inner() : nullptr));
                        });
  }

  /// Compiles `graph` with C's compile(graph, options...), where C has one.
  template <class... Options>
  requires requires(C& c, const Graph& g, const Options&... o) { c.compile(g, o...); }
  [[nodiscard]] StatusOr<executable_type> compile(const Graph& graph, const Options&... options) {
    return tracer_.call("client", id(), "compile", trace::describe(graph),
                        [&]() -> StatusOr<executable_type> {
                          auto r = inner_->compile(graph, options...);
                          if (!r.ok()) return r.status();
                          return executable_type(this, std::move(r).value());
                        });
  }
  /// Rebuilds an executable from serialized bytes, where C can.
  [[nodiscard]] StatusOr<executable_type> deserialize_executable(
      std::span<const std::byte> bytes) requires requires(C& c) {
    c.deserialize_executable(bytes);
  }
  {
    return tracer_.call("client", id(), "deserialize_executable", trace::describe(bytes),
                        [&]() -> StatusOr<executable_type> {
                          auto r = inner_->deserialize_executable(bytes);
                          if (!r.ok()) return r.status();
                          return executable_type(this, std::move(r).value());
                        });
  }

  /// The wrapped client (not reported), e.g. to attach a timeline to it.
  [[nodiscard]] C& inner() const { return *inner_; }
  /// The sink the records go to.
  [[nodiscard]] S& sink() const { return tracer_.sink(); }
  /// For the wrappers: reports their calls.
  [[nodiscard]] trace::Tracer<S>& tracer() const { return tracer_; }
  /// What names this client in records: the inner client's address.
  [[nodiscard]] const void* id() const { return inner_.get(); }
  /// For trace records: id() as an address.
  [[nodiscard]] std::string trace_describe() const { return trace::detail::format_address(id()); }

  /// The wrapper of one of the inner client's devices or memory spaces, or null for one that
  /// is not (not reported).
  [[nodiscard]] device_type* wrap(const typename C::device_type* d) const {
    auto it = device_of_.find(d);
    return it == device_of_.end() ? nullptr : it->second;
  }
  [[nodiscard]] memory_space_type* wrap(const typename C::memory_space_type* m) const {
    auto it = memory_space_of_.find(m);
    return it == memory_space_of_.end() ? nullptr : it->second;
  }

 private:
  StatusOr<buffer_type> wrap(StatusOr<typename C::buffer_type> r) {
    if (!r.ok()) return r.status();
    return buffer_type(this, std::move(r).value());
  }

  static std::string describe_host_buffer(std::span<const std::byte> data, DType dtype,
                                          std::span<const std::int64_t> dims,
                                          std::optional<std::span<const std::int64_t>> byte_strides,
                                          HostBufferSemantics semantics, const std::string& where) {
    std::string out = str_cat(trace::detail::format_address(data.data()), " ",
                              trace::describe(dtype), Shape::dims_string(dims));
    if (byte_strides) out += str_cat(" strides=", trace::describe(*byte_strides));
    return str_cat(out, " ", trace::describe(semantics), " on ", where);
  }

  std::unique_ptr<C> inner_;
  mutable trace::Tracer<S> tracer_;
  std::vector<std::unique_ptr<device_type>> devices_;
  std::vector<device_type*> device_ptrs_;
  std::vector<device_type*> addressable_device_ptrs_;
  std::vector<std::unique_ptr<memory_space_type>> memory_spaces_;
  std::vector<memory_space_type*> memory_space_ptrs_;
  std::unordered_map<const typename C::device_type*, device_type*> device_of_;
  std::unordered_map<const typename C::memory_space_type*, memory_space_type*> memory_space_of_;
};

}  // namespace pjrt_lite
