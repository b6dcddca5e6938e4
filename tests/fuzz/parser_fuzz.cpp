// libFuzzer target: StableHLO text -> parse_module (see targets.hpp).
#include <cstdlib>

#include "seeds.hpp"
#include "targets.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const std::string dir = pjrt_lite::fuzz::seed_directory(); !dir.empty()) {
    int k = 0;
    for (const pjrt_lite::Graph& g : pjrt_lite::fuzz::seed_graphs())
      pjrt_lite::fuzz::write_seed(dir, pjrt_lite::str_cat("graph_", k++, ".mlir"),
                                  pjrt_lite::to_stablehlo(g));
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)pjrt_lite::fuzz::parse_one(std::as_bytes(std::span(data, size)));
  return 0;
}
