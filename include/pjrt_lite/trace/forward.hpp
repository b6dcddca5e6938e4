#pragma once
// Forward declarations of the Traced decorator and its wrappers, and the Tracer they share,
// which runs each forwarded call and reports it to the sink.

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/trace/call_stack.hpp"
#include "pjrt_lite/trace/describe.hpp"
#include "pjrt_lite/trace/record.hpp"

namespace pjrt_lite::inline v0_1 {

template <PjRtClient C, trace::Sink S = trace::LogSink>
class Traced;

namespace trace {

template <PjRtClient C, Sink S>
class TracedDevice;
template <PjRtClient C, Sink S>
class TracedMemorySpace;
template <PjRtClient C, Sink S>
class TracedBuffer;
template <PjRtClient C, Sink S>
class TracedExecutable;

namespace detail {

template <class R>
Status status_of(const R& result) {
  if constexpr (std::is_same_v<std::remove_cvref_t<R>, Status>)
    return result;
  else if constexpr (IsStatusOr<std::remove_cvref_t<R>>::value)
    return result.ok() ? Status() : result.status();
  else
    return Status();
}

}  // namespace detail

/// Runs the calls a Traced object forwards and reports each, with its duration (and the call
/// stack if the sink asks for it), to the sink. Thread-safe as far as the sink is.
template <Sink S>
class Tracer {
 public:
  explicit Tracer(S sink) : sink_(std::move(sink)) {}

  [[nodiscard]] S& sink() { return sink_; }

  /// Runs fn() and reports it as `method` of the `kind` object at `object`, with
  /// `arguments` in short; returns what fn returned, untouched. `where` is the forwarding
  /// method's line.
  template <class F>
  decltype(auto) call(std::string_view kind, const void* object, std::string_view method,
                      std::string arguments, F&& fn,
                      SourceLocation where = SourceLocation::current()) {
    constexpr int kFrames = call_stack_frames_v<S>;
    std::array<void*, (kFrames > 0 ? kFrames : 1)> frames;
    int depth = 0;
    if constexpr (kFrames > 0) depth = capture_call_stack(frames);
    using R = decltype(std::forward<F>(fn)());
    const std::int64_t begin = now_ns();
    if constexpr (std::is_void_v<R>) {
      std::forward<F>(fn)();
      const std::int64_t end = now_ns();
      report(kind, object, method, arguments, {}, Status(), begin, end, where, frames, depth);
    } else {
      R result = std::forward<F>(fn)();
      const std::int64_t end = now_ns();
      report(kind, object, method, arguments, describe(result), detail::status_of(result), begin,
             end, where, frames, depth);
      return result;
    }
  }

  /// The clock of CallRecord::begin_ns (steady_clock in nanoseconds, as the CPU client's
  /// timeline spans).
  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  template <std::size_t N>
  void report(std::string_view kind, const void* object, std::string_view method,
              std::string_view arguments, std::string_view result, Status status,
              std::int64_t begin, std::int64_t end, const SourceLocation& where,
              const std::array<void*, N>& frames, int depth) {
    CallRecord record{kind,
                      object,
                      method,
                      arguments,
                      result,
                      std::move(status),
                      begin,
                      end - begin,
                      where,
                      std::this_thread::get_id(),
                      std::span<void* const>(frames.data(), static_cast<std::size_t>(depth))};
    sink_.record(record);
  }

  S sink_;
};

}  // namespace trace
}  // namespace pjrt_lite
