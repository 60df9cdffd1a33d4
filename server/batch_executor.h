// The backend interface: computes one launch (one dtype and hidden size, many requests).
//
// A worker owns one executor and calls it from its own thread only, so an executor needs no locking of
// its own state. The CPU executor computes straight from request bytes into response bytes; the CUDA
// executor packs into pinned staging, copies, launches and copies back on the worker's stream.
#ifndef NORMD_SERVER_BATCH_EXECUTOR_H_
#define NORMD_SERVER_BATCH_EXECUTOR_H_

#include <string>

#include "absl/status/status.h"
#include "server/batch_former.h"
#include "server/metrics.h"

namespace normd {

class BatchExecutor {
 public:
  virtual ~BatchExecutor() = default;

  // Computes every request of the launch into its output (and residual_out) buffers, and records how
  // long each of its stages took. An error fails the whole launch; the worker answers each request
  // with it.
  virtual absl::Status Run(const Launch& launch, StageTimes& stages) = 0;

  // A short name for logs: "cpu", "cuda:0".
  virtual std::string name() const = 0;
  // The metrics' device label: "cpu", or the GPU's index ("0").
  virtual std::string device() const = 0;
};

}  // namespace normd

#endif  // NORMD_SERVER_BATCH_EXECUTOR_H_
