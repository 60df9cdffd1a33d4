// TLS and mTLS through the real binary. A throwaway CA, a server certificate for 127.0.0.1, a client
// certificate, and a second CA with a client certificate of its own are made with the openssl CLI in
// the test's temporary directory, once per run. Shown: a TLS client is served and a plaintext one is
// refused; under mTLS a client without a certificate or with one from another CA is refused and one
// with a good certificate is served; normd refuses to start on an incomplete or unreadable TLS setup.
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

namespace normd::testing {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Paths of the PEM files the suite uses, under one directory.
struct Pki {
  std::string dir;
  std::string File(absl::string_view name) const { return absl::StrCat(dir, "/", name); }
};

// Makes the CAs and certificates with the openssl CLI (P-256 keys: fast to generate, valid one day).
// Empty on success, else what failed.
std::string MakePki(const Pki& pki) {
  const std::string script = absl::StrCat(
      "set -e; cd '", pki.dir, "'\n",
      "key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out \"$1\" 2>/dev/null; }\n",
      "ca() { key $1.key; openssl req -x509 -new -key $1.key -out $1.pem -days 1 -subj /CN=$1 "
      "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign; }\n",
      // sign NAME CA EXTENSIONS
      "sign() { key $1.key; openssl req -new -key $1.key -out $1.csr -subj /CN=$1; printf '%s\\n' \"$3\" > $1.ext;"
      " openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -out $1.pem -days 1"
      " -extfile $1.ext 2>/dev/null; }\n",
      "ca ca; ca other-ca\n",
      "sign server ca 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'\n",
      "sign client ca 'extendedKeyUsage=clientAuth'\n",
      "sign stranger other-ca 'extendedKeyUsage=clientAuth'\n");
  const std::string script_path = pki.File("make-pki.sh");
  std::ofstream(script_path) << script;
  const int rc = std::system(absl::StrCat("bash '", script_path, "' > '", pki.File("make-pki.log"), "' 2>&1").c_str());
  if (rc != 0) return absl::StrCat("openssl failed (", rc, "):\n", ReadFile(pki.File("make-pki.log")));
  return "";
}

// A TLS client trusting the test CA; with `identity` ("client", "stranger") it presents that certificate.
std::shared_ptr<grpc::ChannelCredentials> TlsClient(const Pki& pki, absl::string_view identity = "") {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ReadFile(pki.File("ca.pem"));
  if (!identity.empty()) {
    options.pem_cert_chain = ReadFile(pki.File(absl::StrCat(identity, ".pem")));
    options.pem_private_key = ReadFile(pki.File(absl::StrCat(identity, ".key")));
  }
  return grpc::SslCredentials(options);
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new Pki{absl::StrCat(::testing::TempDir(), "normd-tls-", getpid())};
    std::system(absl::StrCat("rm -rf '", pki_->dir, "' && mkdir -p '", pki_->dir, "'").c_str());
    pki_error_ = new std::string(MakePki(*pki_));
  }
  static void TearDownTestSuite() {
    std::system(absl::StrCat("rm -rf '", pki_->dir, "'").c_str());
    delete pki_;
    delete pki_error_;
  }
  void SetUp() override { ASSERT_EQ(*pki_error_, ""); }

  std::vector<std::string> TlsArgs(bool mutual) const {
    std::vector<std::string> args = {"--backend=cpu", "--cpu-threads=1", "--tls-cert=" + pki_->File("server.pem"),
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

  static Pki* pki_;
  static std::string* pki_error_;
};

Pki* TlsTest::pki_ = nullptr;
std::string* TlsTest::pki_error_ = nullptr;

TEST_F(TlsTest, TlsClientIsServedAndPlaintextClientIsRefused) {
  NormdProcess server;
  server.set_channel_credentials(TlsClient(*pki_));
  ASSERT_TRUE(server.Start(TlsArgs(false)).ok()) << server.log();
  EXPECT_TRUE(absl::StrContains(server.log(), "transport=tls")) << server.log();
  const grpc::Status tls = CallOnce(server.NewChannel());
  EXPECT_TRUE(tls.ok()) << tls.error_code() << " " << tls.error_message();
  const grpc::Status plain = CallOnce(server.NewChannel(grpc::InsecureChannelCredentials()));
  EXPECT_EQ(plain.error_code(), grpc::UNAVAILABLE) << plain.error_message();
  // A client that does not trust the server's CA (here: the other CA) refuses the server.
  grpc::SslCredentialsOptions wrong_root;
  wrong_root.pem_root_certs = ReadFile(pki_->File("other-ca.pem"));
  const grpc::Status untrusted = CallOnce(server.NewChannel(grpc::SslCredentials(wrong_root)));
  EXPECT_EQ(untrusted.error_code(), grpc::UNAVAILABLE) << untrusted.error_message();
  // And the server serves on.
  EXPECT_TRUE(CallOnce(server.NewChannel()).ok());
}

TEST_F(TlsTest, MutualTlsServesOnlyClientsWithCertificatesFromItsCa) {
  NormdProcess server;
  server.set_channel_credentials(TlsClient(*pki_, "client"));
  ASSERT_TRUE(server.Start(TlsArgs(true)).ok()) << server.log();
  EXPECT_TRUE(absl::StrContains(server.log(), "transport=mtls")) << server.log();
  struct Case {
    const char* name;
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    bool served;
  };
  const Case kCases[] = {
      {"good client certificate", TlsClient(*pki_, "client"), true},
      {"no client certificate", TlsClient(*pki_), false},
      {"certificate from another CA", TlsClient(*pki_, "stranger"), false},
      {"plaintext", grpc::InsecureChannelCredentials(), false},
  };
  for (const Case& c : kCases) {
    const grpc::Status status = CallOnce(server.NewChannel(c.credentials));
    if (c.served) {
      EXPECT_TRUE(status.ok()) << c.name << ": " << status.error_code() << " " << status.error_message();
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
      {"unreadable cert", {"--tls-cert=" + pki_->File("missing.pem"), key}, "missing.pem: cannot read"},
      {"unreadable key", {cert, "--tls-key=" + pki_->File("missing.key")}, "missing.key: cannot read"},
      {"unreadable client CA", {cert, key, "--tls-client-ca=" + pki_->File("missing-ca.pem")}, "cannot read"},
  };
  for (const Case& c : kCases) {
    NormdProcess server;
    std::vector<std::string> args = c.args;
    args.push_back("--backend=cpu");
    const absl::Status started = server.Start(args, absl::Seconds(20));
    EXPECT_FALSE(started.ok()) << c.name;
    // The exit can be seen before the log's last line has been collected: wait for it briefly.
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (!absl::StrContains(server.log(), c.message_part) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_TRUE(absl::StrContains(server.log(), c.message_part)) << c.name << ": " << server.log();
  }
}

}  // namespace
}  // namespace normd::testing
