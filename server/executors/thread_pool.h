// A fixed pool of threads for splitting one launch's rows across cores.
//
// ParallelFor is called by one thread at a time (the CPU worker that owns the pool); the calling
// thread takes part in the work, so a pool of N threads starts N - 1 helpers.
#ifndef NORMD_SERVER_EXECUTORS_THREAD_POOL_H_
#define NORMD_SERVER_EXECUTORS_THREAD_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace normd {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // Runs task(i) for every i in [0, tasks) and returns when all have finished.
  void ParallelFor(int64_t tasks, const std::function<void(int64_t)>& task);

 private:
  void HelperLoop();
  void RunTasks();

  normd::Mutex mu_;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // bumped for each ParallelFor
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int busy_helpers_ ABSL_GUARDED_BY(mu_) = 0;
  const std::function<void(int64_t)>* task_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t task_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> next_task_{0};  // the next task index to claim
  std::vector<std::thread> helpers_;
};

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_THREAD_POOL_H_
