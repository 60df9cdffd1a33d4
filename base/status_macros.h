// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status values, shared by the server, the client
// library and the tools.
//
// Our Abseil (20220623) has no status macros of its own. Header-only and free of gRPC, so that the
// client's installed headers can carry it.
#ifndef NORMD_BASE_STATUS_MACROS_H_
#define NORMD_BASE_STATUS_MACROS_H_

#include <utility>

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

#endif  // NORMD_BASE_STATUS_MACROS_H_
