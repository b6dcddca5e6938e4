#pragma once
// A compact binary form of a Graph, for caches and files. Every integer is little-endian and
// of fixed width whatever the host, so a blob means the same on every platform.
//
//   blob      = "PJLG"  u32 version (2)  u64 graph_size  graph  u64 checksum
//   graph     = string name  u32 node_count node*  u32 output_count value*
//   node      = u8 opcode  u32 operand_count value*  u8 attributes_index attributes
//               u32 result_count shape*  u32 body_count graph*
//   value     = u32 node  u32 result_index                  (int32 bits)
//   shape     = u8 dtype  u32 rank  i64 dim*  u8 layout (0: row-major; 1: i64 major_to_minor*)
//   attributes= the fields of the alternative, in the order of detail::attribute_fields
//   literal   = u8 present (0|1)  shape  u64 byte_count  element bytes (each component LE)
//   list      = u32 length  i64*
//   string    = u32 length  bytes
//   shapes    = u32 count  shape*
//
// Version 1 is version 2 without CollectiveAttrs' last two fields (num_partitions,
// has_dynamic_root), which read as their defaults. Version 3 adds the token dtype, the token
// ops (after_all, send, recv, infeed, outfeed) and their ChannelAttrs, none of which a graph
// of an older version holds. deserialize_graph reads all three versions.
//
// The checksum is the 64-bit FNV-1a of every byte before it. graph_size lets a reader tell a
// truncated blob from a corrupt one.
//
// deserialize_graph treats its input as hostile: it never reads out of bounds, bounds every
// count by the bytes that remain before reserving anything, limits the nesting of bodies and
// the rank of shapes, checks every enum, and verifies the graph it made. It fails with
// INVALID_ARGUMENT for input that is not a graph blob of a version it reads and DATA_LOSS for a
// damaged one, with a message that says what was wrong and at which byte offset.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/byte_io.hpp"
#include "pjrt_lite/ir/detail/attribute_fields.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/verifier.hpp"

namespace pjrt_lite::inline v0_1 {

/// The first four bytes of every serialized graph.
inline constexpr std::array<std::byte, 4> kGraphMagic = {std::byte{'P'}, std::byte{'J'},
                                                         std::byte{'L'}, std::byte{'G'}};
/// The format version this build writes, and the oldest it reads.
inline constexpr std::uint32_t kGraphFormatVersion = 3;
inline constexpr std::uint32_t kOldestGraphFormatVersion = 1;
/// Magic, version and graph size: the graph encoding starts at this offset.
inline constexpr std::size_t kGraphHeaderSize = 16;
inline constexpr std::size_t kGraphChecksumSize = 8;
/// The deserializer rejects shapes and attribute lists of more dimensions than this (NumPy 2
/// allows 64). Bounding the rank bounds the work shape inference does per node on hostile
/// input; no real program comes near.
inline constexpr std::size_t kMaxSerializedRank = 64;
/// The deserializer rejects bodies nested deeper than this, so hostile input cannot exhaust
/// the stack of the reader or of the verifier.
inline constexpr int kMaxSerializedBodyDepth = 32;

namespace detail {

/// The width of the unit whose bytes are reversed on a big-endian host: the element, or
/// for complex numbers each of its two parts.
constexpr std::size_t component_size(DType t) {
  return is_complex(t) ? byte_size(t) / 2 : std::max<std::size_t>(byte_size(t), 1);
}

/// Reverses the bytes of each component: little-endian <-> host order on big-endian hosts.
inline void swap_components(std::span<std::byte> bytes, std::size_t component) {
  for (std::size_t i = 0; i + component <= bytes.size(); i += component)
    std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                 bytes.begin() + static_cast<std::ptrdiff_t>(i + component));
}

// ---- Writing ---------------------------------------------------------------------------

inline void write_value(ByteWriter& w, Value v) {
  w.u32(static_cast<std::uint32_t>(v.node));
  w.u32(static_cast<std::uint32_t>(v.index));
}

inline void write_list(ByteWriter& w, std::span<const std::int64_t> list) {
  w.u32(static_cast<std::uint32_t>(list.size()));
  for (std::int64_t x : list) w.i64(x);
}

inline void write_shape(ByteWriter& w, const Shape& s) {
  w.u8(static_cast<std::uint8_t>(s.dtype()));
  write_list(w, s.dims());
  if (s.has_default_layout()) {
    w.u8(0);
  } else {
    w.u8(1);
    for (std::int64_t d : s.major_to_minor()) w.i64(d);
  }
}

inline void write_literal(ByteWriter& w, const std::shared_ptr<const Literal>& value) {
  if (!value) {  // only in graphs that would not verify; kept so they round-trip
    w.u8(0);
    return;
  }
  w.u8(1);
  write_shape(w, value->shape());
  w.u64(value->size_bytes());
  if constexpr (std::endian::native == std::endian::little) {
    w.bytes(value->bytes());
  } else {
    std::vector<std::byte> copy(value->bytes().begin(), value->bytes().end());
    swap_components(copy, component_size(value->dtype()));
    w.bytes(copy);
  }
}

struct FieldWriter {
  ByteWriter& w;
  void operator()(std::int64_t v) const { w.i64(v); }
  void operator()(const std::vector<std::int64_t>& v) const { write_list(w, v); }
  void operator()(const Shape& s) const { write_shape(w, s); }
  void operator()(const std::vector<Shape>& v) const {
    w.u32(static_cast<std::uint32_t>(v.size()));
    for (const Shape& s : v) write_shape(w, s);
  }
  void operator()(const std::string& s) const { w.string(s); }
  void operator()(DType t) const { w.u8(static_cast<std::uint8_t>(t)); }
  void operator()(bool b) const { w.u8(b ? 1 : 0); }
  void operator()(ComparisonDirection d) const { w.u8(static_cast<std::uint8_t>(d)); }
  void operator()(ComparisonType t) const { w.u8(static_cast<std::uint8_t>(t)); }
  void operator()(FftType t) const { w.u8(static_cast<std::uint8_t>(t)); }
  void operator()(Transpose t) const { w.u8(static_cast<std::uint8_t>(t)); }
  void operator()(RngAlgorithm a) const { w.u8(static_cast<std::uint8_t>(a)); }
  void operator()(LinalgRoutine r) const { w.u8(static_cast<std::uint8_t>(r)); }
  void operator()(const std::shared_ptr<const Literal>& v) const { write_literal(w, v); }
};

inline void write_graph_contents(ByteWriter& w, const Graph& g);

inline void write_node(ByteWriter& w, const Node& node) {
  w.u8(static_cast<std::uint8_t>(node.op));
  w.u32(static_cast<std::uint32_t>(node.operands.size()));
  for (Value v : node.operands) write_value(w, v);
  w.u8(static_cast<std::uint8_t>(node.attrs.index()));
  std::visit([&](const auto& a) { attribute_fields(a, FieldWriter{w}); }, node.attrs);
  w.u32(static_cast<std::uint32_t>(node.results.size()));
  for (const Shape& s : node.results) write_shape(w, s);
  w.u32(static_cast<std::uint32_t>(node.bodies.size()));
  for (const Graph& body : node.bodies) write_graph_contents(w, body);
}

inline void write_graph_contents(ByteWriter& w, const Graph& g) {
  w.string(g.name());
  w.u32(static_cast<std::uint32_t>(g.num_nodes()));
  for (const Node& node : g.nodes()) write_node(w, node);
  w.u32(static_cast<std::uint32_t>(g.outputs().size()));
  for (Value v : g.outputs()) write_value(w, v);
}

// ---- Reading ---------------------------------------------------------------------------

/// The least number of bytes each item takes, to bound counts before reserving.
inline constexpr std::size_t kMinValueBytes = 8;
inline constexpr std::size_t kMinShapeBytes = 1 + 4 + 1;
inline constexpr std::size_t kMinNodeBytes = 1 + 4 + 1 + 4 + 4;
inline constexpr std::size_t kMinGraphBytes = 4 + 4 + 4;

/// Reads the graph encoding. Beyond bounds, counts and enums, it keeps a budget of the
/// dimensions the verifier will copy for operands and outputs: a node with many operands
/// that all name one high-rank value costs 8 bytes per operand to write but a whole shape
/// per operand to verify, and without a budget a few megabytes would cost gigabytes.
class GraphDecoder {
 public:
  /// Reads the encoding of format `version` (kOldestGraphFormatVersion .. kGraphFormatVersion).
  explicit GraphDecoder(ByteReader& r, std::uint32_t version = kGraphFormatVersion)
      : r_(r), version_(version), dims_left_(2 * static_cast<std::uint64_t>(r.remaining()) + (1u << 20)) {}

  StatusOr<Graph> graph(int depth) {
    if (depth > kMaxSerializedBodyDepth)
      return ByteReader::corrupt_at(r_.offset(), str_cat("bodies are nested deeper than ",
                                                         kMaxSerializedBodyDepth, " levels"));
    GraphParts parts;
    PJRT_LITE_ASSIGN_OR_RETURN(parts.name, r_.string("graph name"));
    auto in_graph = [&](const Status& s) {
      return s.with_context(str_cat("graph '", parts.name, "'"));
    };
    StatusOr<std::size_t> n =
        r_.count("node count", kMinNodeBytes,
                 static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()));
    if (!n.ok()) return in_graph(n.status());
    parts.nodes.reserve(*n);
    for (std::size_t i = 0; i < *n; ++i) {
      StatusOr<Node> node = read_node(parts.nodes, depth);
      if (!node.ok()) return in_graph(node.status().with_context(str_cat("node %", i)));
      parts.nodes.push_back(std::move(node).value());
    }
    StatusOr<std::size_t> outputs = r_.count("output count", kMinValueBytes);
    if (!outputs.ok()) return in_graph(outputs.status());
    parts.outputs.reserve(*outputs);
    for (std::size_t k = 0; k < *outputs; ++k) {
      StatusOr<Value> v = read_value(parts.nodes, "output");
      if (!v.ok()) return in_graph(v.status().with_context(str_cat("output ", k)));
      parts.outputs.push_back(*v);
    }
    return Graph::from_parts(std::move(parts));
  }

 private:
  Status corrupt(std::size_t at, std::string_view message) const {
    return ByteReader::corrupt_at(at, message);
  }

  /// A value reference; charges the budget for the shape the verifier will copy.
  StatusOr<Value> read_value(const std::vector<Node>& earlier, std::string_view what) {
    const std::size_t at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t node, r_.u32(what));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t index, r_.u32(what));
    Value v{static_cast<std::int32_t>(node), static_cast<std::int32_t>(index), 0};
    // Bad references are left for the verifier, which stops at the first one.
    if (v.valid() && static_cast<std::size_t>(v.node) < earlier.size() &&
        static_cast<std::size_t>(v.index) <
            earlier[static_cast<std::size_t>(v.node)].results.size()) {
      const std::uint64_t cost =
          1 + static_cast<std::uint64_t>(earlier[static_cast<std::size_t>(v.node)]
                                             .results[static_cast<std::size_t>(v.index)]
                                             .rank());
      if (cost > dims_left_)
        return corrupt(at,
                       "the graph refers to its values' shapes far more often than a graph "
                       "of this size can (hostile input?)");
      dims_left_ -= cost;
    }
    return v;
  }

  StatusOr<std::vector<std::int64_t>> read_list() {
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t n, r_.count("list length", 8, kMaxSerializedRank));
    std::vector<std::int64_t> out(n);
    for (std::int64_t& x : out) {
      PJRT_LITE_ASSIGN_OR_RETURN(x, r_.i64("list element"));
    }
    return out;
  }

  StatusOr<DType> read_dtype() {
    const std::size_t at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t b, r_.u8("dtype"));
    const auto t = static_cast<DType>(b);
    if (!is_valid(t))
      return corrupt(at, str_cat("dtype ", int{b}, " is not a valid dtype (1..", static_cast<int>(DType::kToken), ")"));
    return t;
  }

  /// A valid shape whose byte size, even ignoring zero dims, fits in int64: code that
  /// multiplies dims in partial products (strides) cannot overflow on it.
  StatusOr<Shape> read_shape() {
    const std::size_t at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(DType dtype, read_dtype());
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t rank, r_.count("rank", 8, kMaxSerializedRank));
    std::vector<std::int64_t> dims(rank);
    auto product = static_cast<std::int64_t>(byte_size(dtype));
    for (std::size_t k = 0; k < rank; ++k) {
      const std::size_t dim_at = r_.offset();
      PJRT_LITE_ASSIGN_OR_RETURN(const std::int64_t d, r_.i64("dimension"));
      if (d < 0) return corrupt(dim_at, str_cat("dimension ", k, " is negative (", d, ")"));
      if (d > 0 && product > std::numeric_limits<std::int64_t>::max() / d)
        return corrupt(dim_at, str_cat("dimension ", k, " (", d, ") makes the byte size of a ",
                                       dtype_name(dtype), " shape overflow int64"));
      if (d > 0) product *= d;
      dims[k] = d;
    }
    const std::size_t layout_at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t layout, r_.u8("layout flag"));
    std::vector<std::int64_t> major_to_minor;
    if (layout == 1) {
      major_to_minor.resize(rank);
      for (std::int64_t& d : major_to_minor) {
        PJRT_LITE_ASSIGN_OR_RETURN(d, r_.i64("layout entry"));
      }
    } else if (layout != 0) {
      return corrupt(layout_at, str_cat("layout flag ", int{layout}, " is neither 0 nor 1"));
    }
    StatusOr<Shape> shape = Shape::make(dtype, dims, major_to_minor);
    if (!shape.ok()) return corrupt(at, shape.status().message());
    // One encoding per shape, so that accepted blobs re-serialize to the same bytes.
    if (layout == 1 && shape->has_default_layout())
      return corrupt(layout_at, "layout flag 1 with the default layout, which is written as 0");
    return shape;
  }

  StatusOr<std::shared_ptr<const Literal>> read_literal() {
    const std::size_t at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t present, r_.u8("constant flag"));
    if (present == 0) return std::shared_ptr<const Literal>();
    if (present != 1)
      return corrupt(at, str_cat("constant flag ", int{present}, " is neither 0 nor 1"));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape shape, read_shape());
    const std::size_t size_at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t size, r_.u64("constant byte count"));
    if (size != static_cast<std::uint64_t>(shape.byte_size()))
      return corrupt(size_at, str_cat("constant byte count ", size, " is not the ",
                                      shape.byte_size(), " bytes of its shape ", shape));
    // The shape's byte size is checked against what remains before any allocation.
    PJRT_LITE_ASSIGN_OR_RETURN(std::span<const std::byte> bytes,
                               r_.bytes(static_cast<std::size_t>(size), "constant elements"));
    // Any byte but 0 and 1 in a bool is undefined behaviour to read.
    if (shape.dtype() == DType::kPred)
      for (std::size_t k = 0; k < bytes.size(); ++k)
        if (bytes[k] != std::byte{0} && bytes[k] != std::byte{1})
          return corrupt(
              r_.offset() - bytes.size() + k,
              str_cat("pred element ", k, " is ", static_cast<int>(bytes[k]), ", not 0 or 1"));
    // A narrow element holds its value in its low bits, as the writer stored it; other bits
    // would make two equal constants compare unequal.
    if (is_narrow(shape.dtype()))
      for (std::size_t k = 0; k < bytes.size(); ++k) {
        const auto b = static_cast<std::uint8_t>(bytes[k]);
        const int w = bit_width(shape.dtype());
        const std::uint8_t canonical = is_narrow_integral(shape.dtype())
                                           ? encode_narrow_int(b, w, is_signed_integral(shape.dtype()))
                                           : static_cast<std::uint8_t>(b & ((1u << w) - 1));
        if (b != canonical)
          return corrupt(r_.offset() - bytes.size() + k,
                         str_cat(dtype_name(shape.dtype()), " element ", k, " is byte ", int{b},
                                 ", not a stored ", dtype_name(shape.dtype()), " value"));
      }
    Literal lit(std::move(shape));
    if (!bytes.empty()) std::copy(bytes.begin(), bytes.end(), lit.bytes().begin());
    if constexpr (std::endian::native != std::endian::little)
      swap_components(lit.bytes(), component_size(lit.dtype()));
    return std::make_shared<const Literal>(std::move(lit));
  }

  template <class E>
  StatusOr<E> read_enum(std::string_view what, E last) {
    const std::size_t at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t b, r_.u8(what));
    if (b > static_cast<std::uint8_t>(last))
      return corrupt(
          at, str_cat(what, " ", int{b}, " is out of range (0..", static_cast<int>(last), ")"));
    return static_cast<E>(b);
  }

  /// Reads one field of an attribute; the first error sticks in `status`. Only the first
  /// `stored` fields are in the bytes; the others keep their defaults.
  struct FieldReader {
    GraphDecoder& d;
    Status& status;
    std::size_t stored;
    template <class T>
    void operator()(T& field) {
      if (!status.ok() || stored == 0) return;
      --stored;
      StatusOr<T> v = d.read_field(static_cast<T*>(nullptr));
      if (v.ok())
        field = std::move(v).value();
      else
        status = v.status();
    }
  };
  StatusOr<std::int64_t> read_field(std::int64_t*) { return r_.i64("integer attribute"); }
  StatusOr<std::vector<std::int64_t>> read_field(std::vector<std::int64_t>*) { return read_list(); }
  StatusOr<Shape> read_field(Shape*) { return read_shape(); }
  StatusOr<std::vector<Shape>> read_field(std::vector<Shape>*) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t n, r_.count("shape list length", kMinShapeBytes, kMaxSerializedRank));
    std::vector<Shape> out;
    for (std::size_t k = 0; k < n; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, read_shape());
      out.push_back(std::move(s));
    }
    return out;
  }
  StatusOr<std::string> read_field(std::string*) { return r_.string("text attribute"); }
  StatusOr<DType> read_field(DType*) { return read_dtype(); }
  StatusOr<bool> read_field(bool*) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t b, r_.u8("flag attribute"));
    if (b > 1)
      return ByteReader::corrupt_at(r_.offset() - 1,
                                    str_cat("flag attribute is ", int{b}, ", not 0 or 1"));
    return b == 1;
  }
  StatusOr<ComparisonDirection> read_field(ComparisonDirection*) {
    return read_enum("comparison direction", ComparisonDirection::kLt);
  }
  StatusOr<ComparisonType> read_field(ComparisonType*) {
    return read_enum("comparison type", ComparisonType::kUnsigned);
  }
  StatusOr<FftType> read_field(FftType*) { return read_enum("fft type", FftType::kIrfft); }
  StatusOr<Transpose> read_field(Transpose*) { return read_enum("transpose_a", Transpose::kAdjoint); }
  StatusOr<RngAlgorithm> read_field(RngAlgorithm*) {
    return read_enum("rng_algorithm", RngAlgorithm::kPhilox);
  }
  StatusOr<LinalgRoutine> read_field(LinalgRoutine*) {
    return read_enum("linalg routine", LinalgRoutine::kGees);
  }
  StatusOr<std::shared_ptr<const Literal>> read_field(std::shared_ptr<const Literal>*) {
    return read_literal();
  }

  template <std::size_t I = 0>
  StatusOr<Attributes> read_attributes(std::size_t index) {
    if constexpr (I == std::variant_size_v<Attributes>) {
      return internal_error("unreachable: attributes index was checked");
    } else {
      if (index != I) return read_attributes<I + 1>(index);
      using A = std::variant_alternative_t<I, Attributes>;
      A a;
      Status status;
      std::size_t stored = std::numeric_limits<std::size_t>::max();
      // Version 1 ends CollectiveAttrs before num_partitions and has_dynamic_root.
      if (std::is_same_v<A, CollectiveAttrs> && version_ < 2) stored = 8;
      attribute_fields(a, FieldReader{*this, status, stored});
      PJRT_LITE_RETURN_IF_ERROR(status);
      return Attributes(std::in_place_index<I>, std::move(a));
    }
  }

  StatusOr<Node> read_node(const std::vector<Node>& earlier, int depth) {
    Node node;
    const std::size_t op_at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t op, r_.u8("opcode"));
    node.op = static_cast<OpCode>(op);
    if (!is_valid(node.op))
      return corrupt(op_at,
                     str_cat("opcode ", int{op}, " is not a valid op (0..", kOpCodeCount - 1, ")"));
    const std::string_view name = op_name(node.op);

    // Operand counts are checked here, not only by the verifier, because the verifier
    // copies every operand's shape before it looks at the count.
    const std::size_t count_at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t n_operands, r_.count("operand count", kMinValueBytes));
    const int fixed = operand_count(node.op);
    std::size_t max_operands = std::numeric_limits<std::size_t>::max();
    if (node.op == OpCode::kDynamicSlice) max_operands = 1 + kMaxSerializedRank;
    if (node.op == OpCode::kDynamicUpdateSlice) max_operands = 2 + kMaxSerializedRank;
    if ((fixed >= 0 && n_operands != static_cast<std::size_t>(fixed)) || n_operands > max_operands)
      return corrupt(count_at, str_cat(name, " with ", n_operands, " operands"));
    node.operands.reserve(n_operands);
    for (std::size_t k = 0; k < n_operands; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, read_value(earlier, "operand"));
      node.operands.push_back(v);
    }

    const std::size_t attrs_at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t index, r_.u8("attributes kind"));
    if (index != attributes_index_for(node.op))
      return corrupt(attrs_at, str_cat("attributes kind ", int{index}, " (", attributes_name(index),
                                       ") does not fit ", name, ", which takes ",
                                       attributes_name(attributes_index_for(node.op))));
    PJRT_LITE_ASSIGN_OR_RETURN(node.attrs, read_attributes(index));

    const std::size_t results_at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t n_results, r_.count("result count", kMinShapeBytes));
    if (!is_variadic_result(node.op) && n_results != 1)
      return corrupt(results_at, str_cat(name, " with ", n_results, " results"));
    node.results.reserve(n_results);
    for (std::size_t k = 0; k < n_results; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, read_shape());
      node.results.push_back(std::move(s));
    }

    const std::size_t bodies_at = r_.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t n_bodies, r_.count("body count", kMinGraphBytes));
    if (!body_count_fits(node.op, n_bodies))
      return corrupt(bodies_at, str_cat(name, " with ", n_bodies, " bodies"));
    node.bodies.reserve(n_bodies);
    for (std::size_t k = 0; k < n_bodies; ++k) {
      StatusOr<Graph> body = graph(depth + 1);
      if (!body.ok()) return body.status().with_context(str_cat(name, ": body ", k));
      node.bodies.push_back(std::move(body).value());
    }
    return node;
  }

  ByteReader& r_;
  std::uint32_t version_;
  std::uint64_t dims_left_;
};

}  // namespace detail

/// Appends the encoding of `g` alone (no magic, version or checksum) to `w`: for formats
/// that embed a graph in a container of their own. read_graph reads it back.
inline void write_graph(ByteWriter& w, const Graph& g) { detail::write_graph_contents(w, g); }

/// Reads one graph written by write_graph (of format `version`), with every hostile-input
/// check of deserialize_graph, and verifies it. Leaves `r` after the graph. Errors are
/// DATA_LOSS.
inline StatusOr<Graph> read_graph(ByteReader& r, std::uint32_t version = kGraphFormatVersion) {
  const std::size_t start = r.offset();
  detail::GraphDecoder decoder(r, version);
  PJRT_LITE_ASSIGN_OR_RETURN(Graph g, decoder.graph(0));
  // Decoding checked the framing; verifying checks the meaning. A blob whose checksum is
  // right but whose graph is not was damaged before it was checksummed, or forged.
  if (Status s = verify(g); !s.ok())
    return data_loss_error(str_cat("the graph at byte offsets [", start, ", ", r.offset(),
                                   ") does not verify: ", s.message()));
  return g;
}

/// The bytes of `g`: header, graph, checksum (see the top of this file). `g` should be
/// verified; a graph that is not serializes too, but deserializing it fails. Shapes of rank
/// above kMaxSerializedRank serialize but are rejected when read.
inline std::vector<std::byte> serialize(const Graph& g) {
  ByteWriter w;
  w.bytes(kGraphMagic);
  w.u32(kGraphFormatVersion);
  const std::size_t size_at = w.size();
  w.u64(0);  // the graph's size, patched below
  write_graph(w, g);
  w.patch_u64(size_at, w.size() - kGraphHeaderSize);
  w.u64(fnv1a64(w.view()));
  return w.take();
}

/// The graph in `bytes` (as serialize writes it), verified. INVALID_ARGUMENT if the bytes
/// are not a pjrt_lite graph or are of a format version this build does not read (newer
/// than kGraphFormatVersion, older than kOldestGraphFormatVersion); DATA_LOSS if they are
/// truncated, fail the checksum, or decode to something malformed. Never reads outside
/// `bytes`, takes time linear in bytes.size(), and allocates at most a fixed multiple of
/// it (decoded nodes are larger than their encoding: about 20x at worst). Thread-safe.
inline StatusOr<Graph> deserialize_graph(std::span<const std::byte> bytes) {
  const auto fail = [](const Status& s) { return s.with_context("deserialize_graph"); };
  const std::size_t magic_seen = std::min(bytes.size(), kGraphMagic.size());
  if (!std::equal(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(magic_seen),
                  kGraphMagic.begin())) {
    std::string found;
    for (std::size_t i = 0; i < magic_seen; ++i)
      found += str_cat(i ? " " : "", to_hex(static_cast<std::uint64_t>(bytes[i]), 2));
    return fail(invalid_argument_error(str_cat(
        "not a pjrt_lite graph: expected the magic \"PJLG\" (50 4a 4c 47) at byte offset 0, "
        "found ",
        found)));
  }
  ByteReader r(bytes);
  if (auto magic = r.bytes(kGraphMagic.size(), "magic"); !magic.ok()) return fail(magic.status());
  const std::size_t version_at = r.offset();
  StatusOr<std::uint32_t> version = r.u32("format version");
  if (!version.ok()) return fail(version.status());
  if (*version < kOldestGraphFormatVersion || *version > kGraphFormatVersion)
    return fail(invalid_argument_error(
        str_cat("unsupported graph format version ", *version, " (at byte offset ", version_at,
                "); this build reads versions ", kOldestGraphFormatVersion, " to ", kGraphFormatVersion)));
  const std::size_t size_at = r.offset();
  StatusOr<std::uint64_t> size = r.u64("graph size");
  if (!size.ok()) return fail(size.status());
  const std::size_t after_header = r.remaining();
  if (after_header < kGraphChecksumSize || *size > after_header - kGraphChecksumSize)
    return fail(data_loss_error(str_cat("truncated: the header declares a graph of ", *size,
                                        " bytes and an ", kGraphChecksumSize,
                                        "-byte checksum after byte offset ", kGraphHeaderSize,
                                        ", but the input ends at byte offset ", bytes.size())));
  if (*size < after_header - kGraphChecksumSize)
    return fail(ByteReader::corrupt_at(
        size_at, str_cat("the header declares a graph of ", *size, " bytes, which leaves ",
                         after_header - kGraphChecksumSize - *size,
                         " stray bytes before the checksum at the end")));
  const std::size_t checksum_at = kGraphHeaderSize + static_cast<std::size_t>(*size);
  ByteReader checksum_reader(bytes.subspan(checksum_at), checksum_at);
  const std::uint64_t stored = checksum_reader.u64("checksum").value();  // length checked above
  const std::uint64_t computed = fnv1a64(bytes.first(checksum_at));
  if (stored != computed)
    return fail(data_loss_error(str_cat("checksum mismatch at byte offset ", checksum_at,
                                        ": stored ", hex_u64(stored), ", computed ",
                                        hex_u64(computed), " over bytes [0, ", checksum_at, ")")));

  ByteReader graph_reader(bytes.subspan(kGraphHeaderSize, static_cast<std::size_t>(*size)),
                          kGraphHeaderSize);
  StatusOr<Graph> g = read_graph(graph_reader, *version);
  if (!g.ok()) return fail(g.status());
  if (!graph_reader.at_end())
    return fail(ByteReader::corrupt_at(
        graph_reader.offset(), str_cat("the graph ends here, but the header declares it ends at "
                                       "byte offset ",
                                       checksum_at)));
  return g;
}

}  // namespace pjrt_lite
