// Error plumbing for host code: absl::Status values inside normd, grpc::Status at the edge.
//
// Our Abseil (20220623) has no status macros, so the two we use live here. ToGrpcStatus is the one
// place where an absl::Status becomes what a client sees.
#ifndef NORMD_SERVER_STATUS_UTIL_H_
#define NORMD_SERVER_STATUS_UTIL_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define NORMD_STATUS_CONCAT_INNER_(a, b) a##b
#define NORMD_STATUS_CONCAT_(a, b) NORMD_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define NORMD_RETURN_IF_ERROR(expr)                \
  do {                                             \
    const absl::Status normd_status_ = (expr);     \
    if (!normd_status_.ok()) return normd_status_; \
  } while (false)

// `lhs = value of expr` (an absl::StatusOr<T>), or returns its status from the enclosing function.
#define NORMD_ASSIGN_OR_RETURN(lhs, expr) \
  NORMD_ASSIGN_OR_RETURN_IMPL_(NORMD_STATUS_CONCAT_(normd_statusor_, __LINE__), lhs, expr)
#define NORMD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (!statusor.ok()) return statusor.status();           \
  lhs = std::move(statusor).value()

namespace normd {

// absl and gRPC share the canonical code numbering, so the code maps by value.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace normd

#endif  // NORMD_SERVER_STATUS_UTIL_H_
