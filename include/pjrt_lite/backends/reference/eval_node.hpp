#pragma once
// The reference interpreter's op implementations: eval_node and the ops that live with it
// (iota, reduce, reduce_window, select_and_scatter, dot_general, convolution). interpreter.hpp
// includes this header, unless PJRT_LITE_CPU_EXTERN_KERNELS is defined; then only
// <pjrt_lite/cpu_instantiate.hpp> does, so that one translation unit compiles every op for every
// element type.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/reference/collectives.hpp"
#include "pjrt_lite/backends/reference/data_movement.hpp"
#include "pjrt_lite/backends/reference/elementwise.hpp"
#include "pjrt_lite/backends/reference/fft.hpp"
#include "pjrt_lite/backends/reference/gather.hpp"
#include "pjrt_lite/backends/reference/index.hpp"
#include "pjrt_lite/backends/reference/linalg.hpp"
#include "pjrt_lite/backends/reference/rng_bit_generator.hpp"
#include "pjrt_lite/backends/reference/scalar_ops.hpp"
#include "pjrt_lite/backends/reference/scatter.hpp"
#include "pjrt_lite/backends/reference/triangular_solve.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/merge_sort.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/transforms/widen_narrow.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

/// iota: each element is its index along iota_dimension, converted to the element type.
inline StatusOr<Literal> eval_iota(const IotaAttrs& attrs, const Shape& result) {
  return visit_dtype(result.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported(OpCode::kIota, result.dtype());  // shape inference rejects pred
    } else {
      Literal out(result);
      const auto dim = static_cast<std::size_t>(attrs.iota_dimension);
      for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
        out.set<T>(index, convert_element<T>(index[dim]));
      });
      return out;
    }
  });
}

/// A rank-0 literal of type `to` holding the element at memory position `position` of `x`,
/// converted with convert's rules: how reduce promotes inputs to its body's types.
inline Literal element_as_scalar(const Literal& x, std::int64_t position, DType to) {
  Literal out(Shape(to, {}));
  const auto size = static_cast<std::int64_t>(byte_size(x.dtype()));
  convert_elements(static_cast<const std::byte*>(x.untyped_data()) + position * size, x.dtype(),
                   out.untyped_data(), to, 1);
  return out;
}

/// while: the values start as the operands and become body(values...) while
/// cond(values...) is true. An infinite loop runs forever, as it would anywhere.
inline StatusOr<std::vector<Literal>> eval_while(const Node& node,
                                                 std::span<const Literal* const> operands) {
  std::vector<Literal> values;
  for (const Literal* v : operands) values.push_back(*v);
  std::vector<const Literal*> args(values.size());
  while (true) {
    for (std::size_t k = 0; k < values.size(); ++k) args[k] = &values[k];
    StatusOr<std::vector<Literal>> cond = run_graph(node.bodies[0], args);
    if (!cond.ok()) return cond.status().with_context("while: cond");
    if (!(*cond)[0].data<bool>()[0]) return values;
    StatusOr<std::vector<Literal>> next = run_graph(node.bodies[1], args);
    if (!next.ok()) return next.status().with_context("while: body");
    values = std::move(next).value();
  }
}

/// case and if: the branch operand 0 selects (an out-of-range case index selects the last
/// branch; if's true selects branch 0) run on the other operands.
inline StatusOr<std::vector<Literal>> eval_case(const Node& node,
                                                std::span<const Literal* const> operands) {
  std::size_t branch = 0;
  if (node.op == OpCode::kIf) {
    branch = operands[0]->data<bool>()[0] ? 0 : 1;
  } else {
    const std::int32_t index = operands[0]->data<std::int32_t>()[0];
    const std::size_t n = node.bodies.size();
    branch = index >= 0 && static_cast<std::size_t>(index) < n ? static_cast<std::size_t>(index)
                                                               : n - 1;
  }
  StatusOr<std::vector<Literal>> out = run_graph(node.bodies[branch], operands.subspan(1));
  if (!out.ok()) return out.status().with_context(str_cat(op_name(node.op), ": branch ", branch));
  return out;
}

/// One step of reduce's fold: `accumulators` becomes body(accumulators..., elements...).
inline Status fold_step(const Graph& body, std::vector<Literal>& accumulators,
                        const std::vector<Literal>& elements) {
  std::vector<const Literal*> args;
  for (const Literal& a : accumulators) args.push_back(&a);
  for (const Literal& e : elements) args.push_back(&e);
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Literal> next, run_graph(body, args));
  accumulators = std::move(next);
  return ok_status();
}

/// One zero-filled literal per shape.
inline std::vector<Literal> zero_literals(std::span<const Shape> shapes) {
  std::vector<Literal> literals;
  literals.reserve(shapes.size());
  for (const Shape& shape : shapes) literals.emplace_back(shape);
  return literals;
}

/// reduce(inputs..., init_values...): for each result index, the accumulators start at the
/// init values and take body(accumulators..., elements...) for every element of the reduced
/// slice in ascending index order (one fixed schedule of the many the spec allows). Inputs
/// and init values are first converted to the body's types, which may be wider.
inline StatusOr<std::vector<Literal>> eval_reduce(const Node& node,
                                                  std::span<const Literal* const> operands) {
  const std::size_t n = node.results.size();
  std::span<const Literal* const> inputs = operands.first(n);
  std::span<const Literal* const> init_values = operands.subspan(n);
  const Graph& body = node.bodies[0];
  const std::span<const std::int64_t> input_dims = inputs[0]->dims();

  // The reduced dimensions in ascending order: the order of the slice's own indices.
  std::vector<std::int64_t> reduced = node.attr<ReduceAttrs>().dimensions;
  std::ranges::sort(reduced);
  std::vector<std::int64_t> kept, reduced_sizes;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(input_dims.size()); ++d) {
    if (std::ranges::find(reduced, d) == reduced.end())
      kept.push_back(d);
    else
      reduced_sizes.push_back(input_dims[static_cast<std::size_t>(d)]);
  }

  std::vector<Literal> results = zero_literals(node.results);
  std::vector<std::int64_t> input_index(input_dims.size());
  Status status;
  for_each_index(node.results[0].dims(), [&](std::span<const std::int64_t> result_index) {
    if (!status.ok()) return;
    for (std::size_t j = 0; j < kept.size(); ++j)
      input_index[static_cast<std::size_t>(kept[j])] = result_index[j];
    std::vector<Literal> accumulators;
    for (std::size_t i = 0; i < n; ++i)
      accumulators.push_back(element_as_scalar(*init_values[i], 0, node.results[i].dtype()));
    for_each_index(reduced_sizes, [&](std::span<const std::int64_t> slice_index) {
      if (!status.ok()) return;
      for (std::size_t j = 0; j < reduced.size(); ++j)
        input_index[static_cast<std::size_t>(reduced[j])] = slice_index[j];
      std::vector<Literal> elements;
      for (std::size_t i = 0; i < n; ++i)
        elements.push_back(element_as_scalar(*inputs[i], inputs[i]->linear_index(input_index),
                                             node.results[i].dtype()));
      status = fold_step(body, accumulators, elements).with_context("reduce: body");
    });
    if (!status.ok()) return;
    for (std::size_t i = 0; i < n; ++i)
      copy_element(accumulators[i], 0, results[i], results[i].linear_index(result_index));
  });
  PJRT_LITE_RETURN_IF_ERROR(status);
  return results;
}

/// sort(inputs...): each row along the dimension is permuted, the same way in every input, by
/// a stable merge sort that asks the comparator (x0, y0, x1, y1, ...) whether element x goes
/// before element y. Stable whether or not is_stable asks for it (the spec leaves the order of
/// equal elements open then). A comparator that is no strict weak order still gives some
/// permutation: the merge sort only compares.
inline StatusOr<std::vector<Literal>> eval_sort(const Node& node,
                                                std::span<const Literal* const> operands) {
  const SortAttrs& a = node.attr<SortAttrs>();
  const std::span<const std::int64_t> dims = operands[0]->dims();
  const auto rank = static_cast<std::int64_t>(dims.size());
  const auto dim = static_cast<std::size_t>(a.dimension < 0 ? a.dimension + rank : a.dimension);
  const std::int64_t length = dims[dim];
  std::vector<Literal> results = zero_literals(node.results);
  std::vector<std::int64_t> rows(dims.begin(), dims.end());
  rows[dim] = 1;
  std::vector<std::int64_t> order(static_cast<std::size_t>(length)), scratch(order.size());
  std::vector<std::int64_t> positions(order.size()), index(dims.size());
  std::vector<std::vector<Literal>> elements(operands.size());
  Status status;
  for_each_index(rows, [&](std::span<const std::int64_t> row) {
    if (!status.ok()) return;
    std::copy(row.begin(), row.end(), index.begin());
    for (auto& e : elements) e.clear();
    for (std::int64_t j = 0; j < length; ++j) {
      index[dim] = j;
      positions[static_cast<std::size_t>(j)] = operands[0]->linear_index(index);
      for (std::size_t i = 0; i < operands.size(); ++i)
        elements[i].push_back(element_as_scalar(
            *operands[i], positions[static_cast<std::size_t>(j)], operands[i]->dtype()));
    }
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::vector<const Literal*> args(2 * operands.size());
    stable_merge_sort(order, scratch, [&](std::int64_t x, std::int64_t y) {
      if (!status.ok()) return false;
      for (std::size_t i = 0; i < operands.size(); ++i) {
        args[2 * i] = &elements[i][static_cast<std::size_t>(x)];
        args[2 * i + 1] = &elements[i][static_cast<std::size_t>(y)];
      }
      StatusOr<std::vector<Literal>> r = run_graph(node.bodies[0], args);
      if (!r.ok()) {
        status = r.status().with_context("sort: comparator");
        return false;
      }
      return (*r)[0].data<bool>()[0];
    });
    for (std::size_t j = 0; j < order.size(); ++j)
      for (std::size_t i = 0; i < operands.size(); ++i)
        copy_element(*operands[i], positions[static_cast<std::size_t>(order[j])], results[i],
                     positions[j]);
  });
  PJRT_LITE_RETURN_IF_ERROR(status);
  return results;
}

/// top_k(operand): per row along the last dimension, the elements in descending order (floats
/// in totalOrder, so NaN first and -NaN last), equal ones by ascending index, cut to k; and
/// their indices.
inline StatusOr<std::vector<Literal>> eval_top_k(const Node& node, const Literal& operand) {
  return visit_dtype(
      operand.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<std::vector<Literal>> {
        if constexpr (is_complex_v<T>) {
          return unsupported(OpCode::kTopK, operand.dtype());  // shape inference rejects complex
        } else {
          auto key = [](T v) {
            if constexpr (is_float_v<T>)
              return scalar::total_order_key(v);
            else
              return v;
          };
          std::vector<Literal> results = zero_literals(node.results);
          const std::int64_t last = operand.dims().empty() ? 0 : operand.dims().back();
          const std::int64_t k = node.attr<TopKAttrs>().k;
          const std::int64_t rows = last == 0 ? 0 : operand.element_count() / last;
          std::span<const T> in = operand.data<T>();
          std::span<T> values = results[0].data<T>();
          std::span<std::int32_t> indices = results[1].data<std::int32_t>();
          std::vector<std::int64_t> order(static_cast<std::size_t>(last)), scratch(order.size());
          for (std::int64_t r = 0; r < rows; ++r) {
            std::span<const T> row = in.subspan(static_cast<std::size_t>(r * last));
            std::iota(order.begin(), order.end(), std::int64_t{0});
            stable_merge_sort(order, scratch, [&](std::int64_t x, std::int64_t y) {
              return key(row[static_cast<std::size_t>(y)]) < key(row[static_cast<std::size_t>(x)]);
            });
            for (std::int64_t j = 0; j < k; ++j) {
              const auto at = static_cast<std::size_t>(r * k + j);
              values[at] = row[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
              indices[at] = static_cast<std::int32_t>(order[static_cast<std::size_t>(j)]);
            }
          }
          return results;
        }
      });
}

/// The input index that window element `window_index` of window `result_index` reads in
/// the padded, dilated input of `input_dims`, or false when it reads padding or a dilation
/// hole (which hold the init value).
inline bool window_input_index(const WindowAttrs& a, std::span<const std::int64_t> input_dims,
                               std::span<const std::int64_t> result_index,
                               std::span<const std::int64_t> window_index,
                               std::span<std::int64_t> input_index) {
  for (std::size_t d = 0; d < input_dims.size(); ++d) {
    const std::int64_t padded =
        result_index[d] * a.window_strides[d] + window_index[d] * a.window_dilations[d];
    const std::int64_t dilated = padded - a.padding_low[d];
    if (dilated < 0 || dilated % a.base_dilations[d] != 0) return false;
    input_index[d] = dilated / a.base_dilations[d];
    if (input_index[d] >= input_dims[d]) return false;
  }
  return true;
}

/// reduce_window(inputs..., init_values...): result element i of each window is reduce's
/// fold of that window: the accumulators start at the init values and take
/// body(accumulators..., elements...) for every window element in row-major order, a padding
/// or dilation-hole element being the init value.
inline StatusOr<std::vector<Literal>> eval_reduce_window(const Node& node,
                                                         std::span<const Literal* const> operands) {
  const std::size_t n = node.results.size();
  std::span<const Literal* const> inputs = operands.first(n);
  std::span<const Literal* const> init_values = operands.subspan(n);
  const WindowAttrs& a = node.attr<WindowAttrs>();
  const std::span<const std::int64_t> input_dims = inputs[0]->dims();
  std::vector<Literal> inits;
  for (std::size_t i = 0; i < n; ++i)
    inits.push_back(element_as_scalar(*init_values[i], 0, node.results[i].dtype()));
  std::vector<Literal> results = zero_literals(node.results);
  std::vector<std::int64_t> input_index(input_dims.size());
  Status status;
  for_each_index(node.results[0].dims(), [&](std::span<const std::int64_t> result_index) {
    if (!status.ok()) return;
    std::vector<Literal> accumulators = inits;
    for_each_index(a.window_dimensions, [&](std::span<const std::int64_t> window_index) {
      if (!status.ok()) return;
      const bool inside = window_input_index(a, input_dims, result_index, window_index, input_index);
      std::vector<Literal> elements;
      for (std::size_t i = 0; i < n; ++i)
        elements.push_back(inside ? element_as_scalar(*inputs[i],
                                                      inputs[i]->linear_index(input_index),
                                                      node.results[i].dtype())
                                  : inits[i]);
      status = fold_step(node.bodies[0], accumulators, elements).with_context("reduce_window: body");
    });
    if (!status.ok()) return;
    for (std::size_t i = 0; i < n; ++i)
      copy_element(accumulators[i], 0, results[i], results[i].linear_index(result_index));
  });
  PJRT_LITE_RETURN_IF_ERROR(status);
  return results;
}

/// select_and_scatter(operand, source, init_value): the result starts as the init value
/// everywhere. For each source element in row-major order, its window's operand elements
/// (padding takes no part) are visited in row-major order; the first is selected, and each
/// later one replaces the selection unless select(selected, element) holds. The selected
/// element's result becomes scatter(result, source element). A window of padding only
/// scatters nothing.
inline StatusOr<Literal> eval_select_and_scatter(const Node& node, const Literal& operand,
                                                 const Literal& source, const Literal& init_value) {
  const WindowAttrs& a = node.attr<WindowAttrs>();
  const DType e = node.results[0].dtype();
  const Literal init = element_as_scalar(init_value, 0, e);
  Literal result(node.results[0]);
  for (std::int64_t k = 0; k < result.element_count(); ++k) copy_element(init, 0, result, k);
  const std::span<const std::int64_t> dims = operand.dims();
  std::vector<std::int64_t> index(dims.size()), selected(dims.size());
  Status status;
  auto run = [&](const Graph& body, const Literal& x, const Literal& y) -> StatusOr<Literal> {
    const Literal* args[] = {&x, &y};
    StatusOr<std::vector<Literal>> r = run_graph(body, args);
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
  };
  for_each_index(source.dims(), [&](std::span<const std::int64_t> source_index) {
    if (!status.ok()) return;
    bool any = false;
    Literal best;
    for_each_index(a.window_dimensions, [&](std::span<const std::int64_t> window_index) {
      if (!status.ok()) return;
      if (!window_input_index(a, dims, source_index, window_index, index)) return;
      Literal element = element_as_scalar(operand, operand.linear_index(index), operand.dtype());
      if (any) {
        StatusOr<Literal> keep = run(node.bodies[0], best, element);
        if (!keep.ok()) {
          status = keep.status().with_context("select_and_scatter: select");
          return;
        }
        if (keep->get<bool>({})) return;
      }
      any = true;
      best = std::move(element);
      selected = index;
    });
    if (!status.ok() || !any) return;
    const std::int64_t at = result.linear_index(selected);
    Literal old_value(Shape(e, {}));
    copy_element(result, at, old_value, 0);
    StatusOr<Literal> next = run(node.bodies[1], old_value,
                                 element_as_scalar(source, source.linear_index(source_index), e));
    if (!next.ok()) {
      status = next.status().with_context("select_and_scatter: scatter");
      return;
    }
    copy_element(*next, 0, result, at);
  });
  PJRT_LITE_RETURN_IF_ERROR(status);
  return result;
}

/// The dimensions of a rank-`rank` operand that are neither batching nor contracting, in
/// ascending order: its free dimensions, which follow the batch dimensions in the result.
inline std::vector<std::int64_t> free_dimensions(std::int64_t rank,
                                                 const std::vector<std::int64_t>& batching,
                                                 const std::vector<std::int64_t>& contracting) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 0; d < rank; ++d)
    if (std::ranges::find(batching, d) == batching.end() &&
        std::ranges::find(contracting, d) == contracting.end())
      out.push_back(d);
  return out;
}

/// dot_general: result index = batch index + lhs free index + rhs free index. Each element
/// is a sum of products, accumulated in ascending order of the contracting index and
/// starting from zero, as the spec's formula (a reduce with init 0) and XLA's evaluator do:
/// in the element type, except that f16 and bf16 accumulate in f32 and round once at the
/// end, as XLA does and as JAX's exported expectations assume. pred uses or and and.
inline StatusOr<Literal> eval_dot_general(const Literal& lhs, const Literal& rhs,
                                          const DotDimensionNumbers& dn, const Shape& result) {
  const std::vector<std::int64_t> lhs_free = free_dimensions(
      lhs.shape().rank(), dn.lhs_batching_dimensions, dn.lhs_contracting_dimensions);
  const std::vector<std::int64_t> rhs_free = free_dimensions(
      rhs.shape().rank(), dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions);
  std::vector<std::int64_t> contracting_sizes;
  for (std::int64_t d : dn.lhs_contracting_dimensions)
    contracting_sizes.push_back(lhs.dims()[static_cast<std::size_t>(d)]);

  return visit_dtype(lhs.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    PJRT_LITE_RETURN_IF_ERROR(check_result<T>(result, result.element_count()));
    Literal out(result);
    std::vector<std::int64_t> l(static_cast<std::size_t>(lhs.shape().rank()));
    std::vector<std::int64_t> r(static_cast<std::size_t>(rhs.shape().rank()));
    auto at = [](std::vector<std::int64_t>& index, std::int64_t d) -> std::int64_t& {
      return index[static_cast<std::size_t>(d)];
    };
    for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
      std::size_t k = 0;  // position in the result index
      for (std::size_t i = 0; i < dn.lhs_batching_dimensions.size(); ++i, ++k) {
        at(l, dn.lhs_batching_dimensions[i]) = index[k];
        at(r, dn.rhs_batching_dimensions[i]) = index[k];
      }
      for (std::int64_t d : lhs_free) at(l, d) = index[k++];
      for (std::int64_t d : rhs_free) at(r, d) = index[k++];
      constexpr bool kHalf = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
      using Acc = std::conditional_t<kHalf, float, T>;
      Acc sum = convert_element<Acc>(0);
      for_each_index(contracting_sizes, [&](std::span<const std::int64_t> c) {
        for (std::size_t i = 0; i < c.size(); ++i) {
          at(l, dn.lhs_contracting_dimensions[i]) = c[i];
          at(r, dn.rhs_contracting_dimensions[i]) = c[i];
        }
        sum = scalar::add(sum, scalar::multiply(convert_element<Acc>(lhs.get<T>(l)), convert_element<Acc>(rhs.get<T>(r))));
      });
      out.set<T>(index, convert_element<T>(sum));
    });
    return out;
  });
}

/// convolution, term by term from the spec's formula: result element [b, o, s...] (in the
/// output's dimension order) is the sum over kernel positions k (row-major) and input features
/// i of the group (innermost) of lhs[batch, position, feature] * rhs[i, k, o], where o picks
/// the group (feature_group_count splits the lhs features, batch_group_count the lhs batch)
/// and a position that falls on padding or a dilation hole contributes nothing. Accumulates
/// like dot_general: from zero, in the element type, f16 and bf16 in f32; pred uses or / and.
inline StatusOr<Literal> eval_convolution(const Literal& lhs, const Literal& rhs,
                                          const ConvolutionAttrs& a, const Shape& result) {
  const std::size_t spatial = a.input_spatial_dimensions.size();
  std::vector<std::int64_t> kernel_sizes;
  for (std::int64_t d : a.kernel_spatial_dimensions)
    kernel_sizes.push_back(rhs.dims()[static_cast<std::size_t>(d)]);
  const std::int64_t groups = a.feature_group_count * a.batch_group_count;
  const std::int64_t out_features = result.dim(a.output_feature_dimension);
  const std::int64_t group_features = out_features / groups;
  const std::int64_t group_inputs =
      rhs.dims()[static_cast<std::size_t>(a.kernel_input_feature_dimension)];
  const std::int64_t group_batch = result.dim(a.output_batch_dimension);
  return visit_dtype(lhs.dtype(), [&]<class T>(std::type_identity<T>) -> StatusOr<Literal> {
    PJRT_LITE_RETURN_IF_ERROR(check_result<T>(result, result.element_count()));
    constexpr bool kHalf = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
    using Acc = std::conditional_t<kHalf, float, T>;
    Literal out(result);
    std::vector<std::int64_t> l(spatial + 2), r(spatial + 2);
    auto at = [](std::vector<std::int64_t>& index, std::int64_t d) -> std::int64_t& {
      return index[static_cast<std::size_t>(d)];
    };
    for_each_index(result.dims(), [&](std::span<const std::int64_t> index) {
      auto out_at = [&](std::int64_t d) { return index[static_cast<std::size_t>(d)]; };
      const std::int64_t o = out_at(a.output_feature_dimension);
      const std::int64_t group = group_features == 0 ? 0 : o / group_features;
      at(l, a.input_batch_dimension) =
          out_at(a.output_batch_dimension) + (a.batch_group_count > 1 ? group * group_batch : 0);
      const std::int64_t feature_base = a.feature_group_count > 1 ? group * group_inputs : 0;
      at(r, a.kernel_output_feature_dimension) = o;
      Acc sum = convert_element<Acc>(0);
      for_each_index(kernel_sizes, [&](std::span<const std::int64_t> k) {
        for (std::size_t d = 0; d < spatial; ++d) {
          const std::int64_t tap = a.window_reversal[d] != 0 ? kernel_sizes[d] - 1 - k[d] : k[d];
          const std::int64_t padded = out_at(a.output_spatial_dimensions[d]) * a.window_strides[d] +
                                      tap * a.rhs_dilation[d] - a.padding_low[d];
          const std::int64_t size =
              lhs.dims()[static_cast<std::size_t>(a.input_spatial_dimensions[d])];
          if (padded < 0 || padded % a.lhs_dilation[d] != 0 || padded / a.lhs_dilation[d] >= size)
            return;  // padding or a dilation hole: contributes zero
          at(l, a.input_spatial_dimensions[d]) = padded / a.lhs_dilation[d];
          at(r, a.kernel_spatial_dimensions[d]) = k[d];
        }
        for (std::int64_t i = 0; i < group_inputs; ++i) {
          at(l, a.input_feature_dimension) = feature_base + i;
          at(r, a.kernel_input_feature_dimension) = i;
          sum = scalar::add(sum, scalar::multiply(convert_element<Acc>(lhs.get<T>(l)),
                                                  convert_element<Acc>(rhs.get<T>(r))));
        }
      });
      out.set<T>(index, convert_element<T>(sum));
    });
    return out;
  });
}

/// An op that computes on values, with narrow operands or results: evaluated on its operands
/// converted to narrow_compute_dtype, its results converted back (rounding to nearest even,
/// or wrapping). Each op rounds on its own, so a reduce body of f8 adds rounds per step.
inline StatusOr<std::vector<Literal>> eval_widened(const Node& node, std::span<const Literal* const> operands) {
  Node wide = node;
  wide.attrs = pjrt_lite::detail::widened_attrs(node);
  for (Shape& r : wide.results) {
    std::vector<std::int64_t> dims(r.dims().begin(), r.dims().end());
    r = Shape(narrow_compute_dtype(node.op, r.dtype()), std::move(dims));
  }
  std::vector<Literal> widened;
  widened.reserve(operands.size());
  std::vector<const Literal*> args;
  for (const Literal* x : operands) {
    if (!is_narrow(x->dtype())) {
      args.push_back(x);
      continue;
    }
    widened.push_back(pjrt_lite::detail::widen_literal(*x, narrow_compute_dtype(node.op, x->dtype())));
    args.push_back(&widened.back());
  }
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Literal> results, eval_node(wide, args));
  for (std::size_t k = 0; k < results.size(); ++k) {
    const DType t = node.results[k].dtype();
    if (!is_narrow(t)) continue;
    if (node.op == OpCode::kCountLeadingZeros)  // the count included the bits above the width
      for (std::uint32_t& c : results[k].data<std::uint32_t>()) c -= static_cast<std::uint32_t>(32 - bit_width(t));
    Literal& r = results[k];
    if (is_narrow_integral(t) && is_signed_integral(t) != is_signed_integral(r.dtype())) {
      PJRT_LITE_ASSIGN_OR_RETURN(r, r.convert(narrow_integral_twin(t)));
    }
    PJRT_LITE_ASSIGN_OR_RETURN(r, r.convert(t));
  }
  return results;
}

/// Results of at least this many bytes are allocated once as a test before evaluating.
inline constexpr std::int64_t kProbedResultBytes = std::int64_t{1} << 20;

PJRT_LITE_COMPILED_ONCE StatusOr<std::vector<Literal>> eval_node(
    const Node& node, std::span<const Literal* const> operands) {
  auto one = [](StatusOr<Literal> literal) -> StatusOr<std::vector<Literal>> {
    if (!literal.ok()) return literal.status();
    std::vector<Literal> out;
    out.push_back(std::move(literal).value());
    return out;
  };
  const OpCode op = node.op;
  // A program may ask for more memory than there is (an iota of 2^40 elements): that must
  // come back as a Status, so large results are tried before any work starts.
  for (const Shape& r : node.results)
    if (r.byte_size() >= kProbedResultBytes &&
        !pjrt_lite::detail::can_allocate(static_cast<std::size_t>(r.byte_size())))
      return pjrt_lite::detail::allocation_error(str_cat(op_name(op), ": its result ", r),
                                                 static_cast<std::size_t>(r.byte_size()));
  if (computes_on_values(op)) {
    bool narrow = false;
    for (const Shape& r : node.results) narrow = narrow || is_narrow(r.dtype());
    for (const Literal* x : operands) narrow = narrow || is_narrow(x->dtype());
    if (narrow) return eval_widened(node, operands);
  }
  const Shape& result = node.results[0];
  auto operand = [&](std::size_t k) -> const Literal& { return *operands[k]; };
  if (is_unary(op)) return one(eval_unary(op, operand(0), result));
  if (is_binary(op)) return one(eval_binary(op, operand(0), operand(1), result));
  switch (op) {
    case OpCode::kParameter:
      return invalid_argument_error("parameter: has no value outside the evaluation of a graph");
    case OpCode::kConstant: return one(node.attr<ConstantAttrs>().literal().with_default_layout());
    case OpCode::kIota: return one(eval_iota(node.attr<IotaAttrs>(), result));
    case OpCode::kCompare:
      return one(eval_compare(operand(0), operand(1), node.attr<CompareAttrs>(), result));
    case OpCode::kSelect: return one(eval_select(operand(0), operand(1), operand(2), result));
    case OpCode::kClamp: return one(eval_clamp(operand(0), operand(1), operand(2), result));
    case OpCode::kConvert: return one(eval_convert(operand(0), result));
    case OpCode::kReducePrecision:
      return one(eval_reduce_precision(operand(0), node.attr<ReducePrecisionAttrs>(), result));
    case OpCode::kBitcastConvert: return one(eval_bitcast_convert(operand(0), result));
    case OpCode::kBroadcastInDim:
      return one(eval_broadcast_in_dim(operand(0), node.attr<BroadcastInDimAttrs>(), result));
    case OpCode::kReshape: return one(eval_reshape(operand(0), result));
    case OpCode::kTranspose:
      return one(eval_transpose(operand(0), node.attr<TransposeAttrs>(), result));
    case OpCode::kSlice: return one(eval_slice(operand(0), node.attr<SliceAttrs>(), result));
    case OpCode::kConcatenate:
      return one(eval_concatenate(operands, node.attr<ConcatenateAttrs>(), result));
    case OpCode::kPad: return one(eval_pad(operand(0), operand(1), node.attr<PadAttrs>(), result));
    case OpCode::kReverse: return one(eval_reverse(operand(0), node.attr<ReverseAttrs>(), result));
    case OpCode::kDynamicSlice:
      return one(eval_dynamic_slice(operand(0), operands.subspan(1), result));
    case OpCode::kDynamicUpdateSlice:
      return one(eval_dynamic_update_slice(operand(0), operand(1), operands.subspan(2), result));
    case OpCode::kReduce: return eval_reduce(node, operands);
    case OpCode::kWhile: return eval_while(node, operands);
    case OpCode::kCase:
    case OpCode::kIf: return eval_case(node, operands);
    case OpCode::kReduceWindow: return eval_reduce_window(node, operands);
    case OpCode::kSort: return eval_sort(node, operands);
    case OpCode::kTopK: return eval_top_k(node, operand(0));
    case OpCode::kLinalg: return eval_linalg(node, operands);
    case OpCode::kReplicaId:
    case OpCode::kPartitionId:
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kReduceScatter:
    case OpCode::kAllToAll:
    case OpCode::kCollectivePermute:
    case OpCode::kCollectiveBroadcast: return eval_collective(node, operands, &run_graph);
    case OpCode::kAfterAll: {
      std::vector<Literal> token;
      token.emplace_back(Shape(DType::kToken, {}));
      return token;
    }
    case OpCode::kSend:
    case OpCode::kRecv:
    case OpCode::kInfeed:
    case OpCode::kOutfeed: return eval_token_op(node, operands);
    case OpCode::kRngBitGenerator:
      return eval_rng_bit_generator(operand(0), node.attr<RngBitGeneratorAttrs>());
    case OpCode::kSelectAndScatter:
      return one(eval_select_and_scatter(node, operand(0), operand(1), operand(2)));
    case OpCode::kDotGeneral:
      return one(
          eval_dot_general(operand(0), operand(1), node.attr<DotDimensionNumbers>(), result));
    case OpCode::kConvolution:
      return one(eval_convolution(operand(0), operand(1), node.attr<ConvolutionAttrs>(), result));
    case OpCode::kFft: return one(eval_fft(operand(0), node.attr<FftAttrs>(), result));
    case OpCode::kTriangularSolve:
      return one(eval_triangular_solve(operand(0), operand(1), node.attr<TriangularSolveAttrs>(),
                                       result));
    case OpCode::kGather:
      return one(eval_gather(operand(0), operand(1), node.attr<GatherAttrs>(), result));
    case OpCode::kScatter: {
      auto run_body = [&](const Literal& old_value, const Literal& update) {
        const Literal* args[] = {&old_value, &update};
        StatusOr<std::vector<Literal>> r = run_graph(node.bodies[0], args);
        if (!r.ok()) return StatusOr<Literal>(r.status());
        return StatusOr<Literal>(std::move((*r)[0]));
      };
      return one(eval_scatter(operand(0), operand(1), operand(2), node.attr<ScatterAttrs>(),
                              result, run_body));
    }
    default: break;
  }
  return unimplemented_error(str_cat(op_name(op), ": not implemented by the reference backend"));
}

}  // namespace pjrt_lite::reference::detail
