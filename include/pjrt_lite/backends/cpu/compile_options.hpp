#pragma once
// Options of compiling a program for the CPU, and what the compiled program costs.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pjrt_lite/backends/cpu/kernel_isa.hpp"

namespace pjrt_lite::inline v0_1::cpu {

/// PJRT's DeviceAssignment: the device that runs each (replica, partition) of a program
/// compiled for num_replicas x num_partitions participants.
struct DeviceAssignment {
  int num_replicas = 1;
  int num_partitions = 1;
  /// Device ids, replica-major: participant (r, p) runs on device_ids[r * num_partitions + p].
  std::vector<int> device_ids = {0};

  [[nodiscard]] int operator()(int replica, int partition) const {
    return device_ids[static_cast<std::size_t>(replica * num_partitions + partition)];
  }
  friend bool operator==(const DeviceAssignment&, const DeviceAssignment&) = default;
};

/// How to compile. Part of the compile cache key.
struct CompileOptions {
  /// Run the graph simplifications (dead code, common subexpressions, constant folding,
  /// algebraic identities) before lowering.
  bool optimize = true;
  /// Fuse element-wise ops into single-pass loops; off runs each op as its own loop.
  bool fuse = true;
  /// The devices the executable is loaded on (ids); execute() takes one argument list each.
  std::vector<int> device_ids = {0};
  /// Which build of the kernels to run (kernel_isa.hpp): by default the best one that this
  /// process has and this CPU runs. Asking for a build the process lacks or the CPU cannot
  /// run fails the compile. Not serialized: a deserialized executable gets the best kernels of
  /// the machine that loads it.
  KernelIsa kernel_isa = KernelIsa::kBest;
  /// The grid the program runs on, as PJRT's: num_replicas x num_partitions participants,
  /// each on its own device, whose replica_id, partition_id and collectives see the grid.
  /// With more than one participant the executable is loaded on `device_assignment`'s
  /// devices; without one, on device_ids when it lists one device per participant, else on
  /// the client's default assignment (Client::get_default_device_assignment).
  int num_replicas = 1;
  int num_partitions = 1;
  std::optional<DeviceAssignment> device_assignment = std::nullopt;
  /// How long a participant waits at a collective for the others, a recv for its message and
  /// an infeed for an entry, before the execute fails with DEADLINE_EXCEEDED.
  std::int64_t collective_timeout_ms = 30000;
  /// Per output, the kind of memory space it lands in ("device", "pinned_host",
  /// "unpinned_host"; empty: "device"), as the `mhlo.memory_kind` of a StableHLO result or an
  /// annotate_device_placement asks (Client::compile of text fills it in from the module).
  /// Empty list: every output in device memory. A kind the devices lack, or a list of another
  /// length than the outputs, fails the compile.
  std::vector<std::string> output_memory_kinds = {};
  /// Per parameter, the kind of memory space its argument must be in (as a StableHLO
  /// argument's `mhlo.memory_kind` asks: "pinned_host" for an argument offloaded to the host);
  /// an execute with an argument elsewhere fails INVALID_ARGUMENT. Empty (list or entry): any
  /// memory space of the device. A kind the devices lack, or a list of another length than
  /// the parameters, fails the compile.
  std::vector<std::string> argument_memory_kinds = {};
  /// Per parameter, the layout its argument buffers are in, as PJRT's custom layouts: the
  /// order of the dimensions from minor to major ({1, 0} is row-major for a matrix, {0, 1}
  /// column-major; an empty entry is the default row-major). Empty list: every parameter
  /// row-major. The executable reads each argument in its layout (parameter_layouts()) and
  /// refuses a buffer in another (Buffer::copy_to_layout converts one); a list of another
  /// length than the parameters, or an entry that is not an order of the dimensions, fails
  /// the compile.
  std::vector<std::vector<std::int64_t>> argument_layouts = {};
  /// The same for the outputs: each output buffer is made in its layout (output_layouts()).
  std::vector<std::vector<std::int64_t>> result_layouts = {};

  friend bool operator==(const CompileOptions&, const CompileOptions&) = default;
};

/// What an execution costs, summed over the program's kernels.
struct CostAnalysis {
  double flops = 0;
  double transcendentals = 0;
  std::int64_t bytes_accessed = 0;
};

/// The memory one execution uses.
struct MemoryStats {
  std::int64_t argument_bytes = 0;
  std::int64_t output_bytes = 0;
  /// The arena: temporaries (sharing space where their lifetimes allow) plus kernel scratch.
  std::int64_t temp_bytes = 0;
  /// The part of temp_bytes that is kernel scratch: the tiles a fused loop computes in (per
  /// worker, L1-sized) and packed operands of matrix products. The rest are temporaries,
  /// intermediate arrays that are not fused away.
  std::int64_t scratch_bytes = 0;
  std::int64_t constant_bytes = 0;
};

}  // namespace pjrt_lite::cpu
