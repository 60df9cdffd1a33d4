// Workers and the scheduler with a fake executor: immediate launch when idle, coalescing while
// busy, the queued-bytes bound, least-loaded dispatch, no overlap for small launches, waiting for
// company, busy polling, and draining on shutdown. The company waits and the busy polls run on a
// FakeClock: a test sees the deadline a worker waits for and moves the clock to it, so that nothing
// here depends on how fast the machine is.
#include "server/scheduling/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/mutex.h"
#include "tests/unit/fake_clock.h"
#include "tests/unit/fake_executor.h"
#include "tests/wait_until.h"

namespace normd {
namespace {

using ::normd::testing::kGenerousWait;
using ::normd::testing::WaitUntil;

struct Tracker {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> max_batch_requests{0};
  // Runs on the answering thread after each answer is counted, with the count; set before the
  // requests it concerns are submitted. A test holds a worker there to queue requests behind it.
  std::function<void(int answered)> after_answer;

  // What the `n`th answer (from 1, in the order answered) learnt about its launch.
  LaunchReport report(int n) {
    normd::MutexLock lock(&mu);
    return reports.at(static_cast<size_t>(n - 1));
  }
  void Record(const absl::Status& s, const LaunchReport& r) {
    int answered;
    {
      normd::MutexLock lock(&mu);
      reports.push_back(r);
      answered = static_cast<int>(reports.size());
    }
    (s.ok() ? ok : failed).fetch_add(1);
    int prev = max_batch_requests.load();
    while (r.batch_requests > prev &&
           !max_batch_requests.compare_exchange_weak(prev, r.batch_requests)) {
    }
    if (after_answer) after_answer(answered);
  }

  normd::Mutex mu;
  std::vector<LaunchReport> reports ABSL_GUARDED_BY(mu);
};

// A 1 KiB request answered into `tracker`, enqueued now on `clock` (the clock of the worker it goes
// to).
std::unique_ptr<WorkItem> Item(Tracker& tracker, int64_t rows = 1,
                               Clock& clock = RealClock::Get()) {
  auto item = std::make_unique<WorkItem>();
  item->request.dtype = DType::kFloat32;
  item->request.rows = rows;
  item->request.hidden = 256;  // 1 KiB a row
  item->enqueued = clock.Now();
  item->on_done = [&tracker](const absl::Status& s, const LaunchReport& r) {
    tracker.Record(s, r);
  };
  return item;
}

// A scheduler over one worker on a FakeClock whose fake executor holds its first launch until
// released.
struct HeldFirstLaunch {
  explicit HeldFirstLaunch(const BatchLimits& limits)
      : scheduler(OneWorker(limits, clock, &fake), int64_t{1} << 30) {}

  absl::Status Submit() { return scheduler.Submit(Item(tracker, 1, clock)); }

  // A lone request goes at once and is held while `queued` more queue behind it; released, they go
  // out together as the second launch. Returns once all are answered.
  void LoneThenQueued(int queued) {
    ASSERT_TRUE(Submit().ok());
    // It went alone while the clock stood still: without waiting for company.
    ASSERT_TRUE(WaitUntil([&] { return fake->started_.load() == 1; }));
    for (int i = 0; i < queued; ++i) ASSERT_TRUE(Submit().ok());
    fake->release_.Notify();
    ASSERT_TRUE(WaitUntil([&] { return tracker.ok.load() == 1 + queued; }));
  }

  // A lone request waits for company until `company_wait` after it came (the worker waits for
  // that deadline), and goes once the clock gets there: its queue wait is exactly that.
  void LoneRequestWaitsOutCompanyWait(absl::Duration company_wait) {
    const int answered = tracker.ok.load();
    const absl::Time sent = clock.Now();
    ASSERT_TRUE(Submit().ok());
    ASSERT_TRUE(clock.WaitForWaiter(sent + company_wait, kGenerousWait))
        << "a lone request did not wait for company until company_wait after it came";
    clock.Advance(company_wait);
    ASSERT_TRUE(WaitUntil([&] { return tracker.ok.load() == answered + 1; }));
    EXPECT_EQ(tracker.report(answered + 1).batch_requests, 1);
    EXPECT_EQ(tracker.report(answered + 1).queue_wait, company_wait);
  }

  // A lone request goes at once: answered while the clock stands still, with no wait begun.
  void LoneRequestGoesAtOnce() {
    const int answered = tracker.ok.load();
    const int waits_before = clock.waits_begun();
    ASSERT_TRUE(Submit().ok());
    ASSERT_TRUE(WaitUntil([&] { return tracker.ok.load() == answered + 1; }))
        << "a lone client waited for company";
    EXPECT_EQ(tracker.report(answered + 1).queue_wait, absl::ZeroDuration());
    EXPECT_EQ(clock.waits_begun(), waits_before) << "a lone client waited for company";
  }

  static std::vector<std::unique_ptr<Worker>> OneWorker(const BatchLimits& limits, Clock& clock,
                                                        FakeExecutor** fake) {
    auto executor = std::make_unique<FakeExecutor>();
    executor->hold_first_ = true;
    *fake = executor.get();
    std::vector<std::unique_ptr<Worker>> workers;
    workers.push_back(std::make_unique<Worker>(std::move(executor), limits, /*metrics=*/nullptr,
                                               /*reply_threads=*/1, clock));
    return workers;
  }

  FakeClock clock;               // outlives the worker, which waits on it
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
  EXPECT_TRUE(WaitUntil([&] { return fake->starts_.load() == 1; }));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(scheduler.Submit(Item(tracker)).ok());
  fake->release_.Notify();
  EXPECT_TRUE(WaitUntil([&] { return tracker.ok.load() == 11; }));
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
  Tracker& tracker = held.tracker;
  FakeClock& clock = held.clock;
  const absl::Time t0 = clock.Now();
  // The worker is held in its answer to the last request of the launch of four (below) until the
  // next two are queued, so that it finds them both there when it looks again.
  normd::Notification two_queued;
  tracker.after_answer = [&](int answered) {
    if (answered == 5) two_queued.WaitForNotification();
  };
  // One request alone goes at once; four queue behind it and go together: the worker now expects
  // four. (Returns once the fifth answer is counted, while the worker is held in it.)
  held.LoneThenQueued(4);
  // Two of the four come back: they wait for the other two, until company_wait has passed since
  // the first arrived, and nothing is launched meanwhile.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(held.Submit().ok());
  two_queued.Notify();
  ASSERT_TRUE(clock.WaitForWaiter(t0 + limits.company_wait, kGenerousWait))
      << "two of four did not wait for company, until company_wait after the first came";
  EXPECT_EQ(held.fake->started_.load(), 2) << "a launch of two went without waiting for company";
  // The other two complete the launch, which goes at once: the clock has not moved.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(held.Submit().ok());
  ASSERT_TRUE(WaitUntil([&] { return tracker.ok.load() == 9; }));
  for (int n = 6; n <= 9; ++n) {
    EXPECT_EQ(tracker.report(n).batch_requests, 4) << n;
    EXPECT_EQ(tracker.report(n).queue_wait, absl::ZeroDuration()) << "answer " << n;
  }
  // One comes back alone: it waits company_wait, no longer, and then the worker expects one again:
  // the next lone request goes at once.
  held.LoneRequestWaitsOutCompanyWait(limits.company_wait);
  held.LoneRequestGoesAtOnce();
  EXPECT_EQ(held.fake->launch_sizes(), (std::vector<int>{1, 4, 4, 1, 1}));
  held.scheduler.Shutdown();
}

TEST(SchedulerTest, CompanyMemoryKeepsAShortLaunchFromLoweringTheExpectation) {
  BatchLimits limits;
  limits.company_wait = absl::Milliseconds(300);
  limits.company_memory = 2;
  limits.company_max_requests = 3;
  HeldFirstLaunch held(limits);
  Tracker& tracker = held.tracker;
  FakeClock& clock = held.clock;
  const absl::Time t0 = clock.Now();
  // A lone request, then five queued behind it: one launch of five, so the worker expects three
  // (the cap).
  held.LoneThenQueued(5);
  // Three come back one by one: the first waits for company, and they go together, with the clock
  // standing still, as soon as the third arrives.
  ASSERT_TRUE(held.Submit().ok());
  ASSERT_TRUE(clock.WaitForWaiter(t0 + limits.company_wait, kGenerousWait))
      << "one of three did not wait for company, until company_wait after it came";
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(held.Submit().ok());
  ASSERT_TRUE(WaitUntil([&] { return tracker.ok.load() == 9; }));
  for (int n = 7; n <= 9; ++n) {
    EXPECT_EQ(tracker.report(n).batch_requests, 3) << n;
    EXPECT_EQ(tracker.report(n).queue_wait, absl::ZeroDuration())
        << "three of three waited out company_wait";
  }
  // One comes alone and waits out company_wait; the launch of three before it is still remembered,
  // so the next lone one waits too. Then the memory holds two launches of one: a lone request goes
  // at once.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    held.LoneRequestWaitsOutCompanyWait(limits.company_wait);
  }
  held.LoneRequestGoesAtOnce();
  EXPECT_EQ(held.fake->launch_sizes(), (std::vector<int>{1, 5, 3, 1, 1, 1}));
  held.scheduler.Shutdown();
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
  EXPECT_TRUE(WaitUntil([&] { return tracker.ok.load() == answered + 1; }));
  return executor->last_thread() == std::this_thread::get_id();
}

TEST(SchedulerTest, BusyPollingHandsSmallRequestsToTheWorkerThread) {
  for (const absl::Duration busy_poll : {absl::ZeroDuration(), absl::Seconds(30)}) {
    SCOPED_TRACE(absl::StrCat("busy_poll ", absl::FormatDuration(busy_poll)));
    // It stands still: a poll ends only when a request comes or the worker stops, never by itself.
    FakeClock clock;
    auto executor = std::make_unique<ThreadRecordingExecutor>();
    ThreadRecordingExecutor* recorder = executor.get();
    BatchLimits limits;
    limits.busy_poll = busy_poll;
    std::vector<std::unique_ptr<Worker>> workers;
    workers.push_back(std::make_unique<Worker>(std::move(executor), limits, /*metrics=*/nullptr,
                                               /*reply_threads=*/1, clock));
    Worker& worker = *workers.front();
    Scheduler scheduler(std::move(workers), int64_t{1} << 30);
    Tracker tracker;
    // Each request comes once the worker thread waits for work (asleep, or polling), as a client's
    // that pauses between calls.
    int on_this_thread = 0;
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(WaitUntil([&] { return worker.idle(); }));
      on_this_thread += RanOnThisThread(scheduler, recorder, tracker) ? 1 : 0;
    }
    if (busy_poll == absl::ZeroDuration()) {
      EXPECT_EQ(on_this_thread, 20) << "an idle worker took a request from the submitting thread";
    } else {
      EXPECT_EQ(on_this_thread, 0)
          << "a small request ran on the submitting thread while the worker polled";
    }
    // Requests over kBusyPollHandOffMaxBytes (100 rows of 1 KiB) run where they were parsed
    // whenever the worker is idle, polling or not.
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(WaitUntil([&] { return worker.idle(); }));
      EXPECT_TRUE(RanOnThisThread(scheduler, recorder, tracker, /*rows=*/100))
          << "a large request was handed to the worker thread";
    }
    // Stopping ends a poll at once rather than when its 30 s have passed, which on this clock they
    // never do. Should it not, the clock is moved on so that the worker can still be joined.
    normd::Notification stopped;
    std::thread stopper([&] {
      scheduler.Shutdown();
      stopped.Notify();
    });
    EXPECT_TRUE(stopped.WaitForNotificationWithTimeout(kGenerousWait))
        << "stopping did not end the busy poll";
    if (!stopped.HasBeenNotified()) clock.Advance(busy_poll);
    stopper.join();
    EXPECT_EQ(tracker.ok.load(), 25);
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
  ASSERT_TRUE(WaitUntil([&] { return tracker.ok.load() == 4; }));
  ASSERT_TRUE(WaitUntil([&] { return scheduler.queued_bytes() == 0; }));
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
  ASSERT_TRUE(WaitUntil([&] { return tracker.ok.load() == 2; }));
  // Answered: the released item's charge is gone, the held one's stays until its response is sent.
  ASSERT_TRUE(WaitUntil([&] { return scheduler.admitted_memory_bytes() == 4 * 1024; }));
  scheduler.ReleaseHeldBytes(1024, 4 * 1024);
  EXPECT_EQ(scheduler.admitted_memory_bytes(), 0);
  EXPECT_EQ(scheduler.queued_bytes(), 0);
  scheduler.Shutdown();
}

// Memory is short (TakeMemoryPressure, which stalled streams are cancelled sooner by) after any
// refusal for memory: Submit's for the admitted bytes, and a call's reservation that cannot grow
// into its real charge. Taking it resets it; a call waiting for room keeps it set.
TEST(SchedulerTest, RefusalsForMemoryAndWaitingCallsMeanMemoryIsShort) {
  std::vector<std::unique_ptr<Worker>> workers;
  workers.push_back(std::make_unique<Worker>(std::make_unique<FakeExecutor>(), BatchLimits{}));
  Scheduler scheduler(std::move(workers), /*max_queue_bytes=*/int64_t{1} << 30, nullptr, 0,
                      /*max_admitted_memory_bytes=*/10 * 1024);
  EXPECT_FALSE(scheduler.TakeMemoryPressure());
  ASSERT_TRUE(scheduler.memory_gate().TryCharge(8 * 1024).ok());  // another call's charge
  // A call reserved 1 KiB for its read; its message and response need 4 KiB: no room.
  ASSERT_TRUE(scheduler.memory_gate().TryCharge(1024).ok());
  const absl::Status refused = scheduler.ResizeCharge(1024, 4 * 1024);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_TRUE(scheduler.TakeMemoryPressure());
  EXPECT_FALSE(scheduler.TakeMemoryPressure()) << "taking it did not reset it";
  ASSERT_TRUE(scheduler.ResizeCharge(1024, 2 * 1024).ok());  // growing within the room
  EXPECT_FALSE(scheduler.TakeMemoryPressure());

  Tracker tracker;
  std::unique_ptr<WorkItem> item = Item(tracker);
  item->memory_bytes = 4 * 1024;
  EXPECT_EQ(scheduler.Submit(std::move(item)).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(scheduler.TakeMemoryPressure());

  absl::Notification granted;
  const MemoryGate::Ticket ticket =
      scheduler.memory_gate().Wait(4 * 1024, absl::Now(), [&](const absl::Status& status) {
        EXPECT_TRUE(status.ok()) << status;
        granted.Notify();
      });
  ASSERT_NE(ticket, MemoryGate::kGranted);
  EXPECT_TRUE(scheduler.TakeMemoryPressure());
  EXPECT_TRUE(scheduler.TakeMemoryPressure()) << "a waiting call leaves memory short";
  scheduler.memory_gate().Release(8 * 1024);
  ASSERT_TRUE(granted.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(scheduler.TakeMemoryPressure());
  scheduler.memory_gate().Release(2 * 1024 + 4 * 1024);
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
  ASSERT_TRUE(
      WaitUntil([&] { return fakes[0]->started_.load() == 1 && fakes[1]->started_.load() == 1; }));
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
  ASSERT_TRUE(WaitUntil([&] { return fakes[0]->started_.load() == 1; }));
  // Worker 0 holds 1 row, under 256: these two queue behind it although worker 1 is idle.
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 1)).ok());
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 300)).ok());
  // Worker 0 now holds 302 rows: the next goes to the least loaded worker.
  ASSERT_TRUE(scheduler.Submit(Item(tracker, 1)).ok());
  ASSERT_TRUE(WaitUntil([&] { return fakes[1]->started_.load() == 1; }));
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
