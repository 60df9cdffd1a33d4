// The kernel builds for fp32 rows (kernel_instances.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/kernel_instances.cuh"

namespace normd::cuda::internal {

KernelFunction Fp32KernelFor(const LaunchShape& shape, const BuildTraits& build) {
  return TypedKernelFor<float>(shape, build);
}

}  // namespace normd::cuda::internal
