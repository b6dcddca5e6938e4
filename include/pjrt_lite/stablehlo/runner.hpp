#pragma once
// Running a StableHLO test program (a corpus file: @main calls @inputs and @expected, runs the
// op under test and checks it with `check.expect_*` custom calls) on any client, and judging
// it: PASS, FAIL (what differed and where), SKIP (the op or type the IR lacks) or UNCHECKED
// (it ran, but checks nothing, so it proves nothing).
//
//   auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
//   stablehlo::TestOutcome o = stablehlo::run_test_program(*client, text);
//   if (o.verdict == stablehlo::Verdict::kFail) std::puts(o.detail.c_str());

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
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

namespace detail {

/// The compile options a client's executables report (CompileOptions on the CPU).
template <class C>
using compile_options_of =
    std::remove_cvref_t<decltype(std::declval<typename C::executable_type&>().compile_options())>;

/// The program of a grid whose processes run different functions: every function's
/// parameters in turn (a process gives its own and zeros for the others'), a case on the
/// process's position that runs the process's function, and every function's results in turn
/// (zeros, or fresh tokens, for the functions a process does not run). `function_of[k]` is
/// process k's index into `functions`.
inline StatusOr<Graph> grid_program(const std::vector<const Function*>& functions, const std::vector<int>& function_of,
                                    int partitions) {
  GraphBuilder b("grid");
  std::vector<Value> params;
  std::vector<Shape> result_types;
  for (const Function* f : functions) {
    for (const Shape& s : f->graph.parameter_shapes()) params.push_back(b.parameter(s));
    for (std::int64_t r = 0; r < f->num_results; ++r) result_types.push_back(f->graph.shape(f->graph.outputs()[static_cast<std::size_t>(r)]));
  }
  std::vector<Graph> branches;
  std::size_t first_param = 0, first_result = 0;
  for (const Function* f : functions) {
    GraphBuilder branch(f->name);
    std::vector<Value> all, mine, outputs;
    for (Value v : params) all.push_back(branch.parameter(*b.shape(v)));
    const auto n_params = static_cast<std::size_t>(f->graph.num_parameters());
    mine.assign(all.begin() + static_cast<std::ptrdiff_t>(first_param), all.begin() + static_cast<std::ptrdiff_t>(first_param + n_params));
    GraphParts parts = f->graph.to_parts();
    parts.outputs.resize(static_cast<std::size_t>(f->num_results));
    const std::vector<Value> own = branch.inline_graph(Graph::from_parts(std::move(parts)), mine);
    for (std::size_t r = 0; r < result_types.size(); ++r) {
      if (r >= first_result && r < first_result + own.size()) outputs.push_back(own[r - first_result]);
      else if (is_token(result_types[r].dtype())) outputs.push_back(branch.after_all());
      else outputs.push_back(branch.constant(Literal(result_types[r])));
    }
    PJRT_LITE_ASSIGN_OR_RETURN(Graph g, branch.build(outputs));
    branches.push_back(std::move(g));
    first_param += n_params;
    first_result += own.size();
  }
  std::vector<std::int32_t> table(function_of.begin(), function_of.end());
  const Value position = b.convert(
      b.add(b.multiply(b.replica_id(), b.constant(static_cast<std::uint32_t>(partitions))), b.partition_id()), DType::kS32);
  PJRT_LITE_ASSIGN_OR_RETURN(Literal table_literal,
                             Literal::from_span<std::int32_t>(table, {static_cast<std::int64_t>(table.size())}));
  const Value index = b.reshape(b.dynamic_slice(b.constant(std::move(table_literal)), {position}, {1}), {});
  return b.build(b.case_op(index, params, std::move(branches)));
}

/// One interpreter.run_parallel on `client`: process (r, p) runs programs[r][p], one process
/// per device, all at once on `operands` (taken in process order). Returns the results in
/// process order. One function compiles as it is for the grid; several as grid_program.
/// UNIMPLEMENTED when the client cannot compile for a grid or has too few devices.
template <CompilingClient C>
StatusOr<std::vector<Literal>> run_grid(C& client, const Module& module, const ParallelRun& run,
                                        std::span<const Literal> operands) {
  const auto replicas = static_cast<int>(run.programs.size());
  const auto partitions = static_cast<int>(run.programs.front().size());
  const auto n = static_cast<std::size_t>(replicas * partitions);
  std::vector<const Function*> functions;
  std::vector<int> function_of;
  for (const auto& row : run.programs) {
    if (static_cast<int>(row.size()) != partitions)
      return invalid_argument_error(str_cat("line ", run.line, ": interpreter.run_parallel's programs rows differ in length"));
    for (const std::string& name : row) {
      const Function* f = module.find(name);
      if (f == nullptr) return invalid_argument_error(str_cat("line ", run.line, ": no function @", name));
      const auto it = std::find(functions.begin(), functions.end(), f);
      function_of.push_back(static_cast<int>(it - functions.begin()));
      if (it == functions.end()) functions.push_back(f);
    }
  }
  if (n > client.devices().size())
    return unimplemented_error(str_cat("line ", run.line, ": interpreter.run_parallel needs ", n,
                                       " devices; the client has ", client.devices().size()));
  std::size_t given = 0;
  for (int j : function_of) given += static_cast<std::size_t>(functions[static_cast<std::size_t>(j)]->graph.num_parameters());
  if (operands.size() != given)
    return invalid_argument_error(str_cat("line ", run.line, ": interpreter.run_parallel gives ", operands.size(),
                                          " operands to processes that take ", given));
  Graph g;
  if (functions.size() == 1) {
    GraphParts parts = functions[0]->graph.to_parts();
    parts.outputs.resize(static_cast<std::size_t>(functions[0]->num_results));
    g = Graph::from_parts(std::move(parts));
  } else {
    PJRT_LITE_ASSIGN_OR_RETURN(g, grid_program(functions, function_of, partitions));
  }
  if constexpr (requires(compile_options_of<C> o) {
                  o.num_replicas = 1;
                  o.num_partitions = 1;
                }) {
    compile_options_of<C> options;
    options.num_replicas = replicas;
    options.num_partitions = partitions;
    PJRT_LITE_ASSIGN_OR_RETURN(auto exe, client.compile(g, options));
    // The infeed queues: each function's results, fed to every process's device.
    for (const std::string& name : run.infeed) {
      const Function* f = module.find(name);
      if (f == nullptr) return invalid_argument_error(str_cat("line ", run.line, ": no infeed function @", name));
      if (f->graph.num_parameters() != 0)
        return invalid_argument_error(str_cat("line ", run.line, ": infeed function @", name, " takes arguments"));
      GraphParts parts = f->graph.to_parts();
      parts.outputs.resize(static_cast<std::size_t>(f->num_results));
      PJRT_LITE_ASSIGN_OR_RETURN(auto feed, client.compile(Graph::from_parts(std::move(parts))));
      PJRT_LITE_ASSIGN_OR_RETURN(auto values, feed.execute(std::span<typename C::buffer_type* const>()));
      std::vector<Literal> entry;
      for (auto& v : values) {
        PJRT_LITE_ASSIGN_OR_RETURN(Literal l, v.to_literal().await());
        entry.push_back(std::move(l));
      }
      for (std::size_t k = 0; k < n; ++k) {
        auto* device = exe.addressable_devices()[k];
        if constexpr (requires { device->transfer_to_infeed(entry); }) {
          PJRT_LITE_RETURN_IF_ERROR(device->transfer_to_infeed(entry));
        } else {
          return unimplemented_error("interpreter.run_parallel with infeed: the client's devices have no infeed");
        }
      }
    }
    // Process k's argument list: its own operands in its function's place, zeros elsewhere.
    std::vector<std::vector<typename C::buffer_type>> buffers(n);
    std::vector<std::vector<typename C::buffer_type*>> lists(n);
    std::size_t next = 0;
    for (std::size_t k = 0; k < n; ++k) {
      auto* device = exe.addressable_devices()[k];
      for (std::size_t j = 0; j < functions.size(); ++j)
        for (const Shape& s : functions[j]->graph.parameter_shapes()) {
          const bool own = static_cast<int>(j) == function_of[k];
          PJRT_LITE_ASSIGN_OR_RETURN(auto b, client.buffer_from_literal(own ? operands[next++] : Literal(s),
                                                                        device->memory_spaces()[0]));
          buffers[k].push_back(std::move(b));
        }
      for (auto& b : buffers[k]) lists[k].push_back(&b);
    }
    PJRT_LITE_ASSIGN_OR_RETURN(auto outputs, exe.execute(lists));
    std::vector<Literal> results;
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t first = 0;
      for (std::size_t j = 0; j < static_cast<std::size_t>(function_of[k]); ++j) first += static_cast<std::size_t>(functions[j]->num_results);
      const auto count = static_cast<std::size_t>(functions[static_cast<std::size_t>(function_of[k])]->num_results);
      for (std::size_t r = first; r < first + count; ++r) {
        PJRT_LITE_ASSIGN_OR_RETURN(Literal l, outputs[k][r].to_literal().await());
        results.push_back(std::move(l));
      }
    }
    return results;
  } else {
    return unimplemented_error("interpreter.run_parallel: the client cannot compile for a grid of processes");
  }
}

/// The outputs of a test program's @main that makes interpreter.run_parallel calls: @main
/// runs once per call to compute its operands (the results of later calls still zeros), the
/// grid runs, and @main runs a last time with every result bound.
template <CompilingClient C>
StatusOr<std::vector<Literal>> run_with_parallel_calls(C& client, const Module& module, const Function& main) {
  const Graph& g = main.graph;
  std::vector<Literal> params;
  for (const Shape& s : g.parameter_shapes()) params.emplace_back(s);
  std::size_t bound = 0;
  for (const ParallelRun& run : main.parallel_runs) bound += run.result_parameters.size();
  if (bound != params.size())
    return unimplemented_error("@main takes arguments; only self-contained test programs run here");
  PJRT_LITE_ASSIGN_OR_RETURN(auto exe, client.compile(g));
  auto run_main = [&]() -> StatusOr<std::vector<Literal>> {
    std::vector<typename C::buffer_type> buffers;
    std::vector<typename C::buffer_type*> pointers;
    for (const Literal& p : params) {
      PJRT_LITE_ASSIGN_OR_RETURN(auto b, client.buffer_from_literal(p));
      buffers.push_back(std::move(b));
    }
    for (auto& b : buffers) pointers.push_back(&b);
    PJRT_LITE_ASSIGN_OR_RETURN(auto outputs, exe.execute_sharded(pointers, client.devices()[0]));
    std::vector<Literal> literals;
    for (auto& b : outputs) {
      PJRT_LITE_ASSIGN_OR_RETURN(Literal l, b.to_literal().await());
      literals.push_back(std::move(l));
    }
    return literals;
  };
  for (const ParallelRun& run : main.parallel_runs) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Literal> outputs, run_main());
    std::vector<Literal> operands;
    for (std::int64_t o : run.operand_outputs) operands.push_back(outputs[static_cast<std::size_t>(o)]);
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Literal> results, run_grid(client, module, run, operands));
    if (results.size() != run.result_parameters.size())
      return invalid_argument_error(str_cat("line ", run.line, ": interpreter.run_parallel declares ",
                                            run.result_parameters.size(), " results but its processes give ",
                                            results.size()));
    for (std::size_t i = 0; i < results.size(); ++i) {
      Literal& slot = params[static_cast<std::size_t>(run.result_parameters[i])];
      if (!results[i].shape().same_type_and_dims(slot.shape()))
        return invalid_argument_error(str_cat("line ", run.line, ": interpreter.run_parallel result ", i, " is ",
                                              results[i].shape(), " but its type says ", slot.shape()));
      slot = std::move(results[i]);
    }
  }
  return run_main();
}

}  // namespace detail

/// How a test program fared. kUnchecked: it parsed, compiled and ran without error, but
/// makes no check, so it neither passes nor is skipped.
enum class Verdict : std::uint8_t { kPass, kFail, kSkip, kUnchecked };

/// "PASS", "FAIL", "SKIP", "UNCHECKED".
constexpr std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kSkip: return "SKIP";
    case Verdict::kUnchecked: return "UNCHECKED";
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

/// The parts of a test file that MLIR's `-split-input-file` runs one by one: the text between
/// lines holding the marker `// -----` (anywhere in the line, as MLIR splits: `// // -----`
/// splits too), each with the lines before it blanked, so that a part's line numbers are the
/// file's. One part when the file has no such line.
inline std::vector<std::string> split_input_file(std::string_view text) {
  std::vector<std::string> parts;
  std::string current;
  std::size_t line_start = 0;
  std::int64_t lines_before = 0, lines_in_part = 0;
  while (line_start <= text.size()) {
    std::size_t end = text.find('\n', line_start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(line_start, end - line_start);
    if (line.find("// -----") != std::string_view::npos) {
      parts.push_back(std::move(current));
      lines_before += lines_in_part + 1;
      lines_in_part = 0;
      current.assign(static_cast<std::size_t>(lines_before), '\n');
    } else {
      current.append(line);
      if (end < text.size()) current.push_back('\n');
      ++lines_in_part;
    }
    line_start = end + 1;
  }
  parts.push_back(std::move(current));
  return parts;
}

namespace detail {

/// The function a test module runs, as StableHLO's interpreter picks it: @main, or the
/// module's only function.
inline const Function* entry_function(const Module& module) {
  if (const Function* main = module.find("main")) return main;
  return module.functions.size() == 1 ? &module.functions.front() : nullptr;
}

/// run_test_program for one module.
template <CompilingClient C>
TestOutcome run_test_module(C& client, std::string_view text, Graph* program) {
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
  const Function* main = entry_function(*module);
  if (main == nullptr) {
    out.detail = "no function @main, and not a single function to run instead";
    return out;
  }
  if (program != nullptr) *program = main->graph;
  std::vector<Literal> literals;
  if (!main->parallel_runs.empty()) {
    const auto t1 = Clock::now();
    StatusOr<std::vector<Literal>> outputs = detail::run_with_parallel_calls(client, *module, *main);
    if (!outputs.ok()) return fail_or_skip(outputs.status());
    literals = std::move(outputs).value();
    out.compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    out.run_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  } else if (main->graph.num_parameters() != 0) {
    out.verdict = Verdict::kSkip;
    out.detail = "@main takes arguments; only self-contained test programs run here";
    return out;
  }
  if (main->parallel_runs.empty()) {
    auto exe = client.compile(main->graph);
    if (!exe.ok()) return fail_or_skip(exe.status());
    const auto t1 = Clock::now();
    auto outputs = exe->execute_sharded({}, client.devices()[0]);
    if (!outputs.ok()) return fail_or_skip(outputs.status());
    for (auto& b : *outputs) {
      StatusOr<Literal> l = b.to_literal().await();
      if (!l.ok()) return fail_or_skip(l.status());
      literals.push_back(std::move(l).value());
    }
    const auto t2 = Clock::now();
    out.compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    out.run_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  }
  if (main->checks.empty()) {
    // It ran, and that is all it shows: no pass.
    out.verdict = Verdict::kUnchecked;
    out.detail = "it ran, but checks nothing";
    return out;
  }
  for (const Check& check : main->checks) {
    const Literal& actual = literals[static_cast<std::size_t>(check.actual_output)];
    const Literal& expected = check.expected_literal
                                  ? *check.expected_literal
                                  : literals[static_cast<std::size_t>(check.expected_output)];
    if (Status s = evaluate_check(check.kind, actual, expected, check.tolerance); !s.ok()) {
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

}  // namespace detail

/// Parses `text`, compiles its entry function (@main, or the module's only function) on
/// `client`, runs it on the client's first device and evaluates every check; a program that
/// makes none runs all the same and is UNCHECKED. A file split into parts by `// -----` lines
/// (split_input_file) runs part by part: it passes when every part does, fails with the first
/// failing part, is skipped otherwise when a part is, and is UNCHECKED otherwise when a part
/// is.
/// An UNIMPLEMENTED status from any step (an op or type the IR or the backend lacks) is a
/// SKIP; any other error, and a check that does not hold, is a FAIL, but for a program marked
/// RUN-DISABLED(inaccurate) (see marked_inaccurate), whose failed check is a SKIP that says so.
/// `program` (optional) receives the parsed entry function of the last part run.
/// Thread-compatible: as thread-safe as the client's compile and execute.
template <CompilingClient C>
TestOutcome run_test_program(C& client, std::string_view text, Graph* program = nullptr) {
  const std::vector<std::string> parts = split_input_file(text);
  if (parts.size() == 1) return detail::run_test_module(client, text, program);
  TestOutcome all;
  all.verdict = Verdict::kPass;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    // A part without a function runs nothing, as in StableHLO's interpreter.
    if (parts[i].find("func.func") == std::string::npos) continue;
    TestOutcome one = detail::run_test_module(client, parts[i], program);
    all.compile_ms += one.compile_ms;
    all.run_ms += one.run_ms;
    if (one.verdict == Verdict::kPass) continue;
    const std::string where = str_cat("part ", i + 1, " of ", parts.size(), ": ", one.detail);
    if (one.verdict == Verdict::kFail) {
      all.verdict = Verdict::kFail;
      all.detail = where;
      return all;
    }
    // The first skip, or else the first unchecked part, names the file's verdict.
    if (all.verdict == Verdict::kPass || (all.verdict == Verdict::kUnchecked && one.verdict == Verdict::kSkip)) {
      all.verdict = one.verdict;
      all.detail = where;
    }
  }
  return all;
}

}  // namespace pjrt_lite::stablehlo
