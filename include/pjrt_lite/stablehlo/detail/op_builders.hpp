#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The builders of the op table: how an op read into OpParts is added to the graph. Most ops
// are one node (build_node); stablehlo.dot and stablehlo.broadcast are nodes of other ops,
// and while, case and if turn the outside values their regions use into operands.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// The CHLO ops the IR has only in real form (erf, lgamma, top_k, ...) on complex numbers
/// are valid CHLO the IR has no op for: UNIMPLEMENTED.
inline Status check_chlo_operands(const Context& ctx, OpCode op, const std::vector<Value>& operands,
                                  std::string_view name, SourcePos pos) {
  if (!is_chlo(op) || is_in(DType::kC64, accepted_types(op))) return ok_status();
  for (Value v : operands) {
    StatusOr<Shape> s = ctx.b.shape(v);
    if (s.ok() && is_complex(s->dtype()))
      return unsupported_at(pos, str_cat(name, " on complex numbers"));
  }
  return ok_status();
}

/// One node of op.code: the declared type checked, the attributes read by op.attributes.
inline StatusOr<OpResult> build_node(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(check_chlo_operands(ctx, op.code, p.operands, op.name, p.pos));
  if (!has_body(op.code) && !p.regions.empty())
    return error_at(p.pos, str_cat(op.name, " takes no regions"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  Attributes attrs = NoAttrs{};
  if (op.attributes != nullptr) {
    PJRT_LITE_ASSIGN_OR_RETURN(attrs, op.attributes(ctx, op, p));
  }
  OpResult out;
  out.values = ctx.b.op(op.code, p.operands, std::move(attrs), std::move(p.regions));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

/// stablehlo.dot: dot_general contracting lhs's last dimension with rhs's first.
inline StatusOr<OpResult> build_dot(Context& ctx, const OpSyntax& op, OpParts& p) {
  if (find_attr(p.attrs, "algorithm"))
    return unsupported_at(p.pos, "stablehlo.dot with an algorithm");
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  if (p.operands.size() != 2) return error_at(p.pos, str_cat(op.name, " takes 2 operands"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape lhs, ctx.b.shape(p.operands[0]));
  DotDimensionNumbers dn{{}, {}, {lhs.rank() - 1}, {0}};
  OpResult out;
  out.values = ctx.b.op(OpCode::kDotGeneral, p.operands, std::move(dn));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

/// stablehlo.broadcast: broadcast_in_dim with the new dimensions (broadcast_sizes) in front.
inline StatusOr<OpResult> build_broadcast(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes,
                             int_list_attr(p.attrs, "broadcast_sizes", op.name, p.pos));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  if (p.operands.size() != 1) return error_at(p.pos, str_cat(op.name, " takes 1 operand"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape operand, ctx.b.shape(p.operands[0]));
  std::vector<std::int64_t> mapping;
  for (std::int64_t d = 0; d < operand.rank(); ++d)
    mapping.push_back(static_cast<std::int64_t>(sizes.size()) + d);
  sizes.insert(sizes.end(), operand.dims().begin(), operand.dims().end());
  OpResult out;
  out.values = ctx.b.op(OpCode::kBroadcastInDim, p.operands,
                        BroadcastInDimAttrs{std::move(sizes), std::move(mapping)});
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

/// `region` with parameters `parameters` declared first, in number order: its parameter k
/// becomes parameters[parameter_of[k]], and the parameters numbered in `pass_through` are
/// appended to its outputs.
inline StatusOr<Graph> rebuild_region(const Graph& region, const std::vector<Shape>& parameters,
                                      const std::vector<std::size_t>& parameter_of,
                                      const std::vector<std::size_t>& pass_through) {
  GraphBuilder b(region.name());
  std::vector<Value> values;
  for (std::size_t k = 0; k < parameters.size(); ++k)
    values.push_back(b.parameter(static_cast<std::int64_t>(k), parameters[k]));
  std::vector<Value> args;
  for (std::size_t k : parameter_of) args.push_back(values[k]);
  std::vector<Value> outputs = b.inline_graph(region, args);
  for (std::size_t k : pass_through) outputs.push_back(values[k]);
  return b.build(outputs);
}

/// while, case and if from their operands and regions. StableHLO's regions may use outside
/// values (p.captures, per region); the IR's regions are closed, so those values become
/// operands: extra loop-carried values that the body passes through unchanged for while, the
/// operands after the selector for case and if. Each region then takes the same parameters,
/// in one order: the union of the captures in order of first use, region by region.
inline StatusOr<OpResult> build_control_flow(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  const std::string_view name = op.name;
  const SourcePos pos = p.pos;
  const std::vector<Value>& operands = p.operands;
  std::vector<Graph>& regions = p.regions;
  const bool is_while = op.code == OpCode::kWhile;
  if (!body_count_fits(op.code, regions.size()))
    return error_at(pos, str_cat(name, " needs ", has_variadic_bodies(op.code) ? "at least " : "",
                                 body_count(op.code), " region(s), got ", regions.size()));
  if (!is_while && operands.size() != 1)
    return error_at(
        pos, str_cat(name, " takes one operand (the ",
                     op.code == OpCode::kIf ? "predicate" : "index", "), got ", operands.size()));
  // Block arguments: the loop-carried values for while, none for case and if.
  const std::size_t args = is_while ? operands.size() : 0;
  std::vector<Value> all = operands;
  std::vector<Shape> parameters;
  for (std::size_t k = 0; k < args; ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(operands[k]));
    parameters.push_back(std::move(s));
  }
  std::vector<Value> captured;  // the union, in order
  for (const std::vector<Value>& list : p.captures)
    for (Value v : list)
      if (std::find(captured.begin(), captured.end(), v) == captured.end()) {
        captured.push_back(v);
        all.push_back(v);
        PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(v));
        parameters.push_back(std::move(s));
      }
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const std::vector<Value>& list = p.captures[k];
    const std::size_t params = static_cast<std::size_t>(regions[k].num_parameters());
    if (params != args + list.size())
      return error_at(pos, str_cat(name, ": region ", k, " takes ", params - list.size(),
                                   " argument(s) but ", args, " are passed"));
    if (captured.empty()) continue;
    std::vector<std::size_t> parameter_of;
    for (std::size_t j = 0; j < args; ++j) parameter_of.push_back(j);
    for (Value v : list)
      parameter_of.push_back(
          args + static_cast<std::size_t>(std::find(captured.begin(), captured.end(), v) -
                                          captured.begin()));
    std::vector<std::size_t> pass_through;
    if (is_while && k == 1)
      for (std::size_t j = args; j < parameters.size(); ++j) pass_through.push_back(j);
    StatusOr<Graph> rebuilt = rebuild_region(regions[k], parameters, parameter_of, pass_through);
    if (!rebuilt.ok()) return error_at(pos, rebuilt.status().message());
    regions[k] = std::move(rebuilt).value();
  }
  OpResult out;
  out.values = ctx.b.op(op.code, all, NoAttrs{}, std::move(regions));
  if (is_while) out.values.resize(std::min(out.values.size(), operands.size()));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
  return out;
}

}  // namespace pjrt_lite::stablehlo::detail
