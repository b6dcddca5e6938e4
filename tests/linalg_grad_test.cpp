// np::linalg (frontend/linalg.hpp): the factorizations' values against their defining
// identities computed here on the host (L L^T = A, V diag(w) V^T = A, Q R = A, U S V^T = A,
// A[perm] = L U, A x = b, det by cofactors), batched and in f32, and their derivatives (JAX's
// rules) by check_grads (check_grads.hpp: f64, forward mode against central differences of
// the functions themselves, reverse mode against forward mode, orders 1 and 2; order 1 under
// a sanitizer, where a single matrix that a batch repeats is left out), plus closed forms
// (d log|det A| = A^-T, d inv(A) = -inv(A) dA inv(A)) and JAX's behaviour at repeated
// eigenvalues.

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "check_grads.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/frontend/linalg.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "sanitizers.hpp"
#include "test_util.hpp"

namespace linalg_grad_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;
namespace la = pjrt_lite::np::linalg;

using Tensors = std::vector<Tensor>;

namespace {

/// The order of the check_grads cases: 2, and 1 under a sanitizer. Order 2 differentiates the
/// derivative functions once more: larger graphs through the same graph passes and linalg
/// kernels, which at -O0 under a sanitizer made these two cases the slowest of the suite. The
/// optimized build's suite checks order 2.
constexpr int kGradOrder = kUnderSanitizer ? 1 : 2;

/// Whether the check_grads cases of one matrix run where a batch of two repeats them: not
/// under a sanitizer, where the batch (whose first matrix is the same one) runs the same
/// rules and the same kernels, which take a batch one matrix at a time. The cases of one
/// matrix with nothing batched like them (solve with a matrix b, inv, slogdet, the tall and
/// wide shapes) always run.
constexpr bool kSingleAndBatch = !kUnderSanitizer;

Literal lit(const std::vector<double>& v, std::vector<std::int64_t> dims) {
  Literal l(Shape(kF64, std::move(dims)));
  for (std::size_t i = 0; i < v.size(); ++i) l.data<double>()[i] = v[i];
  return l;
}

Literal to_f32(const Literal& x) {
  Literal l(Shape(kF32, {x.shape().dims().begin(), x.shape().dims().end()}));
  for (std::size_t i = 0; i < x.data<double>().size(); ++i) l.data<float>()[i] = static_cast<float>(x.data<double>()[i]);
  return l;
}

// Element (b, i, j) of a batch of row-major matrices [..., r, c].
double at(const Literal& x, std::int64_t b, std::int64_t i, std::int64_t j) {
  const auto d = x.shape().dims();
  const std::int64_t r = d[d.size() - 2], c = d[d.size() - 1];
  return x.data<double>()[static_cast<std::size_t>(b * r * c + i * c + j)];
}
std::int64_t rows(const Literal& x) { return x.shape().dims()[x.shape().dims().size() - 2]; }
std::int64_t cols(const Literal& x) { return x.shape().dims()[x.shape().dims().size() - 1]; }
std::int64_t batches(const Literal& x) {
  return static_cast<std::int64_t>(x.data<double>().size()) / (rows(x) * cols(x));
}

// A 3x3 matrix whose first column makes getrf pivot, well conditioned.
Literal general() { return lit({0.2, 1.0, 3.5, 4.0, -0.5, 0.3, 0.7, 3.2, -0.4}, {3, 3}); }
// Two of them, a batch [2, 3, 3].
Literal general_batch() {
  return lit({0.2, 1.0, 3.5, 4.0, -0.5, 0.3, 0.7, 3.2, -0.4, 2.0, -1.0, 0.5, 0.3, 1.8, -0.6, -0.9, 0.4, 2.5},
             {2, 3, 3});
}
// A A^T + 3 I per matrix of a batch: symmetric positive definite with distinct eigenvalues
// for the inputs above.
Literal spd(const Literal& a) {
  Literal s(a.shape());
  const std::int64_t n = rows(a);
  for (std::int64_t b = 0; b < batches(a); ++b)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double v = i == j ? 3 : 0;
        for (std::int64_t k = 0; k < n; ++k) v += at(a, b, i, k) * at(a, b, j, k);
        s.data<double>()[static_cast<std::size_t>(b * n * n + i * n + j)] = v;
      }
  return s;
}
Literal tall() { return lit({1.0, 0.5, -2.0, 0.3, 0.8, 1.7, 2.2, -0.4, 0.1, 1.1, -1.3, 0.6}, {4, 3}); }
Literal wide() { return lit({1.0, 0.5, -2.0, 0.3, 0.8, 1.7, 2.2, -0.4, 0.1, 1.1, -1.3, 0.6}, {3, 4}); }

// op(x) op(y) for batches of matrices, op(m) = m^T when the flag is set.
std::vector<double> product(const Literal& x, const Literal& y, bool tx = false, bool ty = false) {
  const std::int64_t m = tx ? cols(x) : rows(x), k = tx ? rows(x) : cols(x), n = ty ? rows(y) : cols(y);
  std::vector<double> out;
  for (std::int64_t b = 0; b < batches(x); ++b)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double v = 0;
        for (std::int64_t p = 0; p < k; ++p)
          v += (tx ? at(x, b, p, i) : at(x, b, i, p)) * (ty ? at(y, b, j, p) : at(y, b, p, j));
        out.push_back(v);
      }
  return out;
}

void check_near(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK_MESSAGE(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])), what, " element ", i, ": ", got[i],
                  " != ", want[i]);
}
std::vector<double> values(const Literal& x) { return {x.data<double>().begin(), x.data<double>().end()}; }
std::vector<double> identity_batch(std::int64_t b, std::int64_t n) {
  std::vector<double> v;
  for (std::int64_t k = 0; k < b; ++k)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) v.push_back(i == j ? 1 : 0);
  return v;
}
// Column j of x scaled by s[b, j].
Literal scale_columns(const Literal& x, const Literal& s) {
  Literal out(x.shape());
  const std::int64_t r = rows(x), c = cols(x);
  for (std::int64_t b = 0; b < batches(x); ++b)
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j)
        out.data<double>()[static_cast<std::size_t>(b * r * c + i * c + j)] =
            at(x, b, i, j) * s.data<double>()[static_cast<std::size_t>(b * c + j)];
  return out;
}
// The elements of x strictly above (upper) or strictly below the diagonal.
std::vector<double> off_triangle(const Literal& x, bool upper) {
  std::vector<double> v;
  for (std::int64_t b = 0; b < batches(x); ++b)
    for (std::int64_t i = 0; i < rows(x); ++i)
      for (std::int64_t j = 0; j < cols(x); ++j)
        if (upper ? j > i : j < i) v.push_back(at(x, b, i, j));
  return v;
}
double det3(const Literal& a, std::int64_t b) {
  auto m = [&](std::int64_t i, std::int64_t j) { return at(a, b, i, j); };
  return m(0, 0) * (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1)) - m(0, 1) * (m(1, 0) * m(2, 2) - m(1, 2) * m(2, 0)) +
         m(0, 2) * (m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0));
}

}  // namespace

// Every factorization of a (a batch [..., 3, 3]) and of spd(a) against its identity.
static void check_factorizations(const Literal& a, double tol) {
  auto& client = grad_client();
  const Literal s = spd(a);
  const std::int64_t nb = batches(a), n = rows(a);
  auto f = jit(client, [](const Tensor& x, const Tensor& sym) {
    auto [w, v] = la::eigh(sym);
    auto [q, r] = la::qr(x);
    auto [u, sv, vt] = la::svd(x);
    auto [packed, pivots, perm] = la::lu(x);
    auto [sign, logabs] = la::slogdet(x);
    return std::vector<Tensor>{la::cholesky(sym), w, v, q, r, u, sv, vt, packed, perm.astype(DType::kF64),
                               la::solve(x, sym), la::inv(x), la::det(x), sign, logabs, pivots.astype(DType::kF64)};
  });
  const std::vector<Literal> o = f(a, s).value();
  const std::vector<double> zeros3(static_cast<std::size_t>(nb * 3), 0.0);
  check_near(product(o[0], o[0], false, true), values(s), tol, "L L^T = S");
  check_near(off_triangle(o[0], true), zeros3, 0, "L lower");
  check_near(product(scale_columns(o[2], o[1]), o[2], false, true), values(s), tol, "V diag(w) V^T = S");
  check_near(product(o[3], o[4]), values(a), tol, "Q R = A");
  check_near(product(o[3], o[3], true), identity_batch(nb, n), tol, "Q^T Q = I");
  check_near(off_triangle(o[4], false), zeros3, 0, "R upper");
  check_near(product(scale_columns(o[5], o[6]), o[7]), values(a), tol, "U diag(s) V^T = A");
  for (std::int64_t b = 0; b < nb; ++b)
    for (std::int64_t i = 0; i + 1 < n; ++i) {
      CHECK(o[1].data<double>()[static_cast<std::size_t>(b * n + i)] < o[1].data<double>()[static_cast<std::size_t>(b * n + i + 1)]);
      CHECK(o[6].data<double>()[static_cast<std::size_t>(b * n + i)] > o[6].data<double>()[static_cast<std::size_t>(b * n + i + 1)]);
    }
  // L U = A[perm], with L unit lower and U upper unpacked here; perm from the pivots by
  // applying the swaps here.
  Literal lower(a.shape()), upper(a.shape());
  std::vector<double> permuted;
  for (std::int64_t b = 0; b < nb; ++b) {
    std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
    for (std::int64_t i = 0; i < n; ++i)
      std::swap(perm[static_cast<std::size_t>(i)],
                perm[static_cast<std::size_t>(o[15].data<double>()[static_cast<std::size_t>(b * n + i)])]);
    for (std::int64_t i = 0; i < n; ++i) {
      CHECK(o[9].data<double>()[static_cast<std::size_t>(b * n + i)] == static_cast<double>(perm[static_cast<std::size_t>(i)]));
      for (std::int64_t j = 0; j < n; ++j) {
        const auto k = static_cast<std::size_t>(b * n * n + i * n + j);
        const double p = at(o[8], b, i, j);
        lower.data<double>()[k] = i == j ? 1 : j < i ? p : 0;
        upper.data<double>()[k] = j >= i ? p : 0;
        permuted.push_back(at(a, b, perm[static_cast<std::size_t>(i)], j));
      }
    }
  }
  check_near(product(lower, upper), permuted, tol, "L U = A[perm]");
  check_near(product(a, o[10]), values(s), tol, "A solve(A, S) = S");
  check_near(product(a, o[11]), identity_batch(nb, n), tol, "A inv(A) = I");
  for (std::int64_t b = 0; b < nb; ++b) {
    const double d = det3(a, b);
    const auto k = static_cast<std::size_t>(b);
    CHECK(o[12].data<double>()[k] == doctest::Approx(d).epsilon(tol));
    CHECK(o[13].data<double>()[k] == (d < 0 ? -1.0 : 1.0));
    CHECK(o[14].data<double>()[k] == doctest::Approx(std::log(std::abs(d))).epsilon(tol));
  }
}


TEST_CASE("linalg grad: the factorizations satisfy their identities, one matrix and a batch") {
  check_factorizations(general(), 1e-10);
  check_factorizations(general_batch(), 1e-10);
  // The pivoting case really pivots.
  auto piv = jit(grad_client(), [](const Tensor& x) { return std::get<1>(la::lu(x)); });
  CHECK(piv(general()).value().data<std::int32_t>()[0] == 1);
}

TEST_CASE("linalg grad: f32 factorizations and a solve of a vector") {
  auto& client = grad_client();
  const Literal a = general();
  auto f = jit(client, [](const Tensor& x, const Tensor& b) {
    Tensor l = la::cholesky(np::matmul(x, x.T()) + 3.0 * np::eye(3, x.dtype()));
    return std::vector<Tensor>{l.astype(DType::kF64), la::solve(x, b).astype(DType::kF64),
                               la::det(x).astype(DType::kF64)};
  });
  const Literal b = lit({1, -2, 0.5}, {3});
  const std::vector<Literal> o = f(to_f32(a), to_f32(b)).value();
  check_near(product(o[0], o[0], false, true), values(spd(a)), 1e-5, "f32 L L^T");
  std::vector<double> ax(3, 0.0);
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 3; ++j) ax[static_cast<std::size_t>(i)] += at(a, 0, i, j) * o[1].data<double>()[static_cast<std::size_t>(j)];
  check_near(ax, values(b), 1e-5, "f32 A x = b");
  CHECK(o[2].data<double>()[0] == doctest::Approx(det3(a, 0)).epsilon(1e-5));
}

TEST_CASE("linalg grad: check_grads of cholesky, triangular_solve, solve, inv, det and slogdet") {
  std::mt19937_64 rng(2405);
  const std::vector<Literal> x = {general()};
  const std::vector<Literal> xb = {general(), lit({0.5, -1, 2, 0.3, 1.5, -0.7}, {3, 2})};
  if (kSingleAndBatch)
    check_grads_fn<kGradOrder>([](const Tensors& a) { return la::cholesky(a[0]); },
                               {spd(general())}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::cholesky(a[0]); },
                             {spd(general_batch())}, rng);
  // Both operands of triangular solves, every side and triangle (a shifted to be well
  // conditioned).
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (bool trans : {false, true}) {
        CAPTURE(left);
        CAPTURE(lower);
        CAPTURE(trans);
        const Literal b = left ? lit({0.5, -1, 2, 0.3, 1.5, -0.7}, {3, 2}) : lit({0.5, -1, 2, 0.3, 1.5, -0.7}, {2, 3});
        check_grads_fn<kGradOrder>(
            [=](const Tensors& a) {
              return la::triangular_solve(a[0] + 3.0 * np::eye(3, DType::kF64), a[1], left, lower,
                                          trans);
            },
            {general(), b}, rng);
      }
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::solve(a[0], a[1]); }, xb, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::solve(a[0], a[1]); },
                             {general_batch(), lit({0.5, -1, 2, 0.3, 1.5, -0.7}, {2, 3})}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::inv(a[0]); }, x, rng);
  if (kSingleAndBatch)
    check_grads_fn<kGradOrder>([](const Tensors& a) { return la::det(a[0]); }, x, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::det(a[0]); }, {general_batch()},
                             rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::slogdet(a[0]); }, x, rng);
}

TEST_CASE("linalg grad: check_grads of lu, qr, eigh and svd") {
  std::mt19937_64 rng(2406);
  if (kSingleAndBatch)
    check_grads_fn<kGradOrder>([](const Tensors& a) { return std::get<0>(la::lu(a[0])); },
                               {general()}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return std::get<0>(la::lu(a[0])); },
                             {general_batch()}, rng);
  if (kSingleAndBatch)
    check_grads_fn<kGradOrder>([](const Tensors& a) { return la::qr(a[0]); }, {general()}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::qr(a[0]); }, {tall()}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::qr(a[0]); }, {general_batch()}, rng);
  if (kSingleAndBatch)
    check_grads_fn<kGradOrder>([](const Tensors& a) { return la::eigh(a[0]); },
                               {spd(general())}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::eigh(a[0]); },
                             {spd(general_batch())}, rng);
  if (kSingleAndBatch)
    check_grads_fn<kGradOrder>([](const Tensors& a) { return la::svd(a[0]); }, {general()}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::svd(a[0]); }, {tall()}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::svd(a[0]); }, {wide()}, rng);
  check_grads_fn<kGradOrder>([](const Tensors& a) { return la::svd(a[0]); }, {general_batch()},
                             rng);
}

TEST_CASE("linalg grad: closed forms of the derivatives of log|det|, det and inv") {
  auto& client = grad_client();
  const Literal a = general();
  const Literal da = lit({0.3, -0.2, 0.5, 1.0, 0.1, -0.7, 0.4, 0.9, -0.3}, {3, 3});
  auto f = jit(client, [](const Tensor& x, const Tensor& dx) {
    Tensor g_log = grad([](const Tensor& y) { return la::slogdet(y).second; })(x);
    Tensor g_det = grad([](const Tensor& y) { return la::det(y); })(x);
    Tensor d_inv = jvp([](const Tensor& y) { return la::inv(y); }, std::tuple{x}, std::tuple{dx}).second;
    Tensor inv = la::inv(x);
    return std::vector<Tensor>{g_log, g_det, d_inv, inv};
  });
  const std::vector<Literal> o = f(a, da).value();
  // The inverse by the adjugate: inv[i][j] = cofactor(j, i) / det.
  const double d = det3(a, 0);
  Literal inv(Shape(kF64, {3, 3})), inv_t(Shape(kF64, {3, 3}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      const double cof = at(a, 0, r0, c0) * at(a, 0, r1, c1) - at(a, 0, r0, c1) * at(a, 0, r1, c0);
      inv.data<double>()[static_cast<std::size_t>(i * 3 + j)] = cof / d;
      inv_t.data<double>()[static_cast<std::size_t>(j * 3 + i)] = cof / d;
    }
  check_near(values(o[3]), values(inv), 1e-12, "inv by cofactors");
  check_near(values(o[0]), values(inv_t), 1e-12, "d log|det A| = A^-T");
  std::vector<double> det_inv_t;
  for (double v : values(inv_t)) det_inv_t.push_back(d * v);
  check_near(values(o[1]), det_inv_t, 1e-12, "d det A = det(A) A^-T");
  // -inv dA inv.
  const std::vector<double> t = product(inv, da);
  std::vector<double> want = product(lit(t, {3, 3}), inv);
  for (double& v : want) v = -v;
  check_near(values(o[2]), want, 1e-12, "d inv(A) = -inv(A) dA inv(A)");
}

TEST_CASE("linalg grad: repeated eigenvalues give non-finite eigenvector derivatives, as JAX's") {
  auto f = jit(grad_client(), [](const Tensor& x, const Tensor& dx) {
    return jvp([](const Tensor& y) { return la::eigh(y); }, std::tuple{x}, std::tuple{dx}).second;
  });
  const Literal id = lit({2, 0, 0, 0, 2, 0, 0, 0, 1}, {3, 3});
  const Literal dx = lit({0.3, 0.2, 0.5, 0.2, 0.1, -0.7, 0.5, -0.7, -0.3}, {3, 3});
  auto [dw, dv] = f(id, dx).value();
  bool finite = true;
  for (double v : values(dv)) finite = finite && std::isfinite(v);
  CHECK_FALSE(finite);
  for (double v : values(dw)) CHECK(std::isfinite(v));  // the eigenvalues' derivative is finite
}

TEST_CASE("linalg grad: bad operands are statuses and derivatives beyond the rules' depth are refused") {
  auto& client = grad_client();
  auto chol = jit(client, [](const Tensor& x) { return la::cholesky(x); });
  check_error(chol(lit({1, 2, 3, 4, 5, 6}, {2, 3})).status(), StatusCode::kInvalidArgument, "square");
  check_error(chol(lit({1, 2, 3}, {3})).status(), StatusCode::kInvalidArgument, "rank >= 2");
  Literal c(Shape(DType::kC64, {2, 2}));
  check_error(chol(c).status(), StatusCode::kInvalidArgument, "complex matrices are not supported");
  auto wide_qr = jit(client, [](const Tensor& x) { return la::qr(x).first; });
  check_error(wide_qr(wide()).status(), StatusCode::kInvalidArgument, "rows >= columns");
  auto bad_solve = jit(client, [](const Tensor& x, const Tensor& b) { return la::solve(x, b); });
  check_error(bad_solve(general(), lit({1, 2}, {2})).status(), StatusCode::kInvalidArgument, "solve: b must be");
  // Order kLinalgDerivativeOrders + 1 meets the bare routine.
  auto f0 = [](const Tensor& y) { return np::sum(la::cholesky(y)); };
  auto f1 = [f0](const Tensor& y) { return np::sum(grad(f0)(y)); };
  auto f2 = [f1](const Tensor& y) { return np::sum(grad(f1)(y)); };
  auto f3 = [f2](const Tensor& y) { return np::sum(grad(f2)(y)); };
  static_assert(la::kLinalgDerivativeOrders == 3);
  auto third = jit(client, [f2](const Tensor& x) { return grad(f2)(x); });
  CHECK(third(spd(general())).ok());
  // Past them, the bare routine differentiates by the IR's rule for potrf.
  auto fourth = jit(client, [f3](const Tensor& x) { return grad(f3)(x); });
  CHECK(fourth(spd(general())).ok());
}

// ---- The routines themselves, as JAX's exports call them ----------------------------------

/// A graph of f64 parameters `params` whose outputs are `body`'s (the float results of the
/// routines it calls).
template <class F>
Graph routine_graph(const std::string& name, const std::vector<Shape>& params, F body) {
  GraphBuilder b(name);
  std::vector<Value> x;
  for (const Shape& s : params) x.push_back(b.parameter(s));
  return build_ok(b, body(b, x));
}

Value matmul(GraphBuilder& b, Value x, Value y, bool transpose_y = false) {
  const std::int64_t r = b.shape(x)->rank();
  DotDimensionNumbers dn = matmul_dimensions(r);
  if (transpose_y) dn.rhs_contracting_dimensions = {r - 1};
  return b.dot_general(x, y, dn);
}

/// x + c I for x [..., n, n].
Value shifted(GraphBuilder& b, Value x, double c) {
  const Shape s = *b.shape(x);
  const std::vector<std::int64_t> d(s.dims().begin(), s.dims().end());
  const Value eq = b.compare(b.iota(Shape(DType::kS32, d), s.rank() - 2), b.iota(Shape(DType::kS32, d), s.rank() - 1),
                             ComparisonDirection::kEq);
  return b.add(x, b.select(eq, b.broadcast_in_dim(b.scalar(DType::kF64, c), d, {}),
                           b.broadcast_in_dim(b.scalar(DType::kF64, 0), d, {})));
}

/// The strictly `upper` (or lower) triangle of x, zeros elsewhere.
Value strict_triangle(GraphBuilder& b, Value x, bool upper) {
  const Shape s = *b.shape(x);
  const std::vector<std::int64_t> d(s.dims().begin(), s.dims().end());
  const Value keep = b.compare(b.iota(Shape(DType::kS32, d), s.rank() - 1), b.iota(Shape(DType::kS32, d), s.rank() - 2),
                               upper ? ComparisonDirection::kGt : ComparisonDirection::kLt);
  return b.select(keep, x, b.broadcast_in_dim(b.scalar(DType::kF64, 0), d, {}));
}

/// The signs s [..., n] that make c^T v_j positive for the columns v_j of v [..., m, n], with
/// c = (1, 2, ..., m): eigenvectors and singular vectors are unique up to sign, which LAPACK
/// leaves to the algorithm (the interpreter's and the CPU's differ), so the graphs checked
/// here give them these signs.
Value column_signs(GraphBuilder& b, Value v) {
  const Shape s = *b.shape(v);
  const std::vector<std::int64_t> d(s.dims().begin(), s.dims().end());
  const Value weights = b.add(b.convert(b.iota(Shape(DType::kS32, d), s.rank() - 2), kF64),
                              b.broadcast_in_dim(b.scalar(kF64, 1), d, {}));
  return b.sign(b.reduce(b.multiply(v, weights), b.scalar(kF64, 0), OpCode::kAdd, {s.rank() - 2}));
}

/// x [..., m, n] with column j (`columns`) or row j scaled by s[..., j].
Value scaled(GraphBuilder& b, Value x, Value s, bool columns) {
  const Shape xs = *b.shape(x);
  const std::vector<std::int64_t> d(xs.dims().begin(), xs.dims().end());
  std::vector<std::int64_t> map;
  for (std::int64_t i = 0; i < xs.rank() - 2; ++i) map.push_back(i);
  map.push_back(columns ? xs.rank() - 1 : xs.rank() - 2);
  return b.multiply(x, b.broadcast_in_dim(s, d, map));
}

LinalgAttrs routine(LinalgRoutine r, std::int64_t mode = 'V', std::int64_t uplo = 'L') {
  LinalgAttrs a;
  a.routine = r;
  a.mode = mode;
  a.uplo = uplo;
  return a;
}

TEST_CASE("linalg grad: the LAPACK routines of JAX's exports differentiate by JAX's rules (potrf, trsm, syevd, gesdd, gesvd, getrf)") {
  // The routines as a parsed export holds them, with the triangle a routine does not read
  // perturbed so that the rules must mirror the one it does (and potrf's untouched triangle
  // passes its tangent through), batched and not; check_grads at orders 1 and 2 (1 for the
  // many flag combinations of trsm).
  std::mt19937_64 rng(2407);
  const Shape m3(kF64, {3, 3}), batch(kF64, {2, 3, 3});
  for (std::int64_t uplo : {'L', 'U'})
    for (const Shape& s : {m3, batch}) {
      CAPTURE(char(uplo));
      CAPTURE(s);
      // potrf of X X^T + 3 I, plus noise in the triangle it does not read.
      check_grads(routine_graph("potrf", {s, s},
                                [&](GraphBuilder& b, const std::vector<Value>& x) {
                                  const Value a = b.add(shifted(b, matmul(b, x[0], x[0], true), 3.0),
                                                        strict_triangle(b, x[1], uplo == 'L'));
                                  return std::vector<Value>{b.linalg({a}, routine(LinalgRoutine::kPotrf, 'V', uplo))[0]};
                                }),
                  rng, -1, 1, kGradOrder);
      // syevd of a symmetric matrix with noise in the triangle it does not read.
      check_grads(routine_graph("syevd", {s, s},
                                [&](GraphBuilder& b, const std::vector<Value>& x) {
                                  const Value a = b.add(b.add(x[0], b.transpose(x[0], s.rank() == 2 ? std::vector<std::int64_t>{1, 0}
                                                                                                    : std::vector<std::int64_t>{0, 2, 1})),
                                                        strict_triangle(b, x[1], uplo == 'L'));
                                  const std::vector<Value> r = b.linalg({a}, routine(LinalgRoutine::kSyevd, 'V', uplo));
                                  return std::vector<Value>{scaled(b, r[0], column_signs(b, r[0]), true), r[1]};
                                }),
                  rng, -1, 1, kGradOrder);
      // Eigenvalues only (mode 'N', whose first result is the input).
      check_grads(routine_graph("syevd_values", {s},
                                [&](GraphBuilder& b, const std::vector<Value>& x) {
                                  const std::vector<Value> r = b.linalg({x[0]}, routine(LinalgRoutine::kSyevd, 'N', uplo));
                                  return std::vector<Value>{r[0], r[1]};
                                }),
                  rng, -1, 1, kGradOrder);
    }
  // trsm: every side, triangle, transposition and diagonal, both operands.
  for (std::int64_t side : {'L', 'R'})
    for (std::int64_t uplo : {'L', 'U'})
      for (std::int64_t trans : {'N', 'T'})
        for (std::int64_t diag : {'N', 'U'}) {
          CAPTURE(char(side));
          CAPTURE(char(uplo));
          CAPTURE(char(trans));
          CAPTURE(char(diag));
          LinalgAttrs a = routine(LinalgRoutine::kTrsm, 'V', uplo);
          a.side = side;
          a.trans = trans;
          a.diag = diag;
          const Shape bs(kF64, side == 'L' ? std::vector<std::int64_t>{3, 2} : std::vector<std::int64_t>{2, 3});
          const bool second_order = side == 'L' && uplo == 'L' && trans == 'T' && diag == 'N';
          check_grads(routine_graph("trsm", {m3, bs},
                                    [&](GraphBuilder& b, const std::vector<Value>& x) {
                                      return b.linalg({shifted(b, x[0], 3.0), x[1]}, a);
                                    }),
                      rng, -1, 1, second_order ? kGradOrder : 1);
        }
  // SVDs: reduced of square, tall, wide and batched matrices, full of a square one, values only.
  const std::vector<std::pair<LinalgAttrs, Shape>> svds = {
      {routine(LinalgRoutine::kGesdd, 'S'), m3},
      {routine(LinalgRoutine::kGesdd, 'S'), Shape(kF64, {4, 3})},
      {routine(LinalgRoutine::kGesvd, 'S'), Shape(kF64, {3, 4})},
      {routine(LinalgRoutine::kGesdd, 'S'), batch},
      {routine(LinalgRoutine::kGesvd, 'A'), m3},
      {routine(LinalgRoutine::kGesdd, 'N'), Shape(kF64, {3, 4})},
  };
  for (const auto& svd : svds) {
    const LinalgAttrs& a = svd.first;
    const Shape& s = svd.second;
    CAPTURE(char(a.mode));
    CAPTURE(s);
    check_grads(routine_graph("svd", {s},
                              [&](GraphBuilder& b, const std::vector<Value>& x) {
                                // Singular values near 3, 2 and 1: apart from each other and
                                // from 0, where the rule's divisions are well conditioned.
                                const Shape xs = *b.shape(x[0]);
                                const std::vector<std::int64_t> d(xs.dims().begin(), xs.dims().end());
                                const Value row = b.iota(Shape(kS32, d), xs.rank() - 2);
                                const Value on_diagonal = b.compare(row, b.iota(Shape(kS32, d), xs.rank() - 1),
                                                                    ComparisonDirection::kEq);
                                const Value three_minus_row = b.subtract(b.broadcast_in_dim(b.scalar(kF64, 3), d, {}),
                                                                         b.convert(row, kF64));
                                const Value diagonal = b.select(on_diagonal, three_minus_row,
                                                                b.broadcast_in_dim(b.scalar(kF64, 0), d, {}));
                                const std::vector<Value> r = b.linalg({b.add(x[0], diagonal)}, a);
                                if (a.mode == 'N') return std::vector<Value>{r[0], r[1]};
                                const Value signs = column_signs(b, r[2]);
                                return std::vector<Value>{r[0], r[1], scaled(b, r[2], signs, true), scaled(b, r[3], signs, false)};
                              }),
                rng, -0.3, 0.3, kGradOrder);
  }
  // getrf of square, batched, tall and wide matrices.
  for (const Shape& s : {m3, batch, Shape(kF64, {4, 3}), Shape(kF64, {3, 4})}) {
    CAPTURE(s);
    check_grads(routine_graph("getrf", {s},
                              [&](GraphBuilder& b, const std::vector<Value>& x) {
                                return std::vector<Value>{b.linalg({x[0]}, routine(LinalgRoutine::kGetrf))[0]};
                              }),
                rng, -1, 1, kGradOrder);
  }
}

TEST_CASE("linalg grad: a parsed JAX export with potrf differentiates, and routines without a rule are refused by name") {
  std::mt19937_64 rng(2408);
  // jnp.linalg.cholesky as JAX exports it for the CPU: the symmetrized input, potrf, the info
  // check and the lower triangle.
  const Graph cholesky = require_ok(parse_stablehlo(R"(
func.func @main(%x: tensor<3x3xf64>) -> tensor<3x3xf64> {
  %xt = stablehlo.transpose %x, dims = [1, 0] : (tensor<3x3xf64>) -> tensor<3x3xf64>
  %g = stablehlo.dot_general %x, %xt, contracting_dims = [1] x [0] : (tensor<3x3xf64>, tensor<3x3xf64>) -> tensor<3x3xf64>
  %i = stablehlo.iota dim = 0 : tensor<3x3xi32>
  %j = stablehlo.iota dim = 1 : tensor<3x3xi32>
  %eq = stablehlo.compare EQ, %i, %j : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
  %three = stablehlo.constant dense<3.0> : tensor<3x3xf64>
  %zero = stablehlo.constant dense<0.0> : tensor<3x3xf64>
  %d = stablehlo.select %eq, %three, %zero : tensor<3x3xi1>, tensor<3x3xf64>
  %a = stablehlo.add %g, %d : tensor<3x3xf64>
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<i32>)
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %ok = stablehlo.compare EQ, %0#1, %c0 : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %okb = stablehlo.broadcast_in_dim %ok, dims = [] : (tensor<i1>) -> tensor<3x3xi1>
  %nan = stablehlo.constant dense<0x7FF8000000000000> : tensor<3x3xf64>
  %l = stablehlo.select %okb, %0#0, %nan : tensor<3x3xi1>, tensor<3x3xf64>
  %lower = stablehlo.compare GE, %i, %j : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
  %r = stablehlo.select %lower, %l, %zero : tensor<3x3xi1>, tensor<3x3xf64>
  return %r : tensor<3x3xf64>
}
)"));
  check_grads(cholesky, rng, -1, 1, kGradOrder);

  auto refused = [](LinalgAttrs a, Shape s, const std::string& message) {
    const Graph g = routine_graph("refused", {s}, [&](GraphBuilder& b, const std::vector<Value>& x) {
      const std::vector<Value> r = b.linalg({x[0]}, a);
      return std::vector<Value>{r[0]};
    });
    check_error(vjp_graph(g, {true}).status(), StatusCode::kUnimplemented, message);
    check_error(jvp_graph(g, {true}).status(), StatusCode::kUnimplemented, message);
  };
  refused(routine(LinalgRoutine::kGeqrf), Shape(kF64, {3, 3}), "linalg geqrf has no derivative rule");
  refused(routine(LinalgRoutine::kGees, 'V'), Shape(kF64, {3, 3}), "linalg gees has no derivative rule");
  refused(routine(LinalgRoutine::kGesdd, 'A'), Shape(kF64, {4, 3}), "with full matrices (mode 'A') of a non-square");
  refused(routine(LinalgRoutine::kPotrf), Shape(DType::kC128, {3, 3}), "linalg potrf of complex matrices");
}

}  // namespace linalg_grad_test
