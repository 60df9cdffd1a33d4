#include "server/startup/warm_up.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "kernels/dtype.h"

namespace normd {

absl::Status WarmUpWorkers(const std::vector<std::unique_ptr<Worker>>& workers) {
  constexpr int64_t kHidden = 64;
  std::vector<float> input(kHidden), weight(kHidden, 1.0f), output(kHidden, NAN);
  for (int64_t i = 0; i < kHidden; ++i)
    input[static_cast<size_t>(i)] = static_cast<float>(i % 7) - 3.0f;
  for (size_t w = 0; w < workers.size(); ++w) {
    normd::Notification done;
    absl::Status result;
    auto item = std::make_unique<WorkItem>();
    item->request.dtype = DType::kFloat32;
    item->request.rows = 1;
    item->request.hidden = kHidden;
    item->request.input =
        TensorBytes::Contiguous(input.data(), kHidden * static_cast<int64_t>(sizeof(float)));
    item->request.weight =
        TensorBytes::Contiguous(weight.data(), kHidden * static_cast<int64_t>(sizeof(float)));
    item->request.weight_dtype = DType::kFloat32;
    item->request.eps = 1e-6f;
    item->output = output.data();
    item->enqueued = absl::Now();
    item->is_warm_up = true;
    item->on_done = [&](const absl::Status& status, const LaunchReport&) {
      result = status;
      done.Notify();
    };
    workers[w]->Submit(std::move(item));
    done.WaitForNotification();
    if (!result.ok()) {
      return absl::Status(result.code(),
                          absl::StrCat("warm-up on worker ", w, " (", workers[w]->executor().name(),
                                       ") failed: ", result.message()));
    }
    // Input row 0..6 pattern -3..3 has a known nonzero RMS: every output must be finite.
    for (float y : output) {
      if (!std::isfinite(y)) {
        return absl::InternalError(
            absl::StrCat("warm-up on worker ", w, " produced a non-finite output"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace normd
