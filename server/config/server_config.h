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
// on a thread that never slept: at c=1 on the H200 machine (16 cores) normd's p50 over a bare gRPC
// echo fell from +67..+98 us to +7..+37 us for 1 x 4096 bf16 requests (docs/BENCHMARKS.md, "One
// request at a time"), for up to a core per polling worker while requests keep coming within the
// window. So it is on where that core is a small share: the CUDA backend (the CPU backend's
// launches do not pay the driver's cold-thread cost) with at least kBusyPollAutomaticCpusPerWorker
// usable CPUs per worker.
inline constexpr int kBusyPollAutomaticCpusPerWorker = 4;
inline constexpr absl::Duration kBusyPollAutomatic = absl::Microseconds(1000);
absl::Duration AutomaticBusyPoll(int usable_cpus, int cuda_workers);

// --company-wait-us's automatic choice with the CUDA backend. With 1-row bf16 requests at c=64 on
// the H200 machine a launch then carried 16.6-16.7 requests (3.6 dealt out over two workers, 8 with
// the first worker filled first and no wait) at 0.87-0.92 of the echo's throughput, and eight
// clients (under --company-min-requests) were never held (docs/BENCHMARKS.md, "Requests per
// launch"); with reply threads and the company memory, 17.7-19.3 at the same throughput ("Company
// memory"). The CPU backend computes every row on the host, where a launch costs in proportion to
// its rows: it does not wait.
inline constexpr absl::Duration kCompanyWaitAutomatic = absl::Microseconds(1000);
// The most launches --company-memory may remember (the expectation is a scan over them per launch).
inline constexpr int64_t kMaxCompanyMemory = 1024;

// --copy-threads's automatic choice: half the usable CPUs each CUDA worker has, at most
// kMaxAutomaticCopyThreads and at least 1 (the worker's own thread alone). On the H200 machine (16
// CPUs, 2 workers) that is 4 threads per launch's copies.
inline constexpr int kMaxAutomaticCopyThreads = 4;
int AutomaticCopyThreads(int usable_cpus, int cuda_workers);

// --reply-threads's automatic choice with the CUDA backend, by the same rule as the copy threads':
// half the usable CPUs each worker has, at most kMaxAutomaticReplyThreads, at least 1. Answering a
// 1 x 4096 bf16 request took 22-29 µs of the worker's thread on the H200 machine; with four threads
// normd served 36-40k such requests/s at c=64 over eight connections against 25-28k answering alone
// (server/batching/reply_pool.h). The CPU backend's launches use every core already: there the
// worker answers alone unless told otherwise.
inline constexpr int kMaxAutomaticReplyThreads = 4;
int AutomaticReplyThreads(int usable_cpus, int cuda_workers);

// Freed memory the allocator may keep per arena for the next requests (main.cc's
// KeepLargeBuffersInTheAllocator): max(--max-queue-bytes, 32 MiB) up to 1 GiB (mallopt takes an
// int).
int64_t FreedBytesKeptPerArena(int64_t max_queue_bytes);
// --response-pool-bytes's automatic budget: max(--max-queue-bytes, 32 MiB), not capped like the
// allocator's. The queue bound is the memory the operator gives to requests in flight; with many
// 32 MiB requests in flight (4096x4096 bf16 at c=256 on the H200) a 1 GiB pool sent 62% of the
// responses to fresh mappings, and normd served 0.67-0.71 of the echo; keeping them all, 0.99 once
// warm (docs/BENCHMARKS.md).
int64_t AutomaticResponsePoolBytes(int64_t max_queue_bytes);

// Parses the environment and the command line (exits for --help) and checks every value.
absl::StatusOr<ServerConfig> LoadServerConfig(int argc, char** argv);

}  // namespace normd

#endif  // NORMD_SERVER_CONFIG_SERVER_CONFIG_H_
