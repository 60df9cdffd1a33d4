// Device-side loads, stores and conversions for the RMSNorm kernels: one place that knows how a
// 16-byte vector of fp32 / fp16 / bf16 is unpacked to floats and packed back, so that the kernel
// body (rmsnorm_kernels.cuh) stays dtype-agnostic. Internal to the CUDA library: included by .cu
// files only.
#ifndef NORMD_KERNELS_CUDA_VEC_IO_CUH_
#define NORMD_KERNELS_CUDA_VEC_IO_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace normd::cuda::internal {

// Elements of T in one 16-byte vector (4 fp32, 8 fp16/bf16).
template <typename T>
inline constexpr int kVecElems = 16 / static_cast<int>(sizeof(T));

// 16-byte vectors of fp32 weight needed to cover one 16-byte vector of T (2 for fp16/bf16, 1 for
// fp32).
template <typename T>
inline constexpr int kFp32WeightVecs = static_cast<int>(4 / sizeof(T));

__device__ __forceinline__ uint4 LoadVec(const void* base, int64_t vec_index) {
  return reinterpret_cast<const uint4*>(base)[vec_index];
}

// Weights are re-read by every row: keep them in the read-only/L1 path.
__device__ __forceinline__ uint4 LoadVecReadOnly(const void* base, int64_t vec_index) {
  return __ldg(reinterpret_cast<const uint4*>(base) + vec_index);
}

// Loads with eviction priorities in L1 and L2 (PTX ld.global.L1::evict_last.L2::cache_hint with a
// createpolicy.fractional.L2::evict_last policy, and the evict_first pair), for a kernel that reads
// a row twice: the first read marks the row's lines to be kept for the second, which marks them as
// no longer needed, so the lines of rows still to be re-read outlive those of rows done and of
// outputs (what Triton emits for torch.compile's RMSNorm). Ordinary coherent loads otherwise (safe
// when a later store of the same thread overwrites the row in place).
__device__ __forceinline__ uint64_t L2EvictLastPolicy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

__device__ __forceinline__ uint64_t L2EvictFirstPolicy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

__device__ __forceinline__ uint4 LoadVecKeep(const void* base, int64_t vec_index, uint64_t policy) {
  uint4 v;
  asm volatile("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(reinterpret_cast<const uint4*>(base) + vec_index), "l"(policy));
  return v;
}

__device__ __forceinline__ uint4 LoadVecLastUse(const void* base, int64_t vec_index,
                                                uint64_t policy) {
  uint4 v;
  asm volatile("ld.global.L1::evict_first.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(reinterpret_cast<const uint4*>(base) + vec_index), "l"(policy));
  return v;
}

__device__ __forceinline__ void StoreVec(void* base, int64_t vec_index, const uint4& v) {
  reinterpret_cast<uint4*>(base)[vec_index] = v;
}

__device__ __forceinline__ float Bf16BitsToFloat(uint32_t bits16) {
  return __uint_as_float(bits16 << 16);
}

// Unpacks the 32-bit word w (one fp32, or two 16-bit values, low half first) into floats.
template <typename T>
__device__ __forceinline__ void UnpackWord(uint32_t w, float* out);

template <>
__device__ __forceinline__ void UnpackWord<float>(uint32_t w, float* out) {
  out[0] = __uint_as_float(w);
}

template <>
__device__ __forceinline__ void UnpackWord<__nv_bfloat16>(uint32_t w, float* out) {
  out[0] = __uint_as_float(w << 16);
  out[1] = __uint_as_float(w & 0xFFFF0000u);
}

template <>
__device__ __forceinline__ void UnpackWord<__half>(uint32_t w, float* out) {
  __half2 h2;
  static_assert(sizeof(h2) == sizeof(w));
  memcpy(&h2, &w, sizeof w);
  const float2 f = __half22float2(h2);
  out[0] = f.x;
  out[1] = f.y;
}

// Rounds floats to T once (round to nearest even) and packs them into one 32-bit word.
template <typename T>
__device__ __forceinline__ uint32_t PackWord(const float* in);

template <>
__device__ __forceinline__ uint32_t PackWord<float>(const float* in) {
  return __float_as_uint(in[0]);
}

template <>
__device__ __forceinline__ uint32_t PackWord<__nv_bfloat16>(const float* in) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(in[0], in[1]);
  uint32_t w;
  memcpy(&w, &v, sizeof w);
  return w;
}

template <>
__device__ __forceinline__ uint32_t PackWord<__half>(const float* in) {
  const __half2 v = __floats2half2_rn(in[0], in[1]);
  uint32_t w;
  memcpy(&w, &v, sizeof w);
  return w;
}

template <typename T>
__device__ __forceinline__ void UnpackVec(const uint4& v, float (&out)[kVecElems<T>]) {
  constexpr int kPerWord = kVecElems<T> / 4;
  UnpackWord<T>(v.x, out + 0 * kPerWord);
  UnpackWord<T>(v.y, out + 1 * kPerWord);
  UnpackWord<T>(v.z, out + 2 * kPerWord);
  UnpackWord<T>(v.w, out + 3 * kPerWord);
}

template <typename T>
__device__ __forceinline__ uint4 PackVec(const float (&in)[kVecElems<T>]) {
  constexpr int kPerWord = kVecElems<T> / 4;
  return make_uint4(PackWord<T>(in + 0 * kPerWord), PackWord<T>(in + 1 * kPerWord),
                    PackWord<T>(in + 2 * kPerWord), PackWord<T>(in + 3 * kPerWord));
}

// Scalar access, for rows whose pointers are not 16-byte aligned.
template <typename T>
__device__ __forceinline__ float LoadScalar(const void* base, int64_t i) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<const float*>(base)[i];
  } else {
    float f[2];
    UnpackWord<T>(static_cast<const uint16_t*>(base)[i], f);
    return f[0];
  }
}

template <typename T>
__device__ __forceinline__ void StoreScalar(void* base, int64_t i, float value) {
  if constexpr (sizeof(T) == 4) {
    static_cast<float*>(base)[i] = value;
  } else {
    const float pair[2] = {value, 0.0f};
    static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(PackWord<T>(pair) & 0xFFFFu);
  }
}

// Also on the host: the launcher applies the same rule before picking the staged kernel.
__host__ __device__ __forceinline__ bool Aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// Programmatic dependent launch (sm_90): wait until the preceding kernel's writes are visible, and
// let the next kernel start its prologue early. Both are no-ops when the launch did not opt in.
__device__ __forceinline__ void GridDependencyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void GridDependencyLaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_VEC_IO_CUH_
