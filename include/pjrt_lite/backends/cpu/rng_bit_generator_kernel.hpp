#pragma once
// rng_bit_generator on the CPU: THREE_FRY (and DEFAULT), Threefry-2x32 blocks of consecutive
// counter values (core/threefry.hpp), split across threads in whole blocks. The key and
// counter are read before anything is written, so the results may share memory with the
// state.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "pjrt_lite/backends/cpu/kernels.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/threefry.hpp"

namespace pjrt_lite::cpu::detail {

class RngBitGeneratorKernel final : public Kernel {
 public:
  /// Plans rng_bit_generator(state) -> {new state, output} for an output of 32- or 64-bit
  /// elements (the caller checks both).
  RngBitGeneratorKernel(const Shape& output, int max_workers, std::int32_t state_slot,
                        std::int32_t new_state_slot, std::int32_t output_slot)
      : n_(output.element_count()),
        bits_(static_cast<int>(byte_size(output.dtype()) * 8)),
        blocks_(static_cast<std::int64_t>(threefry::blocks_for(n_, bits_))),
        workers_(std::max(max_workers, 1)),
        state_slot_(state_slot),
        new_state_slot_(new_state_slot),
        output_slot_(output_slot) {
    flops = 20.0 * 4 * static_cast<double>(blocks_);  // an add, a rotate and a xor per round
    bytes_accessed = 32 + output.byte_size();
  }

  void run(const RunContext& ctx) const override {
    std::uint64_t state[2];
    std::memcpy(state, ctx.slots[state_slot_], sizeof state);
    const std::uint64_t key = state[0], counter = state[1];
    std::byte* out = ctx.slots[output_slot_];
    auto body = [&](std::int64_t begin, std::int64_t end, int) {
      for (std::int64_t b = begin; b < end; ++b) {
        const auto [x0, x1] = threefry::block(key, counter + static_cast<std::uint64_t>(b));
        if (bits_ == 64) {
          const std::uint64_t v = x0 | std::uint64_t{x1} << 32;
          std::memcpy(out + 8 * b, &v, 8);
        } else {
          std::memcpy(out + 8 * b, &x0, 4);
          // An odd count's last block gives one element.
          if (2 * b + 1 < n_) std::memcpy(out + 8 * b + 4, &x1, 4);
        }
      }
    };
    if (workers_ > 1 && blocks_ >= (1 << 14)) ctx.parallel(blocks_, 1 << 12, body);
    else body(0, blocks_, 0);
    const std::uint64_t next[2] = {key, counter + static_cast<std::uint64_t>(blocks_)};
    std::memcpy(ctx.slots[new_state_slot_], next, sizeof next);
  }

 private:
  std::int64_t n_;
  int bits_;
  std::int64_t blocks_;
  int workers_;
  std::int32_t state_slot_, new_state_slot_, output_slot_;
};

}  // namespace pjrt_lite::cpu::detail
