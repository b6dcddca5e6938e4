// libFuzzer target: executable bytes -> Client::deserialize_executable (see targets.hpp).
#include <cstdlib>

#include "seeds.hpp"
#include "targets.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const std::string dir = pjrt_lite::fuzz::seed_directory(); !dir.empty()) {
    auto client =
        pjrt_lite::cpu::Client<pjrt_lite::cpu::InlineExecutor>::create({.device_count = 2}).value();
    int k = 0;
    for (const pjrt_lite::Graph& g : pjrt_lite::fuzz::seed_graphs()) {
      auto exe = client->compile(g, {.device_ids = {k % 2}});
      if (!exe.ok()) continue;
      std::vector<std::byte> bytes = exe->serialize();
      // Mode byte: odd seeds repair checksums after mutation, even ones do not.
      bytes.insert(bytes.begin(), static_cast<std::byte>(k % 4 == 0 ? 0 : 1));
      pjrt_lite::fuzz::write_seed(dir, pjrt_lite::str_cat("executable_", k++), bytes);
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)pjrt_lite::fuzz::deserialize_one(std::as_bytes(std::span(data, size)));
  return 0;
}
