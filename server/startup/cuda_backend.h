// The CUDA backend: which GPUs, how many workers on each, and what each GPU is (name, memory, its
// measured device-copy bandwidth, the ceiling the kernel bandwidth metric is read against).
#ifndef NORMD_SERVER_STARTUP_CUDA_BACKEND_H_
#define NORMD_SERVER_STARTUP_CUDA_BACKEND_H_

#include "absl/status/statusor.h"
#include "server/config/server_config.h"
#include "server/observability/metrics.h"
#include "server/startup/backend.h"

namespace normd {

// How many CUDA devices this process sees (0 when there is no driver or no device).
int VisibleCudaDevices();

// Workers for the GPUs of --gpus (default: every visible one), --workers-per-gpu each.
absl::StatusOr<Backend> MakeCudaBackend(const ServerConfig& config, ServerMetrics* metrics);

}  // namespace normd

#endif  // NORMD_SERVER_STARTUP_CUDA_BACKEND_H_
