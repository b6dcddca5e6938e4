#pragma once
// A timeline of what a runtime did: spans of compiles, transfers, executions and kernels on
// the threads that ran them (one lane per thread), written as Chrome trace-event JSON that
// Perfetto (ui.perfetto.dev) and chrome://tracing open. Attach it to a CPU client with
// client.set_observer(&timeline); TimelineSink adds the calls of a Traced client as well.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/cpu/observer.hpp"
#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/trace/record.hpp"

namespace pjrt_lite::inline v0_1::trace {

/// Spans of work, each on the lane of the thread that reported it. Thread-safe: every method
/// may be called from any thread (reporting takes a mutex and copies the name).
class Timeline final : public cpu::Observer {
 public:
  struct Event {
    std::string name;
    std::string category;  // "compile", "host_to_device", ..., "kernel", or "api" (Traced calls)
    int lane = 0;          // 0 is the thread that made the timeline
    std::int64_t begin_ns = 0;  // steady_clock
    std::int64_t end_ns = 0;
    std::int64_t bytes = 0;
  };

  /// The calling thread's lane is named "main".
  Timeline() { lane_of_current_thread("main"); }

  /// A span from the CPU client (cpu::Observer).
  void span(const cpu::SpanRecord& record) override {
    add(cpu::span_kind_name(record.kind), record.name, record.begin_ns, record.end_ns,
        record.bytes);
  }

  /// Adds a span on the calling thread's lane.
  void add(std::string_view category, std::string_view name, std::int64_t begin_ns,
           std::int64_t end_ns, std::int64_t bytes = 0) {
    Event e{std::string(name), std::string(category),      0,
            begin_ns,          std::max(begin_ns, end_ns), bytes};
    std::lock_guard lock(mu_);
    e.lane = lane_locked(std::this_thread::get_id(), {});
    events_.push_back(std::move(e));
  }

  /// Names the calling thread's lane (worker lanes are "worker 1", "worker 2", ... unless named).
  void name_current_thread(std::string name) { lane_of_current_thread(std::move(name)); }

  /// The spans so far, in the order they ended.
  [[nodiscard]] std::vector<Event> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  /// The name of each lane, by lane number.
  [[nodiscard]] std::vector<std::string> lane_names() const {
    std::lock_guard lock(mu_);
    return lane_names_;
  }
  /// Forgets the spans (lanes stay).
  void clear() {
    std::lock_guard lock(mu_);
    events_.clear();
  }

  /// The Chrome trace-event JSON: a "traceEvents" array of complete ("X") events with times
  /// in microseconds from the first span, one tid per lane, and metadata naming the lanes.
  /// Events are sorted per lane by start, enclosing spans first.
  [[nodiscard]] std::string to_json() const {
    std::vector<Event> events;
    std::vector<std::string> names;
    {
      std::lock_guard lock(mu_);
      events = events_;
      names = lane_names_;
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      if (a.lane != b.lane) return a.lane < b.lane;
      if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
      return a.end_ns > b.end_ns;
    });
    std::int64_t origin = 0;
    for (std::size_t i = 0; i < events.size(); ++i)
      origin = i == 0 ? events[i].begin_ns : std::min(origin, events[i].begin_ns);

    std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    out +=
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"pjrt_"
        "lite\"}}";
    for (std::size_t lane = 0; lane < names.size(); ++lane) {
      out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(lane) +
             ",\"args\":{\"name\":";
      append_json_string(out, names[lane]);
      out += "}}";
    }
    for (const Event& e : events) {
      out += ",\n{\"name\":";
      append_json_string(out, e.name);
      out += ",\"cat\":";
      append_json_string(out, e.category);
      out += ",\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(e.lane);
      out += ",\"ts\":" + microseconds(e.begin_ns - origin);
      out += ",\"dur\":" + microseconds(e.end_ns - e.begin_ns);
      if (e.bytes > 0) out += ",\"args\":{\"bytes\":" + std::to_string(e.bytes) + "}";
      out += "}";
    }
    out += "\n]}\n";
    return out;
  }

  /// Writes to_json() to `path`; UNAVAILABLE naming the path if it cannot.
  [[nodiscard]] Status write_json(const std::string& path) const {
    const std::string json = to_json();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr)
      return unavailable_error(str_cat("Timeline::write_json: cannot open '", path, "'"));
    const bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    const bool closed = std::fclose(f) == 0;
    if (!written || !closed)
      return unavailable_error(str_cat("Timeline::write_json: cannot write '", path, "'"));
    return ok_status();
  }

 private:
  // Nanoseconds as microseconds with three decimals: exact, so nesting survives the units.
  static std::string microseconds(std::int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                  static_cast<long long>(ns % 1000));
    return buf;
  }

  static void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            out += "\\u";
            append_hex(out, static_cast<unsigned char>(c), 4);
          } else {
            out += c;
          }
      }
    }
    out += '"';
  }

  int lane_of_current_thread(std::string name) {
    std::lock_guard lock(mu_);
    return lane_locked(std::this_thread::get_id(), std::move(name));
  }

  int lane_locked(std::thread::id thread, std::string name) {
    auto [it, inserted] = lanes_.try_emplace(thread, static_cast<int>(lane_names_.size()));
    if (inserted)
      lane_names_.push_back(name.empty() ? "worker " + std::to_string(it->second)
                                         : std::move(name));
    else if (!name.empty())
      lane_names_[static_cast<std::size_t>(it->second)] = std::move(name);
    return it->second;
  }

  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::unordered_map<std::thread::id, int> lanes_;
  std::vector<std::string> lane_names_;
};

/// A Sink that adds every call of a Traced client to a Timeline, as an "api" span named by
/// the method, on the calling thread's lane. The timeline must outlive the sink's use.
class TimelineSink {
 public:
  explicit TimelineSink(Timeline* timeline) : timeline_(timeline) {}
  void record(const CallRecord& r) const {
    timeline_->add("api", r.method, r.begin_ns, r.begin_ns + r.duration_ns);
  }

 private:
  Timeline* timeline_;
};

/// A Sink that reports every record to two sinks, A first. Takes the larger call stack
/// request of the two.
template <Sink A, Sink B>
class Tee {
 public:
  static constexpr int kCallStackFrames = std::max(call_stack_frames_v<A>, call_stack_frames_v<B>);

  Tee(A a, B b) : a_(std::move(a)), b_(std::move(b)) {}
  void record(const CallRecord& r) {
    a_.record(r);
    b_.record(r);
  }
  [[nodiscard]] A& first() { return a_; }
  [[nodiscard]] B& second() { return b_; }

 private:
  A a_;
  B b_;
};

}  // namespace pjrt_lite::trace
