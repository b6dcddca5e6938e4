#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// reduce on the CPU. Inputs are viewed as [outer, reduced, inner] when the reduced dimensions
// are adjacent (a strided copy into scratch puts them last otherwise). A body that is one
// add / multiply / max / min / and / or of one input runs as vectorized loops; any other body
// (variadic reduces such as argmax) is compiled to a scalar TileProgram and stepped once per
// element, in index order as the reference does.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include <Eigen/Core>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/tile_program.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// Lowers a graph of rank-0 element-wise ops to a TileProgram over externals: parameters
/// 0..P-1 are externals 0..P-1, outputs are externals P..P+R-1, constants follow. Returns the
/// constants' external addresses in `constants` (pointers into the graph's literals, which
/// outlive the program because the executable keeps the graph). With `splat_constants` the
/// constants are broadcast, so the program may run over many elements at once.
inline Status lower_scalar_graph(const Graph& g, TileProgram& program, std::vector<const std::byte*>& constants,
                                 bool splat_constants = false) {
  const auto params = static_cast<std::int32_t>(g.num_parameters());
  const auto results = static_cast<std::int32_t>(g.outputs().size());
  std::vector<std::int32_t> reg(static_cast<std::size_t>(g.num_nodes()), -1);
  for (std::int64_t i = 0; i < g.num_parameters(); ++i) {
    Value p = g.parameters()[static_cast<std::size_t>(i)];
    reg[static_cast<std::size_t>(p.node)] = program.external(static_cast<std::int32_t>(i), g.shape(p).dtype());
  }
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(i);
    if (node.op == OpCode::kParameter) continue;
    if (node.op == OpCode::kConstant) {
      const auto& lit = *node.attr<ConstantAttrs>().value;
      if (lit.element_count() != 1) return unimplemented_error("cpu: non-scalar constant in a reduce body");
      constants.push_back(static_cast<const std::byte*>(lit.untyped_data()));
      const auto e = params + results + static_cast<std::int32_t>(constants.size() - 1);
      reg[static_cast<std::size_t>(i)] = splat_constants ? program.splat(e, lit.dtype()) : program.external(e, lit.dtype());
      continue;
    }
    if (!is_elementwise(node.op) || node.results.size() != 1)
      return unimplemented_error(str_cat("cpu: ", op_name(node.op), " in a reduce body"));
    std::vector<std::int32_t> ins;
    for (Value v : node.operands) ins.push_back(reg[static_cast<std::size_t>(v.node)]);
    reg[static_cast<std::size_t>(i)] = program.scratch(node.shape().dtype());
    PJRT_LITE_RETURN_IF_ERROR(program.emit(node, reg[static_cast<std::size_t>(i)], ins));
  }
  for (std::int32_t r = 0; r < results; ++r) {
    Value out = g.outputs()[static_cast<std::size_t>(r)];
    PJRT_LITE_RETURN_IF_ERROR(program.emit_copy(program.external(params + r, g.shape(out).dtype()),
                                                reg[static_cast<std::size_t>(out.node)]));
  }
  program.finalize();
  return ok_status();
}

/// The op of a reduce body that is `op(p0, p1)` of its two parameters (add, multiply, maximum,
/// minimum, and, or), for one input of a type with its own kernels, or nothing.
inline std::optional<OpCode> simple_reduce_op(const Graph& body, std::int64_t count) {
  if (count != 1 || body.outputs().size() != 1) return std::nullopt;
  const DType t = body.shape(body.outputs()[0]).dtype();
  if (computes_in_f32(t)) return std::nullopt;
  const Node& n = body.node(body.outputs()[0]);
  switch (n.op) {
    case OpCode::kAdd: case OpCode::kMultiply: case OpCode::kMaximum: case OpCode::kMinimum:
    case OpCode::kAnd: case OpCode::kOr: break;
    default: return std::nullopt;
  }
  if (is_complex(t) && (n.op == OpCode::kMaximum || n.op == OpCode::kMinimum)) return std::nullopt;
  const Node& a = body.node(n.operands[0]);
  const Node& b = body.node(n.operands[1]);
  if (a.op != OpCode::kParameter || b.op != OpCode::kParameter) return std::nullopt;
  if (a.attr<ParameterAttrs>().number == b.attr<ParameterAttrs>().number) return std::nullopt;
  return n.op;
}

class ReduceKernel final : public Kernel {
 public:
  /// Plans reducing `inputs` (slots with `input_shape`) over `dims` with `body`. An error means
  /// the body cannot run on the CPU.
  static StatusOr<std::unique_ptr<ReduceKernel>> make(const Shape& input_shape, const std::vector<std::int64_t>& dims,
                                                      const Graph& body, std::vector<std::int32_t> input_slots,
                                                      std::vector<std::int32_t> init_slots,
                                                      std::vector<std::int32_t> dst_slots) {
    auto k = std::unique_ptr<ReduceKernel>(new ReduceKernel());
    k->inputs_ = std::move(input_slots);
    k->inits_ = std::move(init_slots);
    k->dsts_ = std::move(dst_slots);
    const auto count = static_cast<std::int64_t>(k->inputs_.size());
    for (Value p : body.parameters()) k->dtypes_.push_back(body.shape(p).dtype());
    k->dtypes_.resize(static_cast<std::size_t>(count));

    // [outer, reduced, inner]; reduced dims moved last by a copy unless they are adjacent.
    std::vector<std::int64_t> kept, reduced;
    for (std::int64_t d = 0; d < input_shape.rank(); ++d)
      (std::find(dims.begin(), dims.end(), d) != dims.end() ? reduced : kept).push_back(d);
    std::vector<std::int64_t> nontrivial;
    for (std::int64_t d : reduced)
      if (input_shape.dim(d) != 1) nontrivial.push_back(d);
    bool adjacent = true;
    for (std::size_t i = 1; i < nontrivial.size(); ++i) adjacent &= nontrivial[i] == nontrivial[i - 1] + 1;
    for (std::int64_t d : reduced) k->reduced_ *= input_shape.dim(d);
    std::int64_t total = input_shape.element_count();
    if (adjacent && !nontrivial.empty()) {
      for (std::int64_t d = nontrivial.back() + 1; d < input_shape.rank(); ++d) k->inner_ *= input_shape.dim(d);
    }
    // An empty input has no [outer, reduced, inner] to divide out: a zero-sized reduced
    // dimension is handled below, a zero-sized inner one leaves no result elements.
    k->outer_ = k->reduced_ == 0 || k->inner_ == 0 ? 0 : total / k->reduced_ / k->inner_;
    if (k->reduced_ == 0) {
      k->outer_ = 1;
      for (std::int64_t d : kept) k->outer_ *= input_shape.dim(d);
      k->inner_ = 1;
    }
    if (!adjacent) {
      // Copy each input to [kept..., reduced...] so the reduced elements of an output are a row.
      std::vector<std::int64_t> order = kept;
      order.insert(order.end(), reduced.begin(), reduced.end());
      for (std::int64_t i = 0; i < count; ++i) {
        const auto esize = static_cast<std::int64_t>(byte_size(k->dtypes_[static_cast<std::size_t>(i)]));
        k->transposes_.push_back(StridedCopy::permuting(input_shape.dims(), order, esize));
        k->transposed_offsets_.push_back(k->scratch_bytes);
        k->scratch_bytes += (total * esize + 63) / 64 * 64;
      }
    }

    k->fast_op_ = simple_reduce_op(body, count);
    if (!k->fast_op_) {
      PJRT_LITE_RETURN_IF_ERROR(lower_scalar_graph(body, k->body_, k->body_constants_));
      k->acc_offset_ = k->scratch_bytes;
      k->scratch_bytes += 64 * count * 2;  // accumulators, then the body's results
      k->body_offset_ = k->scratch_bytes;
      const auto externals = static_cast<std::int64_t>(3 * count) + static_cast<std::int64_t>(k->body_constants_.size());
      k->scratch_bytes += (k->body_.scratch_bytes() + 63) / 64 * 64 + externals * 8;
    }
    k->flops = static_cast<double>(total);
    for (DType t : k->dtypes_) k->bytes_accessed += total * static_cast<std::int64_t>(byte_size(t));
    return k;
  }

  void run(const RunContext& ctx) const override {
    const auto count = inputs_.size();
    std::array<const std::byte*, 8> small{};
    std::vector<const std::byte*> large;
    const std::byte** in = small.data();
    if (count > small.size()) {
      large.resize(count);
      in = large.data();
    }
    for (std::size_t i = 0; i < count; ++i) {
      in[i] = ctx.slots[inputs_[i]];
      if (!transposes_.empty()) {
        transposes_[i].run(ctx.scratch + transposed_offsets_[i], in[i]);
        in[i] = ctx.scratch + transposed_offsets_[i];
      }
    }
    if (fast_op_) run_fast(ctx, in[0]);
    else run_general(ctx, in);
  }

 private:
  ReduceKernel() = default;

  void run_fast(const RunContext& ctx, const std::byte* input) const {
    const DType t = dtypes_[0];
    const TileFn combine = find_tile_kernel(*fast_op_, t, t);
    const auto esize = static_cast<std::int64_t>(byte_size(t));
    std::byte* out = ctx.slots[dsts_[0]];
    const std::byte* init = ctx.slots[inits_[0]];
    // out[o, :] = init, then out[o, :] = op(out[o, :], x[o, r, :]) for each r, inner-vectorized.
    for (std::int64_t o = 0; o < outer_ * inner_; ++o) std::memcpy(out + o * esize, init, static_cast<std::size_t>(esize));
    auto rows = [&](std::int64_t o0, std::int64_t o1, int) {
      TileArgs args;
      for (std::int64_t o = o0; o < o1; ++o) {
        std::byte* acc = out + o * inner_ * esize;
        if (inner_ == 1) {
          reduce_row(t, input + o * reduced_ * esize, acc);
          continue;
        }
        for (std::int64_t r = 0; r < reduced_; ++r) {
          args.in[0] = acc;
          args.in[1] = input + (o * reduced_ + r) * inner_ * esize;
          args.out = acc;
          args.n = inner_;
          combine(args);
        }
      }
    };
    if (outer_ * reduced_ * inner_ >= (1 << 18) && outer_ >= 4) split_.run(ctx, outer_, 1, rows);
    else rows(0, outer_, 0);
  }

  /// acc = op(acc, x[0], ..., x[reduced-1]) for one contiguous row, in index order for
  /// everything but float sums and products, which Eigen vectorizes.
  void reduce_row(DType t, const std::byte* row, std::byte* acc) const {
    visit_dtype(t, [&]<class T>(std::type_identity<T>) {
      if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
      } else {
        const T* x = reinterpret_cast<const T*>(row);
        if (reduced_ == 0) return;  // the accumulator already holds init
        T a;
        std::memcpy(&a, acc, sizeof(T));
        if constexpr (std::is_floating_point_v<T> || is_complex_v<T>) {
          using Vec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
          if (*fast_op_ == OpCode::kAdd) a = a + Vec(x, reduced_).sum();
          else if (*fast_op_ == OpCode::kMultiply) a = a * Vec(x, reduced_).prod();
          else if constexpr (std::is_floating_point_v<T>) {
            if (*fast_op_ == OpCode::kMaximum) for (std::int64_t r = 0; r < reduced_; ++r) a = ew::float_max(a, x[r]);
            else for (std::int64_t r = 0; r < reduced_; ++r) a = ew::float_min(a, x[r]);
          }
        } else {
          TileArgs args;
          T tmp = a;
          args.in[0] = &tmp;
          args.out = &tmp;
          args.n = 1;
          const TileFn combine = find_tile_kernel(*fast_op_, t, t);
          for (std::int64_t r = 0; r < reduced_; ++r) {
            args.in[1] = x + r;
            combine(args);
          }
          a = tmp;
        }
        std::memcpy(acc, &a, sizeof(T));
      }
    });
  }

  void run_general(const RunContext& ctx, const std::byte* const* in) const {
    const auto count = static_cast<std::int64_t>(inputs_.size());
    std::byte* acc = ctx.scratch + acc_offset_;  // count accumulators of 64 bytes, then count results
    std::byte* results = acc + 64 * count;
    std::byte* body_scratch = ctx.scratch + body_offset_;
    auto** externals = reinterpret_cast<std::byte**>(body_scratch + (body_.scratch_bytes() + 63) / 64 * 64);
    for (std::size_t c = 0; c < body_constants_.size(); ++c)
      externals[3 * count + static_cast<std::int64_t>(c)] = const_cast<std::byte*>(body_constants_[c]);
    for (std::int64_t i = 0; i < count; ++i) {
      externals[i] = acc + 64 * i;
      externals[2 * count + i] = results + 64 * i;
    }
    for (std::int64_t o = 0; o < outer_; ++o) {
      for (std::int64_t j = 0; j < inner_; ++j) {
        for (std::int64_t i = 0; i < count; ++i)
          std::memcpy(acc + 64 * i, ctx.slots[inits_[static_cast<std::size_t>(i)]], byte_size(dtypes_[static_cast<std::size_t>(i)]));
        for (std::int64_t r = 0; r < reduced_; ++r) {
          const std::int64_t element = (o * reduced_ + r) * inner_ + j;
          for (std::int64_t i = 0; i < count; ++i)
            externals[count + i] = const_cast<std::byte*>(in[i]) + element * static_cast<std::int64_t>(byte_size(dtypes_[static_cast<std::size_t>(i)]));
          body_.run(externals, 0, 1, body_scratch);
          for (std::int64_t i = 0; i < count; ++i)
            std::memcpy(acc + 64 * i, results + 64 * i, byte_size(dtypes_[static_cast<std::size_t>(i)]));
        }
        for (std::int64_t i = 0; i < count; ++i) {
          const auto esize = static_cast<std::int64_t>(byte_size(dtypes_[static_cast<std::size_t>(i)]));
          std::memcpy(ctx.slots[dsts_[static_cast<std::size_t>(i)]] + (o * inner_ + j) * esize, acc + 64 * i,
                      static_cast<std::size_t>(esize));
        }
      }
    }
  }

  std::vector<std::int32_t> inputs_, inits_, dsts_;
  std::vector<DType> dtypes_;
  std::int64_t outer_ = 1, reduced_ = 1, inner_ = 1;
  std::vector<StridedCopy> transposes_;
  std::vector<std::int64_t> transposed_offsets_;
  std::optional<OpCode> fast_op_;
  TileProgram body_;
  std::vector<const std::byte*> body_constants_;
  std::int64_t acc_offset_ = 0, body_offset_ = 0;
  SplitLearner split_;
};

}  // namespace pjrt_lite::cpu::detail
