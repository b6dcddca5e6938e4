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

namespace detail {

/// An element type's name, spelled at compile time.
struct ElementTypeName {
  std::array<char, 16> chars{};
  std::size_t size = 0;
  constexpr void append(std::string_view s) {
    for (char c : s) chars[size++] = c;
  }
};

/// MLIR's spelling of dtype_name(t): sN is iN, uN is uiN, pred is i1, c64 and c128 are
/// complex<f32> and complex<f64>, and a narrow float's letters after its width are upper case
/// (f8e4m3fn is f8E4M3FN). The token is not an element type: "invalid".
constexpr ElementTypeName spell_element_type(DType t) {
  const std::string_view xla = dtype_name(t);
  ElementTypeName name;
  if (is_pred(t)) {
    name.append("i1");
  } else if (is_token(t)) {
    name.append("invalid");
  } else if (is_signed_integral(t) || is_unsigned_integral(t)) {
    name.append(is_signed_integral(t) ? "i" : "ui");
    name.append(xla.substr(1));
  } else if (is_complex(t)) {
    name.append(t == DType::kC64 ? "complex<f32>" : "complex<f64>");
  } else if (is_narrow_floating(t)) {
    name.append(xla);
    for (std::size_t k = xla.find_first_not_of("0123456789", 1); k < name.size; ++k)
      if (name.chars[k] >= 'a' && name.chars[k] <= 'z')
        name.chars[k] = static_cast<char>(name.chars[k] - 'a' + 'A');
  } else {
    name.append(xla);
  }
  return name;
}

/// Every dtype's StableHLO name, indexed by the dtype.
inline constexpr auto kElementTypeNames = [] {
  std::array<ElementTypeName, static_cast<std::size_t>(DType::kToken) + 1> names{};
  for (std::size_t i = 0; i < names.size(); ++i)
    names[i] = spell_element_type(static_cast<DType>(i));
  return names;
}();

}  // namespace detail

/// The StableHLO element type of a dtype: "i1", "i32", "ui8", "bf16", "complex<f64>", "i4",
/// "f8E4M3FN".
constexpr std::string_view element_type_name(DType t) {
  const auto i = static_cast<std::size_t>(t);
  if (i >= detail::kElementTypeNames.size()) return "invalid";
  return {detail::kElementTypeNames[i].chars.data(), detail::kElementTypeNames[i].size};
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
