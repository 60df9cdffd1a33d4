// Element types normd computes on, and exact conversions between them.
//
// Tensors travel as raw little-endian bytes; fp16 and bf16 values are held as their 16-bit patterns
// in uint16_t. The conversions here are the single definition every part of normd uses (CPU
// kernels, the fp64 reference, the server, the client library), so that rounding is the same
// everywhere: float -> fp16/bf16 rounds to nearest, ties to even; NaN stays NaN (quiet), Inf stays
// Inf; fp16 overflow gives Inf, fp16 subnormals are produced and read exactly.
//
// The functions are branch-light on purpose: the CPU kernels call them inside loops that the
// compiler vectorizes, and a data-dependent branch there would stop it.
#ifndef NORMD_KERNELS_DTYPE_H_
#define NORMD_KERNELS_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace normd {

// Numbered as normd.v1.DType so that a cast between the two is the identity.
enum class DType : int32_t { kFloat32 = 1, kFloat16 = 2, kBFloat16 = 3 };

constexpr size_t ItemSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

constexpr const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// bf16 is the top half of an fp32: widening is a shift.
inline float BFloat16ToFloat(uint16_t bits) {
  return BitsToFloat(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t FloatToBFloat16(float f) {
  const uint32_t u = FloatBits(f);
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest even; carries into the exponent are
  // the correct result (up to Inf). NaN must not be rounded (it could become Inf), so it is kept
  // quiet.
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x0040u;
  const bool is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(is_nan ? quiet_nan : rounded);
}

inline float Float16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t magnitude = bits & 0x7FFFu;
  // Placing the 15 exponent+mantissa bits at fp32's mantissa boundary and multiplying by 2^112
  // rebiases the exponent (127 - 15 = 112); the multiply also normalizes fp16 subnormals exactly.
  const float scaled = BitsToFloat(magnitude << 13) * 0x1p112f;
  const float inf_or_nan = BitsToFloat((magnitude << 13) | 0x7F800000u);
  const float result = magnitude >= 0x7C00u ? inf_or_nan : scaled;
  return BitsToFloat(FloatBits(result) | sign);
}

inline uint16_t FloatToFloat16(float f) {
  const uint32_t u = FloatBits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  // Normal range: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest
  // even. A carry out of the mantissa moves to the next binade, or to Inf past 65504.
  const uint32_t lowest_kept = (a >> 13) & 1u;
  const uint32_t normal = (a - ((127u - 15u) << 23) + 0x0FFFu + lowest_kept) >> 13;
  // Below 2^-14 (fp16's smallest normal): adding 0.5f makes the FPU round at 2^-24, fp16's
  // subnormal step, so the integer difference from 0.5f is the subnormal encoding, already rounded
  // to even.
  const uint32_t subnormal = FloatBits(BitsToFloat(a) + 0.5f) - FloatBits(0.5f);
  // 65520 (0x477FF000) and above round to Inf.
  uint32_t out = a < 0x38800000u ? subnormal : normal;
  out = a >= 0x477FF000u ? 0x7C00u : out;
  out = a > 0x7F800000u ? (0x7E00u | ((a >> 13) & 0x3FFu)) : out;
  return static_cast<uint16_t>(sign | out);
}

// Reads element i of a buffer of the given dtype as float.
inline float LoadAsFloat(const void* data, DType dtype, size_t i) {
  switch (dtype) {
    case DType::kFloat32:
      return static_cast<const float*>(data)[i];
    case DType::kFloat16:
      return Float16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kBFloat16:
      return BFloat16ToFloat(static_cast<const uint16_t*>(data)[i]);
  }
  return 0.0f;
}

// Writes a float into element i of a buffer of the given dtype, rounding once.
inline void StoreFromFloat(void* data, DType dtype, size_t i, float value) {
  switch (dtype) {
    case DType::kFloat32:
      static_cast<float*>(data)[i] = value;
      return;
    case DType::kFloat16:
      static_cast<uint16_t*>(data)[i] = FloatToFloat16(value);
      return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(data)[i] = FloatToBFloat16(value);
      return;
  }
}

}  // namespace normd

#endif  // NORMD_KERNELS_DTYPE_H_
