// With PJRT_LITE_BENCH_NATIVE_KERNELS=ON: the CPU compiler and every kernel, compiled once for
// the benchmark with its own flags (-O3 -march=native, bench/CMakeLists.txt) instead of the
// project's pjrt_lite::cpu_kernels; the bench's other translation units are built with
// PJRT_LITE_CPU_EXTERN_KERNELS and only declare them.
#include "pjrt_lite/cpu_instantiate.hpp"
