#pragma once
// The counter-based generators behind rng_bit_generator, Threefry-2x32-20 and Philox-4x32-10
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), and how XLA lays
// their words out over an output, so that programs JAX exports get XLA's bits.
//
// THREE_FRY: the state u64[2] is [key, counter]; block b encrypts the 64-bit counter + b under
// the key, both split into low and high 32-bit words, into two words x0, x1.
// - 64-bit elements: element i is block i, x0 | x1 << 32; the counter advances by n.
// - 32-bit elements: the output is split in halves along one dimension (the first of even
//   size, else the first of the largest size): element (..., j, ...) of that dimension takes
//   word j % 2 of the block numbered by (..., j / 2, ...) in row-major order over the halved
//   shape; the counter advances by the size of the halved shape.
// - 8- and 16-bit elements: the low bits of the 32-bit elements of the same shape.
// PHILOX: the key is state[0]; the 128-bit counter is [state[1] (low), state[0] (high)] for a
// u64[2] state, [state[1], state[2]] for u64[3]; block b encrypts counter + b into four
// words w0..w3, its input words the counter's 32-bit words from the least significant.
// - 32-bit elements: element i is word i % 4 of block i / 4; ceil(n / 4) blocks.
// - 64-bit elements: element i is w0 | w1 << 32 (i even) or w2 | w3 << 32 (i odd) of block
//   i / 2; ceil(n / 2) blocks.
// - 8- and 16-bit elements: the low bits of the 32-bit elements.
// The new state is [key, counter + blocks] (for PHILOX with u64[2], the low word only).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace pjrt_lite::inline v0_1::random_bits {

/// Threefry-2x32 with 20 rounds: the two words of counter (c0, c1) under key (k0, k1).
constexpr std::array<std::uint32_t, 2> threefry2x32(std::uint32_t k0, std::uint32_t k1,
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

/// Philox-4x32 with 10 rounds: the four words of counter `c` under key (k0, k1).
constexpr std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> c,
                                                  std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint64_t kMultiplier0 = 0xD2511F53, kMultiplier1 = 0xCD9E8D57;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round, k0 += kWeyl0, k1 += kWeyl1) {
    const std::uint64_t p0 = kMultiplier0 * c[0], p1 = kMultiplier1 * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<std::uint32_t>(p0)};
  }
  return c;
}

enum class Generator : std::uint8_t { kThreeFry, kPhilox };

/// Which bits each element of one output gets (see the top of this file). Cheap to copy;
/// element() is thread-safe, each thread passing its own Cache.
class Plan {
 public:
  /// The last block computed, so that the elements sharing a block compute it once.
  struct Cache {
    std::uint64_t block = ~std::uint64_t{0};
    std::array<std::uint32_t, 4> words{};
  };

  /// `state`: 2 words (3 allowed for kPhilox); `dims`: the output's; `bits`: 8, 16, 32 or 64.
  Plan(Generator generator, std::span<const std::uint64_t> state,
       std::span<const std::int64_t> dims, int bits)
      : generator_(generator), bits_(bits), key_(state[0]), low_(state[1]),
        high_(state.size() > 2 ? state[2] : state[0]), state_size_(state.size()) {
    count_ = 1;
    for (std::int64_t d : dims) count_ *= d;
    if (generator_ == Generator::kPhilox) {
      blocks_ = bits_ == 64 ? (count_ + 1) / 2 : (count_ + 3) / 4;
      return;
    }
    if (bits_ == 64) {
      blocks_ = count_;
      return;
    }
    // The halved dimension: the first of even size, else the first of the largest size.
    std::size_t split = dims.size();
    for (std::size_t d = 0; d < dims.size() && split == dims.size(); ++d)
      if (dims[d] % 2 == 0) split = d;
    if (split == dims.size())
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (split == dims.size() || dims[d] > dims[split]) split = d;
    split_size_ = split < dims.size() ? dims[split] : 1;  // a scalar halves [1]
    for (std::size_t d = split + 1; d < dims.size(); ++d) inner_ *= dims[d];
    const std::int64_t outer = split_size_ * inner_ == 0 ? 0 : count_ / (split_size_ * inner_);
    blocks_ = outer * ((split_size_ + 1) / 2) * inner_;
  }

  [[nodiscard]] std::int64_t count() const { return count_; }
  /// How far the counter advances.
  [[nodiscard]] std::int64_t blocks() const { return blocks_; }

  /// Element i's bits, in the low `bits` bits.
  std::uint64_t element(std::int64_t i, Cache& cache) const {
    const auto u = static_cast<std::uint64_t>(i);
    if (generator_ == Generator::kPhilox) {
      if (bits_ == 64) {
        const auto& w = philox_block(u / 2, cache);
        return u % 2 == 0 ? (w[0] | std::uint64_t{w[1]} << 32) : (w[2] | std::uint64_t{w[3]} << 32);
      }
      return narrow(philox_block(u / 4, cache)[u % 4]);
    }
    if (bits_ == 64) {
      const auto [x0, x1] = threefry(low_ + u);
      return x0 | std::uint64_t{x1} << 32;
    }
    const std::int64_t in = i % inner_, along = i / inner_ % split_size_, out = i / inner_ / split_size_;
    const auto block =
        static_cast<std::uint64_t>((out * ((split_size_ + 1) / 2) + along / 2) * inner_ + in);
    if (cache.block != block) {
      const auto w = threefry(low_ + block);
      cache = {block, {w[0], w[1], 0, 0}};
    }
    return narrow(cache.words[static_cast<std::size_t>(along % 2)]);
  }

  /// The state after the output: [key, counter + blocks()] in the state's own size.
  void next_state(std::span<std::uint64_t> out) const {
    const std::uint64_t low = low_ + static_cast<std::uint64_t>(blocks_);
    out[0] = key_;
    out[1] = low;
    if (state_size_ > 2) out[2] = high_ + (low < low_ ? 1 : 0);
  }

 private:
  std::array<std::uint32_t, 2> threefry(std::uint64_t counter) const {
    return threefry2x32(static_cast<std::uint32_t>(key_), static_cast<std::uint32_t>(key_ >> 32),
                        static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32));
  }
  const std::array<std::uint32_t, 4>& philox_block(std::uint64_t block, Cache& cache) const {
    if (cache.block == block) return cache.words;
    const std::uint64_t low = low_ + block;
    const std::uint64_t high = high_ + (low < low_ ? 1 : 0);
    cache.block = block;
    cache.words = philox4x32({static_cast<std::uint32_t>(low), static_cast<std::uint32_t>(low >> 32),
                              static_cast<std::uint32_t>(high), static_cast<std::uint32_t>(high >> 32)},
                             static_cast<std::uint32_t>(key_), static_cast<std::uint32_t>(key_ >> 32));
    return cache.words;
  }
  std::uint64_t narrow(std::uint32_t word) const {
    return bits_ >= 32 ? word : word & ((std::uint32_t{1} << bits_) - 1);
  }

  Generator generator_;
  int bits_;
  std::uint64_t key_, low_, high_;
  std::size_t state_size_;
  std::int64_t count_ = 0, blocks_ = 0;
  std::int64_t split_size_ = 1, inner_ = 1;
};

/// Writes the low `bytes` (1, 2, 4 or 8) bytes of `v` as one element of that size, in the
/// host's byte order.
inline void store_element(std::byte* dst, std::uint64_t v, std::size_t bytes) {
  if (bytes == 8) {
    std::memcpy(dst, &v, 8);
  } else if (bytes == 4) {
    const auto w = static_cast<std::uint32_t>(v);
    std::memcpy(dst, &w, 4);
  } else if (bytes == 2) {
    const auto w = static_cast<std::uint16_t>(v);
    std::memcpy(dst, &w, 2);
  } else {
    const auto w = static_cast<std::uint8_t>(v);
    std::memcpy(dst, &w, 1);
  }
}

}  // namespace pjrt_lite::random_bits
