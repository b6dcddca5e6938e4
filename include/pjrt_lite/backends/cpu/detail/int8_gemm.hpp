#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The product of 8-bit integer matrices into 32-bit sums: c[i, j] = sum_k a[i, k] * b[k, j],
// each operand signed (s8) or unsigned (u8), the sums wrapping in 32 bits as StableHLO's
// integer arithmetic does. Operands widen to 16 bits and pair up along the depth, so one
// multiply-add of 16-bit pairs into 32-bit lanes (AVX2's vpmaddwd) does two steps of the
// depth for eight columns at once: exact, since a pair of 8-bit products never leaves 32
// bits. The blocking is the usual one: a block of the depth (kKc steps) of B packed once into
// panels of kNr columns, a block of kMc rows of A packed under it, and a kMr x kNr register
// tile of sums per micro-kernel call. Without AVX2 the micro-kernel is plain C++ on the same
// packed panels (the compiler vectorizes it for its target).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "pjrt_lite/core/dtype.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

struct Int8Gemm {
  static constexpr std::int64_t kMr = 4;     // rows of the register tile
  static constexpr std::int64_t kNr = 16;    // columns of the register tile (two 8-lane vectors)
  static constexpr std::int64_t kKc = 256;   // depth block, a multiple of 2
  static constexpr std::int64_t kMc = 128;   // rows packed at once, a multiple of kMr

  /// Whether a product of `a` and `b` into `result` is one of 8-bit integers into 32-bit sums.
  static constexpr bool multiplies(DType a, DType b, DType result) {
    const auto eight_bit = [](DType t) { return t == DType::kS8 || t == DType::kU8; };
    return eight_bit(a) && eight_bit(b) && (result == DType::kS32 || result == DType::kU32);
  }

  /// fn.template operator()<kSignedA, kSignedB>() for the operands' signedness.
  template <class F>
  static void with_signedness(bool signed_a, bool signed_b, F&& fn) {
    if (signed_a) {
      if (signed_b) return fn.template operator()<true, true>();
      return fn.template operator()<true, false>();
    }
    if (signed_b) return fn.template operator()<false, true>();
    fn.template operator()<false, false>();
  }

  /// Scratch bytes one worker needs for a product of `cols` columns and depth `depth`.
  static std::int64_t scratch_bytes(std::int64_t cols, std::int64_t depth) {
    const std::int64_t kc = std::min(round_up(depth, 2), kKc);
    const std::int64_t b = kc * round_up(cols, kNr) * 2;  // 16-bit elements
    const std::int64_t a = kc * kMc * 2;
    return align(b) + align(a);
  }

  /// c (rows x cols, row stride ldc) = a (rows x depth, row stride lda) * b (depth x cols, row
  /// stride ldb). `scratch` holds scratch_bytes(cols, depth), 64-byte aligned.
  template <bool kSignedA, bool kSignedB>
  static void run(std::int64_t rows, std::int64_t cols, std::int64_t depth, const std::uint8_t* a, std::int64_t lda,
                  const std::uint8_t* b, std::int64_t ldb, std::int32_t* c, std::int64_t ldc, std::byte* scratch) {
    for (std::int64_t i = 0; i < rows; ++i) std::fill_n(c + i * ldc, cols, 0);
    if (rows == 0 || cols == 0 || depth == 0) return;
    const std::int64_t kc_max = std::min(round_up(depth, 2), kKc);
    auto* packed_b = reinterpret_cast<std::int16_t*>(scratch);
    auto* packed_a = reinterpret_cast<std::int16_t*>(scratch + align(kc_max * round_up(cols, kNr) * 2));
    for (std::int64_t k0 = 0; k0 < depth; k0 += kKc) {
      const std::int64_t kc = std::min(kKc, depth - k0);
      const std::int64_t pairs = (kc + 1) / 2;
      pack_b<kSignedB>(b + k0 * ldb, ldb, kc, cols, packed_b);
      for (std::int64_t i0 = 0; i0 < rows; i0 += kMc) {
        const std::int64_t mc = std::min(kMc, rows - i0);
        pack_a<kSignedA>(a + i0 * lda + k0, lda, mc, kc, packed_a);
        for (std::int64_t j0 = 0; j0 < cols; j0 += kNr) {
          const std::int16_t* panel = packed_b + (j0 / kNr) * pairs * kNr * 2;
          const std::int64_t nr = std::min(kNr, cols - j0);
          for (std::int64_t r0 = 0; r0 < mc; r0 += kMr) {
            const std::int64_t mr = std::min(kMr, mc - r0);
            std::int32_t* tile = c + (i0 + r0) * ldc + j0;
            if (mr == kMr && nr == kNr) {
              micro_kernel(pairs, packed_a + r0 * pairs * 2, panel, tile, ldc);
            } else {
              alignas(32) std::int32_t part[kMr * kNr] = {};
              micro_kernel(pairs, packed_a + r0 * pairs * 2, panel, part, kNr);
              for (std::int64_t r = 0; r < mr; ++r)
                for (std::int64_t j = 0; j < nr; ++j) tile[r * ldc + j] = wrap_add(tile[r * ldc + j], part[r * kNr + j]);
            }
          }
        }
      }
    }
  }

 private:
  static constexpr std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }
  static constexpr std::int64_t align(std::int64_t bytes) { return round_up(bytes, 64); }

  static std::int32_t wrap_add(std::int32_t x, std::int32_t y) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) + static_cast<std::uint32_t>(y));
  }

  template <bool kSigned>
  static std::int16_t widen(std::uint8_t v) {
    if constexpr (kSigned) return static_cast<std::int8_t>(v);
    return static_cast<std::int16_t>(v);
  }

  /// B's block [kc x cols] as panels of kNr columns; in a panel, depth pair p holds
  /// (b[2p, j], b[2p+1, j]) for each of its kNr columns j, zeros past the depth and the columns.
  template <bool kSigned>
  static void pack_b(const std::uint8_t* b, std::int64_t ldb, std::int64_t kc, std::int64_t cols, std::int16_t* out) {
    const std::int64_t pairs = (kc + 1) / 2;
    for (std::int64_t j0 = 0; j0 < cols; j0 += kNr) {
      const std::int64_t nr = std::min(kNr, cols - j0);
      for (std::int64_t p = 0; p < pairs; ++p) {
        const std::uint8_t* even = b + 2 * p * ldb + j0;
        const std::uint8_t* odd = even + ldb;
        if (nr == kNr && 2 * p + 1 < kc) {  // the common case, without a test per element
          for (std::int64_t j = 0; j < kNr; ++j) {
            out[2 * j] = widen<kSigned>(even[j]);
            out[2 * j + 1] = widen<kSigned>(odd[j]);
          }
        } else {
          for (std::int64_t j = 0; j < kNr; ++j) {
            out[2 * j] = j < nr ? widen<kSigned>(even[j]) : std::int16_t{0};
            out[2 * j + 1] = j < nr && 2 * p + 1 < kc ? widen<kSigned>(odd[j]) : std::int16_t{0};
          }
        }
        out += 2 * kNr;
      }
    }
  }

  /// A's block [mc x kc] as tiles of kMr rows; in a tile, depth pair p holds (a[r, 2p],
  /// a[r, 2p+1]) for each of its kMr rows r, zeros past the depth and the rows.
  template <bool kSigned>
  static void pack_a(const std::uint8_t* a, std::int64_t lda, std::int64_t mc, std::int64_t kc, std::int16_t* out) {
    const std::int64_t pairs = (kc + 1) / 2;
    for (std::int64_t r0 = 0; r0 < mc; r0 += kMr) {
      const std::int64_t mr = std::min(kMr, mc - r0);
      for (std::int64_t r = 0; r < kMr; ++r) {
        std::int16_t* to = out + 2 * r;
        if (r >= mr) {
          for (std::int64_t p = 0; p < pairs; ++p) to[p * 2 * kMr] = to[p * 2 * kMr + 1] = 0;
          continue;
        }
        const std::uint8_t* row = a + (r0 + r) * lda;
        for (std::int64_t k = 0; k + 1 < kc; k += 2) {
          to[k * kMr] = widen<kSigned>(row[k]);
          to[k * kMr + 1] = widen<kSigned>(row[k + 1]);
        }
        if (kc % 2 != 0) {
          to[(kc - 1) * kMr] = widen<kSigned>(row[kc - 1]);
          to[(kc - 1) * kMr + 1] = 0;
        }
      }
      out += pairs * kMr * 2;
    }
  }

#if defined(__AVX2__)
  static __m256i broadcast_pair(const std::int16_t* pair) {
    std::int32_t bits;
    std::memcpy(&bits, pair, sizeof(bits));
    return _mm256_set1_epi32(bits);
  }
  static void step(__m256i (&acc)[2], __m256i a, __m256i b0, __m256i b1) {
    acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(a, b0));
    acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(a, b1));
  }
  static void store_add(std::int32_t* row, const __m256i (&acc)[2]) {
    auto* out = reinterpret_cast<__m256i*>(row);
    _mm256_storeu_si256(out, _mm256_add_epi32(_mm256_loadu_si256(out), acc[0]));
    _mm256_storeu_si256(out + 1, _mm256_add_epi32(_mm256_loadu_si256(out + 1), acc[1]));
  }
#endif

  /// tile (kMr x kNr, row stride ldc) += the product of a packed tile of A and a panel of B
  /// over `pairs` depth pairs.
  static void micro_kernel(std::int64_t pairs, const std::int16_t* a, const std::int16_t* b, std::int32_t* tile,
                           std::int64_t ldc) {
#if defined(__AVX2__)
    // Constant indices throughout (the row loop is a fold over kMr), so the sums stay in
    // registers: kMr x 2 of them, two of B and one broadcast pair of A.
    constexpr auto kRows = std::make_index_sequence<kMr>{};
    __m256i acc[kMr][2];
    [&]<std::size_t... R>(std::index_sequence<R...>) {
      ((acc[R][0] = _mm256_setzero_si256(), acc[R][1] = _mm256_setzero_si256()), ...);
    }(kRows);
    for (std::int64_t p = 0; p < pairs; ++p) {
      const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
      const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 16));
      [&]<std::size_t... R>(std::index_sequence<R...>) {
        (step(acc[R], broadcast_pair(a + 2 * R), b0, b1), ...);
      }(kRows);
      a += 2 * kMr;
      b += 2 * kNr;
    }
    [&]<std::size_t... R>(std::index_sequence<R...>) {
      (store_add(tile + static_cast<std::int64_t>(R) * ldc, acc[R]), ...);
    }(kRows);
#else
    std::uint32_t acc[kMr][kNr] = {};
    for (std::int64_t p = 0; p < pairs; ++p) {
      for (std::int64_t r = 0; r < kMr; ++r) {
        const std::int32_t a0 = a[2 * r], a1 = a[2 * r + 1];
        for (std::int64_t j = 0; j < kNr; ++j)
          acc[r][j] += static_cast<std::uint32_t>(a0 * b[2 * j] + a1 * b[2 * j + 1]);
      }
      a += 2 * kMr;
      b += 2 * kNr;
    }
    for (std::int64_t r = 0; r < kMr; ++r)
      for (std::int64_t j = 0; j < kNr; ++j) tile[r * ldc + j] = wrap_add(tile[r * ldc + j], static_cast<std::int32_t>(acc[r][j]));
#endif
  }
};

}  // namespace pjrt_lite::cpu::detail
