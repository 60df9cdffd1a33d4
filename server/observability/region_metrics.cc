#include "server/observability/region_metrics.h"

namespace normd {

RegionMetrics::RegionMetrics(prometheus::Registry& registry) {
  sessions_ = &prometheus::BuildGauge()
                   .Name("normd_shared_memory_sessions")
                   .Help("Region sessions open (one per connection using shared memory)")
                   .Register(registry)
                   .Add({});
  auto& regions = prometheus::BuildGauge()
                      .Name("normd_shared_memory_regions")
                      .Help("Shared-memory regions registered, by kind (system, cuda)")
                      .Register(registry);
  auto& bytes = prometheus::BuildGauge()
                    .Name("normd_shared_memory_bytes")
                    .Help(
                        "Bytes of shared-memory regions mapped (system: mapped, and pinned on "
                        "the CUDA backend; cuda: opened), by kind")
                    .Register(registry);
  const char* kinds[] = {"system", "cuda"};
  for (int i = 0; i < 2; ++i) {
    regions_[i] = &regions.Add({{"kind", kinds[i]}});
    bytes_[i] = &bytes.Add({{"kind", kinds[i]}});
  }
}

void RegionMetrics::RegionRegistered(Kind kind, int64_t bytes) {
  regions_[static_cast<int>(kind)]->Increment();
  bytes_[static_cast<int>(kind)]->Increment(static_cast<double>(bytes));
}

}  // namespace normd
