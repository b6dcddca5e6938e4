#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// What JAX leaves in a program that runs on one device and adds no node of its own, or only
// nodes of ops the IR has: sharding and placement annotations (identities on one device),
// shape assertions (checked when the program is read, where shapes are known), composites
// (their decomposition), optimization barriers, tuples, map (its body, vmapped over the
// elements) and Shardy's manual computations over axes of size one.
//
// Memory placement: annotate_device_placement (and the older MoveToHost / MoveToDevice) is an
// identity here: the IR has no memory kinds, so a result annotated pinned_host is computed
// in device memory like any other; the annotation is read and checked, not enforced.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/shape_refinement.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/types.hpp"
#include "pjrt_lite/transforms/batching.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

// ---- Custom calls -------------------------------------------------------------------------

/// Targets that, on one device, return their operands unchanged.
inline bool is_identity_custom_call(std::string_view target) {
  constexpr std::string_view kNames[] = {
      "Sharding",          "SPMDFullToShardShape",        "SPMDShardToFullShape",
      "annotate_device_placement", "MoveToHost",          "MoveToDevice",
      "xla.sdy.FuncResultSharding", "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"};
  for (std::string_view n : kNames)
    if (n == target) return true;
  return false;
}

/// The custom calls read here (see build_annotation_custom_call).
inline bool is_annotation_custom_call(std::string_view target) {
  return is_identity_custom_call(target) || target == "shape_assertion" ||
         is_dynamic_custom_call(target);
}

/// JAX's error_message with `{0}`, `{1}`, ... replaced by the values of the assertion's
/// operands after the condition (Python's str.format with positional arguments).
inline std::string format_assertion(std::string_view message,
                                    const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < message.size(); ++i) {
    const char c = message[i];
    if (c == '{' && i + 1 < message.size() && message[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    if (c == '}' && i + 1 < message.size() && message[i + 1] == '}') {
      out += '}';
      ++i;
      continue;
    }
    if (c == '{') {
      const std::size_t close = message.find('}', i);
      if (close != std::string_view::npos) {
        const std::string_view field = message.substr(i + 1, close - i - 1);
        std::size_t k = 0;
        bool digits = !field.empty();
        for (char d : field) {
          if (d < '0' || d > '9') digits = false;
          else k = k * 10 + static_cast<std::size_t>(d - '0');
        }
        if (digits && k < values.size()) {
          out += std::to_string(values[k]);
          i = close;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

/// `@shape_assertion(%cond, %v0, %v1, ...) {error_message = "..."}`: the condition must fold
/// (it is made of dimension sizes, known once shapes are refined); false fails with the
/// message, formatted with the values.
inline StatusOr<OpResult> build_shape_assertion(Context& ctx, OpParts& p) {
  if (p.operands.empty())
    return error_at(p.pos, "stablehlo.custom_call @shape_assertion needs a condition operand");
  const AttrValue* message = find_attr(p.attrs, "error_message");
  if (message == nullptr || message->kind != AttrValue::Kind::kString)
    return error_at(p.pos, "stablehlo.custom_call @shape_assertion needs error_message = \"...\"");
  PJRT_LITE_ASSIGN_OR_RETURN(Shape cond, ctx.b.shape(p.operands[0]));
  if (cond.dtype() != DType::kPred || cond.rank() != 0)
    return error_at(p.pos, str_cat("the condition of @shape_assertion must be tensor<i1>, not ",
                                   tensor_type_name(cond)));
  StatusOr<IntTensor> holds = fold_to_ints(ctx, p.operands[0], "its condition", p.pos);
  if (!holds.ok())
    return unsupported_at(p.pos, str_cat("a @shape_assertion whose condition is known only at "
                                         "run time (",
                                         holds.status().message(), ")"));
  if (holds->values.at(0) != 0) return OpResult{};
  std::vector<std::int64_t> values;
  for (std::size_t k = 1; k < p.operands.size(); ++k) {
    StatusOr<IntTensor> v = fold_to_ints(ctx, p.operands[k], str_cat("operand ", k), p.pos);
    values.push_back(v.ok() && v->values.size() == 1 ? v->values[0] : 0);
  }
  return invalid_argument_error(format_assertion(message->text, values));
}

/// Identities, shape_assertion, and the dynamic custom calls of shape_refinement.hpp.
inline StatusOr<OpResult> build_annotation_custom_call(Context& ctx, std::string_view target,
                                                       OpParts& p) {
  if (is_dynamic_custom_call(target)) return build_dynamic_custom_call(ctx, target, p);
  PJRT_LITE_ASSIGN_OR_RETURN(
      std::vector<Shape> declared,
      declared_types(ctx, p.type, p.operands, TypeRule::kSame, "stablehlo.custom_call", p.pos));
  if (target == "shape_assertion") {
    if (!declared.empty())
      return error_at(p.pos, "stablehlo.custom_call @shape_assertion has no results");
    return build_shape_assertion(ctx, p);
  }
  const std::string what = str_cat("stablehlo.custom_call @", target);
  if (p.operands.size() != declared.size())
    return error_at(p.pos, str_cat(what, " has as many results as operands"));
  for (std::size_t k = 0; k < declared.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(p.operands[k]));
    if (!matches_declared(s, declared[k]))
      return unsupported_at(p.pos, str_cat(what, " changing ", tensor_type_name(s), " into ",
                                           tensor_type_name(declared[k]),
                                           " (a program split over several devices)"));
  }
  if (target == "annotate_device_placement" && ctx.placements != nullptr && !p.operands.empty()) {
    // The kind is a frontend attribute: {_xla_buffer_placement = "pinned_host"}.
    if (const AttrValue* f = find_attr(p.attrs, "mhlo.frontend_attributes");
        f != nullptr && f->kind == AttrValue::Kind::kDict)
      if (const AttrValue* kind = find_attr(f->dict, "_xla_buffer_placement");
          kind != nullptr && kind->kind == AttrValue::Kind::kString)
        ctx.placements->emplace_back(p.operands[0], kind->text);
  }
  OpResult out;
  out.values = p.operands;
  return out;
}

// ---- Ops that are their operands ----------------------------------------------------------

/// `op %a, %b <sharding> {attrs} : T, U` (sdy.sharding_constraint, sdy.reshard,
/// optimization_barrier): operands, anything up to ':' that is not a type, then the types.
inline Status pretty_passthrough(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  if (r.peek().is('<')) PJRT_LITE_RETURN_IF_ERROR(r.lexer().skip_balanced('<', '>').status());
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  return ok_status();
}

/// Each result is the operand at the same place.
inline StatusOr<OpResult> build_passthrough(Context& ctx, const OpSyntax& op, OpParts& p) {
  std::vector<Shape> declared;
  if (p.type.functional) {
    PJRT_LITE_ASSIGN_OR_RETURN(declared, declared_types(ctx, p.type, p.operands, TypeRule::kSame,
                                                        op.name, p.pos));
  } else {
    // `: T, U`: one type per operand.
    if (p.type.types.size() != p.operands.size())
      return error_at(p.type.pos, str_cat(op.name, " lists ", p.type.types.size(),
                                          " type(s) for ", p.operands.size(), " operand(s)"));
    declared = p.type.types;
  }
  OpResult out;
  out.values = p.operands;
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

// ---- composite ----------------------------------------------------------------------------

/// `stablehlo.composite "name" %a, %b {composite_attributes = {...}, decomposition = @f,
/// version = 1 : i32} : (T, U) -> R`.
inline Status pretty_composite(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Token name,
                             r.expect_kind(TokenKind::kString, "the composite's name", {"after ", op.name}));
  AttrValue v;
  v.kind = AttrValue::Kind::kString;
  v.text = unquote(name.text);
  v.pos = name.pos;
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  p.attrs.emplace_back("name", std::move(v));
  return ok_status();
}

/// A composite is a call of its decomposition function.
inline StatusOr<OpResult> build_composite(Context& ctx, const OpSyntax& op, OpParts& p) {
  const AttrValue* callee = find_attr(p.attrs, "decomposition");
  if (callee == nullptr || callee->kind != AttrValue::Kind::kSymbol)
    return error_at(p.pos, str_cat(op.name, " needs a decomposition = @function attribute"));
  return ctx.reader.inline_call(ctx, callee->text, p.operands, p.type, p.pos);
}

// ---- Tuples -------------------------------------------------------------------------------

/// The tuple %name as seen from ctx's scope, which must define it.
inline StatusOr<const Scope::Def*> local_tuple(const Context& ctx, const Token& t) {
  bool local = false;
  const Scope::Def* def = ctx.scope.find(std::string(t.text.substr(1)), local);
  if (def == nullptr) return error_at(t.pos, str_cat("use of undefined value ", t.text));
  if (!def->tuple) return error_at(t.pos, str_cat(t.text, " is not a tuple"));
  if (!local)
    return unsupported_at(t.pos, str_cat("a region using the tuple ", t.text, ", defined outside it,"));
  return def;
}

/// `stablehlo.tuple %a, %t : tuple<T, tuple<U>>`: each operand a value or a tuple of its own;
/// the tuple type is skipped (its elements are the operands').
inline Status pretty_tuple(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  while (r.peek().kind == TokenKind::kValueId) {
    const Token t = r.peek();
    bool local = false;
    const Scope::Def* named = ctx.scope.find(std::string(t.text.substr(1)), local);
    if (named != nullptr && named->tuple) {
      r.next();
      PJRT_LITE_ASSIGN_OR_RETURN(const Scope::Def* def, local_tuple(ctx, t));
      p.tuple_elements.push_back(*def);
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, parse_operand(r, ctx, {"in ", op.name}));
      p.tuple_elements.push_back(Scope::Def{{v}, t.pos});
    }
    if (!(r.peek().is(',') && r.peek2().kind == TokenKind::kValueId)) break;
    r.next();
  }
  if (r.peek().is('{')) {
    PJRT_LITE_ASSIGN_OR_RETURN(p.attrs, r.parse_dict());
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("tuple", {"as the type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.lexer().skip_balanced('<', '>').status());
  return ok_status();
}

inline StatusOr<OpResult> build_tuple(Context&, const OpSyntax&, OpParts& p) {
  OpResult out;
  out.tuple = true;
  out.tuple_elements = std::move(p.tuple_elements);
  return out;
}

/// `stablehlo.get_tuple_element %t[1] : (tuple<T, U>) -> U`: the element itself, a value or
/// (a result type `tuple<...>`) a tuple.
inline Status pretty_get_tuple_element(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Token t, r.expect_kind(TokenKind::kValueId, "a tuple such as %0",
                                                    {"after ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(const Scope::Def* def, local_tuple(ctx, t));
  PJRT_LITE_RETURN_IF_ERROR(r.expect('[', "before the element index"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t index, r.parse_int("(the element index)"));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(']', "after the element index"));
  if (index < 0 || index >= static_cast<std::int64_t>(def->elements.size()))
    return error_at(t.pos, str_cat("element ", index, " of ", t.text, ", which has ",
                                   def->elements.size()));
  const Scope::Def& element = def->elements[static_cast<std::size_t>(index)];
  p.tuple_elements = {element};
  if (r.peek().is('{')) {
    PJRT_LITE_ASSIGN_OR_RETURN(p.attrs, r.parse_dict());
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the type of ", op.name}));
  // `(tuple<...>) -> T`: only the result type is checked (a tuple's only as being one).
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"before the tuple type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("tuple", {"in the type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.lexer().skip_balanced('<', '>').status());
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', {"after the tuple type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_arrow({"in the type of ", op.name}));
  p.type.pos = t.pos;
  if (r.peek().is_ident("tuple")) {
    const Token tuple_type = r.next();
    PJRT_LITE_RETURN_IF_ERROR(r.lexer().skip_balanced('<', '>').status());
    if (!element.tuple)
      return error_at(tuple_type.pos, str_cat("element ", index, " of ", t.text, " is a tensor, not a tuple"));
    return ok_status();
  }
  if (element.tuple)
    return error_at(r.peek().pos, str_cat("element ", index, " of ", t.text, " is a tuple, not a tensor"));
  p.operands = element.values;
  PJRT_LITE_ASSIGN_OR_RETURN(Shape result, r.parse_type());
  p.type.types = {std::move(result)};
  return ok_status();
}

inline StatusOr<OpResult> build_get_tuple_element(Context& ctx, const OpSyntax& op, OpParts& p) {
  OpResult out;
  if (p.tuple_elements.size() == 1 && p.tuple_elements[0].tuple) {
    out.tuple = true;
    out.tuple_elements = std::move(p.tuple_elements[0].elements);
    return out;
  }
  out.values = p.operands;
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, p.type.types, op.name, p.pos));
  return out;
}

// ---- map ----------------------------------------------------------------------------------

/// `"stablehlo.map"(%a, %b) <{dimensions = array<i64: 0, 1>}> ({ ^bb0(%x: tensor<f32>, ...):
/// ... }) : (...) -> R`: the scalar body applied to every element, as the body vmapped over
/// the flattened operands.
inline StatusOr<OpResult> build_map(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, TypeRule::kSame, op.name,
                                            p.pos));
  if (p.regions.size() != 1 || p.operands.empty() || declared.size() != 1)
    return error_at(p.pos, str_cat(op.name, " takes operands, one region and has one result"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape first, ctx.b.shape(p.operands[0]));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims,
                             int_list_attr(p.attrs, "dimensions", op.name, p.pos, false));
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k] != static_cast<std::int64_t>(k))
      return unsupported_at(p.pos, str_cat(op.name, " with dimensions other than 0, 1, ..."));
  const Graph& body = p.regions[0];
  if (body.num_parameters() != static_cast<std::int64_t>(p.operands.size()) ||
      body.outputs().size() != 1)
    return error_at(p.pos, str_cat(op.name, ": the body takes one scalar per operand and "
                                            "returns one scalar"));
  std::int64_t n = 1;
  for (std::int64_t d : first.dims()) n *= d;
  std::vector<Value> flat;
  for (std::size_t k = 0; k < p.operands.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(p.operands[k]));
    const Shape& want = body.shape(body.parameters()[k]);
    if (!std::ranges::equal(s.dims(), first.dims()) || want.rank() != 0 || want.dtype() != s.dtype())
      return error_at(p.pos, str_cat(op.name, ": operand ", k, " has type ", tensor_type_name(s),
                                     " but the body takes ", tensor_type_name(want),
                                     " and every operand has the first one's dimensions"));
    flat.push_back(ctx.b.reshape(p.operands[k], {n}));
  }
  StatusOr<Graph> batched =
      batch_graph(body, std::vector<bool>(p.operands.size(), true), n);
  if (!batched.ok()) return error_at(p.pos, str_cat(op.name, ": ", batched.status().message()));
  std::vector<Value> mapped = ctx.b.inline_graph(*batched, flat);
  if (!ctx.b.ok()) return error_at(p.pos, ctx.b.status().message());
  OpResult out;
  out.values = {ctx.b.reshape(mapped[0], std::vector<std::int64_t>(first.dims().begin(),
                                                                   first.dims().end()))};
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

// ---- Shardy's manual computation ----------------------------------------------------------

/// `sdy.manual_computation(%a) in_shardings=[...] out_shardings=[...] manual_axes={"x"}
/// (%b: T) { ... sdy.return %r : R } : (T) -> R`. Its body is what each device runs on its
/// shard; when every manual axis has size one there is one device and one shard, the whole
/// value, and the body runs as is.
inline Status pretty_manual_computation(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"to start the operands of ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', {"after the operands of ", op.name}));
  std::string mesh;
  std::vector<std::string> axes;
  for (std::string_view key : {"in_shardings", "out_shardings", "manual_axes"}) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(key, {"in ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', {"after ", key}));
    const bool braces = key == "manual_axes";
    PJRT_LITE_ASSIGN_OR_RETURN(std::string_view text,
                               r.lexer().skip_balanced(braces ? '{' : '[', braces ? '}' : ']'));
    if (braces) {
      for (std::size_t q = text.find('"'); q != std::string_view::npos;) {
        const std::size_t end = text.find('"', q + 1);
        if (end == std::string_view::npos) break;
        axes.emplace_back(text.substr(q + 1, end - q - 1));
        q = text.find('"', end + 1);
      }
    } else if (mesh.empty()) {
      if (std::size_t at = text.find('@'); at != std::string_view::npos) {
        std::size_t end = at + 1;
        while (end < text.size() && text[end] != ',' && text[end] != ' ' && text[end] != '>') ++end;
        mesh = std::string(text.substr(at + 1, end - at - 1));
      }
    }
  }
  for (const std::string& axis : axes) {
    const std::int64_t size = ctx.meshes ? mesh_axis_size(*ctx.meshes, mesh, axis) : -1;
    if (size != 1)
      return unsupported_at(p.pos, str_cat(op.name, " over the manual axis \"", axis, "\" of @",
                                           mesh, size < 0 ? " (a mesh not declared)"
                                                          : str_cat(" (size ", size, ")"),
                                           ": it runs on several devices"));
  }
  std::vector<BlockArg> args;
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start the body's arguments"));
  if (!r.consume_if(')')) {
    while (true) {
      PJRT_LITE_ASSIGN_OR_RETURN(BlockArg a, parse_block_arg(r));
      args.push_back(std::move(a));
      if (r.consume_if(')')) break;
      PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "between the body's arguments"));
    }
  }
  if (args.size() != p.operands.size())
    return error_at(p.pos, str_cat(op.name, " has ", p.operands.size(), " operand(s) but its body ",
                                   args.size(), " argument(s)"));
  for (std::size_t k = 0; k < args.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(p.operands[k]));
    if (!matches_declared(s, args[k].type))
      return error_at(args[k].pos, str_cat(op.name, ": operand ", k, " has type ",
                                           tensor_type_name(s), " but the body takes ",
                                           tensor_type_name(args[k].type)));
    args[k].type = s;
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect('{', "to start the body"));
  PJRT_LITE_ASSIGN_OR_RETURN(Graph body,
                             ctx.reader.read_region_body(r, ctx, args, "manual_computation", nullptr));
  p.regions.push_back(std::move(body));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  return ok_status();
}

inline StatusOr<OpResult> build_manual_computation(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, TypeRule::kSame, op.name,
                                            p.pos));
  OpResult out;
  out.values = ctx.b.inline_graph(p.regions.at(0), p.operands);
  if (p.regions[0].outputs().empty()) out.values.clear();
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

}  // namespace pjrt_lite::stablehlo::detail
