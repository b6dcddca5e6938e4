#pragma once
// Distance between floating-point values in units in the last place, for tolerances.

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "pjrt_lite/core/dtype.hpp"

namespace pjrt_lite::inline v0_1 {

/// How many representable values of T lie between finite `a` and `b` (0 when equal, and
/// between -0 and +0). T is f16, bf16, f32 or f64.
template <class T>
  requires is_float_v<T>
std::int64_t ulp_distance(T a, T b) {
  using I = std::conditional_t<sizeof(T) == 8, std::int64_t, std::conditional_t<sizeof(T) == 4, std::int32_t, std::int16_t>>;
  // Sign-magnitude bits to a number line: negative values count down from zero.
  auto key = [](T x) {
    const I bits = std::bit_cast<I>(x);
    return bits < 0 ? static_cast<std::int64_t>(std::numeric_limits<I>::min()) - bits : static_cast<std::int64_t>(bits);
  };
  const std::int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

}  // namespace pjrt_lite
