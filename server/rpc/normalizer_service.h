// The normd.v1.Normalizer service on gRPC's callback API.
//
// Handlers never compute: they validate (answering a caller's mistake at once), size the response,
// and hand a WorkItem to the scheduler; the reactor finishes when the item's launch is done, on the
// worker's thread. RegisterWeight, GetServerInfo and the region RPCs (but OpenRegionSession, which
// stays open: region_session_reactor.h) answer inline.
#ifndef NORMD_SERVER_RPC_NORMALIZER_SERVICE_H_
#define NORMD_SERVER_RPC_NORMALIZER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>

#include "normd/v1/normd.grpc.pb.h"
#include "server/observability/metrics.h"
#include "server/regions/region_registry.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/stall_watch.h"
#include "server/rpc/weight_registry.h"
#include "server/scheduling/scheduler.h"

namespace normd {

struct ServiceOptions {
  ValidationLimits limits;
  int stream_max_inflight = 64;  // requests of one stream read ahead of their responses
  // Under --max-memory-bytes, what a NormalizeStream reserves in the memory gate before it reads
  // its next message (as a Normalize call does: normalize_call_reactor.h); 0 reads without one.
  int64_t stream_read_reservation_bytes = 0;
  // Where NormalizeStream response writes are watched for stalls (--stream-stall-timeout); null
  // watches none. Must outlive the service.
  StallWatch* stream_stall_watch = nullptr;
  normd::v1::ServerInfo info;  // what GetServerInfo answers
  // Shared memory's regions; null when --shared-memory is off. Must outlive the service.
  RegionRegistry* regions = nullptr;
  // Normalize is left to the generic service (normalize_generic_service.h), which reads a call's
  // message only once the memory budget has room; set under --max-memory-bytes. Otherwise gRPC
  // reads the message whole and Normalize below answers it: one read fewer per call, about 10% of
  // 1-row throughput on the 2-core machine (docs/RELIABILITY.md, "Memory bound").
  bool normalize_generic = false;
};

// Normalize (unless ServiceOptions::normalize_generic) and NormalizeStream are registered raw
// (bytes in and out):
// - normd builds their responses' bytes itself (ResponseWire), so that output tensors are written
//   once, by the executor, into the buffers gRPC sends, instead of being zero-filled, written, and
//   copied again by protobuf's serializer;
// - normd parses their requests itself: gRPC 1.51's typed callback API answers a unary request it
//   cannot parse with UNIMPLEMENTED and no message, and reports a stream message it cannot parse
//   exactly like the client's half-close (OnReadDone(false)), so the stream would end OK with that
//   message silently dropped. normd answers INVALID_ARGUMENT, saying the bytes are not a request.
using NormalizerServiceBase = normd::v1::Normalizer::WithRawCallbackMethod_Normalize<
    normd::v1::Normalizer::WithRawCallbackMethod_NormalizeStream<
        normd::v1::Normalizer::WithCallbackMethod_RegisterWeight<
            normd::v1::Normalizer::WithCallbackMethod_GetServerInfo<
                normd::v1::Normalizer::WithCallbackMethod_OpenRegionSession<
                    normd::v1::Normalizer::WithCallbackMethod_RegisterSystemRegion<
                        normd::v1::Normalizer::WithCallbackMethod_RegisterCudaRegion<
                            normd::v1::Normalizer::WithCallbackMethod_UnregisterRegion<
                                normd::v1::Normalizer::WithCallbackMethod_ListRegions<
                                    normd::v1::Normalizer::Service>>>>>>>>>;

class NormalizerService final : public NormalizerServiceBase {
 public:
  // Borrows the scheduler and the registry; both must outlive the service.
  // `metrics` may be null; otherwise it must outlive the service.
  NormalizerService(Scheduler& scheduler, WeightRegistry& weights, ServiceOptions options,
                    ServerMetrics* metrics = nullptr);

  grpc::ServerUnaryReactor* Normalize(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NormalizeStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* RegisterWeight(grpc::CallbackServerContext* context,
                                           const normd::v1::RegisterWeightRequest* request,
                                           normd::v1::RegisterWeightResponse* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const normd::v1::GetServerInfoRequest* request,
                                          normd::v1::ServerInfo* response) override;
  grpc::ServerWriteReactor<normd::v1::RegionSessionEvent>* OpenRegionSession(
      grpc::CallbackServerContext* context,
      const normd::v1::OpenRegionSessionRequest* request) override;
  grpc::ServerUnaryReactor* RegisterSystemRegion(
      grpc::CallbackServerContext* context, const normd::v1::RegisterSystemRegionRequest* request,
      normd::v1::RegisterRegionResponse* response) override;
  grpc::ServerUnaryReactor* RegisterCudaRegion(
      grpc::CallbackServerContext* context, const normd::v1::RegisterCudaRegionRequest* request,
      normd::v1::RegisterRegionResponse* response) override;
  grpc::ServerUnaryReactor* UnregisterRegion(
      grpc::CallbackServerContext* context, const normd::v1::UnregisterRegionRequest* request,
      normd::v1::UnregisterRegionResponse* response) override;
  grpc::ServerUnaryReactor* ListRegions(grpc::CallbackServerContext* context,
                                        const normd::v1::ListRegionsRequest* request,
                                        normd::v1::ListRegionsResponse* response) override;

 private:
  // Answers a unary call inline with `status`, counted under `method`.
  grpc::ServerUnaryReactor* AnswerInline(const char* method, absl::Time start,
                                         const absl::Status& status);

  Scheduler& scheduler_;
  WeightRegistry& weights_;
  const ServiceOptions options_;
  ServerMetrics* const metrics_;
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_NORMALIZER_SERVICE_H_
