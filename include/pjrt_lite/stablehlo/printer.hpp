#pragma once
// IR to StableHLO text: to_stablehlo(graph) prints a module with one public `func.func
// @main` in the pretty form JAX prints, valid StableHLO that parse_stablehlo reads back to a
// graph with the same fingerprint (see parser.hpp for the one condition on parameter order).
//
//   module @affine {
//     func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
//       %1 = stablehlo.constant dense<1.0> : tensor<f32>
//       %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
//       %3 = stablehlo.add %arg0, %2 : tensor<2x3xf32>
//       return %3 : tensor<2x3xf32>
//     }
//   }
//
// Values are named after their nodes (%3; %arg<n> for parameter n), so a line of the text
// points at a node of the graph. Constants are exact: floats print as the shortest decimal
// that reads back to the same bits, or as hex bit patterns (NaN, inf, -0), and large
// constants as little-endian hex blobs. Reduce bodies print as `applies stablehlo.add` when
// they are that one op, else as a `reducer` region.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/stablehlo/detail/dense.hpp"
#include "pjrt_lite/stablehlo/detail/lapack_names.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1 {

namespace stablehlo::detail {

/// `module @name` needs a symbol: bare when it is an identifier, else quoted.
inline std::string symbol_text(std::string_view name) {
  bool bare = !name.empty() && (is_letter(name[0]) || name[0] == '_');
  for (char c : name) bare = bare && is_suffix_char(c);
  if (bare) return str_cat("@", name);
  std::string out = "@\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += '\\';
      append_hex(out, static_cast<unsigned char>(c), 2, HexCase::kUpper);
      continue;
    }
    out += c;
  }
  return out + "\"";
}

inline std::string int_list(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += str_cat(i ? ", " : "", v[i]);
  return out + "]";
}

/// True when `body` is what the parser makes of `applies stablehlo.<op>`: two rank-0
/// parameters of one dtype and that binary op on them, in order.
inline bool is_applies_body(const Graph& body, DType dtype, OpCode& op) {
  if (body.num_nodes() != 3 || body.outputs().size() != 1) return false;
  for (std::int64_t i = 0; i < 2; ++i) {
    const Node& p = body.node(i);
    if (p.op != OpCode::kParameter || p.attr<ParameterAttrs>().number != i ||
        p.shape() != Shape(dtype, {}))
      return false;
  }
  const Node& n = body.node(2);
  if (!is_binary(n.op) || n.operands.size() != 2 || n.operands[0] != Value{0, 0, 0} ||
      n.operands[1] != Value{1, 0, 0} || body.outputs()[0] != Value{2, 0, 0})
    return false;
  op = n.op;
  return true;
}

class Printer {
 public:
  std::string print(const Graph& g) {
    out_ = "module " + symbol_text(g.name().empty() ? "main" : g.name()) + " {\n";
    out_ += "  func.func public @main(";
    const std::vector<std::string> names = value_names(g, "");
    for (std::int64_t k = 0; k < g.num_parameters(); ++k) {
      const Value p = g.parameters()[static_cast<std::size_t>(k)];
      out_ += str_cat(k ? ", " : "", names[static_cast<std::size_t>(p.node)], ": ",
                      tensor_type_name(g.shape(p)));
    }
    out_ += ") -> (";
    for (std::size_t k = 0; k < g.outputs().size(); ++k)
      out_ += str_cat(k ? ", " : "", tensor_type_name(g.shape(g.outputs()[k])));
    out_ += ") {\n";
    print_nodes(g, "", "    ");
    print_return(g, "", "    ", "return");
    out_ += "  }\n}\n";
    return std::move(out_);
  }

 private:
  // One name per node: %<prefix>arg<n> for parameters, %<prefix><index> otherwise. Bodies
  // get their own prefix, because MLIR names must be unique across nested regions.
  // `parameter_names`, when given, names the parameters instead (a case branch's parameters
  // are values of the enclosing graph).
  static std::vector<std::string> value_names(const Graph& g, std::string_view prefix,
                                              std::span<const std::string> parameter_names = {}) {
    std::vector<std::string> names;
    for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
      const Node& n = g.node(i);
      if (n.op != OpCode::kParameter) {
        names.push_back(str_cat("%", prefix, i));
        continue;
      }
      const auto number = static_cast<std::size_t>(n.attr<ParameterAttrs>().number);
      names.push_back(number < parameter_names.size() ? parameter_names[number]
                                                      : str_cat("%", prefix, "arg", number));
    }
    return names;
  }

  static std::string use(const Graph& g, const std::vector<std::string>& names, Value v) {
    const std::string& base = names[static_cast<std::size_t>(v.node)];
    if (g.node(v).results.size() > 1) return str_cat(base, "#", v.index);
    return base;
  }

  void print_return(const Graph& g, std::string_view prefix, std::string_view indent,
                    std::string_view keyword, std::span<const std::string> parameter_names = {}) {
    const std::vector<std::string> names = value_names(g, prefix, parameter_names);
    out_ += str_cat(indent, keyword);
    for (std::size_t k = 0; k < g.outputs().size(); ++k)
      out_ += str_cat(k ? ", " : " ", use(g, names, g.outputs()[k]));
    if (!g.outputs().empty()) {
      out_ += " : ";
      for (std::size_t k = 0; k < g.outputs().size(); ++k)
        out_ += str_cat(k ? ", " : "", tensor_type_name(g.shape(g.outputs()[k])));
    }
    out_ += '\n';
  }

  void print_nodes(const Graph& g, std::string_view prefix, std::string_view indent,
                   std::span<const std::string> parameter_names = {}) {
    const std::vector<std::string> names = value_names(g, prefix, parameter_names);
    for (std::int64_t i = 0; i < g.num_nodes(); ++i) {
      const Node& n = g.node(i);
      if (n.op == OpCode::kParameter) continue;
      out_ += indent;
      if (!n.results.empty()) {  // a case or if may return nothing
        out_ += names[static_cast<std::size_t>(i)];
        if (n.results.size() > 1) out_ += str_cat(":", n.results.size());
        out_ += " = ";
      }
      print_node(g, names, n, str_cat(prefix, "b", i, "_"), indent);
      out_ += '\n';
    }
  }

  std::string operand_list(const Graph& g, const std::vector<std::string>& names, const Node& n,
                           std::size_t first = 0) {
    std::string s;
    for (std::size_t k = first; k < n.operands.size(); ++k)
      s += str_cat(k > first ? ", " : "", use(g, names, n.operands[k]));
    return s;
  }

  static std::string function_type(const Graph& g, const Node& n) {
    std::string s = "(";
    for (std::size_t k = 0; k < n.operands.size(); ++k)
      s += str_cat(k ? ", " : "", tensor_type_name(g.shape(n.operands[k])));
    s += ") -> ";
    if (n.results.size() == 1) return s + tensor_type_name(n.results[0]);
    s += "(";
    for (std::size_t k = 0; k < n.results.size(); ++k)
      s += str_cat(k ? ", " : "", tensor_type_name(n.results[k]));
    return s + ")";
  }

  /// `: T` when every operand has the result's type, else the function type.
  static std::string same_or_function_type(const Graph& g, const Node& n) {
    for (Value v : n.operands)
      if (!g.shape(v).same_type_and_dims(n.results[0])) return function_type(g, n);
    return tensor_type_name(n.results[0]);
  }

  /// A LAPACK operand's or result's layout: `dense<[0, 1]> : tensor<2xindex>`.
  static std::string lapack_layout(const Shape& s, std::int64_t matrix_rank) {
    const std::vector<std::int64_t> order = detail::lapack_layout(s.rank(), matrix_rank);
    std::string text = order.size() == 1 ? std::to_string(order[0]) : "[";
    if (order.size() != 1) {
      for (std::size_t k = 0; k < order.size(); ++k) text += str_cat(k ? ", " : "", order[k]);
      text += "]";
    }
    return str_cat("dense<", order.empty() ? "" : text, "> : tensor<", order.size(), "xindex>");
  }

  /// `stablehlo.custom_call @lapack_sgetrf_ffi(%x) {mhlo.backend_config = {...},
  /// operand_layouts = [...], result_layouts = [...]} : (T) -> (...)`, as jax exports it.
  void print_lapack_call(const Graph& g, const std::vector<std::string>& names, const Node& n) {
    const LinalgAttrs& a = n.attr<LinalgAttrs>();
    const DType t = g.shape(n.operands[0]).dtype();
    std::string config;
    for (const LapackFlag& f : lapack_flags(a)) {
      config += str_cat(config.empty() ? "" : ", ", f.key, " = ");
      switch (f.kind) {
        case LapackFlag::Kind::kU8: config += str_cat(f.value, " : ui8"); break;
        case LapackFlag::Kind::kI32: config += str_cat(f.value, " : i32"); break;
        case LapackFlag::Kind::kBool: config += f.value ? "true" : "false"; break;
      }
    }
    std::int64_t rank = 0;
    for (Value v : n.operands) rank = std::max(rank, g.shape(v).rank());
    std::string operand_layouts, result_layouts;
    for (Value v : n.operands)
      operand_layouts += str_cat(operand_layouts.empty() ? "" : ", ", lapack_layout(g.shape(v), rank));
    for (const Shape& s : n.results)
      result_layouts += str_cat(result_layouts.empty() ? "" : ", ", lapack_layout(s, rank));
    std::string types = n.results.size() == 1 ? tensor_type_name(n.results[0]) : "(";
    if (n.results.size() != 1) {
      for (std::size_t k = 0; k < n.results.size(); ++k)
        types += str_cat(k ? ", " : "", tensor_type_name(n.results[k]));
      types += ")";
    }
    std::string in_types;
    for (Value v : n.operands)
      in_types += str_cat(in_types.empty() ? "" : ", ", tensor_type_name(g.shape(v)));
    out_ += str_cat("stablehlo.custom_call @", detail::lapack_target_name(a.routine, t), "(",
                    operand_list(g, names, n), ") {mhlo.backend_config = {", config,
                    "}, operand_layouts = [", operand_layouts, "], result_layouts = [",
                    result_layouts, "]} : (", in_types, ") -> ", types);
  }

  void print_node(const Graph& g, const std::vector<std::string>& names, const Node& n,
                  const std::string& body_prefix, std::string_view indent) {
    const std::string name = str_cat(op_dialect(n.op), ".", op_name(n.op));
    if (n.op == OpCode::kTopK) {
      // CHLO's form: `chlo.top_k(%x, k = 3) : T -> (T, tensor<...xi32>)`.
      out_ += str_cat(name, "(", operand_list(g, names, n), ", k = ", n.attr<TopKAttrs>().k,
                      ") : ", tensor_type_name(g.shape(n.operands[0])), " -> (",
                      tensor_type_name(n.results[0]), ", ", tensor_type_name(n.results[1]), ")");
      return;
    }
    if (n.op == OpCode::kLinalg) {
      print_lapack_call(g, names, n);
      return;
    }
    if (is_process_position(n.op)) {
      out_ += str_cat("\"", name, "\"() : () -> ", tensor_type_name(n.results[0]));
      return;
    }
    if (is_collective(n.op)) {
      print_collective(g, names, n, n.attr<CollectiveAttrs>(), body_prefix, indent);
      return;
    }
    if (is_token_op(n.op)) {
      print_token_op(g, names, n);
      return;
    }
    if (is_chlo(n.op)) {
      // CHLO's form: `chlo.erf %x : T -> T`, `chlo.next_after %x, %y : T, T -> T`.
      std::string types;
      for (Value v : n.operands)
        types += str_cat(types.empty() ? "" : ", ", tensor_type_name(g.shape(v)));
      out_ += str_cat(name, " ", operand_list(g, names, n), " : ", types, " -> ",
                      tensor_type_name(n.results[0]));
      return;
    }
    if (is_unary(n.op) || is_binary(n.op) || n.op == OpCode::kClamp || n.op == OpCode::kConvert ||
        n.op == OpCode::kBitcastConvert || n.op == OpCode::kReshape ||
        n.op == OpCode::kDynamicUpdateSlice) {
      // complex's operands are its result's parts, so its short form is the result type.
      const std::string type =
          n.op == OpCode::kComplex ? function_type(g, n) : same_or_function_type(g, n);
      out_ += str_cat(name, " ", operand_list(g, names, n), " : ", type);
      return;
    }
    std::visit(
        [&](const auto& a) {
          using A = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<A, ConstantAttrs>) {
            out_ +=
                str_cat(name, " ", dense_text(a.literal()), " : ", tensor_type_name(n.results[0]));
          } else if constexpr (std::is_same_v<A, IotaAttrs>) {
            out_ +=
                str_cat(name, " dim = ", a.iota_dimension, " : ", tensor_type_name(n.results[0]));
          } else if constexpr (std::is_same_v<A, CompareAttrs>) {
            out_ += str_cat(name, "  ", comparison_direction_name(a.direction), ", ",
                            operand_list(g, names, n));
            if (a.type != ComparisonType::kNotype)
              out_ += str_cat(",  ", comparison_type_name(a.type));
            out_ += str_cat(" : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, BroadcastInDimAttrs>) {
            out_ +=
                str_cat(name, " ", operand_list(g, names, n),
                        ", dims = ", int_list(a.broadcast_dimensions), " : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, TransposeAttrs>) {
            out_ += str_cat(name, " ", operand_list(g, names, n),
                            ", dims = ", int_list(a.permutation), " : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, ReverseAttrs>) {
            out_ +=
                str_cat(name, " ", operand_list(g, names, n), ", dims = ", int_list(a.dimensions),
                        " : ", same_or_function_type(g, n));
          } else if constexpr (std::is_same_v<A, TriangularSolveAttrs>) {
            // Only the generic form exists; MLIR prints the attributes in alphabetical order.
            out_ += str_cat("\"stablehlo.triangular_solve\"(", operand_list(g, names, n),
                            ") <{left_side = ", a.left_side ? "true" : "false",
                            ", lower = ", a.lower ? "true" : "false",
                            ", transpose_a = #stablehlo<transpose ", transpose_name(a.transpose_a),
                            ">, unit_diagonal = ", a.unit_diagonal ? "true" : "false",
                            "}> : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, RngBitGeneratorAttrs>) {
            out_ += str_cat(name, " ", operand_list(g, names, n), ", algorithm = ",
                            rng_algorithm_name(a.algorithm), " : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, FftAttrs>) {
            out_ += str_cat(name, " ", operand_list(g, names, n), ", type = ",
                            fft_type_name(a.fft_type), ", length = ", int_list(a.fft_length),
                            " : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, SliceAttrs>) {
            out_ += str_cat(name, " ", operand_list(g, names, n), " [");
            for (std::size_t d = 0; d < a.start_indices.size(); ++d) {
              out_ += str_cat(d ? ", " : "", a.start_indices[d], ":", a.limit_indices[d]);
              if (d < a.strides.size() && a.strides[d] != 1) out_ += str_cat(":", a.strides[d]);
            }
            out_ += str_cat("] : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, ConcatenateAttrs>) {
            out_ += str_cat(name, " ", operand_list(g, names, n), ", dim = ", a.dimension, " : ",
                            function_type(g, n));
          } else if constexpr (std::is_same_v<A, PadAttrs>) {
            out_ += str_cat(
                name, " ", operand_list(g, names, n), ", low = ", int_list(a.edge_padding_low),
                ", high = ", int_list(a.edge_padding_high),
                ", interior = ", int_list(a.interior_padding), " : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, DynamicSliceAttrs>) {
            out_ += str_cat(name, " ", operand_list(g, names, n),
                            ", sizes = ", int_list(a.slice_sizes), " : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, DotDimensionNumbers>) {
            out_ += str_cat(name, " ", operand_list(g, names, n));
            if (!a.lhs_batching_dimensions.empty() || !a.rhs_batching_dimensions.empty())
              out_ += str_cat(", batching_dims = ", int_list(a.lhs_batching_dimensions), " x ",
                              int_list(a.rhs_batching_dimensions));
            out_ += str_cat(", contracting_dims = ", int_list(a.lhs_contracting_dimensions), " x ",
                            int_list(a.rhs_contracting_dimensions), " : ", function_type(g, n));
          } else if constexpr (std::is_same_v<A, ReduceAttrs>) {
            print_reduce(g, names, n, a, body_prefix, indent);
          } else if constexpr (std::is_same_v<A, ScatterAttrs>) {
            print_scatter(g, names, n, a, body_prefix, indent);
          } else if constexpr (std::is_same_v<A, GatherAttrs>) {
            print_gather(g, names, n, a);
          } else if constexpr (std::is_same_v<A, WindowAttrs>) {
            print_window_op(g, names, n, a, body_prefix, indent);
          } else if constexpr (std::is_same_v<A, ConvolutionAttrs>) {
            print_convolution(g, names, n, a);
          } else if constexpr (std::is_same_v<A, SortAttrs>) {
            print_sort(g, names, n, a, body_prefix, indent);
          } else if constexpr (std::is_same_v<A, ReducePrecisionAttrs>) {
            out_ += str_cat(name, " ", operand_list(g, names, n), ", format = e", a.exponent_bits,
                            "m", a.mantissa_bits, " : ", tensor_type_name(n.results[0]));
          } else if (is_control_flow(n.op)) {
            print_control_flow(g, names, n, body_prefix, indent);
          } else if (n.op == OpCode::kSelect) {
            // `: pred type, result type`, as JAX prints it: the branches have the result's.
            out_ += str_cat(name, " ", operand_list(g, names, n), " : ",
                            tensor_type_name(g.shape(n.operands[0])), ", ",
                            tensor_type_name(n.results[0]));
          } else {
            // Anything a future op adds: the operands and the function type.
            out_ += str_cat(name, " ", operand_list(g, names, n), " : ", function_type(g, n));
          }
        },
        n.attrs);
  }

  void print_reduce(const Graph& g, const std::vector<std::string>& names, const Node& n,
                    const ReduceAttrs& a, const std::string& body_prefix, std::string_view indent) {
    const std::size_t inputs = n.operands.size() / 2;
    out_ += "stablehlo.reduce";
    for (std::size_t i = 0; i < inputs; ++i)
      out_ += str_cat(i ? ", " : "", "(", use(g, names, n.operands[i]),
                      " init: ", use(g, names, n.operands[inputs + i]), ")");
    const Graph& body = n.bodies[0];
    OpCode applies = OpCode::kAdd;
    if (inputs == 1 && is_applies_body(body, n.results[0].dtype(), applies)) {
      out_ += str_cat(" applies stablehlo.", op_name(applies),
                      " across dimensions = ", int_list(a.dimensions), " : ", function_type(g, n));
      return;
    }
    out_ += str_cat(" across dimensions = ", int_list(a.dimensions), " : ", function_type(g, n));
    // reducer(%acc_i: T, %x_i: T) per input; the body's parameters are the accumulators
    // (0..N-1), then the elements (N..2N-1).
    out_ += str_cat("\n", indent, " reducer");
    const std::vector<std::string> body_names = value_names(body, body_prefix);
    for (std::size_t i = 0; i < inputs; ++i) {
      const Value acc = body.parameters()[i];
      const Value elem = body.parameters()[inputs + i];
      out_ += str_cat(i ? " " : "", "(", body_names[static_cast<std::size_t>(acc.node)], ": ",
                      tensor_type_name(body.shape(acc)), ", ",
                      body_names[static_cast<std::size_t>(elem.node)], ": ",
                      tensor_type_name(body.shape(elem)), ")");
    }
    out_ += " {\n";
    const std::string inner = str_cat(indent, "  ");
    print_nodes(body, body_prefix, inner);
    print_return(body, body_prefix, inner, "stablehlo.return");
    out_ += str_cat(indent, "}");
  }

  /// scatter has only the generic form: `"stablehlo.scatter"(...) <{...}> ({ ^bb0(...): ... })`.
  /// Fields at their defaults (empty lists, index_vector_dim 0, false flags) are left out, as
  /// MLIR prints them.
  void print_scatter(const Graph& g, const std::vector<std::string>& names, const Node& n,
                     const ScatterAttrs& a, const std::string& body_prefix,
                     std::string_view indent) {
    std::string dn;
    const std::pair<std::string_view, const std::vector<std::int64_t>*> fields[5] = {
        {"update_window_dims", &a.update_window_dims},
        {"inserted_window_dims", &a.inserted_window_dims},
        {"input_batching_dims", &a.input_batching_dims},
        {"scatter_indices_batching_dims", &a.scatter_indices_batching_dims},
        {"scatter_dims_to_operand_dims", &a.scatter_dims_to_operand_dims}};
    for (const auto& [key, list] : fields)
      if (!list->empty()) dn += str_cat(dn.empty() ? "" : ", ", key, " = ", int_list(*list));
    if (a.index_vector_dim != 0)
      dn += str_cat(dn.empty() ? "" : ", ", "index_vector_dim = ", a.index_vector_dim);
    out_ += str_cat("\"stablehlo.scatter\"(", operand_list(g, names, n),
                    ") <{scatter_dimension_numbers = #stablehlo.scatter<", dn, ">");
    if (a.indices_are_sorted) out_ += ", indices_are_sorted = true";
    if (a.unique_indices) out_ += ", unique_indices = true";
    out_ += "}> ({\n";
    print_block_header(n.bodies[0], body_prefix, indent);
    out_ += str_cat(indent, "}) : ", function_type(g, n));
  }

  /// The collectives in the generic form, attributes in MLIR's (alphabetical) order:
  /// `"stablehlo.all_reduce"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1,
  /// type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({ ^bb0(...): ... }) :
  /// (T) -> T`. A channel handle of 0 and type 0 and false flags are left out.
  /// num_partitions is no attribute of StableHLO's: the reader takes it back from the
  /// result type.
  void print_collective(const Graph& g, const std::vector<std::string>& names, const Node& n,
                        const CollectiveAttrs& a, const std::string& body_prefix,
                        std::string_view indent) {
    std::vector<std::string> attrs;
    const bool permute = n.op == OpCode::kCollectivePermute;
    std::string groups = "dense<";
    if (a.groups.empty()) {
      groups += ">";
    } else {
      groups += "[";
      for (std::size_t r = 0; r < a.group_count(); ++r) {
        const auto row = a.group(r);
        groups += str_cat(r ? ", " : "", int_list(std::vector<std::int64_t>(row.begin(), row.end())));
      }
      groups += "]>";
    }
    groups += str_cat(" : tensor<", a.group_count(), "x", a.group_size, "xi64>");
    if (n.op == OpCode::kAllGather) attrs.push_back(str_cat("all_gather_dim = ", a.dimension, " : i64"));
    if (a.channel_id != 0 || a.channel_type != 0)
      attrs.push_back(str_cat("channel_handle = #stablehlo.channel_handle<handle = ", a.channel_id,
                              ", type = ", a.channel_type, ">"));
    if (n.op == OpCode::kAllToAll) attrs.push_back(str_cat("concat_dimension = ", a.concat_dimension, " : i64"));
    if (a.has_dynamic_root) attrs.push_back("has_dynamic_root");
    if (!permute) attrs.push_back("replica_groups = " + groups);
    if (n.op == OpCode::kReduceScatter) attrs.push_back(str_cat("scatter_dimension = ", a.dimension, " : i64"));
    if (permute) attrs.push_back("source_target_pairs = " + groups);
    if (n.op == OpCode::kAllToAll) {
      attrs.push_back(str_cat("split_count = ", a.split_count, " : i64"));
      attrs.push_back(str_cat("split_dimension = ", a.dimension, " : i64"));
    }
    if (a.use_global_device_ids) attrs.push_back("use_global_device_ids");
    out_ += str_cat("\"stablehlo.", op_name(n.op), "\"(", operand_list(g, names, n), ") <{");
    for (std::size_t i = 0; i < attrs.size(); ++i) out_ += str_cat(i ? ", " : "", attrs[i]);
    out_ += "}>";
    if (!n.bodies.empty()) {
      out_ += " ({\n";
      print_block_header(n.bodies[0], body_prefix, indent);
      out_ += str_cat(indent, "})");
    }
    out_ += str_cat(" : ", function_type(g, n));
  }

  /// after_all, send, recv, infeed and outfeed, in the generic form.
  void print_token_op(const Graph& g, const std::vector<std::string>& names, const Node& n) {
    std::vector<std::string> attrs;
    if (n.op != OpCode::kAfterAll) {
      const auto& a = n.attr<ChannelAttrs>();
      if (n.op == OpCode::kSend || n.op == OpCode::kRecv) {
        attrs.push_back(str_cat("channel_handle = #stablehlo.channel_handle<handle = ", a.channel_id,
                                ", type = ", a.channel_type, ">"));
        if (a.is_host_transfer) attrs.push_back("is_host_transfer = true");
        if (!a.source_target_pairs.empty()) {
          std::string pairs = "dense<[";
          for (std::size_t r = 0; r + 1 < a.source_target_pairs.size(); r += 2)
            pairs += str_cat(r ? ", " : "", "[", a.source_target_pairs[r], ", ", a.source_target_pairs[r + 1], "]");
          attrs.push_back(str_cat("source_target_pairs = ", pairs, "]> : tensor<", a.source_target_pairs.size() / 2,
                                  "x2xi64>"));
        }
      } else {
        std::string config;
        for (char c : a.config) {
          if (c == '"' || c == '\\') config += '\\';
          config += c;
        }
        attrs.push_back(str_cat(n.op == OpCode::kInfeed ? "infeed_config" : "outfeed_config", " = \"", config, "\""));
      }
    }
    out_ += str_cat("\"stablehlo.", op_name(n.op), "\"(", operand_list(g, names, n), ")");
    if (!attrs.empty()) {
      out_ += " {";
      for (std::size_t i = 0; i < attrs.size(); ++i) out_ += str_cat(i ? ", " : "", attrs[i]);
      out_ += "}";
    }
    out_ += str_cat(" : ", function_type(g, n));
  }

  /// sort has only the generic form: `"stablehlo.sort"(...) <{dimension = D : i64[, is_stable =
  /// true]}> ({ ^bb0(...): ... }) : type`.
  void print_sort(const Graph& g, const std::vector<std::string>& names, const Node& n,
                  const SortAttrs& a, const std::string& body_prefix, std::string_view indent) {
    out_ +=
        str_cat("\"stablehlo.sort\"(", operand_list(g, names, n), ") <{dimension = ", a.dimension,
                " : i64", a.is_stable ? ", is_stable = true" : "", "}> ({\n");
    print_block_header(n.bodies[0], body_prefix, indent);
    out_ += str_cat(indent, "}) : ", function_type(g, n));
  }

  /// gather has only the generic form; fields at their defaults are left out.
  void print_gather(const Graph& g, const std::vector<std::string>& names, const Node& n,
                    const GatherAttrs& a) {
    std::string dn;
    const std::pair<std::string_view, const std::vector<std::int64_t>*> fields[5] = {
        {"offset_dims", &a.offset_dims},
        {"collapsed_slice_dims", &a.collapsed_slice_dims},
        {"operand_batching_dims", &a.operand_batching_dims},
        {"start_indices_batching_dims", &a.start_indices_batching_dims},
        {"start_index_map", &a.start_index_map}};
    for (const auto& [key, list] : fields)
      if (!list->empty()) dn += str_cat(dn.empty() ? "" : ", ", key, " = ", int_list(*list));
    if (a.index_vector_dim != 0)
      dn += str_cat(dn.empty() ? "" : ", ", "index_vector_dim = ", a.index_vector_dim);
    std::string sizes;
    for (std::size_t i = 0; i < a.slice_sizes.size(); ++i)
      sizes += str_cat(i ? ", " : ": ", a.slice_sizes[i]);
    out_ += str_cat("\"stablehlo.gather\"(", operand_list(g, names, n),
                    ") <{dimension_numbers = #stablehlo.gather<", dn, ">");
    if (a.indices_are_sorted) out_ += ", indices_are_sorted = true";
    out_ += str_cat(", slice_sizes = array<i64", sizes, ">}> : ", function_type(g, n));
  }

  /// reduce_window and select_and_scatter have only the generic form: `"stablehlo.NAME"(...)
  /// <{...}> ({ ^bb0(...): ... }[, { ... }]) : type`, the attributes in MLIR's (alphabetical)
  /// order, those at their defaults (all 1, or padding all 0) left out.
  void print_window_op(const Graph& g, const std::vector<std::string>& names, const Node& n,
                       const WindowAttrs& a, const std::string& body_prefix,
                       std::string_view indent) {
    auto array = [](const std::vector<std::int64_t>& list) {
      std::string text = "array<i64";
      for (std::size_t i = 0; i < list.size(); ++i) text += str_cat(i ? ", " : ": ", list[i]);
      return text + ">";
    };
    auto all = [](const std::vector<std::int64_t>& list, std::int64_t v) {
      return std::ranges::all_of(list, [v](std::int64_t x) { return x == v; });
    };
    std::vector<std::string> attrs;
    if (!all(a.base_dilations, 1)) attrs.push_back("base_dilations = " + array(a.base_dilations));
    if (!all(a.padding_low, 0) || !all(a.padding_high, 0)) {
      std::string pad = "padding = dense<[";
      for (std::size_t d = 0; d < a.padding_low.size(); ++d)
        pad += str_cat(d ? ", " : "", "[", a.padding_low[d], ", ", a.padding_high[d], "]");
      attrs.push_back(str_cat(pad, "]> : tensor<", a.padding_low.size(), "x2xi64>"));
    }
    if (!all(a.window_dilations, 1))
      attrs.push_back("window_dilations = " + array(a.window_dilations));
    attrs.push_back("window_dimensions = " + array(a.window_dimensions));
    if (!all(a.window_strides, 1)) attrs.push_back("window_strides = " + array(a.window_strides));
    out_ += str_cat("\"stablehlo.", op_name(n.op), "\"(", operand_list(g, names, n), ") <{");
    for (std::size_t i = 0; i < attrs.size(); ++i) out_ += str_cat(i ? ", " : "", attrs[i]);
    out_ += "}> (";
    for (std::size_t k = 0; k < n.bodies.size(); ++k) {
      out_ += k ? ", {\n" : "{\n";
      print_block_header(n.bodies[k], body_prefix, indent);
      out_ += str_cat(indent, "}");
    }
    out_ += str_cat(") : ", function_type(g, n));
  }

  /// convolution in the pretty form JAX prints, the window entries at their defaults left
  /// out: `stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window =
  /// {stride = [2], pad = [[1, 1]], lhs_dilate = [2], rhs_dilate = [2]} {batch_group_count = 1
  /// : i64, feature_group_count = 1 : i64} : (...) -> ...`. A reversed window has no pretty
  /// spelling that every reader agrees on, so such a convolution prints in the generic form.
  void print_convolution(const Graph& g, const std::vector<std::string>& names, const Node& n,
                         const ConvolutionAttrs& a) {
    auto all = [](const std::vector<std::int64_t>& list, std::int64_t v) {
      return std::ranges::all_of(list, [v](std::int64_t x) { return x == v; });
    };
    std::string pad;
    for (std::size_t d = 0; d < a.padding_low.size() && d < a.padding_high.size(); ++d)
      pad += str_cat(d ? ", " : "", "[", a.padding_low[d], ", ", a.padding_high[d], "]");
    const std::string groups =
        str_cat("batch_group_count = ", a.batch_group_count,
                " : i64, feature_group_count = ", a.feature_group_count, " : i64");
    if (!all(a.window_reversal, 0)) {
      auto array = [](std::string_view type, const std::vector<std::int64_t>& list, bool bools) {
        std::string text = str_cat("array<", type);
        for (std::size_t i = 0; i < list.size(); ++i)
          text += str_cat(i ? ", " : ": ",
                          bools ? (list[i] != 0 ? "true" : "false") : std::to_string(list[i]));
        return text + ">";
      };
      // MLIR's (alphabetical) order.
      out_ += str_cat("\"stablehlo.convolution\"(", operand_list(g, names, n),
                      ") <{batch_group_count = ", a.batch_group_count,
                      " : i64, dimension_numbers = #stablehlo.conv<",
                      convolution_dimension_numbers_string(a),
                      ">, feature_group_count = ", a.feature_group_count,
                      " : i64, lhs_dilation = ", array("i64", a.lhs_dilation, false),
                      ", padding = dense<[", pad, "]> : tensor<", a.padding_low.size(),
                      "x2xi64>, rhs_dilation = ", array("i64", a.rhs_dilation, false),
                      ", window_reversal = ", array("i1", a.window_reversal, true),
                      ", window_strides = ", array("i64", a.window_strides, false),
                      "}> : ", function_type(g, n));
      return;
    }
    std::vector<std::string> window;
    if (!all(a.window_strides, 1)) window.push_back("stride = " + int_list(a.window_strides));
    if (!all(a.padding_low, 0) || !all(a.padding_high, 0)) window.push_back("pad = [" + pad + "]");
    if (!all(a.lhs_dilation, 1)) window.push_back("lhs_dilate = " + int_list(a.lhs_dilation));
    if (!all(a.rhs_dilation, 1)) window.push_back("rhs_dilate = " + int_list(a.rhs_dilation));
    out_ += str_cat("stablehlo.convolution(", operand_list(g, names, n),
                    ") dim_numbers = ", convolution_dimension_numbers_string(a), ", window = {");
    for (std::size_t i = 0; i < window.size(); ++i) out_ += str_cat(i ? ", " : "", window[i]);
    out_ += str_cat("} {", groups, "} : ", function_type(g, n));
  }

  /// while, case and if in the generic form: `"stablehlo.while"(%a, %b) ({ ^bb0(...): ...
  /// }, { ^bb0(...): ... }) : (...) -> (...)`; `"stablehlo.case"(%index) ({ ... }, ...) :
  /// (tensor<i32>) -> (...)`, whose branches use the enclosing values that the node has as
  /// operands 1.. by their names. A graph parsed from text prints so that it parses back to
  /// itself; a built case whose operands repeat, go unused or are not in the order the
  /// branches first use them parses back to an equivalent graph with other operands.
  void print_control_flow(const Graph& g, const std::vector<std::string>& names, const Node& n,
                          const std::string& body_prefix, std::string_view indent) {
    const bool is_while = n.op == OpCode::kWhile;
    std::vector<std::string> outer;  // what a branch's parameters are called
    if (!is_while)
      for (std::size_t k = 1; k < n.operands.size(); ++k) outer.push_back(use(g, names, n.operands[k]));
    out_ += str_cat("\"stablehlo.", op_name(n.op), "\"(",
                    is_while ? operand_list(g, names, n) : use(g, names, n.operands[0]), ") (");
    const std::string inner = str_cat(indent, "  ");
    for (std::size_t k = 0; k < n.bodies.size(); ++k) {
      out_ += k ? ", {\n" : "{\n";
      const std::string prefix = str_cat(body_prefix, k, "_");
      if (is_while) {
        print_block_header(n.bodies[k], prefix, indent);
      } else {
        print_nodes(n.bodies[k], prefix, inner, outer);
        print_return(n.bodies[k], prefix, inner, "stablehlo.return", outer);
      }
      out_ += str_cat(indent, "}");
    }
    out_ += ") : (";
    const std::size_t typed = is_while ? n.operands.size() : 1;
    for (std::size_t k = 0; k < typed; ++k)
      out_ += str_cat(k ? ", " : "", tensor_type_name(g.shape(n.operands[k])));
    out_ += ") -> (";
    for (std::size_t k = 0; k < n.results.size(); ++k)
      out_ += str_cat(k ? ", " : "", tensor_type_name(n.results[k]));
    out_ += ")";
  }

  /// A generic region's block `^bb0(%a: T, ...):` and its ops, up to its return.
  void print_block_header(const Graph& body, const std::string& body_prefix,
                          std::string_view indent) {
    const std::vector<std::string> body_names = value_names(body, body_prefix);
    out_ += str_cat(indent, "^bb0(");
    for (std::size_t i = 0; i < body.parameters().size(); ++i) {
      const Value p = body.parameters()[i];
      out_ += str_cat(i ? ", " : "", body_names[static_cast<std::size_t>(p.node)], ": ",
                      tensor_type_name(body.shape(p)));
    }
    out_ += "):\n";
    const std::string inner = str_cat(indent, "  ");
    print_nodes(body, body_prefix, inner);
    print_return(body, body_prefix, inner, "stablehlo.return");
  }

  std::string out_;
};

}  // namespace stablehlo::detail

/// The StableHLO text of `graph`: a module with one public func.func @main. `graph` must be
/// verified (every GraphBuilder graph is). Thread-safe.
inline std::string to_stablehlo(const Graph& graph) {
  return stablehlo::detail::Printer().print(graph);
}

}  // namespace pjrt_lite
