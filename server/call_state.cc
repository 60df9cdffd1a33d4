#include "server/call_state.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace normd {
namespace {

absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

absl::Status ParseNormalizeRequest(const grpc::ByteBuffer& bytes,
                                   normd::v1::NormalizeRequest& request) {
  grpc::ByteBuffer parsed_from(
      bytes);  // shares the slices: Deserialize empties the buffer it is given
  if (grpc::Status parsed = grpc::SerializationTraits<normd::v1::NormalizeRequest>::Deserialize(
          &parsed_from, &request);
      !parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a normd.v1.NormalizeRequest (", parsed.error_message(), ")"));
  }
  return absl::OkStatus();
}

std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request,
                                       ValidatedRequest validated, ResponseWire& response,
                                       grpc::CallbackServerContext& context) {
  auto item = std::make_unique<WorkItem>();
  response.Prepare(request, /*with_residual_out=*/validated.residual != nullptr);
  item->output = response.output();
  item->residual_out = response.residual_out();
  item->request = std::move(validated);
  item->enqueued = absl::Now();
  item->deadline = DeadlineOf(context);
  item->is_cancelled = [&context] { return context.IsCancelled(); };
  return item;
}

}  // namespace normd
