#pragma once
// IWYU pragma: private, include "pjrt_lite/stablehlo/parser.hpp"
// The names of jaxlib's CPU LAPACK custom-call targets, `lapack_<letter><routine>_ffi`, with
// the letter s, d, c or z for f32, f64, complex<f32>, complex<f64>: read by the parser
// (lapack_calls.hpp) and written by the printer and the portable-artifact writer, with the
// flags and layouts those calls carry.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/attributes.hpp"

namespace pjrt_lite::inline v0_1::stablehlo::detail {

/// A LAPACK target's routine and element type.
struct LapackTarget {
  LinalgRoutine routine;
  DType dtype;
};

/// The LAPACK letter of an element type: s, d, c, z (0 for the others).
constexpr char lapack_letter(DType t) {
  switch (t) {
    case DType::kF32: return 's';
    case DType::kF64: return 'd';
    case DType::kC64: return 'c';
    case DType::kC128: return 'z';
    default: return 0;
  }
}

/// The routine's name in LAPACK for a type: orgqr, syevd, sytrd and ormqr are ungqr, heevd,
/// hetrd and unmqr for complex.
constexpr std::string_view lapack_routine_name(LinalgRoutine r, DType t) {
  const bool complex = t == DType::kC64 || t == DType::kC128;
  if (complex && r == LinalgRoutine::kOrgqr) return "ungqr";
  if (complex && r == LinalgRoutine::kSyevd) return "heevd";
  if (complex && r == LinalgRoutine::kSytrd) return "hetrd";
  if (complex && r == LinalgRoutine::kOrmqr) return "unmqr";
  return linalg_routine_name(r);
}

/// "lapack_sgetrf_ffi" for getrf on f32.
inline std::string lapack_target_name(LinalgRoutine r, DType t) {
  return str_cat("lapack_", std::string(1, lapack_letter(t)), lapack_routine_name(r, t), "_ffi");
}

/// One entry of a LAPACK call's backend_config, as jaxlib's kernels take it: a character
/// flag (ui8), an int32, or a bool.
struct LapackFlag {
  enum class Kind : std::uint8_t { kU8, kI32, kBool };
  std::string_view key;
  std::int64_t value;
  Kind kind = Kind::kU8;
};

/// The backend_config entries of the call for `a`, in MLIR's (alphabetical) order.
inline std::vector<LapackFlag> lapack_flags(const LinalgAttrs& a) {
  using K = LapackFlag::Kind;
  switch (a.routine) {
    case LinalgRoutine::kPotrf:
    case LinalgRoutine::kSytrd: return {{"uplo", a.uplo}};
    case LinalgRoutine::kGesdd:
    case LinalgRoutine::kGesvd: return {{"mode", a.mode}};
    case LinalgRoutine::kSyevd: return {{"mode", a.mode}, {"uplo", a.uplo}};
    case LinalgRoutine::kTrsm: return {{"diag", a.diag}, {"side", a.side}, {"trans_x", a.trans}, {"uplo", a.uplo}};
    case LinalgRoutine::kGeev: return {{"compute_left", a.compute_left}, {"compute_right", a.compute_right}};
    case LinalgRoutine::kGees: return {{"mode", a.mode}, {"sort", a.sort}};
    case LinalgRoutine::kGehrd: return {{"high", a.high, K::kI32}, {"low", a.low, K::kI32}};
    case LinalgRoutine::kOrmqr: return {{"left", a.left, K::kBool}, {"transpose", a.transpose, K::kBool}};
    default: return {};
  }
}

/// jaxlib's layout (minor-to-major) of a LAPACK operand or result of rank `rank`: column-major
/// matrices for the arrays of the call's largest rank, the default layout for the others
/// (pivots, tau, info).
inline std::vector<std::int64_t> lapack_layout(std::int64_t rank, std::int64_t matrix_rank) {
  std::vector<std::int64_t> order;
  if (rank == matrix_rank && rank >= 2) {
    order = {rank - 2, rank - 1};
    for (std::int64_t d = rank - 3; d >= 0; --d) order.push_back(d);
  } else {
    for (std::int64_t d = rank - 1; d >= 0; --d) order.push_back(d);
  }
  return order;
}

/// The routine and type of a supported `lapack_?<routine>_ffi` target, or nullopt.
inline std::optional<LapackTarget> lapack_target(std::string_view target) {
  if (!target.starts_with("lapack_") || !target.ends_with("_ffi") || target.size() < 12)
    return std::nullopt;
  const std::string_view routine = target.substr(8, target.size() - 12);
  std::optional<DType> dtype;
  for (DType t : {DType::kF32, DType::kF64, DType::kC64, DType::kC128})
    if (lapack_letter(t) == target[7]) dtype = t;
  if (!dtype) return std::nullopt;
  for (std::size_t i = 0; i < pjrt_lite::detail::kLinalgRoutineNames.size(); ++i) {
    const auto r = static_cast<LinalgRoutine>(i);
    if (lapack_routine_name(r, *dtype) == routine) return LapackTarget{r, *dtype};
  }
  return std::nullopt;
}

/// The markdown section of docs/ops.md and docs/conformance.md that lists the LAPACK targets
/// read, so that the generated pages and the code cannot disagree.
inline std::string lapack_targets_markdown() {
  struct Row {
    LinalgRoutine routine;
    std::string_view signature;
    std::string_view flags;
  };
  constexpr Row rows[] = {
      {LinalgRoutine::kGetrf, "x[..., m, n] -> lu, pivots (i32, 1-based) [..., min(m, n)], info", ""},
      {LinalgRoutine::kPotrf, "x[..., n, n] -> factor (other triangle untouched), info", "uplo"},
      {LinalgRoutine::kGeqrf, "x[..., m, n] -> R and reflectors, tau[..., min(m, n)]", ""},
      {LinalgRoutine::kOrgqr, "a[..., m, n], tau[..., k] -> Q[..., m, n]", ""},
      {LinalgRoutine::kOrmqr, "a, tau, c[..., m, n] -> op(Q) c or c op(Q)", "left, transpose (bool)"},
      {LinalgRoutine::kGesdd, "x[..., m, n] -> x, s (real, descending), u, vt, info", "mode (A, S, N)"},
      {LinalgRoutine::kGesvd, "as gesdd", "mode (A, S, N)"},
      {LinalgRoutine::kSyevd, "x[..., n, n] -> eigenvectors, eigenvalues (real, ascending), info", "mode (V, N), uplo"},
      {LinalgRoutine::kSytrd, "x[..., n, n] -> reflectors, d (real), e (real), tau, info", "uplo"},
      {LinalgRoutine::kGehrd, "x[..., n, n] -> H and reflectors, tau[..., n - 1], info", "low = 1, high = n (i32)"},
      {LinalgRoutine::kTrsm, "a[..., k, k], b[..., m, n] -> x", "side, uplo, trans_x, diag"},
      {LinalgRoutine::kGtsv, "dl, d, du [..., m], b[..., m, n] -> dl, d, du, x, info", ""},
      {LinalgRoutine::kGeqp3, "x[..., m, n], jpvt (i32) [..., n] -> R and reflectors, jpvt (1-based), tau", ""},
      {LinalgRoutine::kGeev, "x[..., n, n] -> w (wr, wi when real), vl, vr (complex), info", "compute_left, compute_right (V, N)"},
      {LinalgRoutine::kGees, "x[..., n, n] -> T, Schur vectors, w (wr, wi when real), sdim, info", "mode (V, N), sort (N)"},
  };
  std::string out =
      "\n## jaxlib's CPU LAPACK custom calls\n\n"
      "`stablehlo.custom_call @lapack_<t><routine>_ffi` with t = s, d, c, z (f32, f64, complex<f32>,\n"
      "complex<f64>), read into one linalg node each and run by both backends (tests/linalg_test.cpp).\n"
      "Flags are `ui8` characters in `mhlo.backend_config`; layouts are physical and ignored. A\n"
      "real Schur form's 2x2 blocks are in LAPACK's standard form (equal diagonal elements,\n"
      "off-diagonal elements of opposite signs). Other `lapack_*` targets are refused with\n"
      "UNIMPLEMENTED naming the target.\n\n"
      "| targets | operands -> results | flags |\n|---|---|---|\n";
  for (const Row& r : rows) {
    std::string names;
    for (DType t : {DType::kF32, DType::kF64, DType::kC64, DType::kC128})
      if (lapack_target(lapack_target_name(r.routine, t)))
        names += str_cat(names.empty() ? "" : ", ", "`", lapack_target_name(r.routine, t), "`");
    out += str_cat("| ", names, " | ", r.signature, " | ", r.flags, " |\n");
  }
  return out;
}

}  // namespace pjrt_lite::stablehlo::detail
