#pragma once
// Arithmetic on the narrow types (s2/s4/u2/u4, f8/f6/f4) computes through a wide type: the
// operands convert up, the op runs on the wide type, and the result converts back, rounding to
// nearest even (floats) or wrapping (integers). So no kernel is instantiated per narrow type:
// only convert and bitcast_convert see them. narrow_compute_dtype is the rule both the
// reference interpreter (op by op) and widen_narrow_types (for backends, on a whole graph) use.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/rewriter.hpp"

namespace pjrt_lite::inline v0_1 {

/// True for the ops that compute on element values (arithmetic, comparisons, contractions,
/// iota, ...), as opposed to those that move elements, convert them, or run regions.
constexpr bool computes_on_values(OpCode op) {
  return is_unary(op) || is_binary(op) || op == OpCode::kIota || op == OpCode::kCompare ||
         op == OpCode::kClamp || op == OpCode::kReducePrecision || op == OpCode::kDotGeneral ||
         op == OpCode::kConvolution || op == OpCode::kTopK || op == OpCode::kFft ||
         op == OpCode::kTriangularSolve || op == OpCode::kLinalg;
}

/// The type a value of narrow dtype `t` computes in as an operand or result of `op`: f32 for
/// the narrow floats; for the narrow integers s32 or u32 as their signedness says, except that
/// the bit-level ops see the bits zero-extended (shift_right_logical, popcnt,
/// count_leading_zeros on s4 act on its 4 bits) and shift_right_arithmetic sign-extended (the
/// top bit of u4 is its sign fill, as for u8). Any other dtype is its own.
constexpr DType narrow_compute_dtype(OpCode op, DType t) {
  if (!is_narrow_integral(t)) return wide_dtype(t);
  switch (op) {
    case OpCode::kShiftRightLogical:
    case OpCode::kPopcnt:
    case OpCode::kCountLeadingZeros: return DType::kU32;
    case OpCode::kShiftRightArithmetic: return DType::kS32;
    default: return wide_dtype(t);
  }
}

/// The narrow integer of the same width and the other signedness (s4 <-> u4, s2 <-> u2).
constexpr DType narrow_integral_twin(DType t) {
  switch (t) {
    case DType::kS2: return DType::kU2;
    case DType::kU2: return DType::kS2;
    case DType::kS4: return DType::kU4;
    default: return DType::kS4;
  }
}

/// True when `node` has an operand or result of a narrow dtype.
inline bool touches_narrow(const Node& node, const Graph& graph) {
  for (Value v : node.operands)
    if (is_narrow(graph.shape(v).dtype())) return true;
  for (const Shape& r : node.results)
    if (is_narrow(r.dtype())) return true;
  return false;
}

namespace detail {

/// `node`'s attributes for its widened form: iota's names its result type.
inline Attributes widened_attrs(const Node& node) {
  if (node.op != OpCode::kIota) return node.attrs;
  IotaAttrs a = node.attr<IotaAttrs>();
  std::vector<std::int64_t> dims(a.shape.dims().begin(), a.shape.dims().end());
  a.shape = Shape(narrow_compute_dtype(node.op, a.shape.dtype()), std::move(dims));
  return a;
}

/// The conversion of narrow integer bits to `wide` for narrow_compute_dtype: a convert, with
/// a reinterpretation between s4 and u4 first when the wide type's signedness differs.
inline Literal widen_literal(const Literal& x, DType wide) {
  DType from = x.dtype();
  if (!is_narrow_integral(from) || is_signed_integral(from) == is_signed_integral(wide)) return *x.convert(wide);
  return *x.convert(narrow_integral_twin(from))->convert(wide);  // integer to integer wraps: the same bits
}

}  // namespace detail

/// A copy of `graph` in which every op with narrow operands or results that is not a
/// parameter, constant, convert, bitcast_convert, while, case or if computes through
/// narrow_compute_dtype between converts (count_leading_zeros also subtracts the bits the wide
/// type adds). Element moves (reshape, slice, ...) widen too, so backends need no kernel for
/// them; they keep every value, though a NaN of an IEEE-like f8 comes back as the format's
/// quiet NaN. The other ops with regions (reduce, reduce_window, sort, scatter,
/// select_and_scatter, all_reduce, reduce_scatter) widen with their bodies (widen_body): each
/// step of the body rounds to the narrow type, as the spec (and the reference interpreter)
/// does. Bodies of while, case and if are left for the backend to widen when it compiles them.
inline StatusOr<Graph> widen_narrow_types(const Graph& graph);

namespace detail {

/// `body` (a region of reduce, sort, scatter, ...) taking and returning the wide types of its
/// narrow scalars: a narrow parameter arrives wide and converts down (exactly: it holds a
/// narrow value), a narrow result converts up after the body's own ops, which
/// widen_narrow_types computes wide op by op, each rounded back to the narrow type. So every
/// step the op's loop takes rounds as the spec says, though the loop itself runs wide.
inline StatusOr<Graph> widen_body(const Graph& body) {
  GraphParts parts;
  parts.name = std::string(body.name());
  std::vector<std::int32_t> moved(static_cast<std::size_t>(body.num_nodes()));
  auto push = [&](Node n) {
    parts.nodes.push_back(std::move(n));
    return static_cast<std::int32_t>(parts.nodes.size() - 1);
  };
  auto convert_node = [](Value v, const Shape& from, DType to) {
    std::vector<std::int64_t> dims(from.dims().begin(), from.dims().end());
    return Node{OpCode::kConvert, {v}, ConvertAttrs{to}, {Shape(to, std::move(dims))}, {}};
  };
  for (std::int64_t i = 0; i < body.num_nodes(); ++i) {
    Node n = body.node(i);
    for (Value& v : n.operands) v.node = moved[static_cast<std::size_t>(v.node)];
    const bool narrow_parameter = n.op == OpCode::kParameter && is_narrow(n.results[0].dtype());
    if (!narrow_parameter) {
      moved[static_cast<std::size_t>(i)] = push(std::move(n));
      continue;
    }
    const Shape narrow = n.results[0];
    std::vector<std::int64_t> dims(narrow.dims().begin(), narrow.dims().end());
    n.results[0] = Shape(wide_dtype(narrow.dtype()), std::move(dims));
    const Shape wide = n.results[0];
    ParameterAttrs attrs = n.attr<ParameterAttrs>();
    attrs.shape = wide;
    n.attrs = std::move(attrs);
    const std::int32_t p = push(std::move(n));
    moved[static_cast<std::size_t>(i)] = push(convert_node(Value{p, 0, 0}, wide, narrow.dtype()));
  }
  for (Value v : body.outputs()) {
    Value out = v;
    out.node = moved[static_cast<std::size_t>(v.node)];
    const Shape& s = body.shape(v);
    if (is_narrow(s.dtype())) out = Value{push(convert_node(out, s, wide_dtype(s.dtype()))), 0, 0};
    parts.outputs.push_back(out);
  }
  PJRT_LITE_ASSIGN_OR_RETURN(Graph g, make_verified_graph(std::move(parts)));
  return widen_narrow_types(g);
}

}  // namespace detail

inline StatusOr<Graph> widen_narrow_types(const Graph& graph) {
  bool any = false;
  for (const Node& n : graph.nodes()) any = any || touches_narrow(n, graph);
  if (!any) return graph;
  GraphRewriter rw(graph);
  auto convert = [&](Value v, DType to) {
    const Shape& s = rw.shape(v);
    std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end());
    return rw.append(Node{OpCode::kConvert, {v}, ConvertAttrs{to}, {Shape(to, std::move(dims))}, {}})[0];
  };
  for (std::int64_t i = 0; i < graph.num_nodes(); ++i) {
    const Node& n = graph.node(i);
    const bool keep = n.op == OpCode::kParameter || n.op == OpCode::kConstant || n.op == OpCode::kConvert ||
                      n.op == OpCode::kBitcastConvert || is_control_flow(n.op);
    if (keep || !touches_narrow(n, graph)) {
      rw.copy(i);
      continue;
    }
    std::vector<Graph> bodies;
    for (const Graph& body : n.bodies) {
      PJRT_LITE_ASSIGN_OR_RETURN(Graph wide_body, detail::widen_body(body));
      bodies.push_back(std::move(wide_body));
    }
    std::vector<Value> operands;
    for (Value v : n.operands) {
      const Value mapped = rw.map(v);
      const DType t = graph.shape(v).dtype();
      if (!is_narrow(t)) {
        operands.push_back(mapped);
        continue;
      }
      const DType wide = narrow_compute_dtype(n.op, t);
      if (is_narrow_integral(t) && is_signed_integral(t) != is_signed_integral(wide)) {
        operands.push_back(convert(convert(mapped, narrow_integral_twin(t)), wide));
      } else {
        operands.push_back(convert(mapped, wide));
      }
    }
    std::vector<Shape> results;
    for (const Shape& r : n.results) {
      std::vector<std::int64_t> dims(r.dims().begin(), r.dims().end());
      results.push_back(Shape(narrow_compute_dtype(n.op, r.dtype()), std::move(dims)));
    }
    std::vector<Value> wide =
        rw.append(Node{n.op, std::move(operands), detail::widened_attrs(n), results, std::move(bodies)});
    for (std::size_t k = 0; k < wide.size(); ++k) {
      const DType t = n.results[k].dtype();
      if (!is_narrow(t)) continue;
      Value w = wide[k];
      if (n.op == OpCode::kCountLeadingZeros) {
        // The wide count includes the zero-extended bits above the narrow width.
        Literal extra = Literal::scalar<std::uint32_t>(static_cast<std::uint32_t>(32 - bit_width(t)));
        const Shape scalar_shape = extra.shape();
        const Value c = rw.append(Node{OpCode::kConstant, {}, ConstantAttrs{std::make_shared<const Literal>(std::move(extra))},
                                       {scalar_shape}, {}})[0];
        std::vector<std::int64_t> dims(results[k].dims().begin(), results[k].dims().end());
        const Value b = rw.append(Node{OpCode::kBroadcastInDim, {c}, BroadcastInDimAttrs{dims, {}}, {results[k]}, {}})[0];
        w = rw.append(Node{OpCode::kSubtract, {w, b}, {}, {results[k]}, {}})[0];
      }
      if (is_narrow_integral(t) && is_signed_integral(t) != is_signed_integral(results[k].dtype())) {
        w = convert(w, narrow_integral_twin(t));
      }
      wide[k] = convert(w, t);
    }
    rw.replace(i, std::move(wide));
  }
  return std::move(rw).finish("widen_narrow_types");
}

}  // namespace pjrt_lite
