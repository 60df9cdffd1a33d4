// What the hostile-client suites (hostile_test.cc, hostile_stream_test.cc,
// stream_memory_budget_test.cc) share: a client that behaves (WellBehavedClient) and runs beside
// each hostile one, the check that it was served normally, normd_inflight_requests read from
// /metrics, which must return to 0 once the hostile client is gone (nothing it left behind may
// still hold a slot), and the waits for a stream's answers and for a writer that never reads.
//
// "Served" is judged by events, not by timing: the tests wait for the well-behaved client's next
// answers while the hostile client does its worst (WaitForMoreCalls), and every call must succeed
// within its deadline. Its latencies are printed for docs/RELIABILITY.md, not asserted: on a shared
// two-core machine they measure the machine as much as normd.
#ifndef NORMD_TESTS_INTEGRATION_HOSTILE_CLIENTS_H_
#define NORMD_TESTS_INTEGRATION_HOSTILE_CLIENTS_H_

#include <grpcpp/support/byte_buffer.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "base/mutex.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/normd_process.h"

namespace normd::testing {

// A deadline `d` from now, as gRPC's ClientContext takes it.
std::chrono::system_clock::time_point In(absl::Duration d);

// One slice holding `bytes`: a message as the generic API sends it, protobuf or not.
grpc::ByteBuffer ToByteBuffer(const std::string& bytes);

// normd_inflight_requests from the server's /metrics, or -1.
int64_t InflightRequests(const NormdProcess& server);

// Polls /metrics until no accepted request is left unanswered; returns the last value seen.
int64_t WaitForNoInflight(const NormdProcess& server, absl::Duration timeout = absl::Seconds(60));

// Waits until normd has answered `count` NormalizeStream requests OK (false if it never does).
bool WaitForStreamAnswers(const NormdProcess& server, int count);

// Waits until a writer that never reads has stalled: flow control stops it once gRPC's windows are
// full, and that nothing more is written can only be seen as no progress, so the writer is taken as
// stalled once a full second of real time passes without a write. (A pause of the machine can only
// make that come early, which makes the checks that follow less sensitive, never fail on a server
// that works.) Returns early once `finished` holds: the writer has stopped writing for good.
void WaitForWriterToStall(const std::atomic<int>& written, const std::function<bool()>& finished);

// A client that behaves: one small Normalize (4 x 1024 fp32) every 5 ms on its own connection, each
// checked against the reference. Stop() reports how it went.
class WellBehavedClient {
 public:
  struct Summary {
    int calls = 0;
    int failures = 0;
    std::string first_failure;
    absl::Duration p50, p99, max;
  };

  explicit WellBehavedClient(const NormdProcess& server);
  ~WellBehavedClient() { Stop(); }

  // Waits until `more` calls beyond those answered so far have been answered correctly; false if
  // they were not within `timeout` (or a call failed meanwhile: the summary says which).
  bool WaitForMoreCalls(int more, absl::Duration timeout = absl::Seconds(60));

  Summary Stop();

 private:
  void Run();

  std::unique_ptr<normd::v1::Normalizer::Stub> stub_;
  std::atomic<bool> stop_{false};
  normd::Mutex mu_;
  int calls_ok_ ABSL_GUARDED_BY(mu_) = 0;
  int calls_failed_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<absl::Duration> latencies_;  // written by thread_ only, read after the join
  Summary summary_;
  std::thread thread_;  // last: starts once everything above is built
};

// The well-behaved client was served throughout: it made calls, and every one was answered within
// its 10 s deadline and matched the reference. Its latencies are printed (p50, p99, max).
void ExpectServedNormally(const char* test, const WellBehavedClient::Summary& s);

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_HOSTILE_CLIENTS_H_
