#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// What reading any op works with, whichever syntax spells it: the names visible where it
// stands (Scope), the graph it is added to (Context), the op as read (OpParts), the entry of
// the op table that says how to read and add it (OpSyntax), its operands resolved to values
// and its declared type checked against what the IR infers.
//
// Both syntaxes read an op into the same OpParts: the generic form spells its attributes as a
// dictionary, and each pretty form translates its keywords (`dims = [1, 0]`) into the
// dictionary's names (`permutation`), so that one attribute reader per op serves both.

#include <charconv>
#include <cstdint>
#include <map>
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
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/module.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// The deepest nesting of regions (a reduce inside a reduce's body ...) accepted.
inline constexpr std::int64_t kMaxRegionDepth = 16;
/// The longest chain of calls (f calls g calls h ...) accepted.
inline constexpr std::int64_t kMaxCallDepth = 64;
/// The most results one op may declare (`%0:N`), and the most regions or iteration
/// arguments one op may have.
inline constexpr std::int64_t kMaxResults = 1 << 16;

/// The values visible in one region. The regions of while, case and if may use values
/// defined outside them (StableHLO's implicit captures): each such value becomes one more
/// parameter of the region, numbered after its block arguments in the order of first use,
/// and `captured` lists the outside values in that order. Other regions (reduce's, ...) see
/// their parents' names only to report a capture, which their ops cannot express.
struct Scope {
  struct Def {
    std::vector<Value> values;  // empty for a tuple
    SourcePos pos;
    bool tuple = false;  // a stablehlo.tuple: only stablehlo.tuple and get_tuple_element read it
    std::vector<Def> elements = {};  // a tuple's: each a value (values[0]) or a tuple
  };
  std::unordered_map<std::string, Def> defs;
  Scope* parent = nullptr;
  GraphBuilder* builder = nullptr;         // where this scope's values live
  std::vector<Value>* captured = nullptr;  // set when captures are allowed; parent's values
  std::unordered_map<std::string, Value> captured_by_use;  // "name#index" -> parameter
  std::int64_t next_parameter = 0;

  [[nodiscard]] const Def* find(const std::string& name, bool& local) const {
    local = true;
    for (const Scope* s = this; s != nullptr; s = s->parent, local = false)
      if (auto it = s->defs.find(name); it != s->defs.end()) return &it->second;
    return nullptr;
  }
};

class BodyReader;

/// The device meshes a module declares (`sdy.mesh @mesh = <["x"=2, "y"=1]>`): per mesh name,
/// its axes and their sizes.
using Meshes = std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>>;

/// The device ids a mesh lists (`device_ids=[...]`), per mesh name; none: 0, 1, ...
using MeshDevices = std::map<std::string, std::vector<std::int64_t>>;

/// The size of `axis` of mesh `mesh`, or -1 when either is not declared.
inline std::int64_t mesh_axis_size(const Meshes& meshes, const std::string& mesh,
                                   std::string_view axis) {
  auto it = meshes.find(mesh);
  if (it == meshes.end()) return -1;
  for (const auto& [name, size] : it->second)
    if (name == axis) return size;
  return -1;
}

/// Where ops are being added: a function body or a region.
struct Context {
  BodyReader& reader;  // reads regions and inlines calls
  GraphBuilder& b;
  Scope& scope;
  std::vector<Check>* checks;  // null inside regions, which cannot hold checks
  std::int64_t depth = 0;      // region nesting
  /// Parameters of this function whose (scalar) values are known: the dimension sizes a
  /// shape-polymorphic caller passes, for folding shape computations.
  const std::map<std::int64_t, std::int64_t>* known_params = nullptr;
  const Meshes* meshes = nullptr;
  /// Values that annotate_device_placement puts in a memory kind ("pinned_host"), in order;
  /// null inside regions.
  std::vector<std::pair<Value, std::string>>* placements = nullptr;
  /// interpreter.run_parallel calls, with their operands as values and results as
  /// parameters (outputs and numbers filled in by the module reader); null inside regions.
  std::vector<std::pair<ParallelRun, std::vector<Value>>>* parallel_runs = nullptr;
  /// The module's `mhlo.num_partitions`, 0 when it does not say.
  std::int64_t num_partitions = 0;
  const MeshDevices* mesh_devices = nullptr;
  /// The function's shardings (constraints, shard_map's entries and exits), with values of
  /// ctx.b; null inside regions.
  ShardingPlan* sharding = nullptr;
};

/// What one parsed op yields.
struct OpResult {
  std::vector<Value> values;
  bool terminator = false;
  bool tuple = false;  // one tuple (stablehlo.tuple), its elements in tuple_elements
  std::vector<Scope::Def> tuple_elements = {};
};

/// A block argument `%name: type` (of a region, or a while's iteration argument).
struct BlockArg {
  std::string name;
  Shape type;
  SourcePos pos;
};

/// What an op's reader needs from the reader of the whole module: the ops of a region are
/// read like a function's, and a call inlines another function of the module. An interface,
/// because ops hold regions of ops: the module reader calls the op readers, which call back.
class BodyReader {
 public:
  /// The ops of a region whose '{' has been read, with `args` as its parameters in number
  /// order; reads through the closing '}'. With `captured`, the region may use outside
  /// values: they become parameters args.size().. and are listed in `captured`.
  virtual StatusOr<Graph> read_region_body(Reader& r, Context& ctx,
                                           const std::vector<BlockArg>& args, std::string_view name,
                                           std::vector<Value>* captured) = 0;
  /// Adds the body of function @callee, applied to `args`, to ctx.
  virtual StatusOr<OpResult> inline_call(Context& ctx, const std::string& callee,
                                         const std::vector<Value>& args, const OpType& type,
                                         SourcePos pos) = 0;

 protected:
  BodyReader() = default;
  BodyReader(const BodyReader&) = default;
  BodyReader& operator=(const BodyReader&) = default;
  ~BodyReader() = default;
};

/// How a plain (non-function) type list after an op's ':' reads.
enum class TypeRule : std::uint8_t {
  kSame,        // `: T`: every operand and the result have type T
  kSelect,      // `: Tpred, T`: pred, then both branches and the result
  kResultOnly,  // `: T`: the result only (complex)
};

/// One op as read from either syntax, before it is added.
struct OpParts {
  SourcePos pos;  // of the op's name
  std::vector<Value> operands;
  std::vector<Scope::Def> tuple_elements = {};  // stablehlo.tuple's, and get_tuple_element's operand
  AttrDict attrs;  // named as in the generic form
  std::vector<Graph> regions;
  std::vector<std::vector<Value>> captures;  // per region, outside values it uses (control flow)
  OpType type;
};

struct OpSyntax;
/// Reads an op's pretty form, from just after its name, into `parts`.
using PrettyForm = Status (*)(Reader& r, Context& ctx, const OpSyntax& op, OpParts& parts);
/// The IR attributes of an op, from its parts.
using AttributeReader = StatusOr<Attributes> (*)(const Context& ctx, const OpSyntax& op,
                                                 const OpParts& parts);
/// Adds the op to ctx.b (return, calls and checks do what they stand for instead).
using OpBuilder = StatusOr<OpResult> (*)(Context& ctx, const OpSyntax& op, OpParts& parts);

/// An operand or result count that varies from node to node.
inline constexpr int kVariadic = -1;

/// One entry of the op table (op_table.hpp): how an op is spelled, read and added.
struct OpSyntax {
  std::string_view name;       // as written: "stablehlo.add", "chlo.erf", "func.return"
  OpCode code;                 // the node it adds; kParameter: none of its own
  int operands;                // how many the text lists, or kVariadic
  int results;                 // how many it defines (`%0:2 = ...`), or kVariadic
  PrettyForm pretty;           // null: the op has only the generic form
  AttributeReader attributes;  // null: no attributes
  // build_node for one node of `code`; the ops that are something else have their own.
  OpBuilder build;
  bool generic = true;                   // false: no generic form (`return`, `call`, checks)
  TypeRule type_rule = TypeRule::kSame;  // how a pretty form's `: T` reads
};

// ---- Names and operands -------------------------------------------------------------------

/// Binds %name to `values` in `scope`; a name seen in it or an enclosing scope is an error.
inline Status define(Scope& scope, const std::string& name, std::vector<Value> values,
                     SourcePos pos, bool tuple = false) {
  bool local = false;
  if (const Scope::Def* d = scope.find(name, local))
    return error_at(
        pos, str_cat("redefinition of %", name, " (first defined at ", to_string(d->pos), ")"));
  scope.defs.emplace(name, Scope::Def{std::move(values), pos, tuple});
  return ok_status();
}

/// Result `index` of %name as seen from `scope`, captured into it (and into every region
/// between it and the definition) when defined outside.
inline StatusOr<Value> lookup(Scope& scope, const std::string& name, std::int64_t index,
                              const Token& t) {
  if (auto it = scope.defs.find(name); it != scope.defs.end()) {
    if (it->second.tuple)
      return unsupported_at(t.pos, str_cat("the tuple %", name,
                                           " as an operand (only stablehlo.tuple and get_tuple_element read it)"));
    const std::vector<Value>& values = it->second.values;
    if (index < 0 || index >= static_cast<std::int64_t>(values.size()))
      return error_at(t.pos, str_cat("%", name, " has ", values.size(), " result(s); ", t.text,
                                     " is out of range"));
    return values[static_cast<std::size_t>(index)];
  }
  bool local = false;
  if (scope.parent == nullptr || scope.parent->find(name, local) == nullptr)
    return error_at(t.pos, str_cat("use of undefined value %", name));
  if (scope.captured == nullptr)
    return unsupported_at(t.pos,
                          str_cat("a region using %", name, ", a value defined outside it,"));
  const std::string key = name + "#" + std::to_string(index);
  if (auto it = scope.captured_by_use.find(key); it != scope.captured_by_use.end())
    return it->second;
  PJRT_LITE_ASSIGN_OR_RETURN(Value outer, lookup(*scope.parent, name, index, t));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape shape, scope.parent->builder->shape(outer));
  Value p = scope.builder->parameter(scope.next_parameter++, std::move(shape));
  scope.captured->push_back(outer);
  scope.captured_by_use.emplace(key, p);
  return p;
}

/// The value a `%name` or `%name#3` token names.
inline StatusOr<Value> resolve(const Context& ctx, const Token& t) {
  std::string_view text = t.text.substr(1);
  std::int64_t index = 0;
  if (std::size_t hash = text.find('#'); hash != std::string_view::npos) {
    std::string_view digits = text.substr(hash + 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || ptr != digits.data() + digits.size())
      return error_at(t.pos, str_cat("bad result number in ", t.text));
    text = text.substr(0, hash);
  }
  return lookup(ctx.scope, std::string(text), index, t);
}

inline StatusOr<Value> parse_operand(Reader& r, const Context& ctx, const Where& context) {
  Token t = r.next();
  if (t.kind != TokenKind::kValueId)
    return error_at(t.pos,
                    str_cat("expected an operand such as %0 ", context, ", found ", describe(t)));
  return resolve(ctx, t);
}

/// `%a, %b, ...` (possibly none): stops before a ',' that is not followed by a value, so
/// that keyword arguments (`, dims = [...]`) can follow.
inline StatusOr<std::vector<Value>> parse_operand_list(Reader& r, const Context& ctx) {
  std::vector<Value> out;
  if (r.peek().kind != TokenKind::kValueId) return out;
  while (true) {
    PJRT_LITE_ASSIGN_OR_RETURN(Value v, parse_operand(r, ctx, ""));
    out.push_back(v);
    if (!(r.peek().is(',') && r.peek2().kind == TokenKind::kValueId)) return out;
    r.next();
  }
}

/// Exactly n operands separated by commas.
inline StatusOr<std::vector<Value>> parse_operands_exact(Reader& r, const Context& ctx,
                                                         std::size_t n, std::string_view op) {
  std::vector<Value> out;
  for (std::size_t k = 0; k < n; ++k) {
    if (k > 0) PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "after operand"));
    PJRT_LITE_ASSIGN_OR_RETURN(Value v, parse_operand(r, ctx, {"for ", op}));
    out.push_back(v);
  }
  if (r.peek().is(',') && r.peek2().kind == TokenKind::kValueId)
    return error_at(r.peek2().pos, str_cat(op, " takes ", n, " operand(s), found more"));
  return out;
}

/// `%name: type` with an optional loc(...).
inline StatusOr<BlockArg> parse_block_arg(Reader& r) {
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

// ---- Types --------------------------------------------------------------------------------

/// An optional attribute dictionary, then ':' and the op's type.
inline StatusOr<OpType> parse_type_tail(Reader& r, std::string_view op, AttrDict* dict = nullptr) {
  if (r.peek().is('{')) {
    PJRT_LITE_ASSIGN_OR_RETURN(AttrDict d, r.parse_dict());
    if (dict) *dict = std::move(d);
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the type of ", op}));
  return r.parse_op_type();
}

/// Checks the declared operand types against the operands; returns the declared result
/// types.
inline StatusOr<std::vector<Shape>> declared_types(const Context& ctx, const OpType& t,
                                                   const std::vector<Value>& operands,
                                                   TypeRule rule, std::string_view op,
                                                   SourcePos pos) {
  std::vector<Shape> inputs;
  std::vector<Shape> results;
  if (t.functional) {
    inputs = t.function.inputs;
    results = t.function.results;
    if (inputs.size() != operands.size())
      return error_at(t.pos, str_cat(op, " has ", operands.size(),
                                     " operand(s) but its type lists ", inputs.size()));
  } else {
    const std::size_t want = rule == TypeRule::kSelect ? 2 : 1;
    if (t.types.size() != want)
      return error_at(t.pos, str_cat(op, " expects ", want == 2 ? "two types" : "one type",
                                     " or a function type (...) -> ... after ':', found ",
                                     t.types.size(), " types"));
    results = {t.types.back()};
    if (rule == TypeRule::kSame) inputs.assign(operands.size(), t.types[0]);
    if (rule == TypeRule::kSelect && !operands.empty()) {
      inputs.assign(operands.size(), t.types[1]);
      inputs[0] = t.types[0];
    }
  }
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(operands[k]));
    if (!matches_declared(s, inputs[k]))
      return error_at(pos, str_cat(op, ": operand ", k, " has type ", tensor_type_name(s),
                                   " but the op's type says ", tensor_type_name(inputs[k])));
  }
  return results;
}

/// After adding an op: reports a builder error, and compares the results with the
/// declared types.
inline Status check_results(const Context& ctx, const std::vector<Value>& values,
                            const std::vector<Shape>& declared, const Where& op, SourcePos pos) {
  if (!ctx.b.ok()) return error_at(pos, ctx.b.status().message());
  if (values.size() != declared.size())
    return error_at(pos, str_cat(op, " has ", values.size(), " result(s) but its type declares ",
                                 declared.size()));
  for (std::size_t k = 0; k < values.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(values[k]));
    if (!matches_declared(s, declared[k]))
      return error_at(pos,
                      str_cat(op, ": result ", k, " is declared ", tensor_type_name(declared[k]),
                              " but the operands give ", tensor_type_name(s)));
  }
  return ok_status();
}

/// Compares values with a list of types written after them (a return's, a while's).
inline Status check_listed_types(const Context& ctx, const std::vector<Value>& values,
                                 const std::vector<Shape>& types, std::string_view op,
                                 SourcePos pos) {
  if (types.size() != values.size())
    return error_at(pos, str_cat(op, " has ", values.size(), " operand(s) but lists ", types.size(),
                                 " type(s)"));
  for (std::size_t k = 0; k < values.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(values[k]));
    if (!matches_declared(s, types[k]))
      return error_at(pos, str_cat(op, ": operand ", k, " has type ", tensor_type_name(s),
                                   " but is listed as ", tensor_type_name(types[k])));
  }
  return ok_status();
}

/// The single declared result type, for ops whose attributes come from it; with
/// `need_static`, a `?` in it is an error (its size cannot come from the type).
inline StatusOr<Shape> single_result(const OpType& t, std::string_view op,
                                     bool need_static = true) {
  const std::vector<Shape>& results = t.functional ? t.function.results : t.types;
  if (results.empty()) return error_at(t.pos, str_cat(op, " needs a result type"));
  if (t.functional && results.size() != 1)
    return error_at(t.pos, str_cat(op, " has one result but its type declares ", results.size()));
  if (need_static && has_dynamic_dims(results.back()))
    return error_at(t.pos, str_cat("the dimension '?' of ", op, "'s result type ",
                                   tensor_type_name(results.back()),
                                   " cannot be refined: its size must come from a static type"));
  return results.back();
}

}  // namespace pjrt_lite::stablehlo::detail
