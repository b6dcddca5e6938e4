#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// rng_bit_generator on the CPU: the layout of core/random_bits.hpp, the output split across
// threads in ranges of elements, each thread with its own block cache. The state is read
// before anything is written, so the results may share memory with it.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/core/random_bits.hpp"
#include "pjrt_lite/core/shape.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

class RngBitGeneratorKernel final : public Kernel {
 public:
  /// Plans rng_bit_generator(state) -> {new state, output} (checked by shape inference).
  RngBitGeneratorKernel(random_bits::Generator generator, const Shape& state, const Shape& output,
                        int max_workers, std::int32_t state_slot, std::int32_t new_state_slot,
                        std::int32_t output_slot)
      : generator_(generator),
        state_words_(static_cast<std::size_t>(state.element_count())),
        dims_(output.dims().begin(), output.dims().end()),
        bytes_(byte_size(output.dtype())),
        count_(output.element_count()),
        workers_(std::max(max_workers, 1)),
        state_slot_(state_slot),
        new_state_slot_(new_state_slot),
        output_slot_(output_slot) {
    flops = 80.0 * static_cast<double>(count_);  // ~80 integer ops a block, at most a block an element
    bytes_accessed = 2 * state.byte_size() + output.byte_size();
  }

  void run(const RunContext& ctx) const override {
    std::uint64_t state[3] = {};
    std::memcpy(state, ctx.slots[state_slot_], state_words_ * sizeof(std::uint64_t));
    const random_bits::Plan plan(generator_, std::span<const std::uint64_t>(state, state_words_), dims_,
                                 static_cast<int>(8 * bytes_));
    std::byte* out = ctx.slots[output_slot_];
    auto body = [&](std::int64_t begin, std::int64_t end, int) {
      random_bits::Plan::Cache cache;
      for (std::int64_t i = begin; i < end; ++i) {
        random_bits::store_element(out + static_cast<std::int64_t>(bytes_) * i, plan.element(i, cache), bytes_);
      }
    };
    if (workers_ > 1 && count_ >= (1 << 15)) ctx.parallel(count_, 1 << 13, body);
    else body(0, count_, 0);
    std::uint64_t next[3] = {};
    plan.next_state(std::span<std::uint64_t>(next, state_words_));
    std::memcpy(ctx.slots[new_state_slot_], next, state_words_ * sizeof(std::uint64_t));
  }

 private:
  random_bits::Generator generator_;
  std::size_t state_words_;
  std::vector<std::int64_t> dims_;
  std::size_t bytes_;
  std::int64_t count_;
  int workers_;
  std::int32_t state_slot_, new_state_slot_, output_slot_;
};

}  // namespace pjrt_lite::cpu::detail
