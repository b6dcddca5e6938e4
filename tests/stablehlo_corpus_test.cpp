// StableHLO text on the CPU client: client.compile(text) and the JAX-exported corpus run end
// to end with its check.expect_* calls as the oracle. The corpus sweep writes
// docs/conformance.md (with PJRT_LITE_WRITE_DOCS=1) and fails when the checked-in page
// differs, so the page cannot drift from the code.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/stablehlo/runner.hpp"
#include "pjrt_lite/stablehlo/detail/lapack_names.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_ops.hpp"
#include "pjrt_lite/stablehlo/detail/vhlo_writer.hpp"
#include "corpus.hpp"

namespace stablehlo_corpus_test {


using namespace pjrt_lite;

namespace {

using InlineClient = cpu::Client<cpu::InlineExecutor>;

Literal run_one(InlineClient& client, cpu::LoadedExecutable<cpu::InlineExecutor>& exe,
                const std::vector<Literal>& args) {
  std::vector<cpu::Buffer<cpu::InlineExecutor>> buffers;
  for (const Literal& a : args) buffers.push_back(client.buffer_from_literal(a).value());
  std::vector<cpu::Buffer<cpu::InlineExecutor>*> ptrs;
  for (auto& b : buffers) ptrs.push_back(&b);
  auto out = exe.execute_sharded(ptrs, client.devices()[0]);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  REQUIRE(out->size() == 1);
  return (*out)[0].to_literal().await().value();
}

/// The op family and the first operand dtype of a corpus file name:
/// "scatter_add_bfloat16_1_2_3_bfloat16_1.mlir" -> {"scatter_add", "bfloat16"}.
std::pair<std::string, std::string> family_and_dtype(std::string_view stem) {
  static const std::set<std::string_view> kDTypes = {
      "bool",   "int8",    "int16",    "int32",   "int64",   "uint8",     "uint16",    "uint32",
      "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = stem.find('_');
    parts.push_back(stem.substr(0, at));
    if (at == std::string_view::npos) break;
    stem.remove_prefix(at + 1);
  }
  std::string family;
  for (std::string_view p : parts) {
    if (kDTypes.count(p)) return {family, std::string(p)};
    if (p.empty() || (p[0] >= '0' && p[0] <= '9')) break;
    family += family.empty() ? std::string(p) : str_cat("_", p);
  }
  return {family, "-"};
}

/// "UNIMPLEMENTED: stablehlo.scatter is not supported (line 11)" -> "stablehlo.scatter".
std::string skip_reason(std::string_view detail) {
  if (detail.find("RUN-DISABLED(inaccurate)") != std::string_view::npos)
    return "RUN-DISABLED(inaccurate)";
  if (detail.find("RUN-DISABLED(no interpreter support)") != std::string_view::npos)
    return "RUN-DISABLED(no interpreter support); within rounding of XLA's values";
  if (detail.starts_with("UNIMPLEMENTED: ")) detail.remove_prefix(15);
  if (const std::size_t at = detail.find(" is not supported"); at != std::string_view::npos)
    detail = detail.substr(0, at);
  return std::string(detail);
}

struct Tally {
  std::int64_t pass = 0, fail = 0, skip = 0;
  std::set<std::string> reasons;
  void add(const stablehlo::TestOutcome& o) {
    if (o.verdict == stablehlo::Verdict::kPass) ++pass;
    if (o.verdict == stablehlo::Verdict::kFail) ++fail;
    if (o.verdict == stablehlo::Verdict::kSkip) {
      ++skip;
      reasons.insert(skip_reason(o.detail));
    }
  }
};

/// What the corpus does not exercise, checked by tests/stablehlo_exports_test.cpp.
constexpr std::string_view kBeyondTheCorpus = R"(
## Beyond the corpus: whole programs as JAX exports them

Checked by `tests/stablehlo_exports_test.cpp` (on the CPU client, against the reference
interpreter and hand-computed values):

- Sharding custom calls: `@Sharding` (a sharding constraint), `@SPMDFullToShardShape` and
  `@SPMDShardToFullShape` (shard_map's entry and exit), `@xla.sdy.GlobalToLocalShape` and
  `@xla.sdy.LocalToGlobalShape` (the same in Shardy's round-trip form, with the meshes of
  `xla.sdy.meshes`), `@xla.sdy.FuncResultSharding` (an identity). In a module of one
  partition they are identities and one that changes its operand's shape is UNIMPLEMENTED;
  over several partitions (`mhlo.num_partitions`, or the partitions its shardings name)
  `Client::compile` partitions the program (`tests/spmd_test.cpp`, README, "Sharded programs");
  `@annotate_device_placement`,
  `@MoveToHost`, `@MoveToDevice` (identities: the memory kind a result reaches is recorded in
  `Function::result_memory_kinds`, and `Client::compile` puts that output in a memory space of
  the kind); `@shape_assertion` (its condition must fold
  once shapes are known; a false one fails with its `error_message`, formatted with its
  operands); `@stablehlo.dynamic_top_k` and `@stablehlo.dynamic_rng_bit_generator` (their
  static forms); the check dialect's `@check.expect_*`. `@stablehlo.dynamic_approx_top_k` is
  UNIMPLEMENTED.
- XLA's high-level ops as JAX's serializer keeps them in portable artifacts:
  `@mhlo.topk` (`mhlo.attributes = {k = ..., largest = true}`, `mhlo.version = 1`; `largest =
  false` and other versions are UNIMPLEMENTED) and `@mhlo.erf` read as `chlo.top_k` and
  `chlo.erf` (tests/stablehlo_bytecode_test.cpp).
- Ops without a node of their own: `stablehlo.composite` (its decomposition),
  `stablehlo.optimization_barrier`, `stablehlo.tuple` and `stablehlo.get_tuple_element`
  (pretty form), `stablehlo.map` (its scalar body, vmapped over the elements),
  `sdy.sharding_constraint`, `sdy.reshard` (constraints), `sdy.manual_computation` (its body:
  as is when every manual axis has size 1, on each device's block when it is manual over
  every axis of its mesh); `mhlo.sharding` and `sdy.sharding` attributes become the
  arguments' and results' shardings;
  `mhlo.memory_kind` on arguments and results and `mhlo.layout_mode` layouts (`"{0,1}"`) become
  `Client::compile`'s argument and output memory kinds and layouts (a tiled layout is
  UNIMPLEMENTED).
- `stablehlo.count_leading_zeros` on every integer type (an IR op, see docs/ops.md).
- Shape polymorphism: `?` dimensions are refined from concrete argument shapes
  (`stablehlo::parse_module(text, shapes)`, `parse_stablehlo(text, shapes)`,
  `stablehlo::compile_stablehlo(client, text, shapes)`); `get_dimension_size` becomes a
  constant, and `dynamic_iota`, `dynamic_reshape`, `dynamic_broadcast_in_dim`, `dynamic_pad`,
  `dynamic_gather`, `dynamic_conv` and `real_dynamic_slice` their static forms once their
  shape operands fold; private functions with `?` types are built for each signature they
  are called with. A `?` that does not fold is INVALID_ARGUMENT naming the op.
- JAX's serialized exports (`Exported.serialize()`, serialization versions 1 to 11, calling
  convention 9 and later): `stablehlo::read_jax_export` and `compile_jax_export`
  (`tests/jax_export_test.cpp`: one and several platforms, unused inputs dropped, symbolic
  shapes, an export for two devices; ordered effects are UNIMPLEMENTED).

## StableHLO's own test files: quantized programs and the interpreter's tests

Not in the corpus above, and not kept in this repository: openxla/stablehlo's
`stablehlo/testdata/quantized` (126 programs JAX exported with quantized types, each checking
its dequantized result with `custom_call @check.eq`) and `stablehlo/tests/interpret` (104 files
of `// -----`-separated test functions). Run as `stablehlo_run <directory>` on a checkout of
openxla/stablehlo at 3c9301c: **126 passed** of the quantized programs; of the interpreter's
tests 95 passed, none failed, 6 skipped and 3 unchecked. Skipped, each with UNIMPLEMENTED
naming what is missing: chlo.ragged_dot, chlo.scan; interpreter.probe and interpreter.print
(the interpreter's instrumentation, checked by FileCheck on its output); a dot_general
algorithm (tf32 on i64 operands); `@main` with arguments given on the RUN line.
Unchecked (it ran, but one of its parts checks nothing, `stablehlo::Verdict::kUnchecked`):
tuple_and_get_tuple_element, after_all and outfeed.
What they need is tested in `tests/quantized_test.cpp`: quantized types (docs/ops.md), the
files' `// -----` parts (`stablehlo::split_input_file`, each part run on its own: @main or its
only function), `custom_call @check.eq` (integers equal, floats within 1e-4, returning whether
it holds), the check dialect's `tolerance`, nested tuples and programs that check nothing; in
`tests/collectives_test.cpp`: all_gather and reduce_scatter over replicas and partitions
(`num_partitions`), all_reduce's replica groups padded with -1, collective_broadcast's
`has_dynamic_root`, collective_reduce (an all_reduce kept at each group's root, across
replicas; across partitions it is UNIMPLEMENTED), and the tokens: send and recv round a ring and between different functions
per process (one program branching on the process), infeed from `interpreter.run_parallel`'s
queue functions, outfeed and after_all; in `tests/narrow_types_test.cpp`: chlo.mulhi at every integer width and
bitcast_convert of i1 (one bit each).
)";

std::string conformance_markdown(const std::map<std::string, Tally>& families,
                                 const std::map<std::string, Tally>& dtypes, const Tally& total) {
  std::ostringstream os;
  os << "# StableHLO conformance\n\n"
     << "Generated by `tests/stablehlo_corpus_test.cpp` from a run of the JAX-exported corpus\n"
     << "(`PJRT_LITE_STABLEHLO_TESTDATA`, 2,325 programs of openxla/stablehlo `testdata`) on the "
        "CPU\n"
     << "client; the test fails when this page and the code disagree. Regenerate it with\n\n"
     << "```sh\n"
     << "cmake --build build -j2 --target pjrt_lite_tests && \\\n"
     << "  PJRT_LITE_WRITE_DOCS=1 ./build/tests/pjrt_lite_tests -tc='stablehlo corpus*'\n"
     << "```\n\n"
     << "A file passes when every `check.expect_*` call in it holds (see\n"
     << "`include/pjrt_lite/stablehlo/checks.hpp`), and is skipped when it uses an op or type the "
        "IR\n"
     << "lacks (named in the last column). `examples/stablehlo_run` prints the same verdict per "
        "file.\n\n"
     << "**" << total.pass << " passed, " << total.fail << " failed, " << total.skip
     << " skipped.**\n\n"
     << "## By element type (of the first operand, as the file name says)\n\n"
     << "| dtype | pass | fail | skip |\n|---|---|---|---|\n";
  for (const auto& [d, t] : dtypes)
    os << "| " << d << " | " << t.pass << " | " << t.fail << " | " << t.skip << " |\n";
  os << "\n## By op family (the file name's prefix)\n\n"
     << "| family | pass | fail | skip | skipped for |\n|---|---|---|---|---|\n";
  for (const auto& [f, t] : families) {
    os << "| " << f << " | " << t.pass << " | " << t.fail << " | " << t.skip << " | ";
    bool first = true;
    for (const std::string& r : t.reasons) {
      os << (first ? "" : ", ") << "`" << r << "`";
      first = false;
    }
    os << " |\n";
  }
  os << kBeyondTheCorpus;
  os << stablehlo::detail::lapack_targets_markdown();
  os << stablehlo::detail::portable_artifacts_markdown();
  os << stablehlo::detail::portable_artifact_writer_markdown();
  return os.str();
}

}  // namespace

TEST_CASE("stablehlo compile: client.compile(text) runs like the built graph") {
  auto client = InlineClient::create({}).value();
  constexpr std::string_view kText = R"(
module @jit_f {
  func.func public @main(%x: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = ""}) {
    %c = stablehlo.constant dense<2.0> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.multiply %x, %0 : tensor<3xf32>
    %2 = stablehlo.tanh %1 : tensor<3xf32>
    stablehlo.custom_call @check.expect_close(%2, %2) {has_side_effect = true} : (tensor<3xf32>, tensor<3xf32>) -> ()
    return %2 : tensor<3xf32>
  }
})";
  auto exe = client->compile(kText);
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  // The check's values are not outputs of the compiled program.
  CHECK(exe->output_shapes().size() == 1);
  const Literal x = Literal::vector<float>({-1.0f, 0.25f, 3.0f});
  const Literal got = run_one(*client, *exe, {x});
  // The same program through the graph path is the same compiled program (a cache hit).
  const Graph g = parse_stablehlo(kText).value();
  const auto before = client->compile_cache_stats();
  auto exe2 = client->compile(g);
  REQUIRE(exe2.ok());
  CHECK(client->compile_cache_stats().first == before.first + 1);
  CHECK(got == run_one(*client, *exe2, {x}));
  const auto y = got.data<float>();
  CHECK(y[0] == doctest::Approx(std::tanh(-2.0)));
  CHECK(y[2] == doctest::Approx(std::tanh(6.0)));
}

TEST_CASE("stablehlo compile: a module without @main compiles its one public function") {
  auto client = InlineClient::create({}).value();
  auto exe = client->compile(R"(
func.func private @helper(%a: tensor<2xi32>) -> tensor<2xi32> {
  %0 = stablehlo.add %a, %a : tensor<2xi32>
  return %0 : tensor<2xi32>
}
func.func @twice(%a: tensor<2xi32>) -> tensor<2xi32> {
  %0 = call @helper(%a) : (tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
})");
  REQUIRE_MESSAGE(exe.ok(), exe.status().to_string());
  CHECK(run_one(*client, *exe, {Literal::vector<std::int32_t>({3, -4})}) ==
        Literal::vector<std::int32_t>({6, -8}));
  const Status several = client
                             ->compile(R"(
func.func @f(%a: tensor<i32>) -> tensor<i32> { return %a : tensor<i32> }
func.func @g(%a: tensor<i32>) -> tensor<i32> { return %a : tensor<i32> })")
                             .status();
  CHECK(several.code() == StatusCode::kInvalidArgument);
  CHECK(several.message().find("several public functions") != std::string_view::npos);
}

TEST_CASE("stablehlo compile: bad text is a Status with line:column, unknown ops UNIMPLEMENTED") {
  auto client = InlineClient::create({}).value();
  const Status malformed = client
                               ->compile(
                                   "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                                   "  %0 = stablehlo.add %a, : tensor<2xf32>\n"
                                   "  return %0 : tensor<2xf32>\n}\n")
                               .status();
  CHECK(malformed.code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(malformed.message().find("2:26: expected an operand") != std::string_view::npos,
                malformed.message());
  const Status ill_typed = client
                               ->compile(
                                   "func.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n"
                                   "  return %a : tensor<2xf32>\n}\n")
                               .status();
  CHECK(ill_typed.code() == StatusCode::kInvalidArgument);
  const Status unknown = client
                             ->compile(
                                 "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                                 "  %0 = stablehlo.cholesky %a, lower = true : "
                                 "(tensor<2xf32>) -> tensor<2xf32>\n"
                                 "  return %0 : tensor<2xf32>\n}\n")
                             .status();
  CHECK(unknown.code() == StatusCode::kUnimplemented);
  CHECK_MESSAGE(unknown.message().find("stablehlo.cholesky") != std::string_view::npos,
                unknown.message());
  CHECK(client->compile("").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("stablehlo corpus: every program passes or names what it lacks, and docs/conformance.md is current") {
  if (testing::skip_without_corpus()) return;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(testing::corpus_dir()))
    if (entry.path().extension() == ".mlir") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  auto client = InlineClient::create({}).value();
  std::map<std::string, Tally> families, dtypes;
  Tally total;
  std::string failures;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const stablehlo::TestOutcome o = stablehlo::run_test_program(*client, text.str());
    const auto [family, dtype] = family_and_dtype(path.stem().string());
    families[family].add(o);
    dtypes[dtype].add(o);
    total.add(o);
    if (o.verdict == stablehlo::Verdict::kFail)
      failures += str_cat("\n  ", path.filename().string(), ": ", o.detail);
    // Every program of the corpus checks its results.
    CHECK_MESSAGE(o.verdict != stablehlo::Verdict::kUnchecked, path.filename().string(), ": ", o.detail);
    // A skip must name what is missing (or one of the corpus's own RUN-DISABLED markers), never hide
    // a malformed file.
    if (o.verdict == stablehlo::Verdict::kSkip) {
      const bool named = o.detail.find("is not supported") != std::string::npos ||
                         o.detail.find("RUN-DISABLED(inaccurate)") != std::string::npos ||
                         o.detail.find("RUN-DISABLED(no interpreter support)") != std::string::npos;
      CHECK_MESSAGE(named, path.filename().string(), ": ", o.detail);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(files.size(), " corpus files in ", seconds, " s: ", total.pass, " passed, ", total.fail,
          " failed, ", total.skip, " skipped");
  CHECK_MESSAGE(total.fail == 0, "failing corpus programs:", failures);
  CHECK(files.size() == 2325);

  const std::string page = conformance_markdown(families, dtypes, total);
  const std::string doc = std::string(PJRT_LITE_SOURCE_DIR) + "/docs/conformance.md";
  if (std::getenv("PJRT_LITE_WRITE_DOCS")) {
    std::ofstream(doc) << page;
    MESSAGE("wrote " << doc);
  }
  std::ifstream in(doc);
  std::stringstream current;
  current << in.rdbuf();
  CHECK_MESSAGE(current.str() == page,
                "docs/conformance.md is out of date: run the tests with PJRT_LITE_WRITE_DOCS=1");
}

}  // namespace stablehlo_corpus_test
