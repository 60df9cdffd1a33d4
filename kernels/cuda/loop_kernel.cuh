// RmsNormLoopKernel (kind kLoop): one block per row, which it walks twice in strides of the block,
// first for the sum of squares, then for the output (the second read mostly from L1 or L2).
// Internal to the CUDA library.
//
// The kernel for rows that do not fit the rows kernel's registers (H past 16384 for 16-bit rows
// held in 512 threads of four vectors) and for any row on the element path; any H, any alignment.
// kLean: at most 32 registers, so that four 512-thread blocks share a multiprocessor, two vectors
// per thread per step in the first pass and one in the second, the first read marking the row's
// lines to be kept and the second taking them (the structure and cache hints of the kernel
// torch.compile's Inductor generates for this formula); else 16 elements per thread per step and
// two blocks per multiprocessor. Nothing is written in the first pass, so an in-place residual is
// still read unrounded in the second.
#ifndef NORMD_KERNELS_CUDA_LOOP_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_LOOP_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/kernel_limits.h"
#include "kernels/cuda/row_body.cuh"

namespace normd::cuda::internal {

// h of element i (x + r unrounded with a residual), on the element path.
template <typename T>
__device__ __forceinline__ float ElementValue(const RmsNormSegment& s, int64_t i,
                                              bool has_residual) {
  float h = LoadScalar<T>(s.input, i);
  if (has_residual) h += LoadScalar<T>(s.residual, i);
  return h;
}

template <typename T, bool kLean, bool kResidual, WeightKind kW>
__global__ void __launch_bounds__(kLoopMaxThreads, BlocksPerSm(kLean ? 4 : 2, kLoopMaxThreads))
    RmsNormLoopKernel(const __grid_constant__ KernelParams p) {
  constexpr int kV = kVecElems<T>;
  // Vectors per thread per step of each pass (with 4 x 8 for 16-bit rows ptxas spilled under the
  // two-block register cap).
  constexpr int kFirstStep = kLean ? 2 : 16 / kV;
  constexpr int kSecondStep = kLean ? 1 : 16 / kV;
  constexpr RowRead kFirstRead = kLean ? RowRead::kKeep : RowRead::kPlain;
  constexpr RowRead kSecondRead = kLean ? RowRead::kLastUse : RowRead::kPlain;
  __shared__ float warp_sums[kLoopMaxThreads / 32];
  __shared__ float block_inv_rms;
  const int G = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int H = static_cast<int>(p.hidden);
  const int nv = H / kV;

  GridDependencyLaunchDependents();
  GridDependencyWait();
  RmsNormSegment seg;
  int64_t local = 0;
  const bool active = ResolveRow(p, blockIdx.x, seg, local);
  const bool vec = active && CanVectorize<T>(seg, H);
  const bool has_residual = kResidual && active && seg.residual != nullptr;
  const int64_t row_base = local * nv;
  const int64_t row_offset = local * H;

  float sum_squares = 0.0f;
  if (vec) {
    const uint64_t policy = RowReadPolicy<kFirstRead>();
    for (int j0 = t; j0 < nv; j0 += kFirstStep * G) {
      RowRegisters<T, kFirstStep, kResidual> step;
      step.template Load<kFirstRead>(seg, row_base, ThreadVectors{j0, G, nv}, has_residual, policy);
      sum_squares = step.AddSquares(sum_squares);
    }
  } else if (active) {
    // Element path: one element per thread per step (a vector's worth of them spilled here).
    for (int e = t; e < H; e += G) {
      const float h = ElementValue<T>(seg, row_offset + e, has_residual);
      sum_squares = fmaf(h, h, sum_squares);
    }
  }
  const float inv_rms = BlockInvRms(sum_squares, G, warp_sums, &block_inv_rms,
                                    static_cast<float>(H), active ? seg.eps : 1.0f);
  if (!active) return;

  if (vec) {
    const uint64_t policy = RowReadPolicy<kSecondRead>();
    for (int j0 = t; j0 < nv; j0 += kSecondStep * G) {
      const ThreadVectors v{j0, G, nv};
      RowRegisters<T, kSecondStep, kResidual> step;
      step.template Load<kSecondRead>(seg, row_base, v, has_residual, policy);
      HeldWeights<T, kSecondStep, kW> weights;
      weights.Load(seg, v);
      StoreRow(seg, row_base, v, step, weights, inv_rms, has_residual);
    }
  } else {
    for (int e = t; e < H; e += G) {
      const float h = ElementValue<T>(seg, row_offset + e, has_residual);
      StoreScalar<T>(seg.output, row_offset + e,
                     h * inv_rms * (seg.weight_offset + WeightAt<T, kW>(seg, e)));
      if (has_residual) StoreScalar<T>(seg.residual_out, row_offset + e, h);
    }
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_LOOP_KERNEL_CUH_
