// The libFuzzer binary for all four targets, chosen at run time by PJRT_LITE_FUZZ_TARGET:
//   parser       StableHLO text -> parse_module
//   bytecode     a portable artifact (MLIR bytecode holding VHLO) -> the bytecode reader
//   deserialize  a mode byte, then executable bytes -> Client::deserialize_executable
//   builder      decisions -> a random sequence of GraphBuilder calls, then CPU vs reference
// (bodies in targets.hpp). One binary means one build of the instrumented runtime. Run with
// PJRT_LITE_FUZZ_WRITE_SEEDS=<dir> it writes the chosen target's generated seeds and exits.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "seeds.hpp"
#include "targets.hpp"

namespace {

enum class Target { kParser, kDeserialize, kBuilder, kBytecode };
Target g_target = Target::kParser;

void write_seeds(Target target, const std::string& dir) {
  using namespace pjrt_lite;
  int k = 0;
  if (target == Target::kParser) {
    for (const Graph& g : fuzz::seed_graphs()) fuzz::write_seed(dir, str_cat("graph_", k++, ".mlir"), to_stablehlo(g));
  } else if (target == Target::kDeserialize) {
    auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 2}).value();
    for (const Graph& g : fuzz::seed_graphs()) {
      auto exe = client->compile(g, {.device_ids = {k % 2}});
      if (!exe.ok()) continue;
      std::vector<std::byte> bytes = exe->serialize();
      // Mode byte: odd seeds repair checksums after mutation, even ones do not.
      bytes.insert(bytes.begin(), static_cast<std::byte>(k % 4 == 0 ? 0 : 1));
      fuzz::write_seed(dir, str_cat("executable_", k++), bytes);
    }
  }
  // The builder's inputs are decisions: libFuzzer's own random bytes seed it well. The
  // bytecode target's seeds are StableHLO's own artifacts, which run.sh copies in.
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("PJRT_LITE_FUZZ_TARGET");
  const std::string_view target = name != nullptr ? name : "";
  if (target == "parser") g_target = Target::kParser;
  else if (target == "deserialize") g_target = Target::kDeserialize;
  else if (target == "builder") g_target = Target::kBuilder;
  else if (target == "bytecode") g_target = Target::kBytecode;
  else {
    std::fprintf(stderr, "set PJRT_LITE_FUZZ_TARGET to parser, deserialize, builder or bytecode (got '%s')\n",
                 name != nullptr ? name : "");
    std::exit(2);
  }
  if (const std::string dir = pjrt_lite::fuzz::seed_directory(); !dir.empty()) {
    write_seeds(g_target, dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  switch (g_target) {
    case Target::kParser: (void)pjrt_lite::fuzz::parse_one(bytes); break;
    case Target::kDeserialize: (void)pjrt_lite::fuzz::deserialize_one(bytes); break;
    case Target::kBuilder: (void)pjrt_lite::fuzz::build_one(bytes); break;
    case Target::kBytecode: (void)pjrt_lite::fuzz::bytecode_one(bytes); break;
  }
  return 0;
}
