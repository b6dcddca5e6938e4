#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// Quantized types (`!quant.uniform<...>`) and the ops on them, lowered as the parser reads
// them. The IR has no quantized types: a quantized value is its storage integers, and the
// quantization (scale, zero point, storage range) lives only in the program's types. So every
// op whose types are quantized is rewritten here into ops of the IR:
//
// - uniform_quantize of a float: x / scale + zero_point, clamped to the storage range, rounded
//   to nearest even, converted to the storage type (the spec's `quantize`). Of a quantized
//   value (requantization): x * (scale_in / scale_out) + (zp_out - zp_in * scale_in /
//   scale_out), clamped and rounded the same way (the spec's quantize(dequantize(x)) with the
//   scales merged, as StableHLO's own lowering computes it).
// - uniform_dequantize: (q - zero_point) * scale, the subtraction in 32 bits (64 for 32-bit
//   storage) so that it cannot wrap.
// - Ops that move or pick elements (reshape, transpose, slices, gather, concatenate, pad,
//   select, max, min, reduce_window, ...) whose operands and results share one quantization:
//   the op on the storage integers, which is exact.
// - dot_general and convolution of quantized operands into a quantized result: the products
//   of (q - zero_point) summed exactly in 32-bit integers (the CPU's 8-bit path multiplies
//   them when they fit in bytes), then scaled once by scale_lhs * scale_rhs / scale_result and
//   quantized. This is the spec's dequantize-dot-quantize without the rounding of float sums.
// - Every other op (add, tanh, compare, convert, a dot of a float and a quantized operand, ...):
//   the spec's dequantize_op_quantize: quantized operands dequantized to their expressed type,
//   the op computed there, quantized results quantized.
// - Ops with regions (reduce, sort, scatter, while, ...) run on the storage integers when
//   every quantized operand and result shares one quantization (their bodies are lowered op
//   by op as written); otherwise UNIMPLEMENTED.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/syntax_values.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

inline std::vector<std::int64_t> dims_of(const Shape& s) { return {s.dims().begin(), s.dims().end()}; }

/// "!quant.uniform<i8:f32, 0.5:-3>", for messages.
inline std::string quant_type_name(const QuantType& q) {
  std::string out = str_cat("!quant.uniform<", element_type_name(q.storage), ":",
                            element_type_name(q.expressed));
  if (q.per_axis()) out += str_cat(":", q.axis);
  out += ", ";
  if (q.per_axis()) out += "{";
  for (std::size_t i = 0; i < q.scales.size(); ++i)
    out += str_cat(i ? "," : "", q.scales[i], ":", q.zero_points[i]);
  if (q.per_axis()) out += "}";
  return out + ">";
}

/// Two quantizations that read the same integers as the same numbers (the quantization
/// dimension aside, which ops that move dimensions change).
inline bool same_numbers(const QuantType& a, const QuantType& b) {
  return a.storage == b.storage && a.expressed == b.expressed && a.storage_min == b.storage_min &&
         a.storage_max == b.storage_max && a.scales == b.scales && a.zero_points == b.zero_points;
}

/// Per operand and per result of an op, its quantization as its written type says (the
/// pretty forms' `: T` rules as declared_types reads them).
struct OpQuantization {
  std::vector<std::optional<QuantType>> operands;
  std::vector<std::optional<QuantType>> results;
};

inline OpQuantization op_quantization(const OpType& t, TypeRule rule, std::size_t num_operands) {
  OpQuantization q;
  auto at = [&](std::size_t i) { return i < t.quant.size() ? t.quant[i] : std::nullopt; };
  if (t.functional) {
    for (std::size_t i = 0; i < t.function.inputs.size(); ++i) q.operands.push_back(at(i));
    for (std::size_t i = 0; i < t.function.results.size(); ++i)
      q.results.push_back(at(t.function.inputs.size() + i));
    return q;
  }
  if (rule == TypeRule::kSame) {
    q.operands.assign(num_operands, at(0));
    q.results.push_back(at(0));
  } else if (rule == TypeRule::kSelect) {
    q.operands.assign(num_operands, at(1));
    if (num_operands > 0) q.operands[0] = at(0);
    q.results.push_back(at(1));
  } else {
    q.results.push_back(at(0));
  }
  return q;
}

/// Builds the quantization arithmetic in ctx.b.
class QuantLowering {
 public:
  QuantLowering(GraphBuilder& b, SourcePos pos) : b_(b), pos_(pos) {}

  /// A constant of `values` (one, or one per index of `axis`) in `dtype`, broadcast to
  /// `dims`.
  template <class T>
  Value params(const std::vector<T>& values, DType dtype, const std::vector<std::int64_t>& dims,
               std::int64_t axis) {
    if (values.size() == 1 || axis < 0) {
      Literal scalar = *Literal::scalar(static_cast<double>(values.front())).convert(dtype);
      return b_.broadcast_in_dim(b_.constant(std::move(scalar)), dims, {});
    }
    const std::vector<double> as_double(values.begin(), values.end());
    const std::vector<std::int64_t> size{static_cast<std::int64_t>(as_double.size())};
    Literal lit = *Literal::from_span<double>(std::span<const double>(as_double),
                                              std::span<const std::int64_t>(size))
                       ->convert(dtype);
    return b_.broadcast_in_dim(b_.constant(std::move(lit)), dims, {axis});
  }

  /// The spec's dequantize: (q - zero_point) * scale in the expressed type.
  StatusOr<Value> dequantize(Value q, const QuantType& t) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, b_.shape(q));
    Value x;
    if (has_nonzero(t.zero_points)) {
      const DType wide = bit_width(t.storage) < 32 ? DType::kS32 : DType::kS64;
      x = b_.subtract(b_.convert(q, wide), params(t.zero_points, wide, dims_of(s), t.axis));
      x = b_.convert(x, t.expressed);
    } else {
      x = b_.convert(q, t.expressed);
    }
    return finish(b_.multiply(x, params(t.scales, t.expressed, dims_of(s), t.axis)));
  }

  /// The spec's quantize of `x` (a float) into `t`: x / scale + zero_point, clamped to the
  /// storage range, rounded to nearest even, converted to the storage type. Computed in the
  /// expressed type.
  StatusOr<Value> quantize(Value x, const QuantType& t) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, b_.shape(x));
    if (!is_floating(s.dtype()))
      return error_at(pos_, str_cat("uniform_quantize of ", tensor_type_name(s),
                                    ": the operand must be a float or quantized tensor"));
    if (s.dtype() != t.expressed) x = b_.convert(x, t.expressed);
    Value y = b_.divide(x, params(t.scales, t.expressed, dims_of(s), t.axis));
    if (has_nonzero(t.zero_points)) y = b_.add(y, params(t.zero_points, t.expressed, dims_of(s), t.axis));
    return finish(round_into(y, t, dims_of(s)));
  }

  /// quantize(dequantize(q, from), to) with the scales merged: q * (s_from / s_to) +
  /// (zp_to - zp_from * s_from / s_to), in f32 (f64 when either expressed type is f64).
  StatusOr<Value> requantize(Value q, const QuantType& from, const QuantType& to) {
    if (same_numbers(from, to)) return q;
    if (from.per_axis() && to.per_axis() && from.axis != to.axis)
      return unsupported_at(pos_, "uniform_quantize that changes the quantization dimension");
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, b_.shape(q));
    const std::size_t n = std::max(from.scales.size(), to.scales.size());
    const std::int64_t axis = from.per_axis() ? from.axis : to.axis;
    std::vector<double> scale(n), offset(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t fi = from.per_axis() ? i : 0, ti = to.per_axis() ? i : 0;
      scale[i] = from.scales[fi] / to.scales[ti];
      offset[i] = static_cast<double>(to.zero_points[ti]) -
                  static_cast<double>(from.zero_points[fi]) * scale[i];
    }
    const DType f = from.expressed == DType::kF64 || to.expressed == DType::kF64 ? DType::kF64 : DType::kF32;
    Value y = b_.multiply(b_.convert(q, f), params(scale, f, dims_of(s), axis));
    if (has_nonzero(offset)) y = b_.add(y, params(offset, f, dims_of(s), axis));
    return finish(round_into(y, to, dims_of(s)));
  }

  /// `acc` (exact integer sums of products of (q - zero_point), in s32) as the quantized
  /// result `t`: acc * multiplier + zero_point, rounded and clamped; `multiplier` per index of
  /// `axis` of the result, or one.
  StatusOr<Value> requantize_sums(Value acc, const std::vector<double>& multiplier, std::int64_t axis,
                                  const QuantType& t) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, b_.shape(acc));
    const bool unit = std::all_of(multiplier.begin(), multiplier.end(), [](double m) { return m == 1.0; });
    if (unit && !has_nonzero(t.zero_points) && t.storage == DType::kS32 &&
        t.storage_min == std::numeric_limits<std::int32_t>::min() &&
        t.storage_max == std::numeric_limits<std::int32_t>::max())
      return acc;  // the sums are the result's integers
    // f64 holds every s32 sum exactly, and the product rounds once.
    Value y = b_.multiply(b_.convert(acc, DType::kF64),
                          params(multiplier, DType::kF64, dims_of(s), multiplier.size() > 1 ? axis : -1));
    if (has_nonzero(t.zero_points)) y = b_.add(y, params(t.zero_points, DType::kF64, dims_of(s), t.axis));
    return finish(round_into(y, t, dims_of(s)));
  }

 private:
  template <class T>
  static bool has_nonzero(const std::vector<T>& v) {
    return std::any_of(v.begin(), v.end(), [](T x) { return x != T{0}; });
  }

  /// Clamps `y` (a float) to t's storage range, rounds to nearest even, converts to storage.
  Value round_into(Value y, const QuantType& t, const std::vector<std::int64_t>& dims) {
    const DType f = b_.shape(y).ok() ? b_.shape(y)->dtype() : DType::kF32;
    // The largest float of `f` inside the range: 2^31 - 1 is no f32, and its neighbour above
    // would convert out of range.
    auto inside = [&](std::int64_t v) {
      double d = static_cast<double>(v);
      if (f == DType::kF32) {
        float g = static_cast<float>(d);
        if (static_cast<double>(g) > d) g = std::nextafter(g, 0.0f);
        if (static_cast<double>(g) < d && v < 0) g = std::nextafter(g, 0.0f);
        d = g;
      }
      return d;
    };
    const std::vector<double> lo{inside(t.storage_min)}, hi{inside(t.storage_max)};
    y = b_.clamp(params(lo, f, dims, -1), y, params(hi, f, dims, -1));
    return b_.convert(b_.round_nearest_even(y), t.storage);
  }

  StatusOr<Value> finish(Value v) {
    if (!b_.ok()) return error_at(pos_, b_.status().message());
    return v;
  }

  GraphBuilder& b_;
  SourcePos pos_;
};

/// Ops that move or pick elements without computing with them: on quantized values of one
/// quantization, the op on the storage integers is exact.
constexpr bool moves_elements(OpCode op) {
  switch (op) {
    case OpCode::kBroadcastInDim: case OpCode::kReshape: case OpCode::kTranspose:
    case OpCode::kSlice: case OpCode::kConcatenate: case OpCode::kPad: case OpCode::kReverse:
    case OpCode::kDynamicSlice: case OpCode::kDynamicUpdateSlice: case OpCode::kGather:
    case OpCode::kSelect: case OpCode::kMaximum: case OpCode::kMinimum: case OpCode::kClamp:
    case OpCode::kReduceWindow: case OpCode::kReduce: case OpCode::kSort: case OpCode::kScatter:
    case OpCode::kSelectAndScatter: case OpCode::kWhile: case OpCode::kCase: case OpCode::kIf:
    case OpCode::kAllGather: case OpCode::kAllToAll: case OpCode::kCollectivePermute:
    case OpCode::kCollectiveBroadcast:
      return true;
    default:
      return false;
  }
}

/// The op's type with every quantized type replaced by its expressed type.
inline OpType expressed_types(OpType t) {
  std::size_t i = 0;
  auto visit = [&](std::vector<Shape>& shapes) {
    for (Shape& s : shapes) {
      if (i < t.quant.size() && t.quant[i]) s = Shape(t.quant[i]->expressed, dims_of(s));
      ++i;
    }
  };
  if (t.functional) {
    visit(t.function.inputs);
    visit(t.function.results);
  } else {
    visit(t.types);
  }
  t.quant.clear();
  return t;
}

/// uniform_quantize and uniform_dequantize (table entries of their own).
inline StatusOr<OpResult> build_uniform_quantize(Context& ctx, const OpSyntax& op, OpParts& p) {
  if (p.operands.size() != 1) return error_at(p.pos, str_cat(op.name, " takes one operand"));
  const OpQuantization q = op_quantization(p.type, op.type_rule, 1);
  if (q.results.size() != 1) return error_at(p.type.pos, str_cat(op.name, " has one result"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, op.type_rule, op.name, p.pos));
  QuantLowering l(ctx.b, p.pos);
  OpResult out;
  const bool dequantize = op.name.ends_with("dequantize");
  if (dequantize) {
    if (!q.operands[0]) return error_at(p.pos, str_cat(op.name, ": the operand's type is not quantized"));
    if (q.results[0]) return error_at(p.pos, str_cat(op.name, ": the result's type is quantized"));
    if (declared[0].dtype() != q.operands[0]->expressed)
      return error_at(p.pos, str_cat(op.name, ": the result type ", tensor_type_name(declared[0]),
                                     " is not the expressed type of ", quant_type_name(*q.operands[0])));
    PJRT_LITE_ASSIGN_OR_RETURN(Value v, l.dequantize(p.operands[0], *q.operands[0]));
    out.values.push_back(v);
  } else {
    if (!q.results[0]) return error_at(p.pos, str_cat(op.name, ": the result's type is not quantized"));
    Value v;
    if (q.operands[0]) {
      PJRT_LITE_ASSIGN_OR_RETURN(v, l.requantize(p.operands[0], *q.operands[0], *q.results[0]));
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(v, l.quantize(p.operands[0], *q.results[0]));
    }
    out.values.push_back(v);
  }
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

/// The result dimension that dimension `rhs_dim` of a product's rhs becomes, or -1 when the
/// product sums over it.
inline std::int64_t product_result_dim(const Attributes& attrs, std::int64_t lhs_rank, std::int64_t rhs_rank,
                                       std::int64_t rhs_dim) {
  auto contains = [](const std::vector<std::int64_t>& v, std::int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  if (const auto* dot = std::get_if<DotDimensionNumbers>(&attrs)) {
    const auto& rb = dot->rhs_batching_dimensions;
    if (auto it = std::find(rb.begin(), rb.end(), rhs_dim); it != rb.end()) return it - rb.begin();
    if (contains(dot->rhs_contracting_dimensions, rhs_dim)) return -1;
    const std::int64_t lhs_free = lhs_rank - static_cast<std::int64_t>(dot->lhs_batching_dimensions.size() +
                                                                    dot->lhs_contracting_dimensions.size());
    std::int64_t j = 0;
    for (std::int64_t d = 0; d < rhs_dim; ++d)
      if (!contains(rb, d) && !contains(dot->rhs_contracting_dimensions, d)) ++j;
    return static_cast<std::int64_t>(rb.size()) + lhs_free + j;
  }
  if (const auto* conv = std::get_if<ConvolutionAttrs>(&attrs)) {
    (void)rhs_rank;
    return rhs_dim == conv->kernel_output_feature_dimension ? conv->output_feature_dimension : -1;
  }
  return -1;
}

/// `acc` = sum over the contracting dimensions of lhs * rhs (s32), less the zero points'
/// shares: - zr * sum(lhs) - zl * sum(rhs) + K * zl * zr, each sum broadcast to the result's
/// dimensions (batch, lhs free, rhs free).
inline StatusOr<Value> zero_point_shares(GraphBuilder& b, const DotDimensionNumbers& dot, Value acc, Value lhs,
                                         Value rhs, std::int64_t zl, std::int64_t zr) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape out, b.shape(acc));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape ls, b.shape(lhs));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape rs, b.shape(rhs));
  const std::vector<std::int64_t> out_dims = dims_of(out);
  const auto nb = static_cast<std::int64_t>(dot.lhs_batching_dimensions.size());
  auto contains = [](const std::vector<std::int64_t>& v, std::int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  // The sum of `x` over `contracting`, times `zp`, broadcast to the result: a kept dimension
  // of x goes to its batch position, or to `free_start` + its rank among x's free dimensions.
  auto share = [&](Value x, std::int64_t rank, const std::vector<std::int64_t>& batch,
                   const std::vector<std::int64_t>& contracting, std::int64_t free_start, std::int64_t zp) {
    Value sum = b.reduce(x, b.constant(std::int32_t{0}), OpCode::kAdd, contracting);
    std::vector<std::int64_t> to;
    std::int64_t free = 0;
    for (std::int64_t d = 0; d < rank; ++d) {
      if (contains(contracting, d)) continue;
      if (auto it = std::find(batch.begin(), batch.end(), d); it != batch.end()) to.push_back(it - batch.begin());
      else to.push_back(free_start + free++);
    }
    Value scaled = b.multiply(sum, b.broadcast_in_dim(b.constant(static_cast<std::int32_t>(zp)), dims_of(*b.shape(sum)), {}));
    return b.broadcast_in_dim(scaled, out_dims, to);
  };
  const std::int64_t lhs_free = ls.rank() - nb - static_cast<std::int64_t>(dot.lhs_contracting_dimensions.size());
  if (zr != 0)
    acc = b.subtract(acc, share(lhs, ls.rank(), dot.lhs_batching_dimensions, dot.lhs_contracting_dimensions, nb, zr));
  if (zl != 0)
    acc = b.subtract(acc, share(rhs, rs.rank(), dot.rhs_batching_dimensions, dot.rhs_contracting_dimensions,
                                nb + lhs_free, zl));
  if (zl != 0 && zr != 0) {
    std::int64_t k = 1;
    for (std::int64_t d : dot.lhs_contracting_dimensions) k *= ls.dim(d);
    acc = b.add(acc, b.broadcast_in_dim(b.constant(static_cast<std::int32_t>(k * zl * zr)), out_dims, {}));
  }
  if (!b.ok()) return b.status();
  return acc;
}

/// dot_general or convolution of two quantized operands into a quantized result, in integers
/// (see the file comment); nullopt when the quantizations do not allow it (storage wider than
/// 8 bits, a per-axis lhs, per-axis zero points of the rhs, a per-axis rhs over a dimension
/// the product sums, per-axis scales on two different result dimensions).
inline std::optional<StatusOr<OpResult>> build_quantized_product(Context& ctx, const OpSyntax& op, OpParts& p,
                                                                 const OpQuantization& q) {
  if (q.operands.size() != 2 || q.results.size() != 1 || !q.operands[0] || !q.operands[1] || !q.results[0])
    return std::nullopt;
  const QuantType &lq = *q.operands[0], &rq = *q.operands[1], &oq = *q.results[0];
  if (lq.per_axis() || bit_width(lq.storage) > 8 || bit_width(rq.storage) > 8) return std::nullopt;
  if (rq.per_axis() && std::any_of(rq.zero_points.begin(), rq.zero_points.end(), [](std::int64_t z) { return z != 0; }))
    return std::nullopt;
  if (op.attributes == nullptr) return std::nullopt;
  StatusOr<Attributes> attrs = op.attributes(ctx, op, p);
  if (!attrs.ok()) return StatusOr<OpResult>(attrs.status());
  StatusOr<Shape> ls = ctx.b.shape(p.operands[0]), rs = ctx.b.shape(p.operands[1]);
  if (!ls.ok() || !rs.ok()) return std::nullopt;
  std::int64_t scale_dim = -1;  // the result dimension the multiplier varies along
  if (rq.per_axis()) {
    scale_dim = product_result_dim(*attrs, ls->rank(), rs->rank(), rq.axis);
    if (scale_dim < 0) return std::nullopt;
  }
  if (oq.per_axis()) {
    if (scale_dim >= 0 && scale_dim != oq.axis) return std::nullopt;
    scale_dim = oq.axis;
  }
  const std::size_t n = std::max({lq.scales.size(), rq.scales.size(), oq.scales.size()});
  std::vector<double> multiplier(n);
  for (std::size_t i = 0; i < n; ++i)
    multiplier[i] = lq.scales[0] * rq.scales[rq.per_axis() ? i : 0] / oq.scales[oq.per_axis() ? i : 0];
  GraphBuilder& b = ctx.b;
  // q - zero_point in s32; through a byte when every storage value minus the zero point fits
  // one, so that the CPU multiplies bytes.
  auto integers = [&](Value v, const QuantType& t) {
    const int bits = bit_width(t.storage);
    const bool is_signed = is_signed_integral(t.storage);
    const std::int64_t lo = (is_signed ? -(std::int64_t{1} << (bits - 1)) : 0) - t.zero_points[0];
    const std::int64_t hi = (is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1) -
                            t.zero_points[0];
    if (t.zero_points[0] == 0 && bits == 8) return b.convert(v, DType::kS32);
    Value w = b.convert(v, DType::kS32);
    if (t.zero_points[0] != 0) {
      StatusOr<Shape> s = b.shape(w);
      const std::vector<std::int64_t> dims = s.ok() ? dims_of(*s) : std::vector<std::int64_t>{};
      w = b.subtract(w, b.broadcast_in_dim(b.constant(static_cast<std::int32_t>(t.zero_points[0])), dims, {}));
    }
    if (lo >= -128 && hi <= 127) return b.convert(b.convert(w, DType::kS8), DType::kS32);
    if (lo >= 0 && hi <= 255) return b.convert(b.convert(w, DType::kU8), DType::kS32);
    return w;
  };
  // A dot_general whose shifted values do not fit bytes multiplies the stored bytes and
  // subtracts the zero points' share afterwards: sum (l - zl)(r - zr) = sum l r - zr sum l -
  // zl sum r + K zl zr, the sums over the contracting dimensions.
  const auto* dot = std::get_if<DotDimensionNumbers>(&*attrs);
  auto fits_byte = [](const QuantType& t) {
    const int bits = bit_width(t.storage);
    const bool is_signed = is_signed_integral(t.storage);
    const std::int64_t lo = (is_signed ? -(std::int64_t{1} << (bits - 1)) : 0) - t.zero_points[0];
    const std::int64_t hi = (is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1) -
                            t.zero_points[0];
    return (lo >= -128 && hi <= 127) || (lo >= 0 && hi <= 255);
  };
  const bool bytes = bit_width(lq.storage) == 8 && bit_width(rq.storage) == 8;
  const bool corrected = dot != nullptr && bytes && !(fits_byte(lq) && fits_byte(rq));
  const Value stored_lhs = p.operands[0], stored_rhs = p.operands[1];
  if (corrected) {
    p.operands[0] = b.convert(stored_lhs, DType::kS32);
    p.operands[1] = b.convert(stored_rhs, DType::kS32);
  } else {
    p.operands[0] = integers(p.operands[0], lq);
    p.operands[1] = integers(p.operands[1], rq);
  }
  OpType t;
  t.functional = true;
  t.pos = p.type.pos;
  for (Value v : p.operands) {
    StatusOr<Shape> s = b.shape(v);
    if (!s.ok()) return StatusOr<OpResult>(error_at(p.pos, s.status().message()));
    t.function.inputs.push_back(*s);
  }
  const std::vector<Shape>& declared = p.type.functional ? p.type.function.results : p.type.types;
  if (declared.size() != 1) return std::nullopt;
  t.function.results.push_back(Shape(DType::kS32, dims_of(declared.back())));
  p.type = std::move(t);
  StatusOr<OpResult> sums = op.build(ctx, op, p);
  if (!sums.ok()) return sums;
  if (corrected) {
    StatusOr<Value> fixed = zero_point_shares(b, *dot, sums->values[0], p.operands[0], p.operands[1],
                                              lq.zero_points[0], rq.per_axis() ? 0 : rq.zero_points[0]);
    if (!fixed.ok()) return StatusOr<OpResult>(error_at(p.pos, fixed.status().message()));
    sums->values[0] = *fixed;
  }
  QuantLowering l(b, p.pos);
  StatusOr<Value> result = l.requantize_sums(sums->values[0], multiplier, scale_dim, oq);
  if (!result.ok()) return StatusOr<OpResult>(result.status());
  sums->values[0] = *result;
  return sums;
}

/// Adds `op` to ctx.b, lowering it as the file comment says when its types are quantized.
inline StatusOr<OpResult> build_op(Context& ctx, const OpSyntax& op, OpParts& p) {
  if (!p.type.quantized()) return op.build(ctx, op, p);
  const OpQuantization q = op_quantization(p.type, op.type_rule, p.operands.size());
  // The ops that are no computation: their quantized values are the storage integers.
  const bool passes = op.code == OpCode::kParameter || op.code == OpCode::kConstant ||
                      op.code == OpCode::kBitcastConvert;
  if (passes) return op.build(ctx, op, p);
  const QuantType* first = nullptr;
  bool one_quantization = true, all_results = true;
  for (const auto* list : {&q.operands, &q.results})
    for (const auto& t : *list) {
      if (!t) continue;
      if (first == nullptr) first = &*t;
      else if (!same_numbers(*first, *t)) one_quantization = false;
    }
  for (const auto& t : q.results) all_results = all_results && t.has_value();
  if (moves_elements(op.code) && one_quantization && all_results) return op.build(ctx, op, p);
  if (has_body(op.code))
    return unsupported_at(p.pos, str_cat(op.name, " with a region over values of different quantizations"));
  if (op.code == OpCode::kDotGeneral || op.code == OpCode::kConvolution) {
    if (auto product = build_quantized_product(ctx, op, p, q)) return *std::move(product);
  }
  // dequantize_op_quantize.
  QuantLowering l(ctx.b, p.pos);
  for (std::size_t k = 0; k < p.operands.size() && k < q.operands.size(); ++k)
    if (q.operands[k]) {
      PJRT_LITE_ASSIGN_OR_RETURN(p.operands[k], l.dequantize(p.operands[k], *q.operands[k]));
    }
  p.type = expressed_types(std::move(p.type));
  PJRT_LITE_ASSIGN_OR_RETURN(OpResult out, op.build(ctx, op, p));
  for (std::size_t k = 0; k < out.values.size() && k < q.results.size(); ++k)
    if (q.results[k]) {
      PJRT_LITE_ASSIGN_OR_RETURN(out.values[k], l.quantize(out.values[k], *q.results[k]));
    }
  return out;
}

}  // namespace pjrt_lite::stablehlo::detail
