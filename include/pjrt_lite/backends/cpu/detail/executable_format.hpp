#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The bytes of a serialized CPU executable: what was compiled (the source graph) and how (the
// compile options), under a magic, a format version and a checksum. Deserializing compiles
// again; the CPU's kernels are chosen at compile time and are not worth shipping as bytes.
//
//   "PJLX" | u32 version | u8 optimize | u8 fuse | u32 n, i32 device id * n
//          | u32 num_replicas | u32 num_partitions | u64 collective timeout (ms)
//          | u32 n, i32 device-assignment id * n (n = 0: none)   (version 2 on)
//          | u32 n, string output memory kind * n                 (version 3 on)
//          | (u32 n, (u32 rank, i64 dimension * rank) * n) for the argument layouts,
//            then the same for the result layouts,
//            u32 n, string argument memory kind * n               (version 4 on)
//          | u64 n, serialized graph (ir/serialize.hpp, with its own checksum) | u64 FNV-1a-64

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/ir/byte_io.hpp"
#include "pjrt_lite/ir/serialize.hpp"

namespace pjrt_lite::inline v0_1::cpu {

inline constexpr std::array<std::byte, 4> kExecutableMagic = {std::byte{'P'}, std::byte{'J'}, std::byte{'L'},
                                                              std::byte{'X'}};
inline constexpr std::uint32_t kExecutableFormatVersion = 4;

namespace detail {

inline std::vector<std::byte> write_executable(const Graph& source, const CompileOptions& options) {
  ByteWriter w;
  w.bytes(kExecutableMagic);
  w.u32(kExecutableFormatVersion);
  w.u8(options.optimize ? 1 : 0);
  w.u8(options.fuse ? 1 : 0);
  w.u32(static_cast<std::uint32_t>(options.device_ids.size()));
  for (int id : options.device_ids) w.u32(static_cast<std::uint32_t>(id));
  w.u32(static_cast<std::uint32_t>(options.num_replicas));
  w.u32(static_cast<std::uint32_t>(options.num_partitions));
  w.u64(static_cast<std::uint64_t>(options.collective_timeout_ms));
  const std::vector<int> assigned = options.device_assignment ? options.device_assignment->device_ids : std::vector<int>{};
  w.u32(static_cast<std::uint32_t>(assigned.size()));
  for (int id : assigned) w.u32(static_cast<std::uint32_t>(id));
  w.u32(static_cast<std::uint32_t>(options.output_memory_kinds.size()));
  for (const std::string& kind : options.output_memory_kinds) w.string(kind);
  for (const auto* layouts : {&options.argument_layouts, &options.result_layouts}) {
    w.u32(static_cast<std::uint32_t>(layouts->size()));
    for (const std::vector<std::int64_t>& layout : *layouts) {
      w.u32(static_cast<std::uint32_t>(layout.size()));
      for (std::int64_t d : layout) w.u64(static_cast<std::uint64_t>(d));
    }
  }
  w.u32(static_cast<std::uint32_t>(options.argument_memory_kinds.size()));
  for (const std::string& kind : options.argument_memory_kinds) w.string(kind);
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
  if (version < 1 || version > kExecutableFormatVersion)
    return invalid_argument_error(str_cat("deserialize_executable: format version ", version,
                                          " is not supported; this build reads versions 1 to ", kExecutableFormatVersion));
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
  if (version >= 2) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t replicas, body.u32("num_replicas"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t partitions, body.u32("num_partitions"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t timeout, body.u64("collective timeout"));
    if (replicas < 1 || partitions < 1 || replicas > 4096 || partitions > 4096)
      return data_loss_error(str_cat("deserialize_executable: a grid of ", replicas, " x ", partitions));
    options.num_replicas = static_cast<int>(replicas);
    options.num_partitions = static_cast<int>(partitions);
    options.collective_timeout_ms = static_cast<std::int64_t>(timeout & 0x7fffffffffffffffULL);
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t assigned, body.count("device assignment size", 4, 1 << 20));
    if (assigned > 0) {
      DeviceAssignment a{options.num_replicas, options.num_partitions, {}};
      for (std::size_t i = 0; i < assigned; ++i) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::uint32_t id, body.u32("device assignment id"));
        a.device_ids.push_back(static_cast<int>(id));
      }
      options.device_assignment = std::move(a);
    }
  }
  if (version >= 3) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t kinds, body.count("output memory kind count", 4, 1 << 20));
    for (std::size_t i = 0; i < kinds; ++i) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::string kind, body.string("output memory kind"));
      options.output_memory_kinds.push_back(std::move(kind));
    }
  }
  if (version >= 4) {
    for (auto* layouts : {&options.argument_layouts, &options.result_layouts}) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::size_t count, body.count("layout count", 4, 1 << 20));
      for (std::size_t i = 0; i < count; ++i) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::size_t rank, body.count("layout rank", 8, 64));
        std::vector<std::int64_t>& layout = layouts->emplace_back();
        for (std::size_t d = 0; d < rank; ++d) {
          PJRT_LITE_ASSIGN_OR_RETURN(std::uint64_t dim, body.u64("layout dimension"));
          if (dim >= rank)
            return data_loss_error(str_cat("deserialize_executable: layout dimension ", dim, " of a rank-", rank, " layout"));
          layout.push_back(static_cast<std::int64_t>(dim));
        }
      }
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::size_t kinds, body.count("argument memory kind count", 4, 1 << 20));
    for (std::size_t i = 0; i < kinds; ++i) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::string kind, body.string("argument memory kind"));
      options.argument_memory_kinds.push_back(std::move(kind));
    }
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
