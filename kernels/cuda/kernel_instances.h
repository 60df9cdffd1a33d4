// Which build of which kernel template runs a resolved launch shape: one function per dtype, each
// compiled in its own translation unit (kernel_instances_<dtype>.cu) so that the builds compile in
// parallel. Null where no build serves the shape. Internal to the CUDA library.
#ifndef NORMD_KERNELS_CUDA_KERNEL_INSTANCES_H_
#define NORMD_KERNELS_CUDA_KERNEL_INSTANCES_H_

#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/kernel_params.h"
#include "kernels/dtype.h"

namespace normd::cuda::internal {

// What picks a build besides the shape.
struct BuildTraits {
  bool residual = false;      // the launch may carry residuals (each segment checked at run time)
  bool fp32_weights = false;  // a segment of a 16-bit launch may have fp32 weights
  bool table = false;         // rows come from a device segment table
  bool vector_path = true;    // every segment is known to be on the 16-byte vector path
  bool contiguous = false;    // a table whose rows are one tensor's (KernelParams::contiguous)
};

KernelFunction Fp32KernelFor(const LaunchShape& shape, const BuildTraits& build);
KernelFunction Fp16KernelFor(const LaunchShape& shape, const BuildTraits& build);
KernelFunction Bf16KernelFor(const LaunchShape& shape, const BuildTraits& build);

inline KernelFunction KernelFor(const LaunchTraits& traits, const LaunchShape& shape,
                                bool contiguous = false) {
  const BuildTraits build{traits.residual, traits.fp32_weights, traits.table,
                          traits.alignment == Alignment::kVector, contiguous};
  switch (traits.dtype) {
    case DType::kFloat32:
      return Fp32KernelFor(shape, build);
    case DType::kFloat16:
      return Fp16KernelFor(shape, build);
    case DType::kBFloat16:
      return Bf16KernelFor(shape, build);
  }
  return nullptr;
}

// The cluster kernel pushes per warp (no block barrier before the exchange) where each thread
// holds one vector in a CTA of up to this many threads; bigger CTAs push their block's sum (with
// 8-16 warps, C * W pushes per CTA cost more than the barrier).
inline constexpr int kPerWarpPushMaxThreads = 128;

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_KERNEL_INSTANCES_H_
