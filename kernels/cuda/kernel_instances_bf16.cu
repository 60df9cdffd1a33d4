// The kernel builds for bf16 rows (kernel_instances.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/kernel_instances.cuh"

namespace normd::cuda::internal {

KernelFunction Bf16KernelFor(const LaunchShape& shape, const BuildTraits& build) {
  return TypedKernelFor<__nv_bfloat16>(shape, build);
}

}  // namespace normd::cuda::internal
