#include "server/rpc/call_state.h"

#include <chrono>

#include "absl/time/clock.h"

namespace normd {
namespace {

absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request,
                                       ValidatedRequest validated, ResponseWire& response,
                                       grpc::CallbackServerContext& context) {
  auto item = std::make_unique<WorkItem>();
  response.Prepare(request, validated.input.size(), /*with_residual_out=*/validated.has_residual());
  item->output = response.output();
  item->residual_out = response.residual_out();
  item->request = std::move(validated);
  item->enqueued = absl::Now();
  item->deadline = DeadlineOf(context);
  item->is_cancelled = [&context] { return context.IsCancelled(); };
  return item;
}

}  // namespace normd
