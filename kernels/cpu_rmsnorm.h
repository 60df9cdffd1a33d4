// The fast CPU RMSNorm: the CPU backend's compute, and the embedded default where there is no GPU.
//
// Vectorized with Highway (compiled for each x86 target; the best one the CPU has is picked on the
// first call), fp32 accumulation, exactly the math of kernels/rmsnorm.h. Reads the segment's input,
// residual and weight straight from the caller's memory and writes output and residual_out there:
// no staging. Thread-safe: calls on disjoint rows may run concurrently; spreading rows over threads
// is the caller's job (the server's CPU backend owns the thread pool).
#ifndef NORMD_KERNELS_CPU_RMSNORM_H_
#define NORMD_KERNELS_CPU_RMSNORM_H_

#include <cstdint>

#include "kernels/rmsnorm.h"

namespace normd {

// Computes rows [row_begin, row_end) of one segment; row indices count from the segment's row 0.
void RmsNormCpuRows(DType dtype, int64_t hidden, const RmsNormSegment& segment, int64_t row_begin,
                    int64_t row_end);

// Computes every row of every segment of the launch on the calling thread.
void RmsNormCpu(const RmsNormLaunch& launch);

}  // namespace normd

#endif  // NORMD_KERNELS_CPU_RMSNORM_H_
