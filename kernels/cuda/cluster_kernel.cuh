// RmsNormClusterKernel (kind kCluster, sm_90): the C CTAs of a row form a thread block cluster;
// each reads only its 1/C share of the row and pushes its partial sum of squares into every other
// CTA's shared memory with st.async, counted on the receiver's mbarrier. Internal to the CUDA
// library.
//
// Why: a launch of few rows is latency-bound: one multiprocessor moving a whole row (x, the
// weight, the output, with a residual r and residual_out) while the others idle. Split over C
// multiprocessors, each moves 1/C of the bytes. Nothing waits on a barrier after the loads: the
// one cluster barrier (each CTA's mbarrier initialized before any peer may write to it) is arrived
// at first thing and waited on only once the share is in and summed, so it overlaps the loads;
// the partials then travel one way and each CTA waits only for its own mbarrier to count them. No
// CTA reads another's shared memory and each leaves only once all writes into its own have landed,
// so no closing barrier is needed. Every CTA adds the partials in rank order, so the C CTAs of a
// row compute the same scale, bit for bit. In place is allowed: each CTA reads and writes only its
// own share.
//
// Layout: G threads per CTA; thread t holds the share's vectors first + t + k*G for k < kN.
// Preconditions (checked by the launcher): sm_90 code and device, cluster dimension C == p.ctas
// (2, 4, 8 or 16) in x, gridDim.x == rows * C, G a multiple of 32 with G * kN covering the share,
// every segment on the vector path. Rows come from the single segment or the device table.
#ifndef NORMD_KERNELS_CUDA_CLUSTER_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_CLUSTER_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/cluster_sync.cuh"
#include "kernels/cuda/kernel_limits.h"
#include "kernels/cuda/row_body.cuh"

namespace normd::cuda::internal {

// kPerWarp: each warp pushes its own sum (no block barrier before the exchange), else warp 0
// pushes the CTA's. A template flag rather than a run-time one: with both ways in one kernel
// ptxas gave the CTA's way more registers and it ran slower. The weight dtype is read from the
// segment: these launches are few blocks, not short of registers.
template <typename T, int kN, bool kResidual, bool kPerWarp>
__global__ void __launch_bounds__(kClusterMaxThreads)
    RmsNormClusterKernel(const __grid_constant__ KernelParams p) {
#if NORMD_HAVE_CLUSTERS
  constexpr int kV = kVecElems<T>;
  constexpr int kMaxWarps = kClusterMaxThreads / 32;
  constexpr WeightKind kW = WeightKind::kEither;
  __shared__ float warp_sums[kPerWarp ? 1 : kMaxWarps];
  // Slot c * S + s: sender s of CTA c, where a CTA's S senders are its warps (kPerWarp) or warp 0.
  __shared__ float partials[kMaxClusterCtas * (kPerWarp ? kMaxWarps : 1)];
  __shared__ alignas(8) uint64_t partials_in;  // counts the C * S partials' bytes

  const int ctas = p.ctas;
  const int G = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int senders = kPerWarp ? G / 32 : 1;
  const int share = ClusterCtaRank();
  const int64_t row = blockIdx.x / static_cast<unsigned>(ctas);
  const int nv = static_cast<int>(p.hidden) / kV;
  const ThreadVectors v{nv * share / ctas + t, G, nv * (share + 1) / ctas};

  if (t == 0) {
    BarrierInit(&partials_in);
    BarrierArriveExpectingBytes(&partials_in,
                                static_cast<uint32_t>(ctas * senders * sizeof(float)));
    FenceBarrierInit();
  }
  ClusterArriveRelaxed();
  GridDependencyLaunchDependents();

  RmsNormSegment seg;
  int64_t local = 0;
  bool active;
  HeldWeights<T, kN, kW> weights;
  bool weights_loaded = false;
  if (p.table == nullptr && p.weight_before_wait) {
    seg = p.single;
    local = row;
    active = row < seg.rows;
    if (active) weights.Load(seg, v);
    weights_loaded = true;
    GridDependencyWait();
  } else {
    GridDependencyWait();
    // A row in no segment (a table that does not cover the launch) still takes part in the
    // exchange, with nothing to add, so that its peers do not wait for it.
    active = ResolveRow(p, row, seg, local);
  }
  const bool has_residual = kResidual && active && seg.residual != nullptr;
  const int64_t row_base = local * nv;

  RowRegisters<T, kN, kResidual> held;
  if (active) {
    held.template Load<RowRead::kPlain>(seg, row_base, v, has_residual, 0);
    if (!weights_loaded) weights.Load(seg, v);
  } else {
    held.Clear();
  }
  const float sum_squares = held.AddSquares(0.0f);
  // round(h) needs no scale: stored now, its drain overlaps the exchange below. Each thread stores
  // only vectors it has already read, so in place stays safe.
  if (has_residual) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (!v.Has(k)) continue;
      float h[kV];
      held.Values(k, h);
      RowVectors(seg.residual_out, row_base)[v.At(k)] = PackVec<T>(h);
    }
  }

  // Either way every thread of every CTA adds the same values in the same order.
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
  if (!active) return;
  StoreRow(seg, row_base, v, held, weights, InvRms(total, p.hidden, seg.eps),
           /*store_residual=*/false);
#else
  // Compiled for an architecture without clusters: the launcher must never pick this kernel
  // there; if it does, fail loudly rather than leave the outputs unwritten.
  __trap();
#endif
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_CLUSTER_KERNEL_CUH_
