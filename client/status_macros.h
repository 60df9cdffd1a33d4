// absl::Status plumbing for the client library and its tools.
//
// Our Abseil (20220623) has no status macros. The server keeps its own pair in
// server/status_util.h; the client cannot include server code (dependencies point client -> proto
// only), so it keeps these, plus the one conversion from a grpc::Status to the absl::Status a
// client caller sees.
#ifndef NORMD_CLIENT_STATUS_MACROS_H_
#define NORMD_CLIENT_STATUS_MACROS_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#define NORMD_CLIENT_CONCAT_INNER_(a, b) a##b
#define NORMD_CLIENT_CONCAT_(a, b) NORMD_CLIENT_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define NORMD_CLIENT_RETURN_IF_ERROR(expr)                       \
  do {                                                           \
    const absl::Status normd_client_status_ = (expr);            \
    if (!normd_client_status_.ok()) return normd_client_status_; \
  } while (false)

// `lhs = value of expr` (an absl::StatusOr<T>), or returns its status from the enclosing function.
#define NORMD_CLIENT_ASSIGN_OR_RETURN(lhs, expr)                                                   \
  NORMD_CLIENT_ASSIGN_OR_RETURN_IMPL_(NORMD_CLIENT_CONCAT_(normd_client_statusor_, __LINE__), lhs, \
                                      expr)
#define NORMD_CLIENT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                        \
  if (!statusor.ok()) return statusor.status();                  \
  lhs = std::move(statusor).value()

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

#endif  // NORMD_CLIENT_STATUS_MACROS_H_
