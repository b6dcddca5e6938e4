// The linalg kernels of pjrt_lite::cpu_kernels (make_linalg_kernel), in a translation unit of
// their own: Eigen's decompositions for four element types build beside the other kernels
// (src/cpu_kernels.cpp), and the library's per-level builds of the kernels call this one.
// Built with PJRT_LITE_LINALG_KERNELS=OFF (PJRT_LITE_CPU_NO_LINALG_KERNELS), it makes none,
// and the compiler refuses linalg programs.
#if defined(PJRT_LITE_CPU_NO_LINALG_KERNELS)
#include "pjrt_lite/backends/cpu/detail/linalg_factory.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {
std::unique_ptr<Kernel> make_linalg_kernel(const std::vector<Shape>&, std::vector<Shape>, const LinalgAttrs&,
                                           std::vector<std::int32_t>, std::vector<std::int32_t>) {
  return nullptr;
}
}  // namespace pjrt_lite::cpu::detail
#else
#include "pjrt_lite/backends/cpu/detail/linalg_kernel.hpp"
#endif
