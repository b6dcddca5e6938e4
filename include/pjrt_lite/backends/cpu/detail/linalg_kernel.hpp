#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The linalg node (jaxlib's LAPACK custom calls) on the CPU, one matrix of the batch at a
// time, each copied into a column-major Eigen matrix, decomposed, and written back row-major:
//   getrf  our own right-looking elimination on Eigen blocks: LAPACK's pivot choice
//          (first max of |re| + |im|) on any m x n, which Eigen's PartialPivLU (square only,
//          |x| for complex) does not give
//   potrf  Eigen's LLT; on failure our own column loop finds LAPACK's info
//   geqrf  Eigen's Householder reflectors, whose tau is LAPACK's conjugated
//   orgqr  Eigen's HouseholderSequence
//   gesdd  Eigen's BDCSVD; gesvd Eigen's JacobiSVD
//   syevd  Eigen's SelfAdjointEigenSolver
//   gehrd  Eigen's HessenbergDecomposition (tau conjugated, as for geqrf)
//   sytrd  Eigen's Tridiagonalization, which reads the lower triangle; the upper one runs on
//          the matrix reversed in both axes, whose lower triangle it is, and maps back
//   gtsv   our own elimination with LAPACK's pivoting, on Eigen rows of b
//   ormqr  Eigen's HouseholderSequence, or its adjoint, from either side
//   geqp3  our own column pivoting (exact remaining norms) on Eigen's reflectors
//   geev   Eigen's EigenSolver / ComplexEigenSolver, left vectors from vr^-1, normalized
//          as LAPACK does (norm 1, largest element real and positive)
//   gees   Eigen's ComplexSchur, or RealSchur with its 2x2 blocks put in LAPACK's standard
//          form (equal diagonal, off-diagonal of opposite signs)
// (trsm runs on the triangular_solve kernel, see compiler.hpp.) The decompositions allocate
// their own workspace, so unlike other kernels a run allocates.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/Householder>
#include <Eigen/LU>
#include <Eigen/SVD>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/linalg_factory.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class LinalgKernel final : public Kernel {
 public:
  /// Plans the routine of `attrs` (checked by shape inference) on operand 0 of shape `x`;
  /// `reads` are the operands' slots, `dsts` the results'.
  LinalgKernel(const std::vector<Shape>& operands, std::vector<Shape> results,
               const LinalgAttrs& attrs, std::vector<std::int32_t> reads,
               std::vector<std::int32_t> dsts)
      : attrs_(attrs), dtype_(operands[0].dtype()), results_(std::move(results)), reads_(std::move(reads)),
        dsts_(std::move(dsts)) {
    if (attrs.routine == LinalgRoutine::kGtsv) {
      const Shape& b = operands[3];
      m_ = b.dim(b.rank() - 2);
      n_ = b.dim(b.rank() - 1);
      batches_ = 1;
      for (std::int64_t d = 0; d + 2 < b.rank(); ++d) batches_ *= b.dim(d);
      bytes_accessed = 2 * b.byte_size() + 6 * operands[0].byte_size();
      return;
    }
    const Shape& x = operands[0];
    const std::int64_t r = x.rank();
    if (attrs.routine == LinalgRoutine::kOrgqr || attrs.routine == LinalgRoutine::kOrmqr)
      tau_len_ = operands[1].dims().back();
    if (attrs.routine == LinalgRoutine::kOrmqr) {
      c_rows_ = operands[2].dim(r - 2);
      c_cols_ = operands[2].dim(r - 1);
    }
    m_ = x.dim(r - 2);
    n_ = x.dim(r - 1);
    batches_ = 1;
    for (std::int64_t d = 0; d + 2 < r; ++d) batches_ *= x.dim(d);
    flops = static_cast<double>(batches_) * static_cast<double>(m_) * static_cast<double>(n_) *
            static_cast<double>(std::min(m_, n_));
    bytes_accessed = x.byte_size();
    for (const Shape& s : results_) bytes_accessed += s.byte_size();
  }

  void run(const RunContext& ctx) const override {
    visit_dtype(dtype_, [&]<class T>(std::type_identity<T>) {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, c64> || std::is_same_v<T, c128>)
        run_typed<T>(ctx);
    });
  }

 private:
  template <class T>
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  template <class T>
  using RowMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

  template <class T>
  T* slot(const RunContext& ctx, std::int32_t s) const {
    return reinterpret_cast<T*>(ctx.slots[s]);
  }
  static std::int64_t last2(const Shape& s) { return s.dim(s.rank() - 2) * s.dim(s.rank() - 1); }

  template <class T>
  void run_typed(const RunContext& ctx) const {
    using Real = typename Eigen::NumTraits<T>::Real;
    if (attrs_.routine == LinalgRoutine::kGtsv) return run_gtsv<T>(ctx);
    const std::int64_t m = m_, n = n_, k = std::min(m_, n_);
    for (std::int64_t b = 0; b < batches_; ++b) {
      // Copy first: a result may share its slot with the operand.
      Mat<T> a = RowMap<T>(slot<T>(ctx, reads_[0]) + b * m * n, m, n);
      auto out_matrix = [&](std::size_t r, const Mat<T>& v) {
        const std::int64_t rows = v.rows(), cols = v.cols();
        RowMap<T>(slot<T>(ctx, dsts_[r]) + b * rows * cols, rows, cols) = v;
      };
      auto out_info = [&](std::size_t r, std::int64_t info) {
        slot<std::int32_t>(ctx, dsts_[r])[b] = static_cast<std::int32_t>(info);
      };
      switch (attrs_.routine) {
        case LinalgRoutine::kGetrf: {
          std::int32_t* piv = slot<std::int32_t>(ctx, dsts_[1]) + b * k;
          out_info(2, getrf(a, piv));
          out_matrix(0, a);
          break;
        }
        case LinalgRoutine::kPotrf: out_info(1, potrf(a)); out_matrix(0, a); break;
        case LinalgRoutine::kGeqrf: {
          T* tau = slot<T>(ctx, dsts_[1]) + b * k;
          Eigen::Matrix<T, Eigen::Dynamic, 1> work(std::max<std::int64_t>(n, 1));
          for (std::int64_t j = 0; j < k; ++j) tau[j] = householder_column(a, j, work.data());
          out_matrix(0, a);
          break;
        }
        case LinalgRoutine::kOrgqr: {
          const std::int64_t kt = tau_len_;
          Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> tau(
              slot<T>(ctx, reads_[1]) + b * kt, kt);
          // LAPACK's tau are Eigen's coefficients for Q = H(1) ... H(k) as written.
          Eigen::Matrix<T, Eigen::Dynamic, 1> coeffs = tau;
          Eigen::HouseholderSequence<Mat<T>, Eigen::Matrix<T, Eigen::Dynamic, 1>> q(a, coeffs);
          q.setLength(kt);
          Mat<T> result = Mat<T>::Identity(m, n);
          result.applyOnTheLeft(q);
          out_matrix(0, result);
          break;
        }
        case LinalgRoutine::kGesdd:
        case LinalgRoutine::kGesvd: {
          out_matrix(0, a);  // LAPACK's destroyed input: here the input itself
          Real* s = slot<Real>(ctx, dsts_[1]) + b * k;
          const Shape& us = results_[2];
          const Shape& vs = results_[3];
          if (!a.allFinite()) {
            std::fill(s, s + k, std::numeric_limits<Real>::quiet_NaN());
            std::fill(slot<T>(ctx, dsts_[2]) + b * last2(us), slot<T>(ctx, dsts_[2]) + (b + 1) * last2(us), T(0));
            std::fill(slot<T>(ctx, dsts_[3]) + b * last2(vs), slot<T>(ctx, dsts_[3]) + (b + 1) * last2(vs), T(0));
            out_info(4, -4);
            break;
          }
          const int options = attrs_.mode == 'A'   ? Eigen::ComputeFullU | Eigen::ComputeFullV
                              : attrs_.mode == 'S' ? Eigen::ComputeThinU | Eigen::ComputeThinV
                                                   : 0;
          Mat<T> u, v;
          Eigen::Matrix<Real, Eigen::Dynamic, 1> sv;
          if (attrs_.routine == LinalgRoutine::kGesdd) {
            Eigen::BDCSVD<Mat<T>> svd(a, static_cast<unsigned>(options));
            sv = svd.singularValues();
            if (options) u = svd.matrixU(), v = svd.matrixV();
          } else {
            Eigen::JacobiSVD<Mat<T>> svd(a, static_cast<unsigned>(options));
            sv = svd.singularValues();
            if (options) u = svd.matrixU(), v = svd.matrixV();
          }
          for (std::int64_t i = 0; i < k; ++i) s[i] = sv(i);
          if (options) {
            out_matrix(2, u);
            out_matrix(3, v.adjoint());
          } else {
            std::fill(slot<T>(ctx, dsts_[2]) + b * last2(us), slot<T>(ctx, dsts_[2]) + (b + 1) * last2(us), T(0));
            std::fill(slot<T>(ctx, dsts_[3]) + b * last2(vs), slot<T>(ctx, dsts_[3]) + (b + 1) * last2(vs), T(0));
          }
          out_info(4, 0);
          break;
        }
        case LinalgRoutine::kSyevd: {
          Real* w = slot<Real>(ctx, dsts_[1]) + b * n;
          if (!a.allFinite()) {
            std::fill(w, w + n, std::numeric_limits<Real>::quiet_NaN());
            out_matrix(0, Mat<T>::Constant(n, n, T(std::numeric_limits<Real>::quiet_NaN())));
            out_info(2, 1);
            break;
          }
          Mat<T> h = attrs_.uplo == 'L' ? Mat<T>(a.template selfadjointView<Eigen::Lower>())
                                        : Mat<T>(a.template selfadjointView<Eigen::Upper>());
          for (std::int64_t i = 0; i < n; ++i) h(i, i) = Eigen::numext::real(h(i, i));
          Eigen::SelfAdjointEigenSolver<Mat<T>> eig(
              h, attrs_.mode == 'V' ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
          for (std::int64_t i = 0; i < n; ++i) w[i] = eig.eigenvalues()(i);
          // mode 'N' leaves the input in the first result (LAPACK leaves it destroyed).
          out_matrix(0, attrs_.mode == 'V' ? Mat<T>(eig.eigenvectors()) : a);
          out_info(2, eig.info() == Eigen::Success ? 0 : 1);
          break;
        }
        case LinalgRoutine::kGehrd: {
          T* tau = slot<T>(ctx, dsts_[1]) + b * std::max<std::int64_t>(n - 1, 0);
          if (n > 1) {
            Eigen::HessenbergDecomposition<Mat<T>> hd(a);
            const auto& h = hd.householderCoefficients();
            for (std::int64_t i = 0; i + 1 < n; ++i) tau[i] = Eigen::numext::conj(h(i));
            out_matrix(0, hd.packedMatrix());
          } else {
            out_matrix(0, a);
          }
          out_info(2, 0);
          break;
        }
        case LinalgRoutine::kSytrd: {
          const std::int64_t e_len = std::max<std::int64_t>(n - 1, 0);
          Real* d = slot<Real>(ctx, dsts_[1]) + b * n;
          Real* e = slot<Real>(ctx, dsts_[2]) + b * e_len;
          T* tau = slot<T>(ctx, dsts_[3]) + b * e_len;
          const bool lower = attrs_.uplo == 'L';
          // The upper triangle of a is the lower one of j a j (j reverses the order).
          Mat<T> work = lower ? a : Mat<T>(a.reverse());
          if (n > 1) {
            Eigen::Tridiagonalization<Mat<T>> tri(work);
            work = tri.packedMatrix();
            const auto& h = tri.householderCoefficients();
            for (std::int64_t i = 0; i < e_len; ++i) {
              const std::int64_t to = lower ? i : e_len - 1 - i;
              tau[to] = Eigen::numext::conj(h(i));
              e[to] = Eigen::numext::real(work(i + 1, i));
            }
          }
          for (std::int64_t i = 0; i < n; ++i) work(i, i) = Eigen::numext::real(work(i, i));
          if (!lower) work = Mat<T>(work.reverse());
          for (std::int64_t i = 0; i < n; ++i) d[i] = Eigen::numext::real(work(i, i));
          out_matrix(0, work);
          out_info(4, 0);
          break;
        }
        case LinalgRoutine::kOrmqr: {
          const std::int64_t kt = tau_len_;
          Eigen::Matrix<T, Eigen::Dynamic, 1> coeffs =
              Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(slot<T>(ctx, reads_[1]) + b * kt, kt);
          Mat<T> c = RowMap<T>(slot<T>(ctx, reads_[2]) + b * c_rows_ * c_cols_, c_rows_, c_cols_);
          Eigen::HouseholderSequence<Mat<T>, Eigen::Matrix<T, Eigen::Dynamic, 1>> q(a, coeffs);
          q.setLength(kt);
          if (attrs_.left) {
            if (attrs_.transpose) c.applyOnTheLeft(q.adjoint());
            else c.applyOnTheLeft(q);
          } else {
            if (attrs_.transpose) c.applyOnTheRight(q.adjoint());
            else c.applyOnTheRight(q);
          }
          out_matrix(0, c);
          break;
        }
        case LinalgRoutine::kGeqp3: geqp3<T>(ctx, b, a); break;
        case LinalgRoutine::kGeev: geev<T>(ctx, b, a); break;
        case LinalgRoutine::kGees: gees<T>(ctx, b, a); break;
        case LinalgRoutine::kTrsm:
        case LinalgRoutine::kGtsv: break;
      }
    }
  }

  /// LAPACK's eigenvector normalization: norm 1, the element of largest modulus (the first
  /// such) real and positive.
  template <class C>
  static void normalize_columns(Mat<C>& v) {
    for (Eigen::Index c = 0; c < v.cols(); ++c) {
      const auto norm = v.col(c).norm();
      if (norm == 0) continue;
      Eigen::Index big = 0;
      v.col(c).cwiseAbs2().maxCoeff(&big);
      const auto mag = std::abs(v(big, c));
      const C phase = mag == 0 ? C(1) : C(std::conj(v(big, c)) / mag);
      v.col(c) *= phase / norm;
      v(big, c) = C(v(big, c).real());
    }
  }

  /// geev: Eigen's EigenSolver (real; conjugate pairs come positive imaginary part first, as
  /// from LAPACK) or ComplexEigenSolver; left eigenvectors from the rows of vr^-1.
  template <class T>
  void geev(const RunContext& ctx, std::int64_t b, Mat<T>& a) const {
    using Real = typename Eigen::NumTraits<T>::Real;
    using C = std::complex<Real>;
    const std::int64_t n = a.rows();
    const bool real = !Eigen::NumTraits<T>::IsComplex;
    const std::size_t vl_at = real ? 2 : 1;
    auto store = [&](std::size_t r, const Mat<C>& v) {
      RowMap<C>(slot<C>(ctx, dsts_[r]) + b * n * n, n, n) = v;
    };
    auto store_w = [&](const Eigen::Matrix<C, Eigen::Dynamic, 1>& w) {
      for (std::int64_t i = 0; i < n; ++i) {
        if constexpr (Eigen::NumTraits<T>::IsComplex) {
          slot<T>(ctx, dsts_[0])[b * n + i] = w(i);
        } else {
          slot<Real>(ctx, dsts_[0])[b * n + i] = w(i).real();
          slot<Real>(ctx, dsts_[1])[b * n + i] = w(i).imag();
        }
      }
    };
    const Real nan = std::numeric_limits<Real>::quiet_NaN();
    if (!a.allFinite()) {
      store_w(Eigen::Matrix<C, Eigen::Dynamic, 1>::Constant(n, C(nan, nan)));
      store(vl_at, Mat<C>::Constant(n, n, C(nan, nan)));
      store(vl_at + 1, Mat<C>::Constant(n, n, C(nan, nan)));
      slot<std::int32_t>(ctx, dsts_[vl_at + 2])[b] = 1;
      return;
    }
    Eigen::Matrix<C, Eigen::Dynamic, 1> w;
    Mat<C> vr;
    bool ok = true;
    if constexpr (Eigen::NumTraits<T>::IsComplex) {
      Eigen::ComplexEigenSolver<Mat<T>> es(a, true);
      ok = es.info() == Eigen::Success;
      w = es.eigenvalues();
      vr = es.eigenvectors();
    } else {
      Eigen::EigenSolver<Mat<T>> es(a, true);
      ok = es.info() == Eigen::Success;
      w = es.eigenvalues();
      vr = es.eigenvectors();
    }
    Mat<C> vl = vr.inverse().adjoint();
    normalize_columns(vr);
    normalize_columns(vl);
    if (real)
      for (std::int64_t c = 0; c < n; ++c)
        if (w(c).imag() == 0) {
          vr.col(c) = vr.col(c).real().template cast<C>();
          vl.col(c) = vl.col(c).real().template cast<C>();
        }
    store_w(w);
    store(vl_at, attrs_.compute_left == 'V' ? vl : Mat<C>::Zero(n, n));
    store(vl_at + 1, attrs_.compute_right == 'V' ? vr : Mat<C>::Zero(n, n));
    slot<std::int32_t>(ctx, dsts_[vl_at + 2])[b] = ok ? 0 : 1;
  }

  /// gees: Eigen's ComplexSchur, or RealSchur with each 2x2 block put in LAPACK's standard
  /// form (standardize_block); a = vs t vs^H. A real input's eigenvalues are wr + i wi, a
  /// complex pair positive imaginary part first.
  template <class T>
  void gees(const RunContext& ctx, std::int64_t b, Mat<T>& a) const {
    using Real = typename Eigen::NumTraits<T>::Real;
    constexpr bool kComplex = Eigen::NumTraits<T>::IsComplex;
    const std::int64_t n = a.rows();
    const std::size_t sdim_at = kComplex ? 3 : 4;
    auto out = [&](std::size_t r, const Mat<T>& v) { RowMap<T>(slot<T>(ctx, dsts_[r]) + b * n * n, n, n) = v; };
    auto out_w = [&](std::int64_t i, std::complex<Real> w) {
      if constexpr (kComplex) {
        slot<T>(ctx, dsts_[2])[b * n + i] = w;
      } else {
        slot<T>(ctx, dsts_[2])[b * n + i] = w.real();
        slot<T>(ctx, dsts_[3])[b * n + i] = w.imag();
      }
    };
    std::int32_t info = 0;
    Mat<T> t, u;
    if (!a.allFinite()) {
      info = 1;
    } else if constexpr (kComplex) {
      Eigen::ComplexSchur<Mat<T>> cs(a, attrs_.mode == 'V');
      info = cs.info() == Eigen::Success ? 0 : 1;
      t = cs.matrixT();
      t.template triangularView<Eigen::StrictlyLower>().setZero();
      u = attrs_.mode == 'V' ? Mat<T>(cs.matrixU()) : Mat<T>::Zero(n, n);
      for (std::int64_t i = 0; i < n; ++i) out_w(i, t(i, i));
    } else {
      const bool vectors = attrs_.mode == 'V';
      Eigen::RealSchur<Mat<T>> rs(n);
      if (n > 0) rs.compute(a, vectors);
      info = n == 0 || rs.info() == Eigen::Success ? 0 : 1;
      t = n > 0 ? Mat<T>(rs.matrixT()) : Mat<T>(0, 0);
      u = vectors && n > 0 ? Mat<T>(rs.matrixU()) : Mat<T>::Zero(n, n);
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = j + 2; i < n; ++i) t(i, j) = 0;
      for (std::int64_t i = 0; i < n;) {
        if (i + 1 == n || t(i + 1, i) == 0) {
          out_w(i, {t(i, i), 0});
          ++i;
          continue;
        }
        Real p = t(i, i), q = t(i, i + 1), r = t(i + 1, i), s = t(i + 1, i + 1), cs = 1, sn = 0;
        standardize_block(p, q, r, s, cs, sn);
        t(i, i) = p;
        t(i, i + 1) = q;
        t(i + 1, i) = r;
        t(i + 1, i + 1) = s;
        // rows i, i+1 right of the block by [cs sn; -sn cs]; columns above it and vs by its
        // transpose.
        auto rotate = [cs, sn](auto x, auto y) {
          for (Eigen::Index k = 0; k < x.size(); ++k) {
            const Real xk = x(k), yk = y(k);
            x(k) = cs * xk + sn * yk;
            y(k) = cs * yk - sn * xk;
          }
        };
        rotate(t.row(i).tail(n - i - 2), t.row(i + 1).tail(n - i - 2));
        rotate(t.col(i).head(i), t.col(i + 1).head(i));
        if (vectors) rotate(u.col(i), u.col(i + 1));
        const Real im = r == 0 ? Real(0) : std::sqrt(std::abs(q)) * std::sqrt(std::abs(r));
        out_w(i, {p, im});
        out_w(i + 1, {s, -im});
        i += 2;
      }
    }
    if (info != 0) {  // NaN results, as JAX gives for a nonzero info
      const Real nan = std::numeric_limits<Real>::quiet_NaN();
      T nan_t{};
      if constexpr (kComplex) nan_t = T(nan, nan);
      else nan_t = nan;
      t = u = Mat<T>::Constant(n, n, nan_t);
      for (std::int64_t i = 0; i < n; ++i) out_w(i, {nan, nan});
    }
    out(0, t);
    out(1, u);
    slot<std::int32_t>(ctx, dsts_[sdim_at])[b] = 0;
    slot<std::int32_t>(ctx, dsts_[sdim_at + 1])[b] = info;
  }

  /// LAPACK's standard form of a real 2x2 block [a b; c d] (the rule of ?lanv2): on return
  /// the block is rot^T [a b; c d] rot with rot = [cs -sn; sn cs], and either upper triangular
  /// (real eigenvalues a and d, the one nearer d's side of the old diagonal second) or with
  /// a == d and b c < 0 (the complex pair a +- sqrt(-b c) i).
  template <class R>
  static void standardize_block(R& a, R& b, R& c, R& d, R& cs, R& sn) {
    cs = 1;
    sn = 0;
    if (c == 0) return;
    if (b == 0) {  // swap the two rows and columns
      cs = 0;
      sn = 1;
      std::swap(a, d);
      b = -c;
      c = 0;
      return;
    }
    if (a == d && std::signbit(b) != std::signbit(c)) return;
    const R diff = a - d, p = diff / 2;
    const R bc_max = std::max(std::abs(b), std::abs(c));
    const R bc_min = std::min(std::abs(b), std::abs(c)) * (std::signbit(b) == std::signbit(c) ? 1 : -1);
    const R scale = std::max(std::abs(p), bc_max);
    R z = p / scale * p + bc_max / scale * bc_min;
    if (z >= 4 * std::numeric_limits<R>::epsilon()) {  // real eigenvalues: triangular
      z = p + std::copysign(std::sqrt(scale) * std::sqrt(z), p);
      a = d + z;
      d -= bc_max / z * bc_min;
      const R tau = std::hypot(c, z);
      cs = z / tau;
      sn = c / tau;
      b -= c;
      c = 0;
      return;
    }
    // A complex pair or nearly equal real eigenvalues: rotate to an equal diagonal.
    const R sigma = b + c;
    const R tau = std::hypot(sigma, diff);
    cs = std::sqrt((1 + std::abs(sigma) / tau) / 2);
    sn = -(p / (tau * cs)) * (sigma < 0 ? -1 : 1);
    const R aa = a * cs + b * sn, bb = -a * sn + b * cs;
    const R cc = c * cs + d * sn, dd = -c * sn + d * cs;
    a = aa * cs + cc * sn;
    b = bb * cs + dd * sn;
    c = -aa * sn + cc * cs;
    d = -bb * sn + dd * cs;
    const R mid = (a + d) / 2;
    a = d = mid;
    if (c == 0) return;
    if (b == 0) {
      b = -c;
      c = 0;
      const R old = cs;
      cs = -sn;
      sn = old;
    } else if (std::signbit(b) == std::signbit(c)) {  // real after all: triangular
      const R sab = std::sqrt(std::abs(b)), sac = std::sqrt(std::abs(c));
      const R root = std::copysign(sab * sac, c);
      const R scale2 = 1 / std::sqrt(std::abs(b + c));
      a = mid + root;
      d = mid - root;
      b -= c;
      c = 0;
      const R cs1 = sab * scale2, sn1 = sac * scale2;
      const R next = cs * cs1 - sn * sn1;
      sn = cs * sn1 + sn * cs1;
      cs = next;
    }
  }

  /// geqp3: LAPACK's column pivoting (fixed columns first, then the free column of largest
  /// remaining norm, recomputed exactly here rather than downdated) with Eigen's reflectors.
  template <class T>
  void geqp3(const RunContext& ctx, std::int64_t b, Mat<T>& a) const {
    const std::int64_t m = a.rows(), n = a.cols(), k = std::min(m, n);
    const std::int32_t* jin = slot<std::int32_t>(ctx, reads_[1]) + b * n;
    std::vector<std::int32_t> jpvt(jin, jin + n);
    std::int64_t fixed = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      if (jpvt[static_cast<std::size_t>(j)] != 0) {
        if (j != fixed) {
          a.col(j).swap(a.col(fixed));
          jpvt[static_cast<std::size_t>(j)] = jpvt[static_cast<std::size_t>(fixed)];
          jpvt[static_cast<std::size_t>(fixed)] = static_cast<std::int32_t>(j + 1);
        } else {
          jpvt[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(j + 1);
        }
        ++fixed;
      } else {
        jpvt[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(j + 1);
      }
    }
    T* tau = slot<T>(ctx, dsts_[2]) + b * k;
    Eigen::Matrix<T, Eigen::Dynamic, 1> work(std::max<std::int64_t>(n, 1));
    for (std::int64_t i = 0; i < k; ++i) {
      if (i >= fixed) {
        Eigen::Index p = 0;
        a.bottomRightCorner(m - i, n - i).colwise().squaredNorm().maxCoeff(&p);
        if (p != 0) {
          a.col(i).swap(a.col(i + p));
          std::swap(jpvt[static_cast<std::size_t>(i)], jpvt[static_cast<std::size_t>(i + p)]);
        }
      }
      tau[i] = householder_column(a, i, work.data());
    }
    std::copy(jpvt.begin(), jpvt.end(), slot<std::int32_t>(ctx, dsts_[1]) + b * n);
    RowMap<T>(slot<T>(ctx, dsts_[0]) + b * m * n, m, n) = a;
  }

  /// gtsv: dl, d, du [..., m] (LAPACK's dl is dl[1..]) and b [..., m, n], in place in the
  /// results; LAPACK's elimination with its pivot choice, row operations on Eigen rows of b.
  template <class T>
  void run_gtsv(const RunContext& ctx) const {
    const std::int64_t m = m_, nrhs = n_;
    for (std::int64_t b = 0; b < batches_; ++b) {
      // Read every operand before writing a result: a result may share an operand's slot.
      std::vector<T> diagonals[3];
      for (std::size_t i = 0; i < 3; ++i) {
        const T* in = slot<T>(ctx, reads_[i]) + b * m;
        diagonals[i].assign(in, in + m);
      }
      Mat<T> x = RowMap<T>(slot<T>(ctx, reads_[3]) + b * m * nrhs, m, nrhs);
      T* l = diagonals[0].data() + (m > 0 ? 1 : 0);  // l[k] is below d[k]
      T* d = diagonals[1].data();
      T* u = diagonals[2].data();
      std::int64_t info = 0;
      for (std::int64_t k = 0; k + 1 < m && info == 0; ++k) {
        if (l[k] == T(0)) {
          if (d[k] == T(0)) info = k + 1;
        } else if (cabs1(d[k]) >= cabs1(l[k])) {
          const T mult = l[k] / d[k];
          d[k + 1] -= mult * u[k];
          x.row(k + 1) -= mult * x.row(k);
          if (k + 2 < m) l[k] = T(0);
        } else {
          const T mult = d[k] / l[k];
          d[k] = l[k];
          const T temp = d[k + 1];
          d[k + 1] = u[k] - mult * temp;
          if (k + 2 < m) {
            l[k] = u[k + 1];
            u[k + 1] = -mult * l[k];
          }
          u[k] = temp;
          x.row(k).swap(x.row(k + 1));
          x.row(k + 1) = x.row(k + 1) - mult * x.row(k);
        }
      }
      if (info == 0 && m > 0 && d[m - 1] == T(0)) info = m;
      if (info == 0 && m > 0) {
        x.row(m - 1) /= d[m - 1];
        if (m > 1) x.row(m - 2) = (x.row(m - 2) - u[m - 2] * x.row(m - 1)) / d[m - 2];
        for (std::int64_t k = m - 3; k >= 0; --k)
          x.row(k) = (x.row(k) - u[k] * x.row(k + 1) - l[k] * x.row(k + 2)) / d[k];
      }
      for (std::size_t i = 0; i < 3; ++i)
        std::copy(diagonals[i].begin(), diagonals[i].end(), slot<T>(ctx, dsts_[i]) + b * m);
      RowMap<T>(slot<T>(ctx, dsts_[3]) + b * m * nrhs, m, nrhs) = x;
      slot<std::int32_t>(ctx, dsts_[4])[b] = static_cast<std::int32_t>(info);
    }
  }

  /// Column j of ?geqr2: Eigen's reflector of a(j.., j) (its tau is LAPACK's conjugated, so
  /// Eigen's H = I - tau v v^H is LAPACK's H^H), applied to the columns right of j. Returns
  /// LAPACK's tau.
  template <class T>
  static T householder_column(Mat<T>& a, std::int64_t j, T* work) {
    const std::int64_t m = a.rows(), n = a.cols();
    T tau_eigen;
    typename Eigen::NumTraits<T>::Real beta;
    a.col(j).tail(m - j).makeHouseholderInPlace(tau_eigen, beta);
    a(j, j) = beta;
    a.bottomRightCorner(m - j, n - j - 1)
        .applyHouseholderOnTheLeft(a.col(j).tail(m - j - 1), tau_eigen, work);
    return Eigen::numext::conj(tau_eigen);
  }

  /// LAPACK's cabs1: the pivot measure of i?amax.
  template <class T>
  static auto cabs1(const T& x) {
    if constexpr (Eigen::NumTraits<T>::IsComplex) return std::abs(x.real()) + std::abs(x.imag());
    else return std::abs(x);
  }

  template <class T>
  static std::int64_t getrf(Mat<T>& a, std::int32_t* piv) {
    const std::int64_t m = a.rows(), n = a.cols(), k = std::min(m, n);
    std::int64_t info = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      std::int64_t p = j;
      for (std::int64_t i = j + 1; i < m; ++i)
        if (cabs1(a(i, j)) > cabs1(a(p, j))) p = i;
      piv[j] = static_cast<std::int32_t>(p + 1);
      if (a(p, j) == T(0)) {
        if (info == 0) info = j + 1;
        continue;
      }
      if (p != j) a.row(p).swap(a.row(j));
      a.col(j).tail(m - j - 1) *= T(1) / a(j, j);
      a.bottomRightCorner(m - j - 1, n - j - 1).noalias() -=
          a.col(j).tail(m - j - 1) * a.row(j).tail(n - j - 1);
    }
    return info;
  }

  template <class T>
  std::int64_t potrf(Mat<T>& a) const {
    const bool lower = attrs_.uplo == 'L';
    const std::int64_t n = a.rows();
    if (lower) {
      Eigen::LLT<Mat<T>, Eigen::Lower> llt(a);
      // LLT lets a NaN through as success; the column loop below reports it.
      if (llt.info() == Eigen::Success && llt.matrixLLT().allFinite()) {
        a.template triangularView<Eigen::Lower>() = llt.matrixL();
        return 0;
      }
    } else {
      Eigen::LLT<Mat<T>, Eigen::Upper> llt(a);
      // LLT lets a NaN through as success; the column loop below reports it.
      if (llt.info() == Eigen::Success && llt.matrixLLT().allFinite()) {
        a.template triangularView<Eigen::Upper>() = llt.matrixU();
        return 0;
      }
    }
    // Not positive definite: factor column by column to find LAPACK's info, the first
    // column whose pivot is not positive, writing the columns factored so far.
    Mat<T> l = lower ? Mat<T>(a.template triangularView<Eigen::Lower>())
                     : Mat<T>(a.template triangularView<Eigen::Upper>().adjoint());
    for (std::int64_t j = 0; j < n; ++j) {
      const auto d = Eigen::numext::real(l(j, j)) - l.row(j).head(j).squaredNorm();
      if (!(d > 0)) return j + 1;
      l(j, j) = std::sqrt(d);
      if (j + 1 < n) {
        l.col(j).tail(n - j - 1) -= l.bottomLeftCorner(n - j - 1, j) * l.row(j).head(j).adjoint();
        l.col(j).tail(n - j - 1) /= l(j, j);
      }
      for (std::int64_t i = j; i < n; ++i) {
        if (lower) a(i, j) = l(i, j);
        else a(j, i) = Eigen::numext::conj(l(i, j));
      }
    }
    return 0;
  }

  LinalgAttrs attrs_;
  DType dtype_;
  std::vector<Shape> results_;
  std::vector<std::int32_t> reads_, dsts_;
  std::int64_t m_ = 0, n_ = 0, batches_ = 0;
  std::int64_t tau_len_ = 0;  // orgqr, ormqr: k, the length of tau
  std::int64_t c_rows_ = 0, c_cols_ = 0;  // ormqr: c's matrix
};

#if defined(PJRT_LITE_CPU_EXTERN_KERNELS) || defined(PJRT_LITE_KERNEL_BUILD_ENTRY) || \
    !defined(PJRT_LITE_CPU_NO_LINALG_KERNELS)
PJRT_LITE_LINALG_KERNELS_ONCE std::unique_ptr<Kernel> make_linalg_kernel(const std::vector<Shape>& operands,
                                                                         std::vector<Shape> results,
                                                                         const LinalgAttrs& attrs,
                                                                         std::vector<std::int32_t> reads,
                                                                         std::vector<std::int32_t> dsts) {
  return std::make_unique<LinalgKernel>(operands, std::move(results), attrs, std::move(reads), std::move(dsts));
}
#endif

}  // namespace pjrt_lite::cpu::detail
