#pragma once
// The instruction sets the CPU kernels are compiled for, and which of them a compile uses.
//
// Eigen vectorizes for the flags of the translation unit that includes it, so header-only
// kernels run with whatever the including file was compiled for (baseline x86-64, SSE2 only,
// unless it adds -march=x86-64-v3, -mavx2 -mfma or -march=native). The compiled library
// pjrt_lite::cpu_kernels carries more than one build of its kernels on x86-64 (its CMake option
// PJRT_LITE_KERNEL_LEVELS) and each compile picks the best one the machine runs.

#include <cstdint>
#include <string_view>
#include <vector>

#include "pjrt_lite/core/compiled_once.hpp"

namespace pjrt_lite::inline v0_1::cpu {

/// A build of the CPU kernels. The x86-64 levels are the psABI's micro-architecture levels.
enum class KernelIsa : std::uint8_t {
  kBest,       // in CompileOptions: the best build this process has and this CPU runs
  kBaseline,   // the target's default flags (x86-64: SSE2)
  kX86_64_V3,  // AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE (Haswell, Zen 1 and later)
  kX86_64_V4,  // and AVX-512 F/BW/CD/DQ/VL (Skylake-SP, Zen 4 and later)
};

[[nodiscard]] constexpr std::string_view kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kBest: return "best";
    case KernelIsa::kBaseline: return "baseline";
    case KernelIsa::kX86_64_V3: return "x86-64-v3";
    case KernelIsa::kX86_64_V4: return "x86-64-v4";
  }
  return "unknown";
}

/// The level the including translation unit's own flags give its inline kernels.
[[nodiscard]] constexpr KernelIsa compiled_kernel_isa() {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__AVX2__) && defined(__FMA__)
  return KernelIsa::kX86_64_V4;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__BMI2__) && defined(__F16C__)
  return KernelIsa::kX86_64_V3;
#else
  return KernelIsa::kBaseline;
#endif
}

/// Whether this CPU (and its operating system, which must save the vector registers) runs
/// code built for `isa`. kBest and kBaseline: always.
[[nodiscard]] inline bool cpu_runs_kernel_isa(KernelIsa isa) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
  // GCC knows the levels (every feature each implies, and the operating system's support).
  switch (isa) {
    case KernelIsa::kBest:
    case KernelIsa::kBaseline: return true;
    case KernelIsa::kX86_64_V3: return __builtin_cpu_supports("x86-64-v3");
    case KernelIsa::kX86_64_V4: return __builtin_cpu_supports("x86-64-v4");
  }
  return false;
#elif (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  // Older compilers: the features a level's code generation relies on (clang 14 has no name
  // for F16C, which every CPU with AVX2 and BMI2 has).
  switch (isa) {
    case KernelIsa::kBest:
    case KernelIsa::kBaseline: return true;
    case KernelIsa::kX86_64_V3:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
             __builtin_cpu_supports("bmi2");
    case KernelIsa::kX86_64_V4:
      return cpu_runs_kernel_isa(KernelIsa::kX86_64_V3) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == KernelIsa::kBest || isa == KernelIsa::kBaseline;
#endif
}

/// The builds of the kernels that this process has and this CPU runs, best first: the one
/// the flags of the compiling translation unit give (header-only), or those of the library
/// pjrt_lite::cpu_kernels (its CMake option PJRT_LITE_KERNEL_LEVELS). The first is what
/// CompileOptions::kernel_isa = kBest picks. Defined with the compiler
/// (backends/cpu/detail/compiler.hpp).
PJRT_LITE_COMPILED_ONCE std::vector<KernelIsa> available_kernel_isas();

}  // namespace pjrt_lite::cpu
