#pragma once
// LoadedExecutable: a compiled program loaded on CPU devices, run through PJRT's three doors.
// The members that run or inspect the program, and Client::compile, which makes one from a
// graph or from StableHLO text, are defined in detail/executable_impl.hpp: included at the end
// of this header, or compiled once in pjrt_lite::cpu_kernels (PJRT_LITE_CPU_EXTERN_KERNELS),
// so that a translation unit linking that library parses neither the compiler nor the kernels.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/buffer.hpp"
#include "pjrt_lite/backends/cpu/client.hpp"
#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/backends/cpu/detail/rendezvous.hpp"
#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/future.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/sharding.hpp"

namespace pjrt_lite::inline v0_1::cpu {

namespace detail {
class Program;
struct RunState;
}  // namespace detail

/// A program compiled for the CPU and loaded on devices. Move-only. execute* are thread-safe
/// and may run concurrently on one executable; each execution has its own arena.
template <class E>
class LoadedExecutable {
 public:
  using loaded_executable_concept = loaded_executable_tag;
  using buffer_type = Buffer<E>;
  using device_type = Device<E>;

  /// `devices`: this process's devices of the grid, in the order of their participants;
  /// `rendezvous`: where a grid that spans processes meets (made by Client::compile), or
  /// null to make one for a grid of this process's devices alone.
  LoadedExecutable(Client<E>* client, std::shared_ptr<const detail::Program> program, std::vector<Device<E>*> devices,
                   CompileOptions options, Graph source, std::shared_ptr<detail::Rendezvous> rendezvous = nullptr)
      : client_(client), program_(std::move(program)), devices_(std::move(devices)), options_(std::move(options)),
        source_(std::move(source)), rendezvous_(std::move(rendezvous)) {
    // The parameters' and outputs' shapes in the layouts the options name (Client::compile
    // checked them); the program itself computes on row-major arrays.
    for (std::size_t i = 0; i < source_.parameters().size(); ++i) {
      const Shape& s = source_.shape(source_.parameters()[i]);
      parameter_shapes_.push_back(i < options_.argument_layouts.size()
                                      ? with_minor_to_major(s, options_.argument_layouts[i]).value()
                                      : s.with_default_layout());
    }
    for (std::size_t j = 0; j < source_.outputs().size(); ++j) {
      const Shape& s = source_.shape(source_.outputs()[j]);
      output_shapes_.push_back(j < options_.result_layouts.size()
                                   ? with_minor_to_major(s, options_.result_layouts[j]).value()
                                   : s.with_default_layout());
    }
    // A grid on this process's devices alone meets here; a grid on no device of this
    // process runs nothing here.
    if (!rendezvous_ && options_.num_replicas * options_.num_partitions > 1 &&
        devices_.size() == static_cast<std::size_t>(options_.num_replicas * options_.num_partitions))
      rendezvous_ = std::make_shared<detail::Rendezvous>(options_.num_replicas, options_.num_partitions,
                                                         std::chrono::milliseconds(options_.collective_timeout_ms),
                                                         channel_bytes(*program_));
  }
  // Moves are not thread-safe (nothing may use either executable meanwhile).
  LoadedExecutable(LoadedExecutable&& other) noexcept
      : client_(other.client_), program_(std::move(other.program_)), devices_(std::move(other.devices_)),
        options_(std::move(other.options_)), source_(std::move(other.source_)),
        parameter_shapes_(std::move(other.parameter_shapes_)), output_shapes_(std::move(other.output_shapes_)),
        parameter_shardings_(std::move(other.parameter_shardings_)),
        output_shardings_(std::move(other.output_shardings_)), gathered_ops_(std::move(other.gathered_ops_)),
        rendezvous_(std::move(other.rendezvous_)), deleted_(other.is_deleted()) {}
  LoadedExecutable& operator=(LoadedExecutable&& other) noexcept {
    client_ = other.client_;
    program_ = std::move(other.program_);
    devices_ = std::move(other.devices_);
    options_ = std::move(other.options_);
    source_ = std::move(other.source_);
    parameter_shapes_ = std::move(other.parameter_shapes_);
    output_shapes_ = std::move(other.output_shapes_);
    parameter_shardings_ = std::move(other.parameter_shardings_);
    output_shardings_ = std::move(other.output_shardings_);
    gathered_ops_ = std::move(other.gathered_ops_);
    rendezvous_ = std::move(other.rendezvous_);
    deleted_.store(other.is_deleted(), std::memory_order_relaxed);
    return *this;
  }

  [[nodiscard]] std::string_view name() const { return source_.name(); }
  /// The devices of this process that run the program, in the order of their participants
  /// (replica-major); for a grid that spans processes, the others' devices are not listed.
  [[nodiscard]] std::span<Device<E>* const> addressable_devices() const { return devices_; }
  /// The participant (replica * num_partitions + partition) that addressable_devices()[i]
  /// runs.
  [[nodiscard]] int participant_of(std::size_t i) const {
    return rendezvous_ ? rendezvous_->local_participants()[i] : 0;
  }
  [[nodiscard]] Client<E>* client() const { return client_; }
  [[nodiscard]] const CompileOptions& compile_options() const { return options_; }

  // ---- Introspection
  /// The parameters' and outputs' shapes, in the layouts the executable takes and makes
  /// (CompileOptions::argument_layouts and result_layouts; row-major by default).
  [[nodiscard]] std::span<const Shape> parameter_shapes() const;
  [[nodiscard]] std::span<const Shape> output_shapes() const;
  /// Per parameter and per output, its layout from minor to major (PJRT's
  /// GetParameterLayouts and GetOutputLayouts).
  [[nodiscard]] std::vector<std::vector<std::int64_t>> parameter_layouts() const {
    std::vector<std::vector<std::int64_t>> out;
    for (const Shape& s : parameter_shapes_) out.push_back(minor_to_major(s));
    return out;
  }
  [[nodiscard]] std::vector<std::vector<std::int64_t>> output_layouts() const {
    std::vector<std::vector<std::int64_t>> out;
    for (const Shape& s : output_shapes_) out.push_back(minor_to_major(s));
    return out;
  }
  /// Per parameter and per output of a program Client::compile partitioned from the
  /// shardings of its StableHLO text (PJRT's GetParameterShardings and GetOutputShardings):
  /// how the global value splits into the parts each device takes and makes
  /// (kManual: each device's own). Empty when the program was not partitioned here
  /// (compiled from a Graph, or deserialized).
  [[nodiscard]] const std::vector<Sharding>& parameter_shardings() const { return parameter_shardings_; }
  [[nodiscard]] const std::vector<Sharding>& output_shardings() const { return output_shardings_; }
  /// The ops the partitioner ran whole on every device, gathering their split operands
  /// (transforms/spmd.hpp); empty when everything was partitioned natively.
  [[nodiscard]] const std::vector<std::string>& gathered_ops() const { return gathered_ops_; }
  [[nodiscard]] const CostAnalysis& cost_analysis() const;
  [[nodiscard]] const MemoryStats& memory_stats() const;
  /// The build of the kernels this executable runs (kernel_isa.hpp).
  [[nodiscard]] KernelIsa kernel_isa() const;
  /// The program after optimization, then the kernels it runs, one per line.
  [[nodiscard]] std::string optimized_program_text() const;
  /// The graph as given to compile (what serialize() records).
  [[nodiscard]] const Graph& source_graph() const { return source_; }
  /// The graph the kernels compute: the source after simplification.
  [[nodiscard]] const Graph& optimized_graph() const;
  /// The kernels an execution runs, in order, as lines of the optimized program.
  [[nodiscard]] std::vector<std::string_view> kernel_names() const;
  /// For each node of optimized_graph(), the index of the kernel that computes it, or -1:
  /// nodes sharing a fused kernel are one fusion group.
  [[nodiscard]] std::span<const std::int32_t> node_kernels() const;
  /// For each parameter, the output a donated argument's memory may become, or -1.
  [[nodiscard]] std::span<const std::int32_t> donation_targets() const;
  /// For each output, the kind of memory space it lands in ("device", "pinned_host", ...):
  /// CompileOptions::output_memory_kinds, "device" where it names none (PJRT's
  /// GetOutputMemoryKinds).
  [[nodiscard]] std::vector<std::string_view> output_memory_kinds() const;
  /// For each parameter, the kind of memory space its argument must be in
  /// (CompileOptions::argument_memory_kinds), or "" where any memory space of the device will
  /// do.
  [[nodiscard]] std::vector<std::string_view> parameter_memory_kinds() const {
    std::vector<std::string_view> kinds;
    for (std::size_t i = 0; i < parameter_shapes_.size(); ++i)
      kinds.push_back(i < options_.argument_memory_kinds.size() ? std::string_view(options_.argument_memory_kinds[i])
                                                                : std::string_view());
    return kinds;
  }

  /// The source graph and compile options as version-tagged, checksummed bytes, which
  /// Client::deserialize_executable turns back into an executable (by compiling again).
  [[nodiscard]] std::vector<std::byte> serialize() const;

  /// Marks the executable unusable; executions in flight finish. Thread-safe, also while
  /// other threads execute it.
  void delete_executable() { deleted_.store(true, std::memory_order_release); }
  [[nodiscard]] bool is_deleted() const { return deleted_.load(std::memory_order_acquire); }

  /// Runs on every addressable device, `per_device_args[d]` on addressable_devices()[d]. All
  /// devices or none: every device's execution is prepared before any starts, and an error on
  /// any device lets every argument go as it was.
  ///
  /// Compiled for a grid of several participants (CompileOptions::num_replicas x
  /// num_partitions), device d runs participant participant_of(d) (replica-major; d itself
  /// when the grid is on this process's devices alone): every participant of this process
  /// runs at once, on threads of the executable, and the call returns when all are done,
  /// with their outputs ready. A grid that spans processes runs when every process that
  /// hosts participants calls execute. A collective whose
  /// participants do not all arrive within CompileOptions::collective_timeout_ms fails the
  /// execute with DEADLINE_EXCEEDED; participants whose control flow takes them to different
  /// collectives fail it with FAILED_PRECONDITION. One such execute runs at a time per
  /// executable; execute_sharded on each device from threads of the caller's own meets in the
  /// same way.
  [[nodiscard]] StatusOr<std::vector<std::vector<Buffer<E>>>> execute(
      std::span<const std::vector<Buffer<E>*>> per_device_args, const ExecuteOptions& options = {});

  /// For an executable loaded on one device: runs there, as
  /// `execute_sharded(args, addressable_devices()[0])` (Python PJRT's execute), and returns
  /// that device's outputs. INVALID_ARGUMENT for an executable loaded on several devices.
  [[nodiscard]] StatusOr<std::vector<Buffer<E>>> execute(std::span<Buffer<E>* const> args,
                                                         const ExecuteOptions& options = {}) {
    if (devices_.size() != 1)
      return invalid_argument_error(str_cat("execute: the executable is loaded on ", devices_.size(),
                                            " devices; give one argument list per device, or use "
                                            "execute_sharded(args, device)"));
    return execute_sharded(args, devices_[0], options);
  }
  /// As above, with the arguments listed in place: `exe.execute({&x, &y})`.
  [[nodiscard]] StatusOr<std::vector<Buffer<E>>> execute(std::initializer_list<Buffer<E>*> args,
                                                         const ExecuteOptions& options = {}) {
    return execute(std::span<Buffer<E>* const>(args.begin(), args.size()), options);
  }

  /// Runs on one of the addressable devices.
  [[nodiscard]] StatusOr<std::vector<Buffer<E>>> execute_sharded(std::span<Buffer<E>* const> args, Device<E>* device,
                                                                 const ExecuteOptions& options = {}) {
    std::vector<Buffer<E>> results;
    PJRT_LITE_RETURN_IF_ERROR(execute_sharded(args, device, options, results));
    return results;
  }
  /// As above, with the arguments listed in place: `exe.execute_sharded({&x, &y}, device)`.
  [[nodiscard]] StatusOr<std::vector<Buffer<E>>> execute_sharded(std::initializer_list<Buffer<E>*> args,
                                                                 Device<E>* device, const ExecuteOptions& options = {}) {
    return execute_sharded(std::span<Buffer<E>* const>(args.begin(), args.size()), device, options);
  }
  /// The same, writing into `results` (cleared first). Reusing one vector across calls keeps
  /// a control loop free of allocations for the result list, and, unless an argument is one
  /// of its buffers, lets the new outputs take the memory of the previous ones (still in
  /// cache) as they are allocated.
  Status execute_sharded(std::span<Buffer<E>* const> args, Device<E>* device, const ExecuteOptions& options,
                         std::vector<Buffer<E>>& results);

  /// Runs on any device of the client; the executable must have been compiled for one device.
  [[nodiscard]] StatusOr<std::vector<Buffer<E>>> execute_portable(std::span<Buffer<E>* const> args, Device<E>* device,
                                                                  const ExecuteOptions& options = {});
  /// As above, with the arguments listed in place: `exe.execute_portable({&x, &y}, device)`.
  [[nodiscard]] StatusOr<std::vector<Buffer<E>>> execute_portable(std::initializer_list<Buffer<E>*> args,
                                                                  Device<E>* device, const ExecuteOptions& options = {}) {
    return execute_portable(std::span<Buffer<E>* const>(args.begin(), args.size()), device, options);
  }

 private:
  Status validate(std::span<Buffer<E>* const> args, Device<E>* device, const ExecuteOptions& options) const;
  static bool donated(const ExecuteOptions& options, std::size_t i);
  Status launch(std::span<Buffer<E>* const> args, Device<E>* device, const ExecuteOptions& options,
                std::vector<Buffer<E>>& results);
  /// An execution made ready to start, of validated arguments: every argument held, every
  /// donated argument reserved, every output allocated. start() commits and runs it;
  /// cancel() lets every argument go as it was.
  StatusOr<std::unique_ptr<detail::RunState>> prepare(std::span<Buffer<E>* const> args, const ExecuteOptions& options);
  void cancel(std::unique_ptr<detail::RunState> state, std::span<Buffer<E>* const> args, const ExecuteOptions& options);
  /// Commits a prepared execution's donations and runs it (on the caller, or handed to a
  /// worker); nothing fails from here on, errors reach the outputs' ready futures.
  void start(std::unique_ptr<detail::RunState> state, std::span<Buffer<E>* const> args, Device<E>* device,
             const ExecuteOptions& options, std::vector<Buffer<E>>& results);

  /// Programs below both limits run on the caller when their arguments are ready: handing
  /// them to a worker would cost more than running them.
  static constexpr std::int64_t kInlineBytes = 1 << 20;
  static constexpr double kInlineFlops = 1 << 20;

  /// Runs a prepared execution on the caller as participant `participant` of the grid, and
  /// returns once it is done: the first error of its collectives, if any.
  Status run_participant(std::unique_ptr<detail::RunState> state, std::span<Buffer<E>* const> args,
                         Device<E>* device, const ExecuteOptions& options, std::vector<Buffer<E>>& results,
                         int participant);

  /// The program's per-channel message sizes (defined with the program, in executable_impl.hpp).
  static std::span<const std::pair<std::int64_t, std::int64_t>> channel_bytes(const detail::Program& program);
  /// The memory space output j lands in on `device`.
  MemorySpace<E>* output_space(Device<E>* device, std::size_t j) const;

  Client<E>* client_;
  std::shared_ptr<const detail::Program> program_;
  std::vector<Device<E>*> devices_;
  CompileOptions options_;
  Graph source_;
  std::vector<Shape> parameter_shapes_, output_shapes_;
  // Set by Client::compile of a partitioned program.
  friend class Client<E>;
  std::vector<Sharding> parameter_shardings_, output_shardings_;
  std::vector<std::string> gathered_ops_;
  /// Where the participants of a grid meet; null for an executable of one participant.
  std::shared_ptr<detail::Rendezvous> rendezvous_;
  std::atomic<bool> deleted_{false};
};

}  // namespace pjrt_lite::cpu

#if defined(PJRT_LITE_CPU_EXTERN_KERNELS)
// Compiled once, in the translation unit that includes <pjrt_lite/cpu_instantiate.hpp>.
namespace pjrt_lite::inline v0_1::cpu {
extern template class Client<ThreadPool>;
extern template class Client<InlineExecutor>;
extern template class LoadedExecutable<ThreadPool>;
extern template class LoadedExecutable<InlineExecutor>;
}  // namespace pjrt_lite::cpu
#else
#include "pjrt_lite/backends/cpu/detail/executable_impl.hpp"  // IWYU pragma: export
#endif
