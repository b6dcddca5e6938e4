#pragma once
// A stable 64-bit fingerprint of a graph's meaning, the key of compilation caches. It covers
// opcodes, operand structure, attributes, result shapes, constants' values, bodies,
// parameters and outputs; it leaves out names (renaming a graph does not change what it
// computes). It takes the attributes' fields from the list the serializer walks
// (detail/attribute_fields.hpp), so no field can be saved but left out of the key. It is the same in every process and on every platform: every integer enters as
// its 64-bit two's-complement value and constants' elements as little-endian bytes, whatever
// the host's byte order. Not a cryptographic hash.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/detail/attribute_fields.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

/// Absorbs 64-bit words: each step xors the word in and applies the splitmix64 finalizer, a
/// bijection with full avalanche, so every word affects every bit of the state.
class Hasher {
 public:
  void word(std::uint64_t w) {
    std::uint64_t x = (state_ ^ w) + 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    state_ = x ^ (x >> 31);
  }
  void i64(std::int64_t v) { word(static_cast<std::uint64_t>(v)); }
  void list(std::span<const std::int64_t> values) {
    i64(static_cast<std::int64_t>(values.size()));  // so [1],[2,3] differs from [1,2],[3]
    for (std::int64_t v : values) i64(v);
  }
  void text(std::string_view s) {
    i64(static_cast<std::int64_t>(s.size()));
    bytes_le(reinterpret_cast<const unsigned char*>(s.data()), s.size());
  }
  void shape(const Shape& s) {
    i64(static_cast<std::int64_t>(s.dtype()));
    list(s.dims());
    list(s.major_to_minor());
  }
  /// Elements of `component_size` bytes each, taken in little-endian order.
  void elements(const std::byte* data, std::size_t size, std::size_t component_size) {
    i64(static_cast<std::int64_t>(size));
    if constexpr (std::endian::native == std::endian::little) {
      bytes_le(reinterpret_cast<const unsigned char*>(data), size);
    } else {
      std::vector<unsigned char> swapped(size);
      for (std::size_t i = 0; i < size; i += component_size)
        for (std::size_t j = 0; j < component_size; ++j)
          swapped[i + j] = static_cast<unsigned char>(data[i + component_size - 1 - j]);
      bytes_le(swapped.data(), size);
    }
  }
  [[nodiscard]] std::uint64_t value() const { return state_; }

 private:
  // Packs bytes into words, byte k of a chunk at bits 8k: the same words on every host.
  void bytes_le(const unsigned char* p, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w = 0;
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&w, p + i, 8);
      } else {
        for (std::size_t k = 0; k < 8; ++k) w |= static_cast<std::uint64_t>(p[i + k]) << (8 * k);
      }
      word(w);
    }
    if (i < n) {
      std::uint64_t w = 0;
      for (std::size_t k = 0; i + k < n; ++k) w |= static_cast<std::uint64_t>(p[i + k]) << (8 * k);
      word(w);
    }
  }

  std::uint64_t state_ = 0x70a1e5eed0c0ffeeull;
};

/// Hashes one attribute field: integers, flags and enumerators as one word each, lists
/// length-prefixed, shapes by dtype, dims and layout, constants by shape and little-endian
/// bytes (-1 for a missing one). A field of a type not listed here does not compile.
struct FieldHasher {
  Hasher& h;
  template <class T>
  void operator()(const T& field) const {
    if constexpr (std::is_same_v<T, std::int64_t>) {
      h.i64(field);
    } else if constexpr (std::is_same_v<T, bool>) {
      h.i64(field ? 1 : 0);
    } else if constexpr (std::is_enum_v<T>) {
      h.i64(static_cast<std::int64_t>(field));
    } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
      h.list(field);
    } else if constexpr (std::is_same_v<T, Shape>) {
      h.shape(field);
    } else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
      h.i64(static_cast<std::int64_t>(field.size()));
      for (const Shape& s : field) h.shape(s);
    } else if constexpr (std::is_same_v<T, std::string>) {
      h.text(field);
    } else if constexpr (std::is_same_v<T, std::shared_ptr<const Literal>>) {
      if (!field) {
        h.i64(-1);
        return;
      }
      const Literal& lit = *field;
      h.shape(lit.shape());
      const std::size_t component =
          is_complex(lit.dtype()) ? byte_size(lit.dtype()) / 2 : byte_size(lit.dtype());
      h.elements(lit.bytes().data(), lit.size_bytes(), component == 0 ? 1 : component);
    } else {
      static_assert(sizeof(T) == 0, "an attribute field of a new type needs a hash here");
    }
  }
};

/// The alternative's index, then its fields in the order of attribute_fields, the list the
/// serializer walks too.
inline void hash_attributes(Hasher& h, const Attributes& attrs) {
  h.i64(static_cast<std::int64_t>(attrs.index()));
  std::visit([&](const auto& a) { attribute_fields(a, FieldHasher{h}); }, attrs);
}

inline void hash_graph(Hasher& h, const Graph& g) {
  h.i64(g.num_nodes());
  for (const Node& node : g.nodes()) {
    h.i64(static_cast<std::int64_t>(node.op));
    h.i64(static_cast<std::int64_t>(node.operands.size()));
    for (Value v : node.operands) {
      h.i64(v.node);
      h.i64(v.index);
    }
    hash_attributes(h, node.attrs);
    h.i64(static_cast<std::int64_t>(node.results.size()));
    for (const Shape& s : node.results) h.shape(s);
    h.i64(static_cast<std::int64_t>(node.bodies.size()));
    for (const Graph& body : node.bodies) hash_graph(h, body);
  }
  h.i64(static_cast<std::int64_t>(g.outputs().size()));
  for (Value v : g.outputs()) {
    h.i64(v.node);
    h.i64(v.index);
  }
}

}  // namespace detail

/// The fingerprint of `g`: equal for graphs that compute the same thing the same way (names
/// aside), different (up to 64-bit collisions) when anything else differs.
inline std::uint64_t fingerprint(const Graph& g) {
  detail::Hasher h;
  h.text("pjrt_lite.ir.v1");  // bump when the hashed encoding changes
  detail::hash_graph(h, g);
  return h.value();
}

/// Sixteen lowercase hex digits, most significant first.
inline std::string fingerprint_to_hex(std::uint64_t fp) { return to_hex(fp, 16); }

/// fingerprint(g) as hex text.
inline std::string fingerprint_hex(const Graph& g) { return fingerprint_to_hex(fingerprint(g)); }

}  // namespace pjrt_lite
