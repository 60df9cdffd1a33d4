#include "server/backend_factory.h"

#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/cpu_executor.h"

namespace normd {
namespace {

Backend MakeCpuBackend(const ServerConfig& config) {
  Backend backend;
  backend.name = "cpu";
  // One worker owning a pool of every core: a launch is spread over the cores, and requests that
  // arrive meanwhile batch up behind it.
  backend.workers.push_back(
      std::make_unique<Worker>(std::make_unique<CpuExecutor>(config.cpu_threads), config.batch));
  normd::v1::Device device;
  device.set_name(absl::StrCat("cpu (", config.cpu_threads, " threads)"));
  device.set_memory_bytes(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE));
  device.set_kind("cpu");
  backend.devices.push_back(std::move(device));
  return backend;
}

}  // namespace

absl::StatusOr<Backend> MakeBackend(const ServerConfig& config) {
  if (config.backend == "cuda") {
    return absl::FailedPreconditionError(
        "--backend=cuda: this normd has no CUDA backend; use --backend=cpu or auto");
  }
  return MakeCpuBackend(config);
}

}  // namespace normd
