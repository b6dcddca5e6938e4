#pragma once
// The CPU client's one hook for profilers: an Observer, attached with
// Client::set_observer, hears of every compile, host transfer, execution and kernel as a
// span of time on the thread that did the work. With none attached the hooks cost a null
// check (per execution and per kernel) and allocate nothing.

#include <chrono>
#include <cstdint>
#include <string_view>

namespace pjrt_lite::inline v0_1::cpu {

/// What a span of work was.
enum class SpanKind : std::uint8_t {
  kCompile,         // Client::compile, cache hits included
  kHostToDevice,    // a copy from host memory into a buffer
  kDeviceToHost,    // a copy from a buffer to host memory (to_literal, copy_raw_to_host)
  kDeviceToDevice,  // copy_to_memory_space / copy_to_device
  kExecute,         // one execution of a program on one device
  kKernel,          // one kernel of an execution
};

/// "compile", "host_to_device", ..., "kernel".
constexpr std::string_view span_kind_name(SpanKind kind) {
  switch (kind) {
    case SpanKind::kCompile: return "compile";
    case SpanKind::kHostToDevice: return "host_to_device";
    case SpanKind::kDeviceToHost: return "device_to_host";
    case SpanKind::kDeviceToDevice: return "device_to_device";
    case SpanKind::kExecute: return "execute";
    case SpanKind::kKernel: return "kernel";
  }
  return "?";
}

/// One finished span. The strings live only for the duration of Observer::span.
struct SpanRecord {
  SpanKind kind;
  std::string_view name;  // the program, or the kernel's line of the optimized program
  std::int64_t begin_ns;  // steady_clock
  std::int64_t end_ns;
  std::int64_t bytes = 0;  // transfers: bytes copied
};

/// Receives spans from the threads that run them, so implementations must be thread-safe.
/// Spans on one thread nest: an execution's kernels lie inside it. An execution's spans are
/// reported before its outputs become ready, and a transfer's before its future does, so a
/// thread that has awaited them finds their spans in.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void span(const SpanRecord& record) = 0;
};

/// The clock spans are measured with, in nanoseconds.
inline std::int64_t observer_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace detail {

/// Reports the span from its construction to its destruction to `observer`, if not null.
class ObservedSpan {
 public:
  ObservedSpan(Observer* observer, SpanKind kind, std::string_view name, std::int64_t bytes = 0)
      : observer_(observer),
        kind_(kind),
        name_(name),
        bytes_(bytes),
        begin_(observer != nullptr ? observer_now_ns() : 0) {}
  ObservedSpan(const ObservedSpan&) = delete;
  ObservedSpan& operator=(const ObservedSpan&) = delete;
  ~ObservedSpan() {
    if (observer_ != nullptr) observer_->span({kind_, name_, begin_, observer_now_ns(), bytes_});
  }

 private:
  Observer* observer_;
  SpanKind kind_;
  std::string_view name_;
  std::int64_t bytes_;
  std::int64_t begin_;
};

}  // namespace detail
}  // namespace pjrt_lite::cpu
