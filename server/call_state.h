// Shared by the unary and streaming handlers: turning one validated request and its response message
// into a WorkItem, and filling the response when the launch is done.
#ifndef NORMD_SERVER_CALL_STATE_H_
#define NORMD_SERVER_CALL_STATE_H_

#include <grpcpp/server_context.h>

#include <memory>

#include "normd/v1/normd.pb.h"
#include "server/request_validation.h"
#include "server/work_item.h"

namespace normd {

// Sizes the response's output (and residual_out) tensors for the request and returns a WorkItem whose
// output pointers address their bytes. The request and response must outlive the item; on_done is the
// caller's to set.
std::unique_ptr<WorkItem> MakeWorkItem(const normd::v1::NormalizeRequest& request, ValidatedRequest validated,
                                       normd::v1::NormalizeResponse& response,
                                       grpc::CallbackServerContext& context);

// Records the launch in the response's timing (on success), or empties the response (on failure, so no
// half-written tensor travels with an error status).
void FinishResponse(const absl::Status& status, const LaunchReport& report,
                    normd::v1::NormalizeResponse& response);

}  // namespace normd

#endif  // NORMD_SERVER_CALL_STATE_H_
