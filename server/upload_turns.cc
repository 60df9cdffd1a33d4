#include "server/upload_turns.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace normd {

absl::StatusOr<std::shared_ptr<UploadTurns>> UploadTurns::Create(int device) {
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("GPU ", device, ": cudaSetDevice: ", cudaGetErrorString(e)));
  }
  cudaEvent_t event = nullptr;
  if (cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming); e != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("GPU ", device, ": cudaEventCreate: ", cudaGetErrorString(e)));
  }
  return std::shared_ptr<UploadTurns>(new UploadTurns(device, event));
}

UploadTurns::~UploadTurns() {
  // The executors sharing this object have synchronized their streams in their destructors, and
  // hold it until then: no wait on the event is pending.
  cudaSetDevice(device_);
  cudaEventDestroy(last_upload_);
}

UploadTurns::Turn::Turn(UploadTurns& turns, cudaStream_t stream)
    : turns_(turns), lock_(&turns.mutex_), stream_(stream) {
  error_ = cudaStreamWaitEvent(stream_, turns_.last_upload_, 0);
}

UploadTurns::Turn::~Turn() {
  // Recorded even after a failed enqueue: a record marks what the stream holds, whatever it is, and
  // the next turn then waits for no more than that.
  cudaEventRecord(turns_.last_upload_, stream_);
}

}  // namespace normd
