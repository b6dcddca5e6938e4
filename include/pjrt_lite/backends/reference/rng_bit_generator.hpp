#pragma once
// The reference interpreter's rng_bit_generator: THREE_FRY (and DEFAULT, which is THREE_FRY
// here), one output element at a time straight from the layout in core/threefry.hpp.

#include <cstdint>
#include <cstring>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/threefry.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::reference {

/// What the runtime (this interpreter and the CPU backend) cannot generate: PHILOX, whose state layout and output order are those
/// of one implementation this library does not reproduce, and elements of other than 32 or
/// 64 bits, for which THREE_FRY's output order is not fixed either. OK otherwise.
inline Status rng_bit_generator_supported(const RngBitGeneratorAttrs& a) {
  if (a.algorithm == RngAlgorithm::kPhilox)
    return unimplemented_error(
        "rng_bit_generator: the PHILOX algorithm is not implemented (THREE_FRY and DEFAULT are)");
  const std::size_t bits = byte_size(a.output.dtype()) * 8;
  if (bits != 32 && bits != 64)
    return unimplemented_error(str_cat("rng_bit_generator: output element type ",
                                       dtype_name(a.output.dtype()),
                                       " (THREE_FRY makes 32- and 64-bit elements)"));
  return ok_status();
}

namespace detail {

/// {the new state [key, counter + blocks used], the output's random bits}.
inline StatusOr<std::vector<Literal>> eval_rng_bit_generator(const Literal& state_in,
                                                            const RngBitGeneratorAttrs& a) {
  PJRT_LITE_RETURN_IF_ERROR(rng_bit_generator_supported(a));
  const Literal state = state_in.with_default_layout();
  const std::uint64_t key = state.data<std::uint64_t>()[0];
  const std::uint64_t counter = state.data<std::uint64_t>()[1];
  const int bits = static_cast<int>(byte_size(a.output.dtype()) * 8);
  Literal out(a.output);
  std::byte* bytes = out.bytes().data();
  const std::int64_t n = out.element_count();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    if (bits == 64) {
      const auto [x0, x1] = threefry::block(key, counter + u);
      const std::uint64_t v = x0 | std::uint64_t{x1} << 32;
      std::memcpy(bytes + 8 * u, &v, 8);
    } else {
      const std::uint32_t v = threefry::block(key, counter + u / 2)[u % 2];
      std::memcpy(bytes + 4 * u, &v, 4);
    }
  }
  Literal next(state.shape());
  next.data<std::uint64_t>()[0] = key;
  next.data<std::uint64_t>()[1] = counter + threefry::blocks_for(n, bits);
  std::vector<Literal> results;
  results.push_back(std::move(next));
  results.push_back(std::move(out));
  return results;
}

}  // namespace detail
}  // namespace pjrt_lite::reference
