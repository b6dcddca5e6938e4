#pragma once
// What the fuzz targets share: a hard failure that libFuzzer records as a crash (a broken
// invariant, not bad input, which must come back as a Status), and seed-corpus writing.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::fuzz {

/// Aborts with `what` and the status: libFuzzer keeps the input as a crash.
[[noreturn]] inline void fail(std::string_view what, const Status& s = Status()) {
  std::fprintf(stderr, "FUZZ INVARIANT BROKEN: %.*s %s\n", static_cast<int>(what.size()),
               what.data(), s.to_string().c_str());
  std::abort();
}

/// The directory in PJRT_LITE_FUZZ_WRITE_SEEDS, or empty: a fuzz binary run with it set writes
/// its generated seeds there and exits, so seeds need no separate build.
inline std::string seed_directory() {
  const char* dir = std::getenv("PJRT_LITE_FUZZ_WRITE_SEEDS");
  return dir ? std::string(dir) : std::string();
}

inline void write_seed(const std::string& dir, const std::string& name,
                       std::span<const std::byte> bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline void write_seed(const std::string& dir, const std::string& name, std::string_view text) {
  write_seed(dir, name, std::as_bytes(std::span(text.data(), text.size())));
}

}  // namespace pjrt_lite::fuzz
