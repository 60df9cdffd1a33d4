// TLS from the client side: the client library, normctl and normbench against a real normd serving
// mutual TLS (certificates from test_pki.h). Shown: with the CA and a client certificate every tool
// is served; without a certificate or trusting another CA it is refused; bad TLS options are caller
// errors that name the option and the file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/normd_client.h"
#include "tests/client/client_test_util.h"
#include "tests/integration/normd_process.h"
#include "tests/integration/tensor_util.h"
#include "tests/integration/test_pki.h"

namespace normd::testing {
namespace {

int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class TlsClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new TestPki();
    if (!pki_->error().empty()) return;
    server_ = new NormdProcess();
    server_->set_channel_credentials(pki_->ClientCredentials("client"));
    start_status_ = new absl::Status(server_->Start(
        {"--backend=cpu", "--cpu-threads=1", "--tls-cert=" + pki_->File("server.pem"),
         "--tls-key=" + pki_->File("server.key"), "--tls-client-ca=" + pki_->File("ca.pem")}));
  }
  static void TearDownTestSuite() {
    delete server_;
    delete start_status_;
    delete pki_;
  }
  void SetUp() override {
    ASSERT_EQ(pki_->error(), "");
    ASSERT_TRUE(start_status_->ok()) << *start_status_ << "\n" << server_->log();
  }

  static ClientTlsOptions GoodTls() {
    ClientTlsOptions tls;
    tls.ca_file = pki_->File("ca.pem");
    tls.cert_file = pki_->File("client.pem");
    tls.key_file = pki_->File("client.key");
    return tls;
  }

  static absl::StatusOr<std::unique_ptr<Client>> ConnectWith(const ClientTlsOptions& tls) {
    ClientOptions options;
    options.target = server_->address();
    options.default_deadline = absl::Seconds(10);
    options.max_attempts = 2;  // a refused handshake is UNAVAILABLE: do not spend long retrying it
    options.tls = tls;
    return Client::Connect(options);
  }

  // One Normalize call; checked against the fp64 reference when it succeeds.
  static absl::Status NormalizeOnce(Client& client) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> x(4 * 256), w(256);
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    absl::StatusOr<PreparedRequest> prepared =
        client.Prepare(TensorView::Float32(x, {4, 256}), TensorView::Float32(w));
    if (!prepared.ok()) return prepared.status();
    absl::StatusOr<NormalizeResult> result = client.Normalize(*prepared);
    if (!result.ok()) return result.status();
    const std::string mismatch = CheckResult(*prepared, *result);
    if (!mismatch.empty()) return absl::InternalError(mismatch);
    return absl::OkStatus();
  }

  static TestPki* pki_;
  static NormdProcess* server_;
  static absl::Status* start_status_;
};

TestPki* TlsClientTest::pki_ = nullptr;
NormdProcess* TlsClientTest::server_ = nullptr;
absl::Status* TlsClientTest::start_status_ = nullptr;

TEST_F(TlsClientTest, ClientLibraryIsServedOnlyWithTrustAndACertificate) {
  absl::StatusOr<std::unique_ptr<Client>> good = ConnectWith(GoodTls());
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(NormalizeOnce(**good).ok());
  // The limit was learned from the server over TLS (GetServerInfo during Connect).
  EXPECT_EQ((*good)->max_request_bytes(), int64_t{256} << 20);

  ClientTlsOptions no_certificate = GoodTls();
  no_certificate.cert_file.clear();
  no_certificate.key_file.clear();
  ClientTlsOptions other_ca = GoodTls();
  other_ca.ca_file = pki_->File("other-ca.pem");
  for (const auto& [name, tls] :
       {std::pair<const char*, ClientTlsOptions>{"no client certificate", no_certificate},
        {"server not trusted", other_ca},
        {"plaintext", ClientTlsOptions{}}}) {
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectWith(tls);
    ASSERT_TRUE(client.ok()) << name << ": " << client.status();  // channels connect lazily
    const absl::Status status = NormalizeOnce(**client);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << name << ": " << status;
  }
  EXPECT_TRUE(NormalizeOnce(**good).ok());  // and normd serves on
}

TEST_F(TlsClientTest, BadTlsOptionsNameTheOptionAndTheFile) {
  ClientTlsOptions key_missing = GoodTls();
  key_missing.key_file.clear();
  absl::StatusOr<std::unique_ptr<Client>> a = ConnectWith(key_missing);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(a.status().message(), "--tls-key")) << a.status();

  ClientTlsOptions unreadable = GoodTls();
  unreadable.ca_file = pki_->File("no-such-ca.pem");
  absl::StatusOr<std::unique_ptr<Client>> b = ConnectWith(unreadable);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(b.status().message(), "no-such-ca.pem")) << b.status();

  ClientTlsOptions not_pem = GoodTls();
  not_pem.cert_file = pki_->File("client.ext");  // exists, but is an openssl extension file
  absl::StatusOr<std::unique_ptr<Client>> c = ConnectWith(not_pem);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(c.status().message(), "no PEM block")) << c.status();
}

TEST_F(TlsClientTest, NormctlAndNormbenchTakeTheTlsFlags) {
  const std::string tls =
      absl::StrCat(" --tls-ca=", pki_->File("ca.pem"), " --tls-cert=", pki_->File("client.pem"),
                   " --tls-key=", pki_->File("client.key"));
  const std::string normctl =
      absl::StrCat(NORMCTL_PATH, " --target=", server_->address(), " --timeout=5s");
  EXPECT_EQ(Shell(normctl + tls + " health > /dev/null"), 0);
  EXPECT_EQ(Shell(normctl + tls + " info > /dev/null"), 0);
  // Without a client certificate the handshake is refused: normd unreachable, exit 4.
  EXPECT_EQ(
      Shell(absl::StrCat(normctl, " --tls-ca=", pki_->File("ca.pem"), " health 2> /dev/null")), 4);
  // A bad option is a usage error, exit 2.
  EXPECT_EQ(Shell(absl::StrCat(normctl, " --tls-cert=", pki_->File("client.pem"),
                               " health 2> /dev/null")),
            2);

  const std::string csv = absl::StrCat(::testing::TempDir(), "/tls_bench_", getpid(), ".csv");
  ASSERT_EQ(Shell(absl::StrCat(
                NORMBENCH_PATH, " --target=", server_->address(), tls,
                " --concurrency=2 --rows=2 --hidden=256 --dtype=bf16 --duration=0.5s --window=0.2s"
                " --warmup=0.1s --csv=",
                csv, " > /dev/null")),
            0);
  std::ifstream in(csv);
  std::string header, row;
  ASSERT_TRUE(std::getline(in, header));
  ASSERT_TRUE(std::getline(in, row));
  const std::vector<std::string> cells = absl::StrSplit(row, ',');
  ASSERT_EQ(cells.size(), 15u) << row;
  EXPECT_EQ(cells[6], "0") << row;             // no errors
  EXPECT_GT(std::stod(cells[7]), 0.0) << row;  // throughput
}

}  // namespace
}  // namespace normd::testing
