#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The element-wise kernels of the CPU backend: one function per (op, element type), run on a
// tile of contiguous elements. Float and double go through Eigen's vectorized array
// expressions where Eigen has the op; the rest are plain loops, which GCC vectorizes at -O3
// (or at -O2 with -fvect-cost-model=dynamic, as the kernels library's per-level builds use).
// f16 and bf16 have no kernels here: the fusion compiler widens them to f32 around each op
// (see fusion.hpp), so each op rounds once, as the reference does.
//
// This header instantiates a few hundred kernels; include it only where programs are
// compiled (backends/cpu/detail/compiler.hpp).

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <Eigen/Core>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/special_math.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// One tile of one op: up to three inputs, one output, n elements each. Comparison
/// attributes ride along for compare, the two widths for reduce_precision.
struct TileArgs {
  const void* in[3] = {nullptr, nullptr, nullptr};
  void* out = nullptr;
  std::int64_t n = 0;
  ComparisonDirection direction = ComparisonDirection::kEq;
  ComparisonType comparison = ComparisonType::kFloat;
  std::int64_t exponent_bits = 0;
  std::int64_t mantissa_bits = 0;
  DType from = DType::kInvalid, to = DType::kInvalid;  // a convert to or from a narrow type
};
using TileFn = void (*)(const TileArgs&);

namespace ew {

template <class T> inline constexpr bool kIsComplex = is_complex_v<T>;
template <class T> inline constexpr bool kIsFloat = std::is_floating_point_v<T>;  // f32, f64
template <class T> inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T> using Unsigned = std::make_unsigned_t<T>;
template <class T> struct RealOf { using type = T; };
template <class T> struct RealOf<std::complex<T>> { using type = T; };

template <class T> using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T> using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

/// `pick.template operator()<T>()` for f32 and f64, or null.
template <class Pick>
TileFn with_float_type(DType t, Pick pick) {
  if (t == DType::kF32) return pick.template operator()<float>();
  if (t == DType::kF64) return pick.template operator()<double>();
  return nullptr;
}

template <class R, class T, class F>
inline void map1(const TileArgs& a, F f) {
  const T* x = static_cast<const T*>(a.in[0]);
  R* o = static_cast<R*>(a.out);
  for (std::int64_t i = 0; i < a.n; ++i) o[i] = f(x[i]);
}
template <class R, class T, class F>
inline void map2(const TileArgs& a, F f) {
  const T* x = static_cast<const T*>(a.in[0]);
  const T* y = static_cast<const T*>(a.in[1]);
  R* o = static_cast<R*>(a.out);
  for (std::int64_t i = 0; i < a.n; ++i) o[i] = f(x[i], y[i]);
}

// ---- Integer arithmetic without undefined behaviour: wrap in two's complement.
template <class T> inline T wrap_add(T a, T b) { return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b)); }
template <class T> inline T wrap_sub(T a, T b) { return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b)); }
template <class T> inline T wrap_mul(T a, T b) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Unsigned<T>>;  // no int promotion
  return static_cast<T>(static_cast<U>(static_cast<Unsigned<T>>(a)) * static_cast<U>(static_cast<Unsigned<T>>(b)));
}
template <class T> inline T int_div(T a, T b) {
  if (b == 0) return std::is_signed_v<T> ? T(-1) : std::numeric_limits<T>::max();
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
  return static_cast<T>(a / b);
}
template <class T> inline T int_rem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return T(0);
  return static_cast<T>(a % b);
}
template <class T> inline T int_pow(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  T result = 1;
  auto e = static_cast<Unsigned<T>>(exponent);
  while (e) {
    if (e & 1u) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}
template <class T> inline T shift_left(T a, T b) {
  auto amount = static_cast<Unsigned<T>>(b);
  if (amount >= sizeof(T) * 8) return 0;
  return static_cast<T>(static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) << amount));
}
template <class T> inline T shift_right_logical(T a, T b) {
  auto amount = static_cast<Unsigned<T>>(b);
  if (amount >= sizeof(T) * 8) return 0;
  return static_cast<T>(static_cast<Unsigned<T>>(a) >> amount);
}
template <class T> inline T shift_right_arithmetic(T a, T b) {
  using S = std::make_signed_t<T>;
  auto amount = static_cast<Unsigned<T>>(b);
  const auto s = static_cast<S>(a);
  if (amount >= sizeof(T) * 8) return static_cast<T>(s < 0 ? S(-1) : S(0));
  return static_cast<T>(static_cast<S>(s >> amount));  // >> of a negative is arithmetic in C++20
}

// ---- Floats: NaN-propagating max/min with +0 > -0, as the spec and the reference have it.
template <class T> inline T float_max(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class T> inline T float_min(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
template <class T> inline bool complex_less(const T& a, const T& b) {
  return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
}
template <class T> inline T float_sign(T x) {
  if (std::isnan(x) || x == T(0)) return x;
  return x > 0 ? T(1) : T(-1);
}
/// Maps a float's bits to an integer that orders like the spec's totalOrder:
/// -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN.
template <class T> inline auto total_order_key(T x) {
  using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  const I bits = std::bit_cast<I>(x);
  // Negative floats order backwards as integers; flip them below every non-negative one.
  return bits < 0 ? static_cast<I>(std::numeric_limits<I>::min() - bits - 1) : bits;
}

/// Recomputes with `exact` the elements of `o` whose input `x` is outside what `safe`
/// accepts. The scan is a branch-free reduction the compiler vectorizes; the fix-up loop runs
/// only when a tile holds such an element.
template <class T, class Safe, class Exact>
inline void fix_edges(const T* x, T* o, std::int64_t n, Safe safe, Exact exact) {
  // An unsigned reduction vectorizes where a bool one does not, and the fixed-size inner
  // blocks let g++ -O2 vectorize it too: its cheap cost model takes only loops whose trip
  // count is a known multiple of the vector width.
  constexpr std::int64_t kBlock = 16;
  unsigned unsafe = 0;
  std::int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock)
    for (std::int64_t j = 0; j < kBlock; ++j) unsafe |= static_cast<unsigned>(!safe(x[i + j]));
  for (; i < n; ++i) unsafe |= static_cast<unsigned>(!safe(x[i]));
  if (unsafe == 0) return;
  for (i = 0; i < n; ++i)
    if (!safe(x[i])) o[i] = exact(x[i]);
}

/// Runs `tile` on `a` a chunk at a time, each chunk's inputs copied to a local buffer first:
/// for a kernel that must not see its output overwrite its input.
template <class T, class Tile>
inline void through_local_chunks(const TileArgs& a, Tile tile) {
  constexpr std::int64_t kChunk = 256;
  alignas(64) T local[kChunk];
  const T* x = static_cast<const T*>(a.in[0]);
  T* o = static_cast<T*>(a.out);
  for (std::int64_t b = 0; b < a.n; b += kChunk) {
    const std::int64_t m = std::min(kChunk, a.n - b);
    std::memcpy(local, x + b, static_cast<std::size_t>(m) * sizeof(T));
    TileArgs part = a;
    part.in[0] = local;
    part.out = o + b;
    part.n = m;
    tile(part);
  }
}

/// Eigen's vectorized transcendental functions are fast inside their working range and lose
/// the IEEE special cases outside it (exp(-inf) is not 0, log of a denormal, sqrt(inf) is
/// NaN). Runs `vec`, then recomputes the elements that `safe` rejects with the C library's
/// `exact`, which reads the inputs again: an output that overlaps the input goes through
/// local chunks.
template <class T, class Vec, class Safe, class Exact>
inline void vector_with_edges(const TileArgs& a, Vec vec, Safe safe, Exact exact) {
  const T* x = static_cast<const T*>(a.in[0]);
  T* o = static_cast<T*>(a.out);
  if (!(o + a.n <= x || x + a.n <= o))
    return through_local_chunks<T>(a, [&](const TileArgs& part) { vector_with_edges<T>(part, vec, safe, exact); });
  ArrayMap<T>(o, a.n) = vec(ConstArrayMap<T>(x, a.n));
  fix_edges(x, o, a.n, safe, exact);
}

/// The widest vectors of T this build has, for sqrt_tile: their lanes, loads and stores,
/// square root and division (each correctly rounded, as IEEE 754 has them). Lanes 1 where
/// the build has none.
template <class T>
struct SqrtVectors {
  static constexpr std::int64_t kLanes = 1;
};
#if defined(__AVX512F__)
template <> struct SqrtVectors<float> {
  static constexpr std::int64_t kLanes = 16;
  static __m512 load(const float* x) { return _mm512_loadu_ps(x); }
  static void store(float* o, __m512 v) { _mm512_storeu_ps(o, v); }
  static __m512 sqrt(__m512 v) { return _mm512_sqrt_ps(v); }
  static __m512 reciprocal(__m512 v) { return _mm512_div_ps(_mm512_set1_ps(1.0f), v); }
};
template <> struct SqrtVectors<double> {
  static constexpr std::int64_t kLanes = 8;
  static __m512d load(const double* x) { return _mm512_loadu_pd(x); }
  static void store(double* o, __m512d v) { _mm512_storeu_pd(o, v); }
  static __m512d sqrt(__m512d v) { return _mm512_sqrt_pd(v); }
  static __m512d reciprocal(__m512d v) { return _mm512_div_pd(_mm512_set1_pd(1.0), v); }
};
#elif defined(__AVX__)
template <> struct SqrtVectors<float> {
  static constexpr std::int64_t kLanes = 8;
  static __m256 load(const float* x) { return _mm256_loadu_ps(x); }
  static void store(float* o, __m256 v) { _mm256_storeu_ps(o, v); }
  static __m256 sqrt(__m256 v) { return _mm256_sqrt_ps(v); }
  static __m256 reciprocal(__m256 v) { return _mm256_div_ps(_mm256_set1_ps(1.0f), v); }
};
template <> struct SqrtVectors<double> {
  static constexpr std::int64_t kLanes = 4;
  static __m256d load(const double* x) { return _mm256_loadu_pd(x); }
  static void store(double* o, __m256d v) { _mm256_storeu_pd(o, v); }
  static __m256d sqrt(__m256d v) { return _mm256_sqrt_pd(v); }
  static __m256d reciprocal(__m256d v) { return _mm256_div_pd(_mm256_set1_pd(1.0), v); }
};
#elif defined(__SSE2__)
template <> struct SqrtVectors<float> {
  static constexpr std::int64_t kLanes = 4;
  static __m128 load(const float* x) { return _mm_loadu_ps(x); }
  static void store(float* o, __m128 v) { _mm_storeu_ps(o, v); }
  static __m128 sqrt(__m128 v) { return _mm_sqrt_ps(v); }
  static __m128 reciprocal(__m128 v) { return _mm_div_ps(_mm_set1_ps(1.0f), v); }
};
template <> struct SqrtVectors<double> {
  static constexpr std::int64_t kLanes = 2;
  static __m128d load(const double* x) { return _mm_loadu_pd(x); }
  static void store(double* o, __m128d v) { _mm_storeu_pd(o, v); }
  static __m128d sqrt(__m128d v) { return _mm_sqrt_pd(v); }
  static __m128d reciprocal(__m128d v) { return _mm_div_pd(_mm_set1_pd(1.0), v); }
};
#endif

/// sqrt (kReciprocal: 1 / sqrt) of f32 or f64, each element correctly rounded as IEEE 754 and
/// the spec have it (1 / sqrt: two roundings, as the C library's 1 / std::sqrt). Eigen 3.4's
/// packet sqrt is a reciprocal-square-root estimate refined by Newton steps for f32, and for
/// f64 too on AVX-512: within an ulp, and sqrt(t * t) need not be t. The CPU's square root
/// instruction on the widest vectors (SqrtVectors), then the C library's an element at a
/// time. An output that overwrites its input exactly is fine (each vector is read before it
/// is written); one that overlaps it partly goes through local chunks.
template <class T, bool kReciprocal>
inline void sqrt_tile(const TileArgs& a) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  const T* x = static_cast<const T*>(a.in[0]);
  T* o = static_cast<T*>(a.out);
  if (!(o == x || o + a.n <= x || x + a.n <= o))
    return through_local_chunks<T>(a, [](const TileArgs& part) { sqrt_tile<T, kReciprocal>(part); });
  using V = SqrtVectors<T>;
  std::int64_t i = 0;
  if constexpr (V::kLanes > 1) {
    for (; i + V::kLanes <= a.n; i += V::kLanes) {
      const auto r = V::sqrt(V::load(x + i));
      V::store(o + i, kReciprocal ? V::reciprocal(r) : r);
    }
  }
  for (; i < a.n; ++i) o[i] = kReciprocal ? T(1) / std::sqrt(x[i]) : std::sqrt(x[i]);
}

// The range checks evaluate both compares (no short circuit), so the scan vectorizes.
inline bool both(bool a, bool b) { return (static_cast<unsigned>(a) & static_cast<unsigned>(b)) != 0; }
template <class T> inline bool normal_positive(T x) {
  return both(x >= std::numeric_limits<T>::min(), x <= std::numeric_limits<T>::max());
}
/// Where exp neither overflows nor leaves the normal range.
template <class T> inline bool exp_range(T x) {
  if constexpr (sizeof(T) == 4) return both(x > T(-87), x < T(88));
  else return both(x > T(-708), x < T(709));
}

/// exp of an f32 packet whose lanes lie in (-87, 88): Eigen 3.4's pexp_float arithmetic
/// (Cody-Waite reduction by ln 2, the same degree-6 polynomial, the same fused multiply-adds)
/// with 2^m built directly in the exponent field. Eigen's general pldexp scales by 2^m in four
/// multiplies to reach exponents no float holds; here m lies in [-126, 127], where 2^m is a
/// normal float, every product before the last is exact and the last rounds once, as
/// Eigen's last does: the same bits (checked for every float in the range), in about 60% of
/// the time (docs/DECISIONS.md, "exp builds 2^m directly").
template <class P>
inline P exp_in_range(P x) {
  namespace ei = Eigen::internal;
  using PI = typename ei::unpacket_traits<P>::integer_packet;
  const P m = ei::pfloor(ei::pmadd(x, ei::pset1<P>(1.44269504088896341f), ei::pset1<P>(0.5f)));
  P r = ei::pmadd(m, ei::pset1<P>(-0.693359375f), x);
  r = ei::pmadd(m, ei::pset1<P>(2.12194440e-4f), r);
  const P r2 = ei::pmul(r, r);
  const P r3 = ei::pmul(r2, r);
  P y = ei::pmadd(ei::pset1<P>(1.9875691500E-4f), r, ei::pset1<P>(1.3981999507E-3f));
  P y1 = ei::pmadd(ei::pset1<P>(4.1665795894E-2f), r, ei::pset1<P>(1.6666665459E-1f));
  const P y2 = ei::padd(r, ei::pset1<P>(1.0f));
  y = ei::pmadd(y, r, ei::pset1<P>(8.3334519073E-3f));
  y1 = ei::pmadd(y1, r, ei::pset1<P>(5.0000001201E-1f));
  y = ei::pmadd(y, r3, y1);
  y = ei::pmadd(y, r2, y2);
  const PI biased = ei::padd(ei::pcast<P, PI>(m), ei::pset1<PI>(127));
  return ei::pmul(y, ei::preinterpret<P>(ei::plogical_shift_left<23>(biased)));
}

/// A unary tile on f32 or f64 in one pass: `packet` on each whole Eigen packet, `scalar` on the
/// tail. Each packet is loaded before its store, so the output may be the input.
template <class T, class PacketFn, class ScalarFn>
inline void packet_unary(const TileArgs& a, PacketFn packet, ScalarFn scalar) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  constexpr std::int64_t kLanes = ei::packet_traits<T>::size;
  const T* x = static_cast<const T*>(a.in[0]);
  T* o = static_cast<T*>(a.out);
  std::int64_t i = 0;
  if constexpr (kLanes > 1)
    for (; i + kLanes <= a.n; i += kLanes) ei::pstoreu(o + i, packet(ei::ploadu<P>(x + i)));
  for (; i < a.n; ++i) o[i] = scalar(x[i]);
}

/// Whether some lane of `a` is not below the same lane of `limit`, or is a NaN. Under
/// AVX-512 one compare into a mask register; Eigen's compares there widen each mask to a
/// vector first, and its range test of exp's packets took two compares, two widenings and two
/// logic ops per packet (a quarter of softmax's exp loop in perf's samples).
template <class P>
inline bool any_not_below(const P& a, const P& limit) {
  namespace ei = Eigen::internal;
  return ei::predux_any(ei::pandnot(ei::ptrue(a), ei::pcmp_lt(a, limit)));
}
#if defined(EIGEN_VECTORIZE_AVX512)
inline bool any_not_below(const Eigen::internal::Packet16f& a, const Eigen::internal::Packet16f& limit) {
  return _mm512_cmp_ps_mask(a, limit, _CMP_NLT_UQ) != 0;
}
inline bool any_not_below(const Eigen::internal::Packet8d& a, const Eigen::internal::Packet8d& limit) {
  return _mm512_cmp_pd_mask(a, limit, _CMP_NLT_UQ) != 0;
}
#endif

/// f(exp(arg(x))) over a tile in one pass, for exp and the ops built on it. Each packet's
/// exp is the vectorized one (exp_in_range for f32, Eigen's for f64); a packet with a lane
/// outside exp_range (where those lose IEEE's edges: exp(-inf) is not 0, overflow, NaN) is
/// redone lane by lane with the C library, before its store, so the output may be the input.
/// The tile's last partial packet runs in scalar code, as Eigen's loops do.
/// `arg` and `finish` take a packet; `scalar` computes f(exp(arg(v))) for one element.
template <class T, class Arg, class Finish, class Scalar>
inline void exp_pass(const TileArgs& a, Arg arg, Finish finish, Scalar scalar) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  constexpr std::int64_t kLanes = ei::packet_traits<T>::size;
  // exp_range(v) is |v - 1/2| < bound + 1/2: near the bounds the subtraction is exact, and a
  // NaN compares false.
  const T bound = sizeof(T) == 4 ? T(87) : T(708);
  const P center = ei::pset1<P>(T(0.5)), half_width = ei::pset1<P>(bound + T(0.5));
  packet_unary<T>(
      a,
      [&](P input) {
        const P v = arg(input);
        P out;
        if constexpr (std::is_same_v<T, float>)
          out = finish(exp_in_range(v));
        else
          out = finish(ei::pexp(v));
        if (any_not_below(ei::pabs(ei::psub(v, center)), half_width)) {
          alignas(64) T in_lanes[kLanes], out_lanes[kLanes], v_lanes[kLanes];
          ei::pstore(in_lanes, input);
          ei::pstore(v_lanes, v);
          ei::pstore(out_lanes, out);
          for (std::int64_t k = 0; k < kLanes; ++k)
            if (!exp_range(v_lanes[k])) out_lanes[k] = scalar(in_lanes[k]);
          out = ei::pload<P>(out_lanes);
        }
        return out;
      },
      scalar);
}

/// exp over a tile. kNegated computes exp(-x): the superinstruction TileProgram makes of a
/// negate feeding only an exp, bit for bit the two ops' result with one pass over the tile
/// less.
template <class T, bool kNegated = false>
inline void exp_tile(const TileArgs& a) {
  namespace ei = Eigen::internal;
  auto same = [](auto e) { return e; };
  if constexpr (kNegated)
    exp_pass<T>(a, [](auto v) { return ei::pnegate(v); }, same, [](T v) { return std::exp(-v); });
  else
    exp_pass<T>(a, same, same, [](T v) { return std::exp(v); });
}

/// exp(x - s) for a tile x and the one value s at in[1]: the superinstruction TileProgram
/// makes of a subtraction of a broadcast scalar feeding only an exp (softmax's
/// exp(x - max)), bit for bit the two ops' result.
template <class T>
inline void exp_of_difference_tile(const TileArgs& a) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  const T s = *static_cast<const T*>(a.in[1]);
  const P sp = ei::pset1<P>(s);
  exp_pass<T>(a, [sp](P v) { return ei::psub(v, sp); }, [](P e) { return e; }, [s](T v) { return std::exp(v - s); });
}

/// logistic(x) = 1 / (1 + exp(-x)), through exp rather than Eigen's logistic(), which is ~10
/// ULP off for f32.
template <class T>
inline void logistic_tile(const TileArgs& a) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  const P one = ei::pset1<P>(T(1));
  exp_pass<T>(a, [](P v) { return ei::pnegate(v); }, [one](P e) { return ei::pdiv(one, ei::padd(one, e)); },
              [](T v) { return T(1) / (T(1) + std::exp(-v)); });
}

/// negate on f32 or f64: the sign bit flipped, so that -(+0) is -0 and a NaN keeps its payload.
/// Eigen 3.4's AVX and AVX-512 pnegate compute 0 - x, which is +0 for +0.
template <class T>
inline void negate_tile(const TileArgs& a) {
  packet_unary<T>(
      a, [](auto v) { return Eigen::internal::pxor(v, Eigen::internal::pset1<decltype(v)>(T(-0.0))); },
      [](T v) { return -v; });
}

/// floor (kCeil false) or ceil on f32 or f64, the result's sign that of its input: a zero
/// result keeps the input's sign (floor(-0) and ceil(-0.5) are -0). Eigen 3.4's SSE2 packet
/// floor and ceil (no SSE4.1 round instruction) give +0 there.
template <class T, bool kCeil>
inline void floor_ceil_tile(const TileArgs& a) {
  namespace ei = Eigen::internal;
  packet_unary<T>(
      a,
      [](auto v) {
        const auto sign = ei::pset1<decltype(v)>(T(-0.0));
        const auto r = kCeil ? ei::pceil(v) : ei::pfloor(v);
        return ei::por(ei::pandnot(r, sign), ei::pand(v, sign));
      },
      [](T v) { return std::copysign(kCeil ? std::ceil(v) : std::floor(v), v); });
}

/// float_max (kMax) or float_min on whole Eigen packets: where the operands differ the larger
/// or smaller, where they are equal the bits of both and-ed for max (+0 if either is) or
/// or-ed for min (-0 if either is), and a NaN operand where there is one, the first's first.
template <bool kMax, class P>
inline P packet_max_min(const P& a, const P& b) {
  namespace ei = Eigen::internal;
  P r = ei::pselect(kMax ? ei::pcmp_lt(b, a) : ei::pcmp_lt(a, b), a, b);
  r = ei::pselect(ei::pcmp_eq(a, b), kMax ? ei::pand(a, b) : ei::por(a, b), r);
  r = ei::pselect(ei::pcmp_eq(b, b), r, b);
  return ei::pselect(ei::pcmp_eq(a, a), r, a);
}

/// maximum (kMax) or minimum on f32 or f64, by whole packets and a scalar tail.
template <class T, bool kMax>
inline void max_min_tile(const TileArgs& a) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  constexpr std::int64_t kLanes = ei::packet_traits<T>::size;
  const T* x = static_cast<const T*>(a.in[0]);
  const T* y = static_cast<const T*>(a.in[1]);
  T* o = static_cast<T*>(a.out);
  std::int64_t i = 0;
  if constexpr (kLanes > 1)
    for (; i + kLanes <= a.n; i += kLanes)
      ei::pstoreu(o + i, packet_max_min<kMax>(ei::ploadu<P>(x + i), ei::ploadu<P>(y + i)));
  for (; i < a.n; ++i) o[i] = kMax ? float_max(x[i], y[i]) : float_min(x[i], y[i]);
}

/// maximum (kMax) or minimum of `x op y` (x at in[0], y at in[1]; add, subtract or multiply)
/// and the tile z at in[2], the op's result the first operand (kOpFirst) or the second: a bias
/// and a relu in one pass over the tile. The op rounds as it would alone and max and min do
/// not round: bit for bit the two instructions.
/// With kScalar, z is one value at in[2] (a broadcast scalar: relu's 0): a bound that is not
/// NaN and not the zero whose sign the other zero would win against (-0 for maximum, +0 for
/// minimum) is the CPU's max or min instruction, which returns the bound for a NaN or an equal
/// operand, and then the NaN put back: the same bits as the general comparison in three
/// operations instead of nine.
template <class T, OpCode kOp, bool kMax, bool kOpFirst, bool kScalar = false>
inline void bounded_op_tile(const TileArgs& a) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  constexpr std::int64_t kLanes = ei::packet_traits<T>::size;
  const T* x = static_cast<const T*>(a.in[0]);
  const T* y = static_cast<const T*>(a.in[1]);
  const T* z = static_cast<const T*>(a.in[2]);
  T* o = static_cast<T*>(a.out);
  auto op = [](const auto& u, const auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(u)>, T>) {
      return kOp == OpCode::kAdd ? u + v : kOp == OpCode::kSubtract ? u - v : u * v;
    } else if constexpr (kOp == OpCode::kAdd) {
      return ei::padd(u, v);
    } else if constexpr (kOp == OpCode::kSubtract) {
      return ei::psub(u, v);
    } else {
      return ei::pmul(u, v);
    }
  };
  // The scalar tail, and the ordering of NaNs and signed zeros every path keeps.
  auto pick = [](T v, T w) {
    const T first = kOpFirst ? v : w, second = kOpFirst ? w : v;
    return kMax ? float_max(first, second) : float_min(first, second);
  };
  std::int64_t i = 0;
  if constexpr (kScalar) {
    const T bound = *z;
    if constexpr (kLanes > 1) {
      const P b = ei::pset1<P>(bound);
      if (!std::isnan(bound) && !(bound == 0 && std::signbit(bound) == kMax)) {
        for (; i + kLanes <= a.n; i += kLanes) {
          const P v = op(ei::ploadu<P>(x + i), ei::ploadu<P>(y + i));
          const P m = kMax ? ei::pmax(b, v) : ei::pmin(b, v);  // b where v is NaN or equal to it
          ei::pstoreu(o + i, ei::pselect(ei::pcmp_eq(v, v), m, v));
        }
      } else {
        for (; i + kLanes <= a.n; i += kLanes) {
          const P v = op(ei::ploadu<P>(x + i), ei::ploadu<P>(y + i));
          ei::pstoreu(o + i, kOpFirst ? packet_max_min<kMax>(v, b) : packet_max_min<kMax>(b, v));
        }
      }
    }
    for (; i < a.n; ++i) o[i] = pick(op(x[i], y[i]), bound);
  } else {
    if constexpr (kLanes > 1) {
      for (; i + kLanes <= a.n; i += kLanes) {
        const P v = op(ei::ploadu<P>(x + i), ei::ploadu<P>(y + i)), w = ei::ploadu<P>(z + i);
        ei::pstoreu(o + i, kOpFirst ? packet_max_min<kMax>(v, w) : packet_max_min<kMax>(w, v));
      }
    }
    for (; i < a.n; ++i) o[i] = pick(op(x[i], y[i]), z[i]);
  }
}

template <class T, class F>
inline void compare_with(const TileArgs& a, F key) {
  const T* x = static_cast<const T*>(a.in[0]);
  const T* y = static_cast<const T*>(a.in[1]);
  bool* o = static_cast<bool*>(a.out);
  switch (a.direction) {
    case ComparisonDirection::kEq: for (std::int64_t i = 0; i < a.n; ++i) o[i] = key(x[i]) == key(y[i]); break;
    case ComparisonDirection::kNe: for (std::int64_t i = 0; i < a.n; ++i) o[i] = key(x[i]) != key(y[i]); break;
    case ComparisonDirection::kGe: for (std::int64_t i = 0; i < a.n; ++i) o[i] = key(x[i]) >= key(y[i]); break;
    case ComparisonDirection::kGt: for (std::int64_t i = 0; i < a.n; ++i) o[i] = key(x[i]) > key(y[i]); break;
    case ComparisonDirection::kLe: for (std::int64_t i = 0; i < a.n; ++i) o[i] = key(x[i]) <= key(y[i]); break;
    case ComparisonDirection::kLt: for (std::int64_t i = 0; i < a.n; ++i) o[i] = key(x[i]) < key(y[i]); break;
  }
}

template <class T>
void compare(const TileArgs& a) {
  if constexpr (kIsComplex<T>) {
    const T* x = static_cast<const T*>(a.in[0]);
    const T* y = static_cast<const T*>(a.in[1]);
    bool* o = static_cast<bool*>(a.out);
    const bool eq = a.direction == ComparisonDirection::kEq;
    for (std::int64_t i = 0; i < a.n; ++i) o[i] = (x[i] == y[i]) == eq;
  } else if constexpr (kIsFloat<T>) {
    if (a.comparison == ComparisonType::kTotalOrder) compare_with<T>(a, [](T v) { return total_order_key(v); });
    else compare_with<T>(a, [](T v) { return v; });
  } else if constexpr (std::is_same_v<T, bool>) {
    compare_with<T>(a, [](bool v) { return static_cast<unsigned>(v); });
  } else if (a.comparison == ComparisonType::kUnsigned) {
    compare_with<T>(a, [](T v) { return static_cast<Unsigned<T>>(v); });
  } else {
    compare_with<T>(a, [](T v) { return static_cast<std::make_signed_t<T>>(v); });
  }
}

/// A CHLO op's tile: F in double (complex<double> for complex T), rounded once to T, as the
/// reference computes it.
template <class T, auto F>
void chlo_tile(const TileArgs& a) {
  if constexpr (kIsComplex<T>)
    map1<T, T>(a, [](T z) { return special::in_complex_double<F, T>(z); });
  else
    map1<T, T>(a, [](T x) { return special::in_double<F, T>(x); });
}

/// The tile of an inverse trigonometric or hyperbolic op (acosh, asin, asinh, atan, atanh)
/// on real or complex T, or null for any other op.
template <class T>
TileFn inverse_trig_kernel(OpCode op) {
  using W = std::conditional_t<kIsComplex<T>, std::complex<double>, double>;
  using F = W (*)(W);
  switch (op) {
    case OpCode::kAcosh: return &chlo_tile<T, static_cast<F>(&special::acosh)>;
    case OpCode::kAsin: return &chlo_tile<T, static_cast<F>(&special::asin)>;
    case OpCode::kAsinh: return &chlo_tile<T, static_cast<F>(&special::asinh)>;
    case OpCode::kAtan: return &chlo_tile<T, static_cast<F>(&special::atan)>;
    case OpCode::kAtanh: return &chlo_tile<T, static_cast<F>(&special::atanh)>;
    default: return nullptr;
  }
}

/// The kernel of a unary op on operand type T, or null if the op does not take T.
template <class T>
TileFn unary(OpCode op) {
  using R = typename RealOf<T>::type;
  if constexpr (kIsFloat<T>) {
    switch (op) {
      case OpCode::kAbs: return [](const TileArgs& a) { ArrayMap<T>(static_cast<T*>(a.out), a.n) = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n).abs(); };
      case OpCode::kNegate: return &negate_tile<T>;
      case OpCode::kSign: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return float_sign(x); }); };
      case OpCode::kExponential: return &exp_tile<T>;
      case OpCode::kExponentialMinusOne: return [](const TileArgs& a) { ArrayMap<T>(static_cast<T*>(a.out), a.n) = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n).expm1(); };
      case OpCode::kLog: return [](const TileArgs& a) {
        vector_with_edges<T>(a, [](auto x) { return x.log(); }, [](T x) { return normal_positive(x); }, [](T x) { return std::log(x); });
      };
      case OpCode::kLogPlusOne: return [](const TileArgs& a) { ArrayMap<T>(static_cast<T*>(a.out), a.n) = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n).log1p(); };
      case OpCode::kSqrt: return &sqrt_tile<T, false>;
      case OpCode::kRsqrt: return &sqrt_tile<T, true>;
      case OpCode::kCbrt: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::cbrt(x); }); };
      case OpCode::kTanh: return [](const TileArgs& a) { ArrayMap<T>(static_cast<T*>(a.out), a.n) = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n).tanh(); };
      case OpCode::kLogistic: return &logistic_tile<T>;
      case OpCode::kSine: return [](const TileArgs& a) { ArrayMap<T>(static_cast<T*>(a.out), a.n) = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n).sin(); };
      case OpCode::kCosine: return [](const TileArgs& a) { ArrayMap<T>(static_cast<T*>(a.out), a.n) = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n).cos(); };
      case OpCode::kTan: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::tan(x); }); };
      case OpCode::kFloor: return &floor_ceil_tile<T, false>;
      case OpCode::kCeil: return &floor_ceil_tile<T, true>;
      case OpCode::kRoundNearestAfz: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::round(x); }); };
      case OpCode::kRoundNearestEven: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::nearbyint(x); }); };
      case OpCode::kIsFinite: return [](const TileArgs& a) { map1<bool, T>(a, [](T x) { return std::isfinite(x); }); };
      case OpCode::kReal: return [](const TileArgs& a) { std::memcpy(a.out, a.in[0], static_cast<std::size_t>(a.n) * sizeof(T)); };
      case OpCode::kImag: return [](const TileArgs& a) { map1<T, T>(a, [](T) { return T(0); }); };
      case OpCode::kCosh: return [](const TileArgs& a) { map1<T, T>(a, &special::cosh<T>); };
      case OpCode::kSinh: return [](const TileArgs& a) { map1<T, T>(a, &special::sinh<T>); };
      case OpCode::kErf: return &chlo_tile<T, special::erf>;
      case OpCode::kErfc: return &chlo_tile<T, special::erfc>;
      case OpCode::kErfInv: return &chlo_tile<T, special::erf_inv>;
      case OpCode::kLgamma: return &chlo_tile<T, special::lgamma>;
      case OpCode::kDigamma: return &chlo_tile<T, special::digamma>;
      case OpCode::kBesselI1e: return &chlo_tile<T, special::bessel_i1e>;
      default: return inverse_trig_kernel<T>(op);
    }
  } else if constexpr (kIsComplex<T>) {
    switch (op) {
      case OpCode::kAbs: return [](const TileArgs& a) { map1<R, T>(a, [](T x) { return std::abs(x); }); };
      case OpCode::kNegate: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return -x; }); };
      case OpCode::kSign: return [](const TileArgs& a) {
        map1<T, T>(a, [](T x) {
          if (std::isnan(x.real()) || std::isnan(x.imag())) return T(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN());
          return x == T(0) ? T(0) : x / std::abs(x);  // the spec: (+0, +0) for either signed zero
        });
      };
      case OpCode::kExponential: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::exp(x); }); };
      case OpCode::kExponentialMinusOne: return [](const TileArgs& a) {
        // exp(a + ib) - 1 = expm1(a) cos(b) - 2 sin^2(b/2) + i exp(a) sin(b): no cancellation near 0.
        map1<T, T>(a, [](T x) {
          if (std::abs(x.real()) >= R(1) || std::abs(x.imag()) >= R(1)) return std::exp(x) - T(1);
          const R h = std::sin(x.imag() / 2);
          return T(std::expm1(x.real()) * std::cos(x.imag()) - 2 * h * h, std::exp(x.real()) * std::sin(x.imag()));
        });
      };
      case OpCode::kLog: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::log(x); }); };
      case OpCode::kLogPlusOne: return [](const TileArgs& a) {
        // |1 + z| and arg(1 + z) without forming 1 + z when z is small.
        map1<T, T>(a, [](T x) {
          if (std::abs(x.real()) >= R(0.5) || std::abs(x.imag()) >= R(0.5)) return std::log(x + T(1));
          const R re = x.real(), im = x.imag();
          return T(std::log1p(re * (2 + re) + im * im) / 2, std::atan2(im, 1 + re));
        });
      };
      case OpCode::kSqrt: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::sqrt(x); }); };
      case OpCode::kRsqrt: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return T(1) / std::sqrt(x); }); };
      case OpCode::kCbrt: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::pow(x, R(1) / R(3)); }); };
      case OpCode::kTanh: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::tanh(x); }); };
      case OpCode::kLogistic: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return T(1) / (T(1) + std::exp(-x)); }); };
      case OpCode::kSine: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::sin(x); }); };
      case OpCode::kCosine: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::cos(x); }); };
      case OpCode::kTan: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return std::tan(x); }); };
      case OpCode::kReal: return [](const TileArgs& a) { map1<R, T>(a, [](T x) { return x.real(); }); };
      case OpCode::kImag: return [](const TileArgs& a) { map1<R, T>(a, [](T x) { return x.imag(); }); };
      case OpCode::kCosh: return &chlo_tile<T, static_cast<std::complex<double> (*)(std::complex<double>)>(&special::cosh)>;
      case OpCode::kSinh: return &chlo_tile<T, static_cast<std::complex<double> (*)(std::complex<double>)>(&special::sinh)>;
      default: return inverse_trig_kernel<T>(op);
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    if (op == OpCode::kNot) return [](const TileArgs& a) { map1<bool, bool>(a, [](bool x) { return !x; }); };
    return nullptr;
  } else {
    switch (op) {
      case OpCode::kAbs:
        if constexpr (std::is_signed_v<T>)
          return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return x < 0 ? wrap_sub<T>(0, x) : x; }); };
        return nullptr;
      case OpCode::kNegate: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return wrap_sub<T>(0, x); }); };
      case OpCode::kSign:
        if constexpr (std::is_signed_v<T>)
          return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return static_cast<T>((x > 0) - (x < 0)); }); };
        return nullptr;
      case OpCode::kNot: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return static_cast<T>(~x); }); };
      case OpCode::kPopcnt: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return static_cast<T>(std::popcount(static_cast<Unsigned<T>>(x))); }); };
      case OpCode::kCountLeadingZeros: return [](const TileArgs& a) { map1<T, T>(a, [](T x) { return static_cast<T>(std::countl_zero(static_cast<Unsigned<T>>(x))); }); };
      default: return nullptr;
    }
  }
}

/// The kernel of a binary op on operand type T, or null if the op does not take T.
template <class T>
TileFn binary(OpCode op) {
#define PJRT_LITE_EIGEN_BINARY(expr)                                              \
  [](const TileArgs& a) {                                                         \
    auto x = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n);               \
    auto y = ConstArrayMap<T>(static_cast<const T*>(a.in[1]), a.n);               \
    ArrayMap<T>(static_cast<T*>(a.out), a.n) = (expr);                            \
  }
  if constexpr (kIsFloat<T>) {
    switch (op) {
      case OpCode::kAdd: return PJRT_LITE_EIGEN_BINARY(x + y);
      case OpCode::kSubtract: return PJRT_LITE_EIGEN_BINARY(x - y);
      case OpCode::kMultiply: return PJRT_LITE_EIGEN_BINARY(x * y);
      case OpCode::kDivide: return PJRT_LITE_EIGEN_BINARY(x / y);
      case OpCode::kRemainder: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return std::fmod(x, y); }); };
      case OpCode::kPower: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return std::pow(x, y); }); };
      case OpCode::kMaximum: return &max_min_tile<T, true>;
      case OpCode::kMinimum: return &max_min_tile<T, false>;
      case OpCode::kAtan2: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return std::atan2(x, y); }); };
      case OpCode::kNextAfter: return [](const TileArgs& a) { map2<T, T>(a, special::next_after<T>); };
      case OpCode::kComplex:
        return [](const TileArgs& a) { map2<std::complex<T>, T>(a, [](T x, T y) { return std::complex<T>(x, y); }); };
      default: return nullptr;
    }
  } else if constexpr (kIsComplex<T>) {
    switch (op) {
      case OpCode::kAdd: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return x + y; }); };
      case OpCode::kSubtract: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return x - y; }); };
      case OpCode::kMultiply: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return x * y; }); };
      case OpCode::kDivide: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return x / y; }); };
      case OpCode::kPower: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return std::pow(x, y); }); };
      case OpCode::kMaximum: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return complex_less(x, y) ? y : x; }); };
      case OpCode::kMinimum: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return complex_less(y, x) ? y : x; }); };
      case OpCode::kAtan2:
        // atan2(y, x) = -i * log((x + i y) / sqrt(x^2 + y^2)), the spec's definition; -i is
        // (-0, -1), whose zero gives the result's zero parts their signs.
        return [](const TileArgs& a) {
          map2<T, T>(a, [](T y, T x) { return -T(0, 1) * std::log((x + T(0, 1) * y) / std::sqrt(x * x + y * y)); });
        };
      default: return nullptr;
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case OpCode::kAnd: return [](const TileArgs& a) { map2<bool, bool>(a, [](bool x, bool y) { return x && y; }); };
      case OpCode::kOr: return [](const TileArgs& a) { map2<bool, bool>(a, [](bool x, bool y) { return x || y; }); };
      case OpCode::kXor: return [](const TileArgs& a) { map2<bool, bool>(a, [](bool x, bool y) { return x != y; }); };
      case OpCode::kMaximum: return [](const TileArgs& a) { map2<bool, bool>(a, [](bool x, bool y) { return x || y; }); };
      case OpCode::kMinimum: return [](const TileArgs& a) { map2<bool, bool>(a, [](bool x, bool y) { return x && y; }); };
      case OpCode::kAdd: return [](const TileArgs& a) { map2<bool, bool>(a, [](bool x, bool y) { return x || y; }); };
      case OpCode::kMultiply: return [](const TileArgs& a) { map2<bool, bool>(a, [](bool x, bool y) { return x && y; }); };
      default: return nullptr;
    }
  } else {
    switch (op) {
      case OpCode::kAdd: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return wrap_add(x, y); }); };
      case OpCode::kSubtract: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return wrap_sub(x, y); }); };
      case OpCode::kMultiply: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return wrap_mul(x, y); }); };
      case OpCode::kDivide: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return int_div(x, y); }); };
      case OpCode::kRemainder: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return int_rem(x, y); }); };
      case OpCode::kPower: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return int_pow(x, y); }); };
      case OpCode::kMaximum: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return x < y ? y : x; }); };
      case OpCode::kMinimum: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return y < x ? y : x; }); };
      case OpCode::kAnd: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return static_cast<T>(x & y); }); };
      case OpCode::kOr: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return static_cast<T>(x | y); }); };
      case OpCode::kXor: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return static_cast<T>(x ^ y); }); };
      case OpCode::kShiftLeft: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return shift_left(x, y); }); };
      case OpCode::kShiftRightArithmetic: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return shift_right_arithmetic(x, y); }); };
      case OpCode::kShiftRightLogical: return [](const TileArgs& a) { map2<T, T>(a, [](T x, T y) { return shift_right_logical(x, y); }); };
      default: return nullptr;
    }
  }
#undef PJRT_LITE_EIGEN_BINARY
}

/// The multiply-add superinstructions that TileProgram makes of a product feeding a sum:
/// in[0] * in[1] + in[2], in[0] * in[1] - in[2] and in[2] - in[0] * in[1], in one pass over
/// the tile. The product is rounded before the sum, as two separate ops would round it.
enum class MulAddForm : std::uint8_t { kAdd, kSubtractAfter, kSubtractFrom };

template <class T, MulAddForm F>
void multiply_add(const TileArgs& a) {
  auto x = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n);
  auto y = ConstArrayMap<T>(static_cast<const T*>(a.in[1]), a.n);
  auto z = ConstArrayMap<T>(static_cast<const T*>(a.in[2]), a.n);
  if constexpr (F == MulAddForm::kAdd) ArrayMap<T>(static_cast<T*>(a.out), a.n) = x * y + z;
  else if constexpr (F == MulAddForm::kSubtractAfter) ArrayMap<T>(static_cast<T*>(a.out), a.n) = x * y - z;
  else ArrayMap<T>(static_cast<T*>(a.out), a.n) = z - x * y;
}

/// convert to or from a narrow type (s4, f8e4m3fn, ...; in a body the CPU widened, which
/// rounds each step's result through its narrow type), by core's converters: the two types
/// ride in the arguments.
inline void convert_narrow(const TileArgs& a) { convert_elements(a.in[0], a.from, a.out, a.to, a.n); }

template <class T>
void select(const TileArgs& a) {
  const bool* p = static_cast<const bool*>(a.in[0]);
  const T* x = static_cast<const T*>(a.in[1]);
  const T* y = static_cast<const T*>(a.in[2]);
  T* o = static_cast<T*>(a.out);
  for (std::int64_t i = 0; i < a.n; ++i) o[i] = p[i] ? x[i] : y[i];
}

template <class T>
void clamp(const TileArgs& a) {
  const T* lo = static_cast<const T*>(a.in[0]);
  const T* x = static_cast<const T*>(a.in[1]);
  const T* hi = static_cast<const T*>(a.in[2]);
  T* o = static_cast<T*>(a.out);
  std::int64_t i = 0;
  if constexpr (kIsFloat<T>) {
    namespace ei = Eigen::internal;
    using P = typename ei::packet_traits<T>::type;
    constexpr std::int64_t kLanes = ei::packet_traits<T>::size;
    if constexpr (kLanes > 1)
      for (; i + kLanes <= a.n; i += kLanes)
        ei::pstoreu(o + i, packet_max_min<false>(packet_max_min<true>(ei::ploadu<P>(x + i), ei::ploadu<P>(lo + i)),
                                                 ei::ploadu<P>(hi + i)));
  }
  for (; i < a.n; ++i) {
    if constexpr (kIsFloat<T>) o[i] = float_min(float_max(x[i], lo[i]), hi[i]);
    else if constexpr (kIsComplex<T>) {
      T v = complex_less(x[i], lo[i]) ? lo[i] : x[i];
      o[i] = complex_less(hi[i], v) ? hi[i] : v;
    } else {
      T v = x[i] < lo[i] ? lo[i] : x[i];
      o[i] = hi[i] < v ? hi[i] : v;
    }
  }
}

template <class T>
void reduce_precision(const TileArgs& a) {
  const T* x = static_cast<const T*>(a.in[0]);
  T* o = static_cast<T*>(a.out);
  for (std::int64_t i = 0; i < a.n; ++i) o[i] = special::reduce_precision<T>(x[i], a.exponent_bits, a.mantissa_bits);
}

template <class From, class To>
void convert(const TileArgs& a) {
  const From* x = static_cast<const From*>(a.in[0]);
  To* o = static_cast<To*>(a.out);
  if constexpr (kIsFloat<From> && kIsInt<To> && sizeof(To) <= 4) {
    // convert_element's float-to-integer rule (NaN is 0, saturate, truncate toward zero) as
    // selects, exact in double, over blocks of local arrays, which GCC vectorizes where it
    // would not the same loop over the tile (an output that may alias the input, and it leaves
    // a select on a widened float as a branch).
    using Via = std::conditional_t<std::is_same_v<To, std::uint32_t>, std::int64_t, std::int32_t>;
    constexpr auto lo = static_cast<double>(std::numeric_limits<To>::lowest());
    constexpr auto hi = static_cast<double>(std::numeric_limits<To>::max());
    constexpr std::int64_t kBlock = 64;
    std::int64_t i = 0;
    for (; i + kBlock <= a.n; i += kBlock) {
      double wide[kBlock];
      To narrow[kBlock];
      for (std::int64_t j = 0; j < kBlock; ++j) wide[j] = static_cast<double>(x[i + j]);
      for (std::int64_t j = 0; j < kBlock; ++j) {
        double d = wide[j];
        d = d == d ? d : 0.0;
        d = d < lo ? lo : d;
        d = d > hi ? hi : d;
        narrow[j] = static_cast<To>(static_cast<Via>(d));
      }
      std::memcpy(o + i, narrow, sizeof(narrow));
    }
    for (; i < a.n; ++i) o[i] = convert_element<To>(x[i]);
  } else {
    for (std::int64_t i = 0; i < a.n; ++i) o[i] = convert_element<To>(x[i]);
  }
}

/// The maximum (kMax) or minimum of x[0, n), n > 0, f32 or f64, in four independent chains of
/// packets, and whether any element is a NaN. The packet max/min is the instruction's, which
/// drops a NaN operand and orders -0 and +0 either way, so NaNs are caught by a compare of
/// each element with itself in the same pass, and a zero result is the caller's to redo; any
/// other result is an element's bits, whatever the order. Eigen's NaN-propagating maxCoeff
/// runs one chain with a select per packet: over a softmax's rows of 1024 f32 it took two
/// thirds as long as the exp (docs/DECISIONS.md, "A row's maximum runs in four chains").
template <class T, bool kMax>
T extremum(const T* x, std::int64_t n, bool& has_nan) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  constexpr std::int64_t kLanes = ei::packet_traits<T>::size;
  const auto pick = [](const auto& a, const auto& b) { return kMax ? ei::pmax(a, b) : ei::pmin(a, b); };
  std::int64_t i = 0;
  T m = x[0];
  bool nan = false;
  if constexpr (kLanes > 1) {
    if (n >= 4 * kLanes) {
      P m0 = ei::ploadu<P>(x), m1 = ei::ploadu<P>(x + kLanes), m2 = ei::ploadu<P>(x + 2 * kLanes),
        m3 = ei::ploadu<P>(x + 3 * kLanes);
      P bad = ei::por(ei::por(ei::pcmp_lt_or_nan(m0, m0), ei::pcmp_lt_or_nan(m1, m1)),
                      ei::por(ei::pcmp_lt_or_nan(m2, m2), ei::pcmp_lt_or_nan(m3, m3)));
      for (i = 4 * kLanes; i + 4 * kLanes <= n; i += 4 * kLanes) {
        const P v0 = ei::ploadu<P>(x + i), v1 = ei::ploadu<P>(x + i + kLanes),
                v2 = ei::ploadu<P>(x + i + 2 * kLanes), v3 = ei::ploadu<P>(x + i + 3 * kLanes);
        bad = ei::por(bad, ei::por(ei::por(ei::pcmp_lt_or_nan(v0, v0), ei::pcmp_lt_or_nan(v1, v1)),
                                   ei::por(ei::pcmp_lt_or_nan(v2, v2), ei::pcmp_lt_or_nan(v3, v3))));
        m0 = pick(m0, v0);
        m1 = pick(m1, v1);
        m2 = pick(m2, v2);
        m3 = pick(m3, v3);
      }
      for (; i + kLanes <= n; i += kLanes) {
        const P v = ei::ploadu<P>(x + i);
        bad = ei::por(bad, ei::pcmp_lt_or_nan(v, v));
        m0 = pick(m0, v);
      }
      const P all = pick(pick(m0, m1), pick(m2, m3));
      m = kMax ? ei::predux_max(all) : ei::predux_min(all);
      nan = ei::predux_any(bad);
    }
  }
  for (; i < n; ++i) {
    nan = nan || x[i] != x[i];
    m = kMax ? std::max(m, x[i]) : std::min(m, x[i]);
  }
  has_nan = nan;
  return m;
}

/// acc = op(acc, x[0], ..., x[n-1]) for the one element `a.out` and the tile `a.in[0]`.
/// Float sums and products combine the tile in Eigen's vectorized order; max and min give
/// what the element-by-element fold gives (NaN-propagating, +0 above -0) and integers wrap,
/// so for them the order does not show.
template <class T, OpCode Op>
void accumulate(const TileArgs& a) {
  if (a.n == 0) return;
  const T* x = static_cast<const T*>(a.in[0]);
  T acc;
  std::memcpy(&acc, a.out, sizeof(T));
  if constexpr (kIsFloat<T>) {
    const ConstArrayMap<T> v(x, a.n);
    if constexpr (Op == OpCode::kAdd) {
      acc = acc + v.sum();
    } else if constexpr (Op == OpCode::kMultiply) {
      acc = acc * v.prod();
    } else {
      // The vectorized extremum is the fold's unless a NaN or a zero (whose sign the fold
      // picks) is involved; then fold element by element.
      bool has_nan = false;
      const T m = extremum<T, Op == OpCode::kMaximum>(x, a.n, has_nan);
      if (has_nan || m == T(0)) {
        for (std::int64_t i = 0; i < a.n; ++i) acc = Op == OpCode::kMaximum ? float_max(acc, x[i]) : float_min(acc, x[i]);
      } else {
        acc = Op == OpCode::kMaximum ? float_max(acc, m) : float_min(acc, m);
      }
    }
  } else {
    using U = Unsigned<T>;
    if constexpr (Op == OpCode::kAdd) {
      U s = 0;
      for (std::int64_t i = 0; i < a.n; ++i) s = static_cast<U>(s + static_cast<U>(x[i]));
      acc = wrap_add(acc, static_cast<T>(s));
    } else if constexpr (Op == OpCode::kMultiply) {
      for (std::int64_t i = 0; i < a.n; ++i) acc = wrap_mul(acc, x[i]);
    } else if constexpr (Op == OpCode::kMaximum) {
      for (std::int64_t i = 0; i < a.n; ++i) acc = std::max(acc, x[i]);
    } else {
      for (std::int64_t i = 0; i < a.n; ++i) acc = std::min(acc, x[i]);
    }
  }
  std::memcpy(a.out, &acc, sizeof(T));
}

/// acc += sum(x * y) for the one element `a.out` and the tiles `a.in[0]`, `a.in[1]` (f32,
/// f64): a product that only a sum reads, summed as it is made. Eigen sums the product
/// expression in the order it sums a tile holding it (packets from the first element, the
/// same two partial sums, the tail last; tiles start aligned), so the bits are the product
/// tile's and accumulate's.
template <class T>
void accumulate_products(const TileArgs& a) {
  if (a.n == 0) return;
  const ConstArrayMap<T> x(static_cast<const T*>(a.in[0]), a.n), y(static_cast<const T*>(a.in[1]), a.n);
  T acc;
  std::memcpy(&acc, a.out, sizeof(T));
  acc = acc + (x * y).sum();
  std::memcpy(a.out, &acc, sizeof(T));
}

}  // namespace ew

/// The kernel of acc += sum(x * y) (ew::accumulate_products) on f32 or f64, or null.
inline TileFn find_accumulate_products_kernel(DType t) {
  return ew::with_float_type(t, []<class T>() -> TileFn { return &ew::accumulate_products<T>; });
}

/// The kernel that folds a tile into an accumulator with `op` (add, multiply, maximum,
/// minimum) on f32, f64 and the integer types, or null for any other op or type.
inline TileFn find_accumulate_kernel(OpCode op, DType t) {
  if (!is_valid(t)) return nullptr;
  return visit_dtype(t, [&]<class T>(std::type_identity<T>) -> TileFn {
    if constexpr (ew::kIsFloat<T> || ew::kIsInt<T>) {
      switch (op) {
        case OpCode::kAdd: return &ew::accumulate<T, OpCode::kAdd>;
        case OpCode::kMultiply: return &ew::accumulate<T, OpCode::kMultiply>;
        case OpCode::kMaximum: return &ew::accumulate<T, OpCode::kMaximum>;
        case OpCode::kMinimum: return &ew::accumulate<T, OpCode::kMinimum>;
        default: return nullptr;
      }
    } else {
      return nullptr;
    }
  });
}

/// The multiply-add kernel of form `form` on f32 or f64, or null for any other type.
inline TileFn find_multiply_add_kernel(ew::MulAddForm form, DType t) {
  return ew::with_float_type(t, [&]<class T>() -> TileFn {
    switch (form) {
      case ew::MulAddForm::kAdd: return &ew::multiply_add<T, ew::MulAddForm::kAdd>;
      case ew::MulAddForm::kSubtractAfter: return &ew::multiply_add<T, ew::MulAddForm::kSubtractAfter>;
      case ew::MulAddForm::kSubtractFrom: return &ew::multiply_add<T, ew::MulAddForm::kSubtractFrom>;
    }
    return nullptr;
  });
}

/// The exp(-x) superinstruction for f32 and f64, or null for other types.
inline TileFn find_negated_exp_kernel(DType t) {
  return ew::with_float_type(t, []<class T>() -> TileFn { return &ew::exp_tile<T, true>; });
}

/// The kernel of exp(x - s) for a tile x and a scalar s (ew::exp_of_difference_tile) on f32
/// or f64, or null.
inline TileFn find_exp_of_difference_kernel(DType t) {
  return ew::with_float_type(t, []<class T>() -> TileFn { return &ew::exp_of_difference_tile<T>; });
}

namespace ew {

/// `e op s` for a tile (or a tile expression) e and a scalar s on the right: add, subtract,
/// multiply or divide, as scalar_operand_tile and every superinstruction holding such an op
/// compute it (one definition, so their bits agree).
template <OpCode kOp, class E, class T>
auto with_scalar(const E& e, T s) {
  if constexpr (kOp == OpCode::kAdd) return e + s;
  else if constexpr (kOp == OpCode::kSubtract) return e - s;
  else if constexpr (kOp == OpCode::kMultiply) return e * s;
  else return e / s;
}

/// x op s (kScalarRight) or s op x (kScalarLeft) for a tile x and the one value s at in[1]
/// (or in[0]): an op whose other operand is a broadcast scalar, without filling a tile with it.
enum class ScalarSide : std::uint8_t { kScalarLeft, kScalarRight };

template <class T, OpCode kOp, ScalarSide kSide>
void scalar_operand_tile(const TileArgs& a) {
  constexpr int kTile = kSide == ScalarSide::kScalarLeft ? 1 : 0;
  const auto x = ConstArrayMap<T>(static_cast<const T*>(a.in[kTile]), a.n);
  const T s = *static_cast<const T*>(a.in[1 - kTile]);
  auto out = ArrayMap<T>(static_cast<T*>(a.out), a.n);
  if constexpr (kSide == ScalarSide::kScalarLeft) {
    if constexpr (kOp == OpCode::kAdd) out = s + x;
    else if constexpr (kOp == OpCode::kMultiply) out = s * x;
    else if constexpr (kOp == OpCode::kSubtract) out = s - x;
    else out = s / x;
  } else {
    out = with_scalar<kOp>(x, s);
  }
}

/// (x op1 a) op2 b for a tile x and the scalars a at in[1] and b at in[2]: the
/// superinstruction TileProgram makes of two ops with a broadcast scalar each, the first
/// read only by the second (layer norm's (x - mean) * rstd). Each op rounds as it would
/// alone: bit for bit the two instructions, with one tile written and read less.
template <class T, OpCode kOp1, OpCode kOp2>
void scalar_pair_tile(const TileArgs& a) {
  const auto x = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n);
  const T s = *static_cast<const T*>(a.in[1]);
  const T t = *static_cast<const T*>(a.in[2]);
  ArrayMap<T>(static_cast<T*>(a.out), a.n) = with_scalar<kOp2>(with_scalar<kOp1>(x, s), t);
}

/// (x op s) * y (kScaledFirst) or y * (x op s) for tiles x (in[0]) and y (in[2]) and the
/// scalar s at in[1]: a product whose one factor is an op with a broadcast scalar that only
/// the product reads (RMS norm's (x * rstd) * gamma), bit for bit the two instructions.
template <class T, OpCode kOp, bool kScaledFirst>
void scaled_product_tile(const TileArgs& a) {
  const auto x = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n);
  const auto y = ConstArrayMap<T>(static_cast<const T*>(a.in[2]), a.n);
  const T s = *static_cast<const T*>(a.in[1]);
  auto out = ArrayMap<T>(static_cast<T*>(a.out), a.n);
  if constexpr (kScaledFirst) out = with_scalar<kOp>(x, s) * y;
  else out = y * with_scalar<kOp>(x, s);
}

/// acc += sum((x - s) * (x - s)) for the one element `a.out`, the tile x at in[0] and the
/// scalar s at in[1]: a variance's sum of squared deviations, with no tile of deviations
/// written. Eigen sums the expression from its first element, as accumulate_products sums a
/// (tile-aligned) tile of the deviations: the same bits.
template <class T>
void accumulate_squared_differences(const TileArgs& a) {
  if (a.n == 0) return;
  const auto x = ConstArrayMap<T>(static_cast<const T*>(a.in[0]), a.n);
  const T s = *static_cast<const T*>(a.in[1]);
  const auto d = x - s;
  T acc;
  std::memcpy(&acc, a.out, sizeof(T));
  acc = acc + (d * d).sum();
  std::memcpy(a.out, &acc, sizeof(T));
}

/// `pick.template operator()<kOp>()` for add, subtract, multiply or divide, or null.
template <class Pick>
TileFn with_scalar_op(OpCode op, Pick pick) {
  switch (op) {
    case OpCode::kAdd: return pick.template operator()<OpCode::kAdd>();
    case OpCode::kSubtract: return pick.template operator()<OpCode::kSubtract>();
    case OpCode::kMultiply: return pick.template operator()<OpCode::kMultiply>();
    case OpCode::kDivide: return pick.template operator()<OpCode::kDivide>();
    default: return nullptr;
  }
}

}  // namespace ew

/// The kernel of max or min (`max`) of x op y and z, x op y first when `op_first` and z one
/// scalar when `scalar_bound` (ew::bounded_op_tile), for add, subtract or multiply on f32 or
/// f64, or null.
inline TileFn find_bounded_op_kernel(OpCode op, bool max, bool op_first, bool scalar_bound, DType t) {
  return ew::with_float_type(t, [&]<class T>() -> TileFn {
    auto pick = [&]<OpCode kOp>() -> TileFn {
      auto with = [&]<bool kMax>() -> TileFn {
        if (scalar_bound) return op_first ? &ew::bounded_op_tile<T, kOp, kMax, true, true> : &ew::bounded_op_tile<T, kOp, kMax, false, true>;
        return op_first ? &ew::bounded_op_tile<T, kOp, kMax, true> : &ew::bounded_op_tile<T, kOp, kMax, false>;
      };
      return max ? with.template operator()<true>() : with.template operator()<false>();
    };
    switch (op) {
      case OpCode::kAdd: return pick.template operator()<OpCode::kAdd>();
      case OpCode::kSubtract: return pick.template operator()<OpCode::kSubtract>();
      case OpCode::kMultiply: return pick.template operator()<OpCode::kMultiply>();
      default: return nullptr;
    }
  });
}

/// The kernel of (x first a) second b (ew::scalar_pair_tile) on f32 or f64, or null.
inline TileFn find_scalar_pair_kernel(OpCode first, OpCode second, DType t) {
  return ew::with_float_type(t, [&]<class T>() {
    return ew::with_scalar_op(first, [&]<OpCode kOp1>() {
      return ew::with_scalar_op(second, [&]<OpCode kOp2>() -> TileFn { return &ew::scalar_pair_tile<T, kOp1, kOp2>; });
    });
  });
}

/// The kernel of (x op s) * y or y * (x op s) (ew::scaled_product_tile) on f32 or f64, or null.
inline TileFn find_scaled_product_kernel(OpCode op, bool scaled_first, DType t) {
  return ew::with_float_type(t, [&]<class T>() {
    return ew::with_scalar_op(op, [&]<OpCode kOp>() -> TileFn {
      return scaled_first ? &ew::scaled_product_tile<T, kOp, true> : &ew::scaled_product_tile<T, kOp, false>;
    });
  });
}

/// The kernel of acc += sum((x - s)^2) (ew::accumulate_squared_differences) on f32 or f64, or null.
inline TileFn find_accumulate_squared_differences_kernel(DType t) {
  return ew::with_float_type(t, []<class T>() -> TileFn { return &ew::accumulate_squared_differences<T>; });
}

/// The kernel of add, subtract, multiply or divide on f32/f64 whose operand `side` is one
/// scalar, or null for other ops and types. It computes what the tile kernel computes on a
/// tile filled with the scalar, each element rounded once.
inline TileFn find_scalar_operand_kernel(OpCode op, DType t, ew::ScalarSide side) {
  return ew::with_float_type(t, [&]<class T>() {
    return ew::with_scalar_op(op, [&]<OpCode kOp>() -> TileFn {
      return side == ew::ScalarSide::kScalarLeft ? &ew::scalar_operand_tile<T, kOp, ew::ScalarSide::kScalarLeft>
                                                  : &ew::scalar_operand_tile<T, kOp, ew::ScalarSide::kScalarRight>;
    });
  });
}

/// True for the element types that compute through f32 (each op widened, then rounded back).
constexpr bool computes_in_f32(DType t) { return t == DType::kF16 || t == DType::kBF16; }

/// The tile kernel for element-wise `op` whose operands are of type `operand` (for convert:
/// from `operand` to `result`), or null when the CPU has none. f16/bf16 have kernels only for
/// convert, select and the ops that merely move bits; everything else widens to f32.
inline TileFn find_tile_kernel(OpCode op, DType operand, DType result) {
  if (!is_valid(operand)) return nullptr;
  if (op == OpCode::kConvert && (is_narrow(operand) || is_narrow(result))) return &ew::convert_narrow;
  if (op == OpCode::kConvert)
    return visit_dtype(operand, [&]<class F>(std::type_identity<F>) {
      return visit_dtype(result, [&]<class T>(std::type_identity<T>) -> TileFn { return &ew::convert<F, T>; });
    });
  if (op == OpCode::kSelect)
    return visit_dtype(operand, [&]<class T>(std::type_identity<T>) -> TileFn { return &ew::select<T>; });
  return visit_dtype(operand, [&]<class T>(std::type_identity<T>) -> TileFn {
    if constexpr (is_float_v<T>) {
      // reduce_precision works on each float type's own bits.
      if (op == OpCode::kReducePrecision) return &ew::reduce_precision<T>;
    }
    if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
      // next_after steps in the element's own type; every other op widens to f32 around it.
      if (op == OpCode::kNextAfter) return [](const TileArgs& a) { ew::map2<T, T>(a, special::next_after<T>); };
      return nullptr;
    } else if (op == OpCode::kCompare) return &ew::compare<T>;
    else if (op == OpCode::kClamp) return &ew::clamp<T>;
    else if (is_unary(op)) return ew::unary<T>(op);
    else if (is_binary(op)) return ew::binary<T>(op);
    else return nullptr;
  });
}

}  // namespace pjrt_lite::cpu::detail
