// libFuzzer target: the client library's dtype conversions (client/tensor.h FloatsToBits /
// BitsToFloats, which EncodeTensor uses) on arbitrary float and 16-bit patterns, against properties
// that define correct IEEE round-to-nearest-even conversion:
//  - widening is exact: fp16/bf16 -> float -> fp16/bf16 gives the same bits (NaNs stay NaN, quiet);
//  - narrowing rounds to nearest: the result is one of the two neighbours of x in the 16-bit
//  format,
//    the nearer one, and on a tie the one with an even last bit; overflow goes to Inf as RNE says;
//  - NaN stays NaN, Inf stays Inf, the sign is kept.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "client/tensor.h"

namespace {

using normd::DType;

// Reports which property failed, for which value, then stops the fuzzer (a finding).
[[noreturn]] void Fail(const char* what, float x, uint16_t got, DType t) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  std::fprintf(stderr, "conversion check failed: %s: x = %.9g (0x%08x) -> %s 0x%04x\n", what, x,
               bits, t == DType::kFloat16 ? "fp16" : "bf16", got);
  std::abort();
}

bool IsNaN16(uint16_t b, DType t) {
  return t == DType::kFloat16 ? (b & 0x7C00) == 0x7C00 && (b & 0x03FF) != 0
                              : (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
}

// The next 16-bit pattern away from zero / toward zero in magnitude (same sign).
uint16_t Up(uint16_t b) { return static_cast<uint16_t>(b + 1); }

void CheckNarrowing(float x, uint16_t got, DType t) {
  const double widened = normd::BitsToFloats(std::vector<uint16_t>{got}, t)[0];
  if (std::isnan(x)) {
    if (!IsNaN16(got, t)) Fail("NaN must stay NaN", x, got, t);
    return;
  }
  if (IsNaN16(got, t)) Fail("a number became NaN", x, got, t);
  if (std::signbit(widened) != std::signbit(x)) Fail("sign lost", x, got, t);
  if (std::isinf(x)) {
    if (!std::isinf(widened)) Fail("Inf must stay Inf", x, got, t);
    return;
  }
  // The neighbour on the far side of x from `got` (one step in magnitude) must not be nearer.
  const double ax = std::fabs(static_cast<double>(x)), ag = std::fabs(widened);
  const uint16_t magnitude = got & 0x7FFF;
  const uint16_t sign = got & 0x8000;
  uint16_t other;
  if (ag < ax) {
    other = static_cast<uint16_t>(sign | Up(magnitude));
  } else if (ag > ax) {
    if (magnitude == 0) Fail("zero above a nonzero x", x, got, t);
    other = static_cast<uint16_t>(sign | (magnitude - 1));
  } else {
    return;  // exact
  }
  double ao =
      std::fabs(static_cast<double>(normd::BitsToFloats(std::vector<uint16_t>{other}, t)[0]));
  if (std::isinf(ag) && !std::isinf(ao)) {
    // Overflow: Inf is right when x is at least halfway from the largest finite value to the next
    // power of the format's step (the value Inf "stands for" in RNE).
    const double step =
        ao - std::fabs(static_cast<double>(normd::BitsToFloats(
                 std::vector<uint16_t>{static_cast<uint16_t>(magnitude - 2)}, t)[0]));
    if (ax < ao + step / 2) Fail("overflowed to Inf below the rounding threshold", x, got, t);
    return;
  }
  if (std::isinf(ao)) {
    // The far side is Inf, which round-to-nearest-even treats as the value one step past the
    // largest finite one (so that halfway to it, with the largest finite value odd, goes to Inf).
    const double below = std::fabs(static_cast<double>(
        normd::BitsToFloats(std::vector<uint16_t>{static_cast<uint16_t>(magnitude - 1)}, t)[0]));
    ao = ag + (ag - below);
    if (std::fabs(ao - ax) == std::fabs(ag - ax))
      Fail("tie at the top not rounded to Inf", x, got, t);
  }
  const double d_got = std::fabs(ag - ax), d_other = std::fabs(ao - ax);
  if (d_other < d_got) Fail("not the nearest value", x, got, t);
  if (d_other == d_got && (got & 1) != 0) Fail("tie not rounded to even", x, got, t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t floats = size / 4;
  std::vector<float> x(floats);
  if (floats > 0) std::memcpy(x.data(), data, floats * 4);
  std::vector<uint16_t> bits(size / 2);
  if (!bits.empty()) std::memcpy(bits.data(), data, bits.size() * 2);
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    const std::vector<uint16_t> narrowed = normd::FloatsToBits(x, t);
    if (narrowed.size() != x.size()) std::abort();
    for (size_t i = 0; i < x.size(); ++i) CheckNarrowing(x[i], narrowed[i], t);
    const std::vector<float> widened = normd::BitsToFloats(bits, t);
    const std::vector<uint16_t> back = normd::FloatsToBits(widened, t);
    for (size_t i = 0; i < bits.size(); ++i) {
      if (IsNaN16(bits[i], t)) {
        if (!IsNaN16(back[i], t)) std::abort();
      } else if (back[i] != bits[i]) {
        std::abort();
      }
    }
  }
  return 0;
}
