// stablehlo_run: runs StableHLO test programs (as JAX exports them) on the CPU client and
// evaluates their check.expect_* calls.
//
//   stablehlo_run [--dump] [--time] <file.mlir | directory>...
//
// One line per file: PASS, FAIL (what differed and where) or SKIP (the unsupported op or
// type); then "N passed, M failed, K skipped". Exits 1 if any file failed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/printer.hpp"
#include "pjrt_lite/stablehlo/checks.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"

using namespace pjrt_lite;

namespace {

enum class Verdict { kPass, kFail, kSkip };

struct Options {
  bool dump = false;
  bool time = false;
};

/// Runs one file; `detail` says why for FAIL and SKIP.
Verdict run_file(cpu::Client<cpu::InlineExecutor>& client, const std::filesystem::path& path, const Options& options,
                 std::string& detail) {
  std::ifstream in(path);
  if (!in) {
    detail = "cannot read the file";
    return Verdict::kFail;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto skip_or_fail = [&](const Status& s) {
    detail = s.to_string();
    return s.code() == StatusCode::kUnimplemented ? Verdict::kSkip : Verdict::kFail;
  };
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<stablehlo::Module> module = stablehlo::parse_module(text.str());
  if (!module.ok()) return skip_or_fail(module.status());
  const stablehlo::Function* main = module->find("main");
  if (main == nullptr) {
    detail = "no function @main";
    return Verdict::kFail;
  }
  if (options.dump) std::printf("%s\n", to_string(main->graph).c_str());
  if (main->graph.num_parameters() != 0) {
    detail = "@main takes arguments; only self-contained test programs run here";
    return Verdict::kSkip;
  }
  StatusOr<cpu::LoadedExecutable<cpu::InlineExecutor>> exe = client.compile(main->graph);
  if (!exe.ok()) return skip_or_fail(exe.status());
  const auto t1 = std::chrono::steady_clock::now();
  auto outputs = exe->execute_sharded({}, client.devices()[0]);
  if (!outputs.ok()) return skip_or_fail(outputs.status());
  std::vector<Literal> literals;
  for (auto& b : *outputs) {
    StatusOr<Literal> l = b.to_literal().await();
    if (!l.ok()) return skip_or_fail(l.status());
    literals.push_back(std::move(l).value());
  }
  const auto t2 = std::chrono::steady_clock::now();
  if (options.time)
    std::printf("  compile %.3f ms, run %.3f ms\n", std::chrono::duration<double, std::milli>(t1 - t0).count(),
                std::chrono::duration<double, std::milli>(t2 - t1).count());
  if (main->checks.empty()) {
    detail = "the program checks nothing";
    return Verdict::kSkip;
  }
  for (const stablehlo::Check& check : main->checks) {
    const Literal& actual = literals[static_cast<std::size_t>(check.actual_output)];
    const Literal& expected =
        check.expected_literal ? *check.expected_literal : literals[static_cast<std::size_t>(check.expected_output)];
    Status s = stablehlo::evaluate_check(check.kind, actual, expected);
    if (!s.ok()) {
      detail = str_cat("line ", check.line, ": ", s.message());
      return Verdict::kFail;
    }
  }
  return Verdict::kPass;
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
        if (entry.path().extension() == ".mlir") files.push_back(entry.path());
    } else {
      files.emplace_back(arg);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: stablehlo_run [--dump] [--time] <file.mlir | directory>...\n");
    return 2;
  }
  std::sort(files.begin(), files.end());
  auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& file : files) {
    std::string detail;
    switch (run_file(*client, file, options, detail)) {
      case Verdict::kPass: ++passed; std::printf("PASS %s\n", file.c_str()); break;
      case Verdict::kFail: ++failed; std::printf("FAIL %s: %s\n", file.c_str(), detail.c_str()); break;
      case Verdict::kSkip: ++skipped; std::printf("SKIP %s: %s\n", file.c_str(), detail.c_str()); break;
    }
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
