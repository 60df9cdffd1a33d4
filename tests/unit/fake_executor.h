// FakeExecutor: a BatchExecutor for worker and scheduler tests. It computes nothing, records each
// launch's size, and can hold the first launch until the test releases it, so that requests queue
// up behind it and go out together in the next launch.
#ifndef NORMD_TESTS_UNIT_FAKE_EXECUTOR_H_
#define NORMD_TESTS_UNIT_FAKE_EXECUTOR_H_

#include <atomic>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "server/executors/batch_executor.h"

namespace normd {

class FakeExecutor : public BatchExecutor {
 public:
  absl::Status Start(const Launch& launch, StageTimes& /*stages*/) override {
    {
      normd::MutexLock lock(&mu_);
      launch_sizes_.push_back(static_cast<int>(launch.items.size()));
    }
    started_.fetch_add(1);
    if (hold_first_ && launch_count_++ == 0) release_.WaitForNotification();
    return absl::OkStatus();
  }
  std::string name() const override { return "fake"; }
  std::string device() const override { return "fake"; }

  std::vector<int> launch_sizes() {
    normd::MutexLock lock(&mu_);
    return launch_sizes_;
  }
  bool hold_first_ = false;
  normd::Notification release_;
  std::atomic<int> started_{0};

 private:
  int launch_count_ = 0;
  normd::Mutex mu_;
  std::vector<int> launch_sizes_;
};

}  // namespace normd

#endif  // NORMD_TESTS_UNIT_FAKE_EXECUTOR_H_
