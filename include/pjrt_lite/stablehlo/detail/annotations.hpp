#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// What JAX leaves in a program that runs on one device and adds no node of its own, or only
// nodes of ops the IR has: sharding and placement annotations (identities on one device; on
// several partitions recorded in the function's ShardingPlan, and shard_map's manual parts
// taken and made whole with collectives),
// shape assertions (checked when the program is read, where shapes are known), composites
// (their decomposition), optimization barriers, tuples, map (its body, vmapped over the
// elements) and Shardy's manual computations over axes of size one.
//
// Memory placement: annotate_device_placement (and the older MoveToHost / MoveToDevice) is an
// identity here: the IR has no memory kinds, so a result annotated pinned_host is computed
// in device memory like any other; the annotation is read and checked, not enforced.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"
#include "pjrt_lite/ir/sharding.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_attributes.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/shape_refinement.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/types.hpp"
#include "pjrt_lite/transforms/batching.hpp"
#include "pjrt_lite/transforms/spmd.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

// ---- Shardings ----------------------------------------------------------------------------

/// A Shardy sharding read from its text: the Sharding, its mesh, and the mesh axes it splits
/// dimensions over.
struct SdySharding {
  Sharding sharding;
  std::string mesh;
  std::vector<std::string> axes;
};

/// `@mesh, [{"x"}, {"y", ?}]p0, replicated={"z"}` (the inside of `#sdy.sharding<...>` or of
/// sharding_constraint's `<...>`) over the module's meshes. Open dimensions (`?`) and
/// priorities read as closed; sub-axes (`"x":(1)2`) and inline meshes are UNIMPLEMENTED.
inline StatusOr<SdySharding> read_sdy_sharding(std::string_view text, const Meshes* meshes,
                                               const MeshDevices* devices, SourcePos pos) {
  std::string_view t = text;
  while (!t.empty() && (t.front() == ' ' || t.front() == '<')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '>')) t.remove_suffix(1);
  if (t.empty() || t.front() != '@')
    return unsupported_at(pos, str_cat("the sharding <", text, "> (only a mesh named with @ is read)"));
  std::size_t end = 1;
  while (end < t.size() && t[end] != ',' && t[end] != ' ') ++end;
  SdySharding out;
  out.mesh = std::string(t.substr(1, end - 1));
  if (!out.mesh.empty() && out.mesh.front() == '"') out.mesh = unquote(out.mesh);
  const auto mesh = meshes != nullptr ? meshes->find(out.mesh) : Meshes::const_iterator{};
  if (meshes == nullptr || mesh == meshes->end())
    return error_at(pos, str_cat("the sharding <", text, "> names the mesh @", out.mesh, ", which the module does not declare"));
  const std::size_t open = t.find('[', end);
  if (open == std::string_view::npos) return error_at(pos, str_cat("the sharding <", text, "> has no dimension list"));
  std::vector<std::vector<std::size_t>> dims;
  std::size_t k = open + 1;
  while (k < t.size() && t[k] != ']') {
    if (t[k] != '{') {
      ++k;
      continue;
    }
    const std::size_t close = t.find('}', k);
    if (close == std::string_view::npos) return error_at(pos, str_cat("the sharding <", text, "> has an unclosed {"));
    std::vector<std::size_t> axes;
    for (std::size_t q = t.find('"', k); q < close;) {
      const std::size_t qe = t.find('"', q + 1);
      if (qe == std::string_view::npos || qe > close) break;
      const std::string name(t.substr(q + 1, qe - q - 1));
      if (qe + 1 < t.size() && t[qe + 1] == ':')
        return unsupported_at(pos, str_cat("the sub-axis sharding <", text, ">"));
      std::size_t a = 0;
      while (a < mesh->second.size() && mesh->second[a].first != name) ++a;
      if (a == mesh->second.size())
        return error_at(pos, str_cat("the sharding <", text, "> names the axis \"", name, "\", which @", out.mesh, " lacks"));
      axes.push_back(a);
      out.axes.push_back(name);
      q = t.find('"', qe + 1);
    }
    dims.push_back(std::move(axes));
    k = close + 1;
  }
  std::vector<std::int64_t> ids;
  if (devices != nullptr)
    if (auto d = devices->find(out.mesh); d != devices->end()) ids = d->second;
  StatusOr<Sharding> s = sharding_on_mesh(mesh->second, ids, dims);
  if (!s.ok()) return error_at(pos, str_cat("the sharding <", text, ">: ", s.status().message()));
  out.sharding = std::move(s).value();
  return out;
}

/// A mesh's axes (`["x"=2, "y"=1]`, brackets optional) and `device_ids=[...]`, from the
/// inside of `<...>` of `sdy.mesh @m = <...>` or `#sdy.mesh<...>`.
inline void read_mesh(std::string_view body, std::vector<std::pair<std::string, std::int64_t>>& axes,
                      std::vector<std::int64_t>& device_ids) {
  axes.clear();
  device_ids.clear();
  for (std::size_t q = body.find('"'); q != std::string_view::npos;) {
    const std::size_t end = body.find('"', q + 1);
    if (end == std::string_view::npos) break;
    std::size_t at = end + 1;
    std::int64_t size = -1;
    if (at < body.size() && body[at] == '=') {
      size = 0;
      while (++at < body.size() && body[at] >= '0' && body[at] <= '9' && size < (1 << 30))
        size = size * 10 + (body[at] - '0');
    }
    axes.emplace_back(std::string(body.substr(q + 1, end - q - 1)), size);
    q = body.find('"', at);
  }
  if (std::size_t ids = body.find("device_ids=["); ids != std::string_view::npos) {
    std::int64_t v = -1;
    for (std::size_t k = ids + 12; k < body.size(); ++k) {
      if (body[k] >= '0' && body[k] <= '9') {
        v = (v < 0 ? 0 : v * 10) + (body[k] - '0');
      } else if (v >= 0) {
        device_ids.push_back(v);
        v = -1;
      }
      if (body[k] == ']') break;
    }
  }
}

/// The number of partitions the shardings of a module's text name (the devices of its
/// largest tiled `mhlo.sharding`, or a maximal sharding's device), 0 when none names more
/// than one: what a module without mhlo.num_partitions (an older export) was lowered for.
inline std::int64_t partitions_named_in(std::string_view text) {
  std::int64_t n = 0;
  for (std::size_t at = text.find("mhlo.sharding"); at != std::string_view::npos; at = text.find("mhlo.sharding", at + 1)) {
    std::size_t q = at + 13;
    while (q < text.size() && (text[q] == ' ' || text[q] == '=')) ++q;
    if (q >= text.size() || text[q] != '"') continue;
    const std::size_t end = text.find('"', q + 1);
    if (end == std::string_view::npos) break;
    StatusOr<std::vector<Sharding>> s = parse_hlo_shardings(text.substr(q + 1, end - q - 1));
    if (!s.ok()) continue;
    for (const Sharding& one : *s) {
      if (one.kind == Sharding::Kind::kTiled) n = std::max(n, static_cast<std::int64_t>(one.devices.size()));
      if (one.kind == Sharding::Kind::kMaximal) n = std::max(n, one.device + 1);
    }
  }
  return n > 1 ? n : 0;
}

/// The `<@mesh, [...]>` entries of a Shardy sharding list `[<...>, <...>]`.
inline std::vector<std::string> sdy_sharding_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t depth = 0, start = 0;
  for (std::size_t k = 0; k < text.size(); ++k) {
    if (text[k] == '<' && depth++ == 0) start = k;
    if (text[k] == '>' && depth > 0 && --depth == 0) out.emplace_back(text.substr(start, k - start + 1));
  }
  return out;
}

/// The sharding an argument's or result's attributes name (`mhlo.sharding = "..."` or
/// `sdy.sharding = #sdy.sharding<...>`), or none.
inline StatusOr<std::optional<Sharding>> sharding_attr(const AttrDict& attrs, const Meshes* meshes,
                                                       const MeshDevices* devices) {
  if (const AttrValue* v = find_attr(attrs, "mhlo.sharding"); v != nullptr && v->kind == AttrValue::Kind::kString) {
    StatusOr<Sharding> s = parse_hlo_sharding(v->text);
    if (!s.ok()) return Status(s.status().code(), str_cat(to_string(v->pos), ": ", s.status().message()));
    return std::optional<Sharding>(std::move(s).value());
  }
  if (const AttrValue* v = find_attr(attrs, "sdy.sharding"); v != nullptr && v->kind == AttrValue::Kind::kOpaque) {
    PJRT_LITE_ASSIGN_OR_RETURN(SdySharding s, read_sdy_sharding(v->word, meshes, devices, v->pos));
    return std::optional<Sharding>(std::move(s.sharding));
  }
  return std::optional<Sharding>();
}

/// The sharding the function last asked of `v` (a constraint), or replicated.
inline Sharding constraint_on(const Context& ctx, Value v) {
  if (ctx.sharding != nullptr)
    for (auto it = ctx.sharding->constraints.rbegin(); it != ctx.sharding->constraints.rend(); ++it)
      if (it->first == v) return it->second;
  return Sharding::replicated();
}

inline std::int64_t partitions_for(const Context& ctx, const Sharding& s) {
  if (ctx.num_partitions > 0) return ctx.num_partitions;
  return s.kind == Sharding::Kind::kTiled ? static_cast<std::int64_t>(s.devices.size()) : 1;
}

/// The partitions a split of a value of type `global` under s spans, once checked to give
/// parts of type `part_type`, which `what` (a manual region's entry or exit) `gives_or_takes`
/// ("gives" or "takes"): errors name `what` and where it is.
inline StatusOr<std::int64_t> manual_split(const Context& ctx, const Sharding& s, const Shape& global,
                                           const Shape& part_type, std::string_view what,
                                           std::string_view gives_or_takes, SourcePos pos) {
  if (ctx.sharding == nullptr) return unsupported_at(pos, str_cat(what, " inside a region"));
  const std::int64_t n = partitions_for(ctx, s);
  if (Status c = s.check(static_cast<std::size_t>(global.rank()), n); !c.ok()) return error_at(pos, str_cat(what, ": ", c.message()));
  StatusOr<Shape> part = shard_shape(global, s);
  if (!part.ok()) return unsupported_at(pos, str_cat(what, " with ", part.status().message()));
  if (!matches_declared(*part, part_type))
    return error_at(pos, str_cat(what, " ", gives_or_takes, " ", tensor_type_name(part_type), " but ",
                                 tensor_type_name(global), " split as ", s.describe(), " gives ",
                                 tensor_type_name(*part)));
  return n;
}

/// shard_map's entry: this partition's part of `whole` under s, of type `part_type` (a
/// dynamic_slice at the partition's offsets, recorded as becoming manual).
inline StatusOr<Value> enter_manual(Context& ctx, Value whole, const Sharding& s, const Shape& part_type,
                                    std::string_view what, SourcePos pos) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape global, ctx.b.shape(whole));
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t n, manual_split(ctx, s, global, part_type, what, "gives", pos));
  Value v;
  if (s.is_whole()) {
    v = ctx.b.reshape(whole, std::vector<std::int64_t>(global.dims().begin(), global.dims().end()));
  } else {
    PJRT_LITE_ASSIGN_OR_RETURN(v, take_part(ctx.b, whole, s, global, n));
  }
  if (!ctx.b.ok()) return error_at(pos, ctx.b.status().message());
  ctx.sharding->to_manual.push_back({v.node, s});
  return v;
}

/// shard_map's exit: the whole value of type `global` whose part under s is `part` on
/// every partition (all_gathers, recorded as leaving manual).
inline StatusOr<Value> exit_manual(Context& ctx, Value part, const Sharding& s, const Shape& global,
                                   std::string_view what, SourcePos pos) {
  PJRT_LITE_ASSIGN_OR_RETURN(Shape part_type, ctx.b.shape(part));
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t n, manual_split(ctx, s, global, part_type, what, "takes", pos));
  std::int64_t channel = (std::int64_t{1} << 24) + static_cast<std::int64_t>(ctx.sharding->from_manual.size()) * 64;
  const Value v = s.is_whole()
                      ? ctx.b.reshape(part, std::vector<std::int64_t>(global.dims().begin(), global.dims().end()))
                      : gather_whole(ctx.b, part, s, n, channel);
  if (!ctx.b.ok()) return error_at(pos, ctx.b.status().message());
  ctx.sharding->from_manual.push_back({v.node, part, s});
  return v;
}

// ---- Custom calls -------------------------------------------------------------------------

/// Targets that, on one device, return their operands unchanged.
inline bool is_identity_custom_call(std::string_view target) {
  constexpr std::string_view kNames[] = {
      "Sharding",          "SPMDFullToShardShape",        "SPMDShardToFullShape",
      "annotate_device_placement", "MoveToHost",          "MoveToDevice",
      "xla.sdy.FuncResultSharding", "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"};
  for (std::string_view n : kNames)
    if (n == target) return true;
  return false;
}

/// The custom calls read here (see build_annotation_custom_call).
inline bool is_annotation_custom_call(std::string_view target) {
  return is_identity_custom_call(target) || target == "shape_assertion" ||
         is_dynamic_custom_call(target);
}

/// JAX's error_message with `{0}`, `{1}`, ... replaced by the values of the assertion's
/// operands after the condition (Python's str.format with positional arguments).
inline std::string format_assertion(std::string_view message,
                                    const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < message.size(); ++i) {
    const char c = message[i];
    if (c == '{' && i + 1 < message.size() && message[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    if (c == '}' && i + 1 < message.size() && message[i + 1] == '}') {
      out += '}';
      ++i;
      continue;
    }
    if (c == '{') {
      const std::size_t close = message.find('}', i);
      if (close != std::string_view::npos) {
        const std::string_view field = message.substr(i + 1, close - i - 1);
        std::size_t k = 0;
        bool digits = !field.empty();
        for (char d : field) {
          if (d < '0' || d > '9') digits = false;
          else k = k * 10 + static_cast<std::size_t>(d - '0');
        }
        if (digits && k < values.size()) {
          out += std::to_string(values[k]);
          i = close;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

/// `@shape_assertion(%cond, %v0, %v1, ...) {error_message = "..."}`: the condition must fold
/// (it is made of dimension sizes, known once shapes are refined); false fails with the
/// message, formatted with the values.
inline StatusOr<OpResult> build_shape_assertion(Context& ctx, OpParts& p) {
  if (p.operands.empty())
    return error_at(p.pos, "stablehlo.custom_call @shape_assertion needs a condition operand");
  const AttrValue* message = find_attr(p.attrs, "error_message");
  if (message == nullptr || message->kind != AttrValue::Kind::kString)
    return error_at(p.pos, "stablehlo.custom_call @shape_assertion needs error_message = \"...\"");
  PJRT_LITE_ASSIGN_OR_RETURN(Shape cond, ctx.b.shape(p.operands[0]));
  if (cond.dtype() != DType::kPred || cond.rank() != 0)
    return error_at(p.pos, str_cat("the condition of @shape_assertion must be tensor<i1>, not ",
                                   tensor_type_name(cond)));
  StatusOr<IntTensor> holds = fold_to_ints(ctx, p.operands[0], "its condition", p.pos);
  if (!holds.ok())
    return unsupported_at(p.pos, str_cat("a @shape_assertion whose condition is known only at "
                                         "run time (",
                                         holds.status().message(), ")"));
  if (holds->values.at(0) != 0) return OpResult{};
  std::vector<std::int64_t> values;
  for (std::size_t k = 1; k < p.operands.size(); ++k) {
    StatusOr<IntTensor> v = fold_to_ints(ctx, p.operands[k], str_cat("operand ", k), p.pos);
    values.push_back(v.ok() && v->values.size() == 1 ? v->values[0] : 0);
  }
  return invalid_argument_error(format_assertion(message->text, values));
}

/// Shardy's round-trip form of a manual computation (what JAX exports with Shardy):
/// `@xla.sdy.GlobalToLocalShape` takes each operand's part under its
/// `xla.sdy.in_shardings` (a frontend attribute: `#sdy.sharding_per_value<[<@mesh, ...>]>`),
/// the body is a call, and `@xla.sdy.LocalToGlobalShape` makes the whole values from the parts
/// under `xla.sdy.out_shardings`. Manual over part of the mesh: UNIMPLEMENTED.
inline StatusOr<OpResult> build_sdy_round_trip_manual(Context& ctx, std::string_view target, OpParts& p,
                                                      const std::vector<Shape>& declared) {
  const std::string what = str_cat("stablehlo.custom_call @", target);
  const bool entry = target == "xla.sdy.GlobalToLocalShape";
  const AttrValue* f = find_attr(p.attrs, "mhlo.frontend_attributes");
  const AttrValue* list = f != nullptr && f->kind == AttrValue::Kind::kDict
                              ? f->find(entry ? "xla.sdy.in_shardings" : "xla.sdy.out_shardings")
                              : nullptr;
  if (list == nullptr || list->kind != AttrValue::Kind::kString)
    return error_at(p.pos, str_cat(what, " needs the frontend attribute ",
                                   entry ? "xla.sdy.in_shardings" : "xla.sdy.out_shardings"));
  std::string_view inner = list->text;
  if (const std::size_t open = inner.find('['); open != std::string_view::npos) inner.remove_prefix(open);
  const std::vector<std::string> entries = sdy_sharding_list(inner);
  if (entries.size() != p.operands.size())
    return error_at(p.pos, str_cat(what, " has ", p.operands.size(), " operand(s) but ", entries.size(), " sharding(s)"));
  std::vector<std::string> manual;
  if (const AttrValue* axes = f->find("xla.sdy.manual_axes"); axes != nullptr && axes->kind == AttrValue::Kind::kString)
    for (std::size_t q = axes->text.find('"'); q != std::string::npos;) {
      const std::size_t end = axes->text.find('"', q + 1);
      if (end == std::string::npos) break;
      manual.push_back(axes->text.substr(q + 1, end - q - 1));
      q = axes->text.find('"', end + 1);
    }
  OpResult out;
  for (std::size_t k = 0; k < p.operands.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(SdySharding s, read_sdy_sharding(entries[k], ctx.meshes, ctx.mesh_devices, p.pos));
    for (const auto& [axis, size] : ctx.meshes->at(s.mesh))
      if (size > 1 && std::find(manual.begin(), manual.end(), axis) == manual.end())
        return unsupported_at(p.pos, str_cat(what, " manual over some axes of @", s.mesh, " only (\"", axis,
                                             "\" is not manual)"));
    PJRT_LITE_ASSIGN_OR_RETURN(Value v, entry ? enter_manual(ctx, p.operands[k], s.sharding, declared[k], what, p.pos)
                                              : exit_manual(ctx, p.operands[k], s.sharding, declared[k], what, p.pos));
    out.values.push_back(v);
  }
  return out;
}

/// Identities, shape_assertion, and the dynamic custom calls of shape_refinement.hpp.
inline StatusOr<OpResult> build_annotation_custom_call(Context& ctx, std::string_view target,
                                                       OpParts& p) {
  if (is_dynamic_custom_call(target)) return build_dynamic_custom_call(ctx, target, p);
  PJRT_LITE_ASSIGN_OR_RETURN(
      std::vector<Shape> declared,
      declared_types(ctx, p.type, p.operands, TypeRule::kSame, "stablehlo.custom_call", p.pos));
  if (target == "shape_assertion") {
    if (!declared.empty())
      return error_at(p.pos, "stablehlo.custom_call @shape_assertion has no results");
    return build_shape_assertion(ctx, p);
  }
  const std::string what = str_cat("stablehlo.custom_call @", target);
  if (p.operands.size() != declared.size())
    return error_at(p.pos, str_cat(what, " has as many results as operands"));
  // Shardings mean something over several partitions only; one partition reads none.
  const bool several = ctx.num_partitions > 1;
  const AttrValue* sharding = find_attr(p.attrs, "mhlo.sharding");
  std::vector<Sharding> shardings;
  if (several && sharding != nullptr && sharding->kind == AttrValue::Kind::kString) {
    StatusOr<std::vector<Sharding>> read = parse_hlo_shardings(sharding->text);
    if (!read.ok()) return Status(read.status().code(), str_cat(to_string(sharding->pos), ": ", read.status().message()));
    shardings = std::move(read).value();
    if (shardings.size() != p.operands.size() && shardings.size() != 1)
      return error_at(sharding->pos, str_cat(what, " has ", p.operands.size(), " operand(s) but ", shardings.size(),
                                             " sharding(s)"));
  }
  auto sharding_of = [&](std::size_t k) { return shardings.size() == 1 ? shardings[0] : shardings[k]; };
  if (target == "Sharding" && ctx.sharding != nullptr) {
    for (std::size_t k = 0; k < shardings.size() && k < p.operands.size(); ++k)
      if (!sharding_of(k).is_manual()) ctx.sharding->constraints.emplace_back(p.operands[k], sharding_of(k));
  }
  if (several && (target == "xla.sdy.GlobalToLocalShape" || target == "xla.sdy.LocalToGlobalShape"))
    return build_sdy_round_trip_manual(ctx, target, p, declared);
  if (several && (target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape")) {
    OpResult out;
    for (std::size_t k = 0; k < p.operands.size(); ++k) {
      if (target == "SPMDFullToShardShape") {
        PJRT_LITE_ASSIGN_OR_RETURN(Value v, enter_manual(ctx, p.operands[k], constraint_on(ctx, p.operands[k]),
                                                         declared[k], what, p.pos));
        out.values.push_back(v);
      } else {
        if (shardings.empty()) return error_at(p.pos, str_cat(what, " needs mhlo.sharding, the sharding of its result"));
        PJRT_LITE_ASSIGN_OR_RETURN(Value v, exit_manual(ctx, p.operands[k], sharding_of(k), declared[k], what, p.pos));
        out.values.push_back(v);
      }
    }
    return out;
  }
  for (std::size_t k = 0; k < declared.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(p.operands[k]));
    if (!matches_declared(s, declared[k]))
      return unsupported_at(p.pos, str_cat(what, " changing ", tensor_type_name(s), " into ",
                                           tensor_type_name(declared[k]),
                                           " (a program split over several devices)"));
  }
  if (target == "annotate_device_placement" && ctx.placements != nullptr && !p.operands.empty()) {
    // The kind is a frontend attribute: {_xla_buffer_placement = "pinned_host"}.
    if (const AttrValue* f = find_attr(p.attrs, "mhlo.frontend_attributes");
        f != nullptr && f->kind == AttrValue::Kind::kDict)
      if (const AttrValue* kind = find_attr(f->dict, "_xla_buffer_placement");
          kind != nullptr && kind->kind == AttrValue::Kind::kString)
        ctx.placements->emplace_back(p.operands[0], kind->text);
  }
  OpResult out;
  out.values = p.operands;
  return out;
}

// ---- Ops that are their operands ----------------------------------------------------------

/// `op %a, %b <sharding> {attrs} : T, U` (sdy.sharding_constraint, sdy.reshard,
/// optimization_barrier): operands, anything up to ':' that is not a type, then the types.
inline Status pretty_passthrough(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  if (r.peek().is('<')) {
    AttrValue sharding;
    sharding.kind = AttrValue::Kind::kOpaque;
    sharding.pos = r.peek().pos;
    sharding.text = "sdy.sharding";
    PJRT_LITE_ASSIGN_OR_RETURN(std::string_view text, r.lexer().skip_balanced('<', '>'));
    sharding.word = std::string(text);
    p.attrs.emplace_back("sharding", std::move(sharding));
  }
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  return ok_status();
}

/// Each result is the operand at the same place.
inline StatusOr<OpResult> build_passthrough(Context& ctx, const OpSyntax& op, OpParts& p) {
  std::vector<Shape> declared;
  if (p.type.functional) {
    PJRT_LITE_ASSIGN_OR_RETURN(declared, declared_types(ctx, p.type, p.operands, TypeRule::kSame,
                                                        op.name, p.pos));
  } else {
    // `: T, U`: one type per operand.
    if (p.type.types.size() != p.operands.size())
      return error_at(p.type.pos, str_cat(op.name, " lists ", p.type.types.size(),
                                          " type(s) for ", p.operands.size(), " operand(s)"));
    declared = p.type.types;
  }
  // Shardy's constraints on the operand (sharding_constraint, reshard).
  if (const AttrValue* sharding = find_attr(p.attrs, "sharding");
      sharding != nullptr && sharding->kind == AttrValue::Kind::kOpaque && ctx.sharding != nullptr &&
      ctx.num_partitions > 1 &&
      p.operands.size() == 1 && op.name.starts_with("sdy.")) {
    PJRT_LITE_ASSIGN_OR_RETURN(SdySharding s, read_sdy_sharding(sharding->word, ctx.meshes, ctx.mesh_devices, sharding->pos));
    ctx.sharding->constraints.emplace_back(p.operands[0], std::move(s.sharding));
  }
  OpResult out;
  out.values = p.operands;
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

// ---- composite ----------------------------------------------------------------------------

/// `stablehlo.composite "name" %a, %b {composite_attributes = {...}, decomposition = @f,
/// version = 1 : i32} : (T, U) -> R`.
inline Status pretty_composite(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Token name,
                             r.expect_kind(TokenKind::kString, "the composite's name", {"after ", op.name}));
  AttrValue v;
  v.kind = AttrValue::Kind::kString;
  v.text = unquote(name.text);
  v.pos = name.pos;
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  p.attrs.emplace_back("name", std::move(v));
  return ok_status();
}

/// A composite is a call of its decomposition function.
inline StatusOr<OpResult> build_composite(Context& ctx, const OpSyntax& op, OpParts& p) {
  const AttrValue* callee = find_attr(p.attrs, "decomposition");
  if (callee == nullptr || callee->kind != AttrValue::Kind::kSymbol)
    return error_at(p.pos, str_cat(op.name, " needs a decomposition = @function attribute"));
  return ctx.reader.inline_call(ctx, callee->text, p.operands, p.type, p.pos);
}

// ---- Tuples -------------------------------------------------------------------------------

/// The tuple %name as seen from ctx's scope, which must define it.
inline StatusOr<const Scope::Def*> local_tuple(const Context& ctx, const Token& t) {
  bool local = false;
  const Scope::Def* def = ctx.scope.find(std::string(t.text.substr(1)), local);
  if (def == nullptr) return error_at(t.pos, str_cat("use of undefined value ", t.text));
  if (!def->tuple) return error_at(t.pos, str_cat(t.text, " is not a tuple"));
  if (!local)
    return unsupported_at(t.pos, str_cat("a region using the tuple ", t.text, ", defined outside it,"));
  return def;
}

/// `stablehlo.tuple %a, %t : tuple<T, tuple<U>>`: each operand a value or a tuple of its own;
/// the tuple type is skipped (its elements are the operands').
inline Status pretty_tuple(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  while (r.peek().kind == TokenKind::kValueId) {
    const Token t = r.peek();
    bool local = false;
    const Scope::Def* named = ctx.scope.find(std::string(t.text.substr(1)), local);
    if (named != nullptr && named->tuple) {
      r.next();
      PJRT_LITE_ASSIGN_OR_RETURN(const Scope::Def* def, local_tuple(ctx, t));
      p.tuple_elements.push_back(*def);
    } else {
      PJRT_LITE_ASSIGN_OR_RETURN(Value v, parse_operand(r, ctx, {"in ", op.name}));
      p.tuple_elements.push_back(Scope::Def{{v}, t.pos});
    }
    if (!(r.peek().is(',') && r.peek2().kind == TokenKind::kValueId)) break;
    r.next();
  }
  if (r.peek().is('{')) {
    PJRT_LITE_ASSIGN_OR_RETURN(p.attrs, r.parse_dict());
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("tuple", {"as the type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.lexer().skip_balanced('<', '>').status());
  return ok_status();
}

inline StatusOr<OpResult> build_tuple(Context&, const OpSyntax&, OpParts& p) {
  OpResult out;
  out.tuple = true;
  out.tuple_elements = std::move(p.tuple_elements);
  return out;
}

/// `stablehlo.get_tuple_element %t[1] : (tuple<T, U>) -> U`: the element itself, a value or
/// (a result type `tuple<...>`) a tuple.
inline Status pretty_get_tuple_element(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(Token t, r.expect_kind(TokenKind::kValueId, "a tuple such as %0",
                                                    {"after ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(const Scope::Def* def, local_tuple(ctx, t));
  PJRT_LITE_RETURN_IF_ERROR(r.expect('[', "before the element index"));
  PJRT_LITE_ASSIGN_OR_RETURN(std::int64_t index, r.parse_int("(the element index)"));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(']', "after the element index"));
  if (index < 0 || index >= static_cast<std::int64_t>(def->elements.size()))
    return error_at(t.pos, str_cat("element ", index, " of ", t.text, ", which has ",
                                   def->elements.size()));
  const Scope::Def& element = def->elements[static_cast<std::size_t>(index)];
  p.tuple_elements = {element};
  if (r.peek().is('{')) {
    PJRT_LITE_ASSIGN_OR_RETURN(p.attrs, r.parse_dict());
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect(':', {"before the type of ", op.name}));
  // `(tuple<...>) -> T`: only the result type is checked (a tuple's only as being one).
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"before the tuple type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_ident("tuple", {"in the type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.lexer().skip_balanced('<', '>').status());
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', {"after the tuple type of ", op.name}));
  PJRT_LITE_RETURN_IF_ERROR(r.expect_arrow({"in the type of ", op.name}));
  p.type.pos = t.pos;
  if (r.peek().is_ident("tuple")) {
    const Token tuple_type = r.next();
    PJRT_LITE_RETURN_IF_ERROR(r.lexer().skip_balanced('<', '>').status());
    if (!element.tuple)
      return error_at(tuple_type.pos, str_cat("element ", index, " of ", t.text, " is a tensor, not a tuple"));
    return ok_status();
  }
  if (element.tuple)
    return error_at(r.peek().pos, str_cat("element ", index, " of ", t.text, " is a tuple, not a tensor"));
  p.operands = element.values;
  PJRT_LITE_ASSIGN_OR_RETURN(Shape result, r.parse_type());
  p.type.types = {std::move(result)};
  return ok_status();
}

inline StatusOr<OpResult> build_get_tuple_element(Context& ctx, const OpSyntax& op, OpParts& p) {
  OpResult out;
  if (p.tuple_elements.size() == 1 && p.tuple_elements[0].tuple) {
    out.tuple = true;
    out.tuple_elements = std::move(p.tuple_elements[0].elements);
    return out;
  }
  out.values = p.operands;
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, p.type.types, op.name, p.pos));
  return out;
}

// ---- map ----------------------------------------------------------------------------------

/// `"stablehlo.map"(%a, %b) <{dimensions = array<i64: 0, 1>}> ({ ^bb0(%x: tensor<f32>, ...):
/// ... }) : (...) -> R`: the scalar body applied to every element, as the body vmapped over
/// the flattened operands.
inline StatusOr<OpResult> build_map(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, TypeRule::kSame, op.name,
                                            p.pos));
  if (p.regions.size() != 1 || p.operands.empty() || declared.size() != 1)
    return error_at(p.pos, str_cat(op.name, " takes operands, one region and has one result"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape first, ctx.b.shape(p.operands[0]));
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<std::int64_t> dims,
                             int_list_attr(p.attrs, "dimensions", op.name, p.pos, false));
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k] != static_cast<std::int64_t>(k))
      return unsupported_at(p.pos, str_cat(op.name, " with dimensions other than 0, 1, ..."));
  const Graph& body = p.regions[0];
  if (body.num_parameters() != static_cast<std::int64_t>(p.operands.size()) ||
      body.outputs().size() != 1)
    return error_at(p.pos, str_cat(op.name, ": the body takes one scalar per operand and "
                                            "returns one scalar"));
  std::int64_t n = 1;
  for (std::int64_t d : first.dims()) n *= d;
  std::vector<Value> flat;
  for (std::size_t k = 0; k < p.operands.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(p.operands[k]));
    const Shape& want = body.shape(body.parameters()[k]);
    if (!std::ranges::equal(s.dims(), first.dims()) || want.rank() != 0 || want.dtype() != s.dtype())
      return error_at(p.pos, str_cat(op.name, ": operand ", k, " has type ", tensor_type_name(s),
                                     " but the body takes ", tensor_type_name(want),
                                     " and every operand has the first one's dimensions"));
    flat.push_back(ctx.b.reshape(p.operands[k], {n}));
  }
  StatusOr<Graph> batched =
      batch_graph(body, std::vector<bool>(p.operands.size(), true), n);
  if (!batched.ok()) return error_at(p.pos, str_cat(op.name, ": ", batched.status().message()));
  std::vector<Value> mapped = ctx.b.inline_graph(*batched, flat);
  if (!ctx.b.ok()) return error_at(p.pos, ctx.b.status().message());
  OpResult out;
  out.values = {ctx.b.reshape(mapped[0], std::vector<std::int64_t>(first.dims().begin(),
                                                                   first.dims().end()))};
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

// ---- Shardy's manual computation ----------------------------------------------------------

/// `sdy.manual_computation(%a) in_shardings=[...] out_shardings=[...] manual_axes={"x"}
/// (%b: T) { ... sdy.return %r : R } : (T) -> R`. Its body is what each device runs on its
/// shard. When every manual axis has size one there is one shard, the whole value, and the
/// body runs as is; over several partitions each operand's part (its in_sharding) enters the
/// body as a manual value and each result is made whole from the parts (its out_sharding).
/// Bodies manual over some of the mesh's axes only are UNIMPLEMENTED.
inline Status pretty_manual_computation(Reader& r, Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', {"to start the operands of ", op.name}));
  PJRT_LITE_ASSIGN_OR_RETURN(p.operands, parse_operand_list(r, ctx));
  PJRT_LITE_RETURN_IF_ERROR(r.expect(')', {"after the operands of ", op.name}));
  std::string mesh;
  std::vector<std::string> axes;
  std::vector<std::string> lists[2];
  for (std::string_view key : {"in_shardings", "out_shardings", "manual_axes"}) {
    PJRT_LITE_RETURN_IF_ERROR(r.expect_ident(key, {"in ", op.name}));
    PJRT_LITE_RETURN_IF_ERROR(r.expect('=', {"after ", key}));
    const bool braces = key == "manual_axes";
    PJRT_LITE_ASSIGN_OR_RETURN(std::string_view text,
                               r.lexer().skip_balanced(braces ? '{' : '[', braces ? '}' : ']'));
    if (braces) {
      for (std::size_t q = text.find('"'); q != std::string_view::npos;) {
        const std::size_t end = text.find('"', q + 1);
        if (end == std::string_view::npos) break;
        axes.emplace_back(text.substr(q + 1, end - q - 1));
        q = text.find('"', end + 1);
      }
    } else {
      lists[key == "in_shardings" ? 0 : 1] = sdy_sharding_list(text);
      if (mesh.empty()) {
        if (std::size_t at = text.find('@'); at != std::string_view::npos) {
          std::size_t end = at + 1;
          while (end < text.size() && text[end] != ',' && text[end] != ' ' && text[end] != '>') ++end;
          mesh = std::string(text.substr(at + 1, end - at - 1));
        }
      }
    }
  }
  bool split = false;
  for (const std::string& axis : axes) {
    const std::int64_t size = ctx.meshes ? mesh_axis_size(*ctx.meshes, mesh, axis) : -1;
    if (size == 1) continue;
    if (size < 0 || ctx.num_partitions <= 1 || ctx.sharding == nullptr)
      return unsupported_at(p.pos, str_cat(op.name, " over the manual axis \"", axis, "\" of @",
                                           mesh, size < 0 ? " (a mesh not declared)"
                                                          : str_cat(" (size ", size, ")"),
                                           ctx.sharding == nullptr ? " inside a region" : " in a module of one partition"));
    split = true;
  }
  std::vector<Shape> parts;
  if (split) {
    for (const auto& [name, size] : ctx.meshes->at(mesh))
      if (size > 1 && std::find(axes.begin(), axes.end(), name) == axes.end())
        return unsupported_at(p.pos, str_cat(op.name, " manual over some axes of @", mesh, " only (\"", name,
                                             "\" is not manual)"));
    if (lists[0].size() != p.operands.size())
      return error_at(p.pos, str_cat(op.name, " has ", p.operands.size(), " operand(s) but ", lists[0].size(),
                                     " in_shardings"));
    for (std::size_t k = 0; k < p.operands.size(); ++k) {
      PJRT_LITE_ASSIGN_OR_RETURN(SdySharding s, read_sdy_sharding(lists[0][k], ctx.meshes, ctx.mesh_devices, p.pos));
      PJRT_LITE_ASSIGN_OR_RETURN(Shape global, ctx.b.shape(p.operands[k]));
      StatusOr<Shape> part = shard_shape(global, s.sharding);
      if (!part.ok()) return unsupported_at(p.pos, str_cat(op.name, ": operand ", k, ": ", part.status().message()));
      parts.push_back(*part);
    }
    for (std::size_t which = 0; which < 2; ++which) {
      AttrValue list;
      list.kind = AttrValue::Kind::kList;
      for (const std::string& e : lists[which]) {
        AttrValue v;
        v.kind = AttrValue::Kind::kOpaque;
        v.pos = p.pos;
        v.text = "sdy.sharding";
        v.word = e;
        list.list.push_back(std::move(v));
      }
      p.attrs.emplace_back(which == 0 ? "in_shardings" : "out_shardings", std::move(list));
    }
  }
  std::vector<BlockArg> args;
  PJRT_LITE_RETURN_IF_ERROR(r.expect('(', "to start the body's arguments"));
  if (!r.consume_if(')')) {
    while (true) {
      PJRT_LITE_ASSIGN_OR_RETURN(BlockArg a, parse_block_arg(r));
      args.push_back(std::move(a));
      if (r.consume_if(')')) break;
      PJRT_LITE_RETURN_IF_ERROR(r.expect(',', "between the body's arguments"));
    }
  }
  if (args.size() != p.operands.size())
    return error_at(p.pos, str_cat(op.name, " has ", p.operands.size(), " operand(s) but its body ",
                                   args.size(), " argument(s)"));
  for (std::size_t k = 0; k < args.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape s, ctx.b.shape(p.operands[k]));
    if (split) s = parts[k];
    if (!matches_declared(s, args[k].type))
      return error_at(args[k].pos, str_cat(op.name, ": operand ", k, split ? "'s part" : "", " has type ",
                                           tensor_type_name(s), " but the body takes ",
                                           tensor_type_name(args[k].type)));
    args[k].type = s;
  }
  PJRT_LITE_RETURN_IF_ERROR(r.expect('{', "to start the body"));
  PJRT_LITE_ASSIGN_OR_RETURN(Graph body,
                             ctx.reader.read_region_body(r, ctx, args, "manual_computation", nullptr));
  p.regions.push_back(std::move(body));
  PJRT_LITE_ASSIGN_OR_RETURN(p.type, parse_type_tail(r, op.name, &p.attrs));
  return ok_status();
}

inline StatusOr<OpResult> build_manual_computation(Context& ctx, const OpSyntax& op, OpParts& p) {
  PJRT_LITE_ASSIGN_OR_RETURN(std::vector<Shape> declared,
                             declared_types(ctx, p.type, p.operands, TypeRule::kSame, op.name,
                                            p.pos));
  const AttrValue* in = find_attr(p.attrs, "in_shardings");
  const AttrValue* out_list = find_attr(p.attrs, "out_shardings");
  OpResult out;
  if (in == nullptr || out_list == nullptr) {
    out.values = ctx.b.inline_graph(p.regions.at(0), p.operands);
    if (p.regions[0].outputs().empty()) out.values.clear();
    PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
    return out;
  }
  // Over several partitions: parts in, the body on them, whole values out.
  std::vector<Value> parts;
  for (std::size_t k = 0; k < p.operands.size(); ++k) {
    PJRT_LITE_ASSIGN_OR_RETURN(SdySharding s, read_sdy_sharding(in->list[k].word, ctx.meshes, ctx.mesh_devices, p.pos));
    const Shape& want = p.regions[0].shape(p.regions[0].parameters()[k]);
    PJRT_LITE_ASSIGN_OR_RETURN(Value v, enter_manual(ctx, p.operands[k], s.sharding, want, op.name, p.pos));
    parts.push_back(v);
  }
  std::vector<Value> results = ctx.b.inline_graph(p.regions.at(0), parts);
  if (!ctx.b.ok()) return error_at(p.pos, ctx.b.status().message());
  if (p.regions[0].outputs().empty()) results.clear();
  if (results.size() != declared.size() || out_list->list.size() != declared.size())
    return error_at(p.pos, str_cat(op.name, " declares ", declared.size(), " result(s); its body gives ", results.size(),
                                   " and out_shardings lists ", out_list->list.size()));
  for (std::size_t j = 0; j < results.size(); ++j) {
    PJRT_LITE_ASSIGN_OR_RETURN(SdySharding s, read_sdy_sharding(out_list->list[j].word, ctx.meshes, ctx.mesh_devices, p.pos));
    PJRT_LITE_ASSIGN_OR_RETURN(Value v, exit_manual(ctx, results[j], s.sharding, declared[j], op.name, p.pos));
    out.values.push_back(v);
  }
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, declared, op.name, p.pos));
  return out;
}

}  // namespace pjrt_lite::stablehlo::detail
