#include "server/call_state.h"

#include <chrono>

#include "absl/time/clock.h"

namespace normd {
namespace {

void* SizeLike(const normd::v1::Tensor& like, normd::v1::Tensor& out) {
  out.set_dtype(like.dtype());
  *out.mutable_shape() = like.shape();
  std::string* data = out.mutable_data();
  data->resize(like.data().size());
  return data->data();
}

absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request, ValidatedRequest validated,
                                       normd::v1::NormalizeResponse& response,
                                       grpc::CallbackServerContext& context) {
  auto item = std::make_unique<WorkItem>();
  response.set_request_id(request.request_id());
  item->output = SizeLike(request.input(), *response.mutable_output());
  if (validated.residual != nullptr) {
    item->residual_out = SizeLike(request.residual(), *response.mutable_residual_out());
  }
  item->request = std::move(validated);
  item->enqueued = absl::Now();
  item->deadline = DeadlineOf(context);
  item->is_cancelled = [&context] { return context.IsCancelled(); };
  return item;
}

void FinishResponse(const absl::Status& status, const LaunchReport& report,
                    normd::v1::NormalizeResponse& response) {
  if (!status.ok()) {
    response.Clear();
    return;
  }
  normd::v1::Timing* timing = response.mutable_timing();
  timing->set_queue_us(absl::ToInt64Microseconds(report.queue_wait));
  timing->set_compute_us(absl::ToInt64Microseconds(report.compute));
  timing->set_batch_rows(report.batch_rows);
  timing->set_batch_requests(report.batch_requests);
}

}  // namespace normd
