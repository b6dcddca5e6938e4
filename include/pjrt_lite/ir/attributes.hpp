#pragma once
// The typed attributes of each op. A node holds exactly one alternative of `Attributes`, the
// one its opcode calls for (attributes_fit checks that), so every field has a C++ type and no
// op carries fields it does not use.
//
// The attributes are complete: an op's result shapes follow from its operand shapes, its
// attributes and its bodies alone (see shape_inference.hpp). That is why reshape and
// broadcast_in_dim carry their result dims and convert its target dtype, which StableHLO
// spells as the result type instead.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1 {

/// compare's `comparison_direction`.
enum class ComparisonDirection : std::uint8_t { kEq, kNe, kGe, kGt, kLe, kLt };

/// a `direction` b, on values whose operators order them as the comparison means.
template <class K>
constexpr bool compares(ComparisonDirection direction, const K& a, const K& b) {
  switch (direction) {
    case ComparisonDirection::kEq: return a == b;
    case ComparisonDirection::kNe: return a != b;
    case ComparisonDirection::kGe: return a >= b;
    case ComparisonDirection::kGt: return a > b;
    case ComparisonDirection::kLe: return a <= b;
    case ComparisonDirection::kLt: return a < b;
  }
  return false;
}

/// compare's `compare_type`. kNotype means "the default for the element type" (what a
/// StableHLO text without the attribute says); the builder resolves it with
/// default_comparison_type, so graphs it builds never hold kNotype.
enum class ComparisonType : std::uint8_t { kNotype, kFloat, kTotalOrder, kSigned, kUnsigned };

/// fft's `fft_type`: complex to complex forward (kFft) or inverse (kIfft), real to complex
/// (kRfft, the non-negative frequencies only) and its inverse (kIrfft).
enum class FftType : std::uint8_t { kFft, kIfft, kRfft, kIrfft };

/// triangular_solve's `transpose_a`: op(a) is a, its transpose, or its conjugate transpose.
enum class Transpose : std::uint8_t { kNoTranspose, kTranspose, kAdjoint };

/// rng_bit_generator's `rng_algorithm`. kDefault is the implementation's choice: PHILOX here,
/// as on XLA's CPU and GPU backends.
enum class RngAlgorithm : std::uint8_t { kDefault, kThreeFry, kPhilox };

namespace detail {
/// The StableHLO spelling of each enumerator, in enumerator order.
inline constexpr std::array<std::string_view, 6> kComparisonDirectionNames = {"EQ", "NE", "GE",
                                                                            "GT", "LE", "LT"};
inline constexpr std::array<std::string_view, 5> kComparisonTypeNames = {
    "NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
inline constexpr std::array<std::string_view, 4> kFftTypeNames = {"FFT", "IFFT", "RFFT", "IRFFT"};
inline constexpr std::array<std::string_view, 3> kTransposeNames = {"NO_TRANSPOSE", "TRANSPOSE",
                                                                    "ADJOINT"};
inline constexpr std::array<std::string_view, 3> kRngAlgorithmNames = {"DEFAULT", "THREE_FRY",
                                                                       "PHILOX"};

template <class E, std::size_t N>
constexpr std::string_view enum_name(const std::array<std::string_view, N>& names, E e) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : std::string_view("INVALID");
}

/// The enumerator spelled `name`, or INVALID_ARGUMENT naming `what` and every spelling.
template <class E, std::size_t N>
StatusOr<E> enum_from_name(const std::array<std::string_view, N>& names, std::string_view name,
                           std::string_view what) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  std::string expected;
  for (std::size_t i = 0; i < N; ++i)
    expected = str_cat(expected, i == 0 ? "" : i + 1 == N ? " or " : ", ", names[i]);
  return invalid_argument_error(
      str_cat("unknown ", what, " '", name, "' (expected ", expected, ")"));
}
}  // namespace detail

/// "FFT", "IFFT", "RFFT", "IRFFT".
constexpr std::string_view fft_type_name(FftType t) {
  return detail::enum_name(detail::kFftTypeNames, t);
}
inline StatusOr<FftType> fft_type_from_name(std::string_view name) {
  return detail::enum_from_name<FftType>(detail::kFftTypeNames, name, "fft type");
}
/// "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT".
constexpr std::string_view transpose_name(Transpose t) {
  return detail::enum_name(detail::kTransposeNames, t);
}
inline StatusOr<Transpose> transpose_from_name(std::string_view name) {
  return detail::enum_from_name<Transpose>(detail::kTransposeNames, name, "transpose_a");
}
/// "DEFAULT", "THREE_FRY", "PHILOX".
constexpr std::string_view rng_algorithm_name(RngAlgorithm a) {
  return detail::enum_name(detail::kRngAlgorithmNames, a);
}
inline StatusOr<RngAlgorithm> rng_algorithm_from_name(std::string_view name) {
  return detail::enum_from_name<RngAlgorithm>(detail::kRngAlgorithmNames, name, "rng_algorithm");
}
/// "EQ", "NE", "GE", "GT", "LE", "LT".
constexpr std::string_view comparison_direction_name(ComparisonDirection d) {
  return detail::enum_name(detail::kComparisonDirectionNames, d);
}
/// "NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED".
constexpr std::string_view comparison_type_name(ComparisonType t) {
  return detail::enum_name(detail::kComparisonTypeNames, t);
}
inline StatusOr<ComparisonDirection> comparison_direction_from_name(std::string_view name) {
  return detail::enum_from_name<ComparisonDirection>(detail::kComparisonDirectionNames, name,
                                                     "comparison direction");
}
inline StatusOr<ComparisonType> comparison_type_from_name(std::string_view name) {
  return detail::enum_from_name<ComparisonType>(detail::kComparisonTypeNames, name,
                                                "comparison type");
}

/// The compare_type the spec prescribes for an element type: SIGNED for signed integers,
/// UNSIGNED for unsigned integers and pred, FLOAT for floating-point and complex.
constexpr ComparisonType default_comparison_type(DType t) {
  if (is_signed_integral(t)) return ComparisonType::kSigned;
  if (is_unsigned_integral(t) || is_pred(t)) return ComparisonType::kUnsigned;
  return ComparisonType::kFloat;
}

/// For ops without attributes.
struct NoAttrs {
  friend bool operator==(const NoAttrs&, const NoAttrs&) = default;
};

/// parameter: its position in the graph's signature and its shape.
struct ParameterAttrs {
  std::int64_t number = 0;
  Shape shape;
  friend bool operator==(const ParameterAttrs&, const ParameterAttrs&) = default;
};

/// constant: the value, shared because graphs are copied by transforms and constants can be
/// large; it is never mutated after the node is made. Always in the default layout.
struct ConstantAttrs {
  std::shared_ptr<const Literal> value;

  [[nodiscard]] const Literal& literal() const { return *value; }
  friend bool operator==(const ConstantAttrs& a, const ConstantAttrs& b) {
    if (a.value == b.value) return true;
    return a.value && b.value && *a.value == *b.value;
  }
};

/// iota: the result shape and the dimension that counts up.
struct IotaAttrs {
  Shape shape;
  std::int64_t iota_dimension = 0;
  friend bool operator==(const IotaAttrs&, const IotaAttrs&) = default;
};

/// compare.
struct CompareAttrs {
  ComparisonDirection direction = ComparisonDirection::kEq;
  ComparisonType type = ComparisonType::kNotype;
  friend bool operator==(const CompareAttrs&, const CompareAttrs&) = default;
};

/// convert and bitcast_convert: the result element type.
struct ConvertAttrs {
  DType dtype = DType::kInvalid;
  friend bool operator==(const ConvertAttrs&, const ConvertAttrs&) = default;
};

/// broadcast_in_dim: the result dims, and for each operand dimension the result dimension it
/// maps to.
struct BroadcastInDimAttrs {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> broadcast_dimensions;
  friend bool operator==(const BroadcastInDimAttrs&, const BroadcastInDimAttrs&) = default;
};

/// reshape: the result dims.
struct ReshapeAttrs {
  std::vector<std::int64_t> dims;
  friend bool operator==(const ReshapeAttrs&, const ReshapeAttrs&) = default;
};

/// transpose: result dimension d is operand dimension permutation[d].
struct TransposeAttrs {
  std::vector<std::int64_t> permutation;
  friend bool operator==(const TransposeAttrs&, const TransposeAttrs&) = default;
};

/// slice: per dimension, [start, limit) taking every stride-th element.
struct SliceAttrs {
  std::vector<std::int64_t> start_indices;
  std::vector<std::int64_t> limit_indices;
  std::vector<std::int64_t> strides;
  friend bool operator==(const SliceAttrs&, const SliceAttrs&) = default;
};

/// concatenate.
struct ConcatenateAttrs {
  std::int64_t dimension = 0;
  friend bool operator==(const ConcatenateAttrs&, const ConcatenateAttrs&) = default;
};

/// pad: edge padding may be negative (it then crops); interior padding may not.
struct PadAttrs {
  std::vector<std::int64_t> edge_padding_low;
  std::vector<std::int64_t> edge_padding_high;
  std::vector<std::int64_t> interior_padding;
  friend bool operator==(const PadAttrs&, const PadAttrs&) = default;
};

/// reverse.
struct ReverseAttrs {
  std::vector<std::int64_t> dimensions;
  friend bool operator==(const ReverseAttrs&, const ReverseAttrs&) = default;
};

/// fft: the transform and the sizes of the trailing dimensions it runs over (1 to 3 of them,
/// innermost last). For kIrfft they are the real result's sizes; the operand's last dimension
/// is then fft_length.back() / 2 + 1.
struct FftAttrs {
  FftType fft_type = FftType::kFft;
  std::vector<std::int64_t> fft_length;
  friend bool operator==(const FftAttrs&, const FftAttrs&) = default;
};

/// triangular_solve: solve op(a) x = b (left_side) or x op(a) = b, reading only the `lower` or
/// upper triangle of a, and taking its diagonal as ones when `unit_diagonal`.
struct TriangularSolveAttrs {
  bool left_side = true;
  bool lower = true;
  bool unit_diagonal = false;
  Transpose transpose_a = Transpose::kNoTranspose;
  friend bool operator==(const TriangularSolveAttrs&, const TriangularSolveAttrs&) = default;
};

/// rng_bit_generator: the algorithm, and the type of the bits it makes (which StableHLO spells
/// as the second result type). The state operand's type is the first result's.
struct RngBitGeneratorAttrs {
  RngAlgorithm algorithm = RngAlgorithm::kThreeFry;
  Shape output;
  friend bool operator==(const RngBitGeneratorAttrs&, const RngBitGeneratorAttrs&) = default;
};

/// dynamic_slice: the result dims (the start indices are operands).
struct DynamicSliceAttrs {
  std::vector<std::int64_t> slice_sizes;
  friend bool operator==(const DynamicSliceAttrs&, const DynamicSliceAttrs&) = default;
};

/// reduce: the reduced dimensions. The body is the node's region, not an attribute.
struct ReduceAttrs {
  std::vector<std::int64_t> dimensions;
  friend bool operator==(const ReduceAttrs&, const ReduceAttrs&) = default;
};

/// dot_general: which dimensions are batch dimensions and which are contracted.
struct DotDimensionNumbers {
  std::vector<std::int64_t> lhs_batching_dimensions;
  std::vector<std::int64_t> rhs_batching_dimensions;
  std::vector<std::int64_t> lhs_contracting_dimensions;
  std::vector<std::int64_t> rhs_contracting_dimensions;
  friend bool operator==(const DotDimensionNumbers&, const DotDimensionNumbers&) = default;
};

/// The dot_general of batched matrix products [..., m, k] x [..., k, n], both of `rank` >= 2:
/// the leading rank - 2 dimensions are batch dimensions, the lhs's last dimension contracts
/// with the rhs's second to last.
inline DotDimensionNumbers matmul_dimensions(std::int64_t rank) {
  DotDimensionNumbers dn;
  for (std::int64_t d = 0; d < rank - 2; ++d) {
    dn.lhs_batching_dimensions.push_back(d);
    dn.rhs_batching_dimensions.push_back(d);
  }
  dn.lhs_contracting_dimensions = {rank - 1};
  dn.rhs_contracting_dimensions = {rank - 2};
  return dn;
}

/// scatter: how update elements map to result elements (the spec's scatter_dimension_numbers)
/// and the two promises the producer makes about the indices.
struct ScatterAttrs {
  std::vector<std::int64_t> update_window_dims;
  std::vector<std::int64_t> inserted_window_dims;
  std::vector<std::int64_t> input_batching_dims;
  std::vector<std::int64_t> scatter_indices_batching_dims;
  std::vector<std::int64_t> scatter_dims_to_operand_dims;
  std::int64_t index_vector_dim = 0;
  /// Promises only: the results never depend on them (every backend applies updates in
  /// index order and checks bounds regardless).
  bool indices_are_sorted = false;
  bool unique_indices = false;
  friend bool operator==(const ScatterAttrs&, const ScatterAttrs&) = default;
};

/// gather: which slices of the operand the start indices pick and how they lay out in the
/// result (the spec's dimension_numbers and slice_sizes).
struct GatherAttrs {
  std::vector<std::int64_t> offset_dims;
  std::vector<std::int64_t> collapsed_slice_dims;
  std::vector<std::int64_t> operand_batching_dims;
  std::vector<std::int64_t> start_indices_batching_dims;
  std::vector<std::int64_t> start_index_map;
  std::int64_t index_vector_dim = 0;
  std::vector<std::int64_t> slice_sizes;
  /// A promise only: results never depend on it.
  bool indices_are_sorted = false;
  friend bool operator==(const GatherAttrs&, const GatherAttrs&) = default;
};

/// reduce_window and select_and_scatter: the window's size, stride and dilation and the
/// input's dilation and edge padding, one entry per input dimension each (the builder fills
/// the defaults: strides and dilations 1, padding 0). select_and_scatter takes no dilations:
/// its base_dilations and window_dilations must be all 1.
struct WindowAttrs {
  // Initialized, so WindowAttrs{{2, 2}, {2, 2}} leaves the rest empty without a warning.
  std::vector<std::int64_t> window_dimensions = {};
  std::vector<std::int64_t> window_strides = {};
  std::vector<std::int64_t> base_dilations = {};
  std::vector<std::int64_t> window_dilations = {};
  std::vector<std::int64_t> padding_low = {};
  std::vector<std::int64_t> padding_high = {};
  friend bool operator==(const WindowAttrs&, const WindowAttrs&) = default;

  /// The attributes of a window of `window_dimensions` where each other list is empty or
  /// complete: empty lists get their defaults.
  [[nodiscard]] WindowAttrs with_defaults() const {
    WindowAttrs a = *this;
    const std::size_t rank = window_dimensions.size();
    auto fill = [rank](std::vector<std::int64_t>& v, std::int64_t value) {
      if (v.empty()) v.assign(rank, value);
    };
    fill(a.window_strides, 1);
    fill(a.base_dilations, 1);
    fill(a.window_dilations, 1);
    fill(a.padding_low, 0);
    fill(a.padding_high, 0);
    return a;
  }
};

/// convolution: how the operands' and the result's dimensions split into batch, feature and
/// spatial dimensions (the spec's dimension numbers), the window over the spatial dimensions
/// and the group counts. The window lists have one entry per spatial dimension (the builder
/// and the parser fill the defaults: strides and dilations 1, padding 0, no reversal);
/// `window_reversal` holds 0 (false) or 1 (true) per spatial dimension. precision_config is a
/// numerics hint only and is not kept, as for dot_general.
struct ConvolutionAttrs {
  std::vector<std::int64_t> window_strides = {};
  std::vector<std::int64_t> padding_low = {};
  std::vector<std::int64_t> padding_high = {};
  std::vector<std::int64_t> lhs_dilation = {};
  std::vector<std::int64_t> rhs_dilation = {};
  std::vector<std::int64_t> window_reversal = {};
  std::int64_t input_batch_dimension = 0;
  std::int64_t input_feature_dimension = 0;
  std::vector<std::int64_t> input_spatial_dimensions = {};
  std::int64_t kernel_input_feature_dimension = 0;
  std::int64_t kernel_output_feature_dimension = 0;
  std::vector<std::int64_t> kernel_spatial_dimensions = {};
  std::int64_t output_batch_dimension = 0;
  std::int64_t output_feature_dimension = 0;
  std::vector<std::int64_t> output_spatial_dimensions = {};
  std::int64_t feature_group_count = 1;
  std::int64_t batch_group_count = 1;
  friend bool operator==(const ConvolutionAttrs&, const ConvolutionAttrs&) = default;

  /// These attributes with each empty window list given its default, one entry per input
  /// spatial dimension.
  [[nodiscard]] ConvolutionAttrs with_defaults() const {
    ConvolutionAttrs a = *this;
    const std::size_t n = input_spatial_dimensions.size();
    auto fill = [n](std::vector<std::int64_t>& v, std::int64_t value) {
      if (v.empty()) v.assign(n, value);
    };
    fill(a.window_strides, 1);
    fill(a.padding_low, 0);
    fill(a.padding_high, 0);
    fill(a.lhs_dilation, 1);
    fill(a.rhs_dilation, 1);
    fill(a.window_reversal, 0);
    return a;
  }
};

/// The dimension numbers of a convolution as StableHLO writes them: `[b, 0, 1, f]x[o, i, 0,
/// 1]->[b, 0, 1, f]`, each list naming what each dimension of the lhs, the kernel and the
/// result is (b batch, f feature, i / o the kernel's input / output feature, digits the
/// spatial dimensions in order). A dimension that nothing names, or that is out of range,
/// prints as `?`.
inline std::string convolution_dimension_numbers_string(const ConvolutionAttrs& a) {
  const std::size_t rank = a.input_spatial_dimensions.size() + 2;
  auto one = [rank](std::int64_t first, char first_name, std::int64_t last, char last_name,
                    const std::vector<std::int64_t>& spatial) {
    std::vector<std::string> names(rank, "?");
    auto set = [&](std::int64_t d, std::string name) {
      if (d >= 0 && static_cast<std::size_t>(d) < rank) names[static_cast<std::size_t>(d)] = name;
    };
    set(first, std::string(1, first_name));
    for (std::size_t k = 0; k < spatial.size(); ++k) set(spatial[k], std::to_string(k));
    set(last, std::string(1, last_name));
    std::string out = "[";
    for (std::size_t d = 0; d < rank; ++d) out += (d ? ", " : "") + names[d];
    return out + "]";
  };
  return one(a.input_batch_dimension, 'b', a.input_feature_dimension, 'f',
             a.input_spatial_dimensions) +
         "x" +
         one(a.kernel_input_feature_dimension, 'i', a.kernel_output_feature_dimension, 'o',
             a.kernel_spatial_dimensions) +
         "->" +
         one(a.output_batch_dimension, 'b', a.output_feature_dimension, 'f',
             a.output_spatial_dimensions);
}

/// Reads dimension numbers written as convolution_dimension_numbers_string writes them (no
/// `?`) into `a`, leaving its window and group fields alone. INVALID_ARGUMENT saying what is
/// wrong for text that is not three lists of one rank, each naming its two special dimensions
/// once and the spatial dimensions 0, 1, ... once each.
inline Status parse_convolution_dimension_numbers(std::string_view text, ConvolutionAttrs& a) {
  std::size_t at = 0;
  auto skip_spaces = [&] {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n' || text[at] == '\t')) ++at;
  };
  auto fail = [&](std::string_view what) {
    return invalid_argument_error(str_cat("convolution dimension numbers '", text, "': ", what));
  };
  auto expect = [&](std::string_view token) {
    skip_spaces();
    if (text.substr(at, token.size()) != token) return false;
    at += token.size();
    return true;
  };
  // One list: `first` and `last` name the two special dimensions.
  auto list = [&](char first_name, char last_name, std::int64_t& first, std::int64_t& last,
                  std::vector<std::int64_t>& spatial, std::string_view what) -> Status {
    if (!expect("[")) return fail(str_cat("expected '[' to start the ", what, " dimensions"));
    std::vector<std::string> items;
    while (true) {
      skip_spaces();
      const std::size_t start = at;
      while (at < text.size() && text[at] != ',' && text[at] != ']' && text[at] != ' ') ++at;
      if (at == start) return fail(str_cat("expected a dimension name in the ", what, " list"));
      items.emplace_back(text.substr(start, at - start));
      if (expect("]")) break;
      if (!expect(",")) return fail(str_cat("expected ',' or ']' in the ", what, " list"));
    }
    if (items.size() < 2)
      return fail(str_cat("the ", what, " list names ", items.size(),
                          " dimension(s) but needs at least two"));
    const std::size_t n_spatial = items.size() - 2;
    first = last = -1;
    spatial.assign(n_spatial, -1);
    for (std::size_t d = 0; d < items.size(); ++d) {
      const std::string& item = items[d];
      const auto dim = static_cast<std::int64_t>(d);
      if (item.size() == 1 && (item[0] == first_name || item[0] == last_name)) {
        std::int64_t& slot = item[0] == first_name ? first : last;
        if (slot >= 0) return fail(str_cat("the ", what, " list names '", item, "' twice"));
        slot = dim;
        continue;
      }
      std::size_t k = 0;
      bool digits = !item.empty() && item.size() <= 9;
      for (char c : item) {
        digits = digits && c >= '0' && c <= '9';
        if (digits) k = k * 10 + static_cast<std::size_t>(c - '0');
      }
      if (!digits || k >= n_spatial)
        return fail(str_cat("'", item, "' in the ", what, " list is not '", first_name, "', '",
                            last_name, "' or a spatial dimension below ", n_spatial));
      if (spatial[k] >= 0)
        return fail(str_cat("the ", what, " list names spatial dimension ", k, " twice"));
      spatial[k] = dim;
    }
    if (first < 0 || last < 0)
      return fail(
          str_cat("the ", what, " list must name '", first_name, "' and '", last_name, "'"));
    return ok_status();
  };
  PJRT_LITE_RETURN_IF_ERROR(list('b', 'f', a.input_batch_dimension, a.input_feature_dimension,
                                 a.input_spatial_dimensions, "input"));
  if (!expect("x")) return fail("expected 'x' after the input dimensions");
  PJRT_LITE_RETURN_IF_ERROR(list('i', 'o', a.kernel_input_feature_dimension,
                                 a.kernel_output_feature_dimension, a.kernel_spatial_dimensions,
                                 "kernel"));
  if (!expect("->")) return fail("expected '->' after the kernel dimensions");
  PJRT_LITE_RETURN_IF_ERROR(list('b', 'f', a.output_batch_dimension, a.output_feature_dimension,
                                 a.output_spatial_dimensions, "output"));
  skip_spaces();
  if (at != text.size()) return fail("unexpected text after the output dimensions");
  if (a.kernel_spatial_dimensions.size() != a.input_spatial_dimensions.size() ||
      a.output_spatial_dimensions.size() != a.input_spatial_dimensions.size())
    return fail("the three lists must have one rank");
  return ok_status();
}

/// reduce_precision: the floating-point format each element is rounded to (round to nearest
/// even, overflow to infinity, underflow to zero) and back. The spec's si32 constants, held
/// as int64 like every other integer attribute; shape inference bounds them.
struct ReducePrecisionAttrs {
  std::int64_t exponent_bits = 0;
  std::int64_t mantissa_bits = 0;
  friend bool operator==(const ReducePrecisionAttrs&, const ReducePrecisionAttrs&) = default;
};

/// sort: the dimension sorted along (negative counts from the end, as the spec allows) and
/// whether equal elements keep their order. Both backends sort stably either way.
struct SortAttrs {
  std::int64_t dimension = 0;
  bool is_stable = false;
  friend bool operator==(const SortAttrs&, const SortAttrs&) = default;
};

/// The LAPACK routine a linalg node runs (jaxlib's CPU custom calls lapack_?<routine>_ffi).
/// The element type comes from the operands, as the s/d/c/z letter does in the target name.
enum class LinalgRoutine : std::uint8_t {
  kGetrf,  // LU with partial pivoting: lu, 1-based int32 pivots, info
  kPotrf,  // Cholesky: the factor in the `uplo` triangle (the other left as it was), info
  kGeqrf,  // QR: R above the diagonal, Householder vectors below, tau
  kOrgqr,  // (ungqr) the first n columns of Q = H(1) ... H(k) from geqrf's output and tau
  kGesdd,  // SVD by divide and conquer: the overwritten input, s, u, vt, info
  kGesvd,  // SVD by QR iteration: the same operands and results as gesdd
  kSyevd,  // (heevd) Hermitian eigendecomposition: eigenvectors, ascending eigenvalues, info
  kTrsm,   // triangular solve of b, in place
  kGehrd,  // Hessenberg reduction: H and the reflectors below its subdiagonal, tau, info
  kSytrd,  // (hetrd) tridiagonal reduction: reflectors, the diagonal, the off-diagonal, tau, info
  kGtsv,   // tridiagonal solve (dl, d, du, b): the factored diagonals, the solution, info
  kOrmqr,  // (unmqr) op(Q) c or c op(Q) with Q from geqrf's reflectors
  kGeqp3,  // QR with column pivoting: R and reflectors, 1-based int32 column order, tau
  kGeev,   // eigenvalues and left and right eigenvectors of a general matrix, info
  kGees,   // Schur form, Schur vectors, eigenvalues (wr, wi when real), sdim, info
};

namespace detail {
inline constexpr std::array<std::string_view, 15> kLinalgRoutineNames = {
    "getrf", "potrf", "geqrf", "orgqr", "gesdd", "gesvd", "syevd", "trsm",
    "gehrd", "sytrd", "gtsv",  "ormqr", "geqp3", "geev",  "gees"};
}  // namespace detail

/// "getrf", "potrf", ...: the routine's real-type name (orgqr, syevd), as in sgetrf.
constexpr std::string_view linalg_routine_name(LinalgRoutine r) {
  return detail::enum_name(detail::kLinalgRoutineNames, r);
}

/// How many results jaxlib's kernel for `r` has on a real or a `complex` element type.
constexpr std::size_t linalg_result_count(LinalgRoutine r, bool complex) {
  switch (r) {
    case LinalgRoutine::kGeev: return complex ? 4 : 5;
    case LinalgRoutine::kGees: return complex ? 5 : 6;
    case LinalgRoutine::kGeqp3: return 3;
    case LinalgRoutine::kGetrf:
    case LinalgRoutine::kSyevd:
    case LinalgRoutine::kGehrd: return 3;
    case LinalgRoutine::kPotrf:
    case LinalgRoutine::kGeqrf: return 2;
    case LinalgRoutine::kGesdd:
    case LinalgRoutine::kGesvd:
    case LinalgRoutine::kSytrd:
    case LinalgRoutine::kGtsv: return 5;
    default: return 1;
  }
}

/// linalg: one of jaxlib's LAPACK custom calls, with LAPACK's character flags as jaxlib
/// passes them (`uplo = 76 : ui8` is 'L'). Only the flags of the routine are read; the others
/// keep their defaults. The operands, results and conventions of each routine are those of
/// jaxlib's CPU kernels (docs/ops.md, "Linear algebra custom calls").
struct LinalgAttrs {
  LinalgRoutine routine = LinalgRoutine::kGetrf;
  std::int64_t uplo = 'L';   // potrf, syevd, trsm, sytrd: 'L' or 'U'
  std::int64_t mode = 'A';   // gesdd, gesvd: 'A', 'S' or 'N'; syevd, gees: 'V' or 'N'
  bool full_matrices = true; // gesdd, gesvd with mode 'N': the shapes of the unused u and vt
  std::int64_t side = 'L';   // trsm: 'L' (op(a) x = b) or 'R' (x op(a) = b)
  std::int64_t trans = 'N';  // trsm: 'N', 'T' or 'C'
  std::int64_t diag = 'N';   // trsm: 'N' or 'U' (unit diagonal)
  std::int64_t low = 1;      // gehrd: ilo and ihi, 1-based (jax passes 1 and n)
  std::int64_t high = 0;
  bool left = true;          // ormqr: op(Q) c, or c op(Q)
  bool transpose = false;    // ormqr: op(Q) is Q^T (Q^H for complex) rather than Q
  std::int64_t compute_left = 'N';   // geev: 'V' or 'N', the left eigenvectors
  std::int64_t compute_right = 'N';  // geev: 'V' or 'N', the right eigenvectors
  std::int64_t sort = 'N';   // gees: 'N' (sorting by a select function is not supported)
  friend bool operator==(const LinalgAttrs&, const LinalgAttrs&) = default;
};

/// top_k: how many of the largest elements along the last dimension.
struct TopKAttrs {
  std::int64_t k = 0;
  friend bool operator==(const TopKAttrs&, const TopKAttrs&) = default;
};

/// The collectives' attributes (all_reduce .. collective_broadcast), each op reading its own:
/// which processes meet (the spec's process groups) and how the data splits. Lists of lists
/// are stored flat, row-major, with the length of a row beside them.
struct CollectiveAttrs {
  /// The spec's replica_groups (all but collective_permute) or source_target_pairs
  /// (collective_permute, rows of two): `groups.size() / group_size` rows. Empty (group_size
  /// 0) means one group of every replica (or partition, or process, by the mode below).
  /// all_reduce's rows may be of different sizes, padded at their end with -1 (StableHLO's
  /// dense form of ragged groups); every other op's ids are all >= 0.
  std::vector<std::int64_t> groups = {};
  std::int64_t group_size = 0;
  /// channel_handle's handle and type. A handle above 0 makes the groups cross-partition
  /// (all_to_all, collective_permute, collective_broadcast) or cross-replica-and-partition.
  std::int64_t channel_id = 0;
  std::int64_t channel_type = 0;
  /// With channel_id > 0: the groups list flattened process ids (replica * num_partitions +
  /// partition). all_reduce, all_gather, reduce_scatter only.
  bool use_global_device_ids = false;
  /// all_gather_dim (all_gather), scatter_dimension (reduce_scatter), split_dimension
  /// (all_to_all).
  std::int64_t dimension = 0;
  /// all_to_all only.
  std::int64_t concat_dimension = 0;
  std::int64_t split_count = 0;
  /// all_gather and reduce_scatter in cross_replica_and_partition mode (channel_id > 0
  /// without use_global_device_ids): the grid's partitions, which the process group spans
  /// (a replica_groups row times num_partitions processes), so the result's size depends on
  /// it. A backend refuses a grid of other partitions. 1 for every other op and mode.
  std::int64_t num_partitions = 1;
  /// collective_broadcast: the last operand is an s32[N] of roots, result j coming from the
  /// group member at position root[j] (N results for N + 1 operands); else the group's first.
  bool has_dynamic_root = false;
  friend bool operator==(const CollectiveAttrs&, const CollectiveAttrs&) = default;

  /// Row `r` of `groups`, -1 padding included.
  [[nodiscard]] std::span<const std::int64_t> group(std::size_t r) const {
    return std::span<const std::int64_t>(groups).subspan(r * static_cast<std::size_t>(group_size),
                                                         static_cast<std::size_t>(group_size));
  }
  /// Row `r` of `groups` without its -1 padding.
  [[nodiscard]] std::vector<std::int64_t> group_ids(std::size_t r) const {
    std::vector<std::int64_t> ids;
    for (std::int64_t id : group(r))
      if (id >= 0) ids.push_back(id);
    return ids;
  }
  [[nodiscard]] std::size_t group_count() const {
    return group_size > 0 ? groups.size() / static_cast<std::size_t>(group_size) : 0;
  }
};

/// send, recv, infeed and outfeed (after_all has none): where the data goes or comes from.
struct ChannelAttrs {
  /// channel_handle's handle and type (send and recv; 0 for the feeds). Type 1 is
  /// device-to-device, 2 device-to-host, 3 host-to-device.
  std::int64_t channel_id = 0;
  std::int64_t channel_type = 0;
  bool is_host_transfer = false;
  /// send and recv: the spec's source_target_pairs, stored flat in rows of two (replica ids
  /// when channel_id <= 0, partition ids otherwise, as collective_permute's). Empty: a recv
  /// takes what any process sent on the channel, first sent first taken.
  std::vector<std::int64_t> source_target_pairs = {};
  /// infeed_config or outfeed_config: implementation-defined, kept and printed, not read.
  std::string config = {};
  /// recv and infeed: the types of the data they produce (the results before the token).
  std::vector<Shape> payload = {};
  friend bool operator==(const ChannelAttrs&, const ChannelAttrs&) = default;
};

/// The attributes of one node. The alternative's index is part of the fingerprint: append new
/// alternatives at the end.
using Attributes =
    std::variant<NoAttrs, ParameterAttrs, ConstantAttrs, IotaAttrs, CompareAttrs, ConvertAttrs,
                 BroadcastInDimAttrs, ReshapeAttrs, TransposeAttrs, SliceAttrs, ConcatenateAttrs,
                 PadAttrs, ReverseAttrs, DynamicSliceAttrs, ReduceAttrs, DotDimensionNumbers,
                 ScatterAttrs, GatherAttrs, WindowAttrs, ConvolutionAttrs, ReducePrecisionAttrs,
                 SortAttrs, TopKAttrs, FftAttrs, TriangularSolveAttrs, RngBitGeneratorAttrs,
                 LinalgAttrs, CollectiveAttrs, ChannelAttrs>;

namespace detail {
template <class A, class... Ts>
constexpr std::size_t alternative_index(std::variant<Ts...>*) {
  std::size_t i = 0;
  (void)((std::is_same_v<A, Ts> ? false : (++i, true)) && ...);
  return i;
}
}  // namespace detail

/// The index in Attributes of alternative A.
template <class A>
inline constexpr std::size_t kAttributesIndex =
    detail::alternative_index<A>(static_cast<Attributes*>(nullptr));

/// The C++ name of the alternative `attrs` holds, for error messages: "SliceAttrs".
constexpr std::string_view attributes_name(std::size_t index) {
  constexpr std::array<std::string_view, std::variant_size_v<Attributes>> names = {
      "NoAttrs",
      "ParameterAttrs",
      "ConstantAttrs",
      "IotaAttrs",
      "CompareAttrs",
      "ConvertAttrs",
      "BroadcastInDimAttrs",
      "ReshapeAttrs",
      "TransposeAttrs",
      "SliceAttrs",
      "ConcatenateAttrs",
      "PadAttrs",
      "ReverseAttrs",
      "DynamicSliceAttrs",
      "ReduceAttrs",
      "DotDimensionNumbers",
      "ScatterAttrs",
      "GatherAttrs",
      "WindowAttrs",
      "ConvolutionAttrs",
      "ReducePrecisionAttrs",
      "SortAttrs",
      "TopKAttrs",
      "FftAttrs",
      "TriangularSolveAttrs",
      "RngBitGeneratorAttrs",
      "LinalgAttrs",
      "CollectiveAttrs",
      "ChannelAttrs"};
  return index < names.size() ? names[index] : std::string_view("invalid");
}

/// The index in Attributes of the alternative that `op` takes.
constexpr std::size_t attributes_index_for(OpCode op) {
  switch (op) {
    case OpCode::kParameter: return kAttributesIndex<ParameterAttrs>;
    case OpCode::kConstant: return kAttributesIndex<ConstantAttrs>;
    case OpCode::kIota: return kAttributesIndex<IotaAttrs>;
    case OpCode::kCompare: return kAttributesIndex<CompareAttrs>;
    case OpCode::kConvert:
    case OpCode::kBitcastConvert: return kAttributesIndex<ConvertAttrs>;
    case OpCode::kBroadcastInDim: return kAttributesIndex<BroadcastInDimAttrs>;
    case OpCode::kReshape: return kAttributesIndex<ReshapeAttrs>;
    case OpCode::kTranspose: return kAttributesIndex<TransposeAttrs>;
    case OpCode::kSlice: return kAttributesIndex<SliceAttrs>;
    case OpCode::kConcatenate: return kAttributesIndex<ConcatenateAttrs>;
    case OpCode::kPad: return kAttributesIndex<PadAttrs>;
    case OpCode::kReverse: return kAttributesIndex<ReverseAttrs>;
    case OpCode::kDynamicSlice: return kAttributesIndex<DynamicSliceAttrs>;
    case OpCode::kReduce: return kAttributesIndex<ReduceAttrs>;
    case OpCode::kDotGeneral: return kAttributesIndex<DotDimensionNumbers>;
    case OpCode::kScatter: return kAttributesIndex<ScatterAttrs>;
    case OpCode::kGather: return kAttributesIndex<GatherAttrs>;
    case OpCode::kReduceWindow:
    case OpCode::kSelectAndScatter: return kAttributesIndex<WindowAttrs>;
    case OpCode::kConvolution: return kAttributesIndex<ConvolutionAttrs>;
    case OpCode::kReducePrecision: return kAttributesIndex<ReducePrecisionAttrs>;
    case OpCode::kSort: return kAttributesIndex<SortAttrs>;
    case OpCode::kTopK: return kAttributesIndex<TopKAttrs>;
    case OpCode::kFft: return kAttributesIndex<FftAttrs>;
    case OpCode::kTriangularSolve: return kAttributesIndex<TriangularSolveAttrs>;
    case OpCode::kRngBitGenerator: return kAttributesIndex<RngBitGeneratorAttrs>;
    case OpCode::kLinalg: return kAttributesIndex<LinalgAttrs>;
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kReduceScatter:
    case OpCode::kAllToAll:
    case OpCode::kCollectivePermute:
    case OpCode::kCollectiveBroadcast: return kAttributesIndex<CollectiveAttrs>;
    case OpCode::kSend:
    case OpCode::kRecv:
    case OpCode::kInfeed:
    case OpCode::kOutfeed: return kAttributesIndex<ChannelAttrs>;
    default: return kAttributesIndex<NoAttrs>;
  }
}

/// True when `attrs` holds the alternative that `op` takes.
constexpr bool attributes_fit(OpCode op, const Attributes& attrs) {
  return attrs.index() == attributes_index_for(op);
}

}  // namespace pjrt_lite
