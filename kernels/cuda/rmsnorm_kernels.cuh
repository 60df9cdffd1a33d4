// The RMSNorm kernels. Internal to the CUDA library (included by rmsnorm_cuda.cu and, for its
// constants, kernel_shapes.cu).
//
// The register kernel and the helpers every RMSNorm kernel shares (one math, kernels/rmsnorm.h).
// The others: the two-pass kernel for rows past 16384 and the lean variant
// (rmsnorm_two_pass_kernel.cuh), the staged kernel for large single-segment launches on sm_90
// (rmsnorm_staged_kernel.cuh), the cluster kernel for launches of few long rows on sm_90
// (rmsnorm_cluster_kernel.cuh).
//  - RmsNormRowKernel<T, kN>: a group of G threads owns one row and keeps it in registers, so each
//    input element is read from device memory once. Thread t of the group holds kN 16-byte vectors,
//    at vector indices t, t + G, ..., t + (kN-1)G. G is a power of two up to 32 (several rows per
//    warp) or a multiple of 32 up to 512 (a block of several warps per row). Used for H <= 16384.
//
// Vector or scalar access is decided per segment at run time: 16-byte accesses only when every
// pointer of the segment is 16-byte aligned and a row is a whole number of vectors; otherwise
// element accesses (coalesced, never misaligned). Rows are resolved to segments by binary search of
// the device table (first_row ascending), or come from the single segment passed by value. Indexing
// is 64-bit.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_KERNELS_CUH_
#define NORMD_KERNELS_CUDA_RMSNORM_KERNELS_CUH_

#include <cstdint>

#include "kernels/cuda/vec_io.cuh"
#include "kernels/rmsnorm.h"

namespace normd::cuda::internal {

inline constexpr int kMaxBlockThreads = 512;

struct KernelParams {
  RmsNormSegment single;        // the segment when table is null; its row r is launch row r
  const RmsNormSegment* table;  // device-resident segment table, or null
  int64_t hidden;
  int64_t total_rows;
  int32_t num_segments;
  int32_t threads_per_row;  // G
  int32_t rows_per_block;
  int32_t weight_before_wait;  // single segment only: read the weight before griddepcontrol.wait
  int32_t stages;              // RmsNormStagedKernel only: shared-memory stages per block
  // RmsNormRowKernel with late weights, single segment, vector path: copy the row's weight into
  // dynamic shared memory at the start (see RmsNormOptions::weights_through_shared).
  int32_t shared_weights;
  int32_t split_ctas;  // RmsNormSplitRowKernel and RmsNormSplitPushKernel: CTAs per row (C)
};

// Finds the segment and the segment-local row of launch row `row`. False for rows past the end or
// in no segment. Reads the table only after the grid dependency is resolved (the caller waits
// first).
__device__ __forceinline__ bool ResolveRow(const KernelParams& p, int64_t row, RmsNormSegment& seg,
                                           int64_t& local) {
  if (row >= p.total_rows) return false;
  if (p.table == nullptr) {
    seg = p.single;
    local = row;
    return row < seg.rows;
  }
  int lo = 0;
  int hi = p.num_segments - 1;
  while (lo < hi) {  // the last segment whose first_row <= row
    const int mid = (lo + hi + 1) >> 1;
    if (__ldg(&p.table[mid].first_row) <= row) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  seg = p.table[lo];
  local = row - seg.first_row;
  return local >= 0 && local < seg.rows;
}

template <typename T>
__host__ __device__ __forceinline__ bool CanVectorize(const RmsNormSegment& s, int64_t hidden) {
  return (hidden * static_cast<int64_t>(sizeof(T))) % 16 == 0 && Aligned16(s.input) &&
         Aligned16(s.output) && Aligned16(s.weight) &&
         (s.residual == nullptr || (Aligned16(s.residual) && Aligned16(s.residual_out)));
}

// Sum of v over the 32 lanes of this thread's warp, in a fixed order (every lane gets it).
__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

// Sum of v over the G threads of this thread's row group. Every thread of the block must call it
// (it may hold a barrier). The order of additions is fixed, so results do not depend on timing.
__device__ __forceinline__ float GroupSum(float v, int group_threads, float* warp_sums) {
  if (group_threads <= 32) {
    for (int offset = group_threads >> 1; offset > 0; offset >>= 1) {
      v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
    }
    return v;
  }
  v = WarpSum(v);
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  if ((threadIdx.x & 31) == 0) warp_sums[warp] = v;
  __syncthreads();
  const int warps_per_group = group_threads >> 5;
  const int first = (warp / warps_per_group) * warps_per_group;
  float total = 0.0f;
  for (int i = 0; i < warps_per_group; ++i) total += warp_sums[first + i];
  return total;
}

// Sum of v over a block of `block_threads` (a multiple of 32) working on one row, in a fixed order:
// each warp sums its lanes, then warp 0 sums the warps' sums. Only warp 0 gets the total (the
// others get 0). Every thread of the block must call it (it holds a barrier).
__device__ __forceinline__ float BlockSumInWarp0(float v, int block_threads, float* warp_sums) {
  v = WarpSum(v);
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp != 0) return 0.0f;
  return WarpSum(lane < (block_threads >> 5) ? warp_sums[lane] : 0.0f);
}

// What the kernel knows of the weights' dtype when it is compiled. kEither: fp32 or the input's
// dtype, read from the segment at run time (batched launches, whose segments may differ), with room
// for fp32 weights in registers. kLikeInput: the input's dtype, known by the launcher: for 16-bit
// inputs half the weight registers, which the register-capped throughput kernels need (fp16
// spilled).
enum class WeightKind { kEither, kLikeInput };

template <typename T, WeightKind kW>
inline constexpr int kWeightVecs = kW == WeightKind::kLikeInput ? 1 : kFp32WeightVecs<T>;

template <WeightKind kW>
__device__ __forceinline__ bool WeightsAreFp32(const RmsNormSegment& s) {
  return kW == WeightKind::kEither && s.weight_dtype == DType::kFloat32;
}

// Weight vector j of a row (the weights for elements j*kV .. j*kV + kV-1), raw.
template <typename T, WeightKind kW = WeightKind::kEither>
__device__ __forceinline__ void LoadWeightVec(const RmsNormSegment& s, int64_t j,
                                              uint4 (&raw)[kWeightVecs<T, kW>]) {
  if (WeightsAreFp32<kW>(s)) {
#pragma unroll
    for (int q = 0; q < kWeightVecs<T, kW>; ++q)
      raw[q] = LoadVecReadOnly(s.weight, j * kWeightVecs<T, kW> + q);
  } else {
    raw[0] = LoadVecReadOnly(s.weight, j);
  }
}

// Starts copying the whole row's weight of segment s (vector path) into `shared`, the block's
// threads sharing the vectors; in the same layout as in global memory.
template <typename T, WeightKind kW>
__device__ __forceinline__ void CopyWeightsToShared(const RmsNormSegment& s, int64_t row_vectors,
                                                    uint4* shared) {
  const int64_t count = row_vectors * (WeightsAreFp32<kW>(s) ? kWeightVecs<T, kW> : 1);
  const uint4* weight = static_cast<const uint4*>(s.weight);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    CopyAsync16ToShared(shared + i, weight + i);
  CopyAsyncCommit();
}

// Weight vector j of a row from CopyWeightsToShared's copy.
template <typename T, WeightKind kW>
__device__ __forceinline__ void SharedWeightVec(const RmsNormSegment& s, const uint4* shared,
                                                int64_t j, uint4 (&raw)[kWeightVecs<T, kW>]) {
  if (WeightsAreFp32<kW>(s)) {
#pragma unroll
    for (int q = 0; q < kWeightVecs<T, kW>; ++q) raw[q] = shared[j * kWeightVecs<T, kW> + q];
  } else {
    raw[0] = shared[j];
  }
}

template <typename T, WeightKind kW = WeightKind::kEither>
__device__ __forceinline__ void UnpackWeightVec(const RmsNormSegment& s,
                                                const uint4 (&raw)[kWeightVecs<T, kW>],
                                                float (&w)[kVecElems<T>]) {
  if (WeightsAreFp32<kW>(s)) {
#pragma unroll
    for (int q = 0; q < kWeightVecs<T, kW>; ++q) {
      w[4 * q + 0] = __uint_as_float(raw[q].x);
      w[4 * q + 1] = __uint_as_float(raw[q].y);
      w[4 * q + 2] = __uint_as_float(raw[q].z);
      w[4 * q + 3] = __uint_as_float(raw[q].w);
    }
  } else {
    UnpackVec<T>(raw[0], w);
  }
}

template <typename T, WeightKind kW = WeightKind::kEither>
__device__ __forceinline__ float WeightAt(const RmsNormSegment& s, int64_t i) {
  return WeightsAreFp32<kW>(s) ? __ldg(static_cast<const float*>(s.weight) + i)
                               : LoadScalar<T>(s.weight, i);
}

// Hides a value from the optimizer: it must stay in registers as is and cannot be reused from an
// earlier computation.
__device__ __forceinline__ void OpaqueRegisters(uint4& v) {
  asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w));
}

// h of one vector slot for the output: the kept floats (residual kernels) or the raw x converted
// again.
template <typename T, bool kResidual>
__device__ __forceinline__ void RowValues(const uint4& xraw, const float (&kept)[kVecElems<T>],
                                          float (&h)[kVecElems<T>]) {
  if constexpr (kResidual) {
#pragma unroll
    for (int v = 0; v < kVecElems<T>; ++v) h[v] = kept[v];
  } else {
    UnpackVec<T>(xraw, h);
  }
}

// h for one vector of the row: x, or x + r unrounded with a residual, from the raw vectors.
template <typename T, bool kResidual>
__device__ __forceinline__ void RowVecValues(const uint4& xraw, const uint4& rraw,
                                             float (&h)[kVecElems<T>]) {
  UnpackVec<T>(xraw, h);
  if constexpr (kResidual) {
    float r[kVecElems<T>];
    UnpackVec<T>(rraw, r);
#pragma unroll
    for (int v = 0; v < kVecElems<T>; ++v) h[v] += r[v];
  }
}

// Element m (0 <= m < kVecElems<T>) of a raw 16-byte vector, as bits, placed by an element load.
template <typename T, int kM>
__device__ __forceinline__ void SetElementBits(uint4& raw, uint32_t bits) {
  constexpr int kPerWord = kVecElems<T> / 4;
  constexpr int kShift = 16 * (kM % kPerWord) * (kPerWord - 1);
  uint32_t* words = reinterpret_cast<uint32_t*>(&raw);
  words[kM / kPerWord] |= bits << kShift;
}

template <typename T>
__device__ __forceinline__ uint32_t LoadBits(const void* base, int64_t i) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<const uint32_t*>(base)[i];
  } else {
    return static_cast<const uint16_t*>(base)[i];
  }
}

// Fills raw[k] with the element-path elements t + (k*kV + m)*G of a row (zero past the end).
template <typename T, int kN, int kM = 0>
__device__ __forceinline__ void LoadElements(const void* row_base, int64_t hidden, int t, int G,
                                             int k, uint4& raw) {
  if constexpr (kM < kVecElems<T>) {
    const int64_t e = t + static_cast<int64_t>(k * kVecElems<T> + kM) * G;
    if (e < hidden) SetElementBits<T, kM>(raw, LoadBits<T>(row_base, e));
    LoadElements<T, kN, kM + 1>(row_base, hidden, t, G, k, raw);
  }
}

// Plain, throughput-bound kernels of up to 4 vectors per thread are capped at 64 registers (2
// blocks of 512 per multiprocessor): ptxas then spills 12-40 bytes (to L1) but twice the rows are
// in flight, which is what a memory-bound kernel needs. The others keep up to 128 (they spill far
// more at 64).
template <int kN, bool kEarlyWeights, bool kResidual>
inline constexpr int kRowMinBlocks = (!kResidual && !kEarlyWeights && kN <= 4) ? 2 : 1;

// kEarlyWeights: load the weights with the row, before the reduction (latency-bound launches of few
// blocks), or after it (throughput-bound launches: fewer live registers, more rows in flight).
// kResidual: the launch may carry residuals (per segment, checked at run time); without it the
// kernel keeps half the registers live. The row is held raw (as loaded) and converted twice:
// converting is cheaper than the registers of a float copy, which would cut the rows in flight per
// multiprocessor.
// kW: see WeightKind.
template <typename T, int kN, bool kEarlyWeights, bool kResidual,
          WeightKind kW = WeightKind::kEither>
__global__ void __launch_bounds__(kMaxBlockThreads, kRowMinBlocks<kN, kEarlyWeights, kResidual>)
    RmsNormRowKernel(const __grid_constant__ KernelParams p) {
  constexpr int kV = kVecElems<T>;
  constexpr int kWV = kWeightVecs<T, kW>;
  constexpr int kR = kResidual ? kN : 1;
  __shared__ float warp_sums[kMaxBlockThreads / 32];

  const int G = p.threads_per_row;
  const int group = static_cast<int>(threadIdx.x) / G;
  const int t = static_cast<int>(threadIdx.x) - group * G;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * p.rows_per_block + group;
  const int64_t H = p.hidden;
  const int64_t nv = H / kV;  // vectors per row (vector path only)

  // The next kernel may begin its prologue now; its own wait still covers all of this grid's
  // writes.
  GridDependencyLaunchDependents();

  RmsNormSegment seg;
  int64_t local = 0;
  uint4 wraw[kN][kWV];
  bool weights_loaded = false;
  bool active;
  bool vec;
  // Late weights of one segment on the vector path (the launcher checks): the block copies the
  // row's weight into shared memory while the rows load, so that reading it after the reduction
  // costs no L2 round trip, and no registers are held meanwhile.
  extern __shared__ uint4 shared_weight[];
  const bool weights_to_shared = !kEarlyWeights && p.shared_weights;
  if ((kEarlyWeights || weights_to_shared) && p.table == nullptr && p.weight_before_wait) {
    active = ResolveRow(p, row, seg, local);
    vec = active && CanVectorize<T>(seg, H);
    if (weights_to_shared) {
      CopyWeightsToShared<T, kW>(p.single, nv, shared_weight);
    } else if (vec) {
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * G;
        if (j < nv) LoadWeightVec<T, kW>(seg, j, wraw[k]);
      }
      weights_loaded = true;
    }
    GridDependencyWait();
  } else {
    GridDependencyWait();
    if (weights_to_shared) CopyWeightsToShared<T, kW>(p.single, nv, shared_weight);
    active = ResolveRow(p, row, seg, local);
    vec = active && CanVectorize<T>(seg, H);
  }
  const bool has_residual = kResidual && active && seg.residual != nullptr;

  uint4 xraw[kN];
  uint4 rraw[kR];
#pragma unroll
  for (int k = 0; k < kN; ++k) xraw[k] = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < kR; ++k) rraw[k] = make_uint4(0, 0, 0, 0);
  if (vec) {
    const int64_t base = local * nv;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * G;
      if (j < nv) xraw[k] = LoadVec(seg.input, base + j);
    }
    if (has_residual) {
#pragma unroll
      for (int k = 0; k < kR; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * G;
        if (j < nv) rraw[k] = LoadVec(seg.residual, base + j);
      }
    }
    if (kEarlyWeights && !weights_loaded) {
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const int64_t j = t + static_cast<int64_t>(k) * G;
        if (j < nv) LoadWeightVec<T, kW>(seg, j, wraw[k]);
      }
    }
  }

  // With a residual, h = x + r is kept as floats (as many registers as raw x and r for 16-bit
  // types, half of them for fp32, and no second conversion); without, the raw x is kept. Unused
  // slots hold zeros, which add nothing.
  float hf[kResidual ? kN : 1][kV];
  float sum_squares = 0.0f;
  if constexpr (kResidual) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      UnpackVec<T>(xraw[k], hf[k]);
      if (has_residual) {
        float r[kV];
        UnpackVec<T>(rraw[k], r);
#pragma unroll
        for (int v = 0; v < kV; ++v) hf[k][v] += r[v];
      }
    }
    if (active && !vec) {
      // Element path: element e = t + (k*kV + m)*G, so a warp touches consecutive elements.
      const int64_t base = local * H;
#pragma unroll
      for (int k = 0; k < kN; ++k) {
#pragma unroll
        for (int v = 0; v < kV; ++v) {
          const int64_t e = t + static_cast<int64_t>(k * kV + v) * G;
          float x = 0.0f;
          if (e < H) {
            x = LoadScalar<T>(seg.input, base + e);
            if (has_residual) x += LoadScalar<T>(seg.residual, base + e);
          }
          hf[k][v] = x;
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kN; ++k) {
#pragma unroll
      for (int v = 0; v < kV; ++v) sum_squares = fmaf(hf[k][v], hf[k][v], sum_squares);
    }
  } else {
    if (active && !vec) {
      // Element path, elements placed in the raw vectors as a vector load would.
      const unsigned char* x_row =
          static_cast<const unsigned char*>(seg.input) + local * H * sizeof(T);
#pragma unroll
      for (int k = 0; k < kN; ++k) LoadElements<T, kN>(x_row, H, t, G, k, xraw[k]);
    }
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      float h[kV];
      UnpackVec<T>(xraw[k], h);
#pragma unroll
      for (int v = 0; v < kV; ++v) sum_squares = fmaf(h[v], h[v], sum_squares);
    }
  }

  const float total = GroupSum(sum_squares, G, warp_sums);
  if (weights_to_shared) {  // every thread's copies done, then visible to the block
    CopyAsyncWaitAll();
    __syncthreads();
  }
  if (!active) return;
  const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(H) + seg.eps);
  const float offset = seg.weight_offset;
  // Without this the compiler keeps the floats converted for the sum alive until the output (CSE),
  // twice the registers of the raw row (ptxas: 86 -> fewer registers for bf16 plain, kN = 4).
  if constexpr (!kResidual) {
#pragma unroll
    for (int k = 0; k < kN; ++k) OpaqueRegisters(xraw[k]);
  }

  if (vec) {
    const int64_t base = local * nv;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * G;
      if (!kEarlyWeights && j < nv) {
        if (weights_to_shared) {
          SharedWeightVec<T, kW>(seg, shared_weight, j, wraw[k]);
        } else {
          LoadWeightVec<T, kW>(seg, j, wraw[k]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = t + static_cast<int64_t>(k) * G;
      if (j < nv) {
        float h[kV];
        RowValues<T, kResidual>(xraw[k], hf[kResidual ? k : 0], h);
        float w[kV];
        UnpackWeightVec<T, kW>(seg, wraw[k], w);
        float y[kV];
#pragma unroll
        for (int v = 0; v < kV; ++v) y[v] = h[v] * inv_rms * (offset + w[v]);
        StoreVec(seg.output, base + j, PackVec<T>(y));
        if (has_residual) StoreVec(seg.residual_out, base + j, PackVec<T>(h));
      }
    }
  } else {
    const int64_t base = local * H;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      float h[kV];
      RowValues<T, kResidual>(xraw[k], hf[kResidual ? k : 0], h);
#pragma unroll
      for (int v = 0; v < kV; ++v) {
        const int64_t e = t + static_cast<int64_t>(k * kV + v) * G;
        if (e < H) {
          StoreScalar<T>(seg.output, base + e, h[v] * inv_rms * (offset + WeightAt<T, kW>(seg, e)));
          if (has_residual) StoreScalar<T>(seg.residual_out, base + e, h[v]);
        }
      }
    }
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_RMSNORM_KERNELS_CUH_
