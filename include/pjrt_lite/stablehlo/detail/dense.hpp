#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The `dense<...>` elements attribute: reading it into a Literal and writing a Literal as one.
//
// Reading happens in two steps because the type follows the value (`dense<[1, 2]> :
// tensor<2xf32>`): parse_dense records the syntax (element tokens and list structure), then
// dense_to_literal checks it against the type and converts the elements. Accepted forms:
// nested lists, a splat (one element for the whole tensor), `dense<>` for an empty tensor,
// true/false, decimal and hex integers, decimal floats, hex float bit patterns (0x7FC00000),
// nan/inf with an optional sign, complex pairs (re, im), and raw little-endian blobs
// `dense<"0x...">` (a whole tensor, or one element as a splat; i1 takes a byte per element).

#include <bit>
#include <charconv>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// Constants larger than this are refused rather than allocated: a splat can ask for any
/// size in a few characters.
inline constexpr std::int64_t kMaxConstantBytes = std::int64_t{1} << 30;
/// The deepest list nesting (and so the highest rank) a dense literal may have.
inline constexpr std::int64_t kMaxDenseDepth = 64;

/// One scalar as written: a number or word token, maybe after a separate '-' (as in -inf).
struct DenseScalar {
  std::string_view text;
  bool negated = false;
  SourcePos pos;
};

/// A dense literal as written, before its type is known.
struct DenseSyntax {
  struct Element {
    DenseScalar re;
    DenseScalar im;
    bool is_complex = false;
  };
  /// One bracketed list: how many entries, and whether they are lists or elements.
  struct List {
    std::int64_t size = 0;
    bool of_lists = false;
    SourcePos pos;
  };
  SourcePos pos;  // of the `<`
  bool is_blob = false;
  std::string_view blob;  // the string token, quotes included
  SourcePos blob_pos;
  std::vector<Element> elements;  // in order
  std::vector<List> lists;        // in pre-order; empty for a splat or dense<>
};

namespace dense_impl {

inline Status parse_scalar(Lexer& lex, DenseScalar& out) {
  Token t = lex.next();
  if (t.is('-') || t.is('+')) {
    out.negated = t.is('-');
    Token word = lex.next();
    if (word.kind != TokenKind::kIdent)
      return error_at(word.pos,
                      str_cat("expected inf or nan after '", t.text, "', found ", describe(word)));
    out.text = word.text;
    out.pos = t.pos;
    return ok_status();
  }
  if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat || t.kind == TokenKind::kIdent) {
    out.text = t.text;
    out.pos = t.pos;
    return ok_status();
  }
  return error_at(t.pos, str_cat("expected a dense element (number, true, false, nan, inf or "
                                 "(re, im)), found ",
                                 describe(t)));
}

inline Status parse_element(Lexer& lex, DenseSyntax& d) {
  DenseSyntax::Element e;
  if (lex.peek().is('(')) {
    lex.next();
    e.is_complex = true;
    PJRT_LITE_RETURN_IF_ERROR(parse_scalar(lex, e.re));
    Token comma = lex.next();
    if (!comma.is(','))
      return error_at(comma.pos, str_cat("expected ',' between the real and imaginary parts, "
                                         "found ",
                                         describe(comma)));
    PJRT_LITE_RETURN_IF_ERROR(parse_scalar(lex, e.im));
    Token close = lex.next();
    if (!close.is(')'))
      return error_at(close.pos,
                      str_cat("expected ')' after a complex element, found ", describe(close)));
  } else {
    PJRT_LITE_RETURN_IF_ERROR(parse_scalar(lex, e.re));
  }
  d.elements.push_back(e);
  return ok_status();
}

inline Status parse_list(Lexer& lex, DenseSyntax& d, std::int64_t depth) {
  Token open = lex.next();  // '['
  if (depth >= kMaxDenseDepth)
    return error_at(open.pos, str_cat("dense literal nested deeper than ", kMaxDenseDepth));
  const std::size_t index = d.lists.size();
  d.lists.push_back(DenseSyntax::List{0, false, open.pos});
  if (lex.peek().is(']')) {
    lex.next();
    return ok_status();
  }
  for (std::int64_t n = 0;; ++n) {
    const bool is_list = lex.peek().is('[');
    if (n == 0) d.lists[index].of_lists = is_list;
    if (is_list != d.lists[index].of_lists)
      return error_at(lex.next_pos(), "a dense list mixes nested lists and elements");
    if (is_list)
      PJRT_LITE_RETURN_IF_ERROR(parse_list(lex, d, depth + 1));
    else
      PJRT_LITE_RETURN_IF_ERROR(parse_element(lex, d));
    ++d.lists[index].size;
    Token t = lex.next();
    if (t.is(']')) return ok_status();
    if (!t.is(','))
      return error_at(t.pos, str_cat("expected ',' or ']' in a dense list, found ", describe(t)));
  }
}

// ---- Element conversion ---------------------------------------------------------------

inline bool is_hex_text(std::string_view s) {
  if (!s.empty() && s[0] == '-') return false;
  return s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

/// The value of a hex token (0x...) that must fit in `bits` bits.
inline StatusOr<std::uint64_t> hex_bits(const DenseScalar& s, int bits, std::string_view type) {
  std::string_view digits = s.text.substr(2);
  while (digits.size() > 1 && digits[0] == '0') digits.remove_prefix(1);
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 16);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || (bits < 64 && (v >> bits) != 0))
    return error_at(
        s.pos, str_cat("hex value ", s.text, " does not fit in the ", bits, " bits of ", type));
  return v;
}

template <class T>
StatusOr<T> to_integer(const DenseScalar& s, DType dtype) {
  const std::string_view type = element_type_name(dtype);
  if (s.negated)
    return error_at(s.pos, str_cat("expected an integer for ", type, ", found '-", s.text, "'"));
  if (is_hex_text(s.text)) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t bits, hex_bits(s, 8 * sizeof(T), type));
    return static_cast<T>(bits);  // the bit pattern: 0xFF is -1 for i8
  }
  const char* first = s.text.data();
  const char* last = first + s.text.size();
  T v{};
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec == std::errc::result_out_of_range)
    return error_at(s.pos, str_cat("integer ", s.text, " is out of range for ", type));
  if (ec != std::errc() || ptr != last)
    return error_at(s.pos, str_cat("expected an integer for ", type, ", found '", s.text, "'"));
  return v;
}

/// A real floating-point element of type T (f16, bf16, float, double).
template <class T>
StatusOr<T> to_float(const DenseScalar& s, DType dtype) {
  const std::string_view type = element_type_name(dtype);
  std::string_view text = s.text;
  bool negative = s.negated;
  if (text == "nan" || text == "NaN" || text == "inf" || text == "Inf" || text == "infinity") {
    const bool nan = text == "nan" || text == "NaN";
    double v =
        nan ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    return convert_element<T>(negative ? -v : v);
  }
  if (negative)
    return error_at(s.pos, str_cat("expected inf or nan after '-', found '", text, "'"));
  if (is_hex_text(text)) {
    // A bit pattern of the element type, as MLIR prints NaN, infinities and exact values.
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t bits, hex_bits(s, 8 * sizeof(T), type));
    if constexpr (sizeof(T) == 2)
      return std::bit_cast<T>(static_cast<std::uint16_t>(bits));
    else if constexpr (sizeof(T) == 4)
      return std::bit_cast<T>(static_cast<std::uint32_t>(bits));
    else
      return std::bit_cast<T>(bits);
  }
  if (text.empty() || !(is_digit(text[0]) || text[0] == '-'))
    return error_at(s.pos, str_cat("expected a number for ", type, ", found '", text, "'"));
  const char* first = text.data();
  const char* last = first + text.size();
  if constexpr (std::is_same_v<T, float>) {
    float v = 0;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range)
      return error_at(s.pos, str_cat("number ", text, " is out of range for ", type));
    if (ec != std::errc() || ptr != last)
      return error_at(s.pos, str_cat("expected a number for ", type, ", found '", text, "'"));
    return v;
  } else {
    double v = 0;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range)
      return error_at(s.pos, str_cat("number ", text, " is out of range for ", type));
    if (ec != std::errc() || ptr != last)
      return error_at(s.pos, str_cat("expected a number for ", type, ", found '", text, "'"));
    return convert_element<T>(v);  // f16 / bf16 round once, correctly (round-to-odd)
  }
}

template <class T>
StatusOr<T> to_element(const DenseSyntax::Element& e, DType dtype) {
  const std::string_view type = element_type_name(dtype);
  if constexpr (is_complex_v<T>) {
    using R = typename T::value_type;
    if (!e.is_complex)
      return error_at(e.re.pos, str_cat("expected a complex element (re, im) for ", type,
                                        ", found '", e.re.negated ? "-" : "", e.re.text, "'"));
    const DType part = dtype == DType::kC64 ? DType::kF32 : DType::kF64;
    PJRT_LITE_ASSIGN_OR_RETURN(R re, to_float<R>(e.re, part));
    PJRT_LITE_ASSIGN_OR_RETURN(R im, to_float<R>(e.im, part));
    return T(re, im);
  } else {
    if (e.is_complex)
      return error_at(e.re.pos, str_cat("a complex element (re, im) for the non-complex ", type));
    if constexpr (std::is_same_v<T, bool>) {
      if (e.re.text == "true" && !e.re.negated) return true;
      if (e.re.text == "false" && !e.re.negated) return false;
      if ((e.re.text == "1" || e.re.text == "0") && !e.re.negated) return e.re.text == "1";
      return error_at(e.re.pos, str_cat("expected true or false for i1, found '",
                                        e.re.negated ? "-" : "", e.re.text, "'"));
    } else if constexpr (is_float_v<T>) {
      return to_float<T>(e.re, dtype);
    } else {
      return to_integer<T>(e.re, dtype);
    }
  }
}

/// An element of a narrow type as its stored byte: an integer in range (or a hex pattern of
/// the type's width), or a float that does not overflow the format (or its hex pattern).
inline StatusOr<std::uint8_t> to_narrow_element(const DenseSyntax::Element& e, DType dtype) {
  const std::string_view type = element_type_name(dtype);
  const DenseScalar& s = e.re;
  if (e.is_complex)
    return error_at(s.pos, str_cat("a complex element (re, im) for the non-complex ", type));
  const int bits = bit_width(dtype);
  if (is_hex_text(s.text) && !s.negated) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t pattern, hex_bits(s, bits, type));
    return is_narrow_integral(dtype)
               ? encode_narrow_int(static_cast<std::int64_t>(pattern), bits, is_signed_integral(dtype))
               : static_cast<std::uint8_t>(pattern);
  }
  if (is_narrow_integral(dtype)) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t v, to_integer<std::int64_t>(s, dtype));
    const bool is_signed = is_signed_integral(dtype);
    const std::int64_t lo = is_signed ? -(std::int64_t{1} << (bits - 1)) : 0;
    const std::int64_t hi = is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
    if (v < lo || v > hi)
      return error_at(s.pos, str_cat("integer ", s.text, " is out of range for ", type, " [", lo, ", ", hi, "]"));
    return encode_narrow_int(v, bits, is_signed);
  }
  const NarrowFloatFormat f = narrow_float_format(dtype);
  PJRT_LITE_ASSIGN_OR_RETURN(double v, to_float<double>(s, DType::kF64));
  if (std::isinf(v) && f.kind != NarrowFloatKind::kIeee)
    return error_at(s.pos, str_cat(type, " has no infinity"));
  if (std::isnan(v) && f.kind == NarrowFloatKind::kFiniteOnly)
    return error_at(s.pos, str_cat(type, " has no NaN"));
  bool overflowed = false;
  const std::uint8_t pattern = encode_narrow_float(f, v, &overflowed);
  if (overflowed)
    return error_at(s.pos, str_cat("number ", s.text, " is out of range for ", type, " (largest finite ",
                                   decode_narrow_float(f, static_cast<std::uint8_t>(f.max_finite())), ")"));
  return pattern;
}

inline StatusOr<std::vector<std::byte>> decode_blob(const DenseSyntax& d) {
  std::string_view hex = d.blob;
  if (hex.size() >= 2) hex = hex.substr(1, hex.size() - 2);
  if (!(hex.size() >= 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')))
    return error_at(d.blob_pos, "a dense string must be a hex blob \"0x...\"");
  hex.remove_prefix(2);
  if (hex.size() % 2 != 0) return error_at(d.blob_pos, "a hex blob must have two digits per byte");
  std::vector<std::byte> bytes(hex.size() / 2);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char a = hex[2 * i], b = hex[2 * i + 1];
    if (!is_hex_digit(a) || !is_hex_digit(b))
      return error_at(d.blob_pos, str_cat("a hex blob holds the non-hex character '",
                                          is_hex_digit(a) ? b : a, "'"));
    bytes[i] = static_cast<std::byte>(hex_digit_value(a) * 16 + hex_digit_value(b));
  }
  return bytes;
}

/// Checks the list structure against the dims; `next` walks d.lists in pre-order.
inline Status check_structure(const DenseSyntax& d, const Shape& shape, std::size_t& next,
                              std::int64_t level, std::string_view type) {
  const DenseSyntax::List& list = d.lists[next++];
  if (level >= shape.rank())
    return error_at(list.pos, str_cat("dense literal is nested deeper than the rank ", shape.rank(),
                                      " of ", type));
  if (list.size != shape.dim(level))
    return error_at(list.pos, str_cat("dense literal has ", list.size, " entries in dimension ",
                                      level, " but ", type, " has ", shape.dim(level)));
  if (list.size == 0) return ok_status();
  const bool inner = level + 1 < shape.rank();
  if (list.of_lists != inner)
    return error_at(list.pos, inner ? str_cat("dense literal is nested less deeply than the rank ",
                                              shape.rank(), " of ", type)
                                    : str_cat("dense literal is nested deeper than the rank ",
                                              shape.rank(), " of ", type));
  if (inner)
    for (std::int64_t i = 0; i < list.size; ++i)
      PJRT_LITE_RETURN_IF_ERROR(check_structure(d, shape, next, level + 1, type));
  return ok_status();
}

}  // namespace dense_impl

/// Reads `<...>` after the word `dense`, up to and including the closing '>'.
inline StatusOr<DenseSyntax> parse_dense(Lexer& lex) {
  DenseSyntax d;
  Token open = lex.next();
  d.pos = open.pos;
  if (!open.is('<'))
    return error_at(open.pos, str_cat("expected '<' after dense, found ", describe(open)));
  Token t = lex.peek();
  if (t.is('>')) {
    lex.next();
    return d;
  }
  if (t.kind == TokenKind::kString) {
    lex.next();
    d.is_blob = true;
    d.blob = t.text;
    d.blob_pos = t.pos;
  } else if (t.is('[')) {
    PJRT_LITE_RETURN_IF_ERROR(dense_impl::parse_list(lex, d, 0));
  } else {
    PJRT_LITE_RETURN_IF_ERROR(dense_impl::parse_element(lex, d));
  }
  Token close = lex.next();
  if (!close.is('>'))
    return error_at(close.pos,
                    str_cat("expected '>' to end the dense literal, found ", describe(close)));
  return d;
}

/// The literal that `d` denotes for the tensor type `shape`.
inline StatusOr<Literal> dense_to_literal(const DenseSyntax& d, const Shape& shape) {
  const std::string type = tensor_type_name(shape);
  if (shape.byte_size() > kMaxConstantBytes)
    return resource_exhausted_error(str_cat(to_string(d.pos), ": constant of type ", type,
                                            " exceeds the limit of ", kMaxConstantBytes, " bytes"));
  StatusOr<Literal> created = Literal::create(shape);
  if (!created.ok())
    return created.status().with_context(str_cat(to_string(d.pos), ": constant of type ", type));
  Literal lit = std::move(created).value();
  const std::int64_t count = shape.element_count();
  const std::size_t width = byte_size(shape.dtype());
  if (d.is_blob) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, dense_impl::decode_blob(d));
    const bool splat = bytes.size() == width && count != 1;
    if (!splat && bytes.size() != lit.size_bytes())
      return error_at(d.blob_pos,
                      str_cat("hex blob has ", bytes.size(), " bytes but ", type, " needs ",
                              lit.size_bytes(), " (or ", width, " for a splat)"));
    // Little-endian components: a complex element is two floats, each swapped on its own.
    const std::size_t component = is_complex(shape.dtype()) ? width / 2 : width;
    std::byte* out = static_cast<std::byte*>(lit.untyped_data());
    for (std::int64_t i = 0; i < count; ++i)
      for (std::size_t c = 0; c < width; c += component)
        for (std::size_t k = 0; k < component; ++k) {
          const std::size_t from =
              (splat ? 0 : static_cast<std::size_t>(i) * width) + c +
              (std::endian::native == std::endian::little ? k : component - 1 - k);
          std::byte b = bytes[from];
          // Any non-zero byte is true; a bool must hold exactly 0 or 1.
          if (shape.dtype() == DType::kPred) b = static_cast<std::byte>(b != std::byte{0} ? 1 : 0);
          // A narrow element is its low bits (MLIR stores each in a byte, high bits zero).
          if (is_narrow_integral(shape.dtype()))
            b = static_cast<std::byte>(encode_narrow_int(static_cast<std::int64_t>(b), bit_width(shape.dtype()),
                                                         is_signed_integral(shape.dtype())));
          else if (is_narrow(shape.dtype()))
            b &= static_cast<std::byte>((1u << bit_width(shape.dtype())) - 1);
          out[static_cast<std::size_t>(i) * width + c + k] = b;
        }
    return lit;
  }
  if (d.lists.empty()) {
    if (d.elements.empty()) {  // dense<>
      if (count != 0)
        return error_at(d.pos, str_cat("dense<> is empty but ", type, " has ", count, " elements"));
      return lit;
    }
    // A splat: one element for every position.
  } else {
    if (shape.rank() == 0)
      return error_at(d.lists.front().pos, str_cat("a dense list for the rank-0 type ", type,
                                                   " (write the element alone)"));
    std::size_t next = 0;
    PJRT_LITE_RETURN_IF_ERROR(dense_impl::check_structure(d, shape, next, 0, type));
    if (static_cast<std::int64_t>(d.elements.size()) != count)
      return error_at(d.pos, str_cat("dense literal has ", d.elements.size(), " elements but ",
                                     type, " has ", count));
  }
  if (is_narrow(shape.dtype())) {
    std::span<std::uint8_t> out = lit.narrow_bits();
    for (std::size_t i = 0; i < out.size(); ++i) {
      PJRT_LITE_ASSIGN_OR_RETURN(out[i], dense_impl::to_narrow_element(d.elements[d.lists.empty() ? 0 : i], shape.dtype()));
    }
    return lit;
  }
  Status status;
  visit_dtype(shape.dtype(), [&]<class T>(std::type_identity<T>) {
    std::span<T> out = lit.data<T>();
    if (d.lists.empty()) {
      StatusOr<T> v = dense_impl::to_element<T>(d.elements.front(), shape.dtype());
      if (!v.ok()) {
        status = v.status();
        return;
      }
      for (T& x : out) x = *v;
      return;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      StatusOr<T> v = dense_impl::to_element<T>(d.elements[i], shape.dtype());
      if (!v.ok()) {
        status = v.status();
        return;
      }
      out[i] = *v;
    }
  });
  PJRT_LITE_RETURN_IF_ERROR(status);
  return lit;
}

// ---- Writing ------------------------------------------------------------------------------

/// Literals with more elements than this are written as a hex blob.
inline constexpr std::int64_t kMaxListedElements = 64;

namespace dense_impl {

template <class Bits>
void append_hex_bits(std::string& out, Bits bits) {
  out += "0x";
  append_hex(out, bits, 2 * static_cast<int>(sizeof(Bits)), HexCase::kUpper);
}

/// A real float written so that reading it gives the same bits: the shortest decimal that
/// round-trips (always with a '.' or exponent, so it never reads as an integer), and the bit
/// pattern for NaN, infinities and -0.
template <class T>
void append_float(std::string& out, T x) {
  const double d = static_cast<double>(
      static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(x));
  if (!std::isfinite(d) || (d == 0 && std::signbit(d))) {
    if constexpr (sizeof(T) == 2)
      append_hex_bits(out, std::bit_cast<std::uint16_t>(x));
    else if constexpr (sizeof(T) == 4)
      append_hex_bits(out, std::bit_cast<std::uint32_t>(x));
    else
      append_hex_bits(out, std::bit_cast<std::uint64_t>(x));
    return;
  }
  char buf[64];
  std::to_chars_result r;
  if constexpr (std::is_same_v<T, double>)
    r = std::to_chars(buf, buf + sizeof buf, x);
  else
    r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(x));
  const std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

/// append_float as the float hook of core's append_element: the element text of dense literals.
struct MlirFloat {
  template <class T>
  void operator()(std::string& out, T x) const {
    append_float(out, x);
  }
};

/// One element of a narrow type: an integer in decimal; a float as its shortest decimal, or
/// its bit pattern (0x7F) for NaN, infinities and -0, as MLIR writes them.
struct NarrowElement {
  DType dtype;
  void operator()(std::string& out, std::uint8_t bits) const {
    if (is_narrow_integral(dtype)) {
      out += std::to_string(decode_narrow_int(bits, bit_width(dtype), is_signed_integral(dtype)));
      return;
    }
    const float x = decode_narrow_float(narrow_float_format(dtype), bits);
    if (!std::isfinite(x) || (x == 0 && std::signbit(x)))
      append_hex_bits(out, static_cast<std::uint8_t>(bits & ((1u << bit_width(dtype)) - 1)));
    else
      append_float(out, x);
  }
};

/// Appends v[next] as one element: through `narrow` for a narrow type's bytes.
template <class T>
void append_one(std::string& out, T x, const NarrowElement* narrow) {
  if (narrow != nullptr) {
    if constexpr (std::is_same_v<T, std::uint8_t>) (*narrow)(out, x);
  } else {
    pjrt_lite::detail::append_element(out, x, MlirFloat{});
  }
}

template <class T>
void append_nested(std::string& out, std::span<const T> v, std::span<const std::int64_t> dims,
                   std::size_t level, std::size_t& next, const NarrowElement* narrow = nullptr) {
  out += '[';
  for (std::int64_t i = 0; i < dims[level]; ++i) {
    if (i) out += ", ";
    if (level + 1 == dims.size())
      append_one(out, v[next++], narrow);
    else
      append_nested(out, v, dims, level + 1, next, narrow);
  }
  out += ']';
}

}  // namespace dense_impl

/// `dense<...>` for a literal (without the `: type` that follows it), exact for every
/// element type: a splat when all elements have the same bits, a list for small literals, a
/// little-endian hex blob for large ones.
inline std::string dense_text(const Literal& value) {
  const Literal lit = value.with_default_layout();
  const std::int64_t count = lit.element_count();
  if (count == 0) return "dense<>";
  const std::size_t width = byte_size(lit.dtype());
  const auto* bytes = static_cast<const unsigned char*>(lit.untyped_data());
  bool splat = true;
  for (std::int64_t i = 1; splat && i < count; ++i)
    splat = std::memcmp(bytes, bytes + static_cast<std::size_t>(i) * width, width) == 0;
  std::string out = "dense<";
  if (!splat && count > kMaxListedElements) {
    const std::size_t component = is_complex(lit.dtype()) ? width / 2 : width;
    out += "\"0x";
    for (std::size_t i = 0; i < lit.size_bytes(); i += component)
      for (std::size_t k = 0; k < component; ++k) {
        unsigned char b = bytes[i + (std::endian::native == std::endian::little ? k : component - 1 - k)];
        // A narrow element is written as MLIR stores it: its low bits, the rest zero.
        if (is_narrow(lit.dtype())) b &= static_cast<unsigned char>((1u << bit_width(lit.dtype())) - 1);
        append_hex(out, b, 2, HexCase::kUpper);
      }
    return out + "\">";
  }
  if (is_narrow(lit.dtype())) {
    const dense_impl::NarrowElement narrow{lit.dtype()};
    std::span<const std::uint8_t> v = lit.narrow_bits();
    std::size_t next = 0;
    if (splat) narrow(out, v[0]);
    else dense_impl::append_nested(out, v, lit.dims(), 0, next, &narrow);
    return out + ">";
  }
  visit_dtype(lit.dtype(), [&]<class T>(std::type_identity<T>) {
    std::span<const T> v = lit.data<T>();
    if (splat) {
      pjrt_lite::detail::append_element(out, v[0], dense_impl::MlirFloat{});
    } else {
      std::size_t next = 0;
      dense_impl::append_nested(out, v, lit.dims(), 0, next);
    }
  });
  return out + ">";
}

}  // namespace pjrt_lite::stablehlo::detail
