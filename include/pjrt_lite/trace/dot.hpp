#pragma once
// Programs as pictures: a Graph, or a compiled executable with its kernels (fused groups) as
// clusters, in Graphviz DOT. Render with `dot -Tsvg program.dot -o program.svg`.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/printer.hpp"

namespace pjrt_lite::inline v0_1::trace {

namespace detail {

/// `text` as the inside of a DOT string: quotes and backslashes escaped, newlines as "\n".
inline std::string dot_escape(std::string_view text, std::size_t max_length = 120) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == max_length) {
      out += "...";
      break;
    }
    const char c = text[i];
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

/// One DOT node per IR node ("n<i>"), one per output ("out<k>"), edges from operands; the
/// nodes of each kernel in `node_kernel` (>= 0) inside a cluster labelled with its line of
/// `kernel_names`.
inline std::string graph_to_dot(const Graph& g, std::span<const std::int32_t> node_kernel,
                                std::span<const std::string_view> kernel_names) {
  std::string out = str_cat("digraph \"", dot_escape(g.name()), "\" {\n");
  out += "  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"monospace\", fontsize=10];\n";
  out += "  edge [fontname=\"monospace\", fontsize=9];\n";
  auto node_line = [&](std::int64_t i) {
    const Node& n = g.node(i);
    std::string label = str_cat("%", i, " = ", op_name(n.op));
    if (std::string attrs = pjrt_lite::detail::attributes_text(n); !attrs.empty())
      label += str_cat(" {", attrs, "}");
    for (const Shape& s : n.results) label += str_cat("\n", s);
    std::string style;
    if (n.op == OpCode::kParameter)
      style = ", shape=ellipse, style=filled, fillcolor=\"#dbe8f6\"";
    else if (n.op == OpCode::kConstant)
      style = ", shape=note";
    return str_cat("n", i, " [label=\"", dot_escape(label), "\"", style, "];\n");
  };
  std::vector<bool> placed(static_cast<std::size_t>(g.num_nodes()), false);
  for (std::size_t k = 0; k < kernel_names.size(); ++k) {
    std::string members;
    for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
      if (static_cast<std::size_t>(i) >= node_kernel.size() ||
          node_kernel[static_cast<std::size_t>(i)] != static_cast<std::int32_t>(k))
        continue;
      members += "    " + node_line(i);
      placed[static_cast<std::size_t>(i)] = true;
    }
    if (members.empty()) continue;
    const bool fused = kernel_names[k].find("fusion[") != std::string_view::npos;
    out += str_cat("  subgraph cluster_", k, " {\n    label=\"kernel ", k, ": ",
                   dot_escape(kernel_names[k]),
                   "\";\n    fontname=\"monospace\"; fontsize=9; style=filled; fillcolor=\"",
                   fused ? "#fff3d6" : "#eeeeee", "\";\n", members, "  }\n");
  }
  for (std::int64_t i = 0; i < g.num_nodes(); ++i)
    if (!placed[static_cast<std::size_t>(i)]) out += "  " + node_line(i);
  for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    for (std::size_t k = 0; k < n.operands.size(); ++k) {
      const Value v = n.operands[k];
      out += str_cat("  n", v.node, " -> n", i);
      if (n.operands.size() > 1 || v.index > 0) {
        out += " [label=\"";
        if (v.index > 0) out += str_cat("#", v.index, " ");
        out += str_cat(k, "\"]");
      }
      out += ";\n";
    }
  }
  for (std::size_t k = 0; k < g.outputs().size(); ++k) {
    const Value v = g.outputs()[k];
    out += str_cat("  out", k, " [label=\"output ", k,
                   "\", shape=ellipse, style=filled, fillcolor=\"#dff0d8\"];\n");
    out += str_cat("  n", v.node, " -> out", k, ";\n");
  }
  out += "}\n";
  return out;
}

}  // namespace detail

/// `graph` as a DOT digraph: one node per op (its value, op name, attributes and result
/// shapes), parameters as blue ellipses, an edge per operand (labelled with the operand
/// index where an op has several), and a green node per output. Regions (reduce bodies) are
/// not drawn.
inline std::string to_dot(const Graph& graph) { return detail::graph_to_dot(graph, {}, {}); }

/// A compiled executable's optimized graph as DOT, each kernel a cluster labelled with its
/// line of the optimized program: fused element-wise groups in yellow, other kernels in
/// grey. For executables that expose optimized_graph(), node_kernels() and kernel_names()
/// (the CPU client's; a Traced one through inner()).
template <class X>
requires requires(const X& x) {
  { x.optimized_graph() } -> std::convertible_to<const Graph&>;
  x.node_kernels();
  x.kernel_names();
}
std::string to_dot(const X& executable) {
  const auto kernels = executable.kernel_names();
  const std::vector<std::string_view> names(kernels.begin(), kernels.end());
  return detail::graph_to_dot(executable.optimized_graph(), executable.node_kernels(), names);
}

}  // namespace pjrt_lite::trace
