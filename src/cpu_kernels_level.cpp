// One build of the CPU compiler and kernels for an instruction-set level, linked into
// pjrt_lite::cpu_kernels beside the baseline build (detail/kernel_builds.hpp). CMake compiles
// this file once per extra level of PJRT_LITE_KERNEL_LEVELS, with -march=<level> and
// PJRT_LITE_KERNEL_BUILD_ENTRY naming the level's entry point, then makes every symbol of the
// object local but that entry point.
#include "pjrt_lite/backends/cpu/detail/compiler.hpp"

#if !defined(PJRT_LITE_KERNEL_BUILD_ENTRY)
#error "PJRT_LITE_KERNEL_BUILD_ENTRY names the entry point of this build"
#endif
#if defined(PJRT_LITE_CPU_EXTERN_KERNELS)
#error "a level's build compiles the kernels inline: PJRT_LITE_CPU_EXTERN_KERNELS must not be defined"
#endif

PJRT_LITE_DECLARE_KERNEL_BUILD(PJRT_LITE_KERNEL_BUILD_ENTRY)

extern "C" void PJRT_LITE_KERNEL_BUILD_ENTRY(const ::pjrt_lite::Graph& graph,
                                             const ::pjrt_lite::cpu::CompileOptions& options, int max_workers,
                                             ::pjrt_lite::StatusOr<std::shared_ptr<::pjrt_lite::cpu::detail::Program>>* program) {
  *program = ::pjrt_lite::cpu::detail::compile_program_here(graph, options, max_workers);
}
