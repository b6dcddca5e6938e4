#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// The tracing core under the numpy functions: Tensor, a symbolic value of a Trace (one graph
// under construction, opened by jit and the transformations), the stack of active traces of
// this thread, JAX's type promotion, and what every op of np:: does first (np::detail:
// resolving operands into one trace, recording an error, normalizing an axis, making weakly
// typed scalar constants). Tensor's members that are numpy ops (astype, reshape, T,
// operator[]) are defined in numpy/shapes.hpp, with those ops.

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/frontend/tree.hpp"
#include "pjrt_lite/ir/builder.hpp"

namespace pjrt_lite::inline v0_1 {

class Trace;

namespace np {

/// A traced array. Cheap to copy (a trace pointer and a value id). Not thread-safe: a trace
/// is built by one thread.
class Tensor {
 public:
  /// An invalid tensor; every operation on it fails.
  Tensor() = default;
  Tensor(Trace* trace, Value value);

  [[nodiscard]] Trace* trace() const { return trace_; }
  [[nodiscard]] Value value() const { return value_; }
  /// True while the tensor's trace is being built and the tensor came from a call that
  /// succeeded.
  [[nodiscard]] bool valid() const;
  /// True while the tensor's trace is being built (the tensor may still be invalid).
  [[nodiscard]] bool live() const;
  /// The shape, or a default Shape (dtype kInvalid) for an invalid tensor.
  [[nodiscard]] Shape shape() const;
  [[nodiscard]] DType dtype() const { return shape().dtype(); }
  [[nodiscard]] std::int64_t rank() const { return shape().rank(); }
  [[nodiscard]] std::vector<std::int64_t> dims() const {
    Shape s = shape();
    return {s.dims().begin(), s.dims().end()};
  }
  /// The size of dimension `axis`; negative axes count from the end.
  [[nodiscard]] std::int64_t dim(std::int64_t axis) const;
  /// The number of elements.
  [[nodiscard]] std::int64_t size() const { return shape().element_count(); }

  [[nodiscard]] Tensor astype(DType dtype) const;
  /// numpy reshape: one dimension may be -1 and is inferred.
  [[nodiscard]] Tensor reshape(std::vector<std::int64_t> dims) const;
  /// The transpose (dimensions reversed).
  [[nodiscard]] Tensor T() const;
  /// Element i of the first dimension (negative i counts from the end): x[i] has rank - 1.
  [[nodiscard]] Tensor operator[](std::int64_t i) const;

 private:
  friend class pjrt_lite::Trace;
  Trace* trace_ = nullptr;
  std::uint64_t trace_id_ = 0;
  Value value_;
};

}  // namespace np

using np::Tensor;

namespace detail {
/// The traces being built on this thread, outermost first. Each one's parent is the one
/// before it, so the stack is a chain.
inline std::vector<Trace*>& active_traces() {
  thread_local std::vector<Trace*> stack;
  return stack;
}
inline std::uint64_t next_trace_id() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

/// One graph under construction by tracing. Opened by jit and the transformations; a trace
/// whose parent is another trace may use that trace's tensors, which it captures as extra
/// parameters (a closure over an outer tensor is a constant to grad and unbatched to vmap).
class Trace {
 public:
  /// A trace nested in the innermost active trace of this thread, if any.
  explicit Trace(std::string name) : builder_(std::move(name)), id_(detail::next_trace_id()) {
    if (!detail::active_traces().empty()) parent_ = detail::active_traces().back();
  }
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  [[nodiscard]] GraphBuilder& builder() { return builder_; }
  [[nodiscard]] Trace* parent() const { return parent_; }
  [[nodiscard]] std::uint64_t id() const { return id_; }
  [[nodiscard]] bool ok() const { return status_.ok() && builder_.ok(); }
  /// OK, or the first error of the trace.
  [[nodiscard]] Status status() const { return status_.ok() ? builder_.status() : status_; }
  /// Records `s` unless an error is already recorded.
  void fail(Status s) {
    if (ok()) status_ = std::move(s);
  }
  /// A new parameter (the next number) of `shape`.
  Tensor parameter(Shape shape) { return wrap(builder_.parameter(std::move(shape))); }
  /// A tensor of this trace for `value`, a Value of this trace's builder.
  Tensor wrap(Value value) { return Tensor(this, value); }

  /// `t` as a tensor of this trace: itself when it is one, else (t belonging to an active
  /// outer trace) a parameter that captures it, made once per captured tensor.
  Tensor lift(const Tensor& t) {
    if (t.trace_ == this) return t;
    if (!t.valid()) return Tensor();  // its error is already recorded
    if (parent_ == nullptr) {
      fail(invalid_argument_error(
          str_cat("trace '", builder_.name(), "': a tensor of another trace was used")));
      return Tensor();
    }
    Tensor outer = parent_->lift(t);
    if (!outer.valid()) return Tensor();
    for (const Capture& c : captures_)
      if (c.outer.value_ == outer.value_) return wrap(c.inner);
    Value inner = builder_.parameter(outer.shape());
    captures_.push_back(Capture{outer, inner});
    return wrap(inner);
  }

  /// An outer tensor this trace uses, and the parameter standing for it.
  struct Capture {
    Tensor outer;
    Value inner;
  };
  /// The captures in the order of their parameters (after the function's own).
  [[nodiscard]] const std::vector<Capture>& captures() const { return captures_; }

 private:
  GraphBuilder builder_;
  Trace* parent_ = nullptr;
  std::uint64_t id_ = 0;
  Status status_;
  std::vector<Capture> captures_;
};

/// Makes a trace the innermost active one of this thread for the scope's lifetime.
class TraceScope {
 public:
  explicit TraceScope(Trace& trace) { detail::active_traces().push_back(&trace); }
  ~TraceScope() { detail::active_traces().pop_back(); }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
};

namespace np {

inline Tensor::Tensor(Trace* trace, Value value)
    : trace_(trace), trace_id_(trace ? trace->id() : 0), value_(value) {}

inline bool Tensor::live() const {
  // Compared by address first: a trace that has ended may be gone, so it is not touched.
  const auto& stack = pjrt_lite::detail::active_traces();
  return trace_ != nullptr && std::find(stack.begin(), stack.end(), trace_) != stack.end() &&
         trace_->id() == trace_id_;
}

inline bool Tensor::valid() const { return value_.valid() && live(); }

inline Shape Tensor::shape() const {
  if (!valid()) return Shape();
  StatusOr<Shape> s = trace_->builder().shape(value_);
  return s.ok() ? *s : Shape();
}

}  // namespace np

template <>
inline constexpr bool tree::kIsLeaf<np::Tensor> = true;
template <>
inline constexpr bool tree::kIsLeaf<Literal> = true;

/// JAX's type promotion between two array types (jax.numpy.promote_types), on its lattice:
/// pred < integers < the weak float f* < floating point < complex. Signed and unsigned
/// integers meet at the next wider signed type; u64 and a signed integer have none, and meet
/// at f*, which as a result is the default float type: f32 here, as in JAX without x64 (and
/// as jnp.sin of an integer array is f32 here).
constexpr DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_pred(a)) return b;
  if (is_pred(b)) return a;
  const auto bits = [](DType t) { return bit_width(t); };  // s4 below s8, f6 below f8
  if (is_complex(a) || is_complex(b)) {
    const DType c = is_complex(a) ? a : b, o = is_complex(a) ? b : a;
    if (c == DType::kC128 || o == DType::kF64) return DType::kC128;
    return DType::kC64;
  }
  if (is_floating(a) && is_floating(b)) {
    if (bits(a) == 16 && bits(b) == 16) return DType::kF32;  // f16 and bf16
    return bits(a) >= bits(b) ? a : b;
  }
  if (is_floating(a)) return a;
  if (is_floating(b)) return b;
  // Both integral.
  if (is_signed_integral(a) == is_signed_integral(b)) return bits(a) >= bits(b) ? a : b;
  const DType s = is_signed_integral(a) ? a : b, u = is_signed_integral(a) ? b : a;
  if (bits(s) > bits(u)) return s;
  switch (bits(u)) {
    case 2: return DType::kS4;
    case 4: return DType::kS8;
    case 8: return DType::kS16;
    case 16: return DType::kS32;
    case 32: return DType::kS64;
    default: return DType::kF32;  // u64 and any signed integer: f*
  }
}

/// promote_types over several dtypes, as JAX joins them all at once: integers sit below every
/// floating type, so next to any float or complex dtype they do not count. (Folding pairwise
/// would take u64, s8 and f16 to f32 where JAX gives f16.) kInvalid for an empty list.
constexpr DType promote_types(std::span<const DType> dtypes) {
  bool inexact = false;
  for (DType t : dtypes) inexact = inexact || is_inexact(t);
  DType out = DType::kInvalid;
  for (DType t : dtypes) {
    if (inexact && !is_inexact(t)) continue;
    out = out == DType::kInvalid ? t : promote_types(out, t);
  }
  return out;
}

/// C++ scalar types that mix with tensors as weakly typed constants.
template <class S>
concept Scalar = std::is_arithmetic_v<S> || std::is_same_v<S, std::complex<float>> ||
    std::is_same_v<S, std::complex<double>>;

namespace np {
namespace detail {

using pjrt_lite::detail::active_traces;

// The innermost active trace, or null.
inline Trace* current_trace() {
  auto& stack = active_traces();
  return stack.empty() ? nullptr : stack.back();
}

// The trace an operation on `operands` runs in, with each operand lifted into it; records
// an error and returns null when an operand is unusable.
inline Trace* resolve(const char* op, std::initializer_list<Tensor*> operands) {
  Trace* target = nullptr;
  std::size_t depth = 0;
  const auto& stack = active_traces();
  std::size_t k = 0;
  for (Tensor* t : operands) {
    if (!t->valid()) {
      // An invalid value of a live trace comes from a call that failed: its trace already
      // holds that error.
      Trace* sink = t->live() ? t->trace() : current_trace();
      if (sink && sink->ok()) {
        if (t->trace() == nullptr)
          sink->fail(invalid_argument_error(
              str_cat(op, ": operand ", k, " is an invalid (default-constructed) Tensor")));
        else if (!t->live())
          sink->fail(invalid_argument_error(
              str_cat(op, ": operand ", k,
                      " is a Tensor of a trace that has ended (a tensor kept from an "
                      "earlier jit/grad/vmap call must not be used in a later one)")));
      }
      return nullptr;
    }
    const auto pos =
        static_cast<std::size_t>(std::find(stack.begin(), stack.end(), t->trace()) - stack.begin());
    if (target == nullptr || pos > depth) {
      target = t->trace();
      depth = pos;
    }
    ++k;
  }
  if (target == nullptr) return nullptr;
  for (Tensor* t : operands) {
    *t = target->lift(*t);
    if (!t->valid()) return nullptr;
  }
  return target;
}

inline Tensor fail(Trace* trace, Status s) {
  if (trace) trace->fail(std::move(s));
  return Tensor();
}

// Normalizes a possibly negative axis of a rank-`rank` array, or records an error.
inline std::optional<std::int64_t> axis_index(Trace* t, const char* op, std::int64_t axis,
                                              std::int64_t rank) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    t->fail(invalid_argument_error(
        str_cat(op, ": axis ", axis, " is out of range for an array of rank ", rank)));
    return std::nullopt;
  }
  return a;
}

inline Tensor constant_in(Trace* t, Literal value) {
  return t->wrap(t->builder().constant(std::move(value)));
}

template <Scalar S>
Literal scalar_literal(DType dtype, S value) {
  // A narrow type has no C++ type: the value rounds (or wraps) from the type it computes in.
  if (is_narrow(dtype)) return *scalar_literal(wide_dtype(dtype), value).convert(dtype);
  return visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (is_complex_v<T>) {
      if constexpr (std::is_arithmetic_v<S>)
        return Literal::scalar(T(static_cast<typename T::value_type>(value)));
      else
        return Literal::scalar(T(static_cast<typename T::value_type>(value.real()),
                                 static_cast<typename T::value_type>(value.imag())));
    } else if constexpr (std::is_arithmetic_v<S>) {
      return Literal::scalar(convert_element<T>(value));
    } else {
      return Literal::scalar(convert_element<T>(value.real()));
    }
  });
}

// The dtype a weakly typed scalar takes next to an array of dtype `array`.
template <Scalar S>
constexpr DType weak_dtype(DType array) {
  if constexpr (std::is_same_v<S, bool>) {
    return array;
  } else if constexpr (std::is_integral_v<S>) {
    return is_pred(array) ? DType::kS32 : array;
  } else if constexpr (std::is_floating_point_v<S>) {
    return is_inexact(array) ? array : DType::kF32;
  } else {
    if (is_complex(array)) return array;
    return array == DType::kF64 ? DType::kC128 : DType::kC64;
  }
}

}  // namespace detail
}  // namespace np

}  // namespace pjrt_lite
