#pragma once
// PJRT_LITE_COMPILED_ONCE marks the few functions that hold the bulk of the library's code (the
// CPU compiler and its kernels, the reference interpreter's ops, shape inference and graph
// verification). Header-only, they are inline functions compiled in every translation unit
// that uses them. With PJRT_LITE_CPU_EXTERN_KERNELS (set by linking pjrt_lite::cpu_kernels)
// they are ordinary functions, declared where they were and defined once, in the translation
// unit that includes <pjrt_lite/cpu_instantiate.hpp>.

#if defined(PJRT_LITE_CPU_EXTERN_KERNELS)
#define PJRT_LITE_COMPILED_ONCE
#else
#define PJRT_LITE_COMPILED_ONCE inline
#endif
