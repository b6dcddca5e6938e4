// Tests of reading JAX's serialized exports (the flatbuffer of `Exported.serialize()`) and
// calling them on the CPU client. The exports are written here by a small flatbuffer writer
// of the test's own, field by field after jax/_src/export/serialization.fbs, so each test
// says what JAX would have written; the programs' results are checked against closed forms.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/stablehlo/jax_export.hpp"
#include "test_util.hpp"

namespace jax_export_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// A flatbuffer object for the writer below: a table (fields by id), a string, a vector of
/// scalars (raw little-endian bytes), of strings or of tables.
struct Fb {
  enum class Kind { kTable, kString, kScalars, kStrings, kTables } kind = Kind::kTable;
  struct Field {
    int id;
    std::vector<std::uint8_t> scalar;  // inline bytes, or empty for a reference
    std::shared_ptr<Fb> ref;
  };
  std::vector<Field> fields;
  std::string text;
  std::vector<std::uint8_t> raw;
  std::size_t count = 0;
  std::vector<Fb> items;
};

template <class T>
std::vector<std::uint8_t> le(T v) {
  std::vector<std::uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}
template <class T>
Fb::Field scalar(int id, T v) {
  return {id, le(v), nullptr};
}
Fb::Field ref(int id, Fb child) { return {id, {}, std::make_shared<Fb>(std::move(child))}; }
Fb table(std::vector<Fb::Field> fields) { return Fb{Fb::Kind::kTable, std::move(fields), {}, {}, 0, {}}; }
Fb str(std::string s) { return Fb{Fb::Kind::kString, {}, std::move(s), {}, 0, {}}; }
Fb strs(std::vector<std::string> list) {
  Fb f{Fb::Kind::kStrings, {}, {}, {}, list.size(), {}};
  for (auto& s : list) f.items.push_back(str(s));
  return f;
}
Fb tables(std::vector<Fb> list) { return Fb{Fb::Kind::kTables, {}, {}, {}, list.size(), std::move(list)}; }
template <class T>
Fb scalars(std::vector<T> values) {
  Fb f{Fb::Kind::kScalars, {}, {}, {}, values.size(), {}};
  for (T v : values)
    for (std::uint8_t b : le(v)) f.raw.push_back(b);
  return f;
}

void align(std::vector<std::uint8_t>& b, std::size_t to) {
  while (b.size() % to != 0) b.push_back(0);
}
void patch(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) { std::memcpy(b.data() + at, &v, 4); }

/// Writes `o` at the end of `b` (children after their parents, so every offset points
/// forward, as flatbuffers' unsigned offsets do) and returns where it starts.
std::size_t put(std::vector<std::uint8_t>& b, const Fb& o) {
  align(b, 4);
  const std::size_t pos = b.size();
  switch (o.kind) {
    case Fb::Kind::kString: {
      for (std::uint8_t x : le(static_cast<std::uint32_t>(o.text.size()))) b.push_back(x);
      b.insert(b.end(), o.text.begin(), o.text.end());
      b.push_back(0);
      return pos;
    }
    case Fb::Kind::kScalars: {
      for (std::uint8_t x : le(static_cast<std::uint32_t>(o.count))) b.push_back(x);
      b.insert(b.end(), o.raw.begin(), o.raw.end());
      return pos;
    }
    case Fb::Kind::kStrings:
    case Fb::Kind::kTables: {
      for (std::uint8_t x : le(static_cast<std::uint32_t>(o.items.size()))) b.push_back(x);
      const std::size_t slots = b.size();
      b.resize(b.size() + 4 * o.items.size());
      for (std::size_t k = 0; k < o.items.size(); ++k) {
        const std::size_t child = put(b, o.items[k]);
        patch(b, slots + 4 * k, static_cast<std::uint32_t>(child - (slots + 4 * k)));
      }
      return pos;
    }
    case Fb::Kind::kTable: break;
  }
  // The table's layout: its soffset, then each field aligned to its size.
  int max_id = -1;
  std::vector<std::size_t> at(o.fields.size());
  std::size_t size = 4;
  for (std::size_t k = 0; k < o.fields.size(); ++k) {
    const std::size_t width = o.fields[k].ref ? 4 : o.fields[k].scalar.size();
    while (size % width != 0) ++size;
    at[k] = size;
    size += width;
    max_id = std::max(max_id, o.fields[k].id);
  }
  const std::size_t vt = pos;
  const auto n = static_cast<std::size_t>(max_id + 1);
  for (std::uint8_t x : le(static_cast<std::uint16_t>(4 + 2 * n))) b.push_back(x);
  for (std::uint8_t x : le(static_cast<std::uint16_t>(size))) b.push_back(x);
  std::vector<std::uint16_t> offsets(n, 0);
  for (std::size_t k = 0; k < o.fields.size(); ++k) offsets[static_cast<std::size_t>(o.fields[k].id)] = static_cast<std::uint16_t>(at[k]);
  for (std::uint16_t off : offsets)
    for (std::uint8_t x : le(off)) b.push_back(x);
  align(b, 4);
  const std::size_t t = b.size();
  b.resize(b.size() + size);
  const auto soffset = static_cast<std::int32_t>(t - vt);
  std::memcpy(b.data() + t, &soffset, 4);
  for (std::size_t k = 0; k < o.fields.size(); ++k)
    if (!o.fields[k].ref) std::memcpy(b.data() + t + at[k], o.fields[k].scalar.data(), o.fields[k].scalar.size());
  for (std::size_t k = 0; k < o.fields.size(); ++k)
    if (o.fields[k].ref) {
      const std::size_t child = put(b, *o.fields[k].ref);
      patch(b, t + at[k], static_cast<std::uint32_t>(child - (t + at[k])));
    }
  return t;
}

std::vector<std::byte> finish(const Fb& root) {
  std::vector<std::uint8_t> b(4, 0);
  const std::size_t r = put(b, root);
  patch(b, 0, static_cast<std::uint32_t>(r));
  std::vector<std::byte> out(b.size());
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

/// An AbstractValue: kind shapedArray, the dims as strings, the dtype code.
Fb aval(std::vector<std::string> dims, std::int8_t dtype) {
  return table({scalar<std::int8_t>(0, 0), ref(1, strs(std::move(dims))), scalar<std::int8_t>(2, dtype)});
}

constexpr std::int8_t kJaxF32 = 10, kJaxI32 = 3;

/// What an export holds, to write as the flatbuffer.
struct ExportSpec {
  std::string name = "f";
  std::vector<Fb> in_avals, out_avals;
  std::vector<std::string> platforms = {"cpu"};
  std::string module;
  std::vector<std::uint16_t> kept;
  std::uint16_t calling_convention = 9;
  std::uint16_t serialization_version = 9;
  std::uint32_t nr_devices = 1;
  std::vector<std::string> ordered_effects = {};
  bool disable_platform_check = false;
  std::vector<Fb> in_shardings = {};
  bool unique_avals = false;  // version 10's form: avals by index into unique_avals
};

std::vector<std::byte> write_export(const ExportSpec& s) {
  std::vector<Fb::Field> f;
  f.push_back(scalar<std::uint16_t>(0, s.serialization_version));
  f.push_back(ref(1, str(s.name)));
  if (s.unique_avals) {
    std::vector<Fb> unique = s.in_avals;
    unique.insert(unique.end(), s.out_avals.begin(), s.out_avals.end());
    std::vector<std::uint32_t> in_idx, out_idx;
    for (std::size_t k = 0; k < s.in_avals.size(); ++k) in_idx.push_back(static_cast<std::uint32_t>(k));
    for (std::size_t k = 0; k < s.out_avals.size(); ++k) out_idx.push_back(static_cast<std::uint32_t>(s.in_avals.size() + k));
    f.push_back(ref(19, tables(unique)));
    f.push_back(ref(22, scalars(in_idx)));
    f.push_back(ref(23, scalars(out_idx)));
  } else {
    f.push_back(ref(3, tables(s.in_avals)));
    f.push_back(ref(5, tables(s.out_avals)));
  }
  if (!s.in_shardings.empty()) f.push_back(ref(7, tables(s.in_shardings)));
  f.push_back(ref(9, strs(s.platforms)));
  std::vector<Fb> effects;
  for (const std::string& e : s.ordered_effects) effects.push_back(table({ref(0, str(e))}));
  if (!effects.empty()) f.push_back(ref(10, tables(effects)));
  if (s.disable_platform_check) f.push_back(ref(12, tables({table({scalar<std::int8_t>(0, 0)})})));
  f.push_back(ref(13, scalars(std::vector<std::uint8_t>(s.module.begin(), s.module.end()))));
  f.push_back(scalar<std::uint16_t>(14, s.calling_convention));
  f.push_back(ref(15, scalars(s.kept)));
  f.push_back(scalar<std::uint32_t>(18, s.nr_devices));
  f.push_back(ref(26, str("0.8.1")));
  return finish(table(std::move(f)));
}

using Client = cpu::Client<cpu::ThreadPool>;
using Buffer = cpu::Buffer<cpu::ThreadPool>;

Buffer f32_buffer(Client& c, std::vector<float> values, std::vector<std::int64_t> dims) {
  return require_ok(c.buffer_from_literal(Literal::from_span<float>(values, dims).value()));
}

// 2 sin(x), with an input the module does not keep (JAX drops unused ones).
constexpr std::string_view kSine = R"(module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<3xf32>
    %1 = stablehlo.add %0, %0 : tensor<3xf32>
    return %1 : tensor<3xf32>
  }
})";

ExportSpec sine_spec() {
  ExportSpec s;
  s.in_avals = {aval({"3"}, kJaxF32), aval({"2"}, kJaxI32)};
  s.out_avals = {aval({"3"}, kJaxF32)};
  s.module = std::string(kSine);
  s.kept = {0};
  return s;
}

}  // namespace

TEST_CASE("jax export: the flatbuffer's fields are read, and the export runs with its unused input dropped") {
  for (bool unique : {false, true}) {
    CAPTURE(unique);
    ExportSpec spec = sine_spec();
    spec.unique_avals = unique;
    spec.serialization_version = unique ? 10 : 9;
    const std::vector<std::byte> bytes = write_export(spec);
    stablehlo::JaxExport e = require_ok(stablehlo::read_jax_export(bytes));
    CHECK(e.function_name == "f");
    CHECK(e.serialization_version == spec.serialization_version);
    REQUIRE(e.in_avals.size() == 2);
    CHECK(e.in_avals[0].dims == std::vector<std::string>{"3"});
    CHECK(e.in_avals[1].dtype == DType::kS32);
    CHECK(e.in_avals[0].shape().same_type_and_dims(Shape(DType::kF32, {3})));
    REQUIRE(e.out_avals.size() == 1);
    CHECK(e.platforms == std::vector<std::string>{"cpu"});
    CHECK(e.module_kept_var_idx == std::vector<std::int64_t>{0});
    CHECK(e.calling_convention_version == 9);
    CHECK(e.nr_devices == 1);
    CHECK(e.jax_version == "0.8.1");
    CHECK(std::string(reinterpret_cast<const char*>(e.module.data()), e.module.size()) == kSine);

    auto client = Client::create({.device_count = 1, .thread_count = 2}).value();
    auto call = require_ok(stablehlo::compile_jax_export(*client, e));
    Buffer x = f32_buffer(*client, {0.5f, -1.0f, 2.0f}, {3});
    Buffer unused = require_ok(client->buffer_from_literal(Literal::from_span<std::int32_t>(std::vector<std::int32_t>{7, 8}, {2}).value()));
    auto out = require_ok(call.execute({&x, &unused}));
    REQUIRE(out.size() == 1);
    const std::vector<float> got = values_of<float>(require_ok(out[0].to_literal().await()));
    const std::vector<float> in = {0.5f, -1.0f, 2.0f};
    for (std::size_t k = 0; k < 3; ++k) CHECK(got[k] == doctest::Approx(2 * std::sin(in[k])).epsilon(1e-6));
    check_error(call.execute({&x}), StatusCode::kInvalidArgument, "takes 2 argument(s), got 1");
    CHECK(call.platform_index() == nullptr);
  }
}

TEST_CASE("jax export: a multi-platform export runs its cpu branch, with the platform index bound") {
  // JAX lowers for several platforms with a case on the platform index, @main's first input.
  ExportSpec s;
  s.platforms = {"cuda", "cpu", "tpu"};
  s.in_avals = {aval({"2"}, kJaxF32)};
  s.out_avals = {aval({"2"}, kJaxF32)};
  s.kept = {0};
  s.module = R"(module @jit_g {
  func.func public @main(%platform_index: tensor<i32> {jax.global_constant = "_platform_index"}, %x: tensor<2xf32>) -> tensor<2xf32> {
    %r = "stablehlo.case"(%platform_index) ({
      %c = stablehlo.constant dense<10.0> : tensor<2xf32>
      %m = stablehlo.multiply %x, %c : tensor<2xf32>
      stablehlo.return %m : tensor<2xf32>
    }, {
      %c = stablehlo.constant dense<1.0> : tensor<2xf32>
      %a = stablehlo.add %x, %c : tensor<2xf32>
      stablehlo.return %a : tensor<2xf32>
    }, {
      %c = stablehlo.constant dense<-1.0> : tensor<2xf32>
      stablehlo.return %c : tensor<2xf32>
    }) : (tensor<i32>) -> tensor<2xf32>
    return %r : tensor<2xf32>
  }
})";
  auto client = Client::create({.device_count = 1, .thread_count = 1}).value();
  auto call = require_ok(stablehlo::compile_jax_export(*client, require_ok(stablehlo::read_jax_export(write_export(s)))));
  Buffer x = f32_buffer(*client, {3.0f, 4.0f}, {2});
  auto out = require_ok(call.execute({&x}));
  CHECK(values_of<float>(require_ok(out[0].to_literal().await())) == std::vector<float>{4.0f, 5.0f});
  // The same through the executable itself, with the module's own argument list.
  REQUIRE(call.platform_index() != nullptr);
  auto direct = require_ok(call.executable().execute({call.platform_index(), &x}));
  CHECK(values_of<float>(require_ok(direct[0].to_literal().await())) == std::vector<float>{4.0f, 5.0f});
}

TEST_CASE("jax export: symbolic shapes are refined from the arguments' shapes") {
  ExportSpec s;
  s.in_avals = {aval({"b", "3"}, kJaxF32)};
  s.out_avals = {aval({"3"}, kJaxF32)};
  s.kept = {0};
  s.module = R"(module @jit_h {
  func.func public @main(%x: tensor<?x3xf32>) -> tensor<3xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %r = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %r : tensor<3xf32>
  }
})";
  const stablehlo::JaxExport e = require_ok(stablehlo::read_jax_export(write_export(s)));
  CHECK_FALSE(e.in_avals[0].is_static());
  auto client = Client::create({.device_count = 1, .thread_count = 1}).value();
  check_error(stablehlo::compile_jax_export(*client, e), StatusCode::kInvalidArgument, "symbolic input shapes");
  auto call = require_ok(stablehlo::compile_jax_export(*client, e, {Shape(DType::kF32, {4, 3})}));
  Buffer x = f32_buffer(*client, {1, 2, 3, 10, 20, 30, 100, 200, 300, 1000, 2000, 3000}, {4, 3});
  auto out = require_ok(call.execute({&x}));
  CHECK(values_of<float>(require_ok(out[0].to_literal().await())) == std::vector<float>{1111, 2222, 3333});
}

TEST_CASE("jax export: an export for two devices runs each device's part") {
  ExportSpec s;
  s.nr_devices = 2;
  s.in_avals = {aval({"4", "2"}, kJaxF32)};
  s.out_avals = {aval({"4", "2"}, kJaxF32)};
  s.kept = {0};
  // A named sharding as JAX 0.8 writes it: mesh x=2, spec (x, None).
  s.in_shardings = {table({ref(2, table({ref(0, table({ref(0, scalars(std::vector<std::uint32_t>{2})), ref(1, strs({"x"}))})),
                                          ref(1, table({ref(0, tables({table({ref(0, strs({"x"}))}), table({ref(0, strs({}))})}))}))}))})};
  s.module = R"(module @jit_k attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<4x2xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}) -> (tensor<4x2xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0 = stablehlo.negate %x : tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
})";
  const stablehlo::JaxExport e = require_ok(stablehlo::read_jax_export(write_export(s)));
  REQUIRE(e.in_shardings.size() == 1);
  CHECK(e.in_shardings[0].specified);
  CHECK(e.in_shardings[0].named == "{mesh: x=2; spec: (x, None)}");
  auto small = Client::create({.device_count = 1, .thread_count = 1}).value();
  check_error(stablehlo::compile_jax_export(*small, e), StatusCode::kFailedPrecondition, "exported for 2 devices");
  auto client = Client::create({.device_count = 2, .thread_count = 1}).value();
  auto call = require_ok(stablehlo::compile_jax_export(*client, e));
  auto& exe = call.executable();
  std::vector<Buffer> parts;
  for (std::size_t k = 0; k < 2; ++k)
    parts.push_back(require_ok(client->buffer_from_literal(
        Literal::from_span<float>(std::vector<float>{float(4 * k), float(4 * k + 1), float(4 * k + 2), float(4 * k + 3)}, {2, 2}).value(),
        exe.addressable_devices()[k]->memory_spaces()[0])));
  const std::vector<std::vector<Buffer*>> lists = {{&parts[0]}, {&parts[1]}};
  auto out = require_ok(call.execute(std::span<const std::vector<Buffer*>>(lists)));
  REQUIRE(out.size() == 2);
  CHECK(values_of<float>(require_ok(out[1][0].to_literal().await())) == std::vector<float>{-4, -5, -6, -7});
}

TEST_CASE("jax export: bad bytes and exports that cannot run here are clear errors") {
  const std::vector<std::byte> good = write_export(sine_spec());
  // Every truncation is an error, never a crash or a read past the end.
  for (std::size_t n = 0; n < good.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(stablehlo::read_jax_export(std::span<const std::byte>(good.data(), n)).ok());
  }
  // An offset that points past the end.
  std::vector<std::byte> bad = good;
  const std::uint32_t far = 0x7fffffff;
  std::memcpy(bad.data(), &far, 4);
  check_error(stablehlo::read_jax_export(bad), StatusCode::kInvalidArgument, "points past the end");
  const std::byte artifact[] = {std::byte{'M'}, std::byte{'L'}, std::byte{0xEF}, std::byte{'R'},
                                std::byte{0},   std::byte{0},   std::byte{0},    std::byte{0}};
  check_error(stablehlo::read_jax_export(artifact), StatusCode::kInvalidArgument, "portable artifact");

  ExportSpec newer = sine_spec();
  newer.serialization_version = 12;
  check_error(stablehlo::read_jax_export(write_export(newer)), StatusCode::kUnimplemented, "serialization version 12");
  ExportSpec kept = sine_spec();
  kept.kept = {5};
  check_error(stablehlo::read_jax_export(write_export(kept)), StatusCode::kInvalidArgument, "names input 5 of 2");

  auto client = Client::create({.device_count = 1, .thread_count = 1}).value();
  ExportSpec tpu = sine_spec();
  tpu.platforms = {"tpu"};
  check_error(stablehlo::compile_jax_export(*client, require_ok(stablehlo::read_jax_export(write_export(tpu)))),
              StatusCode::kFailedPrecondition, "exported for tpu, not for cpu");
  tpu.disable_platform_check = true;
  const stablehlo::JaxExport unchecked = require_ok(stablehlo::read_jax_export(write_export(tpu)));
  CHECK(unchecked.check_disabled("platform"));
  CHECK(stablehlo::compile_jax_export(*client, unchecked).ok());
  ExportSpec effects = sine_spec();
  effects.ordered_effects = {"ForTestingOrderedEffect1()"};
  check_error(stablehlo::compile_jax_export(*client, require_ok(stablehlo::read_jax_export(write_export(effects)))),
              StatusCode::kUnimplemented, "the ordered effect ForTestingOrderedEffect1()");
  ExportSpec old = sine_spec();
  old.calling_convention = 8;
  check_error(stablehlo::compile_jax_export(*client, require_ok(stablehlo::read_jax_export(write_export(old)))),
              StatusCode::kUnimplemented, "calling convention version 8");
  // Avals that do not match the module's @main.
  ExportSpec mismatch = sine_spec();
  mismatch.kept = {0, 1};
  check_error(stablehlo::compile_jax_export(*client, require_ok(stablehlo::read_jax_export(write_export(mismatch)))),
              StatusCode::kInvalidArgument, "@main takes 1 argument(s)");
}

}  // namespace jax_export_test
