// Shared by the unary and streaming handlers: turning one validated request and its response into a
// WorkItem. (Parsing a request's bytes is RequestWire's.)
#ifndef NORMD_SERVER_RPC_CALL_STATE_H_
#define NORMD_SERVER_RPC_CALL_STATE_H_

#include <grpcpp/server_context.h>

#include <memory>

#include "normd/v1/normd.pb.h"
#include "server/core/work.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/response_wire.h"

namespace normd {

// Sizes the response's output (and residual_out) tensors for the request and returns a WorkItem
// whose output pointers address their bytes. The request (its RequestWire, which holds the bytes
// the validated request points into) and the response must outlive the item; on_done is the
// caller's to set, and on success it takes the response's bytes with ResponseWire::Finish (on
// failure no half-written tensor travels with the error status).
std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request,
                                       ValidatedRequest validated, ResponseWire& response,
                                       grpc::CallbackServerContext& context);

}  // namespace normd

#endif  // NORMD_SERVER_RPC_CALL_STATE_H_
