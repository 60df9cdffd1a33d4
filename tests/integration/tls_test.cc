// TLS and mTLS through the real binary, with a throwaway CA and certificates made once per run
// (test_pki.h). Shown: a TLS client is served and a plaintext one is
// refused; under mTLS a client without a certificate or with one from another CA is refused and one
// with a good certificate is served; normd refuses to start on an incomplete or unreadable TLS
// setup.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/normd_process.h"
#include "tests/integration/tensor_util.h"
#include "tests/integration/test_pki.h"

namespace normd::testing {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(); }
  static void TearDownTestSuite() { delete pki_; }
  void SetUp() override { ASSERT_EQ(pki_->error(), ""); }

  std::vector<std::string> TlsArgs(bool mutual) const {
    std::vector<std::string> args = {"--backend=cpu", "--cpu-threads=1",
                                     "--tls-cert=" + pki_->File("server.pem"),
                                     "--tls-key=" + pki_->File("server.key")};
    if (mutual) args.push_back("--tls-client-ca=" + pki_->File("ca.pem"));
    return args;
  }

  // One Normalize call over `channel`, checked against the reference when it succeeds.
  static grpc::Status CallOnce(const std::shared_ptr<grpc::Channel>& channel) {
    auto stub = normd::v1::Normalizer::NewStub(channel);
    std::mt19937 rng(7);
    const NormalizeRequest request = MakeRequest(DType::kFloat16, 4, 512, true, rng);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    NormalizeResponse response;
    grpc::Status status = stub->Normalize(&context, request, &response);
    if (status.ok()) EXPECT_EQ(CompareWithReference(request, response), "");
    return status;
  }

  static TestPki* pki_;
};

TestPki* TlsTest::pki_ = nullptr;

TEST_F(TlsTest, TlsClientIsServedAndPlaintextClientIsRefused) {
  NormdProcess server;
  server.set_channel_credentials(pki_->ClientCredentials());
  ASSERT_TRUE(server.Start(TlsArgs(false)).ok()) << server.log();
  EXPECT_TRUE(absl::StrContains(server.log(), "transport=tls")) << server.log();
  const grpc::Status tls = CallOnce(server.NewChannel());
  EXPECT_TRUE(tls.ok()) << tls.error_code() << " " << tls.error_message();
  const grpc::Status plain = CallOnce(server.NewChannel(grpc::InsecureChannelCredentials()));
  EXPECT_EQ(plain.error_code(), grpc::UNAVAILABLE) << plain.error_message();
  // A client that does not trust the server's CA (here: the other CA) refuses the server.
  const grpc::Status untrusted =
      CallOnce(server.NewChannel(pki_->ClientCredentials("", "other-ca")));
  EXPECT_EQ(untrusted.error_code(), grpc::UNAVAILABLE) << untrusted.error_message();
  // And the server serves on.
  EXPECT_TRUE(CallOnce(server.NewChannel()).ok());
}

TEST_F(TlsTest, MutualTlsServesOnlyClientsWithCertificatesFromItsCa) {
  NormdProcess server;
  server.set_channel_credentials(pki_->ClientCredentials("client"));
  ASSERT_TRUE(server.Start(TlsArgs(true)).ok()) << server.log();
  EXPECT_TRUE(absl::StrContains(server.log(), "transport=mtls")) << server.log();
  struct Case {
    const char* name;
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    bool served;
  };
  const Case kCases[] = {
      {"good client certificate", pki_->ClientCredentials("client"), true},
      {"no client certificate", pki_->ClientCredentials(), false},
      {"certificate from another CA", pki_->ClientCredentials("stranger"), false},
      {"plaintext", grpc::InsecureChannelCredentials(), false},
  };
  for (const Case& c : kCases) {
    const grpc::Status status = CallOnce(server.NewChannel(c.credentials));
    if (c.served) {
      EXPECT_TRUE(status.ok()) << c.name << ": " << status.error_code() << " "
                               << status.error_message();
    } else {
      // Refused at the handshake (TLS 1.3: the client learns of it on its first read): UNAVAILABLE.
      EXPECT_EQ(status.error_code(), grpc::UNAVAILABLE) << c.name << ": " << status.error_message();
    }
  }
  EXPECT_TRUE(CallOnce(server.NewChannel()).ok());
}

TEST_F(TlsTest, RefusesToStartOnIncompleteOrUnreadableTlsSetup) {
  struct Case {
    const char* name;
    std::vector<std::string> args;
    const char* message_part;
  };
  const std::string cert = "--tls-cert=" + pki_->File("server.pem");
  const std::string key = "--tls-key=" + pki_->File("server.key");
  const Case kCases[] = {
      {"cert without key", {cert}, "--tls-cert and --tls-key go together"},
      {"key without cert", {key}, "--tls-cert and --tls-key go together"},
      {"client CA without cert", {"--tls-client-ca=" + pki_->File("ca.pem")}, "needs --tls-cert"},
      {"unreadable cert",
       {"--tls-cert=" + pki_->File("missing.pem"), key},
       "missing.pem: cannot read"},
      {"unreadable key",
       {cert, "--tls-key=" + pki_->File("missing.key")},
       "missing.key: cannot read"},
      {"unreadable client CA",
       {cert, key, "--tls-client-ca=" + pki_->File("missing-ca.pem")},
       "cannot read"},
  };
  for (const Case& c : kCases) {
    NormdProcess server;
    std::vector<std::string> args = c.args;
    args.push_back("--backend=cpu");
    const absl::Status started = server.Start(args, absl::Seconds(20));
    EXPECT_FALSE(started.ok()) << c.name;
    EXPECT_TRUE(server.WaitForLog(c.message_part)) << c.name << ": " << server.log();
  }
}

}  // namespace
}  // namespace normd::testing
