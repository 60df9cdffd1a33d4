// normd's Prometheus metrics (prefix normd_): the families, their labels and buckets, and the hooks
// the service, the scheduler and the workers call.
//
// Histograms by default (they aggregate across replicas, unlike summaries), with buckets from 10 µs
// to about 20 s for durations. Every hook is thread-safe (prometheus-cpp's metrics are atomic). The
// labelled series a hook needs are looked up in prometheus-cpp once and kept here: Family::Add
// builds a label map and takes the family's lock, and the per-request hooks made about ten such
// calls per request. The hooks never touch tensor data: the endpoint exposes counts and timings
// only.
#ifndef NORMD_SERVER_OBSERVABILITY_METRICS_H_
#define NORMD_SERVER_OBSERVABILITY_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/core/work.h"

namespace normd {

// Per-launch stage times, as the executor measured them (zero for stages it does not have).
struct StageTimes {
  absl::Duration pack;    // CUDA: copying requests into pinned staging
  absl::Duration h2d;     // CUDA: host to device copy
  absl::Duration kernel;  // CUDA: the RMSNorm kernel
  absl::Duration d2h;     // CUDA: device to host copy
  absl::Duration cpu;     // CPU backend: the whole computation
  // CUDA, host side: the thread's time enqueueing the launch's copies, kernels and events (from
  // packed to enqueued), and its time blocked until the device was done (from Finish's start).
  // Their sum beside h2d + kernel + d2h shows what the driver adds around the device's own work.
  absl::Duration submit;
  absl::Duration wait;
};

class ServerMetrics {
 public:
  explicit ServerMetrics(std::shared_ptr<prometheus::Registry> registry);

  // Sets normd_build_info{version, backend, cuda} = 1. Call once.
  void SetBuildInfo(const std::string& version, const std::string& backend, bool built_with_cuda);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // A finished RPC (for streams: each message), from receipt to reply.
  void RequestDone(absl::string_view method, const absl::Status& status, absl::Duration duration);
  // A Normalize request (or stream message) answered, by how its tensors travelled: "bytes" in the
  // messages, "system" or "cuda" for one with a tensor in such a region.
  void RequestTransport(TensorMemory transport) {
    by_transport_[static_cast<size_t>(transport)]->Increment();
  }
  // Tensor payload bytes of a request computed successfully.
  void Payload(int64_t bytes_in, int64_t bytes_out);
  void QueueWait(absl::Duration wait);
  // One launch: its size, stage times, and the bytes its kernel moved (for the achieved bandwidth).
  void Launch(absl::string_view device, int64_t rows, int64_t requests, const StageTimes& stages,
              int64_t kernel_bytes);
  // The worker's time answering a finished launch's requests (building each response and handing it
  // to gRPC; with reply threads, the first request and posting the others): the "reply" stage,
  // observed after Launch because it comes after the launch is counted.
  void LaunchReplied(absl::string_view device, absl::Duration duration);
  void SetDeviceCopyBandwidth(const std::string& device, double bytes_per_second);
  // Pinned host <-> device copy bandwidth measured at start-up; direction "h2d" or "d2h".
  void SetHostLinkBandwidth(const std::string& device, const std::string& direction,
                            double bytes_per_second);

  prometheus::Gauge& queue_depth() { return *queue_depth_; }
  prometheus::Gauge& inflight_requests() { return *inflight_requests_; }
  prometheus::Gauge& weights_registered() { return *weights_registered_; }
  prometheus::Gauge& pinned_bytes(const std::string& device) {
    return pinned_bytes_->Add({{"device", device}});
  }
  prometheus::Gauge& device_bytes(const std::string& device) {
    return device_bytes_->Add({{"device", device}});
  }
  prometheus::Gauge& workers(const std::string& state, const std::string& device) {
    return workers_->Add({{"state", state}, {"device", device}});
  }

 private:
  // The series of one method: its duration histogram, and its request counter for each status code
  // (made on first use, so that /metrics lists only the codes that happened).
  struct MethodSeries {
    prometheus::Histogram* duration = nullptr;
    std::array<prometheus::Counter*, 17> by_code{};
  };
  // The series of one device: made on first use; stage and bandwidth histograms only once a launch
  // has that stage, so that a CPU backend does not list empty h2d/kernel/d2h series.
  struct DeviceSeries {
    const std::string* name =
        nullptr;  // the device label: the key in devices_ (a node map: stable)
    prometheus::Histogram* batch_rows = nullptr;
    prometheus::Histogram* batch_requests = nullptr;
    prometheus::Counter* launches = nullptr;
    prometheus::Counter* rows = nullptr;
    std::array<prometheus::Histogram*, 8> stages{};  // in kStageNames' order (metrics.cc)
    prometheus::Histogram* kernel_bandwidth = nullptr;
  };

  DeviceSeries& SeriesOf(absl::string_view device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(series_mu_);
  void ObserveStage(DeviceSeries& d, size_t stage, absl::Duration duration)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(series_mu_);

  std::shared_ptr<prometheus::Registry> registry_;
  normd::Mutex series_mu_;  // guards the two maps and the lazily filled pointers in their values
  absl::node_hash_map<std::string, MethodSeries> methods_ ABSL_GUARDED_BY(series_mu_);
  absl::node_hash_map<std::string, DeviceSeries> devices_ ABSL_GUARDED_BY(series_mu_);
  prometheus::Family<prometheus::Counter>* requests_total_;
  prometheus::Family<prometheus::Histogram>* request_duration_;
  prometheus::Histogram* queue_wait_;
  prometheus::Family<prometheus::Histogram>* stage_duration_;
  prometheus::Family<prometheus::Histogram>* batch_rows_;
  prometheus::Family<prometheus::Histogram>* batch_requests_;
  prometheus::Family<prometheus::Counter>* launches_total_;
  prometheus::Family<prometheus::Counter>* rows_total_;
  std::array<prometheus::Counter*, 3> by_transport_{};  // by TensorMemory
  prometheus::Counter* bytes_in_;
  prometheus::Counter* bytes_out_;
  prometheus::Family<prometheus::Histogram>* kernel_bandwidth_;
  prometheus::Family<prometheus::Gauge>* device_copy_bandwidth_;
  prometheus::Family<prometheus::Gauge>* host_link_bandwidth_;
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

#endif  // NORMD_SERVER_OBSERVABILITY_METRICS_H_
