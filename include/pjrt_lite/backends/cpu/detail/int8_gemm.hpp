#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The product of 8-bit integer matrices into 32-bit sums: c[i, j] = sum_k a[i, k] * b[k, j],
// each operand signed (s8) or unsigned (u8), the sums wrapping in 32 bits as StableHLO's
// integer arithmetic does. Two micro-kernels on the usual blocking (a block of the depth of B
// packed once into panels of kNr columns, a block of rows of A packed under it, a register
// tile of sums per micro-kernel call):
//
// - Pairs (any CPU): operands widen to 16 bits and pair up along the depth, so one
//   multiply-add of 16-bit pairs into 32-bit lanes (AVX2's vpmaddwd) does two steps of the
//   depth for eight columns: exact, since a pair of 8-bit products never leaves 32 bits.
//   Without AVX2 it is plain C++ on the same panels (vectorized for the target).
// - Quads (AVX-512 VNNI or AVX-VNNI, found at run time, in any x86 build): vpdpbusd
//   multiplies four unsigned bytes by four signed bytes and adds the four products to a 32-bit
//   lane without saturating, so one instruction does four steps of the depth for eight columns
//   (256-bit vectors, AVX-VNNI) or sixteen (512-bit, AVX-512 VNNI, two panels side by side).
//   One operand must be unsigned and the other signed: s8 x s8 packs A's bytes
//   shifted by 128 (a + 128 is unsigned) and subtracts 128 x B's column sums; u8 x u8 packs
//   B's bytes shifted by -128 and adds 128 x A's row sums; both corrections are exact in
//   wrapping 32-bit arithmetic, so the sums are the pairs' sums bit for bit.
// - Byte pairs (AVX2 without VNNI, found at run time): the quads' packing and tiles, with
//   vpdpbusd's four-byte sum done as vpmaddubsw (two unsigned-by-signed byte products summed
//   into a saturating 16-bit lane) and vpmaddwd by ones (two such lanes into 32 bits). Exact
//   only when no pair sum can reach the 16-bit limit: run() scans the operands as packed and
//   takes this kernel when the unsigned bytes are at most 127, or the signed ones within
//   [-64, 64] (a 7-bit operand: quantized weights or activations stored in 7 bits), and the
//   pairs otherwise. For s8 x s8 it shifts A by minus A's least value rather than by 128, so
//   activations within any 128 consecutive values pack as unsigned bytes of at most 127.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

// The quads' functions carry their instruction sets as target attributes and are chosen at
// run time, so they are there in any build for x86 with GCC or Clang, the baseline's included.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <immintrin.h>
#define PJRT_LITE_INT8_QUADS 1
#elif defined(__AVX2__)
#include <immintrin.h>
#endif

#include "pjrt_lite/core/dtype.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// The micro-kernels Int8Gemm has (see above).
enum class Int8Kernel : std::uint8_t {
  kPairs,        // 16-bit pairs (vpmaddwd with AVX2, plain C++ without)
  kQuadsAvx512,  // vpdpbusd on 512-bit vectors (256-bit for a last lone panel), AVX-512 VNNI
  kQuadsAvx,     // vpdpbusd on 256-bit vectors, AVX-VNNI
  kBytePairs,    // the quads' four-byte sums as vpmaddubsw + vpmaddwd, AVX2; exact on 7-bit operands
};

/// Called with [r0, r1) when rows r0..r1 of a product are final (every depth block summed),
/// in order, from the thread running the product: an epilogue runs on them while they are
/// in cache.
struct RowsDone {
  void (*fn)(void* context, std::int64_t r0, std::int64_t r1) = nullptr;
  void* context = nullptr;
  void operator()(std::int64_t r0, std::int64_t r1) const {
    if (fn != nullptr) fn(context, r0, r1);
  }
};

struct Int8Gemm {
  static constexpr std::int64_t kMr = 4;     // rows of the pairs' register tile
  static constexpr std::int64_t kNr = 16;    // columns of either register tile (two 8-lane vectors)
  static constexpr std::int64_t kKc = 256;   // the pairs' depth block, a multiple of 2
  static constexpr std::int64_t kMc = 128;   // the pairs' rows packed at once, a multiple of kMr
  static constexpr std::int64_t kQuadMr = 6;    // rows of the quads' register tile (12 sums)
  static constexpr std::int64_t kQuadKc = 512;  // the quads' depth block, a multiple of 4
  static constexpr std::int64_t kQuadMc = 120;  // the quads' rows packed at once, a multiple of kQuadMr

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

  /// Whether this build has `kernel` and this CPU (and its operating system) runs it.
  static bool runs(Int8Kernel kernel) {
    switch (kernel) {
      case Int8Kernel::kPairs: return true;
#if defined(PJRT_LITE_INT8_QUADS)
      case Int8Kernel::kQuadsAvx512: {
        static const bool yes = cpu_has_avx512_vnni();
        return yes;
      }
      case Int8Kernel::kQuadsAvx: {
        static const bool yes = cpu_has_avx_vnni();
        return yes;
      }
      case Int8Kernel::kBytePairs: {
        static const bool yes = cpu_has_avx2();
        return yes;
      }
#else
      case Int8Kernel::kQuadsAvx512:
      case Int8Kernel::kQuadsAvx:
      case Int8Kernel::kBytePairs: return false;
#endif
    }
    return false;
  }

  /// The kernel run() uses for operands of any value: quads where the CPU runs them, else
  /// pairs (run() takes the byte pairs over the pairs for operands where they are exact).
  static Int8Kernel best() {
    if (runs(Int8Kernel::kQuadsAvx512)) return Int8Kernel::kQuadsAvx512;
    if (runs(Int8Kernel::kQuadsAvx)) return Int8Kernel::kQuadsAvx;
    return Int8Kernel::kPairs;
  }

  /// Scratch bytes one worker needs for a product of `cols` columns and depth `depth`, with
  /// any kernel.
  static std::int64_t scratch_bytes(std::int64_t cols, std::int64_t depth) {
    const std::int64_t kc = std::min(round_up(depth, 2), kKc);
    const std::int64_t pairs = align(kc * round_up(cols, kNr) * 2) + align(kc * kMc * 2);  // 16-bit elements
    const std::int64_t qc = std::min(round_up(depth, 4), kQuadKc);
    const std::int64_t quads = align(quad_panel_bytes(qc) * (round_up(cols, kNr) / kNr)) +
                               align(quad_tile_bytes(qc) * (kQuadMc / kQuadMr));
    return std::max(pairs, quads);
  }

  /// c (rows x cols, row stride ldc) = a (rows x depth, row stride lda) * b (depth x cols, row
  /// stride ldb), by best(). `scratch` holds scratch_bytes(cols, depth), 64-byte aligned.
  /// `done` hears of each block of rows once it is final.
  template <bool kSignedA, bool kSignedB>
  static void run(std::int64_t rows, std::int64_t cols, std::int64_t depth, const std::uint8_t* a, std::int64_t lda,
                  const std::uint8_t* b, std::int64_t ldb, std::int32_t* c, std::int64_t ldc, std::byte* scratch,
                  RowsDone done = {}) {
    static const Int8Kernel kernel = best();
    static const bool byte_pairs = kernel == Int8Kernel::kPairs && runs(Int8Kernel::kBytePairs);
#if defined(PJRT_LITE_INT8_QUADS)
    if (byte_pairs && rows > 0 && cols > 0 && depth > 0)
      if (const std::optional<std::int32_t> shift = byte_pairs_shift<kSignedA, kSignedB>(rows, cols, depth, a, lda, b, ldb))
        return run_quads<kSignedA, kSignedB>(Int8Kernel::kBytePairs, rows, cols, depth, a, lda, b, ldb, c, ldc, scratch,
                                             done, *shift);
#endif
    run_with<kSignedA, kSignedB>(kernel, rows, cols, depth, a, lda, b, ldb, c, ldc, scratch, done);
  }

  /// Whether the byte pairs' 16-bit sums are exact for these operands, and if so the shift
  /// that A's bytes take when packed (s8 x s8; 0 otherwise): with u the bytes that the quads
  /// pack as unsigned and s the signed ones, no u0 * s0 + u1 * s1 reaches +-32767. Scans both
  /// operands: O(rows * depth + depth * cols) against the product's O(rows * depth * cols).
  template <bool kSignedA, bool kSignedB>
  static std::optional<std::int32_t> byte_pairs_shift(std::int64_t rows, std::int64_t cols, std::int64_t depth,
                                                      const std::uint8_t* a, std::int64_t lda, const std::uint8_t* b,
                                                      std::int64_t ldb) {
#if defined(PJRT_LITE_INT8_QUADS)
    constexpr bool kAUnsigned = kQuadAUnsigned<kSignedA, kSignedB>;
    constexpr bool kShiftA = kQuadShiftA<kSignedA, kSignedB>;
    // A as it is (a shifted A: as signed bytes, shifted below); B as packed.
    const std::uint8_t flip_b = kQuadShiftB<kSignedA, kSignedB> ? 0x80 : 0;
    const ByteRange ra = byte_range(a, lda, rows, depth, 0, kSignedA);
    const ByteRange rb = byte_range(b, ldb, depth, cols, flip_b, kAUnsigned);
    // A shifted by minus its least value packs as [0, high - low].
    const std::int32_t shift = kShiftA ? -ra.low : 0;
    const ByteRange u = kAUnsigned ? ByteRange{ra.low + shift, ra.high + shift} : rb;
    const ByteRange& sv = kAUnsigned ? rb : ra;
    const std::int32_t s_magnitude = std::max(sv.high, -sv.low);
    if (2 * u.high * s_magnitude > 32767) return std::nullopt;
    return shift;
#else
    (void)rows, (void)cols, (void)depth, (void)a, (void)lda, (void)b, (void)ldb;
    return std::nullopt;
#endif
  }

  /// run() by `kernel`, which runs(kernel) must allow; kBytePairs runs the pairs instead where
  /// byte_pairs_shift finds them inexact.
  template <bool kSignedA, bool kSignedB>
  static void run_with(Int8Kernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t depth,
                       const std::uint8_t* a, std::int64_t lda, const std::uint8_t* b, std::int64_t ldb,
                       std::int32_t* c, std::int64_t ldc, std::byte* scratch, RowsDone done = {}) {
    if (rows == 0) return;
    // The pairs add every depth block into c; the quads store their first.
    if (cols == 0 || depth == 0 || kernel == Int8Kernel::kPairs)
      for (std::int64_t i = 0; i < rows; ++i) std::fill_n(c + i * ldc, cols, 0);
    if (cols == 0 || depth == 0) return done(0, rows);
    if (kernel == Int8Kernel::kPairs)
      return run_pairs<kSignedA, kSignedB>(rows, cols, depth, a, lda, b, ldb, c, ldc, scratch, done);
#if defined(PJRT_LITE_INT8_QUADS)
    std::int32_t shift = 128;  // A's, for s8 x s8
    if (kernel == Int8Kernel::kBytePairs) {
      const std::optional<std::int32_t> exact = byte_pairs_shift<kSignedA, kSignedB>(rows, cols, depth, a, lda, b, ldb);
      if (!exact) {
        for (std::int64_t i = 0; i < rows; ++i) std::fill_n(c + i * ldc, cols, 0);
        return run_pairs<kSignedA, kSignedB>(rows, cols, depth, a, lda, b, ldb, c, ldc, scratch, done);
      }
      shift = *exact;
    }
    run_quads<kSignedA, kSignedB>(kernel, rows, cols, depth, a, lda, b, ldb, c, ldc, scratch, done, shift);
#endif
  }

 private:
  template <bool kSignedA, bool kSignedB>
  static void run_pairs(std::int64_t rows, std::int64_t cols, std::int64_t depth, const std::uint8_t* a,
                        std::int64_t lda, const std::uint8_t* b, std::int64_t ldb, std::int32_t* c, std::int64_t ldc,
                        std::byte* scratch, RowsDone done) {
    const std::int64_t kc_max = std::min(round_up(depth, 2), kKc);
    auto* packed_b = reinterpret_cast<std::int16_t*>(scratch);
    auto* packed_a = reinterpret_cast<std::int16_t*>(scratch + align(kc_max * round_up(cols, kNr) * 2));
    for (std::int64_t k0 = 0; k0 < depth; k0 += kKc) {
      const std::int64_t kc = std::min(kKc, depth - k0);
      const std::int64_t pairs = (kc + 1) / 2;
      pack_pairs<kSignedB, kNr>(b + k0 * ldb, 1, ldb, kc, cols, packed_b);
      for (std::int64_t i0 = 0; i0 < rows; i0 += kMc) {
        const std::int64_t mc = std::min(kMc, rows - i0);
        pack_pairs<kSignedA, kMr>(a + i0 * lda + k0, lda, 1, kc, mc, packed_a);
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
        if (k0 + kc == depth) done(i0, i0 + mc);
      }
    }
  }

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

  /// A block as panels of kLanes lanes (B's columns, A's rows), where lane l at depth k is
  /// src[l * lane_step + k * depth_step]: in a panel, depth pair p holds (x[l, 2p],
  /// x[l, 2p + 1]) for each of its kLanes lanes l, zeros past the depth and the lanes.
  template <bool kSigned, std::int64_t kLanes>
  static void pack_pairs(const std::uint8_t* src, std::int64_t lane_step, std::int64_t depth_step, std::int64_t depth,
                         std::int64_t lanes, std::int16_t* out) {
    const std::int64_t pairs = (depth + 1) / 2;
    for (std::int64_t l0 = 0; l0 < lanes; l0 += kLanes) {
      const std::int64_t width = std::min(kLanes, lanes - l0);
      for (std::int64_t p = 0; p < pairs; ++p, out += 2 * kLanes) {
        const std::uint8_t* even = src + l0 * lane_step + 2 * p * depth_step;
        const std::uint8_t* odd = even + depth_step;
        if (width == kLanes && 2 * p + 1 < depth) {  // the common case, without a test per element
          for (std::int64_t l = 0; l < kLanes; ++l) {
            out[2 * l] = widen<kSigned>(even[l * lane_step]);
            out[2 * l + 1] = widen<kSigned>(odd[l * lane_step]);
          }
        } else {
          for (std::int64_t l = 0; l < kLanes; ++l) {
            out[2 * l] = l < width ? widen<kSigned>(even[l * lane_step]) : std::int16_t{0};
            out[2 * l + 1] = l < width && 2 * p + 1 < depth ? widen<kSigned>(odd[l * lane_step]) : std::int16_t{0};
          }
        }
      }
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

  // ---- quads ----
  // A panel of B for a depth block of kc steps: for each quad q of depth steps, kNr columns of
  // four bytes (b[4q..4q+3, j]), then kNr 32-bit column corrections. A tile of A: for each quad,
  // kQuadMr rows of four bytes, then kQuadMr 32-bit row corrections (padded to 32 bytes).
  static constexpr std::int64_t quad_panel_bytes(std::int64_t kc) { return (kc + 3) / 4 * 4 * kNr + 4 * kNr; }
  static constexpr std::int64_t quad_tile_bytes(std::int64_t kc) { return (kc + 3) / 4 * 4 * kQuadMr + 32; }

#if defined(PJRT_LITE_INT8_QUADS)
  // The operand vpdpbusd reads as unsigned is A's, but for s8 x u8, where it is B's. A's bytes
  // are shifted (xor 0x80: a + 128) for s8 x s8, B's (b - 128) for u8 x u8.
  template <bool kSignedA, bool kSignedB>
  static constexpr bool kQuadAUnsigned = !(kSignedA && !kSignedB);
  template <bool kSignedA, bool kSignedB>
  static constexpr bool kQuadShiftA = kSignedA && kSignedB;
  template <bool kSignedA, bool kSignedB>
  static constexpr bool kQuadShiftB = !kSignedA && !kSignedB;

  static std::uint32_t load_u32(const std::uint8_t* p) {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }

  static void store_u32(std::uint8_t* p, std::uint32_t v) { std::memcpy(p, &v, sizeof(v)); }

  /// B's block [kc x cols] as quad panels; the corrections are -shift_a x the column sums when
  /// A is shifted, else zero. A whole quad of a whole panel (four rows of sixteen bytes) is a 4 x 16
  /// byte transpose in four unpacks and four stores; the column sums come from the same
  /// registers. AVX2 (which every CPU with either VNNI has) for the VEX encodings.
  template <bool kSigned, bool kShift, bool kCorrect>
  __attribute__((target("avx2"))) static void pack_b_quads(const std::uint8_t* b, std::int64_t ldb, std::int64_t kc,
                                                            std::int64_t cols, std::uint8_t* out, std::int32_t shift_a) {
    const std::int64_t quads = (kc + 3) / 4, whole = kc / 4;
    const std::uint8_t flip = kShift ? 0x80 : 0;
    const __m128i flips = _mm_set1_epi8(static_cast<char>(flip));
    for (std::int64_t j0 = 0; j0 < cols; j0 += kNr) {
      const std::int64_t nr = std::min(kNr, cols - j0);
      std::uint32_t sums[kNr] = {};
      std::int64_t q = 0;
      if (nr == kNr) {
        __m128i totals[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
        for (; q < whole; ++q, out += 4 * kNr) {
          const std::uint8_t* row = b + 4 * q * ldb + j0;
          const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
          const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + ldb));
          const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * ldb));
          const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 3 * ldb));
          const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
          const __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
          // Columns 0-3, 4-7, 8-11, 12-15: each 32-bit lane one column's four steps.
          const __m128i quad[4] = {_mm_unpacklo_epi16(lo01, lo23), _mm_unpackhi_epi16(lo01, lo23),
                                   _mm_unpacklo_epi16(hi01, hi23), _mm_unpackhi_epi16(hi01, hi23)};
          for (int v = 0; v < 4; ++v) {
            _mm_store_si128(reinterpret_cast<__m128i*>(out) + v, _mm_xor_si128(quad[v], flips));
            if constexpr (kCorrect) totals[v] = _mm_add_epi32(totals[v], lane_byte_sums<kSigned>(quad[v]));
          }
        }
        if constexpr (kCorrect)
          for (int v = 0; v < 4; ++v) _mm_storeu_si128(reinterpret_cast<__m128i*>(sums + 4 * v), totals[v]);
      }
      for (; q < quads; ++q, out += 4 * kNr) {  // a last partial quad, or a partial panel
        const std::int64_t steps = std::min<std::int64_t>(4, kc - 4 * q);
        std::memset(out, 0, 4 * kNr);
        for (std::int64_t s = 0; s < steps; ++s) {
          const std::uint8_t* row = b + (4 * q + s) * ldb + j0;
          for (std::int64_t j = 0; j < nr; ++j) {
            out[4 * j + s] = static_cast<std::uint8_t>(row[j] ^ flip);
            if constexpr (kCorrect) sums[j] += static_cast<std::uint32_t>(static_cast<std::int32_t>(widen<kSigned>(row[j])));
          }
        }
      }
      const auto factor = static_cast<std::uint32_t>(shift_a);
      for (std::int64_t j = 0; j < kNr; ++j) store_u32(out + 4 * j, kCorrect ? 0u - factor * sums[j] : 0u);
      out += 4 * kNr;
    }
  }

  /// The sum of each 32-bit lane's four bytes, as signed or unsigned bytes.
  template <bool kSigned>
  __attribute__((target("avx2"))) static __m128i lane_byte_sums(__m128i x) {
    __m128i low, high;  // each 16-bit lane's two bytes, widened
    if constexpr (kSigned) {
      low = _mm_srai_epi16(_mm_slli_epi16(x, 8), 8);
      high = _mm_srai_epi16(x, 8);
    } else {
      low = _mm_and_si128(x, _mm_set1_epi16(0xff));
      high = _mm_srli_epi16(x, 8);
    }
    return _mm_madd_epi16(_mm_add_epi16(low, high), _mm_set1_epi16(1));
  }

  /// A's block [mc x kc] as quad tiles, each byte plus `shift` (mod 256) when kShift; the
  /// corrections are 128 x the row sums when B is shifted, else zero. Each row moves four bytes
  /// at a time (a quad is one 32-bit word), and its sum, when needed, is a sum of absolute
  /// differences from zero over 32 bytes at a time.
  template <bool kShift, bool kCorrect>
  __attribute__((target("avx2"))) static void pack_a_quads(const std::uint8_t* a, std::int64_t lda, std::int64_t mc,
                                                            std::int64_t kc, std::uint8_t* out, std::int32_t shift) {
    const std::int64_t quads = (kc + 3) / 4, whole = kc / 4;
    const auto add = static_cast<std::uint8_t>(kShift ? shift : 0);
    const std::uint32_t add4 = 0x01010101u * add;
    for (std::int64_t r0 = 0; r0 < mc; r0 += kQuadMr) {
      const std::int64_t mr = std::min(kQuadMr, mc - r0);
      std::uint32_t sums[kQuadMr] = {};
      if (mr < kQuadMr || whole < quads) std::memset(out, 0, static_cast<std::size_t>(quads * 4 * kQuadMr));
      for (std::int64_t r = 0; r < mr; ++r) {
        const std::uint8_t* row = a + (r0 + r) * lda;
        std::uint8_t* to = out + 4 * r;
        for (std::int64_t q = 0; q < whole; ++q) store_u32(to + q * 4 * kQuadMr, add_bytes(load_u32(row + 4 * q), add4));
        for (std::int64_t k = 4 * whole; k < kc; ++k)
          to[whole * 4 * kQuadMr + k % 4] = static_cast<std::uint8_t>(row[k] + add);
        if constexpr (kCorrect) sums[r] = byte_sum(row, kc);
      }
      out += quads * 4 * kQuadMr;
      for (std::int64_t r = 0; r < kQuadMr; ++r) store_u32(out + 4 * r, kCorrect ? 128u * sums[r] : 0u);
      out += 32;
    }
  }

  /// Each byte of x plus the same byte of y, mod 256: the low seven bits add without carrying
  /// out of their byte, and the top bit is the xor of both top bits and that carry.
  static std::uint32_t add_bytes(std::uint32_t x, std::uint32_t y) {
    return ((x & 0x7F7F7F7Fu) + (y & 0x7F7F7F7Fu)) ^ ((x ^ y) & 0x80808080u);
  }

  /// The sum of n unsigned bytes.
  __attribute__((target("avx2"))) static std::uint32_t byte_sum(const std::uint8_t* p, std::int64_t n) {
    __m256i total = _mm256_setzero_si256();
    std::int64_t k = 0;
    for (; k + 32 <= n; k += 32)
      total = _mm256_add_epi64(
          total, _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k)), _mm256_setzero_si256()));
    alignas(32) std::uint64_t parts[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(parts), total);
    auto sum = static_cast<std::uint32_t>(parts[0] + parts[1] + parts[2] + parts[3]);
    for (; k < n; ++k) sum += p[k];
    return sum;
  }

  // The 256-bit micro-kernel, once per instruction set: tile (kQuadMr x kNr, row stride ldc)
  // += a tile of A times a panel of B over `quads` quads, plus the tile's and panel's
  // corrections. Written without lambdas (which would not inherit the function's target) and
  // with the 12 sums as named variables: GCC 12 keeps an array of them in memory, or copies
  // each one around every step. Never inlined: inlined into run_quads, GCC 12 copied every sum
  // to another register and back around each vpdpbusd (24 moves a step).
#define PJRT_LITE_INT8_QUAD_ROW(r, set1, dpbusd)                                       \
  {                                                                                    \
    const auto av = set1(static_cast<int>(load_u32(a + 4 * (r))));                     \
    if constexpr (kAUnsigned) {                                                        \
      s##r##0 = dpbusd(s##r##0, av, v0);                                               \
      s##r##1 = dpbusd(s##r##1, av, v1);                                               \
    } else {                                                                           \
      s##r##0 = dpbusd(s##r##0, v0, av);                                               \
      s##r##1 = dpbusd(s##r##1, v1, av);                                               \
    }                                                                                  \
  }
#define PJRT_LITE_INT8_QUAD_KERNEL(name, isa, dpbusd)                                                            \
  template <bool kAUnsigned, bool kStore>                                                                        \
  __attribute__((target(isa), noinline)) static void name(std::int64_t quads, const std::uint8_t* a, const std::uint8_t* b, \
                                                std::int32_t* tile, std::int64_t ldc) {                          \
    static_assert(kQuadMr == 6);                                                                                 \
    __m256i s00 = _mm256_setzero_si256(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00,     \
            s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;                                               \
    for (std::int64_t q = 0; q < quads; ++q) {                                                                   \
      const __m256i v0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));                                \
      const __m256i v1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));                           \
      PJRT_LITE_INT8_QUAD_ROW(0, _mm256_set1_epi32, dpbusd)                                                      \
      PJRT_LITE_INT8_QUAD_ROW(1, _mm256_set1_epi32, dpbusd)                                                      \
      PJRT_LITE_INT8_QUAD_ROW(2, _mm256_set1_epi32, dpbusd)                                                      \
      PJRT_LITE_INT8_QUAD_ROW(3, _mm256_set1_epi32, dpbusd)                                                      \
      PJRT_LITE_INT8_QUAD_ROW(4, _mm256_set1_epi32, dpbusd)                                                      \
      PJRT_LITE_INT8_QUAD_ROW(5, _mm256_set1_epi32, dpbusd)                                                      \
      a += 4 * kQuadMr;                                                                                          \
      b += 4 * kNr;                                                                                              \
    }                                                                                                            \
    const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));                                 \
    const __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));                            \
    const __m256i sums[kQuadMr][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31}, {s40, s41}, {s50, s51}};  \
    for (int r = 0; r < kQuadMr; ++r) {                                                                          \
      const __m256i rc = _mm256_set1_epi32(static_cast<int>(load_u32(a + 4 * r)));                              \
      auto* out = reinterpret_cast<__m256i*>(tile + r * ldc);                                                    \
      const __m256i t0 = _mm256_add_epi32(sums[r][0], _mm256_add_epi32(c0, rc));                                \
      const __m256i t1 = _mm256_add_epi32(sums[r][1], _mm256_add_epi32(c1, rc));                                \
      _mm256_storeu_si256(out, kStore ? t0 : _mm256_add_epi32(_mm256_loadu_si256(out), t0));                    \
      _mm256_storeu_si256(out + 1, kStore ? t1 : _mm256_add_epi32(_mm256_loadu_si256(out + 1), t1));            \
    }                                                                                                            \
  }
  PJRT_LITE_INT8_QUAD_KERNEL(quad_kernel_avx512, "avx512f,avx512vl,avx512bw,avx512vnni", _mm256_dpbusd_epi32)
  PJRT_LITE_INT8_QUAD_KERNEL(quad_kernel_avx, "avxvnni", _mm256_dpbusd_avx_epi32)
  PJRT_LITE_INT8_QUAD_KERNEL(quad_kernel_byte_pairs, "avx2", dpbusd_by_byte_pairs)
#undef PJRT_LITE_INT8_QUAD_KERNEL

  /// vpdpbusd's sums of four unsigned-by-signed byte products per 32-bit lane, by AVX2: exact
  /// while no two adjacent products sum past 16 bits (byte_pairs_shift).
  __attribute__((target("avx2"))) static __m256i dpbusd_by_byte_pairs(__m256i sums, __m256i u, __m256i s) {
    return _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }

  /// The least and greatest of a matrix's bytes, each xor `flip`, read as signed or unsigned.
  struct ByteRange {
    std::int32_t low = 0, high = 0;
  };
  /// AVX2, which the byte pairs need anyway: 32 bytes at a time.
  __attribute__((target("avx2"))) static ByteRange byte_range(const std::uint8_t* m, std::int64_t ld,
                                                              std::int64_t rows, std::int64_t cols, std::uint8_t flip,
                                                              bool as_signed) {
    // Signed bytes compare as unsigned ones with the top bit flipped.
    const auto to_unsigned = static_cast<std::uint8_t>(flip ^ (as_signed ? 0x80 : 0));
    const __m256i flips = _mm256_set1_epi8(static_cast<char>(to_unsigned));
    __m256i lows = _mm256_set1_epi8(static_cast<char>(0xFF)), highs = _mm256_setzero_si256();
    std::uint8_t low = 0xFF, high = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::uint8_t* row = m + r * ld;
      std::int64_t k = 0;
      for (; k + 32 <= cols; k += 32) {
        const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k)), flips);
        lows = _mm256_min_epu8(lows, v);
        highs = _mm256_max_epu8(highs, v);
      }
      for (; k < cols; ++k) {
        const auto v = static_cast<std::uint8_t>(row[k] ^ to_unsigned);
        low = std::min(low, v);
        high = std::max(high, v);
      }
    }
    alignas(32) std::uint8_t lane_lows[32], lane_highs[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane_lows), lows);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane_highs), highs);
    for (int i = 0; i < 32; ++i) {
      low = std::min(low, lane_lows[i]);
      high = std::max(high, lane_highs[i]);
    }
    const std::int32_t bias = as_signed ? 128 : 0;
    return {low - bias, high - bias};
  }

  // The AVX-512 micro-kernel on 512-bit vectors: two panels side by side, a tile of kQuadMr x
  // 2 kNr (12 sums of 16 lanes), so each vpdpbusd does four steps of the depth for 16 columns.
  // The sums are named variables and the kernel is never inlined, as the 256-bit one's.
  template <bool kAUnsigned, bool kStore>
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni"), noinline)) static void quad_kernel_zmm(
      std::int64_t quads, const std::uint8_t* a, const std::uint8_t* b0, const std::uint8_t* b1, std::int32_t* tile,
      std::int64_t ldc) {
    static_assert(kQuadMr == 6);
    __m512i s00 = _mm512_setzero_si512(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00,
            s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
    for (std::int64_t q = 0; q < quads; ++q) {
      const __m512i v0 = _mm512_load_si512(b0), v1 = _mm512_load_si512(b1);
      PJRT_LITE_INT8_QUAD_ROW(0, _mm512_set1_epi32, _mm512_dpbusd_epi32)
      PJRT_LITE_INT8_QUAD_ROW(1, _mm512_set1_epi32, _mm512_dpbusd_epi32)
      PJRT_LITE_INT8_QUAD_ROW(2, _mm512_set1_epi32, _mm512_dpbusd_epi32)
      PJRT_LITE_INT8_QUAD_ROW(3, _mm512_set1_epi32, _mm512_dpbusd_epi32)
      PJRT_LITE_INT8_QUAD_ROW(4, _mm512_set1_epi32, _mm512_dpbusd_epi32)
      PJRT_LITE_INT8_QUAD_ROW(5, _mm512_set1_epi32, _mm512_dpbusd_epi32)
      a += 4 * kQuadMr;
      b0 += 4 * kNr;
      b1 += 4 * kNr;
    }
    const __m512i c0 = _mm512_loadu_si512(b0), c1 = _mm512_loadu_si512(b1);
    const __m512i sums[kQuadMr][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31}, {s40, s41}, {s50, s51}};
    for (int r = 0; r < kQuadMr; ++r) {
      const __m512i rc = _mm512_set1_epi32(static_cast<int>(load_u32(a + 4 * r)));
      std::int32_t* out = tile + r * ldc;
      const __m512i t0 = _mm512_add_epi32(sums[r][0], _mm512_add_epi32(c0, rc));
      const __m512i t1 = _mm512_add_epi32(sums[r][1], _mm512_add_epi32(c1, rc));
      _mm512_storeu_si512(out, kStore ? t0 : _mm512_add_epi32(_mm512_loadu_si512(out), t0));
      _mm512_storeu_si512(out + kNr, kStore ? t1 : _mm512_add_epi32(_mm512_loadu_si512(out + kNr), t1));
    }
  }

#undef PJRT_LITE_INT8_QUAD_ROW

  template <bool kSignedA, bool kSignedB>
  static void run_quads(Int8Kernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t depth,
                        const std::uint8_t* a, std::int64_t lda, const std::uint8_t* b, std::int64_t ldb,
                        std::int32_t* c, std::int64_t ldc, std::byte* scratch, RowsDone done, std::int32_t shift_a) {
    constexpr bool kAUnsigned = kQuadAUnsigned<kSignedA, kSignedB>;
    constexpr bool kShiftA = kQuadShiftA<kSignedA, kSignedB>, kShiftB = kQuadShiftB<kSignedA, kSignedB>;
    const std::int64_t kc_max = std::min(round_up(depth, 4), kQuadKc);
    auto* packed_b = reinterpret_cast<std::uint8_t*>(scratch);
    auto* packed_a = packed_b + align(quad_panel_bytes(kc_max) * (round_up(cols, kNr) / kNr));
    const bool avx512 = kernel == Int8Kernel::kQuadsAvx512;
    for (std::int64_t k0 = 0; k0 < depth; k0 += kQuadKc) {
      const std::int64_t kc = std::min(kQuadKc, depth - k0);
      const bool first = k0 == 0;  // the first depth block stores its sums, the others add theirs
      const std::int64_t quads = (kc + 3) / 4;
      // The shifted operand's partner carries the correction: B's column sums when A is shifted.
      pack_b_quads<kSignedB, kShiftB, kShiftA>(b + k0 * ldb, ldb, kc, cols, packed_b, shift_a);
      for (std::int64_t i0 = 0; i0 < rows; i0 += kQuadMc) {
        const std::int64_t mc = std::min(kQuadMc, rows - i0);
        pack_a_quads<kShiftA, kShiftB>(a + i0 * lda + k0, lda, mc, kc, packed_a, shift_a);
        for (std::int64_t j0 = 0; j0 < cols;) {
          const std::uint8_t* panel = packed_b + (j0 / kNr) * quad_panel_bytes(kc);
          // Two panels at once on 512-bit vectors while a second one is there.
          const std::int64_t width = avx512 && cols - j0 > kNr ? 2 * kNr : kNr;
          const std::int64_t nr = std::min(width, cols - j0);
          auto tile_kernel = [&](const std::uint8_t* tile_a, std::int32_t* out, std::int64_t ld, bool store) {
            const std::uint8_t* second = panel + quad_panel_bytes(kc);
            if (width == 2 * kNr)
              return store ? quad_kernel_zmm<kAUnsigned, true>(quads, tile_a, panel, second, out, ld)
                           : quad_kernel_zmm<kAUnsigned, false>(quads, tile_a, panel, second, out, ld);
            if (avx512)
              return store ? quad_kernel_avx512<kAUnsigned, true>(quads, tile_a, panel, out, ld)
                           : quad_kernel_avx512<kAUnsigned, false>(quads, tile_a, panel, out, ld);
            if (kernel == Int8Kernel::kBytePairs)
              return store ? quad_kernel_byte_pairs<kAUnsigned, true>(quads, tile_a, panel, out, ld)
                           : quad_kernel_byte_pairs<kAUnsigned, false>(quads, tile_a, panel, out, ld);
            store ? quad_kernel_avx<kAUnsigned, true>(quads, tile_a, panel, out, ld)
                  : quad_kernel_avx<kAUnsigned, false>(quads, tile_a, panel, out, ld);
          };
          for (std::int64_t r0 = 0; r0 < mc; r0 += kQuadMr) {
            const std::int64_t mr = std::min(kQuadMr, mc - r0);
            const std::uint8_t* tile_a = packed_a + (r0 / kQuadMr) * quad_tile_bytes(kc);
            std::int32_t* tile = c + (i0 + r0) * ldc + j0;
            if (mr == kQuadMr && nr == width) {
              tile_kernel(tile_a, tile, ldc, first);
            } else {
              alignas(64) std::int32_t part[kQuadMr * 2 * kNr];
              tile_kernel(tile_a, part, width, true);
              for (std::int64_t r = 0; r < mr; ++r)
                for (std::int64_t j = 0; j < nr; ++j)
                  tile[r * ldc + j] = first ? part[r * width + j] : wrap_add(tile[r * ldc + j], part[r * width + j]);
            }
          }
          j0 += width;
        }
        if (k0 + kc == depth) done(i0, i0 + mc);
      }
    }
  }

  /// Reads extended control register 0: the register states the operating system saves.
  static std::uint64_t xcr0() {
    std::uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (std::uint64_t{hi} << 32) | lo;
  }
  static bool os_saves(std::uint64_t states) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & (1u << 27)) == 0) return false;  // OSXSAVE
    return (xcr0() & states) == states;
  }
  static bool cpu_has_avx512_vnni() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    const bool f = ebx & (1u << 16), bw = ebx & (1u << 30), vl = ebx & (1u << 31), vnni = ecx & (1u << 11);
    return f && bw && vl && vnni && os_saves(0xE6);  // SSE, AVX, opmask, upper ZMM halves, ZMM16-31
  }
  static bool cpu_has_avx2() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ebx & (1u << 5)) != 0 && os_saves(0x6);  // SSE, AVX
  }
  static bool cpu_has_avx_vnni() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (eax & (1u << 4)) != 0 && os_saves(0x6);  // SSE, AVX
  }
#endif
};

}  // namespace pjrt_lite::cpu::detail
