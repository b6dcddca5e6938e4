#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/bytecode.hpp"
// MLIR's bytecode container, read without MLIR: the header (magic "ML\xEFR", format version,
// producer string), the top-level sections (strings, dialects and op names, the attribute and
// type table with its offsets, properties, the IR) and the encodings they share (prefix
// varints, zigzag signed varints, varints carrying a flag in their low bit, null-terminated
// strings, aligned sections). The IR section is not walked here: vhlo_reader.hpp walks it with
// an IrCursor, since what an op's attributes mean depends on the dialect.
//
// Every read is bounds-checked and every count is capped by the bytes left to hold it, so
// truncated or corrupt input gives INVALID_ARGUMENT naming the section and the byte offset in
// the file ("portable artifact: the string section at offset 1234: ..."), never a crash or a
// long loop. Formats 0 to 6 (MLIR's kVersion as of 2024/2025) are read; the file's version
// decides the optional fields (dialect versions from 1, isolated regions in sections from 2,
// use-list orders from 3, elided block-argument locations and the op count from 4, op
// registration flags from 5, properties from 5/6). Thread-compatible: plain data over the
// caller's bytes, which must outlive it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// The first four bytes of every MLIR bytecode file.
inline constexpr std::array<std::uint8_t, 4> kBytecodeMagic = {0x4D, 0x4C, 0xEF, 0x52};

/// The newest bytecode format this reader knows (MLIR's kVersion).
inline constexpr std::uint64_t kMaxBytecodeVersion = 6;

/// Whether `bytes` starts with MLIR bytecode's magic number.
inline bool has_bytecode_magic(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kBytecodeMagic.size()) return false;
  for (std::size_t i = 0; i < kBytecodeMagic.size(); ++i)
    if (bytes[i] != kBytecodeMagic[i]) return false;
  return true;
}

/// MLIR bytecode's section ids.
enum class BcSection : std::uint8_t {
  kString = 0,
  kDialect = 1,
  kAttrType = 2,
  kAttrTypeOffset = 3,
  kIR = 4,
  kResource = 5,
  kResourceOffset = 6,
  kDialectVersions = 7,
  kProperties = 8,
};
inline constexpr std::uint8_t kNumBcSections = 9;

inline std::string_view bc_section_name(std::uint8_t id) {
  constexpr std::string_view kNames[kNumBcSections] = {
      "string", "dialect", "attribute/type", "attribute/type offset", "IR",
      "resource", "resource offset", "dialect version", "properties"};
  return id < kNumBcSections ? kNames[id] : std::string_view("unknown");
}

/// A bounded cursor over bytes of the file. Offsets in errors are from the start of the file;
/// `where` names the section (or the entry) being read.
class ByteCursor {
 public:
  ByteCursor() = default;
  ByteCursor(std::span<const std::uint8_t> data, std::size_t file_offset, std::string_view where)
      : data_(data), base_(file_offset), where_(where) {}

  [[nodiscard]] bool empty() const { return pos_ >= data_.size(); }
  [[nodiscard]] std::size_t remaining() const { return data_.size() - pos_; }
  [[nodiscard]] std::size_t offset() const { return base_ + pos_; }
  [[nodiscard]] std::string_view where() const { return where_; }
  [[nodiscard]] std::span<const std::uint8_t> data() const { return data_; }

  /// INVALID_ARGUMENT naming the section and the current offset.
  [[nodiscard]] Status error(std::string_view what) const {
    return invalid_argument_error(
        str_cat("portable artifact: the ", where_, " section at offset ", offset(), ": ", what));
  }

  StatusOr<std::uint8_t> byte() {
    if (empty()) return error("the data ends early (expected a byte)");
    return data_[pos_++];
  }

  StatusOr<std::span<const std::uint8_t>> bytes(std::uint64_t n) {
    if (n > remaining())
      return error(str_cat("the data ends early (expected ", n, " bytes, ", remaining(), " left)"));
    std::span<const std::uint8_t> out = data_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }

  /// A prefix varint: the count of trailing zero bits of the first byte is the number of
  /// bytes that follow; a zero first byte is followed by the 8 bytes of the value.
  StatusOr<std::uint64_t> varint() {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t first, byte());
    if (first & 1) return static_cast<std::uint64_t>(first >> 1);
    int extra = 0;
    if (first == 0) {
      extra = 8;
    } else {
      while (((first >> extra) & 1) == 0) ++extra;
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::span<const std::uint8_t> rest, bytes(extra));
    std::uint64_t value = 0;
    for (int i = extra - 1; i >= 0; --i) value = (value << 8) | rest[static_cast<std::size_t>(i)];
    if (first == 0) return value;
    // The first byte's bits above the marker are the value's low bits.
    value = (value << (7 - extra)) | (static_cast<std::uint64_t>(first) >> (extra + 1));
    return value;
  }

  /// A zigzag-encoded signed varint.
  StatusOr<std::int64_t> signed_varint() {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, varint());
    return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }

  /// A varint whose low bit is a flag: (value << 1) | flag.
  StatusOr<std::pair<std::uint64_t, bool>> varint_with_flag() {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t v, varint());
    return std::pair<std::uint64_t, bool>(v >> 1, (v & 1) != 0);
  }

  /// A count of items that take at least `min_item_bytes` bytes each: a count the data left
  /// cannot hold is refused here, so no caller loops or allocates on a corrupt count.
  StatusOr<std::uint64_t> count(std::string_view what, std::uint64_t min_item_bytes = 1) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, varint());
    if (min_item_bytes > 0 && n > remaining() / min_item_bytes)
      return error(str_cat(n, " ", what, " cannot fit in the ", remaining(), " bytes left"));
    return n;
  }

  StatusOr<std::string_view> cstring() {
    for (std::size_t i = pos_; i < data_.size(); ++i)
      if (data_[i] == 0) {
        std::string_view s(reinterpret_cast<const char*>(data_.data() + pos_), i - pos_);
        pos_ = i + 1;
        return s;
      }
    return error("a string has no terminating null byte");
  }

  /// A section header and its data: id | (aligned << 7), length, [alignment, padding 0xCB].
  StatusOr<std::pair<std::uint8_t, ByteCursor>> section() {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t id_and_align, byte());
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t length, varint());
    const std::uint8_t id = id_and_align & 0x7F;
    if (id >= kNumBcSections) return error(str_cat("unknown section id ", int(id)));
    if (id_and_align & 0x80) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t alignment, varint());
      if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
        return error(str_cat("section alignment ", alignment, " is not a power of two up to 4096"));
      while (offset() % alignment != 0) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t pad, byte());
        if (pad != 0xCB) return error("expected the alignment padding byte 0xCB");
      }
    }
    const std::size_t start = offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::span<const std::uint8_t> body, bytes(length));
    return std::pair<std::uint8_t, ByteCursor>(id, ByteCursor(body, start, bc_section_name(id)));
  }

  /// A blob: its size, then its bytes.
  StatusOr<std::span<const std::uint8_t>> blob() {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, varint());
    return bytes(n);
  }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
  std::size_t base_ = 0;
  std::string_view where_;
};

/// An attribute or type entry: its dialect, whether the dialect encoded it (else it is the
/// entry's assembly text) and its bytes.
struct BcEntry {
  std::size_t dialect = 0;
  bool custom = false;
  ByteCursor data;
};

/// One op name: its dialect and its name within it ("vhlo", "add_v1").
struct BcOpName {
  std::size_t dialect = 0;
  std::string_view name;
  std::string full;  // "vhlo.add_v1"
};

/// The sections of a bytecode file, split and indexed; the entries are decoded on demand.
struct BcFile {
  std::size_t file_size = 0;
  std::uint64_t version = 0;
  std::string_view producer;
  std::vector<std::string_view> strings;
  std::vector<std::string_view> dialects;
  std::vector<BcOpName> op_names;
  std::vector<BcEntry> attributes;
  std::vector<BcEntry> types;
  std::vector<ByteCursor> properties;
  ByteCursor ir;

  StatusOr<std::string_view> string(ByteCursor& c) const {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t i, c.varint());
    if (i >= strings.size()) return c.error(str_cat("string index ", i, " is out of range"));
    return strings[static_cast<std::size_t>(i)];
  }
};

namespace bc_internal {

inline Status read_strings(ByteCursor c, BcFile& f) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("strings"));
  f.strings.resize(static_cast<std::size_t>(n));
  // The sizes (each with its null byte) come last string first; the data ends the section.
  std::size_t end = c.data().size();
  for (std::size_t k = f.strings.size(); k-- > 0;) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t size, c.varint());
    if (size == 0 || size > end) return c.error(str_cat("string ", k, " has a bad size ", size));
    const std::size_t start = end - static_cast<std::size_t>(size);
    if (c.data()[end - 1] != 0) return c.error(str_cat("string ", k, " is not null-terminated"));
    f.strings[k] = std::string_view(reinterpret_cast<const char*>(c.data().data() + start),
                                    static_cast<std::size_t>(size) - 1);
    end = start;
  }
  if (c.data().size() - c.remaining() != end)
    return c.error("the string sizes and the string data do not meet");
  return ok_status();
}

inline Status read_dialects(ByteCursor c, BcFile& f) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("dialects"));
  for (std::uint64_t k = 0; k < n; ++k) {
    std::uint64_t name = 0;
    bool versioned = false;
    if (f.version < 1) {
      PJRT_LITE_ASSIGN_OR_RETURN(name, c.varint());
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(auto nv, c.varint_with_flag());
      name = nv.first;
      versioned = nv.second;
    }
    if (name >= f.strings.size()) return c.error(str_cat("dialect name index ", name, " is out of range"));
    f.dialects.push_back(f.strings[static_cast<std::size_t>(name)]);
    if (versioned) {  // a nested dialect-version section; VHLO keeps its version elsewhere
      PJRT_LITE_ASSIGN_OR_RETURN(auto sec, c.section());
      if (sec.first != static_cast<std::uint8_t>(BcSection::kDialectVersions))
        return c.error("expected a dialect version section");
    }
  }
  if (f.version >= 4) {
    PJRT_LITE_RETURN_IF_ERROR(c.count("op names").status());
  }
  while (!c.empty()) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t dialect, c.varint());
    if (dialect >= f.dialects.size()) return c.error(str_cat("dialect index ", dialect, " is out of range"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t count, c.count("op names"));
    for (std::uint64_t k = 0; k < count; ++k) {
      std::uint64_t name = 0;
      if (f.version >= 5) {
        PJRT_LITE_ASSIGN_OR_RETURN(auto nv, c.varint_with_flag());
        name = nv.first;
      } else {
        PJRT_LITE_ASSIGN_OR_RETURN(name, c.varint());
      }
      if (name >= f.strings.size()) return c.error(str_cat("op name index ", name, " is out of range"));
      BcOpName op;
      op.dialect = static_cast<std::size_t>(dialect);
      op.name = f.strings[static_cast<std::size_t>(name)];
      op.full = str_cat(f.dialects[op.dialect], ".", op.name);
      f.op_names.push_back(std::move(op));
    }
  }
  return ok_status();
}

inline Status read_attr_types(ByteCursor offsets, const ByteCursor& data, BcFile& f) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t num_attrs, offsets.count("attributes"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t num_types, offsets.count("types"));
  if (num_attrs + num_types > offsets.remaining())
    return offsets.error("more attributes and types than the offsets can describe");
  std::size_t at = 0;
  auto read_group = [&](std::vector<BcEntry>& out, std::uint64_t total) -> Status {
    while (out.size() < total) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t dialect, offsets.varint());
      if (dialect >= f.dialects.size())
        return offsets.error(str_cat("dialect index ", dialect, " is out of range"));
      PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, offsets.count("entries"));
      if (n > total - out.size()) return offsets.error("a dialect group has too many entries");
      for (std::uint64_t k = 0; k < n; ++k) {
        PJRT_LITE_ASSIGN_OR_RETURN(auto size_custom, offsets.varint_with_flag());
        const std::uint64_t size = size_custom.first;
        if (size > data.data().size() - at)
          return offsets.error("an attribute or type entry runs past the end of its section");
        BcEntry e;
        e.dialect = static_cast<std::size_t>(dialect);
        e.custom = size_custom.second;
        e.data = ByteCursor(data.data().subspan(at, static_cast<std::size_t>(size)),
                            data.offset() + at, "attribute/type");
        at += static_cast<std::size_t>(size);
        out.push_back(e);
      }
    }
    return ok_status();
  };
  PJRT_LITE_RETURN_IF_ERROR(read_group(f.attributes, num_attrs));
  PJRT_LITE_RETURN_IF_ERROR(read_group(f.types, num_types));
  if (!offsets.empty()) return offsets.error("unexpected data after the offsets");
  return ok_status();
}

inline Status read_properties(ByteCursor c, BcFile& f) {
  if (c.empty()) return ok_status();
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t n, c.count("properties"));
  for (std::uint64_t k = 0; k < n; ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t size, c.varint());
    const std::size_t start = c.offset();
    PJRT_LITE_ASSIGN_OR_RETURN(std::span<const std::uint8_t> body, c.bytes(size));
    f.properties.emplace_back(body, start, "properties");
  }
  if (!c.empty()) return c.error("unexpected data after the properties");
  return ok_status();
}

}  // namespace bc_internal

/// Splits a bytecode file into its sections and reads the tables every op refers to.
/// INVALID_ARGUMENT (naming the section and offset) for anything malformed; UNIMPLEMENTED for
/// a format version newer than kMaxBytecodeVersion.
inline StatusOr<BcFile> read_bytecode_file(std::span<const std::uint8_t> bytes) {
  ByteCursor top(bytes, 0, "header");
  if (!has_bytecode_magic(bytes))
    return invalid_argument_error("portable artifact: not MLIR bytecode (no \"ML\\xEFR\" magic)");
  PJRT_LITE_RETURN_IF_ERROR(top.bytes(4).status());
  BcFile f;
  f.file_size = bytes.size();
  PJRT_LITE_ASSIGN_OR_RETURN(f.version, top.varint());
  PJRT_LITE_ASSIGN_OR_RETURN(f.producer, top.cstring());
  if (f.version > kMaxBytecodeVersion)
    return unimplemented_error(str_cat("portable artifact: MLIR bytecode format version ", f.version,
                                       " (produced by ", f.producer, ") is newer than version ",
                                       kMaxBytecodeVersion, ", the newest this reader knows"));
  std::array<std::optional<ByteCursor>, kNumBcSections> sections;
  while (!top.empty()) {
    PJRT_LITE_ASSIGN_OR_RETURN(auto sec, top.section());
    if (sections[sec.first]) return top.error(str_cat("a second ", bc_section_name(sec.first), " section"));
    sections[sec.first] = sec.second;
  }
  for (BcSection required : {BcSection::kString, BcSection::kDialect, BcSection::kAttrType,
                             BcSection::kAttrTypeOffset, BcSection::kIR})
    if (!sections[static_cast<std::uint8_t>(required)])
      return invalid_argument_error(str_cat("portable artifact: the ",
                                            bc_section_name(static_cast<std::uint8_t>(required)),
                                            " section is missing (the file ends at offset ",
                                            bytes.size(), ")"));
  PJRT_LITE_RETURN_IF_ERROR(bc_internal::read_strings(*sections[0], f));
  PJRT_LITE_RETURN_IF_ERROR(bc_internal::read_dialects(*sections[1], f));
  PJRT_LITE_RETURN_IF_ERROR(bc_internal::read_attr_types(*sections[3], *sections[2], f));
  if (sections[8]) PJRT_LITE_RETURN_IF_ERROR(bc_internal::read_properties(*sections[8], f));
  f.ir = *sections[4];
  return f;
}

}  // namespace pjrt_lite::stablehlo::detail
