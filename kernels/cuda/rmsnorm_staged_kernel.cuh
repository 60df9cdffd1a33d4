// RmsNormStagedKernel: the throughput kernel for one segment of many rows (sm_90). Internal to the
// CUDA library (included by rmsnorm_cuda.cu and, for its constants, kernel_shapes.cu).
//
// Why: the row kernel (rmsnorm_kernels.cuh) holds a row in registers, so a multiprocessor has loads
// in flight only for the rows whose groups are still loading; while a group reduces and stores,
// its share of the memory pipe is idle, and registers cap the rows resident (one 512-thread row per
// multiprocessor for 16-bit H = 16384 with a residual). Here one persistent block per
// multiprocessor streams tiles of R whole rows through a ring of S shared-memory stages, filled by
// the copy engine (bulk copies, bulk_copy.cuh): while the threads normalize the tile of one stage,
// the next S - 1 tiles are already on their way. Each input byte is still read from device memory
// once; the threads read it twice from shared memory (sum of squares, then the output).
//
// Layout: a tile is R consecutive rows (contiguous in memory, so one copy per tensor); a stage
// holds the tile of x, then (with a residual) the tile of r. Row group g (G threads) of the block
// owns row g of every tile; thread t of the group handles vectors t, t + G, ... (kN of them at
// most) of its row, and keeps the weights of those vectors in registers for the whole launch.
// Tiles go to blocks round robin (tile b, b + gridDim.x, ...); stage s of a block holds its tiles
// s, s + S, ..., so the stage's barrier completes once per use and its parity flips each round.
//
// Preconditions (checked by the launcher): one segment passed by value, every pointer 16-byte
// aligned, H * sizeof(T) a multiple of 16, the residual present iff kResidual, blockDim.x == R * G,
// dynamic shared memory of S stages.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_STAGED_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_STAGED_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/vec_io.cuh"

namespace normd::cuda::internal {

inline constexpr int kMaxStages = 8;

// h of vector j of a row held in shared memory: x, plus r when there is a residual.
template <typename T, bool kResidual>
__device__ __forceinline__ void SharedRowValues(const uint4* x_row, const uint4* r_row, int64_t j,
                                                float (&h)[kVecElems<T>]) {
  UnpackVec<T>(x_row[j], h);
  if constexpr (kResidual) {
    float r[kVecElems<T>];
    UnpackVec<T>(r_row[j], r);
#pragma unroll
    for (int v = 0; v < kVecElems<T>; ++v) h[v] += r[v];
  }
}

template <typename T, int kN, bool kResidual, WeightKind kW>
__global__ void __launch_bounds__(kMaxBlockThreads, 1)
    RmsNormStagedKernel(const __grid_constant__ KernelParams p) {
#if NORMD_HAVE_BULK_COPY
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, kW>;
  extern __shared__ __align__(128) unsigned char stages[];
  __shared__ uint64_t tile_landed[kMaxStages];
  __shared__ float warp_sums[kMaxBlockThreads / 32];

  const RmsNormSegment& seg = p.single;
  const int G = p.threads_per_row;
  const int R = p.rows_per_block;  // rows per tile
  const int S = p.stages;
  const int group = static_cast<int>(threadIdx.x) / G;
  const int t = static_cast<int>(threadIdx.x) - group * G;
  const int64_t H = p.hidden;
  const int64_t nv = H / kV;
  const uint32_t row_bytes = static_cast<uint32_t>(H * static_cast<int64_t>(sizeof(T)));
  const uint32_t tile_bytes = static_cast<uint32_t>(R) * row_bytes;
  const uint32_t stage_bytes = kResidual ? 2 * tile_bytes : tile_bytes;
  const int64_t tiles = (seg.rows + R - 1) / R;

  GridDependencyLaunchDependents();

  // Tile `tile` into stage `s`: one arrival announcing its bytes, then the copies.
  auto fill_stage = [&](int s, int64_t tile) {
    const int64_t first_row = tile * R;
    const int64_t rows_here = seg.rows - first_row < R ? seg.rows - first_row : R;
    const uint32_t bytes = static_cast<uint32_t>(rows_here) * row_bytes;
    const int64_t offset = first_row * static_cast<int64_t>(row_bytes);
    unsigned char* stage = stages + static_cast<size_t>(s) * stage_bytes;
    BarrierArriveExpectingBytes(&tile_landed[s], kResidual ? 2 * bytes : bytes);
    BulkCopyToShared(stage, static_cast<const unsigned char*>(seg.input) + offset, bytes,
                     &tile_landed[s]);
    if constexpr (kResidual) {
      BulkCopyToShared(stage + tile_bytes, static_cast<const unsigned char*>(seg.residual) + offset,
                       bytes, &tile_landed[s]);
    }
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) BarrierInit(&tile_landed[s]);
    FenceBarrierInit();
  }
  __syncthreads();

  uint4 wraw[kN][kWV];
  if (p.weight_before_wait) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * G;
      if (j < nv) LoadWeightVec<T, kW>(seg, j, wraw[k]);
    }
  }
  GridDependencyWait();
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      const int64_t tile = blockIdx.x + static_cast<int64_t>(s) * gridDim.x;
      if (tile < tiles) fill_stage(s, tile);
    }
  }
  if (!p.weight_before_wait) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * G;
      if (j < nv) LoadWeightVec<T, kW>(seg, j, wraw[k]);
    }
  }
  const float offset = seg.weight_offset;

  int s = 0;
  uint32_t parity = 0;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    BarrierWait(&tile_landed[s], parity);
    const int64_t row = tile * R + group;
    const bool active = row < seg.rows;
    const unsigned char* stage = stages + static_cast<size_t>(s) * stage_bytes;
    const uint4* x_row =
        reinterpret_cast<const uint4*>(stage + static_cast<size_t>(group) * row_bytes);
    const uint4* r_row =
        reinterpret_cast<const uint4*>(stage + tile_bytes + static_cast<size_t>(group) * row_bytes);
    float sum_squares = 0.0f;
    if (active) {
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * G;
        if (j < nv) {
          float h[kV];
          SharedRowValues<T, kResidual>(x_row, r_row, j, h);
#pragma unroll
          for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[v], h[v], sum_squares);
        }
      }
    }
    const float total = GroupSum(sum_squares, G, warp_sums);
    if (active) {
      const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(H) + seg.eps);
      const int64_t base = row * nv;
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * G;
        if (j < nv) {
          float h[kV];
          SharedRowValues<T, kResidual>(x_row, r_row, j, h);
          float w[kV];
          UnpackWeightVec<T, kW>(seg, wraw[k], w);
          float y[kV];
#pragma unroll
          for (int v = 0; v < kV; ++v) y[v] = h[v] * inv_rms * (offset + w[v]);
          StoreVec(seg.output, base + j, PackVec<T>(y));
          if constexpr (kResidual) StoreVec(seg.residual_out, base + j, PackVec<T>(h));
        }
      }
    }
    // Every thread is done with this stage (and with warp_sums) before it is refilled.
    __syncthreads();
    if (threadIdx.x == 0) {
      const int64_t next = tile + static_cast<int64_t>(S) * gridDim.x;
      if (next < tiles) {
        FenceBeforeBulkWrite();
        fill_stage(s, next);
      }
    }
    if (++s == S) {
      s = 0;
      parity ^= 1u;
    }
  }
#endif  // NORMD_HAVE_BULK_COPY
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_STAGED_KERNEL_CUH_
