// The one conversion from a grpc::Status to the absl::Status a client caller sees.
#ifndef NORMD_CLIENT_GRPC_STATUS_H_
#define NORMD_CLIENT_GRPC_STATUS_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace normd {

// gRPC and absl share the canonical code numbering, so the code maps by value.
inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// The same, for a call made with `context` on a channel to `channel_target`: a failed status also
// carries the address of the server the call was sent to (see PeerOf in normd_client.h), when it
// reached one.
absl::Status FromGrpcCall(const grpc::Status& status, const grpc::ClientContext& context,
                          absl::string_view channel_target);

}  // namespace normd

#endif  // NORMD_CLIENT_GRPC_STATUS_H_
