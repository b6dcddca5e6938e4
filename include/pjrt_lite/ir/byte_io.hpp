#pragma once
// Little-endian byte streams for binary formats: a ByteWriter that appends fixed-width
// integers and a ByteReader that reads them back from untrusted bytes, never past the end,
// with DATA_LOSS errors that say what was being read and at which byte offset. Also the
// 64-bit FNV-1a checksum the formats end with. The graph format (serialize.hpp) is built on
// these; so is anything that wraps a graph in a format of its own.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/assert.hpp"
#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

/// The 64-bit FNV-1a hash of `bytes`, continuing from `state` (the offset basis by default),
/// so a hash can be computed piecewise. Detects every change of a single byte: each step is a
/// bijection of the state. Not a cryptographic hash.
constexpr std::uint64_t fnv1a64(std::span<const std::byte> bytes,
                                std::uint64_t state = 0xcbf29ce484222325ull) {
  for (std::byte b : bytes) {
    state ^= static_cast<std::uint64_t>(b);
    state *= 0x100000001b3ull;
  }
  return state;
}

/// "0x00000000deadbeef", for messages about checksums and magic numbers.
inline std::string hex_u64(std::uint64_t v) { return "0x" + to_hex(v, 16); }

/// Appends little-endian fixed-width values to a growing byte vector, whatever the host's
/// byte order. Never fails. Not thread-safe.
class ByteWriter {
 public:
  void u8(std::uint8_t v) { buffer_.push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v) { put_le(v, 2); }
  void u32(std::uint32_t v) { put_le(v, 4); }
  void u64(std::uint64_t v) { put_le(v, 8); }
  /// Two's complement, 8 bytes.
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  /// Raw bytes, as they are. (A resize and a copy rather than vector::insert, which GCC 12
  /// reports as an overflow at -O2 when it inlines it after a small first write.)
  void bytes(std::span<const std::byte> b) {
    if (b.empty()) return;
    const std::size_t at = buffer_.size();
    buffer_.resize(at + b.size());
    std::memcpy(buffer_.data() + at, b.data(), b.size());
  }
  /// A u32 length, then the characters. The length must fit in 32 bits.
  void string(std::string_view s) {
    PJRT_LITE_ASSERT(s.size() <= std::numeric_limits<std::uint32_t>::max(),
                     "ByteWriter::string longer than 4 GiB");
    u32(static_cast<std::uint32_t>(s.size()));
    bytes(std::as_bytes(std::span<const char>(s.data(), s.size())));
  }
  /// Overwrites 8 bytes at `offset` (written earlier, e.g. as a placeholder for a size).
  void patch_u64(std::size_t offset, std::uint64_t v) {
    PJRT_LITE_ASSERT(offset + 8 <= buffer_.size(), "ByteWriter::patch_u64 past the end");
    for (std::size_t i = 0; i < 8; ++i, v >>= 8)
      buffer_[offset + i] = static_cast<std::byte>(v & 0xff);
  }

  /// Bytes written so far.
  [[nodiscard]] std::size_t size() const { return buffer_.size(); }
  [[nodiscard]] std::span<const std::byte> view() const { return buffer_; }
  /// The bytes; the writer is left empty.
  [[nodiscard]] std::vector<std::byte> take() { return std::exchange(buffer_, {}); }

 private:
  void put_le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i, v >>= 8) buffer_.push_back(static_cast<std::byte>(v & 0xff));
  }

  std::vector<std::byte> buffer_;
};

/// Reads little-endian fixed-width values from bytes that may be truncated or hostile. Every
/// read is bounds-checked and names what it was reading, so an error says "truncated at
/// byte offset 37: node count needs 4 bytes but only 2 remain". Offsets count from
/// `base_offset`, so a reader over a slice of a larger blob reports positions in the blob.
/// Does not own the bytes. Not thread-safe.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> bytes, std::size_t base_offset = 0)
      : bytes_(bytes), base_(base_offset) {}

  /// The absolute offset of the next byte to read.
  [[nodiscard]] std::size_t offset() const { return base_ + pos_; }
  [[nodiscard]] std::size_t remaining() const { return bytes_.size() - pos_; }
  [[nodiscard]] bool at_end() const { return pos_ == bytes_.size(); }

  StatusOr<std::uint8_t> u8(std::string_view what) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, get_le(1, what));
    return static_cast<std::uint8_t>(v);
  }
  StatusOr<std::uint16_t> u16(std::string_view what) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, get_le(2, what));
    return static_cast<std::uint16_t>(v);
  }
  StatusOr<std::uint32_t> u32(std::string_view what) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, get_le(4, what));
    return static_cast<std::uint32_t>(v);
  }
  StatusOr<std::uint64_t> u64(std::string_view what) { return get_le(8, what); }
  StatusOr<std::int64_t> i64(std::string_view what) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, get_le(8, what));
    return static_cast<std::int64_t>(v);  // two's complement (C++20 defines the conversion)
  }
  /// The next `n` bytes, as a view into the input.
  StatusOr<std::span<const std::byte>> bytes(std::size_t n, std::string_view what) {
    PJRT_LITE_RETURN_IF_ERROR(need(n, what));
    std::span<const std::byte> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  /// A u32 length, then that many characters.
  StatusOr<std::string> string(std::string_view what) {
    const std::size_t at = offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t n, u32(str_cat(what, " length")));
    if (n > remaining())
      return corrupt_at(
          at, str_cat(what, " length ", n, " exceeds the ", remaining(), " bytes that remain"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::span<const std::byte> b, bytes(n, what));
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  /// A u32 count of items that each take at least `min_item_bytes` bytes further on. A count
  /// that the remaining bytes cannot hold, or above `max`, is corrupt: callers may reserve
  /// `count` items safely, since the input itself bounds the allocation.
  StatusOr<std::size_t> count(std::string_view what, std::size_t min_item_bytes,
                              std::size_t max = std::numeric_limits<std::uint32_t>::max()) {
    const std::size_t at = offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t n, u32(what));
    if (n > max) return corrupt_at(at, str_cat(what, " ", n, " exceeds the limit of ", max));
    if (min_item_bytes > 0 && n > remaining() / min_item_bytes)
      return corrupt_at(at,
                        str_cat(what, " ", n, " cannot fit in the ", remaining(),
                                " bytes that remain (each takes at least ", min_item_bytes, ")"));
    return static_cast<std::size_t>(n);
  }

  /// DATA_LOSS "corrupt at byte offset N: message", for a value that was read but is wrong.
  [[nodiscard]] static Status corrupt_at(std::size_t offset, std::string_view message) {
    return data_loss_error(str_cat("corrupt at byte offset ", offset, ": ", message));
  }

 private:
  Status need(std::size_t n, std::string_view what) const {
    if (n <= remaining()) return ok_status();
    return data_loss_error(str_cat("truncated at byte offset ", offset(), ": ", what, " needs ", n,
                                   " byte", n == 1 ? "" : "s", " but only ", remaining(),
                                   remaining() == 1 ? " remains" : " remain"));
  }
  StatusOr<std::uint64_t> get_le(std::size_t n, std::string_view what) {
    PJRT_LITE_RETURN_IF_ERROR(need(n, what));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(bytes_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }

  std::span<const std::byte> bytes_;
  std::size_t base_ = 0;
  std::size_t pos_ = 0;
};

}  // namespace pjrt_lite
