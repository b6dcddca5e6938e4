#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The attribute readers of the op table: each makes one op's IR attributes from its parts,
// whichever syntax they were read from (the pretty forms use the generic form's names), with
// the typed readers they share (integers, lists, flags, enums, padding, windows), each with
// an error that names the attribute.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// `array<i64: ...>`, `[...]` of integers or a rank-0/1 integer `dense<...>`.
inline StatusOr<std::vector<std::int64_t>> int_list_value(const AttrValue& v,
                                                          std::string_view key) {
  using K = AttrValue::Kind;
  if (v.kind == K::kIntArray) return v.ints;
  if (v.kind == K::kList) {
    std::vector<std::int64_t> out;
    for (const AttrValue& item : v.list) {
      if (item.kind != K::kInt) return error_at(item.pos, str_cat("expected an integer in ", key));
      out.push_back(item.i);
    }
    return out;
  }
  if (v.kind == K::kDense && v.dense && v.dense->shape().rank() <= 1 &&
      is_integral(v.dense->dtype())) {
    StatusOr<Literal> as64 = v.dense->convert(DType::kS64);
    if (!as64.ok()) return error_at(v.pos, as64.status().message());
    std::span<const std::int64_t> data = as64->data<std::int64_t>();
    return std::vector<std::int64_t>(data.begin(), data.end());
  }
  return error_at(v.pos, str_cat("expected a list of integers for ", key,
                                 " (array<i64: ...>, [...] or dense<...>)"));
}

/// The integer list `key`; when absent an error naming `op`, or empty if not `required`.
inline StatusOr<std::vector<std::int64_t>> int_list_attr(const AttrDict& attrs,
                                                         std::string_view key, std::string_view op,
                                                         SourcePos pos, bool required = true) {
  const AttrValue* v = find_attr(attrs, key);
  if (v == nullptr) {
    if (!required) return std::vector<std::int64_t>{};
    return error_at(pos, str_cat(op, " needs the attribute ", key));
  }
  return int_list_value(*v, key);
}

/// `[true, false]`, `[1, 0]` or `array<i1: true, false>` as 1s and 0s.
inline StatusOr<std::vector<std::int64_t>> bool_list_value(const AttrValue& v,
                                                           std::string_view key) {
  if (v.kind == AttrValue::Kind::kList) {
    std::vector<std::int64_t> out;
    for (const AttrValue& item : v.list) {
      if (item.kind == AttrValue::Kind::kBool)
        out.push_back(item.b ? 1 : 0);
      else if (item.kind == AttrValue::Kind::kInt)
        out.push_back(item.i);
      else
        return error_at(item.pos, str_cat("expected true or false in ", key));
    }
    return out;
  }
  return int_list_value(v, key);
}

/// The integer `key`; when absent an error naming `op`.
inline StatusOr<std::int64_t> int_attr(const AttrDict& attrs, std::string_view key,
                                       std::string_view op, SourcePos pos) {
  const AttrValue* v = find_attr(attrs, key);
  if (v == nullptr) return error_at(pos, str_cat(op, " needs the attribute ", key));
  if (v->kind != AttrValue::Kind::kInt)
    return error_at(v->pos, str_cat("expected an integer for ", key));
  return v->i;
}

/// `true` or `false`; false when absent.
inline StatusOr<bool> bool_attr(const AttrDict& attrs, std::string_view key) {
  const AttrValue* v = find_attr(attrs, key);
  if (v == nullptr) return false;
  if (v->kind != AttrValue::Kind::kBool)
    return error_at(v->pos, str_cat("expected true or false for ", key));
  return v->b;
}

/// `#stablehlo<kind WORD>` or a bare `WORD`, read by `from_name` (an enum's spelling);
/// nullopt when absent.
template <class E>
StatusOr<std::optional<E>> enum_attr(const AttrDict& attrs, std::string_view key,
                                     StatusOr<E> (*from_name)(std::string_view)) {
  const AttrValue* v = find_attr(attrs, key);
  if (v == nullptr) return std::optional<E>();
  std::string_view word;
  if (v->kind == AttrValue::Kind::kEnum)
    word = v->word;
  else if (v->kind == AttrValue::Kind::kOpaque && !v->text.empty() && v->word.empty())
    word = v->text;
  else
    return error_at(v->pos, str_cat("expected #stablehlo<", key, " ...> for ", key));
  StatusOr<E> value = from_name(word);
  if (!value.ok()) return error_at(v->pos, value.status().message());
  return std::optional<E>(*value);
}

/// enum_attr for an attribute the op needs.
template <class E>
StatusOr<E> required_enum_attr(const AttrDict& attrs, std::string_view key,
                               StatusOr<E> (*from_name)(std::string_view), std::string_view op,
                               SourcePos pos) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::optional<E> value, enum_attr(attrs, key, from_name));
  if (!value) return error_at(pos, str_cat(op, " needs ", key));
  return *value;
}

/// `padding = dense<[[low, high], ...]> : tensor<Rx2xi64>` (or, from a pretty form, a list
/// of [low, high] pairs) into `low` and `high`; nothing when absent.
inline Status padding_attr(const AttrDict& attrs, std::string_view op,
                           std::vector<std::int64_t>& low, std::vector<std::int64_t>& high) {
  const AttrValue* v = find_attr(attrs, "padding");
  if (v == nullptr) return ok_status();
  if (v->kind == AttrValue::Kind::kList) {
    for (const AttrValue& pair : v->list) {
      if (pair.kind != AttrValue::Kind::kIntArray || pair.ints.size() != 2)
        return error_at(pair.pos, "expected padding = [[low, high], ...]");
      low.push_back(pair.ints[0]);
      high.push_back(pair.ints[1]);
    }
    return ok_status();
  }
  if (v->kind != AttrValue::Kind::kDense || !v->dense || v->dense->shape().rank() != 2 ||
      v->dense->shape().dim(1) != 2 || !is_integral(v->dense->dtype()))
    return error_at(v->pos, str_cat("expected padding = dense<[[low, high], ...]> : "
                                    "tensor<Rx2xi64> for ",
                                    op));
  StatusOr<Literal> as64 = v->dense->convert(DType::kS64);
  if (!as64.ok()) return error_at(v->pos, as64.status().message());
  std::span<const std::int64_t> data = as64->data<std::int64_t>();
  for (std::size_t i = 0; i + 1 < data.size(); i += 2) {
    low.push_back(data[i]);
    high.push_back(data[i + 1]);
  }
  return ok_status();
}

/// reduce_window's and select_and_scatter's window: window_dimensions, optional
/// window_strides, base_dilations, window_dilations (array<i64: ...>) and padding
/// (dense<[[low, high], ...]> : tensor<Rx2xi64>), absent ones taking their defaults.
inline StatusOr<WindowAttrs> window_attrs(const AttrDict& attrs, std::string_view op,
                                          SourcePos pos) {
  WindowAttrs w;
  PJRT_LITE_ASSIGN_OR_RETURN(w.window_dimensions,
                             int_list_attr(attrs, "window_dimensions", op, pos));
  PJRT_LITE_ASSIGN_OR_RETURN(w.window_strides,
                             int_list_attr(attrs, "window_strides", op, pos, false));
  PJRT_LITE_ASSIGN_OR_RETURN(w.base_dilations,
                             int_list_attr(attrs, "base_dilations", op, pos, false));
  PJRT_LITE_ASSIGN_OR_RETURN(w.window_dilations,
                             int_list_attr(attrs, "window_dilations", op, pos, false));
  PJRT_LITE_RETURN_IF_ERROR(padding_attr(attrs, op, w.padding_low, w.padding_high));
  return w.with_defaults();
}

/// The fields of a `#stablehlo.scatter<...>` or `#stablehlo.gather<...>`: the lists named in
/// `fields` and index_vector_dim. A field left out has its default: [] or 0.
inline Status read_dimension_numbers(
    const AttrValue& v,
    std::span<const std::pair<std::string_view, std::vector<std::int64_t>*>> fields,
    std::int64_t& index_vector_dim, std::string_view what) {
  for (const auto& entry : v.dict) {
    // Named, not a structured binding: clang 14 cannot capture a binding in a lambda.
    const std::string& key = entry.first;
    const AttrValue& value = entry.second;
    if (key == "index_vector_dim") {
      if (value.kind != AttrValue::Kind::kInt)
        return error_at(value.pos, "expected an integer for index_vector_dim");
      index_vector_dim = value.i;
      continue;
    }
    auto field = std::ranges::find_if(fields, [&](const auto& f) { return f.first == key; });
    if (field == fields.end())
      return error_at(value.pos, str_cat("unknown ", what, " field '", key, "'"));
    PJRT_LITE_ASSIGN_OR_RETURN(*field->second, int_list_value(value, key));
  }
  return ok_status();
}

/// The attribute `key` written `#WHAT<field = ..., ...>`, read as a dictionary of fields.
inline StatusOr<const AttrValue*> fields_attr(const OpParts& p, std::string_view key,
                                              std::string_view what, std::string_view op) {
  const AttrValue* v = find_attr(p.attrs, key);
  if (!v || v->kind != AttrValue::Kind::kDict)
    return error_at(p.pos, str_cat(op, " needs ", key, " = #", what, "<...>"));
  return v;
}

/// A convolution's feature_group_count and batch_group_count (1 when absent).
inline Status group_counts(const AttrDict& attrs, ConvolutionAttrs& a) {
  const std::pair<std::string_view, std::int64_t*> counts[] = {
      {"feature_group_count", &a.feature_group_count}, {"batch_group_count", &a.batch_group_count}};
  for (const auto& [key, count] : counts)
    if (const AttrValue* v = find_attr(attrs, key)) {
      if (v->kind != AttrValue::Kind::kInt)
        return error_at(v->pos, str_cat("expected an integer for ", key));
      *count = v->i;
    }
  return ok_status();
}

// ---- One reader per op ------------------------------------------------------------------------

/// rng_bit_generator's output type: the second of its two declared results.
inline StatusOr<Shape> rng_output_type(const OpType& t, std::string_view op) {
  if (!t.functional || t.function.results.size() != 2)
    return error_at(t.pos, str_cat(op,
                                   " has two results, the new state and the output: "
                                   "expected a type (S) -> (S, R)"));
  return t.function.results[1];
}

/// An op's dimensions from its declared result type.
inline StatusOr<std::vector<std::int64_t>> result_dims(const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape s, single_result(p.type, op.name));
  return std::vector<std::int64_t>(s.dims().begin(), s.dims().end());
}

inline StatusOr<Attributes> read_constant(const Context&, const OpSyntax&, const OpParts& p) {
  const AttrValue* v = find_attr(p.attrs, "value");
  if (!v || v->kind != AttrValue::Kind::kDense)
    return error_at(p.pos, "stablehlo.constant needs a value = dense<...> attribute");
  return ConstantAttrs{v->dense};
}

inline StatusOr<Attributes> read_iota(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape s, single_result(p.type, op.name));
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t d, int_attr(p.attrs, "iota_dimension", op.name, p.pos));
  return IotaAttrs{s, d};
}

inline StatusOr<Attributes> read_compare(const Context&, const OpSyntax& op, const OpParts& p) {
  CompareAttrs c;
  PJRT_LITE_ASSIGN_OR_RETURN(c.direction,
                             required_enum_attr(p.attrs, "comparison_direction",
                                                comparison_direction_from_name, op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(std::optional<ComparisonType> type,
                             enum_attr(p.attrs, "compare_type", comparison_type_from_name));
  c.type = type.value_or(ComparisonType::kNotype);
  return c;
}

inline StatusOr<Attributes> read_convert(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape s, single_result(p.type, op.name, /*need_static=*/false));
  return ConvertAttrs{s.dtype()};
}

/// i1 bitcasts as one bit (infer_bitcast_convert).
inline StatusOr<Attributes> read_bitcast_convert(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape s, single_result(p.type, op.name));
  return ConvertAttrs{s.dtype()};
}

inline StatusOr<Attributes> read_broadcast_in_dim(const Context&, const OpSyntax& op,
                                                  const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes, result_dims(op, p));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims,
                             int_list_attr(p.attrs, "broadcast_dimensions", op.name, p.pos));
  return BroadcastInDimAttrs{std::move(sizes), std::move(dims)};
}

inline StatusOr<Attributes> read_reshape(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes, result_dims(op, p));
  return ReshapeAttrs{std::move(sizes)};
}

inline StatusOr<Attributes> read_transpose(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> permutation,
                             int_list_attr(p.attrs, "permutation", op.name, p.pos));
  return TransposeAttrs{std::move(permutation)};
}

inline StatusOr<Attributes> read_slice(const Context&, const OpSyntax& op, const OpParts& p) {
  SliceAttrs s;
  PJRT_LITE_ASSIGN_OR_RETURN(s.start_indices,
                             int_list_attr(p.attrs, "start_indices", op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(s.limit_indices,
                             int_list_attr(p.attrs, "limit_indices", op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(s.strides, int_list_attr(p.attrs, "strides", op.name, p.pos, false));
  if (s.strides.empty()) s.strides.assign(s.start_indices.size(), 1);
  return s;
}

inline StatusOr<Attributes> read_concatenate(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t d, int_attr(p.attrs, "dimension", op.name, p.pos));
  return ConcatenateAttrs{d};
}

inline StatusOr<Attributes> read_pad(const Context&, const OpSyntax& op, const OpParts& p) {
  PadAttrs a;
  PJRT_LITE_ASSIGN_OR_RETURN(a.edge_padding_low,
                             int_list_attr(p.attrs, "edge_padding_low", op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(a.edge_padding_high,
                             int_list_attr(p.attrs, "edge_padding_high", op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(a.interior_padding,
                             int_list_attr(p.attrs, "interior_padding", op.name, p.pos));
  return a;
}

inline StatusOr<Attributes> read_reverse(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> d,
                             int_list_attr(p.attrs, "dimensions", op.name, p.pos));
  return ReverseAttrs{std::move(d)};
}

inline StatusOr<Attributes> read_dynamic_slice(const Context&, const OpSyntax& op,
                                               const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes,
                             int_list_attr(p.attrs, "slice_sizes", op.name, p.pos));
  return DynamicSliceAttrs{std::move(sizes)};
}

inline StatusOr<Attributes> read_reduce(const Context&, const OpSyntax& op, const OpParts& p) {
  if (p.regions.size() != 1) return error_at(p.pos, "stablehlo.reduce needs one region");
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> d,
                             int_list_attr(p.attrs, "dimensions", op.name, p.pos));
  return ReduceAttrs{std::move(d)};
}

inline StatusOr<Attributes> read_dot_general(const Context&, const OpSyntax& op, const OpParts& p) {
  if (find_attr(p.attrs, "algorithm"))
    return unsupported_at(p.pos, str_cat(op.name, " with an algorithm"));
  PJRT_LITE_ASSIGN_OR_RETURN(const AttrValue* v,
                             fields_attr(p, "dot_dimension_numbers", "stablehlo.dot", op.name));
  DotDimensionNumbers dn;
  const std::pair<std::string_view, std::vector<std::int64_t>*> fields[4] = {
      {"lhs_batching_dimensions", &dn.lhs_batching_dimensions},
      {"rhs_batching_dimensions", &dn.rhs_batching_dimensions},
      {"lhs_contracting_dimensions", &dn.lhs_contracting_dimensions},
      {"rhs_contracting_dimensions", &dn.rhs_contracting_dimensions}};
  for (const auto& [key, list] : fields)
    if (const AttrValue* f = v->find(key)) {
      PJRT_LITE_ASSIGN_OR_RETURN(*list, int_list_value(*f, key));
    }
  return dn;
}

inline StatusOr<Attributes> read_gather(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(const AttrValue* v,
                             fields_attr(p, "dimension_numbers", "stablehlo.gather", op.name));
  GatherAttrs a;
  const std::pair<std::string_view, std::vector<std::int64_t>*> fields[5] = {
      {"offset_dims", &a.offset_dims},
      {"collapsed_slice_dims", &a.collapsed_slice_dims},
      {"operand_batching_dims", &a.operand_batching_dims},
      {"start_indices_batching_dims", &a.start_indices_batching_dims},
      {"start_index_map", &a.start_index_map}};
  PJRT_LITE_RETURN_IF_ERROR(
      read_dimension_numbers(*v, fields, a.index_vector_dim, "#stablehlo.gather"));
  PJRT_LITE_ASSIGN_OR_RETURN(a.slice_sizes, int_list_attr(p.attrs, "slice_sizes", op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(a.indices_are_sorted, bool_attr(p.attrs, "indices_are_sorted"));
  return a;
}

inline StatusOr<Attributes> read_scatter(const Context&, const OpSyntax& op, const OpParts& p) {
  if (p.regions.size() != 1) return error_at(p.pos, str_cat(op.name, " needs one region"));
  if (p.operands.size() != 3)
    return unsupported_at(
        p.pos, str_cat(op.name, " of ", p.operands.size(), " operands (several inputs)"));
  PJRT_LITE_ASSIGN_OR_RETURN(const AttrValue* v, fields_attr(p, "scatter_dimension_numbers",
                                                             "stablehlo.scatter", op.name));
  ScatterAttrs a;
  const std::pair<std::string_view, std::vector<std::int64_t>*> fields[5] = {
      {"update_window_dims", &a.update_window_dims},
      {"inserted_window_dims", &a.inserted_window_dims},
      {"input_batching_dims", &a.input_batching_dims},
      {"scatter_indices_batching_dims", &a.scatter_indices_batching_dims},
      {"scatter_dims_to_operand_dims", &a.scatter_dims_to_operand_dims}};
  PJRT_LITE_RETURN_IF_ERROR(
      read_dimension_numbers(*v, fields, a.index_vector_dim, "#stablehlo.scatter"));
  PJRT_LITE_ASSIGN_OR_RETURN(a.indices_are_sorted, bool_attr(p.attrs, "indices_are_sorted"));
  PJRT_LITE_ASSIGN_OR_RETURN(a.unique_indices, bool_attr(p.attrs, "unique_indices"));
  return a;
}

/// reduce_window and select_and_scatter.
inline StatusOr<Attributes> read_window(const Context&, const OpSyntax& op, const OpParts& p) {
  if (p.regions.size() != body_count(op.code))
    return error_at(p.pos, str_cat(op.name, " needs ", body_count(op.code), " region(s), got ",
                                   p.regions.size()));
  PJRT_LITE_ASSIGN_OR_RETURN(WindowAttrs w, window_attrs(p.attrs, op.name, p.pos));
  return w;
}

inline StatusOr<Attributes> read_convolution(const Context&, const OpSyntax& op, const OpParts& p) {
  const AttrValue* v = find_attr(p.attrs, "dimension_numbers");
  if (!v || v->kind != AttrValue::Kind::kOpaque || v->text != "stablehlo.conv")
    return error_at(p.pos, "stablehlo.convolution needs dimension_numbers = #stablehlo.conv<...>");
  if (v->word.starts_with("raw"))
    return unsupported_at(v->pos, "#stablehlo.conv<raw ...> dimension numbers");
  ConvolutionAttrs c;
  if (Status s = parse_convolution_dimension_numbers(v->word, c); !s.ok())
    return error_at(v->pos, s.message());
  PJRT_LITE_ASSIGN_OR_RETURN(c.window_strides,
                             int_list_attr(p.attrs, "window_strides", op.name, p.pos, false));
  PJRT_LITE_ASSIGN_OR_RETURN(c.lhs_dilation,
                             int_list_attr(p.attrs, "lhs_dilation", op.name, p.pos, false));
  PJRT_LITE_ASSIGN_OR_RETURN(c.rhs_dilation,
                             int_list_attr(p.attrs, "rhs_dilation", op.name, p.pos, false));
  if (const AttrValue* rev = find_attr(p.attrs, "window_reversal")) {
    PJRT_LITE_ASSIGN_OR_RETURN(c.window_reversal, bool_list_value(*rev, "window_reversal"));
  }
  PJRT_LITE_RETURN_IF_ERROR(padding_attr(p.attrs, op.name, c.padding_low, c.padding_high));
  PJRT_LITE_RETURN_IF_ERROR(group_counts(p.attrs, c));
  return c.with_defaults();
}

inline StatusOr<Attributes> read_sort(const Context&, const OpSyntax& op, const OpParts& p) {
  if (p.regions.size() != 1)
    return error_at(
        p.pos, str_cat("stablehlo.sort needs one region (the comparator), got ", p.regions.size()));
  SortAttrs a{-1, false};  // MLIR's defaults
  if (find_attr(p.attrs, "dimension")) {
    PJRT_LITE_ASSIGN_OR_RETURN(a.dimension, int_attr(p.attrs, "dimension", op.name, p.pos));
  }
  PJRT_LITE_ASSIGN_OR_RETURN(a.is_stable, bool_attr(p.attrs, "is_stable"));
  return a;
}

inline StatusOr<Attributes> read_top_k(const Context&, const OpSyntax& op, const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t k, int_attr(p.attrs, "k", op.name, p.pos));
  return TopKAttrs{k};
}

inline StatusOr<Attributes> read_reduce_precision(const Context&, const OpSyntax& op,
                                                  const OpParts& p) {
  ReducePrecisionAttrs a;
  PJRT_LITE_ASSIGN_OR_RETURN(a.exponent_bits, int_attr(p.attrs, "exponent_bits", op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(a.mantissa_bits, int_attr(p.attrs, "mantissa_bits", op.name, p.pos));
  return a;
}

inline StatusOr<Attributes> read_fft(const Context&, const OpSyntax& op, const OpParts& p) {
  FftAttrs a;
  PJRT_LITE_ASSIGN_OR_RETURN(
      a.fft_type, required_enum_attr(p.attrs, "fft_type", fft_type_from_name, op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(a.fft_length, int_list_attr(p.attrs, "fft_length", op.name, p.pos));
  return a;
}

inline StatusOr<Attributes> read_triangular_solve(const Context&, const OpSyntax& op,
                                                  const OpParts& p) {
  TriangularSolveAttrs a;
  PJRT_LITE_ASSIGN_OR_RETURN(a.left_side, bool_attr(p.attrs, "left_side"));
  PJRT_LITE_ASSIGN_OR_RETURN(a.lower, bool_attr(p.attrs, "lower"));
  PJRT_LITE_ASSIGN_OR_RETURN(a.unit_diagonal, bool_attr(p.attrs, "unit_diagonal"));
  PJRT_LITE_ASSIGN_OR_RETURN(
      a.transpose_a,
      required_enum_attr(p.attrs, "transpose_a", transpose_from_name, op.name, p.pos));
  return a;
}

inline StatusOr<Attributes> read_rng_bit_generator(const Context&, const OpSyntax& op,
                                                   const OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(
      RngAlgorithm algorithm,
      required_enum_attr(p.attrs, "rng_algorithm", rng_algorithm_from_name, op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape bits, rng_output_type(p.type, op.name));
  return RngBitGeneratorAttrs{algorithm, std::move(bits)};
}

/// A collective's process groups: `replica_groups` (or, for collective_permute,
/// `source_target_pairs`) as a rank-2 integer `dense<...>`, `channel_handle =
/// #stablehlo.channel_handle<handle = H, type = T>` (or `channel_id = H`), `use_global_device_ids`
/// (a unit or a bool), collective_broadcast's `has_dynamic_root`, and the op's own dimensions.
/// all_gather and reduce_scatter over replicas and partitions (a channel without
/// use_global_device_ids) gather from or scatter to a row of replica_groups on every
/// partition: their num_partitions is the module's mhlo.num_partitions, or else what the
/// declared result type implies (as StableHLO's own verifier, which does not know the grid,
/// takes the declared type).
/// `channel_handle = #stablehlo.channel_handle<handle = H, type = T>`, or (a portable
/// artifact's spelling) `channel_id = H` and `channel_type = T`; any may be missing.
inline Status read_channel_handle(const AttrDict& attrs, std::int64_t& id, std::int64_t& type) {
  if (const AttrValue* v = find_attr(attrs, "channel_handle")) {
    if (v->kind != AttrValue::Kind::kDict)
      return error_at(v->pos, "expected #stablehlo.channel_handle<handle = H, type = T>");
    for (const auto& entry : v->dict) {
      if (entry.second.kind != AttrValue::Kind::kInt ||
          (entry.first != "handle" && entry.first != "type"))
        return error_at(entry.second.pos,
                        str_cat("unknown channel_handle field '", entry.first, "'"));
      (entry.first == "handle" ? id : type) = entry.second.i;
    }
  }
  if (const AttrValue* v = find_attr(attrs, "channel_id")) {
    if (v->kind != AttrValue::Kind::kInt) return error_at(v->pos, "expected an integer channel_id");
    id = v->i;
  }
  if (const AttrValue* v = find_attr(attrs, "channel_type")) {
    if (v->kind != AttrValue::Kind::kInt) return error_at(v->pos, "expected an integer channel_type");
    type = v->i;
  }
  return ok_status();
}

/// send, recv, infeed, outfeed: the channel (send, recv), is_host_transfer and
/// source_target_pairs (send, recv), the config string (infeed, outfeed), and the data types
/// recv and infeed produce (their declared results but the last, the token).
inline StatusOr<Attributes> read_channel(const Context& /*ctx*/, const OpSyntax& op, const OpParts& p) {
  ChannelAttrs a;
  const bool channel = op.code == OpCode::kSend || op.code == OpCode::kRecv;
  if (channel) {
    PJRT_LITE_RETURN_IF_ERROR(read_channel_handle(p.attrs, a.channel_id, a.channel_type));
    if (const AttrValue* v = find_attr(p.attrs, "is_host_transfer")) {
      if (v->kind == AttrValue::Kind::kUnit) {
        a.is_host_transfer = true;
      } else {
        PJRT_LITE_ASSIGN_OR_RETURN(a.is_host_transfer, bool_attr(p.attrs, "is_host_transfer"));
      }
    }
    // A portable artifact's recv and send without pairs carry an empty array<i64>.
    if (const AttrValue* v = find_attr(p.attrs, "source_target_pairs");
        v != nullptr && !(v->kind == AttrValue::Kind::kIntArray && v->ints.empty())) {
      if (v->kind != AttrValue::Kind::kDense || !v->dense || !is_integral(v->dense->dtype()) ||
          (v->dense->element_count() > 0 && (v->dense->shape().rank() != 2 || v->dense->shape().dim(1) != 2)))
        return error_at(v->pos, "expected source_target_pairs as an integer dense<...> of rows of two");
      StatusOr<Literal> as64 = v->dense->convert(DType::kS64);
      if (!as64.ok()) return error_at(v->pos, as64.status().message());
      std::span<const std::int64_t> data = as64->data<std::int64_t>();
      a.source_target_pairs.assign(data.begin(), data.end());
    }
  } else {
    const std::string_view key = op.code == OpCode::kInfeed ? "infeed_config" : "outfeed_config";
    if (const AttrValue* v = find_attr(p.attrs, key)) {
      if (v->kind != AttrValue::Kind::kString) return error_at(v->pos, str_cat("expected a string for ", key));
      a.config = v->text;
    }
  }
  if (op.code == OpCode::kRecv || op.code == OpCode::kInfeed) {
    const std::vector<Shape>& results = p.type.functional ? p.type.function.results : p.type.types;
    if (results.empty() || !is_token(results.back().dtype()))
      return error_at(p.type.pos, str_cat(op.name, " gives its data and then a !stablehlo.token"));
    a.payload.assign(results.begin(), results.end() - 1);
  }
  return Attributes(std::move(a));
}

inline StatusOr<Attributes> read_collective(const Context& ctx, const OpSyntax& op, const OpParts& p) {
  CollectiveAttrs a;
  const bool permute = op.code == OpCode::kCollectivePermute;
  const std::string_view groups_key = permute ? "source_target_pairs" : "replica_groups";
  if (const AttrValue* v = find_attr(p.attrs, groups_key)) {
    if (v->kind != AttrValue::Kind::kDense || !v->dense || v->dense->shape().rank() != 2 ||
        !is_integral(v->dense->dtype()))
      return v->kind == AttrValue::Kind::kOpaque
                 ? unsupported_at(v->pos, str_cat(groups_key, " given as #", v->text))
                 : error_at(v->pos, str_cat("expected a rank-2 integer dense<...> for ", groups_key));
    StatusOr<Literal> as64 = v->dense->convert(DType::kS64);
    if (!as64.ok()) return error_at(v->pos, as64.status().message());
    std::span<const std::int64_t> data = as64->data<std::int64_t>();
    a.groups.assign(data.begin(), data.end());
    a.group_size = a.groups.empty() ? 0 : v->dense->shape().dim(1);
  } else if (permute) {
    return error_at(p.pos, str_cat(op.name, " needs the attribute source_target_pairs"));
  }
  PJRT_LITE_RETURN_IF_ERROR(read_channel_handle(p.attrs, a.channel_id, a.channel_type));
  if (const AttrValue* v = find_attr(p.attrs, "use_global_device_ids")) {
    if (v->kind == AttrValue::Kind::kUnit) {
      a.use_global_device_ids = true;
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(a.use_global_device_ids,
                                 bool_attr(p.attrs, "use_global_device_ids"));
    }
  }
  if (op.code == OpCode::kAllGather) {
    PJRT_LITE_ASSIGN_OR_RETURN(a.dimension, int_attr(p.attrs, "all_gather_dim", op.name, p.pos));
  } else if (op.code == OpCode::kReduceScatter) {
    PJRT_LITE_ASSIGN_OR_RETURN(a.dimension, int_attr(p.attrs, "scatter_dimension", op.name, p.pos));
  } else if (op.code == OpCode::kAllToAll) {
    PJRT_LITE_ASSIGN_OR_RETURN(a.dimension, int_attr(p.attrs, "split_dimension", op.name, p.pos));
    PJRT_LITE_ASSIGN_OR_RETURN(a.concat_dimension,
                               int_attr(p.attrs, "concat_dimension", op.name, p.pos));
    PJRT_LITE_ASSIGN_OR_RETURN(a.split_count, int_attr(p.attrs, "split_count", op.name, p.pos));
  } else if (const AttrValue* root = find_attr(p.attrs, "has_dynamic_root");
             op.code == OpCode::kCollectiveBroadcast && root != nullptr) {
    // A unit, or (as a portable artifact spells it) true or false.
    if (root->kind == AttrValue::Kind::kUnit) {
      a.has_dynamic_root = true;
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(a.has_dynamic_root, bool_attr(p.attrs, "has_dynamic_root"));
    }
  }
  if ((op.code == OpCode::kAllGather || op.code == OpCode::kReduceScatter) && a.channel_id > 0 &&
      !a.use_global_device_ids && a.group_size > 0) {
    if (ctx.num_partitions > 0) {
      a.num_partitions = ctx.num_partitions;
    } else if (p.type.functional && !p.type.function.results.empty() && !p.operands.empty()) {
      // operand dim * row * partitions = result dim (all_gather), the other way round for
      // reduce_scatter; a type that implies no whole number is left to shape inference.
      StatusOr<Shape> operand = ctx.b.shape(p.operands[0]);
      const Shape& result = p.type.function.results[0];
      if (operand.ok() && a.dimension >= 0 && a.dimension < operand->rank() && a.dimension < result.rank()) {
        const std::int64_t d = operand->dim(a.dimension), r = result.dim(a.dimension);
        const std::int64_t big = op.code == OpCode::kAllGather ? r : d, small = op.code == OpCode::kAllGather ? d : r;
        if (small > 0 && big > 0 && big % (small * a.group_size) == 0)
          a.num_partitions = big / (small * a.group_size);
      }
    }
  }
  if (p.regions.size() != body_count(op.code))
    return error_at(p.pos, str_cat(op.name, " needs ", body_count(op.code), " region(s), got ",
                                   p.regions.size()));
  return a;
}

}  // namespace pjrt_lite::stablehlo::detail
