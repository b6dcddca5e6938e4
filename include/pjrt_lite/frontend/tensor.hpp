#pragma once
// Tensor: the array type of traced C++ functions, numpy-like, as jax.numpy is over tracers.
//
//   auto f = [](Tensor x) { return -(sin(x) * 2.0) + x; };
//
// A Tensor is a symbolic value: each operation adds a node to the graph of the Trace the
// Tensor belongs to (jit, grad, vmap, jvp and vjp each open one). Functions live in
// pjrt_lite::np and are found by argument-dependent lookup. Semantics follow jax.numpy:
// numpy broadcasting, type promotion between tensors, and weakly typed C++ scalars (2.0 * an
// f32 tensor stays f32; an integer tensor times 2.0 becomes f32).
//
// Errors (mismatched shapes, a tensor used after its trace ended, ...) do not stop the C++
// code: the first one is kept by the trace, later operations return invalid Tensors, and the
// transformation that opened the trace returns the error as a Status.

#include <algorithm>
#include <complex>
#include <cstdint>
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
  const auto bits = [](DType t) { return byte_size(t) * 8; };
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

// ---- Construction -----------------------------------------------------------------------

/// A constant array in the innermost active trace.
inline Tensor array(Literal value) {
  Trace* t = detail::current_trace();
  return t ? detail::constant_in(t, std::move(value)) : Tensor();
}
/// An array of `dims` filled with `value`, of `dtype`, in the innermost active trace.
template <Scalar S>
Tensor full(std::vector<std::int64_t> dims, S value, DType dtype = dtype_of<S>) {
  Trace* t = detail::current_trace();
  if (t == nullptr) return Tensor();
  if (!is_valid(dtype)) return detail::fail(t, invalid_argument_error("full: invalid dtype"));
  GraphBuilder& b = t->builder();
  return t->wrap(
      b.broadcast_in_dim(b.constant(detail::scalar_literal(dtype, value)), std::move(dims), {}));
}
inline Tensor zeros(std::vector<std::int64_t> dims, DType dtype = DType::kF32) {
  return full(std::move(dims), 0, dtype);
}
inline Tensor ones(std::vector<std::int64_t> dims, DType dtype = DType::kF32) {
  return full(std::move(dims), 1, dtype);
}
template <Scalar S>
Tensor full_like(Tensor x, S value) {
  Trace* t = detail::resolve("full_like", {&x});
  if (t == nullptr) return Tensor();
  GraphBuilder& b = t->builder();
  return t->wrap(
      b.broadcast_in_dim(b.constant(detail::scalar_literal(x.dtype(), value)), x.dims(), {}));
}
inline Tensor zeros_like(const Tensor& x) { return full_like(x, 0); }
inline Tensor ones_like(const Tensor& x) { return full_like(x, 1); }
/// 0, 1, ..., n-1.
inline Tensor arange(std::int64_t n, DType dtype = DType::kS32) {
  Trace* t = detail::current_trace();
  if (t == nullptr) return Tensor();
  return t->wrap(t->builder().iota(Shape(dtype, {n}), 0));
}
/// The n x n identity.
inline Tensor eye(std::int64_t n, DType dtype = DType::kF32) {
  Trace* t = detail::current_trace();
  if (t == nullptr) return Tensor();
  GraphBuilder& b = t->builder();
  Value rows = b.iota(Shape(DType::kS64, {n, n}), 0), cols = b.iota(Shape(DType::kS64, {n, n}), 1);
  return t->wrap(b.convert(b.compare(rows, cols, ComparisonDirection::kEq), dtype));
}

// ---- Shapes ------------------------------------------------------------------------------

inline Tensor astype(Tensor x, DType dtype) {
  Trace* t = detail::resolve("astype", {&x});
  if (t == nullptr) return Tensor();
  if (x.dtype() == dtype) return x;
  return t->wrap(t->builder().convert(x.value(), dtype));
}

/// numpy broadcast_to: aligns trailing dimensions; size-1 dimensions stretch.
inline Tensor broadcast_to(Tensor x, std::vector<std::int64_t> dims) {
  Trace* t = detail::resolve("broadcast_to", {&x});
  if (t == nullptr) return Tensor();
  const std::vector<std::int64_t> from = x.dims();
  if (from == dims) return x;
  const auto r = static_cast<std::int64_t>(dims.size()), xr = x.rank();
  if (xr > r)
    return detail::fail(
        t, invalid_argument_error(str_cat("broadcast_to: cannot broadcast ", x.shape(),
                                          " to fewer dimensions ", Shape(x.dtype(), dims))));
  std::vector<std::int64_t> bdims;
  for (std::int64_t d = 0; d < xr; ++d) {
    const std::int64_t to = r - xr + d;
    if (from[d] != 1 && from[d] != dims[to])
      return detail::fail(
          t, invalid_argument_error(str_cat("broadcast_to: cannot broadcast ", x.shape(), " to ",
                                            Shape(x.dtype(), dims))));
    bdims.push_back(to);
  }
  return t->wrap(t->builder().broadcast_in_dim(x.value(), std::move(dims), std::move(bdims)));
}

inline Tensor reshape(Tensor x, std::vector<std::int64_t> dims) {
  Trace* t = detail::resolve("reshape", {&x});
  if (t == nullptr) return Tensor();
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return detail::fail(t, invalid_argument_error(str_cat(
                                 "reshape: dimension ", i, " is ", dims[i],
                                 "; only one dimension may be -1 and none other negative")));
    } else {
      known *= dims[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x.size() % known != 0)
      return detail::fail(t, invalid_argument_error(str_cat("reshape: cannot reshape ", x.shape(),
                                                            " with a -1 dimension")));
    dims[static_cast<std::size_t>(inferred)] = x.size() / known;
  }
  return t->wrap(t->builder().reshape(x.value(), std::move(dims)));
}

/// Dimensions permuted: result dimension i is x's dimension perm[i]; no perm reverses them.
inline Tensor transpose(Tensor x, std::vector<std::int64_t> perm = {}) {
  Trace* t = detail::resolve("transpose", {&x});
  if (t == nullptr) return Tensor();
  if (perm.empty())
    for (std::int64_t d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
  for (auto& p : perm)
    if (p < 0) p += x.rank();
  return t->wrap(t->builder().transpose(x.value(), std::move(perm)));
}

/// Moves dimension `from` to position `to`, keeping the others in order.
inline Tensor moveaxis(Tensor x, std::int64_t from, std::int64_t to) {
  Trace* t = detail::resolve("moveaxis", {&x});
  if (t == nullptr) return Tensor();
  auto f = detail::axis_index(t, "moveaxis", from, x.rank());
  auto d = detail::axis_index(t, "moveaxis", to, x.rank());
  if (!f || !d) return Tensor();
  std::vector<std::int64_t> perm;
  for (std::int64_t i = 0; i < x.rank(); ++i)
    if (i != *f) perm.push_back(i);
  perm.insert(perm.begin() + *d, *f);
  return transpose(x, std::move(perm));
}

/// A size-1 dimension inserted at `axis` (negative counts from the end of the result).
inline Tensor expand_dims(Tensor x, std::int64_t axis) {
  Trace* t = detail::resolve("expand_dims", {&x});
  if (t == nullptr) return Tensor();
  auto a = detail::axis_index(t, "expand_dims", axis, x.rank() + 1);
  if (!a) return Tensor();
  std::vector<std::int64_t> dims = x.dims();
  dims.insert(dims.begin() + *a, 1);
  return reshape(x, std::move(dims));
}

/// Size-1 dimensions removed: those in `axes`, or all of them.
inline Tensor squeeze(Tensor x, std::vector<std::int64_t> axes = {}) {
  Trace* t = detail::resolve("squeeze", {&x});
  if (t == nullptr) return Tensor();
  std::vector<bool> drop(static_cast<std::size_t>(x.rank()), axes.empty());
  for (std::int64_t axis : axes) {
    auto a = detail::axis_index(t, "squeeze", axis, x.rank());
    if (!a) return Tensor();
    if (x.dim(*a) != 1)
      return detail::fail(t, invalid_argument_error(str_cat("squeeze: dimension ", *a, " of ",
                                                            x.shape(), " is not 1")));
    drop[static_cast<std::size_t>(*a)] = true;
  }
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < x.rank(); ++d)
    if (!(drop[static_cast<std::size_t>(d)] && x.dim(d) == 1)) dims.push_back(x.dim(d));
  return reshape(x, std::move(dims));
}

/// Elements [start, limit) with step `strides` (1 when empty) in each dimension.
inline Tensor slice(Tensor x, std::vector<std::int64_t> start, std::vector<std::int64_t> limit,
                    std::vector<std::int64_t> strides = {}) {
  Trace* t = detail::resolve("slice", {&x});
  if (t == nullptr) return Tensor();
  return t->wrap(
      t->builder().slice(x.value(), std::move(start), std::move(limit), std::move(strides)));
}

/// Joins tensors along an existing axis; dtypes are promoted.
inline Tensor concatenate(std::vector<Tensor> xs, std::int64_t axis = 0) {
  Trace* t = detail::current_trace();
  if (xs.empty()) return detail::fail(t, invalid_argument_error("concatenate: no tensors"));
  // Resolve pairwise against the first so every tensor ends up in the innermost trace.
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (!detail::resolve("concatenate", {&xs[0], &xs[i]})) return Tensor();
  t = detail::resolve("concatenate", {&xs[0]});
  if (t == nullptr) return Tensor();
  for (auto& x : xs) x = t->lift(x);
  auto a = detail::axis_index(t, "concatenate", axis, xs[0].rank());
  if (!a) return Tensor();
  std::vector<DType> dtypes;
  for (const auto& x : xs) dtypes.push_back(x.dtype());
  const DType dtype = promote_types(dtypes);
  std::vector<Value> values;
  for (const auto& x : xs) values.push_back(astype(x, dtype).value());
  return t->wrap(t->builder().concatenate(values, *a));
}

/// Joins tensors of one shape along a new axis.
inline Tensor stack(std::vector<Tensor> xs, std::int64_t axis = 0) {
  for (auto& x : xs) x = expand_dims(x, axis);
  return concatenate(std::move(xs), axis);
}

inline Tensor Tensor::astype(DType dtype) const { return np::astype(*this, dtype); }
inline Tensor Tensor::reshape(std::vector<std::int64_t> dims) const {
  return np::reshape(*this, std::move(dims));
}
inline Tensor Tensor::T() const { return np::transpose(*this); }
inline std::int64_t Tensor::dim(std::int64_t axis) const {
  const Shape s = shape();
  const std::int64_t a = axis < 0 ? axis + s.rank() : axis;
  return a >= 0 && a < s.rank() ? s.dim(a) : -1;
}
inline Tensor Tensor::operator[](std::int64_t i) const {
  Tensor x = *this;
  Trace* t = detail::resolve("operator[]", {&x});
  if (t == nullptr) return Tensor();
  if (x.rank() == 0)
    return detail::fail(t, invalid_argument_error("operator[]: cannot index a rank-0 tensor"));
  const std::int64_t n = x.dim(0), k = i < 0 ? i + n : i;
  if (k < 0 || k >= n)
    return detail::fail(
        t, invalid_argument_error(str_cat("operator[]: index ", i,
                                          " is out of range for dimension 0 of ", x.shape())));
  std::vector<std::int64_t> start(static_cast<std::size_t>(x.rank()), 0), limit = x.dims();
  start[0] = k;
  limit[0] = k + 1;
  std::vector<std::int64_t> dims(limit.begin() + 1, limit.end());
  return np::reshape(np::slice(x, std::move(start), std::move(limit)), std::move(dims));
}

// ---- Element-wise ---------------------------------------------------------------------------

namespace detail {

// The operands promoted to one dtype and broadcast to one shape, numpy style.
inline Trace* coerce(const char* op, std::vector<Tensor*> xs, bool promote = true) {
  Trace* t = nullptr;
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (!(t = resolve(op, {xs[0], xs[i]}))) return nullptr;
  for (Tensor* x : xs) *x = t->lift(*x);
  std::vector<std::int64_t> dims;
  for (Tensor* x : xs) {
    const std::vector<std::int64_t> d = x->dims();
    if (d.size() > dims.size()) dims.insert(dims.begin(), d.size() - dims.size(), 1);
    for (std::size_t i = 0; i < d.size(); ++i) {
      std::int64_t& to = dims[dims.size() - d.size() + i];
      if (to == 1) {
        to = d[i];
      } else if (d[i] != 1 && d[i] != to) {
        std::string shapes;
        for (Tensor* y : xs) shapes += (shapes.empty() ? "" : " and ") + y->shape().to_string();
        t->fail(invalid_argument_error(
            str_cat(op, ": shapes ", shapes, " do not broadcast (numpy rules)")));
        return nullptr;
      }
    }
  }
  std::vector<DType> dtypes;
  for (Tensor* x : xs) dtypes.push_back(x->dtype());
  const DType dtype = promote_types(dtypes);
  for (Tensor* x : xs) {
    if (promote) *x = astype(*x, dtype);
    *x = broadcast_to(*x, dims);
  }
  return t->ok() ? t : nullptr;
}

inline Tensor binary(OpCode op, Tensor a, Tensor b) {
  Trace* t = coerce(op_name(op).data(), {&a, &b});
  if (t == nullptr) return Tensor();
  return t->wrap(t->builder().binary(op, a.value(), b.value()));
}

inline Tensor compare(ComparisonDirection dir, Tensor a, Tensor b) {
  Trace* t = coerce("compare", {&a, &b});
  if (t == nullptr) return Tensor();
  return t->wrap(t->builder().compare(a.value(), b.value(), dir));
}

// Integers and booleans become f32 for the functions that are only defined on real numbers,
// as jnp.sin of an int32 array is an f32 array.
inline Tensor inexact(const Tensor& x) {
  return is_inexact(x.dtype()) ? x : astype(x, DType::kF32);
}

inline Tensor unary(OpCode op, Tensor x, bool needs_inexact) {
  Trace* t = resolve(op_name(op).data(), {&x});
  if (t == nullptr) return Tensor();
  if (needs_inexact) x = inexact(x);
  return t->wrap(t->builder().unary(op, x.value()));
}

template <Scalar S>
Tensor weak(const Tensor& like, S value) {
  Tensor x = like;
  Trace* t = resolve("scalar operand", {&x});
  if (t == nullptr) return Tensor();
  return constant_in(t, scalar_literal(weak_dtype<S>(x.dtype()), value));
}

}  // namespace detail

#define PJRT_LITE_NP_UNARY(name, opcode, inexact) \
  inline Tensor name(const Tensor& x) { return detail::unary(OpCode::opcode, x, inexact); }
PJRT_LITE_NP_UNARY(abs, kAbs, false)
PJRT_LITE_NP_UNARY(negative, kNegate, false)
PJRT_LITE_NP_UNARY(sign, kSign, false)
PJRT_LITE_NP_UNARY(exp, kExponential, true)
PJRT_LITE_NP_UNARY(expm1, kExponentialMinusOne, true)
PJRT_LITE_NP_UNARY(log, kLog, true)
PJRT_LITE_NP_UNARY(log1p, kLogPlusOne, true)
PJRT_LITE_NP_UNARY(sqrt, kSqrt, true)
PJRT_LITE_NP_UNARY(rsqrt, kRsqrt, true)
PJRT_LITE_NP_UNARY(cbrt, kCbrt, true)
PJRT_LITE_NP_UNARY(tanh, kTanh, true)
PJRT_LITE_NP_UNARY(sigmoid, kLogistic, true)
PJRT_LITE_NP_UNARY(sin, kSine, true)
PJRT_LITE_NP_UNARY(cos, kCosine, true)
PJRT_LITE_NP_UNARY(tan, kTan, true)
PJRT_LITE_NP_UNARY(floor, kFloor, true)
PJRT_LITE_NP_UNARY(ceil, kCeil, true)
/// Round half to even, as numpy.round.
PJRT_LITE_NP_UNARY(round, kRoundNearestEven, true)
PJRT_LITE_NP_UNARY(isfinite, kIsFinite, true)
PJRT_LITE_NP_UNARY(real, kReal, false)
PJRT_LITE_NP_UNARY(imag, kImag, false)
#undef PJRT_LITE_NP_UNARY

/// Logical not of booleans, bitwise not of integers.
inline Tensor operator~(const Tensor& x) { return detail::unary(OpCode::kNot, x, false); }
inline Tensor operator!(const Tensor& x) { return detail::unary(OpCode::kNot, x, false); }
inline Tensor operator-(const Tensor& x) { return negative(x); }
inline Tensor operator+(const Tensor& x) { return x; }

#define PJRT_LITE_NP_BINARY(name, opcode)                         \
  inline Tensor name(const Tensor& a, const Tensor& b) {          \
    return detail::binary(OpCode::opcode, a, b);                  \
  }                                                               \
  template <Scalar S>                                             \
  Tensor name(const Tensor& a, S b) {                             \
    return detail::binary(OpCode::opcode, a, detail::weak(a, b)); \
  }                                                               \
  template <Scalar S>                                             \
  Tensor name(S a, const Tensor& b) {                             \
    return detail::binary(OpCode::opcode, detail::weak(b, a), b); \
  }
PJRT_LITE_NP_BINARY(add, kAdd)
PJRT_LITE_NP_BINARY(subtract, kSubtract)
PJRT_LITE_NP_BINARY(multiply, kMultiply)
PJRT_LITE_NP_BINARY(maximum, kMaximum)
PJRT_LITE_NP_BINARY(minimum, kMinimum)
PJRT_LITE_NP_BINARY(power, kPower)
PJRT_LITE_NP_BINARY(arctan2, kAtan2)
PJRT_LITE_NP_BINARY(bitwise_and, kAnd)
PJRT_LITE_NP_BINARY(bitwise_or, kOr)
PJRT_LITE_NP_BINARY(bitwise_xor, kXor)
#undef PJRT_LITE_NP_BINARY

/// True division: integer operands divide as f32, as in jax.numpy.
inline Tensor divide(const Tensor& a, const Tensor& b) {
  const bool ints = !is_inexact(promote_types(a.dtype(), b.dtype()));
  return detail::binary(OpCode::kDivide, ints ? detail::inexact(a) : a,
                        ints ? detail::inexact(b) : b);
}
template <Scalar S>
Tensor divide(const Tensor& a, S b) {
  Tensor x = std::is_floating_point_v<S> ? a : detail::inexact(a);
  return divide(x, detail::weak(x, b));
}
template <Scalar S>
Tensor divide(S a, const Tensor& b) {
  Tensor x = std::is_floating_point_v<S> ? b : detail::inexact(b);
  return divide(detail::weak(x, a), x);
}

/// numpy's remainder: the result has the sign of the divisor.
inline Tensor remainder(const Tensor& a, const Tensor& b) {
  Tensor x = a, y = b;
  Trace* t = detail::coerce("remainder", {&x, &y});
  if (t == nullptr) return Tensor();
  GraphBuilder& g = t->builder();
  Value r = g.remainder(x.value(), y.value());
  Value zero = g.broadcast_in_dim(g.constant(detail::scalar_literal(x.dtype(), 0)), x.dims(), {});
  Value fix = g.and_(g.compare(r, zero, ComparisonDirection::kNe),
                     g.xor_(g.compare(r, zero, ComparisonDirection::kLt),
                            g.compare(y.value(), zero, ComparisonDirection::kLt)));
  return t->wrap(g.select(fix, g.add(r, y.value()), r));
}
template <Scalar S>
Tensor remainder(const Tensor& a, S b) {
  return remainder(a, detail::weak(a, b));
}
template <Scalar S>
Tensor remainder(S a, const Tensor& b) {
  return remainder(detail::weak(b, a), b);
}

#define PJRT_LITE_NP_OPERATOR(op, fn)                                              \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  template <Scalar S>                                                              \
  Tensor operator op(const Tensor& a, S b) {                                       \
    return fn(a, b);                                                               \
  }                                                                                \
  template <Scalar S>                                                              \
  Tensor operator op(S a, const Tensor& b) {                                       \
    return fn(a, b);                                                               \
  }
PJRT_LITE_NP_OPERATOR(+, add)
PJRT_LITE_NP_OPERATOR(-, subtract)
PJRT_LITE_NP_OPERATOR(*, multiply)
PJRT_LITE_NP_OPERATOR(/, divide)
PJRT_LITE_NP_OPERATOR(&, bitwise_and)
PJRT_LITE_NP_OPERATOR(|, bitwise_or)
PJRT_LITE_NP_OPERATOR(^, bitwise_xor)
#undef PJRT_LITE_NP_OPERATOR

inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a = a + b; }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a = a - b; }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a = a * b; }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a = a / b; }

#define PJRT_LITE_NP_COMPARE(op, dir)                                        \
  inline Tensor operator op(const Tensor& a, const Tensor& b) {              \
    return detail::compare(ComparisonDirection::dir, a, b);                  \
  }                                                                          \
  template <Scalar S>                                                        \
  Tensor operator op(const Tensor& a, S b) {                                 \
    return detail::compare(ComparisonDirection::dir, a, detail::weak(a, b)); \
  }                                                                          \
  template <Scalar S>                                                        \
  Tensor operator op(S a, const Tensor& b) {                                 \
    return detail::compare(ComparisonDirection::dir, detail::weak(b, a), b); \
  }
PJRT_LITE_NP_COMPARE(==, kEq)
PJRT_LITE_NP_COMPARE(!=, kNe)
PJRT_LITE_NP_COMPARE(<, kLt)
PJRT_LITE_NP_COMPARE(<=, kLe)
PJRT_LITE_NP_COMPARE(>, kGt)
PJRT_LITE_NP_COMPARE(>=, kGe)
#undef PJRT_LITE_NP_COMPARE

/// x * x.
inline Tensor square(const Tensor& x) { return x * x; }
/// max(x, 0).
inline Tensor relu(const Tensor& x) { return maximum(x, 0); }
/// The complex conjugate; real arrays are returned unchanged.
inline Tensor conj(Tensor x) {
  Trace* t = detail::resolve("conj", {&x});
  if (t == nullptr || !is_complex(x.dtype())) return x;
  GraphBuilder& b = t->builder();
  return t->wrap(b.complex(b.real(x.value()), b.negate(b.imag(x.value()))));
}

/// cond ? a : b element-wise, with numpy broadcasting; cond must be boolean.
inline Tensor where(Tensor cond, Tensor a, Tensor b) {
  Trace* t = detail::coerce("where", {&a, &b});
  if (t == nullptr) return Tensor();
  Tensor c = cond;
  if (!(t = detail::coerce("where", {&c, &a, &b}, false))) return Tensor();
  if (c.dtype() != DType::kPred)
    return detail::fail(
        t, invalid_argument_error(str_cat("where: the condition must be pred, got ", c.shape())));
  return t->wrap(t->builder().select(c.value(), a.value(), b.value()));
}
template <Scalar S>
Tensor where(const Tensor& cond, const Tensor& a, S b) {
  return where(cond, a, detail::weak(a, b));
}
template <Scalar S>
Tensor where(const Tensor& cond, S a, const Tensor& b) {
  return where(cond, detail::weak(b, a), b);
}

/// min(max(x, lo), hi).
template <class Lo, class Hi>
Tensor clip(const Tensor& x, const Lo& lo, const Hi& hi) {
  return minimum(maximum(x, lo), hi);
}

// ---- Reductions ------------------------------------------------------------------------------

namespace detail {

// Normalized, sorted, distinct axes; all of them for an empty list.
inline std::optional<std::vector<std::int64_t>> reduce_axes(Trace* t, const char* op,
                                                            std::vector<std::int64_t> axes,
                                                            std::int64_t rank) {
  if (axes.empty())
    for (std::int64_t d = 0; d < rank; ++d) axes.push_back(d);
  for (auto& a : axes) {
    auto n = axis_index(t, op, a, rank);
    if (!n) return std::nullopt;
    a = *n;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    t->fail(invalid_argument_error(str_cat(op, ": an axis is listed twice")));
    return std::nullopt;
  }
  return axes;
}

inline Tensor keep_dims(const Tensor& reduced, const std::vector<std::int64_t>& axes,
                        std::vector<std::int64_t> dims) {
  for (std::int64_t a : axes) dims[static_cast<std::size_t>(a)] = 1;
  return reshape(reduced, std::move(dims));
}

inline Tensor reduce(const char* name, OpCode op, Tensor x, std::vector<std::int64_t> axes,
                     bool keepdims) {
  Trace* t = resolve(name, {&x});
  if (t == nullptr) return Tensor();
  if (op == OpCode::kAdd && x.dtype() == DType::kPred) x = astype(x, DType::kS32);
  auto ax = reduce_axes(t, name, std::move(axes), x.rank());
  if (!ax) return Tensor();
  GraphBuilder& b = t->builder();
  Value init;
  if (op == OpCode::kAdd)
    init = b.constant(scalar_literal(x.dtype(), 0));
  else if (op == OpCode::kMultiply)
    init = b.constant(scalar_literal(x.dtype(), 1));
  else if (is_complex(x.dtype()))
    return fail(t, invalid_argument_error(str_cat(name, ": complex numbers have no order")));
  else
    init = b.constant(pjrt_lite::detail::extreme_scalar(x.dtype(), op == OpCode::kMaximum));
  Tensor r = t->wrap(b.reduce(x.value(), init, op, *ax));
  return keepdims ? keep_dims(r, *ax, x.dims()) : r;
}

}  // namespace detail

/// Sum over `axes` (all when empty); booleans count as s32.
inline Tensor sum(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("sum", OpCode::kAdd, x, std::move(axes), keepdims);
}
inline Tensor prod(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("prod", OpCode::kMultiply, x, std::move(axes), keepdims);
}
inline Tensor max(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("max", OpCode::kMaximum, x, std::move(axes), keepdims);
}
inline Tensor min(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  return detail::reduce("min", OpCode::kMinimum, x, std::move(axes), keepdims);
}
/// The mean over `axes` (all when empty); integers average as f32.
inline Tensor mean(const Tensor& x, std::vector<std::int64_t> axes = {}, bool keepdims = false) {
  Tensor y = x;
  Trace* t = detail::resolve("mean", {&y});
  if (t == nullptr) return Tensor();
  auto ax = detail::reduce_axes(t, "mean", axes, y.rank());
  if (!ax) return Tensor();
  std::int64_t count = 1;
  for (std::int64_t a : *ax) count *= y.dim(a);
  return sum(detail::inexact(y), *ax, keepdims) / static_cast<double>(count);
}

namespace detail {
inline Tensor arg_reduce(bool is_max, Tensor x, std::int64_t axis, bool keepdims) {
  const char* name = is_max ? "argmax" : "argmin";
  Trace* t = resolve(name, {&x});
  if (t == nullptr) return Tensor();
  auto a = axis_index(t, name, axis, x.rank());
  if (!a) return Tensor();
  GraphBuilder& b = t->builder();
  std::vector<Value> r = is_max ? b.argmax(x.value(), *a) : b.argmin(x.value(), *a);
  Tensor index = t->wrap(r[1]);
  return keepdims ? keep_dims(index, {*a}, x.dims()) : index;
}
}  // namespace detail

/// The index (s32) of the largest element along `axis`: NaN wins, ties go to the first.
inline Tensor argmax(const Tensor& x, std::int64_t axis, bool keepdims = false) {
  return detail::arg_reduce(true, x, axis, keepdims);
}
inline Tensor argmin(const Tensor& x, std::int64_t axis, bool keepdims = false) {
  return detail::arg_reduce(false, x, axis, keepdims);
}

// ---- Contractions ----------------------------------------------------------------------------

/// numpy matmul: vectors are promoted to matrices and back, leading dimensions are batch
/// dimensions that broadcast.
inline Tensor matmul(Tensor a, Tensor b) {
  Trace* t = detail::resolve("matmul", {&a, &b});
  if (t == nullptr) return Tensor();
  if (a.rank() == 0 || b.rank() == 0)
    return detail::fail(
        t, invalid_argument_error(str_cat("matmul: operands must not be scalars, got ", a.shape(),
                                          " and ", b.shape())));
  const DType dtype = promote_types(a.dtype(), b.dtype());
  a = astype(a, dtype);
  b = astype(b, dtype);
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a_vec) a = expand_dims(a, 0);
  if (b_vec) b = expand_dims(b, 1);
  if (a.dim(-1) != b.dim(-2))
    return detail::fail(t, invalid_argument_error(str_cat("matmul: contracting dimensions differ: ",
                                                          a.shape(), " and ", b.shape())));
  // Broadcast the batch dimensions.
  const std::int64_t nb = std::max(a.rank(), b.rank()) - 2;
  std::vector<std::int64_t> batch(static_cast<std::size_t>(nb), 1);
  for (const Tensor* x : {&a, &b}) {
    const std::vector<std::int64_t> d = x->dims();
    const std::int64_t xb = x->rank() - 2;
    for (std::int64_t i = 0; i < xb; ++i) {
      std::int64_t& to = batch[static_cast<std::size_t>(nb - xb + i)];
      if (to == 1)
        to = d[static_cast<std::size_t>(i)];
      else if (d[static_cast<std::size_t>(i)] != 1 && d[static_cast<std::size_t>(i)] != to)
        return detail::fail(
            t, invalid_argument_error(str_cat("matmul: batch dimensions of ", a.shape(), " and ",
                                              b.shape(), " do not broadcast")));
    }
  }
  auto with_batch = [&](const Tensor& x) {
    std::vector<std::int64_t> dims = batch;
    dims.push_back(x.dim(-2));
    dims.push_back(x.dim(-1));
    return broadcast_to(x, dims);
  };
  a = with_batch(a);
  b = with_batch(b);
  DotDimensionNumbers dn;
  for (std::int64_t i = 0; i < nb; ++i) {
    dn.lhs_batching_dimensions.push_back(i);
    dn.rhs_batching_dimensions.push_back(i);
  }
  dn.lhs_contracting_dimensions = {nb + 1};
  dn.rhs_contracting_dimensions = {nb};
  Tensor r = t->wrap(t->builder().dot_general(a.value(), b.value(), std::move(dn)));
  if (a_vec) r = squeeze(r, {-2});
  if (b_vec) r = squeeze(r, {-1});
  return r;
}

/// numpy dot for vectors and matrices (rank 1 or 2); matmul for the rest.
inline Tensor dot(const Tensor& a, const Tensor& b) { return matmul(a, b); }

/// numpy tensordot with explicit axes: a_axes[i] of a contracts with b_axes[i] of b; the
/// result has a's free dimensions, then b's.
inline Tensor tensordot(Tensor a, Tensor b, std::vector<std::int64_t> a_axes,
                        std::vector<std::int64_t> b_axes) {
  Trace* t = detail::resolve("tensordot", {&a, &b});
  if (t == nullptr) return Tensor();
  const DType dtype = promote_types(a.dtype(), b.dtype());
  a = astype(a, dtype);
  b = astype(b, dtype);
  for (auto& x : a_axes) x = x < 0 ? x + a.rank() : x;
  for (auto& x : b_axes) x = x < 0 ? x + b.rank() : x;
  return t->wrap(
      t->builder().dot_general(a.value(), b.value(), DotDimensionNumbers{{}, {}, a_axes, b_axes}));
}

}  // namespace np

// A braced list of tensors is not an argument that finds np:: by lookup: these two are
// also reachable from pjrt_lite.
using np::concatenate;
using np::stack;

}  // namespace pjrt_lite
