#pragma once
// IWYU pragma: private, include "pjrt_lite/transforms/autodiff.hpp"
// The tape of autodiff's linear ops (Linearizer) and the transpose rule of each linear op:
// reverse mode runs these, last op first. The rules for the ops whose transposes are
// themselves larger programs (convolution, fft, triangular_solve, gather, scatter, windows)
// live in transpose_rules.hpp.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"
#include "pjrt_lite/transforms/detail/transpose_rules.hpp"

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
    return push(Entry{OpCode::kParameter, NoAttrs{}, {}, std::move(shape), value, {}, 0, std::nullopt});
  }
  [[nodiscard]] const Shape& shape(Lin l) const {
    return entries_[static_cast<std::size_t>(l)].shape;
  }
  /// The forward-mode value of a tangent (materialized zeros for kZero of `shape`).
  Value value(Lin l, const Shape& shape) {
    if (l == kZero) return zeros(shape);
    return entries_[static_cast<std::size_t>(l)].value;
  }

  /// The linear op `op` over `operands` with regions `bodies` (a reduce without one sums);
  /// its result number `result` is the tangent. kZero when every linear operand is zero.
  /// `chooser` is the select body of a max/min pool's tangent (a reduce_window over value and
  /// tangent pairs), which its transpose, a select_and_scatter, needs.
  Lin apply(OpCode op, std::vector<Operand> operands, Attributes attrs = NoAttrs{},
            std::vector<Graph> bodies = {}, std::size_t result = 0,
            std::optional<Graph> chooser = std::nullopt) {
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
    if (op == OpCode::kReduce && bodies.empty()) bodies.push_back(sum_body(shapes[0].dtype()));
    std::vector<Signature> sigs;
    for (const Graph& g : bodies) sigs.push_back(g.signature());
    StatusOr<std::vector<Shape>> out = infer_shapes(op, shapes, attrs, sigs);
    if (!out.ok()) {
      fail(out.status().with_context("autodiff: a linear op"));
      return kZero;
    }
    Entry e{op, std::move(attrs), std::move(operands), (*out)[result], Value{}, std::move(bodies),
            result, std::move(chooser)};
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

  /// Transposes a linear map with several results: given one cotangent per result (zeros
  /// for the results nothing reached), returns one per linear operand, emitted in the builder.
  using MultiTranspose = std::function<std::vector<Value>(const std::vector<Value>&)>;

  /// Reverse mode only: a linear map of the tangents `operands` (none kZero) with results
  /// of `result_shapes`, whose transpose is `transpose` (a program of its own, as the
  /// transpose of a case or a loop is); one tangent per result. `op` names it in errors.
  std::vector<Lin> apply_multi(OpCode op, const std::vector<Lin>& operands,
                               const std::vector<Shape>& result_shapes, MultiTranspose transpose) {
    if (forward_) {
      fail(internal_error("autodiff: apply_multi in forward mode"));
      return std::vector<Lin>(result_shapes.size(), kZero);
    }
    std::vector<Operand> ops;
    for (Lin l : operands) ops.push_back(lin(l));
    const Lin h = push(Entry{op, NoAttrs{}, std::move(ops), Shape(), Value{}, {}, 0, std::nullopt});
    multi_heads_[h] = Multi{std::move(transpose), result_shapes};
    std::vector<Lin> out;
    for (std::size_t r = 0; r < result_shapes.size(); ++r) {
      out.push_back(push(Entry{op, NoAttrs{}, {}, result_shapes[r], Value{}, {}, r, std::nullopt}));
      multi_parts_[out.back()] = h;
    }
    return out;
  }

  /// The cotangents of the inputs `inputs`, given those of the tangents `outputs`: the
  /// transposed tape. Inputs that nothing reaches get zeros.
  std::vector<Value> transpose(const std::vector<std::pair<Lin, Value>>& outputs,
                               const std::vector<Lin>& inputs) {
    ct_.assign(entries_.size(), Value{});
    part_ct_.assign(entries_.size(), {});
    for (const auto& [l, ct] : outputs)
      if (l != kZero) accumulate(l, ct);
    for (std::size_t i = entries_.size(); i-- > 0 && b_.ok() && status_.ok();) {
      const Entry& e = entries_[i];
      const Lin li = static_cast<Lin>(i);
      if (auto m = multi_heads_.find(li); m != multi_heads_.end()) {
        // Every part comes after its head on the tape, so all are transposed by now.
        std::vector<Value>& cts = part_ct_[i];
        if (cts.empty()) continue;
        cts.resize(m->second.result_shapes.size());
        for (std::size_t r = 0; r < cts.size(); ++r)
          if (!cts[r].valid()) cts[r] = zeros(m->second.result_shapes[r]);
        const std::vector<Value> out = m->second.transpose(cts);
        if (out.size() != e.operands.size()) {
          fail(internal_error(str_cat("autodiff: the transpose of ", op_name(e.op), " returned ",
                                      out.size(), " cotangents for ", e.operands.size(),
                                      " operands")));
          break;
        }
        for (std::size_t k = 0; k < out.size(); ++k) send(e.operands[k], out[k]);
        continue;
      }
      if (!ct_[i].valid() || e.op == OpCode::kParameter) continue;
      if (auto h = multi_parts_.find(li); h != multi_parts_.end()) {
        std::vector<Value>& cts = part_ct_[static_cast<std::size_t>(h->second)];
        if (cts.size() <= e.result) cts.resize(e.result + 1);
        cts[e.result] = ct_[i];
        continue;
      }
      transpose_entry(e, ct_[i]);
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
    std::vector<Graph> bodies;
    std::size_t result = 0;
    std::optional<Graph> chooser;
  };
  // apply_multi's map: its head entry (its linear operands) and one entry per result.
  struct Multi {
    MultiTranspose transpose;
    std::vector<Shape> result_shapes;
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
    return b_.op(e.op, operands, e.attrs, e.bodies)[e.result];
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
  std::map<Lin, Multi> multi_heads_;
  std::map<Lin, Lin> multi_parts_;           // result entry -> head entry
  std::vector<std::vector<Value>> part_ct_;  // per apply_multi head: its results' cotangents
  Status status_;
};

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
      send(ops[1], triangular_solve_transpose(b_, ops[0].primal, ct,
                                              std::get<TriangularSolveAttrs>(e.attrs)));
      return;
    case OpCode::kFft: send(ops[0], fft_transpose(b_, ct, std::get<FftAttrs>(e.attrs))); return;
    case OpCode::kConvolution: {
      const auto& a = std::get<ConvolutionAttrs>(e.attrs);
      if (ops[0].linear)
        send(ops[0], conv_transpose_lhs(b_, ct, ops[1].primal, a, operand_shape(ops[0])));
      else
        send(ops[1], conv_transpose_rhs(b_, ops[0].primal, ct, a, operand_shape(ops[1])));
      return;
    }
    case OpCode::kGather:
      send(ops[0], gather_transpose(b_, ct, ops[1].primal, std::get<GatherAttrs>(e.attrs),
                                    operand_shape(ops[0])));
      return;
    case OpCode::kScatter: {
      // Only scatter-add is recorded (other combiners are rewritten into it by the JVP rule).
      send(ops[0], ct);
      if (ops[2].linear)
        send(ops[2], scatter_add_updates_transpose(b_, ct, ops[1].primal,
                                                   std::get<ScatterAttrs>(e.attrs),
                                                   operand_shape(ops[2])));
      return;
    }
    case OpCode::kReduceWindow: {
      const auto& w = std::get<WindowAttrs>(e.attrs);
      if (!e.chooser) {  // a window sum
        send(ops[0], reduce_window_sum_transpose(b_, ct, w, operand_shape(ops[0])));
        return;
      }
      // A max (min) pool's tangent: its transpose sends each cotangent to the chosen element.
      const WindowAttrs d = w.with_defaults();
      const auto one = [](std::int64_t v) { return v == 1; };
      if (!std::all_of(d.base_dilations.begin(), d.base_dilations.end(), one) ||
          !std::all_of(d.window_dilations.begin(), d.window_dilations.end(), one)) {
        fail(unimplemented_error(
            "autodiff: reverse mode of a max/min reduce_window with base or window dilation is "
            "not implemented (select_and_scatter takes no dilation); forward mode is"));
        return;
      }
      const DType dt = e.shape.dtype();
      send(ops[2], b_.select_and_scatter(ops[1].primal, ct, zero_scalar(dt), *e.chooser,
                                         sum_body(dt), d));
      return;
    }
    // The collectives, over the same process groups: psum's transpose is psum (every
    // participant's cotangent reaches every summand), all_gather's sums each part back to its
    // owner (reduce_scatter), reduce_scatter's gathers, all_to_all's sends the parts back
    // (split and concat dimensions swapped), collective_permute's runs the pairs backwards.
    case OpCode::kAllReduce: send(ops[0], b_.op(OpCode::kAllReduce, {ct}, e.attrs, e.bodies)[0]); return;
    case OpCode::kAllGather:
      send(ops[0], b_.op(OpCode::kReduceScatter, {ct}, e.attrs, {sum_body(e.shape.dtype())})[0]);
      return;
    case OpCode::kReduceScatter: send(ops[0], b_.op(OpCode::kAllGather, {ct}, e.attrs)[0]); return;
    case OpCode::kAllToAll: {
      CollectiveAttrs a = std::get<CollectiveAttrs>(e.attrs);
      std::swap(a.dimension, a.concat_dimension);
      send(ops[0], b_.op(OpCode::kAllToAll, {ct}, a)[0]);
      return;
    }
    case OpCode::kCollectivePermute: {
      CollectiveAttrs a = std::get<CollectiveAttrs>(e.attrs);
      for (std::size_t r = 0; r + 1 < a.groups.size(); r += 2) std::swap(a.groups[r], a.groups[r + 1]);
      send(ops[0], b_.collective_permute(ct, a));
      return;
    }
    case OpCode::kCollectiveBroadcast: {
      // Every member's cotangent goes back to its group's source (its first member), which
      // sums them: one collective_permute per position k in the groups, each sending member k
      // of every group to that group's source (k = 0 keeps the source's own); members of no
      // group, and members other than sources, receive nothing, so theirs is zero.
      const auto& a = std::get<CollectiveAttrs>(e.attrs);
      Value sum;
      for (std::int64_t k = 0; k < a.group_size; ++k) {
        CollectiveAttrs pairs;
        pairs.channel_id = a.channel_id;
        pairs.channel_type = a.channel_type;
        pairs.num_partitions = a.num_partitions;
        pairs.group_size = 2;
        for (std::size_t r = 0; r < a.group_count(); ++r) {
          const auto group = a.group(r);
          if (group[static_cast<std::size_t>(k)] < 0 || group[0] < 0) continue;
          pairs.groups.push_back(group[static_cast<std::size_t>(k)]);
          pairs.groups.push_back(group[0]);
        }
        if (pairs.groups.empty()) continue;
        const Value part = b_.collective_permute(ct, pairs);
        sum = sum.valid() ? b_.add(sum, part) : part;
      }
      send(ops[0], sum.valid() ? sum : zeros(e.shape));
      return;
    }
    case OpCode::kSelectAndScatter: {
      const Shape x = operand_shape(ops[0]);
      StatusOr<Graph> chooser = chooser_body(e.bodies[0], x.dtype(), e.shape.dtype());
      if (!chooser.ok()) {
        fail(chooser.status());
        return;
      }
      send(ops[1], choose(b_, ops[0].primal, ct, *chooser, std::get<WindowAttrs>(e.attrs)));
      return;
    }
    default:
      fail(internal_error(str_cat("autodiff: no transpose rule for linear op ", op_name(e.op))));
      return;
  }
}

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

}  // namespace detail

}  // namespace pjrt_lite
