// Training a small convolutional net with grad: 8x8 single-channel images of a horizontal or
// a vertical bar (at a random row or column, with noise), classified by a 3x3 convolution
// with 4 filters, relu, 2x2 max pooling and a dense layer, trained by plain SGD on the
// softmax cross-entropy. One jitted step computes the loss, its gradient with respect to
// every weight (convolution and pooling are differentiated by their reverse-mode rules) and
// the updated weights. Exits non-zero unless the loss falls to a third of where it started
// and the net classifies held-out images better than chance by far.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"

using namespace pjrt_lite;

namespace {

constexpr std::int64_t kSize = 8, kFilters = 4, kClasses = 2, kBatch = 32;
constexpr std::int64_t kPooled = (kSize / 2) * (kSize / 2) * kFilters;

/// The weights; the same struct holds tensors while tracing and literals on the host.
template <class T>
struct Cnn {
  T conv_w, conv_b, dense_w, dense_b;
};

/// Log-probabilities of the classes of images x [batch, 8, 8, 1] (NHWC).
Tensor logits(const Cnn<Tensor>& p, const Tensor& x) {
  Tensor h = np::conv_general_dilated(x, p.conv_w, {1, 1}, "SAME", {}, {}, {"NHWC", "HWIO", "NHWC"});
  h = np::relu(h + p.conv_b);
  h = np::max_pool(h, {2, 2}, {2, 2});
  h = np::reshape(h, {-1, kPooled});
  return np::log_softmax(np::matmul(h, p.dense_w) + p.dense_b);
}

/// The mean cross-entropy against one-hot labels y [batch, classes].
Tensor loss(const Cnn<Tensor>& p, const Tensor& x, const Tensor& y) {
  return -np::mean(np::sum(logits(p, x) * y, {1}));
}

/// `n` images and their one-hot labels: class 0 a horizontal bar, class 1 a vertical one.
std::pair<Literal, Literal> make_data(std::mt19937& rng, std::int64_t n) {
  Literal x(Shape(DType::kF32, {n, kSize, kSize, 1}));
  Literal y(Shape(DType::kF32, {n, kClasses}));
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_int_distribution<std::int64_t> where(1, kSize - 2);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t label = i % 2, line = where(rng);
    for (std::int64_t r = 0; r < kSize; ++r)
      for (std::int64_t c = 0; c < kSize; ++c) {
        const bool on = label == 0 ? r == line : c == line;
        x.data<float>()[static_cast<std::size_t>((i * kSize + r) * kSize + c)] = (on ? 1.0f : 0.0f) + noise(rng);
      }
    y.data<float>()[static_cast<std::size_t>(i * kClasses + label)] = 1.0f;
  }
  return {std::move(x), std::move(y)};
}

Literal random_literal(std::mt19937& rng, std::vector<std::int64_t> dims, float scale) {
  Literal l(Shape(DType::kF32, std::move(dims)));
  std::normal_distribution<float> normal(0.0f, scale);
  for (float& v : l.data<float>()) v = normal(rng);
  return l;
}

}  // namespace

int main() {
  auto client = cpu::Client<>::create().value();
  std::mt19937 rng(24);
  Cnn<Literal> params{random_literal(rng, {3, 3, 1, kFilters}, 0.5f), Literal(Shape(DType::kF32, {kFilters})),
                      random_literal(rng, {kPooled, kClasses}, 0.1f), Literal(Shape(DType::kF32, {kClasses}))};

  auto step = jit(client, [](const Cnn<Tensor>& p, const Tensor& x, const Tensor& y) {
    auto [l, g] = value_and_grad(loss)(p, x, y);
    std::vector<Tensor> grads;
    tree::for_each_leaf(g, [&](const Tensor& t) { grads.push_back(t); });
    std::size_t i = 0;
    Cnn<Tensor> next = tree::map<Tensor>(p, [&](const Tensor& w) { return w - 0.5 * grads[i++]; });
    return std::make_pair(l, next);
  });
  auto accuracy = jit(client, [](const Cnn<Tensor>& p, const Tensor& x, const Tensor& y) {
    return np::mean((np::argmax(logits(p, x), 1) == np::argmax(y, 1)).astype(DType::kF32));
  });

  float first = 0, last = 0;
  constexpr int kSteps = 60;
  for (int s = 0; s < kSteps; ++s) {
    auto [x, y] = make_data(rng, kBatch);
    StatusOr<std::pair<Literal, Cnn<Literal>>> r = step(params, x, y);
    if (!r.ok()) {
      std::fprintf(stderr, "step failed: %s\n", r.status().to_string().c_str());
      return 1;
    }
    last = r->first.data<float>()[0];
    if (s == 0) first = last;
    if (s % 10 == 0 || s == kSteps - 1) std::printf("step %3d  loss %.4f\n", s, last);
    params = std::move(r->second);
  }
  auto [test_x, test_y] = make_data(rng, 64);
  StatusOr<Literal> acc = accuracy(params, test_x, test_y);
  if (!acc.ok()) {
    std::fprintf(stderr, "accuracy failed: %s\n", acc.status().to_string().c_str());
    return 1;
  }
  const float a = acc->data<float>()[0];
  std::printf("loss %.4f -> %.4f, held-out accuracy %.2f\n", first, last, a);
  if (!(last < first / 3) || !(a > 0.8f)) {
    std::fprintf(stderr, "train_cnn: the net did not learn (the loss must fall to a third, accuracy above 0.8)\n");
    return 1;
  }
  return 0;
}
