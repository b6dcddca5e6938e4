#pragma once
// Native call stacks for trace records: glibc's backtrace() to capture the return addresses,
// dladdr() and the C++ ABI's demangler to name them. Where those are missing, capturing
// returns no frames. Function names resolve for shared libraries, and for the executable's
// own functions when it exports its symbols (link with -rdynamic, CMake ENABLE_EXPORTS).

#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "pjrt_lite/core/hex.hpp"

#if __has_include(<execinfo.h>) && __has_include(<dlfcn.h>)
#include <dlfcn.h>
#include <execinfo.h>
#define PJRT_LITE_HAS_BACKTRACE 1
#else
#define PJRT_LITE_HAS_BACKTRACE 0
#endif
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define PJRT_LITE_HAS_CXA_DEMANGLE 1
#else
#define PJRT_LITE_HAS_CXA_DEMANGLE 0
#endif

namespace pjrt_lite::inline v0_1::trace {

/// Fills `frames` with the return addresses of the calling thread's stack, innermost first,
/// after skipping the `skip` innermost; returns how many it wrote (0 where unsupported).
/// Thread-safe; allocates nothing after the first call in a process.
// Not inlined, so that the frame it skips is its own.
[[gnu::noinline]] inline int capture_call_stack(std::span<void*> frames, int skip = 0) {
#if PJRT_LITE_HAS_BACKTRACE
  void* raw[128];
  const int want = static_cast<int>(frames.size()) + skip + 1;  // + this function
  const int got = ::backtrace(raw, want < 128 ? want : 128);
  int n = 0;
  for (int i = skip + 1; i < got && n < static_cast<int>(frames.size()); ++i) frames[n++] = raw[i];
  return n;
#else
  (void)frames;
  (void)skip;
  return 0;
#endif
}

/// `name` demangled ("pjrt_lite::cpu::Client<...>::compile(...)"), or as given if it is not a
/// mangled C++ name.
inline std::string demangle(const char* name) {
  if (name == nullptr) return {};
#if PJRT_LITE_HAS_CXA_DEMANGLE
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && out != nullptr) {
    std::string result(out);
    std::free(out);
    return result;
  }
#endif
  return name;
}

/// One frame as "0x55d1c3f0 pjrt_lite::Foo::bar(int) + 0x1c (libfoo.so)"; the symbol is
/// left out when the address has none.
inline std::string describe_frame(void* address) {
  std::string out = "0x" + to_hex(reinterpret_cast<std::uintptr_t>(address));
#if PJRT_LITE_HAS_BACKTRACE
  Dl_info info{};
  if (::dladdr(address, &info) != 0) {
    if (info.dli_sname != nullptr)
      out += " " + demangle(info.dli_sname) + " + 0x" +
             to_hex(reinterpret_cast<std::uintptr_t>(address) -
                    reinterpret_cast<std::uintptr_t>(info.dli_saddr));
    if (info.dli_fname != nullptr) {
      std::string file = info.dli_fname;
      const std::size_t slash = file.rfind('/');
      out += " (" + (slash == std::string::npos ? file : file.substr(slash + 1)) + ")";
    }
  }
#endif
  return out;
}

}  // namespace pjrt_lite::trace
