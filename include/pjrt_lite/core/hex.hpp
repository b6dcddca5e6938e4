#pragma once
// Hexadecimal digits, written once for the whole library: lowercase for hashes, checksums
// and addresses (fingerprints, the binary formats' messages, call stacks), uppercase where
// MLIR's text format prints them (StableHLO bit patterns, hex blobs and string escapes); and
// the value of a digit, for the readers of that text. Pure functions, thread-safe.

#include <cstdint>
#include <string>

namespace pjrt_lite::inline v0_1 {

/// Which letters stand for 10..15.
enum class HexCase : std::uint8_t { kLower, kUpper };

/// The digit of `nibble` (its low four bits).
constexpr char hex_digit(unsigned nibble, HexCase letters = HexCase::kLower) {
  constexpr char kLower[] = "0123456789abcdef";
  constexpr char kUpper[] = "0123456789ABCDEF";
  return (letters == HexCase::kLower ? kLower : kUpper)[nibble & 0xf];
}

/// Appends `v` in hex, most significant digit first, zero-padded to `min_digits` (at most
/// 16; as many digits as `v` needs when it needs more). No "0x".
inline void append_hex(std::string& out, std::uint64_t v, int min_digits = 1,
                       HexCase letters = HexCase::kLower) {
  int digits = 1;
  while (digits < 16 && (v >> (4 * digits)) != 0) ++digits;
  if (digits < min_digits) digits = min_digits < 16 ? min_digits : 16;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4)
    out += hex_digit(static_cast<unsigned>(v >> shift), letters);
}

/// `v` in hex, as append_hex writes it: to_hex(0xbeef, 8) is "0000beef".
inline std::string to_hex(std::uint64_t v, int min_digits = 1, HexCase letters = HexCase::kLower) {
  std::string out;
  append_hex(out, v, min_digits, letters);
  return out;
}

constexpr bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/// The value of the hex digit `c` (either case), or -1 when `c` is not one.
constexpr int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace pjrt_lite
