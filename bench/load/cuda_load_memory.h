// The device side of a cuda-ipc load (region_load.h): GPU memory of normbench's, exported for
// normd. Built with CUDA into cuda_load_memory.cc, without it into no_cuda_load_memory.cc (which
// says normbench cannot).
#ifndef NORMD_BENCH_LOAD_CUDA_LOAD_MEMORY_H_
#define NORMD_BENCH_LOAD_CUDA_LOAD_MEMORY_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "client/normd_client.h"

namespace normd::bench {

class DeviceLoadMemory {
 public:
  virtual ~DeviceLoadMemory() = default;
  virtual absl::Status CopyFromHost(int64_t offset, const void* from, int64_t bytes) = 0;
  virtual absl::StatusOr<RegisteredRegion> Register(Client& client) = 0;
};

// `bytes` of memory on GPU 0 of this process.
absl::StatusOr<std::unique_ptr<DeviceLoadMemory>> AllocateDeviceLoadMemory(int64_t bytes);

}  // namespace normd::bench

#endif  // NORMD_BENCH_LOAD_CUDA_LOAD_MEMORY_H_
