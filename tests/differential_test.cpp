// Differential tests: every op of the IR on every dtype it accepts runs on the CPU backend
// and on the reference interpreter, over random values plus edge values (NaN, infinities,
// -0, denormals, integer limits), and the results must agree: exactly for integers, bools
// and data movement, within kUlpBound units in the last place for floating point (a zero's
// sign must match: -0 is not +0). The narrow types run every bit pattern of the type, and
// their stored bits must match (any NaN matching any NaN). The same sweep writes docs/ops.md, the table of what the CPU backend runs, and fails if
// the checked-in table differs, so the table cannot drift from the code.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/core/ulp.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/stablehlo/detail/lapack_names.hpp"
#include "corpus.hpp"
#include "sanitizers.hpp"

namespace differential_test {

using namespace pjrt_lite;

namespace {

/// Floats may differ by this many units in the last place (Eigen's vectorized exp, log,
/// tanh, sin, ... against the C library's). Arithmetic is exact.
constexpr std::int64_t kUlpBound = 4;
constexpr std::int64_t kN = 97;  // enough for every edge value plus random ones, not a tile multiple

template <class T>
std::vector<T> edge_values() {
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (is_complex_v<T>) {
    using R = typename T::value_type;
    const R inf = std::numeric_limits<R>::infinity(), nan = std::numeric_limits<R>::quiet_NaN();
    return {T(0, 0), T(-0.0, 0), T(1, -1), T(-2.5, 0.5), T(inf, 0), T(0, -inf), T(nan, 1), T(1e-30, 1e30)};
  } else if constexpr (is_float_v<T>) {
    using L = std::numeric_limits<T>;
    return {T(0.0f), T(-0.0f), T(1.0f), T(-1.0f), T(0.5f), T(-2.5f), T(3.0f), L::infinity(), -L::infinity(),
            L::quiet_NaN(), L::denorm_min(), L::min(), L::max(), L::lowest(), L::epsilon()};
  } else {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {T(0), T(1), T(2), T(7), L::min(), L::max(), T(L::max() - 1)};
    if constexpr (std::is_signed_v<T>) v.insert(v.end(), {T(-1), T(-7), T(L::min() + 1)});
    return v;
  }
}

template <class T>
T random_value(std::mt19937_64& rng) {
  if constexpr (std::is_same_v<T, bool>) {
    return rng() & 1;
  } else if constexpr (is_complex_v<T>) {
    using R = typename T::value_type;
    std::uniform_real_distribution<double> u(-4, 4);
    return T(static_cast<R>(u(rng)), static_cast<R>(u(rng)));
  } else if constexpr (is_float_v<T>) {
    std::uniform_real_distribution<double> u(-4, 4);
    return convert_element<T>(u(rng));
  } else {
    // Mostly small values (so shifts, pow and division are interesting), some of any size.
    if (rng() % 4 == 0) return static_cast<T>(rng());
    std::uniform_int_distribution<int> u(std::is_signed_v<T> ? -40 : 0, 40);
    return static_cast<T>(u(rng));
  }
}

/// kN values of `t`: the edge values (cycled with an offset so two operands pair them
/// differently), then random ones.
Literal make_input(DType t, int salt, std::mt19937_64& rng) {
  Literal lit(Shape(t, {kN}));
  visit_dtype(t, [&]<class T>(std::type_identity<T>) {
    auto edges = edge_values<T>();
    auto data = lit.data<T>();
    for (std::int64_t i = 0; i < kN; ++i) {
      if (i < 3 * static_cast<std::int64_t>(edges.size()))
        data[static_cast<std::size_t>(i)] = edges[static_cast<std::size_t>((i + salt * (i / static_cast<std::int64_t>(edges.size()))) % static_cast<std::int64_t>(edges.size()))];
      else
        data[static_cast<std::size_t>(i)] = random_value<T>(rng);
    }
  });
  return lit;
}

template <class R>
bool close(R a, R b) {
  const double da = static_cast<double>(static_cast<std::conditional_t<is_float_v<R> && !std::is_floating_point_v<R>, float, R>>(a));
  const double db = static_cast<double>(static_cast<std::conditional_t<is_float_v<R> && !std::is_floating_point_v<R>, float, R>>(b));
  if (std::isnan(da) || std::isnan(db)) return std::isnan(da) && std::isnan(db);
  if (std::isinf(da) || std::isinf(db)) return da == db;
  if (da == db) return da != 0 || std::signbit(da) == std::signbit(db);  // -0 is not +0
  return ulp_distance(a, b) <= kUlpBound;
}

/// Empty when equal (to the tolerance of the type, or to `relative` when that is not 0), else
/// where and how they differ.
std::string compare(const Literal& cpu, const Literal& ref, double relative = 0) {
  if (!(cpu.shape() == ref.shape())) return str_cat("shape ", cpu.shape(), " vs ", ref.shape());
  std::string out;
  if (is_narrow(cpu.dtype())) {  // both round each result to the type: the stored bits agree
    const auto a = cpu.narrow_bits(), b = ref.narrow_bits();
    const bool floating = is_narrow_floating(cpu.dtype());
    auto is_nan = [&](std::uint8_t bits) {
      return floating && std::isnan(decode_narrow_float(narrow_float_format(cpu.dtype()), bits));
    };
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i] && !(is_nan(a[i]) && is_nan(b[i])))
        return str_cat("element ", i, ": cpu bits ", int{a[i]}, ", reference bits ", int{b[i]});
    return out;
  }
  visit_dtype(cpu.dtype(), [&]<class T>(std::type_identity<T>) {
    auto a = cpu.data<T>();
    auto b = ref.data<T>();
    for (std::size_t i = 0; i < a.size() && out.empty(); ++i) {
      bool same;
      if constexpr (is_inexact(dtype_of<T>)) {
        if (relative > 0) {
          const double d = std::abs(convert_element<c128>(a[i]) - convert_element<c128>(b[i]));
          same = d <= relative * std::max(1.0, std::abs(convert_element<c128>(b[i])));
          if (same) continue;
        }
      }
      if constexpr (is_complex_v<T>) same = close(a[i].real(), b[i].real()) && close(a[i].imag(), b[i].imag());
      else if constexpr (is_float_v<T>) same = close(a[i], b[i]);
      else same = a[i] == b[i];
      if (!same) {
        std::string x, y;
        pjrt_lite::detail::append_element(x, a[i]);
        pjrt_lite::detail::append_element(y, b[i]);
        out = str_cat("element ", i, ": cpu ", x, ", reference ", y);
      }
    }
  });
  return out;
}

/// What the sweep found for one op and dtype.
enum class Outcome { kNotAccepted, kPass, kFail, kUnsupported };

/// docs/ops.md's section on quantized types (the StableHLO parser lowers them; see
/// stablehlo/detail/quantized_ops.hpp).
constexpr std::string_view kQuantizedTypes = R"(
## Quantized types

StableHLO's `!quant.uniform<storage[<min:max>]:expressed[:axis], scale[:zero_point] | {...}>`
(per tensor or per axis; storage i2..i32 or ui2..ui32, spelled i8 / u8 / ui8; expressed f16,
bf16, f32 or f64) are read by the StableHLO parser, which lowers every op on them into ops of
the IR as it reads them (`stablehlo/detail/quantized_ops.hpp`): the IR has no quantized types,
and a quantized value is its storage integers, so both backends, the differential sweep and the
compile cache see ordinary programs.

| op | computed as |
|---|---|
| uniform_quantize of a float | x / scale + zero_point in the expressed type, clamped to [min, max], rounded to nearest even, converted to the storage type |
| uniform_quantize of a quantized value | q * (s_in / s_out) + (zp_out - zp_in * s_in / s_out) in f32 (f64 if either expressed type is), clamped, rounded (the scales merged, as StableHLO's lowering does); a change of quantization dimension is UNIMPLEMENTED |
| uniform_dequantize | (q - zero_point) in s32 (s64 for 32-bit storage), converted, times scale |
| dot_general, convolution of two quantized operands into a quantized result | the integers q - zero_point multiplied and summed exactly in s32, times scale_lhs * scale_rhs / scale_result in f64, plus the result's zero point, clamped, rounded. The CPU's 8-bit products run them: through bytes when q - zero_point fits one (zero point 0, or -128 for i8), and for a dot_general with other zero points on the stored bytes, less zero_rhs * sum(lhs) + zero_lhs * sum(rhs) - K * zero_lhs * zero_rhs. Needs 8-bit storage (or narrower, then in s32), a per-tensor lhs, zero points 0 on a per-axis rhs and a per-axis rhs over a dimension the result keeps; otherwise as the row below |
| ops that move or pick elements (broadcast_in_dim, reshape, transpose, slice, dynamic_slice, dynamic_update_slice, concatenate, pad, reverse, gather, select, maximum, minimum, clamp, and reduce, reduce_window, sort, scatter, select_and_scatter, while, case, if, all_gather, all_to_all, collective_permute, collective_broadcast) when every quantized operand and result has the same scales and zero points | the op on the storage integers (exact) |
| constant, bitcast_convert, return, call, tuples, optimization_barrier | the storage integers as they are (a quantized constant's elements are storage values) |
| every other op, a hybrid op (float lhs, quantized rhs), and the rows above when their quantizations differ | the spec's dequantize_op_quantize: quantized operands dequantized, the op in the expressed type, quantized results quantized |
| ops with regions over values of different quantizations | UNIMPLEMENTED |

Tested by `tests/quantized_test.cpp` (against the spec's formulas evaluated in double on
scalars and 64-bit integer sums, on the CPU client and the reference interpreter) and by
StableHLO's own quantized test programs (docs/conformance.md); portable artifacts read their
quantized types (`!vhlo.quant_v1`, per tensor and per axis) into the same text
(tests/stablehlo_bytecode_test.cpp). Not yet: quantized function arguments carry no check
that a caller's value has the declared quantization (the IR sees storage integers). The
requantization after an 8-bit product runs inside the product, on each block of rows as it is
done (docs/DECISIONS.md, "A loop after a product runs in the product's blocks").
)";

struct Sweep {
  std::mt19937_64 rng{20261122};
  std::unique_ptr<cpu::Client<cpu::InlineExecutor>> client = cpu::Client<cpu::InlineExecutor>::create({}).value();
  /// Devices for the collectives' grids.
  std::unique_ptr<cpu::Client<cpu::InlineExecutor>> grid_client =
      cpu::Client<cpu::InlineExecutor>::create({.device_count = 3}).value();
  std::map<std::string, std::map<DType, Outcome>> table;
  std::vector<std::string> failures;
  std::set<std::string> done;  // the parts of the sweep that have run in this process

  /// Builds with `make`, runs on both backends with `args`, and records the outcome. Floats
  /// agree within kUlpBound ULP, or within `relative` when the op sums in an order of its own.
  template <class F>
  void check(const std::string& row, DType t, const std::vector<Literal>& args, F make, double relative = 0) {
    GraphBuilder b(row);
    std::vector<Value> params;
    for (const Literal& a : args) params.push_back(b.parameter(a.shape()));
    std::vector<Value> outs = make(b, params);
    StatusOr<Graph> g = b.build(outs);
    if (!g.ok()) {
      record(row, t, Outcome::kNotAccepted);
      return;
    }
    auto ref = reference::evaluate(*g, args);
    auto exe = client->compile(*g);
    if (!exe.ok() || !ref.ok()) {
      record(row, t, Outcome::kUnsupported);
      if (!exe.ok() && exe.status().code() != StatusCode::kUnimplemented) failures.push_back(str_cat(row, " ", dtype_name(t), ": ", exe.status()));
      return;
    }
    std::vector<cpu::Buffer<cpu::InlineExecutor>> buffers;
    std::vector<cpu::Buffer<cpu::InlineExecutor>*> pointers;
    for (const Literal& a : args) buffers.push_back(client->buffer_from_literal(a).value());
    for (auto& buffer : buffers) pointers.push_back(&buffer);
    auto out = exe->execute_sharded(pointers, client->devices()[0]);
    if (!out.ok()) {
      record(row, t, Outcome::kFail);
      failures.push_back(str_cat(row, " ", dtype_name(t), ": ", out.status()));
      return;
    }
    Outcome outcome = Outcome::kPass;
    for (std::size_t k = 0; k < out->size(); ++k) {
      std::string diff = compare((*out)[k].to_literal().await().value(), (*ref)[k], relative);
      if (!diff.empty()) {
        outcome = Outcome::kFail;
        failures.push_back(str_cat(row, " ", dtype_name(t), " output ", k, ": ", diff));
      }
    }
    record(row, t, outcome);
  }

  /// As check, on a grid of `replicas` processes (process k on args[k]): the CPU executes
  /// every participant at once, the reference runs evaluate_parallel.
  template <class F>
  void check_grid(const std::string& row, DType t, const std::vector<std::vector<Literal>>& args, F make) {
    const auto replicas = static_cast<int>(args.size());
    GraphBuilder b(row);
    std::vector<Value> params;
    for (const Literal& a : args[0]) params.push_back(b.parameter(a.shape()));
    std::vector<Value> outs = make(b, params);
    StatusOr<Graph> g = b.build(outs);
    if (!g.ok()) {
      record(row, t, Outcome::kNotAccepted);
      return;
    }
    reference::ParallelOptions grid;
    grid.num_replicas = replicas;
    auto ref = reference::evaluate_parallel(*g, args, grid);
    cpu::CompileOptions options;
    options.num_replicas = replicas;
    auto exe = grid_client->compile(*g, options);
    if (!exe.ok() || !ref.ok()) {
      record(row, t, Outcome::kUnsupported);
      if (!exe.ok() && exe.status().code() != StatusCode::kUnimplemented) failures.push_back(str_cat(row, " ", dtype_name(t), ": ", exe.status()));
      if (!ref.ok()) failures.push_back(str_cat(row, " ", dtype_name(t), ": ", ref.status()));
      return;
    }
    std::vector<std::vector<cpu::Buffer<cpu::InlineExecutor>>> buffers(args.size());
    std::vector<std::vector<cpu::Buffer<cpu::InlineExecutor>*>> pointers(args.size());
    for (std::size_t k = 0; k < args.size(); ++k) {
      for (const Literal& a : args[k])
        buffers[k].push_back(grid_client->buffer_from_literal(a, exe->addressable_devices()[k]->memory_spaces()[0]).value());
      for (auto& buffer : buffers[k]) pointers[k].push_back(&buffer);
    }
    auto out = exe->execute(pointers);
    if (!out.ok()) {
      record(row, t, Outcome::kFail);
      failures.push_back(str_cat(row, " ", dtype_name(t), ": ", out.status()));
      return;
    }
    Outcome outcome = Outcome::kPass;
    for (std::size_t p = 0; p < args.size(); ++p)
      for (std::size_t k = 0; k < (*out)[p].size(); ++k) {
        std::string diff = compare((*out)[p][k].to_literal().await().value(), (*ref)[p][k], 0);
        if (!diff.empty()) {
          outcome = Outcome::kFail;
          failures.push_back(str_cat(row, " ", dtype_name(t), " process ", p, " output ", k, ": ", diff));
        }
      }
    record(row, t, outcome);
  }

  /// A cell shows the worst of its runs: a failure over a rejection over a pass over "the
  /// op does not take this type" (one row may hold several target types).
  void record(const std::string& row, DType t, Outcome outcome) {
    auto rank = [](Outcome o) {
      return o == Outcome::kFail ? 3 : o == Outcome::kUnsupported ? 2 : o == Outcome::kPass ? 1 : 0;
    };
    auto [it, inserted] = table[row].emplace(t, outcome);
    if (!inserted && rank(outcome) > rank(it->second)) it->second = outcome;
  }

  /// The table of `types`, a row per op that has a cell of them (an accepted one, with
  /// `accepted_only`).
  template <std::size_t N>
  void write_table(std::ostream& os, const std::array<DType, N>& types, bool accepted_only) const {
    os << "| op |";
    for (DType t : types) os << " " << dtype_name(t) << " |";
    os << "\n|---|";
    for (std::size_t i = 0; i < N; ++i) os << "---|";
    os << "\n";
    for (const auto& entry : table) {  // not a structured binding: clang 14 cannot capture one
      const std::map<DType, Outcome>& cells = entry.second;
      auto outcome = [&](DType t) {
        auto it = cells.find(t);
        return it == cells.end() ? std::optional<Outcome>() : std::optional<Outcome>(it->second);
      };
      if (std::none_of(types.begin(), types.end(), [&](DType t) {
            const auto o = outcome(t);
            return o.has_value() && (!accepted_only || *o != Outcome::kNotAccepted);
          }))
        continue;
      os << "| " << entry.first << " |";
      for (DType t : types) {
        const Outcome o = outcome(t).value_or(Outcome::kNotAccepted);
        os << (o == Outcome::kPass ? " ok |" : o == Outcome::kFail ? " FAIL |" : o == Outcome::kUnsupported ? " unsupported |" : " - |");
      }
      os << "\n";
    }
  }

  std::string markdown() const {
    std::ostringstream os;
    os << "# What the CPU backend runs\n\n"
       << "Generated by `tests/differential_test.cpp` (run the suite with `PJRT_LITE_WRITE_DOCS=1` to\n"
       << "rewrite it; the test fails when this file and the code disagree). Each cell: `ok` when the\n"
       << "CPU backend equals the reference interpreter on random and edge values (exactly for\n"
       << "integers and bools, within " << kUlpBound << " ULP for floats, a zero's sign included), `-` when\n"
       << "the op does not take that type, `unsupported` when the CPU backend rejects it, `FAIL` when\n"
       << "results differ.\n\n";
    // The main table lists every op some type of it reaches; the narrow one the ops some narrow
    // type takes.
    write_table(os, kAllDTypes, /*accepted_only=*/false);
    os << stablehlo::detail::lapack_targets_markdown();
    os << "\n"
       << "## The narrow types\n"
       << "\n"
       << "s2, s4, u2, u4 (StableHLO's i2, i4, ui2, ui4) and f8e3m4, f8e4m3, f8e4m3fn, f8e4m3fnuz,\n"
       << "f8e4m3b11fnuz, f8e5m2, f8e5m2fnuz, f8e8m0fnu, f6e2m3fn, f6e3m2fn and f4e2m1fn follow ml_dtypes'\n"
       << "semantics and are stored one element per byte, in its low bits (s2 and s4 sign-extended through\n"
       << "the byte). An op that computes on values converts its narrow operands to f32 (the floats) or\n"
       << "s32 / u32 (the integers), runs as the table above says, and converts its narrow results back,\n"
       << "rounding to nearest even or wrapping (`transforms/widen_narrow.hpp`); an op with a body\n"
       << "(reduce, reduce_window, sort, scatter, select_and_scatter, all_reduce, reduce_scatter) runs its\n"
       << "body the same way, so each step rounds to the narrow type. convert between any two types and\n"
       << "bitcast_convert (by the types' real bit widths, lowest bits first) run on them directly. Each\n"
       << "cell below: the CPU backend against the reference interpreter on every bit pattern of the type\n"
       << "(the second operand of a binary op another order of the same patterns), the stored bits equal\n"
       << "(any NaN equal to any NaN: the payload and sign of a NaN are not kept through f32); `-` where\n"
       << "the op does not take the type. Also tested by `tests/narrow_types_test.cpp`.\n\n";
    write_table(os, kNarrowDTypes, /*accepted_only=*/true);
    os
       << kQuantizedTypes;
    return os.str();
  }
};

Sweep& sweep() {
  static Sweep s;
  return s;
}

}  // namespace

static void sweep_elementwise() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_elementwise").second) return;
  for (std::size_t code = 0; code < kOpCodeCount; ++code) {
    const auto op = static_cast<OpCode>(code);
    if (!is_unary(op) && !is_binary(op)) continue;
    for (DType t : kAllDTypes) {
      std::vector<Literal> args = {make_input(t, 0, s.rng)};
      if (is_binary(op)) args.push_back(make_input(t, 1, s.rng));
      auto make = [&](GraphBuilder& b, std::vector<Value> p) {
        return std::vector<Value>{is_binary(op) ? b.binary(op, p[0], p[1]) : b.unary(op, p[0])};
      };
      s.check(std::string(op_name(op)), t, args, make);
      // Rank 0 (an edge value each) and an empty array run through the same kernels.
      std::vector<Literal> scalars, empties;
      for (const Literal& a : args) {
        Literal scalar(Shape(t, {}));
        std::memcpy(scalar.untyped_data(), a.untyped_data(), byte_size(t));
        scalars.push_back(std::move(scalar));
        empties.push_back(Literal(Shape(t, {0, 3})));
      }
      s.check(std::string(op_name(op)), t, scalars, make);
      s.check(std::string(op_name(op)), t, empties, make);
    }
  }
}

static void sweep_other_elementwise() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_other_elementwise").second) return;
  for (DType t : kAllDTypes) {
    std::vector<Literal> args = {make_input(t, 0, s.rng), make_input(t, 3, s.rng)};
    for (int d = 0; d < 6; ++d) {
      const auto dir = static_cast<ComparisonDirection>(d);
      s.check(str_cat("compare ", comparison_direction_name(dir)), t, args, [&](GraphBuilder& b, std::vector<Value> p) {
        return std::vector<Value>{b.compare(p[0], p[1], dir)};
      });
      if (is_floating(t))
        s.check(str_cat("compare ", comparison_direction_name(dir), " TOTALORDER"), t, args,
                [&](GraphBuilder& b, std::vector<Value> p) {
                  return std::vector<Value>{b.compare(p[0], p[1], dir, ComparisonType::kTotalOrder)};
                });
    }
    std::vector<Literal> sel = {make_input(DType::kPred, 0, s.rng), args[0], args[1]};
    s.check("select", t, sel, [&](GraphBuilder& b, std::vector<Value> p) { return std::vector<Value>{b.select(p[0], p[1], p[2])}; });
    std::vector<Literal> clamp_args = {args[0], args[1], make_input(t, 5, s.rng)};
    s.check("clamp", t, clamp_args, [&](GraphBuilder& b, std::vector<Value> p) { return std::vector<Value>{b.clamp(p[0], p[1], p[2])}; });
    for (DType to : kAllDTypes) {
      s.check(str_cat("convert to ", dtype_name(to)), t, {args[0]}, [&](GraphBuilder& b, std::vector<Value> p) {
        return std::vector<Value>{b.convert(p[0], to)};
      });
    }
    for (DType to : kAllDTypes) {
      if (byte_size(to) != byte_size(t)) continue;
      s.check(str_cat("bitcast_convert to ", byte_size(to) * 8, " bits"), t, {args[0]}, [&](GraphBuilder& b, std::vector<Value> p) {
        return std::vector<Value>{b.bitcast_convert(p[0], to)};
      });
    }
  }
}

static void sweep_structural() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_structural").second) return;
  for (DType t : kAllDTypes) {
    Literal cube = make_input(t, 2, s.rng);  // 97 values; use the first 60 as 3x4x5
    Literal x(Shape(t, {3, 4, 5}));
    std::memcpy(x.untyped_data(), cube.untyped_data(), x.size_bytes());
    Literal scalar(Shape(t, {}));
    std::memcpy(scalar.untyped_data(), static_cast<const std::byte*>(cube.untyped_data()) + 61 * byte_size(t), byte_size(t));
    // Sums and products accumulate in an order of their own (Eigen's, f32 for f16/bf16
    // dots): compare those on random values only, with a relative tolerance.
    Literal xr(Shape(t, {3, 4, 5}));
    visit_dtype(t, [&]<class T>(std::type_identity<T>) {
      for (T& v : xr.data<T>()) v = random_value<T>(s.rng);
    });
    const double relative = t == DType::kF16 || t == DType::kBF16 ? 2e-2 : t == DType::kF32 || t == DType::kC64 ? 1e-5 : 1e-12;
    auto one = [&](std::string row, std::vector<Literal> args, auto make) { s.check(std::move(row), t, args, make); };
    one("transpose", {x}, [](GraphBuilder& b, std::vector<Value> p) { return std::vector<Value>{b.transpose(p[0], {2, 0, 1})}; });
    one("broadcast_in_dim", {x}, [](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.broadcast_in_dim(b.slice(p[0], {0, 0, 0}, {3, 1, 5}), {2, 3, 4, 5}, {1, 2, 3})};
    });
    one("reshape", {x}, [](GraphBuilder& b, std::vector<Value> p) { return std::vector<Value>{b.reshape(p[0], {5, 12})}; });
    one("slice", {x}, [](GraphBuilder& b, std::vector<Value> p) { return std::vector<Value>{b.slice(p[0], {1, 0, 1}, {3, 4, 5}, {1, 3, 2})}; });
    one("reverse", {x}, [](GraphBuilder& b, std::vector<Value> p) { return std::vector<Value>{b.reverse(p[0], {0, 2})}; });
    one("concatenate", {x, x}, [](GraphBuilder& b, std::vector<Value> p) { return std::vector<Value>{b.concatenate({p[0], p[1], p[0]}, 1)}; });
    one("pad", {x, scalar}, [](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.pad(p[0], p[1], {1, -1, 2}, {-1, 2, 0}, {0, 1, 2})};
    });
    one("iota", {}, [t](GraphBuilder& b, std::vector<Value>) { return std::vector<Value>{b.iota(Shape(t, {3, 7}), 1)}; });
    one("dynamic_slice", {x}, [](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.dynamic_slice(p[0], {b.constant(std::int32_t{2}), b.constant(std::int32_t{-1}), b.constant(std::int32_t{9})}, {2, 2, 3})};
    });
    one("dynamic_update_slice", {x}, [](GraphBuilder& b, std::vector<Value> p) {
      Value update = b.slice(p[0], {0, 0, 0}, {1, 2, 2});
      return std::vector<Value>{b.dynamic_update_slice(p[0], update, {b.constant(std::int64_t{1}), b.constant(std::int64_t{3}), b.constant(std::int64_t{1})})};
    });
    for (OpCode op : {OpCode::kAdd, OpCode::kMultiply, OpCode::kMaximum, OpCode::kMinimum, OpCode::kAnd, OpCode::kOr}) {
      const bool summing = (op == OpCode::kAdd || op == OpCode::kMultiply) && is_inexact(t);
      s.check(str_cat("reduce ", op_name(op)), t, {summing ? xr : x, scalar}, [op](GraphBuilder& b, std::vector<Value> p) {
        return std::vector<Value>{b.reduce(p[0], p[1], op, {1}), b.reduce(p[0], p[1], op, {0, 2})};
      }, summing ? relative : 0);
    }
    one("reduce argmax", {x}, [](GraphBuilder& b, std::vector<Value> p) {
      auto r = b.argmax(p[0], 2, DType::kS32);
      return std::vector<Value>{r[0], r[1]};
    });
    s.check("dot_general", t, {is_inexact(t) ? xr : x, is_inexact(t) ? xr : x}, [](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.dot_general(p[0], p[1], DotDimensionNumbers{{0}, {0}, {2}, {2}})};
    }, is_inexact(t) ? relative : 0);
  }
}

static void sweep_scatter() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_scatter").second) return;
  for (DType t : kAllDTypes) {
    Literal values = make_input(t, 4, s.rng);
    auto first = [&](std::vector<std::int64_t> dims) {
      Literal out(Shape(t, dims));
      std::memcpy(out.untyped_data(), values.untyped_data(), out.size_bytes());
      return out;
    };
    Literal x = first({3, 4, 5});
    // Index vectors (dims 0 and 2) with a repeat (order matters for replace) and one out of
    // bounds; then scalar starts into dim 2 whose windows fall partly outside the input.
    const Literal rows = Literal::from_span<std::int32_t>(std::vector<std::int32_t>{0, 1, 2, 4, 0, 1, 3, 0}, {4, 2}).value();
    const Literal starts = Literal::from_span<std::int64_t>(std::vector<std::int64_t>{0, 4, -1}, {3}).value();
    const Literal batched = Literal::from_span<std::uint8_t>(std::vector<std::uint8_t>{1, 4, 0, 0, 5, 2}, {3, 2, 1}).value();
    Literal small_updates = first({4, 3});
    Literal batched_updates = first({3, 2, 4});
    Literal window_updates = first({3, 3, 4, 2});
    for (OpCode op : {OpCode::kParameter, OpCode::kAdd, OpCode::kMultiply, OpCode::kMaximum, OpCode::kMinimum}) {
      const std::string row = op == OpCode::kParameter ? std::string("scatter") : str_cat("scatter ", op_name(op));
      s.check(row, t, {x, rows, small_updates}, [op](GraphBuilder& b, std::vector<Value> p) {
        ScatterAttrs dn{{1}, {0, 2}, {}, {}, {0, 2}, 1, false, false};
        return std::vector<Value>{b.scatter(p[0], p[1], p[2], op, dn)};
      });
      s.check(row, t, {x, starts, window_updates}, [op](GraphBuilder& b, std::vector<Value> p) {
        ScatterAttrs dn{{1, 2, 3}, {}, {}, {}, {2}, 1, false, false};
        return std::vector<Value>{b.scatter(p[0], p[1], p[2], op, dn)};
      });
      if (op == OpCode::kParameter) {
        // gather over the same index arrays: windows, clamping, batching.
        s.check("gather", t, {x, rows}, [](GraphBuilder& b, std::vector<Value> p) {
          return std::vector<Value>{b.gather(p[0], p[1], GatherAttrs{{1}, {0, 2}, {}, {}, {0, 2}, 1, {1, 3, 1}, false})};
        });
        s.check("gather", t, {x, starts}, [](GraphBuilder& b, std::vector<Value> p) {
          return std::vector<Value>{b.gather(p[0], p[1], GatherAttrs{{1, 2, 3}, {}, {}, {}, {2}, 1, {3, 4, 2}, false})};
        });
        s.check("gather", t, {x, batched}, [](GraphBuilder& b, std::vector<Value> p) {
          return std::vector<Value>{b.gather(p[0], p[1], GatherAttrs{{2}, {2}, {0}, {0}, {2}, 2, {1, 4, 1}, true})};
        });
      }
      // Batching: input dim 0 pairs with indices dim 0.
      s.check(row, t, {x, batched, batched_updates}, [op](GraphBuilder& b, std::vector<Value> p) {
        ScatterAttrs dn{{2}, {2}, {0}, {0}, {2}, 2, false, true};
        return std::vector<Value>{b.scatter(p[0], p[1], p[2], op, dn)};
      });
    }
  }
}

static void sweep_window() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_window").second) return;
  for (DType t : kAllDTypes) {
    Literal values = make_input(t, 5, s.rng);
    auto first = [&](std::vector<std::int64_t> dims) {
      Literal out(Shape(t, dims));
      std::memcpy(out.untyped_data(), values.untyped_data(), out.size_bytes());
      return out;
    };
    const Literal x = first({3, 4, 5});
    const Literal scalar = first({});
    const double relative = t == DType::kF16 || t == DType::kBF16 ? 2e-2 : t == DType::kF32 || t == DType::kC64 ? 1e-5 : 1e-12;
    // Padding on both sides (negative too), strides, and both kinds of dilation.
    const WindowAttrs plain{{2, 2, 3}, {1, 2, 1}, {}, {}, {1, 0, 2}, {0, 1, -1}};
    const WindowAttrs dilated{{2, 3, 2}, {2, 1, 3}, {2, 1, 2}, {1, 2, 2}, {0, 1, 1}, {1, 0, 0}};
    const WindowAttrs cumulative{{3, 1, 1}, {}, {}, {}, {2, 0, 0}, {0, 0, 0}};
    for (OpCode op : {OpCode::kAdd, OpCode::kMultiply, OpCode::kMaximum, OpCode::kMinimum, OpCode::kAnd, OpCode::kOr}) {
      const bool summing = (op == OpCode::kAdd || op == OpCode::kMultiply) && is_inexact(t);
      s.check(str_cat("reduce_window ", op_name(op)), t, {x, scalar}, [&](GraphBuilder& b, std::vector<Value> p) {
        return std::vector<Value>{b.reduce_window(p[0], p[1], op, plain), b.reduce_window(p[0], p[1], op, dilated),
                                  b.reduce_window(p[0], p[1], op, cumulative)};
      }, summing ? relative : 0);
    }
    // A variadic body the CPU runs as a scalar program: argmax over each window.
    s.check("reduce_window argmax", t, {x, scalar}, [&](GraphBuilder& b, std::vector<Value> p) {
      StatusOr<Graph> body = make_arg_reduce_body(ComparisonDirection::kGt, t, DType::kS32);
      if (!body.ok()) return std::vector<Value>{Value{}};  // no order on t: not accepted
      Value index = b.iota(Shape(DType::kS32, {3, 4, 5}), 2);
      return b.reduce_window({p[0], index}, {p[1], b.constant(std::int32_t{0})}, *std::move(body), plain);
    });
    // One source element per window: 2x2x3 windows of x.
    const WindowAttrs pool{{2, 2, 2}, {1, 2, 2}, {}, {}, {0, 1, 0}, {0, 0, 1}};
    const Literal source = first({2, 2, 3});
    for (ComparisonDirection d : {ComparisonDirection::kGe, ComparisonDirection::kLe}) {
      s.check(str_cat("select_and_scatter ", comparison_direction_name(d)), t, {x, source, scalar},
              [&](GraphBuilder& b, std::vector<Value> p) {
                return std::vector<Value>{b.select_and_scatter(p[0], p[1], p[2], d, OpCode::kAdd, pool)};
              }, is_inexact(t) ? relative : 0);
    }
  }
}

static void sweep_convolution() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_convolution").second) return;
  auto attrs = [](std::string_view dn, ConvolutionAttrs a) {
    Status st = parse_convolution_dimension_numbers(dn, a);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    return a;
  };
  struct Case {
    std::vector<std::int64_t> lhs, rhs;
    ConvolutionAttrs a;
  };
  // 1-D, 2-D and 3-D; strides, padding (negative too), both dilations, odd layouts; groups of
  // both kinds; a reversed window.
  const std::vector<std::pair<std::string, std::vector<Case>>> rows = {
      {"convolution",
       {{{2, 3, 9}, {4, 3, 3}, attrs("[b, f, 0]x[o, i, 0]->[b, f, 0]", {.window_strides = {2}, .padding_low = {-1}, .padding_high = {2}, .lhs_dilation = {2}})},
        {{1, 6, 5, 2}, {3, 2, 2, 4}, attrs("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", {.window_strides = {1, 2}, .padding_low = {1, 0}, .padding_high = {1, 2}, .rhs_dilation = {2, 1}})},
        {{1, 2, 4, 3, 3}, {2, 2, 2, 2, 2}, attrs("[b, f, 0, 1, 2]x[o, i, 0, 1, 2]->[b, f, 0, 1, 2]", {.padding_low = {0, 1, -1}, .padding_high = {1, 0, 1}, .lhs_dilation = {1, 2, 1}})},
        {{5, 2, 3}, {3, 2, 4}, attrs("[0, b, f]x[i, 0, o]->[f, 0, b]", {.padding_low = {1}, .padding_high = {1}})}}},
      {"convolution grouped",
       {{{2, 4, 7}, {6, 2, 3}, attrs("[b, f, 0]x[o, i, 0]->[b, f, 0]", {.feature_group_count = 2})},
        {{4, 3, 6}, {4, 3, 2}, attrs("[b, f, 0]x[o, i, 0]->[b, f, 0]", {.window_strides = {2}, .batch_group_count = 2})}}},
      {"convolution reversed window",
       {{{1, 5, 5, 1}, {2, 3, 1, 1}, attrs("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", {.window_reversal = {1, 0}})}}},
  };
  for (DType t : kAllDTypes) {
    // Sums accumulate in an order of their own: random values only, with a relative
    // tolerance for the inexact types (see sweep_structural).
    const double relative = t == DType::kF16 || t == DType::kBF16 ? 2e-2 : t == DType::kF32 || t == DType::kC64 ? 1e-5 : 1e-12;
    for (const auto& [row, row_cases] : rows) {
      const auto& cases = row_cases;  // clang 14 cannot capture a structured binding
      std::vector<Literal> args;
      for (const Case& c : cases)
        for (const auto* dims : {&c.lhs, &c.rhs}) {
          Literal l(Shape(t, *dims));
          visit_dtype(t, [&]<class T>(std::type_identity<T>) {
            for (T& v : l.data<T>()) v = random_value<T>(s.rng);
          });
          args.push_back(std::move(l));
        }
      s.check(row, t, args, [&](GraphBuilder& b, std::vector<Value> p) {
        std::vector<Value> outs;
        for (std::size_t k = 0; k < cases.size(); ++k) outs.push_back(b.convolution(p[2 * k], p[2 * k + 1], cases[k].a));
        return outs;
      }, is_inexact(t) ? relative : 0);
    }
  }
}

/// fft of every type and length class: powers of two (radix-2), other lengths (Bluestein),
/// 1 to 3 transformed dimensions, lengths 0 and 1. Types fft does not take are rejected by
/// shape inference and show as "-". Both backends compute in wider precision and round once,
/// but sum in different orders: a tolerance relative to the largest value of the result.
static void sweep_fft() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_fft").second) return;
  struct Case {
    std::vector<std::int64_t> dims;
    FftType type;
    std::vector<std::int64_t> length;
  };
  const std::vector<std::pair<std::string, std::vector<Case>>> rows = {
      {"fft FFT/IFFT",
       {{{3, 8}, FftType::kFft, {8}}, {{2, 5, 6}, FftType::kFft, {5, 6}}, {{4, 3, 2, 7}, FftType::kIfft, {3, 2, 7}},
        {{2, 1}, FftType::kIfft, {1}}, {{0, 4}, FftType::kFft, {4}}, {{64, 37}, FftType::kFft, {37}}}},
      {"fft RFFT",
       {{{3, 8}, FftType::kRfft, {8}}, {{2, 5, 9}, FftType::kRfft, {5, 9}}, {{1, 4, 3, 6}, FftType::kRfft, {4, 3, 6}}}},
      {"fft IRFFT",
       {{{3, 5}, FftType::kIrfft, {8}}, {{2, 5, 5}, FftType::kIrfft, {5, 9}}, {{4, 3, 4}, FftType::kIrfft, {4, 3, 6}},
        {{6, 1}, FftType::kIrfft, {1}}}},
  };
  for (DType t : kAllDTypes) {
    for (const auto& [row, row_cases] : rows) {
      const auto& cases = row_cases;  // clang 14 cannot capture a structured binding
      std::vector<Literal> args;
      for (const Case& c : cases) {
        Literal l(Shape(t, c.dims));
        visit_dtype(t, [&]<class T>(std::type_identity<T>) {
          for (T& v : l.data<T>()) v = random_value<T>(s.rng);
        });
        args.push_back(std::move(l));
      }
      s.check(row, t, args, [&](GraphBuilder& b, std::vector<Value> p) {
        std::vector<Value> outs;
        for (std::size_t k = 0; k < cases.size(); ++k) outs.push_back(b.fft(p[k], cases[k].type, cases[k].length));
        return outs;
      }, t == DType::kF32 || t == DType::kC64 ? 1e-5 : 1e-12);
    }
  }
}

/// triangular_solve of every type: both sides, both triangles, unit diagonals, each
/// transpose_a, batched, with diagonals kept away from zero so each system is well conditioned.
/// The CPU solves in its own order (Eigen's blocked substitution): a relative tolerance.
static void sweep_triangular_solve() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_triangular_solve").second) return;
  const std::vector<std::pair<std::string, std::vector<TriangularSolveAttrs>>> rows = {
      {"triangular_solve left", {{true, true, false, Transpose::kNoTranspose}, {true, false, true, Transpose::kTranspose}, {true, true, false, Transpose::kAdjoint}}},
      {"triangular_solve right", {{false, false, false, Transpose::kNoTranspose}, {false, true, true, Transpose::kTranspose}, {false, false, false, Transpose::kAdjoint}}},
  };
  for (DType t : kAllDTypes) {
    const double relative = t == DType::kF16 || t == DType::kBF16 ? 2e-2 : t == DType::kF32 || t == DType::kC64 ? 1e-5 : 1e-12;
    for (const auto& [row, row_cases] : rows) {
      const auto& cases = row_cases;  // clang 14 cannot capture a structured binding
      std::vector<Literal> args;
      for (const TriangularSolveAttrs& c : cases) {
        Literal a(Shape(t, {2, 6, 6}));
        Literal b(Shape(t, c.left_side ? std::vector<std::int64_t>{2, 6, 5} : std::vector<std::int64_t>{2, 5, 6}));
        visit_dtype(t, [&]<class T>(std::type_identity<T>) {
          auto ad = a.data<T>();
          for (std::size_t i = 0; i < ad.size(); ++i) {
            ad[i] = random_value<T>(s.rng);
            if constexpr (is_inexact(dtype_of<T>))
              if (i % 36 / 6 == i % 6) ad[i] = convert_element<T>(20.0 + static_cast<double>(i % 5));
          }
          for (T& v : b.data<T>()) v = random_value<T>(s.rng);
        });
        args.push_back(std::move(a));
        args.push_back(std::move(b));
      }
      s.check(row, t, args, [&](GraphBuilder& b, std::vector<Value> p) {
        std::vector<Value> outs;
        for (std::size_t k = 0; k < cases.size(); ++k) outs.push_back(b.triangular_solve(p[2 * k], p[2 * k + 1], cases[k]));
        return outs;
      }, is_inexact(t) ? relative : 0);
    }
  }
}

/// rng_bit_generator making every output type from random states (a counter about to wrap
/// among them): odd and even counts, one big enough for several tiles of work, and the new
/// state. Rows by algorithm; PHILOX also from a three-word state whose low counter carries.
static void sweep_collectives() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_collectives").second) return;
  const CollectiveAttrs all{};  // one group of every replica
  const CollectiveAttrs pairs{{0, 1}, 2, 0, 0, false, 0, 0, 0};
  for (DType t : kAllDTypes) {
    std::vector<std::vector<Literal>> args;
    for (int k = 0; k < 2; ++k) args.push_back({make_input(t, k, s.rng)});
    auto even = [](GraphBuilder& b, Value v) { return b.slice(v, {0}, {96}); };
    s.check_grid("all_reduce add (2 replicas)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.all_reduce(p[0], OpCode::kAdd, all)};
    });
    s.check_grid("all_reduce maximum (2 replicas)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.all_reduce(p[0], OpCode::kMaximum, all)};
    });
    s.check_grid("all_gather (2 replicas)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      return b.all_gather({p[0]}, pairs);
    });
    s.check_grid("reduce_scatter add (2 replicas)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      StatusOr<Graph> body = make_binary_body(OpCode::kAdd, t);
      if (!body.ok()) return std::vector<Value>{b.reduce_scatter(even(b, p[0]), Graph(), pairs)};
      return std::vector<Value>{b.reduce_scatter(even(b, p[0]), std::move(body).value(), pairs)};
    });
    s.check_grid("all_to_all (2 replicas)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      return b.all_to_all({b.reshape(even(b, p[0]), {8, 12})}, CollectiveAttrs{{}, 0, 0, 0, false, 1, 0, 2});
    });
    s.check_grid("collective_permute (2 replicas)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.collective_permute(p[0], CollectiveAttrs{{1, 0}, 2, 0, 0, false, 0, 0, 0})};
    });
    s.check_grid("collective_broadcast (2 replicas)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      return b.collective_broadcast({p[0]}, CollectiveAttrs{{1, 0}, 2, 0, 0, false, 0, 0, 0});
    });
    s.check_grid("send, recv, after_all (2 replicas, swapped)", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      ChannelAttrs a;
      a.channel_id = 0;
      a.source_target_pairs = {0, 1, 1, 0};
      Value sent = b.send({p[0]}, b.after_all(), a);
      a.payload = {*b.shape(p[0])};
      return std::vector<Value>{b.recv(b.after_all({sent}), a)[0]};
    });
  }
  const std::vector<std::vector<Literal>> none(3);
  s.check_grid("replica_id, partition_id (3 replicas)", DType::kU32, none, [&](GraphBuilder& b, std::vector<Value>) {
    return std::vector<Value>{b.replica_id(), b.partition_id()};
  });
}

static void sweep_rng_bit_generator() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_rng_bit_generator").second) return;
  const std::pair<std::string, RngAlgorithm> rows[] = {{"rng_bit_generator THREE_FRY", RngAlgorithm::kThreeFry},
                                                       {"rng_bit_generator DEFAULT", RngAlgorithm::kDefault},
                                                       {"rng_bit_generator PHILOX", RngAlgorithm::kPhilox}};
  for (DType t : kAllDTypes) {
    for (const auto& row : rows) {
      const RngAlgorithm algorithm = row.second;
      std::vector<Literal> args = {
          Literal::vector<std::uint64_t>({s.rng(), s.rng()}),
          Literal::vector<std::uint64_t>({s.rng(), ~std::uint64_t{0} - 2})};
      if (algorithm != RngAlgorithm::kThreeFry)
        args.push_back(Literal::vector<std::uint64_t>({s.rng(), ~std::uint64_t{0} - 1, s.rng()}));
      s.check(row.first, t, args, [&](GraphBuilder& b, std::vector<Value> p) {
        std::vector<Value> outs;
        for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{7}, {3, 4}, {}, {0, 5}, {40001}}) {
          for (Value v : b.rng_bit_generator(p[0], Shape(t, dims), algorithm)) outs.push_back(v);
        }
        for (Value v : b.rng_bit_generator(p[1], Shape(t, {5}), algorithm)) outs.push_back(v);
        if (p.size() > 2)
          for (Value v : b.rng_bit_generator(p[2], Shape(t, {3, 4}), algorithm)) outs.push_back(v);
        return outs;
      });
    }
  }
}

/// while, case and if carrying an array of each type through their regions: a loop that
/// reverses and selects for a data-dependent number of turns, and branches that move data
/// differently, with in-range and out-of-range indices.
static void sweep_control_flow() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_control_flow").second) return;
  const Shape s32(DType::kS32, {});
  auto region = [](std::string name, std::vector<Shape> params, auto make) {
    GraphBuilder b(std::move(name));
    std::vector<Value> p;
    for (const Shape& shape : params) p.push_back(b.parameter(shape));
    return b.build(make(b, p)).value();
  };
  for (DType t : kAllDTypes) {
    Literal cube = make_input(t, 3, s.rng);
    Literal x(Shape(t, {3, 4, 5}));
    std::memcpy(x.untyped_data(), cube.untyped_data(), x.size_bytes());
    const Shape xs = x.shape();
    // while(i, x): i < n turns of x <- select(i is odd, reverse(x, {0}), reverse(x, {2})).
    const Graph cond = region("cond", {s32, xs, s32}, [](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.compare(p[0], p[2], ComparisonDirection::kLt)};
    });
    const Graph body = region("body", {s32, xs, s32}, [&](GraphBuilder& b, std::vector<Value> p) {
      Value odd = b.compare(b.and_(p[0], b.constant(1)), b.constant(1), ComparisonDirection::kEq);
      Value next = b.select(odd, b.reverse(p[1], {0}), b.reverse(p[1], {2}));
      return std::vector<Value>{b.add(p[0], b.constant(1)), next, p[2]};
    });
    for (std::int32_t n : {0, 3}) {
      s.check("while", t, {x, Literal::scalar(n)}, [&](GraphBuilder& b, std::vector<Value> p) {
        std::vector<Value> r = b.while_loop({b.constant(0), p[0], p[1]}, cond, body);
        return std::vector<Value>{r[0], r[1]};
      });
    }
    // case(index, x): x, reverse(x), transpose-free rotation by slices and concatenate.
    std::vector<Graph> branches;
    branches.push_back(region("b0", {xs}, [](GraphBuilder&, std::vector<Value> p) { return p; }));
    branches.push_back(region("b1", {xs}, [](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{b.reverse(p[0], {1})};
    }));
    branches.push_back(region("b2", {xs}, [](GraphBuilder& b, std::vector<Value> p) {
      return std::vector<Value>{
          b.concatenate({b.slice(p[0], {1, 0, 0}, {3, 4, 5}), b.slice(p[0], {0, 0, 0}, {1, 4, 5})}, 0)};
    }));
    for (std::int32_t index : {0, 1, 2, 7, -1}) {
      s.check("case", t, {x, Literal::scalar(index)}, [&](GraphBuilder& b, std::vector<Value> p) {
        return b.case_op(p[1], {p[0]}, branches);
      });
    }
    for (bool pred : {true, false}) {
      s.check("if", t, {x, Literal::scalar(pred)}, [&](GraphBuilder& b, std::vector<Value> p) {
        return b.if_op(p[1], {p[0]}, branches[1], branches[2]);
      });
    }
  }
}

/// A sort comparator on complex keys (and an s32 payload): lexicographic on the real, then
/// the imaginary part, each compared with `d` in totalOrder, as jnp.sort orders complex.
StatusOr<Graph> complex_comparator(ComparisonDirection d, DType t) {
  GraphBuilder b("by_real_then_imag");
  Value x = b.parameter(Shape(t, {}));
  Value y = b.parameter(Shape(t, {}));
  b.parameter(Shape(DType::kS32, {}));
  b.parameter(Shape(DType::kS32, {}));
  const ComparisonType total = ComparisonType::kTotalOrder;
  Value first = b.compare(b.real(x), b.real(y), d, total);
  Value tie = b.compare(b.real(x), b.real(y), ComparisonDirection::kEq, total);
  return b.build({b.or_(first, b.and_(tie, b.compare(b.imag(x), b.imag(y), d, total)))});
}

static void sweep_precision_and_sort() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_precision_and_sort").second) return;
  for (DType t : kAllDTypes) {
    std::vector<Literal> args = {make_input(t, 0, s.rng), make_input(t, 4, s.rng)};
    // Formats narrower, equal and wider than every float type, and the extremes; alone, and
    // fused after an add (f16/bf16 add widens to f32, reduce_precision does not).
    s.check("reduce_precision", t, args, [&](GraphBuilder& b, std::vector<Value> p) {
      std::vector<Value> outs;
      for (auto [e, m] : {std::pair{5, 10}, {8, 7}, {8, 23}, {11, 52}, {2, 1}, {1, 0}, {4, 3}})
        outs.push_back(b.reduce_precision(p[0], e, m));
      outs.push_back(b.reduce_precision(b.add(p[0], p[1]), 5, 2));
      return outs;
    });
    // Sorts along each dimension of a 3x4x5 array whose 60 values repeat a few edge values
    // (ties), both directions, with a payload sorted along (stability) and one comparator
    // that is no strict weak order (LE): both backends must give the same permutation.
    Literal cube(Shape(t, {3, 4, 5}));
    std::memcpy(cube.untyped_data(), args[0].untyped_data(), cube.size_bytes());
    Literal payload(Shape(DType::kS32, {3, 4, 5}));
    for (std::size_t k = 0; k < 60; ++k) payload.data<std::int32_t>()[k] = static_cast<std::int32_t>(k);
    s.check("sort", t, {cube, payload}, [&](GraphBuilder& b, std::vector<Value> p) {
      std::vector<Value> outs;
      for (std::int64_t dim : {0, 1, 2})
        for (ComparisonDirection d : {ComparisonDirection::kLt, ComparisonDirection::kGt, ComparisonDirection::kLe}) {
          StatusOr<Graph> by_key = is_complex(t) ? complex_comparator(d, t) : make_sort_comparator(d, t, {DType::kS32});
          REQUIRE_MESSAGE(by_key.ok(), by_key.status().to_string());
          for (Value v : b.sort({p[0], p[1]}, *std::move(by_key), dim, d != ComparisonDirection::kLe)) outs.push_back(v);
        }
      return outs;
    });
    s.check("top_k", t, {cube, args[1]}, [&](GraphBuilder& b, std::vector<Value> p) {
      std::vector<Value> outs;
      for (std::int64_t k : {0, 2, 5})
        for (Value v : b.top_k(p[0], k)) outs.push_back(v);
      for (Value v : b.top_k(p[1], kN)) outs.push_back(v);
      return outs;
    });
  }
}

/// Every bit pattern of the narrow type `t` once (s2 and s4 sign-extended through the byte),
/// in an order of its own per `salt`: pattern (i * (2 salt + 1) + 3 salt) mod 2^bits, a
/// permutation since the multiplier is odd.
Literal narrow_patterns(DType t, int salt) {
  const int bits = bit_width(t);
  const std::int64_t n = std::int64_t{1} << bits;
  Literal l(Shape(t, {n}));
  auto out = l.narrow_bits();
  for (std::int64_t i = 0; i < n; ++i) {
    auto p = static_cast<std::uint32_t>((i * (2 * salt + 1) + 3 * salt) % n);
    if (is_narrow_integral(t) && is_signed_integral(t) && ((p >> (bits - 1)) & 1u) != 0) p |= ~0u << bits;
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(p);
  }
  return l;
}

static void sweep_narrow() {
  Sweep& s = sweep();
  if (!s.done.insert("sweep_narrow").second) return;
  for (DType t : kNarrowDTypes) {
    const Literal x = narrow_patterns(t, 0), y = narrow_patterns(t, 1), z = narrow_patterns(t, 2);
    const std::int64_t n = x.shape().dim(0), rows = n / 4;
    using V = std::vector<Value>;
    for (std::size_t code = 0; code < kOpCodeCount; ++code) {
      const auto op = static_cast<OpCode>(code);
      if (!is_unary(op) && !is_binary(op)) continue;
      s.check(std::string(op_name(op)), t, is_binary(op) ? std::vector<Literal>{x, y} : std::vector<Literal>{x},
              [&](GraphBuilder& b, V p) { return V{is_binary(op) ? b.binary(op, p[0], p[1]) : b.unary(op, p[0])}; });
    }
    for (int d = 0; d < 6; ++d) {
      const auto dir = static_cast<ComparisonDirection>(d);
      s.check(str_cat("compare ", comparison_direction_name(dir)), t, {x, y},
              [&](GraphBuilder& b, V p) { return V{b.compare(p[0], p[1], dir)}; });
    }
    Literal pred(Shape(DType::kPred, {n}));
    for (std::int64_t i = 0; i < n; ++i) pred.data<bool>()[static_cast<std::size_t>(i)] = (i * 7) % 3 == 0;
    s.check("select", t, {pred, x, y}, [](GraphBuilder& b, V p) { return V{b.select(p[0], p[1], p[2])}; });
    s.check("clamp", t, {x, y, z}, [](GraphBuilder& b, V p) { return V{b.clamp(p[0], p[1], p[2])}; });
    for (DType to : {DType::kF32, DType::kS32, DType::kF16, DType::kPred})
      s.check(str_cat("convert to ", dtype_name(to)), t, {x}, [&](GraphBuilder& b, V p) { return V{b.convert(p[0], to)}; });
    for (DType from : {DType::kF32, DType::kS32}) {
      // The narrow type's own values, then halfway points and values beyond its range.
      Literal wide = x.convert(from).value();
      Literal more(Shape(from, {n}));
      if (from == DType::kF32) {
        for (std::int64_t i = 0; i < n; ++i) more.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(i - n / 2) * 0.3125f + 0.0625f;
      } else {
        for (std::int64_t i = 0; i < n; ++i) more.data<std::int32_t>()[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i * 37 - 300);
      }
      s.check(str_cat("convert from ", dtype_name(from)), t, {wide, more}, [&](GraphBuilder& b, V p) {
        return V{b.convert(p[0], t), b.convert(p[1], t)};
      });
    }
    // The patterns as [n / 4, 4] matrices, and the first one as a scalar.
    auto reshaped = [&](const Literal& from, std::vector<std::int64_t> dims) {
      Literal to(Shape(t, std::move(dims)));
      std::copy_n(from.narrow_bits().begin(), to.narrow_bits().size(), to.narrow_bits().begin());
      return to;
    };
    const Literal m = reshaped(x, {rows, 4}), m2 = reshaped(y, {rows, 4}), init = reshaped(z, {});
    s.check("transpose", t, {m}, [](GraphBuilder& b, V p) { return V{b.transpose(p[0], {1, 0})}; });
    s.check("reverse", t, {m}, [](GraphBuilder& b, V p) { return V{b.reverse(p[0], {0, 1})}; });
    s.check("slice", t, {m}, [](GraphBuilder& b, V p) { return V{b.slice(p[0], {0, 1}, {1, 4}, {1, 2})}; });
    s.check("concatenate", t, {m, m2}, [](GraphBuilder& b, V p) { return V{b.concatenate({p[0], p[1]}, 1)}; });
    s.check("pad", t, {m, init}, [](GraphBuilder& b, V p) { return V{b.pad(p[0], p[1], {1, 0}, {0, 2}, {0, 1})}; });
    for (OpCode op : {OpCode::kAdd, OpCode::kMultiply, OpCode::kMaximum, OpCode::kMinimum, OpCode::kAnd, OpCode::kOr})
      s.check(str_cat("reduce ", op_name(op)), t, {m, init}, [op](GraphBuilder& b, V p) {
        return V{b.reduce(p[0], p[1], op, {1}), b.reduce(p[0], p[1], op, {0})};
      });
    s.check("dot_general", t, {m, m2}, [](GraphBuilder& b, V p) {
      return V{b.dot_general(p[0], p[1], DotDimensionNumbers{{}, {}, {1}, {1}})};
    });
    for (ComparisonDirection d : {ComparisonDirection::kLt, ComparisonDirection::kGt})
      s.check("sort", t, {x}, [d](GraphBuilder& b, V p) { return V{b.sort(p[0], 0, d, true)}; });
  }
}

/// Runs one part of the sweep and reports the disagreements it found.
template <class F>
void check_part(F part) {
  const std::size_t before = sweep().failures.size();
  part();
  for (std::size_t i = before; i < sweep().failures.size(); ++i) FAIL_CHECK(sweep().failures[i]);
}

TEST_CASE("differential: element-wise ops on every dtype") { check_part(sweep_elementwise); }
TEST_CASE("differential: compare, select, clamp, convert, bitcast_convert") { check_part(sweep_other_elementwise); }
TEST_CASE("differential: data movement, reduce and dot_general on every dtype") { check_part(sweep_structural); }
TEST_CASE("differential: scatter and gather on every dtype") { check_part(sweep_scatter); }
TEST_CASE("differential: reduce_window and select_and_scatter on every dtype") { check_part(sweep_window); }
TEST_CASE("differential: convolution on every dtype") { check_part(sweep_convolution); }
TEST_CASE("differential: while, case and if on every dtype") { check_part(sweep_control_flow); }
TEST_CASE("differential: reduce_precision, sort and top_k on every dtype") { check_part(sweep_precision_and_sort); }
TEST_CASE("differential: the narrow types, every bit pattern through every op") { check_part(sweep_narrow); }

TEST_CASE("differential: empty arrays through every CPU kernel, as the reference") {
  // An empty array has null memory on the CPU, and a kernel may neither offset nor memcpy
  // it; results that are not empty (padding, zero-length sums, inits) must still be right.
  // A sweep of its own: these rows are not in docs/ops.md. Every case must build, compile and
  // agree; one that is not accepted would test nothing.
  Sweep s;
  int cases = 0;
  auto expect = [&](const std::string& row, DType t, std::vector<Literal> args, auto make) {
    s.check(row, t, args, make);
    ++cases;
    const auto it = s.table[row].find(t);
    CHECK_MESSAGE((it != s.table[row].end() && it->second == Outcome::kPass), row, " ",
                  dtype_name(t));
  };
  auto empty = [](DType t, std::vector<std::int64_t> dims) { return Literal(Shape(t, dims)); };
  auto filled = [&](DType t, std::vector<std::int64_t> dims) {
    Literal l(Shape(t, dims));
    visit_dtype(t, [&]<class T>(std::type_identity<T>) {
      for (T& v : l.data<T>()) v = random_value<T>(s.rng);
    });
    return l;
  };
  auto conv = [](std::string_view dn, ConvolutionAttrs a) {
    Status st = parse_convolution_dimension_numbers(dn, a);
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    return a;
  };
  using V = std::vector<Value>;
  for (DType t : {DType::kF32, DType::kF16, DType::kS16, DType::kU8, DType::kC64, DType::kPred}) {
    const bool ordered = !is_complex(t);
    const Literal init = filled(t, {});
    // Data movement: empty operands, empty results, and empty pieces beside full ones.
    expect("empty transpose", t, {empty(t, {3, 0, 2})}, [](GraphBuilder& b, V p) {
      return V{b.transpose(p[0], {2, 0, 1})};
    });
    expect("empty reshape", t, {empty(t, {3, 0, 2})}, [](GraphBuilder& b, V p) {
      return V{b.reshape(p[0], {0, 6})};
    });
    expect("empty slice", t, {empty(t, {3, 0, 2})}, [](GraphBuilder& b, V p) {
      return V{b.slice(p[0], {1, 0, 1}, {3, 0, 2}, {1, 1, 1})};
    });
    expect("empty slice of full", t, {filled(t, {3, 4})}, [](GraphBuilder& b, V p) {
      return V{b.slice(p[0], {1, 2}, {3, 2}, {1, 1})};
    });
    expect("empty reverse", t, {empty(t, {0, 4})}, [](GraphBuilder& b, V p) {
      return V{b.reverse(p[0], {0, 1})};
    });
    expect("empty broadcast_in_dim", t, {empty(t, {0, 1})}, [](GraphBuilder& b, V p) {
      return V{b.broadcast_in_dim(p[0], {2, 0, 3}, {1, 2})};
    });
    expect("empty concatenate", t, {empty(t, {2, 0}), filled(t, {2, 3})}, [](GraphBuilder& b, V p) {
      return V{b.concatenate({p[0], p[1], p[0]}, 1), b.concatenate({p[0], p[0]}, 0)};
    });
    expect("empty pad", t, {empty(t, {0, 3}), init}, [](GraphBuilder& b, V p) {
      return V{b.pad(p[0], p[1], {1, 0}, {2, -1}, {1, 0}),
               b.pad(p[0], p[1], {0, 0}, {0, 0}, {0, 0})};
    });
    if (t != DType::kPred)
      expect("empty iota", t, {}, [t](GraphBuilder& b, V) {
        return V{b.iota(Shape(t, {0, 3}), 1), b.iota(Shape(t, {3, 0}), 0)};
      });
    expect("empty dynamic_slice", t, {empty(t, {0, 4}), filled(t, {3, 4})},
           [](GraphBuilder& b, V p) {
             const Value one = b.constant(std::int32_t{1});
             return V{b.dynamic_slice(p[0], {one, one}, {0, 2}),
                      b.dynamic_slice(p[1], {one, one}, {2, 0})};
           });
    expect("empty dynamic_update_slice", t, {empty(t, {0, 4}), filled(t, {3, 4}), empty(t, {2, 0})},
           [](GraphBuilder& b, V p) {
             const Value one = b.constant(std::int64_t{1});
             return V{b.dynamic_update_slice(p[0], b.slice(p[0], {0, 0}, {0, 2}), {one, one}),
                      b.dynamic_update_slice(p[1], p[2], {one, one})};
           });
    expect("empty convert", t, {empty(t, {0, 5})}, [t](GraphBuilder& b, V p) {
      const Value wide = b.convert(p[0], is_complex(t) ? DType::kC128 : DType::kF32);
      return t == DType::kPred ? V{wide, b.convert(p[0], t)}
                               : V{wide, b.convert(p[0], t), b.bitcast_convert(p[0], t)};
    });
    expect("empty fused element-wise", t, {empty(t, {0, 3}), empty(t, {0})},
           [](GraphBuilder& b, V p) {
             return V{b.select(b.compare(p[0], p[0], ComparisonDirection::kEq), p[0],
                               b.broadcast_in_dim(p[1], {0, 3}, {0}))};
           });
    // reduce: an empty reduced dimension gives the init; an empty kept one, no result; an empty
    // dimension after the reduced ones (nothing to divide the input by).
    if (t != DType::kC64 && t != DType::kPred) {
      constexpr OpCode op = OpCode::kAdd;
      expect("empty reduce", t, {empty(t, {3, 0}), init}, [](GraphBuilder& b, V p) {
        return V{b.reduce(p[0], p[1], op, {0}), b.reduce(p[0], p[1], op, {1}),
                 b.reduce(p[0], p[1], op, {0, 1})};
      });
      expect("empty reduce, not adjacent", t, {empty(t, {2, 0, 3}), filled(t, {2, 3, 0}), init},
             [](GraphBuilder& b, V p) {
               return V{b.reduce(p[0], p[2], op, {0, 2}), b.reduce(p[1], p[2], op, {0, 2}),
                        b.reduce(p[1], p[2], op, {0})};
             });
    }
    if (ordered && t != DType::kPred) {
      expect("empty reduce argmax", t, {empty(t, {4, 0}), empty(t, {0, 4})},
             [](GraphBuilder& b, V p) {
               const auto r0 = b.argmax(p[0], 0), r1 = b.argmax(p[0], 1), r2 = b.argmax(p[1], 0);
               return V{r0[0], r0[1], r1[0], r1[1], r2[0], r2[1]};
             });
    }
    if (t == DType::kPred) continue;
    // dot_general: each of batch, M, K and N empty (K empty sums nothing: zeros).
    expect("empty dot_general", t,
           {empty(t, {0, 3}), filled(t, {3, 4}), empty(t, {2, 0}), empty(t, {0, 4})},
           [](GraphBuilder& b, V p) {
             return V{b.dot_general(p[0], p[1], DotDimensionNumbers{{}, {}, {1}, {0}}),
                      b.dot_general(p[2], p[3], DotDimensionNumbers{{}, {}, {1}, {0}}),
                      b.dot_general(p[1], p[3], DotDimensionNumbers{{}, {}, {1}, {1}}),
                      b.dot_general(p[0], p[0], DotDimensionNumbers{{0}, {0}, {1}, {1}})};
           });
    // convolution: an empty spatial dimension that padding makes a non-empty result (laid out
    // before the batch, so the batch has a stride), no input features, no batch, no outputs.
    expect("empty convolution", t,
           {empty(t, {0, 2, 3}), filled(t, {3, 1, 4}), empty(t, {2, 0, 5}), empty(t, {0, 2, 5}),
            filled(t, {2, 2, 5}), empty(t, {0, 2, 2}), empty(t, {3, 0, 2})},
           [&](GraphBuilder& b, V p) {
             return V{b.convolution(p[0], p[1],
                                    conv("[0, b, f]x[i, 0, o]->[f, 0, b]",
                                         {.padding_low = {1}, .padding_high = {1}})),
                      b.convolution(p[2], p[6], conv("[b, f, 0]x[o, i, 0]->[b, f, 0]", {})),
                      b.convolution(p[3], b.slice(p[4], {0, 0, 0}, {2, 2, 2}),
                                    conv("[b, f, 0]x[o, i, 0]->[b, f, 0]", {})),
                      b.convolution(p[4], p[5], conv("[b, f, 0]x[o, i, 0]->[b, f, 0]", {}))};
           });
    // gather and scatter: an empty operand (with empty slices), empty indices, empty updates.
    const Literal rows =
        Literal::from_span<std::int32_t>(std::vector<std::int32_t>{0, 2}, {2, 1}).value();
    const Literal no_rows =
        Literal::from_span<std::int32_t>(std::vector<std::int32_t>{}, {0, 1}).value();
    expect("empty gather", t, {empty(t, {3, 0}), rows, filled(t, {3, 4}), no_rows},
           [](GraphBuilder& b, V p) {
             return V{b.gather(p[0], p[1], GatherAttrs{{1}, {0}, {}, {}, {0}, 1, {1, 0}, false}),
                      b.gather(p[2], p[3], GatherAttrs{{1}, {0}, {}, {}, {0}, 1, {1, 4}, false})};
           });
    expect("empty scatter", t,
           {empty(t, {3, 0}), rows, empty(t, {2, 0}), filled(t, {3, 4}), no_rows, empty(t, {0, 4})},
           [](GraphBuilder& b, V p) {
             const ScatterAttrs dn{{1}, {0}, {}, {}, {0}, 1, false, false};
             return V{b.scatter(p[0], p[1], p[2], OpCode::kAdd, dn),
                      b.scatter(p[3], p[4], p[5], OpCode::kAdd, dn)};
           });
    // reduce_window and select_and_scatter: an empty input whose padding makes windows of
    // inits only, and an empty source.
    if (ordered) {
      expect("empty reduce_window", t, {empty(t, {0, 4}), init}, [](GraphBuilder& b, V p) {
        return V{b.reduce_window(p[0], p[1], OpCode::kMaximum,
                                 WindowAttrs{{1, 2}, {}, {}, {}, {1, 0}, {1, 0}}),
                 b.reduce_window(p[0], p[1], OpCode::kMaximum, WindowAttrs{{1, 2}})};
      });
      expect("empty select_and_scatter", t,
             {empty(t, {0, 4}), empty(t, {0, 2}), filled(t, {2, 4}), empty(t, {0, 2}), init},
             [](GraphBuilder& b, V p) {
               const WindowAttrs pool{{1, 2}, {1, 2}};
               return V{b.select_and_scatter(p[0], p[1], p[4], ComparisonDirection::kGe,
                                             OpCode::kAdd, pool),
                        b.select_and_scatter(p[2], p[3], p[4], ComparisonDirection::kGe,
                                             OpCode::kAdd, WindowAttrs{{3, 2}, {1, 2}})};
             });
    }
  }
  for (const std::string& f : s.failures) FAIL_CHECK(f);
  MESSAGE(cases, " empty-array cases");
}
TEST_CASE("differential: fft on every dtype") { check_part(sweep_fft); }
TEST_CASE("differential: triangular_solve on every dtype") { check_part(sweep_triangular_solve); }
TEST_CASE("differential: rng_bit_generator on every dtype") { check_part(sweep_rng_bit_generator); }
TEST_CASE("differential: collectives on a grid of replicas on every dtype") { check_part(sweep_collectives); }

/// Runs `g` on the CPU (fused or not) and on the reference; both results, as literals.
std::pair<Literal, Literal> cpu_and_reference(const Graph& g, const std::vector<Literal>& args, bool fuse) {
  auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
  auto exe = client->compile(g, {.fuse = fuse}).value();
  std::vector<cpu::Buffer<cpu::InlineExecutor>> buffers;
  std::vector<cpu::Buffer<cpu::InlineExecutor>*> pointers;
  for (const Literal& a : args) buffers.push_back(client->buffer_from_literal(a).value());
  for (auto& buffer : buffers) pointers.push_back(&buffer);
  Literal cpu_out = exe.execute_sharded(pointers, client->devices()[0]).value()[0].to_literal().await().value();
  return {std::move(cpu_out), reference::evaluate(g, args).value()[0]};
}

TEST_CASE("differential: convert from complex to pred keeps the real part, on both backends") {
  // The oracle is the spec's rule per element: true when the real part is non-zero (NaN is).
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<c64> values = {c64(0, 1), c64(1, 0), c64(0, 0), c64(-0.0f, -inf), c64(nan, 0), c64(0, nan), c64(-3, 2)};
  const auto n = static_cast<std::int64_t>(values.size());
  std::vector<bool> want;
  for (c64 v : values) want.push_back(v.real() != 0.0f || std::isnan(v.real()));
  for (DType t : {DType::kC64, DType::kC128}) {
    Literal x = Literal::from_span<c64>(values, {n}).value().convert(t).value();
    GraphBuilder b("complex_to_pred");
    Value p = b.parameter(x.shape());
    // Alone, and fused with a negation before it (the real part of -(0, 1) is still zero).
    const Graph g = b.build({b.convert(b.negate(p), DType::kPred)}).value();
    for (bool fuse : {true, false}) {
      INFO(dtype_name(t), fuse ? " fused" : " unfused");
      auto [cpu_out, ref_out] = cpu_and_reference(g, {x}, fuse);
      CHECK(cpu_out == ref_out);
      std::span<const bool> got = cpu_out.data<bool>();
      CHECK(std::vector<bool>(got.begin(), got.end()) == want);
    }
  }
}

TEST_CASE("differential: reduce_precision to no mantissa bits makes NaN +infinity, on both backends") {
  // XLA's rule: with mantissa bits NaN stays itself; without, it becomes +infinity.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (DType t : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    Literal x = Literal::vector<float>({nan, -nan, 3.0f, 0.75f, -inf}).convert(t).value();
    for (std::int64_t mantissa : {0, 1}) {
      GraphBuilder b("reduce_precision_nan");
      Value p = b.parameter(x.shape());
      const Graph g = b.build({b.reduce_precision(p, 5, mantissa), b.reduce_precision(b.negate(p), 5, mantissa)}).value();
      for (bool fuse : {true, false}) {
        INFO(dtype_name(t), " mantissa ", mantissa, fuse ? " fused" : " unfused");
        auto [cpu_out, ref_out] = cpu_and_reference(g, {x}, fuse);
        CHECK(cpu_out == ref_out);
        const Literal as_f32 = cpu_out.convert(DType::kF32).value();
        std::span<const float> got = as_f32.data<float>();
        if (mantissa == 0) {
          CHECK(got[0] == inf);
          CHECK(got[1] == inf);
          CHECK(got[2] == 2.0f);  // 3 is a tie between 2 and 4: the even exponent
          CHECK(got[3] == 0.5f);  // 0.75 is a tie between 0.5 and 1: the even exponent
        } else {
          CHECK(std::isnan(got[0]));
          CHECK(std::isnan(got[1]));
          CHECK(got[2] == 3.0f);
          CHECK(got[3] == 0.75f);
        }
        CHECK(got[4] == -inf);
      }
    }
  }
}

TEST_CASE("differential: docs/ops.md is the table of the whole sweep") {
  // Skipped under a sanitizer: it would run the whole sweep a second time, each part as the
  // cases above run it, and the table is checked where the suite runs without a sanitizer.
  if (testing::kUnderSanitizer) {
    std::printf("%s under a sanitizer the sweep runs in the cases of its parts\n", testing::kSkipMarker);
    std::fflush(stdout);
    return;
  }
  // ctest runs each case in its own process: run whatever part has not run here yet.
  sweep_elementwise();
  sweep_other_elementwise();
  sweep_structural();
  sweep_scatter();
  sweep_window();
  sweep_convolution();
  sweep_control_flow();
  sweep_precision_and_sort();
  sweep_fft();
  sweep_triangular_solve();
  sweep_rng_bit_generator();
  sweep_collectives();
  sweep_narrow();
  Sweep& s = sweep();
  CHECK(s.failures.empty());
  const std::string table = s.markdown();
  const std::string path = std::string(PJRT_LITE_SOURCE_DIR) + "/docs/ops.md";
  if (std::getenv("PJRT_LITE_WRITE_DOCS")) {
    std::ofstream(path) << table;
    MESSAGE("wrote " << path);
  }
  std::ifstream in(path);
  std::stringstream current;
  current << in.rdbuf();
  CHECK_MESSAGE(current.str() == table, "docs/ops.md is out of date: run the tests with PJRT_LITE_WRITE_DOCS=1");
}

}  // namespace differential_test
