// GPU memory of this process to share with normd as a cuda region (normd's --shared-memory=cuda,
// docs/SHARED_MEMORY.md): cudaMalloc'd on one device and exported with cudaIpcGetMemHandle, with
// the device's UUID, as Client::RegisterCudaRegion takes them. normd opens the allocation once and
// runs its kernel on it in place.
//
// In the normd_client_cuda library, built only where CUDA is (the client library itself needs no
// GPU). A process that holds such memory must keep it allocated while it is registered.
#ifndef NORMD_CLIENT_CUDA_REGION_MEMORY_H_
#define NORMD_CLIENT_CUDA_REGION_MEMORY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/normd_client.h"

namespace normd {

class CudaRegionMemory {
 public:
  // `bytes` of device memory on GPU `device` (this process's ordinal).
  static absl::StatusOr<std::unique_ptr<CudaRegionMemory>> Allocate(int device, int64_t bytes);
  ~CudaRegionMemory();
  CudaRegionMemory(const CudaRegionMemory&) = delete;
  CudaRegionMemory& operator=(const CudaRegionMemory&) = delete;

  void* data() const { return data_; }  // a device pointer
  int64_t size() const { return size_; }
  int device() const { return device_; }
  const std::string& ipc_handle() const { return ipc_handle_; }    // 64 bytes
  const std::string& device_uuid() const { return device_uuid_; }  // 16 bytes

  // Synchronous copies between host memory and [offset, offset + bytes) of this memory.
  absl::Status CopyFromHost(int64_t offset, const void* from, int64_t bytes);
  absl::Status CopyToHost(int64_t offset, void* to, int64_t bytes) const;

 private:
  CudaRegionMemory() = default;

  void* data_ = nullptr;
  int64_t size_ = 0;
  int device_ = 0;
  std::string ipc_handle_;
  std::string device_uuid_;
};

// Registers all of `memory` as a cuda region on `client`'s connection.
absl::StatusOr<RegisteredRegion> RegisterCudaRegion(Client& client, const CudaRegionMemory& memory,
                                                    std::string label = "");

}  // namespace normd

#endif  // NORMD_CLIENT_CUDA_REGION_MEMORY_H_
