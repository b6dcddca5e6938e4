// stablehlo_run: runs StableHLO test programs (as JAX exports them) on the CPU client and
// evaluates their check.expect_* calls.
//
//   stablehlo_run [--dump] [--time] <file.mlir | file.mlir.bc | directory>...
//
// A .mlir.bc file is a portable artifact (MLIR bytecode holding VHLO), read as its text would
// be (stablehlo/bytecode.hpp).
// A file split by `// -----` lines runs part by part (its verdict the worst part's), each
// part's @main or its only function, as StableHLO's interpreter tests are written.
// One line per file: PASS, FAIL (what differed and where), SKIP (the unsupported op or
// type) or UNCHECKED (it ran but checks nothing); then "N passed, M failed, K skipped, U
// unchecked". Exits 1 if any file failed. Programs that
// call `"interpreter.run_parallel"(...) {programs = [[@f, ...], ...]}` run the grid with one
// device per program (up to 16), every process at once.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/printer.hpp"
#include "pjrt_lite/stablehlo/runner.hpp"

using namespace pjrt_lite;

namespace {

struct Options {
  bool dump = false;
  bool time = false;
};

/// Runs one file; `detail` says why for FAIL and SKIP.
stablehlo::TestOutcome run_file(cpu::Client<cpu::InlineExecutor>& client, const std::filesystem::path& path,
                                const Options& options) {
  std::ifstream in(path, std::ios::binary);  // text, or a portable artifact's bytes
  if (!in) return {stablehlo::Verdict::kFail, "cannot read the file", 0, 0};
  std::stringstream text;
  text << in.rdbuf();
  Graph program;
  stablehlo::TestOutcome outcome = stablehlo::run_test_program(client, text.str(), &program);
  if (options.dump && program.num_nodes() > 0) std::printf("%s\n", to_string(program).c_str());
  if (options.time) std::printf("  compile %.3f ms, run %.3f ms\n", outcome.compile_ms, outcome.run_ms);
  return outcome;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--dump") options.dump = true;
    else if (arg == "--time") options.time = true;
    else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg))
        if (entry.path().extension() == ".mlir" || entry.path().extension() == ".bc") files.push_back(entry.path());
    } else {
      files.emplace_back(arg);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: stablehlo_run [--dump] [--time] <file.mlir | file.mlir.bc | directory>...\n");
    return 2;
  }
  std::sort(files.begin(), files.end());
  // Devices enough for interpreter.run_parallel grids, one device per program.
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 16}).value();
  int passed = 0, failed = 0, skipped = 0, unchecked = 0;
  for (const auto& file : files) {
    const stablehlo::TestOutcome o = run_file(*client, file, options);
    switch (o.verdict) {
      case stablehlo::Verdict::kPass: ++passed; std::printf("PASS %s\n", file.c_str()); break;
      case stablehlo::Verdict::kFail: ++failed; std::printf("FAIL %s: %s\n", file.c_str(), o.detail.c_str()); break;
      case stablehlo::Verdict::kSkip: ++skipped; std::printf("SKIP %s: %s\n", file.c_str(), o.detail.c_str()); break;
      case stablehlo::Verdict::kUnchecked:
        ++unchecked;
        std::printf("UNCHECKED %s: %s\n", file.c_str(), o.detail.c_str());
        break;
    }
  }
  std::printf("%d passed, %d failed, %d skipped, %d unchecked\n", passed, failed, skipped, unchecked);
  return failed ? 1 : 0;
}
