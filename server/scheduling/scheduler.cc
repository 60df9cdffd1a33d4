#include "server/scheduling/scheduler.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace normd {

Scheduler::Scheduler(std::vector<std::unique_ptr<Worker>> workers, int64_t max_queue_bytes,
                     ServerMetrics* metrics, int64_t fill_first_rows,
                     int64_t max_admitted_memory_bytes, absl::Duration max_memory_wait)
    : workers_(std::move(workers)),
      max_queue_bytes_(max_queue_bytes),
      metrics_(metrics),
      fill_first_rows_(fill_first_rows),
      memory_gate_(max_admitted_memory_bytes, max_memory_wait) {}

absl::Status Scheduler::Submit(std::unique_ptr<WorkItem> item) {
  if (!accepting_.load()) {
    return absl::UnavailableError("normd is shutting down and takes no new requests");
  }
  Worker* worker = ChooseWorker(item->request.device);
  if (worker == nullptr) {
    return absl::UnavailableError(
        "normd has no healthy worker left (see its log); retry on another replica");
  }
  const int64_t bytes = item->admission_bytes();
  const int64_t memory = item->memory_bytes;
  // Reserve first, then check: concurrent submitters cannot together slip past the budget.
  const int64_t before = queued_bytes_.fetch_add(bytes);
  if (before + bytes > max_queue_bytes_ && before > 0) {
    queued_bytes_.fetch_sub(bytes);
    refused_for_memory_.store(true, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("normd is overloaded: ", before, " bytes queued, and this request's ", bytes,
                     " would pass --max-queue-bytes = ", max_queue_bytes_, "; retry later"));
  }
  if (memory > 0) {
    if (absl::Status charged = memory_gate_.TryCharge(memory); !charged.ok()) {
      queued_bytes_.fetch_sub(bytes);
      refused_for_memory_.store(true, std::memory_order_relaxed);
      return charged;
    }
  }
  inflight_.fetch_add(1);
  if (metrics_ != nullptr) metrics_->inflight_requests().Increment();
  auto on_done = std::move(item->on_done);
  const bool release_now = !item->hold_bytes_until_released;
  item->on_done = [this, bytes, memory, release_now, on_done = std::move(on_done)](
                      const absl::Status& s, const LaunchReport& r) {
    on_done(s, r);
    (s.ok() ? answered_ok_ : answered_not_ok_).fetch_add(1);
    if (release_now) ReleaseHeldBytes(bytes, memory);
    if (metrics_ != nullptr) metrics_->inflight_requests().Decrement();
    inflight_.fetch_sub(1);
  };
  worker->Submit(std::move(item));
  return absl::OkStatus();
}

Worker* Scheduler::ChooseWorker(int device) {
  Worker* least_loaded = nullptr;
  const std::string device_label = device >= 0 ? std::to_string(device) : std::string();
  for (const auto& w : workers_) {
    if (!w->healthy()) continue;  // taken out of rotation after an unrecoverable device error
    // A request in a client's GPU memory runs on that GPU.
    if (device >= 0 && w->executor().device() != device_label) continue;
    if (w->load_rows() < fill_first_rows_) return w.get();
    if (least_loaded == nullptr || w->load_rows() < least_loaded->load_rows()) {
      least_loaded = w.get();
    }
  }
  return least_loaded;
}

void Scheduler::Shutdown() {
  accepting_.store(false);
  for (auto& w : workers_) w->Stop();
}

}  // namespace normd
