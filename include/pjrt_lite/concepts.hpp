#pragma once
// The contracts of a runtime: Executor, Device, MemorySpace, Buffer, LoadedExecutable and
// Client. A type opts in by naming a tag (`using buffer_concept = pjrt_lite::buffer_tag;`),
// so nothing satisfies a concept by accident, and must then provide the listed API.
// Generic code (jit, device_put, tracing decorators, conformance suites) is written against
// these, so a user's own backend gets all of it.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/unique_function.hpp"
#include "pjrt_lite/future.hpp"

namespace pjrt_lite {

// Opt-in tags. Derive from one to refine it.
struct executor_tag {};
struct device_tag {};
struct memory_space_tag {};
struct buffer_tag {};
struct loaded_executable_tag {};
struct client_tag {};

namespace detail {
template <class Tag, class Required>
concept DerivedTag = std::derived_from<Tag, Required>;
}  // namespace detail

/// Runs tasks somewhere. Satisfied by cpu::ThreadPool and cpu::InlineExecutor.
template <class E>
concept Executor =
    detail::DerivedTag<typename E::executor_concept, executor_tag> &&
    requires(E& e, const E& ce, UniqueFunction<void()> task) {
      e.schedule(std::move(task));
      { ce.num_threads() } -> std::convertible_to<int>;
    };

/// A place where memory lives, attached to one or more devices. Satisfied by
/// cpu::MemorySpace<E> and Traced wrappers.
template <class M>
concept MemorySpace =
    detail::DerivedTag<typename M::memory_space_concept, memory_space_tag> &&
    requires(const M& m) {
      { m.id() } -> std::convertible_to<int>;
      { m.kind() } -> std::convertible_to<std::string_view>;
      { m.kind_id() } -> std::convertible_to<int>;
      { m.devices() };
      { m.debug_string() } -> std::convertible_to<std::string>;
      { m.to_string() } -> std::convertible_to<std::string>;
    };

/// One device of a client. Satisfied by cpu::Device<E> and Traced wrappers.
template <class D>
concept Device =
    detail::DerivedTag<typename D::device_concept, device_tag> &&
    requires(const D& d) {
      { d.id() } -> std::convertible_to<int>;
      { d.process_index() } -> std::convertible_to<int>;
      { d.local_hardware_id() } -> std::convertible_to<int>;
      { d.device_kind() } -> std::convertible_to<std::string_view>;
      { d.is_addressable() } -> std::convertible_to<bool>;
      { d.attributes() } -> std::convertible_to<const DeviceAttributeMap&>;
      { d.debug_string() } -> std::convertible_to<std::string>;
      { d.to_string() } -> std::convertible_to<std::string>;
      { d.memory_spaces() };
      { d.default_memory_space() };
    };

/// An array in a memory space, with PJRT's lifetime rules. Satisfied by cpu::Buffer<E>.
template <class B>
concept Buffer =
    detail::DerivedTag<typename B::buffer_concept, buffer_tag> && std::movable<B> &&
    requires(B& b, const B& cb, void* dst, std::int64_t n) {
      { cb.on_device_shape() } -> std::convertible_to<const Shape&>;
      { cb.dtype() } -> std::same_as<DType>;
      { cb.dims() } -> std::convertible_to<std::span<const std::int64_t>>;
      { cb.on_device_size_in_bytes() } -> std::same_as<StatusOr<std::int64_t>>;
      { cb.device() };
      { cb.memory_space() };
      { cb.is_deleted() } -> std::same_as<bool>;
      b.delete_buffer();
      { cb.get_ready_future() } -> std::same_as<Future<void>>;
      { cb.to_literal() } -> std::same_as<Future<Literal>>;
      { cb.copy_raw_to_host(dst, n, n) } -> std::same_as<Future<void>>;
    };

/// A compiled program loaded on devices, run with PJRT's three doors. Satisfied by the
/// CPU backend's executable and Traced wrappers.
template <class X>
concept LoadedExecutable =
    detail::DerivedTag<typename X::loaded_executable_concept, loaded_executable_tag> &&
    Buffer<typename X::buffer_type> && Device<typename X::device_type> &&
    requires(X& x, const X& cx, const ExecuteOptions& options,
             std::span<const std::vector<typename X::buffer_type*>> per_device_args,
             std::span<typename X::buffer_type* const> args, typename X::device_type* device) {
      { cx.name() } -> std::convertible_to<std::string_view>;
      { cx.addressable_devices() };
      { x.execute(per_device_args, options) }
          -> std::same_as<StatusOr<std::vector<std::vector<typename X::buffer_type>>>>;
      { x.execute_sharded(args, device, options) }
          -> std::same_as<StatusOr<std::vector<typename X::buffer_type>>>;
      { x.execute_portable(args, device, options) }
          -> std::same_as<StatusOr<std::vector<typename X::buffer_type>>>;
      x.delete_executable();
      { cx.is_deleted() } -> std::same_as<bool>;
    };

/// A runtime: devices, memory spaces and the buffers on them. Satisfied by cpu::Client<E>
/// and Traced<C>.
template <class C>
concept Client =
    detail::DerivedTag<typename C::client_concept, client_tag> &&
    Device<typename C::device_type> && MemorySpace<typename C::memory_space_type> &&
    Buffer<typename C::buffer_type> &&
    requires(C& c, const C& cc, std::span<const std::byte> data, DType dtype,
             std::span<const std::int64_t> dims,
             std::optional<std::span<const std::int64_t>> byte_strides,
             HostBufferSemantics semantics, UniqueFunction<void()> on_done,
             typename C::memory_space_type* memory_space, const Shape& shape) {
      { cc.platform_name() } -> std::convertible_to<std::string_view>;
      { cc.platform_version() } -> std::convertible_to<std::string_view>;
      { cc.process_index() } -> std::convertible_to<int>;
      { cc.device_count() } -> std::convertible_to<int>;
      { cc.addressable_device_count() } -> std::convertible_to<int>;
      { cc.devices() } -> std::convertible_to<std::span<typename C::device_type* const>>;
      { cc.addressable_devices() } -> std::convertible_to<std::span<typename C::device_type* const>>;
      { cc.memory_spaces() } -> std::convertible_to<std::span<typename C::memory_space_type* const>>;
      { cc.lookup_device(0) } -> std::same_as<StatusOr<typename C::device_type*>>;
      { c.buffer_from_host_buffer(data, dtype, dims, byte_strides, semantics, std::move(on_done),
                                  memory_space) }
          -> std::same_as<StatusOr<typename C::buffer_type>>;
      { c.create_uninitialized_buffer(shape, memory_space) }
          -> std::same_as<StatusOr<typename C::buffer_type>>;
    };

}  // namespace pjrt_lite
