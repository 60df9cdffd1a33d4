// Metrics read from the process itself at scrape time: resident memory and CPU time under the names
// Prometheus's own client libraries use (process_resident_memory_bytes, process_cpu_seconds_total),
// and glibc's account of the heap (normd_allocator_bytes{state="in_use"|"free_held"}). free_held
// counts free chunks whether or not their pages are resident (an idle normd holds ~256 MiB of them
// at ~18 MiB resident), so resident minus in_use is the better measure of what the allocator keeps.
// Also LargeBufferPool's idle bytes (normd_response_pool_idle_bytes: resident, kept for the next 32
// MiB responses) and its takes by source
// (normd_response_pool_takes_total{source="reused"|"mapped"}).
//
// Why: the overload and soak budgets are about resident memory, and the question each time is
// whether the memory over the budget is live data (requests, responses, gRPC's buffers) or free
// memory the allocator keeps (main.cc's KeepLargeBuffersInTheAllocator). These answer it from
// /metrics, and process_cpu_seconds_total shows what --busy-poll-us costs.
#ifndef NORMD_SERVER_OBSERVABILITY_PROCESS_METRICS_H_
#define NORMD_SERVER_OBSERVABILITY_PROCESS_METRICS_H_

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

namespace normd {

class ProcessMetrics : public prometheus::Collectable {
 public:
  // Reads /proc/self and the allocator on every scrape (tens of µs; scrapes come seconds apart).
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace normd

#endif  // NORMD_SERVER_OBSERVABILITY_PROCESS_METRICS_H_
