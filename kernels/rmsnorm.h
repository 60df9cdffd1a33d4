// The description of one RMSNorm launch, shared by every backend (fp64 reference, CPU, CUDA).
//
// The math (docs/ARCHITECTURE.md, "Math contract"; every backend meets it), for each row x of
// length H:
//     h = x + r                      fp32, unrounded; without a residual h = x
//     inv_rms = 1 / sqrt(sum(h_i^2) / H + eps)      fp32 accumulation whatever the dtype
//     y_i = h_i * inv_rms * (weight_offset + w_i)  fp32, rounded once to the output dtype
//     residual_out = round_to_dtype(h)               only when a residual is given
//
// A launch covers many requests ("segments") of one dtype and one hidden size H. Each segment keeps
// its own eps, weight, weight_offset and optional residual, so the server can put every queued
// request of a (dtype, H) group into one launch. Segments are laid end to end in launch row order:
// segment k covers launch rows [first_row, first_row + rows). Its pointers address its own rows
// (row 0 of the segment is input[0 .. H)), so a backend may point them straight at request bytes
// (CPU) or into a packed staging buffer (CUDA) alike.
//
// This header is plain C++ with no CUDA types: nvcc and g++ both include it.
#ifndef NORMD_KERNELS_RMSNORM_H_
#define NORMD_KERNELS_RMSNORM_H_

#include <cstdint>

#include "kernels/dtype.h"

namespace normd {

struct RmsNormSegment {
  const void* input = nullptr;     // rows x H elements of the launch dtype, row-major, contiguous
  void* output = nullptr;          // rows x H elements of the launch dtype; may equal input
  const void* residual = nullptr;  // rows x H of the launch dtype, or nullptr for no residual add
  void* residual_out = nullptr;    // required when residual is set; may equal residual (in place)
  const void* weight = nullptr;    // H elements of weight_dtype
  int64_t first_row = 0;           // launch row of this segment's row 0 (segments are in row order)
  int64_t rows = 0;
  float eps = 1e-6f;
  float weight_offset = 0.0f;  // y uses (weight_offset + w): 1 for Gemma-style weights, else 0
  DType weight_dtype = DType::kFloat32;  // the launch dtype or kFloat32
};

struct RmsNormLaunch {
  DType dtype = DType::kFloat32;
  int64_t hidden = 0;      // H, the length of every row
  int64_t total_rows = 0;  // sum of the segments' rows
  const RmsNormSegment* segments = nullptr;
  int32_t num_segments = 0;
};

}  // namespace normd

#endif  // NORMD_KERNELS_RMSNORM_H_
