// libFuzzer target: bytes -> a random sequence of GraphBuilder calls, then the CPU client
// against the reference interpreter (see targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)pjrt_lite::fuzz::build_one(std::as_bytes(std::span(data, size)));
  return 0;
}
