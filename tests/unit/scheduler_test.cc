// Workers and the scheduler with a fake executor: immediate launch when idle, coalescing while
// busy, the queued-bytes bound, least-loaded dispatch, no overlap for small launches, waiting for
// company, busy polling, and draining on shutdown.
#include "server/scheduling/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "tests/unit/fake_executor.h"

namespace normd {
namespace {

struct Tracker {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> max_batch_requests{0};
};

std::unique_ptr<WorkItem> Item(Tracker& tracker, int64_t rows = 1) {
  auto item = std::make_unique<WorkItem>();
  item->request.dtype = DType::kFloat32;
  item->request.rows = rows;
  item->request.hidden = 256;  // 1 KiB a row
  item->enqueued = absl::Now();
  item->on_done = [&tracker](const absl::Status& s, const LaunchReport& r) {
    (s.ok() ? tracker.ok : tracker.failed).fetch_add(1);
    int prev = tracker.max_batch_requests.load();
    while (r.batch_requests > prev &&
           !tracker.max_batch_requests.compare_exchange_weak(prev, r.batch_requests)) {
    }
  };
  return item;
}

void WaitFor(const std::function<bool()>& condition) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!condition() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_TRUE(condition());
}

// A scheduler over one worker whose fake executor holds its first launch until released.
struct HeldFirstLaunch {
  explicit HeldFirstLaunch(const BatchLimits& limits)
      : scheduler(OneWorker(limits, &fake), int64_t{1} << 30) {}

  // A lone request goes at once and is held while `queued` more queue behind it; released, they go
  // out together as the second launch. Returns once all are answered.
  void LoneThenQueued(int queued) {
    ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
    WaitFor([&] { return fake->started_.load() == 1; });  // went alone, without waiting for company
    for (int i = 0; i < queued; ++i) ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
    fake->release_.Notify();
    WaitFor([&] { return tracker.ok.load() == 1 + queued; });
  }

  static std::vector<std::unique_ptr<Worker>> OneWorker(const BatchLimits& limits,
                                                        FakeExecutor** fake) {
    auto executor = std::make_unique<FakeExecutor>();
    executor->hold_first_ = true;
    *fake = executor.get();
    std::vector<std::unique_ptr<Worker>> workers;
    workers.push_back(std::make_unique<Worker>(std::move(executor), limits));
    return workers;
  }

  FakeExecutor* fake = nullptr;  // owned by the worker
  Tracker tracker;               // outlives the scheduler, whose answers it counts
  Scheduler scheduler;
};

TEST(SchedulerTest, IdleWorkerLaunchesAtOnceAndBusyWorkerCoalesces) {
  HeldFirstLaunch held(BatchLimits{});
  held.LoneThenQueued(10);
  EXPECT_EQ(held.fake->launch_sizes(), (std::vector<int>{1, 10}));
  EXPECT_EQ(held.tracker.max_batch_requests.load(), 10);
  held.scheduler.Shutdown();
}

// A two-phase executor (like CUDA's): Start enqueues, Finish completes; logs the calls in order.
// The first Start is held until the test releases it, so that requests queue up behind it.
class TwoPhaseExecutor : public BatchExecutor {
 public:
  absl::Status Start(const Launch& launch, StageTimes& /*stages*/) override {
    Log(absl::StrCat("start ", launch.items.size()));
    if (starts_++ == 0) release_.WaitForNotification();
    return absl::OkStatus();
  }
  absl::Status Finish(const Launch& launch, StageTimes& /*stages*/) override {
    Log(absl::StrCat("finish ", launch.items.size()));
    return absl::OkStatus();
  }
  int max_in_flight() const override { return 2; }
  std::string name() const override { return "two-phase"; }
  std::string device() const override { return "fake"; }
  std::vector<std::string> calls() {
    normd::MutexLock lock(&mu_);
    return calls_;
  }
  normd::Notification release_;
  std::atomic<int> starts_{0};

 private:
  void Log(std::string call) {
    normd::MutexLock lock(&mu_);
    calls_.push_back(std::move(call));
  }
  normd::Mutex mu_;
  std::vector<std::string> calls_;
};

// Runs one held launch of 1 request, queues 10 more (1 KiB each) behind it, releases it, and
// returns the executor's calls.
std::vector<std::string> CallsWithOverlapMinBytes(int64_t overlap_min_bytes) {
  auto executor = std::make_unique<TwoPhaseExecutor>();
  TwoPhaseExecutor* fake = executor.get();
  BatchLimits limits;
  limits.overlap_min_bytes = overlap_min_bytes;
  std::vector<std::unique_ptr<Worker>> workers;
  workers.push_back(std::make_unique<Worker>(std::move(executor), limits));
  Scheduler scheduler(std::move(workers), int64_t{1} << 30);
  Tracker tracker;
  EXPECT_TRUE(scheduler.Submit(Item(tracker)).ok());
  WaitFor([&] { return fake->starts_.load() == 1; });
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(scheduler.Submit(Item(tracker)).ok());
  fake->release_.Notify();
  WaitFor([&] { return tracker.ok.load() == 11; });
  scheduler.Shutdown();
  return fake->calls();
}

TEST(SchedulerTest, SmallLaunchesWaitForTheOneInFlightInsteadOfOverlappingIt) {
  // 10 KiB queued, below the 1 MiB threshold: the first launch finishes before the next starts.
  EXPECT_EQ(CallsWithOverlapMinBytes(int64_t{1} << 20),
            (std::vector<std::string>{"start 1", "finish 1", "start 10", "finish 10"}));
  // Threshold 10 KiB, met: the second launch is started while the first is in flight.
  EXPECT_EQ(CallsWithOverlapMinBytes(10 * 1024),
            (std::vector<std::string>{"start 1", "start 10", "finish 1", "finish 10"}));
}

TEST(SchedulerTest, CompanyWaitGathersAsManyRequestsAsTheLastLaunchCarried) {
  BatchLimits limits;
  limits.company_wait = absl::Seconds(1);
  HeldFirstLaunch held(limits);
  Scheduler& scheduler = held.scheduler;
  Tracker& tracker = held.tracker;
  FakeExecutor* fake = held.fake;
  // One request alone goes at once; four queue behind it and go together: the worker now expects
  // four.
  held.LoneThenQueued(4);
  // Two of the four come back: they wait for the other two, which complete the launch at once.
  const absl::Time two_sent = absl::Now();
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(fake->started_.load(), 2) << "a launch of two went without waiting for company";
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  WaitFor([&] { return tracker.ok.load() == 9; });
  EXPECT_LT(absl::Now() - two_sent, absl::Milliseconds(900))
      << "the full launch waited out company_wait";
  // One comes back alone: it waits company_wait, no longer, and then the worker expects one again.
  const absl::Time one_sent = absl::Now();
  ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  WaitFor([&] { return tracker.ok.load() == 10; });
  EXPECT_GE(absl::Now() - one_sent, absl::Seconds(1));
  const absl::Time next_sent = absl::Now();
  ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  WaitFor([&] { return tracker.ok.load() == 11; });
  EXPECT_LT(absl::Now() - next_sent, absl::Milliseconds(900)) << "a lone client waited for company";
  EXPECT_EQ(fake->launch_sizes(), (std::vector<int>{1, 4, 4, 1, 1}));
  scheduler.Shutdown();
}

TEST(SchedulerTest, CompanyMemoryKeepsAShortLaunchFromLoweringTheExpectation) {
  BatchLimits limits;
  limits.company_wait = absl::Milliseconds(300);
  limits.company_memory = 2;
  limits.company_max_requests = 3;
  HeldFirstLaunch held(limits);
  Scheduler& scheduler = held.scheduler;
  Tracker& tracker = held.tracker;
  FakeExecutor* fake = held.fake;
  // A lone request, then five queued behind it: one launch of five, so the worker expects three
  // (the cap).
  held.LoneThenQueued(5);
  // Three come back one by one: they go together as soon as the third arrives.
  const absl::Time three_sent = absl::Now();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  WaitFor([&] { return tracker.ok.load() == 9; });
  EXPECT_LT(absl::Now() - three_sent, absl::Milliseconds(250))
      << "three of three waited out company_wait";
  // One comes alone and waits out company_wait; the launch of three before it is still remembered,
  // so the next lone one waits too. Then the memory holds two launches of one: a lone request goes
  // at once.
  for (int round = 0; round < 2; ++round) {
    const absl::Time one_sent = absl::Now();
    ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
    WaitFor([&] { return tracker.ok.load() == 10 + round; });
    EXPECT_GE(absl::Now() - one_sent, absl::Milliseconds(300)) << "round " << round;
  }
  const absl::Time last_sent = absl::Now();
  ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  WaitFor([&] { return tracker.ok.load() == 12; });
  EXPECT_LT(absl::Now() - last_sent, absl::Milliseconds(250)) << "a lone client waited for company";
  EXPECT_EQ(fake->launch_sizes(), (std::vector<int>{1, 5, 3, 1, 1, 1}));
  scheduler.Shutdown();
}

// Records the thread that ran each launch; allows the submitting thread to run one (as CPU and CUDA
// do).
class ThreadRecordingExecutor : public BatchExecutor {
 public:
  absl::Status Start(const Launch& /*launch*/, StageTimes& /*stages*/) override {
    normd::MutexLock lock(&mu_);
    last_thread_ = std::this_thread::get_id();
    return absl::OkStatus();
  }
  bool runs_on_caller_thread() const override { return true; }
  std::string name() const override { return "thread-recording"; }
  std::string device() const override { return "fake"; }
  std::thread::id last_thread() {
    normd::MutexLock lock(&mu_);
    return last_thread_;
  }

 private:
  normd::Mutex mu_;
  std::thread::id last_thread_;
};

// Submits one request that may run on this thread, waits for its answer, and says whether it did.
bool RanOnThisThread(Scheduler& scheduler, ThreadRecordingExecutor* executor, Tracker& tracker,
                     int64_t rows = 1) {
  const int answered = tracker.ok.load();
  std::unique_ptr<WorkItem> item = Item(tracker, rows);
  item->may_run_on_caller_thread = true;
  EXPECT_TRUE(scheduler.Submit(std::move(item)).ok());
  WaitFor([&] { return tracker.ok.load() == answered + 1; });
  return executor->last_thread() == std::this_thread::get_id();
}

TEST(SchedulerTest, BusyPollingHandsSmallRequestsToTheWorkerThread) {
  for (const absl::Duration busy_poll : {absl::ZeroDuration(), absl::Seconds(30)}) {
    SCOPED_TRACE(absl::StrCat("busy_poll ", absl::FormatDuration(busy_poll)));
    auto executor = std::make_unique<ThreadRecordingExecutor>();
    ThreadRecordingExecutor* recorder = executor.get();
    BatchLimits limits;
    limits.busy_poll = busy_poll;
    std::vector<std::unique_ptr<Worker>> workers;
    workers.push_back(std::make_unique<Worker>(std::move(executor), limits));
    Scheduler scheduler(std::move(workers), int64_t{1} << 30);
    Tracker tracker;
    int on_this_thread = 0;
    for (int i = 0; i < 20; ++i) {
      on_this_thread += RanOnThisThread(scheduler, recorder, tracker) ? 1 : 0;
      absl::SleepFor(
          absl::Milliseconds(2));  // the worker thread goes idle (or polls) between requests
    }
    if (busy_poll == absl::ZeroDuration()) {
      EXPECT_GT(on_this_thread, 0)
          << "an idle worker never let the submitting thread run a request";
    } else {
      EXPECT_EQ(on_this_thread, 0)
          << "a small request ran on the submitting thread while the worker polled";
    }
    // Requests over kBusyPollHandOffMaxBytes (100 rows of 1 KiB) run where they were parsed
    // whenever the worker is idle, polling or not. (It may still be finishing the last launch:
    // hence "eventually".)
    int large_sent = 0, large_on_this_thread = 0;
    while (large_on_this_thread < 5 && large_sent < 100) {
      large_on_this_thread += RanOnThisThread(scheduler, recorder, tracker, /*rows=*/100) ? 1 : 0;
      ++large_sent;
      absl::SleepFor(absl::Milliseconds(2));
    }
    EXPECT_EQ(large_on_this_thread, 5) << "large requests were handed to the worker thread";
    // Stopping ends a poll at once rather than after its 30 s.
    const absl::Time stop_at = absl::Now();
    scheduler.Shutdown();
    EXPECT_LT(absl::Now() - stop_at, absl::Seconds(10));
    EXPECT_EQ(tracker.ok.load(), 20 + large_sent);
  }
}

TEST(SchedulerTest, QueuedBytesAreBoundedAndFreedOnCompletion) {
  auto executor = std::make_unique<FakeExecutor>();
  FakeExecutor* fake = executor.get();
  fake->hold_first_ = true;
  std::vector<std::unique_ptr<Worker>> workers;
  workers.push_back(std::make_unique<Worker>(std::move(executor), BatchLimits{}));
  Scheduler scheduler(std::move(workers), /*max_queue_bytes=*/4 * 1024);
  Tracker tracker;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  EXPECT_EQ(scheduler.queued_bytes(), 4 * 1024);
  const absl::Status refused = scheduler.Submit(Item(tracker));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("--max-queue-bytes"), std::string::npos);
  fake->release_.Notify();
  WaitFor([&] { return tracker.ok.load() == 4; });
  WaitFor([&] { return scheduler.queued_bytes() == 0; });
  EXPECT_TRUE(scheduler.Submit(Item(tracker)).ok());  // room again
  scheduler.Shutdown();
  EXPECT_EQ(tracker.ok.load(), 5);
  EXPECT_EQ(tracker.failed.load(), 0);
}

TEST(SchedulerTest, AdmittedMemoryIsBoundedAndHeldUntilReleased) {
  auto executor = std::make_unique<FakeExecutor>();
  FakeExecutor* fake = executor.get();
  fake->hold_first_ = true;
  std::vector<std::unique_ptr<Worker>> workers;
  workers.push_back(std::make_unique<Worker>(std::move(executor), BatchLimits{}));
  Scheduler scheduler(std::move(workers), /*max_queue_bytes=*/int64_t{1} << 30, nullptr, 0,
                      /*max_admitted_memory_bytes=*/10 * 1024);
  Tracker tracker;
  auto charged = [&](bool hold) {
    std::unique_ptr<WorkItem> item = Item(tracker);
    item->memory_bytes = 4 * 1024;  // its message and its response
    item->hold_bytes_until_released = hold;
    return item;
  };
  ASSERT_TRUE(scheduler.Submit(charged(/*hold=*/true)).ok());
  ASSERT_TRUE(scheduler.Submit(charged(/*hold=*/false)).ok());
  EXPECT_EQ(scheduler.admitted_memory_bytes(), 8 * 1024);
  const absl::Status refused = scheduler.Submit(charged(false));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("--max-memory-bytes"), std::string::npos) << refused;
  fake->release_.Notify();
  WaitFor([&] { return tracker.ok.load() == 2; });
  // Answered: the released item's charge is gone, the held one's stays until its response is sent.
  WaitFor([&] { return scheduler.admitted_memory_bytes() == 4 * 1024; });
  scheduler.ReleaseHeldBytes(1024, 4 * 1024);
  EXPECT_EQ(scheduler.admitted_memory_bytes(), 0);
  EXPECT_EQ(scheduler.queued_bytes(), 0);
  scheduler.Shutdown();
}

// `count` workers whose executors hold their first launch until released; `fakes` gets the
// executors.
std::vector<std::unique_ptr<Worker>> WorkersHoldingTheirFirstLaunch(
    int count, std::vector<FakeExecutor*>& fakes) {
  std::vector<std::unique_ptr<Worker>> workers;
  for (int w = 0; w < count; ++w) {
    auto executor = std::make_unique<FakeExecutor>();
    executor->hold_first_ = true;
    fakes.push_back(executor.get());
    workers.push_back(std::make_unique<Worker>(std::move(executor), BatchLimits{}));
  }
  return workers;
}

TEST(SchedulerTest, WorkGoesToTheLeastLoadedWorker) {
  std::vector<FakeExecutor*> fakes;
  std::vector<std::unique_ptr<Worker>> workers = WorkersHoldingTheirFirstLaunch(2, fakes);
  Scheduler scheduler(std::move(workers), int64_t{1} << 30);
  Tracker tracker;
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 100)).ok());
  ASSERT_TRUE(
      scheduler.Submit(Item(tracker, 1)).ok());  // worker 0 has 100 rows: this goes to worker 1
  WaitFor([&] { return fakes[0]->started_.load() == 1 && fakes[1]->started_.load() == 1; });
  for (auto* f : fakes) f->release_.Notify();
  scheduler.Shutdown();
  EXPECT_EQ(tracker.ok.load(), 2);
}

TEST(SchedulerTest, SmallRequestsFillTheFirstWorkerBeforeTheNext) {
  std::vector<FakeExecutor*> fakes;
  std::vector<std::unique_ptr<Worker>> workers = WorkersHoldingTheirFirstLaunch(2, fakes);
  Scheduler scheduler(std::move(workers), int64_t{1} << 30, nullptr, /*fill_first_rows=*/256);
  Tracker tracker;
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 1)).ok());  // worker 0, held in its first launch
  WaitFor([&] { return fakes[0]->started_.load() == 1; });
  // Worker 0 holds 1 row, under 256: these two queue behind it although worker 1 is idle.
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 1)).ok());
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 300)).ok());
  // Worker 0 now holds 302 rows: the next goes to the least loaded worker.
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 1)).ok());
  WaitFor([&] { return fakes[1]->started_.load() == 1; });
  for (auto* f : fakes) f->release_.Notify();
  scheduler.Shutdown();
  EXPECT_EQ(tracker.ok.load(), 4);
  EXPECT_EQ(fakes[0]->launch_sizes(), (std::vector<int>{1, 2}));
  EXPECT_EQ(fakes[1]->launch_sizes(), (std::vector<int>{1}));
}

TEST(SchedulerTest, ShutdownAnswersEveryAcceptedRequestThenRefusesNewOnes) {
  auto executor = std::make_unique<FakeExecutor>();
  std::vector<std::unique_ptr<Worker>> workers;
  workers.push_back(std::make_unique<Worker>(std::move(executor), BatchLimits{}));
  Scheduler scheduler(std::move(workers), int64_t{1} << 30);
  Tracker tracker;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(scheduler.Submit(Item(tracker)).ok());
  scheduler.Shutdown();
  EXPECT_EQ(tracker.ok.load(), 100);
  EXPECT_EQ(scheduler.Submit(Item(tracker)).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(scheduler.answered_ok(), 100);
}

}  // namespace
}  // namespace normd
