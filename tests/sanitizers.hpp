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

/// Either sanitizer. CI builds both at -O0 with every memory access instrumented, where the
/// header code (the reference interpreter, the graph passes, the decoders) runs many times
/// slower than in the optimized build, which runs the whole suite at full size as well.
inline constexpr bool kUnderSanitizer = kThreadSanitizer || kAddressSanitizer;

/// The exhaustive single-threaded loops of the serializer's tests take every 9th case under a
/// sanitizer and every case otherwise: the fuzzers feed the same decoder corrupt input under
/// ASan+UBSan in every CI run (and for hours before a change lands), and ThreadSanitizer has
/// no threads to look at there. The gradient checks' lists go on to order 2 for every 9th case
/// under a sanitizer (check_grads.hpp's case_order).
inline constexpr int kSanitizerStride = kUnderSanitizer ? 9 : 1;

}  // namespace pjrt_lite::testing
