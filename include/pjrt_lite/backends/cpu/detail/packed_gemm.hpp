#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The register-blocked inner product that convolution runs on: an MR x NR tile of the result
// kept in vector registers while the depth streams past, the right operand packed in panels
// of NR columns and the left one read through MR row pointers. Reading the left operand
// through pointers lets a convolution hand the micro-kernel its input rows where they are
// (an NHWC window tap is a contiguous run of input features), so it never builds an im2col
// matrix (the indirect convolution of Dukhan, "The Indirect Convolution Algorithm", 2019).
//
// The vector width is Eigen's packet for the translation unit's instruction set; types Eigen
// does not vectorize (integers in unsigned arithmetic, complex) run the same tiles one lane
// wide.

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

/// c[r][0..kNr) (+)= sum over segments s and k < len of rows[s][r][k] * b[s * b_segment + k][0..kNr).
/// `rows` holds kMr pointers per segment; `b` is a packed panel (kNr values per depth step);
/// `c` holds kMr row pointers. With `accumulate` false, c is overwritten.
template <class C>
void micro_kernel(std::int64_t segments, std::int64_t len, const C* const* rows, const C* b, std::int64_t b_segment,
                  C* const* c, bool accumulate) {
  using T = MicroTile<C>;
  using L = typename T::L;
  using P = typename L::Packet;
  constexpr int kMr = T::kMr, kNp = T::kPackets, kW = L::kSize;
  P acc[kMr][kNp];
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((acc[R / kNp][R % kNp] = L::zero()), ...);
  }(std::make_integer_sequence<int, kMr * kNp>{});
  for (std::int64_t s = 0; s < segments; ++s, rows += kMr, b += b_segment * T::kNr) {
    const C* a[kMr];
    [&]<int... R>(std::integer_sequence<int, R...>) { ((a[R] = rows[R]), ...); }(std::make_integer_sequence<int, kMr>{});
    const C* bk = b;
    for (std::int64_t k = 0; k < len; ++k, bk += T::kNr) {
      P bv[kNp];
      [&]<int... J>(std::integer_sequence<int, J...>) {
        ((bv[J] = L::load(bk + J * kW)), ...);
      }(std::make_integer_sequence<int, kNp>{});
      [&]<int... R>(std::integer_sequence<int, R...>) {
        auto row = [&](int r) {
          const P x = L::broadcast(a[r] + k);
          [&]<int... J>(std::integer_sequence<int, J...>) {
            ((acc[r][J] = L::madd(x, bv[J], acc[r][J])), ...);
          }(std::make_integer_sequence<int, kNp>{});
        };
        (row(R), ...);
      }(std::make_integer_sequence<int, kMr>{});
    }
  }
  for (int r = 0; r < kMr; ++r)
    for (int j = 0; j < kNp; ++j) {
      C* at = c[r] + j * kW;
      L::store(at, accumulate ? L::add(L::load(at), acc[r][j]) : acc[r][j]);
    }
}

}  // namespace pjrt_lite::cpu::detail
