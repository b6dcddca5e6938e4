#pragma once
// A stable 64-bit fingerprint of a graph's meaning, the key of compilation caches. It covers
// opcodes, operand structure, attributes, result shapes, constants' values, bodies,
// parameters and outputs; it leaves out names (renaming a graph does not change what it
// computes). It is the same in every process and on every platform: every integer enters as
// its 64-bit two's-complement value and constants' elements as little-endian bytes, whatever
// the host's byte order. Not a cryptographic hash.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite {

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

inline void hash_attributes(Hasher& h, const Attributes& attrs) {
  h.i64(static_cast<std::int64_t>(attrs.index()));
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, ParameterAttrs>) {
          h.i64(a.number);
          h.shape(a.shape);
        } else if constexpr (std::is_same_v<A, ConstantAttrs>) {
          if (!a.value) {
            h.i64(-1);
            return;
          }
          const Literal& lit = *a.value;
          h.shape(lit.shape());
          const std::size_t component =
              is_complex(lit.dtype()) ? byte_size(lit.dtype()) / 2 : byte_size(lit.dtype());
          h.elements(lit.bytes().data(), lit.size_bytes(), component == 0 ? 1 : component);
        } else if constexpr (std::is_same_v<A, IotaAttrs>) {
          h.shape(a.shape);
          h.i64(a.iota_dimension);
        } else if constexpr (std::is_same_v<A, CompareAttrs>) {
          h.i64(static_cast<std::int64_t>(a.direction));
          h.i64(static_cast<std::int64_t>(a.type));
        } else if constexpr (std::is_same_v<A, ConvertAttrs>) {
          h.i64(static_cast<std::int64_t>(a.dtype));
        } else if constexpr (std::is_same_v<A, BroadcastInDimAttrs>) {
          h.list(a.dims);
          h.list(a.broadcast_dimensions);
        } else if constexpr (std::is_same_v<A, ReshapeAttrs>) {
          h.list(a.dims);
        } else if constexpr (std::is_same_v<A, TransposeAttrs>) {
          h.list(a.permutation);
        } else if constexpr (std::is_same_v<A, SliceAttrs>) {
          h.list(a.start_indices);
          h.list(a.limit_indices);
          h.list(a.strides);
        } else if constexpr (std::is_same_v<A, ConcatenateAttrs>) {
          h.i64(a.dimension);
        } else if constexpr (std::is_same_v<A, PadAttrs>) {
          h.list(a.edge_padding_low);
          h.list(a.edge_padding_high);
          h.list(a.interior_padding);
        } else if constexpr (std::is_same_v<A, ReverseAttrs> || std::is_same_v<A, ReduceAttrs>) {
          h.list(a.dimensions);
        } else if constexpr (std::is_same_v<A, DynamicSliceAttrs>) {
          h.list(a.slice_sizes);
        } else if constexpr (std::is_same_v<A, DotDimensionNumbers>) {
          h.list(a.lhs_batching_dimensions);
          h.list(a.rhs_batching_dimensions);
          h.list(a.lhs_contracting_dimensions);
          h.list(a.rhs_contracting_dimensions);
        } else if constexpr (std::is_same_v<A, GatherAttrs>) {
          h.list(a.offset_dims);
          h.list(a.collapsed_slice_dims);
          h.list(a.operand_batching_dims);
          h.list(a.start_indices_batching_dims);
          h.list(a.start_index_map);
          h.i64(a.index_vector_dim);
          h.list(a.slice_sizes);
          h.i64(a.indices_are_sorted ? 1 : 0);
        } else if constexpr (std::is_same_v<A, ScatterAttrs>) {
          h.list(a.update_window_dims);
          h.list(a.inserted_window_dims);
          h.list(a.input_batching_dims);
          h.list(a.scatter_indices_batching_dims);
          h.list(a.scatter_dims_to_operand_dims);
          h.i64(a.index_vector_dim);
          h.i64(a.indices_are_sorted ? 1 : 0);
          h.i64(a.unique_indices ? 1 : 0);
        } else if constexpr (std::is_same_v<A, WindowAttrs>) {
          h.list(a.window_dimensions);
          h.list(a.window_strides);
          h.list(a.base_dilations);
          h.list(a.window_dilations);
          h.list(a.padding_low);
          h.list(a.padding_high);
        } else if constexpr (std::is_same_v<A, TriangularSolveAttrs>) {
          h.i64(a.left_side ? 1 : 0);
          h.i64(a.lower ? 1 : 0);
          h.i64(a.unit_diagonal ? 1 : 0);
          h.i64(static_cast<std::int64_t>(a.transpose_a));
        } else if constexpr (std::is_same_v<A, RngBitGeneratorAttrs>) {
          h.i64(static_cast<std::int64_t>(a.algorithm));
          h.shape(a.output);
        } else if constexpr (std::is_same_v<A, FftAttrs>) {
          h.i64(static_cast<std::int64_t>(a.fft_type));
          h.list(a.fft_length);
        } else if constexpr (std::is_same_v<A, ConvolutionAttrs>) {
          h.list(a.window_strides);
          h.list(a.padding_low);
          h.list(a.padding_high);
          h.list(a.lhs_dilation);
          h.list(a.rhs_dilation);
          h.list(a.window_reversal);
          h.i64(a.input_batch_dimension);
          h.i64(a.input_feature_dimension);
          h.list(a.input_spatial_dimensions);
          h.i64(a.kernel_input_feature_dimension);
          h.i64(a.kernel_output_feature_dimension);
          h.list(a.kernel_spatial_dimensions);
          h.i64(a.output_batch_dimension);
          h.i64(a.output_feature_dimension);
          h.list(a.output_spatial_dimensions);
          h.i64(a.feature_group_count);
          h.i64(a.batch_group_count);
        } else if constexpr (std::is_same_v<A, ReducePrecisionAttrs>) {
          h.i64(a.exponent_bits);
          h.i64(a.mantissa_bits);
        } else if constexpr (std::is_same_v<A, SortAttrs>) {
          h.i64(a.dimension);
          h.i64(a.is_stable ? 1 : 0);
        } else if constexpr (std::is_same_v<A, TopKAttrs>) {
          h.i64(a.k);
        } else {
          static_assert(std::is_same_v<A, NoAttrs>, "every alternative must be hashed");
        }
      },
      attrs);
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
inline std::string fingerprint_to_hex(std::uint64_t fp) {
  constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, fp >>= 4) out[static_cast<std::size_t>(i)] = kDigits[fp & 0xf];
  return out;
}

/// fingerprint(g) as hex text.
inline std::string fingerprint_hex(const Graph& g) { return fingerprint_to_hex(fingerprint(g)); }

}  // namespace pjrt_lite
