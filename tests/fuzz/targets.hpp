#pragma once
// The bodies of the fuzz targets, as plain functions of the input bytes, so that libFuzzer
// (tests/fuzz/fuzz.cpp) and the regression test of the normal suite
// (tests/fuzz_regression_test.cpp) run exactly the same code on an input.
//
// Bad input must come back as a Status; a broken invariant (a graph that the parser accepted
// but the verifier rejects, a round trip that changes a graph, a CPU result that differs from
// the reference) calls `fail`, which aborts: libFuzzer keeps the input as a crash.
//
//   parse_one:       StableHLO text -> parse_module; each function graph verifies, serializes
//                    and reads back to the same fingerprint (as executable bytes and as a
//                    portable artifact), prints and parses again.
//   deserialize_one: executable bytes -> Client::deserialize_executable (the first input byte
//                    picks whether the checksums are repaired first, so that mutations reach
//                    the graph reader), then runs the executable when it is small.
//   build_one:       bytes -> a sequence of GraphBuilder calls with shapes and attributes
//                    drawn from the bytes; the graph verifies, round-trips, and the CPU client
//                    agrees with the reference interpreter on it.
//   bytecode_one:    a portable artifact (MLIR bytecode holding VHLO) -> the bytecode reader;
//                    an error names the artifact, each function it decodes is text the parser
//                    takes or refuses, and the graphs it builds keep the invariants above;
//                    the same bytes go to the JAX export reader, whose errors have messages.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.hpp"
#include "pjrt_lite/backends/reference/interpreter.hpp"
#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/fingerprint.hpp"
#include "pjrt_lite/ir/printer.hpp"
#include "pjrt_lite/ir/serialize.hpp"
#include "pjrt_lite/stablehlo/bytecode.hpp"
#include "pjrt_lite/stablehlo/jax_export.hpp"
#include "pjrt_lite/stablehlo/stablehlo.hpp"

namespace pjrt_lite::fuzz {

/// Graphs with more elements than this in all their values together are not run: the
/// fuzzers look for wrong handling, not for slow big programs.
inline constexpr std::int64_t kMaxRunElements = 1 << 14;

/// Reads the fuzz input as a stream of small decisions; past the end every read is 0.
class ByteSource {
 public:
  explicit ByteSource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  std::uint8_t u8() { return at_ < bytes_.size() ? static_cast<std::uint8_t>(bytes_[at_++]) : 0; }
  /// A value in [lo, hi].
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    std::uint64_t v = u8();
    if (span > 256) v = (v << 8) | u8();
    return lo + static_cast<std::int64_t>(v % span);
  }
  bool coin() { return (u8() & 1) != 0; }
  [[nodiscard]] bool empty() const { return at_ >= bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
};

/// The number of elements in every value of `g` and of its bodies.
inline std::int64_t total_elements(const Graph& g) {
  std::int64_t total = 0;
  for (const Node& n : g.nodes()) {
    for (const Shape& s : n.results) total += s.element_count();
    for (const Graph& body : n.bodies) total += total_elements(body);
  }
  return total;
}

/// True when every value of `g` (and of its bodies) is an integer or pred: then the CPU and
/// the reference must agree bit for bit, with no rounding in between.
inline bool integral_only(const Graph& g) {
  for (const Node& n : g.nodes()) {
    for (const Shape& s : n.results)
      if (!is_integral(s.dtype()) && !is_pred(s.dtype())) return false;
    for (const Graph& body : n.bodies)
      if (!integral_only(body)) return false;
  }
  return true;
}

/// Memory running out is a Status the library must return (RESOURCE_EXHAUSTED), not a bug:
/// a fuzzed graph may ask for more than the machine has.
inline bool out_of_memory(const Status& s) { return s.code() == StatusCode::kResourceExhausted; }

/// One argument per parameter of `g`, its bytes drawn from `src`, with floats kept finite so
/// that results are comparable; nullopt when the memory for them cannot be had.
inline std::optional<std::vector<Literal>> make_arguments(const Graph& g, ByteSource& src) {
  std::vector<Literal> args;
  for (Value p : g.parameters()) {
    StatusOr<Literal> created = Literal::create(g.shape(p));
    if (!created.ok()) {
      if (!out_of_memory(created.status())) fail("Literal::create of a verified shape", created.status());
      return std::nullopt;
    }
    Literal l = std::move(created).value();
    visit_dtype(l.dtype(), [&]<class T>(std::type_identity<T>) {
      for (T& x : l.data<T>()) {
        if constexpr (std::is_same_v<T, bool>) {
          x = src.coin();
        } else if constexpr (std::is_integral_v<T>) {
          std::uint64_t bits = 0;
          for (std::size_t k = 0; k < sizeof(T); ++k) bits = (bits << 8) | src.u8();
          std::memcpy(&x, &bits, sizeof(T));
        } else {
          x = T(static_cast<float>(src.range(-64, 64)) / 8.0f);
        }
      }
    });
    args.push_back(std::move(l));
  }
  return args;
}

/// True when `g` or any of its bodies holds a while loop.
inline bool has_loop(const Graph& g) {
  return std::ranges::any_of(g.nodes(), [](const Node& n) {
    return n.op == OpCode::kWhile || std::ranges::any_of(n.bodies, has_loop);
  });
}

/// Compiles and runs `g` on the CPU client with `args` and checks the outputs against the
/// reference interpreter's: same shapes always, same values when the graph is integral.
/// Statuses (an unsupported op or dtype) are fine; a disagreement or a crash is not.
template <class C>
void check_against_reference(C& client, const Graph& g, const std::optional<std::vector<Literal>>& maybe_args) {
  if (!maybe_args) return;
  const std::vector<Literal>& args = *maybe_args;
  StatusOr<std::vector<Literal>> expected = reference::evaluate(g, args);
  if (!expected.ok()) {
    if (expected.status().message().empty()) fail("reference: an error without a message");
    return;
  }
  auto exe = client.compile(g);
  if (!exe.ok()) {
    if (exe.status().message().empty()) fail("compile: an error without a message");
    return;
  }
  std::vector<typename C::buffer_type> buffers;
  std::vector<typename C::buffer_type*> pointers;
  for (const Literal& a : args) {
    auto buffer = client.buffer_from_literal(a);
    if (!buffer.ok() && out_of_memory(buffer.status())) return;
    if (!buffer.ok()) fail("buffer_from_literal of a valid literal", buffer.status());
    buffers.push_back(std::move(buffer).value());
  }
  for (auto& b : buffers) pointers.push_back(&b);
  auto out = exe->execute_sharded(pointers, client.devices()[0]);
  if (!out.ok() && out_of_memory(out.status())) return;
  if (!out.ok()) fail("execute of a compiled graph on matching arguments", out.status());
  if (out->size() != expected->size()) fail("execute: wrong number of outputs");
  const bool exact = integral_only(g);
  for (std::size_t k = 0; k < out->size(); ++k) {
    StatusOr<Literal> got = (*out)[k].to_literal().await();
    if (!got.ok() && out_of_memory(got.status())) return;
    if (!got.ok()) fail("to_literal of an output", got.status());
    if (!got->shape().same_type_and_dims((*expected)[k].shape()))
      fail(str_cat("output ", k, " has shape ", got->shape(), ", the reference ",
                   (*expected)[k].shape()));
    if (exact && !(*got == (*expected)[k]))
      fail(str_cat("output ", k, " is ", *got, ", the reference says ", (*expected)[k], "\n",
                   to_string(g)));
  }
}

/// The invariants of a graph that passed verification somewhere: it verifies, serializes
/// (executable bytes, portable artifact) and reads back to the same fingerprint, and prints
/// as StableHLO that parses again.
inline void check_graph(const Graph& g, bool parameters_first) {
  if (Status s = verify(g); !s.ok()) fail("a graph that the library accepted does not verify", s);
  const std::vector<std::byte> bytes = serialize(g);
  StatusOr<Graph> back = deserialize_graph(bytes);
  if (!back.ok()) fail("deserialize_graph(serialize(g))", back.status());
  if (fingerprint(*back) != fingerprint(g)) fail("serialize round trip changed the graph");
  // The same through a portable artifact: written or refused as UNIMPLEMENTED (an op or type
  // with no VHLO form), and read back as the text would be.
  StatusOr<std::vector<std::byte>> artifact = stablehlo::serialize_portable_artifact(g);
  if (!artifact.ok()) {
    if (artifact.status().code() != StatusCode::kUnimplemented)
      fail("serialize_portable_artifact(g)", artifact.status());
  } else if (StatusOr<stablehlo::Module> m = stablehlo::parse_portable_artifact(*artifact); !m.ok()) {
    if (m.status().code() != StatusCode::kUnimplemented)
      fail("parse_portable_artifact(serialize_portable_artifact(g))", m.status());
  } else if (parameters_first) {
    // CHLO's ops that have a StableHLO form come back in that form.
    StatusOr<Graph> expected = stablehlo::detail::needs_chlo_expansion(g) ? stablehlo::detail::expand_chlo(g)
                                                                         : StatusOr<Graph>(g);
    if (!expected.ok()) fail("expand_chlo(g)", expected.status());
    StatusOr<Graph> main = m->main();
    if (!main.ok() || fingerprint(*main) != fingerprint(*expected))
      fail(str_cat("portable artifact round trip changed the graph:\n", to_string(g)));
  }
  const std::string text = to_stablehlo(g);
  StatusOr<Graph> reparsed = parse_stablehlo(text);
  if (!reparsed.ok()) {
    // Printing a graph whose values the text form cannot spell (such as a bitcast to a
    // type of another width) may be refused when parsed; anything else is a bug.
    if (reparsed.status().code() != StatusCode::kUnimplemented)
      fail(str_cat("parse_stablehlo(to_stablehlo(g)) failed on\n", text), reparsed.status());
    return;
  }
  if (parameters_first && fingerprint(*reparsed) != fingerprint(g))
    fail(str_cat("StableHLO round trip changed the graph:\n", text, "\nreparsed as\n",
                 to_string(*reparsed)));
}

// ---- parse_one ---------------------------------------------------------------------------

/// StableHLO text: parse, then check every function graph. Returns the parse status.
inline Status parse_one(std::span<const std::byte> data) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  StatusOr<stablehlo::Module> module = stablehlo::parse_module(text);
  if (!module.ok()) {
    if (module.status().message().empty()) fail("parse_module: an error without a message");
    return module.status();
  }
  for (const stablehlo::Function& f : module->functions) check_graph(f.graph, true);
  return Status();
}

// ---- bytecode_one ------------------------------------------------------------------------

/// A portable artifact: decode it, parse what it decodes to, check the graphs. Returns the
/// status of parsing the whole artifact.
inline Status bytecode_one(std::span<const std::byte> data) {
  // The same bytes as JAX's serialized export (a flatbuffer around an artifact).
  StatusOr<stablehlo::JaxExport> exported = stablehlo::read_jax_export(data);
  if (!exported.ok() && exported.status().message().empty()) fail("read_jax_export: an error without a message");
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  StatusOr<stablehlo::detail::PortableProgram> program = stablehlo::detail::read_portable_program(bytes);
  if (!program.ok()) {
    if (program.status().message().find("portable artifact") == std::string_view::npos)
      fail("read_portable_program: an error that does not name the artifact", program.status());
    return program.status();
  }
  for (const auto& f : program->functions) {
    if (!f.status.ok()) {
      if (f.status.code() != StatusCode::kUnimplemented) fail("a function refused other than UNIMPLEMENTED", f.status);
      continue;
    }
    // Each function alone (its callees may be missing: then the parser says so).
    StatusOr<stablehlo::Module> m = stablehlo::parse_module(str_cat("module {\n", f.text, "}\n"));
    if (!m.ok() && m.status().message().empty()) fail("parse_module: an error without a message");
    if (m.ok())
      for (const stablehlo::Function& fn : m->functions) check_graph(fn.graph, true);
  }
  StatusOr<stablehlo::Module> whole = stablehlo::parse_portable_artifact(data);
  if (!whole.ok() && whole.status().message().empty()) fail("parse_portable_artifact: an error without a message");
  return whole.ok() ? Status() : whole.status();
}

// ---- deserialize_one ---------------------------------------------------------------------

/// Writes the FNV-1a checksums that the executable format and the graph blob inside it end
/// with, so that a mutated blob gets past them. Leaves blobs it cannot walk unchanged.
inline void repair_checksums(std::vector<std::byte>& bytes) {
  const auto put_u64 = [&](std::size_t at, std::uint64_t v) {
    for (int k = 0; k < 8; ++k) bytes[at + k] = static_cast<std::byte>((v >> (8 * k)) & 0xff);
  };
  const auto get_u32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<std::uint32_t>(bytes[at + k]);
    return v;
  };
  if (bytes.size() < 16 + 8) return;
  // "PJLX" u32 version u8 u8 u32 n (u32 id)*n u64 graph_size graph u64 checksum
  const std::uint64_t devices = get_u32(10);
  const std::uint64_t graph_at = 14 + 4 * devices + 8;
  if (graph_at + kGraphHeaderSize + kGraphChecksumSize <= bytes.size() - 8) {
    const std::size_t graph_end = bytes.size() - 8;
    put_u64(graph_end - 8,
            fnv1a64(std::span<const std::byte>(bytes).subspan(graph_at, graph_end - 8 - graph_at)));
  }
  put_u64(bytes.size() - 8, fnv1a64(std::span<const std::byte>(bytes).first(bytes.size() - 8)));
}

/// Executable bytes, the first byte a mode (odd: repair the checksums). Returns the status
/// of deserialize_executable.
inline Status deserialize_one(std::span<const std::byte> data) {
  if (data.empty()) return Status();
  std::vector<std::byte> bytes(data.begin() + 1, data.end());
  if ((static_cast<unsigned>(data[0]) & 1) != 0) repair_checksums(bytes);
  auto client = cpu::Client<cpu::InlineExecutor>::create({.device_count = 2}).value();
  auto exe = client->deserialize_executable(bytes);
  if (!exe.ok()) {
    if (exe.status().message().empty()) fail("deserialize_executable: an error without a message");
    return exe.status();
  }
  const Graph& g = exe->source_graph();
  check_graph(g, false);
  // A mutated loop condition may never turn false: graphs with loops are checked, not run.
  if (total_elements(g) <= kMaxRunElements && !has_loop(g)) {
    ByteSource src(data);
    check_against_reference(*client, g, make_arguments(g, src));
  }
  return Status();
}

// ---- build_one ---------------------------------------------------------------------------

namespace detail {

inline DType pick_dtype(ByteSource& src) {
  return kAllDTypes[static_cast<std::size_t>(src.range(0, kAllDTypes.size() - 1))];
}

/// A dimension list of `rank` small sizes (0 now and then, to reach empty arrays).
inline std::vector<std::int64_t> pick_dims(ByteSource& src, std::int64_t rank) {
  std::vector<std::int64_t> dims;
  for (std::int64_t k = 0; k < rank; ++k)
    dims.push_back(src.range(0, 15) == 0 ? 0 : src.range(1, 4));
  return dims;
}

/// An opcode other than kParameter: the next byte that is an opcode's number (bytes that are
/// none are skipped), so that a kept input keeps building the same ops when opcodes are added
/// at the end of OpCode, as the serialized format already requires.
inline OpCode pick_opcode(ByteSource& src) {
  while (!src.empty()) {
    const std::uint8_t b = src.u8();
    if (b != 0 && b < kOpCodeCount) return static_cast<OpCode>(b);
  }
  return OpCode::kConstant;
}

/// A dtype, then a rank in [0, max_rank], then that many dimensions, read in that order.
/// Never as two arguments of one call: compilers evaluate those in different orders (clang
/// left to right, g++ mostly right to left), and a kept input would build one graph in the
/// fuzzer and another in the suite.
inline Shape pick_shape(ByteSource& src, std::int64_t max_rank) {
  const DType dtype = pick_dtype(src);
  const std::int64_t rank = src.range(0, max_rank);
  return Shape(dtype, pick_dims(src, rank));
}

/// A list of small integers, mostly valid indices or sizes, sometimes out of range.
inline std::vector<std::int64_t> pick_list(ByteSource& src, std::int64_t length, std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t k = 0; k < length; ++k)
    v.push_back(src.range(0, 31) == 0 ? src.range(-3, 9) : src.range(0, hi));
  return v;
}

/// A permutation of 0..n-1, or now and then a list that is not one.
inline std::vector<std::int64_t> pick_permutation(ByteSource& src, std::int64_t n) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) p[static_cast<std::size_t>(k)] = k;
  for (std::int64_t k = n - 1; k > 0; --k)
    std::swap(p[static_cast<std::size_t>(k)], p[static_cast<std::size_t>(src.range(0, k))]);
  if (src.range(0, 31) == 0 && n > 0) p[0] = src.range(-1, n);
  return p;
}

inline Literal pick_literal(ByteSource& src, const Shape& shape) {
  Literal l(shape);
  for (std::byte& b : l.bytes()) b = static_cast<std::byte>(src.u8());
  if (is_pred(shape.dtype()))  // a pred byte other than 0 or 1 is not a pred
    for (std::byte& b : l.bytes()) b &= std::byte{1};
  return l;
}

/// Attributes for `code` on `operands`: sized from the operands' shapes so that most calls
/// make sense, with values drawn from `src` so that some do not.
inline Attributes pick_attributes(ByteSource& src, OpCode code, const std::vector<Shape>& shapes) {
  const std::int64_t rank = shapes.empty() ? 0 : static_cast<std::int64_t>(shapes[0].rank());
  const auto dim = [&](std::int64_t d) {
    return d < rank ? shapes[0].dims()[static_cast<std::size_t>(d)] : 1;
  };
  switch (code) {
    case OpCode::kIota: {
      const std::int64_t r = src.range(1, 3);
      const DType dtype = pick_dtype(src);  // before the dims: see pick_shape
      return IotaAttrs{Shape(dtype, pick_dims(src, r)), src.range(0, r - 1)};
    }
    case OpCode::kCompare:
      return CompareAttrs{static_cast<ComparisonDirection>(src.range(0, 5)),
                          static_cast<ComparisonType>(src.range(0, 4))};
    case OpCode::kConvert:
    case OpCode::kBitcastConvert: return ConvertAttrs{pick_dtype(src)};
    case OpCode::kBroadcastInDim: {
      const std::int64_t extra = src.range(0, 2);
      std::vector<std::int64_t> dims;
      std::vector<std::int64_t> map;
      std::int64_t next = 0;
      for (std::int64_t d = 0; d < rank + extra; ++d) {
        if (next < rank && (src.coin() || rank + extra - d == rank - next)) {
          map.push_back(d);
          dims.push_back(src.range(0, 7) == 0 ? 1 : dim(next));
          ++next;
        } else {
          dims.push_back(src.range(1, 3));
        }
      }
      if (src.range(0, 31) == 0 && !map.empty()) map.back() = src.range(-1, rank + extra);
      return BroadcastInDimAttrs{dims, map};
    }
    case OpCode::kReshape: {
      std::int64_t n = shapes.empty() ? 1 : shapes[0].element_count();
      std::vector<std::int64_t> dims;
      // Split n into factors in an order drawn from the input.
      for (std::int64_t f = 2; f <= n && dims.size() < 4;) {
        if (n % f == 0 && src.coin()) {
          dims.push_back(f);
          n /= f;
        } else {
          ++f;
        }
      }
      if (n != 1 || src.coin()) dims.push_back(n);
      if (src.range(0, 15) == 0) dims.push_back(src.range(0, 3));
      return ReshapeAttrs{dims};
    }
    case OpCode::kTranspose: return TransposeAttrs{pick_permutation(src, rank)};
    case OpCode::kSlice: {
      SliceAttrs a;
      for (std::int64_t d = 0; d < rank; ++d) {
        const std::int64_t start = src.range(0, dim(d));
        a.start_indices.push_back(start);
        a.limit_indices.push_back(src.range(start, dim(d)));
        a.strides.push_back(src.range(1, 3));
      }
      if (src.range(0, 31) == 0 && rank > 0) a.strides[0] = src.range(-1, 0);
      if (src.range(0, 31) == 0 && rank > 0) a.limit_indices[0] = dim(0) + 1;
      return a;
    }
    case OpCode::kConcatenate:
      return ConcatenateAttrs{src.range(0, 31) == 0
                                  ? src.range(-1, rank)
                                  : src.range(0, std::max<std::int64_t>(rank - 1, 0))};
    case OpCode::kPad: {
      PadAttrs a;
      a.edge_padding_low = pick_list(src, rank, 2);
      a.edge_padding_high = pick_list(src, rank, 2);
      a.interior_padding = pick_list(src, rank, 2);
      for (std::int64_t d = 0; d < rank; ++d)
        if (src.range(0, 7) == 0)
          a.edge_padding_low[static_cast<std::size_t>(d)] = -src.range(0, dim(d));
      return a;
    }
    case OpCode::kReverse:
      return ReverseAttrs{pick_list(src, src.range(0, rank), std::max<std::int64_t>(rank - 1, 0))};
    case OpCode::kDynamicSlice: {
      std::vector<std::int64_t> sizes;
      for (std::int64_t d = 0; d < rank; ++d) sizes.push_back(src.range(0, dim(d)));
      if (src.range(0, 31) == 0 && rank > 0) sizes[0] = dim(0) + 1;
      return DynamicSliceAttrs{sizes};
    }
    case OpCode::kReduce: {
      std::vector<std::int64_t> dims;
      for (std::int64_t d = 0; d < rank; ++d)
        if (src.coin()) dims.push_back(d);
      if (src.range(0, 31) == 0) dims.push_back(src.range(-1, rank));
      return ReduceAttrs{dims};
    }
    case OpCode::kDotGeneral: {
      const std::int64_t rhs_rank =
          shapes.size() > 1 ? static_cast<std::int64_t>(shapes[1].rank()) : 0;
      DotDimensionNumbers d;
      const std::int64_t batch = src.range(0, std::min<std::int64_t>(std::min(rank, rhs_rank), 1));
      for (std::int64_t k = 0; k < batch; ++k) {
        d.lhs_batching_dimensions.push_back(k);
        d.rhs_batching_dimensions.push_back(k);
      }
      if (src.coin() && rank > batch && rhs_rank > batch) {
        d.lhs_contracting_dimensions.push_back(src.range(batch, rank - 1));
        d.rhs_contracting_dimensions.push_back(src.range(batch, rhs_rank - 1));
      }
      return d;
    }
    case OpCode::kReducePrecision: return ReducePrecisionAttrs{src.range(0, 12), src.range(-1, 53)};
    case OpCode::kSort: return SortAttrs{src.range(-rank - 1, rank), src.coin()};
    case OpCode::kTopK: return TopKAttrs{src.range(-1, (rank > 0 ? dim(rank - 1) : 0) + 1)};
    case OpCode::kTriangularSolve:
      return TriangularSolveAttrs{src.coin(), src.coin(), src.coin(),
                                  static_cast<Transpose>(src.range(0, 2))};
    case OpCode::kRngBitGenerator: {
      // Any algorithm (and an invalid one) and an output of up to 3 small dimensions of any
      // element type, pred and complex ones (which shape inference rejects) included.
      std::vector<std::int64_t> out_dims;
      for (std::int64_t d = src.range(0, 3); d > 0; --d) out_dims.push_back(src.range(0, 9));
      const DType type = pick_dtype(src);
      return RngBitGeneratorAttrs{static_cast<RngAlgorithm>(src.range(0, 3)),
                                  Shape(type, out_dims)};
    }
    case OpCode::kFft: {
      // The trailing dimensions as lengths (IRFFT's last from the operand's half), sometimes off.
      const auto type = static_cast<FftType>(src.range(0, 3));
      std::vector<std::int64_t> len;
      const std::int64_t count = src.range(1, std::max<std::int64_t>(std::min<std::int64_t>(rank, 3), 1));
      for (std::int64_t d = std::max<std::int64_t>(rank - count, 0); d < rank; ++d) len.push_back(dim(d));
      if (type == FftType::kIrfft && !len.empty() && len.back() > 0)
        len.back() = 2 * (len.back() - 1) + src.range(0, 1);
      if (src.range(0, 15) == 0 && !len.empty()) len.back() = src.range(-1, 9);
      return FftAttrs{type, len};
    }
    default: return NoAttrs{};
  }
}

/// How many operands `code` takes on an operand of rank `rank` (with a few odd counts).
inline std::size_t pick_operand_count(ByteSource& src, OpCode code, std::int64_t rank) {
  if (src.range(0, 63) == 0) return static_cast<std::size_t>(src.range(0, 4));
  if (code == OpCode::kParameter || code == OpCode::kConstant || code == OpCode::kIota) return 0;
  if (is_unary(code)) return 1;
  if (is_binary(code) || code == OpCode::kCompare || code == OpCode::kPad ||
      code == OpCode::kDotGeneral)
    return 2;
  if (code == OpCode::kSelect || code == OpCode::kClamp) return 3;
  if (code == OpCode::kConcatenate) return static_cast<std::size_t>(src.range(1, 3));
  if (code == OpCode::kDynamicSlice) return static_cast<std::size_t>(1 + rank);
  if (code == OpCode::kDynamicUpdateSlice) return static_cast<std::size_t>(2 + rank);
  if (code == OpCode::kReduce) return 2 * static_cast<std::size_t>(src.range(1, 2));
  if (code == OpCode::kSort) return static_cast<std::size_t>(src.range(1, 3));
  return 1;
}

}  // namespace detail

/// Builds a graph from the decisions in `src`: parameters, then ops on earlier values.
/// Returns the graph, or the builder's error (which must have a message).
inline StatusOr<Graph> build_random_graph(ByteSource& src) {
  GraphBuilder b("fuzz");
  std::vector<Value> values;
  const std::int64_t params = src.range(0, 3);
  for (std::int64_t k = 0; k < params; ++k)
    values.push_back(b.parameter(detail::pick_shape(src, 3)));
  const std::int64_t ops = src.range(1, 24);
  for (std::int64_t k = 0; k < ops && b.ok() && !src.empty(); ++k) {
    const OpCode code = detail::pick_opcode(src);
    if (code == OpCode::kConstant) {
      const Shape shape = detail::pick_shape(src, 2);
      values.push_back(b.constant(detail::pick_literal(src, shape)));
      continue;
    }
    // Operands: mostly the latest values, so that sequences chain.
    const auto pick_value = [&]() -> Value {
      if (values.empty())
        return b.constant(detail::pick_literal(src, Shape(detail::pick_dtype(src), {})));
      const auto n = static_cast<std::int64_t>(values.size());
      return values[static_cast<std::size_t>(src.coin() ? n - 1 : src.range(0, n - 1))];
    };
    std::vector<Value> operands;
    const Value first = pick_value();
    operands.push_back(first);
    const std::int64_t rank =
        b.shape(first).ok() ? static_cast<std::int64_t>(b.shape(first)->rank()) : 0;
    const std::size_t count = detail::pick_operand_count(src, code, rank);
    if (count == 0) operands.clear();
    while (operands.size() < count) {
      // Index operands of dynamic slices are scalars; the rest mostly share the first's shape.
      const bool index_operand = (code == OpCode::kDynamicSlice && operands.size() >= 1) ||
                                 (code == OpCode::kDynamicUpdateSlice && operands.size() >= 2);
      if (index_operand && src.coin()) {
        operands.push_back(
            b.constant(Literal::scalar<std::int32_t>(static_cast<std::int32_t>(src.range(-2, 5)))));
      } else if (code == OpCode::kReduce && operands.size() >= count / 2 && src.coin()) {
        const StatusOr<Shape> s = b.shape(operands[operands.size() - count / 2]);
        operands.push_back(
            b.constant(detail::pick_literal(src, Shape(s.ok() ? s->dtype() : DType::kF32, {}))));
      } else {
        operands.push_back(pick_value());
      }
    }
    std::vector<Shape> shapes;
    for (Value v : operands)
      if (StatusOr<Shape> s = b.shape(v); s.ok()) shapes.push_back(*s);
    Attributes attrs = detail::pick_attributes(src, code, shapes);
    std::vector<Graph> bodies;
    if (code == OpCode::kReduce) {
      // A binary body for one input; a two-input body as arg-max builds it for two.
      const DType t = shapes.empty() ? DType::kF32 : shapes[0].dtype();
      static constexpr OpCode kBodyOps[] = {OpCode::kAdd,     OpCode::kMultiply, OpCode::kMaximum,
                                            OpCode::kMinimum, OpCode::kAnd,      OpCode::kOr};
      StatusOr<Graph> body = make_binary_body(kBodyOps[src.range(0, 5)], t);
      if (operands.size() == 4) {
        GraphBuilder bb("body");
        std::vector<Value> p;
        for (std::size_t i = 0; i < 4; ++i)
          p.push_back(bb.parameter(Shape(i < shapes.size() ? shapes[i % 2].dtype() : t, {})));
        body = bb.build({bb.add(p[0], p[2]), bb.maximum(p[1], p[3])});
      }
      if (body.ok()) bodies.push_back(std::move(body).value());
    }
    if (code == OpCode::kSort && !shapes.empty()) {
      // Orders by the first operand; the others ride along. LE is no strict weak order.
      std::vector<DType> others;
      for (std::size_t i = 1; i < shapes.size(); ++i) others.push_back(shapes[i].dtype());
      static constexpr ComparisonDirection kOrders[] = {
          ComparisonDirection::kLt, ComparisonDirection::kGt, ComparisonDirection::kLe};
      StatusOr<Graph> comparator = make_sort_comparator(kOrders[src.range(0, 2)], shapes[0].dtype(), others);
      if (comparator.ok()) bodies.push_back(std::move(comparator).value());
    }
    for (Value v : b.op(code, operands, std::move(attrs), std::move(bodies))) values.push_back(v);
  }
  if (!b.ok()) {
    if (b.status().message().empty()) fail("builder: an error without a message");
    StatusOr<Graph> failed =
        b.build(values.empty() ? std::vector<Value>{} : std::vector<Value>{values.back()});
    if (failed.ok()) fail("build() succeeded after an error");
    return b.status();
  }
  if (values.empty()) return invalid_argument_error("no values");
  std::vector<Value> outputs = {values.back()};
  if (src.coin())
    outputs.push_back(values[static_cast<std::size_t>(src.range(0, values.size() - 1))]);
  return b.build(outputs);
}

/// Random op sequence -> graph -> invariants -> CPU against reference. Returns the build status.
inline Status build_one(std::span<const std::byte> data) {
  ByteSource src(data);
  StatusOr<Graph> g = build_random_graph(src);
  if (!g.ok()) return g.status();
  check_graph(*g, true);
  if (total_elements(*g) > kMaxRunElements) return Status();
  // One client for every run: its compile cache keeps only the most recently used programs
  // (ClientOptions::compile_cache_capacity).
  static auto client = cpu::Client<cpu::InlineExecutor>::create({}).value();
  check_against_reference(*client, *g, make_arguments(*g, src));
  return Status();
}

}  // namespace pjrt_lite::fuzz
