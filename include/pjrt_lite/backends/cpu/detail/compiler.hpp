#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// Compiling a graph for the CPU: verify, simplify, group element-wise ops into fused loops,
// give every array a slot, plan the arena, and emit kernels. The result is a Program.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/compile_options.hpp"
#include "pjrt_lite/backends/cpu/detail/channel_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/collective_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/compile_program.hpp"
#include "pjrt_lite/backends/cpu/detail/control_flow_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/conv_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/dot_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/fft_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/triangular_solve_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/gather_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/kernel_builds.hpp"
#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/linalg_factory.hpp"
#include "pjrt_lite/backends/cpu/detail/program.hpp"
#include "pjrt_lite/backends/cpu/detail/reduce_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/rng_bit_generator_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/row_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/scatter_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/sort_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/window_kernel.hpp"
#include "pjrt_lite/backends/cpu/detail/tile_program.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/backends/reference/rng_bit_generator.hpp"
#include "pjrt_lite/ir/fingerprint.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/printer.hpp"
#include "pjrt_lite/ir/verifier.hpp"
#include "pjrt_lite/transforms/simplify.hpp"
#include "pjrt_lite/transforms/widen_narrow.hpp"

namespace pjrt_lite::inline v0_1::cpu {

namespace detail {

/// Compiles `graph` with the kernels of this translation unit (compile_program picks the
/// build; a region of a while, case or if compiles with its parent's).
inline StatusOr<std::shared_ptr<Program>> compile_program_here(const Graph& graph, const CompileOptions& options,
                                                               int max_workers);

class Compiler {
 public:
  Compiler(const Graph& graph, const CompileOptions& options, int max_workers)
      : g_(graph), options_(options), max_workers_(max_workers) {}

  StatusOr<std::shared_ptr<Program>> run() {
    program_ = std::make_shared<Program>();
    program_->graph = g_;
    program_->max_workers = max_workers_;
    for (Value p : g_.parameters()) program_->parameter_shapes.push_back(g_.shape(p));
    for (Value o : g_.outputs()) program_->output_shapes.push_back(g_.shape(o));
    PJRT_LITE_RETURN_IF_ERROR(check_reduce_bodies());
    find_users();
    find_int8_products();
    form_row_groups();
    form_groups();
    assign_slots();
    PJRT_LITE_RETURN_IF_ERROR(emit_kernels());
    fuse_epilogues();
    PJRT_LITE_RETURN_IF_ERROR(plan_arena());
    plan_donation();
    summarize();
    return std::move(program_);
  }

 private:
  // ---- Values: node n, result r has id value_base_[n] + r.
  std::int64_t id(Value v) const { return value_base_[static_cast<std::size_t>(v.node)] + v.index; }

  void find_users() {
    value_base_.resize(static_cast<std::size_t>(g_.num_nodes()));
    std::int64_t next = 0;
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i) {
      value_base_[static_cast<std::size_t>(i)] = next;
      next += static_cast<std::int64_t>(g_.node(i).results.size());
    }
    users_.assign(static_cast<std::size_t>(next), {});
    is_output_.assign(static_cast<std::size_t>(next), false);
    value_slot_.assign(static_cast<std::size_t>(next), -1);
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i)
      for (Value v : g_.node(i).operands) users_[static_cast<std::size_t>(id(v))].push_back(i);
    for (Value v : g_.outputs()) is_output_[static_cast<std::size_t>(id(v))] = true;
  }

  /// A reduce whose body takes another type than its inputs (StableHLO's promotable types:
  /// f32 inputs summed in f64) is refused, as for reduce_window and scatter: the reduce and
  /// row kernels compute in the inputs' type.
  Status check_reduce_bodies() const {
    for (const Node& n : g_.nodes()) {
      if (n.op != OpCode::kReduce || n.bodies.empty()) continue;
      const Graph& body = n.bodies[0];
      const std::size_t count = n.operands.size() / 2;
      for (std::size_t k = 0; k < count && k < body.parameters().size(); ++k)
        if (body.shape(body.parameters()[k]).dtype() != g_.shape(n.operands[k]).dtype())
          return unimplemented_error("cpu: reduce whose body computes in a wider type than its input");
    }
    return ok_status();
  }

  // ---- Products of 8-bit integers. A dot_general or convolution (not a depthwise one) of
  // 32-bit integers whose operands are both converts from 8-bit integers (how StableHLO's
  // i8 x i8 -> i32 products arrive) reads the 8-bit values themselves and multiplies them in
  // Int8Gemm: the same bits, since each convert only sign- or zero-extends. A convert that
  // nothing else reads is absorbed: it has no slot and no kernel.
  void find_int8_products() {
    int8_product_.assign(static_cast<std::size_t>(g_.num_nodes()), false);
    absorbed_.assign(static_cast<std::size_t>(g_.num_nodes()), false);
    auto eight_bit = [&](Value v) {
      const Node& p = g_.node(v);
      if (p.op != OpCode::kConvert) return false;
      const DType from = g_.shape(p.operands[0]).dtype();
      return from == DType::kS8 || from == DType::kU8;
    };
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i) {
      const Node& n = g_.node(i);
      if (n.op != OpCode::kDotGeneral && n.op != OpCode::kConvolution) continue;
      if (!eight_bit(n.operands[0]) || !eight_bit(n.operands[1])) continue;
      const Shape& lhs = g_.shape(g_.node(n.operands[0]).operands[0]);
      const Shape& rhs = g_.shape(g_.node(n.operands[1]).operands[0]);
      int8_product_[static_cast<std::size_t>(i)] =
          n.op == OpCode::kDotGeneral ? Int8Gemm::multiplies(lhs.dtype(), rhs.dtype(), n.shape().dtype())
                                      : ConvKernel::multiplies_8_bit(lhs, rhs, n.shape(), n.attr<ConvolutionAttrs>());
    }
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i) {
      const Value v{static_cast<std::int32_t>(i), 0, 0};
      if (g_.node(i).op != OpCode::kConvert || is_output_[static_cast<std::size_t>(id(v))]) continue;
      const auto& users = users_[static_cast<std::size_t>(id(v))];
      absorbed_[static_cast<std::size_t>(i)] =
          !users.empty() && std::all_of(users.begin(), users.end(), [&](std::int64_t u) { return int8_product_[static_cast<std::size_t>(u)]; });
    }
  }

  /// The operands a product kernel (dot_general, convolution) of node i reads: its own, or
  /// for an 8-bit product the 8-bit values its converts read, with `reads` and `text` to match.
  std::array<Value, 2> product_operands(std::int64_t i, std::string_view op, std::vector<std::int32_t>& reads,
                                        std::string& text) const {
    const Node& n = g_.node(i);
    std::array<Value, 2> operands = {n.operands[0], n.operands[1]};
    if (!int8_product_[static_cast<std::size_t>(i)]) return operands;
    for (Value& v : operands) v = g_.node(v).operands[0];
    reads = {slot_of(operands[0]), slot_of(operands[1])};
    const std::int32_t dst = slot_of(Value{static_cast<std::int32_t>(i), 0, 0});
    text = str_cat("$", dst, " = ", op, "(8-bit $", reads[0], ", $", reads[1], ") : ", n.shape());
    return operands;
  }

  /// Element-wise ops and broadcasts of a scalar or a vector along a block of consecutive
  /// dimensions (a splat or a periodic register inside a loop) fuse.
  bool fusible(const Node& n) const {
    if (n.op == OpCode::kBroadcastInDim) return block_broadcast(n).has_value();
    if (is_narrow_convert(n)) return false;
    return is_elementwise(n.op);
  }

  /// How a broadcast_in_dim reads its operand when the operand's dimensions of size above 1
  /// land, in order and with their sizes, on consecutive dimensions of the result: element i
  /// of the result is element (i / repeat) % period of the operand. Nothing for any other
  /// broadcast, and for empty ones.
  struct BlockBroadcast {
    std::int64_t period = 1, repeat = 1;
  };
  std::optional<BlockBroadcast> block_broadcast(const Node& n) const {
    const Shape& in = g_.shape(n.operands[0]);
    const Shape& out = n.shape();
    const auto& dims = n.attr<BroadcastInDimAttrs>().broadcast_dimensions;
    if (in.element_count() == 0 || out.element_count() == 0 || static_cast<std::int64_t>(dims.size()) != in.rank())
      return std::nullopt;
    BlockBroadcast b;
    std::int64_t last = -1;  // the result dimension of the previous operand dimension above 1
    for (std::int64_t j = 0; j < in.rank(); ++j) {
      if (in.dim(j) == 1) continue;
      const std::int64_t d = dims[static_cast<std::size_t>(j)];
      if ((last >= 0 && d != last + 1) || in.dim(j) != out.dim(d)) return std::nullopt;
      last = d;
      b.period *= in.dim(j);
    }
    if (last >= 0)
      for (std::int64_t d = last + 1; d < out.rank(); ++d) b.repeat *= out.dim(d);
    return b;
  }

  // ---- Row groups: a reduce over trailing dimensions with the element-wise ops around it
  // that work row by row (a RowKernel). The result's dimensions are [rows..., row...]; a
  // member's value has the full dimensions or the rows' (a per-row value).
  struct RowGroup {
    std::vector<std::int64_t> full, rows;
    std::int64_t row_count = 0, row_elements = 0;
    std::vector<std::int64_t> members;
  };
  enum class RowRole : std::uint8_t { kNone, kFull, kPerRow, kReduce, kView };

  /// True for a reduce of one input over its trailing dimensions (and at least one row) whose
  /// body has a fused-reduction kernel; fills the group's dimensions.
  bool row_reduce(const Node& n, RowGroup* g) const {
    if (n.op != OpCode::kReduce || n.operands.size() != 2) return false;
    const Shape& in = g_.shape(n.operands[0]);
    auto dims = n.attr<ReduceAttrs>().dimensions;
    std::sort(dims.begin(), dims.end());
    const auto keep = in.rank() - static_cast<std::int64_t>(dims.size());
    if (dims.empty() || keep < 1 || in.element_count() == 0) return false;
    for (std::size_t j = 0; j < dims.size(); ++j)
      if (dims[j] != keep + static_cast<std::int64_t>(j)) return false;
    const std::optional<OpCode> op = simple_reduce_op(n.bodies[0], 1);
    if (!op || find_accumulate_kernel(*op, in.dtype()) == nullptr) return false;
    g->full.assign(in.dims().begin(), in.dims().end());
    g->rows.assign(in.dims().begin(), in.dims().begin() + keep);
    g->row_count = 1;
    for (std::int64_t d : g->rows) g->row_count *= d;
    g->row_elements = in.element_count() / g->row_count;
    return true;
  }

  /// A convert from or to a narrow type, or a bitcast_convert from or to a narrow type or
  /// pred (one bit each): NarrowConvertKernel runs it, alone.
  bool is_narrow_convert(const Node& n) const {
    const DType from = n.operands.empty() ? DType::kInvalid : g_.shape(n.operands[0]).dtype(), to = n.shape().dtype();
    if (n.op == OpCode::kConvert) return is_narrow(to) || is_narrow(from);
    return n.op == OpCode::kBitcastConvert && from != to && (is_bit_packed(to) || is_bit_packed(from));
  }

  /// What node `i` would be in row group `g`.
  RowRole row_role(std::int64_t i, const RowGroup& g) const {
    const Node& n = g_.node(i);
    if (n.results.size() != 1 || absorbed_[static_cast<std::size_t>(i)] || is_narrow_convert(n)) return RowRole::kNone;
    const auto dims = n.shape().dims();
    const bool full = std::equal(dims.begin(), dims.end(), g.full.begin(), g.full.end());
    const bool per_row = std::equal(dims.begin(), dims.end(), g.rows.begin(), g.rows.end());
    if (is_elementwise(n.op)) return full ? RowRole::kFull : per_row ? RowRole::kPerRow : RowRole::kNone;
    if (n.op == OpCode::kBroadcastInDim && (full || per_row)) {
      const std::optional<BlockBroadcast> b = block_broadcast(n);
      if (!b) return RowRole::kNone;
      // A full-shaped view reads one element per row or a pattern that fits a row evenly.
      if (full && b->period > 1 && b->repeat % g.row_elements != 0 && g.row_elements % (b->period * b->repeat) != 0)
        return RowRole::kNone;
      return RowRole::kView;
    }
    RowGroup other;
    if (row_reduce(n, &other) && other.full == g.full && other.rows == g.rows) return RowRole::kReduce;
    return RowRole::kNone;
  }

  /// True for a broadcast whose operand is the per-row value of the same row: dimensions
  /// [rows...] to [rows..., row...] along the leading dimensions.
  bool row_splat(const Node& n, const RowGroup& g) const {
    const Shape& in = g_.shape(n.operands[0]);
    const auto& dims = n.attr<BroadcastInDimAttrs>().broadcast_dimensions;
    if (!std::equal(in.dims().begin(), in.dims().end(), g.rows.begin(), g.rows.end())) return false;
    if (!std::equal(n.shape().dims().begin(), n.shape().dims().end(), g.full.begin(), g.full.end())) return false;
    for (std::size_t j = 0; j < dims.size(); ++j)
      if (dims[j] != static_cast<std::int64_t>(j)) return false;
    return true;
  }

  /// Grows a row group around each eligible reduce: its element-wise producers and, through
  /// per-row values and their broadcasts, its consumers. A group is kept if it has more
  /// than its reduce, no path leaves it and comes back (it runs as one kernel), and every
  /// broadcast of a member's value is a row splat.
  void form_row_groups() {
    row_group_of_.assign(static_cast<std::size_t>(g_.num_nodes()), -1);
    if (!options_.fuse) return;
    for (std::int64_t seed = 0; seed < g_.num_nodes(); ++seed) {
      RowGroup g;
      if (row_group_of_[static_cast<std::size_t>(seed)] >= 0 || !row_reduce(g_.node(seed), &g)) continue;
      std::vector<bool> in(static_cast<std::size_t>(g_.num_nodes()), false);
      std::vector<std::int64_t> work = {seed};
      in[static_cast<std::size_t>(seed)] = true;
      auto consider = [&](std::int64_t c, bool producer) {
        if (in[static_cast<std::size_t>(c)] || row_group_of_[static_cast<std::size_t>(c)] >= 0) return;
        const RowRole role = row_role(c, g);
        if (role == RowRole::kNone) return;
        // A view only reads: its operand stays outside unless it is a row splat of a member.
        if (role == RowRole::kView && producer) {
          in[static_cast<std::size_t>(c)] = true;
          return;
        }
        in[static_cast<std::size_t>(c)] = true;
        work.push_back(c);
      };
      while (!work.empty()) {
        const std::int64_t m = work.back();
        work.pop_back();
        const Node& n = g_.node(m);
        if (n.op != OpCode::kBroadcastInDim) {
          for (std::size_t k = 0; k < n.operands.size(); ++k) {
            if (n.op == OpCode::kReduce && k == 1) continue;  // the init is read, not computed
            const Node& p = g_.node(n.operands[k]);
            if (p.op != OpCode::kParameter && p.op != OpCode::kConstant) consider(n.operands[k].node, true);
          }
        }
        for (std::int64_t u : users_[static_cast<std::size_t>(id(Value{static_cast<std::int32_t>(m), 0, 0}))])
          consider(u, false);
      }
      std::vector<std::int64_t> members;
      for (std::int64_t i = 0; i < g_.num_nodes(); ++i)
        if (in[static_cast<std::size_t>(i)]) members.push_back(i);
      bool ok = members.size() > 1;
      // Views of members must be row splats; nothing outside may both read the group and
      // feed it (node order is topological, so one sweep finds such a path).
      std::vector<bool> downstream(static_cast<std::size_t>(g_.num_nodes()), false);
      for (std::int64_t i = members.front(); ok && i < g_.num_nodes(); ++i) {
        const Node& n = g_.node(i);
        const bool member = in[static_cast<std::size_t>(i)];
        for (Value v : n.operands) {
          const bool from_member = in[static_cast<std::size_t>(v.node)];
          const bool from_downstream = downstream[static_cast<std::size_t>(v.node)];
          if (member && from_downstream) ok = false;
          if (member && from_member && n.op == OpCode::kBroadcastInDim && !row_splat(n, g)) ok = false;
          if (!member && (from_member || from_downstream)) downstream[static_cast<std::size_t>(i)] = true;
        }
        // The group runs where its last member is: what reads it must come later.
        if (downstream[static_cast<std::size_t>(i)] && i < members.back()) ok = false;
      }
      if (!ok) continue;
      g.members = std::move(members);
      const auto rg = static_cast<std::int32_t>(row_groups_.size());
      for (std::int64_t m : g.members) row_group_of_[static_cast<std::size_t>(m)] = rg;
      row_groups_.push_back(std::move(g));
    }
  }

  // ---- Fusion groups. A node joins the open groups of its operands that have its dims,
  // merging them. A group closes as soon as anything outside it reads one of its values.
  // Two open groups never reach each other (a path between them would pass a reader outside
  // one of them and have closed it), so merging them cannot make a cycle.
  void form_groups() {
    group_of_.assign(static_cast<std::size_t>(g_.num_nodes()), -1);
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i) {
      const Node& n = g_.node(i);
      std::int32_t join = -1;
      const bool fuses = fusible(n) && row_group_of_[static_cast<std::size_t>(i)] < 0 && !absorbed_[static_cast<std::size_t>(i)];
      if (fuses && options_.fuse) {
        for (Value v : n.operands) {
          const std::int32_t gid = group_of_[static_cast<std::size_t>(v.node)];
          if (gid < 0 || gid == join) continue;
          Group& group = groups_[static_cast<std::size_t>(gid)];
          if (!group.open || !std::equal(group.dims.begin(), group.dims.end(), n.shape().dims().begin(), n.shape().dims().end()))
            continue;
          if (join < 0) join = gid;
          else merge(join, gid);
        }
      }
      for (Value v : n.operands) {
        const std::int32_t gid = group_of_[static_cast<std::size_t>(v.node)];
        if (gid >= 0 && gid != join) groups_[static_cast<std::size_t>(gid)].open = false;
      }
      if (!fuses) continue;
      if (join < 0) {
        join = static_cast<std::int32_t>(groups_.size());
        groups_.push_back(Group{std::vector<std::int64_t>(n.shape().dims().begin(), n.shape().dims().end()), {}, true});
      }
      groups_[static_cast<std::size_t>(join)].members.push_back(i);
      group_of_[static_cast<std::size_t>(i)] = join;
    }
  }

  /// Moves group `from`'s members into `into`, keeping them in node order.
  void merge(std::int32_t into, std::int32_t from) {
    auto& target = groups_[static_cast<std::size_t>(into)].members;
    auto& source = groups_[static_cast<std::size_t>(from)].members;
    for (std::int64_t m : source) group_of_[static_cast<std::size_t>(m)] = into;
    target.insert(target.end(), source.begin(), source.end());
    std::sort(target.begin(), target.end());
    source.clear();
    groups_[static_cast<std::size_t>(from)].open = false;
  }

  /// A value is stored in a slot unless it lives only inside its fusion group.
  bool materialized(Value v) const {
    if (is_output_[static_cast<std::size_t>(id(v))]) return true;
    const std::vector<std::int32_t>& owner = row_group_of_[static_cast<std::size_t>(v.node)] >= 0 ? row_group_of_ : group_of_;
    const std::int32_t gid = owner[static_cast<std::size_t>(v.node)];
    if (gid < 0) return true;
    for (std::int64_t u : users_[static_cast<std::size_t>(id(v))])
      if (owner[static_cast<std::size_t>(u)] != gid || feeds_int8_product(u)) return true;
    return false;
  }

  /// Whether node u is a convert whose result an 8-bit product reads: the product reads the
  /// convert's operand itself, which must then have memory even when the convert is fused.
  bool feeds_int8_product(std::int64_t u) const {
    if (g_.node(u).op != OpCode::kConvert) return false;
    const auto& users = users_[static_cast<std::size_t>(id(Value{static_cast<std::int32_t>(u), 0, 0}))];
    return std::any_of(users.begin(), users.end(), [&](std::int64_t p) { return int8_product_[static_cast<std::size_t>(p)]; });
  }

  std::int32_t add_slot(SlotKind kind, const Shape& shape, std::int32_t index = 0) {
    program_->slots.push_back(Slot{kind, index, 0, shape.byte_size(), nullptr});
    return static_cast<std::int32_t>(program_->slots.size() - 1);
  }

  /// An op whose result has its operand's bytes: a reshape, a bitcast, or a transpose that
  /// only moves dimensions of size one (the others keep their order, so the row-major
  /// layout is the same). It is a view of the operand's slot, not a copy.
  bool is_alias(const Node& n) const {
    if (n.op == OpCode::kReshape || (n.op == OpCode::kBitcastConvert && !is_narrow_convert(n))) return true;
    if (n.op != OpCode::kTranspose) return false;
    const Shape& in = g_.shape(n.operands[0]);
    std::int64_t last = -1;
    for (std::int64_t p : n.attr<TransposeAttrs>().permutation) {
      if (in.dim(p) == 1) continue;
      if (p < last) return false;
      last = p;
    }
    return true;
  }

  void assign_slots() {
    // Outputs first: a value computed by a kernel is written straight into output memory.
    std::vector<bool> claimed(value_slot_.size(), false);
    output_copies_.assign(g_.outputs().size(), -1);
    for (std::size_t j = 0; j < g_.outputs().size(); ++j) {
      Value v = g_.outputs()[j];
      const Node& n = g_.node(v);
      const std::int32_t slot = add_slot(SlotKind::kOutput, g_.shape(v), static_cast<std::int32_t>(j));
      program_->output_slots.push_back(slot);
      if (n.op == OpCode::kParameter || n.op == OpCode::kConstant || claimed[static_cast<std::size_t>(id(v))]) {
        output_copies_[j] = static_cast<std::int32_t>(id(v));  // copied in at the end
      } else {
        claimed[static_cast<std::size_t>(id(v))] = true;
        value_slot_[static_cast<std::size_t>(id(v))] = slot;
      }
    }
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i) {
      const Node& n = g_.node(i);
      for (std::size_t r = 0; r < n.results.size(); ++r) {
        Value v{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0};
        std::int32_t& slot = value_slot_[static_cast<std::size_t>(id(v))];
        if (slot >= 0) continue;
        if (n.op == OpCode::kParameter) {
          slot = add_slot(SlotKind::kParameter, n.shape(), static_cast<std::int32_t>(n.attr<ParameterAttrs>().number));
        } else if (n.op == OpCode::kConstant) {
          slot = add_slot(SlotKind::kConstant, n.shape());
          program_->slots[static_cast<std::size_t>(slot)].constant = n.attr<ConstantAttrs>().value.get();
        } else if (is_alias(n)) {
          slot = value_slot_[static_cast<std::size_t>(id(n.operands[0]))];  // same bytes, new type
        } else if (absorbed_[static_cast<std::size_t>(i)]) {
          // read by 8-bit products only, which read its operand instead
        } else if (materialized(v)) {
          slot = add_slot(SlotKind::kTemp, n.shape(r));
        }
      }
    }
  }

  std::int32_t slot_of(Value v) const { return value_slot_[static_cast<std::size_t>(id(v))]; }

  void add_kernel(std::unique_ptr<Kernel> k, std::vector<std::int32_t> reads, std::vector<std::int32_t> writes) {
    program_->kernels.push_back(std::move(k));
    reads_.push_back(std::move(reads));
    writes_.push_back(std::move(writes));
  }

  Status emit_kernels() {
    program_->node_kernel.assign(static_cast<std::size_t>(g_.num_nodes()), -1);
    for (std::int64_t i = 0; i < g_.num_nodes(); ++i) {
      const Node& n = g_.node(i);
      // A fused or row group runs where its last member is.
      const std::int32_t rg = row_group_of_[static_cast<std::size_t>(i)];
      const std::int32_t gid = group_of_[static_cast<std::size_t>(i)];
      if (rg >= 0 || gid >= 0) {
        const std::vector<std::int64_t>& members =
            rg >= 0 ? row_groups_[static_cast<std::size_t>(rg)].members : groups_[static_cast<std::size_t>(gid)].members;
        if (members.back() != i) continue;
        PJRT_LITE_RETURN_IF_ERROR(rg >= 0 ? emit_row_group(row_groups_[static_cast<std::size_t>(rg)]) : emit_group(gid));
        for (std::int64_t m : members)
          program_->node_kernel[static_cast<std::size_t>(m)] = static_cast<std::int32_t>(program_->kernels.size() - 1);
        continue;
      }
      if (n.op == OpCode::kParameter || n.op == OpCode::kConstant || absorbed_[static_cast<std::size_t>(i)]) continue;
      Value v0{static_cast<std::int32_t>(i), 0, 0};
      if (is_alias(n)) {
        // An alias of its operand, except when it is an output with memory of its own.
        if (slot_of(v0) != slot_of(n.operands[0])) emit_byte_copy(slot_of(v0), slot_of(n.operands[0]), n.shape().byte_size(), str_cat(to_string(v0), " = ", op_name(n.op), " (copy)"));
        continue;
      }
      const std::size_t before = program_->kernels.size();
      PJRT_LITE_RETURN_IF_ERROR(is_control_flow(n.op)                                   ? emit_control_flow(i, n)
                                : is_collective(n.op) || is_process_position(n.op) ? emit_collective(i, n)
                                : is_token_op(n.op)                                ? emit_token_op(i, n)
                                                                                  : emit_node(i, n));
      if (program_->kernels.size() > before)
        program_->node_kernel[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(program_->kernels.size() - 1);
    }
    for (std::size_t j = 0; j < output_copies_.size(); ++j) {
      if (output_copies_[j] < 0) continue;
      const Value v = g_.outputs()[j];
      emit_byte_copy(program_->output_slots[j], slot_of(v), g_.shape(v).byte_size(), str_cat("output ", j, " = copy of ", to_string(v)));
    }
    return ok_status();
  }

  // ---- Epilogues: a fused element-wise loop right after a product (dot_general,
  // convolution) that reads the product's result element by element runs inside the product
  // (Kernel::adopt_epilogue), on each block of rows as soon as the block is final, while it
  // is in cache: the product's sums are written and read back from cache, not memory. The
  // merge happens before the arena is planned, so nothing the product reads shares memory
  // with what the loop writes. Only loops whose every op gives the same bits wherever a
  // block starts: no transcendental functions, whose vector and scalar paths differ in the
  // last bit, so that a program computes the same bits with or without the merge.

  /// Whether `op` computes the same bits in a loop's vector lanes and in its scalar tail.
  static bool same_bits_anywhere(OpCode op) {
    switch (op) {
      case OpCode::kAdd: case OpCode::kSubtract: case OpCode::kMultiply: case OpCode::kDivide:
      case OpCode::kMaximum: case OpCode::kMinimum: case OpCode::kClamp: case OpCode::kConvert:
      case OpCode::kRoundNearestEven: case OpCode::kRoundNearestAfz: case OpCode::kFloor: case OpCode::kCeil:
      case OpCode::kAbs: case OpCode::kNegate: case OpCode::kSign: case OpCode::kSelect: case OpCode::kCompare:
      case OpCode::kAnd: case OpCode::kOr: case OpCode::kXor: case OpCode::kNot: case OpCode::kSqrt:
      case OpCode::kBroadcastInDim: return true;
      default: return false;
    }
  }

  void fuse_epilogues() {
    auto& ks = program_->kernels;
    for (std::size_t i = 0; i + 1 < ks.size(); ++i) {
      if (writes_[i].size() != 1) continue;
      const std::int32_t product = writes_[i][0];
      // The first kernel after the product that reads its result; the kernels in between
      // (a bias converted, say) must not touch the product's slots, so that the product
      // can run after them, right before the loop.
      std::size_t j = i + 1;
      bool movable = true;
      for (; j < ks.size() && !reads(j, product); ++j)
        movable = movable && !writes(j, product) && std::none_of(reads_[i].begin(), reads_[i].end(), [&](std::int32_t s) { return writes(j, s); });
      if (j == ks.size() || !movable) continue;
      const FusedKernel* loop = ks[j]->as_fused();
      if (loop == nullptr || !epilogue_fits(*loop, product)) continue;
      std::unique_ptr<FusedKernel> taken(const_cast<FusedKernel*>(loop));
      (void)ks[j].release();
      const std::string loop_text = taken->text;
      const double flops = taken->flops, transcendentals = taken->transcendentals;
      const std::int64_t bytes = taken->bytes_accessed;
      if (!ks[i]->adopt_epilogue(taken)) {
        ks[j] = std::move(taken);
        continue;
      }
      Kernel& p = *ks[i];
      p.text += str_cat(", then in its blocks: ", loop_text);
      p.flops += flops;
      p.transcendentals += transcendentals;
      p.bytes_accessed += bytes;
      for (std::int32_t s : reads_[j])
        if (s != product && std::find(reads_[i].begin(), reads_[i].end(), s) == reads_[i].end()) reads_[i].push_back(s);
      reads_[i].push_back(product);  // so that it lives until the loop is done with it
      for (std::int32_t s : writes_[j]) writes_[i].push_back(s);
      // The merged kernel takes the loop's place: kernels i + 1 .. j - 1 move up by one.
      std::unique_ptr<Kernel> merged = std::move(ks[i]);
      std::vector<std::int32_t> merged_reads = std::move(reads_[i]), merged_writes = std::move(writes_[i]);
      for (std::size_t k = i; k + 1 < j; ++k) {
        ks[k] = std::move(ks[k + 1]);
        reads_[k] = std::move(reads_[k + 1]);
        writes_[k] = std::move(writes_[k + 1]);
      }
      ks[j - 1] = std::move(merged);
      reads_[j - 1] = std::move(merged_reads);
      writes_[j - 1] = std::move(merged_writes);
      ks.erase(ks.begin() + static_cast<std::ptrdiff_t>(j));
      reads_.erase(reads_.begin() + static_cast<std::ptrdiff_t>(j));
      writes_.erase(writes_.begin() + static_cast<std::ptrdiff_t>(j));
      const auto ii = static_cast<std::int32_t>(i), jj = static_cast<std::int32_t>(j);
      for (std::int32_t& k : program_->node_kernel) {
        if (k == ii || k == jj) k = jj - 1;
        else if (k > ii && k < jj) --k;
        else if (k > jj) --k;
      }
    }
  }

  bool reads(std::size_t k, std::int32_t slot) const {
    return std::find(reads_[k].begin(), reads_[k].end(), slot) != reads_[k].end();
  }
  bool writes(std::size_t k, std::int32_t slot) const {
    return std::find(writes_[k].begin(), writes_[k].end(), slot) != writes_[k].end();
  }

  /// Whether `loop` can run as the epilogue of the kernel that writes `product`: it runs over
  /// exactly the product's elements, reads them only element by element, and every op of it
  /// gives the same bits anywhere.
  bool epilogue_fits(const FusedKernel& loop, std::int32_t product) const {
    bool reads_product = false;
    for (const TileProgram::Reg& r : loop.program.regs()) {
      if (r.kind == TileProgram::RegKind::kScratch || loop.externals[static_cast<std::size_t>(r.external)] != product)
        continue;
      if (r.kind != TileProgram::RegKind::kExternal) return false;
      if (loop.n * static_cast<std::int64_t>(byte_size(r.dtype)) != program_->slots[static_cast<std::size_t>(product)].bytes)
        return false;
      reads_product = true;
    }
    if (!reads_product) return false;
    for (const TileProgram::Instr& ins : loop.program.code())
      if (!same_bits_anywhere(ins.op)) return false;
    return true;
  }

  void emit_byte_copy(std::int32_t dst, std::int32_t src, std::int64_t bytes, std::string text) {
    auto k = std::make_unique<MoveKernel>();
    k->dst_slot = dst;
    k->dst_bytes = bytes;
    k->element_size = 1;
    StridedCopy copy{{bytes}, {1}, {1}, 1};
    k->pieces.push_back({src, 0, 0, copy, {}});
    k->bytes_accessed = 2 * bytes;
    k->text = std::move(text);
    add_kernel(std::move(k), {src}, {dst});
  }

  /// Adds the bytes of the slots a kernel reads and writes to its cost, and lists them for
  /// its line of the listing: {"$w, ...", "$r, ..."}.
  std::pair<std::string, std::string> account_slots(Kernel& k, const std::vector<std::int32_t>& reads,
                                                    const std::vector<std::int32_t>& writes) const {
    std::string outs, ins;
    for (std::int32_t s : reads) {
      k.bytes_accessed += program_->slots[static_cast<std::size_t>(s)].bytes;
      ins += str_cat(ins.empty() ? "" : ", ", "$", s);
    }
    for (std::int32_t s : writes) {
      k.bytes_accessed += program_->slots[static_cast<std::size_t>(s)].bytes;
      outs += str_cat(outs.empty() ? "" : ", ", "$", s);
    }
    return {std::move(outs), std::move(ins)};
  }

  Status emit_group(std::int32_t gid) {
    const Group& group = groups_[static_cast<std::size_t>(gid)];
    auto k = std::make_unique<FusedKernel>();
    std::map<std::int32_t, std::int32_t> external_of_slot;
    auto external = [&](std::int32_t slot) {
      auto [it, inserted] = external_of_slot.emplace(slot, static_cast<std::int32_t>(k->externals.size()));
      if (inserted) k->externals.push_back(slot);
      return it->second;
    };
    std::map<std::int64_t, std::int32_t> reg_of_node;
    std::vector<std::int32_t> reads, writes;
    std::string ops;
    for (std::int64_t m : group.members) {
      const Node& n = g_.node(m);
      std::vector<std::int32_t> ins;
      for (Value v : n.operands) {
        if (group_of_[static_cast<std::size_t>(v.node)] == gid) {
          ins.push_back(reg_of_node.at(v.node));
          continue;
        }
        const std::int32_t s = slot_of(v);
        if (std::find(reads.begin(), reads.end(), s) == reads.end()) reads.push_back(s);
        const Shape& shape = g_.shape(v);
        const std::int64_t count = shape.element_count();
        const std::optional<BlockBroadcast> b =
            n.op == OpCode::kBroadcastInDim ? block_broadcast(n) : std::nullopt;
        // A scalar read by a wider op (select's or clamp's scalar operands) is a splat too.
        if ((b && b->period == 1) || (!b && count == 1 && shape.rank() < n.shape().rank()))
          ins.push_back(k->program.splat(external(s), shape.dtype()));
        else if (b && !(b->repeat == 1 && b->period == n.shape().element_count()))
          ins.push_back(k->program.periodic(external(s), shape.dtype(), b->period, b->repeat));
        else ins.push_back(k->program.external(external(s), shape.dtype()));
      }
      Value v{static_cast<std::int32_t>(m), 0, 0};
      const bool stored = materialized(v);
      std::int32_t out;
      if (stored) {
        writes.push_back(slot_of(v));
        out = k->program.external(external(slot_of(v)), n.shape().dtype());
      }
      if (n.op == OpCode::kBroadcastInDim) {
        // A splat or periodic register over the operand; stored only if read outside the loop.
        if (stored) PJRT_LITE_RETURN_IF_ERROR(k->program.emit_copy(out, ins[0]));
        else out = ins[0];
      } else {
        if (!stored) out = k->program.scratch(n.shape().dtype());
        Status s = k->program.emit(n, out, ins);
        if (!s.ok()) return s;
      }
      reg_of_node[m] = out;
      if (!ops.empty()) ops += ", ";
      ops += op_name(n.op);
      k->flops += static_cast<double>(n.shape().element_count());
      if (n.op >= OpCode::kExponential && n.op <= OpCode::kTan) k->transcendentals += static_cast<double>(n.shape().element_count());
    }
    k->n = 1;
    for (std::int64_t d : group.dims) k->n *= d;
    k->finish_planning(max_workers_);
    const auto [outs, ins_text] = account_slots(*k, reads, writes);
    k->text = str_cat(outs, " = fusion[", ops, "](", ins_text, ") : ", Shape::dims_string(group.dims));
    if (const std::string combined = superinstructions({&k->program}); !combined.empty())
      k->text += str_cat(" (", combined, ")");
    add_kernel(std::move(k), std::move(reads), std::move(writes));
    return ok_status();
  }

  /// The RowKernel of a row group (row_kernel.hpp). Each member goes to the first stage where
  /// its operands are ready: level L means readable from scalar stage L and pass L on (stage
  /// 2L and 2L + 1). Per-row values, and row values a later pass reads, are kept in
  /// worker-local memory unless they have a slot.
  Status emit_row_group(const RowGroup& g) {
    auto k = std::make_unique<RowKernel>();
    k->rows = g.row_count;
    k->row_elements = g.row_elements;
    const std::int64_t row = g.row_elements;
    const std::int32_t rg = row_group_of_[static_cast<std::size_t>(g.members.front())];
    auto member = [&](std::int64_t node) { return row_group_of_[static_cast<std::size_t>(node)] == rg; };
    auto full = [&](const Shape& s) { return std::equal(s.dims().begin(), s.dims().end(), g.full.begin(), g.full.end()); };
    std::map<std::int64_t, std::int64_t> level, pass_of;
    auto level_of = [&](Value v) { return member(v.node) ? level.at(v.node) : std::int64_t{0}; };
    std::int64_t passes = 1;
    for (std::int64_t m : g.members) {
      const Node& n = g_.node(m);
      std::int64_t at = 0;
      if (n.op == OpCode::kReduce) {
        pass_of[m] = level_of(n.operands[0]);
        passes = std::max(passes, pass_of[m] + 1);
        at = pass_of[m] + 1;
      } else {
        for (Value v : n.operands) at = std::max(at, level_of(v));
        if (full(n.shape())) passes = std::max(passes, at + 1);
      }
      level[m] = at;
    }
    // Rows per block, the locals sized for them; a kernel whose scalar stages cannot read a
    // block's per-row values as one run (below) goes row by row.
    std::int64_t widest = 1;
    for (std::int64_t m : g.members)
      if (full(g_.node(m).shape())) widest = std::max<std::int64_t>(widest, byte_size(g_.node(m).shape().dtype()));
    k->block_rows = std::clamp<std::int64_t>(kRowBlockBytes / (std::max<std::int64_t>(row, 1) * widest), 1,
                                             std::max<std::int64_t>(1, std::min(kMaxBlockRows, g.row_count)));
    k->stages.resize(static_cast<std::size_t>(2 * passes + 1));
    for (std::size_t s = 0; s < k->stages.size(); ++s) k->stages[s].pass = s % 2 == 1;
    std::vector<std::map<std::int64_t, std::int32_t>> regs(k->stages.size());

    // A row value that one cheap op makes from values every pass can read (inputs,
    // broadcasts, per-row values) is computed again in each stage that reads it rather than
    // kept: a later pass then reads what the op reads instead of a kept row, and no pass
    // writes it (layer norm's x - mean, read by the variance's pass and the output's).
    std::set<std::int64_t> recomputed;
    for (std::int64_t m : g.members) {
      const Node& n = g_.node(m);
      const bool cheap = n.op == OpCode::kAdd || n.op == OpCode::kSubtract || n.op == OpCode::kMultiply ||
                         n.op == OpCode::kNegate || n.op == OpCode::kAbs || n.op == OpCode::kMaximum ||
                         n.op == OpCode::kMinimum;
      if (!cheap || !full(n.shape()) || materialized(Value{static_cast<std::int32_t>(m), 0, 0})) continue;
      const bool readable = std::all_of(n.operands.begin(), n.operands.end(), [&](Value o) {
        return !member(o.node) || g_.node(o).op == OpCode::kBroadcastInDim || !full(g_.shape(o));
      });
      if (readable) recomputed.insert(m);
    }

    // Where each computed member keeps its value, if anywhere.
    std::map<std::int64_t, RowKernel::External> storage;
    std::vector<std::int32_t> reads, writes;
    auto read_slot = [&](std::int32_t slot) {
      if (std::find(reads.begin(), reads.end(), slot) == reads.end()) reads.push_back(slot);
    };
    for (std::int64_t m : g.members) {
      const Node& n = g_.node(m);
      const Value v{static_cast<std::int32_t>(m), 0, 0};
      const auto esize = static_cast<std::int64_t>(byte_size(n.shape().dtype()));
      const bool is_full = full(n.shape());
      if (materialized(v)) {
        writes.push_back(slot_of(v));
        storage[m] = RowKernel::External{slot_of(v), 0, is_full ? row : 1, 1, 0, esize};
        continue;
      }
      if (n.op == OpCode::kBroadcastInDim || recomputed.contains(m)) continue;
      bool kept = !is_full;
      for (std::int64_t u : users_[static_cast<std::size_t>(id(v))]) {
        if (!member(u)) continue;
        const std::int64_t used_in = g_.node(u).op == OpCode::kReduce ? pass_of.at(u) : level.at(u);
        kept = kept || used_in > level.at(m);
      }
      if (kept) storage[m] = RowKernel::External{-1, k->add_local(k->block_rows * (is_full ? row : 1) * esize), is_full ? row : 1, 1, 0, esize};
    }

    // The register that reads value `v` in stage `s` (computing it there if it is recomputed).
    auto reg_in_stage = [&](auto& self, std::size_t s, Value v) -> StatusOr<std::int32_t> {
      auto found = regs[s].find(v.node);
      if (found != regs[s].end()) return found->second;
      TileProgram& prog = k->stages[s].program;
      const Node& n = g_.node(v);
      const Shape& shape = g_.shape(v);
      const auto esize = static_cast<std::int64_t>(byte_size(shape.dtype()));
      std::int32_t r;
      if (!member(v.node)) {
        read_slot(slot_of(v));
        const std::int64_t mul = full(shape) ? row : shape.rank() == 0 ? 0 : 1;
        // A scalar is a splat: a pass reads it in every lane (select's or clamp's scalar
        // operands), a scalar stage once for each row of the block.
        if (shape.rank() == 0) r = prog.splat(k->external({slot_of(v), 0, 0, 1, 0, esize}), shape.dtype());
        else r = prog.external(k->external({slot_of(v), 0, mul, 1, 0, esize}), shape.dtype());
      } else if (n.op == OpCode::kBroadcastInDim && member(n.operands[0].node)) {
        r = prog.splat(k->external(storage.at(n.operands[0].node)), shape.dtype());  // a row splat
      } else if (n.op == OpCode::kBroadcastInDim) {
        const Value o = n.operands[0];
        read_slot(slot_of(o));
        const BlockBroadcast b = *block_broadcast(n);
        const RowKernel::External fixed{slot_of(o), 0, 0, 1, 0, esize};
        if (b.period == 1) {
          r = prog.splat(k->external(fixed), shape.dtype());
        } else if (!full(shape)) {
          r = prog.external(k->external({slot_of(o), 0, 1, b.repeat, b.period, esize}), shape.dtype());
        } else if (b.repeat % row == 0) {
          r = prog.splat(k->external({slot_of(o), 0, row, b.repeat, b.period, esize}), shape.dtype());
        } else if (b.repeat == 1 && b.period == row) {
          r = prog.external(k->external(fixed), shape.dtype());
        } else {
          r = prog.periodic(k->external(fixed), shape.dtype(), b.period, b.repeat);
        }
      } else if (auto kept = storage.find(v.node); kept != storage.end()) {
        r = prog.external(k->external(kept->second), shape.dtype());
      } else if (recomputed.contains(v.node)) {
        std::vector<std::int32_t> ins;
        for (Value o : n.operands) {
          PJRT_LITE_ASSIGN_OR_RETURN(std::int32_t in, self(self, s, o));
          ins.push_back(in);
        }
        r = prog.scratch(shape.dtype());
        PJRT_LITE_RETURN_IF_ERROR(prog.emit(n, r, std::move(ins)));
      } else {
        return internal_error(str_cat("cpu: row fusion: ", to_string(v), " is read in stage ", s, " but not kept"));
      }
      regs[s][v.node] = r;
      return r;
    };
    auto reg_in = [&](std::size_t s, Value v) { return reg_in_stage(reg_in_stage, s, v); };

    std::string ops;
    for (std::int64_t m : g.members) {
      const Node& n = g_.node(m);
      const Value v{static_cast<std::int32_t>(m), 0, 0};
      const DType t = n.shape().dtype();
      const bool is_full = full(n.shape());
      if (!ops.empty()) ops += ", ";
      ops += op_name(n.op);
      if (n.op == OpCode::kBroadcastInDim) {
        if (!materialized(v)) continue;
        const auto s = static_cast<std::size_t>(is_full ? 2 * level.at(m) + 1 : 0);
        PJRT_LITE_ASSIGN_OR_RETURN(std::int32_t in, reg_in(s, v));
        PJRT_LITE_RETURN_IF_ERROR(k->stages[s].program.emit_copy(k->stages[s].program.external(k->external(storage.at(m)), t), in));
        continue;
      }
      k->flops += static_cast<double>(n.shape().element_count());
      if (n.op >= OpCode::kExponential && n.op <= OpCode::kTan)
        k->transcendentals += static_cast<double>(n.shape().element_count());
      if (n.op == OpCode::kReduce) {
        const OpCode op = *simple_reduce_op(n.bodies[0], 1);
        ops += str_cat("(", op_name(op), ")");
        const auto p = static_cast<std::size_t>(pass_of.at(m));
        TileProgram& init_stage = k->stages[2 * p].program;
        PJRT_LITE_ASSIGN_OR_RETURN(std::int32_t init, reg_in(2 * p, n.operands[1]));
        PJRT_LITE_RETURN_IF_ERROR(init_stage.emit_copy(init_stage.external(k->external(storage.at(m)), t), init));
        TileProgram& pass = k->stages[2 * p + 1].program;
        PJRT_LITE_ASSIGN_OR_RETURN(std::int32_t in, reg_in(2 * p + 1, n.operands[0]));
        PJRT_LITE_RETURN_IF_ERROR(pass.emit_accumulate(op, pass.accumulator(k->external(storage.at(m)), t), in));
        continue;
      }
      if (recomputed.contains(m)) continue;  // in the stages that read it
      const auto s = static_cast<std::size_t>(is_full ? 2 * level.at(m) + 1 : 2 * level.at(m));
      std::vector<std::int32_t> ins;
      for (Value o : n.operands) {
        PJRT_LITE_ASSIGN_OR_RETURN(std::int32_t r, reg_in(s, o));
        ins.push_back(r);
      }
      TileProgram& prog = k->stages[s].program;
      auto kept = storage.find(m);
      const std::int32_t out = kept != storage.end() ? prog.external(k->external(kept->second), t) : prog.scratch(t);
      PJRT_LITE_RETURN_IF_ERROR(prog.emit(n, out, ins));
      regs[s][m] = out;
    }
    std::int64_t row_passes = 0;
    for (std::size_t s = 1; s < k->stages.size(); s += 2) row_passes += k->stages[s].program.code().empty() ? 0 : 1;
    std::erase_if(k->stages, [](const RowKernel::Stage& st) { return st.program.code().empty(); });
    // A scalar stage runs over a block's rows at once where each of its registers is one
    // value (a splat of an address no row moves) or steps one element per row.
    const auto steps_by_row = [&](const TileProgram::Reg& r) {
      if (r.external < 0) return true;
      const RowKernel::External& x = k->externals[static_cast<std::size_t>(r.external)];
      if (r.kind == TileProgram::RegKind::kSplat) return x.slot >= 0 && x.mul == 0;
      return r.kind == TileProgram::RegKind::kExternal && x.mul == 1 && x.div == 1 && (x.mod == 0 || x.mod >= g.row_count);
    };
    for (const RowKernel::Stage& st : k->stages)
      if (!st.pass && !std::all_of(st.program.regs().begin(), st.program.regs().end(), steps_by_row)) k->block_rows = 1;
    for (RowKernel::Stage& st : k->stages) st.n = st.pass ? row : k->block_rows;
    k->finish_planning(max_workers_);
    const auto [outs, ins_text] = account_slots(*k, reads, writes);
    std::vector<const TileProgram*> programs;
    for (const RowKernel::Stage& st : k->stages) programs.push_back(&st.program);
    const std::string combined = superinstructions(programs);
    const auto at_once = std::count_if(k->stages.begin(), k->stages.end(), [](const RowKernel::Stage& st) { return st.block_at_once; });
    const std::string per_block = at_once == 0 ? "" : at_once == row_passes ? str_cat(", ", row_passes == 1 ? "the pass" : "each pass", " one call per block")
                                                                            : str_cat(", ", at_once, at_once == 1 ? " pass" : " passes", " one call per block");
    k->text = str_cat(outs, " = row fusion[", ops, "](", ins_text, ") : ", Shape::dims_string(g.full), " (",
                      g.row_count, " rows of ", row, k->block_rows > 1 ? str_cat(" in blocks of ", k->block_rows) : "", per_block, ", ", row_passes, row_passes == 1 ? " pass" : " passes", " over each",
                      combined.empty() ? "" : "; ", combined, ")");
    add_kernel(std::move(k), std::move(reads), std::move(writes));
    return ok_status();
  }

  /// The instructions that finalize() combined in `programs`, for the listing: "2
  /// multiply-adds, 1 exp of a difference", or empty.
  static std::string superinstructions(const std::vector<const TileProgram*>& programs) {
    TileProgram::Combined all;
    for (const TileProgram* p : programs) {
      const TileProgram::Combined& c = p->combined();
      all.multiply_adds += c.multiply_adds;
      all.negated_exps += c.negated_exps;
      all.exps_of_differences += c.exps_of_differences;
      all.sums_of_products += c.sums_of_products;
      all.sums_of_squared_differences += c.sums_of_squared_differences;
      all.scalar_pairs += c.scalar_pairs;
      all.scaled_products += c.scaled_products;
      all.bounded_ops += c.bounded_ops;
    }
    std::string text;
    auto add = [&](std::int32_t count, std::string_view one, std::string_view many) {
      if (count > 0) text += str_cat(text.empty() ? "" : ", ", count, " ", count == 1 ? one : many);
    };
    add(all.multiply_adds, "multiply-add", "multiply-adds");
    add(all.negated_exps, "exp of a negation", "exps of negations");
    add(all.exps_of_differences, "exp of a difference", "exps of differences");
    add(all.sums_of_products, "sum of products", "sums of products");
    add(all.sums_of_squared_differences, "sum of squared differences", "sums of squared differences");
    add(all.scalar_pairs, "pair of scalar ops", "pairs of scalar ops");
    add(all.scaled_products, "scaled product", "scaled products");
    add(all.bounded_ops, "bounded op", "bounded ops");
    return text;
  }

  /// Byte strides of a value's row-major layout.
  static std::vector<std::int64_t> strides_of(const Shape& s) {
    return dense_byte_strides(s.dims(), static_cast<std::int64_t>(byte_size(s.dtype())));
  }

  Status emit_node(std::int64_t i, const Node& n) {
    Value v0{static_cast<std::int32_t>(i), 0, 0};
    const Shape& out = n.shape();
    const auto esize = static_cast<std::int64_t>(byte_size(out.dtype()));
    const std::int32_t dst = slot_of(v0);
    std::vector<std::int32_t> reads;
    for (Value v : n.operands) reads.push_back(slot_of(v));
    std::string text = str_cat("$", dst, " = ", op_name(n.op), "(");
    for (std::size_t k = 0; k < reads.size(); ++k) text += str_cat(k ? ", $" : "$", reads[k]);
    text += str_cat(") : ", out);
    std::vector<std::int64_t> out_dims(out.dims().begin(), out.dims().end());
    if (is_narrow_convert(n)) {
      auto k = std::make_unique<NarrowConvertKernel>();
      k->src_slot = reads[0];
      k->dst_slot = dst;
      k->from = g_.shape(n.operands[0]).dtype();
      k->to = out.dtype();
      k->count = g_.shape(n.operands[0]).element_count();
      k->bitcast = n.op == OpCode::kBitcastConvert;
      k->bytes_accessed = g_.shape(n.operands[0]).byte_size() + out.byte_size();
      k->text = std::move(text);
      add_kernel(std::move(k), std::move(reads), {dst});
      return ok_status();
    }

    auto move = [&](std::vector<MoveKernel::Piece> pieces, std::int32_t fill) {
      auto k = std::make_unique<MoveKernel>();
      k->dst_slot = dst;
      k->dst_bytes = out.byte_size();
      k->element_size = esize;
      k->fill_slot = fill;
      for (auto& p : pieces) p.copy.simplify();
      k->pieces = std::move(pieces);
      k->bytes_accessed = 2 * out.byte_size();
      k->text = text;
      add_kernel(std::move(k), reads, {dst});
    };
    auto piece = [&](std::int32_t src, std::int64_t src_offset, std::int64_t dst_offset, std::vector<std::int64_t> dims,
                     std::vector<std::int64_t> dst_strides, std::vector<std::int64_t> src_strides) {
      return MoveKernel::Piece{src, src_offset, dst_offset, StridedCopy{std::move(dims), std::move(dst_strides), std::move(src_strides), esize}, {}};
    };
    const std::vector<std::int64_t> dense = dense_byte_strides(out_dims, esize);

    switch (n.op) {
      case OpCode::kBroadcastInDim: {
        const Shape& in = g_.shape(n.operands[0]);
        const auto in_strides = strides_of(in);
        const auto& bd = n.attr<BroadcastInDimAttrs>().broadcast_dimensions;
        std::vector<std::int64_t> src(out_dims.size(), 0);
        for (std::size_t j = 0; j < bd.size(); ++j)
          if (in.dim(static_cast<std::int64_t>(j)) != 1) src[static_cast<std::size_t>(bd[j])] = in_strides[j];
        move({piece(reads[0], 0, 0, out_dims, dense, src)}, -1);
        return ok_status();
      }
      case OpCode::kTranspose: {
        const auto in_strides = strides_of(g_.shape(n.operands[0]));
        const auto& perm = n.attr<TransposeAttrs>().permutation;
        std::vector<std::int64_t> src;
        for (std::int64_t p : perm) src.push_back(in_strides[static_cast<std::size_t>(p)]);
        move({piece(reads[0], 0, 0, out_dims, dense, src)}, -1);
        return ok_status();
      }
      case OpCode::kSlice: {
        const auto in_strides = strides_of(g_.shape(n.operands[0]));
        const auto& a = n.attr<SliceAttrs>();
        std::int64_t offset = 0;
        std::vector<std::int64_t> src;
        for (std::size_t d = 0; d < in_strides.size(); ++d) {
          offset += a.start_indices[d] * in_strides[d];
          // A dimension of one result element never steps; its stride may be any size (and
          // times the input's byte stride, overflow), so it is not used.
          const std::int64_t step = a.strides.empty() ? 1 : a.strides[d];
          src.push_back(out_dims[d] > 1 ? in_strides[d] * step : 0);
        }
        move({piece(reads[0], offset, 0, out_dims, dense, src)}, -1);
        return ok_status();
      }
      case OpCode::kReverse: {
        const Shape& in = g_.shape(n.operands[0]);
        auto src = strides_of(in);
        std::int64_t offset = 0;
        for (std::int64_t d : n.attr<ReverseAttrs>().dimensions) {
          if (in.dim(d) > 0) offset += (in.dim(d) - 1) * src[static_cast<std::size_t>(d)];
          src[static_cast<std::size_t>(d)] = -src[static_cast<std::size_t>(d)];
        }
        move({piece(reads[0], offset, 0, out_dims, dense, src)}, -1);
        return ok_status();
      }
      case OpCode::kConcatenate: {
        const auto dim = static_cast<std::size_t>(n.attr<ConcatenateAttrs>().dimension);
        std::vector<MoveKernel::Piece> pieces;
        std::int64_t at = 0;
        for (std::size_t k = 0; k < n.operands.size(); ++k) {
          const Shape& in = g_.shape(n.operands[k]);
          pieces.push_back(piece(reads[k], 0, at * dense[dim], std::vector<std::int64_t>(in.dims().begin(), in.dims().end()),
                                 dense, strides_of(in)));
          at += in.dim(static_cast<std::int64_t>(dim));
        }
        move(std::move(pieces), -1);
        return ok_status();
      }
      case OpCode::kPad: {
        const Shape& in = g_.shape(n.operands[0]);
        const auto in_strides = strides_of(in);
        const auto& a = n.attr<PadAttrs>();
        std::vector<std::int64_t> dims, dst_strides;
        std::int64_t src_offset = 0, dst_offset = 0;
        bool empty = false;
        for (std::size_t d = 0; d < in_strides.size(); ++d) {
          const std::int64_t step = (a.interior_padding.empty() ? 0 : a.interior_padding[d]) + 1;
          const std::int64_t low = a.edge_padding_low[d];
          // Operand indices j land at low + j * step; keep those inside [0, out_dims[d]).
          std::int64_t first = low >= 0 ? 0 : (-low + step - 1) / step;
          std::int64_t last = in.dim(static_cast<std::int64_t>(d)) - 1;
          if (out_dims[d] - 1 - low < 0) last = -1;
          else last = std::min(last, (out_dims[d] - 1 - low) / step);
          const std::int64_t count = last - first + 1;
          if (count <= 0) empty = true;
          dims.push_back(std::max<std::int64_t>(count, 0));
          dst_strides.push_back(dense[d] * step);
          src_offset += first * in_strides[d];
          dst_offset += (low + first * step) * dense[d];
        }
        std::vector<MoveKernel::Piece> pieces;
        if (!empty) pieces.push_back(piece(reads[0], src_offset, dst_offset, dims, dst_strides, in_strides));
        move(std::move(pieces), reads[1]);
        return ok_status();
      }
      case OpCode::kIota: {
        auto k = std::make_unique<IotaKernel>();
        k->dst_slot = dst;
        k->shape = out;
        k->dimension = n.attr<IotaAttrs>().iota_dimension;
        k->text = text;
        k->bytes_accessed = out.byte_size();
        add_kernel(std::move(k), {}, {dst});
        return ok_status();
      }
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice: {
        const bool update = n.op == OpCode::kDynamicUpdateSlice;
        const Shape& operand = g_.shape(n.operands[0]);
        auto k = std::make_unique<DynamicSliceKernel>();
        k->update = update;
        k->dst_slot = dst;
        k->operand_slot = reads[0];
        k->element_size = esize;
        k->operand_dims.assign(operand.dims().begin(), operand.dims().end());
        const std::size_t first_index = update ? 2 : 1;
        for (std::size_t j = first_index; j < n.operands.size(); ++j) k->index_slots.push_back(reads[j]);
        k->index_dtype = n.operands.size() > first_index ? g_.shape(n.operands[first_index]).dtype() : DType::kS32;
        const auto op_strides = strides_of(operand);
        k->operand_strides = op_strides;
        if (update) {
          const Shape& upd = g_.shape(n.operands[1]);
          k->update_slot = reads[1];
          k->window.assign(upd.dims().begin(), upd.dims().end());
          k->copy = StridedCopy{k->window, op_strides, strides_of(upd), esize};
        } else {
          k->window = n.attr<DynamicSliceAttrs>().slice_sizes;
          k->copy = StridedCopy{k->window, dense, op_strides, esize};
        }
        k->text = text;
        k->bytes_accessed = 2 * out.byte_size();
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kDotGeneral: {
        const std::array<Value, 2> operands = product_operands(i, "dot_general", reads, text);
        auto k = std::make_unique<DotKernel>(g_.shape(operands[0]), g_.shape(operands[1]), n.attr<DotDimensionNumbers>(),
                                             max_workers_, reads[0], reads[1], dst, out.dtype());
        k->text = text;
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kConvolution: {
        const auto& a = n.attr<ConvolutionAttrs>();
        if (a.input_spatial_dimensions.size() > ConvKernel::kMaxConvSpatial)
          return unimplemented_error(str_cat("cpu: convolution with ", a.input_spatial_dimensions.size(),
                                             " spatial dimensions (at most ", ConvKernel::kMaxConvSpatial, ")"));
        const std::array<Value, 2> operands = product_operands(i, "convolution", reads, text);
        auto k = std::make_unique<ConvKernel>(g_.shape(operands[0]), g_.shape(operands[1]), out, a, max_workers_,
                                              reads[0], reads[1], dst);
        k->text = text;
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kReduce: {
        const std::size_t count = n.operands.size() / 2;
        std::vector<std::int32_t> inputs(reads.begin(), reads.begin() + static_cast<std::ptrdiff_t>(count));
        std::vector<std::int32_t> inits(reads.begin() + static_cast<std::ptrdiff_t>(count), reads.end());
        std::vector<std::int32_t> dsts;
        for (std::size_t r = 0; r < n.results.size(); ++r)
          dsts.push_back(slot_of(Value{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0}));
        auto made = ReduceKernel::make(g_.shape(n.operands[0]), n.attr<ReduceAttrs>().dimensions, n.bodies[0], inputs, inits, dsts);
        if (!made.ok()) return made.status();
        auto k = std::move(made).value();
        k->text = text;
        add_kernel(std::move(k), reads, dsts);
        return ok_status();
      }
      case OpCode::kTriangularSolve: {
        auto k = std::make_unique<TriangularSolveKernel>(g_.shape(n.operands[0]), g_.shape(n.operands[1]),
                                                         n.attr<TriangularSolveAttrs>(), max_workers_,
                                                         reads[0], reads[1], dst);
        k->text = text;
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kFft: {
        auto k = std::make_unique<FftKernel>(g_.shape(n.operands[0]), out, n.attr<FftAttrs>(),
                                             max_workers_, reads[0], dst);
        k->text = text;
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kGather: {
        auto made = GatherKernel::make(g_.shape(n.operands[0]), g_.shape(n.operands[1]), out, n.attr<GatherAttrs>(),
                                       reads[0], reads[1], dst);
        if (!made.ok()) return made.status();
        auto k = std::move(made).value();
        k->text = text;
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kScatter: {
        auto made = ScatterKernel::make(g_.shape(n.operands[0]), g_.shape(n.operands[1]), g_.shape(n.operands[2]),
                                        n.attr<ScatterAttrs>(), n.bodies[0], reads[0], reads[1], reads[2], dst);
        if (!made.ok()) return made.status();
        auto k = std::move(made).value();
        k->text = text;
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kReduceWindow: {
        const std::size_t count = n.operands.size() / 2;
        std::vector<std::int32_t> inputs(reads.begin(), reads.begin() + static_cast<std::ptrdiff_t>(count));
        std::vector<std::int32_t> inits(reads.begin() + static_cast<std::ptrdiff_t>(count), reads.end());
        std::vector<std::int32_t> dsts;
        std::vector<DType> dtypes;
        for (std::size_t r = 0; r < n.results.size(); ++r) {
          dsts.push_back(slot_of(Value{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0}));
          dtypes.push_back(g_.shape(n.operands[r]).dtype());
        }
        auto made = ReduceWindowKernel::make(g_.shape(n.operands[0]), n.results[0], n.attr<WindowAttrs>(), n.bodies[0],
                                             dtypes, std::move(inputs), std::move(inits), dsts);
        if (!made.ok()) return made.status();
        auto k = std::move(made).value();
        k->text = text;
        add_kernel(std::move(k), reads, dsts);
        return ok_status();
      }
      case OpCode::kSelectAndScatter: {
        auto made = SelectAndScatterKernel::make(g_.shape(n.operands[0]), g_.shape(n.operands[1]), n.attr<WindowAttrs>(),
                                                 n.bodies[0], n.bodies[1], reads[0], reads[1], reads[2], dst);
        if (!made.ok()) return made.status();
        auto k = std::move(made).value();
        k->text = text;
        add_kernel(std::move(k), reads, {dst});
        return ok_status();
      }
      case OpCode::kSort: {
        std::vector<std::int32_t> dsts;
        std::vector<DType> dtypes;
        for (std::size_t r = 0; r < n.results.size(); ++r) {
          dsts.push_back(slot_of(Value{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0}));
          dtypes.push_back(n.results[r].dtype());
        }
        auto made = SortKernel::make(g_.shape(n.operands[0]), n.attr<SortAttrs>(), n.bodies[0], dtypes, reads, dsts);
        if (!made.ok()) return made.status();
        auto k = std::move(made).value();
        k->text = text;
        add_kernel(std::move(k), reads, dsts);
        return ok_status();
      }
      case OpCode::kTopK: {
        const std::int32_t indices = slot_of(Value{static_cast<std::int32_t>(i), 1, 0});
        auto made = TopKKernel::make(g_.shape(n.operands[0]), n.attr<TopKAttrs>().k, reads[0], dst, indices);
        if (!made.ok()) return made.status();
        auto k = std::move(made).value();
        k->text = text;
        add_kernel(std::move(k), reads, {dst, indices});
        return ok_status();
      }
      case OpCode::kLinalg: {
        const LinalgAttrs& la = n.attr<LinalgAttrs>();
        std::vector<std::int32_t> dsts;
        for (std::size_t r = 0; r < n.results.size(); ++r)
          dsts.push_back(slot_of(Value{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0}));
        std::unique_ptr<Kernel> k;
        if (la.routine == LinalgRoutine::kTrsm) {
          const TriangularSolveAttrs t{la.side == 'L', la.uplo == 'L', la.diag == 'U',
                                       la.trans == 'N'   ? Transpose::kNoTranspose
                                       : la.trans == 'T' ? Transpose::kTranspose
                                                         : Transpose::kAdjoint};
          k = std::make_unique<TriangularSolveKernel>(g_.shape(n.operands[0]), g_.shape(n.operands[1]), t,
                                                      max_workers_, reads[0], reads[1], dst);
        } else {
          std::vector<Shape> operand_shapes;
          for (const Value& v : n.operands) operand_shapes.push_back(g_.shape(v));
          k = make_linalg_kernel(operand_shapes, n.results, la, reads, dsts);
          if (k == nullptr)
            return unimplemented_error(str_cat("cpu: ", text, ": this program was built with "
                                               "PJRT_LITE_CPU_NO_LINALG_KERNELS, which leaves the linalg kernels out"));
        }
        k->text = text;
        add_kernel(std::move(k), reads, dsts);
        return ok_status();
      }
      case OpCode::kRngBitGenerator: {
        const std::int32_t bits = slot_of(Value{static_cast<std::int32_t>(i), 1, 0});
        auto k = std::make_unique<RngBitGeneratorKernel>(reference::rng_generator(n.attr<RngBitGeneratorAttrs>().algorithm),
                                                         g_.shape(n.operands[0]), n.results[1], max_workers_, reads[0],
                                                         dst, bits);
        k->text = text;
        add_kernel(std::move(k), reads, {dst, bits});
        return ok_status();
      }
      default:
        return unimplemented_error(str_cat("cpu: ", op_name(n.op), " is not supported by the CPU backend"));
    }
  }

  /// while, case and if: each region compiles to a Program of its own, with this compile's
  /// options and workers, run by one kernel.
  Status emit_control_flow(std::int64_t i, const Node& n) {
    std::vector<std::int32_t> reads;
    for (Value v : n.operands) reads.push_back(slot_of(v));
    std::vector<std::shared_ptr<const Program>> regions;
    for (std::size_t k = 0; k < n.bodies.size(); ++k) {
      StatusOr<std::shared_ptr<Program>> p = compile_program_here(n.bodies[k], options_, max_workers_);
      if (!p.ok()) return p.status().with_context(str_cat(op_name(n.op), ": region ", k));
      regions.push_back(std::move(p).value());
    }
    std::vector<std::int32_t> dsts;
    std::vector<std::int64_t> bytes;
    for (std::size_t r = 0; r < n.results.size(); ++r) {
      dsts.push_back(slot_of(Value{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0}));
      bytes.push_back(n.results[r].byte_size());
    }
    std::string text;
    for (std::int32_t d : dsts) text += str_cat(text.empty() ? "$" : ", $", d);
    text += str_cat(text.empty() ? "" : " = ", op_name(n.op), "(");
    for (std::size_t k = 0; k < reads.size(); ++k) text += str_cat(k ? ", $" : "$", reads[k]);
    text += str_cat(") with ", regions.size(), " region(s)");
    // What one run costs is unknown before it runs: count a loop's cond and body once, and a
    // case as its costliest branch.
    CostAnalysis cost;
    for (std::size_t k = 0; k < regions.size(); ++k) {
      const CostAnalysis& c = regions[k]->cost;
      const bool sum = n.op == OpCode::kWhile;
      cost.flops = sum ? cost.flops + c.flops : std::max(cost.flops, c.flops);
      cost.transcendentals = sum ? cost.transcendentals + c.transcendentals : std::max(cost.transcendentals, c.transcendentals);
      cost.bytes_accessed = sum ? cost.bytes_accessed + c.bytes_accessed : std::max(cost.bytes_accessed, c.bytes_accessed);
    }
    for (const auto& r : regions) {
      program_->has_collectives |= r->has_collectives;
      for (const auto& [id, bytes] : r->channels) program_->add_channel(id, bytes);
      program_->unpaired_channels |= r->unpaired_channels;
    }
    std::unique_ptr<Kernel> k;
    if (n.op == OpCode::kWhile) {
      k = std::make_unique<WhileKernel>(regions[0], regions[1], reads, dsts, std::move(bytes));
    } else {
      std::vector<std::int32_t> operands(reads.begin() + 1, reads.end());
      k = std::make_unique<CaseKernel>(n.op, std::move(regions), reads[0], std::move(operands), dsts);
    }
    k->text = text;
    k->flops = cost.flops;
    k->transcendentals = cost.transcendentals;
    k->bytes_accessed = cost.bytes_accessed;
    add_kernel(std::move(k), reads, std::move(dsts));
    return ok_status();
  }

  /// replica_id, partition_id and the collectives: which participants meet is settled here,
  /// for the grid of the compile options (collective_kernel.hpp).
  Status emit_collective(std::int64_t i, const Node& n) {
    std::vector<std::int32_t> reads, dsts;
    for (Value v : n.operands) reads.push_back(slot_of(v));
    for (std::size_t r = 0; r < n.results.size(); ++r)
      dsts.push_back(slot_of(Value{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0}));
    std::string text;
    for (std::int32_t d : dsts) text += str_cat(text.empty() ? "$" : ", $", d);
    text += str_cat(" = ", op_name(n.op), "(");
    for (std::size_t k = 0; k < reads.size(); ++k) text += str_cat(k ? ", $" : "$", reads[k]);
    text += ")";
    if (is_process_position(n.op)) {
      auto k = std::make_unique<ProcessPositionKernel>();
      k->replica = n.op == OpCode::kReplicaId;
      k->dst_slot = dsts[0];
      k->text = text;
      add_kernel(std::move(k), reads, dsts);
      return ok_status();
    }
    const int replicas = options_.num_replicas, partitions = options_.num_partitions;
    auto k = std::make_unique<CollectiveKernel>();
    k->op = n.op;
    k->site = next_collective_site();
    k->participants = replicas * partitions;
    k->operand_slots = reads;
    k->result_slots = dsts;
    k->dynamic_root = n.attr<CollectiveAttrs>().has_dynamic_root;
    PJRT_LITE_ASSIGN_OR_RETURN(k->groups, participant_groups(n, replicas, partitions));
    const auto& a = n.attr<CollectiveAttrs>();
    for (std::size_t r = 0; r < n.results.size(); ++r) k->result_bytes.push_back(n.results[r].byte_size());
    for (Value v : n.operands) {
      const Shape& s = g_.shape(v);
      const auto es = static_cast<std::int64_t>(byte_size(s.dtype()));
      k->operand_bytes.push_back(s.byte_size());
      k->element_size.push_back(es);
      std::int64_t outer = 1, inner = 1;
      const std::int64_t d = n.op == OpCode::kAllReduce || n.op == OpCode::kCollectivePermute ||
                                     n.op == OpCode::kCollectiveBroadcast
                                 ? 0
                                 : a.dimension;
      for (std::int64_t j = 0; j < d && j < s.rank(); ++j) outer *= s.dim(j);
      for (std::int64_t j = d + 1; j < s.rank(); ++j) inner *= s.dim(j);
      k->outer.push_back(outer);
      k->inner.push_back(inner);
      k->dim.push_back(s.rank() > d ? s.dim(d) : 1);
    }
    // Every group must have the size the result types were inferred for.
    for (std::size_t p = 0; p < k->groups.size(); ++p) {
      const auto size = static_cast<std::int64_t>(k->groups[p].size());
      const std::int64_t want = n.op == OpCode::kAllToAll                                          ? a.split_count
                                : n.op == OpCode::kAllGather || n.op == OpCode::kReduceScatter ? a.group_size * a.num_partitions
                                                                                               : size;
      if (size != want)
        return invalid_argument_error(str_cat(op_name(n.op), ": participant ", p, "'s process group has ", size,
                                              " members on a grid of ", replicas, " x ", partitions, ", but the op's types need ",
                                              want));
    }
    if (n.op == OpCode::kCollectivePermute) {
      const bool by_partition = a.channel_id > 0;
      for (int p = 0; p < k->participants; ++p) {
        const int r = p / partitions, q = p % partitions;
        int source = -1;
        for (std::size_t row = 0; row < a.group_count(); ++row)
          if (a.group(row)[1] == (by_partition ? q : r)) {
            const auto from = static_cast<int>(a.group(row)[0]);
            source = by_partition ? r * partitions + from : from * partitions + q;
          }
        k->permute_source.push_back(source);
      }
    }
    if (n.op == OpCode::kAllReduce || n.op == OpCode::kReduceScatter) {
      Status lowered = lower_scalar_graph(n.bodies[0], k->body, k->body_constants, /*splat_constants=*/true);
      if (!lowered.ok()) return lowered.with_context(str_cat(op_name(n.op), ": computation"));
    }
    if (n.op == OpCode::kAllToAll) {
      for (std::size_t o = 0; o < n.operands.size(); ++o) {
        const Shape& s = g_.shape(n.operands[o]);
        const auto es = static_cast<std::int64_t>(byte_size(s.dtype()));
        std::vector<std::int64_t> part(s.dims().begin(), s.dims().end());
        part[static_cast<std::size_t>(a.dimension)] /= a.split_count;
        const std::vector<std::int64_t> src = dense_byte_strides(s.dims(), es);
        const std::vector<std::int64_t> dst = dense_byte_strides(n.results[o].dims(), es);
        k->part_src_step.push_back(part[static_cast<std::size_t>(a.dimension)] * src[static_cast<std::size_t>(a.dimension)]);
        k->part_dst_step.push_back(part[static_cast<std::size_t>(a.concat_dimension)] *
                                   dst[static_cast<std::size_t>(a.concat_dimension)]);
        StridedCopy c{part, dst, src, es};
        c.simplify();
        k->part_copy.push_back(std::move(c));
      }
    }
    k->plan_scratch();
    std::int64_t bytes = 0;
    for (std::int64_t b : k->result_bytes) bytes += b;
    k->bytes_accessed = bytes * (1 + k->participants);
    k->text = text;
    program_->has_collectives = true;
    add_kernel(std::move(k), reads, dsts);
    return ok_status();
  }

  /// after_all (nothing to run: a token holds no data), send, recv, infeed and outfeed
  /// (channel_kernel.hpp). Which mailboxes each participant's send and recv use is settled
  /// here, for the grid of the compile options.
  Status emit_token_op(std::int64_t i, const Node& n) {
    if (n.op == OpCode::kAfterAll) return ok_status();
    const auto& a = n.attr<ChannelAttrs>();
    auto k = std::make_unique<ChannelKernel>();
    k->op = n.op;
    std::vector<std::int32_t> reads, dsts;
    for (Value v : n.operands) reads.push_back(slot_of(v));
    for (std::size_t r = 0; r < n.results.size(); ++r)
      dsts.push_back(slot_of(Value{static_cast<std::int32_t>(i), static_cast<std::int32_t>(r), 0}));
    const bool receives = n.op == OpCode::kRecv || n.op == OpCode::kInfeed;
    if (receives) {
      k->data_slots.assign(dsts.begin(), dsts.end() - 1);
      k->data_types = a.payload;
    } else {
      k->data_slots.assign(reads.begin(), reads.end() - 1);
      for (std::size_t o = 0; o + 1 < n.operands.size(); ++o) k->data_types.push_back(g_.shape(n.operands[o]));
    }
    pjrt_lite::detail::Hasher h;
    std::int64_t total = 0;
    for (const Shape& s : k->data_types) {
      k->data_bytes.push_back(s.byte_size());
      total += s.byte_size();
      h.shape(s.with_default_layout());
    }
    k->key = h.value();
    k->timeout = std::chrono::milliseconds(options_.collective_timeout_ms);
    std::string text;
    for (std::int32_t d : dsts) text += str_cat(text.empty() ? "$" : ", $", d);
    text += str_cat(" = ", op_name(n.op), "(");
    for (std::size_t r = 0; r < reads.size(); ++r) text += str_cat(r ? ", $" : "$", reads[r]);
    text += ")";
    if (n.op == OpCode::kSend || n.op == OpCode::kRecv) {
      text += str_cat(" channel ", a.channel_id);
      const int replicas = options_.num_replicas, partitions = options_.num_partitions;
      const int participants = replicas * partitions;
      if (participants == 1)
        return unimplemented_error(str_cat("cpu: ", op_name(n.op), " in an executable of one participant, which has ",
                                           "nobody to exchange with: compile for a grid (num_replicas x num_partitions > 1)"));
      // As collective_permute's pairs: replica ids when channel_id <= 0, partition ids
      // otherwise; the other coordinate is the participant's own.
      const bool by_partition = a.channel_id > 0;
      const auto& pairs = a.source_target_pairs;
      for (std::int64_t id : pairs)
        if (id >= (by_partition ? partitions : replicas))
          return invalid_argument_error(str_cat(op_name(n.op), ": source_target_pairs names ",
                                                by_partition ? "partition " : "replica ", id, " on a grid of ", replicas,
                                                " x ", partitions));
      for (int p = 0; p < participants; ++p) {
        const int r = p / partitions, q = p % partitions;
        const std::int64_t me = by_partition ? q : r;
        std::vector<int> boxes;
        if (pairs.empty()) {
          boxes.push_back(participants);  // any receiver's mailbox
        } else if (n.op == OpCode::kSend) {
          for (std::size_t row = 0; row + 1 < pairs.size(); row += 2) {
            if (pairs[row] != me) continue;
            const std::int64_t to = pairs[row + 1];
            boxes.push_back(static_cast<int>(by_partition ? r * partitions + to : to * partitions + q));
          }
        } else {
          int source = -1;
          for (std::size_t row = 0; row + 1 < pairs.size() && source < 0; row += 2)
            if (pairs[row + 1] == me) {
              const std::int64_t from = pairs[row];
              source = static_cast<int>(by_partition ? r * partitions + from : from * partitions + q);
            }
          boxes.push_back(source >= 0 ? p : -1);
          k->sources.push_back(source);
        }
        k->mailboxes.push_back(std::move(boxes));
      }
      k->channel_id = a.channel_id;
      program_->add_channel(a.channel_id, total);
      program_->unpaired_channels |= pairs.empty();
      program_->has_collectives = true;
    }
    k->plan_scratch();
    k->bytes_accessed = total;
    k->text = text;
    add_kernel(std::move(k), reads, dsts);
    return ok_status();
  }

  // ---- The arena: temporaries by lifetime (freed after their last reader), then scratch.
  // RESOURCE_EXHAUSTED if its size overflows int64.
  Status plan_arena() {
    const auto& slots = program_->slots;
    std::vector<std::int64_t> last_read(slots.size(), -1);
    for (std::size_t k = 0; k < reads_.size(); ++k)
      for (std::int32_t s : reads_[k]) last_read[static_cast<std::size_t>(s)] = static_cast<std::int64_t>(k);
    struct Block { std::int64_t offset, size; };
    std::vector<Block> free_blocks;
    std::int64_t end = 0;
    std::vector<bool> placed(slots.size(), false);
    std::vector<std::vector<std::int32_t>> dies_after(reads_.size());
    for (std::size_t s = 0; s < slots.size(); ++s)
      if (slots[s].kind == SlotKind::kTemp && last_read[s] >= 0) dies_after[static_cast<std::size_t>(last_read[s])].push_back(static_cast<std::int32_t>(s));
    // Sizes rounded up to 64 bytes; a size within 63 of 2^63 (or the sum of the sizes) does
    // not fit an int64 and is RESOURCE_EXHAUSTED.
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    auto round = [](std::int64_t n) { return std::max<std::int64_t>(64, (n + 63) / 64 * 64); };
    auto too_large = [&](std::int64_t bytes) {
      return resource_exhausted_error(str_cat("the arena of the program's temporaries and kernel scratch would exceed ",
                                              std::numeric_limits<std::int64_t>::max(), " bytes (adding ", bytes, ")"));
    };
    for (std::size_t k = 0; k < writes_.size(); ++k) {
      for (std::int32_t s : writes_[k]) {
        auto& slot = program_->slots[static_cast<std::size_t>(s)];
        if (slot.kind != SlotKind::kTemp || placed[static_cast<std::size_t>(s)]) continue;
        if (slot.bytes > kMax - 63) return too_large(slot.bytes);
        const std::int64_t size = round(slot.bytes);
        auto best = free_blocks.end();
        for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it)
          if (it->size >= size && (best == free_blocks.end() || it->size < best->size)) best = it;
        if (best != free_blocks.end()) {
          slot.offset = best->offset;
          if (best->size > size) *best = Block{best->offset + size, best->size - size};
          else free_blocks.erase(best);
        } else {
          slot.offset = end;
          if (size > kMax - end) return too_large(size);
          end += size;
        }
        placed[static_cast<std::size_t>(s)] = true;
      }
      for (std::int32_t s : dies_after[k]) {
        free_blocks.push_back(Block{slots[static_cast<std::size_t>(s)].offset, round(slots[static_cast<std::size_t>(s)].bytes)});
        std::sort(free_blocks.begin(), free_blocks.end(), [](Block a, Block b) { return a.offset < b.offset; });
        std::vector<Block> merged;
        for (Block b : free_blocks) {
          if (!merged.empty() && merged.back().offset + merged.back().size == b.offset) merged.back().size += b.size;
          else merged.push_back(b);
        }
        free_blocks = std::move(merged);
      }
    }
    std::int64_t scratch = 0;
    for (const auto& k : program_->kernels) scratch = std::max(scratch, k->scratch_bytes);
    program_->scratch_offset = end;
    if (scratch > kMax - 63 || round(scratch) > kMax - end) return too_large(scratch);
    program_->arena_bytes = end + (scratch + 63) / 64 * 64;
    return ok_status();
  }

  // ---- Donation: an argument's memory may become output j's when the argument is last read
  // before output j is written, or by the loop that writes it, element by element, no later
  // than the element is written.
  void plan_donation() {
    const auto& slots = program_->slots;
    program_->donation_target.assign(program_->parameter_shapes.size(), -1);
    std::vector<bool> taken(program_->output_shapes.size(), false);
    std::vector<std::int32_t> param_slot(program_->parameter_shapes.size(), -1);
    for (std::size_t s = 0; s < slots.size(); ++s)
      if (slots[s].kind == SlotKind::kParameter) param_slot[static_cast<std::size_t>(slots[s].index)] = static_cast<std::int32_t>(s);
    for (std::size_t p = 0; p < param_slot.size(); ++p) {
      const std::int32_t ps = param_slot[p];
      std::int64_t last_read = -1;
      for (std::size_t k = 0; k < reads_.size(); ++k)
        if (ps >= 0 && std::find(reads_[k].begin(), reads_[k].end(), ps) != reads_[k].end()) last_read = static_cast<std::int64_t>(k);
      for (std::size_t j = 0; j < program_->output_slots.size(); ++j) {
        if (taken[j] || program_->output_shapes[j].byte_size() != program_->parameter_shapes[p].byte_size()) continue;
        const std::int32_t os = program_->output_slots[j];
        std::int64_t writer = -1;
        for (std::size_t k = 0; k < writes_.size(); ++k)
          if (std::find(writes_[k].begin(), writes_[k].end(), os) != writes_[k].end()) writer = static_cast<std::int64_t>(k);
        if (writer < 0) continue;
        bool safe = last_read < writer;
        if (last_read == writer) {
          const FusedKernel* fused = program_->kernels[static_cast<std::size_t>(writer)]->as_fused();
          safe = fused != nullptr && in_place_safe(*fused, ps, os);
        }
        if (safe) {
          program_->donation_target[p] = static_cast<std::int32_t>(j);
          taken[j] = true;
          break;
        }
      }
    }
  }

  /// True when, in the loop, every read of slot `in` comes at or before the write of slot `out`
  /// and is of the same element (not a splat).
  static bool in_place_safe(const FusedKernel& k, std::int32_t in, std::int32_t out) {
    const auto& regs = k.program.regs();
    auto is_slot = [&](std::int32_t reg, std::int32_t slot, bool splat_too) {
      if (reg < 0) return false;
      const auto& r = regs[static_cast<std::size_t>(reg)];
      if (r.kind == TileProgram::RegKind::kScratch) return false;
      if (r.kind != TileProgram::RegKind::kExternal && !splat_too) return false;
      return k.externals[static_cast<std::size_t>(r.external)] == slot;
    };
    std::int64_t written = -1;
    const auto& code = k.program.code();
    for (std::size_t i = 0; i < code.size(); ++i) {
      for (std::int32_t r : code[i].in) {
        if (is_slot(r, in, true)) {
          // A splat or periodic register reads elements other than the one being written.
          if (regs[static_cast<std::size_t>(r)].kind != TileProgram::RegKind::kExternal) return false;
          if (written >= 0) return false;
        }
      }
      if (is_slot(code[i].out, out, false) && written < 0) written = static_cast<std::int64_t>(i);
    }
    return true;
  }

  void summarize() {
    for (const auto& k : program_->kernels) {
      program_->cost.flops += k->flops;
      program_->cost.transcendentals += k->transcendentals;
      program_->cost.bytes_accessed += k->bytes_accessed;
    }
    for (const Shape& s : program_->parameter_shapes) program_->memory.argument_bytes += s.byte_size();
    for (const Shape& s : program_->output_shapes) program_->memory.output_bytes += s.byte_size();
    for (const Slot& s : program_->slots)
      if (s.kind == SlotKind::kConstant) program_->memory.constant_bytes += s.bytes;
    program_->memory.temp_bytes = program_->arena_bytes;
    program_->memory.scratch_bytes = program_->arena_bytes - program_->scratch_offset;
    std::string& t = program_->text;
    t = str_cat("cpu program '", g_.name(), "': ", program_->kernels.size(), " kernels, arena ", program_->arena_bytes, " bytes\n");
    for (std::size_t s = 0; s < program_->slots.size(); ++s) {
      const Slot& slot = program_->slots[s];
      constexpr const char* kinds[] = {"parameter", "constant", "temp", "output"};
      t += str_cat("  $", s, ": ", kinds[static_cast<int>(slot.kind)]);
      if (slot.kind == SlotKind::kParameter || slot.kind == SlotKind::kOutput) t += str_cat(" ", slot.index);
      if (slot.kind == SlotKind::kTemp) t += str_cat(" @", slot.offset);
      t += str_cat(", ", slot.bytes, " bytes\n");
    }
    for (const auto& k : program_->kernels) t += str_cat("  ", k->text, "\n");
  }

  struct Group {
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> members;
    bool open = true;
  };

  const Graph& g_;
  CompileOptions options_;
  int max_workers_;
  std::shared_ptr<Program> program_;
  std::vector<std::int64_t> value_base_;
  std::vector<std::vector<std::int64_t>> users_;
  std::vector<bool> int8_product_;  // per node: a dot_general that multiplies 8-bit integers
  std::vector<bool> absorbed_;      // per node: a convert only such products read
  std::vector<bool> is_output_;
  std::vector<std::int32_t> value_slot_;
  std::vector<std::int32_t> group_of_;
  std::vector<Group> groups_;
  std::vector<std::int32_t> row_group_of_;
  std::vector<RowGroup> row_groups_;
  std::vector<std::int32_t> output_copies_;
  std::vector<std::vector<std::int32_t>> reads_, writes_;
};

/// Results of constant folding up to this many elements become constants.
inline constexpr std::int64_t kMaxFoldElements = 1024;

inline StatusOr<std::shared_ptr<Program>> compile_program_here(const Graph& graph, const CompileOptions& options,
                                                               int max_workers) {
  PJRT_LITE_RETURN_IF_ERROR(verify(graph));
  // Only converts see the narrow types: every other op computes on them through a wide type.
  PJRT_LITE_ASSIGN_OR_RETURN(Graph widened, widen_narrow_types(graph));
  if (!options.optimize) return Compiler(widened, options, max_workers).run();
  // Constant folding evaluates with the reference interpreter: folding happens once per
  // compile, on small constants, where being obviously right matters more than speed. Large
  // results stay computed: a broadcast scalar is free inside a fused loop, a folded one is
  // memory traffic.
  SimplifyOptions simplify_options;
  simplify_options.max_fold_elements = kMaxFoldElements;
  PJRT_LITE_ASSIGN_OR_RETURN(Graph simplified, simplify(widened, &reference::evaluate_node, simplify_options));
  return Compiler(simplified, options, max_workers).run();
}

PJRT_LITE_COMPILED_ONCE StatusOr<std::shared_ptr<Program>> compile_program(const Graph& graph,
                                                                                const CompileOptions& options,
                                                                                int max_workers) {
  const KernelIsa wanted = options.kernel_isa;
  for (const KernelBuild& build : kernel_builds()) {
    if (wanted != KernelIsa::kBest && build.isa != wanted) continue;
    if (!cpu_runs_kernel_isa(build.isa)) {
      if (wanted == KernelIsa::kBest) continue;
      return failed_precondition_error(str_cat("compile: CompileOptions.kernel_isa asks for the ", kernel_isa_name(wanted),
                                               " kernels, which this CPU cannot run"));
    }
    if (build.compile == nullptr) return compile_program_here(graph, options, max_workers);
    StatusOr<std::shared_ptr<Program>> program = internal_error("compile: the kernel build gave no answer");
    build.compile(graph, options, max_workers, &program);
    return program;
  }
  std::string have;
  for (const KernelBuild& build : kernel_builds()) have += str_cat(have.empty() ? "" : ", ", kernel_isa_name(build.isa));
  return invalid_argument_error(str_cat("compile: CompileOptions.kernel_isa asks for the ", kernel_isa_name(wanted),
                                        " kernels, which this build does not have (it has: ", have, ")"));
}

}  // namespace detail

PJRT_LITE_COMPILED_ONCE std::vector<KernelIsa> available_kernel_isas() {
  std::vector<KernelIsa> isas;
  for (const detail::KernelBuild& build : detail::kernel_builds())
    if (cpu_runs_kernel_isa(build.isa)) isas.push_back(build.isa);
  return isas;
}

}  // namespace pjrt_lite::cpu
