// What a GPU backend lends the region registry: registering system regions with the driver and
// opening CUDA regions. The CUDA backend implements it (server/startup/cuda_region_memory.h); the
// CPU backend has none, and then only system regions exist, computed on the host.
#ifndef NORMD_SERVER_REGIONS_DEVICE_MEMORY_H_
#define NORMD_SERVER_REGIONS_DEVICE_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace normd {

// A client's GPU allocation, opened in normd.
struct OpenedDeviceMemory {
  int device = -1;       // normd's ordinal of the GPU
  char* base = nullptr;  // the allocation's first byte, a device pointer
  int64_t bytes = 0;     // the allocation's size
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;

  // Registers a system region's pages with the driver (page-locked, usable by every GPU), so that
  // copies and kernels reach them directly: no staging copy. Once per region, at registration
  // (registering 32 MiB took 13 ms on the H200 machine); Unpin when the region is released.
  virtual absl::Status Pin(void* data, int64_t bytes) = 0;
  virtual void Unpin(void* data) = 0;

  // Opens a client's allocation from its cudaIpcMemHandle_t bytes, on the GPU with that UUID.
  // The same allocation opened twice yields the same pointer (each Open needs its Close).
  virtual absl::StatusOr<OpenedDeviceMemory> Open(absl::string_view ipc_handle,
                                                  absl::string_view device_uuid) = 0;
  virtual void Close(const OpenedDeviceMemory& memory) = 0;
};

}  // namespace normd

#endif  // NORMD_SERVER_REGIONS_DEVICE_MEMORY_H_
