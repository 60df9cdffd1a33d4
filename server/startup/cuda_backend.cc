#include "server/startup/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/config/memory_budget.h"
#include "server/config/usable_cpus.h"
#include "server/executors/cuda_executor.h"
#include "server/observability/log.h"
#include "server/startup/cuda_region_memory.h"

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
      return absl::InvalidArgumentError(absl::StrCat("--gpus=", text, ": '", part,
                                                     "' is not a GPU index below ", visible,
                                                     " (the visible device count)"));
    }
    if (std::find(gpus.begin(), gpus.end(), index) == gpus.end()) gpus.push_back(index);
  }
  return gpus;
}

// The median time of 5 copies of `bytes` (after one warm-up copy), in seconds; 0 if none could be
// timed.
double MedianCopySeconds(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemcpy(to, from, bytes, kind);
  std::vector<float> ms(5);
  for (float& m : ms) {
    cudaEventRecord(start);
    cudaMemcpyAsync(to, from, bytes, kind);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&m, start, stop);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGetLastError();
  return ms[2] > 0 ? ms[2] * 1e-3 : 0.0;
}

// A device-to-device copy of 256 MiB, counting bytes read plus written: the practical ceiling of a
// memory-bound kernel on this GPU (about 4.3 TB/s on an H200 here).
double MeasureDeviceCopyBytesPerSecond(int device) {
  constexpr size_t kBytes = size_t{256} << 20;
  cudaSetDevice(device);
  void *from = nullptr, *to = nullptr;
  double bytes_per_second = 0;
  if (cudaMalloc(&from, kBytes) == cudaSuccess && cudaMalloc(&to, kBytes) == cudaSuccess) {
    cudaMemset(from, 1, kBytes);
    const double seconds = MedianCopySeconds(to, from, kBytes, cudaMemcpyDeviceToDevice);
    if (seconds > 0) bytes_per_second = 2.0 * kBytes / seconds;
  }
  cudaFree(from);
  cudaFree(to);
  cudaGetLastError();
  return bytes_per_second;
}

struct HostLinkBandwidth {
  double h2d = 0;  // bytes per second, pinned host memory to device
  double d2h = 0;
};

// Copies of 64 MiB between pinned host memory and the device each way: the PCIe (or C2C) rate that
// large requests' transfers can reach, against which the pipelined launches' device time is judged
// (docs/PERFORMANCE.md, "Where a request's time goes on the H200").
HostLinkBandwidth MeasureHostLinkBandwidth(int device) {
  constexpr size_t kBytes = size_t{64} << 20;
  cudaSetDevice(device);
  void *host = nullptr, *dev = nullptr;
  HostLinkBandwidth result;
  if (cudaHostAlloc(&host, kBytes, cudaHostAllocDefault) == cudaSuccess &&
      cudaMalloc(&dev, kBytes) == cudaSuccess) {
    std::memset(host, 1, kBytes);
    const double up = MedianCopySeconds(dev, host, kBytes, cudaMemcpyHostToDevice);
    const double down = MedianCopySeconds(host, dev, kBytes, cudaMemcpyDeviceToHost);
    if (up > 0) result.h2d = kBytes / up;
    if (down > 0) result.d2h = kBytes / down;
  }
  cudaFree(dev);
  if (host != nullptr) cudaFreeHost(host);
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
  if (visible == 0)
    return absl::FailedPreconditionError("--backend=cuda: no CUDA device is visible");
  absl::StatusOr<std::vector<int>> gpus = ParseGpus(config.gpus, visible);
  if (!gpus.ok()) return gpus.status();
  Backend backend;
  backend.name = "cuda";
  BatchLimits limits = config.batch;
  const int workers = static_cast<int>(gpus->size()) * config.workers_per_gpu;
  const int cpus = UsableCpuCount();
  if (config.busy_poll_automatic) {
    limits.busy_poll = AutomaticBusyPoll(cpus, workers);
    Log(LogLevel::kInfo,
        "busy polling (--busy-poll-us=-1, automatic): ", absl::FormatDuration(limits.busy_poll),
        " for ", workers, " workers on ", cpus, " usable CPUs");
  }
  if (config.company_wait_automatic) {
    limits.company_wait = kCompanyWaitAutomatic;
    Log(LogLevel::kInfo, "waiting for company (--company-wait-us=-1, automatic): up to ",
        absl::FormatDuration(limits.company_wait),
        " for as many requests as the largest of the last ", limits.company_memory,
        " launches carried, if at least ", limits.company_min_requests, ", at most ",
        limits.company_max_requests);
  }
  CudaExecutorOptions options;
  options.weight_cache_bytes = config.max_weight_bytes;
  options.zero_copy_max_bytes = config.zero_copy_max_bytes;
  options.copy_threads =
      config.copy_threads > 0 ? config.copy_threads : AutomaticCopyThreads(cpus, workers);
  options.copy_spin = config.copy_spin_as_busy_poll ? limits.busy_poll : config.copy_spin;
  options.parallel_copy_min_bytes = config.parallel_copy_min_bytes;
  options.max_staging_buffer_bytes = StagingBufferBytes(config);
  if (config.max_pinned_bytes > 0) {
    Log(LogLevel::kInfo, "pinned staging (--max-pinned-bytes=", config.max_pinned_bytes,
        "): at most ", options.max_staging_buffer_bytes, " bytes per buffer, 4 per worker");
  }
  Log(LogLevel::kInfo, "copies to and from pinned memory: ", options.copy_threads,
      " threads per worker",
      options.copy_threads > 1
          ? absl::StrCat(" for launches of ", options.parallel_copy_min_bytes,
                         " bytes and more, polling ", absl::FormatDuration(options.copy_spin),
                         " after each such launch")
          : std::string());
  const int reply_threads =
      config.reply_threads > 0 ? config.reply_threads : AutomaticReplyThreads(cpus, workers);
  Log(LogLevel::kInfo, "answering a launch's requests: ", reply_threads, " threads per worker");
  for (int gpu : *gpus) {
    cudaDeviceProp props{};
    if (cudaError_t e = cudaGetDeviceProperties(&props, gpu); e != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("GPU ", gpu, ": cudaGetDeviceProperties: ", cudaGetErrorString(e)));
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
    Log(LogLevel::kInfo, "GPU ", gpu, ": ", props.name, ", ", props.totalGlobalMem >> 20,
        " MiB, device copy ", copy_bandwidth / 1e12, " TB/s, pinned host to device ",
        link.h2d / 1e9, " GB/s, device to host ", link.d2h / 1e9, " GB/s");
    for (int w = 0; w < config.workers_per_gpu; ++w) {
      absl::StatusOr<std::unique_ptr<CudaExecutor>> executor =
          CudaExecutor::Create(gpu, w, options, metrics);
      if (!executor.ok()) return executor.status();
      backend.workers.push_back(
          std::make_unique<Worker>(*std::move(executor), limits, metrics, reply_threads));
    }
  }
  backend.device_memory = std::make_unique<CudaRegionMemory>(*gpus);
  return backend;
}

}  // namespace normd
