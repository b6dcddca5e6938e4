// Where the JAX-exported StableHLO corpus lives for the tests: the environment variable
// PJRT_LITE_STABLEHLO_TESTDATA when set, else the CMake option of the same name.
#pragma once

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

}  // namespace pjrt_lite::testing
