#include "server/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/cuda_executor.h"
#include "server/log.h"

namespace normd {
namespace {

absl::StatusOr<std::vector<int>> ParseGpus(const std::string& text, int visible) {
  std::vector<int> gpus;
  if (text.empty()) {
    for (int i = 0; i < visible; ++i) gpus.push_back(i);
    return gpus;
  }
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int index;
    if (!absl::SimpleAtoi(part, &index) || index < 0 || index >= visible) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus=", text, ": '", part, "' is not a GPU index below ",
                                                     visible, " (the visible device count)"));
    }
    if (std::find(gpus.begin(), gpus.end(), index) == gpus.end()) gpus.push_back(index);
  }
  return gpus;
}

// A device-to-device copy of 256 MiB, median of 5 after a warm-up, counting bytes read plus written:
// the practical ceiling of a memory-bound kernel on this GPU (about 4.3 TB/s on an H200 here).
double MeasureDeviceCopyBytesPerSecond(int device) {
  constexpr size_t kBytes = size_t{256} << 20;
  cudaSetDevice(device);
  void *from = nullptr, *to = nullptr;
  if (cudaMalloc(&from, kBytes) != cudaSuccess) return 0;
  if (cudaMalloc(&to, kBytes) != cudaSuccess) {
    cudaFree(from);
    return 0;
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemset(from, 1, kBytes);
  cudaMemcpy(to, from, kBytes, cudaMemcpyDeviceToDevice);
  std::vector<float> ms(5);
  for (float& m : ms) {
    cudaEventRecord(start);
    cudaMemcpyAsync(to, from, kBytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&m, start, stop);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(from);
  cudaFree(to);
  cudaGetLastError();
  return ms[2] > 0 ? 2.0 * kBytes / (ms[2] * 1e-3) : 0;
}

struct HostLinkBandwidth {
  double h2d = 0;  // bytes per second, pinned host memory to device
  double d2h = 0;
};

// Copies of 64 MiB between pinned host memory and the device each way, median of 5 after a warm-up:
// the PCIe (or C2C) rate that large requests' transfers can reach, against which the pipelined
// launches' device time is judged (docs/BENCHMARKS.md).
HostLinkBandwidth MeasureHostLinkBandwidth(int device) {
  constexpr size_t kBytes = size_t{64} << 20;
  cudaSetDevice(device);
  void *host = nullptr, *dev = nullptr;
  HostLinkBandwidth result;
  if (cudaHostAlloc(&host, kBytes, cudaHostAllocDefault) != cudaSuccess) return result;
  if (cudaMalloc(&dev, kBytes) != cudaSuccess) {
    cudaFreeHost(host);
    return result;
  }
  std::memset(host, 1, kBytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  auto median_bytes_per_second = [&](cudaMemcpyKind kind) {
    void* to = kind == cudaMemcpyHostToDevice ? dev : host;
    const void* from = kind == cudaMemcpyHostToDevice ? host : dev;
    cudaMemcpy(to, from, kBytes, kind);
    std::vector<float> ms(5);
    for (float& m : ms) {
      cudaEventRecord(start);
      cudaMemcpyAsync(to, from, kBytes, kind);
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      cudaEventElapsedTime(&m, start, stop);
    }
    std::sort(ms.begin(), ms.end());
    return ms[2] > 0 ? kBytes / (ms[2] * 1e-3) : 0.0;
  };
  result.h2d = median_bytes_per_second(cudaMemcpyHostToDevice);
  result.d2h = median_bytes_per_second(cudaMemcpyDeviceToHost);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(dev);
  cudaFreeHost(host);
  cudaGetLastError();
  return result;
}

}  // namespace

int VisibleCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

absl::StatusOr<Backend> MakeCudaBackend(const ServerConfig& config, ServerMetrics* metrics) {
  const int visible = VisibleCudaDevices();
  if (visible == 0) return absl::FailedPreconditionError("--backend=cuda: no CUDA device is visible");
  absl::StatusOr<std::vector<int>> gpus = ParseGpus(config.gpus, visible);
  if (!gpus.ok()) return gpus.status();
  Backend backend;
  backend.name = "cuda";
  for (int gpu : *gpus) {
    cudaDeviceProp props{};
    if (cudaError_t e = cudaGetDeviceProperties(&props, gpu); e != cudaSuccess) {
      return absl::InternalError(absl::StrCat("GPU ", gpu, ": cudaGetDeviceProperties: ", cudaGetErrorString(e)));
    }
    normd::v1::Device device;
    device.set_name(props.name);
    device.set_memory_bytes(static_cast<int64_t>(props.totalGlobalMem));
    device.set_kind("cuda");
    backend.devices.push_back(device);
    const double copy_bandwidth = MeasureDeviceCopyBytesPerSecond(gpu);
    if (metrics != nullptr) metrics->SetDeviceCopyBandwidth(std::to_string(gpu), copy_bandwidth);
    const HostLinkBandwidth link = MeasureHostLinkBandwidth(gpu);
    if (metrics != nullptr) {
      metrics->SetHostLinkBandwidth(std::to_string(gpu), "h2d", link.h2d);
      metrics->SetHostLinkBandwidth(std::to_string(gpu), "d2h", link.d2h);
    }
    Log(LogLevel::kInfo, "GPU ", gpu, ": ", props.name, ", ", props.totalGlobalMem >> 20, " MiB, device copy ",
        copy_bandwidth / 1e12, " TB/s, pinned host to device ", link.h2d / 1e9, " GB/s, device to host ",
        link.d2h / 1e9, " GB/s");
    for (int w = 0; w < config.workers_per_gpu; ++w) {
      absl::StatusOr<std::unique_ptr<CudaExecutor>> executor =
          CudaExecutor::Create(gpu, w, config.max_weight_bytes, config.zero_copy_max_bytes, metrics);
      if (!executor.ok()) return executor.status();
      backend.workers.push_back(std::make_unique<Worker>(*std::move(executor), config.batch, metrics));
    }
  }
  return backend;
}

}  // namespace normd
