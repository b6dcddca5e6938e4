#pragma once
// Graphs with while, case and if shared by the tests of each layer, and the closed forms
// they compute, so every backend is checked against arithmetic rather than against itself.

#include <cstdint>
#include <vector>

#include "pjrt_lite/ir/ir.hpp"

namespace pjrt_lite::testing {

/// cond(i, sum, n) = i <= n, over s32 scalars.
inline Graph counter_cond() {
  GraphBuilder b("cond");
  Value i = b.parameter(Shape(DType::kS32, {}));
  b.parameter(Shape(DType::kS32, {}));
  Value n = b.parameter(Shape(DType::kS32, {}));
  return b.build({b.compare(i, n, ComparisonDirection::kLe)}).value();
}

/// body(i, sum, n) = (i + 1, sum + step(i), n) where step is `inner` run on i (or i itself).
inline Graph counter_body(const Graph* inner = nullptr) {
  GraphBuilder b("body");
  Value i = b.parameter(Shape(DType::kS32, {}));
  Value sum = b.parameter(Shape(DType::kS32, {}));
  Value n = b.parameter(Shape(DType::kS32, {}));
  Value step = inner ? b.inline_graph(*inner, {i})[0] : i;
  return b.build({b.add(i, b.constant(std::int32_t{1})), b.add(sum, step), n}).value();
}

/// sum_to_n(n) = 1 + 2 + ... + n (0 for n < 1), by a while loop: n(n+1)/2.
inline Graph sum_to_n() {
  GraphBuilder b("sum_to_n");
  Value n = b.parameter(Shape(DType::kS32, {}));
  std::vector<Value> r = b.while_loop(
      {b.constant(std::int32_t{1}), b.constant(std::int32_t{0}), n}, counter_cond(), counter_body());
  return b.build({r[1]}).value();
}

/// sum_of_sums(n) = sum over k in 1..n of sum_to_n(k): a while loop nested in another's body;
/// n(n+1)(n+2)/6.
inline Graph sum_of_sums() {
  const Graph inner = sum_to_n();
  GraphBuilder b("sum_of_sums");
  Value n = b.parameter(Shape(DType::kS32, {}));
  std::vector<Value> r = b.while_loop({b.constant(std::int32_t{1}), b.constant(std::int32_t{0}), n},
                                      counter_cond(), counter_body(&inner));
  return b.build({r[1]}).value();
}

/// Branch k of `case_graph`: (x, y) -> (x * k + y, k) over an f32[3] and an f32[].
inline Graph scaled_branch(std::int32_t k) {
  GraphBuilder b("branch");
  Value x = b.parameter(Shape(DType::kF32, {3}));
  Value y = b.parameter(Shape(DType::kF32, {}));
  Value scale = b.broadcast_in_dim(b.constant(static_cast<float>(k)), {3}, {});
  // x is used before y, so StableHLO text, whose branches name the values they use, lists
  // them in this order again (see print_control_flow).
  Value scaled = b.multiply(x, scale);
  Value out = b.add(scaled, b.broadcast_in_dim(y, {3}, {}));
  return b.build({out, b.constant(k)}).value();
}

/// case(index, x, y) with `branches` branches, branch k being scaled_branch(k): for an index
/// in range, (x * index + y, index); otherwise branch branches - 1.
inline Graph case_graph(std::int32_t branches) {
  GraphBuilder b("case");
  Value index = b.parameter(Shape(DType::kS32, {}));
  Value x = b.parameter(Shape(DType::kF32, {3}));
  Value y = b.parameter(Shape(DType::kF32, {}));
  std::vector<Graph> list;
  for (std::int32_t k = 0; k < branches; ++k) list.push_back(scaled_branch(k));
  std::vector<Value> r = b.case_op(index, {x, y}, std::move(list));
  return b.build(r).value();
}

/// if(pred, x, y): (x * 1 + y, 1) when pred, else (x * 2 + y, 2).
inline Graph if_graph() {
  GraphBuilder b("if");
  Value pred = b.parameter(Shape(DType::kPred, {}));
  Value x = b.parameter(Shape(DType::kF32, {3}));
  Value y = b.parameter(Shape(DType::kF32, {}));
  std::vector<Value> r = b.if_op(pred, {x, y}, scaled_branch(1), scaled_branch(2));
  return b.build(r).value();
}

/// What scaled_branch(k) returns for (x, y), worked out on the host.
inline std::vector<Literal> scaled_branch_result(const Literal& x, float y, std::int32_t k) {
  std::vector<float> v;
  for (float e : x.data<float>()) v.push_back(e * static_cast<float>(k) + y);
  return {Literal::from_span<float>(v, {static_cast<std::int64_t>(v.size())}).value(),
          Literal::scalar(k)};
}

/// The branch case_graph(branches) runs for `index`: the spec's clamp to the last branch.
inline std::int32_t selected_branch(std::int32_t index, std::int32_t branches) {
  return index >= 0 && index < branches ? index : branches - 1;
}

}  // namespace pjrt_lite::testing
