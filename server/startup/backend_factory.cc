#include "server/startup/backend_factory.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/executors/cpu_executor.h"
#ifdef NORMD_HAVE_CUDA
#include "server/startup/cuda_backend.h"
#endif

namespace normd {
namespace {

// The CPU's copy ceiling, the counterpart of a GPU's device-to-device copy: one thread copying 32
// MiB, best of three (about 10 ms at start-up).
double MeasureMemcpyBytesPerSecond() {
  constexpr size_t kBytes = size_t{32} << 20;
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const absl::Time start = absl::Now();
    std::memcpy(to.data(), from.data(), kBytes);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    // Bytes read plus bytes written, as the kernels' bandwidth counts them.
    if (seconds > 0) best = std::max(best, 2.0 * kBytes / seconds);
  }
  return best;
}

Backend MakeCpuBackend(const ServerConfig& config, ServerMetrics* metrics) {
  if (metrics != nullptr) {
    metrics->SetDeviceCopyBandwidth("cpu", MeasureMemcpyBytesPerSecond());
    metrics->pinned_bytes("cpu").Set(0);  // the CPU backend stages nothing
    metrics->device_bytes("cpu").Set(0);
  }
  Backend backend;
  backend.name = "cpu";
  // One worker owning a pool of every core: a launch is spread over the cores, and requests that
  // arrive meanwhile batch up behind it.
  backend.workers.push_back(
      std::make_unique<Worker>(std::make_unique<CpuExecutor>(config.cpu_threads), config.batch,
                               metrics, config.reply_threads > 0 ? config.reply_threads : 1));
  normd::v1::Device device;
  device.set_name(absl::StrCat("cpu (", config.cpu_threads, " threads)"));
  device.set_memory_bytes(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE));
  device.set_kind("cpu");
  backend.devices.push_back(std::move(device));
  return backend;
}

}  // namespace

bool BuiltWithCuda() {
#ifdef NORMD_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

absl::StatusOr<Backend> MakeBackend(const ServerConfig& config, ServerMetrics* metrics) {
#ifdef NORMD_HAVE_CUDA
  if (config.backend == "cuda" || (config.backend == "auto" && VisibleCudaDevices() > 0)) {
    return MakeCudaBackend(config, metrics);
  }
#else
  if (config.backend == "cuda") {
    return absl::FailedPreconditionError(
        "--backend=cuda: this normd was built without CUDA (nvcc was not found); use --backend=cpu "
        "or auto");
  }
#endif
  return MakeCpuBackend(config, metrics);
}

}  // namespace normd
