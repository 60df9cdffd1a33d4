// RmsNormReloadKernel: the register kernel's thread mapping with the lean kernel's memory use.
// Internal to the CUDA library (included by rmsnorm_cuda.cu).
//
// G threads own a row, thread t its kN 16-byte vectors t, t + G, ..., as in RmsNormRowKernel; but
// instead of holding them across the reduction, the first pass sums their squares and drops them
// (the loads marked to be kept in L1 and L2), and the second pass loads them again, from L1, for
// the output. At most 32 registers for one or two vectors per thread (40 in the variant for two
// with a residual in blocks of up to 512 threads), so a multiprocessor holds 2048 threads (1536 or
// more) against the register kernel's 512 or 1024: what v6 found behind torch.compile's speed at
// large shapes (occupancy, few instructions per byte), and the layout of the kernel Inductor
// generates (one, two or four vectors per thread, all of them loaded before any is used; four in
// a variant of up to 64 registers, one block per multiprocessor), with the vectors per thread
// fixed at compile time (the lean kernel loops over a row in 512-thread strides with 64-bit
// counters, one vector per iteration in its second pass, and leaves threads idle where H is not a
// multiple of 512 vectors).
//
// Single segment, vector path only: the launcher takes it only when the segment passes
// CanVectorize (else the register kernel runs). In place is safe: each thread reads each of its
// vectors in both passes before it writes it, and no other thread touches them.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_RELOAD_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_RELOAD_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/rmsnorm_two_pass_kernel.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

// Blocks of up to 1024 threads (a row of 2048 vectors, H 16384 of a 16-bit type, in one block of
// two vectors per thread), two such blocks or more smaller ones per multiprocessor: ptxas caps the
// kernel at 32 registers.
inline constexpr int kReloadMaxThreads = 1024;
inline constexpr int kReloadMinBlocks = 2;
// Two vectors of a row and two of its residual per thread need 40 registers (under 32 they spilled
// 12-24 bytes): that variant is also built for blocks of up to 512 threads, three per
// multiprocessor, which lets ptxas use 40 (a multiprocessor still holds 1536 threads or more).
inline constexpr int kReloadRoomyThreads = 512;
inline constexpr int kReloadRoomyMinBlocks = 3;
// Four vectors per thread with a residual (or with fp32 weights of a 16-bit row): one block of up
// to 1024 threads per multiprocessor, 48-64 registers (under 40 they spilled 16 bytes). Plain rows
// of four vectors keep the default cap of 32 (two 1024-thread blocks per multiprocessor) by loading
// the weight per vector in the second pass: the layout and the register count of the kernel
// Inductor generates for fp32 rows of 16384 (1024 threads of four vectors, 32 registers; ncu, call
// sweep1). Preloading the weights as well, as the one- and two-vector variants do, needed 48-56
// registers: one block per multiprocessor, 1.17x Inductor's time there.
inline constexpr int kReloadWideMinBlocks = 1;

// kN: vectors per thread (1, 2 or 4); kResidual: the segment carries a residual
// (known on the host: one segment); kW: see WeightKind; kMaxThreads and kMinBlocks: the largest
// block it is launched with and the blocks per multiprocessor it is built for, which set its
// register cap (32 by default; see kReloadRoomyThreads and kReloadWideMinBlocks).
template <typename T, int kN, bool kResidual, WeightKind kW, int kMaxThreads = kReloadMaxThreads,
          int kMinBlocks = kReloadMinBlocks>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks)
    RmsNormReloadKernel(const __grid_constant__ KernelParams p) {
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, kW>;
  __shared__ float warp_sums[kReloadMaxThreads / 32];
  __shared__ float block_inv_rms;
  const RmsNormSegment& seg = p.single;
  const int G = p.threads_per_row;
  const bool one_row_per_block = p.rows_per_block == 1;
  const int group = one_row_per_block ? 0 : static_cast<int>(threadIdx.x) / G;
  const int t = static_cast<int>(threadIdx.x) - group * G;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * p.rows_per_block + group;
  // Vectors per row: at most 4096 (1024 threads of four), so 32-bit offsets within a row.
  const int nv = static_cast<int>(p.hidden / kV);
  const bool active = row < seg.rows;
  const int64_t row_base = active ? row * nv : 0;
  const uint4* x = static_cast<const uint4*>(seg.input) + row_base;
  const uint4* r = kResidual ? static_cast<const uint4*>(seg.residual) + row_base : nullptr;

  GridDependencyLaunchDependents();
  GridDependencyWait();

  // Each pass issues all of the thread's loads before it uses any: a load whose value is used
  // before the next one goes out costs a DRAM (or L1) round trip per vector (the first version
  // did that and lost to the register kernel everywhere).
  const uint64_t keep = L2EvictLastPolicy();
  uint4 xraw[kN];
  uint4 rraw[kResidual ? kN : 1];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int j = t + k * G;
    const bool in_row = active && j < nv;
    xraw[k] = in_row ? LoadVecKeep(x, j, keep) : make_uint4(0, 0, 0, 0);
    if constexpr (kResidual) rraw[k] = in_row ? LoadVecKeep(r, j, keep) : make_uint4(0, 0, 0, 0);
  }
  float sum_squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    float h[kV];
    RowVecValues<T, kResidual>(xraw[k], rraw[kResidual ? k : 0], h);
#pragma unroll
    for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[v], h[v], sum_squares);
  }
  float inv_rms;
  if (one_row_per_block && G > 32) {
    // One row per block: warp 0 finishes the sum and computes the scale once for the block.
    inv_rms = BlockInvRms(sum_squares, G, warp_sums, &block_inv_rms, static_cast<float>(p.hidden),
                          seg.eps);
  } else {
    const float total = GroupSum(sum_squares, G, warp_sums);
    inv_rms = 1.0f / sqrtf(total / static_cast<float>(p.hidden) + seg.eps);
  }
  if (!active) return;
  const float offset = seg.weight_offset;

  const uint64_t last_use = L2EvictFirstPolicy();
  // The weights go out with the row's loads, except with a residual, with fp32 weights of a 16-bit
  // row (two vectors per vector of the row), or with four vectors per thread: those are read per
  // vector below, from L1 mostly (preloading them spilled under 32 registers).
  constexpr bool kPreloadWeights = kWV == 1 && !kResidual && kN < 4;
  uint4 wraw[kN][kWV];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int j = t + k * G;
    if (j < nv) {
      xraw[k] = LoadVecLastUse(x, j, last_use);
      if constexpr (kResidual) rraw[k] = LoadVecLastUse(r, j, last_use);
      if constexpr (kPreloadWeights) LoadWeightVec<T, kW>(seg, j, wraw[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int j = t + k * G;
    if (j < nv) {
      if constexpr (!kPreloadWeights) LoadWeightVec<T, kW>(seg, j, wraw[k]);
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

#endif  // NORMD_KERNELS_CUDA_RMSNORM_RELOAD_KERNEL_CUH_
