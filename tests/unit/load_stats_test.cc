// normbench's window statistics: when three windows agree, and the paired-window throughput ratio
// that normbench quotes for a target against its baseline.
#include "bench/load/load_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace normd::bench {
namespace {

// A one-second window that served `requests` requests.
WindowStats Window(int requests) {
  WindowStats w;
  w.length = absl::Seconds(1);
  w.latencies_us.assign(static_cast<size_t>(requests), 100);
  return w;
}

std::vector<WindowStats> Windows(const std::vector<int>& requests) {
  std::vector<WindowStats> out;
  for (int r : requests) out.push_back(Window(r));
  return out;
}

TEST(LastThreeAgreeTest, NeedsThreeWindowsWithinTheTolerance) {
  EXPECT_FALSE(LastThreeAgree(Windows({100, 100}), 0.1));
  EXPECT_TRUE(LastThreeAgree(Windows({10, 100, 105, 95}), 0.1));
  EXPECT_FALSE(LastThreeAgree(Windows({100, 100, 125}), 0.1));
}

TEST(PairWindowRatiosTest, MedianOfOddAndEvenPairCounts) {
  // Ratios 0.9, 0.5, 1.0: the outlier pair does not move the median.
  PairedRatios odd = PairWindowRatios(Windows({90, 50, 100}), Windows({100, 100, 100}));
  EXPECT_EQ(odd.pairs, 3);
  EXPECT_DOUBLE_EQ(odd.median, 0.9);
  EXPECT_DOUBLE_EQ(odd.min, 0.5);
  EXPECT_DOUBLE_EQ(odd.max, 1.0);
  // Ratios 0.8, 0.9, 1.0, 1.2: the mean of the middle two.
  PairedRatios even = PairWindowRatios(Windows({80, 180, 100, 120}), Windows({100, 200, 100, 100}));
  EXPECT_EQ(even.pairs, 4);
  EXPECT_DOUBLE_EQ(even.median, 0.95);
}

TEST(PairWindowRatiosTest, PairsOnlyWindowsBothSidesHaveAndSkipsAnIdleBaseline) {
  // The target measured one window more (it was not yet stable); the baseline's second window
  // served nothing.
  PairedRatios r = PairWindowRatios(Windows({50, 70, 60, 999}), Windows({100, 0, 100}));
  EXPECT_EQ(r.pairs, 2);
  EXPECT_DOUBLE_EQ(r.median, 0.55);
  EXPECT_EQ(PairWindowRatios({}, Windows({100})).pairs, 0);
  EXPECT_EQ(PairWindowRatios(Windows({100}), Windows({0})).pairs, 0);
}

}  // namespace
}  // namespace normd::bench
