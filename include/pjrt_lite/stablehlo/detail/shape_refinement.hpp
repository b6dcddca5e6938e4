#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// Shape polymorphism, as JAX's refine_polymorphic_shapes does it: once a function's `?`
// dimensions are known (from the arguments' shapes, module_reader.hpp), every shape a
// program computes is a constant. get_dimension_size becomes that constant, and the shape
// operands of the dynamic_* ops are evaluated here, at parse time, so that each op becomes
// its static form (dynamic_iota an iota, dynamic_reshape a reshape, ...), read by the static
// op's own entry of the table. An operand that does not fold (it depends on the values of
// the arguments, not on their shapes) is an error naming the op.
//
// The evaluator below knows the integer ops that shape computations use (arithmetic,
// compare, select, convert, reshape, broadcast, concatenate, slice); it is deliberately
// small and separate from the reference interpreter, which lives in a lower layer.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/pretty_forms.hpp"
#include "pjrt_lite/stablehlo/detail/quantized_ops.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

// ---- Folding shape computations ----------------------------------------------------------

/// An integer (or pred) tensor known at parse time, row-major, elements widened to int64.
struct IntTensor {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> values;
};

/// Row-major strides of `dims`.
inline std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (std::size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  return strides;
}

/// Visits every multi-index of `dims` in row-major order.
template <class F>
void for_each_index(const std::vector<std::int64_t>& dims, F f) {
  std::int64_t count = 1;
  for (std::int64_t d : dims) count *= d;
  std::vector<std::int64_t> index(dims.size(), 0);
  for (std::int64_t n = 0; n < count; ++n) {
    f(index);
    for (std::size_t k = dims.size(); k-- > 0;) {
      if (++index[k] < dims[k]) break;
      index[k] = 0;
    }
  }
}

/// Evaluates the integer nodes of one graph that a value depends on; a parameter is known
/// only when `known` gives its value (a scalar).
class ShapeFolder {
 public:
  ShapeFolder(const Graph& g, const std::map<std::int64_t, std::int64_t>* known)
      : g_(g), known_(known), memo_(static_cast<std::size_t>(g.num_nodes())) {}

  StatusOr<IntTensor> eval(Value v) {
    if (v.index != 0) return fail(g_.node(v.node));
    auto& slot = memo_[static_cast<std::size_t>(v.node)];
    if (!slot) {
      PJRT_LITE_ASSIGN_OR_RETURN(IntTensor t, eval_node(g_.node(v.node)));
      slot = std::move(t);
    }
    return *slot;
  }

 private:
  static Status fail(const Node& n) {
    return invalid_argument_error(str_cat("it depends on a stablehlo.", op_name(n.op),
                                          " that is not known before the program runs"));
  }

  static bool integral(const Shape& s) { return s.dtype() == DType::kPred || is_integral(s.dtype()); }

  static std::int64_t wrap(std::int64_t x, DType t) {
    switch (t) {
      case DType::kPred: return x != 0 ? 1 : 0;
      case DType::kS8: return static_cast<std::int8_t>(x);
      case DType::kS16: return static_cast<std::int16_t>(x);
      case DType::kS32: return static_cast<std::int32_t>(x);
      case DType::kU8: return static_cast<std::uint8_t>(x);
      case DType::kU16: return static_cast<std::uint16_t>(x);
      case DType::kU32: return static_cast<std::uint32_t>(x);
      default: return x;
    }
  }

  StatusOr<IntTensor> eval_node(const Node& n) {
    const Shape& out = n.results[0];
    if (!integral(out) || n.results.size() != 1) return fail(n);
    std::vector<IntTensor> in;
    if (n.op != OpCode::kParameter && n.op != OpCode::kConstant && n.op != OpCode::kIota) {
      for (Value o : n.operands) {
        if (!integral(g_.shape(o))) return fail(g_.node(o.node));
        PJRT_LITE_ASSIGN_OR_RETURN(IntTensor t, eval(o));
        in.push_back(std::move(t));
      }
    }
    IntTensor r;
    r.dims.assign(out.dims().begin(), out.dims().end());
    std::int64_t count = 1;
    for (std::int64_t d : r.dims) count *= d;
    if (count > (std::int64_t{1} << 20)) return fail(n);
    const DType t = out.dtype();
    auto map2 = [&](auto f) {
      for (std::size_t k = 0; k < in[0].values.size(); ++k)
        r.values.push_back(wrap(f(in[0].values[k], in[1].values[k]), t));
      return r;
    };
    switch (n.op) {
      case OpCode::kParameter: {
        const auto number = n.attr<ParameterAttrs>().number;
        if (known_ == nullptr || !known_->count(number) || count != 1) return fail(n);
        r.values = {known_->at(number)};
        return r;
      }
      case OpCode::kConstant: {
        StatusOr<Literal> l = n.attr<ConstantAttrs>().literal().convert(DType::kS64);
        if (!l.ok()) return fail(n);
        const Literal row_major = l->with_default_layout();
        const auto data = row_major.data<std::int64_t>();
        r.values.assign(data.begin(), data.end());
        return r;
      }
      case OpCode::kIota: {
        const std::int64_t d = n.attr<IotaAttrs>().iota_dimension;
        for_each_index(r.dims, [&](const std::vector<std::int64_t>& i) {
          r.values.push_back(i[static_cast<std::size_t>(d)]);
        });
        return r;
      }
      case OpCode::kConvert:
        for (std::int64_t x : in[0].values) r.values.push_back(wrap(x, t));
        return r;
      case OpCode::kReshape: r.values = in[0].values; return r;
      case OpCode::kNegate:
        for (std::int64_t x : in[0].values) r.values.push_back(wrap(-x, t));
        return r;
      case OpCode::kAbs:
        for (std::int64_t x : in[0].values) r.values.push_back(x < 0 ? -x : x);
        return r;
      case OpCode::kSign:
        for (std::int64_t x : in[0].values) r.values.push_back((x > 0) - (x < 0));
        return r;
      case OpCode::kNot:
        for (std::int64_t x : in[0].values) r.values.push_back(t == DType::kPred ? !x : wrap(~x, t));
        return r;
      case OpCode::kAdd: return map2([](std::int64_t a, std::int64_t b) { return a + b; });
      case OpCode::kSubtract: return map2([](std::int64_t a, std::int64_t b) { return a - b; });
      case OpCode::kMultiply: return map2([](std::int64_t a, std::int64_t b) { return a * b; });
      case OpCode::kMaximum: return map2([](std::int64_t a, std::int64_t b) { return std::max(a, b); });
      case OpCode::kMinimum: return map2([](std::int64_t a, std::int64_t b) { return std::min(a, b); });
      case OpCode::kAnd: return map2([](std::int64_t a, std::int64_t b) { return a & b; });
      case OpCode::kOr: return map2([](std::int64_t a, std::int64_t b) { return a | b; });
      case OpCode::kXor: return map2([](std::int64_t a, std::int64_t b) { return a ^ b; });
      case OpCode::kDivide:
      case OpCode::kRemainder:
        for (std::size_t k = 0; k < in[0].values.size(); ++k) {
          const std::int64_t a = in[0].values[k], b = in[1].values[k];
          if (b == 0) return invalid_argument_error("it divides by zero");
          r.values.push_back(n.op == OpCode::kDivide ? a / b : a % b);  // truncating, as HLO
        }
        return r;
      case OpCode::kCompare: {
        const ComparisonDirection d = n.attr<CompareAttrs>().direction;
        return map2([d](std::int64_t a, std::int64_t b) -> std::int64_t { return compares(d, a, b); });
      }
      case OpCode::kSelect:
        for (std::size_t k = 0; k < in[1].values.size(); ++k) {
          const std::int64_t p = in[0].values.size() == 1 ? in[0].values[0] : in[0].values[k];
          r.values.push_back(p ? in[1].values[k] : in[2].values[k]);
        }
        return r;
      case OpCode::kClamp:
        for (std::size_t k = 0; k < in[1].values.size(); ++k) {
          const std::int64_t lo = in[0].values.size() == 1 ? in[0].values[0] : in[0].values[k];
          const std::int64_t hi = in[2].values.size() == 1 ? in[2].values[0] : in[2].values[k];
          r.values.push_back(std::min(std::max(in[1].values[k], lo), hi));
        }
        return r;
      case OpCode::kBroadcastInDim: {
        const auto& map = n.attr<BroadcastInDimAttrs>().broadcast_dimensions;
        const auto strides = row_major_strides(in[0].dims);
        for_each_index(r.dims, [&](const std::vector<std::int64_t>& i) {
          std::int64_t at = 0;
          for (std::size_t k = 0; k < map.size(); ++k)
            if (in[0].dims[k] != 1) at += i[static_cast<std::size_t>(map[k])] * strides[k];
          r.values.push_back(in[0].values[static_cast<std::size_t>(at)]);
        });
        return r;
      }
      case OpCode::kSlice: {
        const SliceAttrs& s = n.attr<SliceAttrs>();
        const auto strides = row_major_strides(in[0].dims);
        for_each_index(r.dims, [&](const std::vector<std::int64_t>& i) {
          std::int64_t at = 0;
          for (std::size_t k = 0; k < i.size(); ++k)
            at += (s.start_indices[k] + i[k] * s.strides[k]) * strides[k];
          r.values.push_back(in[0].values[static_cast<std::size_t>(at)]);
        });
        return r;
      }
      case OpCode::kConcatenate: {
        const auto d = static_cast<std::size_t>(n.attr<ConcatenateAttrs>().dimension);
        for_each_index(r.dims, [&](const std::vector<std::int64_t>& i) {
          std::vector<std::int64_t> j = i;
          std::size_t part = 0;
          while (j[d] >= in[part].dims[d]) j[d] -= in[part++].dims[d];
          const auto strides = row_major_strides(in[part].dims);
          std::int64_t at = 0;
          for (std::size_t k = 0; k < j.size(); ++k) at += j[k] * strides[k];
          r.values.push_back(in[part].values[static_cast<std::size_t>(at)]);
        });
        return r;
      }
      default: return fail(n);
    }
  }

  const Graph& g_;
  const std::map<std::int64_t, std::int64_t>* known_;
  std::vector<std::optional<IntTensor>> memo_;
};

/// The value of `v`, an integer tensor that must be known at parse time; `what` says which
/// operand of which op it is, for the error.
inline StatusOr<IntTensor> fold_to_ints(const Context& ctx, Value v, const Where& what,
                                        SourcePos pos) {
  StatusOr<Graph> g = ctx.b.build(std::vector<Value>{v});
  if (!g.ok()) return error_at(pos, g.status().message());
  ShapeFolder folder(*g, ctx.known_params);
  StatusOr<IntTensor> t = folder.eval(g->outputs()[0]);
  if (!t.ok())
    return error_at(pos, str_cat(what, " cannot be refined to a constant: ", t.status().message()));
  return t;
}

/// A rank-1 integer operand as a list of int64 (a shape, or per-dimension numbers).
inline StatusOr<std::vector<std::int64_t>> fold_to_list(const Context& ctx, Value v,
                                                        const Where& what, SourcePos pos) {
  PJRT_LITE_ASSIGN_OR_RETURN(IntTensor t, fold_to_ints(ctx, v, what, pos));
  if (t.dims.size() > 1) return error_at(pos, str_cat(what, " must be a rank-1 tensor"));
  return t.values;
}

// ---- The ops ------------------------------------------------------------------------------

/// `op %a, %b, ..., key = value, ... : T`: operands then keyword attributes (each read as an
/// attribute value and stored under `rename(key)`), then an optional dictionary and the type.
inline Status pretty_dynamic(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  while (r.consume_if(',')) {
    PJRT_LITE_ASSIGN_OR_RETURN(Token key,
                               r.expect_kind(TokenKind::kIdent, "a keyword", {"in ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', {"after ", key.text}));
    PJRT_LITE_ASSIGN_OR_RETURN(AttrValue v, r.parse_attr_value());
    std::string name(key.text);
    if (name == "dim") name = op.name == "stablehlo.dynamic_iota" ? "iota_dimension" : "dimension";
    if (name == "dims") name = "broadcast_dimensions";
    p.attrs.emplace_back(std::move(name), std::move(v));
  }
  AttrDict dict;
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &dict));
  for (auto& entry : dict) p.attrs.push_back(std::move(entry));
  return ok_status();
}

/// Defined with the op table (op_table.hpp), which lists the ops of this file.
inline const OpSyntax* find_op(std::string_view name);

/// Replaces (or adds) attribute `key`.
inline void set_attr(AttrDict& attrs, std::string_view key, AttrValue v) {
  for (auto& [k, value] : attrs)
    if (k == key) {
      value = std::move(v);
      return;
    }
  attrs.emplace_back(std::string(key), std::move(v));
}

/// Adds the static op `name` for parts `p` whose shape operands have been folded: its type
/// is the operands' types and `results` (the refined result types), checked against the
/// dynamic op's declared ones.
inline StatusOr<OpResult> build_static_form(Context& ctx, std::string_view name, OpParts& p,
                                            const std::vector<Shape>& declared,
                                            std::vector<Shape> results) {
  const OpSyntax* op = find_op(name);
  OpType t;
  t.functional = true;
  t.pos = p.type.pos;
  for (Value v : p.operands) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(v));
    t.function.inputs.push_back(std::move(s));
  }
  t.function.results = std::move(results);
  p.type = std::move(t);
  PJRT_LITE_ASSIGN_OR_RETURN(OpResult out, build_op(ctx, *op, p));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, p.pos));
  return out;
}

/// Adds the static op `name` for parts `p` whose shape operands have been folded into its
/// attributes, the op inferring its own result types; they are checked against the declared
/// ones of the dynamic op `dynamic_name`.
inline StatusOr<OpResult> build_inferred_form(Context& ctx, std::string_view name, OpParts& p,
                                              const std::vector<Shape>& declared,
                                              std::string_view dynamic_name) {
  const OpSyntax* op = find_op(name);
  PJRT_LITE_ASSIGN_OR_RETURN(Attributes attrs, op->attributes(ctx, *op, p));
  OpResult out;
  out.values = ctx.b.op(op->code, p.operands, std::move(attrs));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, dynamic_name, p.pos));
  return out;
}

/// The result shape a dynamic op computes: the declared type with every dimension from the
/// folded `dims`, which must agree with the static ones.
inline StatusOr<Shape> refined_result(const Shape& declared, const std::vector<std::int64_t>& dims,
                                      std::string_view op, SourcePos pos) {
  if (static_cast<std::int64_t>(dims.size()) != declared.rank())
    return error_at(pos, str_cat(op, ": the shape operand has ", dims.size(),
                                 " elements but the result ", tensor_type_name(declared),
                                 " has rank ", declared.rank()));
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k] < 0)
      return error_at(pos, str_cat(op, ": dimension ", k, " of the result would be ", dims[k]));
  Shape s(declared.dtype(), dims);
  if (!matches_declared(s, declared))
    return error_at(pos, str_cat(op, " computes ", tensor_type_name(s),
                                 " but its type declares ", tensor_type_name(declared)));
  return s;
}

/// get_dimension_size and the dynamic_* ops: each becomes a constant or its static form.
inline StatusOr<OpResult> build_dynamic(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, TypeRule::kSame, op.name,
                                            p.pos));
  auto need = [&](std::size_t n) -> Status {
    if (p.operands.size() != n || declared.empty())
      return error_at(p.pos, str_cat(op.name, " takes ", n, " operand(s) and has a result"));
    return ok_status();
  };
  auto operand_list = [&](std::size_t k, std::string_view what) {
    return fold_to_list(ctx, p.operands[k], str_cat("the ", what, " operand of ", op.name), p.pos);
  };
  // Operands first, first + 1, ... folded into the static form's integer-array attributes
  // `names`; returns the lists.
  auto operand_attrs = [&](std::size_t first, std::initializer_list<const char*> names)
      -> StatusOr<std::vector<std::vector<std::int64_t>>> {
    std::vector<std::vector<std::int64_t>> lists;
    for (const char* attr : names) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> list, operand_list(first + lists.size(), attr));
      set_attr(p.attrs, attr, int_list_value_at(list, p.pos));
      lists.push_back(std::move(list));
    }
    return lists;
  };
  const std::string_view name = op.name;
  if (name == "stablehlo.get_dimension_size") {
    PJRT_LITE_RETURN_IF_ERROR(need(1));
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t d, int_attr(p.attrs, "dimension", name, p.pos));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(p.operands[0]));
    if (d < 0 || d >= s.rank())
      return error_at(p.pos, str_cat(name, ": dimension ", d, " is out of range for ",
                                     tensor_type_name(s)));
    if (declared[0].dtype() != DType::kS32 || declared[0].rank() != 0)
      return error_at(p.pos, str_cat(name, " returns tensor<i32>"));
    OpResult out;
    out.values = {ctx.b.constant(Literal::scalar<std::int32_t>(static_cast<std::int32_t>(s.dim(d))))};
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, p.pos));
    return out;
  }
  if (name == "stablehlo.dynamic_iota") {
    PJRT_LITE_RETURN_IF_ERROR(need(1));
    PJRT_LITE_ASSIGN_OR_RETURN(auto dims, operand_list(0, "output_shape"));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, refined_result(declared[0], dims, name, p.pos));
    p.operands.clear();
    return build_static_form(ctx, "stablehlo.iota", p, declared, {s});
  }
  if (name == "stablehlo.dynamic_reshape" || name == "stablehlo.dynamic_broadcast_in_dim") {
    if (p.operands.size() != 2 || declared.empty())
      return error_at(p.pos, str_cat(name, " takes 2 operands and has a result"));
    PJRT_LITE_ASSIGN_OR_RETURN(auto dims, operand_list(1, "output_shape"));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, refined_result(declared[0], dims, name, p.pos));
    p.operands.resize(1);
    return build_static_form(ctx,
                             name == "stablehlo.dynamic_reshape" ? "stablehlo.reshape"
                                                                 : "stablehlo.broadcast_in_dim",
                             p, declared, {s});
  }
  if (name == "stablehlo.real_dynamic_slice") {
    PJRT_LITE_RETURN_IF_ERROR(need(4));
    PJRT_LITE_ASSIGN_OR_RETURN(auto lists, operand_attrs(1, {"start_indices", "limit_indices", "strides"}));
    const auto& start = lists[0];
    const auto& limit = lists[1];
    const auto& strides = lists[2];
    p.operands.resize(1);
    if (start.size() != limit.size() || start.size() != strides.size())
      return error_at(p.pos, str_cat(name, ": start, limit and strides differ in length"));
    std::vector<std::int64_t> dims;
    for (std::size_t k = 0; k < start.size(); ++k) {
      if (strides[k] <= 0 || limit[k] < start[k])
        return error_at(p.pos, str_cat(name, ": bad slice in dimension ", k));
      dims.push_back((limit[k] - start[k] + strides[k] - 1) / strides[k]);
    }
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, refined_result(declared[0], dims, name, p.pos));
    return build_static_form(ctx, "stablehlo.slice", p, declared, {s});
  }
  if (name == "stablehlo.dynamic_pad") {
    PJRT_LITE_RETURN_IF_ERROR(need(5));
    PJRT_LITE_ASSIGN_OR_RETURN(auto lists,
                               operand_attrs(2, {"edge_padding_low", "edge_padding_high", "interior_padding"}));
    const auto& low = lists[0];
    const auto& high = lists[1];
    const auto& interior = lists[2];
    p.operands.resize(2);
    PJRT_LITE_ASSIGN_OR_RETURN(Shape x, ctx.b.shape(p.operands[0]));
    if (static_cast<std::int64_t>(low.size()) != x.rank() || high.size() != low.size() ||
        interior.size() != low.size())
      return error_at(p.pos, str_cat(name, ": the padding operands must have one element per "
                                           "dimension of the operand"));
    std::vector<std::int64_t> dims;
    for (std::size_t k = 0; k < low.size(); ++k) {
      const std::int64_t d = x.dim(static_cast<std::int64_t>(k));
      dims.push_back(low[k] + high[k] + d + std::max<std::int64_t>(d - 1, 0) * interior[k]);
    }
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, refined_result(declared[0], dims, name, p.pos));
    return build_static_form(ctx, "stablehlo.pad", p, declared, {s});
  }
  if (name == "stablehlo.dynamic_gather") {
    PJRT_LITE_RETURN_IF_ERROR(need(3));
    PJRT_LITE_RETURN_IF_ERROR(operand_attrs(2, {"slice_sizes"}).status());
    p.operands.resize(2);
    return build_inferred_form(ctx, "stablehlo.gather", p, declared, name);
  }
  if (name == "stablehlo.dynamic_conv") {
    PJRT_LITE_RETURN_IF_ERROR(need(3));
    PJRT_LITE_ASSIGN_OR_RETURN(IntTensor pad, fold_to_ints(ctx, p.operands[2],
                                                           {"the padding operand of ", name},
                                                           p.pos));
    auto literal = Literal::from_span<std::int64_t>(pad.values, pad.dims);
    if (!literal.ok()) return error_at(p.pos, literal.status().message());
    AttrValue v;
    v.kind = AttrValue::Kind::kDense;
    v.dense = std::make_shared<const Literal>(std::move(literal).value());
    v.pos = p.pos;
    set_attr(p.attrs, "padding", std::move(v));
    p.operands.resize(2);
    return build_inferred_form(ctx, "stablehlo.convolution", p, declared, name);
  }
  return unsupported_at(p.pos, std::string(name));
}

// ---- Dynamic custom calls -----------------------------------------------------------------

/// The custom calls JAX emits for ops whose result sizes are operands.
inline bool is_dynamic_custom_call(std::string_view target) {
  return target == "stablehlo.dynamic_top_k" || target == "stablehlo.dynamic_approx_top_k" ||
         target == "stablehlo.dynamic_rng_bit_generator";
}

/// dynamic_top_k(%x, %k) becomes chlo.top_k; dynamic_rng_bit_generator(%state, %shape)
/// becomes rng_bit_generator with that output shape. dynamic_approx_top_k is refused.
inline StatusOr<OpResult> build_dynamic_custom_call(Context& ctx, std::string_view target,
                                                    OpParts& p) {
  if (!p.type.functional)
    return error_at(p.type.pos, "a custom call's type must be a function type (...) -> (...)");
  PJRT_LITE_ASSIGN_OR_RETURN(
      std::vector<Shape> declared,
      declared_types(ctx, p.type, p.operands, TypeRule::kSame, "stablehlo.custom_call", p.pos));
  const std::string what = str_cat("stablehlo.custom_call @", target);
  if (target == "stablehlo.dynamic_top_k") {
    if (p.operands.size() != 2 || declared.size() != 2)
      return error_at(p.pos, str_cat(what, " takes (operand, k) and has two results"));
    PJRT_LITE_ASSIGN_OR_RETURN(IntTensor k, fold_to_ints(ctx, p.operands[1], {"k of ", std::string_view(what)}, p.pos));
    if (k.values.size() != 1) return error_at(p.pos, str_cat(what, ": k must be a scalar"));
    OpResult out;
    out.values = ctx.b.op(OpCode::kTopK, {p.operands[0]}, TopKAttrs{k.values[0]});
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, what, p.pos));
    return out;
  }
  if (target == "stablehlo.dynamic_rng_bit_generator") {
    if (p.operands.size() != 2 || declared.size() != 2)
      return error_at(p.pos, str_cat(what, " takes (state, output_shape) and has two results"));
    PJRT_LITE_ASSIGN_OR_RETURN(auto dims, fold_to_list(ctx, p.operands[1],
                                                       {"the output shape of ", std::string_view(what)}, p.pos));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, refined_result(declared[1], dims, what, p.pos));
    p.operands.resize(1);
    if (const AttrValue* a = find_attr(p.attrs, "rng_algorithm"); a == nullptr) {
      // The algorithm may sit in the frontend attributes' dictionary, or be the default.
      AttrValue v;
      v.kind = AttrValue::Kind::kEnum;
      v.text = "rng_algorithm";
      v.word = "DEFAULT";
      v.pos = p.pos;
      p.attrs.emplace_back("rng_algorithm", std::move(v));
    }
    return build_static_form(ctx, "stablehlo.rng_bit_generator", p, declared,
                             {declared[0], std::move(s)});
  }
  return unsupported_at(p.pos, what);
}

}  // namespace pjrt_lite::stablehlo::detail
