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
// signature traces and compiles a new entry. The entries are bounded (JitOptions::
// cache_capacity, least recently used dropped first). `execute(buffers, outputs)` is the path
// for loops that must not allocate: buffers in, buffers out, no transfer.
//
// As jax.jit:
// - static_argnums: `jit<1>(client, f)` passes argument 1 to f as it is (any copyable type
//   with ==, such as an int, a string or an enum), not as a Tensor; its value is part of the
//   signature, so each new value traces and compiles again.
// - donate_argnums: JitOptions::donate_argnums lists arguments whose buffers the call may
//   reuse for its results; a donated Buffer argument is deleted by the call.
// - Called on Tensors (inside grad, vmap, jvp or another jit), a jitted function inlines f
//   into the caller's trace, so the transformations see through it: grad(jit(f)) is
//   grad(f). Literal and scalar arguments next to the Tensors become constants.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/frontend/tensor.hpp"
#include "pjrt_lite/frontend/transforms.hpp"
#include "pjrt_lite/frontend/tree.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {
template <class B>
concept BufferLeaf = PjRtBuffer<std::remove_cvref_t<B>>;
}  // namespace detail

struct JitOptions {
  /// The name of the traced graph (its `name()`, shown in dumps and traces).
  std::string name = "jit";
  /// How many signatures stay compiled; a new one past that replaces the least recently used
  /// (which is traced and compiled again if it comes back). 0 is taken as 1, and more than
  /// kMaxCacheCapacity as that. Each call scans the entries, so thousands would slow every
  /// call down.
  std::size_t cache_capacity = 64;
  static constexpr std::size_t kMaxCacheCapacity = std::size_t{1} << 16;
  /// The arguments (by position) whose buffers each call donates to the executable (see
  /// ExecuteOptions::donated_arguments): every leaf of them. A Buffer passed there is deleted
  /// by the call; host values are copied to a buffer first, which is donated. A position out
  /// of range, listed twice or also static is an INVALID_ARGUMENT of the call.
  std::vector<int> donate_argnums = {};
};

namespace detail {
// True when every leaf of T is a Tensor (and T has no other leaves): an argument of a jitted
// function called inside a trace.
template <class T>
inline constexpr bool kTensorTree =
    !std::is_arithmetic_v<std::remove_cvref_t<T>> &&
    std::is_same_v<tree::Rebind<T, Tensor>, std::remove_cvref_t<T>>;

// An argument of a jitted function called inside a trace, as Tensors: Literal and scalar
// leaves become constants of the innermost trace.
template <class A>
auto as_traced(const A& a) {
  return tree::map<Tensor>(a, [](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (std::is_same_v<L, Tensor>)
      return leaf;
    else if constexpr (std::is_same_v<L, Literal>)
      return np::array(leaf);
    else if constexpr (std::is_arithmetic_v<L>)
      return np::array(Literal::scalar(leaf));
    else
      static_assert(sizeof(L) == 0, "jit: a Buffer cannot be an argument next to Tensors (inside a trace)");
  });
}
}  // namespace detail

/// A jitted function. Thread-safe: calls may come from several threads; a signature seen
/// before is found without a lock and without allocating. StaticArgNums are the arguments
/// passed to f as they are (see static_argnums above).
template <CompilingClient C, class F, std::size_t... StaticArgNums>
class Jit {
  template <std::size_t I>
  static constexpr bool kIsStatic = ((I == StaticArgNums) || ...);
  // An argument as the traced function sees it: static ones as they are, the others as trees
  // of Tensors; and as the signature sees it: static ones as empty trees.
  template <bool Static, class A>
  struct TracedArgImpl {
    using type = tree::Rebind<A, Tensor>;
  };
  template <class A>
  struct TracedArgImpl<true, A> {
    using type = A;
  };
  template <std::size_t I, class A>
  using TracedArg = typename TracedArgImpl<kIsStatic<I>, A>::type;
  template <std::size_t I, class A>
  static decltype(auto) dynamic_part(const A& a) {
    if constexpr (kIsStatic<I>)
      return std::tuple<>{};
    else
      return (a);
  }
  template <class... Args, std::size_t... I>
  static auto out_type(std::index_sequence<I...>)
      -> std::invoke_result_t<F&, const TracedArg<I, Args>&...>;
  template <class... Args>
  using OutOf = decltype(out_type<Args...>(std::index_sequence_for<Args...>{}));

  // The static arguments' values (a std::tuple), the rest of the signature.
  template <class... Args>
  static auto statics_of(const Args&... args) {
    return statics_impl(std::index_sequence_for<Args...>{}, std::forward_as_tuple(args...));
  }
  template <std::size_t... I, class Tuple>
  static auto statics_impl(std::index_sequence<I...>, const Tuple& all) {
    return std::tuple_cat([&]() {
      if constexpr (kIsStatic<I>)
        return std::tuple<std::decay_t<std::tuple_element_t<I, Tuple>>>{std::get<I>(all)};
      else
        return std::tuple<>{};
    }()...);
  }

 public:
  using Executable = typename C::executable_type;
  using BufferType = typename C::buffer_type;

  Jit(C& client, F f, JitOptions options = {})
      : client_(&client),
        f_(std::move(f)),
        options_(std::move(options)),
        cache_(std::make_shared<Cache>(std::clamp<std::size_t>(options_.cache_capacity, 1, JitOptions::kMaxCacheCapacity))) {}
  /// Not thread-safe: nothing may call either function meanwhile. A moved-from Jit has no
  /// cache: its calls return FAILED_PRECONDITION.
  Jit(Jit&& other) noexcept = default;
  /// A copy shares the cache (and its statistics) with the original, as copies of a
  /// jax.jit function do; so transformations, which take functions by value, can take a Jit.
  /// Copying is thread-safe; calls on copies are as on one Jit.
  Jit(const Jit&) = default;
  Jit& operator=(const Jit&) = delete;
  /// No call may be running.
  ~Jit() = default;

  /// Runs f on the arguments, compiling on the first call with their signature; the result
  /// is f's tree with Literals for Tensors.
  /// Called with Tensors (some argument a tree of Tensors only), f runs inline in the
  /// caller's trace and the result is f's. Otherwise the result is f's tree with Literals
  /// for Tensors, as a StatusOr.
  template <class... Args>
  auto operator()(const Args&... args) {
    static_assert((((StaticArgNums < sizeof...(Args))) && ...),
                  "jit: a static argument number is not less than the number of arguments");
    if constexpr (any_traced<Args...>(std::index_sequence_for<Args...>{})) {
      return inline_call(std::index_sequence_for<Args...>{}, args...);
    } else {
      using Result = tree::Rebind<OutOf<Args...>, Literal>;
      return call<Result>(statics_of(args...), std::index_sequence_for<Args...>{}, args...);
    }
  }

  /// The traced graph for these arguments, without compiling (as jax.jit(f).lower(x)).
  template <class... Args>
  StatusOr<Graph> lower(const Args&... args) {
    PJRT_LITE_ASSIGN_OR_RETURN(auto traced, trace(std::index_sequence_for<Args...>{}, args...));
    return std::move(traced.graph);
  }

  /// The executable for these arguments' signature, compiled if needed. The pointer stays
  /// valid while the signature stays cached: until a call with a new signature evicts it
  /// (from this thread or any other), clear(), or the end of the Jit.
  template <class... Args>
  StatusOr<const Executable*> executable(const Args&... args) {
    PJRT_LITE_ASSIGN_OR_RETURN(
        Pinned e, lookup_or_compile(statics_of(args...), std::index_sequence_for<Args...>{}, args...));
    return &e->exe;
  }

  /// Buffers in, buffers out: the signature is looked up from the buffers' shapes and the
  /// executable runs on them as they are. `outputs` is cleared and refilled; reusing it
  /// keeps a steady-state loop free of heap allocation.
  Status execute(std::span<BufferType* const> args, std::vector<BufferType>& outputs,
                 const ExecuteOptions& execute_options = {}) {
    Pinned e = find_buffers(args);
    if (!e)
      return failed_precondition_error(
          "jit execute: no executable for these buffers' shapes yet; call the function once "
          "with arguments of this signature (or executable()) first");
    return run(e.get(), args, outputs, execute_options);
  }

  /// How many signatures are compiled and cached now (at most the capacity).
  [[nodiscard]] std::size_t cache_size() const {
    if (!cache_) return 0;
    std::size_t n = 0;
    const std::size_t used = cache_->used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i) n += cache_->slots[i].load(std::memory_order_acquire) != nullptr;
    return n;
  }
  /// Hits and misses of the signature lookup (a miss traces and compiles), evictions, size
  /// and capacity. Thread-safe.
  [[nodiscard]] CacheStats cache_stats() const {
    CacheStats stats;
    if (!cache_) return stats;
    stats.hits = cache_->hits.load(std::memory_order_relaxed);
    stats.misses = cache_->misses.load(std::memory_order_relaxed);
    stats.evictions = cache_->evictions.load(std::memory_order_relaxed);
    stats.size = static_cast<std::int64_t>(cache_size());
    stats.capacity = static_cast<std::int64_t>(cache_->slots.size());
    return stats;
  }
  /// Drops every compiled signature (the statistics' counters stay); calls in flight finish
  /// with theirs. Pointers from executable() become invalid. Thread-safe.
  void clear() {
    if (!cache_) return;
    std::lock_guard lock(cache_->compile_mutex);
    Cache& c = *cache_;
    const std::size_t used = c.used.load(std::memory_order_relaxed);
    std::vector<Entry*> dropped;
    for (std::size_t i = 0; i < used; ++i)
      if (Entry* e = c.slots[i].exchange(nullptr, std::memory_order_acq_rel)) dropped.push_back(e);
    c.used.store(0, std::memory_order_release);
    c.wait_for_readers();
    for (Entry* e : dropped) unref(e);
  }
  /// How many times f has been traced.
  [[nodiscard]] std::size_t trace_count() const { return cache_ ? cache_->traces.load() : 0; }

 private:
  struct Entry {
    std::vector<Shape> signature;
    std::shared_ptr<const void> statics;  // the static arguments' values (a std::tuple)
    const void* statics_type = nullptr;   // which tuple: &kTypeTag<that tuple>
    Executable exe;
    std::shared_ptr<void> skeleton;  // the result tree, with dead Tensors, type-erased
    std::atomic<std::uint64_t> last_used{0};  // the cache's clock at the last hit
    std::atomic<std::int32_t> refs{1};        // the cache's slot, plus each call using it
  };

  static void unref(Entry* e) noexcept {
    if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete e;
  }

  /// A counted use of an entry: the entry outlives its eviction until the use ends.
  class Pinned {
   public:
    Pinned() = default;
    explicit Pinned(Entry* e) : e_(e) {}
    Pinned(Pinned&& other) noexcept : e_(std::exchange(other.e_, nullptr)) {}
    Pinned& operator=(Pinned&& other) noexcept {
      std::swap(e_, other.e_);
      return *this;
    }
    ~Pinned() {
      if (e_) unref(e_);
    }
    explicit operator bool() const { return e_ != nullptr; }
    Entry* get() const { return e_; }
    Entry* operator->() const { return e_; }

   private:
    Entry* e_ = nullptr;
  };

  // The signature cache: a fixed array of entry slots that readers scan without a lock.
  // Slots [0, used) are filled in order; once full, a new entry replaces the least recently
  // used one. An entry taken out of its slot is freed only after every reader that may have
  // seen it has left (two reader counters and an epoch that switches between them, as in
  // userspace RCU), and after every call that pinned it is done (the entry's count). Readers
  // never wait; the writer (under compile_mutex) waits for the readers in the scan.
  struct Cache {
    explicit Cache(std::size_t capacity) : slots(capacity) {}
    ~Cache() {
      for (auto& slot : slots)
        if (Entry* e = slot.load(std::memory_order_acquire)) unref(e);
    }

    /// Enters a scan; returns the counter to leave by.
    std::size_t enter() noexcept {
      for (;;) {
        const std::size_t p = epoch.load(std::memory_order_seq_cst) & 1;
        readers[p].fetch_add(1, std::memory_order_seq_cst);
        if ((epoch.load(std::memory_order_seq_cst) & 1) == p) return p;
        readers[p].fetch_sub(1, std::memory_order_release);
      }
    }
    void leave(std::size_t p) noexcept { readers[p].fetch_sub(1, std::memory_order_release); }
    /// Returns once every scan that began before the call has ended.
    void wait_for_readers() noexcept {
      for (int phase = 0; phase < 2; ++phase) {
        const std::size_t p = epoch.fetch_add(1, std::memory_order_seq_cst) & 1;
        // seq_cst: with the readers' seq_cst increment-then-read of the epoch, either this load
        // sees a reader that read the old epoch, or that reader sees the new one.
        for (int spins = 0; readers[p].load(std::memory_order_seq_cst) != 0;)
          if (++spins > 64) std::this_thread::yield();
      }
    }

    std::vector<std::atomic<Entry*>> slots;
    std::atomic<std::size_t> used{0};
    std::atomic<std::uint64_t> clock{0};  // ticks at every hit and insert; stamps Entry::last_used
    std::atomic<std::int64_t> hits{0};
    std::atomic<std::int64_t> misses{0};
    std::atomic<std::int64_t> evictions{0};
    std::atomic<std::size_t> epoch{0};
    std::atomic<std::uint32_t> readers[2] = {0, 0};
    std::atomic<std::size_t> traces{0};  // how many times f has been traced
    std::mutex compile_mutex;  // one trace and compile at a time; the cache's only writer
  };

  /// The cached entry that `match` accepts, pinned and marked used, or empty. Lock-free and
  /// allocation-free.
  template <class Match>
  Pinned find_if(Match&& match) const {
    if (!cache_) return Pinned();
    Cache& c = *cache_;
    const std::size_t p = c.enter();
    Entry* found = nullptr;
    const std::size_t used = c.used.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used && found == nullptr; ++i) {
      Entry* e = c.slots[i].load(std::memory_order_acquire);
      if (e != nullptr && match(*e)) {
        e->refs.fetch_add(1, std::memory_order_relaxed);
        e->last_used.store(c.clock.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        c.hits.fetch_add(1, std::memory_order_relaxed);
        found = e;
      }
    }
    c.leave(p);
    return Pinned(found);
  }

  /// Publishes `e` (with a count of 2: the slot's and the caller's), replacing the least
  /// recently used entry when the cache is full. Under compile_mutex.
  Pinned insert(Entry* e) {
    Cache& c = *cache_;
    // A new entry is the most recently used: entries inserted one after another never tie,
    // so the oldest of them goes first.
    e->last_used.store(c.clock.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    const std::size_t used = c.used.load(std::memory_order_relaxed);
    if (used < c.slots.size()) {
      c.slots[used].store(e, std::memory_order_release);
      c.used.store(used + 1, std::memory_order_release);
      return Pinned(e);
    }
    std::size_t victim = 0;
    for (std::size_t i = 1; i < used; ++i)
      if (c.slots[i].load(std::memory_order_relaxed)->last_used.load(std::memory_order_relaxed) <
          c.slots[victim].load(std::memory_order_relaxed)->last_used.load(std::memory_order_relaxed))
        victim = i;
    Entry* old = c.slots[victim].exchange(e, std::memory_order_acq_rel);
    c.evictions.fetch_add(1, std::memory_order_relaxed);
    c.wait_for_readers();
    unref(old);
    return Pinned(e);
  }

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

  template <class T>
  static constexpr char kTypeTag = 0;

  template <class S, std::size_t... I, class... Args>
  Pinned find(const S& statics, std::index_sequence<I...>, const Args&... all) const {
    return find_dynamic(statics, dynamic_part<I>(all)...);
  }
  template <class S, class... Args>
  Pinned find_dynamic(const S& statics, const Args&... args) const {
    return find_if([&](const Entry& e) {
      if constexpr (std::tuple_size_v<S> > 0) {
        if (e.statics_type != &kTypeTag<S> || !(*static_cast<const S*>(e.statics.get()) == statics))
          return false;
      }
      std::size_t k = 0;
      bool match = true;
      auto check = [&](const auto& leaf) {
        match = match && k < e.signature.size() && leaf_matches(leaf, e.signature[k]);
        ++k;
      };
      (tree::for_each_leaf(args, check), ...);
      return match && k == e.signature.size();
    });
  }
  Pinned find_buffers(std::span<BufferType* const> args) const {
    return find_if([&](const Entry& e) {
      if (args.size() != e.signature.size()) return false;
      for (std::size_t k = 0; k < args.size(); ++k)
        if (args[k] == nullptr || !leaf_matches(*args[k], e.signature[k])) return false;
      return true;
    });
  }

  // f with the static arguments of `all` bound, taking the others (static positions get
  // empty trees).
  template <std::size_t... I, class Tuple>
  auto bind_statics(std::index_sequence<I...>, const Tuple& all) {
    return [this, &all](const auto&... dyn) -> decltype(auto) {
      const auto d = std::forward_as_tuple(dyn...);
      return f_(pick<I>(all, d)...);
    };
  }
  template <std::size_t I, class A, class D>
  static const auto& pick(const A& all, const D& dyn) {
    if constexpr (kIsStatic<I>)
      return std::get<I>(all);
    else
      return std::get<I>(dyn);
  }

  template <std::size_t... I, class... Args>
  StatusOr<detail::Traced<OutOf<Args...>>> trace(std::index_sequence<I...> seq, const Args&... args) {
    std::vector<Shape> shapes;
    (tree::for_each_leaf(dynamic_part<I>(args), [&](const auto& leaf) { shapes.push_back(leaf_shape(leaf)); }), ...);
    ++cache_->traces;
    // A root trace: jit is where tracing starts, whatever this thread is tracing already.
    auto& stack = detail::active_traces();
    std::vector<Trace*> saved;
    saved.swap(stack);
    const auto all = std::forward_as_tuple(args...);
    auto bound = bind_statics(seq, all);
    auto traced = detail::trace_function(
        options_.name.c_str(), bound, shapes,
        tree::map<Tensor>(dynamic_part<I>(args), [](const auto&) { return Tensor(); })...);
    stack.swap(saved);
    if (traced.ok() && !traced->captures.empty())
      return invalid_argument_error(str_cat(options_.name,
                                            ": the function uses a Tensor of another trace; pass "
                                            "it as an argument instead"));
    return traced;
  }

  template <class S, class Seq, class... Args>
  StatusOr<Pinned> lookup_or_compile(const S& statics, Seq seq, const Args&... args) {
    if (!cache_) return failed_precondition_error("jit: the jitted function was moved from");
    if (Pinned e = find(statics, seq, args...)) return e;
    std::lock_guard lock(cache_->compile_mutex);
    // Another thread may have compiled it meanwhile: then this call is a hit after all.
    if (Pinned e = find(statics, seq, args...)) return e;
    cache_->misses.fetch_add(1, std::memory_order_relaxed);
    PJRT_LITE_ASSIGN_OR_RETURN(auto traced, trace(seq, args...));
    auto exe = client_->compile(traced.graph);
    if (!exe.ok()) return exe.status().with_context(options_.name);
    using Out = decltype(traced.skeleton);
    auto* e = new Entry{traced.graph.parameter_shapes(), std::make_shared<const S>(statics),
                        &kTypeTag<S>, std::move(*exe),
                        std::make_shared<Out>(std::move(traced.skeleton))};
    e->refs.store(2, std::memory_order_relaxed);
    return insert(e);
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

  template <std::size_t I, class A>
  static constexpr bool traced_arg() {
    if constexpr (kIsStatic<I>)
      return false;
    else
      return detail::kTensorTree<A>;
  }
  template <class... Args, std::size_t... I>
  static constexpr bool any_traced(std::index_sequence<I...>) {
    return (traced_arg<I, Args>() || ...);
  }

  template <std::size_t... I, class... Args>
  auto inline_call(std::index_sequence<I...>, const Args&... args) {
    const auto all = std::forward_as_tuple(args...);
    const auto traced = std::make_tuple([&]() -> decltype(auto) {
      if constexpr (kIsStatic<I>)
        return std::tuple<>{};
      else
        return detail::as_traced(std::get<I>(all));
    }()...);
    return f_(pick<I>(all, traced)...);
  }

  // The leaves of the donated arguments, as execute numbers them; an error for a bad list.
  template <std::size_t... I, class... Args>
  StatusOr<std::vector<int>> donated_leaves(std::index_sequence<I...>, const Args&... args) const {
    std::vector<int> out;
    const auto& donate = options_.donate_argnums;
    for (std::size_t k = 0; k < donate.size(); ++k) {
      const int a = donate[k];
      if (a < 0 || a >= static_cast<int>(sizeof...(Args)))
        return invalid_argument_error(str_cat(options_.name, ": donate_argnums[", k, "] = ", a,
                                              " is not an argument number (0..", sizeof...(Args) - 1, ")"));
      if (std::find(donate.begin(), donate.begin() + static_cast<std::ptrdiff_t>(k), a) !=
          donate.begin() + static_cast<std::ptrdiff_t>(k))
        return invalid_argument_error(str_cat(options_.name, ": argument ", a, " is donated twice"));
      if (((static_cast<int>(I) == a && kIsStatic<I>) || ...))
        return invalid_argument_error(str_cat(options_.name, ": argument ", a,
                                              " is static and cannot be donated (jax: donate_argnums "
                                              "and static_argnums must not overlap)"));
    }
    int leaf = 0;
    auto mark = [&](std::size_t position, const auto& arg) {
      const bool on = std::find(donate.begin(), donate.end(), static_cast<int>(position)) != donate.end();
      tree::for_each_leaf(arg, [&](const auto&) {
        if (on) out.push_back(leaf);
        ++leaf;
      });
    };
    (mark(I, dynamic_part<I>(args)), ...);
    return out;
  }

  template <class Result, class S, std::size_t... I, class... Args>
  StatusOr<Result> call(const S& statics, std::index_sequence<I...> seq, const Args&... all) {
    ExecuteOptions execute_options;
    if (!options_.donate_argnums.empty()) {
      PJRT_LITE_ASSIGN_OR_RETURN(execute_options.donated_arguments, donated_leaves(seq, all...));
    }
    PJRT_LITE_ASSIGN_OR_RETURN(Pinned pinned, lookup_or_compile(statics, seq, all...));
    return call_pinned<Result, OutOf<Args...>>(std::move(pinned), execute_options, dynamic_part<I>(all)...);
  }

  template <class Result, class Out, class... Args>
  StatusOr<Result> call_pinned(Pinned pinned, const ExecuteOptions& execute_options, const Args&... args) {
    Entry* e = pinned.get();
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
    PJRT_LITE_RETURN_IF_ERROR(run(e, arg_ptrs, outputs, execute_options));
    std::vector<Literal> literals;
    for (BufferType& b : outputs) {
      StatusOr<Literal> l = b.to_literal().await();
      if (!l.ok()) return l.status().with_context(options_.name);
      literals.push_back(std::move(*l));
    }
    std::size_t next = 0;
    return tree::unflatten<Literal>(*static_cast<const Out*>(e->skeleton.get()), literals, next);
  }

  C* client_;
  F f_;
  JitOptions options_;
  std::shared_ptr<Cache> cache_;  // shared by copies
};

/// f compiled for `client` (the client or the std::unique_ptr that owns it) on first use per
/// signature; the arguments StaticArgNums are static (jit<1>(client, f) as
/// jax.jit(f, static_argnums=1)).
template <std::size_t... StaticArgNums, class P, class F>
Jit<detail::ClientOf<P>, F, StaticArgNums...> jit(P& client, F f, JitOptions options = {}) {
  return Jit<detail::ClientOf<P>, F, StaticArgNums...>(detail::client_of(client), std::move(f),
                                                       std::move(options));
}

}  // namespace pjrt_lite
