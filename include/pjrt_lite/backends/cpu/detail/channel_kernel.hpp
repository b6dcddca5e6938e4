#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The token ops on the CPU. after_all makes nothing (a token holds no data). send and recv
// meet in the executable's rendezvous (rendezvous.hpp): which mailbox each participant
// sends to or receives from is worked out at compile time, as the collectives' groups are.
// infeed and outfeed take from and add to the queues of the device the execution runs on
// (feeds.hpp).

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/detail/feeds.hpp"
#include "pjrt_lite/backends/cpu/detail/kernels.hpp"
#include "pjrt_lite/backends/cpu/detail/rendezvous.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/op.hpp"

namespace pjrt_lite::inline v0_1::cpu::detail {

/// Records the first error of a token op: the participant's collective status in a grid,
/// the execution's otherwise.
inline void report_error(const RunContext& ctx, Status s) {
  Status* sink = ctx.collectives != nullptr ? &ctx.collectives->status : ctx.status;
  if (sink != nullptr && sink->ok()) *sink = std::move(s);
}

/// send, recv, infeed or outfeed. The data's slots and sizes; for send and recv, the
/// channel, and per participant whose mailboxes it sends to (any number) or receives from
/// (one, or -1 for a participant that receives nothing and gets zeros): participant ids, or
/// the participant count for the channel's mailbox of any receiver.
class ChannelKernel final : public Kernel {
 public:
  OpCode op = OpCode::kSend;
  std::vector<std::int32_t> data_slots;
  std::vector<std::int64_t> data_bytes;
  std::vector<Shape> data_types;
  std::uint64_t key = 0;  // the data's types, hashed: a recv checks the send's against its own
  std::int64_t channel_id = 0;
  std::vector<std::vector<int>> mailboxes;  // send, recv: per participant
  std::vector<int> sources;                 // recv: per participant, who sends to it, or -1 (anyone)
  std::chrono::milliseconds timeout{0};     // infeed

  /// Scratch: the data's addresses.
  void plan_scratch() { scratch_bytes = static_cast<std::int64_t>(data_slots.size() * sizeof(std::byte*)); }

  void run(const RunContext& ctx) const override {
    auto** parts = reinterpret_cast<std::byte**>(ctx.scratch);
    for (std::size_t i = 0; i < data_slots.size(); ++i) parts[i] = ctx.slots[data_slots[i]];
    const std::span<std::byte* const> out(parts, data_slots.size());
    CollectiveContext* c = ctx.collectives;
    // After an error the execution's results are errors: act no more on the outside.
    if ((c != nullptr && !c->status.ok()) || (ctx.status != nullptr && !ctx.status->ok())) return zero(ctx);
    switch (op) {
      case OpCode::kInfeed:
        if (ctx.feeds == nullptr) return fail(ctx, failed_precondition_error("infeed: the execution has no device queues"));
        if (Status s = ctx.feeds->pop_infeed(data_types, out, timeout); !s.ok()) fail(ctx, std::move(s));
        return;
      case OpCode::kOutfeed: {
        if (ctx.feeds == nullptr) return report_error(ctx, failed_precondition_error("outfeed: the execution has no device queues"));
        std::vector<Literal> entry;
        for (std::size_t i = 0; i < data_slots.size(); ++i) {
          Literal l(data_types[i]);
          if (data_bytes[i] > 0) std::memcpy(l.bytes().data(), parts[i], static_cast<std::size_t>(data_bytes[i]));
          entry.push_back(std::move(l));
        }
        ctx.feeds->push_outfeed(std::move(entry));
        return;
      }
      case OpCode::kSend: {
        if (c == nullptr || c->rendezvous == nullptr || !c->status.ok()) return;
        Rendezvous& rv = *c->rendezvous;
        const std::span<const std::byte* const> in(parts, data_slots.size());
        for (int to : mailboxes[static_cast<std::size_t>(c->participant)]) {
          const int box = rv.mailbox(channel_id, to);
          Status s = to < rv.participants() && !rv.is_local(to) ? rv.post_remote(c->participant, to, box, key, in, data_bytes)
                                                                : rv.post(c->participant, box, key, in, data_bytes);
          if (!s.ok()) return report_error(ctx, std::move(s));
        }
        return;
      }
      case OpCode::kRecv: {
        if (c == nullptr || c->rendezvous == nullptr || !c->status.ok()) return zero(ctx);
        Rendezvous& rv = *c->rendezvous;
        const int owner = mailboxes[static_cast<std::size_t>(c->participant)].front();
        if (owner < 0) return zero(ctx);
        const int from = sources.empty() ? -1 : sources[static_cast<std::size_t>(c->participant)];
        const int box = rv.mailbox(channel_id, owner);
        Status s = from >= 0 && !rv.is_local(from) ? rv.take_remote(c->participant, from, box, key, out, data_bytes)
                                                   : rv.take(c->participant, box, key, out, data_bytes);
        if (!s.ok()) fail(ctx, std::move(s));
        return;
      }
      default: return;
    }
  }

 private:
  void zero(const RunContext& ctx) const {
    for (std::size_t i = 0; i < data_slots.size(); ++i)
      if (data_bytes[i] > 0) std::memset(ctx.slots[data_slots[i]], 0, static_cast<std::size_t>(data_bytes[i]));
  }
  void fail(const RunContext& ctx, Status s) const {
    zero(ctx);
    report_error(ctx, std::move(s));
  }
};

}  // namespace pjrt_lite::cpu::detail
