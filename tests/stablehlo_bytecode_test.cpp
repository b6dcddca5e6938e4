// StableHLO portable artifacts (MLIR bytecode holding VHLO): StableHLO's own artifact for
// every version from 0.9.0, in ../shared/stablehlo-vhlo with its text twin, must decode to
// the program the twin holds. The oracle is the text parser reading the twin, which shares no
// code with the bytecode reader; function by function, both must build the same graph
// (fingerprint) or refuse alike. The programs then run on the CPU client against the
// reference interpreter, and broken bytes must give errors, never crashes.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/byte_io.hpp"
#include "pjrt_lite/ir/fingerprint.hpp"
#include "pjrt_lite/stablehlo/bytecode.hpp"
#include "pjrt_lite/stablehlo/checks.hpp"
#include "pjrt_lite/stablehlo/runner.hpp"
#include "corpus.hpp"
#include "test_util.hpp"

namespace stablehlo_bytecode_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;
namespace fs = std::filesystem;

/// The artifacts: PJRT_LITE_STABLEHLO_VHLO, else stablehlo-vhlo beside the StableHLO corpus.
fs::path vhlo_dir() {
  if (const char* dir = std::getenv("PJRT_LITE_STABLEHLO_VHLO"); dir != nullptr && *dir) return dir;
  return corpus_dir().parent_path() / "stablehlo-vhlo";
}

/// As skip_without_corpus: prints the skip marker (ctest reports the test as skipped) when the
/// artifacts are missing.
bool skip_without_artifacts() {
  if (fs::is_directory(vhlo_dir())) return false;
  std::printf("%s no StableHLO portable artifacts at %s (set PJRT_LITE_STABLEHLO_VHLO)\n", kSkipMarker,
              vhlo_dir().string().c_str());
  std::fflush(stdout);
  return true;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

/// stablehlo_legalize_to_vhlo.<version>.mlir.bc, oldest version first.
std::vector<std::pair<std::string, fs::path>> artifacts() {
  std::vector<std::pair<std::array<int, 3>, fs::path>> found;
  constexpr std::string_view kPrefix = "stablehlo_legalize_to_vhlo.";
  for (const auto& e : fs::directory_iterator(vhlo_dir())) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(kPrefix) || !name.ends_with(".mlir.bc")) continue;
    std::array<int, 3> v{};
    if (std::sscanf(name.c_str() + kPrefix.size(), "%d_%d_%d", &v[0], &v[1], &v[2]) != 3) continue;
    found.emplace_back(v, e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::pair<std::string, fs::path>> out;
  for (const auto& [v, p] : found) out.emplace_back(str_cat(v[0], ".", v[1], ".", v[2]), p);
  return out;
}

/// The top-level `func.func`s of a text twin by name (each runs to the next one).
std::map<std::string, std::string> twin_functions(const std::string& text) {
  std::vector<std::size_t> starts;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (text.compare(pos, 10, "func.func ") == 0) starts.push_back(pos);
    pos = end + 1;
  }
  std::map<std::string, std::string> out;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : text.size();
    std::string body = text.substr(starts[k], end - starts[k]);
    const std::size_t at = body.find('@');
    const std::size_t stop = body.find_first_of("( ", at);
    out[body.substr(at + 1, stop - at - 1)] = body;
  }
  return out;
}

/// A module of function `f` and every function it names, transitively.
std::string module_of(const std::string& f, const std::map<std::string, std::string>& all) {
  std::set<std::string> seen{f};
  std::vector<std::string> todo{f};
  std::string out = "module {\n";
  while (!todo.empty()) {
    const std::string g = todo.back();
    todo.pop_back();
    const std::string& text = all.at(g);
    out += text;
    for (std::size_t p = text.find('@'); p != std::string::npos; p = text.find('@', p + 1)) {
      std::size_t e = p + 1;
      while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_' ||
                                 text[e] == '.' || text[e] == '$'))
        ++e;
      const std::string name = text.substr(p + 1, e - p - 1);
      if (all.count(name) && seen.insert(name).second) todo.push_back(name);
    }
  }
  return out + "}\n";
}

/// A status message without the leading "line:column: " and the artifact's prefix.
std::string without_location(std::string_view m) {
  for (std::string_view prefix : {"portable artifact (its program as StableHLO text): "})
    if (m.starts_with(prefix)) m.remove_prefix(prefix.size());
  const std::size_t colon = m.find(": ");
  if (colon != std::string_view::npos && colon < 12 &&
      m.substr(0, colon).find_first_not_of("0123456789:") == std::string_view::npos)
    m.remove_prefix(colon + 2);
  return std::string(m);
}

/// Each function of an artifact parsed on its own (with what it calls), by name.
std::map<std::string, StatusOr<stablehlo::Module>> artifact_functions(const stablehlo::detail::PortableProgram& p) {
  std::map<std::string, std::string> texts;
  for (const auto& f : p.functions) texts[f.name] = f.text;
  std::map<std::string, StatusOr<stablehlo::Module>> out;
  for (const auto& f : p.functions) {
    if (!f.status.ok()) {
      out.emplace(f.name, f.status);
      continue;
    }
    // A callee's refusal is the caller's too.
    std::string module = module_of(f.name, texts);
    Status callee_refusal;
    for (const auto& g : p.functions)
      if (!g.status.ok() && module.find(str_cat("func.func private @", g.name, "(")) != std::string::npos)
        callee_refusal = g.status;
    if (!callee_refusal.ok())
      out.emplace(f.name, callee_refusal);
    else
      out.emplace(f.name, stablehlo::parse_module(module));
  }
  return out;
}

TEST_CASE("portable artifacts: every version from 0.9.0 decodes to the program of its text twin") {
  if (skip_without_artifacts()) return;
  const auto files = artifacts();
  // The shared directory holds every release from 0.9.0 to 1.20.0 (1.17.0 has no artifact).
  REQUIRE(files.size() >= 32);
  CHECK(files.front().first == "0.9.0");
  CHECK(files.back().first == "1.20.0");
  std::int64_t same = 0, refused = 0, quantized = 0;  // quantized: functions with !quant types
  // Loop variables rather than structured bindings: clang 14 cannot capture a binding in the
  // lambdas that CAPTURE and the *_MESSAGE checks make.
  for (const auto& file : files) {
    const std::string& version = file.first;
    const fs::path& path = file.second;
    const std::string file_name = path.filename().string();
    CAPTURE(file_name);
    const std::string bytes = read_file(path);
    REQUIRE(stablehlo::is_portable_artifact(bytes_of(bytes)));
    CHECK(require_ok(stablehlo::portable_artifact_version(bytes_of(bytes))) == version);
    auto program = require_ok(stablehlo::detail::read_portable_program(
        {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}));
    std::string twin_path = path.string();
    twin_path.resize(twin_path.size() - 3);  // drop ".bc"
    const auto twin = twin_functions(read_file(twin_path));
    std::set<std::string> names;
    for (const auto& f : program.functions) names.insert(f.name);
    std::set<std::string> twin_names;
    for (const auto& [name, text] : twin) twin_names.insert(name);
    CHECK(names == twin_names);
    const auto decoded = artifact_functions(program);
    std::int64_t file_same = 0;
    for (const auto& entry : decoded) {
      const std::string& name = entry.first;
      const StatusOr<stablehlo::Module>& mine = entry.second;
      if (!twin.count(name)) continue;
      CAPTURE(name);
      StatusOr<stablehlo::Module> theirs = stablehlo::parse_module(module_of(name, twin));
      if (theirs.ok() && mine.ok()) {
        const stablehlo::Function* a = theirs->find(name);
        const stablehlo::Function* b = mine->find(name);
        REQUIRE((a == nullptr) == (b == nullptr));
        if (a == nullptr) continue;  // a declaration
        CHECK(fingerprint(a->graph) == fingerprint(b->graph));
        CHECK(a->num_results == b->num_results);
        CHECK(a->checks.size() == b->checks.size());
        if (twin.at(name).find("!quant.uniform") != std::string::npos) ++quantized;
        ++file_same;
      } else {
        // Both refuse, for the same kind of reason.
        REQUIRE_MESSAGE(!theirs.ok(), "the text twin parses but the artifact does not: " << mine.status().to_string());
        REQUIRE_MESSAGE(!mine.ok(), "the artifact parses but the text twin does not: " << theirs.status().to_string());
        // Checked before the ops, a '?' argument is refused by the text before the op that
        // the bytecode reader refuses.
        if (theirs.status().code() == StatusCode::kInvalidArgument &&
            theirs.status().message().find("shape-polymorphic") != std::string_view::npos)
          continue;
        CHECK_MESSAGE(theirs.status().code() == mine.status().code(),
                      theirs.status().to_string() << " vs " << mine.status().to_string());
        if (theirs.status().code() == StatusCode::kInvalidArgument)
          CHECK(without_location(theirs.status().message()) == without_location(mine.status().message()));
        ++refused;
      }
    }
    // Most of each file is ops this project runs.
    CHECK(file_same * 2 > static_cast<std::int64_t>(program.functions.size()));
    same += file_same;
  }
  MESSAGE("portable artifacts: ", same, " functions decode to their twin's graph, ", refused,
          " are refused by both; ", quantized, " of the former use quantized types");
  CHECK(quantized > 0);
}

/// A literal of shape `s` with small values: integers in [0, 5], floats in [-2, 2).
Literal small_random_literal(std::mt19937_64& rng, const Shape& s) {
  if (is_token(s.dtype())) return Literal(s);  // a token holds nothing
  Literal f32(Shape(DType::kF32, std::vector<std::int64_t>(s.dims().begin(), s.dims().end())));
  const bool integral = is_integral(s.dtype()) || s.dtype() == DType::kPred;
  std::uniform_real_distribution<float> u(integral ? 0.f : -2.f, integral ? 6.f : 2.f);
  for (float& x : f32.data<float>()) x = integral ? std::floor(u(rng)) : u(rng);
  if (s.dtype() == DType::kPred)
    for (float& x : f32.data<float>()) x = static_cast<float>(static_cast<int>(x) % 2);
  return require_ok(f32.convert(s.dtype()));
}

TEST_CASE("portable artifacts: their functions run on the CPU client as on the reference interpreter") {
  if (skip_without_artifacts()) return;
  auto client = cpu::Client<>::create({.device_count = 1, .thread_count = 2}).value();
  std::int64_t ran = 0;
  for (const char* version : {"0_9_0", "1_20_0"}) {
    const std::string bytes = read_file(vhlo_dir() / str_cat("stablehlo_legalize_to_vhlo.", version, ".mlir.bc"));
    auto program = require_ok(stablehlo::detail::read_portable_program(
        {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}));
    const auto functions = artifact_functions(program);
    for (const auto& entry : functions) {
      const std::string& name = entry.first;
      const StatusOr<stablehlo::Module>& module = entry.second;
      if (!module.ok()) continue;
      const stablehlo::Function* f = module->find(name);
      if (f == nullptr || f->num_results == 0) continue;
      CAPTURE(version);
      CAPTURE(name);
      Graph g = require_ok(stablehlo::detail::entry_results(*module, name));
      // A while loop's trip count may depend on the random arguments (and never end).
      if (std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == OpCode::kWhile; }))
        continue;
      // Arguments seeded by the function's name: what a function is given does not depend on
      // how many functions before it run.
      std::mt19937_64 rng(fnv1a64(std::as_bytes(std::span(name.data(), name.size()))));
      std::vector<Literal> args;
      for (Value p : g.parameters()) args.push_back(small_random_literal(rng, g.shape(p)));
      StatusOr<std::vector<Literal>> expected = reference::evaluate(g, args);
      auto exe = client->compile(g);
      // Runnable where both the interpreter and the CPU client run it. The CPU client may
      // refuse what the interpreter runs, with UNIMPLEMENTED (a body computing in a wider
      // type than its input, ...); the interpreter refuses collectives outside a grid of
      // processes, which the CPU client runs as a grid of one where their groups fit.
      if (!exe.ok()) {
        // A collective whose groups name more processes than the one device compiled for is
        // INVALID_ARGUMENT; anything else refused is UNIMPLEMENTED.
        const bool needs_grid = exe.status().code() == StatusCode::kInvalidArgument &&
                                contains(exe.status().message(), "but the grid has");
        CHECK_MESSAGE((exe.status().code() == StatusCode::kUnimplemented || needs_grid),
                      "cpu: " << exe.status().to_string());
        continue;
      }
      if (!expected.ok()) {
        CHECK_MESSAGE(contains(expected.status().message(), "runs only over a grid of processes"),
                      "reference: " << expected.status().to_string());
        continue;
      }
      const std::vector<Literal> actual = run_on(*client, g, args);
      REQUIRE(actual.size() == expected->size());
      for (std::size_t k = 0; k < actual.size(); ++k) {
        // Equal up to rounding, or (NaN, infinities) as close as the corpus's checks ask.
        Status s = stablehlo::within_rounding(actual[k], (*expected)[k]);
        if (!s.ok() && stablehlo::evaluate_check(stablehlo::CheckKind::kClose, actual[k], (*expected)[k]).ok())
          s = Status();
        CHECK_MESSAGE(s.ok(), "result ", k, ": ", s.to_string());
      }
      ++ran;
    }
  }
  CHECK(ran > 150);
  MESSAGE("portable artifacts: ", ran, " functions ran on the CPU client and the reference interpreter");
}

TEST_CASE("portable artifacts: an artifact from a future StableHLO is refused naming its version") {
  if (skip_without_artifacts()) return;
  const std::string bytes = read_file(vhlo_dir() / "invalid_vhlo_future.mlir.bc");
  StatusOr<stablehlo::Module> m = stablehlo::parse_portable_artifact(bytes_of(bytes));
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::kUnimplemented);
  CHECK(contains(m.status().message(), "2.0.0"));
  CHECK(contains(m.status().message(), "1.20.0"));
  CHECK(require_ok(stablehlo::portable_artifact_version(bytes_of(bytes))) == "2.0.0");
  // client.compile takes the same path.
  auto client = cpu::Client<>::create({.device_count = 1}).value();
  check_error(client->compile(std::string_view(bytes)), StatusCode::kUnimplemented, "2.0.0");
}

TEST_CASE("portable artifacts: client.compile, parse_stablehlo and compile_stablehlo take the bytes") {
  if (skip_without_artifacts()) return;
  // @main(%x: tensor<f32>) returns %x + %x, written by StableHLO 1.1.0.
  const std::string bytes = read_file(vhlo_dir() / "vhlo_emit_version_api.1_1_0.mlir.bc");
  auto client = cpu::Client<>::create({.device_count = 1}).value();
  Literal x = Literal::scalar(1.25f);
  auto exe = require_ok(client->compile(bytes_of(bytes)));
  auto buffer = require_ok(client->buffer_from_literal(x));
  std::vector<cpu::Client<>::buffer_type*> args{&buffer};
  auto out = require_ok(exe.execute_sharded(args, client->devices()[0]));
  REQUIRE(out.size() == 1);
  CHECK(values_of<float>(out[0].to_literal().await().value()) == std::vector<float>{2.5f});
  // The same graph as the text, so the compile cache answers the second compile.
  Graph from_bytes = require_ok(parse_stablehlo(std::string_view(bytes)));
  Graph from_text = require_ok(parse_stablehlo(
      "func.func @main(%arg0: tensor<f32>) -> tensor<f32> {\n"
      "  %0 = stablehlo.add %arg0, %arg0 : tensor<f32>\n"
      "  func.return %0 : tensor<f32>\n}\n"));
  CHECK(fingerprint(from_bytes) == fingerprint(from_text));
  const auto before = client->compile_cache_stats();
  (void)require_ok(stablehlo::compile_stablehlo(*client, std::string_view(bytes), {Shape(DType::kF32, {})}));
  CHECK(client->compile_cache_stats().first == before.first + 1);
  CHECK(require_ok(stablehlo::portable_artifact_to_text(bytes_of(bytes))).find("\"stablehlo.add\"") !=
        std::string::npos);
}

TEST_CASE("portable artifacts: every truncation is an error naming the section and offset") {
  if (skip_without_artifacts()) return;
  const std::string bytes = read_file(vhlo_dir() / "stablehlo_legalize_to_vhlo.1_20_0.mlir.bc");
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    StatusOr<stablehlo::Module> m = stablehlo::parse_portable_artifact(bytes_of(bytes).first(n));
    REQUIRE_FALSE(m.ok());
    REQUIRE(m.status().code() == StatusCode::kInvalidArgument);
    REQUIRE(contains(m.status().message(), "portable artifact"));
    if (n >= 4) REQUIRE(contains(m.status().message(), "offset"));
  }
}

TEST_CASE("portable artifacts: changed bytes give errors or programs, never crashes or hangs") {
  if (skip_without_artifacts()) return;
  std::mt19937_64 rng(7);
  std::int64_t errors = 0;
  for (const char* version : {"0_9_0", "0_14_0", "1_20_0"}) {
    const std::string original = read_file(vhlo_dir() / str_cat("stablehlo_legalize_to_vhlo.", version, ".mlir.bc"));
    // Every byte of the header and the section table, then bytes spread over the file.
    std::vector<std::size_t> offsets;
    for (std::size_t k = 0; k < 96; ++k) offsets.push_back(k);
    for (std::size_t k = 0; k < 64; ++k) offsets.push_back(rng() % original.size());
    for (std::size_t at : offsets) {
      for (std::uint8_t mask : {std::uint8_t{0xFF}, std::uint8_t{0x01}}) {
        std::string bytes = original;
        bytes[at] = static_cast<char>(bytes[at] ^ mask);
        CAPTURE(version);
        CAPTURE(at);
        StatusOr<stablehlo::detail::PortableProgram> p = stablehlo::detail::read_portable_program(
            {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()});
        if (!p.ok()) {
          ++errors;
          const StatusCode code = p.status().code();
          REQUIRE((code == StatusCode::kInvalidArgument || code == StatusCode::kUnimplemented));
          REQUIRE(contains(p.status().message(), "portable artifact"));
          continue;
        }
        // What decodes is text the parser must take or refuse cleanly.
        for (const auto& f : p->functions)
          if (f.status.ok()) (void)stablehlo::parse_module(str_cat("module {\n", f.text, "}\n"));
      }
    }
  }
  CHECK(errors > 0);
}

TEST_CASE("portable artifacts: malformed headers are refused without the data directory") {
  auto parse = [](std::string_view s) {
    return stablehlo::parse_portable_artifact({reinterpret_cast<const std::byte*>(s.data()), s.size()});
  };
  check_error(parse("MLIR"), StatusCode::kInvalidArgument, "not MLIR bytecode");
  check_error(parse(std::string_view("ML\xEFR", 4)), StatusCode::kInvalidArgument, "header section at offset 4");
  // Format version 7 (varint 0x0F) is newer than the reader knows.
  check_error(parse(std::string_view("ML\xEFR\x0FStableHLO_v1.0.0\0", 22)), StatusCode::kUnimplemented,
              "format version 7");
  // No sections at all.
  check_error(parse(std::string_view("ML\xEFR\x0DStableHLO_v1.0.0\0", 22)), StatusCode::kInvalidArgument,
              "section is missing");
  // A producer without its null byte.
  check_error(parse(std::string_view("ML\xEFR\x0DStableHLO", 14)), StatusCode::kInvalidArgument,
              "no terminating null");
  // A section longer than the file.
  check_error(parse(std::string_view("ML\xEFR\x0DS\0\x00\x7F", 10)), StatusCode::kInvalidArgument,
              "the data ends early");
  // parse_module tells bytecode from text by the magic.
  check_error(stablehlo::parse_module(std::string_view("ML\xEFR\x0DS\0", 8)), StatusCode::kInvalidArgument,
              "portable artifact");
}

}  // namespace stablehlo_bytecode_test
