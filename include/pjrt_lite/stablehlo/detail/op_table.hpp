#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The op table: every op the parser reads, with how it is spelled, how many operands and
// results it has, how its pretty form reads, which attribute reader makes its attributes and
// how it is added. The pretty-form reader and the generic-form reader both look ops up here,
// so adding an op is one entry below plus its attribute reader (op_attributes.hpp), and its
// pretty form (pretty_forms.hpp) if it has a syntax of its own. The table is a constant:
// lookups are thread-safe.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/annotations.hpp"
#include "pjrt_lite/stablehlo/detail/calls_and_checks.hpp"
#include "pjrt_lite/stablehlo/detail/op_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/op_builders.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/pretty_forms.hpp"
#include "pjrt_lite/stablehlo/detail/pretty_region_forms.hpp"
#include "pjrt_lite/stablehlo/detail/quantized_ops.hpp"
#include "pjrt_lite/stablehlo/detail/shape_refinement.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// A shape-polymorphic op's entry (shape_refinement.hpp): one result, no node of its own
/// (build_dynamic makes it a constant or its static form); `pretty` is null for an op with
/// only the generic form.
constexpr OpSyntax dynamic_op(std::string_view name, int operands,
                              PrettyForm pretty = pretty_dynamic) {
  return {name, OpCode::kParameter, operands, 1, pretty, nullptr, build_dynamic};
}

// clang-format off
inline constexpr OpSyntax kOpTable[] = {
    // name                               code                              operands  results    pretty form              attribute reader
    // Terminators, calls and checks: no node of their own.
    {"return",                            OpCode::kParameter,               kVariadic, 0,         pretty_return,           nullptr,                build_return, false},
    {"func.return",                       OpCode::kParameter,               kVariadic, 0,         pretty_return,           nullptr,                build_return},
    {"stablehlo.return",                  OpCode::kParameter,               kVariadic, 0,         pretty_return,           nullptr,                build_return},
    {"call",                              OpCode::kParameter,               kVariadic, kVariadic, pretty_call,             nullptr,                build_call, false},
    {"func.call",                         OpCode::kParameter,               kVariadic, kVariadic, pretty_call,             nullptr,                build_call},
    {"stablehlo.custom_call",             OpCode::kParameter,               kVariadic, kVariadic, pretty_custom_call,      nullptr,                build_custom_call},
    // JAX's annotations and identities (annotations.hpp): no node of their own.
    {"stablehlo.composite",               OpCode::kParameter,               kVariadic, kVariadic, pretty_composite,        nullptr,                build_composite},
    {"stablehlo.optimization_barrier",    OpCode::kParameter,               kVariadic, kVariadic, pretty_passthrough,      nullptr,                build_passthrough},
    {"stablehlo.tuple",                   OpCode::kParameter,               kVariadic, kVariadic, pretty_tuple,            nullptr,                build_tuple, false},
    {"stablehlo.get_tuple_element",       OpCode::kParameter,               1,         1,         pretty_get_tuple_element, nullptr,               build_get_tuple_element, false},
    {"stablehlo.map",                     OpCode::kParameter,               kVariadic, 1,         nullptr,                 nullptr,                build_map},
    {"sdy.sharding_constraint",           OpCode::kParameter,               1,         1,         pretty_passthrough,      nullptr,                build_passthrough},
    {"sdy.reshard",                       OpCode::kParameter,               1,         1,         pretty_passthrough,      nullptr,                build_passthrough},
    {"sdy.manual_computation",            OpCode::kParameter,               kVariadic, kVariadic, pretty_manual_computation, nullptr,              build_manual_computation, false},
    {"sdy.return",                        OpCode::kParameter,               kVariadic, 0,         pretty_return,           nullptr,                build_return},
    // Shape polymorphism (shape_refinement.hpp): each becomes a constant or its static form.
    dynamic_op("stablehlo.get_dimension_size",       1),
    dynamic_op("stablehlo.dynamic_iota",             1),
    dynamic_op("stablehlo.dynamic_reshape",          2),
    dynamic_op("stablehlo.dynamic_broadcast_in_dim", 2),
    dynamic_op("stablehlo.real_dynamic_slice",       4),
    dynamic_op("stablehlo.dynamic_pad",              5),
    dynamic_op("stablehlo.dynamic_gather",           3, nullptr),
    dynamic_op("stablehlo.dynamic_conv",             3, nullptr),
    {"interpreter.run_parallel",          OpCode::kParameter,               kVariadic, kVariadic, nullptr,                 nullptr,                build_run_parallel},
    {"check.expect_eq",                   OpCode::kParameter,               2,         0,         pretty_check,            nullptr,                build_check},
    {"check.expect_eq_const",             OpCode::kParameter,               1,         0,         pretty_check,            nullptr,                build_check},
    {"check.expect_close",                OpCode::kParameter,               2,         0,         pretty_check,            nullptr,                build_check},
    {"check.expect_close_const",          OpCode::kParameter,               1,         0,         pretty_check,            nullptr,                build_check},
    {"check.expect_almost_eq",            OpCode::kParameter,               2,         0,         pretty_check,            nullptr,                build_check},
    {"check.expect_almost_eq_const",      OpCode::kParameter,               1,         0,         pretty_check,            nullptr,                build_check},
    // Sources.
    {"stablehlo.constant",                OpCode::kConstant,                0,         1,         pretty_constant,         read_constant,          build_node},
    // MLIR's arith dialect spells a dense tensor constant this way too (`arith.constant dense<...> : T`).
    {"arith.constant",                    OpCode::kConstant,                0,         1,         pretty_constant,         read_constant,          build_node},
    {"stablehlo.iota",                    OpCode::kIota,                    0,         1,         pretty_iota,             read_iota,              build_node},
    // Unary element-wise.
    {"stablehlo.abs",                     OpCode::kAbs,                     1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.negate",                  OpCode::kNegate,                  1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.sign",                    OpCode::kSign,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.exponential",             OpCode::kExponential,             1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.exponential_minus_one",   OpCode::kExponentialMinusOne,     1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.log",                     OpCode::kLog,                     1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.log_plus_one",            OpCode::kLogPlusOne,              1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.sqrt",                    OpCode::kSqrt,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.rsqrt",                   OpCode::kRsqrt,                   1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.cbrt",                    OpCode::kCbrt,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.tanh",                    OpCode::kTanh,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.logistic",                OpCode::kLogistic,                1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.sine",                    OpCode::kSine,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.cosine",                  OpCode::kCosine,                  1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.tan",                     OpCode::kTan,                     1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.floor",                   OpCode::kFloor,                   1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.ceil",                    OpCode::kCeil,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.round_nearest_afz",       OpCode::kRoundNearestAfz,         1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.round_nearest_even",      OpCode::kRoundNearestEven,        1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.is_finite",               OpCode::kIsFinite,                1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.not",                     OpCode::kNot,                     1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.popcnt",                  OpCode::kPopcnt,                  1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.count_leading_zeros",     OpCode::kCountLeadingZeros,       1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.real",                    OpCode::kReal,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.imag",                    OpCode::kImag,                    1,         1,         pretty_operands,         nullptr,                build_node},
    // Binary element-wise.
    {"stablehlo.add",                     OpCode::kAdd,                     2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.subtract",                OpCode::kSubtract,                2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.multiply",                OpCode::kMultiply,                2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.divide",                  OpCode::kDivide,                  2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.remainder",               OpCode::kRemainder,               2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.power",                   OpCode::kPower,                   2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.maximum",                 OpCode::kMaximum,                 2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.minimum",                 OpCode::kMinimum,                 2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.atan2",                   OpCode::kAtan2,                   2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.and",                     OpCode::kAnd,                     2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.or",                      OpCode::kOr,                      2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.xor",                     OpCode::kXor,                     2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.shift_left",              OpCode::kShiftLeft,               2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.shift_right_arithmetic",  OpCode::kShiftRightArithmetic,    2,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.shift_right_logical",     OpCode::kShiftRightLogical,       2,         1,         pretty_operands,         nullptr,                build_node},
    // `: T` is complex's result type; its operands are the parts.
    {"stablehlo.complex",                 OpCode::kComplex,                 2,         1,         pretty_operands,         nullptr,                build_node, true, TypeRule::kResultOnly},
    // Other element-wise ops. select's `: Tpred, T` types its predicate apart.
    {"stablehlo.compare",                 OpCode::kCompare,                 2,         1,         pretty_compare,          read_compare,           build_node},
    {"stablehlo.select",                  OpCode::kSelect,                  3,         1,         pretty_operands,         nullptr,                build_node, true, TypeRule::kSelect},
    {"stablehlo.clamp",                   OpCode::kClamp,                   3,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.convert",                 OpCode::kConvert,                 1,         1,         pretty_operands,         read_convert,           build_node},
    {"stablehlo.reduce_precision",        OpCode::kReducePrecision,         1,         1,         pretty_reduce_precision, read_reduce_precision,  build_node},
    // Data movement.
    {"stablehlo.bitcast_convert",         OpCode::kBitcastConvert,          1,         1,         pretty_operands,         read_bitcast_convert,   build_node},
    {"stablehlo.broadcast_in_dim",        OpCode::kBroadcastInDim,          1,         1,         pretty_broadcast_in_dim, read_broadcast_in_dim,  build_node},
    {"stablehlo.broadcast",               OpCode::kBroadcastInDim,          1,         1,         pretty_broadcast,        nullptr,                build_broadcast},
    {"stablehlo.reshape",                 OpCode::kReshape,                 1,         1,         pretty_operands,         read_reshape,           build_node},
    {"stablehlo.transpose",               OpCode::kTranspose,               1,         1,         pretty_transpose,        read_transpose,         build_node},
    {"stablehlo.slice",                   OpCode::kSlice,                   1,         1,         pretty_slice,            read_slice,             build_node},
    {"stablehlo.concatenate",             OpCode::kConcatenate,             kVariadic, 1,         pretty_concatenate,      read_concatenate,       build_node},
    {"stablehlo.pad",                     OpCode::kPad,                     2,         1,         pretty_pad,              read_pad,               build_node},
    {"stablehlo.reverse",                 OpCode::kReverse,                 1,         1,         pretty_reverse,          read_reverse,           build_node},
    {"stablehlo.dynamic_slice",           OpCode::kDynamicSlice,            kVariadic, 1,         pretty_dynamic_slice,    read_dynamic_slice,     build_node},
    {"stablehlo.dynamic_update_slice",    OpCode::kDynamicUpdateSlice,      kVariadic, 1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.gather",                  OpCode::kGather,                  2,         1,         nullptr,                 read_gather,            build_node},
    {"stablehlo.scatter",                 OpCode::kScatter,                 kVariadic, kVariadic, nullptr,                 read_scatter,           build_node},
    // Reductions, contractions, windows.
    {"stablehlo.reduce",                  OpCode::kReduce,                  kVariadic, kVariadic, pretty_reduce,           read_reduce,            build_node},
    {"stablehlo.dot_general",             OpCode::kDotGeneral,              2,         1,         pretty_dot_general,      read_dot_general,       build_product},
    {"stablehlo.dot",                     OpCode::kDotGeneral,              2,         1,         pretty_dot,              nullptr,                build_product},
    {"stablehlo.reduce_window",           OpCode::kReduceWindow,            kVariadic, kVariadic, nullptr,                 read_window,            build_node},
    {"stablehlo.select_and_scatter",      OpCode::kSelectAndScatter,        3,         1,         nullptr,                 read_window,            build_node},
    {"stablehlo.convolution",             OpCode::kConvolution,             2,         1,         pretty_convolution,      read_convolution,       build_product},
    {"stablehlo.sort",                    OpCode::kSort,                    kVariadic, kVariadic, nullptr,                 read_sort,              build_node},
    {"stablehlo.fft",                     OpCode::kFft,                     1,         1,         pretty_fft,              read_fft,               build_node},
    {"stablehlo.triangular_solve",        OpCode::kTriangularSolve,         2,         1,         nullptr,                 read_triangular_solve,  build_node},
    {"stablehlo.rng_bit_generator",       OpCode::kRngBitGenerator,         1,         2,         pretty_rng_bit_generator, read_rng_bit_generator, build_node},
    // Control flow: their regions may use outside values, which become operands.
    {"stablehlo.while",                   OpCode::kWhile,                   kVariadic, kVariadic, pretty_while,            nullptr,                build_control_flow},
    {"stablehlo.case",                    OpCode::kCase,                    1,         kVariadic, nullptr,                 nullptr,                build_control_flow},
    {"stablehlo.if",                      OpCode::kIf,                      1,         kVariadic, nullptr,                 nullptr,                build_control_flow},
    // CHLO: real floats only (complex operands are UNIMPLEMENTED); chlo.tan is stablehlo.tan.
    {"chlo.acosh",                        OpCode::kAcosh,                   1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.asin",                         OpCode::kAsin,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.asinh",                        OpCode::kAsinh,                   1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.atan",                         OpCode::kAtan,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.atanh",                        OpCode::kAtanh,                   1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.cosh",                         OpCode::kCosh,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.sinh",                         OpCode::kSinh,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.erf",                          OpCode::kErf,                     1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.erfc",                         OpCode::kErfc,                    1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.erf_inv",                      OpCode::kErfInv,                  1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.lgamma",                       OpCode::kLgamma,                  1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.digamma",                      OpCode::kDigamma,                 1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.bessel_i1e",                   OpCode::kBesselI1e,               1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.next_after",                   OpCode::kNextAfter,               2,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.tan",                          OpCode::kTan,                     1,         1,         pretty_operands,         nullptr,                build_node},
    {"chlo.mulhi",                        OpCode::kParameter,               2,         1,         pretty_operands,         nullptr,                build_mulhi},
    // Many processes: the grid position and the collectives (generic form only).
    {"stablehlo.replica_id",              OpCode::kReplicaId,               0,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.partition_id",            OpCode::kPartitionId,             0,         1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.all_reduce",              OpCode::kAllReduce,               kVariadic, kVariadic, nullptr,                 read_collective,        build_node},
    {"stablehlo.all_gather",              OpCode::kAllGather,               kVariadic, kVariadic, nullptr,                 read_collective,        build_node},
    {"stablehlo.reduce_scatter",          OpCode::kReduceScatter,           1,         1,         nullptr,                 read_collective,        build_node},
    {"stablehlo.all_to_all",              OpCode::kAllToAll,                kVariadic, kVariadic, nullptr,                 read_collective,        build_node},
    {"stablehlo.collective_permute",      OpCode::kCollectivePermute,       1,         1,         nullptr,                 read_collective,        build_node},
    {"stablehlo.collective_broadcast",    OpCode::kCollectiveBroadcast,     kVariadic, kVariadic, nullptr,                 read_collective,        build_node},
    {"stablehlo.collective_reduce",       OpCode::kParameter,               kVariadic, kVariadic, nullptr,                 nullptr,                build_collective_reduce},
    // Tokens and side effects (generic form, but after_all's pretty one).
    {"stablehlo.after_all",               OpCode::kAfterAll,                kVariadic, 1,         pretty_operands,         nullptr,                build_node},
    {"stablehlo.send",                    OpCode::kSend,                    kVariadic, 1,         nullptr,                 read_channel,           build_node},
    {"stablehlo.recv",                    OpCode::kRecv,                    1,         kVariadic, nullptr,                 read_channel,           build_node},
    {"stablehlo.infeed",                  OpCode::kInfeed,                  1,         kVariadic, nullptr,                 read_channel,           build_node},
    {"stablehlo.outfeed",                 OpCode::kOutfeed,                 kVariadic, 1,         nullptr,                 read_channel,           build_node},
    {"chlo.top_k",                        OpCode::kTopK,                    1,         2,         pretty_top_k,            read_top_k,             build_node},
    // Quantization (quantized_ops.hpp): ops of the IR's own.
    {"stablehlo.uniform_quantize",        OpCode::kParameter,               1,         1,         pretty_operands,         nullptr,                build_uniform_quantize},
    {"stablehlo.uniform_dequantize",      OpCode::kParameter,               1,         1,         pretty_operands,         nullptr,                build_uniform_quantize},
};
// clang-format on

/// Every entry of the table, in the order written.
inline constexpr std::span<const OpSyntax> op_table() { return kOpTable; }

/// The table's indices in order of name, for binary search.
inline constexpr auto kOpsByName = [] {
  std::array<std::uint16_t, std::size(kOpTable)> order{};
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint16_t>(i);
  std::sort(order.begin(), order.end(),
            [](std::uint16_t a, std::uint16_t b) { return kOpTable[a].name < kOpTable[b].name; });
  return order;
}();

static_assert(
    [] {
      for (std::size_t i = 1; i < kOpsByName.size(); ++i)
        if (kOpTable[kOpsByName[i - 1]].name == kOpTable[kOpsByName[i]].name) return false;
      return true;
    }(),
    "an op name is in the op table twice");

/// The entry of the op spelled `name` ("stablehlo.add", "func.return"), or null.
inline const OpSyntax* find_op(std::string_view name) {
  const auto* it =
      std::lower_bound(kOpsByName.begin(), kOpsByName.end(), name,
                       [](std::uint16_t i, std::string_view n) { return kOpTable[i].name < n; });
  if (it == kOpsByName.end() || kOpTable[*it].name != name) return nullptr;
  return &kOpTable[*it];
}

/// StableHLO ops (and a few long-standing extras) that the table lacks because the IR does
/// not have them. A program using one is valid but unsupported; a stablehlo op outside this
/// list and the table is a typo.
inline bool is_known_unsupported_op(std::string_view name) {
  // clang-format off
  constexpr std::string_view kNames[] = {
      "async_done", "async_start",
      "batch_norm_grad", "batch_norm_inference", "batch_norm_training", "cholesky",
      "create_token", "cross-replica-sum", "einsum",
      "rng",
      "set_dimension_size", "torch_index_select", "trace",
      "unary_einsum"};
  // clang-format on
  for (std::string_view n : kNames)
    if (n == name) return true;
  return false;
}

}  // namespace pjrt_lite::stablehlo::detail
