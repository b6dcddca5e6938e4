#pragma once
// IWYU pragma: private, include "pjrt_lite/ir/serialize.hpp"
// The one list of the fields of every attribute alternative (attributes.hpp), in the order
// the binary format stores them. The serializer's writer and reader and the fingerprint all
// walk this list with a sink of their own, so what is saved, what is read back and what keys
// the compile cache cannot drift apart: a field added to an attribute struct goes here, and
// nowhere else. (The printer names the fields of some alternatives in a list of its own; it
// static_asserts that list's length against attribute_field_count, so it fails to compile
// until the new field has its name.)

#include <cstddef>
#include <type_traits>

#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::detail {

/// Calls `f(field)` on each field of the attribute alternative `a`, in encoding order. `A`
/// may be const. Every field must be listed: one left out is neither serialized nor
/// fingerprinted (tests/ir_test.cpp checks the count of each alternative against its members).
template <class A, class F>
constexpr void attribute_fields(A& a, F&& f) {
  using T = std::remove_const_t<A>;
  if constexpr (std::is_same_v<T, NoAttrs>) {
  } else if constexpr (std::is_same_v<T, ParameterAttrs>) {
    f(a.number);
    f(a.shape);
  } else if constexpr (std::is_same_v<T, ConstantAttrs>) {
    f(a.value);
  } else if constexpr (std::is_same_v<T, IotaAttrs>) {
    f(a.shape);
    f(a.iota_dimension);
  } else if constexpr (std::is_same_v<T, CompareAttrs>) {
    f(a.direction);
    f(a.type);
  } else if constexpr (std::is_same_v<T, ConvertAttrs>) {
    f(a.dtype);
  } else if constexpr (std::is_same_v<T, BroadcastInDimAttrs>) {
    f(a.dims);
    f(a.broadcast_dimensions);
  } else if constexpr (std::is_same_v<T, ReshapeAttrs>) {
    f(a.dims);
  } else if constexpr (std::is_same_v<T, TransposeAttrs>) {
    f(a.permutation);
  } else if constexpr (std::is_same_v<T, SliceAttrs>) {
    f(a.start_indices);
    f(a.limit_indices);
    f(a.strides);
  } else if constexpr (std::is_same_v<T, ConcatenateAttrs>) {
    f(a.dimension);
  } else if constexpr (std::is_same_v<T, PadAttrs>) {
    f(a.edge_padding_low);
    f(a.edge_padding_high);
    f(a.interior_padding);
  } else if constexpr (std::is_same_v<T, ReverseAttrs> || std::is_same_v<T, ReduceAttrs>) {
    f(a.dimensions);
  } else if constexpr (std::is_same_v<T, DynamicSliceAttrs>) {
    f(a.slice_sizes);
  } else if constexpr (std::is_same_v<T, DotDimensionNumbers>) {
    f(a.lhs_batching_dimensions);
    f(a.rhs_batching_dimensions);
    f(a.lhs_contracting_dimensions);
    f(a.rhs_contracting_dimensions);
  } else if constexpr (std::is_same_v<T, GatherAttrs>) {
    f(a.offset_dims);
    f(a.collapsed_slice_dims);
    f(a.operand_batching_dims);
    f(a.start_indices_batching_dims);
    f(a.start_index_map);
    f(a.index_vector_dim);
    f(a.slice_sizes);
    f(a.indices_are_sorted);
  } else if constexpr (std::is_same_v<T, ScatterAttrs>) {
    f(a.update_window_dims);
    f(a.inserted_window_dims);
    f(a.input_batching_dims);
    f(a.scatter_indices_batching_dims);
    f(a.scatter_dims_to_operand_dims);
    f(a.index_vector_dim);
    f(a.indices_are_sorted);
    f(a.unique_indices);
  } else if constexpr (std::is_same_v<T, WindowAttrs>) {
    f(a.window_dimensions);
    f(a.window_strides);
    f(a.base_dilations);
    f(a.window_dilations);
    f(a.padding_low);
    f(a.padding_high);
  } else if constexpr (std::is_same_v<T, TriangularSolveAttrs>) {
    f(a.left_side);
    f(a.lower);
    f(a.unit_diagonal);
    f(a.transpose_a);
  } else if constexpr (std::is_same_v<T, RngBitGeneratorAttrs>) {
    f(a.algorithm);
    f(a.output);
  } else if constexpr (std::is_same_v<T, FftAttrs>) {
    f(a.fft_type);
    f(a.fft_length);
  } else if constexpr (std::is_same_v<T, ConvolutionAttrs>) {
    f(a.window_strides);
    f(a.padding_low);
    f(a.padding_high);
    f(a.lhs_dilation);
    f(a.rhs_dilation);
    f(a.window_reversal);
    f(a.input_batch_dimension);
    f(a.input_feature_dimension);
    f(a.input_spatial_dimensions);
    f(a.kernel_input_feature_dimension);
    f(a.kernel_output_feature_dimension);
    f(a.kernel_spatial_dimensions);
    f(a.output_batch_dimension);
    f(a.output_feature_dimension);
    f(a.output_spatial_dimensions);
    f(a.feature_group_count);
    f(a.batch_group_count);
  } else if constexpr (std::is_same_v<T, ReducePrecisionAttrs>) {
    f(a.exponent_bits);
    f(a.mantissa_bits);
  } else if constexpr (std::is_same_v<T, SortAttrs>) {
    f(a.dimension);
    f(a.is_stable);
  } else if constexpr (std::is_same_v<T, TopKAttrs>) {
    f(a.k);
  } else if constexpr (std::is_same_v<T, LinalgAttrs>) {
    f(a.routine);
    f(a.uplo);
    f(a.mode);
    f(a.full_matrices);
    f(a.side);
    f(a.trans);
    f(a.diag);
    f(a.low);
    f(a.high);
    f(a.left);
    f(a.transpose);
    f(a.compute_left);
    f(a.compute_right);
    f(a.sort);
  } else if constexpr (std::is_same_v<T, CollectiveAttrs>) {
    f(a.groups);
    f(a.group_size);
    f(a.channel_id);
    f(a.channel_type);
    f(a.use_global_device_ids);
    f(a.dimension);
    f(a.concat_dimension);
    f(a.split_count);
    f(a.num_partitions);  // graph format version 2 on
    f(a.has_dynamic_root);
  } else if constexpr (std::is_same_v<T, ChannelAttrs>) {
    f(a.channel_id);
    f(a.channel_type);
    f(a.is_host_transfer);
    f(a.source_target_pairs);
    f(a.config);
    f(a.payload);
  } else {
    static_assert(sizeof(T) == 0, "every Attributes alternative needs its fields listed here");
  }
}

/// How many fields attribute_fields walks in the alternative `A`, at compile time: for the
/// alternatives a constant expression can make (integers, enums, vectors, shapes; not
/// ConstantAttrs' literal), so a list kept beside this one can static_assert its length.
template <class A>
consteval std::size_t attribute_field_count() {
  A a{};
  std::size_t n = 0;
  attribute_fields(a, [&n](const auto&) { ++n; });
  return n;
}

}  // namespace pjrt_lite::detail
