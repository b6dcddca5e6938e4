#pragma once
// Running a StableHLO test program (a corpus file: @main calls @inputs and @expected, runs the
// op under test and checks it with `check.expect_*` custom calls) on any client, and judging
// it: PASS, FAIL (what differed and where) or SKIP (the op or type the IR lacks).
//
//   auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
//   stablehlo::TestOutcome o = stablehlo::run_test_program(*client, text);
//   if (o.verdict == stablehlo::Verdict::kFail) std::puts(o.detail.c_str());

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/stablehlo/checks.hpp"
#include "pjrt_lite/stablehlo/module.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"

namespace pjrt_lite::inline v0_1::stablehlo {

/// Parses `text` and compiles its function `entry` on `client`; with `arg_shapes`, a
/// shape-polymorphic module is first refined for arguments of those shapes (parse_module).
/// The client's compile cache keys on the graph, whose shapes are then concrete: one
/// executable per distinct set of argument shapes. Thread-compatible: as thread-safe as the
/// client's compile.
template <CompilingClient C>
StatusOr<typename C::executable_type> compile_stablehlo(C& client, std::string_view text,
                                                        const std::vector<Shape>& arg_shapes,
                                                        std::string_view entry = "main") {
  PJRT_LITE_ASSIGN_OR_RETURN(Graph g, parse_stablehlo(text, arg_shapes, entry));
  return client.compile(g);
}

/// How a test program fared.
enum class Verdict : std::uint8_t { kPass, kFail, kSkip };

/// "PASS", "FAIL", "SKIP".
constexpr std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kSkip: return "SKIP";
  }
  return "invalid";
}

/// The verdict, why (for FAIL and SKIP), and the time spent parsing + compiling and running.
struct TestOutcome {
  Verdict verdict = Verdict::kFail;
  std::string detail;
  double compile_ms = 0;
  double run_ms = 0;
};

/// True when one of the program's leading comment lines contains `marker`.
inline bool has_leading_marker(std::string_view text, std::string_view marker) {
  while (true) {
    const std::size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos || text.substr(start, 2) != "//") return false;
    text.remove_prefix(start);
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (line.find(marker) != std::string_view::npos) return true;
    if (end == std::string_view::npos) return false;
    text.remove_prefix(end + 1);
  }
}

/// True when the program's leading comments carry the corpus's `RUN-DISABLED(inaccurate)`
/// marker: upstream knows its expected values to be less accurate than its checks demand.
inline bool marked_inaccurate(std::string_view text) {
  return has_leading_marker(text, "RUN-DISABLED(inaccurate)");
}

/// True when the program's leading comments carry `RUN-DISABLED(no interpreter support)`:
/// upstream never holds its expected values (XLA's CPU results) to its checks.
inline bool marked_unchecked_upstream(std::string_view text) {
  return has_leading_marker(text, "RUN-DISABLED(no interpreter support)");
}

/// Parses `text`, compiles its @main on `client`, runs it on the client's first device and
/// evaluates every check. An UNIMPLEMENTED status from any step (an op or type the IR or the
/// backend lacks) is a SKIP; any other error, and a check that does not hold, is a FAIL, but
/// for a program marked RUN-DISABLED(inaccurate) (see marked_inaccurate), whose failed check
/// is a SKIP that says so.
/// `program` (optional) receives the parsed @main. Thread-compatible: as thread-safe as the
/// client's compile and execute.
template <CompilingClient C>
TestOutcome run_test_program(C& client, std::string_view text, Graph* program = nullptr) {
  using Clock = std::chrono::steady_clock;
  TestOutcome out;
  auto fail_or_skip = [&](const Status& s) {
    out.detail = s.to_string();
    out.verdict = s.code() == StatusCode::kUnimplemented ? Verdict::kSkip : Verdict::kFail;
    return out;
  };
  const auto t0 = Clock::now();
  StatusOr<Module> module = parse_module(text);
  if (!module.ok()) return fail_or_skip(module.status());
  const Function* main = module->find("main");
  if (main == nullptr) {
    out.detail = "no function @main";
    return out;
  }
  if (program != nullptr) *program = main->graph;
  if (main->graph.num_parameters() != 0) {
    out.verdict = Verdict::kSkip;
    out.detail = "@main takes arguments; only self-contained test programs run here";
    return out;
  }
  if (main->checks.empty()) {
    out.verdict = Verdict::kSkip;
    out.detail = "the program checks nothing";
    return out;
  }
  auto exe = client.compile(main->graph);
  if (!exe.ok()) return fail_or_skip(exe.status());
  const auto t1 = Clock::now();
  auto outputs = exe->execute_sharded({}, client.devices()[0]);
  if (!outputs.ok()) return fail_or_skip(outputs.status());
  std::vector<Literal> literals;
  for (auto& b : *outputs) {
    StatusOr<Literal> l = b.to_literal().await();
    if (!l.ok()) return fail_or_skip(l.status());
    literals.push_back(std::move(l).value());
  }
  const auto t2 = Clock::now();
  out.compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  out.run_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  for (const Check& check : main->checks) {
    const Literal& actual = literals[static_cast<std::size_t>(check.actual_output)];
    const Literal& expected = check.expected_literal
                                  ? *check.expected_literal
                                  : literals[static_cast<std::size_t>(check.expected_output)];
    if (Status s = evaluate_check(check.kind, actual, expected); !s.ok()) {
      out.detail = str_cat("line ", check.line, ": ", s.message());
      if (marked_inaccurate(text)) {
        // Upstream's own interpreter fails it too: not a conformance failure.
        out.verdict = Verdict::kSkip;
        out.detail = str_cat(
            "the corpus marks this program RUN-DISABLED(inaccurate): its expected "
            "values are not accurate to its check (",
            out.detail, ")");
      } else if (marked_unchecked_upstream(text) && within_rounding(actual, expected).ok()) {
        // XLA's float rounding, never checked upstream, against a result that is equal up to
        // rounding: a skip that says so. A larger difference stays a failure.
        out.verdict = Verdict::kSkip;
        out.detail = str_cat(
            "RUN-DISABLED(no interpreter support) upstream: its expected values carry XLA's "
            "rounding, which the result matches only to within rounding (",
            out.detail, ")");
      }
      return out;
    }
  }
  out.verdict = Verdict::kPass;
  return out;
}

}  // namespace pjrt_lite::stablehlo
