// TaskPool (server/executors/task_pool.h): every task of every batch runs exactly once, whatever
// the pool's size and knobs, batch after batch, with helpers sleeping or polling in between, and a
// Run returns only after every task's writes are done.
#include "server/executors/task_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace normd {
namespace {

struct Knobs {
  int threads;
  absl::Duration spin;
  bool spin_until_done;
};

class TaskPoolTest : public ::testing::TestWithParam<Knobs> {};

TEST_P(TaskPoolTest, RunsEveryTaskOnceBatchAfterBatch) {
  const Knobs knobs = GetParam();
  TaskPool pool(TaskPoolOptions{knobs.threads, knobs.spin, knobs.spin_until_done, "test-pool"});
  EXPECT_EQ(pool.threads(), std::max(knobs.threads, 1));
  for (int64_t tasks : {0, 1, 2, 3, 97, 1000}) {
    for (int round = 0; round < 20; ++round) {
      std::vector<int> hits(static_cast<size_t>(tasks), 0);  // plain ints: Run must order them
      std::atomic<int64_t> calls{0};
      pool.Run(tasks, [&](int64_t i) {
        hits[static_cast<size_t>(i)] += 1;
        calls.fetch_add(1, std::memory_order_relaxed);
      });
      ASSERT_EQ(calls.load(), tasks);
      for (int h : hits) ASSERT_EQ(h, 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Knobs, TaskPoolTest,
                         ::testing::Values(Knobs{1, absl::ZeroDuration(), false},
                                           Knobs{2, absl::ZeroDuration(), false},
                                           Knobs{4, absl::ZeroDuration(), false},
                                           Knobs{4, absl::Microseconds(200), true},
                                           Knobs{3, absl::ZeroDuration(), true}));

TEST(TaskPoolSharing, OnlyBatchesOfSeveralTasksWakeTheHelpers) {
  TaskPool alone(TaskPoolOptions{1, absl::ZeroDuration(), false, "test-pool"});
  alone.Run(10, [](int64_t) {});
  EXPECT_EQ(alone.shared_batches(), 0) << "a pool without helpers shared a batch";

  TaskPool pool(TaskPoolOptions{3, absl::ZeroDuration(), false, "test-pool"});
  pool.Run(1, [](int64_t) {});
  EXPECT_EQ(pool.shared_batches(), 0) << "a batch of one task woke the helpers";
  pool.Run(8, [](int64_t) {});
  pool.Run(8, [](int64_t) {});
  EXPECT_EQ(pool.shared_batches(), 2);
}

}  // namespace
}  // namespace normd
