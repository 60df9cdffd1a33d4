// Tests the fp16/bf16 <-> float conversions of kernels/dtype.h against slow references written here
// from the formats' definitions in double arithmetic: every 16-bit pattern widened and narrowed
// back, and narrowing at every tie, next to every tie, at overflow, in the subnormal range and for
// NaN.
#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace normd {
namespace {

// The value of a 16-bit pattern with `mantissa_bits` fraction bits and exponent bias `bias`.
double DecodeSlow(uint16_t bits, int mantissa_bits, int bias) {
  const int exponent_field = (bits & 0x7FFF) >> mantissa_bits;
  const int mantissa = bits & ((1 << mantissa_bits) - 1);
  const int max_exponent_field = 0x7FFF >> mantissa_bits;
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent_field == max_exponent_field) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent_field == 0) return sign * std::ldexp(mantissa, 1 - bias - mantissa_bits);
  return sign * std::ldexp(mantissa + (1 << mantissa_bits), exponent_field - bias - mantissa_bits);
}

// Rounds v to the nearest value with `mantissa_bits` fraction bits and exponent bias `bias`, ties
// to even, by scaling to the format's step at v and rounding the integer count (exact in double).
// Returns +-Inf past the largest finite value; the sign of zero is kept.
double RoundSlow(double v, int mantissa_bits, int bias, double max_finite) {
  if (std::isnan(v) || v == 0.0) return v;
  const int min_exponent = 1 - bias;
  const int exponent = std::max(std::ilogb(v), min_exponent);
  const double step = std::ldexp(1.0, exponent - mantissa_bits);
  const double rounded = std::nearbyint(v / step) * step;  // default mode: ties to even
  if (std::fabs(rounded) > max_finite) return std::copysign(INFINITY, v);
  return rounded == 0.0 ? std::copysign(0.0, v) : rounded;
}

double RoundFp16Slow(float f) { return RoundSlow(f, 10, 15, 65504.0); }
// bf16's largest finite value is (2 - 2^-7) * 2^127 = 255 * 2^120.
double RoundBf16Slow(float f) { return RoundSlow(f, 7, 127, std::ldexp(255.0, 120)); }

// Exact equality that also tells -0 from +0 and accepts NaN for NaN.
bool SameValue(double want, double got) {
  if (std::isnan(want)) return std::isnan(got);
  return want == got && std::signbit(want) == std::signbit(got);
}

TEST(DType, Fp16WidensExactlyAndRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const float f = Float16ToFloat(b);
    ASSERT_TRUE(SameValue(DecodeSlow(b, 10, 15), f)) << std::hex << bits;
    // NaN comes back quiet (bit 9 set) with its payload and sign; everything else bit for bit.
    const bool nan = (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0;
    ASSERT_EQ(FloatToFloat16(f), nan ? (b | 0x0200) : b) << std::hex << bits;
  }
}

TEST(DType, Bf16WidensExactlyAndRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const float f = BFloat16ToFloat(b);
    ASSERT_TRUE(SameValue(DecodeSlow(b, 7, 127), f)) << std::hex << bits;
    const bool nan = (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0;
    ASSERT_EQ(FloatToBFloat16(f), nan ? (b | 0x0040) : b) << std::hex << bits;
  }
}

// Narrowing every float near each 16-bit value and each midpoint: the midpoint itself (a tie), one
// float step either side, and a few further out. `low_bits` is how many float mantissa bits the
// format drops at normal magnitudes (13 for fp16, 16 for bf16).
template <class Narrow, class Widen>
void CheckNarrowing(Narrow narrow, Widen widen, double (*slow)(float), uint32_t first_float_bits,
                    uint32_t last_float_bits, int low_bits) {
  const uint32_t half = 1u << (low_bits - 1);
  for (uint32_t base = first_float_bits; base <= last_float_bits; base += 1u << low_bits) {
    for (uint32_t offset :
         {0u, 1u, 2u, half - 2, half - 1, half, half + 1, half + 2, (1u << low_bits) - 1}) {
      for (uint32_t sign : {0u, 0x80000000u}) {
        const float f = BitsToFloat(sign | (base + offset));
        ASSERT_TRUE(SameValue(slow(f), widen(narrow(f))))
            << "float bits " << std::hex << (sign | (base + offset)) << " = " << f;
      }
    }
  }
}

TEST(DType, Fp16NarrowsToNearestEven) {
  // Normal fp16 range and past it to overflow: floats from 2^-14 to the largest finite float.
  CheckNarrowing(FloatToFloat16, Float16ToFloat, RoundFp16Slow, 0x38800000u, 0x7F7FE000u, 13);
  // fp16 subnormals: the step is 2^-24 whatever the float's exponent, so sweep densely.
  for (uint32_t bits = 0; bits < 0x38800000u; bits += 0x101) {
    const float f = BitsToFloat(bits);
    ASSERT_TRUE(SameValue(RoundFp16Slow(f), Float16ToFloat(FloatToFloat16(f)))) << std::hex << bits;
    ASSERT_TRUE(SameValue(RoundFp16Slow(-f), Float16ToFloat(FloatToFloat16(-f))))
        << std::hex << bits;
  }
}

TEST(DType, Fp16SpecialCases) {
  EXPECT_EQ(FloatToFloat16(65504.0f), 0x7BFF);   // largest finite
  EXPECT_EQ(FloatToFloat16(65519.99f), 0x7BFF);  // below the tie with 65536
  EXPECT_EQ(FloatToFloat16(65520.0f), 0x7C00);   // the tie rounds to even: Inf
  EXPECT_EQ(FloatToFloat16(-1e10f), 0xFC00);
  EXPECT_EQ(FloatToFloat16(INFINITY), 0x7C00);
  EXPECT_EQ(FloatToFloat16(0x1p-24f), 0x0001);      // smallest subnormal
  EXPECT_EQ(FloatToFloat16(0x1p-25f), 0x0000);      // tie with zero: to even
  EXPECT_EQ(FloatToFloat16(0x1.8p-24f), 0x0002);    // tie between 1 and 2 steps: to even
  EXPECT_EQ(FloatToFloat16(0x1.ffcp-15f), 0x0400);  // rounds up out of the subnormals
  EXPECT_EQ(FloatToFloat16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToFloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToFloat16(std::numeric_limits<float>::quiet_NaN()) & 0x7E00, 0x7E00);
  EXPECT_EQ(FloatToFloat16(-std::numeric_limits<float>::signaling_NaN()) & 0xFE00, 0xFE00);
  // A NaN whose payload sits only in the bits fp16 drops must still be NaN, not Inf.
  EXPECT_EQ(FloatToFloat16(BitsToFloat(0x7F800001u)), 0x7E00);
}

TEST(DType, Bf16NarrowsToNearestEven) {
  // Every float binade, subnormals included (bf16 keeps fp32's exponent), up to Inf.
  CheckNarrowing(FloatToBFloat16, BFloat16ToFloat, RoundBf16Slow, 0x00000000u, 0x7F7F0000u, 16);
}

TEST(DType, Bf16SpecialCases) {
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);  // ties up to Inf
  EXPECT_EQ(FloatToBFloat16(BitsToFloat(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(FloatToBFloat16(-INFINITY), 0xFF80);
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f), 0x3F80);            // tie: to even (down)
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x3p-8f), 0x3F82);            // tie: to even (up)
  EXPECT_EQ(FloatToBFloat16(BitsToFloat(0x7F800001u)), 0x7FC0);  // NaN stays NaN
  EXPECT_EQ(FloatToBFloat16(BitsToFloat(0xFFFFFFFFu)), 0xFFFF);
}

}  // namespace
}  // namespace normd
