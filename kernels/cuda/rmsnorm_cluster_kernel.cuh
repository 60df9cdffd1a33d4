// RmsNormClusterKernel: the latency kernel for launches of few rows (sm_90). Internal to the CUDA
// library (included by rmsnorm_cuda.cu and, for its constants, kernel_shapes.cu).
//
// Why: with one or a few rows, one multiprocessor moves a whole row (x, the weight, the output, and
// with a residual r and residual_out) while the others idle. On the H200, 20 launches replayed from
// a CUDA graph on L2-resident data took 1.05 us plus ~20 ns per KB a multiprocessor moves (bf16
// plain 1 x 4096, 16 KB: 1.37 us; fused 1 x 7168, 56 KB: 2.15 us; docs/KERNELS.md "v7"): the
// bytes through one multiprocessor, not the chip, set the time. Here a cluster of C CTAs (C <= 8,
// on C multiprocessors) shares one row: each CTA loads, normalizes and stores 1/C of it, and the
// sum of squares is completed across the cluster through distributed shared memory.
//
// Layout: CTA `rank` of the cluster of row `blockIdx.x / C` has G threads; thread t of it is thread
// rank * G + t of the row's C * G, and holds the row's 16-byte vector of that index (vector path),
// or its elements of that index plus m * C * G for m < kVecElems<T> (element path, as the row
// kernel's with G replaced by C * G). Each CTA sums its threads in a fixed order (BlockSumInWarp0)
// into its own shared `cta_sum`; after a cluster barrier every CTA adds the C sums in rank order,
// so all CTAs of the row compute the same scale, bit for bit, whatever the timing.
//
// Preconditions (checked by the launcher): sm_90 or newer, launched with cluster dimension C
// (2, 4 or 8) in x, gridDim.x == total_rows * C, blockDim.x == G a multiple of 32 with
// C * G * kVecElems<T> >= hidden.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_CLUSTER_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_CLUSTER_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

inline constexpr int kMaxClusterCtas = 8;  // the portable cluster size limit

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ int ClusterCtaRank() {
  uint32_t rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return static_cast<int>(rank);
}

__device__ __forceinline__ int ClusterCtaCount() {
  uint32_t count;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(count));
  return static_cast<int>(count);
}

// The two halves of a cluster barrier (every thread of every CTA of the cluster takes part):
// arrive publishes this thread's earlier memory operations (release), wait returns once all have
// arrived and makes theirs visible (acquire). Split so that work can go between them.
__device__ __forceinline__ void ClusterArrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

__device__ __forceinline__ void ClusterWait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The float at `local`'s shared-memory offset in CTA `rank` of this cluster.
__device__ __forceinline__ float LoadClusterShared(const float* local, int rank) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(local));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(address), "r"(rank));
  float value;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(value) : "r"(remote) : "memory");
  return value;
}
#endif

// kResidual: the launch may carry residuals (per segment, checked at run time). The weight dtype is
// read from the segment (kEither): this kernel is not short of registers.
template <typename T, bool kResidual>
__global__ void __launch_bounds__(kMaxBlockThreads)
    RmsNormClusterKernel(const __grid_constant__ KernelParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, WeightKind::kEither>;
  __shared__ float warp_sums[kMaxBlockThreads / 32];
  __shared__ float cta_sum;

  const int ctas = ClusterCtaCount();
  const int G = static_cast<int>(blockDim.x);
  const int span = ctas * G;                                           // threads of the row
  const int t = ClusterCtaRank() * G + static_cast<int>(threadIdx.x);  // this thread among them
  const int64_t row = static_cast<int64_t>(blockIdx.x) / ctas;
  const int64_t H = p.hidden;
  const int64_t nv = H / kV;

  GridDependencyLaunchDependents();

  RmsNormSegment seg;
  int64_t local = 0;
  uint4 wraw[kWV];
  bool weights_loaded = false;
  bool active;
  bool vec;
  if (p.table == nullptr && p.weight_before_wait) {
    active = ResolveRow(p, row, seg, local);
    vec = active && CanVectorize<T>(seg, H);
    if (vec && t < nv) LoadWeightVec<T>(seg, t, wraw);
    weights_loaded = true;
    GridDependencyWait();
  } else {
    GridDependencyWait();
    active = ResolveRow(p, row, seg, local);
    vec = active && CanVectorize<T>(seg, H);
  }
  const bool has_residual = kResidual && active && seg.residual != nullptr;

  // h = x (+ r) as floats; slots past the row hold zeros, which add nothing.
  float h[kV];
#pragma unroll
  for (int v = 0; v < kV; ++v) h[v] = 0.0f;
  if (vec && t < nv) {
    const int64_t j = local * nv + t;
    const uint4 xraw = LoadVec(seg.input, j);
    uint4 rraw = make_uint4(0, 0, 0, 0);
    if (has_residual) rraw = LoadVec(seg.residual, j);
    if (!weights_loaded) LoadWeightVec<T>(seg, t, wraw);
    UnpackVec<T>(xraw, h);
    if (has_residual) {
      float r[kV];
      UnpackVec<T>(rraw, r);
#pragma unroll
      for (int v = 0; v < kV; ++v) h[v] += r[v];
    }
  } else if (active && !vec) {
    const int64_t base = local * H;
#pragma unroll
    for (int m = 0; m < kV; ++m) {
      const int64_t e = t + static_cast<int64_t>(m) * span;
      if (e < H) {
        h[m] = LoadScalar<T>(seg.input, base + e);
        if (has_residual) h[m] += LoadScalar<T>(seg.residual, base + e);
      }
    }
  }
  float sum_squares = 0.0f;
#pragma unroll
  for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[v], h[v], sum_squares);

  // This CTA's share of the sum, then the cluster's, in rank order.
  const float block_sum = BlockSumInWarp0(sum_squares, G, warp_sums);
  if (threadIdx.x == 0) cta_sum = block_sum;
  ClusterArrive();
  ClusterWait();
  float total = 0.0f;
  for (int c = 0; c < ctas; ++c) total += LoadClusterShared(&cta_sum, c);
  // This thread is done reading the other CTAs' shared memory; the matching wait comes last, so
  // that no CTA exits (and frees its cta_sum) while another may still read it.
  ClusterArrive();

  if (active) {
    const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(H) + seg.eps);
    const float offset = seg.weight_offset;
    if (vec) {
      if (t < nv) {
        const int64_t j = local * nv + t;
        float w[kV];
        UnpackWeightVec<T>(seg, wraw, w);
        float y[kV];
#pragma unroll
        for (int v = 0; v < kV; ++v) y[v] = h[v] * inv_rms * (offset + w[v]);
        StoreVec(seg.output, j, PackVec<T>(y));
        if (has_residual) StoreVec(seg.residual_out, j, PackVec<T>(h));
      }
    } else {
      const int64_t base = local * H;
#pragma unroll
      for (int m = 0; m < kV; ++m) {
        const int64_t e = t + static_cast<int64_t>(m) * span;
        if (e < H) {
          StoreScalar<T>(seg.output, base + e, h[m] * inv_rms * (offset + WeightAt<T>(seg, e)));
          if (has_residual) StoreScalar<T>(seg.residual_out, base + e, h[m]);
        }
      }
    }
  }
  ClusterWait();
#endif
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_CLUSTER_KERNEL_CUH_
