// Small host-side helpers shared by the launcher (rmsnorm_cuda.cu) and the shape choosers
// (kernel_shapes.cu).
#ifndef NORMD_KERNELS_CUDA_HOST_HELPERS_H_
#define NORMD_KERNELS_CUDA_HOST_HELPERS_H_

#include <cstdint>

#include "kernels/dtype.h"

namespace normd::cuda::internal {

inline bool ValidDType(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
}

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_HOST_HELPERS_H_
