// The shared-memory transport's gauges (prefix normd_shared_memory_): sessions open, regions
// registered and bytes mapped, by region kind ("system", "cuda"). A region counts until it is
// unregistered (or its session ends); its bytes until it is released, after the last request
// using it: what --max-shared-memory-bytes bounds. Thread-safe (prometheus-cpp's gauges are
// atomic).
#ifndef NORMD_SERVER_OBSERVABILITY_REGION_METRICS_H_
#define NORMD_SERVER_OBSERVABILITY_REGION_METRICS_H_

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdint>

namespace normd {

class RegionMetrics {
 public:
  explicit RegionMetrics(prometheus::Registry& registry);

  enum class Kind { kSystem = 0, kCuda = 1 };
  void SessionOpened() { sessions_->Increment(); }
  void SessionClosed() { sessions_->Decrement(); }
  void RegionRegistered(Kind kind, int64_t bytes);
  void RegionUnregistered(Kind kind) { regions_[static_cast<int>(kind)]->Decrement(); }
  void BytesReleased(Kind kind, int64_t bytes) {
    bytes_[static_cast<int>(kind)]->Decrement(static_cast<double>(bytes));
  }

 private:
  prometheus::Gauge* sessions_;
  prometheus::Gauge* regions_[2];
  prometheus::Gauge* bytes_[2];
};

}  // namespace normd

#endif  // NORMD_SERVER_OBSERVABILITY_REGION_METRICS_H_
