// The CPU compiler and kernels, compiled once for every example that links
// pjrt_lite_example_kernels (they are built with PJRT_LITE_CPU_EXTERN_KERNELS).
#include "pjrt_lite/cpu_instantiate.hpp"
