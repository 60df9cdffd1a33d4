// The kernel builds for fp16 rows (kernel_instances.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/kernel_instances.cuh"

namespace normd::cuda::internal {

KernelFunction Fp16KernelFor(const LaunchShape& shape, const BuildTraits& build) {
  return TypedKernelFor<__half>(shape, build);
}

}  // namespace normd::cuda::internal
