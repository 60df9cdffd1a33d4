#include "server/executors/copy_pool.h"

#include <algorithm>
#include <cstring>

#include "base/streaming_copy.h"

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
    : parallel_min_bytes_(parallel_min_bytes),
      // Pieces take microseconds: the caller spins while the helpers finish theirs.
      pool_(TaskPoolOptions{threads, spin, /*spin_until_done=*/true, "normd-copy"}) {}

void CopyPool::Run(const std::vector<CopyJob>& jobs) {
  int64_t total = 0;
  for (const CopyJob& job : jobs) total += job.bytes;
  if (threads() == 1 || total < parallel_min_bytes_) {
    CopyAlone(jobs);
    return;
  }
  // Cut the jobs into pieces of at most piece_bytes (64-byte multiples, so that streaming copies
  // keep their destinations' alignment from one piece to the next).
  const int64_t piece_bytes =
      std::max(kMinTaskBytes, (total / (threads() * kTasksPerThread) + 63) / 64 * 64);
  pieces_.clear();
  for (const CopyJob& job : jobs) {
    for (int64_t at = 0; at < job.bytes; at += piece_bytes) {
      pieces_.push_back(CopyJob{static_cast<char*>(job.to) + at,
                                static_cast<const char*>(job.from) + at,
                                std::min(piece_bytes, job.bytes - at), job.streaming});
    }
  }
  pool_.Run(static_cast<int64_t>(pieces_.size()),
            [this](int64_t i) { Copy(pieces_[static_cast<size_t>(i)]); });
}

}  // namespace normd
