#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The seam between the CPU client and its compiler: `compile_program` turns a graph into a
// Program, and is where every kernel for every op and dtype gets instantiated.
//
// By default it is an inline function of compiler.hpp, compiled in every translation unit that
// compiles programs. A large application can compile it once instead: define
// PJRT_LITE_CPU_EXTERN_KERNELS for every translation unit of the program and include
// <pjrt_lite/cpu_instantiate.hpp> in exactly one. The other translation units then see only
// this declaration (and `extern template` declarations of the CPU classes, see executable.hpp).

#include <memory>

#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/backends/cpu/forward.hpp"
#include "pjrt_lite/backends/cpu/kernel_isa.hpp"
#include "pjrt_lite/core/compiled_once.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// Compiles a verified `graph` for CPU executors with `max_workers` threads (the caller
/// included), with the build of the kernels options.kernel_isa names.
PJRT_LITE_COMPILED_ONCE StatusOr<std::shared_ptr<Program>> compile_program(const Graph& graph,
                                                                                const CompileOptions& options,
                                                                                int max_workers);

}  // namespace pjrt_lite::cpu::detail
