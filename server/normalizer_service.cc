#include "server/normalizer_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/call_state.h"
#include "server/normalize_stream_reactor.h"
#include "server/status_util.h"

namespace normd {

NormalizerService::NormalizerService(Scheduler& scheduler, WeightRegistry& weights, ServiceOptions options)
    : scheduler_(scheduler), weights_(weights), options_(std::move(options)) {}

grpc::ServerUnaryReactor* NormalizerService::Normalize(grpc::CallbackServerContext* context,
                                                       const normd::v1::NormalizeRequest* request,
                                                       normd::v1::NormalizeResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<ValidatedRequest> validated = ValidateNormalizeRequest(*request, options_.limits, weights_);
  if (!validated.ok()) {
    reactor->Finish(ToGrpcStatus(validated.status()));
    return reactor;
  }
  std::unique_ptr<WorkItem> item = MakeWorkItem(*request, *std::move(validated), *response, *context);
  item->on_done = [reactor, response](const absl::Status& status, const LaunchReport& report) {
    FinishResponse(status, report, *response);
    reactor->Finish(ToGrpcStatus(status));
  };
  if (absl::Status admitted = scheduler_.Submit(std::move(item)); !admitted.ok()) {
    response->Clear();
    reactor->Finish(ToGrpcStatus(admitted));
  }
  return reactor;
}

grpc::ServerBidiReactor<normd::v1::NormalizeRequest, normd::v1::NormalizeResponse>*
NormalizerService::NormalizeStream(grpc::CallbackServerContext* context) {
  return new NormalizeStreamReactor(context, scheduler_, weights_, options_.limits,
                                    options_.stream_max_inflight);
}

grpc::ServerUnaryReactor* NormalizerService::RegisterWeight(grpc::CallbackServerContext* context,
                                                            const normd::v1::RegisterWeightRequest* request,
                                                            normd::v1::RegisterWeightResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Status status = [&]() -> absl::Status {
    if (!request->has_weight()) return absl::InvalidArgumentError("weight: missing; send a [hidden] tensor");
    DType dtype;
    int64_t rows, hidden;
    NORMD_RETURN_IF_ERROR(ValidateTensor(request->weight(), "weight", &dtype, &rows, &hidden));
    if (request->weight().shape_size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("weight: shape has ", request->weight().shape_size(),
                                                     " dimensions; a weight is 1-D [hidden]"));
    }
    if (hidden > options_.limits.max_hidden) {
      return absl::InvalidArgumentError(absl::StrCat("hidden: weight length ", hidden, " exceeds --max-hidden = ",
                                                     options_.limits.max_hidden));
    }
    NORMD_ASSIGN_OR_RETURN(std::string id, weights_.Register(dtype, hidden, request->weight().data()));
    response->set_weight_id(std::move(id));
    return absl::OkStatus();
  }();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* NormalizerService::GetServerInfo(grpc::CallbackServerContext* context,
                                                           const normd::v1::GetServerInfoRequest* /*request*/,
                                                           normd::v1::ServerInfo* response) {
  *response = options_.info;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace normd
