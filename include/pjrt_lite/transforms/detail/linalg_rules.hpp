#pragma once
// IWYU pragma: private, include "pjrt_lite/transforms/autodiff.hpp"
// JVP rules of the linalg op: jaxlib's LAPACK routines as a program JAX exported holds them
// (JAX differentiates before lowering, so its own rules are for lax.linalg's primitives; these
// are the same rules on the routines' operands and results). They are written with the
// Linearizer's linear ops (products and triangular solves with primal coefficients, masks,
// transposes), so reverse mode transposes them, and their coefficients call the routine
// again, so the next order differentiates them by the same rules.
//
//   potrf   L = chol(A) of the matrix the routine reads (the `uplo` triangle, mirrored):
//           dL = L phi(L^-1 dA L^-T), phi the lower triangle with its diagonal halved
//           (cholesky_jvp_rule); for 'U', dU = dL^T. The other triangle, which the routine
//           leaves as it was, passes its tangent through.
//   trsm    triangular_solve's rule, the routine's flags as its attributes.
//   syevd   with M = V^T dA V (A as the routine reads it) and F[i, j] = 1 / (w_j - w_i) off
//           the diagonal: dw = diag(M), dV = V (F * M) (eigh_jvp_rule). Mode 'N' returns the
//           input in place of V (its tangent passes through) and takes V for dw from a call
//           that computes it.
//   gesdd, gesvd  _svd_jvp_rule for reduced decompositions (mode 'S', or 'A' of a square
//           matrix; for mode 'N' the rule computes a reduced one for its coefficients). The
//           first result, which the backends define as the input, passes its tangent through.
//   getrf   _lu_jvp_rule for any m x n: with P the rows' permutation, L unit lower [m, m] and
//           U upper [n, n] (padded with the identity), X = L^-1 P dA U^-1 and
//           d(lu) = L tril(X, -1) + triu(X) U.
//
// Pivots, info and the other integer results have no tangent. Complex matrices, and the
// routines JAX never differentiates after lowering (geqrf, orgqr, ormqr, gehrd, sytrd, gtsv,
// geqp3, geev, gees: JAX's qr, eig and schur rules apply to the primitives those implement),
// are UNIMPLEMENTED naming the routine.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/transforms/detail/jvp_rules.hpp"
#include "pjrt_lite/transforms/detail/linearizer.hpp"

namespace pjrt_lite::inline v0_1::detail {

class LinalgJvp {
 public:
  using Lin = Linearizer::Lin;
  using L = Linearizer;
  static constexpr Lin kZero = Linearizer::kZero;

  LinalgJvp(GraphBuilder& b, Linearizer& l) : b_(b), l_(l) {}

  /// The tangents `ty` of linalg node `n`'s results `y`, from its operands `p` and their
  /// tangents `t`.
  Status apply(const Node& n, const std::vector<Value>& p, const std::vector<Lin>& t,
               const std::vector<Value>& y, std::vector<Lin>& ty) {
    const auto& a = n.attr<LinalgAttrs>();
    const std::string routine(linalg_routine_name(a.routine));
    if (is_complex(shape(p[0]).dtype()))
      return unimplemented_error(
          str_cat("autodiff: linalg ", routine, " of complex matrices has no derivative rule (real ones have)"));
    switch (a.routine) {
      case LinalgRoutine::kPotrf: ty[0] = potrf(a, t[0], y[0]); break;
      case LinalgRoutine::kTrsm: {
        Node solve = n;
        solve.op = OpCode::kTriangularSolve;
        solve.attrs = TriangularSolveAttrs{a.side == 'L', a.uplo == 'L', a.diag == 'U',
                                           a.trans == 'N' ? Transpose::kNoTranspose : Transpose::kTranspose};
        ty[0] = triangular_solve_jvp(b_, l_, solve, p, t, y[0]);
        break;
      }
      case LinalgRoutine::kSyevd:
        if (t[0] != kZero) syevd(a, p[0], t[0], y, ty);
        break;
      case LinalgRoutine::kGesdd:
      case LinalgRoutine::kGesvd: {
        const Shape s = shape(p[0]);
        if (a.mode == 'A' && from_end(s, 1) != from_end(s, 2))
          return unimplemented_error(str_cat(
              "autodiff: linalg ", routine, " with full matrices (mode 'A') of a non-square matrix ", s,
              " has no derivative rule (JAX's svd rule is for reduced decompositions: mode 'S')"));
        if (t[0] != kZero) svd(a, p[0], t[0], y, ty);
        break;
      }
      case LinalgRoutine::kGetrf:
        if (t[0] != kZero) ty[0] = getrf(t[0], y[0], y[1]);
        break;
      default:
        return unimplemented_error(str_cat(
            "autodiff: linalg ", routine,
            " has no derivative rule (JAX differentiates the qr, eig and schur primitives before lowering them "
            "to LAPACK; potrf, trsm, syevd, gesdd, gesvd and getrf have rules)"));
    }
    return l_.status();
  }

 private:
  Shape shape(Value v) const { return b_.shape(v).value_or(Shape()); }
  /// Dimension `k` of s counted from the end (1: the last).
  static std::int64_t from_end(const Shape& s, std::int64_t k) { return s.dim(s.rank() - k); }
  static std::vector<std::int64_t> dims_of(const Shape& s) { return {s.dims().begin(), s.dims().end()}; }
  Value full(const Shape& s, double v) { return l_.full(s, v); }
  Value s32_full(const std::vector<std::int64_t>& d, double v) {
    return b_.broadcast_in_dim(b_.scalar(DType::kS32, v), d, {});
  }

  /// Where col - row <= k (`lower`: tril(x, k)) or col - row >= k (triu(x, k)), for shape s.
  Value triangle(const Shape& s, bool lower, std::int64_t k) {
    const std::vector<std::int64_t> d = dims_of(s);
    const std::int64_t r = s.rank();
    const Value diff = b_.subtract(b_.iota(Shape(DType::kS32, d), r - 1), b_.iota(Shape(DType::kS32, d), r - 2));
    return b_.compare(diff, s32_full(d, double(k)), lower ? ComparisonDirection::kLe : ComparisonDirection::kGe);
  }
  Value masked(Value x, Value keep) { return b_.select(keep, x, full(shape(x), 0)); }
  Lin masked(Lin x, Value keep, const Shape& s) {
    return l_.apply(OpCode::kSelect, {L::coef(keep), L::lin(x), L::coef(full(s, 0))});
  }
  /// The identity [..., rows, cols] of s's dimensions and type: 1 where row == col.
  Value eye(const Shape& s) {
    return b_.select(b_.and_(triangle(s, true, 0), triangle(s, false, 0)), full(s, 1), full(s, 0));
  }
  static std::vector<std::int64_t> swap_last(std::int64_t r) {
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 0; d < r; ++d) perm.push_back(d < r - 2 ? d : d == r - 2 ? r - 1 : r - 2);
    return perm;
  }
  Value mT(Value x) { return b_.transpose(x, swap_last(shape(x).rank())); }
  Lin mT(Lin x, std::int64_t r) { return l_.apply(OpCode::kTranspose, {L::lin(x)}, TransposeAttrs{swap_last(r)}); }
  Lin matmul(Value x, Lin z) {
    return l_.apply(OpCode::kDotGeneral, {L::coef(x), L::lin(z)}, matmul_dimensions(shape(x).rank()));
  }
  Lin matmul(Lin x, Value z) {
    return l_.apply(OpCode::kDotGeneral, {L::lin(x), L::coef(z)}, matmul_dimensions(shape(z).rank()));
  }
  /// op(a)^-1 x (left) or x op(a)^-1.
  Lin solve(Value a, Lin x, bool left, bool lower, bool transpose, bool unit = false) {
    return l_.apply(OpCode::kTriangularSolve, {L::coef(a), L::lin(x)},
                    TriangularSolveAttrs{left, lower, unit, transpose ? Transpose::kTranspose : Transpose::kNoTranspose});
  }
  /// v [..., k] spread over [..., rows, k] as v[j] at [i, j] (`along_columns`), or over
  /// [..., k, k] as v[i] at [i, j]; rows defaults to k.
  Value spread(Value v, bool along_columns, std::int64_t rows = -1) {
    const Shape s = shape(v);
    const std::int64_t r = s.rank(), k = from_end(s, 1);
    std::vector<std::int64_t> d = dims_of(s), map;
    for (std::int64_t i = 0; i < r - 1; ++i) map.push_back(i);
    if (along_columns) {
      d.insert(d.end() - 1, rows < 0 ? k : rows);
      map.push_back(r);
    } else {
      d.push_back(k);
      map.push_back(r - 1);
    }
    return b_.broadcast_in_dim(v, d, map);
  }
  /// The matrix a routine reads from the `lower` (or upper) triangle of tangent x, mirrored.
  Lin mirrored(Lin x, const Shape& s, bool lower) {
    return l_.add(masked(x, triangle(s, lower, 0), s), mT(masked(x, triangle(s, lower, lower ? -1 : 1), s), s.rank()));
  }
  /// diag(x) [..., k] of a tangent x [..., k, k].
  Lin diagonal(Lin x, const Shape& s) { return l_.reduce_sum(l_.scale(x, eye(s)), {s.rank() - 1}); }

  Lin potrf(const LinalgAttrs& a, Lin da, Value factor) {
    if (da == kZero) return kZero;
    const Shape s = shape(factor);
    const bool lower = a.uplo == 'L';
    const Lin dae = mirrored(da, s, lower);
    const Value half_diagonal = b_.subtract(full(s, 1), b_.multiply(full(s, 0.5), eye(s)));
    // The untouched triangle's tangent.
    const Lin rest = masked(da, triangle(s, !lower, lower ? 1 : -1), s);
    if (lower) {
      const Value l = masked(factor, triangle(s, true, 0));
      const Lin y = solve(l, solve(l, dae, false, true, true), true, true, false);  // L^-1 dA L^-T
      const Lin phi = l_.scale(masked(y, triangle(s, true, 0), s), half_diagonal);
      return l_.add(matmul(l, phi), rest);
    }
    // A = U^T U: L = U^T, so L^-1 dA L^-T = U^-T dA U^-1 and dU = phi^T U.
    const Value u = masked(factor, triangle(s, false, 0));
    const Lin y = solve(u, solve(u, dae, false, false, false), true, false, true);
    const Lin phi = l_.scale(masked(y, triangle(s, true, 0), s), half_diagonal);
    return l_.add(matmul(mT(phi, s.rank()), u), rest);
  }

  void syevd(const LinalgAttrs& a, Value x, Lin da, const std::vector<Value>& y, std::vector<Lin>& ty) {
    Value v = y[0];
    const Value w = y[1];
    const Shape s = shape(v);
    if (a.mode != 'V') {
      // Mode 'N' returns the input in place of the eigenvectors; the rule's come from a call
      // that computes them.
      ty[0] = da;
      LinalgAttrs vectors = a;
      vectors.mode = 'V';
      v = b_.linalg({x}, vectors)[0];
    }
    const Lin m = matmul(mT(v), matmul(mirrored(da, s, a.uplo == 'L'), v));
    if (a.mode != 'V') {
      ty[1] = diagonal(m, s);
      return;
    }
    const Value id = eye(s);
    // F = 1 / (I + w_j - w_i) - I.
    const Value f =
        b_.subtract(b_.divide(full(s, 1), b_.add(id, b_.subtract(spread(w, true), spread(w, false)))), id);
    ty[0] = matmul(v, l_.scale(m, f));
    ty[1] = diagonal(m, s);
  }

  void svd(const LinalgAttrs& a, Value x, Lin da, const std::vector<Value>& y, std::vector<Lin>& ty) {
    const Shape xs = shape(x);
    const std::int64_t r = xs.rank(), rows = from_end(xs, 2), cols = from_end(xs, 1);
    Value s = y[1], u = y[2], vt = y[3];
    if (a.mode == 'N') {
      // The rule's coefficients from a reduced decomposition of the same matrix.
      LinalgAttrs reduced = a;
      reduced.mode = 'S';
      const std::vector<Value> full_svd = b_.linalg({x}, reduced);
      s = full_svd[1];
      u = full_svd[2];
      vt = full_svd[3];
    }
    const Value ut = mT(u), v = mT(vt);
    const Shape vs = shape(s);
    std::vector<std::int64_t> kd = dims_of(vs);
    kd.push_back(from_end(vs, 1));
    const Shape ks(xs.dtype(), kd);  // [..., k, k]
    const Lin ds_mat = matmul(ut, matmul(da, v));
    ty[0] = da;  // the routine's first result is its input (as the backends define it)
    ty[1] = diagonal(ds_mat, ks);
    if (a.mode == 'N') return;
    const Value s_row = spread(s, true), s_col = spread(s, false);  // s_j, s_i at [i, j]
    const Value s_diffs = b_.multiply(b_.add(s_row, s_col), b_.subtract(s_row, s_col));
    const Value diff_zeros = b_.convert(b_.compare(s_diffs, full(ks, 0), ComparisonDirection::kEq), ks.dtype());
    const Value f = b_.subtract(b_.divide(full(ks, 1), b_.add(s_diffs, diff_zeros)), diff_zeros);
    const Value s_zeros = b_.convert(b_.compare(s, full(vs, 0), ComparisonDirection::kEq), vs.dtype());
    const Value s_inv = b_.subtract(b_.divide(full(vs, 1), b_.add(s, s_zeros)), s_zeros);
    const Value s_inv_diag = b_.multiply(spread(s_inv, true), eye(ks));
    const Lin dss = l_.scale(ds_mat, s_row);  // dS diag(s)
    const Lin sds = l_.scale(ds_mat, s_col);  // diag(s) dS
    const Lin dudv_diag = l_.scale(l_.sub(ds_mat, mT(ds_mat, r)), b_.multiply(full(ks, 0.5), s_inv_diag));
    Lin du = matmul(u, l_.add(l_.scale(l_.add(dss, mT(dss, r)), f), dudv_diag));
    Lin dv = matmul(v, l_.scale(l_.add(sds, mT(sds, r)), f));
    if (rows > cols) {
      const Lin dav = matmul(da, v);
      du = l_.add(du, l_.div(l_.sub(dav, matmul(u, matmul(ut, dav))), spread(s, true, rows)));
    }
    if (cols > rows) {
      const Lin dahu = matmul(mT(da, r), u);
      dv = l_.add(dv, l_.div(l_.sub(dahu, matmul(v, matmul(vt, dahu))), spread(s, true, cols)));
    }
    ty[2] = du;
    ty[3] = mT(dv, r);
  }

  /// getrf's 1-based row swaps [..., k] as the permutation [..., m] they make
  /// (lax.linalg.lu_pivots_to_permutation), with masks so that batches work.
  Value permutation(Value pivots, std::int64_t m) {
    const Shape ps = shape(pivots);
    const std::int64_t last = ps.rank() - 1;
    std::vector<std::int64_t> d = dims_of(ps);
    d.back() = m;
    const Value idx = b_.iota(Shape(DType::kS32, d), last);
    std::vector<std::int64_t> batch;
    for (std::int64_t i = 0; i < last; ++i) batch.push_back(i);
    std::vector<std::int64_t> column_map = batch;
    column_map.push_back(last);
    const auto column = [&](Value v) { return b_.broadcast_in_dim(v, d, column_map); };  // [..., 1] -> [..., m]
    const Value zero_based = b_.subtract(pivots, s32_full(dims_of(ps), 1));
    const Value zeros = s32_full(d, 0);
    Value perm = idx;
    std::vector<std::int64_t> start(d.size(), 0), limit = dims_of(ps), perm_limit = d;
    for (std::int64_t k = 0; k < from_end(ps, 1); ++k) {
      start.back() = k;
      limit.back() = perm_limit.back() = k + 1;
      const Value is_target = b_.compare(idx, column(b_.slice(zero_based, start, limit)), ComparisonDirection::kEq);
      const Value at_k = column(b_.slice(perm, start, perm_limit));
      const Value at_target = b_.broadcast_in_dim(
          b_.reduce(b_.select(is_target, perm, zeros), b_.scalar(DType::kS32, 0), OpCode::kAdd, {last}), d, batch);
      const Value is_k = b_.compare(idx, s32_full(d, double(k)), ComparisonDirection::kEq);
      perm = b_.select(is_k, at_target, b_.select(is_target, at_k, perm));
    }
    return perm;
  }

  Lin getrf(Lin da, Value packed, Value pivots) {
    const Shape s = shape(packed);
    const std::int64_t r = s.rank(), m = from_end(s, 2), n = from_end(s, 1), k = std::min(m, n);
    const auto row = static_cast<std::size_t>(r - 2), col = static_cast<std::size_t>(r - 1);
    const std::vector<std::int64_t> d = dims_of(s);
    // P [..., m, m] with P[i, j] = (perm[i] == j): P dA permutes dA's rows as the routine did.
    std::vector<std::int64_t> pd = d, rows_map;
    pd[col] = m;
    for (std::int64_t i = 0; i < r - 1; ++i) rows_map.push_back(i);
    const Shape square_m(s.dtype(), pd);
    const Value perm = b_.broadcast_in_dim(permutation(pivots, m), pd, rows_map);
    const Value p = b_.convert(b_.compare(perm, b_.iota(Shape(DType::kS32, pd), r - 1), ComparisonDirection::kEq),
                               s.dtype());
    const Lin x = matmul(p, da);
    const Value zero = b_.scalar(s.dtype(), 0);
    const std::vector<std::int64_t> start(static_cast<std::size_t>(r), 0), none(static_cast<std::size_t>(r), 0);
    // L [..., m, m]: the strictly lower part of lu's first k columns, padded, plus I.
    std::vector<std::int64_t> limit = d, high = none;
    limit[col] = k;
    high[col] = m - k;
    const Value lk = b_.slice(packed, start, limit);  // [..., m, k]
    const Value l = b_.add(b_.pad(masked(lk, triangle(shape(lk), true, -1)), zero, none, high), eye(square_m));
    // U [..., n, n]: the upper part of lu's first k rows, padded, plus I where row >= k.
    limit = d;
    limit[row] = k;
    high = none;
    high[row] = n - k;
    std::vector<std::int64_t> ud = d;
    ud[row] = n;
    const Shape square_n(s.dtype(), ud);
    const Value uk = b_.slice(packed, start, limit);  // [..., k, n]
    const Value past_k = b_.compare(b_.iota(Shape(DType::kS32, ud), r - 2), s32_full(ud, double(k)),
                                    ComparisonDirection::kGe);
    const Value u = b_.add(b_.pad(masked(uk, triangle(shape(uk), false, 0)), zero, none, high),
                           masked(eye(square_n), past_k));
    const Lin la = solve(l, x, true, true, false, true);
    const Lin lau = solve(u, la, false, false, false);
    return l_.add(matmul(l, masked(lau, triangle(s, true, -1), s)), matmul(masked(lau, triangle(s, false, 0), s), u));
  }

  GraphBuilder& b_;
  Linearizer& l_;
};

}  // namespace pjrt_lite::detail
