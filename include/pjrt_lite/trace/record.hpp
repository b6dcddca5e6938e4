#pragma once
// What Traced<C, Sink> reports for each call (a CallRecord), the sink contract, and the sinks
// that come with it: LogSink prints one line per call in the style of PJRT's reference plugin
// log, RecordingSink keeps the records, WithCallStack<Sink> adds the native call stack.

#include <concepts>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/trace/call_stack.hpp"

namespace pjrt_lite::inline v0_1::trace {

/// Where a forwarding method is: file and line, taken at the call site like
/// SourceLocation::current(), which clang 14 cannot compile with libstdc++ 12.
struct SourceLocation {
  const char* file = "";
  std::uint_least32_t line_number = 0;

  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          std::uint_least32_t line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }
  [[nodiscard]] constexpr const char* file_name() const { return file; }
  [[nodiscard]] constexpr std::uint_least32_t line() const { return line_number; }
};

/// One call through a Traced object. The strings and spans live only for the duration of
/// Sink::record; a sink that keeps a record copies it (OwnedCallRecord).
struct CallRecord {
  std::string_view object_kind;  // "client", "device", "memory_space", "buffer", "executable"
  const void* object = nullptr;  // the wrapped object (a buffer: its stable id)
  std::string_view method;       // "buffer_from_host_buffer"
  std::string_view arguments;    // in short: "s32[] on cpu:0/device"
  std::string_view result;       // in short: "0x55d1c3f0", or the error
  Status status;                 // the error the call returned, or OK
  std::int64_t begin_ns = 0;     // steady_clock, as cpu::observer_now_ns
  std::int64_t duration_ns = 0;
  SourceLocation where;  // the forwarding method in pjrt_lite/trace/
  std::thread::id thread;
  std::span<void* const> call_stack;  // innermost first; empty unless the sink asks for it
};

/// A record that owns its strings.
struct OwnedCallRecord {
  std::string object_kind;
  const void* object = nullptr;
  std::string method;
  std::string arguments;
  std::string result;
  Status status;
  std::int64_t begin_ns = 0;
  std::int64_t duration_ns = 0;
  std::string file;
  std::uint_least32_t line = 0;
  std::thread::id thread;
  std::vector<void*> call_stack;

  explicit OwnedCallRecord(const CallRecord& r)
      : object_kind(r.object_kind),
        object(r.object),
        method(r.method),
        arguments(r.arguments),
        result(r.result),
        status(r.status),
        begin_ns(r.begin_ns),
        duration_ns(r.duration_ns),
        file(r.where.file_name()),
        line(r.where.line()),
        thread(r.thread),
        call_stack(r.call_stack.begin(), r.call_stack.end()) {}
};

/// Where a record's reports go, chosen at compile time as Traced's second parameter.
/// record() is called on the calling thread, possibly from several threads at once.
/// Satisfied by LogSink, RecordingSink and WithCallStack<S>.
template <class S>
concept Sink = std::movable<S> && requires(S& s, const CallRecord& r) {
  s.record(r);
};

/// How many frames of native call stack Sink S wants in each record (0: none).
template <class S>
constexpr int call_stack_frames_v = [] {
  if constexpr (requires { S::kCallStackFrames; })
    return static_cast<int>(S::kCallStackFrames);
  else
    return 0;
}();

namespace detail {

inline std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

/// "0x7ffd5e8c", or "(nil)" for null (as glibc's printf writes them).
inline std::string format_address(const void* p) {
  if (p == nullptr) return "(nil)";
  return "0x" + to_hex(reinterpret_cast<std::uintptr_t>(p));
}

inline std::string format_duration(std::int64_t ns) {
  char buf[32];
  if (ns < 10'000)
    std::snprintf(buf, sizeof buf, "%lldns", static_cast<long long>(ns));
  else if (ns < 10'000'000)
    std::snprintf(buf, sizeof buf, "%.1fus", static_cast<double>(ns) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1fms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace detail

/// The record as one log line, PJRT reference-plugin style:
/// "I buffer.hpp:88] to_literal(0x55d1c3f0) -> s32[] 1 [2.1us]". Errors start with "E".
inline std::string format_record(std::string_view file, std::uint_least32_t line,
                                 std::string_view method, const void* object,
                                 std::string_view arguments, std::string_view result, bool ok,
                                 std::int64_t duration_ns) {
  std::string out = ok ? "I " : "E ";
  out += detail::base_name(file);
  out += ':';
  out += std::to_string(line);
  out += "] ";
  out += method;
  out += '(';
  out += detail::format_address(object);
  out += ')';
  if (!arguments.empty()) {
    out += ' ';
    out += arguments;
  }
  if (!result.empty()) {
    out += " -> ";
    out += result;
  }
  out += " [";
  out += detail::format_duration(duration_ns);
  out += ']';
  return out;
}
inline std::string format_record(const CallRecord& r) {
  return format_record(r.where.file_name(), r.where.line(), r.method, r.object, r.arguments,
                       r.result, r.status.ok(), r.duration_ns);
}
inline std::string format_record(const OwnedCallRecord& r) {
  return format_record(r.file, r.line, r.method, r.object, r.arguments, r.result, r.status.ok(),
                       r.duration_ns);
}

/// The frames under a record's line, one per line, each indented: "    #0 0x... name + 0x1c (exe)".
inline std::string format_call_stack(std::span<void* const> frames) {
  std::string out;
  for (std::size_t i = 0; i < frames.size(); ++i)
    out += "    #" + std::to_string(i) + " " + describe_frame(frames[i]) + "\n";
  return out;
}

/// Prints each record as one line (format_record), followed by its call stack if it has one,
/// to a C stream (stderr unless given). Each record is written with one call, so lines of
/// concurrent calls do not interleave. Thread-safe.
class LogSink {
 public:
  explicit LogSink(std::FILE* stream = stderr) : stream_(stream) {}
  void record(const CallRecord& r) const {
    std::string text = format_record(r);
    text += '\n';
    if (!r.call_stack.empty()) text += format_call_stack(r.call_stack);
    std::fputs(text.c_str(), stream_);
  }

 private:
  std::FILE* stream_;
};

/// Keeps every record. Thread-safe.
class RecordingSink {
 public:
  RecordingSink() = default;
  RecordingSink(RecordingSink&& other) noexcept : records_(other.take()) {}
  RecordingSink& operator=(RecordingSink&& other) noexcept {
    std::vector<OwnedCallRecord> taken = other.take();
    std::lock_guard lock(mu_);
    records_ = std::move(taken);
    return *this;
  }

  void record(const CallRecord& r) {
    OwnedCallRecord owned(r);
    std::lock_guard lock(mu_);
    records_.push_back(std::move(owned));
  }
  /// A copy of the records so far, in the order they were reported.
  [[nodiscard]] std::vector<OwnedCallRecord> records() const {
    std::lock_guard lock(mu_);
    return records_;
  }
  /// The records so far, leaving none.
  std::vector<OwnedCallRecord> take() {
    std::lock_guard lock(mu_);
    return std::exchange(records_, {});
  }

 private:
  mutable std::mutex mu_;
  std::vector<OwnedCallRecord> records_;
};

/// Sink S, with up to `Frames` frames of the caller's native stack in every record (innermost
/// first, starting at the code that called the traced method).
template <Sink S, int Frames = 32>
requires(Frames > 0 && Frames <= 100) class WithCallStack : public S {
 public:
  static constexpr int kCallStackFrames = Frames;
  using S::S;
  WithCallStack() = default;
  explicit WithCallStack(S sink) : S(std::move(sink)) {}
};

}  // namespace pjrt_lite::trace
