#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/bytecode.hpp"
// CHLO's inverse and hyperbolic trigonometric ops written with StableHLO's element-wise ops,
// for portable artifacts, which hold no CHLO (JAX's serializer expands them the same way
// before writing):
//
//   atan(x)  = atan2(x, 1)
//   asin(x)  = 2 atan2(x, 1 + sqrt((1 - x)(1 + x)))
//   sinh(x)  = (e + e / (e + 1)) / 2 with e = expm1(x) where |x| < 1, else
//              sign(x) (g (g / 2) - 1 / (2 g g)) with g = exp(|x| / 2): no overflow before
//              sinh's own, and the halving of x exact
//   cosh(x)  = g (g / 2) + 1 / (2 g g), g as above
//   asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), or sign(x) (log|x| + log 2)
//              from sqrt(max) on
//   acosh(x) = log1p(y + sqrt(y (y + 2))) with y = x - 1, or log x + log 2 from sqrt(max) on;
//              NaN below 1
//   atanh(x) = (log1p(x) - log1p(-x)) / 2
//
// f16 and bf16 compute in f32 and round once at the end. Complex values are not expanded (the
// writer refuses them, naming the op).

#include <cmath>
#include <limits>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// Whether node `n` of `g` is a CHLO op written as StableHLO ops in portable artifacts (on
/// real floating-point values; complex ones are not expanded).
inline bool has_chlo_expansion(const Graph& g, const Node& n) {
  const bool op = n.op == OpCode::kAtan || n.op == OpCode::kAsin || n.op == OpCode::kSinh || n.op == OpCode::kCosh ||
                  n.op == OpCode::kAsinh || n.op == OpCode::kAcosh || n.op == OpCode::kAtanh;
  return op && n.operands.size() == 1 && is_floating(g.shape(n.operands[0]).dtype());
}

class ChloExpander {
 public:
  explicit ChloExpander(GraphBuilder& b) : b_(b) {}

  /// `op` (see has_chlo_expansion) of `x`, a real floating-point value.
  Value expand(OpCode op, Value x) {
    const DType t = b_.shape(x).value_or(Shape()).dtype();
    const bool narrow = t == DType::kF16 || t == DType::kBF16;
    const Value v = narrow ? b_.convert(x, DType::kF32) : x;
    Value r;
    switch (op) {
      case OpCode::kAtan: r = b_.atan2(v, full(v, 1)); break;
      case OpCode::kAsin: r = asin(v); break;
      case OpCode::kSinh: r = sinh(v); break;
      case OpCode::kCosh: r = b_.add(big_half(v), small_half(v)); break;
      case OpCode::kAsinh: r = asinh(v); break;
      case OpCode::kAcosh: r = acosh(v); break;
      default:  // atanh
        r = b_.multiply(full(v, 0.5), b_.subtract(b_.log_plus_one(v), b_.log_plus_one(b_.negate(v))));
        break;
    }
    return narrow ? b_.convert(r, t) : r;
  }

 private:
  static constexpr double kLog2 = 0.69314718055994530942;

  Value full(Value like, double v) {
    const Shape s = b_.shape(like).value_or(Shape());
    return b_.broadcast_in_dim(b_.scalar(s.dtype(), v), {s.dims().begin(), s.dims().end()}, {});
  }
  Value cmp(Value x, double v, ComparisonDirection d) { return b_.compare(x, full(x, v), d); }
  /// sqrt of the largest finite value of x's type: past it, x^2 overflows.
  double sqrt_max(Value x) {
    return b_.shape(x).value_or(Shape()).dtype() == DType::kF64 ? std::sqrt(std::numeric_limits<double>::max())
                                                                : std::sqrt(double(std::numeric_limits<float>::max()));
  }

  /// exp(|x|) / 2 as g (g / 2), g = exp(|x| / 2), and exp(-|x|) / 2 as (1 / g) / (2 g).
  Value half_exp(Value x) { return b_.exponential(b_.multiply(b_.abs(x), full(x, 0.5))); }
  Value big_half(Value x) {
    const Value g = half_exp(x);
    return b_.multiply(g, b_.multiply(g, full(x, 0.5)));
  }
  Value small_half(Value x) {
    const Value g = half_exp(x);
    return b_.divide(b_.divide(full(x, 0.5), g), g);
  }

  Value asin(Value x) {
    const Value one = full(x, 1);
    const Value root = b_.sqrt(b_.multiply(b_.subtract(one, x), b_.add(one, x)));
    return b_.multiply(full(x, 2), b_.atan2(x, b_.add(one, root)));
  }
  Value sinh(Value x) {
    const Value e = b_.exponential_minus_one(x);
    const Value small = b_.multiply(full(x, 0.5), b_.add(e, b_.divide(e, b_.add(e, full(x, 1)))));
    const Value large = b_.multiply(b_.sign(x), b_.subtract(big_half(x), small_half(x)));
    return b_.select(cmp(b_.abs(x), 1, ComparisonDirection::kLt), small, large);
  }
  Value asinh(Value x) {
    const Value ax = b_.abs(x);
    const Value big = cmp(ax, sqrt_max(x), ComparisonDirection::kGe);
    const Value s = b_.select(big, full(x, 1), ax);  // the small branch away from overflow
    const Value s2 = b_.multiply(s, s);
    const Value small = b_.log_plus_one(
        b_.add(s, b_.divide(s2, b_.add(full(x, 1), b_.sqrt(b_.add(full(x, 1), s2))))));
    const Value large = b_.add(b_.log(ax), full(x, kLog2));
    return b_.multiply(b_.sign(x), b_.select(big, large, small));
  }
  Value acosh(Value x) {
    const Value big = cmp(x, sqrt_max(x), ComparisonDirection::kGe);
    const Value y = b_.select(big, full(x, 0), b_.subtract(x, full(x, 1)));
    const Value small = b_.log_plus_one(b_.add(y, b_.sqrt(b_.multiply(y, b_.add(y, full(x, 2))))));
    const Value large = b_.add(b_.log(x), full(x, kLog2));
    const Value r = b_.select(big, large, small);
    return b_.select(cmp(x, 1, ComparisonDirection::kLt), full(x, std::numeric_limits<double>::quiet_NaN()), r);
  }

  GraphBuilder& b_;
};

/// Whether `g` (or a region in it) holds an op of has_chlo_expansion.
inline bool needs_chlo_expansion(const Graph& g) {
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (has_chlo_expansion(g, n)) return true;
    for (const Graph& body : n.bodies)
      if (needs_chlo_expansion(body)) return true;
  }
  return false;
}

/// `g` with each op of has_chlo_expansion (in regions too) replaced by its StableHLO form.
inline StatusOr<Graph> expand_chlo(const Graph& g) {
  GraphBuilder b(g.name());
  ChloExpander chlo(b);
  std::vector<std::vector<Value>> values(static_cast<std::size_t>(g.num_nodes()));
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    std::vector<Value>& out = values[static_cast<std::size_t>(i)];
    if (n.op == OpCode::kParameter) {
      const auto& p = n.attr<ParameterAttrs>();
      out.push_back(b.parameter(p.number, p.shape));
      continue;
    }
    std::vector<Value> operands;
    for (Value v : n.operands) operands.push_back(values[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
    if (has_chlo_expansion(g, n)) {
      out.push_back(chlo.expand(n.op, operands[0]));
      continue;
    }
    std::vector<Graph> bodies;
    for (const Graph& body : n.bodies) {
      PJRT_LITE_ASSIGN_OR_RETURN(Graph expanded, needs_chlo_expansion(body) ? expand_chlo(body) : StatusOr<Graph>(body));
      bodies.push_back(std::move(expanded));
    }
    out = b.op(n.op, operands, n.attrs, std::move(bodies));
  }
  std::vector<Value> outputs;
  for (Value v : g.outputs()) outputs.push_back(values[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]);
  return b.build(outputs);
}

}  // namespace pjrt_lite::stablehlo::detail
