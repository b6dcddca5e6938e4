#pragma once
// Seed graphs for the fuzzers: what build_random_graph makes of fixed pseudo-random inputs,
// kept when they build. Deterministic, so every machine seeds the same corpus.
#include <cstdint>
#include <vector>

#include "targets.hpp"

namespace pjrt_lite::fuzz {

inline std::vector<Graph> seed_graphs(int attempts = 4000, std::size_t keep = 200) {
  std::vector<Graph> graphs;
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < attempts && graphs.size() < keep; ++k) {
    std::vector<std::byte> bytes(256);
    for (std::byte& b : bytes) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      b = static_cast<std::byte>(state >> 56);
    }
    ByteSource src(bytes);
    StatusOr<Graph> g = build_random_graph(src);
    if (g.ok() && g->nodes().size() > 2) graphs.push_back(std::move(g).value());
  }
  return graphs;
}

}  // namespace pjrt_lite::fuzz
