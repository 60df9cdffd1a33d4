// The CUDA backend's executor: one worker's stream, pinned staging slots, device buffers and weight
// cache on one GPU.
//
// A launch is packed into a pinned staging slot (segment table, inline weights, inputs, residuals:
// each request's bytes copied in once), copied up in one transfer, normalized by one batched kernel
// launch, and its outputs (and residual_outs) copied down in one transfer to the slot's pinned
// output area, from which Finish copies each request's bytes out once. Two slots let the worker
// pack launch k+1 while launch k is on the device. Buffers grow to the largest launch seen and are
// then reused: no cudaMalloc or cudaHostAlloc on the request path once warm. Registered weights are
// uploaded once per worker and kept (bounded, least recently used first out).
//
// Large launches (kPipelineMinBytes and up) are pipelined: their rows are cut into chunks, and
// chunk k's upload, chunk k-1's kernel and chunk k-2's download run at once on three streams (PCIe
// is full duplex), so that a launch takes about one transfer's time instead of upload + kernel +
// download. Small launches stay on one stream: cross-stream waits would only add latency to them.
//
// Tensors in a client's system region (registered with the driver) are not staged in pinned memory.
// In small launches the kernel reaches them through the registered pages' mapping. In large ones
// (kPipelineMinBytes and up in system regions) the copy engines move them, as part of the same
// pipeline, into and out of device-only buffers: a kernel reading and writing host pages over PCIe
// moves them at well under the link's rate, the copy engines at its full rate each way.
//
// Launches of at most --zero-copy-max-bytes (up + down) skip the copies altogether: the kernel
// reads its inputs from, and writes its outputs to, the pinned staging buffers through their device
// mapping. Each cudaMemcpyAsync has a fixed cost of several microseconds on top of its bytes, which
// for a one-row request is most of the device time; reading 8 KB across PCIe inside the kernel
// costs about one round trip.
#ifndef NORMD_SERVER_EXECUTORS_CUDA_EXECUTOR_H_
#define NORMD_SERVER_EXECUTORS_CUDA_EXECUTOR_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "base/lru_cache.h"
#include "server/executors/batch_executor.h"
#include "server/executors/copy_pool.h"
#include "server/executors/staging_layout.h"

namespace normd {

struct CudaExecutorOptions {
  // Bounds the device copies of registered weights this worker keeps.
  int64_t weight_cache_bytes = 0;
  // Launches moving at most this many bytes (up + down) skip the copies (zero copy).
  int64_t zero_copy_max_bytes = 0;
  // Threads copying a launch into and out of pinned memory (CopyPool), and how long they poll for
  // the next launch before sleeping.
  int copy_threads = 1;
  absl::Duration copy_spin;
  // Launches copying fewer bytes than this are copied by the worker's thread alone.
  int64_t parallel_copy_min_bytes = kParallelCopyMinBytes;
  // The most one staging buffer (a slot's up or down half; 2 slots x 2 per worker) grows to ahead
  // of need (0: no bound). A buffer grows by doubling, so without a bound it can reach twice the
  // largest launch seen; with one it grows to max(need, this), and the launch limits
  // (--max-pinned-bytes, server_config.h) keep a launch's need within it.
  int64_t max_staging_buffer_bytes = 0;
};

class CudaExecutor : public BatchExecutor {
 public:
  // Builds the executor's stream, initial buffers and copy threads on `device`.
  static absl::StatusOr<std::unique_ptr<CudaExecutor>> Create(int device, int worker_index,
                                                              const CudaExecutorOptions& options,
                                                              ServerMetrics* metrics);
  ~CudaExecutor() override;

  absl::Status Start(const Launch& launch, StageTimes& stages) override;
  absl::Status Finish(const Launch& launch, StageTimes& stages) override;
  int max_in_flight() const override { return kSlots; }
  // An idle worker lets the submitting thread run a launch start to finish (one request: pack, copy
  // up, kernel, copy down, unpack); see Worker. Start and Finish select this GPU on whatever
  // thread.
  bool runs_on_caller_thread() const override { return true; }
  bool healthy() const override { return healthy_; }
  std::string name() const override;
  std::string device() const override { return std::to_string(device_); }

 private:
  static constexpr int kSlots = 2;
  static constexpr int kMaxChunks = 16;  // of a pipelined launch

  // A growable buffer pair: pinned host memory and device memory of the same capacity.
  struct Buffer {
    void* host = nullptr;
    void* host_on_device = nullptr;  // `host` as the device addresses it (mapped pinned memory)
    void* dev = nullptr;
    int64_t capacity = 0;
  };
  // Growable device memory alone: where a large launch's system-region tensors are staged.
  struct DeviceBuffer {
    void* dev = nullptr;
    int64_t capacity = 0;
  };
  struct Slot {
    Buffer in;   // segment table, inline weights, inputs, residuals
    Buffer out;  // outputs, residual_outs
    // Where Start put each request in `in` and `out`; Finish unpacks the outputs from there.
    StagingLayout layout;
    // Whether this launch's system-region tensors are staged on the device (see the header), and
    // where (region_layout, in the two buffers).
    bool stage_regions = false;
    RegionStagingLayout region_layout;
    DeviceBuffer region_in;
    DeviceBuffer region_out;
    // Timing: before the first upload, after the last upload, after the last kernel, after the last
    // download. For a pipelined launch these split its device time into three parts that do not
    // overlap (h2d = until everything is up, kernel = the rest until computed, d2h = the rest).
    std::array<cudaEvent_t, 4> events{};
    // A zero-copy launch records none of them, only `done` after its kernel (created without
    // timing), which Finish waits for; its kernel stage is host time from `submitted` to the end of
    // that wait.
    bool zero_copy = false;
    cudaEvent_t done = nullptr;
    absl::Time submitted;  // when Start began enqueueing the launch
    // Pipelined launches: chunk k uploaded (the kernel waits for it), chunk k computed (its
    // download waits for it). Created without timing.
    std::array<cudaEvent_t, kMaxChunks> uploaded{};
    std::array<cudaEvent_t, kMaxChunks> computed{};
  };
  CudaExecutor(int device, int worker_index, const CudaExecutorOptions& options,
               ServerMetrics* metrics);
  absl::Status Init();
  // Enqueues a packed launch: the kernel alone on mapped host memory, on stream_ alone, or
  // pipelined over all three streams.
  cudaError_t EnqueueZeroCopy(Slot& slot, const Launch& launch);
  cudaError_t EnqueueWhole(Slot& slot, const Launch& launch);
  cudaError_t EnqueuePipelined(Slot& slot, const Launch& launch);
  // Waits for everything enqueued on this executor's streams.
  void SynchronizeStreams();
  absl::Status Grow(Buffer& buffer, int64_t bytes);
  // Grows a device-only buffer; false (and the buffer empty) when the device has no room.
  bool GrowDevice(DeviceBuffer& buffer, int64_t bytes);
  // Points the launch's segments (the host copy of the table) at the device staging of its
  // system-region tensors.
  void PointSegmentsAtRegionStaging(Slot& slot, const Launch& launch);
  // Copies `bytes` at `at` within each of request i's staged system-region tensors between the
  // region (where the request has it) and the device staging: up (input and residual) or down
  // (output and residual_out).
  cudaError_t CopyRegionRows(const Slot& slot, const Launch& launch, size_t i, int64_t at,
                             int64_t bytes, bool up, cudaStream_t stream) const;
  // Drops least recently used device weights until the cache is within its bound.
  void TrimWeightCache();
  // The device copy of a registered weight, uploaded on first use (on the worker's stream).
  absl::StatusOr<const void*> DeviceWeight(const RegisteredWeight& weight);
  // Turns a CUDA error into INTERNAL, and takes the worker out of rotation when the error is
  // sticky.
  absl::Status CudaFailure(const char* what, cudaError_t error);

  const int device_;
  const int worker_index_;
  const int64_t weight_cache_bytes_;
  const int64_t zero_copy_max_bytes_;
  const int64_t max_staging_buffer_bytes_;
  ServerMetrics* const metrics_;
  // Packs and unpacks launches, for the worker's thread or a submitting one (one at a time).
  CopyPool copies_;
  bool healthy_ = true;
  cudaStream_t stream_ = nullptr;           // uploads, and the whole of small launches
  cudaStream_t compute_stream_ = nullptr;   // kernels of pipelined launches
  cudaStream_t download_stream_ = nullptr;  // downloads of pipelined launches
  std::array<Slot, kSlots> slots_;
  int next_slot_ = 0;        // the slot the next Start packs into
  int oldest_slot_ = 0;      // the slot the next Finish completes
  LruCache<void*> weights_;  // device copies of registered weights, by id
};

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_CUDA_EXECUTOR_H_
