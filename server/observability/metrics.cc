#include "server/observability/metrics.h"

#include <cmath>
#include <iterator>

namespace normd {
namespace {

// `count` boundaries doubling from `first`. Built once per kind: the hooks pass them on every call
// (Family::Add takes them), and a request should not allocate a fresh vector for that.
prometheus::Histogram::BucketBoundaries Doubling(double first, int count) {
  prometheus::Histogram::BucketBoundaries b;
  for (int i = 0; i < count; ++i) b.push_back(first * std::ldexp(1.0, i));
  return b;
}

// 10 µs doubling to ~21 s: the whole range from a 1-row CPU launch to a drain.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto* const buckets =
      new prometheus::Histogram::BucketBoundaries(Doubling(10e-6, 22));
  return *buckets;
}

// 1, 2, 4, ... 65536: rows or requests per launch.
const prometheus::Histogram::BucketBoundaries& CountBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries(Doubling(1.0, 17));
  return *buckets;
}

// 1 GB/s doubling to ~8 TB/s: a CPU core up to past an H200's HBM (4.8 TB/s by its datasheet).
const prometheus::Histogram::BucketBoundaries& BandwidthBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries(Doubling(1e9, 14));
  return *buckets;
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

}  // namespace

const char* StatusCodeName(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return "OK";
    case absl::StatusCode::kCancelled:
      return "CANCELLED";
    case absl::StatusCode::kUnknown:
      return "UNKNOWN";
    case absl::StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case absl::StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case absl::StatusCode::kNotFound:
      return "NOT_FOUND";
    case absl::StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case absl::StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case absl::StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case absl::StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case absl::StatusCode::kAborted:
      return "ABORTED";
    case absl::StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case absl::StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case absl::StatusCode::kInternal:
      return "INTERNAL";
    case absl::StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case absl::StatusCode::kDataLoss:
      return "DATA_LOSS";
    case absl::StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

ServerMetrics::ServerMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  auto& r = *registry_;
  requests_total_ =
      &prometheus::BuildCounter()
           .Name("normd_requests_total")
           .Help(
               "RPCs answered (each NormalizeStream message counts once), by method and gRPC code")
           .Register(r);
  request_duration_ = &prometheus::BuildHistogram()
                           .Name("normd_request_duration_seconds")
                           .Help("Time from receipt of a request to its reply, by method")
                           .Register(r);
  queue_wait_ = &prometheus::BuildHistogram()
                     .Name("normd_queue_wait_seconds")
                     .Help("Time an accepted request waited before its launch started")
                     .Register(r)
                     .Add({}, DurationBuckets());
  stage_duration_ = &prometheus::BuildHistogram()
                         .Name("normd_stage_duration_seconds")
                         .Help(
                             "Per-launch time of each stage: pack, h2d, kernel, d2h, submit, wait "
                             "(CUDA) or cpu; reply")
                         .Register(r);
  batch_rows_ =
      &prometheus::BuildHistogram().Name("normd_batch_rows").Help("Rows per launch").Register(r);
  batch_requests_ = &prometheus::BuildHistogram()
                         .Name("normd_batch_requests")
                         .Help("Requests per launch")
                         .Register(r);
  launches_total_ =
      &prometheus::BuildCounter().Name("normd_launches_total").Help("Launches run").Register(r);
  rows_total_ =
      &prometheus::BuildCounter().Name("normd_rows_total").Help("Rows normalized").Register(r);
  auto& by_transport =
      prometheus::BuildCounter()
          .Name("normd_requests_by_transport_total")
          .Help(
              "Normalize requests and stream messages answered, by how their tensors travelled: "
              "bytes (in the messages), system or cuda (a tensor in such a shared-memory region)")
          .Register(r);
  for (TensorMemory memory :
       {TensorMemory::kNormd, TensorMemory::kSharedHost, TensorMemory::kDevice}) {
    by_transport_[static_cast<size_t>(memory)] =
        &by_transport.Add({{"transport", TransportName(memory)}});
  }
  auto& bytes =
      prometheus::BuildCounter()
          .Name("normd_bytes_total")
          .Help(
              "Tensor payload bytes of successful requests: in (input, residual), out (output, "
              "residual_out); bandwidth is its rate")
          .Register(r);
  bytes_in_ = &bytes.Add({{"direction", "in"}});
  bytes_out_ = &bytes.Add({{"direction", "out"}});
  kernel_bandwidth_ = &prometheus::BuildHistogram()
                           .Name("normd_kernel_bandwidth_bytes_per_second")
                           .Help("Bytes each launch's kernel moved divided by its kernel time")
                           .Register(r);
  device_copy_bandwidth_ =
      &prometheus::BuildGauge()
           .Name("normd_device_copy_bandwidth_bytes_per_second")
           .Help("Device-to-device copy bandwidth measured at start-up: the ceiling")
           .Register(r);
  host_link_bandwidth_ =
      &prometheus::BuildGauge()
           .Name("normd_host_link_bandwidth_bytes_per_second")
           .Help("Pinned host-device copy bandwidth (direction h2d or d2h) measured at start-up")
           .Register(r);
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("normd_queue_depth")
                      .Help("Accepted requests waiting for a launch")
                      .Register(r)
                      .Add({});
  inflight_requests_ = &prometheus::BuildGauge()
                            .Name("normd_inflight_requests")
                            .Help("Accepted requests not yet answered")
                            .Register(r)
                            .Add({});
  pinned_bytes_ = &prometheus::BuildGauge()
                       .Name("normd_pinned_bytes")
                       .Help("Pinned host staging bytes")
                       .Register(r);
  device_bytes_ =
      &prometheus::BuildGauge().Name("normd_device_bytes").Help("Device buffer bytes").Register(r);
  weights_registered_ = &prometheus::BuildGauge()
                             .Name("normd_weights_registered")
                             .Help("Weights held by the registry")
                             .Register(r)
                             .Add({});
  workers_ = &prometheus::BuildGauge().Name("normd_workers").Help("Workers by state").Register(r);
}

void ServerMetrics::SetBuildInfo(const std::string& version, const std::string& backend,
                                 bool built_with_cuda) {
  prometheus::BuildGauge()
      .Name("normd_build_info")
      .Help("Always 1; the labels say what is running")
      .Register(*registry_)
      .Add({{"version", version}, {"backend", backend}, {"cuda", built_with_cuda ? "yes" : "no"}})
      .Set(1);
}

void ServerMetrics::RequestDone(absl::string_view method, const absl::Status& status,
                                absl::Duration duration) {
  const auto code = static_cast<size_t>(status.code());
  prometheus::Counter* counter;
  prometheus::Histogram* histogram;
  {
    normd::MutexLock lock(&series_mu_);
    auto it = methods_.find(method);
    if (it == methods_.end()) {
      it = methods_.emplace(std::string(method), MethodSeries{}).first;
      it->second.duration = &request_duration_->Add({{"method", it->first}}, DurationBuckets());
    }
    MethodSeries& series = it->second;
    const size_t slot =
        code < series.by_code.size() ? code : static_cast<size_t>(absl::StatusCode::kUnknown);
    if (series.by_code[slot] == nullptr) {
      series.by_code[slot] = &requests_total_->Add(
          {{"method", it->first}, {"code", StatusCodeName(static_cast<absl::StatusCode>(slot))}});
    }
    counter = series.by_code[slot];
    histogram = series.duration;
  }
  counter->Increment();
  histogram->Observe(Seconds(duration));
}

void ServerMetrics::Payload(int64_t bytes_in, int64_t bytes_out) {
  bytes_in_->Increment(static_cast<double>(bytes_in));
  bytes_out_->Increment(static_cast<double>(bytes_out));
}

void ServerMetrics::QueueWait(absl::Duration wait) { queue_wait_->Observe(Seconds(wait)); }

namespace {
// The stage label of each DeviceSeries::stages entry.
constexpr const char* kStageNames[] = {"pack", "h2d",    "kernel", "d2h",
                                       "cpu",  "submit", "wait",   "reply"};
constexpr size_t kReplyStage = 7;
}  // namespace

ServerMetrics::DeviceSeries& ServerMetrics::SeriesOf(absl::string_view device) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    it = devices_.emplace(std::string(device), DeviceSeries{}).first;
    const prometheus::Labels labels{{"device", it->first}};
    DeviceSeries& d = it->second;
    d.name = &it->first;
    d.batch_rows = &batch_rows_->Add(labels, CountBuckets());
    d.batch_requests = &batch_requests_->Add(labels, CountBuckets());
    d.launches = &launches_total_->Add(labels);
    d.rows = &rows_total_->Add(labels);
  }
  return it->second;
}

void ServerMetrics::ObserveStage(DeviceSeries& d, size_t stage, absl::Duration duration) {
  if (duration <= absl::ZeroDuration()) return;
  if (d.stages[stage] == nullptr) {
    d.stages[stage] = &stage_duration_->Add({{"stage", kStageNames[stage]}, {"device", *d.name}},
                                            DurationBuckets());
  }
  d.stages[stage]->Observe(Seconds(duration));
}

void ServerMetrics::Launch(absl::string_view device, int64_t rows, int64_t requests,
                           const StageTimes& stages, int64_t kernel_bytes) {
  const absl::Duration durations[] = {stages.pack, stages.h2d,    stages.kernel, stages.d2h,
                                      stages.cpu,  stages.submit, stages.wait};
  static_assert(std::size(durations) == kReplyStage,
                "StageTimes' stages come first in kStageNames");
  // The kernel's achieved bandwidth: on the CPU backend the whole computation is the "kernel".
  const absl::Duration kernel_time =
      stages.kernel > absl::ZeroDuration() ? stages.kernel : stages.cpu;
  const bool has_bandwidth = kernel_time > absl::ZeroDuration() && kernel_bytes > 0;
  normd::MutexLock lock(&series_mu_);  // observations are atomic; the lock is for the lookups only
  DeviceSeries& d = SeriesOf(device);
  d.batch_rows->Observe(static_cast<double>(rows));
  d.batch_requests->Observe(static_cast<double>(requests));
  d.launches->Increment();
  d.rows->Increment(static_cast<double>(rows));
  for (size_t i = 0; i < std::size(durations); ++i) ObserveStage(d, i, durations[i]);
  if (has_bandwidth) {
    if (d.kernel_bandwidth == nullptr) {
      d.kernel_bandwidth = &kernel_bandwidth_->Add({{"device", *d.name}}, BandwidthBuckets());
    }
    d.kernel_bandwidth->Observe(static_cast<double>(kernel_bytes) / Seconds(kernel_time));
  }
}

void ServerMetrics::LaunchReplied(absl::string_view device, absl::Duration duration) {
  normd::MutexLock lock(&series_mu_);
  ObserveStage(SeriesOf(device), kReplyStage, duration);
}

void ServerMetrics::SetHostLinkBandwidth(const std::string& device, const std::string& direction,
                                         double bytes_per_second) {
  host_link_bandwidth_->Add({{"device", device}, {"direction", direction}}).Set(bytes_per_second);
}

void ServerMetrics::SetDeviceCopyBandwidth(const std::string& device, double bytes_per_second) {
  device_copy_bandwidth_->Add({{"device", device}}).Set(bytes_per_second);
}

}  // namespace normd
