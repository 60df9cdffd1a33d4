// Runs one small launch on every worker before normd reports SERVING, so that the first client
// request does not pay for lazy initialization (CUDA context and module load, thread start-up) and
// so that a backend that cannot compute is caught at start-up rather than by a client.
#ifndef NORMD_SERVER_STARTUP_WARM_UP_H_
#define NORMD_SERVER_STARTUP_WARM_UP_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "server/batching/worker.h"

namespace normd {

absl::Status WarmUpWorkers(const std::vector<std::unique_ptr<Worker>>& workers);

}  // namespace normd

#endif  // NORMD_SERVER_STARTUP_WARM_UP_H_
