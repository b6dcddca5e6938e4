#pragma once
// jnp.linalg / lax.linalg over Tensors, differentiable with JAX's rules: cholesky, eigh, qr,
// svd, lu, triangular_solve, solve, inv, det and slogdet, in np::linalg. Include this header
// for them (pjrt_lite/frontend.hpp does not: it keeps the custom_jvp machinery out of every
// front-end translation unit).
//
// The factorizations run jaxlib's LAPACK routines (the IR's linalg op: potrf, syevd,
// geqrf + orgqr, gesdd, getrf) and carry JAX's jvp rules (jax/_src/lax/linalg.py:
// cholesky_jvp_rule, eigh_jvp_rule, qr_jvp_rule, _svd_jvp_rule, _lu_jvp_rule) as custom_jvp
// rules (frontend/custom_derivatives.hpp) written with triangular solves, products and masks,
// so reverse mode transposes them and the next order differentiates the rule, which calls
// the factorization again. A custom_jvp traces its rule when it is called, so the rule calls
// the factorization one level down: kLinalgDerivativeOrders levels carry a rule, the last
// one is the bare routine, whose linalg op differentiates by the IR's rules for the routines
// (transforms/detail/linalg_rules.hpp: potrf, syevd, gesdd, getrf, the same rules); qr's
// geqrf and orgqr have none, so qr's derivatives of a higher order are UNIMPLEMENTED naming
// linalg geqrf, never a wrong value. triangular_solve is the IR op, which has
// both rules in autodiff. solve, inv, det and slogdet are built on lu (row permutation and
// two triangular solves, the product or log-sum of U's diagonal), as jnp.linalg computes
// them, and differentiate through lu's rule.
//
// Operands are f32 or f64 matrices [..., m, n] (leading dimensions are batch dimensions);
// complex matrices are refused (INVALID_ARGUMENT), as are wrong ranks and shapes, recorded in
// the trace as everywhere in np::. cholesky and eigh symmetrize their input first
// ((x + x^T) / 2, as jnp.linalg does); qr and svd are the reduced ones; qr needs m >= n (JAX
// has no qr rule for m < n). A failed factorization (cholesky of a matrix that is not
// positive definite, an svd or eigh that does not converge) gives NaNs, as JAX's do.
// Non-differentiable points: eigh's derivative divides by the differences of eigenvalues
// (inf/NaN where two are equal, as JAX's), svd's masks equal singular values (the rule's F and
// 1/s are 0 there, so the result is finite but not a derivative; JAX's current rule masks only
// F's diagonal and gives inf/NaN there), lu, solve, inv, det and slogdet of a singular matrix
// divide by a zero pivot (as JAX's).

#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/custom_derivatives.hpp"
#include "pjrt_lite/frontend/tensor.hpp"

namespace pjrt_lite::inline v0_1 {
namespace np::linalg {

/// How many orders of derivatives the factorizations carry (their rules nest this deep).
inline constexpr int kLinalgDerivativeOrders = 3;

namespace detail {

// x checked as an f32 or f64 matrix [..., m, n] (square if `square`, m >= n if `tall`), or
// null after recording why in the trace.
inline Trace* matrix(const char* op, Tensor& x, bool square, bool tall = false) {
  Trace* t = np::detail::resolve(op, {&x});
  if (t == nullptr) return nullptr;
  if (is_complex(x.dtype())) {
    np::detail::fail(t, invalid_argument_error(str_cat(
                            op, ": complex matrices are not supported (f32 or f64), got ", x.shape())));
    return nullptr;
  }
  if (x.rank() < 2 || !(x.dtype() == DType::kF32 || x.dtype() == DType::kF64) ||
      (square && x.dim(-1) != x.dim(-2)) || (tall && x.dim(-2) < x.dim(-1))) {
    np::detail::fail(t, invalid_argument_error(str_cat(
                            op, ": takes ", square ? "square " : tall ? "tall (rows >= columns) " : "",
                            "f32 or f64 matrices [..., m, n] (rank >= 2), got ", x.shape())));
    return nullptr;
  }
  return t;
}

// The last two axes swapped (JAX's _T).
inline Tensor mT(const Tensor& x) {
  std::vector<std::int64_t> perm;
  for (std::int64_t d = 0; d < x.rank(); ++d) perm.push_back(d);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return np::transpose(x, perm);
}

// column - row of each element of a [..., m, n] shape, s32.
inline Tensor column_minus_row(const Tensor& x) {
  Trace* t = x.trace();
  GraphBuilder& b = t->builder();
  const Shape s(DType::kS32, x.dims());
  return t->wrap(b.iota(s, x.rank() - 1)) - t->wrap(b.iota(s, x.rank() - 2));
}
// The elements on or below diagonal k (jnp.tril), others 0.
inline Tensor tril(const Tensor& x, std::int64_t k = 0) {
  return where(column_minus_row(x) <= static_cast<std::int32_t>(k), x, zeros_like(x));
}
// The elements on or above diagonal k (jnp.triu), others 0.
inline Tensor triu(const Tensor& x, std::int64_t k = 0) {
  return where(column_minus_row(x) >= static_cast<std::int32_t>(k), x, zeros_like(x));
}
// The diagonal of square matrices [..., n, n] as [..., n].
inline Tensor diagonal(const Tensor& x) { return sum(x * eye(x.dim(-1), x.dtype()), {x.rank() - 1}); }
// Vectors [..., n] as diagonal matrices [..., n, n].
inline Tensor diag_matrix(const Tensor& v) { return expand_dims(v, v.rank()) * eye(v.dim(-1), v.dtype()); }
// The first `rows` rows of x [..., m, n].
inline Tensor top_rows(const Tensor& x, std::int64_t rows) {
  std::vector<std::int64_t> limit = x.dims();
  limit[limit.size() - 2] = rows;
  return slice(x, std::vector<std::int64_t>(limit.size(), 0), limit);
}

// x where `info` (s32 [...], LAPACK's status per matrix) is 0, NaN elsewhere, as JAX turns a
// failed factorization.
inline Tensor checked(const Tensor& x, const Tensor& info) {
  std::vector<std::int64_t> dims = info.dims();
  while (static_cast<std::int64_t>(dims.size()) < x.rank()) dims.push_back(1);
  Tensor ok = broadcast_to(reshape(info == 0, dims), x.dims());
  return where(ok, x, full_like(x, std::numeric_limits<double>::quiet_NaN()));
}

inline std::vector<Tensor> call(const std::vector<Tensor>& operands, LinalgRoutine r,
                                std::int64_t mode = 'V') {
  Trace* t = operands[0].trace();
  LinalgAttrs a;
  a.routine = r;
  a.mode = mode;
  a.uplo = 'L';
  std::vector<Value> ops;
  for (const Tensor& o : operands) ops.push_back(o.value());
  std::vector<Tensor> out;
  for (Value v : t->builder().linalg(ops, a)) out.push_back(t->wrap(v));
  return out;
}

// The permutation matrices P [..., n, n] with P[i, j] = (perm[i] == j), of `dtype`, for
// permutations [..., n] (any real type): P x permutes the rows of x as x[perm].
inline Tensor permutation_matrix(const Tensor& perm, DType dtype) {
  Trace* t = perm.trace();
  std::vector<std::int64_t> dims = perm.dims();
  dims.push_back(perm.dim(-1));
  Tensor cols = t->wrap(t->builder().iota(Shape(dtype, dims), static_cast<std::int64_t>(dims.size()) - 1));
  return (expand_dims(perm.astype(dtype), perm.rank()) == cols).astype(dtype);
}

// getrf's 0-based row swaps [..., k] as the permutation [..., m] of the rows they make
// (lax.linalg.lu_pivots_to_permutation), with masks so that batches work.
inline Tensor pivots_to_permutation(const Tensor& pivots, std::int64_t m) {
  Trace* t = pivots.trace();
  std::vector<std::int64_t> dims = pivots.dims();
  const std::int64_t last = static_cast<std::int64_t>(dims.size()) - 1;
  dims.back() = m;
  const Tensor idx = t->wrap(t->builder().iota(Shape(DType::kS32, dims), last));
  Tensor perm = idx;
  std::vector<std::int64_t> start(dims.size(), 0), limit = pivots.dims();
  for (std::int64_t k = 0; k < pivots.dim(-1); ++k) {
    start.back() = k;
    limit.back() = k + 1;
    const Tensor p = slice(pivots, start, limit);  // [..., 1]
    const Tensor at_k = slice(perm, start, limit);
    const Tensor at_p = sum(where(idx == p, perm, zeros_like(perm)), {last}, true);
    perm = where(idx == static_cast<std::int32_t>(k), at_p, where(idx == p, at_k, perm));
  }
  return perm;
}

// The unit lower and the upper factor packed in getrf's output (square).
inline Tensor unit_lower(const Tensor& packed) { return tril(packed, -1) + eye(packed.dim(-1), packed.dtype()); }

// --- The bare routines (the primal functions) -------------------------------------------

inline Tensor cholesky_routine(const Tensor& x) {
  std::vector<Tensor> r = call({x}, LinalgRoutine::kPotrf);
  return checked(tril(r[0]), r[1]);
}

// (w ascending, v with the eigenvectors as columns).
inline std::pair<Tensor, Tensor> eigh_routine(const Tensor& x) {
  std::vector<Tensor> r = call({x}, LinalgRoutine::kSyevd, 'V');
  return {checked(r[1], r[2]), checked(r[0], r[2])};
}

inline std::pair<Tensor, Tensor> qr_routine(const Tensor& x) {
  std::vector<Tensor> f = call({x}, LinalgRoutine::kGeqrf);
  Tensor q = call({f[0], f[1]}, LinalgRoutine::kOrgqr)[0];
  return {q, triu(top_rows(f[0], x.dim(-1)))};
}

// (u [..., m, k], s [..., k] descending, vt [..., k, n]).
inline std::tuple<Tensor, Tensor, Tensor> svd_routine(const Tensor& x) {
  std::vector<Tensor> r = call({x}, LinalgRoutine::kGesdd, 'S');
  return {checked(r[2], r[4]), checked(r[1], r[4]), checked(r[3], r[4])};
}

// (lu packed, pivots, permutation), the last two 0-based and in x's (float) type so that the
// custom_jvp's outputs are all floats (their tangents are zero).
inline std::tuple<Tensor, Tensor, Tensor> lu_routine(const Tensor& x) {
  std::vector<Tensor> r = call({x}, LinalgRoutine::kGetrf);
  const Tensor pivots = r[1] - 1;
  return {r[0], pivots.astype(x.dtype()), pivots_to_permutation(pivots, x.dim(-2)).astype(x.dtype())};
}

// --- The routines with their rules, `depth` levels deep ---------------------------------

using Primal = std::tuple<Tensor>;

inline Tensor cholesky_at(int depth, const Tensor& x);
inline std::pair<Tensor, Tensor> eigh_at(int depth, const Tensor& x);
inline std::pair<Tensor, Tensor> qr_at(int depth, const Tensor& x);
inline std::tuple<Tensor, Tensor, Tensor> svd_at(int depth, const Tensor& x);
inline std::tuple<Tensor, Tensor, Tensor> lu_at(int depth, const Tensor& x);

}  // namespace detail

/// lax.linalg.triangular_solve with JAX's defaults: x with op(a) x = b (left_side) or
/// x op(a) = b, reading a's lower (or upper) triangle, op(a) = a^T when transpose_a, a's
/// diagonal taken as ones when unit_diagonal. a [..., k, k], b [..., m, n] with the same batch
/// dimensions. Both operands are differentiable (the IR op's rules).
inline Tensor triangular_solve(Tensor a, Tensor b, bool left_side = false, bool lower = false,
                               bool transpose_a = false, bool unit_diagonal = false) {
  Trace* t = detail::matrix("triangular_solve", a, true);
  if (t == nullptr || detail::matrix("triangular_solve", b, false) == nullptr) return Tensor();
  if ((t = np::detail::resolve("triangular_solve", {&a, &b})) == nullptr) return Tensor();
  TriangularSolveAttrs attrs{left_side, lower, unit_diagonal,
                             transpose_a ? Transpose::kTranspose : Transpose::kNoTranspose};
  return t->wrap(t->builder().triangular_solve(a.value(), b.value(), attrs));
}

/// jnp.linalg.cholesky: the lower factor L of (x + x^T) / 2 = L L^T (NaNs where that is not
/// positive definite).
inline Tensor cholesky(Tensor x) {
  if (detail::matrix("cholesky", x, true) == nullptr) return Tensor();
  return detail::cholesky_at(kLinalgDerivativeOrders, (x + detail::mT(x)) * 0.5);
}

/// jnp.linalg.eigh: (w, v) with (x + x^T) / 2 = v diag(w) v^T, w ascending, the columns of v
/// the eigenvectors.
inline std::pair<Tensor, Tensor> eigh(Tensor x) {
  if (detail::matrix("eigh", x, true) == nullptr) return {};
  return detail::eigh_at(kLinalgDerivativeOrders, (x + detail::mT(x)) * 0.5);
}

/// jnp.linalg.eigvalsh: eigh's w.
inline Tensor eigvalsh(const Tensor& x) { return eigh(x).first; }

/// jnp.linalg.qr(x, mode="reduced") of x [..., m, n] with m >= n: (q [..., m, n], r [..., n, n]).
inline std::pair<Tensor, Tensor> qr(Tensor x) {
  if (detail::matrix("qr", x, false, true) == nullptr) return {};
  return detail::qr_at(kLinalgDerivativeOrders, x);
}

/// jnp.linalg.svd(x, full_matrices=False): (u [..., m, k], s [..., k] descending,
/// vh [..., k, n]) with k = min(m, n) and x = u diag(s) vh.
inline std::tuple<Tensor, Tensor, Tensor> svd(Tensor x) {
  if (detail::matrix("svd", x, false) == nullptr) return {};
  return detail::svd_at(kLinalgDerivativeOrders, x);
}

/// jnp.linalg.svd(x, compute_uv=False): the singular values, descending.
inline Tensor svdvals(const Tensor& x) { return std::get<1>(svd(x)); }

/// lax.linalg.lu of square matrices: (lu, pivots, permutation) with x[permutation] = L U, L
/// unit lower and U upper packed in lu, pivots (s32) the 0-based row swaps getrf made and
/// permutation (s32) the rows they select.
inline std::tuple<Tensor, Tensor, Tensor> lu(Tensor x) {
  if (detail::matrix("lu", x, true) == nullptr) return {};
  auto [packed, pivots, perm] = detail::lu_at(kLinalgDerivativeOrders, x);
  return {packed, pivots.astype(DType::kS32), perm.astype(DType::kS32)};
}

/// jnp.linalg.solve: x with a x = b, for b [..., n, k] (a's batch dimensions) or a vector
/// b [..., n].
inline Tensor solve(Tensor a, Tensor b) {
  Trace* t = detail::matrix("solve", a, true);
  if (t == nullptr || (t = np::detail::resolve("solve", {&a, &b})) == nullptr) return Tensor();
  const bool vector = b.rank() == a.rank() - 1;
  std::vector<std::int64_t> want = a.dims();
  if (vector) want.pop_back();
  bool ok = b.dtype() == a.dtype() && (vector || b.rank() == a.rank());
  // a's batch dimensions, then n.
  for (std::size_t d = 0; ok && d < static_cast<std::size_t>(a.rank()) - 1; ++d) ok = b.dims()[d] == want[d];
  if (!ok)
    return np::detail::fail(t, invalid_argument_error(str_cat(
                                   "solve: b must be [..., n, k] or [..., n] with a's batch dimensions and dtype for a of ",
                                   a.shape(), ", got ", b.shape())));
  if (vector) b = expand_dims(b, b.rank());
  auto [packed, pivots, perm] = detail::lu_at(kLinalgDerivativeOrders, a);
  const Tensor pb = matmul(detail::permutation_matrix(perm, a.dtype()), b);
  const Tensor y = triangular_solve(packed, pb, true, true, false, true);
  const Tensor x = triangular_solve(packed, y, true, false);
  return vector ? squeeze(x, {-1}) : x;
}

/// jnp.linalg.inv.
inline Tensor inv(Tensor a) {
  if (detail::matrix("inv", a, true) == nullptr) return Tensor();
  return solve(a, broadcast_to(eye(a.dim(-1), a.dtype()), a.dims()));
}

namespace detail {

// (-1)^(the number of row swaps) [...] in `dtype`.
inline Tensor swap_parity(const Tensor& pivots, DType dtype) {
  Trace* t = pivots.trace();
  const Tensor idx = t->wrap(t->builder().iota(pivots.shape(), pivots.rank() - 1));
  const Tensor swaps = sum((pivots != idx).astype(DType::kS32), {pivots.rank() - 1});
  return (1 - 2 * (swaps & 1)).astype(dtype);
}

}  // namespace detail

/// jnp.linalg.slogdet: (sign, log|det|).
inline std::pair<Tensor, Tensor> slogdet(Tensor a) {
  if (detail::matrix("slogdet", a, true) == nullptr) return {};
  auto [packed, pivots, perm] = detail::lu_at(kLinalgDerivativeOrders, a);
  const Tensor d = detail::diagonal(packed);
  const std::int64_t last = d.rank() - 1;
  return {detail::swap_parity(pivots, a.dtype()) * prod(sign(d), {last}), sum(log(abs(d)), {last})};
}

/// jnp.linalg.det.
inline Tensor det(Tensor a) {
  if (detail::matrix("det", a, true) == nullptr) return Tensor();
  auto [packed, pivots, perm] = detail::lu_at(kLinalgDerivativeOrders, a);
  const Tensor d = detail::diagonal(packed);
  return detail::swap_parity(pivots, a.dtype()) * prod(d, {d.rank() - 1});
}

namespace detail {

// JAX's cholesky_jvp_rule: dL = L phi(L^-1 dA L^-T), phi the lower triangle with the
// diagonal halved.
inline Tensor cholesky_at(int depth, const Tensor& x) {
  if (depth == 0) return cholesky_routine(x);
  auto f = custom_jvp([](const Tensor& a) { return cholesky_routine(a); },
                      [depth](const Primal& p, const Primal& t) {
                        const Tensor l = cholesky_at(depth - 1, std::get<0>(p));
                        const Tensor tmp = triangular_solve(l, std::get<0>(t), false, true, true);
                        const Tensor inner = triangular_solve(l, tmp, true, true);
                        const Tensor phi = tril(inner) * (1.0 - 0.5 * eye(l.dim(-1), l.dtype()));
                        return std::pair{l, matmul(l, phi)};
                      });
  return f(x);
}

// JAX's eigh_jvp_rule: with F[i, j] = 1 / (w_j - w_i) off the diagonal (0 on it) and
// M = v^T dA v, dw = diag(M), dv = v (F * M).
inline std::pair<Tensor, Tensor> eigh_at(int depth, const Tensor& x) {
  if (depth == 0) return eigh_routine(x);
  auto f = custom_jvp([](const Tensor& a) { return eigh_routine(a); },
                      [depth](const Primal& p, const Primal& t) {
                        auto [w, v] = eigh_at(depth - 1, std::get<0>(p));
                        const std::int64_t r = v.rank();
                        const Tensor id = eye(w.dim(-1), w.dtype());
                        const Tensor fmat = 1.0 / (id + expand_dims(w, r - 2) - expand_dims(w, r - 1)) - id;
                        const Tensor m = matmul(matmul(mT(v), std::get<0>(t)), v);
                        return std::pair{std::pair{w, v}, std::pair{diagonal(m), matmul(v, fmat * m)}};
                      });
  return f(x);
}

// JAX's qr_jvp_rule (reduced, m >= n): with X = Q^T dA R^-1 and dO = tril(X, -1) - its
// transpose, dQ = Q (dO - X) + dA R^-1 and dR = (X - dO) R.
inline std::pair<Tensor, Tensor> qr_at(int depth, const Tensor& x) {
  if (depth == 0) return qr_routine(x);
  auto f = custom_jvp([](const Tensor& a) { return qr_routine(a); },
                      [depth](const Primal& p, const Primal& t) {
                        auto [q, r] = qr_at(depth - 1, std::get<0>(p));
                        const Tensor dx_rinv = triangular_solve(r, std::get<0>(t));  // dA R^-1
                        const Tensor qt_dx_rinv = matmul(mT(q), dx_rinv);
                        const Tensor lower = tril(qt_dx_rinv, -1);
                        const Tensor d_omega = lower - mT(lower);
                        const Tensor dq = matmul(q, d_omega - qt_dx_rinv) + dx_rinv;
                        const Tensor dr = matmul(qt_dx_rinv - d_omega, r);
                        return std::pair{std::pair{q, r}, std::pair{dq, dr}};
                      });
  return f(x);
}

// JAX's _svd_jvp_rule (reduced): dS = U^T dA V, ds = diag(dS); F[i, j] = 1 / (s_j^2 - s_i^2)
// off the diagonal, 0 where s_j^2 = s_i^2; dU = U (F * (dS S + S dS^T)) (+ the part of dA V
// outside U's span when m > n), dV likewise with the roles swapped.
inline std::tuple<Tensor, Tensor, Tensor> svd_at(int depth, const Tensor& x) {
  if (depth == 0) return svd_routine(x);
  auto f = custom_jvp(
      [](const Tensor& a) { return svd_routine(a); },
      [depth](const Primal& p, const Primal& t) {
        const Tensor& a = std::get<0>(p);
        const Tensor& da = std::get<0>(t);
        auto [u, s, vt] = svd_at(depth - 1, a);
        const DType dt = a.dtype();
        const Tensor ut = mT(u), v = mT(vt);
        const Tensor s_row = expand_dims(s, s.rank() - 1);  // [..., 1, k]
        const Tensor s_col = mT(s_row);
        const Tensor ds_mat = matmul(matmul(ut, da), v);
        const Tensor ds = diagonal(ds_mat);
        const Tensor s_diffs = (s_row + s_col) * (s_row - s_col);
        const Tensor s_diffs_zeros = (s_diffs == 0.0).astype(dt);
        const Tensor fmat = 1.0 / (s_diffs + s_diffs_zeros) - s_diffs_zeros;
        const Tensor dss = s_row * ds_mat;  // dS diag(s)
        const Tensor sds = s_col * ds_mat;  // diag(s) dS
        const Tensor s_zeros = (s == 0.0).astype(dt);
        const Tensor s_inv = 1.0 / (s + s_zeros) - s_zeros;
        const Tensor dudv_diag = 0.5 * (ds_mat - mT(ds_mat)) * diag_matrix(s_inv);
        Tensor du = matmul(u, fmat * (dss + mT(dss)) + dudv_diag);
        Tensor dv = matmul(v, fmat * (sds + mT(sds)));
        const std::int64_t m = a.dim(-2), n = a.dim(-1);
        if (m > n) {
          const Tensor dav = matmul(da, v);
          du = du + (dav - matmul(u, matmul(ut, dav))) / s_row;
        }
        if (n > m) {
          const Tensor dahu = matmul(mT(da), u);
          dv = dv + (dahu - matmul(v, matmul(vt, dahu))) / s_row;
        }
        return std::pair{std::tuple{u, s, vt}, std::tuple{du, ds, mT(dv)}};
      });
  return f(x);
}

// JAX's _lu_jvp_rule (square): with X = L^-1 P dA U^-1, d(lu) = L tril(X, -1) + triu(X) U;
// the pivots and the permutation have zero tangents.
inline std::tuple<Tensor, Tensor, Tensor> lu_at(int depth, const Tensor& x) {
  if (depth == 0) return lu_routine(x);
  auto f = custom_jvp([](const Tensor& a) { return lu_routine(a); },
                      [depth](const Primal& p, const Primal& t) {
                        auto [packed, pivots, perm] = lu_at(depth - 1, std::get<0>(p));
                        const Tensor l = unit_lower(packed);
                        const Tensor u = triu(packed);
                        const Tensor pa = matmul(permutation_matrix(perm, packed.dtype()), std::get<0>(t));
                        const Tensor la = triangular_solve(l, pa, true, true, false, true);
                        const Tensor lau = triangular_solve(u, la, false, false);
                        const Tensor d = matmul(l, tril(lau, -1)) + matmul(triu(lau), u);
                        return std::pair{std::tuple{packed, pivots, perm},
                                         std::tuple{d, zeros_like(pivots), zeros_like(perm)}};
                      });
  return f(x);
}

}  // namespace detail

}  // namespace np::linalg
}  // namespace pjrt_lite
