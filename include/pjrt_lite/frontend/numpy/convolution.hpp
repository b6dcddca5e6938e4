#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// Windowed ops on tensors: lax.conv_general_dilated (strides, explicit or SAME / VALID
// padding, lhs and rhs dilation, dimension numbers as JAX's layout strings, feature groups)
// and the pooling of flax.linen (max_pool, avg_pool) as reduce_window over the spatial
// dimensions of a channels-last array.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np {

/// Padding of a windowed op: "SAME" (the output has ceil(in / stride) elements, the extra
/// padding going high first, as lax.padtype_to_pads), "VALID" (none), or one (low, high) pair
/// per spatial dimension.
struct Padding {
  Padding(const char* kind) : kind(kind) {}  // NOLINT: "SAME" converts implicitly, as in JAX
  Padding(std::string kind) : kind(std::move(kind)) {}  // NOLINT
  Padding(std::vector<std::pair<std::int64_t, std::int64_t>> pairs)  // NOLINT
      : pairs(std::move(pairs)) {}
  std::string kind;  // empty when `pairs` holds explicit padding
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
};

/// lax.ConvDimensionNumbers as JAX's layout strings: the lhs and the output name their batch
/// dimension 'N' and feature dimension 'C', the kernel its output feature 'O' and input
/// feature 'I'; every other letter is a spatial dimension, and the spatial dimensions are
/// ordered as they appear in the kernel's string ({"NHWC", "HWIO", "NHWC"}). Empty strings
/// mean JAX's default, {"NCH..", "OIH..", "NCH.."}.
struct ConvDimensionNumbers {
  std::string lhs_spec;
  std::string rhs_spec;
  std::string out_spec;
};

namespace detail {

// lax.padtype_to_pads: (low, high) per dimension for `padding` over inputs of `in` with
// windows of `window` (already dilated) and `strides`; records an error for a bad one.
inline std::optional<std::vector<std::pair<std::int64_t, std::int64_t>>> pads_of(
    Trace* t, const char* op, const Padding& padding, const std::vector<std::int64_t>& in,
    const std::vector<std::int64_t>& window, const std::vector<std::int64_t>& strides) {
  const std::size_t n = in.size();
  if (padding.kind.empty()) {
    if (padding.pairs.size() != n) {
      t->fail(invalid_argument_error(str_cat(op, ": ", padding.pairs.size(),
                                             " padding pairs for ", n, " spatial dimension(s)")));
      return std::nullopt;
    }
    return padding.pairs;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> pads(n, {0, 0});
  if (padding.kind == "VALID") return pads;
  if (padding.kind != "SAME") {
    t->fail(invalid_argument_error(str_cat(op, ": padding '", padding.kind,
                                           "' is not SAME, VALID or a list of (low, high) pairs")));
    return std::nullopt;
  }
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t out = (in[d] + strides[d] - 1) / strides[d];
    const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * strides[d] + window[d] - in[d]);
    pads[d] = {total / 2, total - total / 2};
  }
  return pads;
}

// A list of `n` window numbers (all `fill` when empty); records an error for a wrong length
// or a value below 1.
inline std::optional<std::vector<std::int64_t>> window_list(Trace* t, const char* op,
                                                            const char* what,
                                                            std::vector<std::int64_t> v,
                                                            std::size_t n) {
  if (v.empty()) v.assign(n, 1);
  if (v.size() != n) {
    t->fail(invalid_argument_error(
        str_cat(op, ": ", v.size(), " ", what, " for ", n, " spatial dimension(s)")));
    return std::nullopt;
  }
  for (std::int64_t x : v)
    if (x < 1) {
      t->fail(invalid_argument_error(str_cat(op, ": ", what, " must be at least 1, got ", x)));
      return std::nullopt;
    }
  return v;
}

// JAX's conv_general_permutations: each spec as (the two special dimensions, then the spatial
// ones in the kernel's order), written into `a`.
inline Status conv_dimension_numbers(const ConvDimensionNumbers& dn, std::int64_t rank,
                                     ConvolutionAttrs& a) {
  ConvDimensionNumbers s = dn;
  if (s.lhs_spec.empty() && s.rhs_spec.empty() && s.out_spec.empty()) {
    std::string spatial;
    for (std::int64_t d = 2; d < rank; ++d) spatial += static_cast<char>('a' + d - 2);
    s = {"NC" + spatial, "OI" + spatial, "NC" + spatial};
  }
  const auto bad = [&](std::string what) {
    return invalid_argument_error(str_cat("conv_general_dilated: dimension numbers (", s.lhs_spec,
                                          ", ", s.rhs_spec, ", ", s.out_spec, "): ", what));
  };
  const std::string* specs[3] = {&s.lhs_spec, &s.rhs_spec, &s.out_spec};
  const char pairs[3][2] = {{'N', 'C'}, {'O', 'I'}, {'N', 'C'}};
  for (int i = 0; i < 3; ++i) {
    const std::string& spec = *specs[i];
    if (static_cast<std::int64_t>(spec.size()) != rank)
      return bad(str_cat("'", spec, "' has ", spec.size(), " letters for operands of rank ", rank));
    for (char c : spec)
      if (std::count(spec.begin(), spec.end(), c) != 1)
        return bad(str_cat("'", spec, "' names '", std::string(1, c), "' more than once"));
    for (char c : pairs[i])
      if (spec.find(c) == std::string::npos)
        return bad(str_cat("'", spec, "' lacks '", std::string(1, c), "'"));
  }
  std::string kernel_spatial;
  for (char c : s.rhs_spec)
    if (c != 'O' && c != 'I') kernel_spatial += c;
  for (int i : {0, 2})
    for (char c : kernel_spatial)
      if (specs[i]->find(c) == std::string::npos)
        return bad(str_cat("the spatial letters of '", *specs[i], "' and '", s.rhs_spec,
                           "' differ"));
  const auto index = [](const std::string& spec, char c) {
    return static_cast<std::int64_t>(spec.find(c));
  };
  a.input_batch_dimension = index(s.lhs_spec, 'N');
  a.input_feature_dimension = index(s.lhs_spec, 'C');
  a.kernel_output_feature_dimension = index(s.rhs_spec, 'O');
  a.kernel_input_feature_dimension = index(s.rhs_spec, 'I');
  a.output_batch_dimension = index(s.out_spec, 'N');
  a.output_feature_dimension = index(s.out_spec, 'C');
  a.input_spatial_dimensions.clear();
  a.kernel_spatial_dimensions.clear();
  a.output_spatial_dimensions.clear();
  for (char c : kernel_spatial) {
    a.input_spatial_dimensions.push_back(index(s.lhs_spec, c));
    a.kernel_spatial_dimensions.push_back(index(s.rhs_spec, c));
    a.output_spatial_dimensions.push_back(index(s.out_spec, c));
  }
  return ok_status();
}

}  // namespace detail

/// lax.conv_general_dilated: the convolution (a cross-correlation, the kernel not flipped) of
/// `lhs` with the kernel `rhs`, dtypes promoted. Empty strides and dilations mean 1; the
/// padding is SAME / VALID (computed on the undilated lhs and the dilated kernel, as JAX
/// does) or explicit pairs; feature_group_count > 1 splits the lhs features into groups
/// (depthwise with as many groups as features).
inline Tensor conv_general_dilated(Tensor lhs, Tensor rhs, std::vector<std::int64_t> window_strides,
                                   const Padding& padding,
                                   std::vector<std::int64_t> lhs_dilation = {},
                                   std::vector<std::int64_t> rhs_dilation = {},
                                   const ConvDimensionNumbers& dimension_numbers = {},
                                   std::int64_t feature_group_count = 1,
                                   std::int64_t batch_group_count = 1) {
  const char* op = "conv_general_dilated";
  Trace* t = detail::resolve(op, {&lhs, &rhs});
  if (t == nullptr) return Tensor();
  if (lhs.rank() != rhs.rank() || lhs.rank() < 2)
    return detail::fail(t, invalid_argument_error(str_cat(
                               op, ": the lhs ", lhs.shape(), " and the kernel ", rhs.shape(),
                               " must have one rank of at least 2")));
  ConvolutionAttrs a;
  if (Status s = detail::conv_dimension_numbers(dimension_numbers, lhs.rank(), a); !s.ok())
    return detail::fail(t, std::move(s));
  const std::size_t n = a.input_spatial_dimensions.size();
  auto strides = detail::window_list(t, op, "window strides", std::move(window_strides), n);
  if (!strides) return Tensor();
  auto ld = detail::window_list(t, op, "lhs dilations", std::move(lhs_dilation), n);
  if (!ld) return Tensor();
  auto rd = detail::window_list(t, op, "rhs dilations", std::move(rhs_dilation), n);
  if (!rd) return Tensor();
  if (feature_group_count < 1 || batch_group_count < 1)
    return detail::fail(t, invalid_argument_error(str_cat(op, ": group counts must be at least 1")));
  std::vector<std::int64_t> in, window;
  for (std::size_t k = 0; k < n; ++k) {
    in.push_back(lhs.dim(a.input_spatial_dimensions[k]));
    window.push_back(((*rd)[k]) * (rhs.dim(a.kernel_spatial_dimensions[k]) - 1) + 1);
  }
  auto pads = detail::pads_of(t, op, padding, in, window, *strides);
  if (!pads) return Tensor();
  const DType dtype = promote_types(lhs.dtype(), rhs.dtype());
  lhs = astype(lhs, dtype);
  rhs = astype(rhs, dtype);
  a.window_strides = *strides;
  a.lhs_dilation = *ld;
  a.rhs_dilation = *rd;
  for (const auto& p : *pads) {
    a.padding_low.push_back(p.first);
    a.padding_high.push_back(p.second);
  }
  a.feature_group_count = feature_group_count;
  a.batch_group_count = batch_group_count;
  return t->wrap(t->builder().convolution(lhs.value(), rhs.value(), a));
}

namespace detail {
// flax.linen's pool: reduce_window of `op` starting at `init` over windows of `window_shape`
// on the dimensions just before the last (channels-last: batch..., spatial..., features).
inline Tensor pool(const char* name, OpCode op, Tensor x, Literal init,
                   std::vector<std::int64_t> window_shape, std::vector<std::int64_t> strides,
                   const Padding& padding) {
  Trace* t = resolve(name, {&x});
  if (t == nullptr) return Tensor();
  const std::size_t k = window_shape.size(), rank = static_cast<std::size_t>(x.rank());
  if (k == 0 || rank < k + 1)
    return fail(t, invalid_argument_error(str_cat(
                       name, ": a window of ", k, " dimension(s) needs an array of rank at least ",
                       k + 1, " (batch..., spatial..., features), got ", x.shape())));
  auto w = window_list(t, name, "window dimensions", std::move(window_shape), k);
  if (!w) return Tensor();
  auto s = window_list(t, name, "strides", std::move(strides), k);
  if (!s) return Tensor();
  const std::size_t first = rank - 1 - k;
  std::vector<std::int64_t> in;
  for (std::size_t d = 0; d < k; ++d) in.push_back(x.dim(static_cast<std::int64_t>(first + d)));
  auto pads = pads_of(t, name, padding, in, *w, *s);
  if (!pads) return Tensor();
  WindowAttrs window;
  window.window_dimensions.assign(rank, 1);
  window.window_strides.assign(rank, 1);
  window.padding_low.assign(rank, 0);
  window.padding_high.assign(rank, 0);
  for (std::size_t d = 0; d < k; ++d) {
    window.window_dimensions[first + d] = (*w)[d];
    window.window_strides[first + d] = (*s)[d];
    window.padding_low[first + d] = (*pads)[d].first;
    window.padding_high[first + d] = (*pads)[d].second;
  }
  GraphBuilder& b = t->builder();
  return t->wrap(b.reduce_window(x.value(), b.constant(std::move(init)), op, window));
}
}  // namespace detail

/// flax.linen.max_pool: the maximum of each window of `window_shape` over the spatial
/// dimensions of `x` (batch..., spatial..., features), moved by `strides` (1 when empty),
/// padded by -inf (the lowest value for integers).
inline Tensor max_pool(Tensor x, std::vector<std::int64_t> window_shape,
                       std::vector<std::int64_t> strides = {}, const Padding& padding = "VALID") {
  Trace* t = detail::resolve("max_pool", {&x});
  if (t == nullptr) return Tensor();
  if (is_complex(x.dtype()))
    return detail::fail(t, invalid_argument_error("max_pool: complex numbers have no order"));
  return detail::pool("max_pool", OpCode::kMaximum, x,
                      pjrt_lite::detail::extreme_scalar(x.dtype(), true), std::move(window_shape),
                      std::move(strides), padding);
}

/// flax.linen.avg_pool: the mean of each window, padding counted as zeros in the window
/// (flax's count_include_pad=True); integers average as f32.
inline Tensor avg_pool(Tensor x, std::vector<std::int64_t> window_shape,
                       std::vector<std::int64_t> strides = {}, const Padding& padding = "VALID") {
  Trace* t = detail::resolve("avg_pool", {&x});
  if (t == nullptr) return Tensor();
  x = detail::inexact(x);
  std::int64_t count = 1;
  for (std::int64_t w : window_shape) count *= w;
  const Tensor sums = detail::pool("avg_pool", OpCode::kAdd, x,
                                   detail::scalar_literal(x.dtype(), 0), std::move(window_shape),
                                   std::move(strides), padding);
  return sums / static_cast<double>(count);
}

}  // namespace np

}  // namespace pjrt_lite
