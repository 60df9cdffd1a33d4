// The one RMSNorm body every kernel runs: load a thread's share of a row (x, and r with a residual)
// into registers, add up the squares of h = x + r, reduce over the threads of the row, then
// normalize and store. The kernels (rows_kernel.cuh, loop_kernel.cuh, cluster_kernel.cuh) differ
// only in how threads map to rows and how the partial sums meet. Internal to the CUDA library.
//
// A thread's share of a row is a ThreadVectors: 16-byte vectors first, first + stride, ... below
// end (the vector path, when every pointer of the segment is 16-byte aligned and a row is a whole
// number of vectors), or on the element path the elements first + (k * kVecElems + m) * stride,
// placed in the same registers as a vector load would place them. Rows come from the single
// segment passed by value or, by binary search, from the device segment table. Indexing is 64-bit.
#ifndef NORMD_KERNELS_CUDA_ROW_BODY_CUH_
#define NORMD_KERNELS_CUDA_ROW_BODY_CUH_

#include <cstdint>

#include "kernels/cuda/kernel_params.h"
#include "kernels/cuda/vec_io.cuh"
#include "kernels/rmsnorm.h"

namespace normd::cuda::internal {

// The table index of the last segment whose first row is <= `row` (a table launch): from the
// first rows in the parameters where the launcher put them there (constant memory, no device
// memory round trips), else by binary search of the device table. Reads the table only after the
// grid dependency is resolved (the caller waits first).
__device__ __forceinline__ int FindSegment(const KernelParams& p, int64_t row) {
  int lo = 0;
  if (p.inline_segments > 0) {
    int hi = p.inline_segments - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (p.first_rows[mid] <= row) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }
  int hi = p.num_segments - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (__ldg(&p.table[mid].first_row) <= row) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// A copy of a table entry, read through the read-only path. A kernel holds the entry of its row
// in registers rather than reading its fields where it uses them: after every store of the output
// the compiler would have to read them again (it cannot tell the table from the output), and each
// read would be a generic load. Reads of fields a kernel never uses are dead code.
__device__ __forceinline__ RmsNormSegment ReadSegment(const RmsNormSegment* entry) {
  auto pointer = [](const void* const* field) {
    return reinterpret_cast<void*>(__ldg(reinterpret_cast<const unsigned long long*>(field)));
  };
  RmsNormSegment s;
  s.input = pointer(&entry->input);
  s.output = pointer(reinterpret_cast<const void* const*>(&entry->output));
  s.residual = pointer(&entry->residual);
  s.residual_out = pointer(reinterpret_cast<const void* const*>(&entry->residual_out));
  s.weight = pointer(&entry->weight);
  s.first_row = __ldg(reinterpret_cast<const long long*>(&entry->first_row));
  s.rows = __ldg(reinterpret_cast<const long long*>(&entry->rows));
  s.eps = __ldg(&entry->eps);
  s.weight_offset = __ldg(&entry->weight_offset);
  s.weight_dtype =
      static_cast<DType>(__ldg(reinterpret_cast<const int32_t*>(&entry->weight_dtype)));
  return s;
}

// Finds the segment and the segment-local row of launch row `row`, copying the segment. False
// for rows past the end or in no segment.
__device__ __forceinline__ bool ResolveRow(const KernelParams& p, int64_t row, RmsNormSegment& seg,
                                           int64_t& local) {
  if (row >= p.total_rows) return false;
  if (p.table == nullptr) {
    seg = p.single;
    local = row;
    return row < seg.rows;
  }
  seg = ReadSegment(p.table + FindSegment(p, row));
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

// Sum of v over the G threads of this thread's row group (G a power of two up to 32, or whole
// warps). Every thread of the block must call it (it may hold a barrier). The order of additions
// is fixed, so results do not depend on timing.
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

// Sum of v over a block of `block_threads` (a multiple of 32) working on one row: each warp sums
// its lanes, then warp 0 sums the warps' sums. Only warp 0 gets the total (the others get 0).
// Every thread of the block must call it (it holds a barrier).
__device__ __forceinline__ float BlockSumInWarp0(float v, int block_threads, float* warp_sums) {
  v = WarpSum(v);
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp != 0) return 0.0f;
  return WarpSum(lane < (block_threads >> 5) ? warp_sums[lane] : 0.0f);
}

// 1 / sqrt(sum of v over the block / hidden + eps) for a block working on one row: warp 0 computes
// the scale once and every thread reads it back (the division and root once per block).
__device__ __forceinline__ float BlockInvRms(float v, int block_threads, float* warp_sums,
                                             float* block_result, float hidden, float eps) {
  const float total = BlockSumInWarp0(v, block_threads, warp_sums);
  if (threadIdx.x == 0) *block_result = 1.0f / sqrtf(total / hidden + eps);
  __syncthreads();
  return *block_result;
}

__device__ __forceinline__ float InvRms(float sum_squares, int64_t hidden, float eps) {
  return 1.0f / sqrtf(sum_squares / static_cast<float>(hidden) + eps);
}

// What a kernel knows of the weights' dtype when it is compiled. kEither: fp32 or the input's
// dtype, read from the segment at run time, with room for fp32 weights in registers. kLikeInput:
// the input's dtype, known by the launcher: for 16-bit inputs half the weight registers.
enum class WeightKind { kEither, kLikeInput };

template <typename T, WeightKind kW>
inline constexpr int kWeightVecs = kW == WeightKind::kLikeInput ? 1 : kFp32WeightVecs<T>;

template <WeightKind kW>
__device__ __forceinline__ bool WeightsAreFp32(const RmsNormSegment& s) {
  return kW == WeightKind::kEither && s.weight_dtype == DType::kFloat32;
}

// How a row is read. kPlain: ordinary loads. kKeep (a first read whose lines a second read will
// want) and kLastUse (that second read): see LoadVecKeep.
enum class RowRead { kPlain, kKeep, kLastUse };

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
__device__ __forceinline__ uint4 LoadRowVec(const void* base, int64_t index, uint64_t policy) {
  if constexpr (kRead == RowRead::kKeep) {
    return LoadVecKeep(base, index, policy);
  } else if constexpr (kRead == RowRead::kLastUse) {
    return LoadVecLastUse(base, index, policy);
  } else {
    return LoadVec(base, index);
  }
}

// The 16-byte vectors of a row one thread handles: first + k * stride for k < kN, those below
// end. On the element path, slot k holds elements first + (k * kVecElems + m) * stride instead.
// Offsets within a row fit 32 bits (H <= kMaxHidden): fewer registers than 64-bit indices.
struct ThreadVectors {
  int first;
  int stride;
  int end;
  __device__ __forceinline__ int At(int k) const { return first + k * stride; }
  __device__ __forceinline__ bool Has(int k) const { return At(k) < end; }
};

// Row `row_base` (in 16-byte vectors) of a tensor.
__device__ __forceinline__ const uint4* RowVectors(const void* base, int64_t row_base) {
  return static_cast<const uint4*>(base) + row_base;
}
__device__ __forceinline__ uint4* RowVectors(void* base, int64_t row_base) {
  return static_cast<uint4*>(base) + row_base;
}

// Element m (0 <= m < kVecElems<T>) of a raw 16-byte vector, placed as a vector load would.
// m is a compile-time constant once the callers' loops are unrolled: the branches fold away and
// the vector stays in registers (an indexed view of it would put it in local memory).
template <typename T>
__device__ __forceinline__ void SetElementBits(uint4& raw, int m, uint32_t bits) {
  constexpr int kPerWord = kVecElems<T> / 4;
  const uint32_t placed = bits << (16 * (m % kPerWord) * (kPerWord - 1));
  switch (m / kPerWord) {
    case 0:
      raw.x |= placed;
      break;
    case 1:
      raw.y |= placed;
      break;
    case 2:
      raw.z |= placed;
      break;
    default:
      raw.w |= placed;
      break;
  }
}

template <typename T>
__device__ __forceinline__ uint32_t LoadBits(const void* base, int64_t i) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<const uint32_t*>(base)[i];
  } else {
    return static_cast<const uint16_t*>(base)[i];
  }
}

// Hides a value from the optimizer: it stays in registers as is and is not reused from an earlier
// computation.
__device__ __forceinline__ void OpaqueRegisters(uint4& v) {
  asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w));
}

// A thread's share of a row, raw as loaded: kN vectors of x and, with kResidual, of r (zeros past
// the row and where the segment has no residual, which add nothing).
template <typename T, int kN, bool kResidual>
struct RowRegisters {
  static constexpr int kV = kVecElems<T>;
  uint4 x[kN];
  uint4 r[kResidual ? kN : 1];

  __device__ __forceinline__ void Clear() {
#pragma unroll
    for (int k = 0; k < kN; ++k) x[k] = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < (kResidual ? kN : 1); ++k) r[k] = make_uint4(0, 0, 0, 0);
  }

  template <RowRead kRead>
  __device__ __forceinline__ void Load(const RmsNormSegment& s, int64_t row_base,
                                       const ThreadVectors& v, bool has_residual, uint64_t policy) {
    const uint4 zero = make_uint4(0, 0, 0, 0);
    const uint4* xs = RowVectors(s.input, row_base);
#pragma unroll
    for (int k = 0; k < kN; ++k) x[k] = v.Has(k) ? LoadRowVec<kRead>(xs, v.At(k), policy) : zero;
    if constexpr (kResidual) {
      const uint4* rs = RowVectors(s.residual, row_base);
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        r[k] = has_residual && v.Has(k) ? LoadRowVec<kRead>(rs, v.At(k), policy) : zero;
      }
    }
  }

  // Element path: row_offset is the row's first element; v.end is H.
  __device__ __forceinline__ void LoadElements(const RmsNormSegment& s, int64_t row_offset,
                                               const ThreadVectors& v, bool has_residual) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      x[k] = make_uint4(0, 0, 0, 0);
      if constexpr (kResidual) r[k] = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int m = 0; m < kV; ++m) {
        const int e = v.first + (k * kV + m) * v.stride;
        if (e < v.end) {
          SetElementBits<T>(x[k], m, LoadBits<T>(s.input, row_offset + e));
          if constexpr (kResidual) {
            if (has_residual) SetElementBits<T>(r[k], m, LoadBits<T>(s.residual, row_offset + e));
          }
        }
      }
    }
  }

  // h of slot k: x, plus r unrounded with a residual.
  __device__ __forceinline__ void Values(int k, float (&h)[kV]) const {
    UnpackVec<T>(x[k], h);
    if constexpr (kResidual) {
      float rv[kV];
      UnpackVec<T>(r[k], rv);
#pragma unroll
      for (int m = 0; m < kV; ++m) h[m] += rv[m];
    }
  }

  __device__ __forceinline__ float AddSquares(float sum) const {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      float h[kV];
      Values(k, h);
#pragma unroll
      for (int m = 0; m < kV; ++m) sum = fmaf(h[m], h[m], sum);
    }
    return sum;
  }

  // For a row held across the reduction without a residual: converted again for the output rather
  // than kept as floats (twice the registers), which the compiler would otherwise choose.
  __device__ __forceinline__ void KeepRaw() {
#pragma unroll
    for (int k = 0; k < kN; ++k) OpaqueRegisters(x[k]);
  }
};

// Weight vector j of a row (the weights of elements j*kV .. j*kV + kV-1), raw.
template <typename T, WeightKind kW>
__device__ __forceinline__ void LoadWeightVec(const RmsNormSegment& s, int64_t j,
                                              uint4 (&raw)[kWeightVecs<T, kW>]) {
  if (WeightsAreFp32<kW>(s)) {
#pragma unroll
    for (int q = 0; q < kWeightVecs<T, kW>; ++q) {
      raw[q] = LoadVecReadOnly(s.weight, j * kWeightVecs<T, kW> + q);
    }
  } else {
    raw[0] = LoadVecReadOnly(s.weight, j);
  }
}

template <typename T, WeightKind kW>
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

template <typename T, WeightKind kW>
__device__ __forceinline__ float WeightAt(const RmsNormSegment& s, int64_t i) {
  return WeightsAreFp32<kW>(s) ? __ldg(static_cast<const float*>(s.weight) + i)
                               : LoadScalar<T>(s.weight, i);
}

// Weights held in registers, loaded before they are used (with the row, or after the reduction).
template <typename T, int kN, WeightKind kW>
struct HeldWeights {
  uint4 raw[kN][kWeightVecs<T, kW>];
  __device__ __forceinline__ void Load(const RmsNormSegment& s, const ThreadVectors& v) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (v.Has(k)) LoadWeightVec<T, kW>(s, v.At(k), raw[k]);
    }
  }
  __device__ __forceinline__ void Get(const RmsNormSegment& s, int k, int,
                                      float (&w)[kVecElems<T>]) const {
    UnpackWeightVec<T, kW>(s, raw[k], w);
  }
};

// Weights read where they are used: no registers held for them in between.
template <typename T, WeightKind kW>
struct WeightsOnUse {
  __device__ __forceinline__ void Get(const RmsNormSegment& s, int, int j,
                                      float (&w)[kVecElems<T>]) const {
    uint4 raw[kWeightVecs<T, kW>];
    LoadWeightVec<T, kW>(s, j, raw);
    UnpackWeightVec<T, kW>(s, raw, w);
  }
};

// y = h * inv_rms * (weight_offset + w) for the thread's vectors, rounded once and stored; with
// store_residual also round(h) to residual_out. `out` gives the output tensors, `norm` the weight
// and weight_offset (the same segment, except for a contiguous table's rows).
template <typename T, int kN, bool kResidual, typename Weights>
__device__ __forceinline__ void StoreRow(const RmsNormSegment& out, const RmsNormSegment& norm,
                                         int64_t row_base, const ThreadVectors& v,
                                         const RowRegisters<T, kN, kResidual>& row,
                                         const Weights& weights, float inv_rms,
                                         bool store_residual) {
  constexpr int kV = kVecElems<T>;
  uint4* ys = RowVectors(out.output, row_base);
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    if (!v.Has(k)) continue;
    const int j = v.At(k);
    float h[kV];
    row.Values(k, h);
    float w[kV];
    weights.Get(norm, k, j, w);
    float y[kV];
#pragma unroll
    for (int m = 0; m < kV; ++m) y[m] = h[m] * inv_rms * (norm.weight_offset + w[m]);
    ys[j] = PackVec<T>(y);
    if (store_residual) RowVectors(out.residual_out, row_base)[j] = PackVec<T>(h);
  }
}

template <typename T, int kN, bool kResidual, typename Weights>
__device__ __forceinline__ void StoreRow(const RmsNormSegment& s, int64_t row_base,
                                         const ThreadVectors& v,
                                         const RowRegisters<T, kN, kResidual>& row,
                                         const Weights& weights, float inv_rms,
                                         bool store_residual) {
  StoreRow(s, s, row_base, v, row, weights, inv_rms, store_residual);
}

// StoreRow on the element path (v as given to RowRegisters::LoadElements).
template <typename T, int kN, bool kResidual, WeightKind kW>
__device__ __forceinline__ void StoreRowElements(const RmsNormSegment& s, int64_t row_offset,
                                                 const ThreadVectors& v,
                                                 const RowRegisters<T, kN, kResidual>& row,
                                                 float inv_rms, bool store_residual) {
  constexpr int kV = kVecElems<T>;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    float h[kV];
    row.Values(k, h);
#pragma unroll
    for (int m = 0; m < kV; ++m) {
      const int e = v.first + (k * kV + m) * v.stride;
      if (e < v.end) {
        StoreScalar<T>(s.output, row_offset + e,
                       h[m] * inv_rms * (s.weight_offset + WeightAt<T, kW>(s, e)));
        if (store_residual) StoreScalar<T>(s.residual_out, row_offset + e, h[m]);
      }
    }
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_ROW_BODY_CUH_
