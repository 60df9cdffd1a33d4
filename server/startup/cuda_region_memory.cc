#include "server/startup/cuda_region_memory.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/observability/log.h"

namespace normd {
namespace {

absl::Status CudaError(const char* what, cudaError_t error) {
  cudaGetLastError();  // registration errors are not sticky; clear them for the next call
  return absl::InternalError(absl::StrCat(what, " failed: ", cudaGetErrorString(error)));
}

// The driver's cuMemGetAddressRange (the runtime has no counterpart), found through the runtime
// so that normd needs no link to libcuda.
using GetAddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);

GetAddressRange AddressRangeFunction() {
  static const GetAddressRange function = [] {
    void* found = nullptr;
    cudaDriverEntryPointQueryResult result{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &found, 12000, cudaEnableDefault,
                                         &result) != cudaSuccess ||
        result != cudaDriverEntryPointSuccess) {
      return static_cast<GetAddressRange>(nullptr);
    }
    return reinterpret_cast<GetAddressRange>(found);
  }();
  return function;
}

}  // namespace

CudaRegionMemory::CudaRegionMemory(std::vector<int> gpus) {
  for (int gpu : gpus) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, gpu) != cudaSuccess) continue;
    gpu_uuids_.emplace_back(gpu, std::string(props.uuid.bytes, sizeof props.uuid.bytes));
  }
}

absl::Status CudaRegionMemory::Pin(void* data, int64_t bytes) {
  if (cudaError_t e = cudaHostRegister(data, static_cast<size_t>(bytes),
                                       cudaHostRegisterPortable | cudaHostRegisterMapped);
      e != cudaSuccess) {
    return CudaError("cudaHostRegister of the region", e);
  }
  // The kernels take the host address itself (unified addressing): check that the GPUs see the
  // pages there.
  void* on_device = nullptr;
  if (cudaError_t e = cudaHostGetDevicePointer(&on_device, data, 0);
      e != cudaSuccess || on_device != data) {
    cudaHostUnregister(data);
    return e != cudaSuccess
               ? CudaError("cudaHostGetDevicePointer", e)
               : absl::FailedPreconditionError(
                     "this GPU does not reach registered host memory at its host address");
  }
  return absl::OkStatus();
}

void CudaRegionMemory::Unpin(void* data) {
  if (cudaError_t e = cudaHostUnregister(data); e != cudaSuccess) {
    Log(LogLevel::kWarning, "cudaHostUnregister of a region failed: ", cudaGetErrorString(e));
    cudaGetLastError();
  }
}

absl::StatusOr<int> CudaRegionMemory::GpuWithUuid(absl::string_view uuid) const {
  for (const auto& [gpu, gpu_uuid] : gpu_uuids_) {
    if (gpu_uuid == uuid) return gpu;
  }
  return absl::NotFoundError(absl::StrCat("device_uuid: no GPU normd serves has UUID ",
                                          absl::BytesToHexString(uuid.substr(0, 16)),
                                          " (see --gpus)"));
}

absl::StatusOr<OpenedDeviceMemory> CudaRegionMemory::Open(absl::string_view ipc_handle,
                                                          absl::string_view device_uuid) {
  if (ipc_handle.size() != sizeof(cudaIpcMemHandle_t)) {
    return absl::InvalidArgumentError(absl::StrCat("ipc_handle: ", ipc_handle.size(),
                                                   " bytes; a cudaIpcMemHandle_t has ",
                                                   sizeof(cudaIpcMemHandle_t)));
  }
  if (device_uuid.size() != 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_uuid: ", device_uuid.size(), " bytes; a GPU's UUID has 16"));
  }
  absl::StatusOr<int> gpu = GpuWithUuid(device_uuid);
  if (!gpu.ok()) return gpu.status();
  const std::string key = absl::StrCat(*gpu, ":", ipc_handle);
  normd::MutexLock lock(&mu_);
  if (auto it = open_.find(key); it != open_.end()) {
    ++it->second.references;
    return it->second.memory;
  }
  GetAddressRange address_range = AddressRangeFunction();
  if (address_range == nullptr) {
    return absl::FailedPreconditionError(
        "the CUDA driver does not provide cuMemGetAddressRange; cuda regions cannot be checked");
  }
  if (cudaError_t e = cudaSetDevice(*gpu); e != cudaSuccess) return CudaError("cudaSetDevice", e);
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, ipc_handle.data(), sizeof handle);
  void* base = nullptr;
  if (cudaError_t e = cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess);
      e != cudaSuccess) {
    cudaGetLastError();
    return absl::InvalidArgumentError(
        absl::StrCat("ipc_handle: cudaIpcOpenMemHandle failed: ", cudaGetErrorString(e),
                     " (a handle of a live allocation, exported by another process, is needed)"));
  }
  CUdeviceptr range_base = 0;
  size_t range_bytes = 0;
  if (address_range(&range_base, &range_bytes, reinterpret_cast<CUdeviceptr>(base)) !=
          CUDA_SUCCESS ||
      range_base != reinterpret_cast<CUdeviceptr>(base)) {
    cudaIpcCloseMemHandle(base);
    return absl::InternalError("cuMemGetAddressRange of the opened allocation failed");
  }
  OpenAllocation& opened = open_[key];
  opened.memory =
      OpenedDeviceMemory{*gpu, static_cast<char*>(base), static_cast<int64_t>(range_bytes)};
  opened.references = 1;
  return opened.memory;
}

void CudaRegionMemory::Close(const OpenedDeviceMemory& memory) {
  normd::MutexLock lock(&mu_);
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->second.memory.base != memory.base || it->second.memory.device != memory.device) {
      continue;
    }
    if (--it->second.references > 0) return;
    cudaSetDevice(memory.device);
    // Kernels on it have finished: a region is released only after its last request.
    if (cudaError_t e = cudaIpcCloseMemHandle(memory.base); e != cudaSuccess) {
      Log(LogLevel::kWarning, "cudaIpcCloseMemHandle failed: ", cudaGetErrorString(e));
      cudaGetLastError();
    }
    open_.erase(it);
    return;
  }
}

}  // namespace normd
