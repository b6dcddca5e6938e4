// The library pjrt_lite::cpu_kernels: the CPU compiler, every kernel (but the linalg ones,
// src/cpu_linalg.cpp) and the reference interpreter's ops, compiled once. Linking it defines PJRT_LITE_CPU_EXTERN_KERNELS for the
// consumer, whose translation units then declare these instead of compiling them.
#include "pjrt_lite/backends/cpu/detail/instantiate_kernels.hpp"
