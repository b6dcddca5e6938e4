// np::linalg (frontend/linalg.hpp): the factorizations' values against their defining
// identities (L L^T = A, V diag(w) V^T = A, Q R = A, P A = L U, A x = b, det by cofactors),
// and their derivatives (JAX's rules) by check_grads (check_grads.hpp) at orders 1 and 2,
// against central differences of the functions themselves.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "check_grads.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "test_util.hpp"

namespace linalg_grad_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;
using namespace pjrt_lite::np;

namespace {

using Tensors = std::vector<Tensor>;

Literal matrix(std::vector<double> v, std::int64_t rows, std::int64_t cols) {
  Literal l(Shape(kF64, {rows, cols}));
  for (std::size_t i = 0; i < v.size(); ++i) l.data<double>()[i] = v[i];
  return l;
}

void check_near(const Literal& got, const Literal& want, double tol = 1e-10) {
  REQUIRE(got.data<double>().size() == want.data<double>().size());
  for (std::size_t i = 0; i < want.data<double>().size(); ++i)
    CHECK_MESSAGE(std::abs(got.data<double>()[i] - want.data<double>()[i]) <= tol, "element ", i, ": ",
                  got.data<double>()[i], " != ", want.data<double>()[i]);
}

// A fixed 3x3 matrix with a row order that makes getrf pivot, and well conditioned.
const Literal& general() {
  static const Literal a = matrix({0.2, 1.0, 3.5, 4.0, -0.5, 0.3, 0.7, 3.2, -0.4}, 3, 3);
  return a;
}

// (a a^T + 3 I) / 2 for an SPD input to cholesky and a symmetric one to eigh.
Tensor spd(const Tensor& a) { return (matmul(a, a.T()) + 3.0 * eye(a.dim(0), a.dtype())) * 0.5; }

}  // namespace

TEST_CASE("linalg: factorizations satisfy their defining identities") {
  auto& client = grad_client();
  const Literal& a = general();
  auto recon = jit(client, [](const Tensor& x) {
    Tensor s = spd(x);
    Tensor l = linalg::cholesky(s);
    auto [w, v] = linalg::eigh(s);
    auto [q, r] = linalg::qr(x);
    auto [packed, pivots, perm] = linalg::lu(x);
    Tensor lower = linalg::detail::tril(packed, -1) + eye(3, DType::kF64);
    Tensor upper = linalg::detail::triu(packed);
    return std::vector<Tensor>{s, matmul(l, l.T()), matmul(matmul(v, w * eye(3, DType::kF64)), v.T()),
                               matmul(q, r), x, take(x, perm, 0), matmul(lower, upper),
                               matmul(q.T(), q), l - linalg::detail::tril(l), r - linalg::detail::triu(r)};
  });
  const std::vector<Literal> o = recon(a).value();
  check_near(o[1], o[0]);  // L L^T = A
  check_near(o[2], o[0]);  // V diag(w) V^T = A
  check_near(o[3], o[4]);  // Q R = A
  check_near(o[6], o[5]);  // L U = P A
  check_near(o[7], matrix({1, 0, 0, 0, 1, 0, 0, 0, 1}, 3, 3));
  check_near(o[8], Literal(Shape(kF64, {3, 3})));  // L lower, R upper
  check_near(o[9], Literal(Shape(kF64, {3, 3})));
  // Eigenvalues ascending; pivoting happened.
  auto ev = jit(client, [](const Tensor& x) { return linalg::eigh(spd(x)).first; });
  const Literal w = ev(a).value();
  CHECK(w.data<double>()[0] < w.data<double>()[1]);
  CHECK(w.data<double>()[1] < w.data<double>()[2]);
  auto piv = jit(client, [](const Tensor& x) { return std::get<1>(linalg::lu(x)); });
  CHECK(piv(a).value().data<std::int32_t>()[0] == 1);
}

TEST_CASE("linalg: solve, inv, det and slogdet against closed forms") {
  auto& client = grad_client();
  const Literal& a = general();
  const double* m = a.data<double>().data();
  const double det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
                     m[2] * (m[3] * m[7] - m[4] * m[6]);
  auto f = jit(client, [](const Tensor& x, const Tensor& b) {
    auto [sign, logabs] = linalg::slogdet(x);
    return std::vector<Tensor>{matmul(x, linalg::solve(x, b)), matmul(x, linalg::inv(x)), linalg::det(x), sign, logabs,
                               matmul(x, linalg::solve(x, b.T()[0])) - b.T()[0]};
  });
  const Literal b = matrix({1, 2, 3, 4, 5, 6}, 3, 2);
  const std::vector<Literal> o = f(a, b).value();
  check_near(o[0], b);
  check_near(o[1], matrix({1, 0, 0, 0, 1, 0, 0, 0, 1}, 3, 3));
  check_near(o[5], Literal(Shape(kF64, {3})));  // a solve of a vector
  CHECK(o[2].data<double>()[0] == doctest::Approx(det).epsilon(1e-12));
  CHECK(o[3].data<double>()[0] == (det < 0 ? -1.0 : 1.0));
  CHECK(o[4].data<double>()[0] == doctest::Approx(std::log(std::abs(det))).epsilon(1e-12));
  // A triangular solve of a vector by the wrapper.
  auto ts = jit(client, [](const Tensor& l, const Tensor& y) { return matmul(linalg::detail::tril(l), linalg::triangular_solve(l, y)); });
  check_near(ts(a, b).value(), b);
  // Bad shapes are statuses.
  auto bad = jit(client, [](const Tensor& x) { return linalg::cholesky(x); });
  check_error(bad(matrix({1, 2, 3, 4, 5, 6}, 2, 3)).status(), StatusCode::kInvalidArgument, "square");
  auto wide = jit(client, [](const Tensor& x) { return linalg::qr(x).first; });
  check_error(wide(matrix({1, 2, 3, 4, 5, 6}, 2, 3)).status(), StatusCode::kInvalidArgument, "rows >= columns");
}

TEST_CASE("linalg: check_grads of cholesky, eigh, qr, lu, solve, inv, det, slogdet and triangular_solve") {
  std::mt19937_64 rng(2405);
  const std::vector<Literal> x = {general()};
  const std::vector<Literal> xb = {general(), matrix({0.5, -1, 2, 0.3, 1.5, -0.7}, 3, 2)};
  check_grads_fn<2>([](const Tensors& a) { return linalg::cholesky(spd(a[0])); }, x, rng);
  // Eigenvectors up to sign: v * v is continuous where v is.
  check_grads_fn<2>([](const Tensors& a) {
    auto [w, v] = linalg::eigh(spd(a[0]));
    return std::pair{w, v * v};
  }, x, rng);
  check_grads_fn<2>([](const Tensors& a) { return linalg::qr(a[0]); }, x, rng);
  check_grads_fn<2>([](const Tensors& a) { return std::get<0>(linalg::lu(a[0])); }, x, rng);
  check_grads_fn<2>([](const Tensors& a) { return linalg::solve(a[0], a[1]); }, xb, rng);
  check_grads_fn<2>([](const Tensors& a) { return linalg::inv(a[0]); }, x, rng);
  check_grads_fn<2>([](const Tensors& a) { return linalg::det(a[0]); }, x, rng);
  check_grads_fn<2>([](const Tensors& a) { return linalg::slogdet(a[0]).second; }, x, rng);
  check_grads_fn<2>([](const Tensors& a) { return linalg::triangular_solve(a[0], a[1], true, false, true); }, xb, rng);
}

TEST_CASE("linalg: the closed-form gradient of log det is inv(A)^T") {
  auto& client = grad_client();
  auto g = jit(client, [](const Tensor& x) {
    return std::pair{grad([](const Tensor& y) { return linalg::slogdet(y).second; })(x), linalg::inv(x).T()};
  });
  auto [got, want] = g(general()).value();
  check_near(got, want, 1e-12);
}

}  // namespace linalg_grad_test
