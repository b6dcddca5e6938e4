#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// jaxlib's CPU LAPACK custom calls, `stablehlo.custom_call @lapack_sgetrf_ffi(%x) {...}`: the
// target names the routine and the element type (s, d, c, z for f32, f64, complex<f32>,
// complex<f64>); LAPACK's character flags come as `ui8` integers in `mhlo.backend_config`
// (`{uplo = 76 : ui8}` is 'L'). Each becomes one linalg node (LinalgAttrs). operand_layouts
// and result_layouts (column-major, as LAPACK stores matrices) are physical only, so they are
// read and dropped: the values are the logical tensors either way.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"
#include "pjrt_lite/stablehlo/detail/lapack_names.hpp"
#include "pjrt_lite/stablehlo/detail/lexer.hpp"
#include "pjrt_lite/stablehlo/detail/op_parts.hpp"
#include "pjrt_lite/stablehlo/detail/syntax.hpp"
#include "pjrt_lite/stablehlo/types.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// The attribute `flag` of the call's backend config (`mhlo.backend_config = {...}`, or a
/// dictionary `backend_config`), or nullptr.
inline const AttrValue* lapack_flag(const AttrDict& attrs, std::string_view flag) {
  for (std::string_view key : {std::string_view("mhlo.backend_config"), std::string_view("backend_config")})
    if (const AttrValue* config = find_attr(attrs, key);
        config && config->kind == AttrValue::Kind::kDict)
      if (const AttrValue* v = config->find(flag)) return v;
  return nullptr;
}

/// Builds the linalg node of a LAPACK custom call.
inline StatusOr<OpResult> build_lapack_call(Context& ctx, std::string_view target, OpParts& p) {
  const std::optional<LapackTarget> lt = lapack_target(target);
  if (!lt) return unsupported_at(p.pos, str_cat("stablehlo.custom_call @", target));
  const std::string where = str_cat("stablehlo.custom_call @", target);
  if (!p.type.functional)
    return error_at(p.type.pos, str_cat(where, ": the type must be a function type (...) -> (...)"));
  PJRT_LITE_RETURN_IF_ERROR(
      check_listed_types(ctx, p.operands, p.type.function.inputs, where, p.type.pos));
  if (p.operands.empty()) return error_at(p.pos, str_cat(where, " needs an operand"));
  PJRT_LITE_ASSIGN_OR_RETURN(Shape x, ctx.b.shape(p.operands[0]));
  if (x.dtype() != lt->dtype)
    return error_at(p.pos, str_cat(where, " takes ", element_type_name(lt->dtype),
                                   " operands, got ", tensor_type_name(x)));
  LinalgAttrs a;
  a.routine = lt->routine;
  // Each routine's flags, as jaxlib's handler binds them; a missing one is an error, as there.
  auto flag = [&](std::string_view name, std::int64_t& field) -> Status {
    const AttrValue* v = lapack_flag(p.attrs, name);
    if (v == nullptr || v->kind != AttrValue::Kind::kInt)
      return error_at(p.pos, str_cat(where, " needs the attribute ", name,
                                     " (an integer, e.g. mhlo.backend_config = {", name,
                                     " = 76 : ui8})"));
    field = v->i;
    return ok_status();
  };
  auto bool_flag = [&](std::string_view name, bool& field) -> Status {
    const AttrValue* v = lapack_flag(p.attrs, name);
    if (v == nullptr || v->kind != AttrValue::Kind::kBool)
      return error_at(p.pos, str_cat(where, " needs the attribute ", name,
                                     " (true or false, in mhlo.backend_config)"));
    field = v->b;
    return ok_status();
  };
  switch (lt->routine) {
    case LinalgRoutine::kPotrf: PJRT_LITE_RETURN_IF_ERROR(flag("uplo", a.uplo)); break;
    case LinalgRoutine::kGesdd:
    case LinalgRoutine::kGesvd: {
      PJRT_LITE_RETURN_IF_ERROR(flag("mode", a.mode));
      // With mode 'N' the unused u and vt keep JAX's shapes: u m x m and vt n x n when
      // full_matrices, else m x k and k x n.
      const auto& results = p.type.function.results;
      if (results.size() > 3 && results[2].rank() >= 2 && results[3].rank() >= 2 && x.rank() >= 2)
        a.full_matrices = results[2].dim(results[2].rank() - 1) == x.dim(x.rank() - 2) &&
                          results[3].dim(results[3].rank() - 2) == x.dim(x.rank() - 1);
      if (a.mode != 'N') a.full_matrices = true;
      break;
    }
    case LinalgRoutine::kSyevd:
      PJRT_LITE_RETURN_IF_ERROR(flag("uplo", a.uplo));
      PJRT_LITE_RETURN_IF_ERROR(flag("mode", a.mode));
      break;
    case LinalgRoutine::kTrsm:
      PJRT_LITE_RETURN_IF_ERROR(flag("side", a.side));
      PJRT_LITE_RETURN_IF_ERROR(flag("uplo", a.uplo));
      PJRT_LITE_RETURN_IF_ERROR(flag("trans_x", a.trans));
      PJRT_LITE_RETURN_IF_ERROR(flag("diag", a.diag));
      break;
    case LinalgRoutine::kGehrd:
      PJRT_LITE_RETURN_IF_ERROR(flag("low", a.low));
      PJRT_LITE_RETURN_IF_ERROR(flag("high", a.high));
      break;
    case LinalgRoutine::kSytrd: PJRT_LITE_RETURN_IF_ERROR(flag("uplo", a.uplo)); break;
    case LinalgRoutine::kGeev:
      PJRT_LITE_RETURN_IF_ERROR(flag("compute_left", a.compute_left));
      PJRT_LITE_RETURN_IF_ERROR(flag("compute_right", a.compute_right));
      break;
    case LinalgRoutine::kGees:
      PJRT_LITE_RETURN_IF_ERROR(flag("mode", a.mode));
      PJRT_LITE_RETURN_IF_ERROR(flag("sort", a.sort));
      break;
    case LinalgRoutine::kOrmqr:
      PJRT_LITE_RETURN_IF_ERROR(bool_flag("left", a.left));
      PJRT_LITE_RETURN_IF_ERROR(bool_flag("transpose", a.transpose));
      break;
    default: break;
  }
  OpResult out;
  out.values = ctx.b.op(OpCode::kLinalg, p.operands, a);
  if (!ctx.b.ok()) return error_at(p.pos, str_cat(where, ": ", ctx.b.status().message()));
  PJRT_LITE_RETURN_IF_ERROR(check_results(ctx, out.values, p.type.function.results, where, p.pos));
  return out;
}

}  // namespace pjrt_lite::stablehlo::detail
