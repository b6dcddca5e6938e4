// Every runtime call of a small session, as a framework would make them: load a CPU client,
// jit y = power(x, 2) for an int32 x, run it on 1, print y. The client is a Traced one,
// so each call prints a log line; a Timeline records the compile, the transfers and every
// kernel; the program is written as Graphviz DOT (and SVG when `dot` is on PATH).
//
//   trace_session [--stack] [output-dir]
//
// --stack adds the native call stack under each line (names resolve when the executable
// exports its symbols, as this one does).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/trace/traced.hpp"

using namespace pjrt_lite;

namespace {

int fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.to_string().c_str());
  return 1;
}

bool write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

bool dot_on_path() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

template <class Sink>
int session(Sink sink, trace::Timeline& timeline, const std::string& out_dir) {
  std::printf("== load the client\n");
  std::fflush(stdout);
  auto created =
      Traced<cpu::Client<>, Sink>::create_with_sink(std::move(sink), cpu::ClientOptions{});
  if (!created.ok()) return fail(created.status());
  auto& client = **created;
  client.inner().set_observer(&timeline);
  // What a framework asks a freshly loaded plugin.
  (void)client.process_index();
  (void)client.platform_name();
  auto* device = client.devices()[0];
  (void)client.addressable_device_count();
  (void)device->is_addressable();
  (void)client.memory_spaces();
  (void)client.platform_version();
  (void)device->id();
  (void)device->device_kind();
  auto memory = device->default_memory_space();
  if (!memory.ok()) return fail(memory.status());

  std::printf("== run y = jit(lambda x: power(x, int32(2)))(1)\n");
  std::fflush(stdout);
  // jit traces the function, compiles it through the traced client, moves the argument to
  // the device and executes; each of those calls is a line of the log.
  auto f = jit(
      client, [](const Tensor& x) { return power(x, 2); }, JitOptions{"jit_power"});
  StatusOr<Literal> value = f(std::int32_t{1});
  if (!value.ok()) return fail(value.status());
  auto exe = f.executable(std::int32_t{1});  // the cached entry: no new compile
  if (!exe.ok()) return fail(exe.status());

  std::printf("== print(y)\n");
  std::fflush(stdout);
  std::fflush(stderr);
  std::printf("y = %s\n", value->to_string().c_str());
  client.inner().set_observer(nullptr);

  std::printf("== files\n");
  const std::string json_path = out_dir + "/trace_session.json";
  if (Status s = timeline.write_json(json_path); !s.ok()) return fail(s);
  std::printf("timeline: %s (%zu spans; open in ui.perfetto.dev or chrome://tracing)\n",
              json_path.c_str(), timeline.events().size());
  const std::string dot_path = out_dir + "/trace_session.dot";
  if (!write_file(dot_path, trace::to_dot((*exe)->inner())))
    return fail(unavailable_error("cannot write " + dot_path));
  std::printf("program:  %s\n", dot_path.c_str());
  if (dot_on_path()) {
    const std::string svg_path = out_dir + "/trace_session.svg";
    const std::string command = "dot -Tsvg '" + dot_path + "' -o '" + svg_path + "'";
    if (std::system(command.c_str()) == 0)
      std::printf("picture:  %s\n", svg_path.c_str());
    else
      std::printf("picture:  dot failed\n");
  } else {
    std::printf("picture:  install graphviz for an SVG (dot -Tsvg %s)\n", dot_path.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool stack = false;
  std::string out_dir = ".";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--stack") == 0)
      stack = true;
    else
      out_dir = argv[i];
  }
  trace::Timeline timeline;
  // The log goes to stdout, in order with the headers above; the calls also go on the
  // timeline as "api" spans on the caller's lane.
  if (stack) {
    using Log = trace::WithCallStack<trace::LogSink, 12>;
    return session(trace::Tee<Log, trace::TimelineSink>(Log(trace::LogSink(stdout)),
                                                        trace::TimelineSink(&timeline)),
                   timeline, out_dir);
  }
  return session(trace::Tee<trace::LogSink, trace::TimelineSink>(trace::LogSink(stdout),
                                                                 trace::TimelineSink(&timeline)),
                 timeline, out_dir);
}
