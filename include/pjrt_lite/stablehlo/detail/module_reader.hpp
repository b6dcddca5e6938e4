#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The module reader: the module and its func.func's, each function's body and every region's,
// block by block. It reads an op's result names and its name, and hands the rest to the
// pretty-form reader (an identifier) or the generic-form reader (a quoted name), which call
// back into it (as BodyReader) for nested regions and for calls, which it inlines.
//
// Functions are found in a first pass that skips their bodies, so that a function may call
// one defined after it; a body is read when its function is built, callees first.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/stablehlo/detail/annotations.hpp"
#include "pjrt_lite/stablehlo/detail/generic_reader.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/pretty_reader.hpp"
#include "pjrt_lite/stablehlo/detail/shape_refinement.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/module.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

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
  // mhlo.layout_mode of each argument and result, minor to major (empty: none named).
  std::vector<std::vector<std::int64_t>> arg_layouts, result_layouts;
  // mhlo.memory_kind of each argument and result (empty: none named).
  std::vector<std::string> arg_memory_kinds, result_memory_kinds;
  // mhlo.sharding / sdy.sharding of each argument and result (none: not named).
  std::vector<std::optional<Sharding>> arg_shardings, result_shardings;
  bool polymorphic = false;  // a '?' in its signature: built for the types of each call
  bool has_body = false;
  Lexer body{std::string_view()};  // just after the body's '{'
  enum class State : std::uint8_t { kPending, kBuilding, kBuilt } state = State::kPending;
  Function built;
};

/// Reads one module text; parse_module makes one per call, so that parsing shares no state.
/// With `entry_args`, function `entry` is built for those argument types: its `?`
/// dimensions (and those of the functions it calls) are refined from them.
class ModuleReader final : public BodyReader {
 public:
  explicit ModuleReader(std::string_view text, std::string_view entry = "main",
                        const std::vector<Shape>* entry_args = nullptr)
      : top_(Lexer(text)), entry_(entry), entry_args_(entry_args), num_partitions_(partitions_named_in(text)) {}

  StatusOr<Module> parse() {
    PJRT_LITE_RETURN_IF_ERROR(parse_top_level());
    if (entry_args_ != nullptr) {
      auto it = by_name_.find(entry_);
      if (it == by_name_.end() || !sources_[it->second].has_body)
        return not_found_error(str_cat("the module has no function @", entry_));
      PJRT_LITE_RETURN_IF_ERROR(refine_entry(sources_[it->second]));
    }
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      // A polymorphic function is built per call, for its callers' types; only an entry
      // point is reported when nothing refines it.
      if (sources_[i].state == FunctionSource::State::kBuilt) continue;
      if (sources_[i].polymorphic && sources_[i].visibility == Visibility::kPrivate) continue;
      if (sources_[i].polymorphic) {
        const FunctionSource& f = sources_[i];
        for (std::size_t k = 0; k < f.arg_types.size(); ++k)
          if (has_dynamic_dims(f.arg_types[k]))
            return invalid_argument_error(str_cat(
                to_string(f.arg_names[k].second), ": argument ", k, " of @", f.name, " has type ",
                tensor_type_name(f.arg_types[k]),
                ": a shape-polymorphic function needs concrete argument shapes to be "
                "refined (parse_module(text, shapes) or compile_stablehlo(client, text, "
                "shapes))"));
      }
      PJRT_LITE_RETURN_IF_ERROR(build(i));
    }
    Module m;
    m.name = module_name_;
    for (FunctionSource& f : sources_)
      if (f.has_body && f.state == FunctionSource::State::kBuilt)
        m.functions.push_back(std::move(f.built));
    return m;
  }

 private:
  /// The sharding an argument's or result's attributes name, in a module over several
  /// partitions (one partition reads none).
  StatusOr<std::optional<Sharding>> shardings_named(const AttrDict& attrs) const {
    if (num_partitions_ <= 1) return std::optional<Sharding>();
    return sharding_attr(attrs, &meshes_, &mesh_devices_);
  }

  /// The memory kind an argument's or result's `mhlo.memory_kind` names, or "".
  static std::string memory_kind(const AttrDict& attrs) {
    const AttrValue* v = find_attr(attrs, "mhlo.memory_kind");
    return v != nullptr && v->kind == AttrValue::Kind::kString ? v->text : std::string();
  }

  /// The layout an argument's or result's `mhlo.layout_mode` names, minor to major: none for
  /// "default" or "auto" (or no such attribute), the dimensions for "{1,0}"; UNIMPLEMENTED
  /// for another form (a tiled layout).
  static StatusOr<std::vector<std::int64_t>> layout_mode(const AttrDict& attrs) {
    const AttrValue* v = find_attr(attrs, "mhlo.layout_mode");
    if (v == nullptr || v->kind != AttrValue::Kind::kString || v->text == "default" || v->text == "auto")
      return std::vector<std::int64_t>{};
    const std::string_view t = v->text;
    std::vector<std::int64_t> dims;
    bool ok = t.size() >= 2 && t.front() == '{' && t.back() == '}';
    std::int64_t value = -1;
    for (std::size_t i = 1; ok && i + 1 < t.size(); ++i) {
      const char c = t[i];
      if (c >= '0' && c <= '9') {
        value = (value < 0 ? 0 : value) * 10 + (c - '0');
        ok = value < 64;
      } else if (c == ',' && value >= 0) {
        dims.push_back(std::exchange(value, -1));
      } else {
        ok = false;
      }
    }
    if (ok && value >= 0) dims.push_back(value);
    if (!ok || (t.size() > 2 && value < 0))
      return unimplemented_error(str_cat(to_string(v->pos), ": mhlo.layout_mode \"", t,
                                         "\" is not a minor-to-major list such as \"{1,0}\" (tiled layouts are not supported)"));
    return dims;
  }

  // ---- Module level ---------------------------------------------------------------------

  /// `{mesh = #sdy.mesh<["a"=2]>, other = #sdy.mesh<...>}`: each mesh, named.
  void read_mesh_list(std::string_view text) {
    for (std::size_t at = text.find("#sdy.mesh<"); at != std::string_view::npos; at = text.find("#sdy.mesh<", at + 1)) {
      std::size_t name_end = text.rfind('=', at);
      std::size_t name_start = text.find_last_of("{,", name_end == std::string_view::npos ? 0 : name_end);
      if (name_end == std::string_view::npos || name_start == std::string_view::npos) continue;
      std::string_view name = text.substr(name_start + 1, name_end - name_start - 1);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      std::size_t depth = 0, end = at + 9;
      for (; end < text.size(); ++end) {
        if (text[end] == '<') ++depth;
        if (text[end] == '>' && --depth == 0) break;
      }
      const std::string key(name);
      read_mesh(text.substr(at + 10, end - at - 10), meshes_[key], mesh_devices_[key]);
    }
  }

  Status parse_top_level() {
    bool seen_module = false;
    while (true) {
      Token t = top_.peek();
      if (t.kind == TokenKind::kEof) return ok_status();
      if (t.kind == TokenKind::kHashId) {  // #loc = loc(...), other attribute aliases
        top_.next();
        PJRT_LITE_RETURN_IF_ERROR(top_.expect('=', {"after the alias ", t.text}));
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
        if (top_.consume_ident_if("attributes")) {
          PJRT_LITE_ASSIGN_OR_RETURN(AttrDict attrs, top_.parse_dict());
          if (const AttrValue* v = find_attr(attrs, "mhlo.num_partitions")) {
            if (v->kind != AttrValue::Kind::kInt || v->i < 1)
              return error_at(v->pos, "expected a positive integer for mhlo.num_partitions");
            num_partitions_ = v->i;
          }
          // Shardy's meshes as the round-trip form keeps them: {xla.sdy.meshes =
          // "{mesh = #sdy.mesh<[\"a\"=2]>}"} among the module's frontend attributes.
          if (const AttrValue* f = find_attr(attrs, "mhlo.frontend_attributes"); f != nullptr && f->kind == AttrValue::Kind::kDict)
            if (const AttrValue* m = f->find("xla.sdy.meshes"); m != nullptr && m->kind == AttrValue::Kind::kString)
              read_mesh_list(m->text);
        }
        PJRT_LITE_RETURN_IF_ERROR(top_.expect('{', "to start the module body"));
        while (!top_.peek().is('}')) {
          Token u = top_.peek();
          if (u.kind == TokenKind::kEof)
            return error_at(u.pos, "expected '}' to end the module, found end of input");
          if (u.kind == TokenKind::kHashId) {
            top_.next();
            PJRT_LITE_RETURN_IF_ERROR(top_.expect('=', {"after the alias ", u.text}));
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
      PJRT_LITE_ASSIGN_OR_RETURN(
          Token name, top_.expect_kind(TokenKind::kSymbol, "a mesh name", "after sdy.mesh"));
      PJRT_LITE_RETURN_IF_ERROR(top_.expect('=', "after the mesh name"));
      PJRT_LITE_ASSIGN_OR_RETURN(std::string_view axes, top_.lexer().skip_balanced('<', '>'));
      const std::string mesh = Reader::symbol_name(name.text);
      read_mesh(axes, meshes_[mesh], mesh_devices_[mesh]);
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
    PJRT_LITE_RETURN_IF_ERROR(top_.expect('(', {"to start the arguments of @", f.name}));
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
        AttrDict attrs;
        if (top_.peek().is('{')) {
          PJRT_LITE_ASSIGN_OR_RETURN(attrs, top_.parse_dict());
        }
        PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> layout, layout_mode(attrs));
        f.arg_layouts.push_back(std::move(layout));
        f.arg_memory_kinds.push_back(memory_kind(attrs));
        PJRT_LITE_ASSIGN_OR_RETURN(std::optional<Sharding> sharding, shardings_named(attrs));
        f.arg_shardings.push_back(std::move(sharding));
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
        std::vector<AttrDict> dicts;
        PJRT_LITE_ASSIGN_OR_RETURN(f.result_types, top_.parse_paren_types(/*attributes=*/true, &dicts));
        for (const AttrDict& attrs : dicts) {
          PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> layout, layout_mode(attrs));
          f.result_layouts.push_back(std::move(layout));
          f.result_memory_kinds.push_back(memory_kind(attrs));
          PJRT_LITE_ASSIGN_OR_RETURN(std::optional<Sharding> sharding, shardings_named(attrs));
          f.result_shardings.push_back(std::move(sharding));
        }
      } else {
        // A bare result type takes no attributes: a '{' after it starts the body.
        PJRT_LITE_ASSIGN_OR_RETURN(Shape type, top_.parse_type());
        f.result_types.push_back(std::move(type));
      }
    }
    if (top_.consume_ident_if("attributes")) PJRT_LITE_RETURN_IF_ERROR(top_.parse_dict().status());
    for (const auto* types : {&f.arg_types, &f.result_types})
      for (const Shape& t : *types) f.polymorphic = f.polymorphic || has_dynamic_dims(t);
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

  /// Function i with `arg_types` for its arguments (by default its declared ones) and the
  /// values of some scalar arguments known (`known`, for refining shapes).
  StatusOr<Function> build_function(std::size_t i, const std::vector<Shape>* refined = nullptr,
                                    const std::map<std::int64_t, std::int64_t>* known = nullptr) {
    // sources_ no longer grows once functions are built, so this reference stays valid
    // while callees are built.
    const FunctionSource& source = sources_[i];
    const std::string& name = source.name;
    const std::vector<Shape>& arg_types = refined ? *refined : source.arg_types;
    const std::vector<Shape>& result_types = source.result_types;
    const auto& arg_names = source.arg_names;
    Reader r(source.body);

    GraphBuilder b(name);
    Scope scope;
    scope.builder = &b;
    std::vector<Check> checks;
    std::vector<std::pair<Value, std::string>> placements;
    std::vector<std::pair<ParallelRun, std::vector<Value>>> parallel_runs;
    ShardingPlan plan;
    plan.num_partitions = std::max<std::int64_t>(num_partitions_, 1);
    Context ctx{*this, b, scope, &checks, 0, known, &meshes_, &placements, &parallel_runs, num_partitions_,
                &mesh_devices_, &plan};
    for (std::size_t k = 0; k < arg_types.size(); ++k) {
      if (has_dynamic_dims(arg_types[k]))
        return error_at(arg_names[k].second,
                        str_cat("argument ", k, " of @", name, " has the type ",
                                tensor_type_name(arg_types[k]),
                                ", whose dimension '?' its callers do not refine"));
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
      if (!matches_declared(s, result_types[k]))
        return error_at(end,
                        str_cat("@", name, " returns ", tensor_type_name(s), " as result ", k,
                                " but its signature declares ", tensor_type_name(result_types[k])));
    }
    Function fn;
    fn.name = name;
    fn.visibility = source.visibility;
    fn.num_results = static_cast<std::int64_t>(returned.size());
    // Layouts only where one is named: lists of empty entries say nothing.
    auto named = [](const std::vector<std::vector<std::int64_t>>& l) {
      return std::any_of(l.begin(), l.end(), [](const auto& e) { return !e.empty(); });
    };
    if (named(source.arg_layouts)) fn.argument_layouts = source.arg_layouts;
    if (named(source.result_layouts)) fn.result_layouts = source.result_layouts;
    if (std::any_of(source.arg_memory_kinds.begin(), source.arg_memory_kinds.end(),
                    [](const std::string& k) { return !k.empty(); }))
      fn.argument_memory_kinds = source.arg_memory_kinds;
    // A result's kind: its annotate_device_placement, else its mhlo.memory_kind.
    fn.result_memory_kinds = source.result_memory_kinds;
    fn.result_memory_kinds.resize(returned.size());
    for (std::size_t k = 0; k < returned.size(); ++k)
      for (const auto& [v, kind] : placements)
        if (v.node == returned[k].node && v.index == returned[k].index) fn.result_memory_kinds[k] = kind;
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
    auto next_parameter = static_cast<std::int64_t>(arg_types.size());
    for (auto& [run, operands] : parallel_runs) {
      for (std::int64_t& number : run.result_parameters) number = next_parameter++;
      for (Value v : operands) {
        run.operand_outputs.push_back(static_cast<std::int64_t>(outputs.size()));
        outputs.push_back(v);
      }
      fn.parallel_runs.push_back(std::move(run));
    }
    StatusOr<Graph> g = b.build(outputs);
    if (!g.ok()) return error_at(source.pos, g.status().message());
    fn.graph = std::move(g).value();
    fn.checks = std::move(checks);
    // The shardings, with the graph's values.
    auto named_sharding = [](const std::vector<std::optional<Sharding>>& l) {
      return std::any_of(l.begin(), l.end(), [](const auto& e) { return e.has_value(); });
    };
    if (named_sharding(source.arg_shardings)) plan.arguments = source.arg_shardings;
    if (named_sharding(source.result_shardings)) plan.results = source.result_shardings;
    for (auto& c : plan.constraints) c.first = c.first.detached();
    for (auto& e : plan.from_manual) e.part = e.part.detached();
    fn.sharding = std::move(plan);
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
      const std::string quoted = unquote(name.text);
      PJRT_LITE_ASSIGN_OR_RETURN(result, read_generic_op(r, ctx, quoted, name.pos));
    } else if (name.kind == TokenKind::kIdent) {
      PJRT_LITE_ASSIGN_OR_RETURN(result, read_pretty_op(r, ctx, name.text, name.pos));
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
    if (result.tuple) {
      if (names.size() != 1 || names[0].count != 1)
        return error_at(name.pos, "a tuple is one value: name it %t");
      PJRT_LITE_RETURN_IF_ERROR(define(ctx.scope, names[0].name, {}, names[0].pos, true));
      ctx.scope.defs[names[0].name].elements = std::move(result.tuple_elements);
      return OpResult{};
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

  // ---- Regions and calls (BodyReader) -----------------------------------------------------

  // Regions are read here for the op readers, with the same parse_block as function bodies.
  StatusOr<Graph> read_region_body(Reader& r, Context& ctx, const std::vector<BlockArg>& args,
                                   std::string_view name, std::vector<Value>* captured) override {
    if (ctx.depth + 1 > kMaxRegionDepth)
      return error_at(r.peek().pos, str_cat("regions nest deeper than ", kMaxRegionDepth));
    GraphBuilder b{std::string(name)};
    Scope scope;
    scope.parent = &ctx.scope;
    scope.builder = &b;
    scope.captured = captured;
    scope.next_parameter = static_cast<std::int64_t>(args.size());
    Context inner{*this, b, scope, nullptr, ctx.depth + 1, nullptr, ctx.meshes, nullptr, nullptr, ctx.num_partitions,
                  ctx.mesh_devices, nullptr};
    for (std::size_t k = 0; k < args.size(); ++k) {
      if (has_dynamic_dims(args[k].type))
        return error_at(args[k].pos, str_cat("the dimension '?' of the block argument %",
                                             args[k].name, ": ", tensor_type_name(args[k].type),
                                             " cannot be refined"));
      Value v = b.parameter(static_cast<std::int64_t>(k), args[k].type);
      PJRT_LITE_RETURN_IF_ERROR(define(scope, args[k].name, {v}, args[k].pos));
    }
    PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Value> outputs, parse_block(r, inner));
    StatusOr<Graph> g = b.build(outputs);
    if (!g.ok()) return error_at(last_terminator_pos_, g.status().message());
    return g;
  }

  // A call builds its callee first (which must not be on the call chain), then adds a copy
  // of its graph; the callee's checks become the caller's.
  StatusOr<OpResult> inline_call(Context& ctx, const std::string& callee,
                                 const std::vector<Value>& args, const OpType& type,
                                 SourcePos pos) override {
    if (!type.functional) return error_at(type.pos, "a call's type must be a function type");
    auto it = by_name_.find(callee);
    if (it == by_name_.end()) return error_at(pos, str_cat("call to undefined function @", callee));
    const std::size_t index = it->second;
    if (!sources_[index].has_body)
      return unsupported_at(pos, str_cat("a call to the external function @", callee));
    const Function* built = nullptr;
    if (sources_[index].polymorphic) {
      PJRT_LITE_ASSIGN_OR_RETURN(built, refined_callee(ctx, index, args, pos));
    } else {
      PJRT_LITE_RETURN_IF_ERROR(build(index));
      built = &sources_[index].built;
    }
    const Function& f = *built;
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
    std::vector<std::vector<Value>> node_values;
    std::vector<Value> outs = ctx.b.inline_graph(f.graph, args, &node_values);
    if (!ctx.b.ok()) return error_at(pos, ctx.b.status().message());
    PJRT_LITE_RETURN_IF_ERROR(inline_sharding(ctx, f, node_values, callee, pos));
    OpResult out;
    out.values.assign(outs.begin(), outs.begin() + f.num_results);
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, {"call @", callee}, pos));
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

  // The callee's shardings as the caller's: its values become what inlining made of them.
  static Status inline_sharding(Context& ctx, const Function& f, const std::vector<std::vector<Value>>& node_values,
                                const std::string& callee, SourcePos pos) {
    const ShardingPlan& inner = f.sharding;
    if (inner.constraints.empty() && inner.to_manual.empty() && inner.from_manual.empty()) return ok_status();
    if (ctx.sharding == nullptr) {
      if (inner.to_manual.empty() && inner.from_manual.empty()) return ok_status();  // hints only
      return unsupported_at(pos, str_cat("a call inside a region to @", callee, ", which enters or leaves a shard_map,"));
    }
    auto value = [&](Value v) { return node_values[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]; };
    for (const auto& [v, s] : inner.constraints) ctx.sharding->constraints.emplace_back(value(v), s);
    for (const auto& e : inner.to_manual) ctx.sharding->to_manual.push_back({value(Value{e.node, 0}).node, e.sharding});
    for (const auto& e : inner.from_manual)
      ctx.sharding->from_manual.push_back({value(Value{e.node, 0}).node, value(e.part), e.sharding});
    return ok_status();
  }

  // ---- Shape refinement -----------------------------------------------------------------

  /// Builds the entry function for entry_args_, which must have its declared types with
  /// each '?' given a size.
  Status refine_entry(FunctionSource& f) {
    const std::vector<Shape>& given = *entry_args_;
    if (given.size() != f.arg_types.size())
      return invalid_argument_error(str_cat("@", f.name, " takes ", f.arg_types.size(),
                                            " argument(s), but ", given.size(),
                                            " argument shape(s) were given"));
    for (std::size_t k = 0; k < given.size(); ++k)
      if (!matches_declared(given[k], f.arg_types[k]) || has_dynamic_dims(given[k]))
        return invalid_argument_error(str_cat("argument ", k, " of @", f.name, " has type ",
                                              tensor_type_name(f.arg_types[k]),
                                              ", which the given shape ",
                                              tensor_type_name(given[k]), " does not match"));
    f.state = FunctionSource::State::kBuilding;
    ++call_depth_;
    StatusOr<Function> built = build_function(by_name_[f.name], &given);
    --call_depth_;
    if (!built.ok()) return built.status();
    f.built = std::move(built).value();
    f.state = FunctionSource::State::kBuilt;
    return ok_status();
  }

  /// The polymorphic function `index` built for the types of `args`, with the values of its
  /// scalar integer arguments that fold (dimension sizes) known; one build per distinct
  /// signature.
  StatusOr<const Function*> refined_callee(Context& ctx, std::size_t index,
                                           const std::vector<Value>& args, SourcePos pos) {
    const FunctionSource& source = sources_[index];
    std::vector<Shape> types;
    std::map<std::int64_t, std::int64_t> known;
    std::string key = source.name;
    for (std::size_t k = 0; k < args.size(); ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(args[k]));
      key += str_cat("|", tensor_type_name(s));
      if (s.rank() == 0 && is_integral(s.dtype())) {
        StatusOr<IntTensor> v = fold_to_ints(ctx, args[k], "", pos);
        if (v.ok()) {
          known[static_cast<std::int64_t>(k)] = v->values[0];
          key += str_cat("=", v->values[0]);
        }
      }
      types.push_back(std::move(s));
    }
    if (args.size() != source.arg_types.size())
      return error_at(pos, str_cat("@", source.name, " takes ", source.arg_types.size(),
                                   " argument(s), got ", args.size()));
    for (std::size_t k = 0; k < args.size(); ++k)
      if (!matches_declared(types[k], source.arg_types[k]))
        return error_at(pos, str_cat("argument ", k, " of the call to @", source.name,
                                     " has type ", tensor_type_name(types[k]), " but @",
                                     source.name, " takes ", tensor_type_name(source.arg_types[k])));
    if (auto it = refined_.find(key); it != refined_.end()) return &it->second;
    if (refining_.count(key)) return unsupported_at(pos, str_cat("the recursive function @", source.name));
    if (call_depth_ >= kMaxCallDepth)
      return error_at(pos, str_cat("calls nest deeper than ", kMaxCallDepth, " functions"));
    refining_.insert(key);
    ++call_depth_;
    StatusOr<Function> built = build_function(index, &types, &known);
    --call_depth_;
    refining_.erase(key);
    if (!built.ok()) return built.status();
    return &refined_.emplace(key, std::move(built).value()).first->second;
  }

  Reader top_;
  std::string entry_;
  const std::vector<Shape>* entry_args_ = nullptr;
  Meshes meshes_;
  MeshDevices mesh_devices_;
  std::map<std::string, Function> refined_;  // polymorphic callees, by signature
  std::set<std::string> refining_;
  std::string module_name_;
  // mhlo.num_partitions, else the partitions the module's shardings name, 0 when neither says.
  std::int64_t num_partitions_ = 0;
  std::vector<FunctionSource> sources_;
  std::map<std::string, std::size_t> by_name_;
  std::int64_t call_depth_ = 0;
  SourcePos last_terminator_pos_;
};

}  // namespace pjrt_lite::stablehlo::detail
