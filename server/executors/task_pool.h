// A few threads that run one batch of tasks together with the calling thread: the one pool design
// behind the CPU executor's row chunks and the CUDA executor's copies (CopyPool).
//
// Run(n, task) runs task(i) for every i in [0, n) and returns once all have finished. The caller
// takes part, so a pool of N threads starts N - 1 helpers, and helpers that wake late find the work
// already claimed: Run is never much slower than the caller working alone. One caller at a time.
//
// Two knobs, because the pool's two users differ in how long a task takes:
// - `spin`: after a batch, helpers poll for the next one this long before they sleep. A sleeping
//   thread takes several microseconds or more to wake, a large share of a copy split four ways.
// - `spin_until_done`: the caller spins, rather than sleeps, while the helpers finish the tasks
// they
//   claimed. Right for tasks of a few microseconds (copies of 64 KiB pieces); tasks of rows of
//   compute would burn a core the helpers may need, so the CPU executor sleeps instead.
#ifndef NORMD_SERVER_EXECUTORS_TASK_POOL_H_
#define NORMD_SERVER_EXECUTORS_TASK_POOL_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace normd {

struct TaskPoolOptions {
  int threads = 1;  // the caller included; 1 or less: the caller alone
  absl::Duration spin = absl::ZeroDuration();
  bool spin_until_done = false;
  std::string thread_name = "normd-pool";  // shown by top -H and in debuggers
};

class TaskPool {
 public:
  explicit TaskPool(const TaskPoolOptions& options);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }
  // Batches Run has shared with the helpers so far (a batch of one task, or a pool without
  // helpers, runs on the caller alone and does not count).
  int64_t shared_batches() const { return generation_.load(std::memory_order_relaxed); }

  void Run(int64_t tasks, absl::FunctionRef<void(int64_t)> task);

 private:
  void HelperLoop();
  // Claims and runs tasks of the current batch until none is left to claim.
  void RunClaimed();

  const absl::Duration spin_;
  const bool spin_until_done_;
  const std::string thread_name_;
  normd::Mutex mu_;
  // The current batch. task_ is set by Run while the batch is active and read by whoever claims a
  // task of it, which Run waits for before it returns.
  const absl::FunctionRef<void(int64_t)>* task_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t task_count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_task_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped (under mu_) for each shared batch: what polling helpers watch without the lock.
  std::atomic<int64_t> generation_{0};
  std::atomic<int64_t> finished_tasks_{0};
  std::vector<std::thread> helpers_;  // last: they start once everything above is built
};

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_TASK_POOL_H_
