// RmsNormSplitPushKernel: the latency kernel (sm_90) for launches of up to 128 rows that move more
// than 16 KB each, and of any H past 16384 (RmsNormOptions::split_push; the rule is
// ChosenPushShape in kernel_shapes.cu). The C CTAs of a row form a thread block cluster; each reads
// only its 1/C share of the row and pushes its partial sum of squares into every other CTA's
// shared memory with st.async, counted on the receiver's mbarrier. Internal to the CUDA library
// (included by rmsnorm_cuda.cu).
//
// Why: the split-row kernel (rmsnorm_split_row_kernel.cuh) has every CTA of a row read the whole
// row (a fused bf16 row of 7168 is 28 KB into each multiprocessor, ~0.2-0.35 us), because the
// ways of sharing partial sums measured before cost more: v7's cluster kernel (a cluster barrier
// after the reduction, then a distributed-shared-memory read, then a second barrier before exit:
// ~0.45 us with PDL) and L2 (~0.5 us, docs/KERNELS.md "v11" item 7). Here nothing waits on a
// barrier after the loads: the one cluster barrier (each CTA's mbarrier initialized before any
// peer may write to it) is arrived at first thing and waited on only after the row is in and
// summed, so it overlaps the loads; the partials then travel one way, CTA to CTA, and each CTA
// waits only for its own mbarrier to count C * 4 bytes. No CTA reads another's shared memory and
// each leaves only once all writes into its own have landed, so no closing barrier is needed.
// Measured (docs/KERNELS.md "v12"): the cluster launch itself costs nothing measurable with PDL
// (the split-row kernel launched in clusters ran within +-0.03 us of itself), and bf16 fused
// 1 x 7168 took 1.41-1.43 us against the split-row kernel's 1.66-1.69.
//
// Every CTA adds the C partials in rank order (slot c holds CTA c's), so the C CTAs of a row
// compute the same scale, bit for bit. In place is allowed: each CTA reads and writes only its
// own share.
//
// Layout: G threads; thread t holds the share's vectors first + t + k*G for k < kN (G*kN covering
// the share). Preconditions (checked by the launcher): sm_90, launched with cluster dimension C ==
// p.split_ctas (2, 4, 8 or 16) in x, gridDim.x == rows * C, blockDim.x == G a multiple of 32 with
// G * kN covering the share, one segment passed by value, vector path.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_SPLIT_PUSH_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_SPLIT_PUSH_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/rmsnorm_cluster_kernel.cuh"
#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

// The most CTAs per row: clusters past 8 (kMaxClusterCtas, the portable size) are allowed on the
// H100/H200 once the kernel opts in (cudaFuncAttributeNonPortableClusterSizeAllowed, set by the
// launcher), and 16 halves again the bytes each CTA moves for few long rows.
inline constexpr int kMaxPushCtas = 16;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The cluster barrier's arrive without release semantics: enough after fence.mbarrier_init, which
// is the only thing the peers must see before they write into this CTA (CUTLASS's pattern).
__device__ __forceinline__ void ClusterArriveRelaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// Writes `value` into the float at `local`'s shared-memory offset in CTA `rank` of this cluster,
// and counts its 4 bytes on that CTA's mbarrier at `barrier`'s offset.
__device__ __forceinline__ void PushToClusterShared(const float* local, const uint64_t* barrier,
                                                    int rank, float value) {
  uint32_t remote_value;
  uint32_t remote_barrier;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote_value)
               : "r"(SharedAddress(local)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote_barrier)
               : "r"(SharedAddress(barrier)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   remote_value),
               "r"(__float_as_uint(value)), "r"(remote_barrier)
               : "memory");
}

// Waits for phase 0 of this CTA's `barrier`, acquiring at cluster scope what the peers' st.async
// wrote (their complete_tx releases at cluster scope).
__device__ __forceinline__ void ClusterBarrierWaitPhase0(uint64_t* barrier) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 complete, [%1], 0;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(SharedAddress(barrier))
        : "memory");
  }
}
#endif

// kPerWarp: each warp pushes its own sum (KernelShape::push_per_warp), else the CTA's. A template
// flag rather than a run-time one: with both ways in one kernel, ptxas gave the CTA's way up to 12
// more registers and it ran up to 1.35x slower (call perwarp).
template <typename T, int kN, bool kResidual, bool kPerWarp = false>
__global__ void __launch_bounds__(kMaxBlockThreads)
    RmsNormSplitPushKernel(const __grid_constant__ KernelParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, WeightKind::kEither>;
  constexpr int kR = kResidual ? kN : 1;
  constexpr int kMaxWarps = kMaxBlockThreads / 32;
  __shared__ float warp_sums[kPerWarp ? 1 : kMaxWarps];
  // Slot c * S + s: sender s of CTA c, where a CTA's S senders are its warps (kPerWarp) or warp 0.
  __shared__ float partials[kMaxPushCtas * (kPerWarp ? kMaxWarps : 1)];
  __shared__ alignas(8) uint64_t partials_in;  // counts the C * S partials' bytes

  const int ctas = p.split_ctas;
  const int G = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int senders = kPerWarp ? G / 32 : 1;
  const int share = ClusterCtaRank();
  const int64_t row = blockIdx.x / static_cast<unsigned>(ctas);
  const RmsNormSegment& seg = p.single;
  const int64_t nv = p.hidden / kV;
  const int64_t first = nv * share / ctas;      // this CTA's share of the row's vectors
  const int64_t end = nv * (share + 1) / ctas;  // (exclusive)
  const int64_t base = row * nv;
  auto vec = [&](int k) { return first + t + static_cast<int64_t>(k) * G; };

  if (t == 0) {
    BarrierInit(&partials_in);
    BarrierArriveExpectingBytes(&partials_in,
                                static_cast<uint32_t>(ctas * senders * sizeof(float)));
    FenceBarrierInit();
  }
  ClusterArriveRelaxed();
  GridDependencyLaunchDependents();

  uint4 wraw[kN][kWV];
  if (p.weight_before_wait) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (vec(k) < end) LoadWeightVec<T>(seg, vec(k), wraw[k]);
    }
  }
  GridDependencyWait();

  uint4 xraw[kN];
  uint4 rraw[kR];
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < kN; ++k) xraw[k] = vec(k) < end ? LoadVec(seg.input, base + vec(k)) : zero;
#pragma unroll
  for (int k = 0; k < kR; ++k) {
    rraw[k] = kResidual && vec(k) < end ? LoadVec(seg.residual, base + vec(k)) : zero;
  }
  if (!p.weight_before_wait) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (vec(k) < end) LoadWeightVec<T>(seg, vec(k), wraw[k]);
    }
  }

  float sum_squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    float h[kV];
    RowVecValues<T, kResidual>(xraw[k], rraw[kResidual ? k : 0], h);
#pragma unroll
    for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[v], h[v], sum_squares);
    // round(h) needs no scale: stored now, its drain overlaps the exchange below. Each thread
    // stores only the vectors it has already read, so in place stays safe.
    if constexpr (kResidual) {
      if (vec(k) < end) StoreVec(seg.residual_out, base + vec(k), PackVec<T>(h));
    }
  }
  // Per warp: each warp pushes its own sum, with no block barrier and no second reduction before
  // the exchange, and every warp adds the C * W slots (lane i the slots i, i + 32, ..., then the
  // butterfly). Else warp 0 pushes the block's sum and every thread adds the C slots in order.
  // Either way every thread of every CTA adds the same values in the same order, so the C CTAs of
  // a row compute the same scale, bit for bit.
  float total = 0.0f;
  if constexpr (kPerWarp) {
    const int lane = t % 32;
    const float partial = WarpSum(sum_squares);  // every lane has it
    ClusterWait();                               // every peer's mbarrier is initialized
    if (lane < ctas) {
      PushToClusterShared(&partials[share * senders + t / 32], &partials_in, lane, partial);
    }
    ClusterBarrierWaitPhase0(&partials_in);
    for (int i = lane; i < ctas * senders; i += 32) total += partials[i];
    total = WarpSum(total);
  } else {
    const float partial = BlockSumInWarp0(sum_squares, G, warp_sums);  // all of warp 0 has it
    ClusterWait();  // every peer's mbarrier is initialized
    if (t < ctas) PushToClusterShared(&partials[share], &partials_in, t, partial);
    ClusterBarrierWaitPhase0(&partials_in);
    for (int c = 0; c < ctas; ++c) total += partials[c];
  }

  const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(p.hidden) + seg.eps);
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    if (vec(k) >= end) continue;
    float h[kV];
    RowVecValues<T, kResidual>(xraw[k], rraw[kResidual ? k : 0], h);
    float w[kV];
    UnpackWeightVec<T>(seg, wraw[k], w);
    float y[kV];
#pragma unroll
    for (int v = 0; v < kV; ++v) y[v] = h[v] * inv_rms * (seg.weight_offset + w[v]);
    StoreVec(seg.output, base + vec(k), PackVec<T>(y));
  }
#endif
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_SPLIT_PUSH_KERNEL_CUH_
