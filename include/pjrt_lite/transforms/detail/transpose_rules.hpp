#pragma once
// IWYU pragma: private, include "pjrt_lite/transforms/autodiff.hpp"
// Transposes of the linear ops whose transpose is a program of its own: convolution in
// either operand, fft of each kind, triangular_solve in b, gather, scatter-add and the
// windowed ops. Each function takes the cotangent of the op's result and the op's primal
// (coefficient) operands, and returns the cotangent of one linear operand, following the
// rules JAX's lax defines (convolution.py, fft.py, linalg.py, slicing.py,
// windowed_reductions.py): the index algebra is theirs, the code is ours.

#include <algorithm>
#include <cstdint>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/ir/builder.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

inline std::vector<std::int64_t> vec(std::span<const std::int64_t> s) {
  return {s.begin(), s.end()};
}

/// The size of a dimension of `size` elements with `dilation - 1` holes between them.
inline std::int64_t dilated(std::int64_t size, std::int64_t dilation) {
  return size == 0 ? 0 : 1 + dilation * (size - 1);
}

inline Shape shape_of(GraphBuilder& b, Value v) { return b.shape(v).value_or(Shape()); }

/// x with dimension `src` split into (groups, rest) and the `groups` factor moved into
/// dimension `dst` as its major part (JAX's _reshape_axis_out_of then _reshape_axis_into).
inline Value move_group(GraphBuilder& b, Value x, std::int64_t src, std::int64_t groups,
                        std::int64_t dst) {
  const Shape s = shape_of(b, x);
  std::vector<std::int64_t> split = vec(s.dims());
  const auto us = static_cast<std::size_t>(src);
  split[us] /= groups;
  split.insert(split.begin() + src, groups);
  // In `split`, the group axis is at src; the others keep their order, so with it removed
  // their positions are the original dimension numbers: insert it before dst.
  std::vector<std::int64_t> perm;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(split.size()); ++d)
    if (d != src) perm.push_back(d);
  perm.insert(perm.begin() + dst, src);
  std::vector<std::int64_t> merged = vec(s.dims());
  merged[us] /= groups;
  merged[static_cast<std::size_t>(dst)] *= groups;
  return b.reshape(b.transpose(b.reshape(x, split), perm), merged);
}

/// A convolution's dimension numbers as JAX groups them: the input's, the kernel's and the
/// output's spec, each (batch or kernel output feature, feature or kernel input feature,
/// spatial) and each a tuple of references into `a`.
template <class A>
auto conv_specs(A& a) {
  return std::tuple(
      std::tie(a.input_batch_dimension, a.input_feature_dimension, a.input_spatial_dimensions),
      std::tie(a.kernel_output_feature_dimension, a.kernel_input_feature_dimension,
               a.kernel_spatial_dimensions),
      std::tie(a.output_batch_dimension, a.output_feature_dimension, a.output_spatial_dimensions));
}

/// A spec of conv_specs with its first two dimensions exchanged (JAX's _conv_spec_transpose).
template <class Spec>
std::tuple<std::int64_t, std::int64_t, std::vector<std::int64_t>> conv_spec_transpose(
    const Spec& spec) {
  const auto& [major, minor, spatial] = spec;
  return {minor, major, spatial};
}

/// The cotangent's padding (low, high) in one dimension for the transpose of a windowed op
/// in its input (JAX's _conv_general_vjp_lhs_padding): the input has `in` elements dilated by
/// `in_dilation`, the window `window` dilated by `window_dilation`, the result `out` at
/// `stride`.
inline std::pair<std::int64_t, std::int64_t> vjp_lhs_padding(
    std::int64_t in, std::int64_t in_dilation, std::int64_t window, std::int64_t window_dilation,
    std::int64_t out, std::int64_t stride, std::int64_t padding_low) {
  const std::int64_t k = dilated(window, window_dilation);
  const std::int64_t low = k - padding_low - 1;
  return {low, dilated(in, in_dilation) + k - 1 - dilated(out, stride) - low};
}

/// Convolution, cotangent of the lhs: a convolution of the cotangent with the kernel flipped
/// (window reversal toggled) and its feature dimensions swapped, strides and lhs dilation
/// exchanged (JAX's _conv_general_dilated_transpose_lhs).
inline Value conv_transpose_lhs(GraphBuilder& b, Value ct, Value rhs, const ConvolutionAttrs& attrs,
                                const Shape& lhs_shape) {
  const ConvolutionAttrs a = attrs.with_defaults();
  const Shape rs = shape_of(b, rhs), cs = shape_of(b, ct);
  Value kernel = rhs;
  std::int64_t groups = a.feature_group_count;
  if (a.feature_group_count > 1) {
    kernel = move_group(b, rhs, a.kernel_output_feature_dimension, a.feature_group_count,
                        a.kernel_input_feature_dimension);
  } else if (a.batch_group_count > 1) {
    kernel = move_group(b, rhs, a.kernel_output_feature_dimension, a.batch_group_count,
                        a.kernel_input_feature_dimension);
    groups = a.batch_group_count;
  }
  ConvolutionAttrs t;
  t.window_strides = a.lhs_dilation;
  t.lhs_dilation = a.window_strides;
  t.rhs_dilation = a.rhs_dilation;
  for (std::int64_t r : a.window_reversal) t.window_reversal.push_back(r != 0 ? 0 : 1);
  const auto [a_input, a_kernel, a_output] = conv_specs(a);
  auto [t_input, t_kernel, t_output] = conv_specs(t);
  t_input = a_output;
  t_kernel = conv_spec_transpose(a_kernel);
  t_output = a_input;
  t.feature_group_count = groups;
  t.batch_group_count = 1;
  for (std::size_t i = 0; i < a.input_spatial_dimensions.size(); ++i) {
    const auto [low, high] = vjp_lhs_padding(
        lhs_shape.dim(a.input_spatial_dimensions[i]), a.lhs_dilation[i],
        rs.dim(a.kernel_spatial_dimensions[i]), a.rhs_dilation[i],
        cs.dim(a.output_spatial_dimensions[i]), a.window_strides[i], a.padding_low[i]);
    t.padding_low.push_back(low);
    t.padding_high.push_back(high);
  }
  Value out = b.convolution(ct, kernel, t);
  if (a.batch_group_count > 1)
    out = move_group(b, out, a.input_feature_dimension, a.batch_group_count,
                     a.input_batch_dimension);
  return out;
}

/// Convolution, cotangent of the rhs (the kernel): a convolution of the lhs with the
/// cotangent as the kernel, batch and feature roles swapped on both, strides and rhs
/// dilation exchanged, and feature and batch grouping exchanged (JAX's
/// _conv_general_dilated_transpose_rhs); a reversed window reverses the result.
inline Value conv_transpose_rhs(GraphBuilder& b, Value lhs, Value ct, const ConvolutionAttrs& attrs,
                                const Shape& rhs_shape) {
  const ConvolutionAttrs a = attrs.with_defaults();
  const Shape ls = shape_of(b, lhs), cs = shape_of(b, ct);
  if (cs.element_count() == 0)
    return b.broadcast_in_dim(b.scalar(rhs_shape.dtype(), 0), vec(rhs_shape.dims()), {});
  ConvolutionAttrs t;
  t.window_strides = a.rhs_dilation;
  t.lhs_dilation = a.lhs_dilation;
  t.rhs_dilation = a.window_strides;
  const auto [a_input, a_kernel, a_output] = conv_specs(a);
  auto [t_input, t_kernel, t_output] = conv_specs(t);
  t_input = conv_spec_transpose(a_input);
  t_kernel = conv_spec_transpose(a_output);
  t_output = conv_spec_transpose(a_kernel);
  t.feature_group_count = a.batch_group_count;
  t.batch_group_count = a.feature_group_count;
  std::vector<std::int64_t> reversed;
  for (std::size_t i = 0; i < a.input_spatial_dimensions.size(); ++i) {
    const std::int64_t in = dilated(ls.dim(a.input_spatial_dimensions[i]), a.lhs_dilation[i]);
    const std::int64_t k = dilated(rhs_shape.dim(a.kernel_spatial_dimensions[i]), a.rhs_dilation[i]);
    const std::int64_t out = dilated(cs.dim(a.output_spatial_dimensions[i]), a.window_strides[i]);
    t.padding_low.push_back(a.padding_low[i]);
    t.padding_high.push_back(out + k - in - 1 - a.padding_low[i]);
    if (a.window_reversal[i] != 0) reversed.push_back(a.kernel_spatial_dimensions[i]);
  }
  Value out = b.convolution(lhs, ct, t);
  return reversed.empty() ? out : b.reverse(out, reversed);
}

inline Value conj(GraphBuilder& b, Value z) { return b.complex(b.real(z), b.negate(b.imag(z))); }

/// fft: FFT and IFFT are their own transposes (the DFT matrix is symmetric); RFFT is a
/// complex FFT whose upper half is dropped, so its transpose pads the cotangent with zeros,
/// transforms it and keeps the real part; IRFFT's is an RFFT weighted by how many bins of
/// the full spectrum each half-spectrum bin stands for, scaled and conjugated (JAX's
/// _irfft_transpose).
inline Value fft_transpose(GraphBuilder& b, Value ct, const FftAttrs& a) {
  const Shape cs = shape_of(b, ct);
  const std::int64_t last = cs.rank() - 1;
  switch (a.fft_type) {
    case FftType::kFft:
    case FftType::kIfft: return b.fft(ct, a.fft_type, a.fft_length);
    case FftType::kRfft: {
      const std::int64_t n = a.fft_length.back();
      std::vector<std::int64_t> zero(static_cast<std::size_t>(cs.rank()), 0), high = zero;
      high.back() = n - cs.dim(last);
      Value full = b.pad(ct, b.scalar(cs.dtype(), 0), zero, high, zero);
      return b.real(b.fft(full, FftType::kFft, a.fft_length));
    }
    case FftType::kIrfft: {
      Value x = b.fft(ct, FftType::kRfft, a.fft_length);
      const Shape xs = shape_of(b, x);
      const DType real = cs.dtype();
      std::int64_t total = 1;
      for (std::int64_t l : a.fft_length) total *= l;
      const double scale = 1.0 / static_cast<double>(total);
      const std::int64_t bins = xs.dim(last);
      const std::vector<std::int64_t> dims = vec(xs.dims());
      Value index = b.iota(Shape(DType::kS32, dims), last);
      auto at = [&](std::int64_t i) {
        return b.compare(index, b.broadcast_in_dim(b.scalar(DType::kS32, static_cast<double>(i)), dims, {}),
                         ComparisonDirection::kEq);
      };
      Value once = at(0);
      if (a.fft_length.back() % 2 == 0 && bins > 1) once = b.or_(once, at(bins - 1));
      auto fill = [&](double v) { return b.broadcast_in_dim(b.scalar(real, v), dims, {}); };
      Value weight = b.select(once, fill(scale), fill(2 * scale));
      return conj(b, b.multiply(b.complex(weight, fill(0)), x));
    }
  }
  return ct;
}

/// triangular_solve, cotangent of b: another solve with op(a) transposed (JAX keeps the
/// conjugation and flips the transposition; an adjoint becomes a solve with conj(a)).
inline Value triangular_solve_transpose(GraphBuilder& b, Value a, Value ct,
                                        TriangularSolveAttrs attrs) {
  switch (attrs.transpose_a) {
    case Transpose::kNoTranspose: attrs.transpose_a = Transpose::kTranspose; break;
    case Transpose::kTranspose: attrs.transpose_a = Transpose::kNoTranspose; break;
    case Transpose::kAdjoint:
      attrs.transpose_a = Transpose::kNoTranspose;
      if (is_complex(shape_of(b, a).dtype())) a = conj(b, a);
      break;
  }
  return b.triangular_solve(a, ct, attrs);
}

/// A vector along `dim` of `dims` (s32 etc. `dtype`) holding values[k] at position k, or
/// values[0] everywhere when dim == dims.size() (an implicit index vector of one).
inline Value along(GraphBuilder& b, DType dtype, const std::vector<std::int64_t>& dims,
                   std::int64_t dim, const std::vector<std::int64_t>& values) {
  if (dim == static_cast<std::int64_t>(dims.size()))
    return b.broadcast_in_dim(b.scalar(dtype, static_cast<double>(values[0])), dims, {});
  std::vector<Value> parts;
  for (std::int64_t v : values)
    parts.push_back(b.broadcast_in_dim(b.scalar(dtype, static_cast<double>(v)), {1}, {}));
  Value vector = parts.size() == 1 ? parts[0] : b.concatenate(parts, 0);
  return b.broadcast_in_dim(vector, dims, {dim});
}

/// Calls `f(gather_field, scatter_field)` on each pair of gather's and scatter's dimension
/// numbers that name the same thing (a gather reads where the scatter with these writes).
template <class G, class S, class F>
void gather_scatter_fields(G& g, S& s, F f) {
  f(g.offset_dims, s.update_window_dims);
  f(g.collapsed_slice_dims, s.inserted_window_dims);
  f(g.operand_batching_dims, s.input_batching_dims);
  f(g.start_indices_batching_dims, s.scatter_indices_batching_dims);
  f(g.start_index_map, s.scatter_dims_to_operand_dims);
  f(g.index_vector_dim, s.index_vector_dim);
}

/// gather's cotangent: a scatter-add of the cotangent into zeros at the starts the gather
/// used (clamped as gather clamps them, so that every window lands whole).
inline Value gather_transpose(GraphBuilder& b, Value ct, Value indices, const GatherAttrs& a,
                              const Shape& operand) {
  const Shape is = shape_of(b, indices);
  std::vector<std::int64_t> bounds;
  for (std::int64_t d : a.start_index_map)
    bounds.push_back(operand.dim(d) - a.slice_sizes[static_cast<std::size_t>(d)]);
  const std::vector<std::int64_t> dims = vec(is.dims());
  Value clamped = b.clamp(along(b, is.dtype(), dims, a.index_vector_dim,
                                std::vector<std::int64_t>(bounds.size(), 0)),
                          indices, along(b, is.dtype(), dims, a.index_vector_dim, bounds));
  ScatterAttrs s;
  gather_scatter_fields(a, s, [](const auto& from, auto& to) { to = from; });
  Value zero = b.broadcast_in_dim(b.scalar(operand.dtype(), 0), vec(operand.dims()), {});
  return b.scatter(zero, clamped, ct, OpCode::kAdd, s);
}

/// scatter-add's cotangent for the updates: each update element reads the cotangent where it
/// landed, and 0 where scatter dropped it (outside the input). The cotangent is padded by a
/// window's size less one around the scattered dimensions, so that a window reaching partly
/// outside is gathered unclamped (reading the zeros), and windows wholly outside are masked.
inline Value scatter_add_updates_transpose(GraphBuilder& b, Value ct, Value indices,
                                           const ScatterAttrs& a, const Shape& updates) {
  const Shape cs = shape_of(b, ct), is = shape_of(b, indices);
  const auto rank = static_cast<std::size_t>(cs.rank());
  std::vector<std::int64_t> slice_sizes(rank, 1);
  std::size_t w = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    const auto dd = static_cast<std::int64_t>(d);
    const bool inserted =
        std::find(a.inserted_window_dims.begin(), a.inserted_window_dims.end(), dd) !=
            a.inserted_window_dims.end() ||
        std::find(a.input_batching_dims.begin(), a.input_batching_dims.end(), dd) !=
            a.input_batching_dims.end();
    if (!inserted) slice_sizes[d] = updates.dim(a.update_window_dims[w++]);
  }
  std::vector<std::int64_t> low(rank, 0), interior(rank, 0), shift, lower, upper;
  for (std::int64_t d : a.scatter_dims_to_operand_dims) {
    const std::int64_t reach = slice_sizes[static_cast<std::size_t>(d)] - 1;
    low[static_cast<std::size_t>(d)] = reach;
    shift.push_back(reach);
    lower.push_back(-reach);
    upper.push_back(cs.dim(d) - 1);
  }
  Value padded = b.pad(ct, b.scalar(cs.dtype(), 0), low, low, interior);
  const std::vector<std::int64_t> idims = vec(is.dims());
  const DType it = is.dtype();
  Value shifted = b.add(indices, along(b, it, idims, a.index_vector_dim, shift));
  GatherAttrs g;
  gather_scatter_fields(g, a, [](auto& to, const auto& from) { to = from; });
  g.slice_sizes = slice_sizes;
  Value gathered = b.gather(padded, shifted, g);
  // Windows wholly outside: some start component below -reach or above the last index.
  Value inside = b.and_(
      b.compare(indices, along(b, it, idims, a.index_vector_dim, lower), ComparisonDirection::kGe),
      b.compare(indices, along(b, it, idims, a.index_vector_dim, upper), ComparisonDirection::kLe));
  Value keep = b.convert(inside, updates.dtype());
  if (a.index_vector_dim < is.rank())
    keep = b.reduce(keep, b.scalar(updates.dtype(), 1), OpCode::kMultiply, {a.index_vector_dim});
  std::vector<std::int64_t> scatter_dims;
  for (std::int64_t d = 0; d < updates.rank(); ++d)
    if (std::find(a.update_window_dims.begin(), a.update_window_dims.end(), d) ==
        a.update_window_dims.end())
      scatter_dims.push_back(d);
  return b.multiply(gathered, b.broadcast_in_dim(keep, vec(updates.dims()), scatter_dims));
}

/// reduce_window sum's cotangent: the cotangent spread back over every input element its
/// windows covered, as JAX's _reduce_window_sum_transpose_rule does it: pad (interior
/// padding undoes the strides), then sum windows with the base dilation as the stride.
inline Value reduce_window_sum_transpose(GraphBuilder& b, Value ct, const WindowAttrs& window,
                                         const Shape& operand) {
  const WindowAttrs a = window.with_defaults();
  const Shape cs = shape_of(b, ct);
  const auto rank = static_cast<std::size_t>(cs.rank());
  std::vector<std::int64_t> lo(rank), hi(rank), interior(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const auto dd = static_cast<std::int64_t>(d);
    std::tie(lo[d], hi[d]) =
        vjp_lhs_padding(operand.dim(dd), a.base_dilations[d], a.window_dimensions[d],
                        a.window_dilations[d], cs.dim(dd), a.window_strides[d], a.padding_low[d]);
    interior[d] = a.window_strides[d] - 1;
  }
  Value padded = b.pad(ct, b.scalar(cs.dtype(), 0), lo, hi, interior);
  WindowAttrs t;
  t.window_dimensions = a.window_dimensions;
  t.window_strides = a.base_dilations;
  t.window_dilations = a.window_dilations;
  return b.reduce_window(padded, b.scalar(cs.dtype(), 0), OpCode::kAdd, t.with_defaults());
}

/// The reduce_window body over (valid, value, tangent) triples that keeps the first valid
/// triple whose value `select` (value, value) -> i1 picks over the later ones, as
/// select_and_scatter picks (padding and base-dilation holes, whose `valid` is the init 0,
/// take no part): a max (min) pool's tangent, JAX's _select_and_gather_add.
inline StatusOr<Graph> chooser_body(const Graph& select, DType value, DType tangent) {
  GraphBuilder b(str_cat(select.name(), "_chooser"));
  Value a_ok = b.parameter(Shape(value, {}));
  Value a_v = b.parameter(Shape(value, {}));
  Value a_t = b.parameter(Shape(tangent, {}));
  Value b_ok = b.parameter(Shape(value, {}));
  Value b_v = b.parameter(Shape(value, {}));
  Value b_t = b.parameter(Shape(tangent, {}));
  Value zero = b.scalar(value, 0);
  Value picks = b.inline_graph(select, {a_v, b_v})[0];
  Value keep = b.and_(b.compare(a_ok, zero, ComparisonDirection::kNe),
                      b.or_(b.compare(b_ok, zero, ComparisonDirection::kEq), picks));
  return b.build({b.select(keep, a_ok, b_ok), b.select(keep, a_v, b_v), b.select(keep, a_t, b_t)});
}

/// The tangent `t` (a primal-builder value) gathered by the chooser: per window, the tangent
/// of the element select_and_scatter would pick.
inline Value choose(GraphBuilder& b, Value x, Value t, const Graph& chooser,
                    const WindowAttrs& window) {
  const Shape xs = shape_of(b, x), ts = shape_of(b, t);
  Value ones = b.broadcast_in_dim(b.scalar(xs.dtype(), 1), vec(xs.dims()), {});
  return b.reduce_window({ones, x, t},
                         {b.scalar(xs.dtype(), 0), b.scalar(xs.dtype(), 0), b.scalar(ts.dtype(), 0)},
                         chooser, window)[2];
}

}  // namespace detail

}  // namespace pjrt_lite
