#pragma once
// The reference backend: a plain interpreter over Literals. It is the oracle every other
// backend is differentially tested against and the evaluator transforms use for constant
// folding, so it is written to be obviously correct rather than fast: per-element loops over
// multi-indices, one small function per op, the spec's formulas spelled out.
//
// Every op of the IR runs for every element type shape inference accepts, with one
// exception: compare with GE/GT/LE/LT on complex numbers (see eval_compare). On a verified
// graph nothing crashes: what has no meaning here is UNIMPLEMENTED, naming the op and type.
//
//   StatusOr<std::vector<Literal>> out = reference::evaluate(graph, args);
//
// Pieces: scalar_ops.hpp (what each op does to one element), elementwise.hpp (those mapped
// over literals), data_movement.hpp (ops that only move elements), index.hpp (walking
// multi-indices), gather.hpp, scatter.hpp; eval_node.hpp (reduce, dot_general and the
// dispatch over ops); the graph walk and the entry points are here.

#include <algorithm>
#include <thread>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/reference/collectives.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/compiled_once.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"
#include "pjrt_lite/ir/verifier.hpp"

// With PJRT_LITE_CPU_EXTERN_KERNELS the op implementations are compiled once, in the
// translation unit that includes <pjrt_lite/cpu_instantiate.hpp>; elsewhere eval_node is only
// declared (see cpu_instantiate.hpp).

namespace pjrt_lite::inline v0_1::reference {

namespace detail {

inline StatusOr<std::vector<Literal>> run_graph(const Graph& graph,
                                                std::span<const Literal* const> args);

/// One node's results from its operands, which are row-major literals of the shapes the
/// node was inferred from; parameters are bound by run_graph, not here. Where every op for
/// every element type gets instantiated: defined in eval_node.hpp.
PJRT_LITE_COMPILED_ONCE StatusOr<std::vector<Literal>> eval_node(
    const Node& node, std::span<const Literal* const> operands);

/// Runs a verified graph on row-major arguments of its parameter shapes, in parameter-number
/// order. Nothing is re-checked: evaluate() and reduce's body are the callers.
inline StatusOr<std::vector<Literal>> run_graph(const Graph& graph,
                                                std::span<const Literal* const> args) {
  const auto count = static_cast<std::size_t>(graph.num_nodes());
  std::vector<const Literal*> arguments_by_node(count, nullptr);
  for (std::size_t k = 0; k < graph.parameters().size(); ++k)
    arguments_by_node[static_cast<std::size_t>(graph.parameters()[k].node)] = args[k];
  std::vector<std::vector<Literal>> values(count);
  auto value_of = [&](Value v) -> const Literal* {
    const auto node = static_cast<std::size_t>(v.node);
    if (arguments_by_node[node] != nullptr) return arguments_by_node[node];
    return &values[node][static_cast<std::size_t>(v.index)];
  };
  for (std::size_t i = 0; i < count; ++i) {
    const Node& node = graph.node(static_cast<std::int64_t>(i));
    if (node.op == OpCode::kParameter) continue;
    std::vector<const Literal*> operands;
    for (Value v : node.operands) operands.push_back(value_of(v));
    StatusOr<std::vector<Literal>> results = eval_node(node, operands);
    if (!results.ok())
      return results.status().with_context(str_cat("graph '", graph.name(), "': node %", i));
    values[i] = std::move(results).value();
  }
  std::vector<Literal> outputs;
  for (Value v : graph.outputs()) outputs.push_back(*value_of(v));
  return outputs;
}

}  // namespace detail

/// Runs `graph` on `args` (one Literal per parameter, in parameter-number order; each must
/// match the parameter's shape, else INVALID_ARGUMENT naming the argument index, expected
/// and actual shape). Returns one Literal per graph output, in the default row-major layout.
/// Arguments in another layout are read through it. The graph is verified first, so any
/// graph is safe to pass. Thread-safe: it only reads its inputs.
inline StatusOr<std::vector<Literal>> evaluate(const Graph& graph, std::span<const Literal> args) {
  PJRT_LITE_RETURN_IF_ERROR(verify(graph));
  if (static_cast<std::int64_t>(args.size()) != graph.num_parameters())
    return invalid_argument_error(str_cat("evaluate: graph '", graph.name(), "' takes ",
                                          graph.num_parameters(), " argument(s), got ",
                                          args.size()));
  std::vector<Literal> relaid;  // row-major copies of the arguments in other layouts
  relaid.reserve(args.size());  // no reallocation: `pointers` point into it
  std::vector<const Literal*> pointers;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const Shape& expected = graph.shape(graph.parameters()[k]);
    if (!args[k].shape().same_type_and_dims(expected))
      return invalid_argument_error(str_cat("evaluate: argument ", k, " has shape ",
                                            args[k].shape(), " but parameter ", k, " of graph '",
                                            graph.name(), "' has shape ", expected));
    if (args[k].shape().has_default_layout()) {
      pointers.push_back(&args[k]);
    } else {
      relaid.push_back(args[k].with_default_layout());
      pointers.push_back(&relaid.back());
    }
  }
  return detail::run_graph(graph, pointers);
}

/// Runs a grid of num_replicas x num_partitions processes, process (r, p) running
/// `programs[r * num_partitions + p]` on `args[r * num_partitions + p]`, each on a thread of
/// its own; their collectives meet (collectives.hpp). Returns each process's outputs, in the
/// same order. The first failure of any process is the result (INVALID_ARGUMENT for
/// mismatched groups or shapes, DEADLINE_EXCEEDED for a group member that never arrives
/// within `options.timeout`). Thread-safe.
inline StatusOr<std::vector<std::vector<Literal>>> evaluate_parallel(
    std::span<const Graph* const> programs, std::span<const std::vector<Literal>> args,
    const ParallelOptions& options) {
  const std::int64_t processes = options.num_replicas * options.num_partitions;
  if (options.num_replicas < 1 || options.num_partitions < 1)
    return invalid_argument_error(str_cat("evaluate_parallel: a grid of ", options.num_replicas,
                                          " x ", options.num_partitions, " processes"));
  if (static_cast<std::int64_t>(programs.size()) != processes ||
      static_cast<std::int64_t>(args.size()) != processes)
    return invalid_argument_error(str_cat("evaluate_parallel: ", programs.size(), " programs and ",
                                          args.size(), " argument lists for ", processes,
                                          " processes"));
  detail::Exchange exchange(options);
  std::vector<StatusOr<std::vector<Literal>>> results(static_cast<std::size_t>(processes),
                                                      StatusOr<std::vector<Literal>>(
                                                          internal_error("not run")));
  std::vector<std::thread> threads;
  for (std::int64_t k = 0; k < processes; ++k)
    threads.emplace_back([&, k] {
      detail::ProcessContext process{&exchange, {k / options.num_partitions, k % options.num_partitions}, {}};
      detail::current_process = &process;
      const auto i = static_cast<std::size_t>(k);
      results[i] = programs[i] == nullptr
                       ? StatusOr<std::vector<Literal>>(invalid_argument_error("null program"))
                       : evaluate(*programs[i], args[i]);
      detail::current_process = nullptr;
      if (!results[i].ok())
        exchange.fail(results[i].status().with_context(
            str_cat("process (", process.id.first, ", ", process.id.second, ")")));
    });
  for (std::thread& t : threads) t.join();
  PJRT_LITE_RETURN_IF_ERROR(exchange.first_error().with_context("evaluate_parallel"));
  std::vector<std::vector<Literal>> out;
  for (auto& r : results) out.push_back(std::move(r).value());
  return out;
}

/// evaluate_parallel with the same program on every process.
inline StatusOr<std::vector<std::vector<Literal>>> evaluate_parallel(
    const Graph& program, std::span<const std::vector<Literal>> args,
    const ParallelOptions& options) {
  std::vector<const Graph*> programs(args.size(), &program);
  return evaluate_parallel(programs, args, options);
}

/// Evaluates one node given its operand literals, for constant folding by transforms.
/// The operands' shapes must be the ones the node was built from (checked by inferring the
/// node's results again, else INVALID_ARGUMENT); other layouts are read through. A
/// parameter has no value on its own: INVALID_ARGUMENT. Thread-safe.
inline StatusOr<std::vector<Literal>> evaluate_node(const Node& node,
                                                    std::span<const Literal* const> operands) {
  if (!is_valid(node.op))
    return invalid_argument_error(
        str_cat("evaluate_node: invalid opcode (enum value ", static_cast<int>(node.op), ")"));
  if (node.op == OpCode::kParameter)
    return invalid_argument_error(
        "evaluate_node: a parameter has a value only inside the evaluation of a graph");
  std::vector<Shape> shapes;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    if (operands[k] == nullptr)
      return invalid_argument_error(
          str_cat("evaluate_node: ", op_name(node.op), ": operand ", k, " is null"));
    shapes.push_back(operands[k]->shape().with_default_layout());
  }
  std::vector<Signature> signatures;
  for (const Graph& body : node.bodies) {
    PJRT_LITE_RETURN_IF_ERROR(verify(body).with_context("evaluate_node"));
    signatures.push_back(body.signature());
  }
  StatusOr<std::vector<Shape>> inferred = infer_shapes(node.op, shapes, node.attrs, signatures);
  if (!inferred.ok()) return inferred.status().with_context("evaluate_node");
  if (*inferred != node.results) {
    std::string got, want;
    for (const Shape& s : *inferred) got += str_cat(got.empty() ? "" : ", ", s);
    for (const Shape& s : node.results) want += str_cat(want.empty() ? "" : ", ", s);
    return invalid_argument_error(str_cat("evaluate_node: ", op_name(node.op),
                                          ": the operands give result(s) ", got,
                                          " but the node has ", want));
  }
  std::vector<Literal> relaid;
  relaid.reserve(operands.size());
  std::vector<const Literal*> pointers;
  for (const Literal* operand : operands) {
    if (operand->shape().has_default_layout()) {
      pointers.push_back(operand);
    } else {
      relaid.push_back(operand->with_default_layout());
      pointers.push_back(&relaid.back());
    }
  }
  return detail::eval_node(node, pointers);
}

}  // namespace pjrt_lite::reference

#if !defined(PJRT_LITE_CPU_EXTERN_KERNELS)
#include "pjrt_lite/backends/reference/eval_node.hpp"
#endif
