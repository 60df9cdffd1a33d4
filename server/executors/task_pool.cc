#include "server/executors/task_pool.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "base/cpu_relax.h"
#include "base/thread_name.h"

namespace normd {
namespace {

struct HelperWake {
  const bool* stopping;
  const std::atomic<int64_t>* generation;
  int64_t seen;
};

bool HelperShouldWake(HelperWake* wake) {
  return *wake->stopping || wake->generation->load(std::memory_order_relaxed) != wake->seen;
}

struct BatchDone {
  const std::atomic<int64_t>* finished;
  int64_t count;
};

bool AllFinished(BatchDone* done) {
  return done->finished->load(std::memory_order_acquire) >= done->count;
}

}  // namespace

TaskPool::TaskPool(const TaskPoolOptions& options)
    : spin_(options.spin),
      spin_until_done_(options.spin_until_done),
      thread_name_(options.thread_name) {
  for (int i = 1; i < options.threads; ++i) helpers_.emplace_back([this] { HelperLoop(); });
}

TaskPool::~TaskPool() {
  {
    normd::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& helper : helpers_) helper.join();
}

void TaskPool::Run(int64_t tasks, absl::FunctionRef<void(int64_t)> task) {
  if (tasks <= 0) return;
  if (helpers_.empty() || tasks == 1) {
    for (int64_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  finished_tasks_.store(0, std::memory_order_relaxed);
  {
    normd::MutexLock lock(&mu_);
    task_ = &task;
    task_count_ = tasks;
    next_task_ = 0;
    generation_.fetch_add(1, std::memory_order_release);
  }
  RunClaimed();
  // Every task is claimed; wait for the helpers still running theirs.
  if (spin_until_done_) {
    while (finished_tasks_.load(std::memory_order_acquire) < tasks) CpuRelax();
  }
  normd::MutexLock lock(&mu_);
  BatchDone done{&finished_tasks_, tasks};
  mu_.Await(absl::Condition(&AllFinished, &done));
  // Retire the batch, so that a helper waking late finds nothing to claim.
  task_ = nullptr;
}

void TaskPool::RunClaimed() {
  while (true) {
    const absl::FunctionRef<void(int64_t)>* task;
    int64_t index, count;
    {
      normd::MutexLock lock(&mu_);
      if (task_ == nullptr || next_task_ >= task_count_) return;
      task = task_;
      index = next_task_++;
      count = task_count_;
    }
    (*task)(index);
    // Release: the task's writes happen before Run sees it finished. The last one takes the lock
    // once, so that a Run sleeping in Await re-evaluates its condition.
    if (finished_tasks_.fetch_add(1, std::memory_order_acq_rel) + 1 == count && !spin_until_done_) {
      normd::MutexLock lock(&mu_);
    }
  }
}

void TaskPool::HelperLoop() {
  NameThisThread(thread_name_);
  HelperWake wake{&stopping_, &generation_, 0};
  while (true) {
    // Poll a while for the next batch, then sleep until one comes.
    const absl::Time until = absl::Now() + spin_;
    while (generation_.load(std::memory_order_relaxed) == wake.seen && absl::Now() < until) {
      for (int i = 0; i < 64; ++i) CpuRelax();
    }
    {
      normd::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&HelperShouldWake, &wake));
      if (stopping_) return;
      wake.seen = generation_.load(std::memory_order_relaxed);
    }
    RunClaimed();
  }
}

}  // namespace normd
