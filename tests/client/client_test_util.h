// Helpers of the client tests: a client result turned back into the response proto, so that the
// integration suite's CompareWithReference (the fp64 reference, the project's tolerances) can judge
// it.
#ifndef NORMD_TESTS_CLIENT_CLIENT_TEST_UTIL_H_
#define NORMD_TESTS_CLIENT_CLIENT_TEST_UTIL_H_

#include <string>

#include "client/normd_client.h"
#include "tests/integration/tensor_util.h"

namespace normd::testing {

inline normd::v1::Tensor ToProto(const Tensor& t) {
  normd::v1::Tensor proto;
  proto.set_dtype(static_cast<normd::v1::DType>(t.dtype()));
  proto.mutable_shape()->Assign(t.shape().begin(), t.shape().end());
  proto.set_data(t.bytes());
  return proto;
}

// Empty when `result` matches the reference for `request` (`weight`: the registered weight, if
// any).
inline std::string CheckResult(const PreparedRequest& request, const NormalizeResult& result,
                               const normd::v1::Tensor* weight = nullptr) {
  normd::v1::NormalizeResponse response;
  *response.mutable_output() = ToProto(result.output);
  if (result.residual_out) *response.mutable_residual_out() = ToProto(*result.residual_out);
  return CompareWithReference(request.proto(), response, weight);
}

}  // namespace normd::testing

#endif  // NORMD_TESTS_CLIENT_CLIENT_TEST_UTIL_H_
