// RmsNormSplitRowKernel: the latency kernel for launches of one or a few rows of up to 16384
// elements. Internal to the CUDA library (included by rmsnorm_cuda.cu and, for its constants,
// kernel_shapes.cu).
//
// Why: a small launch takes ~1.05 us plus ~20 ns per KB that the one multiprocessor holding a row
// moves (docs/KERNELS.md "v7"). The cluster kernel (rmsnorm_cluster_kernel.cuh) splits those bytes
// over C multiprocessors but its cluster barrier and distributed-shared-memory read cost ~0.45 us
// with programmatic dependent launch, more than they save below ~96 KB per row. Here the C CTAs of
// a row do not talk at all: each one reads the WHOLE row (x, and r with a residual) and sums its
// squares itself, then normalizes and stores only its 1/C share of the output (and residual_out),
// reading only its share of the weight. A CTA then moves the row's inputs plus 1/C of the rest
// (plain: x + out/C instead of x + out; fused: x + r + (out + residual_out)/C instead of all four),
// and no CTA waits for another.
//
// Layout: blockDim.x == G threads (whole warps), thread t holds the row's 16-byte vectors t + k*G
// for k < kN (zeros past the row), as in the register kernel; every CTA adds them in the same fixed
// order (GroupSum), so the C CTAs of a row compute the same scale, bit for bit. CTA `share` =
// blockIdx.x % C of row blockIdx.x / C stores the vectors [nv*share/C, nv*(share+1)/C): each
// thread those of its vectors that fall there. G and C are independent: G as the register
// kernel's latency shapes (enough threads to have the row's loads in flight at once), C as many
// as the launch can spread over.
//
// Preconditions (checked by the launcher): one segment passed by value (p.table == null), on the
// vector path (CanVectorize), gridDim.x == rows * C with C == p.split_ctas, G*kN covering the row,
// and no output overlapping an input: a CTA that writes its share while another still reads the
// whole row would change what that one reads (in place is the register kernel's job).
#ifndef NORMD_KERNELS_CUDA_RMSNORM_SPLIT_ROW_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_SPLIT_ROW_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

// The most CTAs one row is split over, and the most vectors per thread.
inline constexpr int kMaxSplitCtas = 8;
inline constexpr int kMaxSplitVectors = 8;

// kResidual: the segment carries a residual (the launcher knows). The weight dtype is read from
// the segment (kEither): this kernel runs few blocks and is not short of registers.
template <typename T, int kN, bool kResidual>
__global__ void __launch_bounds__(kMaxBlockThreads)
    RmsNormSplitRowKernel(const __grid_constant__ KernelParams p) {
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, WeightKind::kEither>;
  constexpr int kR = kResidual ? kN : 1;
  __shared__ float warp_sums[kMaxBlockThreads / 32];

  const int ctas = p.split_ctas;
  const int G = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int64_t share = blockIdx.x % static_cast<unsigned>(ctas);
  const int64_t row = blockIdx.x / static_cast<unsigned>(ctas);
  const RmsNormSegment& seg = p.single;
  const int64_t nv = p.hidden / kV;
  const int64_t first = nv * share / ctas;      // this CTA's share of the row's vectors
  const int64_t end = nv * (share + 1) / ctas;  // (exclusive)
  const int64_t base = row * nv;
  auto mine = [&](int64_t j) { return j >= first && j < end; };

  GridDependencyLaunchDependents();

  uint4 wraw[kN][kWV];
  if (p.weight_before_wait) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * G;
      if (mine(j)) LoadWeightVec<T>(seg, j, wraw[k]);
    }
    GridDependencyWait();
  } else {
    GridDependencyWait();
  }

  uint4 xraw[kN];
  uint4 rraw[kR];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int64_t j = t + static_cast<int64_t>(k) * G;
    xraw[k] = j < nv ? LoadVec(seg.input, base + j) : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int k = 0; k < kR; ++k) {
    const int64_t j = t + static_cast<int64_t>(k) * G;
    rraw[k] = kResidual && j < nv ? LoadVec(seg.residual, base + j) : make_uint4(0, 0, 0, 0);
  }
  if (!p.weight_before_wait) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * G;
      if (mine(j)) LoadWeightVec<T>(seg, j, wraw[k]);
    }
  }

  float sum_squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    float h[kV];
    RowVecValues<T, kResidual>(xraw[k], rraw[kResidual ? k : 0], h);
#pragma unroll
    for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[v], h[v], sum_squares);
  }
  const float total = GroupSum(sum_squares, G, warp_sums);

  const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(p.hidden) + seg.eps);
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int64_t j = t + static_cast<int64_t>(k) * G;
    if (!mine(j)) continue;
    float h[kV];
    RowVecValues<T, kResidual>(xraw[k], rraw[kResidual ? k : 0], h);
    float w[kV];
    UnpackWeightVec<T>(seg, wraw[k], w);
    float y[kV];
#pragma unroll
    for (int v = 0; v < kV; ++v) y[v] = h[v] * inv_rms * (seg.weight_offset + w[v]);
    StoreVec(seg.output, base + j, PackVec<T>(y));
    if constexpr (kResidual) StoreVec(seg.residual_out, base + j, PackVec<T>(h));
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_SPLIT_ROW_KERNEL_CUH_
