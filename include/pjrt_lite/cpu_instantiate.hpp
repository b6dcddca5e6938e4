#pragma once
// Compiles the CPU backend's heavy parts (the compiler and every kernel for every op and dtype,
// the client and executable classes for both executors), the reference interpreter's op
// implementations, shape inference and graph verification in one translation unit.
//
// A large application that compiles programs from many files can pay for the kernels once:
//   1. define PJRT_LITE_CPU_EXTERN_KERNELS for every translation unit of the program
//      (`target_compile_definitions(app PRIVATE PJRT_LITE_CPU_EXTERN_KERNELS)`);
//   2. include this header in exactly one .cpp file (it may hold nothing else);
//   3. everywhere else include <pjrt_lite/cpu.hpp> as usual: it then declares, and does not
//      compile, `Client::compile` and the executable's members (and
//      <pjrt_lite/backends/reference/interpreter.hpp> declares, not compiles, its ops).
// Without the macro nothing changes: every translation unit compiles what it uses, inline, and
// this header only instantiates the classes once more (harmless, and no saving).

#include "pjrt_lite/backends/cpu/detail/instantiate_kernels.hpp"  // IWYU pragma: export
#include "pjrt_lite/backends/cpu/detail/linalg_kernel.hpp"        // make_linalg_kernel, defined once
