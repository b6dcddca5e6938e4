#pragma once
// Jacobians and the Hessian of traced functions, as jax.jacfwd, jax.jacrev and jax.hessian,
// over trees of Tensors and several argument numbers.
//
//   auto j = jacfwd(f)(x);               // f: Tensor -> Tensor: shape out.dims + in.dims
//   auto [jx, jy] = jacrev<0, 1>(g)(x, y);  // one Jacobian per argument, in a tuple
//   auto h = hessian(loss)(w);           // jacfwd(jacrev(loss)): shape w.dims + w.dims
//
// The result has the tree of f's result, each leaf of which is the tree of the argument
// (or the std::tuple of the arguments ArgNums) with the Jacobian of that result leaf with
// respect to each argument leaf: shape result_leaf.dims + argument_leaf.dims, as JAX nests
// them. jacfwd pushes one tangent per input element through jvp (batched with vmap), jacrev
// pulls one cotangent per output element through vjp (batched with vmap).

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/tensor.hpp"
#include "pjrt_lite/frontend/transforms.hpp"
#include "pjrt_lite/frontend/tree.hpp"

namespace pjrt_lite::inline v0_1 {

namespace detail {

// The type one result leaf's Jacobians have: argument ArgNums' tree, or a tuple of them.
template <class ArgTuple, std::size_t... ArgNums>
struct JacobianLeaf {
  using type = std::tuple<std::tuple_element_t<ArgNums, ArgTuple>...>;
};
template <class ArgTuple, std::size_t A>
struct JacobianLeaf<ArgTuple, A> {
  using type = std::tuple_element_t<A, ArgTuple>;
};

// Per leaf of the arguments: whether it is in an argument ArgNums.
template <std::size_t... ArgNums, class... Args>
std::vector<bool> leaves_of_argnums(const Args&... args) {
  constexpr std::array<std::size_t, sizeof...(ArgNums)> nums{ArgNums...};
  std::vector<bool> wrt;
  std::size_t position = 0;
  auto mark = [&](const auto& arg) {
    bool on = false;
    for (std::size_t a : nums) on = on || a == position;
    tree::for_each_leaf(arg, [&](const auto&) { wrt.push_back(on); });
    ++position;
  };
  (mark(args), ...);
  return wrt;
}

inline std::vector<std::int64_t> joined(std::vector<std::int64_t> a, const std::vector<std::int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The rows of the identity of size x.size(), each shaped like x: [n] + x.dims.
inline Tensor basis_like(const Tensor& x) {
  return np::reshape(np::eye(x.size(), x.dtype()), joined({x.size()}, x.dims()));
}

// The Jacobian of a result leaf of dims `out` with respect to an argument leaf of dims `in`,
// from the rows vmap stacked: forward mode's are [in.size] + out, reverse mode's
// [out.size] + in.
inline Tensor jacobian_block(const Tensor& stacked, const std::vector<std::int64_t>& in,
                             const std::vector<std::int64_t>& out, bool forward) {
  if (!forward) return np::reshape(stacked, joined(out, in));
  Tensor j = np::reshape(stacked, joined(in, out));
  const auto in_rank = static_cast<std::int64_t>(in.size());
  const auto out_rank = static_cast<std::int64_t>(out.size());
  std::vector<std::int64_t> perm;
  for (std::int64_t d = 0; d < out_rank; ++d) perm.push_back(in_rank + d);
  for (std::int64_t d = 0; d < in_rank; ++d) perm.push_back(d);
  return np::transpose(j, perm);
}

template <bool Forward, std::size_t... ArgNums, class F, class... Args>
auto jacobian(F& f, const Args&... args) {
  static_assert(sizeof...(ArgNums) > 0);
  static_assert(detail_sorted<ArgNums...>(), "jacfwd/jacrev: list the argument numbers in increasing order");
  static_assert(((ArgNums < sizeof...(Args)) && ...),
                "jacfwd/jacrev: an argument number is not less than the number of arguments");
  using Out = std::invoke_result_t<F&, const Args&...>;
  using ArgTuple = std::tuple<Args...>;
  using Leaf = typename JacobianLeaf<ArgTuple, ArgNums...>::type;
  using Result = tree::Rebind<Out, Leaf>;
  const char* name = Forward ? "jacfwd" : "jacrev";
  auto fail = [&](Status s) {
    report(s);
    return Result{};
  };
  StatusOr<std::vector<Shape>> shapes = leaf_shapes(name, args...);
  if (!shapes.ok()) return fail(shapes.status());
  const std::vector<bool> wrt = leaves_of_argnums<ArgNums...>(args...);
  for (std::size_t k = 0; k < wrt.size(); ++k)
    if (wrt[k] && !is_floating((*shapes)[k].dtype()))
      return fail(invalid_argument_error(str_cat(name, ": argument leaf ", k, " has type ", (*shapes)[k],
                                                 "; Jacobians need floating-point inputs (astype "
                                                 "them, or leave them out of argnums)")));
  const ArgTuple primals{args...};
  const std::vector<Tensor> x = tensor_leaves(args...);
  // blocks[o][j]: the Jacobian of result leaf o with respect to argument leaf j (wrt ones).
  std::vector<std::vector<Tensor>> blocks;
  Out skeleton{};
  if constexpr (Forward) {
    for (std::size_t j = 0; j < x.size(); ++j) {
      if (!wrt[j]) continue;
      auto column = [&](const Tensor& e) {
        std::size_t idx = 0;
        auto leaf = [&](const Tensor& t) { return idx++ == j ? e : np::zeros_like(t); };
        ArgTuple tangents = std::apply(
            [&](const auto&... a) { return ArgTuple{tree::map<Tensor>(a, leaf)...}; }, primals);
        return jvp(f, primals, tangents).second;
      };
      Out columns = vmap(column)(basis_like(x[j]));
      const std::vector<Tensor> c = tensor_leaves(columns);
      blocks.resize(c.size());
      for (std::size_t o = 0; o < c.size(); ++o) {
        if (!c[o].valid()) return Result{};
        std::vector<std::int64_t> dims = c[o].dims();
        dims.erase(dims.begin());
        blocks[o].push_back(jacobian_block(c[o], x[j].dims(), dims, true));
      }
      skeleton = std::move(columns);
    }
  } else {
    auto forward = vjp(f, args...);  // not a structured binding: lambdas below capture it
    const std::vector<Tensor> y = tensor_leaves(forward.first);
    for (std::size_t o = 0; o < y.size(); ++o) {
      if (!y[o].valid()) return Result{};
      if (!is_floating(y[o].dtype()))
        return fail(invalid_argument_error(str_cat(name, ": result leaf ", o, " has type ", y[o].shape(),
                                                   "; jacrev needs floating-point results")));
      auto row = [&](const Tensor& e) {
        std::size_t idx = 0;
        return forward.second(tree::map<Tensor>(
            forward.first, [&](const Tensor& t) { return idx++ == o ? e : np::zeros_like(t); }));
      };
      const std::vector<Tensor> r = tensor_leaves(vmap(row)(basis_like(y[o])));
      blocks.emplace_back();
      for (std::size_t j = 0; j < x.size(); ++j) {
        if (!wrt[j]) continue;
        if (!r[j].valid()) return Result{};
        blocks[o].push_back(jacobian_block(r[j], x[j].dims(), y[o].dims(), false));
      }
    }
    skeleton = forward.first;
  }
  std::size_t o = 0;
  return tree::map<Leaf>(skeleton, [&](const auto&) {
    const std::vector<Tensor>& b = blocks[o++];
    std::size_t next = 0;
    if constexpr (sizeof...(ArgNums) == 1)
      return tree::unflatten<Tensor>(std::get<detail_first<ArgNums...>>(primals), b, next);
    else
      return Leaf{tree::unflatten<Tensor>(std::get<ArgNums>(primals), b, next)...};
  });
}

template <bool Forward, std::size_t... ArgNums, class F>
auto jacobian_transform(F f) {
  return [f = std::move(f)](const auto&... args) mutable {
    if constexpr (sizeof...(ArgNums) == 0)
      return jacobian<Forward, 0>(f, args...);
    else
      return jacobian<Forward, ArgNums...>(f, args...);
  };
}

}  // namespace detail

/// The Jacobian by forward mode with respect to the arguments ArgNums (default: the first),
/// as jax.jacfwd.
template <std::size_t... ArgNums, class F>
auto jacfwd(F f) {
  return detail::jacobian_transform<true, ArgNums...>(std::move(f));
}

/// The Jacobian by reverse mode with respect to the arguments ArgNums (default: the first),
/// as jax.jacrev.
template <std::size_t... ArgNums, class F>
auto jacrev(F f) {
  return detail::jacobian_transform<false, ArgNums...>(std::move(f));
}

/// The Hessian, jacfwd(jacrev(f)) with respect to the arguments ArgNums (default: the
/// first), as jax.hessian: for a scalar function of one Tensor, shape x.dims + x.dims.
template <std::size_t... ArgNums, class F>
auto hessian(F f) {
  return jacfwd<ArgNums...>(jacrev<ArgNums...>(std::move(f)));
}

}  // namespace pjrt_lite
