// Which sanitizer the test binary is built with, for the few tests that scale down under one.
#pragma once

namespace pjrt_lite::testing {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

/// Under a sanitizer (CI builds them at -O0) every memory access is instrumented, and the
/// exhaustive single-threaded loops of the serializer's tests would take minutes: they take
/// every 9th case under ThreadSanitizer (which has no threads to look at there) and every 3rd
/// under AddressSanitizer (the fuzzers feed the same decoder corrupt input for hours), and
/// every case otherwise.
inline constexpr int kSanitizerStride = kThreadSanitizer ? 9 : kAddressSanitizer ? 3 : 1;

}  // namespace pjrt_lite::testing
