#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The pretty forms of the op table: each reads one op's custom syntax, as JAX and
// stablehlo-opt print it, from just after the op's name into OpParts. Keyword arguments
// become the generic form's attributes (`dims = [1, 0]` of transpose is `permutation`), so
// that the attribute readers (op_attributes.hpp) serve both syntaxes.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

// ---- Attribute values made from keywords ------------------------------------------------------

inline AttrValue int_value_at(std::int64_t i, SourcePos pos) {
  AttrValue v;
  v.kind = AttrValue::Kind::kInt;
  v.i = i;
  v.pos = pos;
  return v;
}

inline AttrValue int_list_value_at(std::vector<std::int64_t> ints, SourcePos pos) {
  AttrValue v;
  v.kind = AttrValue::Kind::kIntArray;
  v.ints = std::move(ints);
  v.pos = pos;
  return v;
}

/// `#stablehlo<kind WORD>` as written in the pretty form: the bare WORD, which must be one
/// that `from_name` reads (checked here too, so that errors come in the order of the text).
template <class E>
StatusOr<AttrValue> enum_value_at(std::string_view kind, const Token& word,
                                  StatusOr<E> (*from_name)(std::string_view)) {
  if (StatusOr<E> e = from_name(word.text); !e.ok())
    return error_at(word.pos, e.status().message());
  AttrValue v;
  v.kind = AttrValue::Kind::kEnum;
  v.text = std::string(kind);
  v.word = std::string(word.text);
  v.pos = word.pos;
  return v;
}

// ---- Shared shapes of pretty forms ----------------------------------------------------------

/// `op %a, %b : T`: the operands (op.operands of them, or any number), then the type. The
/// form of every op whose attributes come from its type or that has none.
inline Status pretty_operands(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  if (op.operands == kVariadic) {
    PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  } else {
    PJRT_LITE_ASSIGN_OR_RETURN(
        p.operands, parse_operands_exact(r, ctx, static_cast<std::size_t>(op.operands), op.name));
  }
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// `KEY =`: the name of a keyword argument whose value comes next; `in` says where it
/// stands, for errors.
inline Status key_equals(Reader& r, std::string_view key, const Where& in) {
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(key, in));
  return r.expect('=', {"after ", key});
}

/// `KEY = N`: the integer attribute `attr`.
inline Status key_int(Reader& r, OpParts& p, std::string_view key, std::string_view attr,
                      const Where& in) {
  PJRT_LITE_RETURN_IF_ERROR(key_equals(r, key, in));
  const SourcePos at = r.peek().pos;
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t i, r.parse_int({"after ", key, " ="}));
  p.attrs.emplace_back(std::string(attr), int_value_at(i, at));
  return ok_status();
}

/// `KEY = [...]`: the integer-list attribute `attr`.
inline Status key_list(Reader& r, OpParts& p, std::string_view key, std::string_view attr,
                       const Where& in) {
  PJRT_LITE_RETURN_IF_ERROR(key_equals(r, key, in));
  const SourcePos at = r.peek().pos;
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> list,
                             r.parse_int_list({"after ", key, " ="}));
  p.attrs.emplace_back(std::string(attr), int_list_value_at(std::move(list), at));
  return ok_status();
}

/// `KEY = WORD`: the enum attribute `attr` (of kind `attr`), WORD one that `from_name` reads.
template <class E>
Status key_enum(Reader& r, OpParts& p, std::string_view key, std::string_view attr, const Where& in,
                std::string_view expected, StatusOr<E> (*from_name)(std::string_view)) {
  PJRT_LITE_RETURN_IF_ERROR(key_equals(r, key, in));
  PJRT_LITE_ASSIGN_OR_RETURN(Token t,
                             r.expect_kind(TokenKind::kIdent, expected, {"after ", key, " ="}));
  PJRT_LITE_ASSIGN_OR_RETURN(AttrValue v, enum_value_at(attr, t, from_name));
  p.attrs.emplace_back(std::string(attr), std::move(v));
  return ok_status();
}

/// `op %x, KEY = V, ... : T`: one operand, then the keyword attributes that
/// `read_keys(where)` reads (`where` placing its errors after the operand), then the type.
template <class ReadKeys>
Status one_operand_then_keys(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p,
                             ReadKeys read_keys) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operands_exact(r, ctx, 1, op.name));
  const Where where{"after the operand of ", op.name};
  PJRT_LITE_RETURN_IF_ERROR(r.expect(',', where));
  PJRT_LITE_RETURN_IF_ERROR(read_keys(where));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// `op %x, dims = [...] : T`, the list being the attribute `attr`.
inline Status operand_and_dims(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p,
                               std::string_view attr) {
  return one_operand_then_keys(
      r, ctx, op, p, [&](const Where& where) { return key_list(r, p, "dims", attr, where); });
}

// ---- Ops with attributes --------------------------------------------------------------------

/// `stablehlo.constant dense<...> : T` (the type belongs to the dense literal).
inline Status pretty_constant(Reader& r, Context&, const OpSyntax& op, OpParts& p) {
  if (r.peek().is('{')) PJRT_LITE_RETURN_IF_ERROR(r.parse_dict().status());
  Token t = r.peek();
  if (!t.is_ident("dense"))
    return error_at(t.pos, str_cat("expected dense<...> after ", op.name, ", found ", describe(t)));
  PJRT_LITE_ASSIGN_OR_RETURN(AttrValue value, r.parse_attr_value());
  p.type.functional = true;
  p.type.pos = value.pos;
  p.type.function.results.push_back(value.type);
  p.attrs.emplace_back("value", std::move(value));
  return ok_status();
}

/// `stablehlo.iota dim = 0 : T`.
inline Status pretty_iota(Reader& r, Context&, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(key_int(r, p, "dim", "iota_dimension", {"after ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// `stablehlo.compare LT, %a, %b[, FLOAT] : T`.
inline Status pretty_compare(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(
      Token dir, r.expect_kind(TokenKind::kIdent, "a comparison direction (EQ, NE, GE, GT, LE, LT)",
                               {"after ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(AttrValue direction, enum_value_at("comparison_direction", dir,
                                                                comparison_direction_from_name));
  p.attrs.emplace_back("comparison_direction", std::move(direction));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after the comparison direction"));
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operands_exact(r, ctx, 2, op.name));
  if (r.consume_if(',')) {
    PJRT_LITE_ASSIGN_OR_RETURN(
        Token t,
        r.expect_kind(TokenKind::kIdent, "a comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)",
                      "after the operands"));
    PJRT_LITE_ASSIGN_OR_RETURN(AttrValue type,
                               enum_value_at("compare_type", t, comparison_type_from_name));
    p.attrs.emplace_back("compare_type", std::move(type));
  }
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// reduce_precision's `eEmM` format word: E exponent bits, M mantissa bits.
inline Status precision_format(const Token& t, OpParts& p) {
  auto fail = [&] {
    return error_at(t.pos, str_cat("expected a format such as e5m10 (exponent and mantissa "
                                   "bits), found '",
                                   t.text, "'"));
  };
  const std::string_view w = t.text;
  const std::size_t m = w.find('m');
  if (w.size() < 4 || w[0] != 'e' || m == std::string_view::npos || m < 2 || m + 1 >= w.size())
    return fail();
  auto number = [](std::string_view digits, std::int64_t& out) {
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && ptr == digits.data() + digits.size() && digits[0] != '-' &&
           digits[0] != '+';
  };
  std::int64_t exponent = 0, mantissa = 0;
  if (!number(w.substr(1, m - 1), exponent) || !number(w.substr(m + 1), mantissa)) return fail();
  p.attrs.emplace_back("exponent_bits", int_value_at(exponent, t.pos));
  p.attrs.emplace_back("mantissa_bits", int_value_at(mantissa, t.pos));
  return ok_status();
}

/// `stablehlo.reduce_precision %x, format = e5m10 : T`.
inline Status pretty_reduce_precision(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return one_operand_then_keys(r, ctx, op, p, [&](const Where& where) -> Status {
    PJRT_LITE_RETURN_IF_ERROR(key_equals(r, "format", where));
    PJRT_LITE_ASSIGN_OR_RETURN(
        Token f, r.expect_kind(TokenKind::kIdent, "a format such as e5m10", "after format ="));
    return precision_format(f, p);
  });
}

inline Status pretty_broadcast_in_dim(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return operand_and_dims(r, ctx, op, p, "broadcast_dimensions");
}
inline Status pretty_transpose(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return operand_and_dims(r, ctx, op, p, "permutation");
}
inline Status pretty_reverse(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return operand_and_dims(r, ctx, op, p, "dimensions");
}

/// `stablehlo.slice %x [start:limit:stride, ...] : T` (a stride of 1 may be left out).
inline Status pretty_slice(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operands_exact(r, ctx, 1, op.name));
  const SourcePos at = r.peek().pos;
  PJRT_LITE_RETURN_IF_ERROR(r.expect('[', "to start the slice ranges [start:limit:stride]"));
  std::vector<std::int64_t> starts, limits, strides;
  if (!r.consume_if(']')) {
    while (true) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t start, r.parse_int("(the slice start)"));
      PJRT_LITE_RETURN_IF_ERROR(r.expect(':', "after the slice start"));
      PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t limit, r.parse_int("(the slice limit)"));
      std::int64_t stride = 1;
      if (r.consume_if(':')) {
        PJRT_LITE_ASSIGN_OR_RETURN(stride, r.parse_int("(the slice stride)"));
      }
      starts.push_back(start);
      limits.push_back(limit);
      strides.push_back(stride);
      if (starts.size() > static_cast<std::size_t>(kMaxRank))
        return error_at(p.pos, "too many slice ranges");
      Token t = r.next();
      if (t.is(']')) break;
      if (!t.is(','))
        return error_at(t.pos,
                        str_cat("expected ',' or ']' after a slice range, found ", describe(t)));
    }
  }
  p.attrs.emplace_back("start_indices", int_list_value_at(std::move(starts), at));
  p.attrs.emplace_back("limit_indices", int_list_value_at(std::move(limits), at));
  p.attrs.emplace_back("strides", int_list_value_at(std::move(strides), at));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// `stablehlo.OP %a, %b, ..., KEY = V : T`: any number of operands, then one attribute that
/// `read_key` reads, then the type.
template <class ReadKey>
Status operands_then_key(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p, ReadKey read_key) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(',', {"after the operands of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(read_key());
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// `stablehlo.concatenate %a, %b, dim = 0 : T`.
inline Status pretty_concatenate(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return operands_then_key(r, ctx, op, p, [&] { return key_int(r, p, "dim", "dimension", "after the operands"); });
}

/// `stablehlo.pad %x, %v, low = [...], high = [...], interior = [...] : T`.
inline Status pretty_pad(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operands_exact(r, ctx, 2, op.name));
  const Where in{"in ", op.name};
  const std::pair<std::string_view, std::string_view> fields[3] = {
      {"low", "edge_padding_low"}, {"high", "edge_padding_high"}, {"interior", "interior_padding"}};
  for (const auto& [key, attr] : fields) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', {"before ", key}));
    PJRT_LITE_RETURN_IF_ERROR(key_list(r, p, key, attr, in));
  }
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// `stablehlo.dynamic_slice %x, %i, %j, sizes = [...] : T`.
inline Status pretty_dynamic_slice(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return operands_then_key(r, ctx, op, p, [&] { return key_list(r, p, "sizes", "slice_sizes", "after the operands"); });
}

/// `stablehlo.broadcast %x, sizes = [...] : T`.
inline Status pretty_broadcast(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return one_operand_then_keys(r, ctx, op, p, [&](const Where& where) {
    return key_list(r, p, "sizes", "broadcast_sizes", where);
  });
}

/// `stablehlo.dot %a, %b[, precision = [...]] : T`.
inline Status pretty_dot(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operands_exact(r, ctx, 2, op.name));
  if (r.consume_if(',')) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("precision", {"in ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after precision"));
    PJRT_LITE_RETURN_IF_ERROR(r.parse_attr_value().status());  // numerics hint only
  }
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// `stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1],
/// precision = [...] : T`, the dimensions becoming `#stablehlo.dot<...>`'s fields.
inline Status pretty_dot_general(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operands_exact(r, ctx, 2, op.name));
  AttrValue dn;
  dn.kind = AttrValue::Kind::kDict;
  dn.pos = p.pos;
  while (r.consume_if(',')) {
    PJRT_LITE_ASSIGN_OR_RETURN(
        Token key,
        r.expect_kind(TokenKind::kIdent, "batching_dims, contracting_dims, precision or algorithm",
                      {"in ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', {"after ", key.text}));
    if (key.text == "batching_dims" || key.text == "contracting_dims") {
      const std::string_view which = key.text == "batching_dims" ? "batching" : "contracting";
      const SourcePos at = r.peek().pos;
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> lhs,
                                 r.parse_int_list({"after ", key.text, " ="}));
      PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("x", "between the lhs and rhs dimensions"));
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> rhs,
                                 r.parse_int_list({"after ", key.text, " = [...] x"}));
      dn.dict.emplace_back(str_cat("lhs_", which, "_dimensions"),
                           int_list_value_at(std::move(lhs), at));
      dn.dict.emplace_back(str_cat("rhs_", which, "_dimensions"),
                           int_list_value_at(std::move(rhs), at));
    } else if (key.text == "precision") {
      PJRT_LITE_RETURN_IF_ERROR(r.parse_attr_value().status());  // numerics hint only
    } else if (key.text == "algorithm") {
      return unsupported_at(key.pos, str_cat(op.name, " with an algorithm"));
    } else {
      return error_at(key.pos, str_cat("unknown ", op.name, " field '", key.text, "'"));
    }
  }
  p.attrs.emplace_back("dot_dimension_numbers", std::move(dn));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

/// stablehlo.convolution's pretty form: `(%lhs, %rhs) dim_numbers = [b, 0, f]x[0, i, o]->[b,
/// 0, f], window = {stride = [..], pad = [[lo, hi], ..], lhs_dilate = [..], rhs_dilate =
/// [..], reverse = [..]}`, then the attribute dictionary (batch_group_count,
/// feature_group_count, precision_config) and the type.
inline Status pretty_convolution(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"before the operands of ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operands_exact(r, ctx, 2, op.name));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', {"after the operands of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("dim_numbers", {"after the operands of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after dim_numbers"));
  // The three lists, spelled again as the text of #stablehlo.conv<...>.
  AttrValue dims;
  dims.kind = AttrValue::Kind::kOpaque;
  dims.text = "stablehlo.conv";
  dims.pos = r.peek().pos;
  for (int list = 0; list < 3; ++list) {
    if (list == 1) {
      PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("x", "between the input and kernel dimensions"));
      dims.word += "x";
    } else if (list == 2) {
      PJRT_LITE_RETURN_IF_ERROR(r.expect_arrow("between the kernel and output dimensions"));
      dims.word += "->";
    }
    PJRT_LITE_RETURN_IF_ERROR(r.expect('[', "to start a list of dimension numbers"));
    dims.word += "[";
    for (std::int64_t k = 0; !r.consume_if(']'); ++k) {
      if (k > kMaxRank + 2) return error_at(dims.pos, "too many convolution dimensions");
      if (k > 0) {
        PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "or ']' in the dimension numbers"));
        dims.word += ", ";
      }
      Token t = r.next();
      if (t.kind != TokenKind::kIdent && t.kind != TokenKind::kInt)
        return error_at(t.pos, str_cat("expected a dimension name (b, f, i, o or a digit) in "
                                       "dim_numbers, found ",
                                       describe(t)));
      dims.word += t.text;
    }
    dims.word += "]";
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after dim_numbers"));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("window", "after dim_numbers"));
  PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after window"));
  if (!r.peek().is('{')) return error_at(r.peek().pos, "expected window = {...}");
  PJRT_LITE_ASSIGN_OR_RETURN(AttrDict window, r.parse_dict());
  // The window's fields under the generic form's names.
  AttrDict attrs;
  attrs.emplace_back("dimension_numbers", std::move(dims));
  for (const auto& entry : window) {
    const std::string& key = entry.first;
    const AttrValue& v = entry.second;
    const std::string_view list_attr = key == "stride"       ? "window_strides"
                                       : key == "lhs_dilate" ? "lhs_dilation"
                                       : key == "rhs_dilate" ? "rhs_dilation"
                                                             : "";
    if (!list_attr.empty()) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> list, int_list_value(v, key));
      attrs.emplace_back(std::string(list_attr), int_list_value_at(std::move(list), v.pos));
    } else if (key == "reverse") {
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> list, bool_list_value(v, key));
      attrs.emplace_back("window_reversal", int_list_value_at(std::move(list), v.pos));
    } else if (key == "pad") {
      AttrValue pad;
      pad.kind = AttrValue::Kind::kList;
      pad.pos = v.pos;
      bool ok = v.kind == AttrValue::Kind::kList;
      if (ok)
        for (const AttrValue& pair : v.list) {
          ok = pair.kind == AttrValue::Kind::kList && pair.list.size() == 2 &&
               pair.list[0].kind == AttrValue::Kind::kInt &&
               pair.list[1].kind == AttrValue::Kind::kInt;
          if (!ok) break;
          pad.list.push_back(int_list_value_at({pair.list[0].i, pair.list[1].i}, pair.pos));
        }
      if (!ok) return error_at(v.pos, "expected pad = [[low, high], ...]");
      attrs.emplace_back("padding", std::move(pad));
    } else {
      return error_at(v.pos, str_cat("unknown convolution window field '", key,
                                     "' (expected stride, pad, lhs_dilate, rhs_dilate or "
                                     "reverse)"));
    }
  }
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  // Both lists name the attributes; the window's come first, so that find_attr sees them.
  for (AttrEntry& e : p.attrs) attrs.push_back(std::move(e));
  p.attrs = std::move(attrs);
  return ok_status();
}

/// `stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (S) -> (S, R)`.
inline Status pretty_rng_bit_generator(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return one_operand_then_keys(r, ctx, op, p, [&](const Where& where) {
    return key_enum(r, p, "algorithm", "rng_algorithm", where,
                    "an rng algorithm (DEFAULT, THREE_FRY, PHILOX)", rng_algorithm_from_name);
  });
}

/// `stablehlo.fft %x, type = RFFT, length = [17] : (T) -> R`.
inline Status pretty_fft(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  return one_operand_then_keys(r, ctx, op, p, [&](const Where& where) -> Status {
    PJRT_LITE_RETURN_IF_ERROR(key_enum(r, p, "type", "fft_type", where,
                                       "an fft type (FFT, IFFT, RFFT, IRFFT)", fft_type_from_name));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after the fft type"));
    return key_list(r, p, "length", "fft_length", "after the fft type");
  });
}

/// CHLO's top_k: `chlo.top_k(%x, k = 3) : T -> (T, tensor<...xi32>)`.
inline Status pretty_top_k(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"after ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(Value operand, parse_operand(r, ctx, {"for ", op.name}));
  p.operands = {operand};
  const Where where{"after the operand of ", op.name};
  PJRT_LITE_RETURN_IF_ERROR(r.expect(',', where));
  PJRT_LITE_RETURN_IF_ERROR(key_int(r, p, "k", "k", where));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after k = ..."));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

}  // namespace pjrt_lite::stablehlo::detail
