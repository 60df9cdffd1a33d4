// The batching rules (server/batching/batch_former.h) with an injected time: when a launch goes,
// which requests ride together, the caps, deadline and cancellation removal, and freedom from
// starvation.
#include "server/batching/batch_former.h"

#include <gtest/gtest.h>

#include <atomic>

namespace normd {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

std::unique_ptr<WorkItem> Item(int64_t rows, int64_t hidden = 4096, DType dtype = DType::kBFloat16,
                               absl::Time enqueued = kT0) {
  auto item = std::make_unique<WorkItem>();
  item->request.dtype = dtype;
  item->request.rows = rows;
  item->request.hidden = hidden;
  item->enqueued = enqueued;
  item->on_done = [](const absl::Status&, const LaunchReport&) {};
  return item;
}

int64_t BytesOf(int64_t rows, int64_t hidden = 4096) { return rows * hidden * 2; }

BatchLimits WaitingForCompany(absl::Duration wait, int64_t min_requests = 2) {
  BatchLimits limits;
  limits.company_wait = wait;
  limits.company_min_requests = min_requests;
  return limits;
}

TEST(BatchFormerTest, IdleWorkerLaunchesAtOnceWithoutQueueDelay) {
  WorkQueue queue;
  queue.push_back(Item(1));
  EXPECT_EQ(NextLaunchTime(queue, BatchLimits{}, kT0 + absl::Microseconds(3)),
            kT0 + absl::Microseconds(3));
}

TEST(BatchFormerTest, PartialLaunchWaitsAtMostTheQueueDelay) {
  BatchLimits limits;
  limits.max_queue_delay = absl::Microseconds(500);
  WorkQueue queue;
  queue.push_back(Item(1));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0 + absl::Microseconds(100)),
            kT0 + absl::Microseconds(500));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0 + absl::Microseconds(900)),
            kT0 + absl::Microseconds(900));
}

TEST(BatchFormerTest, PartialLaunchDoesNotWaitPastTheOldestDeadline) {
  BatchLimits limits;
  limits.max_queue_delay = absl::Milliseconds(5);
  WorkQueue queue;
  queue.push_back(Item(1));
  queue.front()->deadline = kT0 + absl::Milliseconds(1);
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0), kT0 + absl::Milliseconds(1));
}

TEST(BatchFormerTest, FullLaunchGoesAtOnceEvenWithQueueDelay) {
  BatchLimits limits;
  limits.max_queue_delay = absl::Milliseconds(5);
  limits.max_rows = 8;
  WorkQueue queue;
  for (int i = 0; i < 8; ++i) queue.push_back(Item(1));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0), kT0);
}

TEST(BatchFormerTest, CompanyWaitNeverDelaysAWorkerWhoseLastLaunchCarriedOneRequest) {
  const BatchLimits limits = WaitingForCompany(absl::Microseconds(300));
  WorkQueue queue;
  queue.push_back(Item(1));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0, /*expected_requests=*/1), kT0);
}

TEST(BatchFormerTest, CompanyWaitHoldsUntilAsManyRequestsAsTheLastLaunchOrTheWaitEnds) {
  const BatchLimits limits = WaitingForCompany(absl::Microseconds(300));
  WorkQueue queue;
  queue.push_back(Item(1));
  queue.push_back(Item(1, 1024));  // another group: not company for the oldest
  queue.push_back(Item(1));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0 + absl::Microseconds(10), 3),
            kT0 + absl::Microseconds(300));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0 + absl::Microseconds(400), 3),
            kT0 + absl::Microseconds(400));
  queue.push_back(Item(1));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0 + absl::Microseconds(10), 3),
            kT0 + absl::Microseconds(10));
}

TEST(BatchFormerTest, CompanyWaitHoldsOnlyAfterALaunchOfAtLeastTheMinimumRequests) {
  BatchLimits limits = WaitingForCompany(absl::Microseconds(300), /*min_requests=*/12);
  WorkQueue queue;
  queue.push_back(Item(1));
  // Eight clients: their launches carry at most 8, under the floor, so none is held.
  EXPECT_FALSE(WaitsForCompany(limits, 8));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0 + absl::Microseconds(10), 8),
            kT0 + absl::Microseconds(10));
  // A launch of 12 or more makes the next wait for as many.
  EXPECT_TRUE(WaitsForCompany(limits, 12));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0 + absl::Microseconds(10), 12),
            kT0 + absl::Microseconds(300));
  // A floor under 2 still never holds a lone client.
  limits.company_min_requests = 0;
  EXPECT_FALSE(WaitsForCompany(limits, 1));
  EXPECT_TRUE(WaitsForCompany(limits, 2));
}

TEST(BatchFormerTest, CompanyMemoryExpectsTheLargestOfTheLastLaunchesUpToTheMaximum) {
  BatchLimits limits;
  limits.company_memory = 3;
  limits.company_max_requests = 16;
  CompanyMemory memory(limits.company_memory);
  EXPECT_EQ(memory.Expected(limits), 1) << "nothing recorded yet: a lone request never waits";
  memory.Record(12);
  memory.Record(5);
  memory.Record(7);
  EXPECT_EQ(memory.Expected(limits), 12) << "two short launches after a launch of 12 keep it";
  memory.Record(6);
  EXPECT_EQ(memory.Expected(limits), 7) << "the launch of 12 is three launches back: forgotten";
  memory.Record(40);
  EXPECT_EQ(memory.Expected(limits), 16) << "capped at company_max_requests";
  memory.Record(1);
  memory.Record(1);
  memory.Record(1);
  EXPECT_EQ(memory.Expected(limits), 1)
      << "clients that left are forgotten after company_memory launches";
  // A memory of one launch is the last launch alone.
  CompanyMemory last(1);
  last.Record(9);
  EXPECT_EQ(last.Expected(limits), 9);
  last.Record(2);
  EXPECT_EQ(last.Expected(limits), 2);
}

TEST(BatchFormerTest, CompanyWaitEndsAtTheOldestDeadlineAndWhenTheLaunchIsFull) {
  BatchLimits limits = WaitingForCompany(absl::Milliseconds(5));
  limits.max_rows = 4;
  WorkQueue queue;
  queue.push_back(Item(1));
  queue.front()->deadline = kT0 + absl::Milliseconds(1);
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0, 16), kT0 + absl::Milliseconds(1));
  queue.push_back(Item(3));
  EXPECT_EQ(NextLaunchTime(queue, limits, kT0, 16), kT0);
}

TEST(BatchFormerTest, QueuedRequestsOfOneGroupCoalesceIntoOneLaunch) {
  WorkQueue queue;
  for (int i = 0; i < 5; ++i) queue.push_back(Item(1 + i));
  const Launch launch = TakeLaunch(queue, BatchLimits{});
  EXPECT_EQ(launch.items.size(), 5u);
  EXPECT_EQ(launch.rows, 15);
  EXPECT_EQ(launch.bytes, BytesOf(15));
  EXPECT_TRUE(queue.empty());
}

TEST(BatchFormerTest, LaunchIsOneDtypeAndHiddenGroupLedByTheOldest) {
  WorkQueue queue;
  queue.push_back(Item(1, 4096, DType::kBFloat16));
  queue.push_back(Item(2, 1024, DType::kBFloat16));  // other hidden
  queue.push_back(Item(3, 4096, DType::kFloat32));   // other dtype
  queue.push_back(Item(4, 4096, DType::kBFloat16));
  Launch first = TakeLaunch(queue, BatchLimits{});
  ASSERT_EQ(first.items.size(), 2u);
  EXPECT_EQ(first.items[0]->rows(), 1);
  EXPECT_EQ(first.items[1]->rows(), 4);
  EXPECT_EQ(first.hidden, 4096);
  EXPECT_EQ(first.dtype, DType::kBFloat16);
  // The others keep their order: the 1024 group is next, then float32.
  Launch second = TakeLaunch(queue, BatchLimits{});
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(second.hidden, 1024);
  Launch third = TakeLaunch(queue, BatchLimits{});
  EXPECT_EQ(third.dtype, DType::kFloat32);
  EXPECT_TRUE(queue.empty());
}

TEST(BatchFormerTest, RowCapLimitsALaunch) {
  BatchLimits limits;
  limits.max_rows = 10;
  WorkQueue queue;
  for (int i = 0; i < 4; ++i) queue.push_back(Item(4));
  const Launch launch = TakeLaunch(queue, limits);
  EXPECT_EQ(launch.rows, 8);
  EXPECT_EQ(queue.size(), 2u);
}

TEST(BatchFormerTest, ByteCapLimitsALaunch) {
  BatchLimits limits;
  limits.max_bytes = BytesOf(5);
  WorkQueue queue;
  for (int i = 0; i < 4; ++i) queue.push_back(Item(2));
  const Launch launch = TakeLaunch(queue, limits);
  EXPECT_EQ(launch.rows, 4);
  EXPECT_LE(launch.bytes, limits.max_bytes);
}

TEST(BatchFormerTest, RequestOverTheCapsGoesAlone) {
  BatchLimits limits;
  limits.max_rows = 16;
  WorkQueue queue;
  queue.push_back(Item(100));
  queue.push_back(Item(1));
  const Launch launch = TakeLaunch(queue, limits);
  ASSERT_EQ(launch.items.size(), 1u);
  EXPECT_EQ(launch.rows, 100);
  EXPECT_EQ(queue.size(), 1u);
}

TEST(BatchFormerTest, ExpiredAndCancelledRequestsLeaveBeforePacking) {
  WorkQueue queue;
  queue.push_back(Item(1));
  queue.push_back(Item(2));
  queue.back()->deadline = kT0 + absl::Microseconds(10);
  queue.push_back(Item(3));
  queue.back()->is_cancelled = [] { return true; };
  queue.push_back(Item(4));
  std::vector<std::pair<std::unique_ptr<WorkItem>, absl::Status>> dropped;
  RemoveDeadRequests(queue, kT0 + absl::Microseconds(20), dropped);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0].first->rows(), 2);
  EXPECT_EQ(dropped[0].second.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(dropped[1].first->rows(), 3);
  EXPECT_EQ(dropped[1].second.code(), absl::StatusCode::kCancelled);
  const Launch launch = TakeLaunch(queue, BatchLimits{});
  EXPECT_EQ(launch.rows, 5);  // only the live ones: 1 + 4
}

// A large request queued behind a steady stream of small ones of the same group is never passed
// over forever: every launch takes the oldest first, so it leads a launch once the older ones are
// gone.
TEST(BatchFormerTest, SmallRequestsCannotStarveALargeOne) {
  BatchLimits limits;
  limits.max_rows = 64;
  WorkQueue queue;
  for (int i = 0; i < 10; ++i) queue.push_back(Item(8));
  queue.push_back(Item(500));  // over the cap: it can only go alone
  int launches = 0;
  bool large_went = false;
  while (!large_went && launches < 100) {
    for (int i = 0; i < 8; ++i) queue.push_back(Item(8));  // small ones keep arriving
    const Launch launch = TakeLaunch(queue, limits);
    ++launches;
    for (const auto& item : launch.items) large_went |= item->rows() == 500;
  }
  EXPECT_TRUE(large_went);
  EXPECT_LE(launches, 3);
}

// And the reverse: a stream of large requests cannot starve a small one of another group.
TEST(BatchFormerTest, LargeRequestsCannotStarveASmallOneOfAnotherGroup) {
  WorkQueue queue;
  queue.push_back(Item(4000, 4096));
  queue.push_back(Item(1, 128, DType::kFloat32));
  int launches = 0;
  bool small_went = false;
  while (!small_went && launches < 100) {
    queue.push_back(Item(4000, 4096));
    const Launch launch = TakeLaunch(queue, BatchLimits{});
    ++launches;
    small_went = launch.hidden == 128;
  }
  EXPECT_TRUE(small_went);
  EXPECT_LE(launches, 2);
}

}  // namespace
}  // namespace normd
