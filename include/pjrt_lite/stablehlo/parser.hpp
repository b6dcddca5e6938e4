#pragma once
// StableHLO text to IR: parse_module reads a module (what jax.export and stablehlo-opt
// print) into one Graph per function; parse_stablehlo returns the graph of one entry
// function.
//
//   StatusOr<Graph> g = parse_stablehlo(R"(
//     func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
//       %0 = stablehlo.add %x, %x : tensor<2xf32>
//       return %0 : tensor<2xf32>
//     })");
//
// Both of MLIR's syntaxes are read: the pretty form JAX prints (`stablehlo.add %a, %b :
// tensor<2xf32>`, `stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions =
// [1]`, ...) and the generic form (`"stablehlo.add"(%a, %b) : (...) -> ...` with `<{...}>` /
// `{...}` attribute dictionaries and `({ ^bb0(...): ... })` regions), mixed freely.
// `func.call` / `call` are inlined (the IR has no call op). The regions of while, case and
// if may use values defined outside them; those become operands of the op (see
// build_control_flow), since the IR's regions are closed. `stablehlo.custom_call
// @check.expect_*` become Checks (module.hpp). Attributes that do not change what a program
// computes (loc(...), #loc lines, mhlo.*, jax.*, precision_config, has_side_effect, ...) are
// read and ignored.
//
// Errors: malformed text and type errors are INVALID_ARGUMENT "line:column: what was
// expected, found what"; a declared type that differs from what the IR infers is one too.
// Valid StableHLO that the IR cannot represent (for example custom calls other than the check
// dialect's, dynamic shapes, f8 and quantized types) is UNIMPLEMENTED naming the op or type, such as
// "stablehlo.custom_call @lapack_sgetrf_ffi is not supported", so a runner can skip the file. The parser never throws, crashes or loops on any input: nesting
// and sizes are bounded and every index is checked.
//
// Round trip: parse_stablehlo(to_stablehlo(g)) has g's fingerprint when g's parameters are
// its first nodes in number order (as when a builder declares them first): function
// arguments always become the first nodes.

#include <charconv>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/op.hpp"
#include "pjrt_lite/ir/shape_inference.hpp"
#include "pjrt_lite/stablehlo/detail/dense.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/module.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::stablehlo {

namespace detail {

/// StableHLO ops (and a few long-standing extras) the IR does not have. A program using one
/// is valid but unsupported; an op name outside this list and the IR is a typo.
inline bool is_known_unsupported_op(std::string_view name) {
  // clang-format off
  constexpr std::string_view kNames[] = {
      "after_all", "all_gather", "all_reduce", "all_to_all", "async_done", "async_start",
      "batch_norm_grad", "batch_norm_inference", "batch_norm_training", "cholesky",
      "collective_broadcast", "collective_permute", "collective_reduce", "composite",
      "count_leading_zeros", "create_token", "cross-replica-sum",
      "dynamic_broadcast_in_dim", "dynamic_conv", "dynamic_gather", "dynamic_iota", "dynamic_pad",
      "dynamic_reshape", "einsum", "get_dimension_size", "get_tuple_element",
      "infeed", "map", "optimization_barrier", "outfeed", "partition_id",
      "real_dynamic_slice", "recv", "reduce_scatter",
      "replica_id", "rng", "send",
      "set_dimension_size", "torch_index_select", "trace", "tuple",
      "unary_einsum", "uniform_dequantize", "uniform_quantize"};
  // clang-format on
  for (std::string_view n : kNames)
    if (n == name) return true;
  return false;
}

/// A name bound by an op (`%0`, or `%0:2` for two results).
struct ResultName {
  std::string name;
  std::int64_t count = 1;
  SourcePos pos;
};

/// A func.func as found by the first pass: its signature and where its body starts.
struct FunctionSource {
  std::string name;
  Visibility visibility = Visibility::kPublic;
  SourcePos pos;
  std::vector<std::pair<std::string, SourcePos>> arg_names;
  std::vector<Shape> arg_types;
  std::vector<Shape> result_types;
  bool has_body = false;
  Lexer body{std::string_view()};  // just after the body's '{'
  enum class State : std::uint8_t { kPending, kBuilding, kBuilt } state = State::kPending;
  Function built;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : top_(Lexer(text)) {}

  StatusOr<Module> parse() {
    PJRT_LITE_RETURN_IF_ERROR(parse_top_level());
    for (std::size_t i = 0; i < sources_.size(); ++i) PJRT_LITE_RETURN_IF_ERROR(build(i));
    Module m;
    m.name = module_name_;
    for (FunctionSource& f : sources_)
      if (f.has_body) m.functions.push_back(std::move(f.built));
    return m;
  }

 private:
  // ---- Module level ---------------------------------------------------------------------

  Status parse_top_level() {
    bool seen_module = false;
    while (true) {
      Token t = top_.peek();
      if (t.kind == TokenKind::kEof) return ok_status();
      if (t.kind == TokenKind::kHashId) {  // #loc = loc(...), other attribute aliases
        top_.next();
        PJRT_LITE_RETURN_IF_ERROR(top_.expect('=', str_cat("after the alias ", t.text)));
        PJRT_LITE_RETURN_IF_ERROR(top_.parse_attr_value().status());
        continue;
      }
      if (t.kind == TokenKind::kBangId) return unsupported_at(t.pos, "type aliases");
      if (t.is_ident("module")) {
        if (seen_module) return unsupported_at(t.pos, "several or nested modules");
        seen_module = true;
        top_.next();
        if (top_.peek().kind == TokenKind::kSymbol)
          module_name_ = Reader::symbol_name(top_.next().text);
        if (top_.consume_ident_if("attributes"))
          PJRT_LITE_RETURN_IF_ERROR(top_.parse_dict().status());
        PJRT_LITE_RETURN_IF_ERROR(top_.expect('{', "to start the module body"));
        while (!top_.peek().is('}')) {
          Token u = top_.peek();
          if (u.kind == TokenKind::kEof)
            return error_at(u.pos, "expected '}' to end the module, found end of input");
          if (u.kind == TokenKind::kHashId) {
            top_.next();
            PJRT_LITE_RETURN_IF_ERROR(top_.expect('=', str_cat("after the alias ", u.text)));
            PJRT_LITE_RETURN_IF_ERROR(top_.parse_attr_value().status());
            continue;
          }
          PJRT_LITE_RETURN_IF_ERROR(parse_module_item());
        }
        top_.next();
        PJRT_LITE_RETURN_IF_ERROR(top_.skip_loc());
        continue;
      }
      PJRT_LITE_RETURN_IF_ERROR(parse_module_item());
    }
  }

  Status parse_module_item() {
    Token t = top_.peek();
    if (t.is_ident("func.func")) return parse_function_header();
    if (t.is_ident("sdy.mesh")) {
      // `sdy.mesh @mesh = <["x"=2]>`: a device mesh for sharding annotations, which do not
      // change what a program computes.
      top_.next();
      PJRT_LITE_RETURN_IF_ERROR(
          top_.expect_kind(TokenKind::kSymbol, "a mesh name", "after sdy.mesh").status());
      PJRT_LITE_RETURN_IF_ERROR(top_.expect('=', "after the mesh name"));
      PJRT_LITE_RETURN_IF_ERROR(top_.lexer().skip_balanced('<', '>').status());
      return top_.skip_loc();
    }
    if (t.kind == TokenKind::kString)
      return unsupported_at(t.pos, str_cat("the generic-form op ", t.text, " at module level"));
    if (t.is_ident("ml_program.global") || t.is_ident("memref.global") || t.is_ident("util.global"))
      return unsupported_at(t.pos, str_cat("the module-level op ", t.text));
    return error_at(t.pos, str_cat("expected func.func, found ", describe(t)));
  }

  Status parse_function_header() {
    top_.next();  // func.func
    FunctionSource f;
    if (top_.consume_ident_if("private") || top_.consume_ident_if("nested"))
      f.visibility = Visibility::kPrivate;
    else
      top_.consume_ident_if("public");
    PJRT_LITE_ASSIGN_OR_RETURN(
        Token sym,
        top_.expect_kind(TokenKind::kSymbol, "a function name such as @main", "after func.func"));
    f.name = Reader::symbol_name(sym.text);
    f.pos = sym.pos;
    if (by_name_.count(f.name))
      return error_at(sym.pos, str_cat("redefinition of @", f.name, " (first defined at ",
                                       to_string(sources_[by_name_[f.name]].pos), ")"));
    PJRT_LITE_RETURN_IF_ERROR(top_.expect('(', str_cat("to start the arguments of @", f.name)));
    if (!top_.consume_if(')')) {
      while (true) {
        Token a = top_.peek();
        if (a.kind == TokenKind::kValueId) {
          top_.next();
          f.arg_names.emplace_back(std::string(a.text.substr(1)), a.pos);
          PJRT_LITE_RETURN_IF_ERROR(top_.expect(':', "after the argument name"));
        } else {
          f.arg_names.emplace_back("", a.pos);  // a declaration: types only
        }
        PJRT_LITE_ASSIGN_OR_RETURN(Shape type, top_.parse_type());
        f.arg_types.push_back(std::move(type));
        if (top_.peek().is('{')) PJRT_LITE_RETURN_IF_ERROR(top_.parse_dict().status());
        PJRT_LITE_RETURN_IF_ERROR(top_.skip_loc());
        Token u = top_.next();
        if (u.is(')')) break;
        if (!u.is(','))
          return error_at(u.pos, str_cat("expected ',' or ')' after an argument of @", f.name,
                                         ", found ", describe(u)));
      }
    }
    if (top_.peek().kind == TokenKind::kArrow) {
      top_.next();
      if (top_.peek().is('(')) {
        PJRT_LITE_ASSIGN_OR_RETURN(f.result_types, top_.parse_paren_types(/*attributes=*/true));
      } else {
        // A bare result type takes no attributes: a '{' after it starts the body.
        PJRT_LITE_ASSIGN_OR_RETURN(Shape type, top_.parse_type());
        f.result_types.push_back(std::move(type));
      }
    }
    if (top_.consume_ident_if("attributes")) PJRT_LITE_RETURN_IF_ERROR(top_.parse_dict().status());
    if (top_.peek().is('{')) {
      for (const auto& [name, pos] : f.arg_names)
        if (name.empty())
          return error_at(pos, str_cat("the arguments of @", f.name,
                                       " need names (%arg0: type) when it has a body"));
      f.has_body = true;
      top_.lexer().skip_trivia();
      Lexer body = top_.lexer();
      body.advance();  // '{'
      f.body = body;
      // The body is only skipped here (callees may come later) and parsed by build().
      Status skipped = top_.lexer().skip_balanced('{', '}', /*only_this_pair=*/true).status();
      if (!skipped.ok()) {
        // No closing brace: parsing the body now says precisely where it goes wrong.
        by_name_[f.name] = sources_.size();
        sources_.push_back(std::move(f));
        PJRT_LITE_RETURN_IF_ERROR(build(sources_.size() - 1));
        return skipped;
      }
    }
    PJRT_LITE_RETURN_IF_ERROR(top_.skip_loc());
    by_name_[f.name] = sources_.size();
    sources_.push_back(std::move(f));
    return ok_status();
  }

  // ---- Functions ------------------------------------------------------------------------

  /// Builds function i (and, on demand, the functions it calls).
  Status build(std::size_t i) {
    FunctionSource& f = sources_[i];
    if (f.state == FunctionSource::State::kBuilt || !f.has_body) return ok_status();
    if (f.state == FunctionSource::State::kBuilding)
      return unsupported_at(f.pos, str_cat("the recursive function @", f.name));
    if (call_depth_ >= kMaxCallDepth)
      return error_at(f.pos, str_cat("calls nest deeper than ", kMaxCallDepth, " functions"));
    f.state = FunctionSource::State::kBuilding;
    ++call_depth_;
    StatusOr<Function> built = build_function(i);
    --call_depth_;
    if (!built.ok()) return built.status();
    sources_[i].built = std::move(built).value();
    sources_[i].state = FunctionSource::State::kBuilt;
    return ok_status();
  }

  StatusOr<Function> build_function(std::size_t i) {
    // sources_ no longer grows once functions are built, so this reference stays valid
    // while callees are built.
    const FunctionSource& source = sources_[i];
    const std::string& name = source.name;
    const std::vector<Shape>& arg_types = source.arg_types;
    const std::vector<Shape>& result_types = source.result_types;
    const auto& arg_names = source.arg_names;
    Reader r(source.body);

    GraphBuilder b(name);
    Scope scope;
    scope.builder = &b;
    std::vector<Check> checks;
    Context ctx{b, scope, &checks, 0};
    for (std::size_t k = 0; k < arg_types.size(); ++k) {
      Value v = b.parameter(static_cast<std::int64_t>(k), arg_types[k]);
      PJRT_LITE_RETURN_IF_ERROR(define(scope, arg_names[k].first, {v}, arg_names[k].second));
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> returned, parse_block(r, ctx));
    const SourcePos end = last_terminator_pos_;
    if (returned.size() != result_types.size())
      return error_at(end, str_cat("@", name, " returns ", returned.size(),
                                   " value(s) but its signature declares ", result_types.size()));
    for (std::size_t k = 0; k < returned.size(); ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, b.shape(returned[k]));
      if (!s.same_type_and_dims(result_types[k]))
        return error_at(end,
                        str_cat("@", name, " returns ", tensor_type_name(s), " as result ", k,
                                " but its signature declares ", tensor_type_name(result_types[k])));
    }
    Function fn;
    fn.name = name;
    fn.visibility = source.visibility;
    fn.num_results = static_cast<std::int64_t>(returned.size());
    std::vector<Value> outputs = returned;
    for (Check& c : checks) {
      c.actual_output = static_cast<std::int64_t>(outputs.size());
      outputs.push_back(c.actual);
      c.actual = c.actual.detached();
      if (c.expected.valid()) {
        c.expected_output = static_cast<std::int64_t>(outputs.size());
        outputs.push_back(c.expected);
        c.expected = c.expected.detached();
      }
    }
    StatusOr<Graph> g = b.build(outputs);
    if (!g.ok()) return error_at(source.pos, g.status().message());
    fn.graph = std::move(g).value();
    fn.checks = std::move(checks);
    return fn;
  }

  // ---- Blocks and ops -------------------------------------------------------------------

  /// Ops up to and including the terminator and the closing '}'; returns the terminator's
  /// operands.
  StatusOr<std::vector<Value>> parse_block(Reader& r, Context& ctx) {
    while (true) {
      Token t = r.peek();
      if (t.is('}') || t.kind == TokenKind::kEof)
        return error_at(t.pos, str_cat("expected an op or a return before ", describe(t)));
      if (t.kind == TokenKind::kBlockId)
        return unsupported_at(t.pos, "regions with several blocks");
      PJRT_LITE_ASSIGN_OR_RETURN(OpResult op, parse_op(r, ctx));
      if (op.terminator) {
        Token close = r.next();
        if (close.kind == TokenKind::kBlockId)
          return unsupported_at(close.pos, "regions with several blocks");
        if (!close.is('}'))
          return error_at(close.pos,
                          str_cat("expected '}' after the return, found ", describe(close)));
        return op.values;
      }
    }
  }

  StatusOr<OpResult> parse_op(Reader& r, Context& ctx) {
    std::vector<ResultName> names;
    if (r.peek().kind == TokenKind::kValueId) {
      while (true) {
        Token t = r.next();
        if (t.kind != TokenKind::kValueId)
          return error_at(t.pos, str_cat("expected a result name such as %0, found ", describe(t)));
        if (t.text.find('#') != std::string_view::npos)
          return error_at(t.pos, str_cat("a result name cannot select a result: ", t.text));
        ResultName n{std::string(t.text.substr(1)), 1, t.pos};
        if (r.consume_if(':')) {
          PJRT_LITE_ASSIGN_OR_RETURN(n.count, r.parse_int("(the number of results)"));
          if (n.count < 1 || n.count > kMaxResults)
            return error_at(t.pos, str_cat("result count ", n.count, " is out of range"));
        }
        names.push_back(std::move(n));
        if (!r.consume_if(',')) break;
      }
      PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after the result names"));
    }
    Token name = r.next();
    OpResult result;
    if (name.kind == TokenKind::kString) {
      PJRT_LITE_ASSIGN_OR_RETURN(result, parse_generic(r, ctx, unquote(name.text), name.pos));
    } else if (name.kind == TokenKind::kIdent) {
      PJRT_LITE_ASSIGN_OR_RETURN(result, parse_pretty(r, ctx, name.text, name.pos));
    } else {
      return error_at(name.pos,
                      str_cat("expected an op such as stablehlo.add, found ", describe(name)));
    }
    PJRT_LITE_RETURN_IF_ERROR(r.skip_loc());
    if (result.terminator) {
      if (!names.empty()) return error_at(names.front().pos, "a return has no results to name");
      last_terminator_pos_ = name.pos;
      return result;
    }
    std::int64_t named = 0;
    for (const ResultName& n : names) named += n.count;
    if (named != static_cast<std::int64_t>(result.values.size()))
      return error_at(
          names.empty() ? name.pos : names.front().pos,
          str_cat("the op has ", result.values.size(), " result(s) but ", named, " are named"));
    std::size_t next = 0;
    for (const ResultName& n : names) {
      std::vector<Value> values(
          result.values.begin() + static_cast<std::ptrdiff_t>(next),
          result.values.begin() + static_cast<std::ptrdiff_t>(next + n.count));
      next += static_cast<std::size_t>(n.count);
      PJRT_LITE_RETURN_IF_ERROR(define(ctx.scope, n.name, std::move(values), n.pos));
    }
    return result;
  }

  // ---- Types ----------------------------------------------------------------------------

  /// StableHLO can bitcast i1 (to i1); the IR gives pred no bit layout and refuses, so such a
  /// program is unsupported rather than malformed.
  static Status check_bitcast(const Context& ctx, const std::vector<Value>& operands,
                              const Shape& result, SourcePos pos) {
    // i1 to i1 is the identity; between i1 and another type it depends on a bit layout of
    // i1 that the IR does not define.
    bool pred = result.dtype() == DType::kPred;
    if (operands.size() == 1) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(operands[0]));
      pred = pred != (s.dtype() == DType::kPred);
    }
    if (pred) return unsupported_at(pos, "stablehlo.bitcast_convert between i1 and another type");
    return ok_status();
  }

  /// `, key = WORD` in an op's pretty form, WORD read by `from_name` (an enum's spelling).
  template <class E>
  static StatusOr<E> keyword_enum(Reader& r, std::string_view key, std::string_view where,
                                  std::string_view expected, StatusOr<E> (*from_name)(std::string_view)) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', where));
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(key, where));
    const std::string after = str_cat("after ", key);
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', after));
    PJRT_LITE_ASSIGN_OR_RETURN(Token t,
                               r.expect_kind(TokenKind::kIdent, expected, str_cat(after, " =")));
    StatusOr<E> value = from_name(t.text);
    if (!value.ok()) return error_at(t.pos, value.status().message());
    return value;
  }

  /// rng_bit_generator's output type: the second of its two declared results.
  static StatusOr<Shape> rng_output_type(const OpType& t, std::string_view op) {
    if (!t.functional || t.function.results.size() != 2)
      return error_at(t.pos, str_cat(op, " has two results, the new state and the output: "
                                         "expected a type (S) -> (S, R)"));
    return t.function.results[1];
  }

  // ---- Pretty form ----------------------------------------------------------------------

  StatusOr<OpResult> parse_pretty(Reader& r, Context& ctx, std::string_view name, SourcePos pos) {
    if (name == "return" || name == "func.return" || name == "stablehlo.return")
      return parse_return(r, ctx, name);
    if (name == "call" || name == "func.call") return parse_call(r, ctx, name, pos);
    if (name == "stablehlo.custom_call") return parse_custom_call(r, ctx, pos);
    if (name.starts_with("check.")) return parse_check_op(r, ctx, name, pos);
    if (name == "func.func" || name == "module")
      return error_at(pos, str_cat("expected '}' to end the function before ", name));
    if (name.starts_with("func.")) return error_at(pos, str_cat("unknown op ", name));
    if (name.starts_with("chlo.")) {
      // The CHLO ops the IR has; any other is valid CHLO this parser does not run.
      StatusOr<OpCode> chlo = op_from_name(name);
      if (!chlo.ok()) return unsupported_at(pos, name);
      if (*chlo == OpCode::kTopK) return parse_top_k(r, ctx, name, pos);
      return parse_elementwise(r, ctx, *chlo, name, pos);
    }
    if (!name.starts_with("stablehlo.")) {
      if (name.find('.') != std::string_view::npos) return unsupported_at(pos, name);
      return error_at(
          pos, str_cat("expected an op such as stablehlo.add, found identifier '", name, "'"));
    }
    const std::string_view short_name = name.substr(10);
    if (short_name == "dot") return parse_dot(r, ctx, name, pos);
    if (short_name == "broadcast") return parse_broadcast(r, ctx, name, pos);
    StatusOr<OpCode> code = op_from_name(name);
    if (!code.ok() || *code == OpCode::kParameter) {
      if (is_known_unsupported_op(short_name)) return unsupported_at(pos, name);
      return error_at(pos, str_cat("unknown op ", name));
    }
    const OpCode op = *code;
    if (is_unary(op) || is_binary(op) || op == OpCode::kSelect || op == OpCode::kClamp ||
        op == OpCode::kConvert || op == OpCode::kBitcastConvert || op == OpCode::kReshape)
      return parse_elementwise(r, ctx, op, name, pos);
    return parse_pretty_other(r, ctx, op, name, pos);
  }

  /// The pretty form of an op whose only attributes come from its types: `op %a, %b : T`.
  StatusOr<OpResult> parse_elementwise(Reader& r, Context& ctx, OpCode op, std::string_view name,
                                       SourcePos pos) {
    OpResult out;
    {
      const int n = operand_count(op);
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                 parse_operands_exact(r, ctx, static_cast<std::size_t>(n), name));
      PJRT_LITE_RETURN_IF_ERROR(check_chlo_operands(ctx, op, operands, name, pos));
      PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
      const TypeRule rule = op == OpCode::kSelect    ? TypeRule::kSelect
                            : op == OpCode::kComplex ? TypeRule::kResultOnly
                                                     : TypeRule::kSame;
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                 declared_types(ctx, type, operands, rule, name, pos));
      Attributes attrs = NoAttrs{};
      if (op == OpCode::kConvert || op == OpCode::kBitcastConvert || op == OpCode::kReshape) {
        PJRT_LITE_ASSIGN_OR_RETURN(Shape result, single_result(type, name));
        if (op == OpCode::kReshape)
          attrs =
              ReshapeAttrs{std::vector<std::int64_t>(result.dims().begin(), result.dims().end())};
        else
          attrs = ConvertAttrs{result.dtype()};
        if (op == OpCode::kBitcastConvert)
          PJRT_LITE_RETURN_IF_ERROR(check_bitcast(ctx, operands, result, pos));
      }
      out.values = ctx.b.op(op, operands, std::move(attrs));
      PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
      return out;
    }
  }

  /// The pretty form of the ops with attributes or regions.
  StatusOr<OpResult> parse_pretty_other(Reader& r, Context& ctx, OpCode op, std::string_view name,
                                        SourcePos pos) {
    OpResult out;
    switch (op) {
      case OpCode::kConstant: {
        if (r.peek().is('{')) PJRT_LITE_RETURN_IF_ERROR(r.parse_dict().status());
        Token t = r.peek();
        if (!t.is_ident("dense"))
          return error_at(
              t.pos, str_cat("expected dense<...> after stablehlo.constant, found ", describe(t)));
        PJRT_LITE_ASSIGN_OR_RETURN(AttrValue value, r.parse_attr_value());
        out.values = {ctx.b.constant(Literal(*value.dense))};
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, {value.type}, name, pos));
        return out;
      }
      case OpCode::kIota: {
        PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("dim", "after stablehlo.iota"));
        PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after dim"));
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t dim, r.parse_int("after dim ="));
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, {}, TypeRule::kSame, name, pos));
        PJRT_LITE_ASSIGN_OR_RETURN(Shape result, single_result(type, name));
        out.values = ctx.b.op(op, {}, IotaAttrs{result, dim});
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kCompare: {
        PJRT_LITE_ASSIGN_OR_RETURN(
            Token dir,
            r.expect_kind(TokenKind::kIdent, "a comparison direction (EQ, NE, GE, GT, LE, LT)",
                          "after stablehlo.compare"));
        StatusOr<ComparisonDirection> direction = comparison_direction_from_name(dir.text);
        if (!direction.ok()) return error_at(dir.pos, direction.status().message());
        PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after the comparison direction"));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                   parse_operands_exact(r, ctx, 2, name));
        ComparisonType ctype = ComparisonType::kNotype;
        if (r.consume_if(',')) {
          PJRT_LITE_ASSIGN_OR_RETURN(
              Token t, r.expect_kind(TokenKind::kIdent,
                                     "a comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)",
                                     "after the operands"));
          StatusOr<ComparisonType> parsed = comparison_type_from_name(t.text);
          if (!parsed.ok()) return error_at(t.pos, parsed.status().message());
          ctype = *parsed;
        }
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, CompareAttrs{*direction, ctype});
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kReducePrecision: {
        // `stablehlo.reduce_precision %x, format = e5m10 : T`.
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                   parse_operand_then_key(r, ctx, name, "format"));
        PJRT_LITE_ASSIGN_OR_RETURN(
            Token f, r.expect_kind(TokenKind::kIdent, "a format such as e5m10", "after format ="));
        PJRT_LITE_ASSIGN_OR_RETURN(ReducePrecisionAttrs attrs, precision_format(f));
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, attrs);
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kBroadcastInDim:
      case OpCode::kTranspose:
      case OpCode::kReverse: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                   parse_operand_then_key(r, ctx, name, "dims"));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims,
                                   r.parse_int_list("after dims ="));
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        Attributes attrs = NoAttrs{};
        if (op == OpCode::kBroadcastInDim) {
          PJRT_LITE_ASSIGN_OR_RETURN(Shape result, single_result(type, name));
          attrs = BroadcastInDimAttrs{
              std::vector<std::int64_t>(result.dims().begin(), result.dims().end()), dims};
        } else if (op == OpCode::kTranspose) {
          attrs = TransposeAttrs{dims};
        } else {
          attrs = ReverseAttrs{dims};
        }
        out.values = ctx.b.op(op, operands, std::move(attrs));
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kSlice: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                   parse_operands_exact(r, ctx, 1, name));
        PJRT_LITE_RETURN_IF_ERROR(r.expect('[', "to start the slice ranges [start:limit:stride]"));
        SliceAttrs attrs;
        if (!r.consume_if(']')) {
          while (true) {
            PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t start, r.parse_int("(the slice start)"));
            PJRT_LITE_RETURN_IF_ERROR(r.expect(':', "after the slice start"));
            PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t limit, r.parse_int("(the slice limit)"));
            std::int64_t stride = 1;
            if (r.consume_if(':')) {
              PJRT_LITE_ASSIGN_OR_RETURN(stride, r.parse_int("(the slice stride)"));
            }
            attrs.start_indices.push_back(start);
            attrs.limit_indices.push_back(limit);
            attrs.strides.push_back(stride);
            if (attrs.start_indices.size() > static_cast<std::size_t>(kMaxRank))
              return error_at(pos, "too many slice ranges");
            Token t = r.next();
            if (t.is(']')) break;
            if (!t.is(','))
              return error_at(
                  t.pos, str_cat("expected ',' or ']' after a slice range, found ", describe(t)));
          }
        }
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, std::move(attrs));
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kConcatenate: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operand_list(r, ctx));
        PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after the operands of stablehlo.concatenate"));
        PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("dim", "after the operands"));
        PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after dim"));
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t dim, r.parse_int("after dim ="));
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, ConcatenateAttrs{dim});
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kPad: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                   parse_operands_exact(r, ctx, 2, name));
        PadAttrs attrs;
        const std::pair<std::string_view, std::vector<std::int64_t>*> fields[3] = {
            {"low", &attrs.edge_padding_low},
            {"high", &attrs.edge_padding_high},
            {"interior", &attrs.interior_padding}};
        for (const auto& [field, list] : fields) {
          PJRT_LITE_RETURN_IF_ERROR(r.expect(',', str_cat("before ", field)));
          PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(field, "in stablehlo.pad"));
          PJRT_LITE_RETURN_IF_ERROR(r.expect('=', str_cat("after ", field)));
          PJRT_LITE_ASSIGN_OR_RETURN(*list, r.parse_int_list(str_cat("after ", field, " =")));
        }
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, std::move(attrs));
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operand_list(r, ctx));
        Attributes attrs = NoAttrs{};
        if (op == OpCode::kDynamicSlice) {
          PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after the operands of stablehlo.dynamic_slice"));
          PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("sizes", "after the operands"));
          PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after sizes"));
          PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes,
                                     r.parse_int_list("after sizes ="));
          attrs = DynamicSliceAttrs{std::move(sizes)};
        }
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, std::move(attrs));
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kDotGeneral: return parse_dot_general(r, ctx, name, pos);
      case OpCode::kConvolution: return parse_convolution(r, ctx, name, pos);
      case OpCode::kRngBitGenerator: {
        // %state, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (S) -> (S, R)
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                   parse_operands_exact(r, ctx, 1, name));
        PJRT_LITE_ASSIGN_OR_RETURN(
            RngAlgorithm algorithm,
            keyword_enum(r, "algorithm", "after the operand of stablehlo.rng_bit_generator",
                         "an rng algorithm (DEFAULT, THREE_FRY, PHILOX)", rng_algorithm_from_name));
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(Shape bits, rng_output_type(type, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, RngBitGeneratorAttrs{algorithm, std::move(bits)});
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kFft: {
        // stablehlo.fft %x, type = RFFT, length = [17] : (T) -> R
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands,
                                   parse_operands_exact(r, ctx, 1, name));
        PJRT_LITE_ASSIGN_OR_RETURN(
            FftType fft_type, keyword_enum(r, "type", "after the operand of stablehlo.fft",
                                           "an fft type (FFT, IFFT, RFFT, IRFFT)", fft_type_from_name));
        PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after the fft type"));
        PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("length", "after the fft type"));
        PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after length"));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> length,
                                   r.parse_int_list("after length ="));
        PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                                   declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
        out.values = ctx.b.op(op, operands, FftAttrs{fft_type, std::move(length)});
        PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
        return out;
      }
      case OpCode::kReduce: return parse_reduce(r, ctx, name, pos);
      case OpCode::kWhile: return parse_while(r, ctx, name, pos);
      case OpCode::kScatter:
      case OpCode::kGather:
      case OpCode::kReduceWindow:
      case OpCode::kSelectAndScatter:
      case OpCode::kCase:
      case OpCode::kIf:
      case OpCode::kSort:
        return error_at(pos, str_cat(name, " has no pretty form; expected \"", name, "\"(...)"));
      default: break;
    }
    return error_at(pos, str_cat("unknown op ", name));
  }

  /// `%x, KEY =`: one operand, then the name of a keyword argument whose value comes next.
  static StatusOr<std::vector<Value>> parse_operand_then_key(Reader& r, const Context& ctx,
                                                             std::string_view op,
                                                             std::string_view key) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operands_exact(r, ctx, 1, op));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after operand"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(key, str_cat("after the operand of ", op)));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', str_cat("after ", key)));
    return operands;
  }

  /// CHLO's pretty top_k: `chlo.top_k(%x, k = 3) : T -> (T, tensor<...xi32>)`.
  StatusOr<OpResult> parse_top_k(Reader& r, Context& ctx, std::string_view name, SourcePos pos) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', str_cat("after ", name)));
    PJRT_LITE_ASSIGN_OR_RETURN(Value operand, parse_operand(r, ctx, str_cat("for ", name)));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after the operand of chlo.top_k"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("k", "after the operand of chlo.top_k"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after k"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t k, r.parse_int("after k ="));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after k = ..."));
    const std::vector<Value> operands = {operand};
    PJRT_LITE_RETURN_IF_ERROR(check_chlo_operands(ctx, OpCode::kTopK, operands, name, pos));
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
    OpResult out;
    out.values = ctx.b.op(OpCode::kTopK, operands, TopKAttrs{k});
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  /// reduce_precision's `eEmM` format word: E exponent bits, M mantissa bits.
  static StatusOr<ReducePrecisionAttrs> precision_format(const Token& t) {
    auto fail = [&] {
      return error_at(t.pos, str_cat("expected a format such as e5m10 (exponent and mantissa "
                                     "bits), found '",
                                     t.text, "'"));
    };
    const std::string_view w = t.text;
    const std::size_t m = w.find('m');
    if (w.size() < 4 || w[0] != 'e' || m == std::string_view::npos || m < 2 || m + 1 >= w.size())
      return fail();
    ReducePrecisionAttrs a;
    auto number = [](std::string_view digits, std::int64_t& out) {
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
      return ec == std::errc() && ptr == digits.data() + digits.size() && digits[0] != '-' &&
             digits[0] != '+';
    };
    if (!number(w.substr(1, m - 1), a.exponent_bits) || !number(w.substr(m + 1), a.mantissa_bits))
      return fail();
    return a;
  }

  StatusOr<OpResult> parse_dot_general(Reader& r, Context& ctx, std::string_view name,
                                       SourcePos pos) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operands_exact(r, ctx, 2, name));
    DotDimensionNumbers dn;
    while (r.consume_if(',')) {
      PJRT_LITE_ASSIGN_OR_RETURN(
          Token key, r.expect_kind(TokenKind::kIdent,
                                   "batching_dims, contracting_dims, precision or algorithm",
                                   "in stablehlo.dot_general"));
      PJRT_LITE_RETURN_IF_ERROR(r.expect('=', str_cat("after ", key.text)));
      if (key.text == "batching_dims" || key.text == "contracting_dims") {
        const bool batching = key.text == "batching_dims";
        PJRT_LITE_ASSIGN_OR_RETURN(
            (batching ? dn.lhs_batching_dimensions : dn.lhs_contracting_dimensions),
            r.parse_int_list(str_cat("after ", key.text, " =")));
        PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("x", "between the lhs and rhs dimensions"));
        PJRT_LITE_ASSIGN_OR_RETURN(
            (batching ? dn.rhs_batching_dimensions : dn.rhs_contracting_dimensions),
            r.parse_int_list(str_cat("after ", key.text, " = [...] x")));
      } else if (key.text == "precision") {
        PJRT_LITE_RETURN_IF_ERROR(r.parse_attr_value().status());  // numerics hint only
      } else if (key.text == "algorithm") {
        return unsupported_at(key.pos, "stablehlo.dot_general with an algorithm");
      } else {
        return error_at(key.pos, str_cat("unknown stablehlo.dot_general field '", key.text, "'"));
      }
    }
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
    OpResult out;
    out.values = ctx.b.op(OpCode::kDotGeneral, operands, std::move(dn));
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  /// stablehlo.convolution's pretty form: `(%lhs, %rhs) dim_numbers = [b, 0, f]x[0, i, o]->[b,
  /// 0, f], window = {stride = [..], pad = [[lo, hi], ..], lhs_dilate = [..], rhs_dilate =
  /// [..], reverse = [..]}`, then the attribute dictionary (batch_group_count,
  /// feature_group_count, precision_config) and the type.
  StatusOr<OpResult> parse_convolution(Reader& r, Context& ctx, std::string_view name,
                                       SourcePos pos) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', str_cat("before the operands of ", name)));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operands_exact(r, ctx, 2, name));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', str_cat("after the operands of ", name)));
    PJRT_LITE_RETURN_IF_ERROR(
        r.expect_ident("dim_numbers", str_cat("after the operands of ", name)));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after dim_numbers"));
    // The three lists, spelled again as text for parse_convolution_dimension_numbers.
    const SourcePos dims_pos = r.peek().pos;
    std::string dims_text;
    for (int list = 0; list < 3; ++list) {
      if (list == 1) {
        PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("x", "between the input and kernel dimensions"));
        dims_text += "x";
      } else if (list == 2) {
        PJRT_LITE_RETURN_IF_ERROR(r.expect_arrow("between the kernel and output dimensions"));
        dims_text += "->";
      }
      PJRT_LITE_RETURN_IF_ERROR(r.expect('[', "to start a list of dimension numbers"));
      dims_text += "[";
      for (std::int64_t k = 0; !r.consume_if(']'); ++k) {
        if (k > kMaxRank + 2) return error_at(dims_pos, "too many convolution dimensions");
        if (k > 0) {
          PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "or ']' in the dimension numbers"));
          dims_text += ", ";
        }
        Token t = r.next();
        if (t.kind != TokenKind::kIdent && t.kind != TokenKind::kInt)
          return error_at(t.pos, str_cat("expected a dimension name (b, f, i, o or a digit) in "
                                         "dim_numbers, found ",
                                         describe(t)));
        dims_text += t.text;
      }
      dims_text += "]";
    }
    ConvolutionAttrs a;
    if (Status s = parse_convolution_dimension_numbers(dims_text, a); !s.ok())
      return error_at(dims_pos, s.message());
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after dim_numbers"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("window", "after dim_numbers"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after window"));
    if (!r.peek().is('{')) return error_at(r.peek().pos, "expected window = {...}");
    PJRT_LITE_ASSIGN_OR_RETURN(AttrDict window, r.parse_dict());
    for (const auto& entry : window) {
      const std::string& key = entry.first;
      const AttrValue& v = entry.second;
      if (key == "stride") {
        PJRT_LITE_ASSIGN_OR_RETURN(a.window_strides, int_list_value(v, key));
      } else if (key == "lhs_dilate") {
        PJRT_LITE_ASSIGN_OR_RETURN(a.lhs_dilation, int_list_value(v, key));
      } else if (key == "rhs_dilate") {
        PJRT_LITE_ASSIGN_OR_RETURN(a.rhs_dilation, int_list_value(v, key));
      } else if (key == "reverse") {
        PJRT_LITE_ASSIGN_OR_RETURN(a.window_reversal, bool_list_value(v, key));
      } else if (key == "pad") {
        bool ok = v.kind == AttrValue::Kind::kList;
        if (ok)
          for (const AttrValue& pair : v.list) {
            ok = ok && pair.kind == AttrValue::Kind::kList && pair.list.size() == 2 &&
                 pair.list[0].kind == AttrValue::Kind::kInt &&
                 pair.list[1].kind == AttrValue::Kind::kInt;
            if (!ok) break;
            a.padding_low.push_back(pair.list[0].i);
            a.padding_high.push_back(pair.list[1].i);
          }
        if (!ok) return error_at(v.pos, "expected pad = [[low, high], ...]");
      } else {
        return error_at(v.pos, str_cat("unknown convolution window field '", key,
                                       "' (expected stride, pad, lhs_dilate, rhs_dilate or "
                                       "reverse)"));
      }
    }
    AttrDict attrs;
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name, &attrs));
    PJRT_LITE_RETURN_IF_ERROR(group_counts(attrs, a));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
    OpResult out;
    out.values = ctx.b.op(OpCode::kConvolution, operands, a.with_defaults());
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  /// stablehlo.dot: dot_general contracting lhs's last dimension with rhs's first.
  StatusOr<OpResult> parse_dot(Reader& r, Context& ctx, std::string_view name, SourcePos pos) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operands_exact(r, ctx, 2, name));
    if (r.consume_if(',')) {
      PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("precision", "in stablehlo.dot"));
      PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after precision"));
      PJRT_LITE_RETURN_IF_ERROR(r.parse_attr_value().status());
    }
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
    return build_dot(ctx, operands, type, name, pos);
  }

  static StatusOr<OpResult> build_dot(Context& ctx, const std::vector<Value>& operands,
                                      const OpType& type, std::string_view name, SourcePos pos) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
    if (operands.size() != 2) return error_at(pos, str_cat(name, " takes 2 operands"));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape lhs, ctx.b.shape(operands[0]));
    DotDimensionNumbers dn{{}, {}, {lhs.rank() - 1}, {0}};
    OpResult out;
    out.values = ctx.b.op(OpCode::kDotGeneral, operands, std::move(dn));
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  /// stablehlo.broadcast: broadcast_in_dim with the new dimensions in front.
  StatusOr<OpResult> parse_broadcast(Reader& r, Context& ctx, std::string_view name,
                                     SourcePos pos) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operands_exact(r, ctx, 1, name));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after operand"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("sizes", "in stablehlo.broadcast"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after sizes"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes, r.parse_int_list("after sizes ="));
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
    return build_broadcast(ctx, operands, sizes, type, name, pos);
  }

  static StatusOr<OpResult> build_broadcast(Context& ctx, const std::vector<Value>& operands,
                                            std::vector<std::int64_t> sizes, const OpType& type,
                                            std::string_view name, SourcePos pos) {
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
    if (operands.size() != 1) return error_at(pos, str_cat(name, " takes 1 operand"));
    PJRT_LITE_ASSIGN_OR_RETURN(Shape operand, ctx.b.shape(operands[0]));
    std::vector<std::int64_t> mapping;
    for (std::int64_t d = 0; d < operand.rank(); ++d)
      mapping.push_back(static_cast<std::int64_t>(sizes.size()) + d);
    sizes.insert(sizes.end(), operand.dims().begin(), operand.dims().end());
    OpResult out;
    out.values = ctx.b.op(OpCode::kBroadcastInDim, operands,
                          BroadcastInDimAttrs{std::move(sizes), std::move(mapping)});
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  // reduce's pretty forms:
  //   stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : type
  //   stablehlo.reduce(%a init: %b), (%c init: %d) across dimensions = [0] : type
  //     reducer(%acc0: T, %x0: T) (%acc1: U, %x1: U) { ... stablehlo.return ... }
  StatusOr<OpResult> parse_reduce(Reader& r, Context& ctx, std::string_view name, SourcePos pos) {
    std::vector<Value> inputs, inits;
    while (true) {
      PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start a reduce input (%x init: %c)"));
      PJRT_LITE_ASSIGN_OR_RETURN(Value input, parse_operand(r, ctx, "as a reduce input"));
      PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("init", "after the reduce input"));
      PJRT_LITE_RETURN_IF_ERROR(r.expect(':', "after init"));
      PJRT_LITE_ASSIGN_OR_RETURN(Value init, parse_operand(r, ctx, "as an init value"));
      PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the init value"));
      inputs.push_back(input);
      inits.push_back(init);
      if (!(r.peek().is(',') && r.peek2().is('('))) break;
      r.next();
    }
    std::optional<OpCode> applies;
    SourcePos applies_pos;
    if (r.consume_ident_if("applies")) {
      PJRT_LITE_ASSIGN_OR_RETURN(Token op,
                                 r.expect_kind(TokenKind::kIdent, "a binary op", "after applies"));
      applies_pos = op.pos;
      StatusOr<OpCode> code = op_from_name(op.text);
      if (!code.ok() || !is_binary(*code) || !op.text.starts_with("stablehlo."))
        return error_at(op.pos,
                        str_cat("expected a binary op such as stablehlo.add after applies, found ",
                                describe(op)));
      applies = *code;
    }
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("across", "in stablehlo.reduce"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("dimensions", "after across"));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after dimensions"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims,
                               r.parse_int_list("after dimensions ="));
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
    std::vector<Value> operands = inputs;
    operands.insert(operands.end(), inits.begin(), inits.end());
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
    Graph body;
    if (applies) {
      if (inputs.size() != 1)
        return error_at(applies_pos, "applies takes one reduce input; use a reducer region");
      PJRT_LITE_ASSIGN_OR_RETURN(Shape init, ctx.b.shape(inits[0]));
      const DType dtype = declared.size() == 1 ? declared[0].dtype() : init.dtype();
      StatusOr<Graph> made = make_binary_body(*applies, dtype);
      if (!made.ok()) return error_at(applies_pos, made.status().message());
      body = std::move(made).value();
    } else {
      PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("reducer", "(or applies) in stablehlo.reduce"));
      // Each pair is (accumulator i, element i); the body takes all accumulators first.
      const std::size_t n = inputs.size();
      std::vector<BlockArg> args(2 * n);
      for (std::size_t i = 0; i < n; ++i) {
        PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start a reducer argument pair"));
        PJRT_LITE_ASSIGN_OR_RETURN(args[i], parse_block_arg(r));
        PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "between the reducer arguments"));
        PJRT_LITE_ASSIGN_OR_RETURN(args[n + i], parse_block_arg(r));
        PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after a reducer argument pair"));
      }
      PJRT_LITE_RETURN_IF_ERROR(r.expect('{', "to start the reducer body"));
      PJRT_LITE_ASSIGN_OR_RETURN(body, parse_region_body(r, ctx, args, "reducer"));
    }
    OpResult out;
    std::vector<Graph> bodies;
    bodies.push_back(std::move(body));
    out.values =
        ctx.b.op(OpCode::kReduce, operands, ReduceAttrs{std::move(dims)}, std::move(bodies));
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  // while's pretty form, as JAX prints it:
  //   stablehlo.while(%iterArg = %a, %iterArg_0 = %b) : tensor<i64>, tensor<f32>
  //    cond { ... stablehlo.return %p : tensor<i1> } do { ... stablehlo.return %x, %y : ... }
  // Both regions see the iteration arguments as their block arguments.
  StatusOr<OpResult> parse_while(Reader& r, Context& ctx, std::string_view name, SourcePos pos) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start the operands of stablehlo.while"));
    std::vector<BlockArg> args;
    std::vector<Value> operands;
    if (!r.consume_if(')')) {
      while (true) {
        PJRT_LITE_ASSIGN_OR_RETURN(
            Token arg, r.expect_kind(TokenKind::kValueId, "an iteration argument such as %iterArg",
                                     "in stablehlo.while"));
        if (arg.text.find('#') != std::string_view::npos)
          return error_at(arg.pos, str_cat("an iteration argument cannot select a result: ",
                                           arg.text));
        PJRT_LITE_RETURN_IF_ERROR(r.expect('=', "after the iteration argument"));
        PJRT_LITE_ASSIGN_OR_RETURN(Value v, parse_operand(r, ctx, "as the initial value"));
        args.push_back(BlockArg{std::string(arg.text.substr(1)), Shape(), arg.pos});
        operands.push_back(v);
        if (static_cast<std::int64_t>(args.size()) > kMaxResults)
          return error_at(arg.pos, str_cat("more than ", kMaxResults, " iteration arguments"));
        Token t = r.next();
        if (t.is(')')) break;
        if (!t.is(','))
          return error_at(t.pos, str_cat("expected ',' or ')' after an iteration argument, found ",
                                         describe(t)));
      }
    }
    std::vector<Shape> types;
    if (r.consume_if(':')) {
      const SourcePos type_pos = r.lexer().next_pos();
      PJRT_LITE_ASSIGN_OR_RETURN(types, r.parse_type_list());
      PJRT_LITE_RETURN_IF_ERROR(check_listed_types(ctx, operands, types, name, type_pos));
    } else if (!operands.empty()) {
      return error_at(r.peek().pos, "expected ':' and the types of the iteration arguments");
    }
    for (std::size_t k = 0; k < args.size(); ++k) args[k].type = types[k];
    if (r.peek().is('{')) PJRT_LITE_RETURN_IF_ERROR(r.parse_dict().status());
    std::vector<Graph> regions;
    std::vector<std::vector<Value>> captures(2);
    for (std::string_view keyword : {std::string_view("cond"), std::string_view("do")}) {
      PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(keyword, "in stablehlo.while"));
      PJRT_LITE_RETURN_IF_ERROR(r.expect('{', str_cat("to start the ", keyword, " region")));
      PJRT_LITE_ASSIGN_OR_RETURN(
          Graph g, parse_region_body(r, ctx, args, keyword, &captures[regions.size()]));
      regions.push_back(std::move(g));
    }
    return build_control_flow(ctx, OpCode::kWhile, name, operands, std::move(regions), captures,
                              types, pos);
  }

  /// `region` with parameters `parameters` declared first, in number order: its parameter k
  /// becomes parameters[parameter_of[k]], and the parameters numbered in `pass_through` are
  /// appended to its outputs.
  static StatusOr<Graph> rebuild_region(const Graph& region, const std::vector<Shape>& parameters,
                                        const std::vector<std::size_t>& parameter_of,
                                        const std::vector<std::size_t>& pass_through) {
    GraphBuilder b(region.name());
    std::vector<Value> values;
    for (std::size_t k = 0; k < parameters.size(); ++k)
      values.push_back(b.parameter(static_cast<std::int64_t>(k), parameters[k]));
    std::vector<Value> args;
    for (std::size_t k : parameter_of) args.push_back(values[k]);
    std::vector<Value> outputs = b.inline_graph(region, args);
    for (std::size_t k : pass_through) outputs.push_back(values[k]);
    return b.build(outputs);
  }

  /// while, case and if from their operands and parsed regions. StableHLO's regions may use
  /// outside values (`captures`, per region); the IR's regions are closed, so those values
  /// become operands: extra loop-carried values that the body passes through unchanged for
  /// while, the operands after the selector for case and if. Each region then takes the same
  /// parameters, in one order: the union of the captures in order of first use, region by
  /// region.
  StatusOr<OpResult> build_control_flow(Context& ctx, OpCode op, std::string_view name,
                                        const std::vector<Value>& operands,
                                        std::vector<Graph> regions,
                                        const std::vector<std::vector<Value>>& captures,
                                        const std::vector<Shape>& declared, SourcePos pos) {
    const bool is_while = op == OpCode::kWhile;
    if (!body_count_fits(op, regions.size()))
      return error_at(pos, str_cat(name, " needs ", has_variadic_bodies(op) ? "at least " : "",
                                   body_count(op), " region(s), got ", regions.size()));
    if (!is_while && operands.size() != 1)
      return error_at(pos, str_cat(name, " takes one operand (the ",
                                   op == OpCode::kIf ? "predicate" : "index", "), got ",
                                   operands.size()));
    // Block arguments: the loop-carried values for while, none for case and if.
    const std::size_t args = is_while ? operands.size() : 0;
    std::vector<Value> all = operands;
    std::vector<Shape> parameters;
    for (std::size_t k = 0; k < args; ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(operands[k]));
      parameters.push_back(std::move(s));
    }
    std::vector<Value> captured;  // the union, in order
    for (const std::vector<Value>& list : captures)
      for (Value v : list)
        if (std::find(captured.begin(), captured.end(), v) == captured.end()) {
          captured.push_back(v);
          all.push_back(v);
          PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(v));
          parameters.push_back(std::move(s));
        }
    for (std::size_t k = 0; k < regions.size(); ++k) {
      const std::vector<Value>& list = captures[k];
      const std::size_t params = static_cast<std::size_t>(regions[k].num_parameters());
      if (params != args + list.size())
        return error_at(pos, str_cat(name, ": region ", k, " takes ", params - list.size(),
                                     " argument(s) but ", args, " are passed"));
      if (captured.empty()) continue;
      std::vector<std::size_t> parameter_of;
      for (std::size_t j = 0; j < args; ++j) parameter_of.push_back(j);
      for (Value v : list)
        parameter_of.push_back(args + static_cast<std::size_t>(
                                          std::find(captured.begin(), captured.end(), v) -
                                          captured.begin()));
      std::vector<std::size_t> pass_through;
      if (is_while && k == 1)
        for (std::size_t j = args; j < parameters.size(); ++j) pass_through.push_back(j);
      StatusOr<Graph> rebuilt = rebuild_region(regions[k], parameters, parameter_of, pass_through);
      if (!rebuilt.ok()) return error_at(pos, rebuilt.status().message());
      regions[k] = std::move(rebuilt).value();
    }
    OpResult out;
    out.values = ctx.b.op(op, all, NoAttrs{}, std::move(regions));
    if (is_while) out.values.resize(std::min(out.values.size(), operands.size()));
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  // ---- Regions --------------------------------------------------------------------------

  /// `%name: type` with an optional loc(...).
  static StatusOr<BlockArg> parse_block_arg(Reader& r) {
    BlockArg a;
    PJRT_LITE_ASSIGN_OR_RETURN(
        Token t, r.expect_kind(TokenKind::kValueId, "an argument name", "in a block's arguments"));
    a.name = std::string(t.text.substr(1));
    a.pos = t.pos;
    PJRT_LITE_RETURN_IF_ERROR(r.expect(':', "after the argument name"));
    PJRT_LITE_ASSIGN_OR_RETURN(a.type, r.parse_type());
    PJRT_LITE_RETURN_IF_ERROR(r.skip_loc());
    return a;
  }

  /// The ops of a region whose '{' has been read, with `args` as its parameters in number
  /// order; reads through the closing '}'. With `captured`, the region may use outside
  /// values: they become parameters args.size().. and are listed in `captured`.
  StatusOr<Graph> parse_region_body(Reader& r, Context& ctx, const std::vector<BlockArg>& args,
                                    std::string_view name,
                                    std::vector<Value>* captured = nullptr) {
    if (ctx.depth + 1 > kMaxRegionDepth)
      return error_at(r.peek().pos, str_cat("regions nest deeper than ", kMaxRegionDepth));
    GraphBuilder b{std::string(name)};
    Scope scope;
    scope.parent = &ctx.scope;
    scope.builder = &b;
    scope.captured = captured;
    scope.next_parameter = static_cast<std::int64_t>(args.size());
    Context inner{b, scope, nullptr, ctx.depth + 1};
    for (std::size_t k = 0; k < args.size(); ++k) {
      Value v = b.parameter(static_cast<std::int64_t>(k), args[k].type);
      PJRT_LITE_RETURN_IF_ERROR(define(scope, args[k].name, {v}, args[k].pos));
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> outputs, parse_block(r, inner));
    StatusOr<Graph> g = b.build(outputs);
    if (!g.ok()) return error_at(last_terminator_pos_, g.status().message());
    return g;
  }

  /// A generic region `{ ^bb0(%a: T, ...): ops }` whose '{' comes next; `captured` as for
  /// parse_region_body.
  StatusOr<Graph> parse_generic_region(Reader& r, Context& ctx,
                                       std::vector<Value>* captured = nullptr) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect('{', "to start a region"));
    std::vector<BlockArg> args;
    if (r.peek().kind == TokenKind::kBlockId) {
      r.next();
      if (r.consume_if('(') && !r.consume_if(')')) {
        while (true) {
          PJRT_LITE_ASSIGN_OR_RETURN(BlockArg a, parse_block_arg(r));
          args.push_back(std::move(a));
          Token t = r.next();
          if (t.is(')')) break;
          if (!t.is(','))
            return error_at(
                t.pos, str_cat("expected ',' or ')' in the block arguments, found ", describe(t)));
        }
      }
      PJRT_LITE_RETURN_IF_ERROR(r.expect(':', "after the block label"));
    }
    return parse_region_body(r, ctx, args, "region", captured);
  }

  // ---- Terminators, calls and checks ----------------------------------------------------

  StatusOr<OpResult> parse_return(Reader& r, Context& ctx, std::string_view name) {
    OpResult out;
    out.terminator = true;
    PJRT_LITE_ASSIGN_OR_RETURN(out.values, parse_operand_list(r, ctx));
    if (r.peek().is('{')) PJRT_LITE_RETURN_IF_ERROR(r.parse_dict().status());
    if (out.values.empty()) return out;
    PJRT_LITE_RETURN_IF_ERROR(r.expect(':', str_cat("before the types of ", name)));
    const SourcePos type_pos = r.lexer().next_pos();
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> types, r.parse_type_list());
    PJRT_LITE_RETURN_IF_ERROR(check_listed_types(ctx, out.values, types, name, type_pos));
    return out;
  }

  StatusOr<OpResult> parse_call(Reader& r, Context& ctx, std::string_view name, SourcePos pos) {
    PJRT_LITE_ASSIGN_OR_RETURN(Token callee, r.expect_kind(TokenKind::kSymbol, "a function name",
                                                           str_cat("after ", name)));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start the call's arguments"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> args, parse_operand_list(r, ctx));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the call's arguments"));
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, name));
    return inline_call(ctx, Reader::symbol_name(callee.text), args, type, pos);
  }

  StatusOr<OpResult> inline_call(Context& ctx, const std::string& callee,
                                 const std::vector<Value>& args, const OpType& type,
                                 SourcePos pos) {
    if (!type.functional) return error_at(type.pos, "a call's type must be a function type");
    auto it = by_name_.find(callee);
    if (it == by_name_.end()) return error_at(pos, str_cat("call to undefined function @", callee));
    const std::size_t index = it->second;
    if (!sources_[index].has_body)
      return unsupported_at(pos, str_cat("a call to the external function @", callee));
    PJRT_LITE_RETURN_IF_ERROR(build(index));
    const Function& f = sources_[index].built;
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, args, TypeRule::kSame, "call", pos));
    if (args.size() != static_cast<std::size_t>(f.graph.num_parameters()))
      return error_at(pos, str_cat("@", callee, " takes ", f.graph.num_parameters(),
                                   " argument(s), got ", args.size()));
    for (std::size_t k = 0; k < args.size(); ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(args[k]));
      const Shape& want = f.graph.shape(f.graph.parameters()[k]);
      if (!s.same_type_and_dims(want))
        return error_at(
            pos, str_cat("argument ", k, " of the call to @", callee, " has type ",
                         tensor_type_name(s), " but @", callee, " takes ", tensor_type_name(want)));
    }
    std::vector<Value> outs = ctx.b.inline_graph(f.graph, args);
    if (!ctx.b.ok()) return error_at(pos, ctx.b.status().message());
    OpResult out;
    out.values.assign(outs.begin(), outs.begin() + f.num_results);
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, str_cat("call @", callee), pos));
    if (!f.checks.empty() && ctx.checks == nullptr)
      return unsupported_at(
          pos, str_cat("a call inside a region to @", callee, ", which makes checks,"));
    for (const Check& c : f.checks) {
      Check mapped = c;
      mapped.actual = outs[static_cast<std::size_t>(c.actual_output)];
      if (c.expected_output >= 0)
        mapped.expected = outs[static_cast<std::size_t>(c.expected_output)];
      ctx.checks->push_back(std::move(mapped));
    }
    return out;
  }

  /// `check.expect_eq`, `check.expect_close_const`, ... : the kind, or nullopt.
  static std::optional<CheckKind> check_kind(std::string_view target, bool& is_const) {
    if (!target.starts_with("check.")) return std::nullopt;
    target.remove_prefix(6);
    is_const = target.ends_with("_const");
    if (is_const) target.remove_suffix(6);
    if (target == "expect_eq") return CheckKind::kEq;
    if (target == "expect_close") return CheckKind::kClose;
    if (target == "expect_almost_eq") return CheckKind::kAlmostEq;
    return std::nullopt;
  }

  static std::string attr_text(const AttrValue& v) {
    switch (v.kind) {
      case AttrValue::Kind::kBool: return v.b ? "true" : "false";
      case AttrValue::Kind::kInt:
      case AttrValue::Kind::kFloat:
      case AttrValue::Kind::kString:
      case AttrValue::Kind::kSymbol: return v.text;
      case AttrValue::Kind::kEnum: return v.word;
      case AttrValue::Kind::kUnit: return "";
      default: return v.text.empty() ? v.word : v.text;
    }
  }

  /// Records a check; `attrs` are its attributes (a dense one is the *_const literal).
  static StatusOr<OpResult> add_check(Context& ctx, const std::string& target,
                                      const std::vector<Value>& operands, const AttrDict& attrs,
                                      const std::shared_ptr<const Literal>& literal,
                                      SourcePos pos) {
    bool is_const = false;
    std::optional<CheckKind> kind = check_kind(target, is_const);
    if (!kind) return unsupported_at(pos, str_cat("the check ", target));
    if (ctx.checks == nullptr)
      return unsupported_at(pos, str_cat("a check inside a region (", target, ")"));
    Check c;
    c.kind = *kind;
    c.target = target;
    c.line = pos.line;
    const std::size_t want = is_const ? 1 : 2;
    if (operands.size() != want)
      return error_at(pos, str_cat(target, " takes ", want, " operand(s), got ", operands.size()));
    c.actual = operands[0];
    std::shared_ptr<const Literal> expected = literal;
    for (const auto& [key, value] : attrs) {
      if (value.kind == AttrValue::Kind::kDense && !expected) {
        expected = value.dense;
        continue;
      }
      if (key == "has_side_effect" || key == "call_target_name" || key == "api_version") continue;
      c.attributes.emplace_back(key, attr_text(value));
    }
    if (is_const) {
      if (!expected)
        return error_at(pos,
                        str_cat(target, " needs the expected value as a dense<...> attribute"));
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(c.actual));
      if (!s.same_type_and_dims(expected->shape()))
        return error_at(
            pos, str_cat(target, ": the checked value has type ", tensor_type_name(s),
                         " but the expected constant has ", tensor_type_name(expected->shape())));
      c.expected_literal = *expected;
    } else {
      c.expected = operands[1];
      PJRT_LITE_ASSIGN_OR_RETURN(Shape a, ctx.b.shape(c.actual));
      PJRT_LITE_ASSIGN_OR_RETURN(Shape e, ctx.b.shape(c.expected));
      if (!a.same_type_and_dims(e))
        return error_at(pos, str_cat(target, ": the checked value has type ", tensor_type_name(a),
                                     " but the expected value has ", tensor_type_name(e)));
    }
    ctx.checks->push_back(std::move(c));
    return OpResult{};
  }

  /// `stablehlo.custom_call @target(%a, %b) {attrs} : (T, T) -> ()`.
  StatusOr<OpResult> parse_custom_call(Reader& r, Context& ctx, SourcePos pos) {
    PJRT_LITE_ASSIGN_OR_RETURN(Token target,
                               r.expect_kind(TokenKind::kSymbol, "a call target such as @foo",
                                             "after stablehlo.custom_call"));
    const std::string name = Reader::symbol_name(target.text);
    bool is_const = false;
    if (!check_kind(name, is_const) && name != "Sharding")
      return unsupported_at(pos, str_cat("stablehlo.custom_call @", name));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start the custom call's operands"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operand_list(r, ctx));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the custom call's operands"));
    AttrDict attrs;
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, parse_type_tail(r, "stablehlo.custom_call", &attrs));
    return finish_custom_call(ctx, name, operands, attrs, type, pos);
  }

  static StatusOr<OpResult> finish_custom_call(Context& ctx, const std::string& target,
                                               const std::vector<Value>& operands,
                                               const AttrDict& attrs, const OpType& type,
                                               SourcePos pos) {
    if (target == "Sharding") {
      // jax's sharding constraint: on one device the value itself, so no node at all.
      PJRT_LITE_ASSIGN_OR_RETURN(
          std::vector<Shape> declared,
          declared_types(ctx, type, operands, TypeRule::kSame, "stablehlo.custom_call", pos));
      if (operands.size() != 1 || declared.size() != 1)
        return error_at(pos,
                        "stablehlo.custom_call @Sharding takes one operand and has one result");
      OpResult out;
      out.values = operands;
      PJRT_LITE_RETURN_IF_ERROR(
          check_results(ctx, out.values, declared, "stablehlo.custom_call @Sharding", pos));
      return out;
    }
    if (!type.functional)
      return error_at(type.pos, "a custom call's type must be a function type (...) -> (...)");
    if (!type.function.results.empty())
      return error_at(type.pos, str_cat(target, " returns nothing, but its type lists results"));
    PJRT_LITE_RETURN_IF_ERROR(
        declared_types(ctx, type, operands, TypeRule::kSame, "stablehlo.custom_call", pos)
            .status());
    return add_check(ctx, target, operands, attrs, nullptr, pos);
  }

  /// The check dialect's own form: `check.expect_eq %a, %b : T`,
  /// `check.expect_eq_const %a, dense<...> : T`, with optional `, key = value` fields.
  StatusOr<OpResult> parse_check_op(Reader& r, Context& ctx, std::string_view name, SourcePos pos) {
    bool is_const = false;
    if (!check_kind(name, is_const)) return unsupported_at(pos, name);
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operand_list(r, ctx));
    AttrDict attrs;
    std::shared_ptr<const Literal> literal;
    bool typed = false;
    while (r.consume_if(',')) {
      if (r.peek().is_ident("dense")) {
        PJRT_LITE_ASSIGN_OR_RETURN(AttrValue v, r.parse_attr_value());  // reads ': type' too
        literal = v.dense;
        typed = true;
        continue;
      }
      PJRT_LITE_ASSIGN_OR_RETURN(
          Token key, r.expect_kind(TokenKind::kIdent, "a field name", str_cat("in ", name)));
      PJRT_LITE_RETURN_IF_ERROR(r.expect('=', str_cat("after ", key.text)));
      PJRT_LITE_ASSIGN_OR_RETURN(AttrValue v, r.parse_attr_value());
      attrs.emplace_back(std::string(key.text), std::move(v));
    }
    if (r.peek().is('{')) {
      PJRT_LITE_ASSIGN_OR_RETURN(AttrDict d, r.parse_dict());
      for (auto& kv : d) attrs.push_back(std::move(kv));
    }
    if (!typed || r.peek().is(':')) {
      PJRT_LITE_RETURN_IF_ERROR(r.expect(':', str_cat("before the type of ", name)));
      PJRT_LITE_RETURN_IF_ERROR(r.parse_op_type().status());
    }
    return add_check(ctx, std::string(name), operands, attrs, literal, pos);
  }

  // ---- Generic form ---------------------------------------------------------------------

  /// `"dialect.op"(%operands) <{properties}> ({regions}) {attributes} : (types) -> types`.
  StatusOr<OpResult> parse_generic(Reader& r, Context& ctx, const std::string& name,
                                   SourcePos pos) {
    // Decide support before reading further: an unsupported op's attributes and regions may
    // hold syntax this parser does not read.
    std::optional<OpCode> code;
    const bool is_return = name == "func.return" || name == "stablehlo.return";
    const bool is_call = name == "func.call";
    const bool is_custom = name == "stablehlo.custom_call";
    const bool is_dot = name == "stablehlo.dot";
    const bool is_broadcast = name == "stablehlo.broadcast";
    if (!is_return && !is_call && !is_custom && !is_dot && !is_broadcast) {
      const bool is_chlo = name.starts_with("chlo.");
      if (!name.starts_with("stablehlo.") && !is_chlo) return unsupported_at(pos, name);
      StatusOr<OpCode> c = op_from_name(name);
      if (is_chlo && !c.ok()) return unsupported_at(pos, name);
      if (!c.ok() || *c == OpCode::kParameter) {
        if (is_known_unsupported_op(std::string_view(name).substr(10)))
          return unsupported_at(pos, name);
        return error_at(pos, str_cat("unknown op ", name));
      }
      code = *c;
    }
    PJRT_LITE_RETURN_IF_ERROR(r.expect('(', str_cat("to start the operands of \"", name, "\"")));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> operands, parse_operand_list(r, ctx));
    PJRT_LITE_RETURN_IF_ERROR(r.expect(')', str_cat("after the operands of \"", name, "\"")));
    AttrDict attrs;
    if (r.peek().is('<')) {
      r.next();
      PJRT_LITE_ASSIGN_OR_RETURN(attrs, r.parse_dict());
      PJRT_LITE_RETURN_IF_ERROR(r.expect('>', "to end the properties <{...}>"));
    }
    std::vector<Graph> regions;
    std::vector<std::vector<Value>> captures;  // per region, for control flow
    if (r.peek().is('(') && r.peek2().is('{')) {
      r.next();
      do {
        if (regions.size() >= static_cast<std::size_t>(kMaxResults))
          return error_at(r.peek().pos, str_cat("more than ", kMaxResults, " regions"));
        captures.emplace_back();
        const bool capturing = code && is_control_flow(*code);
        PJRT_LITE_ASSIGN_OR_RETURN(
            Graph g, parse_generic_region(r, ctx, capturing ? &captures.back() : nullptr));
        regions.push_back(std::move(g));
      } while (r.consume_if(','));
      PJRT_LITE_RETURN_IF_ERROR(r.expect(')', "after the regions"));
    }
    if (r.peek().is('{')) {
      PJRT_LITE_ASSIGN_OR_RETURN(AttrDict more, r.parse_dict());
      for (auto& kv : more) attrs.push_back(std::move(kv));
    }
    PJRT_LITE_RETURN_IF_ERROR(r.expect(':', str_cat("before the type of \"", name, "\"")));
    PJRT_LITE_ASSIGN_OR_RETURN(OpType type, r.parse_op_type());
    if (!type.functional)
      return error_at(type.pos, "a generic op's type must be a function type (...) -> ...");

    if (is_return) {
      PJRT_LITE_RETURN_IF_ERROR(
          check_listed_types(ctx, operands, type.function.inputs, name, type.pos));
      if (!type.function.results.empty())
        return error_at(type.pos, str_cat(name, " has no results, but its type lists some"));
      OpResult out;
      out.terminator = true;
      out.values = operands;
      return out;
    }
    if (is_call) {
      const AttrValue* callee = find_attr(attrs, "callee");
      if (!callee || callee->kind != AttrValue::Kind::kSymbol)
        return error_at(pos, "func.call needs a callee = @function attribute");
      return inline_call(ctx, callee->text, operands, type, pos);
    }
    if (is_custom) {
      const AttrValue* target = find_attr(attrs, "call_target_name");
      if (!target || target->kind != AttrValue::Kind::kString)
        return error_at(pos, "stablehlo.custom_call needs a call_target_name = \"...\" attribute");
      bool is_const = false;
      if (!check_kind(target->text, is_const) && target->text != "Sharding")
        return unsupported_at(pos, str_cat("stablehlo.custom_call @", target->text));
      return finish_custom_call(ctx, target->text, operands, attrs, type, pos);
    }
    if (is_dot) {
      if (find_attr(attrs, "algorithm"))
        return unsupported_at(pos, "stablehlo.dot with an algorithm");
      return build_dot(ctx, operands, type, name, pos);
    }
    if (is_broadcast) {
      PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes,
                                 int_list_attr(attrs, "broadcast_sizes", name, pos));
      return build_broadcast(ctx, operands, std::move(sizes), type, name, pos);
    }
    if (is_control_flow(*code)) {
      PJRT_LITE_ASSIGN_OR_RETURN(
          std::vector<Shape> declared,
          declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
      return build_control_flow(ctx, *code, name, operands, std::move(regions), captures,
                                declared, pos);
    }
    return build_generic(ctx, *code, name, operands, attrs, std::move(regions), type, pos);
  }

  /// The CHLO ops the IR has only in real form (erf, lgamma, top_k, ...) on complex numbers
  /// are valid CHLO the IR has no op for: UNIMPLEMENTED.
  static Status check_chlo_operands(const Context& ctx, OpCode op,
                                    const std::vector<Value>& operands, std::string_view name,
                                    SourcePos pos) {
    if (!is_chlo(op) || is_in(DType::kC64, accepted_types(op))) return ok_status();
    for (Value v : operands) {
      StatusOr<Shape> s = ctx.b.shape(v);
      if (s.ok() && is_complex(s->dtype()))
        return unsupported_at(pos, str_cat(name, " on complex numbers"));
    }
    return ok_status();
  }

  StatusOr<OpResult> build_generic(Context& ctx, OpCode op, const std::string& name,
                                   const std::vector<Value>& operands, const AttrDict& attrs,
                                   std::vector<Graph> regions, const OpType& type, SourcePos pos) {
    PJRT_LITE_RETURN_IF_ERROR(check_chlo_operands(ctx, op, operands, name, pos));
    if (!has_body(op) && !regions.empty()) return error_at(pos, str_cat(name, " takes no regions"));
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                               declared_types(ctx, type, operands, TypeRule::kSame, name, pos));
    auto result_shape = [&]() -> StatusOr<Shape> { return single_result(type, name); };
    Attributes a = NoAttrs{};
    switch (op) {
      case OpCode::kConstant: {
        const AttrValue* v = find_attr(attrs, "value");
        if (!v || v->kind != AttrValue::Kind::kDense)
          return error_at(pos, "stablehlo.constant needs a value = dense<...> attribute");
        a = ConstantAttrs{v->dense};
        break;
      }
      case OpCode::kIota: {
        PJRT_LITE_ASSIGN_OR_RETURN(Shape s, result_shape());
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t d, int_attr(attrs, "iota_dimension", name, pos));
        a = IotaAttrs{s, d};
        break;
      }
      case OpCode::kCompare: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> dir,
                                   enum_attr(attrs, "comparison_direction"));
        if (!dir) return error_at(pos, "stablehlo.compare needs comparison_direction");
        StatusOr<ComparisonDirection> d = comparison_direction_from_name(*dir);
        if (!d.ok()) return error_at(pos, d.status().message());
        CompareAttrs c{*d, ComparisonType::kNotype};
        PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> t, enum_attr(attrs, "compare_type"));
        if (t) {
          StatusOr<ComparisonType> parsed = comparison_type_from_name(*t);
          if (!parsed.ok()) return error_at(pos, parsed.status().message());
          c.type = *parsed;
        }
        a = c;
        break;
      }
      case OpCode::kConvert:
      case OpCode::kBitcastConvert: {
        PJRT_LITE_ASSIGN_OR_RETURN(Shape s, result_shape());
        if (op == OpCode::kBitcastConvert)
          PJRT_LITE_RETURN_IF_ERROR(check_bitcast(ctx, operands, s, pos));
        a = ConvertAttrs{s.dtype()};
        break;
      }
      case OpCode::kBroadcastInDim: {
        PJRT_LITE_ASSIGN_OR_RETURN(Shape s, result_shape());
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> bd,
                                   int_list_attr(attrs, "broadcast_dimensions", name, pos));
        a = BroadcastInDimAttrs{std::vector<std::int64_t>(s.dims().begin(), s.dims().end()),
                                std::move(bd)};
        break;
      }
      case OpCode::kReshape: {
        PJRT_LITE_ASSIGN_OR_RETURN(Shape s, result_shape());
        a = ReshapeAttrs{std::vector<std::int64_t>(s.dims().begin(), s.dims().end())};
        break;
      }
      case OpCode::kTranspose: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> p,
                                   int_list_attr(attrs, "permutation", name, pos));
        a = TransposeAttrs{std::move(p)};
        break;
      }
      case OpCode::kSlice: {
        SliceAttrs s;
        PJRT_LITE_ASSIGN_OR_RETURN(s.start_indices,
                                   int_list_attr(attrs, "start_indices", name, pos));
        PJRT_LITE_ASSIGN_OR_RETURN(s.limit_indices,
                                   int_list_attr(attrs, "limit_indices", name, pos));
        PJRT_LITE_ASSIGN_OR_RETURN(s.strides, int_list_attr(attrs, "strides", name, pos, false));
        if (s.strides.empty()) s.strides.assign(s.start_indices.size(), 1);
        a = std::move(s);
        break;
      }
      case OpCode::kConcatenate: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t d, int_attr(attrs, "dimension", name, pos));
        a = ConcatenateAttrs{d};
        break;
      }
      case OpCode::kPad: {
        PadAttrs p;
        PJRT_LITE_ASSIGN_OR_RETURN(p.edge_padding_low,
                                   int_list_attr(attrs, "edge_padding_low", name, pos));
        PJRT_LITE_ASSIGN_OR_RETURN(p.edge_padding_high,
                                   int_list_attr(attrs, "edge_padding_high", name, pos));
        PJRT_LITE_ASSIGN_OR_RETURN(p.interior_padding,
                                   int_list_attr(attrs, "interior_padding", name, pos));
        a = std::move(p);
        break;
      }
      case OpCode::kTriangularSolve: {
        TriangularSolveAttrs ts;
        PJRT_LITE_ASSIGN_OR_RETURN(ts.left_side, bool_attr(attrs, "left_side"));
        PJRT_LITE_ASSIGN_OR_RETURN(ts.lower, bool_attr(attrs, "lower"));
        PJRT_LITE_ASSIGN_OR_RETURN(ts.unit_diagonal, bool_attr(attrs, "unit_diagonal"));
        PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> t, enum_attr(attrs, "transpose_a"));
        if (!t) return error_at(pos, "stablehlo.triangular_solve needs transpose_a");
        StatusOr<Transpose> parsed = transpose_from_name(*t);
        if (!parsed.ok()) return error_at(pos, parsed.status().message());
        ts.transpose_a = *parsed;
        a = ts;
        break;
      }
      case OpCode::kRngBitGenerator: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> t, enum_attr(attrs, "rng_algorithm"));
        if (!t) return error_at(pos, "stablehlo.rng_bit_generator needs rng_algorithm");
        StatusOr<RngAlgorithm> parsed = rng_algorithm_from_name(*t);
        if (!parsed.ok()) return error_at(pos, parsed.status().message());
        PJRT_LITE_ASSIGN_OR_RETURN(Shape bits, rng_output_type(type, name));
        a = RngBitGeneratorAttrs{*parsed, std::move(bits)};
        break;
      }
      case OpCode::kFft: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::optional<std::string> t, enum_attr(attrs, "fft_type"));
        if (!t) return error_at(pos, "stablehlo.fft needs fft_type");
        StatusOr<FftType> parsed = fft_type_from_name(*t);
        if (!parsed.ok()) return error_at(pos, parsed.status().message());
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> len,
                                   int_list_attr(attrs, "fft_length", name, pos));
        a = FftAttrs{*parsed, std::move(len)};
        break;
      }
      case OpCode::kReverse: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> d,
                                   int_list_attr(attrs, "dimensions", name, pos));
        a = ReverseAttrs{std::move(d)};
        break;
      }
      case OpCode::kDynamicSlice: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> s,
                                   int_list_attr(attrs, "slice_sizes", name, pos));
        a = DynamicSliceAttrs{std::move(s)};
        break;
      }
      case OpCode::kReduce: {
        if (regions.size() != 1) return error_at(pos, "stablehlo.reduce needs one region");
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> d,
                                   int_list_attr(attrs, "dimensions", name, pos));
        a = ReduceAttrs{std::move(d)};
        break;
      }
      case OpCode::kGather: {
        const AttrValue* v = find_attr(attrs, "dimension_numbers");
        if (!v || v->kind != AttrValue::Kind::kDict)
          return error_at(pos, "stablehlo.gather needs dimension_numbers = #stablehlo.gather<...>");
        GatherAttrs ga;
        const std::pair<std::string_view, std::vector<std::int64_t>*> fields[5] = {
            {"offset_dims", &ga.offset_dims},
            {"collapsed_slice_dims", &ga.collapsed_slice_dims},
            {"operand_batching_dims", &ga.operand_batching_dims},
            {"start_indices_batching_dims", &ga.start_indices_batching_dims},
            {"start_index_map", &ga.start_index_map}};
        PJRT_LITE_RETURN_IF_ERROR(
            read_dimension_numbers(*v, fields, ga.index_vector_dim, "#stablehlo.gather"));
        PJRT_LITE_ASSIGN_OR_RETURN(ga.slice_sizes, int_list_attr(attrs, "slice_sizes", name, pos));
        PJRT_LITE_ASSIGN_OR_RETURN(ga.indices_are_sorted, bool_attr(attrs, "indices_are_sorted"));
        a = std::move(ga);
        break;
      }
      case OpCode::kScatter: {
        if (regions.size() != 1) return error_at(pos, "stablehlo.scatter needs one region");
        if (operands.size() != 3)
          return unsupported_at(
              pos, str_cat("stablehlo.scatter of ", operands.size(), " operands (several inputs)"));
        const AttrValue* v = find_attr(attrs, "scatter_dimension_numbers");
        if (!v || v->kind != AttrValue::Kind::kDict)
          return error_at(pos,
                          "stablehlo.scatter needs scatter_dimension_numbers = "
                          "#stablehlo.scatter<...>");
        ScatterAttrs sa;
        const std::pair<std::string_view, std::vector<std::int64_t>*> fields[5] = {
            {"update_window_dims", &sa.update_window_dims},
            {"inserted_window_dims", &sa.inserted_window_dims},
            {"input_batching_dims", &sa.input_batching_dims},
            {"scatter_indices_batching_dims", &sa.scatter_indices_batching_dims},
            {"scatter_dims_to_operand_dims", &sa.scatter_dims_to_operand_dims}};
        PJRT_LITE_RETURN_IF_ERROR(
            read_dimension_numbers(*v, fields, sa.index_vector_dim, "#stablehlo.scatter"));
        PJRT_LITE_ASSIGN_OR_RETURN(sa.indices_are_sorted, bool_attr(attrs, "indices_are_sorted"));
        PJRT_LITE_ASSIGN_OR_RETURN(sa.unique_indices, bool_attr(attrs, "unique_indices"));
        a = std::move(sa);
        break;
      }
      case OpCode::kReduceWindow:
      case OpCode::kSelectAndScatter: {
        if (regions.size() != body_count(op))
          return error_at(pos, str_cat(name, " needs ", body_count(op), " region(s), got ",
                                       regions.size()));
        PJRT_LITE_ASSIGN_OR_RETURN(a, window_attrs(attrs, name, pos));
        break;
      }
      case OpCode::kConvolution: {
        const AttrValue* v = find_attr(attrs, "dimension_numbers");
        if (!v || v->kind != AttrValue::Kind::kOpaque || v->text != "stablehlo.conv")
          return error_at(pos,
                          "stablehlo.convolution needs dimension_numbers = #stablehlo.conv<...>");
        if (v->word.starts_with("raw"))
          return unsupported_at(v->pos, "#stablehlo.conv<raw ...> dimension numbers");
        ConvolutionAttrs c;
        if (Status s = parse_convolution_dimension_numbers(v->word, c); !s.ok())
          return error_at(v->pos, s.message());
        PJRT_LITE_ASSIGN_OR_RETURN(c.window_strides,
                                   int_list_attr(attrs, "window_strides", name, pos, false));
        PJRT_LITE_ASSIGN_OR_RETURN(c.lhs_dilation,
                                   int_list_attr(attrs, "lhs_dilation", name, pos, false));
        PJRT_LITE_ASSIGN_OR_RETURN(c.rhs_dilation,
                                   int_list_attr(attrs, "rhs_dilation", name, pos, false));
        if (const AttrValue* rev = find_attr(attrs, "window_reversal")) {
          PJRT_LITE_ASSIGN_OR_RETURN(c.window_reversal, bool_list_value(*rev, "window_reversal"));
        }
        PJRT_LITE_RETURN_IF_ERROR(padding_attr(attrs, name, c.padding_low, c.padding_high));
        PJRT_LITE_RETURN_IF_ERROR(group_counts(attrs, c));
        a = c.with_defaults();
        break;
      }
      case OpCode::kSort: {
        if (regions.size() != 1)
          return error_at(pos, str_cat("stablehlo.sort needs one region (the comparator), got ",
                                       regions.size()));
        // MLIR's defaults: dimension -1, is_stable false.
        SortAttrs sa{-1, false};
        if (find_attr(attrs, "dimension")) {
          PJRT_LITE_ASSIGN_OR_RETURN(sa.dimension, int_attr(attrs, "dimension", name, pos));
        }
        PJRT_LITE_ASSIGN_OR_RETURN(sa.is_stable, bool_attr(attrs, "is_stable"));
        a = sa;
        break;
      }
      case OpCode::kTopK: {
        PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t k, int_attr(attrs, "k", name, pos));
        a = TopKAttrs{k};
        break;
      }
      case OpCode::kReducePrecision: {
        ReducePrecisionAttrs rp;
        PJRT_LITE_ASSIGN_OR_RETURN(rp.exponent_bits, int_attr(attrs, "exponent_bits", name, pos));
        PJRT_LITE_ASSIGN_OR_RETURN(rp.mantissa_bits, int_attr(attrs, "mantissa_bits", name, pos));
        a = rp;
        break;
      }
      case OpCode::kDotGeneral: {
        if (find_attr(attrs, "algorithm"))
          return unsupported_at(pos, "stablehlo.dot_general with an algorithm");
        const AttrValue* v = find_attr(attrs, "dot_dimension_numbers");
        if (!v || v->kind != AttrValue::Kind::kDict)
          return error_at(
              pos, "stablehlo.dot_general needs dot_dimension_numbers = #stablehlo.dot<...>");
        DotDimensionNumbers dn;
        const std::pair<std::string_view, std::vector<std::int64_t>*> fields[4] = {
            {"lhs_batching_dimensions", &dn.lhs_batching_dimensions},
            {"rhs_batching_dimensions", &dn.rhs_batching_dimensions},
            {"lhs_contracting_dimensions", &dn.lhs_contracting_dimensions},
            {"rhs_contracting_dimensions", &dn.rhs_contracting_dimensions}};
        for (const auto& [key, list] : fields)
          if (const AttrValue* f = v->find(key)) {
            PJRT_LITE_ASSIGN_OR_RETURN(*list, int_list_value(*f, key));
          }
        a = std::move(dn);
        break;
      }
      default: break;  // element-wise ops without attributes
    }
    OpResult out;
    out.values = ctx.b.op(op, operands, std::move(a), std::move(regions));
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, name, pos));
    return out;
  }

  Reader top_;
  std::string module_name_;
  std::vector<FunctionSource> sources_;
  std::map<std::string, std::size_t> by_name_;
  std::int64_t call_depth_ = 0;
  SourcePos last_terminator_pos_;
};

}  // namespace detail

/// Parses a StableHLO module: every func.func with its calls inlined and its checks listed
/// (module.hpp). Text without a `module { ... }` wrapper (bare functions) is accepted too.
/// INVALID_ARGUMENT "line:column: ..." for malformed or ill-typed text, UNIMPLEMENTED for
/// valid StableHLO the IR cannot represent. Thread-safe (no shared state).
inline StatusOr<Module> parse_module(std::string_view text) { return detail::Parser(text).parse(); }

}  // namespace pjrt_lite::stablehlo

namespace pjrt_lite {

/// The graph of function `entry` of a StableHLO module, with every call inlined and only the
/// function's own results as outputs (checks are dropped; parse_module keeps them).
/// NOT_FOUND when the module has no such function. Thread-safe.
inline StatusOr<Graph> parse_stablehlo(std::string_view text, std::string_view entry = "main") {
  PJRT_LITE_ASSIGN_OR_RETURN(stablehlo::Module module, stablehlo::parse_module(text));
  const stablehlo::Function* f = module.find(entry);
  if (f == nullptr) return not_found_error(str_cat("the module has no function @", entry));
  if (static_cast<std::int64_t>(f->graph.outputs().size()) == f->num_results) return f->graph;
  GraphParts parts = f->graph.to_parts();
  parts.outputs.resize(static_cast<std::size_t>(f->num_results));
  return Graph::from_parts(std::move(parts));
}

}  // namespace pjrt_lite
