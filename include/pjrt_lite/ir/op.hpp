#pragma once
// The closed set of operations of the IR, their StableHLO names and their classification.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

/// An operation of the IR. Each one is the StableHLO op of the same name; the IR has no
/// `return` op, a Graph lists its outputs instead.
enum class OpCode : std::uint8_t {
  // Sources: no operands.
  kParameter,
  kConstant,
  kIota,
  // Unary element-wise.
  kAbs,
  kNegate,
  kSign,
  kExponential,
  kExponentialMinusOne,
  kLog,
  kLogPlusOne,
  kSqrt,
  kRsqrt,
  kCbrt,
  kTanh,
  kLogistic,
  kSine,
  kCosine,
  kTan,
  kFloor,
  kCeil,
  kRoundNearestAfz,
  kRoundNearestEven,
  kIsFinite,
  kNot,
  kPopcnt,
  kReal,
  kImag,
  // Binary element-wise.
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kRemainder,
  kPower,
  kMaximum,
  kMinimum,
  kAtan2,
  kAnd,
  kOr,
  kXor,
  kShiftLeft,
  kShiftRightArithmetic,
  kShiftRightLogical,
  kComplex,
  // Other element-wise ops, with attributes or more operands.
  kCompare,
  kSelect,
  kClamp,
  kConvert,
  // Data movement.
  kBitcastConvert,
  kBroadcastInDim,
  kReshape,
  kTranspose,
  kSlice,
  kConcatenate,
  kPad,
  kReverse,
  kDynamicSlice,
  kDynamicUpdateSlice,
  // Reductions and contractions.
  kReduce,
  kDotGeneral,
  // Scatter and gather (appended: opcode values are part of serialized graphs).
  kScatter,
  kGather,
  // Windowed reductions (appended for the same reason).
  kReduceWindow,
  kSelectAndScatter,
  // Convolution (appended for the same reason).
  kConvolution,
  // CHLO element-wise ops that JAX exports (appended for the same reason). Unary, real floats.
  kAcosh,
  kAsin,
  kAsinh,
  kAtan,
  kAtanh,
  kCosh,
  kSinh,
  kErf,
  kErfc,
  kErfInv,
  kLgamma,
  kDigamma,
  kBesselI1e,
  // Binary, real floats.
  kNextAfter,
  // Control flow (appended for the same reason): ops whose regions run a data-dependent
  // number of times or are chosen at run time.
  kWhile,
  kCase,
  kIf,
  // Element-wise with attributes (appended for the same reason).
  kReducePrecision,
  // Sorting (appended for the same reason): stablehlo.sort, then CHLO's top_k.
  kSort,
  kTopK,
  // Fourier transforms (appended for the same reason).
  kFft,
  // Linear algebra (appended for the same reason).
  kTriangularSolve,
  // Random bits (appended for the same reason).
  kRngBitGenerator,
  // Element-wise, integers (appended for the same reason): counted from the most significant
  // bit, so 0 gives the bit width.
  kCountLeadingZeros,
  // jaxlib's LAPACK custom calls (appended for the same reason): LinalgAttrs names the routine.
  kLinalg,
  // Many processes, one program (appended for the same reason): the process's position in
  // the grid, then the collectives (CollectiveAttrs says which processes meet).
  kReplicaId,
  kPartitionId,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kCollectivePermute,
  kCollectiveBroadcast,
  // Side effects ordered by tokens (appended for the same reason): after_all joins tokens;
  // send and recv move data between processes over a channel, infeed and outfeed between
  // the program and its device's host queues (ChannelAttrs).
  kAfterAll,
  kSend,
  kRecv,
  kInfeed,
  kOutfeed,
};

/// How many opcodes there are; OpCode values are 0..kOpCodeCount-1.
inline constexpr std::size_t kOpCodeCount = static_cast<std::size_t>(OpCode::kOutfeed) + 1;

namespace detail {
inline constexpr std::array<std::string_view, kOpCodeCount> kOpNames = {
    "parameter",
    "constant",
    "iota",
    "abs",
    "negate",
    "sign",
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "sqrt",
    "rsqrt",
    "cbrt",
    "tanh",
    "logistic",
    "sine",
    "cosine",
    "tan",
    "floor",
    "ceil",
    "round_nearest_afz",
    "round_nearest_even",
    "is_finite",
    "not",
    "popcnt",
    "real",
    "imag",
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "power",
    "maximum",
    "minimum",
    "atan2",
    "and",
    "or",
    "xor",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "complex",
    "compare",
    "select",
    "clamp",
    "convert",
    "bitcast_convert",
    "broadcast_in_dim",
    "reshape",
    "transpose",
    "slice",
    "concatenate",
    "pad",
    "reverse",
    "dynamic_slice",
    "dynamic_update_slice",
    "reduce",
    "dot_general",
    "scatter",
    "gather",
    "reduce_window",
    "select_and_scatter",
    "convolution",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cosh",
    "sinh",
    "erf",
    "erfc",
    "erf_inv",
    "lgamma",
    "digamma",
    "bessel_i1e",
    "next_after",
    "while",
    "case",
    "if",
    "reduce_precision",
    "sort",
    "top_k",
    "fft",
    "triangular_solve",
    "rng_bit_generator",
    "count_leading_zeros",
    "linalg",
    "replica_id",
    "partition_id",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_permute",
    "collective_broadcast",
    "after_all",
    "send",
    "recv",
    "infeed",
    "outfeed",
};
}  // namespace detail

/// True for a value inside the enum's range (a deserialized byte may not be).
constexpr bool is_valid(OpCode op) { return static_cast<std::size_t>(op) < kOpCodeCount; }

/// The StableHLO name without the dialect prefix: "add", "exponential_minus_one", ...
constexpr std::string_view op_name(OpCode op) {
  return is_valid(op) ? detail::kOpNames[static_cast<std::size_t>(op)]
                      : std::string_view("invalid");
}

/// acosh .. next_after and top_k: the CHLO ops, which StableHLO text spells `chlo.NAME`.
constexpr bool is_chlo(OpCode op) {
  return (op >= OpCode::kAcosh && op <= OpCode::kNextAfter) || op == OpCode::kTopK;
}

/// The dialect that spells the op in StableHLO text: "chlo" or "stablehlo".
constexpr std::string_view op_dialect(OpCode op) { return is_chlo(op) ? "chlo" : "stablehlo"; }

/// The opcode called `name` ("add", "stablehlo.add", "chlo.erf"), or INVALID_ARGUMENT. A
/// dialect prefix must be the op's own; chlo.tan is stablehlo.tan, which CHLO also defines.
inline StatusOr<OpCode> op_from_name(std::string_view name) {
  const std::string_view full = name;
  std::string_view dialect;
  for (std::string_view d : {std::string_view("stablehlo"), std::string_view("chlo")}) {
    if (name.size() > d.size() && name.starts_with(d) && name[d.size()] == '.') {
      dialect = d;
      name.remove_prefix(d.size() + 1);
    }
  }
  if (dialect == "chlo" && name == "tan") return OpCode::kTan;
  for (std::size_t i = 0; i < kOpCodeCount; ++i) {
    const auto op = static_cast<OpCode>(i);
    if (detail::kOpNames[i] == name && (dialect.empty() || dialect == op_dialect(op))) return op;
  }
  return invalid_argument_error(str_cat("unknown op '", full, "'"));
}

/// parameter, constant, iota: the ops without operands.
constexpr bool is_source(OpCode op) { return op <= OpCode::kIota; }
/// One operand, same shape out, no attributes: abs .. imag, acosh .. bessel_i1e and
/// count_leading_zeros.
constexpr bool is_unary(OpCode op) {
  return (op >= OpCode::kAbs && op <= OpCode::kImag) ||
         (op >= OpCode::kAcosh && op <= OpCode::kBesselI1e) || op == OpCode::kCountLeadingZeros;
}
/// Two operands of one shape, same shape out, no attributes: add .. complex and next_after.
constexpr bool is_binary(OpCode op) {
  return (op >= OpCode::kAdd && op <= OpCode::kComplex) || op == OpCode::kNextAfter;
}
/// Every result element depends only on the operand elements at the same index (a scalar
/// operand of select or clamp counts as broadcast). These are the ops that fuse into loops.
constexpr bool is_elementwise(OpCode op) {
  return (op >= OpCode::kAbs && op <= OpCode::kConvert) ||
         (op >= OpCode::kAcosh && op <= OpCode::kNextAfter) || op == OpCode::kReducePrecision ||
         op == OpCode::kCountLeadingZeros;
}
/// f(a, b) == f(b, a) for every element type the op accepts.
constexpr bool is_commutative(OpCode op) {
  switch (op) {
    case OpCode::kAdd:
    case OpCode::kMultiply:
    case OpCode::kMaximum:
    case OpCode::kMinimum:
    case OpCode::kAnd:
    case OpCode::kOr:
    case OpCode::kXor: return true;
    default: return false;
  }
}
/// all_reduce .. collective_broadcast: ops whose results depend on the operands of other
/// processes of the grid, which every process of a group must reach together.
constexpr bool is_collective(OpCode op) {
  return op >= OpCode::kAllReduce && op <= OpCode::kCollectiveBroadcast;
}
/// replica_id and partition_id: no operands, but a value that differs between processes
/// (never folded to a constant).
constexpr bool is_process_position(OpCode op) {
  return op == OpCode::kReplicaId || op == OpCode::kPartitionId;
}
/// send, recv, infeed and outfeed: ops that act on something outside the program, so that
/// neither dead-code elimination nor common-subexpression elimination nor constant folding
/// may remove, merge or evaluate them, and their order among themselves is the program's.
constexpr bool has_side_effect(OpCode op) { return op >= OpCode::kSend && op <= OpCode::kOutfeed; }
/// after_all .. outfeed: the ops that take or make tokens (besides control flow, which
/// carries any value).
constexpr bool is_token_op(OpCode op) { return op >= OpCode::kAfterAll && op <= OpCode::kOutfeed; }
/// while, case and if: ops whose regions see the op's operands as their parameters and run
/// zero or more times (while) or one of them once (case, if), chosen at run time.
constexpr bool is_control_flow(OpCode op) { return op >= OpCode::kWhile && op <= OpCode::kIf; }
/// case: any number (at least one) of regions, its branches. Every other op has exactly
/// body_count(op).
constexpr bool has_variadic_bodies(OpCode op) { return op == OpCode::kCase; }
/// How many regions (nested Graphs) a node of `op` carries: one for reduce, scatter,
/// reduce_window, all_reduce and reduce_scatter (the reducer) and sort (its comparator), two for select_and_scatter (select, then scatter), while (cond, then body)
/// and if (true branch, then false branch), at least one for case (see has_variadic_bodies),
/// none otherwise.
constexpr std::size_t body_count(OpCode op) {
  switch (op) {
    case OpCode::kReduce:
    case OpCode::kScatter:
    case OpCode::kReduceWindow:
    case OpCode::kSort:
    case OpCode::kAllReduce:
    case OpCode::kReduceScatter:
    case OpCode::kCase: return 1;
    case OpCode::kSelectAndScatter:
    case OpCode::kWhile:
    case OpCode::kIf: return 2;
    default: return 0;
  }
}
/// True when a node of `op` may carry `n` regions.
constexpr bool body_count_fits(OpCode op, std::size_t n) {
  return has_variadic_bodies(op) ? n >= body_count(op) : n == body_count(op);
}
/// Ops whose nodes carry regions: see body_count.
constexpr bool has_body(OpCode op) { return body_count(op) > 0; }
/// Ops with several results: reduce and reduce_window (one per input), sort, all_reduce,
/// all_gather, all_to_all and collective_broadcast (one per operand), top_k (values and indices), rng_bit_generator (the new state and the bits),
/// while (one per operand), case and if (one per branch result; possibly none), linalg (what
/// its routine returns), recv and infeed (their data, then a token). Every other op has
/// exactly one.
constexpr bool is_variadic_result(OpCode op) {
  return op == OpCode::kReduce || op == OpCode::kReduceWindow || op == OpCode::kSort ||
         op == OpCode::kTopK || op == OpCode::kRngBitGenerator || op == OpCode::kLinalg ||
         op == OpCode::kAllReduce || op == OpCode::kAllGather || op == OpCode::kAllToAll ||
         op == OpCode::kCollectiveBroadcast || op == OpCode::kRecv || op == OpCode::kInfeed ||
         is_control_flow(op);
}
/// How many results a node of `op` with `operands` operands has (at least one, so that a
/// malformed node still has a first result to name); the builder counts control flow's,
/// linalg's and those of recv and infeed (ChannelAttrs::payload).
constexpr std::size_t result_count(OpCode op, std::size_t operands) {
  switch (op) {
    case OpCode::kReduce:
    case OpCode::kReduceWindow: return operands / 2 > 1 ? operands / 2 : 1;
    case OpCode::kSort:
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kAllToAll:
    case OpCode::kCollectiveBroadcast: return operands > 1 ? operands : 1;
    case OpCode::kTopK:
    case OpCode::kRngBitGenerator: return 2;
    default: return 1;
  }
}

/// The number of operands an op takes, or -1 when it depends on the node: concatenate (>= 1),
/// dynamic_slice (1 + rank), dynamic_update_slice (2 + rank), reduce and reduce_window (2 per
/// input), sort, all_reduce, all_gather, all_to_all and collective_broadcast (>= 1), while (the loop-carried values), case and if (the index or
/// predicate, then the values the branches take), linalg (its routine's), after_all (its
/// tokens), send and outfeed (the data, then a token).
constexpr int operand_count(OpCode op) {
  if (is_source(op)) return 0;
  if (is_unary(op)) return 1;
  if (is_binary(op)) return 2;
  switch (op) {
    case OpCode::kCompare: return 2;
    case OpCode::kSelect:
    case OpCode::kClamp: return 3;
    case OpCode::kConvert:
    case OpCode::kReducePrecision:
    case OpCode::kBitcastConvert:
    case OpCode::kBroadcastInDim:
    case OpCode::kReshape:
    case OpCode::kTranspose:
    case OpCode::kSlice:
    case OpCode::kReverse: return 1;
    case OpCode::kPad:
    case OpCode::kDotGeneral: return 2;
    case OpCode::kScatter: return 3;
    case OpCode::kGather: return 2;
    case OpCode::kSelectAndScatter: return 3;
    case OpCode::kConvolution: return 2;
    case OpCode::kTopK: return 1;
    case OpCode::kFft: return 1;
    case OpCode::kTriangularSolve: return 2;
    case OpCode::kRngBitGenerator: return 1;
    case OpCode::kReplicaId:
    case OpCode::kPartitionId: return 0;
    case OpCode::kReduceScatter:
    case OpCode::kCollectivePermute: return 1;
    case OpCode::kRecv:
    case OpCode::kInfeed: return 1;
    default: return -1;
  }
}

}  // namespace pjrt_lite
