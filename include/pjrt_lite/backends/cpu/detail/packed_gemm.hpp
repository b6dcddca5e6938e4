#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The register-blocked inner product of convolution and of f32/f64 dot_general (PanelGemm): an
// MR x NR tile of the result kept in vector registers while the depth streams past, the right
// operand packed in panels of NR columns and the left one read through MR row pointers, which
// lets a convolution hand the micro-kernel its input rows where they are (an NHWC window tap
// is a contiguous run of input features), so it never builds an im2col matrix (the indirect
// convolution of Dukhan, "The Indirect Convolution Algorithm", 2019).
//
// The vector width is Eigen's packet for the translation unit's instruction set; types Eigen
// does not vectorize (integers in unsigned arithmetic, complex) run the same tiles one lane
// wide.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <Eigen/Core>

namespace pjrt_lite::inline v0_1::cpu::detail {

/// Eigen's packet of C, or C itself where Eigen does not vectorize it (or not as a plain
/// real number).
template <class C, bool kVector = std::is_floating_point_v<C> && Eigen::internal::packet_traits<C>::Vectorizable>
struct Lanes {
  using Packet = typename Eigen::internal::packet_traits<C>::type;
  static constexpr int kSize = Eigen::internal::unpacket_traits<Packet>::size;
  static Packet zero() { return Eigen::internal::pset1<Packet>(C(0)); }
  static Packet broadcast(const C* x) { return Eigen::internal::pset1<Packet>(*x); }
  static Packet load(const C* x) { return Eigen::internal::ploadu<Packet>(x); }
  static void store(C* x, const Packet& p) { Eigen::internal::pstoreu(x, p); }
  static Packet madd(const Packet& a, const Packet& b, const Packet& c) { return Eigen::internal::pmadd(a, b, c); }
  static Packet add(const Packet& a, const Packet& b) { return Eigen::internal::padd(a, b); }
};
template <class C>
struct Lanes<C, false> {
  using Packet = C;
  static constexpr int kSize = 1;
  static C zero() { return C(0); }
  static C broadcast(const C* x) { return *x; }
  static C load(const C* x) { return *x; }
  static void store(C* x, const C& p) { *x = p; }
  static C madd(const C& a, const C& b, const C& c) { return a * b + c; }
  static C add(const C& a, const C& b) { return a + b; }
};

/// The tile of the micro-kernel: kMr rows by kNr = kPackets vectors of columns. Six rows of
/// two vectors hold 12 accumulators, two right-hand vectors and a broadcast in 16 registers.
template <class C>
struct MicroTile {
  using L = Lanes<C>;
  static constexpr int kPackets = L::kSize > 1 ? 2 : 4;
  static constexpr int kMr = L::kSize > 1 ? 6 : 4;
  static constexpr int kNr = kPackets * L::kSize;
};

/// c[r][column + 0..kNr) (+)= sum over segments s and k < len of rows[s][r][k] *
/// b[s * b_segment + k][0..kNr), for r < kRows. `rows` holds kRows pointers per segment; `b`
/// is a panel of kNr values per depth step, `b_step` apart (kNr when packed); `c` holds kRows
/// row pointers. With `accumulate` false, c is overwritten.
template <class C, int kRows = MicroTile<C>::kMr>
void micro_kernel(std::int64_t segments, std::int64_t len, const C* const* rows, const C* b, std::int64_t b_segment,
                  C* const* c, std::int64_t column, bool accumulate, std::int64_t b_step = MicroTile<C>::kNr) {
  using T = MicroTile<C>;
  using L = typename T::L;
  using P = typename L::Packet;
  constexpr int kNp = T::kPackets, kW = L::kSize;
  P acc[kRows][kNp];
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((acc[R / kNp][R % kNp] = L::zero()), ...);
  }(std::make_integer_sequence<int, kRows * kNp>{});
  for (std::int64_t s = 0; s < segments; ++s, rows += kRows, b += b_segment * b_step) {
    const C* a[kRows];
    [&]<int... R>(std::integer_sequence<int, R...>) { ((a[R] = rows[R]), ...); }(std::make_integer_sequence<int, kRows>{});
    const C* bk = b;
    for (std::int64_t k = 0; k < len; ++k, bk += b_step) {
      P bv[kNp];
      [&]<int... J>(std::integer_sequence<int, J...>) {
        ((bv[J] = L::load(bk + J * kW)), ...);
      }(std::make_integer_sequence<int, kNp>{});
      [&]<int... R>(std::integer_sequence<int, R...>) {
        auto row = [&]<int r>(std::integral_constant<int, r>) {
          const P x = L::broadcast(a[r] + k);
          [&]<int... J>(std::integer_sequence<int, J...>) {
            ((acc[r][J] = L::madd(x, bv[J], acc[r][J])), ...);
          }(std::make_integer_sequence<int, kNp>{});
        };
        (row(std::integral_constant<int, R>{}), ...);
      }(std::make_integer_sequence<int, kRows>{});
    }
  }
  [&]<int... R>(std::integer_sequence<int, R...>) {
    auto store = [&]<int r, int j>(std::integral_constant<int, r>, std::integral_constant<int, j>) {
      C* at = c[r] + column + j * kW;
      L::store(at, accumulate ? L::add(L::load(at), acc[r][j]) : acc[r][j]);
    };
    (store(std::integral_constant<int, R / kNp>{}, std::integral_constant<int, R % kNp>{}), ...);
  }(std::make_integer_sequence<int, kRows * kNp>{});
}

/// A product c = op(a) * op(b) of real floating-point numbers on micro_kernel, all row-major
/// views as gemm_into takes them. The depth runs in blocks of kKc. op(b) is packed kKc x kNc
/// at a time (in L2) in panels of kNr columns, zero past the last column, unless the product
/// has too few rows to reuse a packed panel much: a row-major b is then read in place, and
/// only a last partial panel is packed. op(a) is read in place through row pointers, kMr rows
/// at a time (a strip of kKc elements per row, in L1 while it meets every panel), or copied a
/// strip at a time when it is column-major. Each element of c sums its depth block by block
/// in the same order whatever rows and columns a call covers, so a product split across
/// calls by rows or by columns has the bits of the whole.
template <class C>
struct PanelGemm {
  using Tile = MicroTile<C>;
  static constexpr std::int64_t kMr = Tile::kMr, kNr = Tile::kNr;
  static constexpr std::int64_t kKc = 2048 / static_cast<std::int64_t>(sizeof(C));  // 512 f32, 256 f64
  static constexpr std::int64_t kNc = 128;  // a multiple of kNr
  /// Products of fewer rows read a row-major b in place.
  static constexpr std::int64_t kPackRows = 2 * kMr;

  /// The elements of scratch a call of this shape takes.
  static std::int64_t scratch_elements(std::int64_t cols, std::int64_t depth) {
    const std::int64_t kc = std::min(depth, kKc);
    return kc * round_up(std::min(cols, kNc)) + kMr * kc + kMr * kNr;
  }

  /// c = op(a) * op(b), c [rows x cols] with row stride ldc; op(a) [rows x depth] row-major
  /// with stride lda, or (kLhsColumns) column-major; op(b) [depth x cols] likewise.
  /// `scratch` holds scratch_elements(cols, depth) elements.
  template <bool kLhsColumns, bool kRhsColumns>
  static void run(std::int64_t rows, std::int64_t cols, std::int64_t depth, const C* a, std::int64_t lda,
                  const C* b, std::int64_t ldb, C* c, std::int64_t ldc, C* scratch) {
    const std::int64_t kc_max = std::min(depth, kKc);
    C* const packed = scratch;
    C* const strip = packed + kc_max * round_up(std::min(cols, kNc));
    C* const tile = strip + kMr * kc_max;  // a last partial panel's columns of c
    const bool in_place = !kRhsColumns && rows < kPackRows;
    for (std::int64_t k0 = 0; k0 < depth; k0 += kKc) {
      const std::int64_t kc = std::min(kKc, depth - k0);
      const bool accumulate = k0 > 0;
      for (std::int64_t j0 = 0; j0 < cols; j0 += kNc) {
        const std::int64_t nc = std::min(kNc, cols - j0);
        // The panel [p0, p0 + kNr) of this block, and the distance between its depth steps.
        const std::int64_t whole = in_place ? nc / kNr * kNr : 0;
        pack<kRhsColumns>(b, ldb, k0, kc, j0 + whole, nc - whole, packed + whole * kc);
        auto panel = [&](std::int64_t p0) {
          return p0 < whole ? std::pair{b + k0 * ldb + j0 + p0, ldb} : std::pair{packed + p0 * kc, kNr};
        };
        for (std::int64_t i0 = 0; i0 < rows; i0 += kMr) {
          const std::int64_t mr = std::min(kMr, rows - i0);
          const C* in[kMr];
          for (std::int64_t r = 0; r < mr; ++r) {
            if constexpr (kLhsColumns) {
              in[r] = strip + r * kc;
            } else {
              in[r] = a + (i0 + r) * lda + k0;
            }
          }
          if constexpr (kLhsColumns) {
            for (std::int64_t k = 0; k < kc; ++k)
              for (std::int64_t r = 0; r < mr; ++r) strip[r * kc + k] = a[(k0 + k) * lda + i0 + r];
          }
          for (std::int64_t p0 = 0; p0 < nc; p0 += kNr) {
            const std::int64_t nr = std::min(kNr, nc - p0);
            C* const at = c + i0 * ldc + j0 + p0;
            C* out[kMr];
            for (std::int64_t r = 0; r < mr; ++r) out[r] = nr == kNr ? at + r * ldc : tile + r * kNr;
            if (nr < kNr && accumulate) {
              for (std::int64_t r = 0; r < mr; ++r) {
                std::copy_n(at + r * ldc, nr, tile + r * kNr);
                std::fill(tile + r * kNr + nr, tile + (r + 1) * kNr, C(0));
              }
            }
            const auto [from, step] = panel(p0);
            strip_tile(mr, kc, in, from, step, out, accumulate);
            if (nr < kNr) {
              for (std::int64_t r = 0; r < mr; ++r) std::copy_n(tile + r * kNr, nr, at + r * ldc);
            }
          }
        }
      }
    }
  }

 private:
  static std::int64_t round_up(std::int64_t n) { return (n + kNr - 1) / kNr * kNr; }

  /// micro_kernel on the first `mr` (1 to kMr) rows.
  template <int kRows = kMr>
  static void strip_tile(std::int64_t mr, std::int64_t kc, const C* const* in, const C* b, std::int64_t b_step,
                         C* const* out, bool accumulate) {
    if constexpr (kRows > 1) {
      if (mr < kRows) return strip_tile<kRows - 1>(mr, kc, in, b, b_step, out, accumulate);
    }
    micro_kernel<C, kRows>(1, kc, in, b, 0, out, 0, accumulate, b_step);
  }

  /// Packs op(b)[k0, k0 + kc) x [j0, j0 + nc) as panels of kNr columns, kc x kNr each, row by
  /// row, the columns past nc zero. A row-major b is read a row at a time across every whole
  /// panel (reading a panel's rows one after another strides through memory); a column-major
  /// b's whole panels transpose square blocks of packets (kW columns by kW depth steps).
  template <bool kRhsColumns>
  static void pack(const C* b, std::int64_t ldb, std::int64_t k0, std::int64_t kc, std::int64_t j0,
                   std::int64_t nc, C* packed) {
    using L = typename Tile::L;
    constexpr int kW = L::kSize, kNp = Tile::kPackets;
    const std::int64_t whole = nc / kNr * kNr;
    if constexpr (kRhsColumns) {
      for (std::int64_t p0 = 0; p0 < whole; p0 += kNr) {
        const C* columns = b + (j0 + p0) * ldb + k0;  // column j of the panel at columns + j * ldb
        C* panel = packed + p0 * kc;
        std::int64_t k = 0;
        if constexpr (kW > 1) {
          for (; k + kW <= kc; k += kW) transpose_blocks(columns + k, ldb, panel + k * kNr);
        }
        for (std::int64_t j = 0; j < kNr; ++j)
          for (std::int64_t t = k; t < kc; ++t) panel[t * kNr + j] = columns[j * ldb + t];
      }
    } else {
      for (std::int64_t k = 0; k < kc; ++k) {
        const C* row = b + (k0 + k) * ldb + j0;
        for (std::int64_t p0 = 0; p0 < whole; p0 += kNr) {
          C* to = packed + p0 * kc + k * kNr;
          [&]<int... J>(std::integer_sequence<int, J...>) {
            (L::store(to + J * kW, L::load(row + p0 + J * kW)), ...);
          }(std::make_integer_sequence<int, kNp>{});
        }
      }
    }
    if (whole < nc) {  // the last panel, partial
      const std::int64_t nr = nc - whole;
      C* panel = packed + whole * kc;
      for (std::int64_t k = 0; k < kc; ++k) {
        for (std::int64_t j = 0; j < nr; ++j)
          panel[k * kNr + j] = kRhsColumns ? b[(j0 + whole + j) * ldb + k0 + k] : b[(k0 + k) * ldb + j0 + whole + j];
        std::fill(panel + k * kNr + nr, panel + (k + 1) * kNr, C(0));
      }
    }
  }

  /// The kW depth steps at `columns` (column j at columns + j * ldb) of a whole panel's kNr
  /// columns, as kW rows of the panel at `to`: one kW x kW transpose per packet of columns.
  static void transpose_blocks(const C* columns, std::int64_t ldb, C* to) {
    using L = typename Tile::L;
    constexpr int kW = L::kSize;
    if constexpr (kW > 1) {
      for (int jp = 0; jp < Tile::kPackets; ++jp) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"  // the packet's vector attribute, as Eigen's own blocks
#endif
        Eigen::internal::PacketBlock<typename L::Packet, kW> block;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
        for (int i = 0; i < kW; ++i) block.packet[i] = L::load(columns + (jp * kW + i) * ldb);
        Eigen::internal::ptranspose(block);
        for (int i = 0; i < kW; ++i) L::store(to + i * kNr + jp * kW, block.packet[i]);
      }
    }
  }
};

}  // namespace pjrt_lite::cpu::detail
