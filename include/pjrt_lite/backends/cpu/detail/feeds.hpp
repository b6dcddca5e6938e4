#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// A CPU device's infeed and outfeed queues: the program's infeed ops take from one, its
// outfeed ops add to the other (channel_kernel.hpp), and the host feeds and drains them
// through Device::transfer_to_infeed and Device::transfer_from_outfeed.

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// A device's infeed and outfeed queues: entries of values, first in first out. Thread-safe.
class FeedQueues {
 public:
  void push_infeed(std::vector<Literal> entry) {
    {
      std::lock_guard lock(mu_);
      infeed_.push_back(std::move(entry));
    }
    cv_.notify_all();
  }
  /// The infeed op: waits up to `timeout` for an entry, checks that its values have
  /// `types`, and copies them to `parts`. DEADLINE_EXCEEDED when nothing comes,
  /// INVALID_ARGUMENT (the entry dropped) when it does not match.
  Status pop_infeed(std::span<const Shape> types, std::span<std::byte* const> parts, std::chrono::milliseconds timeout) {
    std::vector<Literal> entry;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, timeout, [&] { return !infeed_.empty(); }))
        return deadline_exceeded_error(str_cat("infeed: nothing was fed to the device within ", timeout.count(),
                                               " ms (Device::transfer_to_infeed)"));
      entry = std::move(infeed_.front());
      infeed_.pop_front();
    }
    bool same = entry.size() == types.size();
    for (std::size_t i = 0; same && i < types.size(); ++i) same = entry[i].shape().same_type_and_dims(types[i]);
    if (!same) {
      std::string got, want;
      for (const Literal& l : entry) got += str_cat(got.empty() ? "" : ", ", l.shape());
      for (const Shape& s : types) want += str_cat(want.empty() ? "" : ", ", s);
      return invalid_argument_error(str_cat("infeed: the entry fed holds (", got, ") but the infeed takes (", want, ")"));
    }
    for (std::size_t i = 0; i < types.size(); ++i) {
      if (!entry[i].shape().has_default_layout()) entry[i] = entry[i].with_default_layout();
      if (entry[i].size_bytes() > 0) std::memcpy(parts[i], entry[i].bytes().data(), entry[i].size_bytes());
    }
    return ok_status();
  }
  void push_outfeed(std::vector<Literal> entry) {
    {
      std::lock_guard lock(mu_);
      outfeed_.push_back(std::move(entry));
    }
    cv_.notify_all();
  }
  /// The host's end of the outfeed: waits up to `timeout` for an entry.
  StatusOr<std::vector<Literal>> pop_outfeed(std::chrono::milliseconds timeout, std::string_view device) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !outfeed_.empty(); }))
      return deadline_exceeded_error(str_cat("transfer_from_outfeed: ", device, " put nothing in its outfeed within ",
                                             timeout.count(), " ms"));
    std::vector<Literal> entry = std::move(outfeed_.front());
    outfeed_.pop_front();
    return entry;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<Literal>> infeed_, outfeed_;
};

}  // namespace pjrt_lite::cpu::detail
