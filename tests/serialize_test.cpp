// Tests of the binary graph format: byte_io primitives, round trips of every op, attribute
// kind and dtype, a pinned byte layout, and the deserializer on damaged and hostile input
// (every truncation, every bit flip, forged blobs with valid checksums).

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "control_flow.hpp"
#include "sanitizers.hpp"
#include "test_util.hpp"
#include "pjrt_lite/ir/byte_io.hpp"
#include "pjrt_lite/ir/ir.hpp"
#include "pjrt_lite/ir/serialize.hpp"

namespace serialize_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {



/// Serializes, deserializes and checks that nothing changed, not even the bytes.
Graph round_trip(const Graph& g) {
  const std::vector<std::byte> blob = serialize(g);
  StatusOr<Graph> back = deserialize_graph(blob);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  CHECK(*back == g);
  CHECK(fingerprint(*back) == fingerprint(g));
  CHECK(to_string(*back) == to_string(g));
  CHECK(serialize(*back) == blob);
  return *std::move(back);
}

/// A blob around `graph_bytes` with a correct header and checksum: what a forger writes.
std::vector<std::byte> seal(std::span<const std::byte> graph_bytes) {
  ByteWriter w;
  w.bytes(kGraphMagic);
  w.u32(kGraphFormatVersion);
  w.u64(graph_bytes.size());
  w.bytes(graph_bytes);
  w.u64(fnv1a64(w.view()));
  return w.take();
}

/// Recomputes the checksum of a blob after editing it.
void reseal(std::vector<std::byte>& blob) {
  const std::size_t at = blob.size() - kGraphChecksumSize;
  std::uint64_t sum = fnv1a64(std::span<const std::byte>(blob).first(at));
  for (std::size_t i = 0; i < 8; ++i, sum >>= 8) blob[at + i] = static_cast<std::byte>(sum & 0xff);
}

/// parameter f32[2], returned: the smallest interesting graph. Its layout, byte by byte:
///   0 magic, 4 version, 8 graph size, 16 name length, 20 name "g", 21 node count,
///   25 opcode, 26 operand count, 30 attributes kind, 31 parameter number,
///   39 dtype, 40 rank, 44 dim, 52 layout, 53 result count, 57 dtype, 58 rank, 62 dim,
///   70 layout, 71 body count, 75 output count, 79 output node, 83 output index,
///   87 checksum, 95 end.
Graph tiny_graph() {
  GraphBuilder b("g");
  return build_ok(b, {b.parameter(Shape(kF32, {2}))});
}

/// A graph with every op of the IR and so every kind of attribute.
Graph every_op_graph() {
  GraphBuilder b("every_op");
  Value f = b.parameter(Shape(kF32, {2, 3}));
  Value s = b.parameter(Shape(kS32, {2, 3}));
  Value c = b.parameter(Shape(kC64, {2, 3}));
  Value p = b.parameter(Shape(kPred, {2, 3}));
  Value i = b.parameter(Shape(kS32, {}));
  std::vector<Value> outs;
  // Every unary and binary op on the first operand type it accepts.
  const std::vector<Value> candidates = {f, s, c, p};
  for (std::size_t k = 0; k < kOpCodeCount; ++k) {
    const auto op = static_cast<OpCode>(k);
    if (!is_unary(op) && !is_binary(op)) continue;
    for (Value v : candidates) {
      if (!is_in(b.shape(v)->dtype(), accepted_types(op))) continue;
      outs.push_back(is_unary(op) ? b.unary(op, v) : b.binary(op, v, v));
      break;
    }
  }
  Value k = b.constant(Literal::vector<float>({1.5f, -0.0f, 3.0f}));
  Value io = b.iota(Shape(kS32, {2, 3}), 1);
  Value neg = b.negate(f);
  Value cmp = b.compare(f, neg, ComparisonDirection::kLt, ComparisonType::kTotalOrder);
  Value cv = b.convert(io, kF32);
  Value bc = b.bitcast_convert(f, kS32);
  Value br = b.broadcast_in_dim(k, {2, 3}, {1});
  Value rs = b.reshape(f, {3, 2});
  Value tr = b.transpose(f, {1, 0});
  Value sl = b.slice(f, {0, 1}, {2, 3}, {1, 2});
  Value cc = b.concatenate({f, cv, br}, 0);
  Value pd = b.pad(f, b.constant(0.0f), {1, -1}, {0, 2}, {1, 0});
  Value rv = b.reverse(f, {0, 1});
  Value ds = b.dynamic_slice(f, {i, i}, {1, 2});
  Value dus = b.dynamic_update_slice(f, ds, {i, i});
  Value rd = b.reduce(f, b.constant(0.0f), OpCode::kAdd, {1});
  Value dot = b.dot_general(f, tr, DotDimensionNumbers{{}, {}, {1}, {0}});
  Value sel = b.select(cmp, f, neg);
  Value cl = b.clamp(b.constant(0.0f), f, b.constant(1.0f));
  Value sc = b.scatter(f, b.constant(Literal::vector<std::int32_t>({1})),
                       b.reshape(b.slice(f, {0, 0}, {1, 3}), {3}), OpCode::kAdd,
                       ScatterAttrs{{0}, {0}, {}, {}, {0}, 0, true, true});
  Value ga = b.gather(f, b.constant(Literal::vector<std::int32_t>({1})),
                      GatherAttrs{{0}, {0}, {}, {}, {0}, 0, {1, 3}, true});
  Value rw = b.reduce_window(f, b.constant(0.0f), OpCode::kAdd,
                             WindowAttrs{{2, 2}, {1, 2}, {2, 1}, {1, 2}, {1, 0}, {0, -1}});
  Value sas = b.select_and_scatter(f, b.slice(f, {0, 0}, {1, 2}), b.constant(0.0f),
                                   ComparisonDirection::kGe, OpCode::kAdd,
                                   WindowAttrs{{2, 2}, {1, 2}, {}, {}, {0, 0}, {0, 1}});
  Value cw = b.convolution(b.reshape(f, {1, 2, 3}), b.reshape(tr, {1, 3, 2}),
                           ConvolutionAttrs{.window_strides = {2},
                                            .padding_low = {1},
                                            .padding_high = {0},
                                            .lhs_dilation = {2},
                                            .rhs_dilation = {1},
                                            .window_reversal = {1},
                                            .input_batch_dimension = 0,
                                            .input_feature_dimension = 2,
                                            .input_spatial_dimensions = {1},
                                            .kernel_input_feature_dimension = 1,
                                            .kernel_output_feature_dimension = 2,
                                            .kernel_spatial_dimensions = {0},
                                            .output_batch_dimension = 0,
                                            .output_feature_dimension = 2,
                                            .output_spatial_dimensions = {1}});
  Value rp = b.reduce_precision(f, 5, 10);
  Value so = b.sort(f, -1, ComparisonDirection::kGt, true);
  Value tk = b.top_k(f, 2)[1];
  Value ff = b.fft(c, FftType::kFft, {2, 3});
  Value rf = b.fft(f, FftType::kRfft, {3});
  Value irf = b.fft(rf, FftType::kIrfft, {2, 3});
  Value ts = b.triangular_solve(b.slice(f, {0, 0}, {2, 2}), f,
                                TriangularSolveAttrs{true, false, true, Transpose::kTranspose});
  Value rng = b.rng_bit_generator(b.constant(Literal::vector<std::uint64_t>({7, 9})),
                                  Shape(DType::kU32, {3, 2}))[1];
  LinalgAttrs potrf{LinalgRoutine::kPotrf};
  potrf.uplo = 'U';
  Value la = b.linalg({b.slice(f, {0, 0}, {2, 2})}, potrf)[1];
  for (Value v : {cmp, cv, bc, rs, sl, cc, pd, rv, dus, rd, dot, sel, cl, sc, ga, rw, sas, cw, rp, so, tk, ff, rf,
                  irf, ts, rng, la})
    outs.push_back(v);
  // Control flow: a while (the shared counting loop), a three-way case and an if.
  Value n = b.reshape(b.slice(io, {0, 2}, {1, 3}), {});
  std::vector<Value> loop = b.while_loop({b.constant(1), b.constant(0), n},
                                         testing::counter_cond(), testing::counter_body());
  std::vector<Graph> branches;
  for (std::int32_t k = 0; k < 3; ++k) branches.push_back(testing::scaled_branch(k));
  Value v3 = b.reshape(b.slice(f, {0, 0}, {1, 3}), {3});
  Value y = b.reshape(b.slice(f, {1, 1}, {2, 2}), {});
  std::vector<Value> cs = b.case_op(i, {v3, y}, std::move(branches));
  std::vector<Value> ifs = b.if_op(b.reshape(b.slice(p, {0, 0}, {1, 1}), {}), {v3, y},
                                   testing::scaled_branch(1), testing::scaled_branch(2));
  for (const std::vector<Value>* list : {&loop, &cs, &ifs}) outs.insert(outs.end(), list->begin(), list->end());
  std::vector<Value> am = b.argmax(f, 1);
  outs.insert(outs.end(), am.begin(), am.end());
  // Many processes: the grid position and every collective.
  const CollectiveAttrs pair_groups{{0, 1}, 2, 1, 1, true, 1, 0, 0};
  outs.push_back(b.replica_id());
  outs.push_back(b.partition_id());
  outs.push_back(b.all_reduce(f, OpCode::kAdd, pair_groups));
  outs.push_back(b.all_gather({f}, pair_groups)[0]);
  outs.push_back(b.reduce_scatter(f, make_binary_body(OpCode::kMaximum, kF32).value(), CollectiveAttrs{{0, 1}, 2, 0, 0, false, 0, 0, 0}));
  outs.push_back(b.all_to_all({f}, CollectiveAttrs{{}, 0, 0, 0, false, 1, 0, 3})[0]);
  outs.push_back(b.collective_permute(s, CollectiveAttrs{{0, 1, 1, 0}, 2, 2, 1, false, 0, 0, 0}));
  outs.push_back(b.collective_broadcast({c}, CollectiveAttrs{})[0]);
  // Tokens: every channel field set somewhere, a config string, a payload of two types.
  ChannelAttrs ch;
  ch.channel_id = 3;
  ch.channel_type = 1;
  ch.is_host_transfer = true;
  ch.source_target_pairs = {0, 1, 1, 0};
  Value sent = b.send({f, s}, b.after_all(), ch);
  ch.payload = {Shape(kF32, {2, 3}), Shape(kS32, {})};
  std::vector<Value> got = b.recv(b.after_all({sent, sent}), ch);
  ChannelAttrs feed;
  feed.config = "queue \"a\"";
  feed.payload = {Shape(kC64, {2})};
  std::vector<Value> fed = b.infeed(got[2], feed);
  feed.payload.clear();
  outs.push_back(got[0]);
  outs.push_back(fed[0]);
  outs.push_back(b.outfeed({c}, fed[1], feed));
  return build_ok(b, outs);
}

/// A literal of `dims` whose bytes run through many bit patterns (NaNs with payloads,
/// denormals, negative zeros for floating point); pred gets 0 and 1 only.
Literal patterned(DType t, std::vector<std::int64_t> dims, int seed) {
  Literal lit(Shape(t, std::move(dims)));
  std::span<std::byte> bytes = lit.bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = t == kPred ? static_cast<std::byte>((i + seed) % 2)
                          : static_cast<std::byte>((i * 131 + 7 * seed + 3) & 0xff);
  return lit;
}

/// reduce bodies nested `depth` levels deep: each level's body is a reduce over a rank-0
/// value whose body is the level below.
Graph nested_bodies(int depth) {
  Graph body = make_binary_body(OpCode::kAdd, kF32).value();
  for (int level = 1; level < depth; ++level) {
    GraphBuilder b(str_cat("level", level));
    Value acc = b.parameter(Shape(kF32, {}));
    Value x = b.parameter(Shape(kF32, {}));
    body = build_ok(b, {b.reduce(acc, x, std::move(body), {})});
  }
  GraphBuilder b("nested");
  Value x = b.parameter(Shape(kF32, {4}));
  return build_ok(b, {b.reduce(x, b.constant(0.0f), std::move(body), {0})});
}

}  // namespace

TEST_CASE("serialize: byte_io writes little-endian and reads back with bounds checks") {
  ByteWriter w;
  w.u8(0xab);
  w.u16(0x1234);
  w.u32(0xdeadbeef);
  w.u64(0x0102030405060708ull);
  w.i64(-2);
  w.string("hi");
  const std::vector<std::byte> expected = {
      std::byte{0xab}, std::byte{0x34}, std::byte{0x12}, std::byte{0xef}, std::byte{0xbe},
      std::byte{0xad}, std::byte{0xde}, std::byte{0x08}, std::byte{0x07}, std::byte{0x06},
      std::byte{0x05}, std::byte{0x04}, std::byte{0x03}, std::byte{0x02}, std::byte{0x01},
      std::byte{0xfe}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff},
      std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0x02}, std::byte{0x00},
      std::byte{0x00}, std::byte{0x00}, std::byte{'h'},  std::byte{'i'}};
  CHECK(std::vector<std::byte>(w.view().begin(), w.view().end()) == expected);

  ByteReader r(w.view(), 100);
  CHECK(r.u8("a").value() == 0xab);
  CHECK(r.u16("b").value() == 0x1234);
  CHECK(r.u32("c").value() == 0xdeadbeef);
  CHECK(r.u64("d").value() == 0x0102030405060708ull);
  CHECK(r.i64("e").value() == -2);
  CHECK(r.string("f").value() == "hi");
  CHECK(r.at_end());
  CHECK(r.offset() == 129);  // offsets count from the base
  check_error(r.u32("node count").status(), StatusCode::kDataLoss,
              "truncated at byte offset 129: node count needs 4 bytes but only 0 remain");

  ByteWriter counts;
  counts.u32(5);
  counts.u64(0);
  ByteReader cr(counts.view());
  check_error(cr.count("item count", 2).status(), StatusCode::kDataLoss,
              "corrupt at byte offset 0: item count 5 cannot fit in the 8 bytes that remain");
  ByteReader cr2(counts.view());
  check_error(cr2.count("item count", 1, 4).status(), StatusCode::kDataLoss,
              "item count 5 exceeds the limit of 4");
  ByteReader cr3(counts.view());
  CHECK(cr3.count("item count", 1).value() == 5);

  ByteWriter long_string;
  long_string.u32(1000);
  ByteReader sr(long_string.view());
  check_error(sr.string("name").status(), StatusCode::kDataLoss,
              "corrupt at byte offset 0: name length 1000 exceeds the 0 bytes that remain");

  // The published FNV-1a test vectors.
  auto fnv = [](std::string_view s) {
    return fnv1a64(std::as_bytes(std::span<const char>(s.data(), s.size())));
  };
  CHECK(fnv("") == 0xcbf29ce484222325ull);
  CHECK(fnv("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv("foobar") == 0x85944171f73967e8ull);
  CHECK(hex_u64(0xdeadbeefull) == "0x00000000deadbeef");
}

TEST_CASE("serialize: the format is pinned byte for byte") {
  const std::vector<std::byte> blob = serialize(tiny_graph());
  std::vector<std::byte> expected;
  auto put = [&](std::initializer_list<int> bytes) {
    for (int b : bytes) expected.push_back(static_cast<std::byte>(b));
  };
  put({'P', 'J', 'L', 'G'});                         // magic
  put({3, 0, 0, 0});                                 // version 3
  put({71, 0, 0, 0, 0, 0, 0, 0});                    // graph size
  put({1, 0, 0, 0, 'g'});                            // name
  put({1, 0, 0, 0});                                 // one node
  put({0});                                          // parameter
  put({0, 0, 0, 0});                                 // no operands
  put({1});                                          // ParameterAttrs
  put({0, 0, 0, 0, 0, 0, 0, 0});                     //   number 0
  put({12, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0});  //   shape f32[2], rank 1, dim 2, layout 0
  put({1, 0, 0, 0});                                 // one result
  put({12, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0});  //   f32[2]
  put({0, 0, 0, 0});                                 // no bodies
  put({1, 0, 0, 0});                                 // one output
  put({0, 0, 0, 0, 0, 0, 0, 0});                     //   %0
  std::uint64_t sum = fnv1a64(expected);
  for (int i = 0; i < 8; ++i, sum >>= 8) expected.push_back(static_cast<std::byte>(sum & 0xff));
  CHECK(blob == expected);
  CHECK(blob.size() == 95);
  // The checksum is pinned too: it depends on nothing of the host.
  CHECK(ByteReader(std::span<const std::byte>(blob).subspan(87)).u64("checksum").value() ==
        0x75c91eac29915a9eull);
}

TEST_CASE("serialize: round-trip of every op and every attribute kind") {
  const Graph g = every_op_graph();
  std::set<OpCode> ops;
  std::set<std::size_t> kinds;
  auto collect = [&](auto&& self, const Graph& graph) -> void {
    for (const Node& node : graph.nodes()) {
      ops.insert(node.op);
      kinds.insert(node.attrs.index());
      for (const Graph& body : node.bodies) self(self, body);
    }
  };
  collect(collect, g);
  CHECK(ops.size() == kOpCodeCount);
  CHECK(kinds.size() == std::variant_size_v<Attributes>);
  const Graph back = round_trip(g);
  CHECK(back.name() == "every_op");
  CHECK(back.num_parameters() == 5);
}

TEST_CASE("serialize: constants of every dtype, special values and zero sizes round-trip") {
  GraphBuilder b("constants");
  std::vector<Value> outs;
  int seed = 0;
  for (DType t : kAllDTypes) {
    outs.push_back(b.constant(patterned(t, {}, ++seed)));
    outs.push_back(b.constant(patterned(t, {2, 3}, ++seed)));
    outs.push_back(b.constant(patterned(t, {0}, ++seed)));
    outs.push_back(b.constant(patterned(t, {2, 0, 3}, ++seed)));
  }
  const float nan_payload = std::bit_cast<float>(0x7fc12345u);
  outs.push_back(b.constant(Literal::vector<float>(
      {-0.0f, 0.0f, nan_payload, -std::numeric_limits<float>::infinity(),
       std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()})));
  outs.push_back(b.constant(Literal::vector<c64>({c64(-0.0f, 1.0f), c64(3.0f, -0.0f)})));
  const Graph g = build_ok(b, outs);
  const Graph back = round_trip(g);
  // Bits survive, not just values: -0.0 stays negative and the NaN keeps its payload.
  const Literal& specials =
      back.node(back.outputs()[4 * kAllDTypes.size()]).attr<ConstantAttrs>().literal();
  CHECK(std::signbit(specials.data<float>()[0]));
  CHECK(std::bit_cast<std::uint32_t>(specials.data<float>()[2]) == 0x7fc12345u);
}

TEST_CASE("serialize: reduce bodies, variadic results and repeated outputs round-trip") {
  GraphBuilder b("argmax");
  Value x = b.parameter(Shape(kF32, {3, 4}));
  std::vector<Value> am = b.argmax(x, 1, DType::kS64);
  std::vector<Value> an = b.argmin(x, 0);
  Value sum = b.reduce(x, b.constant(0.0f), OpCode::kAdd, {0, 1});
  const Graph g = build_ok(b, {am[1], am[0], an[1], sum, am[1], x});
  const Graph back = round_trip(g);
  CHECK(back.outputs().size() == 6);
  CHECK(back.node(back.outputs()[0]).bodies.at(0).name() == "argmax");

  // Bodies within bodies, up to the depth limit.
  round_trip(nested_bodies(kMaxSerializedBodyDepth));

  // An empty graph and a graph with parameters only.
  round_trip(Graph());
  GraphBuilder p("params");
  p.parameter(Shape(kU8, {0}));
  p.parameter(Shape(kPred, {}));
  round_trip(build_ok(p, {}));
}

TEST_CASE("serialize: empty input, wrong magic and other versions are rejected") {
  check_error(deserialize_graph({}).status(), StatusCode::kDataLoss,
              "deserialize_graph: truncated at byte offset 0: magic needs 4 bytes but only 0 "
              "remain");
  const std::string text = "hello, world: not a graph";
  check_error(
      deserialize_graph(std::as_bytes(std::span<const char>(text.data(), text.size()))).status(),
      StatusCode::kInvalidArgument,
      "deserialize_graph: not a pjrt_lite graph: expected the magic \"PJLG\" "
      "(50 4a 4c 47) at byte offset 0, found 68 65 6c 6c");

  std::vector<std::byte> blob = serialize(tiny_graph());
  blob[0] = std::byte{'X'};
  check_error(deserialize_graph(blob).status(), StatusCode::kInvalidArgument,
              "not a pjrt_lite graph");
  check_error(deserialize_graph(std::span<const std::byte>(blob).first(2)).status(),
              StatusCode::kInvalidArgument, "found 58 4a");

  blob = serialize(tiny_graph());
  blob[4] = std::byte{4};  // a future version, resealed so only the version is wrong
  reseal(blob);
  check_error(deserialize_graph(blob).status(), StatusCode::kInvalidArgument,
              "unsupported graph format version 4 (at byte offset 4); this build reads "
              "versions 1 to 3");
  blob[4] = std::byte{0};  // older than the oldest
  reseal(blob);
  check_error(deserialize_graph(blob).status(), StatusCode::kInvalidArgument,
              "unsupported graph format version 0 (at byte offset 4)");
  blob[4] = std::byte{0};
  blob[7] = std::byte{0x80};
  check_error(deserialize_graph(blob).status(), StatusCode::kInvalidArgument,
              "unsupported graph format version 2147483648");
}

TEST_CASE("serialize: a version 1 blob (written before CollectiveAttrs had num_partitions and has_dynamic_root) still loads") {
  // parameter s64[2, 2] -> all_gather(all_gather_dim 1, replica_groups [[0, 1]], channel 1),
  // as the version 1 writer wrote it.
  const std::string hex =
      "504a4c4701000000c90000000000000002000000763102000000000000000001"
      "0000000000000000050200000002000000000000000200000000000000000100"
      "000005020000000200000000000000020000000000000000000000005c010000"
      "0000000000000000001b02000000000000000000000001000000000000000200"
      "0000000000000100000000000000000000000000000000010000000000000000"
      "0000000000000000000000000000000100000005020000000200000000000000"
      "040000000000000000000000000100000001000000000000008c8b4966c85d94"
      "5d";
  std::vector<std::byte> v1;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    v1.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  StatusOr<Graph> back = deserialize_graph(v1);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  GraphBuilder b("v1");
  Value x = b.parameter(Shape(kS64, {2, 2}));
  CollectiveAttrs a;
  a.groups = {0, 1};
  a.group_size = 2;
  a.channel_id = 1;
  a.dimension = 1;
  const Graph expected = build_ok(b, {b.all_gather({x}, a)[0]});
  CHECK(*back == expected);
  const auto& read = back->node(1).attr<CollectiveAttrs>();
  CHECK(read.num_partitions == 1);
  CHECK_FALSE(read.has_dynamic_root);
  // Written again, it is a version 3 blob, 9 bytes longer (version 2's two new fields;
  // version 3 changed nothing a graph without tokens holds).
  const std::vector<std::byte> v3 = serialize(*back);
  CHECK(v3[4] == std::byte{3});
  CHECK(v3.size() == v1.size() + 9);
  CHECK(deserialize_graph(v3).value() == expected);
  // The same bytes labelled version 2 read the same.
  std::vector<std::byte> v2 = v3;
  v2[4] = std::byte{2};
  reseal(v2);
  CHECK(deserialize_graph(v2).value() == expected);
  // Read as version 2, the version 1 bytes lack the new fields: corrupt, not misread.
  std::vector<std::byte> relabelled = v1;
  relabelled[4] = std::byte{2};
  reseal(relabelled);
  CHECK(deserialize_graph(relabelled).status().code() == StatusCode::kDataLoss);
}

TEST_CASE("serialize: every truncation of a real blob is rejected") {
  const std::vector<std::byte> blob = serialize(every_op_graph());
  REQUIRE(deserialize_graph(blob).ok());
  for (std::size_t n = 0; n < blob.size(); ++n) {
    StatusOr<Graph> g = deserialize_graph(std::span<const std::byte>(blob).first(n));
    REQUIRE_MESSAGE(!g.ok(), "a prefix of ", n, " bytes was accepted");
    CHECK_MESSAGE(g.status().code() == StatusCode::kDataLoss, n, ": ", g.status().to_string());
  }
  check_error(deserialize_graph(std::span<const std::byte>(blob).first(50)).status(),
              StatusCode::kDataLoss,
              str_cat("truncated: the header declares a graph of ", blob.size() - 24,
                      " bytes and an 8-byte checksum after byte offset 16, but the input ends "
                      "at byte offset 50"));
  // One byte too many is as wrong as one too few.
  std::vector<std::byte> longer = blob;
  longer.push_back(std::byte{0});
  check_error(deserialize_graph(longer).status(), StatusCode::kDataLoss,
              "corrupt at byte offset 8: the header declares a graph of");
}

TEST_CASE("serialize: every flip of a byte or of a bit of a real blob is rejected") {
  const std::vector<std::byte> blob = serialize(every_op_graph());
  std::vector<std::byte> flipped = blob;
  for (std::size_t pos = 0; pos < blob.size(); pos += testing::kSanitizerStride) {
    for (int mask : {0xff, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80}) {
      flipped[pos] = blob[pos] ^ static_cast<std::byte>(mask);
      StatusOr<Graph> g = deserialize_graph(flipped);
      REQUIRE_MESSAGE(!g.ok(), "xor ", mask, " on byte ", pos, " was not noticed");
      // The magic and the version are read before the checksum; the rest is its job. A
      // version flipped to another this build reads is the checksum's to catch.
      std::uint32_t version = 0;
      for (int k = 3; k >= 0; --k) version = version << 8 | static_cast<std::uint32_t>(flipped[4 + static_cast<std::size_t>(k)]);
      const bool readable = version >= kOldestGraphFormatVersion && version <= kGraphFormatVersion;
      const StatusCode expected = pos < 8 && !(pos >= 4 && readable) ? StatusCode::kInvalidArgument : StatusCode::kDataLoss;
      CHECK_MESSAGE(g.status().code() == expected, pos, ": ", g.status().to_string());
    }
    flipped[pos] = blob[pos];
  }
  flipped[40] ^= std::byte{0xff};
  check_error(deserialize_graph(flipped).status(), StatusCode::kDataLoss,
              str_cat("checksum mismatch at byte offset ", blob.size() - 8, ": stored 0x"));
}

TEST_CASE("serialize: resealed truncations and random corruptions never crash") {
  const std::vector<std::byte> blob = serialize(every_op_graph());
  const std::span<const std::byte> graph_bytes = std::span<const std::byte>(blob).subspan(
      kGraphHeaderSize, blob.size() - kGraphHeaderSize - kGraphChecksumSize);
  // A prefix of the graph encoding under a header that vouches for it: the parser itself
  // must find the end.
  for (std::size_t n = 0; n < graph_bytes.size(); n += testing::kSanitizerStride) {
    StatusOr<Graph> g = deserialize_graph(seal(graph_bytes.first(n)));
    REQUIRE_MESSAGE(!g.ok(), "a resealed prefix of ", n, " bytes was accepted");
    CHECK_MESSAGE(g.status().code() == StatusCode::kDataLoss, n, ": ", g.status().to_string());
  }
  // Random damage to a few bytes, resealed: rejected with DATA_LOSS, or (when it hit, say,
  // a constant's value) a graph that verifies and serializes to exactly those bytes.
  std::uint64_t state = 0x853c49e6748fea9bull;
  auto next = [&state] {  // splitmix64: deterministic across platforms
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  int accepted = 0;
  const int iterations = 3000 / testing::kSanitizerStride;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    std::vector<std::byte> damaged(graph_bytes.begin(), graph_bytes.end());
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = next() % damaged.size();
      // Small values, 0xff and random bytes: counts, enums and dims all get hit.
      const std::uint64_t kind = next() % 3;
      damaged[at] = static_cast<std::byte>(kind == 0 ? next() % 4 : kind == 1 ? 0xff : next());
    }
    const std::vector<std::byte> sealed = seal(damaged);
    StatusOr<Graph> g = deserialize_graph(sealed);
    if (g.ok()) {
      ++accepted;
      CHECK(verify(*g).ok());
      CHECK(serialize(*g) == sealed);  // one encoding per graph
    } else {
      CHECK_MESSAGE(g.status().code() == StatusCode::kDataLoss, g.status().to_string());
    }
  }
  MESSAGE(accepted, " of ", iterations, " randomly damaged blobs still decoded to a valid graph");
}

TEST_CASE("serialize: forged blobs with valid checksums are rejected by validation") {
  const std::vector<std::byte> tiny = serialize(tiny_graph());
  REQUIRE(deserialize_graph(tiny).ok());
  auto edited = [&](std::size_t at, std::initializer_list<int> bytes) {
    std::vector<std::byte> blob = tiny;
    for (int b : bytes) blob[at++] = static_cast<std::byte>(b);
    reseal(blob);
    return deserialize_graph(blob).status();
  };
  check_error(
      edited(25, {200}), StatusCode::kDataLoss,
      str_cat("deserialize_graph: graph 'g': node %0: corrupt at byte offset 25: opcode 200 "
              "is not a valid op (0..",
              kOpCodeCount - 1, ")"));
  check_error(edited(25, {27}), StatusCode::kDataLoss,
              "node %0: corrupt at byte offset 26: add with 0 operands");
  check_error(edited(30, {3}), StatusCode::kDataLoss,
              "corrupt at byte offset 30: attributes kind 3 (IotaAttrs) does not fit parameter, "
              "which takes ParameterAttrs");
  check_error(edited(30, {99}), StatusCode::kDataLoss, "attributes kind 99 (invalid)");
  check_error(edited(39, {99}), StatusCode::kDataLoss,
              "corrupt at byte offset 39: dtype 99 is not a valid dtype (1..31)");
  check_error(edited(39, {0}), StatusCode::kDataLoss, "dtype 0 is not a valid dtype");
  check_error(edited(40, {0xff, 0xff, 0xff, 0xff}), StatusCode::kDataLoss,
              "corrupt at byte offset 40: rank 4294967295 exceeds the limit of 64");
  check_error(edited(40, {65}), StatusCode::kDataLoss, "rank 65 exceeds the limit of 64");
  check_error(edited(44, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), StatusCode::kDataLoss,
              "corrupt at byte offset 44: dimension 0 is negative (-1)");
  check_error(edited(52, {7}), StatusCode::kDataLoss,
              "corrupt at byte offset 52: layout flag 7 is neither 0 nor 1");
  {
    // An explicit layout that is the default one: only one encoding per shape is accepted.
    std::vector<std::byte> blob(tiny.begin(), tiny.end() - kGraphChecksumSize);
    blob[52] = std::byte{1};
    blob.insert(blob.begin() + 53, 8, std::byte{0});  // major_to_minor {0}
    blob[8] = static_cast<std::byte>(71 + 8);         // graph size
    blob.resize(blob.size() + kGraphChecksumSize);
    reseal(blob);
    check_error(deserialize_graph(blob).status(), StatusCode::kDataLoss,
                "corrupt at byte offset 52: layout flag 1 with the default layout");
  }
  {
    // A pred constant holding 2, which no bool may hold.
    GraphBuilder b("p");
    const std::vector<std::byte> pred_blob = serialize(build_ok(b, {b.constant(true)}));
    std::vector<std::byte> blob = pred_blob;
    const std::size_t element = blob.size() - kGraphChecksumSize - 4 - 8 - 4 - 6 - 4 - 1;
    REQUIRE(blob[element] == std::byte{1});
    blob[element] = std::byte{2};
    reseal(blob);
    check_error(deserialize_graph(blob).status(), StatusCode::kDataLoss,
                str_cat("corrupt at byte offset ", element, ": pred element 0 is 2, not 0 or 1"));
  }
  check_error(edited(53, {2}), StatusCode::kDataLoss,
              "corrupt at byte offset 53: parameter with 2 results");
  check_error(edited(71, {1}), StatusCode::kDataLoss,
              "corrupt at byte offset 71: parameter with 1 bodies");
  check_error(edited(16, {0xff, 0xff, 0xff, 0xff}), StatusCode::kDataLoss,
              "corrupt at byte offset 16: graph name length 4294967295 exceeds the 67 bytes "
              "that remain");
  check_error(edited(21, {0xff, 0xff, 0xff, 0x7f}), StatusCode::kDataLoss,
              "corrupt at byte offset 21: node count 2147483647 cannot fit in the 62 bytes that "
              "remain (each takes at least 14)");
  check_error(edited(21, {0xff, 0xff, 0xff, 0xff}), StatusCode::kDataLoss,
              "corrupt at byte offset 21: node count 4294967295 exceeds the limit of 2147483647");
  check_error(edited(75, {0xff, 0xff, 0xff, 0x7f}), StatusCode::kDataLoss,
              "corrupt at byte offset 75: output count 2147483647 cannot fit");
  {
    // A header that vouches for one byte more than the graph takes.
    std::vector<std::byte> graph_bytes(tiny.begin() + kGraphHeaderSize,
                                       tiny.end() - kGraphChecksumSize);
    graph_bytes.push_back(std::byte{0});
    check_error(deserialize_graph(seal(graph_bytes)).status(), StatusCode::kDataLoss,
                "corrupt at byte offset 87: the graph ends here, but the header declares it ends "
                "at byte offset 88");
  }
  // Decodes, but is not a valid graph: the verifier's verdict, as DATA_LOSS.
  check_error(edited(62, {3}), StatusCode::kDataLoss,
              "deserialize_graph: the graph at byte offsets [16, 87) does not verify: graph "
              "'g': node %0: parameter: result 0 has shape f32[3] but inference gives f32[2]");
  check_error(edited(79, {1}), StatusCode::kDataLoss,
              "does not verify: graph 'g': output 0 is %1, which is not a value of the graph");
  check_error(edited(31, {1}), StatusCode::kDataLoss,
              "node %0: parameter number 1 is not below the node count 1");
}

TEST_CASE("serialize: forged huge counts and dims are rejected before allocating") {
  // Each of these would ask for terabytes if a count or a size were trusted.
  // A whole parameter node; Shape's plain constructor does not validate, which lets it
  // hold what only a forger would write.
  auto parameter_node = [](ByteWriter& w, std::vector<std::int64_t> dims) {
    const Shape shape(kF32, std::move(dims));
    w.u8(static_cast<std::uint8_t>(OpCode::kParameter));
    w.u32(0);
    w.u8(static_cast<std::uint8_t>(kAttributesIndex<ParameterAttrs>));
    w.i64(0);
    detail::write_shape(w, shape);
    w.u32(1);
    detail::write_shape(w, shape);
    w.u32(0);
  };
  {
    ByteWriter w;
    w.string("huge");
    w.u32(0x7fffffff);  // nodes
    CHECK(deserialize_graph(seal(w.view()))
              .status()
              .message()
              .find("node count 2147483647 cannot fit in the 0 bytes") != std::string_view::npos);
  }
  {
    // A parameter whose byte size overflows int64.
    ByteWriter w;
    w.string("huge");
    w.u32(1);
    parameter_node(w, {std::int64_t{1} << 40, std::int64_t{1} << 40});
    check_error(deserialize_graph(seal(w.view())).status(), StatusCode::kDataLoss,
                "dimension 1 (1099511627776) makes the byte size of a f32 shape overflow int64");
    // Zeros do not excuse the others: strides multiply them all.
    ByteWriter z;
    z.string("huge");
    z.u32(1);
    parameter_node(z, {0, std::int64_t{1} << 40, std::int64_t{1} << 40});
    check_error(deserialize_graph(seal(z.view())).status(), StatusCode::kDataLoss,
                "overflow int64");
  }
  {
    // A constant of 4 PiB whose declared byte count matches its shape.
    ByteWriter w;
    w.string("huge");
    w.u32(1);
    w.u8(static_cast<std::uint8_t>(OpCode::kConstant));
    w.u32(0);
    w.u8(static_cast<std::uint8_t>(kAttributesIndex<ConstantAttrs>));
    w.u8(1);
    w.u8(static_cast<std::uint8_t>(kF32));
    w.u32(2);
    w.i64(std::int64_t{1} << 30);
    w.i64(std::int64_t{1} << 20);
    w.u8(0);
    w.u64(std::uint64_t{1} << 52);
    w.u64(0);
    check_error(deserialize_graph(seal(w.view())).status(), StatusCode::kDataLoss,
                "truncated at byte offset 65: constant elements needs 4503599627370496 bytes "
                "but only 8 remain");
    // And one whose byte count disagrees with its shape.
    std::vector<std::byte> blob = seal(w.view());
    blob[57] = std::byte{1};  // byte count 2^52 + 1
    reseal(blob);
    check_error(deserialize_graph(blob).status(), StatusCode::kDataLoss,
                "corrupt at byte offset 57: constant byte count 4503599627370497 is not the "
                "4503599627370496 bytes of its shape f32[1073741824,1048576]");
  }
  {
    // An operand list far longer than the input.
    ByteWriter w;
    w.string("huge");
    w.u32(2);
    parameter_node(w, {4});
    w.u8(static_cast<std::uint8_t>(OpCode::kConcatenate));
    w.u32(0xfffffff0);
    check_error(deserialize_graph(seal(w.view())).status(), StatusCode::kDataLoss,
                "operand count 4294967280 cannot fit");
  }
  {
    // Many operands that each name one rank-64 value: cheap to write, costly to verify.
    ByteWriter w;
    w.string("fan_in");
    w.u32(2);
    parameter_node(w, std::vector<std::int64_t>(64, 1));
    const std::uint32_t operands = 100000;
    w.u8(static_cast<std::uint8_t>(OpCode::kConcatenate));
    w.u32(operands);
    for (std::uint32_t k = 0; k < operands; ++k) w.u64(0);
    check_error(deserialize_graph(seal(w.view())).status(), StatusCode::kDataLoss,
                "refers to its values' shapes far more often than a graph of this size can");
  }
}

TEST_CASE("serialize: bodies nested beyond the limit are rejected") {
  const std::vector<std::byte> blob = serialize(nested_bodies(kMaxSerializedBodyDepth + 1));
  check_error(deserialize_graph(blob).status(), StatusCode::kDataLoss,
              str_cat("bodies are nested deeper than ", kMaxSerializedBodyDepth, " levels"));
}

TEST_CASE("serialize: graphs that do not verify serialize but do not deserialize") {
  GraphParts parts = tiny_graph().to_parts();
  parts.nodes[0].results[0] = Shape(kF32, {5});
  const Graph bad = Graph::from_parts(std::move(parts));
  REQUIRE_FALSE(verify(bad).ok());
  check_error(deserialize_graph(serialize(bad)).status(), StatusCode::kDataLoss,
              "does not verify: graph 'g': node %0: parameter: result 0 has shape f32[5]");

  GraphParts null_constant;
  null_constant.name = "null";
  null_constant.nodes.push_back(
      Node{OpCode::kConstant, {}, ConstantAttrs{}, {Shape(kF32, {})}, {}});
  check_error(deserialize_graph(serialize(Graph::from_parts(std::move(null_constant)))).status(),
              StatusCode::kDataLoss, "node %0: constant: has no value");
}

TEST_CASE("serialize: read_graph and write_graph embed a graph in another format") {
  const Graph g = every_op_graph();
  ByteWriter w;
  w.string("container header");
  write_graph(w, g);
  w.u32(0xfeedface);  // whatever the container puts after the graph
  ByteReader r(w.view());
  REQUIRE(r.string("header").value() == "container header");
  StatusOr<Graph> back = read_graph(r);
  REQUIRE_MESSAGE(back.ok(), back.status().to_string());
  CHECK(*back == g);
  CHECK(r.u32("trailer").value() == 0xfeedface);
  CHECK(r.at_end());
}

TEST_CASE("serialize: control flow round-trips, and a case without branches is rejected") {
  for (const Graph& g : {testing::sum_of_sums(), testing::case_graph(4), testing::if_graph()}) {
    const Graph back = round_trip(g);
    CHECK(back == g);
    CHECK(fingerprint(back) == fingerprint(g));
  }
  GraphParts parts = testing::case_graph(2).to_parts();
  for (Node& n : parts.nodes)
    if (n.op == OpCode::kCase) n.bodies.clear();
  check_error(deserialize_graph(serialize(Graph::from_parts(std::move(parts)))).status(),
              StatusCode::kDataLoss, "case with 0 bodies");
}

}  // namespace serialize_test
