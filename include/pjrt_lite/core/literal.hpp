#pragma once
// Literal: an owning, dense host array with typed element access, equality and printing.

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/core/assert.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1 {

/// Host allocations are aligned for the widest SIMD packet Eigen uses.
inline constexpr std::size_t kHostAlignment = 64;

namespace detail {
struct AlignedDelete {
  void operator()(std::byte* p) const noexcept {
    ::operator delete[](p, std::align_val_t{kHostAlignment});
  }
};
using AlignedBytes = std::unique_ptr<std::byte[], AlignedDelete>;
/// `n` bytes aligned to kHostAlignment, or null when n is 0 or the memory cannot be had
/// (never throws, never aborts): callers that size memory from their input check for null.
inline AlignedBytes allocate_aligned(std::size_t n) {
  if (n == 0) return nullptr;
  return AlignedBytes(
      static_cast<std::byte*>(::operator new[](n, std::align_val_t{kHostAlignment}, std::nothrow)));
}

/// Whether `n` bytes could be allocated right now: allocates them and frees them at once
/// (without touching them, so this costs no more than the allocator's bookkeeping). For
/// checking a size that comes from input before committing to work that needs it.
inline bool can_allocate(std::size_t n) { return n == 0 || allocate_aligned(n) != nullptr; }

/// RESOURCE_EXHAUSTED for `bytes` that could not be allocated for `what`.
inline Status allocation_error(std::string_view what, std::size_t bytes) {
  return resource_exhausted_error(str_cat(what, ": cannot allocate ", bytes, " bytes"));
}

/// Reports a failed Literal::data<T>() check and aborts (release builds included).
[[noreturn]] inline void wrong_element_type(DType asked, DType held) {
  std::fprintf(stderr,
               "pjrt_lite: Literal::data<T>() with T = %.*s on a literal of dtype %.*s: the "
               "element type must be the literal's (convert() it first)\n",
               static_cast<int>(dtype_name(asked).size()), dtype_name(asked).data(),
               static_cast<int>(dtype_name(held).size()), dtype_name(held).data());
  std::abort();
}

/// Reports memory that the unchecked Literal constructor could not allocate and aborts.
[[noreturn]] inline void literal_out_of_memory(const Shape& shape) {
  std::fprintf(stderr,
               "pjrt_lite: out of memory creating a literal of %s (%lld bytes); use "
               "Literal::create for a RESOURCE_EXHAUSTED status instead\n",
               shape.to_string().c_str(), static_cast<long long>(shape.byte_size()));
  std::abort();
}

/// Appends a real floating-point element (f16 and bf16 through float) as the shortest
/// decimal that reads back to the same value: "1", "0.1", "-0", "inf", "nan".
struct AppendShortestReal {
  template <class T>
  void operator()(std::string& out, T x) const {
    char buf[64];
    std::to_chars_result r;
    if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
      r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(x));
    else
      r = std::to_chars(buf, buf + sizeof buf, x);
    out.append(buf, r.ptr);
  }
};

/// Appends one element as text: true/false for pred, decimal for integers, (re, im) for
/// complex, and each real floating-point value through `append_real(out, x)`: by default the
/// shortest round-trip decimal; a text format with rules of its own for floats (StableHLO's
/// dense literals) passes its own.
template <class T, class AppendReal = AppendShortestReal>
void append_element(std::string& out, T x, AppendReal append_real = {}) {
  if constexpr (std::is_same_v<T, bool>) {
    out += x ? "true" : "false";
  } else if constexpr (is_complex_v<T>) {
    out += '(';
    append_real(out, x.real());
    out += ", ";
    append_real(out, x.imag());
    out += ')';
  } else if constexpr (is_float_v<T>) {
    append_real(out, x);
  } else {
    char buf[32];
    std::to_chars_result r;
    if constexpr (std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t>)
      r = std::to_chars(buf, buf + sizeof buf, static_cast<int>(x));
    else
      r = std::to_chars(buf, buf + sizeof buf, x);
    out.append(buf, r.ptr);
  }
}
}  // namespace detail

/// An owning host array of a Shape (dense, in the shape's layout, 64-byte aligned, zeroed on
/// creation). Copying copies the elements. Thread-compatible.
class Literal {
 public:
  /// An empty literal with an invalid shape.
  Literal() = default;
  /// Zero-filled storage for `shape`, which must be valid (see Shape::make), for sizes the
  /// program trusts: if the memory cannot be had it aborts with a message naming the shape.
  /// Sizes that come from input (a parsed program, a file, a user) go through create().
  explicit Literal(Shape shape)
      : shape_(std::move(shape)),
        bytes_(detail::allocate_aligned(static_cast<std::size_t>(shape_.byte_size()))) {
    if (!bytes_ && size_bytes() > 0) detail::literal_out_of_memory(shape_);
    if (bytes_) std::memset(bytes_.get(), 0, size_bytes());
  }
  /// A zero-filled literal of `shape` (validated as Shape::make does): INVALID_ARGUMENT for a
  /// bad shape, RESOURCE_EXHAUSTED naming the shape and its byte size when the memory cannot
  /// be had. Never aborts.
  static StatusOr<Literal> create(const Shape& shape) {
    StatusOr<Shape> checked = Shape::make(shape.dtype(), shape.dims(), shape.major_to_minor());
    if (!checked.ok()) return checked.status().with_context("Literal::create");
    const auto bytes = static_cast<std::size_t>(checked->byte_size());
    detail::AlignedBytes storage = detail::allocate_aligned(bytes);
    if (!storage && bytes > 0)
      return detail::allocation_error(str_cat("Literal::create: a literal of ", *checked), bytes);
    if (storage) std::memset(storage.get(), 0, bytes);
    return Literal(std::move(checked).value(), std::move(storage));
  }
  Literal(const Literal& other) : Literal(other.shape_) {
    if (size_bytes()) std::memcpy(bytes_.get(), other.bytes_.get(), size_bytes());
  }
  Literal& operator=(const Literal& other) {
    if (this != &other) *this = Literal(other);
    return *this;
  }
  Literal(Literal&&) noexcept = default;
  Literal& operator=(Literal&&) noexcept = default;

  /// A rank-0 literal holding `value`.
  template <Element T>
  static Literal scalar(T value) {
    Literal lit(Shape(dtype_of<T>, {}));
    lit.data<T>()[0] = value;
    return lit;
  }
  /// A rank-1 literal of `values`.
  template <Element T>
  static Literal vector(std::initializer_list<T> values) {
    return from_span<T>(std::span<const T>(values.begin(), values.size()),
                        {static_cast<std::int64_t>(values.size())})
        .value();
  }
  /// A literal of `dims` (row-major) holding `values`; their count must match.
  template <Element T>
  static StatusOr<Literal> from_span(std::span<const T> values, std::span<const std::int64_t> dims) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape shape, Shape::make(dtype_of<T>, dims));
    if (shape.element_count() != static_cast<std::int64_t>(values.size()))
      return invalid_argument_error(str_cat(values.size(), " values given for shape ", shape,
                                            " of ", shape.element_count(), " elements"));
    PJRT_LITE_ASSIGN_OR_RETURN(Literal lit, create(shape));
    if (!values.empty()) std::memcpy(lit.untyped_data(), values.data(), lit.size_bytes());
    return lit;
  }
  template <Element T>
  static StatusOr<Literal> from_span(std::span<const T> values, std::initializer_list<std::int64_t> dims) {
    return from_span<T>(values, std::span<const std::int64_t>(dims.begin(), dims.size()));
  }
  /// A literal of `shape` whose bytes (in the shape's layout) are copied from `bytes`.
  static StatusOr<Literal> from_bytes(const Shape& shape, std::span<const std::byte> bytes) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape checked,
                               Shape::make(shape.dtype(), shape.dims(), shape.major_to_minor()));
    if (static_cast<std::int64_t>(bytes.size()) != checked.byte_size())
      return invalid_argument_error(str_cat(bytes.size(), " bytes given for shape ", checked,
                                            " of ", checked.byte_size(), " bytes"));
    PJRT_LITE_ASSIGN_OR_RETURN(Literal lit, create(checked));
    if (!bytes.empty()) std::memcpy(lit.untyped_data(), bytes.data(), bytes.size());
    return lit;
  }

  [[nodiscard]] const Shape& shape() const { return shape_; }
  [[nodiscard]] DType dtype() const { return shape_.dtype(); }
  [[nodiscard]] std::span<const std::int64_t> dims() const { return shape_.dims(); }
  [[nodiscard]] std::int64_t element_count() const { return shape_.element_count(); }
  [[nodiscard]] std::size_t size_bytes() const { return static_cast<std::size_t>(shape_.byte_size()); }
  [[nodiscard]] void* untyped_data() { return bytes_.get(); }
  [[nodiscard]] const void* untyped_data() const { return bytes_.get(); }
  [[nodiscard]] std::span<std::byte> bytes() { return {bytes_.get(), size_bytes()}; }
  [[nodiscard]] std::span<const std::byte> bytes() const { return {bytes_.get(), size_bytes()}; }

  /// The elements in memory order. T must be the literal's element type: another T is a
  /// programming error that aborts with a message naming both types, in release builds too
  /// (as XLA's Literal::data CHECKs), since reading the bytes as the wrong type would give
  /// wrong values or read past the end. Test `dtype() == dtype_of<T>` first when unsure.
  template <Element T>
  [[nodiscard]] std::span<T> data() {
    if (dtype_of<T> != dtype()) [[unlikely]] detail::wrong_element_type(dtype_of<T>, dtype());
    return {reinterpret_cast<T*>(bytes_.get()), static_cast<std::size_t>(element_count())};
  }
  template <Element T>
  [[nodiscard]] std::span<const T> data() const {
    if (dtype_of<T> != dtype()) [[unlikely]] detail::wrong_element_type(dtype_of<T>, dtype());
    return {reinterpret_cast<const T*>(bytes_.get()), static_cast<std::size_t>(element_count())};
  }

  /// The stored bytes of a literal of a narrow dtype, one per element in memory order (the
  /// value in the low bits; see DType). Another dtype is a programming error that aborts, as
  /// for data<T>(). To build one from values, convert a wide literal: values of f32 or s32
  /// round or wrap as convert does.
  [[nodiscard]] std::span<std::uint8_t> narrow_bits() {
    if (!is_narrow(dtype())) [[unlikely]] detail::wrong_element_type(DType::kU4, dtype());
    return {reinterpret_cast<std::uint8_t*>(bytes_.get()), static_cast<std::size_t>(element_count())};
  }
  [[nodiscard]] std::span<const std::uint8_t> narrow_bits() const {
    if (!is_narrow(dtype())) [[unlikely]] detail::wrong_element_type(DType::kU4, dtype());
    return {reinterpret_cast<const std::uint8_t*>(bytes_.get()), static_cast<std::size_t>(element_count())};
  }

  /// The element at a multi-index (one entry per dimension, each in range).
  template <Element T>
  [[nodiscard]] T get(std::span<const std::int64_t> index) const {
    return data<T>()[linear_index(index)];
  }
  template <Element T>
  [[nodiscard]] T get(std::initializer_list<std::int64_t> index) const {
    return get<T>(std::span<const std::int64_t>(index.begin(), index.size()));
  }
  template <Element T>
  void set(std::span<const std::int64_t> index, T value) {
    data<T>()[linear_index(index)] = value;
  }
  template <Element T>
  void set(std::initializer_list<std::int64_t> index, T value) {
    set<T>(std::span<const std::int64_t>(index.begin(), index.size()), value);
  }

  /// The position in memory order of a multi-index.
  [[nodiscard]] std::int64_t linear_index(std::span<const std::int64_t> index) const {
    PJRT_LITE_ASSERT(static_cast<std::int64_t>(index.size()) == shape_.rank(),
                     "Literal index has the wrong rank");
    std::int64_t linear = 0;
    for (std::int64_t d : shape_.major_to_minor()) {
      PJRT_LITE_ASSERT(index[d] >= 0 && index[d] < shape_.dim(d), "Literal index out of range");
      linear = linear * shape_.dim(d) + index[d];
    }
    return linear;
  }

  /// The same values converted to `to` (StableHLO convert semantics), same dims and layout.
  [[nodiscard]] StatusOr<Literal> convert(DType to) const {
    if (!is_valid(to))
      return invalid_argument_error(str_cat("cannot convert a literal to invalid dtype ",
                                            static_cast<int>(to)));
    if (is_token(to) != is_token(dtype()))
      return invalid_argument_error(str_cat("cannot convert ", shape_, " to ", dtype_name(to),
                                            ": a token converts to nothing else"));
    if (is_token(to)) return *this;
    PJRT_LITE_ASSIGN_OR_RETURN(Shape shape,
                               Shape::make(to, shape_.dims(), shape_.major_to_minor()));
    PJRT_LITE_ASSIGN_OR_RETURN(Literal out, create(shape));
    if (element_count() > 0)
      convert_elements(untyped_data(), dtype(), out.untyped_data(), to, element_count());
    return out;
  }

  /// The same values in the default row-major layout.
  [[nodiscard]] Literal with_default_layout() const {
    if (shape_.has_default_layout()) return *this;
    Literal out(shape_.with_default_layout());
    const std::size_t elem = pjrt_lite::byte_size(dtype());
    std::vector<std::int64_t> index(static_cast<std::size_t>(shape_.rank()), 0);
    for (std::int64_t i = 0; i < element_count(); ++i) {
      std::memcpy(out.bytes_.get() + i * elem, bytes_.get() + linear_index(index) * elem, elem);
      for (std::int64_t d = shape_.rank() - 1; d >= 0 && ++index[d] == shape_.dim(d); --d)
        index[d] = 0;
    }
    return out;
  }

  /// Same shape (layout included) and the same bytes: NaNs with equal bits are equal, and
  /// 0.0 differs from -0.0. For tolerances compare element-wise.
  friend bool operator==(const Literal& a, const Literal& b) {
    return a.shape_ == b.shape_ &&
           (a.size_bytes() == 0 || std::memcmp(a.bytes_.get(), b.bytes_.get(), a.size_bytes()) == 0);
  }

  /// "f32[2,2] {{1, 2}, {3, 4}}", "s32[] 7", "pred[0] {}", "token[]".
  [[nodiscard]] std::string to_string() const {
    if (!is_valid(dtype())) return "<invalid literal>";
    if (is_token(dtype())) return shape_.to_string();  // "token[]": no value
    std::string out = shape_.to_string();
    out += ' ';
    // A narrow type prints its values, read through the type it computes in.
    const Literal wide = is_narrow(dtype()) ? *convert(wide_dtype(dtype())) : Literal();
    const Literal& shown = is_narrow(dtype()) ? wide : *this;
    visit_dtype(shown.dtype(), [&]<class T>(std::type_identity<T>) {
      Literal dense = shown.with_default_layout();
      std::span<const T> v = dense.data<T>();
      if (shape_.rank() == 0) {
        detail::append_element(out, v[0]);
        return;
      }
      std::size_t next = 0;
      shown.append_nested<T>(out, v, 0, next);
    });
    return out;
  }
  friend std::ostream& operator<<(std::ostream& os, const Literal& l) { return os << l.to_string(); }

 private:
  template <class T>
  void append_nested(std::string& out, std::span<const T> v, std::int64_t dim, std::size_t& next) const {
    out += '{';
    for (std::int64_t i = 0; i < shape_.dim(dim); ++i) {
      if (i) out += ", ";
      if (dim + 1 == shape_.rank()) detail::append_element(out, v[next++]);
      else append_nested<T>(out, v, dim + 1, next);
    }
    out += '}';
  }

  Literal(Shape shape, detail::AlignedBytes bytes) : shape_(std::move(shape)), bytes_(std::move(bytes)) {}

  Shape shape_;
  detail::AlignedBytes bytes_;
};

}  // namespace pjrt_lite
