#pragma once
// Sharding: how a value of a program that runs over N partitions is split among them, as
// XLA's HloSharding says it. A tiled sharding cuts each dimension d of the value into
// tiles[d] equal parts; the tiles form an array of shape [tiles..., replication] whose
// entries are partition numbers, so partition p holds the tile at its position in that
// array, and the last `replication` axis lists the partitions holding the same tile.
//
//   Sharding s = parse_hlo_sharding("{devices=[2,1,2]<=[4] last_tile_dim_replicate}").value();
//   // f32[8,6] -> each partition holds f32[4,6]; partitions 0, 1 hold rows 0-3, 2, 3 rows 4-7.
//   Literal part = shard_of(global, s, /*partition=*/2).value();
//
// Replicated values are held whole by every partition; a maximal sharding (one partition
// computes the value) is held here like a replicated one; manual values are each
// partition's own (the body of a shard_map) and have no global form.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

struct Sharding {
  enum class Kind : std::uint8_t { kReplicated, kTiled, kMaximal, kManual };
  Kind kind = Kind::kReplicated;
  /// kTiled: the number of tiles along each dimension of the value.
  std::vector<std::int64_t> tiles = {};
  /// kTiled: how many partitions hold each tile (XLA's last_tile_dim_replicate).
  std::int64_t replication = 1;
  /// kTiled: the tile array [tiles..., replication] flattened row-major: the partition that
  /// holds each tile copy.
  std::vector<std::int64_t> devices = {};
  /// kMaximal: the partition that computes the value.
  std::int64_t device = 0;

  static Sharding replicated() { return {}; }
  static Sharding manual() { return Sharding{Kind::kManual}; }
  static Sharding maximal(std::int64_t device) { return Sharding{Kind::kMaximal, {}, 1, {}, device}; }
  /// Tiles over partitions 0..n-1 in order (XLA's `<=[n]`).
  static Sharding tiled(std::vector<std::int64_t> tiles, std::int64_t replication = 1) {
    std::int64_t n = replication;
    for (std::int64_t t : tiles) n *= t;
    std::vector<std::int64_t> devices(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    std::iota(devices.begin(), devices.end(), 0);
    return tiled(std::move(tiles), std::move(devices), replication);
  }
  static Sharding tiled(std::vector<std::int64_t> tiles, std::vector<std::int64_t> devices,
                        std::int64_t replication = 1) {
    return Sharding{Kind::kTiled, std::move(tiles), replication, std::move(devices), 0};
  }

  /// The tiles in all (1 for a value held whole).
  [[nodiscard]] std::int64_t tile_count() const {
    std::int64_t n = 1;
    if (kind == Kind::kTiled)
      for (std::int64_t t : tiles) n *= t;
    return n;
  }
  /// Every partition holds the whole value (replicated, maximal, or tiled into one tile).
  [[nodiscard]] bool is_whole() const {
    return kind == Kind::kReplicated || kind == Kind::kMaximal || (kind == Kind::kTiled && tile_count() == 1);
  }
  [[nodiscard]] bool is_manual() const { return kind == Kind::kManual; }
  /// Tiles along dimension d (1 when the value is not cut there).
  [[nodiscard]] std::int64_t tiles_at(std::size_t d) const {
    return kind == Kind::kTiled && d < tiles.size() ? tiles[d] : 1;
  }

  /// OK when this sharding fits a value of rank `rank` over `partitions` partitions: one tile
  /// count per dimension and each partition exactly once in the tile array.
  [[nodiscard]] Status check(std::size_t rank, std::int64_t partitions) const {
    if (kind == Kind::kMaximal && (device < 0 || device >= partitions))
      return invalid_argument_error(str_cat("sharding {maximal device=", device, "} names a partition outside 0..",
                                            partitions - 1));
    if (kind != Kind::kTiled) return ok_status();
    if (tiles.size() != rank)
      return invalid_argument_error(str_cat("sharding ", describe(), " has ", tiles.size(),
                                            " tile dimension(s) for a value of rank ", rank));
    std::int64_t n = replication;
    for (std::int64_t t : tiles) {
      if (t < 1) return invalid_argument_error(str_cat("sharding ", describe(), " has a tile count below 1"));
      n *= t;
    }
    if (replication < 1 || n != partitions || static_cast<std::int64_t>(devices.size()) != n)
      return invalid_argument_error(str_cat("sharding ", describe(), " spans ", devices.size(),
                                            " partition(s); the program runs on ", partitions));
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    for (std::int64_t p : devices) {
      if (p < 0 || p >= n || seen[static_cast<std::size_t>(p)])
        return invalid_argument_error(str_cat("sharding ", describe(),
                                              " does not list each partition 0..", n - 1, " once"));
      seen[static_cast<std::size_t>(p)] = true;
    }
    return ok_status();
  }

  /// Partition p's position in the tile array: one coordinate per dimension, then its copy
  /// number. Requires a checked kTiled sharding that lists p.
  [[nodiscard]] std::vector<std::int64_t> position(std::int64_t p) const {
    const auto at = static_cast<std::int64_t>(std::find(devices.begin(), devices.end(), p) - devices.begin());
    std::vector<std::int64_t> pos(tiles.size() + 1);
    std::int64_t rest = at;
    pos.back() = rest % replication;
    rest /= replication;
    for (std::size_t d = tiles.size(); d-- > 0;) {
      pos[d] = rest % tiles[d];
      rest /= tiles[d];
    }
    return pos;
  }
  /// The partition at position `pos` (as position() gives) of the tile array.
  [[nodiscard]] std::int64_t at(std::span<const std::int64_t> pos) const {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < tiles.size(); ++d) flat = flat * tiles[d] + pos[d];
    return devices[static_cast<std::size_t>(flat * replication + pos[tiles.size()])];
  }

  /// XLA's text form: "{replicated}", "{maximal device=1}", "{manual}",
  /// "{devices=[2,1]0,1}" (with " last_tile_dim_replicate" when tiles are copied).
  [[nodiscard]] std::string describe() const {
    switch (kind) {
      case Kind::kReplicated: return "{replicated}";
      case Kind::kMaximal: return str_cat("{maximal device=", device, "}");
      case Kind::kManual: return "{manual}";
      case Kind::kTiled: break;
    }
    std::string s = "{devices=[";
    for (std::size_t d = 0; d < tiles.size(); ++d) s += str_cat(d ? "," : "", tiles[d]);
    if (replication > 1) s += str_cat(tiles.empty() ? "" : ",", replication);
    s += "]";
    for (std::size_t k = 0; k < devices.size(); ++k) s += str_cat(k ? "," : "", devices[k]);
    if (replication > 1) s += " last_tile_dim_replicate";
    return s + "}";
  }

  friend bool operator==(const Sharding&, const Sharding&) = default;
};

namespace detail {

/// `[a,b,c]`: a list of non-negative integers in brackets.
inline StatusOr<std::vector<std::int64_t>> read_sharding_ints(std::string_view& s, std::string_view text) {
  std::vector<std::int64_t> out;
  if (s.empty() || s.front() != '[') return invalid_argument_error(str_cat("sharding \"", text, "\": expected '['"));
  s.remove_prefix(1);
  while (true) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    if (!s.empty() && s.front() == ']') {
      s.remove_prefix(1);
      return out;
    }
    std::int64_t v = 0;
    std::size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9' && v < (std::int64_t{1} << 40))
      v = v * 10 + (s[digits++] - '0');
    if (digits == 0) return invalid_argument_error(str_cat("sharding \"", text, "\": expected a number in a list"));
    out.push_back(v);
    s.remove_prefix(digits);
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    if (!s.empty() && s.front() == ',') s.remove_prefix(1);
    else if (s.empty() || s.front() != ']')
      return invalid_argument_error(str_cat("sharding \"", text, "\": expected ',' or ']' in a list"));
  }
}

/// iota(prod(dims)) reshaped to `dims`, transposed by `perm`, flattened (XLA's
/// `<=[dims]T(perm)` device lists).
inline std::vector<std::int64_t> iota_devices(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& perm) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  std::vector<std::int64_t> tdims(perm.size()), strides(dims.size(), 1);
  for (std::size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  for (std::size_t d = 0; d < perm.size(); ++d) tdims[d] = dims[static_cast<std::size_t>(perm[d])];
  std::vector<std::int64_t> idx(perm.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < perm.size(); ++d) src += idx[d] * strides[static_cast<std::size_t>(perm[d])];
    out[static_cast<std::size_t>(k)] = src;
    for (std::size_t d = perm.size(); d-- > 0;) {
      if (++idx[d] < tdims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace detail

/// Reads one sharding in XLA's text form (an `mhlo.sharding` string): `{replicated}`,
/// `{maximal device=N}`, `{manual}`, `{devices=[2,2]0,2,1,3}`, `{devices=[2,1]<=[2]}`,
/// `{devices=[4,2]<=[2,4]T(1,0)}`, each tiled form optionally followed by
/// `last_tile_dim_replicate` or `last_tile_dims={replicated}`, and `metadata={...}` (ignored).
/// A tuple `{{...}, {...}}` is parse_hlo_shardings'. Subgroups that are manual or of several
/// kinds are UNIMPLEMENTED.
inline StatusOr<Sharding> parse_hlo_sharding(std::string_view text) {
  std::string_view s = text;
  auto trim = [](std::string_view x) {
    while (!x.empty() && (x.front() == ' ' || x.front() == '\n')) x.remove_prefix(1);
    while (!x.empty() && (x.back() == ' ' || x.back() == '\n')) x.remove_suffix(1);
    return x;
  };
  s = trim(s);
  if (s.size() < 2 || s.front() != '{' || s.back() != '}')
    return invalid_argument_error(str_cat("sharding \"", text, "\": expected {...}"));
  s = trim(s.substr(1, s.size() - 2));
  if (const std::size_t m = s.find("metadata="); m != std::string_view::npos) s = trim(s.substr(0, m));
  if (s == "replicated") return Sharding::replicated();
  if (s == "manual") return Sharding::manual();
  if (s.starts_with("maximal device=")) {
    std::int64_t d = 0;
    std::string_view n = s.substr(15);
    if (n.empty()) return invalid_argument_error(str_cat("sharding \"", text, "\": expected a device number"));
    for (char c : n) {
      if (c < '0' || c > '9' || d > (std::int64_t{1} << 40))
        return invalid_argument_error(str_cat("sharding \"", text, "\": expected a device number"));
      d = d * 10 + (c - '0');
    }
    return Sharding::maximal(d);
  }
  if (!s.starts_with("devices=")) {
    if (s.starts_with("{")) return invalid_argument_error(str_cat("sharding \"", text, "\" is a tuple: one per result"));
    return unimplemented_error(str_cat("the sharding \"", text, "\" is not read (replicated, maximal, manual and "
                                       "devices=[...] shardings are)"));
  }
  s.remove_prefix(8);
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims, detail::read_sharding_ints(s, text));
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  if (dims.empty() || n < 1) return invalid_argument_error(str_cat("sharding \"", text, "\": no tile dimensions"));
  std::vector<std::int64_t> devices;
  s = trim(s);
  if (s.starts_with("<=")) {
    s.remove_prefix(2);
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> reshape, detail::read_sharding_ints(s, text));
    std::vector<std::int64_t> perm(reshape.size());
    std::iota(perm.begin(), perm.end(), 0);
    if (s.starts_with("T(")) {
      const std::size_t close = s.find(')');
      if (close == std::string_view::npos) return invalid_argument_error(str_cat("sharding \"", text, "\": T( without )"));
      std::string_view inner = s.substr(1, close);  // "(1,0)" -> read as a list
      std::string list = "[" + std::string(inner.substr(1, inner.size() - 2)) + "]";
      std::string_view ls = list;
      PJRT_LITE_ASSIGN_OR_RETURN(perm, detail::read_sharding_ints(ls, text));
      s.remove_prefix(close + 1);
      std::vector<std::int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (std::size_t k = 0; k < sorted.size(); ++k)
        if (sorted.size() != reshape.size() || sorted[k] != static_cast<std::int64_t>(k))
          return invalid_argument_error(str_cat("sharding \"", text, "\": T(...) is not a permutation of the reshape"));
    }
    std::int64_t m = 1;
    for (std::int64_t d : reshape) m *= d;
    if (m != n) return invalid_argument_error(str_cat("sharding \"", text, "\": <=[...] lists ", m, " devices for ", n, " tiles"));
    devices = detail::iota_devices(reshape, perm);
  } else {
    while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
      std::int64_t v = 0;
      while (!s.empty() && s.front() >= '0' && s.front() <= '9' && v < (std::int64_t{1} << 40)) {
        v = v * 10 + (s.front() - '0');
        s.remove_prefix(1);
      }
      devices.push_back(v);
      if (!s.empty() && s.front() == ',') s.remove_prefix(1);
    }
  }
  if (static_cast<std::int64_t>(devices.size()) != n)
    return invalid_argument_error(str_cat("sharding \"", text, "\" lists ", devices.size(), " devices for ", n, " tiles"));
  s = trim(s);
  std::int64_t replication = 1;
  if (s == "last_tile_dim_replicate" || s == "last_tile_dims={replicated}") {
    replication = dims.back();
    dims.pop_back();
  } else if (!s.empty()) {
    return unimplemented_error(str_cat("the sharding \"", text, "\": \"", s,
                                       "\" is not read (a subgroup manual or of several kinds)"));
  }
  Sharding out = Sharding::tiled(std::move(dims), std::move(devices), replication);
  PJRT_LITE_RETURN_IF_ERROR(out.check(out.tiles.size(), n));
  return out;
}

/// A sharding or a tuple of them (`{{devices=[2]0,1}, {replicated}}`), one per result.
inline StatusOr<std::vector<Sharding>> parse_hlo_shardings(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  if (s.size() < 2 || s[0] != '{' || s.substr(1).find_first_not_of(' ') == std::string_view::npos ||
      s[s.find_first_not_of(' ', 1)] != '{') {
    PJRT_LITE_ASSIGN_OR_RETURN(Sharding one, parse_hlo_sharding(text));
    return std::vector<Sharding>{std::move(one)};
  }
  std::vector<Sharding> out;
  std::size_t depth = 0, start = 0;
  for (std::size_t k = 1; k < s.size(); ++k) {
    if (s[k] == '{' && depth++ == 0) start = k;
    if (s[k] == '}' && depth > 0 && --depth == 0) {
      PJRT_LITE_ASSIGN_OR_RETURN(Sharding one, parse_hlo_sharding(s.substr(start, k - start + 1)));
      out.push_back(std::move(one));
    }
  }
  return out;
}

/// A Shardy sharding on a mesh: `axes` the mesh's axes (name, size) in order, `device_ids`
/// the device at each mesh position (row-major; empty: 0, 1, ...), and for each dimension of
/// the value the axes (indices into `axes`, major first) it is split over. Axes no dimension
/// uses replicate the tiles.
inline StatusOr<Sharding> sharding_on_mesh(const std::vector<std::pair<std::string, std::int64_t>>& axes,
                                           std::vector<std::int64_t> device_ids,
                                           const std::vector<std::vector<std::size_t>>& dim_axes) {
  std::int64_t n = 1;
  for (const auto& [name, size] : axes) {
    if (size < 1) return invalid_argument_error(str_cat("the mesh axis \"", name, "\" has size ", size));
    n *= size;
  }
  if (device_ids.empty()) {
    device_ids.resize(static_cast<std::size_t>(n));
    std::iota(device_ids.begin(), device_ids.end(), 0);
  }
  if (static_cast<std::int64_t>(device_ids.size()) != n)
    return invalid_argument_error(str_cat("the mesh lists ", device_ids.size(), " device ids for ", n, " positions"));
  std::vector<bool> used(axes.size(), false);
  std::vector<std::int64_t> tiles;
  for (const auto& list : dim_axes) {
    std::int64_t t = 1;
    for (std::size_t a : list) {
      if (a >= axes.size() || used[a])
        return invalid_argument_error("a sharding names a mesh axis twice or one the mesh lacks");
      used[a] = true;
      t *= axes[a].second;
    }
    tiles.push_back(t);
  }
  std::int64_t replication = 1;
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (!used[a]) replication *= axes[a].second;
  Sharding out = Sharding::tiled(tiles, std::vector<std::int64_t>(static_cast<std::size_t>(n)), replication);
  std::vector<std::int64_t> coord(axes.size(), 0);
  for (std::int64_t m = 0; m < n; ++m) {
    std::vector<std::int64_t> pos;
    for (const auto& list : dim_axes) {
      std::int64_t c = 0;
      for (std::size_t a : list) c = c * axes[a].second + coord[a];
      pos.push_back(c);
    }
    std::int64_t r = 0;
    for (std::size_t a = 0; a < axes.size(); ++a)
      if (!used[a]) r = r * axes[a].second + coord[a];
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < tiles.size(); ++d) flat = flat * tiles[d] + pos[d];
    out.devices[static_cast<std::size_t>(flat * replication + r)] = device_ids[static_cast<std::size_t>(m)];
    for (std::size_t a = axes.size(); a-- > 0;) {
      if (++coord[a] < axes[a].second) break;
      coord[a] = 0;
    }
  }
  PJRT_LITE_RETURN_IF_ERROR(out.check(tiles.size(), n));
  return out;
}

/// The shape of one partition's part of a value of shape `global`: each dimension divided by
/// its tiles. UNIMPLEMENTED where a dimension does not divide evenly.
inline StatusOr<Shape> shard_shape(const Shape& global, const Sharding& s) {
  if (s.kind != Sharding::Kind::kTiled) return global;
  if (s.tiles.size() != static_cast<std::size_t>(global.rank()))
    return invalid_argument_error(str_cat("sharding ", s.describe(), " does not fit ", global));
  std::vector<std::int64_t> dims(global.dims().begin(), global.dims().end());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] % s.tiles[d] != 0)
      return unimplemented_error(str_cat("an uneven sharding: dimension ", d, " of ", global, " in ", s.tiles[d],
                                         " tiles (", s.describe(), ")"));
    dims[d] /= s.tiles[d];
  }
  return Shape(global.dtype(), dims);
}

namespace detail {

/// Copies the block of `part` (dims `pdims`) at `offset` of a row-major array of dims
/// `gdims` in or out (to_part), element by element of `elem` bytes, row by row.
inline void copy_block(std::byte* global, std::byte* part, std::span<const std::int64_t> gdims,
                       std::span<const std::int64_t> pdims, std::span<const std::int64_t> offset, std::size_t elem,
                       bool to_part) {
  const std::size_t rank = gdims.size();
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) rows *= pdims[d];
  const std::int64_t row = rank ? pdims[rank - 1] : 1;
  if (row == 0) return;
  std::vector<std::int64_t> idx(rank, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t g = 0;
    for (std::size_t d = 0; d < rank; ++d) g = g * gdims[d] + idx[d] + offset[d];
    std::byte* gp = global + static_cast<std::size_t>(g) * elem;
    std::byte* pp = part + static_cast<std::size_t>(r * row) * elem;
    if (to_part) std::memcpy(pp, gp, static_cast<std::size_t>(row) * elem);
    else std::memcpy(gp, pp, static_cast<std::size_t>(row) * elem);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < pdims[d]) break;
      idx[d] = 0;
    }
  }
}

inline std::vector<std::int64_t> tile_offset(const Sharding& s, const Shape& part, std::int64_t partition) {
  std::vector<std::int64_t> offset(static_cast<std::size_t>(part.rank()), 0);
  if (s.kind != Sharding::Kind::kTiled) return offset;
  const std::vector<std::int64_t> pos = s.position(partition);
  for (std::size_t d = 0; d < offset.size(); ++d) offset[d] = pos[d] * part.dims()[d];
  return offset;
}

}  // namespace detail

/// Partition `partition`'s part of `global` under `s` (the whole value unless s is tiled).
inline StatusOr<Literal> shard_of(const Literal& global, const Sharding& s, std::int64_t partition) {
  if (s.is_manual()) return invalid_argument_error("a manual value has no global form to take a part of");
  if (s.kind != Sharding::Kind::kTiled) return global;
  PJRT_LITE_RETURN_IF_ERROR(s.check(static_cast<std::size_t>(global.shape().rank()), static_cast<std::int64_t>(s.devices.size())));
  if (partition < 0 || partition >= static_cast<std::int64_t>(s.devices.size()))
    return invalid_argument_error(str_cat("shard_of: partition ", partition, " of ", s.devices.size()));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape part_shape, shard_shape(global.shape(), s));
  Literal source = global.with_default_layout();
  PJRT_LITE_ASSIGN_OR_RETURN(Literal part, Literal::create(part_shape));
  if (part.element_count() == 0) return part;
  const std::size_t elem = source.size_bytes() / static_cast<std::size_t>(source.element_count());
  detail::copy_block(source.bytes().data(), part.bytes().data(), source.dims(), part.dims(),
                     detail::tile_offset(s, part_shape, partition), elem, true);
  return part;
}

/// The global value of shape `global` whose part on partition p is parts[p] under `s`.
inline StatusOr<Literal> assemble(std::span<const Literal> parts, const Sharding& s, const Shape& global) {
  if (s.is_manual()) return invalid_argument_error("assemble: a manual value has no global form");
  if (s.kind == Sharding::Kind::kMaximal) {
    if (s.device >= static_cast<std::int64_t>(parts.size()))
      return invalid_argument_error(str_cat("assemble: no part from partition ", s.device));
    return parts[static_cast<std::size_t>(s.device)];
  }
  if (s.kind != Sharding::Kind::kTiled) {
    if (parts.empty()) return invalid_argument_error("assemble: no parts");
    return parts[0];
  }
  const auto n = static_cast<std::int64_t>(s.devices.size());
  PJRT_LITE_RETURN_IF_ERROR(s.check(static_cast<std::size_t>(global.rank()), n));
  if (static_cast<std::int64_t>(parts.size()) != n)
    return invalid_argument_error(str_cat("assemble: ", parts.size(), " parts for ", n, " partitions"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape part_shape, shard_shape(global, s));
  PJRT_LITE_ASSIGN_OR_RETURN(Literal out, Literal::create(Shape(global.dtype(), std::vector<std::int64_t>(global.dims().begin(), global.dims().end()))));
  if (out.element_count() == 0) return out;
  const std::size_t elem = out.size_bytes() / static_cast<std::size_t>(out.element_count());
  for (std::int64_t p = 0; p < n; ++p) {
    Literal part = parts[static_cast<std::size_t>(p)].with_default_layout();
    if (!part.shape().same_type_and_dims(part_shape))
      return invalid_argument_error(str_cat("assemble: part ", p, " is ", part.shape(), ", expected ", part_shape));
    detail::copy_block(out.bytes().data(), part.bytes().data(), out.dims(), part.dims(),
                       detail::tile_offset(s, part_shape, p), elem, false);
  }
  return out;
}

}  // namespace pjrt_lite
