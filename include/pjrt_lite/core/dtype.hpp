#pragma once
// Element types: names, sizes, the C++ type behind each, and element conversion with
// StableHLO's `convert` semantics.

#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include <Eigen/Core>  // Eigen::half, Eigen::bfloat16: the same types the kernels compute in.

#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

using f16 = Eigen::half;
using bf16 = Eigen::bfloat16;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

/// An element type. kInvalid is what a default-constructed Shape holds.
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
};

/// Every valid dtype, in declaration order.
inline constexpr std::array<DType, 15> kAllDTypes = {
    DType::kPred, DType::kS8,  DType::kS16,  DType::kS32, DType::kS64,
    DType::kU8,   DType::kU16, DType::kU32,  DType::kU64, DType::kF16,
    DType::kBF16, DType::kF32, DType::kF64,  DType::kC64, DType::kC128};

constexpr bool is_valid(DType t) { return t >= DType::kPred && t <= DType::kC128; }
constexpr bool is_pred(DType t) { return t == DType::kPred; }
constexpr bool is_signed_integral(DType t) { return t >= DType::kS8 && t <= DType::kS64; }
constexpr bool is_unsigned_integral(DType t) { return t >= DType::kU8 && t <= DType::kU64; }
/// Signed or unsigned integers; pred is not one.
constexpr bool is_integral(DType t) { return is_signed_integral(t) || is_unsigned_integral(t); }
constexpr bool is_floating(DType t) { return t >= DType::kF16 && t <= DType::kF64; }
constexpr bool is_complex(DType t) { return t == DType::kC64 || t == DType::kC128; }
/// Floating or complex: the types with NaN, infinities and derivatives.
constexpr bool is_inexact(DType t) { return is_floating(t) || is_complex(t); }

/// The short XLA name: "pred", "s32", "bf16", "c64", ...; "invalid" for kInvalid.
constexpr std::string_view dtype_name(DType t) {
  constexpr std::array<std::string_view, 16> names = {
      "invalid", "pred", "s8",  "s16",  "s32", "s64", "u8",  "u16",
      "u32",     "u64",  "f16", "bf16", "f32", "f64", "c64", "c128"};
  auto i = static_cast<std::size_t>(t);
  return i < names.size() ? names[i] : std::string_view("invalid");
}

/// The dtype called `name` (as dtype_name prints it), or INVALID_ARGUMENT.
inline StatusOr<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == name) return t;
  return invalid_argument_error(str_cat("unknown dtype '", name,
                                        "' (expected one of pred, s8..s64, u8..u64, f16, bf16, "
                                        "f32, f64, c64, c128)"));
}

/// Bytes per element; 0 for kInvalid. pred takes one byte.
constexpr std::size_t byte_size(DType t) {
  switch (t) {
    case DType::kPred: case DType::kS8: case DType::kU8: return 1;
    case DType::kS16: case DType::kU16: case DType::kF16: case DType::kBF16: return 2;
    case DType::kS32: case DType::kU32: case DType::kF32: return 4;
    case DType::kS64: case DType::kU64: case DType::kF64: case DType::kC64: return 8;
    case DType::kC128: return 16;
    case DType::kInvalid: return 0;
  }
  return 0;
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
    case DType::kInvalid: break;
  }
  std::fprintf(stderr, "pjrt_lite: visit_dtype on an invalid dtype\n");
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

/// Converts `count` elements from `src` (of type `from`) to `dst` (of type `to`). Both dtypes
/// must be valid; the ranges must not overlap unless from == to.
inline void convert_elements(const void* src, DType from, void* dst, DType to, std::int64_t count) {
  if (from == to) {
    std::memmove(dst, src, static_cast<std::size_t>(count) * byte_size(from));
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

}  // namespace pjrt_lite
