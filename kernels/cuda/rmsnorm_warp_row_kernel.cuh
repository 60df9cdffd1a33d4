// RmsNormWarpRowKernel: one warp per row, the row held in registers for a single pass.
// Internal to the CUDA library (included by kernel_instances.cuh, and by kernel_shapes.cu for its
// block limit).
//
// The structure of the kernel Inductor generates for short rows (a persistent reduction: one warp
// per row of H 1024, every load of the row and of the weight issued before any is used, one pass,
// nothing through shared memory), with everything that the register and reload kernels decide at
// run time fixed at compile time: 32 threads per row (no group arithmetic, no division by G), the
// vectors per thread, the residual. Lane l holds vectors l, l + 32, ..., l + 32(kN-1) of its row.
// A block holds blockDim.x / 32 rows; a warp whose row is past the end returns before its
// shuffles, which is safe because the row (and so the return) is the same for the whole warp.
//
// Single segment, vector path only (the launcher checks SingleSegmentOnVectorPath), rows of at
// most 32 * kN vectors. In place is safe: each lane reads its vectors before it writes them, and
// no other lane touches them.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_WARP_ROW_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_WARP_ROW_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

// Blocks of up to 256 threads (8 rows), four per multiprocessor: up to 64 registers, which the
// row and its weight take at four vectors per thread (Inductor's kernel: 63).
inline constexpr int kWarpRowMaxThreads = 256;
inline constexpr int kWarpRowMinBlocks = 4;

template <typename T, int kN, bool kResidual, WeightKind kW>
__global__ void __launch_bounds__(kWarpRowMaxThreads, kWarpRowMinBlocks)
    RmsNormWarpRowKernel(const __grid_constant__ KernelParams p) {
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, kW>;
  const RmsNormSegment& seg = p.single;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (static_cast<int>(threadIdx.x) >> 5);

  GridDependencyLaunchDependents();
  GridDependencyWait();
  if (row >= seg.rows) return;  // the whole warp: its row is past the end

  // Vectors per row: at most 32 * kN, so 32-bit offsets within a row.
  const int nv = static_cast<int>(p.hidden / kV);
  const int64_t row_base = row * nv;
  const uint4* x = static_cast<const uint4*>(seg.input) + row_base;
  const uint4* r = kResidual ? static_cast<const uint4*>(seg.residual) + row_base : nullptr;

  // Every load of the row (and its residual) and of the weight goes out before any is used.
  uint4 xraw[kN];
  uint4 rraw[kResidual ? kN : 1];
  uint4 wraw[kN][kWV];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int j = lane + k * 32;
    const bool in_row = j < nv;
    xraw[k] = in_row ? LoadVec(x, j) : make_uint4(0, 0, 0, 0);
    if constexpr (kResidual) rraw[k] = in_row ? LoadVec(r, j) : make_uint4(0, 0, 0, 0);
    if (in_row) LoadWeightVec<T, kW>(seg, j, wraw[k]);
  }
  float sum_squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    float h[kV];
    RowVecValues<T, kResidual>(xraw[k], rraw[kResidual ? k : 0], h);
#pragma unroll
    for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[v], h[v], sum_squares);
  }
  const float total = WarpSum(sum_squares);
  const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(p.hidden) + seg.eps);
  const float offset = seg.weight_offset;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int j = lane + k * 32;
    if (j < nv) {
      float h[kV];
      RowVecValues<T, kResidual>(xraw[k], rraw[kResidual ? k : 0], h);
      float w[kV];
      UnpackWeightVec<T, kW>(seg, wraw[k], w);
      float y[kV];
#pragma unroll
      for (int v = 0; v < kV; ++v) y[v] = h[v] * inv_rms * (offset + w[v]);
      StoreVec(seg.output, row_base + j, PackVec<T>(y));
      if constexpr (kResidual) StoreVec(seg.residual_out, row_base + j, PackVec<T>(h));
    }
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_WARP_ROW_KERNEL_CUH_
