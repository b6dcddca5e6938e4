#pragma once
// scatter in the reference interpreter: the spec's formulas spelled out, one update element
// at a time.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "pjrt_lite/backends/reference/data_movement.hpp"
#include "pjrt_lite/backends/reference/index.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

/// Where update element `update_index` of a scatter goes in the input, per the spec:
/// full_start_index + full_batching_index + full_window_index. Writes `result_index` (rank of the
/// input) and returns false when it is outside `input_dims`.
inline bool scatter_result_index(const ScatterAttrs& a, std::span<const std::int64_t> input_dims,
                                 const Literal& indices, std::span<const std::int64_t> update_index,
                                 std::span<const std::int64_t> update_scatter_dims,
                                 std::span<std::int64_t> result_index) {
  const auto input_rank = static_cast<std::int64_t>(input_dims.size());
  const std::int64_t ivd = a.index_vector_dim;
  // update_scatter_index: the update index at the scatter axes.
  std::vector<std::int64_t> scatter_index;
  for (std::int64_t d : update_scatter_dims)
    scatter_index.push_back(update_index[static_cast<std::size_t>(d)]);
  // start_index: scatter_indices[si0, ..., :, ..., siN] with ':' at index_vector_dim.
  std::vector<std::int64_t> start;
  if (ivd < indices.shape().rank()) {
    std::vector<std::int64_t> at = scatter_index;
    at.insert(at.begin() + ivd, 0);
    for (std::int64_t k = 0; k < indices.shape().dim(ivd); ++k) {
      at[static_cast<std::size_t>(ivd)] = k;
      start.push_back(read_index_at(indices, indices.linear_index(at)));
    }
  } else {
    start.push_back(read_index_at(indices, indices.linear_index(scatter_index)));
  }
  std::vector<std::int64_t> full_start(static_cast<std::size_t>(input_rank), 0);
  for (std::size_t k = 0; k < a.scatter_dims_to_operand_dims.size(); ++k)
    full_start[static_cast<std::size_t>(a.scatter_dims_to_operand_dims[k])] = start[k];
  std::vector<std::int64_t> full_batching(static_cast<std::size_t>(input_rank), 0);
  for (std::size_t i = 0; i < a.input_batching_dims.size(); ++i) {
    const std::int64_t d_start = a.scatter_indices_batching_dims[i];
    full_batching[static_cast<std::size_t>(a.input_batching_dims[i])] =
        scatter_index[static_cast<std::size_t>(d_start - (d_start < ivd ? 0 : 1))];
  }
  // full_window_index: the update index at update_window_dims, with 0 inserted at
  // inserted_window_dims and input_batching_dims.
  std::vector<std::int64_t> full_window(static_cast<std::size_t>(input_rank), 0);
  std::size_t w = 0;
  for (std::int64_t d = 0; d < input_rank; ++d) {
    if (std::ranges::find(a.inserted_window_dims, d) != a.inserted_window_dims.end() ||
        std::ranges::find(a.input_batching_dims, d) != a.input_batching_dims.end())
      continue;
    full_window[static_cast<std::size_t>(d)] =
        update_index[static_cast<std::size_t>(a.update_window_dims[w++])];
  }
  bool in_bounds = true;
  for (std::size_t d = 0; d < input_dims.size(); ++d) {
    result_index[d] = full_start[d] + full_batching[d] + full_window[d];
    in_bounds = in_bounds && result_index[d] >= 0 && result_index[d] < input_dims[d];
  }
  return in_bounds;
}

/// scatter(input, scatter_indices, updates): the result starts as the input converted to the
/// body's type; then for every update index in row-major order (one of the schedules the spec
/// allows), the element at its result index, if in bounds, becomes body(element, update).
/// `run_body` evaluates the body on two rank-0 literals.
template <class RunBody>
StatusOr<Literal> eval_scatter(const Literal& input, const Literal& scatter_indices,
                               const Literal& updates, const ScatterAttrs& a, const Shape& result,
                               RunBody&& run_body) {
  PJRT_LITE_ASSIGN_OR_RETURN(Literal out, input.convert(result.dtype()));
  PJRT_LITE_ASSIGN_OR_RETURN(Literal updates_as_body, updates.convert(result.dtype()));
  const Literal& indices = scatter_indices;
  const std::vector<std::int64_t> scatter_dims =
      scatter_batch_axes(updates.shape().rank(), a.update_window_dims);
  std::vector<std::int64_t> result_index(static_cast<std::size_t>(input.shape().rank()));
  Literal old_value(Shape(result.dtype(), {}));
  Literal update_value(Shape(result.dtype(), {}));
  Status status;
  for_each_index(updates.dims(), [&](std::span<const std::int64_t> update_index) {
    if (!status.ok()) return;
    if (!scatter_result_index(a, input.dims(), indices, update_index, scatter_dims, result_index))
      return;
    const std::int64_t at = out.linear_index(result_index);
    copy_element(out, at, old_value, 0);
    copy_element(updates_as_body, updates_as_body.linear_index(update_index), update_value, 0);
    StatusOr<Literal> next = run_body(old_value, update_value);
    if (!next.ok()) {
      status = next.status().with_context("scatter: body");
      return;
    }
    copy_element(*next, 0, out, at);
  });
  PJRT_LITE_RETURN_IF_ERROR(status);
  return out;
}

}  // namespace pjrt_lite::reference::detail
