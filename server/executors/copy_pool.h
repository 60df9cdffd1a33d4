// A launch's host copies (into pinned staging memory and out of it) split across a few threads.
//
// Why: for a 64 x 4096 bf16 request at c=1 on the H200 machine, normd spent ~75-115 µs of its ~200
// µs copying 512 KiB into pinned memory and 512 KiB out (docs/BENCHMARKS.md, "Packing with
// streaming stores"); the device's own stages took ~50 µs. One core copies at ~10 GB/s; the memory
// system moves several times that, so a few threads copying disjoint parts of the launch finish
// sooner.
//
// The calling thread (the one packing or unpacking the launch) takes part, so a pool of N threads
// starts N - 1 helpers, and helpers that wake late find the work already taken: Run is never much
// slower than one thread copying alone. Small launches (under the pool's parallel_min_bytes,
// --parallel-copy-min-bytes) are copied by the caller alone, since waking a helper costs more than
// their copy.
//
// Helpers that just worked keep polling for the next launch for `spin` before they sleep (as the
// worker's thread does with --busy-poll-us): a sleeping helper takes several microseconds or more
// to wake, which is a large share of a 512 KiB copy split four ways.
#ifndef NORMD_SERVER_EXECUTORS_COPY_POOL_H_
#define NORMD_SERVER_EXECUTORS_COPY_POOL_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace normd {

// Launches copying fewer bytes than this are copied by the calling thread alone (the default of
// --parallel-copy-min-bytes). Launches of 1-row bf16 requests of H 4096 reach it at a few tens of
// requests, and the helpers then poll after every launch: 1.6-2.0 cores over eight connections on
// the H200, for no throughput gain seen in single runs (docs/BENCHMARKS.md, "Answers on reply
// threads"). The flag is there to measure a higher threshold; this one is not yet re-measured.
inline constexpr int64_t kParallelCopyMinBytes = int64_t{256} << 10;

// One copy: `bytes` from `from` to `to`. `streaming`: the destination is read next by a device, not
// by the CPU, so it is written with streaming stores (base/streaming_copy.h).
struct CopyJob {
  void* to = nullptr;
  const void* from = nullptr;
  int64_t bytes = 0;
  bool streaming = false;
};

class CopyPool {
 public:
  // `threads` copy one launch together, the caller included (1 or less: the caller alone); launches
  // of fewer than `parallel_min_bytes` are copied by the caller alone.
  CopyPool(int threads, absl::Duration spin, int64_t parallel_min_bytes = kParallelCopyMinBytes);
  ~CopyPool();
  CopyPool(const CopyPool&) = delete;
  CopyPool& operator=(const CopyPool&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }
  // Launches Run has split across threads so far.
  int64_t split_launches() const { return generation_.load(std::memory_order_relaxed); }

  // Copies every job and returns once all their bytes are in place (streamed bytes fenced, so a
  // device transfer started afterwards reads them). One caller at a time. The jobs must not
  // overlap.
  void Run(const std::vector<CopyJob>& jobs);

 private:
  void HelperLoop();
  // Claims and copies tasks of the current launch until none is left to claim.
  void CopyTasks();

  const absl::Duration spin_;
  const int64_t parallel_min_bytes_;
  normd::Mutex mu_;
  // The current launch's pieces. Written by Run only while no launch is active, and read by the
  // thread that claimed a piece, which Run waits for before it returns.
  std::vector<CopyJob> tasks_;
  size_t next_task_ ABSL_GUARDED_BY(mu_) = 0;
  bool active_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped (under mu_) for each launch Run splits: what spinning helpers watch without the lock.
  std::atomic<int64_t> generation_{0};
  std::atomic<size_t> finished_tasks_{0};
  std::vector<std::thread> helpers_;  // last: they start once everything above is built
};

// Copies the jobs with `pool`, or on the calling thread alone when it is null.
void RunCopies(CopyPool* pool, const std::vector<CopyJob>& jobs);

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_COPY_POOL_H_
