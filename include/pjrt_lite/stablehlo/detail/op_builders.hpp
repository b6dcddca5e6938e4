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

#include "pjrt_lite/core/dtype.hpp"
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
#include "pjrt_lite/stablehlo/types.hpp"

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

/// stablehlo.collective_reduce (cross_replica: channel_id <= 0): each group's reduction by the
/// op's computation, an all_reduce over the groups, kept by the group's root (its first
/// member, or with has_dynamic_root the member at position roots[i] for result i, the roots
/// being the last operand) and zeros elsewhere. The root test is IR arithmetic on replica_id
/// and the groups as a constant, so it needs no grid. Across partitions (channel_id > 0) a
/// group spans the grid's replicas, which the text does not give: UNIMPLEMENTED.
inline StatusOr<OpResult> build_collective_reduce(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  if (p.regions.size() != 1) return error_at(p.pos, str_cat(op.name, " takes one region, its computation"));
  OpSyntax as_all_reduce = op;
  as_all_reduce.code = OpCode::kAllReduce;
  PJRT_LITE_ASSIGN_OR_RETURN(Attributes read, read_collective(ctx, as_all_reduce, p));
  const CollectiveAttrs groups = std::get<CollectiveAttrs>(read);
  if (groups.channel_id > 0)
    return unsupported_at(p.pos, str_cat(op.name, " across partitions (channel_id > 0)"));
  bool dynamic_root = false;
  if (const AttrValue* root = find_attr(p.attrs, "has_dynamic_root")) {
    if (root->kind == AttrValue::Kind::kUnit) {
      dynamic_root = true;
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(dynamic_root, bool_attr(p.attrs, "has_dynamic_root"));
    }
  }
  std::vector<Value> data = p.operands;
  GraphBuilder& b = ctx.b;
  Value roots;
  if (dynamic_root) {
    if (data.size() < 2) return error_at(p.pos, str_cat(op.name, " with has_dynamic_root takes data and then its roots"));
    roots = data.back();
    data.pop_back();
    PJRT_LITE_ASSIGN_OR_RETURN(Shape rs, b.shape(roots));
    if (rs.dtype() != DType::kS32 || rs.rank() != 1 || rs.dim(0) != static_cast<std::int64_t>(data.size()))
      return error_at(p.pos, str_cat(op.name, ": the roots must be an s32[", data.size(), "], one per data operand, not ",
                                     tensor_type_name(rs)));
  }
  std::vector<Value> reduced = b.op(OpCode::kAllReduce, data, groups, {std::move(p.regions[0])});
  // This replica's position in its group, and whether it is in one (empty replica_groups: one
  // group of every replica, in order).
  const Value me = b.convert(b.replica_id(), DType::kS64);
  Value position = me, in_group = b.constant(true);
  if (groups.group_size > 0) {
    const auto rows = static_cast<std::int64_t>(groups.group_count());
    PJRT_LITE_ASSIGN_OR_RETURN(Literal table, Literal::from_span<std::int64_t>(groups.groups, {rows, groups.group_size}));
    const Shape grid(DType::kS64, {rows, groups.group_size});
    const Value mine = b.compare(b.constant(std::move(table)), b.broadcast_in_dim(me, {rows, groups.group_size}, {}),
                                 ComparisonDirection::kEq);
    const Value column = b.iota(grid, 1);
    position = b.reduce(b.select(mine, column, b.broadcast_in_dim(b.constant(std::int64_t{0}), {rows, groups.group_size}, {})),
                        b.constant(std::int64_t{0}), OpCode::kAdd, {0, 1});
    in_group = b.reduce(mine, b.constant(false), OpCode::kOr, {0, 1});
  }
  OpResult out;
  for (std::size_t i = 0; i < data.size(); ++i) {
    Value root = b.constant(std::int64_t{0});
    if (dynamic_root)
      root = b.convert(b.reshape(b.slice(roots, {static_cast<std::int64_t>(i)}, {static_cast<std::int64_t>(i) + 1}), {}),
                       DType::kS64);
    const Value keep = b.and_(in_group, b.compare(position, root, ComparisonDirection::kEq));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, b.shape(reduced[i]));
    const std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end());
    out.values.push_back(b.select(b.broadcast_in_dim(keep, dims, {}), reduced[i],
                                  b.broadcast_in_dim(b.scalar(s.dtype(), 0), dims, {})));
  }
  PJRT_LITE_RETURN_IF_ERROR(b.status().with_context(op.name));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

/// chlo.mulhi: the high half of the full-width product of two integers of one type, signed
/// or unsigned, lowered to IR ops. Up to 32 bits the product is exact in 64 bits: widen,
/// multiply, shift the high half down, narrow. At 64 bits, the unsigned product of the
/// 32-bit halves (schoolbook, every partial sum below 2^64); a signed operand is its
/// unsigned bits minus 2^64 when negative, so the signed high half is the unsigned one less
/// the other operand (mod 2^64) for each negative operand.
inline StatusOr<OpResult> build_mulhi(Context& ctx, const OpSyntax& op, OpParts& p) {
  if (!p.regions.empty()) return error_at(p.pos, str_cat(op.name, " takes no regions"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  if (p.operands.size() != 2) return error_at(p.pos, str_cat(op.name, " takes 2 operands"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape lhs, ctx.b.shape(p.operands[0]));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape rhs, ctx.b.shape(p.operands[1]));
  if (!lhs.same_type_and_dims(rhs))
    return error_at(p.pos, str_cat(op.name, " takes two operands of one type, not ", tensor_type_name(lhs), " and ",
                                   tensor_type_name(rhs)));
  const DType t = lhs.dtype();
  if (!is_integral(t) || is_pred(t))
    return error_at(p.pos, str_cat(op.name, " takes integers, not ", element_type_name(t)));
  GraphBuilder& b = ctx.b;
  const std::vector<std::int64_t> dims(lhs.dims().begin(), lhs.dims().end());
  auto splat = [&](DType d, double v) { return b.broadcast_in_dim(b.scalar(d, v), dims, {}); };
  const bool is_signed = is_signed_integral(t);
  const int width = bit_width(t);
  Value x = p.operands[0], y = p.operands[1], high;
  if (width <= 32) {
    const DType wide = is_signed ? DType::kS64 : DType::kU64;
    const Value product = b.multiply(b.convert(x, wide), b.convert(y, wide));
    const Value shift = splat(wide, width);
    high = b.convert(is_signed ? b.shift_right_arithmetic(product, shift) : b.shift_right_logical(product, shift), t);
  } else {
    constexpr DType u = DType::kU64;
    const Value ux = is_signed ? b.bitcast_convert(x, u) : x, uy = is_signed ? b.bitcast_convert(y, u) : y;
    const Value mask = splat(u, 4294967295.0), half = splat(u, 32);
    const Value x_lo = b.and_(ux, mask), x_hi = b.shift_right_logical(ux, half);
    const Value y_lo = b.and_(uy, mask), y_hi = b.shift_right_logical(uy, half);
    const Value lo_lo = b.multiply(x_lo, y_lo), lo_hi = b.multiply(x_lo, y_hi);
    const Value hi_lo = b.multiply(x_hi, y_lo), hi_hi = b.multiply(x_hi, y_hi);
    // The carry out of the low 64 bits: the middle column's sum, each term below 2^32.
    const Value middle = b.add(b.add(b.shift_right_logical(lo_lo, half), b.and_(lo_hi, mask)), b.and_(hi_lo, mask));
    high = b.add(b.add(b.add(hi_hi, b.shift_right_logical(lo_hi, half)), b.shift_right_logical(hi_lo, half)),
                 b.shift_right_logical(middle, half));
    if (is_signed) {
      const Value zero = splat(t, 0), uzero = splat(u, 0);
      high = b.subtract(high, b.select(b.compare(x, zero, ComparisonDirection::kLt), uy, uzero));
      high = b.subtract(high, b.select(b.compare(y, zero, ComparisonDirection::kLt), ux, uzero));
      high = b.bitcast_convert(high, t);
    }
  }
  OpResult out;
  out.values = {high};
  PJRT_LITE_RETURN_IF_ERROR(b.status().with_context(op.name));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

/// Whether every value of `from` is a value of `to` (float and complex types only).
constexpr bool converts_exactly(DType from, DType to) {
  if (from == to) return true;
  auto width = [](DType t) { return t == DType::kF64 || t == DType::kC128 ? 64 : t == DType::kF32 || t == DType::kC64 ? 32 : 16; };
  if (is_complex(from) && !is_complex(to)) return false;
  // f16 and bf16 hold different values; each converts exactly to f32 and wider.
  return width(to) > width(from) || (width(to) == width(from) && width(to) > 16 && is_complex(to));
}

/// The element type a dot_general, dot or convolution computes in. The spec lets the result's
/// element type differ from the operands' (i8 x i8 -> i32, bf16 x bf16 -> f32, f32 x f32 ->
/// f64): the products and their sum are then taken in the result's type, as XLA does, so an
/// integer product wraps only in the result's width. A floating result that cannot hold an
/// operand's values exactly (f32 x f32 -> bf16) computes in f32 or f64 and rounds once at
/// the end. Integer results of inexact operands, and pred results of numbers, are refused.
inline StatusOr<DType> product_type(DType lhs, DType rhs, DType result, std::string_view op, SourcePos pos) {
  if (lhs == result && rhs == result) return result;
  const auto refuse = [&] {
    return unsupported_at(pos, str_cat(op, " of ", element_type_name(lhs), " and ", element_type_name(rhs),
                                       " operands with an ", element_type_name(result), " result"));
  };
  if (is_pred(result) || (is_integral(result) && (is_inexact(lhs) || is_inexact(rhs)))) return refuse();
  if (is_integral(result)) return result;
  DType compute = result;
  for (DType t : {lhs, rhs}) {
    if (!is_inexact(t) || converts_exactly(t, compute)) continue;
    if (is_complex(t) && !is_complex(compute)) return refuse();
    compute = is_complex(compute) ? DType::kC128 : t == DType::kF64 ? DType::kF64 : std::max(compute, DType::kF32);
    if (!converts_exactly(t, compute)) compute = is_complex(compute) ? DType::kC128 : DType::kF64;
  }
  return compute;
}

/// dot_general, dot and convolution: one node, whose operands convert first when the declared
/// result's element type is not theirs (product_type says to what), and whose result then
/// converts to the declared type if it computed in another. A stablehlo.dot contracts lhs's
/// last dimension with rhs's first.
inline StatusOr<OpResult> build_product(Context& ctx, const OpSyntax& op, OpParts& p) {
  if (!p.regions.empty()) return error_at(p.pos, str_cat(op.name, " takes no regions"));
  if (op.attributes == nullptr && find_attr(p.attrs, "algorithm"))
    return unsupported_at(p.pos, str_cat(op.name, " with an algorithm"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  if (p.operands.size() != 2) return error_at(p.pos, str_cat(op.name, " takes 2 operands"));
  if (declared.size() != 1) return error_at(p.pos, str_cat(op.name, " has one result"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape lhs, ctx.b.shape(p.operands[0]));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape rhs, ctx.b.shape(p.operands[1]));
  Attributes attrs = DotDimensionNumbers{{}, {}, {lhs.rank() - 1}, {0}};
  if (op.attributes != nullptr) {
    PJRT_LITE_ASSIGN_OR_RETURN(attrs, op.attributes(ctx, op, p));
  }
  const DType result = declared[0].dtype();
  PJRT_LITE_ASSIGN_OR_RETURN(DType compute, product_type(lhs.dtype(), rhs.dtype(), result, op.name, p.pos));
  std::vector<Value> operands = p.operands;
  for (Value& v : operands) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(v));
    if (s.dtype() != compute) v = ctx.b.convert(v, compute);
  }
  OpResult out;
  out.values = ctx.b.op(op.code, operands, std::move(attrs));
  if (compute != result && out.values.size() == 1) out.values[0] = ctx.b.convert(out.values[0], result);
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
