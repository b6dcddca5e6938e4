#pragma once
// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011): the block function behind rng_bit_generator's THREE_FRY, in the layout XLA and
// JAX use. The state is u64[2] = [key, counter]; block i encrypts the 64-bit counter + i
// under the 64-bit key, each split into its low and high 32-bit halves, and gives two 32-bit
// words x0, x1. A 64-bit output element is x0 | x1 << 32; 32-bit elements take x0 then x1.

#include <array>
#include <cstdint>

namespace pjrt_lite::threefry {

/// The two words of Threefry-2x32-20 of counter (c0, c1) under key (k0, k1).
constexpr std::array<std::uint32_t, 2> block(std::uint32_t k0, std::uint32_t k1,
                                             std::uint32_t c0, std::uint32_t c1) {
  constexpr std::uint32_t kParity = 0x1BD11BDA;  // the key schedule's constant
  constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const std::uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ kParity};
  std::uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
  for (std::uint32_t i = 0; i < 5; ++i) {  // five groups of four rounds, a key injection after each
    for (int r : kRotations[i % 2]) {
      x0 += x1;
      x1 = (x1 << r) | (x1 >> (32 - r));
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + i + 1;
  }
  return {x0, x1};
}

/// The block of counter value `counter` under `key`.
constexpr std::array<std::uint32_t, 2> block(std::uint64_t key, std::uint64_t counter) {
  return block(static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32),
               static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32));
}

/// How many blocks `n` output elements of `element_bits` (32 or 64) bits use: the amount
/// the counter advances by.
constexpr std::uint64_t blocks_for(std::int64_t n, int element_bits) {
  const auto count = static_cast<std::uint64_t>(n);
  return element_bits == 64 ? count : (count + 1) / 2;
}

}  // namespace pjrt_lite::threefry
