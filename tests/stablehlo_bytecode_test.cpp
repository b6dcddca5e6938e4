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
#include <functional>
#include <initializer_list>
#include <limits>
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

// Shardy's attributes as JAX's sharded exports carry them (Shardy's bytecode encoding,
// shardy/dialect/sdy/ir/bytecode.td), assembled by hand: a code, then the fields, with MLIR's
// prefix varints, zigzag signed varints, one-byte flags and optional attributes as
// (index << 1 | 1) or 0. Each must decode to the text Shardy prints, which the text parser
// then reads.
namespace sdy_bytes {

/// MLIR's prefix varint: the count of trailing zero bits of the first byte says how many
/// bytes follow; values below 128 are one byte, (v << 1) | 1.
void varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  std::size_t n = 1;  // bytes: 7 bits of value per byte, up to 8; else a 0 byte and 8 raw bytes
  while (n < 9 && (n == 8 ? (v >> 56) != 0 : (v >> (7 * n)) != 0)) ++n;
  if (n == 9) {
    out.push_back(0);
    for (int k = 0; k < 8; ++k) out.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
    return;
  }
  const std::uint64_t w = (v << n) | (std::uint64_t{1} << (n - 1));
  for (std::size_t k = 0; k < n; ++k) out.push_back(static_cast<std::uint8_t>(w >> (8 * k)));
}
void svarint(std::vector<std::uint8_t>& out, std::int64_t v) {
  varint(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}

}  // namespace sdy_bytes

TEST_CASE("portable artifacts: Shardy's attributes decode to the text Shardy prints") {
  using sdy_bytes::svarint;
  using sdy_bytes::varint;
  stablehlo::detail::BcFile f;
  f.strings = {"mesh", "a", "b"};
  f.dialects = {"builtin", "sdy"};
  std::vector<std::vector<std::uint8_t>> data;
  std::vector<std::size_t> dialect;
  auto entry = [&](std::size_t d, std::initializer_list<std::function<void(std::vector<std::uint8_t>&)>> parts) {
    std::vector<std::uint8_t> bytes;
    for (const auto& p : parts) p(bytes);
    data.push_back(std::move(bytes));
    dialect.push_back(d);
    return data.size() - 1;
  };
  auto v = [](std::uint64_t x) { return [x](std::vector<std::uint8_t>& o) { varint(o, x); }; };
  auto sv = [](std::int64_t x) { return [x](std::vector<std::uint8_t>& o) { svarint(o, x); }; };
  auto byte = [](std::uint8_t x) { return [x](std::vector<std::uint8_t>& o) { o.push_back(x); }; };
  const std::size_t a = entry(0, {v(2), v(1)});          // builtin string "a"
  const std::size_t b = entry(0, {v(2), v(2)});          // builtin string "b"
  const std::size_t mesh_name = entry(0, {v(2), v(0)});  // "mesh"
  const std::size_t ref = entry(0, {v(4), v(mesh_name)});  // @mesh
  const std::size_t axis_a = entry(1, {v(1), v(1), sv(2)});  // "a"=2
  const std::size_t axis_b = entry(1, {v(1), v(2), sv(4)});  // "b"=4
  const std::size_t mesh = entry(1, {v(2), v(2), v(axis_a), v(axis_b), v(0)});
  const std::size_t mesh_ids = entry(1, {v(2), v(1), v(axis_a), v(2), sv(1), sv(0)});
  const std::size_t sub = entry(1, {v(3), sv(1), sv(2)});              // (1)2
  const std::size_t ref_a = entry(1, {v(4), v(1), v(0)});              // "a"
  const std::size_t ref_b_sub = entry(1, {v(4), v(2), v((sub << 1) | 1)});  // "b":(1)2
  const std::size_t dim_a = entry(1, {v(5), v(1), v(ref_a), byte(1), v(0)});  // {"a"}
  const std::size_t dim_open = entry(1, {v(5), v(0), byte(0), v((1 << 1) | 1)});  // {?}p1
  const std::size_t sharding = entry(1, {v(6), v(ref), v(2), v(dim_a), v(dim_open), v(1), v(ref_b_sub)});
  const std::size_t per_value = entry(1, {v(7), v(1), v(sharding)});
  const std::size_t manual = entry(1, {v(0), v(2), v(a), v(b)});
  const std::size_t inline_mesh = entry(1, {v(15), v(mesh), v(1), v(dim_a), v(0), v(1), v(ref_a)});
  const std::size_t rule = entry(1, {v(10), v(0), v(0), v(0), v(0), v(0), v(0), v(0), byte(0)});
  const std::size_t bad_sub = entry(1, {v(4), v(1), v((99 << 1) | 1)});
  const std::size_t bad_flag = entry(1, {v(5), v(0), byte(2), v(0)});
  const std::size_t short_axis = entry(1, {v(1), v(1)});
  // The builtin types and integers that Shardy's ops and the module's attributes keep.
  std::vector<std::vector<std::uint8_t>> type_data;
  auto type_entry = [&](std::initializer_list<std::function<void(std::vector<std::uint8_t>&)>> parts) {
    std::vector<std::uint8_t> bytes;
    for (const auto& p : parts) p(bytes);
    type_data.push_back(std::move(bytes));
    return type_data.size() - 1;
  };
  const std::size_t i32 = type_entry({v(0), v(32 << 2)});
  const std::size_t u8 = type_entry({v(0), v((8 << 2) | 2)});
  const std::size_t i1 = type_entry({v(0), v(1 << 2)});
  const std::size_t f32 = type_entry({v(5)});
  const std::size_t tensor = type_entry({v(13), v(2), sv(2), sv(std::numeric_limits<std::int64_t>::min()), v(f32)});
  const std::size_t complex = type_entry({v(9), v(f32)});
  const std::size_t vector = type_entry({v(19), v(1), v(4), v(f32)});
  const std::size_t int_attr = entry(0, {v(8), v(i32), sv(-2)});
  const std::size_t bool_attr = entry(0, {v(8), v(i1), byte(1)});
  for (std::size_t k = 0; k < data.size(); ++k)
    f.attributes.push_back({dialect[k], true, stablehlo::detail::ByteCursor(data[k], 0, "attribute")});
  for (const auto& bytes : type_data) f.types.push_back({0, true, stablehlo::detail::ByteCursor(bytes, 0, "type")});
  stablehlo::detail::VhloTables tables(f);
  auto type_text = [&](std::size_t i) { return require_ok(tables.type_at(i))->text; };
  CHECK(type_text(i32) == "i32");
  CHECK(type_text(u8) == "ui8");
  CHECK(type_text(i1) == "i1");
  CHECK(type_text(tensor) == "tensor<2x?xf32>");
  CHECK(type_text(complex) == "complex<f32>");
  check_error(tables.type_at(vector).status(), StatusCode::kUnimplemented, "builtin type (code 19)");
  CHECK(require_ok(tables.attr_at(int_attr))->text == "-2 : i32");
  CHECK(require_ok(tables.attr_at(bool_attr))->kind == stablehlo::detail::VAttr::Kind::kBool);
  auto text = [&](std::size_t i) {
    const auto* attr = require_ok(tables.attr_at(i));
    return attr->text;
  };
  auto word = [&](std::size_t i) {
    const auto* attr = require_ok(tables.attr_at(i));
    return attr->word;
  };
  CHECK(text(mesh) == R"(#sdy.mesh<["a"=2, "b"=4]>)");
  CHECK(word(mesh) == R"(<["a"=2, "b"=4]>)");
  CHECK(text(mesh_ids) == R"(#sdy.mesh<["a"=2], device_ids=[1, 0]>)");
  CHECK(text(sharding) == R"(#sdy.sharding<@mesh, [{"a"}, {?}p1], replicated={"b":(1)2}>)");
  CHECK(word(sharding) == R"(<@mesh, [{"a"}, {?}p1], replicated={"b":(1)2}>)");
  CHECK(text(per_value) == R"(#sdy.sharding_per_value<[<@mesh, [{"a"}, {?}p1], replicated={"b":(1)2}>]>)");
  CHECK(word(manual) == R"({"a", "b"})");
  CHECK(text(inline_mesh) == R"(#sdy.sharding<mesh<["a"=2, "b"=4]>, [{"a"}], unreduced={"a"}>)");
  // A sharding rule is kept undecoded: an op that needs it is refused naming it.
  CHECK(require_ok(tables.attr_at(rule))->text.find("Shardy attribute (code 10)") != std::string::npos);
  check_error(tables.attr_at(bad_sub).status(), StatusCode::kInvalidArgument, "out of range");
  check_error(tables.attr_at(bad_flag).status(), StatusCode::kInvalidArgument, "a boolean of value 2");
  check_error(tables.attr_at(short_axis).status(), StatusCode::kInvalidArgument, "ends early");

  // The spelling is what the text parser reads: a two-partition program over the mesh.
  const std::string program = str_cat(R"(module attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = )", word(mesh_ids), R"(
  func.func @main(%x: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> tensor<4x2xf32> {
    %0 = sdy.sharding_constraint %x <@mesh, [{}, {}]> : tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
})");
  const stablehlo::Module m = require_ok(stablehlo::parse_module(program));
  REQUIRE(m.functions.size() == 1);
  const ShardingPlan& plan = m.functions[0].sharding;
  CHECK(plan.num_partitions == 2);
  REQUIRE(plan.arguments.size() == 1);
  REQUIRE(plan.arguments[0].has_value());
  CHECK(plan.arguments[0]->kind == Sharding::Kind::kTiled);
  CHECK(plan.arguments[0]->devices == std::vector<std::int64_t>{1, 0});  // the mesh's device order
  CHECK(plan.constraints.size() == 1);
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

// ---- Writing: serialize_portable_artifact ----

/// The op names an artifact lists ("vhlo.add_v1", ...).
std::set<std::string> artifact_op_names(const std::vector<std::byte>& bytes) {
  auto f = require_ok(stablehlo::detail::read_bytecode_file(
      {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}));
  std::set<std::string> names;
  for (const auto& op : f.op_names) names.insert(std::string(op.full));
  return names;
}

/// Writes `g` for `target` and reads it back: the same graph (with CHLO's ops that have a
/// StableHLO form in that form), or the writer's refusal.
StatusOr<std::vector<std::byte>> round_trip(const Graph& g, std::string_view target) {
  StatusOr<std::vector<std::byte>> bytes = stablehlo::serialize_portable_artifact(g, target);
  if (!bytes.ok()) return bytes;
  StatusOr<stablehlo::Module> back = stablehlo::parse_portable_artifact(*bytes);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  const Graph read = require_ok(back->main());
  const Graph expected =
      stablehlo::detail::needs_chlo_expansion(g) ? require_ok(stablehlo::detail::expand_chlo(g)) : g;
  CHECK(fingerprint(read) == fingerprint(expected));
  return bytes;
}

TEST_CASE("portable artifacts written here: every corpus program reads back to its graph at 0.15.0 and 1.20.0") {
  if (skip_without_corpus()) return;
  std::int64_t written = 0, refused = 0;
  for (const auto& e : fs::directory_iterator(corpus_dir())) {
    if (e.path().extension() != ".mlir") continue;
    const std::string file_name = e.path().filename().string();
    CAPTURE(file_name);
    const Graph g = require_ok(require_ok(stablehlo::parse_module(read_file(e.path()))).main());
    for (std::string_view target : {"0.15.0", "1.20.0"}) {
      CAPTURE(target);
      StatusOr<std::vector<std::byte>> bytes = round_trip(g, target);
      if (bytes.ok()) {
        ++written;
        continue;
      }
      // Only CHLO's ops without a StableHLO form and tan before 1.4.0 are refused, by name.
      ++refused;
      REQUIRE(bytes.status().code() == StatusCode::kUnimplemented);
      const std::string message(bytes.status().message());
      CHECK_MESSAGE((contains(message, "chlo.") || contains(message, "stablehlo.tan needs StableHLO 1.4.0")), message);
      const std::function<bool(const Graph&)> has_chlo_or_tan = [&](const Graph& h) {
        for (std::int64_t i = 0; i < h.num_nodes(); ++i) {
          const Node& n = h.node(i);
          if (is_chlo(n.op) || n.op == OpCode::kTan) return true;
          for (const Graph& body : n.bodies)
            if (has_chlo_or_tan(body)) return true;
        }
        return false;
      };
      CHECK(has_chlo_or_tan(g));
    }
  }
  MESSAGE("portable artifacts written: ", written, " corpus programs read back to their graphs, ", refused, " refused");
  CHECK(written > 4000);
}

TEST_CASE("portable artifacts written here: StableHLO's own test programs at their versions read back to their graphs") {
  if (skip_without_artifacts()) return;
  std::int64_t written = 0;
  for (const auto& file : artifacts()) {
    const std::string& version = file.first;
    // Targets before 0.15.0 have older bytecode formats, which are not written.
    if (require_ok(stablehlo::detail::parse_vhlo_version(version)) < stablehlo::detail::VhloVersion{0, 15, 0}) continue;
    std::string twin_path = file.second.string();
    twin_path.resize(twin_path.size() - 3);
    // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    for (const auto& function : twin_functions(read_file(twin_path))) {
      const std::string& name = function.first;
      StatusOr<stablehlo::Module> m = stablehlo::parse_module("module {\n" + function.second + "}\n");
      if (!m.ok()) continue;  // refused by the text parser (tuples, dynamic shapes, ...)
      StatusOr<Graph> g = m->function(name);
      if (!g.ok()) continue;  // a declaration
      CAPTURE(version);
      CAPTURE(name);
      StatusOr<std::vector<std::byte>> bytes = round_trip(*g, version);
      REQUIRE_MESSAGE(bytes.ok(), bytes.status().to_string());
      CHECK(require_ok(stablehlo::portable_artifact_version(*bytes)) == version);
      ++written;
    }
  }
  MESSAGE("portable artifacts written: ", written, " functions of StableHLO's twins, each at its own version");
  CHECK(written > 3000);
}

TEST_CASE("portable artifacts written here: StableHLO's downgrade tests refuse what a target lacks and use the ops they name") {
  if (skip_without_artifacts()) return;
  // Cases StableHLO refuses that reach the writer in a form the target has: the parser turns
  // quantized ops into integer arithmetic, inlines composites, builds collective_reduce from
  // other collectives, and keeps neither function attributes nor result_accuracy requests.
  const std::set<std::string> lowered = {
      "type_per_axis_quantization", "composite", "composite_with_regions", "collective_reduce", "none_type",
      "tf32_type", "attr_result_accuracy_highest"};
  std::int64_t refused = 0, written = 0;
  for (const auto& e : fs::directory_iterator(vhlo_dir())) {
    const std::string file_name = e.path().filename().string();
    if (!file_name.starts_with("vhlo_to_version_downgrade") || contains(file_name, "patch")) continue;
    const bool invalid = contains(file_name, "invalid");
    int v[3] = {0, 0, 0};
    REQUIRE(std::sscanf(file_name.c_str() + (invalid ? 34 : 26), "%d_%d_%d", &v[0], &v[1], &v[2]) == 3);
    const std::string version = str_cat(v[0], ".", v[1], ".", v[2]);
    if (v[0] == 0 && v[1] < 15) continue;
    const std::string text = read_file(e.path());
    for (std::size_t pos = 0; pos < text.size();) {
      std::size_t end = text.find("// -----", pos);
      if (end == std::string::npos) end = text.size();
      const std::string chunk = text.substr(pos, end - pos);
      pos = end + 8;
      StatusOr<stablehlo::Module> m = stablehlo::parse_module(chunk);
      if (!m.ok()) continue;  // refused by the text parser (futures, buffers, ...)
      // Each function of the chunk, with the checks written inside it (in a chunk StableHLO
      // refuses, the first: the others are what it calls).
      for (std::size_t func = chunk.find("func.func"); func != std::string::npos;
           func = invalid ? std::string::npos : func) {
        const std::size_t next = chunk.find("func.func", func + 1);
        const std::string span = chunk.substr(func, next == std::string::npos ? std::string::npos : next - func);
        func = next;
        std::string name = span.substr(span.find('@') + 1);
        name = name.substr(0, name.find('('));
        CAPTURE(file_name);
        CAPTURE(name);
        const Graph g = require_ok(m->function(name));
        StatusOr<std::vector<std::byte>> bytes = stablehlo::serialize_portable_artifact(g, version);
        const bool expect_refusal = contains(chunk, "expected-error") && !lowered.count(name) &&
                                    !(name.ends_with("_invalid") && version == "1.9.0");
        if (expect_refusal) {
          CHECK_MESSAGE(bytes.status().code() == StatusCode::kUnimplemented, "written for " << version);
          if (!bytes.ok()) CHECK(contains(bytes.status().message(), "needs StableHLO"));
          ++refused;
          continue;
        }
        REQUIRE_MESSAGE(bytes.ok(), bytes.status().to_string());
        (void)round_trip(g, version);
        // `// CHECK: vhlo.cbrt_v1`: the version of the op the target takes.
        const std::set<std::string> ops = artifact_op_names(*bytes);
        for (std::size_t at = span.find("CHECK: vhlo."); at != std::string::npos; at = span.find("CHECK: vhlo.", at + 1)) {
          std::size_t stop = at + 7;
          while (stop < span.size() && (std::isalnum(static_cast<unsigned char>(span[stop])) || span[stop] == '_' ||
                                        span[stop] == '.'))
            ++stop;
          const std::string op = span.substr(at + 7, stop - at - 7);
          if (op == "vhlo.func_v1") continue;
          CHECK_MESSAGE(ops.count(op) == 1, op << " is not in the artifact");
        }
        ++written;
      }
    }
  }
  MESSAGE("StableHLO's downgrade tests: ", refused, " refused as StableHLO refuses them, ", written, " written");
  CHECK(refused >= 15);
  CHECK(written >= 20);
}

/// A prefix varint at `at` (the encoding written independently of the library's reader).
std::uint64_t test_varint(const std::vector<std::byte>& b, std::size_t& at) {
  const auto first = static_cast<unsigned>(b.at(at));
  int n = 1;
  while (n <= 8 && !(first & (1u << (n - 1)))) ++n;
  if (n == 9) {
    std::uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= static_cast<std::uint64_t>(b.at(at + 1 + k)) << (8 * k);
    at += 9;
    return v;
  }
  std::uint64_t v = 0;
  for (int k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(b.at(at + k)) << (8 * k);
  at += n;
  return v >> n;
}

TEST_CASE("portable artifacts written here: a program runs the same from its artifact, whose sections come in MLIR's order") {
  // Control flow whose branches use enclosing values, a while, a reduce with its body, a
  // dot, a result_accuracy op, sub-byte and boolean constants.
  const Graph g = require_ok(parse_stablehlo(R"(
module @traced {
  func.func public @main(%x: tensor<4x3xf32>, %i: tensor<i32>) -> (tensor<4xf32>, tensor<i32>, tensor<3xi32>) {
    %w = stablehlo.constant dense<[[0.5, -1.0], [2.0, 0.25], [1.5, -0.75]]> : tensor<3x2xf32>
    %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %t = stablehlo.tanh %d : tensor<4x2xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %r = stablehlo.reduce(%t init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x2xf32>, tensor<f32>) -> tensor<4xf32>
    %c = "stablehlo.case"(%i) ({
      %n = stablehlo.negate %r : tensor<4xf32>
      stablehlo.return %n : tensor<4xf32>
    }, {
      %e = stablehlo.exponential %r : tensor<4xf32>
      %s = stablehlo.add %e, %r : tensor<4xf32>
      stablehlo.return %s : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %ten = stablehlo.constant dense<10> : tensor<i32>
    %l:2 = "stablehlo.while"(%zero, %one) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %p = stablehlo.compare LT, %a, %ten : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }, {
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %a1 = stablehlo.add %a, %one : tensor<i32>
      %b1 = stablehlo.add %b, %a : tensor<i32>
      stablehlo.return %a1, %b1 : tensor<i32>, tensor<i32>
    }) : (tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)
    %q = stablehlo.constant dense<[-8, 7, -1]> : tensor<3xi4>
    %qi = stablehlo.convert %q : (tensor<3xi4>) -> tensor<3xi32>
    %m = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
    %io = stablehlo.iota dim = 0 : tensor<3xi32>
    %sel = stablehlo.select %m, %qi, %io : tensor<3xi1>, tensor<3xi32>
    return %c, %l#1, %sel : tensor<4xf32>, tensor<i32>, tensor<3xi32>
  }
}
)"));
  std::mt19937_64 rng(7);
  const Literal x = random_literal<float>(rng, Shape(DType::kF32, {4, 3}), -1, 1);
  auto client = cpu::Client<>::create({.device_count = 1}).value();
  for (std::int32_t branch : {0, 1}) {
    const std::vector<Literal> args = {x, Literal::scalar(branch)};
    const std::vector<Literal> expected = run_on(*client, g, args);
    CHECK(values_of<std::int32_t>(expected[2]) == std::vector<std::int32_t>{-8, 1, -1});
    CHECK(values_of<std::int32_t>(expected[1]) == std::vector<std::int32_t>{46});
    for (std::string_view target : {"0.15.0", "1.9.0", "1.20.0"}) {
      CAPTURE(target);
      const std::vector<std::byte> bytes = require_ok(round_trip(g, target));
      auto exe = require_ok(client->compile(bytes));
      std::vector<cpu::Client<>::buffer_type> buffers;
      for (const Literal& a : args) buffers.push_back(require_ok(client->buffer_from_literal(a)));
      std::vector<cpu::Client<>::buffer_type*> pointers;
      for (auto& b : buffers) pointers.push_back(&b);
      auto out = require_ok(exe.execute_sharded(pointers, client->devices()[0]));
      REQUIRE(out.size() == expected.size());
      for (std::size_t k = 0; k < out.size(); ++k) CHECK(out[k].to_literal().await().value() == expected[k]);
    }
  }
  // The container: magic, format 6, the target as producer, then the sections in the order
  // MLIR writes them, each once.
  const std::vector<std::byte> bytes = require_ok(stablehlo::serialize_portable_artifact(g, "1.9.0"));
  const std::string head(reinterpret_cast<const char*>(bytes.data()), 22);
  CHECK(head == std::string("ML\xEFR\x0DStableHLO_v1.9.0\0", 22));
  std::vector<int> sections;
  for (std::size_t at = 22; at < bytes.size();) {
    const int id = static_cast<int>(bytes[at++]);
    const std::uint64_t length = test_varint(bytes, at);
    sections.push_back(id);
    at += length;
    REQUIRE(at <= bytes.size());
  }
  CHECK(sections == std::vector<int>{1, 3, 2, 4, 6, 5, 0, 8});
  // The ops at their 1.9.0 versions: exponential_v2 came with 1.9.0, tanh_v2 with 1.10.0.
  const std::set<std::string> ops = artifact_op_names(bytes);
  for (const char* op : {"builtin.module", "vhlo.func_v1", "vhlo.exponential_v2", "vhlo.tanh_v1", "vhlo.case_v1",
                         "vhlo.while_v1", "vhlo.reduce_v1", "vhlo.dot_general_v2", "vhlo.return_v1"})
    CHECK_MESSAGE(ops.count(op) == 1, op);
  // Written twice, the same bytes.
  CHECK(require_ok(stablehlo::serialize_portable_artifact(g, "1.9.0")) == bytes);
}

/// Runs `g` (one f64-convertible result) on the CPU client with arguments `args`, in f64.
Literal run_in_f64(const Graph& g, const std::vector<Literal>& args) {
  static auto client = cpu::Client<>::create({.device_count = 1}).value();
  const std::vector<Literal> out = run_on(*client, g, args);
  return require_ok(out[0].convert(DType::kF64));
}

/// The CHLO op `op` applied to operands of `type`, as parsed text, and its artifact read back.
struct WrittenChlo {
  Graph chlo, written;
};
WrittenChlo write_chlo(std::string_view op, std::string_view type, std::int64_t n, int arity) {
  const std::string t = str_cat("tensor<", n, "x", type, ">");
  const std::string params = arity == 1 ? str_cat("%a: ", t) : str_cat("%a: ", t, ", %b: ", t);
  const std::string operands = arity == 1 ? "%a" : "%a, %b";
  const std::string types = arity == 1 ? t : str_cat("(", t, ", ", t, ")");
  const Graph g = require_ok(parse_stablehlo(str_cat("func.func @main(", params, ") -> ", t, " {\n  %0 = chlo.", op, " ",
                                                     operands, " : ", types, " -> ", t, "\n  return %0 : ", t, "\n}\n")));
  const std::vector<std::byte> bytes = require_ok(round_trip(g, "1.0.0"));
  CHECK(!contains(require_ok(stablehlo::portable_artifact_to_text(bytes)), "chlo."));
  return {g, require_ok(parse_stablehlo(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())))};
}

TEST_CASE("portable artifacts written here: CHLO's unary ops are written as StableHLO ops that compute the same") {
  // The oracle: the CPU client running the CHLO op itself (the C library's functions and
  // core/special_math.hpp, in double), on values across each function's domain and its edges:
  // zeros, tiny and huge values, branch points, overflow thresholds, poles, infinities, NaN.
  // The tolerance is relative, a few units in the last place of each type (f16 and bf16
  // round once from f32), measured against max(|expected|, floor): the floor is the type's
  // smallest normal, or 1 for lgamma and digamma, whose Lanczos and recurrence sums are
  // accurate absolutely near their zeros (as XLA's are).
  struct Case {
    const char* op;
    std::vector<double> xs;
    bool absolute_near_zero = false;
  };
  const std::vector<double> trig = {0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 1e-4, 0.3, -0.3, 0.5, 0.99, 0.999999,
                                    1.0, -1.0, 1.0000001, 1.5, 2.0, -2.0, 10.0, -10.0, 50, 88.5, 89.5, -89.5,
                                    700, 710, 1e10, -1e10, 1e20, 1e30, -1e30, 1e200, 1e300, INFINITY, -INFINITY, NAN};
  const std::vector<Case> cases = {
      {"atan", trig},
      {"asin", trig},
      {"sinh", trig},
      {"cosh", trig},
      {"asinh", trig},
      {"acosh", trig},
      {"atanh", trig},
      {"erfc", {0.0, -0.0, 1e-30, -1e-30, 0.1, -0.3, 0.49, 0.5, 0.51, 0.75, 1, -1, 1.5, 2, 2.5, 3, 3.7, 4, 5, 6,
                8, 9.3, 10, 10.05, 12, 15, -5, -30, 20, 26, 26.5, 27, 30, INFINITY, -INFINITY, NAN}},
      {"erf_inv", {0.0, -0.0, 1e-300, 1e-30, -1e-10, 1e-5, 0.1, -0.3, 0.4999, 0.5, 0.5000001, 0.7, -0.9, 0.99,
                   0.999, 0.999999, 1 - 1e-12, -(1 - 1e-15), 1 - 0x1p-53, 1, -1, 1.0000001, 1.5, -2, INFINITY, NAN}},
      {"lgamma", {0.0, -0.0, 1e-300, 1e-30, -1e-30, 1e-10, 1e-7, 0.1, 0.5, 0.9, 1, 1.0000001, 1.25, 1.5, 1.99, 2,
                  2.5, 3, 7.5, 10, 100, 171.5, 1e5, 1e10, 1e300, 2.5e305, 2.558e305, 3e305, -1e-16, -1e-12, -1e-8,
                  -1e-5, -0.3, -0.5, -1, -1.5, -2.0001, -2.9999, -10.25, -100.5, -1e10, -5e36, -3e305, INFINITY,
                  -INFINITY, NAN},
       true},
      {"digamma", {0.0, -0.0, -1, -2, 1e-30, -1e-30, 1e-8, 0.1, 0.5, 1, 1.4616321449683622, 1.5, 2, 5, 9.99, 10,
                   10.5, 30, 100, 1e10, 1e300, -1e-14, -1e-10, -1e-6, -0.3, -0.5, -0.9999, -1.0001, -2.5, -7.75,
                   -100.25, -1e6 + 0.125, INFINITY, -INFINITY, NAN},
       true},
      {"bessel_i1e", {0.0, -0.0, 1e-300, 1e-30, -1e-8, 0.1, 0.5, 1, -1, 1.99, 2, 2.01, 5, 7.7, 7.99, 8, -8, 8.01, 9,
                      10, 20, 50, 100, 499, 501, 1e4, -1e10, 1e300, INFINITY, -INFINITY, NAN}},
  };
  for (const Case& c : cases) {
    const auto n = static_cast<std::int64_t>(c.xs.size());
    Literal x64(Shape(DType::kF64, {n}));
    std::copy(c.xs.begin(), c.xs.end(), x64.data<double>().begin());
    for (const std::string type : {"f64", "f32", "f16", "bf16"}) {
      const std::string op = c.op;
      CAPTURE(op);
      CAPTURE(type);
      const WrittenChlo w = write_chlo(c.op, type, n, 1);
      const DType dt = w.chlo.shape(w.chlo.parameters()[0]).dtype();
      const Literal x = require_ok(x64.convert(dt));
      const Literal expected = run_in_f64(w.chlo, {x}), got = run_in_f64(w.written, {x});
      const Literal args = require_ok(x.convert(DType::kF64));
      REQUIRE(got.shape() == expected.shape());
      const double tol = dt == DType::kF64 ? 1e-14 : dt == DType::kF32 ? 3e-6 : dt == DType::kF16 ? 2e-3 : 1.6e-2;
      const double floor = c.absolute_near_zero ? 1.0
                           : dt == DType::kF64  ? std::numeric_limits<double>::min()
                           : dt == DType::kF32  ? double(std::numeric_limits<float>::min())
                           : dt == DType::kF16  ? 0x1p-14
                                                : 0x1p-126;
      for (std::int64_t i = 0; i < n; ++i) {
        const double e = expected.data<double>()[static_cast<std::size_t>(i)];
        const double v = got.data<double>()[static_cast<std::size_t>(i)];
        const double arg = args.data<double>()[static_cast<std::size_t>(i)];
        CAPTURE(arg);
        if (std::isnan(e)) {
          CHECK(std::isnan(v));
        } else if (std::isinf(e) || (e == 0 && !c.absolute_near_zero)) {
          CHECK(v == e);
          CHECK(std::signbit(v) == std::signbit(e));
        } else {
          CHECK(std::abs(v - e) <= tol * std::max(std::abs(e), floor));
        }
      }
    }
  }
}

TEST_CASE("portable artifacts written here: CHLO's next_after is written as integer steps on the bits, exact") {
  // Every pair of these values, against the CPU's own next_after, bit for bit: signed zeros,
  // the smallest subnormals, the largest finite values, infinities and NaN among them.
  for (const std::string type : {"f64", "f32", "f16", "bf16"}) {
    CAPTURE(type);
    const DType dt = type == "f64"   ? DType::kF64
                     : type == "f32" ? DType::kF32
                     : type == "f16" ? DType::kF16
                                     : DType::kBF16;
    const double max = dt == DType::kF64 ? std::numeric_limits<double>::max()
                       : dt == DType::kF32 ? double(std::numeric_limits<float>::max())
                       : dt == DType::kF16 ? 65504.0
                                           : 0x1.fep127;
    const double tiny = dt == DType::kF64 ? std::numeric_limits<double>::denorm_min()
                        : dt == DType::kF32 ? double(std::numeric_limits<float>::denorm_min())
                        : dt == DType::kF16 ? 0x1p-24
                                            : 0x1p-133;
    const std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 3.5, tiny, -tiny, max, -max, INFINITY, -INFINITY, NAN};
    const auto m = static_cast<std::int64_t>(values.size());
    Literal a64(Shape(DType::kF64, {m * m})), b64(Shape(DType::kF64, {m * m}));
    for (std::int64_t i = 0; i < m * m; ++i) {
      a64.data<double>()[static_cast<std::size_t>(i)] = values[static_cast<std::size_t>(i / m)];
      b64.data<double>()[static_cast<std::size_t>(i)] = values[static_cast<std::size_t>(i % m)];
    }
    const WrittenChlo w = write_chlo("next_after", type, m * m, 2);
    const Literal a = require_ok(a64.convert(dt)), b = require_ok(b64.convert(dt));
    auto client = cpu::Client<>::create({.device_count = 1}).value();
    const Literal expected = run_on(*client, w.chlo, {a, b})[0], got = run_on(*client, w.written, {a, b})[0];
    const std::size_t width = byte_size(dt);
    for (std::int64_t i = 0; i < m * m; ++i) {
      CAPTURE(values[static_cast<std::size_t>(i / m)]);
      CAPTURE(values[static_cast<std::size_t>(i % m)]);
      const auto* e = static_cast<const unsigned char*>(expected.untyped_data()) + static_cast<std::size_t>(i) * width;
      const auto* v = static_cast<const unsigned char*>(got.untyped_data()) + static_cast<std::size_t>(i) * width;
      CHECK(std::equal(e, e + width, v));
    }
  }
}

TEST_CASE("portable artifacts written here: the corpus's CHLO programs pass their own checks once expanded") {
  // An oracle independent of this project: the values JAX computed for each CHLO op of the
  // corpus, checked with the corpus's own checks on the graph the writer writes (the CHLO ops
  // replaced by their StableHLO form). A program whose unexpanded form does not pass (marked
  // inaccurate upstream) is not counted.
  if (skip_without_corpus()) return;
  auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
  std::int64_t expanded = 0;
  for (const auto& e : fs::directory_iterator(corpus_dir())) {
    if (e.path().extension() != ".mlir") continue;
    const std::string text = read_file(e.path());
    if (!contains(text, "chlo.")) continue;
    const std::string file_name = e.path().filename().string();
    CAPTURE(file_name);
    if (stablehlo::run_test_program(*client, text).verdict != stablehlo::Verdict::kPass) continue;
    const stablehlo::Module module = require_ok(stablehlo::parse_module(text));
    const stablehlo::Function* main = stablehlo::detail::entry_function(module);
    REQUIRE(main != nullptr);
    if (!stablehlo::detail::needs_chlo_expansion(main->graph)) continue;
    const Graph g = require_ok(stablehlo::detail::expand_chlo(main->graph));
    const std::vector<Literal> outputs = run_on(*client, g, {});
    for (const stablehlo::Check& check : main->checks) {
      const Literal& expected = check.expected_literal ? *check.expected_literal
                                                       : outputs[static_cast<std::size_t>(check.expected_output)];
      const Status s = stablehlo::evaluate_check(check.kind, outputs[static_cast<std::size_t>(check.actual_output)],
                                                 expected, check.tolerance);
      CHECK_MESSAGE(s.ok(), s.to_string());
    }
    ++expanded;
  }
  MESSAGE(expanded, " corpus programs with CHLO ops checked in their expanded form");
  // atan .. atanh, erfc, erf_inv, lgamma, digamma, bessel_i1e, next_after over their float types.
  CHECK(expanded >= 40);
}

TEST_CASE("portable artifacts written here: targets and ops an artifact cannot hold are refused by name") {
  const Graph add = require_ok(parse_stablehlo(
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"));
  check_error(stablehlo::serialize_portable_artifact(add, "1.2"), StatusCode::kInvalidArgument, "not a StableHLO version");
  check_error(stablehlo::serialize_portable_artifact(add, "v1.2.0"), StatusCode::kInvalidArgument, "not a StableHLO version");
  check_error(stablehlo::serialize_portable_artifact(add, "0.14.0"), StatusCode::kUnimplemented, "0.15.0 to 1.20.0");
  check_error(stablehlo::serialize_portable_artifact(add, "1.21.0"), StatusCode::kUnimplemented, "0.15.0 to 1.20.0");
  CHECK(stablehlo::serialize_portable_artifact(add, "0.15.0").ok());
  auto unary = [](std::string_view op, std::string_view type) {
    return require_ok(parse_stablehlo(str_cat("func.func @main(%a: tensor<2x", type, ">) -> tensor<2x", type,
                                              "> {\n  %0 = ", op, " %a : tensor<2x", type, ">\n  return %0 : tensor<2x",
                                              type, ">\n}\n")));
  };
  check_error(stablehlo::serialize_portable_artifact(unary("chlo.asin", "complex<f32>"), "1.20.0"),
              StatusCode::kUnimplemented, "chlo.asin on c64 values has no VHLO form");
  check_error(stablehlo::serialize_portable_artifact(unary("stablehlo.tan", "f32"), "1.3.0"), StatusCode::kUnimplemented,
              "stablehlo.tan needs StableHLO 1.4.0");
  CHECK(stablehlo::serialize_portable_artifact(unary("stablehlo.tan", "f32"), "1.4.0").ok());
  check_error(stablehlo::serialize_portable_artifact(unary("stablehlo.negate", "i2"), "1.1.0"),
              StatusCode::kUnimplemented, "the element type s2 needs StableHLO 1.2.0");
  check_error(stablehlo::serialize_portable_artifact(unary("stablehlo.negate", "f8E4M3"), "1.6.0"),
              StatusCode::kUnimplemented, "needs StableHLO 1.7.0");
  // A gather with batching dimensions needs gather_v2 (1.1.0).
  const Graph gather = require_ok(parse_stablehlo(R"(
func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x4xf32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 4>}> : (tensor<2x3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
)"));
  check_error(stablehlo::serialize_portable_artifact(gather, "1.0.0"), StatusCode::kUnimplemented,
              "stablehlo.gather with operand_batching_dims needs StableHLO 1.1.0");
  (void)require_ok(round_trip(gather, "1.1.0"));
  // A LAPACK call as JAX writes jaxlib's custom calls: api_version 1, an empty backend_config,
  // the flags in mhlo.backend_config, index layouts.
  const Graph potrf = require_ok(parse_stablehlo(R"(
func.func @main(%a: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>) {
  %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
  return %0#0, %0#1 : tensor<3x3xf32>, tensor<i32>
}
)"));
  for (std::string_view target : {"0.15.0", "1.17.0", "1.20.0"}) {
    const std::vector<std::byte> bytes = require_ok(round_trip(potrf, target));
    const std::string text = require_ok(stablehlo::portable_artifact_to_text(bytes));
    CHECK(contains(text, "\"lapack_spotrf_ffi\""));
    CHECK(contains(text, "mhlo.backend_config = {uplo = 76 : ui8}"));
    CHECK(contains(text, "tensor<2xindex>"));
    CHECK(!contains(text, "api_version = 4"));
    CHECK(artifact_op_names(bytes).count(target == "1.20.0" ? "vhlo.custom_call_v2" : "vhlo.custom_call_v1") == 1);
  }
  // A window over a scalar: its padding has no rows but still two columns, as StableHLO's
  // verifier wants.
  const Graph scalar_window = require_ok(parse_stablehlo(R"(
func.func @main(%x: tensor<f32>, %init: tensor<f32>) -> tensor<f32> {
  %0 = "stablehlo.reduce_window"(%x, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64>} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
)"));
  CHECK(contains(require_ok(stablehlo::portable_artifact_to_text(require_ok(round_trip(scalar_window, "1.0.0")))),
                 "tensor<0x2xi64>"));
  // chlo.top_k and chlo.erf go as XLA's custom calls, the form JAX's serializer gives them,
  // which the parser reads back as the same ops.
  const Graph chlo = require_ok(parse_stablehlo(R"(
func.func @main(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x5xf32>) {
  %v, %i = chlo.top_k(%x, k = 3) : tensor<2x5xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
  %e = chlo.erf %x : tensor<2x5xf32> -> tensor<2x5xf32>
  return %v, %i, %e : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x5xf32>
}
)"));
  const Graph xla = require_ok(parse_stablehlo(R"(
func.func @main(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x5xf32>) {
  %0:2 = stablehlo.custom_call @mhlo.topk(%x) {mhlo.attributes = {k = 3 : i64, largest = true}, mhlo.version = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
  %1 = stablehlo.custom_call @mhlo.erf(%x) {mhlo.attributes = {}, mhlo.version = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0#0, %0#1, %1 : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x5xf32>
}
)"));
  CHECK(fingerprint(chlo) == fingerprint(xla));
  for (std::string_view target : {"0.15.0", "1.20.0"}) {
    const std::vector<std::byte> bytes = require_ok(round_trip(chlo, target));
    const std::string text = require_ok(stablehlo::portable_artifact_to_text(bytes));
    CHECK(contains(text, "\"mhlo.topk\""));
    CHECK(contains(text, "\"mhlo.erf\""));
    CHECK(contains(text, "largest = true"));
  }
  auto topk_call = [](std::string_view attributes) {
    return parse_stablehlo(str_cat(
        "func.func @main(%x: tensor<5xf32>) -> (tensor<2xf32>, tensor<2xi32>) {\n"
        "  %0:2 = stablehlo.custom_call @mhlo.topk(%x) {", attributes,
        "} : (tensor<5xf32>) -> (tensor<2xf32>, tensor<2xi32>)\n  return %0#0, %0#1 : tensor<2xf32>, tensor<2xi32>\n}\n"));
  };
  check_error(topk_call("mhlo.attributes = {k = 2 : i64, largest = false}, mhlo.version = 1 : i64"),
              StatusCode::kUnimplemented, "largest = false");
  check_error(topk_call("mhlo.attributes = {k = 2 : i64}, mhlo.version = 2 : i64"), StatusCode::kUnimplemented,
              "mhlo.version other than 1");
  check_error(topk_call("mhlo.attributes = {largest = true}"), StatusCode::kInvalidArgument, "needs mhlo.attributes");
  check_error(topk_call("mhlo.attributes = {k = 3 : i64}"), StatusCode::kInvalidArgument, "");
  // The text overload: parse, then write.
  const std::vector<std::byte> from_text = require_ok(stablehlo::serialize_portable_artifact(
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %a, %a : tensor<2xf32>\n"
      "  return %0 : tensor<2xf32>\n}\n",
      "1.0.0"));
  CHECK(from_text == require_ok(stablehlo::serialize_portable_artifact(add, "1.0.0")));
  check_error(stablehlo::serialize_portable_artifact("func.func @main(", "1.0.0"), StatusCode::kInvalidArgument, "");
}

}  // namespace stablehlo_bytecode_test
