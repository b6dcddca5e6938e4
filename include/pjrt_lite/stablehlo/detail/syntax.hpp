#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The pieces of MLIR syntax that every op shares: types (tensor types and function types),
// attribute values and dictionaries (syntax_values.hpp), integer lists, `loc(...)` trailers.
// Reader wraps the Lexer with expect-style helpers whose errors say "L:C: expected X, found
// Y".

#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/detail/dense.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/syntax_values.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// The highest tensor rank accepted; far above any real program, it bounds the recursion of
/// everything that walks dimensions.
inline constexpr std::int64_t kMaxRank = 64;
/// The deepest nesting of attribute values ([[[...]]], {a = {b = ...}}) accepted.
inline constexpr std::int64_t kMaxAttributeDepth = 64;

/// Names of builtin scalar types: a value of one of them is valid MLIR but not a tensor.
inline bool is_builtin_scalar_type(std::string_view name) {
  if (dtype_from_element_type(name) || is_unsupported_element_type(name)) return true;
  return name == "complex" || name == "none";
}

class Reader {
 public:
  explicit Reader(Lexer lex) : lex_(lex) {}

  Token next() { return lex_.next(); }
  [[nodiscard]] Token peek() const { return lex_.peek(); }
  [[nodiscard]] Token peek2() const { return lex_.peek2(); }
  Lexer& lexer() { return lex_; }

  /// Consumes the punctuation `c` if it comes next.
  bool consume_if(char c) {
    if (!lex_.peek().is(c)) return false;
    lex_.next();
    return true;
  }
  bool consume_ident_if(std::string_view word) {
    if (!lex_.peek().is_ident(word)) return false;
    lex_.next();
    return true;
  }
  /// Consumes `c` or fails with "expected 'c' <context>, found X".
  Status expect(char c, const Where& context) {
    Token t = lex_.next();
    if (t.is(c)) return ok_status();
    return error_at(t.pos, str_cat("expected '", c, "' ", context, ", found ", describe(t)));
  }
  Status expect_arrow(const Where& context) {
    Token t = lex_.next();
    if (t.kind == TokenKind::kArrow) return ok_status();
    return error_at(t.pos, str_cat("expected '->' ", context, ", found ", describe(t)));
  }
  Status expect_ident(std::string_view word, const Where& context) {
    Token t = lex_.next();
    if (t.is_ident(word)) return ok_status();
    return error_at(t.pos, str_cat("expected '", word, "' ", context, ", found ", describe(t)));
  }
  StatusOr<Token> expect_kind(TokenKind kind, std::string_view what, const Where& context) {
    Token t = lex_.next();
    if (t.kind == kind) return t;
    return error_at(t.pos, str_cat("expected ", what, " ", context, ", found ", describe(t)));
  }

  /// Skips a `loc(...)` trailer if one comes next.
  Status skip_loc() {
    if (lex_.peek().is_ident("loc") && lex_.peek2().is('(')) {
      lex_.next();
      PJRT_LITE_RETURN_IF_ERROR(lex_.skip_balanced('(', ')').status());
    }
    return ok_status();
  }

  // ---- Numbers ------------------------------------------------------------------------

  StatusOr<std::int64_t> parse_int(const Where& context) {
    Token t = lex_.next();
    if (t.kind != TokenKind::kInt)
      return error_at(t.pos, str_cat("expected an integer ", context, ", found ", describe(t)));
    return int_value(t);
  }
  static StatusOr<std::int64_t> int_value(const Token& t) {
    std::int64_t v = 0;
    std::string_view s = t.text;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      s.remove_prefix(2);
      base = 16;
    }
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec == std::errc::result_out_of_range)
      return error_at(t.pos, str_cat("integer ", t.text, " does not fit in 64 bits"));
    if (ec != std::errc() || ptr != s.data() + s.size())
      return error_at(t.pos, str_cat("'", t.text, "' is not an integer"));
    return v;
  }
  /// `[1, -2, 3]`.
  StatusOr<std::vector<std::int64_t>> parse_int_list(const Where& context) {
    PJRT_LITE_RETURN_IF_ERROR(expect('[', context));
    std::vector<std::int64_t> out;
    if (consume_if(']')) return out;
    while (true) {
      Token item = lex_.next();
      if (item.kind != TokenKind::kInt)
        return error_at(item.pos, str_cat("expected an integer in the list ", context, ", found ",
                                          describe(item)));
      PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t v, int_value(item));
      out.push_back(v);
      Token t = lex_.next();
      if (t.is(']')) return out;
      if (!t.is(','))
        return error_at(
            t.pos, str_cat("expected ',' or ']' in the list ", context, ", found ", describe(t)));
    }
  }

  // ---- Types ----------------------------------------------------------------------------

  /// A ranked tensor type of an element type the IR has, or `!stablehlo.token`. Valid types
  /// the IR lacks (tuples, scalars, other dialects' types) are UNIMPLEMENTED.
  StatusOr<Shape> parse_type() {
    last_quant_.reset();
    StatusOr<Shape> type = parse_type_once();
    if (log_types_) type_log_.push_back(last_quant_);
    return type;
  }

  /// The quantized element type of the last type read, if it had one.
  [[nodiscard]] const std::optional<QuantType>& last_quant() const { return last_quant_; }

 private:
  StatusOr<Shape> parse_type_once() {
    Token t = lex_.next();
    if (t.is_ident("tensor")) return parse_tensor_body(t.pos);
    if (t.kind == TokenKind::kBangId) {
      if (t.text == "!stablehlo.token") return Shape(DType::kToken, {});
      return unsupported_at(t.pos, str_cat("type ", t.text));
    }
    if (t.kind == TokenKind::kIdent) {
      if (t.text == "tuple" || t.text == "vector" || t.text == "memref")
        return unsupported_at(t.pos, str_cat(t.text, " types"));
      if (is_builtin_scalar_type(t.text))
        return unsupported_at(t.pos, str_cat("the non-tensor type ", t.text));
    }
    return error_at(t.pos, str_cat("expected a type such as tensor<2xf32>, found ", describe(t)));
  }

 public:

  /// `T0, T1, ...` (at least one).
  StatusOr<std::vector<Shape>> parse_type_list() {
    std::vector<Shape> out;
    do {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, parse_type());
      out.push_back(std::move(s));
    } while (consume_if(','));
    return out;
  }

  /// `(T0, T1)`, possibly empty; with `attributes` true each type may carry `{...}` and
  /// `loc(...)` (function results), whose dictionaries go to `dicts` if given (one per type,
  /// empty where it has none).
  StatusOr<std::vector<Shape>> parse_paren_types(bool attributes = false, std::vector<AttrDict>* dicts = nullptr) {
    PJRT_LITE_RETURN_IF_ERROR(expect('(', "to start a type list"));
    std::vector<Shape> out;
    if (consume_if(')')) return out;
    while (true) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, parse_type());
      out.push_back(std::move(s));
      if (dicts != nullptr) dicts->emplace_back();
      if (attributes && lex_.peek().is('{')) {
        PJRT_LITE_ASSIGN_OR_RETURN(AttrDict d, parse_dict());
        if (dicts != nullptr) dicts->back() = std::move(d);
      }
      if (attributes) PJRT_LITE_RETURN_IF_ERROR(skip_loc());
      Token t = lex_.next();
      if (t.is(')')) return out;
      if (!t.is(','))
        return error_at(t.pos, str_cat("expected ',' or ')' in a type list, found ", describe(t)));
    }
  }

  /// `(inputs) -> result` or `(inputs) -> (results)`.
  StatusOr<FunctionType> parse_function_type() {
    FunctionType f;
    PJRT_LITE_ASSIGN_OR_RETURN(f.inputs, parse_paren_types());
    PJRT_LITE_RETURN_IF_ERROR(expect_arrow("after the operand types"));
    if (lex_.peek().is('(')) {
      PJRT_LITE_ASSIGN_OR_RETURN(f.results, parse_paren_types());
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, parse_type());
      f.results.push_back(std::move(s));
    }
    return f;
  }

  /// The type after an op's ':'.
  StatusOr<OpType> parse_op_type() {
    OpType t;
    t.pos = lex_.next_pos();
    type_log_.clear();
    log_types_ = true;
    StatusOr<OpType> read = parse_op_type_types(std::move(t));
    log_types_ = false;
    if (read.ok()) read->quant = std::move(type_log_);
    type_log_.clear();
    return read;
  }

 private:
  StatusOr<OpType> parse_op_type_types(OpType t) {
    if (lex_.peek().is('(')) {
      t.functional = true;
      PJRT_LITE_ASSIGN_OR_RETURN(t.function, parse_function_type());
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(t.types, parse_type_list());
      if (lex_.peek().kind == TokenKind::kArrow) {
        // CHLO's `T, T -> T` (or `T -> (T, U)`): a function type without the parentheses
        // around its inputs.
        lex_.next();
        t.functional = true;
        t.function.inputs = std::move(t.types);
        t.types.clear();
        if (lex_.peek().is('(')) {
          PJRT_LITE_ASSIGN_OR_RETURN(t.function.results, parse_paren_types());
        } else {
          PJRT_LITE_ASSIGN_OR_RETURN(Shape s, parse_type());
          t.function.results.push_back(std::move(s));
        }
      }
    }
    return t;
  }

 public:

  // ---- Attributes -----------------------------------------------------------------------

  /// `{key = value, unit_key, "quoted" = value}`.
  StatusOr<AttrDict> parse_dict(std::int64_t depth = 0) {
    PJRT_LITE_RETURN_IF_ERROR(expect('{', "to start an attribute dictionary"));
    AttrDict dict;
    if (consume_if('}')) return dict;
    while (true) {
      Token key = lex_.next();
      if (key.kind != TokenKind::kIdent && key.kind != TokenKind::kString)
        return error_at(
            key.pos, str_cat("expected an attribute name in a dictionary, found ", describe(key)));
      AttrValue value;
      value.pos = key.pos;
      if (consume_if('=')) {
        PJRT_LITE_ASSIGN_OR_RETURN(value, parse_attr_value(depth + 1));
      }
      dict.emplace_back(key.kind == TokenKind::kString ? unquote(key.text) : std::string(key.text),
                        std::move(value));
      Token t = lex_.next();
      if (t.is('}')) return dict;
      if (!t.is(','))
        return error_at(
            t.pos, str_cat("expected ',' or '}' in an attribute dictionary, found ", describe(t)));
    }
  }

  /// One attribute value.
  StatusOr<AttrValue> parse_attr_value(std::int64_t depth = 0) {
    const Token t = lex_.peek();
    AttrValue v;
    v.pos = t.pos;
    if (depth > kMaxAttributeDepth)
      return error_at(t.pos, str_cat("attribute nested deeper than ", kMaxAttributeDepth));
    using K = AttrValue::Kind;
    switch (t.kind) {
      case TokenKind::kInt: {
        lex_.next();
        v.kind = K::kInt;
        if (StatusOr<std::int64_t> i = int_value(t); i.ok())
          v.i = *i;
        else
          v.kind = K::kOpaque;  // e.g. a ui64 beyond int64: kept as text
        v.text = std::string(t.text);
        PJRT_LITE_RETURN_IF_ERROR(skip_scalar_type_suffix());
        return v;
      }
      case TokenKind::kFloat: {
        lex_.next();
        v.kind = K::kFloat;
        v.text = std::string(t.text);
        if (std::from_chars(t.text.data(), t.text.data() + t.text.size(), v.f).ec != std::errc())
          v.kind = K::kOpaque;  // out of double's range: kept as text
        PJRT_LITE_RETURN_IF_ERROR(skip_scalar_type_suffix());
        return v;
      }
      case TokenKind::kString:
        lex_.next();
        v.kind = K::kString;
        v.text = unquote(t.text);
        PJRT_LITE_RETURN_IF_ERROR(skip_scalar_type_suffix());
        return v;
      case TokenKind::kSymbol:
        lex_.next();
        v.kind = K::kSymbol;
        v.text = symbol_name(t.text);
        while (lex_.peek().is(':') && lex_.peek2().is(':')) {  // nested @a::@b
          lex_.next();
          lex_.next();
          PJRT_LITE_ASSIGN_OR_RETURN(Token inner,
                                     expect_kind(TokenKind::kSymbol, "a symbol", "after '::'"));
          v.text += "::" + symbol_name(inner.text);
        }
        return v;
      case TokenKind::kHashId: return parse_hash_attr();
      case TokenKind::kPunct:
        if (t.is('[')) {
          lex_.next();
          v.kind = K::kList;
          if (consume_if(']')) return v;
          while (true) {
            PJRT_LITE_ASSIGN_OR_RETURN(AttrValue item, parse_attr_value(depth + 1));
            v.list.push_back(std::move(item));
            Token u = lex_.next();
            if (u.is(']')) return v;
            if (!u.is(','))
              return error_at(
                  u.pos, str_cat("expected ',' or ']' in an attribute list, found ", describe(u)));
          }
        }
        if (t.is('{')) {
          v.kind = K::kDict;
          PJRT_LITE_ASSIGN_OR_RETURN(v.dict, parse_dict(depth + 1));
          return v;
        }
        if (t.is('(')) {  // a function type as an attribute
          v.kind = K::kType;
          PJRT_LITE_RETURN_IF_ERROR(parse_function_type().status());
          return v;
        }
        if (t.is('-') && lex_.peek2().kind == TokenKind::kIdent) {  // -inf
          lex_.next();
          lex_.next();
          v.kind = K::kOpaque;
          v.text = "-";
          return v;
        }
        break;
      case TokenKind::kIdent: return parse_word_attr();
      default: break;
    }
    return error_at(t.pos, str_cat("expected an attribute value, found ", describe(t)));
  }

  /// The name of a symbol token without '@' and quotes.
  static std::string symbol_name(std::string_view token) {
    token.remove_prefix(1);
    if (!token.empty() && token.front() == '"') return unquote(token);
    return std::string(token);
  }

 private:
  // `: i64` after an integer attribute, `: f32` after a float. A `: tensor<...>` is left
  // alone: after a scalar it is the type of the op the attribute belongs to.
  Status skip_scalar_type_suffix() {
    if (!lex_.peek().is(':')) return ok_status();
    Token after = lex_.peek2();
    if (after.kind == TokenKind::kIdent && is_builtin_scalar_type(after.text)) {
      lex_.next();
      lex_.next();
      if (after.text == "complex") PJRT_LITE_RETURN_IF_ERROR(lex_.skip_balanced('<', '>').status());
    }
    return ok_status();
  }

  StatusOr<AttrValue> parse_hash_attr() {
    using K = AttrValue::Kind;
    Token t = lex_.next();
    AttrValue v;
    v.pos = t.pos;
    v.text = std::string(t.text.substr(1));
    if (!(lex_.peek_char() == '<')) {  // an alias reference such as #loc3
      v.kind = K::kOpaque;
      return v;
    }
    if (t.text == "#stablehlo.dot" || t.text == "#stablehlo.scatter" ||
        t.text == "#stablehlo.gather" || t.text == "#stablehlo.channel_handle") {
      // key = value pairs; the values are plain lists and integers.
      lex_.next();
      v.kind = K::kDict;
      if (consume_if('>')) return v;
      while (true) {
        PJRT_LITE_ASSIGN_OR_RETURN(
            Token key, expect_kind(TokenKind::kIdent, "a field name", {"in ", t.text, "<...>"}));
        PJRT_LITE_RETURN_IF_ERROR(expect('=', {"after ", key.text}));
        PJRT_LITE_ASSIGN_OR_RETURN(AttrValue value, parse_attr_value(1));
        v.dict.emplace_back(std::string(key.text), std::move(value));
        Token u = lex_.next();
        if (u.is('>')) return v;
        if (!u.is(','))
          return error_at(u.pos,
                          str_cat("expected ',' or '>' in ", t.text, "<...>, found ", describe(u)));
        if (consume_if('>')) return v;  // a trailing comma, as StableHLO's own parser allows
      }
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::string_view body, lex_.skip_balanced('<', '>'));
    // `#stablehlo<comparison_direction LT>`: a kind and a word.
    std::string_view s = body;
    auto trim = [](std::string_view x) {
      while (!x.empty() && (x.front() == ' ' || x.front() == '\n' || x.front() == '\t'))
        x.remove_prefix(1);
      while (!x.empty() && (x.back() == ' ' || x.back() == '\n' || x.back() == '\t'))
        x.remove_suffix(1);
      return x;
    };
    s = trim(s);
    const std::size_t space = s.find(' ');
    auto is_word = [](std::string_view w) {
      if (w.empty()) return false;
      for (char c : w)
        if (!is_ident_char(c)) return false;
      return true;
    };
    if (space != std::string_view::npos && is_word(s.substr(0, space)) &&
        is_word(trim(s.substr(space + 1)))) {
      v.kind = K::kEnum;
      v.text = std::string(s.substr(0, space));
      v.word = std::string(trim(s.substr(space + 1)));
      return v;
    }
    v.kind = K::kOpaque;
    v.word = std::string(body);
    return v;
  }

  StatusOr<AttrValue> parse_word_attr() {
    using K = AttrValue::Kind;
    const Token t = lex_.peek();
    AttrValue v;
    v.pos = t.pos;
    if (t.text == "true" || t.text == "false") {
      lex_.next();
      v.kind = K::kBool;
      v.b = t.text == "true";
      return v;
    }
    if (t.text == "unit") {
      lex_.next();
      v.kind = K::kUnit;
      return v;
    }
    if (t.text == "dense") {
      lex_.next();
      PJRT_LITE_ASSIGN_OR_RETURN(DenseSyntax syntax, parse_dense(lex_));
      PJRT_LITE_RETURN_IF_ERROR(expect(':', "and a type after a dense literal"));
      // `index` elements (operand_layouts = [dense<[0, 1]> : tensor<2xindex>]) read as i64.
      index_as_i64_ = true;
      StatusOr<Shape> parsed = parse_type();
      index_as_i64_ = false;
      PJRT_LITE_ASSIGN_OR_RETURN(Shape type, std::move(parsed));
      PJRT_LITE_ASSIGN_OR_RETURN(Literal lit, dense_to_literal(syntax, type));
      v.kind = K::kDense;
      v.type = type;
      v.dense = std::make_shared<const Literal>(std::move(lit));
      return v;
    }
    if (t.text == "dense_resource" || t.text == "sparse")
      return unsupported_at(t.pos, str_cat(t.text, " constants"));
    if (t.text == "array" && lex_.peek2().is('<')) return parse_array();
    if (t.text == "tensor" || is_builtin_scalar_type(t.text)) {
      v.kind = K::kType;
      if (t.text == "tensor") {
        PJRT_LITE_ASSIGN_OR_RETURN(v.type, parse_type());
      } else {
        lex_.next();
        if (t.text == "complex") PJRT_LITE_RETURN_IF_ERROR(lex_.skip_balanced('<', '>').status());
      }
      return v;
    }
    lex_.next();
    v.kind = K::kOpaque;
    v.text = std::string(t.text);
    if (t.text == "loc" && lex_.peek_char() == '(') {
      PJRT_LITE_RETURN_IF_ERROR(lex_.skip_balanced('(', ')').status());
    } else if (lex_.peek_char() == '<') {  // affine_map<...>, strided<...>, ...
      PJRT_LITE_ASSIGN_OR_RETURN(std::string_view body, lex_.skip_balanced('<', '>'));
      v.word = std::string(body);
    }
    return v;
  }

  // `array<i64: 1, 2>`, `array<i64>`, `array<i1: true>`; other element types stay opaque.
  StatusOr<AttrValue> parse_array() {
    using K = AttrValue::Kind;
    Token t = lex_.next();  // array
    AttrValue v;
    v.pos = t.pos;
    PJRT_LITE_RETURN_IF_ERROR(expect('<', "after array"));
    PJRT_LITE_ASSIGN_OR_RETURN(Token elem,
                               expect_kind(TokenKind::kIdent, "an element type", "in array<...>"));
    const bool is_int =
        elem.text.size() > 1 && (elem.text[0] == 'i' || elem.text.starts_with("ui"));
    if (!is_int) {  // array<f32: ...> and the like: skipped, kept opaque
      v.kind = K::kOpaque;
      while (!lex_.peek().is('>')) {
        Token u = lex_.next();
        if (u.kind == TokenKind::kEof || u.kind == TokenKind::kError)
          return error_at(u.pos, str_cat("expected '>' to end array<...>, found ", describe(u)));
      }
      lex_.next();
      return v;
    }
    v.kind = K::kIntArray;
    if (consume_if('>')) return v;
    PJRT_LITE_RETURN_IF_ERROR(expect(':', {"after array<", elem.text}));
    while (true) {
      Token u = lex_.next();
      if (u.is_ident("true") || u.is_ident("false")) {
        v.ints.push_back(u.text == "true" ? 1 : 0);
      } else if (u.kind == TokenKind::kInt) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t i, int_value(u));
        v.ints.push_back(i);
      } else {
        return error_at(u.pos, str_cat("expected an integer in array<", elem.text, ": ...>, found ",
                                       describe(u)));
      }
      Token w = lex_.next();
      if (w.is('>')) return v;
      if (!w.is(','))
        return error_at(w.pos, str_cat("expected ',' or '>' in array<...>, found ", describe(w)));
    }
  }

  StatusOr<Shape> parse_tensor_body(SourcePos type_pos) {
    lex_.skip_trivia();
    if (lex_.peek_char() != '<')
      return error_at(lex_.pos(), str_cat("expected '<' after tensor, found '",
                                          std::string(1, lex_.peek_char()), "'"));
    lex_.advance();
    std::vector<std::int64_t> dims;
    auto skip_spaces = [&] {
      while (lex_.peek_char() == ' ' || lex_.peek_char() == '\t' || lex_.peek_char() == '\n' ||
             lex_.peek_char() == '\r')
        lex_.advance();
    };
    while (true) {
      skip_spaces();
      const SourcePos p = lex_.pos();
      const char c = lex_.peek_char();
      if (c == '?') {
        // A dimension known only at run time: refined from the arguments' shapes when the
        // function is built (module_reader.hpp), and a type that keeps one is an error there.
        lex_.advance();
        skip_spaces();
        if (lex_.peek_char() != 'x')
          return error_at(lex_.pos(), "expected 'x' after the dimension ? in a tensor type");
        lex_.advance();
        dims.push_back(kDynamicDim);
        if (static_cast<std::int64_t>(dims.size()) > kMaxRank)
          return error_at(type_pos, str_cat("tensor rank exceeds the limit of ", kMaxRank));
        continue;
      }
      if (c == '*') return unsupported_at(p, "an unranked tensor type");
      if (!is_digit(c)) break;
      std::int64_t d = 0;
      while (is_digit(lex_.peek_char())) {
        if (d > (std::int64_t{1} << 56)) return error_at(p, "tensor dimension is too large");
        d = d * 10 + (lex_.peek_char() - '0');
        lex_.advance();
      }
      skip_spaces();
      if (lex_.peek_char() != 'x')
        return error_at(lex_.pos(),
                        str_cat("expected 'x' after the dimension ", d, " in a tensor type"));
      lex_.advance();
      dims.push_back(d);
      if (static_cast<std::int64_t>(dims.size()) > kMaxRank)
        return error_at(type_pos, str_cat("tensor rank exceeds the limit of ", kMaxRank));
    }
    const SourcePos elem_pos = lex_.pos();
    if (lex_.peek_char() == '!') {
      PJRT_LITE_ASSIGN_OR_RETURN(QuantType q, parse_quant_element(elem_pos));
      skip_spaces();
      if (lex_.peek_char() != '>')
        return error_at(lex_.pos(), str_cat("expected '>' to end the tensor type, found '",
                                            std::string(1, lex_.peek_char()), "'"));
      lex_.advance();
      for (std::int64_t d : dims)
        if (d == kDynamicDim)
          return unsupported_at(type_pos, "a quantized tensor type with a dimension '?'");
      PJRT_LITE_RETURN_IF_ERROR(check_quant_dims(q, dims, type_pos));
      PJRT_LITE_ASSIGN_OR_RETURN(Shape shape, Shape::make(q.storage, dims));
      last_quant_ = std::move(q);
      return shape;
    }
    std::string name;
    while (is_letter(lex_.peek_char()) || is_digit(lex_.peek_char()) || lex_.peek_char() == '_') {
      name += lex_.peek_char();
      lex_.advance();
    }
    if (name.empty())
      return error_at(elem_pos, str_cat("expected a dimension or an element type in a tensor type, "
                                        "found '",
                                        std::string(1, lex_.peek_char()), "'"));
    if (name == "complex") {
      skip_spaces();
      if (lex_.peek_char() != '<') return error_at(lex_.pos(), "expected '<' after complex");
      lex_.advance();
      skip_spaces();
      std::string inner;
      while (is_letter(lex_.peek_char()) || is_digit(lex_.peek_char())) {
        inner += lex_.peek_char();
        lex_.advance();
      }
      skip_spaces();
      if (lex_.peek_char() != '>') return error_at(lex_.pos(), "expected '>' to end complex<...>");
      lex_.advance();
      name = str_cat("complex<", inner, ">");
    }
    if (name == "index" && index_as_i64_) name = "i64";
    std::optional<DType> dtype = dtype_from_element_type(name);
    if (!dtype) {
      if (is_unsupported_element_type(name))
        return unsupported_at(elem_pos, str_cat("the element type ", name));
      return error_at(elem_pos, str_cat("unknown element type '", name,
                                        "' (expected i1, i8..i64, ui8..ui64, f16, bf16, f32, f64, "
                                        "complex<f32> or complex<f64>)"));
    }
    skip_spaces();
    if (lex_.peek_char() == ',')
      return unsupported_at(lex_.pos(), "a tensor encoding (bounded or sparse tensors)");
    if (lex_.peek_char() != '>')
      return error_at(lex_.pos(), str_cat("expected '>' to end the tensor type, found '",
                                          std::string(1, lex_.peek_char()), "'"));
    lex_.advance();
    std::vector<std::int64_t> known = dims;
    for (std::int64_t& d : known)
      if (d == kDynamicDim) d = 0;
    StatusOr<Shape> shape = Shape::make(*dtype, known);
    if (!shape.ok()) return error_at(type_pos, shape.status().message());
    if (known != dims) return Shape(*dtype, std::move(dims));  // '?' stays kDynamicDim
    return shape;
  }

  // ---- Quantized element types ------------------------------------------------------------

  /// `!quant.uniform<Storage[<min:max>]:Expressed[:axis], Params>` from its '!' (the spec's
  /// QuantizedTensorElementType), checked against constraints C1-C11.
  StatusOr<QuantType> parse_quant_element(SourcePos pos) {
    std::string word;
    auto read_word = [&] {
      word.clear();
      while (is_letter(lex_.peek_char()) || is_digit(lex_.peek_char()) || lex_.peek_char() == '_' ||
             lex_.peek_char() == '.' || lex_.peek_char() == '!') {
        word += lex_.peek_char();
        lex_.advance();
      }
    };
    auto skip = [&] {
      while (lex_.peek_char() == ' ' || lex_.peek_char() == '\t' || lex_.peek_char() == '\n' ||
             lex_.peek_char() == '\r')
        lex_.advance();
    };
    auto expect_char = [&](char c, std::string_view what) -> Status {
      skip();
      if (lex_.peek_char() != c)
        return error_at(lex_.pos(), str_cat("expected '", std::string(1, c), "' ", what,
                                            " in a quantized type, found '",
                                            std::string(1, lex_.peek_char()), "'"));
      lex_.advance();
      return ok_status();
    };
    // A number as written: sign, digits, '.', exponent.
    auto read_number = [&] {
      skip();
      std::string n;
      auto take = [&] {
        n += lex_.peek_char();
        lex_.advance();
      };
      if (lex_.peek_char() == '-' || lex_.peek_char() == '+') take();
      while (is_digit(lex_.peek_char()) || lex_.peek_char() == '.' || lex_.peek_char() == 'e' ||
             lex_.peek_char() == 'E' ||
             ((lex_.peek_char() == '-' || lex_.peek_char() == '+') &&
              (n.ends_with('e') || n.ends_with('E'))))
        take();
      return n;
    };
    auto to_int = [&](const std::string& n, std::string_view what) -> StatusOr<std::int64_t> {
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
      if (n.empty() || ec != std::errc() || end != n.data() + n.size())
        return error_at(lex_.pos(), str_cat("expected an integer ", what, " in a quantized type, found '", n, "'"));
      return v;
    };
    read_word();
    if (word != "!quant.uniform")
      return unsupported_at(pos, str_cat("the element type ", word.empty() ? "!..." : word));
    PJRT_LITE_RETURN_IF_ERROR(expect_char('<', "after !quant.uniform"));
    QuantType q;
    skip();
    read_word();
    // The quant dialect spells storage types i8 and u8 (StableHLO's ui8 is read too).
    std::string storage = word;
    if (storage.starts_with("u") && !storage.starts_with("ui")) storage.insert(1, "i");
    const std::optional<DType> st = dtype_from_element_type(storage);
    if (!st || !is_integral(*st) || *st == DType::kPred)
      return error_at(pos, str_cat("the storage type of a quantized type must be an integer type, found '", word, "'"));
    if (bit_width(*st) > 32) return unsupported_at(pos, str_cat("a quantized type stored in ", word));
    q.storage = *st;
    const int bits = bit_width(q.storage);
    const bool is_signed = is_signed_integral(q.storage);
    const std::int64_t type_min = is_signed ? -(std::int64_t{1} << (bits - 1)) : 0;
    const std::int64_t type_max = is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
    q.storage_min = type_min;
    q.storage_max = type_max;
    skip();
    if (lex_.peek_char() == '<') {
      lex_.advance();
      PJRT_LITE_ASSIGN_OR_RETURN(q.storage_min, to_int(read_number(), "storage minimum"));
      PJRT_LITE_RETURN_IF_ERROR(expect_char(':', "between the storage minimum and maximum"));
      PJRT_LITE_ASSIGN_OR_RETURN(q.storage_max, to_int(read_number(), "storage maximum"));
      PJRT_LITE_RETURN_IF_ERROR(expect_char('>', "after the storage range"));
      if (!(type_min <= q.storage_min && q.storage_min < q.storage_max && q.storage_max <= type_max))
        return error_at(pos, str_cat("the storage range <", q.storage_min, ":", q.storage_max,
                                     "> of a quantized type is empty or outside ", word));
    }
    PJRT_LITE_RETURN_IF_ERROR(expect_char(':', "after the storage type"));
    skip();
    read_word();
    const std::optional<DType> ex = dtype_from_element_type(word);
    if (!ex || !is_floating(*ex) || is_narrow(*ex))
      return error_at(pos, str_cat("the expressed type of a quantized type must be f16, bf16, f32 or f64, found '", word, "'"));
    q.expressed = *ex;
    skip();
    if (lex_.peek_char() == ':') {
      lex_.advance();
      PJRT_LITE_ASSIGN_OR_RETURN(q.axis, to_int(read_number(), "quantization dimension"));
      if (q.axis < 0) return error_at(pos, "the quantization dimension of a quantized type is negative");
    }
    PJRT_LITE_RETURN_IF_ERROR(expect_char(',', "before the scales"));
    skip();
    const bool list = lex_.peek_char() == '{';
    if (list) lex_.advance();
    while (true) {
      const std::string scale_text = read_number();
      double scale = 0;
      const auto [end, ec] = std::from_chars(scale_text.data(), scale_text.data() + scale_text.size(), scale);
      if (scale_text.empty() || ec != std::errc() || end != scale_text.data() + scale_text.size())
        return error_at(lex_.pos(), str_cat("expected a scale in a quantized type, found '", scale_text, "'"));
      if (!(scale > 0) || !std::isfinite(scale))
        return error_at(pos, str_cat("the scale ", scale_text, " of a quantized type is not positive and finite"));
      std::int64_t zero_point = 0;
      skip();
      if (lex_.peek_char() == ':') {
        lex_.advance();
        PJRT_LITE_ASSIGN_OR_RETURN(zero_point, to_int(read_number(), "zero point"));
      }
      if (zero_point < q.storage_min || zero_point > q.storage_max)
        return error_at(pos, str_cat("the zero point ", zero_point, " of a quantized type is outside its storage range [",
                                     q.storage_min, ", ", q.storage_max, "]"));
      q.scales.push_back(scale);
      q.zero_points.push_back(zero_point);
      skip();
      if (!list || lex_.peek_char() != ',') break;
      lex_.advance();
    }
    if (list) PJRT_LITE_RETURN_IF_ERROR(expect_char('}', "after the scales"));
    PJRT_LITE_RETURN_IF_ERROR(expect_char('>', "to end !quant.uniform<...>"));
    if (!q.per_axis() && q.scales.size() != 1)
      return error_at(pos, "a per-tensor quantized type has one scale and zero point; name a quantization "
                           "dimension (`:f32:1, {...}`) for several");
    return q;
  }

  /// C12-C13: a per-axis type's dimension exists and has one scale per index.
  static Status check_quant_dims(const QuantType& q, const std::vector<std::int64_t>& dims, SourcePos pos) {
    if (!q.per_axis()) return ok_status();
    if (q.axis >= static_cast<std::int64_t>(dims.size()))
      return error_at(pos, str_cat("the quantization dimension ", q.axis, " of a rank-", dims.size(),
                                   " tensor type does not exist"));
    if (dims[static_cast<std::size_t>(q.axis)] != static_cast<std::int64_t>(q.scales.size()))
      return error_at(pos, str_cat("the quantization dimension ", q.axis, " has size ",
                                   dims[static_cast<std::size_t>(q.axis)], " but the type lists ",
                                   q.scales.size(), " scales"));
    return ok_status();
  }

  Lexer lex_;
  bool index_as_i64_ = false;  // inside a dense attribute's type
  std::optional<QuantType> last_quant_;
  bool log_types_ = false;  // inside parse_op_type: every type's quantization goes to the log
  std::vector<std::optional<QuantType>> type_log_;
};

}  // namespace pjrt_lite::stablehlo::detail
