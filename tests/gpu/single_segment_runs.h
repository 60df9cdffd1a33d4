// Single-segment runs of the CUDA RMSNorm with given options and overrides (a forced kernel
// configuration, or the device's features as another GPU would have them), checked against the
// fp64 reference: what the configuration, boundary and fallback tests share. Same tolerances,
// poisoning and guards as rmsnorm_cuda_test.cc.
#ifndef NORMD_TESTS_GPU_SINGLE_SEGMENT_RUNS_H_
#define NORMD_TESTS_GPU_SINGLE_SEGMENT_RUNS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "tests/gpu/gpu_test_util.h"

namespace normd::gputest {

// Inputs of one (dtype, H, rows): random x and r on the host and on the device, and the output
// and weight buffers, made once and shared by the runs over weight dtype, residual and options.
struct Inputs {
  Inputs(DType dtype, int64_t hidden, int64_t rows, Random& rng);
  DType dtype;
  int64_t hidden, rows;
  size_t count, bytes;
  HostBytes x, r;
  DeviceBuffer dx, dr;
  DeviceBuffer dy, dro, dw;  // outputs (with guards) and the weight (room for fp32)
};

// How one run is made.
struct RunSpec {
  DType weight_dtype = DType::kFloat32;
  bool residual = false;
  bool in_place = false;  // output and residual_out alias (copies of) the inputs
  float offset = 0.0f;
  cuda::RmsNormOptions options;
  cuda::internal::LaunchOverrides overrides;
};

// One single-segment run: poisons the outputs, runs, checks every output element written, the
// guards intact, and rows against the reference. Returns the mismatch count (1 where the launch
// or the run failed; the failures are recorded with `what`).
int64_t RunAndCheck(const Inputs& in, const RunSpec& spec, Random& rng, const std::string& what);

// The traits a single segment of `in` gets with `spec` (aligned buffers: the vector path where a
// row is whole vectors).
cuda::internal::LaunchTraits TraitsOf(const Inputs& in, const RunSpec& spec);

}  // namespace normd::gputest

#endif  // NORMD_TESTS_GPU_SINGLE_SEGMENT_RUNS_H_
