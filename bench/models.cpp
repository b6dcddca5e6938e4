// Workloads that are whole blocks of a model: resnet_block_56x56x64 (a ResNet basic block),
// lstm_cell_b32_h512 (one LSTM cell step) and transformer_encoder_128x256 (a post-norm
// encoder layer). pjrt_lite runs the graph a framework would export for the block (batch norm
// as its own per-channel scale and shift, not folded into the convolution); the twin is the
// block by hand with Eigen on the same threads, its intermediates sized once.
#include "common.hpp"

namespace pjrt_lite_bench {
namespace {

// ---- resnet_block_56x56x64: conv3x3 -> batch norm -> relu -> conv3x3 -> batch norm
// -> + input -> relu, batch 1, NHWC, 64 channels, no convolution bias.

constexpr std::int64_t kBlockPositions = kConvSize * kConvSize;
constexpr std::int64_t kBlockDepth = kConvTaps * kConvChannels;
/// Output positions per im2col chunk, and blocks of positions per convolution (pjrt_lite's
/// kernel cuts them in about 4 per thread).
constexpr std::int64_t kBlockChunk = 128;
const std::int64_t kBlockBlocks = kThreads * 4;

/// Positions [p0, p1) of relu(conv3x3(x, kernel) * scale + shift (+ residual)), by im2col
/// chunks into the caller's `patches` [kBlockChunk, 9 * 64]; `residual` may be null.
void conv_bn_relu(const float* x, const float* kernel, const float* scale, const float* shift,
                  const float* residual, float* y, RowMatrix& patches, std::int64_t p0,
                  std::int64_t p1) {
  Eigen::Map<const RowMatrix> k(kernel, kBlockDepth, kConvChannels);
  Eigen::Map<const Row> s(scale, kConvChannels), t(shift, kConvChannels);
  for (std::int64_t c0 = p0; c0 < p1; c0 += kBlockChunk) {
    const std::int64_t n = std::min(kBlockChunk, p1 - c0);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t oh = (c0 + i) / kConvSize, ow = (c0 + i) % kConvSize;
      float* row = patches.data() + i * kBlockDepth;
      for (std::int64_t kh = -1; kh <= 1; ++kh)
        for (std::int64_t kw = -1; kw <= 1; ++kw, row += kConvChannels) {
          const std::int64_t ih = oh + kh, iw = ow + kw;
          const bool inside = ih >= 0 && ih < kConvSize && iw >= 0 && iw < kConvSize;
          if (inside)
            std::copy_n(x + (ih * kConvSize + iw) * kConvChannels, kConvChannels, row);
          else
            std::fill_n(row, kConvChannels, 0.0f);
        }
    }
    Eigen::Map<RowMatrix> out(y + c0 * kConvChannels, n, kConvChannels);
    out.noalias() = patches.topRows(n) * k;
    out.array().rowwise() *= s.array();
    out.rowwise() += t;
    if (residual != nullptr)
      out += Eigen::Map<const RowMatrix>(residual + c0 * kConvChannels, n, kConvChannels);
    out = out.cwiseMax(0.0f);
  }
}

/// The block's parameters, on the host: two kernels and each batch norm's scale and shift.
struct ResnetBlock {
  std::vector<float> x = conv_input(), k1 = resnet_kernel(0), k2 = resnet_kernel(1);
  std::vector<float> s1 = BatchNorm(0).scale(), t1 = BatchNorm(0).shift();
  std::vector<float> s2 = BatchNorm(1).scale(), t2 = BatchNorm(1).shift();
};

void resnet_block_56x56x64_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("resnet_block");
  const std::vector<std::int64_t> dims{1, kConvSize, kConvSize, kConvChannels},
      kernel_dims{3, 3, kConvChannels, kConvChannels};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value k1 = b.parameter(Shape(DType::kF32, kernel_dims));
  Value s1 = b.parameter(Shape(DType::kF32, {kConvChannels}));
  Value t1 = b.parameter(Shape(DType::kF32, {kConvChannels}));
  Value k2 = b.parameter(Shape(DType::kF32, kernel_dims));
  Value s2 = b.parameter(Shape(DType::kF32, {kConvChannels}));
  Value t2 = b.parameter(Shape(DType::kF32, {kConvChannels}));
  auto batch_norm = [&](Value v, Value scale, Value shift) {
    return b.add(b.multiply(v, b.broadcast_in_dim(scale, dims, {3})),
                 b.broadcast_in_dim(shift, dims, {3}));
  };
  Value zero = broadcast_scalar(b, 0.0f, dims);
  Value a = b.maximum(batch_norm(b.convolution(x, k1, nhwc_conv3x3_attrs()), s1, t1), zero);
  Value y = b.maximum(b.add(batch_norm(b.convolution(a, k2, nhwc_conv3x3_attrs()), s2, t2), x), zero);
  const ResnetBlock r;
  Program<cpu::ThreadPool> p(b, {y}, {r.x, r.k1, r.s1, r.t1, r.k2, r.s2, r.t2},
                             {dims, kernel_dims, {kConvChannels}, {kConvChannels}, kernel_dims,
                              {kConvChannels}, {kConvChannels}});
  for (auto _ : state) p.run();
  state.counters["flops"] = benchmark::Counter(2 * 2.0 * kBlockPositions * kBlockDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  check_close(state, p.output(0), model_reference("resnet_block_56x56x64").data(), 1e-4);
}

void resnet_block_56x56x64_eigen(benchmark::State& state) {
  const ResnetBlock r;
  std::vector<float> a(r.x.size()), y(r.x.size());
  std::vector<RowMatrix> patches(kBlockBlocks, RowMatrix(kBlockChunk, kBlockDepth));
  auto scratch = [&](std::int64_t p0) -> RowMatrix& {
    return patches[static_cast<std::size_t>(p0 * kBlockBlocks / kBlockPositions)];
  };
  for (auto _ : state) {
    twin_parallel(kBlockPositions, kBlockBlocks, [&](std::int64_t p0, std::int64_t p1) {
      conv_bn_relu(r.x.data(), r.k1.data(), r.s1.data(), r.t1.data(), nullptr, a.data(), scratch(p0), p0, p1);
    });
    twin_parallel(kBlockPositions, kBlockBlocks, [&](std::int64_t p0, std::int64_t p1) {
      conv_bn_relu(a.data(), r.k2.data(), r.s2.data(), r.t2.data(), r.x.data(), y.data(), scratch(p0), p0, p1);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] = benchmark::Counter(2 * 2.0 * kBlockPositions * kBlockDepth * kConvChannels,
                                               benchmark::Counter::kIsIterationInvariantRate);
  check_close(state, y, model_reference("resnet_block_56x56x64").data(), 1e-4);
}

std::vector<float> resnet_block_serial() {
  const ResnetBlock r;
  std::vector<float> a(r.x.size()), y(r.x.size());
  RowMatrix patches(kBlockChunk, kBlockDepth);
  conv_bn_relu(r.x.data(), r.k1.data(), r.s1.data(), r.t1.data(), nullptr, a.data(), patches, 0, kBlockPositions);
  conv_bn_relu(a.data(), r.k2.data(), r.s2.data(), r.t2.data(), r.x.data(), y.data(), patches, 0, kBlockPositions);
  return y;
}

// ---- lstm_cell_b32_h512: one LSTM cell step, batch 32, input and hidden 512.

/// The cell by hand for batch rows [r0, r1): the rows' gates [r1 - r0, 2048] in `gates`
/// (the caller's, at least that many rows), then h' and c' into `h_out` and `c_out`.
struct LstmCell {
  std::vector<float> x = lstm_x(), h = lstm_h(), c = lstm_c(), w = lstm_w(), u = lstm_u(), b = lstm_b();

  void rows(RowMatrix& gates, float* h_out, float* c_out, std::int64_t r0, std::int64_t r1) const {
    const std::int64_t n = r1 - r0;
    auto g = gates.topRows(n);
    g.noalias() = Eigen::Map<const RowMatrix>(x.data() + r0 * kLstmInput, n, kLstmInput) *
                  Eigen::Map<const RowMatrix>(w.data(), kLstmInput, kLstmGates);
    g.noalias() += Eigen::Map<const RowMatrix>(h.data() + r0 * kLstmHidden, n, kLstmHidden) *
                   Eigen::Map<const RowMatrix>(u.data(), kLstmHidden, kLstmGates);
    g.rowwise() += Eigen::Map<const Row>(b.data(), kLstmGates);
    auto gate = [&](int i) { return g.middleCols(i * kLstmHidden, kLstmHidden).array(); };
    Eigen::Map<const RowMatrix> c_in(c.data() + r0 * kLstmHidden, n, kLstmHidden);
    Eigen::Map<RowMatrix> h_new(h_out + r0 * kLstmHidden, n, kLstmHidden),
        c_new(c_out + r0 * kLstmHidden, n, kLstmHidden);
    c_new.array() = gate(1).logistic() * c_in.array() + gate(0).logistic() * gate(2).tanh();
    h_new.array() = gate(3).logistic() * c_new.array().tanh();
  }
};

void lstm_cell_b32_h512_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("lstm_cell");
  const std::vector<std::int64_t> state_dims{kLstmBatch, kLstmHidden};
  Value x = b.parameter(Shape(DType::kF32, {kLstmBatch, kLstmInput}));
  Value h = b.parameter(Shape(DType::kF32, state_dims));
  Value c = b.parameter(Shape(DType::kF32, state_dims));
  Value w = b.parameter(Shape(DType::kF32, {kLstmInput, kLstmGates}));
  Value u = b.parameter(Shape(DType::kF32, {kLstmHidden, kLstmGates}));
  Value bias = b.parameter(Shape(DType::kF32, {kLstmGates}));
  Value gates = b.add(b.add(b.dot(x, w), b.dot(h, u)),
                      b.broadcast_in_dim(bias, {kLstmBatch, kLstmGates}, {1}));
  auto gate = [&](std::int64_t i) {
    return b.slice(gates, {0, i * kLstmHidden}, {kLstmBatch, (i + 1) * kLstmHidden});
  };
  Value c_new = b.add(b.multiply(b.logistic(gate(1)), c), b.multiply(b.logistic(gate(0)), b.tanh(gate(2))));
  Value h_new = b.multiply(b.logistic(gate(3)), b.tanh(c_new));
  const LstmCell cell;
  Program<cpu::ThreadPool> p(b, {h_new, c_new}, {cell.x, cell.h, cell.c, cell.w, cell.u, cell.b},
                             {{kLstmBatch, kLstmInput}, state_dims, state_dims,
                              {kLstmInput, kLstmGates}, {kLstmHidden, kLstmGates}, {kLstmGates}});
  for (auto _ : state) p.run();
  std::vector<float> got = p.output(0), c_got = p.output(1);
  got.insert(got.end(), c_got.begin(), c_got.end());
  check_close(state, got, model_reference("lstm_cell_b32_h512").data(), 1e-4);
}

void lstm_cell_b32_h512_eigen(benchmark::State& state) {
  // Each thread takes a block of the batch through the whole cell: no synchronization.
  const LstmCell cell;
  std::vector<float> hc(static_cast<std::size_t>(2 * kLstmBatch * kLstmHidden));
  std::vector<RowMatrix> gates(kThreads, RowMatrix(kLstmBatch / kThreads, kLstmGates));
  for (auto _ : state) {
    twin_parallel(kLstmBatch, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      cell.rows(gates[static_cast<std::size_t>(r0 * kThreads / kLstmBatch)], hc.data(),
                hc.data() + kLstmBatch * kLstmHidden, r0, r1);
    });
    benchmark::DoNotOptimize(hc.data());
    benchmark::ClobberMemory();
  }
  check_close(state, hc, model_reference("lstm_cell_b32_h512").data(), 1e-4);
}

// ---- transformer_encoder_128x256: y1 = layer_norm(x + attention(x)),
// y = layer_norm(y1 + gelu(y1 W1 + b1) W2 + b2), gelu in its tanh form.

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)

struct EncoderWeights {
  std::vector<float> x = attention_input(kTokens), w1 = encoder_w1(), b1 = encoder_b1(),
                     w2 = encoder_w2(), b2 = encoder_b2(), g1 = encoder_gamma(0),
                     be1 = encoder_beta(0), g2 = encoder_gamma(1), be2 = encoder_beta(1);
};

/// The encoder by hand: the attention (Attention's three parallel regions), then each block of
/// tokens through both residuals, layer norms and the FFN, in temporaries sized once.
struct Encoder {
  explicit Encoder(std::int64_t blocks) : attention(kTokens), a(static_cast<std::size_t>(kTokens * kModel)) {
    const std::int64_t rows = (kTokens + blocks - 1) / blocks;
    for (std::int64_t i = 0; i < blocks; ++i) {
      t.emplace_back(rows, kModel);
      y1.emplace_back(rows, kModel);
      h.emplace_back(rows, kFfn);
    }
  }

  void rows(float* y, std::size_t block, std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0;
    auto tb = t[block].topRows(n);
    auto y1b = y1[block].topRows(n);
    auto hb = h[block].topRows(n);
    tb = Eigen::Map<const RowMatrix>(w.x.data() + r0 * kModel, n, kModel) +
         Eigen::Map<const RowMatrix>(a.data() + r0 * kModel, n, kModel);
    for (std::int64_t r = 0; r < n; ++r)
      layer_norm_rows(tb.row(r).data(), w.g1.data(), w.be1.data(), y1b.row(r).data(), kModel,
                      kLayerNormEps, 0, 1);
    hb.noalias() = y1b * Eigen::Map<const RowMatrix>(w.w1.data(), kModel, kFfn);
    hb.rowwise() += Eigen::Map<const Row>(w.b1.data(), kFfn);
    hb.array() = 0.5f * hb.array() * (1.0f + (kGeluC * (hb.array() + 0.044715f * hb.array().cube())).tanh());
    tb.noalias() = hb * Eigen::Map<const RowMatrix>(w.w2.data(), kFfn, kModel);
    tb.rowwise() += Eigen::Map<const Row>(w.b2.data(), kModel);
    tb += y1b;
    for (std::int64_t r = 0; r < n; ++r)
      layer_norm_rows(tb.row(r).data(), w.g2.data(), w.be2.data(), y + (r0 + r) * kModel, kModel,
                      kLayerNormEps, 0, 1);
  }

  void run(float* y) {
    attention.run(w.x.data(), a.data());
    twin_parallel(kTokens, kThreads, [&](std::int64_t r0, std::int64_t r1) {
      rows(y, static_cast<std::size_t>(r0 * kThreads / kTokens), r0, r1);
    });
  }
  void run_serial(float* y) {
    attention.run_serial(w.x.data(), a.data());
    rows(y, 0, 0, kTokens);
  }

  EncoderWeights w;
  Attention attention;
  std::vector<float> a;
  std::vector<RowMatrix> t, y1, h;
};

void transformer_encoder_128x256_pjrt_lite(benchmark::State& state) {
  GraphBuilder b("transformer_encoder");
  const std::vector<std::int64_t> dims{kTokens, kModel}, ffn_dims{kTokens, kFfn};
  Value x = b.parameter(Shape(DType::kF32, dims));
  Value aw[4];
  for (Value& wi : aw) wi = b.parameter(Shape(DType::kF32, {kModel, kModel}));
  Value g1 = b.parameter(Shape(DType::kF32, {kModel}));
  Value be1 = b.parameter(Shape(DType::kF32, {kModel}));
  Value w1 = b.parameter(Shape(DType::kF32, {kModel, kFfn}));
  Value b1 = b.parameter(Shape(DType::kF32, {kFfn}));
  Value w2 = b.parameter(Shape(DType::kF32, {kFfn, kModel}));
  Value b2 = b.parameter(Shape(DType::kF32, {kModel}));
  Value g2 = b.parameter(Shape(DType::kF32, {kModel}));
  Value be2 = b.parameter(Shape(DType::kF32, {kModel}));
  Value y1 = layer_norm_graph(b, b.add(x, attention_graph(b, x, aw, kTokens)), g1, be1, kTokens,
                              kModel, kLayerNormEps);
  Value h = b.add(b.dot(y1, w1), b.broadcast_in_dim(b1, ffn_dims, {1}));
  auto scalar = [&](float v) { return broadcast_scalar(b, v, ffn_dims); };
  Value inner = b.multiply(scalar(kGeluC),
                           b.add(h, b.multiply(scalar(0.044715f), b.multiply(h, b.multiply(h, h)))));
  Value gelu = b.multiply(b.multiply(scalar(0.5f), h), b.add(scalar(1.0f), b.tanh(inner)));
  Value f = b.add(b.dot(gelu, w2), b.broadcast_in_dim(b2, dims, {1}));
  Value y = layer_norm_graph(b, b.add(y1, f), g2, be2, kTokens, kModel, kLayerNormEps);
  const EncoderWeights w;
  std::vector<std::vector<float>> args{w.x};
  std::vector<std::vector<std::int64_t>> arg_dims{dims};
  for (int i = 0; i < 4; ++i) {
    args.push_back(attention_weight(i));
    arg_dims.push_back({kModel, kModel});
  }
  for (const auto* v : {&w.g1, &w.be1, &w.w1, &w.b1, &w.w2, &w.b2, &w.g2, &w.be2}) args.push_back(*v);
  const std::vector<std::vector<std::int64_t>> rest{{kModel}, {kModel}, {kModel, kFfn}, {kFfn},
                                                    {kFfn, kModel}, {kModel},       {kModel}, {kModel}};
  arg_dims.insert(arg_dims.end(), rest.begin(), rest.end());
  Program<cpu::ThreadPool> p(b, {y}, args, arg_dims);
  for (auto _ : state) p.run();
  check_close(state, p.output(0), model_reference("transformer_encoder_128x256").data(), 1e-4);
}

void transformer_encoder_128x256_eigen(benchmark::State& state) {
  Encoder e(kThreads);
  std::vector<float> y(static_cast<std::size_t>(kTokens * kModel));
  for (auto _ : state) {
    e.run(y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  check_close(state, y, model_reference("transformer_encoder_128x256").data(), 1e-4);
}

}  // namespace

void register_model_workloads() {
  using benchmark::kMicrosecond;
  add_workload("resnet_block_56x56x64", resnet_block_56x56x64_pjrt_lite,
               resnet_block_56x56x64_eigen, kMicrosecond);
  add_workload("lstm_cell_b32_h512", lstm_cell_b32_h512_pjrt_lite, lstm_cell_b32_h512_eigen,
               kMicrosecond);
  add_workload("transformer_encoder_128x256", transformer_encoder_128x256_pjrt_lite,
               transformer_encoder_128x256_eigen, kMicrosecond);
}

std::vector<float> models_reference(std::string_view workload) {
  std::vector<float> y;
  if (workload == "resnet_block_56x56x64") {
    y = resnet_block_serial();
  } else if (workload == "lstm_cell_b32_h512") {
    y.resize(static_cast<std::size_t>(2 * kLstmBatch * kLstmHidden));
    RowMatrix gates(kLstmBatch, kLstmGates);
    LstmCell().rows(gates, y.data(), y.data() + kLstmBatch * kLstmHidden, 0, kLstmBatch);
  } else if (workload == "transformer_encoder_128x256") {
    y.resize(static_cast<std::size_t>(kTokens * kModel));
    Encoder(1).run_serial(y.data());
  }
  return y;
}

}  // namespace pjrt_lite_bench
