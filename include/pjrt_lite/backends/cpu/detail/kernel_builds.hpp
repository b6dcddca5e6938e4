#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The builds of the CPU kernels a process has. Header-only, one: the kernels of the translation
// unit that compiles programs, vectorized for its flags. The library pjrt_lite::cpu_kernels adds
// a build per extra level of its CMake option PJRT_LITE_KERNEL_LEVELS: the same compiler and
// kernels compiled from src/cpu_kernels_level.cpp with -march=<level> into one object whose
// symbols are all local but its entry point (so that no inline function compiled for a
// level can stand in for the baseline's), defining PJRT_LITE_CPU_KERNELS_<LEVEL> for the
// library's own translation unit, which declares the entry points here.
//
// A Program compiled by a build runs that build's code: its kernels are objects of classes
// the build compiled. The builds share the library's types, so they must agree on their
// layout: the same headers, and no type whose layout depends on the instruction set (such
// as an Eigen fixed-size member) in what crosses from one to another.

#include <memory>
#include <span>

#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/backends/cpu/forward.hpp"
#include "pjrt_lite/backends/cpu/kernel_isa.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// A build's compile: the entry point of another build, or null for this translation unit's.
using KernelBuildCompile = void (*)(const Graph& graph, const CompileOptions& options, int max_workers,
                                    StatusOr<std::shared_ptr<Program>>* program);

struct KernelBuild {
  KernelIsa isa;
  KernelBuildCompile compile;
};

}  // namespace pjrt_lite::cpu::detail

#define PJRT_LITE_DECLARE_KERNEL_BUILD(entry)                                                              \
  extern "C" void entry(const ::pjrt_lite::Graph& graph, const ::pjrt_lite::cpu::CompileOptions& options, \
                        int max_workers,                                                                  \
                        ::pjrt_lite::StatusOr<std::shared_ptr<::pjrt_lite::cpu::detail::Program>>* program);
#if defined(PJRT_LITE_CPU_KERNELS_X86_64_V4)
PJRT_LITE_DECLARE_KERNEL_BUILD(pjrt_lite_cpu_compile_x86_64_v4)
#endif
#if defined(PJRT_LITE_CPU_KERNELS_X86_64_V3)
PJRT_LITE_DECLARE_KERNEL_BUILD(pjrt_lite_cpu_compile_x86_64_v3)
#endif

namespace pjrt_lite::inline v0_1::cpu::detail {

/// Every build this translation unit can reach, best first. Called only from the functions
/// PJRT_LITE_COMPILED_ONCE marks, so that with the kernels library every caller sees the
/// library's list.
inline std::span<const KernelBuild> kernel_builds() {
  static constexpr KernelBuild builds[] = {
#if defined(PJRT_LITE_CPU_KERNELS_X86_64_V4)
      {KernelIsa::kX86_64_V4, &pjrt_lite_cpu_compile_x86_64_v4},
#endif
#if defined(PJRT_LITE_CPU_KERNELS_X86_64_V3)
      {KernelIsa::kX86_64_V3, &pjrt_lite_cpu_compile_x86_64_v3},
#endif
      {compiled_kernel_isa(), nullptr},
  };
  return builds;
}

}  // namespace pjrt_lite::cpu::detail
