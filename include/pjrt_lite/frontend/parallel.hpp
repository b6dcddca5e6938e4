#pragma once
// pmap, shard_map and the collectives of the front end, as jax.pmap, jax's shard_map and
// jax.lax's: f mapped over the leading axis of its arguments (pmap) or over shards of them
// (shard_map), one per device, the devices running at once as the replicas of one program;
// inside f, np::psum, np::pmean, np::all_gather, np::ppermute, np::pbroadcast and np::axis_index reach
// across the devices of the map named by their axis.
//
//   auto step = pmap(*client, [](Tensor w, Tensor x) {
//     return np::psum(np::sum(w * x), "i");          // the same total on every device
//   });
//   StatusOr<Literal> y = step(w, x);  // w, x: [devices, ...]; y: [devices]
//
// The collectives have derivative rules (autodiff.hpp: psum's transpose is psum, all_gather's
// a sum-scatter, ppermute's the inverse permutation, pbroadcast's a sum at the source), so
// grad and jvp see through them.
// Include this header explicitly; <pjrt_lite/frontend.hpp> does not.

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/unique_function.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/frontend/tensor.hpp"
#include "pjrt_lite/frontend/transforms.hpp"
#include "pjrt_lite/frontend/tree.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1 {

struct PmapOptions {
  /// The name of the traced graph.
  std::string name = "pmap";
  /// The name the collectives inside f use for the mapped axis.
  std::string axis_name = "i";
};

namespace detail {

/// A pmap being traced on this thread: its axis name and size.
struct MappedAxis {
  std::string name;
  std::int64_t size = 0;
};
inline std::vector<MappedAxis>& mapped_axes() {
  thread_local std::vector<MappedAxis> axes;
  return axes;
}

/// The mapped axis `name`, innermost first; an error naming `op` when no pmap over it is
/// being traced.
inline StatusOr<MappedAxis> find_axis(const char* op, std::string_view name) {
  const auto& axes = mapped_axes();
  for (auto it = axes.rbegin(); it != axes.rend(); ++it)
    if (it->name == name) return *it;
  return invalid_argument_error(str_cat(op, ": unbound axis name '", name,
                                        "': no pmap over it is being traced"));
}

/// `x`'s trace and the axis, or the error in the trace.
inline Trace* collective_trace(const char* op, Tensor& x, std::string_view axis, MappedAxis& found) {
  Trace* t = np::detail::resolve(op, {&x});
  if (t == nullptr || !t->ok()) return t;
  StatusOr<MappedAxis> a = find_axis(op, axis);
  if (!a.ok()) {
    np::detail::fail(t, a.status());
    return t;
  }
  found = *a;
  return t;
}

/// The IR's sum over the values of a dtype.
inline StatusOr<Graph> sum_region(DType t) { return make_binary_body(OpCode::kAdd, t); }

/// The compile options of a client's executables, with a grid of `replicas`.
template <class C>
auto grid_options(std::int64_t replicas) {
  std::remove_cvref_t<decltype(std::declval<typename C::executable_type&>().compile_options())> o;
  o.num_replicas = static_cast<int>(replicas);
  return o;
}

}  // namespace detail

namespace np {

/// The sum of x over the devices of the pmap `axis`, on every device (jax.lax.psum).
inline Tensor psum(Tensor x, std::string_view axis) {
  pjrt_lite::detail::MappedAxis a;
  Trace* t = pjrt_lite::detail::collective_trace("psum", x, axis, a);
  if (t == nullptr || !t->ok() || a.size == 0) return Tensor();
  StatusOr<Graph> body = pjrt_lite::detail::sum_region(x.dtype());
  if (!body.ok()) return detail::fail(t, body.status().with_context("psum"));
  return t->wrap(t->builder().op(OpCode::kAllReduce, {x.value()}, CollectiveAttrs{}, {std::move(body).value()})[0]);
}

/// The mean of x over the devices of the pmap `axis` (jax.lax.pmean).
inline Tensor pmean(Tensor x, std::string_view axis) {
  StatusOr<pjrt_lite::detail::MappedAxis> a = pjrt_lite::detail::find_axis("pmean", axis);
  if (!a.ok()) {
    if (Trace* t = detail::resolve("pmean", {&x})) detail::fail(t, a.status());
    return Tensor();
  }
  return psum(x, axis) / static_cast<double>(a->size);
}

/// x of every device of the pmap `axis`, stacked along a new dimension `dim` (tiled: joined
/// along the existing dimension `dim` instead), on every device (jax.lax.all_gather).
inline Tensor all_gather(Tensor x, std::string_view axis, std::int64_t dim = 0, bool tiled = false) {
  pjrt_lite::detail::MappedAxis a;
  Trace* t = pjrt_lite::detail::collective_trace("all_gather", x, axis, a);
  if (t == nullptr || !t->ok() || a.size == 0) return Tensor();
  std::vector<std::int64_t> dims = x.dims();
  const std::int64_t rank = static_cast<std::int64_t>(dims.size()) + (tiled ? 0 : 1);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank || (tiled && dims.empty()))
    return detail::fail(t, invalid_argument_error(str_cat("all_gather: dimension ", dim, " of a rank-", rank,
                                                          tiled ? " array" : " result")));
  Tensor in = x;
  if (!tiled) {
    dims.insert(dims.begin() + dim, 1);
    in = x.reshape(dims);
  }
  CollectiveAttrs c;
  c.dimension = dim;
  c.group_size = a.size;
  for (std::int64_t k = 0; k < a.size; ++k) c.groups.push_back(k);
  return t->wrap(t->builder().all_gather({in.value()}, c)[0]);
}

/// x sent along `perm`'s (source, destination) pairs of device indices of the pmap `axis`; a
/// device no pair reaches gets zeros (jax.lax.ppermute).
inline Tensor ppermute(Tensor x, std::string_view axis, const std::vector<std::pair<std::int64_t, std::int64_t>>& perm) {
  pjrt_lite::detail::MappedAxis a;
  Trace* t = pjrt_lite::detail::collective_trace("ppermute", x, axis, a);
  if (t == nullptr || !t->ok() || a.size == 0) return Tensor();
  CollectiveAttrs c;
  c.group_size = 2;
  for (const auto& [from, to] : perm) {
    if (from < 0 || from >= a.size || to < 0 || to >= a.size)
      return detail::fail(t, invalid_argument_error(str_cat("ppermute: pair (", from, ", ", to, ") names a device outside the ",
                                                            a.size, " of axis '", axis, "'")));
    c.groups.push_back(from);
    c.groups.push_back(to);
  }
  return t->wrap(t->builder().collective_permute(x.value(), c));
}

/// x of device `source` of the pmap `axis`, on every device (jax.lax.pbroadcast): one
/// collective_broadcast whose group starts with `source`.
inline Tensor pbroadcast(Tensor x, std::string_view axis, std::int64_t source) {
  pjrt_lite::detail::MappedAxis a;
  Trace* t = pjrt_lite::detail::collective_trace("pbroadcast", x, axis, a);
  if (t == nullptr || !t->ok() || a.size == 0) return Tensor();
  if (source < 0 || source >= a.size)
    return detail::fail(t, invalid_argument_error(str_cat("pbroadcast: source ", source, " is outside the ", a.size,
                                                          " devices of axis '", axis, "'")));
  CollectiveAttrs c;
  c.group_size = a.size;
  c.groups.push_back(source);
  for (std::int64_t k = 0; k < a.size; ++k)
    if (k != source) c.groups.push_back(k);
  return t->wrap(t->builder().collective_broadcast({x.value()}, c)[0]);
}

/// This device's index along the pmap `axis`, an s32 (jax.lax.axis_index).
inline Tensor axis_index(std::string_view axis) {
  Trace* t = detail::current_trace();
  if (t == nullptr) return Tensor();
  StatusOr<pjrt_lite::detail::MappedAxis> a = pjrt_lite::detail::find_axis("axis_index", axis);
  if (!a.ok()) return detail::fail(t, a.status());
  GraphBuilder& b = t->builder();
  return t->wrap(b.convert(b.replica_id(), DType::kS32));
}

}  // namespace np

/// f mapped over the leading axis of its arguments (jax.pmap): called with trees of Literals
/// whose leaves all have the same leading dimension n, it runs f on slice k of every leaf on
/// device k, the n devices at once as the n replicas of one compiled program, and returns f's
/// tree with each result stacked back along a new leading axis. Compiled once per signature
/// (slice shapes and n). Thread-safe.
template <CompilingClient C, class F>
class Pmap {
 public:
  using BufferType = typename C::buffer_type;
  using Executable = typename C::executable_type;

  Pmap(C& client, F f, PmapOptions options = {})
      : client_(&client), f_(std::move(f)), options_(std::move(options)), state_(std::make_shared<State>()) {}

  template <class... Args>
  auto operator()(const Args&... args) -> StatusOr<tree::Rebind<std::invoke_result_t<F&, const tree::Rebind<Args, Tensor>&...>, Literal>> {
    using Out = std::invoke_result_t<F&, const tree::Rebind<Args, Tensor>&...>;
    std::vector<const Literal*> leaves;
    bool other = false;
    (tree::for_each_leaf(args,
                         [&](const auto& leaf) {
                           if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Literal>)
                             leaves.push_back(&leaf);
                           else
                             other = true;
                         }),
     ...);
    if (other) return invalid_argument_error(str_cat(options_.name, ": arguments are trees of Literals"));
    PJRT_LITE_ASSIGN_OR_RETURN(const std::int64_t n, mapped_size(leaves));
    std::vector<Shape> slices;
    for (const Literal* l : leaves) slices.push_back(slice_shape(l->shape()));
    PJRT_LITE_ASSIGN_OR_RETURN(Entry * e, lookup_or_compile<Out>(slices, n, args...));
    // Slice k of every leaf goes to device k, copied once, straight from the leaf's bytes.
    auto devices = e->exe.addressable_devices();
    std::vector<Literal> dense;
    for (const Literal* l : leaves) dense.push_back(l->shape().has_default_layout() ? Literal() : l->with_default_layout());
    std::vector<std::vector<BufferType>> buffers(static_cast<std::size_t>(n));
    std::vector<std::vector<BufferType*>> lists(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      auto& mine = buffers[static_cast<std::size_t>(k)];
      auto* memory = devices[static_cast<std::size_t>(k)]->memory_spaces()[0];
      for (std::size_t i = 0; i < leaves.size(); ++i) {
        const Literal& whole = leaves[i]->shape().has_default_layout() ? *leaves[i] : dense[i];
        const auto bytes = static_cast<std::size_t>(slices[i].byte_size());
        PJRT_LITE_ASSIGN_OR_RETURN(
            BufferType b, client_->buffer_from_host_buffer(whole.bytes().subspan(static_cast<std::size_t>(k) * bytes, bytes),
                                                           slices[i].dtype(), slices[i].dims(), std::nullopt,
                                                           HostBufferSemantics::kImmutableOnlyDuringCall,
                                                           UniqueFunction<void()>(), memory));
        mine.push_back(std::move(b));
      }
      for (BufferType& b : mine) lists[static_cast<std::size_t>(k)].push_back(&b);
    }
    StatusOr<std::vector<std::vector<BufferType>>> outputs = e->exe.execute(lists);
    if (!outputs.ok()) return outputs.status().with_context(options_.name);
    // Output j of every device, stacked along a new leading axis.
    std::vector<Literal> stacked;
    const std::size_t num_outputs = outputs->front().size();
    for (std::size_t j = 0; j < num_outputs; ++j) {
      const Shape& part = (*outputs)[0][j].on_device_shape();
      std::vector<std::int64_t> dims{n};
      dims.insert(dims.end(), part.dims().begin(), part.dims().end());
      Literal whole(Shape(part.dtype(), dims));
      const auto bytes = static_cast<std::size_t>(part.byte_size());
      for (std::int64_t k = 0; k < n; ++k) {
        if (bytes == 0) continue;
        Status copied = (*outputs)[static_cast<std::size_t>(k)][j]
                            .copy_raw_to_host(whole.bytes().data() + static_cast<std::size_t>(k) * bytes, 0,
                                              static_cast<std::int64_t>(bytes))
                            .await();
        if (!copied.ok()) return copied.with_context(options_.name);
      }
      stacked.push_back(std::move(whole));
    }
    std::size_t next = 0;
    return tree::unflatten<Literal>(*static_cast<const Out*>(e->skeleton.get()), stacked, next);
  }

  /// The program one device runs for arguments like these (their leading axis mapped), as
  /// jax.pmap(f).lower(...).
  template <class... Args>
  StatusOr<Graph> lower(const Args&... args) {
    using Out = std::invoke_result_t<F&, const tree::Rebind<Args, Tensor>&...>;
    std::vector<const Literal*> leaves;
    (tree::for_each_leaf(args, [&](const Literal& leaf) { leaves.push_back(&leaf); }), ...);
    PJRT_LITE_ASSIGN_OR_RETURN(const std::int64_t n, mapped_size(leaves));
    std::vector<Shape> slices;
    for (const Literal* l : leaves) slices.push_back(slice_shape(l->shape()));
    PJRT_LITE_ASSIGN_OR_RETURN(auto traced, (trace<Out>(slices, n, args...)));
    return std::move(traced.graph);
  }

  /// How many times f has been traced.
  [[nodiscard]] std::size_t trace_count() const {
    std::lock_guard lock(state_->mu);
    return state_->traces;
  }

 private:
  struct Entry {
    std::vector<Shape> signature;
    std::int64_t n = 0;
    Executable exe;
    std::shared_ptr<void> skeleton;
  };
  struct State {
    std::mutex mu;
    std::vector<std::unique_ptr<Entry>> entries;
    std::size_t traces = 0;
  };

  StatusOr<std::int64_t> mapped_size(const std::vector<const Literal*>& leaves) const {
    if (leaves.empty()) return invalid_argument_error(str_cat(options_.name, ": no argument to map over"));
    const Shape& first = leaves[0]->shape();
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      const Shape& s = leaves[i]->shape();
      if (s.rank() == 0)
        return invalid_argument_error(str_cat(options_.name, ": argument leaf ", i, " is a scalar; every leaf is mapped over its leading axis"));
      if (s.dim(0) != first.dim(0))
        return invalid_argument_error(str_cat(options_.name, ": argument leaf ", i, " has leading dimension ", s.dim(0),
                                              " but leaf 0 has ", first.dim(0)));
    }
    const std::int64_t n = first.dim(0);
    if (n < 1 || n > static_cast<std::int64_t>(client_->devices().size()))
      return invalid_argument_error(str_cat(options_.name, ": a leading axis of ", n, " needs as many devices; the client has ",
                                            client_->devices().size()));
    return n;
  }
  static Shape slice_shape(const Shape& s) {
    return Shape(s.dtype(), std::vector<std::int64_t>(s.dims().begin() + 1, s.dims().end()));
  }

  template <class Out, class... Args>
  StatusOr<detail::Traced<Out>> trace(const std::vector<Shape>& slices, std::int64_t n, const Args&... args) {
    auto& stack = detail::active_traces();
    std::vector<Trace*> saved;
    saved.swap(stack);
    detail::mapped_axes().push_back({options_.axis_name, n});
    auto traced = detail::trace_function(options_.name.c_str(), f_, slices,
                                         tree::map<Tensor>(args, [](const auto&) { return Tensor(); })...);
    detail::mapped_axes().pop_back();
    stack.swap(saved);
    if (traced.ok() && !traced->captures.empty())
      return invalid_argument_error(str_cat(options_.name, ": the function uses a Tensor of another trace; pass it as an argument instead"));
    return traced;
  }

  template <class Out, class... Args>
  StatusOr<Entry*> lookup_or_compile(const std::vector<Shape>& slices, std::int64_t n, const Args&... args) {
    std::lock_guard lock(state_->mu);
    for (const auto& e : state_->entries)
      if (e->n == n && e->signature == slices) return e.get();
    ++state_->traces;
    PJRT_LITE_ASSIGN_OR_RETURN(auto traced, (trace<Out>(slices, n, args...)));
    StatusOr<Executable> exe = client_->compile(traced.graph, detail::grid_options<C>(n));
    if (!exe.ok()) return exe.status().with_context(options_.name);
    state_->entries.push_back(std::make_unique<Entry>(
        Entry{slices, n, std::move(exe).value(), std::make_shared<Out>(std::move(traced.skeleton))}));
    return state_->entries.back().get();
  }

  C* client_;
  F f_;
  PmapOptions options_;
  std::shared_ptr<State> state_;  // shared by copies
};

/// f mapped over its arguments' leading axis across the client's devices (jax.pmap). `client`:
/// the client or the std::unique_ptr that owns it.
template <class P, class F>
Pmap<detail::ClientOf<P>, F> pmap(P& client, F f, PmapOptions options = {}) {
  return Pmap<detail::ClientOf<P>, F>(detail::client_of(client), std::move(f), std::move(options));
}

struct ShardMapOptions {
  /// The name of the traced graph.
  std::string name = "shard_map";
  /// The name the collectives inside f use for the device axis.
  std::string axis_name = "i";
  /// How many devices (shards); 0: every device of the client.
  std::int64_t devices = 0;
  /// Per argument leaf, in order: the dimension split evenly across the devices, or -1 for a
  /// leaf every device gets whole (jax's P(...) and P()). Leaves past the list split
  /// dimension 0.
  std::vector<std::int64_t> in_specs = {};
  /// Per result leaf: the dimension the devices' results are joined along, or -1 for a
  /// result that is the same on every device (device 0's is returned). Leaves past the list
  /// join along dimension 0.
  std::vector<std::int64_t> out_specs = {};
};

namespace detail {

/// `l` split along `dim` into `n` equal parts, stacked along a new leading axis; `dim` -1:
/// `n` copies of `l`.
inline StatusOr<Literal> split_leaf(const Literal& l, std::int64_t dim, std::int64_t n, std::size_t leaf) {
  const Literal dense = l.with_default_layout();
  const Shape& s = dense.shape();
  std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end());
  if (dim >= s.rank() || dim < -1)
    return invalid_argument_error(str_cat("shard_map: in_specs[", leaf, "] = ", dim, " is no dimension of ", s));
  if (dim >= 0 && dims[static_cast<std::size_t>(dim)] % n != 0)
    return invalid_argument_error(str_cat("shard_map: argument leaf ", leaf, " (", s, ") has dimension ", dim, " of ",
                                          dims[static_cast<std::size_t>(dim)], ", which ", n, " devices cannot split evenly"));
  const auto element = static_cast<std::int64_t>(byte_size(s.dtype()));
  std::int64_t outer = 1, inner = element, part = 1;
  if (dim >= 0) {
    for (std::int64_t d = 0; d < dim; ++d) outer *= dims[static_cast<std::size_t>(d)];
    for (std::int64_t d = dim + 1; d < s.rank(); ++d) inner *= dims[static_cast<std::size_t>(d)];
    part = dims[static_cast<std::size_t>(dim)] / n;
    dims[static_cast<std::size_t>(dim)] = part;
  }
  dims.insert(dims.begin(), n);
  Literal out(Shape(s.dtype(), dims));
  const std::byte* src = dense.bytes().data();
  std::byte* dst = out.bytes().data();
  const auto whole = static_cast<std::size_t>(dense.size_bytes());
  for (std::int64_t k = 0; k < n; ++k) {
    if (dim < 0) {
      if (whole > 0) std::memcpy(dst + static_cast<std::size_t>(k) * whole, src, whole);
      continue;
    }
    const std::int64_t run = part * inner, full = dims[static_cast<std::size_t>(dim) + 1] * n * inner;
    for (std::int64_t o = 0; o < outer; ++o)
      if (run > 0) std::memcpy(dst + (k * outer + o) * run, src + o * full + k * run, static_cast<std::size_t>(run));
  }
  return out;
}

/// The devices' results `stacked` ([n, ...]) joined along `dim`; `dim` -1: device 0's.
inline StatusOr<Literal> join_leaf(const Literal& stacked, std::int64_t dim, std::size_t leaf) {
  const Shape& s = stacked.shape();
  const std::int64_t n = s.dim(0);
  std::vector<std::int64_t> dims(s.dims().begin() + 1, s.dims().end());
  const auto rank = static_cast<std::int64_t>(dims.size());
  if (dim >= rank || dim < -1)
    return invalid_argument_error(str_cat("shard_map: out_specs[", leaf, "] = ", dim, " is no dimension of a rank-",
                                          rank, " result"));
  const auto element = static_cast<std::int64_t>(byte_size(s.dtype()));
  if (dim < 0) {
    const Shape one(s.dtype(), dims);
    return Literal::from_bytes(one, stacked.bytes().first(static_cast<std::size_t>(one.byte_size())));
  }
  std::int64_t outer = 1, inner = element;
  for (std::int64_t d = 0; d < dim; ++d) outer *= dims[static_cast<std::size_t>(d)];
  for (std::int64_t d = dim + 1; d < rank; ++d) inner *= dims[static_cast<std::size_t>(d)];
  const std::int64_t part = dims[static_cast<std::size_t>(dim)] * inner;
  dims[static_cast<std::size_t>(dim)] *= n;
  Literal out(Shape(s.dtype(), dims));
  const std::byte* src = stacked.bytes().data();
  std::byte* dst = out.bytes().data();
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t o = 0; o < outer; ++o)
      if (part > 0) std::memcpy(dst + (o * n + k) * part, src + (k * outer + o) * part, static_cast<std::size_t>(part));
  return out;
}

}  // namespace detail

/// f on shards of global arrays, one shard per device, all at once (jax's shard_map over one
/// mesh axis): each argument leaf is split along the dimension its in_spec names (or given
/// whole), f runs on every device's shards with the collectives of the axis at hand, and
/// each result leaf is joined along its out_spec's dimension (or taken from device 0).
/// Built on pmap: the same compiled program per signature. Thread-safe.
template <CompilingClient C, class F>
class ShardMap {
 public:
  ShardMap(C& client, F f, ShardMapOptions options = {})
      : client_(&client), options_(std::move(options)),
        pmap_(client, std::move(f), PmapOptions{options_.name, options_.axis_name}) {}

  template <class... Args>
  auto operator()(const Args&... args) -> StatusOr<tree::Rebind<std::invoke_result_t<F&, const tree::Rebind<Args, Tensor>&...>, Literal>> {
    const std::int64_t n = options_.devices > 0 ? options_.devices : static_cast<std::int64_t>(client_->devices().size());
    Status status;
    std::size_t leaf = 0;
    auto split = [&](const auto& l) -> Literal {
      using L = std::remove_cvref_t<decltype(l)>;
      const std::size_t k = leaf++;
      if constexpr (!std::is_same_v<L, Literal>) {
        if (status.ok()) status = invalid_argument_error(str_cat(options_.name, ": arguments are trees of Literals"));
        return Literal();
      } else {
        const std::int64_t dim = k < options_.in_specs.size() ? options_.in_specs[k] : 0;
        StatusOr<Literal> s = detail::split_leaf(l, dim, n, k);
        if (!s.ok()) {
          if (status.ok()) status = s.status();
          return Literal();
        }
        return std::move(s).value();
      }
    };
    // Braced initialization runs left to right, so the leaves are numbered in order.
    std::tuple<tree::Rebind<Args, Literal>...> stacked{tree::map<Literal>(args, split)...};
    PJRT_LITE_RETURN_IF_ERROR(status);
    auto results = std::apply([&](const auto&... a) { return pmap_(a...); }, stacked);
    if (!results.ok()) return results.status();
    leaf = 0;
    auto joined = tree::map<Literal>(*results, [&](const Literal& l) -> Literal {
      const std::size_t k = leaf++;
      const std::int64_t dim = k < options_.out_specs.size() ? options_.out_specs[k] : 0;
      StatusOr<Literal> j = detail::join_leaf(l, dim, k);
      if (!j.ok()) {
        if (status.ok()) status = j.status();
        return Literal();
      }
      return std::move(j).value();
    });
    PJRT_LITE_RETURN_IF_ERROR(status);
    return joined;
  }

 private:
  C* client_;
  ShardMapOptions options_;
  Pmap<C, F> pmap_;
};

/// f on shards of its arguments across the client's devices (jax's shard_map). `client`: the
/// client or the std::unique_ptr that owns it.
template <class P, class F>
ShardMap<detail::ClientOf<P>, F> shard_map(P& client, F f, ShardMapOptions options = {}) {
  return ShardMap<detail::ClientOf<P>, F>(detail::client_of(client), std::move(f),
                                          std::move(options));
}

}  // namespace pjrt_lite
