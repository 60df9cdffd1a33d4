// ReplyPool (server/batching/reply_pool.h) and the worker's use of it: every posted answer sent
// exactly once, by the helpers or by whoever calls AnswerOne, none lost at Drain or destruction;
// without helpers, Post answers on the spot; a worker with reply threads answers a launch's first
// request itself and spreads the others over threads, and Stop returns only once every answer is
// sent. Which threads answer at once is seen by holding answers until enough threads are inside
// one (Rendezvous), not by timing them.
#include "server/batching/reply_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "base/mutex.h"
#include "server/batching/worker.h"
#include "tests/unit/fake_executor.h"
#include "tests/wait_until.h"

namespace normd {
namespace {

using ::normd::testing::kGenerousWait;
using ::normd::testing::WaitUntil;

// Holds each answer that enters it until `threads` answers are inside at once (or, should that
// never happen, until kGenerousWait has passed: then `gave_up` says so); from then on lets every
// answer through at once.
class Rendezvous {
 public:
  explicit Rendezvous(int threads) : threads_(threads) {}

  void Enter() {
    normd::MutexLock lock(&mu_);
    ++inside_;
    most_inside_ = std::max(most_inside_, inside_);
    if (!mu_.AwaitWithDeadline(absl::Condition(this, &Rendezvous::Met),
                               absl::Now() + kGenerousWait))
      gave_up_ = true;
    --inside_;
  }
  int most_inside() {
    normd::MutexLock lock(&mu_);
    return most_inside_;
  }
  bool gave_up() {
    normd::MutexLock lock(&mu_);
    return gave_up_;
  }

 private:
  bool Met() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return most_inside_ >= threads_ || gave_up_;
  }

  const int threads_;
  normd::Mutex mu_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
  int most_inside_ ABSL_GUARDED_BY(mu_) = 0;
  bool gave_up_ ABSL_GUARDED_BY(mu_) = false;
};

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

// An item whose answer counts into `answers`, after running `while_answering` (if set) on the
// answering thread.
std::unique_ptr<WorkItem> CountedItem(Answers& answers, int index,
                                      std::function<void()> while_answering = {}) {
  auto item = std::make_unique<WorkItem>();
  item->request.dtype = DType::kFloat32;
  item->request.rows = 1;
  item->request.hidden = 256;
  item->enqueued = absl::Now();
  item->on_done = [&answers, index, while_answering = std::move(while_answering)](
                      const absl::Status& s, const LaunchReport&) {
    if (while_answering) while_answering();
    if (!s.ok()) answers.failed.fetch_add(1);
    {
      normd::MutexLock lock(&answers.mu);
      answers.threads.insert(std::this_thread::get_id());
    }
    answers.per_item[static_cast<size_t>(index)].fetch_add(1);
  };
  return item;
}

// Answers `first` to `first + n - 1`, each running `while_answering(index)` (if set) as it is sent.
std::vector<PendingAnswer> Batch(Answers& answers, int first, int n,
                                 const std::function<void(int)>& while_answering = {}) {
  std::vector<PendingAnswer> batch;
  for (int i = first; i < first + n; ++i) {
    std::function<void()> hook;
    if (while_answering) hook = [while_answering, i] { while_answering(i); };
    batch.push_back(PendingAnswer{CountedItem(answers, i, std::move(hook)), absl::OkStatus(), {}});
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
  // Each answer is held until as many answers as there are helpers are being sent at once: one
  // thread taking them one after another would never get there.
  Rendezvous rendezvous(pool.helpers());
  std::vector<PendingAnswer> batch =
      Batch(answers, 0, 12, [&](int /*index*/) { rendezvous.Enter(); });
  pool.Post(batch);
  pool.Drain();
  ExpectEachAnsweredOnce(answers);
  EXPECT_GE(rendezvous.most_inside(), pool.helpers()) << "the answers were not spread over threads";
  EXPECT_FALSE(rendezvous.gave_up()) << "the answers were not spread over threads";
  EXPECT_GE(answers.distinct_threads(), static_cast<size_t>(pool.helpers()));
}

TEST(ReplyPoolTest, DestructionSendsWhatIsStillPosted) {
  Answers answers(50);
  std::unique_ptr<ReplyPool> pool = std::make_unique<ReplyPool>(3);
  // Each of the two helpers takes one of the first two answers and is held in it until another
  // answer is sent, which only the destructor can do then: 48 answers are still posted when it
  // starts.
  normd::Notification another_sent;
  std::atomic<bool> notified{false};
  std::atomic<int> helpers_held{0};
  std::vector<PendingAnswer> batch = Batch(answers, 0, 50, [&](int index) {
    if (index >= 2) {
      if (!notified.exchange(true)) another_sent.Notify();
      return;
    }
    helpers_held.fetch_add(1);
    another_sent.WaitForNotificationWithTimeout(kGenerousWait);
  });
  pool->Post(batch);
  ASSERT_TRUE(WaitUntil([&] { return helpers_held.load() == 2; }));
  EXPECT_TRUE(pool->has_posted());
  pool.reset();
  ExpectEachAnsweredOnce(answers);
}

TEST(WorkerReplyThreadsTest, ALaunchsAnswersAreSpreadAndAllSentBeforeStopReturns) {
  auto executor = std::make_unique<FakeExecutor>();
  FakeExecutor* fake = executor.get();
  fake->hold_first_ = true;
  Worker worker(std::move(executor), BatchLimits{}, /*metrics=*/nullptr, /*reply_threads=*/4);
  Answers answers(41);
  worker.Submit(CountedItem(answers, 0));
  ASSERT_TRUE(WaitUntil([&] { return fake->started_.load() == 1; }));
  // 40 requests queue behind the held launch and go out in one launch of 40 once it is released.
  // Each of their answers is held until four are being sent at once: the worker's and its three
  // reply threads'.
  Rendezvous rendezvous(4);
  for (int i = 1; i <= 40; ++i) worker.Submit(CountedItem(answers, i, [&] { rendezvous.Enter(); }));
  fake->release_.Notify();
  worker.Stop();  // the 41 answers are sent, by several threads, before Stop returns
  ExpectEachAnsweredOnce(answers);
  EXPECT_EQ(fake->launch_sizes(), (std::vector<int>{1, 40}));
  EXPECT_EQ(rendezvous.most_inside(), 4) << "a launch's answers were not spread over the threads";
  EXPECT_FALSE(rendezvous.gave_up()) << "a launch's answers were not spread over the threads";
  EXPECT_GE(answers.distinct_threads(), 4u);
  EXPECT_EQ(worker.load_rows(), 0);
}

}  // namespace
}  // namespace normd
