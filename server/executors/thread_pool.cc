#include "server/executors/thread_pool.h"

#include <algorithm>

#include "base/thread_name.h"

namespace normd {
namespace {

struct WakeArgs {
  const bool* stopping;
  const int64_t* generation;
  int64_t seen_generation;
};

bool HelperShouldWake(WakeArgs* args) {
  return *args->stopping || *args->generation != args->seen_generation;
}

bool NoHelperBusy(int* busy_helpers) { return *busy_helpers == 0; }

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) helpers_.emplace_back([this] { HelperLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    normd::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : helpers_) t.join();
}

void ThreadPool::RunTasks() {
  const std::function<void(int64_t)>* task;
  int64_t count;
  {
    normd::MutexLock lock(&mu_);
    task = task_;
    count = task_count_;
  }
  // A helper that wakes after its generation ended finds no task: nothing left to claim.
  if (task == nullptr) return;
  for (int64_t i = next_task_.fetch_add(1); i < count; i = next_task_.fetch_add(1)) (*task)(i);
}

void ThreadPool::HelperLoop() {
  NameThisThread("normd-cpu-pool");
  WakeArgs args{&stopping_, &generation_, 0};
  while (true) {
    {
      normd::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&HelperShouldWake, &args));
      if (stopping_) return;
      args.seen_generation = generation_;
      ++busy_helpers_;
    }
    RunTasks();
    normd::MutexLock lock(&mu_);
    --busy_helpers_;
  }
}

void ThreadPool::ParallelFor(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  if (helpers_.empty() || tasks == 1) {
    for (int64_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  {
    normd::MutexLock lock(&mu_);
    task_ = &task;
    task_count_ = tasks;
    next_task_.store(0);
    ++generation_;
  }
  RunTasks();
  // Every task has been claimed once RunTasks returns; wait for helpers still running theirs, then
  // retire the task so that a late-waking helper cannot touch it after we return.
  normd::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&NoHelperBusy, &busy_helpers_));
  task_ = nullptr;
}

}  // namespace normd
