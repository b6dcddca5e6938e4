// Training an MLP data-parallel with pmap: every device holds the weights, takes its own
// shard of the batch, computes the gradient of its shard's loss, and pmean averages the
// gradients across the devices before the same SGD step everywhere. The same training on one
// device with the whole batch must give the same weights (the mean of the shards' mean
// gradients is the whole batch's); the example checks that, checks that the loss falls, and
// prints the time per step on 1 and 2 devices. The CPU client's devices share the machine's
// cores, so the speedup is what splitting one step into two concurrent programs buys.
//
//   data_parallel [steps]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/frontend/parallel.hpp"

using namespace pjrt_lite;

template <class T>
struct Mlp {
  T w1, b1, w2, b2;
};

Tensor loss(const Mlp<Tensor>& p, const Tensor& x, const Tensor& y) {
  Tensor h = tanh(matmul(x, p.w1) + p.b1);
  return mean(square(matmul(h, p.w2) + p.b2 - y));
}

/// `copies` stacked copies of `l` (a leading axis of that size).
Literal replicate(const Literal& l, std::int64_t copies) {
  std::vector<std::int64_t> dims{copies};
  dims.insert(dims.end(), l.shape().dims().begin(), l.shape().dims().end());
  std::vector<float> v;
  for (std::int64_t k = 0; k < copies; ++k) v.insert(v.end(), l.data<float>().begin(), l.data<float>().end());
  return Literal::from_span<float>(v, dims).value();
}

/// `l` split along its first axis into `parts` shards, stacked along a new leading axis.
Literal shard(const Literal& l, std::int64_t parts) {
  std::vector<std::int64_t> dims{parts, l.shape().dim(0) / parts};
  dims.insert(dims.end(), l.shape().dims().begin() + 1, l.shape().dims().end());
  return Literal::from_span<float>(l.data<float>(), dims).value();
}

Literal normal(std::mt19937& rng, std::vector<std::int64_t> dims, float scale) {
  Literal l(Shape(DType::kF32, std::move(dims)));
  std::normal_distribution<float> n(0.0f, scale);
  for (float& v : l.data<float>()) v = n(rng);
  return l;
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  constexpr std::int64_t kBatch = 2048, kIn = 64, kHidden = 256;
  auto client = cpu::Client<>::create({.device_count = 2, .thread_count = 2}).value();
  std::mt19937 rng(7);
  const Literal x = normal(rng, {kBatch, kIn}, 1.0f);
  Literal y(Shape(DType::kF32, {kBatch, 1}));
  for (std::int64_t i = 0; i < kBatch; ++i) {
    float s = 0;
    for (std::int64_t j = 0; j < 8; ++j) s += x.data<float>()[static_cast<std::size_t>(i * kIn + j)];
    y.data<float>()[static_cast<std::size_t>(i)] = std::sin(s / 3.0f);
  }
  const Mlp<Literal> init{normal(rng, {kIn, kHidden}, 0.1f), normal(rng, {kHidden}, 0.0f), normal(rng, {kHidden, 1}, 0.1f),
                          normal(rng, {1}, 0.0f)};

  // One SGD step on every device: gradients of the device's shard averaged over the devices.
  auto step = pmap(*client, [](const Mlp<Tensor>& p, const Tensor& xs, const Tensor& ys) {
    auto [l, g] = value_and_grad(loss)(p, xs, ys);
    auto update = [](const Tensor& w, const Tensor& dw) { return w - 0.5f * np::pmean(dw, "i"); };
    return std::make_pair(Mlp<Tensor>{update(p.w1, g.w1), update(p.b1, g.b1), update(p.w2, g.w2), update(p.b2, g.b2)},
                          np::pmean(l, "i"));
  });

  struct Run {
    Mlp<Literal> params;
    float first_loss = 0, last_loss = 0;
    double ms_per_step = 0;
  };
  auto train = [&](std::int64_t devices) -> Run {
    Mlp<Literal> p{replicate(init.w1, devices), replicate(init.b1, devices), replicate(init.w2, devices),
                   replicate(init.b2, devices)};
    const Literal xs = shard(x, devices), ys = shard(y, devices);
    Run r;
    auto warm = step(p, xs, ys);  // compiles; not timed, and not applied
    if (!warm.ok()) {
      std::fprintf(stderr, "step on %lld devices: %s\n", static_cast<long long>(devices), warm.status().to_string().c_str());
      std::exit(1);
    }
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
      auto out = step(p, xs, ys).value();
      p = std::move(out.first);
      const float l = out.second.data<float>()[0];
      if (s == 0) r.first_loss = l;
      r.last_loss = l;
    }
    r.ms_per_step = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / steps;
    r.params = std::move(p);
    return r;
  };
  const Run one = train(1), two = train(2);

  // Both devices hold the same weights, equal to the one-device run's.
  float largest = 0;
  const std::size_t n = two.params.w1.data<float>().size() / 2;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = two.params.w1.data<float>()[i], b = two.params.w1.data<float>()[n + i];
    const float c = one.params.w1.data<float>()[i];
    largest = std::max({largest, std::abs(a - b), std::abs(a - c)});
  }
  std::printf("loss %.4f -> %.4f on 1 device, %.4f -> %.4f on 2 devices\n", one.first_loss, one.last_loss,
              two.first_loss, two.last_loss);
  std::printf("largest weight difference between the runs: %.2g\n", largest);
  std::printf("%.2f ms per step on 1 device, %.2f ms on 2: speedup %.2fx\n", one.ms_per_step, two.ms_per_step,
              one.ms_per_step / two.ms_per_step);
  const bool ok = two.last_loss < 0.9f * two.first_loss && largest < 1e-4f && std::abs(one.last_loss - two.last_loss) < 1e-4f;
  if (!ok) std::fprintf(stderr, "data-parallel training went wrong\n");
  return ok ? 0 : 1;
}
