// Tests of pmap, shard_map and the front end's collectives (frontend/parallel.hpp): slices
// and shards to devices and back, psum / pmean / all_gather / ppermute / axis_index against host arithmetic, the
// collectives' derivative rules in both modes against central differences of the devices'
// summed outputs (JAX's pmap convention: a device's gradient is that of the sum of every
// device's output), and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/frontend/parallel.hpp"
#include "pjrt_lite/ir/printer.hpp"
#include "pjrt_lite/transforms/autodiff.hpp"
#include "test_util.hpp"

namespace parallel_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

constexpr auto f64s = &literal_of<double>;

Literal random_f64(std::mt19937_64& rng, std::vector<std::int64_t> dims) {
  Literal l(Shape(kF64, std::move(dims)));
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  for (double& x : l.data<double>()) x = u(rng);
  return l;
}

auto make_client(int devices) { return cpu::Client<>::create({.device_count = devices, .thread_count = 2}).value(); }

}  // namespace

TEST_CASE("pmap: each device computes on its slice, and the results stack along the leading axis") {
  auto client = make_client(3);
  auto f = pmap(*client, [](Tensor x, Tensor y) {
    return std::make_pair(x * y + np::axis_index("i").astype(kF64), np::sum(x));
  });
  const Literal x = f64s({1, 2, 3, 4, 5, 6}, {3, 2});
  const Literal y = f64s({10, 10, 20, 20, 30, 30}, {3, 2});
  auto r = f(x, y);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(r->first.shape() == Shape(kF64, {3, 2}));
  CHECK(values_of<double>(r->first) == std::vector<double>({10, 20, 61, 81, 152, 182}));
  CHECK(values_of<double>(r->second) == std::vector<double>({3, 7, 11}));
  // The same signature runs the compiled program again; two devices is another signature.
  REQUIRE(f(x, y).ok());
  CHECK(f.trace_count() == 1);
  auto two = f(f64s({1, 2, 3, 4}, {2, 2}), f64s({1, 1, 1, 1}, {2, 2}));
  REQUIRE_MESSAGE(two.ok(), two.status().to_string());
  CHECK(values_of<double>(two->first) == std::vector<double>({1, 2, 4, 5}));
  CHECK(f.trace_count() == 2);
  // One device's program: the slice's shapes, and the grid's position as an op.
  Graph g = f.lower(x, y).value();
  CHECK(g.parameter_shapes()[0] == Shape(kF64, {2}));
  CHECK(contains(to_string(g), "replica_id"));
}

TEST_CASE("pmap: psum, pmean, all_gather and ppermute agree with host arithmetic") {
  auto client = make_client(4);
  const Literal x = f64s({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  auto sums = pmap(*client, [](Tensor v) { return std::make_pair(np::psum(v, "i"), np::pmean(v, "i")); })(x);
  REQUIRE_MESSAGE(sums.ok(), sums.status().to_string());
  CHECK(values_of<double>(sums->first) == std::vector<double>({16, 20, 16, 20, 16, 20, 16, 20}));
  CHECK(values_of<double>(sums->second) == std::vector<double>({4, 5, 4, 5, 4, 5, 4, 5}));
  auto gathered = pmap(*client, [](Tensor v) { return np::all_gather(v, "i"); })(x);
  REQUIRE_MESSAGE(gathered.ok(), gathered.status().to_string());
  CHECK(gathered->shape() == Shape(kF64, {4, 4, 2}));
  for (std::int64_t k = 0; k < 4; ++k)
    for (std::int64_t j = 0; j < 8; ++j) CHECK(gathered->data<double>()[static_cast<std::size_t>(k * 8 + j)] == j + 1);
  auto tiled = pmap(*client, [](Tensor v) { return np::all_gather(v, "i", 0, true); })(x);
  REQUIRE_MESSAGE(tiled.ok(), tiled.status().to_string());
  CHECK(tiled->shape() == Shape(kF64, {4, 8}));
  // A ring, and a device that no pair reaches (device 0 here) gets zeros.
  auto ring = pmap(*client, [](Tensor v) { return np::ppermute(v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}); })(x);
  REQUIRE_MESSAGE(ring.ok(), ring.status().to_string());
  CHECK(values_of<double>(*ring) == std::vector<double>({7, 8, 1, 2, 3, 4, 5, 6}));
  auto line = pmap(*client, [](Tensor v) { return np::ppermute(v, "i", {{0, 1}, {1, 2}}); })(x);
  REQUIRE_MESSAGE(line.ok(), line.status().to_string());
  CHECK(values_of<double>(*line) == std::vector<double>({0, 0, 1, 2, 3, 4, 0, 0}));
}

TEST_CASE("pmap: grad and jvp through the collectives match central differences of the summed outputs") {
  // Each function maps a device's f64[3] to a scalar; S(X) is the sum of every device's
  // scalar. pmap(grad(f)) on device k must be dS/dX_k, and the devices' jvps must sum to S's
  // directional derivative.
  using Fn = std::function<Tensor(Tensor)>;
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"psum", [](Tensor v) { return np::sum(np::sin(np::psum(v * v, "i")) * v); }},
      {"pmean", [](Tensor v) { return np::sum(np::exp(np::pmean(v, "i")) * v); }},
      {"all_gather", [](Tensor v) {
         Tensor all = np::all_gather(v * v, "i");
         return np::sum(all * np::cos(all)) + np::sum(v);
       }},
      {"all_gather tiled", [](Tensor v) { return np::sum(np::tanh(np::all_gather(v, "i", 0, true)) * 1.5); }},
      {"ppermute", [](Tensor v) {
         Tensor w = np::ppermute(v * v, "i", {{0, 1}, {1, 2}, {2, 0}});
         return np::sum(w * np::sin(v));
       }},
      {"psum of psum", [](Tensor v) { return np::sum(np::psum(np::psum(v, "i") * v, "i")); }},
      {"pbroadcast", [](Tensor v) {
         Tensor w = np::pbroadcast(v * v, "i", 1);
         return np::sum(w * np::sin(v)) + np::sum(np::pbroadcast(v, "i", 0) * v);
       }},
  };
  auto client = make_client(3);
  std::mt19937_64 rng(11);
  for (const auto& c : cases) {
    const char* name = c.first;
    const Fn& fn = c.second;  // not a structured binding: lambdas below capture it
    CAPTURE(name);
    const Literal x = random_f64(rng, {3, 3});
    const Literal dir = random_f64(rng, {3, 3});
    auto value = pmap(*client, [&](Tensor v) { return fn(v); });
    auto gradient = pmap(*client, [&](Tensor v) { return grad([&](Tensor u) { return fn(u); })(v); });
    auto tangent = pmap(*client, [&](Tensor v, Tensor t) { return jvp([&](Tensor u) { return fn(u); }, v, t).second; });
    auto total = [&](const Literal& at) {
      auto r = value(at);
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      double s = 0;
      for (double y : r->data<double>()) s += y;
      return s;
    };
    auto g = gradient(x);
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    auto t = tangent(x, dir);
    REQUIRE_MESSAGE(t.ok(), t.status().to_string());
    const double eps = 1e-6;
    for (std::size_t i = 0; i < 9; ++i) {
      Literal plus = x, minus = x;
      plus.data<double>()[i] += eps;
      minus.data<double>()[i] -= eps;
      const double numeric = (total(plus) - total(minus)) / (2 * eps);
      CHECK_MESSAGE(std::abs(g->data<double>()[i] - numeric) < 1e-5 * (1 + std::abs(numeric)),
                    "element ", i, ": grad ", g->data<double>()[i], " vs ", numeric);
    }
    Literal plus = x, minus = x;
    for (std::size_t i = 0; i < 9; ++i) {
      plus.data<double>()[i] += eps * dir.data<double>()[i];
      minus.data<double>()[i] -= eps * dir.data<double>()[i];
    }
    const double numeric = (total(plus) - total(minus)) / (2 * eps);
    double sum = 0;
    for (double d : t->data<double>()) sum += d;
    CHECK_MESSAGE(std::abs(sum - numeric) < 1e-5 * (1 + std::abs(numeric)), "jvp ", sum, " vs ", numeric);
  }
}

TEST_CASE("shard_map: shards in, collectives across, shards joined out") {
  auto client = make_client(2);
  std::mt19937_64 rng(5);
  const Literal x = random_f64(rng, {4, 3});
  const Literal w = random_f64(rng, {3, 6});
  // Row shards of x against the whole of w: the joined rows are x @ w.
  auto rows = shard_map(*client, [](Tensor xs, Tensor ws) { return matmul(xs, ws); },
                        {.in_specs = {0, -1}, .out_specs = {0}});
  auto by_rows = rows(x, w);
  REQUIRE_MESSAGE(by_rows.ok(), by_rows.status().to_string());
  auto whole = jit(*client, [](Tensor a, Tensor b) { return matmul(a, b); })(x, w);
  REQUIRE(whole.ok());
  CHECK(by_rows->shape() == Shape(kF64, {4, 6}));
  for (std::size_t i = 0; i < 24; ++i) CHECK(by_rows->data<double>()[i] == doctest::Approx(whole->data<double>()[i]));
  // Contraction split across the devices: x's columns and w's rows, summed with psum; the
  // total is the same on every device (out_spec -1). Joined along columns: w's column shards.
  auto contract = shard_map(*client, [](Tensor xs, Tensor ws) { return np::psum(matmul(xs, ws), "i"); },
                            {.in_specs = {1, 0}, .out_specs = {-1}});
  auto summed = contract(f64s({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}), f64s({1, 0, 0, 1, 1, 1, 2, 0}, {4, 2}));
  REQUIRE_MESSAGE(summed.ok(), summed.status().to_string());
  CHECK(values_of<double>(*summed) == std::vector<double>({1 + 3 + 8, 2 + 3, 5 + 7 + 16, 6 + 7}));
  auto columns = shard_map(*client, [](Tensor xs, Tensor ws) { return matmul(xs, ws); },
                           {.in_specs = {-1, 1}, .out_specs = {1}});
  auto by_columns = columns(x, w);
  REQUIRE_MESSAGE(by_columns.ok(), by_columns.status().to_string());
  for (std::size_t i = 0; i < 24; ++i) CHECK(by_columns->data<double>()[i] == doctest::Approx(whole->data<double>()[i]));
  // A dimension the devices cannot split evenly, and specs that name no dimension.
  check_error(rows(random_f64(rng, {3, 3}), w), StatusCode::kInvalidArgument, "cannot split evenly");
  auto bad = shard_map(*client, [](Tensor xs) { return xs; }, {.in_specs = {2}});
  check_error(bad(x), StatusCode::kInvalidArgument, "in_specs[0] = 2 is no dimension");
  auto bad_out = shard_map(*client, [](Tensor xs) { return np::sum(xs); }, {.out_specs = {0}});
  check_error(bad_out(x), StatusCode::kInvalidArgument, "out_specs[0] = 0 is no dimension of a rank-0 result");
}

TEST_CASE("pmap: bad input and unbound axes are clear errors") {
  auto client = make_client(2);
  auto f = pmap(*client, [](Tensor v) { return np::psum(v, "i"); });
  check_error(f(f64s({1, 2, 3}, {3})), StatusCode::kInvalidArgument, "needs as many devices; the client has 2");
  check_error(f(Literal::scalar(1.0)), StatusCode::kInvalidArgument, "is a scalar");
  auto two = pmap(*client, [](Tensor a, Tensor b) { return a + b; });
  check_error(two(f64s({1, 2}, {2}), f64s({1, 2, 3, 4}, {4})), StatusCode::kInvalidArgument,
              "leaf 1 has leading dimension 4 but leaf 0 has 2");
  // A collective over an axis no pmap binds.
  auto wrong = pmap(*client, [](Tensor v) { return np::psum(v, "j"); });
  check_error(wrong(f64s({1, 2}, {2})), StatusCode::kInvalidArgument, "unbound axis name 'j'");
  auto outside = jit(*client, [](Tensor v) { return np::psum(v, "i"); });
  check_error(outside(f64s({1, 2}, {2})), StatusCode::kInvalidArgument, "unbound axis name 'i'");
  auto bad_pair = pmap(*client, [](Tensor v) { return np::ppermute(v, "i", {{0, 2}}); });
  check_error(bad_pair(f64s({1, 2}, {2})), StatusCode::kInvalidArgument, "names a device outside the 2");
  // Reverse mode through a collective without a rule is UNIMPLEMENTED naming it.
  GraphBuilder b("max");
  Value x = b.parameter(Shape(kF64, {2}));
  const Graph g = build_ok(b, {b.reduce(b.all_reduce(x, OpCode::kMaximum, CollectiveAttrs{}), b.scalar(kF64, 0),
                                        OpCode::kAdd, {0})});
  check_error(vjp_graph(g, {true}), StatusCode::kUnimplemented, "all_reduce with a computation other than a sum");
}

}  // namespace parallel_test
