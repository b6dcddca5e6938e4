#pragma once
// Shape inference: the result shapes of each op from its operand shapes and attributes, with
// the element-type and shape constraints of the StableHLO specification. Every error is
// INVALID_ARGUMENT and its message starts with the op's name, then says which operand or
// attribute is wrong and why: "add: operand 1 has shape f32[3] but operand 0 has shape f32[2]".
//
// Results always have the default layout: the IR is about logical shapes; layouts belong to
// buffers and to the compiler.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
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
#include "pjrt_lite/core/compiled_once.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1 {

/// The types of a body (a reduce's region): its parameter shapes in parameter-number order
/// and its output shapes.
struct Signature {
  std::vector<Shape> parameters;
  std::vector<Shape> results;
  friend bool operator==(const Signature&, const Signature&) = default;
};

/// A set of element-type classes, for the type rules of element-wise ops.
enum class TypeClass : std::uint8_t {
  kNone = 0,
  kPred = 1 << 0,
  kSigned = 1 << 1,
  kUnsigned = 1 << 2,
  kFloat = 1 << 3,
  kComplex = 1 << 4,
  kInteger = kSigned | kUnsigned,
  kFloatOrComplex = kFloat | kComplex,
  kNumeric = kInteger | kFloat | kComplex,
  kAny = kPred | kNumeric,
};
constexpr TypeClass operator|(TypeClass a, TypeClass b) {
  return static_cast<TypeClass>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
/// The class of one valid dtype.
constexpr TypeClass type_class(DType t) {
  if (is_pred(t)) return TypeClass::kPred;
  if (is_signed_integral(t)) return TypeClass::kSigned;
  if (is_unsigned_integral(t)) return TypeClass::kUnsigned;
  if (is_floating(t)) return TypeClass::kFloat;
  if (is_complex(t)) return TypeClass::kComplex;
  return TypeClass::kNone;
}
constexpr bool is_in(DType t, TypeClass set) {
  return (static_cast<std::uint8_t>(type_class(t)) & static_cast<std::uint8_t>(set)) != 0;
}

/// The element types a unary or binary op accepts, per the spec. complex takes only f32 and
/// f64, which the set cannot say; infer_binary checks that.
constexpr TypeClass accepted_types(OpCode op) {
  switch (op) {
    case OpCode::kAbs:
    case OpCode::kSign: return TypeClass::kSigned | TypeClass::kFloat | TypeClass::kComplex;
    case OpCode::kNegate:
    case OpCode::kSubtract:
    case OpCode::kDivide:
    case OpCode::kPower: return TypeClass::kNumeric;
    case OpCode::kExponential:
    case OpCode::kExponentialMinusOne:
    case OpCode::kLog:
    case OpCode::kLogPlusOne:
    case OpCode::kSqrt:
    case OpCode::kRsqrt:
    case OpCode::kCbrt:
    case OpCode::kTanh:
    case OpCode::kLogistic:
    case OpCode::kSine:
    case OpCode::kCosine:
    case OpCode::kTan:
    case OpCode::kReal:
    case OpCode::kImag:
    case OpCode::kAtan2:
    // The CHLO ops with a complex form (the principal branch, as the C library's).
    case OpCode::kAcosh:
    case OpCode::kAsin:
    case OpCode::kAsinh:
    case OpCode::kAtan:
    case OpCode::kAtanh:
    case OpCode::kCosh:
    case OpCode::kSinh: return TypeClass::kFloatOrComplex;
    case OpCode::kFloor:
    case OpCode::kCeil:
    case OpCode::kRoundNearestAfz:
    case OpCode::kRoundNearestEven:
    case OpCode::kIsFinite:
    case OpCode::kComplex:
    // The CHLO ops JAX exports on real types only.
    case OpCode::kErf:
    case OpCode::kErfc:
    case OpCode::kErfInv:
    case OpCode::kLgamma:
    case OpCode::kDigamma:
    case OpCode::kBesselI1e:
    case OpCode::kNextAfter: return TypeClass::kFloat;
    case OpCode::kNot:
    case OpCode::kAnd:
    case OpCode::kOr:
    case OpCode::kXor: return TypeClass::kPred | TypeClass::kInteger;
    case OpCode::kPopcnt:
    case OpCode::kCountLeadingZeros:
    case OpCode::kShiftLeft:
    case OpCode::kShiftRightArithmetic:
    case OpCode::kShiftRightLogical: return TypeClass::kInteger;
    // The spec lists complex for remainder but leaves its meaning TBD (#997), so it is
    // rejected rather than given a meaning of our own.
    case OpCode::kRemainder: return TypeClass::kInteger | TypeClass::kFloat;
    case OpCode::kAdd:
    case OpCode::kMultiply:
    case OpCode::kMaximum:
    case OpCode::kMinimum: return TypeClass::kAny;
    default: return TypeClass::kNone;
  }
}

/// The real type of a complex one (c64 -> f32, c128 -> f64); other types map to themselves.
constexpr DType complex_component_type(DType t) {
  if (t == DType::kC64) return DType::kF32;
  if (t == DType::kC128) return DType::kF64;
  return t;
}

/// The spec's is_promotable for reduce bodies: same class and no fewer bits. The spec's
/// pseudo-code answers false for pred to pred, which would forbid every boolean reduction
/// (any, all); pred to pred is taken as promotable here.
constexpr bool is_promotable(DType from, DType to) {
  TypeClass a = type_class(from), b = type_class(to);
  bool both_integer = is_in(from, TypeClass::kInteger) && is_in(to, TypeClass::kInteger);
  if (a != b && !both_integer) return false;
  if (a == TypeClass::kNone) return false;
  return byte_size(from) <= byte_size(to);
}

namespace detail {

/// "pred, integer, floating-point or complex".
inline std::string describe(TypeClass set) {
  std::vector<std::string_view> parts;
  auto has = [&](TypeClass c) {
    return (static_cast<std::uint8_t>(set) & static_cast<std::uint8_t>(c)) ==
           static_cast<std::uint8_t>(c);
  };
  if (has(TypeClass::kPred)) parts.push_back("pred");
  if (has(TypeClass::kInteger))
    parts.push_back("integer");
  else if (has(TypeClass::kSigned))
    parts.push_back("signed integer");
  else if (has(TypeClass::kUnsigned))
    parts.push_back("unsigned integer");
  if (has(TypeClass::kFloat)) parts.push_back("floating-point");
  if (has(TypeClass::kComplex)) parts.push_back("complex");
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += i + 1 == parts.size() ? " or " : ", ";
    out += parts[i];
  }
  return out;
}

template <class... Args>
Status op_error(OpCode op, const Args&... args) {
  return invalid_argument_error(str_cat(op_name(op), ": ", args...));
}

inline std::string dims_str(std::span<const std::int64_t> dims) { return Shape::dims_string(dims); }

/// A result shape, checked like any shape from outside (non-negative dims, no overflow).
inline StatusOr<Shape> make_result(OpCode op, DType dtype, std::span<const std::int64_t> dims) {
  StatusOr<Shape> s = Shape::make(dtype, dims);
  if (!s.ok()) return op_error(op, "result ", s.status().message());
  return s;
}

inline Status check_valid_shape(OpCode op, std::string_view what, const Shape& s) {
  if (!is_valid(s.dtype()))
    return op_error(op, what, " has an invalid element type (enum value ",
                    static_cast<int>(s.dtype()), ")");
  StatusOr<Shape> checked = Shape::make(s.dtype(), s.dims(), s.major_to_minor());
  if (!checked.ok()) return op_error(op, what, ": ", checked.status().message());
  if (!s.has_default_layout())
    return op_error(op, what, " ", s, " has a non-default layout; IR shapes are logical");
  return ok_status();
}

inline Status check_element_type(OpCode op, std::string_view what, DType t, TypeClass set) {
  if (is_in(t, set)) return ok_status();
  return op_error(op, what, " has element type ", dtype_name(t), ", but ", op_name(op), " takes ",
                  describe(set), " types");
}

/// Checks that `dims` are distinct and in [0, rank); `what` names the attribute.
inline Status check_dimension_list(OpCode op, std::string_view what,
                                   std::span<const std::int64_t> dims, std::int64_t rank,
                                   std::string_view rank_of) {
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank)
      return op_error(op, what, "[", i, "] = ", dims[i], " is out of range for ", rank_of,
                      " of rank ", rank);
    if (seen[static_cast<std::size_t>(dims[i])])
      return op_error(op, what, " ", dims_str(dims), " repeats dimension ", dims[i]);
    seen[static_cast<std::size_t>(dims[i])] = true;
  }
  return ok_status();
}

/// An attribute list with its name, for errors.
using NamedList = std::pair<std::string_view, const std::vector<std::int64_t>*>;

/// Slice's and pad's result dimensions: each of the three `lists` has one entry per dimension
/// of `operand`, and `dim(d, size, x, y, z)` makes dimension d of the result from the
/// operand's size there and the lists' entries x, y, z, or returns the error.
template <class Dim>
StatusOr<std::vector<std::int64_t>> dims_from_lists(OpCode op, const Shape& operand,
                                                    const NamedList (&lists)[3], Dim dim) {
  for (const auto& [name, list] : lists)
    if (list->size() != static_cast<std::size_t>(operand.rank()))
      return op_error(op, name, " ", dims_str(*list), " has ", list->size(), " entries for operand ", operand,
                      " of rank ", operand.rank());
  const auto rank = static_cast<std::size_t>(operand.rank());
  std::vector<std::int64_t> dims(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    PJRT_LITE_ASSIGN_OR_RETURN(dims[d], dim(d, operand.dim(static_cast<std::int64_t>(d)),
                                            (*lists[0].second)[d], (*lists[1].second)[d],
                                            (*lists[2].second)[d]));
  }
  return dims;
}

/// An array with batching dimensions, as gather and scatter name them in their messages.
struct BatchedArray {
  const Shape& shape;
  std::string_view name;  // "operand", "start_indices", ...
  std::span<const std::int64_t> batching_dims;
};

/// What gather and scatter check alike: the indices' batching dims are valid, 0 <=
/// index_vector_dim <= rank(indices) and not a batching dim, the data's and the indices'
/// batching dims pair up with equal sizes, and the index map (start_index_map,
/// scatter_dims_to_operand_dims: `map_name`) has one entry per element of the index vector
/// and names, with the data's batching dims, distinct dimensions of the data.
inline Status check_indexing(OpCode op, const BatchedArray& data, const BatchedArray& indices,
                             std::int64_t index_vector_dim, std::string_view map_name,
                             std::span<const std::int64_t> map) {
  const std::string indices_dims = str_cat(indices.name, "_batching_dims");
  PJRT_LITE_RETURN_IF_ERROR(
      check_dimension_list(op, indices_dims, indices.batching_dims, indices.shape.rank(), indices.name));
  if (index_vector_dim < 0 || index_vector_dim > indices.shape.rank())
    return op_error(op, "index_vector_dim = ", index_vector_dim, " is out of range [0, ", indices.shape.rank(),
                    "] for ", indices.name, " ", indices.shape);
  if (std::ranges::find(indices.batching_dims, index_vector_dim) != indices.batching_dims.end())
    return op_error(op, "index_vector_dim ", index_vector_dim, " is one of ", indices_dims);
  if (data.batching_dims.size() != indices.batching_dims.size())
    return op_error(op, data.name, "_batching_dims ", dims_str(data.batching_dims), " and ", indices_dims, " ",
                    dims_str(indices.batching_dims), " have different lengths");
  for (std::size_t i = 0; i < data.batching_dims.size(); ++i)
    if (data.shape.dim(data.batching_dims[i]) != indices.shape.dim(indices.batching_dims[i]))
      return op_error(op, "batching dimension pair ", i, ": ", data.name, " dimension ", data.batching_dims[i],
                      " has size ", data.shape.dim(data.batching_dims[i]), " but ", indices.name, " dimension ",
                      indices.batching_dims[i], " has size ", indices.shape.dim(indices.batching_dims[i]));
  const std::int64_t index_size =
      index_vector_dim < indices.shape.rank() ? indices.shape.dim(index_vector_dim) : 1;
  if (static_cast<std::int64_t>(map.size()) != index_size)
    return op_error(op, map_name, " ", dims_str(map), " has ", map.size(),
                    " entries but the index vector has ", index_size);
  std::vector<std::int64_t> starts(map.begin(), map.end());
  starts.insert(starts.end(), data.batching_dims.begin(), data.batching_dims.end());
  return check_dimension_list(op, str_cat(map_name, " and ", data.name, "_batching_dims"), starts,
                              data.shape.rank(), str_cat("the ", data.name));
}

/// Gather's and scatter's operand 1 (`name`: start_indices, scatter_indices) must have an
/// integer element type.
inline Status check_integer_indices(OpCode op, const Shape& indices, std::string_view name) {
  if (is_integral(indices.dtype())) return ok_status();
  return op_error(op, "operand 1 (", name, ") has element type ", dtype_name(indices.dtype()),
                  " but must be an integer type");
}

inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  if ((b > 0 && a > std::numeric_limits<std::int64_t>::max() - b) ||
      (b < 0 && a < std::numeric_limits<std::int64_t>::min() - b))
    return std::nullopt;
  return a + b;
}
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  // Only called with a, b >= 0.
  if (a != 0 && b > std::numeric_limits<std::int64_t>::max() / a) return std::nullopt;
  return a * b;
}

/// Start indices of dynamic_slice / dynamic_update_slice: one rank-0 integer per dimension,
/// all of one type. `first` is the operand position of the first one.
inline Status check_start_indices(OpCode op, std::span<const Shape> starts, std::int64_t rank,
                                  std::size_t first) {
  if (static_cast<std::int64_t>(starts.size()) != rank)
    return op_error(op, "got ", starts.size(), " start indices for an operand of rank ", rank);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (!starts[i].is_scalar() || !is_integral(starts[i].dtype()))
      return op_error(op, "operand ", first + i, " (start index ", i, ") has shape ", starts[i],
                      " but start indices must be rank-0 integers");
    if (starts[i].dtype() != starts[0].dtype())
      return op_error(op, "operand ", first + i, " (start index ", i, ") has shape ", starts[i],
                      " but start index 0 has ", starts[0], "; all must have one type");
  }
  return ok_status();
}

}  // namespace detail

/// parameter: the declared shape, which must be valid and in the default layout.
inline StatusOr<Shape> infer_parameter(const ParameterAttrs& attrs) {
  if (attrs.number < 0)
    return detail::op_error(OpCode::kParameter, "number ", attrs.number, " is negative");
  PJRT_LITE_RETURN_IF_ERROR(detail::check_valid_shape(OpCode::kParameter, "shape", attrs.shape));
  return attrs.shape;
}

/// constant: the literal's shape; it must be valid and in the default layout.
inline StatusOr<Shape> infer_constant(const ConstantAttrs& attrs) {
  if (!attrs.value) return detail::op_error(OpCode::kConstant, "has no value");
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_valid_shape(OpCode::kConstant, "value", attrs.value->shape()));
  return attrs.value->shape();
}

/// iota: an integer, floating-point or complex shape and 0 <= iota_dimension < rank.
inline StatusOr<Shape> infer_iota(const IotaAttrs& attrs) {
  constexpr OpCode op = OpCode::kIota;
  PJRT_LITE_RETURN_IF_ERROR(detail::check_valid_shape(op, "shape", attrs.shape));
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_element_type(op, "shape", attrs.shape.dtype(), TypeClass::kNumeric));
  if (attrs.iota_dimension < 0 || attrs.iota_dimension >= attrs.shape.rank())
    return detail::op_error(op, "iota_dimension ", attrs.iota_dimension,
                            " is out of range for shape ", attrs.shape);
  return attrs.shape;
}

/// abs .. imag: the operand's shape; abs, real and imag of complex give the component type,
/// is_finite gives pred.
inline StatusOr<Shape> infer_unary(OpCode op, const Shape& operand) {
  if (!is_unary(op)) return detail::op_error(op, "is not a unary op");
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_element_type(op, "operand 0", operand.dtype(), accepted_types(op)));
  DType out = operand.dtype();
  if (op == OpCode::kAbs || op == OpCode::kReal || op == OpCode::kImag)
    out = complex_component_type(out);
  else if (op == OpCode::kIsFinite)
    out = DType::kPred;
  return Shape(out, std::vector<std::int64_t>(operand.dims().begin(), operand.dims().end()));
}

/// reduce_precision: a floating-point operand, 1 <= exponent_bits and 0 <= mantissa_bits
/// (the spec's constraints), both within si32 as the spec types them. The operand's shape.
inline StatusOr<Shape> infer_reduce_precision(const Shape& operand, const ReducePrecisionAttrs& a) {
  constexpr OpCode op = OpCode::kReducePrecision;
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_element_type(op, "operand 0", operand.dtype(), TypeClass::kFloat));
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  if (a.exponent_bits < 1 || a.exponent_bits > kMax)
    return detail::op_error(op, "exponent_bits = ", a.exponent_bits,
                            " must be at least 1 (and fit in si32)");
  if (a.mantissa_bits < 0 || a.mantissa_bits > kMax)
    return detail::op_error(op, "mantissa_bits = ", a.mantissa_bits,
                            " must be at least 0 (and fit in si32)");
  return operand.with_default_layout();
}

/// sort(inputs...): N >= 1 inputs of one dims (element types may differ), a dimension in
/// [-rank, rank), and a comparator (E0, E0, ..., EN-1, EN-1) -> i1 of rank-0 values, Ei
/// being input i's element type. The results have the inputs' shapes.
inline StatusOr<std::vector<Shape>> infer_sort(std::span<const Shape> inputs,
                                               const Signature& comparator, const SortAttrs& a) {
  constexpr OpCode op = OpCode::kSort;
  const std::size_t n = inputs.size();
  if (n == 0) return detail::op_error(op, "needs at least one input");
  for (std::size_t i = 1; i < n; ++i)
    if (!std::ranges::equal(inputs[i].dims(), inputs[0].dims()))
      return detail::op_error(op, "operand ", i, " has shape ", inputs[i], " but operand 0 has ",
                              inputs[0], "; inputs must have one dims");
  const std::int64_t rank = inputs[0].rank();
  if (a.dimension < -rank || a.dimension >= rank)
    return detail::op_error(op, "dimension = ", a.dimension, " is out of range for rank ", rank,
                            " (allowed: ", -rank, " .. ", rank - 1, ")");
  if (comparator.parameters.size() != 2 * n)
    return detail::op_error(op, "comparator takes ", comparator.parameters.size(),
                            " parameters, but ", n, " input(s) need ", 2 * n,
                            " (two rank-0 values per input)");
  for (std::size_t k = 0; k < 2 * n; ++k) {
    const Shape want(inputs[k / 2].dtype(), {});
    if (comparator.parameters[k] != want)
      return detail::op_error(op, "comparator parameter ", k, " has type ",
                              comparator.parameters[k], " but input ", k / 2, " needs ", want);
  }
  if (comparator.results.size() != 1 || comparator.results[0] != Shape(DType::kPred, {}))
    return detail::op_error(op, "comparator must return one pred[] (tensor<i1>), returns ",
                            comparator.results.size(), " value(s)",
                            comparator.results.empty()
                                ? std::string()
                                : str_cat(", the first of type ", comparator.results[0]));
  std::vector<Shape> results;
  for (const Shape& s : inputs) results.push_back(s.with_default_layout());
  return results;
}

/// top_k(operand): an integer, floating-point or pred operand of rank >= 1 and 0 <= k <= its
/// last dimension. Results: the values (the operand's type) and their s32 indices, both of
/// the operand's dims with the last one k.
inline StatusOr<std::vector<Shape>> infer_top_k(const Shape& operand, const TopKAttrs& a) {
  constexpr OpCode op = OpCode::kTopK;
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_element_type(op, "operand 0", operand.dtype(),
                                 TypeClass::kPred | TypeClass::kInteger | TypeClass::kFloat));
  if (operand.rank() < 1)
    return detail::op_error(op, "operand 0 has shape ", operand, " but must have rank 1 or more");
  const std::int64_t last = operand.dim(operand.rank() - 1);
  if (a.k < 0 || a.k > last)
    return detail::op_error(op, "k = ", a.k, " must be in [0, ", last,
                            "], the last dimension of operand 0 ", operand);
  if (last > std::numeric_limits<std::int32_t>::max())
    return detail::op_error(op, "the last dimension of operand 0 ", operand,
                            " is too large for s32 indices");
  std::vector<std::int64_t> dims(operand.dims().begin(), operand.dims().end());
  dims.back() = a.k;
  return std::vector<Shape>{Shape(operand.dtype(), dims), Shape(DType::kS32, dims)};
}

/// add .. complex: both operands of one shape, the result of that shape; complex turns two
/// f32 (f64) into c64 (c128).
inline StatusOr<Shape> infer_binary(OpCode op, const Shape& lhs, const Shape& rhs) {
  if (!is_binary(op)) return detail::op_error(op, "is not a binary op");
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_element_type(op, "operand 0", lhs.dtype(), accepted_types(op)));
  if (!lhs.same_type_and_dims(rhs))
    return detail::op_error(op, "operand 1 has shape ", rhs, " but operand 0 has shape ", lhs);
  DType out = lhs.dtype();
  if (op == OpCode::kComplex) {
    if (out != DType::kF32 && out != DType::kF64)
      return detail::op_error(op, "operand 0 has element type ", dtype_name(out),
                              ", but complex takes f32 or f64");
    out = out == DType::kF32 ? DType::kC64 : DType::kC128;
  }
  return Shape(out, std::vector<std::int64_t>(lhs.dims().begin(), lhs.dims().end()));
}

/// compare: operands of one shape, a pred result; an explicit compare_type must be the one
/// the spec allows for the element type.
inline StatusOr<Shape> infer_compare(const Shape& lhs, const Shape& rhs,
                                     const CompareAttrs& attrs) {
  constexpr OpCode op = OpCode::kCompare;
  if (static_cast<int>(attrs.direction) > static_cast<int>(ComparisonDirection::kLt))
    return detail::op_error(op, "invalid comparison direction (enum value ",
                            static_cast<int>(attrs.direction), ")");
  if (static_cast<int>(attrs.type) > static_cast<int>(ComparisonType::kUnsigned))
    return detail::op_error(op, "invalid comparison type (enum value ",
                            static_cast<int>(attrs.type), ")");
  if (!lhs.same_type_and_dims(rhs))
    return detail::op_error(op, "operand 1 has shape ", rhs, " but operand 0 has shape ", lhs);
  DType t = lhs.dtype();
  if (attrs.type != ComparisonType::kNotype) {
    ComparisonType expected = default_comparison_type(t);
    bool fits =
        attrs.type == expected || (is_floating(t) && attrs.type == ComparisonType::kTotalOrder);
    if (!fits)
      return detail::op_error(op, "compare type ", comparison_type_name(attrs.type),
                              " does not fit element type ", dtype_name(t), " (expected ",
                              comparison_type_name(expected),
                              is_floating(t) ? " or TOTALORDER" : "", ")");
  }
  return Shape(DType::kPred, std::vector<std::int64_t>(lhs.dims().begin(), lhs.dims().end()));
}

/// select(pred, on_true, on_false): pred is pred, rank 0 or the shape of on_true; the
/// branches have one shape, which is the result's.
inline StatusOr<Shape> infer_select(const Shape& pred, const Shape& on_true,
                                    const Shape& on_false) {
  constexpr OpCode op = OpCode::kSelect;
  if (pred.dtype() != DType::kPred)
    return detail::op_error(op, "operand 0 (pred) has element type ", dtype_name(pred.dtype()),
                            ", but must be pred");
  if (!pred.is_scalar() && !std::ranges::equal(pred.dims(), on_true.dims()))
    return detail::op_error(op, "operand 0 (pred) has shape ", pred,
                            " but must be rank 0 or have the dims of operand 1, ", on_true);
  if (!on_true.same_type_and_dims(on_false))
    return detail::op_error(op, "operand 2 has shape ", on_false, " but operand 1 has shape ",
                            on_true);
  return on_true.with_default_layout();
}

/// clamp(min, operand, max): min and max are rank 0 or the operand's shape; all three share
/// an element type; the result has the operand's shape.
inline StatusOr<Shape> infer_clamp(const Shape& min, const Shape& operand, const Shape& max) {
  constexpr OpCode op = OpCode::kClamp;
  const Shape* bounds[2] = {&min, &max};
  const char* names[2] = {"min", "max"};
  const int positions[2] = {0, 2};
  for (int i = 0; i < 2; ++i) {
    const Shape& b = *bounds[i];
    if (b.dtype() != operand.dtype() ||
        (!b.is_scalar() && !std::ranges::equal(b.dims(), operand.dims())))
      return detail::op_error(op, "operand ", positions[i], " (", names[i], ") has shape ", b,
                              " but must be a rank-0 ", dtype_name(operand.dtype()),
                              " or have the shape of operand 1, ", operand);
  }
  return operand.with_default_layout();
}

/// convert: the operand's dims with any element type.
inline StatusOr<Shape> infer_convert(const Shape& operand, DType to) {
  if (!is_valid(to))
    return detail::op_error(OpCode::kConvert, "invalid target element type (enum value ",
                            static_cast<int>(to), ")");
  return Shape(to, std::vector<std::int64_t>(operand.dims().begin(), operand.dims().end()));
}

/// bitcast_convert: the same bits seen as another type. Equal widths keep the dims; a
/// narrower result gets a new minor dimension of size width(from) / width(to); a wider one
/// consumes the operand's minor dimension, whose size must be width(to) / width(from).
/// Complex converts only to complex. pred counts as one bit (StableHLO's i1), element 0 the
/// lowest bit, as StableHLO's interpreter bitcasts it.
inline StatusOr<Shape> infer_bitcast_convert(const Shape& operand, DType to) {
  constexpr OpCode op = OpCode::kBitcastConvert;
  DType from = operand.dtype();
  if (!is_valid(to))
    return detail::op_error(op, "invalid target element type (enum value ", static_cast<int>(to),
                            ")");
  if (is_complex(from) != is_complex(to))
    return detail::op_error(op, "cannot bitcast ", dtype_name(from), " to ", dtype_name(to),
                            ": complex converts only to complex");
  std::vector<std::int64_t> dims(operand.dims().begin(), operand.dims().end());
  // Widths in bits: a narrow type's is its own (4 for s4), not its byte of storage; pred's 1.
  const auto wf = static_cast<std::size_t>(bitcast_width(from)), wt = static_cast<std::size_t>(bitcast_width(to));
  if (wf % wt != 0 && wt % wf != 0)
    return detail::op_error(op, "cannot bitcast ", dtype_name(from), " (", wf, " bits) to ", dtype_name(to),
                            " (", wt, " bits): neither width divides the other");
  if (wt < wf) {
    dims.push_back(static_cast<std::int64_t>(wf / wt));
  } else if (wt > wf) {
    const auto ratio = static_cast<std::int64_t>(wt / wf);
    if (dims.empty() || dims.back() != ratio)
      return detail::op_error(op, "bitcasting ", operand, " to the wider ", dtype_name(to),
                              " needs a minor dimension of size ", ratio);
    dims.pop_back();
  }
  return Shape(to, std::move(dims));
}

/// broadcast_in_dim: operand dimension d goes to result dimension broadcast_dimensions[d]
/// (distinct, in range, in any order) and has size 1 or the size of that result dimension.
inline StatusOr<Shape> infer_broadcast_in_dim(const Shape& operand,
                                              const BroadcastInDimAttrs& attrs) {
  constexpr OpCode op = OpCode::kBroadcastInDim;
  PJRT_LITE_ASSIGN_OR_RETURN(Shape result, detail::make_result(op, operand.dtype(), attrs.dims));
  const auto& bd = attrs.broadcast_dimensions;
  if (static_cast<std::int64_t>(bd.size()) != operand.rank())
    return detail::op_error(op, "broadcast_dimensions ", detail::dims_str(bd), " has ", bd.size(),
                            " entries for operand ", operand, " of rank ", operand.rank());
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_dimension_list(op, "broadcast_dimensions", bd, result.rank(), "a result"));
  for (std::int64_t d = 0; d < operand.rank(); ++d) {
    const std::int64_t size = operand.dim(d), target = result.dim(bd[d]);
    if (size != 1 && size != target)
      return detail::op_error(op, "operand dimension ", d, " has size ", size,
                              ", which is neither 1 nor the size ", target, " of result dimension ",
                              bd[d], " (result ", result, ")");
  }
  return result;
}

/// reshape: the same element count in new dims.
inline StatusOr<Shape> infer_reshape(const Shape& operand, const ReshapeAttrs& attrs) {
  constexpr OpCode op = OpCode::kReshape;
  PJRT_LITE_ASSIGN_OR_RETURN(Shape result, detail::make_result(op, operand.dtype(), attrs.dims));
  if (result.element_count() != operand.element_count())
    return detail::op_error(op, "cannot reshape ", operand, " (", operand.element_count(),
                            " elements) to ", detail::dims_str(attrs.dims), " (",
                            result.element_count(), " elements)");
  return result;
}

/// transpose: result dimension d is operand dimension permutation[d].
inline StatusOr<Shape> infer_transpose(const Shape& operand, const TransposeAttrs& attrs) {
  constexpr OpCode op = OpCode::kTranspose;
  const auto& perm = attrs.permutation;
  const std::int64_t rank = operand.rank();
  bool ok = static_cast<std::int64_t>(perm.size()) == rank;
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < rank && !seen[static_cast<std::size_t>(perm[i])];
    if (ok) seen[static_cast<std::size_t>(perm[i])] = true;
  }
  if (!ok) {
    if (rank == 0)
      return detail::op_error(op, "permutation ", detail::dims_str(perm),
                              " must be empty for the rank-0 operand ", operand);
    return detail::op_error(op, "permutation ", detail::dims_str(perm),
                            " is not a permutation of 0..", rank - 1, " (operand ", operand, ")");
  }
  std::vector<std::int64_t> dims;
  for (std::int64_t p : perm) dims.push_back(operand.dim(p));
  return Shape(operand.dtype(), std::move(dims));
}

/// slice: 0 <= start <= limit <= size and stride > 0 per dimension; the result has
/// ceil((limit - start) / stride) elements along each.
inline StatusOr<Shape> infer_slice(const Shape& operand, const SliceAttrs& attrs) {
  constexpr OpCode op = OpCode::kSlice;
  auto slice_dim = [&](std::size_t d, std::int64_t size, std::int64_t start, std::int64_t limit,
                       std::int64_t stride) -> StatusOr<std::int64_t> {
    if (start < 0 || start > limit || limit > size)
      return detail::op_error(op, "dimension ", d, ": start ", start, " and limit ", limit,
                              " are out of bounds for size ", size, " of operand ", operand,
                              " (need 0 <= start <= limit <= size)");
    if (stride <= 0)
      return detail::op_error(op, "strides[", d, "] = ", stride, " must be positive");
    return (limit - start) / stride + ((limit - start) % stride != 0 ? 1 : 0);
  };
  const detail::NamedList lists[] = {{"start_indices", &attrs.start_indices},
                                     {"limit_indices", &attrs.limit_indices},
                                     {"strides", &attrs.strides}};
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims,
                             detail::dims_from_lists(op, operand, lists, slice_dim));
  return Shape(operand.dtype(), std::move(dims));
}

/// concatenate: one or more operands of one element type and rank, equal except along
/// `dimension`, where the sizes add up.
inline StatusOr<Shape> infer_concatenate(std::span<const Shape> inputs,
                                         const ConcatenateAttrs& attrs) {
  constexpr OpCode op = OpCode::kConcatenate;
  if (inputs.empty()) return detail::op_error(op, "needs at least one operand");
  const Shape& first = inputs[0];
  const std::int64_t dim = attrs.dimension;
  if (dim < 0 || dim >= first.rank())
    return detail::op_error(op, "dimension ", dim, " is out of range for operand 0 ", first);
  std::vector<std::int64_t> dims(first.dims().begin(), first.dims().end());
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const Shape& s = inputs[i];
    if (s.dtype() != first.dtype())
      return detail::op_error(op, "operand ", i, " has element type ", dtype_name(s.dtype()),
                              " but operand 0 has ", dtype_name(first.dtype()));
    if (s.rank() != first.rank())
      return detail::op_error(op, "operand ", i, " has shape ", s, " of rank ", s.rank(),
                              " but operand 0 has shape ", first, " of rank ", first.rank());
    for (std::int64_t d = 0; d < s.rank(); ++d)
      if (d != dim && s.dim(d) != first.dim(d))
        return detail::op_error(op, "operand ", i, " has shape ", s,
                                " which differs from operand 0 ", first, " in dimension ", d,
                                " (only dimension ", dim, " may differ)");
    std::optional<std::int64_t> sum = detail::checked_add(dims[dim], s.dim(dim));
    if (!sum) return detail::op_error(op, "result dimension ", dim, " overflows int64");
    dims[dim] = *sum;
  }
  return detail::make_result(op, first.dtype(), dims);
}

/// pad: a rank-0 padding value of the operand's type; per dimension the result has
/// low + size + max(size - 1, 0) * interior + high elements, which must not be negative.
inline StatusOr<Shape> infer_pad(const Shape& operand, const Shape& padding_value,
                                 const PadAttrs& attrs) {
  constexpr OpCode op = OpCode::kPad;
  if (!padding_value.is_scalar() || padding_value.dtype() != operand.dtype())
    return detail::op_error(op, "operand 1 (padding value) has shape ", padding_value,
                            " but must be a rank-0 ", dtype_name(operand.dtype()));
  auto pad_dim = [&](std::size_t d, std::int64_t size, std::int64_t low, std::int64_t high,
                     std::int64_t interior) -> StatusOr<std::int64_t> {
    if (interior < 0)
      return detail::op_error(op, "interior_padding[", d, "] = ", interior,
                              " must be non-negative");
    std::optional<std::int64_t> n = detail::checked_mul(size > 0 ? size - 1 : 0, interior);
    if (n) n = detail::checked_add(*n, size);
    if (n) n = detail::checked_add(*n, low);
    if (n) n = detail::checked_add(*n, high);
    if (!n) return detail::op_error(op, "result dimension ", d, " overflows int64");
    if (*n < 0)
      return detail::op_error(op, "result dimension ", d, " would have negative size ", *n,
                              " (size ", size, ", low ", low, ", high ", high, ", interior ",
                              interior, ")");
    return *n;
  };
  const detail::NamedList lists[] = {{"edge_padding_low", &attrs.edge_padding_low},
                                     {"edge_padding_high", &attrs.edge_padding_high},
                                     {"interior_padding", &attrs.interior_padding}};
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims,
                             detail::dims_from_lists(op, operand, lists, pad_dim));
  return detail::make_result(op, operand.dtype(), dims);
}

/// reverse: distinct dimensions in range; the shape is unchanged.
inline StatusOr<Shape> infer_reverse(const Shape& operand, const ReverseAttrs& attrs) {
  constexpr OpCode op = OpCode::kReverse;
  PJRT_LITE_RETURN_IF_ERROR(detail::check_dimension_list(op, "dimensions", attrs.dimensions,
                                                         operand.rank(), "an operand"));
  return operand.with_default_layout();
}

/// dynamic_slice(operand, start_indices...): one rank-0 integer start per dimension, all of
/// one type; 0 <= slice_sizes <= operand dims; the result's dims are slice_sizes.
inline StatusOr<Shape> infer_dynamic_slice(const Shape& operand,
                                           std::span<const Shape> start_indices,
                                           const DynamicSliceAttrs& attrs) {
  constexpr OpCode op = OpCode::kDynamicSlice;
  const auto& sizes = attrs.slice_sizes;
  if (static_cast<std::int64_t>(sizes.size()) != operand.rank())
    return detail::op_error(op, "slice_sizes ", detail::dims_str(sizes), " has ", sizes.size(),
                            " entries for operand ", operand, " of rank ", operand.rank());
  PJRT_LITE_RETURN_IF_ERROR(detail::check_start_indices(op, start_indices, operand.rank(), 1));
  for (std::int64_t d = 0; d < operand.rank(); ++d)
    if (sizes[d] < 0 || sizes[d] > operand.dim(d))
      return detail::op_error(op, "slice_sizes[", d, "] = ", sizes[d],
                              " is out of bounds for size ", operand.dim(d), " of operand ",
                              operand);
  return Shape(operand.dtype(), sizes);
}

/// dynamic_update_slice(operand, update, start_indices...): an update of the operand's
/// element type and rank, no larger in any dimension; the result has the operand's shape.
inline StatusOr<Shape> infer_dynamic_update_slice(const Shape& operand, const Shape& update,
                                                  std::span<const Shape> start_indices) {
  constexpr OpCode op = OpCode::kDynamicUpdateSlice;
  if (update.dtype() != operand.dtype() || update.rank() != operand.rank())
    return detail::op_error(op, "operand 1 (update) has shape ", update,
                            " but must have the element type and rank of operand 0, ", operand);
  for (std::int64_t d = 0; d < operand.rank(); ++d)
    if (update.dim(d) > operand.dim(d))
      return detail::op_error(op, "operand 1 (update) ", update, " is larger than operand 0 ",
                              operand, " in dimension ", d);
  PJRT_LITE_RETURN_IF_ERROR(detail::check_start_indices(op, start_indices, operand.rank(), 2));
  return operand.with_default_layout();
}

/// reduce(inputs..., init_values...): N inputs of one dims (element types may differ), N
/// rank-0 init values of the inputs' element types, distinct dimensions in range, and a body
/// (E0..EN-1, E0..EN-1) -> (E0..EN-1) of rank-0 values, each input promotable to its Ei.
/// Result i has element type Ei and the input dims without `dimensions`.
inline StatusOr<std::vector<Shape>> infer_reduce(std::span<const Shape> inputs,
                                                 std::span<const Shape> init_values,
                                                 const Signature& body, const ReduceAttrs& attrs) {
  constexpr OpCode op = OpCode::kReduce;
  const std::size_t n = inputs.size();
  if (n == 0) return detail::op_error(op, "needs at least one input");
  if (init_values.size() != n)
    return detail::op_error(op, "got ", n, " inputs but ", init_values.size(), " init values");
  for (std::size_t i = 1; i < n; ++i)
    if (!std::ranges::equal(inputs[i].dims(), inputs[0].dims()))
      return detail::op_error(op, "operand ", i, " (input ", i, ") has shape ", inputs[i],
                              " but input 0 has shape ", inputs[0], "; inputs must have one dims");
  for (std::size_t i = 0; i < n; ++i)
    if (!init_values[i].is_scalar() || init_values[i].dtype() != inputs[i].dtype())
      return detail::op_error(op, "operand ", n + i, " (init value ", i, ") has shape ",
                              init_values[i], " but must be a rank-0 ",
                              dtype_name(inputs[i].dtype()), " like input ", i);
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_dimension_list(op, "dimensions", attrs.dimensions, inputs[0].rank(), "inputs"));
  if (body.parameters.size() != 2 * n)
    return detail::op_error(op, "body takes ", body.parameters.size(), " parameters, but ", n,
                            " input(s) need ", 2 * n, " (accumulators then elements)");
  if (body.results.size() != n)
    return detail::op_error(op, "body returns ", body.results.size(), " values, but ", n,
                            " input(s) need ", n);
  for (std::size_t i = 0; i < 2 * n; ++i)
    if (!body.parameters[i].is_scalar())
      return detail::op_error(op, "body parameter ", i, " has shape ", body.parameters[i],
                              " but body parameters must be rank 0");
  std::vector<Shape> results;
  for (std::size_t i = 0; i < n; ++i) {
    const Shape& acc = body.parameters[i];
    const Shape& elem = body.parameters[n + i];
    const Shape& out = body.results[i];
    if (elem.dtype() != acc.dtype())
      return detail::op_error(op, "body parameter ", n + i, " has type ", elem,
                              " but body parameter ", i, " has ", acc, " (both belong to input ", i,
                              ")");
    if (!out.is_scalar() || out.dtype() != acc.dtype())
      return detail::op_error(op, "body result ", i, " has type ", out, " but body parameter ", i,
                              " has ", acc);
    if (!is_promotable(inputs[i].dtype(), acc.dtype()))
      return detail::op_error(op, "input ", i, " of element type ", dtype_name(inputs[i].dtype()),
                              " cannot be promoted to the body's ", dtype_name(acc.dtype()));
    std::vector<std::int64_t> dims;
    for (std::int64_t d = 0; d < inputs[i].rank(); ++d)
      if (std::ranges::find(attrs.dimensions, d) == attrs.dimensions.end())
        dims.push_back(inputs[i].dim(d));
    results.emplace_back(acc.dtype(), std::move(dims));
  }
  return results;
}

/// dot_general: operands of one element type; batching and contracting dimension lists of
/// equal lengths on both sides, distinct and in range per side, with matching sizes. The
/// result is batch dims + lhs free dims + rhs free dims, of the operands' element type.
inline StatusOr<Shape> infer_dot_general(const Shape& lhs, const Shape& rhs,
                                         const DotDimensionNumbers& dn) {
  constexpr OpCode op = OpCode::kDotGeneral;
  if (lhs.dtype() != rhs.dtype())
    return detail::op_error(op, "operand 1 (rhs) has element type ", dtype_name(rhs.dtype()),
                            " but operand 0 (lhs) has ", dtype_name(lhs.dtype()));
  if (dn.lhs_batching_dimensions.size() != dn.rhs_batching_dimensions.size())
    return detail::op_error(
        op, "lhs_batching_dimensions ", detail::dims_str(dn.lhs_batching_dimensions),
        " and rhs_batching_dimensions ", detail::dims_str(dn.rhs_batching_dimensions),
        " have different lengths");
  if (dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size())
    return detail::op_error(
        op, "lhs_contracting_dimensions ", detail::dims_str(dn.lhs_contracting_dimensions),
        " and rhs_contracting_dimensions ", detail::dims_str(dn.rhs_contracting_dimensions),
        " have different lengths");
  auto check_side = [&](const Shape& s, const std::vector<std::int64_t>& batch,
                        const std::vector<std::int64_t>& contract, const char* side) -> Status {
    std::vector<bool> used(static_cast<std::size_t>(s.rank()), false);
    const std::pair<const char*, const std::vector<std::int64_t>*> lists[2] = {
        {"batching", &batch}, {"contracting", &contract}};
    for (const auto& [kind, list] : lists)
      for (std::size_t i = 0; i < list->size(); ++i) {
        const std::int64_t d = (*list)[i];
        if (d < 0 || d >= s.rank())
          return detail::op_error(op, side, "_", kind, "_dimensions[", i, "] = ", d,
                                  " is out of range for ", side, " ", s, " of rank ", s.rank());
        if (used[static_cast<std::size_t>(d)])
          return detail::op_error(op, side, " dimension ", d,
                                  " appears more than once in the batching and contracting "
                                  "dimensions");
        used[static_cast<std::size_t>(d)] = true;
      }
    return ok_status();
  };
  PJRT_LITE_RETURN_IF_ERROR(
      check_side(lhs, dn.lhs_batching_dimensions, dn.lhs_contracting_dimensions, "lhs"));
  PJRT_LITE_RETURN_IF_ERROR(
      check_side(rhs, dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions, "rhs"));
  for (std::size_t i = 0; i < dn.lhs_batching_dimensions.size(); ++i) {
    const std::int64_t l = lhs.dim(dn.lhs_batching_dimensions[i]);
    const std::int64_t r = rhs.dim(dn.rhs_batching_dimensions[i]);
    if (l != r)
      return detail::op_error(op, "batching dimension pair ", i, ": lhs dimension ",
                              dn.lhs_batching_dimensions[i], " has size ", l, " but rhs dimension ",
                              dn.rhs_batching_dimensions[i], " has size ", r, " (lhs ", lhs,
                              ", rhs ", rhs, ")");
  }
  for (std::size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i) {
    const std::int64_t l = lhs.dim(dn.lhs_contracting_dimensions[i]);
    const std::int64_t r = rhs.dim(dn.rhs_contracting_dimensions[i]);
    if (l != r)
      return detail::op_error(op, "contracting dimension pair ", i, ": lhs dimension ",
                              dn.lhs_contracting_dimensions[i], " has size ", l,
                              " but rhs dimension ", dn.rhs_contracting_dimensions[i], " has size ",
                              r, " (lhs ", lhs, ", rhs ", rhs, ")");
  }
  std::vector<std::int64_t> dims;
  for (std::int64_t d : dn.lhs_batching_dimensions) dims.push_back(lhs.dim(d));
  auto append_free = [&](const Shape& s, const std::vector<std::int64_t>& batch,
                         const std::vector<std::int64_t>& contract) {
    for (std::int64_t d = 0; d < s.rank(); ++d)
      if (std::ranges::find(batch, d) == batch.end() &&
          std::ranges::find(contract, d) == contract.end())
        dims.push_back(s.dim(d));
  };
  append_free(lhs, dn.lhs_batching_dimensions, dn.lhs_contracting_dimensions);
  append_free(rhs, dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions);
  return detail::make_result(op, lhs.dtype(), dims);
}

namespace detail {
inline Status check_sorted(OpCode op, std::string_view what, std::span<const std::int64_t> dims) {
  for (std::size_t i = 1; i < dims.size(); ++i)
    if (dims[i] <= dims[i - 1])
      return op_error(op, what, " ", dims_str(dims), " is not sorted (ascending)");
  return ok_status();
}
}  // namespace detail

/// The axes of scatter's updates (or gather's result) that are not window dims: the scatter
/// (batch) axes, in ascending order.
inline std::vector<std::int64_t> scatter_batch_axes(std::int64_t rank,
                                                    std::span<const std::int64_t> window_dims) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 0; d < rank; ++d)
    if (std::ranges::find(window_dims, d) == window_dims.end()) out.push_back(d);
  return out;
}

/// scatter(input, scatter_indices, updates) with one input, as the spec's constraints C1-C25
/// have it: integer indices; update_window_dims sorted, distinct, in range of the updates;
/// inserted_window_dims and input_batching_dims sorted, together distinct and in range of
/// the input, their sizes adding up with update_window_dims' to the input's rank; batching
/// dims pairing equal sizes; scatter_dims_to_operand_dims as long as the index vector,
/// distinct from the batching dims; 0 <= index_vector_dim <= rank(indices); updates of the
/// input's element type whose dims are the indices' (less index_vector_dim) at the scatter
/// axes and at most the input's at the window axes; a body (E, E) -> E of rank-0 values with
/// the input promotable to E. The result has the input's dims and element type E.
inline StatusOr<Shape> infer_scatter(const Shape& input, const Shape& indices, const Shape& updates,
                                     const Signature& body, const ScatterAttrs& a) {
  constexpr OpCode op = OpCode::kScatter;
  using detail::check_sorted;
  using detail::dims_str;
  using detail::op_error;
  PJRT_LITE_RETURN_IF_ERROR(detail::check_integer_indices(op, indices, "scatter_indices"));
  if (updates.dtype() != input.dtype())
    return op_error(op, "operand 2 (updates) has element type ", dtype_name(updates.dtype()),
                    " but the input has ", dtype_name(input.dtype()));
  const std::int64_t rank = input.rank();
  const auto window_rank = static_cast<std::int64_t>(a.update_window_dims.size());
  if (window_rank +
          static_cast<std::int64_t>(a.inserted_window_dims.size() + a.input_batching_dims.size()) !=
      rank)
    return op_error(op, "update_window_dims ", dims_str(a.update_window_dims),
                    ", inserted_window_dims ", dims_str(a.inserted_window_dims),
                    " and input_batching_dims ", dims_str(a.input_batching_dims),
                    " must together have as many entries as the input's rank, ", rank);
  PJRT_LITE_RETURN_IF_ERROR(check_sorted(op, "update_window_dims", a.update_window_dims));
  PJRT_LITE_RETURN_IF_ERROR(detail::check_dimension_list(op, "update_window_dims",
                                                         a.update_window_dims, updates.rank(),
                                                         "updates"));
  PJRT_LITE_RETURN_IF_ERROR(check_sorted(op, "inserted_window_dims", a.inserted_window_dims));
  PJRT_LITE_RETURN_IF_ERROR(check_sorted(op, "input_batching_dims", a.input_batching_dims));
  std::vector<std::int64_t> not_window = a.inserted_window_dims;
  not_window.insert(not_window.end(), a.input_batching_dims.begin(), a.input_batching_dims.end());
  PJRT_LITE_RETURN_IF_ERROR(detail::check_dimension_list(
      op, "inserted_window_dims and input_batching_dims", not_window, rank, "the input"));
  PJRT_LITE_RETURN_IF_ERROR(detail::check_indexing(
      op, {input, "input", a.input_batching_dims},
      {indices, "scatter_indices", a.scatter_indices_batching_dims}, a.index_vector_dim,
      "scatter_dims_to_operand_dims", a.scatter_dims_to_operand_dims));
  // The updates' dims: the indices' (without index_vector_dim) at the scatter axes, the
  // window sizes at update_window_dims.
  std::vector<std::int64_t> scatter_sizes;
  for (std::int64_t d = 0; d < indices.rank(); ++d)
    if (d != a.index_vector_dim) scatter_sizes.push_back(indices.dim(d));
  if (updates.rank() != window_rank + static_cast<std::int64_t>(scatter_sizes.size()))
    return op_error(op, "operand 2 (updates) ", updates, " has rank ", updates.rank(), " but ",
                    window_rank, " window dims and ", scatter_sizes.size(),
                    " scatter dims of scatter_indices ", indices, " need ",
                    window_rank + static_cast<std::int64_t>(scatter_sizes.size()));
  const std::vector<std::int64_t> batch_axes =
      scatter_batch_axes(updates.rank(), a.update_window_dims);
  for (std::size_t i = 0; i < batch_axes.size(); ++i)
    if (updates.dim(batch_axes[i]) != scatter_sizes[i])
      return op_error(op, "operand 2 (updates) ", updates, " has size ", updates.dim(batch_axes[i]),
                      " in dimension ", batch_axes[i], " but scatter_indices ", indices, " give ",
                      scatter_sizes[i]);
  std::size_t w = 0;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (std::ranges::find(not_window, d) != not_window.end()) continue;
    const std::int64_t axis = a.update_window_dims[w++];
    if (updates.dim(axis) > input.dim(d))
      return op_error(op, "operand 2 (updates) ", updates, " has window size ", updates.dim(axis),
                      " in dimension ", axis, ", larger than the input's ", input.dim(d),
                      " in dimension ", d);
  }
  if (body.parameters.size() != 2 || body.results.size() != 1)
    return op_error(op, "body must take 2 parameters and return 1 value, but takes ",
                    body.parameters.size(), " and returns ", body.results.size());
  const Shape& e = body.parameters[0];
  for (std::size_t i = 0; i < 2; ++i)
    if (!body.parameters[i].is_scalar() || body.parameters[i].dtype() != e.dtype())
      return op_error(op, "body parameter ", i, " has shape ", body.parameters[i],
                      " but both must be rank 0 of one element type");
  if (!body.results[0].is_scalar() || body.results[0].dtype() != e.dtype())
    return op_error(op, "body result has type ", body.results[0], " but its parameters have ", e);
  if (!is_promotable(input.dtype(), e.dtype()))
    return op_error(op, "the input's element type ", dtype_name(input.dtype()),
                    " cannot be promoted to the body's ", dtype_name(e.dtype()));
  return Shape(e.dtype(), std::vector<std::int64_t>(input.dims().begin(), input.dims().end()));
}

/// gather(operand, start_indices), as the spec's constraints C1-C23 have it: integer indices;
/// offset_dims sorted and distinct; collapsed_slice_dims and operand_batching_dims sorted,
/// together distinct and in range, with slice size at most 1; their sizes and offset_dims'
/// adding up to the operand's rank; batching dims pairing equal sizes; start_index_map as
/// long as the index vector, distinct from the batching dims and in range; one slice size per
/// operand dimension, 0 <= size <= the dimension. The result has the indices' dims (less
/// index_vector_dim) at its batch axes and the uncollapsed slice sizes at offset_dims.
inline StatusOr<Shape> infer_gather(const Shape& operand, const Shape& indices,
                                    const GatherAttrs& a) {
  constexpr OpCode op = OpCode::kGather;
  using detail::check_sorted;
  using detail::dims_str;
  using detail::op_error;
  PJRT_LITE_RETURN_IF_ERROR(detail::check_integer_indices(op, indices, "start_indices"));
  const std::int64_t rank = operand.rank();
  if (static_cast<std::int64_t>(a.offset_dims.size() + a.collapsed_slice_dims.size() +
                                a.operand_batching_dims.size()) != rank)
    return op_error(op, "offset_dims ", dims_str(a.offset_dims), ", collapsed_slice_dims ",
                    dims_str(a.collapsed_slice_dims), " and operand_batching_dims ",
                    dims_str(a.operand_batching_dims),
                    " must together have as many entries as the operand's rank, ", rank);
  if (static_cast<std::int64_t>(a.slice_sizes.size()) != rank)
    return op_error(op, "slice_sizes ", dims_str(a.slice_sizes), " has ", a.slice_sizes.size(),
                    " entries for operand ", operand, " of rank ", rank);
  for (std::int64_t d = 0; d < rank; ++d)
    if (a.slice_sizes[static_cast<std::size_t>(d)] < 0 ||
        a.slice_sizes[static_cast<std::size_t>(d)] > operand.dim(d))
      return op_error(op, "slice_sizes[", d, "] = ", a.slice_sizes[static_cast<std::size_t>(d)],
                      " is out of bounds for size ", operand.dim(d), " of operand ", operand);
  PJRT_LITE_RETURN_IF_ERROR(check_sorted(op, "offset_dims", a.offset_dims));
  PJRT_LITE_RETURN_IF_ERROR(check_sorted(op, "collapsed_slice_dims", a.collapsed_slice_dims));
  PJRT_LITE_RETURN_IF_ERROR(check_sorted(op, "operand_batching_dims", a.operand_batching_dims));
  std::vector<std::int64_t> collapsed = a.collapsed_slice_dims;
  collapsed.insert(collapsed.end(), a.operand_batching_dims.begin(), a.operand_batching_dims.end());
  PJRT_LITE_RETURN_IF_ERROR(detail::check_dimension_list(
      op, "collapsed_slice_dims and operand_batching_dims", collapsed, rank, "the operand"));
  for (std::int64_t d : collapsed)
    if (a.slice_sizes[static_cast<std::size_t>(d)] > 1)
      return op_error(op, "slice_sizes[", d, "] = ", a.slice_sizes[static_cast<std::size_t>(d)],
                      " but dimension ", d, " is collapsed or batching, so its size must be <= 1");
  PJRT_LITE_RETURN_IF_ERROR(detail::check_indexing(
      op, {operand, "operand", a.operand_batching_dims},
      {indices, "start_indices", a.start_indices_batching_dims}, a.index_vector_dim,
      "start_index_map", a.start_index_map));
  std::vector<std::int64_t> batch_sizes, offset_sizes;
  for (std::int64_t d = 0; d < indices.rank(); ++d)
    if (d != a.index_vector_dim) batch_sizes.push_back(indices.dim(d));
  for (std::int64_t d = 0; d < rank; ++d)
    if (std::ranges::find(collapsed, d) == collapsed.end())
      offset_sizes.push_back(a.slice_sizes[static_cast<std::size_t>(d)]);
  const auto result_rank = static_cast<std::int64_t>(batch_sizes.size() + offset_sizes.size());
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_dimension_list(op, "offset_dims", a.offset_dims, result_rank, "the result"));
  std::vector<std::int64_t> dims(static_cast<std::size_t>(result_rank));
  std::size_t b = 0, o = 0;
  for (std::int64_t d = 0; d < result_rank; ++d)
    dims[static_cast<std::size_t>(d)] = std::ranges::find(a.offset_dims, d) != a.offset_dims.end()
                                            ? offset_sizes[o++]
                                            : batch_sizes[b++];
  return detail::make_result(op, operand.dtype(), dims);
}

namespace detail {
/// Checks a window's attributes against an input of `rank`: every list has one entry per
/// dimension, window sizes, strides and dilations are positive, and `dilations` may be false
/// (select_and_scatter) only when both dilation lists are all 1.
inline Status check_window(OpCode op, const WindowAttrs& a, std::int64_t rank, bool dilations) {
  const NamedList lists[] = {
      {"window_dimensions", &a.window_dimensions}, {"window_strides", &a.window_strides},
      {"base_dilations", &a.base_dilations},       {"window_dilations", &a.window_dilations},
      {"padding_low", &a.padding_low},             {"padding_high", &a.padding_high}};
  for (const auto& [what, list] : lists) {
    if (static_cast<std::int64_t>(list->size()) != rank)
      return op_error(op, what, " ", dims_str(*list), " has ", list->size(),
                      " entries but the input has rank ", rank);
    if (what.starts_with("padding")) continue;
    for (std::size_t d = 0; d < list->size(); ++d) {
      if ((*list)[d] <= 0)
        return op_error(op, what, "[", d, "] = ", (*list)[d], " but must be positive");
      if (!dilations && what.ends_with("dilations") && (*list)[d] != 1)
        return op_error(op, what, "[", d, "] = ", (*list)[d], " but ", op_name(op),
                        " takes no dilations");
    }
  }
  return ok_status();
}

/// The number of windows along each dimension of `input` (the spec's num_windows), or an
/// error when a size overflows.
inline StatusOr<std::vector<std::int64_t>> window_counts(OpCode op,
                                                         std::span<const std::int64_t> input,
                                                         const WindowAttrs& a) {
  std::vector<std::int64_t> counts;
  for (std::size_t d = 0; d < input.size(); ++d) {
    std::int64_t dilated = 0, padded = 0, window = 0, high_end = 0;
    // Backends also compute dilated + padding_high on its own: it must fit as well.
    const bool overflow =
        (input[d] != 0 &&
         (__builtin_mul_overflow(input[d] - 1, a.base_dilations[d], &dilated) ||
          __builtin_add_overflow(dilated, 1, &dilated))) ||
        __builtin_add_overflow(a.padding_low[d], dilated, &padded) ||
        __builtin_add_overflow(padded, a.padding_high[d], &padded) ||
        __builtin_add_overflow(dilated, a.padding_high[d], &high_end) ||
        __builtin_mul_overflow(a.window_dimensions[d] - 1, a.window_dilations[d], &window) ||
        __builtin_add_overflow(window, 1, &window);
    if (overflow)
      return op_error(op, "the padded input or dilated window overflows in dimension ", d);
    counts.push_back(padded <= 0 || window > padded ? 0
                                                    : (padded - window) / a.window_strides[d] + 1);
  }
  return counts;
}
}  // namespace detail

/// reduce_window(inputs..., init_values...): inputs and init values as for reduce, a window
/// (see WindowAttrs) with one entry per input dimension in each list, and a body (E0..EN-1,
/// E0..EN-1) -> (E0..EN-1). Result i has element type Ei and one element per window.
inline StatusOr<std::vector<Shape>> infer_reduce_window(std::span<const Shape> inputs,
                                                        std::span<const Shape> init_values,
                                                        const Signature& body,
                                                        const WindowAttrs& a) {
  constexpr OpCode op = OpCode::kReduceWindow;
  using detail::op_error;
  const std::size_t n = inputs.size();
  if (n == 0) return op_error(op, "needs at least one input");
  if (init_values.size() != n)
    return op_error(op, "got ", n, " inputs but ", init_values.size(), " init values");
  for (std::size_t i = 1; i < n; ++i)
    if (!std::ranges::equal(inputs[i].dims(), inputs[0].dims()))
      return op_error(op, "operand ", i, " (input ", i, ") has shape ", inputs[i],
                      " but input 0 has shape ", inputs[0], "; inputs must have one dims");
  for (std::size_t i = 0; i < n; ++i)
    if (!init_values[i].is_scalar() || init_values[i].dtype() != inputs[i].dtype())
      return op_error(op, "operand ", n + i, " (init value ", i, ") has shape ", init_values[i],
                      " but must be a rank-0 ", dtype_name(inputs[i].dtype()), " like input ", i);
  PJRT_LITE_RETURN_IF_ERROR(detail::check_window(op, a, inputs[0].rank(), true));
  if (body.parameters.size() != 2 * n)
    return op_error(op, "body takes ", body.parameters.size(), " parameters, but ", n,
                    " input(s) need ", 2 * n, " (accumulators then elements)");
  if (body.results.size() != n)
    return op_error(op, "body returns ", body.results.size(), " values, but ", n,
                    " input(s) need ", n);
  StatusOr<std::vector<std::int64_t>> dims = detail::window_counts(op, inputs[0].dims(), a);
  if (!dims.ok()) return dims.status();
  std::vector<Shape> results;
  for (std::size_t i = 0; i < n; ++i) {
    const Shape& acc = body.parameters[i];
    const Shape& elem = body.parameters[n + i];
    const Shape& out = body.results[i];
    if (!acc.is_scalar() || !elem.is_scalar() || elem.dtype() != acc.dtype())
      return op_error(op, "body parameters ", i, " and ", n + i, " have types ", acc, " and ",
                      elem, " but must be one rank-0 type (both belong to input ", i, ")");
    if (!out.is_scalar() || out.dtype() != acc.dtype())
      return op_error(op, "body result ", i, " has type ", out, " but body parameter ", i,
                      " has ", acc);
    if (!is_promotable(inputs[i].dtype(), acc.dtype()))
      return op_error(op, "input ", i, " of element type ", dtype_name(inputs[i].dtype()),
                      " cannot be promoted to the body's ", dtype_name(acc.dtype()));
    StatusOr<Shape> result = detail::make_result(op, acc.dtype(), *dims);
    if (!result.ok()) return result.status();
    results.push_back(*std::move(result));
  }
  return results;
}

/// select_and_scatter(operand, source, init_value): a window without dilations over the
/// operand, a source of the operand's element type with one element per window, a rank-0
/// init value of that type, a select body (E, E) -> i1 and a scatter body (E, E) -> E with the
/// operand promotable to E. The result has the operand's dims and element type E.
inline StatusOr<Shape> infer_select_and_scatter(const Shape& operand, const Shape& source,
                                                const Shape& init_value, const Signature& select,
                                                const Signature& scatter, const WindowAttrs& a) {
  constexpr OpCode op = OpCode::kSelectAndScatter;
  using detail::op_error;
  if (source.dtype() != operand.dtype())
    return op_error(op, "operand 1 (source) has element type ", dtype_name(source.dtype()),
                    " but operand 0 has ", dtype_name(operand.dtype()));
  if (!init_value.is_scalar() || init_value.dtype() != operand.dtype())
    return op_error(op, "operand 2 (init value) has shape ", init_value, " but must be a rank-0 ",
                    dtype_name(operand.dtype()));
  PJRT_LITE_RETURN_IF_ERROR(detail::check_window(op, a, operand.rank(), false));
  StatusOr<std::vector<std::int64_t>> counts = detail::window_counts(op, operand.dims(), a);
  if (!counts.ok()) return counts.status();
  if (!std::ranges::equal(source.dims(), *counts))
    return op_error(op, "operand 1 (source) has shape ", source, " but the windows number ",
                    detail::dims_str(*counts));
  const Shape pred(DType::kPred, {});
  if (select.parameters.size() != 2 || select.results.size() != 1 ||
      select.parameters[0] != Shape(operand.dtype(), {}) ||
      select.parameters[1] != Shape(operand.dtype(), {}) || select.results[0] != pred)
    return op_error(op, "select body must have type (tensor<", dtype_name(operand.dtype()),
                    ">, tensor<", dtype_name(operand.dtype()), ">) -> tensor<i1>");
  if (scatter.parameters.size() != 2 || scatter.results.size() != 1)
    return op_error(op, "scatter body takes ", scatter.parameters.size(), " parameters and returns ",
                    scatter.results.size(), " values, but must be (E, E) -> E");
  const Shape& e = scatter.parameters[0];
  if (!e.is_scalar() || scatter.parameters[1] != e || scatter.results[0] != e)
    return op_error(op, "scatter body must have type (E, E) -> E of one rank-0 type E");
  if (!is_promotable(operand.dtype(), e.dtype()))
    return op_error(op, "operand of element type ", dtype_name(operand.dtype()),
                    " cannot be promoted to the scatter body's ", dtype_name(e.dtype()));
  return detail::make_result(op, e.dtype(), operand.dims());
}

/// convolution(lhs, rhs), as the spec's constraints C1-C27 have it: operands of one element
/// type and one rank N >= 2; N - 2 spatial dimensions in each dimension-number list and each
/// window list; the lhs's, the kernel's and the result's dimension numbers each distinct and
/// in range; positive strides and dilations, window_reversal 0 or 1; positive group counts,
/// at most one of them above 1, dividing the lhs's batch (batch_group_count) or feature
/// (feature_group_count) size and the kernel's output feature size; the kernel's input
/// feature size the lhs's feature size / feature_group_count. The result has the lhs's batch
/// size / batch_group_count, the kernel's output feature size and one element per window
/// along each spatial dimension.
inline StatusOr<Shape> infer_convolution(const Shape& lhs, const Shape& rhs,
                                         const ConvolutionAttrs& a) {
  constexpr OpCode op = OpCode::kConvolution;
  using detail::dims_str;
  using detail::op_error;
  if (lhs.dtype() != rhs.dtype())
    return op_error(op, "operand 1 (rhs) has element type ", dtype_name(rhs.dtype()),
                    " but operand 0 (lhs) has ", dtype_name(lhs.dtype()));
  if (lhs.rank() != rhs.rank())
    return op_error(op, "lhs ", lhs, " has rank ", lhs.rank(), " but rhs ", rhs, " has rank ",
                    rhs.rank());
  const std::int64_t n = lhs.rank();
  if (n < 2)
    return op_error(op, "operands have rank ", n, " but need a batch and a feature dimension");
  const auto spatial = static_cast<std::size_t>(n - 2);
  const detail::NamedList lists[] = {
      {"input_spatial_dimensions", &a.input_spatial_dimensions},
      {"kernel_spatial_dimensions", &a.kernel_spatial_dimensions},
      {"output_spatial_dimensions", &a.output_spatial_dimensions},
      {"window_strides", &a.window_strides},
      {"padding_low", &a.padding_low},
      {"padding_high", &a.padding_high},
      {"lhs_dilation", &a.lhs_dilation},
      {"rhs_dilation", &a.rhs_dilation},
      {"window_reversal", &a.window_reversal}};
  for (const auto& [what, list] : lists) {
    if (list->size() != spatial)
      return op_error(op, what, " ", dims_str(*list), " has ", list->size(),
                      " entries but operands of rank ", n, " have ", spatial,
                      " spatial dimensions");
    if (what.starts_with("padding") || what.ends_with("dimensions")) continue;
    for (std::size_t d = 0; d < spatial; ++d) {
      const std::int64_t v = (*list)[d];
      if (what == "window_reversal" ? (v != 0 && v != 1) : v <= 0)
        return op_error(op, what, "[", d, "] = ", v, " but must be ",
                        what == "window_reversal" ? "0 or 1" : "positive");
    }
  }
  auto dimension_list = [&](std::string_view what, std::int64_t first,
                            const std::vector<std::int64_t>& middle, std::int64_t last,
                            std::string_view of) {
    std::vector<std::int64_t> all{first};
    all.insert(all.end(), middle.begin(), middle.end());
    all.push_back(last);
    return detail::check_dimension_list(op, what, all, n, of);
  };
  PJRT_LITE_RETURN_IF_ERROR(dimension_list("input dimensions [batch, spatial..., feature]",
                                           a.input_batch_dimension, a.input_spatial_dimensions,
                                           a.input_feature_dimension, "the lhs"));
  PJRT_LITE_RETURN_IF_ERROR(
      dimension_list("kernel dimensions [input feature, spatial..., output feature]",
                     a.kernel_input_feature_dimension, a.kernel_spatial_dimensions,
                     a.kernel_output_feature_dimension, "the rhs"));
  PJRT_LITE_RETURN_IF_ERROR(dimension_list("output dimensions [batch, spatial..., feature]",
                                           a.output_batch_dimension, a.output_spatial_dimensions,
                                           a.output_feature_dimension, "the result"));
  if (a.feature_group_count <= 0)
    return op_error(op, "feature_group_count = ", a.feature_group_count, " but must be positive");
  if (a.batch_group_count <= 0)
    return op_error(op, "batch_group_count = ", a.batch_group_count, " but must be positive");
  if (a.feature_group_count > 1 && a.batch_group_count > 1)
    return op_error(op, "feature_group_count = ", a.feature_group_count,
                    " and batch_group_count = ", a.batch_group_count,
                    " but at most one of them may exceed 1");
  const std::int64_t batch = lhs.dim(a.input_batch_dimension);
  const std::int64_t features = lhs.dim(a.input_feature_dimension);
  const std::int64_t kernel_in = rhs.dim(a.kernel_input_feature_dimension);
  const std::int64_t kernel_out = rhs.dim(a.kernel_output_feature_dimension);
  if (batch % a.batch_group_count != 0)
    return op_error(op, "batch_group_count = ", a.batch_group_count,
                    " does not divide the lhs batch size ", batch, " (lhs ", lhs, ")");
  if (features % a.feature_group_count != 0)
    return op_error(op, "feature_group_count = ", a.feature_group_count,
                    " does not divide the lhs feature size ", features, " (lhs ", lhs, ")");
  if (kernel_in != features / a.feature_group_count)
    return op_error(op, "the rhs input feature size ", kernel_in, " (dimension ",
                    a.kernel_input_feature_dimension, " of ", rhs,
                    ") does not match the lhs feature size ", features, " / feature_group_count ",
                    a.feature_group_count);
  if (kernel_out % a.batch_group_count != 0)
    return op_error(op, "batch_group_count = ", a.batch_group_count,
                    " does not divide the rhs output feature size ", kernel_out, " (rhs ", rhs,
                    ")");
  if (kernel_out % a.feature_group_count != 0)
    return op_error(op, "feature_group_count = ", a.feature_group_count,
                    " does not divide the rhs output feature size ", kernel_out, " (rhs ", rhs,
                    ")");
  std::vector<std::int64_t> dims(static_cast<std::size_t>(n));
  dims[static_cast<std::size_t>(a.output_batch_dimension)] = batch / a.batch_group_count;
  dims[static_cast<std::size_t>(a.output_feature_dimension)] = kernel_out;
  for (std::size_t k = 0; k < spatial; ++k) {
    const std::int64_t in = lhs.dim(a.input_spatial_dimensions[k]);
    const std::int64_t window = rhs.dim(a.kernel_spatial_dimensions[k]);
    std::int64_t dilated = 0, padded = 0, dilated_window = 0, high_end = 0;
    // Backends also compute dilated + padding_high on its own: it must fit as well.
    const bool overflow =
        (in != 0 && (__builtin_mul_overflow(in - 1, a.lhs_dilation[k], &dilated) ||
                     __builtin_add_overflow(dilated, 1, &dilated))) ||
        __builtin_add_overflow(a.padding_low[k], dilated, &padded) ||
        __builtin_add_overflow(padded, a.padding_high[k], &padded) ||
        __builtin_add_overflow(dilated, a.padding_high[k], &high_end) ||
        (window != 0 && (__builtin_mul_overflow(window - 1, a.rhs_dilation[k], &dilated_window) ||
                         __builtin_add_overflow(dilated_window, 1, &dilated_window)));
    if (overflow)
      return op_error(op, "the padded lhs or dilated window overflows in spatial dimension ", k);
    const bool empty = padded <= 0 || dilated_window > padded;
    dims[static_cast<std::size_t>(a.output_spatial_dimensions[k])] =
        empty ? 0 : (padded - dilated_window) / a.window_strides[k] + 1;
  }
  return detail::make_result(op, lhs.dtype(), dims);
}

namespace detail {

/// "(f32[], s32[2])": a list of types, for the control-flow ops' messages.
inline std::string type_list(std::span<const Shape> shapes) {
  std::string out = "(";
  for (std::size_t i = 0; i < shapes.size(); ++i) out += str_cat(i ? ", " : "", shapes[i]);
  return out + ")";
}

/// True when `a` and `b` list the same types and dims, in order.
inline bool same_types(std::span<const Shape> a, std::span<const Shape> b) {
  return std::ranges::equal(a, b, [](const Shape& x, const Shape& y) {
    return x.same_type_and_dims(y);
  });
}

/// A region's parameters must be the values the op hands it: `what` names the region.
inline Status check_region_parameters(OpCode op, std::string_view what, const Signature& region,
                                      std::span<const Shape> values,
                                      std::string_view values_name) {
  if (!same_types(region.parameters, values))
    return op_error(op, what, " takes ", type_list(region.parameters), " but ", values_name,
                    " are ", type_list(values));
  return ok_status();
}

}  // namespace detail

/// fft(operand): 1 <= size(fft_length) <= 3 <= rank; FFT and IFFT take c64 or c128 and keep
/// the type, RFFT takes f32 or f64 and gives the complex type of the same precision, IRFFT
/// the reverse. The operand's trailing dimensions are fft_length, except that the last one is
/// fft_length.back() / 2 + 1 for IRFFT (0 when that length is 0); RFFT's result has that
/// last dimension.
inline StatusOr<Shape> infer_fft(const Shape& operand, const FftAttrs& attrs) {
  constexpr OpCode op = OpCode::kFft;
  const auto& len = attrs.fft_length;
  const auto type = attrs.fft_type;
  if (static_cast<std::size_t>(type) > static_cast<std::size_t>(FftType::kIrfft))
    return detail::op_error(op, "fft_type has invalid enum value ", static_cast<int>(type));
  if (len.empty() || len.size() > 3)
    return detail::op_error(op, "fft_length ", detail::dims_str(len), " has ", len.size(),
                            " entries; it takes 1 to 3");
  if (static_cast<std::int64_t>(len.size()) > operand.rank())
    return detail::op_error(op, "fft_length ", detail::dims_str(len), " has ", len.size(),
                            " entries but operand ", operand, " has rank ", operand.rank());
  for (std::size_t i = 0; i < len.size(); ++i)
    if (len[i] < 0)
      return detail::op_error(op, "fft_length[", i, "] = ", len[i], " is negative");
  const bool real_in = type == FftType::kRfft;
  const DType t = operand.dtype();
  if (real_in ? (t != DType::kF32 && t != DType::kF64) : !is_complex(t))
    return detail::op_error(op, "operand ", operand, " has element type ", dtype_name(t), ", but ",
                            fft_type_name(type), " takes ", real_in ? "f32 or f64" : "c64 or c128");
  const auto half = [](std::int64_t n) { return n == 0 ? 0 : n / 2 + 1; };
  std::vector<std::int64_t> dims(operand.dims().begin(), operand.dims().end());
  const std::size_t first = dims.size() - len.size();
  for (std::size_t i = 0; i < len.size(); ++i) {
    const bool last = i + 1 == len.size();
    const std::int64_t want = last && type == FftType::kIrfft ? half(len[i]) : len[i];
    if (dims[first + i] != want)
      return detail::op_error(op, "operand ", operand, " dimension ", first + i, " has size ",
                              dims[first + i], " but ", fft_type_name(type), " with fft_length ",
                              detail::dims_str(len), " needs ", want);
  }
  DType out = t;
  if (type == FftType::kRfft) {
    out = t == DType::kF32 ? DType::kC64 : DType::kC128;
    dims.back() = half(len.back());
  } else if (type == FftType::kIrfft) {
    out = complex_component_type(t);
    dims.back() = len.back();
  }
  return Shape(out, dims);
}

/// triangular_solve(a, b): a and b of one floating-point or complex type and one rank R >= 2,
/// the same leading R - 2 (batch) dimensions, a square in its last two, whose size is b's
/// second-to-last (left_side) or last dimension. The result has b's shape.
inline StatusOr<Shape> infer_triangular_solve(const Shape& a, const Shape& b,
                                              const TriangularSolveAttrs& attrs) {
  constexpr OpCode op = OpCode::kTriangularSolve;
  if (static_cast<std::size_t>(attrs.transpose_a) > static_cast<std::size_t>(Transpose::kAdjoint))
    return detail::op_error(op, "transpose_a has invalid enum value ",
                            static_cast<int>(attrs.transpose_a));
  if (!is_inexact(a.dtype()))
    return detail::op_error(op, "operand 0 (a) has element type ", dtype_name(a.dtype()),
                            ", but triangular_solve takes floating-point or complex types");
  if (a.dtype() != b.dtype())
    return detail::op_error(op, "operand 1 (b) has element type ", dtype_name(b.dtype()),
                            " but a has ", dtype_name(a.dtype()));
  if (a.rank() < 2) return detail::op_error(op, "a ", a, " has rank ", a.rank(), "; it needs 2 or more");
  if (b.rank() != a.rank())
    return detail::op_error(op, "b ", b, " has rank ", b.rank(), " but a ", a, " has rank ", a.rank());
  const std::int64_t r = a.rank();
  for (std::int64_t d = 0; d < r - 2; ++d)
    if (a.dim(d) != b.dim(d))
      return detail::op_error(op, "batch dimension ", d, " of b ", b, " is ", b.dim(d), " but a's is ",
                              a.dim(d));
  if (a.dim(r - 2) != a.dim(r - 1))
    return detail::op_error(op, "a ", a, " is not square in its last two dimensions");
  const std::int64_t solved = attrs.left_side ? r - 2 : r - 1;
  if (b.dim(solved) != a.dim(r - 1))
    return detail::op_error(op, "b ", b, " dimension ", solved, " is ", b.dim(solved), " but a ", a,
                            " is ", a.dim(r - 1), " square (left_side = ",
                            attrs.left_side ? "true" : "false", ")");
  return b.with_default_layout();
}

/// linalg: the operands and results of jaxlib's LAPACK kernel for the routine (docs/ops.md).
/// Matrices are the last two dimensions [..., m, n], the leading ones a batch that every
/// operand and result shares; info, pivots and the like are int32 with the batch dimensions in
/// front. The element type is f32, f64, c64 or c128, as LAPACK's s, d, c and z; singular
/// values and Hermitian eigenvalues are of its real type.
inline StatusOr<std::vector<Shape>> infer_linalg(std::span<const Shape> operands,
                                                 const LinalgAttrs& a) {
  constexpr OpCode op = OpCode::kLinalg;
  const std::string_view name = linalg_routine_name(a.routine);
  if (name == "INVALID")
    return detail::op_error(op, "routine has invalid enum value ", static_cast<int>(a.routine));
  const std::size_t want = a.routine == LinalgRoutine::kOrgqr || a.routine == LinalgRoutine::kTrsm
                               ? 2
                           : a.routine == LinalgRoutine::kGeqp3 ? 2
                           : a.routine == LinalgRoutine::kOrmqr ? 3
                           : a.routine == LinalgRoutine::kGtsv  ? 4
                                                                : 1;
  if (operands.size() != want)
    return detail::op_error(op, "(", name, ") takes ", want, " operand(s), got ", operands.size());
  const Shape& x = operands[0];
  const DType t = x.dtype();
  if (t != DType::kF32 && t != DType::kF64 && t != DType::kC64 && t != DType::kC128)
    return detail::op_error(op, "(", name, ") operand 0 has element type ", dtype_name(t),
                            "; LAPACK takes f32, f64, complex<f32> or complex<f64>");
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const Shape& s = operands[i];
    if (a.routine == LinalgRoutine::kGeqp3 && i == 1) {
      if (s.dtype() != DType::kS32)
        return detail::op_error(op, "(geqp3) jpvt has element type ", dtype_name(s.dtype()),
                                "; it takes s32");
      continue;
    }
    if (s.dtype() != t)
      return detail::op_error(op, "(", name, ") operands mix ", dtype_name(t), " and ",
                              dtype_name(s.dtype()));
  }
  if (a.routine == LinalgRoutine::kGtsv) {
    // dl, d, du [..., m] and b [..., m, n]; dl[0] and du[m - 1] are not read (jax's layout).
    const Shape& b = operands[3];
    for (std::size_t i = 0; i < 3; ++i)
      if (b.rank() < 2 || operands[i].rank() != b.rank() - 1 ||
          !std::equal(operands[i].dims().begin(), operands[i].dims().end(), b.dims().begin()))
        return detail::op_error(op, "(gtsv) takes dl, d, du [..., m] and b [..., m, n], got ",
                                operands[0], ", ", operands[1], ", ", operands[2], ", ", b);
    std::vector<std::int64_t> batch_dims(b.dims().begin(), b.dims().end() - 2);
    std::vector<Shape> out;
    for (const Shape& s : operands) out.push_back(s.with_default_layout());
    out.push_back(Shape(DType::kS32, batch_dims));
    return out;
  }
  if (x.rank() < 2)
    return detail::op_error(op, "(", name, ") operand 0 ", x, " has rank ", x.rank(),
                            "; it needs a matrix [..., m, n]");
  const std::int64_t r = x.rank();
  const std::int64_t m = x.dim(r - 2), n = x.dim(r - 1), k = std::min(m, n);
  const std::vector<std::int64_t> batch(x.dims().begin(), x.dims().end() - 2);
  auto batched = [&](DType dt, std::initializer_list<std::int64_t> tail) {
    std::vector<std::int64_t> d = batch;
    d.insert(d.end(), tail.begin(), tail.end());
    return Shape(dt, d);
  };
  const DType real = is_complex(t) ? complex_component_type(t) : t;
  const Shape matrix = x.with_default_layout();
  const Shape info = batched(DType::kS32, {});
  auto check_flag = [&](std::string_view flag, std::int64_t v, std::string_view allowed) -> Status {
    for (char c : allowed)
      if (v == c) return ok_status();
    return detail::op_error(op, "(", name, ") ", flag, " is ", v, "; it takes the characters ",
                            allowed, " (as ui8)");
  };
  auto square = [&]() -> Status {
    if (m != n) return detail::op_error(op, "(", name, ") operand 0 ", x, " is not square");
    return ok_status();
  };
  switch (a.routine) {
    case LinalgRoutine::kGetrf: return std::vector<Shape>{matrix, batched(DType::kS32, {k}), info};
    case LinalgRoutine::kPotrf:
      PJRT_LITE_RETURN_IF_ERROR(check_flag("uplo", a.uplo, "LU"));
      PJRT_LITE_RETURN_IF_ERROR(square());
      return std::vector<Shape>{matrix, info};
    case LinalgRoutine::kGeqrf: return std::vector<Shape>{matrix, batched(t, {k})};
    case LinalgRoutine::kOrgqr: {
      const Shape& tau = operands[1];
      if (tau.rank() != r - 1 || !std::equal(batch.begin(), batch.end(), tau.dims().begin()) ||
          tau.dim(r - 2) > n || n > m)
        return detail::op_error(op, "(", name, ") takes a [..., m, n] with m >= n and tau [..., k] "
                                "with k <= n and the same batch, got ", x, " and ", tau);
      return std::vector<Shape>{matrix};
    }
    case LinalgRoutine::kGesdd:
    case LinalgRoutine::kGesvd: {
      PJRT_LITE_RETURN_IF_ERROR(check_flag("mode", a.mode, "ASN"));
      const bool full = a.mode == 'A' || (a.mode == 'N' && a.full_matrices);
      return std::vector<Shape>{matrix, batched(real, {k}), batched(t, {m, full ? m : k}),
                                batched(t, {full ? n : k, n}), info};
    }
    case LinalgRoutine::kSyevd:
      PJRT_LITE_RETURN_IF_ERROR(check_flag("uplo", a.uplo, "LU"));
      PJRT_LITE_RETURN_IF_ERROR(check_flag("mode", a.mode, "VN"));
      PJRT_LITE_RETURN_IF_ERROR(square());
      return std::vector<Shape>{matrix, batched(real, {n}), info};
    case LinalgRoutine::kTrsm: {
      PJRT_LITE_RETURN_IF_ERROR(check_flag("side", a.side, "LR"));
      PJRT_LITE_RETURN_IF_ERROR(check_flag("uplo", a.uplo, "LU"));
      PJRT_LITE_RETURN_IF_ERROR(check_flag("trans_x", a.trans, "NTC"));
      PJRT_LITE_RETURN_IF_ERROR(check_flag("diag", a.diag, "NU"));
      PJRT_LITE_RETURN_IF_ERROR(square());
      const Shape& b = operands[1];
      if (b.rank() != r || !std::equal(batch.begin(), batch.end(), b.dims().begin()) ||
          b.dim(a.side == 'L' ? r - 2 : r - 1) != n)
        return detail::op_error(op, "(", name, ") b ", b, " does not fit a ", x, " (side ",
                                static_cast<char>(a.side), ")");
      return std::vector<Shape>{b.with_default_layout()};
    }
    case LinalgRoutine::kGehrd:
      PJRT_LITE_RETURN_IF_ERROR(square());
      if (a.low != 1 || a.high != n)
        return detail::op_error(op, "(gehrd) low = ", a.low, " and high = ", a.high,
                                ": only low = 1 and high = n (", n, ") are supported, as jax passes");
      return std::vector<Shape>{matrix, batched(t, {std::max<std::int64_t>(n - 1, 0)}), info};
    case LinalgRoutine::kSytrd:
      PJRT_LITE_RETURN_IF_ERROR(check_flag("uplo", a.uplo, "LU"));
      PJRT_LITE_RETURN_IF_ERROR(square());
      return std::vector<Shape>{matrix, batched(real, {n}),
                                batched(real, {std::max<std::int64_t>(n - 1, 0)}),
                                batched(t, {std::max<std::int64_t>(n - 1, 0)}), info};
    case LinalgRoutine::kOrmqr: {
      // a [..., q, k] (q = c's rows when left, else its columns), tau [..., k], c [..., m, n].
      const Shape& tau = operands[1];
      const Shape& c = operands[2];
      const std::int64_t q = c.rank() == r ? c.dim(a.left ? r - 2 : r - 1) : -1;
      if (tau.rank() != r - 1 || c.rank() != r ||
          !std::equal(batch.begin(), batch.end(), tau.dims().begin()) ||
          !std::equal(batch.begin(), batch.end(), c.dims().begin()) || m != q ||
          tau.dim(r - 2) > n || n > m)
        return detail::op_error(op, "(", name, ") takes a [..., q, k], tau [..., k] and c [..., m, n] "
                                "with q = ", a.left ? "m" : "n", " and k <= q, got ", x, ", ", tau,
                                " and ", c);
      return std::vector<Shape>{c.with_default_layout()};
    }
    case LinalgRoutine::kGeqp3: {
      const Shape& jpvt = operands[1];
      if (jpvt.rank() != r - 1 || !std::equal(batch.begin(), batch.end(), jpvt.dims().begin()) ||
          jpvt.dim(r - 2) != n)
        return detail::op_error(op, "(geqp3) jpvt ", jpvt, " must be [..., n] for x ", x);
      return std::vector<Shape>{matrix, jpvt.with_default_layout(), batched(t, {k})};
    }
    case LinalgRoutine::kGeev: {
      PJRT_LITE_RETURN_IF_ERROR(check_flag("compute_left", a.compute_left, "VN"));
      PJRT_LITE_RETURN_IF_ERROR(check_flag("compute_right", a.compute_right, "VN"));
      PJRT_LITE_RETURN_IF_ERROR(square());
      const DType ct = is_complex(t) ? t : (t == DType::kF32 ? DType::kC64 : DType::kC128);
      const Shape vectors = batched(ct, {n, n});
      if (is_complex(t)) return std::vector<Shape>{batched(t, {n}), vectors, vectors, info};
      return std::vector<Shape>{batched(t, {n}), batched(t, {n}), vectors, vectors, info};
    }
    case LinalgRoutine::kGees:
      PJRT_LITE_RETURN_IF_ERROR(check_flag("mode", a.mode, "VN"));
      PJRT_LITE_RETURN_IF_ERROR(check_flag("sort", a.sort, "N"));
      PJRT_LITE_RETURN_IF_ERROR(square());
      if (!is_complex(t))  // the real Schur form: T, Schur vectors, wr, wi, sdim, info
        return std::vector<Shape>{matrix, matrix, batched(t, {n}), batched(t, {n}), info, info};
      return std::vector<Shape>{matrix, matrix, batched(t, {n}), info, info};
    case LinalgRoutine::kGtsv: break;  // handled above
  }
  return detail::op_error(op, "(", name, ") has no shape rule");
}

/// rng_bit_generator(initial_state): a u64 state of rank 1 and the size the algorithm takes
/// (THREE_FRY: 2; PHILOX and DEFAULT, which is PHILOX here as in XLA: 2 or 3), and an output of
/// an integer or floating-point type. Results: the new state (the state's type) and the output.
inline StatusOr<std::vector<Shape>> infer_rng_bit_generator(const Shape& state,
                                                           const RngBitGeneratorAttrs& a) {
  constexpr OpCode op = OpCode::kRngBitGenerator;
  if (static_cast<std::size_t>(a.algorithm) > static_cast<std::size_t>(RngAlgorithm::kPhilox))
    return detail::op_error(op, "rng_algorithm has invalid enum value ",
                            static_cast<int>(a.algorithm));
  if (state.dtype() != DType::kU64 || state.rank() != 1)
    return detail::op_error(op, "initial_state ", state, " must be a 1-dimensional ui64 tensor");
  const bool philox = a.algorithm != RngAlgorithm::kThreeFry;
  if (state.dim(0) != 2 && !(philox && state.dim(0) == 3))
    return detail::op_error(op, "initial_state ", state, " has ", state.dim(0),
                            " elements, but ", rng_algorithm_name(a.algorithm), " takes ",
                            philox ? "2 or 3" : "2");
  PJRT_LITE_RETURN_IF_ERROR(detail::check_valid_shape(op, "output", a.output));
  PJRT_LITE_RETURN_IF_ERROR(detail::check_element_type(op, "output", a.output.dtype(),
                                                       TypeClass::kInteger | TypeClass::kFloat));
  return std::vector<Shape>{state.with_default_layout(), a.output};
}

/// while(operands...) with cond (T0..TN-1) -> pred[] and body (T0..TN-1) -> (T0..TN-1), Ti
/// the type of operand i; the results have the operands' types.
inline StatusOr<std::vector<Shape>> infer_while(std::span<const Shape> operands,
                                                const Signature& cond, const Signature& body) {
  constexpr OpCode op = OpCode::kWhile;
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_region_parameters(op, "cond", cond, operands, "the operands"));
  if (cond.results.size() != 1 || cond.results[0] != Shape(DType::kPred, {}))
    return detail::op_error(op, "cond must return one pred[] (tensor<i1>), but returns ",
                            detail::type_list(cond.results));
  PJRT_LITE_RETURN_IF_ERROR(
      detail::check_region_parameters(op, "body", body, operands, "the operands"));
  if (!detail::same_types(body.results, operands))
    return detail::op_error(op, "body returns ", detail::type_list(body.results),
                            " but must return the operands' types ",
                            detail::type_list(operands));
  std::vector<Shape> results;
  for (const Shape& s : operands) results.push_back(s.with_default_layout());
  return results;
}

/// case(index, operands...) and if(pred, operands...): the selector is a rank-0 s32 (case) or
/// pred (if); every branch takes the remaining operands' types and returns the types branch
/// 0 returns, which are the results. (StableHLO's branches take no arguments and use values
/// from outside; the IR's regions are closed, so those values are the operands.)
inline StatusOr<std::vector<Shape>> infer_case(OpCode op, const Shape& selector,
                                               std::span<const Shape> operands,
                                               std::span<const Signature> branches) {
  const DType want = op == OpCode::kIf ? DType::kPred : DType::kS32;
  if (selector != Shape(want, {}))
    return detail::op_error(op, "operand 0 (the ", op == OpCode::kIf ? "predicate" : "index",
                            ") has shape ", selector, " but must be a rank-0 ", dtype_name(want));
  if (branches.empty()) return detail::op_error(op, "needs at least one branch");
  for (std::size_t k = 0; k < branches.size(); ++k) {
    PJRT_LITE_RETURN_IF_ERROR(detail::check_region_parameters(
        op, str_cat("branch ", k), branches[k], operands, "operands 1.."));
    if (!detail::same_types(branches[k].results, branches[0].results))
      return detail::op_error(op, "branch ", k, " returns ",
                              detail::type_list(branches[k].results), " but branch 0 returns ",
                              detail::type_list(branches[0].results));
  }
  std::vector<Shape> results;
  for (const Shape& s : branches[0].results) results.push_back(s.with_default_layout());
  return results;
}

/// replica_id and partition_id: a u32 scalar, the process's position in the grid.
inline Shape infer_process_position() { return Shape(DType::kU32, {}); }

namespace detail {

/// The group lists of a collective: rows of `group_size` non-negative ids, unique across the
/// whole list (collective_permute: rows of two, sources unique and targets unique); all_reduce's
/// rows may end in -1 padding. num_partitions and has_dynamic_root where their ops and modes
/// take them.
inline Status check_collective_groups(OpCode op, const CollectiveAttrs& a) {
  const std::string_view what =
      op == OpCode::kCollectivePermute ? "source_target_pairs" : "replica_groups";
  if (a.group_size < 0) return op_error(op, what, " has rows of ", a.group_size, " ids");
  if (a.group_size == 0 && !a.groups.empty())
    return op_error(op, what, " lists ", a.groups.size(), " ids in rows of none");
  if (a.group_size > 0 && a.groups.size() % static_cast<std::size_t>(a.group_size) != 0)
    return op_error(op, what, " lists ", a.groups.size(), " ids, not whole rows of ",
                    a.group_size);
  const bool padded = op == OpCode::kAllReduce;
  for (std::size_t r = 0; r < a.group_count(); ++r) {
    bool padding = false;
    for (std::int64_t id : a.group(r)) {
      if (id == -1 && padded) {
        padding = true;
      } else if (id < 0) {
        return op_error(op, what, " holds the negative id ", id,
                        padded ? " (only -1 pads a row)" : "");
      } else if (padding) {
        return op_error(op, "replica_groups row ", r, " has the id ", id,
                        " after its -1 padding");
      }
    }
  }
  if (op == OpCode::kCollectivePermute) {
    if (a.group_size != 0 && a.group_size != 2)
      return op_error(op, "source_target_pairs has rows of ", a.group_size, ", not pairs");
    for (std::size_t i = 0; i < a.groups.size(); ++i)
      for (std::size_t j = i % 2; j < i; j += 2)
        if (a.groups[i] == a.groups[j])
          return op_error(op, "source_target_pairs names ", i % 2 ? "target " : "source ",
                          a.groups[i], " twice");
  } else {
    for (std::size_t i = 0; i < a.groups.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (a.groups[i] == a.groups[j] && a.groups[i] >= 0)
          return op_error(op, "replica_groups names ", a.groups[i], " twice");
  }
  const bool spans_partitions = (op == OpCode::kAllGather || op == OpCode::kReduceScatter) &&
                                a.channel_id > 0 && !a.use_global_device_ids;
  if (a.num_partitions < 1)
    return op_error(op, "num_partitions must be positive, not ", a.num_partitions);
  if (a.num_partitions != 1 && !spans_partitions)
    return op_error(op, "num_partitions is ", a.num_partitions,
                    ", but only all_gather and reduce_scatter over replicas and partitions "
                    "(channel_id > 0 without use_global_device_ids) take one");
  if (a.has_dynamic_root && op != OpCode::kCollectiveBroadcast)
    return op_error(op, "takes no has_dynamic_root");
  if (a.use_global_device_ids && a.channel_id <= 0)
    return op_error(op, "use_global_device_ids needs a channel_id above 0");
  if (a.use_global_device_ids && op != OpCode::kAllReduce && op != OpCode::kAllGather &&
      op != OpCode::kReduceScatter)
    return op_error(op, "takes no use_global_device_ids");
  return ok_status();
}

/// all_reduce's and reduce_scatter's reducer: (E[], E[]) -> E[] with E each operand's type.
inline Status check_collective_reducer(OpCode op, const Signature& body,
                                       std::span<const Shape> operands) {
  const bool scalar_pair = body.parameters.size() == 2 && body.results.size() == 1 &&
                           body.parameters[0].is_scalar() && body.parameters[1].is_scalar() &&
                           body.results[0].is_scalar() &&
                           body.parameters[0].dtype() == body.parameters[1].dtype() &&
                           body.results[0].dtype() == body.parameters[0].dtype();
  if (!scalar_pair)
    return op_error(op, "the computation must take two scalars of one type and return one, "
                        "but it is ", type_list(body.parameters), " -> ",
                    type_list(body.results));
  for (std::size_t i = 0; i < operands.size(); ++i)
    if (operands[i].dtype() != body.parameters[0].dtype())
      return op_error(op, "operand ", i, " is ", operands[i], " but the computation takes ",
                      body.parameters[0]);
  return ok_status();
}

}  // namespace detail

/// The collectives (all_reduce .. collective_broadcast): the spec's constraints that hold
/// whatever the grid (group ids below the grid size are checked when it is known, at run
/// time). all_gather and reduce_scatter need explicit groups: their result dims depend on the
/// group size, taken as the length of a replica_groups row. That is the process group's size
/// in every mode but cross_replica_and_partition (channel_id > 0 without
/// use_global_device_ids), whose groups also span the partitions: there a row's length times
/// num_partitions, and a backend refuses a grid of other partitions. collective_broadcast
/// with has_dynamic_root takes its roots as a last s32[N] operand and has N results.
inline StatusOr<std::vector<Shape>> infer_collective(OpCode op, std::span<const Shape> operands,
                                                     const CollectiveAttrs& a,
                                                     std::span<const Signature> bodies) {
  if (operands.empty()) return detail::op_error(op, "needs at least one operand");
  for (std::size_t i = 0; i < operands.size(); ++i)
    PJRT_LITE_RETURN_IF_ERROR(detail::check_valid_shape(op, str_cat("operand ", i), operands[i]));
  PJRT_LITE_RETURN_IF_ERROR(detail::check_collective_groups(op, a));
  std::vector<Shape> results;
  for (const Shape& s : operands) results.push_back(s.with_default_layout());
  auto check_dim = [&](std::string_view what, std::int64_t d) -> Status {
    for (const Shape& s : operands)
      if (d < 0 || d >= s.rank())
        return detail::op_error(op, what, " ", d, " is out of range for ", s);
    return ok_status();
  };
  auto resize = [&](std::int64_t d, std::int64_t multiply, std::int64_t divide) -> Status {
    for (std::size_t i = 0; i < results.size(); ++i) {
      std::vector<std::int64_t> dims(results[i].dims().begin(), results[i].dims().end());
      if (dims[static_cast<std::size_t>(d)] % divide != 0)
        return detail::op_error(op, "dimension ", d, " of operand ", i, " (",
                                dims[static_cast<std::size_t>(d)], ") does not split into ",
                                divide, " parts");
      dims[static_cast<std::size_t>(d)] = dims[static_cast<std::size_t>(d)] / divide * multiply;
      PJRT_LITE_ASSIGN_OR_RETURN(results[i], detail::make_result(op, results[i].dtype(), dims));
    }
    return ok_status();
  };
  switch (op) {
    case OpCode::kAllReduce:
      PJRT_LITE_RETURN_IF_ERROR(detail::check_collective_reducer(op, bodies[0], operands));
      return results;
    case OpCode::kReduceScatter:
      PJRT_LITE_RETURN_IF_ERROR(detail::check_collective_reducer(op, bodies[0], operands));
      [[fallthrough]];
    case OpCode::kAllGather:
      PJRT_LITE_RETURN_IF_ERROR(check_dim(
          op == OpCode::kAllGather ? "all_gather_dim" : "scatter_dimension", a.dimension));
      if (a.group_size <= 0)
        return detail::op_error(op, "needs replica_groups (the result's size depends on them)");
      if (op == OpCode::kAllGather)
        PJRT_LITE_RETURN_IF_ERROR(resize(a.dimension, a.group_size * a.num_partitions, 1));
      else
        PJRT_LITE_RETURN_IF_ERROR(resize(a.dimension, 1, a.group_size * a.num_partitions));
      return results;
    case OpCode::kAllToAll:
      PJRT_LITE_RETURN_IF_ERROR(check_dim("split_dimension", a.dimension));
      PJRT_LITE_RETURN_IF_ERROR(check_dim("concat_dimension", a.concat_dimension));
      if (a.split_count <= 0)
        return detail::op_error(op, "split_count must be positive, not ", a.split_count);
      if (a.group_size > 0 && a.group_size != a.split_count)
        return detail::op_error(op, "replica_groups has groups of ", a.group_size,
                                " but split_count is ", a.split_count);
      PJRT_LITE_RETURN_IF_ERROR(resize(a.dimension, 1, a.split_count));
      PJRT_LITE_RETURN_IF_ERROR(resize(a.concat_dimension, a.split_count, 1));
      return results;
    case OpCode::kCollectiveBroadcast:
      if (a.has_dynamic_root) {
        const Shape& roots = operands.back();
        const auto n = static_cast<std::int64_t>(operands.size()) - 1;
        if (n < 1)
          return detail::op_error(op, "with has_dynamic_root needs operands and an s32 array of roots");
        if (roots.dtype() != DType::kS32 || roots.rank() != 1 || roots.dim(0) != n)
          return detail::op_error(op, "with has_dynamic_root takes its roots as the last operand, an s32[", n,
                                  "] (one per other operand), but it is ", roots);
        results.pop_back();
      }
      return results;
    case OpCode::kCollectivePermute: return results;
    default: return detail::op_error(op, "is not a collective");
  }
}

/// after_all, send, recv, infeed and outfeed. after_all joins tokens into one; send and
/// outfeed take their data and then a token and give a token; recv and infeed take a token
/// and give the types ChannelAttrs::payload lists, then a token. No token among the data;
/// source_target_pairs in rows of two, ids >= 0, sources unique and targets unique.
inline StatusOr<std::vector<Shape>> infer_token_op(OpCode op, std::span<const Shape> operands,
                                                   const Attributes& attrs) {
  const Shape token(DType::kToken, {});
  if (op == OpCode::kAfterAll) {
    for (std::size_t i = 0; i < operands.size(); ++i)
      if (!is_token(operands[i].dtype()))
        return detail::op_error(op, "operand ", i, " is ", operands[i], ", not a token");
    return std::vector<Shape>{token};
  }
  const auto& a = std::get<ChannelAttrs>(attrs);
  if (a.source_target_pairs.size() % 2 != 0)
    return detail::op_error(op, "source_target_pairs has ", a.source_target_pairs.size(),
                            " ids, not rows of two");
  for (std::size_t i = 0; i < a.source_target_pairs.size(); ++i) {
    if (a.source_target_pairs[i] < 0)
      return detail::op_error(op, "source_target_pairs holds a negative id (", a.source_target_pairs[i], ")");
    for (std::size_t j = i % 2; j < i; j += 2)
      if (a.source_target_pairs[j] == a.source_target_pairs[i])
        return detail::op_error(op, "source_target_pairs names ", i % 2 == 0 ? "source " : "target ",
                                a.source_target_pairs[i], " twice");
  }
  if (op == OpCode::kSend || op == OpCode::kOutfeed) {
    if (!a.payload.empty())
      return detail::op_error(op, "takes its data as operands; ChannelAttrs::payload must be empty");
    if (operands.empty() || !is_token(operands.back().dtype()))
      return detail::op_error(op, "takes its data and then a token, but its last operand is ",
                              operands.empty() ? std::string("missing") : operands.back().to_string());
    for (std::size_t i = 0; i + 1 < operands.size(); ++i)
      if (is_token(operands[i].dtype())) return detail::op_error(op, "operand ", i, " is a token, not data");
    return std::vector<Shape>{token};
  }
  // recv, infeed
  if (!is_token(operands[0].dtype()))
    return detail::op_error(op, "takes a token, not ", operands[0]);
  std::vector<Shape> results;
  for (std::size_t i = 0; i < a.payload.size(); ++i) {
    const Shape& p = a.payload[i];
    StatusOr<Shape> checked = Shape::make(p.dtype(), p.dims());
    if (!checked.ok()) return detail::op_error(op, "result ", i, ": ", checked.status().message());
    if (is_token(p.dtype()))
      return detail::op_error(op, "result ", i, " is a token; only the last result is");
    results.push_back(std::move(checked).value());
  }
  results.push_back(token);
  return results;
}

/// The result shapes of any op: checks the operand count, the attributes' alternative and
/// the number of bodies, then applies the op's rule above. `bodies` are the signatures of
/// the node's regions (body_count(op) of them, or at least that many for case). The builder and the verifier
/// both come through here, so they cannot disagree.
PJRT_LITE_COMPILED_ONCE StatusOr<std::vector<Shape>> infer_shapes(OpCode op, std::span<const Shape> operands,
                                                          const Attributes& attrs,
                                                          std::span<const Signature> bodies = {});

}  // namespace pjrt_lite

#if !defined(PJRT_LITE_CPU_EXTERN_KERNELS)
#include "pjrt_lite/ir/detail/infer_shapes.hpp"  // IWYU pragma: export
#endif
