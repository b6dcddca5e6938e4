#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// Typed values out of an op's attribute dictionary: integers, lists, flags, enums, padding
// and windows, each with an error that names the attribute.

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
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"

namespace pjrt_lite::stablehlo::detail {

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

/// `#stablehlo<kind WORD>` or a bare `WORD`; nullopt when absent.
inline StatusOr<std::optional<std::string>> enum_attr(const AttrDict& attrs,
                                                      std::string_view key) {
  const AttrValue* v = find_attr(attrs, key);
  if (v == nullptr) return std::optional<std::string>();
  if (v->kind == AttrValue::Kind::kEnum) return std::optional<std::string>(v->word);
  if (v->kind == AttrValue::Kind::kOpaque && !v->text.empty() && v->word.empty())
    return std::optional<std::string>(v->text);
  return error_at(v->pos, str_cat("expected #stablehlo<", key, " ...> for ", key));
}

/// `padding = dense<[[low, high], ...]> : tensor<Rx2xi64>` into `low` and `high`; nothing
/// when absent.
inline Status padding_attr(const AttrDict& attrs, std::string_view op,
                           std::vector<std::int64_t>& low, std::vector<std::int64_t>& high) {
  const AttrValue* v = find_attr(attrs, "padding");
  if (v == nullptr) return ok_status();
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

/// A convolution's feature_group_count and batch_group_count (1 when absent).
inline Status group_counts(const AttrDict& attrs, ConvolutionAttrs& a) {
  const std::pair<std::string_view, std::int64_t*> counts[] = {
      {"feature_group_count", &a.feature_group_count},
      {"batch_group_count", &a.batch_group_count}};
  for (const auto& [key, count] : counts)
    if (const AttrValue* v = find_attr(attrs, key)) {
      if (v->kind != AttrValue::Kind::kInt)
        return error_at(v->pos, str_cat("expected an integer for ", key));
      *count = v->i;
    }
  return ok_status();
}

}  // namespace pjrt_lite::stablehlo::detail
