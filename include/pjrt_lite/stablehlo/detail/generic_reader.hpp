#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The generic-form reader: `"stablehlo.add"(%a, %b) <{properties}> ({regions}) {attributes}
// : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>`, the syntax every MLIR op has. Its
// shape is the same for every op, so it is read here into OpParts and handed to the op
// table's entry; an op the table lacks is refused before its attributes and regions, which
// may hold syntax this parser does not read.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/quantized_ops.hpp"
#include "pjrt_lite/stablehlo/detail/op_table.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// Why the generic-form op `name` cannot be read: the op table has no generic form of it.
inline Status unknown_generic_op(std::string_view name, SourcePos pos) {
  // An op of the table without a generic form (stablehlo.tuple) is valid but not read so.
  if (!name.starts_with("stablehlo.") || is_known_unsupported_op(name.substr(10)) ||
      find_op(name) != nullptr)
    return unsupported_at(pos, name);
  return error_at(pos, str_cat("unknown op ", name));
}

/// A generic region `{ ^bb0(%a: T, ...): ops }` whose '{' comes next; with `captured`, the
/// region may use outside values, which are listed there. With `iteration` (a while's
/// operands, which are its regions' arguments), a '?' in an argument's type takes the
/// operand's size.
inline StatusOr<Graph> read_generic_region(Reader& r, Context& ctx, std::vector<Value>* captured,
                                           const std::vector<Value>* iteration = nullptr) {
  PJRT_LITE_RETURN_IF_ERROR(r.expect('{', "to start a region"));
  std::vector<BlockArg> args;
  if (r.peek().kind == TokenKind::kBlockId) {
    r.next();
    if (r.consume_if('(') && !r.consume_if(')')) {
      while (true) {
        PJRT_LITE_ASSIGN_OR_RETURN(BlockArg a, parse_block_arg(r));
        args.push_back(std::move(a));
        Token t = r.next();
        if (t.is(')')) break;
        if (!t.is(','))
          return error_at(
              t.pos, str_cat("expected ',' or ')' in the block arguments, found ", describe(t)));
      }
    }
    PJRT_LITE_RETURN_IF_ERROR(r.expect(':', "after the block label"));
  }
  if (iteration != nullptr && iteration->size() == args.size())
    for (std::size_t k = 0; k < args.size(); ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape((*iteration)[k]));
      if (has_dynamic_dims(args[k].type) && matches_declared(s, args[k].type)) args[k].type = s;
    }
  return ctx.reader.read_region_body(r, ctx, args, "region", captured);
}

/// The op whose quoted name `name` (at `pos`) has been read, in the generic form.
inline StatusOr<OpResult> read_generic_op(Reader& r, Context& ctx, std::string_view name,
                                          SourcePos pos) {
  const OpSyntax* op = find_op(name);
  if (op == nullptr || !op->generic) return unknown_generic_op(name, pos);
  OpParts p;
  p.pos = pos;
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"to start the operands of \"", name, "\""}));
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', {"after the operands of \"", name, "\""}));
  if (r.peek().is('<')) {
    r.next();
    PJRT_LITE_ASSIGN_OR_RETURN(p.attrs, r.parse_dict());
    PJRT_LITE_RETURN_IF_ERROR(r.expect('>', "to end the properties <{...}>"));
  }
  if (r.peek().is('(') && r.peek2().is('{')) {
    r.next();
    const bool capturing = is_control_flow(op->code);
    do {
      if (p.regions.size() >= static_cast<std::size_t>(kMaxResults))
        return error_at(r.peek().pos, str_cat("more than ", kMaxResults, " regions"));
      p.captures.emplace_back();
      PJRT_LITE_ASSIGN_OR_RETURN(
          Graph g, read_generic_region(r, ctx, capturing ? &p.captures.back() : nullptr,
                                       op->code == OpCode::kWhile ? &p.operands : nullptr));
      p.regions.push_back(std::move(g));
    } while (r.consume_if(','));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the regions"));
  }
  if (r.peek().is('{')) {
    PJRT_LITE_ASSIGN_OR_RETURN(AttrDict more, r.parse_dict());
    for (auto& kv : more) p.attrs.push_back(std::move(kv));
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the type of \"", name, "\""}));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, r.parse_op_type());
  if (!p.type.functional)
    return error_at(p.type.pos, "a generic op's type must be a function type (...) -> ...");
  return build_op(ctx, *op, p);
}

}  // namespace pjrt_lite::stablehlo::detail
