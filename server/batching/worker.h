// A worker: one queue, one thread, one executor (a CPU pool, or a CUDA stream with its pinned
// buffers).
//
// The thread sleeps while the queue is empty. When a request arrives and the worker is idle it
// launches at once; while a launch runs, new requests accumulate and go out together in the next
// one (see batch_former.h for the rules). As soon as a launch ends, this thread answers its first
// request and, with reply threads (--reply-threads, server/batching/reply_pool.h), posts the others
// to them and goes back to launching; it answers posted ones itself when it has nothing to launch.
//
// The shortcut: when the thread is idle, the queue is empty, batching does not wait
// (--max-queue-delay-us = 0, and no company is expected: see BatchLimits::company_wait) and the
// executor allows it (CPU and CUDA do), a request that allows it is computed and answered on the
// thread that submits it, as a launch of one. At low load that is what the worker thread would have
// done anyway, minus two thread wake-ups (half of a small request's latency on a 2-core machine).
// Requests arriving meanwhile queue up and go out batched as usual.
//
// Busy polling (BatchLimits::busy_poll, --busy-poll-us; automatic by default, see AutomaticBusyPoll
// in server_config.h): after each launch the thread spins on its queue for that long before it
// sleeps, and a small request (up to kBusyPollHandOffMaxBytes) is handed to it rather than run by
// the shortcut: one arriving within the window is launched at once by a thread that never slept. A
// gRPC thread wakes from epoll with cold caches, and the CUDA driver's launch and wait then cost
// far more than on a thread that stays hot (docs/PERFORMANCE.md, "Where a request's time goes on
// the H200"). A larger request still takes the shortcut when the thread is idle or polling: copying
// its bytes costs more than the launch, and the thread that just parsed them has them in its cache.
// The price is a core kept busy while clients keep coming within the window.
#ifndef NORMD_SERVER_BATCHING_WORKER_H_
#define NORMD_SERVER_BATCHING_WORKER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "server/batching/batch_former.h"
#include "server/batching/reply_pool.h"
#include "server/executors/batch_executor.h"
#include "server/observability/metrics.h"

namespace normd {

// With busy polling, requests of at most this many payload bytes are handed to the polling thread;
// larger ones may take the shortcut. At c=1 a small request (8 KiB) is answered sooner by the
// polling thread, a large one (512 KiB) later: its copies then run on a thread whose cache does not
// hold it. Where between the two the balance tips was not measured.
inline constexpr int64_t kBusyPollHandOffMaxBytes = int64_t{64} << 10;

class Worker {
 public:
  // `metrics` may be null (unit tests); otherwise it must outlive the worker. `reply_threads`:
  // threads answering a launch's requests, the worker's own included (1: the worker alone).
  // `clock`: what the batching waits and the reported times are measured on (a test's clock; the
  // requests' `enqueued` times must come from it too); it must outlive the worker.
  Worker(std::unique_ptr<BatchExecutor> executor, BatchLimits limits,
         ServerMetrics* metrics = nullptr, int reply_threads = 1, Clock& clock = RealClock::Get());
  ~Worker();  // drains and joins, like Stop()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Takes ownership of the item; it will be answered exactly once: on this thread before Submit
  // returns (the shortcut above), or later from the worker thread.
  void Submit(std::unique_ptr<WorkItem> item);

  // Answers every queued request (computing it), then ends the thread; returns once every answer
  // is sent. Idempotent.
  void Stop();

  // Rows queued or running here: the scheduler sends new work to the worker with the least.
  int64_t load_rows() const { return load_rows_.load(std::memory_order_relaxed); }
  bool healthy() const { return executor_->healthy(); }
  // Whether the thread waits for work (asleep or busy-polling) with nothing in flight, so that a
  // request submitted now may take the shortcut. Tests wait for it instead of sleeping.
  bool idle() ABSL_LOCKS_EXCLUDED(mu_);
  const BatchExecutor& executor() const { return *executor_; }

 private:
  // A launch the executor has started, with when and how long its stages took.
  struct InFlight {
    Launch launch;
    absl::Time started;
    StageTimes stages;
  };

  void Loop();
  // Spins until queue_events_ moves past `seen` (a request was queued, or Stop() was called) or
  // `until` passes (busy polling).
  void PollForWork(int64_t seen, absl::Time until);
  void SetPolling(bool polling);
  // Claims the idle executor for the calling thread if the shortcut applies; true if it did.
  bool TryClaimForCaller(const WorkItem& item);
  void RunOnCallerThread(std::unique_ptr<WorkItem> item);
  // Answers every request of a finished (or failed) launch, or posts all but the first to the reply
  // threads, and records the launch in the metrics.
  void CompleteLaunch(InFlight& done, const absl::Status& status);
  // Sends posted answers on this thread while no request has been queued since `seen`.
  void AnswerWhileIdle(int64_t seen);

  const std::unique_ptr<BatchExecutor> executor_;  // used by the worker thread only
  const BatchLimits limits_;
  ServerMetrics* const metrics_;
  Clock& clock_;
  std::atomic<int64_t> load_rows_{0};
  // Bumped (under mu_) by every Submit that queues and by Stop(): what a polling thread watches
  // without the lock.
  std::atomic<int64_t> queue_events_{0};

  normd::Mutex mu_;
  WorkQueue queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool exited_ ABSL_GUARDED_BY(mu_) =
      false;  // the thread has left its loop: no one will drain the queue
  bool thread_idle_ ABSL_GUARDED_BY(mu_) = false;  // the thread waits for work, nothing in flight
  bool caller_running_ ABSL_GUARDED_BY(mu_) = false;  // a submitting thread is using the executor
  bool polling_ ABSL_GUARDED_BY(mu_) = false;         // the thread busy-polls, nothing in flight
  // The sizes of the last launches: how many requests the next may wait for
  // (BatchLimits::company_wait).
  CompanyMemory company_ ABSL_GUARDED_BY(mu_);
  // Answers posted by CompleteLaunch; sent by its helpers and by the worker thread when idle.
  ReplyPool replies_;
  std::thread thread_;  // last: starts after everything above is built
};

}  // namespace normd

#endif  // NORMD_SERVER_BATCHING_WORKER_H_
