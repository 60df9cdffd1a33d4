// RmsNormTwoPassKernel: one block per row, the row read twice (the sum of squares, then the
// output). Internal to the CUDA library (included by rmsnorm_cuda.cu and, for its constants,
// kernel_shapes.cu).
//
// Used for H > 16384 (to 65536), where a row does not fit the register kernel
// (rmsnorm_kernels.cuh), and in its lean variant at the shapes where it measured faster than the
// register kernel (LeanTwoPassWins, kernel_shapes.cu). Nothing is written in the first pass, so an
// in-place residual (residual_out == residual) is still read unrounded in the second.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_TWO_PASS_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_TWO_PASS_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

inline constexpr int kTwoPassThreads = 512;
// Vectors per thread per iteration of the two-pass kernel: 16 elements, 64 bytes of fp32 (with an
// unroll of 4 for 16-bit types ptxas spilled under the 2-blocks-per-SM register cap).
template <typename T>
inline constexpr int kTwoPassUnroll = 16 / kVecElems<T>;

// 1 / sqrt(sum of `v` over the block / hidden + eps), for a block of `block_threads` (a multiple of
// 32) working on one row: BlockSumInWarp0, then warp 0 computes the scale, which every thread reads
// back. The division and root are done once per block instead of once per thread.
__device__ __forceinline__ float BlockInvRms(float v, int block_threads, float* warp_sums,
                                             float* block_result, float hidden, float eps) {
  const float total = BlockSumInWarp0(v, block_threads, warp_sums);
  if (threadIdx.x == 0) *block_result = 1.0f / sqrtf(total / hidden + eps);
  __syncthreads();
  return *block_result;
}

// How the two-pass kernel reads a row. kPlain: ordinary loads in both passes. kKeep (first pass of
// the lean kernel) and kLastUse (its second pass): see LoadVecKeep.
enum class RowRead { kPlain, kKeep, kLastUse };

// The L2 policy a read of kind kRead attaches (unused for kPlain).
template <RowRead kRead>
__device__ __forceinline__ uint64_t RowReadPolicy() {
  if constexpr (kRead == RowRead::kKeep) {
    return L2EvictLastPolicy();
  } else if constexpr (kRead == RowRead::kLastUse) {
    return L2EvictFirstPolicy();
  } else {
    return 0;
  }
}

template <RowRead kRead>
__device__ __forceinline__ uint4 LoadRowVec(const void* base, int64_t idx, uint64_t policy) {
  if constexpr (kRead == RowRead::kKeep) {
    return LoadVecKeep(base, idx, policy);
  } else if constexpr (kRead == RowRead::kLastUse) {
    return LoadVecLastUse(base, idx, policy);
  } else {
    return LoadVec(base, idx);
  }
}

// h for vector j of a row (x + r, unrounded), or the element-path equivalent for element e.
template <typename T, RowRead kRead = RowRead::kPlain>
__device__ __forceinline__ void LoadHVec(const RmsNormSegment& s, bool has_residual, int64_t idx,
                                         float (&h)[kVecElems<T>], uint64_t policy = 0) {
  UnpackVec<T>(LoadRowVec<kRead>(s.input, idx, policy), h);
  if (has_residual) {
    float r[kVecElems<T>];
    UnpackVec<T>(LoadRowVec<kRead>(s.residual, idx, policy), r);
#pragma unroll
    for (int v = 0; v < kVecElems<T>; ++v) h[v] += r[v];
  }
}

// One block per row: the sum of squares over the row, then the row read again for the output.
// kLean = false (H > 16384 by default): 16 elements per thread per iteration, two blocks of 512
// threads per multiprocessor; the second read comes mostly from L2. kLean = true: at most 32
// registers, so four blocks of 512 threads (a full multiprocessor) are resident, two 16-byte
// vectors per thread per iteration in the first pass and one in the second; the first read marks
// the row's lines to be kept (L1 and L2) and the second takes them from there (the structure and
// cache hints of the kernel torch.compile's Inductor generates for this formula). kResidual =
// false: the launch carries no residuals, and the kernel has no instructions for them (they cost
// the lean kernel issue slots even when predicated off). kW: see WeightKind.
template <typename T, bool kLean = false, bool kResidual = true,
          WeightKind kW = WeightKind::kEither>
__global__ void __launch_bounds__(kTwoPassThreads, kLean ? 4 : 2)
    RmsNormTwoPassKernel(const __grid_constant__ KernelParams p) {
  constexpr int kV = kVecElems<T>;
  // Vectors per thread per iteration: the first pass of the lean kernel issues two before it uses
  // either (its values are summed and dropped at once); its second pass keeps one.
  constexpr int kU1 = kLean ? 2 : kTwoPassUnroll<T>;
  constexpr int kU = kLean ? 1 : kTwoPassUnroll<T>;
  constexpr RowRead kFirstRead = kLean ? RowRead::kKeep : RowRead::kPlain;
  constexpr RowRead kSecondRead = kLean ? RowRead::kLastUse : RowRead::kPlain;
  __shared__ float warp_sums[kTwoPassThreads / 32];
  const int G = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int64_t H = p.hidden;

  GridDependencyLaunchDependents();
  GridDependencyWait();
  RmsNormSegment seg;
  int64_t local = 0;
  const bool active = ResolveRow(p, blockIdx.x, seg, local);
  const bool vec = active && CanVectorize<T>(seg, H);
  const bool has_residual = kResidual && active && seg.residual != nullptr;
  const int64_t nv = H / kV;

  const uint64_t first_policy = RowReadPolicy<kFirstRead>();
  const uint64_t second_policy = RowReadPolicy<kSecondRead>();
  float sum_squares = 0.0f;
  if (vec) {
    const int64_t base = local * nv;
    for (int64_t j0 = t; j0 < nv; j0 += static_cast<int64_t>(kU1) * G) {
      float h[kU1][kV];
#pragma unroll
      for (int u = 0; u < kU1; ++u) {
        const int64_t j = j0 + static_cast<int64_t>(u) * G;
        if (j < nv) {
          LoadHVec<T, kFirstRead>(seg, has_residual, base + j, h[u], first_policy);
#pragma unroll
          for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[u][v], h[u][v], sum_squares);
        }
      }
    }
  } else if (active) {
    const int64_t base = local * H;
    for (int64_t e = t; e < H; e += G) {
      float x = LoadScalar<T>(seg.input, base + e);
      if (has_residual) x += LoadScalar<T>(seg.residual, base + e);
      sum_squares = fmaf(x, x, sum_squares);
    }
  }
  float inv_rms;
  if constexpr (kLean) {
    // With one vector per thread, per-thread work per row is what limits (ncu: the issue slots were
    // 85-92% busy): warp 0 finishes the sum and computes the scale once for the block.
    __shared__ float block_inv_rms;
    inv_rms = BlockInvRms(sum_squares, G, warp_sums, &block_inv_rms, static_cast<float>(H),
                          active ? seg.eps : 0.0f);
    if (!active) return;
  } else {
    const float total = GroupSum(sum_squares, G, warp_sums);
    if (!active) return;
    inv_rms = 1.0f / sqrtf(total / static_cast<float>(H) + seg.eps);
  }
  const float offset = seg.weight_offset;

  if (vec) {
    const int64_t base = local * nv;
    for (int64_t j0 = t; j0 < nv; j0 += static_cast<int64_t>(kU) * G) {
      float h[kU][kV];
      uint4 wraw[kU][kWeightVecs<T, kW>];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t j = j0 + static_cast<int64_t>(u) * G;
        if (j < nv) {
          LoadHVec<T, kSecondRead>(seg, has_residual, base + j, h[u], second_policy);
          LoadWeightVec<T, kW>(seg, j, wraw[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t j = j0 + static_cast<int64_t>(u) * G;
        if (j < nv) {
          float w[kV];
          UnpackWeightVec<T, kW>(seg, wraw[u], w);
          float y[kV];
#pragma unroll
          for (int v = 0; v < kV; ++v) y[v] = h[u][v] * inv_rms * (offset + w[v]);
          StoreVec(seg.output, base + j, PackVec<T>(y));
          if (has_residual) StoreVec(seg.residual_out, base + j, PackVec<T>(h[u]));
        }
      }
    }
  } else {
    const int64_t base = local * H;
    for (int64_t e = t; e < H; e += G) {
      float x = LoadScalar<T>(seg.input, base + e);
      if (has_residual) x += LoadScalar<T>(seg.residual, base + e);
      StoreScalar<T>(seg.output, base + e, x * inv_rms * (offset + WeightAt<T>(seg, e)));
      if (has_residual) StoreScalar<T>(seg.residual_out, base + e, x);
    }
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_TWO_PASS_KERNEL_CUH_
