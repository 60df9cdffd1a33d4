// RmsNormSharedSumKernel: the split-row kernel's alternative (RmsNormOptions::split_share_sums),
// where the C CTAs of a row share their partial sums through global memory instead of each reading
// the whole row. Internal to the CUDA library (included by rmsnorm_cuda.cu).
//
// Why: the split-row kernel (rmsnorm_split_row_kernel.cuh) spreads a row's stores over C
// multiprocessors, but each of them still reads all of x (and r): a fused row of 7168 bf16 elements
// is 28 KB into every multiprocessor, ~0.35 us at the ~13 ns per KB that small launches pay
// (docs/KERNELS.md "v11"). Here CTA c reads only its 1/C share, sums its squares, and publishes the
// partial sum in its row's SplitRowExchange; each CTA waits until all C have arrived (a release
// add and acquire loads at device scope, i.e. through L2), adds the C partials in share order (so
// all C get the same total, bit for bit), and normalizes its share. v7's cluster did the same with
// a cluster barrier and a distributed-shared-memory read (~0.45 us); this trades that for one L2
// round trip each way.
//
// Waiting for other CTAs is safe only if all C CTAs of a row can be resident at once: the launcher
// uses it for launches of at most kSplitMaxCtas (32) CTAs of <= 512 threads, far fewer than one
// wave. A CTA touches the exchange only after griddepcontrol.wait, so the previous launch in the
// stream has finished with it; the last CTA of a row to leave resets the row's counters for the
// next launch. Launches that may run at the same time must use different exchanges.
//
// Layout: G threads; thread t holds the share's vectors first + t + k*G for k < kN (G*kN covering
// the share). Preconditions (checked by the launcher): one segment passed by value, vector path,
// gridDim.x == rows * C with C == p.split_ctas, p.exchange holding >= rows entries in their reset
// state. In place is allowed: each CTA reads and writes only its own share.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_SHARED_SUM_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_SHARED_SUM_KERNEL_CUH_

#include <cuda/atomic>

#include <cstdint>

#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/rmsnorm_split_row_kernel.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

template <typename T, int kN, bool kResidual>
__global__ void __launch_bounds__(kMaxBlockThreads)
    RmsNormSharedSumKernel(const __grid_constant__ KernelParams p) {
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, WeightKind::kEither>;
  constexpr int kR = kResidual ? kN : 1;
  __shared__ float warp_sums[kMaxBlockThreads / 32];
  __shared__ float row_total;

  const int ctas = p.split_ctas;
  const int G = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const int share = static_cast<int>(blockIdx.x % static_cast<unsigned>(ctas));
  const int64_t row = blockIdx.x / static_cast<unsigned>(ctas);
  const RmsNormSegment& seg = p.single;
  const int64_t nv = p.hidden / kV;
  const int64_t first = nv * share / ctas;      // this CTA's share of the row's vectors
  const int64_t end = nv * (share + 1) / ctas;  // (exclusive)
  const int64_t base = row * nv;
  auto vec = [&](int k) { return first + t + static_cast<int64_t>(k) * G; };

  GridDependencyLaunchDependents();

  uint4 wraw[kN][kWV];
  if (p.weight_before_wait) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (vec(k) < end) LoadWeightVec<T>(seg, vec(k), wraw[k]);
    }
  }
  GridDependencyWait();
  // The tag the previous launch left in this CTA's word (only this CTA writes it in this launch,
  // and the previous launch has finished): loaded now, while the row comes in.
  using Word = ::cuda::atomic_ref<unsigned long long, ::cuda::thread_scope_device>;
  unsigned long long* words = p.exchange[row].word;
  const unsigned long long previous =
      t == 0 ? Word(words[share]).load(::cuda::memory_order_relaxed) : 0ull;

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
  }
  const float partial = BlockSumInWarp0(sum_squares, G, warp_sums);
  if (t == 0) {
    const unsigned tag = static_cast<unsigned>(previous >> 32) + 1u;
    const unsigned long long mine =
        (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(partial);
    for (int w = share; w < kMaxSplitCtas; w += ctas) Word(words[w]).store(mine, ::cuda::memory_order_relaxed);
    // All C words at once, until every one carries this launch's tag; added in share order.
    float total;
    bool ready;
    do {
      total = 0.0f;
      ready = true;
#pragma unroll
      for (int c = 0; c < kMaxSplitCtas; ++c) {
        if (c < ctas) {
          const unsigned long long word = Word(words[c]).load(::cuda::memory_order_relaxed);
          ready &= static_cast<unsigned>(word >> 32) == tag;
          total += __uint_as_float(static_cast<unsigned>(word));
        }
      }
    } while (!ready);
    row_total = total;
  }
  __syncthreads();

  const float inv_rms = 1.0f / sqrtf(row_total / static_cast<float>(p.hidden) + seg.eps);
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
    if constexpr (kResidual) StoreVec(seg.residual_out, base + vec(k), PackVec<T>(h));
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_SHARED_SUM_KERNEL_CUH_
