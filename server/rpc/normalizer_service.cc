#include "server/rpc/normalizer_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/normalize_stream_reactor.h"
#include "server/rpc/region_rpcs.h"
#include "server/rpc/region_session_reactor.h"

namespace normd {

namespace {

// Finishes a unary call and counts it.
void FinishUnary(grpc::ServerUnaryReactor* reactor, ServerMetrics* metrics, const char* method,
                 absl::Time start, const absl::Status& status) {
  if (metrics != nullptr) metrics->RequestDone(method, status, absl::Now() - start);
  HandingToLibrary(reactor);  // the response, written on this thread, is destroyed after OnDone
  reactor->Finish(ToGrpcStatus(status));
}

// A unary call's reactor. Every unary method uses it (rather than gRPC's default reactor) so that
// OnDone can state gRPC's hand-off for ThreadSanitizer.
class UnaryCallReactor final : public grpc::ServerUnaryReactor {
 public:
  void OnDone() override {
    // OnDone may run on another gRPC thread than the handler; gRPC orders the two, but out of sight
    // of ThreadSanitizer (an uninstrumented library), hence the annotation.
    TakenBackFromLibrary(this);
    delete this;
  }
  // OnDone above is a delete, so gRPC may run it on the thread that completes the call instead of
  // handing every call's OnDone to its executor threads (a thread hop and executor CPU per call).
  // gRPC marks this hook "not API", for reactors with trivial reactions like its own default
  // reactor's; `override` turns its removal in a later gRPC into a build error here.
  bool InternalInlineable() override { return true; }
};

}  // namespace

NormalizerService::NormalizerService(Scheduler& scheduler, WeightRegistry& weights,
                                     ServiceOptions options, ServerMetrics* metrics)
    : scheduler_(scheduler), weights_(weights), options_(std::move(options)), metrics_(metrics) {}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NormalizerService::NormalizeStream(
    grpc::CallbackServerContext* context) {
  return new NormalizeStreamReactor(context, scheduler_, weights_, options_.limits,
                                    options_.stream_max_inflight, metrics_, options_.regions);
}

grpc::ServerUnaryReactor* NormalizerService::RegisterWeight(
    grpc::CallbackServerContext* /*context*/, const normd::v1::RegisterWeightRequest* request,
    normd::v1::RegisterWeightResponse* response) {
  const absl::Time start = absl::Now();
  grpc::ServerUnaryReactor* reactor = new UnaryCallReactor();  // deletes itself in OnDone
  const absl::Status status = [&]() -> absl::Status {
    if (!request->has_weight())
      return absl::InvalidArgumentError("weight: missing; send a [hidden] tensor");
    DType dtype;
    int64_t rows, hidden;
    NORMD_RETURN_IF_ERROR(ValidateTensor(request->weight(), "weight", &dtype, &rows, &hidden));
    if (request->weight().shape_size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("weight: shape has ",
                                                     request->weight().shape_size(),
                                                     " dimensions; a weight is 1-D [hidden]"));
    }
    if (hidden > options_.limits.max_hidden) {
      return absl::InvalidArgumentError(
          absl::StrCat("hidden: weight length ", hidden,
                       " exceeds --max-hidden = ", options_.limits.max_hidden));
    }
    NORMD_ASSIGN_OR_RETURN(std::string id,
                           weights_.Register(dtype, hidden, request->weight().data()));
    response->set_weight_id(std::move(id));
    if (metrics_ != nullptr)
      metrics_->weights_registered().Set(static_cast<double>(weights_.count()));
    return absl::OkStatus();
  }();
  FinishUnary(reactor, metrics_, "RegisterWeight", start, status);
  return reactor;
}

grpc::ServerUnaryReactor* NormalizerService::GetServerInfo(
    grpc::CallbackServerContext* /*context*/, const normd::v1::GetServerInfoRequest* /*request*/,
    normd::v1::ServerInfo* response) {
  const absl::Time start = absl::Now();
  *response = options_.info;
  grpc::ServerUnaryReactor* reactor = new UnaryCallReactor();  // deletes itself in OnDone
  FinishUnary(reactor, metrics_, "GetServerInfo", start, absl::OkStatus());
  return reactor;
}

grpc::ServerUnaryReactor* NormalizerService::AnswerInline(const char* method, absl::Time start,
                                                          const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = new UnaryCallReactor();  // deletes itself in OnDone
  FinishUnary(reactor, metrics_, method, start, status);
  return reactor;
}

grpc::ServerWriteReactor<normd::v1::RegionSessionEvent>* NormalizerService::OpenRegionSession(
    grpc::CallbackServerContext* context, const normd::v1::OpenRegionSessionRequest* /*request*/) {
  return new RegionSessionReactor(context, options_.regions);  // deletes itself in OnDone
}

grpc::ServerUnaryReactor* NormalizerService::RegisterSystemRegion(
    grpc::CallbackServerContext* context, const normd::v1::RegisterSystemRegionRequest* request,
    normd::v1::RegisterRegionResponse* response) {
  const absl::Time start = absl::Now();
  return AnswerInline(
      "RegisterSystemRegion", start,
      normd::RegisterSystemRegion(options_.regions, context->peer(), *request, response));
}

grpc::ServerUnaryReactor* NormalizerService::RegisterCudaRegion(
    grpc::CallbackServerContext* context, const normd::v1::RegisterCudaRegionRequest* request,
    normd::v1::RegisterRegionResponse* response) {
  const absl::Time start = absl::Now();
  return AnswerInline(
      "RegisterCudaRegion", start,
      normd::RegisterCudaRegion(options_.regions, context->peer(), *request, response));
}

grpc::ServerUnaryReactor* NormalizerService::UnregisterRegion(
    grpc::CallbackServerContext* context, const normd::v1::UnregisterRegionRequest* request,
    normd::v1::UnregisterRegionResponse* /*response*/) {
  const absl::Time start = absl::Now();
  return AnswerInline("UnregisterRegion", start,
                      normd::UnregisterRegion(options_.regions, context->peer(), *request));
}

grpc::ServerUnaryReactor* NormalizerService::ListRegions(
    grpc::CallbackServerContext* context, const normd::v1::ListRegionsRequest* /*request*/,
    normd::v1::ListRegionsResponse* response) {
  const absl::Time start = absl::Now();
  return AnswerInline("ListRegions", start,
                      normd::ListRegions(options_.regions, context->peer(), response));
}

}  // namespace normd
