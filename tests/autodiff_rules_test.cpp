// check_grads for the derivative rules of convolution, gather/scatter, the windowed ops, fft,
// triangular_solve and the ops with kinks, the way JAX's lax_autodiff_test checks them: in
// f64, forward mode against central differences along a random direction, reverse mode
// against forward mode by <vjp(w), v> == <w, jvp(v)>, and both again on the derivative
// functions (order 2; most cases at order 1 under a sanitizer, case_order), with
// lax_autodiff_test's f64 tolerance (1e-5) (check_grads.hpp). The oracle is always the
// function itself (finite differences), evaluated by the reference interpreter; the
// derivative graphs also run on the CPU client, which must agree with the interpreter.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/transforms/autodiff.hpp"
#include "check_grads.hpp"
#include "test_util.hpp"

namespace autodiff_rules_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

using Fn = GradCase;
constexpr auto make = &graph_of;

Value s32s(GraphBuilder& b, std::vector<std::int32_t> values, std::vector<std::int64_t> dims) {
  return b.constant(Literal::from_span<std::int32_t>(values, dims).value());
}

// ---- convolution ------------------------------------------------------------------------

/// A random convolution: layouts, strides, dilations, padding, reversal and groups.
Fn random_conv(std::mt19937_64& rng, int index) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (;;) {
    const std::int64_t spatial = pick(1, 2), rank = spatial + 2;
    ConvolutionAttrs a;
    const std::int64_t mode = pick(0, 2);  // 0 plain, 1 feature groups, 2 batch groups
    a.feature_group_count = mode == 1 ? 2 : 1;
    a.batch_group_count = mode == 2 ? 2 : 1;
    const std::int64_t batch = a.batch_group_count * pick(1, 2);
    const std::int64_t in_per_group = pick(1, 2), out_per_group = pick(1, 2);
    const std::int64_t features = in_per_group * a.feature_group_count;
    const std::int64_t out_features = out_per_group * a.feature_group_count * a.batch_group_count;
    auto layout = [&] {
      std::vector<std::int64_t> p(static_cast<std::size_t>(rank));
      std::iota(p.begin(), p.end(), 0);
      std::shuffle(p.begin(), p.end(), rng);
      return p;
    };
    const auto lp = layout(), kp = layout(), op = layout();
    a.input_batch_dimension = lp[0];
    a.input_feature_dimension = lp[1];
    a.kernel_output_feature_dimension = kp[0];
    a.kernel_input_feature_dimension = kp[1];
    a.output_batch_dimension = op[0];
    a.output_feature_dimension = op[1];
    std::vector<std::int64_t> ldims(static_cast<std::size_t>(rank)), kdims(ldims);
    ldims[static_cast<std::size_t>(lp[0])] = batch;
    ldims[static_cast<std::size_t>(lp[1])] = features;
    kdims[static_cast<std::size_t>(kp[0])] = out_features;
    kdims[static_cast<std::size_t>(kp[1])] = in_per_group;
    bool ok = true;
    for (std::int64_t s = 0; s < spatial; ++s) {
      const auto su = static_cast<std::size_t>(s + 2);
      a.input_spatial_dimensions.push_back(lp[su]);
      a.kernel_spatial_dimensions.push_back(kp[su]);
      a.output_spatial_dimensions.push_back(op[su]);
      const std::int64_t in = pick(2, 5), k = pick(1, 3);
      ldims[static_cast<std::size_t>(lp[su])] = in;
      kdims[static_cast<std::size_t>(kp[su])] = k;
      a.window_strides.push_back(pick(1, 2));
      a.lhs_dilation.push_back(pick(1, 2));
      a.rhs_dilation.push_back(pick(1, 2));
      a.padding_low.push_back(pick(-1, 2));
      a.padding_high.push_back(pick(-1, 2));
      a.window_reversal.push_back(pick(0, 1));
      const std::int64_t span = 1 + (in - 1) * a.lhs_dilation.back() + a.padding_low.back() +
                                a.padding_high.back() - (1 + (k - 1) * a.rhs_dilation.back());
      ok = ok && span >= 0;
    }
    if (!ok) continue;
    const std::string name = "conv" + std::to_string(index);
    return Fn{name, make(name, {f64(ldims), f64(kdims)}, [a](GraphBuilder& b, auto& p) {
                return std::vector<Value>{b.convolution(p[0], p[1], a)};
              })};
  }
}

// ---- the other ops ----------------------------------------------------------------------

std::vector<Fn> cases() {
  std::vector<Fn> c;
  using P = const std::vector<Value>&;
  using V = std::vector<Value>;
  auto add = [&](std::string name, std::vector<Shape> in,
                 std::function<V(GraphBuilder&, P)> f, double lo = -2, double hi = 2,
                 int order = 2) { c.push_back(Fn{name, make(name, in, f), lo, hi, order}); };

  // NHWC / HWIO, stride 2 and SAME-like padding, as a CNN layer has it.
  add("conv_nhwc_hwio", {f64({1, 5, 4, 2}), f64({3, 3, 2, 3})}, [](GraphBuilder& b, P p) {
    ConvolutionAttrs a;
    a.input_batch_dimension = 0;
    a.input_feature_dimension = 3;
    a.input_spatial_dimensions = {1, 2};
    a.kernel_input_feature_dimension = 2;
    a.kernel_output_feature_dimension = 3;
    a.kernel_spatial_dimensions = {0, 1};
    a.output_batch_dimension = 0;
    a.output_feature_dimension = 3;
    a.output_spatial_dimensions = {1, 2};
    a.window_strides = {2, 2};
    a.padding_low = {1, 1};
    a.padding_high = {1, 1};
    return V{b.convolution(p[0], p[1], a)};
  });

  // gather: an embedding lookup with a repeated id and one out of range (clamped).
  add("gather_rows", {f64({5, 3})}, [](GraphBuilder& b, P p) {
    GatherAttrs g;
    g.offset_dims = {1};
    g.collapsed_slice_dims = {0};
    g.start_index_map = {0};
    g.index_vector_dim = 1;
    g.slice_sizes = {1, 3};
    return V{b.gather(p[0], s32s(b, {1, 4, 1, 7}, {4, 1}), g)};
  });
  add("gather_windows_2d", {f64({4, 5})}, [](GraphBuilder& b, P p) {
    GatherAttrs g;
    g.offset_dims = {1, 2};
    g.start_index_map = {0, 1};
    g.index_vector_dim = 1;
    g.slice_sizes = {2, 3};
    return V{b.gather(p[0], s32s(b, {0, 1, 2, 2, 3, 4}, {3, 2}), g)};
  });
  ScatterAttrs rows;
  rows.update_window_dims = {1};
  rows.inserted_window_dims = {0};
  rows.scatter_dims_to_operand_dims = {0};
  rows.index_vector_dim = 1;
  add("scatter_add_rows", {f64({5, 3}), f64({4, 3})}, [rows](GraphBuilder& b, P p) {
    return V{b.scatter(p[0], s32s(b, {1, 4, 1, 9}, {4, 1}), p[1], OpCode::kAdd, rows)};
  });
  add("scatter_replace_rows", {f64({5, 3}), f64({4, 3})}, [rows](GraphBuilder& b, P p) {
    return V{b.scatter(p[0], s32s(b, {1, 4, 1, 9}, {4, 1}), p[1], OpCode::kParameter, rows)};
  });
  ScatterAttrs windows;
  windows.update_window_dims = {1};
  windows.scatter_dims_to_operand_dims = {0};
  windows.index_vector_dim = 1;
  // Windows of 2 at 1, 5 (half outside) and 9 (wholly outside) of a 6-vector.
  add("scatter_add_partial_windows", {f64({6}), f64({3, 2})}, [windows](GraphBuilder& b, P p) {
    Value y = b.scatter(p[0], s32s(b, {1, 5, 9}, {3, 1}), p[1], OpCode::kAdd, windows);
    return V{b.multiply(y, y)};
  });
  add("scatter_replace_partial_windows", {f64({6}), f64({3, 2})}, [windows](GraphBuilder& b, P p) {
    Value y = b.scatter(p[0], s32s(b, {4, 5, 9}, {3, 1}), p[1], OpCode::kParameter, windows);
    return V{b.multiply(y, y)};
  });
  add("dynamic_slice_clamped", {f64({5, 4})}, [](GraphBuilder& b, P p) {
    Value y = b.dynamic_slice(p[0], {b.constant(std::int32_t{4}), b.constant(std::int32_t{-1})}, {3, 2});
    return V{b.multiply(y, y)};
  });
  add("dynamic_update_slice", {f64({5, 4}), f64({2, 3})}, [](GraphBuilder& b, P p) {
    Value y = b.dynamic_update_slice(p[0], p[1], {b.constant(std::int32_t{3}), b.constant(std::int32_t{9})});
    return V{b.multiply(y, y)};
  });

  // Windows.
  add("window_sum_strided_padded", {f64({5, 6})}, [](GraphBuilder& b, P p) {
    WindowAttrs w{{2, 3}, {2, 1}, {}, {}, {1, 0}, {0, 2}};
    Value y = b.reduce_window(p[0], b.scalar(kF64, 0), OpCode::kAdd, w);
    return V{b.multiply(y, y)};
  });
  add("window_sum_dilated", {f64({4, 5}), f64({})}, [](GraphBuilder& b, P p) {
    WindowAttrs w{{2, 2}, {1, 2}, {2, 1}, {1, 2}, {0, 1}, {1, 0}};
    Value y = b.reduce_window(p[0], p[1], OpCode::kAdd, w);
    return V{b.multiply(y, y)};
  });
  add("cumsum", {f64({2, 5})}, [](GraphBuilder& b, P p) {
    Value y = b.reduce_window(p[0], b.scalar(kF64, 0), OpCode::kAdd, WindowAttrs{{1, 5}, {}, {}, {}, {0, 4}, {0, 0}});
    return V{b.multiply(y, y)};
  });
  add("cumprod_with_zeros", {f64({2, 5})}, [](GraphBuilder& b, P p) {
    // Row 0 gets an exact zero at column 2: windows after it hold one zero.
    Value at = b.and_(b.compare(b.iota(Shape(kS32, {2, 5}), 0), b.broadcast_in_dim(b.scalar(kS32, 0), {2, 5}, {}),
                                ComparisonDirection::kEq),
                      b.compare(b.iota(Shape(kS32, {2, 5}), 1), b.broadcast_in_dim(b.scalar(kS32, 2), {2, 5}, {}),
                                ComparisonDirection::kEq));
    Value x = b.select(at, b.broadcast_in_dim(b.scalar(kF64, 0), {2, 5}, {}), p[0]);
    return V{b.reduce_window(x, b.scalar(kF64, 1), OpCode::kMultiply, WindowAttrs{{1, 5}, {}, {}, {}, {0, 4}, {0, 0}})};
  });
  add("window_product_padded_init", {f64({5})}, [](GraphBuilder& b, P p) {
    return V{b.reduce_window(p[0], b.scalar(kF64, 1.5), OpCode::kMultiply, WindowAttrs{{3}, {2}, {}, {}, {1}, {1}})};
  });
  add("max_pool_padded", {f64({5, 6})}, [](GraphBuilder& b, P p) {
    WindowAttrs w{{2, 3}, {2, 2}, {}, {}, {1, 1}, {0, 1}};
    return V{b.reduce_window(p[0], b.scalar(kF64, -INFINITY), OpCode::kMaximum, w)};
  });
  add("min_pool_overlapping", {f64({6})}, [](GraphBuilder& b, P p) {
    return V{b.reduce_window(p[0], b.scalar(kF64, INFINITY), OpCode::kMinimum, WindowAttrs{{3}, {1}})};
  });
  add("max_pool_init_zero", {f64({8})}, [](GraphBuilder& b, P p) {
    // A relu-like pool: where every element is negative the result is the init, 0.
    return V{b.reduce_window(p[0], b.scalar(kF64, 0), OpCode::kMaximum, WindowAttrs{{2}, {2}})};
  });
  add("cummax", {f64({6})}, [](GraphBuilder& b, P p) {
    return V{b.reduce_window(p[0], b.scalar(kF64, -INFINITY), OpCode::kMaximum,
                             WindowAttrs{{6}, {}, {}, {}, {5}, {0}})};
  });
  add("select_and_scatter", {f64({4, 6}), f64({2, 2}), f64({})}, [](GraphBuilder& b, P p) {
    WindowAttrs w{{2, 3}, {2, 3}};
    return V{b.select_and_scatter(p[0], p[1], p[2], ComparisonDirection::kGe, OpCode::kAdd, w)};
  });
  add("select_and_scatter_overlapping_padded", {f64({5}), f64({3})}, [](GraphBuilder& b, P p) {
    WindowAttrs w{{3}, {2}, {}, {}, {1}, {1}};
    Value y = b.select_and_scatter(p[0], p[1], b.scalar(kF64, 0), ComparisonDirection::kLe, OpCode::kAdd, w);
    return V{b.multiply(y, y)};
  });

  // fft of each kind, complex values entering and leaving as (real, imaginary) pairs.
  auto fft_case = [&](std::string name, FftType type, std::vector<std::int64_t> dims,
                      std::vector<std::int64_t> length) {
    const bool real_in = type == FftType::kRfft;
    std::vector<Shape> in{f64(dims)};
    if (!real_in) in.push_back(f64(dims));
    add(name, in, [=](GraphBuilder& b, P p) {
      Value z = real_in ? p[0] : b.complex(p[0], p[1]);
      Value y = b.fft(z, type, length);
      if (type == FftType::kIrfft) return V{b.multiply(y, y)};
      return V{b.real(y), b.multiply(b.imag(y), b.imag(y))};
    });
  };
  fft_case("fft", FftType::kFft, {2, 4}, {4});
  fft_case("ifft_2d", FftType::kIfft, {3, 2}, {3, 2});
  fft_case("rfft_even", FftType::kRfft, {2, 6}, {6});
  fft_case("rfft_odd_2d", FftType::kRfft, {3, 5}, {3, 5});
  fft_case("irfft_even", FftType::kIrfft, {2, 4}, {6});
  fft_case("irfft_odd", FftType::kIrfft, {3}, {5});
  fft_case("irfft_2d", FftType::kIrfft, {2, 3}, {2, 4});

  // triangular_solve in both operands, every side, triangle, transposition and diagonal.
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (Transpose tr : {Transpose::kNoTranspose, Transpose::kTranspose, Transpose::kAdjoint}) {
        const bool unit = tr == Transpose::kTranspose;
        const std::string name = std::string("triangular_solve_") + (left ? "left" : "right") +
                                 (lower ? "_lower" : "_upper") + "_" + std::to_string(static_cast<int>(tr)) +
                                 (unit ? "_unit" : "");
        add(name, {f64({2, 3, 3}), f64(left ? std::vector<std::int64_t>{2, 3, 2} : std::vector<std::int64_t>{2, 2, 3})},
            [=](GraphBuilder& b, P p) {
              // A well-conditioned matrix: the parameter plus 4 on the diagonal.
              Value eye = b.convert(b.compare(b.iota(Shape(kS32, {2, 3, 3}), 1), b.iota(Shape(kS32, {2, 3, 3}), 2),
                                              ComparisonDirection::kEq),
                                    kF64);
              Value a = b.add(p[0], b.multiply(eye, b.broadcast_in_dim(b.scalar(kF64, 4), {2, 3, 3}, {})));
              return V{b.triangular_solve(a, p[1], TriangularSolveAttrs{left, lower, unit, tr})};
            });
      }
  // A complex adjoint solve, in (real, imaginary) parts.
  add("triangular_solve_complex_adjoint", {f64({3, 3}), f64({3, 3}), f64({3, 2}), f64({3, 2})},
      [](GraphBuilder& b, P p) {
        Value eye = b.convert(b.compare(b.iota(Shape(kS32, {3, 3}), 0), b.iota(Shape(kS32, {3, 3}), 1),
                                        ComparisonDirection::kEq),
                              kF64);
        Value a = b.complex(b.add(p[0], b.multiply(eye, b.broadcast_in_dim(b.scalar(kF64, 4), {3, 3}, {}))), p[1]);
        Value x = b.triangular_solve(a, b.complex(p[2], p[3]),
                                     TriangularSolveAttrs{true, false, false, Transpose::kAdjoint});
        return V{b.real(x), b.imag(x)};
      });

  // Ops with kinks and the existing rules, at order 2.
  add("sort_then_square", {f64({3, 4})}, [](GraphBuilder& b, P p) {
    Value s = b.sort(p[0], 1);
    return V{b.multiply(s, s)};
  });
  add("top_k", {f64({2, 5})}, [](GraphBuilder& b, P p) {
    Value t = b.top_k(p[0], 2)[0];
    return V{b.multiply(t, t)};
  });
  add("argmax_pair_value", {f64({4, 3})}, [](GraphBuilder& b, P p) {
    Value m = b.argmax(p[0], 0)[0];
    return V{b.multiply(m, m)};
  });
  add("clamp", {f64({6}), f64({6})}, [](GraphBuilder& b, P p) {
    Value lo = b.broadcast_in_dim(b.scalar(kF64, -0.5), {6}, {});
    Value y = b.clamp(lo, b.multiply(p[0], p[1]), b.broadcast_in_dim(b.scalar(kF64, 0.7), {6}, {}));
    return V{b.multiply(y, y)};
  });
  add("rem", {f64({6}), f64({6})}, [](GraphBuilder& b, P p) { return V{b.remainder(b.multiply(p[0], p[0]), p[1])}; },
      0.3, 3);
  add("atan2", {f64({6}), f64({6})}, [](GraphBuilder& b, P p) { return V{b.atan2(p[0], p[1])}; });
  add("pow", {f64({6}), f64({6})}, [](GraphBuilder& b, P p) { return V{b.power(p[0], p[1])}; }, 0.5, 2);
  return c;
}

}  // namespace

TEST_CASE("autodiff rules: check_grads at order 2 for random convolutions") {
  std::mt19937_64 rng(24);
  for (int i = 0; i < 30; ++i) {
    const Fn f = random_conv(rng, i);
    // Most at order 1 under a sanitizer (case_order).
    check_grads(f.g, rng, f.lo, f.hi, case_order(f.order, static_cast<std::size_t>(i)));
  }
}

TEST_CASE("autodiff rules: check_grads at order 2 for gather, scatter, windows, fft, solves and kinks") {
  std::mt19937_64 rng(25);
  const std::vector<Fn> fns = cases();
  // Most at order 1 under a sanitizer (case_order).
  for (std::size_t i = 0; i < fns.size(); ++i)
    check_grads(fns[i].g, rng, fns[i].lo, fns[i].hi, case_order(fns[i].order, i));
}

TEST_CASE("autodiff rules: piecewise-constant ops have zero tangents and cotangents") {
  for (OpCode op : {OpCode::kFloor, OpCode::kCeil, OpCode::kRoundNearestAfz, OpCode::kRoundNearestEven,
                    OpCode::kSign}) {
    CAPTURE(op_name(op));
    GraphBuilder b("g");
    Value x = b.parameter(f64({4}));
    const Graph g = build_ok(b, {b.add(b.unary(op, x), b.convert(b.compare(x, b.broadcast_in_dim(b.scalar(kF64, 0), {4}, {}), ComparisonDirection::kGt), kF64))});
    const Literal xs = Literal::vector<double>({-1.3, 0.4, 2.6, -0.2});
    const Literal ones = Literal::vector<double>({1, 1, 1, 1});
    CHECK(evaluate_ok(jvp_graph(g, {true}).value(), {xs, ones})[1] == Literal::vector<double>({0, 0, 0, 0}));
    CHECK(evaluate_ok(vjp_graph(g, {true}).value(), {xs, ones})[1] == Literal::vector<double>({0, 0, 0, 0}));
  }
}

TEST_CASE("autodiff rules: at a tie, an argmax's value takes the chosen element's tangent, a max's is shared") {
  GraphBuilder b("ties");
  Value x = b.parameter(f64({4}));
  std::vector<Value> arg = b.argmax(x, 0);
  const Graph g = build_ok(b, {arg[0], b.reduce(x, b.scalar(kF64, -INFINITY), OpCode::kMaximum, {0})});
  const Literal xs = Literal::vector<double>({1, 3, 3, 0});
  const Literal ts = Literal::vector<double>({0, 10, 20, 0});
  const std::vector<Literal> out = evaluate_ok(jvp_graph(g, {true}).value(), {xs, ts});
  CHECK(out[2] == Literal::scalar(10.0));  // index 1, the first maximum
  CHECK(out[3] == Literal::scalar(15.0));
  const std::vector<Literal> back =
      evaluate_ok(vjp_graph(g, {true}).value(), {xs, Literal::scalar(1.0), Literal::scalar(0.0)});
  CHECK(back[2] == Literal::vector<double>({0, 1, 0, 0}));
}

TEST_CASE("autodiff rules: what has no rule is UNIMPLEMENTED by name") {
  // A multiplying scatter's updates with repeated indices (as in JAX), a window whose body is
  // not element-wise.
  GraphBuilder sb("scatter_mul");
  Value into = sb.parameter(f64({5}));
  Value upd = sb.parameter(f64({2}));
  ScatterAttrs s;
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  const Graph sg = build_ok(sb, {sb.scatter(into, s32s(sb, {1, 3}, {2, 1}), upd, OpCode::kMultiply, s)});
  check_error(jvp_graph(sg, {true, true}), StatusCode::kUnimplemented, "unique_indices");
  GraphBuilder body_b("weird");
  Value l = body_b.parameter(f64({}));
  Value r = body_b.parameter(f64({}));
  const Graph weird = build_ok(body_b, {body_b.add(body_b.reshape(l, {}), r)});
  GraphBuilder pb("window_weird");
  Value x = pb.parameter(f64({4}));
  const Graph pg = build_ok(pb, {pb.reduce_window({x}, {pb.scalar(kF64, 1)}, weird, WindowAttrs{{2}})[0]});
  check_error(vjp_graph(pg, {true}), StatusCode::kUnimplemented, "reshape is not element-wise");
  GraphBuilder db("dilated_max_pool");
  Value y = db.parameter(f64({6}));
  const Graph dg = build_ok(
      db, {db.reduce_window(y, db.scalar(kF64, -INFINITY), OpCode::kMaximum, WindowAttrs{{2}, {1}, {1}, {2}})});
  // A dilated max pool now has both modes (by its slices; check_grads_test checks values).
  CHECK(jvp_graph(dg, {true}).ok());
  CHECK(vjp_graph(dg, {true}).ok());
}

}  // namespace autodiff_rules_test
