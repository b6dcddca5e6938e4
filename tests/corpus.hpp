// Where the JAX-exported StableHLO corpus lives for the tests: the environment variable
// PJRT_LITE_STABLEHLO_TESTDATA when set, else the CMake option of the same name. A test that
// needs it and finds it missing is reported as skipped, never as passed.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#ifndef PJRT_LITE_STABLEHLO_TESTDATA
#define PJRT_LITE_STABLEHLO_TESTDATA ""
#endif

namespace pjrt_lite::testing {

inline std::filesystem::path corpus_dir() {
  if (const char* dir = std::getenv("PJRT_LITE_STABLEHLO_TESTDATA"); dir != nullptr && *dir)
    return dir;
  return PJRT_LITE_STABLEHLO_TESTDATA;
}

inline bool have_corpus_dir() { return std::filesystem::is_directory(corpus_dir()); }

/// The line a test prints when it skips; tests/CMakeLists.txt tells ctest that a test whose
/// output holds it was skipped.
inline constexpr const char* kSkipMarker = "[pjrt_lite: skipped]";

/// False when the corpus is there. Otherwise prints the skip marker and where the corpus was
/// looked for, and returns true: the caller returns at once.
inline bool skip_without_corpus() {
  if (have_corpus_dir()) return false;
  std::printf("%s no StableHLO corpus at %s (set PJRT_LITE_STABLEHLO_TESTDATA)\n", kSkipMarker,
              corpus_dir().string().c_str());
  std::fflush(stdout);
  return true;
}

}  // namespace pjrt_lite::testing
