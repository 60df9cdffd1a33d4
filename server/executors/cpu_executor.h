// The CPU backend's executor: computes a launch with the vectorized CPU kernels, spreading its rows
// over a thread pool. Reads request bytes and writes response bytes in place: nothing is staged or
// copied.
#ifndef NORMD_SERVER_EXECUTORS_CPU_EXECUTOR_H_
#define NORMD_SERVER_EXECUTORS_CPU_EXECUTOR_H_

#include <memory>
#include <string>

#include "server/executors/batch_executor.h"
#include "server/executors/task_pool.h"

namespace normd {

class CpuExecutor : public BatchExecutor {
 public:
  // `threads`: how many cores one launch may use (the calling worker thread included).
  explicit CpuExecutor(int threads);

  absl::Status Start(const Launch& launch, StageTimes& stages) override;
  bool runs_on_caller_thread() const override { return true; }
  std::string name() const override { return "cpu"; }
  std::string device() const override { return "cpu"; }

 private:
  TaskPool pool_;
};

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_CPU_EXECUTOR_H_
