#pragma once
// CPU buffers: arrays in host memory with PJRT's ownership and lifetime rules.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>

#include "pjrt_lite/backends/cpu/forward.hpp"
#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/unique_function.hpp"
#include "pjrt_lite/future.hpp"

namespace pjrt_lite::cpu {

/// Every buffer's memory is aligned to at least this many bytes (zero-copy host memory that
/// is less aligned is copied instead). Kernels must not assume more.
inline constexpr std::size_t kMinBufferAlignment = 16;

namespace detail {

/// A block of host memory backing one or more buffers' lifetimes. It is shared by the buffer,
/// by every pending operation that reads or writes it, and by external references, so it is
/// released only when the last of them lets go; then a zero-copy block calls the owner's
/// on_done.
struct DeviceMemory {
  std::byte* data = nullptr;
  std::size_t size = 0;
  pjrt_lite::detail::AlignedBytes owned;  // empty when the memory is the caller's (zero-copy)
  UniqueFunction<void()> on_release;
  /// False for kImmutableZeroCopy memory, which the runtime must never write.
  bool writable = true;

  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() {
    if (on_release) on_release();
  }

  static std::shared_ptr<DeviceMemory> allocate(std::size_t size) {
    auto m = std::make_shared<DeviceMemory>();
    m->owned = pjrt_lite::detail::allocate_aligned(size);
    m->data = m->owned.get();
    m->size = size;
    return m;
  }
};

/// The memory of a live buffer and the future that says when its contents are defined.
struct BufferHold {
  std::shared_ptr<DeviceMemory> memory;
  Future<void> ready;
};

template <class E>
struct BufferState {
  Client<E>* client = nullptr;
  MemorySpace<E>* memory_space = nullptr;
  Shape shape;
  Future<void> ready;
  mutable std::mutex mu;
  std::shared_ptr<DeviceMemory> memory;  // null once deleted or donated; guarded by mu
};

}  // namespace detail

/// Keeps a buffer's memory alive (and unmoved) after the buffer is deleted, e.g. while a
/// foreign library reads it. Movable; the memory is released with the last reference.
class ExternalReference {
 public:
  explicit ExternalReference(std::shared_ptr<detail::DeviceMemory> memory)
      : memory_(std::move(memory)) {}
  [[nodiscard]] void* data() const { return memory_->data; }
  [[nodiscard]] std::size_t size() const { return memory_->size; }

 private:
  std::shared_ptr<detail::DeviceMemory> memory_;
};

/// An array on one device's memory space. Move-only, like PJRT's unique_ptr<PjRtBuffer>:
/// destroying it deletes it. Memory is released only after every pending use (transfers,
/// executions, external references) is done. All const methods and delete_buffer() are
/// thread-safe; a moved-from Buffer may only be destroyed or assigned to.
template <class E>
class Buffer {
 public:
  using buffer_concept = buffer_tag;

  explicit Buffer(std::unique_ptr<detail::BufferState<E>> state) : state_(std::move(state)) {}
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  ~Buffer() = default;

  [[nodiscard]] const Shape& on_device_shape() const { return state_->shape; }
  [[nodiscard]] DType dtype() const { return state_->shape.dtype(); }
  [[nodiscard]] std::span<const std::int64_t> dims() const { return state_->shape.dims(); }
  [[nodiscard]] MemorySpace<E>* memory_space() const { return state_->memory_space; }
  [[nodiscard]] Device<E>* device() const { return state_->memory_space->devices()[0]; }
  [[nodiscard]] Client<E>* client() const { return state_->client; }

  /// The bytes the buffer occupies, or FAILED_PRECONDITION once deleted.
  [[nodiscard]] StatusOr<std::int64_t> on_device_size_in_bytes() const {
    PJRT_LITE_ASSIGN_OR_RETURN(detail::BufferHold hold, acquire("on_device_size_in_bytes"));
    return static_cast<std::int64_t>(hold.memory->size);
  }

  /// Ready when the contents are defined (the transfer or execution that writes them is done),
  /// or holds the error that prevented it.
  [[nodiscard]] Future<void> get_ready_future() const { return state_->ready; }

  [[nodiscard]] bool is_deleted() const {
    std::lock_guard lock(state_->mu);
    return state_->memory == nullptr;
  }

  /// Drops this buffer's claim on its memory; later uses fail with FAILED_PRECONDITION.
  /// Pending uses keep the memory until they finish. Idempotent.
  void delete_buffer() {
    std::shared_ptr<detail::DeviceMemory> released;
    {
      std::lock_guard lock(state_->mu);
      released = std::move(state_->memory);
    }
    // `released` goes here, outside the lock: it may run a zero-copy on_done.
  }

  /// The contents, copied to a host Literal once ready. Copies of at least the client's
  /// async_transfer_threshold_bytes run on the client's executor.
  [[nodiscard]] Future<Literal> to_literal() const {
    StatusOr<detail::BufferHold> hold = acquire("to_literal");
    if (!hold.ok()) return make_error_future<Literal>(hold.status());
    auto [promise, future] = make_promise<Literal>();
    Shape shape = state_->shape;
    run_when_ready(std::move(*hold), [shape = std::move(shape), promise = std::move(promise)](
                                         const Status& status, detail::DeviceMemory& memory) mutable {
      if (!status.ok()) {
        promise.set_error(status);
        return;
      }
      Literal literal(std::move(shape));
      if (memory.size) std::memcpy(literal.untyped_data(), memory.data, memory.size);
      promise.set_value(std::move(literal));
    });
    return future;
  }

  /// Copies bytes [offset, offset + size) of the contents to `dst` once ready. OUT_OF_RANGE
  /// if the range leaves the buffer.
  [[nodiscard]] Future<void> copy_raw_to_host(void* dst, std::int64_t offset, std::int64_t size) const {
    StatusOr<detail::BufferHold> hold = acquire("copy_raw_to_host");
    if (!hold.ok()) return make_error_future<void>(hold.status());
    const auto total = static_cast<std::int64_t>(hold->memory->size);
    if (offset < 0 || size < 0 || offset > total || size > total - offset)
      return make_error_future<void>(out_of_range_error(
          str_cat("copy_raw_to_host: bytes [", offset, ", ", offset + size, ") of buffer ",
                  state_->shape, " are outside its ", total, " bytes")));
    if (dst == nullptr && size > 0)
      return make_error_future<void>(invalid_argument_error("copy_raw_to_host: dst is null"));
    auto [promise, future] = make_promise<void>();
    run_when_ready(std::move(*hold), [dst, offset, size, promise = std::move(promise)](
                                         const Status& status, detail::DeviceMemory& memory) mutable {
      if (status.ok() && size > 0) std::memcpy(dst, memory.data + offset, static_cast<std::size_t>(size));
      promise.set(status);
    });
    return future;
  }

  /// A copy of this buffer in `memory_space` (of the same client). Returns at once; the new
  /// buffer's ready future says when the copy is done, or carries this buffer's error.
  [[nodiscard]] StatusOr<Buffer> copy_to_memory_space(MemorySpace<E>* memory_space) const {
    if (memory_space == nullptr)
      return invalid_argument_error("copy_to_memory_space: memory space is null");
    if (memory_space->client() != state_->client)
      return invalid_argument_error(str_cat("copy_to_memory_space: memory space ",
                                            memory_space->debug_string(),
                                            " belongs to another client"));
    PJRT_LITE_ASSIGN_OR_RETURN(detail::BufferHold hold, acquire("copy_to_memory_space"));
    auto destination = detail::DeviceMemory::allocate(hold.memory->size);
    auto [promise, future] = make_promise<void>();
    run_when_ready(std::move(hold), [destination, promise = std::move(promise)](
                                        const Status& status, detail::DeviceMemory& source) mutable {
      if (status.ok() && source.size) std::memcpy(destination->data, source.data, source.size);
      promise.set(status);
    });
    return make(state_->client, memory_space, state_->shape, std::move(destination), std::move(future));
  }

  /// A copy of this buffer in `device`'s default memory space.
  [[nodiscard]] StatusOr<Buffer> copy_to_device(Device<E>* device) const {
    if (device == nullptr) return invalid_argument_error("copy_to_device: device is null");
    if (device->client() != state_->client)
      return invalid_argument_error(str_cat("copy_to_device: device ", device->debug_string(),
                                            " belongs to another client"));
    PJRT_LITE_ASSIGN_OR_RETURN(MemorySpace<E>* memory_space, device->default_memory_space());
    return copy_to_memory_space(memory_space);
  }

  /// Keeps the memory alive and in place until the reference is dropped, even if the buffer
  /// is deleted. The contents are defined once get_ready_future() is ready.
  [[nodiscard]] StatusOr<ExternalReference> acquire_external_reference() const {
    PJRT_LITE_ASSIGN_OR_RETURN(detail::BufferHold hold, acquire("acquire_external_reference"));
    return ExternalReference(std::move(hold.memory));
  }

  /// "Buffer(f32[2,3] on cpu:0/device)".
  [[nodiscard]] std::string to_string() const {
    return str_cat("Buffer(", state_->shape, " on ", state_->memory_space->debug_string(),
                   is_deleted() ? ", deleted)" : ")");
  }

  // ----- For the runtime's own use (executables, decorators) -----

  static Buffer make(Client<E>* client, MemorySpace<E>* memory_space, Shape shape,
                     std::shared_ptr<detail::DeviceMemory> memory, Future<void> ready) {
    auto state = std::make_unique<detail::BufferState<E>>();
    state->client = client;
    state->memory_space = memory_space;
    state->shape = std::move(shape);
    state->memory = std::move(memory);
    state->ready = std::move(ready);
    return Buffer(std::move(state));
  }

  /// The memory and ready future of a live buffer, or FAILED_PRECONDITION naming `what`.
  [[nodiscard]] StatusOr<detail::BufferHold> acquire(std::string_view what) const {
    std::lock_guard lock(state_->mu);
    if (state_->memory == nullptr)
      return failed_precondition_error(str_cat(what, ": buffer ", state_->shape, " on ",
                                               state_->memory_space->debug_string(),
                                               " has been deleted or donated"));
    return detail::BufferHold{state_->memory, state_->ready};
  }

  /// Takes the memory away from a live buffer, which becomes deleted (donation).
  [[nodiscard]] StatusOr<detail::BufferHold> release(std::string_view what) {
    std::lock_guard lock(state_->mu);
    if (state_->memory == nullptr)
      return failed_precondition_error(str_cat(what, ": buffer ", state_->shape, " on ",
                                               state_->memory_space->debug_string(),
                                               " has been deleted or donated"));
    return detail::BufferHold{std::move(state_->memory), state_->ready};
  }

  /// An address that identifies this buffer while it lives (for logs).
  [[nodiscard]] const void* id() const { return state_.get(); }

 private:
  /// Runs fn(status of the ready future, memory) once the buffer is ready: inline for small
  /// buffers, on the client's executor for large ones. `hold` keeps the memory alive until
  /// fn has run.
  template <class F>
  void run_when_ready(detail::BufferHold hold, F fn) const {
    const bool offload = static_cast<std::int64_t>(hold.memory->size) >=
                         state_->client->options().async_transfer_threshold_bytes;
    E* executor = &state_->client->executor();
    Future<void> ready = hold.ready;
    ready.on_ready([memory = std::move(hold.memory), fn = std::move(fn), offload,
                    executor](const Status& status) mutable {
      if (offload && status.ok()) {
        executor->schedule([memory = std::move(memory), fn = std::move(fn)]() mutable {
          fn(Status(), *memory);
        });
      } else {
        fn(status, *memory);
      }
    });
  }

  std::unique_ptr<detail::BufferState<E>> state_;
};

}  // namespace pjrt_lite::cpu
