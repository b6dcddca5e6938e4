// Tests of the front end's lax, nn, indexing, sorting and random functions, run through jit
// on the CPU client. Oracles: loops over std::vector written here from the functions'
// definitions, closed forms, Random123's known answers for threefry2x32, and central
// finite differences in f64 for the derivatives.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "test_util.hpp"

namespace frontend_ops_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

using Client = cpu::Client<cpu::InlineExecutor>;
// One function type for every traced function here: jit and grad are instantiated once.
using Fn = std::function<Tensor(const Tensor&)>;
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;

std::unique_ptr<Client> make_client() { return Client::create().value(); }

Literal f64(std::vector<double> v, std::vector<std::int64_t> dims) {
  return Literal::from_span<double>(v, dims).value();
}
Literal s32(std::vector<std::int32_t> v, std::vector<std::int64_t> dims) {
  return Literal::from_span<std::int32_t>(v, dims).value();
}
std::vector<double> draw(std::mt19937_64& rng, std::size_t n, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

Literal run(Client& client, const Fn& f, const Literal& x) {
  return require_ok(jit(client, f)(x));
}
Literal run2(Client& client, const Fn2& f, const Literal& x, const Literal& y) {
  return require_ok(jit(client, f)(x, y));
}
Status error_of(Client& client, const Fn& f, const Literal& x) { return jit(client, f)(x).status(); }

void check_values(const Literal& got, const std::vector<double>& want, double tol = 1e-12) {
  const std::vector<double> g = values_of<double>(got);
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want[i]))
      CHECK(std::isnan(g[i]));
    else
      CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

/// The gradient of sum(f(x) * w) for a fixed random w, by grad against central differences
/// of step 1e-6 at every element of the f64 input x.
void check_grad(Client& client, const Fn& f, const Literal& x, double tol = 1e-6) {
  const Literal y = run(client, f, x);
  std::mt19937_64 rng(11);
  const std::vector<double> w = draw(rng, static_cast<std::size_t>(y.shape().element_count()));
  const Literal wl =
      Literal::from_span<double>(w, std::vector<std::int64_t>(y.shape().dims().begin(), y.shape().dims().end()))
          .value();
  Fn loss = [f, wl](const Tensor& v) { return np::sum(f(v) * np::array(wl)); };
  const Literal g = require_ok(jit(client, Fn(grad(loss)))(x));
  auto jl = jit(client, loss);
  Literal p = x;
  const double h = 1e-6;
  for (std::size_t i = 0; i < p.data<double>().size(); ++i) {
    const double keep = p.data<double>()[i];
    p.data<double>()[i] = keep + h;
    const double up = require_ok(jl(p)).data<double>()[0];
    p.data<double>()[i] = keep - h;
    const double down = require_ok(jl(p)).data<double>()[0];
    p.data<double>()[i] = keep;
    CAPTURE(i);
    CHECK(g.data<double>()[i] == doctest::Approx((up - down) / (2 * h)).epsilon(tol).scale(1.0));
  }
}

}  // namespace

// ---- jax.nn ---------------------------------------------------------------------------------

TEST_CASE("frontend ops: gelu, softmax, log_softmax and logsumexp agree with their definitions") {
  auto client = make_client();
  // Rows of moderate, huge and equal values: the huge ones overflow exp without the shift.
  const std::vector<double> x = {-1.5, 0.25, 2.0, -3.0, 1000.0, 999.0, 1001.0, 998.0, 0.5, 0.5, 0.5, 0.5};
  const Literal xl = f64(x, {3, 4});
  std::vector<double> tanh_gelu, exact_gelu, soft, logsoft, lse_rows;
  for (double v : x) {
    tanh_gelu.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v))));
    exact_gelu.push_back(v * 0.5 * std::erfc(-v / std::sqrt(2.0)));
  }
  for (int r = 0; r < 3; ++r) {
    // log(sum(exp)) in long double, where exp(1001) still fits.
    long double s = 0;
    for (int c = 0; c < 4; ++c) s += std::exp(static_cast<long double>(x[r * 4 + c]));
    const double lse = static_cast<double>(std::log(s));
    lse_rows.push_back(lse);
    for (int c = 0; c < 4; ++c) {
      logsoft.push_back(x[r * 4 + c] - lse);
      soft.push_back(std::exp(x[r * 4 + c] - lse));
    }
  }
  check_values(run(*client, [](const Tensor& v) { return np::gelu(v); }, xl), tanh_gelu);
  check_values(run(*client, [](const Tensor& v) { return np::gelu(v, false); }, xl), exact_gelu);
  check_values(run(*client, [](const Tensor& v) { return np::softmax(v); }, xl), soft);
  check_values(run(*client, [](const Tensor& v) { return np::log_softmax(v, 1); }, xl), logsoft);
  check_values(run(*client, [](const Tensor& v) { return np::logsumexp(v, {1}); }, xl), lse_rows);
  const Literal kept = run(*client, [](const Tensor& v) { return np::logsumexp(v, {-1}, true); }, xl);
  CHECK(kept.shape() == Shape(kF64, {3, 1}));
  check_values(kept, lse_rows);
  // Softmax along axis 0 sums to 1 down each column.
  const Literal cols = run(*client, [](const Tensor& v) { return np::sum(np::softmax(v, 0), {0}); }, xl);
  check_values(cols, {1, 1, 1, 1});
  // All of a row at -inf: logsumexp is -inf (not NaN); an +inf entry gives +inf.
  const double inf = std::numeric_limits<double>::infinity();
  const Literal edges = run(*client, [](const Tensor& v) { return np::logsumexp(v, {1}); },
                            f64({-inf, -inf, 1.0, inf}, {2, 2}));
  CHECK(values_of<double>(edges) == std::vector<double>{-inf, inf});
  // f32 keeps its dtype and stays finite for large inputs.
  const Literal big = run(*client, [](const Tensor& v) { return np::softmax(v); },
                          Literal::vector<float>({1000.f, 1000.f}));
  CHECK(big == Literal::vector<float>({0.5f, 0.5f}));
  // Integers become f32.
  CHECK(run(*client, [](const Tensor& v) { return np::logsumexp(v); },
            Literal::vector<std::int32_t>({0, 0}))
            .dtype() == kF32);
}

TEST_CASE("frontend ops: derivatives of gelu, softmax, log_softmax and logsumexp match differences") {
  auto client = make_client();
  std::mt19937_64 rng(1);
  const Literal x = f64(draw(rng, 12, -3, 3), {3, 4});
  check_grad(*client, [](const Tensor& v) { return np::gelu(v); }, x);
  check_grad(*client, [](const Tensor& v) { return np::gelu(v, false); }, x);
  check_grad(*client, [](const Tensor& v) { return np::softmax(v); }, x);
  check_grad(*client, [](const Tensor& v) { return np::log_softmax(v, 0); }, x);
  check_grad(*client, [](const Tensor& v) { return np::logsumexp(v, {1}); }, x);
  check_grad(*client, [](const Tensor& v) { return np::logsumexp(v); }, x);
}

TEST_CASE("frontend ops: one_hot against a loop, with out-of-range entries as zero rows") {
  auto client = make_client();
  const std::vector<std::int32_t> idx = {0, 2, -1, 3, 1, 5};
  const Literal il = s32(idx, {2, 3});
  const Literal last = run(*client, [](const Tensor& i) { return np::one_hot(i, 4); }, il);
  CHECK(last.shape() == Shape(kF32, {2, 3, 4}));
  const Literal first = run(*client, [](const Tensor& i) { return np::one_hot(i, 4, kS32, 0); }, il);
  CHECK(first.shape() == Shape(kS32, {4, 2, 3}));
  for (std::size_t e = 0; e < idx.size(); ++e)
    for (std::int32_t c = 0; c < 4; ++c) {
      CAPTURE(e);
      CAPTURE(c);
      CHECK(last.data<float>()[e * 4 + static_cast<std::size_t>(c)] == (idx[e] == c ? 1.f : 0.f));
      CHECK(first.data<std::int32_t>()[static_cast<std::size_t>(c) * 6 + e] == (idx[e] == c ? 1 : 0));
    }
  check_error(error_of(*client, [](const Tensor& v) { return np::one_hot(v, 3); },
                       Literal::vector<double>({1.0})),
              StatusCode::kInvalidArgument, "one_hot: the indices must be integers");
  check_error(error_of(*client, [](const Tensor& v) { return np::one_hot(v, 3, kF32, 3); }, il),
              StatusCode::kInvalidArgument, "one_hot: axis 3 is out of range");
}

// ---- pad, flip, dynamic slices, cumulative ops ----------------------------------------------

TEST_CASE("frontend ops: pad with edge, negative and interior padding against a loop") {
  auto client = make_client();
  const std::vector<double> x = {1, 2, 3, 4, 5, 6};  // 2 x 3
  // Rows: 1 before, 2 after, 1 between; columns: 1 cut from the front, 1 after, 2 between.
  auto f = [](const Tensor& v) { return np::pad(v, -7.0, {{1, 2, 1}, {-1, 1, 2}}); };
  const Literal r = run(*client, f, f64(x, {2, 3}));
  // The full padded grid before the cut: rows 1 + 2 + 1 + 2 = 6, columns 0 + 3 + 2*2 + 1 = 8.
  std::vector<double> grid(6 * 8, -7);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) grid[static_cast<std::size_t>((1 + 2 * i) * 8 + 3 * j)] = x[static_cast<std::size_t>(i * 3 + j)];
  std::vector<double> want;
  for (int i = 0; i < 6; ++i)
    for (int j = 1; j < 8; ++j) want.push_back(grid[static_cast<std::size_t>(i * 8 + j)]);
  CHECK(r.shape() == Shape(kF64, {6, 7}));
  check_values(r, want);
  check_grad(*client, f, f64(x, {2, 3}));
  // A traced padding value, and integer arrays.
  const Literal ints = run2(*client, [](const Tensor& v, const Tensor& p) { return np::pad(v, p, {{0, 1, 0}}); },
                            Literal::vector<std::int32_t>({4, 5}), Literal::scalar<std::int32_t>(9));
  CHECK(ints == Literal::vector<std::int32_t>({4, 5, 9}));
  check_error(error_of(*client, [](const Tensor& v) { return np::pad(v, 0.0, {{1, 1, 0}}); }, f64(x, {2, 3})),
              StatusCode::kInvalidArgument, "pad: 1 padding entries for an array f64[2,3] of rank 2");
  check_error(error_of(*client, [](const Tensor& v) { return np::pad(v, 0.0, {{1, 1, -1}, {0, 0, 0}}); },
                       f64(x, {2, 3})),
              StatusCode::kInvalidArgument, "interior padding must not be negative");
}

TEST_CASE("frontend ops: flip against a loop, and its derivative") {
  auto client = make_client();
  std::vector<double> x(24);
  std::iota(x.begin(), x.end(), 0.0);
  const Literal xl = f64(x, {2, 3, 4});
  const Literal r = run(*client, [](const Tensor& v) { return np::flip(v, {0, -1}); }, xl);
  const Literal all = run(*client, [](const Tensor& v) { return np::flip(v); }, xl);
  std::vector<double> want, want_all;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        want.push_back(x[static_cast<std::size_t>((1 - i) * 12 + j * 4 + (3 - k))]);
        want_all.push_back(x[static_cast<std::size_t>((1 - i) * 12 + (2 - j) * 4 + (3 - k))]);
      }
  check_values(r, want);
  check_values(all, want_all);
  check_grad(*client, [](const Tensor& v) { return np::flip(v, {1}) * v; }, xl);
  check_error(error_of(*client, [](const Tensor& v) { return np::flip(v, {3}); }, xl),
              StatusCode::kInvalidArgument, "flip: axis 3 is out of range for an array of rank 3");
}

TEST_CASE("frontend ops: dynamic_slice and dynamic_update_slice with traced, clamped and negative starts") {
  auto client = make_client();
  std::vector<double> x(20);
  std::iota(x.begin(), x.end(), 0.0);
  const Literal xl = f64(x, {4, 5});
  auto slice_at = [&](std::int32_t r, std::int32_t c) {
    return run2(*client,
                [](const Tensor& v, const Tensor& s) { return np::dynamic_slice(v, {s[0], s[1]}, {2, 3}); },
                xl, Literal::vector<std::int32_t>({r, c}));
  };
  // The oracle: XLA's rule, a negative start counts from the end and then the start is
  // clamped into [0, dim - size].
  for (const auto& start : {std::pair{0, 0}, std::pair{1, 2}, std::pair{3, 4}, std::pair{-2, -1}, std::pair{-9, 1}}) {
    const int r = start.first, c = start.second;
    CAPTURE(r);
    CAPTURE(c);
    const int rr = std::clamp(r < 0 ? r + 4 : r, 0, 2), cc = std::clamp(c < 0 ? c + 5 : c, 0, 2);
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(x[static_cast<std::size_t>((rr + i) * 5 + cc + j)]);
    check_values(slice_at(r, c), want);
    const Literal u = run2(*client,
                           [](const Tensor& v, const Tensor& s) {
                             return np::dynamic_update_slice(v, np::full({2, 3}, -1.0, kF64), {s[0], s[1]});
                           },
                           xl, Literal::vector<std::int32_t>({r, c}));
    std::vector<double> upd = x;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) upd[static_cast<std::size_t>((rr + i) * 5 + cc + j)] = -1;
    check_values(u, upd);
  }
  // Host starts, and the derivatives in the operand and the update.
  check_values(run(*client, [](const Tensor& v) { return np::dynamic_slice(v, {1, 1}, {1, 2}); }, xl), {6, 7});
  check_grad(*client, [](const Tensor& v) { return np::dynamic_slice(v * v, {1, 2}, {2, 2}); }, xl);
  check_grad(*client,
             [](const Tensor& v) {
               return np::dynamic_update_slice(v, np::slice(v, {0, 0}, {1, 2}) * 3.0, {2, 3});
             },
             xl);
  check_error(error_of(*client, [](const Tensor& v) { return np::dynamic_slice(v, {1}, {1, 1}); }, xl),
              StatusCode::kInvalidArgument, "dynamic_slice: 1 start indices for f64[4,5], which has rank 2");
  check_error(error_of(*client, [](const Tensor& v) { return np::dynamic_slice(v, {0, 0}, {5, 1}); }, xl),
              StatusCode::kInvalidArgument, "slice size 5 of dimension 0 does not fit");
  check_error(error_of(*client, [](const Tensor& v) { return np::dynamic_slice(v, {v[0][0], v[0][0]}, {1, 1}); }, xl),
              StatusCode::kInvalidArgument, "start index 0 must be a rank-0 integer, got f64[]");
  check_error(error_of(*client, [](const Tensor& v) { return np::dynamic_update_slice(v, v.reshape({20}), {0, 0}); }, xl),
              StatusCode::kInvalidArgument, "differ in rank");
}

TEST_CASE("frontend ops: cumsum, cumprod, cummax and cummin against loops, forward and reversed") {
  auto client = make_client();
  std::mt19937_64 rng(2);
  const std::vector<double> x = draw(rng, 3 * 7, -2, 2);
  const Literal xl = f64(x, {3, 7});
  // Along axis 1 (length 7: not a power of two), and axis 0.
  for (bool reverse : {false, true}) {
    CAPTURE(reverse);
    std::vector<double> sum1(21), prod1(21), max1(21), min1(21), sum0(21);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 7; ++j) {
        double s = 0, p = 1, mx = -INFINITY, mn = INFINITY;
        for (int k = 0; k < 7; ++k)
          if (reverse ? k >= j : k <= j) {
            const double v = x[static_cast<std::size_t>(i * 7 + k)];
            s += v;
            p *= v;
            mx = std::max(mx, v);
            mn = std::min(mn, v);
          }
        const auto e = static_cast<std::size_t>(i * 7 + j);
        sum1[e] = s;
        prod1[e] = p;
        max1[e] = mx;
        min1[e] = mn;
        double s0 = 0;
        for (int k = 0; k < 3; ++k)
          if (reverse ? k >= i : k <= i) s0 += x[static_cast<std::size_t>(k * 7 + j)];
        sum0[e] = s0;
      }
    Fn cs = [reverse](const Tensor& v) { return np::cumsum(v, 1, reverse); };
    Fn cp = [reverse](const Tensor& v) { return np::cumprod(v, -1, reverse); };
    check_values(run(*client, cs, xl), sum1);
    check_values(run(*client, cp, xl), prod1);
    check_values(run(*client, [reverse](const Tensor& v) { return np::cummax(v, 1, reverse); }, xl), max1);
    check_values(run(*client, [reverse](const Tensor& v) { return np::cummin(v, 1, reverse); }, xl), min1);
    check_values(run(*client, [reverse](const Tensor& v) { return np::cumsum(v, 0, reverse); }, xl), sum0);
    check_grad(*client, cs, xl);
    check_grad(*client, cp, xl);
  }
  // Booleans sum as s32; an axis of length 1 is unchanged.
  const Literal b = run(*client, [](const Tensor& v) { return np::cumsum(v > 0.0); }, f64({1, -1, 2, 3}, {4}));
  CHECK(b == Literal::vector<std::int32_t>({1, 1, 2, 3}));
  check_values(run(*client, [](const Tensor& v) { return np::cumprod(v, 0); }, f64({5}, {1})), {5});
  check_error(error_of(*client, [](const Tensor& v) { return np::cumsum(v, 2); }, xl),
              StatusCode::kInvalidArgument, "cumsum: axis 2 is out of range for an array of rank 2");
}

// ---- convolution and pooling ----------------------------------------------------------------

namespace {
// A direct 2-D convolution over NHWC lhs and HWIO kernel, by the definition of
// lax.conv_general_dilated: the lhs dilated by ld and padded, the kernel dilated by rd,
// windows every `s`, output channel o reading the input channels of its group.
struct Conv2d {
  std::int64_t n, h, w, c, kh, kw, o;
  std::int64_t s0 = 1, s1 = 1, ld = 1, rd = 1, groups = 1;
  std::int64_t lo0 = 0, hi0 = 0, lo1 = 0, hi1 = 0;
  std::int64_t oh() const { return ((h - 1) * ld + 1 + lo0 + hi0 - ((kh - 1) * rd + 1)) / s0 + 1; }
  std::int64_t ow() const { return ((w - 1) * ld + 1 + lo1 + hi1 - ((kw - 1) * rd + 1)) / s1 + 1; }
  std::vector<double> run(const std::vector<double>& x, const std::vector<double>& k) const {
    const std::int64_t cg = c / groups, og = o / groups;
    std::vector<double> out;
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t i = 0; i < oh(); ++i)
        for (std::int64_t j = 0; j < ow(); ++j)
          for (std::int64_t oc = 0; oc < o; ++oc) {
            double acc = 0;
            const std::int64_t g = oc / og;
            for (std::int64_t a = 0; a < kh; ++a)
              for (std::int64_t e = 0; e < kw; ++e) {
                const std::int64_t pi = i * s0 + a * rd - lo0, pj = j * s1 + e * rd - lo1;
                if (pi < 0 || pj < 0 || pi % ld || pj % ld || pi / ld >= h || pj / ld >= w) continue;
                for (std::int64_t ic = 0; ic < cg; ++ic)
                  acc += x[static_cast<std::size_t>(((b * h + pi / ld) * w + pj / ld) * c + g * cg + ic)] *
                         k[static_cast<std::size_t>(((a * kw + e) * cg + ic) * o + oc)];
              }
            out.push_back(acc);
          }
    return out;
  }
};
}  // namespace

TEST_CASE("frontend ops: conv_general_dilated against a direct loop in several configurations") {
  auto client = make_client();
  std::mt19937_64 rng(4);
  SUBCASE("NHWC and HWIO, stride 2, SAME padding") {
    Conv2d c{2, 5, 6, 3, 3, 2, 4};
    c.s0 = c.s1 = 2;
    // SAME by lax.padtype_to_pads: out = ceil(in / s), total = (out - 1) s + k - in.
    c.lo0 = 1, c.hi0 = 1;  // rows: out 3, total 2
    c.lo1 = 0, c.hi1 = 0;  // columns: out 3, total 0
    const auto x = draw(rng, 2 * 5 * 6 * 3), k = draw(rng, 3 * 2 * 3 * 4);
    Fn2 f = [](const Tensor& a, const Tensor& b) {
      return np::conv_general_dilated(a, b, {2, 2}, "SAME", {}, {}, {"NHWC", "HWIO", "NHWC"});
    };
    const Literal r = run2(*client, f, f64(x, {2, 5, 6, 3}), f64(k, {3, 2, 3, 4}));
    CHECK(r.shape() == Shape(kF64, {2, c.oh(), c.ow(), 4}));
    check_values(r, c.run(x, k));
    // Its derivatives in both operands.
    const Literal kl = f64(k, {3, 2, 3, 4}), xl = f64(x, {2, 5, 6, 3});
    check_grad(*client, [f, kl](const Tensor& a) { return f(a, np::array(kl)); }, xl);
    check_grad(*client, [f, xl](const Tensor& b) { return f(np::array(xl), b); }, kl);
  }
  SUBCASE("explicit padding, lhs and rhs dilation, two feature groups") {
    Conv2d c{1, 4, 3, 4, 2, 2, 6};
    c.ld = 2, c.rd = 2, c.groups = 2, c.lo0 = 1, c.hi0 = 0, c.lo1 = 2, c.hi1 = 1;
    const auto x = draw(rng, 4 * 3 * 4), k = draw(rng, 2 * 2 * 2 * 6);
    Fn2 f = [](const Tensor& a, const Tensor& b) {
      return np::conv_general_dilated(a, b, {}, std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 0}, {2, 1}},
                                      {2, 2}, {2, 2}, {"NHWC", "HWIO", "NHWC"}, 2);
    };
    const Literal xl = f64(x, {1, 4, 3, 4}), kl = f64(k, {2, 2, 2, 6});
    const Literal r = run2(*client, f, xl, kl);
    CHECK(r.shape() == Shape(kF64, {1, c.oh(), c.ow(), 6}));
    check_values(r, c.run(x, k));
    check_grad(*client, [f, kl](const Tensor& a) { return f(a, np::array(kl)); }, xl);
  }
  SUBCASE("JAX's default layout NCHW, OIHW, NCHW with VALID padding") {
    Conv2d c{2, 4, 5, 2, 2, 3, 3};
    const auto x = draw(rng, 2 * 4 * 5 * 2), k = draw(rng, 2 * 3 * 2 * 3);
    // The same data laid out NCHW and OIHW for the call; the oracle reads NHWC and HWIO.
    std::vector<double> x_nchw, k_oihw;
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t ch = 0; ch < 2; ++ch)
        for (std::int64_t i = 0; i < 4; ++i)
          for (std::int64_t j = 0; j < 5; ++j) x_nchw.push_back(x[static_cast<std::size_t>(((b * 4 + i) * 5 + j) * 2 + ch)]);
    for (std::int64_t oc = 0; oc < 3; ++oc)
      for (std::int64_t ic = 0; ic < 2; ++ic)
        for (std::int64_t a = 0; a < 2; ++a)
          for (std::int64_t e = 0; e < 3; ++e) k_oihw.push_back(k[static_cast<std::size_t>(((a * 3 + e) * 2 + ic) * 3 + oc)]);
    const Literal r = run2(*client,
                           [](const Tensor& a, const Tensor& b) { return np::conv_general_dilated(a, b, {1, 1}, "VALID"); },
                           f64(x_nchw, {2, 2, 4, 5}), f64(k_oihw, {3, 2, 2, 3}));
    CHECK(r.shape() == Shape(kF64, {2, 3, c.oh(), c.ow()}));
    const std::vector<double> want_nhwc = c.run(x, k);
    std::vector<double> want;
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t oc = 0; oc < 3; ++oc)
        for (std::int64_t i = 0; i < c.oh(); ++i)
          for (std::int64_t j = 0; j < c.ow(); ++j)
            want.push_back(want_nhwc[static_cast<std::size_t>(((b * c.oh() + i) * c.ow() + j) * 3 + oc)]);
    check_values(r, want);
  }
  SUBCASE("bad dimension numbers, padding and ranks") {
    const Literal x = f64(draw(rng, 16), {1, 4, 4, 1}), k = f64(draw(rng, 4), {2, 2, 1, 1});
    auto conv = [&](Fn2 f) { return jit(*client, f)(x, k).status(); };
    check_error(conv([](const Tensor& a, const Tensor& b) {
                  return np::conv_general_dilated(a, b, {1, 1}, "SAME", {}, {}, {"NHWC", "HWIO", "NHW"});
                }),
                StatusCode::kInvalidArgument, "'NHW' has 3 letters for operands of rank 4");
    check_error(conv([](const Tensor& a, const Tensor& b) {
                  return np::conv_general_dilated(a, b, {1, 1}, "SAME", {}, {}, {"NHWC", "HWIO", "NHXC"});
                }),
                StatusCode::kInvalidArgument, "the spatial letters of 'NHXC' and 'HWIO' differ");
    check_error(conv([](const Tensor& a, const Tensor& b) {
                  return np::conv_general_dilated(a, b, {1, 1}, "FULL", {}, {}, {"NHWC", "HWIO", "NHWC"});
                }),
                StatusCode::kInvalidArgument, "padding 'FULL' is not SAME, VALID");
    check_error(conv([](const Tensor& a, const Tensor& b) {
                  return np::conv_general_dilated(a, b, {1}, "SAME", {}, {}, {"NHWC", "HWIO", "NHWC"});
                }),
                StatusCode::kInvalidArgument, "1 window strides for 2 spatial dimension(s)");
    check_error(conv([](const Tensor& a, const Tensor& b) {
                  return np::conv_general_dilated(a, b.reshape({4}), {1, 1}, "SAME");
                }),
                StatusCode::kInvalidArgument, "must have one rank");
  }
}

TEST_CASE("frontend ops: max_pool and avg_pool against loops, with their derivatives") {
  auto client = make_client();
  std::mt19937_64 rng(5);
  // NHWC 2 x 5 x 4 x 2, 2 x 3 windows, strides (2, 1), SAME: rows out 3 (total 1: 0 low,
  // 1 high), columns out 4 (total 2: 1 low, 1 high).
  const std::int64_t n = 2, h = 5, w = 4, c = 2, kh = 2, kw = 3, oh = 3, ow = 4;
  const std::vector<double> x = draw(rng, static_cast<std::size_t>(n * h * w * c));
  std::vector<double> mx, avg;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j)
        for (std::int64_t ch = 0; ch < c; ++ch) {
          double m = -INFINITY, s = 0;
          for (std::int64_t a = 0; a < kh; ++a)
            for (std::int64_t e = 0; e < kw; ++e) {
              const std::int64_t r = i * 2 + a, q = j + e - 1;
              if (r < 0 || r >= h || q < 0 || q >= w) continue;
              const double v = x[static_cast<std::size_t>(((b * h + r) * w + q) * c + ch)];
              m = std::max(m, v);
              s += v;
            }
          mx.push_back(m);
          avg.push_back(s / (kh * kw));
        }
  const Literal xl = f64(x, {n, h, w, c});
  Fn maxp = [](const Tensor& v) { return np::max_pool(v, {2, 3}, {2, 1}, "SAME"); };
  Fn avgp = [](const Tensor& v) { return np::avg_pool(v, {2, 3}, {2, 1}, "SAME"); };
  const Literal m = run(*client, maxp, xl);
  CHECK(m.shape() == Shape(kF64, {n, oh, ow, c}));
  check_values(m, mx);
  check_values(run(*client, avgp, xl), avg);
  check_grad(*client, maxp, xl);
  check_grad(*client, avgp, xl);
  // VALID with the default stride 1, unbatched (spatial..., features).
  const Literal v = run(*client, [](const Tensor& a) { return np::max_pool(a, {2}); }, f64({1, 5, 3, 2, 4, 0}, {3, 2}));
  check_values(v, {3, 5, 4, 2});
  check_error(error_of(*client, [](const Tensor& a) { return np::max_pool(a, {2, 2}); }, f64({1, 2}, {2})),
              StatusCode::kInvalidArgument, "max_pool: a window of 2 dimension(s) needs an array of rank at least 3");
  check_error(error_of(*client, [](const Tensor& a) { return np::avg_pool(a, {2}, {0}); }, f64({1, 2}, {2, 1})),
              StatusCode::kInvalidArgument, "avg_pool: strides must be at least 1, got 0");
}

// ---- take, at[], sort ----------------------------------------------------------------------

TEST_CASE("frontend ops: take gathers along an axis with negative, filled and clipped indices") {
  auto client = make_client();
  std::vector<double> x(24);
  std::iota(x.begin(), x.end(), 0.0);
  const Literal xl = f64(x, {2, 4, 3});
  const std::vector<std::int32_t> idx = {3, -1, 0, 7, -5, 1};  // 7 and -5 are out of range
  const Literal il = s32(idx, {3, 2});
  Fn2 fill = [](const Tensor& v, const Tensor& i) { return np::take(v, i, 1); };
  Fn2 clip = [](const Tensor& v, const Tensor& i) { return np::take(v, i, 1, np::TakeMode::kClip); };
  const Literal rf = run2(*client, fill, xl, il), rc = run2(*client, clip, xl, il);
  CHECK(rf.shape() == Shape(kF64, {2, 3, 2, 3}));
  std::vector<double> want_fill, want_clip;
  for (int a = 0; a < 2; ++a)
    for (std::int32_t i : idx)
      for (int b = 0; b < 3; ++b) {
        const int k = i < 0 ? i + 4 : i;
        want_fill.push_back(k < 0 || k >= 4 ? std::nan("") : x[static_cast<std::size_t>(a * 12 + k * 3 + b)]);
        want_clip.push_back(x[static_cast<std::size_t>(a * 12 + std::clamp(k, 0, 3) * 3 + b)]);
      }
  check_values(rf, want_fill);
  check_values(rc, want_clip);
  // Host indices along the last axis; integer arrays fill with their lowest value.
  check_values(run(*client, [](const Tensor& v) { return np::take(v, {2, 0}, -1); }, f64({5, 6, 7}, {3})), {7, 5});
  const Literal ints = run(*client, [](const Tensor& v) { return np::take(v, {1, 3}, 0); },
                           Literal::vector<std::int32_t>({4, 5}));
  CHECK(ints == Literal::vector<std::int32_t>({5, std::numeric_limits<std::int32_t>::min()}));
  // The derivative in x (repeated indices add up).
  check_grad(*client, [](const Tensor& v) { return np::take(v, {1, 1, -1, 0}, 1); }, xl);
  check_error(error_of(*client, [](const Tensor& v) { return np::take(v, v, 0); }, xl),
              StatusCode::kInvalidArgument, "take: the indices must be integers");
  check_error(error_of(*client, [](const Tensor& v) { return np::take(v, {0}, 3); }, xl),
              StatusCode::kInvalidArgument, "take: axis 3 is out of range for an array of rank 3");
}

TEST_CASE("frontend ops: at[].set, add, multiply, min and max against a loop") {
  auto client = make_client();
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};  // 4 x 2
  const Literal xl = f64(x, {4, 2});
  // Rows 1 and 1 again, -1 (row 3), and 9 (out of range: dropped).
  const std::vector<std::int32_t> idx = {1, 1, -1, 9};
  const std::vector<double> v = {10, 20, 30, 40, 50, 60, 70, 80};  // 4 x 2, one row per index
  auto apply = [&](int kind) {
    std::vector<double> r = x;
    for (std::size_t e = 0; e < idx.size(); ++e) {
      const int row = idx[e] < 0 ? idx[e] + 4 : idx[e];
      if (row < 0 || row >= 4) continue;
      for (std::size_t j = 0; j < 2; ++j) {
        double& o = r[static_cast<std::size_t>(row) * 2 + j];
        const double u = v[e * 2 + j];
        o = kind == 0 ? u : kind == 1 ? o + u : kind == 2 ? o * u : kind == 3 ? std::min(o, u) : std::max(o, u);
      }
    }
    return r;
  };
  const Literal vl = f64(v, {4, 2}), il = s32(idx, {4});
  auto with = [&](std::function<Tensor(const np::IndexUpdate&, const Tensor&)> op) {
    return run2(*client, [op, il](const Tensor& a, const Tensor& b) { return op(np::at(a)[np::array(il)], b); }, xl, vl);
  };
  check_values(with([](const np::IndexUpdate& u, const Tensor& b) { return u.add(b); }), apply(1));
  check_values(with([](const np::IndexUpdate& u, const Tensor& b) { return u.multiply(b); }), apply(2));
  check_values(with([](const np::IndexUpdate& u, const Tensor& b) { return u.min(b); }), apply(3));
  check_values(with([](const np::IndexUpdate& u, const Tensor& b) { return u.max(b); }), apply(4));
  // set with distinct indices (a repeated index keeps one unspecified update, as in JAX).
  const Literal set = run(*client, [](const Tensor& a) { return np::at(a)[-1].set(0.5); }, xl);
  check_values(set, {1, 2, 3, 4, 5, 6, 0.5, 0.5});
  const Literal rows = run(*client, [](const Tensor& a) { return np::at(a)[2].add(np::array(Literal::vector<double>({1, 2}))); }, xl);
  check_values(rows, {1, 2, 3, 4, 6, 8, 7, 8});
  // Derivatives: add in both operands, set in the operand (the replaced row gets 0) and in
  // the values.
  check_grad(*client, [vl, il](const Tensor& a) { return np::at(a)[np::array(il)].add(np::array(vl) * a); }, xl);
  check_grad(*client, [xl, il](const Tensor& b) { return np::at(np::array(xl))[np::array(il)].add(b * b); }, vl);
  check_grad(*client, [](const Tensor& a) { return np::at(a * a)[0].set(a[3] * 2.0); }, xl);
  check_error(error_of(*client, [](const Tensor& a) { return np::at(a)[a].set(1.0); }, xl),
              StatusCode::kInvalidArgument, "at[].set: the indices must be integers");
  check_error(error_of(*client, [](const Tensor& a) { return np::at(a)[0].add(np::zeros({3}, kF64)); }, xl),
              StatusCode::kInvalidArgument, "at[].add: values f64[3] do not broadcast to the updated f64[2]");
}

TEST_CASE("frontend ops: sort, argsort and top_k against std::stable_sort") {
  auto client = make_client();
  const double nan = std::nan("");
  // Ties, a NaN, and two rows.
  const std::vector<double> x = {3, 1, nan, 2, 1, -4, 0.5, 0.5, 7, -1, 0.5, 2};
  const Literal xl = f64(x, {2, 6});
  std::vector<double> sorted, sorted_desc;
  std::vector<std::int32_t> order, order_desc;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::int32_t> p(6);
    std::iota(p.begin(), p.end(), 0);
    auto key = [&](std::int32_t i) { return x[static_cast<std::size_t>(r * 6 + i)]; };
    // NaN after everything else.
    auto less = [&](std::int32_t a, std::int32_t b) {
      const double u = key(a), v = key(b);
      if (std::isnan(u)) return false;
      return std::isnan(v) || u < v;
    };
    std::vector<std::int32_t> up = p, down = p;
    std::stable_sort(up.begin(), up.end(), less);
    std::stable_sort(down.begin(), down.end(), [&](std::int32_t a, std::int32_t b) { return less(b, a); });
    for (std::int32_t i : up) {
      order.push_back(i);
      sorted.push_back(key(i));
    }
    for (std::int32_t i : down) order_desc.push_back(i);
    for (auto it = up.rbegin(); it != up.rend(); ++it) sorted_desc.push_back(key(*it));
  }
  check_values(run(*client, [](const Tensor& v) { return np::sort(v); }, xl), sorted);
  check_values(run(*client, [](const Tensor& v) { return np::sort(v, 1, true); }, xl), sorted_desc);
  CHECK(values_of<std::int32_t>(run(*client, [](const Tensor& v) { return np::argsort(v); }, xl)) == order);
  CHECK(values_of<std::int32_t>(run(*client, [](const Tensor& v) { return np::argsort(v, -1, true); }, xl)) ==
        order_desc);
  // Along axis 0 of the transpose: the same orders.
  CHECK(values_of<std::int32_t>(run(*client, [](const Tensor& v) { return np::argsort(v.T(), 0).T(); }, xl)) == order);
  // top_k: the k largest of each row, ties by lower index (the NaN-free part of the data).
  const std::vector<double> y = {3, 1, 5, 3, 0, 9, -2, 9, 4, 1};
  const Literal yl = f64(y, {2, 5});
  const Literal vals = run(*client, [](const Tensor& v) { return np::top_k(v, 3).first; }, yl);
  const Literal idxs = run(*client, [](const Tensor& v) { return np::top_k(v, 3).second; }, yl);
  std::vector<double> want_vals;
  std::vector<std::int32_t> want_idx;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::int32_t> p(5);
    std::iota(p.begin(), p.end(), 0);
    std::stable_sort(p.begin(), p.end(), [&](std::int32_t a, std::int32_t b) {
      return y[static_cast<std::size_t>(r * 5 + a)] > y[static_cast<std::size_t>(r * 5 + b)];
    });
    for (int k = 0; k < 3; ++k) {
      want_idx.push_back(p[static_cast<std::size_t>(k)]);
      want_vals.push_back(y[static_cast<std::size_t>(r * 5 + p[static_cast<std::size_t>(k)])]);
    }
  }
  check_values(vals, want_vals);
  CHECK(values_of<std::int32_t>(idxs) == want_idx);
  // Derivatives of sort and top_k (distinct values: the permutation is locally constant).
  std::mt19937_64 rng(6);
  const Literal d = f64(draw(rng, 12), {3, 4});
  check_grad(*client, [](const Tensor& v) { return np::sort(v, 0); }, d);
  check_grad(*client, [](const Tensor& v) { return np::sort(v * v, 1, true); }, d);
  check_grad(*client, [](const Tensor& v) { return np::top_k(v, 2).first; }, d);
  check_error(error_of(*client, [](const Tensor& v) { return np::top_k(v, 6).first; }, yl),
              StatusCode::kInvalidArgument, "top_k: k = 6 is outside [0, 5]");
  check_error(error_of(*client, [](const Tensor& v) { return np::sort(v, 2); }, yl),
              StatusCode::kInvalidArgument, "sort: axis 2 is out of range for an array of rank 2");
}

// ---- random ---------------------------------------------------------------------------------

namespace {
// Threefry2x32 with 20 rounds, written from Salmon et al. (SC'11) and Random123's
// threefry.h: key schedule k0, k1, k0 ^ k1 ^ 0x1BD11BDA, rotations R_32x2.
std::pair<std::uint32_t, std::uint32_t> threefry(std::uint32_t k0, std::uint32_t k1, std::uint32_t x0,
                                                 std::uint32_t x1) {
  const std::uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  x0 += ks[0];
  x1 += ks[1];
  for (int round = 0; round < 20; ++round) {
    x0 += x1;
    const int r = rot[round % 8];
    x1 = (x1 << r) | (x1 >> (32 - r));
    x1 ^= x0;
    if (round % 4 == 3) {
      const int inject = round / 4 + 1;
      x0 += ks[inject % 3];
      x1 += ks[(inject + 1) % 3] + static_cast<std::uint32_t>(inject);
    }
  }
  return {x0, x1};
}
}  // namespace

TEST_CASE("frontend ops: threefry keys, split, bits, uniform and normal follow JAX's algorithm") {
  // The oracle first, against Random123's known answers (kat_vectors, threefry2x32_20).
  CHECK(threefry(0, 0, 0, 0) == std::pair<std::uint32_t, std::uint32_t>{0x6b200159u, 0x99ba4efeu});
  CHECK(threefry(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu) ==
        std::pair<std::uint32_t, std::uint32_t>{0x1cb996fcu, 0xbb002be7u});
  CHECK(threefry(0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u) ==
        std::pair<std::uint32_t, std::uint32_t>{0xc4923a9cu, 0x483df7a0u});
  auto client = make_client();
  const std::uint64_t seed = 42;
  Fn key_of = [](const Tensor& s) { return random::prng_key(42) + s; };  // s: a u32 zero
  const Literal zero = Literal::scalar<std::uint32_t>(0);
  CHECK(values_of<std::uint32_t>(run(*client, key_of, zero)) == std::vector<std::uint32_t>{0, 42});
  CHECK(values_of<std::uint32_t>(run(*client, [](const Tensor& s) { return random::prng_key(0x100000007ull) + s; }, zero)) ==
        std::vector<std::uint32_t>{1, 7});
  // split: row j is threefry(key, (0, j)).
  const Literal keys = run(*client, [](const Tensor& s) { return random::split(random::prng_key(42) + s, 3); }, zero);
  CHECK(keys.shape() == Shape(kU32, {3, 2}));
  for (std::uint32_t j = 0; j < 3; ++j) {
    const auto words = threefry(0, static_cast<std::uint32_t>(seed), 0, j);
    CHECK(keys.data<std::uint32_t>()[j * 2] == words.first);
    CHECK(keys.data<std::uint32_t>()[j * 2 + 1] == words.second);
  }
  // bits and uniform of a 2 x 3 block: element i is the XOR of threefry(key, (0, i)); f32
  // keeps the top 23 bits as the mantissa of a number in [1, 2), minus 1, then scaled.
  const Literal bits = run(*client, [](const Tensor& s) { return random::bits(random::prng_key(42) + s, {2, 3}); }, zero);
  const Literal u = run(*client, [](const Tensor& s) { return random::uniform(random::prng_key(42) + s, {2, 3}); }, zero);
  const Literal u2 = run(*client, [](const Tensor& s) {
    return random::uniform(random::prng_key(42) + s, {2, 3}, kF32, -2.0, 3.0);
  }, zero);
  const Literal u64 = run(*client, [](const Tensor& s) { return random::uniform(random::prng_key(42) + s, {5}, kF64); }, zero);
  for (std::uint32_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    const auto words = threefry(0, 42, 0, i);
    const std::uint32_t a = words.first, b = words.second;
    CHECK(bits.data<std::uint32_t>()[i] == (a ^ b));
    const std::uint32_t fb = ((a ^ b) >> 9) | 0x3F800000u;
    float f;
    std::memcpy(&f, &fb, 4);
    CHECK(u.data<float>()[i] == std::max(0.f, (f - 1.f) * 1.f + 0.f));
    CHECK(u2.data<float>()[i] == std::max(-2.f, (f - 1.f) * 5.f + -2.f));
    if (i < 5) {
      const std::uint64_t db = ((((std::uint64_t{a} << 32) | b)) >> 12) | 0x3FF0000000000000ull;
      double d;
      std::memcpy(&d, &db, 8);
      CHECK(u64.data<double>()[i] == d - 1.0);
    }
  }
  // normal: sqrt(2) erfinv(v) with v uniform in (nextafter(-1, 0), 1), so erf(z / sqrt 2) is v.
  const Literal z = run(*client, [](const Tensor& s) { return random::normal(random::prng_key(42) + s, {5}, kF64); }, zero);
  const double lo = std::nextafter(-1.0, 0.0);
  for (std::size_t i = 0; i < 5; ++i) {
    const double v = std::max(lo, u64.data<double>()[i] * (1.0 - lo) + lo);
    CHECK(std::erf(z.data<double>()[i] / std::sqrt(2.0)) == doctest::Approx(v).epsilon(1e-12).scale(1.0));
  }
  // Many draws: uniform's mean 1/2 and variance 1/12, normal's 0 and 1 (4.5 sigma bounds).
  const Literal many_u = run(*client, [](const Tensor& s) { return random::uniform(random::split(random::prng_key(7) + s)[1], {20000}); }, zero);
  const Literal many_z = run(*client, [](const Tensor& s) { return random::normal(random::fold_in(random::prng_key(7) + s, 3), {20000}); }, zero);
  double mu = 0, mz = 0, vu = 0, vz = 0;
  for (float a : many_u.data<float>()) {
    CHECK((a >= 0.f && a < 1.f));
    mu += a / 20000.0;
    vu += (a - 0.5) * (a - 0.5) / 20000.0;
  }
  for (float a : many_z.data<float>()) {
    mz += a / 20000.0;
    vz += a * a / 20000.0;
  }
  CHECK(std::abs(mu - 0.5) < 4.5 * std::sqrt(1.0 / 12 / 20000));
  CHECK(std::abs(vu - 1.0 / 12) < 0.005);
  CHECK(std::abs(mz) < 4.5 / std::sqrt(20000.0));
  CHECK(std::abs(vz - 1.0) < 0.05);
  // fold_in(key, d) is threefry(key, (0, d)).
  const Literal folded = run(*client, [](const Tensor& s) { return random::fold_in(random::prng_key(42) + s, 5); }, zero);
  const auto fold_words = threefry(0, 42, 0, 5);
  CHECK(values_of<std::uint32_t>(folded) == std::vector<std::uint32_t>{fold_words.first, fold_words.second});
  // Keys are u32[2].
  check_error(error_of(*client, [](const Tensor& k) { return random::uniform(k, {2}); }, Literal::vector<std::int32_t>({1, 2})),
              StatusCode::kInvalidArgument, "uniform: a key is a u32[2] tensor");
  check_error(error_of(*client, [](const Tensor& s) { return random::normal(random::prng_key(1) + s, {2}, kS32); }, zero),
              StatusCode::kInvalidArgument, "normal: dtype must be f32 or f64");
}

}  // namespace frontend_ops_test
