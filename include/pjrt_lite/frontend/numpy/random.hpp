#pragma once
// IWYU pragma: private, include "pjrt_lite/frontend/tensor.hpp"
// jax.random's threefry keys on tensors: prng_key (PRNGKey), split, fold_in, bits, uniform
// and normal. A key is a u32[2] tensor, as JAX's raw keys are. The bits follow JAX with
// jax_threefry_partitionable on (its default since JAX 0.5): element i of a block of random
// bits is the XOR of the two words threefry2x32(key, (hi(i), lo(i))) gives for its 64-bit
// row-major index i; split(key, n) row j is those two words for i = j; uniform puts 23 (f32)
// or 52 (f64) of the bits in the mantissa of a number in [1, 2) and subtracts 1; normal is
// sqrt(2) erfinv of a uniform draw in (-1, 1). Threefry2x32 is Random123's, 20 rounds, built
// from u32 adds, rotations and XORs, so it runs on any backend.

#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

#include "pjrt_lite/frontend/numpy/creation.hpp"
#include "pjrt_lite/frontend/numpy/elementwise.hpp"
#include "pjrt_lite/frontend/numpy/shapes.hpp"
#include "pjrt_lite/frontend/tracer.hpp"

namespace pjrt_lite::inline v0_1 {
namespace random {

using np::Tensor;

/// jax.random.PRNGKey(seed): the u32[2] key [seed >> 32, seed & 0xFFFFFFFF] (JAX with 64-bit
/// seeds; a seed in [0, 2^32) gives [0, seed] either way), in the innermost active trace.
inline Tensor prng_key(std::uint64_t seed) {
  const std::vector<std::uint32_t> words = {static_cast<std::uint32_t>(seed >> 32),
                                            static_cast<std::uint32_t>(seed & 0xFFFFFFFFu)};
  return np::array(Literal::from_span<std::uint32_t>(words, {2}).value());
}

namespace detail {

// The two words of a key, as rank-0 u32 tensors; records an error for anything but u32[2].
inline std::optional<std::pair<Tensor, Tensor>> key_words(Trace*& t, const char* op, Tensor& key) {
  t = np::detail::resolve(op, {&key});
  if (t == nullptr) return std::nullopt;
  if (key.dtype() != DType::kU32 || key.dims() != std::vector<std::int64_t>{2}) {
    t->fail(invalid_argument_error(str_cat(op, ": a key is a u32[2] tensor (from prng_key or split), got ",
                                           key.shape())));
    return std::nullopt;
  }
  return std::pair{np::reshape(np::slice(key, {0}, {1}), {}),
                   np::reshape(np::slice(key, {1}, {2}), {})};
}

/// Threefry2x32 (Random123, 20 rounds) of the u32 counter words (x0, x1) under the key
/// words (k0, k1), element-wise; the keys are rank 0.
inline std::pair<Tensor, Tensor> threefry2x32(Trace* t, const Tensor& k0, const Tensor& k1,
                                              Tensor x0, Tensor x1) {
  GraphBuilder& b = t->builder();
  const std::vector<std::int64_t> dims = x0.dims();
  auto u32 = [&](std::uint32_t v) {
    return b.broadcast_in_dim(b.constant(Literal::scalar<std::uint32_t>(v)), dims, {});
  };
  auto spread = [&](const Tensor& k) { return b.broadcast_in_dim(k.value(), dims, {}); };
  const Value ks[3] = {spread(k0), spread(k1),
                       b.xor_(b.xor_(spread(k0), spread(k1)), u32(0x1BD11BDAu))};
  static constexpr std::uint32_t kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  Value a = b.add(x0.value(), ks[0]), c = b.add(x1.value(), ks[1]);
  for (std::uint32_t group = 0; group < 5; ++group) {
    for (std::uint32_t r : kRotations[group % 2]) {
      a = b.add(a, c);
      c = b.or_(b.shift_left(c, u32(r)), b.shift_right_logical(c, u32(32 - r)));
      c = b.xor_(c, a);
    }
    a = b.add(a, ks[(group + 1) % 3]);
    c = b.add(b.add(c, ks[(group + 2) % 3]), u32(group + 1));
  }
  return {t->wrap(a), t->wrap(c)};
}

// The two threefry words for each element of an array of `dims`, counted row-major with a
// 64-bit index split into its high and low words (JAX's iota_2x32_shape).
inline std::pair<Tensor, Tensor> block(Trace* t, const Tensor& k0, const Tensor& k1,
                                       const std::vector<std::int64_t>& dims) {
  GraphBuilder& b = t->builder();
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  Value index = b.reshape(b.iota(Shape(DType::kU64, {n}), 0), dims);
  Value hi = b.convert(b.shift_right_logical(
                           index, b.broadcast_in_dim(b.constant(Literal::scalar<std::uint64_t>(32)),
                                                     dims, {})),
                       DType::kU32);
  Value lo = b.convert(index, DType::kU32);  // conversion keeps the low 32 bits
  return threefry2x32(t, k0, k1, t->wrap(hi), t->wrap(lo));
}

}  // namespace detail

/// jax.random.split(key, num): `num` new keys, as a u32[num, 2] tensor (row j is a key).
inline Tensor split(Tensor key, std::int64_t num = 2) {
  Trace* t = nullptr;
  auto k = detail::key_words(t, "split", key);
  if (!k) return Tensor();
  if (num < 0)
    return np::detail::fail(
        t, invalid_argument_error(str_cat("split: num must not be negative, got ", num)));
  auto [w0, w1] = detail::block(t, k->first, k->second, {num});
  return np::stack({w0, w1}, 1);
}

/// jax.random.fold_in(key, data): a new key mixing `data` into `key`
/// (threefry2x32(key, PRNGKey(data))).
inline Tensor fold_in(Tensor key, std::uint32_t data) {
  Trace* t = nullptr;
  auto k = detail::key_words(t, "fold_in", key);
  if (!k) return Tensor();
  const Tensor x0 = np::full({1}, 0u, DType::kU32), x1 = np::full({1}, data, DType::kU32);
  auto [w0, w1] = detail::threefry2x32(t, k->first, k->second, x0, x1);
  return np::concatenate({w0, w1}, 0);
}

/// jax.random.bits: u32 random bits of `dims` (the XOR of the two threefry words per element).
inline Tensor bits(Tensor key, std::vector<std::int64_t> dims) {
  Trace* t = nullptr;
  auto k = detail::key_words(t, "bits", key);
  if (!k) return Tensor();
  auto [w0, w1] = detail::block(t, k->first, k->second, dims);
  return w0 ^ w1;
}

/// jax.random.uniform: numbers in [minval, maxval) of `dims` and the floating `dtype` (f32
/// or f64).
inline Tensor uniform(Tensor key, std::vector<std::int64_t> dims, DType dtype = DType::kF32,
                      double minval = 0.0, double maxval = 1.0) {
  Trace* t = nullptr;
  auto k = detail::key_words(t, "uniform", key);
  if (!k) return Tensor();
  if (dtype != DType::kF32 && dtype != DType::kF64)
    return np::detail::fail(t, invalid_argument_error(str_cat(
                                   "uniform: dtype must be f32 or f64, got ", dtype_name(dtype))));
  auto [w0, w1] = detail::block(t, k->first, k->second, dims);
  GraphBuilder& b = t->builder();
  auto bcast = [&](Literal l) { return b.broadcast_in_dim(b.constant(std::move(l)), dims, {}); };
  Value one_bits;
  Value mantissa;
  if (dtype == DType::kF32) {
    // 32 bits, the top 23 as the mantissa of 1.0f's exponent.
    mantissa = b.shift_right_logical((w0 ^ w1).value(), bcast(Literal::scalar<std::uint32_t>(9)));
    one_bits = bcast(Literal::scalar<std::uint32_t>(0x3F800000u));
  } else {
    // 64 bits (the first word high), the top 52 as the mantissa of 1.0's exponent.
    Value hi = b.convert(w0.value(), DType::kU64), lo = b.convert(w1.value(), DType::kU64);
    Value all = b.or_(b.shift_left(hi, bcast(Literal::scalar<std::uint64_t>(32))), lo);
    mantissa = b.shift_right_logical(all, bcast(Literal::scalar<std::uint64_t>(12)));
    one_bits = bcast(Literal::scalar<std::uint64_t>(0x3FF0000000000000ull));
  }
  const Tensor floats = t->wrap(b.bitcast_convert(b.or_(mantissa, one_bits), dtype)) - 1.0;
  // In dtype throughout, as JAX converts minval and maxval before the arithmetic.
  const Tensor lo = np::full({}, minval, dtype), hi = np::full({}, maxval, dtype);
  return np::maximum(lo, floats * (hi - lo) + lo);
}

/// jax.random.normal: standard normal numbers of `dims` and `dtype` (f32 or f64), as
/// sqrt(2) erfinv(u) with u uniform in (-1, 1).
inline Tensor normal(Tensor key, std::vector<std::int64_t> dims, DType dtype = DType::kF32) {
  Trace* t = nullptr;
  auto k = detail::key_words(t, "normal", key);
  if (!k) return Tensor();
  if (dtype != DType::kF32 && dtype != DType::kF64)
    return np::detail::fail(t, invalid_argument_error(str_cat(
                                   "normal: dtype must be f32 or f64, got ", dtype_name(dtype))));
  // The lowest value above -1 in dtype, as JAX's np.nextafter(-1, 0).
  const double above_minus_one = dtype == DType::kF32
                                     ? static_cast<double>(std::nextafter(-1.0f, 0.0f))
                                     : std::nextafter(-1.0, 0.0);
  const Tensor u = uniform(key, dims, dtype, above_minus_one, 1.0);
  if (!u.valid()) return Tensor();
  return std::numbers::sqrt2 * np::detail::unary(OpCode::kErfInv, u, true);
}

}  // namespace random

}  // namespace pjrt_lite
