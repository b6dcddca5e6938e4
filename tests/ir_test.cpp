// Tests of the IR: op names, shape inference through the builder (each rule checked against
// the spec's formula worked out by hand), every kind of builder error, the verifier on
// corrupted graphs, the printer's exact text and the fingerprint.

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "pjrt_lite/ir/ir.hpp"
#include "control_flow.hpp"
#include "test_util.hpp"

namespace ir_test {

using namespace pjrt_lite;
using namespace pjrt_lite::testing;

namespace {

/// The error must be INVALID_ARGUMENT and its message must contain `fragment`.
void check_invalid(const Status& s, std::string_view fragment) {
  check_error(s, StatusCode::kInvalidArgument, fragment);
}

/// Runs `f` on a fresh builder and returns the builder's status.
template <class F>
Status error_of(F&& f) {
  GraphBuilder b("t");
  f(b);
  return b.status();
}

/// The shape of `v`, which must be fine.
Shape shape_of(const GraphBuilder& b, Value v) {
  StatusOr<Shape> s = b.shape(v);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return *s;
}


}  // namespace

TEST_CASE("ir: op names round-trip and classification") {
  for (std::size_t i = 0; i < kOpCodeCount; ++i) {
    auto op = static_cast<OpCode>(i);
    StatusOr<OpCode> back = op_from_name(op_name(op));
    REQUIRE(back.ok());
    CHECK(*back == op);
  }
  CHECK(op_name(OpCode::kExponentialMinusOne) == "exponential_minus_one");
  CHECK(op_name(OpCode::kAdd) == "add");
  CHECK(op_name(OpCode::kNot) == "not");
  CHECK(op_name(OpCode::kDotGeneral) == "dot_general");
  CHECK(*op_from_name("stablehlo.broadcast_in_dim") == OpCode::kBroadcastInDim);
  check_invalid(op_from_name("frobnicate").status(), "unknown op 'frobnicate'");
  CHECK(*op_from_name("chlo.erf_inv") == OpCode::kErfInv);
  CHECK(*op_from_name("chlo.tan") == OpCode::kTan);
  check_invalid(op_from_name("stablehlo.erf").status(), "unknown op 'stablehlo.erf'");
  check_invalid(op_from_name("chlo.add").status(), "unknown op 'chlo.add'");

  CHECK(is_unary(OpCode::kAbs));
  CHECK(is_unary(OpCode::kImag));
  CHECK_FALSE(is_unary(OpCode::kAdd));
  CHECK(is_binary(OpCode::kAdd));
  CHECK(is_binary(OpCode::kComplex));
  CHECK_FALSE(is_binary(OpCode::kCompare));
  CHECK(is_elementwise(OpCode::kSelect));
  CHECK(is_elementwise(OpCode::kConvert));
  CHECK_FALSE(is_elementwise(OpCode::kBitcastConvert));
  CHECK_FALSE(is_elementwise(OpCode::kReduce));
  CHECK(is_commutative(OpCode::kMultiply));
  CHECK_FALSE(is_commutative(OpCode::kSubtract));
  CHECK(is_source(OpCode::kIota));
  CHECK(operand_count(OpCode::kClamp) == 3);
  CHECK(operand_count(OpCode::kReduce) == -1);

  CHECK(comparison_direction_name(ComparisonDirection::kLt) == "LT");
  CHECK(*comparison_direction_from_name("GE") == ComparisonDirection::kGe);
  CHECK(*comparison_type_from_name("TOTALORDER") == ComparisonType::kTotalOrder);
  check_invalid(comparison_type_from_name("FUZZY").status(), "unknown comparison type");
  CHECK(default_comparison_type(kS8) == ComparisonType::kSigned);
  CHECK(default_comparison_type(kPred) == ComparisonType::kUnsigned);
  CHECK(default_comparison_type(kBF16) == ComparisonType::kFloat);
  CHECK(default_comparison_type(kC64) == ComparisonType::kFloat);
}

TEST_CASE("ir: every named builder method makes its op") {
  GraphBuilder b("all");
  Value f = b.parameter(Shape(kF32, {2, 3}));
  Value i = b.parameter(Shape(kS32, {2, 3}));
  Value p = b.parameter(Shape(kPred, {2, 3}));
  Value c = b.parameter(Shape(kC64, {2, 3}));
  std::vector<std::pair<Value, OpCode>> made = {
      {b.abs(f), OpCode::kAbs},
      {b.negate(f), OpCode::kNegate},
      {b.sign(f), OpCode::kSign},
      {b.exponential(f), OpCode::kExponential},
      {b.exponential_minus_one(f), OpCode::kExponentialMinusOne},
      {b.log(f), OpCode::kLog},
      {b.log_plus_one(f), OpCode::kLogPlusOne},
      {b.sqrt(f), OpCode::kSqrt},
      {b.rsqrt(f), OpCode::kRsqrt},
      {b.cbrt(f), OpCode::kCbrt},
      {b.tanh(f), OpCode::kTanh},
      {b.logistic(f), OpCode::kLogistic},
      {b.sine(f), OpCode::kSine},
      {b.cosine(f), OpCode::kCosine},
      {b.tan(f), OpCode::kTan},
      {b.floor(f), OpCode::kFloor},
      {b.ceil(f), OpCode::kCeil},
      {b.round_nearest_afz(f), OpCode::kRoundNearestAfz},
      {b.round_nearest_even(f), OpCode::kRoundNearestEven},
      {b.is_finite(f), OpCode::kIsFinite},
      {b.not_(p), OpCode::kNot},
      {b.popcnt(i), OpCode::kPopcnt},
      {b.count_leading_zeros(i), OpCode::kCountLeadingZeros},
      {b.real(c), OpCode::kReal},
      {b.imag(c), OpCode::kImag},
      {b.acosh(f), OpCode::kAcosh},
      {b.asin(f), OpCode::kAsin},
      {b.asinh(f), OpCode::kAsinh},
      {b.atan(f), OpCode::kAtan},
      {b.atanh(f), OpCode::kAtanh},
      {b.cosh(f), OpCode::kCosh},
      {b.sinh(f), OpCode::kSinh},
      {b.erf(f), OpCode::kErf},
      {b.erfc(f), OpCode::kErfc},
      {b.erf_inv(f), OpCode::kErfInv},
      {b.lgamma(f), OpCode::kLgamma},
      {b.digamma(f), OpCode::kDigamma},
      {b.bessel_i1e(f), OpCode::kBesselI1e},
      {b.next_after(f, f), OpCode::kNextAfter},
      {b.add(f, f), OpCode::kAdd},
      {b.subtract(f, f), OpCode::kSubtract},
      {b.multiply(f, f), OpCode::kMultiply},
      {b.divide(f, f), OpCode::kDivide},
      {b.remainder(f, f), OpCode::kRemainder},
      {b.power(f, f), OpCode::kPower},
      {b.maximum(f, f), OpCode::kMaximum},
      {b.minimum(f, f), OpCode::kMinimum},
      {b.atan2(f, f), OpCode::kAtan2},
      {b.and_(p, p), OpCode::kAnd},
      {b.or_(i, i), OpCode::kOr},
      {b.xor_(i, i), OpCode::kXor},
      {b.shift_left(i, i), OpCode::kShiftLeft},
      {b.shift_right_arithmetic(i, i), OpCode::kShiftRightArithmetic},
      {b.shift_right_logical(i, i), OpCode::kShiftRightLogical},
      {b.complex(f, f), OpCode::kComplex},
      {b.compare(f, f, ComparisonDirection::kGt), OpCode::kCompare},
      {b.select(p, f, f), OpCode::kSelect},
      {b.clamp(f, f, f), OpCode::kClamp},
      {b.convert(f, kS32), OpCode::kConvert},
      {b.bitcast_convert(f, kS32), OpCode::kBitcastConvert},
      {b.broadcast_in_dim(f, {4, 2, 3}, {1, 2}), OpCode::kBroadcastInDim},
      {b.reshape(f, {6}), OpCode::kReshape},
      {b.transpose(f, {1, 0}), OpCode::kTranspose},
      {b.slice(f, {0, 0}, {1, 1}), OpCode::kSlice},
      {b.concatenate({f, f}, 0), OpCode::kConcatenate},
      {b.pad(f, b.constant(0.0f), {0, 0}, {1, 1}), OpCode::kPad},
      {b.reverse(f, {0}), OpCode::kReverse},
      {b.dynamic_slice(f, {b.constant(0), b.constant(1)}, {1, 2}), OpCode::kDynamicSlice},
      {b.dynamic_update_slice(f, f, {b.constant(0), b.constant(0)}), OpCode::kDynamicUpdateSlice},
      {b.reduce(f, b.constant(0.0f), OpCode::kAdd, {0}), OpCode::kReduce},
      {b.dot_general(f, f, {{}, {}, {1}, {1}}), OpCode::kDotGeneral},
      {b.gather(f, b.constant(Literal::vector<std::int32_t>({1})),
                GatherAttrs{{0}, {0}, {}, {}, {0}, 0, {1, 3}, false}),
       OpCode::kGather},
      {b.scatter(f, b.constant(Literal::vector<std::int32_t>({1})),
                 b.reshape(b.slice(f, {0, 0}, {1, 3}), {3}), OpCode::kParameter,
                 ScatterAttrs{{0}, {0}, {}, {}, {0}, 0, false, false}),
       OpCode::kScatter},
      {b.iota(Shape(kS32, {3}), 0), OpCode::kIota},
      {b.constant(Literal::vector<float>({1, 2})), OpCode::kConstant},
  };
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  Graph g = build_ok(b, {f});
  for (const auto& [v, op] : made) CHECK(g.node(v).op == op);
  CHECK(g.node(f).op == OpCode::kParameter);
  CHECK(verify(g).ok());
}

TEST_CASE("ir: unary ops accept the spec's element types and give its result types") {
  struct Case {
    OpCode op;
    DType in;
    DType out;
  };
  const std::vector<Case> good = {
      {OpCode::kAbs, kS32, kS32},
      {OpCode::kAbs, kF16, kF16},
      {OpCode::kAbs, kC64, kF32},
      {OpCode::kAbs, kC128, kF64},
      {OpCode::kNegate, kU8, kU8},
      {OpCode::kNegate, kC64, kC64},
      {OpCode::kSign, kS8, kS8},
      {OpCode::kSign, kC128, kC128},
      {OpCode::kExponential, kBF16, kBF16},
      {OpCode::kExponentialMinusOne, kC64, kC64},
      {OpCode::kLog, kF64, kF64},
      {OpCode::kLogPlusOne, kF32, kF32},
      {OpCode::kSqrt, kC64, kC64},
      {OpCode::kRsqrt, kF32, kF32},
      {OpCode::kCbrt, kF64, kF64},
      {OpCode::kTanh, kF16, kF16},
      {OpCode::kLogistic, kF32, kF32},
      {OpCode::kSine, kC128, kC128},
      {OpCode::kCosine, kF32, kF32},
      {OpCode::kTan, kC64, kC64},
      {OpCode::kFloor, kF16, kF16},
      {OpCode::kCeil, kBF16, kBF16},
      {OpCode::kRoundNearestAfz, kF32, kF32},
      {OpCode::kRoundNearestEven, kF64, kF64},
      {OpCode::kIsFinite, kF64, kPred},
      {OpCode::kIsFinite, kF16, kPred},
      {OpCode::kNot, kPred, kPred},
      {OpCode::kNot, kU32, kU32},
      {OpCode::kPopcnt, kS64, kS64},
      {OpCode::kPopcnt, kU8, kU8},
      {OpCode::kCountLeadingZeros, kS16, kS16},
      {OpCode::kReal, kC64, kF32},
      {OpCode::kReal, kF32, kF32},
      {OpCode::kImag, kC128, kF64},
      {OpCode::kImag, kF64, kF64},
  };
  for (const Case& c : good) {
    CAPTURE(op_name(c.op));
    CAPTURE(dtype_name(c.in));
    GraphBuilder b;
    Value y = b.unary(c.op, b.parameter(Shape(c.in, {4, 1, 2})));
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    CHECK(shape_of(b, y) == Shape(c.out, {4, 1, 2}));
  }

  struct Bad {
    OpCode op;
    DType in;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {OpCode::kAbs, kU32,
       "abs: operand 0 has element type u32, but abs takes signed integer, floating-point or "
       "complex types"},
      {OpCode::kAbs, kPred, "abs: operand 0 has element type pred"},
      {OpCode::kNegate, kPred, "takes integer, floating-point or complex types"},
      {OpCode::kSign, kU8, "sign: operand 0 has element type u8"},
      {OpCode::kExponential, kS32,
       "exponential: operand 0 has element type s32, but exponential "
       "takes floating-point or complex types"},
      {OpCode::kSine, kPred, "sine: operand 0 has element type pred"},
      {OpCode::kLog, kU8, "log: operand 0 has element type u8"},
      {OpCode::kFloor, kC64,
       "floor: operand 0 has element type c64, but floor takes "
       "floating-point types"},
      {OpCode::kRoundNearestEven, kS32, "round_nearest_even: operand 0 has element type s32"},
      {OpCode::kIsFinite, kS32, "is_finite: operand 0 has element type s32"},
      {OpCode::kIsFinite, kC64, "is_finite: operand 0 has element type c64"},
      {OpCode::kNot, kF32,
       "not: operand 0 has element type f32, but not takes pred or integer types"},
      {OpCode::kPopcnt, kPred,
       "popcnt: operand 0 has element type pred, but popcnt takes integer types"},
      {OpCode::kPopcnt, kF32, "popcnt: operand 0 has element type f32"},
      {OpCode::kCountLeadingZeros, kF32, "count_leading_zeros: operand 0 has element type f32"},
      {OpCode::kReal, kS32, "real: operand 0 has element type s32"},
      {OpCode::kImag, kPred, "imag: operand 0 has element type pred"},
  };
  for (const Bad& c : bad) {
    CAPTURE(op_name(c.op));
    check_invalid(error_of([&](GraphBuilder& b) { b.unary(c.op, b.parameter(Shape(c.in, {2}))); }),
                  c.message);
  }
  check_invalid(
      error_of([](GraphBuilder& b) { b.unary(OpCode::kAdd, b.parameter(Shape(kF32, {2}))); }),
      "add: is not a unary op");
}

TEST_CASE("ir: binary ops: element types, equal shapes, complex") {
  struct Case {
    OpCode op;
    DType in;
    DType out;
  };
  const std::vector<Case> good = {
      {OpCode::kAdd, kPred, kPred},
      {OpCode::kAdd, kC128, kC128},
      {OpCode::kMultiply, kPred, kPred},
      {OpCode::kSubtract, kU8, kU8},
      {OpCode::kDivide, kS32, kS32},
      {OpCode::kDivide, kC64, kC64},
      {OpCode::kRemainder, kS64, kS64},
      {OpCode::kRemainder, kF16, kF16},
      {OpCode::kPower, kS32, kS32},
      {OpCode::kMaximum, kPred, kPred},
      {OpCode::kMinimum, kC64, kC64},
      {OpCode::kAtan2, kF64, kF64},
      {OpCode::kAtan2, kC64, kC64},
      {OpCode::kAnd, kPred, kPred},
      {OpCode::kOr, kU32, kU32},
      {OpCode::kXor, kS8, kS8},
      {OpCode::kShiftLeft, kU8, kU8},
      {OpCode::kShiftRightArithmetic, kS32, kS32},
      {OpCode::kShiftRightLogical, kS64, kS64},
      {OpCode::kComplex, kF32, kC64},
      {OpCode::kComplex, kF64, kC128},
  };
  for (const Case& c : good) {
    CAPTURE(op_name(c.op));
    CAPTURE(dtype_name(c.in));
    GraphBuilder b;
    Value x = b.parameter(Shape(c.in, {3, 2}));
    Value y = b.binary(c.op, x, b.parameter(Shape(c.in, {3, 2})));
    REQUIRE_MESSAGE(b.ok(), b.status().to_string());
    CHECK(shape_of(b, y) == Shape(c.out, {3, 2}));
  }

  struct Bad {
    OpCode op;
    DType in;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {OpCode::kSubtract, kPred, "subtract: operand 0 has element type pred"},
      {OpCode::kDivide, kPred, "divide: operand 0 has element type pred"},
      {OpCode::kPower, kPred, "power: operand 0 has element type pred"},
      {OpCode::kRemainder, kC64,
       "remainder: operand 0 has element type c64, but remainder takes "
       "integer or floating-point types"},
      {OpCode::kAtan2, kS32, "atan2: operand 0 has element type s32"},
      {OpCode::kAnd, kF32,
       "and: operand 0 has element type f32, but and takes pred or integer types"},
      {OpCode::kOr, kC64, "or: operand 0 has element type c64"},
      {OpCode::kXor, kF16, "xor: operand 0 has element type f16"},
      {OpCode::kShiftLeft, kPred,
       "shift_left: operand 0 has element type pred, but shift_left "
       "takes integer types"},
      {OpCode::kShiftRightLogical, kF32, "shift_right_logical: operand 0 has element type f32"},
      {OpCode::kShiftRightArithmetic, kF64,
       "shift_right_arithmetic: operand 0 has element type f64"},
      {OpCode::kComplex, kS32, "complex: operand 0 has element type s32"},
      {OpCode::kComplex, kF16,
       "complex: operand 0 has element type f16, but complex takes f32 or f64"},
      {OpCode::kComplex, kC64, "complex: operand 0 has element type c64"},
  };
  for (const Bad& c : bad) {
    CAPTURE(op_name(c.op));
    check_invalid(error_of([&](GraphBuilder& b) {
                    Value x = b.parameter(Shape(c.in, {2}));
                    b.binary(c.op, x, x);
                  }),
                  c.message);
  }

  // Shapes must match exactly (no implicit broadcasting); the message names the operand.
  check_invalid(error_of([](GraphBuilder& b) {
                  b.add(b.parameter(Shape(kF32, {2})), b.parameter(Shape(kF32, {3})));
                }),
                "add: operand 1 has shape f32[3] but operand 0 has shape f32[2]");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.multiply(b.parameter(Shape(kF32, {2})), b.parameter(Shape(kF64, {2})));
                }),
                "multiply: operand 1 has shape f64[2] but operand 0 has shape f32[2]");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.complex(b.parameter(Shape(kF32, {2})), b.parameter(Shape(kF64, {2})));
                }),
                "complex: operand 1 has shape f64[2] but operand 0 has shape f32[2]");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value x = b.parameter(Shape(kF32, {2}));
                  b.binary(OpCode::kNegate, x, x);
                }),
                "negate: is not a binary op");
}

TEST_CASE("ir: compare gives pred and checks its compare type") {
  GraphBuilder b;
  Value f = b.parameter(Shape(kF32, {2, 2}));
  Value u = b.parameter(Shape(kU8, {2}));
  Value lt = b.compare(f, f, ComparisonDirection::kLt);
  Value total = b.compare(f, f, ComparisonDirection::kEq, ComparisonType::kTotalOrder);
  Value ge = b.compare(u, u, ComparisonDirection::kGe);
  REQUIRE(b.ok());
  CHECK(shape_of(b, lt) == Shape(kPred, {2, 2}));
  CHECK(shape_of(b, ge) == Shape(kPred, {2}));
  Graph g = build_ok(b, {lt, total, ge});
  // The builder resolves "no type" to the spec's type for the element type.
  CHECK(g.node(lt).attr<CompareAttrs>().type == ComparisonType::kFloat);
  CHECK(g.node(total).attr<CompareAttrs>().type == ComparisonType::kTotalOrder);
  CHECK(g.node(ge).attr<CompareAttrs>().type == ComparisonType::kUnsigned);

  check_invalid(error_of([](GraphBuilder& b) {
                  Value f = b.parameter(Shape(kF32, {2}));
                  b.compare(f, f, ComparisonDirection::kEq, ComparisonType::kSigned);
                }),
                "compare: compare type SIGNED does not fit element type f32 (expected FLOAT or "
                "TOTALORDER)");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value s = b.parameter(Shape(kS32, {2}));
                  b.compare(s, s, ComparisonDirection::kEq, ComparisonType::kUnsigned);
                }),
                "compare type UNSIGNED does not fit element type s32 (expected SIGNED)");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value c = b.parameter(Shape(kC64, {2}));
                  b.compare(c, c, ComparisonDirection::kEq, ComparisonType::kTotalOrder);
                }),
                "compare type TOTALORDER does not fit element type c64");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.compare(b.parameter(Shape(kF32, {2})), b.parameter(Shape(kS32, {2})),
                            ComparisonDirection::kEq);
                }),
                "compare: operand 1 has shape s32[2] but operand 0 has shape f32[2]");
}

TEST_CASE("ir: select and clamp take scalar or same-shape pred and bounds") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value p = b.parameter(Shape(kPred, {2, 3}));
  Value ps = b.parameter(Shape(kPred, {}));
  Value lo = b.constant(0.0f);
  CHECK(shape_of(b, b.select(p, x, x)) == Shape(kF32, {2, 3}));
  CHECK(shape_of(b, b.select(ps, x, x)) == Shape(kF32, {2, 3}));
  CHECK(shape_of(b, b.clamp(lo, x, x)) == Shape(kF32, {2, 3}));
  CHECK(shape_of(b, b.clamp(lo, x, lo)) == Shape(kF32, {2, 3}));
  CHECK(b.ok());

  check_invalid(error_of([](GraphBuilder& b) {
                  Value x = b.parameter(Shape(kF32, {2, 3}));
                  b.select(b.parameter(Shape(kPred, {3})), x, x);
                }),
                "select: operand 0 (pred) has shape pred[3] but must be rank 0 or have the dims "
                "of operand 1, f32[2,3]");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value x = b.parameter(Shape(kF32, {2}));
                  b.select(x, x, x);
                }),
                "select: operand 0 (pred) has element type f32, but must be pred");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.select(b.parameter(Shape(kPred, {})), b.parameter(Shape(kF32, {2})),
                           b.parameter(Shape(kS32, {2})));
                }),
                "select: operand 2 has shape s32[2] but operand 1 has shape f32[2]");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value x = b.parameter(Shape(kF32, {2, 3}));
                  b.clamp(b.parameter(Shape(kF32, {3})), x, x);
                }),
                "clamp: operand 0 (min) has shape f32[3] but must be a rank-0 f32 or have the "
                "shape of operand 1, f32[2,3]");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value x = b.parameter(Shape(kF32, {2}));
                  b.clamp(x, x, b.constant(1));
                }),
                "clamp: operand 2 (max) has shape s32[]");
}

TEST_CASE("ir: convert and bitcast_convert") {
  GraphBuilder b;
  Value f = b.parameter(Shape(kF32, {2, 3}));
  Value c = b.parameter(Shape(kC64, {3}));
  Value u8 = b.parameter(Shape(kU8, {5, 4}));
  CHECK(shape_of(b, b.convert(f, kPred)) == Shape(kPred, {2, 3}));
  CHECK(shape_of(b, b.convert(c, kS8)) == Shape(kS8, {3}));
  CHECK(shape_of(b, b.convert(f, kC128)) == Shape(kC128, {2, 3}));
  // Equal widths keep the shape; narrower adds a minor dim of width(E) / width(E').
  CHECK(shape_of(b, b.bitcast_convert(f, kS32)) == Shape(kS32, {2, 3}));
  CHECK(shape_of(b, b.bitcast_convert(f, kU8)) == Shape(kU8, {2, 3, 4}));
  CHECK(shape_of(b, b.bitcast_convert(f, kF16)) == Shape(kF16, {2, 3, 2}));
  // Wider consumes a minor dim of width(E') / width(E).
  CHECK(shape_of(b, b.bitcast_convert(u8, kF32)) == Shape(kF32, {5}));
  CHECK(shape_of(b, b.bitcast_convert(b.parameter(Shape(kC64, {3, 2})), kC128)) ==
        Shape(kC128, {3}));
  CHECK(b.ok());

  check_invalid(error_of([](GraphBuilder& b) {
                  b.bitcast_convert(b.parameter(Shape(kU8, {5, 3})), kF32);
                }),
                "bitcast_convert: bitcasting u8[5,3] to the wider f32 needs a minor dimension of "
                "size 4");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.bitcast_convert(b.parameter(Shape(kU8, {})), DType::kS16);
                }),
                "needs a minor dimension of size 2");
  check_invalid(
      error_of([](GraphBuilder& b) { b.bitcast_convert(b.parameter(Shape(kC64, {2})), kF64); }),
      "bitcast_convert: cannot bitcast c64 to f64: complex converts only to complex");
  // pred is one bit (StableHLO's i1).
  CHECK(shape_of(b, b.bitcast_convert(b.parameter(Shape(kPred, {3, 8})), kU8)) == Shape(kU8, {3}));
  CHECK(shape_of(b, b.bitcast_convert(b.parameter(Shape(kS64, {2})), kPred)) == Shape(kPred, {2, 64}));
  CHECK(shape_of(b, b.bitcast_convert(b.parameter(Shape(kPred, {2})), kPred)) == Shape(kPred, {2}));
  check_invalid(
      error_of([](GraphBuilder& b) { b.bitcast_convert(b.parameter(Shape(kPred, {2})), kU8); }),
      "bitcast_convert: bitcasting pred[2] to the wider u8 needs a minor dimension of size 8");
  check_invalid(
      error_of([](GraphBuilder& b) { b.bitcast_convert(b.parameter(Shape(kPred, {64})), kC64); }),
      "bitcast_convert: cannot bitcast pred to c64: complex converts only to complex");
  check_invalid(
      error_of([](GraphBuilder& b) { b.convert(b.parameter(Shape(kF32, {2})), DType::kInvalid); }),
      "convert: invalid target element type");
}

TEST_CASE("ir: parameter, constant and iota") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value k = b.constant(Literal::vector<std::int32_t>({1, 2, 3}));
  Value h = b.scalar(kF16, 0.5);
  Value z = b.scalar(kC64, 2.0);
  Value i = b.iota(Shape(kF32, {2, 5}), 1);
  Value ic = b.iota(Shape(kC128, {4}), 0);
  REQUIRE(b.ok());
  CHECK(shape_of(b, x) == Shape(kF32, {2, 3}));
  CHECK(shape_of(b, k) == Shape(kS32, {3}));
  CHECK(shape_of(b, b.constant(true)) == Shape(kPred, {}));
  CHECK(shape_of(b, b.constant(2.0)) == Shape(kF64, {}));
  CHECK(shape_of(b, h) == Shape(kF16, {}));
  CHECK(shape_of(b, z) == Shape(kC64, {}));
  CHECK(shape_of(b, i) == Shape(kF32, {2, 5}));
  CHECK(shape_of(b, ic) == Shape(kC128, {4}));
  Graph g = build_ok(b, {x});
  CHECK(g.node(h).attr<ConstantAttrs>().literal().data<f16>()[0] == f16(0.5f));
  CHECK(g.node(z).attr<ConstantAttrs>().literal().data<c64>()[0] == c64(2.0f, 0.0f));

  check_invalid(error_of([](GraphBuilder& b) { b.iota(Shape(kPred, {3}), 0); }),
                "iota: shape has element type pred, but iota takes integer, floating-point or "
                "complex types");
  check_invalid(error_of([](GraphBuilder& b) { b.iota(Shape(kS32, {3}), 1); }),
                "iota: iota_dimension 1 is out of range for shape s32[3]");
  check_invalid(error_of([](GraphBuilder& b) { b.iota(Shape(kS32, {}), 0); }),
                "iota: iota_dimension 0 is out of range for shape s32[]");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.parameter(Shape(kF32, {2, -1}));
                }),
                "parameter: shape: dimension 1 is negative (-1)");
  check_invalid(error_of([](GraphBuilder& b) { b.parameter(Shape(DType::kInvalid, {2})); }),
                "parameter: shape has an invalid element type");
  check_invalid(error_of([](GraphBuilder& b) { b.constant(Literal()); }),
                "constant: value has an invalid element type");
}

TEST_CASE("ir: the IR drops layouts: parameters, iotas and constants are row-major") {
  GraphBuilder b;
  StatusOr<Shape> column_major =
      Shape::make(kF32, std::vector<std::int64_t>{2, 3}, std::vector<std::int64_t>{1, 0});
  REQUIRE(column_major.ok());
  Value x = b.parameter(*column_major);
  Literal lit(*column_major);
  lit.set<float>({0, 1}, 7.0f);
  Value k = b.constant(lit);
  Value i = b.iota(*column_major, 0);
  REQUIRE(b.ok());
  CHECK(shape_of(b, x) == Shape(kF32, {2, 3}));
  CHECK(shape_of(b, i) == Shape(kF32, {2, 3}));
  Graph g = build_ok(b, {x, k, i});
  const Literal& stored = g.node(k).attr<ConstantAttrs>().literal();
  CHECK(stored.shape() == Shape(kF32, {2, 3}));
  CHECK(stored.data<float>()[1] == 7.0f);  // (0, 1) is element 1 in row-major order
  CHECK(verify(g).ok());
}

TEST_CASE("ir: broadcast_in_dim follows the spec's C2-C5") {
  GraphBuilder b;
  Value v = b.parameter(Shape(kF32, {3}));
  Value m = b.parameter(Shape(kF32, {1, 3}));
  Value s = b.parameter(Shape(kS32, {}));
  Value t = b.parameter(Shape(kF32, {2, 3}));
  CHECK(shape_of(b, b.broadcast_in_dim(v, {2, 3}, {1})) == Shape(kF32, {2, 3}));
  // A size-1 dimension stretches to any size.
  CHECK(shape_of(b, b.broadcast_in_dim(m, {4, 2, 3}, {0, 2})) == Shape(kF32, {4, 2, 3}));
  CHECK(shape_of(b, b.broadcast_in_dim(s, {5, 0}, {})) == Shape(kS32, {5, 0}));
  // The spec asks only for distinct dimensions, so out-of-order ones transpose on the way.
  CHECK(shape_of(b, b.broadcast_in_dim(t, {3, 2}, {1, 0})) == Shape(kF32, {3, 2}));
  CHECK(b.ok());

  check_invalid(error_of([](GraphBuilder& b) {
                  b.broadcast_in_dim(b.parameter(Shape(kF32, {3})), {2, 3}, {2});
                }),
                "broadcast_in_dim: broadcast_dimensions[0] = 2 is out of range for a result of "
                "rank 2");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.broadcast_in_dim(b.parameter(Shape(kF32, {3})), {2, 3}, {-1});
                }),
                "broadcast_dimensions[0] = -1 is out of range");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.broadcast_in_dim(b.parameter(Shape(kF32, {2, 3})), {2, 3}, {1});
                }),
                "broadcast_in_dim: broadcast_dimensions [1] has 1 entries for operand f32[2,3] of "
                "rank 2");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.broadcast_in_dim(b.parameter(Shape(kF32, {3, 3})), {3, 3}, {1, 1});
                }),
                "broadcast_in_dim: broadcast_dimensions [1,1] repeats dimension 1");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.broadcast_in_dim(b.parameter(Shape(kF32, {3})), {2, 4}, {1});
                }),
                "broadcast_in_dim: operand dimension 0 has size 3, which is neither 1 nor the "
                "size 4 of result dimension 1");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.broadcast_in_dim(b.parameter(Shape(kF32, {})), {2, -4}, {});
                }),
                "broadcast_in_dim: result dimension 1 is negative (-4)");
}

TEST_CASE("ir: reshape keeps the element count") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {2, 3}));
  CHECK(shape_of(b, b.reshape(x, {3, 2})) == Shape(kF32, {3, 2}));
  CHECK(shape_of(b, b.reshape(x, {6})) == Shape(kF32, {6}));
  CHECK(shape_of(b, b.reshape(x, {1, 6, 1})) == Shape(kF32, {1, 6, 1}));
  CHECK(shape_of(b, b.reshape(b.parameter(Shape(kS32, {1, 1})), {})) == Shape(kS32, {}));
  CHECK(b.ok());
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reshape(b.parameter(Shape(kF32, {2, 3})), {4});
                }),
                "reshape: cannot reshape f32[2,3] (6 elements) to [4] (4 elements)");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reshape(b.parameter(Shape(kF32, {0})), {-1, 0});
                }),
                "reshape: result dimension 0 is negative (-1)");
}

TEST_CASE("ir: transpose needs a permutation") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {2, 3, 4}));
  // Result dimension d is operand dimension permutation[d].
  CHECK(shape_of(b, b.transpose(x, {2, 0, 1})) == Shape(kF32, {4, 2, 3}));
  CHECK(shape_of(b, b.transpose(b.parameter(Shape(kF32, {})), {})) == Shape(kF32, {}));
  CHECK(b.ok());
  check_invalid(error_of([](GraphBuilder& b) {
                  b.transpose(b.parameter(Shape(kF32, {2, 3})), {0, 0});
                }),
                "transpose: permutation [0,0] is not a permutation of 0..1");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.transpose(b.parameter(Shape(kF32, {2, 3})), {1, 2});
                }),
                "transpose: permutation [1,2] is not a permutation of 0..1");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.transpose(b.parameter(Shape(kF32, {2, 3})), {0});
                }),
                "transpose: permutation [0] is not a permutation of 0..1");
}

TEST_CASE("ir: slice bounds and strides") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {10, 6}));
  // ceil((8 - 1) / 3) = 3 and ceil((6 - 0) / 2) = 3.
  CHECK(shape_of(b, b.slice(x, {1, 0}, {8, 6}, {3, 2})) == Shape(kF32, {3, 3}));
  CHECK(shape_of(b, b.slice(x, {2, 2}, {2, 5})) == Shape(kF32, {0, 3}));
  CHECK(shape_of(b, b.slice(x, {0, 0}, {10, 6}, {4, 7})) == Shape(kF32, {3, 1}));
  CHECK(b.ok());
  check_invalid(error_of([](GraphBuilder& b) {
                  b.slice(b.parameter(Shape(kF32, {10, 6})), {0, 1}, {10, 7});
                }),
                "slice: dimension 1: start 1 and limit 7 are out of bounds for size 6 of operand "
                "f32[10,6] (need 0 <= start <= limit <= size)");
  check_invalid(
      error_of([](GraphBuilder& b) { b.slice(b.parameter(Shape(kF32, {10})), {5}, {4}); }),
      "slice: dimension 0: start 5 and limit 4 are out of bounds");
  check_invalid(
      error_of([](GraphBuilder& b) { b.slice(b.parameter(Shape(kF32, {10})), {-1}, {4}); }),
      "slice: dimension 0: start -1 and limit 4 are out of bounds");
  check_invalid(
      error_of([](GraphBuilder& b) { b.slice(b.parameter(Shape(kF32, {10})), {0}, {4}, {0}); }),
      "slice: strides[0] = 0 must be positive");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.slice(b.parameter(Shape(kF32, {10, 2})), {0}, {4});
                }),
                "slice: start_indices [0] has 1 entries for operand f32[10,2] of rank 2");
}

TEST_CASE("ir: concatenate") {
  GraphBuilder b;
  Value a = b.parameter(Shape(kF32, {2, 3}));
  Value c = b.parameter(Shape(kF32, {4, 3}));
  CHECK(shape_of(b, b.concatenate({a, c, a}, 0)) == Shape(kF32, {8, 3}));
  CHECK(shape_of(b, b.concatenate({a, a}, 1)) == Shape(kF32, {2, 6}));
  CHECK(shape_of(b, b.concatenate({a}, 1)) == Shape(kF32, {2, 3}));
  CHECK(b.ok());
  check_invalid(
      error_of([](GraphBuilder& b) {
        b.concatenate({b.parameter(Shape(kF32, {3, 3})), b.parameter(Shape(kF32, {2, 4}))}, 0);
      }),
      "concatenate: operand 1 has shape f32[2,4] which differs from operand 0 f32[3,3] "
      "in dimension 1 (only dimension 0 may differ)");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.concatenate({b.parameter(Shape(kF32, {3})), b.parameter(Shape(kS32, {3}))}, 0);
                }),
                "concatenate: operand 1 has element type s32 but operand 0 has f32");
  check_invalid(
      error_of([](GraphBuilder& b) {
        b.concatenate({b.parameter(Shape(kF32, {3})), b.parameter(Shape(kF32, {3, 1}))}, 0);
      }),
      "concatenate: operand 1 has shape f32[3,1] of rank 2 but operand 0 has shape "
      "f32[3] of rank 1");
  check_invalid(
      error_of([](GraphBuilder& b) { b.concatenate({b.parameter(Shape(kF32, {3}))}, 1); }),
      "concatenate: dimension 1 is out of range for operand 0 f32[3]");
  check_invalid(error_of([](GraphBuilder& b) { b.concatenate({}, 0); }),
                "concatenate: needs at least one operand");
}

TEST_CASE("ir: pad with negative edges and interior padding") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value zero = b.constant(0.0f);
  // low + size + max(size - 1, 0) * interior + high: 1 + 2 + 1 * 1 + 2 = 6 and
  // -1 + 3 + 2 * 2 + 0 = 6.
  CHECK(shape_of(b, b.pad(x, zero, {1, -1}, {2, 0}, {1, 2})) == Shape(kF32, {6, 6}));
  // Negative edges crop: 2 - 1 - 1 = 0.
  CHECK(shape_of(b, b.pad(x, zero, {-1, 0}, {-1, 0})) == Shape(kF32, {0, 3}));
  CHECK(shape_of(b, b.pad(b.parameter(Shape(kF32, {0})), zero, {0}, {0}, {5})) == Shape(kF32, {0}));
  CHECK(b.ok());
  check_invalid(error_of([](GraphBuilder& b) {
                  b.pad(b.parameter(Shape(kF32, {2})), b.constant(0.0f), {0}, {0}, {-1});
                }),
                "pad: interior_padding[0] = -1 must be non-negative");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.pad(b.parameter(Shape(kF32, {2})), b.constant(0.0f), {-2}, {-1});
                }),
                "pad: result dimension 0 would have negative size -1 (size 2, low -2, high -1, "
                "interior 0)");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.pad(b.parameter(Shape(kF32, {2})), b.constant(0), {0}, {0});
                }),
                "pad: operand 1 (padding value) has shape s32[] but must be a rank-0 f32");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value x = b.parameter(Shape(kF32, {2}));
                  b.pad(x, x, {0}, {0});
                }),
                "pad: operand 1 (padding value) has shape f32[2] but must be a rank-0 f32");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.pad(b.parameter(Shape(kF32, {2})), b.constant(0.0f), {0, 0}, {0});
                }),
                "pad: edge_padding_low [0,0] has 2 entries for operand f32[2] of rank 1");
}

TEST_CASE("ir: reverse") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {2, 3}));
  CHECK(shape_of(b, b.reverse(x, {1, 0})) == Shape(kF32, {2, 3}));
  CHECK(shape_of(b, b.reverse(x, {})) == Shape(kF32, {2, 3}));
  CHECK(b.ok());
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reverse(b.parameter(Shape(kF32, {2, 3})), {0, 0});
                }),
                "reverse: dimensions [0,0] repeats dimension 0");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reverse(b.parameter(Shape(kF32, {2, 3})), {2});
                }),
                "reverse: dimensions[0] = 2 is out of range for an operand of rank 2");
}

TEST_CASE("ir: dynamic_slice and dynamic_update_slice") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {5, 6}));
  Value i = b.parameter(Shape(kS32, {}));
  Value j = b.parameter(Shape(kS32, {}));
  CHECK(shape_of(b, b.dynamic_slice(x, {i, j}, {2, 6})) == Shape(kF32, {2, 6}));
  CHECK(shape_of(b, b.dynamic_update_slice(x, b.parameter(Shape(kF32, {1, 6})), {i, j})) ==
        Shape(kF32, {5, 6}));
  CHECK(b.ok());

  check_invalid(
      error_of([](GraphBuilder& b) {
        Value i = b.parameter(Shape(kS32, {}));
        b.dynamic_slice(b.parameter(Shape(kF32, {5, 6})), {i, i}, {2, 7});
      }),
      "dynamic_slice: slice_sizes[1] = 7 is out of bounds for size 6 of operand f32[5,6]");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value i = b.parameter(Shape(kS32, {}));
                  b.dynamic_slice(b.parameter(Shape(kF32, {5, 6})), {i}, {2, 2});
                }),
                "dynamic_slice: got 1 start indices for an operand of rank 2");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value i = b.parameter(Shape(kS32, {}));
                  b.dynamic_slice(b.parameter(Shape(kF32, {5, 6})),
                                  {i, b.parameter(Shape(kS64, {}))}, {2, 2});
                }),
                "dynamic_slice: operand 2 (start index 1) has shape s64[] but start index 0 has "
                "s32[]; all must have one type");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value f = b.parameter(Shape(kF32, {}));
                  b.dynamic_slice(b.parameter(Shape(kF32, {5})), {f}, {2});
                }),
                "dynamic_slice: operand 1 (start index 0) has shape f32[] but start indices must "
                "be rank-0 integers");
  check_invalid(
      error_of([](GraphBuilder& b) {
        Value i = b.parameter(Shape(kS32, {}));
        b.dynamic_update_slice(b.parameter(Shape(kF32, {5})), b.parameter(Shape(kF32, {6})), {i});
      }),
      "dynamic_update_slice: operand 1 (update) f32[6] is larger than operand 0 f32[5] in "
      "dimension 0");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value i = b.parameter(Shape(kS32, {}));
                  b.dynamic_update_slice(b.parameter(Shape(kF32, {5})),
                                         b.parameter(Shape(kF64, {2})), {i});
                }),
                "dynamic_update_slice: operand 1 (update) has shape f64[2] but must have the "
                "element type and rank of operand 0, f32[5]");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.dynamic_update_slice(b.parameter(Shape(kF32, {5})),
                                         b.parameter(Shape(kF32, {2})),
                                         {b.parameter(Shape(kS32, {1}))});
                }),
                "dynamic_update_slice: operand 2 (start index 0) has shape s32[1]");
}

TEST_CASE("ir: reduce, single and variadic, with body signature checks") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {2, 3, 4}));
  Value zero = b.constant(0.0f);
  // The result drops the reduced dimensions.
  CHECK(shape_of(b, b.reduce(x, zero, OpCode::kAdd, {1})) == Shape(kF32, {2, 4}));
  CHECK(shape_of(b, b.reduce(x, zero, OpCode::kMaximum, {2, 0})) == Shape(kF32, {3}));
  CHECK(shape_of(b, b.reduce(x, zero, OpCode::kAdd, {})) == Shape(kF32, {2, 3, 4}));
  StatusOr<Graph> add = make_binary_body(OpCode::kAdd, kF32);
  REQUIRE(add.ok());
  CHECK(shape_of(b, b.reduce(x, zero, *add, {0, 1, 2})) == Shape(kF32, {}));

  // Variadic: (value, index) pairs, each result of its own element type.
  Value idx = b.iota(Shape(kS32, {2, 3, 4}), 1);
  StatusOr<Graph> body = make_arg_reduce_body(ComparisonDirection::kGt, kF32, kS32);
  REQUIRE(body.ok());
  std::vector<Value> r = b.reduce({x, idx}, {zero, b.constant(0)}, *body, {1});
  REQUIRE(r.size() == 2);
  CHECK(shape_of(b, r[0]) == Shape(kF32, {2, 4}));
  CHECK(shape_of(b, r[1]) == Shape(kS32, {2, 4}));

  // Inputs promote to a wider body type of the same class (spec's is_promotable).
  StatusOr<Graph> wide = make_binary_body(OpCode::kAdd, kS32);
  Value small = b.parameter(Shape(kS8, {7}));
  CHECK(shape_of(b, b.reduce(small, b.constant(std::int8_t{0}), *wide, {0})) == Shape(kS32, {}));
  // Boolean reductions (any / all) are fine.
  CHECK(shape_of(b, b.reduce(b.parameter(Shape(kPred, {4})), b.constant(false), OpCode::kOr,
                             {0})) == Shape(kPred, {}));
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  CHECK(verify(build_ok(b, r)).ok());

  check_invalid(
      error_of([&](GraphBuilder& b) {
        b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0.0f), *body, {0});
      }),
      "reduce: body takes 4 parameters, but 1 input(s) need 2 (accumulators then elements)");
  check_invalid(error_of([](GraphBuilder& b) {
                  GraphBuilder vb("vector_body");
                  Value p = vb.parameter(Shape(kF32, {2}));
                  Value q = vb.parameter(Shape(kF32, {2}));
                  Graph g = vb.build({vb.add(p, q)}).value();
                  b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0.0f), g, {0});
                }),
                "reduce: body parameter 0 has shape f32[2] but body parameters must be rank 0");
  check_invalid(error_of([](GraphBuilder& b) {
                  GraphBuilder cb("compare_body");
                  Value p = cb.parameter(Shape(kF32, {}));
                  Value q = cb.parameter(Shape(kF32, {}));
                  Graph g = cb.build({cb.compare(p, q, ComparisonDirection::kLt)}).value();
                  b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0.0f), g, {0});
                }),
                "reduce: body result 0 has type pred[] but body parameter 0 has f32[]");
  check_invalid(error_of([](GraphBuilder& b) {
                  GraphBuilder mb("mixed");
                  Value p = mb.parameter(Shape(kF32, {}));
                  mb.parameter(Shape(kF64, {}));
                  Graph g = mb.build({p}).value();
                  b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0.0f), g, {0});
                }),
                "reduce: body parameter 1 has type f64[] but body parameter 0 has f32[]");
  check_invalid(error_of([](GraphBuilder& b) {
                  GraphBuilder twob("two_outputs");
                  Value p = twob.parameter(Shape(kF32, {}));
                  twob.parameter(Shape(kF32, {}));
                  Graph g = twob.build({p, p}).value();
                  b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0.0f), g, {0});
                }),
                "reduce: body returns 2 values, but 1 input(s) need 1");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reduce(b.parameter(Shape(kF64, {3})), b.constant(0.0),
                           make_binary_body(OpCode::kAdd, kF32).value(), {0});
                }),
                "reduce: input 0 of element type f64 cannot be promoted to the body's f32");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0), OpCode::kAdd, {0});
                }),
                "reduce: operand 1 (init value 0) has shape s32[] but must be a rank-0 f32 like "
                "input 0");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value x = b.parameter(Shape(kF32, {3}));
                  b.reduce(x, x, OpCode::kAdd, {0});
                }),
                "reduce: operand 1 (init value 0) has shape f32[3]");
  check_invalid(
      error_of([](GraphBuilder& b) {
        b.reduce(b.parameter(Shape(kF32, {3, 3})), b.constant(0.0f), OpCode::kAdd, {1, 1});
      }),
      "reduce: dimensions [1,1] repeats dimension 1");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reduce(b.parameter(Shape(kF32, {3, 3})), b.constant(0.0f), OpCode::kAdd, {2});
                }),
                "reduce: dimensions[0] = 2 is out of range for inputs of rank 2");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.reduce({b.parameter(Shape(kF32, {3})), b.parameter(Shape(kS32, {4}))},
                           {b.constant(0.0f), b.constant(0)}, *body, {0});
                }),
                "reduce: operand 1 (input 1) has shape s32[4] but input 0 has shape f32[3]");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0.0f), OpCode::kCompare, {0});
                }),
                "reduce: make_binary_body: compare is not a binary op");
  check_invalid(make_binary_body(OpCode::kSine, kF32).status(), "sine is not a binary op");
}

TEST_CASE("ir: dot_general result is batch + lhs free + rhs free") {
  GraphBuilder b;
  Value a = b.parameter(Shape(kF32, {2, 3}));
  Value m = b.parameter(Shape(kF32, {3, 4}));
  Value v = b.parameter(Shape(kF32, {3}));
  Value ba = b.parameter(Shape(kF32, {5, 2, 3}));
  Value bm = b.parameter(Shape(kF32, {3, 5, 4}));
  CHECK(shape_of(b, b.dot_general(a, m, {{}, {}, {1}, {0}})) == Shape(kF32, {2, 4}));
  // Batch 0 <-> 1, contract 2 <-> 0: [5] + [2] + [4].
  CHECK(shape_of(b, b.dot_general(ba, bm, {{0}, {1}, {2}, {0}})) == Shape(kF32, {5, 2, 4}));
  // No contraction: an outer product.
  CHECK(shape_of(b, b.dot_general(v, v, {})) == Shape(kF32, {3, 3}));
  // Free dimensions keep their order: lhs [2] (dim 0), rhs [5, 4] (dims 1, 2).
  CHECK(shape_of(b, b.dot_general(a, bm, {{}, {}, {1}, {0}})) == Shape(kF32, {2, 5, 4}));
  CHECK(shape_of(b, b.dot(a, m)) == Shape(kF32, {2, 4}));
  CHECK(shape_of(b, b.dot(a, v)) == Shape(kF32, {2}));
  CHECK(shape_of(b, b.dot(v, v)) == Shape(kF32, {}));
  CHECK(b.ok());

  check_invalid(error_of([](GraphBuilder& b) {
                  b.dot_general(b.parameter(Shape(kF32, {2, 3})), b.parameter(Shape(kF64, {3, 4})),
                                {{}, {}, {1}, {0}});
                }),
                "dot_general: operand 1 (rhs) has element type f64 but operand 0 (lhs) has f32");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.dot_general(b.parameter(Shape(kF32, {2, 3})), b.parameter(Shape(kF32, {4, 4})),
                                {{}, {}, {1}, {0}});
                }),
                "dot_general: contracting dimension pair 0: lhs dimension 1 has size 3 but rhs "
                "dimension 0 has size 4");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.dot_general(b.parameter(Shape(kF32, {5, 2, 3})),
                                b.parameter(Shape(kF32, {6, 3, 4})), {{0}, {0}, {2}, {1}});
                }),
                "dot_general: batching dimension pair 0: lhs dimension 0 has size 5 but rhs "
                "dimension 0 has size 6");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.dot_general(b.parameter(Shape(kF32, {2, 3})), b.parameter(Shape(kF32, {3, 4})),
                                {{}, {}, {2}, {0}});
                }),
                "dot_general: lhs_contracting_dimensions[0] = 2 is out of range for lhs f32[2,3] "
                "of rank 2");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.dot_general(b.parameter(Shape(kF32, {3, 3})), b.parameter(Shape(kF32, {3, 3})),
                                {{0}, {0}, {0}, {1}});
                }),
                "dot_general: lhs dimension 0 appears more than once in the batching and "
                "contracting dimensions");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.dot_general(b.parameter(Shape(kF32, {3, 3})), b.parameter(Shape(kF32, {3, 3})),
                                {{}, {}, {0, 1}, {0}});
                }),
                "dot_general: lhs_contracting_dimensions [0,1] and rhs_contracting_dimensions [0] "
                "have different lengths");
  check_invalid(error_of([](GraphBuilder& b) {
                  b.dot_general(b.parameter(Shape(kF32, {3, 3})), b.parameter(Shape(kF32, {3, 3})),
                                {{0}, {}, {}, {}});
                }),
                "dot_general: lhs_batching_dimensions [0] and rhs_batching_dimensions [] have "
                "different lengths");
  check_invalid(error_of([](GraphBuilder& b) {
                  Value s = b.parameter(Shape(kF32, {}));
                  b.dot(s, s);
                }),
                "dot: operands must have rank 1 or 2, got f32[] and f32[]");
}

TEST_CASE("ir: argmax and argmin helpers") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF16, {4, 7}));
  std::vector<Value> mx = b.argmax(x, 1);
  std::vector<Value> mn = b.argmin(b.parameter(Shape(kU8, {4, 7})), 0, kS64);
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  REQUIRE(mx.size() == 2);
  CHECK(shape_of(b, mx[0]) == Shape(kF16, {4}));
  CHECK(shape_of(b, mx[1]) == Shape(kS32, {4}));
  CHECK(shape_of(b, mn[0]) == Shape(kU8, {7}));
  CHECK(shape_of(b, mn[1]) == Shape(kS64, {7}));
  Graph g = build_ok(b, {mx[1], mn[1]});
  CHECK(verify(g).ok());
  // The init values are the identities: -inf for argmax over f16, 255 for argmin over u8.
  const Node& reduce_max = g.node(mx[1]);
  const Literal& init_max = g.node(reduce_max.operands[2]).attr<ConstantAttrs>().literal();
  CHECK(std::isinf(static_cast<float>(init_max.data<f16>()[0])));
  CHECK(static_cast<float>(init_max.data<f16>()[0]) < 0);
  const Node& reduce_min = g.node(mn[1]);
  CHECK(g.node(reduce_min.operands[2]).attr<ConstantAttrs>().literal().data<std::uint8_t>()[0] ==
        255);
  CHECK(reduce_max.bodies.at(0).num_parameters() == 4);

  check_invalid(error_of([](GraphBuilder& b) { b.argmax(b.parameter(Shape(kC64, {3})), 0); }),
                "argmax: make_arg_reduce_body: values of type c64 have no order");
  check_invalid(error_of([](GraphBuilder& b) { b.argmax(b.parameter(Shape(kF32, {3})), 1); }),
                "argmax: dimension 1 is out of range for operand f32[3]");
  check_invalid(error_of([](GraphBuilder& b) { b.argmin(b.parameter(Shape(kF32, {3})), 0, kF32); }),
                "argmin: make_arg_reduce_body: index type f32 is not an integer type");
  check_invalid(
      error_of([](GraphBuilder& b) { b.argmin(b.parameter(Shape(kF32, {300})), 0, kS8); }),
      "argmin: dimension 0 of f32[300] has more elements than index type s8 can count");
}

TEST_CASE("ir: builder errors: foreign values, parameters, stickiness") {
  SUBCASE("a value from another builder") {
    GraphBuilder other("other");
    Value foreign = other.parameter(Shape(kF32, {2}));
    GraphBuilder b("main");
    Value x = b.parameter(Shape(kF32, {2}));
    Value y = b.add(x, foreign);
    CHECK_FALSE(y.valid());
    check_invalid(b.status(), "add: operand 1 (%0) comes from another builder (id ");
    check_invalid(b.status(), "not from builder 'main'");
    check_invalid(b.build({x}).status(), "add: operand 1 (%0) comes from another builder");
  }
  SUBCASE("a value of a built graph") {
    GraphBuilder first("first");
    Graph g = build_ok(first, {first.parameter(Shape(kF32, {2}))});
    GraphBuilder b("main");
    b.negate(g.outputs()[0]);
    check_invalid(b.status(),
                  "negate: operand 0 (%0) is a Value of a built Graph, not of builder "
                  "'main'; use inline_graph");
  }
  SUBCASE("an invalid value") {
    GraphBuilder b;
    b.negate(Value{});
    check_invalid(b.status(), "negate: operand 0 is an invalid Value");
  }
  SUBCASE("a value index past the builder's nodes") {
    GraphBuilder b("main");
    Value x = b.parameter(Shape(kF32, {2}));
    b.negate(Value{x.node + 5, 0, x.builder});
    check_invalid(b.status(), "negate: operand 0 (%5) is not a value of builder 'main'");
  }
  SUBCASE("an output from another builder") {
    GraphBuilder other("other");
    Value foreign = other.parameter(Shape(kF32, {2}));
    GraphBuilder b("main");
    b.parameter(Shape(kF32, {2}));
    check_invalid(b.build({foreign}).status(), "build: output 0 (%0) comes from another builder");
  }
  SUBCASE("parameter numbers: repeated, negative, with a gap") {
    check_invalid(error_of([](GraphBuilder& b) {
                    b.parameter(0, Shape(kF32, {}));
                    b.parameter(0, Shape(kF32, {}));
                  }),
                  "parameter: number 0 is already used by %0");
    check_invalid(error_of([](GraphBuilder& b) { b.parameter(-1, Shape(kF32, {})); }),
                  "parameter: number -1 is negative");
    GraphBuilder b;
    Value p0 = b.parameter(0, Shape(kF32, {}));
    Value p2 = b.parameter(2, Shape(kF32, {}));
    REQUIRE(b.ok());
    check_invalid(b.build({b.add(p0, p2)}).status(),
                  "build: parameter numbers must be 0..1 without gaps, but 1 is missing");
    // Filling the gap makes it buildable; the graph lists parameters by number.
    Value p1 = b.parameter(1, Shape(kS32, {3}));
    Graph g = build_ok(b, {p0});
    REQUIRE(g.num_parameters() == 3);
    CHECK(g.parameters()[1] == p1.detached());
    CHECK(g.parameters()[2] == p2.detached());
    CHECK(g.parameter_shapes()[1] == Shape(kS32, {3}));
    // Automatic numbers continue after the highest.
    Value p3 = b.parameter(Shape(kF32, {}));
    CHECK(build_ok(b, {p3}).node(p3).attr<ParameterAttrs>().number == 3);
  }
  SUBCASE("the first error sticks") {
    GraphBuilder b;
    Value x = b.parameter(Shape(kF32, {2}));
    Value bad = b.transpose(x, {1});
    CHECK_FALSE(bad.valid());
    Value later = b.add(x, x);  // fine on its own, but the builder has failed
    CHECK_FALSE(later.valid());
    b.reshape(x, {7});  // a second error does not replace the first
    std::vector<Value> many = b.reduce({x, x}, {x, x}, Graph(), {0});
    CHECK(many.size() == 2);
    CHECK_FALSE(many[1].valid());
    check_invalid(b.status(), "transpose: permutation [1] is not a permutation of 0..0");
    check_invalid(b.build({x}).status(), "transpose: permutation [1]");
    CHECK(b.shape(x).ok());  // queries still work on good values
  }
  SUBCASE("a body that does not verify") {
    GraphBuilder bb("body");
    Value p = bb.parameter(Shape(kF32, {}));
    Value q = bb.parameter(Shape(kF32, {}));
    GraphParts parts = build_ok(bb, {bb.add(p, q)}).to_parts();
    parts.nodes[2].results[0] = Shape(kF64, {});
    Graph broken = Graph::from_parts(std::move(parts));
    GraphBuilder b;
    b.reduce(b.parameter(Shape(kF32, {3})), b.constant(0.0f), broken, {0});
    check_invalid(b.status(),
                  "reduce: body 0: graph 'body': node %2: add: result 0 has shape "
                  "f64[] but inference gives f32[]");
  }
}

TEST_CASE("ir: inline_graph copies a graph into a builder") {
  GraphBuilder fb("affine");
  Value fx = fb.parameter(Shape(kF32, {3}));
  Value fa = fb.parameter(Shape(kF32, {}));
  Value scaled = fb.multiply(fx, fb.broadcast_in_dim(fa, {3}, {}));
  Graph f = build_ok(fb, {scaled, fx});

  GraphBuilder b("main");
  Value x = b.parameter(Shape(kF32, {3}));
  Value two = b.constant(2.0f);
  std::vector<Value> out = b.inline_graph(f, {x, two});
  REQUIRE(out.size() == 2);
  CHECK(out[1] == x);  // an output that is a parameter maps to the argument
  CHECK(shape_of(b, out[0]) == Shape(kF32, {3}));
  Graph g = build_ok(b, {out[0]});
  CHECK(g.num_nodes() == 4);  // x, 2, broadcast, multiply: f's parameters are not copied
  CHECK(g.node(out[0]).op == OpCode::kMultiply);

  check_invalid(
      error_of([&](GraphBuilder& b) { b.inline_graph(f, {b.parameter(Shape(kF32, {3}))}); }),
      "inline_graph: graph 'affine' takes 2 parameters, got 1");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.inline_graph(f, {b.parameter(Shape(kF32, {4})), b.constant(1.0f)});
                }),
                "inline_graph: argument 0 has shape f32[4] but parameter 0 of 'affine' has f32[3]");
}

TEST_CASE("ir: graphs are values") {
  GraphBuilder b("g");
  Value x = b.parameter(Shape(kF32, {2}));
  Value y = b.reduce(b.exponential(x), b.constant(0.0f), OpCode::kAdd, {0});
  Graph g = build_ok(b, {y, x});
  Graph copy = g;
  CHECK(copy == g);
  Graph moved = std::move(copy);
  CHECK(moved == g);
  CHECK(Graph::from_parts(g.to_parts()) == g);
  CHECK(g.output_shapes() == std::vector<Shape>{Shape(kF32, {}), Shape(kF32, {2})});
  CHECK(g.signature().parameters == std::vector<Shape>{Shape(kF32, {2})});
  CHECK(g.outputs()[0] == Value{3, 0, 0});
  // Built again, the builder gives an equal graph; a different name makes it unequal.
  CHECK(build_ok(b, {y, x}) == g);
  GraphParts renamed = g.to_parts();
  renamed.name = "h";
  CHECK_FALSE(Graph::from_parts(std::move(renamed)) == g);
  CHECK(to_string(Value{4, 1, 0}) == "%4#1");
}

TEST_CASE("ir: the verifier accepts built graphs and rejects corrupted ones") {
  GraphBuilder b("main");
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value y = b.parameter(Shape(kF32, {2, 3}));
  Value s = b.add(x, y);
  Value t = b.transpose(s, {1, 0});
  Value r = b.reduce(t, b.constant(0.0f), OpCode::kAdd, {0});
  const Graph g = build_ok(b, {r, s});
  REQUIRE(verify(g).ok());
  // Node indices: x %0, y %1, s %2, t %3, zero %4, r %5.

  auto corrupted = [&](auto&& edit) {
    GraphParts parts = g.to_parts();
    edit(parts);
    return verify(Graph::from_parts(std::move(parts)));
  };
  check_invalid(corrupted([](GraphParts& p) {
                  p.nodes[2].results[0] = Shape(kF32, {3, 2});
                }),
                "graph 'main': node %2: add: result 0 has shape f32[3,2] but inference gives "
                "f32[2,3]");
  check_invalid(corrupted([](GraphParts& p) {
                  p.nodes[2].operands[1] = Value{3, 0, 0};
                }),
                "graph 'main': node %2: add: operand 1 is %3, which is not a result of a node "
                "before %2");
  check_invalid(corrupted([](GraphParts& p) {
                  p.nodes[2].operands[0] = Value{0, 1, 0};
                }),
                "node %2: add: operand 0 is %0#1, which is not a result of a node before %2");
  check_invalid(corrupted([](GraphParts& p) { p.nodes[3].attrs = ReverseAttrs{{0}}; }),
                "node %3: transpose: has attributes ReverseAttrs but takes TransposeAttrs");
  check_invalid(corrupted([](GraphParts& p) {
                  p.nodes[3].attrs = TransposeAttrs{{0, 0}};
                }),
                "node %3: transpose: permutation [0,0] is not a permutation of 0..1");
  check_invalid(corrupted([](GraphParts& p) {
                  p.nodes[1].attrs = ParameterAttrs{2, Shape(kF32, {2, 3})};
                }),
                "graph 'main': parameter numbers must be 0..2 without gaps, but 1 is missing");
  check_invalid(corrupted([](GraphParts& p) {
                  p.nodes[1].attrs = ParameterAttrs{0, Shape(kF32, {2, 3})};
                }),
                "node %1: parameter number 0 is already used by node %0");
  check_invalid(corrupted([](GraphParts& p) {
                  p.nodes[1].attrs = ParameterAttrs{1, Shape(kF32, {2, 4})};
                }),
                "node %1: parameter: result 0 has shape f32[2,3] but inference gives f32[2,4]");
  check_invalid(corrupted([](GraphParts& p) {
                  p.outputs[1] = Value{9, 0, 0};
                }),
                "graph 'main': output 1 is %9, which is not a value of the graph");
  check_invalid(corrupted([](GraphParts& p) { p.nodes[5].bodies.clear(); }),
                "node %5: reduce: takes 1 body(ies), got 0");
  check_invalid(corrupted([](GraphParts& p) { p.nodes[2].results.push_back(Shape(kF32, {})); }),
                "node %2: add: has 2 result(s) but inference gives 1");
  check_invalid(corrupted([](GraphParts& p) { p.nodes[2].op = static_cast<OpCode>(200); }),
                "node %2: invalid opcode (enum value 200)");
  check_invalid(corrupted([](GraphParts& p) {
                  GraphParts body = p.nodes[5].bodies[0].to_parts();
                  body.nodes[2].op = OpCode::kAtan2;
                  body.nodes[1].attrs = ParameterAttrs{1, Shape(kS32, {})};
                  p.nodes[5].bodies[0] = Graph::from_parts(std::move(body));
                }),
                "graph 'main': node %5: reduce: body 0 'add_f32': node %1: parameter: result 0 has "
                "shape f32[] but inference gives s32[]");
  check_invalid(corrupted([](GraphParts& p) {
                  Literal column_major(Shape::make(kF32, std::vector<std::int64_t>{2, 2},
                                                   std::vector<std::int64_t>{1, 0})
                                           .value());
                  p.nodes[4].attrs = ConstantAttrs{std::make_shared<const Literal>(column_major)};
                }),
                "node %4: constant: value f32[2,2]{1,0} has a non-default layout");

  StatusOr<Graph> remade = make_verified_graph(g.to_parts());
  REQUIRE(remade.ok());
  CHECK(*remade == g);
  GraphParts bad = g.to_parts();
  bad.nodes[0].results[0] = Shape(kF64, {2, 3});
  check_invalid(make_verified_graph(std::move(bad)).status(), "node %0: parameter: result 0");
}

TEST_CASE("ir: printer output") {
  GraphBuilder b("example");
  Value x = b.parameter(Shape(kF32, {2, 3}));
  Value ones = b.broadcast_in_dim(b.constant(1.0f), {2, 3}, {});
  Value sum = b.add(x, ones);
  Value lt = b.compare(sum, x, ComparisonDirection::kLt);
  Value t = b.transpose(sum, {1, 0});
  Value r = b.reduce(t, b.constant(0.0f), OpCode::kAdd, {1});
  Value k = b.constant(Literal::vector<std::int32_t>({1, 2, 3}));
  Value c = b.convert(k, kF32);
  Graph g = build_ok(b, {r, lt, c});
  CHECK(to_string(g) ==
        "graph example {\n"
        "  %0 = parameter {number=0} : f32[2,3]\n"
        "  %1 = constant {value=1} : f32[]\n"
        "  %2 = broadcast_in_dim(%1) {broadcast_dimensions=[]} : f32[2,3]\n"
        "  %3 = add(%0, %2) : f32[2,3]\n"
        "  %4 = compare(%3, %0) {direction=LT, type=FLOAT} : pred[2,3]\n"
        "  %5 = transpose(%3) {permutation=[1,0]} : f32[3,2]\n"
        "  %6 = constant {value=0} : f32[]\n"
        "  %7 = reduce(%5, %6) {dimensions=[1]} : f32[3]\n"
        "    graph add_f32 {\n"
        "      %0 = parameter {number=0} : f32[]\n"
        "      %1 = parameter {number=1} : f32[]\n"
        "      %2 = add(%0, %1) : f32[]\n"
        "      return %2\n"
        "    }\n"
        "  %8 = constant {value={1, 2, 3}} : s32[3]\n"
        "  %9 = convert(%8) : f32[3]\n"
        "  return %7, %4, %9\n"
        "}\n");

  GraphBuilder mb("multi");
  Value y = mb.parameter(Shape(kS32, {4}));
  std::vector<Value> am = mb.argmax(y, 0);
  Value big = mb.iota(Shape(kF32, {17}), 0);
  Value sl = mb.slice(big, {1}, {9}, {2});
  Value pd = mb.pad(sl, mb.constant(0.0f), {1}, {-1}, {0});
  Graph mg = build_ok(mb, {am[1], am[0], pd, mb.constant(Literal(Shape(kF32, {17})))});
  const std::string text = to_string(mg);
  CHECK(text.find("  %4:2 = reduce(%0, %1, %2, %3) {dimensions=[0]} : s32[], s32[]\n") !=
        std::string::npos);
  CHECK(text.find("    graph argmax {\n") != std::string::npos);
  CHECK(text.find("  %1 = iota {iota_dimension=0} : s32[4]\n") != std::string::npos);
  CHECK(text.find("{start_indices=[1], limit_indices=[9], strides=[2]} : f32[4]") !=
        std::string::npos);
  CHECK(
      text.find("{edge_padding_low=[1], edge_padding_high=[-1], interior_padding=[0]} : f32[4]") !=
      std::string::npos);
  CHECK(text.find("constant {value=<f32[17]>} : f32[17]") != std::string::npos);
  CHECK(text.find("  return %4#1, %4#0, %8, %9\n}\n") != std::string::npos);
}

TEST_CASE("ir: fingerprints are stable and see every change of meaning") {
  struct Options {
    float constant = 1.0f;
    std::vector<std::int64_t> permutation = {1, 0};
    std::int64_t rows = 2;
    OpCode op = OpCode::kAdd;
    ComparisonDirection direction = ComparisonDirection::kLt;
    std::string name = "fp";
    bool swap_outputs = false;
  };
  auto make = [](const Options& o) {
    GraphBuilder b(o.name);
    Value x = b.parameter(Shape(kF32, {o.rows, 3}));
    Value k = b.broadcast_in_dim(b.constant(o.constant), {o.rows, 3}, {});
    Value y = b.binary(o.op, x, k);
    Value c = b.compare(y, x, o.direction);
    Value t = b.transpose(y, o.permutation);
    Value r = b.reduce(t, b.constant(0.0f), OpCode::kMaximum, {0});
    StatusOr<Graph> g = o.swap_outputs ? b.build({c, r}) : b.build({r, c});
    REQUIRE(g.ok());
    return *std::move(g);
  };
  const Graph base = make({});
  const std::uint64_t fp = fingerprint(base);
  CHECK(fingerprint(make({})) == fp);
  CHECK(fingerprint(Graph(base)) == fp);
  // Names do not change what a graph computes.
  CHECK(fingerprint(make({.name = "other"})) == fp);

  CHECK(fingerprint(make({.constant = 2.0f})) != fp);
  CHECK(fingerprint(make({.constant = -0.0f})) != fingerprint(make({.constant = 0.0f})));
  CHECK(fingerprint(make({.permutation = {0, 1}})) != fp);
  CHECK(fingerprint(make({.rows = 4})) != fp);
  CHECK(fingerprint(make({.op = OpCode::kMultiply})) != fp);
  CHECK(fingerprint(make({.direction = ComparisonDirection::kLe})) != fp);
  CHECK(fingerprint(make({.swap_outputs = true})) != fp);

  // The reduce body is covered too.
  GraphParts parts = base.to_parts();
  GraphParts body = parts.nodes[7].bodies[0].to_parts();
  body.nodes[2].op = OpCode::kMinimum;
  parts.nodes[7].bodies[0] = Graph::from_parts(std::move(body));
  CHECK(fingerprint(Graph::from_parts(std::move(parts))) != fp);

  // Lists are length-prefixed: slice [0,1]..[2,3] differs from [0]..[1] on another rank.
  GraphBuilder s1, s2;
  Value a1 = s1.parameter(Shape(kS32, {4, 4}));
  Value a2 = s2.parameter(Shape(kS32, {4, 4}));
  Graph g1 = build_ok(s1, {s1.slice(a1, {0, 1}, {2, 3})});
  Graph g2 = build_ok(s2, {s2.slice(a2, {0, 1}, {2, 3}, {1, 2})});
  CHECK(fingerprint(g1) != fingerprint(g2));

  const std::string hex = fingerprint_hex(base);
  CHECK(hex.size() == 16);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(fingerprint_to_hex(0x0123456789abcdefull) == "0123456789abcdef");
  // Pinned, so a change of encoding (which invalidates every persisted cache) is deliberate:
  // the value depends on nothing of the process or the platform.
  CHECK(hex == "6f349c60734b0cdc");
}

namespace {

/// Stands for a member of any type in an aggregate initializer. Declared only: it is used in
/// unevaluated requires-expressions.
struct AnyMember {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor)
};

/// The number of members of the aggregate A, none of which may be an aggregate itself (brace
/// elision would count its members too). An oracle for the field lists: it reads the struct,
/// not detail::attribute_fields.
template <class A, class... Members>
constexpr std::size_t member_count() {
  if constexpr (requires { A{Members{}..., AnyMember{}}; })
    return member_count<A, Members..., AnyMember>();
  else
    return sizeof...(Members);
}

struct ThreeMembers {
  std::int64_t a = 0;
  std::vector<std::int64_t> b;
  Shape c;
};
static_assert(member_count<ThreeMembers>() == 3);
static_assert(member_count<NoAttrs>() == 0);

/// Values an attribute field of type T takes in the test: the first is the base, and each
/// other one differs from it in one way a program can (value, length, dtype, layout, bits).
template <class T>
std::vector<T> field_values() {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    return {3, 4, -3};
  } else if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (std::is_enum_v<T>) {
    return {static_cast<T>(1), static_cast<T>(0), static_cast<T>(2)};
  } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
    return {{1, 2}, {1, 3}, {1, 2, 0}, {2}, {}};
  } else if constexpr (std::is_same_v<T, Shape>) {
    const std::vector<std::int64_t> dims = {2, 3};
    const std::vector<std::int64_t> column_major = {1, 0};
    return {Shape(kF32, {2, 3}), Shape(kF32, {2, 4}), Shape(kS32, {2, 3}), Shape(kF32, {6}),
            Shape::make(kF32, dims, column_major).value()};
  } else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
    return {{Shape(kF32, {2})}, {Shape(kF32, {3})}, {Shape(kF32, {2}), Shape(kS32, {})}, {}};
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {"a", "b", "ab", ""};
  } else if constexpr (std::is_same_v<T, std::shared_ptr<const Literal>>) {
    auto shared = [](Literal l) { return std::make_shared<const Literal>(std::move(l)); };
    return {shared(Literal::scalar(0.0f)), shared(Literal::scalar(-0.0f)),
            shared(Literal::scalar(1.0f)), shared(Literal::scalar(std::int32_t{0})),
            shared(Literal::vector({0.0f, 0.0f})), nullptr};
  } else {
    static_assert(sizeof(T) == 0, "give the test values of the new attribute field type");
  }
}

/// A one-node graph (unverified: only its fingerprint and bytes are wanted) whose node holds
/// alternative I of Attributes with the value `a`.
template <std::size_t I>
Graph graph_holding(const std::variant_alternative_t<I, Attributes>& a) {
  OpCode op = OpCode::kAdd;
  for (std::size_t k = 0; k < kOpCodeCount; ++k)
    if (attributes_index_for(static_cast<OpCode>(k)) == I) {
      op = static_cast<OpCode>(k);
      break;
    }
  GraphParts parts;
  parts.name = "attrs";
  parts.nodes.push_back(Node{op, {}, Attributes(std::in_place_index<I>, a), {Shape(kF32, {})}, {}});
  parts.outputs.push_back(Value{0, 0, 0});
  return Graph::from_parts(std::move(parts));
}

/// Changes each field of alternative I in every way field_values gives, one at a time, and
/// checks that the fingerprint and the serialized bytes both change. Returns the number of
/// fields checked.
template <std::size_t I>
std::size_t check_every_field_is_seen() {
  using A = std::variant_alternative_t<I, Attributes>;
  const std::string_view name = attributes_name(I);
  A base{};
  std::size_t fields = 0;
  detail::attribute_fields(base, [&](auto& field) {
    field = field_values<std::decay_t<decltype(field)>>().front();
    ++fields;
  });
  // A member missing from detail::attribute_fields would be neither saved nor hashed.
  CHECK_MESSAGE(fields == member_count<A>(), name, " has ", member_count<A>(),
                " members but detail::attribute_fields lists ", fields);
  const Graph g = graph_holding<I>(base);
  const std::uint64_t fp = fingerprint(g);
  const std::vector<std::byte> bytes = serialize(g);
  CHECK(fingerprint(graph_holding<I>(base)) == fp);
  for (std::size_t k = 0; k < fields; ++k) {
    std::size_t values = 0;
    std::size_t at = 0;
    detail::attribute_fields(base, [&](const auto& field) {
      if (at++ == k) values = field_values<std::decay_t<decltype(field)>>().size();
    });
    for (std::size_t j = 1; j < values; ++j) {
      A changed = base;
      at = 0;
      detail::attribute_fields(changed, [&](auto& field) {
        if (at++ == k) field = field_values<std::decay_t<decltype(field)>>()[j];
      });
      const Graph h = graph_holding<I>(changed);
      CHECK_MESSAGE(fingerprint(h) != fp, name, ": field ", k, " set to value ", j,
                    " leaves the fingerprint as it was");
      CHECK_MESSAGE(serialize(h) != bytes, name, ": field ", k, " set to value ", j,
                    " leaves the serialized bytes as they were");
    }
  }
  return fields;
}

}  // namespace

TEST_CASE("ir: every field of every attribute alternative changes the fingerprint") {
  std::size_t fields = 0;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((fields += check_every_field_is_seen<I>()), ...);
  }(std::make_index_sequence<std::variant_size_v<Attributes>>());
  // The fields attributes.hpp had when this test was written, counted by hand: the walk above
  // cannot pass by visiting nothing.
  CHECK(fields >= 78);
}

TEST_CASE("ir: scatter's shape rules (spec constraints) and their errors") {
  const ScatterAttrs rows{{1}, {0, 2}, {}, {}, {0, 2}, 1, false, false};
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {3, 4, 5}));
  Value idx = b.parameter(Shape(kS32, {6, 2}));
  Value upd = b.parameter(Shape(kF32, {6, 3}));
  CHECK(shape_of(b, b.scatter(x, idx, upd, OpCode::kAdd, rows)) == Shape(kF32, {3, 4, 5}));
  // A body in a wider type gives results of that type.
  Value wide = b.scatter(x, idx, upd, make_binary_body(OpCode::kAdd, kF64).value(), rows);
  CHECK(shape_of(b, wide) == Shape(kF64, {3, 4, 5}));
  CHECK(b.ok());

  auto scatter_error = [&](Shape input, Shape indices, Shape updates, ScatterAttrs dn,
                           OpCode body = OpCode::kAdd) {
    return error_of([&](GraphBuilder& g) {
      g.scatter(g.parameter(input), g.parameter(indices), g.parameter(updates), body, dn);
    });
  };
  const Shape in(kF32, {3, 4, 5}), ix(kS32, {6, 2}), up(kF32, {6, 3});
  check_invalid(
      scatter_error(in, Shape(kF32, {6, 2}), up, rows),
      "scatter: operand 1 (scatter_indices) has element type f32 but must be an integer type");
  check_invalid(scatter_error(in, ix, Shape(kF64, {6, 3}), rows),
                "scatter: operand 2 (updates) has element type f64 but the input has f32");
  check_invalid(scatter_error(in, ix, up, ScatterAttrs{{1}, {0}, {}, {}, {0, 2}, 1}),
                "must together have as many entries as the input's rank, 3");
  check_invalid(
      scatter_error(in, ix, Shape(kF32, {3, 6}), ScatterAttrs{{1, 0}, {2}, {}, {}, {0, 2}, 1}),
      "scatter: update_window_dims [1,0] is not sorted");
  check_invalid(scatter_error(in, ix, up, ScatterAttrs{{1}, {0, 2}, {}, {}, {0}, 1}),
                "scatter_dims_to_operand_dims [0] has 1 entries but the index vector has 2");
  check_invalid(scatter_error(in, ix, up, ScatterAttrs{{1}, {0, 2}, {}, {}, {0, 2}, 3}),
                "index_vector_dim = 3 is out of range [0, 2]");
  check_invalid(
      scatter_error(in, ix, Shape(kF32, {5, 3}), rows),
      "scatter: operand 2 (updates) f32[5,3] has size 5 in dimension 0 but scatter_indices");
  check_invalid(scatter_error(in, ix, Shape(kF32, {6, 7}), rows),
                "has window size 7 in dimension 1, larger than the input's 4");
  check_invalid(scatter_error(in, ix, up, ScatterAttrs{{1}, {0, 0}, {}, {}, {0, 2}, 1}),
                "is not sorted");
  check_invalid(scatter_error(in, ix, up, ScatterAttrs{{1}, {0, 2}, {}, {}, {0, 0}, 1}),
                "repeats dimension 0");
  check_invalid(scatter_error(in, Shape(kS32, {6, 1}), Shape(kF32, {6, 4, 5}),
                              ScatterAttrs{{1, 2}, {}, {0}, {1}, {0}, 1}),
                "index_vector_dim 1 is one of scatter_indices_batching_dims");
  check_invalid(scatter_error(in, ix, up, rows, OpCode::kCompare),
                "scatter: make_binary_body: compare is not a binary op");
  // The body must be (E, E) -> E.
  check_invalid(error_of([&](GraphBuilder& g) {
                  g.scatter(g.parameter(in), g.parameter(ix), g.parameter(up),
                            make_arg_reduce_body(ComparisonDirection::kGt, kF32, kS32).value(),
                            rows);
                }),
                "scatter: body must take 2 parameters and return 1 value");
}

TEST_CASE("ir: gather's shape rules (spec constraints) and their errors") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {3, 4, 5}));
  Value idx = b.parameter(Shape(kS32, {6, 2}));
  // Index vectors pick (dim 0, dim 2) starts; 2x3 windows over dims 1 and 2, dim 0 collapsed.
  const GatherAttrs rows{{1, 2}, {0}, {}, {}, {0, 2}, 1, {1, 2, 3}, false};
  CHECK(shape_of(b, b.gather(x, idx, rows)) == Shape(kF32, {6, 2, 3}));
  // Offset dims first, batch last.
  CHECK(shape_of(b,
                 b.gather(x, idx, GatherAttrs{{0, 1}, {0}, {}, {}, {0, 2}, 1, {1, 2, 3}, false})) ==
        Shape(kF32, {2, 3, 6}));
  CHECK(b.ok());
  auto gather_error = [&](Shape operand, Shape indices, GatherAttrs dn) {
    return error_of(
        [&](GraphBuilder& g) { g.gather(g.parameter(operand), g.parameter(indices), dn); });
  };
  const Shape in(kF32, {3, 4, 5}), ix(kS32, {6, 2});
  check_invalid(
      gather_error(in, Shape(kF32, {6, 2}), rows),
      "gather: operand 1 (start_indices) has element type f32 but must be an integer type");
  check_invalid(gather_error(in, ix, GatherAttrs{{1}, {0}, {}, {}, {0, 2}, 1, {1, 2, 3}, false}),
                "must together have as many entries as the operand's rank, 3");
  check_invalid(gather_error(in, ix, GatherAttrs{{1, 2}, {0}, {}, {}, {0, 2}, 1, {1, 2}, false}),
                "slice_sizes [1,2] has 2 entries");
  check_invalid(gather_error(in, ix, GatherAttrs{{1, 2}, {0}, {}, {}, {0, 2}, 1, {1, 5, 3}, false}),
                "slice_sizes[1] = 5 is out of bounds for size 4");
  check_invalid(gather_error(in, ix, GatherAttrs{{1, 2}, {0}, {}, {}, {0, 2}, 1, {2, 2, 3}, false}),
                "slice_sizes[0] = 2 but dimension 0 is collapsed or batching");
  check_invalid(gather_error(in, ix, GatherAttrs{{1, 2}, {0}, {}, {}, {0}, 1, {1, 2, 3}, false}),
                "start_index_map [0] has 1 entries but the index vector has 2");
  check_invalid(gather_error(in, ix, GatherAttrs{{2, 1}, {0}, {}, {}, {0, 2}, 1, {1, 2, 3}, false}),
                "offset_dims [2,1] is not sorted");
  check_invalid(gather_error(in, ix, GatherAttrs{{1, 3}, {0}, {}, {}, {0, 2}, 1, {1, 2, 3}, false}),
                "offset_dims[1] = 3 is out of range for the result of rank 3");
  check_invalid(gather_error(in, ix, GatherAttrs{{1, 2}, {0}, {}, {}, {0, 2}, 3, {1, 2, 3}, false}),
                "index_vector_dim = 3 is out of range [0, 2]");
  check_invalid(gather_error(in, Shape(kS32, {4, 1}),
                             GatherAttrs{{1, 2}, {}, {0}, {0}, {2}, 1, {1, 2, 3}, false}),
                "batching dimension pair 0: operand dimension 0 has size 3 but start_indices "
                "dimension 0 has size 4");
}

TEST_CASE("ir: reduce_window's and select_and_scatter's shape rules and their errors") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {4, 6}));
  Value zero = b.constant(0.0f);
  // A 2x3 window with strides 2x1 over 4x6 padded by one column each side: 2 x 6 windows.
  const WindowAttrs w{{2, 3}, {2, 1}, {}, {}, {0, 1}, {0, 1}};
  CHECK(shape_of(b, b.reduce_window(x, zero, OpCode::kAdd, w)) == Shape(kF32, {2, 6}));
  // Base dilation 2 makes 7 rows; window dilation 3 spans 4 columns: 6 x 3 windows.
  CHECK(shape_of(b, b.reduce_window(x, zero, OpCode::kMaximum, {{2, 2}, {}, {2, 1}, {1, 3}})) ==
        Shape(kF32, {6, 3}));
  // A window larger than the padded input: no windows.
  CHECK(shape_of(b, b.reduce_window(x, zero, OpCode::kAdd, {{5, 1}})) == Shape(kF32, {0, 6}));
  Value src = b.parameter(Shape(kF32, {2, 6}));
  CHECK(shape_of(b, b.select_and_scatter(x, src, zero, ComparisonDirection::kGe, OpCode::kAdd,
                                         w)) == Shape(kF32, {4, 6}));
  CHECK(b.ok());

  auto window_error = [](WindowAttrs window, OpCode body = OpCode::kAdd) {
    return error_of([&](GraphBuilder& g) {
      g.reduce_window(g.parameter(Shape(kF32, {4, 6})), g.constant(0.0f), body, window);
    });
  };
  check_invalid(window_error({{2}}),
                "reduce_window: window_dimensions [2] has 1 entries but the input has rank 2");
  check_invalid(window_error({{2, 2}, {1}}),
                "reduce_window: window_strides [1] has 1 entries but the input has rank 2");
  check_invalid(window_error({{2, 0}}),
                "reduce_window: window_dimensions[1] = 0 but must be positive");
  check_invalid(window_error({{2, 2}, {1, 0}}),
                "reduce_window: window_strides[1] = 0 but must be positive");
  check_invalid(window_error({{2, 2}, {-1, 1}}),
                "reduce_window: window_strides[0] = -1 but must be positive");
  check_invalid(window_error({{2, 2}, {}, {0, 1}}),
                "reduce_window: base_dilations[0] = 0 but must be positive");
  check_invalid(window_error({{2, 2}, {}, {}, {1, -2}}),
                "reduce_window: window_dilations[1] = -2 but must be positive");
  check_invalid(window_error({{2, 2}, {}, {}, {}, {1}, {1, 1}}),
                "reduce_window: padding_low [1] has 1 entries but the input has rank 2");
  check_invalid(
      window_error({{2, 2}, {}, {}, {}, {std::int64_t{1} << 62, 0}, {std::int64_t{1} << 62, 0}}),
      "reduce_window: the padded input or dilated window overflows in dimension 0");
  // Bodies of the wrong arity or types.
  GraphBuilder c;
  Value y = c.parameter(Shape(kF32, {4, 6}));
  c.reduce_window({y}, {c.constant(0.0f)},
                  make_compare_body(ComparisonDirection::kGe, kF32).value(), WindowAttrs{{2, 2}});
  check_invalid(c.status(),
                "reduce_window: body result 0 has type pred[] but body parameter 0 has f32[]");
  GraphBuilder d;
  Value z = d.parameter(Shape(kF32, {4, 6}));
  d.reduce_window({z, z}, {d.constant(0.0f), d.constant(0.0f)},
                  make_binary_body(OpCode::kAdd, kF32).value(), WindowAttrs{{2, 2}});
  check_invalid(d.status(),
                "reduce_window: body takes 2 parameters, but 2 input(s) need 4 (accumulators then "
                "elements)");
  check_invalid(
      error_of([](GraphBuilder& g) {
        g.reduce_window(g.parameter(Shape(kF32, {4, 6})), g.constant(0), OpCode::kAdd, {{2, 2}});
      }),
      "reduce_window: operand 1 (init value 0) has shape s32[] but must be a rank-0 f32");

  auto sas_error = [](Shape source, WindowAttrs window,
                      ComparisonDirection select = ComparisonDirection::kGe) {
    return error_of([&](GraphBuilder& g) {
      g.select_and_scatter(g.parameter(Shape(kF32, {4, 6})), g.parameter(source), g.constant(0.0f),
                           select, OpCode::kAdd, window);
    });
  };
  check_invalid(
      sas_error(Shape(kF32, {2, 3}), {{2, 2}, {2, 2}, {2, 1}}),
      "select_and_scatter: base_dilations[0] = 2 but select_and_scatter takes no dilations");
  check_invalid(sas_error(Shape(kF32, {2, 2}), {{2, 2}, {2, 2}}),
                "select_and_scatter: operand 1 (source) has shape f32[2,2] but the windows number "
                "[2,3]");
  check_invalid(sas_error(Shape(kF32, {2, 3}), {{2, 2}, {0, 2}}),
                "select_and_scatter: window_strides[0] = 0 but must be positive");
  GraphBuilder e;
  Value o = e.parameter(Shape(kF32, {4, 6}));
  e.select_and_scatter(o, e.parameter(Shape(kF32, {2, 3})), e.constant(0.0f),
                       make_binary_body(OpCode::kMaximum, kF32).value(),
                       make_binary_body(OpCode::kAdd, kF32).value(), WindowAttrs{{2, 2}, {2, 2}});
  check_invalid(e.status(),
                "select_and_scatter: select body must have type (tensor<f32>, "
                "tensor<f32>) -> tensor<i1>");
}

TEST_CASE("ir: while, case and if: region signatures, selectors and their errors") {
  // The well-formed graphs of the shared tests build and verify.
  for (const Graph& g : {testing::sum_to_n(), testing::sum_of_sums(), testing::case_graph(3),
                         testing::if_graph()})
    CHECK(verify(g).ok());
  const Graph g = testing::case_graph(2);
  const Node& c = g.node(g.outputs()[0]);
  CHECK(c.op == OpCode::kCase);
  CHECK(c.results == std::vector<Shape>{Shape(kF32, {3}), Shape(kS32, {})});
  CHECK(c.bodies.size() == 2);

  auto region = [](std::vector<Shape> params, auto make) {
    GraphBuilder b("r");
    std::vector<Value> p;
    for (const Shape& s : params) p.push_back(b.parameter(s));
    return b.build(make(b, p)).value();
  };
  const Shape s32(kS32, {}), f32(kF32, {}), v3(kF32, {3});
  auto is_less = [](GraphBuilder& b, std::vector<Value> p) {
    return std::vector<Value>{b.compare(p[0], p[0], ComparisonDirection::kLt)};
  };
  auto same = [](GraphBuilder&, std::vector<Value> p) { return p; };
  // while: regions take the operands' types; cond returns one pred[]; body returns the types.
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.while_loop({b.constant(1.0f)}, region({s32}, is_less), region({s32}, same));
                }),
                "while: cond takes (s32[]) but the operands are (f32[])");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.while_loop({b.constant(1)}, region({s32}, same), region({s32}, same));
                }),
                "while: cond must return one pred[] (tensor<i1>), but returns (s32[])");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.while_loop({b.constant(1)}, region({s32}, is_less),
                               region({s32}, [](GraphBuilder& r, std::vector<Value> p) {
                                 return std::vector<Value>{r.convert(p[0], kF32)};
                               }));
                }),
                "while: body returns (f32[]) but must return the operands' types (s32[])");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.while_loop({b.constant(1)}, region({s32, s32}, is_less), region({s32}, same));
                }),
                "while: cond takes (s32[], s32[]) but the operands are (s32[])");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.op(OpCode::kWhile, {b.constant(1)}, NoAttrs{}, {region({s32}, is_less)});
                }),
                "while: takes 2 body(ies), got 1");
  // A loop with no carried values is well formed (it can only stop at once or never).
  {
    GraphBuilder b("empty");
    GraphBuilder cb("cond");
    Graph cond = cb.build({cb.constant(false)}).value();
    GraphBuilder bb("body");
    Graph body = bb.build(std::vector<Value>{}).value();
    CHECK(b.while_loop({}, cond, body).empty());
    CHECK(b.ok());
  }
  // case: an s32[] index, branches taking the other operands and agreeing on their results.
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.case_op(b.constant(1.0f), {}, {region({}, [](GraphBuilder& r, auto) {
                              return std::vector<Value>{r.constant(1)};
                            })});
                }),
                "case: operand 0 (the index) has shape f32[] but must be a rank-0 s32");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.case_op(b.constant(Literal::vector<std::int32_t>({0, 1})), {},
                            {region({}, [](GraphBuilder& r, auto) {
                              return std::vector<Value>{r.constant(1)};
                            })});
                }),
                "case: operand 0 (the index) has shape s32[2] but must be a rank-0 s32");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.case_op(b.constant(std::int64_t{0}), {}, {region({}, [](GraphBuilder& r, auto) {
                              return std::vector<Value>{r.constant(1)};
                            })});
                }),
                "case: operand 0 (the index) has shape s64[] but must be a rank-0 s32");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.case_op(b.constant(0), {b.constant(1.0f)},
                            {region({f32}, same), region({f32}, [](GraphBuilder& r, auto p) {
                               return std::vector<Value>{r.convert(p[0], kS32)};
                             })});
                }),
                "case: branch 1 returns (s32[]) but branch 0 returns (f32[])");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.case_op(b.constant(0), {b.constant(1.0f)}, {region({v3}, same)});
                }),
                "case: branch 0 takes (f32[3]) but operands 1.. are (f32[])");
  check_invalid(error_of([&](GraphBuilder& b) { b.case_op(b.constant(0), {}, {}); }),
                "case: takes at least 1 body(ies), got 0");
  // if: a pred[] predicate and two branches.
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.if_op(b.constant(1), {b.constant(1.0f)}, region({f32}, same),
                          region({f32}, same));
                }),
                "if: operand 0 (the predicate) has shape s32[] but must be a rank-0 pred");
  check_invalid(error_of([&](GraphBuilder& b) {
                  b.op(OpCode::kIf, {b.constant(true)}, NoAttrs{},
                       {region({}, [](GraphBuilder& r, auto) {
                         return std::vector<Value>{r.constant(1)};
                       })});
                }),
                "if: takes 2 body(ies), got 1");
  check_invalid(error_of([&](GraphBuilder& b) { b.op(OpCode::kIf, {}, NoAttrs{}, {g, g}); }),
                "if: needs operand 0 (the predicate)");
  // The verifier checks region signatures too: a while whose body lost a result.
  GraphParts parts = testing::sum_to_n().to_parts();
  for (Node& n : parts.nodes)
    if (n.op == OpCode::kWhile) {
      GraphParts body = n.bodies[1].to_parts();
      body.outputs.pop_back();
      n.bodies[1] = Graph::from_parts(std::move(body));
    }
  check_invalid(verify(Graph::from_parts(std::move(parts))), "while: body returns (s32[], s32[])");
  // Branch order is part of the meaning.
  GraphParts swapped = testing::case_graph(2).to_parts();
  for (Node& n : swapped.nodes)
    if (n.op == OpCode::kCase) std::swap(n.bodies[0], n.bodies[1]);
  CHECK(fingerprint(Graph::from_parts(std::move(swapped))) != fingerprint(testing::case_graph(2)));
}

TEST_CASE("ir: reduce_precision keeps the shape of a float operand and checks its widths") {
  GraphBuilder b;
  Value h = b.parameter(Shape(kF16, {2, 3}));
  Value d = b.parameter(Shape(kF64, {}));
  CHECK(shape_of(b, b.reduce_precision(h, 5, 10)) == Shape(kF16, {2, 3}));
  CHECK(shape_of(b, b.reduce_precision(d, 1, 0)) == Shape(kF64, {}));
  // Widths beyond the element type's own are allowed (they change nothing).
  CHECK(shape_of(b, b.reduce_precision(h, 11, 52)) == Shape(kF16, {2, 3}));
  CHECK(b.ok());
  CHECK(is_elementwise(OpCode::kReducePrecision));
  CHECK(op_name(OpCode::kReducePrecision) == "reduce_precision");

  auto error = [](DType t, std::int64_t e, std::int64_t m) {
    return error_of([&](GraphBuilder& g) { g.reduce_precision(g.parameter(Shape(t, {2})), e, m); });
  };
  check_invalid(error(kS32, 5, 10), "reduce_precision: operand 0 has element type s32");
  check_invalid(error(kC64, 5, 10), "reduce_precision: operand 0 has element type c64");
  check_invalid(error(kF32, 0, 10),
                "reduce_precision: exponent_bits = 0 must be at least 1 (and fit in si32)");
  check_invalid(error(kF32, 5, -1),
                "reduce_precision: mantissa_bits = -1 must be at least 0 (and fit in si32)");
  check_invalid(error(kF32, std::int64_t{1} << 31, 2), "exponent_bits = 2147483648 must be");
  check_invalid(error(kF32, 2, std::int64_t{1} << 40), "mantissa_bits = 1099511627776 must be");
  // The wrong attribute kind is refused by name.
  check_invalid(error_of([](GraphBuilder& g) {
                  g.op1(OpCode::kReducePrecision, {g.parameter(Shape(kF32, {2}))});
                }),
                "reduce_precision: has attributes NoAttrs but takes ReducePrecisionAttrs");

  // The printer names both widths; the fingerprint sees each.
  GraphBuilder p("rp");
  Value x = p.parameter(Shape(kF32, {2}));
  const Graph g = build_ok(p, {p.reduce_precision(x, 5, 10)});
  CHECK(to_string(g).find("reduce_precision(%0) {exponent_bits=5, mantissa_bits=10}") !=
        std::string::npos);
  auto fingerprint_of = [](std::int64_t e, std::int64_t m) {
    GraphBuilder q("rp");
    Value y = q.parameter(Shape(kF32, {2}));
    return fingerprint(build_ok(q, {q.reduce_precision(y, e, m)}));
  };
  CHECK(fingerprint_of(5, 10) == fingerprint(g));
  CHECK(fingerprint_of(5, 9) != fingerprint(g));
  CHECK(fingerprint_of(4, 10) != fingerprint(g));
}

TEST_CASE("ir: sort's shape rules (spec constraints) and their errors") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF32, {3, 4}));
  Value i = b.parameter(Shape(kS32, {3, 4}));
  Graph by_x = make_sort_comparator(ComparisonDirection::kLt, kF32, {kS32}).value();
  std::vector<Value> sorted = b.sort({x, i}, by_x, -1, true);
  REQUIRE(sorted.size() == 2);
  CHECK(shape_of(b, sorted[0]) == Shape(kF32, {3, 4}));
  CHECK(shape_of(b, sorted[1]) == Shape(kS32, {3, 4}));
  CHECK(shape_of(b, b.sort(x, 0, ComparisonDirection::kGt)) == Shape(kF32, {3, 4}));
  CHECK(b.ok());
  CHECK(body_count(OpCode::kSort) == 1);
  CHECK(result_count(OpCode::kSort, 3) == 3);

  auto sort_error = [](std::vector<Shape> inputs, Graph comparator, std::int64_t dimension) {
    return error_of([&](GraphBuilder& g) {
      std::vector<Value> operands;
      for (const Shape& s : inputs) operands.push_back(g.parameter(s));
      g.sort(operands, std::move(comparator), dimension);
    });
  };
  const Graph f32_only = make_sort_comparator(ComparisonDirection::kLt, kF32).value();
  check_invalid(sort_error({}, f32_only, 0), "sort: needs at least one input");
  check_invalid(sort_error({Shape(kF32, {3, 4}), Shape(kS32, {4, 3})}, by_x, 0),
                "sort: operand 1 has shape s32[4,3] but operand 0 has f32[3,4]; inputs must have "
                "one dims");
  check_invalid(sort_error({Shape(kF32, {3, 4})}, f32_only, 2),
                "sort: dimension = 2 is out of range for rank 2 (allowed: -2 .. 1)");
  check_invalid(sort_error({Shape(kF32, {3, 4})}, f32_only, -3), "dimension = -3 is out of range");
  check_invalid(sort_error({Shape(kF32, {3})}, by_x, 0),
                "sort: comparator takes 4 parameters, but 1 input(s) need 2 (two rank-0 values "
                "per input)");
  check_invalid(sort_error({Shape(kF32, {3}), Shape(kF32, {3})}, by_x, 0),
                "sort: comparator parameter 2 has type s32[] but input 1 needs f32[]");
  check_invalid(sort_error({Shape(kS32, {3})}, f32_only, 0),
                "sort: comparator parameter 0 has type f32[] but input 0 needs s32[]");
  check_invalid(sort_error({Shape(kF32, {3})}, make_binary_body(OpCode::kAdd, kF32).value(), 0),
                "sort: comparator must return one pred[] (tensor<i1>), returns 1 value(s), the "
                "first of type f32[]");
  check_invalid(error_of([](GraphBuilder& g) {
                  g.op(OpCode::kSort, {g.parameter(Shape(kF32, {2}))}, SortAttrs{0, false});
                }),
                "sort: takes 1 body(ies), got 0");
  check_invalid(make_sort_comparator(ComparisonDirection::kLt, kC64).status(),
                "make_sort_comparator: values of type c64 have no order");
}

TEST_CASE("ir: top_k's shape rules and their errors") {
  GraphBuilder b;
  Value x = b.parameter(Shape(kF16, {2, 5}));
  std::vector<Value> top = b.top_k(x, 3);
  REQUIRE(top.size() == 2);
  CHECK(shape_of(b, top[0]) == Shape(kF16, {2, 3}));
  CHECK(shape_of(b, top[1]) == Shape(kS32, {2, 3}));
  CHECK(shape_of(b, b.top_k(b.parameter(Shape(kPred, {4})), 0)[1]) == Shape(kS32, {0}));
  CHECK(b.ok());
  CHECK(is_chlo(OpCode::kTopK));
  CHECK(!is_elementwise(OpCode::kTopK));
  CHECK(op_dialect(OpCode::kTopK) == "chlo");
  CHECK(*op_from_name("chlo.top_k") == OpCode::kTopK);

  auto error = [](Shape s, std::int64_t k) {
    return error_of([&](GraphBuilder& g) { g.top_k(g.parameter(s), k); });
  };
  check_invalid(error(Shape(kF32, {2, 5}), 6),
                "top_k: k = 6 must be in [0, 5], the last dimension of operand 0 f32[2,5]");
  check_invalid(error(Shape(kF32, {5}), -1), "top_k: k = -1 must be in [0, 5]");
  check_invalid(error(Shape(kF32, {}), 0), "top_k: operand 0 has shape f32[] but must have rank 1");
  check_invalid(error(Shape(kC64, {3}), 1), "top_k: operand 0 has element type c64");

  GraphBuilder p("tk");
  Value y = p.parameter(Shape(kF32, {4}));
  std::vector<Value> outs = p.top_k(y, 2);
  outs.push_back(p.sort(y, 0, ComparisonDirection::kLt, true));
  const Graph g = build_ok(p, outs);
  const std::string text = to_string(g);
  CHECK(text.find("top_k(%0) {k=2} : f32[2], s32[2]") != std::string::npos);
  CHECK(text.find("sort(%0) {dimension=0, is_stable=true}") != std::string::npos);
}

}  // namespace ir_test
