// What normbench records for one measurement window and how windows are summarized: latencies (for
// p50/p90/p95/p99), errors by gRPC code, and the server's batch size from each response's Timing.
#ifndef NORMD_BENCH_LOAD_LOAD_STATS_H_
#define NORMD_BENCH_LOAD_LOAD_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace normd::bench {

struct WindowStats {
  absl::Duration length;
  std::vector<uint32_t> latencies_us;  // successful requests only
  std::map<absl::StatusCode, int64_t> errors;
  int64_t batch_requests_sum = 0;  // sum of Timing.batch_requests over successful responses

  int64_t ok() const { return static_cast<int64_t>(latencies_us.size()); }
  int64_t error_count() const;
  double throughput_rps() const;
  double mean_batch_requests() const;
  double mean_latency_us() const;
  // The q-quantile (0..1) of the latencies, nearest rank; 0 without samples. Sorts latencies_us.
  double Percentile(double q);
  void Merge(const WindowStats& other);
};

// True when the last three windows' throughputs are each within `tolerance` (0.1 = 10%) of their
// mean.
bool LastThreeAgree(const std::vector<WindowStats>& windows, double tolerance);

// Target over baseline throughput, window pair by window pair. normbench measures the two servers
// alternately, so window i of each saw nearly the same machine; the median of the pairs' ratios is
// what a burst of noise in one window (a 1 s window of 1-row requests moves by up to ±15% on the
// H200 machine) moves least. Pairs with a baseline window that served nothing are left out.
struct PairedRatios {
  int pairs = 0;  // 0: no pair to compare, and the other fields are 0
  double median = 0, min = 0, max = 0;
};
PairedRatios PairWindowRatios(const std::vector<WindowStats>& target,
                              const std::vector<WindowStats>& baseline);

// "UNAVAILABLE=3 DEADLINE_EXCEEDED=1", or "" without errors.
std::string ErrorsByCode(const WindowStats& stats);

}  // namespace normd::bench

#endif  // NORMD_BENCH_LOAD_LOAD_STATS_H_
