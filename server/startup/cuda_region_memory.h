// The CUDA backend's side of shared-memory regions (server/regions/device_memory.h).
//
// System regions are registered with the driver once (cudaHostRegister, portable and mapped):
// the pages stay locked while the region lives, and every GPU's kernels reach them at their host
// address, so the executors compute straight from and into the client's pages, with no staging
// copy. (A client that truncates such an object afterwards cannot make the GPU fault: the
// driver keeps the locked pages.) CUDA regions are opened once per allocation
// (cudaIpcOpenMemHandle, reference-counted here, since a process opens an allocation once) on the
// GPU whose UUID the client named, among the GPUs normd serves; the allocation's size comes from
// the driver, so that a region can be checked against it.
//
// Thread-safe: calls come from gRPC's threads (registration) and from whichever thread releases a
// region last (a worker).
#ifndef NORMD_SERVER_STARTUP_CUDA_REGION_MEMORY_H_
#define NORMD_SERVER_STARTUP_CUDA_REGION_MEMORY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"
#include "server/regions/device_memory.h"

namespace normd {

class CudaRegionMemory : public DeviceMemory {
 public:
  // `gpus`: the ordinals normd serves (its --gpus); CUDA regions must be on one of them.
  explicit CudaRegionMemory(std::vector<int> gpus);

  absl::Status Pin(void* data, int64_t bytes) override;
  void Unpin(void* data) override;
  absl::StatusOr<OpenedDeviceMemory> Open(absl::string_view ipc_handle,
                                          absl::string_view device_uuid) override;
  void Close(const OpenedDeviceMemory& memory) override;

 private:
  struct OpenAllocation {
    OpenedDeviceMemory memory;
    int references = 0;
  };

  // The ordinal of the served GPU with this UUID, or NOT_FOUND.
  absl::StatusOr<int> GpuWithUuid(absl::string_view uuid) const;

  std::vector<std::pair<int, std::string>> gpu_uuids_;  // (ordinal, 16-byte UUID)
  normd::Mutex mu_;
  // By GPU and handle bytes.
  absl::flat_hash_map<std::string, OpenAllocation> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd

#endif  // NORMD_SERVER_STARTUP_CUDA_REGION_MEMORY_H_
