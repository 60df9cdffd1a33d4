// The scheduler: admission control and the choice of worker.
//
// Admission bounds memory: the payload bytes of accepted requests stay under --max-queue-bytes
// until they are answered (for unary calls: until gRPC has sent the response, see
// WorkItem::hold_bytes_until_released), and a request that would pass it is refused at once with
// RESOURCE_EXHAUSTED (the client can back off or go to another replica) instead of queueing without
// bound. Tensors in a client's shared-memory region are the client's memory and are not charged
// (WorkItem::admission_bytes).
//
// With a memory budget (--max-memory-bytes; see server/config/memory_budget.h), a second charge is
// kept beside it: each request's message as received plus its response (WorkItem::memory_bytes),
// held over the same span, in the memory gate (memory_gate.h), and a request that would pass the
// admitted share of that budget is refused the same way. Unary calls reserve their share in the
// same gate before their message is read (memory_gate()), waiting for room instead.
//
// The choice of worker: the first healthy worker (in order) holding fewer than `fill_first_rows`
// rows queued or running takes the request; when every worker holds that many, the one with the
// fewest does. Dealing small requests out evenly would halve the requests each launch carries with
// two workers (1-row requests at c=64 on the H200: 3.5 per launch with two workers, 8 with one),
// while a worker's launches cost about the same whatever they carry; filling the first worker keeps
// them together, and large requests, or many, still spread over every worker. fill_first_rows = 0
// deals every request to the least loaded worker.
#ifndef NORMD_SERVER_SCHEDULING_SCHEDULER_H_
#define NORMD_SERVER_SCHEDULING_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/batching/worker.h"
#include "server/core/work.h"
#include "server/observability/metrics.h"
#include "server/scheduling/memory_gate.h"

namespace normd {

class Scheduler {
 public:
  // `metrics` may be null (unit tests); otherwise it must outlive the scheduler.
  // `max_admitted_memory_bytes` bounds the sum of admitted items' memory_bytes and of the
  // memory gate's reservations (0: no bound); `max_memory_wait` is how long a call may wait in the
  // gate.
  Scheduler(std::vector<std::unique_ptr<Worker>> workers, int64_t max_queue_bytes,
            ServerMetrics* metrics = nullptr, int64_t fill_first_rows = 0,
            int64_t max_admitted_memory_bytes = 0,
            absl::Duration max_memory_wait = absl::Seconds(10));

  // Accepts the item (it will be answered exactly once through its on_done) or refuses it,
  // returning RESOURCE_EXHAUSTED (over the byte budget) or UNAVAILABLE (shutting down); a refused
  // item is not answered and is destroyed.
  absl::Status Submit(std::unique_ptr<WorkItem> item);

  // Uncharges an answered item submitted with hold_bytes_until_released: its admission_bytes() and
  // its memory_bytes.
  void ReleaseHeldBytes(int64_t bytes, int64_t memory_bytes) {
    queued_bytes_.fetch_sub(bytes);
    if (memory_bytes != 0) memory_gate_.Release(memory_bytes);
  }

  // Where a call reserves its share of the budget before its message is read; its charge there is
  // the call's to release (memory_gate().Release), and its items carry memory_bytes 0.
  MemoryGate& memory_gate() { return memory_gate_; }

  // memory_gate().Resize for a call turning its read's reservation into its real charge; a
  // refusal counts as memory being short (TakeMemoryPressure), as Submit's do.
  absl::Status ResizeCharge(int64_t from, int64_t to) {
    absl::Status resized = memory_gate_.Resize(from, to);
    if (!resized.ok()) refused_for_memory_.store(true, std::memory_order_relaxed);
    return resized;
  }

  // Whether memory is short: a call waits for room in the memory gate now, or Submit or
  // ResizeCharge refused one for --max-queue-bytes or the gate since the last call (which resets
  // that). Streams whose clients stopped reading are cancelled sooner while it is (stall_watch.h).
  bool TakeMemoryPressure() {
    return refused_for_memory_.exchange(false, std::memory_order_relaxed) ||
           memory_gate_.waiting() > 0;
  }

  // Refuses new work from now on (Submit answers UNAVAILABLE); accepted requests go on.
  void StopAccepting() { accepting_.store(false); }

  // Stops accepting, then answers every accepted request and stops the workers.
  void Shutdown();

  int64_t queued_bytes() const { return queued_bytes_.load(std::memory_order_relaxed); }
  // The memory_bytes of admitted requests not yet released, and the gate's reservations.
  int64_t admitted_memory_bytes() const { return memory_gate_.charged_bytes(); }
  int64_t inflight_requests() const { return inflight_.load(std::memory_order_relaxed); }
  // Accepted requests answered so far, OK and not OK (deadline, cancellation, backend error).
  int64_t answered_ok() const { return answered_ok_.load(std::memory_order_relaxed); }
  int64_t answered_not_ok() const { return answered_not_ok_.load(std::memory_order_relaxed); }
  const std::vector<std::unique_ptr<Worker>>& workers() const { return workers_; }

 private:
  // The worker for the next request (see above); null when none is healthy. A request whose tensors
  // are in GPU memory (`device` >= 0) goes to a worker of that GPU.
  Worker* ChooseWorker(int device);

  std::vector<std::unique_ptr<Worker>> workers_;
  const int64_t max_queue_bytes_;
  ServerMetrics* const metrics_;
  const int64_t fill_first_rows_;
  MemoryGate memory_gate_;
  std::atomic<int64_t> queued_bytes_{0};
  std::atomic<bool> refused_for_memory_{false};  // see TakeMemoryPressure
  std::atomic<int64_t> inflight_{0};
  std::atomic<int64_t> answered_ok_{0};
  std::atomic<int64_t> answered_not_ok_{0};
  std::atomic<bool> accepting_{true};
};

}  // namespace normd

#endif  // NORMD_SERVER_SCHEDULING_SCHEDULER_H_
