#pragma once
// GraphBuilder: builds a Graph one op at a time, in the style of XlaBuilder.
//
//   GraphBuilder b("affine");
//   Value x = b.parameter(Shape(DType::kF32, {2, 3}));
//   Value one = b.broadcast_in_dim(b.constant(1.0f), {2, 3}, {});
//   StatusOr<Graph> g = b.build({b.add(x, one)});
//
// Shapes are inferred at each call (shape_inference.hpp). The first error is sticky: it is
// kept, later calls return invalid Values and do nothing, and build() returns that error, so
// a frontend can chain calls and check once.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"
#include "pjrt_lite/ir/verifier.hpp"

namespace pjrt_lite::inline v0_1 {

/// Builds one Graph. Not thread-safe: use one builder per thread. Move-only, because the
/// Values it hands out carry its id and a copy would accept the original's Values.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "main") : name_(std::move(name)), id_(next_id()) {}
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;
  GraphBuilder(GraphBuilder&&) noexcept = default;
  GraphBuilder& operator=(GraphBuilder&&) noexcept = default;

  [[nodiscard]] const std::string& name() const { return name_; }
  /// The id stamped on this builder's Values; unique in the process.
  [[nodiscard]] std::uint32_t id() const { return id_; }
  /// OK, or the first error of any call so far.
  [[nodiscard]] Status status() const { return status_; }
  [[nodiscard]] bool ok() const { return status_.ok(); }
  /// The shape of one of this builder's values.
  [[nodiscard]] StatusOr<Shape> shape(Value v) const {
    PJRT_LITE_RETURN_IF_ERROR(check_value(v, "shape: value"));
    return value_shape(v);
  }

  // ---- The generic entry point ----------------------------------------------------------

  /// Adds a node of any op: checks that the operands are this builder's, infers the result
  /// shapes, and returns one Value per result (N invalid ones after an error, N being what
  /// the op would have returned). Every method below comes through here, and so do
  /// transforms and parsers. The IR has no layouts: a parameter's or iota's shape and a
  /// constant's literal are stored in the default layout.
  std::vector<Value> op(OpCode code, const std::vector<Value>& operands,
                        Attributes attrs = NoAttrs{}, std::vector<Graph> bodies = {}) {
    std::size_t n_results = expected_result_count(code, operands.size(), bodies);
    if (const auto* l = std::get_if<LinalgAttrs>(&attrs); l && code == OpCode::kLinalg)
      n_results = linalg_result_count(
          l->routine, !operands.empty() && contains(operands[0]) &&
                          is_complex(value_shape(operands[0]).dtype()));
    if (const auto* c = std::get_if<CollectiveAttrs>(&attrs);
        c && c->has_dynamic_root && code == OpCode::kCollectiveBroadcast && operands.size() > 1)
      n_results = operands.size() - 1;
    if (const auto* c = std::get_if<ChannelAttrs>(&attrs); c && (code == OpCode::kRecv || code == OpCode::kInfeed))
      n_results = c->payload.size() + 1;
    if (!status_.ok()) return dummies(n_results);
    if (!is_valid(code))
      return fail(n_results, invalid_argument_error(str_cat("invalid opcode (enum value ",
                                                            static_cast<int>(code), ")")));
    std::vector<Shape> shapes;
    std::vector<Value> stored;
    for (std::size_t k = 0; k < operands.size(); ++k) {
      Status s = check_value(operands[k], str_cat(op_name(code), ": operand ", k));
      if (!s.ok()) return fail(n_results, s);
      shapes.push_back(value_shape(operands[k]));
      stored.push_back(operands[k].detached());
    }
    std::vector<Signature> signatures;
    for (std::size_t k = 0; k < bodies.size(); ++k) {
      Status s = verify(bodies[k]);
      if (!s.ok()) return fail(n_results, s.with_context(str_cat(op_name(code), ": body ", k)));
      signatures.push_back(bodies[k].signature());
    }
    normalize_layout(attrs);
    if (auto* p = std::get_if<ParameterAttrs>(&attrs); p && code == OpCode::kParameter) {
      if (auto it = parameter_nodes_.find(p->number); it != parameter_nodes_.end())
        return fail(n_results,
                    invalid_argument_error(str_cat("parameter: number ", p->number,
                                                   " is already used by %", it->second)));
    }
    StatusOr<std::vector<Shape>> results = infer_shapes(code, shapes, attrs, signatures);
    if (!results.ok()) return fail(n_results, results.status());

    const auto node_index = static_cast<std::int32_t>(nodes_.size());
    if (code == OpCode::kParameter) {
      const std::int64_t number = std::get<ParameterAttrs>(attrs).number;
      parameter_nodes_[number] = node_index;
      next_parameter_ = std::max(next_parameter_, number + 1);
    }
    std::vector<Value> out;
    for (std::size_t r = 0; r < results->size(); ++r)
      out.push_back(Value{node_index, static_cast<std::int32_t>(r), id_});
    nodes_.push_back(
        Node{code, std::move(stored), std::move(attrs), std::move(*results), std::move(bodies)});
    return out;
  }
  /// A single-result op through op().
  Value op1(OpCode code, const std::vector<Value>& operands, Attributes attrs = NoAttrs{}) {
    return op(code, operands, std::move(attrs)).front();
  }
  /// Any unary element-wise op (abs .. imag).
  Value unary(OpCode code, Value operand) {
    if (!is_unary(code) && status_.ok())
      return fail(1, invalid_argument_error(str_cat(op_name(code), ": is not a unary op"))).front();
    return op1(code, {operand});
  }
  /// Any binary element-wise op (add .. complex).
  Value binary(OpCode code, Value lhs, Value rhs) {
    if (!is_binary(code) && status_.ok())
      return fail(1, invalid_argument_error(str_cat(op_name(code), ": is not a binary op")))
          .front();
    return op1(code, {lhs, rhs});
  }

  // ---- Sources ---------------------------------------------------------------------------

  /// The next parameter: number one above the highest so far.
  Value parameter(Shape shape) { return parameter(next_parameter_, std::move(shape)); }
  /// Parameter `number`; numbers must end up 0..n-1 without gaps (checked by build()).
  Value parameter(std::int64_t number, Shape shape) {
    return op1(OpCode::kParameter, {}, ParameterAttrs{number, std::move(shape)});
  }
  Value constant(Literal value) {
    return op1(OpCode::kConstant, {},
               ConstantAttrs{std::make_shared<const Literal>(std::move(value))});
  }
  /// A rank-0 constant: b.constant(2.0f) is an f32, b.constant(2) an s32.
  template <Element T>
  Value constant(T value) {
    return constant(Literal::scalar(value));
  }
  /// A rank-0 constant of `dtype` holding `value` converted with convert's rules.
  Value scalar(DType dtype, double value) {
    if (!is_valid(dtype)) {
      if (status_.ok())
        return fail(1, invalid_argument_error(str_cat("constant: invalid dtype (enum value ",
                                                      static_cast<int>(dtype), ")")))
            .front();
      return Value{};
    }
    // A narrow type rounds or wraps from f64, as convert does.
    if (is_narrow(dtype)) return constant(*Literal::scalar(value).convert(dtype));
    return visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
      return constant(Literal::scalar(convert_element<T>(value)));
    });
  }
  Value iota(Shape shape, std::int64_t iota_dimension) {
    return op1(OpCode::kIota, {}, IotaAttrs{std::move(shape), iota_dimension});
  }

  // ---- Unary element-wise ----------------------------------------------------------------

  Value abs(Value x) { return op1(OpCode::kAbs, {x}); }
  Value negate(Value x) { return op1(OpCode::kNegate, {x}); }
  Value sign(Value x) { return op1(OpCode::kSign, {x}); }
  Value exponential(Value x) { return op1(OpCode::kExponential, {x}); }
  Value exponential_minus_one(Value x) { return op1(OpCode::kExponentialMinusOne, {x}); }
  Value log(Value x) { return op1(OpCode::kLog, {x}); }
  Value log_plus_one(Value x) { return op1(OpCode::kLogPlusOne, {x}); }
  Value sqrt(Value x) { return op1(OpCode::kSqrt, {x}); }
  Value rsqrt(Value x) { return op1(OpCode::kRsqrt, {x}); }
  Value cbrt(Value x) { return op1(OpCode::kCbrt, {x}); }
  Value tanh(Value x) { return op1(OpCode::kTanh, {x}); }
  Value logistic(Value x) { return op1(OpCode::kLogistic, {x}); }
  Value sine(Value x) { return op1(OpCode::kSine, {x}); }
  Value cosine(Value x) { return op1(OpCode::kCosine, {x}); }
  Value tan(Value x) { return op1(OpCode::kTan, {x}); }
  Value floor(Value x) { return op1(OpCode::kFloor, {x}); }
  Value ceil(Value x) { return op1(OpCode::kCeil, {x}); }
  Value round_nearest_afz(Value x) { return op1(OpCode::kRoundNearestAfz, {x}); }
  Value round_nearest_even(Value x) { return op1(OpCode::kRoundNearestEven, {x}); }
  Value is_finite(Value x) { return op1(OpCode::kIsFinite, {x}); }
  /// StableHLO `not` (`not` is a C++ keyword, hence the underscore).
  Value not_(Value x) { return op1(OpCode::kNot, {x}); }
  Value popcnt(Value x) { return op1(OpCode::kPopcnt, {x}); }
  Value count_leading_zeros(Value x) { return op1(OpCode::kCountLeadingZeros, {x}); }
  Value real(Value x) { return op1(OpCode::kReal, {x}); }
  Value imag(Value x) { return op1(OpCode::kImag, {x}); }
  Value acosh(Value x) { return op1(OpCode::kAcosh, {x}); }
  Value asin(Value x) { return op1(OpCode::kAsin, {x}); }
  Value asinh(Value x) { return op1(OpCode::kAsinh, {x}); }
  Value atan(Value x) { return op1(OpCode::kAtan, {x}); }
  Value atanh(Value x) { return op1(OpCode::kAtanh, {x}); }
  Value cosh(Value x) { return op1(OpCode::kCosh, {x}); }
  Value sinh(Value x) { return op1(OpCode::kSinh, {x}); }
  Value erf(Value x) { return op1(OpCode::kErf, {x}); }
  Value erfc(Value x) { return op1(OpCode::kErfc, {x}); }
  Value erf_inv(Value x) { return op1(OpCode::kErfInv, {x}); }
  Value lgamma(Value x) { return op1(OpCode::kLgamma, {x}); }
  Value digamma(Value x) { return op1(OpCode::kDigamma, {x}); }
  Value bessel_i1e(Value x) { return op1(OpCode::kBesselI1e, {x}); }

  // ---- Binary element-wise ---------------------------------------------------------------

  Value add(Value lhs, Value rhs) { return op1(OpCode::kAdd, {lhs, rhs}); }
  Value subtract(Value lhs, Value rhs) { return op1(OpCode::kSubtract, {lhs, rhs}); }
  Value multiply(Value lhs, Value rhs) { return op1(OpCode::kMultiply, {lhs, rhs}); }
  Value divide(Value lhs, Value rhs) { return op1(OpCode::kDivide, {lhs, rhs}); }
  Value remainder(Value lhs, Value rhs) { return op1(OpCode::kRemainder, {lhs, rhs}); }
  Value power(Value lhs, Value rhs) { return op1(OpCode::kPower, {lhs, rhs}); }
  Value maximum(Value lhs, Value rhs) { return op1(OpCode::kMaximum, {lhs, rhs}); }
  Value minimum(Value lhs, Value rhs) { return op1(OpCode::kMinimum, {lhs, rhs}); }
  Value atan2(Value lhs, Value rhs) { return op1(OpCode::kAtan2, {lhs, rhs}); }
  Value next_after(Value x, Value toward) { return op1(OpCode::kNextAfter, {x, toward}); }
  /// StableHLO `and`, `or`, `xor` (C++ keywords, hence the underscores).
  Value and_(Value lhs, Value rhs) { return op1(OpCode::kAnd, {lhs, rhs}); }
  Value or_(Value lhs, Value rhs) { return op1(OpCode::kOr, {lhs, rhs}); }
  Value xor_(Value lhs, Value rhs) { return op1(OpCode::kXor, {lhs, rhs}); }
  Value shift_left(Value lhs, Value rhs) { return op1(OpCode::kShiftLeft, {lhs, rhs}); }
  Value shift_right_arithmetic(Value lhs, Value rhs) {
    return op1(OpCode::kShiftRightArithmetic, {lhs, rhs});
  }
  Value shift_right_logical(Value lhs, Value rhs) {
    return op1(OpCode::kShiftRightLogical, {lhs, rhs});
  }
  /// Real and imaginary parts (f32 or f64) to c64 or c128.
  Value complex(Value real_part, Value imag_part) {
    return op1(OpCode::kComplex, {real_part, imag_part});
  }

  // ---- Other element-wise ----------------------------------------------------------------

  /// kNotype picks the spec's type for the operands' element type (default_comparison_type).
  Value compare(Value lhs, Value rhs, ComparisonDirection direction,
                ComparisonType type = ComparisonType::kNotype) {
    if (type == ComparisonType::kNotype && status_.ok() && contains(lhs))
      type = default_comparison_type(value_shape(lhs).dtype());
    return op1(OpCode::kCompare, {lhs, rhs}, CompareAttrs{direction, type});
  }
  /// pred ? on_true : on_false, element-wise; pred may be rank 0.
  Value select(Value pred, Value on_true, Value on_false) {
    return op1(OpCode::kSelect, {pred, on_true, on_false});
  }
  /// min(max(operand, min), max); min and max may be rank 0.
  Value clamp(Value min, Value operand, Value max) {
    return op1(OpCode::kClamp, {min, operand, max});
  }
  Value convert(Value operand, DType dtype) {
    return op1(OpCode::kConvert, {operand}, ConvertAttrs{dtype});
  }
  Value bitcast_convert(Value operand, DType dtype) {
    return op1(OpCode::kBitcastConvert, {operand}, ConvertAttrs{dtype});
  }

  // ---- Data movement ---------------------------------------------------------------------

  /// A result of `dims` where operand dimension d maps to result dimension
  /// broadcast_dimensions[d]; a scalar broadcasts with broadcast_dimensions = {}.
  Value broadcast_in_dim(Value operand, std::vector<std::int64_t> dims,
                         std::vector<std::int64_t> broadcast_dimensions) {
    return op1(OpCode::kBroadcastInDim, {operand},
               BroadcastInDimAttrs{std::move(dims), std::move(broadcast_dimensions)});
  }
  Value reshape(Value operand, std::vector<std::int64_t> dims) {
    return op1(OpCode::kReshape, {operand}, ReshapeAttrs{std::move(dims)});
  }
  Value transpose(Value operand, std::vector<std::int64_t> permutation) {
    return op1(OpCode::kTranspose, {operand}, TransposeAttrs{std::move(permutation)});
  }
  /// Empty strides mean 1 in every dimension.
  Value slice(Value operand, std::vector<std::int64_t> start_indices,
              std::vector<std::int64_t> limit_indices, std::vector<std::int64_t> strides = {}) {
    if (strides.empty()) strides.assign(start_indices.size(), 1);
    return op1(OpCode::kSlice, {operand},
               SliceAttrs{std::move(start_indices), std::move(limit_indices), std::move(strides)});
  }
  Value concatenate(const std::vector<Value>& operands, std::int64_t dimension) {
    return op1(OpCode::kConcatenate, operands, ConcatenateAttrs{dimension});
  }
  /// Empty interior padding means 0 in every dimension.
  Value pad(Value operand, Value padding_value, std::vector<std::int64_t> edge_padding_low,
            std::vector<std::int64_t> edge_padding_high,
            std::vector<std::int64_t> interior_padding = {}) {
    if (interior_padding.empty()) interior_padding.assign(edge_padding_low.size(), 0);
    return op1(OpCode::kPad, {operand, padding_value},
               PadAttrs{std::move(edge_padding_low), std::move(edge_padding_high),
                        std::move(interior_padding)});
  }
  Value reverse(Value operand, std::vector<std::int64_t> dimensions) {
    return op1(OpCode::kReverse, {operand}, ReverseAttrs{std::move(dimensions)});
  }
  /// start_indices: one rank-0 integer Value per dimension (clamped at run time).
  Value dynamic_slice(Value operand, const std::vector<Value>& start_indices,
                      std::vector<std::int64_t> slice_sizes) {
    std::vector<Value> operands{operand};
    operands.insert(operands.end(), start_indices.begin(), start_indices.end());
    return op1(OpCode::kDynamicSlice, operands, DynamicSliceAttrs{std::move(slice_sizes)});
  }
  Value dynamic_update_slice(Value operand, Value update, const std::vector<Value>& start_indices) {
    std::vector<Value> operands{operand, update};
    operands.insert(operands.end(), start_indices.begin(), start_indices.end());
    return op1(OpCode::kDynamicUpdateSlice, operands);
  }

  /// reduce_precision: each element rounded (to nearest even) to a float format with
  /// `exponent_bits` and `mantissa_bits`, overflowing to infinity and underflowing to zero,
  /// then back; NaN stays NaN.
  Value reduce_precision(Value operand, std::int64_t exponent_bits, std::int64_t mantissa_bits) {
    return op1(OpCode::kReducePrecision, {operand},
               ReducePrecisionAttrs{exponent_bits, mantissa_bits});
  }

  /// Variadic sort along `dimension`: one result per input, each permuted by the order
  /// `comparator` (E0, E0, ..., EN-1, EN-1) -> i1 defines (see make_sort_comparator).
  std::vector<Value> sort(const std::vector<Value>& inputs, Graph comparator,
                          std::int64_t dimension, bool is_stable = false) {
    std::vector<Graph> bodies;
    bodies.push_back(std::move(comparator));
    return op(OpCode::kSort, inputs, SortAttrs{dimension, is_stable}, std::move(bodies));
  }
  /// sort of one input by make_sort_comparator(direction, its dtype): ascending for kLt.
  Value sort(Value input, std::int64_t dimension,
             ComparisonDirection direction = ComparisonDirection::kLt, bool is_stable = false);
  /// top_k: the k largest elements along the last dimension, largest first (floats in
  /// totalOrder: NaN above +inf, -NaN below -inf), ties by lower index; and their s32
  /// indices.
  std::vector<Value> top_k(Value operand, std::int64_t k) {
    return op(OpCode::kTopK, {operand}, TopKAttrs{k});
  }

  // ---- Reductions and contractions -------------------------------------------------------

  /// Variadic reduce: one result per input. `body` takes 2N rank-0 parameters (N
  /// accumulators, then N elements) and returns N rank-0 values.
  std::vector<Value> reduce(const std::vector<Value>& inputs, const std::vector<Value>& init_values,
                            Graph body, std::vector<std::int64_t> dimensions) {
    std::vector<Value> operands = inputs;
    operands.insert(operands.end(), init_values.begin(), init_values.end());
    std::vector<Graph> bodies;
    bodies.push_back(std::move(body));
    return op(OpCode::kReduce, operands, ReduceAttrs{std::move(dimensions)}, std::move(bodies));
  }
  Value reduce(Value input, Value init_value, Graph body, std::vector<std::int64_t> dimensions) {
    return reduce(std::vector<Value>{input}, std::vector<Value>{init_value}, std::move(body),
                  std::move(dimensions))
        .front();
  }
  /// reduce with the body make_binary_body(binary_op, input's dtype): b.reduce(x, zero,
  /// OpCode::kAdd, {1}) sums over dimension 1.
  Value reduce(Value input, Value init_value, OpCode binary_op,
               std::vector<std::int64_t> dimensions);

  /// Variadic reduce_window: one result per input, each element the reduction by `body` (as
  /// for reduce) of one window of the padded, dilated inputs. Empty lists in `window` take
  /// their defaults (WindowAttrs::with_defaults).
  std::vector<Value> reduce_window(const std::vector<Value>& inputs,
                                   const std::vector<Value>& init_values, Graph body,
                                   const WindowAttrs& window) {
    std::vector<Value> operands = inputs;
    operands.insert(operands.end(), init_values.begin(), init_values.end());
    std::vector<Graph> bodies;
    bodies.push_back(std::move(body));
    return op(OpCode::kReduceWindow, operands, window.with_defaults(), std::move(bodies));
  }
  /// reduce_window with the body make_binary_body(binary_op, input's dtype): a max pool is
  /// b.reduce_window(x, lowest, OpCode::kMaximum, {{2, 2}, {2, 2}}).
  Value reduce_window(Value input, Value init_value, OpCode binary_op, const WindowAttrs& window);

  /// select_and_scatter(operand, source, init_value): each source element goes to the operand
  /// element that `select` (E, E) -> i1 picks in its window, combined there by `scatter`
  /// (E, E) -> E into a result that starts as init_value everywhere.
  Value select_and_scatter(Value operand, Value source, Value init_value, Graph select,
                           Graph scatter, const WindowAttrs& window) {
    std::vector<Graph> bodies;
    bodies.push_back(std::move(select));
    bodies.push_back(std::move(scatter));
    return op(OpCode::kSelectAndScatter, {operand, source, init_value}, window.with_defaults(),
              std::move(bodies))
        .front();
  }
  /// select_and_scatter whose select compares with `direction` (GE picks the first maximum,
  /// as a max pool's gradient does) and whose scatter applies `scatter_op`.
  Value select_and_scatter(Value operand, Value source, Value init_value,
                           ComparisonDirection direction, OpCode scatter_op,
                           const WindowAttrs& window);

  // ---- Many processes --------------------------------------------------------------------

  /// This process's replica and partition number in the grid (u32 scalars).
  Value replica_id() { return op1(OpCode::kReplicaId, {}); }
  Value partition_id() { return op1(OpCode::kPartitionId, {}); }
  /// all_reduce: each result is the reduction by `body` ((E, E) -> E on scalars) of its
  /// operand over the processes of this process's group (CollectiveAttrs).
  std::vector<Value> all_reduce(const std::vector<Value>& operands, Graph body,
                                CollectiveAttrs groups) {
    std::vector<Graph> bodies;
    bodies.push_back(std::move(body));
    return op(OpCode::kAllReduce, operands, std::move(groups), std::move(bodies));
  }
  /// all_reduce of one operand with the body make_binary_body(binary_op, its dtype).
  Value all_reduce(Value operand, OpCode binary_op, CollectiveAttrs groups);
  /// all_gather: the operands of the group's processes, concatenated along `a.dimension`.
  std::vector<Value> all_gather(const std::vector<Value>& operands, CollectiveAttrs a) {
    return op(OpCode::kAllGather, operands, std::move(a));
  }
  /// reduce_scatter: the all_reduce of `operand`, split along `a.dimension` into one part per
  /// process of the group; each process keeps its own part.
  Value reduce_scatter(Value operand, Graph body, CollectiveAttrs a) {
    std::vector<Graph> bodies;
    bodies.push_back(std::move(body));
    return op(OpCode::kReduceScatter, {operand}, std::move(a), std::move(bodies)).front();
  }
  /// all_to_all: each operand split along `a.dimension` into split_count parts, part k sent to
  /// the group's k-th process, the parts received concatenated along a.concat_dimension.
  std::vector<Value> all_to_all(const std::vector<Value>& operands, CollectiveAttrs a) {
    return op(OpCode::kAllToAll, operands, std::move(a));
  }
  /// collective_permute: the operand of the process that names this one as its target
  /// (a.groups holds (source, target) pairs), zeros where none does.
  Value collective_permute(Value operand, CollectiveAttrs a) {
    return op1(OpCode::kCollectivePermute, {operand}, std::move(a));
  }
  /// collective_broadcast: the operands of the first process of this process's group (with
  /// a.has_dynamic_root, the last operand is an s32[N] of group positions, one per other
  /// operand, and there are N results), zeros for a process in no group.
  std::vector<Value> collective_broadcast(const std::vector<Value>& operands, CollectiveAttrs a) {
    return op(OpCode::kCollectiveBroadcast, operands, std::move(a));
  }

  // ---- Tokens and side effects --------------------------------------------------------

  /// after_all: a token that follows every one of `tokens` (none: a fresh token).
  Value after_all(const std::vector<Value>& tokens = {}) { return op1(OpCode::kAfterAll, tokens); }
  /// send: `data` to the channel of `a`, after `token`; the result token follows the send.
  Value send(std::vector<Value> data, Value token, ChannelAttrs a) {
    data.push_back(token);
    return op1(OpCode::kSend, data, std::move(a));
  }
  /// recv: values of the types a.payload lists from the channel of `a`, after `token`; then
  /// the token that follows the receive.
  std::vector<Value> recv(Value token, ChannelAttrs a) { return op(OpCode::kRecv, {token}, std::move(a)); }
  /// infeed: the next entry of the device's infeed queue, of the types a.payload lists; then
  /// a token.
  std::vector<Value> infeed(Value token, ChannelAttrs a) { return op(OpCode::kInfeed, {token}, std::move(a)); }
  /// outfeed: `data` onto the device's outfeed queue, after `token`.
  Value outfeed(std::vector<Value> data, Value token, ChannelAttrs a = {}) {
    data.push_back(token);
    return op1(OpCode::kOutfeed, data, std::move(a));
  }

  // ---- Control flow ----------------------------------------------------------------------

  /// while(operands...): the values start as `operands` and become body(values...) for as
  /// long as cond(values...) is true; one result per operand. `cond` takes the operands'
  /// types and returns a rank-0 pred; `body` takes and returns the operands' types.
  std::vector<Value> while_loop(const std::vector<Value>& operands, Graph cond, Graph body) {
    std::vector<Graph> bodies;
    bodies.push_back(std::move(cond));
    bodies.push_back(std::move(body));
    return op(OpCode::kWhile, operands, NoAttrs{}, std::move(bodies));
  }
  /// case(index, operands...): runs branches[index] (the last branch when the s32 `index` is
  /// out of range) on `operands` and returns its results. Every branch takes the operands'
  /// types and returns the same types.
  std::vector<Value> case_op(Value index, const std::vector<Value>& operands,
                             std::vector<Graph> branches) {
    std::vector<Value> all{index};
    all.insert(all.end(), operands.begin(), operands.end());
    return op(OpCode::kCase, all, NoAttrs{}, std::move(branches));
  }
  /// if(pred, operands...): true_branch(operands...) when the rank-0 `pred` is true, else
  /// false_branch(operands...).
  std::vector<Value> if_op(Value pred, const std::vector<Value>& operands, Graph true_branch,
                           Graph false_branch) {
    std::vector<Value> all{pred};
    all.insert(all.end(), operands.begin(), operands.end());
    std::vector<Graph> bodies;
    bodies.push_back(std::move(true_branch));
    bodies.push_back(std::move(false_branch));
    return op(OpCode::kIf, all, NoAttrs{}, std::move(bodies));
  }

  // ---- Gather and scatter ----------------------------------------------------------------

  /// gather(operand, start_indices): slices of the operand at the (clamped) starts the index
  /// vectors name, laid out as the dimension numbers say.
  Value gather(Value operand, Value start_indices, GatherAttrs dimension_numbers) {
    return op1(OpCode::kGather, {operand, start_indices}, std::move(dimension_numbers));
  }

  /// scatter(input, scatter_indices, updates): the input with each update element combined
  /// into the element its index names, by `body` (old, update) -> new of rank-0 values (see
  /// make_binary_body, make_replace_body). Updates whose index falls outside the input are
  /// dropped.
  Value scatter(Value input, Value scatter_indices, Value updates, Graph body,
                ScatterAttrs dimension_numbers) {
    std::vector<Graph> bodies;
    bodies.push_back(std::move(body));
    return op(OpCode::kScatter, {input, scatter_indices, updates}, std::move(dimension_numbers),
              std::move(bodies))
        .front();
  }
  /// scatter with the body make_binary_body(binary_op, input's dtype), or make_replace_body
  /// when binary_op is kParameter: b.scatter(x, idx, upd, OpCode::kAdd, dn) adds.
  Value scatter(Value input, Value scatter_indices, Value updates, OpCode binary_op,
                ScatterAttrs dimension_numbers);

  Value dot_general(Value lhs, Value rhs, DotDimensionNumbers dimension_numbers) {
    return op1(OpCode::kDotGeneral, {lhs, rhs}, std::move(dimension_numbers));
  }
  /// convolution(lhs, rhs): windows of the lhs contracted with the kernel `rhs`. Empty
  /// window lists in `attrs` take their defaults (ConvolutionAttrs::with_defaults); the
  /// dimension numbers can come from parse_convolution_dimension_numbers.
  Value convolution(Value lhs, Value rhs, const ConvolutionAttrs& attrs) {
    return op1(OpCode::kConvolution, {lhs, rhs}, attrs.with_defaults());
  }
  /// fft(operand): the discrete Fourier transform `fft_type` over the trailing
  /// fft_length.size() dimensions (see FftAttrs).
  Value fft(Value operand, FftType fft_type, std::vector<std::int64_t> fft_length) {
    return op1(OpCode::kFft, {operand}, FftAttrs{fft_type, std::move(fft_length)});
  }
  /// One of jaxlib's LAPACK routines (LinalgAttrs) on a batch of matrices: its results in
  /// jaxlib's order, e.g. getrf(x) -> {lu, pivots, info}.
  std::vector<Value> linalg(const std::vector<Value>& operands, LinalgAttrs attrs) {
    return op(OpCode::kLinalg, operands, attrs);
  }
  /// triangular_solve(a, b): x with op(a) x = b (left_side) or x op(a) = b, for each matrix of
  /// the leading (batch) dimensions; see TriangularSolveAttrs.
  Value triangular_solve(Value a, Value b, TriangularSolveAttrs attrs) {
    return op1(OpCode::kTriangularSolve, {a, b}, attrs);
  }
  /// rng_bit_generator(state): {the new state, `output` filled with random bits}, in XLA's
  /// layout (core/random_bits.hpp): THREE_FRY takes state [key, counter] (u64[2]); PHILOX, and
  /// DEFAULT which is PHILOX, u64[2] or u64[3].
  std::vector<Value> rng_bit_generator(Value state, Shape output,
                                       RngAlgorithm algorithm = RngAlgorithm::kThreeFry) {
    return op(OpCode::kRngBitGenerator, {state}, RngBitGeneratorAttrs{algorithm, std::move(output)});
  }
  /// The usual dot of vectors and matrices (rank 1 or 2 each): contracts lhs's last
  /// dimension with rhs's first.
  Value dot(Value lhs, Value rhs) {
    if (!status_.ok()) return Value{};
    if (!contains(lhs) || !contains(rhs)) return dot_general(lhs, rhs, {});  // reports the operand
    const std::int64_t lr = value_shape(lhs).rank(), rr = value_shape(rhs).rank();
    if (lr < 1 || lr > 2 || rr < 1 || rr > 2)
      return fail(1, invalid_argument_error(str_cat("dot: operands must have rank 1 or 2, got ",
                                                    value_shape(lhs), " and ", value_shape(rhs))))
          .front();
    return dot_general(lhs, rhs, DotDimensionNumbers{{}, {}, {lr - 1}, {0}});
  }

  /// {max, index of the max} along `dimension`, as jnp.argmax computes them: NaN wins, ties
  /// go to the lower index. Values of any type but complex; indices of an integer type.
  std::vector<Value> argmax(Value operand, std::int64_t dimension, DType index_type = DType::kS32) {
    return arg_reduce(ComparisonDirection::kGt, operand, dimension, index_type);
  }
  /// {min, index of the min} along `dimension`, like argmax.
  std::vector<Value> argmin(Value operand, std::int64_t dimension, DType index_type = DType::kS32) {
    return arg_reduce(ComparisonDirection::kLt, operand, dimension, index_type);
  }

  // ---- Composition and building ----------------------------------------------------------

  /// Copies the nodes of `graph` (which must be verified) into this builder with its
  /// parameters replaced by `arguments`, and returns the values of its outputs; with
  /// `node_values`, also what each node of `graph` became (its results, in order).
  std::vector<Value> inline_graph(const Graph& graph, const std::vector<Value>& arguments,
                                  std::vector<std::vector<Value>>* node_values = nullptr) {
    const std::size_t n_out = std::max<std::size_t>(graph.outputs().size(), 1);
    if (!status_.ok()) return dummies(n_out);
    if (arguments.size() != graph.parameters().size())
      return fail(n_out, invalid_argument_error(str_cat("inline_graph: graph '", graph.name(),
                                                        "' takes ", graph.parameters().size(),
                                                        " parameters, got ", arguments.size())));
    for (std::size_t k = 0; k < arguments.size(); ++k) {
      Status s = check_value(arguments[k], str_cat("inline_graph: argument ", k));
      if (!s.ok()) return fail(n_out, s);
      if (!value_shape(arguments[k]).same_type_and_dims(graph.shape(graph.parameters()[k])))
        return fail(n_out, invalid_argument_error(str_cat(
                               "inline_graph: argument ", k, " has shape ",
                               value_shape(arguments[k]), " but parameter ", k, " of '",
                               graph.name(), "' has ", graph.shape(graph.parameters()[k]))));
    }
    std::vector<std::vector<Value>> mapped(static_cast<std::size_t>(graph.num_nodes()));
    for (std::size_t k = 0; k < arguments.size(); ++k)
      mapped[static_cast<std::size_t>(graph.parameters()[k].node)] = {arguments[k]};
    for (std::int64_t i = 0; i < graph.num_nodes(); ++i) {
      const Node& node = graph.node(i);
      if (node.op == OpCode::kParameter) continue;
      std::vector<Value> operands;
      for (Value v : node.operands)
        operands.push_back(
            mapped[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
      mapped[static_cast<std::size_t>(i)] = op(node.op, operands, node.attrs, node.bodies);
      if (!status_.ok()) return dummies(n_out);
    }
    std::vector<Value> out;
    for (Value v : graph.outputs())
      out.push_back(mapped[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
    if (node_values != nullptr) *node_values = std::move(mapped);
    return out;
  }

  /// The graph returning `outputs`, or the first error. Parameters must be numbered 0..n-1.
  /// The builder stays usable: build again after adding more nodes.
  [[nodiscard]] StatusOr<Graph> build(const std::vector<Value>& outputs) const {
    PJRT_LITE_RETURN_IF_ERROR(status_);
    std::vector<Value> stored;
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      PJRT_LITE_RETURN_IF_ERROR(check_value(outputs[k], str_cat("build: output ", k)));
      stored.push_back(outputs[k].detached());
    }
    std::int64_t expected = 0;
    for (const auto& [number, node] : parameter_nodes_) {
      if (number != expected)
        return invalid_argument_error(str_cat("build: parameter numbers must be 0..",
                                              parameter_nodes_.size() - 1, " without gaps, but ",
                                              expected, " is missing"));
      ++expected;
    }
    return Graph::from_parts(GraphParts{name_, nodes_, std::move(stored)});
  }
  [[nodiscard]] StatusOr<Graph> build(Value output) const {
    return build(std::vector<Value>{output});
  }

 private:
  static std::uint32_t next_id() {
    static std::atomic<std::uint32_t> counter{1};
    return counter.fetch_add(1, std::memory_order_relaxed);
  }

  std::vector<Value> dummies(std::size_t n) const { return std::vector<Value>(n, Value{}); }
  /// How many Values op() returns for a node, also when it fails: what a well-formed node
  /// of that op would have, so callers can index the results before checking ok().
  static std::size_t expected_result_count(OpCode code, std::size_t operands,
                                           const std::vector<Graph>& bodies) {
    if (code == OpCode::kWhile) return operands;
    if (code == OpCode::kCase || code == OpCode::kIf)
      return bodies.empty() ? 0 : bodies[0].outputs().size();
    return result_count(code, operands);
  }
  std::vector<Value> fail(std::size_t n, Status s) {
    if (status_.ok()) status_ = std::move(s);
    return dummies(n);
  }

  bool contains(Value v) const {
    return v.valid() && v.builder == id_ && static_cast<std::size_t>(v.node) < nodes_.size() &&
           static_cast<std::size_t>(v.index) <
               nodes_[static_cast<std::size_t>(v.node)].results.size();
  }
  const Shape& value_shape(Value v) const {
    return nodes_[static_cast<std::size_t>(v.node)].results[static_cast<std::size_t>(v.index)];
  }
  Status check_value(Value v, const std::string& what) const {
    if (!v.valid())
      return invalid_argument_error(str_cat(what,
                                            " is an invalid Value (default-constructed, or "
                                            "returned by a call that failed)"));
    if (v.builder == 0)
      return invalid_argument_error(str_cat(what, " (", to_string(v),
                                            ") is a Value of a built Graph, not of builder '",
                                            name_, "'; use inline_graph to bring a graph in"));
    if (v.builder != id_)
      return invalid_argument_error(str_cat(what, " (", to_string(v),
                                            ") comes from another builder "
                                            "(id ",
                                            v.builder, "), not from builder '", name_, "' (id ",
                                            id_, ")"));
    if (!contains(v))
      return invalid_argument_error(
          str_cat(what, " (", to_string(v), ") is not a value of builder '", name_, "'"));
    return ok_status();
  }

  static void normalize_layout(Attributes& attrs) {
    if (auto* p = std::get_if<ParameterAttrs>(&attrs)) {
      if (!p->shape.has_default_layout()) p->shape = p->shape.with_default_layout();
    } else if (auto* i = std::get_if<IotaAttrs>(&attrs)) {
      if (!i->shape.has_default_layout()) i->shape = i->shape.with_default_layout();
    } else if (auto* c = std::get_if<ConstantAttrs>(&attrs)) {
      if (c->value && is_valid(c->value->dtype()) && !c->value->shape().has_default_layout())
        c->value = std::make_shared<const Literal>(c->value->with_default_layout());
    } else if (auto* ch = std::get_if<ChannelAttrs>(&attrs)) {
      for (Shape& s : ch->payload)
        if (!s.has_default_layout()) s = s.with_default_layout();
    }
  }

  std::vector<Value> arg_reduce(ComparisonDirection direction, Value operand,
                                std::int64_t dimension, DType index_type);

  std::string name_;
  std::uint32_t id_ = 0;
  std::vector<Node> nodes_;
  std::map<std::int64_t, std::int32_t> parameter_nodes_;  // number -> node, ordered for build()
  std::int64_t next_parameter_ = 0;
  Status status_;
};

/// A reduce body (T, T) -> T applying the binary op `op` to two rank-0 parameters of `dtype`.
inline StatusOr<Graph> make_binary_body(OpCode op, DType dtype) {
  if (!is_binary(op))
    return invalid_argument_error(
        str_cat("make_binary_body: ", op_name(op), " is not a binary op"));
  if (!is_valid(dtype))
    return invalid_argument_error(
        str_cat("make_binary_body: invalid dtype (enum value ", static_cast<int>(dtype), ")"));
  GraphBuilder b(str_cat(op_name(op), "_", dtype_name(dtype)));
  Value x = b.parameter(Shape(dtype, {}));
  Value y = b.parameter(Shape(dtype, {}));
  return b.build({b.binary(op, x, y)});
}

/// A select body (T, T) -> i1 comparing its two rank-0 parameters of `dtype` with `direction`.
inline StatusOr<Graph> make_compare_body(ComparisonDirection direction, DType dtype) {
  if (!is_valid(dtype))
    return invalid_argument_error(
        str_cat("make_compare_body: invalid dtype (enum value ", static_cast<int>(dtype), ")"));
  GraphBuilder b(str_cat("compare_", dtype_name(dtype)));
  Value x = b.parameter(Shape(dtype, {}));
  Value y = b.parameter(Shape(dtype, {}));
  return b.build({b.compare(x, y, direction)});
}

/// A sort comparator for `inputs` inputs, the first of type `dtype`, that orders by the first
/// input alone with `direction` (kLt ascending, kGt descending): floats in totalOrder, as
/// jnp.sort does after putting every NaN last. Parameters 2..2N-1 are typed `others` (the
/// element types of the other inputs) and unused.
inline StatusOr<Graph> make_sort_comparator(ComparisonDirection direction, DType dtype,
                                            const std::vector<DType>& others = {}) {
  if (!is_valid(dtype) || is_complex(dtype))
    return invalid_argument_error(
        str_cat("make_sort_comparator: values of type ", dtype_name(dtype), " have no order"));
  GraphBuilder b(str_cat("sort_", comparison_direction_name(direction), "_", dtype_name(dtype)));
  Value x = b.parameter(Shape(dtype, {}));
  Value y = b.parameter(Shape(dtype, {}));
  for (DType t : others) {
    b.parameter(Shape(t, {}));
    b.parameter(Shape(t, {}));
  }
  return b.build({b.compare(
      x, y, direction,
      is_floating(dtype) ? ComparisonType::kTotalOrder : default_comparison_type(dtype))});
}

/// A scatter body (T, T) -> T that returns its second parameter: the update replaces.
inline StatusOr<Graph> make_replace_body(DType dtype) {
  if (!is_valid(dtype))
    return invalid_argument_error(
        str_cat("make_replace_body: invalid dtype (enum value ", static_cast<int>(dtype), ")"));
  GraphBuilder b(str_cat("replace_", dtype_name(dtype)));
  b.parameter(Shape(dtype, {}));
  Value update = b.parameter(Shape(dtype, {}));
  return b.build({update});
}

/// The body of an argmax (direction kGt) or argmin (kLt) reduce over (value, index) pairs:
/// parameters (value_acc, index_acc, value, index). The extreme wins, NaN beats everything,
/// and among equal values the lower index wins, as in jnp.argmax.
inline StatusOr<Graph> make_arg_reduce_body(ComparisonDirection direction, DType value_type,
                                            DType index_type) {
  if (direction != ComparisonDirection::kGt && direction != ComparisonDirection::kLt)
    return invalid_argument_error(
        str_cat("make_arg_reduce_body: direction must be GT (argmax) or "
                "LT (argmin), got ",
                comparison_direction_name(direction)));
  if (!is_valid(value_type) || is_complex(value_type))
    return invalid_argument_error(
        str_cat("make_arg_reduce_body: values of type ", dtype_name(value_type), " have no order"));
  if (!is_integral(index_type))
    return invalid_argument_error(str_cat("make_arg_reduce_body: index type ",
                                          dtype_name(index_type), " is not an integer type"));
  GraphBuilder b(direction == ComparisonDirection::kGt ? "argmax" : "argmin");
  Value acc = b.parameter(Shape(value_type, {}));
  Value acc_index = b.parameter(Shape(index_type, {}));
  Value x = b.parameter(Shape(value_type, {}));
  Value x_index = b.parameter(Shape(index_type, {}));
  Value take_acc = b.compare(acc, x, direction);
  if (is_floating(value_type))  // a NaN accumulator stays, so NaN propagates
    take_acc = b.or_(take_acc, b.compare(acc, acc, ComparisonDirection::kNe));
  Value tie = b.and_(b.compare(acc, x, ComparisonDirection::kEq),
                     b.compare(acc_index, x_index, ComparisonDirection::kLt));
  Value take_acc_index = b.or_(take_acc, tie);
  return b.build({b.select(take_acc, acc, x), b.select(take_acc_index, acc_index, x_index)});
}

namespace detail {
/// The lowest (or highest) value of a dtype: -inf / +inf for floating point, the limits for
/// integers, false / true for pred. Not for complex.
inline Literal extreme_scalar(DType dtype, bool lowest) {
  // The narrow types: integers their own limits; floats +-inf where the format has it, else
  // their largest finite value.
  if (is_narrow_integral(dtype)) {
    const int bits = bit_width(dtype);
    const std::int64_t lo = is_signed_integral(dtype) ? -(std::int64_t{1} << (bits - 1)) : 0;
    const std::int64_t hi = is_signed_integral(dtype) ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
    return *Literal::scalar<std::int64_t>(lowest ? lo : hi).convert(dtype);
  }
  if (is_narrow_floating(dtype)) {
    const NarrowFloatFormat f = narrow_float_format(dtype);
    const double inf = std::numeric_limits<double>::infinity();
    if (f.kind == NarrowFloatKind::kIeee) return *Literal::scalar<double>(lowest ? -inf : inf).convert(dtype);
    // No infinity: the largest finite value (E8M0's lowest is its smallest, 2^-127).
    const double max = decode_narrow_float(f, static_cast<std::uint8_t>(f.max_finite()));
    const double low = f.kind == NarrowFloatKind::kExponentOnly ? std::ldexp(1.0, -127) : -max;
    return *Literal::scalar<double>(lowest ? low : max).convert(dtype);
  }
  return visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_same_v<T, bool>) {
      return Literal::scalar<bool>(!lowest);
    } else if constexpr (is_float_v<T>) {
      constexpr double inf = std::numeric_limits<double>::infinity();
      return Literal::scalar<T>(convert_element<T>(lowest ? -inf : inf));
    } else if constexpr (is_complex_v<T>) {
      return Literal::scalar<T>(T{});  // callers reject complex first
    } else {
      return Literal::scalar<T>(lowest ? std::numeric_limits<T>::lowest()
                                       : std::numeric_limits<T>::max());
    }
  });
}
}  // namespace detail

inline Value GraphBuilder::reduce(Value input, Value init_value, OpCode binary_op,
                                  std::vector<std::int64_t> dimensions) {
  if (!status_.ok()) return Value{};
  if (Status s = check_value(input, "reduce: operand 0"); !s.ok()) return fail(1, s).front();
  StatusOr<Graph> body = make_binary_body(binary_op, value_shape(input).dtype());
  if (!body.ok()) return fail(1, body.status().with_context("reduce")).front();
  return reduce(input, init_value, std::move(*body), std::move(dimensions));
}

inline Value GraphBuilder::all_reduce(Value operand, OpCode binary_op, CollectiveAttrs groups) {
  if (!status_.ok()) return Value{};
  if (Status s = check_value(operand, "all_reduce: operand 0"); !s.ok()) return fail(1, s).front();
  StatusOr<Graph> body = make_binary_body(binary_op, value_shape(operand).dtype());
  if (!body.ok()) return fail(1, body.status().with_context("all_reduce")).front();
  return all_reduce(std::vector<Value>{operand}, std::move(*body), std::move(groups)).front();
}

inline Value GraphBuilder::scatter(Value input, Value scatter_indices, Value updates,
                                   OpCode binary_op, ScatterAttrs dimension_numbers) {
  if (!status_.ok()) return Value{};
  if (Status s = check_value(input, "scatter: operand 0"); !s.ok()) return fail(1, s).front();
  const DType dtype = value_shape(input).dtype();
  StatusOr<Graph> body = binary_op == OpCode::kParameter ? make_replace_body(dtype)
                                                         : make_binary_body(binary_op, dtype);
  if (!body.ok()) return fail(1, body.status().with_context("scatter")).front();
  return scatter(input, scatter_indices, updates, std::move(*body), std::move(dimension_numbers));
}

inline Value GraphBuilder::reduce_window(Value input, Value init_value, OpCode binary_op,
                                         const WindowAttrs& window) {
  if (!status_.ok()) return Value{};
  if (Status s = check_value(input, "reduce_window: operand 0"); !s.ok())
    return fail(1, s).front();
  StatusOr<Graph> body = make_binary_body(binary_op, value_shape(input).dtype());
  if (!body.ok()) return fail(1, body.status().with_context("reduce_window")).front();
  return reduce_window({input}, {init_value}, std::move(*body), window).front();
}

inline Value GraphBuilder::sort(Value input, std::int64_t dimension, ComparisonDirection direction,
                                bool is_stable) {
  if (!status_.ok()) return Value{};
  if (Status s = check_value(input, "sort: operand 0"); !s.ok()) return fail(1, s).front();
  StatusOr<Graph> comparator = make_sort_comparator(direction, value_shape(input).dtype());
  if (!comparator.ok()) return fail(1, comparator.status().with_context("sort")).front();
  return sort({input}, std::move(*comparator), dimension, is_stable).front();
}

inline Value GraphBuilder::select_and_scatter(Value operand, Value source, Value init_value,
                                              ComparisonDirection direction, OpCode scatter_op,
                                              const WindowAttrs& window) {
  if (!status_.ok()) return Value{};
  if (Status s = check_value(operand, "select_and_scatter: operand 0"); !s.ok())
    return fail(1, s).front();
  const DType dtype = value_shape(operand).dtype();
  StatusOr<Graph> select = make_compare_body(direction, dtype);
  if (!select.ok()) return fail(1, select.status().with_context("select_and_scatter")).front();
  StatusOr<Graph> scatter = make_binary_body(scatter_op, dtype);
  if (!scatter.ok()) return fail(1, scatter.status().with_context("select_and_scatter")).front();
  return select_and_scatter(operand, source, init_value, std::move(*select), std::move(*scatter),
                            window);
}

inline std::vector<Value> GraphBuilder::arg_reduce(ComparisonDirection direction, Value operand,
                                                   std::int64_t dimension, DType index_type) {
  if (!status_.ok()) return dummies(2);
  const std::string name = direction == ComparisonDirection::kGt ? "argmax" : "argmin";
  if (Status s = check_value(operand, name + ": operand 0"); !s.ok()) return fail(2, s);
  const Shape shape = value_shape(operand);
  if (dimension < 0 || dimension >= shape.rank())
    return fail(2, invalid_argument_error(str_cat(name, ": dimension ", dimension,
                                                  " is out of range for operand ", shape)));
  StatusOr<Graph> body = make_arg_reduce_body(direction, shape.dtype(), index_type);
  if (!body.ok()) return fail(2, body.status().with_context(name));
  const std::int64_t max_index = visit_dtype(index_type, [&]<class T>(std::type_identity<T>) {
    if constexpr (is_int_v<T>)
      return static_cast<std::int64_t>(std::min<std::uint64_t>(
          static_cast<std::uint64_t>(std::numeric_limits<T>::max()),
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    else
      return std::int64_t{0};  // unreachable: make_arg_reduce_body checked the type
  });
  if (shape.dim(dimension) > 0 && shape.dim(dimension) - 1 > max_index)
    return fail(2, invalid_argument_error(str_cat(name, ": dimension ", dimension, " of ", shape,
                                                  " has more elements than index type ",
                                                  dtype_name(index_type), " can count")));
  std::vector<std::int64_t> dims(shape.dims().begin(), shape.dims().end());
  Value index = iota(Shape(index_type, std::move(dims)), dimension);
  Value init =
      constant(detail::extreme_scalar(shape.dtype(), direction == ComparisonDirection::kGt));
  Value zero = scalar(index_type, 0);
  return reduce({operand, index}, {init, zero}, std::move(*body), {dimension});
}

}  // namespace pjrt_lite
