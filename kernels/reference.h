// The fp64 reference RMSNorm: the oracle every backend's tests compare against.
//
// It computes DESIGN.md's math in double precision, from the exact input values, with no rounding
// until the caller rounds: h = x + r exactly, inv_rms = 1 / sqrt(sum(h^2) / H + eps),
// y = h * inv_rms * (weight_offset + w). It is written for clarity, not speed.
#ifndef NORMD_KERNELS_REFERENCE_H_
#define NORMD_KERNELS_REFERENCE_H_

#include <cstdint>

#include "kernels/rmsnorm.h"

namespace normd {

// Computes the segment's rows x hidden outputs into `output` (rows * hidden doubles). When the
// segment has a residual and `residual_out` is not null, writes h = x + r there (also unrounded).
// Reads segment.input, .residual and .weight; ignores segment.output and .residual_out.
void RmsNormReference(DType dtype, int64_t hidden, const RmsNormSegment& segment, double* output,
                      double* residual_out);

}  // namespace normd

#endif  // NORMD_KERNELS_REFERENCE_H_
