// Builds the workers for the configured backend. The only place in the server that knows whether
// normd was built with CUDA: everything else sees workers and executors.
#ifndef NORMD_SERVER_STARTUP_BACKEND_FACTORY_H_
#define NORMD_SERVER_STARTUP_BACKEND_FACTORY_H_

#include "absl/status/statusor.h"
#include "server/config/server_config.h"
#include "server/observability/metrics.h"
#include "server/startup/backend.h"

namespace normd {

// Whether this normd was built with the CUDA backend.
bool BuiltWithCuda();

// `metrics` may be null; otherwise it must outlive the workers.
absl::StatusOr<Backend> MakeBackend(const ServerConfig& config, ServerMetrics* metrics);

}  // namespace normd

#endif  // NORMD_SERVER_STARTUP_BACKEND_FACTORY_H_
