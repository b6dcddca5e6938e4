#pragma once
// The CPU client: devices in host memory, buffers, and asynchronous transfers on an executor
// chosen at compile time.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pjrt_lite/backends/cpu/buffer.hpp"
#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/backends/cpu/device.hpp"
#include "pjrt_lite/backends/cpu/forward.hpp"
#include "pjrt_lite/backends/cpu/observer.hpp"
#include "pjrt_lite/backends/cpu/thread_pool.hpp"
#include "pjrt_lite/backends/cpu/transport.hpp"
#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/strided_copy.hpp"
#include "pjrt_lite/future.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu {

struct ClientOptions {
  /// How many devices the client shows (per process, for a distributed client); each is a
  /// slice of the same host (1 to 1024).
  int device_count = 1;
  /// Worker threads of the executor; 0 means one per hardware thread. Ignored by
  /// InlineExecutor.
  int thread_count = 0;
  int process_index = 0;
  /// Host transfers of at least this many bytes run on the executor; smaller ones run inline,
  /// where a thread hop would cost more than the copy.
  std::int64_t async_transfer_threshold_bytes = 64 * 1024;
  /// Bytes of released buffer memory the client keeps for reuse, so that a steady-state loop
  /// of executions allocates nothing (an upper bound, nothing is reserved). 0 turns the
  /// memory pool off.
  std::int64_t memory_pool_bytes = std::int64_t{256} << 20;
  /// How many compiled programs the compile cache keeps; past that the least recently used
  /// one is dropped (executables already made from it keep working). 0 turns the cache off.
  std::int64_t compile_cache_capacity = 256;
  /// The other processes, for one process of a distributed client (transport.hpp;
  /// pjrt_lite/mpi.hpp makes one over MPI): process p's devices have ids p * device_count
  /// .. (p + 1) * device_count - 1, every process has device_count of them, devices() lists
  /// all and addressable_devices() this process's, and process_index is the transport's.
  /// Null: a client of one process.
  std::shared_ptr<Transport> transport = nullptr;
};

/// A CPU runtime. Create with Client<E>::create(options); it owns its devices, memory spaces
/// and executor. Buffers must not outlive it. Destroying it finishes the transfers in flight.
/// All methods are thread-safe.
template <class E>
class Client {
 public:
  using client_concept = client_tag;
  using executor_type = E;
  using device_type = Device<E>;
  using memory_space_type = MemorySpace<E>;
  using buffer_type = Buffer<E>;
  using executable_type = LoadedExecutable<E>;

  /// A client with `options.device_count` devices, each with the memory spaces of
  /// kMemoryKinds. INVALID_ARGUMENT for counts out of range.
  static StatusOr<std::unique_ptr<Client>> create(const ClientOptions& options = {}) {
    if (options.device_count < 1 || options.device_count > 1024)
      return invalid_argument_error(str_cat("ClientOptions.device_count must be in [1, 1024], got ",
                                            options.device_count));
    if (options.thread_count < 0 || options.thread_count > 4096)
      return invalid_argument_error(str_cat("ClientOptions.thread_count must be in [0, 4096], got ",
                                            options.thread_count));
    if (options.process_index < 0)
      return invalid_argument_error(str_cat("ClientOptions.process_index must be >= 0, got ",
                                            options.process_index));
    if (options.transport) {
      const int count = options.transport->process_count(), index = options.transport->process_index();
      if (count < 1 || index < 0 || index >= count)
        return invalid_argument_error(str_cat("ClientOptions.transport: process ", index, " of ", count));
      if (options.process_index != 0 && options.process_index != index)
        return invalid_argument_error(str_cat("ClientOptions.process_index is ", options.process_index,
                                              " but the transport's process index is ", index));
      if (static_cast<std::int64_t>(count) * options.device_count > (std::int64_t{1} << 20))
        return invalid_argument_error(str_cat("ClientOptions: ", count, " processes of ", options.device_count,
                                              " devices are more than 2^20 devices"));
    }
    if (options.async_transfer_threshold_bytes < 0)
      return invalid_argument_error("ClientOptions.async_transfer_threshold_bytes must be >= 0");
    if (options.memory_pool_bytes < 0)
      return invalid_argument_error("ClientOptions.memory_pool_bytes must be >= 0");
    if (options.compile_cache_capacity < 0)
      return invalid_argument_error(str_cat("ClientOptions.compile_cache_capacity must be >= 0, got ",
                                            options.compile_cache_capacity));
    return std::unique_ptr<Client>(new Client(options));
  }

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  /// Frees the pooled memory and buffer states now; blocks still referenced (e.g. by an
  /// ExternalReference) are freed when released. The executor then finishes its tasks.
  ~Client() {
    memory_pool_->close();
    buffer_state_pool_->close();
  }

  [[nodiscard]] std::string_view platform_name() const { return "cpu"; }
  [[nodiscard]] std::string_view platform_version() const { return "pjrt_lite cpu (Eigen)"; }
  /// This process's index among the processes of a distributed client; 0 otherwise.
  [[nodiscard]] int process_index() const { return process_index_; }
  /// How many processes the client spans (1 without a transport).
  [[nodiscard]] int process_count() const { return options_.transport ? options_.transport->process_count() : 1; }
  /// Every device, this process's and (distributed) the others', in id order.
  [[nodiscard]] int device_count() const { return static_cast<int>(device_ptrs_.size()); }
  [[nodiscard]] int addressable_device_count() const { return static_cast<int>(addressable_ptrs_.size()); }
  [[nodiscard]] std::span<Device<E>* const> devices() const { return device_ptrs_; }
  /// This process's devices, in id order.
  [[nodiscard]] std::span<Device<E>* const> addressable_devices() const { return addressable_ptrs_; }
  [[nodiscard]] std::span<MemorySpace<E>* const> memory_spaces() const { return memory_space_ptrs_; }
  [[nodiscard]] const ClientOptions& options() const { return options_; }
  [[nodiscard]] E& executor() { return executor_; }

  /// Attaches `observer` (null detaches) to hear of every compile, transfer, execution and
  /// kernel from now on. It must outlive the work it observes: detach it only once every
  /// execution and transfer started under it is done. Thread-safe.
  void set_observer(Observer* observer) { observer_.store(observer, std::memory_order_release); }
  /// The attached observer, or null. Thread-safe.
  [[nodiscard]] Observer* observer() const { return observer_.load(std::memory_order_acquire); }

  /// The device with `id` (of any process), or INVALID_ARGUMENT.
  [[nodiscard]] StatusOr<Device<E>*> lookup_device(int id) const {
    if (id < 0 || id >= device_count())
      return invalid_argument_error(str_cat("no device with id ", id, " (the client has ",
                                            device_count(), " devices, ids 0..",
                                            device_count() - 1, ")"));
    return device_ptrs_[static_cast<std::size_t>(id)];
  }
  /// This process's device with `local_hardware_id`, or INVALID_ARGUMENT.
  [[nodiscard]] StatusOr<Device<E>*> lookup_addressable_device(int local_hardware_id) const {
    if (local_hardware_id < 0 || local_hardware_id >= addressable_device_count())
      return invalid_argument_error(str_cat("no addressable device with local hardware id ", local_hardware_id,
                                            " (this process has ", addressable_device_count(), ")"));
    return addressable_ptrs_[static_cast<std::size_t>(local_hardware_id)];
  }
  /// The transport to the other processes (null for a client of one process).
  [[nodiscard]] const std::shared_ptr<Transport>& transport() const { return options_.transport; }

  /// PJRT's default device assignment for a grid of num_replicas x num_partitions: participant
  /// (r, p) on device r * num_partitions + p. INVALID_ARGUMENT when the grid has more
  /// participants than the client has devices. Thread-safe.
  [[nodiscard]] StatusOr<DeviceAssignment> get_default_device_assignment(int num_replicas, int num_partitions) const {
    if (num_replicas < 1 || num_partitions < 1 || num_replicas * num_partitions > device_count())
      return invalid_argument_error(str_cat("get_default_device_assignment: a grid of ", num_replicas, " x ",
                                            num_partitions, " does not fit the client's ", device_count(),
                                            " devices (ClientOptions::device_count)"));
    DeviceAssignment a{num_replicas, num_partitions, {}};
    for (int k = 0; k < num_replicas * num_partitions; ++k) a.device_ids.push_back(k);
    return a;
  }

  /// A buffer of `dtype` and `dims` in `memory_space` (null: the first device's default) from
  /// host `data`, which holds the array densely in row-major order, or as `byte_strides` say
  /// (a transposing copy). `semantics` says how long the caller keeps `data` valid and
  /// unchanged; `on_done` (may be empty) runs when the runtime no longer needs it: before
  /// this returns for kImmutableOnlyDuringCall, after the copy for
  /// kImmutableUntilTransferCompletes, when the buffer's memory is released for the
  /// zero-copy semantics if the data could be aliased (dense, default layout, aligned to
  /// kMinBufferAlignment), after the copy otherwise. on_done runs exactly once, also when
  /// this returns an error.
  [[nodiscard]] StatusOr<Buffer<E>> buffer_from_host_buffer(
      std::span<const std::byte> data, DType dtype, std::span<const std::int64_t> dims,
      std::optional<std::span<const std::int64_t>> byte_strides, HostBufferSemantics semantics,
      UniqueFunction<void()> on_done, MemorySpace<E>* memory_space) {
    // on_done is owed exactly once, on every path: let a guard pay it unless a path takes it.
    struct OnDoneGuard {
      UniqueFunction<void()> fn;
      ~OnDoneGuard() {
        if (fn) fn();
      }
    } guard{std::move(on_done)};

    PJRT_LITE_ASSIGN_OR_RETURN(MemorySpace<E>* target, resolve("buffer_from_host_buffer", memory_space));
    StatusOr<Shape> shape_or = Shape::make(dtype, dims);
    if (!shape_or.ok()) return shape_or.status().with_context("buffer_from_host_buffer");
    Shape shape = std::move(shape_or).value();
    const auto data_size = static_cast<std::int64_t>(data.size());
    if (data.data() == nullptr && shape.byte_size() > 0)
      return invalid_argument_error(str_cat("buffer_from_host_buffer: data is null for ", shape));

    bool dense = true;
    if (byte_strides) {
      StatusOr<std::int64_t> extent = check_byte_strides(shape, *byte_strides, data_size);
      if (!extent.ok()) return extent.status().with_context("buffer_from_host_buffer");
      std::vector<std::int64_t> natural =
          dense_byte_strides(shape.dims(), static_cast<std::int64_t>(byte_size(dtype)));
      for (std::int64_t d = 0; d < shape.rank(); ++d)
        if (shape.dim(d) > 1 && (*byte_strides)[d] != natural[d]) dense = false;
    } else if (data_size != shape.byte_size()) {
      return invalid_argument_error(str_cat("buffer_from_host_buffer: ", data_size,
                                            " bytes of data for ", shape, ", which needs ",
                                            shape.byte_size()));
    }
    const bool zero_copy = semantics == HostBufferSemantics::kImmutableZeroCopy ||
                           semantics == HostBufferSemantics::kMutableZeroCopy;
    const bool aligned = reinterpret_cast<std::uintptr_t>(data.data()) % kMinBufferAlignment == 0;

    if (zero_copy && dense && aligned) {
      // Writable only if the caller said so.
      detail::MemoryRef memory = detail::DeviceMemory::wrap(
          const_cast<std::byte*>(data.data()), static_cast<std::size_t>(shape.byte_size()),
          semantics == HostBufferSemantics::kMutableZeroCopy, std::move(guard.fn));
      if (memory == nullptr)
        return resource_exhausted_error(
            str_cat("buffer_from_host_buffer: out of memory for the header of a buffer of ", shape));
      return detail::BufferAccess::make(this, target, shape, std::move(memory), make_ready_future());
    }

    detail::MemoryRef memory = allocate_memory(static_cast<std::size_t>(shape.byte_size()));
    if (memory == nullptr)
      return pjrt_lite::detail::allocation_error(str_cat("buffer_from_host_buffer: a buffer of ", shape),
                                                 static_cast<std::size_t>(shape.byte_size()));
    std::vector<std::int64_t> strides =
        byte_strides ? std::vector<std::int64_t>(byte_strides->begin(), byte_strides->end())
                     : dense_byte_strides(shape.dims(), static_cast<std::int64_t>(byte_size(dtype)));
    const bool offload = semantics != HostBufferSemantics::kImmutableOnlyDuringCall &&
                         shape.byte_size() >= options_.async_transfer_threshold_bytes;
    if (!offload) {
      detail::ObservedSpan span(observer(), SpanKind::kHostToDevice, "buffer_from_host_buffer", shape.byte_size());
      gather_strided(data.data(), shape.dims(), strides,
                     static_cast<std::int64_t>(byte_size(dtype)), memory->data);
      return detail::BufferAccess::make(this, target, shape, std::move(memory), make_ready_future());
    }
    auto [promise, ready] = make_promise<void>();
    executor_.schedule([src = data.data(), dims = std::vector<std::int64_t>(shape.dims().begin(), shape.dims().end()),
                        strides = std::move(strides), esize = static_cast<std::int64_t>(byte_size(dtype)),
                        memory, on_done = std::move(guard.fn), promise = std::move(promise),
                        observer = observer()]() mutable {
      {
        detail::ObservedSpan span(observer, SpanKind::kHostToDevice, "buffer_from_host_buffer",
                                  static_cast<std::int64_t>(memory->size));
        gather_strided(src, dims, strides, esize, memory->data);
      }
      if (on_done) on_done();  // before ready: whoever awaits the buffer may reuse the data
      promise.set_value();
    });
    return detail::BufferAccess::make(this, target, shape, std::move(memory), std::move(ready));
  }

  /// buffer_from_host_buffer with `nullptr` for the place, or none: the first device's default
  /// memory space. Without it a bare nullptr would match both the memory-space and the device
  /// overload.
  [[nodiscard]] StatusOr<Buffer<E>> buffer_from_host_buffer(
      std::span<const std::byte> data, DType dtype, std::span<const std::int64_t> dims,
      std::optional<std::span<const std::int64_t>> byte_strides, HostBufferSemantics semantics,
      UniqueFunction<void()> on_done = nullptr, std::nullptr_t = nullptr) {
    return buffer_from_host_buffer(data, dtype, dims, byte_strides, semantics, std::move(on_done),
                                   static_cast<MemorySpace<E>*>(nullptr));
  }

  /// buffer_from_host_buffer onto `device`'s default memory space.
  [[nodiscard]] StatusOr<Buffer<E>> buffer_from_host_buffer(
      std::span<const std::byte> data, DType dtype, std::span<const std::int64_t> dims,
      std::optional<std::span<const std::int64_t>> byte_strides, HostBufferSemantics semantics,
      UniqueFunction<void()> on_done, Device<E>* device) {
    MemorySpace<E>* memory_space = nullptr;
    if (device != nullptr) {
      if (device->client() != this) {
        if (on_done) on_done();
        return invalid_argument_error(str_cat("buffer_from_host_buffer: device ",
                                              device->debug_string(), " belongs to another client"));
      }
      StatusOr<MemorySpace<E>*> space = device->default_memory_space();
      if (!space.ok()) {
        if (on_done) on_done();
        return space.status().with_context("buffer_from_host_buffer");
      }
      memory_space = *space;
    }
    return buffer_from_host_buffer(data, dtype, dims, byte_strides, semantics, std::move(on_done),
                                   memory_space);
  }

  /// A typed shorthand: copies `values` (row-major `dims`) during the call onto `device`
  /// (null: the first device).
  template <Element T>
  [[nodiscard]] StatusOr<Buffer<E>> buffer_from_host_buffer(std::span<const T> values,
                                                            std::span<const std::int64_t> dims,
                                                            Device<E>* device = nullptr) {
    return buffer_from_host_buffer(std::as_bytes(values), dtype_of<T>, dims, std::nullopt,
                                   HostBufferSemantics::kImmutableOnlyDuringCall, nullptr, device);
  }

  /// A buffer holding a copy of `literal` in `memory_space` (null: the first device's default).
  [[nodiscard]] StatusOr<Buffer<E>> buffer_from_literal(const Literal& literal,
                                                        MemorySpace<E>* memory_space = nullptr) {
    if (!is_valid(literal.dtype()))
      return invalid_argument_error("buffer_from_literal: the literal has no valid shape");
    if (!literal.shape().has_default_layout()) {
      // Row-major strides of the literal's own layout: the copy transposes as it goes.
      const std::vector<std::int64_t> strides = literal.shape().byte_strides();
      return buffer_from_host_buffer(literal.bytes(), literal.dtype(), literal.dims(), strides,
                                     HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                     memory_space);
    }
    return buffer_from_host_buffer(literal.bytes(), literal.dtype(), literal.dims(), std::nullopt,
                                   HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                   memory_space);
  }

  /// A buffer of `shape` (its layout included) whose contents are undefined until written
  /// (e.g. by an execution).
  [[nodiscard]] StatusOr<Buffer<E>> create_uninitialized_buffer(const Shape& shape,
                                                                MemorySpace<E>* memory_space) {
    PJRT_LITE_ASSIGN_OR_RETURN(MemorySpace<E>* target, resolve("create_uninitialized_buffer", memory_space));
    // The shape's layout is the buffer's (an executable compiled with argument_layouts
    // takes such buffers).
    StatusOr<Shape> checked = Shape::make(shape.dtype(), shape.dims(), shape.major_to_minor());
    if (!checked.ok()) return checked.status().with_context("create_uninitialized_buffer");
    detail::MemoryRef memory = allocate_memory(static_cast<std::size_t>(checked->byte_size()));
    if (memory == nullptr)
      return pjrt_lite::detail::allocation_error(str_cat("create_uninitialized_buffer: a buffer of ", *checked),
                                                 static_cast<std::size_t>(checked->byte_size()));
    return detail::BufferAccess::make(this, target, *checked, std::move(memory), make_ready_future());
  }

  /// Compiles `graph` into an executable loaded on options.device_ids. Results are cached by
  /// the graph's fingerprint and the options, so compiling the same program again is a
  /// lookup; the cache keeps the ClientOptions::compile_cache_capacity most recently used
  /// programs. RESOURCE_EXHAUSTED, naming the size, when the program's temporaries cannot be
  /// allocated. Defined in backends/cpu/executable.hpp (included by pjrt_lite/cpu.hpp), which
  /// holds the kernels: only translation units that compile programs pay for them.
  [[nodiscard]] StatusOr<LoadedExecutable<E>> compile(const Graph& graph, const CompileOptions& options = {});

  /// Compiles the `@main` function of a StableHLO module (as `jax.jit(f).lower(x).as_text()`
  /// prints it) through the same path as a built graph; a module without @main may have one
  /// public function instead. `check.*` custom calls are dropped. INVALID_ARGUMENT
  /// "line:column: ..." for malformed text, UNIMPLEMENTED for ops the IR lacks. Defined in
  /// backends/cpu/executable.hpp; thread-safe.
  [[nodiscard]] StatusOr<LoadedExecutable<E>> compile(std::string_view stablehlo_text, const CompileOptions& options = {});

  /// compile for a StableHLO portable artifact's bytes (MLIR bytecode holding VHLO, as
  /// `stablehlo.serialize_portable_artifact` and jax.export write it; see
  /// stablehlo/bytecode.hpp), or for text given as bytes: the same path as the text overload,
  /// which tells the two apart by bytecode's magic number. Thread-safe.
  [[nodiscard]] StatusOr<LoadedExecutable<E>> compile(std::span<const std::byte> stablehlo_bytes,
                                                      const CompileOptions& options = {}) {
    return compile(std::string_view(reinterpret_cast<const char*>(stablehlo_bytes.data()), stablehlo_bytes.size()),
                   options);
  }

  /// Rebuilds an executable from LoadedExecutable::serialize() bytes. DATA_LOSS or
  /// INVALID_ARGUMENT for a corrupt, truncated or foreign blob.
  [[nodiscard]] StatusOr<LoadedExecutable<E>> deserialize_executable(std::span<const std::byte> bytes);

  /// How many compiles the cache answered, and how many it did not (compile_cache_statistics()
  /// has these and more).
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> compile_cache_stats() const {
    const CacheStats stats = compile_cache_statistics();
    return {stats.hits, stats.misses};
  }
  /// The compile cache's hits, misses, evictions, size and capacity. Thread-safe.
  [[nodiscard]] CacheStats compile_cache_statistics() const {
    std::lock_guard lock(cache_mu_);
    CacheStats stats = cache_stats_;
    stats.size = static_cast<std::int64_t>(cache_.size());
    stats.capacity = options_.compile_cache_capacity;
    return stats;
  }
  /// Empties the compile cache (the statistics' counters stay). Executables already compiled
  /// keep working. Thread-safe.
  void clear_compile_cache() {
    std::list<CacheEntry> dropped;  // freed after the lock is released
    {
      std::lock_guard lock(cache_mu_);
      dropped.swap(cache_);
      cache_index_.clear();
    }
  }

 private:
  friend class LoadedExecutable<E>;
  friend class Buffer<E>;

  explicit Client(const ClientOptions& options)
      : options_(options), process_index_(options.transport ? options.transport->process_index() : options.process_index),
        memory_pool_(std::make_shared<detail::MemoryPool>(
            static_cast<std::size_t>(options.memory_pool_bytes))),
        buffer_state_pool_(std::make_shared<detail::BufferStatePool<E>>()),
        executor_(options.thread_count) {
    DeviceAttributeMap common = {
        {"hardware_threads", static_cast<std::int64_t>(std::thread::hardware_concurrency())},
        {"executor_threads", static_cast<std::int64_t>(executor_.num_threads())},
        {"simd", std::string(Eigen::SimdInstructionSetsInUse())},
    };
    // A distributed client: every process's devices, process p's from id p * device_count;
    // only this process's have memory spaces.
    const int processes = options.transport ? options.transport->process_count() : 1;
    for (int id = 0; id < processes * options.device_count; ++id) {
      const int process = options.transport ? id / options.device_count : process_index_;
      const int local = options.transport ? id % options.device_count : id;
      DeviceAttributeMap attributes = common;
      attributes["coords"] = std::vector<std::int64_t>{id};
      devices_.push_back(std::make_unique<Device<E>>(this, id, process, std::move(attributes), local,
                                                     process == process_index_));
      Device<E>* device = devices_.back().get();
      device_ptrs_.push_back(device);
      if (process != process_index_) continue;
      addressable_ptrs_.push_back(device);
      for (int kind = 0; kind < static_cast<int>(std::size(kMemoryKinds)); ++kind) {
        const int id = static_cast<int>(memory_spaces_.size());
        memory_spaces_.push_back(std::make_unique<MemorySpace<E>>(this, id, kind, device));
        memory_space_ptrs_.push_back(memory_spaces_.back().get());
        device->memory_spaces_.push_back(memory_spaces_.back().get());
      }
    }
  }

  /// `bytes` of uninitialized buffer memory, recycled from the pool when it can be.
  /// Thread-safe.
  detail::MemoryRef allocate_memory(std::size_t bytes) {
    return detail::MemoryPool::allocate(memory_pool_, bytes);
  }

  StatusOr<MemorySpace<E>*> resolve(std::string_view what, MemorySpace<E>* memory_space) const {
    if (memory_space == nullptr) return memory_space_ptrs_.front();
    if (memory_space->client() != this)
      return invalid_argument_error(str_cat(what, ": memory space ", memory_space->debug_string(),
                                            " belongs to another client"));
    return memory_space;
  }

  ClientOptions options_;
  int process_index_;
  // Shared with every live pooled block and buffer state, which may outlive the client (an
  // ExternalReference, a transfer still in flight) and must find their pool still there.
  std::shared_ptr<detail::MemoryPool> memory_pool_;
  std::shared_ptr<detail::BufferStatePool<E>> buffer_state_pool_;
  // Destroyed in reverse order: the executor first, so that transfers in flight finish while
  // the devices and memory spaces they name still exist.
  std::vector<std::unique_ptr<Device<E>>> devices_;
  std::vector<Device<E>*> device_ptrs_;
  std::vector<Device<E>*> addressable_ptrs_;
  std::vector<std::unique_ptr<MemorySpace<E>>> memory_spaces_;
  std::vector<MemorySpace<E>*> memory_space_ptrs_;
  // The compile cache, least recently used last; the source graph is kept to rule out
  // fingerprint collisions. Used by compile (executable.hpp).
  struct CacheEntry {
    std::uint64_t key;  // the source's fingerprint
    Graph source;
    CompileOptions options;
    std::shared_ptr<const detail::Program> program;
  };
  using CacheList = std::list<CacheEntry>;

  /// The cached program compiled from `graph` with `options` (fingerprint `key`), now the
  /// most recently used, or null; counts a hit or a miss.
  std::shared_ptr<const detail::Program> cache_lookup(std::uint64_t key, const Graph& graph,
                                                      const CompileOptions& options) {
    std::lock_guard lock(cache_mu_);
    auto [first, last] = cache_index_.equal_range(key);
    for (auto it = first; it != last; ++it) {
      const typename CacheList::iterator entry = it->second;
      if (entry->options == options && entry->source == graph) {
        cache_.splice(cache_.begin(), cache_, entry);
        ++cache_stats_.hits;
        return entry->program;
      }
    }
    ++cache_stats_.misses;
    return nullptr;
  }

  /// Keeps `program` as the most recently used entry for (`graph`, `options`), dropping the
  /// least recently used entries beyond the capacity. Another thread may have cached the
  /// same program meanwhile: then that entry stays and this one is not added.
  void cache_insert(std::uint64_t key, const Graph& graph, const CompileOptions& options,
                    std::shared_ptr<const detail::Program> program) {
    const auto capacity = static_cast<std::size_t>(options_.compile_cache_capacity);
    if (capacity == 0) return;
    CacheList evicted;  // freed after the lock is released
    std::lock_guard lock(cache_mu_);
    auto [first, last] = cache_index_.equal_range(key);
    for (auto it = first; it != last; ++it)
      if (it->second->options == options && it->second->source == graph) return;
    cache_.push_front(CacheEntry{key, graph, options, std::move(program)});
    cache_index_.emplace(key, cache_.begin());
    while (cache_.size() > capacity) {
      const typename CacheList::iterator oldest = std::prev(cache_.end());
      auto [from, to] = cache_index_.equal_range(oldest->key);
      for (auto it = from; it != to; ++it)
        if (it->second == oldest) {
          cache_index_.erase(it);
          break;
        }
      evicted.splice(evicted.begin(), cache_, oldest);
      ++cache_stats_.evictions;
    }
  }

  /// Makes `program`'s first run state now, its arena included, so that a program whose
  /// temporaries do not fit in memory fails to compile (RESOURCE_EXHAUSTED naming the size)
  /// rather than to run; the program keeps the state for its first execution. Used by compile.
  template <class Program>
  static Status prepare_first_run(const Program& program) {
    auto state = program.acquire_state();
    if (program.arena_bytes > 0 && state->arena == nullptr)
      return pjrt_lite::detail::allocation_error("the arena of the program's temporaries and kernel scratch",
                                                 static_cast<std::size_t>(program.arena_bytes));
    program.release_state(std::move(state));
    return ok_status();
  }

  mutable std::mutex cache_mu_;
  CacheList cache_;  // most recently used first
  std::unordered_multimap<std::uint64_t, typename CacheList::iterator> cache_index_;  // by key
  CacheStats cache_stats_;  // hits, misses and evictions
  std::atomic<Observer*> observer_{nullptr};
  E executor_;
};

}  // namespace pjrt_lite::cpu
