// The linalg kernels of pjrt_lite::cpu_kernels (make_linalg_kernel), in a translation unit of
// their own: Eigen's decompositions for four element types build beside the other kernels
// (src/cpu_kernels.cpp), and the library's per-level builds of the kernels call this one.
#include "pjrt_lite/backends/cpu/detail/linalg_kernel.hpp"
