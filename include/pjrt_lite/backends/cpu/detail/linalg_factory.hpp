#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// Where the compiler gets the kernel of a linalg node. The LAPACK-style kernels instantiate
// Eigen's decompositions for four element types, which costs several minutes of compile at
// -O2, so they are compiled apart from the other kernels:
//   - header-only (the default), make_linalg_kernel is an inline function of linalg_kernel.hpp,
//     compiled where programs are compiled; a program that defines
//     PJRT_LITE_CPU_NO_LINALG_KERNELS leaves them out, and a linalg node then does not compile
//     (UNIMPLEMENTED, naming the macro);
//   - with PJRT_LITE_CPU_EXTERN_KERNELS it is an ordinary function, defined once in the
//     translation unit that includes <pjrt_lite/cpu_instantiate.hpp> (in pjrt_lite::cpu_kernels,
//     src/cpu_linalg.cpp); the library's per-level builds of the kernels call that one too.

#include <cstdint>
#include <memory>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"

#if defined(PJRT_LITE_CPU_EXTERN_KERNELS) || defined(PJRT_LITE_KERNEL_BUILD_ENTRY)
#define PJRT_LITE_LINALG_KERNELS_ONCE
#else
#define PJRT_LITE_LINALG_KERNELS_ONCE inline
#endif

namespace pjrt_lite::inline v0_1::cpu::detail {

/// The kernel of a linalg node (its routine in `attrs`, any but trsm) on `operands`, writing
/// `results`; `reads` are the operands' slots, `dsts` the results'. Null when this program
/// was built without the linalg kernels.
PJRT_LITE_LINALG_KERNELS_ONCE std::unique_ptr<Kernel> make_linalg_kernel(const std::vector<Shape>& operands,
                                                                         std::vector<Shape> results,
                                                                         const LinalgAttrs& attrs,
                                                                         std::vector<std::int32_t> reads,
                                                                         std::vector<std::int32_t> dsts);

#if !defined(PJRT_LITE_CPU_EXTERN_KERNELS) && !defined(PJRT_LITE_KERNEL_BUILD_ENTRY) && \
    defined(PJRT_LITE_CPU_NO_LINALG_KERNELS)
inline std::unique_ptr<Kernel> make_linalg_kernel(const std::vector<Shape>&, std::vector<Shape>, const LinalgAttrs&,
                                                  std::vector<std::int32_t>, std::vector<std::int32_t>) {
  return nullptr;
}
#endif

}  // namespace pjrt_lite::cpu::detail

#if !defined(PJRT_LITE_CPU_EXTERN_KERNELS) && !defined(PJRT_LITE_KERNEL_BUILD_ENTRY) && \
    !defined(PJRT_LITE_CPU_NO_LINALG_KERNELS)
#include "pjrt_lite/backends/cpu/detail/linalg_kernel.hpp"  // IWYU pragma: export
#endif
