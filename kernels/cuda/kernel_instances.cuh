// Which instance of each kernel template runs a shape: the tables from a KernelShape (or
// StagedShape) and the launch's dtype, residual and weight kind to the __global__ function
// rmsnorm_cuda.cu launches. Internal to the CUDA library (included by rmsnorm_cuda.cu only, so
// every instance is built in one translation unit). Null where no instance serves the shape.
#ifndef NORMD_KERNELS_CUDA_KERNEL_INSTANCES_CUH_
#define NORMD_KERNELS_CUDA_KERNEL_INSTANCES_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/rmsnorm_reload_kernel.cuh"
#include "kernels/cuda/rmsnorm_split_push_kernel.cuh"
#include "kernels/cuda/rmsnorm_split_row_kernel.cuh"
#include "kernels/cuda/rmsnorm_staged_kernel.cuh"
#include "kernels/cuda/rmsnorm_warp_row_kernel.cuh"

namespace normd::cuda::internal {

template <typename T, bool kEarlyWeights, bool kResidual, WeightKind kW = WeightKind::kEither>
void (*RowKernelFor(int vectors_per_thread))(KernelParams) {
  switch (vectors_per_thread) {
    case 1:
      return RmsNormRowKernel<T, 1, kEarlyWeights, kResidual, kW>;
    case 2:
      return RmsNormRowKernel<T, 2, kEarlyWeights, kResidual, kW>;
    case 4:
      return RmsNormRowKernel<T, 4, kEarlyWeights, kResidual, kW>;
    case 8:
      // fp32 only (H up to 16384 in 512 threads); the early-weight variant spills, so never that.
      if constexpr (sizeof(T) == 4) return RmsNormRowKernel<T, 8, false, kResidual>;
      return nullptr;
    default:
      return nullptr;
  }
}

// Two vectors with a residual in blocks of up to 512 threads take the variant given 40 registers
// (kReloadRoomyThreads): under 32 that one spilled. Four vectors: the build of one block per
// multiprocessor (kReloadWideMinBlocks, up to 64 registers) where the shape asks for it
// (KernelShape::reload_wide: always with a residual) or where the weights are fp32 for a 16-bit
// row (two weight vectors per vector spilled 56-116 bytes under 32 registers); else the default
// 32-register build, two 1024-thread blocks per multiprocessor.
template <typename T, bool kResidual, WeightKind kW>
void (*ReloadKernelFor(const KernelShape& shape))(KernelParams) {
  switch (shape.vectors_per_thread) {
    case 1:
      return RmsNormReloadKernel<T, 1, kResidual, kW>;
    case 2:
      if constexpr (kResidual) {
        if (shape.threads_per_block <= kReloadRoomyThreads) {
          return RmsNormReloadKernel<T, 2, true, kW, kReloadRoomyThreads, kReloadRoomyMinBlocks>;
        }
      }
      return RmsNormReloadKernel<T, 2, kResidual, kW>;
    case 4:
      if constexpr (!kResidual && (sizeof(T) == 4 || kW == WeightKind::kLikeInput)) {
        if (!shape.reload_wide) return RmsNormReloadKernel<T, 4, false, kW>;
      }
      return RmsNormReloadKernel<T, 4, kResidual, kW, kReloadMaxThreads, kReloadWideMinBlocks>;
    default:
      return nullptr;
  }
}

// The reload kernel for a single segment on the vector path (Launch checks
// SingleSegmentOnVectorPath).
template <typename T>
void (*ReloadKernelFor(const RmsNormSegment& seg, const KernelShape& shape))(KernelParams) {
  const bool residual = seg.residual != nullptr;
  if constexpr (sizeof(T) == 2) {
    if (seg.weight_dtype != DType::kFloat32) {
      constexpr auto kLike = WeightKind::kLikeInput;
      return residual ? ReloadKernelFor<T, true, kLike>(shape)
                      : ReloadKernelFor<T, false, kLike>(shape);
    }
  }
  constexpr auto kEither = WeightKind::kEither;
  return residual ? ReloadKernelFor<T, true, kEither>(shape)
                  : ReloadKernelFor<T, false, kEither>(shape);
}

template <typename T, bool kResidual, WeightKind kW>
void (*WarpRowKernelFor(int vectors_per_thread))(KernelParams) {
  switch (vectors_per_thread) {
    case 1:
      return RmsNormWarpRowKernel<T, 1, kResidual, kW>;
    case 2:
      return RmsNormWarpRowKernel<T, 2, kResidual, kW>;
    case 4:
      return RmsNormWarpRowKernel<T, 4, kResidual, kW>;
    default:
      return nullptr;
  }
}

// The warp-row kernel for a single segment on the vector path (Launch checks
// SingleSegmentOnVectorPath); 16-bit weights like the input take the variant that knows it.
template <typename T>
void (*WarpRowKernelFor(const RmsNormSegment& seg, int vectors_per_thread))(KernelParams) {
  const bool residual = seg.residual != nullptr;
  if constexpr (sizeof(T) == 2) {
    if (seg.weight_dtype != DType::kFloat32) {
      constexpr auto kLike = WeightKind::kLikeInput;
      return residual ? WarpRowKernelFor<T, true, kLike>(vectors_per_thread)
                      : WarpRowKernelFor<T, false, kLike>(vectors_per_thread);
    }
  }
  constexpr auto kEither = WeightKind::kEither;
  return residual ? WarpRowKernelFor<T, true, kEither>(vectors_per_thread)
                  : WarpRowKernelFor<T, false, kEither>(vectors_per_thread);
}

template <typename T, bool kResidual>
void (*SplitRowKernelFor(int vectors_per_thread))(KernelParams) {
  switch (vectors_per_thread) {
    case 1:
      return RmsNormSplitRowKernel<T, 1, kResidual>;
    case 2:
      return RmsNormSplitRowKernel<T, 2, kResidual>;
    case 4:
      return RmsNormSplitRowKernel<T, 4, kResidual>;
    case 8:
      return RmsNormSplitRowKernel<T, 8, kResidual>;
    default:
      return nullptr;
  }
}

// Per-warp pushes are built for one vector per thread only (KernelShape::push_per_warp).
template <typename T, bool kResidual>
void (*SplitPushKernelFor(const KernelShape& shape))(KernelParams) {
  if (shape.push_per_warp) {
    return shape.vectors_per_thread == 1 ? RmsNormSplitPushKernel<T, 1, kResidual, true> : nullptr;
  }
  switch (shape.vectors_per_thread) {
    case 1:
      return RmsNormSplitPushKernel<T, 1, kResidual>;
    case 2:
      return RmsNormSplitPushKernel<T, 2, kResidual>;
    case 4:
      return RmsNormSplitPushKernel<T, 4, kResidual>;
    case 8:
      return RmsNormSplitPushKernel<T, 8, kResidual>;
    default:
      return nullptr;
  }
}

// The push kernel LaunchTyped would launch for this shape, or null.
inline void (*PushKernelFor(DType dtype, bool residual, const KernelShape& shape))(KernelParams) {
  switch (dtype) {
    case DType::kFloat32:
      return residual ? SplitPushKernelFor<float, true>(shape)
                      : SplitPushKernelFor<float, false>(shape);
    case DType::kFloat16:
      return residual ? SplitPushKernelFor<__half, true>(shape)
                      : SplitPushKernelFor<__half, false>(shape);
    case DType::kBFloat16:
      return residual ? SplitPushKernelFor<__nv_bfloat16, true>(shape)
                      : SplitPushKernelFor<__nv_bfloat16, false>(shape);
  }
  return nullptr;
}

template <typename T, bool kResidual, WeightKind kW>
void (*StagedKernelFor(int vectors_per_thread))(KernelParams) {
  switch (vectors_per_thread) {
    case 1:
      return RmsNormStagedKernel<T, 1, kResidual, kW>;
    case 2:
      return RmsNormStagedKernel<T, 2, kResidual, kW>;
    case 4:
      return RmsNormStagedKernel<T, 4, kResidual, kW>;
    case 8:
      if constexpr (sizeof(T) == 4) return RmsNormStagedKernel<T, 8, kResidual, kW>;
      return nullptr;
    default:
      return nullptr;
  }
}

template <typename T>
void (*StagedKernelFor(const StagedShape& shape, bool residual,
                       bool weights_like_input))(KernelParams) {
  constexpr auto kLike = WeightKind::kLikeInput;
  const int n = shape.vectors_per_thread;
  // fp32 weights under a 16-bit input: the variant that reads them (fp32 inputs have only those).
  if constexpr (sizeof(T) == 2) {
    constexpr auto kEither = WeightKind::kEither;
    if (!weights_like_input) {
      return residual ? StagedKernelFor<T, true, kEither>(n)
                      : StagedKernelFor<T, false, kEither>(n);
    }
  }
  return residual ? StagedKernelFor<T, true, kLike>(n) : StagedKernelFor<T, false, kLike>(n);
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_KERNEL_INSTANCES_CUH_
