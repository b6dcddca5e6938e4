// Which sanitizer the test binary is built with, for the tests that count allocations or scale
// down under one: macros for the preprocessor, constants for the code.
#pragma once

#if defined(__has_feature)
#define PJRT_LITE_TEST_HAS_FEATURE(x) __has_feature(x)
#else
#define PJRT_LITE_TEST_HAS_FEATURE(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || PJRT_LITE_TEST_HAS_FEATURE(thread_sanitizer)
#define PJRT_LITE_TEST_TSAN 1
#else
#define PJRT_LITE_TEST_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__) || PJRT_LITE_TEST_HAS_FEATURE(address_sanitizer)
#define PJRT_LITE_TEST_ASAN 1
#else
#define PJRT_LITE_TEST_ASAN 0
#endif

namespace pjrt_lite::testing {

inline constexpr bool kThreadSanitizer = PJRT_LITE_TEST_TSAN;
inline constexpr bool kAddressSanitizer = PJRT_LITE_TEST_ASAN;

/// Under a sanitizer (CI builds them at -O0) every memory access is instrumented, and the
/// exhaustive single-threaded loops of the serializer's tests would take minutes: they take
/// every 9th case under ThreadSanitizer (which has no threads to look at there) and every 3rd
/// under AddressSanitizer (the fuzzers feed the same decoder corrupt input for hours), and
/// every case otherwise.
inline constexpr int kSanitizerStride = kThreadSanitizer ? 9 : kAddressSanitizer ? 3 : 1;

}  // namespace pjrt_lite::testing
