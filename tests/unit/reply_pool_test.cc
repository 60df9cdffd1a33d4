// ReplyPool (server/batching/reply_pool.h) and the worker's use of it: every posted answer sent
// exactly once, by the helpers or by whoever calls AnswerOne, none lost at Drain or destruction;
// without helpers, Post answers on the spot; a worker with reply threads answers a launch's first
// request itself and spreads the others over threads, and Stop returns only once every answer is
// sent.
#include "server/batching/reply_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "base/mutex.h"
#include "server/batching/worker.h"
#include "tests/unit/fake_executor.h"

namespace normd {
namespace {

// Counts answers per item and remembers which threads sent them.
struct Answers {
  explicit Answers(int n) : per_item(static_cast<size_t>(n)) {}
  std::vector<std::atomic<int>> per_item;
  std::atomic<int> failed{0};
  normd::Mutex mu;
  std::set<std::thread::id> threads ABSL_GUARDED_BY(mu);

  int total() {
    int sum = 0;
    for (auto& n : per_item) sum += n.load();
    return sum;
  }
  size_t distinct_threads() {
    normd::MutexLock lock(&mu);
    return threads.size();
  }
};

std::unique_ptr<WorkItem> CountedItem(Answers& answers, int index, absl::Duration answer_takes) {
  auto item = std::make_unique<WorkItem>();
  item->request.dtype = DType::kFloat32;
  item->request.rows = 1;
  item->request.hidden = 256;
  item->enqueued = absl::Now();
  item->on_done = [&answers, index, answer_takes](const absl::Status& s, const LaunchReport&) {
    if (answer_takes > absl::ZeroDuration()) absl::SleepFor(answer_takes);
    if (!s.ok()) answers.failed.fetch_add(1);
    {
      normd::MutexLock lock(&answers.mu);
      answers.threads.insert(std::this_thread::get_id());
    }
    answers.per_item[static_cast<size_t>(index)].fetch_add(1);
  };
  return item;
}

std::vector<PendingAnswer> Batch(Answers& answers, int first, int n,
                                 absl::Duration answer_takes = {}) {
  std::vector<PendingAnswer> batch;
  for (int i = first; i < first + n; ++i) {
    batch.push_back(PendingAnswer{CountedItem(answers, i, answer_takes), absl::OkStatus(), {}});
  }
  return batch;
}

void ExpectEachAnsweredOnce(Answers& answers) {
  for (size_t i = 0; i < answers.per_item.size(); ++i) {
    ASSERT_EQ(answers.per_item[i].load(), 1) << "item " << i;
  }
  EXPECT_EQ(answers.failed.load(), 0);
}

TEST(ReplyPoolTest, WithoutHelpersPostAnswersOnTheCallingThread) {
  for (int threads : {0, 1}) {
    ReplyPool pool(threads);
    EXPECT_EQ(pool.helpers(), 0);
    Answers answers(10);
    std::vector<PendingAnswer> batch = Batch(answers, 0, 10);
    pool.Post(batch);
    EXPECT_TRUE(batch.empty());
    ExpectEachAnsweredOnce(answers);  // before Post returned
    EXPECT_EQ(answers.distinct_threads(), 1u);
    EXPECT_FALSE(pool.has_posted());
    EXPECT_FALSE(pool.AnswerOne());
  }
}

TEST(ReplyPoolTest, EveryPostedAnswerIsSentOnceWhileTheCallerHelps) {
  for (int threads : {2, 4}) {
    Answers answers(2000);
    {
      ReplyPool pool(threads);
      EXPECT_EQ(pool.helpers(), threads - 1);
      for (int launch = 0; launch < 100; ++launch) {
        std::vector<PendingAnswer> batch = Batch(answers, launch * 20, 20);
        pool.Post(batch);
        // The worker takes one now and then, as it does between launches.
        if (launch % 3 == 0) pool.AnswerOne();
      }
      pool.Drain();
      ExpectEachAnsweredOnce(answers);  // all sent once Drain returns
      EXPECT_FALSE(pool.has_posted());
    }
    EXPECT_EQ(answers.total(), 2000);
  }
}

TEST(ReplyPoolTest, SlowAnswersAreSpreadOverTheHelpers) {
  Answers answers(12);
  ReplyPool pool(4);
  // 12 answers of 20 ms each: one thread alone would take 240 ms.
  std::vector<PendingAnswer> batch = Batch(answers, 0, 12, absl::Milliseconds(20));
  const absl::Time start = absl::Now();
  pool.Post(batch);
  pool.Drain();
  const absl::Duration took = absl::Now() - start;
  ExpectEachAnsweredOnce(answers);
  EXPECT_GE(answers.distinct_threads(), 2u);
  EXPECT_LT(took, absl::Milliseconds(200)) << "the answers were not spread over threads";
}

TEST(ReplyPoolTest, DestructionSendsWhatIsStillPosted) {
  Answers answers(50);
  {
    ReplyPool pool(3);
    std::vector<PendingAnswer> batch = Batch(answers, 0, 50, absl::Microseconds(200));
    pool.Post(batch);
  }
  ExpectEachAnsweredOnce(answers);
}

TEST(WorkerReplyThreadsTest, ALaunchsAnswersAreSpreadAndAllSentBeforeStopReturns) {
  auto executor = std::make_unique<FakeExecutor>();
  FakeExecutor* fake = executor.get();
  fake->hold_first_ = true;
  Worker worker(std::move(executor), BatchLimits{}, /*metrics=*/nullptr, /*reply_threads=*/4);
  Answers answers(41);
  worker.Submit(CountedItem(answers, 0, absl::Milliseconds(10)));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (fake->started_.load() == 0 && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(1));
  ASSERT_EQ(fake->started_.load(), 1);
  // 40 requests queue behind the held launch and go out in one launch of 40 once it is released.
  for (int i = 1; i <= 40; ++i) worker.Submit(CountedItem(answers, i, absl::Milliseconds(10)));
  fake->release_.Notify();
  worker.Stop();  // 41 answers of 10 ms: sent, by several threads, before Stop returns
  ExpectEachAnsweredOnce(answers);
  EXPECT_EQ(fake->launch_sizes(), (std::vector<int>{1, 40}));
  EXPECT_GE(answers.distinct_threads(), 2u);
  EXPECT_EQ(worker.load_rows(), 0);
}

}  // namespace
}  // namespace normd
