// RMSNorm (with optional fused residual add) on NVIDIA GPUs: the host entry points of the CUDA
// library normd::cuda_kernels (libnormd_cuda_kernels.so). The math is kernels/rmsnorm.h's, exactly:
// fp32 accumulation, variance from the unrounded h = x + r, eps inside the root, one rounding at
// the output.
//
// Every entry point only enqueues work on `stream` and returns the launch's cudaError_t
// (cudaErrorInvalidValue for arguments it can check on the host). All pointers are device pointers.
// Supported: dtype fp32 / fp16 / bf16; weight of the launch dtype or fp32; 1 <= hidden <=
// kMaxHidden; output may equal input; residual_out may equal residual (in place). Any pointer
// alignment works (16-byte vector accesses are used only where every pointer of a segment allows
// them).
//
// This header is plain C++: g++ includes it; it declares no kernels and no CUDA-only types.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_CUDA_H_
#define NORMD_KERNELS_CUDA_RMSNORM_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

// The library is built with hidden visibility; these entry points are its exports.
#define NORMD_CUDA_API __attribute__((visibility("default")))

namespace normd::cuda {

// The largest hidden size the kernels accept.
inline constexpr int64_t kMaxHidden = 65536;

struct RmsNormOptions {
  // Launch with programmatic dependent launch (sm_90+): the kernel may start while the preceding
  // kernel in the stream finishes, and waits for it (griddepcontrol.wait) before reading the
  // segment table, the input or the residual. Helps back-to-back small launches, e.g. replayed from
  // a CUDA graph.
  bool programmatic_dependent_launch = false;
  // Only with programmatic_dependent_launch and one segment by value: read the weight before that
  // wait. The caller promises the preceding kernel does not write the weight.
  bool weight_before_dependency_wait = false;
};

// Which kernel runs a launch, and how, is chosen from the dtype, H, the rows, whether residuals
// and fp32 weights are present and whether every row is on the 16-byte vector path, by a table
// measured on the GPU's architecture (docs/KERNELS.md); the same for one segment and for a table
// of segments whose host copy is given.

// One launch over every segment of `launch`. launch.segments points to a DEVICE-resident table of
// launch.num_segments segments, in launch-row order (segment k covers launch rows [first_row,
// first_row + rows)); launch.total_rows is the sum of their rows. Segments may differ in eps,
// weight, weight dtype, weight_offset and residual (or none); they share dtype and hidden. The
// table's contents are not checked on the host: a weight_dtype other than fp32 is read as the
// launch dtype. Without the host copy the launcher must assume any segment may carry a residual,
// fp32 weights or unaligned pointers, and runs a build that checks each segment at run time.
NORMD_CUDA_API cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream);
NORMD_CUDA_API cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream,
                                          const RmsNormOptions& options);
// The same with `host_segments`, the host copy of the table's launch.num_segments entries (read
// during the call only): the launch then gets the kernel a single tensor with the same residual,
// weight dtype and alignment gets (every segment's weight_dtype is checked: the launch dtype or
// fp32, else cudaErrorInvalidValue). A table of one segment covering the launch runs as RmsNorm.
NORMD_CUDA_API cudaError_t RmsNormBatched(const RmsNormLaunch& launch,
                                          const RmsNormSegment* host_segments, cudaStream_t stream,
                                          const RmsNormOptions& options = {});

// One segment passed by value (no table): the low-latency path. segment.first_row is ignored; the
// segment's rows are rows 0 .. segment.rows - 1 of its own pointers.
NORMD_CUDA_API cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                                   cudaStream_t stream);
NORMD_CUDA_API cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                                   cudaStream_t stream, const RmsNormOptions& options);

}  // namespace normd::cuda

// C entries for ctypes (bench/cuda/compare_kernels.py, batched_bench.py). dtype and weight_dtype
// are DType's numbers (1 fp32, 2 fp16, 3 bf16); stream is a cudaStream_t (0 for the legacy
// default stream); each returns the cudaError_t as an int.
// RmsNorm on one segment; residual and residual_out may be null; pdl != 0 asks for programmatic
// dependent launch with the weight read before the wait.
extern "C" NORMD_CUDA_API int normd_cuda_rmsnorm(int dtype, int64_t hidden, int64_t rows,
                                                 const void* input, void* output,
                                                 const void* residual, void* residual_out,
                                                 const void* weight, int weight_dtype, float eps,
                                                 float weight_offset, void* stream, int pdl);
// RmsNormBatched over a device table of num_segments RmsNormSegment entries; host_segments (its
// host copy) may be null.
extern "C" NORMD_CUDA_API int normd_cuda_rmsnorm_batched(int dtype, int64_t hidden,
                                                         int64_t total_rows,
                                                         const void* device_segments,
                                                         int num_segments,
                                                         const void* host_segments, void* stream);
// sizeof(RmsNormSegment), for callers that lay the table out themselves.
extern "C" NORMD_CUDA_API int normd_cuda_segment_bytes();

#endif  // NORMD_KERNELS_CUDA_RMSNORM_CUDA_H_
