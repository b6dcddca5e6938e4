#pragma once
// jnp.linalg / lax.linalg over Tensors, with JAX's derivative rules: cholesky, eigh, qr, lu,
// triangular_solve, solve, inv, det and slogdet.
//
// The factorizations run jaxlib's LAPACK routines (the IR's linalg op: potrf, syevd,
// geqrf + orgqr, getrf) and carry JAX's jvp rules as custom_jvp rules
// (frontend/custom_derivatives.hpp), written with triangular solves and products, so reverse
// mode transposes them and higher orders differentiate them (jax/_src/lax/linalg.py:
// cholesky_jvp_rule, eigh_jvp_rule, qr_jvp_rule, _lu_jvp_rule). solve, inv, det and slogdet
// are built on lu, as jnp.linalg's are, and differentiate through it.
//
// Real matrices (f32, f64) of rank 2; cholesky and eigh symmetrize their input first, as
// jnp.linalg does; qr is the reduced one (jnp.linalg.qr(mode="reduced")) of an m x n matrix
// with m >= n. A failed factorization gives NaNs, as JAX's do. Errors (a wrong rank or
// dtype) are recorded in the trace as everywhere in np::.

#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/custom_derivatives.hpp"
#include "pjrt_lite/frontend/tensor.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np::linalg {

namespace detail {

using np::detail::fail;
using np::detail::resolve;

// x checked as a real matrix (with rows >= cols when `tall`), or null after recording why.
inline Trace* matrix(const char* op, Tensor& x, bool square, bool tall = false) {
  Trace* t = resolve(op, {&x});
  if (t == nullptr) return nullptr;
  if (x.rank() != 2 || !(x.dtype() == DType::kF32 || x.dtype() == DType::kF64) ||
      (square && x.dim(0) != x.dim(1)) || (tall && x.dim(0) < x.dim(1))) {
    fail(t, invalid_argument_error(str_cat(
                op, ": takes a ", square ? "square" : tall ? "tall (rows >= columns)" : "",
                " f32 or f64 matrix (rank 2), got ", x.shape())));
    return nullptr;
  }
  return t;
}

// The elements of x [n, m] on or below diagonal k (k < 0: below), others 0 (jnp.tril).
inline Tensor tril(const Tensor& x, std::int64_t k = 0) {
  Trace* t = x.trace();
  GraphBuilder& b = t->builder();
  const Shape s(DType::kS32, {x.dim(0), x.dim(1)});
  Tensor rows = t->wrap(b.iota(s, 0)), cols = t->wrap(b.iota(s, 1));
  return where(cols - rows <= static_cast<std::int32_t>(k), x, zeros_like(x));
}
// The elements on or above diagonal k (jnp.triu).
inline Tensor triu(const Tensor& x, std::int64_t k = 0) {
  Trace* t = x.trace();
  GraphBuilder& b = t->builder();
  const Shape s(DType::kS32, {x.dim(0), x.dim(1)});
  Tensor rows = t->wrap(b.iota(s, 0)), cols = t->wrap(b.iota(s, 1));
  return where(cols - rows >= static_cast<std::int32_t>(k), x, zeros_like(x));
}
inline Tensor diagonal(const Tensor& x) { return sum(x * eye(x.dim(0), x.dtype()), {1}); }

// NaNs where `info` (a rank-0 s32 from LAPACK) is not 0, as JAX turns a failed factorization.
inline Tensor checked(const Tensor& x, const Tensor& info) {
  return where(info == 0, x, full_like(x, std::numeric_limits<double>::quiet_NaN()));
}

inline std::vector<Tensor> call(Trace* t, const std::vector<Tensor>& operands, const LinalgAttrs& a) {
  std::vector<Value> ops;
  for (const Tensor& o : operands) ops.push_back(o.value());
  std::vector<Tensor> out;
  for (Value v : t->builder().linalg(ops, a)) out.push_back(t->wrap(v));
  return out;
}

inline LinalgAttrs routine(LinalgRoutine r) {
  LinalgAttrs a;
  a.routine = r;
  a.mode = 'V';
  return a;
}

}  // namespace detail

/// lax.linalg.triangular_solve: x with op(a) x = b (left_side) or x op(a) = b, a's `lower`
/// (or upper) triangle read, op(a) = a^T when transpose_a; both operands differentiable.
inline Tensor triangular_solve(Tensor a, Tensor b, bool left_side = true, bool lower = true,
                               bool transpose_a = false, bool unit_diagonal = false) {
  Trace* t = np::detail::resolve("triangular_solve", {&a, &b});
  if (t == nullptr) return Tensor();
  TriangularSolveAttrs attrs{left_side, lower, unit_diagonal,
                             transpose_a ? Transpose::kTranspose : Transpose::kNoTranspose};
  return t->wrap(t->builder().triangular_solve(a.value(), b.value(), attrs));
}

namespace detail {

inline Tensor cholesky_primal(const Tensor& x) {
  LinalgAttrs a = routine(LinalgRoutine::kPotrf);
  a.uplo = 'L';
  std::vector<Tensor> r = call(x.trace(), {x}, a);
  return checked(tril(r[0]), r[1]);
}

inline std::pair<Tensor, Tensor> eigh_primal(const Tensor& x) {
  LinalgAttrs a = routine(LinalgRoutine::kSyevd);
  a.uplo = 'L';
  std::vector<Tensor> r = call(x.trace(), {x}, a);
  return {checked(r[1], r[2]), checked(r[0], r[2])};
}

inline std::pair<Tensor, Tensor> qr_primal(const Tensor& x) {
  const std::int64_t n = x.dim(1);
  std::vector<Tensor> f = call(x.trace(), {x}, routine(LinalgRoutine::kGeqrf));
  Tensor q = call(x.trace(), {f[0], f[1]}, routine(LinalgRoutine::kOrgqr))[0];
  return {q, triu(slice(f[0], {0, 0}, {n, n}))};
}

// getrf's 1-based row swaps as a permutation of the rows (lax.linalg.lu_pivots_to_permutation).
inline Tensor permutation_of(const Tensor& pivots, std::int64_t m) {
  Tensor perm = arange(m, DType::kS32);
  for (std::int64_t k = 0; k < pivots.dim(0); ++k) {
    Tensor p = reshape(slice(pivots, {k}, {k + 1}), {});
    Tensor at_k = slice(perm, {k}, {k + 1});
    Tensor at_p = dynamic_slice(perm, {p}, {1});
    perm = dynamic_update_slice(perm, at_p, std::vector<std::int64_t>{k});
    perm = dynamic_update_slice(perm, at_k, std::vector<Tensor>{p});
  }
  return perm;
}

inline std::tuple<Tensor, Tensor, Tensor> lu_primal(const Tensor& x) {
  std::vector<Tensor> r = call(x.trace(), {x}, routine(LinalgRoutine::kGetrf));
  Tensor pivots = r[1] - 1;
  return {checked(r[0], r[2]), pivots, permutation_of(pivots, x.dim(0))};
}

// The rules, as named types so that each can call its own function (for the primal values,
// which then carry the rule again at the next order). Defined below.
using Tangents = std::tuple<Tensor>;
struct CholeskyRule {
  std::pair<Tensor, Tensor> operator()(const Tangents& p, const Tangents& t) const;
};
using EighOut = std::pair<Tensor, Tensor>;
struct EighRule {
  std::pair<EighOut, EighOut> operator()(const Tangents& p, const Tangents& t) const;
};
using QrOut = std::pair<Tensor, Tensor>;
struct QrRule {
  std::pair<QrOut, QrOut> operator()(const Tangents& p, const Tangents& t) const;
};
using LuOut = std::tuple<Tensor, Tensor, Tensor>;
struct LuRule {
  std::pair<LuOut, LuOut> operator()(const Tangents& p, const Tangents& t) const;
};

inline const CustomJvp<Tensor (*)(const Tensor&), CholeskyRule>& cholesky_fn() {
  static const CustomJvp<Tensor (*)(const Tensor&), CholeskyRule> f(&cholesky_primal, CholeskyRule{});
  return f;
}
inline const CustomJvp<EighOut (*)(const Tensor&), EighRule>& eigh_fn() {
  static const CustomJvp<EighOut (*)(const Tensor&), EighRule> f(&eigh_primal, EighRule{});
  return f;
}
inline const CustomJvp<QrOut (*)(const Tensor&), QrRule>& qr_fn() {
  static const CustomJvp<QrOut (*)(const Tensor&), QrRule> f(&qr_primal, QrRule{});
  return f;
}
inline const CustomJvp<LuOut (*)(const Tensor&), LuRule>& lu_fn() {
  static const CustomJvp<LuOut (*)(const Tensor&), LuRule> f(&lu_primal, LuRule{});
  return f;
}

}  // namespace detail

/// jnp.linalg.cholesky: the lower factor L of (x + x^T) / 2 = L L^T.
inline Tensor cholesky(Tensor x) {
  Trace* t = detail::matrix("cholesky", x, true);
  if (t == nullptr) return Tensor();
  return detail::cholesky_fn()((x + x.T()) * 0.5);
}

/// jnp.linalg.eigh: (w, v) of (x + x^T) / 2 = v diag(w) v^T, w ascending, v's columns the
/// eigenvectors.
inline std::pair<Tensor, Tensor> eigh(Tensor x) {
  Trace* t = detail::matrix("eigh", x, true);
  if (t == nullptr) return {};
  return detail::eigh_fn()((x + x.T()) * 0.5);
}

/// jnp.linalg.qr(x, mode="reduced") of an m x n matrix, m >= n: (q [m, n], r [n, n]).
inline std::pair<Tensor, Tensor> qr(Tensor x) {
  Trace* t = detail::matrix("qr", x, false, true);
  if (t == nullptr) return {};
  return detail::qr_fn()(x);
}

/// lax.linalg.lu of a square matrix: (lu, pivots, permutation) with P x = L U, L unit lower
/// and U upper packed in lu, pivots the 0-based row swaps and permutation the rows of P.
inline std::tuple<Tensor, Tensor, Tensor> lu(Tensor x) {
  Trace* t = detail::matrix("lu", x, true);
  if (t == nullptr) return {};
  return detail::lu_fn()(x);
}

/// jnp.linalg.solve: x with a x = b, b a vector [n] or a matrix [n, k].
inline Tensor solve(Tensor a, Tensor b) {
  Trace* t = detail::matrix("solve", a, true);
  if (t == nullptr) return Tensor();
  if (np::detail::resolve("solve", {&a, &b}) == nullptr) return Tensor();
  if ((b.rank() != 1 && b.rank() != 2) || b.dim(0) != a.dim(0) || b.dtype() != a.dtype())
    return np::detail::fail(t, invalid_argument_error(str_cat("solve: b must be [n] or [n, k] of a's dtype for a of ",
                                                              a.shape(), ", got ", b.shape())));
  const bool vector = b.rank() == 1;
  if (vector) b = expand_dims(b, 1);
  auto [packed, pivots, perm] = lu(a);
  const std::int64_t n = a.dim(0);
  Tensor l = detail::tril(packed, -1) + eye(n, a.dtype());
  Tensor u = detail::triu(packed);
  Tensor y = triangular_solve(l, take(b, perm, 0, TakeMode::kClip), true, true, false, true);
  Tensor x = triangular_solve(u, y, true, false);
  return vector ? squeeze(x, {1}) : x;
}

/// jnp.linalg.inv.
inline Tensor inv(Tensor a) {
  Trace* t = detail::matrix("inv", a, true);
  if (t == nullptr) return Tensor();
  return solve(a, eye(a.dim(0), a.dtype()));
}

/// jnp.linalg.slogdet: (sign, log|det|).
inline std::pair<Tensor, Tensor> slogdet(Tensor a) {
  Trace* t = detail::matrix("slogdet", a, true);
  if (t == nullptr) return {};
  auto [packed, pivots, perm] = lu(a);
  Tensor d = detail::diagonal(packed);
  Tensor swaps = sum((pivots != arange(pivots.dim(0), DType::kS32)).astype(DType::kS32));
  Tensor parity = (1 - 2 * (swaps & 1)).astype(a.dtype());
  return {parity * prod(sign(d)), sum(log(abs(d)))};
}

/// jnp.linalg.det.
inline Tensor det(Tensor a) {
  Trace* t = detail::matrix("det", a, true);
  if (t == nullptr) return Tensor();
  auto [packed, pivots, perm] = lu(a);
  Tensor swaps = sum((pivots != arange(pivots.dim(0), DType::kS32)).astype(DType::kS32));
  Tensor parity = (1 - 2 * (swaps & 1)).astype(a.dtype());
  return parity * prod(detail::diagonal(packed));
}

namespace detail {

// JAX's cholesky_jvp_rule: dL = L phi(L^-1 dA L^-T), phi the lower triangle with the
// diagonal halved.
inline std::pair<Tensor, Tensor> CholeskyRule::operator()(const Tangents& p, const Tangents& t) const {
  Tensor l = cholesky_fn()(std::get<0>(p));
  Tensor tmp = triangular_solve(l, std::get<0>(t), false, true, true);  // dA L^-T
  tmp = triangular_solve(l, tmp, true, true);                           // L^-1 dA L^-T
  Tensor phi = tril(tmp) * (1.0 - 0.5 * eye(l.dim(0), l.dtype()));
  return {l, matmul(l, phi)};
}

// JAX's eigh_jvp_rule: with F[i, j] = 1 / (w_j - w_i) off the diagonal and M = v^T dA v,
// dw = diag(M), dv = v (F * M).
inline std::pair<EighOut, EighOut> EighRule::operator()(const Tangents& p, const Tangents& t) const {
  auto [w, v] = eigh_fn()(std::get<0>(p));
  const Tensor id = eye(w.dim(0), w.dtype());
  Tensor fmat = 1.0 / (id + expand_dims(w, 0) - expand_dims(w, 1)) - id;
  Tensor m = matmul(matmul(v.T(), std::get<0>(t)), v);
  return {{w, v}, {diagonal(m), matmul(v, fmat * m)}};
}

// JAX's qr_jvp_rule (reduced, m >= n).
inline std::pair<QrOut, QrOut> QrRule::operator()(const Tangents& p, const Tangents& t) const {
  auto [q, r] = qr_fn()(std::get<0>(p));
  Tensor dx_rinv = triangular_solve(r, std::get<0>(t), false, false);  // dx R^-1
  Tensor qt_dx_rinv = matmul(q.T(), dx_rinv);
  Tensor lower = tril(qt_dx_rinv, -1);
  Tensor d_omega = lower - lower.T();
  Tensor dq = matmul(q, d_omega - qt_dx_rinv) + dx_rinv;
  Tensor dr = matmul(qt_dx_rinv - d_omega, r);
  return {{q, r}, {dq, dr}};
}

// JAX's _lu_jvp_rule (square): with P dA's rows permuted, X = L^-1 P dA U^-1,
// dL = L tril(X, -1) and dU = triu(X) U; d(lu) = dL + dU.
inline std::pair<LuOut, LuOut> LuRule::operator()(const Tangents& p, const Tangents& t) const {
  auto [packed, pivots, perm] = lu_fn()(std::get<0>(p));
  const std::int64_t n = packed.dim(0);
  Tensor l = tril(packed, -1) + eye(n, packed.dtype());
  Tensor u = triu(packed);
  Tensor x = take(std::get<0>(t), perm, 0, TakeMode::kClip);
  Tensor la = triangular_solve(l, x, true, true, false, true);
  Tensor lau = triangular_solve(u, la, false, false);
  Tensor d = matmul(l, tril(lau, -1)) + matmul(triu(lau), u);
  return {{packed, pivots, perm}, {d, zeros_like(pivots), zeros_like(perm)}};
}

}  // namespace detail

}  // namespace np::linalg
}  // namespace pjrt_lite
