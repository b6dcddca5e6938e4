// Whole programs in the form JAX exports them, beyond one op per file: sharding and placement
// annotations, shape assertions, composites, optimization barriers, tuples, map,
// count_leading_zeros, Shardy's manual computations on one device, and shape-polymorphic
// modules refined from their arguments' shapes. Each runs on the CPU client and on the
// reference interpreter, and both are checked against values computed here by hand.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/fingerprint.hpp"
#include "pjrt_lite/stablehlo/stablehlo.hpp"

namespace stablehlo_exports_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

using Client = cpu::Client<cpu::InlineExecutor>;

template <class T>
Literal lit(std::vector<T> values, std::vector<std::int64_t> dims) {
  return require_ok(Literal::from_span<T>(values, dims));
}

/// Runs `g` on the CPU client and on the reference interpreter; the two must agree
/// exactly. Returns the CPU's outputs.
std::vector<Literal> run_graph(const Graph& g, const std::vector<Literal>& args) {
  auto client = require_ok(Client::create({}));
  auto exe = require_ok(client->compile(g));
  std::vector<cpu::Buffer<cpu::InlineExecutor>> buffers;
  std::vector<cpu::Buffer<cpu::InlineExecutor>*> pointers;
  for (const Literal& a : args) buffers.push_back(require_ok(client->buffer_from_literal(a)));
  for (auto& b : buffers) pointers.push_back(&b);
  auto outs = require_ok(exe.execute_sharded(pointers, client->devices()[0]));
  std::vector<Literal> cpu_out;
  for (auto& b : outs) cpu_out.push_back(require_ok(b.to_literal().await()));
  std::vector<Literal> ref = evaluate_ok(g, args);
  REQUIRE(cpu_out.size() == ref.size());
  for (std::size_t k = 0; k < ref.size(); ++k)
    CHECK_MESSAGE(cpu_out[k] == ref[k], "output ", k, ": cpu ", cpu_out[k].to_string(),
                  " reference ", ref[k].to_string());
  return cpu_out;
}

/// Parses `text` for arguments of `args`' shapes (refining any '?') and runs its @main.
std::vector<Literal> run_text(std::string_view text, const std::vector<Literal>& args) {
  std::vector<Shape> shapes;
  for (const Literal& a : args) shapes.push_back(a.shape());
  return run_graph(require_ok(parse_stablehlo(text, shapes)), args);
}

// ---- Annotations and identities ---------------------------------------------------------

// A jitted `x * x` under a one-device mesh, with every annotation JAX and Shardy leave.
constexpr std::string_view kAnnotated = R"mlir(
#loc1 = loc("x")
module @jit_f attributes {jax.uses_shape_polymorphism = false, mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22x\22=1]>}"}, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]>
  func.func public @main(%arg0: tensor<4xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{replicated}", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>} loc("x")) -> (tensor<4xf32> {jax.result_info = "result", mhlo.layout_mode = "default", mhlo.memory_kind = "pinned_host", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}]> : tensor<4xf32>
    %2 = stablehlo.custom_call @SPMDFullToShardShape(%1) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4xf32>) -> tensor<4xf32>
    %3 = stablehlo.multiply %2, %2 : tensor<4xf32>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    %5 = stablehlo.custom_call @annotate_device_placement(%4) {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = "pinned_host"}} : (tensor<4xf32>) -> tensor<4xf32>
    %6 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%5) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{}]>]>"}} : (tensor<4xf32>) -> tensor<4xf32>
    %7 = "sdy.sharding_constraint"(%6) <{sharding = #sdy.sharding<@mesh, [{}]>}> : (tensor<4xf32>) -> tensor<4xf32>
    return %7 : tensor<4xf32>
  }
}
)mlir";

TEST_CASE("exports: sharding and placement annotations are identities on one device") {
  std::vector<Literal> out = run_text(kAnnotated, {lit<float>({1, -2, 3, 0.5f}, {4})});
  CHECK(values_of<float>(out[0]) == std::vector<float>{1, 4, 9, 0.25f});
  // No node of their own: the graph is the parameter and the multiply.
  Graph g = require_ok(parse_stablehlo(kAnnotated));
  CHECK(g.num_nodes() == 2);
  // The placement is recorded for the result it reaches, and compiling the text puts that
  // result in the device's pinned_host memory space.
  stablehlo::Module m = require_ok(stablehlo::parse_module(kAnnotated));
  CHECK(m.find("main")->result_memory_kinds == std::vector<std::string>{"pinned_host"});
  auto client = require_ok(Client::create({}));
  auto exe = require_ok(client->compile(kAnnotated));
  CHECK(exe.compile_options().output_memory_kinds == std::vector<std::string>{"pinned_host"});
  CHECK(exe.output_memory_kinds() == std::vector<std::string_view>{"pinned_host"});
  auto x = require_ok(client->buffer_from_literal(lit<float>({1, 2, 3, 4}, {4})));
  auto outputs = require_ok(exe.execute({&x}));
  CHECK(outputs[0].memory_space()->kind() == "pinned_host");
  CHECK(values_of<float>(require_ok(outputs[0].to_literal().await())) == std::vector<float>{1, 4, 9, 16});
  // Options that name their own kinds win; a kind the device lacks, or a list of another
  // length, fails the compile.
  cpu::CompileOptions device_only;
  device_only.output_memory_kinds = {"device"};
  auto exe2 = require_ok(client->compile(kAnnotated, device_only));
  CHECK(require_ok(exe2.execute({&x}))[0].memory_space()->kind() == "device");
  device_only.output_memory_kinds = {"hbm"};
  check_error(client->compile(kAnnotated, device_only), StatusCode::kNotFound, "no memory space of kind 'hbm'");
  device_only.output_memory_kinds = {"device", "device"};
  check_error(client->compile(kAnnotated, device_only), StatusCode::kInvalidArgument, "lists 2 kinds for the 1 outputs");
  // The kinds survive serialization.
  auto back = require_ok(client->deserialize_executable(exe.serialize()));
  CHECK(back.output_memory_kinds() == std::vector<std::string_view>{"pinned_host"});
}

TEST_CASE("exports: mhlo.memory_kind on arguments and results places them, and a misplaced argument is refused") {
  // An argument offloaded to the host and a result kept there, as jax.jit with memory kinds
  // in its shardings exports them (no annotate_device_placement in the body).
  constexpr std::string_view text = R"mlir(
  func.func public @main(%arg0: tensor<3xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: tensor<3xf32>) -> (tensor<3xf32> {mhlo.memory_kind = "pinned_host"}, tensor<3xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<3xf32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<3xf32>
    return %0, %1 : tensor<3xf32>, tensor<3xf32>
  }
)mlir";
  stablehlo::Module m = require_ok(stablehlo::parse_module(text));
  CHECK(m.find("main")->argument_memory_kinds == std::vector<std::string>{"pinned_host", ""});
  CHECK(m.find("main")->result_memory_kinds == std::vector<std::string>{"pinned_host", ""});
  auto client = require_ok(Client::create({}));
  auto exe = require_ok(client->compile(text));
  CHECK(exe.parameter_memory_kinds() == std::vector<std::string_view>{"pinned_host", ""});
  CHECK(exe.output_memory_kinds() == std::vector<std::string_view>{"pinned_host", "device"});
  auto* device = client->addressable_devices()[0];
  auto* host = require_ok(device->memory_space_by_kind("pinned_host"));
  auto x_device = require_ok(client->buffer_from_literal(lit<float>({1, 2, 3}, {3})));
  auto x_host = require_ok(client->buffer_from_literal(lit<float>({1, 2, 3}, {3}), host));
  auto y = require_ok(client->buffer_from_literal(lit<float>({4, 5, 6}, {3})));
  check_error(exe.execute({&x_device, &y}).status(), StatusCode::kInvalidArgument,
              "argument 0 is in cpu:0/device but parameter 0 takes memory of kind 'pinned_host'");
  auto out = require_ok(exe.execute({&x_host, &y}));
  CHECK(out[0].memory_space()->kind() == "pinned_host");
  CHECK(out[1].memory_space()->kind() == "device");
  CHECK(values_of<float>(require_ok(out[0].to_literal().await())) == std::vector<float>{5, 7, 9});
  CHECK(values_of<float>(require_ok(out[1].to_literal().await())) == std::vector<float>{4, 10, 18});
  // The second argument names no kind: any memory space of the device will do.
  auto y_host = require_ok(client->buffer_from_literal(lit<float>({4, 5, 6}, {3}), host));
  CHECK(exe.execute({&x_host, &y_host}).ok());
  // Bad options: an unknown kind, a list of another length. The kinds survive serialization.
  cpu::CompileOptions bad;
  bad.argument_memory_kinds = {"hbm", ""};
  check_error(client->compile(text, bad), StatusCode::kNotFound, "argument_memory_kinds[0]");
  bad.argument_memory_kinds = {"device"};
  check_error(client->compile(text, bad), StatusCode::kInvalidArgument, "lists 1 kinds for the 2 parameters");
  auto back = require_ok(client->deserialize_executable(exe.serialize()));
  CHECK(back.parameter_memory_kinds() == exe.parameter_memory_kinds());
}

TEST_CASE("exports: an annotation that changes the shape is a program for several devices") {
  const std::string text = R"mlir(
func.func public @main(%arg0: tensor<8xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @SPMDFullToShardShape(%arg0) {mhlo.sharding = "{manual}"} : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
})mlir";
  check_error(parse_stablehlo(text), StatusCode::kUnimplemented, "several devices");
}

// A composite (its decomposition is what runs), an optimization barrier over two values,
// a tuple taken apart again, and count_leading_zeros.
constexpr std::string_view kComposite = R"mlir(
module @jit_g attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xi32>) -> (tensor<3xf32> {jax.result_info = "[0]"}, tensor<3xi32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.composite "my.scaled" %arg0 {composite_attributes = {scale = 3.000000e+00 : f32}, decomposition = @my.scaled.impl, version = 1 : i32} : (tensor<3xf32>) -> tensor<3xf32>
    %1:2 = stablehlo.optimization_barrier %0, %arg1 : tensor<3xf32>, tensor<3xi32>
    %2 = stablehlo.tuple %1#0, %1#1 : tuple<tensor<3xf32>, tensor<3xi32>>
    %3 = stablehlo.get_tuple_element %2[0] : (tuple<tensor<3xf32>, tensor<3xi32>>) -> tensor<3xf32>
    %4 = stablehlo.get_tuple_element %2[1] : (tuple<tensor<3xf32>, tensor<3xi32>>) -> tensor<3xi32>
    %5 = stablehlo.count_leading_zeros %4 : tensor<3xi32>
    return %3, %5 : tensor<3xf32>, tensor<3xi32>
  }
  func.func private @my.scaled.impl(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<3xf32>
    %0 = stablehlo.multiply %arg0, %cst : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
)mlir";

TEST_CASE("exports: composite, optimization_barrier, tuple and get_tuple_element") {
  std::vector<Literal> out =
      run_text(kComposite, {lit<float>({1, 2, -4}, {3}), lit<std::int32_t>({1, 0, -1}, {3})});
  CHECK(values_of<float>(out[0]) == std::vector<float>{3, 6, -12});
  CHECK(values_of<std::int32_t>(out[1]) == std::vector<std::int32_t>{31, 32, 0});
}

TEST_CASE("exports: a tuple used as an operand is refused") {
  const std::string text = R"mlir(
func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.tuple %arg0 : tuple<tensor<3xf32>>
  %1 = stablehlo.add %0, %0 : tensor<3xf32>
  return %1 : tensor<3xf32>
})mlir";
  check_error(parse_stablehlo(text), StatusCode::kUnimplemented, "only stablehlo.tuple and get_tuple_element read it");
}

TEST_CASE("exports: count_leading_zeros on every integer type") {
  // Hand-counted: zeros above the highest set bit, the width for 0.
  auto check_type = [](std::string_view type, auto values, auto want) {
    using T = typename decltype(values)::value_type;
    const std::string t = str_cat("tensor<4x", type, ">");
    const std::string text =
        str_cat("func.func @main(%x: ", t, ") -> ", t, " {\n  %0 = stablehlo.count_leading_zeros %x : ",
                t, "\n  return %0 : ", t, "\n}");
    CAPTURE(type);
    std::vector<Literal> out = run_text(text, {lit<T>(values, {4})});
    CHECK(values_of<T>(out[0]) == want);
  };
  check_type("i8", std::vector<std::int8_t>{0, 1, -1, 64}, std::vector<std::int8_t>{8, 7, 0, 1});
  check_type("ui8", std::vector<std::uint8_t>{0, 1, 255, 16}, std::vector<std::uint8_t>{8, 7, 0, 3});
  check_type("i16", std::vector<std::int16_t>{0, 1, -1, 256},
             std::vector<std::int16_t>{16, 15, 0, 7});
  check_type("ui16", std::vector<std::uint16_t>{0, 3, 0x8000, 0x00ff},
             std::vector<std::uint16_t>{16, 14, 0, 8});
  check_type("i32", std::vector<std::int32_t>{0, 1, -1, 0x10000},
             std::vector<std::int32_t>{32, 31, 0, 15});
  check_type("ui32", std::vector<std::uint32_t>{0, 7, 0xffffffffu, 0x100},
             std::vector<std::uint32_t>{32, 29, 0, 23});
  check_type("i64", std::vector<std::int64_t>{0, 1, -1, std::int64_t{1} << 40},
             std::vector<std::int64_t>{64, 63, 0, 23});
  check_type("ui64", std::vector<std::uint64_t>{0, 2, ~std::uint64_t{0}, std::uint64_t{1} << 62},
             std::vector<std::uint64_t>{64, 62, 0, 1});
  // Not for floats: the IR's type rule says so.
  check_error(parse_stablehlo("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                              "  %0 = stablehlo.count_leading_zeros %x : tensor<2xf32>\n"
                              "  return %0 : tensor<2xf32>\n}"),
              StatusCode::kInvalidArgument, "count_leading_zeros");
}

TEST_CASE("exports: map applies its scalar body to every element") {
  // (a * b + 1) and max(a, b) - b, in JAX's generic form.
  const std::string text = R"mlir(
func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "stablehlo.map"(%arg0, %arg1) <{dimensions = array<i64: 0, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.multiply %a, %b : tensor<f32>
    %c = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %s = stablehlo.add %m, %c : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "stablehlo.map"(%arg0, %arg1) <{dimensions = array<i64: 0, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %x = stablehlo.select %p, %a, %b : tensor<i1>, tensor<f32>
    %d = stablehlo.subtract %x, %b : tensor<f32>
    stablehlo.return %d : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
})mlir";
  const std::vector<float> a = {1, 2, 3, -1, 0, 5}, b = {2, 2, -1, 4, 7, 0.5f};
  std::vector<Literal> out = run_text(text, {lit<float>(a, {2, 3}), lit<float>(b, {2, 3})});
  std::vector<float> want0, want1;
  for (std::size_t k = 0; k < a.size(); ++k) {
    want0.push_back(a[k] * b[k] + 1);
    want1.push_back((a[k] > b[k] ? a[k] : b[k]) - b[k]);
  }
  CHECK(values_of<float>(out[0]) == want0);
  CHECK(values_of<float>(out[1]) == want1);
}

TEST_CASE("exports: a manual computation runs its body when its axes have size one") {
  const std::string text = R"mlir(
module @jit_h attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "y"=1]>
  func.func public @main(%arg0: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg1: tensor<4x2xf32>) {
      %1 = stablehlo.add %arg1, %arg1 : tensor<4x2xf32>
      sdy.return %1 : tensor<4x2xf32>
    } : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
})mlir";
  std::vector<Literal> out = run_text(text, {lit<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2})});
  CHECK(values_of<float>(out[0]) == std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16});

  std::string two = text;
  two.replace(two.find("\"x\"=1"), 5, "\"x\"=2");
  two.replace(two.find("(%arg1: tensor<4x2xf32>)"), 24, "(%arg1: tensor<2x2xf32>)");
  check_error(parse_stablehlo(two), StatusCode::kUnimplemented,
              "manual axis \"x\" of @mesh (size 2)");
}

TEST_CASE("exports: a shape_assertion that folds is checked when the program is read") {
  const std::string text = R"mlir(
func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<3x4xf32>) -> tensor<i32>
  %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
  %c = stablehlo.constant dense<LIMIT> : tensor<i64>
  %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%2, %1, %c) {api_version = 2 : i32, error_message = "Expected value >= {1} for dimension variable 'b', got 'b' = {0} ({{literal}})", has_side_effect = true} : (tensor<i1>, tensor<i64>, tensor<i64>) -> ()
  return %arg0 : tensor<3x4xf32>
})mlir";
  std::string holds = text, fails = text;
  holds.replace(holds.find("LIMIT"), 5, "3");
  fails.replace(fails.find("LIMIT"), 5, "4");
  CHECK(parse_stablehlo(holds).ok());
  check_error(parse_stablehlo(fails), StatusCode::kInvalidArgument,
              "Expected value >= 4 for dimension variable 'b', got 'b' = 3 ({literal})");
}

TEST_CASE("exports: a shape_assertion on run-time values is refused, not ignored") {
  const std::string text = R"mlir(
func.func public @main(%arg0: tensor<i1>) -> tensor<i1> {
  stablehlo.custom_call @shape_assertion(%arg0) {error_message = "no", has_side_effect = true} : (tensor<i1>) -> ()
  return %arg0 : tensor<i1>
})mlir";
  check_error(parse_stablehlo(text), StatusCode::kUnimplemented, "known only at run time");
}

// ---- Shape polymorphism -----------------------------------------------------------------

// `jax.export(jit(f), shape_poly: "(b, 4)")` of f(x) = x + iota along b, x rows summed, in
// the calling convention where main computes the dimension variable, asserts b >= 1 and
// passes it to the wrapped function as a leading tensor<i64>.
constexpr std::string_view kPolymorphic = R"mlir(
#loc = loc(unknown)
module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<?x4xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"} loc(unknown)) -> (tensor<?x4xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<4xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32> loc(#loc)
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64> loc(#loc)
    %c = stablehlo.constant dense<1> : tensor<i64> loc(#loc)
    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1> loc(#loc)
    stablehlo.custom_call @shape_assertion(%2, %1) {api_version = 2 : i32, error_message = "Input shapes do not match the polymorphic shapes specification. Expected value >= 1 for dimension variable 'b'. Using the following polymorphic shapes specifications: args[0].shape = (b, 4). Obtained dimension variables: 'b' = {0} from specification 'b' for dimension args[0].shape[0] (= {0}), . Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html#shape-assertion-errors for more details.", has_side_effect = true} : (tensor<i1>, tensor<i64>) -> () loc(#loc)
    %3:2 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>) loc(#loc)
    return %3#0, %3#1 : tensor<?x4xf32>, tensor<4xf32> loc(#loc)
  } loc(#loc)
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = "b"} loc(unknown), %arg1: tensor<?x4xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"} loc(unknown)) -> (tensor<?x4xf32> {jax.result_info = "[0]", mhlo.layout_mode = "default"}, tensor<4xf32> {jax.result_info = "[1]", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32> loc(#loc)
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32> loc(#loc)
    %c = stablehlo.constant dense<4> : tensor<1xi32> loc(#loc)
    %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32> loc(#loc)
    %3 = stablehlo.dynamic_iota %2, dim = 0 : (tensor<2xi32>) -> tensor<?x4xf32> loc(#loc)
    %4 = stablehlo.add %arg1, %3 : tensor<?x4xf32> loc(#loc)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc)
    %5 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<?x4xf32>, tensor<f32>) -> tensor<4xf32> loc(#loc)
    %6 = call @helper(%arg0, %4) : (tensor<i64>, tensor<?x4xf32>) -> tensor<?x4xf32> loc(#loc)
    return %6, %5 : tensor<?x4xf32>, tensor<4xf32> loc(#loc)
  } loc(#loc)
  func.func private @helper(%arg0: tensor<i64> {jax.global_constant = "b"}, %arg1: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %c = stablehlo.constant dense<4> : tensor<1xi32>
    %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %3 = stablehlo.dynamic_broadcast_in_dim %cst, %2, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
    %4 = stablehlo.multiply %arg1, %3 : tensor<?x4xf32>
    return %4 : tensor<?x4xf32>
  }
}
)mlir";

TEST_CASE("exports: a shape-polymorphic module is refined from its arguments' shapes") {
  for (std::int64_t rows : {1, 2, 5}) {
    CAPTURE(rows);
    std::vector<float> x;
    for (std::int64_t i = 0; i < rows * 4; ++i) x.push_back(static_cast<float>(i) * 0.5f);
    std::vector<Literal> out = run_text(kPolymorphic, {lit<float>(x, {rows, 4})});
    // Oracle: y[i][j] = x[i][j] + i; out0 = 2 y, out1[j] = sum_i y[i][j].
    std::vector<float> want0, want1(4, 0.0f);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < 4; ++j) {
        const float y = x[static_cast<std::size_t>(i * 4 + j)] + static_cast<float>(i);
        want0.push_back(2 * y);
        want1[static_cast<std::size_t>(j)] += y;
      }
    CHECK(out[0].shape().dims()[0] == rows);
    CHECK(values_of<float>(out[0]) == want0);
    CHECK(values_of<float>(out[1]) == want1);
  }
}

TEST_CASE("exports: the polymorphic module's bad inputs give clear errors") {
  // b = 0 fails JAX's own assertion, with its message formatted as JAX formats it.
  check_error(parse_stablehlo(kPolymorphic, {Shape(kF32, {0, 4})}), StatusCode::kInvalidArgument,
              "Expected value >= 1 for dimension variable 'b'. Using the following polymorphic "
              "shapes specifications: args[0].shape = (b, 4). Obtained dimension variables: 'b' "
              "= 0 from specification 'b' for dimension args[0].shape[0] (= 0)");
  // A static dimension that differs, a wrong element type, a wrong count.
  check_error(parse_stablehlo(kPolymorphic, {Shape(kF32, {3, 5})}), StatusCode::kInvalidArgument,
              "argument 0 of @main has type tensor<?x4xf32>, which the given shape "
              "tensor<3x5xf32> does not match");
  check_error(parse_stablehlo(kPolymorphic, {Shape(kF64, {3, 4})}), StatusCode::kInvalidArgument,
              "does not match");
  check_error(parse_stablehlo(kPolymorphic, std::vector<Shape>{}), StatusCode::kInvalidArgument,
              "@main takes 1 argument(s), but 0 argument shape(s) were given");
  // Without shapes, the '?' is named.
  check_error(parse_stablehlo(kPolymorphic), StatusCode::kInvalidArgument,
              "argument 0 of @main has type tensor<?x4xf32>: a shape-polymorphic function "
              "needs concrete argument shapes");
}

TEST_CASE("exports: a '?' that depends on argument values cannot be refined") {
  const std::string text = R"mlir(
func.func public @main(%arg0: tensor<1xi32>) -> tensor<?xf32> {
  %0 = stablehlo.dynamic_iota %arg0, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
})mlir";
  check_error(parse_stablehlo(text, {Shape(kS32, {1})}), StatusCode::kInvalidArgument,
              "the output_shape operand of stablehlo.dynamic_iota cannot be refined to a "
              "constant: it depends on a stablehlo.parameter");
  const std::string reshape = R"mlir(
func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = stablehlo.reshape %arg0 : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
})mlir";
  check_error(parse_stablehlo(reshape, {Shape(kF32, {4})}), StatusCode::kInvalidArgument,
              "the dimension '?' of stablehlo.reshape's result type tensor<?xf32> cannot be "
              "refined");
}

TEST_CASE("exports: the dynamic ops become their static forms") {
  // real_dynamic_slice, dynamic_pad, dynamic_reshape, dynamic_gather and dynamic_top_k with
  // shape operands computed from the refined dimension.
  const std::string text = R"mlir(
func.func public @main(%arg0: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<?xf32>, tensor<?xi32>) {
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %c1 = stablehlo.constant dense<1> : tensor<1xi32>
  %c2 = stablehlo.constant dense<2> : tensor<1xi32>
  %c0 = stablehlo.constant dense<0> : tensor<1xi32>
  %s = stablehlo.real_dynamic_slice %arg0, %c1, %1, %c2 : (tensor<?xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xf32>
  %z = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
  %p = stablehlo.dynamic_pad %arg0, %z, %c1, %c2, %c1 : (tensor<?xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xf32>
  %h = stablehlo.divide %1, %c2 : tensor<1xi32>
  %sh = stablehlo.concatenate %h, %c2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %r = stablehlo.dynamic_reshape %arg0, %sh : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x2xf32>
  %idx = stablehlo.constant dense<[[1], [0]]> : tensor<2x1xi32>
  %g = "stablehlo.dynamic_gather"(%arg0, %idx, %c1) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>}> : (tensor<?xf32>, tensor<2x1xi32>, tensor<1xi32>) -> tensor<2xf32>
  %k = stablehlo.divide %0, %0 : tensor<i32>
  %k2 = stablehlo.add %k, %k : tensor<i32>
  %t:2 = stablehlo.custom_call @stablehlo.dynamic_top_k(%arg0, %k2) : (tensor<?xf32>, tensor<i32>) -> (tensor<?xf32>, tensor<?xi32>)
  return %s, %p, %r, %g, %t#0, %t#1 : tensor<?xf32>, tensor<?xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<?xf32>, tensor<?xi32>
})mlir";
  const std::vector<float> x = {5, 1, 4, 2, 8, 3};
  std::vector<Literal> out = run_text(text, {lit<float>(x, {6})});
  CHECK(values_of<float>(out[0]) == std::vector<float>{1, 2, 3});             // x[1:6:2]
  CHECK(values_of<float>(out[1]) ==                                            // low 1, high 2, interior 1
        std::vector<float>{-1, 5, -1, 1, -1, 4, -1, 2, -1, 8, -1, 3, -1, -1});
  CHECK(out[2].shape().dims()[0] == 3);
  CHECK(values_of<float>(out[2]) == x);
  CHECK(values_of<float>(out[3]) == std::vector<float>{1, 5});
  CHECK(values_of<float>(out[4]) == std::vector<float>{8, 5});
  CHECK(values_of<std::int32_t>(out[5]) == std::vector<std::int32_t>{4, 0});
}

TEST_CASE("exports: loops over '?'-typed values are refined from their operands") {
  // A fori_loop doubling x three times, in the pretty form JAX prints and the generic form.
  const std::string pretty = R"mlir(
func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%iterArg = %c0, %iterArg_0 = %arg0) : tensor<i32>, tensor<?xf32>
  cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %1 = stablehlo.compare  LT, %iterArg, %c3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.add %iterArg, %c1 : tensor<i32>
    %2 = stablehlo.add %iterArg_0, %iterArg_0 : tensor<?xf32>
    stablehlo.return %1, %2 : tensor<i32>, tensor<?xf32>
  }
  return %0#1 : tensor<?xf32>
})mlir";
  const std::string generic = R"mlir(
func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = "stablehlo.while"(%c0, %arg0) ({
  ^bb0(%i: tensor<i32>, %x: tensor<?xf32>):
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %1 = stablehlo.compare  LT, %i, %c3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }, {
  ^bb0(%i: tensor<i32>, %x: tensor<?xf32>):
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.add %i, %c1 : tensor<i32>
    %2 = stablehlo.add %x, %x : tensor<?xf32>
    stablehlo.return %1, %2 : tensor<i32>, tensor<?xf32>
  }) : (tensor<i32>, tensor<?xf32>) -> (tensor<i32>, tensor<?xf32>)
  return %0#1 : tensor<?xf32>
})mlir";
  for (const std::string* text : {&pretty, &generic}) {
    std::vector<Literal> out = run_text(*text, {lit<float>({1, -2, 0.5f}, {3})});
    CHECK(values_of<float>(out[0]) == std::vector<float>{8, -16, 4});
  }
}

TEST_CASE("exports: the compile cache keys on the refined shapes") {
  auto client = require_ok(Client::create({}));
  const std::vector<Shape> two = {Shape(kF32, {2, 4})}, three = {Shape(kF32, {3, 4})};
  const auto before = client->compile_cache_stats();
  require_ok(stablehlo::compile_stablehlo(*client, kPolymorphic, two));
  require_ok(stablehlo::compile_stablehlo(*client, kPolymorphic, two));
  require_ok(stablehlo::compile_stablehlo(*client, kPolymorphic, three));
  const auto after = client->compile_cache_stats();
  CHECK(after.first - before.first == 1);    // the second (2, 4) compile
  CHECK(after.second - before.second == 2);  // (2, 4) and (3, 4)
  CHECK(fingerprint(require_ok(parse_stablehlo(kPolymorphic, two))) !=
        fingerprint(require_ok(parse_stablehlo(kPolymorphic, three))));
}


// ---- Products whose result type is not their operands' ----------------------------------

TEST_CASE("exports: dot_general, dot and convolution accumulate in their result's type") {
  // i8 x i8 -> i32: every product overflows i8, and the sums are exact in i32.
  const std::vector<std::int8_t> a8 = {127, -128, 100, -7, 99, -100}, b8 = {127, 127, -128, 3, 90, -91};
  std::vector<std::int32_t> want(4, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want[i * 2 + j] += std::int32_t{a8[i * 3 + k]} * std::int32_t{b8[k * 2 + j]};
  auto ints = run_text(R"mlir(
func.func @main(%a: tensor<2x3xi8>, %b: tensor<3x2xi8>) -> tensor<2x2xi32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}
)mlir", {lit<std::int8_t>(a8, {2, 3}), lit<std::int8_t>(b8, {3, 2})});
  CHECK(ints[0] == lit<std::int32_t>(want, {2, 2}));

  // f32 x f32 -> f64: (1 + 2^-20)(1 + 2^-21) needs 42 bits, so only an f64 product keeps it.
  const float u = 1.0f + 0x1p-20f, v = 1.0f + 0x1p-21f;
  auto wide = run_text(R"mlir(
func.func @main(%a: tensor<1x3xf32>, %b: tensor<3xf32>) -> tensor<1xf64> {
  %0 = "stablehlo.dot"(%a, %b) : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1xf64>
  return %0 : tensor<1xf64>
}
)mlir", {lit<float>({u, u, 2.0f}, {1, 3}), lit<float>({v, 1.0f, 0.5f}, {3})});
  const double exact = double(u) * double(v) + double(u) + 1.0;
  CHECK(exact != double(u * v + u + 1.0f));
  CHECK(wide[0] == lit<double>({exact}, {1}));

  // bf16 x bf16 -> f32: the products of 8-bit mantissas are exact in f32.
  const std::vector<float> p = {1.0078125f, -3.015625f, 0.5078125f}, q = {1.0078125f, 2.015625f, -4.0625f};
  std::vector<bf16> pb, qb;
  for (float x : p) pb.push_back(bf16(x));
  for (float x : q) qb.push_back(bf16(x));
  auto mixed = run_text(R"mlir(
func.func @main(%a: tensor<3xbf16>, %b: tensor<3xbf16>) -> tensor<f32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<f32>
  return %0 : tensor<f32>
}
)mlir", {lit<bf16>(pb, {3}), lit<bf16>(qb, {3})});
  double dot = 0;
  for (int k = 0; k < 3; ++k) dot += double(float(pb[k])) * double(float(qb[k]));  // exact: 16-bit products, few terms
  CHECK(mixed[0] == lit<float>({float(dot)}, {}));

  // f32 x f32 -> bf16: computed in f32 and rounded once to bf16.
  auto narrow = run_text(R"mlir(
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<bf16> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<2xf32>, tensor<2xf32>) -> tensor<bf16>
  return %0 : tensor<bf16>
}
)mlir", {lit<float>({1.0f, 0x1p-9f}, {2}), lit<float>({1.0f, 1.5f}, {2})});
  CHECK(narrow[0] == lit<bf16>({bf16(1.0f + 1.5f * 0x1p-9f)}, {}));

  // A 1-D convolution i8 x i8 -> i32 over two taps and two input features.
  const std::vector<std::int8_t> x8 = {100, -100, 120, 50, -128, 127, 90, -90}, w8 = {101, -102, 125, 126};
  std::vector<std::int32_t> conv_want(3, 0);
  for (int o = 0; o < 3; ++o)
    for (int t = 0; t < 2; ++t)
      for (int f = 0; f < 2; ++f) conv_want[o] += std::int32_t{x8[(o + t) * 2 + f]} * std::int32_t{w8[t * 2 + f]};
  auto conv = run_text(R"mlir(
func.func @main(%x: tensor<1x4x2xi8>, %w: tensor<2x2x1xi8>) -> tensor<1x3x1xi32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[0, 0]], lhs_dilate = [1], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x2xi8>, tensor<2x2x1xi8>) -> tensor<1x3x1xi32>
  return %0 : tensor<1x3x1xi32>
}
)mlir", {lit<std::int8_t>(x8, {1, 4, 2}), lit<std::int8_t>(w8, {2, 2, 1})});
  CHECK(conv[0] == lit<std::int32_t>(conv_want, {1, 3, 1}));

  // Refused: an integer result of floats, a pred result of numbers.
  check_error(parse_stablehlo(R"mlir(
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<i32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<2xf32>, tensor<2xf32>) -> tensor<i32>
  return %0 : tensor<i32>
}
)mlir"), StatusCode::kUnimplemented, "stablehlo.dot_general of f32 and f32 operands with an i32 result");
  check_error(parse_stablehlo(R"mlir(
func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<i1> {
  %0 = "stablehlo.dot"(%a, %b) : (tensor<2xi32>, tensor<2xi32>) -> tensor<i1>
  return %0 : tensor<i1>
}
)mlir"), StatusCode::kUnimplemented, "stablehlo.dot of i32 and i32 operands with an i1 result");
}

}  // namespace

}  // namespace stablehlo_exports_test
