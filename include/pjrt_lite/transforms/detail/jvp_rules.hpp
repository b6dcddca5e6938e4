#pragma once
// IWYU pragma: private, include "pjrt_lite/transforms/autodiff.hpp"
// JVP rules of the indexing and windowed ops and of triangular_solve in its matrix, as JAX
// defines them: gather is linear in its operand; scatter-add in operand and updates; a
// replacing scatter is rewritten into masks and a scatter-add (JAX's _scatter_jvp); a
// multiplying scatter scales (JAX's rule, updates with unique indices only); max and min
// scatters share each element's tangent among the values attaining it; a window
// sum is linear; a max/min window takes the tangent of the element select_and_scatter would
// pick (JAX's _reduce_window_chooser_jvp_rule); select_and_scatter-add is linear in the
// source; triangular_solve's tangent in a is -op(a)^-1 op(da) x (JAX's
// _triangular_solve_jvp_rule_a). Each returns the result's tangent, or kZero.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/transforms/detail/linearizer.hpp"
#include "pjrt_lite/transforms/detail/transpose_rules.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

using Lin = Linearizer::Lin;

inline Lin gather_jvp(Linearizer& l, const Node& n, const std::vector<Value>& p,
                      const std::vector<Lin>& t) {
  if (t[0] == Linearizer::kZero) return Linearizer::kZero;
  return l.apply(OpCode::kGather, {Linearizer::lin(t[0]), Linearizer::coef(p[1])}, n.attrs);
}

inline bool is_replace_body(const Graph& body) {
  return body.num_parameters() == 2 && body.outputs().size() == 1 &&
         body.outputs()[0] == body.parameters()[1];
}

/// Multiplying scatter (JAX's rule): the operand's tangent scaled by the product of the
/// updates that land on it (a multiplying scatter of ones), and, with unique indices only as
/// in JAX, the updates' tangent scattered and scaled by the operand.
inline Lin scatter_mul_jvp(GraphBuilder& b, Linearizer& l, const Node& n, const std::vector<Value>& p,
                           const std::vector<Lin>& t) {
  using L = Linearizer;
  const auto& a = std::get<ScatterAttrs>(n.attrs);
  const Shape os = shape_of(b, p[0]);
  Lin out = L::kZero;
  if (t[0] != L::kZero)
    out = l.scale(t[0], b.scatter(l.full(os, 1.0), p[1], p[2], OpCode::kMultiply, a));
  if (t[2] != L::kZero) {
    if (!a.unique_indices) {
      l.fail(unimplemented_error(
          "autodiff: scatter_mul gradients are only implemented if `unique_indices=True` (as in JAX)"));
      return L::kZero;
    }
    const Lin spread = l.apply(OpCode::kScatter, {l.operand(L::kZero, p[0]), L::coef(p[1]), L::lin(t[2])},
                               n.attrs, {l.sum_body(os.dtype())});
    out = l.add(out, l.scale(spread, p[0]));
  }
  return out;
}

/// Max and min scatters: each result element takes the mean of the tangents of the values
/// that attain it (the operand's element and the updates landing there, ties shared evenly,
/// as JAX's _scatter_extremal_jvp does).
inline Lin scatter_extremal_jvp(GraphBuilder& b, Linearizer& l, const Node& n, const std::vector<Value>& p,
                                const std::vector<Lin>& t, ReduceKind kind) {
  using L = Linearizer;
  if (t[0] == L::kZero && t[2] == L::kZero) return L::kZero;
  const auto& a = std::get<ScatterAttrs>(n.attrs);
  const Shape os = shape_of(b, p[0]), us = shape_of(b, p[2]);
  const Value y = b.scatter(p[0], p[1], p[2], kind == ReduceKind::kMax ? OpCode::kMaximum : OpCode::kMinimum, a);
  // An update attains its element when it equals the result there; updates the scatter drops
  // (out of bounds) are dropped again by the adding scatters below.
  const Value at_update = scatter_add_updates_transpose(b, y, p[1], a, us);
  const Value won = b.convert(b.compare(p[2], at_update, ComparisonDirection::kEq), us.dtype());
  const Value kept = b.convert(b.compare(p[0], y, ComparisonDirection::kEq), os.dtype());
  const Value count = b.add(kept, b.scatter(l.zeros(os), p[1], won, OpCode::kAdd, a));
  const Value share = b.divide(l.full(os, 1.0), count);
  Lin out = L::kZero;
  if (t[0] != L::kZero) out = l.scale(t[0], b.multiply(kept, share));
  if (t[2] != L::kZero) {
    const Lin spread = l.apply(OpCode::kScatter, {l.operand(L::kZero, p[0]), L::coef(p[1]), L::lin(l.scale(t[2], won))},
                               n.attrs, {l.sum_body(os.dtype())});
    out = l.add(out, l.scale(spread, share));
  }
  return out;
}

inline Lin scatter_jvp(GraphBuilder& b, Linearizer& l, const Node& n, const std::vector<Value>& p,
                       const std::vector<Lin>& t) {
  using L = Linearizer;
  if (p.size() != 3) {
    l.fail(unimplemented_error("autodiff: scatter of several inputs has no derivative rule"));
    return L::kZero;
  }
  const auto& a = std::get<ScatterAttrs>(n.attrs);
  const Shape os = shape_of(b, p[0]), us = shape_of(b, p[2]);
  Graph add = l.sum_body(os.dtype());
  const ReduceKind kind = reduce_kind(n.bodies[0], 1);
  if (kind == ReduceKind::kSum) {
    if (t[0] == L::kZero && t[2] == L::kZero) return L::kZero;
    return l.apply(OpCode::kScatter, {l.operand(t[0], p[0]), L::coef(p[1]), l.operand(t[2], p[2])},
                   n.attrs, {std::move(add)});
  }
  if (kind == ReduceKind::kProduct) return scatter_mul_jvp(b, l, n, p, t);
  if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) return scatter_extremal_jvp(b, l, n, p, t, kind);
  if (!is_replace_body(n.bodies[0])) {
    l.fail(unimplemented_error(str_cat(
        "autodiff: scatter with body '", n.bodies[0].name(),
        "' has no derivative rule (adding, multiplying, max, min and replacing scatters have one)")));
    return L::kZero;
  }
  if (t[0] == L::kZero && t[2] == L::kZero) return L::kZero;
  // Tag each update element with an id, scatter the ids: the operand elements left at id 0
  // keep their tangent, and each update element whose id survived is the one written.
  const std::vector<std::int64_t> udims = vec(us.dims());
  Value ids = b.reshape(b.add(b.iota(Shape(DType::kS32, {us.element_count()}), 0),
                              b.broadcast_in_dim(b.scalar(DType::kS32, 1), {us.element_count()}, {})),
                        udims);
  Value no_ids = b.broadcast_in_dim(b.scalar(DType::kS32, 0), vec(os.dims()), {});
  Value scattered = b.scatter(no_ids, p[1], ids, OpCode::kParameter, a);
  Value landed = scatter_add_updates_transpose(b, scattered, p[1], a, Shape(DType::kS32, udims));
  Value won = b.compare(landed, ids, ComparisonDirection::kEq);
  Value kept = b.compare(scattered, no_ids, ComparisonDirection::kEq);
  Value ozero = l.zeros(os), uzero = l.zeros(us);
  const Lin to = t[0] == L::kZero ? L::kZero
                                  : l.apply(OpCode::kSelect, {L::coef(kept), L::lin(t[0]), L::coef(ozero)});
  const Lin tu = t[2] == L::kZero ? L::kZero
                                  : l.apply(OpCode::kSelect, {L::coef(won), L::lin(t[2]), L::coef(uzero)});
  return l.apply(OpCode::kScatter, {l.operand(to, p[0]), L::coef(p[1]), l.operand(tu, p[2])},
                 n.attrs, {std::move(add)});
}

inline Lin reduce_window_jvp(GraphBuilder& b, Linearizer& l, const Node& n,
                             const std::vector<Value>& p, const std::vector<Lin>& t, Value y) {
  using L = Linearizer;
  if (p.size() != 2) {
    l.fail(unimplemented_error(
        "autodiff: reduce_window of several inputs has no derivative rule"));
    return L::kZero;
  }
  const auto& w = std::get<WindowAttrs>(n.attrs);
  const Shape xs = shape_of(b, p[0]), ys = shape_of(b, y);
  const ReduceKind kind = reduce_kind(n.bodies[0], 1);
  if (kind == ReduceKind::kSum) {
    Lin out = t[0] == L::kZero ? L::kZero
                               : l.apply(OpCode::kReduceWindow,
                                         {L::lin(t[0]), L::coef(l.zero_scalar(xs.dtype()))}, w,
                                         {l.sum_body(xs.dtype())});
    if (t[1] != L::kZero) {
      // The init starts each window's sum and also stands for each padding element and
      // base-dilation hole in it: its tangent counts 1 + (window size - real elements).
      const WindowAttrs d = w.with_defaults();
      std::int64_t size = 1;
      for (std::int64_t k : d.window_dimensions) size *= k;
      Value real = b.reduce_window(l.full(xs, 1.0), l.zero_scalar(xs.dtype()), OpCode::kAdd, d);
      Value times = b.subtract(l.full(ys, static_cast<double>(size + 1)), real);
      out = l.add(out, l.scale(l.apply(OpCode::kBroadcastInDim, {L::lin(t[1])},
                                       BroadcastInDimAttrs{vec(ys.dims()), {}}),
                               times));
    }
    return out;
  }
  if (kind == ReduceKind::kProduct && t[1] == L::kZero) {
    if (t[0] == L::kZero) return L::kZero;
    // Each window's derivative in one element is the product of the others (and of the init
    // and padding, constants): y / x without a zero in the window; with one zero, the
    // product of the rest at the zero and 0 elsewhere; with more, 0 (JAX's cumprod gets the
    // same from its scan).
    const DType dt = xs.dtype();
    auto window = [&](Value v, OpCode op, Value init) { return b.reduce_window(v, init, op, w); };
    Value zero = l.full(xs, 0.0), one = l.full(xs, 1.0);
    Value is_zero = b.compare(p[0], zero, ComparisonDirection::kEq);
    Value zeros_in = window(b.convert(is_zero, dt), OpCode::kAdd, b.scalar(dt, 0));
    Value nonzero = b.select(is_zero, one, p[0]);
    // With the init (also the value of padding and dilation holes) as the product's start.
    Value rest = window(nonzero, OpCode::kMultiply, p[1]);
    auto sum_of = [&](Value coefficient) {
      return l.apply(OpCode::kReduceWindow,
                     {L::lin(l.scale(t[0], coefficient)), L::coef(l.zero_scalar(dt))}, w,
                     {l.sum_body(dt)});
    };
    auto count_is = [&](double c) {
      return b.compare(zeros_in, b.broadcast_in_dim(b.scalar(dt, c), vec(ys.dims()), {}),
                       ComparisonDirection::kEq);
    };
    const Lin none = l.scale(sum_of(b.divide(one, nonzero)), rest);
    const Lin single = l.scale(sum_of(b.convert(is_zero, dt)), rest);
    return l.apply(OpCode::kSelect,
                   {L::coef(count_is(0)), L::lin(none),
                    L::lin(l.apply(OpCode::kSelect, {L::coef(count_is(1)), L::lin(single),
                                                     L::coef(l.zeros(ys))}))});
  }
  if ((kind == ReduceKind::kMax || kind == ReduceKind::kMin) && t[1] == L::kZero &&
      !is_complex(xs.dtype())) {
    if (t[0] == L::kZero) return L::kZero;
    StatusOr<Graph> select = make_compare_body(
        kind == ReduceKind::kMax ? ComparisonDirection::kGe : ComparisonDirection::kLe, xs.dtype());
    if (!select.ok()) {
      l.fail(select.status());
      return L::kZero;
    }
    StatusOr<Graph> chooser = chooser_body(*select, xs.dtype(), xs.dtype());
    if (!chooser.ok()) {
      l.fail(chooser.status());
      return L::kZero;
    }
    Value zero = l.zero_scalar(xs.dtype());
    Value ones = l.full(xs, 1.0);
    const Lin chosen = l.apply(
        OpCode::kReduceWindow,
        {L::coef(ones), L::coef(p[0]), L::lin(t[0]), L::coef(zero), L::coef(zero), L::coef(zero)},
        w, {std::move(chooser).value()}, 2, std::move(select).value());
    // Where the init value beat every element (or the window is padding only) the result is
    // the init, a constant: no tangent.
    Value from_init = b.compare(y, b.broadcast_in_dim(p[1], vec(ys.dims()), {}),
                                ComparisonDirection::kEq);
    return l.apply(OpCode::kSelect, {L::coef(from_init), L::coef(l.zeros(ys)), L::lin(chosen)});
  }
  l.fail(unimplemented_error(str_cat(
      "autodiff: reduce_window with body '", n.bodies[0].name(),
      "' has no derivative rule (sum, product, max and min bodies have one; a traced initial "
      "value only for sum)")));
  return L::kZero;
}

/// The select body of a reduce_window body made by chooser_body over a comparison (the ones
/// this file emits), or nothing.
inline std::optional<Graph> chooser_select(const Graph& body) {
  if (body.num_parameters() != 6) return std::nullopt;
  const DType vt = body.shape(body.parameters()[0]).dtype();
  const DType tt = body.shape(body.parameters()[2]).dtype();
  for (ComparisonDirection dir : {ComparisonDirection::kGe, ComparisonDirection::kLe,
                                  ComparisonDirection::kGt, ComparisonDirection::kLt}) {
    StatusOr<Graph> select = make_compare_body(dir, vt);
    if (!select.ok()) return std::nullopt;
    StatusOr<Graph> expected = chooser_body(*select, vt, tt);
    if (expected.ok() && expected->nodes().size() == body.nodes().size() &&
        std::equal(expected->nodes().begin(), expected->nodes().end(), body.nodes().begin()) &&
        std::equal(expected->outputs().begin(), expected->outputs().end(), body.outputs().begin(),
                   body.outputs().end()))
      return std::move(select).value();
  }
  return std::nullopt;
}

/// A max/min pool's tangent op (chooser_body's reduce_window) is linear in its tangent input
/// and piecewise constant in the rest: the result's tangent is the op again.
inline Lin chooser_jvp(Linearizer& l, const Node& n, const std::vector<Value>& p,
                       const std::vector<Lin>& t) {
  using L = Linearizer;
  std::optional<Graph> select = chooser_select(n.bodies[0]);
  if (!select) {
    l.fail(unimplemented_error(str_cat("autodiff: reduce_window of several inputs with body '",
                                       n.bodies[0].name(), "' has no derivative rule")));
    return L::kZero;
  }
  if (t[2] == L::kZero) return L::kZero;
  return l.apply(OpCode::kReduceWindow,
                 {L::coef(p[0]), L::coef(p[1]), L::lin(t[2]), L::coef(p[3]), L::coef(p[4]),
                  L::coef(p[5])},
                 n.attrs, n.bodies, 2, std::move(select));
}

inline Lin select_and_scatter_jvp(GraphBuilder& b, Linearizer& l, const Node& n,
                                  const std::vector<Value>& p, const std::vector<Lin>& t, Value y) {
  using L = Linearizer;
  const Shape ss = shape_of(b, p[1]), ys = shape_of(b, y);
  if (reduce_kind(n.bodies[1], 1) != ReduceKind::kSum) {
    l.fail(unimplemented_error(str_cat("autodiff: select_and_scatter with scatter body '",
                                       n.bodies[1].name(),
                                       "' has no derivative rule (an adding one has)")));
    return L::kZero;
  }
  // The operand only chooses where each source element goes: no tangent flows from it.
  Lin out = t[1] == L::kZero
                ? L::kZero
                : l.apply(OpCode::kSelectAndScatter,
                          {L::coef(p[0]), L::lin(t[1]), L::coef(l.zero_scalar(ss.dtype()))},
                          n.attrs, {n.bodies[0], l.sum_body(ss.dtype())});
  if (t[2] != L::kZero)
    out = l.add(out, l.apply(OpCode::kBroadcastInDim, {L::lin(t[2])},
                             BroadcastInDimAttrs{vec(ys.dims()), {}}));
  return out;
}

/// triangular_solve: x = op(a)^-1 b, so dx = op(a)^-1 (db - op(da) x) (left side) or
/// (db - x op(da)) op(a)^-1, da restricted to the triangle the solve reads.
inline Lin triangular_solve_jvp(GraphBuilder& b, Linearizer& l, const Node& n,
                                const std::vector<Value>& p, const std::vector<Lin>& t, Value x) {
  using L = Linearizer;
  const auto& a = std::get<TriangularSolveAttrs>(n.attrs);
  Lin rhs = t[1];
  if (t[0] != L::kZero) {
    const Shape as = shape_of(b, p[0]);
    const std::int64_t r = as.rank();
    const std::vector<std::int64_t> dims = vec(as.dims());
    Value diff = b.subtract(b.iota(Shape(DType::kS32, dims), r - 2),
                            b.iota(Shape(DType::kS32, dims), r - 1));
    const double k = a.unit_diagonal ? 1 : 0;
    Value read = a.lower ? b.compare(diff, b.broadcast_in_dim(b.scalar(DType::kS32, k), dims, {}),
                                     ComparisonDirection::kGe)
                         : b.compare(diff, b.broadcast_in_dim(b.scalar(DType::kS32, -k), dims, {}),
                                     ComparisonDirection::kLe);
    Lin da = l.apply(OpCode::kSelect, {L::coef(read), L::lin(t[0]), L::coef(l.zeros(as))});
    if (a.transpose_a != Transpose::kNoTranspose) {
      std::vector<std::int64_t> perm;
      for (std::int64_t d = 0; d < r; ++d) perm.push_back(d < r - 2 ? d : d == r - 2 ? r - 1 : r - 2);
      da = l.apply(OpCode::kTranspose, {L::lin(da)}, TransposeAttrs{perm});
    }
    if (a.transpose_a == Transpose::kAdjoint && is_complex(as.dtype()))
      da = l.apply(OpCode::kComplex, {L::lin(l.apply(OpCode::kReal, {L::lin(da)})),
                                      L::lin(l.neg(l.apply(OpCode::kImag, {L::lin(da)})))});
    const DotDimensionNumbers dn = matmul_dimensions(r);
    const Lin product = a.left_side
                            ? l.apply(OpCode::kDotGeneral, {L::lin(da), L::coef(x)}, dn)
                            : l.apply(OpCode::kDotGeneral, {L::coef(x), L::lin(da)}, dn);
    rhs = l.sub(rhs, product);
  }
  if (rhs == L::kZero) return L::kZero;
  return l.apply(OpCode::kTriangularSolve, {L::coef(p[0]), L::lin(rhs)}, n.attrs);
}

}  // namespace detail

}  // namespace pjrt_lite
