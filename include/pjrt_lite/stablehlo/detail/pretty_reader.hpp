#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The pretty-form reader: `stablehlo.add %a, %b : tensor<2xf32>`, the syntax JAX prints. It
// looks the op's name up in the op table and reads the rest with the entry's pretty form; a
// name the table lacks is a typo (INVALID_ARGUMENT) when it is a stablehlo op nobody defines,
// else valid StableHLO the IR cannot represent (UNIMPLEMENTED, naming it).

#include <string_view>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/quantized_ops.hpp"
#include "pjrt_lite/stablehlo/detail/op_table.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// Why the pretty-form op `name` cannot be read: it is not in the op table.
inline Status unknown_pretty_op(std::string_view name, SourcePos pos) {
  if (name == "func.func" || name == "module")
    return error_at(pos, str_cat("expected '}' to end the function before ", name));
  if (name.starts_with("func.")) return error_at(pos, str_cat("unknown op ", name));
  if (name.starts_with("chlo.")) return unsupported_at(pos, name);
  if (!name.starts_with("stablehlo.")) {
    if (name.find('.') != std::string_view::npos) return unsupported_at(pos, name);
    return error_at(pos,
                    str_cat("expected an op such as stablehlo.add, found identifier '", name, "'"));
  }
  if (is_known_unsupported_op(name.substr(10))) return unsupported_at(pos, name);
  return error_at(pos, str_cat("unknown op ", name));
}

/// The op whose name `name` (at `pos`) has been read, in the pretty form.
inline StatusOr<OpResult> read_pretty_op(Reader& r, Context& ctx, std::string_view name,
                                         SourcePos pos) {
  const OpSyntax* op = find_op(name);
  if (op == nullptr) return unknown_pretty_op(name, pos);
  if (op->pretty == nullptr)
    return error_at(pos, str_cat(name, " has no pretty form; expected \"", name, "\"(...)"));
  OpParts parts;
  parts.pos = pos;
  PJRT_LITE_RETURN_IF_ERROR(op->pretty(r, ctx, *op, parts));
  return build_op(ctx, *op, parts);
}

}  // namespace pjrt_lite::stablehlo::detail
