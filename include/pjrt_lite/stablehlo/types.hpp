#pragma once
// StableHLO's spelling of the IR's types: element types (i1, ui8, bf16, complex<f32>) and
// ranked tensor types (tensor<2x3xf32>, tensor<f32>).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"

namespace pjrt_lite::inline v0_1::stablehlo {

/// The StableHLO element type of a dtype: "i1", "i32", "ui8", "bf16", "complex<f64>", "i4",
/// "f8E4M3FN".
constexpr std::string_view element_type_name(DType t) {
  constexpr std::array<std::string_view, 31> names = {
      "invalid",    "i1",        "i8",        "i16",        "i32",          "i64",
      "ui8",        "ui16",      "ui32",      "ui64",       "f16",          "bf16",
      "f32",        "f64",       "complex<f32>", "complex<f64>", "i2",      "i4",
      "ui2",        "ui4",       "f8E3M4",    "f8E4M3",     "f8E4M3FN",     "f8E4M3FNUZ",
      "f8E4M3B11FNUZ", "f8E5M2", "f8E5M2FNUZ", "f8E8M0FNU", "f6E2M3FN",     "f6E3M2FN",
      "f4E2M1FN"};
  const auto i = static_cast<std::size_t>(t);
  return i < names.size() ? names[i] : std::string_view("invalid");
}

/// The dtype of a StableHLO element type name, or nullopt when the IR has none.
constexpr std::optional<DType> dtype_from_element_type(std::string_view name) {
  for (DType t : kAllDTypes)
    if (element_type_name(t) == name) return t;
  for (DType t : kNarrowDTypes)
    if (element_type_name(t) == name) return t;
  return std::nullopt;
}

/// Element types that StableHLO has and the IR lacks (so a program using them is valid but
/// unsupported, not malformed).
constexpr bool is_unsupported_element_type(std::string_view name) {
  constexpr std::array<std::string_view, 7> names = {"si8",  "si16",  "si32",        "si64",
                                                     "tf32", "index", "complex<f16>"};
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

/// A dimension written `?` in a type: its size is known only once the function is given
/// its arguments' shapes (shape polymorphism). Shapes of the IR never hold it.
inline constexpr std::int64_t kDynamicDim = -1;

/// True when `shape` has a `?` dimension.
inline bool has_dynamic_dims(const Shape& shape) {
  for (std::int64_t d : shape.dims())
    if (d == kDynamicDim) return true;
  return false;
}

/// True when `actual` (a value's shape) has the type `declared`, where a `?` in `declared`
/// stands for any size.
inline bool matches_declared(const Shape& actual, const Shape& declared) {
  if (actual.dtype() != declared.dtype() || actual.rank() != declared.rank()) return false;
  for (std::int64_t k = 0; k < actual.rank(); ++k)
    if (declared.dim(k) != kDynamicDim && declared.dim(k) != actual.dim(k)) return false;
  return true;
}

/// "tensor<2x3xf32>", "tensor<?x3xf32>", "tensor<f32>" for rank 0. Layouts are not part of
/// the type.
inline std::string tensor_type_name(const Shape& shape) {
  if (is_token(shape.dtype())) return "!stablehlo.token";
  std::string out = "tensor<";
  for (std::int64_t d : shape.dims()) {
    out += d == kDynamicDim ? std::string("?") : std::to_string(d);
    out += 'x';
  }
  out += element_type_name(shape.dtype());
  out += '>';
  return out;
}

}  // namespace pjrt_lite::stablehlo
