// The fuzz targets' bodies (tests/fuzz/targets.hpp) inside the normal suite: every kept input
// under tests/fuzz/regressions/<target>/ replays without breaking an invariant (a broken one
// aborts the run), and the generated seeds behave as their construction promises.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/seeds.hpp"
#include "fuzz/targets.hpp"

namespace fuzz_regression_test {

using namespace pjrt_lite;

namespace {

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

/// Replays every kept input of `target` through `run`; returns how many there were.
template <class Run>
int replay(const std::string& target, Run run) {
  const std::filesystem::path dir =
      std::filesystem::path(PJRT_LITE_SOURCE_DIR) / "tests/fuzz/regressions" / target;
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir), dir.string());
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename() == "README") continue;
    CAPTURE(entry.path().string());
    const Status s = run(read_bytes(entry.path()));
    // Bad input comes back as a Status with a message, never an empty error.
    CHECK((s.ok() || !s.message().empty()));
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("fuzz regressions: kept inputs replay through their targets") {
  const int kept = replay("parser", [](const std::vector<std::byte>& b) { return fuzz::parse_one(b); }) +
                   replay("deserialize", [](const std::vector<std::byte>& b) { return fuzz::deserialize_one(b); }) +
                   replay("builder", [](const std::vector<std::byte>& b) { return fuzz::build_one(b); }) +
                   replay("bytecode", [](const std::vector<std::byte>& b) { return fuzz::bytecode_one(b); });
  MESSAGE(kept, " kept fuzz inputs replayed");
}

TEST_CASE("fuzz seeds: generated graphs parse back, deserialize and run like the reference") {
  const std::vector<Graph> seeds = fuzz::seed_graphs(4000, 40);
  REQUIRE(seeds.size() == 40);
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 2}).value();
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    CAPTURE(k);
    const std::string text = to_stablehlo(seeds[k]);
    CHECK(fuzz::parse_one(std::as_bytes(std::span(text.data(), text.size()))).ok());
    auto exe = client->compile(seeds[k]);
    REQUIRE(exe.ok());
    std::vector<std::byte> bytes = exe->serialize();
    bytes.insert(bytes.begin(), std::byte{0});  // mode 0: the checksums stay as written
    CHECK(fuzz::deserialize_one(bytes).ok());
    // A flipped byte in the body is caught by the checksum: a Status, not a crash.
    bytes[bytes.size() / 2] ^= std::byte{0x5a};
    const Status corrupt = fuzz::deserialize_one(bytes);
    CHECK_FALSE(corrupt.ok());
    CHECK(corrupt.code() == StatusCode::kDataLoss);
  }
}

}  // namespace fuzz_regression_test
