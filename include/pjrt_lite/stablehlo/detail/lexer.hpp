#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The tokens of MLIR's textual form, as far as StableHLO programs use them. The lexer is a
// cursor over the source with no token buffer: peeking copies the cursor, and the parser can
// read raw characters at the cursor where MLIR's grammar is not token-based (the insides of
// `tensor<2x3xf32>`, opaque `#dialect<...>` bodies, `loc(...)`).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// A place in the source: 1-based line and column (the column counts bytes).
struct SourcePos {
  std::int64_t line = 1;
  std::int64_t column = 1;
};

/// "3:17".
inline std::string to_string(SourcePos p) { return str_cat(p.line, ":", p.column); }

/// INVALID_ARGUMENT "3:17: message": the form of every syntax and type error.
inline Status error_at(SourcePos p, std::string_view message) {
  return invalid_argument_error(str_cat(to_string(p), ": ", message));
}

/// UNIMPLEMENTED "what is not supported (line 3)": valid StableHLO the IR cannot represent,
/// worded so that a conformance runner can report the file as skipped.
inline Status unsupported_at(SourcePos p, std::string_view what) {
  return unimplemented_error(str_cat(what, " is not supported (line ", p.line, ")"));
}

enum class TokenKind : std::uint8_t {
  kEof,
  kError,    // text holds the offending characters; message says why
  kValueId,  // %name or %name#3 (a use of result 3)
  kSymbol,   // @name or @"quoted name"
  kBlockId,  // ^bb0
  kHashId,   // #name: an attribute alias or a dialect attribute such as #stablehlo
  kBangId,   // !name: a dialect type such as !stablehlo.token
  kIdent,    // bare identifier: stablehlo.add, tensor, dims, x, true, nan
  kInt,      // 12, -3, 0x7FC00000
  kFloat,    // 1.5, -2.0e+10, 3.
  kString,   // "..." with its quotes
  kArrow,    // ->
  kPunct,    // one of ( ) [ ] { } < > , : = * ? + - |
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;
  SourcePos pos;
  std::string_view message;  // for kError

  [[nodiscard]] bool is(char c) const {
    return kind == TokenKind::kPunct && text.size() == 1 && text[0] == c;
  }
  [[nodiscard]] bool is_ident(std::string_view s) const {
    return kind == TokenKind::kIdent && text == s;
  }
};

/// How a token reads in an error message: "':'", "identifier 'dims'", "end of input".
inline std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kEof: return "end of input";
    case TokenKind::kError: return str_cat("'", t.text, "' (", t.message, ")");
    case TokenKind::kIdent: return str_cat("identifier '", t.text, "'");
    case TokenKind::kInt:
    case TokenKind::kFloat: return str_cat("number ", t.text);
    case TokenKind::kString:
      return t.text.size() > 40 ? str_cat("string ", t.text.substr(0, 37), "...")
                                : str_cat("string ", t.text);
    default: return str_cat("'", t.text, "'");
  }
}

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
/// Characters after the first of a bare identifier: letters, digits, _ $ .
constexpr bool is_ident_char(char c) {
  return is_letter(c) || is_digit(c) || c == '_' || c == '$' || c == '.';
}
/// Characters of a value, symbol or block name after the sigil (MLIR's suffix-id): also -.
constexpr bool is_suffix_char(char c) { return is_ident_char(c) || c == '-'; }

/// The cursor. Copyable in O(1): `Lexer saved = lex;` ... `lex = saved;` backtracks.
class Lexer {
 public:
  explicit Lexer(std::string_view text, SourcePos start = {}) : text_(text), pos_(start) {}

  /// The next token, consumed.
  Token next() {
    skip_trivia();
    const SourcePos start = pos_;
    const std::size_t begin = offset_;
    if (offset_ >= text_.size()) return Token{TokenKind::kEof, {}, start, {}};
    const char c = text_[offset_];
    auto make = [&](TokenKind kind) {
      return Token{kind, text_.substr(begin, offset_ - begin), start, {}};
    };
    auto fail = [&](std::string_view why) {
      if (offset_ == begin) advance();
      return Token{TokenKind::kError, text_.substr(begin, offset_ - begin), start, why};
    };
    if (c == '%' || c == '^' || c == '@') {
      advance();
      if (c == '@' && peek_char() == '"') {
        if (!skip_string()) return fail("unterminated string");
        return make(TokenKind::kSymbol);
      }
      const std::size_t name = offset_;
      while (offset_ < text_.size() && is_suffix_char(text_[offset_])) advance();
      if (offset_ == name) return fail("a name must follow the sigil");
      if (c == '%' && peek_char() == '#') {
        advance();
        const std::size_t digits = offset_;
        while (offset_ < text_.size() && is_digit(text_[offset_])) advance();
        if (offset_ == digits) return fail("a result number must follow '#'");
      }
      return make(c == '%'   ? TokenKind::kValueId
                  : c == '^' ? TokenKind::kBlockId
                             : TokenKind::kSymbol);
    }
    if (c == '#' || c == '!') {
      advance();
      const std::size_t name = offset_;
      while (offset_ < text_.size() && is_ident_char(text_[offset_])) advance();
      if (offset_ == name) return fail("a name must follow the sigil");
      return make(c == '#' ? TokenKind::kHashId : TokenKind::kBangId);
    }
    if (c == '"') {
      if (!skip_string()) return fail("unterminated string");
      return make(TokenKind::kString);
    }
    if (is_letter(c) || c == '_') {
      while (offset_ < text_.size() && is_ident_char(text_[offset_])) advance();
      return make(TokenKind::kIdent);
    }
    if (c == '-' && peek_char(1) == '>') {
      advance(2);
      return make(TokenKind::kArrow);
    }
    if (is_digit(c) || (c == '-' && is_digit(peek_char(1)))) {
      if (c == '-') advance();
      if (peek_char() == '0' && (peek_char(1) == 'x' || peek_char(1) == 'X') &&
          is_hex_digit(peek_char(2))) {
        advance(2);
        while (offset_ < text_.size() && is_hex_digit(text_[offset_])) advance();
        return make(TokenKind::kInt);
      }
      while (offset_ < text_.size() && is_digit(text_[offset_])) advance();
      bool is_float = false;
      if (peek_char() == '.') {
        is_float = true;
        advance();
        while (offset_ < text_.size() && is_digit(text_[offset_])) advance();
      }
      if ((peek_char() == 'e' || peek_char() == 'E') &&
          (is_digit(peek_char(1)) ||
           ((peek_char(1) == '+' || peek_char(1) == '-') && is_digit(peek_char(2))))) {
        is_float = true;
        advance(2);
        while (offset_ < text_.size() && is_digit(text_[offset_])) advance();
      }
      return make(is_float ? TokenKind::kFloat : TokenKind::kInt);
    }
    constexpr std::string_view kPunct = "()[]{}<>,:=*?+-|";
    if (kPunct.find(c) != std::string_view::npos) {
      advance();
      return make(TokenKind::kPunct);
    }
    return fail("unexpected character");
  }

  /// The next token, not consumed.
  [[nodiscard]] Token peek() const {
    Lexer copy = *this;
    return copy.next();
  }
  /// The token after the next one, not consumed.
  [[nodiscard]] Token peek2() const {
    Lexer copy = *this;
    copy.next();
    return copy.next();
  }

  /// Where the next token starts (after trivia).
  [[nodiscard]] SourcePos next_pos() const {
    Lexer copy = *this;
    copy.skip_trivia();
    return copy.pos_;
  }

  // ---- Raw access, for the parts of the grammar that are not token-based ----

  /// Skips whitespace and comments, then returns the position of the next character.
  SourcePos skip_trivia() {
    while (offset_ < text_.size()) {
      const char c = text_[offset_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else if (c == '/' && peek_char(1) == '/') {
        while (offset_ < text_.size() && text_[offset_] != '\n') advance();
      } else if (c == '{' && peek_char(1) == '-' && peek_char(2) == '#') {
        // A file-level metadata block `{-# ... #-}` (dialect resources): not part of the
        // program's meaning here, and only valid at the top level, so it is trivia.
        const std::size_t end = text_.find("#-}", offset_ + 3);
        advance((end == std::string_view::npos ? text_.size() : end + 3) - offset_);
      } else {
        break;
      }
    }
    return pos_;
  }
  /// The next character without consuming it; '\0' at the end.
  [[nodiscard]] char peek_char(std::size_t ahead = 0) const {
    return offset_ + ahead < text_.size() ? text_[offset_ + ahead] : '\0';
  }
  /// Consumes `n` characters (fewer at the end of the text).
  void advance(std::size_t n = 1) {
    for (; n > 0 && offset_ < text_.size(); --n) {
      if (text_[offset_] == '\n') {
        ++pos_.line;
        pos_.column = 1;
      } else {
        ++pos_.column;
      }
      ++offset_;
    }
  }
  [[nodiscard]] SourcePos pos() const { return pos_; }
  [[nodiscard]] std::size_t offset() const { return offset_; }
  [[nodiscard]] std::string_view text() const { return text_; }

  /// Consumes a bracketed run starting at the cursor's `open` character up to its matching
  /// `close`, skipping nested ( ) [ ] { } < >, strings and comments, and returns what lay
  /// between. `->` never counts as a bracket. Fails on a mismatched or missing closing
  /// bracket. With `only_this_pair`, other brackets are not tracked (for skipping a function
  /// body, whose insides are checked when it is parsed).
  StatusOr<std::string_view> skip_balanced(char open, char close, bool only_this_pair = false) {
    skip_trivia();
    const SourcePos start = pos_;
    if (peek_char() != open) return error_at(start, str_cat("expected '", open, "'"));
    advance();
    const std::size_t begin = offset_;
    std::string stack(1, close);
    while (offset_ < text_.size()) {
      const char c = text_[offset_];
      if (c == '"') {
        if (!skip_string()) return error_at(start, "unterminated string inside brackets");
        continue;
      }
      if (c == '-' && peek_char(1) == '>') {
        advance(2);
        continue;
      }
      if (c == '/' && peek_char(1) == '/') {
        while (offset_ < text_.size() && text_[offset_] != '\n') advance();
        continue;
      }
      if (only_this_pair && c != open && c != close) {
        advance();
        continue;
      }
      if (c == '(' || c == '[' || c == '{' || c == '<') {
        stack.push_back(c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>');
      } else if (c == ')' || c == ']' || c == '}' || c == '>') {
        if (c != stack.back())
          return error_at(pos_, str_cat("expected '", stack.back(), "', found '", c, "'"));
        stack.pop_back();
        if (stack.empty()) {
          const std::string_view inside = text_.substr(begin, offset_ - begin);
          advance();
          return inside;
        }
      }
      advance();
    }
    return error_at(start, str_cat("no closing '", close, "' for this '", open, "'"));
  }

 private:
  // At a '"': consumes the string and its closing quote; false if the text ends first.
  bool skip_string() {
    advance();
    while (offset_ < text_.size()) {
      const char c = text_[offset_];
      if (c == '\\') {
        advance(2);
        continue;
      }
      if (c == '\n') return false;
      advance();
      if (c == '"') return true;
    }
    return false;
  }

  std::string_view text_;
  std::size_t offset_ = 0;
  SourcePos pos_;
};

/// The contents of a string token without its quotes, with MLIR's escapes (\\ \" \n \t and
/// two hex digits) resolved.
inline std::string unquote(std::string_view token) {
  if (token.size() >= 2 && token.front() == '"') token = token.substr(1, token.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    const char c = token[i];
    if (c != '\\' || i + 1 >= token.size()) {
      out += c;
      continue;
    }
    const char e = token[++i];
    if (e == 'n')
      out += '\n';
    else if (e == 't')
      out += '\t';
    else if (is_hex_digit(e) && i + 1 < token.size() && is_hex_digit(token[i + 1])) {
      out += static_cast<char>(hex_digit_value(e) * 16 + hex_digit_value(token[i + 1]));
      ++i;
    } else {
      out += e;
    }
  }
  return out;
}

}  // namespace pjrt_lite::stablehlo::detail
