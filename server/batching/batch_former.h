// Forms launches out of a worker's queue: which requests ride together, and when to go.
//
// Pure logic over a queue and a time, with no threads and no clock of its own, so that the rules
// can be unit-tested with an injected time:
// - Requests whose deadline has passed, or whose client cancelled, leave the queue before any
//   compute is spent on them (answered DEADLINE_EXCEEDED / CANCELLED by the caller).
// - A launch is one (dtype, hidden) group. It always starts with the oldest queued request and
//   takes later requests of the same group, in queue order, while they fit --max-batch-rows and
//   --max-batch-bytes. Because the oldest request always goes next, nothing waits forever: small
//   requests cannot starve a large one (it becomes the oldest and leads a launch, alone if it is
//   over the caps), nor the reverse.
// - With --max-queue-delay-us = 0 a launch goes as soon as the worker is free (no added latency
//   at low load); otherwise a partial launch may wait up to that long after its oldest request
//   arrived.
// - With --company-wait-us > 0, batching adapts to closed-loop clients (each sends its next
//   request once it has its answer): a launch that carried k requests tells the worker that about
//   k clients are taking turns with it, so the next launch may wait, up to that long after its
//   oldest request arrived, until k requests of its group are queued. The worker remembers its last
//   --company-memory launches and expects the most any of them carried (CompanyMemory), but never
//   more than --company-max-requests. One client alone never waits (its launches carry one
//   request), and when clients leave, that many short launches bring the expectation down again.
//   With --company-min-requests = m, only an expectation of at least m requests makes a launch
//   wait.
#ifndef NORMD_SERVER_BATCHING_BATCH_FORMER_H_
#define NORMD_SERVER_BATCHING_BATCH_FORMER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "kernels/dtype.h"
#include "server/core/work.h"

namespace normd {

struct BatchLimits {
  int64_t max_rows = 8192;
  int64_t max_bytes = int64_t{256} << 20;
  absl::Duration max_queue_delay = absl::ZeroDuration();
  // An executor that can run several launches at once (CUDA) starts another while one is in flight
  // only if the queue holds at least this many payload bytes: overlapping pays for large copies,
  // while small requests do better waiting for the running launch and going out together in the
  // next.
  int64_t overlap_min_bytes = 0;
  // How long a launch may wait for as many requests as the worker's previous launch carried (see
  // above).
  absl::Duration company_wait = absl::ZeroDuration();
  // ... provided that launch carried at least this many (at least 2; normd's
  // --company-min-requests sets it, 9 by default): with N clients a launch never carries more than
  // N, so a floor above N leaves N clients unheld (the last of N to come back would otherwise
  // decide when all N go), while more clients than the floor still batch up.
  int64_t company_min_requests = 2;
  // ... and never for more than this many requests (normd's --company-max-requests, 20 by default).
  // Past a point a larger launch saves little (the launch's fixed host and driver costs are already
  // shared) while every request in it waits longer; over several connections, where waiting is not
  // free, larger caps cost throughput (docs/PERFORMANCE.md, "The measurements behind the automatic
  // values").
  int64_t company_max_requests = int64_t{1} << 30;
  // How many of its last launches a worker remembers when it decides how many requests to expect
  // (normd's --company-memory, 8 by default; 1: the last launch alone). See CompanyMemory.
  int company_memory = 1;
  // How long a worker's thread keeps polling its queue after its last launch before it sleeps;
  // while it polls, small requests are handed to it instead of being run on the submitting thread
  // (worker.h).
  absl::Duration busy_poll = absl::ZeroDuration();
};

// Moves every expired or cancelled request out of the queue into `dropped`, with the status each
// must be answered with.
void RemoveDeadRequests(WorkQueue& queue, absl::Time now,
                        std::vector<std::pair<std::unique_ptr<WorkItem>, absl::Status>>& dropped);

// How many requests a worker's next launch waits for (--company-wait-us): the most that any of its
// last BatchLimits::company_memory launches carried, at most BatchLimits::company_max_requests.
//
// Why a memory and not the last launch alone: a launch goes the moment its expected k requests are
// queued, so it never carries more than k unless the worker was busy while they arrived, and one
// launch that the wait's end cut short lowers k for good. Over time the expectation only sinks, and
// did: 1-row requests at c=64 over one connection rode 10-11 to a launch on the H200 once reply
// threads freed the worker sooner, against 16 before. Remembering several launches keeps a
// short one from undoing the rest, while clients that leave are forgotten after that many launches
// (each waiting at most --company-wait-us).
class CompanyMemory {
 public:
  explicit CompanyMemory(int launches);
  void Record(int64_t requests);
  int64_t Expected(const BatchLimits& limits) const;

 private:
  std::vector<int64_t> recent_;  // a ring of launch sizes; 1 where nothing was recorded yet
  size_t next_ = 0;
};

// Whether a worker expecting `expected_requests` (CompanyMemory::Expected) waits for that many.
// It is also why such a worker does not let a submitting thread compute a request alone (worker.h).
bool WaitsForCompany(const BatchLimits& limits, int64_t expected_requests);

// The time at which the queue's next launch should go: `now` when it should go at once, later when
// a partial launch may still wait for company. `expected_requests` is how many requests the worker
// expects (CompanyMemory::Expected, for --company-wait-us). The queue must not be empty.
absl::Time NextLaunchTime(const WorkQueue& queue, const BatchLimits& limits, absl::Time now,
                          int64_t expected_requests = 1);

// Takes the next launch out of the queue (see the rules above). The queue must not be empty.
Launch TakeLaunch(WorkQueue& queue, const BatchLimits& limits);

}  // namespace normd

#endif  // NORMD_SERVER_BATCHING_BATCH_FORMER_H_
