#include "server/executors/cuda_executor.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "server/observability/log.h"

namespace normd {
namespace {

// Staging starts at this size per slot and doubles (at least) when a larger launch comes.
constexpr int64_t kInitialBufferBytes = int64_t{4} << 20;

// Launches sending at least this many bytes up are pipelined in chunks of at least kMinChunkBytes.
// At 55 GB/s a 1 MiB chunk takes ~19 us to copy, well above the few microseconds a chunk's extra
// copy calls, kernel launch and event waits cost.
constexpr int64_t kPipelineMinBytes = int64_t{4} << 20;
constexpr int64_t kMinChunkBytes = int64_t{1} << 20;

// A launch's system-region tensors are staged on the device only up to this many bytes each way
// (per slot, so a worker holds at most four times this); larger ones are reached through the
// mapping, which needs no device memory.
constexpr int64_t kMaxRegionStagingBytes = int64_t{512} << 20;

char* Offset(void* base, int64_t bytes) { return static_cast<char*>(base) + bytes; }

// Copies `bytes` at `at` within each of a request's staging regions (its rows, and its residual's
// when the offset is not -1) from one buffer to the other: one piece of a pipelined upload or
// download.
cudaError_t CopyRegionPieces(void* to, const void* from,
                             std::initializer_list<int64_t> region_offsets, int64_t at,
                             int64_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  for (const int64_t region : region_offsets) {
    if (region < 0) continue;  // no residual
    if (cudaError_t e =
            cudaMemcpyAsync(Offset(to, region + at), static_cast<const char*>(from) + region + at,
                            static_cast<size_t>(bytes), kind, stream);
        e != cudaSuccess) {
      return e;
    }
  }
  return cudaSuccess;
}

absl::Duration EventGap(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) return absl::ZeroDuration();
  return absl::Microseconds(static_cast<int64_t>(ms * 1000.0f));
}

// One kernel launch over a whole packed launch on `stream`. One request: its segment goes by value
// (from the host copy of the table), so the kernel need not read a table first; several: the kernel
// reads the table at `device_table`, and the host copy lets the launcher pick the kernel a single
// tensor of the launch's shape gets (without it, it must run a build that checks every segment).
cudaError_t LaunchWholeKernel(const Launch& launch, const void* host_table,
                              const void* device_table, cudaStream_t stream) {
  if (launch.items.size() == 1) {
    return cuda::RmsNorm(launch.dtype, launch.hidden,
                         *static_cast<const RmsNormSegment*>(host_table), stream);
  }
  RmsNormLaunch device_launch;
  device_launch.dtype = launch.dtype;
  device_launch.hidden = launch.hidden;
  device_launch.total_rows = launch.rows;
  device_launch.segments = static_cast<const RmsNormSegment*>(device_table);
  device_launch.num_segments = static_cast<int32_t>(launch.items.size());
  return cuda::RmsNormBatched(device_launch, static_cast<const RmsNormSegment*>(host_table),
                              stream);
}

}  // namespace

CudaExecutor::CudaExecutor(int device, int worker_index, const CudaExecutorOptions& options,
                           ServerMetrics* metrics)
    : device_(device),
      worker_index_(worker_index),
      weight_cache_bytes_(options.weight_cache_bytes),
      zero_copy_max_bytes_(options.zero_copy_max_bytes),
      max_staging_buffer_bytes_(options.max_staging_buffer_bytes),
      metrics_(metrics),
      copies_(options.copy_threads, options.copy_spin, options.parallel_copy_min_bytes) {}

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::Create(
    int device, int worker_index, const CudaExecutorOptions& options, ServerMetrics* metrics) {
  std::unique_ptr<CudaExecutor> executor(new CudaExecutor(device, worker_index, options, metrics));
  if (absl::Status s = executor->Init(); !s.ok()) return s;
  return executor;
}

std::string CudaExecutor::name() const {
  return absl::StrCat("cuda:", device_, "/", worker_index_);
}

absl::Status CudaExecutor::Init() {
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess)
    return CudaFailure("cudaSetDevice", e);
  for (cudaStream_t* stream : {&stream_, &compute_stream_, &download_stream_}) {
    if (cudaError_t e = cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
        e != cudaSuccess) {
      return CudaFailure("cudaStreamCreate", e);
    }
  }
  for (Slot& slot : slots_) {
    for (cudaEvent_t& event : slot.events) {
      if (cudaError_t e = cudaEventCreate(&event); e != cudaSuccess)
        return CudaFailure("cudaEventCreate", e);
    }
    if (cudaError_t e = cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming);
        e != cudaSuccess) {
      return CudaFailure("cudaEventCreate", e);
    }
    for (auto* chunk_events : {&slot.uploaded, &slot.computed}) {
      for (cudaEvent_t& event : *chunk_events) {
        if (cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
            e != cudaSuccess) {
          return CudaFailure("cudaEventCreate", e);
        }
      }
    }
    if (absl::Status s = Grow(slot.in, kInitialBufferBytes); !s.ok()) return s;
    if (absl::Status s = Grow(slot.out, kInitialBufferBytes); !s.ok()) return s;
  }
  return absl::OkStatus();
}

CudaExecutor::~CudaExecutor() {
  cudaSetDevice(device_);
  SynchronizeStreams();
  for (Slot& slot : slots_) {
    for (Buffer* b : {&slot.in, &slot.out}) {
      if (b->host != nullptr) cudaFreeHost(b->host);
      if (b->dev != nullptr) cudaFree(b->dev);
    }
    for (DeviceBuffer* b : {&slot.region_in, &slot.region_out}) {
      if (b->dev != nullptr) cudaFree(b->dev);
    }
    for (const auto* events : {&slot.uploaded, &slot.computed}) {
      for (cudaEvent_t event : *events) {
        if (event != nullptr) cudaEventDestroy(event);
      }
    }
    for (cudaEvent_t event : slot.events) {
      if (event != nullptr) cudaEventDestroy(event);
    }
    if (slot.done != nullptr) cudaEventDestroy(slot.done);
  }
  weights_.EvictTo(0, [](void*& dev) { cudaFree(dev); });
  for (cudaStream_t stream : {stream_, compute_stream_, download_stream_}) {
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
}

void CudaExecutor::SynchronizeStreams() {
  for (cudaStream_t stream : {stream_, compute_stream_, download_stream_}) {
    if (stream != nullptr) cudaStreamSynchronize(stream);
  }
}

absl::Status CudaExecutor::CudaFailure(const char* what, cudaError_t error) {
  cudaGetLastError();  // clear a non-sticky error so that the next launch can run
  // A sticky error (an illegal address, a device fault) poisons the context: every later call fails
  // with it. This worker can then do nothing useful; the scheduler stops sending it work.
  if (stream_ != nullptr && cudaDeviceSynchronize() != cudaSuccess) {
    cudaGetLastError();
    if (healthy_)
      Log(LogLevel::kError, name(),
          ": unrecoverable CUDA error; taking this worker out of rotation");
    healthy_ = false;
  }
  return absl::InternalError(
      absl::StrCat(name(), ": ", what, " failed: ", cudaGetErrorString(error)));
}

absl::Status CudaExecutor::Grow(Buffer& buffer, int64_t bytes) {
  if (bytes <= buffer.capacity) return absl::OkStatus();
  const int64_t doubled = max_staging_buffer_bytes_ > 0
                              ? std::min(2 * buffer.capacity, max_staging_buffer_bytes_)
                              : 2 * buffer.capacity;
  const int64_t capacity = std::max(bytes, doubled);
  // The slot being grown is idle (its last launch finished), but the other slot may still be
  // running: cudaFree waits for the device, which is rare (only when a larger launch than ever
  // comes) and safe.
  if (buffer.host != nullptr) cudaFreeHost(buffer.host);
  if (buffer.dev != nullptr) cudaFree(buffer.dev);
  const int64_t old_capacity = buffer.capacity;
  buffer = Buffer{};
  if (metrics_ != nullptr) {
    metrics_->pinned_bytes(device()).Decrement(static_cast<double>(old_capacity));
    metrics_->device_bytes(device()).Decrement(static_cast<double>(old_capacity));
  }
  // Mapped, so that small launches can be computed straight from and into it (zero copy).
  if (cudaError_t e =
          cudaHostAlloc(&buffer.host, static_cast<size_t>(capacity), cudaHostAllocMapped);
      e != cudaSuccess) {
    return CudaFailure("cudaHostAlloc", e);
  }
  if (cudaError_t e = cudaHostGetDevicePointer(&buffer.host_on_device, buffer.host, 0);
      e != cudaSuccess) {
    cudaFreeHost(buffer.host);
    buffer.host = nullptr;
    return CudaFailure("cudaHostGetDevicePointer", e);
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

bool CudaExecutor::GrowDevice(DeviceBuffer& buffer, int64_t bytes) {
  if (bytes <= buffer.capacity) return true;
  const int64_t capacity = std::max(bytes, std::min(2 * buffer.capacity, kMaxRegionStagingBytes));
  // As in Grow: this slot is idle; cudaFree waits for the other slot's launch, rarely.
  if (buffer.dev != nullptr) cudaFree(buffer.dev);
  if (metrics_ != nullptr) {
    metrics_->device_bytes(device()).Decrement(static_cast<double>(buffer.capacity));
  }
  buffer = DeviceBuffer{};
  if (cudaMalloc(&buffer.dev, static_cast<size_t>(capacity)) != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky: the launch goes through the mapping
    buffer.dev = nullptr;
    return false;
  }
  buffer.capacity = capacity;
  if (metrics_ != nullptr) {
    metrics_->device_bytes(device()).Increment(static_cast<double>(capacity));
  }
  return true;
}

void CudaExecutor::PointSegmentsAtRegionStaging(Slot& slot, const Launch& launch) {
  auto* table = static_cast<RmsNormSegment*>(slot.in.host);
  const RegionStagingLayout& layout = slot.region_layout;
  for (size_t i = 0; i < launch.items.size(); ++i) {
    RmsNormSegment& seg = table[i];
    if (layout.input_at[i] >= 0) seg.input = Offset(slot.region_in.dev, layout.input_at[i]);
    if (layout.residual_at[i] >= 0)
      seg.residual = Offset(slot.region_in.dev, layout.residual_at[i]);
    if (layout.output_at[i] >= 0) seg.output = Offset(slot.region_out.dev, layout.output_at[i]);
    if (layout.residual_out_at[i] >= 0) {
      seg.residual_out = Offset(slot.region_out.dev, layout.residual_out_at[i]);
    }
  }
}

cudaError_t CudaExecutor::CopyRegionRows(const Slot& slot, const Launch& launch, size_t i,
                                         int64_t at, int64_t bytes, bool up,
                                         cudaStream_t stream) const {
  const RegionStagingLayout& layout = slot.region_layout;
  const WorkItem& item = *launch.items[i];
  // The region addresses are the request's own (the packer pointed the table at them first).
  if (up) {
    for (const auto& [dev_at, from] :
         {std::pair{layout.input_at[i], item.request.input.contiguous()},
          std::pair{layout.residual_at[i], item.request.residual.contiguous()}}) {
      if (dev_at < 0) continue;
      if (cudaError_t e = cudaMemcpyAsync(
              Offset(slot.region_in.dev, dev_at + at), static_cast<const char*>(from) + at,
              static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream);
          e != cudaSuccess) {
        return e;
      }
    }
    return cudaSuccess;
  }
  for (const auto& [dev_at, to] : {std::pair{layout.output_at[i], item.output},
                                   std::pair{layout.residual_out_at[i], item.residual_out}}) {
    if (dev_at < 0) continue;
    if (cudaError_t e = cudaMemcpyAsync(Offset(to, at),
                                        static_cast<const char*>(slot.region_out.dev) + dev_at + at,
                                        static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream);
        e != cudaSuccess) {
      return e;
    }
  }
  return cudaSuccess;
}

void CudaExecutor::TrimWeightCache() {
  if (weights_.bytes() <= weight_cache_bytes_) return;
  // Launches already enqueued may still read a weight about to be dropped: wait for them first.
  SynchronizeStreams();
  const int64_t before = weights_.bytes();
  weights_.EvictTo(weight_cache_bytes_, [](void*& dev) { cudaFree(dev); });
  if (metrics_ != nullptr) {
    metrics_->device_bytes(device()).Decrement(static_cast<double>(before - weights_.bytes()));
  }
}

absl::StatusOr<const void*> CudaExecutor::DeviceWeight(const RegisteredWeight& weight) {
  if (void** cached = weights_.Find(weight.id); cached != nullptr) {
    return static_cast<const void*>(*cached);
  }
  const auto bytes = static_cast<int64_t>(weight.bytes.size());
  void* dev = nullptr;
  if (cudaError_t e = cudaMalloc(&dev, static_cast<size_t>(bytes)); e != cudaSuccess) {
    return CudaFailure("cudaMalloc (weight)", e);
  }
  // From pageable memory: the call returns once the bytes are staged, so the registry may drop
  // them.
  if (cudaError_t e = cudaMemcpyAsync(dev, weight.bytes.data(), static_cast<size_t>(bytes),
                                      cudaMemcpyHostToDevice, stream_);
      e != cudaSuccess) {
    cudaFree(dev);
    return CudaFailure("cudaMemcpyAsync (weight)", e);
  }
  if (metrics_ != nullptr) metrics_->device_bytes(device()).Increment(static_cast<double>(bytes));
  return static_cast<const void*>(weights_.Insert(weight.id, dev, bytes));
}

absl::Status CudaExecutor::Start(const Launch& launch, StageTimes& stages) {
  if (!healthy_)
    return absl::InternalError(absl::StrCat(name(), " is out of rotation after a CUDA error"));
  // The current device is per thread: the worker's thread must select this executor's GPU before it
  // launches on its stream or allocates (a kernel launched on another device's stream fails).
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess)
    return CudaFailure("cudaSetDevice", e);
  const absl::Time pack_start = absl::Now();
  // Trim before this launch takes its weights, so that none of them can be dropped under it (the
  // cache may overshoot its bound by one launch's weights until the next launch).
  TrimWeightCache();
  Slot& slot = slots_[static_cast<size_t>(next_slot_)];
  slot.layout = LayOutLaunch(launch);
  const int64_t in_bytes = slot.layout.up_bytes;
  const int64_t out_bytes = slot.layout.down_bytes;
  if (absl::Status s = Grow(slot.in, in_bytes); !s.ok()) return s;
  if (absl::Status s = Grow(slot.out, out_bytes); !s.ok()) return s;
  // A large launch's system-region tensors go through the copy engines (see the header), when the
  // device has room for them; otherwise the kernel reaches them through the mapping.
  // One-row launches never are, so their layout is not worked out.
  slot.region_layout = launch.rows > 1 ? LayOutRegionStaging(launch) : RegionStagingLayout{};
  const int64_t region_up = slot.region_layout.up_bytes;
  const int64_t region_down = slot.region_layout.down_bytes;
  slot.stage_regions =
      region_up + region_down >= kPipelineMinBytes && region_up <= kMaxRegionStagingBytes &&
      region_down <= kMaxRegionStagingBytes && GrowDevice(slot.region_in, region_up) &&
      GrowDevice(slot.region_out, region_down);
  // Pack: each request's bytes are copied into pinned memory once; the table holds the addresses
  // the kernel will read and write: the device buffers, or the pinned buffers themselves (zero
  // copy). A zero-copy kernel reads the table and inline weights through the mapping once per block
  // of rows, which is cheap for a few rows; a launch of many rows whose tensors are in regions (its
  // staging small all the same) copies them up once instead.
  const int64_t rows_bytes =
      launch.rows * launch.hidden * static_cast<int64_t>(ItemSize(launch.dtype));
  const bool zero_copy = !slot.stage_regions && in_bytes + out_bytes <= zero_copy_max_bytes_ &&
                         2 * rows_bytes <= zero_copy_max_bytes_;
  if (absl::Status s = PackLaunch(
          launch, slot.layout, slot.in.host, zero_copy ? slot.in.host_on_device : slot.in.dev,
          zero_copy ? slot.out.host_on_device : slot.out.dev,
          [this](const RegisteredWeight& w) { return DeviceWeight(w); }, &copies_);
      !s.ok()) {
    return s;
  }
  if (slot.stage_regions) PointSegmentsAtRegionStaging(slot, launch);
  stages.pack += absl::Now() - pack_start;

  slot.zero_copy = zero_copy;
  const absl::Time submit_start = absl::Now();
  slot.submitted = submit_start;
  const cudaError_t e = zero_copy ? EnqueueZeroCopy(slot, launch)
                        : slot.stage_regions || (in_bytes >= kPipelineMinBytes && launch.rows > 1)
                            ? EnqueuePipelined(slot, launch)
                            : EnqueueWhole(slot, launch);
  stages.submit += absl::Now() - submit_start;
  if (e != cudaSuccess) {
    SynchronizeStreams();  // the slot's buffers may still be in use by what was enqueued
    return CudaFailure("enqueueing the launch (copies and kernel)", e);
  }
  next_slot_ = (next_slot_ + 1) % kSlots;
  return absl::OkStatus();
}

// A table of several segments is read through the pinned buffer's mapping too, like the rows. No
// timing events, only one to wait on: a lone small request waits for every call made on its way,
// and timing events are a measurable share of its latency; its kernel stage is timed by the host
// instead (Finish).
cudaError_t CudaExecutor::EnqueueZeroCopy(Slot& slot, const Launch& launch) {
  if (cudaError_t e = LaunchWholeKernel(launch, slot.in.host, slot.in.host_on_device, stream_);
      e != cudaSuccess) {
    return e;
  }
  // Kernel completion makes its writes to host memory visible to the host thread that waits for it.
  return cudaEventRecord(slot.done, stream_);
}

cudaError_t CudaExecutor::EnqueueWhole(Slot& slot, const Launch& launch) {
  const StagingLayout& layout = slot.layout;
  cudaEventRecord(slot.events[0], stream_);
  cudaError_t e = cudaMemcpyAsync(slot.in.dev, slot.in.host, static_cast<size_t>(layout.up_bytes),
                                  cudaMemcpyHostToDevice, stream_);
  if (e != cudaSuccess) return e;
  cudaEventRecord(slot.events[1], stream_);
  e = LaunchWholeKernel(launch, slot.in.host, slot.in.dev, stream_);
  if (e != cudaSuccess) return e;
  cudaEventRecord(slot.events[2], stream_);
  if (layout.down_bytes > 0) {  // none when every output goes into a region
    e = cudaMemcpyAsync(slot.out.host, slot.out.dev, static_cast<size_t>(layout.down_bytes),
                        cudaMemcpyDeviceToHost, stream_);
    if (e != cudaSuccess) return e;
  }
  return cudaEventRecord(slot.events[3], stream_);
}

cudaError_t CudaExecutor::EnqueuePipelined(Slot& slot, const Launch& launch) {
  const StagingLayout& layout = slot.layout;
  const auto* table = static_cast<const RmsNormSegment*>(slot.in.host);
  const int64_t row_bytes = launch.hidden * static_cast<int64_t>(ItemSize(launch.dtype));
  const int64_t data_bytes =
      layout.up_bytes - layout.rows_at + (slot.stage_regions ? slot.region_layout.up_bytes : 0);
  const auto chunks =
      static_cast<int>(std::clamp<int64_t>(data_bytes / kMinChunkBytes, 1, kMaxChunks));
  const int64_t rows_per_chunk = (launch.rows + chunks - 1) / chunks;

  cudaEventRecord(slot.events[0], stream_);
  // The table and inline weights first. The kernels take their segments by value (one call per
  // request in a chunk), so the table itself goes unused; it is small.
  cudaError_t e = cudaMemcpyAsync(slot.in.dev, slot.in.host, static_cast<size_t>(layout.rows_at),
                                  cudaMemcpyHostToDevice, stream_);
  if (e != cudaSuccess) return e;
  // Calls `piece(i, first, count)` for each request i with rows in launch rows [begin, end): its
  // rows first .. first + count - 1.
  auto for_each_piece = [&](int64_t begin, int64_t end, auto&& piece) -> cudaError_t {
    for (size_t i = 0; i < launch.items.size(); ++i) {
      const int64_t seg_begin = table[i].first_row, seg_end = seg_begin + table[i].rows;
      const int64_t from = std::max(begin, seg_begin), to = std::min(end, seg_end);
      if (from >= to) continue;
      if (cudaError_t err = piece(i, from - seg_begin, to - from); err != cudaSuccess) return err;
    }
    return cudaSuccess;
  };
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = c * rows_per_chunk, end = std::min(launch.rows, begin + rows_per_chunk);
    if (begin >= end) break;
    e = for_each_piece(begin, end, [&](size_t i, int64_t first, int64_t count) {
      if (slot.stage_regions) {
        if (cudaError_t err = CopyRegionRows(slot, launch, i, first * row_bytes, count * row_bytes,
                                             true, stream_);
            err != cudaSuccess) {
          return err;
        }
      }
      return CopyRegionPieces(slot.in.dev, slot.in.host,
                              {layout.input_at[i], layout.residual_at[i]}, first * row_bytes,
                              count * row_bytes, cudaMemcpyHostToDevice, stream_);
    });
    if (e != cudaSuccess) return e;
    cudaEventRecord(slot.uploaded[static_cast<size_t>(c)], stream_);
    cudaStreamWaitEvent(compute_stream_, slot.uploaded[static_cast<size_t>(c)], 0);
    e = for_each_piece(begin, end, [&](size_t i, int64_t first, int64_t count) {
      RmsNormSegment seg = table[i];
      const int64_t at = first * row_bytes;
      seg.input = static_cast<const char*>(seg.input) + at;
      seg.output = Offset(seg.output, at);
      if (seg.residual != nullptr) {
        seg.residual = static_cast<const char*>(seg.residual) + at;
        seg.residual_out = Offset(seg.residual_out, at);
      }
      seg.first_row = 0;
      seg.rows = count;
      return cuda::RmsNorm(launch.dtype, launch.hidden, seg, compute_stream_);
    });
    if (e != cudaSuccess) return e;
    cudaEventRecord(slot.computed[static_cast<size_t>(c)], compute_stream_);
    cudaStreamWaitEvent(download_stream_, slot.computed[static_cast<size_t>(c)], 0);
    e = for_each_piece(begin, end, [&](size_t i, int64_t first, int64_t count) {
      if (slot.stage_regions) {
        if (cudaError_t err = CopyRegionRows(slot, launch, i, first * row_bytes, count * row_bytes,
                                             false, download_stream_);
            err != cudaSuccess) {
          return err;
        }
      }
      return CopyRegionPieces(slot.out.host, slot.out.dev,
                              {layout.output_at[i], layout.residual_out_at[i]}, first * row_bytes,
                              count * row_bytes, cudaMemcpyDeviceToHost, download_stream_);
    });
    if (e != cudaSuccess) return e;
  }
  cudaEventRecord(slot.events[1], stream_);
  cudaEventRecord(slot.events[2], compute_stream_);
  // The last download waits for the last kernel, which waits for the last upload: this event marks
  // the whole launch done, which is what Finish waits for.
  return cudaEventRecord(slot.events[3], download_stream_);
}

absl::Status CudaExecutor::Finish(const Launch& launch, StageTimes& stages) {
  Slot& slot = slots_[static_cast<size_t>(oldest_slot_)];
  oldest_slot_ = (oldest_slot_ + 1) % kSlots;
  cudaSetDevice(device_);
  const absl::Time wait_start = absl::Now();
  if (cudaError_t e = cudaEventSynchronize(slot.zero_copy ? slot.done : slot.events[3]);
      e != cudaSuccess) {
    return CudaFailure("the launch", e);
  }
  const absl::Time done = absl::Now();
  stages.wait += done - wait_start;
  if (slot.zero_copy) {
    // From the kernel's submission to its completion seen here: an upper bound of the device's
    // time.
    stages.kernel += done - slot.submitted;
  } else {
    stages.h2d += EventGap(slot.events[0], slot.events[1]);
    stages.kernel += EventGap(slot.events[1], slot.events[2]);
    stages.d2h += EventGap(slot.events[2], slot.events[3]);
  }

  // Unpack: each request's bytes are copied out of pinned memory once, from where Start laid them.
  const absl::Time unpack_start = absl::Now();
  UnpackLaunch(launch, slot.layout, slot.out.host, &copies_);
  // Host staging copies, both ways, count as the pack stage.
  stages.pack += absl::Now() - unpack_start;
  return absl::OkStatus();
}

}  // namespace normd
