#pragma once
// A readable text form of a Graph, for logs, test expectations and debugging. One line per
// node, `%id = op(operands) {attributes} : result types`, bodies indented under their node,
// and the outputs last:
//
//   graph main {
//     %0 = parameter {number=0} : f32[2,3]
//     %1 = constant {value=1} : f32[]
//     %2 = broadcast_in_dim(%1) {broadcast_dimensions=[]} : f32[2,3]
//     %3 = add(%0, %2) : f32[2,3]
//     return %3
//   }
//
// It is not a serialization format (stablehlo/ writes and reads StableHLO text): large
// constants are elided and attributes already visible in the result type (reshape's dims,
// convert's dtype) are left out.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/detail/attribute_fields.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1 {

/// Constants with more elements than this print as `<f32[100]>` instead of their values.
inline constexpr std::int64_t kMaxPrintedConstantElements = 16;

namespace detail {

inline std::string value_ref(const Graph& g, Value v) {
  // Multi-result nodes always show the result index, so `%4` is never ambiguous.
  if (g.contains(v) && g.node(v).results.size() > 1) return str_cat("%", v.node, "#", v.index);
  return to_string(v);
}

/// One attribute field's value as the text form shows it.
template <class T>
std::string field_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
    return Shape::dims_string(v);
  } else if constexpr (std::is_same_v<T, ComparisonDirection>) {
    return std::string(comparison_direction_name(v));
  } else if constexpr (std::is_same_v<T, ComparisonType>) {
    return std::string(comparison_type_name(v));
  } else if constexpr (std::is_same_v<T, Transpose>) {
    return std::string(transpose_name(v));
  } else if constexpr (std::is_same_v<T, RngAlgorithm>) {
    return std::string(rng_algorithm_name(v));
  } else if constexpr (std::is_same_v<T, FftType>) {
    return std::string(fft_type_name(v));
  } else {
    return str_cat(v);
  }
}

/// `name=value, ...` over the fields of the attributes `a`, `names` naming them in the order
/// attribute_fields walks them: the text of the alternatives that show each of their fields.
/// A field added to the alternative and not to `names` fails to compile here.
template <class A, std::size_t N>
std::string named_fields_text(const A& a, const std::string_view (&names)[N]) {
  static_assert(N == attribute_field_count<A>(),
                "named_fields_text needs one name for each field attribute_fields walks");
  std::string text;
  std::size_t i = 0;
  attribute_fields(a, [&](const auto& field) {
    text += str_cat(i == 0 ? "" : ", ", names[i], "=", field_text(field));
    ++i;
  });
  return text;
}

/// The attribute list without braces; empty when there is nothing to show.
inline std::string attributes_text(const Node& node) {
  auto dims = [](const std::vector<std::int64_t>& d) { return Shape::dims_string(d); };
  return std::visit(
      [&](const auto& a) -> std::string {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, ParameterAttrs>) {
          return str_cat("number=", a.number);
        } else if constexpr (std::is_same_v<A, ConstantAttrs>) {
          if (!a.value) return "value=<null>";
          if (a.value->element_count() > kMaxPrintedConstantElements)
            return str_cat("value=<", a.value->shape(), ">");
          // Literal::to_string starts with the shape, which the result type already shows.
          std::string text = a.value->to_string();
          const std::string prefix = a.value->shape().to_string() + " ";
          if (text.starts_with(prefix)) text.erase(0, prefix.size());
          return str_cat("value=", text);
        } else if constexpr (std::is_same_v<A, IotaAttrs>) {
          return str_cat("iota_dimension=", a.iota_dimension);
        } else if constexpr (std::is_same_v<A, CompareAttrs>) {
          return named_fields_text(a, {"direction", "type"});
        } else if constexpr (std::is_same_v<A, BroadcastInDimAttrs>) {
          return str_cat("broadcast_dimensions=", dims(a.broadcast_dimensions));
        } else if constexpr (std::is_same_v<A, TransposeAttrs>) {
          return named_fields_text(a, {"permutation"});
        } else if constexpr (std::is_same_v<A, SliceAttrs>) {
          return named_fields_text(a, {"start_indices", "limit_indices", "strides"});
        } else if constexpr (std::is_same_v<A, ConcatenateAttrs>) {
          return named_fields_text(a, {"dimension"});
        } else if constexpr (std::is_same_v<A, PadAttrs>) {
          return named_fields_text(a,
                                   {"edge_padding_low", "edge_padding_high", "interior_padding"});
        } else if constexpr (std::is_same_v<A, ReverseAttrs> || std::is_same_v<A, ReduceAttrs>) {
          return named_fields_text(a, {"dimensions"});
        } else if constexpr (std::is_same_v<A, DynamicSliceAttrs>) {
          return named_fields_text(a, {"slice_sizes"});
        } else if constexpr (std::is_same_v<A, DotDimensionNumbers>) {
          return named_fields_text(a, {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                       "lhs_contracting_dimensions", "rhs_contracting_dimensions"});
        } else if constexpr (std::is_same_v<A, GatherAttrs>) {
          return named_fields_text(a, {"offset_dims", "collapsed_slice_dims",
                                       "operand_batching_dims", "start_indices_batching_dims",
                                       "start_index_map", "index_vector_dim", "slice_sizes",
                                       "indices_are_sorted"});
        } else if constexpr (std::is_same_v<A, ScatterAttrs>) {
          return named_fields_text(a, {"update_window_dims", "inserted_window_dims",
                                       "input_batching_dims", "scatter_indices_batching_dims",
                                       "scatter_dims_to_operand_dims", "index_vector_dim",
                                       "indices_are_sorted", "unique_indices"});
        } else if constexpr (std::is_same_v<A, WindowAttrs>) {
          return named_fields_text(a, {"window_dimensions", "window_strides", "base_dilations",
                                       "window_dilations", "padding_low", "padding_high"});
        } else if constexpr (std::is_same_v<A, TriangularSolveAttrs>) {
          return named_fields_text(a, {"left_side", "lower", "unit_diagonal", "transpose_a"});
        } else if constexpr (std::is_same_v<A, RngBitGeneratorAttrs>) {
          return named_fields_text(a, {"rng_algorithm", "output"});
        } else if constexpr (std::is_same_v<A, FftAttrs>) {
          return named_fields_text(a, {"fft_type", "fft_length"});
        } else if constexpr (std::is_same_v<A, ConvolutionAttrs>) {
          return str_cat(
              "dimension_numbers=", convolution_dimension_numbers_string(a),
              ", window_strides=", dims(a.window_strides), ", padding_low=", dims(a.padding_low),
              ", padding_high=", dims(a.padding_high), ", lhs_dilation=", dims(a.lhs_dilation),
              ", rhs_dilation=", dims(a.rhs_dilation),
              ", window_reversal=", dims(a.window_reversal),
              ", feature_group_count=", a.feature_group_count,
              ", batch_group_count=", a.batch_group_count);
        } else if constexpr (std::is_same_v<A, ReducePrecisionAttrs>) {
          return named_fields_text(a, {"exponent_bits", "mantissa_bits"});
        } else if constexpr (std::is_same_v<A, SortAttrs>) {
          return named_fields_text(a, {"dimension", "is_stable"});
        } else if constexpr (std::is_same_v<A, TopKAttrs>) {
          return named_fields_text(a, {"k"});
        } else if constexpr (std::is_same_v<A, LinalgAttrs>) {
          auto ch = [](std::int64_t c) { return std::string(1, static_cast<char>(c)); };
          return str_cat("routine=", linalg_routine_name(a.routine), ", uplo=", ch(a.uplo),
                         ", mode=", ch(a.mode), ", full_matrices=", a.full_matrices ? "true" : "false",
                         ", side=", ch(a.side), ", trans=", ch(a.trans), ", diag=", ch(a.diag),
                         ", low=", a.low, ", high=", a.high, ", left=", a.left ? "true" : "false",
                         ", transpose=", a.transpose ? "true" : "false",
                         ", compute_left=", ch(a.compute_left), ", compute_right=", ch(a.compute_right),
                         ", sort=", ch(a.sort));
        } else if constexpr (std::is_same_v<A, CollectiveAttrs>) {
          std::string groups = "[";
          for (std::size_t r = 0; r < a.group_count(); ++r) {
            const auto row = a.group(r);
            groups += str_cat(r ? ", " : "",
                              dims(std::vector<std::int64_t>(row.begin(), row.end())));
          }
          std::string text = str_cat(node.op == OpCode::kCollectivePermute ? "source_target_pairs="
                                                                           : "replica_groups=",
                                     groups, "]");
          if (a.channel_id != 0 || a.channel_type != 0)
            text += str_cat(", channel_id=", a.channel_id, ", channel_type=", a.channel_type);
          if (a.use_global_device_ids) text += ", use_global_device_ids=true";
          if (a.num_partitions != 1) text += str_cat(", num_partitions=", a.num_partitions);
          if (a.has_dynamic_root) text += ", has_dynamic_root=true";
          if (node.op == OpCode::kAllGather) text += str_cat(", all_gather_dim=", a.dimension);
          if (node.op == OpCode::kReduceScatter)
            text += str_cat(", scatter_dimension=", a.dimension);
          if (node.op == OpCode::kAllToAll)
            text += str_cat(", split_dimension=", a.dimension,
                            ", concat_dimension=", a.concat_dimension,
                            ", split_count=", a.split_count);
          return text;
        } else if constexpr (std::is_same_v<A, ChannelAttrs>) {
          std::string text;
          auto add = [&](const std::string& part) { text += str_cat(text.empty() ? "" : ", ", part); };
          if (a.channel_id != 0 || a.channel_type != 0)
            add(str_cat("channel_id=", a.channel_id, ", channel_type=", a.channel_type));
          if (a.is_host_transfer) add("is_host_transfer=true");
          if (!a.source_target_pairs.empty()) {
            std::string pairs = "[";
            for (std::size_t r = 0; r + 1 < a.source_target_pairs.size(); r += 2)
              pairs += str_cat(r ? ", " : "", "[", a.source_target_pairs[r], ",", a.source_target_pairs[r + 1], "]");
            add(str_cat("source_target_pairs=", pairs, "]"));
          }
          if (!a.config.empty()) add(str_cat("config=\"", a.config, "\""));
          return text;
        } else {
          // NoAttrs; ConvertAttrs and ReshapeAttrs repeat the result type.
          return "";
        }
      },
      node.attrs);
}

inline void print_graph(std::string& out, const Graph& g, const std::string& indent) {
  out += str_cat(indent, "graph ", g.name(), " {\n");
  const std::string inner = indent + "  ";
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    out += str_cat(inner, "%", i);
    if (node.results.size() > 1) out += str_cat(":", node.results.size());
    out += str_cat(" = ", op_name(node.op));
    if (!node.operands.empty()) {
      out += '(';
      for (std::size_t k = 0; k < node.operands.size(); ++k)
        out += str_cat(k ? ", " : "", value_ref(g, node.operands[k]));
      out += ')';
    }
    if (std::string attrs = attributes_text(node); !attrs.empty()) out += str_cat(" {", attrs, "}");
    out += " : ";
    for (std::size_t r = 0; r < node.results.size(); ++r)
      out += str_cat(r ? ", " : "", node.results[r]);
    out += '\n';
    for (const Graph& body : node.bodies) print_graph(out, body, inner + "  ");
  }
  out += str_cat(inner, "return");
  for (std::size_t k = 0; k < g.outputs().size(); ++k)
    out += str_cat(k ? ", " : " ", value_ref(g, g.outputs()[k]));
  out += str_cat("\n", indent, "}\n");
}

}  // namespace detail

/// The text form of `g`, ending in a newline. Prints unverified graphs too, as far as they
/// make sense, so it can show what the verifier rejected.
inline std::string to_string(const Graph& g) {
  std::string out;
  detail::print_graph(out, g, "");
  return out;
}

}  // namespace pjrt_lite
