// The parameters every RMSNorm kernel takes (one struct, passed by value as a __grid_constant__),
// and the type of a kernel's host-side handle. Plain C++, shared by the launcher and the kernels.
// Internal to the CUDA library.
#ifndef NORMD_KERNELS_CUDA_KERNEL_PARAMS_H_
#define NORMD_KERNELS_CUDA_KERNEL_PARAMS_H_

#include <cstdint>

#include "kernels/rmsnorm.h"

namespace normd::cuda::internal {

// The most segments whose first rows travel in the kernel parameters (256 bytes).
inline constexpr int kInlineSegments = 64;

struct KernelParams {
  RmsNormSegment single;        // the segment when table is null; its row r is launch row r
  const RmsNormSegment* table;  // device-resident segment table, or null
  int64_t hidden;
  int64_t total_rows;
  int32_t num_segments;
  int32_t threads_per_row;     // G (the cluster kernel: threads per CTA)
  int32_t rows_per_block;      // row groups per block (1 for the loop and cluster kernels)
  int32_t weight_before_wait;  // single segment only: read the weight before griddepcontrol.wait
  int32_t ctas;                // the cluster kernel: CTAs per row (C)
  // A table whose host copy the launcher has seen, of up to kInlineSegments segments and fewer
  // than 2^32 rows: the segments' first rows, so that finding a row's segment reads no device
  // memory (the table itself is read once the segment is known). 0: search the device table.
  int32_t inline_segments;
  // With inline_segments: every segment's rows are rows of `single`'s tensors (one tensor cut into
  // segments that differ only in weight, weight dtype, eps and weight_offset), so a row's data is
  // found without the table and only its normalization parameters come from it.
  int32_t contiguous;
  uint32_t first_rows[kInlineSegments];
};

using KernelFunction = void (*)(KernelParams);

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_KERNEL_PARAMS_H_
