// Host-side checks of the CUDA library's entry points, which run without a device too: arguments
// refused before they reach it, and empty launches that do nothing. (The choice of kernel:
// rmsnorm_cuda_choice_test.cc.)
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"
#include "tests/gpu/gpu_test_util.h"

namespace normd::gputest {
namespace {

// Host-side checks: refused arguments never reach the device, and an empty launch is a no-op. These
// run without a device too.
TEST(RmsNormCudaArguments, RefusedOnTheHost) {
  RmsNormSegment seg;
  int dummy = 0;
  seg.input = &dummy;
  seg.output = &dummy;
  seg.weight = &dummy;
  seg.rows = 4;
  seg.weight_dtype = DType::kFloat32;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, 0, seg, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, cuda::kMaxHidden + 1, seg, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::RmsNorm(static_cast<DType>(7), 64, seg, nullptr), cudaErrorInvalidValue);
  RmsNormSegment bad_weight = seg;
  bad_weight.weight_dtype = DType::kBFloat16;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, 64, bad_weight, nullptr), cudaErrorInvalidValue);
  RmsNormSegment no_out = seg;
  no_out.residual = &dummy;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 64, no_out, nullptr), cudaErrorInvalidValue);
  RmsNormSegment empty = seg;
  empty.rows = 0;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 64, empty, nullptr), cudaSuccess);
  RmsNormLaunch launch;
  launch.dtype = DType::kBFloat16;
  launch.hidden = 64;
  launch.total_rows = 0;
  EXPECT_EQ(cuda::RmsNormBatched(launch, nullptr), cudaSuccess);
  launch.total_rows = 3;
  EXPECT_EQ(cuda::RmsNormBatched(launch, nullptr), cudaErrorInvalidValue);  // no table
  // A forced configuration that cannot hold the row (held rows of one vector per thread hold 512
  // vectors, 2048 fp32 elements).
  cuda::internal::KernelConfig too_small;
  too_small.kind = cuda::internal::KernelKind::kRows;
  too_small.vectors = 1;
  cuda::internal::LaunchOverrides overrides;
  overrides.config = &too_small;
  EXPECT_EQ(cuda::internal::RmsNormWith(DType::kFloat32, 4096, seg, nullptr, {}, overrides),
            cudaErrorInvalidValue);
  // A host table whose segment has a weight dtype that is neither the launch's nor fp32.
  RmsNormSegment table_entry = bad_weight;
  launch.dtype = DType::kFloat16;
  launch.segments = &table_entry;  // never read on the device: refused first
  launch.num_segments = 1;
  launch.total_rows = 8;
  table_entry.rows = 8;
  EXPECT_EQ(cuda::RmsNormBatched(launch, &table_entry, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace normd::gputest
