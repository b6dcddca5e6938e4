#pragma once
// Automatic differentiation of graphs: forward mode (jvp_graph) and reverse mode (vjp_graph).
//
// Each op has one rule, its JVP, written against a small set of linear ops applied to
// tangents with primal values as coefficients (add, multiply by a primal, dot with a primal,
// the data-movement ops, reduce-sum, select by a primal predicate, ...). Forward mode emits
// those linear ops as it goes. Reverse mode records them on a tape and then transposes the
// tape, last op first: each linear op has a transpose rule that sends the cotangent of its
// result to its linear operands. This is JAX's linearize-then-transpose, so every op gets
// both modes from one rule, and <vjp(u), v> == <u, jvp(v)> holds by construction.
//
// Tangents of values that are not floating point or complex are zero, as are those of the
// ops that are piecewise constant (sign, floor, compare, ...), as in JAX.
//
// The tape and the transpose rules are in detail/linearizer.hpp and detail/transpose_rules.hpp;
// the JVP rules of gather, scatter, the windowed ops and triangular_solve in
// detail/jvp_rules.hpp; those of the LAPACK routines (linalg) in detail/linalg_rules.hpp; the
// other JVP rules below.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/detail/control_flow_rules.hpp"
#include "pjrt_lite/transforms/detail/custom_rules.hpp"
#include "pjrt_lite/transforms/detail/jvp_rules.hpp"
#include "pjrt_lite/transforms/detail/linalg_rules.hpp"
#include "pjrt_lite/transforms/detail/linearizer.hpp"
#include "pjrt_lite/transforms/detail/special_functions.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

inline StatusOr<Graph> differentiate(const Graph& g, const std::vector<bool>& wrt, bool forward);

/// Emits one node's primal results and computes its results' tangents.
class JvpRules {
 public:
  using Lin = Linearizer::Lin;
  static constexpr Lin kZero = Linearizer::kZero;

  /// `g` is the graph being differentiated (reverse mode reads its constants).
  JvpRules(const Graph& g, GraphBuilder& b, Linearizer& l) : g_(g), b_(b), l_(l) {}

  Status apply(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
               std::vector<Value>& y, std::vector<Lin>& ty) {
    const bool any = std::any_of(t.begin(), t.end(), [](Lin x) { return x != kZero; });
    if (any && n.op == OpCode::kCase)
      if (const CustomRule r = custom_rule_of(n); r.kind != CustomRule::Kind::kNone)
        return custom(n, r, p, t, y, ty);
    if (any && is_control_flow(n.op)) return control_flow(n, p, t, y, ty);
    if (n.op == OpCode::kSort && any) return sort(n, p, t, y, ty);
    y = b_.op(n.op, p, n.attrs, n.bodies);
    ty.assign(y.size(), kZero);
    PJRT_LITE_RETURN_IF_ERROR(b_.status());
    if (!any) return ok_status();
    if (n.op == OpCode::kLinalg) return LinalgJvp(b_, l_).apply(n, p, t, y, ty);
    if (n.op == OpCode::kReduce) return reduce(n, p, t, y, ty);
    if (n.op == OpCode::kReduceWindow && p.size() == 6) {
      ty[2] = is_inexact(n.results[2].dtype()) ? chooser_jvp(l_, n, p, t) : kZero;
      return l_.status();
    }
    if (n.op == OpCode::kReduceWindow) {
      // Max and min pools with base or window dilation go the same way: select_and_scatter,
      // which would transpose their chosen-element rule, takes no dilation.
      const WindowAttrs d = std::get<WindowAttrs>(n.attrs).with_defaults();
      const auto dilated = [](const std::vector<std::int64_t>& v) {
        return std::any_of(v.begin(), v.end(), [](std::int64_t k) { return k != 1; });
      };
      const ReduceKind kind = p.size() == 2 ? reduce_kind(n.bodies[0], 1) : ReduceKind::kOther;
      const bool extremal = kind == ReduceKind::kMax || kind == ReduceKind::kMin;
      if (kind == ReduceKind::kOther ||
          (extremal && (dilated(d.base_dilations) || dilated(d.window_dilations))))
        return reduce_window_expanded(n, p, t, ty);
    }
    if (n.op == OpCode::kTopK) {
      // The values' tangent is the tangent at the chosen indices; the indices have none.
      if (!is_inexact(n.results[0].dtype())) return ok_status();
      ty[0] = take_along(t[0], y[1], p[0], shape(p[0]).rank() - 1);
      return l_.status();
    }
    if (!is_inexact(n.results[0].dtype())) return ok_status();
    ty[0] = rule(n, p, t, y[0]);
    return l_.status();
  }

 private:
  Shape shape(Value v) const { return b_.shape(v).value_or(Shape()); }
  Value full(Value like, double v) { return l_.full(shape(like), v); }

  /// A node carrying a user rule (detail/custom_rules.hpp).
  Status custom(const Node& n, const CustomRule& r, const std::vector<Value>& p,
                const std::vector<Lin>& t, std::vector<Value>& y, std::vector<Lin>& ty) {
    using Kind = CustomRule::Kind;
    const char* what = r.kind == Kind::kCustomVjp ? "custom_vjp" : "custom_jvp";
    if (r.kind == Kind::kStopGradient) {
      y = b_.op(n.op, p, n.attrs, n.bodies);
      ty.assign(y.size(), kZero);
      return b_.status();
    }
    // The tangents of the values the function closes over: the rule knows nothing of them.
    for (std::size_t i = r.n; i < r.k; ++i)
      if (t[1 + i] != kZero && is_inexact(shape(p[1 + i]).dtype()))
        return invalid_argument_error(str_cat(
            what, ": the function is differentiated with respect to a value it closes over (",
            i - r.n, " of its closed-over tensors); the rule only says how to differentiate it "
            "with respect to its arguments: pass that value as an argument"));
    const std::size_t m =
        r.kind == Kind::kCustomJvp ? n.results.size() / 2 : n.results.size() - r.k;
    const Graph& rule = n.bodies[1];
    std::vector<Value> x(p.begin() + 1, p.begin() + 1 + static_cast<std::ptrdiff_t>(r.k));
    if (r.kind == Kind::kCustomJvp && l_.forward()) {
      // The rule on the real tangents.
      std::vector<Value> args = x;
      for (std::size_t i = 0; i < r.k; ++i) args.push_back(l_.value(t[1 + i], shape(p[1 + i])));
      const std::vector<Value> out = b_.inline_graph(rule, args);
      PJRT_LITE_RETURN_IF_ERROR(b_.status());
      y = out;
      ty.assign(y.size(), kZero);
      for (std::size_t j = 0; j < m; ++j)
        if (is_inexact(n.results[j].dtype())) ty[j] = l_.input(n.results[j], out[m + j]);
      return l_.status();
    }
    if (r.kind == Kind::kCustomVjp && l_.forward())
      return unimplemented_error(
          "can't apply forward-mode autodiff (jvp) to a custom_vjp function (it has no rule "
          "for forward mode; use custom_jvp for that)");
    // Reverse mode: the results' tangents as one linear map of the inputs' tangents whose
    // transpose comes from the rule. The primal values: custom_jvp's node again (so a
    // derivative of them uses the rule too); custom_vjp's from fwd's ops, as JAX computes
    // them (so forward mode over reverse mode, as in hessian, differentiates fwd).
    if (r.kind == Kind::kCustomVjp) {
      std::vector<Value> args = x;
      for (std::size_t j = 0; j < m; ++j) args.push_back(l_.zeros(n.results[j]));
      y = b_.inline_graph(n.bodies[1], args);
    } else {
      y = b_.op(n.op, p, n.attrs, n.bodies);
    }
    ty.assign(y.size(), kZero);
    PJRT_LITE_RETURN_IF_ERROR(b_.status());
    std::vector<std::size_t> in;  // the x with a tangent
    std::vector<Lin> lins;
    for (std::size_t i = 0; i < r.n; ++i)
      if (t[1 + i] != kZero && is_inexact(shape(p[1 + i]).dtype())) {
        in.push_back(i);
        lins.push_back(t[1 + i]);
      }
    std::vector<std::size_t> outs;  // the y with a tangent
    std::vector<Shape> out_shapes;
    for (std::size_t j = 0; j < m; ++j)
      if (is_inexact(n.results[j].dtype())) {
        outs.push_back(j);
        out_shapes.push_back(n.results[j]);
      }
    if (lins.empty() || outs.empty()) return ok_status();
    Linearizer::MultiTranspose transpose;
    if (r.kind == Kind::kCustomJvp) {
      // The rule's ty in t is linear: its transpose is the rule's vjp in t (at t = 0).
      GraphBuilder tb(str_cat(rule.name(), "_tangents"));
      std::vector<Value> params;
      for (Value v : rule.parameters()) params.push_back(tb.parameter(rule.shape(v)));
      const std::vector<Value> all = tb.inline_graph(rule, params);
      std::vector<Value> tys;
      for (std::size_t j : outs) tys.push_back(all[m + j]);
      StatusOr<Graph> tangents = tb.build(tys);
      if (!tangents.ok()) return tangents.status().with_context(what);
      std::vector<bool> wrt(2 * r.k, false);
      for (std::size_t i : in) wrt[r.k + i] = true;
      StatusOr<Graph> back = differentiate(*tangents, wrt, false);
      if (!back.ok()) return back.status().with_context(str_cat(what, ": the rule's transpose"));
      auto graph = std::make_shared<const Graph>(*std::move(back));
      transpose = [this, graph, x, outs, r, p](const std::vector<Value>& cts) {
        std::vector<Value> args = x;
        for (std::size_t i = 0; i < r.k; ++i) args.push_back(l_.zeros(shape(p[1 + i])));
        args.insert(args.end(), cts.begin(), cts.end());
        const std::vector<Value> out = b_.inline_graph(*graph, args);
        return std::vector<Value>(out.begin() + static_cast<std::ptrdiff_t>(outs.size()), out.end());
      };
    } else {
      // bwd on the cotangents of y (zeros for the y without one).
      auto graph = std::make_shared<const Graph>(rule);
      transpose = [this, graph, x, in, outs, m, n_results = n.results](const std::vector<Value>& cts) {
        std::vector<Value> args = x;
        std::vector<Value> full(m);
        for (std::size_t j = 0; j < outs.size(); ++j) full[outs[j]] = cts[j];
        for (std::size_t j = 0; j < m; ++j)
          args.push_back(full[j].valid() ? full[j] : l_.zeros(n_results[j]));
        const std::vector<Value> out = b_.inline_graph(*graph, args);
        std::vector<Value> picked;
        for (std::size_t i : in) picked.push_back(out[m + i]);
        return picked;
      };
    }
    const std::vector<Lin> result = l_.apply_multi(OpCode::kCase, lins, out_shapes, transpose);
    for (std::size_t j = 0; j < outs.size(); ++j) ty[outs[j]] = result[j];
    return l_.status();
  }

  /// while, case and if in forward mode: the op again, its regions replaced by their jvps,
  /// carrying a tangent next to each floating-point or complex value the regions take and
  /// return (a loop carries its tangents from turn to turn). Reverse mode: see
  /// detail/control_flow_rules.hpp.
  Status control_flow(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
                      std::vector<Value>& y, std::vector<Lin>& ty) {
    if (!l_.forward()) return ControlFlowTranspose(b_, l_).apply(g_, n, p, t, y, ty);
    const bool is_while = n.op == OpCode::kWhile;
    std::vector<bool> wrt;  // per value the regions take
    std::vector<Value> operands = p;
    for (std::size_t k = is_while ? 0 : 1; k < p.size(); ++k) {
      const Shape s = shape(p[k]);
      wrt.push_back(is_inexact(s.dtype()));
      if (wrt.back()) operands.push_back(l_.value(t[k], s));
    }
    std::vector<std::size_t> with_tangent;  // the results that get one
    for (std::size_t r = 0; r < n.results.size(); ++r)
      if (is_inexact(n.results[r].dtype())) with_tangent.push_back(r);
    std::vector<Graph> regions;
    for (std::size_t k = 0; k < n.bodies.size(); ++k) {
      StatusOr<Graph> region = is_while && k == 0 ? ignoring_tangents(n.bodies[k], wrt)
                                                  : jvp_region(n.bodies[k], wrt, with_tangent);
      if (!region.ok()) return region.status().with_context(str_cat(op_name(n.op), ": region ", k));
      regions.push_back(std::move(region).value());
    }
    std::vector<Value> out = b_.op(n.op, operands, n.attrs, std::move(regions));
    PJRT_LITE_RETURN_IF_ERROR(b_.status());
    y.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n.results.size()));
    ty.assign(y.size(), kZero);
    for (std::size_t j = 0; j < with_tangent.size(); ++j)
      ty[with_tangent[j]] = l_.input(n.results[with_tangent[j]], out[n.results.size() + j]);
    return l_.status();
  }

  /// `region` taking the parameters of its jvp for `wrt` and returning its results, then
  /// the tangents of the results `with_tangent`.
  static StatusOr<Graph> jvp_region(const Graph& region, const std::vector<bool>& wrt,
                                    const std::vector<std::size_t>& with_tangent) {
    PJRT_LITE_ASSIGN_OR_RETURN(Graph d, differentiate(region, wrt, true));
    GraphBuilder b(region.name());
    std::vector<Value> params;
    for (Value v : d.parameters()) params.push_back(b.parameter(d.shape(v)));
    const std::vector<Value> all = b.inline_graph(d, params);
    const std::size_t results = region.outputs().size();
    std::vector<Value> out(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(results));
    for (std::size_t r : with_tangent) out.push_back(all[results + r]);
    return b.build(out);
  }

  /// A while's cond taking the tangents too, and ignoring them.
  static StatusOr<Graph> ignoring_tangents(const Graph& cond, const std::vector<bool>& wrt) {
    GraphBuilder b(cond.name());
    std::vector<Value> params;
    for (Value v : cond.parameters()) params.push_back(b.parameter(cond.shape(v)));
    for (std::size_t k = 0; k < wrt.size(); ++k)
      if (wrt[k]) b.parameter(cond.shape(cond.parameters()[k]));
    return b.build(b.inline_graph(cond, params));
  }
  Value cmp(Value a, Value c, ComparisonDirection d) { return b_.compare(a, c, d); }

  Lin rule(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t, Value y) {
    using L = Linearizer;
    const Value x = p.empty() ? Value{} : p[0];
    const Lin tx = t.empty() ? kZero : t[0];
    switch (n.op) {
      case OpCode::kAbs: {
        if (!is_complex(shape(x).dtype())) return l_.scale(tx, b_.sign(x));
        // d|z| = Re(conj(z) dz) / |z|.
        Value conj = b_.complex(b_.real(x), b_.negate(b_.imag(x)));
        Value k = b_.divide(conj, b_.complex(y, full(y, 0.0)));
        return l_.apply(OpCode::kReal, {L::lin(l_.scale(tx, k))});
      }
      case OpCode::kNegate: return l_.neg(tx);
      case OpCode::kExponential: return l_.scale(tx, y);
      case OpCode::kExponentialMinusOne: return l_.scale(tx, b_.add(y, full(y, 1.0)));
      case OpCode::kLog: return l_.div(tx, x);
      case OpCode::kLogPlusOne: return l_.div(tx, b_.add(x, full(x, 1.0)));
      case OpCode::kSqrt: return l_.div(tx, b_.multiply(y, full(y, 2.0)));
      case OpCode::kRsqrt: return l_.scale(tx, b_.divide(b_.multiply(y, full(y, -0.5)), x));
      case OpCode::kCbrt: return l_.div(tx, b_.multiply(b_.multiply(y, y), full(y, 3.0)));
      case OpCode::kTanh: return l_.scale(tx, b_.subtract(full(y, 1.0), b_.multiply(y, y)));
      case OpCode::kLogistic: return l_.scale(tx, b_.multiply(y, b_.subtract(full(y, 1.0), y)));
      case OpCode::kSine: return l_.scale(tx, b_.cosine(x));
      case OpCode::kCosine: return l_.scale(tx, b_.negate(b_.sine(x)));
      case OpCode::kTan: return l_.scale(tx, b_.add(full(y, 1.0), b_.multiply(y, y)));
      case OpCode::kAcosh:
        return l_.div(tx, b_.sqrt(b_.subtract(b_.multiply(x, x), full(x, 1.0))));
      case OpCode::kAsin: return l_.div(tx, b_.sqrt(b_.subtract(full(x, 1.0), b_.multiply(x, x))));
      case OpCode::kAsinh: return l_.div(tx, b_.sqrt(b_.add(b_.multiply(x, x), full(x, 1.0))));
      case OpCode::kAtan: return l_.div(tx, b_.add(full(x, 1.0), b_.multiply(x, x)));
      case OpCode::kAtanh: return l_.div(tx, b_.subtract(full(x, 1.0), b_.multiply(x, x)));
      case OpCode::kCosh: return l_.scale(tx, b_.sinh(x));
      case OpCode::kSinh: return l_.scale(tx, b_.cosh(x));
      case OpCode::kErf:
      case OpCode::kErfc: {
        // d erf = 2/sqrt(pi) exp(-x^2) dx; erfc = 1 - erf.
        const double k = (n.op == OpCode::kErf ? 2.0 : -2.0) * std::numbers::inv_sqrtpi;
        return l_.scale(tx, b_.multiply(full(x, k), b_.exponential(b_.negate(b_.multiply(x, x)))));
      }
      case OpCode::kErfInv:
        return l_.scale(tx, b_.multiply(full(y, 0.5 / std::numbers::inv_sqrtpi),
                                        b_.exponential(b_.multiply(y, y))));
      case OpCode::kLgamma: return l_.scale(tx, b_.digamma(x));
      case OpCode::kDigamma: return l_.scale(tx, SpecialFunctions(b_).trigamma(x));
      case OpCode::kBesselI1e: {
        // JAX's rule: i0e(x) - y (sign(x) + 1/x), and its limit 1/2 where |x| <= eps.
        const DType dt = shape(x).dtype();
        const double eps = dt == DType::kF64   ? std::numeric_limits<double>::epsilon()
                           : dt == DType::kF32 ? double(std::numeric_limits<float>::epsilon())
                           : dt == DType::kBF16 ? 0x1p-7
                                                : 0x1p-10;
        const Value tiny = cmp(b_.abs(x), full(x, eps), ComparisonDirection::kLe);
        const Value safe = b_.select(tiny, full(x, eps), x);
        const Value d = b_.subtract(SpecialFunctions(b_).bessel_i0e(safe),
                                    b_.multiply(y, b_.add(b_.sign(safe), b_.divide(full(x, 1.0), safe))));
        return l_.scale(tx, b_.select(tiny, full(x, 0.5), d));
      }
      case OpCode::kReal:
      case OpCode::kImag: return l_.apply(n.op, {L::lin(tx)});
      case OpCode::kComplex:
        return l_.apply(OpCode::kComplex, {l_.operand(t[0], p[0]), l_.operand(t[1], p[1])});
      case OpCode::kAdd: return l_.add(t[0], t[1]);
      case OpCode::kSubtract: return l_.sub(t[0], t[1]);
      case OpCode::kMultiply: return l_.add(l_.scale(t[0], p[1]), l_.scale(t[1], p[0]));
      case OpCode::kDivide: return l_.sub(l_.div(t[0], p[1]), l_.scale(t[1], b_.divide(y, p[1])));
      case OpCode::kRemainder: {
        // rem(a, b) = a - b * trunc(a / b), trunc piecewise constant.
        Value q = b_.divide(p[0], p[1]);
        Value trunc = b_.multiply(b_.sign(q), b_.floor(b_.abs(q)));
        return l_.sub(t[0], l_.scale(t[1], trunc));
      }
      case OpCode::kPower: {
        const Value a = p[0], e = p[1];
        // d/da = e * a^(e-1), left as that formula wherever it is finite, so that its own
        // derivatives are right too (d2/da de at e == 0 is 1/a); only at a == e == 0, where
        // 0 * 0^-1 would be NaN, is the coefficient set to its limit 0. d/de = log(a) * y, 0
        // where a == 0.
        Value a_is_zero = cmp(a, full(a, 0.0), ComparisonDirection::kEq);
        Value both_zero = b_.and_(a_is_zero, cmp(e, full(e, 0.0), ComparisonDirection::kEq));
        Value da = b_.select(both_zero, full(a, 0.0), b_.multiply(e, b_.power(a, b_.subtract(e, full(e, 1.0)))));
        Lin out = l_.scale(t[0], da);
        if (t[1] != kZero) {
          Value log_a = b_.select(a_is_zero, full(a, 0.0), b_.log(a));
          out = l_.add(out, l_.scale(t[1], b_.multiply(log_a, y)));
        }
        return out;
      }
      case OpCode::kMaximum:
      case OpCode::kMinimum: {
        // The larger (smaller) operand takes the tangent; ties split it evenly.
        const auto dir =
            n.op == OpCode::kMaximum ? ComparisonDirection::kGt : ComparisonDirection::kLt;
        Value wins = cmp(p[0], p[1], dir), tie = cmp(p[0], p[1], ComparisonDirection::kEq);
        Value ca =
            b_.select(wins, full(p[0], 1.0), b_.select(tie, full(p[0], 0.5), full(p[0], 0.0)));
        Value cb = b_.subtract(full(p[0], 1.0), ca);
        return l_.add(l_.scale(t[0], ca), l_.scale(t[1], cb));
      }
      case OpCode::kAtan2: {
        Value denom = b_.add(b_.multiply(p[0], p[0]), b_.multiply(p[1], p[1]));
        return l_.add(l_.scale(t[0], b_.divide(p[1], denom)),
                      l_.scale(t[1], b_.divide(b_.negate(p[0]), denom)));
      }
      case OpCode::kSelect:
        if (t[1] == kZero && t[2] == kZero) return kZero;
        return l_.apply(OpCode::kSelect,
                        {L::coef(p[0]), l_.operand(t[1], p[1]), l_.operand(t[2], p[2])});
      case OpCode::kClamp: {
        const Shape out = n.results[0];
        const std::vector<std::int64_t> dims = vec(out.dims());
        auto widen = [&](std::size_t k, Value& v, Lin& tv) {
          if (shape(p[k]).rank() == 0 && out.rank() > 0) {
            v = b_.broadcast_in_dim(p[k], dims, {});
            tv = l_.apply(OpCode::kBroadcastInDim, {L::lin(t[k])}, BroadcastInDimAttrs{dims, {}});
          } else {
            v = p[k];
            tv = t[k];
          }
        };
        Value lo, hi;
        Lin tlo = kZero, thi = kZero;
        widen(0, lo, tlo);
        widen(2, hi, thi);
        // clamp = min(max(x, lo), hi): hi wins when max(x, lo) is above it (also when
        // lo > hi), else lo when x is below it, else x.
        Value above = cmp(b_.maximum(p[1], lo), hi, ComparisonDirection::kGt);
        Value below = cmp(p[1], lo, ComparisonDirection::kLt);
        Lin lower = tlo == kZero && t[1] == kZero
                        ? kZero
                        : l_.apply(OpCode::kSelect,
                                   {L::coef(below), l_.operand(tlo, lo), l_.operand(t[1], p[1])});
        if (thi == kZero && lower == kZero) return kZero;
        return l_.apply(OpCode::kSelect,
                        {L::coef(above), l_.operand(thi, hi), l_.operand(lower, p[1])});
      }
      case OpCode::kConvert:
        if (!is_inexact(shape(x).dtype())) return kZero;
        return l_.apply(OpCode::kConvert, {L::lin(tx)}, n.attrs);
      case OpCode::kBroadcastInDim:
      case OpCode::kReshape:
      case OpCode::kTranspose:
      case OpCode::kSlice:
      case OpCode::kReverse:
      // reduce_precision is treated as linear, as JAX treats it: the tangent is rounded to the
      // same format (a rounding whose true derivative is 0 almost everywhere would make every
      // mixed-precision emulation untrainable).
      case OpCode::kReducePrecision: return l_.apply(n.op, {L::lin(tx)}, n.attrs);
      case OpCode::kFft: return l_.apply(n.op, {L::lin(tx)}, n.attrs);
      // The collectives of one operand are linear in it: all_reduce and reduce_scatter when
      // their computation sums (psum), the others always.
      case OpCode::kAllReduce:
      case OpCode::kReduceScatter:
      case OpCode::kAllGather:
      case OpCode::kAllToAll:
      case OpCode::kCollectivePermute:
      case OpCode::kCollectiveBroadcast: {
        if (n.operands.size() != 1) {
          l_.fail(unimplemented_error(str_cat("autodiff: ", op_name(n.op), " of ", n.operands.size(),
                                              " operands has no derivative rule (one operand has)")));
          return kZero;
        }
        const bool reduces = n.op == OpCode::kAllReduce || n.op == OpCode::kReduceScatter;
        if (reduces && reduce_kind(n.bodies[0], 1) != ReduceKind::kSum) {
          l_.fail(unimplemented_error(str_cat("autodiff: ", op_name(n.op),
                                              " with a computation other than a sum has no derivative rule")));
          return kZero;
        }
        return l_.apply(n.op, {L::lin(tx)}, n.attrs, n.bodies);
      }
      case OpCode::kConcatenate:
      case OpCode::kPad: {
        std::vector<L::Operand> ops;
        for (std::size_t k = 0; k < p.size(); ++k) ops.push_back(l_.operand(t[k], p[k]));
        return l_.apply(n.op, std::move(ops), n.attrs);
      }
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice: {
        const std::size_t n_linear = n.op == OpCode::kDynamicSlice ? 1 : 2;
        std::vector<L::Operand> ops;
        for (std::size_t k = 0; k < p.size(); ++k)
          ops.push_back(k < n_linear ? l_.operand(t[k], p[k]) : L::coef(p[k]));
        return l_.apply(n.op, std::move(ops), n.attrs);
      }
      case OpCode::kTriangularSolve: return triangular_solve_jvp(b_, l_, n, p, t, y);
      case OpCode::kGather: return gather_jvp(l_, n, p, t);
      case OpCode::kScatter: return scatter_jvp(b_, l_, n, p, t);
      case OpCode::kReduceWindow: return reduce_window_jvp(b_, l_, n, p, t, y);
      case OpCode::kSelectAndScatter: return select_and_scatter_jvp(b_, l_, n, p, t, y);
      case OpCode::kDotGeneral:
      case OpCode::kConvolution:
        // Bilinear: d(x * y) = dx * y + x * dy.
        return l_.add(l_.apply(n.op, {L::lin(t[0]), L::coef(p[1])}, n.attrs),
                      l_.apply(n.op, {L::coef(p[0]), L::lin(t[1])}, n.attrs));
      case OpCode::kSign:
      case OpCode::kFloor:
      case OpCode::kCeil:
      case OpCode::kRoundNearestAfz:
      case OpCode::kRoundNearestEven:
      case OpCode::kIsFinite:
      case OpCode::kNot:
      case OpCode::kPopcnt:
      case OpCode::kAnd:
      case OpCode::kOr:
      case OpCode::kXor:
      case OpCode::kShiftLeft:
      case OpCode::kShiftRightArithmetic:
      case OpCode::kShiftRightLogical:
      case OpCode::kCompare:
      case OpCode::kBitcastConvert:
      case OpCode::kIota:
      case OpCode::kConstant:
        // Piecewise constant, or not a number: zero tangent, as in JAX.
        return kZero;
      default:
        l_.fail(
            unimplemented_error(str_cat("autodiff: ", op_name(n.op), " has no derivative rule")));
        return kZero;
    }
  }

  /// The linear map t -> u with u[..., i, ...] = t[..., index[..., i, ...], ...] along
  /// `dim` (index is s32, of t's dims but for `dim`): a gather with every other dimension a
  /// batching dimension, as JAX's sort and top_k rules take the tangent at the permutation.
  /// Reverse mode transposes it to a scatter-add.
  Lin take_along(Lin t, Value index, Value like, std::int64_t dim) {
    using L = Linearizer;
    const std::int64_t rank = shape(like).rank();
    std::vector<std::int64_t> starts_dims = vec(shape(index).dims());
    starts_dims.push_back(1);
    GatherAttrs g;
    for (std::int64_t d = 0; d < rank; ++d)
      if (d != dim) {
        g.operand_batching_dims.push_back(d);
        g.start_indices_batching_dims.push_back(d);
      }
    g.collapsed_slice_dims = {dim};
    g.start_index_map = {dim};
    g.index_vector_dim = rank;
    g.slice_sizes.assign(static_cast<std::size_t>(rank), 1);
    return l_.apply(OpCode::kGather, {L::lin(t), L::coef(b_.reshape(index, starts_dims))}, g);
  }

  /// sort: the primal sort runs with an iota along the dimension as an extra operand (its
  /// comparator ignores it), which yields the permutation; each tangent is permuted by it.
  Status sort(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
              std::vector<Value>& y, std::vector<Lin>& ty) {
    SortAttrs a = std::get<SortAttrs>(n.attrs);
    const Shape s = shape(p[0]);
    if (a.dimension < 0) a.dimension += s.rank();
    GraphBuilder cb(n.bodies[0].name());
    std::vector<Value> args;
    for (Value v : n.bodies[0].parameters()) args.push_back(cb.parameter(n.bodies[0].shape(v)));
    cb.parameter(Shape(DType::kS32, {}));
    cb.parameter(Shape(DType::kS32, {}));
    StatusOr<Graph> comparator = cb.build(cb.inline_graph(n.bodies[0], args));
    if (!comparator.ok()) return comparator.status().with_context("autodiff: sort");
    std::vector<Value> operands = p;
    operands.push_back(b_.iota(Shape(DType::kS32, vec(s.dims())), a.dimension));
    std::vector<Graph> bodies;
    bodies.push_back(std::move(comparator).value());
    std::vector<Value> sorted = b_.op(OpCode::kSort, operands, a, std::move(bodies));
    PJRT_LITE_RETURN_IF_ERROR(b_.status());
    const Value permutation = sorted.back();
    sorted.pop_back();
    y = sorted;
    ty.assign(y.size(), kZero);
    for (std::size_t i = 0; i < p.size(); ++i)
      if (t[i] != kZero && is_inexact(shape(p[i]).dtype()))
        ty[i] = take_along(t[i], permutation, p[i], a.dimension);
    return l_.status();
  }

  Status reduce(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
                const std::vector<Value>& y, std::vector<Lin>& ty) {
    using L = Linearizer;
    const std::size_t inputs = p.size() / 2;
    const ReduceKind kind = reduce_kind(n.bodies[0], inputs);
    const auto& dims = std::get<ReduceAttrs>(n.attrs).dimensions;
    const Value x = p[0];
    const Shape xs = shape(x);
    if (!is_inexact(xs.dtype())) return ok_status();
    std::vector<std::int64_t> kept;
    for (std::int64_t d = 0; d < xs.rank(); ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(d);
    auto back = [&](Value v) { return b_.broadcast_in_dim(v, vec(xs.dims()), kept); };
    const Lin tx = t[0];
    const Lin t_init = t[inputs];
    switch (kind) {
      case ReduceKind::kSum: {
        Lin out = l_.reduce_sum(tx, dims);
        if (t_init != kZero)
          out = l_.add(out, l_.apply(OpCode::kBroadcastInDim, {L::lin(t_init)},
                                     BroadcastInDimAttrs{vec(n.results[0].dims()), {}}));
        ty[0] = out;
        return l_.status();
      }
      case ReduceKind::kProduct: {
        if (t_init != kZero) break;
        // The product of the other elements, exact with zeros: with no zero it is y / x;
        // with one zero, the zero's is the product of the rest and the others' is 0.
        Value zero = full(x, 0.0), one = full(x, 1.0);
        Value is_zero = cmp(x, zero, ComparisonDirection::kEq);
        Value zcount = back(b_.reduce(b_.convert(is_zero, xs.dtype()), b_.scalar(xs.dtype(), 0),
                                      OpCode::kAdd, dims));
        Value nonzero_prod = back(b_.reduce(b_.select(is_zero, one, x), b_.scalar(xs.dtype(), 1),
                                            OpCode::kMultiply, dims));
        Value at_zero = b_.select(cmp(zcount, one, ComparisonDirection::kEq), nonzero_prod, zero);
        Value elsewhere = b_.select(cmp(zcount, zero, ComparisonDirection::kEq),
                                    b_.divide(nonzero_prod, x), zero);
        ty[0] = l_.reduce_sum(l_.scale(tx, b_.select(is_zero, at_zero, elsewhere)), dims);
        return l_.status();
      }
      case ReduceKind::kMax:
      case ReduceKind::kMin:
      case ReduceKind::kArgMax:
      case ReduceKind::kArgMin: {
        if (t_init != kZero) break;
        // The elements equal to the result share its tangent evenly (JAX's max and min
        // rules); an arg-reduction's value takes the tangent of the element it chose, the one
        // whose index is the index result (JAX differentiates the body at that pair).
        Value hit_pred = cmp(x, back(y[0]), ComparisonDirection::kEq);
        if (kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin)
          hit_pred = b_.and_(hit_pred, cmp(p[1], back(y[1]), ComparisonDirection::kEq));
        Value hit = b_.convert(hit_pred, xs.dtype());
        Value count = back(b_.reduce(hit, b_.scalar(xs.dtype(), 0), OpCode::kAdd, dims));
        ty[0] = l_.reduce_sum(l_.scale(tx, b_.divide(hit, count)), dims);
        return l_.status();
      }
      case ReduceKind::kOther: {
        for (std::size_t i = inputs; i < p.size(); ++i)
          if (t[i] != kZero)
            return unimplemented_error(str_cat(
                "autodiff: gradient of a reduce with body '", n.bodies[0].name(),
                "' and nonzero tangents for its initial values is not implemented (as in JAX)"));
        return reduce_tree(n, p, t, ty, inputs, dims, kept);
      }
    }
    return unimplemented_error(str_cat(
        "autodiff: reduce with body '", n.bodies[0].name(),
        "' and a traced initial value has no derivative rule (a sum's has)"));
  }

  /// Emits `op` on `p` with its tangents by the same rules as a node read from the graph.
  Status emit(OpCode op, Attributes attrs, Shape result, const std::vector<Value>& p, const std::vector<Lin>& t,
              Value& y, Lin& ty) {
    Node n;
    n.op = op;
    n.attrs = std::move(attrs);
    n.results = {std::move(result)};
    std::vector<Value> ys;
    std::vector<Lin> tys;
    PJRT_LITE_RETURN_IF_ERROR(apply(n, p, t, ys, tys));
    y = ys.at(0);
    ty = tys.at(0);
    return ok_status();
  }

  /// OK when every op of `n`'s body is element-wise (or a parameter or constant), so the body
  /// can be applied to whole tensors; else UNIMPLEMENTED naming the op.
  static Status elementwise_body(const Node& n) {
    const Graph& body = n.bodies[0];
    for (std::int64_t i = 0; i < body.num_nodes(); ++i) {
      const Node& b = body.node(i);
      if (b.op != OpCode::kParameter && b.op != OpCode::kConstant && !is_elementwise(b.op))
        return unimplemented_error(str_cat("autodiff: ", op_name(n.op), " with body '", body.name(), "', whose ",
                                           op_name(b.op), " is not element-wise, has no derivative rule"));
    }
    return ok_status();
  }

  /// The scalar `body` applied element-wise to tensors of `dims` (its parameters `args`, with
  /// tangents `targs`), each op emitted with its tangent; `out` / `tout` get its outputs.
  Status apply_body(const Graph& body, const std::vector<Value>& args, const std::vector<Lin>& targs,
                    const std::vector<std::int64_t>& dims, std::vector<Value>& out, std::vector<Lin>& tout) {
    std::vector<Value> env_v(static_cast<std::size_t>(body.num_nodes()));
    std::vector<Lin> env_t(static_cast<std::size_t>(body.num_nodes()), kZero);
    for (std::int64_t k = 0; k < body.num_nodes(); ++k) {
      const Node& b = body.node(k);
      const auto at = static_cast<std::size_t>(k);
      if (b.op == OpCode::kParameter) {
        const auto number = static_cast<std::size_t>(b.attr<ParameterAttrs>().number);
        env_v[at] = args.at(number);
        env_t[at] = targs.at(number);
        continue;
      }
      if (b.op == OpCode::kConstant) {
        env_v[at] = b_.broadcast_in_dim(b_.op(OpCode::kConstant, {}, b.attrs, {})[0], dims, {});
        continue;
      }
      std::vector<Value> bp;
      std::vector<Lin> bt;
      for (Value o : b.operands) {
        bp.push_back(env_v[static_cast<std::size_t>(o.node)]);
        bt.push_back(env_t[static_cast<std::size_t>(o.node)]);
      }
      PJRT_LITE_RETURN_IF_ERROR(emit(b.op, b.attrs, Shape(b.shape().dtype(), dims), bp, bt, env_v[at], env_t[at]));
    }
    out.resize(body.outputs().size());
    tout.resize(body.outputs().size());
    for (std::size_t i = 0; i < body.outputs().size(); ++i) {
      out[i] = env_v[static_cast<std::size_t>(body.outputs()[i].node)];
      tout[i] = env_t[static_cast<std::size_t>(body.outputs()[i].node)];
    }
    return ok_status();
  }

  /// A reduce_window with any element-wise body or several inputs (or a dilated max/min
  /// pool, whose ties then share the tangent evenly, pair by pair): each input padded with its
  /// initial value (edges and base-dilation holes), one strided slice per window position, and
  /// the body folding the slices into the initial values, every op with its own rule (so
  /// reverse mode works too). Windows of more than 256 elements and initial values with
  /// tangents (as in JAX) are UNIMPLEMENTED.
  Status reduce_window_expanded(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
                                std::vector<Lin>& ty) {
    const std::size_t inputs = p.size() / 2;
    for (std::size_t i = inputs; i < p.size(); ++i)
      if (t[i] != kZero)
        return unimplemented_error(str_cat("autodiff: reduce_window with body '", n.bodies[0].name(),
                                           "' and nonzero tangents for its initial values is not implemented (as in JAX)"));
    PJRT_LITE_RETURN_IF_ERROR(elementwise_body(n));
    const WindowAttrs w = std::get<WindowAttrs>(n.attrs).with_defaults();
    const Shape xs = shape(p[0]);
    const auto rank = static_cast<std::size_t>(xs.rank());
    std::int64_t positions = 1;
    for (std::int64_t k : w.window_dimensions) positions *= k;
    if (positions > 256)
      return unimplemented_error(str_cat("autodiff: reduce_window with body '", n.bodies[0].name(), "' over windows of ",
                                         positions, " elements (more than 256) has no derivative rule"));
    const std::vector<std::int64_t> out_dims = vec(n.results[0].dims());
    std::vector<std::int64_t> padded(rank), interior(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      interior[d] = w.base_dilations[d] - 1;
      const std::int64_t dilated = xs.dim(static_cast<std::int64_t>(d)) == 0 ? 0 : (xs.dim(static_cast<std::int64_t>(d)) - 1) * w.base_dilations[d] + 1;
      padded[d] = w.padding_low[d] + dilated + w.padding_high[d];
    }
    std::vector<Value> xp(inputs), acc(inputs);
    std::vector<Lin> tp(inputs), acc_t(inputs, kZero);
    for (std::size_t i = 0; i < inputs; ++i) {
      const DType dt = shape(p[i]).dtype();
      PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kPad, PadAttrs{w.padding_low, w.padding_high, interior}, Shape(dt, padded),
                                     {p[i], p[inputs + i]}, {t[i], kZero}, xp[i], tp[i]));
      acc[i] = b_.broadcast_in_dim(p[inputs + i], out_dims, {});
    }
    std::vector<std::int64_t> at(rank, 0);  // the window position, row-major
    for (std::int64_t k = 0; k < positions; ++k) {
      std::vector<std::int64_t> start(rank), limit(rank);
      for (std::size_t d = 0; d < rank; ++d) {
        start[d] = at[d] * w.window_dilations[d];
        limit[d] = out_dims[d] == 0 ? start[d] : start[d] + (out_dims[d] - 1) * w.window_strides[d] + 1;
      }
      std::vector<Value> args(acc);
      std::vector<Lin> targs(acc_t);
      for (std::size_t i = 0; i < inputs; ++i) {
        Value s;
        Lin ts = kZero;
        PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kSlice, SliceAttrs{start, limit, w.window_strides},
                                       Shape(shape(p[i]).dtype(), out_dims), {xp[i]}, {tp[i]}, s, ts));
        args.push_back(s);
        targs.push_back(ts);
      }
      PJRT_LITE_RETURN_IF_ERROR(apply_body(n.bodies[0], args, targs, out_dims, acc, acc_t));
      for (std::size_t d = rank; d-- > 0;) {
        if (++at[d] < w.window_dimensions[d]) break;
        at[d] = 0;
      }
    }
    for (std::size_t i = 0; i < inputs; ++i)
      if (is_inexact(n.results[i].dtype())) ty[i] = acc_t[i];
    return l_.status();
  }

  /// A reduce with any element-wise body (JAX's _reduce_jvp): the reduced dimensions moved to
  /// the front and flattened, then halved until one row is left, each step the body applied
  /// element-wise to the first and second halves (the second padded with the initial value
  /// when the count is odd), every op with its own rule. The body must be associative, as a
  /// reduce's is (StableHLO leaves the order of a reduction unspecified).
  Status reduce_tree(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t, std::vector<Lin>& ty,
                     std::size_t inputs, const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& kept) {
    const Graph& body = n.bodies[0];
    PJRT_LITE_RETURN_IF_ERROR(elementwise_body(n));
    const Shape xs = shape(p[0]);
    std::vector<std::int64_t> perm(dims.begin(), dims.end()), flat{1};
    perm.insert(perm.end(), kept.begin(), kept.end());
    for (std::int64_t d : dims) flat[0] *= xs.dim(d);
    for (std::int64_t d : kept) flat.push_back(xs.dim(d));
    if (flat[0] == 0) return ok_status();  // the initial values, whose tangents are zero
    std::vector<Value> v(inputs);
    std::vector<Lin> tv(inputs);
    for (std::size_t i = 0; i < inputs; ++i) {
      const DType dt = shape(p[i]).dtype();
      std::vector<std::int64_t> moved;
      for (std::int64_t d : perm) moved.push_back(xs.dim(d));
      PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kTranspose, TransposeAttrs{perm}, Shape(dt, moved), {p[i]}, {t[i]}, v[i], tv[i]));
      PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kReshape, ReshapeAttrs{flat}, Shape(dt, flat), {v[i]}, {tv[i]}, v[i], tv[i]));
    }
    const auto rank = flat.size();
    for (std::int64_t rows = flat[0]; rows > 1;) {
      const std::int64_t first = (rows + 1) / 2, second = rows - first;
      std::vector<std::int64_t> dims_half = flat;
      dims_half[0] = first;
      std::vector<Value> halves(2 * inputs);
      std::vector<Lin> half_t(2 * inputs, kZero);
      for (std::size_t i = 0; i < inputs; ++i) {
        const DType dt = shape(v[i]).dtype();
        std::vector<std::int64_t> start(rank, 0), limit = flat, strides(rank, 1);
        limit[0] = first;
        PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kSlice, SliceAttrs{start, limit, strides}, Shape(dt, dims_half), {v[i]},
                                       {tv[i]}, halves[i], half_t[i]));
        start[0] = first;
        limit[0] = rows;
        std::vector<std::int64_t> dims_second = flat;
        dims_second[0] = second;
        Value rest;
        Lin rest_t = kZero;
        PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kSlice, SliceAttrs{start, limit, strides}, Shape(dt, dims_second), {v[i]},
                                       {tv[i]}, rest, rest_t));
        if (second < first) {  // pad the odd row out with the initial value
          std::vector<std::int64_t> low(rank, 0), high(rank, 0), interior(rank, 0);
          high[0] = 1;
          PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kPad, PadAttrs{low, high, interior}, Shape(dt, dims_half),
                                         {rest, p[inputs + i]}, {rest_t, kZero}, rest, rest_t));
        }
        halves[inputs + i] = rest;
        half_t[inputs + i] = rest_t;
      }
      PJRT_LITE_RETURN_IF_ERROR(apply_body(body, halves, half_t, dims_half, v, tv));
      flat[0] = rows = first;
    }
    for (std::size_t i = 0; i < inputs; ++i) {
      if (!is_inexact(n.results[i].dtype())) continue;
      Value unused;
      PJRT_LITE_RETURN_IF_ERROR(emit(OpCode::kReshape, ReshapeAttrs{vec(n.results[i].dims())}, n.results[i], {v[i]},
                                     {tv[i]}, unused, ty[i]));
    }
    return l_.status();
  }

  const Graph& g_;
  GraphBuilder& b_;
  Linearizer& l_;
};

inline StatusOr<Graph> differentiate(const Graph& g, const std::vector<bool>& wrt, bool forward) {
  const char* what = forward ? "jvp_graph" : "vjp_graph";
  PJRT_LITE_RETURN_IF_ERROR(verify(g));
  const auto n = static_cast<std::size_t>(g.num_parameters());
  if (wrt.size() != n)
    return invalid_argument_error(str_cat(what, ": wrt has ", wrt.size(), " entries for ", n,
                                          " parameters of '", g.name(), "'"));
  GraphBuilder b(str_cat(g.name(), forward ? "_jvp" : "_vjp"));
  Linearizer lin(b, forward);
  JvpRules rules(g, b, lin);
  std::vector<std::vector<Value>> primal(static_cast<std::size_t>(g.num_nodes()));
  std::vector<std::vector<Linearizer::Lin>> tangent(primal.size());
  std::vector<Linearizer::Lin> inputs;
  for (std::size_t k = 0; k < n; ++k) {
    const Value pv = g.parameters()[k];
    const Shape& s = g.shape(pv);
    primal[static_cast<std::size_t>(pv.node)] = {b.parameter(static_cast<std::int64_t>(k), s)};
    tangent[static_cast<std::size_t>(pv.node)] = {Linearizer::kZero};
    if (!wrt[k]) continue;
    if (!is_inexact(s.dtype()))
      return invalid_argument_error(str_cat(what, ": parameter ", k, " of '", g.name(),
                                            "' has type ", s,
                                            "; only floating-point and complex values have "
                                            "derivatives"));
  }
  std::int64_t next = static_cast<std::int64_t>(n);
  for (std::size_t k = 0; k < n; ++k) {
    if (!wrt[k]) continue;
    const Value pv = g.parameters()[k];
    const Shape& s = g.shape(pv);
    const Linearizer::Lin l = forward ? lin.input(s, b.parameter(next++, s)) : lin.input(s);
    tangent[static_cast<std::size_t>(pv.node)] = {l};
    inputs.push_back(l);
  }
  // Nodes no output depends on are left out (their rules might refuse, as a custom_vjp in
  // forward mode does, for a value nothing uses).
  std::vector<bool> live(static_cast<std::size_t>(g.num_nodes()), false);
  for (Value v : g.outputs()) live[static_cast<std::size_t>(v.node)] = true;
  for (std::int64_t i = g.num_nodes(); i-- > 0;)
    if (live[static_cast<std::size_t>(i)])
      for (Value v : g.node(i).operands) live[static_cast<std::size_t>(v.node)] = true;
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    if (node.op == OpCode::kParameter || !live[static_cast<std::size_t>(i)]) continue;
    std::vector<Value> p;
    std::vector<Linearizer::Lin> t;
    for (Value v : node.operands) {
      p.push_back(primal[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
      t.push_back(tangent[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
    }
    Status s = rules.apply(node, p, t, primal[static_cast<std::size_t>(i)],
                           tangent[static_cast<std::size_t>(i)]);
    if (!s.ok())
      return s.with_context(
          str_cat(what, " of '", g.name(), "' at %", i, " (", op_name(node.op), ")"));
  }
  std::vector<Value> outputs;
  for (Value v : g.outputs())
    outputs.push_back(primal[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
  if (forward) {
    for (Value v : g.outputs()) {
      const Linearizer::Lin l =
          tangent[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)];
      outputs.push_back(lin.value(l, g.shape(v)));
    }
  } else {
    std::vector<std::pair<Linearizer::Lin, Value>> seeds;
    for (Value v : g.outputs()) {
      const Shape& s = g.shape(v);
      if (!is_inexact(s.dtype())) continue;
      seeds.emplace_back(
          tangent[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)],
          b.parameter(next++, s));
    }
    for (Value ct : lin.transpose(seeds, inputs)) outputs.push_back(ct);
  }
  PJRT_LITE_RETURN_IF_ERROR(lin.status());
  return b.build(outputs);
}

}  // namespace detail

/// Forward mode. The graph returned takes g's parameters, then a tangent for each parameter
/// k with wrt[k] set (same shape), and returns g's outputs, then a tangent for each output
/// (zeros for outputs that are not floating point or complex).
inline StatusOr<Graph> jvp_graph(const Graph& g, const std::vector<bool>& wrt) {
  return detail::differentiate(g, wrt, true);
}

/// Reverse mode. The graph returned takes g's parameters, then a cotangent for each output
/// that is floating point or complex, and returns g's outputs, then the cotangent of each
/// parameter k with wrt[k] set.
inline StatusOr<Graph> vjp_graph(const Graph& g, const std::vector<bool>& wrt) {
  return detail::differentiate(g, wrt, false);
}

}  // namespace pjrt_lite
