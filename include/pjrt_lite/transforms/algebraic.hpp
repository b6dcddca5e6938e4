#pragma once
// Algebraic simplification: rewrites that are exact, bit for bit, for every element type the
// op accepts. Floating point rules out most of the textbook ones: x + 0.0 is not x when x is
// -0.0 (it gives +0.0), but x + (-0.0) is; x - 0.0 is x but x - (-0.0) is not; x * 0 is not
// 0 when x is NaN, an infinity or negative; x * 1 is x for real types but not for complex,
// where (inf + 0i) * (1 + 0i) has a NaN imaginary part. (Round-to-nearest is assumed, as
// everywhere in the library; a signaling NaN may come out quieted, as any arithmetic does.)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
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

namespace detail {

template <class T>
double real_as_double(T x) {
  if constexpr (std::is_same_v<T, double>)
    return x;
  else
    return static_cast<double>(static_cast<float>(x));  // exact for f16, bf16, f32
}
template <class T>
bool is_zero_with_sign(T x, bool negative) {
  const double d = real_as_double(x);
  return d == 0.0 && std::signbit(d) == negative;
}

/// c with x + c == x for every x: 0, false (add is `or` on pred), and for floating point
/// -0.0 only (+0.0 turns x = -0.0 into +0.0). Complex adds part by part.
template <class T>
bool is_add_identity(T c) {
  if constexpr (std::is_same_v<T, bool>)
    return !c;
  else if constexpr (is_complex_v<T>)
    return is_zero_with_sign(c.real(), true) && is_zero_with_sign(c.imag(), true);
  else if constexpr (is_float_v<T>)
    return is_zero_with_sign(c, true);
  else
    return c == T(0);
}
/// c with x - c == x for every x: 0, and for floating point +0.0 only (x - (-0.0) is
/// x + 0.0, which turns -0.0 into +0.0).
template <class T>
bool is_subtract_identity(T c) {
  if constexpr (std::is_same_v<T, bool>)
    return false;  // subtract does not take pred
  else if constexpr (is_complex_v<T>)
    return is_zero_with_sign(c.real(), false) && is_zero_with_sign(c.imag(), false);
  else if constexpr (is_float_v<T>)
    return is_zero_with_sign(c, false);
  else
    return c == T(0);
}
/// c with x * c == x for every x: 1, true (multiply is `and` on pred); never for complex,
/// whose product mixes parts (inf * 0 is NaN).
template <class T>
bool is_multiply_identity(T c) {
  if constexpr (std::is_same_v<T, bool>)
    return c;
  else if constexpr (is_complex_v<T>)
    return false;
  else if constexpr (is_float_v<T>)
    return real_as_double(c) == 1.0;
  else
    return c == T(1);
}
/// c with x * c == c for every x: 0 and false only; for floating point NaN * 0 is NaN and
/// -1 * 0 is -0.
template <class T>
bool is_multiply_zero(T c) {
  if constexpr (std::is_same_v<T, bool>)
    return !c;
  else if constexpr (is_complex_v<T> || is_float_v<T>)
    return false;
  else
    return c == T(0);
}

/// True when every element of `lit` satisfies pred (vacuously for no elements).
template <class Pred>
bool all_elements(const Literal& lit, Pred&& pred) {
  if (is_narrow(lit.dtype())) return false;  // no C++ type to test; such constants only feed converts
  return visit_dtype(lit.dtype(), [&]<class T>(std::type_identity<T>) {
    for (T x : lit.data<T>())
      if (!pred(x)) return false;
    return true;
  });
}

/// The literal whose elements make up `v` when `v` is a constant or a broadcast_in_dim
/// (of a broadcast_in_dim ...) of one: then every element of `v` is an element of it.
inline const Literal* constant_elements(const GraphRewriter& rw, Value v) {
  const Node* node = &rw.node(v);
  while (node->op == OpCode::kBroadcastInDim) node = &rw.node(node->operands[0]);
  return node->op == OpCode::kConstant ? &node->attr<ConstantAttrs>().literal() : nullptr;
}

template <class Pred>
bool all_constant(const GraphRewriter& rw, Value v, Pred&& pred) {
  const Literal* lit = constant_elements(rw, v);
  return lit != nullptr && all_elements(*lit, pred);
}

inline bool is_identity_permutation(std::span<const std::int64_t> p) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

/// dot_general(b, a) for transpose(dot_general(a, b), perm) when perm swaps the result's
/// block of a's free dimensions with b's, batch dimensions left in place: the same products
/// summed over the same contracting dimensions, with no transpose to copy. (A backward pass
/// makes these: the gradient of a weight is a product of two activations' transposes.)
/// nullopt when perm is any other permutation.
inline std::optional<Value> swap_dot_operands(GraphRewriter& rw, const Node& dot, const std::vector<std::int64_t>& perm,
                                              const Shape& result) {
  const auto& d = dot.attr<DotDimensionNumbers>();
  const auto batch = static_cast<std::int64_t>(d.lhs_batching_dimensions.size());
  const std::int64_t lhs_free = rw.shape(dot.operands[0]).rank() - batch - static_cast<std::int64_t>(d.lhs_contracting_dimensions.size());
  const auto rank = static_cast<std::int64_t>(perm.size());
  const std::int64_t rhs_free = rank - batch - lhs_free;
  if (lhs_free == 0 || rhs_free == 0) return std::nullopt;
  for (std::int64_t i = 0; i < rank; ++i) {
    const std::int64_t want = i < batch ? i : i < batch + rhs_free ? batch + lhs_free + (i - batch) : batch + (i - batch - rhs_free);
    if (perm[static_cast<std::size_t>(i)] != want) return std::nullopt;
  }
  DotDimensionNumbers swapped{d.rhs_batching_dimensions, d.lhs_batching_dimensions, d.rhs_contracting_dimensions,
                              d.lhs_contracting_dimensions};
  return rw.append(Node{OpCode::kDotGeneral, {dot.operands[1], dot.operands[0]}, std::move(swapped), {result}, {}}).front();
}

/// A reshape that only inserts 1s into its operand's dims (keepdims=True makes these: a row
/// reduction [r] reshaped to [r, 1]): the operand, and where each of its dims went.
struct UnitDimsInserted {
  Value operand;
  std::vector<std::int64_t> positions;  // of each operand dim in the result, increasing
};

/// `v` as such a reshape, or nullopt: the result has more dims than the operand, and the
/// operand's dims stand in it in order with only 1s between them (matched leftmost first).
inline std::optional<UnitDimsInserted> unit_dims_inserted(const GraphRewriter& rw, Value v) {
  const Node& node = rw.node(v);
  if (node.op != OpCode::kReshape) return std::nullopt;
  const Value z = node.operands[0];
  const auto from = rw.shape(z).dims();
  const auto to = rw.shape(v).dims();
  if (to.size() <= from.size()) return std::nullopt;
  UnitDimsInserted found{z, {}};
  std::size_t j = 0;
  for (const std::int64_t d : from) {
    while (j < to.size() && to[j] != d) {
      if (to[j] != 1) return std::nullopt;
      ++j;
    }
    if (j == to.size()) return std::nullopt;
    found.positions.push_back(static_cast<std::int64_t>(j++));
  }
  for (; j < to.size(); ++j)
    if (to[j] != 1) return std::nullopt;
  return found;
}

/// op(reshape(z), ...) -> reshape(op(z, ...)) for an element-wise op whose operands are each
/// a reshape inserting unit dims into a value of z's shape, a scalar broadcast, a scalar
/// (select, clamp) or a constant: the same elements computed at the same indices, so bit for
/// bit the same. The reshape then sinks to where the value is broadcast or stored, and the
/// element-wise ops stay on the shape of the reduction that made z, which lets row
/// reductions fuse with them. Each rewrite lowers the op's rank, so it cannot cycle.
inline StatusOr<std::optional<Value>> sink_unit_dim_reshape(GraphRewriter& rw, const Node& node, const std::vector<Value>& x) {
  std::optional<std::vector<std::int64_t>> inner;  // z's dims
  for (Value v : x)
    if (std::optional<UnitDimsInserted> r = unit_dims_inserted(rw, v)) {
      const auto dims = rw.shape(r->operand).dims();
      inner.emplace(dims.begin(), dims.end());
      break;
    }
  if (!inner) return std::optional<Value>();
  // Every operand is checked before anything is appended, so a refusal leaves no dead nodes.
  enum class Kind { kAsIs, kRebroadcast, kReshape };
  std::vector<Kind> kinds;
  std::vector<Value> operands;
  for (Value v : x) {
    if (rw.shape(v).rank() == 0) {
      kinds.push_back(Kind::kAsIs);
      operands.push_back(v);
    } else if (std::optional<UnitDimsInserted> r = unit_dims_inserted(rw, v);
               r && std::ranges::equal(rw.shape(r->operand).dims(), *inner)) {
      kinds.push_back(Kind::kAsIs);
      operands.push_back(r->operand);
    } else if (const Node& producer = rw.node(v);
               producer.op == OpCode::kBroadcastInDim && rw.shape(producer.operands[0]).rank() == 0) {
      kinds.push_back(Kind::kRebroadcast);
      operands.push_back(producer.operands[0]);
    } else if (producer.op == OpCode::kConstant) {
      kinds.push_back(Kind::kReshape);
      operands.push_back(v);
    } else {
      return std::optional<Value>();
    }
  }
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (kinds[i] == Kind::kAsIs) continue;
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> same,
                               kinds[i] == Kind::kRebroadcast
                                   ? rw.append_inferred(OpCode::kBroadcastInDim, {operands[i]}, BroadcastInDimAttrs{*inner, {}})
                                   : rw.append_inferred(OpCode::kReshape, {operands[i]}, ReshapeAttrs{*inner}));
    operands[i] = same.front();
  }
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> op, rw.append_inferred(node.op, std::move(operands), node.attrs));
  const auto dims = node.results[0].dims();
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> out,
                             rw.append_inferred(OpCode::kReshape, {op.front()},
                                                ReshapeAttrs{std::vector<std::int64_t>(dims.begin(), dims.end())}));
  return std::optional<Value>(out.front());
}

/// The value that a single-result node (with operands already mapped to the new graph) is
/// equal to, appending new nodes if the rule needs them; nullopt when no rule applies.
/// `uses` counts, per node of the source graph, the operands and outputs that refer to it.
inline StatusOr<std::optional<Value>> simplify_node(GraphRewriter& rw, const Node& node,
                                                    const std::vector<Value>& x,
                                                    const std::vector<std::int32_t>& uses) {
  switch (node.op) {
    case OpCode::kAdd: {
      auto id = [](auto c) { return is_add_identity(c); };
      if (all_constant(rw, x[1], id)) return x[0];
      if (all_constant(rw, x[0], id)) return x[1];
      break;
    }
    case OpCode::kSubtract:
      if (all_constant(rw, x[1], [](auto c) { return is_subtract_identity(c); })) return x[0];
      break;
    case OpCode::kMultiply: {
      auto one = [](auto c) { return is_multiply_identity(c); };
      auto zero = [](auto c) { return is_multiply_zero(c); };
      if (all_constant(rw, x[1], one)) return x[0];
      if (all_constant(rw, x[0], one)) return x[1];
      if (all_constant(rw, x[1], zero)) return x[1];
      if (all_constant(rw, x[0], zero)) return x[0];
      break;
    }
    case OpCode::kNegate: {
      // Exact for integers too: negation wraps, and -(-INT_MIN) is INT_MIN.
      const Node& inner = rw.node(x[0]);
      if (inner.op == OpCode::kNegate) return inner.operands[0];
      break;
    }
    case OpCode::kTranspose: {
      const auto& perm = node.attr<TransposeAttrs>().permutation;
      if (is_identity_permutation(perm)) return x[0];
      const Node& inner = rw.node(x[0]);
      // The dot must be the transpose's own operand in the source (not a value another rule
      // led to), read by nothing else: otherwise the product would be computed twice.
      const Node& source_operand = rw.source().node(node.operands[0]);
      if (inner.op == OpCode::kDotGeneral && source_operand.op == OpCode::kDotGeneral &&
          uses[static_cast<std::size_t>(node.operands[0].node)] == 1)
        if (std::optional<Value> swapped = swap_dot_operands(rw, inner, perm, node.results[0])) return swapped;
      if (inner.op != OpCode::kTranspose) break;
      // transpose(transpose(y, p), q)[d] is y's dimension p[q[d]].
      const auto& p = inner.attr<TransposeAttrs>().permutation;
      std::vector<std::int64_t> composed(perm.size());
      for (std::size_t d = 0; d < perm.size(); ++d)
        composed[d] = p[static_cast<std::size_t>(perm[d])];
      if (is_identity_permutation(composed)) return inner.operands[0];
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> t,
                                 rw.append_inferred(OpCode::kTranspose, {inner.operands[0]},
                                                    TransposeAttrs{std::move(composed)}));
      return t.front();
    }
    case OpCode::kReshape: {
      const auto& dims = node.attr<ReshapeAttrs>().dims;
      if (std::ranges::equal(dims, rw.shape(x[0]).dims())) return x[0];
      const Node& inner = rw.node(x[0]);
      if (inner.op != OpCode::kReshape) break;
      // Row-major reshapes keep the element order, so two compose into one.
      const Value y = inner.operands[0];
      if (std::ranges::equal(dims, rw.shape(y).dims())) return y;
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> r,
                                 rw.append_inferred(OpCode::kReshape, {y}, ReshapeAttrs{dims}));
      return r.front();
    }
    case OpCode::kBroadcastInDim: {
      const auto& a = node.attr<BroadcastInDimAttrs>();
      if (std::ranges::equal(a.dims, rw.shape(x[0]).dims()) &&
          is_identity_permutation(a.broadcast_dimensions))
        return x[0];
      // broadcast_in_dim(reshape(z), d) where the reshape only inserts unit dims: each of
      // z's dims broadcasts along the d of the dim it became.
      if (std::optional<UnitDimsInserted> r = unit_dims_inserted(rw, x[0])) {
        std::vector<std::int64_t> along;
        for (const std::int64_t at : r->positions) along.push_back(a.broadcast_dimensions[static_cast<std::size_t>(at)]);
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> b, rw.append_inferred(OpCode::kBroadcastInDim, {r->operand},
                                                                          BroadcastInDimAttrs{a.dims, std::move(along)}));
        return b.front();
      }
      break;
    }
    case OpCode::kConvert:
      if (node.attr<ConvertAttrs>().dtype == rw.shape(x[0]).dtype()) return x[0];
      break;
    case OpCode::kSlice: {
      // Starting at 0 with the operand's dims means limit = size and stride 1 (or a dim of
      // size <= 1, where the stride does not matter): the whole array.
      const auto& a = node.attr<SliceAttrs>();
      if (std::ranges::all_of(a.start_indices, [](std::int64_t s) { return s == 0; }) &&
          std::ranges::equal(node.results[0].dims(), rw.shape(x[0]).dims()))
        return x[0];
      break;
    }
    case OpCode::kReverse: {
      const auto& dims = node.attr<ReverseAttrs>().dimensions;
      const Shape& s = rw.shape(x[0]);
      if (std::ranges::all_of(dims, [&](std::int64_t d) { return s.dim(d) <= 1; })) return x[0];
      const Node& inner = rw.node(x[0]);
      if (inner.op != OpCode::kReverse) break;
      std::vector<std::int64_t> a = dims, b = inner.attr<ReverseAttrs>().dimensions;
      std::ranges::sort(a);
      std::ranges::sort(b);
      if (a == b) return inner.operands[0];
      break;
    }
    case OpCode::kSelect: {
      if (x[1] == x[2]) return x[1];
      // The predicate is pred, but all_elements instantiates the test for every type.
      const auto is = [](bool value) {
        return [value](auto p) {
          if constexpr (std::is_same_v<decltype(p), bool>)
            return p == value;
          else
            return false;
        };
      };
      if (all_constant(rw, x[0], is(true))) return x[1];
      if (all_constant(rw, x[0], is(false))) return x[2];
      break;
    }
    default: break;
  }
  if (is_elementwise(node.op)) return sink_unit_dim_reshape(rw, node, x);
  return std::optional<Value>();
}

/// algebraic_simplify on a graph known to be verified.
inline StatusOr<Graph> simplify_algebra(const Graph& g) {
  GraphRewriter rw(g);
  std::vector<std::int32_t> uses(static_cast<std::size_t>(g.num_nodes()), 0);
  for (std::int64_t i = 0; i < g.num_nodes(); ++i)
    for (Value v : g.node(i).operands) ++uses[static_cast<std::size_t>(v.node)];
  for (Value v : g.outputs()) ++uses[static_cast<std::size_t>(v.node)];
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Graph> bodies, rewrite_bodies(node, simplify_algebra));
    std::vector<Value> operands = rw.map_operands(node);
    if (node.results.size() == 1) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::optional<Value> same, simplify_node(rw, node, operands, uses));
      if (same) {
        if (!rw.shape(*same).same_type_and_dims(node.results[0]))
          return internal_error(
              str_cat("algebraic_simplify: node %", i, " (", op_name(node.op), ") of shape ",
                      node.results[0], " would be replaced by a value of shape ", rw.shape(*same)));
        rw.replace(i, {*same});
        continue;
      }
    }
    rw.replace(i, rw.append(Node{node.op, std::move(operands), node.attrs, node.results,
                                 std::move(bodies)}));
  }
  return std::move(rw).finish("algebraic_simplify");
}

}  // namespace detail

/// A copy of `g` with exact algebraic identities applied, in bodies too:
///   x + c -> x          c all 0 (integers), false (pred), -0.0 (floating point, complex)
///   x - c -> x          c all 0 (integers), +0.0 (floating point, complex)
///   x * c -> x          c all 1 (integers, floating point), true (pred); not complex
///   x * c -> c          c all 0 (integers), false (pred); never floating point or complex
///   negate(negate(x)) -> x
///   transpose(x, identity) -> x;  transpose(transpose(x, p), q) -> transpose(x, p.q) or x
///   transpose(dot_general(a, b), p) -> dot_general(b, a)   p swaps a's and b's free blocks,
///                       the dot has no other use (summation order over the contracting
///                       dimensions is the backend's either way)
///   reshape(x, dims of x) -> x;   reshape(reshape(x, _), d) -> reshape(x, d) or x
///   broadcast_in_dim(x, dims of x, identity) -> x
///   broadcast_in_dim(reshape(z), d) -> broadcast_in_dim(z, d')   the reshape only inserts
///                       unit dims into z's
///   op(reshape(z), ...) -> reshape(op(z, ...))   op element-wise (not one of the cases
///                       above), the reshape as above, every other operand a scalar, a scalar
///                       broadcast, a constant or such a reshape of a value of z's shape
///   convert(x, dtype of x) -> x
///   slice of the whole of x -> x
///   reverse(x, dims of size <= 1) -> x;  reverse(reverse(x, d), d) -> x
///   select(c, a, b) -> a (c all true) or b (c all false);  select(p, a, a) -> a
/// where "c" is a constant or a broadcast_in_dim of one (whose elements all qualify, in any
/// operand position for add and multiply). Rewritten nodes disappear; operands they leave
/// unused are left for dead_code_elimination. INVALID_ARGUMENT if `g` does not verify.
inline StatusOr<Graph> algebraic_simplify(const Graph& g) {
  PJRT_LITE_RETURN_IF_ERROR(verify(g).with_context("algebraic_simplify"));
  return detail::simplify_algebra(g);
}

}  // namespace pjrt_lite
