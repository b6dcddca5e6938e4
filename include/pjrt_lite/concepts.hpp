#pragma once
// The contracts of a runtime, named after the PJRT abstract interfaces whose role they play:
// PjRtClient, PjRtDevice, PjRtMemorySpace, PjRtBuffer, PjRtLoadedExecutable, and
// CompilingClient (a PjRtClient that compiles Graphs, as PjRtClient::Compile); plus Executor,
// where work runs. A backend's classes take the plain names (cpu::Client, cpu::Buffer, ...),
// so `using namespace pjrt_lite; using namespace pjrt_lite::cpu;` never makes a name
// ambiguous. A type opts in by naming a tag (`using buffer_concept = pjrt_lite::buffer_tag;`),
// so nothing satisfies a concept by accident, and must then provide the listed API, every
// member with the result type written here. The types a device, memory space, buffer or
// executable points at are named by its associated types (`device_type`, ...); the client
// checks that they all agree.
// Generic code (jit, device_put, tracing decorators, conformance suites) is written against
// these, so a user's own backend gets all of it.
//
// CompilingClient is not called PjRtCompiler on purpose: PJRT's PjRtCompiler compiles for a
// topology without a client, while this is a client that compiles and loads.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/unique_function.hpp"
#include "pjrt_lite/future.hpp"

namespace pjrt_lite::inline v0_1 {

// Only named by CompilingClient (a reference), so concepts.hpp need not include the IR.
class Graph;

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
      { e.schedule(std::move(task)) } -> std::same_as<void>;
      { ce.num_threads() } -> std::convertible_to<int>;
    };

/// A place where memory lives, attached to one or more devices of type `M::device_type`.
/// Satisfied by cpu::MemorySpace<E> and trace::TracedMemorySpace.
template <class M>
concept PjRtMemorySpace =
    detail::DerivedTag<typename M::memory_space_concept, memory_space_tag> &&
    requires(const M& m) {
      typename M::device_type;
      { m.id() } -> std::convertible_to<int>;
      { m.kind() } -> std::convertible_to<std::string_view>;
      { m.kind_id() } -> std::convertible_to<int>;
      { m.devices() } -> std::convertible_to<std::span<typename M::device_type* const>>;
      { m.debug_string() } -> std::convertible_to<std::string>;
      { m.to_string() } -> std::convertible_to<std::string>;
    };

/// One device of a client, with memory spaces of type `D::memory_space_type`. Satisfied by
/// cpu::Device<E> and trace::TracedDevice.
template <class D>
concept PjRtDevice =
    detail::DerivedTag<typename D::device_concept, device_tag> &&
    requires(const D& d) {
      typename D::memory_space_type;
      { d.id() } -> std::convertible_to<int>;
      { d.process_index() } -> std::convertible_to<int>;
      { d.local_hardware_id() } -> std::convertible_to<int>;
      { d.device_kind() } -> std::convertible_to<std::string_view>;
      { d.is_addressable() } -> std::convertible_to<bool>;
      { d.attributes() } -> std::convertible_to<const DeviceAttributeMap&>;
      { d.debug_string() } -> std::convertible_to<std::string>;
      { d.to_string() } -> std::convertible_to<std::string>;
      { d.memory_spaces() }
          -> std::convertible_to<std::span<typename D::memory_space_type* const>>;
      { d.default_memory_space() } -> std::same_as<StatusOr<typename D::memory_space_type*>>;
    };

/// An array in a memory space, with PJRT's lifetime rules; it lives on a `B::device_type` in
/// a `B::memory_space_type`. Satisfied by cpu::Buffer<E> and trace::TracedBuffer.
template <class B>
concept PjRtBuffer =
    detail::DerivedTag<typename B::buffer_concept, buffer_tag> && std::movable<B> &&
    requires(B& b, const B& cb, void* dst, std::int64_t n) {
      typename B::device_type;
      typename B::memory_space_type;
      { cb.on_device_shape() } -> std::convertible_to<const Shape&>;
      { cb.dtype() } -> std::same_as<DType>;
      { cb.dims() } -> std::convertible_to<std::span<const std::int64_t>>;
      { cb.on_device_size_in_bytes() } -> std::same_as<StatusOr<std::int64_t>>;
      { cb.device() } -> std::same_as<typename B::device_type*>;
      { cb.memory_space() } -> std::same_as<typename B::memory_space_type*>;
      { cb.is_deleted() } -> std::same_as<bool>;
      { b.delete_buffer() } -> std::same_as<void>;
      { cb.get_ready_future() } -> std::same_as<Future<void>>;
      { cb.to_literal() } -> std::same_as<Future<Literal>>;
      { cb.copy_raw_to_host(dst, n, n) } -> std::same_as<Future<void>>;
    };

/// A compiled program loaded on devices, run with PJRT's three doors. Satisfied by
/// cpu::LoadedExecutable<E> and trace::TracedExecutable.
template <class X>
concept PjRtLoadedExecutable =
    detail::DerivedTag<typename X::loaded_executable_concept, loaded_executable_tag> &&
    PjRtBuffer<typename X::buffer_type> && PjRtDevice<typename X::device_type> &&
    requires(X& x, const X& cx, const ExecuteOptions& options,
             std::span<const std::vector<typename X::buffer_type*>> per_device_args,
             std::span<typename X::buffer_type* const> args, typename X::device_type* device) {
      { cx.name() } -> std::convertible_to<std::string_view>;
      { cx.addressable_devices() }
          -> std::convertible_to<std::span<typename X::device_type* const>>;
      { x.execute(per_device_args, options) }
          -> std::same_as<StatusOr<std::vector<std::vector<typename X::buffer_type>>>>;
      { x.execute_sharded(args, device, options) }
          -> std::same_as<StatusOr<std::vector<typename X::buffer_type>>>;
      { x.execute_portable(args, device, options) }
          -> std::same_as<StatusOr<std::vector<typename X::buffer_type>>>;
      { x.delete_executable() } -> std::same_as<void>;
      { cx.is_deleted() } -> std::same_as<bool>;
    };

/// A runtime: devices, memory spaces and the buffers on them, whose associated types agree
/// (a device's memory spaces are the client's memory_space_type, and so on). Satisfied by
/// cpu::Client<E> and Traced<C>.
template <class C>
concept PjRtClient =
    detail::DerivedTag<typename C::client_concept, client_tag> &&
    PjRtDevice<typename C::device_type> && PjRtMemorySpace<typename C::memory_space_type> &&
    PjRtBuffer<typename C::buffer_type> &&
    std::same_as<typename C::device_type::memory_space_type, typename C::memory_space_type> &&
    std::same_as<typename C::memory_space_type::device_type, typename C::device_type> &&
    std::same_as<typename C::buffer_type::device_type, typename C::device_type> &&
    std::same_as<typename C::buffer_type::memory_space_type, typename C::memory_space_type> &&
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

/// A PjRtClient that compiles a Graph (with the backend's default options) into its
/// `C::executable_type`, a PjRtLoadedExecutable over the client's own buffers and devices:
/// what jit and stablehlo::run_test_program need. Satisfied by cpu::Client<E> and Traced<C>.
template <class C>
concept CompilingClient =
    PjRtClient<C> && PjRtLoadedExecutable<typename C::executable_type> &&
    std::same_as<typename C::executable_type::buffer_type, typename C::buffer_type> &&
    std::same_as<typename C::executable_type::device_type, typename C::device_type> &&
    requires(C& c, const Graph& graph) {
      { c.compile(graph) } -> std::same_as<StatusOr<typename C::executable_type>>;
    };

namespace detail {
/// The client jit, pmap and shard_map take: a CompilingClient itself, or the std::unique_ptr
/// that owns one (as cpu::Client::create makes it).
template <CompilingClient C>
C& client_of(C& client) {
  return client;
}
template <CompilingClient C>
C& client_of(const std::unique_ptr<C>& client) {
  return *client;
}
/// The client type behind a `P&` that client_of accepts.
template <class P>
using ClientOf = std::remove_reference_t<decltype(client_of(std::declval<P&>()))>;
}  // namespace detail

}  // namespace pjrt_lite
