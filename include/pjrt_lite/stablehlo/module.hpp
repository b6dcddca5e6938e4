#pragma once
// What parse_module returns: a StableHLO module as IR graphs, one per function, plus the
// checks that conformance programs make with `stablehlo.custom_call @check.expect_*`.
//
// The IR has no call op, so every function's graph has its calls already inlined: each
// Graph stands alone. The checks a function makes (its own and those of the functions it
// calls) are not ops of the graph either; the values they look at become extra outputs of
// the function's graph, after its own results:
//
//   graph.outputs() = [result 0 .. result n-1, check 0's operands..., check 1's operands...]
//
// so a runner compiles the graph once and finds every checked value among the outputs.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/transforms/spmd.hpp"

namespace pjrt_lite::inline v0_1::stablehlo {

/// What a check compares. The StableHLO interpreter's meanings (see the corpus README):
/// kEq: every element equal (NaN equals NaN); kClose: within a few ULP, non-finite values
/// count as close; kAlmostEq: within an absolute tolerance (0.001 by default).
enum class CheckKind : std::uint8_t { kEq, kClose, kAlmostEq };

/// "expect_eq", "expect_close", "expect_almost_eq".
constexpr std::string_view check_kind_name(CheckKind k) {
  switch (k) {
    case CheckKind::kEq: return "expect_eq";
    case CheckKind::kClose: return "expect_close";
    case CheckKind::kAlmostEq: return "expect_almost_eq";
  }
  return "invalid";
}

/// One `check.expect_*` call: `actual` against `expected`, which is either a second value
/// of the graph or (for the *_const variants) a constant.
struct Check {
  CheckKind kind = CheckKind::kEq;
  /// The call's target as written, e.g. "check.expect_close" or "check.expect_eq_const".
  std::string target;
  /// The checked value, as a value of the function's graph.
  Value actual;
  /// The value it must match; invalid for the *_const variants.
  Value expected;
  /// For the *_const variants: the literal `actual` must match.
  std::optional<Literal> expected_literal;
  /// Where actual (and expected, if it is a value) sit in the graph's outputs.
  std::int64_t actual_output = -1;
  std::int64_t expected_output = -1;
  /// kAlmostEq's absolute tolerance (kAlmostEqTolerance unless the check says otherwise).
  double tolerance = 1e-3;
  /// The call's other attributes (such as a tolerance), as written: name and value text.
  std::vector<std::pair<std::string, std::string>> attributes;
  /// The line of the call in the source.
  std::int64_t line = 0;
};

/// One `"interpreter.run_parallel"(%in...) {programs = [[@f, ...], ...]}` of a test program:
/// a grid of processes, process (r, p) running function programs[r][p]. The processes take
/// the operands in order, replica-major, each as many as its function has parameters, and
/// give their results in the same order. The operands are outputs of the caller's graph and
/// the results are parameters of it (numbered after the function's own), so a runner
/// evaluates the graph, runs the grid, and evaluates it again with the results bound.
struct ParallelRun {
  std::vector<std::vector<std::string>> programs;
  /// `infeed = [@f, ...]`: functions without arguments whose results, in order, are the
  /// entries of every process's infeed queue (an entry per function).
  std::vector<std::string> infeed = {};
  /// Where each operand sits in the graph's outputs.
  std::vector<std::int64_t> operand_outputs;
  /// The parameter number standing for each result.
  std::vector<std::int64_t> result_parameters;
  std::int64_t line = 0;
};

/// func.func visibility; `nested` reads as private.
enum class Visibility : std::uint8_t { kPublic, kPrivate };

/// One func.func of a module.
struct Function {
  std::string name;
  Visibility visibility = Visibility::kPublic;
  /// Calls inlined; outputs are the function's results followed by the checked values.
  Graph graph;
  /// How many of graph.outputs() are the function's own results.
  std::int64_t num_results = 0;
  /// The checks this function makes, including those of the functions it calls.
  std::vector<Check> checks;
  /// Per result, the memory kind an annotate_device_placement custom call asks for
  /// ("pinned_host", "device"), or empty. Recorded, not enforced: the graph computes every
  /// result in device memory, and a caller that wants the kind copies the result there.
  std::vector<std::string> result_memory_kinds;
  /// Per argument, the memory kind its `mhlo.memory_kind` names, or empty; an empty list
  /// where no argument names one.
  std::vector<std::string> argument_memory_kinds;
  /// The layouts JAX asks for (`mhlo.layout_mode = "{1,0}"` on an argument or result), minor
  /// to major, one list per argument and per result; empty lists where none names one
  /// ("default" and "auto" name none). Client::compile of text takes them as
  /// CompileOptions::argument_layouts and result_layouts.
  std::vector<std::vector<std::int64_t>> argument_layouts, result_layouts;
  /// The interpreter.run_parallel calls of a test program, in order.
  std::vector<ParallelRun> parallel_runs;
  /// How a program over several partitions splits its values: `mhlo.sharding` or
  /// `sdy.sharding` on arguments and results, `@Sharding` and `sdy.sharding_constraint` on
  /// values, shard_map's manual parts (`@SPMDFullToShardShape` / `@SPMDShardToFullShape`,
  /// `sdy.manual_computation`). num_partitions is the module's `mhlo.num_partitions` (1 when
  /// it does not say). In `graph` a manual part is taken with a dynamic_slice at the
  /// partition's offsets and made whole again with all_gathers, so the graph itself runs
  /// the same on every partition, each computing whole values; partition() makes the
  /// program in which each computes its parts (Client::compile of text does).
  ShardingPlan sharding;
};

/// A parsed module. Plain data; thread-compatible.
struct Module {
  /// `module @name`; empty when the module has no name or the text has no module op.
  std::string name;
  /// In the order of the source.
  std::vector<Function> functions;

  /// The function called `name`, or nullptr.
  [[nodiscard]] const Function* find(std::string_view name) const {
    for (const Function& f : functions)
      if (f.name == name) return &f;
    return nullptr;
  }
  /// The graph of function `name` (results then checked values), or NOT_FOUND.
  [[nodiscard]] StatusOr<Graph> function(std::string_view name) const {
    if (const Function* f = find(name)) return f->graph;
    return not_found_error(str_cat("the module has no function @", name));
  }
  /// The graph of @main.
  [[nodiscard]] StatusOr<Graph> main() const { return function("main"); }
};

}  // namespace pjrt_lite::stablehlo
