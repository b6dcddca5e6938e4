#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The bytes of a serialized CPU executable: what was compiled (the source graph) and how (the
// compile options), under a magic, a format version and a checksum. Deserializing compiles
// again; the CPU's kernels are chosen at compile time and are not worth shipping as bytes.
//
//   "PJLX" | u32 version | u8 optimize | u8 fuse | u32 n, i32 device id * n
//          | u64 n, serialized graph (ir/serialize.hpp, with its own checksum) | u64 FNV-1a-64

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/ir/byte_io.hpp"
#include "pjrt_lite/ir/serialize.hpp"

namespace pjrt_lite::inline v0_1::cpu {

inline constexpr std::array<std::byte, 4> kExecutableMagic = {std::byte{'P'}, std::byte{'J'}, std::byte{'L'},
                                                              std::byte{'X'}};
inline constexpr std::uint32_t kExecutableFormatVersion = 1;

namespace detail {

inline std::vector<std::byte> write_executable(const Graph& source, const CompileOptions& options) {
  ByteWriter w;
  w.bytes(kExecutableMagic);
  w.u32(kExecutableFormatVersion);
  w.u8(options.optimize ? 1 : 0);
  w.u8(options.fuse ? 1 : 0);
  w.u32(static_cast<std::uint32_t>(options.device_ids.size()));
  for (int id : options.device_ids) w.u32(static_cast<std::uint32_t>(id));
  const std::vector<std::byte> graph = serialize(source);
  w.u64(graph.size());
  w.bytes(graph);
  w.u64(fnv1a64(w.view()));
  return w.take();
}

/// The source graph and options in `bytes`. INVALID_ARGUMENT for a foreign blob or another
/// version, DATA_LOSS for a corrupt or truncated one. Never reads outside `bytes`.
inline StatusOr<std::pair<Graph, CompileOptions>> read_executable(std::span<const std::byte> bytes) {
  if (bytes.size() < kExecutableMagic.size() ||
      !std::equal(kExecutableMagic.begin(), kExecutableMagic.end(), bytes.begin()))
    return invalid_argument_error("deserialize_executable: not a pjrt_lite CPU executable (no \"PJLX\" magic at byte 0)");
  ByteReader r(bytes);
  PJRT_LITE_RETURN_IF_ERROR(r.bytes(kExecutableMagic.size(), "magic").status());
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t version, r.u32("format version"));
  if (version != kExecutableFormatVersion)
    return invalid_argument_error(str_cat("deserialize_executable: format version ", version,
                                          " is not supported; this build reads version ", kExecutableFormatVersion));
  if (bytes.size() < 16)
    return data_loss_error(str_cat("deserialize_executable: truncated: ", bytes.size(), " bytes"));
  const std::size_t checksum_at = bytes.size() - 8;
  ByteReader tail(bytes.subspan(checksum_at), checksum_at);
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t stored, tail.u64("checksum"));
  const std::uint64_t computed = fnv1a64(bytes.first(checksum_at));
  if (stored != computed)
    return data_loss_error(str_cat("deserialize_executable: checksum mismatch (stored ", hex_u64(stored),
                                   ", computed ", hex_u64(computed), "): the bytes are corrupt or truncated"));
  ByteReader body(bytes.first(checksum_at));
  PJRT_LITE_RETURN_IF_ERROR(body.bytes(8, "header").status());
  CompileOptions options;
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t optimize, body.u8("optimize flag"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint8_t fuse, body.u8("fuse flag"));
  if (optimize > 1 || fuse > 1)
    return data_loss_error(str_cat("deserialize_executable: option flags at byte 8 must be 0 or 1, found ",
                                   int(optimize), " and ", int(fuse)));
  options.optimize = optimize == 1;
  options.fuse = fuse == 1;
  PJRT_LITE_ASSIGN_OR_RETURN(std::size_t devices, body.count("device count", 4, 1024));
  options.device_ids.clear();
  for (std::size_t i = 0; i < devices; ++i) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t id, body.u32("device id"));
    options.device_ids.push_back(static_cast<int>(id));
  }
  PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t graph_size, body.u64("graph size"));
  if (graph_size != body.remaining())
    return data_loss_error(str_cat("deserialize_executable: the graph is declared as ", graph_size,
                                   " bytes but ", body.remaining(), " remain"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::span<const std::byte> graph_bytes, body.bytes(static_cast<std::size_t>(graph_size), "graph"));
  StatusOr<Graph> graph = deserialize_graph(graph_bytes);
  if (!graph.ok()) return graph.status().with_context("deserialize_executable");
  return std::pair{std::move(graph).value(), std::move(options)};
}

}  // namespace detail
}  // namespace pjrt_lite::cpu
