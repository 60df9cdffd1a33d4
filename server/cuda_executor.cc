#include "server/cuda_executor.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "server/log.h"

namespace normd {
namespace {

// Staging starts at this size per slot and doubles (at least) when a larger launch comes.
constexpr int64_t kInitialBufferBytes = int64_t{4} << 20;

absl::Duration EventGap(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) return absl::ZeroDuration();
  return absl::Microseconds(static_cast<int64_t>(ms * 1000.0f));
}

}  // namespace

CudaExecutor::CudaExecutor(int device, int worker_index, int64_t weight_cache_bytes, ServerMetrics* metrics)
    : device_(device), worker_index_(worker_index), weight_cache_bytes_(weight_cache_bytes), metrics_(metrics) {}

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::Create(int device, int worker_index,
                                                                   int64_t weight_cache_bytes,
                                                                   ServerMetrics* metrics) {
  std::unique_ptr<CudaExecutor> executor(new CudaExecutor(device, worker_index, weight_cache_bytes, metrics));
  if (absl::Status s = executor->Init(); !s.ok()) return s;
  return executor;
}

std::string CudaExecutor::name() const { return absl::StrCat("cuda:", device_, "/", worker_index_); }

absl::Status CudaExecutor::Init() {
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return CudaFailure("cudaSetDevice", e);
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); e != cudaSuccess) {
    return CudaFailure("cudaStreamCreate", e);
  }
  for (Slot& slot : slots_) {
    for (cudaEvent_t& event : slot.events) {
      if (cudaError_t e = cudaEventCreate(&event); e != cudaSuccess) return CudaFailure("cudaEventCreate", e);
    }
    if (absl::Status s = Grow(slot.in, kInitialBufferBytes); !s.ok()) return s;
    if (absl::Status s = Grow(slot.out, kInitialBufferBytes); !s.ok()) return s;
  }
  return absl::OkStatus();
}

CudaExecutor::~CudaExecutor() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (Slot& slot : slots_) {
    for (Buffer* b : {&slot.in, &slot.out}) {
      if (b->host != nullptr) cudaFreeHost(b->host);
      if (b->dev != nullptr) cudaFree(b->dev);
    }
    for (cudaEvent_t event : slot.events) {
      if (event != nullptr) cudaEventDestroy(event);
    }
  }
  for (const CachedWeight& w : weights_) cudaFree(w.dev);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status CudaExecutor::CudaFailure(const char* what, cudaError_t error) {
  cudaGetLastError();  // clear a non-sticky error so that the next launch can run
  // A sticky error (an illegal address, a device fault) poisons the context: every later call fails
  // with it. This worker can then do nothing useful; the scheduler stops sending it work.
  if (stream_ != nullptr && cudaStreamSynchronize(stream_) != cudaSuccess) {
    cudaGetLastError();
    if (healthy_) Log(LogLevel::kError, name(), ": unrecoverable CUDA error; taking this worker out of rotation");
    healthy_ = false;
  }
  return absl::InternalError(absl::StrCat(name(), ": ", what, " failed: ", cudaGetErrorString(error)));
}

absl::Status CudaExecutor::Grow(Buffer& buffer, int64_t bytes) {
  if (bytes <= buffer.capacity) return absl::OkStatus();
  const int64_t capacity = std::max(bytes, 2 * buffer.capacity);
  // The slot being grown is idle (its last launch finished), but the other slot may still be running:
  // cudaFree waits for the device, which is rare (only when a larger launch than ever comes) and safe.
  if (buffer.host != nullptr) cudaFreeHost(buffer.host);
  if (buffer.dev != nullptr) cudaFree(buffer.dev);
  const int64_t old_capacity = buffer.capacity;
  buffer = Buffer{};
  if (metrics_ != nullptr) {
    metrics_->pinned_bytes(device()).Decrement(static_cast<double>(old_capacity));
    metrics_->device_bytes(device()).Decrement(static_cast<double>(old_capacity));
  }
  if (cudaError_t e = cudaHostAlloc(&buffer.host, static_cast<size_t>(capacity), cudaHostAllocDefault);
      e != cudaSuccess) {
    return CudaFailure("cudaHostAlloc", e);
  }
  if (cudaError_t e = cudaMalloc(&buffer.dev, static_cast<size_t>(capacity)); e != cudaSuccess) {
    cudaFreeHost(buffer.host);
    buffer.host = nullptr;
    return CudaFailure("cudaMalloc", e);
  }
  buffer.capacity = capacity;
  if (metrics_ != nullptr) {
    metrics_->pinned_bytes(device()).Increment(static_cast<double>(capacity));
    metrics_->device_bytes(device()).Increment(static_cast<double>(capacity));
  }
  return absl::OkStatus();
}

void CudaExecutor::TrimWeightCache() {
  if (weight_bytes_ <= weight_cache_bytes_) return;
  // Launches already enqueued may still read a weight about to be dropped: wait for them first.
  cudaStreamSynchronize(stream_);
  while (weight_bytes_ > weight_cache_bytes_ && !weights_.empty()) {
    cudaFree(weights_.back().dev);
    weight_bytes_ -= weights_.back().bytes;
    if (metrics_ != nullptr) metrics_->device_bytes(device()).Decrement(static_cast<double>(weights_.back().bytes));
    weight_by_id_.erase(weights_.back().id);
    weights_.pop_back();
  }
}

absl::StatusOr<const void*> CudaExecutor::DeviceWeight(const RegisteredWeight& weight) {
  if (auto it = weight_by_id_.find(weight.id); it != weight_by_id_.end()) {
    weights_.splice(weights_.begin(), weights_, it->second);
    return static_cast<const void*>(it->second->dev);
  }
  const auto bytes = static_cast<int64_t>(weight.bytes.size());
  CachedWeight cached{weight.id, nullptr, bytes};
  if (cudaError_t e = cudaMalloc(&cached.dev, static_cast<size_t>(bytes)); e != cudaSuccess) {
    return CudaFailure("cudaMalloc (weight)", e);
  }
  // From pageable memory: the call returns once the bytes are staged, so the registry may drop them.
  if (cudaError_t e = cudaMemcpyAsync(cached.dev, weight.bytes.data(), static_cast<size_t>(bytes),
                                      cudaMemcpyHostToDevice, stream_);
      e != cudaSuccess) {
    cudaFree(cached.dev);
    return CudaFailure("cudaMemcpyAsync (weight)", e);
  }
  weight_bytes_ += bytes;
  if (metrics_ != nullptr) metrics_->device_bytes(device()).Increment(static_cast<double>(bytes));
  weights_.push_front(cached);
  weight_by_id_[weight.id] = weights_.begin();
  return static_cast<const void*>(cached.dev);
}

absl::Status CudaExecutor::Start(const Launch& launch, StageTimes& stages) {
  if (!healthy_) return absl::InternalError(absl::StrCat(name(), " is out of rotation after a CUDA error"));
  // The current device is per thread: the worker's thread must select this executor's GPU before it
  // launches on its stream or allocates (a kernel launched on another device's stream fails).
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return CudaFailure("cudaSetDevice", e);
  const absl::Time pack_start = absl::Now();
  // Trim before this launch takes its weights, so that none of them can be dropped under it (the
  // cache may overshoot its bound by one launch's weights until the next launch).
  TrimWeightCache();
  Slot& slot = slots_[static_cast<size_t>(next_slot_)];
  const size_t n = launch.items.size();
  slot.layout = LayOutLaunch(launch);
  const int64_t in_bytes = slot.layout.up_bytes;
  const int64_t out_bytes = slot.layout.down_bytes;
  if (absl::Status s = Grow(slot.in, in_bytes); !s.ok()) return s;
  if (absl::Status s = Grow(slot.out, out_bytes); !s.ok()) return s;
  // Pack: each request's bytes are copied into pinned memory once; the table holds device pointers.
  if (absl::Status s = PackLaunch(launch, slot.layout, slot.in.host, slot.in.dev, slot.out.dev,
                                  [this](const RegisteredWeight& w) { return DeviceWeight(w); });
      !s.ok()) {
    return s;
  }
  const auto* table = static_cast<const RmsNormSegment*>(slot.in.host);
  stages.pack += absl::Now() - pack_start;

  // Up, compute, down: all on this worker's stream, timed by events.
  auto fail = [&](const char* what, cudaError_t e) {
    cudaStreamSynchronize(stream_);  // the slot's buffers may still be in use by what was enqueued
    return CudaFailure(what, e);
  };
  cudaEventRecord(slot.events[0], stream_);
  if (cudaError_t e = cudaMemcpyAsync(slot.in.dev, slot.in.host, static_cast<size_t>(in_bytes),
                                      cudaMemcpyHostToDevice, stream_);
      e != cudaSuccess) {
    return fail("cudaMemcpyAsync (host to device)", e);
  }
  cudaEventRecord(slot.events[1], stream_);
  cudaError_t kernel_error;
  if (n == 1) {
    // One request: the segment goes by value, so the kernel need not read a table first.
    RmsNormSegment seg = table[0];
    kernel_error = cuda::RmsNorm(launch.dtype, launch.hidden, seg, stream_);
  } else {
    RmsNormLaunch device_launch;
    device_launch.dtype = launch.dtype;
    device_launch.hidden = launch.hidden;
    device_launch.total_rows = launch.rows;
    device_launch.segments = static_cast<const RmsNormSegment*>(slot.in.dev);
    device_launch.num_segments = static_cast<int32_t>(n);
    kernel_error = cuda::RmsNormBatched(device_launch, stream_);
  }
  if (kernel_error != cudaSuccess) return fail("RMSNorm kernel launch", kernel_error);
  cudaEventRecord(slot.events[2], stream_);
  if (cudaError_t e = cudaMemcpyAsync(slot.out.host, slot.out.dev, static_cast<size_t>(out_bytes),
                                      cudaMemcpyDeviceToHost, stream_);
      e != cudaSuccess) {
    return fail("cudaMemcpyAsync (device to host)", e);
  }
  cudaEventRecord(slot.events[3], stream_);
  next_slot_ = (next_slot_ + 1) % kSlots;
  return absl::OkStatus();
}

absl::Status CudaExecutor::Finish(const Launch& launch, StageTimes& stages) {
  Slot& slot = slots_[static_cast<size_t>(oldest_slot_)];
  oldest_slot_ = (oldest_slot_ + 1) % kSlots;
  cudaSetDevice(device_);
  if (cudaError_t e = cudaEventSynchronize(slot.events[3]); e != cudaSuccess) {
    return CudaFailure("the launch", e);
  }
  stages.h2d += EventGap(slot.events[0], slot.events[1]);
  stages.kernel += EventGap(slot.events[1], slot.events[2]);
  stages.d2h += EventGap(slot.events[2], slot.events[3]);

  // Unpack: each request's bytes are copied out of pinned memory once, from where Start laid them.
  const absl::Time unpack_start = absl::Now();
  UnpackLaunch(launch, slot.layout, slot.out.host);
  // Host staging copies, both ways, count as the pack stage.
  stages.pack += absl::Now() - unpack_start;
  return absl::OkStatus();
}

}  // namespace normd
