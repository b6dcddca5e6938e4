#pragma once
// Helpers the test files share: short names for the dtypes, checks of a Status, a value out
// of a StatusOr that must be OK, building graphs and running them on the reference
// interpreter (the oracle), reading and making literals. Everything is
// inline in pjrt_lite::testing, so the test files that a unity batch compiles together share
// one definition. A file brings the helpers in with `using namespace pjrt_lite::testing;`
// inside its own namespace; a helper of the same name that the file defines for itself
// then hides the shared one instead of clashing with it.

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/graph.hpp"

namespace pjrt_lite::testing {

inline constexpr DType kPred = DType::kPred;
inline constexpr DType kS8 = DType::kS8;
inline constexpr DType kS16 = DType::kS16;
inline constexpr DType kS32 = DType::kS32;
inline constexpr DType kS64 = DType::kS64;
inline constexpr DType kU8 = DType::kU8;
inline constexpr DType kU16 = DType::kU16;
inline constexpr DType kU32 = DType::kU32;
inline constexpr DType kU64 = DType::kU64;
inline constexpr DType kF16 = DType::kF16;
inline constexpr DType kBF16 = DType::kBF16;
inline constexpr DType kF32 = DType::kF32;
inline constexpr DType kF64 = DType::kF64;
inline constexpr DType kC64 = DType::kC64;
inline constexpr DType kC128 = DType::kC128;

inline bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

/// The status must have `code` and a message that contains `fragment`.
inline void check_error(const Status& s, StatusCode code, std::string_view fragment) {
  CHECK_MESSAGE(s.code() == code, s.to_string());
  CHECK_MESSAGE(contains(s.message(), fragment), "message: '", s.message(), "' lacks '", fragment,
                "'");
}
template <class T>
void check_error(const StatusOr<T>& s, StatusCode code, std::string_view fragment) {
  check_error(s.status(), code, fragment);
}

/// The value of `s`, which must be OK (the test stops here, with the status, if it is not).
template <class T>
T require_ok(StatusOr<T> s) {
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return *std::move(s);
}

/// The graph of `b` returning `outputs`; building must succeed.
inline Graph build_ok(const GraphBuilder& b, const std::vector<Value>& outputs) {
  return require_ok(b.build(outputs));
}

/// The outputs of `g` on `args` by the reference interpreter; evaluating must succeed.
inline std::vector<Literal> evaluate_ok(const Graph& g, const std::vector<Literal>& args) {
  return require_ok(reference::evaluate(g, args));
}

/// The elements of `lit` (in its layout's order) as a vector, for comparing with `==`.
template <class T>
std::vector<T> values_of(const Literal& lit) {
  std::span<const T> d = lit.data<T>();
  return std::vector<T>(d.begin(), d.end());
}

/// The literal of `dims` holding `values` in row-major order; they must fill it.
template <class T>
Literal literal_of(std::vector<T> values, std::vector<std::int64_t> dims) {
  return require_ok(Literal::from_span<T>(values, dims));
}

/// A literal of shape `s` (element type T, f32 or f64) drawn uniformly from [lo, hi).
template <class T>
Literal random_literal(std::mt19937_64& rng, const Shape& s, double lo, double hi) {
  static_assert(std::is_floating_point_v<T>);
  Literal l(s);
  std::uniform_real_distribution<T> u(static_cast<T>(lo), static_cast<T>(hi));
  for (T& x : l.data<T>()) x = u(rng);
  return l;
}

/// The outputs of `g` compiled with `options` on `client` and run on `args` on its first
/// device; compiling and running must succeed.
template <class C>
std::vector<Literal> run_on(C& client, const Graph& g, const std::vector<Literal>& args, cpu::CompileOptions options = {}) {
  auto exe = client.compile(g, options);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  std::vector<typename C::buffer_type> buffers;
  std::vector<typename C::buffer_type*> pointers;
  for (const Literal& a : args) buffers.push_back(client.buffer_from_literal(a).value());
  for (auto& b : buffers) pointers.push_back(&b);
  auto out = exe->execute_sharded(pointers, client.devices()[0]);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  std::vector<Literal> literals;
  for (auto& o : *out) literals.push_back(o.to_literal().await().value());
  return literals;
}

/// Compiles `g` on a fresh two-thread CPU client and runs it on `args`.
inline std::vector<Literal> run_on_cpu(const Graph& g, const std::vector<Literal>& args) {
  auto client = cpu::Client<>::create({.device_count = 1, .thread_count = 2}).value();
  return run_on(*client, g, args);
}

/// Options for an execute that returns only when its outputs are ready.
inline ExecuteOptions sync_options() {
  ExecuteOptions o;
  o.mode = ExecutionMode::kSynchronous;
  return o;
}

}  // namespace pjrt_lite::testing
