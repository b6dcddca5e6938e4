#pragma once
// The reference interpreter's linalg node (jaxlib's LAPACK custom calls): textbook algorithms
// in complex<long double>, one matrix at a time, rounded once to the result type. Real inputs
// run the same code; their imaginary parts stay zero. This is the oracle for the CPU kernel
// (backends/cpu/detail/linalg_kernel.hpp), which uses Eigen's decompositions instead:
//   getrf  unblocked Gaussian elimination, pivot = first max of |re| + |im| (LAPACK's i?amax)
//   potrf  column-by-column Cholesky (Cholesky-Banachiewicz)
//   geqrf  unblocked Householder QR with LAPACK's ?larfg reflectors
//   orgqr  the reflectors applied backwards to the first n columns of the identity
//   gesdd  one-sided (Hestenes) Jacobi SVD; gesvd the same
//   syevd  cyclic complex Jacobi eigenvalue iteration, then sorted ascending
//   trsm   the reference triangular_solve
//   gehrd  unblocked Householder reduction (?gehd2): H(i) from the right, then H(i)^H left
//   sytrd  unblocked Householder tridiagonalization (?sytd2 / ?hetd2), either triangle
//   gtsv   Gaussian elimination with partial pivoting on the three diagonals (?gtsv)
//   ormqr  the reflectors applied one by one in the order op(Q) needs
//   geqp3  ?laqp2's column pivoting with its downdated norms
//   geev   Hessenberg reduction, single-shift complex QR iteration to the Schur form, then
//          eigenvectors by back substitution; a real input's conjugate pairs ordered as LAPACK
//   gees   complex: the same Schur form; real: Francis double-shift QR iteration, then each
//          2x2 block in LAPACK's standard form.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <type_traits>
#include <vector>

#include "pjrt_lite/backends/reference/triangular_solve.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::reference::detail {

namespace linalg {

using W = std::complex<long double>;
using R = long double;

/// A dense column-major matrix of W: element (i, j) at i + j * rows.
struct Mat {
  std::int64_t rows = 0, cols = 0;
  std::vector<W> v;
  Mat() = default;
  Mat(std::int64_t r, std::int64_t c) : rows(r), cols(c), v(static_cast<std::size_t>(r * c)) {}
  W& operator()(std::int64_t i, std::int64_t j) { return v[static_cast<std::size_t>(i + j * rows)]; }
  W operator()(std::int64_t i, std::int64_t j) const {
    return v[static_cast<std::size_t>(i + j * rows)];
  }
  static Mat identity(std::int64_t r, std::int64_t c) {
    Mat m(r, c);
    for (std::int64_t i = 0; i < std::min(r, c); ++i) m(i, i) = 1;
    return m;
  }
};

/// Every element of `l` widened to W, in row-major order.
inline std::vector<W> widen(const Literal& l) {
  std::vector<W> out(static_cast<std::size_t>(l.element_count()));
  visit_dtype(l.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (is_complex_v<T> || is_float_v<T>) {
      auto in = l.template data<T>();
      for (std::size_t i = 0; i < out.size(); ++i) {
        const c128 x = convert_element<c128>(in[i]);
        out[i] = W(x.real(), x.imag());
      }
    }
  });
  return out;
}

/// Writes `x` (row-major, as many as the literal holds from `at`) into `l`, rounded once.
inline void narrow_into(Literal& l, std::int64_t at, const std::vector<W>& x) {
  visit_dtype(l.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr (is_complex_v<T>) {
      using C = typename T::value_type;
      auto out = l.template data<T>();
      for (std::size_t i = 0; i < x.size(); ++i)
        out[static_cast<std::size_t>(at) + i] =
            T(static_cast<C>(x[i].real()), static_cast<C>(x[i].imag()));
    } else if constexpr (is_float_v<T>) {
      auto out = l.template data<T>();
      for (std::size_t i = 0; i < x.size(); ++i)
        out[static_cast<std::size_t>(at) + i] = static_cast<T>(x[i].real());
    } else if constexpr (std::is_same_v<T, std::int32_t>) {
      auto out = l.template data<T>();
      for (std::size_t i = 0; i < x.size(); ++i)
        out[static_cast<std::size_t>(at) + i] = static_cast<std::int32_t>(x[i].real());
    }
  });
}

/// Matrix `b` of a batch held row-major in `flat`.
inline Mat matrix_at(const std::vector<W>& flat, std::int64_t b, std::int64_t rows, std::int64_t cols) {
  Mat m(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      m(i, j) = flat[static_cast<std::size_t>(b * rows * cols + i * cols + j)];
  return m;
}
inline std::vector<W> row_major(const Mat& m) {
  std::vector<W> out(static_cast<std::size_t>(m.rows * m.cols));
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (std::int64_t j = 0; j < m.cols; ++j) out[static_cast<std::size_t>(i * m.cols + j)] = m(i, j);
  return out;
}

inline R cabs1(W x) { return std::fabs(x.real()) + std::fabs(x.imag()); }
inline bool all_finite(const Mat& m) {
  for (W x : m.v)
    if (!std::isfinite(x.real()) || !std::isfinite(x.imag())) return false;
  return true;
}

/// getrf: a = P L U in place; pivots 1-based; info the first zero pivot (1-based) or 0.
inline std::int64_t getrf(Mat& a, std::vector<W>& pivots) {
  const std::int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  std::int64_t info = 0;
  for (std::int64_t j = 0; j < k; ++j) {
    std::int64_t p = j;
    for (std::int64_t i = j + 1; i < m; ++i)
      if (cabs1(a(i, j)) > cabs1(a(p, j))) p = i;
    pivots[static_cast<std::size_t>(j)] = W(static_cast<R>(p + 1), 0);
    if (a(p, j) == W(0)) {
      if (info == 0) info = j + 1;
      continue;
    }
    if (p != j)
      for (std::int64_t c = 0; c < n; ++c) std::swap(a(p, c), a(j, c));
    for (std::int64_t i = j + 1; i < m; ++i) a(i, j) /= a(j, j);
    for (std::int64_t c = j + 1; c < n; ++c)
      for (std::int64_t i = j + 1; i < m; ++i) a(i, c) -= a(i, j) * a(j, c);
  }
  return info;
}

/// potrf: the Cholesky factor in the `lower` triangle (or its adjoint in the upper), the
/// other triangle untouched. info: the first column (1-based) whose pivot is not positive.
inline std::int64_t potrf(Mat& a, bool lower) {
  const std::int64_t n = a.rows;
  // h(i, j) for i >= j: the lower triangle of the Hermitian matrix the triangle stands for.
  auto h = [&](std::int64_t i, std::int64_t j) { return lower ? a(i, j) : std::conj(a(j, i)); };
  Mat l(n, n);
  for (std::int64_t j = 0; j < n; ++j) {
    R d = h(j, j).real();
    for (std::int64_t c = 0; c < j; ++c) d -= std::norm(l(j, c));
    if (!(d > 0)) return j + 1;
    l(j, j) = std::sqrt(d);
    for (std::int64_t i = j + 1; i < n; ++i) {
      W s = h(i, j);
      for (std::int64_t c = 0; c < j; ++c) s -= l(i, c) * std::conj(l(j, c));
      l(i, j) = s / l(j, j);
    }
    for (std::int64_t i = j; i < n; ++i) {
      if (lower) a(i, j) = l(i, j);
      else a(j, i) = std::conj(l(i, j));
    }
  }
  return 0;
}

/// LAPACK's ?larfg on the column segment a(r.., c): makes the reflector, leaves beta in
/// a(r, c) and v(2..) below it, returns tau.
inline W larfg(Mat& a, std::int64_t r, std::int64_t c) {
  const W alpha = a(r, c);
  R xnorm2 = 0;
  for (std::int64_t i = r + 1; i < a.rows; ++i) xnorm2 += std::norm(a(i, c));
  if (xnorm2 == 0 && alpha.imag() == 0) return W(0);
  R beta = std::sqrt(std::norm(alpha) + xnorm2);
  if (alpha.real() >= 0) beta = -beta;
  const W tau = (W(beta) - alpha) / W(beta);
  const W scale = W(1) / (alpha - W(beta));
  for (std::int64_t i = r + 1; i < a.rows; ++i) a(i, c) *= scale;
  a(r, c) = beta;
  return tau;
}

/// Applies (I - tau v v^H) from the left to columns [c0, c1) of `x`, v = (1, a(r+1.., vc)).
inline void apply_reflector(const Mat& a, std::int64_t r, std::int64_t vc, W tau, Mat& x,
                            std::int64_t c0, std::int64_t c1) {
  if (tau == W(0)) return;
  for (std::int64_t c = c0; c < c1; ++c) {
    W s = x(r, c);
    for (std::int64_t i = r + 1; i < x.rows; ++i) s += std::conj(a(i, vc)) * x(i, c);
    s *= tau;
    x(r, c) -= s;
    for (std::int64_t i = r + 1; i < x.rows; ++i) x(i, c) -= a(i, vc) * s;
  }
}

inline void geqrf(Mat& a, std::vector<W>& tau) {
  const std::int64_t k = std::min(a.rows, a.cols);
  for (std::int64_t j = 0; j < k; ++j) {
    tau[static_cast<std::size_t>(j)] = larfg(a, j, j);
    // H^H = I - conj(tau) v v^H on the trailing columns, as ?geqr2 does.
    Mat& x = a;
    const W t = std::conj(tau[static_cast<std::size_t>(j)]);
    const W beta = a(j, j);
    a(j, j) = 1;
    apply_reflector(a, j, j, t, x, j + 1, a.cols);
    a(j, j) = beta;
  }
}

/// orgqr: Q's first n columns, Q = H(1) ... H(k), from geqrf's `a` and `tau`.
inline Mat orgqr(const Mat& a, const std::vector<W>& tau) {
  Mat q = Mat::identity(a.rows, a.cols);
  for (auto j = static_cast<std::int64_t>(tau.size()) - 1; j >= 0; --j)
    apply_reflector(a, j, j, tau[static_cast<std::size_t>(j)], q, 0, q.cols);
  return q;
}

/// The 2x2 unitary [[c, s], [-s e^{-i phi}, c e^{-i phi}]] that diagonalizes the Hermitian
/// [[app, apq], [conj(apq), aqq]] by V^H A V (a real Jacobi rotation after a phase).
struct Rotation {
  W pp, pq, qp, qq;
};
inline Rotation jacobi_rotation(R app, R aqq, W apq) {
  const R mag = std::abs(apq);
  // conj(apq) / |apq|, not polar(1, -arg(apq)): a real apq gives exactly +-1, so real inputs
  // stay real (arg's pi would leave an imaginary rounding error to grow over the sweeps).
  const W phase = std::conj(apq) / mag;
  const R theta = (aqq - app) / (2 * mag);
  const R t = (theta >= 0 ? R(1) : R(-1)) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
  const R c = 1 / std::sqrt(t * t + 1), s = t * c;
  return {W(c), W(s), W(-s) * phase, W(c) * phase};
}
/// x(:, [p, q]) = x(:, [p, q]) * V.
inline void rotate_columns(Mat& x, std::int64_t p, std::int64_t q, const Rotation& v) {
  for (std::int64_t i = 0; i < x.rows; ++i) {
    const W xp = x(i, p), xq = x(i, q);
    x(i, p) = xp * v.pp + xq * v.qp;
    x(i, q) = xp * v.pq + xq * v.qq;
  }
}

/// syevd: eigenvalues ascending and the eigenvectors as columns, of the Hermitian matrix the
/// `lower` (or upper) triangle of `a` stands for.
inline void syevd(const Mat& a, bool lower, std::vector<R>& w, Mat& vectors) {
  const std::int64_t n = a.rows;
  Mat h(n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j <= i; ++j) {
      const W x = lower ? a(i, j) : std::conj(a(j, i));
      h(i, j) = i == j ? W(x.real()) : x;
      h(j, i) = std::conj(h(i, j));
    }
  Mat v = Mat::identity(n, n);
  for (int sweep = 0; sweep < 100; ++sweep) {
    R off = 0, total = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        total += std::norm(h(i, j));
        if (i != j) off += std::norm(h(i, j));
      }
    if (off <= total * R(1e-36L) || off == 0) break;
    for (std::int64_t p = 0; p < n; ++p)
      for (std::int64_t q = p + 1; q < n; ++q) {
        if (h(p, q) == W(0)) continue;
        const Rotation r = jacobi_rotation(h(p, p).real(), h(q, q).real(), h(p, q));
        rotate_columns(h, p, q, r);
        // Rows: h([p, q], :) = V^H h([p, q], :).
        for (std::int64_t c = 0; c < n; ++c) {
          const W hp = h(p, c), hq = h(q, c);
          h(p, c) = std::conj(r.pp) * hp + std::conj(r.qp) * hq;
          h(q, c) = std::conj(r.pq) * hp + std::conj(r.qq) * hq;
        }
        h(p, q) = h(q, p) = 0;
        h(p, p) = h(p, p).real();
        h(q, q) = h(q, q).real();
        rotate_columns(v, p, q, r);
      }
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t x, std::int64_t y) { return h(x, x).real() < h(y, y).real(); });
  w.resize(static_cast<std::size_t>(n));
  vectors = Mat(n, n);
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t from = order[static_cast<std::size_t>(j)];
    w[static_cast<std::size_t>(j)] = h(from, from).real();
    for (std::int64_t i = 0; i < n; ++i) vectors(i, j) = v(i, from);
  }
}

/// Extends the orthonormal columns [0, have) of `u` to `u.cols` orthonormal columns by
/// Gram-Schmidt (twice) against the unit vectors.
inline void complete_basis(Mat& u, std::int64_t have) {
  std::int64_t next = have;
  for (std::int64_t e = 0; e < u.rows && next < u.cols; ++e) {
    std::vector<W> x(static_cast<std::size_t>(u.rows));
    x[static_cast<std::size_t>(e)] = 1;
    for (int pass = 0; pass < 2; ++pass)
      for (std::int64_t j = 0; j < next; ++j) {
        W d = 0;
        for (std::int64_t i = 0; i < u.rows; ++i) d += std::conj(u(i, j)) * x[static_cast<std::size_t>(i)];
        for (std::int64_t i = 0; i < u.rows; ++i) x[static_cast<std::size_t>(i)] -= d * u(i, j);
      }
    R norm = 0;
    for (W y : x) norm += std::norm(y);
    norm = std::sqrt(norm);
    if (norm < R(1e-6L)) continue;
    for (std::int64_t i = 0; i < u.rows; ++i) u(i, next) = x[static_cast<std::size_t>(i)] / norm;
    ++next;
  }
}

/// SVD of a (m >= n) by one-sided Jacobi: a = u diag(s) v^H, u m x ucols, v n x n.
inline void jacobi_svd_tall(const Mat& a, std::vector<R>& s, Mat& u, Mat& v, std::int64_t ucols) {
  const std::int64_t m = a.rows, n = a.cols;
  Mat x = a;
  v = Mat::identity(n, n);
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (std::int64_t p = 0; p < n; ++p)
      for (std::int64_t q = p + 1; q < n; ++q) {
        R alpha = 0, beta = 0;
        W gamma = 0;
        for (std::int64_t i = 0; i < m; ++i) {
          alpha += std::norm(x(i, p));
          beta += std::norm(x(i, q));
          gamma += std::conj(x(i, p)) * x(i, q);
        }
        if (std::abs(gamma) <= R(1e-19L) * std::sqrt(alpha * beta) || gamma == W(0)) continue;
        rotated = true;
        const Rotation r = jacobi_rotation(alpha, beta, gamma);
        rotate_columns(x, p, q, r);
        rotate_columns(v, p, q, r);
      }
    if (!rotated) break;
  }
  std::vector<R> norms(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) {
    R t = 0;
    for (std::int64_t i = 0; i < m; ++i) t += std::norm(x(i, j));
    norms[static_cast<std::size_t>(j)] = std::sqrt(t);
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t p, std::int64_t q) {
    return norms[static_cast<std::size_t>(p)] > norms[static_cast<std::size_t>(q)];
  });
  s.assign(static_cast<std::size_t>(n), 0);
  u = Mat(m, ucols);
  Mat vs(n, n);
  std::int64_t have = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t from = order[static_cast<std::size_t>(j)];
    const R sigma = norms[static_cast<std::size_t>(from)];
    s[static_cast<std::size_t>(j)] = sigma;
    for (std::int64_t i = 0; i < n; ++i) vs(i, j) = v(i, from);
    if (sigma > R(1e-30L) * std::max<R>(norms[static_cast<std::size_t>(order[0])], 1)) {
      for (std::int64_t i = 0; i < m; ++i) u(i, j) = x(i, from) / sigma;
      have = j + 1;
    }
  }
  v = vs;
  complete_basis(u, have);
}

/// gesdd / gesvd: s descending, u and vt by `mode` ('A' full, 'S' economy, 'N' none).
inline void svd(const Mat& a, char mode, std::vector<R>& s, Mat& u, Mat& vt) {
  const std::int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  const bool full = mode == 'A';
  if (m >= n) {
    Mat v;
    jacobi_svd_tall(a, s, u, v, full ? m : k);
    vt = Mat(n, n);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) vt(i, j) = std::conj(v(j, i));
  } else {
    Mat ah(n, m);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) ah(j, i) = std::conj(a(i, j));
    Mat ub, vb;
    jacobi_svd_tall(ah, s, ub, vb, full ? n : k);  // a^H = ub s vb^H, so a = vb s ub^H
    u = vb;
    vt = Mat(ub.cols, n);
    for (std::int64_t i = 0; i < ub.cols; ++i)
      for (std::int64_t j = 0; j < n; ++j) vt(i, j) = std::conj(ub(j, i));
  }
  if (!full) {  // economy: the first k rows of vt
    Mat t(k, n);
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < n; ++j) t(i, j) = vt(i, j);
    vt = t;
  }
}

/// ?larfg on `alpha` and the elements `x` (anywhere in a matrix): the reflector
/// H = I - tau v v^H with v = (1, x / (alpha - beta)) and H^H (alpha, x) = (beta, 0).
/// Returns tau; beta replaces alpha and v's tail replaces x.
inline W larfg_at(W& alpha, const std::vector<W*>& x) {
  R xnorm2 = 0;
  for (const W* e : x) xnorm2 += std::norm(*e);
  if (xnorm2 == 0 && alpha.imag() == 0) return W(0);
  R beta = std::sqrt(std::norm(alpha) + xnorm2);
  if (alpha.real() >= 0) beta = -beta;
  const W tau = (W(beta) - alpha) / W(beta);
  const W scale = W(1) / (alpha - W(beta));
  for (W* e : x) *e *= scale;
  alpha = beta;
  return tau;
}

/// x(rows, c) -= tau v (v^H x(rows, c)) for c in [c0, c1): (I - tau v v^H) from the left.
inline void reflect_left(Mat& x, const std::vector<std::int64_t>& rows, const std::vector<W>& v,
                         W tau, std::int64_t c0, std::int64_t c1) {
  for (std::int64_t c = c0; c < c1; ++c) {
    W s = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) s += std::conj(v[k]) * x(rows[k], c);
    s *= tau;
    for (std::size_t k = 0; k < rows.size(); ++k) x(rows[k], c) -= v[k] * s;
  }
}
/// x(r, cols) -= tau (x(r, cols) v) v^H for r in [r0, r1): (I - tau v v^H) from the right.
inline void reflect_right(Mat& x, const std::vector<std::int64_t>& cols, const std::vector<W>& v,
                          W tau, std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    W s = 0;
    for (std::size_t k = 0; k < cols.size(); ++k) s += x(r, cols[k]) * v[k];
    s *= tau;
    for (std::size_t k = 0; k < cols.size(); ++k) x(r, cols[k]) -= s * std::conj(v[k]);
  }
}
inline std::vector<std::int64_t> range(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

/// gehrd with ilo = 1, ihi = n: a = Q H Q^H, Q = H(1) ... H(n-1).
inline void gehrd(Mat& a, std::vector<W>& tau) {
  const std::int64_t n = a.rows;
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    std::vector<W*> x;
    for (std::int64_t r = i + 2; r < n; ++r) x.push_back(&a(r, i));
    const W t = larfg_at(a(i + 1, i), x);
    tau[static_cast<std::size_t>(i)] = t;
    const W beta = a(i + 1, i);
    std::vector<W> v{W(1)};
    for (std::int64_t r = i + 2; r < n; ++r) v.push_back(a(r, i));
    const std::vector<std::int64_t> idx = range(i + 1, n);
    reflect_right(a, idx, v, t, 0, n);
    reflect_left(a, idx, v, std::conj(t), i + 1, n);
    a(i + 1, i) = beta;
  }
}

/// sytrd / hetrd: Q^H A Q = T (d on the diagonal, e beside it) from the `lower` or upper
/// triangle, the reflectors where LAPACK keeps them.
inline void sytrd(Mat& a, bool lower, std::vector<W>& d, std::vector<W>& e, std::vector<W>& tau) {
  const std::int64_t n = a.rows;
  // One step: v over `idx` (its 1 at `one`), the Hermitian block idx x idx updated in the
  // stored triangle: A -= v w^H + w v^H with w = tau A v - tau/2 (w0^H v) v.
  auto update = [&](const std::vector<std::int64_t>& idx, const std::vector<W>& v, W t) {
    const std::size_t k = idx.size();
    auto h = [&](std::size_t p, std::size_t q) {
      const std::int64_t i = idx[p], j = idx[q];
      const bool stored = lower ? i >= j : i <= j;
      return stored ? a(i, j) : std::conj(a(j, i));
    };
    std::vector<W> w(k);
    for (std::size_t p = 0; p < k; ++p) {
      W s = 0;
      for (std::size_t q = 0; q < k; ++q) s += h(p, q) * v[q];
      w[p] = t * s;
    }
    W dot = 0;
    for (std::size_t p = 0; p < k; ++p) dot += std::conj(w[p]) * v[p];
    const W alpha = W(-0.5L) * t * dot;
    for (std::size_t p = 0; p < k; ++p) w[p] += alpha * v[p];
    for (std::size_t p = 0; p < k; ++p)
      for (std::size_t q = 0; q < k; ++q) {
        const std::int64_t i = idx[p], j = idx[q];
        if (lower ? i >= j : i <= j) a(i, j) -= v[p] * std::conj(w[q]) + w[p] * std::conj(v[q]);
      }
  };
  for (std::int64_t i = 0; i < n; ++i) a(i, i) = a(i, i).real();
  if (lower) {
    for (std::int64_t i = 0; i + 1 < n; ++i) {
      std::vector<W*> x;
      for (std::int64_t r = i + 2; r < n; ++r) x.push_back(&a(r, i));
      const W t = larfg_at(a(i + 1, i), x);
      const W beta = a(i + 1, i);
      if (t != W(0)) {
        std::vector<W> v{W(1)};
        for (std::int64_t r = i + 2; r < n; ++r) v.push_back(a(r, i));
        update(range(i + 1, n), v, t);
      }
      a(i + 1, i) = beta;
      e[static_cast<std::size_t>(i)] = beta.real();
      tau[static_cast<std::size_t>(i)] = t;
    }
  } else {
    for (std::int64_t i = n - 2; i >= 0; --i) {
      std::vector<W*> x;
      for (std::int64_t r = 0; r < i; ++r) x.push_back(&a(r, i + 1));
      const W t = larfg_at(a(i, i + 1), x);
      const W beta = a(i, i + 1);
      if (t != W(0)) {
        std::vector<W> v;
        for (std::int64_t r = 0; r < i; ++r) v.push_back(a(r, i + 1));
        v.push_back(W(1));
        update(range(0, i + 1), v, t);
      }
      a(i, i + 1) = beta;
      e[static_cast<std::size_t>(i)] = beta.real();
      tau[static_cast<std::size_t>(i)] = t;
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    a(i, i) = a(i, i).real();
    d[static_cast<std::size_t>(i)] = a(i, i);
  }
}

/// ?gtsv on the diagonals (l[k] below d[k], u[k] above it, k < n - 1) and b (n x nrhs):
/// returns info (the first zero pivot, 1-based, or 0); l, d, u end as LAPACK leaves them.
inline std::int64_t gtsv(std::vector<W>& l, std::vector<W>& d, std::vector<W>& u, Mat& b) {
  const auto n = static_cast<std::int64_t>(d.size());
  auto at = [](std::vector<W>& v, std::int64_t k) -> W& { return v[static_cast<std::size_t>(k)]; };
  for (std::int64_t k = 0; k + 1 < n; ++k) {
    if (at(l, k) == W(0)) {
      if (at(d, k) == W(0)) return k + 1;
    } else if (cabs1(at(d, k)) >= cabs1(at(l, k))) {
      const W mult = at(l, k) / at(d, k);
      at(d, k + 1) -= mult * at(u, k);
      for (std::int64_t j = 0; j < b.cols; ++j) b(k + 1, j) -= mult * b(k, j);
      if (k + 2 < n) at(l, k) = 0;
    } else {
      const W mult = at(d, k) / at(l, k);
      at(d, k) = at(l, k);
      const W temp = at(d, k + 1);
      at(d, k + 1) = at(u, k) - mult * temp;
      if (k + 2 < n) {
        at(l, k) = at(u, k + 1);
        at(u, k + 1) = -mult * at(l, k);
      }
      at(u, k) = temp;
      for (std::int64_t j = 0; j < b.cols; ++j) {
        const W t = b(k, j);
        b(k, j) = b(k + 1, j);
        b(k + 1, j) = t - mult * b(k + 1, j);
      }
    }
  }
  if (n > 0 && at(d, n - 1) == W(0)) return n;
  for (std::int64_t j = 0; j < b.cols; ++j) {
    if (n == 0) break;
    b(n - 1, j) /= at(d, n - 1);
    if (n > 1) b(n - 2, j) = (b(n - 2, j) - at(u, n - 2) * b(n - 1, j)) / at(d, n - 2);
    for (std::int64_t k = n - 3; k >= 0; --k)
      b(k, j) = (b(k, j) - at(u, k) * b(k + 1, j) - at(l, k) * b(k + 2, j)) / at(d, k);
  }
  return 0;
}

/// ormqr: op(Q) c (left) or c op(Q), Q = H(1) ... H(k) from geqrf's `a` and `tau`.
inline void ormqr(const Mat& a, const std::vector<W>& tau, Mat& c, bool left, bool adjoint) {
  const auto k = static_cast<std::int64_t>(tau.size());
  const std::int64_t q = a.rows;
  for (std::int64_t step = 0; step < k; ++step) {
    // Q c = H(1) (... (H(k) c)); Q^H c = H(k)^H (... (H(1)^H c)); c Q = ((c H(1)) ...) H(k).
    const bool forward = left == adjoint;
    const std::int64_t i = forward ? step : k - 1 - step;
    std::vector<W> v{W(1)};
    for (std::int64_t r = i + 1; r < q; ++r) v.push_back(a(r, i));
    const W t = adjoint ? std::conj(tau[static_cast<std::size_t>(i)]) : tau[static_cast<std::size_t>(i)];
    if (left) reflect_left(c, range(i, q), v, t, 0, c.cols);
    else reflect_right(c, range(i, q), v, t, 0, c.rows);
  }
}

/// geqp3: QR with column pivoting, LAPACK's ?geqp3 with ?laqp2: columns with jpvt != 0 move
/// to the front and are factored without pivoting; then each step takes the free column of
/// largest partial norm, kept by LAPACK's downdating formula. jpvt ends 1-based.
inline void geqp3(Mat& a, std::vector<std::int64_t>& jpvt, std::vector<W>& tau) {
  const std::int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  auto swap_columns = [&](std::int64_t p, std::int64_t q) {
    for (std::int64_t i = 0; i < m; ++i) std::swap(a(i, p), a(i, q));
  };
  std::int64_t fixed = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    if (jpvt[static_cast<std::size_t>(j)] != 0) {
      if (j != fixed) {
        swap_columns(j, fixed);
        jpvt[static_cast<std::size_t>(j)] = jpvt[static_cast<std::size_t>(fixed)];
        jpvt[static_cast<std::size_t>(fixed)] = j + 1;
      } else {
        jpvt[static_cast<std::size_t>(j)] = j + 1;
      }
      ++fixed;
    } else {
      jpvt[static_cast<std::size_t>(j)] = j + 1;
    }
  }
  auto step = [&](std::int64_t i) {
    std::vector<W*> x;
    for (std::int64_t r = i + 1; r < m; ++r) x.push_back(&a(r, i));
    const W t = larfg_at(a(i, i), x);
    tau[static_cast<std::size_t>(i)] = t;
    if (i + 1 < n) {
      std::vector<W> v{W(1)};
      for (std::int64_t r = i + 1; r < m; ++r) v.push_back(a(r, i));
      reflect_left(a, range(i, m), v, std::conj(t), i + 1, n);
    }
  };
  const std::int64_t nfixed = std::min(fixed, k);
  for (std::int64_t i = 0; i < nfixed; ++i) step(i);
  auto column_norm = [&](std::int64_t j, std::int64_t from) {
    R s = 0;
    for (std::int64_t r = from; r < m; ++r) s += std::norm(a(r, j));
    return std::sqrt(s);
  };
  std::vector<R> vn1(static_cast<std::size_t>(n)), vn2(static_cast<std::size_t>(n));
  for (std::int64_t j = nfixed; j < n; ++j)
    vn1[static_cast<std::size_t>(j)] = vn2[static_cast<std::size_t>(j)] = column_norm(j, nfixed);
  const R tol3z = std::sqrt(std::numeric_limits<R>::epsilon());
  for (std::int64_t i = nfixed; i < k; ++i) {
    std::int64_t p = i;
    for (std::int64_t j = i + 1; j < n; ++j)
      if (vn1[static_cast<std::size_t>(j)] > vn1[static_cast<std::size_t>(p)]) p = j;
    if (p != i) {
      swap_columns(p, i);
      std::swap(jpvt[static_cast<std::size_t>(p)], jpvt[static_cast<std::size_t>(i)]);
      vn1[static_cast<std::size_t>(p)] = vn1[static_cast<std::size_t>(i)];
      vn2[static_cast<std::size_t>(p)] = vn2[static_cast<std::size_t>(i)];
    }
    step(i);
    for (std::int64_t j = i + 1; j < n; ++j) {
      R& v1 = vn1[static_cast<std::size_t>(j)];
      R& v2 = vn2[static_cast<std::size_t>(j)];
      if (v1 == 0) continue;
      R temp = std::abs(a(i, j)) / v1;
      temp = std::max<R>(0, 1 - temp * temp);
      const R ratio = v1 / v2;
      if (temp * ratio * ratio <= tol3z) {
        v1 = v2 = column_norm(j, i + 1);
      } else {
        v1 *= std::sqrt(temp);
      }
    }
  }
}

/// t = z h z^H with h upper Hessenberg (replacing t) and z unitary, by gehrd.
inline void hessenberg(Mat& t, Mat& z) {
  const std::int64_t n = t.rows;
  std::vector<W> tau(static_cast<std::size_t>(std::max<std::int64_t>(n - 1, 0)));
  gehrd(t, tau);
  z = Mat::identity(n, n);
  for (std::int64_t i = n - 2; i >= 0; --i) {  // z = H(1) ... H(n-1)
    std::vector<W> v{W(1)};
    for (std::int64_t r = i + 2; r < n; ++r) v.push_back(t(r, i));
    reflect_left(z, range(i + 1, n), v, tau[static_cast<std::size_t>(i)], 0, n);
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j + 2; i < n; ++i) t(i, j) = 0;
}

/// Complex Schur form a = z t z^H by Hessenberg reduction and single-shift QR iteration
/// (Wilkinson shifts, Givens bulge chasing). Returns false when it does not converge.
inline bool complex_schur(Mat& t, Mat& z) {
  const std::int64_t n = t.rows;
  hessenberg(t, z);
  const R eps = std::numeric_limits<R>::epsilon();
  // g = [[c, s], [-conj(s), c]] on rows k, k+1 of t, g^H on its columns and on z's.
  auto rotate = [&](std::int64_t k, R c, W s) {
    for (std::int64_t j = 0; j < n; ++j) {
      const W x = t(k, j), y = t(k + 1, j);
      t(k, j) = c * x + s * y;
      t(k + 1, j) = -std::conj(s) * x + c * y;
    }
    for (Mat* m : {&t, &z})
      for (std::int64_t i = 0; i < n; ++i) {
        const W x = (*m)(i, k), y = (*m)(i, k + 1);
        (*m)(i, k) = x * c + y * std::conj(s);
        (*m)(i, k + 1) = -x * s + y * c;
      }
  };
  auto givens = [](W x, W y, R& c, W& s) {
    const R nrm = std::sqrt(std::norm(x) + std::norm(y));
    if (nrm == 0) {
      c = 1;
      s = 0;
    } else if (std::abs(x) == 0) {
      c = 0;
      s = 1;
    } else {
      c = std::abs(x) / nrm;
      s = (x / std::abs(x)) * std::conj(y) / nrm;
    }
  };
  std::int64_t hi = n - 1, iter = 0, total = 0;
  while (hi > 0) {
    if (++total > 1000 * std::max<std::int64_t>(n, 1)) return false;
    std::int64_t l = hi;
    while (l > 0 && std::abs(t(l, l - 1)) > eps * (std::abs(t(l - 1, l - 1)) + std::abs(t(l, l)))) --l;
    if (l == hi) {
      if (hi > 0) t(hi, hi - 1) = 0;
      --hi;
      iter = 0;
      continue;
    }
    if (l > 0) t(l, l - 1) = 0;
    ++iter;
    const W a = t(hi - 1, hi - 1), b = t(hi - 1, hi), c = t(hi, hi - 1), d = t(hi, hi);
    const W half = (a + d) / W(2);
    const W disc = std::sqrt(half * half - (a * d - b * c));
    const W mu1 = half + disc, mu2 = half - disc;
    W shift = std::abs(mu1 - d) < std::abs(mu2 - d) ? mu1 : mu2;
    if (iter % 11 == 10) shift = d + W(std::abs(c) * R(0.75L), std::abs(c) * R(0.5L));
    W x = t(l, l) - shift, y = t(l + 1, l);
    for (std::int64_t k = l; k < hi; ++k) {
      if (k > l) {
        x = t(k, k - 1);
        y = t(k + 1, k - 1);
      }
      R gc;
      W gs;
      givens(x, y, gc, gs);
      rotate(k, gc, gs);
      if (k > l) t(k + 1, k - 1) = 0;
    }
  }
  return true;
}

/// Real Schur form a = z t z^T of a real matrix by Hessenberg reduction and Francis
/// double-shift QR iteration (3-element Householder bulge chasing, exceptional shifts after
/// 10 and 20 steps without deflation). t is quasi upper triangular; each 2x2 block is then put
/// in LAPACK's standard form: a real pair split into an upper triangle whose first eigenvalue
/// is the one on the side of the old diagonal's larger element (by the sign of (a - d) / 2),
/// a complex pair with equal diagonal and off-diagonal elements of opposite signs. Returns
/// false when it does not converge.
inline bool real_schur(Mat& t, Mat& z) {
  const std::int64_t n = t.rows;
  hessenberg(t, z);
  std::vector<R> h(static_cast<std::size_t>(n * n)), q(h.size());
  auto at = [n](std::vector<R>& m, std::int64_t i, std::int64_t j) -> R& {
    return m[static_cast<std::size_t>(i + j * n)];
  };
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      at(h, i, j) = t(i, j).real();
      at(q, i, j) = z(i, j).real();
    }
  auto H = [&](std::int64_t i, std::int64_t j) -> R& { return at(h, i, j); };
  // P = I - 2 u u^T / (u^T u) on rows/columns k .. k + u.size() - 1: rows over columns
  // [c0, n), columns over rows [0, r1), and q's columns.
  auto reflect = [&](const std::vector<R>& u, std::int64_t k, std::int64_t c0, std::int64_t r1) {
    R uu = 0;
    for (R e : u) uu += e * e;
    if (uu == 0) return;
    const auto len = static_cast<std::int64_t>(u.size());
    for (std::int64_t c = c0; c < n; ++c) {
      R dot = 0;
      for (std::int64_t r = 0; r < len; ++r) dot += u[static_cast<std::size_t>(r)] * H(k + r, c);
      for (std::int64_t r = 0; r < len; ++r) H(k + r, c) -= 2 * dot / uu * u[static_cast<std::size_t>(r)];
    }
    for (std::vector<R>* m : {&h, &q}) {
      const std::int64_t rows = m == &h ? r1 : n;
      for (std::int64_t r = 0; r < rows; ++r) {
        R dot = 0;
        for (std::int64_t c = 0; c < len; ++c) dot += at(*m, r, k + c) * u[static_cast<std::size_t>(c)];
        for (std::int64_t c = 0; c < len; ++c) at(*m, r, k + c) -= 2 * dot / uu * u[static_cast<std::size_t>(c)];
      }
    }
  };
  const R eps = std::numeric_limits<R>::epsilon();
  std::int64_t hi = n - 1, iter = 0, total = 0;
  while (hi > 0) {
    std::int64_t l = hi;
    while (l > 0 && std::fabs(H(l, l - 1)) > eps * (std::fabs(H(l - 1, l - 1)) + std::fabs(H(l, l)))) --l;
    if (l > 0) H(l, l - 1) = 0;
    if (l >= hi - 1) {  // one eigenvalue or a 2x2 block has split off
      hi = l - 1;
      iter = 0;
      continue;
    }
    if (++total > 1000 * n) return false;
    ++iter;
    // The shifts are the eigenvalues of the trailing 2x2: x^2 - s x + p.
    R s = H(hi - 1, hi - 1) + H(hi, hi);
    R p = H(hi - 1, hi - 1) * H(hi, hi) - H(hi - 1, hi) * H(hi, hi - 1);
    if (iter % 10 == 0) {
      const R e = std::fabs(H(hi, hi - 1)) + std::fabs(H(hi - 1, hi - 2));
      s = R(1.5L) * e;
      p = e * e;
    }
    R x = H(l, l) * H(l, l) + H(l, l + 1) * H(l + 1, l) - s * H(l, l) + p;
    R y = H(l + 1, l) * (H(l, l) + H(l + 1, l + 1) - s);
    R w = H(l + 1, l) * H(l + 2, l + 1);
    for (std::int64_t k = l; k < hi; ++k) {
      const bool three = k + 2 <= hi;
      std::vector<R> u = three ? std::vector<R>{x, y, w} : std::vector<R>{x, y};
      R norm = 0;
      for (R e : u) norm += e * e;
      norm = std::sqrt(norm);
      u[0] += x < 0 ? -norm : norm;
      reflect(u, k, k > l ? k - 1 : l, std::min(k + 3, hi) + 1);
      if (k > l) {
        H(k + 1, k - 1) = 0;
        if (three) H(k + 2, k - 1) = 0;
      }
      x = H(k + 1, k);
      if (k + 2 <= hi) y = H(k + 2, k);
      if (k + 3 <= hi) w = H(k + 3, k);
    }
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j + 2; i < n; ++i) H(i, j) = 0;
  // Standard 2x2 blocks: h <- r^T h r on rows/columns i, i + 1, r = [cs -sn; sn cs].
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    if (H(i + 1, i) == 0) continue;
    const R a = H(i, i), b = H(i, i + 1), c = H(i + 1, i), d = H(i + 1, i + 1);
    const R half = (a - d) / 2, disc = half * half + b * c;
    R cs = 1, sn = 0;
    if (disc >= 0) {  // first column: the eigenvector of a + d / 2 +- sqrt(disc)
      const R lambda = (a + d) / 2 + (half < 0 ? -1 : 1) * std::sqrt(disc);
      const R len = std::hypot(lambda - d, c);
      cs = (lambda - d) / len;
      sn = c / len;
    } else {  // the angle that makes the diagonal equal: tan 2theta = -(a - d) / (b + c)
      const R sigma = b + c;
      const R theta = std::atan2(-(a - d) * (sigma < 0 ? -1 : 1), std::fabs(sigma)) / 2;
      cs = std::cos(theta);
      sn = std::sin(theta);
    }
    for (std::int64_t col = 0; col < n; ++col) {
      const R x0 = H(i, col), x1 = H(i + 1, col);
      H(i, col) = cs * x0 + sn * x1;
      H(i + 1, col) = -sn * x0 + cs * x1;
    }
    for (std::vector<R>* m : {&h, &q})
      for (std::int64_t r = 0; r < n; ++r) {
        const R x0 = at(*m, r, i), x1 = at(*m, r, i + 1);
        at(*m, r, i) = cs * x0 + sn * x1;
        at(*m, r, i + 1) = -sn * x0 + cs * x1;
      }
    if (disc >= 0) {
      H(i + 1, i) = 0;
    } else {
      H(i, i) = H(i + 1, i + 1) = (a + d) / 2;
      ++i;
    }
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      t(i, j) = i > j + 1 ? R(0) : H(i, j);
      z(i, j) = at(q, i, j);
    }
  return true;
}

/// v / |v| with the element of largest modulus (the first such) made real and positive.
inline void normalize_eigenvector(Mat& v, std::int64_t col) {
  R norm = 0;
  std::int64_t big = 0;
  for (std::int64_t i = 0; i < v.rows; ++i) {
    norm += std::norm(v(i, col));
    if (std::norm(v(i, col)) > std::norm(v(big, col))) big = i;
  }
  norm = std::sqrt(norm);
  if (norm == 0) return;
  const W phase = std::abs(v(big, col)) == 0 ? W(1) : std::conj(v(big, col)) / std::abs(v(big, col));
  for (std::int64_t i = 0; i < v.rows; ++i) v(i, col) *= phase / norm;
  v(big, col) = v(big, col).real();
}

/// geev: eigenvalues w and right (vr) and left (vl) eigenvectors, each of norm 1 with its
/// largest element real and positive, from the Schur form. For a real matrix, complex
/// eigenvalues come in adjacent conjugate pairs, the one with positive imaginary part first,
/// as LAPACK's real geev returns them. Returns false when the iteration does not converge.
inline bool geev(const Mat& a, bool real_input, std::vector<W>& w, Mat& vl, Mat& vr) {
  const std::int64_t n = a.rows;
  Mat t = a, z;
  if (!complex_schur(t, z)) return false;
  R tnorm = 0;
  for (W e : t.v) tnorm = std::max(tnorm, std::abs(e));
  const R small = std::max<R>(tnorm, 1) * std::numeric_limits<R>::epsilon();
  Mat yr(n, n), yl(n, n);
  for (std::int64_t k = 0; k < n; ++k) {
    const W lambda = t(k, k);
    auto denominator = [&](W d) { return std::abs(d) < small ? W(small) : d; };
    yr(k, k) = 1;
    for (std::int64_t i = k - 1; i >= 0; --i) {
      W s = 0;
      for (std::int64_t j = i + 1; j <= k; ++j) s += t(i, j) * yr(j, k);
      yr(i, k) = -s / denominator(t(i, i) - lambda);
    }
    yl(k, k) = 1;
    for (std::int64_t i = k + 1; i < n; ++i) {
      W s = 0;
      for (std::int64_t j = k; j < i; ++j) s += std::conj(t(j, i)) * yl(j, k);
      yl(i, k) = -s / denominator(std::conj(t(i, i)) - std::conj(lambda));
    }
  }
  Mat right(n, n), left(n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < n; ++k) {
      W r = 0, l = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        r += z(i, j) * yr(j, k);
        l += z(i, j) * yl(j, k);
      }
      right(i, k) = r;
      left(i, k) = l;
    }
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<bool> conjugate(static_cast<std::size_t>(n), false);
  if (real_input) {
    // Pair each eigenvalue of positive imaginary part with its nearest conjugate.
    std::vector<bool> used(static_cast<std::size_t>(n), false);
    order.clear();
    const R tol = std::sqrt(std::numeric_limits<R>::epsilon()) * std::max<R>(tnorm, 1);
    for (std::int64_t k = 0; k < n; ++k) {
      if (used[static_cast<std::size_t>(k)]) continue;
      const W lk = t(k, k);
      if (std::fabs(lk.imag()) <= tol) {
        used[static_cast<std::size_t>(k)] = true;
        order.push_back(k);
        continue;
      }
      std::int64_t best = -1;
      for (std::int64_t j = 0; j < n; ++j)
        if (j != k && !used[static_cast<std::size_t>(j)] &&
            (best < 0 || std::abs(t(j, j) - std::conj(lk)) < std::abs(t(best, best) - std::conj(lk))))
          best = j;
      if (best < 0) return false;
      const std::int64_t pos = lk.imag() > 0 ? k : best;
      used[static_cast<std::size_t>(k)] = used[static_cast<std::size_t>(best)] = true;
      order.push_back(pos);
      order.push_back(pos);
      conjugate[order.size() - 1] = true;
    }
  }
  w.assign(static_cast<std::size_t>(n), W(0));
  vr = Mat(n, n);
  vl = Mat(n, n);
  for (std::int64_t c = 0; c < n; ++c) {
    const std::int64_t from = order[static_cast<std::size_t>(c)];
    const bool conj = conjugate[static_cast<std::size_t>(c)];
    W lambda = t(from, from);
    if (real_input && !conj && std::fabs(lambda.imag()) <= std::sqrt(std::numeric_limits<R>::epsilon()) * std::max<R>(tnorm, 1))
      lambda = lambda.real();
    w[static_cast<std::size_t>(c)] = conj ? std::conj(lambda) : lambda;
    for (std::int64_t i = 0; i < n; ++i) {
      vr(i, c) = conj ? std::conj(right(i, from)) : right(i, from);
      vl(i, c) = conj ? std::conj(left(i, from)) : left(i, from);
    }
    normalize_eigenvector(vr, c);
    normalize_eigenvector(vl, c);
    if (real_input && w[static_cast<std::size_t>(c)].imag() == 0)
      for (std::int64_t i = 0; i < n; ++i) {
        vr(i, c) = vr(i, c).real();
        vl(i, c) = vl(i, c).real();
      }
  }
  return true;
}

/// Eigenvalues `w` into result `r` at `at`, or for a real input as real parts into result r
/// and imaginary parts into r + 1 (LAPACK's wr, wi).
inline void write_eigenvalues(std::vector<Literal>& out, std::size_t r, std::int64_t at,
                              const std::vector<W>& w, bool real) {
  if (!real) {
    narrow_into(out[r], at, w);
    return;
  }
  std::vector<W> re, im;
  for (W e : w) {
    re.emplace_back(e.real());
    im.emplace_back(e.imag());
  }
  narrow_into(out[r], at, re);
  narrow_into(out[r + 1], at, im);
}

}  // namespace linalg

/// gtsv over the batch: dl, d, du [..., m] (dl[0] and du[m - 1] unused) and b [..., m, n].
inline StatusOr<std::vector<Literal>> eval_gtsv(const Node& node,
                                               std::span<const Literal* const> operands) {
  using namespace linalg;
  std::vector<Literal> out;
  for (const Shape& s : node.results) out.emplace_back(s.with_default_layout());
  const Literal bl = operands[3]->with_default_layout();
  const std::int64_t rank = bl.shape().rank();
  const std::int64_t m = bl.dims()[static_cast<std::size_t>(rank - 2)];
  const std::int64_t nrhs = bl.dims()[static_cast<std::size_t>(rank - 1)];
  std::int64_t batches = 1;
  for (std::int64_t d = 0; d + 2 < rank; ++d) batches *= bl.dims()[static_cast<std::size_t>(d)];
  const std::vector<W> dl = widen(operands[0]->with_default_layout());
  const std::vector<W> dd = widen(operands[1]->with_default_layout());
  const std::vector<W> du = widen(operands[2]->with_default_layout());
  const std::vector<W> bf = widen(bl);
  for (std::int64_t b = 0; b < batches; ++b) {
    const auto from = static_cast<std::ptrdiff_t>(b * m);
    std::vector<W> lo(dl.begin() + from, dl.begin() + from + m);
    std::vector<W> d(dd.begin() + from, dd.begin() + from + m);
    std::vector<W> up(du.begin() + from, du.begin() + from + m);
    // LAPACK's dl is jax's dl[1..]: shift down for the solve, back for the result.
    std::vector<W> l(lo.begin() + (m > 0 ? 1 : 0), lo.end());
    Mat x = matrix_at(bf, b, m, nrhs);
    const std::int64_t info = gtsv(l, d, up, x);
    std::copy(l.begin(), l.end(), lo.begin() + (m > 0 ? 1 : 0));
    narrow_into(out[0], b * m, lo);
    narrow_into(out[1], b * m, d);
    narrow_into(out[2], b * m, up);
    narrow_into(out[3], b * m * nrhs, row_major(x));
    narrow_into(out[4], b, std::vector<W>{W(static_cast<R>(info), 0)});
  }
  return out;
}

/// linalg: jaxlib's LAPACK kernel for the routine of `node`, per matrix of the batch.
inline StatusOr<std::vector<Literal>> eval_linalg(const Node& node,
                                                  std::span<const Literal* const> operands) {
  using namespace linalg;
  const LinalgAttrs& at = node.attr<LinalgAttrs>();
  if (at.routine == LinalgRoutine::kGtsv) return eval_gtsv(node, operands);
  std::vector<Literal> out;
  for (const Shape& s : node.results) out.emplace_back(s.with_default_layout());
  const Literal x = operands[0]->with_default_layout();
  const std::int64_t rank = x.shape().rank();
  const std::int64_t m = x.dims()[static_cast<std::size_t>(rank - 2)];
  const std::int64_t n = x.dims()[static_cast<std::size_t>(rank - 1)];
  const std::int64_t k = std::min(m, n);
  std::int64_t batches = 1;
  for (std::int64_t d = 0; d + 2 < rank; ++d) batches *= x.dims()[static_cast<std::size_t>(d)];
  if (at.routine == LinalgRoutine::kTrsm) {
    TriangularSolveAttrs t;
    t.left_side = at.side == 'L';
    t.lower = at.uplo == 'L';
    t.unit_diagonal = at.diag == 'U';
    t.transpose_a = at.trans == 'N'   ? Transpose::kNoTranspose
                    : at.trans == 'T' ? Transpose::kTranspose
                                      : Transpose::kAdjoint;
    out[0] = eval_triangular_solve(x, *operands[1], t, node.results[0]);
    return out;
  }
  const std::vector<W> flat = widen(x);
  const bool has_tau = at.routine == LinalgRoutine::kOrgqr || at.routine == LinalgRoutine::kOrmqr;
  const std::vector<W> tau_flat =
      has_tau ? widen(operands[1]->with_default_layout()) : std::vector<W>{};
  const std::vector<W> c_flat = at.routine == LinalgRoutine::kOrmqr
                                    ? widen(operands[2]->with_default_layout())
                                    : std::vector<W>{};
  auto scalar = [](std::int64_t v) { return std::vector<W>{W(static_cast<R>(v), 0)}; };
  for (std::int64_t b = 0; b < batches; ++b) {
    Mat a = matrix_at(flat, b, m, n);
    switch (at.routine) {
      case LinalgRoutine::kGetrf: {
        std::vector<W> piv(static_cast<std::size_t>(k));
        const std::int64_t info = getrf(a, piv);
        narrow_into(out[0], b * m * n, row_major(a));
        narrow_into(out[1], b * k, piv);
        narrow_into(out[2], b, scalar(info));
        break;
      }
      case LinalgRoutine::kPotrf: {
        const std::int64_t info = potrf(a, at.uplo == 'L');
        narrow_into(out[0], b * m * n, row_major(a));
        narrow_into(out[1], b, scalar(info));
        break;
      }
      case LinalgRoutine::kGeqrf: {
        std::vector<W> tau(static_cast<std::size_t>(k));
        geqrf(a, tau);
        narrow_into(out[0], b * m * n, row_major(a));
        narrow_into(out[1], b * k, tau);
        break;
      }
      case LinalgRoutine::kOrgqr: {
        const std::int64_t kt = operands[1]->dims().back();
        std::vector<W> tau(tau_flat.begin() + b * kt, tau_flat.begin() + (b + 1) * kt);
        narrow_into(out[0], b * m * n, row_major(orgqr(a, tau)));
        break;
      }
      case LinalgRoutine::kGesdd:
      case LinalgRoutine::kGesvd: {
        // The first result is LAPACK's destroyed input: here the input itself.
        narrow_into(out[0], b * m * n, row_major(a));
        const Shape& us = node.results[2];
        const Shape& vs = node.results[3];
        const std::int64_t ur = us.dim(rank - 2), uc = us.dim(rank - 1);
        const std::int64_t vr = vs.dim(rank - 2), vc = vs.dim(rank - 1);
        if (!all_finite(a)) {  // LAPACK refuses a NaN input with info = -4
          narrow_into(out[1], b * k, std::vector<W>(static_cast<std::size_t>(k), W(NAN)));
          narrow_into(out[4], b, scalar(-4));
          break;
        }
        std::vector<R> s;
        Mat u, vt;
        svd(a, static_cast<char>(at.mode), s, u, vt);
        std::vector<W> sw(s.begin(), s.begin() + k);
        narrow_into(out[1], b * k, sw);
        if (at.mode != 'N') {
          narrow_into(out[2], b * ur * uc, row_major(u));
          narrow_into(out[3], b * vr * vc, row_major(vt));
        }
        narrow_into(out[4], b, scalar(0));
        break;
      }
      case LinalgRoutine::kSyevd: {
        if (!all_finite(a)) {
          narrow_into(out[0], b * n * n, std::vector<W>(static_cast<std::size_t>(n * n), W(NAN)));
          narrow_into(out[1], b * n, std::vector<W>(static_cast<std::size_t>(n), W(NAN)));
          narrow_into(out[2], b, scalar(1));
          break;
        }
        std::vector<R> w;
        Mat v;
        syevd(a, at.uplo == 'L', w, v);
        // mode 'N' leaves the input in the first result (LAPACK leaves it destroyed).
        narrow_into(out[0], b * n * n, row_major(at.mode == 'V' ? v : a));
        narrow_into(out[1], b * n, std::vector<W>(w.begin(), w.end()));
        narrow_into(out[2], b, scalar(0));
        break;
      }
      case LinalgRoutine::kGehrd: {
        std::vector<W> tau(static_cast<std::size_t>(std::max<std::int64_t>(n - 1, 0)));
        gehrd(a, tau);
        narrow_into(out[0], b * n * n, row_major(a));
        narrow_into(out[1], b * static_cast<std::int64_t>(tau.size()), tau);
        narrow_into(out[2], b, scalar(0));
        break;
      }
      case LinalgRoutine::kSytrd: {
        const auto e_len = static_cast<std::size_t>(std::max<std::int64_t>(n - 1, 0));
        std::vector<W> d(static_cast<std::size_t>(n)), e(e_len), tau(e_len);
        sytrd(a, at.uplo == 'L', d, e, tau);
        narrow_into(out[0], b * n * n, row_major(a));
        narrow_into(out[1], b * n, d);
        narrow_into(out[2], b * static_cast<std::int64_t>(e_len), e);
        narrow_into(out[3], b * static_cast<std::int64_t>(e_len), tau);
        narrow_into(out[4], b, scalar(0));
        break;
      }
      case LinalgRoutine::kOrmqr: {
        const std::int64_t kt = operands[1]->dims().back();
        std::vector<W> tau(tau_flat.begin() + b * kt, tau_flat.begin() + (b + 1) * kt);
        const Literal& cl = *operands[2];
        const std::int64_t cr = cl.dims()[static_cast<std::size_t>(rank - 2)];
        const std::int64_t cc = cl.dims()[static_cast<std::size_t>(rank - 1)];
        Mat c = matrix_at(c_flat, b, cr, cc);
        ormqr(a, tau, c, at.left, at.transpose);
        narrow_into(out[0], b * cr * cc, row_major(c));
        break;
      }
      case LinalgRoutine::kGeqp3: {
        const Literal jl = operands[1]->with_default_layout();
        std::vector<std::int64_t> jpvt(static_cast<std::size_t>(n));
        for (std::int64_t j = 0; j < n; ++j)
          jpvt[static_cast<std::size_t>(j)] = jl.data<std::int32_t>()[static_cast<std::size_t>(b * n + j)];
        std::vector<W> tau(static_cast<std::size_t>(k));
        geqp3(a, jpvt, tau);
        std::vector<W> jw;
        for (std::int64_t j : jpvt) jw.emplace_back(static_cast<R>(j));
        narrow_into(out[0], b * m * n, row_major(a));
        narrow_into(out[1], b * n, jw);
        narrow_into(out[2], b * k, tau);
        break;
      }
      case LinalgRoutine::kGeev: {
        const bool complex = is_complex(x.dtype());
        const std::size_t vl_at = complex ? 1 : 2;
        std::vector<W> w;
        Mat vl, vr;
        const bool ok = all_finite(a) && geev(a, !complex, w, vl, vr);
        if (!ok) {
          w.assign(static_cast<std::size_t>(n), W(NAN, NAN));
          vl = Mat(n, n);
          std::fill(vl.v.begin(), vl.v.end(), W(NAN, NAN));
          vr = vl;
        }
        write_eigenvalues(out, 0, b * n, w, !complex);
        if (at.compute_left == 'V' || !ok) narrow_into(out[vl_at], b * n * n, row_major(vl));
        if (at.compute_right == 'V' || !ok) narrow_into(out[vl_at + 1], b * n * n, row_major(vr));
        narrow_into(out[vl_at + 2], b, scalar(ok ? 0 : 1));
        break;
      }
      case LinalgRoutine::kGees: {
        const bool real = !is_complex(x.dtype());
        Mat t = a, z;
        const bool ok = all_finite(a) && (real ? real_schur(t, z) : complex_schur(t, z));
        if (!ok) {
          std::fill(t.v.begin(), t.v.end(), W(NAN, NAN));
          z = t;
        }
        // Eigenvalues: t's diagonal, with +-sqrt(-b c) i for a real 2x2 block [a b; c a].
        std::vector<W> w;
        for (std::int64_t i = 0; i < n; ++i) w.push_back(t(i, i));
        for (std::int64_t i = 0; real && ok && i + 1 < n; ++i)
          if (t(i + 1, i) != W(0)) {
            const R im = std::sqrt(-t(i, i + 1).real() * t(i + 1, i).real());
            const auto j = static_cast<std::size_t>(i);
            w[j] = W(w[j].real(), im);
            w[j + 1] = W(w[j + 1].real(), -im);
            ++i;
          }
        narrow_into(out[0], b * n * n, row_major(t));
        if (at.mode == 'V' || !ok) narrow_into(out[1], b * n * n, row_major(z));
        const std::size_t sdim_at = real ? 4 : 3;
        write_eigenvalues(out, 2, b * n, w, real);
        narrow_into(out[sdim_at], b, scalar(0));
        narrow_into(out[sdim_at + 1], b, scalar(ok ? 0 : 1));
        break;
      }
      case LinalgRoutine::kTrsm:
      case LinalgRoutine::kGtsv: break;
    }
  }
  return out;
}

}  // namespace pjrt_lite::reference::detail
