#pragma once
// gather in the reference interpreter: the spec's formulas spelled out, one result element at
// a time.

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

/// gather(operand, start_indices): for every result index, operand_index = full_start_index
/// (each start clamped so the slice fits) + full_batching_index + full_offset_index, and
/// result[result_index] = operand[operand_index].
inline Literal eval_gather(const Literal& operand, const Literal& start_indices,
                           const GatherAttrs& a, const Shape& result) {
  const Literal& indices = start_indices;
  const auto rank = static_cast<std::size_t>(operand.shape().rank());
  const std::int64_t ivd = a.index_vector_dim;
  const std::vector<std::int64_t> batch_dims = scatter_batch_axes(result.rank(), a.offset_dims);
  Literal out(result);
  std::vector<std::int64_t> operand_index(rank);
  for_each_index(result.dims(), [&](std::span<const std::int64_t> result_index) {
    std::vector<std::int64_t> batch_index;
    for (std::int64_t d : batch_dims)
      batch_index.push_back(result_index[static_cast<std::size_t>(d)]);
    std::vector<std::int64_t> start;
    if (ivd < indices.shape().rank()) {
      std::vector<std::int64_t> at = batch_index;
      at.insert(at.begin() + ivd, 0);
      for (std::int64_t k = 0; k < indices.shape().dim(ivd); ++k) {
        at[static_cast<std::size_t>(ivd)] = k;
        start.push_back(read_index_at(indices, indices.linear_index(at)));
      }
    } else {
      start.push_back(read_index_at(indices, indices.linear_index(batch_index)));
    }
    std::fill(operand_index.begin(), operand_index.end(), 0);
    for (std::size_t k = 0; k < a.start_index_map.size(); ++k) {
      const auto d = static_cast<std::size_t>(a.start_index_map[k]);
      const std::int64_t limit = operand.shape().dim(a.start_index_map[k]) - a.slice_sizes[d];
      operand_index[d] = std::clamp<std::int64_t>(start[k], 0, limit);
    }
    for (std::size_t i = 0; i < a.operand_batching_dims.size(); ++i) {
      const std::int64_t d_start = a.start_indices_batching_dims[i];
      operand_index[static_cast<std::size_t>(a.operand_batching_dims[i])] +=
          batch_index[static_cast<std::size_t>(d_start - (d_start < ivd ? 0 : 1))];
    }
    std::size_t o = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      const auto dim = static_cast<std::int64_t>(d);
      if (std::ranges::find(a.collapsed_slice_dims, dim) != a.collapsed_slice_dims.end() ||
          std::ranges::find(a.operand_batching_dims, dim) != a.operand_batching_dims.end())
        continue;
      operand_index[d] += result_index[static_cast<std::size_t>(a.offset_dims[o++])];
    }
    copy_element(operand, operand.linear_index(operand_index), out, out.linear_index(result_index));
  });
  return out;
}

}  // namespace pjrt_lite::reference::detail
