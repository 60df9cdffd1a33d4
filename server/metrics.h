// normd's Prometheus metrics (prefix normd_): the families, their labels and buckets, and the hooks the
// service, the scheduler and the workers call.
//
// Histograms by default (they aggregate across replicas, unlike summaries), with buckets from 10 µs to
// about 20 s for durations. Every hook is thread-safe (prometheus-cpp's metrics are atomic; label
// lookups take the family's own lock). The hooks never touch tensor data: the endpoint exposes counts
// and timings only.
#ifndef NORMD_SERVER_METRICS_H_
#define NORMD_SERVER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace normd {

// Per-launch stage times, as the executor measured them (zero for stages it does not have).
struct StageTimes {
  absl::Duration pack;    // CUDA: copying requests into pinned staging
  absl::Duration h2d;     // CUDA: host to device copy
  absl::Duration kernel;  // CUDA: the RMSNorm kernel
  absl::Duration d2h;     // CUDA: device to host copy
  absl::Duration cpu;     // CPU backend: the whole computation
};

class ServerMetrics {
 public:
  explicit ServerMetrics(std::shared_ptr<prometheus::Registry> registry);

  // Sets normd_build_info{version, backend, cuda} = 1. Call once.
  void SetBuildInfo(const std::string& version, const std::string& backend, bool built_with_cuda);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // A finished RPC (for streams: each message), from receipt to reply.
  void RequestDone(const std::string& method, const absl::Status& status, absl::Duration duration);
  // Tensor payload bytes of a request computed successfully.
  void Payload(int64_t bytes_in, int64_t bytes_out);
  void QueueWait(absl::Duration wait);
  // One launch: its size, stage times, and the bytes its kernel moved (for the achieved bandwidth).
  void Launch(const std::string& device, int64_t rows, int64_t requests, const StageTimes& stages,
              int64_t kernel_bytes);
  void SetDeviceCopyBandwidth(const std::string& device, double bytes_per_second);

  prometheus::Gauge& queue_depth() { return *queue_depth_; }
  prometheus::Gauge& inflight_requests() { return *inflight_requests_; }
  prometheus::Gauge& weights_registered() { return *weights_registered_; }
  prometheus::Gauge& pinned_bytes(const std::string& device) { return pinned_bytes_->Add({{"device", device}}); }
  prometheus::Gauge& device_bytes(const std::string& device) { return device_bytes_->Add({{"device", device}}); }
  prometheus::Gauge& workers(const std::string& state, const std::string& device) {
    return workers_->Add({{"state", state}, {"device", device}});
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_total_;
  prometheus::Family<prometheus::Histogram>* request_duration_;
  prometheus::Histogram* queue_wait_;
  prometheus::Family<prometheus::Histogram>* stage_duration_;
  prometheus::Family<prometheus::Histogram>* batch_rows_;
  prometheus::Family<prometheus::Histogram>* batch_requests_;
  prometheus::Family<prometheus::Counter>* launches_total_;
  prometheus::Family<prometheus::Counter>* rows_total_;
  prometheus::Counter* bytes_in_;
  prometheus::Counter* bytes_out_;
  prometheus::Family<prometheus::Histogram>* kernel_bandwidth_;
  prometheus::Family<prometheus::Gauge>* device_copy_bandwidth_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* inflight_requests_;
  prometheus::Family<prometheus::Gauge>* pinned_bytes_;
  prometheus::Family<prometheus::Gauge>* device_bytes_;
  prometheus::Gauge* weights_registered_;
  prometheus::Family<prometheus::Gauge>* workers_;
};

// gRPC's name for a status code ("OK", "INVALID_ARGUMENT", ...), the `code` label's values.
const char* StatusCodeName(absl::StatusCode code);

}  // namespace normd

#endif  // NORMD_SERVER_METRICS_H_
