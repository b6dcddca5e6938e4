#pragma once
// Options of compiling a program for the CPU, and what the compiled program costs.

#include <cstdint>
#include <vector>

#include "pjrt_lite/backends/cpu/kernel_isa.hpp"

namespace pjrt_lite::inline v0_1::cpu {

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
