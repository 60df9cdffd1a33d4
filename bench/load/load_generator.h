// LoadGenerator: keeps one normd (or normd-echo) busy with one prepared request, closed loop (a
// fixed number of requests in flight, each completion sending the next) or open loop (a target
// request rate, Poisson or evenly spaced arrivals), over unary calls or one pipelined
// StreamSession. Unary calls take turns over one or more clients (normbench --connections: each
// client its own connection).
//
// The request is marshalled once and shared by every call, so the generator spends its (shared,
// 2-core) CPU on gRPC alone. In open-loop mode latency is counted from each request's scheduled
// arrival, not from when it was actually sent, so a stalled generator or server cannot hide
// queueing (coordinated omission).
//
// Threads: completions run on gRPC's threads and record into stats_ under mu_; Collect() swaps the
// stats out. Start/Stop/Collect are called from one controlling thread.
#ifndef NORMD_BENCH_LOAD_LOAD_GENERATOR_H_
#define NORMD_BENCH_LOAD_LOAD_GENERATOR_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "bench/load/load_stats.h"
#include "client/normd_client.h"

namespace normd::bench {

struct LoadSpec {
  int concurrency = 1;        // closed loop: requests in flight
  double request_rate = 0.0;  // > 0: open loop at this many requests per second
  bool poisson = true;        // open loop: exponential gaps (else constant)
  bool stream = false;        // one NormalizeStream instead of unary calls
};

// The requests to send, by client and by slot: requests[c][s] goes over clients[c] (modulo the
// table's size) as the request of in-flight slot s (modulo the row's size). A closed loop keeps
// each slot's next request on that slot, so that requests whose outputs go to shared memory
// (normbench --transport=shm) each write their own place, never one another's.
using RequestTable = std::vector<std::vector<std::shared_ptr<const PreparedRequest>>>;

class LoadGenerator {
 public:
  // Borrows the clients (at least one), which must outlive the generator. Unary calls go to each in
  // turn; a stream (LoadSpec::stream) is opened on the first.
  LoadGenerator(std::vector<Client*> clients, std::shared_ptr<const PreparedRequest> request,
                uint64_t seed);
  LoadGenerator(std::vector<Client*> clients, RequestTable requests, uint64_t seed);
  ~LoadGenerator();

  void Start(const LoadSpec& spec);
  // Stops sending and waits for the requests in flight.
  void Stop();
  // The stats since the last Collect (or Start), with their window length.
  WindowStats Collect();
  // Successful requests since the last Collect, for the progress line.
  int64_t PeekOk();

 private:
  void Issue(absl::Time scheduled, int64_t slot);
  void OnDone(absl::Time scheduled, int64_t slot, const absl::StatusOr<NormalizeResult>& result);
  void RunArrivals(LoadSpec spec);

  const std::vector<Client*> clients_;
  std::atomic<uint64_t> next_client_{0};
  const RequestTable requests_;
  const uint64_t seed_;
  LoadSpec spec_;
  std::unique_ptr<StreamSession> session_;
  std::thread arrivals_;

  normd::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time window_start_ ABSL_GUARDED_BY(mu_);
  WindowStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd::bench

#endif  // NORMD_BENCH_LOAD_LOAD_GENERATOR_H_
