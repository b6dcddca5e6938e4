#pragma once
// UniqueFunction<R(Args...)>: a move-only callable wrapper. Unlike std::function it accepts
// move-only callables (a lambda owning a Promise or a unique_ptr), and it stores callables of
// up to kInlineBytes without touching the heap, so hot paths can schedule work without
// allocating. The one callback type of the library: executor tasks, on_done of host
// buffers, and the ready-callbacks of futures (future.hpp). For R = void, whatever the
// callable returns is discarded, as with std::function.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace pjrt_lite::inline v0_1 {

template <class Signature>
class UniqueFunction;

template <class R, class... Args>
class UniqueFunction<R(Args...)> {
 public:
  /// Callables up to this size (and alignment of at most a max_align_t) are stored inline.
  static constexpr std::size_t kInlineBytes = 48;
  /// Whether a callable of type Fn is stored without touching the heap.
  template <class Fn>
  static constexpr bool stores_inline() {
    return fits_inline<std::remove_cvref_t<Fn>>();
  }

  UniqueFunction() noexcept = default;
  UniqueFunction(std::nullptr_t) noexcept {}  // NOLINT: implicit like std::function

  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, UniqueFunction> &&
             std::is_invocable_r_v<R, std::remove_cvref_t<F>&, Args...>)
  UniqueFunction(F&& f) {  // NOLINT: implicit like std::function
    using Fn = std::remove_cvref_t<F>;
    if constexpr (fits_inline<Fn>()) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      ops_ = &kInlineOps<Fn>;
    } else {
      *reinterpret_cast<Fn**>(storage_) = new Fn(std::forward<F>(f));
      ops_ = &kHeapOps<Fn>;
    }
  }

  UniqueFunction(UniqueFunction&& other) noexcept : ops_(other.ops_) {
    if (ops_) {
      ops_->move(other.storage_, storage_);
      other.ops_ = nullptr;
    }
  }
  UniqueFunction& operator=(UniqueFunction&& other) noexcept {
    if (this != &other) {
      reset();
      if (other.ops_) {
        other.ops_->move(other.storage_, storage_);
        ops_ = std::exchange(other.ops_, nullptr);
      }
    }
    return *this;
  }
  UniqueFunction(const UniqueFunction&) = delete;
  UniqueFunction& operator=(const UniqueFunction&) = delete;
  ~UniqueFunction() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  /// Calls the stored callable, which must exist.
  R operator()(Args... args) { return ops_->call(storage_, std::forward<Args>(args)...); }

  void reset() noexcept {
    if (ops_) std::exchange(ops_, nullptr)->destroy(storage_);
  }

 private:
  struct Ops {
    R (*call)(void*, Args&&...);
    void (*move)(void* from, void* to) noexcept;  // move-constructs into `to`, destroys `from`
    void (*destroy)(void*) noexcept;
  };

  template <class Fn>
  static constexpr bool fits_inline() {
    return sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<Fn>;
  }

  template <class Fn>
  static R call(Fn& fn, Args&&... a) {
    if constexpr (std::is_void_v<R>)
      static_cast<void>(fn(std::forward<Args>(a)...));
    else
      return fn(std::forward<Args>(a)...);
  }

  template <class Fn>
  static constexpr Ops kInlineOps = {
      [](void* s, Args&&... a) -> R { return call(*static_cast<Fn*>(s), std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept {
        ::new (to) Fn(std::move(*static_cast<Fn*>(from)));
        static_cast<Fn*>(from)->~Fn();
      },
      [](void* s) noexcept { static_cast<Fn*>(s)->~Fn(); }};

  template <class Fn>
  static constexpr Ops kHeapOps = {
      [](void* s, Args&&... a) -> R { return call(**static_cast<Fn**>(s), std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
      [](void* s) noexcept { delete *static_cast<Fn**>(s); }};

  alignas(std::max_align_t) std::byte storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace pjrt_lite
