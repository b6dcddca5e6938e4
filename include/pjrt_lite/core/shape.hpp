#pragma once
// The type of an array: dtype, dimensions and the physical order of those dimensions.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

/// Dimensions and dtype of a dense array, with a layout given as a major-to-minor permutation
/// of the dimensions: {0, 1, ..., rank-1} (the default) is row-major, {rank-1, ..., 0} is
/// column-major. Immutable after construction; a value type, thread-compatible.
class Shape {
 public:
  /// An invalid shape (dtype kInvalid, rank 0).
  Shape() = default;
  /// A shape with the default row-major layout. For values known to be good (dims >= 0,
  /// valid dtype); anything from outside the program goes through make().
  Shape(DType dtype, std::vector<std::int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
    major_to_minor_.resize(dims_.size());
    std::iota(major_to_minor_.begin(), major_to_minor_.end(), std::int64_t{0});
  }
  Shape(DType dtype, std::initializer_list<std::int64_t> dims)
      : Shape(dtype, std::vector<std::int64_t>(dims)) {}

  /// Validates what a user gave: a valid dtype, non-negative dims, a byte size that fits in
  /// int64, and (if not empty) a layout that is a permutation of the dimensions.
  static StatusOr<Shape> make(DType dtype, std::span<const std::int64_t> dims,
                              std::span<const std::int64_t> major_to_minor = {}) {
    if (!is_valid(dtype))
      return invalid_argument_error(str_cat("invalid dtype (enum value ",
                                            static_cast<int>(dtype), ")"));
    if (is_token(dtype) && !dims.empty())
      return invalid_argument_error(str_cat("a token has no dimensions; got token", dims_string(dims)));
    // The product of the non-zero dims must fit too: strides and index arithmetic use it
    // even when a zero dim makes the array empty.
    std::int64_t count = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0)
        return invalid_argument_error(str_cat("dimension ", i, " is negative (", dims[i], ")"));
      if (dims[i] == 0) continue;
      if (count > std::numeric_limits<std::int64_t>::max() /
                      static_cast<std::int64_t>(pjrt_lite::byte_size(dtype)) / dims[i])
        return invalid_argument_error(str_cat("shape ", dtype_name(dtype), dims_string(dims),
                                              " is too large: its byte size overflows int64"));
      count *= dims[i];
    }
    Shape shape(dtype, std::vector<std::int64_t>(dims.begin(), dims.end()));
    if (!major_to_minor.empty()) {
      if (major_to_minor.size() != dims.size())
        return invalid_argument_error(str_cat("layout has ", major_to_minor.size(),
                                              " entries for a rank-", dims.size(), " shape"));
      std::vector<bool> seen(dims.size(), false);
      for (std::int64_t d : major_to_minor) {
        if (d < 0 || d >= static_cast<std::int64_t>(dims.size()) || seen[d])
          return invalid_argument_error(str_cat("layout ", dims_string(major_to_minor),
                                                " is not a permutation of 0..", dims.size() - 1));
        seen[d] = true;
      }
      shape.major_to_minor_.assign(major_to_minor.begin(), major_to_minor.end());
    }
    return shape;
  }

  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] std::int64_t rank() const { return static_cast<std::int64_t>(dims_.size()); }
  [[nodiscard]] std::span<const std::int64_t> dims() const { return dims_; }
  [[nodiscard]] std::int64_t dim(std::int64_t i) const { return dims_[i]; }
  /// The dimensions from the slowest-varying to the fastest-varying in memory.
  [[nodiscard]] std::span<const std::int64_t> major_to_minor() const { return major_to_minor_; }
  [[nodiscard]] bool has_default_layout() const {
    for (std::size_t i = 0; i < major_to_minor_.size(); ++i)
      if (major_to_minor_[i] != static_cast<std::int64_t>(i)) return false;
    return true;
  }
  [[nodiscard]] bool is_scalar() const { return dims_.empty(); }
  [[nodiscard]] std::int64_t element_count() const {
    std::int64_t n = 1;
    for (std::int64_t d : dims_) n *= d;
    return n;
  }
  [[nodiscard]] std::int64_t byte_size() const {
    return element_count() * static_cast<std::int64_t>(pjrt_lite::byte_size(dtype_));
  }
  /// The distance in bytes between neighbours along each dimension, for this layout.
  [[nodiscard]] std::vector<std::int64_t> byte_strides() const {
    std::vector<std::int64_t> strides(dims_.size());
    std::int64_t stride = static_cast<std::int64_t>(pjrt_lite::byte_size(dtype_));
    for (std::size_t i = major_to_minor_.size(); i-- > 0;) {
      strides[major_to_minor_[i]] = stride;
      stride *= dims_[major_to_minor_[i]];
    }
    return strides;
  }
  /// The same dtype and dims in the default layout.
  [[nodiscard]] Shape with_default_layout() const { return Shape(dtype_, dims_); }
  /// True when dtype and dims agree, whatever the layouts.
  [[nodiscard]] bool same_type_and_dims(const Shape& other) const {
    return dtype_ == other.dtype_ && dims_ == other.dims_;
  }

  /// "f32[2,3]"; a non-default layout follows in braces as major-to-minor: "f32[2,3]{1,0}".
  [[nodiscard]] std::string to_string() const {
    std::string s = str_cat(dtype_name(dtype_), dims_string(dims_));
    if (!has_default_layout()) {
      s += '{';
      for (std::size_t i = 0; i < major_to_minor_.size(); ++i)
        s += str_cat(i ? "," : "", major_to_minor_[i]);
      s += '}';
    }
    return s;
  }

  friend bool operator==(const Shape&, const Shape&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

  /// "[2,3]".
  static std::string dims_string(std::span<const std::int64_t> dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += str_cat(i ? "," : "", dims[i]);
    return s + "]";
  }

 private:
  DType dtype_ = DType::kInvalid;
  std::vector<std::int64_t> dims_;
  std::vector<std::int64_t> major_to_minor_;
};

/// The order of `shape`'s dimensions from minor to major, as PJRT's layouts state it
/// ({1, 0} for a row-major matrix): its major-to-minor layout reversed.
inline std::vector<std::int64_t> minor_to_major(const Shape& shape) {
  const std::span<const std::int64_t> m = shape.major_to_minor();
  return std::vector<std::int64_t>(m.rbegin(), m.rend());
}

/// `shape` in the layout `minor_to_major` (PJRT's order, minor first; empty: row-major).
/// INVALID_ARGUMENT, naming `what`, unless it orders each of the dimensions once.
inline StatusOr<Shape> with_minor_to_major(const Shape& shape, std::span<const std::int64_t> minor_to_major,
                                           std::string_view what = "layout") {
  if (minor_to_major.empty()) return shape.with_default_layout();
  const auto rank = static_cast<std::size_t>(shape.rank());
  std::vector<bool> seen(rank, false);
  bool order = minor_to_major.size() == rank;
  for (std::size_t i = 0; order && i < minor_to_major.size(); ++i) {
    const std::int64_t d = minor_to_major[i];
    order = d >= 0 && d < shape.rank() && !seen[static_cast<std::size_t>(d)];
    if (order) seen[static_cast<std::size_t>(d)] = true;
  }
  if (!order)
    return invalid_argument_error(str_cat(what, ": minor-to-major ", Shape::dims_string(minor_to_major),
                                          " is not an order of the ", rank, " dimensions of ", shape));
  const std::vector<std::int64_t> major(minor_to_major.rbegin(), minor_to_major.rend());
  return Shape::make(shape.dtype(), shape.dims(), major);
}

}  // namespace pjrt_lite
