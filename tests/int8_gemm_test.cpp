// The 8-bit product's micro-kernels one by one (Int8Gemm::run_with), every one this CPU runs,
// against 64-bit loops: each signedness, sizes on and off the register tiles (one panel, two
// panels side by side, a lone last panel, partial rows), depths over one depth block, row
// strides wider than the rows, and the blocks of finished rows reported in order, each once.
// The executable's tests (cpu_executable_test.cpp) run the kernel best() picks; these run the
// others too, so a machine with AVX-512 VNNI checks its 256-bit kernels as well.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/int8_gemm.hpp"

namespace int8_gemm_test {

using pjrt_lite::cpu::detail::Int8Gemm;
using pjrt_lite::cpu::detail::Int8Kernel;
using pjrt_lite::cpu::detail::RowsDone;

struct Size {
  std::int64_t rows, cols, depth;
};

const char* kernel_name(Int8Kernel k) {
  switch (k) {
    case Int8Kernel::kPairs: return "pairs";
    case Int8Kernel::kQuadsAvx512: return "quads, AVX-512 VNNI";
    case Int8Kernel::kQuadsAvx: return "quads, AVX-VNNI";
    case Int8Kernel::kBytePairs: return "byte pairs, AVX2";
  }
  return "?";
}

/// The blocks of rows reported done, in the order they came.
struct Reported {
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;
  static void add(void* self, std::int64_t r0, std::int64_t r1) {
    static_cast<Reported*>(self)->blocks.emplace_back(r0, r1);
  }
};

/// The operands' values: any byte; the operand that the quads pack as signed within [-64, 63]
/// as packed; or A within [-64, 63] (s8) or [0, 127] (u8). The byte pairs are exact on both
/// 7-bit forms.
enum class Values { kFull, kSevenBit, kSevenBitA };

/// Which of A and B the quads pack as signed bytes, and the xor that packing applies to it.
template <bool kSignedA, bool kSignedB>
constexpr bool kAPackedSigned = kSignedA && !kSignedB;
template <bool kSignedA, bool kSignedB>
constexpr std::uint8_t kSignedPackFlip = !kSignedA && !kSignedB ? 0x80 : 0;

/// Runs the product by `kernel`, or by Int8Gemm::run when `kernel` is empty, and compares it
/// with 64-bit loops.
template <bool kSignedA, bool kSignedB>
void check_kernel(std::optional<Int8Kernel> kernel, const Size& s, std::mt19937& rng, Values values = Values::kFull) {
  const std::int64_t lda = s.depth + 3, ldb = s.cols + 5, ldc = s.cols + 7;
  std::vector<std::uint8_t> a(static_cast<std::size_t>(s.rows * lda)), b(static_cast<std::size_t>(s.depth * ldb));
  for (auto& v : a) v = static_cast<std::uint8_t>(rng());
  for (auto& v : b) v = static_cast<std::uint8_t>(rng());
  // Some rows and columns at the extremes, where a shifted operand or a correction overflows
  // first if it is wrong.
  for (std::int64_t k = 0; k < s.depth; ++k) {
    a[static_cast<std::size_t>(k)] = kSignedA ? 0x80 : 0xFF;
    b[static_cast<std::size_t>(k * ldb)] = kSignedB ? 0x80 : 0xFF;
  }
  if (values == Values::kSevenBit) {
    // The signed operand as packed within [-64, 63], its first row or column at -64.
    constexpr bool kA = kAPackedSigned<kSignedA, kSignedB>;
    constexpr std::uint8_t kFlip = kSignedPackFlip<kSignedA, kSignedB>;
    std::vector<std::uint8_t>& m = kA ? a : b;
    for (auto& v : m) v = static_cast<std::uint8_t>(static_cast<std::uint8_t>(static_cast<std::int8_t>(rng() % 128 - 64)) ^ kFlip);
    for (std::int64_t k = 0; k < s.depth; ++k)
      m[static_cast<std::size_t>(kA ? k : k * ldb)] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(-64) ^ kFlip);
  }
  if (values == Values::kSevenBitA) {
    for (auto& v : a) v = static_cast<std::uint8_t>(kSignedA ? rng() % 128 - 64 : rng() % 128);
    for (std::int64_t k = 0; k < s.depth; ++k) a[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(kSignedA ? -64 : 127);
  }
  if (values != Values::kFull)
    CHECK(Int8Gemm::byte_pairs_shift<kSignedA, kSignedB>(s.rows, s.cols, s.depth, a.data(), lda, b.data(), ldb));
  auto value = [](std::uint8_t v, bool is_signed) -> std::int64_t {
    return is_signed ? static_cast<std::int8_t>(v) : static_cast<std::int64_t>(v);
  };
  constexpr std::int32_t kUntouched = 0x5A5A5A5A;  // the gap between rows of c keeps it
  std::vector<std::int32_t> c(static_cast<std::size_t>(s.rows * ldc), kUntouched);
  std::vector<std::byte> scratch_bytes(static_cast<std::size_t>(Int8Gemm::scratch_bytes(s.cols, s.depth) + 64));
  const auto base = reinterpret_cast<std::uintptr_t>(scratch_bytes.data());
  auto* scratch = reinterpret_cast<std::byte*>((base + 63) / 64 * 64);
  Reported reported;
  if (kernel)
    Int8Gemm::run_with<kSignedA, kSignedB>(*kernel, s.rows, s.cols, s.depth, a.data(), lda, b.data(), ldb, c.data(),
                                            ldc, scratch, RowsDone{&Reported::add, &reported});
  else
    Int8Gemm::run<kSignedA, kSignedB>(s.rows, s.cols, s.depth, a.data(), lda, b.data(), ldb, c.data(), ldc, scratch,
                                      RowsDone{&Reported::add, &reported});
  // The operands' values, read through plain pointers in the loops (at -O0 every index into
  // a vector is a function call).
  std::vector<std::int64_t> a_values, b_values;
  for (std::uint8_t v : a) a_values.push_back(value(v, kSignedA));
  for (std::uint8_t v : b) b_values.push_back(value(v, kSignedB));
  const std::int64_t* av = a_values.data();
  const std::int64_t* bv = b_values.data();
  std::int64_t wrong = 0, first_wrong = -1;
  for (std::int64_t i = 0; i < s.rows; ++i) {
    for (std::int64_t j = 0; j < ldc; ++j) {
      std::int32_t want = kUntouched;
      if (j < s.cols) {
        std::int64_t sum = 0;
        for (std::int64_t k = 0; k < s.depth; ++k) sum += av[i * lda + k] * bv[k * ldb + j];
        want = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum));
      }
      if (c[static_cast<std::size_t>(i * ldc + j)] != want && wrong++ == 0) first_wrong = i * ldc + j;
    }
  }
  CAPTURE(first_wrong);
  CHECK(wrong == 0);
  // The blocks of rows cover [0, rows) in order, each row once.
  std::int64_t next = 0;
  for (const auto& [r0, r1] : reported.blocks) {
    CHECK(r0 == next);
    CHECK(r1 > r0);
    next = r1;
  }
  CHECK(next == s.rows);
}

TEST_CASE("int8 gemm: every micro-kernel this CPU runs equals 64-bit loops, at every signedness") {
  std::mt19937 rng(26);
  std::vector<Int8Kernel> kernels;
  for (Int8Kernel k : {Int8Kernel::kPairs, Int8Kernel::kQuadsAvx, Int8Kernel::kQuadsAvx512})
    if (Int8Gemm::runs(k)) kernels.push_back(k);
  REQUIRE(!kernels.empty());
  for (Int8Kernel k : {Int8Kernel::kQuadsAvx, Int8Kernel::kQuadsAvx512, Int8Kernel::kBytePairs})
    if (!Int8Gemm::runs(k)) MESSAGE("this CPU does not run the ", kernel_name(k), " kernel: not checked here");
  CHECK(Int8Gemm::runs(Int8Gemm::best()));
  // Columns: under one panel, one, two side by side (partial and full), two and a lone third;
  // rows: under one register tile, several, over one block of rows; depths: odd, under one
  // quad, over one depth block.
  const Size sizes[] = {{1, 1, 1},   {5, 7, 3},    {6, 16, 4},    {6, 32, 8},    {7, 17, 5},
                        {13, 48, 9}, {12, 47, 515}, {131, 40, 601}, {125, 33, 1030}, {2, 64, 2}};
  for (Int8Kernel k : kernels) {
    for (const Size& s : sizes) {
      CAPTURE(kernel_name(k));
      CAPTURE(s.rows);
      CAPTURE(s.cols);
      CAPTURE(s.depth);
      check_kernel<true, true>(k, s, rng);
      check_kernel<true, false>(k, s, rng);
      check_kernel<false, true>(k, s, rng);
      check_kernel<false, false>(k, s, rng);
    }
  }
  // The byte pairs on operands where they are exact, and run() on those and on full-range
  // operands (which it gives to best()).
  for (const Size& s : sizes) {
    CAPTURE(s.rows);
    CAPTURE(s.cols);
    CAPTURE(s.depth);
    for (Values v : {Values::kFull, Values::kSevenBit, Values::kSevenBitA}) {
      CAPTURE(static_cast<int>(v));
      if (Int8Gemm::runs(Int8Kernel::kBytePairs)) {  // on full-range operands it runs the pairs
        check_kernel<true, true>(Int8Kernel::kBytePairs, s, rng, v);
        check_kernel<true, false>(Int8Kernel::kBytePairs, s, rng, v);
        check_kernel<false, true>(Int8Kernel::kBytePairs, s, rng, v);
        check_kernel<false, false>(Int8Kernel::kBytePairs, s, rng, v);
      }
      check_kernel<true, true>(std::nullopt, s, rng, v);
      check_kernel<true, false>(std::nullopt, s, rng, v);
      check_kernel<false, true>(std::nullopt, s, rng, v);
      check_kernel<false, false>(std::nullopt, s, rng, v);
    }
  }
}

TEST_CASE("int8 gemm: the byte pairs are taken only where no 16-bit pair sum can saturate") {
  // byte_pairs_shift against the bound it stands for, on 1 x 2 by 2 x 1 products: the largest
  // unsigned byte u and the largest magnitude s of the signed ones (as the quads pack them)
  // are exact when 2 * u * s <= 32767.
  auto exact = [](std::uint8_t a0, std::uint8_t a1, std::uint8_t b0, std::uint8_t b1, auto signedness) {
    constexpr bool kSignedA = decltype(signedness)::first_type::value, kSignedB = decltype(signedness)::second_type::value;
    const std::uint8_t a[2] = {a0, a1}, b[2] = {b0, b1};
    return Int8Gemm::byte_pairs_shift<kSignedA, kSignedB>(1, 1, 2, a, 2, b, 1).has_value();
  };
  using SS = std::pair<std::true_type, std::true_type>;    // A packed +128 (unsigned), B signed
  using UU = std::pair<std::false_type, std::false_type>;  // A unsigned, B packed -128 (signed)
  using SU = std::pair<std::true_type, std::false_type>;   // B unsigned, A signed
  using US = std::pair<std::false_type, std::true_type>;   // A unsigned, B signed
  // u8 x s8: A up to 255 with B within [-64, 64]; B at -65 or 65 is not.
  CHECK(exact(255, 0, 64, static_cast<std::uint8_t>(-64), US{}));
  CHECK(!exact(255, 0, 65, 0, US{}));
  CHECK(!exact(255, 0, static_cast<std::uint8_t>(-65), 0, US{}));
  // A at most 127 takes any signed B.
  CHECK(exact(127, 3, 0x80, 0x7F, US{}));
  CHECK(!exact(128, 3, 0x80, 0x7F, US{}));
  // s8 x s8: A packs as a minus its least value: A spanning all 256 values packs up to 255,
  // so B within [-64, 64] is exact; A within 128 consecutive values takes any B.
  CHECK(exact(127, 0x80, 64, 0, SS{}));
  CHECK(!exact(127, 0x80, 65, 0, SS{}));
  CHECK(exact(static_cast<std::uint8_t>(-64), 63, 0x80, 0x7F, SS{}));
  CHECK(exact(100, 127, 0x80, 0x7F, SS{}));
  CHECK(!exact(static_cast<std::uint8_t>(-64), 64, 0x80, 0, SS{}));
  // u8 x u8: B packs as b - 128, within [-64, 64] for b in [64, 192].
  CHECK(exact(255, 255, 64, 192, UU{}));
  CHECK(!exact(255, 255, 63, 100, UU{}));
  // s8 x u8: B is the unsigned operand, A the signed one.
  CHECK(exact(static_cast<std::uint8_t>(-64), 64, 255, 255, SU{}));
  CHECK(!exact(static_cast<std::uint8_t>(-65), 0, 255, 0, SU{}));
}

TEST_CASE("int8 gemm: an empty product reports its rows and leaves zeros") {
  for (Int8Kernel k : {Int8Kernel::kPairs, Int8Kernel::kQuadsAvx, Int8Kernel::kQuadsAvx512}) {
    if (!Int8Gemm::runs(k)) continue;
    CAPTURE(kernel_name(k));
    std::vector<std::int32_t> c(12, 7);
    alignas(64) std::byte scratch[64];
    Reported reported;
    // depth 0: every sum is 0 and every row is done at once.
    Int8Gemm::run_with<true, true>(k, 3, 4, 0, nullptr, 0, nullptr, 4, c.data(), 4, scratch,
                                   RowsDone{&Reported::add, &reported});
    CHECK(std::all_of(c.begin(), c.end(), [](std::int32_t v) { return v == 0; }));
    REQUIRE(reported.blocks.size() == 1);
    CHECK(reported.blocks[0] == std::pair<std::int64_t, std::int64_t>(0, 3));
  }
}

}  // namespace int8_gemm_test
