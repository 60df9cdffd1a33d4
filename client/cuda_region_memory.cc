#include "client/cuda_region_memory.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"

namespace normd {
namespace {

absl::Status CudaError(const char* what, cudaError_t error) {
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

absl::Status CheckRange(int64_t offset, int64_t bytes, int64_t size) {
  if (offset < 0 || bytes < 0 || offset > size || bytes > size - offset) {
    return absl::OutOfRangeError(absl::StrCat("bytes [", offset, ", +", bytes, ") outside the ",
                                              size, " of the cuda memory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaRegionMemory>> CudaRegionMemory::Allocate(int device,
                                                                             int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError(absl::StrCat("cuda memory of ", bytes));
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return CudaError("cudaSetDevice", e);
  std::unique_ptr<CudaRegionMemory> memory(new CudaRegionMemory());
  memory->device_ = device;
  if (cudaError_t e = cudaMalloc(&memory->data_, static_cast<size_t>(bytes)); e != cudaSuccess) {
    return CudaError("cudaMalloc", e);
  }
  memory->size_ = bytes;
  cudaIpcMemHandle_t handle;
  if (cudaError_t e = cudaIpcGetMemHandle(&handle, memory->data_); e != cudaSuccess) {
    return CudaError("cudaIpcGetMemHandle", e);
  }
  memory->ipc_handle_.assign(reinterpret_cast<const char*>(&handle), sizeof handle);
  cudaDeviceProp properties{};
  if (cudaError_t e = cudaGetDeviceProperties(&properties, device); e != cudaSuccess) {
    return CudaError("cudaGetDeviceProperties", e);
  }
  memory->device_uuid_.assign(properties.uuid.bytes, sizeof properties.uuid.bytes);
  return memory;
}

CudaRegionMemory::~CudaRegionMemory() {
  if (data_ != nullptr) {
    cudaSetDevice(device_);
    cudaFree(data_);
  }
}

absl::Status CudaRegionMemory::CopyFromHost(int64_t offset, const void* from, int64_t bytes) {
  if (absl::Status s = CheckRange(offset, bytes, size_); !s.ok()) return s;
  cudaSetDevice(device_);
  if (cudaError_t e = cudaMemcpy(static_cast<char*>(data_) + offset, from,
                                 static_cast<size_t>(bytes), cudaMemcpyHostToDevice);
      e != cudaSuccess) {
    return CudaError("cudaMemcpy to the device", e);
  }
  return absl::OkStatus();
}

absl::Status CudaRegionMemory::CopyToHost(int64_t offset, void* to, int64_t bytes) const {
  if (absl::Status s = CheckRange(offset, bytes, size_); !s.ok()) return s;
  cudaSetDevice(device_);
  if (cudaError_t e = cudaMemcpy(to, static_cast<const char*>(data_) + offset,
                                 static_cast<size_t>(bytes), cudaMemcpyDeviceToHost);
      e != cudaSuccess) {
    return CudaError("cudaMemcpy from the device", e);
  }
  return absl::OkStatus();
}

absl::StatusOr<RegisteredRegion> RegisterCudaRegion(Client& client, const CudaRegionMemory& memory,
                                                    std::string label) {
  return client.RegisterCudaRegion(memory.ipc_handle(), memory.device_uuid(), 0, memory.size(),
                                   std::move(label));
}

}  // namespace normd
