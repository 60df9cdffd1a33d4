// Shared by the unary and streaming handlers: validating a parsed request (its region references
// included) and turning it and its response into a WorkItem. (Parsing a request's bytes is
// RequestWire's.)
#ifndef NORMD_SERVER_RPC_CALL_STATE_H_
#define NORMD_SERVER_RPC_CALL_STATE_H_

#include <grpcpp/server_context.h>

#include <memory>

#include "normd/v1/normd.pb.h"
#include "server/core/work.h"
#include "server/regions/region_registry.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/request_wire.h"
#include "server/rpc/response_wire.h"

namespace normd {

// Validates a parsed request. Its region references, if it has any, are resolved for the call's
// peer against `regions` (null when shared memory is off); the result then holds those regions.
absl::StatusOr<ValidatedRequest> ValidateReceived(const RequestWire& request,
                                                  const grpc::CallbackServerContext& context,
                                                  const ValidationLimits& limits,
                                                  WeightRegistry& weights,
                                                  const RegionRegistry* regions);

// Sizes the response's output (and residual_out) tensors for the request and returns a WorkItem
// whose output pointers address their bytes, or the request's regions where it names them. The
// request (its RequestWire, which holds the bytes the validated request points into) and the
// response must outlive the item; on_done is the caller's to set, and on success it takes the
// response's bytes with ResponseWire::Finish (on failure no half-written tensor travels with the
// error status).
std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request,
                                       ValidatedRequest validated, ResponseWire& response,
                                       grpc::CallbackServerContext& context);

}  // namespace normd

#endif  // NORMD_SERVER_RPC_CALL_STATE_H_
