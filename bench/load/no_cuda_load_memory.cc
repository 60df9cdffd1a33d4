#include "bench/load/cuda_load_memory.h"

namespace normd::bench {

absl::StatusOr<std::unique_ptr<DeviceLoadMemory>> AllocateDeviceLoadMemory(int64_t /*bytes*/) {
  return absl::FailedPreconditionError(
      "--transport=cuda-ipc: this normbench was built without CUDA (nvcc was not found)");
}

}  // namespace normd::bench
