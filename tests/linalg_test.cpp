// jaxlib's LAPACK custom calls (the linalg node): every routine, element type and a batch on
// the reference interpreter and the CPU backend, checked against properties computed here
// (reconstruction, orthogonality, order), against LAPACK's exact conventions on small cases
// worked by hand, and as whole StableHLO programs in the form jax exports them.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/fingerprint.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/ir/serialize.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "pjrt_lite/stablehlo/printer.hpp"
#include "test_util.hpp"

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace linalg_test {

using Z = std::complex<double>;

/// A column-major complex matrix for the checks (independent of both backends).
struct M {
  std::int64_t r = 0, c = 0;
  std::vector<Z> v;
  M(std::int64_t rows, std::int64_t cols) : r(rows), c(cols), v(static_cast<std::size_t>(rows * cols)) {}
  Z& operator()(std::int64_t i, std::int64_t j) { return v[static_cast<std::size_t>(i + j * r)]; }
  Z operator()(std::int64_t i, std::int64_t j) const { return v[static_cast<std::size_t>(i + j * r)]; }
};

/// A real matrix from its rows.
M from_rows(std::initializer_list<std::initializer_list<double>> rows) {
  M out(static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows.begin()->size()));
  std::int64_t i = 0;
  for (const auto& row : rows) {
    std::int64_t j = 0;
    for (double x : row) out(i, j++) = x;
    ++i;
  }
  return out;
}

M mul(const M& a, const M& b) {
  M out(a.r, b.c);
  for (std::int64_t i = 0; i < a.r; ++i)
    for (std::int64_t j = 0; j < b.c; ++j) {
      Z s = 0;
      for (std::int64_t k = 0; k < a.c; ++k) s += a(i, k) * b(k, j);
      out(i, j) = s;
    }
  return out;
}
M adj(const M& a) {
  M out(a.c, a.r);
  for (std::int64_t i = 0; i < a.r; ++i)
    for (std::int64_t j = 0; j < a.c; ++j) out(j, i) = std::conj(a(i, j));
  return out;
}
M eye(std::int64_t n, std::int64_t m) {
  M out(n, m);
  for (std::int64_t i = 0; i < std::min(n, m); ++i) out(i, i) = 1;
  return out;
}
double max_diff(const M& a, const M& b) {
  REQUIRE(a.r == b.r);
  REQUIRE(a.c == b.c);
  double d = 0;
  for (std::size_t i = 0; i < a.v.size(); ++i) d = std::max(d, std::abs(a.v[i] - b.v[i]));
  return d;
}

/// All elements of `l` as complex<double>, row-major.
std::vector<Z> elements(const Literal& l) {
  std::vector<Z> out;
  switch (l.dtype()) {
    case DType::kF32: for (float x : l.data<float>()) out.emplace_back(x, 0); break;
    case DType::kF64: for (double x : l.data<double>()) out.emplace_back(x, 0); break;
    case DType::kC64: for (c64 x : l.data<c64>()) out.emplace_back(x.real(), x.imag()); break;
    case DType::kC128: for (c128 x : l.data<c128>()) out.emplace_back(x); break;
    case DType::kS32: for (std::int32_t x : l.data<std::int32_t>()) out.emplace_back(x, 0); break;
    default: FAIL("unexpected dtype");
  }
  return out;
}
/// Matrix `b` of the batch in `l` (whose last two dimensions are rows x cols).
M matrix(const Literal& l, std::int64_t b) {
  const auto& d = l.dims();
  const std::int64_t rows = d[d.size() - 2], cols = d[d.size() - 1];
  const std::vector<Z> e = elements(l);
  M out(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) out(i, j) = e[static_cast<std::size_t>(b * rows * cols + i * cols + j)];
  return out;
}
/// Vector `b` of the batch in `l` (last dimension).
std::vector<Z> vec(const Literal& l, std::int64_t b) {
  const std::int64_t n = l.dims().empty() ? 1 : l.dims().back();
  const std::vector<Z> e = elements(l);
  return std::vector<Z>(e.begin() + b * n, e.begin() + (b + 1) * n);
}

/// A literal of type t and dims from complex values (imaginary parts dropped for real t).
Literal literal_of(DType t, const std::vector<std::int64_t>& dims, const std::vector<Z>& v) {
  Literal l(Shape(t, dims));
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (t) {
      case DType::kF32: l.data<float>()[i] = static_cast<float>(v[i].real()); break;
      case DType::kF64: l.data<double>()[i] = v[i].real(); break;
      case DType::kC64: l.data<c64>()[i] = c64(static_cast<float>(v[i].real()), static_cast<float>(v[i].imag())); break;
      case DType::kC128: l.data<c128>()[i] = v[i]; break;
      default: FAIL("unexpected dtype");
    }
  }
  return l;
}

/// Random elements; complex ones for complex t.
std::vector<Z> random_values(std::mt19937_64& rng, DType t, std::size_t n) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Z> out(n);
  for (Z& z : out) z = Z(u(rng), is_complex(t) ? u(rng) : 0.0);
  return out;
}

/// A batch of Hermitian positive definite n x n matrices, row-major: B B^H + n I.
std::vector<Z> hpd_values(std::mt19937_64& rng, DType t, std::int64_t batch, std::int64_t n) {
  std::vector<Z> out;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::vector<Z> r = random_values(rng, t, static_cast<std::size_t>(n * n));
    M x(n, n);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) x(i, j) = r[static_cast<std::size_t>(i * n + j)];
    M h = mul(x, adj(x));
    for (std::int64_t i = 0; i < n; ++i) h(i, i) = h(i, i).real() + static_cast<double>(n);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) out.push_back(h(i, j));
  }
  return out;
}

double tolerance(DType t) { return t == DType::kF32 || t == DType::kC64 ? 2e-4 : 1e-10; }

/// A one-node graph of the routine on parameters of `shapes`.
Graph linalg_graph(const std::vector<Shape>& shapes, LinalgAttrs a) {
  GraphBuilder b("linalg");
  std::vector<Value> params;
  for (const Shape& s : shapes) params.push_back(b.parameter(s));
  std::vector<Value> out = b.linalg(params, a);
  return build_ok(b, out);
}

/// The results on the reference interpreter and then on the CPU backend.
std::vector<std::vector<Literal>> run_both(const Graph& g, const std::vector<Literal>& args) {
  return {evaluate_ok(g, args), run_on_cpu(g, args)};
}

std::int64_t batch_of(const Literal& x) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d + 2 < x.dims().size(); ++d) n *= x.dims()[d];
  return n;
}

/// The Q of LAPACK's reflectors H(i) = I - tau_i v_i v_i^H, Q = H(1) ... H(k), m x m.
M householder_q(const M& a, const std::vector<Z>& tau) {
  M q = eye(a.r, a.r);
  for (std::size_t i = 0; i < tau.size(); ++i) {
    const auto ii = static_cast<std::int64_t>(i);
    M v(a.r, 1);
    v(ii, 0) = 1;
    for (std::int64_t r = ii + 1; r < a.r; ++r) v(r, 0) = a(r, ii);
    M h = eye(a.r, a.r);
    M vvh = mul(v, adj(v));
    for (std::size_t e = 0; e < h.v.size(); ++e) h.v[e] -= tau[i] * vvh.v[e];
    q = mul(q, h);
  }
  return q;
}

M upper(const M& a, std::int64_t rows) {
  M out(rows, a.c);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = i; j < a.c; ++j) out(i, j) = a(i, j);
  return out;
}

const DType kTypes[] = {DType::kF32, DType::kF64, DType::kC64, DType::kC128};

}  // namespace linalg_test

using namespace linalg_test;

TEST_CASE("linalg: getrf gives P L U with 1-based pivots, every dtype, batched and non-square") {
  std::mt19937_64 rng(1);
  for (DType t : kTypes)
    for (auto dims : {std::vector<std::int64_t>{4, 4}, {2, 4, 3}, {3, 5}}) {
      CAPTURE(dtype_name(t));
      const std::size_t count = static_cast<std::size_t>(std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>()));
      const Literal x = literal_of(t, dims, random_values(rng, t, count));
      const Graph g = linalg_graph({x.shape()}, {LinalgRoutine::kGetrf});
      const auto both = run_both(g, {x});
      for (const auto& out : both) {
        REQUIRE(out.size() == 3);
        CHECK(out[1].dtype() == DType::kS32);
        for (std::int64_t b = 0; b < batch_of(x); ++b) {
          M a = matrix(x, b);
          const M lu = matrix(out[0], b);
          const std::vector<Z> piv = vec(out[1], b);
          CHECK(elements(out[2])[static_cast<std::size_t>(b)] == Z(0));
          for (std::size_t i = 0; i < piv.size(); ++i) {  // P a, applying the swaps in order
            const auto p = static_cast<std::int64_t>(piv[i].real()) - 1;
            REQUIRE(p >= static_cast<std::int64_t>(i));
            REQUIRE(p < a.r);
            for (std::int64_t c = 0; c < a.c; ++c) std::swap(a(static_cast<std::int64_t>(i), c), a(p, c));
          }
          const std::int64_t k = std::min(a.r, a.c);
          M l(a.r, k), u(k, a.c);
          for (std::int64_t i = 0; i < a.r; ++i)
            for (std::int64_t j = 0; j < k; ++j) l(i, j) = i == j ? Z(1) : i > j ? lu(i, j) : Z(0);
          for (std::int64_t i = 0; i < k; ++i)
            for (std::int64_t j = i; j < a.c; ++j) u(i, j) = lu(i, j);
          CHECK(max_diff(mul(l, u), a) < 10 * tolerance(t));
        }
      }
      // Pivots are a discrete choice: both backends make the same one.
      CHECK(values_of<std::int32_t>(both[0][1]) == values_of<std::int32_t>(both[1][1]));
      CHECK(max_diff(matrix(both[0][0], 0), matrix(both[1][0], 0)) < 10 * tolerance(t));
    }
}

TEST_CASE("linalg: getrf's conventions by hand: the largest |re| + |im| pivots, info on a zero pivot") {
  // [[1, 2], [3, 4]]: pivot row 2, L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2/3]].
  const Literal x = Literal::from_span<double>(std::vector<double>{1, 2, 3, 4}, {2, 2}).value();
  const Graph g = linalg_graph({x.shape()}, {LinalgRoutine::kGetrf});
  for (const auto& out : run_both(g, {x})) {
    CHECK(values_of<std::int32_t>(out[1]) == std::vector<std::int32_t>{2, 2});
    const std::vector<double> lu = values_of<double>(out[0]);
    CHECK(lu[0] == 3);
    CHECK(lu[1] == 4);
    CHECK(lu[2] == doctest::Approx(1.0 / 3));
    CHECK(lu[3] == doctest::Approx(2.0 / 3));
    CHECK(values_of<std::int32_t>(out[2]) == std::vector<std::int32_t>{0});
  }
  // complex: |re| + |im| (LAPACK's izamax), not |z|: 1.5 + 1.5i (3 by cabs1, 2.12 by |z|)
  // beats 2.5 (2.5 by both).
  const Literal z = literal_of(DType::kC128, {2, 2}, {Z(2.5, 0), Z(1, 0), Z(1.5, 1.5), Z(0, 1)});
  for (const auto& out : run_both(linalg_graph({z.shape()}, {LinalgRoutine::kGetrf}), {z}))
    CHECK(values_of<std::int32_t>(out[1])[0] == 2);
  // Singular: the second pivot is zero, info = 2 and no crash.
  const Literal s = Literal::from_span<float>(std::vector<float>{1, 2, 2, 4}, {2, 2}).value();
  for (const auto& out : run_both(linalg_graph({s.shape()}, {LinalgRoutine::kGetrf}), {s}))
    CHECK(values_of<std::int32_t>(out[2]) == std::vector<std::int32_t>{2});
}

TEST_CASE("linalg: potrf factors in the uplo triangle, leaves the other, reports info") {
  std::mt19937_64 rng(2);
  for (DType t : kTypes)
    for (std::int64_t uplo : {std::int64_t{'L'}, std::int64_t{'U'}}) {
      CAPTURE(dtype_name(t));
      CAPTURE(uplo);
      const Literal x = literal_of(t, {2, 3, 3}, hpd_values(rng, t, 2, 3));
      LinalgAttrs a{LinalgRoutine::kPotrf};
      a.uplo = uplo;
      for (const auto& out : run_both(linalg_graph({x.shape()}, a), {x})) {
        for (std::int64_t b = 0; b < 2; ++b) {
          const M in = matrix(x, b), f = matrix(out[0], b);
          M tri(3, 3);
          for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 3; ++j) {
              const bool in_factor = uplo == 'L' ? i >= j : i <= j;
              if (in_factor) tri(i, j) = f(i, j);
              else CHECK(f(i, j) == in(i, j));  // untouched
            }
          const M product = uplo == 'L' ? mul(tri, adj(tri)) : mul(adj(tri), tri);
          CHECK(max_diff(product, in) < 10 * tolerance(t));
          for (std::int64_t i = 0; i < 3; ++i) CHECK(f(i, i).real() > 0);
          CHECK(elements(out[1])[static_cast<std::size_t>(b)] == Z(0));
        }
      }
    }
  // Not positive definite at the second column: info = 2 on both backends, never a crash.
  const Literal bad = Literal::from_span<double>(std::vector<double>{1, 2, 2, 1}, {2, 2}).value();
  for (const auto& out : run_both(linalg_graph({bad.shape()}, {LinalgRoutine::kPotrf}), {bad}))
    CHECK(values_of<std::int32_t>(out[1]) == std::vector<std::int32_t>{2});
  const Literal nan = Literal::from_span<float>(std::vector<float>{NAN, 0, 0, 1}, {2, 2}).value();
  for (const auto& out : run_both(linalg_graph({nan.shape()}, {LinalgRoutine::kPotrf}), {nan}))
    CHECK(values_of<std::int32_t>(out[1]) == std::vector<std::int32_t>{1});
}

TEST_CASE("linalg: geqrf gives LAPACK's reflectors and tau, orgqr (ungqr) their Q") {
  std::mt19937_64 rng(3);
  for (DType t : kTypes)
    for (auto dims : {std::vector<std::int64_t>{4, 3}, {2, 3, 3}, {2, 4}}) {
      CAPTURE(dtype_name(t));
      const std::size_t count = static_cast<std::size_t>(std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>()));
      const Literal x = literal_of(t, dims, random_values(rng, t, count));
      const auto both = run_both(linalg_graph({x.shape()}, {LinalgRoutine::kGeqrf}), {x});
      for (const auto& out : both)
        for (std::int64_t b = 0; b < batch_of(x); ++b) {
          const M a = matrix(x, b), f = matrix(out[0], b);
          // Q from LAPACK's formula H = I - tau v v^H (not its adjoint): Q R = A.
          const M q = householder_q(f, vec(out[1], b));
          CHECK(max_diff(mul(q, upper(f, a.r)), a) < 10 * tolerance(t));
          CHECK(max_diff(mul(adj(q), q), eye(a.r, a.r)) < 10 * tolerance(t));
        }
      CHECK(max_diff(matrix(both[0][0], 0), matrix(both[1][0], 0)) < 10 * tolerance(t));
      if (dims.back() > dims[dims.size() - 2]) continue;  // orgqr needs m >= n
      GraphBuilder gb("qr");
      const Value p = gb.parameter(x.shape());
      const std::vector<Value> qr = gb.linalg({p}, {LinalgRoutine::kGeqrf});
      const std::vector<Value> q = gb.linalg({qr[0], qr[1]}, {LinalgRoutine::kOrgqr});
      const Graph g = build_ok(gb, {q[0], qr[0]});
      for (const auto& out : run_both(g, {x}))
        for (std::int64_t b = 0; b < batch_of(x); ++b) {
          const M a = matrix(x, b), qm = matrix(out[0], b);
          CHECK(max_diff(mul(qm, upper(matrix(out[1], b), a.c)), a) < 10 * tolerance(t));
          CHECK(max_diff(mul(adj(qm), qm), eye(a.c, a.c)) < 10 * tolerance(t));
        }
    }
  // By hand: [[3], [4]] -> beta = -5, tau = (beta - alpha) / beta = 1.6, v = (1, 4 / (3 + 5)).
  const Literal x = Literal::from_span<double>(std::vector<double>{3, 4}, {2, 1}).value();
  for (const auto& out : run_both(linalg_graph({x.shape()}, {LinalgRoutine::kGeqrf}), {x})) {
    CHECK(values_of<double>(out[0])[0] == doctest::Approx(-5));
    CHECK(values_of<double>(out[0])[1] == doctest::Approx(0.5));
    CHECK(values_of<double>(out[1])[0] == doctest::Approx(1.6));
  }
}

TEST_CASE("linalg: syevd (heevd) gives ascending eigenvalues and orthonormal eigenvectors") {
  std::mt19937_64 rng(4);
  for (DType t : kTypes)
    for (std::int64_t uplo : {std::int64_t{'L'}, std::int64_t{'U'}}) {
      CAPTURE(dtype_name(t));
      const std::vector<Z> h = hpd_values(rng, t, 2, 4);
      // Only the uplo triangle is read: spoil the other one.
      std::vector<Z> spoiled = h;
      for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t i = 0; i < 4; ++i)
          for (std::int64_t j = 0; j < 4; ++j)
            if (uplo == 'L' ? j > i : j < i) spoiled[static_cast<std::size_t>(b * 16 + i * 4 + j)] = 99;
      const Literal x = literal_of(t, {2, 4, 4}, spoiled);
      const Literal xh = literal_of(t, {2, 4, 4}, h);
      LinalgAttrs a{LinalgRoutine::kSyevd};
      a.uplo = uplo;
      a.mode = 'V';
      const auto both = run_both(linalg_graph({x.shape()}, a), {x});
      for (const auto& out : both) {
        CHECK(out[1].dtype() == (is_complex(t) ? (t == DType::kC64 ? DType::kF32 : DType::kF64) : t));
        for (std::int64_t b = 0; b < 2; ++b) {
          const M v = matrix(out[0], b);
          const std::vector<Z> w = vec(out[1], b);
          M vw = v;
          for (std::int64_t j = 0; j < 4; ++j)
            for (std::int64_t i = 0; i < 4; ++i) vw(i, j) *= w[static_cast<std::size_t>(j)];
          CHECK(max_diff(mul(matrix(xh, b), v), vw) < 100 * tolerance(t));
          CHECK(max_diff(mul(adj(v), v), eye(4, 4)) < 10 * tolerance(t));
          for (std::size_t j = 1; j < w.size(); ++j) CHECK(w[j - 1].real() <= w[j].real());
          CHECK(elements(out[2])[static_cast<std::size_t>(b)] == Z(0));
        }
      }
      for (std::int64_t b = 0; b < 2; ++b) {
        const std::vector<Z> w0 = vec(both[0][1], b), w1 = vec(both[1][1], b);
        for (std::size_t j = 0; j < w0.size(); ++j) CHECK(std::abs(w0[j] - w1[j]) < 100 * tolerance(t));
      }
    }
  // By hand: [[2, 1], [1, 2]] has eigenvalues 1 and 3.
  const Literal x = Literal::from_span<double>(std::vector<double>{2, 1, 1, 2}, {2, 2}).value();
  LinalgAttrs a{LinalgRoutine::kSyevd};
  a.mode = 'V';
  for (const auto& out : run_both(linalg_graph({x.shape()}, a), {x})) {
    CHECK(values_of<double>(out[1])[0] == doctest::Approx(1));
    CHECK(values_of<double>(out[1])[1] == doctest::Approx(3));
  }
}

TEST_CASE("linalg: gesdd and gesvd give descending singular values and unitary u, vt") {
  std::mt19937_64 rng(5);
  for (LinalgRoutine r : {LinalgRoutine::kGesdd, LinalgRoutine::kGesvd})
    for (DType t : kTypes)
      for (std::int64_t mode : {std::int64_t{'A'}, std::int64_t{'S'}, std::int64_t{'N'}})
        for (auto dims : {std::vector<std::int64_t>{4, 3}, {2, 2, 3}, {3, 3}}) {
          CAPTURE(dtype_name(t));
          CAPTURE(mode);
          const std::size_t count = static_cast<std::size_t>(std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>()));
          const Literal x = literal_of(t, dims, random_values(rng, t, count));
          LinalgAttrs a{r};
          a.mode = mode;
          const auto both = run_both(linalg_graph({x.shape()}, a), {x});
          CAPTURE(linalg_routine_name(r));
          CAPTURE(dims.size());
          CAPTURE(dims.back());
          int backend = 0;
          CAPTURE(backend);
          for (const auto& out : both) {
            ++backend;
            REQUIRE(out.size() == 5);
            for (std::int64_t b = 0; b < batch_of(x); ++b) {
              const M am = matrix(x, b);
              const std::vector<Z> s = vec(out[1], b);
              for (std::size_t j = 1; j < s.size(); ++j) CHECK(s[j - 1].real() >= s[j].real());
              CHECK(elements(out[4])[static_cast<std::size_t>(b)] == Z(0));
              if (mode == 'N') continue;
              const M u = matrix(out[2], b), vt = matrix(out[3], b);
              M us(u.r, vt.r);
              for (std::int64_t i = 0; i < u.r; ++i)
                for (std::int64_t j = 0; j < std::min(vt.r, u.c); ++j)
                  us(i, j) = j < static_cast<std::int64_t>(s.size()) ? u(i, j) * s[static_cast<std::size_t>(j)] : Z(0);
              CAPTURE(b);
              CHECK(max_diff(mul(us, vt), am) < 10 * tolerance(t));
              CHECK(max_diff(mul(adj(u), u), eye(u.c, u.c)) < 10 * tolerance(t));
              CHECK(max_diff(mul(vt, adj(vt)), eye(vt.r, vt.r)) < 10 * tolerance(t));
            }
          }
          for (std::int64_t b = 0; b < batch_of(x); ++b) {
            const std::vector<Z> s0 = vec(both[0][1], b), s1 = vec(both[1][1], b);
            for (std::size_t j = 0; j < s0.size(); ++j) CHECK(std::abs(s0[j] - s1[j]) < 10 * tolerance(t));
          }
        }
  // A NaN input: info = -4 (LAPACK's check of the input norm) and NaN singular values.
  const Literal x = Literal::from_span<float>(std::vector<float>{NAN, 0, 0, 1}, {2, 2}).value();
  LinalgAttrs a{LinalgRoutine::kGesdd};
  a.mode = 'A';
  for (const auto& out : run_both(linalg_graph({x.shape()}, a), {x})) {
    CHECK(values_of<std::int32_t>(out[4]) == std::vector<std::int32_t>{-4});
    CHECK(std::isnan(values_of<float>(out[1])[0]));
  }
}

TEST_CASE("linalg: trsm solves op(a) x = b and x op(a) = b") {
  std::mt19937_64 rng(6);
  for (DType t : kTypes)
    for (char side : {'L', 'R'})
      for (char trans : {'N', 'T', 'C'}) {
        CAPTURE(dtype_name(t));
        std::vector<Z> av = random_values(rng, t, 9);
        for (std::int64_t i = 0; i < 3; ++i) av[static_cast<std::size_t>(i * 4)] += 3.0;
        const Literal a = literal_of(t, {3, 3}, av);
        const std::vector<std::int64_t> bdims = side == 'L' ? std::vector<std::int64_t>{3, 2} : std::vector<std::int64_t>{2, 3};
        const Literal b = literal_of(t, bdims, random_values(rng, t, 6));
        LinalgAttrs at{LinalgRoutine::kTrsm};
        at.side = side;
        at.trans = trans;
        at.uplo = 'L';
        for (const auto& out : run_both(linalg_graph({a.shape(), b.shape()}, at), {a, b})) {
          M l = matrix(a, 0);
          for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = i + 1; j < 3; ++j) l(i, j) = 0;
          M op = l;
          if (trans != 'N') {
            op = adj(l);
            if (trans == 'T')
              for (Z& z : op.v) z = std::conj(z);
          }
          const M xm = matrix(out[0], 0);
          CHECK(max_diff(side == 'L' ? mul(op, xm) : mul(xm, op), matrix(b, 0)) < 10 * tolerance(t));
        }
      }
}

TEST_CASE("linalg: gehrd gives LAPACK's Hessenberg form and reflectors") {
  std::mt19937_64 rng(11);
  for (DType t : kTypes) {
    CAPTURE(dtype_name(t));
    const Literal x = literal_of(t, {2, 4, 4}, random_values(rng, t, 32));
    LinalgAttrs a{LinalgRoutine::kGehrd};
    a.low = 1;
    a.high = 4;
    const auto both = run_both(linalg_graph({x.shape()}, a), {x});
    for (const auto& out : both)
      for (std::int64_t b = 0; b < 2; ++b) {
        const M f = matrix(out[0], b);
        const std::vector<Z> tau = vec(out[1], b);
        M h(4, 4), q = eye(4, 4);
        for (std::int64_t i = 0; i < 4; ++i)
          for (std::int64_t j = std::max<std::int64_t>(i - 1, 0); j < 4; ++j) h(i, j) = f(i, j);
        for (std::size_t i = 0; i < tau.size(); ++i) {  // H(i) = I - tau v v^H, v(i + 1) = 1
          const auto ii = static_cast<std::int64_t>(i);
          M v(4, 1);
          v(ii + 1, 0) = 1;
          for (std::int64_t r = ii + 2; r < 4; ++r) v(r, 0) = f(r, ii);
          M hi = eye(4, 4);
          const M vvh = mul(v, adj(v));
          for (std::size_t e = 0; e < hi.v.size(); ++e) hi.v[e] -= tau[i] * vvh.v[e];
          q = mul(q, hi);
        }
        CHECK(max_diff(mul(mul(q, h), adj(q)), matrix(x, b)) < 10 * tolerance(t));
        CHECK(elements(out[2])[static_cast<std::size_t>(b)] == Z(0));
      }
    // The same conventions from Eigen's reduction and the textbook one.
    for (std::size_t r = 0; r < 2; ++r)
      CHECK(max_diff(matrix(both[0][r], 0), matrix(both[1][r], 0)) < 100 * tolerance(t));
  }
}

TEST_CASE("linalg: sytrd (hetrd) gives LAPACK's tridiagonal form from either triangle") {
  std::mt19937_64 rng(12);
  for (DType t : kTypes)
    for (std::int64_t uplo : {std::int64_t{'L'}, std::int64_t{'U'}}) {
      CAPTURE(dtype_name(t));
      CAPTURE(uplo);
      const std::int64_t n = 4;
      const std::vector<Z> h = hpd_values(rng, t, 1, n);
      const Literal x = literal_of(t, {n, n}, h);
      LinalgAttrs a{LinalgRoutine::kSytrd};
      a.uplo = uplo;
      const auto both = run_both(linalg_graph({x.shape()}, a), {x});
      for (const auto& out : both) {
        REQUIRE(out.size() == 5);
        const M f = matrix(out[0], 0);
        const std::vector<Z> d = vec(out[1], 0), e = vec(out[2], 0), tau = vec(out[3], 0);
        M tm(n, n), q = eye(n, n);
        for (std::int64_t i = 0; i < n; ++i) tm(i, i) = d[static_cast<std::size_t>(i)];
        for (std::int64_t i = 0; i + 1 < n; ++i)
          tm(i + 1, i) = tm(i, i + 1) = e[static_cast<std::size_t>(i)];
        // Lower: Q = H(1) ... H(n-1), v(i + 1) = 1 with the tail below. Upper:
        // Q = H(n-1) ... H(1), v(i) = 1 with the head above, in column i + 1.
        for (std::int64_t step = 0; step + 1 < n; ++step) {
          const std::int64_t i = uplo == 'L' ? step : n - 2 - step;
          M v(n, 1);
          if (uplo == 'L') {
            v(i + 1, 0) = 1;
            for (std::int64_t r = i + 2; r < n; ++r) v(r, 0) = f(r, i);
          } else {
            v(i, 0) = 1;
            for (std::int64_t r = 0; r < i; ++r) v(r, 0) = f(r, i + 1);
          }
          M hi = eye(n, n);
          const M vvh = mul(v, adj(v));
          for (std::size_t k = 0; k < hi.v.size(); ++k) hi.v[k] -= tau[static_cast<std::size_t>(i)] * vvh.v[k];
          q = mul(q, hi);
        }
        CHECK(max_diff(mul(mul(q, tm), adj(q)), matrix(x, 0)) < 100 * tolerance(t));
      }
      for (std::size_t r = 0; r < 4; ++r) {
        const std::vector<Z> e0 = elements(both[0][r]), e1 = elements(both[1][r]);
        for (std::size_t k = 0; k < e0.size(); ++k) CHECK(std::abs(e0[k] - e1[k]) < 100 * tolerance(t));
      }
    }
}

TEST_CASE("linalg: gtsv solves tridiagonal systems with LAPACK's pivoting, and reports info") {
  std::mt19937_64 rng(13);
  for (DType t : kTypes) {
    CAPTURE(dtype_name(t));
    const std::int64_t m = 5, nrhs = 2;
    const Literal dl = literal_of(t, {2, m}, random_values(rng, t, 2 * m));
    const Literal d = literal_of(t, {2, m}, random_values(rng, t, 2 * m));
    const Literal du = literal_of(t, {2, m}, random_values(rng, t, 2 * m));
    const Literal bb = literal_of(t, {2, m, nrhs}, random_values(rng, t, 2 * m * nrhs));
    const Graph g = linalg_graph({dl.shape(), d.shape(), du.shape(), bb.shape()}, {LinalgRoutine::kGtsv});
    const auto both = run_both(g, {dl, d, du, bb});
    for (const auto& out : both)
      for (std::int64_t b = 0; b < 2; ++b) {
        const std::vector<Z> l = vec(dl, b), dd = vec(d, b), u = vec(du, b);
        M a(m, m);
        for (std::int64_t i = 0; i < m; ++i) {
          a(i, i) = dd[static_cast<std::size_t>(i)];
          if (i > 0) a(i, i - 1) = l[static_cast<std::size_t>(i)];
          if (i + 1 < m) a(i, i + 1) = u[static_cast<std::size_t>(i)];
        }
        CHECK(elements(out[4])[static_cast<std::size_t>(b)] == Z(0));
        CHECK(max_diff(mul(a, matrix(out[3], b)), matrix(bb, b)) < 1000 * tolerance(t));
      }
    // The same algorithm, pivots and all: every result agrees.
    for (std::size_t r = 0; r < 4; ++r) {
      const std::vector<Z> e0 = elements(both[0][r]), e1 = elements(both[1][r]);
      for (std::size_t k = 0; k < e0.size(); ++k) CHECK(std::abs(e0[k] - e1[k]) < 1000 * tolerance(t) * (1 + std::abs(e0[k])));
    }
  }
  // A zero column: info = 1 on both backends.
  const Literal z = Literal::from_span<double>(std::vector<double>{0, 0, 0}, {3}).value();
  const Literal one = Literal::from_span<double>(std::vector<double>{1, 1, 1}, {3}).value();
  const Literal rhs = Literal::from_span<double>(std::vector<double>{1, 2, 3}, {3, 1}).value();
  const Graph g = linalg_graph({z.shape(), z.shape(), one.shape(), rhs.shape()}, {LinalgRoutine::kGtsv});
  for (const auto& out : run_both(g, {z, z, one, rhs}))
    CHECK(values_of<std::int32_t>(out[4]) == std::vector<std::int32_t>{1});
}

TEST_CASE("linalg: ormqr (unmqr) applies Q, Q^H from either side") {
  std::mt19937_64 rng(14);
  for (DType t : kTypes) {
    CAPTURE(dtype_name(t));
    const Literal x = literal_of(t, {4, 3}, random_values(rng, t, 12));
    const auto qr = evaluate_ok(linalg_graph({x.shape()}, {LinalgRoutine::kGeqrf}), {x});
    const M q = householder_q(matrix(qr[0], 0), vec(qr[1], 0));
    for (bool left : {true, false})
      for (bool transpose : {false, true}) {
        const Literal c = literal_of(t, left ? std::vector<std::int64_t>{4, 2} : std::vector<std::int64_t>{2, 4},
                                     random_values(rng, t, 8));
        LinalgAttrs a{LinalgRoutine::kOrmqr};
        a.left = left;
        a.transpose = transpose;
        const M op = transpose ? adj(q) : q;
        const M want = left ? mul(op, matrix(c, 0)) : mul(matrix(c, 0), op);
        for (const auto& out : run_both(linalg_graph({qr[0].shape(), qr[1].shape(), c.shape()}, a), {qr[0], qr[1], c}))
          CHECK(max_diff(matrix(out[0], 0), want) < 10 * tolerance(t));
      }
  }
}

namespace linalg_test {

/// Eigenvalues sorted by real, then imaginary part, for comparing two backends' lists.
std::vector<Z> sorted(std::vector<Z> w) {
  std::sort(w.begin(), w.end(), [](Z a, Z b) {
    return std::abs(a.real() - b.real()) > 1e-3 ? a.real() < b.real() : a.imag() < b.imag();
  });
  return w;
}

/// Norm 1 and the largest element real and positive: LAPACK's normalization of eigenvectors.
void check_normalized(const M& v, std::int64_t c, double tol) {
  double norm = 0;
  std::int64_t big = 0;
  for (std::int64_t i = 0; i < v.r; ++i) {
    norm += std::norm(v(i, c));
    if (std::abs(v(i, c)) > std::abs(v(big, c)) + tol) big = i;
  }
  CHECK(std::sqrt(norm) == doctest::Approx(1).epsilon(tol));
  CHECK(std::abs(v(big, c).imag()) < tol);
  CHECK(v(big, c).real() > 0);
}

}  // namespace linalg_test

TEST_CASE("linalg: geev gives eigenvalues and normalized left and right eigenvectors") {
  std::mt19937_64 rng(16);
  for (DType t : kTypes) {
    CAPTURE(dtype_name(t));
    const std::int64_t n = 4;
    const Literal x = literal_of(t, {2, n, n}, random_values(rng, t, 2 * n * n));
    LinalgAttrs a{LinalgRoutine::kGeev};
    a.compute_left = 'V';
    a.compute_right = 'V';
    const bool real = !is_complex(t);
    const auto both = run_both(linalg_graph({x.shape()}, a), {x});
    std::vector<std::vector<Z>> lists;
    for (const auto& out : both) {
      REQUIRE(out.size() == (real ? 5u : 4u));
      const std::size_t vl_at = real ? 2 : 1;
      for (std::int64_t b = 0; b < 2; ++b) {
        std::vector<Z> w = vec(out[0], b);
        if (real) {
          const std::vector<Z> wi = vec(out[1], b);
          for (std::size_t j = 0; j < w.size(); ++j) w[j] += Z(0, wi[j].real());
          for (std::size_t j = 0; j < w.size(); ++j)
            if (wi[j].real() > 0) {  // a conjugate pair, positive imaginary part first
              REQUIRE(j + 1 < w.size());
              CHECK(wi[j + 1].real() == doctest::Approx(-wi[j].real()));
              ++j;
            } else {
              CHECK(wi[j].real() <= 0);
            }
        }
        if (b == 0) lists.push_back(sorted(w));
        const M am = matrix(x, b), vl = matrix(out[vl_at], b), vr = matrix(out[vl_at + 1], b);
        M rw = vr, lw = vl;
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < n; ++i) {
            rw(i, j) *= w[static_cast<std::size_t>(j)];
            lw(i, j) *= std::conj(w[static_cast<std::size_t>(j)]);
          }
        CHECK(max_diff(mul(am, vr), rw) < 100 * tolerance(t));
        CHECK(max_diff(mul(adj(am), vl), lw) < 100 * tolerance(t));  // vl^H a = w vl^H
        for (std::int64_t j = 0; j < n; ++j) {
          check_normalized(vr, j, 100 * tolerance(t));
          check_normalized(vl, j, 100 * tolerance(t));
        }
        CHECK(elements(out[vl_at + 2])[static_cast<std::size_t>(b)] == Z(0));
      }
    }
    for (std::size_t j = 0; j < lists[0].size(); ++j)
      CHECK(std::abs(lists[0][j] - lists[1][j]) < 100 * tolerance(t));
  }
  // By hand: [[0, -2], [1, 0]] has eigenvalues +-i sqrt(2); for +i sqrt(2) the eigenvector
  // (i sqrt(2), 1), normalized: (sqrt(2/3), -i / sqrt(3)), its conjugate for the other.
  const Literal x = Literal::from_span<double>(std::vector<double>{0, -2, 1, 0}, {2, 2}).value();
  LinalgAttrs a{LinalgRoutine::kGeev};
  a.compute_right = 'V';
  for (const auto& out : run_both(linalg_graph({x.shape()}, a), {x})) {
    CHECK(values_of<double>(out[0])[0] == doctest::Approx(0).epsilon(1e-12));
    CHECK(values_of<double>(out[1])[0] == doctest::Approx(std::sqrt(2.0)));
    CHECK(values_of<double>(out[1])[1] == doctest::Approx(-std::sqrt(2.0)));
    const std::vector<c128> vr = values_of<c128>(out[3]);
    CHECK(vr[0].real() == doctest::Approx(std::sqrt(2.0 / 3)));
    CHECK(vr[0].imag() == doctest::Approx(0).epsilon(1e-12));
    CHECK(vr[2].imag() == doctest::Approx(-1 / std::sqrt(3.0)));
    CHECK(vr[1] == std::conj(vr[0]));
    CHECK(vr[3] == std::conj(vr[2]));
    CHECK(values_of<c128>(out[2]) == std::vector<c128>(4, c128(0)));  // compute_left = 'N'
  }
}

TEST_CASE("linalg: gees gives a complex Schur form and unitary Schur vectors") {
  std::mt19937_64 rng(17);
  for (DType t : {DType::kC64, DType::kC128}) {
    CAPTURE(dtype_name(t));
    const std::int64_t n = 4;
    const Literal x = literal_of(t, {2, n, n}, random_values(rng, t, 2 * n * n));
    LinalgAttrs a{LinalgRoutine::kGees};
    a.mode = 'V';
    const auto both = run_both(linalg_graph({x.shape()}, a), {x});
    std::vector<std::vector<Z>> lists;
    for (const auto& out : both) {
      REQUIRE(out.size() == 5);
      for (std::int64_t b = 0; b < 2; ++b) {
        const M tm = matrix(out[0], b), z = matrix(out[1], b);
        for (std::int64_t i = 0; i < n; ++i)
          for (std::int64_t j = 0; j < i; ++j) CHECK(std::abs(tm(i, j)) == 0);
        CHECK(max_diff(mul(mul(z, tm), adj(z)), matrix(x, b)) < 100 * tolerance(t));
        CHECK(max_diff(mul(adj(z), z), eye(n, n)) < 10 * tolerance(t));
        const std::vector<Z> w = vec(out[2], b);
        for (std::int64_t i = 0; i < n; ++i) CHECK(w[static_cast<std::size_t>(i)] == tm(i, i));
        CHECK(elements(out[3])[static_cast<std::size_t>(b)] == Z(0));
        CHECK(elements(out[4])[static_cast<std::size_t>(b)] == Z(0));
        if (b == 0) lists.push_back(sorted(w));
      }
    }
    for (std::size_t j = 0; j < lists[0].size(); ++j)
      CHECK(std::abs(lists[0][j] - lists[1][j]) < 100 * tolerance(t));
  }
}

TEST_CASE("linalg: real gees gives LAPACK's standardized real Schur form, wr and wi") {
  std::mt19937_64 rng(23);
  LinalgAttrs a{LinalgRoutine::kGees};
  a.mode = 'V';
  for (DType t : {DType::kF32, DType::kF64})
    for (std::int64_t n : {1, 5, 6}) {
      CAPTURE(dtype_name(t));
      CAPTURE(n);
      const Literal x = literal_of(t, {3, n, n}, random_values(rng, t, static_cast<std::size_t>(3 * n * n)));
      const auto both = run_both(linalg_graph({x.shape()}, a), {x});
      std::vector<std::vector<Z>> lists;
      std::int64_t blocks = 0;
      for (const auto& out : both) {
        REQUIRE(out.size() == 6);
        for (std::int64_t b = 0; b < 3; ++b) {
          const M tm = matrix(out[0], b), z = matrix(out[1], b);
          const std::vector<Z> wr = vec(out[2], b), wi = vec(out[3], b);
          for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j + 1 < i; ++j) CHECK(tm(i, j) == Z(0));
          for (std::int64_t i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(i);
            const bool block = i + 1 < n && tm(i + 1, i) != Z(0);
            if (!block) {  // a real eigenvalue
              CHECK(wr[k] == tm(i, i));
              CHECK(wi[k] == Z(0));
              continue;
            }
            ++blocks;
            CHECK((i + 2 == n || tm(i + 2, i + 1) == Z(0)));  // blocks do not touch
            CHECK(tm(i, i) == tm(i + 1, i + 1));               // standard form
            CHECK(tm(i, i + 1).real() * tm(i + 1, i).real() < 0);
            CHECK(wr[k] == tm(i, i));
            CHECK(wr[k + 1] == tm(i, i));
            const double im = std::sqrt(-tm(i, i + 1).real() * tm(i + 1, i).real());
            CHECK(std::abs(wi[k].real() - im) < 10 * tolerance(t) * (1 + im));
            CHECK(wi[k + 1] == -wi[k]);
            CHECK(wi[k].real() > 0);
            ++i;
          }
          CHECK(max_diff(mul(mul(z, tm), adj(z)), matrix(x, b)) < 100 * tolerance(t));
          CHECK(max_diff(mul(adj(z), z), eye(n, n)) < 10 * tolerance(t));
          CHECK(elements(out[4])[static_cast<std::size_t>(b)] == Z(0));
          CHECK(elements(out[5])[static_cast<std::size_t>(b)] == Z(0));
          std::vector<Z> w;
          for (std::size_t k = 0; k < wr.size(); ++k) w.emplace_back(wr[k].real(), wi[k].real());
          lists.push_back(sorted(w));
        }
      }
      if (n > 1) CHECK(blocks > 0);  // random matrices of these sizes have complex pairs here
      for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t j = 0; j < lists[b].size(); ++j)
          CHECK(std::abs(lists[b][j] - lists[b + 3][j]) < 100 * tolerance(t));
    }
}

TEST_CASE("linalg: real gees by hand: a complex pair's standard block, a real pair split as LAPACK does") {
  LinalgAttrs a{LinalgRoutine::kGees};
  a.mode = 'V';
  // [4 -5; 2 -2]: eigenvalues 1 +- i. The rotation by theta = atan(2) / 2 makes the diagonal
  // equal (tan 2 theta = -(a - d) / (b + c) = 2); b - c = -7 and b c = -1 are kept.
  const Literal complex_pair = Literal::from_span<double>(std::vector<double>{4, -5, 2, -2}, {2, 2}).value();
  const double theta = std::atan(2.0) / 2, r45 = std::sqrt(45.0);
  const M t_expected = from_rows({{1, -(7 + r45) / 2}, {(7 - r45) / 2, 1}});
  const M z_expected = from_rows({{std::cos(theta), -std::sin(theta)}, {std::sin(theta), std::cos(theta)}});
  // [1 2; 3 4]: eigenvalues (5 -+ sqrt(33)) / 2; LAPACK puts first the one on the side of
  // sign((a - d) / 2) < 0, with the eigenvector (lambda - d, c) / |.| as z's first column.
  const Literal real_pair = Literal::from_span<double>(std::vector<double>{1, 2, 3, 4}, {2, 2}).value();
  const double l1 = (5 - std::sqrt(33.0)) / 2, l2 = (5 + std::sqrt(33.0)) / 2;
  const double len = std::hypot(l1 - 4, 3.0);
  const M t_real = from_rows({{l1, -1}, {0, l2}});
  const M z_real = from_rows({{(l1 - 4) / len, -3 / len}, {3 / len, (l1 - 4) / len}});
  for (const auto& out : run_both(linalg_graph({complex_pair.shape()}, a), {complex_pair})) {
    CHECK(max_diff(matrix(out[0], 0), t_expected) < 1e-12);
    CHECK(max_diff(matrix(out[1], 0), z_expected) < 1e-12);
    CHECK(std::abs(values_of<double>(out[2])[0] - 1) < 1e-12);
    CHECK(values_of<double>(out[2])[1] == values_of<double>(out[2])[0]);
    CHECK(std::abs(values_of<double>(out[3])[0] - 1) < 1e-12);
    CHECK(values_of<double>(out[3])[1] == -values_of<double>(out[3])[0]);
  }
  for (const auto& out : run_both(linalg_graph({real_pair.shape()}, a), {real_pair})) {
    CHECK(max_diff(matrix(out[0], 0), t_real) < 1e-12);
    CHECK(max_diff(matrix(out[1], 0), z_real) < 1e-12);
    CHECK(values_of<double>(out[3]) == std::vector<double>{0, 0});
  }
  // Mode N leaves the Schur vectors zero; a NaN input gives info 1 and NaN results.
  a.mode = 'N';
  for (const auto& out : run_both(linalg_graph({complex_pair.shape()}, a), {complex_pair})) {
    CHECK(max_diff(matrix(out[0], 0), t_expected) < 1e-12);
    CHECK(values_of<double>(out[1]) == std::vector<double>(4, 0.0));
  }
  const Literal bad = Literal::from_span<float>(std::vector<float>{1, NAN, 0, 1}, {2, 2}).value();
  for (const auto& out : run_both(linalg_graph({bad.shape()}, a), {bad})) {
    CHECK(std::isnan(values_of<float>(out[0])[0]));
    CHECK(std::isnan(values_of<float>(out[2])[0]));
    CHECK(std::isnan(values_of<float>(out[3])[0]));
    CHECK(values_of<std::int32_t>(out[5]) == std::vector<std::int32_t>{1});
  }
}

TEST_CASE("linalg: geqp3 pivots columns as LAPACK does, fixed columns first") {
  std::mt19937_64 rng(18);
  for (DType t : kTypes)
    for (auto fixed : {std::vector<std::int32_t>{0, 0, 0, 0}, {0, 0, 1, 0}}) {
      CAPTURE(dtype_name(t));
      const Literal x = literal_of(t, {2, 5, 4}, random_values(rng, t, 40));
      std::vector<std::int32_t> jp;
      for (int b = 0; b < 2; ++b) jp.insert(jp.end(), fixed.begin(), fixed.end());
      const Literal jpvt = Literal::from_span<std::int32_t>(jp, {2, 4}).value();
      const auto both = run_both(linalg_graph({x.shape(), jpvt.shape()}, {LinalgRoutine::kGeqp3}), {x, jpvt});
      for (const auto& out : both)
        for (std::int64_t b = 0; b < 2; ++b) {
          const M a = matrix(x, b), f = matrix(out[0], b);
          const std::vector<std::int32_t> p = values_of<std::int32_t>(out[1]);
          M ap(5, 4);
          for (std::int64_t j = 0; j < 4; ++j) {
            const std::int32_t from = p[static_cast<std::size_t>(b * 4 + j)] - 1;
            REQUIRE(from >= 0);
            REQUIRE(from < 4);
            for (std::int64_t i = 0; i < 5; ++i) ap(i, j) = a(i, from);
          }
          if (fixed[2] != 0) CHECK(p[static_cast<std::size_t>(b * 4)] == 3);
          const M q = householder_q(f, vec(out[2], b));
          CHECK(max_diff(mul(q, upper(f, 5)), ap) < 10 * tolerance(t));
          for (std::int64_t i = (fixed[2] != 0 ? 2 : 1); i < 4; ++i)
            CHECK(std::abs(f(i, i)) <= std::abs(f(i - 1, i - 1)) * (1 + 10 * tolerance(t)));
        }
      CHECK(values_of<std::int32_t>(both[0][1]) == values_of<std::int32_t>(both[1][1]));
    }
}

TEST_CASE("linalg: bad operands and flags are refused with the routine named") {
  GraphBuilder b("bad");
  const Value x = b.parameter(Shape(DType::kS32, {2, 2}));
  b.linalg({x}, {LinalgRoutine::kGetrf});
  check_error(b.status(), StatusCode::kInvalidArgument, "getrf");
  GraphBuilder b2("bad");
  const Value y = b2.parameter(Shape(DType::kF32, {2, 3}));
  b2.linalg({y}, {LinalgRoutine::kPotrf});
  check_error(b2.status(), StatusCode::kInvalidArgument, "not square");
  GraphBuilder b3("bad");
  LinalgAttrs a{LinalgRoutine::kPotrf};
  a.uplo = 'X';
  b3.linalg({b3.parameter(Shape(DType::kF32, {2, 2}))}, a);
  check_error(b3.status(), StatusCode::kInvalidArgument, "uplo");
}

// ---- StableHLO programs as jax exports them ----------------------------------------------

namespace linalg_test {

/// jnp.linalg.cholesky on CPU: potrf, then NaN where info != 0, then the lower triangle.
constexpr std::string_view kCholesky = R"(
module @jit_cholesky attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x3xf32>) -> (tensor<2x3x3xf32> {jax.result_info = ""}) {
    %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>]} : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2xi32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %2 = stablehlo.compare  EQ, %0#1, %1,  SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<2xi1>) -> tensor<2x1x1xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3x3xf32>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x1x1xi1>) -> tensor<2x3x3xi1>
    %6 = stablehlo.select %5, %0#0, %4 : tensor<2x3x3xi1>, tensor<2x3x3xf32>
    %7 = stablehlo.iota dim = 0 : tensor<3x3xi32>
    %8 = stablehlo.iota dim = 1 : tensor<3x3xi32>
    %9 = stablehlo.compare  GE, %7, %8,  SIGNED : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [1, 2] : (tensor<3x3xi1>) -> tensor<2x3x3xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x3x3xf32>
    %12 = stablehlo.select %10, %6, %11 : tensor<2x3x3xi1>, tensor<2x3x3xf32>
    return %12 : tensor<2x3x3xf32>
  }
}
)";

/// jnp.linalg.qr (mode "reduced") on CPU: geqrf, then orgqr, then R's upper triangle.
constexpr std::string_view kQr = R"(
module @jit_qr {
  func.func public @main(%arg0: tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<3x3xf64>) {
    %0:2 = stablehlo.custom_call @lapack_dgeqrf_ffi(%arg0) {mhlo.backend_config = {}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>]} : (tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<3xf64>)
    %1 = stablehlo.custom_call @lapack_dorgqr_ffi(%0#0, %0#1) {mhlo.backend_config = {}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
    %2 = stablehlo.slice %0#0 [0:3, 0:3] : (tensor<4x3xf64>) -> tensor<3x3xf64>
    %3 = stablehlo.iota dim = 0 : tensor<3x3xi32>
    %4 = stablehlo.iota dim = 1 : tensor<3x3xi32>
    %5 = stablehlo.compare  LE, %3, %4,  SIGNED : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<3x3xf64>
    %6 = stablehlo.select %5, %2, %cst : tensor<3x3xi1>, tensor<3x3xf64>
    return %1, %6 : tensor<4x3xf64>, tensor<3x3xf64>
  }
}
)";

/// jnp.linalg.eigh on CPU: syevd (mode V, lower), NaN where info != 0.
constexpr std::string_view kEigh = R"(
module @jit_eigh {
  func.func public @main(%arg0: tensor<3x3xcomplex<f32>>) -> (tensor<3x3xcomplex<f32>>, tensor<3xf32>) {
    %0:3 = stablehlo.custom_call @lapack_cheevd_ffi(%arg0) {mhlo.backend_config = {mode = 86 : ui8, uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xcomplex<f32>>) -> (tensor<3x3xcomplex<f32>>, tensor<3xf32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare  EQ, %0#2, %c,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<3xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<i1>) -> tensor<3xi1>
    %3 = stablehlo.select %2, %0#1, %cst : tensor<3xi1>, tensor<3xf32>
    return %0#0, %3 : tensor<3x3xcomplex<f32>>, tensor<3xf32>
  }
}
)";

/// jnp.linalg.svd(full_matrices=False) on CPU: gesdd with mode S.
constexpr std::string_view kSvd = R"(
module @jit_svd {
  func.func public @main(%arg0: tensor<2x4xcomplex<f64>>) -> (tensor<2x2xcomplex<f64>>, tensor<2xf64>, tensor<2x4xcomplex<f64>>) {
    %0:5 = stablehlo.custom_call @lapack_zgesdd_ffi(%arg0) {mhlo.backend_config = {mode = 83 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<2x4xcomplex<f64>>) -> (tensor<2x4xcomplex<f64>>, tensor<2xf64>, tensor<2x2xcomplex<f64>>, tensor<2x4xcomplex<f64>>, tensor<i32>)
    return %0#2, %0#1, %0#3 : tensor<2x2xcomplex<f64>>, tensor<2xf64>, tensor<2x4xcomplex<f64>>
  }
}
)";

/// jnp.linalg.solve on CPU: getrf, then the row permutation from the pivots (done here with a
/// while loop as jax does), then two trsm.
constexpr std::string_view kSolveByTrsm = R"(
module @jit_solve {
  func.func public @main(%arg0: tensor<3x3xf32>, %arg1: tensor<3x1xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<3x1xf32>) {
    %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%arg0) {mhlo.backend_config = {}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<i32>)
    %1 = stablehlo.custom_call @lapack_strsm_ffi(%0#0, %arg1) {mhlo.backend_config = {diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
    %2 = stablehlo.custom_call @lapack_strsm_ffi(%0#0, %1) {mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
    return %0#0, %0#1, %2 : tensor<3x3xf32>, tensor<3xi32>, tensor<3x1xf32>
  }
}
)";

/// jax.lax.linalg.tridiagonal_solve on CPU: gtsv, NaN where info != 0.
constexpr std::string_view kTridiagonalSolve = R"(
module @jit_tridiagonal_solve {
  func.func public @main(%arg0: tensor<4xf64>, %arg1: tensor<4xf64>, %arg2: tensor<4xf64>, %arg3: tensor<4x1xf64>) -> (tensor<4x1xf64>) {
    %0:5 = stablehlo.custom_call @lapack_dgtsv_ffi(%arg0, %arg1, %arg2, %arg3) {mhlo.backend_config = {}, operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>, #stablehlo.output_operand_alias<output_tuple_indices = [1], operand_index = 1, operand_tuple_indices = []>, #stablehlo.output_operand_alias<output_tuple_indices = [2], operand_index = 2, operand_tuple_indices = []>, #stablehlo.output_operand_alias<output_tuple_indices = [3], operand_index = 3, operand_tuple_indices = []>], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4x1xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4x1xf64>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare  EQ, %0#4, %c,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %cst = stablehlo.constant dense<0x7FF8000000000000> : tensor<4x1xf64>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<i1>) -> tensor<4x1xi1>
    %3 = stablehlo.select %2, %0#3, %cst : tensor<4x1xi1>, tensor<4x1xf64>
    return %3 : tensor<4x1xf64>
  }
}
)";

/// jax.scipy.linalg.hessenberg and jax.lax.linalg.tridiagonal on CPU: gehrd, chetrd.
constexpr std::string_view kHessenbergAndTridiagonal = R"(
module @jit_reductions {
  func.func public @main(%arg0: tensor<3x3xf32>, %arg1: tensor<3x3xcomplex<f32>>) -> (tensor<3x3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<2xcomplex<f32>>) {
    %0:3 = stablehlo.custom_call @lapack_sgehrd_ffi(%arg0) {mhlo.backend_config = {high = 3 : i32, low = 1 : i32}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<2xf32>, tensor<i32>)
    %1:5 = stablehlo.custom_call @lapack_chetrd_ffi(%arg1) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xcomplex<f32>>) -> (tensor<3x3xcomplex<f32>>, tensor<3xf32>, tensor<2xf32>, tensor<2xcomplex<f32>>, tensor<i32>)
    return %0#0, %0#1, %1#1, %1#2, %1#3 : tensor<3x3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<2xcomplex<f32>>
  }
}
)";

/// jax.lax.linalg.ormqr on CPU: dormqr after geqrf.
constexpr std::string_view kOrmqr = R"(
module @jit_ormqr {
  func.func public @main(%arg0: tensor<3x2xf64>, %arg1: tensor<3x2xf64>) -> (tensor<3x2xf64>) {
    %0:2 = stablehlo.custom_call @lapack_dgeqrf_ffi(%arg0) {mhlo.backend_config = {}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>]} : (tensor<3x2xf64>) -> (tensor<3x2xf64>, tensor<2xf64>)
    %1 = stablehlo.custom_call @lapack_dormqr_ffi(%0#0, %0#1, %arg1) {mhlo.backend_config = {left = true, transpose = true}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<3x2xf64>, tensor<2xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
    return %1 : tensor<3x2xf64>
  }
}
)";

/// jnp.linalg.eig on CPU (right eigenvectors only): dgeev, then complex(wr, wi).
constexpr std::string_view kEig = R"(
module @jit_eig {
  func.func public @main(%arg0: tensor<3x3xf64>) -> (tensor<3xcomplex<f64>>, tensor<3x3xcomplex<f64>>) {
    %0:5 = stablehlo.custom_call @lapack_dgeev_ffi(%arg0) {mhlo.backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>, tensor<i32>)
    %1 = stablehlo.complex %0#0, %0#1 : tensor<3xcomplex<f64>>
    return %1, %0#3 : tensor<3xcomplex<f64>>, tensor<3x3xcomplex<f64>>
  }
}
)";

/// jax.scipy.linalg.schur on a complex matrix: zgees.
constexpr std::string_view kSchur = R"(
module @jit_schur {
  func.func public @main(%arg0: tensor<3x3xcomplex<f64>>) -> (tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>) {
    %0:5 = stablehlo.custom_call @lapack_zgees_ffi(%arg0) {mhlo.backend_config = {mode = 86 : ui8, sort = 78 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xcomplex<f64>>) -> (tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>, tensor<3xcomplex<f64>>, tensor<i32>, tensor<i32>)
    return %0#0, %0#1 : tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>
  }
}
)";

/// jax.scipy.linalg.schur on a real matrix: sgees, NaN where info is not 0 (JAX's lowering).
constexpr std::string_view kRealSchur = R"(
module @jit_schur {
  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
    %0:6 = stablehlo.custom_call @lapack_sgees_ffi(%arg0) {mhlo.backend_config = {mode = 86 : ui8, sort = 78 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>]} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare  EQ, %0#5, %c,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<i1>) -> tensor<4x4xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %4 = stablehlo.select %2, %0#0, %3 : tensor<4x4xi1>, tensor<4x4xf32>
    %5 = stablehlo.select %2, %0#1, %3 : tensor<4x4xi1>, tensor<4x4xf32>
    return %4, %5 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}
)";

/// jax.scipy.linalg.qr(pivoting=True) on CPU: sgeqp3 with jpvt = 0, then 0-based pivots.
constexpr std::string_view kPivotedQr = R"(
module @jit_qr_pivoting {
  func.func public @main(%arg0: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>) {
    %c = stablehlo.constant dense<0> : tensor<3xi32>
    %0:3 = stablehlo.custom_call @lapack_sgeqp3_ffi(%arg0, %c) {mhlo.backend_config = {}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>, #stablehlo.output_operand_alias<output_tuple_indices = [1], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>]} : (tensor<3x3xf32>, tensor<3xi32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<3xf32>)
    %c_0 = stablehlo.constant dense<1> : tensor<3xi32>
    %1 = stablehlo.subtract %0#1, %c_0 : tensor<3xi32>
    return %0#0, %1 : tensor<3x3xf32>, tensor<3xi32>
  }
}
)";

Graph graph_ok(std::string_view text) { return require_ok(parse_stablehlo(text)); }

/// parse(print(g)) has g's fingerprint and the printed text names the same targets; the
/// serialized form reads back to the same graph.
void check_round_trips(const Graph& g, std::string_view target) {
  const std::string printed = to_stablehlo(g);
  CHECK(contains(printed, target));
  const Graph again = graph_ok(printed);
  CHECK(fingerprint(again) == fingerprint(g));
  const Graph decoded = require_ok(deserialize_graph(serialize(g)));
  CHECK(fingerprint(decoded) == fingerprint(g));
}

void check_same(const std::vector<Literal>& ref, const std::vector<Literal>& cpu, double tol) {
  REQUIRE(ref.size() == cpu.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const std::vector<Z> a = elements(ref[i]), b = elements(cpu[i]);
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k)
      if (!(std::isnan(a[k].real()) && std::isnan(b[k].real()))) CHECK(std::abs(a[k] - b[k]) < tol);
  }
}

}  // namespace linalg_test

TEST_CASE("linalg: jnp.linalg.cholesky's program: the factor, and NaN for a failed batch") {
  const Graph g = graph_ok(kCholesky);
  check_round_trips(g, "@lapack_spotrf_ffi");
  std::mt19937_64 rng(7);
  std::vector<Z> v = hpd_values(rng, DType::kF32, 2, 3);
  for (std::size_t i = 9; i < 18; ++i) v[i] = -v[i];  // the second matrix is negative definite
  const Literal x = literal_of(DType::kF32, {2, 3, 3}, v);
  const std::vector<Literal> ref = evaluate_ok(g, {x});
  const std::vector<Literal> cpu = run_on_cpu(g, {x});
  check_same(ref, cpu, 1e-4);
  for (const auto* out : {&ref, &cpu}) {
    const M l = matrix((*out)[0], 0);
    CHECK(max_diff(mul(l, adj(l)), matrix(x, 0)) < 1e-3);
    const M failed = matrix((*out)[0], 1);
    CHECK(std::isnan(failed(0, 0).real()));
    CHECK(std::isnan(failed(2, 1).real()));
  }
}

TEST_CASE("linalg: jnp.linalg.qr's program (geqrf + orgqr)") {
  const Graph g = graph_ok(kQr);
  check_round_trips(g, "@lapack_dorgqr_ffi");
  std::mt19937_64 rng(8);
  const Literal x = literal_of(DType::kF64, {4, 3}, random_values(rng, DType::kF64, 12));
  const std::vector<Literal> ref = evaluate_ok(g, {x});
  const std::vector<Literal> cpu = run_on_cpu(g, {x});
  check_same(ref, cpu, 1e-10);
  CHECK(max_diff(mul(matrix(cpu[0], 0), matrix(cpu[1], 0)), matrix(x, 0)) < 1e-10);
}

TEST_CASE("linalg: jnp.linalg.eigh's program (cheevd)") {
  const Graph g = graph_ok(kEigh);
  check_round_trips(g, "@lapack_cheevd_ffi");
  std::mt19937_64 rng(9);
  const Literal x = literal_of(DType::kC64, {3, 3}, hpd_values(rng, DType::kC64, 1, 3));
  const std::vector<Literal> ref = evaluate_ok(g, {x});
  const std::vector<Literal> cpu = run_on_cpu(g, {x});
  check_same({ref[1]}, {cpu[1]}, 1e-3);  // eigenvectors agree only up to a phase
  for (const auto* out : {&ref, &cpu}) {
    const M v = matrix((*out)[0], 0);
    CHECK(max_diff(mul(adj(v), v), eye(3, 3)) < 1e-4);
  }
}

TEST_CASE("linalg: jnp.linalg.svd's program (zgesdd, economy)") {
  const Graph g = graph_ok(kSvd);
  check_round_trips(g, "@lapack_zgesdd_ffi");
  std::mt19937_64 rng(10);
  const Literal x = literal_of(DType::kC128, {2, 4}, random_values(rng, DType::kC128, 8));
  const std::vector<Literal> ref = evaluate_ok(g, {x});
  const std::vector<Literal> cpu = run_on_cpu(g, {x});
  check_same({ref[1]}, {cpu[1]}, 1e-10);
  for (const auto* out : {&ref, &cpu}) {
    M us = matrix((*out)[0], 0);
    const std::vector<Z> s = vec((*out)[1], 0);
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 2; ++j) us(i, j) *= s[static_cast<std::size_t>(j)];
    CHECK(max_diff(mul(us, matrix((*out)[2], 0)), matrix(x, 0)) < 1e-10);
  }
}

TEST_CASE("linalg: jnp.linalg.solve's program (sgetrf + strsm)") {
  const Graph g = graph_ok(kSolveByTrsm);
  check_round_trips(g, "@lapack_strsm_ffi");
  const Literal a = Literal::from_span<float>(std::vector<float>{4, 1, 2, 1, 5, 1, 2, 1, 6}, {3, 3}).value();
  const Literal b = Literal::from_span<float>(std::vector<float>{1, 2, 3}, {3, 1}).value();
  const std::vector<Literal> ref = evaluate_ok(g, {a, b});
  const std::vector<Literal> cpu = run_on_cpu(g, {a, b});
  check_same(ref, cpu, 1e-5);
  // No row swaps for this diagonally dominant matrix, so L U x = b: x solves a x = b.
  CHECK(values_of<std::int32_t>(cpu[1]) == std::vector<std::int32_t>{1, 2, 3});
  CHECK(max_diff(mul(matrix(a, 0), matrix(cpu[2], 0)), matrix(b, 0)) < 1e-5);
}

TEST_CASE("linalg: the tridiagonal_solve, hessenberg, tridiagonal and ormqr programs") {
  std::mt19937_64 rng(15);
  {
    const Graph g = graph_ok(kTridiagonalSolve);
    check_round_trips(g, "@lapack_dgtsv_ffi");
    const Literal dl = Literal::from_span<double>(std::vector<double>{0, 1, 2, 1}, {4}).value();
    const Literal d = Literal::from_span<double>(std::vector<double>{4, 5, 6, 7}, {4}).value();
    const Literal du = Literal::from_span<double>(std::vector<double>{1, 2, 1, 0}, {4}).value();
    const Literal b = Literal::from_span<double>(std::vector<double>{1, 2, 3, 4}, {4, 1}).value();
    const std::vector<Literal> ref = evaluate_ok(g, {dl, d, du, b});
    const std::vector<Literal> cpu = run_on_cpu(g, {dl, d, du, b});
    check_same(ref, cpu, 1e-12);
    // [[4,1,0,0],[1,5,2,0],[0,2,6,1],[0,0,1,7]] x = b, checked by multiplying out.
    const std::vector<double> x = values_of<double>(cpu[0]);
    CHECK(4 * x[0] + x[1] == doctest::Approx(1));
    CHECK(x[0] + 5 * x[1] + 2 * x[2] == doctest::Approx(2));
    CHECK(2 * x[1] + 6 * x[2] + x[3] == doctest::Approx(3));
    CHECK(x[2] + 7 * x[3] == doctest::Approx(4));
  }
  {
    const Graph g = graph_ok(kHessenbergAndTridiagonal);
    check_round_trips(g, "@lapack_chetrd_ffi");
    const Literal a = literal_of(DType::kF32, {3, 3}, random_values(rng, DType::kF32, 9));
    const Literal h = literal_of(DType::kC64, {3, 3}, hpd_values(rng, DType::kC64, 1, 3));
    check_same(evaluate_ok(g, {a, h}), run_on_cpu(g, {a, h}), 1e-4);
  }
  {
    const Graph g = graph_ok(kOrmqr);
    check_round_trips(g, "@lapack_dormqr_ffi");
    const Literal a = literal_of(DType::kF64, {3, 2}, random_values(rng, DType::kF64, 6));
    const Literal c = literal_of(DType::kF64, {3, 2}, random_values(rng, DType::kF64, 6));
    check_same(evaluate_ok(g, {a, c}), run_on_cpu(g, {a, c}), 1e-12);
    // Q^T a = R: with c = a, the result is upper triangular.
    const std::vector<Literal> r = run_on_cpu(g, {a, a});
    CHECK(std::abs(values_of<double>(r[0])[2]) < 1e-12);
    CHECK(std::abs(values_of<double>(r[0])[4]) < 1e-12);
    CHECK(std::abs(values_of<double>(r[0])[5]) < 1e-12);
  }
}

TEST_CASE("linalg: the eig, schur and pivoted qr programs") {
  {
    const Graph g = graph_ok(kEig);
    check_round_trips(g, "@lapack_dgeev_ffi");
    // Upper triangular: eigenvalues 1, 2, 3 on the diagonal, in the order LAPACK finds them.
    const Literal a = Literal::from_span<double>(std::vector<double>{1, 1, 0, 0, 2, 1, 0, 0, 3}, {3, 3}).value();
    const std::vector<Literal> ref = evaluate_ok(g, {a});
    const std::vector<Literal> cpu = run_on_cpu(g, {a});
    for (const auto* out : {&ref, &cpu}) {
      const std::vector<Z> w = sorted(elements((*out)[0]));
      CHECK(std::abs(w[0] - Z(1)) < 1e-12);
      CHECK(std::abs(w[1] - Z(2)) < 1e-12);
      CHECK(std::abs(w[2] - Z(3)) < 1e-12);
    }
  }
  {
    const Graph g = graph_ok(kSchur);
    check_round_trips(g, "@lapack_zgees_ffi");
    std::mt19937_64 rng(19);
    const Literal a = literal_of(DType::kC128, {3, 3}, random_values(rng, DType::kC128, 9));
    for (const auto& out : {evaluate_ok(g, {a}), run_on_cpu(g, {a})})
      CHECK(max_diff(mul(mul(matrix(out[1], 0), matrix(out[0], 0)), adj(matrix(out[1], 0))), matrix(a, 0)) < 1e-12);
  }
  {
    const Graph g = graph_ok(kRealSchur);
    check_round_trips(g, "@lapack_sgees_ffi");
    // JAX's own test input: 0 .. 15 in rows (rank 2), checked by reconstruction.
    std::vector<float> iota(16);
    std::iota(iota.begin(), iota.end(), 0.0f);
    const Literal a = Literal::from_span<float>(iota, {4, 4}).value();
    for (const auto& out : {evaluate_ok(g, {a}), run_on_cpu(g, {a})})
      CHECK(max_diff(mul(mul(matrix(out[1], 0), matrix(out[0], 0)), adj(matrix(out[1], 0))), matrix(a, 0)) < 1e-4);
  }
  {
    const Graph g = graph_ok(kPivotedQr);
    check_round_trips(g, "@lapack_sgeqp3_ffi");
    // The largest column (the last) is taken first.
    const Literal a = Literal::from_span<float>(std::vector<float>{1, 0, 5, 0, 1, 0, 0, 0, 1}, {3, 3}).value();
    const std::vector<Literal> ref = evaluate_ok(g, {a});
    const std::vector<Literal> cpu = run_on_cpu(g, {a});
    check_same(ref, cpu, 1e-5);
    CHECK(values_of<std::int32_t>(cpu[1])[0] == 2);
  }
}

TEST_CASE("linalg: LAPACK custom calls with a wrong type, a missing flag or an unknown target") {
  const std::string wrong_type(R"(
func.func public @main(%arg0: tensor<2x2xf64>) -> tensor<2x2xf64> {
  %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {mhlo.backend_config = {uplo = 76 : ui8}} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>)
  return %0#0 : tensor<2x2xf64>
})");
  check_error(parse_stablehlo(wrong_type).status(), StatusCode::kInvalidArgument,
              "lapack_spotrf_ffi takes f32");
  const std::string no_flag(R"(
func.func public @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {mhlo.backend_config = {}} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>)
  return %0#0 : tensor<2x2xf32>
})");
  check_error(parse_stablehlo(no_flag).status(), StatusCode::kInvalidArgument, "uplo");
  const std::string bad_flag(R"(
func.func public @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {mhlo.backend_config = {uplo = 88 : ui8}} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>)
  return %0#0 : tensor<2x2xf32>
})");
  check_error(parse_stablehlo(bad_flag).status(), StatusCode::kInvalidArgument,
              "lapack_spotrf_ffi");
  const std::string wrong_results(R"(
func.func public @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.custom_call @lapack_sgeqrf_ffi(%arg0) {mhlo.backend_config = {}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
})");
  CHECK_FALSE(parse_stablehlo(wrong_results).ok());
  const std::string unknown(R"(
func.func public @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0:2 = stablehlo.custom_call @lapack_sgelsd_ffi(%arg0) {mhlo.backend_config = {}} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>)
  return %0#0 : tensor<2x2xf32>
})");
  check_error(parse_stablehlo(unknown).status(), StatusCode::kUnimplemented,
              "lapack_sgelsd_ffi");
}
