// Shared by the unary and streaming handlers: parsing a request's bytes, and turning one validated
// request and its response into a WorkItem.
#ifndef NORMD_SERVER_CALL_STATE_H_
#define NORMD_SERVER_CALL_STATE_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>

#include <memory>

#include "normd/v1/normd.pb.h"
#include "server/request_validation.h"
#include "server/response_wire.h"
#include "server/work_item.h"

namespace normd {

// Parses a message's bytes as a NormalizeRequest; INVALID_ARGUMENT, saying so, when they are not
// one. Both methods are registered raw (bytes in and out; see NormalizerServiceBase), so normd
// parses them.
absl::Status ParseNormalizeRequest(const grpc::ByteBuffer& bytes,
                                   normd::v1::NormalizeRequest& request);

// Sizes the response's output (and residual_out) tensors for the request and returns a WorkItem
// whose output pointers address their bytes. The request and response must outlive the item;
// on_done is the caller's to set, and on success it takes the response's bytes with
// ResponseWire::Finish (on failure no half-written tensor travels with the error status).
std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request,
                                       ValidatedRequest validated, ResponseWire& response,
                                       grpc::CallbackServerContext& context);

}  // namespace normd

#endif  // NORMD_SERVER_CALL_STATE_H_
