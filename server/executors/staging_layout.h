// The batch packer: where each request of a launch goes in a staging buffer, and the packing
// itself.
//
// A launch travels to an accelerator as one buffer going up, [segment table][inline
// weights][inputs] [residuals], and comes back as one buffer, [outputs][residual_outs]. Tensors in
// a client's region (ValidatedRequest's TensorMemory other than kNormd) are not staged: the device
// reaches them where they are (registered host pages, or GPU memory opened with CUDA IPC), so the
// table points at them and the copies skip them. Every
// region starts on a 256-byte boundary so that the kernels' 16-byte vector accesses stay aligned
// whatever the sizes before it. The segment table holds pointers into the *device* copies of those
// buffers, which the host cannot dereference; the packer therefore takes the device base addresses
// separately from the host buffer it writes into.
//
// Pure host code with no CUDA in it, so that it is unit-tested and fuzzed on machines without a GPU
// (tests/fuzz/fuzz_staging_packer.cc: packed with device base = host base and computed by the CPU
// kernel, every request must match the reference). CudaExecutor uses it for every launch.
#ifndef NORMD_SERVER_EXECUTORS_STAGING_LAYOUT_H_
#define NORMD_SERVER_EXECUTORS_STAGING_LAYOUT_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/rmsnorm.h"
#include "server/core/work.h"
#include "server/executors/copy_pool.h"

namespace normd {

inline constexpr int64_t kStagingAlign = 256;

// Byte offsets of one launch's regions (-1: the request has no such region, or the tensor is in a
// client's region and not staged).
struct StagingLayout {
  std::vector<int64_t> weight_at;        // in the up buffer; -1 for registered weights
  std::vector<int64_t> input_at;         // in the up buffer
  std::vector<int64_t> residual_at;      // in the up buffer; -1 without a residual
  std::vector<int64_t> output_at;        // in the down buffer
  std::vector<int64_t> residual_out_at;  // in the down buffer; -1 without a residual
  int64_t rows_at = 0;                   // where the staged rows start: table and weights before
  int64_t up_bytes = 0;                  // the up buffer's size, table included
  int64_t down_bytes = 0;
};

// Lays out `launch` (one dtype and hidden size, as TakeLaunch forms them).
StagingLayout LayOutLaunch(const Launch& launch);

// Room on the device for a launch's tensors that are in system regions (TensorMemory::kSharedHost),
// for an executor that copies them there with the copy engines rather than letting its kernel reach
// them through the registered pages' mapping (CudaExecutor, for large launches). Byte offsets into
// a device-only buffer each way, each 256-byte aligned; -1 where the tensor is not in a system
// region (or absent).
struct RegionStagingLayout {
  std::vector<int64_t> input_at;         // in the up buffer
  std::vector<int64_t> residual_at;      // in the up buffer
  std::vector<int64_t> output_at;        // in the down buffer
  std::vector<int64_t> residual_out_at;  // in the down buffer
  int64_t up_bytes = 0;
  int64_t down_bytes = 0;
};

RegionStagingLayout LayOutRegionStaging(const Launch& launch);

// The device address of a registered weight (the executor's weight cache), or an error.
using DeviceWeightLookup = std::function<absl::StatusOr<const void*>(const RegisteredWeight&)>;

// Copies every request's input, residual and inline weight into `up_host` (at least
// layout.up_bytes) and fills the segment table at its start, with pointers to `up_device` /
// `down_device` (where the buffers will be on the device) and to `device_weight(...)` for
// registered weights. The rows are copied by `copies` (null: by the calling thread alone).
absl::Status PackLaunch(const Launch& launch, const StagingLayout& layout, void* up_host,
                        const void* up_device, void* down_device,
                        const DeviceWeightLookup& device_weight, CopyPool* copies = nullptr);

// Copies each request's output (and residual_out) from the down buffer, once it is back on the
// host, into the request's own buffers, by `copies` (null: by the calling thread alone).
void UnpackLaunch(const Launch& launch, const StagingLayout& layout, const void* down_host,
                  CopyPool* copies = nullptr);

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_STAGING_LAYOUT_H_
