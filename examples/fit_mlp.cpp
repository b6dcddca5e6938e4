// Fitting a small MLP to y = sin(3x) with grad and plain SGD. One jitted step computes the loss,
// its gradient with respect to every weight (a tree of tensors) and the updated weights.

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"

using namespace pjrt_lite;

/// A dense layer; the same struct holds tensors while tracing and literals on the host.
template <class T>
struct Dense {
  T w, b;
};
template <class T>
struct Mlp {
  Dense<T> hidden, out;
};

Tensor predict(const Mlp<Tensor>& p, const Tensor& x) {
  Tensor h = tanh(matmul(x, p.hidden.w) + p.hidden.b);
  return matmul(h, p.out.w) + p.out.b;
}

Tensor loss(const Mlp<Tensor>& p, const Tensor& x, const Tensor& y) {
  return mean(square(predict(p, x) - y));
}

/// rows x cols normal values of standard deviation `scale`; a vector of `rows` when cols is 0.
Literal random_matrix(std::mt19937& rng, std::int64_t rows, std::int64_t cols, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(cols == 0 ? rows : rows * cols));
  for (float& e : v) e = normal(rng);
  return cols == 0 ? Literal::from_span<float>(v, {rows}).value()
                   : Literal::from_span<float>(v, {rows, cols}).value();
}

int main() {
  auto client = cpu::Client<>::create().value();
  std::mt19937 rng(0);
  constexpr std::int64_t kHidden = 32, kPoints = 64;

  std::vector<float> xs, ys;
  for (std::int64_t i = 0; i < kPoints; ++i) {
    const float x = -1.0f + 2.0f * static_cast<float>(i) / (kPoints - 1);
    xs.push_back(x);
    ys.push_back(std::sin(3.0f * x));
  }
  Literal x = Literal::from_span<float>(xs, {kPoints, 1}).value();
  Literal y = Literal::from_span<float>(ys, {kPoints, 1}).value();

  Mlp<Literal> params{{random_matrix(rng, 1, kHidden, 1.0f), random_matrix(rng, kHidden, 0, 0.1f)},
                      {random_matrix(rng, kHidden, 1, 0.3f), random_matrix(rng, 1, 0, 0.0f)}};

  auto step = jit(client, [](const Mlp<Tensor>& p, const Tensor& x, const Tensor& y) {
    auto [l, g] = value_and_grad(loss)(p, x, y);
    // p - lr * g, leaf by leaf.
    std::vector<Tensor> grads;
    tree::for_each_leaf(g, [&](const Tensor& t) { grads.push_back(t); });
    std::size_t i = 0;
    Mlp<Tensor> next = tree::map<Tensor>(p, [&](const Tensor& w) { return w - 0.1 * grads[i++]; });
    return std::make_pair(l, next);
  });

  float first = 0, last = 0;
  for (int epoch = 0; epoch <= 3000; ++epoch) {
    StatusOr<std::pair<Literal, Mlp<Literal>>> r = step(params, x, y);
    if (!r.ok()) {
      std::fprintf(stderr, "step failed: %s\n", r.status().to_string().c_str());
      return 1;
    }
    last = r->first.data<float>()[0];
    if (epoch == 0) first = last;
    if (epoch % 500 == 0) std::printf("epoch %4d  loss %.6f\n", epoch, last);
    params = std::move(r->second);
  }
  // Exit 1 unless the fit worked: the loss fell below a hundredth of where it started.
  return last < first / 100 ? 0 : 1;
}
