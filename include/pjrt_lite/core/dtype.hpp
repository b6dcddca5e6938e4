#pragma once
// Element types: names, sizes, the C++ type behind each, and element conversion with
// StableHLO's `convert` semantics. The narrow types (2- and 4-bit integers, f8, f6, f4) have
// no C++ type: each element is one byte of storage (core/narrow_float.hpp), backends compute
// on them through a wider type, and visit_dtype does not enumerate them.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include <Eigen/Core>  // Eigen::half, Eigen::bfloat16: the same types the kernels compute in.

#include "pjrt_lite/core/narrow_float.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

using f16 = Eigen::half;
using bf16 = Eigen::bfloat16;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

/// An element type. kInvalid is what a default-constructed Shape holds. The types from kS2 on
/// are narrow: one element per byte of storage, in the byte's low bits (a signed 2- or 4-bit
/// integer sign-extended through the byte, as ml_dtypes stores it), with the semantics of
/// StableHLO's i2/i4/ui2/ui4 and of ml_dtypes' float8/float6/float4 types.
enum class DType : std::uint8_t {
  kInvalid = 0,
  kPred,
  kS8,
  kS16,
  kS32,
  kS64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kC64,
  kC128,
  kS2,
  kS4,
  kU2,
  kU4,
  kF8E3M4,
  kF8E4M3,
  kF8E4M3FN,
  kF8E4M3FNUZ,
  kF8E4M3B11FNUZ,
  kF8E5M2,
  kF8E5M2FNUZ,
  kF8E8M0FNU,
  kF6E2M3FN,
  kF6E3M2FN,
  kF4E2M1FN,
  /// StableHLO's `!stablehlo.token`: orders side effects, holds no data. Only rank 0; zero
  /// bytes; no C++ type (visit_dtype refuses it), and no op but the token ops, control flow
  /// and calls takes one.
  kToken,
};

/// Every dtype with a C++ element type (what visit_dtype enumerates), in declaration order.
inline constexpr std::array<DType, 15> kAllDTypes = {
    DType::kPred, DType::kS8,  DType::kS16,  DType::kS32, DType::kS64,
    DType::kU8,   DType::kU16, DType::kU32,  DType::kU64, DType::kF16,
    DType::kBF16, DType::kF32, DType::kF64,  DType::kC64, DType::kC128};

/// The narrow dtypes, in declaration order: the 2- and 4-bit integers, then the f8, f6 and
/// f4 floats.
inline constexpr std::array<DType, 15> kNarrowDTypes = {
    DType::kS2,          DType::kS4,          DType::kU2,          DType::kU4,
    DType::kF8E3M4,      DType::kF8E4M3,      DType::kF8E4M3FN,    DType::kF8E4M3FNUZ,
    DType::kF8E4M3B11FNUZ, DType::kF8E5M2,    DType::kF8E5M2FNUZ,  DType::kF8E8M0FNU,
    DType::kF6E2M3FN,    DType::kF6E3M2FN,    DType::kF4E2M1FN};

constexpr bool is_valid(DType t) { return t >= DType::kPred && t <= DType::kToken; }
constexpr bool is_token(DType t) { return t == DType::kToken; }
/// One of kNarrowDTypes: no C++ type; computed on through wide_dtype().
constexpr bool is_narrow(DType t) { return t >= DType::kS2 && t <= DType::kF4E2M1FN; }
constexpr bool is_narrow_integral(DType t) { return t >= DType::kS2 && t <= DType::kU4; }
constexpr bool is_narrow_floating(DType t) { return t >= DType::kF8E3M4 && t <= DType::kF4E2M1FN; }
constexpr bool is_pred(DType t) { return t == DType::kPred; }
constexpr bool is_signed_integral(DType t) {
  return (t >= DType::kS8 && t <= DType::kS64) || t == DType::kS2 || t == DType::kS4;
}
constexpr bool is_unsigned_integral(DType t) {
  return (t >= DType::kU8 && t <= DType::kU64) || t == DType::kU2 || t == DType::kU4;
}
/// Signed or unsigned integers; pred is not one.
constexpr bool is_integral(DType t) { return is_signed_integral(t) || is_unsigned_integral(t); }
constexpr bool is_floating(DType t) {
  return (t >= DType::kF16 && t <= DType::kF64) || is_narrow_floating(t);
}
constexpr bool is_complex(DType t) { return t == DType::kC64 || t == DType::kC128; }
/// Floating or complex: the types with NaN, infinities and derivatives.
constexpr bool is_inexact(DType t) { return is_floating(t) || is_complex(t); }

/// The short XLA name: "pred", "s32", "bf16", "c64", "s4", "f8e4m3fn", ...; "invalid" for
/// kInvalid.
constexpr std::string_view dtype_name(DType t) {
  constexpr std::array<std::string_view, 32> names = {
      "invalid",  "pred",     "s8",         "s16",           "s32",    "s64",
      "u8",       "u16",      "u32",        "u64",           "f16",    "bf16",
      "f32",      "f64",      "c64",        "c128",          "s2",     "s4",
      "u2",       "u4",       "f8e3m4",     "f8e4m3",        "f8e4m3fn", "f8e4m3fnuz",
      "f8e4m3b11fnuz", "f8e5m2", "f8e5m2fnuz", "f8e8m0fnu",  "f6e2m3fn", "f6e3m2fn",
      "f4e2m1fn", "token"};
  auto i = static_cast<std::size_t>(t);
  return i < names.size() ? names[i] : std::string_view("invalid");
}

/// The dtype called `name` (as dtype_name prints it), or INVALID_ARGUMENT.
inline StatusOr<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == name) return t;
  for (DType t : kNarrowDTypes)
    if (dtype_name(t) == name) return t;
  if (name == dtype_name(DType::kToken)) return DType::kToken;
  return invalid_argument_error(str_cat("unknown dtype '", name,
                                        "' (expected one of pred, s8..s64, u8..u64, f16, bf16, "
                                        "f32, f64, c64, c128, s2, s4, u2, u4, f8e3m4, f8e4m3, "
                                        "f8e4m3fn, f8e4m3fnuz, f8e4m3b11fnuz, f8e5m2, f8e5m2fnuz, "
                                        "f8e8m0fnu, f6e2m3fn, f6e3m2fn, f4e2m1fn, token)"));
}

/// The format of a narrow floating dtype (is_narrow_floating(t) must hold).
constexpr NarrowFloatFormat narrow_float_format(DType t) {
  using K = NarrowFloatKind;
  switch (t) {
    case DType::kF8E3M4: return {3, 4, 3, K::kIeee};
    case DType::kF8E4M3: return {4, 3, 7, K::kIeee};
    case DType::kF8E4M3FN: return {4, 3, 7, K::kFiniteNan};
    case DType::kF8E4M3FNUZ: return {4, 3, 8, K::kFnuz};
    case DType::kF8E4M3B11FNUZ: return {4, 3, 11, K::kFnuz};
    case DType::kF8E5M2: return {5, 2, 15, K::kIeee};
    case DType::kF8E5M2FNUZ: return {5, 2, 16, K::kFnuz};
    case DType::kF8E8M0FNU: return {8, 0, 127, K::kExponentOnly};
    case DType::kF6E2M3FN: return {2, 3, 1, K::kFiniteOnly};
    case DType::kF6E3M2FN: return {3, 2, 3, K::kFiniteOnly};
    case DType::kF4E2M1FN: return {2, 1, 1, K::kFiniteOnly};
    default: return {0, 0, 0, K::kIeee};
  }
}

/// Bits of one element's value: 2 for s2, 4 for u4 and f4e2m1fn, 6 for the f6 types, 8 times
/// byte_size for the others (pred counts 8). bitcast_convert splits and joins by it.
constexpr int bit_width(DType t);

/// The type a narrow dtype computes in: f32 for the narrow floats, s32 for s2/s4, u32 for
/// u2/u4; any other dtype is its own.
constexpr DType wide_dtype(DType t) {
  if (is_narrow_floating(t)) return DType::kF32;
  if (t == DType::kS2 || t == DType::kS4) return DType::kS32;
  if (t == DType::kU2 || t == DType::kU4) return DType::kU32;
  return t;
}

/// Bytes per element; 0 for kInvalid and kToken. pred and every narrow type take one byte.
constexpr std::size_t byte_size(DType t) {
  if (is_narrow(t)) return 1;
  switch (t) {
    case DType::kPred: case DType::kS8: case DType::kU8: return 1;
    case DType::kS16: case DType::kU16: case DType::kF16: case DType::kBF16: return 2;
    case DType::kS32: case DType::kU32: case DType::kF32: return 4;
    case DType::kS64: case DType::kU64: case DType::kF64: case DType::kC64: return 8;
    case DType::kC128: return 16;
    default: return 0;
  }
}

constexpr int bit_width(DType t) {
  if (is_narrow_floating(t)) return narrow_float_format(t).bits();
  if (t == DType::kS2 || t == DType::kU2) return 2;
  if (t == DType::kS4 || t == DType::kU4) return 4;
  return static_cast<int>(8 * byte_size(t));
}

namespace detail {
template <DType D> struct NativeType;
template <> struct NativeType<DType::kPred> { using type = bool; };
template <> struct NativeType<DType::kS8> { using type = std::int8_t; };
template <> struct NativeType<DType::kS16> { using type = std::int16_t; };
template <> struct NativeType<DType::kS32> { using type = std::int32_t; };
template <> struct NativeType<DType::kS64> { using type = std::int64_t; };
template <> struct NativeType<DType::kU8> { using type = std::uint8_t; };
template <> struct NativeType<DType::kU16> { using type = std::uint16_t; };
template <> struct NativeType<DType::kU32> { using type = std::uint32_t; };
template <> struct NativeType<DType::kU64> { using type = std::uint64_t; };
template <> struct NativeType<DType::kF16> { using type = f16; };
template <> struct NativeType<DType::kBF16> { using type = bf16; };
template <> struct NativeType<DType::kF32> { using type = float; };
template <> struct NativeType<DType::kF64> { using type = double; };
template <> struct NativeType<DType::kC64> { using type = c64; };
template <> struct NativeType<DType::kC128> { using type = c128; };

template <class T> inline constexpr DType kDTypeOf = DType::kInvalid;
template <> inline constexpr DType kDTypeOf<bool> = DType::kPred;
template <> inline constexpr DType kDTypeOf<std::int8_t> = DType::kS8;
template <> inline constexpr DType kDTypeOf<std::int16_t> = DType::kS16;
template <> inline constexpr DType kDTypeOf<std::int32_t> = DType::kS32;
template <> inline constexpr DType kDTypeOf<std::int64_t> = DType::kS64;
template <> inline constexpr DType kDTypeOf<std::uint8_t> = DType::kU8;
template <> inline constexpr DType kDTypeOf<std::uint16_t> = DType::kU16;
template <> inline constexpr DType kDTypeOf<std::uint32_t> = DType::kU32;
template <> inline constexpr DType kDTypeOf<std::uint64_t> = DType::kU64;
template <> inline constexpr DType kDTypeOf<f16> = DType::kF16;
template <> inline constexpr DType kDTypeOf<bf16> = DType::kBF16;
template <> inline constexpr DType kDTypeOf<float> = DType::kF32;
template <> inline constexpr DType kDTypeOf<double> = DType::kF64;
template <> inline constexpr DType kDTypeOf<c64> = DType::kC64;
template <> inline constexpr DType kDTypeOf<c128> = DType::kC128;
}  // namespace detail

/// The C++ type that holds one element of D: native_t<DType::kF32> is float.
template <DType D>
using native_t = typename detail::NativeType<D>::type;

/// The dtype of C++ type T; only the fifteen element types are Elements.
template <class T>
concept Element = detail::kDTypeOf<std::remove_cv_t<T>> != DType::kInvalid;
template <Element T>
inline constexpr DType dtype_of = detail::kDTypeOf<std::remove_cv_t<T>>;

/// Calls f(std::type_identity<T>{}) with T the C++ type of `t` and returns what it returns.
/// `t` must be valid; that is checked where a dtype enters the library.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kPred: return f(std::type_identity<bool>{});
    case DType::kS8: return f(std::type_identity<std::int8_t>{});
    case DType::kS16: return f(std::type_identity<std::int16_t>{});
    case DType::kS32: return f(std::type_identity<std::int32_t>{});
    case DType::kS64: return f(std::type_identity<std::int64_t>{});
    case DType::kU8: return f(std::type_identity<std::uint8_t>{});
    case DType::kU16: return f(std::type_identity<std::uint16_t>{});
    case DType::kU32: return f(std::type_identity<std::uint32_t>{});
    case DType::kU64: return f(std::type_identity<std::uint64_t>{});
    case DType::kF16: return f(std::type_identity<f16>{});
    case DType::kBF16: return f(std::type_identity<bf16>{});
    case DType::kF32: return f(std::type_identity<float>{});
    case DType::kF64: return f(std::type_identity<double>{});
    case DType::kC64: return f(std::type_identity<c64>{});
    case DType::kC128: return f(std::type_identity<c128>{});
    default: break;
  }
  std::fprintf(stderr, "pjrt_lite: visit_dtype on %s dtype %s, which has no C++ type\n",
               is_narrow(t) ? "the narrow" : is_token(t) ? "the" : "an invalid", dtype_name(t).data());
  std::abort();
}

template <class T> inline constexpr bool is_complex_v = false;
template <class T> inline constexpr bool is_complex_v<std::complex<T>> = true;
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, f16> ||
                                   std::is_same_v<T, bf16>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

namespace detail {
/// `d` as a float rounded to odd: truncated toward zero, with the last bit set if that lost
/// anything. Rounding that to f16 or bf16 (which keep far fewer bits) then rounds correctly,
/// where double -> float -> f16 with two round-to-nearest steps can round twice.
inline float round_to_odd_float(double d) {
  const float f = static_cast<float>(d);
  if (!std::isfinite(f) || static_cast<double>(f) == d) return f;
  auto bits = std::bit_cast<std::uint32_t>(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) bits -= 1;  // toward zero
  return std::bit_cast<float>(bits | 1u);
}
}  // namespace detail

/// Converts one element with StableHLO `convert` semantics: bool is 0 / 1 and anything
/// non-zero is true (NaN included); float to integer truncates toward zero and saturates, NaN
/// becoming 0; integer to integer wraps (two's complement); complex to any non-complex type,
/// bool included, keeps the real part only (as the StableHLO interpreter: (0, 1) is false).
template <class To, class From>
To convert_element(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_complex_v<From>) return convert_element<bool>(x.real());
    else if constexpr (std::is_same_v<From, double>) return x != 0.0;  // 1e-300 is true
    else if constexpr (is_float_v<From>) return static_cast<float>(x) != 0.0f;
    else return x != 0;
  } else if constexpr (is_complex_v<From>) {
    using R = typename From::value_type;
    if constexpr (is_complex_v<To>) {
      using S = typename To::value_type;
      return To(static_cast<S>(x.real()), static_cast<S>(x.imag()));
    } else {
      return convert_element<To, R>(x.real());
    }
  } else if constexpr (is_complex_v<To>) {
    using S = typename To::value_type;
    return To(convert_element<S>(x), S(0));
  } else if constexpr (is_float_v<From> && is_int_v<To>) {
    // Widen half floats first; double holds every f16/bf16/f32 value exactly.
    double d = static_cast<double>(static_cast<std::conditional_t<std::is_same_v<From, double>,
                                                                  double, float>>(x));
    if (std::isnan(d)) return To(0);
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest()))
      return std::numeric_limits<To>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else if constexpr (std::is_same_v<To, f16> || std::is_same_v<To, bf16>) {
    if constexpr (std::is_same_v<From, double>) return To(detail::round_to_odd_float(x));
    else return To(static_cast<float>(x));
  } else if constexpr (std::is_same_v<From, f16> || std::is_same_v<From, bf16>) {
    return static_cast<To>(static_cast<float>(x));
  } else {
    return static_cast<To>(x);  // int <-> int wraps, int -> float rounds, float <-> float
  }
}

inline void convert_elements(const void* src, DType from, void* dst, DType to, std::int64_t count);

namespace detail {
/// Encodes wide elements of type M (f64 or s64) as the narrow dtype `to`: floats round to
/// nearest even (narrow_float.hpp); to a narrow integer, a float truncates toward zero and
/// saturates at the type's range (NaN is 0) and an integer wraps, as for the wide integers.
template <class M>
void encode_narrow(const M* in, DType to, std::uint8_t* out, std::int64_t count) {
  if (is_narrow_floating(to)) {
    const NarrowFloatFormat f = narrow_float_format(to);
    for (std::int64_t i = 0; i < count; ++i) out[i] = encode_narrow_float(f, static_cast<double>(in[i]));
    return;
  }
  const int bits = bit_width(to);
  const bool is_signed = is_signed_integral(to);
  const double lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double hi = is_signed ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t v;
    if constexpr (std::is_same_v<M, double>) {
      const double d = in[i];
      v = std::isnan(d) ? 0 : static_cast<std::int64_t>(d <= lo ? lo : d >= hi ? hi : std::trunc(d));
    } else {
      v = in[i];
    }
    out[i] = encode_narrow_int(v, bits, is_signed);
  }
}

/// convert_elements where `from` or `to` is narrow: through f64 (exact for every narrow float
/// and for integers up to 2^53) when either side is floating or complex, else through s64
/// (so integers wrap exactly).
inline void convert_narrow_elements(const void* src, DType from, void* dst, DType to, std::int64_t count) {
  const bool through_float = is_inexact(from) || is_floating(to);
  const DType mid = through_float ? DType::kF64 : DType::kS64;
  constexpr std::int64_t kChunk = 256;
  double fbuf[kChunk];
  std::int64_t ibuf[kChunk];
  void* buf = through_float ? static_cast<void*>(fbuf) : static_cast<void*>(ibuf);
  const std::size_t in_size = byte_size(from), out_size = byte_size(to);
  for (std::int64_t start = 0; start < count; start += kChunk) {
    const std::int64_t n = std::min(kChunk, count - start);
    const auto* in = static_cast<const std::uint8_t*>(src) + static_cast<std::size_t>(start) * in_size;
    auto* out = static_cast<std::uint8_t*>(dst) + static_cast<std::size_t>(start) * out_size;
    if (is_narrow_floating(from)) {
      const NarrowFloatFormat f = narrow_float_format(from);
      for (std::int64_t i = 0; i < n; ++i) fbuf[i] = decode_narrow_float(f, in[i]);
    } else if (is_narrow_integral(from)) {
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t v = decode_narrow_int(in[i], bit_width(from), is_signed_integral(from));
        if (through_float) fbuf[i] = static_cast<double>(v);
        else ibuf[i] = v;
      }
    } else {
      convert_elements(in, from, buf, mid, n);
    }
    if (!is_narrow(to)) convert_elements(buf, mid, out, to, n);
    else if (through_float) encode_narrow(fbuf, to, out, n);
    else encode_narrow(ibuf, to, out, n);
  }
}
}  // namespace detail

/// Converts `count` elements from `src` (of type `from`) to `dst` (of type `to`). Both dtypes
/// must be valid; the ranges must not overlap unless from == to. Narrow types convert as
/// ml_dtypes converts them (narrow_float.hpp), with the integer rules above.
inline void convert_elements(const void* src, DType from, void* dst, DType to, std::int64_t count) {
  if (from == to) {
    std::memmove(dst, src, static_cast<std::size_t>(count) * byte_size(from));
    return;
  }
  if (is_narrow(from) || is_narrow(to)) {
    detail::convert_narrow_elements(src, from, dst, to, count);
    return;
  }
  visit_dtype(from, [&]<class F>(std::type_identity<F>) {
    visit_dtype(to, [&]<class T>(std::type_identity<T>) {
      const F* s = static_cast<const F*>(src);
      T* d = static_cast<T*>(dst);
      for (std::int64_t i = 0; i < count; ++i) d[i] = convert_element<T>(s[i]);
    });
  });
}

/// The bits bitcast_convert sees of an element: bit_width, but 1 for pred (StableHLO's i1,
/// whose one bit its interpreter bitcasts as such).
constexpr int bitcast_width(DType t) { return t == DType::kPred ? 1 : bit_width(t); }
/// Types whose bitcast_convert cuts and joins bits rather than copying bytes: pred and the
/// narrow types (bitcast_width below the storage's bits).
constexpr bool is_bit_packed(DType t) { return t == DType::kPred || is_narrow(t); }

/// bitcast_convert's element step where `from` or `to` is bit-packed: the bitcast_width(from)
/// bits of each of the `count` source elements, concatenated from the lowest bits up (element
/// 0 first, a wide element's bytes in little-endian order), are cut into bitcast_width(to)-bit
/// result elements the same way. A narrow result is stored as a converted one would be (a
/// signed integer sign-extended through its byte), a pred one as 0 or 1. The total number of
/// bits must divide.
inline void bitcast_narrow_elements(const void* src, DType from, void* dst, DType to, std::int64_t count) {
  const int wf = bitcast_width(from), wt = bitcast_width(to);
  const int piece_in = std::min(wf, 8), piece_out = std::min(wt, 8);
  const auto* in = static_cast<const std::uint8_t*>(src);
  auto* out = static_cast<std::uint8_t*>(dst);
  const std::int64_t in_pieces = count * (wf / piece_in);
  std::uint32_t acc = 0;
  int have = 0;
  std::int64_t written = 0;
  for (std::int64_t i = 0; i < in_pieces; ++i) {
    acc |= static_cast<std::uint32_t>(in[i] & ((1u << piece_in) - 1)) << have;
    have += piece_in;
    for (; have >= piece_out; have -= piece_out, acc >>= piece_out) {
      const auto bits = static_cast<std::uint8_t>(acc & ((1u << piece_out) - 1));
      out[written++] = is_narrow_integral(to) ? encode_narrow_int(bits, wt, is_signed_integral(to)) : bits;
    }
  }
}

}  // namespace pjrt_lite
