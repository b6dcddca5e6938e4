// Tests of the front end: Tensor's numpy semantics, jit and its signature cache, and the
// function transformations composed with each other and with jit, on the CPU client.
// Oracles: closed forms, central finite differences, the reference interpreter on the traced
// graph, and the same function run per batch element.

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "test_util.hpp"

namespace frontend_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

template <class T>
struct Layer {
  T w, b;
};

template <class T>
struct Mlp {
  Layer<T> hidden, out;
};

std::unique_ptr<cpu::Client<cpu::InlineExecutor>> make_client() {
  return cpu::Client<cpu::InlineExecutor>::create().value();
}

Literal matrix(std::vector<double> v, std::int64_t rows, std::int64_t cols) {
  return Literal::from_span<double>(v, {rows, cols}).value();
}

double scalar(const Literal& l) { return l.data<double>()[0]; }

void check_close(const Literal& a, const Literal& b, double tol = 1e-12) {
  REQUIRE(a.shape() == b.shape());
  for (std::size_t i = 0; i < a.data<double>().size(); ++i)
    CHECK(a.data<double>()[i] == doctest::Approx(b.data<double>()[i]).epsilon(tol).scale(1.0));
}

}  // namespace

TEST_CASE("frontend: the walkthrough's autodiff example gives its exact values") {
  auto client = make_client();
  auto f = [](Tensor x) { return -(sin(x) * 2.0) + x; };
  auto jf = jit(client, f);
  auto df = jit(client, grad(f));
  CHECK(scalar(jf(3.0).value()) == 2.7177599838802657);
  CHECK(scalar(df(3.0).value()) == 2.979984993200891);
}

TEST_CASE("frontend: numpy broadcasting, promotion and weak scalars") {
  auto client = make_client();
  SUBCASE("broadcasting") {
    auto f = jit(client, [](Tensor a, Tensor b) { return a + b; });
    Literal r = f(Literal::vector<float>({1, 2, 3}),
                  Literal::from_span<float>(std::vector<float>{10, 20}, {2, 1}).value())
                    .value();
    CHECK(r ==
          Literal::from_span<float>(std::vector<float>{11, 12, 13, 21, 22, 23}, {2, 3}).value());
    StatusOr<Literal> bad = f(Literal::vector<float>({1, 2, 3}), Literal::vector<float>({1, 2}));
    CHECK(bad.status().code() == StatusCode::kInvalidArgument);
    CHECK(bad.status().message().find("f32[3] and f32[2] do not broadcast") != std::string::npos);
  }
  SUBCASE("weak scalars keep the array's type") {
    auto f = jit(client, [](Tensor x) { return std::make_tuple(x * 2.0, 2 * x, x / 2, x + 1.5f); });
    auto [a, b, c, d] = f(Literal::vector<float>({1, 2})).value();
    CHECK(a.dtype() == DType::kF32);
    CHECK(b.dtype() == DType::kF32);
    CHECK(c.dtype() == DType::kF32);
    CHECK(a == Literal::vector<float>({2, 4}));
    CHECK(c == Literal::vector<float>({0.5f, 1}));
    CHECK(d == Literal::vector<float>({2.5f, 3.5f}));
    auto g = jit(client, [](Tensor x) { return std::make_pair(x * 2.0, x * 3); });
    auto [fi, ii] = g(Literal::vector<std::int32_t>({1, 2})).value();
    CHECK(fi == Literal::vector<float>({2, 4}));  // an int array times a float literal is f32
    CHECK(ii == Literal::vector<std::int32_t>({3, 6}));
  }
  SUBCASE("promotion between arrays") {
    CHECK(promote_types(DType::kS32, DType::kF16) == DType::kF16);
    CHECK(promote_types(DType::kU8, DType::kS8) == DType::kS16);
    CHECK(promote_types(DType::kBF16, DType::kF16) == DType::kF32);
    CHECK(promote_types(DType::kC64, DType::kF64) == DType::kC128);
    CHECK(promote_types(DType::kPred, DType::kU32) == DType::kU32);
    // JAX's lattice (docs/type_promotion.rst): u8 -> f* and i8 -> f*, so u64 meets a signed
    // integer of any width at the weak float, which resolves to the default float, f32.
    for (DType s : {DType::kS8, DType::kS16, DType::kS32, DType::kS64}) {
      CHECK(promote_types(DType::kU64, s) == DType::kF32);
      CHECK(promote_types(s, DType::kU64) == DType::kF32);
    }
    CHECK(promote_types(DType::kU32, DType::kS64) == DType::kS64);
    CHECK(promote_types(DType::kU32, DType::kS8) == DType::kS64);
    CHECK(promote_types(DType::kU64, DType::kU8) == DType::kU64);
    // Joined all at once, integers sit below every float: u64, s8 and f16 give f16 (f* < f2),
    // u64, s8 and bf16 give bf16, and with c64 it is c64.
    const std::vector<DType> ints_and_half = {DType::kU64, DType::kS8, DType::kF16};
    CHECK(promote_types(ints_and_half) == DType::kF16);
    const std::vector<DType> ints_and_bf16 = {DType::kS8, DType::kBF16, DType::kU64};
    CHECK(promote_types(ints_and_bf16) == DType::kBF16);
    const std::vector<DType> ints_and_c64 = {DType::kU64, DType::kS64, DType::kC64};
    CHECK(promote_types(ints_and_c64) == DType::kC64);
    const std::vector<DType> only_ints = {DType::kU8, DType::kS8, DType::kU64};
    CHECK(promote_types(only_ints) == DType::kF32);
    // Traced: u64 + s32 is an f32 sum of the converted values.
    auto mixed = jit(client, [](Tensor a, Tensor b) { return a + b; });
    Literal sum = mixed(Literal::vector<std::uint64_t>({1, std::uint64_t{1} << 40}),
                        Literal::vector<std::int32_t>({-3, 5}))
                      .value();
    CHECK(sum == Literal::vector<float>({-2.0f, 1099511627776.0f + 5.0f}));
    auto three = jit(client, [](Tensor a, Tensor b, Tensor c) { return where(a > 0, b, c) + a; });
    CHECK(three(Literal::vector<std::uint64_t>({1}), Literal::vector<std::int8_t>({2}),
                Literal::vector<f16>({f16(0.5f)}))
              .value()
              .dtype() == DType::kF16);
    auto f = jit(client, [](Tensor a, Tensor b) { return a * b; });
    Literal r =
        f(Literal::vector<std::int32_t>({2, 3}), Literal::vector<double>({0.5, 0.25})).value();
    CHECK(r == Literal::vector<double>({1.0, 0.75}));
  }
}

TEST_CASE("frontend: array functions agree with closed forms") {
  auto client = make_client();
  const Literal m = matrix({1, -2, 3, 4, 5, -6}, 2, 3);
  auto f = jit(client, [](Tensor x) {
    return std::make_tuple(
        sum(x), sum(x, {0}), mean(x, {1}, true), max(x, {1}), min(x), prod(x, {0}), argmax(x, 1),
        x.T(), x.reshape({3, -1}), x[1], concatenate({x, x}, 1), stack({x, x}),
        where(x > 0.0, x, 0.0), clip(x, -1.0, 2.0), matmul(x, x.T()), slice(x, {0, 1}, {2, 3}),
        expand_dims(x, 0), squeeze(expand_dims(x, 0)), abs(x), maximum(x, 0.0), remainder(x, 4.0));
  });
  auto r = f(m).value();
  CHECK(scalar(std::get<0>(r)) == 5);
  CHECK(std::get<1>(r) == Literal::vector<double>({5, 3, -3}));
  CHECK(std::get<2>(r) == matrix({2.0 / 3, 1}, 2, 1));
  CHECK(std::get<3>(r) == Literal::vector<double>({3, 5}));
  CHECK(scalar(std::get<4>(r)) == -6);
  CHECK(std::get<5>(r) == Literal::vector<double>({4, -10, -18}));
  CHECK(std::get<6>(r) == Literal::vector<std::int32_t>({2, 1}));
  CHECK(std::get<7>(r) == matrix({1, 4, -2, 5, 3, -6}, 3, 2));
  CHECK(std::get<8>(r) == matrix({1, -2, 3, 4, 5, -6}, 3, 2));
  CHECK(std::get<9>(r) == Literal::vector<double>({4, 5, -6}));
  CHECK(std::get<10>(r) == matrix({1, -2, 3, 1, -2, 3, 4, 5, -6, 4, 5, -6}, 2, 6));
  CHECK(std::get<11>(r).dims()[0] == 2);
  CHECK(std::get<12>(r) == matrix({1, 0, 3, 4, 5, 0}, 2, 3));
  CHECK(std::get<13>(r) == matrix({1, -1, 2, 2, 2, -1}, 2, 3));
  CHECK(std::get<14>(r) == matrix({14, -24, -24, 77}, 2, 2));
  CHECK(std::get<15>(r) == matrix({-2, 3, 5, -6}, 2, 2));
  CHECK(std::get<16>(r).dims().size() == 3);
  CHECK(std::get<17>(r) == m);
  CHECK(std::get<18>(r) == matrix({1, 2, 3, 4, 5, 6}, 2, 3));
  CHECK(std::get<19>(r) == matrix({1, 0, 3, 4, 5, 0}, 2, 3));
  CHECK(std::get<20>(r) == matrix({1, 2, 3, 0, 1, 2}, 2, 3));  // numpy: the divisor's sign
}

TEST_CASE("frontend: jit caches per signature and retraces for a new one") {
  auto client = make_client();
  int calls = 0;
  auto f = jit(client, [&](Tensor x) {
    ++calls;
    return x * x;
  });
  CHECK(f(Literal::vector<float>({1, 2})).value() == Literal::vector<float>({1, 4}));
  CHECK(f(Literal::vector<float>({3, 4})).value() == Literal::vector<float>({9, 16}));
  CHECK(calls == 1);
  CHECK(f.cache_size() == 1);
  // Another dtype, another rank: new entries, not errors.
  CHECK(f(Literal::vector<double>({3})).value() == Literal::vector<double>({9}));
  CHECK(f(matrix({1, 2, 3, 4}, 2, 2)).value() == matrix({1, 4, 9, 16}, 2, 2));
  CHECK(f(2.0f).value() == Literal::scalar(4.0f));
  CHECK(calls == 4);
  CHECK(f.cache_size() == 4);
  CHECK(f(Literal::vector<float>({5})).value() == Literal::vector<float>({25}));
  CHECK(calls == 5);
  CHECK(f(Literal::vector<float>({1, 2})).value() == Literal::vector<float>({1, 4}));
  CHECK(calls == 5);
  CHECK(f.trace_count() == 5);
}

TEST_CASE("frontend: jit keeps at most cache_capacity signatures, least recently used out first") {
  auto client = make_client();
  int calls = 0;
  auto f = jit(
      client,
      [&](Tensor x) {
        ++calls;
        return x + 1.0f;
      },
      JitOptions{.name = "bounded", .cache_capacity = 2});
  auto call = [&](std::int64_t n) {  // f on n ones; the closed form is n twos
    return f(Literal::from_span<float>(std::vector<float>(static_cast<std::size_t>(n), 1.0f), {n}).value()).value() ==
           Literal::from_span<float>(std::vector<float>(static_cast<std::size_t>(n), 2.0f), {n}).value();
  };
  CHECK(call(1));
  CHECK(call(2));
  CHECK(call(1));  // a hit: 1 is now more recent than 2
  CHECK(call(3));  // a third signature: 2 goes
  CHECK(f.cache_stats() == CacheStats{.hits = 1, .misses = 3, .evictions = 1, .size = 2, .capacity = 2});
  CHECK(call(1));  // still cached
  CHECK(calls == 3);
  CHECK(call(2));  // traced again
  CHECK(calls == 4);
  CHECK(f.cache_stats() == CacheStats{.hits = 2, .misses = 4, .evictions = 2, .size = 2, .capacity = 2});
  CHECK(f.cache_size() == 2);
  f.clear();
  CHECK(f.cache_size() == 0);
  CHECK(f.cache_stats() == CacheStats{.hits = 2, .misses = 4, .evictions = 2, .size = 0, .capacity = 2});
  CHECK(call(2));
  CHECK(calls == 5);
  // The default capacity, and 0 taken as 1.
  auto g = jit(client, [](Tensor x) { return x; });
  CHECK(g.cache_stats().capacity == 64);
  auto h = jit(client, [](Tensor x) { return x * 2.0f; }, JitOptions{.cache_capacity = 0});
  CHECK(h(1.0f).value() == Literal::scalar(2.0f));
  CHECK(h(2.0).value() == Literal::scalar(4.0));
  CHECK(h.cache_stats() == CacheStats{.hits = 0, .misses = 2, .evictions = 1, .size = 1, .capacity = 1});

  // Signatures inserted one after another with no hit between them: the oldest goes, not the
  // newest (A B C D C: C is still cached at the end).
  calls = 0;
  f.clear();
  CHECK(call(11));
  CHECK(call(12));
  CHECK(call(13));  // 11 goes
  CHECK(call(14));  // 12 goes
  CHECK(call(13));  // a hit
  CHECK(calls == 4);
  CHECK(call(12));  // 14 is older than 13 now: it goes
  CHECK(call(13));
  CHECK(calls == 5);

  // A huge capacity is bounded; a moved-from jit refuses calls instead of crashing.
  auto big = jit(client, [](Tensor x) { return x; }, JitOptions{.cache_capacity = std::size_t{1} << 40});
  CHECK(big.cache_stats().capacity == static_cast<std::int64_t>(JitOptions::kMaxCacheCapacity));
  auto moved = std::move(big);
  CHECK(moved(1.0f).value() == Literal::scalar(1.0f));
  const auto refused = big(1.0f);  // NOLINT(bugprone-use-after-move): the point of the check
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK(refused.status().message().find("moved from") != std::string_view::npos);
  CHECK(big.cache_size() == 0);
  CHECK(big.cache_stats().capacity == 0);
}

TEST_CASE("frontend: jit's bounded cache under calls from many threads") {
  // Eight signatures through a cache of three, from four threads: entries are evicted while
  // other threads run them, and every result must still match its closed form.
  auto client = make_client();
  auto f = jit(client, [](Tensor x) { return x * 3.0f; }, JitOptions{.cache_capacity = 3});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const auto n = static_cast<std::int64_t>((t + i) % 8 + 1);
        std::vector<float> in(static_cast<std::size_t>(n)), want(static_cast<std::size_t>(n));
        for (std::int64_t k = 0; k < n; ++k) {
          in[static_cast<std::size_t>(k)] = static_cast<float>(k + t);
          want[static_cast<std::size_t>(k)] = 3.0f * static_cast<float>(k + t);
        }
        StatusOr<Literal> got = f(Literal::from_span<float>(in, {n}).value());
        if (!got.ok() || *got != Literal::from_span<float>(want, {n}).value()) ++failures;
        if (f.cache_size() > 3) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  const CacheStats s = f.cache_stats();
  CHECK(s.hits + s.misses == 160);
  CHECK(s.size == 3);
  CHECK(s.evictions == s.misses - 3);
}

TEST_CASE("frontend: jit takes and returns trees, and buffers without a transfer") {
  auto client = make_client();
  auto f = jit(client, [](Layer<Tensor> l, std::vector<Tensor> xs) {
    std::vector<Tensor> ys;
    for (const Tensor& x : xs) ys.push_back(matmul(l.w, x) + l.b);
    return std::make_pair(ys, Layer<Tensor>{l.b, l.w});
  });
  Layer<Literal> l{matrix({1, 0, 0, 2}, 2, 2), Literal::vector<double>({1, 1})};
  auto [ys, swapped] =
      f(l, std::vector<Literal>{Literal::vector<double>({1, 2}), Literal::vector<double>({3, 4})})
          .value();
  REQUIRE(ys.size() == 2);
  CHECK(ys[0] == Literal::vector<double>({2, 5}));
  CHECK(ys[1] == Literal::vector<double>({4, 9}));
  CHECK(swapped.w == l.b);
  CHECK(swapped.b == l.w);

  auto g = jit(client, [](Tensor x, Tensor y) { return x * y + 1.0; });
  auto bx = client->buffer_from_literal(Literal::vector<double>({1, 2, 3})).value();
  auto by = client->buffer_from_literal(Literal::vector<double>({4, 5, 6})).value();
  CHECK(g(bx, by).value() == Literal::vector<double>({5, 11, 19}));
  std::vector<cpu::Buffer<cpu::InlineExecutor>> out;
  cpu::Buffer<cpu::InlineExecutor>* args[] = {&bx, &by};
  REQUIRE(g.execute(args, out).ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].to_literal().await().value() == Literal::vector<double>({5, 11, 19}));
  auto other = client->buffer_from_literal(Literal::vector<double>({1})).value();
  cpu::Buffer<cpu::InlineExecutor>* other_args[] = {&other, &by};
  CHECK(g.execute(other_args, out).code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("frontend: grad, value_and_grad and argnums over trees") {
  auto client = make_client();
  std::mt19937_64 rng(3);
  // loss(p, x) = sum((tanh(x W1 + b1) W2 + b2)^2)
  auto loss = [](const Mlp<Tensor>& p, const Tensor& x) {
    Tensor h = tanh(matmul(x, p.hidden.w) + p.hidden.b);
    return sum(square(matmul(h, p.out.w) + p.out.b));
  };
  auto draw = [&](std::vector<std::int64_t> dims) {
    return random_literal<double>(rng, Shape(kF64, std::move(dims)), -1, 1);
  };
  Mlp<Literal> p{{draw({3, 4}), draw({4})}, {draw({4, 2}), draw({2})}};
  Literal x = draw({5, 3});
  auto vg = jit(client, value_and_grad(loss));
  auto [value, g] = vg(p, x).value();
  CHECK(scalar(value) == doctest::Approx(scalar(jit(client, loss)(p, x).value())).epsilon(1e-14));
  // Central differences on every weight.
  auto jl = jit(client, loss);
  const double h = 1e-6;
  auto check_leaf = [&](Literal& leaf, const Literal& grad_leaf) {
    for (std::size_t i = 0; i < leaf.data<double>().size(); ++i) {
      const double keep = leaf.data<double>()[i];
      leaf.data<double>()[i] = keep + h;
      const double up = scalar(jl(p, x).value());
      leaf.data<double>()[i] = keep - h;
      const double down = scalar(jl(p, x).value());
      leaf.data<double>()[i] = keep;
      CHECK(grad_leaf.data<double>()[i] ==
            doctest::Approx((up - down) / (2 * h)).epsilon(1e-6).scale(1.0));
    }
  };
  check_leaf(p.hidden.w, g.hidden.w);
  check_leaf(p.hidden.b, g.hidden.b);
  check_leaf(p.out.w, g.out.w);
  check_leaf(p.out.b, g.out.b);
  // Both arguments at once.
  auto both = jit(client, grad<0, 1>(loss));
  auto [gp, gx] = both(p, x).value();
  check_close(gp.out.w, g.out.w);
  CHECK(gx.shape() == x.shape());
}

TEST_CASE("frontend: transformations compose") {
  auto client = make_client();
  auto f = [](Tensor x) { return sin(x) * exp(x * 0.5); };
  // grad(grad(f)) against the closed form f'' = e^{x/2} (-sin x + cos x + sin x / 4).
  auto d2 = jit(client, grad(grad(f)));
  for (double x : {-1.0, 0.3, 2.0})
    CHECK(scalar(d2(x).value()) ==
          doctest::Approx(std::exp(x / 2) * (-std::sin(x) + std::cos(x) + std::sin(x) / 4))
              .epsilon(1e-13));
  // vmap(grad(f)) equals grad(f) per element; jit(vmap(grad)) too.
  auto vg = jit(client, vmap(grad(f)));
  Literal xs = Literal::vector<double>({-1.0, 0.3, 2.0});
  Literal batched = vg(xs).value();
  auto g = jit(client, grad(f));
  for (std::int64_t i = 0; i < 3; ++i)
    CHECK(batched.data<double>()[static_cast<std::size_t>(i)] ==
          scalar(g(xs.data<double>()[static_cast<std::size_t>(i)]).value()));
  // grad of a vmapped sum equals vmap of grad.
  auto gs = jit(client, grad([&](Tensor x) { return sum(vmap(f)(x)); }));
  check_close(gs(xs).value(), batched);
  // jvp agrees with grad for a scalar function; jvp of jvp gives the second derivative.
  auto fwd = jit(client, [&](Tensor x) { return jvp(f, x, ones_like(x)).second; });
  CHECK(scalar(fwd(0.7).value()) == doctest::Approx(scalar(g(0.7).value())).epsilon(1e-14));
  auto fwd2 = jit(client, [&](Tensor x) {
    return jvp([&](Tensor y) { return jvp(f, y, ones_like(y)).second; }, x, ones_like(x)).second;
  });
  CHECK(scalar(fwd2(0.7).value()) == doctest::Approx(scalar(d2(0.7).value())).epsilon(1e-13));
}

TEST_CASE("frontend: jacfwd and jacrev agree with each other and with finite differences") {
  auto client = make_client();
  auto g = [](Tensor x) { return concatenate({sin(x) * x[0], sum(x * x, {}, true)}); };
  Literal x = Literal::vector<double>({0.3, -1.2, 2.0});
  Literal jf = jit(client, jacfwd(g))(x).value();
  Literal jr = jit(client, jacrev(g))(x).value();
  CHECK(jf.dims()[0] == 4);
  CHECK(jf.dims()[1] == 3);
  check_close(jf, jr);
  auto jg = jit(client, g);
  const double h = 1e-6;
  for (std::int64_t j = 0; j < 3; ++j) {
    Literal up = x, down = x;
    up.data<double>()[static_cast<std::size_t>(j)] += h;
    down.data<double>()[static_cast<std::size_t>(j)] -= h;
    Literal a = jg(up).value(), b = jg(down).value();
    for (std::int64_t i = 0; i < 4; ++i)
      CHECK(jf.get<double>({i, j}) ==
            doctest::Approx((a.data<double>()[static_cast<std::size_t>(i)] -
                             b.data<double>()[static_cast<std::size_t>(i)]) /
                            (2 * h))
                .epsilon(1e-6)
                .scale(1.0));
  }
}

TEST_CASE("frontend: vmap with in_axes and closures") {
  auto client = make_client();
  const Literal m = matrix({1, 2, 3, 4, 5, 6}, 2, 3);
  // Map over columns of the first argument, the second shared.
  auto f = jit(client, vmap([](Tensor col, Tensor w) { return sum(col * w); }, {1, kNotMapped}));
  CHECK(f(m, Literal::vector<double>({1, 10})).value() == Literal::vector<double>({41, 52, 63}));
  // A closed-over tensor of the outer trace is shared by every batch element.
  auto g = jit(client, [](Tensor xs, Tensor shift) {
    return vmap([&](Tensor x) { return x + shift; })(xs);
  });
  CHECK(g(m, Literal::vector<double>({1, 1, 1})).value() == matrix({2, 3, 4, 5, 6, 7}, 2, 3));
  // Mismatched mapped sizes.
  auto h = jit(client, vmap([](Tensor a, Tensor b) { return a + b; }));
  StatusOr<Literal> bad = h(Literal::vector<double>({1, 2}), Literal::vector<double>({1, 2, 3}));
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("has size 3 on its mapped axis, an earlier one 2") !=
        std::string::npos);
}

TEST_CASE("frontend: bad inputs are clear statuses") {
  auto client = make_client();
  SUBCASE("a function returning a non-tensor") {
    auto f = jit(client, [](Tensor) { return 1.0; });
    StatusOr<Literal> r = f(1.0f);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("not a Tensor") != std::string::npos);
  }
  SUBCASE("grad of a non-scalar") {
    auto f = jit(client, grad([](Tensor x) { return x * 2.0; }));
    StatusOr<Literal> r = f(Literal::vector<double>({1, 2}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("must return a real scalar, it returned f64[2]") !=
          std::string::npos);
  }
  SUBCASE("grad with respect to an integer input") {
    auto f = jit(client, grad([](Tensor x) { return sum(x * 2.0); }));
    StatusOr<Literal> r = f(Literal::vector<std::int32_t>({1, 2}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("grad needs floating-point inputs") != std::string::npos);
  }
  SUBCASE("mismatched tangent shapes") {
    auto f = jit(client, [](Tensor x, Tensor t) {
      return jvp([](Tensor y) { return sin(y); }, x, t).second;
    });
    StatusOr<Literal> r = f(Literal::vector<double>({1, 2}), Literal::vector<double>({1, 2, 3}));
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("tangent 0 has shape f64[3] but its primal has f64[2]") !=
          std::string::npos);
  }
  SUBCASE("a tensor kept from an earlier trace") {
    Tensor leaked;
    auto first = jit(client, [&](Tensor x) {
      leaked = x;
      return x;
    });
    REQUIRE(first(1.0).ok());
    auto second = jit(client, [&](Tensor x) { return x + leaked; });
    StatusOr<Literal> r = second(1.0);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("trace that has ended") != std::string::npos);
  }
  SUBCASE("an axis out of range and a bad reshape") {
    auto f = jit(client, [](Tensor x) { return sum(x, {2}); });
    CHECK(f(Literal::vector<double>({1})).status().message().find("axis 2 is out of range") !=
          std::string::npos);
    auto g = jit(client, [](Tensor x) { return x.reshape({4, -1}); });
    CHECK(g(Literal::vector<double>({1, 2, 3})).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("frontend: relu's derivative is jax.nn.relu's: 0 at 0, and NaN stays NaN") {
  auto client = make_client();
  auto r = jit(client, [](Tensor x) { return np::relu(x); });
  auto dr = jit(client, grad([](Tensor x) { return np::relu(x); }));
  auto d2r = jit(client, grad(grad([](Tensor x) { return np::relu(x); })));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // (x, relu(x), relu'(x)) by the definition: max(x, 0); 1 where x > 0, else 0.
  for (const auto& point : {std::tuple{-2.0, 0.0, 0.0}, std::tuple{0.0, 0.0, 0.0}, std::tuple{-0.0, 0.0, 0.0},
                            std::tuple{1e-300, 1e-300, 1.0}, std::tuple{3.5, 3.5, 1.0}}) {
    // Named, not a structured binding: clang 14 cannot capture a binding in a lambda.
    const double x = std::get<0>(point), value = std::get<1>(point), slope = std::get<2>(point);
    CAPTURE(x);
    CHECK(scalar(r(x).value()) == value);
    CHECK(scalar(dr(x).value()) == slope);
    CHECK(scalar(d2r(x).value()) == 0.0);
  }
  CHECK(std::isnan(scalar(r(nan).value())));
  // On an integer tensor relu keeps the dtype.
  Literal ints = jit(client, [](Tensor x) { return np::relu(x); })(Literal::vector<std::int32_t>({-3, 0, 4})).value();
  CHECK(ints == Literal::vector<std::int32_t>({0, 0, 4}));
}

TEST_CASE("frontend: pow's derivatives are right at a zero exponent and a zero base, at every order") {
  auto client = make_client();
  auto f = [](Tensor x, Tensor y) { return np::power(x, y); };
  auto dx = grad<0>(f);
  // d/dy of d/dx x^y = x^(y-1) (1 + y log x), which at y = 0 is 1/x.
  auto dydx = jit(client, grad<1>([&](Tensor x, Tensor y) { return dx(x, y); }));
  auto dxdx = jit(client, grad<0>([&](Tensor x, Tensor y) { return dx(x, y); }));
  auto jdx = jit(client, dx);
  for (const auto& point : {std::pair{4.0, 0.0}, std::pair{0.5, 0.0}, std::pair{4.0, 1.5}, std::pair{2.0, -1.0}}) {
    const double x = point.first, y = point.second;
    CAPTURE(x);
    CAPTURE(y);
    CHECK(scalar(jdx(x, y).value()) == doctest::Approx(y * std::pow(x, y - 1)).epsilon(1e-14));
    CHECK(scalar(dydx(x, y).value()) ==
          doctest::Approx(std::pow(x, y - 1) * (1 + y * std::log(x))).epsilon(1e-13));
    CHECK(scalar(dxdx(x, y).value()) == doctest::Approx(y * (y - 1) * std::pow(x, y - 2)).epsilon(1e-13));
  }
  // At x = y = 0: x^0 = 1 for every x, so d/dx is 0, not 0 * 0^-1 = NaN; d/dy = log(x) x^y
  // is taken as 0 there, as jax does.
  CHECK(scalar(jdx(0.0, 0.0).value()) == 0.0);
  CHECK(scalar(jit(client, grad<1>(f))(0.0, 0.0).value()) == 0.0);
  CHECK(scalar(jit(client, grad<0>(f))(0.0, 2.0).value()) == 0.0);
}

}  // namespace frontend_test
