#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/bytecode.hpp"
// The attributes and types of a portable artifact, decoded from the bytecode's table and
// spelled the way StableHLO's text spells them, so the text parser reads them.
//
// VHLO encodes its own attributes and types (StableHLO's VhloBytecode.cpp): each entry starts
// with a varint code; tensors are `!vhlo.tensor_v1` with signed-varint dimensions (INT64_MIN
// for '?') and an element type, tensor attributes carry the raw little-endian data of MLIR's
// dense elements (i1 packed eight to a byte, or one all-ones byte for a true splat), integers
// carry one byte up to 8 bits and a zigzag varint up to 64, floats their bit pattern the same
// way. The builtin dialect contributes the keys (strings) and dictionaries of older artifacts'
// attribute dictionaries, and locations, which are never decoded. Every entry is decoded once,
// on first use; nesting is capped and a cycle is refused.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/detail/bytecode_reader.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

namespace vhlo_internal {

/// `s` as an MLIR string literal.
inline std::string mlir_quoted(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7F) {
      out += '\\';
      append_hex(out, c, 2, HexCase::kUpper);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace vhlo_internal

/// A decoded type.
struct VType {
  enum class Kind : std::uint8_t { kElement, kTensor, kUnranked, kToken, kTuple, kFunction, kOther };
  Kind kind = Kind::kOther;
  /// The MLIR spelling: "f32", "tensor<2x?xf32>", "!stablehlo.token", "tuple<...>"; for a
  /// function "(T0, T1) -> (R0)".
  std::string text;
  // Elements and tensors: the element's spelling, its bytes in dense data (0 when it has
  // none), whether it is i1.
  std::string element;
  int element_bytes = 0;
  bool is_bool = false;
  bool is_int = false;
  bool is_unsigned = false;
  std::vector<std::int64_t> dims;  // tensors
  std::vector<const VType*> inputs, results;  // functions
  /// The element count of a ranked static tensor, or -1.
  [[nodiscard]] std::int64_t num_elements() const {
    std::int64_t n = 1;
    for (std::int64_t d : dims) {
      if (d < 0 || (d > 0 && n > std::numeric_limits<std::int64_t>::max() / d)) return -1;
      n *= d;
    }
    return n;
  }
};

/// A decoded attribute.
struct VAttr {
  enum class Kind : std::uint8_t {
    kArray,
    kBool,
    kEnum,
    kDict,
    kFloat,
    kInteger,
    kString,
    kTensor,
    kType,
    kTypeExtensions,
    kOutputOperandAlias,
    kResultAccuracy,
    kFlatSymbol,
    kUnit,
    kSdy,    // a Shardy attribute: `text` its full spelling, `word` the part its op forms use
    kOther,
  };
  Kind kind = Kind::kOther;
  /// Strings: the string; enums: the StableHLO spelling "#stablehlo<precision DEFAULT>";
  /// kOther: why it is refused ("... is not supported").
  std::string text;
  std::string word;  // enums: the value's name ("DEFAULT")
  std::int64_t i = 0;
  bool b = false;
  const VType* type = nullptr;
  std::vector<const VAttr*> items;  // arrays; dictionaries as key, value, key, value, ...
  std::vector<std::int64_t> ints;   // type extensions' bounds; output_operand_alias
  std::vector<std::int64_t> ints2;
  std::vector<std::uint8_t> raw;    // tensors: MLIR's dense raw data (i1 one byte each)
  double atol = 0, rtol = 0;        // result accuracy
};

/// The attribute and type table of one file, decoded on demand.
class VhloTables {
 public:
  explicit VhloTables(const BcFile& f)
      : f_(f), attrs_(f.attributes.size()), types_(f.types.size()),
        attr_state_(f.attributes.size()), type_state_(f.types.size()) {}

  StatusOr<const VAttr*> attr(ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t i, c.varint());
    if (i >= attrs_.size()) return c.error(str_cat("attribute index ", i, " is out of range"));
    return attr_at(static_cast<std::size_t>(i));
  }
  StatusOr<const VType*> type(ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t i, c.varint());
    if (i >= types_.size()) return c.error(str_cat("type index ", i, " is out of range"));
    return type_at(static_cast<std::size_t>(i));
  }
  StatusOr<const VType*> type_at_checked(ByteCursor& c, std::uint64_t i) {
    if (i >= types_.size()) return c.error(str_cat("type index ", i, " is out of range"));
    return type_at(static_cast<std::size_t>(i));
  }

  StatusOr<const VAttr*> attr_at(std::size_t i) {
    return decode_once(i, f_.attributes, attrs_, attr_state_, "attributes", "an attribute",
                       [&](const BcEntry& e, ByteCursor& c) -> StatusOr<VAttr> {
                         StatusOr<VAttr> a = decode_attr(e, c);
                         if (a.ok() || a.status().code() != StatusCode::kUnimplemented) return a;
                         // A valid attribute without a StableHLO meaning here (a buffer
                         // type, say): kept, and refused where an op uses it.
                         VAttr other;
                         other.text = std::string(a.status().message());
                         c = ByteCursor{};
                         return other;
                       });
  }

  StatusOr<const VType*> type_at(std::size_t i) {
    return decode_once(i, f_.types, types_, type_state_, "types", "a type",
                       [&](const BcEntry& e, ByteCursor& c) -> StatusOr<VType> {
                         StatusOr<VType> t = decode_type(e, c);
                         // A type shared many times over (tuples of tuples of one another)
                         // could spell out to more than memory holds.
                         if (t.ok() && t->text.size() > kMaxTypeText)
                           return c.error(str_cat("a type's spelling exceeds ", kMaxTypeText, " bytes"));
                         return t;
                       });
  }

 private:
  static constexpr int kMaxDepth = 64;
  static constexpr std::size_t kMaxTypeText = std::size_t{1} << 20;

  // Entry i of `table`, decoded by `decode` the first time it is asked for and kept in `cache`.
  // `state` marks an entry being decoded, so that one referring to itself, or nesting past
  // kMaxDepth, is an error rather than a stack overflow; `decode` must use all of its bytes.
  template <class T, class Decode>
  StatusOr<const T*> decode_once(std::size_t i, const std::vector<BcEntry>& table,
                                 std::vector<std::optional<T>>& cache, std::vector<std::uint8_t>& state,
                                 std::string_view what, std::string_view one, Decode decode) {
    if (state[i] == 2) return &*cache[i];
    ByteCursor c = table[i].data;
    if (state[i] == 1 || depth_ >= kMaxDepth) return c.error(str_cat(what, " nest too deeply or refer to themselves"));
    state[i] = 1;
    ++depth_;
    StatusOr<T> v = decode(table[i], c);
    --depth_;
    state[i] = 0;
    if (!v.ok()) return v.status();
    if (!c.empty()) return c.error(str_cat("unexpected bytes after ", one));
    cache[i] = std::move(v).value();
    state[i] = 2;
    return &*cache[i];
  }

  std::string_view dialect(const BcEntry& e) const { return f_.dialects[e.dialect]; }

  /// A dictionary (builtin's, VHLO's): a count, then each entry's name (a string attribute)
  /// and value, kept in items as name, value, name, ...
  StatusOr<VAttr> dictionary(ByteCursor& c) {
    VAttr a;
    a.kind = VAttr::Kind::kDict;
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("dictionary entries", 2));
    for (std::uint64_t k = 0; k < n; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* key, attr(c));
      PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* value, attr(c));
      a.items.push_back(key);
      a.items.push_back(value);
    }
    return a;
  }

  StatusOr<std::vector<const VAttr*>> attr_list(ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("attributes"));
    std::vector<const VAttr*> out;
    for (std::uint64_t k = 0; k < n; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* a, attr(c));
      out.push_back(a);
    }
    return out;
  }
  StatusOr<std::vector<const VType*>> type_list(ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("types"));
    std::vector<const VType*> out;
    for (std::uint64_t k = 0; k < n; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(const VType* t, type(c));
      out.push_back(t);
    }
    return out;
  }
  StatusOr<std::vector<std::int64_t>> signed_list(ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("integers"));
    std::vector<std::int64_t> out;
    for (std::uint64_t k = 0; k < n; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t v, c.signed_varint());
      out.push_back(v);
    }
    return out;
  }
  /// An integer of `bits` bits as MLIR writes an APInt: a byte up to 8 bits, else a zigzag
  /// varint of the (sign-extended) value.
  static StatusOr<std::uint64_t> apint(ByteCursor& c, int bits) {
    if (bits <= 8) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t v, c.byte());
      return static_cast<std::uint64_t>(v);
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t v, c.signed_varint());
    return static_cast<std::uint64_t>(v);
  }

  // ---- Types ----------------------------------------------------------------------------

  static VType element(std::string name, int bytes, bool is_int = false, bool is_unsigned = false) {
    VType t;
    t.kind = VType::Kind::kElement;
    t.text = name;
    t.element = std::move(name);
    t.element_bytes = bytes;
    t.is_int = is_int;
    t.is_unsigned = is_unsigned;
    return t;
  }

  StatusOr<VType> decode_type(const BcEntry& e, ByteCursor& c) {
    if (!e.custom) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::string_view text, c.cstring());
      return c.error(str_cat("the type '", text, "' of dialect ", dialect(e),
                             " is in assembly form, which this reader does not parse"));
    }
    if (dialect(e) == "builtin") return decode_builtin_type(c);
    if (dialect(e) != "vhlo")
      return unimplemented_error(str_cat("portable artifact: a type of the ", dialect(e),
                                         " dialect (not VHLO) is not supported"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t code, c.varint());
    switch (code) {
      case 0: {
        VType t = element("i1", 1, true);
        t.is_bool = true;
        return t;
      }
      case 2: return element("bf16", 2);
      case 3: return element("f16", 2);
      case 4: return element("f32", 4);
      case 5: return element("f64", 8);
      case 6: return element("f8E4M3FN", 1);
      case 7: return element("f8E5M2", 1);
      case 27: return element("f8E4M3FNUZ", 1);
      case 28: return element("f8E5M2FNUZ", 1);
      case 29: return element("f8E4M3B11FNUZ", 1);
      case 34: return element("tf32", 4);
      case 35: return element("f8E4M3", 1);
      case 36: return element("f8E3M4", 1);
      case 37: return element("f4E2M1FN", 1);
      case 38: return element("f6E2M3FN", 1);
      case 39: return element("f6E3M2FN", 1);
      case 40: return element("f8E8M0FNU", 1);
      case 9: return element("index", 8, true);
      case 31: return element("i2", 1, true);
      case 10: return element("i4", 1, true);
      case 11: return element("i8", 1, true);
      case 12: return element("i16", 2, true);
      case 13: return element("i32", 4, true);
      case 14: return element("i64", 8, true);
      case 32: return element("ui2", 1, true, true);
      case 15: return element("ui4", 1, true, true);
      case 16: return element("ui8", 1, true, true);
      case 17: return element("ui16", 2, true, true);
      case 18: return element("ui32", 4, true, true);
      case 19: return element("ui64", 8, true, true);
      case 33: return element("none", 0);
      case 1: {  // complex
        PJRT_LITE_ASSIGN_OR_RETURN(const VType* part, type(c));
        VType t = element(str_cat("complex<", part->text, ">"), 2 * part->element_bytes);
        return t;
      }
      case 20:
      case 21: {  // ranked tensor, with an encoding (bounds) for 21
        const VAttr* encoding = nullptr;
        if (code == 21) {
          PJRT_LITE_ASSIGN_OR_RETURN(encoding, attr(c));
        }
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims, signed_list(c));
        PJRT_LITE_ASSIGN_OR_RETURN(const VType* elem, type(c));
        PJRT_LITE_ASSIGN_OR_RETURN(VType t, ranked_tensor(c, std::move(dims), *elem));
        if (encoding != nullptr) {
          if (encoding->kind != VAttr::Kind::kTypeExtensions)
            return unimplemented_error(
                str_cat("portable artifact: a tensor type encoding other than bounds is not supported"));
          t.text += ", #stablehlo.bounds<";
          for (std::size_t k = 0; k < encoding->ints.size(); ++k) {
            if (k) t.text += ", ";
            const std::int64_t b = encoding->ints[k];
            t.text += b == std::numeric_limits<std::int64_t>::min() ? std::string("?") : std::to_string(b);
          }
          t.text += ">";
        }
        t.text += ">";
        return t;
      }
      case 25: {
        PJRT_LITE_ASSIGN_OR_RETURN(const VType* elem, type(c));
        VType t;
        t.kind = VType::Kind::kUnranked;
        t.text = str_cat("tensor<*x", elem->text, ">");
        return t;
      }
      case 22: {
        VType t;
        t.kind = VType::Kind::kToken;
        t.text = "!stablehlo.token";
        return t;
      }
      case 23: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<const VType*> parts, type_list(c));
        VType t;
        t.kind = VType::Kind::kTuple;
        t.text = "tuple<";
        for (std::size_t k = 0; k < parts.size(); ++k) t.text += str_cat(k ? ", " : "", parts[k]->text);
        t.text += ">";
        return t;
      }
      case 8: {
        VType t;
        t.kind = VType::Kind::kFunction;
        PJRT_LITE_ASSIGN_OR_RETURN(t.inputs, type_list(c));
        PJRT_LITE_ASSIGN_OR_RETURN(t.results, type_list(c));
        t.text = "(";
        for (std::size_t k = 0; k < t.inputs.size(); ++k) t.text += str_cat(k ? ", " : "", t.inputs[k]->text);
        t.text += ") -> (";
        for (std::size_t k = 0; k < t.results.size(); ++k) t.text += str_cat(k ? ", " : "", t.results[k]->text);
        t.text += ")";
        return t;
      }
      case 24:
      case 30:
        return decode_quantized(code == 30, c);
      case 26: {
        return unimplemented_error("portable artifact: the type !vhlo.witness_v1 is not supported");
      }
      case 41: {
        return unimplemented_error("portable artifact: buffer types (!vhlo.buffer_v1) are not supported");
      }
      case 42: {
        return unimplemented_error("portable artifact: future types (!vhlo.future_v1) are not supported");
      }
      default: {
        return unimplemented_error(str_cat("portable artifact: the VHLO type code ", code,
                                           " is unknown (a newer StableHLO's type?)"));
      }
    }
  }

  /// `tensor<2x?xf32` (without its closing '>', for an encoding to follow) of `dims` (INT64_MIN
  /// for '?') and element type `elem`.
  static StatusOr<VType> ranked_tensor(const ByteCursor& c, std::vector<std::int64_t> dims, const VType& elem) {
    if (elem.kind != VType::Kind::kElement) return c.error(str_cat("a tensor of ", elem.text));
    VType t;
    t.kind = VType::Kind::kTensor;
    t.element = elem.element;
    t.element_bytes = elem.element_bytes;
    t.is_bool = elem.is_bool;
    t.is_int = elem.is_int;
    t.is_unsigned = elem.is_unsigned;
    t.text = "tensor<";
    for (std::int64_t d : dims) {
      if (d == std::numeric_limits<std::int64_t>::min())
        t.text += "?";
      else if (d < 0)
        return c.error(str_cat("a tensor dimension of ", d));
      else
        t.text += std::to_string(d);
      t.text += "x";
    }
    t.text += elem.text;
    t.dims = std::move(dims);
    return t;
  }

  /// The builtin dialect's types (MLIR's BuiltinDialectBytecode.td), which the ops of other
  /// dialects (Shardy's) keep: integers (a varint width << 2 | signedness), index, the
  /// 16/32/64-bit floats, complex, ranked tensors (dimensions, then the element type) and
  /// unranked tensors. Others are UNIMPLEMENTED naming their code.
  StatusOr<VType> decode_builtin_type(ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t code, c.varint());
    switch (code) {
      case 0: {  // integer
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t w, c.varint());
        const std::uint64_t width = w >> 2, signedness = w & 3;
        if (signedness == 3) return c.error("an integer type of unknown signedness 3");
        if (width == 1 && signedness == 0) {
          VType t = element("i1", 1, true);
          t.is_bool = true;
          return t;
        }
        if (width != 2 && width != 4 && width != 8 && width != 16 && width != 32 && width != 64)
          return unimplemented_error(str_cat("portable artifact: a ", width, "-bit integer type is not supported"));
        const bool is_unsigned = signedness == 2;
        return element(str_cat(is_unsigned ? "ui" : "i", width), static_cast<int>(std::max<std::uint64_t>(width / 8, 1)),
                       true, is_unsigned);
      }
      case 1: return element("index", 8, true);
      case 3: return element("bf16", 2);
      case 4: return element("f16", 2);
      case 5: return element("f32", 4);
      case 6: return element("f64", 8);
      case 9: {
        PJRT_LITE_ASSIGN_OR_RETURN(const VType* part, type(c));
        return element(str_cat("complex<", part->text, ">"), 2 * part->element_bytes);
      }
      case 13: {  // ranked tensor
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims, signed_list(c));
        PJRT_LITE_ASSIGN_OR_RETURN(const VType* elem, type(c));
        PJRT_LITE_ASSIGN_OR_RETURN(VType t, ranked_tensor(c, std::move(dims), *elem));
        t.text += ">";
        return t;
      }
      case 18: {  // unranked tensor
        PJRT_LITE_ASSIGN_OR_RETURN(const VType* elem, type(c));
        VType t;
        t.kind = VType::Kind::kUnranked;
        t.text = str_cat("tensor<*x", elem->text, ">");
        return t;
      }
      default:
        return unimplemented_error(str_cat("portable artifact: a builtin type (code ", code, ") is not supported"));
    }
  }

  /// UniformQuantizedV1Type (24: flags, storage type, expressed type, scale as an f64 APFloat,
  /// zero point, storage min, max) and UniformQuantizedPerAxisV1Type (30: flags, storage,
  /// expressed, quantized dimension, min, max, the scales, the zero points), as the
  /// `!quant.uniform<...>` element type of their text. Flag bit 0: a signed storage type.
  StatusOr<VType> decode_quantized(bool per_axis, ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t flags, c.varint());
    PJRT_LITE_ASSIGN_OR_RETURN(const VType* storage, type(c));
    PJRT_LITE_ASSIGN_OR_RETURN(const VType* expressed, type(c));
    if (storage->kind != VType::Kind::kElement || !storage->is_int || storage->is_bool ||
        expressed->kind != VType::Kind::kElement || expressed->is_int)
      return c.error(str_cat("a quantized type stored in ", storage->text, " expressing ", expressed->text));
    auto f64 = [&]() -> StatusOr<double> {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t bits, apint(c, 64));
      return std::bit_cast<double>(bits);
    };
    std::uint64_t axis = 0;
    std::vector<double> scales;
    std::vector<std::int64_t> zero_points;
    if (per_axis) {
      PJRT_LITE_ASSIGN_OR_RETURN(axis, c.varint());
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(double scale, f64());
      PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t zero_point, c.signed_varint());
      scales.push_back(scale);
      zero_points.push_back(zero_point);
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t lo, c.signed_varint());
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t hi, c.signed_varint());
    if (per_axis) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("quantization scales", 1));
      for (std::uint64_t k = 0; k < n; ++k) {
        PJRT_LITE_ASSIGN_OR_RETURN(double scale, f64());
        scales.push_back(scale);
      }
      PJRT_LITE_ASSIGN_OR_RETURN(zero_points, signed_list(c));
    }
    // The storage integer type by its width, signed or not as the flags say (VHLO writes a
    // signless iN).
    std::string name = storage->element;
    if (name.starts_with("ui")) name.erase(0, 2);
    else if (name.starts_with("i")) name.erase(0, 1);
    name = str_cat((flags & 1) ? "i" : "u", name);
    VType t = element(name, storage->element_bytes, true, (flags & 1) == 0);
    auto number = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      std::string out = buf;
      if (out.find_first_of(".eEn") == std::string::npos) out += ".0";  // a float literal
      return out;
    };
    t.text = str_cat("!quant.uniform<", name, "<", lo, ":", hi, ">:", expressed->text);
    if (per_axis) t.text += str_cat(":", axis);
    t.text += per_axis ? ", {" : ", ";
    for (std::size_t k = 0; k < scales.size(); ++k)
      t.text += str_cat(k ? "," : "", number(scales[k]), ":", k < zero_points.size() ? zero_points[k] : 0);
    t.text += per_axis ? "}>" : ">";
    if (per_axis && zero_points.size() != scales.size())
      return c.error(str_cat("a per-axis quantized type with ", scales.size(), " scales and ", zero_points.size(),
                             " zero points"));
    return t;
  }

  // ---- Attributes -------------------------------------------------------------------------

  static VAttr enum_attr(std::string_view kind, std::string_view word) {
    VAttr a;
    a.kind = VAttr::Kind::kEnum;
    a.word = std::string(word);
    a.text = str_cat("#stablehlo<", kind, " ", word, ">");
    return a;
  }

  template <std::size_t N>
  static StatusOr<VAttr> read_enum(ByteCursor& c, std::string_view kind,
                                   const std::string_view (&words)[N]) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, c.varint());
    if (v >= N || words[v].empty()) return c.error(str_cat("value ", v, " of ", kind, " is unknown"));
    return enum_attr(kind, words[v]);
  }

  /// An integer attribute (VHLO's and the builtin one): its type, then the value at the type's
  /// width (64 for index). A builtin i1 is a boolean (MLIR's BoolAttr).
  StatusOr<VAttr> integer_attr(ByteCursor& c, bool builtin) {
    VAttr a;
    PJRT_LITE_ASSIGN_OR_RETURN(a.type, type(c));
    if (a.type->kind != VType::Kind::kElement || !a.type->is_int)
      return c.error(str_cat("an integer attribute of type ", a.type->text));
    const int bits = a.type->element == "i2" || a.type->element == "ui2" ? 2
                   : a.type->element == "i4" || a.type->element == "ui4" ? 4
                   : a.type->element_bytes * 8;
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, apint(c, bits));
    if (builtin && a.type->is_bool) {
      a.kind = VAttr::Kind::kBool;
      a.b = (v & 1) != 0;
      return a;
    }
    a.kind = VAttr::Kind::kInteger;
    if (bits < 64) {
      const std::uint64_t mask = (1ull << bits) - 1;
      v &= mask;
      if (!a.type->is_unsigned && (v >> (bits - 1)) != 0) v |= ~mask;  // sign-extend
    }
    a.i = static_cast<std::int64_t>(v);
    a.text = a.type->is_unsigned ? str_cat(v, " : ", a.type->text) : str_cat(a.i, " : ", a.type->text);
    return a;
  }

  StatusOr<VAttr> decode_builtin_attr(ByteCursor& c) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t code, c.varint());
    VAttr a;
    switch (code) {
      case 0: {  // array
        a.kind = VAttr::Kind::kArray;
        PJRT_LITE_ASSIGN_OR_RETURN(a.items, attr_list(c));
        return a;
      }
      case 1:  // dictionary: name (a string attribute), value
        return dictionary(c);
      case 2:  // string
        a.kind = VAttr::Kind::kString;
        {
          PJRT_LITE_ASSIGN_OR_RETURN(std::string_view s, f_.string(c));
          a.text = std::string(s);
        }
        return a;
      case 4: {  // flat symbol reference
        PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* name, attr(c));
        a.kind = VAttr::Kind::kFlatSymbol;
        a.text = name->text;
        return a;
      }
      case 7: {
        a.kind = VAttr::Kind::kUnit;
        return a;
      }
      case 8: return integer_attr(c, true);  // the module's mhlo.num_partitions, say
      default: {
        a.kind = VAttr::Kind::kOther;
        a.text = str_cat("portable artifact: a builtin attribute (code ", code, ") is not supported");
        // Its bytes are not read: mark the rest as consumed so only its use is refused.
        PJRT_LITE_RETURN_IF_ERROR(c.bytes(c.remaining()).status());
        return a;
      }
    }
  }

  // ---- Shardy's attributes (shardy/dialect/sdy/ir/bytecode.td) ---------------------------
  //
  // Each starts with a varint code; names are string-section indices, sizes zigzag varints,
  // lists a varint count, flags one byte, optional attributes a varint (index << 1 | 1) or 0,
  // priorities a varint with the flag "present" in its low bit. Decoded into Shardy's text,
  // which the text parser reads: `word` is the form inside an op (`<@mesh, [{"a"}, {}]>`,
  // `[<...>, <...>]`, `{"a"}`, `<["a"=2]>`), `text` the attribute (`#sdy.sharding<...>`).

  StatusOr<const VAttr*> sdy_attr(ByteCursor& c, std::string_view what) {
    PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* a, attr(c));
    if (a->kind != VAttr::Kind::kSdy && a->kind != VAttr::Kind::kString && a->kind != VAttr::Kind::kFlatSymbol)
      return c.error(str_cat("a Shardy ", what, " that is not a Shardy attribute"));
    return a;
  }
  StatusOr<std::string> sdy_words(ByteCursor& c, std::string_view what, std::string_view sep) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count(what));
    std::string out;
    for (std::uint64_t k = 0; k < n; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* a, sdy_attr(c, what));
      out += str_cat(k ? sep : "", a->kind == VAttr::Kind::kString ? vhlo_internal::mlir_quoted(a->text) : a->word);
    }
    return out;
  }

  StatusOr<VAttr> decode_sdy_attr(ByteCursor& c) {
    using vhlo_internal::mlir_quoted;
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t code, c.varint());
    VAttr a;
    a.kind = VAttr::Kind::kSdy;
    switch (code) {
      case 0: {  // manual axes: {"a", "b"}
        PJRT_LITE_ASSIGN_OR_RETURN(std::string axes, sdy_words(c, "manual axes", ", "));
        a.word = str_cat("{", axes, "}");
        a.text = str_cat("#sdy<manual_axes", a.word, ">");
        return a;
      }
      case 1: {  // mesh axis: "a"=2
        PJRT_LITE_ASSIGN_OR_RETURN(std::string_view name, f_.string(c));
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t size, c.signed_varint());
        a.word = str_cat(mlir_quoted(name), "=", size);
        a.text = a.word;
        return a;
      }
      case 2: {  // mesh: <["a"=2, "b"=4], device_ids=[...]>
        PJRT_LITE_ASSIGN_OR_RETURN(std::string axes, sdy_words(c, "mesh axes", ", "));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> ids, signed_list(c));
        a.word = str_cat("<[", axes, "]");
        if (!ids.empty()) {
          a.word += ", device_ids=[";
          for (std::size_t k = 0; k < ids.size(); ++k) a.word += str_cat(k ? ", " : "", ids[k]);
          a.word += "]";
        }
        a.word += ">";
        a.text = str_cat("#sdy.mesh", a.word);
        return a;
      }
      case 3: {  // sub-axis: (pre_size)size
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t pre, c.signed_varint());
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t size, c.signed_varint());
        a.word = str_cat("(", pre, ")", size);
        a.text = a.word;
        return a;
      }
      case 4: {  // axis reference: "a" or "a":(1)2
        PJRT_LITE_ASSIGN_OR_RETURN(std::string_view name, f_.string(c));
        PJRT_LITE_ASSIGN_OR_RETURN(auto sub, c.varint_with_flag());
        a.word = mlir_quoted(name);
        if (sub.second) {
          if (sub.first >= f_.attributes.size()) return c.error(str_cat("attribute index ", sub.first, " is out of range"));
          PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* info, attr_at(static_cast<std::size_t>(sub.first)));
          a.word += str_cat(":", info->word);
        } else if (sub.first != 0) {
          return c.error("an absent sub-axis with a nonzero index");
        }
        a.text = a.word;
        return a;
      }
      case 5: {  // dimension sharding: {"a", "b"}, {"a", ?} when open, p<N> for a priority
        PJRT_LITE_ASSIGN_OR_RETURN(std::string axes, sdy_words(c, "dimension axes", ", "));
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t closed, c.byte());
        if (closed > 1) return c.error(str_cat("a boolean of value ", static_cast<int>(closed)));
        PJRT_LITE_ASSIGN_OR_RETURN(auto priority, c.varint_with_flag());
        a.word = str_cat("{", axes, closed ? "" : (axes.empty() ? "?" : ", ?"), "}");
        if (priority.second) a.word += str_cat("p", priority.first);
        a.text = a.word;
        return a;
      }
      case 6:     // tensor sharding: mesh or its name, dimensions, replicated axes
      case 15:    // ... and unreduced axes
      case 17: {  // ... and their reduction
        PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* mesh, sdy_attr(c, "sharding's mesh"));
        PJRT_LITE_ASSIGN_OR_RETURN(std::string dims, sdy_words(c, "dimension shardings", ", "));
        PJRT_LITE_ASSIGN_OR_RETURN(std::string replicated, sdy_words(c, "replicated axes", ", "));
        std::string unreduced;
        if (code != 6) {
          PJRT_LITE_ASSIGN_OR_RETURN(unreduced, sdy_words(c, "unreduced axes", ", "));
        }
        if (code == 17) PJRT_LITE_RETURN_IF_ERROR(c.signed_varint().status());
        std::string mesh_text;
        if (mesh->kind == VAttr::Kind::kFlatSymbol) mesh_text = str_cat("@", mesh->text);
        else if (mesh->kind == VAttr::Kind::kSdy) mesh_text = str_cat("mesh", mesh->word);
        else return c.error("a sharding's mesh is neither a mesh nor its name");
        a.word = str_cat("<", mesh_text, ", [", dims, "]");
        if (!replicated.empty()) a.word += str_cat(", replicated={", replicated, "}");
        if (!unreduced.empty()) a.word += str_cat(", unreduced={", unreduced, "}");
        a.word += ">";
        a.text = str_cat("#sdy.sharding", a.word);
        return a;
      }
      case 7:
      case 16: {  // per-value shardings: [<...>, <...>]
        PJRT_LITE_ASSIGN_OR_RETURN(std::string list, sdy_words(c, "shardings", ", "));
        a.word = str_cat("[", list, "]");
        a.text = str_cat("#sdy.sharding_per_value<", a.word, ">");
        return a;
      }
      default: {
        // Sharding rules, axis lists and all-to-all parameters: partitioner hints and the
        // attributes of Shardy's collectives, which no op read here takes. Kept undecoded;
        // an op that needs one is refused naming it.
        a.kind = VAttr::Kind::kOther;
        a.text = str_cat("portable artifact: a Shardy attribute (code ", code, ") is not supported");
        PJRT_LITE_RETURN_IF_ERROR(c.bytes(c.remaining()).status());
        return a;
      }
    }
  }

  StatusOr<VAttr> decode_attr(const BcEntry& e, ByteCursor& c) {
    if (!e.custom) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::string_view text, c.cstring());
      VAttr a;
      a.kind = VAttr::Kind::kOther;
      a.text = str_cat("portable artifact: the attribute '", text, "' is not supported");
      return a;
    }
    if (dialect(e) == "builtin") return decode_builtin_attr(c);
    if (dialect(e) == "sdy") return decode_sdy_attr(c);
    if (dialect(e) != "vhlo") {
      VAttr a;
      a.text = str_cat("portable artifact: an attribute of the ", dialect(e), " dialect is not supported");
      PJRT_LITE_RETURN_IF_ERROR(c.bytes(c.remaining()).status());
      return a;
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t code, c.varint());
    VAttr a;
    switch (code) {
      case 1: {
        a.kind = VAttr::Kind::kArray;
        PJRT_LITE_ASSIGN_OR_RETURN(a.items, attr_list(c));
        return a;
      }
      case 2: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, c.varint());
        if (v > 1) return c.error(str_cat("a boolean of value ", v));
        a.kind = VAttr::Kind::kBool;
        a.b = v == 1;
        return a;
      }
      case 3: {
        static constexpr std::string_view kWords[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
        return read_enum(c, "comparison_direction", kWords);
      }
      case 4: {
        static constexpr std::string_view kWords[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED",
                                                      "UNSIGNED"};
        return read_enum(c, "comparison_type", kWords);
      }
      case 5: {  // custom call API version: StableHLO spells it as an i32
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, c.varint());
        if (v > 4) return c.error(str_cat("custom call API version ", v, " is unknown"));
        a.kind = VAttr::Kind::kEnum;
        a.word = std::to_string(v);
        a.text = str_cat(v, " : i32");
        return a;
      }
      case 6:
        return dictionary(c);
      case 7: {
        static constexpr std::string_view kWords[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
        return read_enum(c, "fft_type", kWords);
      }
      case 8: {  // float: type, then the bit pattern as an integer of the type's width
        PJRT_LITE_ASSIGN_OR_RETURN(a.type, type(c));
        const int bits = a.type->element == "f64" ? 64 : a.type->element == "f32" || a.type->element == "tf32" ? 32
                       : a.type->element_bytes * 8;
        if (a.type->kind != VType::Kind::kElement || bits == 0)
          return c.error(str_cat("a float attribute of type ", a.type->text));
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t pattern, apint(c, a.type->element == "tf32" ? 19 : bits));
        a.kind = VAttr::Kind::kFloat;
        a.text = str_cat("0x", to_hex(pattern & (bits == 64 ? ~0ull : ((1ull << bits) - 1)), bits / 4, HexCase::kUpper),
                         " : ", a.type->text);
        return a;
      }
      case 9: return integer_attr(c, false);  // integer: type, then the value at the type's width
      case 10: {
        a.kind = VAttr::Kind::kOutputOperandAlias;
        PJRT_LITE_ASSIGN_OR_RETURN(a.ints, signed_list(c));
        PJRT_LITE_ASSIGN_OR_RETURN(a.i, c.signed_varint());
        PJRT_LITE_ASSIGN_OR_RETURN(a.ints2, signed_list(c));
        return a;
      }
      case 11: {
        static constexpr std::string_view kWords[] = {"DEFAULT", "HIGH", "HIGHEST"};
        return read_enum(c, "precision", kWords);
      }
      case 12: {
        static constexpr std::string_view kWords[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
        return read_enum(c, "rng_algorithm", kWords);
      }
      case 13: {
        static constexpr std::string_view kWords[] = {"", "UNIFORM", "NORMAL"};
        return read_enum(c, "rng_distribution", kWords);
      }
      case 14: {
        a.kind = VAttr::Kind::kString;
        PJRT_LITE_ASSIGN_OR_RETURN(std::string_view s, f_.string(c));
        a.text = std::string(s);
        return a;
      }
      case 15: return decode_tensor(c);
      case 16: {
        static constexpr std::string_view kWords[] = {"TRANSPOSE_INVALID", "NO_TRANSPOSE",
                                                      "TRANSPOSE", "ADJOINT"};
        return read_enum(c, "transpose", kWords);
      }
      case 17: {
        a.kind = VAttr::Kind::kType;
        PJRT_LITE_ASSIGN_OR_RETURN(a.type, type(c));
        return a;
      }
      case 18: {
        a.kind = VAttr::Kind::kTypeExtensions;
        PJRT_LITE_ASSIGN_OR_RETURN(a.ints, signed_list(c));
        return a;
      }
      case 19: {
        static constexpr std::string_view kWords[] = {"DEFAULT", "HIGHEST", "TOLERANCE"};
        PJRT_LITE_ASSIGN_OR_RETURN(VAttr m, read_enum(c, "result_accuracy_mode", kWords));
        m.text = str_cat("#stablehlo.result_accuracy_mode<", m.word, ">");
        return m;
      }
      case 20: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t atol, apint(c, 64));
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t rtol, apint(c, 64));
        PJRT_LITE_ASSIGN_OR_RETURN(a.i, c.signed_varint());
        PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* mode, attr(c));
        a.kind = VAttr::Kind::kResultAccuracy;
        a.atol = std::bit_cast<double>(atol);
        a.rtol = std::bit_cast<double>(rtol);
        a.word = mode->word;
        a.text = str_cat("#stablehlo.result_accuracy<atol = ", a.atol, ", rtol = ", a.rtol,
                         ", ulps = ", a.i, ", mode = ", mode->text, ">");
        return a;
      }
      default: {
        static constexpr std::string_view kSharding[] = {"#vhlo.sub_axis_info_v1", "#vhlo.axis_ref_v1",
                                                         "#vhlo.replica_group_mesh_axes_v1",
                                                         "#vhlo.mesh_axis_v1", "#vhlo.mesh_v1"};
        a.kind = VAttr::Kind::kOther;
        a.text = str_cat("portable artifact: ",
                         code >= 21 && code <= 25 ? std::string(kSharding[code - 21])
                                                  : str_cat("the VHLO attribute code ", code),
                         " is not supported");
        // Decoding stops here; the entry is refused where an op uses it.
        PJRT_LITE_RETURN_IF_ERROR(c.bytes(c.remaining()).status());
        return a;
      }
    }
  }

  StatusOr<VAttr> decode_tensor(ByteCursor& c) {
    VAttr a;
    a.kind = VAttr::Kind::kTensor;
    PJRT_LITE_ASSIGN_OR_RETURN(a.type, type(c));
    if (a.type->kind != VType::Kind::kTensor) return c.error(str_cat("a tensor attribute of type ", a.type->text));
    PJRT_LITE_ASSIGN_OR_RETURN(std::span<const std::uint8_t> blob, c.blob());
    const std::int64_t n = a.type->num_elements();
    if (n < 0) return c.error(str_cat("a tensor attribute of the dynamic type ", a.type->text));
    if (a.type->is_bool) {
      // Booleans come packed eight to a byte, or as one all-ones byte for a true splat.
      const std::size_t packed = static_cast<std::size_t>((n + 7) / 8);
      if (blob.size() == 1 && blob[0] == 0xFF) {
        a.raw = {1};
      } else if (blob.size() == packed && blob.size() != static_cast<std::size_t>(n)) {
        a.raw.resize(static_cast<std::size_t>(n));
        for (std::size_t k = 0; k < a.raw.size(); ++k) a.raw[k] = (blob[k / 8] >> (k % 8)) & 1;
      } else {
        a.raw.assign(blob.begin(), blob.end());
      }
    } else {
      a.raw.assign(blob.begin(), blob.end());
    }
    const std::size_t elem = static_cast<std::size_t>(a.type->element_bytes);
    if (elem == 0) return c.error(str_cat("a tensor attribute of type ", a.type->text));
    if (a.raw.size() != elem * static_cast<std::size_t>(n) && a.raw.size() != elem)
      return c.error(str_cat("a tensor attribute of type ", a.type->text, " has ", a.raw.size(),
                             " bytes of data"));
    return a;
  }

  const BcFile& f_;
  std::vector<std::optional<VAttr>> attrs_;
  std::vector<std::optional<VType>> types_;
  std::vector<std::uint8_t> attr_state_, type_state_;  // 0 unread, 1 being read, 2 read
  int depth_ = 0;
};

}  // namespace pjrt_lite::stablehlo::detail
