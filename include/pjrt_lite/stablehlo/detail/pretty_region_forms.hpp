#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The pretty forms of the op table that hold regions: reduce (with `applies` for a body that
// is one binary op) and while. Their regions are read by the module's BodyReader, like a
// function's body.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/pretty_forms.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

// reduce's pretty forms:
//   stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : type
//   stablehlo.reduce(%a init: %b), (%c init: %d) across dimensions = [0] : type
//     reducer(%acc0: T, %x0: T) (%acc1: U, %x1: U) { ... stablehlo.return ... }
inline Status pretty_reduce(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  std::vector<Value> inputs, inits;
  while (true) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start a reduce input (%x init: %c)"));
    PJRT_LITE_ASSIGN_OR_RETURN(Value input, parse_operand(r, ctx, "as a reduce input"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("init", "after the reduce input"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(':', "after init"));
    PJRT_LITE_ASSIGN_OR_RETURN(Value init, parse_operand(r, ctx, "as an init value"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the init value"));
    inputs.push_back(input);
    inits.push_back(init);
    if (!(r.peek().is(',') && r.peek2().is('('))) break;
    r.next();
  }
  std::optional<OpCode> applies;
  SourcePos applies_pos;
  if (r.consume_ident_if("applies")) {
    PJRT_LITE_ASSIGN_OR_RETURN(Token body_op,
                               r.expect_kind(TokenKind::kIdent, "a binary op", "after applies"));
    applies_pos = body_op.pos;
    StatusOr<OpCode> code = op_from_name(body_op.text);
    if (!code.ok() || !is_binary(*code) || !body_op.text.starts_with("stablehlo."))
      return error_at(body_op.pos,
                      str_cat("expected a binary op such as stablehlo.add after applies, found ",
                              describe(body_op)));
    applies = *code;
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("across", {"in ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(key_list(r, p, "dimensions", "dimensions", "after across"));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  p.operands = inputs;
  p.operands.insert(p.operands.end(), inits.begin(), inits.end());
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  if (applies) {
    if (inputs.size() != 1)
      return error_at(applies_pos, "applies takes one reduce input; use a reducer region");
    PJRT_LITE_ASSIGN_OR_RETURN(Shape init, ctx.b.shape(inits[0]));
    const DType dtype = declared.size() == 1 ? declared[0].dtype() : init.dtype();
    StatusOr<Graph> made = make_binary_body(*applies, dtype);
    if (!made.ok()) return error_at(applies_pos, made.status().message());
    p.regions.push_back(std::move(made).value());
    return ok_status();
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("reducer", {"(or applies) in ", op.name}));
  // Each pair is (accumulator i, element i); the body takes all accumulators first.
  const std::size_t n = inputs.size();
  std::vector<BlockArg> args(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start a reducer argument pair"));
    PJRT_LITE_ASSIGN_OR_RETURN(args[i], parse_block_arg(r));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "between the reducer arguments"));
    PJRT_LITE_ASSIGN_OR_RETURN(args[n + i], parse_block_arg(r));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after a reducer argument pair"));
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect('{', "to start the reducer body"));
  PJRT_LITE_ASSIGN_OR_RETURN(Graph body,
                             ctx.reader.read_region_body(r, ctx, args, "reducer", nullptr));
  p.regions.push_back(std::move(body));
  return ok_status();
}

// while's pretty form, as JAX prints it:
//   stablehlo.while(%iterArg = %a, %iterArg_0 = %b) : tensor<i64>, tensor<f32>
//    cond { ... stablehlo.return %p : tensor<i1> } do { ... stablehlo.return %x, %y : ... }
// Both regions see the iteration arguments as their block arguments.
inline Status pretty_while(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"to start the operands of ", op.name}));
  std::vector<BlockArg> args;
  if (!r.consume_if(')')) {
    while (true) {
      PJRT_LITE_ASSIGN_OR_RETURN(
          Token arg, r.expect_kind(TokenKind::kValueId, "an iteration argument such as %iterArg",
                                   {"in ", op.name}));
      if (arg.text.find('#') != std::string_view::npos)
        return error_at(arg.pos,
                        str_cat("an iteration argument cannot select a result: ", arg.text));
      PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after the iteration argument"));
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, parse_operand(r, ctx, "as the initial value"));
      args.push_back(BlockArg{std::string(arg.text.substr(1)), Shape(), arg.pos});
      p.operands.push_back(v);
      if (static_cast<std::int64_t>(args.size()) > kMaxResults)
        return error_at(arg.pos, str_cat("more than ", kMaxResults, " iteration arguments"));
      Token t = r.next();
      if (t.is(')')) break;
      if (!t.is(','))
        return error_at(
            t.pos, str_cat("expected ',' or ')' after an iteration argument, found ", describe(t)));
    }
  }
  // The listed types are the operands', the block arguments' and the results'.
  p.type.functional = true;
  if (r.consume_if(':')) {
    p.type.pos = r.lexer().next_pos();
    PJRT_LITE_ASSIGN_OR_RETURN(p.type.function.inputs, r.parse_type_list());
    PJRT_LITE_RETURN_IF_ERROR(
        check_listed_types(ctx, p.operands, p.type.function.inputs, op.name, p.type.pos));
  } else if (!p.operands.empty()) {
    return error_at(r.peek().pos, "expected ':' and the types of the iteration arguments");
  }
  p.type.function.results = p.type.function.inputs;
  // The operands' types: the listed ones may have '?' dimensions, which the operands refine.
  for (std::size_t k = 0; k < args.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(args[k].type, ctx.b.shape(p.operands[k]));
  }
  if (r.peek().is('{')) PJRT_LITE_RETURN_IF_ERROR(r.parse_dict().status());
  p.captures.resize(2);
  for (std::string_view keyword : {std::string_view("cond"), std::string_view("do")}) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(keyword, {"in ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('{', {"to start the ", keyword, " region"}));
    PJRT_LITE_ASSIGN_OR_RETURN(
        Graph g, ctx.reader.read_region_body(r, ctx, args, keyword, &p.captures[p.regions.size()]));
    p.regions.push_back(std::move(g));
  }
  return ok_status();
}

}  // namespace pjrt_lite::stablehlo::detail
