// Turns a NormalizeRequest into a ValidatedRequest, or a status that tells the caller what is
// wrong.
//
// Every check names the field (input, dtype, shape, data, weight, weight_id, residual, eps,
// weight_offset, hidden) and the numbers involved, so that a client can fix its request from the
// message alone. A caller's mistake is INVALID_ARGUMENT; an unknown weight_id is NOT_FOUND.
// No tensor bytes are copied: the result points into the request (which must outlive it), into the
// received message's slices (RequestWire, which must outlive it too) or into a registered weight
// (which it keeps alive).
#ifndef NORMD_SERVER_RPC_REQUEST_VALIDATION_H_
#define NORMD_SERVER_RPC_REQUEST_VALIDATION_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/dtype.h"
#include "normd/v1/normd.pb.h"
#include "server/core/work.h"
#include "server/rpc/weight_registry.h"

namespace normd {

struct ValidationLimits {
  int64_t max_hidden = 65536;
};

// Checks one dense tensor's dtype, shape and data length. `field` prefixes the messages ("input").
// On success stores the element type, the row count and the hidden size.
absl::Status ValidateTensor(const normd::v1::Tensor& tensor, absl::string_view field, DType* dtype,
                            int64_t* rows, int64_t* hidden);
// The same for a tensor whose data is held elsewhere (RequestWire): `data_bytes` of it.
absl::Status ValidateTensor(const normd::v1::Tensor& tensor, int64_t data_bytes,
                            absl::string_view field, DType* dtype, int64_t* rows, int64_t* hidden);

// The data of a message's input, residual and inline weight where protobuf parsed them into the
// message itself; the residual's and the weight's are absent without their fields.
TensorBytes InputDataIn(const normd::v1::NormalizeRequest& request);
TensorBytes ResidualDataIn(const normd::v1::NormalizeRequest& request);
TensorBytes WeightDataIn(const normd::v1::NormalizeRequest& request);

// A request whose tensors carry their data.
absl::StatusOr<ValidatedRequest> ValidateNormalizeRequest(
    const normd::v1::NormalizeRequest& request, const ValidationLimits& limits,
    WeightRegistry& weights);
// A request whose tensors' data are given apart from it (RequestWire's input_data, residual_data
// and weight_data; the message's own data fields are then ignored).
absl::StatusOr<ValidatedRequest> ValidateNormalizeRequest(
    const normd::v1::NormalizeRequest& request, TensorBytes input_data, TensorBytes residual_data,
    TensorBytes weight_data, const ValidationLimits& limits, WeightRegistry& weights);

}  // namespace normd

#endif  // NORMD_SERVER_RPC_REQUEST_VALIDATION_H_
