#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The entries of the op table that add no node of their own: return ends a block, a call
// inlines its callee, and the check dialect (`check.expect_*`, or a custom call to one)
// becomes a Check (module.hpp). The annotations JAX leaves (sharding, placement, shape
// assertions, dynamic shapes) are read by annotations.hpp, jaxlib's LAPACK calls by
// lapack_calls.hpp.

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/stablehlo/detail/annotations.hpp"
#include "pjrt_lite/stablehlo/detail/lapack_calls.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_builders.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/module.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

// ---- return ---------------------------------------------------------------------------------

/// `return %a, %b : T, U` (or a bare `return`).
inline Status pretty_return(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  if (r.peek().is('{')) PJRT_LITE_RETURN_IF_ERROR(r.parse_dict().status());
  p.type.functional = true;
  if (p.operands.empty()) return ok_status();
  PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the types of ", op.name}));
  p.type.pos = r.lexer().next_pos();
  PJRT_LITE_ASSIGN_OR_RETURN(p.type.function.inputs, r.parse_type_list());
  return ok_status();
}

inline StatusOr<OpResult> build_return(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(
      check_listed_types(ctx, p.operands, p.type.function.inputs, op.name, p.type.pos));
  if (!p.type.function.results.empty())
    return error_at(p.type.pos, str_cat(op.name, " has no results, but its type lists some"));
  OpResult out;
  out.terminator = true;
  out.values = std::move(p.operands);
  return out;
}

// ---- Calls ----------------------------------------------------------------------------------

/// `call @f(%a, %b) : (T, U) -> R`.
inline Status pretty_call(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(
      Token callee, r.expect_kind(TokenKind::kSymbol, "a function name", {"after ", op.name}));
  AttrValue symbol;
  symbol.kind = AttrValue::Kind::kSymbol;
  symbol.text = Reader::symbol_name(callee.text);
  symbol.pos = callee.pos;
  p.attrs.emplace_back("callee", std::move(symbol));
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start the call's arguments"));
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the call's arguments"));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name));
  return ok_status();
}

inline StatusOr<OpResult> build_call(Context& ctx, const OpSyntax& op, OpParts& p) {
  const AttrValue* callee = find_attr(p.attrs, "callee");
  if (!callee || callee->kind != AttrValue::Kind::kSymbol)
    return error_at(p.pos, str_cat(op.name, " needs a callee = @function attribute"));
  return ctx.reader.inline_call(ctx, callee->text, p.operands, p.type, p.pos);
}

/// `"interpreter.run_parallel"(%a, ...) {programs = [[@f, ...], ...]} : (...) -> (...)`: its
/// results become new parameters of the function, its operands are recorded (module.hpp,
/// ParallelRun); the grid runs outside the graph.
inline StatusOr<OpResult> build_run_parallel(Context& ctx, const OpSyntax& op, OpParts& p) {
  if (ctx.parallel_runs == nullptr) return unsupported_at(p.pos, str_cat(op.name, " inside a region"));
  const AttrValue* programs = find_attr(p.attrs, "programs");
  if (programs == nullptr || programs->kind != AttrValue::Kind::kList || programs->list.empty())
    return error_at(p.pos, str_cat(op.name, " needs programs = [[@f, ...], ...]"));
  ParallelRun run;
  run.line = p.pos.line;
  for (const AttrValue& row : programs->list) {
    if (row.kind != AttrValue::Kind::kList || row.list.empty())
      return error_at(row.pos, "expected a list of functions [@f, ...] in programs");
    run.programs.emplace_back();
    for (const AttrValue& f : row.list) {
      if (f.kind != AttrValue::Kind::kSymbol) return error_at(f.pos, "expected a function @name in programs");
      run.programs.back().push_back(f.text);
    }
    if (run.programs.back().size() != run.programs.front().size())
      return error_at(row.pos, "every row of programs needs as many partitions as the first");
  }
  if (const AttrValue* infeed = find_attr(p.attrs, "infeed")) {
    if (infeed->kind != AttrValue::Kind::kList) return error_at(infeed->pos, "expected infeed = [@f, ...]");
    for (const AttrValue& f : infeed->list) {
      if (f.kind != AttrValue::Kind::kSymbol) return error_at(f.pos, "expected a function @name in infeed");
      run.infeed.push_back(f.text);
    }
  }
  if (!p.type.functional) return error_at(p.type.pos, str_cat(op.name, " needs a function type (...) -> (...)"));
  OpResult out;
  for (const Shape& s : p.type.function.results) {
    // Numbered after the function's arguments and earlier runs' results, in order: the
    // module reader fills result_parameters.
    out.values.push_back(ctx.b.parameter(s));
    run.result_parameters.push_back(-1);
  }
  PJRT_LITE_RETURN_IF_ERROR(ctx.b.status().with_context(op.name));
  ctx.parallel_runs->emplace_back(std::move(run), p.operands);
  return out;
}

// ---- Checks ---------------------------------------------------------------------------------

/// `check.expect_eq`, `check.expect_close_const`, ... : the kind, or nullopt.
inline std::optional<CheckKind> check_kind(std::string_view target, bool& is_const) {
  if (!target.starts_with("check.")) return std::nullopt;
  target.remove_prefix(6);
  is_const = target.ends_with("_const");
  if (is_const) target.remove_suffix(6);
  if (target == "expect_eq") return CheckKind::kEq;
  if (target == "expect_close") return CheckKind::kClose;
  if (target == "expect_almost_eq") return CheckKind::kAlmostEq;
  return std::nullopt;
}

inline std::string attr_text(const AttrValue& v) {
  switch (v.kind) {
    case AttrValue::Kind::kBool: return v.b ? "true" : "false";
    case AttrValue::Kind::kInt:
    case AttrValue::Kind::kFloat:
    case AttrValue::Kind::kString:
    case AttrValue::Kind::kSymbol: return v.text;
    case AttrValue::Kind::kEnum: return v.word;
    case AttrValue::Kind::kUnit: return "";
    default: return v.text.empty() ? v.word : v.text;
  }
}

/// Records a check; `attrs` are its attributes, the first dense one the expected value of a
/// *_const check.
inline StatusOr<OpResult> add_check(Context& ctx, std::string_view target,
                                    const std::vector<Value>& operands, const AttrDict& attrs,
                                    SourcePos pos) {
  bool is_const = false;
  std::optional<CheckKind> kind = check_kind(target, is_const);
  if (!kind) return unsupported_at(pos, str_cat("the check ", target));
  if (ctx.checks == nullptr)
    return unsupported_at(pos, str_cat("a check inside a region (", target, ")"));
  Check c;
  c.kind = *kind;
  c.target = std::string(target);
  c.line = pos.line;
  const std::size_t want = is_const ? 1 : 2;
  if (operands.size() != want)
    return error_at(pos, str_cat(target, " takes ", want, " operand(s), got ", operands.size()));
  c.actual = operands[0];
  std::shared_ptr<const Literal> expected;
  for (const auto& [key, value] : attrs) {
    if (value.kind == AttrValue::Kind::kDense && !expected) {
      expected = value.dense;
      continue;
    }
    if (key == "has_side_effect" || key == "call_target_name" || key == "api_version") continue;
    if (key == "tolerance" && (value.kind == AttrValue::Kind::kFloat || value.kind == AttrValue::Kind::kInt)) {
      // expect_almost_eq's own tolerance (`tolerance = 0.1`).
      c.tolerance = std::strtod(value.text.c_str(), nullptr);
      if (!(c.tolerance >= 0))
        return error_at(value.pos, str_cat(target, ": the tolerance ", value.text, " is not a non-negative number"));
    }
    c.attributes.emplace_back(key, attr_text(value));
  }
  if (is_const) {
    if (!expected)
      return error_at(pos, str_cat(target, " needs the expected value as a dense<...> attribute"));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(c.actual));
    if (!s.same_type_and_dims(expected->shape()))
      return error_at(
          pos, str_cat(target, ": the checked value has type ", tensor_type_name(s),
                       " but the expected constant has ", tensor_type_name(expected->shape())));
    c.expected_literal = *expected;
  } else {
    c.expected = operands[1];
    PJRT_LITE_ASSIGN_OR_RETURN(Shape a, ctx.b.shape(c.actual));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape e, ctx.b.shape(c.expected));
    if (!a.same_type_and_dims(e))
      return error_at(pos, str_cat(target, ": the checked value has type ", tensor_type_name(a),
                                   " but the expected value has ", tensor_type_name(e)));
  }
  ctx.checks->push_back(std::move(c));
  return OpResult{};
}

/// The check dialect's own form: `check.expect_eq %a, %b : T`,
/// `check.expect_eq_const %a, dense<...> : T`, with optional `, key = value` fields; the
/// operands and fields may also stand in parentheses, `check.expect_eq_const(%a, dense<...> :
/// T) : T`.
inline Status pretty_check(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  const bool parenthesized = r.consume_if('(');
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  std::optional<AttrValue> literal;
  while (r.consume_if(',')) {
    if (r.peek().is_ident("dense")) {
      PJRT_LITE_ASSIGN_OR_RETURN(literal, r.parse_attr_value());  // reads ': type' too
      continue;
    }
    PJRT_LITE_ASSIGN_OR_RETURN(Token key,
                               r.expect_kind(TokenKind::kIdent, "a field name", {"in ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', {"after ", key.text}));
    PJRT_LITE_ASSIGN_OR_RETURN(AttrValue v, r.parse_attr_value());
    p.attrs.emplace_back(std::string(key.text), std::move(v));
  }
  if (parenthesized) PJRT_LITE_RETURN_IF_ERROR(r.expect(')', {"after the operands of ", op.name}));
  if (r.peek().is('{')) {
    PJRT_LITE_ASSIGN_OR_RETURN(AttrDict d, r.parse_dict());
    for (auto& kv : d) p.attrs.push_back(std::move(kv));
  }
  if (!literal || r.peek().is(':')) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the type of ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.parse_op_type().status());
  }
  // The literal is the expected value: first among the dense attributes.
  if (literal) p.attrs.emplace(p.attrs.begin(), "value", *std::move(literal));
  return ok_status();
}

inline StatusOr<OpResult> build_check(Context& ctx, const OpSyntax& op, OpParts& p) {
  return add_check(ctx, op.name, p.operands, p.attrs, p.pos);
}

// ---- Custom calls ---------------------------------------------------------------------------

/// The high-level ops that XLA's serializer keeps as custom calls when JAX exports a program
/// (chlo.top_k becomes `stablehlo.custom_call @mhlo.topk(%x) {mhlo.attributes = {k = 3 : i64,
/// largest = true}, mhlo.version = 1 : i64}`, chlo.erf `@mhlo.erf(%x)`).
inline bool is_xla_high_level_call(std::string_view target) {
  return target == "mhlo.topk" || target == "mhlo.erf";
}

/// The custom-call targets read: JAX's annotations, jaxlib's LAPACK calls (lapack_calls.hpp),
/// XLA's high-level ops and the check dialect's.
inline bool is_known_custom_call(std::string_view target) {
  bool is_const = false;
  return is_annotation_custom_call(target) || lapack_target(target).has_value() ||
         is_xla_high_level_call(target) || check_kind(target, is_const).has_value() ||
         target == "check.eq";
}

/// `@mhlo.topk` and `@mhlo.erf`, read as the CHLO ops they hold (top_k of the largest
/// elements; mhlo.version 1, the only one there is).
inline StatusOr<OpResult> build_xla_high_level_call(Context& ctx, std::string_view target, OpParts& p) {
  const std::string what = str_cat("stablehlo.custom_call @", target);
  if (p.operands.size() != 1) return error_at(p.pos, str_cat(what, " takes one operand, got ", p.operands.size()));
  if (const AttrValue* v = find_attr(p.attrs, "mhlo.version");
      v != nullptr && (v->kind != AttrValue::Kind::kInt || v->i != 1))
    return unsupported_at(v->pos, str_cat(what, " of an mhlo.version other than 1"));
  const AttrValue* attrs = find_attr(p.attrs, "mhlo.attributes");
  if (attrs != nullptr && attrs->kind != AttrValue::Kind::kDict)
    return error_at(attrs->pos, str_cat(what, ": mhlo.attributes must be a dictionary"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, TypeRule::kSame, what, p.pos));
  OpCode code = OpCode::kErf;
  Attributes a = NoAttrs{};
  if (target == "mhlo.topk") {
    const AttrValue* k = attrs != nullptr ? attrs->find("k") : nullptr;
    if (k == nullptr || k->kind != AttrValue::Kind::kInt)
      return error_at(p.pos, str_cat(what, " needs mhlo.attributes = {k = N : i64, ...}"));
    const AttrValue* largest = attrs->find("largest");
    if (largest != nullptr && (largest->kind != AttrValue::Kind::kBool || !largest->b))
      return unsupported_at(largest->pos, str_cat(what, " with largest = false"));
    code = OpCode::kTopK;
    a = TopKAttrs{k->i};
  }
  PJRT_LITE_RETURN_IF_ERROR(check_chlo_operands(ctx, code, p.operands, what, p.pos));
  OpResult out;
  out.values = ctx.b.op(code, p.operands, std::move(a));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, what, p.pos));
  return out;
}

/// The absolute tolerance of `custom_call @check.eq` on floating-point values, as StableHLO's
/// interpreter compares them (integers must be equal).
inline constexpr double kCheckEqTolerance = 1e-4;

/// `%ok = stablehlo.custom_call @check.eq(%actual, %expected) : (T, T) -> tensor<i1>`, the
/// older check that JAX's quantized test programs use: recorded as expect_eq for integers and
/// booleans and as expect_almost_eq with kCheckEqTolerance otherwise, and returning whether
/// it holds, computed in the graph (every element equal, or within the tolerance).
inline StatusOr<OpResult> build_check_eq(Context& ctx, OpParts& p) {
  if (p.operands.size() != 2)
    return error_at(p.pos, str_cat("check.eq takes 2 operands, got ", p.operands.size()));
  if (p.type.function.results.size() != 1 || p.type.function.results[0].dtype() != DType::kPred ||
      p.type.function.results[0].rank() != 0)
    return error_at(p.type.pos, "check.eq returns one tensor<i1>");
  PJRT_LITE_ASSIGN_OR_RETURN(Shape a, ctx.b.shape(p.operands[0]));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape e, ctx.b.shape(p.operands[1]));
  if (!a.same_type_and_dims(e))
    return error_at(p.pos, str_cat("check.eq: the checked value has type ", tensor_type_name(a),
                                   " but the expected value has ", tensor_type_name(e)));
  Check c;
  c.target = "check.eq";
  c.line = p.pos.line;
  c.actual = p.operands[0];
  c.expected = p.operands[1];
  const bool exact = !is_floating(a.dtype()) && !is_complex(a.dtype());
  c.kind = exact ? CheckKind::kEq : CheckKind::kAlmostEq;
  c.tolerance = kCheckEqTolerance;
  ctx.checks->push_back(std::move(c));
  GraphBuilder& b = ctx.b;
  Value holds;
  if (exact) {
    holds = b.compare(p.operands[0], p.operands[1], ComparisonDirection::kEq);
  } else {
    const Value diff = b.abs(b.subtract(p.operands[0], p.operands[1]));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape d, b.shape(diff));
    Literal tol = *Literal::scalar(kCheckEqTolerance).convert(d.dtype());
    holds = b.compare(diff, b.broadcast_in_dim(b.constant(std::move(tol)), {d.dims().begin(), d.dims().end()}, {}),
                      ComparisonDirection::kLe);
  }
  std::vector<std::int64_t> all(static_cast<std::size_t>(a.rank()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  OpResult out;
  out.values.push_back(b.reduce(holds, b.constant(true), OpCode::kAnd, std::move(all)));
  PJRT_LITE_RETURN_IF_ERROR(b.status().with_context("check.eq"));
  return out;
}

/// `stablehlo.custom_call @target(%a, %b) {attrs} : (T, T) -> ()`.
inline Status pretty_custom_call(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(
      Token target,
      r.expect_kind(TokenKind::kSymbol, "a call target such as @foo", {"after ", op.name}));
  AttrValue name;
  name.kind = AttrValue::Kind::kString;
  name.text = Reader::symbol_name(target.text);
  name.pos = target.pos;
  // Decided before reading further: an unknown target's operands may be anything.
  if (!is_known_custom_call(name.text))
    return unsupported_at(p.pos, str_cat(op.name, " @", name.text));
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start the custom call's operands"));
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the custom call's operands"));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  p.attrs.emplace(p.attrs.begin(), "call_target_name", std::move(name));
  return ok_status();
}

inline StatusOr<OpResult> build_custom_call(Context& ctx, const OpSyntax& op, OpParts& p) {
  const AttrValue* target = find_attr(p.attrs, "call_target_name");
  if (!target || target->kind != AttrValue::Kind::kString)
    return error_at(p.pos, "stablehlo.custom_call needs a call_target_name = \"...\" attribute");
  if (!is_known_custom_call(target->text))
    return unsupported_at(p.pos, str_cat(op.name, " @", target->text));
  if (is_annotation_custom_call(target->text))
    return build_annotation_custom_call(ctx, target->text, p);
  if (lapack_target(target->text)) return build_lapack_call(ctx, target->text, p);
  if (is_xla_high_level_call(target->text)) return build_xla_high_level_call(ctx, target->text, p);
  if (!p.type.functional)
    return error_at(p.type.pos, "a custom call's type must be a function type (...) -> (...)");
  if (target->text == "check.eq") {
    if (ctx.checks == nullptr) return unsupported_at(p.pos, "a check inside a region (check.eq)");
    return build_check_eq(ctx, p);
  }
  if (!p.type.function.results.empty())
    return error_at(p.type.pos,
                    str_cat(target->text, " returns nothing, but its type lists results"));
  PJRT_LITE_RETURN_IF_ERROR(
      declared_types(ctx, p.type, p.operands, TypeRule::kSame, op.name, p.pos).status());
  return add_check(ctx, target->text, p.operands, p.attrs, p.pos);
}

}  // namespace pjrt_lite::stablehlo::detail
