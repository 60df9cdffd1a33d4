#include "server/rpc/normalizer_service.h"

#include <google/protobuf/descriptor.h>

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "server/rpc/call_state.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/normalize_stream_reactor.h"
#include "server/rpc/region_rpcs.h"
#include "server/rpc/region_session_reactor.h"
#include "server/rpc/request_wire.h"
#include "server/rpc/response_wire.h"

namespace normd {

namespace {

// Finishes a unary call and counts it.
void FinishUnary(grpc::ServerUnaryReactor* reactor, ServerMetrics* metrics, const char* method,
                 absl::Time start, const absl::Status& status) {
  if (metrics != nullptr) metrics->RequestDone(method, status, absl::Now() - start);
  HandingToLibrary(reactor);  // the response, written on this thread, is destroyed after OnDone
  reactor->Finish(ToGrpcStatus(status));
}

// A unary call's reactor. For Normalize, once gRPC is done with the call (the response sent, or the
// call cancelled), it uncharges the request's bytes from the scheduler's budget. Until then the
// response sits in normd's memory, so it counts as queued: a client that sends fast and reads
// slowly is refused with RESOURCE_EXHAUSTED instead of growing normd's memory. Every unary method
// uses it (rather than gRPC's default reactor) so that OnDone can state gRPC's hand-off for
// ThreadSanitizer.
class UnaryCallReactor : public grpc::ServerUnaryReactor {
 public:
  explicit UnaryCallReactor(Scheduler& scheduler) : scheduler_(scheduler) {}
  // Set before submitting (the answer may come before Submit returns); zero if it was refused.
  void set_held_bytes(int64_t bytes, int64_t memory_bytes) {
    held_bytes_.store(bytes, std::memory_order_relaxed);
    held_memory_bytes_.store(memory_bytes, std::memory_order_relaxed);
  }
  void OnDone() override {
    // OnDone may run on another gRPC thread than the handler; gRPC orders the two, but out of sight
    // of ThreadSanitizer (an uninstrumented library), hence the atomics and the annotation.
    TakenBackFromLibrary(this);
    const int64_t bytes = held_bytes_.load(std::memory_order_relaxed);
    const int64_t memory_bytes = held_memory_bytes_.load(std::memory_order_relaxed);
    if (bytes > 0 || memory_bytes > 0) scheduler_.ReleaseHeldBytes(bytes, memory_bytes);
    delete this;
  }
  // OnDone above is an atomic subtraction and a delete, so gRPC may run it on the thread that
  // completes the call instead of handing every call's OnDone to its executor threads: that
  // hand-off costs a thread hop and executor CPU per call, which the echo (whose default reactor is
  // inlineable) does not pay (docs/PERFORMANCE.md, "The measurements behind the automatic
  // values"). gRPC marks this hook "not API", for
  // reactors with trivial reactions like its own default reactor's; `override` turns its removal in
  // a later gRPC into a build error here.
  bool InternalInlineable() override { return true; }

 private:
  Scheduler& scheduler_;
  std::atomic<int64_t> held_bytes_{0};
  std::atomic<int64_t> held_memory_bytes_{0};
};

// A Normalize call's reactor when gRPC has read its message (no memory budget), holding the parsed
// request (which the WorkItem points into) and the response being built, both until gRPC is done
// with the call. Under a budget normalize_call_reactor.h's NormalizeCallReactor serves the call.
class ReadNormalizeReactor final : public UnaryCallReactor {
 public:
  using UnaryCallReactor::UnaryCallReactor;
  RequestWire& request() { return request_; }
  ResponseWire& response() { return response_; }

 private:
  RequestWire request_;
  ResponseWire response_;
};

}  // namespace

NormalizerService::NormalizerService(Scheduler& scheduler, WeightRegistry& weights,
                                     ServiceOptions options, ServerMetrics* metrics)
    : scheduler_(scheduler), weights_(weights), options_(std::move(options)), metrics_(metrics) {
  if (options_.normalize_generic) {
    // The generated code numbers methods in the order the proto defines them.
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            normd::v1::Normalizer::service_full_name());
    MarkMethodGeneric(service->FindMethodByName("Normalize")->index());
  }
}

grpc::ServerUnaryReactor* NormalizerService::Normalize(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* raw_request,
                                                       grpc::ByteBuffer* raw_response) {
  const absl::Time start = absl::Now();
  auto* reactor = new ReadNormalizeReactor(scheduler_);  // deletes itself in OnDone
  RequestWire& request = reactor->request();
  absl::Status parsed = request.Parse(*raw_request);
  absl::StatusOr<ValidatedRequest> validated =
      parsed.ok() ? ValidateReceived(request, *context, options_.limits, weights_, options_.regions)
                  : std::move(parsed);
  if (!validated.ok()) {
    FinishUnary(reactor, metrics_, "Normalize", start, validated.status());
    return reactor;
  }
  std::unique_ptr<WorkItem> item =
      MakeWorkItem(request.message(), *std::move(validated), reactor->response(), *context);
  item->may_run_on_caller_thread = true;  // nothing is locked here; see Worker's shortcut
  item->hold_bytes_until_released = true;
  item->memory_bytes = static_cast<int64_t>(raw_request->Length()) + item->response_bytes();
  reactor->set_held_bytes(item->admission_bytes(), item->memory_bytes);
  const TensorMemory transport = item->request.transport();
  item->on_done = [reactor, raw_response, metrics = metrics_, start, transport](
                      const absl::Status& status, const LaunchReport& report) {
    if (metrics != nullptr) metrics->RequestTransport(transport);
    if (status.ok()) {
      grpc::ByteBuffer bytes = reactor->response().Finish(report);
      raw_response->Swap(&bytes);
    }
    FinishUnary(reactor, metrics, "Normalize", start, status);
  };
  if (absl::Status admitted = scheduler_.Submit(std::move(item)); !admitted.ok()) {
    reactor->set_held_bytes(0, 0);  // nothing was charged
    FinishUnary(reactor, metrics_, "Normalize", start, admitted);
  }
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NormalizerService::NormalizeStream(
    grpc::CallbackServerContext* context) {
  return new NormalizeStreamReactor(context, scheduler_, weights_, options_.limits,
                                    options_.stream_max_inflight,
                                    options_.stream_read_reservation_bytes,
                                    options_.stream_stall_watch, metrics_, options_.regions);
}

grpc::ServerUnaryReactor* NormalizerService::RegisterWeight(
    grpc::CallbackServerContext* /*context*/, const normd::v1::RegisterWeightRequest* request,
    normd::v1::RegisterWeightResponse* response) {
  const absl::Time start = absl::Now();
  grpc::ServerUnaryReactor* reactor = new UnaryCallReactor(scheduler_);  // deletes itself in OnDone
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
  grpc::ServerUnaryReactor* reactor = new UnaryCallReactor(scheduler_);  // deletes itself in OnDone
  FinishUnary(reactor, metrics_, "GetServerInfo", start, absl::OkStatus());
  return reactor;
}

grpc::ServerUnaryReactor* NormalizerService::AnswerInline(const char* method, absl::Time start,
                                                          const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = new UnaryCallReactor(scheduler_);  // deletes itself in OnDone
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
