// A launch's host copies (into pinned staging memory and out of it) split across a few threads.
//
// Why: a large launch's copies into and out of pinned memory can take longer than its device
// stages, and one core copies far slower than the memory system moves bytes, so a few threads
// copying disjoint parts of the launch finish sooner (docs/PERFORMANCE.md, the GPU stages).
//
// The jobs are cut into pieces of 64 KiB or more, a few per thread, and run on a TaskPool: the
// calling thread takes part, helpers that just worked poll for the next launch for `spin` before
// they sleep, and the caller spins while the last pieces finish. Small launches (under
// --parallel-copy-min-bytes) are copied by the caller alone: waking a helper costs more than their
// copy.
#ifndef NORMD_SERVER_EXECUTORS_COPY_POOL_H_
#define NORMD_SERVER_EXECUTORS_COPY_POOL_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "server/executors/task_pool.h"

namespace normd {

// Launches copying fewer bytes than this are copied by the calling thread alone (the default of
// --parallel-copy-min-bytes). Launches of 1-row bf16 requests of H 4096 reach it at a few tens of
// requests, and the helpers then poll after every launch, which costs cores for no throughput
// gain measured so far; the flag is there to measure a higher threshold.
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

  int threads() const { return pool_.threads(); }
  // Launches Run has split across threads so far.
  int64_t split_launches() const { return pool_.shared_batches(); }

  // Copies every job and returns once all their bytes are in place (streamed bytes fenced, so a
  // device transfer started afterwards reads them). One caller at a time. The jobs must not
  // overlap.
  void Run(const std::vector<CopyJob>& jobs);

 private:
  const int64_t parallel_min_bytes_;
  std::vector<CopyJob> pieces_;  // the current launch's jobs cut into pieces; Run's alone
  TaskPool pool_;
};

// Copies the jobs with `pool`, or on the calling thread alone when it is null.
void RunCopies(CopyPool* pool, const std::vector<CopyJob>& jobs);

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_COPY_POOL_H_
