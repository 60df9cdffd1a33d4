// Single-segment runs of the CUDA RMSNorm with given options, checked against the fp64 reference:
// what the forced-kernel tests (rmsnorm_cuda_forced_kernels_test.cc) and the warp-row kernel's
// tests (rmsnorm_cuda_warp_row_test.cc) share. Same tolerances, poisoning and guards as
// rmsnorm_cuda_test.cc.
#ifndef NORMD_TESTS_GPU_SINGLE_SEGMENT_RUNS_H_
#define NORMD_TESTS_GPU_SINGLE_SEGMENT_RUNS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "tests/gpu/gpu_test_util.h"

namespace normd::gputest {

// Inputs of one (dtype, H, rows): random x and r on the host and on the device, made once and
// shared by the runs over weight dtype, residual and options.
struct Inputs {
  Inputs(DType dtype, int64_t hidden, int64_t rows, Random& rng);
  DType dtype;
  int64_t hidden, rows;
  size_t count, bytes;
  HostBytes x, r;
  DeviceBuffer dx, dr;
};

// One single-segment run with `options`: poisons the outputs, runs, checks every output element
// written, the guards intact, and rows against the reference. In place when `in_place` (output
// and residual_out alias copies of the inputs). Returns the mismatch count (1 where the launch or
// the run failed; the failures are recorded with `what`).
int64_t RunAndCheck(const Inputs& in, DType weight_dtype, bool residual, bool in_place,
                    float offset, const cuda::RmsNormOptions& options, Random& rng,
                    const std::string& what);

// One (dtype, H) with `options`: rows {1, 19, 989, and 70000 where H <= 4096} x weight dtype (the
// input's, and fp32 for 16-bit inputs) x residual (with weight_offset 1), each case against the
// reference. `admits(rows, residual, what)` says whether the forced kernel takes the case, and
// asserts what it must. Returns at the first failing case (the caller checks HasFatalFailure).
void SweepRowsWeightsResidual(DType dtype, int64_t hidden, const cuda::RmsNormOptions& options,
                              const std::string& label, Random& rng,
                              const std::function<bool(int64_t, bool, const std::string&)>& admits);

}  // namespace normd::gputest

#endif  // NORMD_TESTS_GPU_SINGLE_SEGMENT_RUNS_H_
