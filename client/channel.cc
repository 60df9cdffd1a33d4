#include "client/channel.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace normd {
namespace {

// gRPC's duration syntax in service configs: seconds with a fractional part and an "s" suffix.
std::string ConfigSeconds(absl::Duration d) {
  return absl::StrFormat("%.3fs", absl::ToDoubleSeconds(d));
}

int ClampToInt(int64_t v) { return static_cast<int>(std::min<int64_t>(v, INT32_MAX)); }

// The contents of a PEM file named by option `what`.
absl::StatusOr<std::string> ReadPem(const char* what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read '", path, "'"));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (contents.str().find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": '", path, "' holds no PEM block"));
  }
  return contents.str();
}

}  // namespace

std::string NormdServiceConfigJson(const ClientOptions& options) {
  // CANCELLED is retried too: a server that shuts down cancels the calls it is still receiving
  // (normd's drain answers UNAVAILABLE first, but a call arriving in the last instant gets
  // CANCELLED). gRPC never retries a call the application cancelled itself, so this only covers the
  // server's side. NormalizeStream is left out: a stream that has already seen responses cannot be
  // replayed; the StreamSession handles its own failures.
  const std::string methods =
      absl::StrCat(R"("name":[{"service":"normd.v1.Normalizer","method":"Normalize"},)",
                   R"({"service":"normd.v1.Normalizer","method":"RegisterWeight"},)",
                   R"({"service":"normd.v1.Normalizer","method":"GetServerInfo"},)",
                   R"({"service":"grpc.health.v1.Health","method":"Check"}])");
  // max_attempts 1: no retry policy at all (every failure reaches the caller).
  const std::string retry =
      options.max_attempts <= 1
          ? std::string()
          : absl::StrCat(
                R"(,"retryPolicy":{"maxAttempts":)", std::min(options.max_attempts, 5),
                R"(,"initialBackoff":")", ConfigSeconds(options.initial_backoff),
                R"(","maxBackoff":")", ConfigSeconds(options.max_backoff),
                R"(","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE","CANCELLED"]})");
  return absl::StrCat(R"({"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{)", methods,
                      retry, "}]}");
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsOptions& tls) {
  if (!tls.on()) return grpc::InsecureChannelCredentials();
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls: a client certificate needs its key and a key its certificate (--tls-cert with "
        "--tls-key)");
  }
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    absl::StatusOr<std::string> roots = ReadPem("tls.ca_file (--tls-ca)", tls.ca_file);
    if (!roots.ok()) return roots.status();
    ssl.pem_root_certs = *std::move(roots);
  }
  if (!tls.cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadPem("tls.cert_file (--tls-cert)", tls.cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem("tls.key_file (--tls-key)", tls.key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

std::shared_ptr<grpc::Channel> MakeNormdChannel(
    const ClientOptions& options, int64_t max_request_bytes,
    std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(ClampToInt(max_request_bytes));
  // A response is at most twice its request (output + residual_out) plus a little framing.
  args.SetMaxReceiveMessageSize(ClampToInt(2 * max_request_bytes + (int64_t{1} << 20)));
  args.SetServiceConfigJSON(NormdServiceConfigJson(options));
  // gRPC keeps a copy of each outgoing message for replay only up to this size (256 KiB by
  // default); a 64 x 4096 bf16 request is 512 KiB and would not be retried. 64 MiB bounds the
  // memory it may hold.
  args.SetInt(
      GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE,
      ClampToInt(std::min<int64_t>(max_request_bytes + (int64_t{1} << 16), int64_t{64} << 20)));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
              ClampToInt(absl::ToInt64Milliseconds(options.keepalive_time)));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
              ClampToInt(absl::ToInt64Milliseconds(options.keepalive_timeout)));
  // Idle connections are not pinged: servers punish frequent pings without data (GOAWAY
  // too_many_pings).
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // gRPC reads the "min reconnect backoff" as the least time a connection attempt is given, not as
  // a backoff (the first backoff is the initial one above). At 100 ms, as it once was here, a
  // server slower than that to send its HTTP/2 settings (a busy one, a sanitizer build, a distant
  // one) could never be connected to: "connection attempt timed out before receiving SETTINGS".
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              ClampToInt(absl::ToInt64Milliseconds(options.connect_timeout)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              ClampToInt(absl::ToInt64Milliseconds(options.max_reconnect_backoff)));
  if (options.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (options.tls.on() && !options.tls.server_name.empty())
    args.SetSslTargetNameOverride(options.tls.server_name);
  return grpc::CreateCustomChannel(options.target, std::move(credentials), args);
}

}  // namespace normd
