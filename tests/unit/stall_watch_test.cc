// StallWatch: a watched write's callback runs once its deadline has passed, unless it was taken
// back first; Unwatch says which happened, so that the watcher knows whether to wait for it. Under
// pressure the shorter deadline applies, and the callback is told which one passed.
#include "server/rpc/stall_watch.h"

#include <gtest/gtest.h>

#include <vector>

#include "absl/time/time.h"

namespace normd {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

TEST(StallWatchTest, CallbackRunsOnlyOncePastTheDeadline) {
  StallWatch watch(absl::Seconds(10));
  int stalls = 0;
  const StallWatch::Ticket ticket =
      watch.Watch(kStart, [&](const StallWatch::Stall&) { ++stalls; });
  EXPECT_NE(ticket, 0u);
  watch.ExpireDue(kStart + absl::Seconds(9));
  EXPECT_EQ(stalls, 0);
  watch.ExpireDue(kStart + absl::Seconds(10));
  EXPECT_EQ(stalls, 1);
  watch.ExpireDue(kStart + absl::Seconds(30));
  EXPECT_EQ(stalls, 1) << "a watch runs at most once";
  EXPECT_FALSE(watch.Unwatch(ticket)) << "its callback has run: the watcher must know";
  EXPECT_EQ(watch.watched(), 0u);
}

TEST(StallWatchTest, UnwatchedInTimeNeverRuns) {
  StallWatch watch(absl::Seconds(10));
  int stalls = 0;
  const StallWatch::Ticket first = watch.Watch(kStart, [&](const StallWatch::Stall&) { ++stalls; });
  const StallWatch::Ticket second =
      watch.Watch(kStart + absl::Seconds(5), [&](const StallWatch::Stall&) { stalls += 10; });
  EXPECT_NE(first, second);
  EXPECT_TRUE(watch.Unwatch(first));
  EXPECT_FALSE(watch.Unwatch(first)) << "taken back twice";
  watch.ExpireDue(kStart + absl::Seconds(12));
  EXPECT_EQ(stalls, 0) << "the second watch's deadline (15 s) has not passed";
  watch.ExpireDue(kStart + absl::Seconds(15));
  EXPECT_EQ(stalls, 10);
}

TEST(StallWatchTest, CallbacksRunOutsideTheLockAndMayWatchAgain) {
  StallWatch watch(absl::Seconds(1));
  int stalls = 0;
  StallWatch::Ticket again = 0;
  watch.Watch(kStart, [&](const StallWatch::Stall&) {
    ++stalls;
    // A stream that starts its next write from the callback registers a new watch.
    again = watch.Watch(kStart + absl::Seconds(1), [&](const StallWatch::Stall&) { ++stalls; });
  });
  watch.ExpireDue(kStart + absl::Seconds(1));
  EXPECT_EQ(stalls, 1);
  EXPECT_NE(again, 0u);
  EXPECT_EQ(watch.watched(), 1u);
  watch.ExpireDue(kStart + absl::Seconds(2));
  EXPECT_EQ(stalls, 2);
}

TEST(StallWatchTest, UnderPressureTheShorterTimeoutApplies) {
  StallWatch watch(absl::Seconds(10), absl::Seconds(1));
  std::vector<StallWatch::Stall> stalls;
  auto record = [&](const StallWatch::Stall& stall) { stalls.push_back(stall); };
  watch.Watch(kStart, record);
  watch.Watch(kStart + absl::Seconds(2), record);
  watch.ExpireDue(kStart + absl::Seconds(2));
  EXPECT_TRUE(stalls.empty()) << "without pressure only the 10 s timeout applies";
  watch.ExpireDue(kStart + absl::Milliseconds(2500), /*under_pressure=*/true);
  ASSERT_EQ(stalls.size(), 1u) << "the first write is 2.5 s old, the second 0.5 s";
  EXPECT_EQ(stalls[0].outstanding, absl::Milliseconds(2500));
  EXPECT_TRUE(stalls[0].under_pressure);
  watch.ExpireDue(kStart + absl::Seconds(12));
  ASSERT_EQ(stalls.size(), 2u);
  EXPECT_EQ(stalls[1].outstanding, absl::Seconds(10));
  EXPECT_FALSE(stalls[1].under_pressure) << "the 10 s timeout passed: pressure played no part";
}

TEST(StallWatchTest, NoPressureTimeoutAndNoTimeoutMeanNeverUnderThatRule) {
  StallWatch no_pressure_rule(absl::Seconds(10));
  StallWatch pressure_only(absl::InfiniteDuration(), absl::Seconds(1));
  int stalls = 0;
  no_pressure_rule.Watch(kStart, [&](const StallWatch::Stall&) { ++stalls; });
  pressure_only.Watch(kStart, [&](const StallWatch::Stall&) { stalls += 10; });
  no_pressure_rule.ExpireDue(kStart + absl::Seconds(5), /*under_pressure=*/true);
  pressure_only.ExpireDue(kStart + absl::Hours(24));
  EXPECT_EQ(stalls, 0);
  pressure_only.ExpireDue(kStart + absl::Hours(24), /*under_pressure=*/true);
  EXPECT_EQ(stalls, 10);
}

}  // namespace
}  // namespace normd
