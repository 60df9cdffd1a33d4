// Test helpers: building normd.v1 tensors from floats, reading them back, and checking a response
// against the fp64 reference with the project's tolerances (fp32: 1e-5 relative; fp16/bf16: one
// unit in the last place of the output dtype; residual_out exact).
#ifndef NORMD_TESTS_INTEGRATION_TENSOR_UTIL_H_
#define NORMD_TESTS_INTEGRATION_TENSOR_UTIL_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "normd/v1/normd.pb.h"

namespace normd::testing {

// Encodes `values` (rounded to the dtype) as a tensor of the given shape.
normd::v1::Tensor MakeTensor(DType dtype, const std::vector<int64_t>& shape,
                             const std::vector<float>& values);

// Decodes a tensor's elements to float.
std::vector<float> DecodeTensor(const normd::v1::Tensor& tensor);

// `count` values drawn from N(0, scale^2), from a generator the caller seeds.
std::vector<float> RandomValues(size_t count, std::mt19937& rng, float scale = 1.0f);

// A valid request: input [rows, hidden] of `dtype`, an inline weight, optionally a residual.
normd::v1::NormalizeRequest MakeRequest(DType dtype, int64_t rows, int64_t hidden, bool residual,
                                        std::mt19937& rng, DType weight_dtype = DType::kFloat32);

// Empty when the response matches the fp64 reference computed from the request (and `weight`, for a
// request that names its weight by id); otherwise a description of the first mismatch.
std::string CompareWithReference(const normd::v1::NormalizeRequest& request,
                                 const normd::v1::NormalizeResponse& response,
                                 const normd::v1::Tensor* registered_weight = nullptr);

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_TENSOR_UTIL_H_
