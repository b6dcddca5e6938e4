#pragma once
// IWYU pragma: private, include "pjrt_lite/transforms/autodiff.hpp"
// Reverse mode through control flow, as JAX's lax.cond and lax.scan transposes do it.
//
// case / if: the primal op runs as it is; the transpose is the same op (same index or
// predicate) over the branches' vjps, each taking the branch's operands and the cotangents
// of its results. The transposed branch recomputes what it needs from the operands, which
// are the residuals the forward op passes out (no values leave the forward branches).
//
// A while loop that runs a number of times known when the graph is built (a counted loop:
// carry 0 starts at a constant, the cond is `carry0 < constant` and the body adds 1 to it, the
// form the front end's fori_loop with int bounds and scan take): the forward loop also stores
// every turn's carry (but for the values the body passes through unchanged) in a stack
// [trip count, ...]; the transpose is a counted loop that walks the turns backwards, reading
// the carry of each from the stacks and running the body's vjp on it. Other while loops are
// refused with JAX's message: their number of turns is only known when they run.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/transforms/detail/linearizer.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

inline StatusOr<Graph> differentiate(const Graph& g, const std::vector<bool>& wrt, bool forward);

/// The s32 or s64 rank-0 value of a constant node, if `v` is one in `g`.
inline std::optional<std::int64_t> integer_constant(const Graph& g, Value v) {
  const Node& n = g.node(v.node);
  if (n.op != OpCode::kConstant) return std::nullopt;
  const Literal& l = n.attr<ConstantAttrs>().literal();
  if (l.shape().rank() != 0) return std::nullopt;
  if (l.shape().dtype() == DType::kS32) return l.data<std::int32_t>()[0];
  if (l.shape().dtype() == DType::kS64) return l.data<std::int64_t>()[0];
  return std::nullopt;
}

inline bool is_parameter(const Graph& g, Value v, std::size_t number) {
  return number < g.parameters().size() && g.parameters()[number].node == v.node;
}

/// The number of turns of the while node `n` of `g` when it is a counted loop (see the top
/// of this file), else nullopt.
inline std::optional<std::int64_t> static_trip_count(const Graph& g, const Node& n) {
  if (n.op != OpCode::kWhile || n.operands.empty() || n.bodies.size() != 2) return std::nullopt;
  const std::optional<std::int64_t> start = integer_constant(g, n.operands[0]);
  if (!start) return std::nullopt;
  const Graph& cond = n.bodies[0];
  const Graph& body = n.bodies[1];
  if (cond.outputs().size() != 1 || body.outputs().empty()) return std::nullopt;
  const Node& c = cond.node(cond.outputs()[0].node);
  if (c.op != OpCode::kCompare || c.attr<CompareAttrs>().direction != ComparisonDirection::kLt ||
      !is_parameter(cond, c.operands[0], 0))
    return std::nullopt;
  const std::optional<std::int64_t> limit = integer_constant(cond, c.operands[1]);
  if (!limit) return std::nullopt;
  const Node& step = body.node(body.outputs()[0].node);
  if (step.op != OpCode::kAdd) return std::nullopt;
  const bool counts =
      (is_parameter(body, step.operands[0], 0) && integer_constant(body, step.operands[1]) == 1) ||
      (is_parameter(body, step.operands[1], 0) && integer_constant(body, step.operands[0]) == 1);
  if (!counts) return std::nullopt;
  return std::max<std::int64_t>(0, *limit - *start);
}

/// Reverse mode of while, case and if: emits the primal op (y) and records the tangents of
/// its results (ty) as one linear map whose transpose is described at the top of this file.
class ControlFlowTranspose {
 public:
  using Lin = Linearizer::Lin;
  static constexpr Lin kZero = Linearizer::kZero;

  ControlFlowTranspose(GraphBuilder& b, Linearizer& l) : b_(b), l_(l) {}

  Status apply(const Graph& g, const Node& n, const std::vector<Value>& p,
               const std::vector<Lin>& t, std::vector<Value>& y, std::vector<Lin>& ty) {
    if (n.op == OpCode::kWhile) {
      const std::optional<std::int64_t> trips = static_trip_count(g, n);
      if (!trips)
        return unimplemented_error(
            "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
            "with dynamic start/stop values. (autodiff: this while loop's number of turns is "
            "not a constant; use fori_loop with int bounds or scan, or forward mode, jvp)");
      return counted_loop(n, *integer_constant(g, n.operands[0]), *trips, p, t, y, ty);
    }
    return branches(n, p, t, y, ty);
  }

 private:
  Shape shape(Value v) const { return b_.shape(v).value_or(Shape()); }

  /// The region `vjp` (params: the region's, then a cotangent per inexact result; results:
  /// the region's, then the cotangents of `wrt`) as a region returning only the cotangents.
  static StatusOr<Graph> cotangents_only(const Graph& region, const std::vector<bool>& wrt) {
    PJRT_LITE_ASSIGN_OR_RETURN(Graph vjp, differentiate(region, wrt, false));
    GraphBuilder b(str_cat(region.name(), "_transpose"));
    std::vector<Value> params;
    for (Value v : vjp.parameters()) params.push_back(b.parameter(vjp.shape(v)));
    const std::vector<Value> all = b.inline_graph(vjp, params);
    const auto skip = static_cast<std::ptrdiff_t>(region.outputs().size());
    return b.build(std::vector<Value>(all.begin() + skip, all.end()));
  }

  Status branches(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
                  std::vector<Value>& y, std::vector<Lin>& ty) {
    y = b_.op(n.op, p, n.attrs, n.bodies);
    PJRT_LITE_RETURN_IF_ERROR(b_.status());
    ty.assign(y.size(), kZero);
    std::vector<bool> wrt;
    std::vector<Lin> linear;
    for (std::size_t k = 1; k < p.size(); ++k) {
      wrt.push_back(is_inexact(shape(p[k]).dtype()) && t[k] != kZero);
      if (wrt.back()) linear.push_back(t[k]);
    }
    if (linear.empty()) return ok_status();
    std::vector<std::size_t> inexact;
    std::vector<Shape> result_shapes;
    for (std::size_t r = 0; r < n.results.size(); ++r)
      if (is_inexact(n.results[r].dtype())) {
        inexact.push_back(r);
        result_shapes.push_back(n.results[r]);
      }
    if (inexact.empty()) return ok_status();
    std::vector<Graph> transposed;
    for (std::size_t k = 0; k < n.bodies.size(); ++k) {
      StatusOr<Graph> r = cotangents_only(n.bodies[k], wrt);
      if (!r.ok()) return r.status().with_context(str_cat(op_name(n.op), ": region ", k));
      transposed.push_back(std::move(r).value());
    }
    const OpCode op = n.op;
    const Attributes attrs = n.attrs;
    const std::vector<Value> operands = p;
    GraphBuilder& b = b_;
    std::vector<Lin> results = l_.apply_multi(
        op, linear, result_shapes,
        [&b, op, attrs, operands, transposed = std::move(transposed)](const std::vector<Value>& cts) {
          std::vector<Value> all = operands;
          all.insert(all.end(), cts.begin(), cts.end());
          return b.op(op, all, attrs, transposed);
        });
    for (std::size_t j = 0; j < inexact.size(); ++j) ty[inexact[j]] = results[j];
    return l_.status();
  }

  Status counted_loop(const Node& n, std::int64_t start, std::int64_t trips, const std::vector<Value>& p,
                      const std::vector<Lin>& t, std::vector<Value>& y, std::vector<Lin>& ty) {
    const std::size_t m = p.size();
    if (trips == 0) {  // the loop is the identity
      y = p;
      ty = t;
      return ok_status();
    }
    const Graph& cond = n.bodies[0];
    const Graph& body = n.bodies[1];
    // The values the body passes through unchanged need no stack.
    std::vector<bool> invariant(m, false);
    for (std::size_t k = 0; k < m; ++k) invariant[k] = is_parameter(body, body.outputs()[k], k);
    std::vector<std::size_t> stacked;
    for (std::size_t k = 0; k < m; ++k)
      if (!invariant[k]) stacked.push_back(k);
    const std::vector<std::int64_t> no_dims;
    auto stack_shape = [&](const Shape& s) {
      std::vector<std::int64_t> dims{trips};
      dims.insert(dims.end(), s.dims().begin(), s.dims().end());
      return Shape(s.dtype(), dims);
    };
    // The forward loop, storing the carry of each turn at turn - start in its stack.
    std::vector<Shape> fshapes;
    for (Value v : p) fshapes.push_back(shape(v));
    for (std::size_t k : stacked) fshapes.push_back(stack_shape(shape(p[k])));
    GraphBuilder cb(cond.name());
    std::vector<Value> cp;
    for (const Shape& s : fshapes) cp.push_back(cb.parameter(s));
    StatusOr<Graph> fcond = cb.build(cb.inline_graph(
        cond, std::vector<Value>(cp.begin(), cp.begin() + static_cast<std::ptrdiff_t>(m))));
    GraphBuilder bb(body.name());
    std::vector<Value> bp;
    for (const Shape& s : fshapes) bp.push_back(bb.parameter(s));
    std::vector<Value> fout = bb.inline_graph(
        body, std::vector<Value>(bp.begin(), bp.begin() + static_cast<std::ptrdiff_t>(m)));
    const Shape counter = shape(p[0]);
    Value turn = bb.subtract(bp[0], bb.scalar(counter.dtype(), static_cast<double>(start)));
    const Value zero_index = bb.scalar(counter.dtype(), 0);
    for (std::size_t j = 0; j < stacked.size(); ++j) {
      const std::size_t k = stacked[j];
      const Shape s = fshapes[k];
      std::vector<std::int64_t> one{1};
      one.insert(one.end(), s.dims().begin(), s.dims().end());
      std::vector<Value> starts{turn};
      for (std::int64_t d = 0; d < s.rank(); ++d) starts.push_back(zero_index);
      fout.push_back(bb.dynamic_update_slice(bp[m + j], bb.reshape(bp[k], one), starts));
    }
    StatusOr<Graph> fbody = bb.build(fout);
    PJRT_LITE_RETURN_IF_ERROR(fcond.status().with_context("while: reverse mode"));
    PJRT_LITE_RETURN_IF_ERROR(fbody.status().with_context("while: reverse mode"));
    std::vector<Value> operands = p;
    for (std::size_t k : stacked) {
      const Shape s = stack_shape(shape(p[k]));
      operands.push_back(b_.broadcast_in_dim(b_.scalar(s.dtype(), 0), vec(s.dims()), {}));
    }
    std::vector<Value> out = b_.while_loop(operands, std::move(fcond).value(), std::move(fbody).value());
    PJRT_LITE_RETURN_IF_ERROR(b_.status());
    y.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m));
    const std::vector<Value> stacks(out.begin() + static_cast<std::ptrdiff_t>(m), out.end());
    ty.assign(m, kZero);

    std::vector<bool> wrt(m, false);
    std::vector<std::size_t> inexact;
    std::vector<Shape> result_shapes;
    std::vector<Lin> linear;
    std::vector<std::size_t> linear_pos;  // position among `inexact` of each linear operand
    for (std::size_t k = 0; k < m; ++k) {
      wrt[k] = is_inexact(fshapes[k].dtype());
      if (!wrt[k]) continue;
      if (t[k] != kZero) {
        linear.push_back(t[k]);
        linear_pos.push_back(inexact.size());
      }
      inexact.push_back(k);
      result_shapes.push_back(fshapes[k]);
    }
    if (linear.empty()) return ok_status();
    StatusOr<Graph> body_vjp = differentiate(body, wrt, false);
    if (!body_vjp.ok()) return body_vjp.status().with_context("while: the body's transpose");
    // The backward loop: (i, cotangents of the inexact carry..., stacks..., invariants...),
    // i counting 0..trips, turn = trips - 1 - i.
    std::vector<Shape> rshapes{Shape(DType::kS32, {})};
    for (const Shape& s : result_shapes) rshapes.push_back(s);
    for (Value v : stacks) rshapes.push_back(shape(v));
    std::vector<std::size_t> invariants;
    for (std::size_t k = 0; k < m; ++k)
      if (invariant[k]) {
        invariants.push_back(k);
        rshapes.push_back(fshapes[k]);
      }
    GraphBuilder rc("cond");
    std::vector<Value> rcp;
    for (const Shape& s : rshapes) rcp.push_back(rc.parameter(s));
    StatusOr<Graph> rcond = rc.build(
        {rc.compare(rcp[0], rc.constant(static_cast<std::int32_t>(trips)), ComparisonDirection::kLt)});
    GraphBuilder rb(str_cat(body.name(), "_transpose"));
    std::vector<Value> rp;
    for (const Shape& s : rshapes) rp.push_back(rb.parameter(s));
    const std::size_t ni = inexact.size(), ns = stacks.size();
    Value rturn = rb.subtract(rb.constant(static_cast<std::int32_t>(trips - 1)), rp[0]);
    const Value rzero = rb.constant(std::int32_t{0});
    std::vector<Value> carry(m);
    for (std::size_t j = 0; j < ns; ++j) {
      const std::size_t k = stacked[j];
      const Shape s = fshapes[k];
      std::vector<std::int64_t> one{1};
      one.insert(one.end(), s.dims().begin(), s.dims().end());
      std::vector<Value> starts{rturn};
      for (std::int64_t d = 0; d < s.rank(); ++d) starts.push_back(rzero);
      carry[k] = rb.reshape(rb.dynamic_slice(rp[1 + ni + j], starts, one), vec(s.dims()));
    }
    for (std::size_t j = 0; j < invariants.size(); ++j) carry[invariants[j]] = rp[1 + ni + ns + j];
    std::vector<Value> vjp_args = carry;
    for (std::size_t j = 0; j < ni; ++j) vjp_args.push_back(rp[1 + j]);
    const std::vector<Value> vjp_out = rb.inline_graph(*body_vjp, vjp_args);
    std::vector<Value> rout{rb.add(rp[0], rb.constant(std::int32_t{1}))};
    for (std::size_t j = 0; j < ni && rb.ok(); ++j) rout.push_back(vjp_out[m + j]);
    for (std::size_t k = 1 + ni; k < rp.size(); ++k) rout.push_back(rp[k]);
    StatusOr<Graph> rbody = rb.build(rout);
    PJRT_LITE_RETURN_IF_ERROR(rcond.status().with_context("while: reverse mode"));
    PJRT_LITE_RETURN_IF_ERROR(rbody.status().with_context("while: reverse mode"));
    std::vector<Value> fixed = stacks;
    for (std::size_t k : invariants) fixed.push_back(p[k]);
    GraphBuilder& b = b_;
    std::vector<Lin> results = l_.apply_multi(
        OpCode::kWhile, linear, result_shapes,
        [&b, fixed, linear_pos, rcond = std::move(rcond).value(),
         rbody = std::move(rbody).value()](const std::vector<Value>& cts) {
          std::vector<Value> operands{b.constant(std::int32_t{0})};
          operands.insert(operands.end(), cts.begin(), cts.end());
          operands.insert(operands.end(), fixed.begin(), fixed.end());
          const std::vector<Value> r = b.while_loop(operands, rcond, rbody);
          std::vector<Value> out;
          for (std::size_t j : linear_pos) out.push_back(b.ok() ? r[1 + j] : Value{});
          return out;
        });
    for (std::size_t j = 0; j < inexact.size(); ++j) ty[inexact[j]] = results[j];
    return l_.status();
  }

  GraphBuilder& b_;
  Linearizer& l_;
};

}  // namespace detail

}  // namespace pjrt_lite
