// The domain types every stage of normd shares: a validated request, the work item that carries it
// from the service through the scheduler and a worker's queue to a launch, and the launch itself.
//
// Ownership: the service creates a WorkItem when it accepts a request and hands it to the
// scheduler; from then on exactly one party owns it: the worker queue, then the launch that runs
// it. Whoever ends its life calls Complete() exactly once, which answers the client (the service's
// callback), and then the item is destroyed. The request's bytes (which `request` points into) and
// the output buffers belong to the service's call state and stay valid until Complete() returns.
#ifndef NORMD_SERVER_CORE_WORK_H_
#define NORMD_SERVER_CORE_WORK_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kernels/dtype.h"
#include "server/core/tensor_bytes.h"

namespace normd {

// Where a tensor's bytes are. Requests that carry their tensors in the message (the bytes
// transport) use kNormd throughout; the shared-memory transport points tensors into a client's
// region instead (server/regions/).
enum class TensorMemory : uint8_t {
  // normd's own memory: the received message (inputs) or the response's buffer (outputs).
  kNormd,
  // A client's system shared-memory region, mapped into normd. The client can truncate it at any
  // moment, so host code touches it only under a SigbusGuard (server/executors/sigbus_guard.h).
  // On the CUDA backend it is also registered with the driver: copies and kernels reach it
  // directly.
  kSharedHost,
  // A client's GPU memory opened with CUDA IPC: a device pointer on ValidatedRequest::device,
  // which host code never dereferences.
  kDevice,
};

// How a request's tensors travelled: the label of the requests-by-transport metric.
inline const char* TransportName(TensorMemory memory) {
  switch (memory) {
    case TensorMemory::kNormd:
      return "bytes";
    case TensorMemory::kSharedHost:
      return "system";
    case TensorMemory::kDevice:
      return "cuda";
  }
  return "bytes";
}

// A weight stored by RegisterWeight and named by its id in later requests.
struct RegisteredWeight {
  std::string id;
  DType dtype;
  int64_t hidden;
  std::string bytes;  // hidden * ItemSize(dtype) little-endian elements
};

struct ValidatedRequest {
  DType dtype = DType::kFloat32;
  int64_t rows = 0;
  int64_t hidden = 0;
  TensorBytes input;     // rows * hidden elements, where the request's bytes arrived
  TensorBytes residual;  // same, or absent (!present())
  // hidden elements of weight_dtype: an inline weight where it arrived, like the input (in pieces,
  // at any address), or a registered weight's bytes. Executors read it as they read the input.
  TensorBytes weight;
  DType weight_dtype = DType::kFloat32;
  float eps = 0.0f;
  float weight_offset = 0.0f;
  std::shared_ptr<const RegisteredWeight> registered_weight;  // keeps a weight_id's bytes alive

  // Where input and residual are (see TensorMemory), and where output and residual_out go: into
  // the response (kNormd), or into a region at output_in_region / residual_out_in_region.
  TensorMemory input_memory = TensorMemory::kNormd;
  TensorMemory residual_memory = TensorMemory::kNormd;
  TensorMemory output_memory = TensorMemory::kNormd;
  TensorMemory residual_out_memory = TensorMemory::kNormd;
  void* output_in_region = nullptr;
  void* residual_out_in_region = nullptr;
  // The GPU (normd's ordinal) that every kDevice tensor of the request is on; -1 when none is.
  int device = -1;
  // Keeps the regions the tensors point into mapped (and opened) while the request lives, even if
  // the client unregisters them meanwhile.
  std::vector<std::shared_ptr<const void>> region_holds;

  int64_t elements() const { return rows * hidden; }
  // Tensor payload bytes in (input, residual) and out (output, residual_out).
  int64_t payload_bytes() const {
    return elements() * static_cast<int64_t>(ItemSize(dtype)) * (has_residual() ? 2 : 1);
  }
  bool has_residual() const { return residual.present(); }
  // Whether any tensor is in a client's region of `memory`'s kind.
  bool uses(TensorMemory memory) const {
    return input_memory == memory || residual_memory == memory || output_memory == memory ||
           residual_out_memory == memory;
  }
  // The transport label: "cuda" if any tensor is in GPU memory, else "system" if any is in a
  // system region, else "bytes".
  TensorMemory transport() const {
    if (uses(TensorMemory::kDevice)) return TensorMemory::kDevice;
    return uses(TensorMemory::kSharedHost) ? TensorMemory::kSharedHost : TensorMemory::kNormd;
  }
};

// What a request learns about the launch it rode in (reported in its Timing).
struct LaunchReport {
  absl::Duration queue_wait;
  absl::Duration compute;
  int32_t batch_rows = 0;
  int32_t batch_requests = 0;
};

struct WorkItem {
  ValidatedRequest request;
  void* output = nullptr;        // rows * hidden elements of request.dtype
  void* residual_out = nullptr;  // same, when request.residual is set
  absl::Time enqueued = absl::InfinitePast();
  absl::Time deadline = absl::InfiniteFuture();
  // normd's own start-up launch: computed like any request, but not a client's, so it stays out of
  // the per-request metrics (payload bytes, queue wait).
  bool is_warm_up = false;
  // The submitting thread may compute this item itself when the worker is idle (see
  // BatchExecutor::runs_on_caller_thread). Only where answering the item from inside the submit
  // call is safe: the unary handler, which holds no lock of its own there (a stream's reactor
  // does).
  bool may_run_on_caller_thread = false;
  // When true, the scheduler keeps this item's bytes charged against --max-queue-bytes after
  // on_done, until the submitter calls Scheduler::ReleaseHeldBytes: the unary handler does, once
  // gRPC has sent the response (a client that reads slowly keeps its responses in normd's memory
  // till then).
  bool hold_bytes_until_released = false;
  // An executor that fails this request alone, while the rest of its launch succeeds, says why
  // here (the client truncated its shared memory under the launch); the worker answers with it.
  absl::Status failure;
  // The memory this request holds in normd while it is admitted: its message as received and its
  // response (set by the service; 0 for normd's own warm-up). The scheduler charges it against the
  // memory budget (--max-memory-bytes) alongside bytes() against --max-queue-bytes, and releases it
  // when the bytes are (see hold_bytes_until_released).
  int64_t memory_bytes = 0;
  // True once the client has gone away; checked before any compute is spent on the item.
  std::function<bool()> is_cancelled;
  // Answers the client. Called exactly once, from any thread.
  std::function<void(const absl::Status&, const LaunchReport&)> on_done;

  int64_t rows() const { return request.rows; }
  int64_t bytes() const { return request.payload_bytes(); }
  // What admission (--max-queue-bytes) charges: the payload normd itself holds for the request.
  // Tensors in a client's region are the client's memory: a request entirely in regions holds
  // none, one entirely in messages all of bytes() (its inputs, and as much again in outputs).
  int64_t admission_bytes() const {
    const ValidatedRequest& r = request;
    const int64_t tensor = r.elements() * static_cast<int64_t>(ItemSize(r.dtype));
    int64_t held =
        (r.input_memory == TensorMemory::kNormd) + (r.output_memory == TensorMemory::kNormd);
    if (r.has_residual()) {
      held += (r.residual_memory == TensorMemory::kNormd) +
              (r.residual_out_memory == TensorMemory::kNormd);
    }
    return tensor * held / 2;
  }
  // The output bytes normd's response carries: the outputs not written into a client's region.
  int64_t response_bytes() const {
    const ValidatedRequest& r = request;
    const int64_t tensor = r.elements() * static_cast<int64_t>(ItemSize(r.dtype));
    int64_t held = r.output_memory == TensorMemory::kNormd;
    if (r.has_residual()) held += r.residual_out_memory == TensorMemory::kNormd;
    return tensor * held;
  }
  void Complete(const absl::Status& status, const LaunchReport& report = {}) {
    on_done(status, report);
  }
};

// One kernel launch's worth of requests: all of one dtype and hidden size.
struct Launch {
  DType dtype = DType::kFloat32;
  int64_t hidden = 0;
  int64_t rows = 0;
  int64_t bytes = 0;
  std::vector<std::unique_ptr<WorkItem>> items;
};

using WorkQueue = std::deque<std::unique_ptr<WorkItem>>;

}  // namespace normd

#endif  // NORMD_SERVER_CORE_WORK_H_
