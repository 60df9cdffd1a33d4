#include "server/config/server_config.h"

#include <algorithm>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/command_line.h"
#include "server/config/tuning_flags.h"
#include "server/config/usable_cpus.h"

ABSL_FLAG(
    std::string, listen, "127.0.0.1:50051",
    "gRPC address to serve on. Loopback by default: expose it on purpose (e.g. 0.0.0.0:50051)");
ABSL_FLAG(
    std::string, metrics_listen, "127.0.0.1:9464",
    "Prometheus metrics endpoint (path /metrics): HOST:PORT, port 0 = any free port, empty = off");
ABSL_FLAG(absl::Duration, max_connection_age, absl::ZeroDuration(),
          "Close client connections after this age (e.g. 300s) so that clients re-resolve DNS and "
          "spread over "
          "replicas (0 = never)");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain to serve TLS with (needs --tls-key; empty = plaintext)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: require every client to present a certificate it signed (mTLS; needs "
          "--tls-cert)");
ABSL_FLAG(std::string, backend, "auto", "auto (cuda when a GPU is visible, else cpu), cuda or cpu");
ABSL_FLAG(std::string, gpus, "",
          "CUDA backend: GPU indices to use, e.g. 0,1 (empty = every visible GPU)");
ABSL_FLAG(int64_t, max_hidden, 65536, "Largest hidden size (last dimension) accepted");
ABSL_FLAG(int64_t, max_request_bytes, int64_t{256} << 20,
          "Largest request message in bytes; larger ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_batch_rows, 8192,
          "Rows one launch may carry (one request over it goes alone)");
ABSL_FLAG(int64_t, max_batch_bytes, int64_t{256} << 20, "Payload bytes one launch may carry");
ABSL_FLAG(
    int64_t, max_queue_bytes, int64_t{1} << 30,
    "Payload bytes of accepted, unanswered requests; past it new requests get RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_concurrent_streams, 256,
          "Calls (streams) one client connection may have open at once; more wait in the client "
          "until one "
          "ends (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS)");
ABSL_FLAG(int64_t, max_weight_bytes, int64_t{1} << 30,
          "Bytes of registered weights kept; least recently used ones are evicted past it");
ABSL_FLAG(int64_t, max_memory_bytes, 0,
          "Memory normd may hold for requests: received by gRPC, admitted (queued, computing, "
          "responses unsent) and kept for reuse. Admits requests (message and response) up to half "
          "of it and lowers --max-request-bytes, --max-queue-bytes and --response-pool-bytes to "
          "fit (0 = no such budget; see docs/RELIABILITY.md)");
ABSL_FLAG(
    bool, grpc_resource_quota, false,
    "With --max-memory-bytes: also give gRPC a resource quota of half the budget, which bounds "
    "what its transport reads across connections; gRPC 1.51 enforces it by cancelling streams "
    "(accepted requests among them) and closing connections (docs/RELIABILITY.md)");
ABSL_FLAG(int64_t, max_pinned_bytes, 0,
          "CUDA backend: pinned staging memory each GPU's workers may hold, apart from "
          "--max-memory-bytes; lowers --max-request-bytes and --max-batch-bytes so that a launch "
          "fits (0 = staging grows to twice the largest launch seen)");
ABSL_FLAG(int, stream_max_inflight, 64,
          "Requests one NormalizeStream may have read ahead of their responses (flow control)");
ABSL_FLAG(absl::Duration, stream_stall_timeout, absl::Seconds(10),
          "With --max-memory-bytes: a NormalizeStream whose client reads no response for this long "
          "is cancelled, giving back the memory its unsent responses hold (0 = never)");
ABSL_FLAG(absl::Duration, stream_stall_timeout_under_pressure, absl::Seconds(1),
          "With --max-memory-bytes: while memory is short (calls wait for room in the budget or "
          "are refused for it), a NormalizeStream whose client has read no response for this "
          "long is cancelled, so that clients that stopped reading do not keep others waiting "
          "(0 = only --stream-stall-timeout applies)");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(30),
          "On SIGTERM/SIGINT, how long accepted requests may take to finish before normd exits "
          "(e.g. 30s)");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");
ABSL_FLAG(std::string, shared_memory, "",
          "Region kinds clients on this host may share with normd instead of sending tensors in "
          "messages: system (POSIX shared memory), cuda (CUDA IPC; the CUDA backend), or "
          "system,cuda (empty = off; docs/SHARED_MEMORY.md)");
ABSL_FLAG(int64_t, max_shared_memory_bytes, int64_t{8} << 30,
          "With --shared-memory: bytes all registered regions together may map (and pin); past "
          "it registrations get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_regions_per_client, 64,
          "With --shared-memory: regions one connection may hold at once");
ABSL_FLAG(std::string, listen_unix, "",
          "Also serve on this Unix domain socket path, for clients on this host (shared-memory "
          "regions need a local connection: this socket, or loopback); empty = none");

namespace normd {
namespace {

// The essential, limit and security flags, which --help lists.
bool IsMainFlagFile(absl::string_view filename) {
  return absl::EndsWith(filename, "server/config/server_config.cc");
}

// Every flag of normd's own (not absl's or a library's): those the environment may set.
bool IsNormdFlagFile(absl::string_view filename) {
  return IsMainFlagFile(filename) || absl::EndsWith(filename, "server/config/tuning_flags.cc");
}

constexpr char kUsage[] =
    "normd: RMSNorm offload over gRPC (normd.v1.Normalizer).\n"
    "Usage: normd [--flag=value ...]. Flags may be written with dashes or underscores, and each\n"
    "has an environment twin NORMD_<FLAG_NAME> (e.g. NORMD_LISTEN, NORMD_MAX_QUEUE_BYTES); the\n"
    "command line wins over the environment. Below: the essential, limit and security flags.\n"
    "The tuning flags, automatic by default: normd --helpon=tuning_flags (docs/CONFIGURATION.md).";

// Applies NORMD_<NAME> environment variables to the flags they name.
absl::Status ApplyEnvironment() {
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsNormdFlagFile(flag->Filename())) continue;
    const std::string env_name = absl::StrCat("NORMD_", absl::AsciiStrToUpper(name));
    const char* value = std::getenv(env_name.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(env_name, "=", value, ": ", error));
    }
  }
  return absl::OkStatus();
}

// A microseconds flag whose -1 means "automatic" (resolved later, by the backend): true for -1,
// leaving *value as it is; otherwise false, with *value set.
bool ReadAutomaticMicroseconds(int64_t flag_us, absl::Duration* value) {
  if (flag_us == -1) return true;
  *value = absl::Microseconds(flag_us);
  return false;
}

absl::Status CheckPositive(absl::string_view name, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", name, " = ", value, " must be positive"));
}

// --shared-memory: a comma-separated subset of {system, cuda}.
absl::Status ParseSharedMemory(const std::string& value, ServerConfig& c) {
  for (absl::string_view kind : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    kind = absl::StripAsciiWhitespace(kind);
    if (kind == "system") {
      c.shared_memory_system = true;
    } else if (kind == "cuda") {
      c.shared_memory_cuda = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--shared_memory = '", value, "': '", kind,
                                                     "' is not a region kind (system, cuda)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNonNegative(absl::string_view name, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", name, " = ", value, " must be >= 0"));
}

}  // namespace

int64_t FreedBytesKeptPerArena(int64_t max_queue_bytes) {
  return std::clamp<int64_t>(max_queue_bytes, int64_t{32} << 20, int64_t{1} << 30);
}

int64_t AutomaticResponsePoolBytes(int64_t max_queue_bytes) {
  return std::max<int64_t>(max_queue_bytes, int64_t{32} << 20);
}

absl::StatusOr<ServerConfig> LoadServerConfig(int argc, char** argv) {
  // absl allows one usage message per process; tests load configurations more than once.
  static const bool usage_set = [] {
    absl::SetProgramUsageMessage(kUsage);
    return true;
  }();
  (void)usage_set;
  // --help lists normd's own flags (absl's default looks for flags defined in main's file).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = &IsMainFlagFile;
  usage.contains_helpshort_flags = &IsMainFlagFile;
  absl::SetFlagsUsageConfig(usage);
  if (absl::Status env = ApplyEnvironment(); !env.ok()) return env;
  const std::vector<std::string> rest = ParseCommandLineWithDashes(argc, argv);
  if (rest.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", rest[1], "' (see --help)"));
  }

  ServerConfig c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  c.max_connection_age = absl::GetFlag(FLAGS_max_connection_age);
  c.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  c.tls_key = absl::GetFlag(FLAGS_tls_key);
  c.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both or neither");
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca (mTLS) needs --tls-cert and --tls-key");
  }
  c.backend = absl::GetFlag(FLAGS_backend);
  if (c.backend != "auto" && c.backend != "cpu" && c.backend != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend = '", c.backend, "': expected auto, cpu or cuda"));
  }
  c.cpu_threads = absl::GetFlag(FLAGS_cpu_threads);
  if (c.cpu_threads <= 0) c.cpu_threads = UsableCpuCount();
  c.gpus = absl::GetFlag(FLAGS_gpus);
  c.workers_per_gpu = absl::GetFlag(FLAGS_workers_per_gpu);
  c.zero_copy_max_bytes = absl::GetFlag(FLAGS_zero_copy_max_bytes);
  c.batch.overlap_min_bytes = absl::GetFlag(FLAGS_overlap_min_bytes);
  c.copy_threads = absl::GetFlag(FLAGS_copy_threads);
  c.parallel_copy_min_bytes = absl::GetFlag(FLAGS_parallel_copy_min_bytes);
  if (absl::Status s = CheckNonNegative("parallel_copy_min_bytes", c.parallel_copy_min_bytes);
      !s.ok()) {
    return s;
  }
  c.copy_spin_as_busy_poll =
      ReadAutomaticMicroseconds(absl::GetFlag(FLAGS_copy_spin_us), &c.copy_spin);
  c.reply_threads = absl::GetFlag(FLAGS_reply_threads);
  c.max_hidden = absl::GetFlag(FLAGS_max_hidden);
  c.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  c.batch.max_rows = absl::GetFlag(FLAGS_max_batch_rows);
  c.batch.max_bytes = absl::GetFlag(FLAGS_max_batch_bytes);
  c.batch.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  c.company_wait_automatic =
      ReadAutomaticMicroseconds(absl::GetFlag(FLAGS_company_wait_us), &c.batch.company_wait);
  c.batch.company_min_requests = absl::GetFlag(FLAGS_company_min_requests);
  c.batch.company_max_requests = absl::GetFlag(FLAGS_company_max_requests);
  const int64_t company_memory = absl::GetFlag(FLAGS_company_memory);
  if (company_memory < 1 || company_memory > kMaxCompanyMemory) {
    return absl::InvalidArgumentError(absl::StrCat("--company_memory = ", company_memory,
                                                   " must be in [1, ", kMaxCompanyMemory, "]"));
  }
  c.batch.company_memory = static_cast<int>(company_memory);
  c.busy_poll_automatic =
      ReadAutomaticMicroseconds(absl::GetFlag(FLAGS_busy_poll_us), &c.batch.busy_poll);
  c.max_queue_bytes = absl::GetFlag(FLAGS_max_queue_bytes);
  c.fill_first_rows = absl::GetFlag(FLAGS_fill_first_rows);
  if (absl::Status s = CheckNonNegative("fill_first_rows", c.fill_first_rows); !s.ok()) return s;
  c.max_weight_bytes = absl::GetFlag(FLAGS_max_weight_bytes);
  c.response_pool_bytes = absl::GetFlag(FLAGS_response_pool_bytes);
  // Automatic: the memory given to requests in flight (server_config.h says why; the
  // measurements are in docs/PERFORMANCE.md, "The measurements behind the automatic values").
  c.response_pool_automatic = c.response_pool_bytes == -1;
  if (c.response_pool_automatic)
    c.response_pool_bytes = AutomaticResponsePoolBytes(c.max_queue_bytes);
  if (c.response_pool_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--response_pool_bytes = ", c.response_pool_bytes, " must be >= 0, or -1 for automatic"));
  }
  c.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  c.malloc_arenas = absl::GetFlag(FLAGS_malloc_arenas);
  // One arena per 4 cores: on the H200 machine's 16 cores, 4 arenas kept 1-row requests at c=256 at
  // 0.91-0.99 of the echo where 2 gave 0.84 and 1 gave 0.66-0.68; on 2 cores 1 arena cost nothing
  // measurable and left the least memory behind an overload (docs/RELIABILITY.md).
  if (c.malloc_arenas == 0) c.malloc_arenas = std::max(1, UsableCpuCount() / 4);
  c.stream_max_inflight = absl::GetFlag(FLAGS_stream_max_inflight);
  c.max_memory_bytes = absl::GetFlag(FLAGS_max_memory_bytes);
  c.max_pinned_bytes = absl::GetFlag(FLAGS_max_pinned_bytes);
  c.grpc_resource_quota = absl::GetFlag(FLAGS_grpc_resource_quota);
  if (absl::Status s = CheckNonNegative("max_memory_bytes", c.max_memory_bytes); !s.ok()) return s;
  if (absl::Status s = CheckNonNegative("max_pinned_bytes", c.max_pinned_bytes); !s.ok()) return s;
  c.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  c.stream_stall_timeout = absl::GetFlag(FLAGS_stream_stall_timeout);
  c.stream_stall_timeout_under_pressure = absl::GetFlag(FLAGS_stream_stall_timeout_under_pressure);
  for (const auto& [name, value] :
       {std::pair<absl::string_view, int64_t>{"workers_per_gpu", c.workers_per_gpu},
        {"max_hidden", c.max_hidden},
        {"max_request_bytes", c.max_request_bytes},
        {"max_batch_rows", c.batch.max_rows},
        {"max_batch_bytes", c.batch.max_bytes},
        {"company_min_requests", c.batch.company_min_requests},
        {"company_max_requests", c.batch.company_max_requests},
        {"max_queue_bytes", c.max_queue_bytes},
        {"max_weight_bytes", c.max_weight_bytes},
        {"stream_max_inflight", c.stream_max_inflight},
        {"max_concurrent_streams", c.max_concurrent_streams}}) {
    if (absl::Status s = CheckPositive(name, value); !s.ok()) return s;
  }
  if (c.max_request_bytes > (int64_t{2} << 30) - 1) {
    return absl::InvalidArgumentError(absl::StrCat("--max_request_bytes = ", c.max_request_bytes,
                                                   " exceeds gRPC's 2 GiB message limit"));
  }
  if (absl::GetFlag(FLAGS_max_queue_delay_us) < 0 || absl::GetFlag(FLAGS_company_wait_us) < -1 ||
      c.drain_timeout < absl::ZeroDuration() || c.stream_stall_timeout < absl::ZeroDuration() ||
      c.stream_stall_timeout_under_pressure < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_queue_delay_us = ", absl::GetFlag(FLAGS_max_queue_delay_us),
                     ", --company_wait_us = ", absl::GetFlag(FLAGS_company_wait_us),
                     ", --stream_stall_timeout = ", absl::FormatDuration(c.stream_stall_timeout),
                     ", --stream_stall_timeout_under_pressure = ",
                     absl::FormatDuration(c.stream_stall_timeout_under_pressure),
                     " and --drain_timeout = ", absl::FormatDuration(c.drain_timeout),
                     " must be >= 0 (--company_wait_us may be -1: automatic)"));
  }
  if (c.batch.company_max_requests < c.batch.company_min_requests) {
    return absl::InvalidArgumentError(
        absl::StrCat("--company_max_requests = ", c.batch.company_max_requests,
                     " is below --company_min_requests = ", c.batch.company_min_requests,
                     ": no launch would ever wait for company (--company_wait_us=0 turns "
                     "waiting off)"));
  }
  if (c.copy_threads < 0 || absl::GetFlag(FLAGS_copy_spin_us) < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--copy_threads = ", c.copy_threads,
        " must be >= 0 and --copy_spin_us = ", absl::GetFlag(FLAGS_copy_spin_us), " >= -1"));
  }
  if (c.reply_threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reply_threads = ", c.reply_threads, " must be >= 0 (0 = automatic)"));
  }
  if (absl::GetFlag(FLAGS_busy_poll_us) < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--busy_poll_us = ", absl::GetFlag(FLAGS_busy_poll_us),
                     " must be >= 0, or -1 for automatic"));
  }
  if (absl::Status s = CheckNonNegative("malloc_arenas", c.malloc_arenas); !s.ok()) return s;
  if (c.zero_copy_max_bytes < 0 || c.batch.overlap_min_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--zero_copy_max_bytes = ", c.zero_copy_max_bytes,
                     " and --overlap_min_bytes = ", c.batch.overlap_min_bytes, " must be >= 0"));
  }
  if (absl::Status s = ParseSharedMemory(absl::GetFlag(FLAGS_shared_memory), c); !s.ok()) return s;
  c.max_shared_memory_bytes = absl::GetFlag(FLAGS_max_shared_memory_bytes);
  c.max_regions_per_client = absl::GetFlag(FLAGS_max_regions_per_client);
  if (absl::Status s = CheckPositive("max_shared_memory_bytes", c.max_shared_memory_bytes);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckPositive("max_regions_per_client", c.max_regions_per_client); !s.ok()) {
    return s;
  }
  c.listen_unix = absl::GetFlag(FLAGS_listen_unix);
  if (!ParseLogLevel(absl::GetFlag(FLAGS_log_level), &c.log_level)) {
    return absl::InvalidArgumentError(absl::StrCat("--log_level = '",
                                                   absl::GetFlag(FLAGS_log_level),
                                                   "': expected debug, info, warning or error"));
  }
  return c;
}

absl::Duration AutomaticBusyPoll(int usable_cpus, int cuda_workers) {
  if (cuda_workers <= 0 || usable_cpus < kBusyPollAutomaticCpusPerWorker * cuda_workers) {
    return absl::ZeroDuration();
  }
  return kBusyPollAutomatic;
}

namespace {

// Half the usable CPUs each CUDA worker has, at least 1 and at most `most`: the rule both the copy
// and the reply threads' automatic choices follow.
int HalfTheCpusPerWorker(int usable_cpus, int cuda_workers, int most) {
  if (cuda_workers <= 0) return 1;
  return std::clamp(usable_cpus / cuda_workers / 2, 1, most);
}

}  // namespace

int AutomaticCopyThreads(int usable_cpus, int cuda_workers) {
  return HalfTheCpusPerWorker(usable_cpus, cuda_workers, kMaxAutomaticCopyThreads);
}

int AutomaticReplyThreads(int usable_cpus, int cuda_workers) {
  return HalfTheCpusPerWorker(usable_cpus, cuda_workers, kMaxAutomaticReplyThreads);
}

}  // namespace normd
