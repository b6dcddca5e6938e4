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

#include <algorithm>
#include <cstdint>
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

namespace pjrt_lite::inline v0_1 {

namespace detail {

/// Builds the linear part of a JVP, in forward mode (emitting tangent ops) or on a tape for
/// transposition. A tangent is a `Lin`: an index into the list of linear values, or kZero.
class Linearizer {
 public:
  using Lin = std::int32_t;
  static constexpr Lin kZero = -1;

  Linearizer(GraphBuilder& b, bool forward) : b_(b), forward_(forward) {}

  /// An operand of a linear op: a tangent, or a primal value (a coefficient).
  struct Operand {
    bool linear = false;
    Lin lin = kZero;
    Value primal;
  };
  static Operand lin(Lin l) { return Operand{true, l, {}}; }
  static Operand coef(Value v) { return Operand{false, kZero, v}; }
  /// The tangent `t` of the primal `like` as an operand: zeros shaped like `like` when t is
  /// kZero (a coefficient, so transposition sends it nothing).
  Operand operand(Lin t, Value like) {
    if (t != kZero) return lin(t);
    return coef(zeros(b_.shape(like).value_or(Shape())));
  }

  /// A tangent input: `value` (forward mode: a parameter of the tangent) of `shape`.
  Lin input(Shape shape, Value value = {}) {
    return push(Entry{OpCode::kParameter, NoAttrs{}, {}, std::move(shape), value});
  }
  [[nodiscard]] const Shape& shape(Lin l) const {
    return entries_[static_cast<std::size_t>(l)].shape;
  }
  /// The forward-mode value of a tangent (materialized zeros for kZero of `shape`).
  Value value(Lin l, const Shape& shape) {
    if (l == kZero) return zeros(shape);
    return entries_[static_cast<std::size_t>(l)].value;
  }

  /// The linear op `op` over `operands`; kZero when every linear operand is zero.
  Lin apply(OpCode op, std::vector<Operand> operands, Attributes attrs = NoAttrs{}) {
    if (!b_.ok()) return kZero;
    // A zero tangent among non-zero ones enters as materialized zeros (see operand()), so
    // that every linear operand of a recorded op is a real tangent.
    bool any = false;
    for (const Operand& o : operands) any = any || (o.linear && o.lin != kZero);
    if (!any) return kZero;
    for (const Operand& o : operands)
      if (o.linear && o.lin == kZero) {
        fail(internal_error(
            str_cat("autodiff: ", op_name(op), " got an unmaterialized zero tangent")));
        return kZero;
      }
    std::vector<Shape> shapes;
    for (const Operand& o : operands) shapes.push_back(operand_shape(o));
    std::vector<Signature> sigs;
    if (op == OpCode::kReduce) sigs.push_back(sum_body(shapes[0].dtype()).signature());
    StatusOr<std::vector<Shape>> out = infer_shapes(op, shapes, attrs, sigs);
    if (!out.ok()) {
      fail(out.status().with_context("autodiff: a linear op"));
      return kZero;
    }
    Entry e{op, std::move(attrs), std::move(operands), (*out)[0], Value{}};
    if (forward_) e.value = emit(e);
    return push(std::move(e));
  }

  Lin add(Lin a, Lin b) {
    if (a == kZero) return b;
    if (b == kZero) return a;
    return apply(OpCode::kAdd, {lin(a), lin(b)});
  }
  Lin sub(Lin a, Lin b) {
    if (b == kZero) return a;
    if (a == kZero) return neg(b);
    return apply(OpCode::kSubtract, {lin(a), lin(b)});
  }
  Lin neg(Lin a) { return apply(OpCode::kNegate, {lin(a)}); }
  /// a * c, c a primal value of a's shape.
  Lin scale(Lin a, Value c) { return apply(OpCode::kMultiply, {lin(a), coef(c)}); }
  /// a / c.
  Lin div(Lin a, Value c) { return apply(OpCode::kDivide, {lin(a), coef(c)}); }
  /// reduce-sum over `dims`.
  Lin reduce_sum(Lin a, std::vector<std::int64_t> dims) {
    return apply(OpCode::kReduce,
                 {lin(a), coef(zero_scalar(a == kZero ? DType::kF32 : shape(a).dtype()))},
                 ReduceAttrs{std::move(dims)});
  }

  /// The cotangents of the inputs `inputs`, given those of the tangents `outputs`: the
  /// transposed tape. Inputs that nothing reaches get zeros.
  std::vector<Value> transpose(const std::vector<std::pair<Lin, Value>>& outputs,
                               const std::vector<Lin>& inputs) {
    ct_.assign(entries_.size(), Value{});
    for (const auto& [l, ct] : outputs)
      if (l != kZero) accumulate(l, ct);
    for (std::size_t i = entries_.size(); i-- > 0 && b_.ok();) {
      if (!ct_[i].valid() || entries_[i].op == OpCode::kParameter) continue;
      transpose_entry(entries_[i], ct_[i]);
    }
    std::vector<Value> out;
    for (Lin l : inputs) {
      const Value ct = l == kZero ? Value{} : ct_[static_cast<std::size_t>(l)];
      out.push_back(ct.valid() ? ct : zeros(l == kZero ? Shape() : shape(l)));
    }
    return out;
  }

  /// A primal constant of `shape` filled with `value`.
  Value full(const Shape& shape, double value) {
    return b_.broadcast_in_dim(b_.scalar(shape.dtype(), value),
                               {shape.dims().begin(), shape.dims().end()}, {});
  }
  Value zeros(const Shape& shape) { return full(shape, 0.0); }
  Value zero_scalar(DType dtype) { return b_.scalar(dtype, 0.0); }
  Graph sum_body(DType dtype) { return make_binary_body(OpCode::kAdd, dtype).value(); }
  void fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
  }
  [[nodiscard]] Status status() const { return status_.ok() ? b_.status() : status_; }
  /// True in forward mode, where every tangent has a value.
  [[nodiscard]] bool forward() const { return forward_; }

 private:
  struct Entry {
    OpCode op;
    Attributes attrs;
    std::vector<Operand> operands;
    Shape shape;
    Value value;  // forward mode: the tangent's value
  };

  Lin push(Entry e) {
    entries_.push_back(std::move(e));
    return static_cast<Lin>(entries_.size() - 1);
  }
  Shape operand_shape(const Operand& o) const {
    if (!o.linear) return b_.shape(o.primal).value_or(Shape());
    return o.lin == kZero ? Shape() : shape(o.lin);
  }

  Value emit(const Entry& e) {
    std::vector<Value> operands;
    for (const Operand& o : e.operands)
      operands.push_back(o.linear ? entries_[static_cast<std::size_t>(o.lin)].value : o.primal);
    std::vector<Graph> bodies;
    if (e.op == OpCode::kReduce) bodies.push_back(sum_body(e.shape.dtype()));
    return b_.op(e.op, operands, e.attrs, std::move(bodies)).front();
  }

  void accumulate(Lin l, Value ct) {
    Value& slot = ct_[static_cast<std::size_t>(l)];
    slot = slot.valid() ? b_.add(slot, ct) : ct;
  }
  void send(const Operand& o, Value ct) {
    if (o.linear) accumulate(o.lin, ct);
  }

  void transpose_entry(const Entry& e, Value ct);

  GraphBuilder& b_;
  bool forward_;
  std::vector<Entry> entries_;
  std::vector<Value> ct_;
  Status status_;
};

inline std::vector<std::int64_t> vec(std::span<const std::int64_t> s) {
  return {s.begin(), s.end()};
}

inline void Linearizer::transpose_entry(const Entry& e, Value ct) {
  const auto& ops = e.operands;
  switch (e.op) {
    case OpCode::kAdd:
      send(ops[0], ct);
      send(ops[1], ct);
      return;
    case OpCode::kSubtract:
      send(ops[0], ct);
      if (ops[1].linear) send(ops[1], b_.negate(ct));
      return;
    case OpCode::kNegate: send(ops[0], b_.negate(ct)); return;
    case OpCode::kMultiply:
      if (ops[0].linear)
        send(ops[0], b_.multiply(ct, ops[1].primal));
      else
        send(ops[1], b_.multiply(ops[0].primal, ct));
      return;
    case OpCode::kDivide: send(ops[0], b_.divide(ct, ops[1].primal)); return;
    case OpCode::kConvert: {
      const Shape in = operand_shape(ops[0]);
      if (is_complex(in.dtype()) && !is_complex(e.shape.dtype())) {
        const DType part = in.dtype() == DType::kC128 ? DType::kF64 : DType::kF32;
        Value re = b_.convert(ct, part);
        send(ops[0], b_.complex(re, zeros(Shape(part, vec(in.dims())))));
      } else if (!is_complex(in.dtype()) && is_complex(e.shape.dtype())) {
        send(ops[0], b_.convert(b_.real(ct), in.dtype()));
      } else {
        send(ops[0], b_.convert(ct, in.dtype()));
      }
      return;
    }
    case OpCode::kReducePrecision: {
      // Its own transpose, as JAX has it: the cotangent is rounded to the same format.
      const auto& a = std::get<ReducePrecisionAttrs>(e.attrs);
      send(ops[0], b_.reduce_precision(ct, a.exponent_bits, a.mantissa_bits));
      return;
    }
    case OpCode::kReal: send(ops[0], b_.complex(ct, zeros(e.shape))); return;
    case OpCode::kImag: send(ops[0], b_.complex(zeros(e.shape), b_.negate(ct))); return;
    case OpCode::kComplex:
      send(ops[0], b_.real(ct));
      send(ops[1], b_.negate(b_.imag(ct)));
      return;
    case OpCode::kSelect: {
      Value zero = zeros(e.shape);
      send(ops[1], b_.select(ops[0].primal, ct, zero));
      send(ops[2], b_.select(ops[0].primal, zero, ct));
      return;
    }
    case OpCode::kBroadcastInDim: {
      const auto& a = std::get<BroadcastInDimAttrs>(e.attrs);
      const Shape in = operand_shape(ops[0]);
      std::vector<std::int64_t> sum_dims;
      for (std::int64_t d = 0; d < e.shape.rank(); ++d) {
        auto it = std::find(a.broadcast_dimensions.begin(), a.broadcast_dimensions.end(), d);
        if (it == a.broadcast_dimensions.end()) {
          sum_dims.push_back(d);
        } else {
          const auto k = it - a.broadcast_dimensions.begin();
          if (in.dim(k) == 1 && e.shape.dim(d) != 1) sum_dims.push_back(d);
        }
      }
      Value summed = sum_dims.empty()
                         ? ct
                         : b_.reduce(ct, zero_scalar(e.shape.dtype()), OpCode::kAdd, sum_dims);
      send(ops[0], b_.reshape(summed, vec(in.dims())));
      return;
    }
    case OpCode::kReshape: send(ops[0], b_.reshape(ct, vec(operand_shape(ops[0]).dims()))); return;
    case OpCode::kTranspose: {
      const auto& perm = std::get<TransposeAttrs>(e.attrs).permutation;
      std::vector<std::int64_t> inverse(perm.size());
      for (std::size_t i = 0; i < perm.size(); ++i)
        inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
      send(ops[0], b_.transpose(ct, inverse));
      return;
    }
    case OpCode::kReverse:
      send(ops[0], b_.reverse(ct, std::get<ReverseAttrs>(e.attrs).dimensions));
      return;
    case OpCode::kSlice: {
      const auto& a = std::get<SliceAttrs>(e.attrs);
      const Shape in = operand_shape(ops[0]);
      if (e.shape.element_count() == 0) {
        send(ops[0], zeros(in));
        return;
      }
      std::vector<std::int64_t> low, high, interior;
      for (std::int64_t d = 0; d < in.rank(); ++d) {
        const auto i = static_cast<std::size_t>(d);
        low.push_back(a.start_indices[i]);
        interior.push_back(a.strides[i] - 1);
        high.push_back(in.dim(d) - (a.start_indices[i] + (e.shape.dim(d) - 1) * a.strides[i] + 1));
      }
      send(ops[0], b_.pad(ct, zero_scalar(e.shape.dtype()), low, high, interior));
      return;
    }
    case OpCode::kConcatenate: {
      const std::int64_t axis = std::get<ConcatenateAttrs>(e.attrs).dimension;
      std::int64_t offset = 0;
      for (const Operand& o : ops) {
        const std::int64_t extent = operand_shape(o).dim(axis);
        if (o.linear) {
          std::vector<std::int64_t> start(static_cast<std::size_t>(e.shape.rank()), 0);
          std::vector<std::int64_t> limit = vec(e.shape.dims());
          start[static_cast<std::size_t>(axis)] = offset;
          limit[static_cast<std::size_t>(axis)] = offset + extent;
          send(o, b_.slice(ct, start, limit));
        }
        offset += extent;
      }
      return;
    }
    case OpCode::kPad: {
      const auto& a = std::get<PadAttrs>(e.attrs);
      const Shape in = operand_shape(ops[0]);
      const std::int64_t r = e.shape.rank();
      std::vector<std::int64_t> lo(static_cast<std::size_t>(r)), hi(lo), zero(lo), start(lo),
          limit(lo), stride(lo);
      bool negative = false;
      for (std::size_t d = 0; d < lo.size(); ++d) {
        lo[d] = std::max<std::int64_t>(-a.edge_padding_low[d], 0);
        hi[d] = std::max<std::int64_t>(-a.edge_padding_high[d], 0);
        negative = negative || lo[d] > 0 || hi[d] > 0;
      }
      Value full_ct = negative ? b_.pad(ct, zero_scalar(e.shape.dtype()), lo, hi, zero) : ct;
      Value ct_operand;
      if (in.element_count() == 0) {
        ct_operand = zeros(in);
      } else {
        for (std::size_t d = 0; d < lo.size(); ++d) {
          start[d] = std::max<std::int64_t>(a.edge_padding_low[d], 0);
          stride[d] = a.interior_padding[d] + 1;
          limit[d] = start[d] + (in.dim(static_cast<std::int64_t>(d)) - 1) * stride[d] + 1;
        }
        ct_operand = b_.slice(full_ct, start, limit, stride);
      }
      send(ops[0], ct_operand);
      if (ops[1].linear) {
        std::vector<std::int64_t> all_out;
        for (std::int64_t d = 0; d < r; ++d) all_out.push_back(d);
        Value total = b_.reduce(ct, zero_scalar(e.shape.dtype()), OpCode::kAdd, all_out);
        Value inner = b_.reduce(ct_operand, zero_scalar(e.shape.dtype()), OpCode::kAdd, all_out);
        send(ops[1], b_.subtract(total, inner));
      }
      return;
    }
    case OpCode::kDynamicSlice: {
      std::vector<Value> idx;
      for (std::size_t k = 1; k < ops.size(); ++k) idx.push_back(ops[k].primal);
      send(ops[0], b_.dynamic_update_slice(zeros(operand_shape(ops[0])), ct, idx));
      return;
    }
    case OpCode::kDynamicUpdateSlice: {
      std::vector<Value> idx;
      for (std::size_t k = 2; k < ops.size(); ++k) idx.push_back(ops[k].primal);
      const Shape upd = operand_shape(ops[1]);
      if (ops[0].linear) send(ops[0], b_.dynamic_update_slice(ct, zeros(upd), idx));
      if (ops[1].linear) send(ops[1], b_.dynamic_slice(ct, idx, vec(upd.dims())));
      return;
    }
    case OpCode::kReduce: {
      const auto& dims = std::get<ReduceAttrs>(e.attrs).dimensions;
      const Shape in = operand_shape(ops[0]);
      std::vector<std::int64_t> kept;
      for (std::int64_t d = 0; d < in.rank(); ++d)
        if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(d);
      send(ops[0], b_.broadcast_in_dim(ct, vec(in.dims()), kept));
      return;
    }
    case OpCode::kDotGeneral: {
      const auto& dn = std::get<DotDimensionNumbers>(e.attrs);
      const bool lhs_linear = ops[0].linear;
      const Shape lhs = operand_shape(ops[0]), rhs = operand_shape(ops[1]);
      const auto nb = static_cast<std::int64_t>(dn.lhs_batching_dimensions.size());
      auto free_dims = [](const Shape& s, const std::vector<std::int64_t>& batch,
                          const std::vector<std::int64_t>& contracting) {
        std::vector<std::int64_t> out;
        for (std::int64_t d = 0; d < s.rank(); ++d)
          if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
              std::find(contracting.begin(), contracting.end(), d) == contracting.end())
            out.push_back(d);
        return out;
      };
      const auto lf = free_dims(lhs, dn.lhs_batching_dimensions, dn.lhs_contracting_dimensions);
      const auto rf = free_dims(rhs, dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions);
      const auto nlf = static_cast<std::int64_t>(lf.size());
      // The cotangent of one side: contract ct's dimensions of the other side's free
      // dimensions with those, keeping the batch dimensions; then put the dimensions back
      // in the side's order.
      auto side = [&](bool lhs_side) {
        const Shape& mine = lhs_side ? lhs : rhs;
        const Value other = lhs_side ? ops[1].primal : ops[0].primal;
        const auto& other_batch =
            lhs_side ? dn.rhs_batching_dimensions : dn.lhs_batching_dimensions;
        const auto& other_free = lhs_side ? rf : lf;
        const auto& my_batch = lhs_side ? dn.lhs_batching_dimensions : dn.rhs_batching_dimensions;
        const auto& my_free = lhs_side ? lf : rf;
        const auto& my_contracting =
            lhs_side ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
        const auto& other_contracting =
            lhs_side ? dn.rhs_contracting_dimensions : dn.lhs_contracting_dimensions;
        DotDimensionNumbers t;
        for (std::int64_t i = 0; i < nb; ++i) t.lhs_batching_dimensions.push_back(i);
        t.rhs_batching_dimensions = other_batch;
        const std::int64_t ct_other_free_start = lhs_side ? nb + nlf : nb;
        for (std::size_t j = 0; j < other_free.size(); ++j) {
          t.lhs_contracting_dimensions.push_back(ct_other_free_start +
                                                 static_cast<std::int64_t>(j));
          t.rhs_contracting_dimensions.push_back(other_free[j]);
        }
        Value r = b_.dot_general(ct, other, t);
        // r: [batch, my free (in order), other's contracting dims in increasing order].
        std::vector<std::int64_t> sorted_other_contracting = other_contracting;
        std::sort(sorted_other_contracting.begin(), sorted_other_contracting.end());
        std::vector<std::int64_t> perm(static_cast<std::size_t>(mine.rank()));
        for (std::int64_t i = 0; i < nb; ++i)
          perm[static_cast<std::size_t>(my_batch[static_cast<std::size_t>(i)])] = i;
        for (std::size_t j = 0; j < my_free.size(); ++j)
          perm[static_cast<std::size_t>(my_free[j])] = nb + static_cast<std::int64_t>(j);
        const std::int64_t n_my_free = static_cast<std::int64_t>(my_free.size());
        for (std::size_t k = 0; k < my_contracting.size(); ++k) {
          const auto pos = std::find(sorted_other_contracting.begin(),
                                     sorted_other_contracting.end(), other_contracting[k]) -
                           sorted_other_contracting.begin();
          perm[static_cast<std::size_t>(my_contracting[k])] = nb + n_my_free + pos;
        }
        bool identity = true;
        for (std::size_t i = 0; i < perm.size(); ++i)
          identity = identity && perm[i] == static_cast<std::int64_t>(i);
        return identity ? r : b_.transpose(r, perm);
      };
      if (lhs_linear)
        send(ops[0], side(true));
      else
        send(ops[1], side(false));
      return;
    }
    case OpCode::kTriangularSolve:
      // The transpose in b is another solve with op(a) transposed (conjugated for ADJOINT);
      // not written yet.
      fail(unimplemented_error(
          "autodiff: reverse mode (vjp, grad) of triangular_solve is not implemented; forward "
          "mode (jvp) in b is"));
      return;
    case OpCode::kFft:
      // FFT and IFFT are their own transposes (the DFT matrix is symmetric); RFFT and IRFFT
      // need the Hermitian halves weighted, and none of the four rules is written yet.
      fail(unimplemented_error(
          "autodiff: reverse mode (vjp, grad) of fft is not implemented; forward mode (jvp) is"));
      return;
    case OpCode::kConvolution:
      // The transpose of a convolution in either operand is another convolution (of the
      // cotangent with the kernel, or with the lhs); that rule is not written yet.
      fail(unimplemented_error(
          "autodiff: reverse mode (vjp, grad) of convolution is not implemented; forward mode "
          "(jvp) is"));
      return;
    default:
      fail(internal_error(str_cat("autodiff: no transpose rule for linear op ", op_name(e.op))));
      return;
  }
}

// ---- JVP rules ---------------------------------------------------------------------------------

/// What a reduce body computes, when it is one the derivative rules know.
enum class ReduceKind { kSum, kProduct, kMax, kMin, kArgMax, kArgMin, kOther };

inline ReduceKind reduce_kind(const Graph& body, std::size_t n_inputs) {
  if (n_inputs == 1 && body.num_nodes() == 3 && body.outputs().size() == 1) {
    const Node& n = body.node(body.outputs()[0]);
    const bool on_params = n.operands.size() == 2 &&
                           body.node(n.operands[0]).op == OpCode::kParameter &&
                           body.node(n.operands[1]).op == OpCode::kParameter &&
                           n.operands[0].node != n.operands[1].node;
    if (on_params) {
      switch (n.op) {
        case OpCode::kAdd: return ReduceKind::kSum;
        case OpCode::kMultiply: return ReduceKind::kProduct;
        case OpCode::kMaximum: return ReduceKind::kMax;
        case OpCode::kMinimum: return ReduceKind::kMin;
        default: break;
      }
    }
  }
  if (n_inputs == 2 && body.num_parameters() == 4) {
    const DType vt = body.shape(body.parameters()[0]).dtype();
    const DType it = body.shape(body.parameters()[1]).dtype();
    for (auto [dir, kind] : {std::pair{ComparisonDirection::kGt, ReduceKind::kArgMax},
                             std::pair{ComparisonDirection::kLt, ReduceKind::kArgMin}}) {
      StatusOr<Graph> expected = make_arg_reduce_body(dir, vt, it);
      if (expected.ok() && expected->nodes().size() == body.nodes().size() &&
          std::equal(expected->nodes().begin(), expected->nodes().end(), body.nodes().begin()) &&
          std::equal(expected->outputs().begin(), expected->outputs().end(), body.outputs().begin(),
                     body.outputs().end()))
        return kind;
    }
  }
  return ReduceKind::kOther;
}

inline StatusOr<Graph> differentiate(const Graph& g, const std::vector<bool>& wrt, bool forward);

/// Emits one node's primal results and computes its results' tangents.
class JvpRules {
 public:
  using Lin = Linearizer::Lin;
  static constexpr Lin kZero = Linearizer::kZero;

  JvpRules(GraphBuilder& b, Linearizer& l) : b_(b), l_(l) {}

  Status apply(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
               std::vector<Value>& y, std::vector<Lin>& ty) {
    const bool any = std::any_of(t.begin(), t.end(), [](Lin x) { return x != kZero; });
    if (any && is_control_flow(n.op)) return control_flow(n, p, t, y, ty);
    if (n.op == OpCode::kSort && any) return sort(n, p, t, y, ty);
    y = b_.op(n.op, p, n.attrs, n.bodies);
    ty.assign(y.size(), kZero);
    PJRT_LITE_RETURN_IF_ERROR(b_.status());
    if (!any) return ok_status();
    if (n.op == OpCode::kReduce) return reduce(n, p, t, y, ty);
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

  /// while, case and if in forward mode: the op again, its regions replaced by their jvps,
  /// carrying a tangent next to each floating-point or complex value the regions take and
  /// return (a loop carries its tangents from turn to turn). Reverse mode would need the
  /// transpose of a loop: UNIMPLEMENTED.
  Status control_flow(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
                      std::vector<Value>& y, std::vector<Lin>& ty) {
    if (!l_.forward())
      return unimplemented_error(str_cat("autodiff: ", op_name(n.op),
                                         " has no reverse-mode rule (forward mode, jvp, has one)"));
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
      case OpCode::kTriangularSolve:
        // Linear in b: d(op(a)^-1 b) = op(a)^-1 db. The term in da, -op(a)^-1 op(da) x with da
        // masked to the triangle read, is not written yet.
        if (t[0] != kZero) {
          l_.fail(unimplemented_error(
              "autodiff: jvp of triangular_solve with respect to a (the matrix) is not "
              "implemented; with respect to b it is"));
          return kZero;
        }
        if (t[1] == kZero) return kZero;
        return l_.apply(n.op, {L::coef(p[0]), L::lin(t[1])}, n.attrs);
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
  /// `dim` (index is s32, of t's dims but for `dim`), as a dot_general with the one-hot
  /// matrix of `index` and a transpose, so that reverse mode transposes it with the rules it
  /// has. It costs |index| * (t's size along dim) memory: fine for the rows sort and top_k
  /// see in practice, quadratic for long ones.
  Lin take_along(Lin t, Value index, Value like, std::int64_t dim) {
    using L = Linearizer;
    const Shape ts = shape(like), is = shape(index);
    const std::int64_t rank = ts.rank();
    std::vector<std::int64_t> hot_dims = vec(is.dims());
    hot_dims.push_back(ts.dim(dim));
    std::vector<std::int64_t> first(static_cast<std::size_t>(rank));
    for (std::int64_t d = 0; d < rank; ++d) first[static_cast<std::size_t>(d)] = d;
    Value spread = b_.broadcast_in_dim(index, hot_dims, first);
    Value positions = b_.iota(Shape(DType::kS32, hot_dims), rank);
    Value hot = b_.convert(cmp(spread, positions, ComparisonDirection::kEq), ts.dtype());
    DotDimensionNumbers dn;
    for (std::int64_t d = 0; d < rank; ++d)
      if (d != dim) {
        dn.lhs_batching_dimensions.push_back(d);
        dn.rhs_batching_dimensions.push_back(d);
      }
    dn.lhs_contracting_dimensions = {rank};
    dn.rhs_contracting_dimensions = {dim};
    const Lin taken = l_.apply(OpCode::kDotGeneral, {L::coef(hot), L::lin(t)}, dn);
    if (dim == rank - 1) return taken;
    // The dot puts the gathered dimension last; move it back to `dim`.
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 0; d < rank; ++d)
      perm.push_back(d < dim ? d : d == dim ? rank - 1 : d - 1);
    return l_.apply(OpCode::kTranspose, {L::lin(taken)}, TransposeAttrs{perm});
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
        // The elements equal to the result share its tangent evenly.
        Value hit = b_.convert(cmp(x, back(y[0]), ComparisonDirection::kEq), xs.dtype());
        Value count = back(b_.reduce(hit, b_.scalar(xs.dtype(), 0), OpCode::kAdd, dims));
        ty[0] = l_.reduce_sum(l_.scale(tx, b_.divide(hit, count)), dims);
        return l_.status();
      }
      case ReduceKind::kOther: break;
    }
    return unimplemented_error(str_cat(
        "autodiff: reduce with body '", n.bodies[0].name(),
        "' has no derivative rule (sum, product, max, min, argmax and argmin bodies have one"
        "; a traced initial value only for sum)"));
  }

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
  JvpRules rules(b, lin);
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
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    if (node.op == OpCode::kParameter) continue;
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
