#pragma once
// Options of compiling a program for the CPU.

#include <vector>

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

  friend bool operator==(const CompileOptions&, const CompileOptions&) = default;
};

}  // namespace pjrt_lite::cpu
