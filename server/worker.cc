#include "server/worker.h"

#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "server/log.h"

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

}  // namespace

Worker::Worker(std::unique_ptr<BatchExecutor> executor, BatchLimits limits, ServerMetrics* metrics)
    : executor_(std::move(executor)), limits_(limits), metrics_(metrics), thread_([this] { Loop(); }) {}

Worker::~Worker() { Stop(); }

void Worker::Enqueue(std::unique_ptr<WorkItem> item) {
  {
    absl::MutexLock lock(&mu_);
    if (!exited_) {
      load_rows_.fetch_add(item->rows(), std::memory_order_relaxed);
      if (metrics_ != nullptr) metrics_->queue_depth().Increment();
      queue_.push_back(std::move(item));
      return;
    }
  }
  // Raced with Stop(): nobody is left to compute it, so answer it here rather than lose it.
  item->Complete(absl::UnavailableError("normd is shutting down and takes no new requests"));
}

void Worker::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Worker::Loop() {
  std::vector<std::pair<std::unique_ptr<WorkItem>, absl::Status>> dropped;
  while (true) {
    Launch launch;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Worker* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) { return w->stopping_ || !w->queue_.empty(); },
          this));
      if (queue_.empty()) {  // stopping, and everything accepted has been answered
        exited_ = true;
        return;
      }
      const absl::Time now = absl::Now();
      RemoveDeadRequests(queue_, now, dropped);
      if (!queue_.empty()) {
        const absl::Time launch_at = NextLaunchTime(queue_, limits_, now);
        if (launch_at > now && !stopping_) {
          // A partial launch may wait for company until launch_at, or until more requests arrive.
          QueueChanged args{&queue_, &stopping_, queue_.size()};
          mu_.AwaitWithDeadline(absl::Condition(&HasQueueChanged, &args), launch_at);
        } else {
          launch = TakeLaunch(queue_, limits_);
        }
      }
      if (metrics_ != nullptr) {
        metrics_->queue_depth().Decrement(static_cast<double>(dropped.size() + launch.items.size()));
      }
    }
    // Answer outside the lock: a completion callback may take the gRPC library's own locks.
    for (auto& [item, status] : dropped) {
      Log(LogLevel::kDebug, "worker ", executor_->name(), ": dropped a request before compute: ", status.ToString());
      load_rows_.fetch_sub(item->rows(), std::memory_order_relaxed);
      item->Complete(status);
    }
    dropped.clear();
    if (!launch.items.empty()) RunLaunch(launch);
  }
}

void Worker::RunLaunch(Launch& launch) {
  const absl::Time start = absl::Now();
  StageTimes stages;
  const absl::Status status = executor_->Run(launch, stages);
  const absl::Time end = absl::Now();
  if (!status.ok()) {
    Log(LogLevel::kError, "worker ", executor_->name(), ": launch of ", launch.items.size(), " requests (",
        launch.rows, " x ", launch.hidden, ") failed: ", status.ToString());
  }
  if (metrics_ != nullptr && status.ok()) {
    // Bytes the computation moved: payload in and out plus one read of each request's weight.
    int64_t kernel_bytes = 2 * launch.bytes;
    for (const auto& item : launch.items) {
      kernel_bytes += item->request.hidden * static_cast<int64_t>(ItemSize(item->request.weight_dtype));
    }
    metrics_->Launch(executor_->device(), launch.rows, static_cast<int64_t>(launch.items.size()), stages,
                     kernel_bytes);
  }
  LaunchReport report;
  report.compute = end - start;
  report.batch_rows = static_cast<int32_t>(launch.rows);
  report.batch_requests = static_cast<int32_t>(launch.items.size());
  for (auto& item : launch.items) {
    report.queue_wait = start - item->enqueued;
    load_rows_.fetch_sub(item->rows(), std::memory_order_relaxed);
    if (metrics_ != nullptr && !item->is_warm_up) {
      metrics_->QueueWait(report.queue_wait);
      if (status.ok()) metrics_->Payload(item->bytes(), item->bytes());
    }
    item->Complete(status, report);
  }
}

}  // namespace normd
