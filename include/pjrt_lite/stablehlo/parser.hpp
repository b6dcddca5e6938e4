#pragma once
// StableHLO text to IR: parse_module reads a module (what jax.export and stablehlo-opt
// print) into one Graph per function; parse_stablehlo returns the graph of one entry
// function.
//
//   StatusOr<Graph> g = parse_stablehlo(R"(
//     func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
//       %0 = stablehlo.add %x, %x : tensor<2xf32>
//       return %0 : tensor<2xf32>
//     })");
//
// Both of MLIR's syntaxes are read: the pretty form JAX prints (`stablehlo.add %a, %b :
// tensor<2xf32>`, `stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions =
// [1]`, ...) and the generic form (`"stablehlo.add"(%a, %b) : (...) -> ...` with `<{...}>` /
// `{...}` attribute dictionaries and `({ ^bb0(...): ... })` regions), mixed freely.
// `func.call` / `call` are inlined (the IR has no call op). The regions of while, case and
// if may use values defined outside them; those become operands of the op (see
// build_control_flow), since the IR's regions are closed. `stablehlo.custom_call
// @check.expect_*` become Checks (module.hpp). Attributes that do not change what a program
// computes (loc(...), #loc lines, mhlo.*, jax.*, precision_config, has_side_effect, ...) are
// read and ignored.
//
// Errors: malformed text and type errors are INVALID_ARGUMENT "line:column: what was
// expected, found what"; a declared type that differs from what the IR infers is one too.
// Valid StableHLO that the IR cannot represent (for example custom calls other than the
// check dialect's and JAX's annotations) is UNIMPLEMENTED naming the
// op or type, such as "stablehlo.custom_call @lapack_sgetrf_ffi is not supported", so a
// runner can skip the file. What JAX leaves in a one-device program (sharding and placement
// annotations, shape assertions, composites, tuples, map: detail/annotations.hpp) is read
// with its one-device meaning, and `?` dimensions are refined from argument shapes given to
// the overloads below (detail/shape_refinement.hpp). Quantized types (`!quant.uniform`) are
// read, and the ops on them lowered into ops of the IR on their storage integers
// (detail/quantized_ops.hpp). The parser never throws, crashes or loops on any input: nesting and sizes
// are bounded and every index is checked.
//
// Round trip: parse_stablehlo(to_stablehlo(g)) has g's fingerprint when g's parameters are
// its first nodes in number order (as when a builder declares them first): function
// arguments always become the first nodes.
//
// The pieces, in detail/: module_reader.hpp reads the module, its functions and every
// region; it hands each op to pretty_reader.hpp or generic_reader.hpp, which both look the
// op up in one table (op_table.hpp) and read it into the same parts (op_parts.hpp): the
// pretty forms (pretty_forms.hpp, pretty_region_forms.hpp) spell attributes the generic
// form's way, so one attribute reader per op (op_attributes.hpp) and one builder
// (op_builders.hpp, calls_and_checks.hpp) serve both syntaxes. Adding an op is one table
// entry plus its attribute reader (and a pretty form if its syntax is new).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/stablehlo/detail/module_reader.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_reader.hpp"
#include "pjrt_lite/stablehlo/module.hpp"

namespace pjrt_lite::inline v0_1::stablehlo {

namespace detail {
/// `text`'s bytes when they are MLIR bytecode (a portable artifact), else an empty span.
inline std::span<const std::uint8_t> bytecode_of(std::string_view text) {
  std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  return has_bytecode_magic(bytes) ? bytes : std::span<const std::uint8_t>();
}
}  // namespace detail

/// Parses a StableHLO module: every func.func with its calls inlined and its checks listed
/// (module.hpp). Text without a `module { ... }` wrapper (bare functions) is accepted too, and
/// so are the bytes of a portable artifact (MLIR bytecode holding VHLO, which starts with
/// "ML\xEFR"; see bytecode.hpp). INVALID_ARGUMENT "line:column: ..." for malformed or
/// ill-typed text, UNIMPLEMENTED for valid StableHLO the IR cannot represent. Thread-safe (no
/// shared state).
inline StatusOr<Module> parse_module(std::string_view text) {
  if (auto bytes = detail::bytecode_of(text); !bytes.empty()) return detail::parse_portable_module(bytes);
  return detail::ModuleReader(text).parse();
}

/// parse_module for a shape-polymorphic module (JAX's export with symbolic dimensions): the
/// entry function is built for arguments of shapes `arg_shapes`, which refine its `?`
/// dimensions as JAX's refine_polymorphic_shapes does. Every shape the program computes
/// then folds: get_dimension_size becomes a constant, the dynamic_* ops their static forms,
/// the functions it calls are built for the types they are called with, and a
/// @shape_assertion that does not hold fails here with its message. INVALID_ARGUMENT when
/// the shapes do not match the declared types, or a '?' cannot be refined (naming the op).
/// Functions other than the entry that only a refinement could build are left out.
/// Thread-safe.
inline StatusOr<Module> parse_module(std::string_view text, const std::vector<Shape>& arg_shapes,
                                     std::string_view entry = "main") {
  if (auto bytes = detail::bytecode_of(text); !bytes.empty())
    return detail::parse_portable_module(bytes, &arg_shapes, entry);
  return detail::ModuleReader(text, entry, &arg_shapes).parse();
}

}  // namespace pjrt_lite::stablehlo

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// The graph of function `entry` with only its own results as outputs.
inline StatusOr<Graph> entry_results(const Module& module, std::string_view entry) {
  const stablehlo::Function* f = module.find(entry);
  if (f == nullptr) return not_found_error(str_cat("the module has no function @", entry));
  if (static_cast<std::int64_t>(f->graph.outputs().size()) == f->num_results) return f->graph;
  GraphParts parts = f->graph.to_parts();
  parts.outputs.resize(static_cast<std::size_t>(f->num_results));
  return Graph::from_parts(std::move(parts));
}

}  // namespace pjrt_lite::stablehlo::detail

namespace pjrt_lite::inline v0_1 {

/// The graph of function `entry` of a StableHLO module, with every call inlined and only the
/// function's own results as outputs (checks are dropped; parse_module keeps them).
/// NOT_FOUND when the module has no such function. Thread-safe.
inline StatusOr<Graph> parse_stablehlo(std::string_view text, std::string_view entry = "main") {
  PJRT_LITE_ASSIGN_OR_RETURN(stablehlo::Module module, stablehlo::parse_module(text));
  return stablehlo::detail::entry_results(module, entry);
}

/// parse_stablehlo for a shape-polymorphic module: `entry` built for arguments of shapes
/// `arg_shapes` (see stablehlo::parse_module). The graph has concrete shapes, so a compile
/// cache keyed on its fingerprint keys on the refined shapes. Thread-safe.
inline StatusOr<Graph> parse_stablehlo(std::string_view text, const std::vector<Shape>& arg_shapes,
                                       std::string_view entry = "main") {
  PJRT_LITE_ASSIGN_OR_RETURN(stablehlo::Module module,
                             stablehlo::parse_module(text, arg_shapes, entry));
  return stablehlo::detail::entry_results(module, entry);
}

}  // namespace pjrt_lite
