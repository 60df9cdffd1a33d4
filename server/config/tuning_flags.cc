// Definitions of the tuning flags (tuning_flags.h says why they are apart).
#include "server/config/tuning_flags.h"

#include "absl/flags/flag.h"
#include "server/executors/copy_pool.h"

ABSL_FLAG(int, cpu_threads, 0,
          "CPU backend: cores one launch may use (0 = every core this process may run on)");

ABSL_FLAG(int, workers_per_gpu, 2, "CUDA backend: workers (stream + pinned buffers) per GPU");

ABSL_FLAG(
    int64_t, zero_copy_max_bytes, int64_t{1} << 20,
    "CUDA backend: launches moving at most this many bytes (up + down) are computed straight from "
    "and "
    "into pinned host memory, skipping the two copies and their fixed cost (0 = always copy)");

ABSL_FLAG(int, copy_threads, 0,
          "CUDA backend: threads that copy one launch's bytes into and out of pinned memory, the "
          "worker's own included, for launches of --parallel-copy-min-bytes and more (0 = "
          "automatic: half the CPUs per worker, at most 4)");

ABSL_FLAG(
    int64_t, parallel_copy_min_bytes, normd::kParallelCopyMinBytes,
    "CUDA backend: launches copying fewer bytes than this (into and out of pinned memory) are "
    "copied by the worker's thread alone, without waking the other copy threads");

ABSL_FLAG(int64_t, copy_spin_us, -1,
          "CUDA backend: how long copy threads poll for the next launch before sleeping (-1 = as "
          "long as --busy-poll-us resolves to)");

ABSL_FLAG(
    int, reply_threads, 0,
    "Threads that answer a finished launch's requests (build the responses and hand them to gRPC), "
    "the worker's own included, so that the worker goes back to launching (0 = automatic: with the "
    "CUDA backend half the CPUs per worker, at most 4; with the CPU backend 1, the worker alone)");

ABSL_FLAG(
    int64_t, overlap_min_bytes, int64_t{256} << 10,
    "CUDA backend: a launch starts while another is still on the device only if it carries at "
    "least "
    "this many payload bytes; smaller requests wait and go out together (0 = always overlap)");

ABSL_FLAG(
    int64_t, max_queue_delay_us, 0,
    "How long a partial launch may wait for company once its worker is free (0 = never wait)");

ABSL_FLAG(int64_t, company_wait_us, -1,
          "Adaptive batching for clients that wait for each answer: a launch may wait up to this "
          "long for as many requests as the largest of the worker's last --company-memory launches "
          "carried (at most --company-max-requests), if that is at least --company-min-requests "
          "(0 = off; -1 = automatic: 1000 with the CUDA backend, else off)");

ABSL_FLAG(int64_t, company_min_requests, 9,
          "With --company-wait-us: only an expectation of at least this many requests makes a "
          "launch wait for company, so that fewer clients than this are never held");

ABSL_FLAG(int64_t, company_max_requests, 20,
          "With --company-wait-us: a launch waits for at most this many requests (the ones queued "
          "beyond them still ride along)");

ABSL_FLAG(
    int64_t, company_memory, 8,
    "With --company-wait-us: how many of its last launches a worker remembers when it decides "
    "how many requests to wait for (1: the last launch alone)");

ABSL_FLAG(
    int64_t, busy_poll_us, -1,
    "Latency for CPU: after its last launch a worker's thread polls for new requests this long (a "
    "core busy meanwhile) instead of sleeping, and launches small ones (up to 64 KiB) itself with "
    "its "
    "caches warm (0 = off; -1 = automatic: 1000 with the CUDA backend when normd may run on at "
    "least "
    "4 CPUs per worker, else off)");

ABSL_FLAG(int64_t, fill_first_rows, 256,
          "Requests go to the first worker holding fewer than this many rows (queued or running),"
          " so that small concurrent requests ride in one worker's launches; past it, to the "
          "least loaded worker (0 = always the least loaded)");

ABSL_FLAG(int, malloc_arenas, 0,
          "glibc malloc arenas shared by normd's threads (0 = one per 4 cores it may run on, at "
          "least 1). Each "
          "keeps up to max(--max-queue-bytes, 32 MiB) of freed memory for the next requests, so "
          "fewer arenas "
          "bound memory tighter; more spread allocations over more locks");

ABSL_FLAG(
    int64_t, response_pool_bytes, -1,
    "Buffers of responses' 32 MiB-and-larger tensors kept, once sent, for the next such responses "
    "(written in place without a page fault each 4 KiB); past it they go back to the kernel (-1 = "
    "automatic: max(--max-queue-bytes, 32 MiB), the memory given to requests in flight)");
