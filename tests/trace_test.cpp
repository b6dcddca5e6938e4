// Tests of the trace layer: Traced<C> satisfies the same concepts as C, computes the same
// results (checked against the reference interpreter), reports exactly one record per call,
// returns the inner client's errors unchanged; the timeline's JSON parses and its spans nest
// per thread; DOT output is well formed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/trace/traced.hpp"

namespace trace_test {

using namespace pjrt_lite;

namespace {

using Cpu = cpu::Client<>;
using CpuInline = cpu::Client<cpu::InlineExecutor>;
using Recorded = Traced<Cpu, trace::RecordingSink>;

// ---- The same contracts as the plain clients, for every sink.
template <class C>
constexpr bool kSatisfiesAll =
    PjRtClient<C> && CompilingClient<C> && PjRtDevice<typename C::device_type> &&
    PjRtMemorySpace<typename C::memory_space_type> && PjRtBuffer<typename C::buffer_type> &&
    PjRtLoadedExecutable<typename C::executable_type>;
static_assert(kSatisfiesAll<Cpu> && kSatisfiesAll<CpuInline>);
static_assert(kSatisfiesAll<Traced<Cpu>>);
static_assert(kSatisfiesAll<Traced<CpuInline>>);
static_assert(kSatisfiesAll<Recorded>);
static_assert(kSatisfiesAll<Traced<Cpu, trace::WithCallStack<trace::RecordingSink>>>);
static_assert(kSatisfiesAll<Traced<Cpu, trace::TimelineSink>>);
// A traced client wraps a traced client too.
static_assert(kSatisfiesAll<Traced<Traced<CpuInline>, trace::RecordingSink>>);
static_assert(trace::call_stack_frames_v<trace::LogSink> == 0);
static_assert(trace::call_stack_frames_v<trace::WithCallStack<trace::LogSink, 7>> == 7);
// Tracing is in the type only: nothing is added to the plain client's buffers.
static_assert(sizeof(Cpu::buffer_type) == sizeof(void*));

// y = x * x + 1 over f32[n]: a fused group, plus a reduction to a scalar (a second kernel).
Graph sample_graph(std::int64_t n) {
  GraphBuilder b("sample");
  Value x = b.parameter(Shape(DType::kF32, {n}));
  Value one = b.broadcast_in_dim(b.constant(1.0f), {n}, {});
  Value y = b.add(b.multiply(x, x), one);
  Value sum = b.reduce(y, b.constant(0.0f), OpCode::kAdd, {0});
  return b.build({y, sum}).value();
}

Literal iota_literal(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.25f - 3.0f;
  return Literal::from_span<float>(v, std::vector<std::int64_t>{n}).value();
}

std::vector<std::string> methods(const std::vector<trace::OwnedCallRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.method);
  return out;
}

// ---- A small JSON reader: enough to prove the timeline is JSON and to walk it.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>,
               std::map<std::string, Json>>
      v;
  const Json& operator[](const std::string& key) const {
    return std::get<std::map<std::string, Json>>(v).at(key);
  }
  bool has(const std::string& key) const {
    const auto* o = std::get_if<std::map<std::string, Json>>(&v);
    return o != nullptr && o->count(key) != 0;
  }
  const std::vector<Json>& array() const { return std::get<std::vector<Json>>(v); }
  double number() const { return std::get<double>(v); }
  const std::string& string() const { return std::get<std::string>(v); }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : s_(text) {}
  // The document, or nothing (with error() set) if it is not exactly one JSON value.
  std::optional<Json> read() {
    std::optional<Json> v = value();
    skip();
    if (v && pos_ != s_.size()) return fail("trailing characters");
    return v;
  }
  const std::string& error() const { return error_; }

 private:
  std::optional<Json> fail(std::string what) {
    if (error_.empty()) error_ = what + " at " + std::to_string(pos_);
    return std::nullopt;
  }
  void skip() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<Json> value() {
    skip();
    if (pos_ >= s_.size()) return fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') {
      auto str = string();
      if (!str) return std::nullopt;
      return Json{*str};
    }
    if (s_.substr(pos_, 4) == "true") return pos_ += 4, Json{true};
    if (s_.substr(pos_, 5) == "false") return pos_ += 5, Json{false};
    if (s_.substr(pos_, 4) == "null") return pos_ += 4, Json{nullptr};
    return number();
  }
  std::optional<Json> number() {
    const std::size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    std::size_t digits = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_, ++digits;
    if (digits == 0) return fail("expected a value");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      std::size_t frac = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_, ++frac;
      if (frac == 0) return fail("expected digits after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      std::size_t exp = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_, ++exp;
      if (exp == 0) return fail("expected an exponent");
    }
    return Json{std::stod(std::string(s_.substr(start, pos_ - start)))};
  }
  std::optional<std::string> string() {
    ++pos_;  // the opening quote
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in string"), std::nullopt;
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        const char e = s_[pos_++];
        if (e == 'u') {
          if (pos_ + 4 > s_.size()) return fail("short \\u escape"), std::nullopt;
          out += static_cast<char>(std::stoi(std::string(s_.substr(pos_, 4)), nullptr, 16));
          pos_ += 4;
          continue;
        }
        if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos)
          return fail("bad escape"), std::nullopt;
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      out += c;
    }
    if (pos_ >= s_.size()) return fail("unterminated string"), std::nullopt;
    ++pos_;
    return out;
  }
  std::optional<Json> array() {
    ++pos_;
    std::vector<Json> items;
    if (eat(']')) return Json{items};
    do {
      auto v = value();
      if (!v) return std::nullopt;
      items.push_back(std::move(*v));
    } while (eat(','));
    if (!eat(']')) return fail("expected ']'");
    return Json{items};
  }
  std::optional<Json> object() {
    ++pos_;
    std::map<std::string, Json> members;
    if (eat('}')) return Json{members};
    do {
      skip();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a key");
      auto key = string();
      if (!key) return std::nullopt;
      if (!eat(':')) return fail("expected ':'");
      auto v = value();
      if (!v) return std::nullopt;
      members[*key] = std::move(*v);
    } while (eat(','));
    if (!eat('}')) return fail("expected '}'");
    return Json{members};
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::string error_;
};

// For each tid, "X" events sorted by start must each lie inside the enclosing open one or
// after it ends. Times are compared in integer nanoseconds (the JSON has three decimals of a
// microsecond). Returns the first violation, or "".
std::string check_nesting(const std::vector<Json>& events) {
  struct Span {
    std::int64_t begin, end;
    std::string name;
  };
  std::map<std::int64_t, std::vector<Span>> by_tid;
  for (const Json& e : events) {
    if (e["ph"].string() != "X") continue;
    const auto ns = [](double us) { return static_cast<std::int64_t>(us * 1000.0 + 0.5); };
    const std::int64_t begin = ns(e["ts"].number());
    by_tid[static_cast<std::int64_t>(e["tid"].number())].push_back(
        {begin, begin + ns(e["dur"].number()), e["name"].string()});
  }
  for (auto& [tid, spans] : by_tid) {
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
    std::vector<Span> open;
    for (const Span& s : spans) {
      while (!open.empty() && open.back().end <= s.begin) open.pop_back();
      if (!open.empty() && s.end > open.back().end)
        return str_cat("tid ", tid, ": '", s.name, "' [", s.begin, ", ", s.end, "] overlaps '",
                       open.back().name, "' [", open.back().begin, ", ", open.back().end, "]");
      open.push_back(s);
    }
  }
  return "";
}

}  // namespace

TEST_CASE("trace: a traced client computes what the plain one does") {
  const Graph graph = sample_graph(1000);
  const Literal x = iota_literal(1000);
  const std::vector<Literal> expected =
      reference::evaluate(graph, std::span<const Literal>(&x, 1)).value();

  auto plain = Cpu::create({.device_count = 2}).value();
  auto traced = Recorded::create(cpu::ClientOptions{.device_count = 2}).value();

  auto plain_exe = plain->compile(graph).value();
  auto traced_exe = traced->compile(graph).value();
  auto plain_arg = plain->buffer_from_literal(x).value();
  auto traced_arg = traced->buffer_from_literal(x).value();
  Cpu::buffer_type* plain_args[] = {&plain_arg};
  Recorded::buffer_type* traced_args[] = {&traced_arg};
  for (ExecutionMode mode : {ExecutionMode::kSynchronous, ExecutionMode::kAsynchronous}) {
    CAPTURE(static_cast<int>(mode));
    ExecuteOptions options;
    options.mode = mode;
    auto plain_out = plain_exe.execute_sharded(plain_args, plain->devices()[0], options).value();
    auto traced_out =
        traced_exe.execute_sharded(traced_args, traced->devices()[0], options).value();
    REQUIRE(traced_out.size() == expected.size());
    for (std::size_t j = 0; j < expected.size(); ++j) {
      Literal p = plain_out[j].to_literal().await().value();
      Literal t = traced_out[j].to_literal().await().value();
      CHECK(t == p);
      CHECK(t.shape() == expected[j].shape());
      // Fused single-pass f32 against the interpreter: equal to a few ulps.
      const auto tv = t.data<float>();
      const auto ev = expected[j].data<float>();
      for (std::size_t i = 0; i < tv.size(); ++i)
        CHECK(tv[i] == doctest::Approx(ev[i]).epsilon(1e-5));
    }
  }
  // The wrappers stand for the inner objects.
  CHECK(traced->device_count() == plain->device_count());
  CHECK(traced->devices()[1]->id() == 1);
  CHECK(traced->devices()[1]->inner() == traced->inner().devices()[1]);
  CHECK(traced->devices()[0]->default_memory_space().value() == traced->memory_spaces()[0]);
  CHECK(traced->memory_spaces()[0]->devices()[0] == traced->devices()[0]);
  CHECK(traced_arg.device() == traced->devices()[0]);
  CHECK(traced_exe.addressable_devices()[0] == traced->devices()[0]);
  CHECK(traced->platform_name() == plain->platform_name());
}

TEST_CASE("trace: one record per call, in order, naming object, method, arguments and result") {
  auto client = Recorded::create(cpu::ClientOptions{.device_count = 2}).value();
  std::vector<std::string> calls = {"create"};
  CHECK(client->platform_name() == "cpu");
  calls.push_back("platform_name");
  auto* device = client->devices()[1];
  calls.push_back("devices");
  auto* memory = device->default_memory_space().value();
  calls.push_back("default_memory_space");
  const std::int32_t one = 1;
  auto buffer = client->buffer_from_host_buffer(
      std::as_bytes(std::span(&one, 1)), DType::kS32, {}, std::nullopt,
      HostBufferSemantics::kImmutableOnlyDuringCall, nullptr, memory);
  calls.push_back("buffer_from_host_buffer");
  REQUIRE(buffer.ok());
  CHECK(buffer->get_ready_future().await().ok());
  calls.push_back("get_ready_future");
  Literal back = buffer->to_literal().await().value();
  calls.push_back("to_literal");
  CHECK(back == Literal::scalar<std::int32_t>(1));
  auto copy = buffer->copy_to_device(client->devices()[0]).value();
  calls.push_back("devices");
  calls.push_back("copy_to_device");
  buffer->delete_buffer();
  calls.push_back("delete_buffer");
  CHECK(buffer->is_deleted());
  calls.push_back("is_deleted");
  std::int32_t out = 0;
  CHECK(copy.copy_raw_to_host(&out, 0, 4).await().ok());
  calls.push_back("copy_raw_to_host");
  CHECK(out == 1);

  const std::vector<trace::OwnedCallRecord> records = client->sink().records();
  CHECK(methods(records) == calls);
  REQUIRE(records.size() == calls.size());
  // buffer_from_host_buffer: on the client, with the shape and target in short, returning
  // the new buffer's id.
  const trace::OwnedCallRecord& made = records[4];
  CHECK(made.object_kind == "client");
  CHECK(made.object == &client->inner());
  CHECK(made.arguments.find("s32[] ImmutableOnlyDuringCall on cpu:1/device") != std::string::npos);
  CHECK(made.result == trace::detail::format_address(buffer->id()));
  CHECK(made.status.ok());
  CHECK(trace::detail::base_name(made.file) == "client.hpp");
  CHECK(made.line > 0);
  CHECK(made.thread == std::this_thread::get_id());
  CHECK(made.call_stack.empty());
  CHECK(records[6].result == "s32[] 1");  // a ready to_literal shows its value
  CHECK(records[6].object == buffer->id());
  // The log line, PJRT reference-plugin style.
  const std::string line = trace::format_record(made);
  CHECK(line.rfind("I client.hpp:", 0) == 0);
  CHECK(line.find("] buffer_from_host_buffer(0x") != std::string::npos);
  CHECK(line.find(" -> " + made.result + " [") != std::string::npos);
}

TEST_CASE("trace: errors of the inner client are reported and returned unchanged") {
  auto plain = Cpu::create().value();
  auto client = Recorded::create().value();

  const Status plain_lookup = plain->lookup_device(7).status();
  const Status traced_lookup = client->lookup_device(7).status();
  CHECK(traced_lookup == plain_lookup);

  const std::int32_t data[3] = {1, 2, 3};
  const std::int64_t dims[] = {4};
  int done = 0;
  auto bad = client->buffer_from_host_buffer(
      std::as_bytes(std::span(data)), DType::kS32, dims, std::nullopt,
      HostBufferSemantics::kImmutableOnlyDuringCall, [&] { ++done; },
      static_cast<Recorded::memory_space_type*>(nullptr));
  auto plain_bad = plain->buffer_from_host_buffer(
      std::as_bytes(std::span(data)), DType::kS32, dims, std::nullopt,
      HostBufferSemantics::kImmutableOnlyDuringCall, [&] { ++done; },
      static_cast<Cpu::memory_space_type*>(nullptr));
  REQUIRE(!bad.ok());
  CHECK(bad.status() == plain_bad.status());
  CHECK(done == 2);  // on_done still runs exactly once per call

  // An executable given the wrong number of arguments, and a buffer used after deletion.
  auto exe = client->compile(sample_graph(4)).value();
  auto plain_exe = plain->compile(sample_graph(4)).value();
  auto run = exe.execute_sharded({}, client->devices()[0]);
  auto plain_run = plain_exe.execute_sharded({}, plain->devices()[0]);
  REQUIRE(!run.ok());
  CHECK(run.status() == plain_run.status());
  auto buffer = client->buffer_from_literal(Literal::vector<float>({1, 2, 3, 4})).value();
  buffer.delete_buffer();
  auto size = buffer.on_device_size_in_bytes();
  CHECK(size.status().code() == StatusCode::kFailedPrecondition);
  Recorded::buffer_type* args[] = {&buffer};
  auto deleted_run = exe.execute_sharded(args, client->devices()[0]);
  CHECK(deleted_run.status().code() == StatusCode::kFailedPrecondition);
  // Compile errors too: an empty device list.
  auto no_devices = client->compile(sample_graph(4), cpu::CompileOptions{.device_ids = {}});
  auto plain_no_devices = plain->compile(sample_graph(4), cpu::CompileOptions{.device_ids = {}});
  CHECK(no_devices.status() == plain_no_devices.status());

  const auto records = client->sink().records();
  CHECK(methods(records) ==
        std::vector<std::string>{"create", "lookup_device", "buffer_from_host_buffer", "compile",
                                 "devices", "execute_sharded", "buffer_from_literal",
                                 "delete_buffer", "on_device_size_in_bytes", "devices",
                                 "execute_sharded", "compile"});
  std::vector<Status> errors;
  for (const auto& r : records)
    if (!r.status.ok()) {
      errors.push_back(r.status);
      CHECK(r.result == trace::detail::shorten(r.status.to_string()));
      CHECK(trace::format_record(r).rfind("E ", 0) == 0);
    }
  std::vector<Status> returned;
  for (Status s : {traced_lookup, Status(bad.status()), Status(run.status()), Status(size.status()),
                   Status(deleted_run.status()), Status(no_devices.status())})
    returned.push_back(s);
  CHECK(errors == returned);
}

TEST_CASE("trace: LogSink writes one line per call, and WithCallStack attaches the native stack") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  {
    auto client = Traced<CpuInline>::create_with_sink(trace::LogSink(file)).value();
    (void)client->process_index();
    (void)client->lookup_device(3);
  }
  std::rewind(file);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, file) != nullptr) text += buf;
  std::fclose(file);
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1)
    lines.push_back(text.substr(start, end - start));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rfind("I client.hpp:", 0) == 0);
  CHECK(lines[0].find("] create((nil)) -> 0x") != std::string::npos);
  CHECK(lines[1].find("] process_index(0x") != std::string::npos);
  CHECK(lines[1].find(") -> 0 [") != std::string::npos);
  CHECK(lines[2].rfind("E client.hpp:", 0) == 0);
  CHECK(lines[2].find("lookup_device(0x") != std::string::npos);
  CHECK(lines[2].find(" 3 -> INVALID_ARGUMENT: no device with id 3") != std::string::npos);

  auto stacked =
      Traced<CpuInline, trace::WithCallStack<trace::RecordingSink, 16>>::create().value();
  (void)stacked->device_count();
  const auto records = stacked->sink().records();
  REQUIRE(records.size() == 2);
#if PJRT_LITE_HAS_BACKTRACE
  CHECK(!records[1].call_stack.empty());
  CHECK(records[1].call_stack.size() <= 16);
  const std::string frames = trace::format_call_stack(records[1].call_stack);
  CHECK(frames.rfind("    #0 0x", 0) == 0);
  // Some frame resolves to a file (this executable or a shared library).
  CHECK(frames.find(" (") != std::string::npos);
#endif
  CHECK(trace::demangle("_ZN9pjrt_lite6TracedE") == "pjrt_lite::Traced");
  CHECK(trace::demangle("not_mangled") == "not_mangled");
}

TEST_CASE(
    "trace: the timeline holds compiles, transfers and every kernel of every execute, nested per "
    "thread") {
  trace::Timeline timeline;
  auto client = Traced<Cpu, trace::TimelineSink>::create_with_sink(
                    trace::TimelineSink(&timeline),
                    cpu::ClientOptions{.thread_count = 2, .async_transfer_threshold_bytes = 1024})
                    .value();
  client->inner().set_observer(&timeline);
  std::size_t kernels = 0;
  constexpr int kRuns = 3;
  {
    const Graph graph = sample_graph(4096);
    auto exe = client->compile(graph).value();
    kernels = exe.inner().kernel_names().size();
    REQUIRE(kernels >= 2);
    auto x = client->buffer_from_literal(iota_literal(4096)).value();
    decltype(client)::element_type::buffer_type* args[] = {&x};
    for (int run = 0; run < kRuns; ++run) {
      ExecuteOptions options;
      options.mode = run == 0 ? ExecutionMode::kSynchronous : ExecutionMode::kAsynchronous;
      auto out = exe.execute_sharded(args, client->devices()[0], options).value();
      CHECK(out[0].to_literal().await().ok());  // 16 KiB: a device-to-host copy on a worker
    }
  }
  // A transfer's span is reported before its future is ready; destroying the client
  // waits for the workers.
  client.reset();

  std::map<std::string, int> by_category;
  for (const auto& e : timeline.events()) ++by_category[e.category];
  CHECK(by_category["compile"] == 1);
  CHECK(by_category["execute"] == kRuns);
  CHECK(by_category["kernel"] == static_cast<int>(kernels) * kRuns);
  CHECK(by_category["host_to_device"] == 1);
  CHECK(by_category["device_to_host"] == kRuns);
  CHECK(by_category["api"] >= 2 + 2 * kRuns);

  const std::string json = timeline.to_json();
  JsonReader reader(json);
  std::optional<Json> doc = reader.read();
  REQUIRE_MESSAGE(doc.has_value(), reader.error());
  const auto& events = (*doc)["traceEvents"].array();
  std::size_t complete = 0;
  std::set<std::int64_t> tids;
  for (const Json& e : events) {
    REQUIRE(e.has("ph"));
    REQUIRE(e.has("pid"));
    if (e["ph"].string() != "X") continue;
    ++complete;
    CHECK(e["dur"].number() >= 0);
    tids.insert(static_cast<std::int64_t>(e["tid"].number()));
  }
  CHECK(complete == timeline.events().size());
  CHECK(tids.size() >= 2);  // the caller and at least one worker
  CHECK(check_nesting(events) == "");

  // The checker itself catches overlap and broken JSON.
  JsonReader overlapping(
      R"({"traceEvents":[{"name":"a","ph":"X","tid":1,"ts":0,"dur":5},{"name":"b","ph":"X","tid":1,"ts":3,"dur":5}]})");
  CHECK(check_nesting(overlapping.read().value()["traceEvents"].array()) != "");
  CHECK(!JsonReader(R"({"traceEvents":[{"name":"a",}]})").read().has_value());
  CHECK(!JsonReader("{\"a\":\"b\nc\"}").read().has_value());
}

TEST_CASE("trace: a timeline on a plain client, from several threads at once") {
  trace::Timeline timeline;
  auto client = Cpu::create({.thread_count = 2}).value();
  client->set_observer(&timeline);
  auto exe = client->compile(sample_graph(256)).value();
  const std::size_t kernels = exe.kernel_names().size();
  constexpr int kThreads = 4, kRuns = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      auto x = client->buffer_from_literal(iota_literal(256)).value();
      Cpu::buffer_type* args[] = {&x};
      for (int r = 0; r < kRuns; ++r) {
        auto out = exe.execute_sharded(args, client->devices()[0]).value();
        (void)out[0].get_ready_future().await();
      }
    });
  for (auto& t : threads) t.join();
  client->set_observer(nullptr);
  std::size_t kernel_events = 0;
  for (const auto& e : timeline.events()) kernel_events += e.category == "kernel";
  CHECK(kernel_events == kernels * kThreads * kRuns);
  std::optional<Json> doc = JsonReader(timeline.to_json()).read();
  REQUIRE(doc.has_value());
  CHECK(check_nesting((*doc)["traceEvents"].array()) == "");
  CHECK(timeline.lane_names()[0] == "main");
  CHECK(trace::Timeline().write_json("/nonexistent-dir/timeline.json").code() ==
        StatusCode::kUnavailable);
}

TEST_CASE("trace: DOT of a graph and of an executable's kernels") {
  const Graph graph = sample_graph(8);
  auto check_well_formed = [](const std::string& dot) {
    CHECK(dot.rfind("digraph \"sample\" {", 0) == 0);
    CHECK(dot.substr(dot.size() - 2) == "}\n");
    // Balanced braces outside strings, strings closed, every edge between declared nodes.
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < dot.size(); ++i) {
      const char c = dot[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"') in_string = true;
      if (c == '{') ++depth;
      if (c == '}') CHECK(--depth >= 0);
      const bool top_level_line_ends_file = c != '\n' || depth > 0 || i + 1 == dot.size();
      CHECK(top_level_line_ends_file);
    }
    CHECK(!in_string);
    CHECK(depth == 0);
    std::set<std::string> declared;
    std::vector<std::pair<std::string, std::string>> edges;
    for (std::size_t start = 0, end; (end = dot.find('\n', start)) != std::string::npos;
         start = end + 1) {
      std::string line = dot.substr(start, end - start);
      line.erase(0, line.find_first_not_of(' '));
      const std::size_t arrow = line.find(" -> ");
      const std::size_t bracket = line.find(" [label=");
      if (arrow != std::string::npos && arrow < bracket) {
        const std::size_t stop = line.find_first_of(" ;", arrow + 4);
        edges.emplace_back(line.substr(0, arrow), line.substr(arrow + 4, stop - arrow - 4));
      } else if (bracket != std::string::npos) {
        declared.insert(line.substr(0, bracket));
      }
    }
    CHECK(!edges.empty());
    for (const auto& [from, to] : edges) {
      CHECK(declared.count(from) == 1);
      CHECK(declared.count(to) == 1);
    }
    return declared.size();
  };
  const std::string dot = trace::to_dot(graph);
  // One DOT node per IR node and per output; one edge per operand and per output.
  CHECK(check_well_formed(dot) ==
        static_cast<std::size_t>(graph.num_nodes()) + graph.outputs().size());
  CHECK(dot.find("cluster") == std::string::npos);

  auto client = Cpu::create({.thread_count = 1}).value();
  auto exe = client->compile(graph).value();
  const std::string exe_dot = trace::to_dot(exe);
  check_well_formed(exe_dot);
  // Every node computed by a kernel sits in that kernel's cluster: the fused group holds
  // the multiply and the add.
  std::set<std::int32_t> used;
  for (std::int32_t k : exe.node_kernels())
    if (k >= 0) used.insert(k);
  for (std::int32_t k : used)
    CHECK(exe_dot.find(str_cat("subgraph cluster_", k, " {")) != std::string::npos);
  CHECK(exe_dot.find("fusion[") != std::string::npos);
  std::map<std::int32_t, int> members;
  for (std::int64_t i = 0; i < exe.optimized_graph().num_nodes(); ++i) {
    const OpCode op = exe.optimized_graph().node(i).op;
    const std::int32_t k = exe.node_kernels()[static_cast<std::size_t>(i)];
    if (op == OpCode::kMultiply || op == OpCode::kAdd) ++members[k];
  }
  CHECK(members.size() == 1);  // one kernel computes both
  CHECK(members.begin()->first >= 0);
  CHECK(trace::detail::dot_escape("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

}  // namespace trace_test
