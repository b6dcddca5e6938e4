#pragma once
// IWYU pragma: private, include "pjrt_lite/ir/shape_inference.hpp"
// The definition of infer_shapes: inline in every translation unit (included by
// shape_inference.hpp), or compiled once in pjrt_lite::cpu_kernels (see core/compiled_once.hpp).

#include <span>
#include <vector>

#include "pjrt_lite/ir/shape_inference.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {
PJRT_LITE_COMPILED_ONCE StatusOr<std::vector<Shape>> infer_value_shapes(OpCode op, std::span<const Shape> operands,
                                                                const Attributes& attrs, std::span<const Signature> bodies);
}  // namespace detail

PJRT_LITE_COMPILED_ONCE StatusOr<std::vector<Shape>> infer_shapes(OpCode op, std::span<const Shape> operands,
                                                          const Attributes& attrs, std::span<const Signature> bodies) {
  if (!is_valid(op))
    return invalid_argument_error(
        str_cat("invalid opcode (enum value ", static_cast<int>(op), ")"));
  if (!attributes_fit(op, attrs))
    return detail::op_error(op, "has attributes ", attributes_name(attrs.index()), " but takes ",
                            attributes_name(attributes_index_for(op)));
  const int expected = operand_count(op);
  if (expected >= 0 && operands.size() != static_cast<std::size_t>(expected))
    return detail::op_error(op, "takes ", expected, " operand(s), got ", operands.size());
  if (!body_count_fits(op, bodies.size()))
    return detail::op_error(op, "takes ", has_variadic_bodies(op) ? "at least " : "",
                            body_count(op), " body(ies), got ", bodies.size());
  for (std::size_t i = 0; i < operands.size(); ++i)
    if (!is_valid(operands[i].dtype()))
      return detail::op_error(op, "operand ", i, " has an invalid shape");

  // Tokens flow only into the token ops, control flow and parameters.
  const bool takes_tokens = is_token_op(op) || is_control_flow(op);
  if (!takes_tokens)
    for (std::size_t i = 0; i < operands.size(); ++i)
      if (is_token(operands[i].dtype()))
        return detail::op_error(op, "operand ", i, " is a token; only after_all, send, recv, infeed, "
                                "outfeed and control flow take tokens");
  if (!takes_tokens && op != OpCode::kParameter) {
    StatusOr<std::vector<Shape>> results = detail::infer_value_shapes(op, operands, attrs, bodies);
    if (results.ok())
      for (std::size_t r = 0; r < results->size(); ++r)
        if (is_token((*results)[r].dtype()))
          return detail::op_error(op, "result ", r, " would be a token; only after_all, send, recv, "
                                  "infeed, outfeed, control flow and parameters make tokens");
    return results;
  }
  return detail::infer_value_shapes(op, operands, attrs, bodies);
}

namespace detail {
/// infer_shapes once its checks common to every op have passed: the op's own rule.
PJRT_LITE_COMPILED_ONCE StatusOr<std::vector<Shape>> infer_value_shapes(OpCode op, std::span<const Shape> operands,
                                                                const Attributes& attrs, std::span<const Signature> bodies) {
  auto one = [](StatusOr<Shape> s) -> StatusOr<std::vector<Shape>> {
    if (!s.ok()) return s.status();
    return std::vector<Shape>{std::move(s).value()};
  };
  if (is_unary(op)) return one(infer_unary(op, operands[0]));
  if (is_binary(op)) return one(infer_binary(op, operands[0], operands[1]));
  switch (op) {
    case OpCode::kParameter: return one(infer_parameter(std::get<ParameterAttrs>(attrs)));
    case OpCode::kConstant: return one(infer_constant(std::get<ConstantAttrs>(attrs)));
    case OpCode::kIota: return one(infer_iota(std::get<IotaAttrs>(attrs)));
    case OpCode::kCompare:
      return one(infer_compare(operands[0], operands[1], std::get<CompareAttrs>(attrs)));
    case OpCode::kSelect: return one(infer_select(operands[0], operands[1], operands[2]));
    case OpCode::kClamp: return one(infer_clamp(operands[0], operands[1], operands[2]));
    case OpCode::kConvert:
      return one(infer_convert(operands[0], std::get<ConvertAttrs>(attrs).dtype));
    case OpCode::kBitcastConvert:
      return one(infer_bitcast_convert(operands[0], std::get<ConvertAttrs>(attrs).dtype));
    case OpCode::kBroadcastInDim:
      return one(infer_broadcast_in_dim(operands[0], std::get<BroadcastInDimAttrs>(attrs)));
    case OpCode::kReshape: return one(infer_reshape(operands[0], std::get<ReshapeAttrs>(attrs)));
    case OpCode::kTranspose:
      return one(infer_transpose(operands[0], std::get<TransposeAttrs>(attrs)));
    case OpCode::kSlice: return one(infer_slice(operands[0], std::get<SliceAttrs>(attrs)));
    case OpCode::kConcatenate:
      return one(infer_concatenate(operands, std::get<ConcatenateAttrs>(attrs)));
    case OpCode::kPad: return one(infer_pad(operands[0], operands[1], std::get<PadAttrs>(attrs)));
    case OpCode::kReverse: return one(infer_reverse(operands[0], std::get<ReverseAttrs>(attrs)));
    case OpCode::kDynamicSlice:
      if (operands.empty()) return detail::op_error(op, "needs an operand");
      return one(infer_dynamic_slice(operands[0], operands.subspan(1),
                                     std::get<DynamicSliceAttrs>(attrs)));
    case OpCode::kDynamicUpdateSlice:
      if (operands.size() < 2) return detail::op_error(op, "needs an operand and an update");
      return one(infer_dynamic_update_slice(operands[0], operands[1], operands.subspan(2)));
    case OpCode::kReduce: {
      if (operands.empty() || operands.size() % 2 != 0)
        return detail::op_error(op, "takes 2N operands (N inputs, then N init values), got ",
                                operands.size());
      const std::size_t n = operands.size() / 2;
      return infer_reduce(operands.first(n), operands.subspan(n), bodies[0],
                          std::get<ReduceAttrs>(attrs));
    }
    case OpCode::kDotGeneral:
      return one(infer_dot_general(operands[0], operands[1], std::get<DotDimensionNumbers>(attrs)));
    case OpCode::kGather:
      return one(infer_gather(operands[0], operands[1], std::get<GatherAttrs>(attrs)));
    case OpCode::kScatter:
      return one(infer_scatter(operands[0], operands[1], operands[2], bodies[0],
                               std::get<ScatterAttrs>(attrs)));
    case OpCode::kReduceWindow: {
      if (operands.empty() || operands.size() % 2 != 0)
        return detail::op_error(op, "takes 2N operands (N inputs, then N init values), got ",
                                operands.size());
      const std::size_t n = operands.size() / 2;
      return infer_reduce_window(operands.first(n), operands.subspan(n), bodies[0],
                                 std::get<WindowAttrs>(attrs));
    }
    case OpCode::kSelectAndScatter:
      return one(infer_select_and_scatter(operands[0], operands[1], operands[2], bodies[0],
                                          bodies[1], std::get<WindowAttrs>(attrs)));
    case OpCode::kConvolution:
      return one(infer_convolution(operands[0], operands[1], std::get<ConvolutionAttrs>(attrs)));
    case OpCode::kFft: return one(infer_fft(operands[0], std::get<FftAttrs>(attrs)));
    case OpCode::kTriangularSolve:
      return one(infer_triangular_solve(operands[0], operands[1],
                                        std::get<TriangularSolveAttrs>(attrs)));
    case OpCode::kWhile: return infer_while(operands, bodies[0], bodies[1]);
    case OpCode::kCase:
    case OpCode::kIf:
      if (operands.empty())
        return detail::op_error(op, "needs operand 0 (the ",
                                op == OpCode::kIf ? "predicate" : "index", ")");
      return infer_case(op, operands[0], operands.subspan(1), bodies);
    case OpCode::kReducePrecision:
      return one(infer_reduce_precision(operands[0], std::get<ReducePrecisionAttrs>(attrs)));
    case OpCode::kSort: return infer_sort(operands, bodies[0], std::get<SortAttrs>(attrs));
    case OpCode::kTopK: return infer_top_k(operands[0], std::get<TopKAttrs>(attrs));
    case OpCode::kRngBitGenerator:
      return infer_rng_bit_generator(operands[0], std::get<RngBitGeneratorAttrs>(attrs));
    case OpCode::kLinalg: return infer_linalg(operands, std::get<LinalgAttrs>(attrs));
    case OpCode::kReplicaId:
    case OpCode::kPartitionId: return one(infer_process_position());
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kReduceScatter:
    case OpCode::kAllToAll:
    case OpCode::kCollectivePermute:
    case OpCode::kCollectiveBroadcast:
      return infer_collective(op, operands, std::get<CollectiveAttrs>(attrs), bodies);
    case OpCode::kAfterAll:
    case OpCode::kSend:
    case OpCode::kRecv:
    case OpCode::kInfeed:
    case OpCode::kOutfeed: return infer_token_op(op, operands, attrs);
    default: return detail::op_error(op, "has no shape rule");
  }
}

}  // namespace detail

}  // namespace pjrt_lite
