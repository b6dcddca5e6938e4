#pragma once
// StableHLO's portable artifacts: the MLIR bytecode that `stablehlo-translate --serialize`,
// `stablehlo.serialize_portable_artifact` and jax.export write, holding the VHLO dialect (the
// versioned copy of StableHLO). Artifacts of every StableHLO version from 0.9.0 to 1.20.0 are
// read; older ops and attributes mean what today's StableHLO says they mean (VHLO's upgrades).
//
//   std::vector<std::byte> bytes = read_file("model.mlir.bc");
//   StatusOr<stablehlo::Module> m = stablehlo::parse_portable_artifact(bytes);
//   auto exe = client.compile(bytes);  // the same path as text
//
// An artifact decodes into the program its text twin holds: each VHLO op is written as the
// StableHLO op it versions and read by the text parser (parser.hpp), so everything after
// parsing is shared. parse_module, parse_stablehlo, compile_stablehlo and client.compile take
// an artifact's bytes (recognized by the magic "ML\xEFR") as well as text.
//
// Errors: a truncated or corrupt file is INVALID_ARGUMENT naming the section and the byte
// offset ("portable artifact: the IR section at offset 1234: ..."); the reader never reads
// out of bounds, and every count is capped by the bytes that would hold it. An artifact of a
// newer StableHLO (or a newer MLIR bytecode format) is UNIMPLEMENTED naming its version. An
// op, attribute or type with no StableHLO meaning here is UNIMPLEMENTED naming it, as is what
// the text parser refuses. The pieces: detail/bytecode_reader.hpp (the container),
// detail/vhlo_attributes.hpp (VHLO's attribute and type encodings), detail/vhlo_ops.hpp (the
// op table) and detail/vhlo_reader.hpp (the IR walk and the text it writes).
//
// Writing: serialize_portable_artifact(graph, "1.12.0") writes a traced or parsed program as
// the artifact StableHLO `target` would read (detail/vhlo_writer.hpp): what jax.export and
// stablehlo-translate --serialize --target hand to XLA or IREE.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/detail/bytecode_reader.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_reader.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_writer.hpp"
#include "pjrt_lite/stablehlo/module.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"

namespace pjrt_lite::inline v0_1::stablehlo {

namespace detail {
inline std::span<const std::uint8_t> as_bytes_u8(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()};
}
}  // namespace detail

/// Whether `bytes` is MLIR bytecode (starts with "ML\xEFR"). Thread-safe.
inline bool is_portable_artifact(std::span<const std::byte> bytes) {
  return detail::has_bytecode_magic(detail::as_bytes_u8(bytes));
}

/// The StableHLO version that wrote the artifact ("1.20.0", from its producer string), or
/// INVALID_ARGUMENT when `bytes` is not bytecode or names no StableHLO version. Thread-safe.
inline StatusOr<std::string> portable_artifact_version(std::span<const std::byte> bytes) {
  PJRT_LITE_ASSIGN_OR_RETURN(detail::BcFile f, detail::read_bytecode_file(detail::as_bytes_u8(bytes)));
  const auto v = detail::producer_version(f.producer);
  if (!v) return invalid_argument_error(str_cat("portable artifact: the producer \"", f.producer,
                                                "\" names no StableHLO version"));
  return detail::version_string(*v);
}

/// Parses a portable artifact into a Module, as parse_module does text. Errors as above.
/// Thread-safe (no shared state).
inline StatusOr<Module> parse_portable_artifact(std::span<const std::byte> bytes) {
  return detail::parse_portable_module(detail::as_bytes_u8(bytes));
}

/// parse_portable_artifact for a shape-polymorphic program: `entry` built for arguments of
/// shapes `arg_shapes` (see parse_module(text, shapes)). Thread-safe.
inline StatusOr<Module> parse_portable_artifact(std::span<const std::byte> bytes,
                                                const std::vector<Shape>& arg_shapes,
                                                std::string_view entry = "main") {
  return detail::parse_portable_module(detail::as_bytes_u8(bytes), &arg_shapes, entry);
}

/// The program of a portable artifact as StableHLO text (generic op form), which parse_module
/// reads; UNIMPLEMENTED naming the first op or attribute that has no StableHLO spelling here.
/// For inspecting an artifact. Thread-safe.
inline StatusOr<std::string> portable_artifact_to_text(std::span<const std::byte> bytes) {
  PJRT_LITE_ASSIGN_OR_RETURN(detail::PortableProgram p, detail::read_portable_program(detail::as_bytes_u8(bytes)));
  for (const detail::PortableFunction& f : p.functions)
    if (!f.status.ok()) return Status(f.status.code(), str_cat(f.status.message(), " (in @", f.name, ")"));
  return p.module_text();
}

/// The oldest and newest StableHLO versions serialize_portable_artifact writes for: every
/// version of MLIR bytecode format 6.
inline constexpr std::string_view kPortableArtifactOldestTarget = "0.15.0";
inline constexpr std::string_view kPortableArtifactNewestTarget = "1.20.0";

/// `graph` (a verified Graph, as every builder and the parser make) as a StableHLO portable
/// artifact for StableHLO `target`, one public function @main: the bytes
/// `stablehlo-translate --serialize --target=<target>` would write for its text, which
/// StableHLO `target` and every later version read (and parse_portable_artifact does). Each op
/// is the newest VHLO version of it that `target` has. UNIMPLEMENTED names what `target`
/// cannot hold (an op, an element type or an attribute it does not have yet, such as a gather
/// with batching dimensions before 1.1.0) and CHLO's ops on complex values; CHLO's top_k and
/// erf are written as XLA's custom calls and its other ops on real values as StableHLO ops,
/// as JAX's serializer writes them (detail/chlo_expansions.hpp). INVALID_ARGUMENT for a target
/// that is not a version. Thread-safe.
inline StatusOr<std::vector<std::byte>> serialize_portable_artifact(
    const Graph& graph, std::string_view target = kPortableArtifactNewestTarget) {
  PJRT_LITE_ASSIGN_OR_RETURN(detail::VhloVersion v, detail::parse_vhlo_version(target));
  PJRT_LITE_ASSIGN_OR_RETURN(detail::VhloVersion oldest, detail::parse_vhlo_version(kPortableArtifactOldestTarget));
  if (v < oldest || detail::kVhloMaxVersion < v)
    return unimplemented_error(str_cat("portable artifact: StableHLO ", target, " is not a target written here (",
                                       kPortableArtifactOldestTarget, " to ", kPortableArtifactNewestTarget, ")"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, detail::VhloWriter(v).write(graph));
  std::vector<std::byte> out(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// The StableHLO text's function @`entry` (shapes refined as parse_module does) as a portable
/// artifact for `target`, as above. Thread-safe.
inline StatusOr<std::vector<std::byte>> serialize_portable_artifact(
    std::string_view stablehlo_text, std::string_view target, std::string_view entry = "main") {
  PJRT_LITE_ASSIGN_OR_RETURN(Module m, parse_module(stablehlo_text));
  PJRT_LITE_ASSIGN_OR_RETURN(Graph g, m.function(entry));
  return serialize_portable_artifact(g, target);
}

}  // namespace pjrt_lite::stablehlo
