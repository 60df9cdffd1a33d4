#include "server/rpc/call_state.h"

#include <chrono>

#include "absl/time/clock.h"
#include "server/rpc/region_references.h"

namespace normd {
namespace {

absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

absl::StatusOr<ValidatedRequest> ValidateReceived(const RequestWire& request,
                                                  const grpc::CallbackServerContext& context,
                                                  const ValidationLimits& limits,
                                                  WeightRegistry& weights,
                                                  const RegionRegistry* regions) {
  const normd::v1::NormalizeRequest& message = request.message();
  if (!UsesRegions(message)) {
    return ValidateNormalizeRequest(message, request.input_data(), request.residual_data(),
                                    request.weight_data(), limits, weights);
  }
  absl::StatusOr<ResolvedRegions> resolved = ResolveRegionReferences(
      message, request.input_data(), request.residual_data(), context.peer(), regions);
  if (!resolved.ok()) return resolved.status();
  absl::StatusOr<ValidatedRequest> validated = ValidateNormalizeRequest(
      message, resolved->input, resolved->residual, request.weight_data(), limits, weights);
  if (!validated.ok()) return validated;
  if (absl::Status s = ApplyRegions(*std::move(resolved), *validated); !s.ok()) return s;
  return validated;
}

std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request,
                                       ValidatedRequest validated, ResponseWire& response,
                                       grpc::CallbackServerContext& context) {
  auto item = std::make_unique<WorkItem>();
  const bool output_in_region = validated.output_memory != TensorMemory::kNormd;
  const bool residual_out_in_region = validated.residual_out_memory != TensorMemory::kNormd;
  response.Prepare(request, validated.input.size(), /*with_residual_out=*/validated.has_residual(),
                   output_in_region ? &request.output_region() : nullptr,
                   residual_out_in_region ? &request.residual_out_region() : nullptr);
  item->output = output_in_region ? validated.output_in_region : response.output();
  item->residual_out =
      residual_out_in_region ? validated.residual_out_in_region : response.residual_out();
  item->request = std::move(validated);
  item->enqueued = absl::Now();
  item->deadline = DeadlineOf(context);
  item->is_cancelled = [&context] { return context.IsCancelled(); };
  return item;
}

}  // namespace normd
