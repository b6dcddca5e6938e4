#pragma once
// jit: a traced C++ function compiled and cached per input signature, as jax.jit.
//
//   auto client = cpu::Client<>::create().value();
//   auto f = jit(client, [](Tensor x, Tensor y) { return tanh(matmul(x, y)) * 2.0; });
//   StatusOr<Literal> z = f(x_literal, y_literal);   // traces, compiles, runs
//   z = f(x_literal, y_literal);                     // same shapes: straight to execute
//
// Arguments are trees (frontend/tree.hpp) of Literals, C++ scalars (rank-0 arrays of their
// own type: a double is f64) or the client's Buffers; the function receives the same trees of
// Tensors and returns a tree of Tensors, which comes back as the same tree of Literals. A
// call whose leaf shapes and dtypes match an earlier one reuses its executable; any other
// signature traces and compiles a new entry. `execute(buffers, outputs)` is the path for
// loops that must not allocate: buffers in, buffers out, no transfer.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/frontend/tensor.hpp"
#include "pjrt_lite/frontend/transforms.hpp"
#include "pjrt_lite/frontend/tree.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite {

/// A Client that compiles Graphs into LoadedExecutables: what jit needs.
template <class C>
concept CompilingClient = Client<C> && requires(C& c, const Graph& g) {
  {c.compile(g)};
  requires LoadedExecutable<typename decltype(c.compile(g))::value_type>;
};

namespace detail {
template <class B>
concept BufferLeaf = Buffer<std::remove_cvref_t<B>>;
}  // namespace detail

struct JitOptions {
  /// The name of the traced graph (its `name()`, shown in dumps and traces).
  std::string name = "jit";
};

/// A jitted function. Thread-safe: calls may come from several threads; a signature seen
/// before is found without a lock.
template <CompilingClient C, class F>
class Jit {
 public:
  using Executable =
      typename decltype(std::declval<C&>().compile(std::declval<const Graph&>()))::value_type;
  using BufferType = typename C::buffer_type;

  Jit(C& client, F f, JitOptions options = {})
      : client_(&client), f_(std::move(f)), options_(std::move(options)) {}
  Jit(Jit&& other) noexcept
      : client_(other.client_),
        f_(std::move(other.f_)),
        options_(std::move(other.options_)),
        head_(other.head_.load()),
        traces_(other.traces_.load()) {
    other.head_ = nullptr;
  }
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;
  ~Jit() {
    for (Entry* e = head_.load(); e != nullptr;) {
      Entry* next = e->next;
      delete e;
      e = next;
    }
  }

  /// Runs f on the arguments, compiling on the first call with their signature; the result
  /// is f's tree with Literals for Tensors.
  template <class... Args>
  auto operator()(const Args&... args) {
    using Out = std::invoke_result_t<F&, const tree::Rebind<Args, Tensor>&...>;
    using Result = tree::Rebind<Out, Literal>;
    return call<Result>(args...);
  }

  /// The traced graph for these arguments, without compiling (as jax.jit(f).lower(x)).
  template <class... Args>
  StatusOr<Graph> lower(const Args&... args) {
    PJRT_LITE_ASSIGN_OR_RETURN(auto traced, trace(args...));
    return std::move(traced.graph);
  }

  /// The executable for these arguments' signature, compiled if needed.
  template <class... Args>
  StatusOr<const Executable*> executable(const Args&... args) {
    PJRT_LITE_ASSIGN_OR_RETURN(Entry * e, lookup_or_compile(args...));
    return &e->exe;
  }

  /// Buffers in, buffers out: the signature is looked up from the buffers' shapes and the
  /// executable runs on them as they are. `outputs` is cleared and refilled; reusing it
  /// keeps a steady-state loop free of heap allocation.
  Status execute(std::span<BufferType* const> args, std::vector<BufferType>& outputs,
                 const ExecuteOptions& execute_options = {}) {
    Entry* e = find_buffers(args);
    if (e == nullptr)
      return failed_precondition_error(
          "jit execute: no executable for these buffers' shapes yet; call the function once "
          "with arguments of this signature (or executable()) first");
    return run(e, args, outputs, execute_options);
  }

  /// How many signatures have been traced and compiled.
  [[nodiscard]] std::size_t cache_size() const {
    std::size_t n = 0;
    for (Entry* e = head_.load(std::memory_order_acquire); e != nullptr; e = e->next) ++n;
    return n;
  }
  /// How many times f has been traced.
  [[nodiscard]] std::size_t trace_count() const { return traces_.load(); }

 private:
  struct Entry {
    std::vector<Shape> signature;
    Executable exe;
    std::shared_ptr<void> skeleton;  // the result tree, with dead Tensors, type-erased
    Entry* next = nullptr;
  };

  template <class Leaf>
  static Shape leaf_shape(const Leaf& leaf) {
    using L = std::remove_cvref_t<Leaf>;
    if constexpr (std::is_same_v<L, Literal>)
      return leaf.shape();
    else if constexpr (std::is_arithmetic_v<L>)
      return Shape(dtype_of<L>, {});
    else if constexpr (detail::BufferLeaf<L>)
      return leaf.on_device_shape();
    else
      static_assert(sizeof(L) == 0, "jit: arguments are trees of Literals, scalars or Buffers");
  }
  template <class Leaf>
  static bool leaf_matches(const Leaf& leaf, const Shape& s) {
    using L = std::remove_cvref_t<Leaf>;
    if constexpr (std::is_arithmetic_v<L>) {
      return s.dtype() == dtype_of<L> && s.rank() == 0;
    } else {
      const auto& shape = [&]() -> decltype(auto) {
        if constexpr (std::is_same_v<L, Literal>)
          return leaf.shape();
        else
          return leaf.on_device_shape();
      }();
      return shape.dtype() == s.dtype() && std::ranges::equal(shape.dims(), s.dims());
    }
  }

  template <class... Args>
  Entry* find(const Args&... args) const {
    for (Entry* e = head_.load(std::memory_order_acquire); e != nullptr; e = e->next) {
      std::size_t k = 0;
      bool match = true;
      auto check = [&](const auto& leaf) {
        match = match && k < e->signature.size() && leaf_matches(leaf, e->signature[k]);
        ++k;
      };
      (tree::for_each_leaf(args, check), ...);
      if (match && k == e->signature.size()) return e;
    }
    return nullptr;
  }
  Entry* find_buffers(std::span<BufferType* const> args) const {
    for (Entry* e = head_.load(std::memory_order_acquire); e != nullptr; e = e->next) {
      if (args.size() != e->signature.size()) continue;
      bool match = true;
      for (std::size_t k = 0; k < args.size() && match; ++k)
        match = args[k] != nullptr && leaf_matches(*args[k], e->signature[k]);
      if (match) return e;
    }
    return nullptr;
  }

  template <class... Args>
  StatusOr<detail::Traced<std::invoke_result_t<F&, const tree::Rebind<Args, Tensor>&...>>> trace(
      const Args&... args) {
    std::vector<Shape> shapes;
    (tree::for_each_leaf(args, [&](const auto& leaf) { shapes.push_back(leaf_shape(leaf)); }), ...);
    ++traces_;
    // A root trace: jit is where tracing starts, whatever this thread is tracing already.
    auto& stack = detail::active_traces();
    std::vector<Trace*> saved;
    saved.swap(stack);
    auto traced =
        detail::trace_function(options_.name.c_str(), f_, shapes,
                               tree::map<Tensor>(args, [](const auto&) { return Tensor(); })...);
    stack.swap(saved);
    if (traced.ok() && !traced->captures.empty())
      return invalid_argument_error(str_cat(options_.name,
                                            ": the function uses a Tensor of another trace; pass "
                                            "it as an argument instead"));
    return traced;
  }

  template <class... Args>
  StatusOr<Entry*> lookup_or_compile(const Args&... args) {
    if (Entry* e = find(args...)) return e;
    std::lock_guard lock(compile_mutex_);
    if (Entry* e = find(args...)) return e;
    PJRT_LITE_ASSIGN_OR_RETURN(auto traced, trace(args...));
    auto exe = client_->compile(traced.graph);
    if (!exe.ok()) return exe.status().with_context(options_.name);
    using Out = decltype(traced.skeleton);
    auto* e = new Entry{traced.graph.parameter_shapes(), std::move(*exe),
                        std::make_shared<Out>(std::move(traced.skeleton)), head_.load()};
    head_.store(e, std::memory_order_release);
    return e;
  }

  Status run(Entry* e, std::span<BufferType* const> args, std::vector<BufferType>& outputs,
             const ExecuteOptions& execute_options) {
    auto devices = e->exe.addressable_devices();
    if constexpr (requires {
                    e->exe.execute_sharded(args, devices[0], execute_options, outputs);
                  }) {
      return e->exe.execute_sharded(args, devices[0], execute_options, outputs);
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(outputs,
                                 e->exe.execute_sharded(args, devices[0], execute_options));
      return ok_status();
    }
  }

  template <class Result, class... Args>
  StatusOr<Result> call(const Args&... args) {
    PJRT_LITE_ASSIGN_OR_RETURN(Entry * e, lookup_or_compile(args...));
    // Host leaves become buffers on the executable's device; buffer leaves go as they are.
    auto devices = e->exe.addressable_devices();
    auto memory_or = devices[0]->default_memory_space();
    PJRT_LITE_RETURN_IF_ERROR(memory_or.status());
    auto* memory = *memory_or;
    std::vector<BufferType> staged;
    staged.reserve(e->signature.size());
    std::vector<BufferType*> arg_ptrs;
    Status status;
    auto stage = [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if (!status.ok()) return;
      if constexpr (detail::BufferLeaf<L>) {
        arg_ptrs.push_back(const_cast<L*>(&leaf));
      } else {
        const void* data;
        Shape shape = leaf_shape(leaf);
        if constexpr (std::is_same_v<L, Literal>)
          data = leaf.untyped_data();
        else
          data = &leaf;
        std::span<const std::byte> bytes(static_cast<const std::byte*>(data),
                                         static_cast<std::size_t>(shape.byte_size()));
        Literal converted;
        if constexpr (std::is_same_v<L, bool>) {  // bool's object representation is not pred's
          converted = Literal::scalar(leaf);
          bytes = converted.bytes();
        }
        auto buffer = client_->buffer_from_host_buffer(
            bytes, shape.dtype(), shape.dims(), std::nullopt,
            HostBufferSemantics::kImmutableOnlyDuringCall, UniqueFunction<void()>(), memory);
        if (!buffer.ok()) {
          status = buffer.status().with_context(
              str_cat(options_.name, ": argument leaf ", arg_ptrs.size()));
          return;
        }
        staged.push_back(std::move(*buffer));
        arg_ptrs.push_back(&staged.back());
      }
    };
    (tree::for_each_leaf(args, stage), ...);
    PJRT_LITE_RETURN_IF_ERROR(status);
    std::vector<BufferType> outputs;
    PJRT_LITE_RETURN_IF_ERROR(run(e, arg_ptrs, outputs, {}));
    std::vector<Literal> literals;
    for (BufferType& b : outputs) {
      StatusOr<Literal> l = b.to_literal().await();
      if (!l.ok()) return l.status().with_context(options_.name);
      literals.push_back(std::move(*l));
    }
    using Out = std::invoke_result_t<F&, const tree::Rebind<Args, Tensor>&...>;
    std::size_t next = 0;
    return tree::unflatten<Literal>(*static_cast<const Out*>(e->skeleton.get()), literals, next);
  }

  C* client_;
  F f_;
  JitOptions options_;
  std::atomic<Entry*> head_{nullptr};  // newest first; entries are immutable once published
  std::atomic<std::size_t> traces_{0};
  std::mutex compile_mutex_;
};

/// f compiled for `client` on first use per signature.
template <CompilingClient C, class F>
Jit<C, F> jit(C& client, F f, JitOptions options = {}) {
  return Jit<C, F>(client, std::move(f), std::move(options));
}
template <CompilingClient C, class F>
Jit<C, F> jit(const std::unique_ptr<C>& client, F f, JitOptions options = {}) {
  return Jit<C, F>(*client, std::move(f), std::move(options));
}

}  // namespace pjrt_lite
