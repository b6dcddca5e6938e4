#pragma once
// The library's version, and the inline namespace that carries it.
//
// Every declaration of pjrt_lite lives in `pjrt_lite::inline v<major>_<minor>`, as fmt's and
// Abseil's do: users write `pjrt_lite::Graph`, and the linker sees
// `pjrt_lite::v0_1::Graph`. A program that mixes two versions (headers of one, the
// pjrt_lite::cpu_kernels library of another; two libraries built against different versions)
// then fails to link instead of mixing types whose layout, kernels or serialized formats
// differ. 0.x versions may break the API between minor versions (the CMake package matches the
// same minor version only), so the namespace names major and minor; a release that changes
// either renames it in every header (`namespace pjrt_lite::inline v0_1...`) and here, and
// tests/core_test.cpp checks that the headers, these macros and CMake's project version agree.

#define PJRT_LITE_VERSION_MAJOR 0
#define PJRT_LITE_VERSION_MINOR 1
#define PJRT_LITE_VERSION_PATCH 0

namespace pjrt_lite::inline v0_1 {

struct Version {
  int major;
  int minor;
  int patch;
};
/// The version these headers are.
inline constexpr Version kVersion{PJRT_LITE_VERSION_MAJOR, PJRT_LITE_VERSION_MINOR, PJRT_LITE_VERSION_PATCH};

}  // namespace pjrt_lite::inline v0_1
