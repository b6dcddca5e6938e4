#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/bytecode.hpp"
// Graph -> portable artifact: the program written as VHLO ops in MLIR's bytecode (format 6,
// the format of every StableHLO version from 0.15.0 on), for a chosen target version.
//
// Each op becomes the newest VHLO version of it that the target has, its attributes written
// as that version's properties (every one of them, defaults spelled out, in the alphabetical
// order MLIR writes them). An op whose attributes the target's version cannot hold (a
// gather with batching dimensions before 1.1.0), an op or element type the target lacks, and
// an op with no VHLO form are UNIMPLEMENTED naming the op and the version needed. CHLO's ops
// have none: top_k and erf are written as XLA's @mhlo.topk and @mhlo.erf custom calls and the
// others, on real floating-point values, as StableHLO ops (chlo_expansions.hpp), as JAX's
// serializer does; on complex values they are refused. The sections come in the order MLIR
// writes them (dialects, attribute/type offsets and data, IR, resources, strings, properties);
// strings, attributes, types and properties are stored once each. Locations are all
// UnknownLoc. Regions that use no value from outside are isolated (their own IR section and
// value numbering), as MLIR decides; case and if branches, which use the enclosing values,
// are written inline.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/chlo_expansions.hpp"
#include "pjrt_lite/stablehlo/detail/lapack_names.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_ops.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_reader.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// Bytes with MLIR bytecode's integer encodings.
class BcWriter {
 public:
  /// MLIR's prefix varint: the count of trailing zero bits of the first byte says how many
  /// more bytes follow.
  void varint(std::uint64_t v) {
    if (v < 0x80) {
      bytes_.push_back(static_cast<std::uint8_t>((v << 1) | 1));
      return;
    }
    for (int n = 2; n <= 8; ++n) {
      if (v >= (std::uint64_t{1} << (7 * n))) continue;
      const std::uint64_t encoded = (((v << 1) | 1) << (n - 1));
      for (int b = 0; b < n; ++b) bytes_.push_back(static_cast<std::uint8_t>(encoded >> (8 * b)));
      return;
    }
    bytes_.push_back(0);
    for (int b = 0; b < 8; ++b) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
  }
  void svarint(std::int64_t v) {
    varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void varint_flag(std::uint64_t v, bool flag) { varint((v << 1) | (flag ? 1 : 0)); }
  void byte(std::uint8_t b) { bytes_.push_back(b); }
  void append(const std::vector<std::uint8_t>& b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  void blob(const std::vector<std::uint8_t>& b) {
    varint(b.size());
    append(b);
  }
  /// A section: its id, its length, its body (never aligned: nothing here needs it).
  void section(std::uint8_t id, const std::vector<std::uint8_t>& body) {
    byte(id);
    blob(body);
  }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

/// "1.20.0" as a version, or INVALID_ARGUMENT.
inline StatusOr<VhloVersion> parse_vhlo_version(std::string_view text) {
  const auto v = producer_version(str_cat("StableHLO_v", text));
  if (!v || version_string(*v) != text)
    return invalid_argument_error(str_cat("portable artifact: \"", text, "\" is not a StableHLO version (such as 1.20.0)"));
  return *v;
}

class VhloWriter {
 public:
  explicit VhloWriter(VhloVersion target) : target_(target) {}

  StatusOr<std::vector<std::uint8_t>> write(const Graph& graph) {
    // CHLO's ops with a StableHLO form are written as it (chlo_expansions.hpp).
    std::optional<Graph> expanded;
    if (needs_chlo_expansion(graph)) {
      PJRT_LITE_ASSIGN_OR_RETURN(Graph e, expand_chlo(graph));
      expanded = std::move(e);
    }
    const Graph& g = expanded ? *expanded : graph;
    // Dialect 0 is builtin (the module), 1 is VHLO, as MLIR numbers them by first use.
    string_index("builtin");
    string_index("vhlo");
    unknown_loc_ = attr(kBuiltin, {0x1f});
    const std::uint64_t module_name = op_name(kBuiltin, "module");
    // The module's properties: no symbol name, no visibility.
    const std::uint64_t module_props = properties({0x01, 0x01});
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> func, function(g));
    BcWriter module_body;
    module_body.varint(1);  // one block
    module_body.varint(0);  // defining no values
    module_body.varint_flag(1, false);  // one op, no arguments
    module_body.append(func);
    BcWriter ir;
    ir.varint_flag(1, false);
    ir.varint(module_name);
    ir.byte(0x50);  // properties, regions
    ir.varint(unknown_loc_);
    ir.varint(module_props);
    ir.varint_flag(1, true);
    ir.section(4, module_body.bytes());

    BcWriter out;
    for (std::uint8_t b : {0x4D, 0x4C, 0xEF, 0x52}) out.byte(b);
    out.varint(6);
    for (char c : str_cat("StableHLO_v", version_string(target_))) out.byte(static_cast<std::uint8_t>(c));
    out.byte(0);
    out.section(1, dialect_section());
    std::vector<std::uint8_t> offsets, data;
    attr_type_sections(offsets, data);
    out.section(3, offsets);
    out.section(2, data);
    out.section(4, ir.bytes());
    out.section(6, {0x01});  // no external resource groups
    out.section(5, {});
    out.section(0, string_section());
    out.section(8, properties_section());
    return std::move(out.bytes());
  }

 private:
  static constexpr int kBuiltin = 0, kVhlo = 1;
  static constexpr VhloVersion kCurrent{99, 0, 0};

  /// An entry of the attribute or type table: its dialect and its encoding.
  struct Entry {
    int dialect;
    std::vector<std::uint8_t> bytes;
    friend bool operator<(const Entry& a, const Entry& b) {
      return std::tie(a.dialect, a.bytes) < std::tie(b.dialect, b.bytes);
    }
  };
  struct Table {
    std::vector<Entry> entries;
    std::map<Entry, std::uint64_t> index;
    std::uint64_t add(int dialect, std::vector<std::uint8_t> bytes) {
      Entry e{dialect, std::move(bytes)};
      const auto it = index.find(e);
      if (it != index.end()) return it->second;
      const std::uint64_t i = entries.size();
      index.emplace(e, i);
      entries.push_back(std::move(e));
      return i;
    }
  };

  std::uint64_t string_index(std::string_view s) {
    const auto it = string_ids_.find(std::string(s));
    if (it != string_ids_.end()) return it->second;
    const std::uint64_t i = strings_.size();
    strings_.emplace_back(s);
    string_ids_.emplace(std::string(s), i);
    return i;
  }
  std::uint64_t op_name(int dialect, std::string_view name) {
    const std::uint64_t s = string_index(name);
    for (std::size_t k = 0; k < op_names_.size(); ++k)
      if (op_names_[k] == std::pair<int, std::uint64_t>(dialect, s)) return k;
    op_names_.emplace_back(dialect, s);
    return op_names_.size() - 1;
  }
  std::uint64_t attr(int dialect, std::vector<std::uint8_t> bytes) { return attrs_.add(dialect, std::move(bytes)); }
  std::uint64_t type(std::vector<std::uint8_t> bytes) { return types_.add(kVhlo, std::move(bytes)); }
  std::uint64_t properties(std::vector<std::uint8_t> bytes) {
    const auto it = property_ids_.find(bytes);
    if (it != property_ids_.end()) return it->second;
    const std::uint64_t i = properties_.size();
    property_ids_.emplace(bytes, i);
    properties_.push_back(std::move(bytes));
    return i;
  }

  // ---- Types ----

  /// VHLO's code of an element type and the version that introduced it.
  StatusOr<std::uint64_t> element_type(DType t) {
    struct Code {
      DType dtype;
      std::uint8_t code;
      VhloVersion since;
    };
    static constexpr Code kCodes[] = {
        {DType::kPred, 0, {0, 9, 0}},        {DType::kBF16, 2, {0, 9, 0}},
        {DType::kF16, 3, {0, 9, 0}},         {DType::kF32, 4, {0, 9, 0}},
        {DType::kF64, 5, {0, 9, 0}},         {DType::kF8E4M3FN, 6, {0, 9, 0}},
        {DType::kF8E5M2, 7, {0, 9, 0}},      {DType::kS4, 10, {0, 9, 0}},
        {DType::kS8, 11, {0, 9, 0}},         {DType::kS16, 12, {0, 9, 0}},
        {DType::kS32, 13, {0, 9, 0}},        {DType::kS64, 14, {0, 9, 0}},
        {DType::kU4, 15, {0, 9, 0}},         {DType::kU8, 16, {0, 9, 0}},
        {DType::kU16, 17, {0, 9, 0}},        {DType::kU32, 18, {0, 9, 0}},
        {DType::kU64, 19, {0, 9, 0}},        {DType::kToken, 22, {0, 9, 0}},
        {DType::kF8E4M3FNUZ, 27, {0, 10, 0}}, {DType::kF8E5M2FNUZ, 28, {0, 10, 0}},
        {DType::kF8E4M3B11FNUZ, 29, {0, 11, 0}}, {DType::kS2, 31, {1, 2, 0}},
        {DType::kU2, 32, {1, 2, 0}},         {DType::kF8E4M3, 35, {1, 7, 0}},
        {DType::kF8E3M4, 36, {1, 7, 0}},     {DType::kF4E2M1FN, 37, {1, 8, 0}},
        {DType::kF6E2M3FN, 38, {1, 8, 0}},   {DType::kF6E3M2FN, 39, {1, 8, 0}},
        {DType::kF8E8M0FNU, 40, {1, 8, 0}},
    };
    if (is_complex(t)) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t part, element_type(t == DType::kC64 ? DType::kF32 : DType::kF64));
      BcWriter w;
      w.varint(1);
      w.varint(part);
      return type(std::move(w.bytes()));
    }
    for (const Code& c : kCodes) {
      if (c.dtype != t) continue;
      if (target_ < c.since)
        return unimplemented(str_cat("the element type ", dtype_name(t), " needs StableHLO ", version_string(c.since)));
      BcWriter w;
      w.varint(c.code);
      return type(std::move(w.bytes()));
    }
    return unimplemented(str_cat("the element type ", dtype_name(t), " has no VHLO form"));
  }

  /// A ranked tensor type (a token is the token type).
  StatusOr<std::uint64_t> tensor_type(const Shape& s) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t elem, element_type(s.dtype()));
    if (is_token(s.dtype())) return elem;
    BcWriter w;
    w.varint(20);
    w.varint(s.dims().size());
    for (std::int64_t d : s.dims()) w.svarint(d);
    w.varint(elem);
    return type(std::move(w.bytes()));
  }
  std::uint64_t scalar_type(DType t) {
    // Only for the integer types every version has.
    return element_type(t).value();
  }

  // ---- Attributes ----

  std::uint64_t a_array(const std::vector<std::uint64_t>& items) {
    BcWriter w;
    w.varint(1);
    w.varint(items.size());
    for (std::uint64_t i : items) w.varint(i);
    return attr(kVhlo, std::move(w.bytes()));
  }
  std::uint64_t a_enum(std::uint64_t code, std::uint64_t value) {
    BcWriter w;
    w.varint(code);
    w.varint(value);
    return attr(kVhlo, std::move(w.bytes()));
  }
  std::uint64_t a_bool(bool v) { return a_enum(2, v ? 1 : 0); }
  std::uint64_t a_string(std::string_view s) { return a_enum(14, string_index(s)); }
  std::uint64_t a_type(std::uint64_t type_index) { return a_enum(17, type_index); }
  /// integer_v1 of type `t` (an integer type of up to 64 bits): MLIR writes the value zero-
  /// extended from the type's width as a signed varint, and one raw byte for 8 bits or less.
  std::uint64_t a_int(DType t, std::int64_t v) {
    BcWriter w;
    w.varint(9);
    w.varint(scalar_type(t));
    const int bits = bit_width(t);
    const std::uint64_t u = bits >= 64 ? static_cast<std::uint64_t>(v)
                                       : static_cast<std::uint64_t>(v) & ((std::uint64_t{1} << bits) - 1);
    if (bits <= 8) {
      w.byte(static_cast<std::uint8_t>(u));
    } else {
      w.svarint(static_cast<std::int64_t>(u));
    }
    return attr(kVhlo, std::move(w.bytes()));
  }
  std::uint64_t a_i64(std::int64_t v) { return a_int(DType::kS64, v); }
  std::uint64_t a_dictionary(std::vector<std::pair<std::string, std::uint64_t>> entries) {
    std::sort(entries.begin(), entries.end());
    BcWriter w;
    w.varint(6);
    w.varint(entries.size());
    for (const auto& [key, value] : entries) {
      w.varint(a_string(key));
      w.varint(value);
    }
    return attr(kVhlo, std::move(w.bytes()));
  }
  /// tensor_v1: the tensor type and MLIR's dense storage of `raw` (one element per `width`
  /// bytes): a single element when all are equal, booleans packed eight to a byte.
  StatusOr<std::uint64_t> a_tensor(const Shape& s, const std::uint8_t* raw, std::size_t width) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t t, tensor_type(s));
    const auto n = static_cast<std::size_t>(s.element_count());
    bool splat = n > 1;
    for (std::size_t k = 1; splat && k < n; ++k) splat = std::memcmp(raw, raw + k * width, width) == 0;
    std::vector<std::uint8_t> blob;
    if (s.dtype() == DType::kPred) {
      if (splat) {
        blob.push_back(raw[0] != 0 ? 0xFF : 0x00);
      } else {
        blob.assign((n + 7) / 8, 0);
        for (std::size_t k = 0; k < n; ++k)
          if (raw[k] != 0) blob[k / 8] = static_cast<std::uint8_t>(blob[k / 8] | (1u << (k % 8)));
      }
    } else {
      blob.assign(raw, raw + (splat ? 1 : n) * width);
      if (is_narrow(s.dtype())) {
        const std::uint8_t mask = static_cast<std::uint8_t>((1u << bit_width(s.dtype())) - 1);
        for (std::uint8_t& b : blob) b &= mask;
      }
    }
    BcWriter w;
    w.varint(15);
    w.varint(t);
    w.blob(blob);
    return attr(kVhlo, std::move(w.bytes()));
  }
  /// A list of int64 as tensor<N x i64>.
  std::uint64_t a_dims(const std::vector<std::int64_t>& v) {
    return a_tensor(Shape(DType::kS64, {static_cast<std::int64_t>(v.size())}),
                    reinterpret_cast<const std::uint8_t*>(v.data()), 8)
        .value();
  }
  /// Rows of `cols` int64 as tensor<rows x cols x i64> (tensor<0 x cols x i64> when empty, as
  /// StableHLO's verifier wants a padding or pair list of no rows).
  std::uint64_t a_matrix(const std::vector<std::int64_t>& v, std::int64_t cols) {
    const std::int64_t rows = cols > 0 ? static_cast<std::int64_t>(v.size()) / cols : 0;
    return a_tensor(Shape(DType::kS64, {rows, cols}), reinterpret_cast<const std::uint8_t*>(v.data()), 8).value();
  }
  std::uint64_t a_bools(const std::vector<std::int64_t>& v) {
    std::vector<std::uint8_t> raw(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) raw[k] = v[k] != 0;
    return a_tensor(Shape(DType::kPred, {static_cast<std::int64_t>(v.size())}), raw.data(), 1).value();
  }
  /// A layout as tensor<N x index> (index elements are stored in 8 bytes).
  std::uint64_t a_index_tensor(const std::vector<std::int64_t>& v) {
    BcWriter elem;
    elem.varint(9);
    BcWriter t;
    t.varint(20);
    t.varint(1);
    t.svarint(static_cast<std::int64_t>(v.size()));
    t.varint(type(std::move(elem.bytes())));
    const std::uint64_t tensor = type(std::move(t.bytes()));
    BcWriter w;
    w.varint(15);
    w.varint(tensor);
    const bool splat = v.size() > 1 && std::all_of(v.begin(), v.end(), [&](std::int64_t x) { return x == v[0]; });
    const std::size_t n = splat ? 1 : v.size();
    w.varint(8 * n);
    for (std::size_t k = 0; k < n; ++k)
      for (int b = 0; b < 8; ++b) w.byte(static_cast<std::uint8_t>(static_cast<std::uint64_t>(v[k]) >> (8 * b)));
    return attr(kVhlo, std::move(w.bytes()));
  }
  /// Padding [[low, high], ...] as tensor<N x 2 x i64>.
  std::uint64_t a_padding(const std::vector<std::int64_t>& low, const std::vector<std::int64_t>& high) {
    std::vector<std::int64_t> flat;
    for (std::size_t d = 0; d < low.size(); ++d) {
      flat.push_back(low[d]);
      flat.push_back(d < high.size() ? high[d] : 0);
    }
    return a_matrix(flat, 2);
  }
  std::uint64_t a_precision_config(std::size_t n) {
    return a_array(std::vector<std::uint64_t>(n, a_enum(11, 0)));
  }
  std::uint64_t a_default_accuracy() {
    BcWriter w;
    w.varint(20);
    w.varint(0);  // atol 0.0
    w.varint(0);  // rtol 0.0
    w.svarint(0);  // ulps
    w.varint(a_enum(19, 0));  // mode DEFAULT
    return attr(kVhlo, std::move(w.bytes()));
  }
  StatusOr<std::uint64_t> function_type(const std::vector<Shape>& inputs, const std::vector<Shape>& results) {
    BcWriter w;
    w.varint(8);
    w.varint(inputs.size());
    for (const Shape& s : inputs) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t t, tensor_type(s));
      w.varint(t);
    }
    w.varint(results.size());
    for (const Shape& s : results) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t t, tensor_type(s));
      w.varint(t);
    }
    return type(std::move(w.bytes()));
  }

  // ---- Ops ----

  /// An op's properties as gathered: each with whether it holds its default, so that a
  /// version without the property can drop it.
  struct Prop {
    std::string_view name;
    std::uint64_t value;
    bool is_default = false;
  };

  Status unimplemented(std::string_view what) const {
    return unimplemented_error(str_cat("portable artifact for StableHLO ", version_string(target_), ": ", what));
  }

  /// The newest VHLO version of `op` the target has, and its property bytes from `props`.
  StatusOr<std::pair<const VhloOpInfo*, std::vector<std::uint8_t>>> choose(std::string_view op,
                                                                           const std::vector<Prop>& props) {
    const VhloOpInfo* chosen = nullptr;
    VhloVersion first = kCurrent;
    for (const VhloOpInfo& info : kVhloOps) {
      const std::string_view name = info.name;
      if (!name.starts_with(op) || name.size() < op.size() + 3 || name.substr(op.size(), 2) != "_v" ||
          name.substr(op.size() + 2).find_first_not_of("0123456789") != std::string_view::npos)
        continue;
      first = std::min(first, info.min);
      if (info.min <= target_ && target_ <= info.max) chosen = &info;
    }
    if (chosen == nullptr) {
      if (first == kCurrent) return unimplemented(str_cat("stablehlo.", op, " has no VHLO form"));
      return unimplemented(str_cat("stablehlo.", op, " needs StableHLO ", version_string(first)));
    }
    // The version's properties, in its (alphabetical) order; one it lacks must be a default.
    std::vector<std::string_view> names;
    for (std::string_view rest = chosen->attributes; !rest.empty();) {
      const std::size_t space = rest.find(' ');
      names.push_back(rest.substr(0, space));
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    for (const Prop& p : props) {
      if (std::find(names.begin(), names.end(), p.name) != names.end() || p.is_default) continue;
      VhloVersion since = kCurrent;
      for (const VhloOpInfo& info : kVhloOps)
        if (info.name.starts_with(str_cat(op, "_v")) && info.attributes.find(p.name) != std::string_view::npos)
          since = std::min(since, info.min);
      return unimplemented(str_cat("stablehlo.", op, " with ", p.name, " needs StableHLO ", version_string(since)));
    }
    BcWriter w;
    for (std::string_view name : names) {
      const auto it = std::find_if(props.begin(), props.end(), [&](const Prop& p) { return p.name == name; });
      if (it == props.end()) return internal_error(str_cat("portable artifact: no value for ", chosen->name, "'s ", name));
      w.varint(it->value);
    }
    return std::make_pair(chosen, std::move(w.bytes()));
  }

  /// The values of one region being written: the id of each node's first result.
  struct Frame {
    const Graph* graph;
    std::vector<std::uint64_t> first;  // per node; parameters map to their value's id
  };

  std::uint64_t value_id(const Frame& f, Value v) const {
    return f.first[static_cast<std::size_t>(v.node)] + static_cast<std::uint64_t>(v.index);
  }

  /// Values a region defines: its block arguments (when it has them) and its ops' results.
  static std::uint64_t region_values(const Graph& g, bool block_args) {
    std::uint64_t n = 0;
    for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
      const Node& node = g.node(i);
      if (node.op == OpCode::kParameter) {
        n += block_args ? 1 : 0;
      } else {
        n += node.results.size();
      }
    }
    return n;
  }

  /// One region holding `g`: one block, its parameters the block's arguments (or, for a
  /// branch, the enclosing values `captured`), ending in return_v1. Values are numbered from
  /// `start`.
  Status region(BcWriter& w, const Graph& g, std::uint64_t start, const std::vector<std::uint64_t>* captured) {
    Frame f{&g, std::vector<std::uint64_t>(static_cast<std::size_t>(g.num_nodes()), 0)};
    const bool block_args = captured == nullptr;
    const std::uint64_t values = region_values(g, block_args);
    std::uint64_t next = start;
    const std::size_t params = g.parameters().size();
    for (std::size_t k = 0; k < params; ++k) {
      const Value p = g.parameters()[k];
      if (block_args) {
        f.first[static_cast<std::size_t>(p.node)] = next++;
      } else {
        if (k >= captured->size()) return internal_error("portable artifact: a branch parameter without its value");
        f.first[static_cast<std::size_t>(p.node)] = (*captured)[k];
      }
    }
    std::int64_t ops = 1;  // the return
    for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
      const Node& n = g.node(i);
      if (n.op == OpCode::kParameter) continue;
      f.first[static_cast<std::size_t>(i)] = next;
      next += n.results.size();
      ++ops;
    }
    w.varint(1);
    w.varint(values);
    w.varint_flag(static_cast<std::uint64_t>(ops), block_args && params > 0);
    if (block_args && params > 0) {
      w.varint(params);
      for (std::size_t k = 0; k < params; ++k) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t t, tensor_type(g.shape(g.parameters()[k])));
        w.varint_flag(t, false);
      }
      w.byte(0);  // no use-list orders
    }
    const std::uint64_t nested = start + values;
    for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
      const Node& n = g.node(i);
      if (n.op == OpCode::kParameter) continue;
      PJRT_LITE_RETURN_IF_ERROR(op(w, f, n, nested));
    }
    std::vector<std::uint64_t> outputs;
    for (Value v : g.outputs()) outputs.push_back(value_id(f, v));
    emit(w, op_name(kVhlo, "return_v1"), std::nullopt, {}, outputs);
    return ok_status();
  }

  /// An op's header: name, mask, location, properties, results, operands (and the regions
  /// bit, whose regions the caller writes after).
  void emit(BcWriter& w, std::uint64_t name, std::optional<std::uint64_t> props, const std::vector<std::uint64_t>& results,
            const std::vector<std::uint64_t>& operands, std::size_t regions = 0, bool isolated = true,
            std::optional<std::uint64_t> attr_dict = std::nullopt) {
    std::uint8_t mask = 0;
    if (attr_dict) mask |= 0x01;
    if (props) mask |= 0x40;
    if (!results.empty()) mask |= 0x02;
    if (!operands.empty()) mask |= 0x04;
    if (regions) mask |= 0x10;
    w.varint(name);
    w.byte(mask);
    w.varint(unknown_loc_);
    if (attr_dict) w.varint(*attr_dict);
    if (props) w.varint(*props);
    if (!results.empty()) {
      w.varint(results.size());
      for (std::uint64_t t : results) w.varint(t);
    }
    if (!operands.empty()) {
      w.varint(operands.size());
      for (std::uint64_t v : operands) w.varint(v);
    }
    if (regions) w.varint_flag(regions, isolated);
  }

  StatusOr<std::vector<std::uint8_t>> function(const Graph& g) {
    std::vector<Shape> inputs, results;
    for (Value p : g.parameters()) inputs.push_back(g.shape(p));
    for (Value v : g.outputs()) results.push_back(g.shape(v));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t ft, function_type(inputs, results));
    const std::uint64_t empty = a_array({});
    PJRT_LITE_ASSIGN_OR_RETURN(auto chosen, choose("func", {{"arg_attrs", empty},
                                                            {"function_type", a_type(ft)},
                                                            {"res_attrs", empty},
                                                            {"sym_name", a_string("main")},
                                                            {"sym_visibility", a_string("")}}));
    BcWriter body;
    PJRT_LITE_RETURN_IF_ERROR(region(body, g, 0, nullptr));
    BcWriter w;
    emit(w, op_name(kVhlo, chosen.first->name), properties(std::move(chosen.second)), {}, {}, 1, true);
    w.section(4, body.bytes());
    return std::move(w.bytes());
  }

  /// The properties of node `n` (an op whose VHLO name is `name`), from its attributes.
  StatusOr<std::vector<Prop>> node_properties(const Graph& g, const Node& n, std::string& name) {
    std::vector<Prop> p;
    auto dims = [&](std::string_view key, const std::vector<std::int64_t>& v) { p.push_back({key, a_dims(v)}); };
    const auto all = [](const std::vector<std::int64_t>& v, std::int64_t x) {
      return std::all_of(v.begin(), v.end(), [x](std::int64_t e) { return e == x; });
    };
    switch (n.op) {
      case OpCode::kCbrt: case OpCode::kCosine: case OpCode::kExponential: case OpCode::kExponentialMinusOne:
      case OpCode::kLog: case OpCode::kLogPlusOne: case OpCode::kLogistic: case OpCode::kRsqrt:
      case OpCode::kSine: case OpCode::kSqrt: case OpCode::kTan: case OpCode::kTanh:
        p.push_back({"result_accuracy", a_default_accuracy(), true});
        break;
      case OpCode::kConstant: {
        const Literal& lit = n.attr<ConstantAttrs>().literal();
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, a_tensor(lit.shape(), static_cast<const std::uint8_t*>(lit.untyped_data()),
                                                             byte_size(lit.shape().dtype())));
        p.push_back({"value", v});
        break;
      }
      case OpCode::kIota: p.push_back({"iota_dimension", a_i64(n.attr<IotaAttrs>().iota_dimension)}); break;
      case OpCode::kCompare: {
        const auto& a = n.attr<CompareAttrs>();
        p.push_back({"comparison_direction", a_enum(3, static_cast<std::uint64_t>(a.direction))});
        p.push_back({"compare_type", a_enum(4, static_cast<std::uint64_t>(a.type))});
        break;
      }
      case OpCode::kBroadcastInDim: dims("broadcast_dimensions", n.attr<BroadcastInDimAttrs>().broadcast_dimensions); break;
      case OpCode::kTranspose: dims("permutation", n.attr<TransposeAttrs>().permutation); break;
      case OpCode::kSlice: {
        const auto& a = n.attr<SliceAttrs>();
        dims("start_indices", a.start_indices);
        dims("limit_indices", a.limit_indices);
        dims("strides", a.strides.empty() ? std::vector<std::int64_t>(a.start_indices.size(), 1) : a.strides);
        break;
      }
      case OpCode::kConcatenate: p.push_back({"dimension", a_i64(n.attr<ConcatenateAttrs>().dimension)}); break;
      case OpCode::kPad: {
        const auto& a = n.attr<PadAttrs>();
        dims("edge_padding_low", a.edge_padding_low);
        dims("edge_padding_high", a.edge_padding_high);
        dims("interior_padding", a.interior_padding);
        break;
      }
      case OpCode::kReverse: dims("dimensions", n.attr<ReverseAttrs>().dimensions); break;
      case OpCode::kDynamicSlice: dims("slice_sizes", n.attr<DynamicSliceAttrs>().slice_sizes); break;
      case OpCode::kReduce: dims("dimensions", n.attr<ReduceAttrs>().dimensions); break;
      case OpCode::kDotGeneral: {
        const auto& a = n.attr<DotDimensionNumbers>();
        dims("lhs_batching_dimensions", a.lhs_batching_dimensions);
        dims("rhs_batching_dimensions", a.rhs_batching_dimensions);
        dims("lhs_contracting_dimensions", a.lhs_contracting_dimensions);
        dims("rhs_contracting_dimensions", a.rhs_contracting_dimensions);
        p.push_back({"precision_config", a_precision_config(2)});
        // No algorithm: VHLO spells its seven parts as the none type, which 1.6.0 brought.
        if (VhloVersion{1, 6, 0} <= target_) {
          BcWriter none;
          none.varint(33);
          const std::uint64_t none_attr = a_type(type(std::move(none.bytes())));
          for (std::string_view k : {"lhs_precision_type", "rhs_precision_type", "accumulation_type",
                                     "lhs_component_count", "rhs_component_count", "num_primitive_operations",
                                     "allow_imprecise_accumulation"})
            p.push_back({k, none_attr, true});
        }
        break;
      }
      case OpCode::kScatter: {
        const auto& a = n.attr<ScatterAttrs>();
        dims("update_window_dims", a.update_window_dims);
        dims("inserted_window_dims", a.inserted_window_dims);
        p.push_back({"input_batching_dims", a_dims(a.input_batching_dims), a.input_batching_dims.empty()});
        p.push_back({"scatter_indices_batching_dims", a_dims(a.scatter_indices_batching_dims),
                     a.scatter_indices_batching_dims.empty()});
        dims("scatter_dims_to_operand_dims", a.scatter_dims_to_operand_dims);
        p.push_back({"index_vector_dim", a_i64(a.index_vector_dim)});
        p.push_back({"indices_are_sorted", a_bool(a.indices_are_sorted)});
        p.push_back({"unique_indices", a_bool(a.unique_indices)});
        break;
      }
      case OpCode::kGather: {
        const auto& a = n.attr<GatherAttrs>();
        dims("offset_dims", a.offset_dims);
        dims("collapsed_slice_dims", a.collapsed_slice_dims);
        p.push_back({"operand_batching_dims", a_dims(a.operand_batching_dims), a.operand_batching_dims.empty()});
        p.push_back({"start_indices_batching_dims", a_dims(a.start_indices_batching_dims),
                     a.start_indices_batching_dims.empty()});
        dims("start_index_map", a.start_index_map);
        p.push_back({"index_vector_dim", a_i64(a.index_vector_dim)});
        dims("slice_sizes", a.slice_sizes);
        p.push_back({"indices_are_sorted", a_bool(a.indices_are_sorted)});
        break;
      }
      case OpCode::kReduceWindow:
      case OpCode::kSelectAndScatter: {
        const WindowAttrs a = n.attr<WindowAttrs>().with_defaults();
        dims("window_dimensions", a.window_dimensions);
        dims("window_strides", a.window_strides);
        p.push_back({"padding", a_padding(a.padding_low, a.padding_high)});
        if (n.op == OpCode::kReduceWindow) {
          dims("base_dilations", a.base_dilations);
          dims("window_dilations", a.window_dilations);
        } else if (!all(a.base_dilations, 1) || !all(a.window_dilations, 1)) {
          return unimplemented("stablehlo.select_and_scatter takes no dilation");
        }
        break;
      }
      case OpCode::kConvolution: {
        const ConvolutionAttrs a = n.attr<ConvolutionAttrs>().with_defaults();
        p.push_back({"input_batch_dimension", a_i64(a.input_batch_dimension)});
        p.push_back({"input_feature_dimension", a_i64(a.input_feature_dimension)});
        dims("input_spatial_dimensions", a.input_spatial_dimensions);
        p.push_back({"kernel_input_feature_dimension", a_i64(a.kernel_input_feature_dimension)});
        p.push_back({"kernel_output_feature_dimension", a_i64(a.kernel_output_feature_dimension)});
        dims("kernel_spatial_dimensions", a.kernel_spatial_dimensions);
        p.push_back({"output_batch_dimension", a_i64(a.output_batch_dimension)});
        p.push_back({"output_feature_dimension", a_i64(a.output_feature_dimension)});
        dims("output_spatial_dimensions", a.output_spatial_dimensions);
        dims("window_strides", a.window_strides);
        p.push_back({"padding", a_padding(a.padding_low, a.padding_high)});
        dims("lhs_dilation", a.lhs_dilation);
        dims("rhs_dilation", a.rhs_dilation);
        p.push_back({"window_reversal", a_bools(a.window_reversal)});
        p.push_back({"feature_group_count", a_i64(a.feature_group_count)});
        p.push_back({"batch_group_count", a_i64(a.batch_group_count)});
        p.push_back({"precision_config", a_precision_config(2)});
        break;
      }
      case OpCode::kReducePrecision: {
        const auto& a = n.attr<ReducePrecisionAttrs>();
        p.push_back({"exponent_bits", a_int(DType::kS32, a.exponent_bits)});
        p.push_back({"mantissa_bits", a_int(DType::kS32, a.mantissa_bits)});
        break;
      }
      case OpCode::kSort: {
        const auto& a = n.attr<SortAttrs>();
        p.push_back({"dimension", a_i64(a.dimension)});
        p.push_back({"is_stable", a_bool(a.is_stable)});
        break;
      }
      case OpCode::kFft: {
        const auto& a = n.attr<FftAttrs>();
        p.push_back({"fft_type", a_enum(7, static_cast<std::uint64_t>(a.fft_type))});
        dims("fft_length", a.fft_length);
        break;
      }
      case OpCode::kTriangularSolve: {
        const auto& a = n.attr<TriangularSolveAttrs>();
        p.push_back({"left_side", a_bool(a.left_side)});
        p.push_back({"lower", a_bool(a.lower)});
        p.push_back({"unit_diagonal", a_bool(a.unit_diagonal)});
        p.push_back({"transpose_a", a_enum(16, static_cast<std::uint64_t>(a.transpose_a) + 1)});
        break;
      }
      case OpCode::kRngBitGenerator:
        p.push_back({"rng_algorithm", a_enum(12, static_cast<std::uint64_t>(n.attr<RngBitGeneratorAttrs>().algorithm))});
        break;
      case OpCode::kLinalg: return lapack_call(g, n, name);
      case OpCode::kTopK:
      case OpCode::kErf:
        // XLA's high-level ops, as JAX's serializer keeps chlo.top_k and chlo.erf.
        name = "custom_call";
        return custom_call(n.op == OpCode::kTopK ? "mhlo.topk" : "mhlo.erf", 1, a_string(""), a_array({}),
                           a_array({}));
      case OpCode::kAllReduce: case OpCode::kAllGather: case OpCode::kReduceScatter: case OpCode::kAllToAll:
      case OpCode::kCollectivePermute: case OpCode::kCollectiveBroadcast: {
        const auto& a = n.attr<CollectiveAttrs>();
        const std::uint64_t groups = a_matrix(a.groups, n.op == OpCode::kCollectivePermute ? 2 : a.group_size);
        p.push_back({"channel_id", a_i64(a.channel_id)});
        if (n.op == OpCode::kCollectivePermute) {
          p.push_back({"source_target_pairs", groups});
        } else {
          p.push_back({"replica_groups", groups});
        }
        if (n.op == OpCode::kAllReduce || n.op == OpCode::kAllGather || n.op == OpCode::kReduceScatter)
          p.push_back({"use_global_device_ids", a_bool(a.use_global_device_ids)});
        if (n.op == OpCode::kAllGather) p.push_back({"all_gather_dim", a_i64(a.dimension)});
        if (n.op == OpCode::kReduceScatter) p.push_back({"scatter_dimension", a_i64(a.dimension)});
        if (n.op == OpCode::kAllToAll) {
          p.push_back({"split_dimension", a_i64(a.dimension)});
          p.push_back({"concat_dimension", a_i64(a.concat_dimension)});
          p.push_back({"split_count", a_i64(a.split_count)});
        }
        if (n.op == OpCode::kCollectiveBroadcast)
          p.push_back({"has_dynamic_root", a_bool(a.has_dynamic_root), !a.has_dynamic_root});
        // Before 1.5.0 (all_gather, all_reduce, all_to_all) and 1.20.0 (collective_broadcast)
        // these take one operand.
        const VhloVersion variadic = n.op == OpCode::kCollectiveBroadcast ? VhloVersion{1, 20, 0} : VhloVersion{1, 5, 0};
        if (n.operands.size() > 1 && target_ < variadic &&
            (n.op == OpCode::kAllReduce || n.op == OpCode::kAllGather || n.op == OpCode::kAllToAll ||
             n.op == OpCode::kCollectiveBroadcast))
          return unimplemented(str_cat("stablehlo.", op_name_of(n.op), " with several operands needs StableHLO ",
                                       version_string(variadic)));
        break;
      }
      case OpCode::kSend: case OpCode::kRecv: {
        const auto& a = n.attr<ChannelAttrs>();
        p.push_back({"channel_id", a_i64(a.channel_id)});
        p.push_back({"channel_type", a_i64(a.channel_type)});
        p.push_back({"is_host_transfer", a_bool(a.is_host_transfer)});
        p.push_back({"source_target_pairs",
                     a_matrix(a.source_target_pairs, 2),
                     a.source_target_pairs.empty()});
        break;
      }
      case OpCode::kInfeed:
        p.push_back({"infeed_config", a_string(n.attr<ChannelAttrs>().config)});
        p.push_back({"layout", a_array({})});
        break;
      case OpCode::kOutfeed: p.push_back({"outfeed_config", a_string(n.attr<ChannelAttrs>().config)}); break;
      default: break;
    }
    return p;
  }

  static std::string_view op_name_of(OpCode op) { return pjrt_lite::op_name(op); }

  /// A custom call's properties: `target`, no called computations, side effects, layouts or
  /// aliases.
  std::vector<Prop> custom_call(std::string_view target, std::uint64_t api_version, std::uint64_t backend_config,
                                std::uint64_t operand_layouts, std::uint64_t result_layouts) {
    const std::uint64_t empty = a_array({});
    return {{"call_target_name", a_string(target)},
            {"api_version", a_enum(5, api_version)},
            {"backend_config", backend_config},
            {"called_computations", empty},
            {"has_side_effect", a_bool(false)},
            {"operand_layouts", operand_layouts},
            {"result_layouts", result_layouts},
            {"output_operand_aliases", empty},
            {"result_tilings", empty, true}};
  }

  /// A LAPACK routine as the custom call jaxlib registers, as JAX writes it: api_version 1
  /// and an empty backend_config, the flags in the discardable `mhlo.backend_config`
  /// dictionary, column-major layouts.
  StatusOr<std::vector<Prop>> lapack_call(const Graph& g, const Node& n, std::string& name) {
    const LinalgAttrs& a = n.attr<LinalgAttrs>();
    const std::string target = lapack_target_name(a.routine, g.shape(n.operands[0]).dtype());
    name = "custom_call";
    std::int64_t rank = 0;
    for (Value v : n.operands) rank = std::max(rank, g.shape(v).rank());
    auto layouts = [&](const std::vector<Shape>& shapes) {
      std::vector<std::uint64_t> items;
      for (const Shape& s : shapes) items.push_back(a_index_tensor(lapack_layout(s.rank(), rank)));
      return a_array(items);
    };
    std::vector<Shape> operand_shapes;
    for (Value v : n.operands) operand_shapes.push_back(g.shape(v));
    const std::uint64_t operand_layouts = layouts(operand_shapes);
    return custom_call(target, 1, a_string(""), operand_layouts, layouts(n.results));
  }

  /// An op's discardable attributes: a builtin DictionaryAttr (sorted by name) of builtin
  /// StringAttr names and VHLO values.
  std::uint64_t discardable(std::vector<std::pair<std::string, std::uint64_t>> entries) {
    std::sort(entries.begin(), entries.end());
    BcWriter d;
    d.varint(1);
    d.varint(entries.size());
    for (const auto& [key, value] : entries) {
      BcWriter k;
      k.varint(2);
      k.varint(string_index(key));
      d.varint(attr(kBuiltin, std::move(k.bytes())));
      d.varint(value);
    }
    return attr(kBuiltin, std::move(d.bytes()));
  }

  /// The flags of a LAPACK call, as mhlo.backend_config's entries.
  std::vector<std::pair<std::string, std::uint64_t>> lapack_config(const LinalgAttrs& a) {
    std::vector<std::pair<std::string, std::uint64_t>> entries;
    for (const LapackFlag& f : lapack_flags(a)) {
      switch (f.kind) {
        case LapackFlag::Kind::kU8: entries.emplace_back(f.key, a_int(DType::kU8, f.value)); break;
        case LapackFlag::Kind::kI32: entries.emplace_back(f.key, a_int(DType::kS32, f.value)); break;
        case LapackFlag::Kind::kBool: entries.emplace_back(f.key, a_bool(f.value != 0)); break;
      }
    }
    return entries;
  }

  /// One node: its VHLO op, then its regions.
  Status op(BcWriter& w, const Frame& f, const Node& n, std::uint64_t nested_start) {
    const Graph& g = *f.graph;
    if (is_chlo(n.op) && n.op != OpCode::kTopK && n.op != OpCode::kErf)
      return unimplemented(str_cat("chlo.", op_name_of(n.op), " on ", dtype_name(g.shape(n.operands[0]).dtype()),
                                   " values has no VHLO form (artifacts hold no CHLO, and its StableHLO form is "
                                   "written for real floating-point values only)"));
    std::string name(op_name_of(n.op));
    // Before 0.17.0 a reducing op's results have its operands' element types: a body that
    // computes in a wider type (a promoted accumulator) came with 0.17.0.
    const bool reducing = n.op == OpCode::kReduce || n.op == OpCode::kReduceWindow || n.op == OpCode::kScatter ||
                          n.op == OpCode::kSelectAndScatter || n.op == OpCode::kAllReduce ||
                          n.op == OpCode::kReduceScatter;
    if (reducing && target_ < VhloVersion{0, 17, 0})
      for (std::size_t k = 0; k < n.results.size() && k < n.operands.size(); ++k)
        if (n.results[k].dtype() != g.shape(n.operands[k]).dtype())
          return unimplemented(str_cat("stablehlo.", name, " with a result of another element type than its operand ",
                                       "(a promoted accumulator) needs StableHLO 0.17.0"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Prop> props, node_properties(g, n, name));
    PJRT_LITE_ASSIGN_OR_RETURN(auto chosen, choose(name, props));
    std::vector<std::uint64_t> results, operands;
    for (const Shape& s : n.results) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t t, tensor_type(s));
      results.push_back(t);
    }
    // case and if take their index or predicate; the branches use the rest by value.
    const bool branches = n.op == OpCode::kCase || n.op == OpCode::kIf;
    for (std::size_t k = 0; k < (branches ? 1 : n.operands.size()); ++k) operands.push_back(value_id(f, n.operands[k]));
    std::optional<std::uint64_t> props_index;
    if (!chosen.first->attributes.empty()) props_index = properties(std::move(chosen.second));
    const std::uint64_t name_index = op_name(kVhlo, chosen.first->name);
    // Discardable attributes: the op's attribute dictionary.
    std::optional<std::uint64_t> attr_dict;
    if (n.op == OpCode::kLinalg) attr_dict = discardable({{"mhlo.backend_config", a_dictionary(lapack_config(n.attr<LinalgAttrs>()))}});
    if (n.op == OpCode::kTopK || n.op == OpCode::kErf) {
      std::vector<std::pair<std::string, std::uint64_t>> fields;
      if (n.op == OpCode::kTopK) fields = {{"k", a_i64(n.attr<TopKAttrs>().k)}, {"largest", a_bool(true)}};
      attr_dict = discardable({{"mhlo.attributes", a_dictionary(std::move(fields))}, {"mhlo.version", a_i64(1)}});
    }
    if (n.bodies.empty()) {
      emit(w, name_index, props_index, results, operands, 0, true, attr_dict);
      return ok_status();
    }
    if (branches) {
      emit(w, name_index, props_index, results, operands, n.bodies.size(), false);
      std::vector<std::uint64_t> captured;
      for (std::size_t k = 1; k < n.operands.size(); ++k) captured.push_back(value_id(f, n.operands[k]));
      for (const Graph& body : n.bodies) PJRT_LITE_RETURN_IF_ERROR(region(w, body, nested_start, &captured));
      return ok_status();
    }
    emit(w, name_index, props_index, results, operands, n.bodies.size(), true);
    BcWriter section;
    for (const Graph& body : n.bodies) PJRT_LITE_RETURN_IF_ERROR(region(section, body, 0, nullptr));
    w.section(4, section.bytes());
    return ok_status();
  }

  // ---- Sections ----

  std::vector<std::uint8_t> dialect_section() {
    BcWriter w;
    w.varint(2);
    w.varint_flag(string_index("builtin"), false);
    w.varint_flag(string_index("vhlo"), false);
    w.varint(op_names_.size());
    // Op names in groups of consecutive names of one dialect: their indices are their order.
    std::size_t k = 0;
    while (k < op_names_.size()) {
      std::size_t end = k;
      while (end < op_names_.size() && op_names_[end].first == op_names_[k].first) ++end;
      w.varint(static_cast<std::uint64_t>(op_names_[k].first));
      w.varint(end - k);
      for (std::size_t e = k; e < end; ++e) w.varint_flag(op_names_[e].second, true);
      k = end;
    }
    return std::move(w.bytes());
  }

  void attr_type_sections(std::vector<std::uint8_t>& offsets, std::vector<std::uint8_t>& data) {
    BcWriter o, d;
    o.varint(attrs_.entries.size());
    o.varint(types_.entries.size());
    for (const Table* t : {&attrs_, &types_}) {
      // Consecutive entries of one dialect form a group.
      std::size_t k = 0;
      while (k < t->entries.size()) {
        std::size_t end = k;
        while (end < t->entries.size() && t->entries[end].dialect == t->entries[k].dialect) ++end;
        o.varint(static_cast<std::uint64_t>(t->entries[k].dialect));
        o.varint(end - k);
        for (std::size_t e = k; e < end; ++e) {
          o.varint_flag(t->entries[e].bytes.size(), true);
          d.append(t->entries[e].bytes);
        }
        k = end;
      }
    }
    offsets = std::move(o.bytes());
    data = std::move(d.bytes());
  }

  std::vector<std::uint8_t> string_section() {
    BcWriter w;
    w.varint(strings_.size());
    for (std::size_t k = strings_.size(); k-- > 0;) w.varint(strings_[k].size() + 1);
    for (const std::string& s : strings_) {
      for (char c : s) w.byte(static_cast<std::uint8_t>(c));
      w.byte(0);
    }
    return std::move(w.bytes());
  }

  std::vector<std::uint8_t> properties_section() {
    BcWriter w;
    w.varint(properties_.size());
    for (const auto& p : properties_) w.blob(p);
    return std::move(w.bytes());
  }

  VhloVersion target_;
  std::vector<std::string> strings_;
  std::map<std::string, std::uint64_t> string_ids_;
  std::vector<std::pair<int, std::uint64_t>> op_names_;
  Table attrs_, types_;
  std::vector<std::vector<std::uint8_t>> properties_;
  std::map<std::vector<std::uint8_t>, std::uint64_t> property_ids_;
  std::uint64_t unknown_loc_ = 0;
};

/// The section of docs/conformance.md on writing portable artifacts (tests/stablehlo_corpus_test.cpp
/// writes the page; tests/stablehlo_bytecode_test.cpp checks what it says).
inline std::string portable_artifact_writer_markdown() {
  return "\n"
         "### Writing portable artifacts\n"
         "\n"
         "`stablehlo::serialize_portable_artifact(graph, target)` writes a program (traced, built or\n"
         "parsed) as the artifact StableHLO `target` reads, for every target from 0.15.0 to 1.20.0 (MLIR\n"
         "bytecode format 6), so that XLA, IREE or JAX's `deserialize` of that version or later take it;\n"
         "an overload takes StableHLO text. The writer (detail/vhlo_writer.hpp) shares with the reader\n"
         "only the op table and the version numbers:\n"
         "\n"
         "- each op is the newest VHLO version of it that the target has (`exponential_v2` from 1.9.0,\n"
         "  the other accuracy ops' `_v2` from 1.10.0, `dot_general_v2` from 1.6.0, `gather_v2` and\n"
         "  `scatter_v2` from 1.1.0, ...), with every property of that version, defaults spelled out,\n"
         "  in the alphabetical order MLIR writes them; constants and dimension lists are dense tensors\n"
         "  (one element when all are equal, booleans packed eight to a byte);\n"
         "- LAPACK calls are written as JAX writes jaxlib's custom calls (api_version 1, an empty\n"
         "  `backend_config`, the flags in `mhlo.backend_config`, column-major `index` layouts);\n"
         "- `chlo.top_k` and `chlo.erf` are written as XLA's custom calls `@mhlo.topk` and `@mhlo.erf`,\n"
         "  as JAX's serializer writes them (and as the parser reads them);\n"
         "- CHLO's other ops on real floating-point values (`atan`, `asin`, `sinh`, `cosh`, `asinh`,\n"
         "  `acosh`, `atanh`, `erfc`, `erf_inv`, `lgamma`, `digamma`, `bessel_i1e`, `next_after`) are\n"
         "  written as StableHLO's element-wise ops, as JAX's serializer expands them\n"
         "  (chlo_expansions.hpp: formulas that keep their accuracy near 0, 1 and the poles and do not\n"
         "  overflow before the function does; Chebyshev series fitted here for erfc's tail and\n"
         "  bessel_i1e, Lanczos's sum for lgamma, Halley steps for erf_inv in f64, the bits for\n"
         "  next_after; f16 and bf16 computed in f32, f32 in f32, where cosh, sinh and erf_inv are\n"
         "  computed as XLA computes them); checked against the ops themselves on the CPU,\n"
         "  on values across their domains and edges, within a few units in the last place of each\n"
         "  type (absolutely near the zeros of lgamma and digamma; next_after bit for bit), and every\n"
         "  corpus program with these ops passes its own checks (JAX's values) in expanded form;\n"
         "- sections in MLIR's order, strings, attributes, types and properties stored once each,\n"
         "  locations unknown, no use-list orders; regions that use nothing from outside are isolated\n"
         "  (their own IR section), the branches of `case` and `if`, which use enclosing values, are not.\n"
         "\n"
         "Refused with UNIMPLEMENTED, naming what and the version it needs: an op, an element type or an\n"
         "attribute the target does not have (`stablehlo.tan` before 1.4.0, `i2` before 1.2.0, the f8\n"
         "types before 1.7.0 and 1.8.0, a gather or scatter with batching dimensions before 1.1.0,\n"
         "several operands of `all_reduce`, `all_gather`, `all_to_all` before 1.5.0 and of\n"
         "`collective_broadcast` before 1.20.0, `send`/`recv` with source-target pairs before 1.12.0, a\n"
         "promoted accumulator before 0.17.0); CHLO's ops on complex values, which have no VHLO form\n"
         "and no expansion here; targets before\n"
         "0.15.0 (older bytecode formats) or after 1.20.0. The IR keeps neither `result_accuracy`\n"
         "requests nor function attributes, and holds quantized ops and composites in their expanded\n"
         "form, so those are written as the plain ops they became.\n"
         "\n"
         "Checked (tests/stablehlo_bytecode_test.cpp) by reading every artifact back with the reader,\n"
         "which was checked against StableHLO's own artifacts: every corpus program at 0.15.0 and\n"
         "1.20.0 (all but those with CHLO ops on complex values, and `tan` at 0.15.0) and every function of\n"
         "StableHLO's text twins at its twin's version give back the same graph (CHLO's expanded ops\n"
         "in their expanded form); StableHLO's downgrade tests\n"
         "(`vhlo_to_version_downgrade*.mlir`) are refused where StableHLO refuses them (but for the\n"
         "forms above) and otherwise use the op versions their checks name; a traced program with\n"
         "control flow, reductions and sub-byte and boolean constants runs the same from its artifact\n"
         "through `client.compile(bytes)` for 0.15.0, 1.9.0 and 1.20.0.\n";
}

}  // namespace pjrt_lite::stablehlo::detail
