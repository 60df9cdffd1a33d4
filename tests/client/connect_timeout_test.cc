// How long normd::Client waits for a new connection: a server slow to answer one (here a relay
// that holds each connection for a while before it reaches normd) is waited for up to
// ClientOptions::connect_timeout, and given up after it.
#include <gtest/gtest.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "client/normd_client.h"
#include "tests/client/delaying_proxy.h"
#include "tests/integration/normd_process.h"

namespace normd::testing {
namespace {

constexpr int64_t kRows = 2, kHidden = 64;

absl::StatusOr<NormalizeResult> NormalizeOnce(Client& client) {
  static const std::vector<float> input(kRows * kHidden, 0.5f), weight(kHidden, 2.0f);
  return client.Normalize(TensorView::Float32(input, {kRows, kHidden}),
                          TensorView::Float32(weight));
}

ClientOptions OneAttemptThrough(const DelayingProxy& proxy) {
  ClientOptions options;
  options.target = proxy.address();
  options.own_connection = true;
  options.max_attempts = 1;  // no retry may hide a failed connection attempt
  options.default_deadline = absl::Seconds(30);
  return options;
}

TEST(ConnectTimeoutTest, AServerSlowToAnswerANewConnectionIsWaitedFor) {
  NormdProcess server;
  // A limit other than the client's default, so that the client shows whether it asked.
  ASSERT_TRUE(server.Start({"--backend=cpu", "--max-request-bytes=67108864"}).ok()) << server.log();
  // Longer than the 100 ms reconnect backoff, far shorter than the default connect_timeout.
  DelayingProxy proxy(server.port(), absl::Seconds(1));
  ASSERT_TRUE(proxy.listening());
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(OneAttemptThrough(proxy));
  ASSERT_TRUE(client.ok()) << client.status();
  // Connect asked the server for its limit over the slow connection: a failed attempt would have
  // left the client's own default in place.
  EXPECT_EQ((*client)->max_request_bytes(), int64_t{64} << 20);
  absl::StatusOr<NormalizeResult> result = NormalizeOnce(**client);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output.bytes().size(), size_t{kRows * kHidden * 4});
}

TEST(ConnectTimeoutTest, AConnectionSlowerThanTheTimeoutIsGivenUp) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  const absl::Duration delay = absl::Seconds(5);
  DelayingProxy proxy(server.port(), delay);
  ASSERT_TRUE(proxy.listening());
  ClientOptions options = OneAttemptThrough(proxy);
  options.connect_timeout = absl::Milliseconds(300);
  options.max_request_bytes = int64_t{1} << 20;  // no GetServerInfo call in Connect
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  const absl::Time start = absl::Now();
  absl::StatusOr<NormalizeResult> result = NormalizeOnce(**client);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
  EXPECT_LT(absl::Now() - start, delay) << "the call waited for the slow connection";
}

TEST(ConnectTimeoutTest, ATimeoutUnderOneHundredMillisecondsIsRefused) {
  ClientOptions options;
  options.connect_timeout = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(client.status().message(), "connect_timeout: 50ms"))
      << client.status();
}

}  // namespace
}  // namespace normd::testing
