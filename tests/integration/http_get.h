// A minimal blocking HTTP/1.0 GET on loopback, for reading normd's /metrics in tests.
#ifndef NORMD_TESTS_INTEGRATION_HTTP_GET_H_
#define NORMD_TESTS_INTEGRATION_HTTP_GET_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace normd::testing {

// The body of GET http://127.0.0.1:<port><path>, or an error (connection, non-200 status).
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// The sum of the samples of `family` on the /metrics served at `port` whose labels include every
// name and value of `labels` (none: all of the family's samples); -1 if /metrics could not be read.
double ScrapeSum(int port, const std::string& family,
                 const std::map<std::string, std::string>& labels = {});

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_HTTP_GET_H_
