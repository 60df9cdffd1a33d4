// Buffers of 32 MiB and more for response tensors, kept for the next response once gRPC has sent
// them.
//
// Why: glibc maps every allocation of 32 MiB or more fresh (its mmap threshold, which
// server/main.cc raises to the largest value glibc allows) and unmaps it on free, so each of a new
// buffer's 8,192 4 KiB pages faults when the output is first written: a 32 MiB response written in
// place into a fresh buffer costs about twice the server time of one written into a buffer that an
// earlier response already faulted in. A buffer from this pool was written by an earlier response:
// no faults, and no copy after the one out of pinned memory (or the CPU kernel's own write)
// (docs/PERFORMANCE.md, "The measurements behind the automatic values").
//
// How: buffers are kept by exact size (requests of one shape come back at one size), handed out by
// Take and given back by the gRPC slice that carried them (TakeSharedSlice), once gRPC drops it.
// Idle buffers are kept up to a byte budget (--response-pool-bytes); past it they are unmapped. New
// buffers are mapped with their pages populated up front, one call instead of a fault per page.
//
// The CPU backend gathers a tensor that arrived in pieces into one buffer before computing it
// (ScratchBytes): at 32 MiB that buffer too came from a fresh mapping each request once the heap no
// longer held a free chunk that large, so it is taken from the pool as well.
//
// Threads: safe from any thread (gRPC frees a slice on whichever thread sent it last).
#ifndef NORMD_SERVER_CORE_LARGE_BUFFER_POOL_H_
#define NORMD_SERVER_CORE_LARGE_BUFFER_POOL_H_

#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace normd {

class LargeBufferPool {
 public:
  // Sizes from which ResponseWire takes its tensors' buffers from the pool: glibc's mmap threshold.
  static constexpr size_t kMinBytes = size_t{32} << 20;

  explicit LargeBufferPool(size_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
  ~LargeBufferPool();  // unmaps the idle buffers; buffers still out must not come back afterwards
  LargeBufferPool(const LargeBufferPool&) = delete;
  LargeBufferPool& operator=(const LargeBufferPool&) = delete;

  // The process's pool, which ResponseWire uses; it lives as long as the process (gRPC may free a
  // slice during shutdown, after main's objects are gone).
  static LargeBufferPool& Shared();

  // A buffer of `bytes` (> 0): an idle one of that size, else a new mapping. nullptr if the kernel
  // refuses the mapping.
  void* Take(size_t bytes);
  // Gives back what Take returned, with the same size: kept while the idle bytes stay within the
  // budget, else unmapped.
  void Give(void* data, size_t bytes);

  // Shared().Take(bytes) as a slice that gives the buffer back to Shared() when gRPC (or whoever
  // holds the slice last) drops it. `data` receives where to write. Throws std::bad_alloc where
  // Take returns nullptr.
  static grpc::Slice TakeSharedSlice(size_t bytes, void** data);
  // For ThreadSanitizer: the writes to `data` so far happen before the buffer's next Take. A writer
  // calls it before handing the slice to gRPC, which gives the buffer back on a thread of its own,
  // out of TSan's sight. Nothing outside TSan.
  static void ReleaseWrites(const void* data);

  // Changes the budget; idle buffers over it are unmapped at once.
  void SetMaxIdleBytes(size_t max_idle_bytes);

  size_t idle_bytes() const;
  int64_t reused() const;  // Takes served by an idle buffer
  int64_t mapped() const;  // Takes that mapped a new one

 private:
  static void GiveToShared(void* data, size_t bytes);
  void UnmapOverBudget(std::vector<std::pair<void*, size_t>>& unmap)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable normd::Mutex mu_;
  size_t max_idle_bytes_ ABSL_GUARDED_BY(mu_);
  size_t idle_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<size_t, std::vector<void*>> idle_ ABSL_GUARDED_BY(mu_);  // by size, most recent last
  int64_t reused_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t mapped_ ABSL_GUARDED_BY(mu_) = 0;
};

// Scratch memory of `bytes` for one owner: from LargeBufferPool::Shared() at kMinBytes and more
// (given back when destroyed), else from the heap. Uninitialized.
class ScratchBytes {
 public:
  explicit ScratchBytes(size_t bytes);  // throws std::bad_alloc
  ~ScratchBytes();
  ScratchBytes(const ScratchBytes&) = delete;
  ScratchBytes& operator=(const ScratchBytes&) = delete;
  void* data() const { return data_; }

 private:
  size_t bytes_;
  bool pooled_;
  void* data_;
};

}  // namespace normd

#endif  // NORMD_SERVER_CORE_LARGE_BUFFER_POOL_H_
