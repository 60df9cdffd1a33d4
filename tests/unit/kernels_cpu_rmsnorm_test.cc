// Tests the fast CPU RMSNorm (kernels/cpu_rmsnorm.h) against the fp64 reference
// (kernels/reference.h).
//
// The sweep is one table: hidden {1, 2, 3, 111, 500, 3000, 4096, 5120, 16384} x rows {1, 19, 989} x
// dtype x residual on/off x weight_offset {0, 1} x weight dtype (the input's or fp32), one CTest
// test per case, fresh random inputs per case from a seed derived from the case (printed on
// failure). Then the named cases: the seed example, an all-zero row, a NaN confined to its row,
// in-place calls, a multi-segment launch and the largest hidden size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/cpu_rmsnorm.h"
#include "kernels/dtype.h"
#include "kernels/reference.h"
#include "kernels/rmsnorm.h"

namespace normd {
namespace {

// xorshift64*: a few cycles per draw, so the 16M-element cases spend their time in the code under
// test.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [-1, 1).
  float Symmetric() { return static_cast<float>(Next() >> 40) * 0x1p-23f - 1.0f; }

 private:
  uint64_t state_;
};

// Leaves vector elements uninitialized: the tensors here are filled (or written by the kernel)
// right away, and zeroing hundreds of MB first was a fifth of the test's time.
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
};

// A tensor of rows x hidden elements stored in its dtype's bytes.
struct Tensor {
  DType dtype;
  std::vector<uint8_t, NoInitAllocator<uint8_t>> bytes;
  Tensor(DType d, size_t count) : dtype(d), bytes(count * ItemSize(d)) {}
  size_t size() const { return bytes.size() / ItemSize(dtype); }
  void* data() { return bytes.data(); }
  float Get(size_t i) const { return LoadAsFloat(bytes.data(), dtype, i); }
  void Set(size_t i, float v) { StoreFromFloat(bytes.data(), dtype, i, v); }
  // The stored bit pattern of element i (for exact comparisons).
  uint32_t Bits(size_t i) const {
    if (dtype == DType::kFloat32) return FloatBits(Get(i));
    uint16_t b;
    std::memcpy(&b, bytes.data() + 2 * i, 2);
    return b;
  }
};

// Fills a rows x hidden tensor with values of a random scale per row (2^-6 .. 2^6), so that rows
// differ in magnitude and some rows sit near eps; values are exact in the dtype, so the reference
// sees them.
void FillRows(Tensor& t, size_t hidden, Rng& rng) {
  for (size_t row = 0; row < t.size() / hidden; ++row) {
    const float scale = std::ldexp(1.0f, static_cast<int>(rng.Next() % 13) - 6);
    for (size_t i = 0; i < hidden; ++i) t.Set(row * hidden + i, rng.Symmetric() * scale);
  }
}

// One unit in the last place of `dtype` at v >= 0 (the gap to the next value away from zero), built
// from v's binary exponent by hand: ilogb/ldexp here cost a tenth of the test's time.
double Ulp(DType dtype, double v) {
  const int min_exp = dtype == DType::kFloat16 ? -14 : -126;
  const int mantissa_bits = dtype == DType::kFloat16 ? 10 : dtype == DType::kBFloat16 ? 7 : 23;
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int e =
      v == 0.0 ? min_exp : std::max(static_cast<int>((bits >> 52) & 0x7FF) - 1023, min_exp);
  const uint64_t ulp_bits = static_cast<uint64_t>(e - mantissa_bits + 1023) << 52;
  double ulp;
  std::memcpy(&ulp, &ulp_bits, sizeof ulp);
  return ulp;
}

// Checks the fast path's output (and residual_out) against the reference, row by row. Reports the
// first few mismatches only, so a broken kernel does not print millions of lines.
testing::AssertionResult MatchesReference(int64_t hidden, const RmsNormSegment& s, DType dtype,
                                          const Tensor& output, const Tensor* residual_out) {
  const auto h = static_cast<size_t>(hidden);
  // The reference runs one row at a time so that its fp64 rows stay small (and in cache).
  std::vector<double> ref_row(h), ref_h_row(s.residual != nullptr ? h : 0);
  int failures = 0;
  std::string report;
  auto fail = [&](const char* what, size_t idx, double want, double got) {
    if (++failures <= 5) {
      report += std::string(what) + " row " + std::to_string(idx / h) + " col " +
                std::to_string(idx % h) + ": want " + std::to_string(want) + " got " +
                std::to_string(got) + "\n";
    }
  };
  for (size_t row = 0; row < static_cast<size_t>(s.rows); ++row) {
    RmsNormSegment one_row = s;
    const size_t offset = row * h * ItemSize(dtype);
    one_row.input = static_cast<const uint8_t*>(s.input) + offset;
    if (s.residual != nullptr) one_row.residual = static_cast<const uint8_t*>(s.residual) + offset;
    one_row.rows = 1;
    RmsNormReference(dtype, hidden, one_row, ref_row.data(), ref_h_row.data());
    // fp32: every step after the row's sum is a product, a quotient, a root or one add of exact
    // inputs, so the error is relative to each value; the sum of squares adds ~1e-6 relative at
    // H = 16384. The floor (1e-6 of the row's RMS of y) only matters where y underflows toward
    // fp32 subnormals, where relative error has no meaning; it is far below any normal y here.
    double row_sq = 0.0;
    for (double y : ref_row) row_sq += y * y;
    const double floor = 1e-6 * std::sqrt(row_sq / static_cast<double>(h));
    for (size_t j = 0; j < h; ++j) {
      const size_t i = row * h + j;
      const double want_y = ref_row[j];
      const double got = output.Get(i);
      const double tol = dtype == DType::kFloat32 ? 1e-5 * std::max(std::fabs(want_y), floor)
                                                  : Ulp(dtype, std::fabs(want_y));
      if (!(std::fabs(got - want_y) <= tol)) fail("output", i, want_y, got);
      if (residual_out != nullptr) {
        // residual_out = round(fp32 h): the reference's exact h rounded to fp32, then to the dtype.
        const float want_h = static_cast<float>(ref_h_row[j]);
        const uint32_t want_bits = dtype == DType::kFloat32   ? FloatBits(want_h)
                                   : dtype == DType::kFloat16 ? FloatToFloat16(want_h)
                                                              : FloatToBFloat16(want_h);
        if (want_bits != residual_out->Bits(i))
          fail("residual_out", i, want_h, residual_out->Get(i));
      }
    }
  }
  if (failures == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << failures << " mismatches, first:\n" << report;
}

// A random problem: tensors of one case and the segment that points at them. Not copyable, since
// the segment holds pointers into its own tensors.
struct Problem {
  Tensor input, output, residual, residual_out, weight;
  RmsNormSegment segment;

  Problem(DType dtype, DType weight_dtype, int64_t hidden, int64_t rows, bool with_residual,
          float weight_offset, uint64_t seed)
      : input(dtype, static_cast<size_t>(hidden * rows)),
        output(dtype, input.size()),
        residual(dtype, with_residual ? input.size() : 0),
        residual_out(dtype, residual.size()),
        weight(weight_dtype, static_cast<size_t>(hidden)) {
    Rng rng(seed);
    FillRows(input, static_cast<size_t>(hidden), rng);
    if (with_residual) FillRows(residual, static_cast<size_t>(hidden), rng);
    for (size_t i = 0; i < weight.size(); ++i) weight.Set(i, rng.Symmetric() * 2.0f);
    segment.input = input.data();
    segment.output = output.data();
    segment.residual = with_residual ? residual.data() : nullptr;
    segment.residual_out = with_residual ? residual_out.data() : nullptr;
    segment.weight = weight.data();
    segment.rows = rows;
    segment.eps = 1e-6f;
    segment.weight_offset = weight_offset;
    segment.weight_dtype = weight_dtype;
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  testing::AssertionResult Check(int64_t hidden) const {
    return MatchesReference(hidden, segment, input.dtype, output,
                            segment.residual != nullptr ? &residual_out : nullptr);
  }
};

struct SweepCase {
  DType dtype;
  DType weight_dtype;
  int64_t hidden;
  int64_t rows;
  bool residual;
  float weight_offset;
};

std::vector<SweepCase> AllSweepCases() {
  std::vector<SweepCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (bool fp32_weight : {false, true}) {
      if (fp32_weight && dtype == DType::kFloat32) continue;  // the same case as the line above
      const DType weight_dtype = fp32_weight ? DType::kFloat32 : dtype;
      for (int64_t hidden : {1, 2, 3, 111, 500, 3000, 4096, 5120, 16384}) {
        for (int64_t rows : {1, 19, 989}) {
          for (bool residual : {false, true}) {
            for (float offset : {0.0f, 1.0f}) {
              cases.push_back({dtype, weight_dtype, hidden, rows, residual, offset});
            }
          }
        }
      }
    }
  }
  return cases;
}

std::string CaseName(const testing::TestParamInfo<SweepCase>& info) {
  const SweepCase& c = info.param;
  return std::string(DTypeName(c.dtype)) + "_w" + std::string(DTypeName(c.weight_dtype)) + "_H" +
         std::to_string(c.hidden) + "_rows" + std::to_string(c.rows) +
         (c.residual ? "_residual" : "_plain") +
         (c.weight_offset != 0.0f ? "_offset1" : "_offset0");
}

// Keeps failure messages and CTest names readable (gtest would print the struct's bytes).
void PrintTo(const SweepCase& c, std::ostream* os) {
  *os << DTypeName(c.dtype) << " weight " << DTypeName(c.weight_dtype) << " H " << c.hidden
      << " rows " << c.rows << (c.residual ? " residual" : "") << " offset " << c.weight_offset;
}

class CpuRmsNormSweep : public testing::TestWithParam<SweepCase> {};

TEST_P(CpuRmsNormSweep, MatchesReference) {
  const SweepCase& c = GetParam();
  // A fixed seed per case: the same inputs on every run, different ones for every case.
  const uint64_t seed = 0x5EED0000ull + static_cast<uint64_t>(c.hidden) * 1000003u +
                        static_cast<uint64_t>(c.rows) * 101u +
                        static_cast<uint64_t>(c.dtype) * 11u +
                        static_cast<uint64_t>(c.weight_dtype) * 7u + (c.residual ? 2u : 0u) +
                        (c.weight_offset != 0.0f ? 1u : 0u);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Problem p(c.dtype, c.weight_dtype, c.hidden, c.rows, c.residual, c.weight_offset, seed);
  RmsNormCpuRows(c.dtype, c.hidden, p.segment, 0, c.rows);
  EXPECT_TRUE(p.Check(c.hidden));
}

INSTANTIATE_TEST_SUITE_P(Sweep, CpuRmsNormSweep, testing::ValuesIn(AllSweepCases()), CaseName);

constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// The seed lesson's example: rms([3, 4]) = sqrt(12.5), so y = [3, 4 * 2] / 3.5355339.
TEST(CpuRmsNorm, SeedExample) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    Tensor x(dtype, 2), y(dtype, 2), w(dtype, 2);
    x.Set(0, 3.0f), x.Set(1, 4.0f), w.Set(0, 1.0f), w.Set(1, 2.0f);
    RmsNormSegment s;
    s.input = x.data(), s.output = y.data(), s.weight = w.data(), s.rows = 1, s.eps = 0.0f;
    s.weight_dtype = dtype;
    RmsNormCpuRows(dtype, 2, s, 0, 1);
    EXPECT_NEAR(y.Get(0), 0.848528, dtype == DType::kFloat32 ? 1e-6 : Ulp(dtype, 0.848528));
    EXPECT_NEAR(y.Get(1), 2.262742, dtype == DType::kFloat32 ? 1e-6 : Ulp(dtype, 2.262742));
  }
}

// sum = 0 with eps > 0 gives inv_rms = 1/sqrt(eps), finite, so y = 0 * finite = 0, never NaN.
TEST(CpuRmsNorm, AllZeroRowGivesZeros) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    Problem p(dtype, dtype, 300, 3, /*with_residual=*/false, 1.0f, 42);
    for (size_t i = 300; i < 600; ++i) p.input.Set(i, 0.0f);
    RmsNormCpuRows(dtype, 300, p.segment, 0, 3);
    for (size_t i = 300; i < 600; ++i) ASSERT_EQ(p.output.Get(i), 0.0f) << "col " << i - 300;
    EXPECT_TRUE(p.Check(300));
  }
}

// A NaN poisons its own row's sum, hence every y of that row, and nothing else.
TEST(CpuRmsNorm, NaNStaysInItsRow) {
  for (DType dtype : kAllDTypes) {
    for (bool residual : {false, true}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + (residual ? " residual" : ""));
      constexpr int64_t kHidden = 257;
      Problem p(dtype, DType::kFloat32, kHidden, 3, residual, 0.0f, 43);
      p.input.Set(kHidden + 7, std::numeric_limits<float>::quiet_NaN());
      RmsNormCpuRows(dtype, kHidden, p.segment, 0, 3);
      for (int64_t i = 0; i < 3 * kHidden; ++i) {
        const bool in_nan_row = i / kHidden == 1;
        ASSERT_EQ(std::isnan(p.output.Get(i)), in_nan_row) << "element " << i;
        if (residual) ASSERT_EQ(std::isnan(p.residual_out.Get(i)), i == kHidden + 7) << i;
      }
    }
  }
}

// output == input and residual_out == residual must give the bytes of the out-of-place call.
TEST(CpuRmsNorm, InPlaceMatchesOutOfPlace) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    constexpr int64_t kHidden = 4099;  // a vector tail on every ISA
    Problem p(dtype, dtype, kHidden, 5, /*with_residual=*/true, 1.0f, 44);
    RmsNormCpuRows(dtype, kHidden, p.segment, 0, 5);
    RmsNormSegment in_place = p.segment;
    Tensor x = p.input, r = p.residual;
    in_place.input = in_place.output = x.data();
    in_place.residual = in_place.residual_out = r.data();
    RmsNormCpuRows(dtype, kHidden, in_place, 0, 5);
    EXPECT_EQ(x.bytes, p.output.bytes);
    EXPECT_EQ(r.bytes, p.residual_out.bytes);
  }
}

// Calls writing 16 MiB or more take the non-temporal store path, which starts each row with scalar
// columns up to the first aligned one. Whatever the alignment of output and residual_out (here
// misaligned, and differently from each other), a row must come out with the bytes that small
// ordinary-store calls give it: which accumulator lane a column lands in may not depend on
// addresses.
TEST(CpuRmsNorm, StreamedLargeOutputsMatchRowByRowCalls) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    constexpr int64_t kHidden = 4099;  // rows start at a different alignment each
    const auto item = static_cast<int64_t>(ItemSize(dtype));
    const int64_t rows = (int64_t{17} << 20) / (kHidden * item) + 1;
    Problem p(dtype, dtype, kHidden, rows, /*with_residual=*/true, 1.0f, 50);
    const size_t count = p.input.size();
    Tensor out(dtype, count + 8), r_out(dtype, count + 8);
    RmsNormSegment whole = p.segment;
    whole.output = static_cast<uint8_t*>(out.data()) + 1 * item;
    whole.residual_out = static_cast<uint8_t*>(r_out.data()) + 3 * item;
    RmsNormCpuRows(dtype, kHidden, whole, 0, rows);
    for (int64_t row = 0; row < rows; ++row)
      RmsNormCpuRows(dtype, kHidden, p.segment, row, row + 1);
    EXPECT_EQ(0, std::memcmp(whole.output, p.output.data(), count * item));
    EXPECT_EQ(0, std::memcmp(whole.residual_out, p.residual_out.data(), count * item));
    EXPECT_TRUE(p.Check(kHidden));
  }
}

// Segments of one launch keep their own eps, weight, weight dtype, offset and residual.
TEST(CpuRmsNorm, MultiSegmentLaunch) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    constexpr int64_t kHidden = 640;
    Problem a(dtype, dtype, kHidden, 3, false, 0.0f, 45);
    Problem b(dtype, DType::kFloat32, kHidden, 1, true, 1.0f, 46);
    Problem c(dtype, dtype, kHidden, 7, true, 0.0f, 47);
    b.segment.eps = 1e-2f;
    a.segment.first_row = 0, b.segment.first_row = 3, c.segment.first_row = 4;
    const RmsNormSegment segments[] = {a.segment, b.segment, c.segment};
    RmsNormLaunch launch{dtype, kHidden, 11, segments, 3};
    RmsNormCpu(launch);
    EXPECT_TRUE(a.Check(kHidden));
    EXPECT_TRUE(b.Check(kHidden));
    EXPECT_TRUE(c.Check(kHidden));
  }
}

// Row ranges split anywhere give the bytes of one whole call (how the server spreads rows).
TEST(CpuRmsNorm, RowRangesComposeToWholeCall) {
  Problem whole(DType::kBFloat16, DType::kFloat32, 333, 10, true, 1.0f, 48);
  Problem split(DType::kBFloat16, DType::kFloat32, 333, 10, true, 1.0f, 48);
  RmsNormCpuRows(DType::kBFloat16, 333, whole.segment, 0, 10);
  RmsNormCpuRows(DType::kBFloat16, 333, split.segment, 0, 4);
  RmsNormCpuRows(DType::kBFloat16, 333, split.segment, 4, 4);  // empty range: no-op
  RmsNormCpuRows(DType::kBFloat16, 333, split.segment, 4, 10);
  EXPECT_EQ(whole.output.bytes, split.output.bytes);
  EXPECT_EQ(whole.residual_out.bytes, split.residual_out.bytes);
}

// The server's default --max-hidden.
TEST(CpuRmsNorm, LargestHidden) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    Problem p(dtype, DType::kFloat32, 65536, 2, true, 0.0f, 49);
    RmsNormCpuRows(dtype, 65536, p.segment, 0, 2);
    EXPECT_TRUE(p.Check(65536));
  }
}

}  // namespace
}  // namespace normd
