// A throwaway public-key infrastructure for TLS tests, made with the openssl CLI: a CA ("ca") with
// a server certificate for 127.0.0.1/localhost ("server") and a client certificate ("client"), and
// a second CA ("other-ca") with a client certificate of its own ("stranger"). P-256 keys (fast to
// make), valid one day. Each NAME has NAME.pem and NAME.key in the directory.
#ifndef NORMD_TESTS_INTEGRATION_TEST_PKI_H_
#define NORMD_TESTS_INTEGRATION_TEST_PKI_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace normd::testing {

class TestPki {
 public:
  // Makes everything in a fresh directory under the test's temporary directory; error() says what
  // failed, if anything. The destructor removes the directory.
  TestPki();
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& error() const { return error_; }
  std::string File(absl::string_view name) const;

  // gRPC client credentials trusting `ca` ("ca" or "other-ca"); with `identity` ("client",
  // "stranger") they present that certificate.
  std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(absl::string_view identity = "",
                                                              absl::string_view ca = "ca") const;

 private:
  std::string dir_;
  std::string error_;
};

// The whole contents of a file ("" if unreadable).
std::string ReadWholeFile(const std::string& path);

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_TEST_PKI_H_
