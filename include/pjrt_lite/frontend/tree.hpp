#pragma once
// Trees of leaves, as JAX's pytrees: the argument and result types that jit, grad and vmap
// take apart into a flat list of arrays and put back together.
//
// A tree is a leaf (see IsLeaf: a Tensor, a Literal, a Buffer, an arithmetic scalar) or a
// std::tuple, std::pair, std::array, std::vector, or an aggregate class template over one
// type, such as
//
//   template <class T> struct Layer { T weight, bias; };   // Layer<Tensor>, Layer<Literal>
//
// of trees. `Rebind<T, L>` is the same tree with leaves of type L: Rebind<Layer<Literal>,
// Tensor> is Layer<Tensor>. Aggregates of up to 16 fields are supported.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace pjrt_lite::inline v0_1::tree {

/// Leaf types: arithmetic scalars, buffers (types with a `buffer_concept` tag) and the types
/// that specialize this to true (Tensor, Literal).
template <class T>
inline constexpr bool kIsLeaf = std::is_arithmetic_v<T> || requires {
  typename T::buffer_concept;
};

template <class T>
concept IsLeaf = kIsLeaf<std::remove_cvref_t<T>>;

namespace detail {

struct AnyField {
  template <class T>
  operator T() const;  // never defined: only used in unevaluated brace-initialization
};

template <class T, std::size_t... I>
constexpr bool brace_initializable(std::index_sequence<I...>) {
  return requires { T{(static_cast<void>(I), AnyField{})...}; };
}

inline constexpr std::size_t kMaxFields = 16;

template <class T, std::size_t N = kMaxFields>
constexpr std::size_t field_count() {
  if constexpr (N == 0)
    return 0;
  else if constexpr (brace_initializable<T>(std::make_index_sequence<N>{}))
    return N;
  else
    return field_count<T, N - 1>();
}

// The fields of an aggregate as a tuple of references.
template <class T>
constexpr auto fields(T& t) {
  constexpr std::size_t n = field_count<std::remove_const_t<T>>();
  static_assert(n > 0 && n <= kMaxFields, "tree: aggregates of 1 to 16 fields are supported");
  // clang-format off
  if constexpr (n == 1) { auto& [a] = t; return std::tie(a); }
  else if constexpr (n == 2) { auto& [a, b] = t; return std::tie(a, b); }
  else if constexpr (n == 3) { auto& [a, b, c] = t; return std::tie(a, b, c); }
  else if constexpr (n == 4) { auto& [a, b, c, d] = t; return std::tie(a, b, c, d); }
  else if constexpr (n == 5) { auto& [a, b, c, d, e] = t; return std::tie(a, b, c, d, e); }
  else if constexpr (n == 6) { auto& [a, b, c, d, e, f] = t; return std::tie(a, b, c, d, e, f); }
  else if constexpr (n == 7) { auto& [a, b, c, d, e, f, g] = t; return std::tie(a, b, c, d, e, f, g); }
  else if constexpr (n == 8) { auto& [a, b, c, d, e, f, g, h] = t; return std::tie(a, b, c, d, e, f, g, h); }
  else if constexpr (n == 9) { auto& [a, b, c, d, e, f, g, h, i] = t; return std::tie(a, b, c, d, e, f, g, h, i); }
  else if constexpr (n == 10) { auto& [a, b, c, d, e, f, g, h, i, j] = t; return std::tie(a, b, c, d, e, f, g, h, i, j); }
  else if constexpr (n == 11) { auto& [a, b, c, d, e, f, g, h, i, j, k] = t; return std::tie(a, b, c, d, e, f, g, h, i, j, k); }
  else if constexpr (n == 12) { auto& [a, b, c, d, e, f, g, h, i, j, k, l] = t; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l); }
  else if constexpr (n == 13) { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m] = t; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m); }
  else if constexpr (n == 14) { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o] = t; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m, o); }
  else if constexpr (n == 15) { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p] = t; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p); }
  else { auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q] = t; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q); }
  // clang-format on
}

template <class T, class L>
struct RebindImpl {};  // not a tree: Rebind<T, L> is ill-formed

template <class T, class L>
requires IsLeaf<T>
struct RebindImpl<T, L> {
  using type = L;
};
template <class... Ts, class L>
struct RebindImpl<std::tuple<Ts...>, L> {
  using type = std::tuple<typename RebindImpl<Ts, L>::type...>;
};
template <class A, class B, class L>
struct RebindImpl<std::pair<A, B>, L> {
  using type = std::pair<typename RebindImpl<A, L>::type, typename RebindImpl<B, L>::type>;
};
template <class T, std::size_t N, class L>
struct RebindImpl<std::array<T, N>, L> {
  using type = std::array<typename RebindImpl<T, L>::type, N>;
};
template <class T, class L>
struct RebindImpl<std::vector<T>, L> {
  using type = std::vector<typename RebindImpl<T, L>::type>;
};
template <template <class> class Tmpl, class T, class L>
requires(std::is_aggregate_v<Tmpl<T>> && !IsLeaf<Tmpl<T>>) struct RebindImpl<Tmpl<T>, L> {
  using type = Tmpl<typename RebindImpl<T, L>::type>;
};

template <class T>
struct IsStdArray : std::false_type {};
template <class T, std::size_t N>
struct IsStdArray<std::array<T, N>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
struct IsTupleLike : std::false_type {};
template <class... Ts>
struct IsTupleLike<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct IsTupleLike<std::pair<A, B>> : std::true_type {};

}  // namespace detail

/// The tree T with every leaf replaced by L.
template <class T, class L>
using Rebind = typename detail::RebindImpl<std::remove_cvref_t<T>, L>::type;

/// True when T is a tree: a leaf or a supported container of trees.
template <class T>
concept IsTree = requires {
  typename Rebind<T, int>;
};

/// Calls fn(leaf) on each leaf of `t`, depth first, left to right.
template <class T, class Fn>
void for_each_leaf(T&& t, Fn&& fn) {
  using U = std::remove_cvref_t<T>;
  if constexpr (IsLeaf<U>) {
    fn(t);
  } else if constexpr (detail::IsTupleLike<U>::value) {
    std::apply([&](auto&&... e) { (for_each_leaf(e, fn), ...); }, t);
  } else if constexpr (detail::IsStdArray<U>::value || detail::IsVector<U>::value) {
    for (auto&& e : t) for_each_leaf(e, fn);
  } else {
    static_assert(IsTree<U>, "tree: not a tree type (see pjrt_lite/frontend/tree.hpp)");
    std::apply([&](auto&&... e) { (for_each_leaf(e, fn), ...); }, detail::fields(t));
  }
}

/// The tree shaped like `t` whose leaves are fn(leaf of t), of type L.
template <class L, class T, class Fn>
Rebind<T, L> map(const T& t, Fn&& fn) {
  using U = std::remove_cvref_t<T>;
  if constexpr (IsLeaf<U>) {
    return fn(t);
  } else if constexpr (detail::IsTupleLike<U>::value) {
    return std::apply([&](const auto&... e) { return Rebind<T, L>{map<L>(e, fn)...}; }, t);
  } else if constexpr (detail::IsStdArray<U>::value) {
    Rebind<T, L> out{};
    for (std::size_t i = 0; i < t.size(); ++i) out[i] = map<L>(t[i], fn);
    return out;
  } else if constexpr (detail::IsVector<U>::value) {
    Rebind<T, L> out;
    out.reserve(t.size());
    for (const auto& e : t) out.push_back(map<L>(e, fn));
    return out;
  } else {
    return std::apply([&](const auto&... e) { return Rebind<T, L>{map<L>(e, fn)...}; },
                      detail::fields(t));
  }
}

/// The tree shaped like `t` with leaves taken in order from `leaves` (of type L), starting at
/// `next`, which is advanced past them.
template <class L, class T>
Rebind<T, L> unflatten(const T& t, const std::vector<L>& leaves, std::size_t& next) {
  return map<L>(t, [&](const auto&) { return leaves[next++]; });
}

}  // namespace pjrt_lite::tree
