// normd: serves normd.v1.Normalizer (plus grpc.health.v1 and server reflection) until SIGTERM or
// SIGINT, then drains: new calls get UNAVAILABLE, every accepted request is answered, and normd
// exits 0.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <malloc.h>
#include <prometheus/exposer.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "server/config/memory_budget.h"
#include "server/config/server_config.h"
#include "server/config/usable_cpus.h"
#include "server/core/large_buffer_pool.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"
#include "server/observability/process_metrics.h"
#include "server/observability/region_metrics.h"
#include "server/regions/peer_identity.h"
#include "server/regions/region_registry.h"
#include "server/rpc/normalize_generic_service.h"
#include "server/rpc/normalizer_service.h"
#include "server/rpc/stall_watch.h"
#include "server/rpc/unix_listener.h"
#include "server/rpc/weight_registry.h"
#include "server/scheduling/scheduler.h"
#include "server/startup/backend_factory.h"
#include "server/startup/warm_up.h"

namespace normd {
namespace {

constexpr char kVersion[] = "0.1.0";

// Serves /metrics on `address` (port 0: any free port) and logs "metrics on HOST:PORT".
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsEndpoint(
    const std::string& address, const std::shared_ptr<prometheus::Registry>& registry) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {  // prometheus-cpp reports a bind failure by throwing; nothing else here throws
    exposer = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("--metrics-listen=", address, ": ", e.what()));
  }
  exposer->RegisterCollectable(registry);
  // Resident memory, CPU time and the allocator's heap, read at each scrape (process_metrics.h).
  static const auto process_metrics = std::make_shared<ProcessMetrics>();
  exposer->RegisterCollectable(process_metrics);
  const std::vector<int> ports = exposer->GetListeningPorts();
  const std::string host = address.substr(0, address.rfind(':'));
  Log(LogLevel::kInfo, "metrics on ", host, ":", ports.empty() ? 0 : ports.front(),
      " (path /metrics)");
  return exposer;
}

// The whole of a PEM file named by `flag`, or an error naming the flag and the path.
absl::StatusOr<std::string> ReadPemFile(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  if (in) contents << in.rdbuf();
  if (!in || contents.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", path, ": cannot read the file (or it is empty)"));
  }
  return contents.str();
}

// Plaintext without --tls-cert; TLS with it; mTLS (a client certificate signed by --tls-client-ca
// is required and verified) with --tls-client-ca too. The files are read once, at start.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerConfig& config) {
  if (config.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  absl::StatusOr<std::string> cert = ReadPemFile("tls-cert", config.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPemFile("tls-key", config.tls_key);
  if (!key.ok()) return key.status();
  pair.cert_chain = *std::move(cert);
  pair.private_key = *std::move(key);
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!config.tls_client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPemFile("tls-client-ca", config.tls_client_ca);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  options.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(options);
}

// Blocks SIGINT and SIGTERM in this thread and every thread started after it, so that they reach
// only the sigwait in RunServer instead of killing the process mid-request.
sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Waits for SIGINT or SIGTERM and returns it. Meanwhile, once a second, ends the waits in the
// memory gate that have lasted too long (a call waits at most that long past the gate's limit) and
// cancels the streams whose response write has stalled, sooner while memory is short (so both
// take up to a second longer), and
// reflects the workers' health: a worker that hit an unrecoverable device error is out of rotation
// (the scheduler skips it); when none is left, normd reports NOT_SERVING so that load balancers and
// Kubernetes take it out too.
int WaitForStopSignal(const sigset_t& stop_signals, Scheduler& scheduler, StallWatch* stall_watch,
                      grpc::HealthCheckServiceInterface& health, ServerMetrics& metrics) {
  std::vector<bool> counted_failed(scheduler.workers().size(), false);
  size_t failed = 0;
  const timespec tick{1, 0};
  while (true) {
    const int signal_number = sigtimedwait(&stop_signals, nullptr, &tick);
    if (signal_number > 0) return signal_number;
    scheduler.memory_gate().ExpireDue(absl::Now());
    if (stall_watch != nullptr) {
      stall_watch->ExpireDue(absl::Now(), scheduler.TakeMemoryPressure());
    }
    for (size_t w = 0; w < scheduler.workers().size(); ++w) {
      const Worker& worker = *scheduler.workers()[w];
      if (worker.healthy() || counted_failed[w]) continue;
      counted_failed[w] = true;
      ++failed;
      metrics.workers("ready", worker.executor().device()).Decrement();
      metrics.workers("failed", worker.executor().device()).Increment();
      Log(LogLevel::kError, "normd: worker ", worker.executor().name(), " is out of rotation (",
          failed, " of ", scheduler.workers().size(), ")");
      if (failed == scheduler.workers().size()) {
        health.SetServingStatus(false);
        Log(LogLevel::kError, "normd: no healthy worker left; reporting NOT_SERVING");
      }
    }
  }
}

normd::v1::ServerInfo MakeServerInfo(const ServerConfig& config, const Backend& backend) {
  normd::v1::ServerInfo info;
  info.set_version(kVersion);
  info.set_backend(backend.name);
  for (const auto& d : backend.devices) *info.add_devices() = d;
  info.set_max_hidden(config.max_hidden);
  info.set_max_request_bytes(config.max_request_bytes);
  info.set_max_batch_rows(static_cast<int32_t>(config.batch.max_rows));
  info.set_max_queue_delay_us(absl::ToInt64Microseconds(config.batch.max_queue_delay));
  if (config.shared_memory_system) info.add_shared_memory("system");
  if (config.shared_memory_cuda) info.add_shared_memory("cuda");
  info.set_max_shared_memory_bytes(config.max_shared_memory_bytes);
  info.set_max_regions_per_client(static_cast<int32_t>(
      std::min<int64_t>(config.max_regions_per_client, std::numeric_limits<int32_t>::max())));
  return info;
}

// The region registry when --shared-memory enables a kind (null otherwise), or an error when the
// backend cannot serve the kinds asked for.
absl::StatusOr<std::unique_ptr<RegionRegistry>> MakeRegionRegistry(const ServerConfig& config,
                                                                   const Backend& backend,
                                                                   const PeerDirectory& peers,
                                                                   RegionMetrics* metrics) {
  if (!config.shared_memory_system && !config.shared_memory_cuda) return nullptr;
  if (config.shared_memory_cuda && backend.device_memory == nullptr) {
    return absl::FailedPreconditionError(
        "--shared-memory=cuda needs the CUDA backend (--backend=cuda, or auto with a GPU)");
  }
  RegionRegistryOptions options;
  options.system = config.shared_memory_system;
  options.cuda = config.shared_memory_cuda;
  options.max_bytes = config.max_shared_memory_bytes;
  options.max_regions_per_client = config.max_regions_per_client;
  return std::make_unique<RegionRegistry>(options, peers, backend.device_memory.get(), metrics);
}

// Keeps glibc's allocator from handing large buffers back to the kernel after each request.
// Requests and responses of 128 KiB and up otherwise come from fresh mmaps (or from arena memory
// trimmed away with MADV_DONTNEED) and every 4 KiB page faults on first touch, which for a
// 512 KiB request can cost several times its transport and compute (docs/PERFORMANCE.md, "The
// measurements behind the automatic values"). Memory kept this way is bounded by the peak of live
// requests; 32 MiB is glibc's largest mmap threshold, so bigger buffers are still mapped and
// unmapped each time. Free memory beyond --max-queue-bytes (at least 32 MiB, at most 1 GiB) is
// handed back: without that bound a burst (a 4x overload, a VM stall in the soak) left the process
// at its high-water mark for good (RELIABILITY.md).
//
// Each arena keeps that much, and memory freed in the middle of an arena (not at its top) stays
// resident too, so the arena count (--malloc-arenas) multiplies what a burst leaves behind: gRPC's
// many threads would otherwise each get an arena (glibc allows 8 per core), but each arena is a
// lock that every large allocation takes, so too few cost throughput on many cores
// (server_config.cc).
void KeepLargeBuffersInTheAllocator(int64_t max_queue_bytes, int arenas) {
#ifdef __GLIBC__
  const int64_t keep = FreedBytesKeptPerArena(max_queue_bytes);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(keep));
  mallopt(M_TOP_PAD, static_cast<int>(std::min<int64_t>(keep / 2, int64_t{64} << 20)));
  mallopt(M_ARENA_MAX, arenas);
#endif
}

int RunServer(int argc, char** argv) {
  const sigset_t stop_signals = BlockStopSignals();
  absl::StatusOr<ServerConfig> config = LoadServerConfig(argc, argv);
  if (!config.ok()) {
    Log(LogLevel::kError, "normd: ", config.status().message());
    return 2;
  }
  const std::string memory_budget = FitConfigToMemoryBudget(*config);
  const std::string pinned_budget =
      config->backend == "cpu" ? std::string() : FitConfigToPinnedBudget(*config);
  KeepLargeBuffersInTheAllocator(config->max_queue_bytes, config->malloc_arenas);
  LargeBufferPool::Shared().SetMaxIdleBytes(static_cast<size_t>(config->response_pool_bytes));
  TurnOffMutexDeadlockDetection();
  SetLogLevel(config->log_level);
  if (!memory_budget.empty()) Log(LogLevel::kInfo, memory_budget);
  if (!pinned_budget.empty()) Log(LogLevel::kInfo, pinned_budget);
  // Before anything else starts: a TLS misconfiguration must stop normd, never fall back to
  // plaintext.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(*config);
  if (!credentials.ok()) {
    Log(LogLevel::kError, "normd: ", credentials.status().message());
    return 2;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  ServerMetrics metrics(registry);
  absl::StatusOr<Backend> backend = MakeBackend(*config, &metrics);
  if (!backend.ok()) {
    Log(LogLevel::kError, "normd: ", backend.status().message());
    return 1;
  }
  // The backend's name is known only once it is built (--backend=auto).
  metrics.SetBuildInfo(kVersion, backend->name, BuiltWithCuda());
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!config->metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<prometheus::Exposer>> started =
        StartMetricsEndpoint(config->metrics_listen, registry);
    if (!started.ok()) {
      Log(LogLevel::kError, "normd: ", started.status().message());
      return 1;
    }
    exposer = *std::move(started);
  }
  WeightRegistry weights(config->max_weight_bytes);
  // Shared memory: declared before the scheduler, so that regions held by requests are released
  // (after the scheduler's drain) while the registry still exists.
  PeerDirectory peers;
  RegionMetrics region_metrics(*registry);
  absl::StatusOr<std::unique_ptr<RegionRegistry>> regions =
      MakeRegionRegistry(*config, *backend, peers, &region_metrics);
  if (!regions.ok()) {
    Log(LogLevel::kError, "normd: ", regions.status().message());
    return 2;
  }
  ServiceOptions options;
  options.regions = regions->get();
  options.limits.max_hidden = config->max_hidden;
  options.stream_max_inflight = config->stream_max_inflight;
  options.info = MakeServerInfo(*config, *backend);
  const std::string backend_name = backend->name;
  const size_t worker_count = backend->workers.size();
  for (const auto& d : backend->devices) {
    metrics.workers("warming", d.kind() == "cpu" ? "cpu" : d.name()).Set(0);
  }
  const MemoryPlan memory_plan = PlanMemory(config->max_memory_bytes, config->grpc_resource_quota);
  Scheduler scheduler(std::move(backend->workers), config->max_queue_bytes, &metrics,
                      config->fill_first_rows, memory_plan.admitted_bytes);
  // A message of up to --max-request-bytes and a response as large: what a Normalize call, or a
  // stream's next message, may need before its size is known (a residual_out makes the response
  // larger; its excess is charged when the message is read, or refused if it does not fit).
  const int64_t read_reservation_bytes =
      memory_plan.admitted_bytes > 0
          ? std::min(2 * config->max_request_bytes, memory_plan.admitted_bytes)
          : 0;
  // Under a budget normd reads a Normalize call's message only once the budget has room, through
  // gRPC's generic API; without one gRPC reads it whole, which costs one read less per call.
  options.normalize_generic = memory_plan.admitted_bytes > 0;
  options.stream_read_reservation_bytes = read_reservation_bytes;
  // Under a budget a stream whose client stopped reading would hold its responses' charge for as
  // long as it stays open; past --stream-stall-timeout (or, while memory is short,
  // --stream-stall-timeout-under-pressure) it is cancelled instead.
  std::unique_ptr<StallWatch> stall_watch;
  const absl::Duration stall_timeout = config->stream_stall_timeout > absl::ZeroDuration()
                                           ? config->stream_stall_timeout
                                           : absl::InfiniteDuration();
  const absl::Duration pressure_stall_timeout = config->stream_stall_timeout_under_pressure;
  if (memory_plan.admitted_bytes > 0 && (stall_timeout != absl::InfiniteDuration() ||
                                         pressure_stall_timeout > absl::ZeroDuration())) {
    stall_watch = std::make_unique<StallWatch>(stall_timeout, pressure_stall_timeout);
  }
  options.stream_stall_watch = stall_watch.get();
  NormalizerService service(scheduler, weights, options, &metrics);
  NormalizeCallOptions call_options;
  call_options.limits = options.limits;
  call_options.regions = options.regions;
  call_options.metrics = &metrics;
  call_options.read_reservation_bytes = read_reservation_bytes;
  NormalizeGenericService generic_service(scheduler, weights, call_options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config->listen, *credentials, &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config->max_request_bytes));
  builder.SetMaxSendMessageSize(
      -1);  // a response is at most twice its request (output + residual_out)
  // Bounds what gRPC holds before normd's admission sees it, per connection: at most this many
  // calls are open, each with at most one request being read. Across connections only the resource
  // quota below does, and only with --max-memory-bytes: unsized, its reclamation would fail calls
  // (UNAVAILABLE "Broken pipe" in LifecycleTest's overload test when it was tried that way).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config->max_concurrent_streams);
  if (memory_plan.admitted_bytes > 0) {
    // Under a memory budget a call waiting for room (normalize_call_reactor.h) must cost little:
    // gRPC buffers what a stream receives before normd asks for its message up to the stream's
    // HTTP/2 window, which bandwidth-delay probing grows to megabytes on a busy connection
    // (docs/RELIABILITY.md, "Memory bound"). Without probing it stays at 64 KiB; a message being
    // read still gets a window as large as itself.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  }
  if (config->max_connection_age > absl::ZeroDuration()) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(absl::ToInt64Milliseconds(config->max_connection_age)));
  }
  if (*regions != nullptr) {
    // A region session stays open without traffic between uses, while the client pings every 30 s
    // (client/channel.h); gRPC's default (5 min between pings without data) would close such a
    // connection after three pings, ending the session and its regions.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  }
  // gRPC's own memory accounting (--grpc-resource-quota): what its transport reads for requests,
  // and the requests' bytes normd keeps while they are admitted, count against this quota. Once it
  // is spent gRPC 1.51 sends GOAWAY to connections and cancels streams with ENHANCE_YOUR_CALM,
  // which bounds what it receives across connections but also fails requests normd had accepted
  // (docs/PERFORMANCE.md, "Memory under hostile load", has the measurements).
  grpc::ResourceQuota quota("normd");
  if (memory_plan.transport_bytes > 0) {
    quota.Resize(static_cast<size_t>(memory_plan.transport_bytes));
    builder.SetResourceQuota(quota);
  }
  builder.RegisterService(&service);
  if (options.normalize_generic) builder.RegisterCallbackGenericService(&generic_service);
  // Before the server starts: a --listen-unix path that is in use must stop normd.
  std::unique_ptr<UnixListener> unix_listener;
  if (!config->listen_unix.empty()) {
    absl::StatusOr<std::unique_ptr<UnixListener>> listening =
        UnixListener::Listen(config->listen_unix);
    if (!listening.ok()) {
      Log(LogLevel::kError, "normd: ", listening.status().message());
      return 1;
    }
    unix_listener = *std::move(listening);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    Log(LogLevel::kError, "normd: could not listen on ", config->listen);
    return 1;
  }
  if (unix_listener != nullptr) unix_listener->Start(server.get(), &peers);
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(false);  // NOT_SERVING until every worker has run a warm-up launch
  const std::string host = config->listen.substr(0, config->listen.rfind(':'));
  const char* transport = config->tls_cert.empty()        ? "plaintext"
                          : config->tls_client_ca.empty() ? "tls"
                                                          : "mtls";
  Log(LogLevel::kInfo, "normd ", kVersion, " listening on ", host, ":", port,
      " backend=", backend_name, " workers=", worker_count, " transport=", transport,
      " malloc_arenas=", config->malloc_arenas, " usable_cpus=", UsableCpuCount(),
      " shared_memory=",
      config->shared_memory_system && config->shared_memory_cuda ? "system,cuda"
      : config->shared_memory_system                             ? "system"
      : config->shared_memory_cuda                               ? "cuda"
                                                                 : "off");
  if (unix_listener != nullptr)
    Log(LogLevel::kInfo, "normd also serves unix:", unix_listener->path());
  if (absl::Status warm = WarmUpWorkers(scheduler.workers()); !warm.ok()) {
    Log(LogLevel::kError, "normd: ", warm.message());
    if (unix_listener != nullptr) unix_listener->Stop();
    server->Shutdown();
    scheduler.Shutdown();
    return 1;
  }
  health->SetServingStatus(true);
  for (const auto& worker : scheduler.workers())
    metrics.workers("ready", worker->executor().device()).Increment();
  Log(LogLevel::kInfo, "normd serving");

  const int signal_number =
      WaitForStopSignal(stop_signals, scheduler, stall_watch.get(), *health, metrics);
  Log(LogLevel::kInfo, "normd: signal ", signal_number, ", draining (up to ",
      absl::FormatDuration(config->drain_timeout), ")");
  health->SetServingStatus(false);
  const absl::Time drain_start = absl::Now();
  const absl::Time drain_deadline = drain_start + config->drain_timeout;
  // First normd itself refuses new requests with UNAVAILABLE (retryable, and clients see why) while
  // the accepted ones finish; only then does gRPC stop taking calls, which fails calls it is still
  // receiving with a bare CANCELLED. Draining first keeps that window to the calls of the last
  // moment.
  scheduler.StopAccepting();
  if (unix_listener != nullptr) unix_listener->Stop();
  while (scheduler.inflight_requests() > 0 && absl::Now() < drain_deadline)
    absl::SleepFor(absl::Milliseconds(1));
  // Region sessions stay open until ended; the server's shutdown would wait for them.
  if (*regions != nullptr) (*regions)->EndAllSessions();
  server->Shutdown(
      absl::ToChronoTime(drain_deadline));  // returns when every call in progress has finished
  scheduler.Shutdown();
  Log(LogLevel::kInfo, "normd: drained in ", absl::FormatDuration(absl::Now() - drain_start),
      "; accepted requests "
      "answered: ",
      scheduler.answered_ok(), " ok, ", scheduler.answered_not_ok(), " not ok; exiting");
  return 0;
}

}  // namespace
}  // namespace normd

int main(int argc, char** argv) { return normd::RunServer(argc, argv); }
