// The CPU compiler and every kernel, compiled once for the benchmark with its own flags
// (-O3 -march=native, bench/CMakeLists.txt): the bench's other translation units are built
// with PJRT_LITE_CPU_EXTERN_KERNELS and only declare them. The project's
// pjrt_lite::cpu_kernels is not used because it is built for baseline x86-64.
#include "pjrt_lite/cpu_instantiate.hpp"
