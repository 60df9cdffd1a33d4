// A minimal blocking HTTP/1.0 GET on loopback, for reading normd's /metrics in tests.
#ifndef NORMD_TESTS_INTEGRATION_HTTP_GET_H_
#define NORMD_TESTS_INTEGRATION_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"

namespace normd::testing {

// The body of GET http://127.0.0.1:<port><path>, or an error (connection, non-200 status).
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_HTTP_GET_H_
