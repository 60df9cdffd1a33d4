// StallWatch: a watched write's callback runs once its deadline has passed, unless it was taken
// back first; Unwatch says which happened, so that the watcher knows whether to wait for it.
#include "server/rpc/stall_watch.h"

#include <gtest/gtest.h>

#include "absl/time/time.h"

namespace normd {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

TEST(StallWatchTest, CallbackRunsOnlyOncePastTheDeadline) {
  StallWatch watch(absl::Seconds(10));
  int stalls = 0;
  const StallWatch::Ticket ticket = watch.Watch(kStart, [&] { ++stalls; });
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
  const StallWatch::Ticket first = watch.Watch(kStart, [&] { ++stalls; });
  const StallWatch::Ticket second = watch.Watch(kStart + absl::Seconds(5), [&] { stalls += 10; });
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
  watch.Watch(kStart, [&] {
    ++stalls;
    // A stream that starts its next write from the callback registers a new watch.
    again = watch.Watch(kStart + absl::Seconds(1), [&] { ++stalls; });
  });
  watch.ExpireDue(kStart + absl::Seconds(1));
  EXPECT_EQ(stalls, 1);
  EXPECT_NE(again, 0u);
  EXPECT_EQ(watch.watched(), 1u);
  watch.ExpireDue(kStart + absl::Seconds(2));
  EXPECT_EQ(stalls, 2);
}

}  // namespace
}  // namespace normd
