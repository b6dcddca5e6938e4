// The CPU compiler and every kernel, compiled once for all the tests and examples that link
// pjrt_lite_cpu_kernels (they are built with PJRT_LITE_CPU_EXTERN_KERNELS): the way a large
// application keeps the kernels out of its other translation units.
#include "pjrt_lite/cpu_instantiate.hpp"
