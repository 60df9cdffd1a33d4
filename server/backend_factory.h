// Builds the workers for the configured backend. The only place in the server that knows whether
// normd was built with CUDA: everything else sees workers and executors.
#ifndef NORMD_SERVER_BACKEND_FACTORY_H_
#define NORMD_SERVER_BACKEND_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "normd/v1/normd.pb.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "server/worker.h"

namespace normd {

struct Backend {
  std::string name;  // "cpu" or "cuda"
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<normd::v1::Device> devices;
};

// `metrics` may be null; otherwise it must outlive the workers.
absl::StatusOr<Backend> MakeBackend(const ServerConfig& config, ServerMetrics* metrics);

}  // namespace normd

#endif  // NORMD_SERVER_BACKEND_FACTORY_H_
