#pragma once
// The reference interpreter's rng_bit_generator: every element from the layout of
// core/random_bits.hpp, one at a time. DEFAULT is PHILOX, as on XLA's CPU and GPU backends.

#include <cstdint>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/random_bits.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::reference {

/// The generator an algorithm names: DEFAULT is PHILOX.
constexpr random_bits::Generator rng_generator(RngAlgorithm a) {
  return a == RngAlgorithm::kThreeFry ? random_bits::Generator::kThreeFry
                                      : random_bits::Generator::kPhilox;
}

namespace detail {

/// {the new state, the output's random bits}.
inline std::vector<Literal> eval_rng_bit_generator(const Literal& state_in,
                                                   const RngBitGeneratorAttrs& a) {
  const Literal state = state_in.with_default_layout();
  const std::size_t bytes = byte_size(a.output.dtype());
  const random_bits::Plan plan(rng_generator(a.algorithm), state.data<std::uint64_t>(),
                               a.output.dims(), static_cast<int>(8 * bytes));
  Literal out(a.output);
  std::byte* data = out.bytes().data();
  random_bits::Plan::Cache cache;
  for (std::int64_t i = 0; i < plan.count(); ++i) {
    random_bits::store_element(data + static_cast<std::int64_t>(bytes) * i, plan.element(i, cache), bytes);
  }
  Literal next(state.shape());
  plan.next_state(next.data<std::uint64_t>());
  std::vector<Literal> results;
  results.push_back(std::move(next));
  results.push_back(std::move(out));
  return results;
}

}  // namespace detail
}  // namespace pjrt_lite::reference
