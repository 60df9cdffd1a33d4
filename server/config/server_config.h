// normd's configuration: every command-line flag, its environment-variable twin, and the parsed
// result.
//
// Flags are absl flags. Each can be written with dashes or underscores (--max-hidden or
// --max_hidden), and each has an environment twin NORMD_<NAME> (NORMD_MAX_HIDDEN) for containers;
// the command line wins over the environment. `normd --help` lists them all with their defaults.
#ifndef NORMD_SERVER_CONFIG_SERVER_CONFIG_H_
#define NORMD_SERVER_CONFIG_SERVER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/batching/batch_former.h"
#include "server/observability/log.h"

namespace normd {

struct ServerConfig {
  std::string listen;
  std::string metrics_listen;         // "" = no metrics endpoint
  absl::Duration max_connection_age;  // zero = unlimited
  // TLS: PEM file paths. Both cert and key, or neither (plaintext). client_ca requires them and
  // turns on mTLS: every client must present a certificate that this CA signed.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string backend;  // "auto", "cpu" or "cuda"
  int cpu_threads = 0;  // resolved: > 0
  std::string gpus;     // "" = every visible GPU, else "0,1"
  int workers_per_gpu = 2;
  int64_t zero_copy_max_bytes =
      0;  // CUDA: launches up to this many bytes (up + down) skip the copies
  // CUDA: threads copying one launch to and from pinned memory (0 = AutomaticCopyThreads), and how
  // long they poll after a launch; --copy-spin-us=-1 (the default) sets copy_spin_as_busy_poll:
  // they poll as long as batch.busy_poll resolves to.
  int copy_threads = 0;
  absl::Duration copy_spin;
  bool copy_spin_as_busy_poll = false;
  // CUDA: launches copying fewer bytes than this are copied by the worker's thread alone
  // (CopyPool).
  int64_t parallel_copy_min_bytes = 0;
  // Threads answering one launch's requests, the worker's own included (0 = automatic: the CUDA
  // backend AutomaticReplyThreads, the CPU backend 1).
  int reply_threads = 0;
  int64_t max_hidden = 0;
  int64_t max_request_bytes = 0;
  BatchLimits batch;
  // --busy-poll-us=-1 (the default): the backend sets batch.busy_poll with AutomaticBusyPoll.
  bool busy_poll_automatic = false;
  // --company-wait-us=-1 (the default): the CUDA backend sets batch.company_wait to
  // kCompanyWaitAutomatic, the CPU backend leaves it off.
  bool company_wait_automatic = false;
  int64_t max_queue_bytes = 0;
  int64_t fill_first_rows = 0;     // Scheduler: see scheduler.h
  int max_concurrent_streams = 0;  // per HTTP/2 connection
  int malloc_arenas = 0;           // glibc's M_ARENA_MAX, resolved: > 0
  int64_t max_weight_bytes = 0;
  int64_t response_pool_bytes =
      0;  // LargeBufferPool's idle budget (server/core/large_buffer_pool.h)
  int stream_max_inflight = 0;
  // The memory budget for requests (0: none) and pinned staging's bound (0: none); see
  // server/config/memory_budget.h.
  int64_t max_memory_bytes = 0;
  int64_t max_pinned_bytes = 0;
  bool grpc_resource_quota = false;  // with max_memory_bytes: gRPC's quota (memory_budget.h)
  bool response_pool_automatic = false;
  absl::Duration drain_timeout;
  absl::Duration stream_stall_timeout;  // with max_memory_bytes; zero: never
  // With max_memory_bytes, while memory is short; zero: only stream_stall_timeout applies.
  absl::Duration stream_stall_timeout_under_pressure;
  LogLevel log_level = LogLevel::kInfo;
  // Shared memory (docs/SHARED_MEMORY.md): the region kinds --shared-memory enables (both off by
  // default), their limits, and the Unix socket for local clients ("" = none).
  bool shared_memory_system = false;
  bool shared_memory_cuda = false;
  int64_t max_shared_memory_bytes = 0;
  int64_t max_regions_per_client = 0;
  std::string listen_unix;
};

// --busy-poll-us's automatic choice. Polling makes a lone small request's CUDA launch and wait run
// on a thread that never slept, which cuts most of normd's latency over a bare gRPC echo at c=1
// (docs/PERFORMANCE.md, "The measurements behind the automatic values"), for up to a core per
// polling worker while requests keep coming within the window. So it is on where that core is a
// small share: the CUDA backend (the CPU backend's launches do not pay the driver's cold-thread
// cost) with at least kBusyPollAutomaticCpusPerWorker usable CPUs per worker.
inline constexpr int kBusyPollAutomaticCpusPerWorker = 4;
inline constexpr absl::Duration kBusyPollAutomatic = absl::Microseconds(1000);
absl::Duration AutomaticBusyPoll(int usable_cpus, int cuda_workers);

// --company-wait-us's automatic choice with the CUDA backend. Many small concurrent requests then
// ride one launch instead of a few, at no cost in throughput over one connection, while clients
// fewer than --company-min-requests are never held (docs/PERFORMANCE.md, "The measurements behind
// the automatic values"). The CPU backend computes every row on the host, where a launch costs in
// proportion to its rows: it does not wait.
inline constexpr absl::Duration kCompanyWaitAutomatic = absl::Microseconds(1000);
// The most launches --company-memory may remember (the expectation is a scan over them per launch).
inline constexpr int64_t kMaxCompanyMemory = 1024;

// --copy-threads's automatic choice: half the usable CPUs each CUDA worker has, at most
// kMaxAutomaticCopyThreads and at least 1 (the worker's own thread alone): copies of a large launch
// scale with threads until the host link is the limit.
inline constexpr int kMaxAutomaticCopyThreads = 4;
int AutomaticCopyThreads(int usable_cpus, int cuda_workers);

// --reply-threads's automatic choice with the CUDA backend, by the same rule as the copy threads':
// half the usable CPUs each worker has, at most kMaxAutomaticReplyThreads, at least 1. Answering
// small requests on the worker's own thread keeps it from launching; a few reply threads raise
// small-request throughput (server/batching/reply_pool.h, docs/PERFORMANCE.md). The CPU backend's
// launches use every core already: there the worker answers alone unless told otherwise.
inline constexpr int kMaxAutomaticReplyThreads = 4;
int AutomaticReplyThreads(int usable_cpus, int cuda_workers);

// Freed memory the allocator may keep per arena for the next requests (main.cc's
// KeepLargeBuffersInTheAllocator): max(--max-queue-bytes, 32 MiB) up to 1 GiB (mallopt takes an
// int).
int64_t FreedBytesKeptPerArena(int64_t max_queue_bytes);
// --response-pool-bytes's automatic budget: max(--max-queue-bytes, 32 MiB), not capped like the
// allocator's. The queue bound is the memory the operator gives to requests in flight; a smaller
// pool sends large responses to fresh mappings that fault every page, and with many of them in
// flight that costs a large share of throughput (docs/PERFORMANCE.md, "The measurements behind the
// automatic values").
int64_t AutomaticResponsePoolBytes(int64_t max_queue_bytes);

// Parses the environment and the command line (exits for --help) and checks every value.
absl::StatusOr<ServerConfig> LoadServerConfig(int argc, char** argv);

}  // namespace normd

#endif  // NORMD_SERVER_CONFIG_SERVER_CONFIG_H_
