// Tests of StableHLO import and export: every syntax the parser reads (pretty and generic
// forms, types, dense literals, calls, regions, checks), its errors (each with line:column),
// the round trip graph -> text -> graph for every op and attribute kind, the op table (every
// entry read in each of its forms), and the JAX-exported corpus: a sample checked
// structurally and a sweep over every file.

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "control_flow.hpp"
#include "corpus.hpp"
#include "test_util.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/stablehlo/detail/op_table.hpp"
#include "pjrt_lite/stablehlo/stablehlo.hpp"

namespace stablehlo_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

stablehlo::Module parse_ok(std::string_view text) { return require_ok(stablehlo::parse_module(text)); }

Graph graph_ok(std::string_view text, std::string_view entry = "main") {
  return require_ok(parse_stablehlo(text, entry));
}


std::int64_t count_ops(const Graph& g, OpCode op) {
  return std::count_if(g.nodes().begin(), g.nodes().end(),
                       [&](const Node& n) { return n.op == op; });
}

/// The first node of `op` in `g`; it must exist.
const Node& first_node(const Graph& g, OpCode op) {
  for (const Node& n : g.nodes())
    if (n.op == op) return n;
  FAIL("no node ", op_name(op));
  return g.node(0);
}

/// The status must be INVALID_ARGUMENT whose message starts with `position` ("3:17", or a
/// line alone: "3") and contains `fragment`.
void check_invalid(const Status& s, std::string_view position, std::string_view fragment) {
  CHECK_MESSAGE(s.code() == StatusCode::kInvalidArgument, s.to_string());
  CHECK_MESSAGE(s.message().starts_with(std::string(position) + ":"), "message: '", s.message(),
                "' does not start with '", position, ":'");
  CHECK_MESSAGE(s.message().find(fragment) != std::string_view::npos, "message: '", s.message(),
                "' lacks '", fragment, "'");
}

/// The status must be UNIMPLEMENTED "<what> is not supported (line N)".
void check_unsupported(const Status& s, std::string_view what, std::int64_t line) {
  CHECK_MESSAGE(s.code() == StatusCode::kUnimplemented, s.to_string());
  const std::string want = str_cat(what, " is not supported (line ", line, ")");
  CHECK_MESSAGE(s.message().find(want) != std::string_view::npos, "message: '", s.message(),
                "' lacks '", want, "'");
}

Status parse_status(std::string_view text) { return stablehlo::parse_module(text).status(); }

/// `text` with its first `from` replaced by `to`; `from` must occur.
std::string replaced(std::string text, std::string_view from, std::string_view to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// The parse of `text` with its first `from` replaced by `to`.
Status edited(std::string_view text, std::string_view from, std::string_view to) {
  return parse_status(replaced(std::string(text), from, to));
}

/// One edit of a good program that makes it invalid: its first `from` becomes `to`, and the
/// parse fails as check_invalid(..., position, fragment) expects. Tables of them put the edit
/// on one line and the error on the next.
struct InvalidEdit {
  std::string_view from, to, position, fragment;
};

/// Checks each edit on its own against the unedited `text`.
void check_invalid_edits(std::string_view text, std::initializer_list<InvalidEdit> edits) {
  for (const InvalidEdit& e : edits) {
    CAPTURE(e.from);
    CAPTURE(e.to);
    check_invalid(edited(text, e.from, e.to), e.position, e.fragment);
  }
}

/// A module whose @main takes `args` and runs `body` (lines ending in a return).
std::string program(std::string_view signature, std::string_view body) {
  return str_cat("func.func @main", signature, " {\n", body, "}\n");
}

/// The corpus file's text, or nullopt (with a message) when the corpus is not there.
std::optional<std::string> read_corpus(std::string_view name) {
  const std::filesystem::path path = testing::corpus_dir() / name;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}



/// The literal of the first constant node of the graph of `text`'s @main.
Literal first_constant(std::string_view text) {
  Graph g = graph_ok(text);
  return first_node(g, OpCode::kConstant).attr<ConstantAttrs>().literal();
}

/// A one-constant program: `dense` is the attribute text, `type` the tensor type.
std::string constant_program(std::string_view dense, std::string_view type) {
  return program(str_cat("() -> ", type), str_cat("  %0 = stablehlo.constant ", dense, " : ", type,
                                                  "\n  return %0 : ", type, "\n"));
}

/// parse(print(g)) must have g's fingerprint.
void check_round_trip(const Graph& g) {
  const std::string text = to_stablehlo(g);
  StatusOr<Graph> back = parse_stablehlo(text);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string(), "\n", text);
  CHECK_MESSAGE(fingerprint(*back) == fingerprint(g), "fingerprints differ for\n", text);
  // Printing is a function of the graph: the reparsed graph prints the same text, but for
  // the module's name, which is the graph's name (the reparsed one is called "main").
  const std::string again = to_stablehlo(*back);
  CHECK(again.substr(again.find('\n')) == text.substr(text.find('\n')));
}

}  // namespace

// ---- Syntax --------------------------------------------------------------------------------

TEST_CASE("stablehlo: a pretty-form function") {
  const Graph g = graph_ok(R"(
    func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> tensor<3xf32> {
      %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %1 = stablehlo.add %arg0, %0 : tensor<2x3xf32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
      return %2 : tensor<3xf32>
    })");
  CHECK(g.name() == "main");
  CHECK(g.num_parameters() == 2);
  CHECK(g.shape(g.parameters()[0]) == Shape(kF32, {2, 3}));
  CHECK(g.shape(g.parameters()[1]) == Shape(kF32, {}));
  CHECK(g.num_nodes() == 6);
  CHECK(count_ops(g, OpCode::kAdd) == 1);
  const Node& reduce = first_node(g, OpCode::kReduce);
  CHECK(reduce.attr<ReduceAttrs>().dimensions == std::vector<std::int64_t>{0});
  REQUIRE(reduce.bodies.size() == 1);
  CHECK(count_ops(reduce.bodies[0], OpCode::kAdd) == 1);
  CHECK(reduce.bodies[0].num_parameters() == 2);
  REQUIRE(g.outputs().size() == 1);
  CHECK(g.shape(g.outputs()[0]) == Shape(kF32, {3}));
  const Node& bcast = first_node(g, OpCode::kBroadcastInDim);
  CHECK(bcast.attr<BroadcastInDimAttrs>().dims == std::vector<std::int64_t>{2, 3});
}

TEST_CASE("stablehlo: every element type") {
  const std::pair<std::string_view, DType> types[] = {
      {"i1", kPred},          {"i8", kS8},
      {"i16", kS16},          {"i32", kS32},
      {"i64", kS64},          {"ui8", kU8},
      {"ui16", kU16},         {"ui32", kU32},
      {"ui64", kU64},         {"f16", kF16},
      {"bf16", kBF16},        {"f32", kF32},
      {"f64", kF64},          {"complex<f32>", kC64},
      {"complex<f64>", kC128}};
  for (const auto& [type_name, dtype] : types) {
    const std::string_view name = type_name;  // CAPTURE's lambda: clang 14 cannot capture a binding
    CAPTURE(name);
    CHECK(stablehlo::element_type_name(dtype) == name);
    const std::string t2 = str_cat("tensor<2x0x3x", name, ">");
    const std::string t0 = str_cat("tensor<", name, ">");
    const Graph g =
        graph_ok(program(str_cat("(%a: ", t2, ", %b: ", t0, ") -> (", t2, ", ", t0, ")"),
                         str_cat("  return %a, %b : ", t2, ", ", t0, "\n")));
    CHECK(g.shape(g.parameters()[0]) == Shape(dtype, {2, 0, 3}));
    CHECK(g.shape(g.parameters()[1]) == Shape(dtype, {}));
    CHECK(stablehlo::tensor_type_name(Shape(dtype, {2, 0, 3})) == t2);
  }
}

TEST_CASE("stablehlo: dense constants") {
  SUBCASE("decimal lists, nested lists and splats") {
    Literal a =
        first_constant(constant_program("dense<[[1, -2, 3], [4, 5, -6]]>", "tensor<2x3xi32>"));
    CHECK(a.shape() == Shape(kS32, {2, 3}));
    CHECK(values_of<std::int32_t>(a) == std::vector<std::int32_t>{1, -2, 3, 4, 5, -6});
    Literal s = first_constant(constant_program("dense<7>", "tensor<2x2xi8>"));
    CHECK(values_of<std::int8_t>(s) == std::vector<std::int8_t>{7, 7, 7, 7});
    Literal f = first_constant(constant_program("dense<[1.5, -2.0e+00, 3, 1.]>", "tensor<4xf32>"));
    CHECK(values_of<float>(f) == std::vector<float>{1.5f, -2.0f, 3.0f, 1.0f});
    Literal d = first_constant(constant_program("dense<0.1>", "tensor<f64>"));
    CHECK(values_of<double>(d) == std::vector<double>{0.1});
    Literal u =
        first_constant(constant_program("dense<[18446744073709551615, 0]>", "tensor<2xui64>"));
    CHECK(values_of<std::uint64_t>(u) ==
          std::vector<std::uint64_t>{std::numeric_limits<std::uint64_t>::max(), 0});
    Literal i = first_constant(constant_program("dense<-9223372036854775808>", "tensor<i64>"));
    CHECK(values_of<std::int64_t>(i)[0] == std::numeric_limits<std::int64_t>::min());
  }
  SUBCASE("booleans") {
    Literal b = first_constant(constant_program("dense<[true, false, true]>", "tensor<3xi1>"));
    CHECK(values_of<bool>(b) == std::vector<bool>{true, false, true});
    Literal s = first_constant(constant_program("dense<true>", "tensor<2xi1>"));
    CHECK(values_of<bool>(s) == std::vector<bool>{true, true});
  }
  SUBCASE("half floats round correctly") {
    Literal h =
        first_constant(constant_program("dense<[1.000000e-01, 6.550400e+04]>", "tensor<2xf16>"));
    CHECK(std::bit_cast<std::uint16_t>(values_of<f16>(h)[0]) == 0x2E66);  // nearest f16 to 0.1
    CHECK(static_cast<float>(values_of<f16>(h)[1]) == 65504.0f);
    Literal b = first_constant(constant_program("dense<-3.261720e-01>", "tensor<bf16>"));
    CHECK(static_cast<float>(values_of<bf16>(b)[0]) == -0.326171875f);
  }
  SUBCASE("hex bit patterns, nan and inf") {
    Literal f = first_constant(constant_program(
        "dense<[0x7FC00000, 0xFF800000, 0x80000000, 0x3F800000]>", "tensor<4xf32>"));
    const std::vector<float> v = values_of<float>(f);
    CHECK(std::bit_cast<std::uint32_t>(v[0]) == 0x7FC00000u);
    CHECK(v[1] == -std::numeric_limits<float>::infinity());
    CHECK(std::bit_cast<std::uint32_t>(v[2]) == 0x80000000u);  // -0.0 keeps its sign
    CHECK(v[3] == 1.0f);
    Literal h = first_constant(constant_program("dense<0x7E00>", "tensor<bf16>"));
    CHECK(std::bit_cast<std::uint16_t>(values_of<bf16>(h)[0]) == 0x7E00);
    Literal d = first_constant(constant_program("dense<0xFFF0000000000000>", "tensor<f64>"));
    CHECK(values_of<double>(d)[0] == -std::numeric_limits<double>::infinity());
    Literal w = first_constant(constant_program("dense<[nan, inf, -inf, -nan]>", "tensor<4xf64>"));
    const std::vector<double> wv = values_of<double>(w);
    CHECK(std::isnan(wv[0]));
    CHECK(wv[1] == std::numeric_limits<double>::infinity());
    CHECK(wv[2] == -std::numeric_limits<double>::infinity());
    CHECK((std::isnan(wv[3]) && std::signbit(wv[3])));
    Literal i = first_constant(constant_program("dense<0xFF>", "tensor<i8>"));
    CHECK(values_of<std::int8_t>(i)[0] == -1);
  }
  SUBCASE("complex pairs") {
    Literal c = first_constant(
        constant_program("dense<[(1.0, 2.0), (0x7FC00000, -3.5)]>", "tensor<2xcomplex<f32>>"));
    const std::vector<c64> v = values_of<c64>(c);
    CHECK(v[0] == c64(1.0f, 2.0f));
    CHECK(std::isnan(v[1].real()));
    CHECK(v[1].imag() == -3.5f);
    Literal s = first_constant(
        constant_program("dense<(0.000000e+00,1.000000e+00)>", "tensor<complex<f64>>"));
    CHECK(values_of<c128>(s)[0] == c128(0.0, 1.0));
  }
  SUBCASE("hex blobs are little-endian raw bytes") {
    Literal f = first_constant(constant_program("dense<\"0x0000803F00000040\">", "tensor<2xf32>"));
    CHECK(values_of<float>(f) == std::vector<float>{1.0f, 2.0f});
    Literal s = first_constant(constant_program("dense<\"0x0100\">", "tensor<3xi16>"));  // splat
    CHECK(values_of<std::int16_t>(s) == std::vector<std::int16_t>{1, 1, 1});
    Literal b = first_constant(constant_program("dense<\"0x000102\">", "tensor<3xi1>"));
    CHECK(values_of<bool>(b) == std::vector<bool>{false, true, true});
    Literal c =
        first_constant(constant_program("dense<\"0x0000803F000000C0\">", "tensor<complex<f32>>"));
    CHECK(values_of<c64>(c)[0] == c64(1.0f, -2.0f));
  }
  SUBCASE("empty tensors") {
    Literal e = first_constant(constant_program("dense<>", "tensor<2x0x1xf32>"));
    CHECK(e.shape() == Shape(kF32, {2, 0, 1}));
    Literal l = first_constant(constant_program("dense<[]>", "tensor<0xi32>"));
    CHECK(l.element_count() == 0);
  }
}

TEST_CASE("stablehlo: multi-result values, calls and private functions") {
  const char* text = R"(
    module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
      func.func public @main(%x: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = ""}) {
        %0:2 = call @pair(%x) : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
        %1 = func.call @twice(%0#1) : (tensor<3xf32>) -> tensor<3xf32>
        %a, %b = call @pair(%1) : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
        %2 = stablehlo.subtract %0#0, %b : tensor<3xf32>
        return %2 : tensor<3xf32>
      }
      func.func private @pair(%arg0: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
        %0 = stablehlo.negate %arg0 : tensor<3xf32>
        return %arg0, %0 : tensor<3xf32>, tensor<3xf32>
      }
      func.func private @twice(%arg0: tensor<3xf32>) -> tensor<3xf32> {
        %0:2 = call @pair(%arg0) : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
        %1 = stablehlo.add %arg0, %arg0 : tensor<3xf32>
        return %1 : tensor<3xf32>
      }
    })";
  const stablehlo::Module m = parse_ok(text);
  CHECK(m.name == "jit_f");
  REQUIRE(m.functions.size() == 3);
  CHECK(m.functions[0].name == "main");
  CHECK(m.functions[0].visibility == stablehlo::Visibility::kPublic);
  CHECK(m.functions[1].visibility == stablehlo::Visibility::kPrivate);
  const Graph g = *m.main();
  // @pair inlined three times (one negate each, once through @twice), @twice once.
  CHECK(count_ops(g, OpCode::kNegate) == 3);
  CHECK(count_ops(g, OpCode::kAdd) == 1);
  CHECK(count_ops(g, OpCode::kSubtract) == 1);
  CHECK(g.num_parameters() == 1);
  const Node& sub = first_node(g, OpCode::kSubtract);
  CHECK(g.node(sub.operands[0]).op == OpCode::kParameter);  // %0#0 is @pair's %arg0: %x
  CHECK(g.node(sub.operands[1]).op == OpCode::kNegate);
  CHECK(m.function("pair")->outputs().size() == 2);
  CHECK(m.function("nope").status().code() == StatusCode::kNotFound);
  CHECK(parse_stablehlo(text, "nope").status().code() == StatusCode::kNotFound);
  // Another entry point.
  const Graph twice = graph_ok(text, "twice");
  CHECK(count_ops(twice, OpCode::kAdd) == 1);
}

TEST_CASE("stablehlo: reduce in all its forms") {
  const char* pretty = R"(
    func.func @main(%x: tensor<4x5xf32>, %i: tensor<4x5xi32>) -> (tensor<5xf32>, tensor<5xi32>, tensor<4xf32>) {
      %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %c = stablehlo.constant dense<0> : tensor<i32>
      %0:2 = stablehlo.reduce(%x init: %cst), (%i init: %c) across dimensions = [0] : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<5xf32>, tensor<5xi32>)
       reducer(%a: tensor<f32>, %b: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>)  {
        %1 = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %2 = stablehlo.select %1, %a, %b : tensor<i1>, tensor<f32>
        %3 = stablehlo.select %1, %ai, %bi : tensor<i1>, tensor<i32>
        stablehlo.return %2, %3 : tensor<f32>, tensor<i32>
      }
      %4 = stablehlo.reduce(%x init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
      return %0#0, %0#1, %4 : tensor<5xf32>, tensor<5xi32>, tensor<4xf32>
    })";
  const char* generic = R"(
    func.func @main(%x: tensor<4x5xf32>, %i: tensor<4x5xi32>) -> (tensor<5xf32>, tensor<5xi32>, tensor<4xf32>) {
      %cst = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
      %c = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %0:2 = "stablehlo.reduce"(%x, %i, %cst, %c) ({
      ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
        %1 = "stablehlo.compare"(%a, %b) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %2 = "stablehlo.select"(%1, %a, %b) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
        %3 = "stablehlo.select"(%1, %ai, %bi) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
        "stablehlo.return"(%2, %3) : (tensor<f32>, tensor<i32>) -> ()
      }) {dimensions = array<i64: 0>} : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<5xf32>, tensor<5xi32>)
      %4 = "stablehlo.reduce"(%x, %cst) ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %5 = "stablehlo.maximum"(%p, %q) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%5) : (tensor<f32>) -> ()
      }) {dimensions = dense<1> : tensor<1xi64>} : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
      "func.return"(%0#0, %0#1, %4) : (tensor<5xf32>, tensor<5xi32>, tensor<4xf32>) -> ()
    })";
  const Graph a = graph_ok(pretty);
  const Graph b = graph_ok(generic);
  CHECK(fingerprint(a) == fingerprint(b));
  CHECK(count_ops(a, OpCode::kReduce) == 2);
  const Node& argmax = first_node(a, OpCode::kReduce);
  REQUIRE(argmax.results.size() == 2);
  CHECK(argmax.results[1] == Shape(kS32, {5}));
  const Graph& body = argmax.bodies[0];
  REQUIRE(body.num_parameters() == 4);
  // Accumulators first (f32, i32), then elements (f32, i32).
  CHECK(body.shape(body.parameters()[1]) == Shape(kS32, {}));
  CHECK(body.shape(body.parameters()[2]) == Shape(kF32, {}));
  check_round_trip(a);
}

TEST_CASE("stablehlo: the pretty and the generic form of a program are the same graph") {
  const std::string sig =
      "(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>, %k: tensor<i32>) -> (tensor<2x4xf32>, "
      "tensor<4x4xf32>, tensor<4x2xf32>, tensor<2x3xf32>, tensor<1x3xf32>, tensor<4x2xf32>, "
      "tensor<2x3xf32>, tensor<1x2xf32>)";
  const std::string ret =
      "  return %0, %4, %5, %15, %21, %22, %23, %16 : tensor<2x4xf32>, tensor<4x4xf32>, "
      "tensor<4x2xf32>, tensor<2x3xf32>, tensor<1x3xf32>, tensor<4x2xf32>, tensor<2x3xf32>, "
      "tensor<1x2xf32>\n";
  const std::string pretty_body = R"(
      %0 = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      %1 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
      %2 = stablehlo.compare  LT, %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
      %3 = stablehlo.concatenate %x, %x, dim = 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
      %cst = stablehlo.constant dense<1.5> : tensor<f32>
      %4 = stablehlo.pad %x, %cst, low = [1, -1], high = [1, 0], interior = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>
      %5 = stablehlo.slice %4 [0:4, 1:4:2] : (tensor<4x4xf32>) -> tensor<4x2xf32>
      %6 = stablehlo.dynamic_slice %x, %k, %k, sizes = [1, 2] : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>
      %7 = stablehlo.dynamic_update_slice %x, %6, %k, %k : (tensor<2x3xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
      %8 = stablehlo.iota dim = 0 : tensor<6xi32>
      %9 = stablehlo.complex %x, %7 : tensor<2x3xcomplex<f32>>
      %10 = stablehlo.bitcast_convert %x : (tensor<2x3xf32>) -> tensor<2x3xui32>
      %11 = stablehlo.convert %x : (tensor<2x3xf32>) -> tensor<2x3xf64>
      %12 = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
      %13 = stablehlo.reverse %7, dims = [0, 1] : tensor<2x3xf32>
      %14 = stablehlo.clamp %cst, %13, %cst : (tensor<f32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
      %15 = stablehlo.select %2, %14, %x : tensor<2x3xi1>, tensor<2x3xf32>
      %16 = stablehlo.broadcast_in_dim %6, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<1x2xf32>
      %17 = stablehlo.real %9 : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
      %18 = stablehlo.dot %x, %y : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      %19 = stablehlo.transpose %y, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
      %20 = stablehlo.reduce(%19 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
      %21 = stablehlo.broadcast %20, sizes = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
      %22 = stablehlo.abs %5 : tensor<4x2xf32>
      %23 = stablehlo.exponential %17 : tensor<2x3xf32>
)";
  const std::string generic_body = R"(
      %0 = "stablehlo.dot_general"(%x, %y) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      %1 = "stablehlo.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
      %2 = "stablehlo.compare"(%x, %x) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
      %3 = "stablehlo.concatenate"(%x, %x) <{dimension = 1 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
      %cst = "stablehlo.constant"() <{value = dense<1.500000e+00> : tensor<f32>}> : () -> tensor<f32>
      %4 = "stablehlo.pad"(%x, %cst) <{edge_padding_high = array<i64: 1, 0>, edge_padding_low = array<i64: 1, -1>, interior_padding = array<i64: 0, 1>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>
      %5 = "stablehlo.slice"(%4) <{limit_indices = array<i64: 4, 4>, start_indices = array<i64: 0, 1>, strides = array<i64: 1, 2>}> : (tensor<4x4xf32>) -> tensor<4x2xf32>
      %6 = "stablehlo.dynamic_slice"(%x, %k, %k) <{slice_sizes = array<i64: 1, 2>}> : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>
      %7 = "stablehlo.dynamic_update_slice"(%x, %6, %k, %k) : (tensor<2x3xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
      %8 = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<6xi32>
      %9 = "stablehlo.complex"(%x, %7) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xcomplex<f32>>
      %10 = "stablehlo.bitcast_convert"(%x) : (tensor<2x3xf32>) -> tensor<2x3xui32>
      %11 = "stablehlo.convert"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf64>
      %12 = "stablehlo.reshape"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
      %13 = "stablehlo.reverse"(%7) <{dimensions = array<i64: 0, 1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %14 = "stablehlo.clamp"(%cst, %13, %cst) : (tensor<f32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
      %15 = "stablehlo.select"(%2, %14, %x) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %16 = "stablehlo.broadcast_in_dim"(%6) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<1x2xf32>) -> tensor<1x2xf32>
      %17 = "stablehlo.real"(%9) : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
      %18 = "stablehlo.dot"(%x, %y) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      %19 = "stablehlo.transpose"(%y) {permutation = dense<[1, 0]> : tensor<2xi64>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
      %20 = "stablehlo.reduce"(%19, %cst) ({
      ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):
        %s = "stablehlo.add"(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%s) : (tensor<f32>) -> ()
      }) {dimensions = array<i64: 0>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
      %21 = "stablehlo.broadcast"(%20) {broadcast_sizes = array<i64: 1>} : (tensor<3xf32>) -> tensor<1x3xf32>
      %22 = "stablehlo.abs"(%5) : (tensor<4x2xf32>) -> tensor<4x2xf32>
      %23 = "stablehlo.exponential"(%17) : (tensor<2x3xf32>) -> tensor<2x3xf32>
)";
  const Graph p = graph_ok(program(sig, pretty_body + ret));
  const Graph g = graph_ok(program(sig, generic_body + ret));
  CHECK(fingerprint(p) == fingerprint(g));
  CHECK(p.num_nodes() == 3 + 25);
  CHECK(count_ops(p, OpCode::kDotGeneral) == 2);
  CHECK(count_ops(p, OpCode::kBroadcastInDim) == 2);
  const Node& cmp = first_node(p, OpCode::kCompare);
  CHECK(cmp.attr<CompareAttrs>().direction == ComparisonDirection::kLt);
  CHECK(cmp.attr<CompareAttrs>().type == ComparisonType::kNotype);  // absent: the default
  const Node& slice = first_node(p, OpCode::kSlice);
  CHECK(slice.attr<SliceAttrs>().strides == std::vector<std::int64_t>{1, 2});
  const Node& pad = first_node(p, OpCode::kPad);
  CHECK(pad.attr<PadAttrs>().edge_padding_low == std::vector<std::int64_t>{1, -1});
  check_round_trip(p);
}

TEST_CASE("stablehlo: CHLO element-wise ops in the pretty and the generic form") {
  const std::string sig =
      "(%x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)";
  const std::string ret = "  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>\n";
  const Graph pretty = graph_ok(
      program(sig,
              "  %0 = chlo.erf_inv %x : tensor<2xf32> -> tensor<2xf32>\n"
              "  %1 = chlo.next_after %x, %y : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>\n"
              "  %2 = chlo.tan %0 : tensor<2xf32> -> tensor<2xf32>\n" +
                  ret));
  const Graph generic = graph_ok(program(
      sig,
      "  %0 = \"chlo.erf_inv\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  %1 = \"chlo.next_after\"(%x, %y) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
      "  %2 = \"chlo.tan\"(%0) : (tensor<2xf32>) -> tensor<2xf32>\n" +
          ret));
  CHECK(fingerprint(pretty) == fingerprint(generic));
  CHECK(count_ops(pretty, OpCode::kErfInv) == 1);
  CHECK(count_ops(pretty, OpCode::kNextAfter) == 1);
  CHECK(count_ops(pretty, OpCode::kTan) == 1);  // chlo.tan is stablehlo.tan
  const std::string text = to_stablehlo(pretty);
  CHECK(text.find("chlo.erf_inv %") != std::string::npos);
  CHECK(text.find("chlo.next_after %") != std::string::npos);
  CHECK(text.find("stablehlo.tan %") != std::string::npos);
  check_round_trip(pretty);
  // A CHLO op under the wrong dialect is unknown; a wrong type names the op.
  check_invalid(parse_status(program("(%x: tensor<2xf32>) -> tensor<2xf32>",
                                     "  %0 = stablehlo.erf %x : tensor<2xf32>\n"
                                     "  return %0 : tensor<2xf32>\n")),
                "2:8", "unknown op stablehlo.erf");
  check_invalid(parse_status(program("(%x: tensor<2xi32>) -> tensor<2xi32>",
                                     "  %0 = chlo.lgamma %x : tensor<2xi32> -> tensor<2xi32>\n"
                                     "  return %0 : tensor<2xi32>\n")),
                "2", "lgamma");
}

TEST_CASE("stablehlo: attributes that do not change meaning are ignored") {
  const Graph plain = graph_ok(program("(%arg0: tensor<2xf32>) -> tensor<2xf32>",
                                       "  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n"
                                       "  return %0 : tensor<2xf32>\n"));
  const Graph noisy = graph_ok(R"(// A comment
#loc = loc(unknown)
#loc1 = loc("x.py":3:4)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32, mhlo.frontend_attributes = {a = "b"}} {
  func.func public @main(%arg0: tensor<2xf32> {mhlo.sharding = "{replicated}", jax.arg_info = "x", mhlo.layout_mode = "default"} loc("x")) -> (tensor<2xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) attributes {jax.uses_shape_polymorphism = false} {
    %0 = stablehlo.add %arg0, %arg0 {mhlo.frontend_attributes = {_xla = "1"}} : tensor<2xf32> loc(#loc1) // trailing
    return %0 : tensor<2xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
{-#
  dialect_resources: { builtin: { blob: "0x01" } }
#-}
)");
  CHECK(fingerprint(plain) == fingerprint(noisy));
  // A sharding constraint is the value itself on one device.
  const Graph sharded = graph_ok(R"(
    func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
      %s = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{replicated}"} : (tensor<2xf32>) -> tensor<2xf32>
      %0 = stablehlo.add %s, %s : tensor<2xf32>
      return %0 : tensor<2xf32>
    })");
  CHECK(fingerprint(plain) == fingerprint(sharded));
}

// ---- Syntax other tools write ---------------------------------------------------------------

TEST_CASE("stablehlo: a trailing comma in #stablehlo.scatter and #stablehlo.gather, as StableHLO's parser allows") {
  const auto gather = [](std::string_view trailing) {
    return str_cat(R"(func.func @main(%x: tensor<3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x4xf32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1)",
                   trailing, R"(>, slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
)");
  };
  const auto scatter = [](std::string_view trailing) {
    return str_cat(R"(func.func @main(%x: tensor<3xf32>, %i: tensor<1x1xi32>, %u: tensor<1xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1)",
                   trailing, R"(>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<3xf32>, tensor<1x1xi32>, tensor<1xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
)");
  };
  for (const auto& make : {std::function<std::string(std::string_view)>(gather), std::function<std::string(std::string_view)>(scatter)}) {
    StatusOr<Graph> plain = parse_stablehlo(make(""));
    StatusOr<Graph> trailing = parse_stablehlo(make(","));
    REQUIRE_MESSAGE(plain.ok(), plain.status().to_string());
    REQUIRE_MESSAGE(trailing.ok(), trailing.status().to_string());
    CHECK(fingerprint(*plain) == fingerprint(*trailing));
    // Two commas, or a comma with nothing before it, are still errors.
    CHECK(parse_status(make(",,")).code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("stablehlo: the check dialect's parenthesized form reads as its plain form") {
  const auto with_check = [](std::string_view check) {
    return str_cat("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  ", check,
                   "\n  return %x : tensor<2xf32>\n}\n");
  };
  const std::pair<std::string_view, std::string_view> forms[] = {
      {"check.expect_eq_const %x, dense<[1.0, 2.0]> : tensor<2xf32>",
       "check.expect_eq_const(%x, dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>"},
      {"check.expect_close %x, %x : tensor<2xf32>", "check.expect_close(%x, %x) : tensor<2xf32>"},
      {"check.expect_almost_eq_const %x, dense<0.5> : tensor<2xf32>, tolerance = 1.0e-3 : f64",
       "check.expect_almost_eq_const(%x, dense<0.5> : tensor<2xf32>, tolerance = 1.0e-3 : f64) : tensor<2xf32>"},
  };
  for (const auto& form : forms) {
    // Named, not a structured binding: clang 14 cannot capture a binding in a lambda.
    const std::string_view plain_form = form.first, parenthesized_form = form.second;
    CAPTURE(parenthesized_form);
    StatusOr<stablehlo::Module> plain = stablehlo::parse_module(with_check(plain_form));
    StatusOr<stablehlo::Module> parenthesized = stablehlo::parse_module(with_check(parenthesized_form));
    REQUIRE_MESSAGE(plain.ok(), plain.status().to_string());
    REQUIRE_MESSAGE(parenthesized.ok(), parenthesized.status().to_string());
    const stablehlo::Function& a = *plain->find("main");
    const stablehlo::Function& b = *parenthesized->find("main");
    REQUIRE(a.checks.size() == 1);
    REQUIRE(b.checks.size() == 1);
    CHECK(a.checks[0].target == b.checks[0].target);
    CHECK(a.checks[0].expected_literal.has_value() == b.checks[0].expected_literal.has_value());
    if (a.checks[0].expected_literal && b.checks[0].expected_literal)
      CHECK(*a.checks[0].expected_literal == *b.checks[0].expected_literal);
    CHECK(fingerprint(a.graph) == fingerprint(b.graph));
  }
  check_invalid(parse_status(with_check("check.expect_eq_const(%x, dense<[1.0, 2.0]> : tensor<2xf32> : tensor<2xf32>")),
                "2:63", "expected ')' after the operands of check.expect_eq_const");
}

TEST_CASE("stablehlo: arith.constant with a dense value is a constant, and cf branches are refused by name") {
  const std::string arith = program("() -> tensor<2xi32>",
                                    "  %0 = arith.constant dense<[3, -4]> : tensor<2xi32>\n  return %0 : tensor<2xi32>\n");
  StatusOr<Graph> g = parse_stablehlo(arith);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  StatusOr<Graph> same = parse_stablehlo(constant_program("dense<[3, -4]>", "tensor<2xi32>"));
  REQUIRE(same.ok());
  CHECK(fingerprint(*g) == fingerprint(*same));
  for (std::string_view branch : {"cf.br ^bb1", "cf.cond_br %p, ^bb1, ^bb2"}) {
    const std::string text =
        program("(%p: tensor<i1>) -> tensor<i1>", str_cat("  ", branch, "\n  return %p : tensor<i1>\n"));
    const Status s = parse_status(text);
    CHECK_MESSAGE(s.code() == StatusCode::kUnimplemented, s.to_string());
    CHECK_MESSAGE(contains(s.message(), branch.substr(0, branch.find(' '))), s.to_string());
  }
}

// ---- Checks --------------------------------------------------------------------------------

TEST_CASE("stablehlo: check calls become checks and extra outputs") {
  const char* text = R"(
    module {
      func.func public @main() -> tensor<2xf32> {
        %0:2 = call @inputs() : () -> (tensor<2xf32>, tensor<2xf32>)
        %1 = stablehlo.add %0#0, %0#1 : tensor<2xf32>
        stablehlo.custom_call @check.expect_close(%1, %0#0) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
        "stablehlo.custom_call"(%1, %0#1) {call_target_name = "check.expect_almost_eq", has_side_effect = true, tolerance = 1.0e-2 : f32} : (tensor<2xf32>, tensor<2xf32>) -> ()
        check.expect_eq_const %1, dense<[1.0, 2.0]> : tensor<2xf32>
        stablehlo.custom_call @check.expect_eq_const(%0#0) {value = dense<3> : tensor<2xi32>} : (tensor<2xf32>) -> ()
        return %1 : tensor<2xf32>
      }
      func.func private @inputs() -> (tensor<2xf32>, tensor<2xf32>) {
        %cst = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
        %cst_0 = stablehlo.constant dense<0.0> : tensor<2xf32>
        stablehlo.custom_call @check.expect_eq(%cst, %cst) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
        return %cst, %cst_0 : tensor<2xf32>, tensor<2xf32>
      }
    })";
  // The last check compares f32 with an i32 constant: a type error naming its line.
  check_invalid(parse_status(text), "9:9", "expected constant has tensor<2xi32>");

  std::string fixed(text);
  fixed.replace(fixed.find("dense<3> : tensor<2xi32>"), 24, "dense<3.0> : tensor<2xf32>");
  const stablehlo::Module m = parse_ok(fixed);
  const stablehlo::Function& main = *m.find("main");
  CHECK(main.num_results == 1);
  // @inputs' own check comes first (it ran first), then main's four.
  REQUIRE(main.checks.size() == 5);
  const stablehlo::Check& inner = main.checks[0];
  CHECK(inner.kind == stablehlo::CheckKind::kEq);
  CHECK(inner.line == 15);
  const stablehlo::Check& close = main.checks[1];
  CHECK(close.kind == stablehlo::CheckKind::kClose);
  CHECK(close.target == "check.expect_close");
  CHECK(close.line == 6);
  const stablehlo::Check& almost = main.checks[2];
  CHECK(almost.kind == stablehlo::CheckKind::kAlmostEq);
  REQUIRE(almost.attributes.size() == 1);
  CHECK(almost.attributes[0].first == "tolerance");
  const stablehlo::Check& eq_const = main.checks[3];
  CHECK(eq_const.kind == stablehlo::CheckKind::kEq);
  CHECK(eq_const.target == "check.expect_eq_const");
  CHECK_FALSE(eq_const.expected.valid());
  REQUIRE(eq_const.expected_literal.has_value());
  CHECK(values_of<float>(*eq_const.expected_literal) == std::vector<float>{1.0f, 2.0f});
  CHECK(eq_const.expected_output == -1);
  REQUIRE(main.checks[4].expected_literal.has_value());
  CHECK(values_of<float>(*main.checks[4].expected_literal) == std::vector<float>{3.0f, 3.0f});

  // Outputs: the result, then each check's values in order.
  const Graph& g = main.graph;
  REQUIRE(g.outputs().size() == 1 + 2 + 2 + 2 + 1 + 1);
  CHECK(close.actual_output == 3);
  CHECK(close.expected_output == 4);
  CHECK(g.outputs()[3] == close.actual);
  CHECK(g.outputs()[4] == close.expected);
  CHECK(g.node(close.actual).op == OpCode::kAdd);
  CHECK(g.outputs()[static_cast<std::size_t>(eq_const.actual_output)] == eq_const.actual);
  // The check dialect's own spelling, with a field.
  const stablehlo::Module d =
      parse_ok(program("(%a: tensor<2xf32>) -> tensor<2xf32>",
                       "  check.expect_almost_eq %a, %a, tolerance = 1.0e-3 : tensor<2xf32>\n"
                       "  return %a : tensor<2xf32>\n"));
  REQUIRE(d.find("main")->checks.size() == 1);
  CHECK(d.find("main")->checks[0].kind == stablehlo::CheckKind::kAlmostEq);
  CHECK(d.find("main")->checks[0].attributes ==
        std::vector<std::pair<std::string, std::string>>{{"tolerance", "1.0e-3"}});
  check_unsupported(parse_status(program("(%a: tensor<2xf32>) -> tensor<2xf32>",
                                         "  check.expect_serialized_eq %a : tensor<2xf32>\n"
                                         "  return %a : tensor<2xf32>\n")),
                    "check.expect_serialized_eq", 2);
  // parse_stablehlo keeps only the function's results.
  const Graph plain = graph_ok(fixed);
  CHECK(plain.outputs().size() == 1);
  CHECK(plain.num_nodes() == g.num_nodes());
}

// ---- Unsupported and malformed input ----------------------------------------------------------

TEST_CASE("stablehlo: ops and types the IR lacks are UNIMPLEMENTED") {
  check_unsupported(parse_status(program("(%a: tensor<3xf32>) -> tensor<3xf32>", R"(
  %0 = "stablehlo.rng"(%a, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
)")),
                    "stablehlo.rng", 3);
  check_unsupported(parse_status(program("(%a: tensor<3xf32>) -> tensor<3xi1>",
                                         "  %0 = chlo.is_inf %a : tensor<3xf32> -> tensor<3xi1>\n"
                                         "  return %0 : tensor<3xi1>\n")),
                    "chlo.is_inf", 2);
  check_unsupported(parse_status(program(
                        "(%a: tensor<3xf32>) -> tensor<3xf32>",
                        "  %0 = stablehlo.custom_call @foo(%a) : (tensor<3xf32>) -> tensor<3xf32>\n"
                        "  return %0 : tensor<3xf32>\n")),
                    "stablehlo.custom_call @foo", 2);
  // A '?' is refined from argument shapes (stablehlo_exports_test.cpp); without them it is
  // named.
  check_invalid(parse_status(program("(%a: tensor<?xf32>) -> tensor<?xf32>",
                                     "  return %a : tensor<?xf32>\n")),
                "1:17", "a shape-polymorphic function needs concrete argument shapes");
  check_unsupported(parse_status(program("(%a: tensor<2xtf32>) -> tensor<2xtf32>",
                                         "  return %a : tensor<2xtf32>\n")),
                    "the element type tf32", 1);
  check_unsupported(parse_status(program("(%a: !stablehlo.buffer) -> !stablehlo.buffer",
                                         "  return %a : !stablehlo.buffer\n")),
                    "type !stablehlo.buffer", 1);
  // i1 is one bit: three of them make no i8.
  check_invalid(parse_status(program("(%a: tensor<3xi1>) -> tensor<3xi8>",
                                     "  %0 = stablehlo.bitcast_convert %a : (tensor<3xi1>) -> tensor<3xi8>\n"
                                     "  return %0 : tensor<3xi8>\n")),
                "2", "needs a minor dimension of size 8");
  {
    // i1 to i1 is the identity.
    const Graph g = graph_ok(program("(%a: tensor<3xi1>) -> tensor<3xi1>",
                                     "  %0 = stablehlo.bitcast_convert %a : tensor<3xi1>\n"
                                     "  return %0 : tensor<3xi1>\n"));
    std::vector<Literal> args;
    args.push_back(Literal::vector<bool>({true, false, true}));
    CHECK(reference::evaluate(g, args).value()[0] == args[0]);
  }
  check_unsupported(parse_status(program("(%a: tensor<2xf32>) -> tensor<2xf32>", R"(
  %0 = "stablehlo.dot_general"(%a, %a) <{dot_dimension_numbers = #stablehlo.dot<>, algorithm = #stablehlo.dot_algorithm<lhs_precision_type = tf32, rhs_precision_type = tf32, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1, allow_imprecise_accumulation = false>}> : (tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %a : tensor<2xf32>
)")),
                    "stablehlo.dot_general with an algorithm", 3);
}

TEST_CASE("stablehlo: malformed input is INVALID_ARGUMENT with line:column") {
  const std::string good = program("(%arg0: tensor<2xf32>) -> tensor<2xf32>",
                                   "  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n"
                                   "  return %0 : tensor<2xf32>\n");
  SUBCASE("truncated text") {
    // Every prefix fails cleanly, but for the empty module and the two that end right after a
    // signature (a valid declaration of an external function); a few with their message.
    for (std::size_t n = 0; n < good.size() - 1; ++n) {
      const std::string_view prefix = std::string_view(good).substr(0, n);
      const Status s = parse_status(prefix);
      std::string_view trimmed = prefix;
      while (trimmed.ends_with(' ')) trimmed.remove_suffix(1);
      if (n == 0 || trimmed == "func.func @main(%arg0: tensor<2xf32>)" ||
          trimmed == "func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32>") {
        CHECK_MESSAGE(s.ok(), "prefix ", n, ": ", s);
        continue;
      }
      CHECK_MESSAGE(s.code() == StatusCode::kInvalidArgument, "prefix ", n, ": ", s);
    }
    check_invalid(parse_status(good.substr(0, good.find(": tensor<2xf32>\n  return"))), "2:35",
                  "expected ':' before the type of stablehlo.add, found end of input");
    check_invalid(parse_status(good.substr(0, good.size() - 2)), "4:1",
                  "expected '}' after the return, found end of input");
  }
  SUBCASE("unknown type") {
    check_invalid(parse_status(program("(%arg0: tensor<2xfoo>) -> tensor<2xf32>",
                                       "  return %arg0 : tensor<2xf32>\n")),
                  "1:33", "unknown element type 'foo'");
    check_invalid(parse_status(program("(%arg0: memory) -> tensor<2xf32>",
                                       "  return %arg0 : tensor<2xf32>\n")),
                  "1:24", "expected a type such as tensor<2xf32>, found identifier 'memory'");
    check_invalid(parse_status(program("(%arg0: tensor<2f32>) -> tensor<2xf32>",
                                       "  return %arg0 : tensor<2xf32>\n")),
                  "1:32", "expected 'x' after the dimension 2");
  }
  // One line of @main(%arg0: tensor<2xf32>) -> tensor<2xf32>, returning its result %0.
  const auto f32_line = [](std::string_view line) {
    return program("(%arg0: tensor<2xf32>) -> tensor<2xf32>", str_cat("  ", line, "\n  return %0 : tensor<2xf32>\n"));
  };
  struct Malformed {
    std::string text;
    std::string_view position, fragment;
  };
  const auto check_all = [](const std::vector<Malformed>& cases) {
    for (const Malformed& m : cases) {
      CAPTURE(m.text);
      check_invalid(parse_status(m.text), m.position, m.fragment);
    }
  };
  SUBCASE("mismatched result type") {
    check_all({
        {f32_line("%0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>"), "2:8",
         "operand 0 has type tensor<2xf32> but the op's type says tensor<3xf32>"},
        {program("(%arg0: tensor<2x3xf32>) -> tensor<2xf32>",
                 "  %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
                 "  return %0 : tensor<2xf32>\n"),
         "2:8", "result 0 is declared tensor<2x3xf32> but the operands give tensor<3x2xf32>"},
        {program("(%arg0: tensor<2xf32>) -> tensor<2xf64>", "  return %arg0 : tensor<2xf32>\n"), "2:3",
         "@main returns tensor<2xf32> as result 0 but its signature declares tensor<2xf64>"},
        {f32_line("%0 = stablehlo.compare  LT, %arg0, %arg0,  SIGNED : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>"),
         "2:8", "compare type SIGNED does not fit element type f32"},
    });
  }
  SUBCASE("undefined or misused values") {
    check_all({
        {f32_line("%0 = stablehlo.add %arg0, %arg1 : tensor<2xf32>"), "2:29", "use of undefined value %arg1"},
        {f32_line("%0 = stablehlo.add %arg0, %arg0#1 : tensor<2xf32>"), "2:29",
         "%arg0 has 1 result(s); %arg0#1 is out of range"},
        {program("(%arg0: tensor<2xf32>) -> tensor<2xf32>",
                 "  %arg0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n  return %arg0 : tensor<2xf32>\n"),
         "2:3", "redefinition of %arg0"},
        {f32_line("%0:2 = stablehlo.add %arg0, %arg0 : tensor<2xf32>"), "2:3", "the op has 1 result(s) but 2 are named"},
    });
  }
  SUBCASE("wrong operand count") {
    check_all({
        {f32_line("%0 = stablehlo.add %arg0 : tensor<2xf32>"), "2:28", "expected ',' after operand, found ':'"},
        {f32_line("%0 = stablehlo.negate %arg0, %arg0 : tensor<2xf32>"), "2:32",
         "stablehlo.negate takes 1 operand(s), found more"},
        {f32_line("%0 = \"stablehlo.add\"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>"), "2:8",
         "add: takes 2 operand(s), got 1"},
    });
  }
  SUBCASE("bad dense literals") {
    check_all({
        {constant_program("dense<[1.0, 2.0]>", "tensor<3xf32>"), "2:33", "dense literal has 2 entries in dimension 0 but tensor<3xf32> has 3"},
        {constant_program("dense<[1, x]>", "tensor<2xi32>"), "2:37", "expected an integer for i32, found 'x'"},
        {constant_program("dense<300>", "tensor<ui8>"), "2:33", "integer 300 is out of range for ui8"},
        {constant_program("dense<1.5>", "tensor<i32>"), "2:33", "expected an integer for i32, found '1.5'"},
        {constant_program("dense<[[1, 2], 3]>", "tensor<2x2xi32>"), "2:42", "a dense list mixes nested lists and elements"},
        {constant_program("dense<\"0x0102\">", "tensor<3xf32>"), "2:33", "hex blob has 2 bytes but tensor<3xf32> needs 12"},
        {constant_program("dense<0x1FFFF>", "tensor<f16>"), "2:33", "hex value 0x1FFFF does not fit in the 16 bits of f16"},
        {constant_program("dense<1.0>", "tensor<complex<f32>>"), "2:33", "expected a complex element (re, im) for complex<f32>"},
        {constant_program("dense<[1, 2]", "tensor<2xi32>"), "2:40", "expected '>' to end the dense literal, found ':'"},
    });
  }
  SUBCASE("other syntax errors") {
    check_all({
        {program("(%arg0: tensor<2xf32>) -> tensor<2xf32>", "  %0 = stablehlo.frobnicate %arg0 : tensor<2xf32>\n" "  return %0 : tensor<2xf32>\n"), "2:8", "unknown op stablehlo.frobnicate"},
        {program("(%arg0: tensor<2xf32>) -> tensor<2xf32>", "  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n"), "3:1", "expected an op or a return before '}'"},
        {"func.func @main() {\n  return\n}\nfunc.func @main() {\n  return\n}\n", "4:11", "redefinition of @main (first defined at 1:11)"},
        {program("(%arg0: tensor<2xf32>) -> tensor<2xf32>", "  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n" "  return %0 : tensor<2xf32>\n  %1 = stablehlo.add %0, %0 : tensor<2xf32>\n"), "4:3", "expected '}' after the return, found '%1'"},
        {"func.func @main() {\n  %0 = call @nowhere() : () -> ()\n  return\n}\n", "2:8", "call to undefined function @nowhere"},
        {"module {\n  func.func @main() {\n    return\n  }\n", "5:1", "expected '}' to end the module, found end of input"},
        {"func.func @main() {\n  return \"unterminated\n}\n", "2:10", "unterminated string"},
        {"func.func @f() {\n  return\nfunc.func @main() {\n  return\n}\n", "3:1", "expected '}' after the return, found identifier 'func.func'"},
        {"func.func @main() {\n  func.frobnicate\n}\n", "2:3", "unknown op func.frobnicate"},
        {"module {\n  stablehlo.add\n}\n", "2:3", "expected func.func, found identifier 'stablehlo.add'"},
    });
  }
}

TEST_CASE("stablehlo: limits and pathological input never crash") {
  // A recursive function cannot be inlined.
  CHECK(parse_status("func.func @main() {\n  call @main() : () -> ()\n  return\n}\n").code() ==
        StatusCode::kUnimplemented);
  CHECK(parse_status("func.func @f() {\n  call @g() : () -> ()\n  return\n}\n"
                     "func.func @g() {\n  call @f() : () -> ()\n  return\n}\n")
            .code() == StatusCode::kUnimplemented);
  // A long chain of calls is fine up to the limit, refused beyond it.
  auto chain = [](int n) {
    std::string text;
    for (int i = 0; i < n; ++i)
      text +=
          str_cat("func.func @f", i, "() {\n  ",
                  i + 1 < n ? str_cat("call @f", i + 1, "() : () -> ()\n  ") : "", "return\n}\n");
    return text;
  };
  CHECK(parse_status(chain(50)).ok());
  CHECK(parse_status(chain(200)).code() == StatusCode::kInvalidArgument);
  // Deep nesting of attributes, lists and regions.
  const std::string deep_attr =
      str_cat("func.func @main() attributes {a = ", std::string(10000, '['),
              std::string(10000, ']'), "} {\n  return\n}\n");
  check_invalid(parse_status(deep_attr), "1", "attribute nested deeper than 64");
  const std::string deep_dense = constant_program(
      str_cat("dense<", std::string(5000, '['), "1", std::string(5000, ']'), ">"), "tensor<1xi32>");
  check_invalid(parse_status(deep_dense), "2", "dense literal nested deeper than 64");
  std::string nested = "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n";
  for (int i = 0; i < 40; ++i) {
    const std::string in = i == 0 ? "%x" : str_cat("%a", i - 1),
                      init = i == 0 ? "%x" : str_cat("%b", i - 1);
    nested +=
        str_cat("%r", i, " = stablehlo.reduce(", in, " init: ", init,
                ") across dimensions = [] : (tensor<f32>, tensor<f32>) -> tensor<f32>\n reducer(%a",
                i, ": tensor<f32>, %b", i, ": tensor<f32>) {\n");
  }
  check_invalid(parse_status(nested), "36:1", "regions nest deeper than 16");
  // Sizes: a huge splat is refused, not allocated; huge dims do not overflow.
  CHECK(parse_status(constant_program("dense<0.0>", "tensor<100000x100000x100000xf32>")).code() ==
        StatusCode::kResourceExhausted);
  check_invalid(parse_status(constant_program("dense<0.0>", "tensor<99999999999999999999xf32>")),
                "1:29", "tensor dimension is too large");
  check_invalid(
      parse_status(constant_program("dense<0.0>", "tensor<1000000000x1000000000x1000000000xf32>")),
      "1:22", "byte size overflows int64");
  check_invalid(parse_status(str_cat(
                    "func.func @main(%x: tensor<",
                    [] {
                      std::string s;
                      for (int i = 0; i < 70; ++i) s += "1x";
                      return s;
                    }(),
                    "f32>) {\n  return\n}\n")),
                "1:21", "tensor rank exceeds the limit of 64");
  // Garbage of every kind.
  for (std::string_view junk :
       {"}", "{{{{", "%", "@", "\"", "func.func", "func.func @", "module @m {",
        "func.func @main(%a: tensor<", "#loc = ", "\x01\x02\xff", "{-#", "func.func @main() -> (",
        "dense<", "-> -> ->"}) {
    CAPTURE(junk);
    const Status s = parse_status(junk);
    CHECK((s.ok() || s.code() == StatusCode::kInvalidArgument ||
           s.code() == StatusCode::kUnimplemented));
  }
}

// ---- Round trip ------------------------------------------------------------------------------

TEST_CASE("stablehlo: the printer's text") {
  GraphBuilder b("affine");
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value one = b.broadcast_in_dim(b.constant(1.0f), {2, 3}, {});
  const Graph g = build_ok(b, {b.add(x, one)});
  CHECK(to_stablehlo(g) ==
        "module @affine {\n"
        "  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32>) {\n"
        "    %1 = stablehlo.constant dense<1.0> : tensor<f32>\n"
        "    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>\n"
        "    %3 = stablehlo.add %arg0, %2 : tensor<2x3xf32>\n"
        "    return %3 : tensor<2x3xf32>\n"
        "  }\n"
        "}\n");
  check_round_trip(g);
}

TEST_CASE("stablehlo: round trip of every op and attribute kind") {
  GraphBuilder b("everything");
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value y = b.parameter(Shape(kF32, {2, 3}));
  Value n = b.parameter(Shape(kS32, {2, 3}));
  Value u = b.parameter(Shape(kU16, {2, 3}));
  Value p = b.parameter(Shape(kPred, {2, 3}));
  Value c = b.parameter(Shape(kC64, {3}));
  Value k = b.parameter(Shape(kS64, {}));
  Value h = b.parameter(Shape(kF16, {4}));
  std::vector<Value> out;
  for (std::size_t i = 0; i < kOpCodeCount; ++i) {
    const auto op = static_cast<OpCode>(i);
    if (is_unary(op)) {
      if (op == OpCode::kNot)
        out.push_back(b.unary(op, p)), out.push_back(b.unary(op, n));
      else if (op == OpCode::kPopcnt || op == OpCode::kCountLeadingZeros)
        out.push_back(b.unary(op, u));
      else if (op == OpCode::kReal || op == OpCode::kImag)
        out.push_back(b.unary(op, c));
      else
        out.push_back(b.unary(op, x));
    } else if (is_binary(op)) {
      if (op == OpCode::kAnd || op == OpCode::kOr || op == OpCode::kXor)
        out.push_back(b.binary(op, p, p)), out.push_back(b.binary(op, n, n));
      else if (op == OpCode::kShiftLeft || op == OpCode::kShiftRightArithmetic ||
               op == OpCode::kShiftRightLogical)
        out.push_back(b.binary(op, n, n));
      else
        out.push_back(b.binary(op, x, y));
    }
  }
  out.push_back(b.abs(c));  // complex -> real
  out.push_back(b.sign(n));
  out.push_back(b.add(h, h));
  for (ComparisonDirection d :
       {ComparisonDirection::kEq, ComparisonDirection::kNe, ComparisonDirection::kGe,
        ComparisonDirection::kGt, ComparisonDirection::kLe, ComparisonDirection::kLt})
    out.push_back(b.compare(x, y, d));
  out.push_back(b.compare(x, y, ComparisonDirection::kLt, ComparisonType::kTotalOrder));
  out.push_back(b.compare(n, n, ComparisonDirection::kGe));
  out.push_back(b.compare(u, u, ComparisonDirection::kLe));
  out.push_back(b.compare(p, p, ComparisonDirection::kNe));
  out.push_back(b.op1(OpCode::kCompare, {x, y},
                      CompareAttrs{ComparisonDirection::kGt, ComparisonType::kNotype}));
  out.push_back(b.select(p, x, y));
  out.push_back(b.select(b.compare(k, k, ComparisonDirection::kEq), x, y));  // scalar pred
  out.push_back(b.clamp(b.constant(0.0f), x, b.constant(1.0f)));
  out.push_back(b.clamp(y, x, y));
  for (DType t : kAllDTypes) out.push_back(b.convert(x, t));
  out.push_back(b.convert(c, kC128));
  out.push_back(b.bitcast_convert(x, kS32));
  out.push_back(b.bitcast_convert(x, kF16));  // narrower: a new minor dimension
  out.push_back(b.bitcast_convert(h, kBF16));
  out.push_back(b.bitcast_convert(b.reshape(h, {2, 2}), kU32));  // wider: consumes one
  out.push_back(b.broadcast_in_dim(x, {3, 2, 4, 3}, {1, 3}));
  out.push_back(b.broadcast_in_dim(k, {5}, {}));
  out.push_back(b.reshape(x, {3, 1, 2}));
  out.push_back(b.reshape(k, {1, 1}));
  out.push_back(b.transpose(x, {1, 0}));
  out.push_back(b.slice(x, {0, 1}, {2, 3}));
  out.push_back(b.slice(x, {1, 0}, {2, 3}, {1, 2}));
  out.push_back(b.slice(x, {0, 0}, {0, 0}));
  out.push_back(b.concatenate({x, y, x}, 0));
  out.push_back(b.concatenate({x}, 1));
  out.push_back(b.pad(x, b.constant(-1.0f), {1, -1}, {0, 2}, {1, 0}));
  out.push_back(b.reverse(x, {0, 1}));
  out.push_back(b.reverse(x, {}));
  out.push_back(b.dynamic_slice(x, {k, k}, {1, 2}));
  out.push_back(b.dynamic_update_slice(x, b.slice(y, {0, 0}, {1, 2}), {k, k}));
  out.push_back(b.iota(Shape(kU8, {2, 5}), 1));
  out.push_back(b.iota(Shape(kF32, {7}), 0));
  // Reductions: the applies form, an argmax region with two results, a body that is not a
  // plain binary op, and a reduce inside a reduce's body.
  out.push_back(b.reduce(x, b.constant(0.0f), OpCode::kAdd, {0, 1}));
  out.push_back(b.reduce(p, b.constant(false), OpCode::kOr, {1}));
  for (Value v : b.argmax(x, 1, kS64)) out.push_back(v);
  {
    GraphBuilder body("swapped");
    Value a0 = body.parameter(Shape(kF32, {}));
    Value a1 = body.parameter(Shape(kF32, {}));
    Graph swapped = build_ok(body, {body.subtract(a1, a0)});
    out.push_back(b.reduce(x, b.constant(0.0f), swapped, {0}));
    GraphBuilder outer("outer");
    Value o0 = outer.parameter(Shape(kF32, {}));
    Value o1 = outer.parameter(Shape(kF32, {}));
    Value inner = outer.reduce(o1, o0, std::move(swapped), {});
    Graph nested = build_ok(outer, {outer.maximum(o0, inner)});
    out.push_back(b.reduce(y, b.constant(1.0f), std::move(nested), {1}));
  }
  out.push_back(b.dot_general(b.reshape(x, {1, 2, 3}), b.reshape(y, {1, 3, 2}),
                              DotDimensionNumbers{{0}, {0}, {2}, {1}}));
  out.push_back(b.dot_general(x, y, DotDimensionNumbers{{}, {}, {}, {}}));  // outer product
  out.push_back(b.dot(b.transpose(x, {1, 0}), y));
  out.push_back(b.dot_general(c, c, DotDimensionNumbers{{}, {}, {0}, {0}}));
  // Scatter: defaults left out (index_vector_dim 0, no flags), every field set, a replace
  // body and one with a constant.
  out.push_back(b.scatter(x, b.constant(Literal::vector<std::int32_t>({1})),
                          b.reshape(b.slice(y, {0, 0}, {1, 3}), {3}), OpCode::kParameter,
                          ScatterAttrs{{0}, {0}, {}, {}, {0}, 0, false, false}));
  out.push_back(b.scatter(x, b.reshape(n, {2, 3, 1}), b.reshape(x, {2, 3}), OpCode::kMaximum,
                          ScatterAttrs{{}, {1}, {0}, {0}, {1}, 2, true, true}));
  {
    GraphBuilder body("plus_one");
    Value a0 = body.parameter(Shape(kF32, {}));
    Value a1 = body.parameter(Shape(kF32, {}));
    Graph plus_one = build_ok(body, {body.add(body.add(a0, a1), body.constant(1.0f))});
    out.push_back(b.scatter(x, b.reshape(k, {1}), y, std::move(plus_one),
                            ScatterAttrs{{0, 1}, {}, {}, {}, {1}, 0, false, false}));
  }
  out.push_back(b.gather(x, b.constant(Literal::vector<std::int32_t>({1})),
                         GatherAttrs{{0}, {0}, {}, {}, {0}, 0, {1, 3}, false}));
  out.push_back(
      b.gather(x, b.reshape(n, {2, 3, 1}), GatherAttrs{{}, {1}, {0}, {0}, {1}, 2, {1, 1}, true}));
  // Windows: only window_dimensions, every attribute set, a variadic argmax body; and
  // select_and_scatter with its two regions.
  out.push_back(b.reduce_window(x, b.constant(0.0f), OpCode::kAdd, WindowAttrs{{2, 1}}));
  out.push_back(b.reduce_window(x, b.constant(-1.0f), OpCode::kMaximum,
                                WindowAttrs{{2, 2}, {1, 2}, {2, 1}, {1, 2}, {1, 0}, {0, -1}}));
  {
    StatusOr<Graph> arg = make_arg_reduce_body(ComparisonDirection::kGt, kF32, kS32);
    REQUIRE(arg.ok());
    for (Value v : b.reduce_window({x, b.iota(Shape(kS32, {2, 3}), 1)},
                                   {b.constant(0.0f), b.constant(std::int32_t{0})}, *std::move(arg),
                                   WindowAttrs{{1, 2}, {1, 1}, {}, {}, {0, 1}, {0, 0}}))
      out.push_back(v);
  }
  out.push_back(b.select_and_scatter(x, b.slice(y, {0, 0}, {1, 2}), b.constant(0.0f),
                                     ComparisonDirection::kGe, OpCode::kAdd,
                                     WindowAttrs{{2, 2}, {1, 2}, {}, {}, {0, 0}, {0, 1}}));
  out.push_back(b.reduce_precision(x, 5, 10));
  out.push_back(b.reduce_precision(h, 1, 0));
  out.push_back(b.sort(x, 1));
  for (Value v : b.sort(
           {x, n}, make_sort_comparator(ComparisonDirection::kGt, kF32, {kS32}).value(), -2, true))
    out.push_back(v);
  for (Value v : b.top_k(h, 3)) out.push_back(v);
  // fft: each type, 1 to 3 transformed dimensions.
  out.push_back(b.fft(c, FftType::kFft, {3}));
  out.push_back(b.fft(b.complex(x, y), FftType::kIfft, {2, 3}));
  out.push_back(b.fft(x, FftType::kRfft, {2, 3}));
  out.push_back(b.fft(b.reshape(c, {1, 1, 3}), FftType::kIrfft, {1, 1, 4}));
  // triangular_solve: both sides, both triangles, each transpose_a.
  out.push_back(b.triangular_solve(b.slice(x, {0, 0}, {2, 2}), y,
                                   TriangularSolveAttrs{true, true, false, Transpose::kNoTranspose}));
  out.push_back(b.triangular_solve(b.slice(y, {0, 0}, {2, 2}), x,
                                   TriangularSolveAttrs{true, false, true, Transpose::kTranspose}));
  out.push_back(b.triangular_solve(b.broadcast_in_dim(c, {3, 3}, {1}), b.broadcast_in_dim(c, {2, 3}, {1}),
                                   TriangularSolveAttrs{false, true, false, Transpose::kAdjoint}));
  // rng_bit_generator: each algorithm, 32- and 64-bit outputs.
  Value state = b.constant(Literal::vector<std::uint64_t>({1, 2}));
  for (Value v : b.rng_bit_generator(state, Shape(kU64, {2, 2}))) out.push_back(v);
  out.push_back(b.rng_bit_generator(state, Shape(kF32, {3}), RngAlgorithm::kDefault)[1]);
  out.push_back(b.rng_bit_generator(b.constant(Literal::vector<std::uint64_t>({1, 2, 3})),
                                    Shape(kS32, {}), RngAlgorithm::kPhilox)[0]);
  out.push_back(x);  // a parameter as an output, twice
  out.push_back(x);
  check_round_trip(build_ok(b, out));
}

TEST_CASE("stablehlo: constants round-trip exactly") {
  GraphBuilder b("constants");
  std::vector<Value> out;
  const float nan_payload = std::bit_cast<float>(0x7FA12345u);
  out.push_back(b.constant(Literal::vector<float>(
      {0.0f, -0.0f, 1.0f / 3.0f, std::numeric_limits<float>::infinity(),
       -std::numeric_limits<float>::infinity(), nan_payload,
       std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), -1e-30f})));
  out.push_back(b.constant(Literal::vector<double>(
      {0.1, -0.0, std::numeric_limits<double>::quiet_NaN(), 1e300, 5e-324})));
  out.push_back(b.constant(Literal::vector<f16>({f16(0.1f), f16(-65504.0f), f16(6e-8f)})));
  out.push_back(b.constant(Literal::vector<bf16>({bf16(3.14159f), bf16(-1e38f), bf16(0.0f)})));
  out.push_back(b.constant(Literal::vector<c64>({c64(1.5f, -0.0f), c64(nan_payload, 2.0f)})));
  out.push_back(b.constant(Literal::vector<c128>({c128(1e-300, 1e300)})));
  out.push_back(b.constant(Literal::vector<std::int8_t>({-128, 127, 0})));
  out.push_back(b.constant(Literal::vector<std::int64_t>(
      {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()})));
  out.push_back(
      b.constant(Literal::vector<std::uint64_t>({std::numeric_limits<std::uint64_t>::max()})));
  out.push_back(b.constant(Literal::vector<std::uint8_t>({255, 0})));
  out.push_back(b.constant(Literal::vector<bool>({true, false})));
  out.push_back(b.constant(Literal(Shape(kS16, {3, 0}))));
  out.push_back(b.constant(Literal::scalar<std::uint32_t>(4000000000u)));
  out.push_back(b.scalar(kC64, 0.0));
  // Large constants go through the hex blob, of every element type.
  for (DType t : kAllDTypes) {
    Literal lit(Shape(t, {10, 9}));
    std::span<std::byte> bytes = lit.bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<std::byte>(t == kPred ? (i * 7) % 3 == 0 : (i * 37 + 11) % 251);
    out.push_back(b.constant(std::move(lit)));
    out.push_back(b.constant(Literal(Shape(t, {100}))));  // a large splat of zeros
  }
  const Graph g = build_ok(b, out);
  check_round_trip(g);
  // And the values themselves come back bit for bit.
  const Graph back = graph_ok(to_stablehlo(g));
  for (std::int64_t i = 0; i < g.num_nodes(); ++i)
    CHECK(g.node(i).attr<ConstantAttrs>().literal() ==
          back.node(i).attr<ConstantAttrs>().literal());
}

// ---- The corpus ------------------------------------------------------------------------------

TEST_CASE("stablehlo: a sample of the corpus, checked structurally") {
  if (testing::skip_without_corpus()) return;
  struct Expect {
    std::string_view file;
    OpCode op;              // the op under test
    std::int64_t op_count;  // its nodes in @main
    Shape result;           // @main's result 0
    stablehlo::CheckKind check;
  };
  using enum stablehlo::CheckKind;
  const Expect expects[] = {
      {"add_any_float32_2_float32_2.mlir", OpCode::kAdd, 1, Shape(kF32, {2}), kClose},
      {"dot_general_float32_4_3_float64_3_6.mlir", OpCode::kDotGeneral, 1, Shape(kF64, {4, 6}),
       kAlmostEq},
      {"argmax_bfloat16_15.mlir", OpCode::kReduce, 1, Shape(kS32, {}), kEq},
      {"eq_float32_1_2_float32_3_2.mlir", OpCode::kCompare, 1, Shape(kPred, {3, 2}), kEq},
      {"dynamic_update_slice_float32_7_5_3_float32_2_0_1_int64_3.mlir", OpCode::kDynamicUpdateSlice,
       1, Shape(kF32, {7, 5, 3}), kClose},
      {"concatenate_float32_2_3_4_float32_3_3_4_float32_4_3_4.mlir", OpCode::kConcatenate, 1,
       Shape(kF32, {9, 3, 4}), kClose},
      {"clamp_float32_float32_2_3_float32.mlir", OpCode::kClamp, 1, Shape(kF32, {2, 3}), kClose},
      {"bitcast_convert_type_float32_2_3.mlir", OpCode::kBitcastConvert, 1, Shape(kU32, {2, 3}),
       kEq},
      {"pad_float32_2_3_float32.mlir", OpCode::kPad, 1, Shape(kF32, {2, 0}), kClose},
      {"iota_.mlir", OpCode::kIota, 1, Shape(kU8, {2, 3}), kEq},
      {"transpose_bfloat16_2_3.mlir", OpCode::kTranspose, 1, Shape(kBF16, {3, 2}), kClose},
      {"rev_bfloat16_4_5.mlir", OpCode::kReverse, 1, Shape(kBF16, {4, 5}), kClose},
      {"shift_left_int16_20_20_int16_20_20.mlir", OpCode::kShiftLeft, 1, Shape(kS16, {20, 20}),
       kEq},
      {"acos_complex64_20_20_chlo.mlir", OpCode::kAcosh, 1, Shape(kC64, {20, 20}), kClose},
  };
  for (const Expect& e : expects) {
    CAPTURE(e.file);
    const std::optional<std::string> text = read_corpus(e.file);
    REQUIRE(text.has_value());
    StatusOr<stablehlo::Module> m = stablehlo::parse_module(*text);
    REQUIRE_MESSAGE(m.ok(), m.status().to_string());
    const stablehlo::Function& main = *m->find("main");
    CHECK(count_ops(main.graph, e.op) == e.op_count);
    CHECK(main.num_results == 1);
    CHECK(main.graph.shape(main.graph.outputs()[0]) == e.result);
    REQUIRE(main.checks.size() == 1);
    CHECK(main.checks[0].kind == e.check);
    CHECK(main.graph.outputs()[1] == main.checks[0].actual);
    CHECK(main.graph.outputs()[0] == main.checks[0].actual);  // the checked value is the result
    check_round_trip(main.graph);
  }
  // A closer look at a few.
  {
    const stablehlo::Module m = parse_ok(*read_corpus("add_any_float32_2_float32_2.mlir"));
    const Graph& g = m.find("main")->graph;
    CHECK(g.num_parameters() == 0);
    CHECK(g.num_nodes() == 4);  // @inputs' two constants, @expected's one, the add
    CHECK(values_of<float>(g.node(0).attr<ConstantAttrs>().literal()) ==
          std::vector<float>{-1.14770842f, -0.810447216f});
    CHECK(m.functions.size() == 3);
  }
  {
    const stablehlo::Module m = parse_ok(*read_corpus("argmax_bfloat16_15.mlir"));
    const Node& reduce = first_node(m.find("main")->graph, OpCode::kReduce);
    CHECK(reduce.results == std::vector<Shape>{Shape(kBF16, {}), Shape(kS32, {})});
    CHECK(count_ops(reduce.bodies[0], OpCode::kSelect) == 2);
    const Literal& init =
        m.find("main")->graph.node(reduce.operands[2]).attr<ConstantAttrs>().literal();
    CHECK(static_cast<float>(values_of<bf16>(init)[0]) == -std::numeric_limits<float>::infinity());
  }
  {
    const stablehlo::Module m = parse_ok(*read_corpus("dot_general_float32_4_3_float64_3_6.mlir"));
    const Node& dot = first_node(m.find("main")->graph, OpCode::kDotGeneral);
    CHECK(dot.attr<DotDimensionNumbers>() == DotDimensionNumbers{{}, {}, {1}, {0}});
    CHECK(count_ops(m.find("main")->graph, OpCode::kConvert) == 2);
  }
  {
    // cumsum along dimension 0: padding in front, the default strides and dilations filled in.
    const stablehlo::Module m = parse_ok(*read_corpus("cumsum_float32_8_9.mlir"));
    const Node& rw = first_node(m.find("main")->graph, OpCode::kReduceWindow);
    CHECK(rw.attr<WindowAttrs>() == WindowAttrs{{8, 1}, {1, 1}, {1, 1}, {1, 1}, {7, 0}, {0, 0}});
    CHECK(rw.results == std::vector<Shape>{Shape(kF32, {8, 9})});
    CHECK(count_ops(rw.bodies[0], OpCode::kAdd) == 1);
  }
  {
    // IRFFT of a complex128 operand whose batch dimension is empty.
    const stablehlo::Module m = parse_ok(*read_corpus("fft_complex128_14_15_0_17.mlir"));
    const Node& fft = first_node(m.find("main")->graph, OpCode::kFft);
    CHECK(fft.attr<FftAttrs>() == FftAttrs{FftType::kIrfft, {33}});
    CHECK(fft.results == std::vector<Shape>{Shape(kF64, {14, 15, 0, 33})});
  }
}

TEST_CASE("stablehlo: every corpus file parses or is UNIMPLEMENTED") {
  if (testing::skip_without_corpus()) return;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(testing::corpus_dir()))
    if (entry.path().extension() == ".mlir") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::int64_t parsed = 0, unsupported = 0, round_tripped = 0;
  std::map<std::string, std::int64_t> by_op;
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    const std::optional<std::string> text = read_corpus(path.filename().string());
    REQUIRE(text.has_value());
    StatusOr<stablehlo::Module> m = stablehlo::parse_module(*text);
    if (m.ok()) {
      ++parsed;
      const stablehlo::Function* main = m->find("main");
      REQUIRE(main != nullptr);
      CHECK(main->checks.size() >= 1);
      StatusOr<Graph> back = parse_stablehlo(to_stablehlo(main->graph));
      if (back.ok() && fingerprint(*back) == fingerprint(main->graph)) ++round_tripped;
      continue;
    }
    const Status& s = m.status();
    REQUIRE_MESSAGE(s.code() == StatusCode::kUnimplemented, s.to_string());
    const std::string message(s.message());
    const std::size_t at = message.find(" is not supported (line ");
    REQUIRE_MESSAGE(at != std::string::npos, message);
    ++unsupported;
    ++by_op[message.substr(0, at)];
  }
  std::string counts;
  for (const auto& [op, count] : by_op) counts += str_cat("\n  ", op, ": ", count);
  MESSAGE(files.size(), " corpus files: ", parsed, " parsed (", round_tripped, " round-tripped), ",
          unsupported, " unimplemented:", counts);
  CHECK(parsed + unsupported == static_cast<std::int64_t>(files.size()));
  CHECK(round_tripped == parsed);
  CHECK(files.size() == 2325);
}

TEST_CASE("stablehlo: truncated and mutated corpus files never crash") {
  if (testing::skip_without_corpus()) return;
  const std::optional<std::string> text = read_corpus("argmax_bfloat16_15.mlir");
  REQUIRE(text.has_value());
  // Every prefix, then a deterministic stream of small mutations.
  for (std::size_t n = 0; n <= text->size(); n += 3) {
    const Status s = parse_status(std::string_view(*text).substr(0, n));
    CHECK((s.ok() || s.code() == StatusCode::kInvalidArgument ||
           s.code() == StatusCode::kUnimplemented));
  }
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>(state >> 33);
  };
  constexpr std::string_view kPieces[] = {
      "(",    ")",      "[",  "]", "{", "}",  "<",    ">",    ",", ":",  "%0",
      "%1#7", "dense<", "\"", "x", "-", "0x", "loc(", "^bb0", "=", "->", "stablehlo.reduce",
      "1e999"};
  for (int round = 0; round < 2000; ++round) {
    std::string m = *text;
    for (int j = 0; j < 3; ++j) {
      const std::size_t pos = next() % (m.size() + 1);
      switch (next() % 3) {
        case 0: m.insert(pos, kPieces[next() % std::size(kPieces)]); break;
        case 1: m.erase(pos, 1 + next() % 8); break;
        default:
          if (pos < m.size()) m[pos] = static_cast<char>(next() % 128);
      }
    }
    const Status s = parse_status(m);
    CHECK((s.ok() || s.code() == StatusCode::kInvalidArgument ||
           s.code() == StatusCode::kUnimplemented));
  }
}

TEST_CASE("stablehlo: scatter in the generic form, as JAX exports it, and its errors") {
  const std::string text =
      program("(%x: tensor<1x2x3xbf16>, %u: tensor<1x3xbf16>) -> tensor<1x2x3xbf16>",
              "  %c = stablehlo.constant dense<1> : tensor<1xi64>\n"
              "  %0 = \"stablehlo.scatter\"(%x, %c, %u) <{scatter_dimension_numbers = "
              "#stablehlo.scatter<update_window_dims = [0, 1], inserted_window_dims = [1], "
              "scatter_dims_to_operand_dims = [1]>, unique_indices = true}> ({\n"
              "  ^bb0(%arg0: tensor<bf16>, %arg1: tensor<bf16>):\n"
              "    %1 = stablehlo.add %arg0, %arg1 : tensor<bf16>\n"
              "    stablehlo.return %1 : tensor<bf16>\n"
              "  }) : (tensor<1x2x3xbf16>, tensor<1xi64>, tensor<1x3xbf16>) -> tensor<1x2x3xbf16>\n"
              "  return %0 : tensor<1x2x3xbf16>\n");
  Graph g = graph_ok(text);
  const Node& scatter = first_node(g, OpCode::kScatter);
  const ScatterAttrs& a = scatter.attr<ScatterAttrs>();
  CHECK(a.update_window_dims == std::vector<std::int64_t>{0, 1});
  CHECK(a.inserted_window_dims == std::vector<std::int64_t>{1});
  CHECK(a.scatter_dims_to_operand_dims == std::vector<std::int64_t>{1});
  CHECK(a.index_vector_dim == 0);  // left out: the default
  CHECK(a.unique_indices);
  CHECK_FALSE(a.indices_are_sorted);
  REQUIRE(scatter.bodies.size() == 1);
  CHECK(count_ops(scatter.bodies[0], OpCode::kAdd) == 1);
  check_round_trip(g);

  check_invalid_edits(text, {
      {"inserted_window_dims", "inserted_windows",
       "3", "unknown #stablehlo.scatter field 'inserted_windows'"},
      {"unique_indices = true", "unique_indices = 1",
       "3", "expected true or false for unique_indices"},
      {"inserted_window_dims = [1]", "inserted_window_dims = [2]",
       "3", "has window size 3 in dimension 1, larger than the input's 2"},
      {"stablehlo.return %1 : tensor<bf16>", "stablehlo.return %arg0, %1 : tensor<bf16>, tensor<bf16>",
       "3", "scatter: body must take 2 parameters and return 1 value"},
      {"scatter_dimension_numbers", "dimension_numbers",
       "3", "needs scatter_dimension_numbers"},
      {"\"stablehlo.scatter\"(%x, %c, %u)", "stablehlo.scatter %x, %c, %u",
       "3", "has no pretty form"},
  });
  {
    std::string two = text;
    two.replace(two.find("(%x, %c, %u) <{"), 15, "(%x, %x, %c, %u, %u) <{");
    const std::string_view types = "(tensor<1x2x3xbf16>, tensor<1xi64>, tensor<1x3xbf16>) ->";
    two.replace(two.find(types), types.size(),
                "(tensor<1x2x3xbf16>, tensor<1x2x3xbf16>, tensor<1xi64>, tensor<1x3xbf16>, "
                "tensor<1x3xbf16>) ->");
    check_unsupported(parse_status(two), "stablehlo.scatter of 5 operands (several inputs)", 3);
  }
}

TEST_CASE("stablehlo: reduce_window and select_and_scatter in the generic form, and errors") {
  // As JAX exports a max pool's gradient: the forward pool, then select_and_scatter.
  const std::string text = program(
      "(%x: tensor<4x6xf32>, %g: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<4x6xf32>)",
      "  %c = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
      "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %0 = \"stablehlo.reduce_window\"(%x, %c) <{padding = dense<[[0, 0], [1, 0]]> : "
      "tensor<2x2xi64>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, "
      "2>}> ({\n"
      "  ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n"
      "    %1 = stablehlo.maximum %arg0, %arg1 : tensor<f32>\n"
      "    stablehlo.return %1 : tensor<f32>\n"
      "  }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>\n"
      "  %2 = \"stablehlo.select_and_scatter\"(%x, %g, %z) <{window_dimensions = array<i64: 2, 2>, "
      "window_strides = array<i64: 2, 2>}> ({\n"
      "  ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n"
      "    %3 = stablehlo.compare  GE, %arg0, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> "
      "tensor<i1>\n"
      "    stablehlo.return %3 : tensor<i1>\n"
      "  }, {\n"
      "  ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n"
      "    %3 = stablehlo.add %arg0, %arg1 : tensor<f32>\n"
      "    stablehlo.return %3 : tensor<f32>\n"
      "  }) : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<4x6xf32>\n"
      "  return %0, %2 : tensor<2x3xf32>, tensor<4x6xf32>\n");
  Graph g = graph_ok(text);
  CHECK(first_node(g, OpCode::kReduceWindow).attr<WindowAttrs>() ==
        WindowAttrs{{2, 2}, {2, 2}, {1, 1}, {1, 1}, {0, 1}, {0, 0}});
  const Node& sas = first_node(g, OpCode::kSelectAndScatter);
  CHECK(sas.attr<WindowAttrs>() == WindowAttrs{{2, 2}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}});
  REQUIRE(sas.bodies.size() == 2);
  CHECK(count_ops(sas.bodies[0], OpCode::kCompare) == 1);
  CHECK(count_ops(sas.bodies[1], OpCode::kAdd) == 1);
  check_round_trip(g);

  check_invalid_edits(text, {
      {"window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}> "
       "({\n  ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n    %1",
       "window_dimensions = array<i64: 2>, window_strides = array<i64: 2, 2>}> "
       "({\n  ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n    %1",
       "4", "reduce_window: window_dimensions [2] has 1 entries but the input has rank 2"},
      {"window_strides = array<i64: 2, 2>}> ({\n  ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n    %1",
       "window_strides = array<i64: 0, 2>}> ({\n  ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n    %1",
       "4", "reduce_window: window_strides[0] = 0 but must be positive"},
      {"dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>", "dense<[0, 0]> : tensor<2xi64>",
       "4", "expected padding = dense<[[low, high], ...]>"},
      {"stablehlo.return %3 : tensor<i1>", "stablehlo.return %arg0 : tensor<f32>",
       "9", "select_and_scatter: select body must have type"},
      {"\"stablehlo.reduce_window\"(%x, %c)", "stablehlo.reduce_window %x, %c",
       "4", "has no pretty form"},
  });
}

TEST_CASE("stablehlo: gather in the generic form, as JAX exports it") {
  const std::string text =
      program("(%x: tensor<5xf32>, %i: tensor<2x1xi32>) -> tensor<2xf32>",
              "  %0 = \"stablehlo.gather\"(%x, %i) <{dimension_numbers = #stablehlo.gather<"
              "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
              "indices_are_sorted = true, slice_sizes = array<i64: 1>}> : (tensor<5xf32>, "
              "tensor<2x1xi32>) -> tensor<2xf32>\n"
              "  return %0 : tensor<2xf32>\n");
  Graph g = graph_ok(text);
  const GatherAttrs& a = first_node(g, OpCode::kGather).attr<GatherAttrs>();
  CHECK(a.collapsed_slice_dims == std::vector<std::int64_t>{0});
  CHECK(a.start_index_map == std::vector<std::int64_t>{0});
  CHECK(a.offset_dims.empty());
  CHECK(a.index_vector_dim == 1);
  CHECK(a.slice_sizes == std::vector<std::int64_t>{1});
  CHECK(a.indices_are_sorted);
  check_round_trip(g);
  std::string bad = text;
  bad.replace(bad.find("array<i64: 1>"), 13, "array<i64: 2>");
  check_invalid(parse_status(bad), "2", "gather: slice_sizes[0] = 2 but dimension 0 is collapsed");
  bad = text;
  bad.replace(bad.find("start_index_map"), 15, "start_map");
  check_invalid(parse_status(bad), "2", "unknown #stablehlo.gather field 'start_map'");
}

TEST_CASE("stablehlo: check semantics: eq exact, close within ULPs, almost_eq absolute or ULPs") {
  using stablehlo::CheckKind;
  using stablehlo::evaluate_check;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto v = [](std::initializer_list<float> x) { return Literal::vector<float>(x); };
  CHECK(evaluate_check(CheckKind::kEq, v({1, nan, -0.0f}), v({1, nan, -0.0f})).ok());
  CHECK_FALSE(evaluate_check(CheckKind::kEq, v({1}), v({std::nextafter(1.0f, 2.0f)})).ok());
  CHECK_FALSE(evaluate_check(CheckKind::kEq, v({1, 2}), v({1})).ok());
  // expect_close: up to 3 ULP; non-finite values count as close.
  float three_up = 1.0f;
  for (int i = 0; i < 3; ++i) three_up = std::nextafter(three_up, 2.0f);
  CHECK(evaluate_check(CheckKind::kClose, v({1, inf}), v({three_up, 5})).ok());
  CHECK_FALSE(evaluate_check(CheckKind::kClose, v({1}), v({std::nextafter(three_up, 2.0f)})).ok());
  // expect_almost_eq: 0.001 absolute, never stricter than 3 ULP (f32's spacing at 3e5 is
  // 0.03, so an absolute 0.001 alone would demand equality there).
  CHECK(evaluate_check(CheckKind::kAlmostEq, v({1.0f}), v({1.0009f})).ok());
  CHECK_FALSE(evaluate_check(CheckKind::kAlmostEq, v({1.0f}), v({1.002f})).ok());
  CHECK(evaluate_check(CheckKind::kAlmostEq, v({308502.97f}), v({308503.0f})).ok());
  CHECK_FALSE(evaluate_check(CheckKind::kAlmostEq, v({308502.8f}), v({308503.0f})).ok());
  CHECK_FALSE(evaluate_check(CheckKind::kAlmostEq, v({inf}), v({1e30f})).ok());
  const Status s = evaluate_check(CheckKind::kAlmostEq, v({0, 1, 2}), v({0, 1, 2.5f}));
  CHECK(s.message().find("element 2") != std::string_view::npos);
  // Complex numbers compare part by part.
  using c64 = std::complex<float>;
  CHECK(evaluate_check(CheckKind::kAlmostEq, Literal::vector<c64>({c64(56250.09f, 308502.97f)}),
                       Literal::vector<c64>({c64(56250.094f, 308503.0f)}))
            .ok());
}

TEST_CASE(
    "stablehlo: the corpus's RUN-DISABLED(inaccurate) marker is read from the leading comments") {
  using stablehlo::marked_inaccurate;
  CHECK(
      marked_inaccurate("// RUN: a\n// RUN-DISABLED(inaccurate) stablehlo-opt %s\n\nmodule {}\n"));
  CHECK(marked_inaccurate("  // RUN-DISABLED(inaccurate): x"));
  CHECK_FALSE(marked_inaccurate("// RUN: stablehlo-opt %s\nmodule {}\n"));
  CHECK_FALSE(marked_inaccurate("// RUN-DISABLED(no interpreter support) x\nmodule {}\n"));
  CHECK_FALSE(marked_inaccurate("module {}\n// RUN-DISABLED(inaccurate)\n"));
  CHECK_FALSE(marked_inaccurate(""));
}

// ---- Control flow --------------------------------------------------------------------------

namespace {

/// @main of `text` run by the reference interpreter on `args`.
std::vector<Literal> run_main(std::string_view text, std::vector<Literal> args = {}) {
  const Graph g = graph_ok(text);
  StatusOr<std::vector<Literal>> r = reference::evaluate(g, args);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return *std::move(r);
}

/// sum 1..n by a while loop in JAX's pretty form; the limit %n is used by cond from outside.
constexpr std::string_view kPrettyWhile = R"(
func.func public @main(%n: tensor<i64>) -> (tensor<i64>) {
  %c = stablehlo.constant dense<1> : tensor<i64>
  %c_0 = stablehlo.constant dense<0> : tensor<i64>
  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %c_0) : tensor<i64>, tensor<i64>
   cond {
    %1 = stablehlo.compare  LE, %iterArg, %n,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %c_2 = stablehlo.constant dense<1> : tensor<i64>
    %1 = stablehlo.add %iterArg, %c_2 : tensor<i64>
    %2 = stablehlo.add %iterArg_1, %iterArg : tensor<i64>
    stablehlo.return %1, %2 : tensor<i64>, tensor<i64>
  }
  return %0#1 : tensor<i64>
}
)";

/// The spec's while example (generic form), whose regions use %one and %ten from outside.
constexpr std::string_view kSpecWhile = R"(
func.func @main() -> (tensor<i64>, tensor<i64>) {
  %init_i = stablehlo.constant dense<1> : tensor<i64>
  %init_sum = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %ten = stablehlo.constant dense<10> : tensor<i64>
  %results0, %results1 = "stablehlo.while"(%init_i, %init_sum) ({
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):
      %cond = "stablehlo.compare"(%arg0, %ten) {
        comparison_direction = #stablehlo<comparison_direction LT>
      } : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %cond : tensor<i1>
    }, {
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):
      %new_sum = stablehlo.add %arg1, %one : tensor<i64>
      %new_i = stablehlo.add %arg0, %one : tensor<i64>
      stablehlo.return %new_i, %new_sum : tensor<i64>, tensor<i64>
  }) : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<i64>)
  return %results0, %results1 : tensor<i64>, tensor<i64>
}
)";

/// case and if in the generic form (the only one they have), their branches using values
/// from outside; the if sits in a case branch.
constexpr std::string_view kCaseIf = R"(
func.func @main(%index: tensor<i32>, %p: tensor<i1>, %x: tensor<2xf32>) -> (tensor<2xf32>, tensor<i32>) {
  %k = stablehlo.constant dense<7> : tensor<i32>
  %r:2 = "stablehlo.case"(%index) ({
    "stablehlo.return"(%x, %k) : (tensor<2xf32>, tensor<i32>) -> ()
  }, {
    %0 = stablehlo.negate %x : tensor<2xf32>
    stablehlo.return %0, %index : tensor<2xf32>, tensor<i32>
  }, {
    %1 = "stablehlo.if"(%p) ({
      %2 = stablehlo.add %x, %x : tensor<2xf32>
      stablehlo.return %2 : tensor<2xf32>
    }, {
      stablehlo.return %x : tensor<2xf32>
    }) : (tensor<i1>) -> tensor<2xf32>
    stablehlo.return %1, %k : tensor<2xf32>, tensor<i32>
  }) : (tensor<i32>) -> (tensor<2xf32>, tensor<i32>)
  return %r#0, %r#1 : tensor<2xf32>, tensor<i32>
}
)";

}  // namespace

TEST_CASE("stablehlo: while in the pretty and generic forms, with values used from outside") {
  for (std::int64_t n : {0, 1, 5, 30}) {
    CAPTURE(n);
    CHECK(run_main(kPrettyWhile, {Literal::scalar(n)})[0] == Literal::scalar(n * (n + 1) / 2));
  }
  // %n became a third loop-carried value that the body passes through.
  const Graph g = graph_ok(kPrettyWhile);
  const Node& w = first_node(g, OpCode::kWhile);
  CHECK(w.operands.size() == 3);
  CHECK(w.bodies[1].outputs()[2] == w.bodies[1].parameters()[2]);
  check_round_trip(g);
  const std::vector<Literal> spec = run_main(kSpecWhile);
  // i runs from 1 while i < 10: nine turns, each adding one to the sum. (The spec's comment
  // says %results1 is 10; the loop as written gives 9.)
  CHECK(spec[0] == Literal::scalar(std::int64_t{10}));
  CHECK(spec[1] == Literal::scalar(std::int64_t{9}));
  check_round_trip(graph_ok(kSpecWhile));
  // Built graphs print and parse back to themselves.
  check_round_trip(testing::sum_to_n());
  check_round_trip(testing::sum_of_sums());
}

TEST_CASE("stablehlo: case and if select branches, and indices out of range take the last") {
  const Literal x = Literal::vector<float>({1.5f, -2});
  for (std::int32_t index : {0, 1, 2, 3, -1}) {
    for (bool p : {true, false}) {
      CAPTURE(index);
      CAPTURE(p);
      const std::vector<Literal> r =
          run_main(kCaseIf, {Literal::scalar(index), Literal::scalar(p), x});
      const std::int32_t branch = testing::selected_branch(index, 3);
      const float scale = branch == 0 ? 1.0f : branch == 1 ? -1.0f : p ? 2.0f : 1.0f;
      CHECK(r[0] == Literal::vector<float>({1.5f * scale, -2 * scale}));
      CHECK(r[1] == Literal::scalar(branch == 1 ? index : 7));
    }
  }
  const Graph g = graph_ok(kCaseIf);
  const Node& c = first_node(g, OpCode::kCase);
  // The index, then what the branches use, in order of first use: %x, %k, %index, %p.
  CHECK(c.operands.size() == 5);
  CHECK(c.bodies.size() == 3);
  check_round_trip(g);
  check_round_trip(testing::case_graph(3));
  check_round_trip(testing::if_graph());
  // A built case whose operands are not in the order its branches use them parses back to
  // the same computation with its operands in that order.
  GraphBuilder b("swapped");
  Value index = b.parameter(Shape(kS32, {}));
  Value v = b.parameter(Shape(kF32, {3}));
  Value y = b.parameter(Shape(kF32, {}));
  GraphBuilder bb("branch");
  Value by = bb.parameter(Shape(kF32, {}));
  Value bv = bb.parameter(Shape(kF32, {3}));
  Value negated = bb.negate(bv);  // the first use: of the second operand
  const Graph branch = build_ok(bb, {bb.add(negated, bb.broadcast_in_dim(by, {3}, {}))});
  const Graph swapped = build_ok(b, b.case_op(index, {y, v}, {branch}));
  const Graph back = graph_ok(to_stablehlo(swapped));
  CHECK(fingerprint(back) != fingerprint(swapped));
  const std::vector<Literal> args = {Literal::scalar(0), Literal::vector<float>({1, 2, 3}),
                                     Literal::scalar(0.5f)};
  CHECK(reference::evaluate(back, args).value() == reference::evaluate(swapped, args).value());
  check_round_trip(back);
}

TEST_CASE("stablehlo: malformed control flow is INVALID_ARGUMENT with line:column") {
  // Each case edits a good program (the text's first occurrence of `from` becomes `to`, edit
  // by edit) and names the line and a fragment of the message.
  struct Edit {
    std::string_view from, to;
  };
  struct Case {
    std::string_view program;
    std::vector<Edit> edits;
    std::string_view line, message;
  };
  const Case cases[] = {
      // while: cond must return tensor<i1>; the body the carried types; the listed types are
      // the operands'.
      {kPrettyWhile, {{"stablehlo.return %1 : tensor<i1>", "stablehlo.return %iterArg : tensor<i64>"}}, "5",
       "while: cond must return one pred[] (tensor<i1>)"},
      {kPrettyWhile, {{"stablehlo.return %1, %2 : tensor<i64>, tensor<i64>", "stablehlo.return %1 : tensor<i64>"}}, "5",
       "while: body returns (s64[], s64[])"},
      {kPrettyWhile, {{": tensor<i64>, tensor<i64>\n   cond", ": tensor<i64>, tensor<i32>\n   cond"}}, "5",
       "operand 1 has type tensor<i64> but is listed as tensor<i32>"},
      {kPrettyWhile, {{"} do {", "} body {"}}, "9", "expected 'do'"},
      {kPrettyWhile, {{"%0:2 = stablehlo.while", "%0:3 = stablehlo.while"}}, "5", "the op has 2 result(s) but 3 are named"},
      {kPrettyWhile, {{"%iterArg, %n", "%iterArg, %nope"}}, "7", "use of undefined value %nope"},
      // case: the index must be an s32 scalar; branches agree and take no arguments.
      {kCaseIf,
       {{"\"stablehlo.case\"(%index)", "\"stablehlo.case\"(%x)"},
        {": (tensor<i32>) -> (tensor<2xf32>, tensor<i32>)", ": (tensor<2xf32>) -> (tensor<2xf32>, tensor<i32>)"}},
       "4", "case: operand 0 (the index) has shape f32[2] but must be a rank-0 s32"},
      {kCaseIf, {{"stablehlo.return %0, %index", "stablehlo.return %0, %0"}}, "8",
       "operand 1 has type tensor<2xf32> but is listed as tensor<i32>"},
      {kCaseIf,
       {{"stablehlo.return %0, %index : tensor<2xf32>, tensor<i32>", "stablehlo.return %0, %x : tensor<2xf32>, tensor<2xf32>"}},
       "4", "case: branch 1 returns (f32[2], f32[2]) but branch 0 returns (f32[2], s32[])"},
      {kCaseIf, {{"\"stablehlo.if\"(%p)", "\"stablehlo.if\"(%index)"}, {"}) : (tensor<i1>)", "}) : (tensor<i32>)"}}, "10",
       "if: operand 0 (the predicate) has shape s32[] but must be a rank-0 pred"},
      {kCaseIf, {{"\"stablehlo.if\"(%p)", "\"stablehlo.if\"(%index)"}}, "10",
       "stablehlo.if: operand 0 has type tensor<i32> but the op's type says tensor<i1>"},
      {kCaseIf, {{"\"stablehlo.case\"(%index) ({\n", "\"stablehlo.case\"(%index) ({\n  ^bb0(%z: tensor<i32>):\n"}}, "4",
       "case: region 0 takes 1 argument(s) but 0 are passed"},
      {kCaseIf,
       {{"\"stablehlo.case\"(%index)", "\"stablehlo.case\"(%index, %k)"},
        {": (tensor<i32>) -> (tensor<2xf32>, tensor<i32>)", ": (tensor<i32>, tensor<i32>) -> (tensor<2xf32>, tensor<i32>)"}},
       "4", "stablehlo.case takes one operand (the index), got 2"},
  };
  for (const Case& c : cases) {
    std::string text(c.program);
    for (const Edit& e : c.edits) text = replaced(text, e.from, e.to);
    CAPTURE(text);
    check_invalid(parse_status(text), c.line, c.message);
  }
  check_invalid(parse_status(program("(%a: tensor<i32>) -> tensor<i32>",
                                     "  %0 = \"stablehlo.case\"(%a) : (tensor<i32>) -> tensor<i32>\n"
                                     "  return %0 : tensor<i32>\n")),
                "2", "stablehlo.case needs at least 1 region(s), got 0");
  // A reduce body still cannot use outside values: that is UNIMPLEMENTED, not a crash.
  check_unsupported(parse_status(program("(%a: tensor<3xf32>, %b: tensor<f32>) -> tensor<f32>", R"(
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
   reducer(%x: tensor<f32>, %y: tensor<f32>) {
    %1 = stablehlo.add %x, %b : tensor<f32>
    stablehlo.return %1 : tensor<f32>
  }
  return %0 : tensor<f32>
)")),
                    "a region using %b, a value defined outside it,", 6);
  // Every prefix of a control-flow program is an error, never a crash or a hang.
  for (std::string_view text : {kPrettyWhile, kSpecWhile, kCaseIf})
    for (std::size_t n = 0; n < text.size(); n += 2) {
      const Status s = parse_status(text.substr(0, n));
      CHECK((s.ok() || s.code() == StatusCode::kInvalidArgument ||
             s.code() == StatusCode::kUnimplemented));
    }
}

TEST_CASE("stablehlo: reduce_precision in the pretty and the generic form, and errors") {
  const std::string pretty = program("(%x: tensor<2x3xf16>) -> tensor<2x3xf16>",
                                     "  %0 = stablehlo.reduce_precision %x, format = e5m10 : "
                                     "tensor<2x3xf16>\n"
                                     "  return %0 : tensor<2x3xf16>\n");
  const std::string generic =
      program("(%x: tensor<2x3xf16>) -> tensor<2x3xf16>",
              "  %0 = \"stablehlo.reduce_precision\"(%x) {exponent_bits = 5 : i32, mantissa_bits = "
              "10 : i32} : (tensor<2x3xf16>) -> tensor<2x3xf16>\n"
              "  return %0 : tensor<2x3xf16>\n");
  const Graph g = graph_ok(pretty);
  CHECK(first_node(g, OpCode::kReducePrecision).attr<ReducePrecisionAttrs>() ==
        ReducePrecisionAttrs{5, 10});
  CHECK(fingerprint(graph_ok(generic)) == fingerprint(g));
  CHECK(fingerprint(graph_ok(replaced(replaced(generic, "{exponent", "<{exponent"), "10 : i32}",
                                      "10 : i32}>"))) == fingerprint(g));
  check_round_trip(g);
  CHECK(to_stablehlo(g).find("stablehlo.reduce_precision %arg0, format = e5m10 : "
                             "tensor<2x3xf16>") != std::string::npos);

  for (std::string_view bad : {"e5", "m10", "e5m", "em10", "x5m10", "e5x10", "e-5m10",
                               "e99999999999999999999m1", "e5m10m2"})
    check_invalid(edited(pretty, "e5m10", bad), "2:48", "expected a format such as e5m10");
  check_invalid_edits(pretty, {
      {"e5m10", "e0m10",
       "2", "reduce_precision: exponent_bits = 0 must be at least 1"},
      {"format = e5m10", "e5m10",
       "2:39", "expected 'format'"},
      {"format = e5m10", "format e5m10",
       "2:46", "expected '='"},
      {"format = e5m10", "format = 5",
       "2:48", "expected a format such as e5m10"},
      {" : tensor<2x3xf16>\n  return", " : tensor<2x3xf32>\n  return",
       "2", "operand 0 has type tensor<2x3xf16> but the op's type says tensor<2x3xf32>"},
  });
  check_invalid(parse_status(program("(%x: tensor<2xi32>) -> tensor<2xi32>",
                                     "  %0 = stablehlo.reduce_precision %x, format = e5m10 : "
                                     "tensor<2xi32>\n"
                                     "  return %0 : tensor<2xi32>\n")),
                "2", "reduce_precision: operand 0 has element type s32");
  check_invalid(parse_status(replaced(generic, "mantissa_bits = 10 : i32", "mantissa = 10 : i32")),
                "2", "stablehlo.reduce_precision needs the attribute mantissa_bits");
  check_invalid(parse_status(replaced(generic, "mantissa_bits = 10 : i32", "mantissa_bits = true")),
                "2", "expected an integer for mantissa_bits");
}

TEST_CASE("stablehlo: sort in the generic form, as JAX exports it, and its errors") {
  // jnp.lexsort-like: two keys and a payload, with properties and a two-key comparator.
  const std::string text = program(
      "(%a: tensor<4xi32>, %b: tensor<4xf32>, %c: tensor<4xi16>) -> (tensor<4xi32>, "
      "tensor<4xf32>, tensor<4xi16>)",
      R"(  %0:3 = "stablehlo.sort"(%a, %b, %c) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%arg0: tensor<i32>, %arg1: tensor<i32>, %arg2: tensor<f32>, %arg3: tensor<f32>, %arg4: tensor<i16>, %arg5: tensor<i16>):
    %1 = stablehlo.compare  LT, %arg2, %arg3,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %2 = stablehlo.compare  LT, %arg0, %arg1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %3 = stablehlo.compare  EQ, %arg0, %arg1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %4 = stablehlo.and %3, %1 : tensor<i1>
    %5 = stablehlo.or %2, %4 : tensor<i1>
    stablehlo.return %5 : tensor<i1>
  }) : (tensor<4xi32>, tensor<4xf32>, tensor<4xi16>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xi16>)
  return %0#0, %0#1, %0#2 : tensor<4xi32>, tensor<4xf32>, tensor<4xi16>
)");
  Graph g = graph_ok(text);
  const Node& sort = first_node(g, OpCode::kSort);
  CHECK(sort.attr<SortAttrs>() == SortAttrs{0, true});
  CHECK(sort.results.size() == 3);
  CHECK(count_ops(sort.bodies[0], OpCode::kCompare) == 3);
  check_round_trip(g);
  // The attribute dictionary after the region, and MLIR's defaults (dimension -1, unstable).
  CHECK(first_node(
            graph_ok(replaced(replaced(text, "<{dimension = 0 : i64, is_stable = true}> ", ""),
                              "}) : (tensor<4xi32>", "}) {dimension = 0 : i64} : (tensor<4xi32>")),
            OpCode::kSort)
            .attr<SortAttrs>() == SortAttrs{0, false});
  CHECK(first_node(graph_ok(replaced(text, "dimension = 0 : i64, ", "")), OpCode::kSort)
            .attr<SortAttrs>() == SortAttrs{-1, true});

  check_invalid_edits(text, {
      {"dimension = 0", "dimension = 1",
       "2", "sort: dimension = 1 is out of range for rank 1"},
      {"is_stable = true", "is_stable = 1",
       "2", "expected true or false for is_stable"},
      {"stablehlo.return %5 : tensor<i1>", "stablehlo.return %arg0 : tensor<i32>",
       "2", "sort: comparator must return one pred[]"},
      {"%arg5: tensor<i16>", "%arg5: tensor<i32>",
       "2", "sort: comparator parameter 5 has type s32[] but input 2 needs s16[]"},
      {"\"stablehlo.sort\"(%a, %b, %c)", "stablehlo.sort %a, %b, %c",
       "2", "has no pretty form"},
      {"-> (tensor<4xi32>, tensor<4xf32>, tensor<4xi16>)\n", "-> (tensor<4xi32>, tensor<4xf32>)\n",
       "2", "has 3 result(s) but its type declares 2"},
  });
  check_invalid(parse_status(program("(%a: tensor<4xi32>) -> tensor<4xi32>",
                                     "  %0 = \"stablehlo.sort\"(%a) {dimension = 0 : i64} : "
                                     "(tensor<4xi32>) -> tensor<4xi32>\n"
                                     "  return %0 : tensor<4xi32>\n")),
                "2", "stablehlo.sort needs one region (the comparator), got 0");
}

TEST_CASE("stablehlo: chlo.top_k in the forms the corpus uses, and its errors") {
  const std::string text =
      program("(%x: tensor<5x3xf32>) -> (tensor<5x2xf32>, tensor<5x2xi32>)",
              R"(  %values, %indices = chlo.top_k(%x, k = 2) : tensor<5x3xf32> -> (tensor<5x2xf32>, tensor<5x2xi32>)
  return %values, %indices : tensor<5x2xf32>, tensor<5x2xi32>
)");
  const Graph g = graph_ok(text);
  CHECK(first_node(g, OpCode::kTopK).attr<TopKAttrs>() == TopKAttrs{2});
  check_round_trip(g);
  CHECK(to_stablehlo(g).find("chlo.top_k(%arg0, k = 2) : tensor<5x3xf32> -> (tensor<5x2xf32>, "
                             "tensor<5x2xi32>)") != std::string::npos);
  const std::string generic =
      program("(%x: tensor<5x3xf32>) -> (tensor<5x2xf32>, tensor<5x2xi32>)",
              "  %0:2 = \"chlo.top_k\"(%x) {k = 2 : i64} : (tensor<5x3xf32>) -> (tensor<5x2xf32>, "
              "tensor<5x2xi32>)\n"
              "  return %0#0, %0#1 : tensor<5x2xf32>, tensor<5x2xi32>\n");
  CHECK(fingerprint(graph_ok(generic)) == fingerprint(g));

  check_invalid_edits(text, {
      {"k = 2", "k = 4",
       "2", "top_k: k = 4 must be in [0, 3]"},
      {"(%x, k = 2)", "(%x k = 2)",
       "2:37", "expected ','"},
      {"k = 2", "n = 2",
       "2:38", "expected 'k'"},
      {"k = 2)", "k = 2",
       "2:44", "expected ')'"},
      {"(tensor<5x2xf32>, tensor<5x2xi32>)\n", "(tensor<5x2xf32>, tensor<5x2xi64>)\n",
       "2", "result 1 is declared tensor<5x2xi64> but the operands give tensor<5x2xi32>"},
  });
  check_invalid(parse_status(replaced(generic, "{k = 2 : i64}", "{}")), "2",
                "chlo.top_k needs the attribute k");
  check_unsupported(
      parse_status(program("(%x: tensor<3xcomplex<f32>>) -> tensor<2xcomplex<f32>>",
                           "  %0, %1 = chlo.top_k(%x, k = 2) : tensor<3xcomplex<f32>> -> "
                           "(tensor<2xcomplex<f32>>, tensor<2xi32>)\n"
                           "  return %0 : tensor<2xcomplex<f32>>\n")),
      "chlo.top_k on complex numbers", 2);
}

TEST_CASE("stablehlo: fft in the pretty and the generic form, and its errors") {
  const std::string pretty =
      program("(%x: tensor<4x17xf32>) -> tensor<4x9xcomplex<f32>>",
              "  %0 = stablehlo.fft %x, type =  RFFT, length = [17] : (tensor<4x17xf32>) -> "
              "tensor<4x9xcomplex<f32>>\n"
              "  return %0 : tensor<4x9xcomplex<f32>>\n");
  const std::string generic =
      program("(%x: tensor<4x17xf32>) -> tensor<4x9xcomplex<f32>>",
              "  %0 = \"stablehlo.fft\"(%x) <{fft_length = array<i64: 17>, fft_type = "
              "#stablehlo<fft_type RFFT>}> : (tensor<4x17xf32>) -> tensor<4x9xcomplex<f32>>\n"
              "  return %0 : tensor<4x9xcomplex<f32>>\n");
  Graph a = graph_ok(pretty);
  Graph g = graph_ok(generic);
  CHECK(fingerprint(a) == fingerprint(g));
  const FftAttrs& attrs = first_node(a, OpCode::kFft).attr<FftAttrs>();
  CHECK(attrs.fft_type == FftType::kRfft);
  CHECK(attrs.fft_length == std::vector<std::int64_t>{17});
  check_round_trip(a);
  check_invalid(parse_status(replaced(pretty, "RFFT", "DFT")), "2", "unknown fft type 'DFT' (expected FFT, IFFT, RFFT or IRFFT)");
  check_invalid(parse_status(replaced(pretty, "[17]", "[16]")), "2", "fft: operand f32[4,17] dimension 1 has size 17");
  check_invalid(parse_status(replaced(pretty, "length", "size")), "2", "expected 'length'");
  CHECK(parse_status(replaced(pretty, "4x9x", "4x8x")).code() == StatusCode::kInvalidArgument);
  check_invalid(parse_status(replaced(generic, "fft_type RFFT", "fft_type XFFT")), "2", "unknown fft type 'XFFT'");
  CHECK(parse_status(replaced(generic, "fft_length", "fft_size")).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("stablehlo: triangular_solve in the generic form, as JAX exports it, and its errors") {
  const std::string text = program(
      "(%a: tensor<2x8x8xf32>, %b: tensor<2x10x8xf32>) -> tensor<2x10x8xf32>",
      R"(  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = false, lower = false, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = true}> : (tensor<2x8x8xf32>, tensor<2x10x8xf32>) -> tensor<2x10x8xf32>
  return %0 : tensor<2x10x8xf32>
)");
  Graph g = graph_ok(text);
  const auto& a = first_node(g, OpCode::kTriangularSolve).attr<TriangularSolveAttrs>();
  CHECK(a == TriangularSolveAttrs{false, false, true, Transpose::kAdjoint});
  check_round_trip(g);
  check_invalid(parse_status(replaced(text, "ADJOINT", "CONJUGATE")), "2", "unknown transpose_a 'CONJUGATE'");
  check_invalid(parse_status(replaced(text, "left_side = false", "left_side = true")), "2", "triangular_solve: b f32[2,10,8] dimension 1 is 10");
  CHECK(parse_status(replaced(text, "lower = false", "lower = 1")).code() == StatusCode::kInvalidArgument);
  check_invalid(parse_status(replaced(text, "transpose_a = #stablehlo<transpose ADJOINT>, ", "")), "2", "stablehlo.triangular_solve needs transpose_a");
}

TEST_CASE("stablehlo: rng_bit_generator in both forms gives the spec's example, and its errors") {
  // The spec's example, in the generic form, then JAX's pretty form of the same op.
  const std::string generic = program(
      "(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xui64>)",
      "  %0:2 = \"stablehlo.rng_bit_generator\"(%s) {rng_algorithm = #stablehlo<rng_algorithm "
      "THREE_FRY>} : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xui64>)\n"
      "  return %0#0, %0#1 : tensor<2xui64>, tensor<2x2xui64>\n");
  const std::string pretty = program(
      "(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xui64>)",
      "  %output_state, %output = stablehlo.rng_bit_generator %s, algorithm =  THREE_FRY : "
      "(tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xui64>)\n"
      "  return %output_state, %output : tensor<2xui64>, tensor<2x2xui64>\n");
  for (const std::string& text : {generic, pretty}) {
    const Graph g = graph_ok(text);
    const auto& a = first_node(g, OpCode::kRngBitGenerator).attr<RngBitGeneratorAttrs>();
    CHECK(a == RngBitGeneratorAttrs{RngAlgorithm::kThreeFry, Shape(kU64, {2, 2})});
    check_round_trip(g);
    const std::vector<Literal> args = {Literal::vector<std::uint64_t>({1, 2})};
    StatusOr<std::vector<Literal>> r = reference::evaluate(g, args);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK((*r)[0] == Literal::vector<std::uint64_t>({1, 6}));
    Literal bits(Shape(kU64, {2, 2}));
    const std::uint64_t want[] = {9236835810183407956ull, 16087790271692313299ull,
                                  18212823393184779219ull, 2658481902456610144ull};
    std::memcpy(bits.untyped_data(), want, sizeof want);
    CHECK((*r)[1] == bits);
  }
  check_invalid(parse_status(replaced(pretty, "THREE_FRY", "MERSENNE")), "2",
                "unknown rng_algorithm 'MERSENNE' (expected DEFAULT, THREE_FRY or PHILOX)");
  check_invalid(parse_status(replaced(generic, "THREE_FRY", "MERSENNE")), "2",
                "unknown rng_algorithm 'MERSENNE'");
  check_invalid(parse_status(replaced(pretty, "algorithm =", "algo =")), "2", "expected 'algorithm'");
  check_invalid(parse_status(replaced(generic, "rng_algorithm =", "algorithm =")), "2",
                "stablehlo.rng_bit_generator needs rng_algorithm");
  // The state: u64 of two elements (three only for PHILOX); two declared results; an integer
  // or floating-point output.
  auto with = [](std::string_view state, std::string_view algorithm, std::string_view bits) {
    return program(str_cat("(%s: ", state, ") -> ", bits),
                   str_cat("  %0:2 = stablehlo.rng_bit_generator %s, algorithm = ", algorithm,
                           " : (", state, ") -> (", state, ", ", bits, ")\n  return %0#1 : ",
                           bits, "\n"));
  };
  CHECK(parse_status(with("tensor<2xui64>", "DEFAULT", "tensor<5xf32>")).ok());
  CHECK(parse_status(with("tensor<3xui64>", "PHILOX", "tensor<5xi32>")).ok());
  check_invalid(parse_status(with("tensor<3xui64>", "THREE_FRY", "tensor<5xf32>")), "2",
                "rng_bit_generator: initial_state u64[3] has 3 elements, but THREE_FRY takes 2");
  check_invalid(parse_status(with("tensor<4xui64>", "PHILOX", "tensor<5xf32>")), "2",
                "but PHILOX takes 2 or 3");
  check_invalid(parse_status(with("tensor<2xi64>", "THREE_FRY", "tensor<5xf32>")), "2",
                "must be a 1-dimensional ui64 tensor");
  check_invalid(parse_status(with("tensor<2xui64>", "THREE_FRY", "tensor<5xi1>")), "2",
                "rng_bit_generator: output has element type pred");
  check_invalid(parse_status(with("tensor<2xui64>", "THREE_FRY", "tensor<5xcomplex<f32>>")), "2",
                "rng_bit_generator: output has element type c64");
  check_invalid(parse_status(program("(%s: tensor<2xui64>) -> tensor<2xui64>",
                                     "  %0 = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY"
                                     " : (tensor<2xui64>) -> tensor<2xui64>\n"
                                     "  return %0 : tensor<2xui64>\n")),
                "2", "has two results, the new state and the output");
}

TEST_CASE("stablehlo: within_rounding scales by the largest magnitude, and the upstream markers") {
  using stablehlo::within_rounding;
  auto v = [](std::initializer_list<float> x) { return Literal::vector<float>(x); };
  // Bound: 64 float epsilons times 1000, about 7.6e-3, for every element.
  CHECK(within_rounding(v({1000, 1e-3f}), v({1000, 2e-3f})).ok());
  CHECK_FALSE(within_rounding(v({1000, 1e-3f}), v({1000, 2e-2f})).ok());
  CHECK_FALSE(within_rounding(v({1, 2}), v({1})).ok());
  CHECK(within_rounding(Literal::vector<std::int32_t>({3}), Literal::vector<std::int32_t>({3})).ok());
  CHECK_FALSE(within_rounding(Literal::vector<std::int32_t>({3}), Literal::vector<std::int32_t>({4})).ok());
  CHECK(stablehlo::marked_unchecked_upstream("// RUN-DISABLED(no interpreter support) x\n// y\nmodule"));
  CHECK_FALSE(stablehlo::marked_unchecked_upstream("module\n// RUN-DISABLED(no interpreter support)\n"));
  CHECK(stablehlo::marked_inaccurate("  // a\n// RUN-DISABLED(inaccurate)\n"));
}

// ---- The op table --------------------------------------------------------------------------

namespace {

/// The arguments every op-table sample may use.
constexpr std::string_view kSampleArgs =
    "(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %n: tensor<2x3xi32>, %p: tensor<2x3xi1>, "
    "%c: tensor<2x3xcomplex<f32>>, %k: tensor<i32>, %s: tensor<f32>, %t: tensor<i1>, "
    "%u: tensor<2xui64>, %v: tensor<4xf32>, %j: tensor<2x1xi32>, %w: tensor<2xf32>, "
    "%q: tensor<2x2xf32>, %l: tensor<1x4x2xf32>, %r: tensor<3x2x2xf32>)";

/// One op written in each of its forms: lines that define %0 (or %0:N), and the types of
/// the results that @main returns. `extra` is more module text (a callee).
struct Sample {
  std::vector<std::string> results;
  std::string pretty;
  std::string generic;
  std::string extra = {};
};

/// A region `^bb0(%lhs, %rhs): %1 = <op> %lhs, %rhs; return %1` on f32 scalars.
std::string scalar_region(std::string_view op, std::string_view result = "tensor<f32>") {
  const std::string types = "(tensor<f32>, tensor<f32>) -> " + std::string(result);
  return str_cat("  ^bb0(%lhs: tensor<f32>, %rhs: tensor<f32>):\n    %1 = ", op, " %lhs, %rhs : ", types,
                 "\n    stablehlo.return %1 : ", result, "\n");
}

/// Every op of the table that is more than its operands and types, written by hand after the
/// StableHLO spec and JAX's output; element-wise ops are generated by elementwise_sample.
std::map<std::string, Sample, std::less<>> written_samples() {
  const std::string add_region = scalar_region("stablehlo.add");
  std::map<std::string, Sample, std::less<>> s;
  s["stablehlo.constant"] = {
      {"tensor<2xf32>"},
      "%0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>",
      "%0 = \"stablehlo.constant\"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> "
      "tensor<2xf32>"};
  s["arith.constant"] = {{"tensor<2xf32>"},
                         "%0 = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>",
                         "%0 = \"arith.constant\"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf32>"};
  s["stablehlo.iota"] = {{"tensor<2x3xi32>"},
                         "%0 = stablehlo.iota dim = 1 : tensor<2x3xi32>",
                         "%0 = \"stablehlo.iota\"() <{iota_dimension = 1 : i64}> : () -> "
                         "tensor<2x3xi32>"};
  for (std::string_view position : {"stablehlo.replica_id", "stablehlo.partition_id"})
    s[std::string(position)] = {{"tensor<ui32>"},
                                str_cat("%0 = ", position, " : tensor<ui32>"),
                                str_cat("%0 = \"", position, "\"() : () -> tensor<ui32>")};
  // Tokens: after_all's pretty form, the others' generic one.
  const std::string token = "%tok = stablehlo.after_all : !stablehlo.token\n  ";
  s["stablehlo.after_all"] = {{"!stablehlo.token"},
                              token + "%0 = stablehlo.after_all %tok, %tok : !stablehlo.token",
                              "%tok = \"stablehlo.after_all\"() : () -> !stablehlo.token\n  "
                              "%0 = \"stablehlo.after_all\"(%tok, %tok) : (!stablehlo.token, !stablehlo.token) -> "
                              "!stablehlo.token"};
  s["stablehlo.send"] = {{"!stablehlo.token"}, "",
                         token + "%0 = \"stablehlo.send\"(%x, %n, %tok) {channel_handle = "
                                 "#stablehlo.channel_handle<handle = 2, type = 1>, is_host_transfer = false, "
                                 "source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : "
                                 "(tensor<2x3xf32>, tensor<2x3xi32>, !stablehlo.token) -> !stablehlo.token"};
  s["stablehlo.recv"] = {{"tensor<2x3xf32>", "!stablehlo.token"}, "",
                         token + "%0:2 = \"stablehlo.recv\"(%tok) {channel_handle = "
                                 "#stablehlo.channel_handle<handle = 2, type = 3>, is_host_transfer = true} : "
                                 "(!stablehlo.token) -> (tensor<2x3xf32>, !stablehlo.token)"};
  s["stablehlo.infeed"] = {{"tensor<2x3xf32>", "tensor<2xui64>", "!stablehlo.token"}, "",
                           token + "%0:3 = \"stablehlo.infeed\"(%tok) {infeed_config = \"q\", layout = [[1, 0], [0]]} : "
                                   "(!stablehlo.token) -> (tensor<2x3xf32>, tensor<2xui64>, !stablehlo.token)"};
  s["stablehlo.outfeed"] = {{"!stablehlo.token"}, "",
                            token + "%0 = \"stablehlo.outfeed\"(%x, %tok) {outfeed_config = \"\"} : "
                                    "(tensor<2x3xf32>, !stablehlo.token) -> !stablehlo.token"};
  const std::string pair = "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>";
  s["stablehlo.all_reduce"] = {{"tensor<2x3xf32>"}, "",
                               str_cat("%0 = \"stablehlo.all_reduce\"(%x) ({\n", add_region, "}) {", pair,
                                       "} : (tensor<2x3xf32>) -> tensor<2x3xf32>")};
  s["stablehlo.collective_reduce"] = {{"tensor<2x3xf32>"}, "",
                                      str_cat("%0 = \"stablehlo.collective_reduce\"(%x) ({\n", add_region, "}) {", pair,
                                              "} : (tensor<2x3xf32>) -> tensor<2x3xf32>")};
  s["stablehlo.reduce_scatter"] = {{"tensor<1x3xf32>"}, "",
                                   str_cat("%0 = \"stablehlo.reduce_scatter\"(%x) ({\n", add_region,
                                           "}) {scatter_dimension = 0 : i64, ", pair,
                                           "} : (tensor<2x3xf32>) -> tensor<1x3xf32>")};
  s["stablehlo.all_gather"] = {{"tensor<2x6xf32>"}, "",
                               str_cat("%0 = \"stablehlo.all_gather\"(%x) {all_gather_dim = 1 : i64, ", pair,
                                       "} : (tensor<2x3xf32>) -> tensor<2x6xf32>")};
  s["stablehlo.all_to_all"] = {{"tensor<1x6xf32>"}, "",
                               str_cat("%0 = \"stablehlo.all_to_all\"(%x) {split_dimension = 0 : i64, "
                                       "concat_dimension = 1 : i64, split_count = 2 : i64, ", pair,
                                       "} : (tensor<2x3xf32>) -> tensor<1x6xf32>")};
  s["stablehlo.collective_permute"] = {
      {"tensor<2x3xf32>"}, "",
      "%0 = \"stablehlo.collective_permute\"(%x) {source_target_pairs = dense<[[0, 1], [1, 0]]> : "
      "tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2x3xf32>) -> "
      "tensor<2x3xf32>"};
  s["stablehlo.collective_broadcast"] = {{"tensor<2x3xf32>"}, "",
                                         str_cat("%0 = \"stablehlo.collective_broadcast\"(%x) {", pair,
                                                 "} : (tensor<2x3xf32>) -> tensor<2x3xf32>")};
  s["interpreter.run_parallel"] = {
      {"tensor<2x3xf32>"}, "",
      "%0 = \"interpreter.run_parallel\"(%x) {programs = [[@f]]} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
      "func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n  return %a : tensor<2x3xf32>\n}\n"};
  s["stablehlo.compare"] = {
      {"tensor<2x3xi1>"},
      "%0 = stablehlo.compare  GT, %x, %y,  TOTALORDER : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
      "tensor<2x3xi1>",
      "%0 = \"stablehlo.compare\"(%x, %y) <{compare_type = #stablehlo<comparison_type "
      "TOTALORDER>, comparison_direction = #stablehlo<comparison_direction GT>}> : "
      "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>"};
  const std::pair<std::string_view, std::string_view> from_type[] = {
      {"stablehlo.convert", "tensor<2x3xf64>"},
      {"stablehlo.bitcast_convert", "tensor<2x3xi32>"},
      {"stablehlo.reshape", "tensor<3x2xf32>"}};
  for (const auto& [name, result] : from_type)
    s[std::string(name)] = {{std::string(result)},
                            str_cat("%0 = ", name, " %x : (tensor<2x3xf32>) -> ", result),
                            str_cat("%0 = \"", name, "\"(%x) : (tensor<2x3xf32>) -> ", result)};
  s["stablehlo.reduce_precision"] = {
      {"tensor<2x3xf32>"},
      "%0 = stablehlo.reduce_precision %x, format = e5m10 : tensor<2x3xf32>",
      "%0 = \"stablehlo.reduce_precision\"(%x) <{exponent_bits = 5 : i32, mantissa_bits = 10 : "
      "i32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>"};
  s["stablehlo.broadcast_in_dim"] = {
      {"tensor<2x4x3xf32>"},
      "%0 = stablehlo.broadcast_in_dim %x, dims = [0, 2] : (tensor<2x3xf32>) -> "
      "tensor<2x4x3xf32>",
      "%0 = \"stablehlo.broadcast_in_dim\"(%x) <{broadcast_dimensions = array<i64: 0, 2>}> : "
      "(tensor<2x3xf32>) -> tensor<2x4x3xf32>"};
  s["stablehlo.broadcast"] = {
      {"tensor<4x2x3xf32>"},
      "%0 = stablehlo.broadcast %x, sizes = [4] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>",
      "%0 = \"stablehlo.broadcast\"(%x) <{broadcast_sizes = array<i64: 4>}> : "
      "(tensor<2x3xf32>) -> tensor<4x2x3xf32>"};
  s["stablehlo.transpose"] = {
      {"tensor<3x2xf32>"},
      "%0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>",
      "%0 = \"stablehlo.transpose\"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) "
      "-> tensor<3x2xf32>"};
  s["stablehlo.slice"] = {
      {"tensor<2x1xf32>"},
      "%0 = stablehlo.slice %x [0:2, 1:3:2] : (tensor<2x3xf32>) -> tensor<2x1xf32>",
      "%0 = \"stablehlo.slice\"(%x) <{limit_indices = array<i64: 2, 3>, start_indices = "
      "array<i64: 0, 1>, strides = array<i64: 1, 2>}> : (tensor<2x3xf32>) -> tensor<2x1xf32>"};
  s["stablehlo.concatenate"] = {
      {"tensor<4x3xf32>"},
      "%0 = stablehlo.concatenate %x, %y, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
      "tensor<4x3xf32>",
      "%0 = \"stablehlo.concatenate\"(%x, %y) <{dimension = 0 : i64}> : (tensor<2x3xf32>, "
      "tensor<2x3xf32>) -> tensor<4x3xf32>"};
  s["stablehlo.pad"] = {
      {"tensor<4x4xf32>"},
      "%0 = stablehlo.pad %x, %s, low = [0, 1], high = [1, 0], interior = [1, 0] : "
      "(tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>",
      "%0 = \"stablehlo.pad\"(%x, %s) <{edge_padding_high = array<i64: 1, 0>, edge_padding_low "
      "= array<i64: 0, 1>, interior_padding = array<i64: 1, 0>}> : (tensor<2x3xf32>, "
      "tensor<f32>) -> tensor<4x4xf32>"};
  s["stablehlo.reverse"] = {
      {"tensor<2x3xf32>"},
      "%0 = stablehlo.reverse %x, dims = [1] : tensor<2x3xf32>",
      "%0 = \"stablehlo.reverse\"(%x) <{dimensions = array<i64: 1>}> : (tensor<2x3xf32>) -> "
      "tensor<2x3xf32>"};
  s["stablehlo.dynamic_slice"] = {
      {"tensor<1x2xf32>"},
      "%0 = stablehlo.dynamic_slice %x, %k, %k, sizes = [1, 2] : (tensor<2x3xf32>, tensor<i32>, "
      "tensor<i32>) -> tensor<1x2xf32>",
      "%0 = \"stablehlo.dynamic_slice\"(%x, %k, %k) <{slice_sizes = array<i64: 1, 2>}> : "
      "(tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>"};
  s["stablehlo.dynamic_update_slice"] = {
      {"tensor<2x3xf32>"},
      "%0 = stablehlo.dynamic_update_slice %x, %q, %k, %k : (tensor<2x3xf32>, tensor<2x2xf32>, "
      "tensor<i32>, tensor<i32>) -> tensor<2x3xf32>",
      "%0 = \"stablehlo.dynamic_update_slice\"(%x, %q, %k, %k) : (tensor<2x3xf32>, "
      "tensor<2x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>"};
  s["stablehlo.gather"] = {
      {"tensor<2xf32>"},
      "",
      "%0 = \"stablehlo.gather\"(%v, %j) <{dimension_numbers = #stablehlo.gather<"
      "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = "
      "array<i64: 1>}> : (tensor<4xf32>, tensor<2x1xi32>) -> tensor<2xf32>"};
  s["stablehlo.scatter"] = {
      {"tensor<4xf32>"},
      "",
      "%0 = \"stablehlo.scatter\"(%v, %j, %w) <{scatter_dimension_numbers = "
      "#stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
      "index_vector_dim = 1>}> ({\n" +
          add_region + "  }) : (tensor<4xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4xf32>"};
  s["stablehlo.reduce"] = {
      {"tensor<2xf32>"},
      "%0 = stablehlo.reduce(%x init: %s) applies stablehlo.add across dimensions = [1] : "
      "(tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>",
      "%0 = \"stablehlo.reduce\"(%x, %s) <{dimensions = array<i64: 1>}> ({\n" + add_region +
          "  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>"};
  s["stablehlo.dot_general"] = {
      {"tensor<2xf32>"},
      "%0 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0], contracting_dims = [1] x "
      "[1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xf32>",
      "%0 = \"stablehlo.dot_general\"(%x, %y) <{dot_dimension_numbers = "
      "#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
      "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>}> : "
      "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xf32>"};
  s["stablehlo.dot"] = {
      {"tensor<f32>"},
      "%0 = stablehlo.dot %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>",
      "%0 = \"stablehlo.dot\"(%v, %v) : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>"};
  s["stablehlo.reduce_window"] = {
      {"tensor<2x2xf32>"},
      "",
      "%0 = \"stablehlo.reduce_window\"(%x, %s) <{window_dimensions = array<i64: 1, 2>}> ({\n" +
          scalar_region("stablehlo.maximum") +
          "  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x2xf32>"};
  s["stablehlo.select_and_scatter"] = {
      {"tensor<2x3xf32>"},
      "",
      "%0 = \"stablehlo.select_and_scatter\"(%x, %q, %s) <{window_dimensions = array<i64: 1, "
      "2>}> ({\n" +
          scalar_region("stablehlo.compare GE,", "tensor<i1>") + "  }, {\n" + add_region +
          "  }) : (tensor<2x3xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x3xf32>"};
  s["stablehlo.convolution"] = {
      {"tensor<1x7x2xf32>"},
      "%0 = stablehlo.convolution(%l, %r) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = "
      "{pad = [[1, 1]], lhs_dilate = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 "
      ": i64} : (tensor<1x4x2xf32>, tensor<3x2x2xf32>) -> tensor<1x7x2xf32>",
      "%0 = \"stablehlo.convolution\"(%l, %r) <{batch_group_count = 1 : i64, dimension_numbers "
      "= #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64, "
      "lhs_dilation = array<i64: 2>, padding = dense<1> : tensor<1x2xi64>}> : "
      "(tensor<1x4x2xf32>, tensor<3x2x2xf32>) -> tensor<1x7x2xf32>"};
  s["stablehlo.sort"] = {
      {"tensor<4xf32>"},
      "",
      "%0 = \"stablehlo.sort\"(%v) <{dimension = 0 : i64}> ({\n" +
          scalar_region("stablehlo.compare LT,", "tensor<i1>") +
          "  }) : (tensor<4xf32>) -> tensor<4xf32>"};
  s["stablehlo.fft"] = {
      {"tensor<3xcomplex<f32>>"},
      "%0 = stablehlo.fft %v, type =  RFFT, length = [4] : (tensor<4xf32>) -> "
      "tensor<3xcomplex<f32>>",
      "%0 = \"stablehlo.fft\"(%v) <{fft_length = array<i64: 4>, fft_type = #stablehlo<fft_type "
      "RFFT>}> : (tensor<4xf32>) -> tensor<3xcomplex<f32>>"};
  s["stablehlo.triangular_solve"] = {
      {"tensor<2x3xf32>"},
      "",
      "%0 = \"stablehlo.triangular_solve\"(%q, %x) <{left_side = true, lower = true, "
      "transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : "
      "(tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>"};
  s["stablehlo.rng_bit_generator"] = {
      {"tensor<2xui64>", "tensor<2x2xui32>"},
      "%0:2 = stablehlo.rng_bit_generator %u, algorithm =  THREE_FRY : (tensor<2xui64>) -> "
      "(tensor<2xui64>, tensor<2x2xui32>)",
      "%0:2 = \"stablehlo.rng_bit_generator\"(%u) <{rng_algorithm = #stablehlo<rng_algorithm "
      "THREE_FRY>}> : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xui32>)"};
  const std::string cond =
      "    %three = stablehlo.constant dense<3> : tensor<i32>\n"
      "    %1 = stablehlo.compare  LT, %it, %three,  SIGNED : (tensor<i32>, tensor<i32>) -> "
      "tensor<i1>\n"
      "    stablehlo.return %1 : tensor<i1>\n";
  const std::string body =
      "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
      "    %1 = stablehlo.add %it, %one : tensor<i32>\n"
      "    %2 = stablehlo.add %acc, %s : tensor<f32>\n"
      "    stablehlo.return %1, %2 : tensor<i32>, tensor<f32>\n";
  const std::string block = "  ^bb0(%it: tensor<i32>, %acc: tensor<f32>):\n";
  s["stablehlo.while"] = {
      {"tensor<i32>", "tensor<f32>"},
      "%0:2 = stablehlo.while(%it = %k, %acc = %s) : tensor<i32>, tensor<f32>\n  cond {\n" +
          cond + "  } do {\n" + body + "  }",
      "%0:2 = \"stablehlo.while\"(%k, %s) ({\n" + block + cond + "  }, {\n" + block + body +
          "  }) : (tensor<i32>, tensor<f32>) -> (tensor<i32>, tensor<f32>)"};
  s["stablehlo.case"] = {{"tensor<2x3xf32>"},
                         "",
                         "%0 = \"stablehlo.case\"(%k) ({\n    stablehlo.return %x : "
                         "tensor<2x3xf32>\n  }, {\n    %1 = stablehlo.negate %x : "
                         "tensor<2x3xf32>\n    stablehlo.return %1 : tensor<2x3xf32>\n  }) : "
                         "(tensor<i32>) -> tensor<2x3xf32>"};
  s["stablehlo.if"] = {{"tensor<2x3xf32>"},
                       "",
                       "%0 = \"stablehlo.if\"(%t) ({\n    stablehlo.return %x : "
                       "tensor<2x3xf32>\n  }, {\n    stablehlo.return %y : tensor<2x3xf32>\n  "
                       "}) : (tensor<i1>) -> tensor<2x3xf32>"};
  s["chlo.mulhi"] = {{"tensor<2x3xi32>"},
                     "%0 = chlo.mulhi %n, %n : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>",
                     "%0 = \"chlo.mulhi\"(%n, %n) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>"};
  s["chlo.top_k"] = {
      {"tensor<2xf32>", "tensor<2xi32>"},
      "%0:2 = chlo.top_k(%v, k = 2) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)",
      "%0:2 = \"chlo.top_k\"(%v) {k = 2 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, "
      "tensor<2xi32>)"};
  // What adds no node of its own: a return ends @main here; a call inlines @twice; the
  // @Sharding custom call is its operand.
  for (std::string_view name : {"return", "func.return", "stablehlo.return", "sdy.return"})
    s[std::string(name)] = {{},
                            str_cat(name, " %x : tensor<2x3xf32>"),
                            str_cat("\"", name, "\"(%x) : (tensor<2x3xf32>) -> ()")};
  const std::string twice =
      "func.func private @twice(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
      "  %0 = stablehlo.add %a, %a : tensor<2x3xf32>\n  return %0 : tensor<2x3xf32>\n}\n";
  for (std::string_view name : {"call", "func.call"})
    s[std::string(name)] = {
        {"tensor<2x3xf32>"},
        str_cat("%0 = ", name, " @twice(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>"),
        str_cat("%0 = \"", name, "\"(%x) {callee = @twice} : (tensor<2x3xf32>) -> tensor<2x3xf32>"),
        twice};
  s["stablehlo.custom_call"] = {
      {"tensor<2x3xf32>"},
      "%0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = \"{replicated}\"} : "
      "(tensor<2x3xf32>) -> tensor<2x3xf32>",
      "%0 = \"stablehlo.custom_call\"(%x) {call_target_name = \"Sharding\", mhlo.sharding = "
      "\"{replicated}\"} : (tensor<2x3xf32>) -> tensor<2x3xf32>"};
  // JAX's annotations and identities: no node of their own (but map's body, vmapped).
  s["stablehlo.composite"] = {
      {"tensor<2x3xf32>"},
      "%0 = stablehlo.composite \"my.twice\" %x {decomposition = @twice, version = 1 : i32} : "
      "(tensor<2x3xf32>) -> tensor<2x3xf32>",
      "%0 = \"stablehlo.composite\"(%x) <{decomposition = @twice, name = \"my.twice\"}> : "
      "(tensor<2x3xf32>) -> tensor<2x3xf32>",
      twice};
  s["stablehlo.optimization_barrier"] = {
      {"tensor<2x3xf32>", "tensor<i32>"},
      "%0:2 = stablehlo.optimization_barrier %x, %k : tensor<2x3xf32>, tensor<i32>",
      "%0:2 = \"stablehlo.optimization_barrier\"(%x, %k) : (tensor<2x3xf32>, tensor<i32>) -> "
      "(tensor<2x3xf32>, tensor<i32>)"};
  for (std::string_view name : {"stablehlo.tuple", "stablehlo.get_tuple_element"})
    s[std::string(name)] = {
        {"tensor<2x3xf32>"},
        "%tu = stablehlo.tuple %x, %k : tuple<tensor<2x3xf32>, tensor<i32>>\n"
        "  %0 = stablehlo.get_tuple_element %tu[0] : (tuple<tensor<2x3xf32>, tensor<i32>>) -> "
        "tensor<2x3xf32>",
        str_cat("%0 = \"", name, "\"(%x) : (tensor<2x3xf32>) -> tuple<tensor<2x3xf32>>")};
  s["stablehlo.map"] = {{"tensor<2x3xf32>"},
                        "",
                        "%0 = \"stablehlo.map\"(%x, %y) <{dimensions = array<i64: 0, 1>}> ({\n" +
                            scalar_region("stablehlo.add") +
                            "  }) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>"};
  for (std::string_view name : {"sdy.sharding_constraint", "sdy.reshard"})
    s[std::string(name)] = {
        {"tensor<2x3xf32>"},
        str_cat("%0 = ", name, " %x <@mesh, [{}, {}]> : tensor<2x3xf32>"),
        str_cat("%0 = \"", name, "\"(%x) <{sharding = #sdy.sharding<@mesh, [{}, {}]>}> : ",
                "(tensor<2x3xf32>) -> tensor<2x3xf32>")};
  s["sdy.manual_computation"] = {
      {"tensor<2x3xf32>"},
      "%0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{}, {}]>] "
      "out_shardings=[<@mesh, [{}, {}]>] manual_axes={} (%a: tensor<2x3xf32>) {\n"
      "    %1 = stablehlo.add %a, %a : tensor<2x3xf32>\n    sdy.return %1 : tensor<2x3xf32>\n"
      "  } : (tensor<2x3xf32>) -> tensor<2x3xf32>",
      "%0 = \"sdy.manual_computation\"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>"};
  // Shape polymorphism: each becomes a constant or its static form.
  s["stablehlo.get_dimension_size"] = {
      {"tensor<i32>"},
      "%0 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x3xf32>) -> tensor<i32>",
      "%0 = \"stablehlo.get_dimension_size\"(%x) <{dimension = 1 : i64}> : (tensor<2x3xf32>) -> "
      "tensor<i32>"};
  const std::string shape23 = "%e = stablehlo.constant dense<[2, 3]> : tensor<2xi64>\n  ";
  s["stablehlo.dynamic_iota"] = {
      {"tensor<2x3xf32>"},
      shape23 + "%0 = stablehlo.dynamic_iota %e, dim = 1 : (tensor<2xi64>) -> tensor<2x3xf32>",
      shape23 + "%0 = \"stablehlo.dynamic_iota\"(%e) <{iota_dimension = 1 : i64}> : "
                "(tensor<2xi64>) -> tensor<2x3xf32>"};
  s["stablehlo.dynamic_broadcast_in_dim"] = {
      {"tensor<2x3xf32>"},
      shape23 + "%0 = stablehlo.dynamic_broadcast_in_dim %s, %e, dims = [] : (tensor<f32>, "
                "tensor<2xi64>) -> tensor<2x3xf32>",
      shape23 + "%0 = \"stablehlo.dynamic_broadcast_in_dim\"(%s, %e) <{broadcast_dimensions = "
                "array<i64>}> : (tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>"};
  const std::string shape32 = "%e = stablehlo.constant dense<[3, 2]> : tensor<2xi64>\n  ";
  s["stablehlo.dynamic_reshape"] = {
      {"tensor<3x2xf32>"},
      shape32 + "%0 = stablehlo.dynamic_reshape %x, %e : (tensor<2x3xf32>, tensor<2xi64>) -> "
                "tensor<3x2xf32>",
      shape32 + "%0 = \"stablehlo.dynamic_reshape\"(%x, %e) : (tensor<2x3xf32>, tensor<2xi64>) "
                "-> tensor<3x2xf32>"};
  const std::string bounds =
      "%a = stablehlo.constant dense<[0, 1]> : tensor<2xi64>\n"
      "  %b = stablehlo.constant dense<[2, 3]> : tensor<2xi64>\n"
      "  %d = stablehlo.constant dense<1> : tensor<2xi64>\n  ";
  s["stablehlo.real_dynamic_slice"] = {
      {"tensor<2x2xf32>"},
      bounds + "%0 = stablehlo.real_dynamic_slice %x, %a, %b, %d : (tensor<2x3xf32>, "
               "tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xf32>",
      bounds + "%0 = \"stablehlo.real_dynamic_slice\"(%x, %a, %b, %d) : (tensor<2x3xf32>, "
               "tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xf32>"};
  s["stablehlo.dynamic_pad"] = {
      {"tensor<2x7xf32>"},
      bounds + "%0 = stablehlo.dynamic_pad %x, %s, %a, %a, %a : (tensor<2x3xf32>, tensor<f32>, "
               "tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x7xf32>",
      bounds + "%0 = \"stablehlo.dynamic_pad\"(%x, %s, %a, %a, %a) : (tensor<2x3xf32>, "
               "tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x7xf32>"};
  s["stablehlo.dynamic_gather"] = {
      {"tensor<2xf32>"},
      "",
      "%e = stablehlo.constant dense<1> : tensor<1xi64>\n"
      "  %0 = \"stablehlo.dynamic_gather\"(%v, %j, %e) <{dimension_numbers = #stablehlo.gather<"
      "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>}> : "
      "(tensor<4xf32>, tensor<2x1xi32>, tensor<1xi64>) -> tensor<2xf32>"};
  s["stablehlo.dynamic_conv"] = {
      {"tensor<1x7x2xf32>"},
      "",
      "%e = stablehlo.constant dense<1> : tensor<1x2xi64>\n"
      "  %0 = \"stablehlo.dynamic_conv\"(%l, %r, %e) <{batch_group_count = 1 : i64, "
      "dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count "
      "= 1 : i64, lhs_dilation = array<i64: 2>}> : (tensor<1x4x2xf32>, tensor<3x2x2xf32>, "
      "tensor<1x2xi64>) -> tensor<1x7x2xf32>"};
  // Quantization: the quantized value is its storage integers.
  const std::string q8 = "tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:1>>";
  s["stablehlo.uniform_quantize"] = {
      {"tensor<2x3xi8>"},
      str_cat("%0 = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> ", q8),
      str_cat("%0 = \"stablehlo.uniform_quantize\"(%x) : (tensor<2x3xf32>) -> ", q8)};
  s["stablehlo.uniform_dequantize"] = {
      {"tensor<2x3xf32>"},
      str_cat("%i = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> ", q8,
              "\n  %0 = stablehlo.uniform_dequantize %i : (", q8, ") -> tensor<2x3xf32>"),
      str_cat("%i = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> ", q8,
              "\n  %0 = \"stablehlo.uniform_dequantize\"(%i) : (", q8, ") -> tensor<2x3xf32>")};
  // The check dialect; its generic form is how StableHLO's interpreter tests write it.
  for (std::string_view kind : {"eq", "close", "almost_eq"}) {
    s[str_cat("check.expect_", kind)] = {
        {},
        str_cat("check.expect_", kind, " %x, %y : tensor<2x3xf32>"),
        str_cat("\"check.expect_", kind, "\"(%x, %y) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()")};
    s[str_cat("check.expect_", kind, "_const")] = {
        {},
        str_cat("check.expect_", kind, "_const %x, dense<1.0> : tensor<2x3xf32>"),
        str_cat("\"check.expect_", kind, "_const\"(%x) <{value = dense<1.0> : tensor<2x3xf32>}> : (tensor<2x3xf32>) -> ()")};
  }
  return s;
}

/// An element-wise op on the sample arguments its operand types fit, in both forms, the
/// result type inferred by the IR's builder.
Sample elementwise_sample(const stablehlo::detail::OpSyntax& op) {
  std::vector<std::string_view> args = {"%x", "%y", "%x"};
  if (op.code == OpCode::kSelect) args = {"%p", "%x", "%y"};
  if (op.code == OpCode::kReal || op.code == OpCode::kImag) args = {"%c"};
  if (op.code == OpCode::kNot || op.code == OpCode::kPopcnt || op.code == OpCode::kCountLeadingZeros || op.code == OpCode::kAnd ||
      op.code == OpCode::kOr || op.code == OpCode::kXor || op.code == OpCode::kShiftLeft ||
      op.code == OpCode::kShiftRightArithmetic || op.code == OpCode::kShiftRightLogical)
    args = {"%n", "%n"};
  args.resize(static_cast<std::size_t>(op.operands));
  auto shape_of = [](std::string_view arg) {
    if (arg == "%n") return Shape(kS32, {2, 3});
    if (arg == "%p") return Shape(kPred, {2, 3});
    if (arg == "%c") return Shape(kC64, {2, 3});
    return Shape(kF32, {2, 3});
  };
  GraphBuilder b("sample");
  std::vector<Value> operands;
  std::string names, types;
  for (std::string_view arg : args) {
    operands.push_back(b.parameter(shape_of(arg)));
    names += str_cat(names.empty() ? "" : ", ", arg);
    types += str_cat(types.empty() ? "" : ", ", stablehlo::tensor_type_name(shape_of(arg)));
  }
  const Value result = b.op1(op.code, operands);
  REQUIRE_MESSAGE(b.ok(), op.name, ": ", b.status().to_string());
  const std::string result_type = stablehlo::tensor_type_name(b.shape(result).value());
  const std::string type = str_cat("(", types, ") -> ", result_type);
  return {{result_type},
          str_cat("%0 = ", op.name, " ", names, " : ", type),
          str_cat("%0 = \"", op.name, "\"(", names, ") : ", type)};
}

/// A module whose @main takes kSampleArgs and runs `op_lines`, returning %0 (all of its
/// `results`); with no results, `op_lines` is @main's return.
std::string sample_program(const Sample& s, std::string_view op_lines) {
  std::string values, types;
  for (std::size_t k = 0; k < s.results.size(); ++k) {
    values += str_cat(k ? ", " : "", s.results.size() == 1 ? "%0" : str_cat("%0#", k));
    types += str_cat(k ? ", " : "", s.results[k]);
  }
  const bool op_returns = s.results.empty() && !op_lines.starts_with("check.") &&
                          !op_lines.starts_with("\"check.");
  return str_cat("func.func @main", kSampleArgs, " -> (",
                 s.results.empty() ? "tensor<2x3xf32>" : types, ") {\n  ", op_lines, "\n",
                 op_returns                ? ""
                 : s.results.empty()       ? "  return %x : tensor<2x3xf32>\n"
                                           : str_cat("  return ", values, " : ", types, "\n"),
                 "}\n", s.extra);
}

}  // namespace

TEST_CASE("stablehlo: every op of the op table reads in each of its forms, to one graph") {
  using stablehlo::detail::OpSyntax;
  const std::map<std::string, Sample, std::less<>> written = written_samples();
  std::map<OpCode, int> entries_of;  // how many entries make each opcode
  for (const OpSyntax& op : stablehlo::detail::op_table()) {
    CAPTURE(op.name);
    entries_of[op.code]++;
    CHECK(stablehlo::detail::find_op(op.name) == &op);
    const bool node = op.code != OpCode::kParameter;
    // An op that makes a node is named after it (but for three spellings of other ops).
    if (node && op.name != "stablehlo.dot" && op.name != "stablehlo.broadcast" && op.name != "arith.constant") {
      StatusOr<OpCode> named = op_from_name(op.name);
      CHECK_MESSAGE((named.ok() && *named == op.code), op.name, " names another op");
    }
    const auto it = written.find(op.name);
    const bool elementwise = it == written.end() && node && !has_body(op.code) &&
                             op.pretty == &stablehlo::detail::pretty_operands;
    REQUIRE_MESSAGE((it != written.end() || elementwise), op.name,
                    " has no sample: add one to written_samples()");
    const Sample s = it != written.end() ? it->second : elementwise_sample(op);

    std::optional<Graph> pretty, generic;
    if (op.pretty != nullptr) {
      StatusOr<stablehlo::Module> m = stablehlo::parse_module(sample_program(s, s.pretty));
      REQUIRE_MESSAGE(m.ok(), m.status().to_string(), "\n", sample_program(s, s.pretty));
      pretty = m->find("main")->graph;
      if (op.name.starts_with("check.")) {
        REQUIRE(m->find("main")->checks.size() == 1);
        CHECK(m->find("main")->checks[0].target == op.name);
      }
    } else {
      check_invalid(parse_status(sample_program(s, str_cat("%0 = ", op.name, " %x : tensor<2x3xf32>"))),
                    "2:8", str_cat(op.name, " has no pretty form"));
    }
    if (op.generic && op.name.starts_with("check.")) {
      // A check is no node: its checked values are outputs of the module's function.
      const std::string text = sample_program(s, s.generic);
      StatusOr<stablehlo::Module> m = stablehlo::parse_module(text);
      REQUIRE_MESSAGE(m.ok(), m.status().to_string(), "\n", text);
      REQUIRE(m->find("main")->checks.size() == 1);
      CHECK(m->find("main")->checks[0].target == op.name);
      generic = m->find("main")->graph;
    } else if (op.generic) {
      const std::string text = sample_program(s, s.generic);
      StatusOr<Graph> g = parse_stablehlo(text);
      REQUIRE_MESSAGE(g.ok(), g.status().to_string(), "\n", text);
      generic = *std::move(g);
    } else {
      check_unsupported(parse_status(sample_program(s, s.generic)), op.name, 2);
    }
    if (pretty && generic) CHECK(fingerprint(*pretty) == fingerprint(*generic));
    const Graph& g = pretty ? *pretty : *generic;
    check_round_trip(g);
    if (!node) continue;
    // The node the op became: its opcode, and the operand and result counts the table gives
    // (the regions of control flow add the outside values they use as operands).
    const Node& n = g.node(g.outputs()[0]);
    CHECK(n.op == op.code);
    if (op.operands != stablehlo::detail::kVariadic && !is_control_flow(op.code))
      CHECK(n.operands.size() == static_cast<std::size_t>(op.operands));
    if (op.results != stablehlo::detail::kVariadic)
      CHECK(n.results.size() == static_cast<std::size_t>(op.results));
    // The table's counts agree with the IR's where the IR fixes them.
    if (op.operands != stablehlo::detail::kVariadic && operand_count(op.code) >= 0)
      CHECK(operand_count(op.code) == op.operands);
  }
  // Every op the IR has (and so every op the printer writes) is read.
  for (std::size_t i = 1; i < kOpCodeCount; ++i) {
    if (static_cast<OpCode>(i) == OpCode::kLinalg) continue;  // stablehlo.custom_call @lapack_*
    CHECK_MESSAGE(entries_of.count(static_cast<OpCode>(i)), op_name(static_cast<OpCode>(i)),
                  " is missing from the op table");
  }
  CHECK(stablehlo::detail::find_op("stablehlo.frobnicate") == nullptr);
}

TEST_CASE("stablehlo: an op the table lacks is UNIMPLEMENTED naming it, a misspelt one INVALID") {
  // The ops of the StableHLO spec: each is read, or refused in both forms as unsupported.
  constexpr std::string_view kSpecOps[] = {
      "abs", "add", "after_all", "all_gather", "all_reduce", "all_to_all", "and", "async_done",
      "async_start", "atan2", "batch_norm_grad", "batch_norm_inference", "batch_norm_training",
      "bitcast_convert", "broadcast_in_dim", "case", "cbrt", "ceil", "cholesky", "clamp",
      "collective_broadcast", "collective_permute", "collective_reduce", "compare", "complex",
      "composite", "concatenate", "constant", "convert", "convolution", "cosine",
      "count_leading_zeros", "custom_call", "divide", "dot_general", "dynamic_broadcast_in_dim",
      "dynamic_conv", "dynamic_gather", "dynamic_iota", "dynamic_pad", "dynamic_reshape",
      "dynamic_slice", "dynamic_update_slice", "exponential", "exponential_minus_one", "fft",
      "floor", "gather", "get_dimension_size", "get_tuple_element", "if", "imag", "infeed",
      "iota", "is_finite", "log", "log_plus_one", "logistic", "map", "maximum", "minimum",
      "multiply", "negate", "not", "optimization_barrier", "or", "outfeed", "pad",
      "partition_id", "popcnt", "power", "real", "recv", "reduce", "reduce_precision",
      "reduce_scatter", "reduce_window", "remainder", "replica_id", "reshape", "reverse", "rng",
      "rng_bit_generator", "round_nearest_afz", "round_nearest_even", "rsqrt", "scatter",
      "select", "select_and_scatter", "send", "shift_left", "shift_right_arithmetic",
      "shift_right_logical", "sign", "sine", "slice", "sort", "sqrt", "subtract", "tan", "tanh",
      "transpose", "triangular_solve", "tuple", "uniform_dequantize", "uniform_quantize",
      "while", "xor"};
  auto pretty = [](std::string_view name) {
    return program("(%x: tensor<2xf32>) -> tensor<2xf32>",
                   str_cat("  %0 = ", name, " %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n"));
  };
  auto generic = [](std::string_view name) {
    return program("(%x: tensor<2xf32>) -> tensor<2xf32>",
                   str_cat("  %0 = \"", name, "\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n",
                           "  return %0 : tensor<2xf32>\n"));
  };
  int read = 0;
  for (std::string_view op : kSpecOps) {
    const std::string name = str_cat("stablehlo.", op);
    CAPTURE(name);
    if (stablehlo::detail::find_op(name) != nullptr) {
      ++read;
      continue;
    }
    check_unsupported(parse_status(pretty(name)), name, 2);
    check_unsupported(parse_status(generic(name)), name, 2);
  }
  CHECK(read == 101);
  // Other dialects' ops, and CHLO's and the check dialect's that the table lacks.
  for (std::string_view name : {"mhlo.add", "tosa.add", "arith.addf", "chlo.is_inf",
                                "chlo.broadcast_add", "check.expect_serialized_eq"}) {
    CAPTURE(name);
    check_unsupported(parse_status(pretty(name)), name, 2);
    check_unsupported(parse_status(generic(name)), name, 2);
  }
  // A stablehlo name that no version of StableHLO has is a typo, as is a CHLO op under the
  // stablehlo dialect.
  for (std::string_view name : {"stablehlo.frobnicate", "stablehlo.erf"}) {
    check_invalid(parse_status(pretty(name)), "2:8", str_cat("unknown op ", name));
    check_invalid(parse_status(generic(name)), "2:8", str_cat("unknown op ", name));
  }
}

}  // namespace stablehlo_test
