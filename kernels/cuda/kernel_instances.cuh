// The builds of each kernel template for one dtype T (kernel_instances.h): included once per
// dtype by kernel_instances_<dtype>.cu. Internal to the CUDA library.
#ifndef NORMD_KERNELS_CUDA_KERNEL_INSTANCES_CUH_
#define NORMD_KERNELS_CUDA_KERNEL_INSTANCES_CUH_

#include "kernels/cuda/cluster_kernel.cuh"
#include "kernels/cuda/kernel_instances.h"
#include "kernels/cuda/loop_kernel.cuh"
#include "kernels/cuda/rows_kernel.cuh"

namespace normd::cuda::internal {

template <typename T, bool kResidual, WeightKind kW, bool kReload, RowsPath kPath>
KernelFunction RowsBuildFor(int vectors) {
  switch (vectors) {
    case 1:
      return RmsNormRowsKernel<T, 1, kResidual, kW, kReload, kPath>;
    case 2:
      return RmsNormRowsKernel<T, 2, kResidual, kW, kReload, kPath>;
    case 4:
      return RmsNormRowsKernel<T, 4, kResidual, kW, kReload, kPath>;
    case 8:
      // fp32 held rows only (ResolveShape's rule).
      if constexpr (sizeof(T) == 4 && !kReload) {
        return RmsNormRowsKernel<T, 8, kResidual, kW, false, kPath>;
      }
      return nullptr;
    default:
      return nullptr;
  }
}

// Builds for one segment by value, for contiguous tables and for other tables on the vector path;
// held rows also have one that takes the element path.
template <typename T, bool kResidual, WeightKind kW, bool kReload>
KernelFunction RowsPathFor(const KernelConfig& c, const BuildTraits& b) {
  if (!b.vector_path) {
    if constexpr (kReload) return nullptr;
    return RowsBuildFor<T, kResidual, kW, false, RowsPath::kAnyPath>(c.vectors);
  }
  if (!b.table) return RowsBuildFor<T, kResidual, kW, kReload, RowsPath::kVectorSingle>(c.vectors);
  return b.contiguous
             ? RowsBuildFor<T, kResidual, kW, kReload, RowsPath::kVectorContiguous>(c.vectors)
             : RowsBuildFor<T, kResidual, kW, kReload, RowsPath::kVectorAny>(c.vectors);
}

template <typename T, bool kResidual, WeightKind kW>
KernelFunction RowsFor(const KernelConfig& c, const BuildTraits& b) {
  return c.kind == KernelKind::kReload ? RowsPathFor<T, kResidual, kW, true>(c, b)
                                       : RowsPathFor<T, kResidual, kW, false>(c, b);
}

template <typename T, bool kResidual, WeightKind kW>
KernelFunction BuildFor(const LaunchShape& shape, const BuildTraits& b) {
  const KernelConfig& c = shape.config;
  switch (c.kind) {
    case KernelKind::kRows:
    case KernelKind::kReload:
      return RowsFor<T, kResidual, kW>(c, b);
    case KernelKind::kLoop:
      return c.lean ? RmsNormLoopKernel<T, true, kResidual, kW>
                    : RmsNormLoopKernel<T, false, kResidual, kW>;
    case KernelKind::kCluster:
      if (c.vectors == 1 && shape.threads_per_block <= kPerWarpPushMaxThreads) {
        return RmsNormClusterKernel<T, 1, kResidual, true>;
      }
      switch (c.vectors) {
        case 1:
          return RmsNormClusterKernel<T, 1, kResidual, false>;
        case 2:
          return RmsNormClusterKernel<T, 2, kResidual, false>;
        case 4:
          return RmsNormClusterKernel<T, 4, kResidual, false>;
        default:
          return nullptr;
      }
  }
  return nullptr;
}

// 16-bit rows whose weights are all of the row's dtype take the builds that know it (half the
// weight registers); fp32 rows have one weight layout either way.
template <typename T>
KernelFunction TypedKernelFor(const LaunchShape& shape, const BuildTraits& b) {
  constexpr WeightKind kLike = sizeof(T) == 2 ? WeightKind::kLikeInput : WeightKind::kEither;
  if (sizeof(T) == 2 && b.fp32_weights) {
    return b.residual ? BuildFor<T, true, WeightKind::kEither>(shape, b)
                      : BuildFor<T, false, WeightKind::kEither>(shape, b);
  }
  return b.residual ? BuildFor<T, true, kLike>(shape, b) : BuildFor<T, false, kLike>(shape, b);
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_KERNEL_INSTANCES_CUH_
