// The backend interface: computes one launch (one dtype and hidden size, many requests).
//
// A launch goes through two phases, so that a worker can overlap consecutive launches: Start()
// packs and enqueues the work (CUDA: pack into a pinned staging slot, copy up, launch, copy down,
// all on the worker's stream) and returns without waiting for the device; Finish() waits for that
// launch and delivers its results into the requests' output buffers. A worker may Start up to
// max_in_flight() launches before it Finishes the oldest; launches finish in the order they
// started. The CPU executor does all its work in Start (max_in_flight 1).
//
// A worker owns one executor and never lets two threads call it at once (its own thread, or a
// submitting thread when runs_on_caller_thread() allows), so an executor needs no locking of its
// own state.
#ifndef NORMD_SERVER_EXECUTORS_BATCH_EXECUTOR_H_
#define NORMD_SERVER_EXECUTORS_BATCH_EXECUTOR_H_

#include <string>

#include "absl/status/status.h"
#include "server/core/work.h"
#include "server/observability/metrics.h"

namespace normd {

class BatchExecutor {
 public:
  virtual ~BatchExecutor() = default;

  // Begins computing every request of the launch into its output (and residual_out) buffers, adding
  // the time of the stages it ran to `stages`. An error fails the whole launch (Finish is then not
  // called for it); the worker answers each request with it.
  virtual absl::Status Start(const Launch& launch, StageTimes& stages) = 0;

  // Waits for the oldest started launch (`launch`) and completes it, adding its stage times.
  virtual absl::Status Finish(const Launch& launch, StageTimes& stages) {
    (void)launch;
    (void)stages;
    return absl::OkStatus();
  }

  // How many launches may be started and not yet finished.
  virtual int max_in_flight() const { return 1; }

  // True when the thread submitting a request may run its launch itself (Start, then Finish) while
  // the worker thread is idle: that saves two thread hand-offs per request at low load. The worker
  // still never lets two threads use the executor at once.
  virtual bool runs_on_caller_thread() const { return false; }

  // False once the executor has hit an error it cannot recover from (a sticky CUDA error): the
  // scheduler then stops sending it work.
  virtual bool healthy() const { return true; }

  // A short name for logs: "cpu", "cuda:0".
  virtual std::string name() const = 0;
  // The metrics' device label: "cpu", or the GPU's index ("0").
  virtual std::string device() const = 0;
};

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_BATCH_EXECUTOR_H_
