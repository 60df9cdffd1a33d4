// The order in which one GPU's workers send their large launches up the host link: one at a time.
//
// Why: each worker has its own streams (cuda_executor.h), so without an order two workers'
// pipelined launches upload at the same time and split the link's ~55 GB/s between them. Neither
// finishes sooner than if they had taken turns, the first one finishes later, and each launch's
// measured h2d stage counts the other's bytes too: with two workers the h2d time per request summed
// over launches came to up to twice the link time (docs/BENCHMARKS.md, "Uploads take turns"). Taken
// in turn, the link moves the same bytes per second, the first launch is up in one transfer's time,
// and each launch's h2d stage is its own transfer. Downloads need no order of their own: with the
// uploads staggered, one launch's downloads overlap the next one's uploads (the link is full
// duplex).
//
// Only pipelined launches take turns; a small launch's copies are short, and a wait across streams
// would only add latency to it. The wait is on the device (cudaStreamWaitEvent): no host thread
// blocks on another launch's transfer, only on the few microseconds another worker spends
// enqueueing its copies.
#ifndef NORMD_SERVER_UPLOAD_TURNS_H_
#define NORMD_SERVER_UPLOAD_TURNS_H_

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/statusor.h"
#include "base/mutex.h"

namespace normd {

class UploadTurns {
 public:
  // One per GPU, shared by its workers' executors.
  static absl::StatusOr<std::shared_ptr<UploadTurns>> Create(int device);
  ~UploadTurns();
  UploadTurns(const UploadTurns&) = delete;
  UploadTurns& operator=(const UploadTurns&) = delete;

  // A launch's turn, held while its uploads are enqueued on one stream: no other launch of this GPU
  // enqueues uploads meanwhile, and the ones enqueued in it start after the previous turn's last.
  class Turn {
   public:
    // Makes `stream` wait for the previous turn's uploads (an event never recorded is complete).
    Turn(UploadTurns& turns, cudaStream_t stream);
    // Marks what `stream` holds now as this turn's uploads, the ones the next turn waits for.
    ~Turn();
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    // The wait's error, if enqueueing it failed; the caller then fails the launch.
    cudaError_t error() const { return error_; }

   private:
    UploadTurns& turns_;
    MutexLock lock_;  // on turns_.mutex_, for the turn's whole life
    cudaStream_t stream_;
    cudaError_t error_ = cudaSuccess;
  };

 private:
  UploadTurns(int device, cudaEvent_t last_upload) : device_(device), last_upload_(last_upload) {}

  const int device_;
  Mutex mutex_;
  // Recorded after each turn's uploads, on the stream that enqueued them; each record replaces the
  // one before for the waits enqueued after it (CUDA's event semantics), so one event serves all.
  // Waited on and recorded only by a Turn, under mutex_.
  cudaEvent_t const last_upload_;
};

}  // namespace normd

#endif  // NORMD_SERVER_UPLOAD_TURNS_H_
