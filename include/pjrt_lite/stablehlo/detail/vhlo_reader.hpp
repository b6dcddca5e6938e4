#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/bytecode.hpp"
// A portable artifact's IR, walked op by op and written as StableHLO's generic text, which the
// text parser (parser.hpp) then reads: so the ops, their checks and everything after parsing
// are shared with the text path instead of implemented twice.
//
// Each VHLO op becomes the StableHLO op it versions (`vhlo.add_v1` is `stablehlo.add`,
// `vhlo.func_v1` is `func.func`, `vhlo.return_v1` returns from a function or a region), with
// its attributes upgraded to today's StableHLO the way VHLO's version rules do: the flattened
// dimension numbers of dot_general, gather, scatter and convolution become
// `#stablehlo.dot<...>` / `#stablehlo.gather<...>` / `#stablehlo.scatter<...>` /
// `#stablehlo.conv<...>`, i64 tensors of dimensions become `array<i64: ...>`, attributes
// whose value is the default (`compare_type NOTYPE`, a default result_accuracy, empty
// batching dimensions of pre-1.1 gathers and scatters) are left out, and symbols kept as
// strings (callee, decomposition, called_computations) become `@name`. The module's
// attributes and the functions' argument and result attributes are kept as text has them.
// Shardy's dialect, which JAX's sharded exports carry in its own bytecode encoding, is written
// in its pretty form: module-level `sdy.mesh`, `#sdy.sharding` attributes, and the ops
// sharding_constraint, reshard, manual_computation and return.
//
// Errors: a malformed file is INVALID_ARGUMENT naming the section and offset (from the
// ByteCursor); an op the parser's op table lacks, an attribute or type with no StableHLO
// spelling here, or a region with several blocks is UNIMPLEMENTED naming it. Such a refusal is
// kept per function (the rest of the file is still read), so a caller can tell which functions
// are affected; parse_portable_artifact refuses the module if any function is.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/detail/bytecode_reader.hpp"
#include "pjrt_lite/stablehlo/detail/module_reader.hpp"
#include "pjrt_lite/stablehlo/detail/op_table.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_ops.hpp"
#include "pjrt_lite/stablehlo/module.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// One function of an artifact as StableHLO text, or why it cannot be.
struct PortableFunction {
  std::string name;
  /// `func.func ... { ... }`, in the generic op form.
  std::string text;
  /// OK, or the first op, attribute or type of the function that has no StableHLO spelling
  /// here (UNIMPLEMENTED naming it).
  Status status;
  /// The functions it calls (callee names), for a caller that parses functions one by one.
  std::vector<std::string> callees;
};

/// A decoded artifact.
struct PortableProgram {
  std::string producer;  // "StableHLO_v1.20.0"
  VhloVersion version;   // parsed from the producer
  std::uint64_t bytecode_version = 0;
  std::vector<PortableFunction> functions;
  /// The module's attributes that have a StableHLO spelling (`mhlo.num_partitions = 2 : i32`,
  /// ...), comma-separated; the others do not change what the program computes.
  std::string module_attributes;
  /// Shardy's meshes, one `sdy.mesh @name = <[...]>` line each.
  std::string meshes;

  /// The whole module as text.
  [[nodiscard]] std::string module_text() const {
    std::string out = module_attributes.empty() ? "module {\n" : str_cat("module attributes {", module_attributes, "} {\n");
    out += meshes;
    for (const PortableFunction& f : functions) out += f.text;
    out += "}\n";
    return out;
  }
};

/// The version in a producer string "StableHLO_vMAJOR.MINOR.PATCH", or nullopt.
inline std::optional<VhloVersion> producer_version(std::string_view producer) {
  constexpr std::string_view kPrefix = "StableHLO_v";
  if (!producer.starts_with(kPrefix)) return std::nullopt;
  producer.remove_prefix(kPrefix.size());
  int parts[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    if (producer.empty() || producer[0] < '0' || producer[0] > '9') return std::nullopt;
    long v = 0;
    while (!producer.empty() && producer[0] >= '0' && producer[0] <= '9') {
      v = v * 10 + (producer[0] - '0');
      if (v > 1000000) return std::nullopt;
      producer.remove_prefix(1);
    }
    parts[k] = static_cast<int>(v);
    if (k < 2) {
      if (producer.empty() || producer[0] != '.') return std::nullopt;
      producer.remove_prefix(1);
    }
  }
  return VhloVersion{parts[0], parts[1], parts[2]};
}

inline std::string version_string(const VhloVersion& v) {
  return str_cat(v.major, ".", v.minor, ".", v.patch);
}

namespace vhlo_internal {

/// A dictionary key: bare when it is an identifier, quoted otherwise.
inline std::string key_text(std::string_view k) {
  bool bare = !k.empty() && (std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_');
  for (char ch : k)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '$')) bare = false;
  return bare ? std::string(k) : mlir_quoted(k);
}

inline Status unsupported(std::string_view what) {
  return unimplemented_error(str_cat(what, " is not supported"));
}

/// The longest attribute spelling written: an attribute shared many times over (arrays of
/// arrays of one another) could otherwise spell out to more than memory holds.
inline constexpr std::size_t kMaxAttrText = std::size_t{1} << 24;

inline Status too_long() {
  return invalid_argument_error(
      str_cat("portable artifact: an attribute's StableHLO spelling exceeds ", kMaxAttrText, " bytes"));
}

/// The integers of a rank-0/1 integer tensor attribute or an array of integer attributes.
inline StatusOr<std::vector<std::int64_t>> int_list(const VAttr* a, std::string_view key) {
  std::vector<std::int64_t> out;
  if (a->kind == VAttr::Kind::kTensor && a->type->is_int && a->type->dims.size() <= 1) {
    const std::size_t w = static_cast<std::size_t>(a->type->element_bytes);
    const std::int64_t n = a->type->num_elements();
    if (n > static_cast<std::int64_t>(kMaxAttrText / 2)) return too_long();  // a splat of a huge tensor
    for (std::int64_t k = 0; k < n; ++k) {
      const std::size_t at = a->raw.size() == w ? 0 : static_cast<std::size_t>(k) * w;
      std::uint64_t v = 0;
      for (std::size_t b = 0; b < w; ++b) v |= static_cast<std::uint64_t>(a->raw[at + b]) << (8 * b);
      if (w < 8 && !a->type->is_unsigned && ((v >> (8 * w - 1)) & 1)) v |= ~0ull << (8 * w);
      out.push_back(static_cast<std::int64_t>(v));
    }
    return out;
  }
  if (a->kind == VAttr::Kind::kArray) {
    for (const VAttr* item : a->items) {
      if (item->kind != VAttr::Kind::kInteger)
        return unimplemented_error(str_cat("the attribute ", key, " is not a list of integers"));
      out.push_back(item->i);
    }
    return out;
  }
  return unimplemented_error(str_cat("the attribute ", key, " is not a list of integers"));
}

inline std::string ints_text(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t k = 0; k < v.size(); ++k) out += str_cat(k ? ", " : "", v[k]);
  return out + "]";
}

inline std::string array_text(const std::vector<std::int64_t>& v) {
  if (v.empty()) return "array<i64>";
  std::string out = "array<i64: ";
  for (std::size_t k = 0; k < v.size(); ++k) out += str_cat(k ? ", " : "", v[k]);
  return out + ">";
}

/// The StableHLO spelling of an attribute value.
inline StatusOr<std::string> attr_text(const VAttr* a, bool dense = false) {
  using K = VAttr::Kind;
  switch (a->kind) {
    case K::kArray: {
      std::string out = "[";
      for (std::size_t k = 0; k < a->items.size(); ++k) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::string item, attr_text(a->items[k]));
        out += str_cat(k ? ", " : "", item);
        if (out.size() > kMaxAttrText) return too_long();
      }
      return out + "]";
    }
    case K::kBool: return std::string(a->b ? "true" : "false");
    case K::kEnum:
    case K::kFloat:
    case K::kInteger:
    case K::kResultAccuracy: return a->text;
    case K::kDict: {
      std::string out = "{";
      for (std::size_t k = 0; k + 1 < a->items.size(); k += 2) {
        if (a->items[k]->kind != K::kString) return unsupported("a dictionary key that is not a string");
        PJRT_LITE_ASSIGN_OR_RETURN(std::string value, attr_text(a->items[k + 1]));
        out += str_cat(k ? ", " : "", key_text(a->items[k]->text), " = ", value);
        if (out.size() > kMaxAttrText) return too_long();
      }
      return out + "}";
    }
    case K::kString: return mlir_quoted(a->text);
    case K::kTensor: {
      const VType& t = *a->type;
      if (!dense && t.is_int && !t.is_bool && t.element == "i64" && t.dims.size() == 1) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> v, int_list(a, "tensor"));
        return array_text(v);
      }
      if (!dense && t.is_bool && t.dims.size() == 1) {  // today's StableHLO keeps flags as array<i1>
        const std::int64_t n = t.num_elements();
        if (n > static_cast<std::int64_t>(kMaxAttrText / 8)) return too_long();
        std::string out = n == 0 ? "array<i1" : "array<i1: ";
        for (std::int64_t k = 0; k < n; ++k)
          out += str_cat(k ? ", " : "", a->raw[a->raw.size() == 1 ? 0 : static_cast<std::size_t>(k)] ? "true" : "false");
        return out + ">";
      }
      if (a->raw.empty()) return str_cat("dense<> : ", t.text);
      std::string out = "dense<\"0x";
      for (std::uint8_t byte : a->raw) append_hex(out, byte, 2, HexCase::kUpper);
      return str_cat(out, "\"> : ", t.text);
    }
    case K::kType: return a->type->text;
    case K::kOutputOperandAlias:
      return str_cat("#stablehlo.output_operand_alias<output_tuple_indices = ", ints_text(a->ints),
                     ", operand_index = ", a->i, ", operand_tuple_indices = ", ints_text(a->ints2), ">");
    case K::kFlatSymbol: return str_cat("@", a->text);
    case K::kUnit: return std::string("unit");
    case K::kSdy: return a->text;
    case K::kTypeExtensions: return unsupported("#vhlo.type_extensions_v1 outside a tensor type");
    case K::kOther: return unimplemented_error(a->text);
  }
  return unsupported("an attribute");
}

/// An op's attributes by name.
struct AttrMap {
  std::vector<std::pair<std::string, const VAttr*>> entries;
  [[nodiscard]] const VAttr* find(std::string_view key) const {
    for (const auto& [k, v] : entries)
      if (k == key) return v;
    return nullptr;
  }
};

/// Builds the `{...}` of a StableHLO op.
class AttrWriter {
 public:
  void add(std::string_view key, std::string value) {
    text_ += str_cat(text_.empty() ? "" : ", ", key_text(key), " = ", value);
  }
  Status add_attr(std::string_view key, const VAttr* a) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::string v, attr_text(a));
    add(key, std::move(v));
    return ok_status();
  }
  [[nodiscard]] std::string text() const { return text_.empty() ? "" : str_cat(" {", text_, "}"); }

 private:
  std::string text_;
};

inline StatusOr<std::vector<std::int64_t>> ints_of(const AttrMap& m, std::string_view key) {
  const VAttr* a = m.find(key);
  if (a == nullptr) return std::vector<std::int64_t>{};
  return int_list(a, key);
}

inline StatusOr<std::int64_t> int_of(const AttrMap& m, std::string_view key) {
  const VAttr* a = m.find(key);
  if (a == nullptr || a->kind != VAttr::Kind::kInteger)
    return unimplemented_error(str_cat("the attribute ", key, " is not an integer"));
  return a->i;
}

/// `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>` from VHLO's flattened fields.
inline StatusOr<std::string> conv_dimension_numbers(const AttrMap& m) {
  auto layout = [&](std::string_view batch, std::string_view feature, std::string_view spatial,
                    char batch_letter, char feature_letter) -> StatusOr<std::string> {
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t b, int_of(m, batch));
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t f, int_of(m, feature));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> s, ints_of(m, spatial));
    const std::int64_t rank = static_cast<std::int64_t>(s.size()) + 2;
    std::vector<std::string> slots(static_cast<std::size_t>(rank));
    auto put = [&](std::int64_t at, std::string v) -> Status {
      if (at < 0 || at >= rank || !slots[static_cast<std::size_t>(at)].empty())
        return invalid_argument_error(str_cat("portable artifact: convolution dimension ", at,
                                              " is out of range or used twice"));
      slots[static_cast<std::size_t>(at)] = std::move(v);
      return ok_status();
    };
    PJRT_LITE_RETURN_IF_ERROR(put(b, std::string(1, batch_letter)));
    PJRT_LITE_RETURN_IF_ERROR(put(f, std::string(1, feature_letter)));
    for (std::size_t k = 0; k < s.size(); ++k) PJRT_LITE_RETURN_IF_ERROR(put(s[k], std::to_string(k)));
    std::string out = "[";
    for (std::size_t k = 0; k < slots.size(); ++k) out += str_cat(k ? ", " : "", slots[k]);
    return out + "]";
  };
  PJRT_LITE_ASSIGN_OR_RETURN(std::string in, layout("input_batch_dimension", "input_feature_dimension",
                                                    "input_spatial_dimensions", 'b', 'f'));
  PJRT_LITE_ASSIGN_OR_RETURN(std::string kernel,
                             layout("kernel_output_feature_dimension", "kernel_input_feature_dimension",
                                    "kernel_spatial_dimensions", 'o', 'i'));
  PJRT_LITE_ASSIGN_OR_RETURN(std::string out, layout("output_batch_dimension", "output_feature_dimension",
                                                     "output_spatial_dimensions", 'b', 'f'));
  return str_cat("#stablehlo.conv<", in, "x", kernel, "->", out, ">");
}

/// `#WHAT<field = [..], ..., index_vector_dim = n>` from the listed fields of `m`.
inline StatusOr<std::string> struct_attr(const AttrMap& m, std::string_view what,
                                         std::initializer_list<std::string_view> lists) {
  std::string out = str_cat("#stablehlo.", what, "<");
  bool first = true;
  for (std::string_view key : lists) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> v, ints_of(m, key));
    if (v.empty()) continue;
    out += str_cat(first ? "" : ", ", key, " = ", ints_text(v));
    first = false;
  }
  if (m.find("index_vector_dim")) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t d, int_of(m, "index_vector_dim"));
    out += str_cat(first ? "" : ", ", "index_vector_dim = ", d);
  }
  return out + ">";
}

/// Whether `a` is a result_accuracy with its default value.
inline bool default_accuracy(const VAttr* a) {
  return a->kind == VAttr::Kind::kResultAccuracy && a->word == "DEFAULT" && a->atol == 0 &&
         a->rtol == 0 && a->i == 0;
}

/// The StableHLO attribute dictionary of the VHLO op `op` (its name without the version).
inline StatusOr<std::string> stablehlo_attributes(std::string_view op, const AttrMap& m) {
  AttrWriter w;
  std::vector<std::string_view> done;
  auto take = [&](std::string_view key) { done.push_back(key); };
  if (op == "dot_general") {
    PJRT_LITE_ASSIGN_OR_RETURN(std::string dn,
                               struct_attr(m, "dot", {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                                      "lhs_contracting_dimensions",
                                                      "rhs_contracting_dimensions"}));
    w.add("dot_dimension_numbers", dn);
    for (std::string_view k : {"lhs_batching_dimensions", "rhs_batching_dimensions",
                               "lhs_contracting_dimensions", "rhs_contracting_dimensions"})
      take(k);
    // An algorithm is present when its precision types are (VHLO keeps none_v1 otherwise).
    const VAttr* lhs_type = m.find("lhs_precision_type");
    if (lhs_type != nullptr) {
      const bool none = lhs_type->kind == VAttr::Kind::kType && lhs_type->type->element == "none";
      if (!none) {
        std::string alg = "#stablehlo.dot_algorithm<";
        bool first = true;
        for (std::string_view k : {"lhs_precision_type", "rhs_precision_type", "accumulation_type",
                                   "lhs_component_count", "rhs_component_count",
                                   "num_primitive_operations", "allow_imprecise_accumulation"}) {
          const VAttr* a = m.find(k);
          if (a == nullptr) continue;
          PJRT_LITE_ASSIGN_OR_RETURN(std::string v, attr_text(a));
          if (a->kind == VAttr::Kind::kInteger) v = std::to_string(a->i);
          alg += str_cat(first ? "" : ", ", k, " = ", v);
          first = false;
        }
        w.add("algorithm", alg + ">");
      }
      for (std::string_view k : {"lhs_precision_type", "rhs_precision_type", "accumulation_type",
                                 "lhs_component_count", "rhs_component_count",
                                 "num_primitive_operations", "allow_imprecise_accumulation"})
        take(k);
    }
  } else if (op == "gather" || op == "dynamic_gather") {
    PJRT_LITE_ASSIGN_OR_RETURN(
        std::string dn, struct_attr(m, "gather", {"offset_dims", "collapsed_slice_dims",
                                                  "operand_batching_dims", "start_indices_batching_dims",
                                                  "start_index_map"}));
    w.add("dimension_numbers", dn);
    for (std::string_view k : {"offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                               "start_indices_batching_dims", "start_index_map", "index_vector_dim"})
      take(k);
  } else if (op == "scatter") {
    PJRT_LITE_ASSIGN_OR_RETURN(
        std::string dn,
        struct_attr(m, "scatter", {"update_window_dims", "inserted_window_dims", "input_batching_dims",
                                   "scatter_indices_batching_dims", "scatter_dims_to_operand_dims"}));
    w.add("scatter_dimension_numbers", dn);
    for (std::string_view k : {"update_window_dims", "inserted_window_dims", "input_batching_dims",
                               "scatter_indices_batching_dims", "scatter_dims_to_operand_dims",
                               "index_vector_dim"})
      take(k);
  } else if (op == "convolution" || op == "dynamic_conv") {
    PJRT_LITE_ASSIGN_OR_RETURN(std::string dn, conv_dimension_numbers(m));
    w.add("dimension_numbers", dn);
    for (std::string_view k :
         {"input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions",
          "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions",
          "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions"})
      take(k);
    // dynamic_conv_v1's padding attribute became an operand in v2; StableHLO has no attribute.
    if (op == "dynamic_conv") take("padding");
  } else if (op == "compare") {
    const VAttr* t = m.find("compare_type");
    if (t != nullptr && t->kind == VAttr::Kind::kEnum && t->word == "NOTYPE") take("compare_type");
  } else if (op == "call") {
    const VAttr* callee = m.find("callee");
    if (callee == nullptr || callee->kind != VAttr::Kind::kString)
      return unsupported("a vhlo.call_v1 without a callee string");
    w.add("callee", str_cat("@", callee->text));
    take("callee");
  } else if (op == "composite") {
    const VAttr* d = m.find("decomposition");
    if (d == nullptr || d->kind != VAttr::Kind::kString)
      return unsupported("a vhlo.composite without a decomposition");
    w.add("decomposition", str_cat("@", d->text));
    take("decomposition");
    if (const VAttr* v = m.find("version"); v != nullptr && v->kind == VAttr::Kind::kInteger) {
      w.add("version", str_cat(v->i, " : i32"));
      take("version");
    }
    if (const VAttr* a = m.find("composite_attributes"); a != nullptr && a->items.empty())
      take("composite_attributes");
  } else if (op == "custom_call") {
    if (const VAttr* c = m.find("called_computations"); c != nullptr && c->kind == VAttr::Kind::kArray) {
      if (!c->items.empty()) {
        std::string list = "[";
        for (std::size_t k = 0; k < c->items.size(); ++k) {
          if (c->items[k]->kind != VAttr::Kind::kString) return unsupported("a called computation that is not a name");
          list += str_cat(k ? ", " : "", "@", c->items[k]->text);
        }
        w.add("called_computations", list + "]");
      }
      take("called_computations");
    }
    for (std::string_view k : {"operand_layouts", "result_layouts", "output_operand_aliases", "result_tilings"})
      if (const VAttr* a = m.find(k); a != nullptr && a->kind == VAttr::Kind::kArray && a->items.empty())
        take(k);
  }
  if (const VAttr* a = m.find("result_accuracy"); a != nullptr && default_accuracy(a)) take("result_accuracy");
  for (const auto& [key, value] : m.entries) {
    if (std::find(done.begin(), done.end(), key) != done.end()) continue;
    // Shardy's annotations of an op (sdy.sharding_rule on a custom call, sdy.sharding): hints
    // for a partitioner, in Shardy's own bytecode encoding, which is not decoded here.
    if (std::string_view(key).starts_with("sdy.")) continue;
    // A constant's value stays a tensor; lists of dimensions and flags become arrays.
    StatusOr<std::string> v = attr_text(value, key == "value");
    if (!v.ok()) return unimplemented_error(str_cat("the attribute ", key, ": ", v.status().message()));
    w.add(key, *v);
  }
  return w.text();
}

/// `k = v, ...` for the entries of `m` that have a StableHLO spelling, in order; the others
/// (attributes of dialects the text parser does not read) are left out.
inline std::string dictionary_text(const AttrMap& m) {
  std::string out;
  for (const auto& [key, value] : m.entries) {
    StatusOr<std::string> v = attr_text(value);
    if (!v.ok()) continue;
    out += str_cat(out.empty() ? "" : ", ", key_text(key), " = ", *v);
  }
  return out;
}

/// The properties of the Shardy ops read here, in the order MLIR writes them (by name).
inline const std::string_view* sdy_op_properties(std::string_view op) {
  static constexpr std::string_view kOps[][2] = {
      {"mesh", "mesh sym_name"},
      {"sharding_constraint", "sharding"},
      {"reshard", "sharding"},
      {"manual_computation", "in_shardings manual_axes out_shardings"},
      {"return", ""},
  };
  for (const auto& entry : kOps)
    if (entry[0] == op) return &entry[1];
  return nullptr;
}

}  // namespace vhlo_internal

/// Walks the IR section of a bytecode file holding VHLO and writes each function as text.
class VhloReader {
 public:
  explicit VhloReader(const BcFile& f) : f_(f), tables_(f) {}

  StatusOr<PortableProgram> read() {
    PortableProgram p;
    p.producer = std::string(f_.producer);
    p.bytecode_version = f_.version;
    ByteCursor c = f_.ir;
    // The IR section is one block without arguments holding the module op.
    PJRT_LITE_ASSIGN_OR_RETURN(auto header, c.varint_with_flag());
    if (header.second) return c.error("the top-level block has arguments");
    if (header.first != 1) return c.error(str_cat("expected one top-level op, found ", header.first));
    Scope top;
    top.id = next_scope_++;
    PJRT_LITE_ASSIGN_OR_RETURN(RawOp module, read_op_header(c, top));
    if (module.name->full != "builtin.module")
      return c.error(str_cat("the top-level op is ", module.name->full, ", not builtin.module"));
    if (module.num_regions != 1) return c.error("the module has no region");
    ByteCursor body = c;
    if (f_.version >= 2 && module.isolated) {
      PJRT_LITE_ASSIGN_OR_RETURN(auto sec, c.section());
      if (sec.first != static_cast<std::uint8_t>(BcSection::kIR)) return c.error("expected an IR section for the module");
      body = sec.second;
    }
    Scope scope;
    scope.id = next_scope_++;
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t blocks, body.count("blocks"));
    if (blocks != 1) return body.error("the module's region must hold one block");
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t values, body.count("values"));
    PJRT_LITE_RETURN_IF_ERROR(scope.push(body, values));
    PJRT_LITE_ASSIGN_OR_RETURN(auto bh, body.varint_with_flag());
    if (bh.second) return body.error("the module's block has arguments");
    if (bh.first > body.remaining()) return body.error("more ops than bytes");
    p.module_attributes = vhlo_internal::dictionary_text(module.attrs);
    for (std::uint64_t k = 0; k < bh.first; ++k) {
      PortableFunction fn;
      PJRT_LITE_ASSIGN_OR_RETURN(RawOp op, read_op_header(body, scope));
      if (op.name->full == "sdy.mesh") {  // Shardy's device mesh: `sdy.mesh @name = <[...]>`
        const VAttr* name = op.attrs.find("sym_name");
        const VAttr* mesh = op.attrs.find("mesh");
        if (name == nullptr || name->kind != VAttr::Kind::kString || mesh == nullptr || mesh->kind != VAttr::Kind::kSdy)
          return body.error("an sdy.mesh without its name or mesh");
        if (op.num_regions != 0) return body.error("an sdy.mesh with regions");
        p.meshes += str_cat("  sdy.mesh @", vhlo_internal::key_text(name->text), " = ", mesh->word, "\n");
        continue;
      }
      if (op.name->full != "vhlo.func_v1")
        return body.error(str_cat("a module-level op other than vhlo.func_v1 or sdy.mesh: ", op.name->full));
      PJRT_LITE_RETURN_IF_ERROR(read_function(body, scope, op, fn));
      p.functions.push_back(std::move(fn));
    }
    if (!body.empty()) return body.error("unexpected bytes after the module");
    return p;
  }

 private:
  /// The values of one isolated region tree, numbered in definition order.
  struct Scope {
    std::uint32_t id = 0;
    std::vector<const VType*> types;
    std::vector<std::size_t> next;  // per open region: the next value id it defines
    std::vector<std::size_t> sizes;

    Status push(const ByteCursor& c, std::uint64_t n) {
      if (n > (std::uint64_t{1} << 24) || types.size() + n > (std::size_t{1} << 24))
        return c.error(str_cat("a region defines ", n, " values, more than this reader allows"));
      next.push_back(types.size());
      sizes.push_back(static_cast<std::size_t>(n));
      types.resize(types.size() + static_cast<std::size_t>(n), nullptr);
      aliases.resize(types.size());
      return ok_status();
    }
    void pop() {
      types.resize(types.size() - sizes.back());
      aliases.resize(types.size());
      sizes.pop_back();
      next.pop_back();
    }
    /// Defines the next value of the innermost region; returns its id.
    StatusOr<std::size_t> define(const ByteCursor& c, const VType* t) {
      if (next.empty() || next.back() >= types.size())
        return c.error("more values are defined than the region declares");
      types[next.back()] = t;
      return next.back()++;
    }
    [[nodiscard]] std::string name(std::size_t value) const {
      if (value < aliases.size() && !aliases[value].empty()) return aliases[value];
      return str_cat("%v", id, "_", value);
    }
    /// Values that are another under a second name (unrealized_conversion_cast's results).
    std::vector<std::string> aliases;
  };

  struct RawOp {
    const BcOpName* name = nullptr;
    std::size_t offset = 0;
    vhlo_internal::AttrMap attrs;
    std::vector<const VType*> results;
    std::vector<std::size_t> operands;
    std::uint64_t num_regions = 0;
    bool isolated = false;
    Status mapping;  // an attribute that could not be decoded for this op
  };

  StatusOr<RawOp> read_op_header(ByteCursor& c, Scope& scope) {
    RawOp op;
    op.offset = c.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t name, c.varint());
    if (name >= f_.op_names.size()) return c.error(str_cat("op name index ", name, " is out of range"));
    op.name = &f_.op_names[static_cast<std::size_t>(name)];
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t mask, c.byte());
    if (mask & 0x80) return c.error(str_cat("unknown bits in the op encoding mask 0x", to_hex(mask, 2)));
    PJRT_LITE_RETURN_IF_ERROR(c.varint().status());  // the location, never decoded
    if (mask & 0x01) {  // an attribute dictionary
      PJRT_LITE_ASSIGN_OR_RETURN(const VAttr* dict, tolerate(tables_.attr(c), op.mapping));
      if (dict->kind != VAttr::Kind::kDict && dict != &placeholder_attr_)
        return c.error("an op's attributes are not a dictionary");
      for (std::size_t k = 0; k + 1 < dict->items.size(); k += 2) {
        if (dict->items[k]->kind != VAttr::Kind::kString) return c.error("an attribute name is not a string");
        op.attrs.entries.emplace_back(dict->items[k]->text, dict->items[k + 1]);
      }
    }
    if (mask & 0x40) {  // properties
      if (f_.version < 5) return c.error("properties in a file older than format 5");
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t index, c.varint());
      if (index >= f_.properties.size()) return c.error(str_cat("properties index ", index, " is out of range"));
      PJRT_LITE_RETURN_IF_ERROR(read_properties(f_.properties[static_cast<std::size_t>(index)], op));
    }
    if (mask & 0x02) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("results"));
      for (std::uint64_t k = 0; k < n; ++k) {
        PJRT_LITE_ASSIGN_OR_RETURN(const VType* t, tolerate(tables_.type(c), op.mapping));
        op.results.push_back(t);
      }
    }
    if (mask & 0x04) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("operands"));
      for (std::uint64_t k = 0; k < n; ++k) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, c.varint());
        if (v >= scope.types.size() || scope.types[static_cast<std::size_t>(v)] == nullptr)
          return c.error(str_cat("operand ", k, " of ", op.name->full, " refers to value ", v,
                                 ", which is not defined before it"));
        op.operands.push_back(static_cast<std::size_t>(v));
      }
    }
    if (mask & 0x08) return unimplemented_error(str_cat("portable artifact: ", op.name->full, " with successors (several blocks) is not supported"));
    if (mask & 0x20) {  // use-list orders: read and dropped, they do not change the program
      if (f_.version < 3) return c.error("use-list orders in a file older than format 3");
      PJRT_LITE_RETURN_IF_ERROR(skip_use_lists(c, op.results.size()));
    }
    if (mask & 0x10) {
      PJRT_LITE_ASSIGN_OR_RETURN(auto r, c.varint_with_flag());
      if (r.first > 64) return c.error(str_cat(op.name->full, " has ", r.first, " regions"));
      op.num_regions = r.first;
      op.isolated = r.second;
    }
    for (const VType* t : op.results) PJRT_LITE_RETURN_IF_ERROR(scope.define(c, t).status());
    return op;
  }

  static Status skip_use_lists(ByteCursor& c, std::size_t values) {
    std::uint64_t n = 1;
    if (values > 1) {
      PJRT_LITE_ASSIGN_OR_RETURN(n, c.count("use lists"));
    }
    for (std::uint64_t k = 0; k < n; ++k) {
      if (values > 1) PJRT_LITE_RETURN_IF_ERROR(c.varint().status());
      PJRT_LITE_ASSIGN_OR_RETURN(auto m, c.varint_with_flag());
      if (m.first > c.remaining()) return c.error("a use list longer than the data");
      for (std::uint64_t i = 0; i < m.first; ++i) PJRT_LITE_RETURN_IF_ERROR(c.varint().status());
    }
    return ok_status();
  }

  /// A VHLO op's properties: its attributes in the order of the op table, one attribute
  /// index each (VHLO's attributes are all required).
  Status read_properties(ByteCursor c, RawOp& op) {
    if (op.name->full == "builtin.module") return ok_status();  // a name, a visibility: unused
    std::string_view names;
    if (f_.dialects[op.name->dialect] == "sdy") {
      const std::string_view* known = vhlo_internal::sdy_op_properties(op.name->name);
      if (known == nullptr) return ok_status();  // refused where the op is mapped
      names = *known;
    } else {
      const VhloOpInfo* info = f_.dialects[op.name->dialect] == "vhlo" ? find_vhlo_op(op.name->name) : nullptr;
      if (info == nullptr) return ok_status();  // refused where the op is mapped
      names = info->attributes;
    }
    while (!names.empty()) {
      const std::size_t space = names.find(' ');
      const std::string_view key = names.substr(0, space);
      names = space == std::string_view::npos ? std::string_view() : names.substr(space + 1);
      StatusOr<const VAttr*> a = tables_.attr(c);
      if (!a.ok()) {
        if (a.status().code() == StatusCode::kUnimplemented) {
          if (op.mapping.ok()) op.mapping = a.status();
          continue;
        }
        return a.status();
      }
      op.attrs.entries.emplace_back(std::string(key), *a);
    }
    if (!c.empty()) return c.error(str_cat("the properties of ", op.name->full, " have more attributes than it takes"));
    return ok_status();
  }

  /// The state of the function being written: its first refusal and its callees.
  struct FnState {
    Status status;
    std::vector<std::string> callees;
    int depth = 0;
    void refuse(Status s) {
      if (status.ok()) status = std::move(s);
    }
  };

  Status read_function(ByteCursor& c, Scope& outer, RawOp& op, PortableFunction& out) {
    FnState fn;
    const VAttr* name = op.attrs.find("sym_name");
    const VAttr* type = op.attrs.find("function_type");
    const VAttr* visibility = op.attrs.find("sym_visibility");
    if (name == nullptr || name->kind != VAttr::Kind::kString)
      return c.error("a vhlo.func_v1 without its name");
    out.name = name->text;
    if (!op.mapping.ok()) fn.refuse(op.mapping);
    if (type != nullptr && type->kind == VAttr::Kind::kOther) {
      fn.refuse(unimplemented_error(type->text));
      type = &placeholder_function_;
    }
    if (type == nullptr || type->kind != VAttr::Kind::kType || type->type->kind != VType::Kind::kFunction) {
      if (fn.status.ok()) return c.error(str_cat("@", out.name, " has no function type"));
      type = &placeholder_function_;
    }
    const bool is_private = visibility != nullptr && visibility->kind == VAttr::Kind::kString &&
                            (visibility->text == "private" || visibility->text == "nested");
    const VType& ft = *type->type;
    // Argument and result attributes (shardings, memory kinds, layout modes), as in text.
    auto attrs_of = [&](std::string_view key, std::size_t k) -> std::string {
      const VAttr* list = op.attrs.find(key);
      if (list == nullptr || list->kind != VAttr::Kind::kArray || k >= list->items.size()) return "";
      const VAttr* dict = list->items[k];
      if (dict->kind != VAttr::Kind::kDict) return "";
      vhlo_internal::AttrMap m;
      for (std::size_t i = 0; i + 1 < dict->items.size(); i += 2)
        if (dict->items[i]->kind == VAttr::Kind::kString) m.entries.emplace_back(dict->items[i]->text, dict->items[i + 1]);
      const std::string text = vhlo_internal::dictionary_text(m);
      return text.empty() ? "" : str_cat(" {", text, "}");
    };
    std::string results;
    for (std::size_t k = 0; k < ft.results.size(); ++k)
      results += str_cat(k ? ", " : "", ft.results[k]->text, attrs_of("res_attrs", k));
    std::string head = str_cat("func.func ", is_private ? "private " : "", "@", out.name);
    if (op.num_regions != 1) return c.error("a vhlo.func_v1 without one region");
    std::vector<Region> regions;
    PJRT_LITE_RETURN_IF_ERROR(read_regions(c, outer, op, fn, regions, /*in_function=*/true));
    const Region& body = regions[0];
    if (body.blocks == 0) {  // a declaration
      std::string args;
      for (std::size_t k = 0; k < ft.inputs.size(); ++k) args += str_cat(k ? ", " : "", ft.inputs[k]->text);
      out.text = str_cat("  ", head, "(", args, ")", results.empty() ? "" : str_cat(" -> (", results, ")"), "\n");
    } else {
      if (body.args.size() != ft.inputs.size() && fn.status.ok())
        return c.error(str_cat("@", out.name, " has ", body.args.size(), " block arguments for ",
                               ft.inputs.size(), " inputs"));
      std::string args;
      for (std::size_t k = 0; k < body.args.size(); ++k)
        args += str_cat(k ? ", " : "", body.args[k], attrs_of("arg_attrs", k));
      out.text = str_cat("  ", head, "(", args, ")", results.empty() ? "" : str_cat(" -> (", results, ")"),
                         " {\n", body.ops, "  }\n");
    }
    out.status = fn.status;
    out.callees = std::move(fn.callees);
    return ok_status();
  }

  /// One region as text: its block arguments ("%v3_0: tensor<f32>") and its ops.
  struct Region {
    std::uint64_t blocks = 0;
    std::vector<std::string> args;
    std::string ops;
  };

  /// The regions of `op`, whose header has been read: inline, or for an isolated op in a
  /// section of their own (format 2 and later), with a scope of their own.
  Status read_regions(ByteCursor& c, Scope& scope, const RawOp& op, FnState& fn,
                      std::vector<Region>& out, bool in_function) {
    if (op.num_regions == 0) return ok_status();
    if (++fn.depth > 64) return c.error("regions nest more than 64 deep");
    ByteCursor section;
    ByteCursor* reader = &c;
    if (f_.version >= 2 && op.isolated) {
      PJRT_LITE_ASSIGN_OR_RETURN(auto sec, c.section());
      if (sec.first != static_cast<std::uint8_t>(BcSection::kIR))
        return c.error(str_cat("expected an IR section for the regions of ", op.name->full));
      section = sec.second;
      reader = &section;
    }
    Scope isolated;
    isolated.id = next_scope_++;
    Scope& inner = op.isolated ? isolated : scope;
    for (std::uint64_t r = 0; r < op.num_regions; ++r) {
      Region region;
      PJRT_LITE_RETURN_IF_ERROR(read_region(*reader, inner, fn, region, in_function));
      out.push_back(std::move(region));
    }
    if (reader == &section && !section.empty()) return section.error("unexpected bytes after the regions");
    --fn.depth;
    return ok_status();
  }

  Status read_region(ByteCursor& c, Scope& scope, FnState& fn, Region& out, bool in_function) {
    PJRT_LITE_ASSIGN_OR_RETURN(out.blocks, c.count("blocks"));
    if (out.blocks == 0) return ok_status();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t values, c.count("values"));
    PJRT_LITE_RETURN_IF_ERROR(scope.push(c, values));
    if (out.blocks > 1) fn.refuse(unimplemented_error("portable artifact: regions with several blocks are not supported"));
    for (std::uint64_t b = 0; b < out.blocks; ++b) {
      PJRT_LITE_ASSIGN_OR_RETURN(auto header, c.varint_with_flag());
      const std::uint64_t num_ops = header.first;
      if (num_ops > c.remaining()) return c.error(str_cat(num_ops, " ops cannot fit in the ", c.remaining(), " bytes left"));
      if (header.second) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("block arguments"));
        for (std::uint64_t k = 0; k < n; ++k) {
          const VType* t = nullptr;
          if (f_.version >= 4) {
            PJRT_LITE_ASSIGN_OR_RETURN(auto tl, c.varint_with_flag());
            PJRT_LITE_ASSIGN_OR_RETURN(t, tolerate(tables_.type_at_checked(c, tl.first), fn.status));
            if (tl.second) PJRT_LITE_RETURN_IF_ERROR(c.varint().status());
          } else {
            PJRT_LITE_ASSIGN_OR_RETURN(t, tolerate(tables_.type(c), fn.status));
            PJRT_LITE_RETURN_IF_ERROR(c.varint().status());
          }
          PJRT_LITE_ASSIGN_OR_RETURN(std::size_t id, scope.define(c, t));
          if (b == 0) out.args.push_back(str_cat(scope.name(id), ": ", t->text));
        }
        if (f_.version >= 3) {
          PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t has_orders, c.byte());
          if (has_orders) PJRT_LITE_RETURN_IF_ERROR(skip_use_lists(c, static_cast<std::size_t>(n)));
        }
      }
      for (std::uint64_t k = 0; k < num_ops; ++k) PJRT_LITE_RETURN_IF_ERROR(read_op(c, scope, fn, out.ops, in_function));
    }
    scope.pop();
    return ok_status();
  }

  /// One op inside a function, appended to `out` as a line of generic text.
  Status read_op(ByteCursor& c, Scope& scope, FnState& fn, std::string& out, bool in_function) {
    // Operand names and types are taken before the results are defined.
    PJRT_LITE_ASSIGN_OR_RETURN(ReadOp op, read_op_header_with_operands(c, scope));
    std::vector<Region> regions;
    PJRT_LITE_RETURN_IF_ERROR(read_regions(c, scope, op.raw, fn, regions, /*in_function=*/false));
    if (op.raw.name->full == "builtin.unrealized_conversion_cast" && op.raw.operands.size() == 1 &&
        op.raw.results.size() == 1 && regions.empty()) {
      // Between VHLO's types and the builtin types of another dialect's ops (Shardy's): the
      // same value when both spell the same type.
      if (op.operand_types[0] != op.raw.results[0]->text) {
        fn.refuse(unimplemented_error(str_cat("portable artifact: a conversion from ", op.operand_types[0], " to ",
                                              op.raw.results[0]->text)));
        return ok_status();
      }
      const std::size_t result = scope.next.back() - 1;
      scope.aliases[result] = op.operand_names[0];
      return ok_status();
    }
    if (!op.raw.mapping.ok()) {
      fn.refuse(op.raw.mapping);
      return ok_status();
    }
    StatusOr<std::string> line = op_text(op, regions, fn, in_function);
    if (!line.ok()) {
      if (line.status().code() != StatusCode::kUnimplemented) return line.status();
      fn.refuse(unimplemented_error(str_cat("portable artifact: ", op.raw.name->full, ": ",
                                            line.status().message())));
      return ok_status();
    }
    // The text grows with the file; a file whose attributes are shared by many ops could
    // otherwise spell out to far more than it holds.
    text_bytes_ += line->size();
    if (text_bytes_ > (std::size_t{1} << 20) + 64 * f_.file_size)
      return c.error("the program's StableHLO text grows far beyond the size of the file");
    out += *line;
    return ok_status();
  }

  struct ReadOp {
    RawOp raw;
    std::vector<std::string> operand_names, operand_types, result_names;
  };

  StatusOr<ReadOp> read_op_header_with_operands(ByteCursor& c, Scope& scope) {
    ReadOp op;
    const std::size_t first_result = scope.next.empty() ? 0 : scope.next.back();
    PJRT_LITE_ASSIGN_OR_RETURN(op.raw, read_op_header(c, scope));
    for (std::size_t v : op.raw.operands) {
      op.operand_names.push_back(scope.name(v));
      op.operand_types.push_back(scope.types[v]->text);
    }
    for (std::size_t k = 0; k < op.raw.results.size(); ++k) op.result_names.push_back(scope.name(first_result + k));
    return op;
  }

  StatusOr<std::string> op_text(const ReadOp& op, const std::vector<Region>& regions, FnState& fn,
                                bool in_function) {
    using vhlo_internal::unsupported;
    const BcOpName& name = *op.raw.name;
    if (f_.dialects[name.dialect] == "sdy") return sdy_op_text(op, regions);
    if (f_.dialects[name.dialect] != "vhlo") return unsupported(str_cat("the op ", name.full));
    const VhloOpInfo* info = find_vhlo_op(name.name);
    if (info == nullptr) return unsupported(str_cat("the op ", name.full, ", unknown to VHLO 1.20.0,"));
    std::string_view base = name.name.substr(0, name.name.rfind("_v"));
    std::string target;
    if (base == "return")
      target = in_function ? "func.return" : "stablehlo.return";
    else if (base == "call")
      target = "func.call";
    else
      target = str_cat("stablehlo.", base);
    const OpSyntax* syntax = find_op(target);
    // Ops the parser knows to be unsupported are left to it, so both paths refuse alike.
    if (syntax == nullptr && !is_known_unsupported_op(base)) return unsupported(target);
    PJRT_LITE_ASSIGN_OR_RETURN(std::string attrs, vhlo_internal::stablehlo_attributes(base, op.raw.attrs));
    if (base == "call") {
      if (const VAttr* callee = op.raw.attrs.find("callee")) fn.callees.push_back(callee->text);
    } else if (base == "composite") {
      if (const VAttr* d = op.raw.attrs.find("decomposition")) fn.callees.push_back(d->text);
    } else if (base == "custom_call") {
      if (const VAttr* cc = op.raw.attrs.find("called_computations"))
        for (const VAttr* item : cc->items) fn.callees.push_back(item->text);
    }
    std::string line = "    ";
    for (std::size_t k = 0; k < op.result_names.size(); ++k)
      line += str_cat(k ? ", " : "", op.result_names[k]);
    if (!op.result_names.empty()) line += " = ";
    line += str_cat("\"", target, "\"(");
    for (std::size_t k = 0; k < op.operand_names.size(); ++k) line += str_cat(k ? ", " : "", op.operand_names[k]);
    line += ")";
    if (!regions.empty()) {
      line += " (";
      for (std::size_t r = 0; r < regions.size(); ++r) {
        line += r ? ", {\n" : "{\n";
        if (!regions[r].args.empty()) {
          line += "    ^bb0(";
          for (std::size_t k = 0; k < regions[r].args.size(); ++k) line += str_cat(k ? ", " : "", regions[r].args[k]);
          line += "):\n";
        }
        line += regions[r].ops + "    }";
      }
      line += ")";
    }
    line += attrs;
    line += " : (";
    for (std::size_t k = 0; k < op.operand_types.size(); ++k) line += str_cat(k ? ", " : "", op.operand_types[k]);
    line += ") -> (";
    for (std::size_t k = 0; k < op.raw.results.size(); ++k) line += str_cat(k ? ", " : "", op.raw.results[k]->text);
    line += ")\n";
    return line;
  }

  /// Shardy's ops in the pretty form the text parser reads: sharding_constraint and reshard
  /// (`%r = sdy.sharding_constraint %x <@mesh, [...]> : T`), manual_computation with its
  /// body, and sdy.return. Shardy's other ops (its collectives, named computations,
  /// propagation barriers) are UNIMPLEMENTED naming them.
  StatusOr<std::string> sdy_op_text(const ReadOp& op, const std::vector<Region>& regions) const {
    using vhlo_internal::unsupported;
    const std::string_view name = op.raw.name->name;
    auto sdy_word = [&](std::string_view key) -> StatusOr<std::string> {
      const VAttr* a = op.raw.attrs.find(key);
      if (a == nullptr || a->kind != VAttr::Kind::kSdy)
        return unsupported(str_cat("sdy.", name, " without its ", key));
      return a->word;
    };
    auto joined = [](const std::vector<std::string>& v) {
      std::string out;
      for (std::size_t k = 0; k < v.size(); ++k) out += str_cat(k ? ", " : "", v[k]);
      return out;
    };
    std::vector<std::string> result_types;
    for (const VType* t : op.raw.results) result_types.push_back(t->text);
    std::string line = "    ";
    if (!op.result_names.empty()) line += str_cat(joined(op.result_names), " = ");
    if (name == "sharding_constraint" || name == "reshard") {
      if (op.operand_names.size() != 1 || op.raw.results.size() != 1)
        return unsupported(str_cat("sdy.", name, " without one operand and one result"));
      PJRT_LITE_ASSIGN_OR_RETURN(std::string sharding, sdy_word("sharding"));
      return str_cat(line, "sdy.", name, " ", op.operand_names[0], " ", sharding, " : ", result_types[0], "\n");
    }
    if (name == "return") {
      line += "sdy.return";
      if (!op.operand_names.empty()) line += str_cat(" ", joined(op.operand_names), " : ", joined(op.operand_types));
      return line + "\n";
    }
    if (name == "manual_computation") {
      if (regions.size() != 1) return unsupported("sdy.manual_computation without one region");
      PJRT_LITE_ASSIGN_OR_RETURN(std::string in, sdy_word("in_shardings"));
      PJRT_LITE_ASSIGN_OR_RETURN(std::string out, sdy_word("out_shardings"));
      PJRT_LITE_ASSIGN_OR_RETURN(std::string axes, sdy_word("manual_axes"));
      line += str_cat("sdy.manual_computation(", joined(op.operand_names), ") in_shardings=", in,
                      " out_shardings=", out, " manual_axes=", axes, " (", joined(regions[0].args), ") {\n",
                      regions[0].ops, "    } : (", joined(op.operand_types), ") -> (", joined(result_types), ")\n");
      return line;
    }
    return unsupported(str_cat("the op sdy.", name));
  }

  /// `t`, or for an UNIMPLEMENTED one a placeholder, with the refusal kept in `refusal`: the
  /// bytes around it are still read, so the rest of the file stays in step.
  template <class T>
  StatusOr<const T*> tolerate(StatusOr<const T*> t, Status& refusal) {
    if (t.ok() || t.status().code() != StatusCode::kUnimplemented) return t;
    if (refusal.ok()) refusal = t.status();
    if constexpr (std::is_same_v<T, VType>)
      return &placeholder_type_;
    else
      return &placeholder_attr_;
  }

  const BcFile& f_;
  VhloTables tables_;
  std::uint32_t next_scope_ = 0;
  std::size_t text_bytes_ = 0;
  static VType make_type(VType::Kind kind, std::string text) {
    VType t;
    t.kind = kind;
    t.text = std::move(text);
    return t;
  }
  VType placeholder_type_ = make_type(VType::Kind::kOther, "none");
  VAttr placeholder_attr_;
  VType placeholder_function_type_ = make_type(VType::Kind::kFunction, "() -> ()");
  VAttr placeholder_function_ = [this] {
    VAttr a;
    a.kind = VAttr::Kind::kType;
    a.type = &placeholder_function_type_;
    return a;
  }();
};

/// Decodes a portable artifact into StableHLO text, function by function. INVALID_ARGUMENT
/// (naming the section and offset) for a malformed file; UNIMPLEMENTED for an artifact of a
/// StableHLO newer than kVhloMaxVersion (naming both versions). Functions that use what the
/// parser cannot read carry their refusal in PortableFunction::status. Thread-safe.
inline StatusOr<PortableProgram> read_portable_program(std::span<const std::uint8_t> bytes) {
  PJRT_LITE_ASSIGN_OR_RETURN(BcFile f, read_bytecode_file(bytes));
  const std::optional<VhloVersion> version = producer_version(f.producer);
  if (version && *version > kVhloMaxVersion)
    return unimplemented_error(str_cat("portable artifact: written by StableHLO ", version_string(*version),
                                       " (producer \"", f.producer, "\"), which is newer than ",
                                       version_string(kVhloMaxVersion), ", the newest version this reader knows"));
  if (version && *version < kVhloMinVersion)
    return unimplemented_error(str_cat("portable artifact: written by StableHLO ", version_string(*version),
                                       ", older than ", version_string(kVhloMinVersion),
                                       ", the first version with portable artifacts"));
  VhloReader reader(f);
  PJRT_LITE_ASSIGN_OR_RETURN(PortableProgram p, reader.read());
  if (version) p.version = *version;
  return p;
}

/// A portable artifact as a Module: decoded to text and parsed by the text parser, with
/// `arg_shapes` (when not null) refining the entry function as parse_module(text, shapes)
/// does. The first function's refusal refuses the module, as for text. Thread-safe.
inline StatusOr<Module> parse_portable_module(std::span<const std::uint8_t> bytes,
                                              const std::vector<Shape>* arg_shapes = nullptr,
                                              std::string_view entry = "main") {
  PJRT_LITE_ASSIGN_OR_RETURN(PortableProgram p, read_portable_program(bytes));
  for (const PortableFunction& f : p.functions)
    if (!f.status.ok()) return Status(f.status.code(), str_cat(f.status.message(), " (in @", f.name, ")"));
  const std::string text = p.module_text();
  StatusOr<Module> m = arg_shapes ? ModuleReader(text, entry, arg_shapes).parse() : ModuleReader(text).parse();
  if (!m.ok())
    return Status(m.status().code(),
                  str_cat("portable artifact (its program as StableHLO text): ", m.status().message()));
  return m;
}

}  // namespace pjrt_lite::stablehlo::detail
