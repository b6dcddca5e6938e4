// Tests of core/: Status, DType, Shape, Literal, strided copies and UniqueFunction.
#include <doctest/doctest.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "pjrt_lite/core/dtype.hpp"
#include "pjrt_lite/core/hex.hpp"
#include "pjrt_lite/core/literal.hpp"
#include "pjrt_lite/core/shape.hpp"
#include "pjrt_lite/core/slot_cache.hpp"
#include "pjrt_lite/core/status.hpp"
#include "pjrt_lite/core/strided_copy.hpp"
#include "pjrt_lite/core/unique_function.hpp"
#include "pjrt_lite/core/version.hpp"
#include "test_util.hpp"

#if defined(__unix__)
#include <csignal>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace core_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {
StatusOr<int> half_of(int x) {
  if (x % 2) return invalid_argument_error(str_cat(x, " is odd"));
  return x / 2;
}
Status quarter(int x, int* out) {
  PJRT_LITE_ASSIGN_OR_RETURN(int h, half_of(x));
  PJRT_LITE_ASSIGN_OR_RETURN(*out, half_of(h));
  return ok_status();
}
}  // namespace

TEST_CASE("status: codes, messages and context") {
  Status ok;
  CHECK(ok.ok());
  CHECK(ok.code() == StatusCode::kOk);
  CHECK(ok.to_string() == "OK");
  Status e = invalid_argument_error("dimension 2 is negative");
  CHECK_FALSE(e.ok());
  CHECK(e.code() == StatusCode::kInvalidArgument);
  CHECK(e.to_string() == "INVALID_ARGUMENT: dimension 2 is negative");
  CHECK(e.with_context("reshape").message() == "reshape: dimension 2 is negative");
  CHECK(Status(StatusCode::kOk, "ignored").ok());
  Status copy = e;
  CHECK(copy == e);
  CHECK_FALSE(copy == not_found_error("dimension 2 is negative"));
}

TEST_CASE("status: StatusOr and the propagation macros") {
  int out = 0;
  CHECK(quarter(12, &out).ok());
  CHECK(out == 3);
  Status s = quarter(6, &out);  // 6 / 2 = 3 is odd
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() == "3 is odd");
  StatusOr<int> bad = Status();  // OK is not an error: becomes INTERNAL
  CHECK(bad.status().code() == StatusCode::kInternal);
  StatusOr<std::unique_ptr<int>> moved = std::make_unique<int>(5);
  REQUIRE(moved.ok());
  std::unique_ptr<int> p = std::move(moved).value();
  CHECK(*p == 5);
  CHECK(half_of(3).value_or(-1) == -1);
}

TEST_CASE("dtype: names, sizes, classes and C++ types") {
  CHECK(kAllDTypes.size() == 15);
  for (DType t : kAllDTypes) {
    CHECK(dtype_from_name(dtype_name(t)).value() == t);
    visit_dtype(t, [&]<class T>(std::type_identity<T>) {
      CHECK(sizeof(T) == byte_size(t));
      CHECK(dtype_of<T> == t);
    });
  }
  CHECK(dtype_name(DType::kBF16) == "bf16");
  CHECK(byte_size(DType::kPred) == 1);
  CHECK(byte_size(DType::kC128) == 16);
  CHECK(is_integral(DType::kU16));
  CHECK_FALSE(is_integral(DType::kPred));
  CHECK(is_inexact(DType::kC64));
  CHECK_FALSE(is_valid(static_cast<DType>(77)));
  Status unknown = dtype_from_name("float32").status();
  CHECK(unknown.code() == StatusCode::kInvalidArgument);
  CHECK(contains(unknown.message(), "unknown dtype 'float32'"));
}

TEST_CASE("dtype: element conversion follows StableHLO convert") {
  CHECK(convert_element<std::int8_t>(300.7f) == 127);  // saturates
  CHECK(convert_element<std::int8_t>(-300.0) == -128);
  CHECK(convert_element<std::int32_t>(-2.9f) == -2);  // truncates toward zero
  CHECK(convert_element<std::int32_t>(std::numeric_limits<float>::quiet_NaN()) == 0);
  CHECK(convert_element<std::uint8_t>(-1.0f) == 0);
  CHECK(convert_element<std::uint64_t>(1e30) == std::numeric_limits<std::uint64_t>::max());
  CHECK(convert_element<std::uint8_t>(std::int32_t{300}) == 44);  // wraps
  CHECK(convert_element<std::int16_t>(std::uint32_t{0xFFFFFFFF}) == -1);
  CHECK(convert_element<bool>(0.5f));
  CHECK_FALSE(convert_element<bool>(-0.0));
  // Complex to bool keeps the real part only, as the StableHLO interpreter converts complex
  // to every non-complex type: (0, 1) is false, (2, 0) and (NaN, 0) are true.
  CHECK_FALSE(convert_element<bool>(c64(0, 1)));
  CHECK_FALSE(convert_element<bool>(c128(-0.0, std::numeric_limits<double>::infinity())));
  CHECK(convert_element<bool>(c64(2, 0)));
  CHECK(convert_element<bool>(c128(std::numeric_limits<double>::quiet_NaN(), 0)));
  CHECK(convert_element<bool>(c128(1e-300, 0)));  // non-zero, though it is 0 as a float
  // Non-zero is true, NaN included; an f64 too small for f32 is still non-zero.
  CHECK(convert_element<bool>(1e-300));
  CHECK(convert_element<bool>(std::numeric_limits<double>::denorm_min()));
  CHECK(convert_element<bool>(std::numeric_limits<float>::quiet_NaN()));
  CHECK_FALSE(convert_element<bool>(f16(-0.0f)));
  CHECK(convert_element<float>(true) == 1.0f);
  CHECK(convert_element<float>(c128(2.5, -1)) == 2.5f);
  CHECK(convert_element<c64>(std::int32_t{-3}) == c64(-3, 0));
  CHECK(static_cast<float>(convert_element<f16>(65504.0)) == 65504.0f);
  CHECK(std::isinf(static_cast<float>(convert_element<f16>(1e6f))));
  CHECK(static_cast<float>(convert_element<bf16>(std::int64_t{3})) == 3.0f);
  CHECK(convert_element<std::int32_t>(f16(-7.75f)) == -7);

  std::array<double, 4> src = {1.5, -2.5, 1e10, -0.0};
  std::array<std::int16_t, 4> dst{};
  convert_elements(src.data(), DType::kF64, dst.data(), DType::kS16, 4);
  CHECK(dst == std::array<std::int16_t, 4>{1, -2, 32767, 0});
}

TEST_CASE("hex: digits, padding and letter case match printf, digit values match strtol") {
  CHECK(to_hex(0) == "0");
  CHECK(to_hex(0xbeef, 8) == "0000beef");
  CHECK(to_hex(0x1234, 2) == "1234");  // a minimum, never a cut
  CHECK(to_hex(0xdeadbeefull, 1, HexCase::kUpper) == "DEADBEEF");
  CHECK(to_hex(~std::uint64_t{0}, 20) == "ffffffffffffffff");  // 16 digits at most
  std::string out = "x=";
  append_hex(out, 10, 2, HexCase::kUpper);
  CHECK(out == "x=0A");

  // printf's %0*llx / %0*llX as the oracle, over values of every width.
  std::uint64_t v = 0x9e3779b97f4a7c15ull;
  for (int trial = 0; trial < 200; ++trial) {
    v = v * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t value = v >> (trial % 64);
    for (int digits = 0; digits <= 16; ++digits)
      for (HexCase letters : {HexCase::kLower, HexCase::kUpper}) {
        char want[32];
        std::snprintf(want, sizeof want, letters == HexCase::kLower ? "%0*llx" : "%0*llX", digits,
                      static_cast<unsigned long long>(value));
        CHECK_MESSAGE(to_hex(value, digits, letters) == want, value, " with ", digits, " digits");
      }
  }
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const char text[2] = {ch, 0};
    char* end = nullptr;
    const long parsed = std::strtol(text, &end, 16);
    const bool digit = std::isxdigit(c) != 0;
    CHECK_MESSAGE(is_hex_digit(ch) == digit, c);
    CHECK_MESSAGE(hex_digit_value(ch) == (digit ? static_cast<int>(parsed) : -1), c);
  }
}

TEST_CASE("shape: dims, layout, strides and sizes") {
  Shape s(DType::kF32, {2, 3, 4});
  CHECK(s.rank() == 3);
  CHECK(s.element_count() == 24);
  CHECK(s.byte_size() == 96);
  CHECK(s.has_default_layout());
  CHECK(s.byte_strides() == std::vector<std::int64_t>{48, 16, 4});
  CHECK(s.to_string() == "f32[2,3,4]");

  std::vector<std::int64_t> dims = {2, 3, 4}, m2m = {2, 1, 0};
  Shape col = Shape::make(DType::kS16, dims, m2m).value();
  CHECK_FALSE(col.has_default_layout());
  CHECK(col.byte_strides() == std::vector<std::int64_t>{2, 4, 12});
  CHECK(col.to_string() == "s16[2,3,4]{2,1,0}");
  CHECK(col.same_type_and_dims(Shape(DType::kS16, {2, 3, 4})));
  CHECK_FALSE(col == Shape(DType::kS16, {2, 3, 4}));
  CHECK(Shape(DType::kPred, {}).element_count() == 1);
  CHECK(Shape(DType::kC128, {0, 5}).byte_size() == 0);
}

TEST_CASE("shape: bad input gets a clear status") {
  std::vector<std::int64_t> neg = {2, -1};
  Status s = Shape::make(DType::kF32, neg).status();
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() == "dimension 1 is negative (-1)");
  std::vector<std::int64_t> ok = {2, 3};
  CHECK(contains(Shape::make(static_cast<DType>(42), ok).status().message(), "invalid dtype"));
  std::vector<std::int64_t> perm_bad = {0, 0}, perm_short = {0};
  CHECK(contains(Shape::make(DType::kF32, ok, perm_bad).status().message(), "not a permutation"));
  CHECK(contains(Shape::make(DType::kF32, ok, perm_short).status().message(), "layout has 1 entries"));
  std::vector<std::int64_t> huge = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  CHECK(contains(Shape::make(DType::kF32, huge).status().message(), "overflows int64"));
}

TEST_CASE("literal: creation, typed access and printing") {
  Literal m = Literal::from_span<double>(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).value();
  CHECK(m.get<double>({1, 0}) == 4.0);
  m.set<double>({0, 2}, -0.5);
  CHECK(m.data<double>()[2] == -0.5);
  CHECK(m.to_string() == "f64[2,3] {{1, 2, -0.5}, {4, 5, 6}}");
  CHECK(Literal::scalar<std::int32_t>(7).to_string() == "s32[] 7");
  CHECK(Literal::vector<bool>({true, false}).to_string() == "pred[2] {true, false}");
  CHECK(Literal::vector<std::int8_t>({-3, 4}).to_string() == "s8[2] {-3, 4}");
  CHECK(Literal::scalar(c64(1, -2)).to_string() == "c64[] (1, -2)");
  CHECK(Literal::scalar(0.1f).to_string() == "f32[] 0.1");  // shortest round-trip
  CHECK(Literal(Shape(DType::kU8, {0, 3})).to_string() == "u8[0,3] {}");
  Literal zeros(Shape(DType::kF32, {3}));
  CHECK(zeros == Literal::vector<float>({0, 0, 0}));

  Status count = Literal::from_span<float>(std::vector<float>{1, 2, 3}, {2, 2}).status();
  CHECK(count.code() == StatusCode::kInvalidArgument);
  CHECK(contains(count.message(), "3 values given for shape f32[2,2] of 4 elements"));
  std::vector<std::byte> bytes(7);
  CHECK(contains(Literal::from_bytes(Shape(DType::kF32, {2}), bytes).status().message(),
                 "7 bytes given for shape f32[2] of 8 bytes"));
}

TEST_CASE("literal: equality is exact, copies are deep") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Literal a = Literal::vector<float>({1, nan, 0.0f});
  Literal b = a;
  CHECK(a == b);  // same NaN bits
  b.set<float>({0}, 2.0f);
  CHECK(a.get<float>({0}) == 1.0f);
  CHECK_FALSE(a == b);
  CHECK_FALSE(Literal::vector<float>({0.0f}) == Literal::vector<float>({-0.0f}));
  CHECK_FALSE(Literal::vector<float>({1}) == Literal::vector<double>({1}));
  CHECK_FALSE(Literal(Shape(DType::kF32, {2, 1})) == Literal(Shape(DType::kF32, {1, 2})));
}

TEST_CASE("literal: conversion and layouts") {
  Literal f = Literal::vector<float>({1.9f, -1.9f, 300.0f});
  CHECK(f.convert(DType::kS8).value() == Literal::vector<std::int8_t>({1, -1, 127}));
  CHECK(f.convert(DType::kPred).value() == Literal::vector<bool>({true, true, true}));
  CHECK(f.convert(DType::kInvalid).status().code() == StatusCode::kInvalidArgument);

  std::vector<std::int64_t> dims = {2, 3}, m2m = {1, 0};
  Literal col(Shape::make(DType::kS32, dims, m2m).value());
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) col.set<std::int32_t>({i, j}, static_cast<std::int32_t>(10 * i + j));
  CHECK(std::vector<std::int32_t>(col.data<std::int32_t>().begin(), col.data<std::int32_t>().end()) ==
        std::vector<std::int32_t>{0, 10, 1, 11, 2, 12});  // column-major memory
  Literal row = col.with_default_layout();
  CHECK(row == Literal::from_span<std::int32_t>(std::vector<std::int32_t>{0, 1, 2, 10, 11, 12}, {2, 3}).value());
  CHECK(col.to_string() == "s32[2,3]{1,0} {{0, 1, 2}, {10, 11, 12}}");
}

TEST_CASE("literal: create checks the shape and the memory instead of ending the process") {
  StatusOr<Literal> ok = Literal::create(Shape(DType::kS16, {2, 3}));
  REQUIRE(ok.ok());
  CHECK(*ok == Literal::from_span<std::int16_t>(std::vector<std::int16_t>(6, 0), {2, 3}).value());
  std::array<std::int64_t, 2> dims = {2, 3}, column_major = {1, 0};
  const Shape laid_out = Shape::make(DType::kF32, dims, column_major).value();
  CHECK(Literal::create(laid_out)->shape() == laid_out);
  CHECK(Literal::create(Shape(DType::kC64, {0}))->size_bytes() == 0);
  // 2^59 f64 elements are 2^62 bytes: a valid shape, but no machine has the memory.
  StatusOr<Literal> huge = Literal::create(Shape(DType::kF64, {std::int64_t{1} << 59}));
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().code() == StatusCode::kResourceExhausted);
  CHECK(huge.status().message() ==
        "Literal::create: a literal of f64[576460752303423488]: cannot allocate 4611686018427387904 bytes");
  // Shapes that Shape::make refuses are refused here too.
  StatusOr<Literal> bad = Literal::create(Shape(DType::kInvalid, {1}));
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("invalid dtype") != std::string_view::npos);
  // from_span, from_bytes and convert go through the same check.
  const std::vector<std::byte> four(4);
  CHECK(Literal::from_bytes(Shape(DType::kF32, {1}), four).ok());
  CHECK(Literal::vector<std::int32_t>({1, -2}).convert(DType::kF64).value() == Literal::vector<double>({1, -2}));
}

#if defined(__unix__)
/// Runs `f` in a child process with stderr captured; returns (died of SIGABRT, stderr text).
template <class F>
std::pair<bool, std::string> run_and_capture_abort(F f) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);  // the test framework's crash handler stays in the parent
    ::dup2(pipe_fds[1], 2);
    ::close(pipe_fds[0]);
    f();
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char chunk[256];
  for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, text};
}

TEST_CASE("literal: data<T>() with the wrong T stops with a message naming both types, in release builds too") {
  const Literal ints = Literal::vector<std::int32_t>({1, 2});
  auto [aborted, message] = run_and_capture_abort([&] {
    std::span<const float> wrong = ints.data<float>();
    std::fprintf(stdout, "%zu\n", wrong.size());  // never reached
  });
  CHECK(aborted);
  CHECK(message.find("Literal::data<T>() with T = f32 on a literal of dtype s32") != std::string::npos);
  Literal mutable_bytes = Literal::vector<std::uint8_t>({1});
  auto [aborted_again, message_again] = run_and_capture_abort([&] { (void)mutable_bytes.data<std::int8_t>(); });
  CHECK(aborted_again);
  CHECK(message_again.find("T = s8 on a literal of dtype u8") != std::string::npos);
  CHECK(ints.data<std::int32_t>()[1] == 2);  // the right T is unaffected
}
#endif

TEST_CASE("strided copy: checks and transposing gathers") {
  Shape s(DType::kS32, {2, 3});
  // A column-major 2x3 s32: stride 4 bytes down a column, 8 across.
  std::vector<std::int32_t> colmajor = {0, 10, 1, 11, 2, 12};
  std::vector<std::int64_t> strides = {4, 8};
  CHECK(check_byte_strides(s, strides, 24).value() == 24);
  std::vector<std::int32_t> out(6);
  gather_strided(reinterpret_cast<const std::byte*>(colmajor.data()), s.dims(), strides, 4,
                 reinterpret_cast<std::byte*>(out.data()));
  CHECK(out == std::vector<std::int32_t>{0, 1, 2, 10, 11, 12});

  // A padded row pitch: rows 16 bytes apart, the last 4 bytes of each unused.
  std::vector<std::int32_t> padded = {1, 2, 3, -1, 4, 5, 6, -1};
  std::vector<std::int64_t> pitch = {16, 4};
  CHECK(check_byte_strides(s, pitch, 32).value() == 28);
  gather_strided(reinterpret_cast<const std::byte*>(padded.data()), s.dims(), pitch, 4,
                 reinterpret_cast<std::byte*>(out.data()));
  CHECK(out == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});

  // Rank 3, every permutation of a dense layout, against index arithmetic.
  std::vector<std::int64_t> d3 = {2, 3, 4};
  std::vector<std::int64_t> perm = {0, 1, 2};
  do {
    std::vector<std::int64_t> st(3);
    std::int64_t stride = 2;
    for (int k = 2; k >= 0; --k) {
      st[perm[k]] = stride;
      stride *= d3[perm[k]];
    }
    std::vector<std::int16_t> src(24);
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 4; ++k)
          src[(i * st[0] + j * st[1] + k * st[2]) / 2] = static_cast<std::int16_t>(100 * i + 10 * j + k);
    std::vector<std::int16_t> dst(24);
    REQUIRE(check_byte_strides(Shape(DType::kS16, d3), st, 48).ok());
    gather_strided(reinterpret_cast<const std::byte*>(src.data()), d3, st, 2,
                   reinterpret_cast<std::byte*>(dst.data()));
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t k = 0; k < 4; ++k) CHECK(dst[i * 12 + j * 4 + k] == 100 * i + 10 * j + k);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST_CASE("strided copy: bad strides are rejected") {
  Shape s(DType::kF32, {2, 3});
  std::vector<std::int64_t> overlap = {8, 4};  // rows only 8 bytes apart hold 12 bytes each
  CHECK(contains(check_byte_strides(s, overlap, 100).status().message(), "overlap"));
  std::vector<std::int64_t> zero = {12, 0};
  CHECK(contains(check_byte_strides(s, zero, 100).status().message(), "overlap"));
  std::vector<std::int64_t> dense = {12, 4};
  CHECK(contains(check_byte_strides(s, dense, 20).status().message(),
                 "reach byte 24 of f32[2,3] but the data holds only 20 bytes"));
  std::vector<std::int64_t> negative = {-12, 4};
  CHECK(contains(check_byte_strides(s, negative, 100).status().message(), "byte_strides[0] is negative"));
  std::vector<std::int64_t> short_strides = {4};
  CHECK(contains(check_byte_strides(s, short_strides, 100).status().message(), "1 entries for a rank-2"));
  // A dimension of size 1 never steps, so its stride does not matter.
  std::vector<std::int64_t> unit = {0, 4};
  CHECK(check_byte_strides(Shape(DType::kF32, {1, 3}), unit, 12).ok());
}

TEST_CASE("unique_function: move-only captures, inline and heap storage") {
  auto owned = std::make_unique<int>(40);
  UniqueFunction<int(int)> small = [p = std::move(owned)](int x) { return *p + x; };
  UniqueFunction<int(int)> moved = std::move(small);
  CHECK_FALSE(small);
  CHECK(moved(2) == 42);
  std::array<char, 200> big{};
  big[0] = 7;
  auto counter = std::make_shared<int>(0);
  {
    UniqueFunction<int(int)> heap = [big, counter](int x) { return big[0] + x + static_cast<int>(counter.use_count()); };
    UniqueFunction<int(int)> other = std::move(heap);
    CHECK(other(1) == 7 + 1 + 2);
  }
  CHECK(counter.use_count() == 1);  // the heap-stored capture was destroyed
}

TEST_CASE("slot_cache: keeps up to K objects, hands each out once, also across threads") {
  pjrt_lite::detail::SlotCache<int, 3> cache;
  int a = 1, b = 2, c = 3, d = 4;
  CHECK(cache.take() == nullptr);
  CHECK(cache.put(&a));
  CHECK(cache.put(&b));
  CHECK(cache.put(&c));
  CHECK_FALSE(cache.put(&d));  // full: d stays the caller's
  std::set<int*> taken;
  for (int i = 0; i < 3; ++i) taken.insert(cache.take());
  CHECK(taken == std::set<int*>{&a, &b, &c});
  CHECK(cache.take() == nullptr);
  // Four threads, each holding one of six objects, swap theirs through a cache of four slots
  // that starts with the other two: no object is ever held by two threads at once (its flag
  // would show it), and none is lost or duplicated.
  pjrt_lite::detail::SlotCache<std::atomic<int>, 4> shared;
  std::atomic<int> objects[6];
  for (auto& o : objects) o.store(0);
  CHECK(shared.put(&objects[4]));
  CHECK(shared.put(&objects[5]));
  std::atomic<int> overlaps{0};
  std::atomic<int>* held[4] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::atomic<int>* own = &objects[t];
      for (int i = 0; i < 20000; ++i) {
        if (own->exchange(1) != 0) overlaps.fetch_add(1);
        own->store(0);
        if (!shared.put(own)) continue;
        while ((own = shared.take()) == nullptr) std::this_thread::yield();
      }
      held[t] = own;
    });
  for (auto& th : threads) th.join();
  CHECK(overlaps.load() == 0);
  std::set<std::atomic<int>*> all(held, held + 4);
  while (std::atomic<int>* o = shared.take()) all.insert(o);
  CHECK(all.size() == 6);
}

// ---- The versioned inline namespace (core/version.hpp).

TEST_CASE("every declaration lives in the inline namespace named after CMake's project version") {
  static_assert(std::is_same_v<pjrt_lite::v0_1::Status, pjrt_lite::Status>);
  static_assert(std::is_same_v<pjrt_lite::v0_1::Literal, pjrt_lite::Literal>);
  const std::string project = PJRT_LITE_PROJECT_VERSION;  // "major.minor.patch", from CMake
  CHECK(project == str_cat(kVersion.major, ".", kVersion.minor, ".", kVersion.patch));
  CHECK(kVersion.major == PJRT_LITE_VERSION_MAJOR);
  CHECK(kVersion.minor == PJRT_LITE_VERSION_MINOR);
  // Every header opens pjrt_lite's namespaces inside the inline namespace of this version: a
  // header that opened plain `namespace pjrt_lite` would put its names outside it, where a
  // mixed-version program would link them silently.
  const std::string inline_ns = str_cat("namespace pjrt_lite::inline v", kVersion.major, "_", kVersion.minor);
  const std::filesystem::path include = std::filesystem::path(PJRT_LITE_SOURCE_DIR) / "include";
  REQUIRE(std::filesystem::is_directory(include));
  int headers = 0;
  std::vector<std::string> outside;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(include)) {
    if (entry.path().extension() != ".hpp") continue;
    ++headers;
    std::ifstream in(entry.path());
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (!line.starts_with("namespace pjrt_lite")) continue;
      const bool versioned = line.starts_with(inline_ns) &&
                             (line.size() == inline_ns.size() || line[inline_ns.size()] == ' ' ||
                              line[inline_ns.size()] == ':');
      if (!versioned) outside.push_back(str_cat(entry.path().string(), ":", number, ": ", line));
    }
  }
  CHECK(headers > 50);
  std::string listing;
  for (const std::string& where : outside) listing += where + "\n";
  CHECK_MESSAGE(outside.empty(), str_cat(outside.size(), " namespace openings outside ", inline_ns, ":\n", listing));
}

}  // namespace core_test
