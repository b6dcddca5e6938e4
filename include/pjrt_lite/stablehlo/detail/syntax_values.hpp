#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// What the syntax reader (syntax.hpp) returns besides tensor types: an op's trailing type
// (OpType) and attribute values and dictionaries (AttrValue, AttrDict), kept as structured
// as the parser needs and no more; and what it takes to say where a token was expected
// (Where).

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// A quantized element type, `!quant.uniform<i8<-127:127>:f32:1, {0.1:-3, 0.2:4}>`: integers
/// of `storage` in [storage_min, storage_max] standing for (q - zero_point) * scale in
/// `expressed`. Per-tensor (one scale and zero point, axis -1) or per-axis (one pair per index
/// of dimension `axis`). Values of a quantized type are their storage integers in the IR.
struct QuantType {
  DType storage = DType::kS8;
  std::int64_t storage_min = 0;
  std::int64_t storage_max = 0;
  DType expressed = DType::kF32;
  std::int64_t axis = -1;
  std::vector<double> scales;
  std::vector<std::int64_t> zero_points;

  [[nodiscard]] bool per_axis() const { return axis >= 0; }
  friend bool operator==(const QuantType&, const QuantType&) = default;
};

/// `(T0, T1) -> (R0)`.
struct FunctionType {
  std::vector<Shape> inputs;
  std::vector<Shape> results;
};

/// The trailing type of an op: a function type, or a plain list of types whose meaning the
/// op decides (`: tensor<2xf32>` for same-type ops, `: tensor<i1>, tensor<2xf32>` for select).
struct OpType {
  bool functional = false;
  FunctionType function;     // when functional
  std::vector<Shape> types;  // otherwise
  SourcePos pos;
  /// Per type as written (function inputs, then results; or `types`), its quantized element
  /// type, if it has one: the Shape is then the storage type's.
  std::vector<std::optional<QuantType>> quant;

  [[nodiscard]] bool quantized() const {
    for (const auto& q : quant)
      if (q) return true;
    return false;
  }
};

struct AttrEntry;

/// One attribute value. Only what the parser needs is kept structured; everything else (a
/// #dialect<...> it does not know, loc(...), affine maps) is kOpaque with its text.
struct AttrValue {
  enum class Kind : std::uint8_t {
    kUnit,
    kBool,
    kInt,
    kFloat,
    kString,
    kSymbol,
    kList,
    kDict,
    kIntArray,  // array<i64: 1, 2> (and array<i1: ...> as 0 / 1)
    kDense,     // dense<...> : tensor<...>
    kEnum,      // #stablehlo<comparison_direction LT>: text = "comparison_direction", word = "LT"
    kType,
    kOpaque,
  };
  Kind kind = Kind::kUnit;
  SourcePos pos;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string text;  // string contents, symbol name, enum kind, dialect attribute name, word
  std::string word;  // enum value
  std::vector<AttrValue> list;
  std::vector<AttrEntry> dict;  // kDict, and #stablehlo.dot<k = v>
  std::vector<std::int64_t> ints;
  std::shared_ptr<const Literal> dense;
  Shape type;

  /// The entry `key` of a dict, or nullptr.
  [[nodiscard]] const AttrValue* find(std::string_view key) const;
};

/// One `key = value` of a dictionary. A struct rather than std::pair<std::string, AttrValue>:
/// clang cannot instantiate that pair while AttrValue, which holds a vector of them, is
/// being completed.
struct AttrEntry {
  AttrEntry(std::string key, AttrValue value) : first(std::move(key)), second(std::move(value)) {}
  std::string first;
  AttrValue second;
};

inline const AttrValue* AttrValue::find(std::string_view key) const {
  for (const auto& [k, v] : dict)
    if (k == key) return &v;
  return nullptr;
}

/// An attribute dictionary: `{key = value, unit_key}`, and `<{...}>` properties.
using AttrDict = std::vector<AttrEntry>;

inline const AttrValue* find_attr(const AttrDict& dict, std::string_view key) {
  for (const auto& [k, v] : dict)
    if (k == key) return &v;
  return nullptr;
}

/// Where an expected token belongs, for the error when it is missing ("after the operands of
/// stablehlo.add"): up to three pieces, joined only if the error is reported. Most contexts
/// name the op they are in, and joining them for every op would cost more than reading it.
/// It refers to its pieces: pass it on, do not keep it.
struct Where {
  // Implicit, so that a plain string is a Where.
  Where(const char* text) : a(text) {}
  Where(std::string_view text) : a(text) {}
  Where(const std::string& text) : a(text) {}
  Where(std::string_view first, std::string_view second, std::string_view third = {})
      : a(first), b(second), c(third) {}
  friend std::ostream& operator<<(std::ostream& os, const Where& w) {
    return os << w.a << w.b << w.c;
  }
  std::string_view a, b, c;
};

}  // namespace pjrt_lite::stablehlo::detail
