#include "server/batching/worker.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

#include "base/cpu_relax.h"
#include "base/thread_name.h"
#include "server/observability/log.h"

namespace normd {
namespace {

struct QueueChanged {
  const WorkQueue* queue;
  const bool* stopping;
  size_t size_before;
};

bool HasQueueChanged(QueueChanged* args) {
  return *args->stopping || args->queue->size() != args->size_before;
}

// Whether the queued requests carry at least `bytes` of payload (stops counting once they do).
bool QueueHoldsBytes(const WorkQueue& queue, int64_t bytes) {
  int64_t total = 0;
  for (const auto& item : queue) {
    total += item->bytes();
    if (total >= bytes) return true;
  }
  return total >= bytes;
}

}  // namespace

Worker::Worker(std::unique_ptr<BatchExecutor> executor, BatchLimits limits, ServerMetrics* metrics,
               int reply_threads, Clock& clock)
    : executor_(std::move(executor)),
      limits_(limits),
      metrics_(metrics),
      clock_(clock),
      company_(limits.company_memory),
      replies_(reply_threads),
      thread_([this] { Loop(); }) {}

Worker::~Worker() { Stop(); }

void Worker::Submit(std::unique_ptr<WorkItem> item) {
  if (TryClaimForCaller(*item)) {
    RunOnCallerThread(std::move(item));
    return;
  }
  {
    normd::MutexLock lock(&mu_);
    if (!exited_) {
      load_rows_.fetch_add(item->rows(), std::memory_order_relaxed);
      if (metrics_ != nullptr) metrics_->queue_depth().Increment();
      queue_.push_back(std::move(item));
      queue_events_.fetch_add(1, std::memory_order_release);
      return;
    }
  }
  // Raced with Stop(): nobody is left to compute it, so answer it here rather than lose it.
  item->Complete(absl::UnavailableError("normd is shutting down and takes no new requests"));
}

bool Worker::TryClaimForCaller(const WorkItem& item) {
  if (!item.may_run_on_caller_thread || !executor_->runs_on_caller_thread() ||
      limits_.max_queue_delay > absl::ZeroDuration()) {
    return false;
  }
  // Busy polling hands small requests to the worker's hot thread (see worker.h).
  const bool busy_polling = limits_.busy_poll > absl::ZeroDuration();
  if (busy_polling && item.bytes() <= kBusyPollHandOffMaxBytes) return false;
  normd::MutexLock lock(&mu_);
  // A polling thread is as idle as a sleeping one: it launches nothing until it takes the lock.
  if (!(thread_idle_ || polling_) || caller_running_ || !queue_.empty() || stopping_ || exited_)
    return false;
  // Other clients are taking turns with this one: let the worker thread gather them into one
  // launch.
  if (WaitsForCompany(limits_, company_.Expected(limits_))) return false;
  caller_running_ = true;
  return true;
}

void Worker::RunOnCallerThread(std::unique_ptr<WorkItem> item) {
  load_rows_.fetch_add(item->rows(), std::memory_order_relaxed);
  WorkQueue one;
  one.push_back(std::move(item));
  InFlight run{TakeLaunch(one, limits_), clock_.Now(), {}};
  absl::Status status = executor_->Start(run.launch, run.stages);
  // A two-phase executor (CUDA) is finished right here: nothing else is in flight on it.
  if (status.ok() && executor_->max_in_flight() > 1)
    status = executor_->Finish(run.launch, run.stages);
  CompleteLaunch(run, status);
  // Releasing the executor wakes the worker thread if requests queued up meanwhile.
  normd::MutexLock lock(&mu_);
  caller_running_ = false;
  company_.Record(1);
}

void Worker::Stop() {
  {
    normd::MutexLock lock(&mu_);
    stopping_ = true;
    queue_events_.fetch_add(1, std::memory_order_release);  // ends a busy poll
  }
  if (thread_.joinable()) thread_.join();
  replies_.Drain();  // answers the worker posted last may still be on their way
}

bool Worker::idle() {
  normd::MutexLock lock(&mu_);
  return thread_idle_ || polling_;
}

void Worker::SetPolling(bool polling) {
  normd::MutexLock lock(&mu_);
  polling_ = polling;
}

void Worker::PollForWork(int64_t seen, absl::Time until) {
  // The queue is looked at after every pause and the clock every 64 (a pause is ~40 ns, a clock
  // read about as much): a request is seen within a pause of its arrival, not within 64 (~2.6 µs).
  for (int round = 1; queue_events_.load(std::memory_order_acquire) == seen; ++round) {
    CpuRelax();
    if (round % 64 == 0 && clock_.Now() >= until) return;
  }
}

void Worker::Loop() {
  NameThisThread("normd-worker");
  std::vector<std::pair<std::unique_ptr<WorkItem>, absl::Status>> dropped;
  // Started launches not yet finished, oldest first: up to executor_->max_in_flight() of them, so
  // that packing and copying launch k+1 overlaps the device work of launch k.
  std::deque<InFlight> in_flight;
  const size_t max_in_flight = static_cast<size_t>(std::max(1, executor_->max_in_flight()));
  int64_t poll_from = -1;  // -1: do not poll (work may be queued, or stopping)
  while (true) {
    // Nothing in flight and the queue was empty when last looked at: send answers posted to the
    // reply threads that none has taken yet, then poll a while before sleeping (--busy-poll-us).
    // `poll_from` was read under that lock, so a request queued since ends either at once.
    if (in_flight.empty() && poll_from >= 0) AnswerWhileIdle(poll_from);
    if (in_flight.empty() && poll_from >= 0 && limits_.busy_poll > absl::ZeroDuration()) {
      SetPolling(true);
      PollForWork(poll_from, clock_.Now() + limits_.busy_poll);
      SetPolling(false);
    }
    Launch launch;
    bool answer_instead_of_waiting = false;
    {
      normd::MutexLock lock(&mu_);
      if (in_flight.empty()) {
        // Idle: wait for work, and for a submitting thread to hand the executor back (on stopping
        // too, so that the executor is not destroyed under it).
        thread_idle_ = true;
        mu_.Await(absl::Condition(
            +[](Worker* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) {
              return !w->caller_running_ && (w->stopping_ || !w->queue_.empty());
            },
            this));
        thread_idle_ = false;
        if (queue_.empty()) {  // stopping, and everything accepted has been answered
          exited_ = true;
          return;
        }
      }
      // A second launch overlaps the one in flight only when it is large enough for that to pay
      // (BatchLimits::overlap_min_bytes); otherwise the requests wait for the next free turn
      // together.
      const bool may_start =
          in_flight.empty() ||
          (in_flight.size() < max_in_flight && QueueHoldsBytes(queue_, limits_.overlap_min_bytes));
      if (!queue_.empty() && may_start) {
        const absl::Time now = clock_.Now();
        RemoveDeadRequests(queue_, now, dropped);
        if (!queue_.empty()) {
          const absl::Time launch_at =
              NextLaunchTime(queue_, limits_, now, company_.Expected(limits_));
          if (launch_at <= now || stopping_) {
            launch = TakeLaunch(queue_, limits_);
            company_.Record(static_cast<int64_t>(launch.items.size()));
          } else if (in_flight.empty() && replies_.has_posted()) {
            // The launch waits for company: send an answer meanwhile, then look again.
            answer_instead_of_waiting = true;
          } else if (in_flight.empty()) {
            // A partial launch may wait for company until launch_at, or until more requests arrive.
            QueueChanged args{&queue_, &stopping_, queue_.size()};
            clock_.AwaitWithDeadline(mu_, absl::Condition(&HasQueueChanged, &args), launch_at);
          }
        }
      }
      if (metrics_ != nullptr) {
        metrics_->queue_depth().Decrement(
            static_cast<double>(dropped.size() + launch.items.size()));
      }
      // Submit and Stop bump queue_events_ under this lock, so it is in step with the queue seen
      // here.
      poll_from = queue_.empty() && !stopping_ ? queue_events_.load(std::memory_order_relaxed) : -1;
    }
    // Answer outside the lock: a completion callback may take the gRPC library's own locks.
    for (auto& [item, status] : dropped) {
      Log(LogLevel::kDebug, "worker ", executor_->name(),
          ": dropped a request before compute: ", status.ToString());
      load_rows_.fetch_sub(item->rows(), std::memory_order_relaxed);
      item->Complete(status);
    }
    dropped.clear();
    if (answer_instead_of_waiting) replies_.AnswerOne();
    if (!launch.items.empty()) {
      InFlight started{std::move(launch), clock_.Now(), {}};
      const absl::Status status = executor_->Start(started.launch, started.stages);
      if (!status.ok() || executor_->max_in_flight() <= 1) {
        CompleteLaunch(started, status);  // done already, or failed before reaching the device
      } else {
        in_flight.push_back(std::move(started));
      }
      continue;  // start more while launches are in flight, if there is work and room
    }
    if (!in_flight.empty()) {
      InFlight& oldest = in_flight.front();
      const absl::Status status = executor_->Finish(oldest.launch, oldest.stages);
      CompleteLaunch(oldest, status);
      in_flight.pop_front();
    }
  }
}

void Worker::CompleteLaunch(InFlight& done, const absl::Status& status) {
  Launch& launch = done.launch;
  const absl::Time end = clock_.Now();
  if (!status.ok()) {
    Log(LogLevel::kError, "worker ", executor_->name(), ": launch of ", launch.items.size(),
        " requests (", launch.rows, " x ", launch.hidden, ") failed: ", status.ToString());
  }
  if (metrics_ != nullptr && status.ok()) {
    // Bytes the computation moved: payload in and out plus one read of each request's weight.
    int64_t kernel_bytes = 2 * launch.bytes;
    for (const auto& item : launch.items) {
      kernel_bytes +=
          item->request.hidden * static_cast<int64_t>(ItemSize(item->request.weight_dtype));
    }
    metrics_->Launch(executor_->device(), launch.rows, static_cast<int64_t>(launch.items.size()),
                     done.stages, kernel_bytes);
  }
  LaunchReport report;
  report.compute = end - done.started;
  report.batch_rows = static_cast<int32_t>(launch.rows);
  report.batch_requests = static_cast<int32_t>(launch.items.size());
  const absl::Time reply_start = clock_.Now();
  // With reply threads, every request but the first goes to them; the first is answered here, with
  // no wake-up between the device and its client.
  const bool post_others = replies_.helpers() > 0 && launch.items.size() > 1;
  PendingAnswer first;
  std::vector<PendingAnswer> others;
  for (size_t i = 0; i < launch.items.size(); ++i) {
    std::unique_ptr<WorkItem>& item = launch.items[i];
    report.queue_wait = done.started - item->enqueued;
    load_rows_.fetch_sub(item->rows(), std::memory_order_relaxed);
    // A launch that succeeded may still have failed one request alone (WorkItem::failure).
    const absl::Status item_status = status.ok() ? item->failure : status;
    if (metrics_ != nullptr && !item->is_warm_up) {
      metrics_->QueueWait(report.queue_wait);
      if (item_status.ok()) metrics_->Payload(item->bytes(), item->bytes());
    }
    PendingAnswer answer{std::move(item), item_status, report};
    if (!post_others) {
      SendAnswer(answer);
    } else if (i == 0) {
      first = std::move(answer);
    } else {
      others.push_back(std::move(answer));
    }
  }
  if (post_others) {
    replies_.Post(others);
    SendAnswer(first);
  }
  // The worker's own share of the answers: with reply threads, the first request and the posting.
  if (metrics_ != nullptr && status.ok())
    metrics_->LaunchReplied(executor_->device(), clock_.Now() - reply_start);
}

void Worker::AnswerWhileIdle(int64_t seen) {
  while (queue_events_.load(std::memory_order_acquire) == seen && replies_.AnswerOne()) {
  }
}

}  // namespace normd
