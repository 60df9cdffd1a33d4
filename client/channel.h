// How a normd::Client connects: the options and the gRPC channel they turn into.
//
// The channel carries normd's own service config: round_robin across every address the target
// resolves to (`dns:///normd.svc:50051` with several A records, or
// `ipv4:10.0.0.1:50051,10.0.0.2:50051`), and a retryPolicy that retries UNAVAILABLE (and a
// server-side CANCELLED) for the unary methods. RMSNorm is a pure function of its request, so a
// retry can never apply an effect twice. Message limits follow the server's --max-request-bytes.
#ifndef NORMD_CLIENT_CHANNEL_H_
#define NORMD_CLIENT_CHANNEL_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace normd {

// TLS towards a normd started with --tls-cert/--tls-key (and, for mutual TLS, --tls-client-ca). Off
// by default: plaintext, as normd serves by default. Setting any of the files turns it on.
struct ClientTlsOptions {
  bool enabled = false;
  // PEM certificates the server's certificate must chain to; empty: gRPC's default roots.
  std::string ca_file;
  // PEM certificate chain and private key the client presents (mutual TLS); both or neither.
  std::string cert_file;
  std::string key_file;
  // The name checked against the server's certificate when it differs from the target's host (a
  // certificate for "normd.internal" reached through an IP address). For tests and odd networks.
  std::string server_name;

  bool on() const { return enabled || !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
};

// normd's default --max-request-bytes; used when the server cannot be asked and no limit is given.
inline constexpr int64_t kDefaultMaxRequestBytes = int64_t{256} << 20;

struct ClientOptions {
  // HOST:PORT, dns:///HOST:PORT, ipv4:A:P,B:P, unix:PATH ... (any gRPC target).
  std::string target = "127.0.0.1:50051";
  // Applied to every call that does not set its own deadline.
  absl::Duration default_deadline = absl::Seconds(30);
  // The largest request the channel will send. 0: ask the server (GetServerInfo.max_request_bytes)
  // when connecting, falling back to kDefaultMaxRequestBytes if it cannot be reached then.
  int64_t max_request_bytes = 0;
  // Attempts per unary call for UNAVAILABLE, the first included (gRPC caps this at 5); 1 turns
  // retries off.
  int max_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(1);
  // HTTP/2 keepalive pings while calls are open; detects a dead peer behind a silent network.
  // normd's gRPC server accepts pings this often while calls are in progress.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // Reconnection after a server went away starts after 100 ms and backs off up to this (gRPC's
  // default of 120 s would leave a restarted replica unused for minutes).
  absl::Duration max_reconnect_backoff = absl::Seconds(2);
  // The time one connection attempt gets (TCP, TLS and the HTTP/2 settings exchange) before it is
  // given up and retried after the backoff: gRPC's own default. A loaded server, or one across a
  // slow network, can take far more than the 100 ms of the reconnect backoff to answer.
  absl::Duration connect_timeout = absl::Seconds(20);
  // Calls wait (up to their deadline) for a connection instead of failing at once with UNAVAILABLE
  // while no server is reachable: for callers that would rather wait out a restart than retry.
  bool wait_for_ready = false;
  // A connection of this channel's own instead of one shared with other channels to the same target
  // (load generators and tests that want several connections).
  bool own_connection = false;
  ClientTlsOptions tls;
};

// The credentials `tls` asks for (insecure ones when it is off). Errors name the option and the
// file: a key without a certificate, an unreadable or empty PEM file.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsOptions& tls);

// The channel for `options` with `max_request_bytes` as the send limit (the receive limit is twice
// it: a response carries output and residual_out).
std::shared_ptr<grpc::Channel> MakeNormdChannel(
    const ClientOptions& options, int64_t max_request_bytes,
    std::shared_ptr<grpc::ChannelCredentials> credentials);

// The JSON service config MakeNormdChannel installs (exposed for tests and for documentation).
std::string NormdServiceConfigJson(const ClientOptions& options);

}  // namespace normd

#endif  // NORMD_CLIENT_CHANNEL_H_
