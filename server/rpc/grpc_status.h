// The one place where an absl::Status inside normd becomes the grpc::Status a client sees.
#ifndef NORMD_SERVER_RPC_GRPC_STATUS_H_
#define NORMD_SERVER_RPC_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace normd {

// absl and gRPC share the canonical code numbering, so the code maps by value.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace normd

#endif  // NORMD_SERVER_RPC_GRPC_STATUS_H_
