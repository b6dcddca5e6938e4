#pragma once
// JAX's serialized exports: the bytes `jax.export.export(jax.jit(f))(...).serialize()` writes,
// a flatbuffer (jax/_src/export/serialization.fbs) around the program as a StableHLO portable
// artifact, with what a caller needs to call it: the function's name, the abstract values of
// its inputs and outputs (shapes, possibly symbolic, and dtypes), the platforms it was
// lowered for, the number of devices, the ordered effects, the calling convention version
// and which inputs the module keeps.
//
//   StatusOr<stablehlo::JaxExport> e = stablehlo::read_jax_export(bytes);
//   auto call = stablehlo::compile_jax_export(*client, *e).value();
//   auto outputs = call.execute({&x, &y});   // one buffer per input aval, as JAX's exp.call
//
// The module's calling convention (JAX's "Module calling convention"): `main` takes the
// platform index first when the export names several platforms, then a token per ordered
// effect, then the kept inputs (module_kept_var_idx of in_avals). compile_jax_export picks
// "cpu" among the platforms (an export without it is FAILED_PRECONDITION, unless its
// platform check is disabled), binds the platform index, and drops the inputs the module
// does not keep. Ordered effects come from host callbacks and are UNIMPLEMENTED. Input and
// output shardings travel in the module itself (mhlo.sharding, sdy.sharding), which
// Client::compile partitions; the flatbuffer's copies are kept as read (`in_shardings`:
// named shardings as text, XLA's serialized OpSharding protos as their bytes), not decoded.
//
// Errors: bytes that are not a well-formed export are INVALID_ARGUMENT naming the field and
// offset; every offset and length is checked against the buffer before it is read.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/bytecode.hpp"
#include "pjrt_lite/stablehlo/runner.hpp"

namespace pjrt_lite::inline v0_1::stablehlo {

/// One input or output of an export: its dimensions as JAX wrote them ("4", or a symbolic
/// expression such as "b" or "2*b"), its element type, and whether it is a token.
struct JaxAval {
  std::vector<std::string> dims;
  DType dtype = DType::kF32;
  /// float0 (JAX's type of integer inputs' tangents) and the PRNG key types read as their
  /// storage (pred and u32), with this set to the JAX type's name.
  std::string jax_type = {};
  /// Every dimension a number (of at most 15 digits).
  [[nodiscard]] bool is_static() const {
    return std::all_of(dims.begin(), dims.end(), [](const std::string& d) {
      return !d.empty() && d.size() <= 15 && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    });
  }
  /// The shape when is_static().
  [[nodiscard]] Shape shape() const {
    std::vector<std::int64_t> sizes;
    for (const std::string& d : dims) {
      std::int64_t v = 0;
      for (char c : d) v = v * 10 + (c - '0');
      sizes.push_back(v);
    }
    return Shape(dtype, sizes);
  }
};

/// A sharding as the flatbuffer holds it: a named sharding (mesh axes and partition spec,
/// as "{mesh: x=2, y=2; spec: (x, None)}" text) or XLA's serialized OpSharding proto.
struct JaxSharding {
  bool specified = false;
  std::string named;
  std::vector<std::byte> hlo_proto;
};

/// What `Exported.serialize()` holds.
struct JaxExport {
  std::int64_t serialization_version = 0;
  std::string function_name;
  std::vector<JaxAval> in_avals, out_avals;
  std::vector<JaxSharding> in_shardings, out_shardings;
  std::vector<std::string> platforms;
  std::vector<std::string> ordered_effects, unordered_effects;
  /// "platform", "custom_call:<target>", "shape_assertions".
  std::vector<std::string> disabled_checks;
  /// The StableHLO portable artifact (MLIR bytecode).
  std::vector<std::byte> module;
  std::int64_t calling_convention_version = 0;
  /// The indices of in_avals that the module takes, in order.
  std::vector<std::int64_t> module_kept_var_idx;
  bool uses_global_constants = false;
  std::int64_t nr_devices = 1;
  bool has_vjp = false;
  std::string jax_version;

  [[nodiscard]] bool check_disabled(std::string_view what) const {
    return std::find(disabled_checks.begin(), disabled_checks.end(), what) != disabled_checks.end();
  }
};

namespace detail {

/// A read-only view of a flatbuffer with bounds-checked access (the format's tables,
/// vtables, vectors and strings).
class FlatBuffer {
 public:
  explicit FlatBuffer(std::span<const std::byte> bytes) : b_(bytes) {}

  StatusOr<std::uint32_t> u32(std::size_t at, std::string_view what) const {
    if (at > b_.size() || b_.size() - at < 4) return bad(at, what, "reaches past the end");
    std::uint32_t v = 0;
    std::memcpy(&v, b_.data() + at, 4);
    return v;
  }
  StatusOr<std::uint16_t> u16(std::size_t at, std::string_view what) const {
    if (at > b_.size() || b_.size() - at < 2) return bad(at, what, "reaches past the end");
    std::uint16_t v = 0;
    std::memcpy(&v, b_.data() + at, 2);
    return v;
  }
  /// The position an unsigned offset at `at` points to.
  StatusOr<std::size_t> follow(std::size_t at, std::string_view what) const {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t off, u32(at, what));
    if (off > b_.size() - at) return bad(at, what, "points past the end");
    return at + off;
  }
  std::span<const std::byte> bytes() const { return b_; }

  Status bad(std::size_t at, std::string_view what, std::string_view why) const {
    return invalid_argument_error(str_cat("jax export: ", what, " at offset ", at, " ", why));
  }

 private:
  std::span<const std::byte> b_;
};

/// A table: its position and its vtable's field offsets.
class FlatTable {
 public:
  static StatusOr<FlatTable> at(const FlatBuffer& fb, std::size_t pos, std::string_view what) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t raw, fb.u32(pos, what));
    const auto soff = static_cast<std::int32_t>(raw);
    const std::int64_t vt = static_cast<std::int64_t>(pos) - soff;
    if (vt < 0 || vt >= static_cast<std::int64_t>(fb.bytes().size())) return fb.bad(pos, what, "has a vtable outside the buffer");
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint16_t vsize, fb.u16(static_cast<std::size_t>(vt), what));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint16_t tsize, fb.u16(static_cast<std::size_t>(vt) + 2, what));
    if (vsize < 4 || vsize % 2 != 0 || static_cast<std::size_t>(vt) + vsize > fb.bytes().size() ||
        pos + tsize > fb.bytes().size())
      return fb.bad(pos, what, "has a malformed vtable");
    FlatTable t(fb, pos, static_cast<std::size_t>(vt), vsize, tsize, what);
    return t;
  }

  /// Where field `id` sits, or 0 when absent.
  StatusOr<std::size_t> field(int id) const {
    const std::size_t slot = 4 + 2 * static_cast<std::size_t>(id);
    if (slot + 2 > vsize_) return std::size_t{0};
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint16_t off, fb_->u16(vt_ + slot, what_));
    if (off == 0) return std::size_t{0};
    if (off >= tsize_) return fb_->bad(pos_, what_, str_cat("has field ", id, " outside the table"));
    return pos_ + off;
  }
  template <class T>
  StatusOr<T> scalar(int id, T fallback) const {
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t at, field(id));
    if (at == 0) return fallback;
    if (at + sizeof(T) > pos_ + tsize_) return fb_->bad(at, what_, str_cat("has field ", id, " past its table"));
    T v{};
    std::memcpy(&v, fb_->bytes().data() + at, sizeof(T));
    return v;
  }
  StatusOr<std::optional<std::string>> string(int id, std::string_view what) const {
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t at, field(id));
    if (at == 0) return std::optional<std::string>();
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t s, fb_->follow(at, what));
    PJRT_LITE_ASSIGN_OR_RETURN(std::string v, read_string(*fb_, s, what));
    return std::optional<std::string>(std::move(v));
  }
  static StatusOr<std::string> read_string(const FlatBuffer& fb, std::size_t s, std::string_view what) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t len, fb.u32(s, what));
    // A string ends with a NUL past its length.
    if (len >= fb.bytes().size() - s - 4 || fb.bytes()[s + 4 + len] != std::byte{0})
      return fb.bad(s, what, "is a string longer than the buffer or without its terminator");
    return std::string(reinterpret_cast<const char*>(fb.bytes().data() + s + 4), len);
  }
  /// A vector field: its element count and where the elements start (0, 0 when absent).
  StatusOr<std::pair<std::size_t, std::size_t>> vector(int id, std::size_t element_size, std::string_view what) const {
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t at, field(id));
    if (at == 0) return std::pair<std::size_t, std::size_t>{0, 0};
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t v, fb_->follow(at, what));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t n, fb_->u32(v, what));
    if (n > (fb_->bytes().size() - v - 4) / element_size) return fb_->bad(v, what, "is a vector longer than the buffer");
    return std::pair<std::size_t, std::size_t>{n, v + 4};
  }
  /// The tables of a vector-of-tables field.
  StatusOr<std::vector<FlatTable>> tables(int id, std::string_view what) const {
    PJRT_LITE_ASSIGN_OR_RETURN(auto v, vector(id, 4, what));
    std::vector<FlatTable> out;
    for (std::size_t k = 0; k < v.first; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::size_t t, fb_->follow(v.second + 4 * k, what));
      PJRT_LITE_ASSIGN_OR_RETURN(FlatTable table, at(*fb_, t, what));
      out.push_back(table);
    }
    return out;
  }
  StatusOr<std::optional<FlatTable>> table(int id, std::string_view what) const {
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t f, field(id));
    if (f == 0) return std::optional<FlatTable>();
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t t, fb_->follow(f, what));
    PJRT_LITE_ASSIGN_OR_RETURN(FlatTable table, at(*fb_, t, what));
    return std::optional<FlatTable>(table);
  }
  StatusOr<std::vector<std::string>> strings(int id, std::string_view what) const {
    PJRT_LITE_ASSIGN_OR_RETURN(auto v, vector(id, 4, what));
    std::vector<std::string> out;
    for (std::size_t k = 0; k < v.first; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::size_t s, fb_->follow(v.second + 4 * k, what));
      PJRT_LITE_ASSIGN_OR_RETURN(std::string str, read_string(*fb_, s, what));
      out.push_back(std::move(str));
    }
    return out;
  }
  template <class T>
  StatusOr<std::vector<T>> scalars(int id, std::string_view what) const {
    PJRT_LITE_ASSIGN_OR_RETURN(auto v, vector(id, sizeof(T), what));
    std::vector<T> out(v.first);
    if (v.first > 0) std::memcpy(out.data(), fb_->bytes().data() + v.second, v.first * sizeof(T));
    return out;
  }

 private:
  FlatTable(const FlatBuffer& fb, std::size_t pos, std::size_t vt, std::size_t vsize, std::size_t tsize,
            std::string_view what)
      : fb_(&fb), pos_(pos), vt_(vt), vsize_(vsize), tsize_(tsize), what_(what) {}
  const FlatBuffer* fb_;
  std::size_t pos_, vt_, vsize_, tsize_;
  std::string_view what_;
};

/// serialization.fbs's DType enum.
inline StatusOr<std::pair<DType, std::string>> jax_dtype(std::int8_t code) {
  switch (code) {
    case 0: return std::pair{DType::kPred, std::string()};
    case 1: return std::pair{DType::kS8, std::string()};
    case 2: return std::pair{DType::kS16, std::string()};
    case 3: return std::pair{DType::kS32, std::string()};
    case 4: return std::pair{DType::kS64, std::string()};
    case 5: return std::pair{DType::kU8, std::string()};
    case 6: return std::pair{DType::kU16, std::string()};
    case 7: return std::pair{DType::kU32, std::string()};
    case 8: return std::pair{DType::kU64, std::string()};
    case 9: return std::pair{DType::kF16, std::string()};
    case 10: return std::pair{DType::kF32, std::string()};
    case 11: return std::pair{DType::kF64, std::string()};
    case 12: return std::pair{DType::kC64, std::string()};
    case 13: return std::pair{DType::kC128, std::string()};
    case 14: return std::pair{DType::kBF16, std::string()};
    case 15: return std::pair{DType::kS4, std::string()};
    case 16: return std::pair{DType::kU4, std::string()};
    case 17: return std::pair{DType::kF8E4M3B11FNUZ, std::string()};
    case 18: return std::pair{DType::kF8E4M3FN, std::string()};
    case 19: return std::pair{DType::kF8E4M3FNUZ, std::string()};
    case 20: return std::pair{DType::kF8E5M2, std::string()};
    case 21: return std::pair{DType::kF8E5M2FNUZ, std::string()};
    case 22: return std::pair{DType::kPred, std::string("float0")};
    case 23: return std::pair{DType::kF8E4M3, std::string()};
    case 24: return std::pair{DType::kF8E3M4, std::string()};
    case 25: return std::pair{DType::kF8E8M0FNU, std::string()};
    case 26: return std::pair{DType::kF4E2M1FN, std::string()};
    case 27: return std::pair{DType::kU32, std::string("key<fry>")};
    case 28: return std::pair{DType::kU32, std::string("key<rbg>")};
    case 29: return std::pair{DType::kU32, std::string("key<unsafe_rbg>")};
    default: return unimplemented_error(str_cat("jax export: the dtype code ", int{code}));
  }
}

inline StatusOr<std::vector<JaxAval>> read_avals(const std::vector<FlatTable>& tables) {
  std::vector<JaxAval> out;
  for (const FlatTable& t : tables) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::int8_t kind, t.scalar<std::int8_t>(0, 0));
    if (kind != 0) return unimplemented_error("jax export: an abstract value that is not an array (a token)");
    JaxAval a;
    PJRT_LITE_ASSIGN_OR_RETURN(a.dims, t.strings(1, "an abstract value's shape"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::int8_t code, t.scalar<std::int8_t>(2, 0));
    PJRT_LITE_ASSIGN_OR_RETURN(auto dtype, jax_dtype(code));
    a.dtype = dtype.first;
    a.jax_type = dtype.second;
    out.push_back(std::move(a));
  }
  return out;
}

/// A named sharding as text: "{mesh: x=2, y=2; spec: (x, None)}".
inline StatusOr<std::string> read_named_sharding(const FlatTable& t) {
  std::string out = "{mesh:";
  PJRT_LITE_ASSIGN_OR_RETURN(std::optional<FlatTable> mesh, t.table(0, "a named sharding's mesh"));
  if (mesh) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::uint32_t> sizes, mesh->scalars<std::uint32_t>(0, "a mesh's axis sizes"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::string> names, mesh->strings(1, "a mesh's axis names"));
    for (std::size_t k = 0; k < names.size(); ++k)
      out += str_cat(k ? ", " : " ", names[k], "=", k < sizes.size() ? sizes[k] : 0);
  }
  out += "; spec: (";
  PJRT_LITE_ASSIGN_OR_RETURN(std::optional<FlatTable> spec, t.table(1, "a named sharding's spec"));
  if (spec) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<FlatTable> dims, spec->tables(0, "a partition spec"));
    for (std::size_t k = 0; k < dims.size(); ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::string> axes, dims[k].strings(0, "a partition spec's axes"));
      out += k ? ", " : "";
      if (axes.empty()) out += "None";
      else if (axes.size() == 1) out += axes[0];
      else {
        out += "(";
        for (std::size_t a = 0; a < axes.size(); ++a) out += str_cat(a ? ", " : "", axes[a]);
        out += ")";
      }
    }
  }
  return out + ")}";
}

inline StatusOr<std::vector<JaxSharding>> read_shardings(const std::vector<FlatTable>& tables) {
  std::vector<JaxSharding> out;
  for (const FlatTable& t : tables) {
    JaxSharding s;
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int8_t> proto, t.scalars<std::int8_t>(1, "an OpSharding proto"));
    for (std::int8_t b : proto) s.hlo_proto.push_back(static_cast<std::byte>(b));
    PJRT_LITE_ASSIGN_OR_RETURN(std::optional<FlatTable> named, t.table(2, "a named sharding"));
    if (named) {
      PJRT_LITE_ASSIGN_OR_RETURN(s.named, read_named_sharding(*named));
    }
    s.specified = named.has_value() || !s.hlo_proto.empty();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace detail

/// Reads the bytes of `Exported.serialize()`. INVALID_ARGUMENT for bytes that are not a
/// well-formed export; UNIMPLEMENTED for a newer serialization version than this reader
/// knows (above 11) or an abstract value it cannot represent. Thread-safe.
inline StatusOr<JaxExport> read_jax_export(std::span<const std::byte> bytes) {
  using detail::FlatTable;
  const detail::FlatBuffer fb(bytes);
  if (bytes.size() < 8) return invalid_argument_error(str_cat("jax export: ", bytes.size(), " bytes is too short"));
  if (is_portable_artifact(bytes))
    return invalid_argument_error("jax export: these bytes are a StableHLO portable artifact, not a serialized export");
  PJRT_LITE_ASSIGN_OR_RETURN(std::size_t root, fb.follow(0, "the root table offset"));
  PJRT_LITE_ASSIGN_OR_RETURN(FlatTable t, FlatTable::at(fb, root, "the Exported table"));
  JaxExport e;
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint16_t version, t.scalar<std::uint16_t>(0, 0));
  e.serialization_version = version;
  if (version == 0 || version > 11)
    return unimplemented_error(str_cat("jax export: serialization version ", version, " (this reader knows 1 to 11)"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> name, t.string(1, "function_name"));
  e.function_name = name.value_or("");
  // Avals: directly (fields 3, 5), or from version 10 as indices into unique_avals (19).
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<FlatTable> unique, t.tables(19, "unique_avals"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<JaxAval> unique_avals, detail::read_avals(unique));
  for (int which = 0; which < 2; ++which) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<FlatTable> avals, t.tables(which == 0 ? 3 : 5, "avals"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<JaxAval> read, detail::read_avals(avals));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::uint32_t> idxs,
                               t.scalars<std::uint32_t>(which == 0 ? 22 : 23, "aval indices"));
    for (std::uint32_t i : idxs) {
      if (i >= unique_avals.size())
        return invalid_argument_error(str_cat("jax export: aval index ", i, " of ", unique_avals.size()));
      read.push_back(unique_avals[i]);
    }
    (which == 0 ? e.in_avals : e.out_avals) = std::move(read);
  }
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<FlatTable> in_sh, t.tables(7, "in_shardings"));
  PJRT_LITE_ASSIGN_OR_RETURN(e.in_shardings, detail::read_shardings(in_sh));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<FlatTable> out_sh, t.tables(8, "out_shardings"));
  PJRT_LITE_ASSIGN_OR_RETURN(e.out_shardings, detail::read_shardings(out_sh));
  PJRT_LITE_ASSIGN_OR_RETURN(e.platforms, t.strings(9, "platforms"));
  for (int which = 0; which < 2; ++which) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<FlatTable> effects, t.tables(which == 0 ? 10 : 11, "effects"));
    for (const FlatTable& effect : effects) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> type, effect.string(0, "an effect's type"));
      (which == 0 ? e.ordered_effects : e.unordered_effects).push_back(type.value_or(""));
    }
  }
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<FlatTable> checks, t.tables(12, "disabled_checks"));
  for (const FlatTable& check : checks) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::int8_t kind, check.scalar<std::int8_t>(0, 0));
    PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> target, check.string(1, "a disabled check's target"));
    if (kind == 0) e.disabled_checks.emplace_back("platform");
    else if (kind == 1) e.disabled_checks.push_back("custom_call:" + target.value_or(""));
    else e.disabled_checks.emplace_back("shape_assertions");
  }
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int8_t> module, t.scalars<std::int8_t>(13, "mlir_module_serialized"));
  for (std::int8_t b : module) e.module.push_back(static_cast<std::byte>(b));
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint16_t cc, t.scalar<std::uint16_t>(14, 0));
  e.calling_convention_version = cc;
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::uint16_t> kept, t.scalars<std::uint16_t>(15, "module_kept_var_idx"));
  for (std::uint16_t k : kept) {
    if (k >= e.in_avals.size())
      return invalid_argument_error(str_cat("jax export: module_kept_var_idx names input ", k, " of ", e.in_avals.size()));
    e.module_kept_var_idx.push_back(k);
  }
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t globals, t.scalar<std::uint8_t>(16, 0));
  e.uses_global_constants = globals != 0;
  PJRT_LITE_ASSIGN_OR_RETURN(std::optional<FlatTable> vjp, t.table(17, "vjp"));
  e.has_vjp = vjp.has_value();
  PJRT_LITE_ASSIGN_OR_RETURN(std::int16_t short_devices, t.scalar<std::int16_t>(6, 0));
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t devices, t.scalar<std::uint32_t>(18, 0));
  e.nr_devices = devices > 0 ? devices : std::max<std::int64_t>(short_devices, 1);
  PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> jax_version, t.string(26, "jax_version"));
  e.jax_version = jax_version.value_or("");
  if (e.module.empty()) return invalid_argument_error("jax export: no mlir_module_serialized");
  return e;
}

/// A compiled export and how to call it: execute takes one buffer per input aval (as
/// JAX's `exp.call` takes its flat arguments), drops those the module does not keep, and
/// passes the platform index first when the module takes one. It builds that argument list
/// on each call; a loop that must not allocate calls executable() with the module's own
/// arguments (platform_index() first when there is one, then the kept inputs).
template <class C>
class JaxExportExecutable {
 public:
  using executable_type = typename C::executable_type;
  using buffer_type = typename C::buffer_type;

  JaxExportExecutable(executable_type exe, JaxExport exported, std::vector<buffer_type> platform_index)
      : exe_(std::move(exe)), exported_(std::move(exported)), platform_index_(std::move(platform_index)) {}

  [[nodiscard]] executable_type& executable() { return exe_; }
  [[nodiscard]] const JaxExport& exported() const { return exported_; }
  /// The platform index buffer on addressable device k, or null when @main takes none.
  [[nodiscard]] buffer_type* platform_index(std::size_t k = 0) {
    return platform_index_.empty() ? nullptr : &platform_index_[std::min(k, platform_index_.size() - 1)];
  }

  /// One device's call: a buffer per input aval. INVALID_ARGUMENT for another count.
  StatusOr<std::vector<buffer_type>> execute(std::span<buffer_type* const> args) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<buffer_type*> list, module_arguments(args, 0));
    return exe_.execute(std::span<buffer_type* const>(list));
  }
  StatusOr<std::vector<buffer_type>> execute(std::initializer_list<buffer_type*> args) {
    return execute(std::span<buffer_type* const>(args.begin(), args.size()));
  }
  /// Every device's call (an export for several devices), device k's buffers at [k].
  StatusOr<std::vector<std::vector<buffer_type>>> execute(std::span<const std::vector<buffer_type*>> per_device) {
    std::vector<std::vector<buffer_type*>> lists;
    for (std::size_t k = 0; k < per_device.size(); ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<buffer_type*> list, module_arguments(per_device[k], k));
      lists.push_back(std::move(list));
    }
    return exe_.execute(lists);
  }

 private:
  StatusOr<std::vector<buffer_type*>> module_arguments(std::span<buffer_type* const> args, std::size_t device) {
    if (args.size() != exported_.in_avals.size())
      return invalid_argument_error(str_cat("jax export @", exported_.function_name, " takes ",
                                            exported_.in_avals.size(), " argument(s), got ", args.size()));
    std::vector<buffer_type*> list;
    if (buffer_type* index = platform_index(device)) list.push_back(index);
    for (std::int64_t k : exported_.module_kept_var_idx) list.push_back(args[static_cast<std::size_t>(k)]);
    return list;
  }

  executable_type exe_;
  JaxExport exported_;
  std::vector<buffer_type> platform_index_;  // one per device, when the module takes it
};

/// Compiles an export on `client` for the "cpu" platform (see the top of this file).
/// Symbolic input shapes are refined from `arg_shapes` (one per input aval; needed when any
/// is symbolic). FAILED_PRECONDITION for an export that names other platforms only (unless
/// its platform check is disabled) or more devices than the client has; UNIMPLEMENTED for
/// ordered effects and calling conventions before 9.
template <class C>
  requires requires(C& c, std::string_view t) { c.compile(t); }
StatusOr<JaxExportExecutable<C>> compile_jax_export(C& client, JaxExport exported,
                                                    const std::vector<Shape>& arg_shapes = {}) {
  const std::string name = str_cat("jax export @", exported.function_name);
  if (exported.calling_convention_version < 9)
    return unimplemented_error(str_cat(name, ": calling convention version ", exported.calling_convention_version,
                                       " (9 and later are read)"));
  if (!exported.ordered_effects.empty())
    return unimplemented_error(str_cat(name, ": the ordered effect ", exported.ordered_effects.front(),
                                       " (host callbacks do not run here)"));
  const auto cpu = std::find(exported.platforms.begin(), exported.platforms.end(), "cpu");
  std::int64_t index = 0;
  if (cpu != exported.platforms.end()) {
    index = cpu - exported.platforms.begin();
  } else if (!exported.check_disabled("platform")) {
    std::string list;
    for (const std::string& p : exported.platforms) list += str_cat(list.empty() ? "" : ", ", p);
    return failed_precondition_error(str_cat(name, " was exported for ", list, ", not for cpu"));
  }
  if (exported.nr_devices > static_cast<std::int64_t>(client.devices().size()))
    return failed_precondition_error(str_cat(name, " was exported for ", exported.nr_devices,
                                             " devices; the client has ", client.devices().size()));
  const bool polymorphic = std::any_of(exported.in_avals.begin(), exported.in_avals.end(),
                                       [](const JaxAval& a) { return !a.is_static(); });
  const std::span<const std::byte> module(exported.module);
  StatusOr<typename C::executable_type> exe = [&]() -> StatusOr<typename C::executable_type> {
    if (!polymorphic) return client.compile(module);
    if (arg_shapes.size() != exported.in_avals.size())
      return invalid_argument_error(str_cat(name, " has symbolic input shapes: give ", exported.in_avals.size(),
                                            " argument shape(s), got ", arg_shapes.size()));
    std::vector<Shape> shapes;
    if (exported.platforms.size() > 1) shapes.emplace_back(DType::kS32, std::vector<std::int64_t>{});
    for (std::int64_t k : exported.module_kept_var_idx) shapes.push_back(arg_shapes[static_cast<std::size_t>(k)]);
    return compile_stablehlo(client, std::string_view(reinterpret_cast<const char*>(module.data()), module.size()),
                             shapes);
  }();
  if (!exe.ok()) return exe.status().with_context(name);
  std::vector<typename C::buffer_type> platform_index;
  if (exported.platforms.size() > 1) {
    const auto params = exe->parameter_shapes();
    if (params.empty() || params[0].rank() != 0 || !is_integral(params[0].dtype()))
      return invalid_argument_error(str_cat(name, ": names ", exported.platforms.size(),
                                            " platforms but @main takes no integer platform index first"));
    for (auto* device : exe->addressable_devices()) {
      PJRT_LITE_ASSIGN_OR_RETURN(Literal value, Literal::scalar<std::int64_t>(index).convert(params[0].dtype()));
      PJRT_LITE_ASSIGN_OR_RETURN(auto b, client.buffer_from_literal(value, device->memory_spaces()[0]));
      platform_index.push_back(std::move(b));
    }
  }
  const std::size_t expected = platform_index.empty() ? 0 : 1;
  if (exe->parameter_shapes().size() != expected + exported.module_kept_var_idx.size())
    return invalid_argument_error(str_cat(name, ": @main takes ", exe->parameter_shapes().size(),
                                          " argument(s); the export's calling convention gives ",
                                          expected + exported.module_kept_var_idx.size()));
  return JaxExportExecutable<C>(std::move(exe).value(), std::move(exported), std::move(platform_index));
}

}  // namespace pjrt_lite::stablehlo
