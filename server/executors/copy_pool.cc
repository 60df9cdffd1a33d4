#include "server/executors/copy_pool.h"

#include <algorithm>
#include <cstring>

#include "absl/time/clock.h"
#include "base/cpu_relax.h"
#include "base/streaming_copy.h"
#include "base/thread_name.h"

namespace normd {
namespace {

// Pieces are at least this large (a few microseconds of copying: far more than claiming one costs)
// and small enough that each thread gets several, so that a thread that starts late or runs slow
// leaves its share to the others.
constexpr int64_t kMinTaskBytes = int64_t{64} << 10;
constexpr int kTasksPerThread = 4;

void Copy(const CopyJob& job) {
  if (job.streaming) {
    StreamingCopy(job.to, job.from, static_cast<size_t>(job.bytes));
  } else {
    std::memcpy(job.to, job.from, static_cast<size_t>(job.bytes));
  }
}

struct HelperWake {
  const bool* stopping;
  const std::atomic<int64_t>* generation;
  int64_t seen;
};

bool HelperShouldWake(HelperWake* wake) {
  return *wake->stopping || wake->generation->load(std::memory_order_relaxed) != wake->seen;
}

void CopyAlone(const std::vector<CopyJob>& jobs) {
  for (const CopyJob& job : jobs) Copy(job);
}

}  // namespace

void RunCopies(CopyPool* pool, const std::vector<CopyJob>& jobs) {
  if (pool != nullptr) {
    pool->Run(jobs);
  } else {
    CopyAlone(jobs);
  }
}

CopyPool::CopyPool(int threads, absl::Duration spin, int64_t parallel_min_bytes)
    : spin_(spin), parallel_min_bytes_(parallel_min_bytes) {
  for (int i = 1; i < threads; ++i) helpers_.emplace_back([this] { HelperLoop(); });
}

CopyPool::~CopyPool() {
  {
    normd::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& helper : helpers_) helper.join();
}

void CopyPool::Run(const std::vector<CopyJob>& jobs) {
  int64_t total = 0;
  for (const CopyJob& job : jobs) total += job.bytes;
  if (helpers_.empty() || total < parallel_min_bytes_) {
    CopyAlone(jobs);
    return;
  }
  // Cut the jobs into pieces of at most task_bytes (64-byte multiples, so that streaming copies
  // keep their destinations' alignment from one piece to the next).
  const int64_t task_bytes =
      std::max(kMinTaskBytes, (total / (threads() * kTasksPerThread) + 63) / 64 * 64);
  tasks_.clear();
  for (const CopyJob& job : jobs) {
    for (int64_t at = 0; at < job.bytes; at += task_bytes) {
      tasks_.push_back(CopyJob{static_cast<char*>(job.to) + at,
                               static_cast<const char*>(job.from) + at,
                               std::min(task_bytes, job.bytes - at), job.streaming});
    }
  }
  finished_tasks_.store(0, std::memory_order_relaxed);
  {
    normd::MutexLock lock(&mu_);
    next_task_ = 0;
    active_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  CopyTasks();
  // Every piece is claimed; wait for the helpers still copying theirs (a piece takes microseconds).
  while (finished_tasks_.load(std::memory_order_acquire) < tasks_.size()) CpuRelax();
  normd::MutexLock lock(&mu_);
  active_ = false;
}

void CopyPool::CopyTasks() {
  while (true) {
    size_t task;
    {
      normd::MutexLock lock(&mu_);
      if (!active_ || next_task_ >= tasks_.size()) return;
      task = next_task_++;
    }
    Copy(tasks_[task]);
    // Release: the piece's bytes (fenced by a streaming copy) are written before Run sees it
    // finished.
    finished_tasks_.fetch_add(1, std::memory_order_release);
  }
}

void CopyPool::HelperLoop() {
  NameThisThread("normd-copy");
  HelperWake wake{&stopping_, &generation_, 0};
  while (true) {
    // Poll a while for the next launch, then sleep until one comes.
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
    CopyTasks();
  }
}

}  // namespace normd
