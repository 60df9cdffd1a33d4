#include "client/request.h"

#include <utility>

namespace normd {

std::string Weight::id() const {
  normd::MutexLock lock(&state_->mu);
  return state_->id;
}

int64_t PreparedRequest::rows() const {
  int64_t rows = 1;
  const auto& shape = proto_.input().shape();
  for (int i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

absl::StatusOr<NormalizeResult> ToNormalizeResult(normd::v1::NormalizeResponse&& response) {
  NormalizeResult result;
  absl::StatusOr<Tensor> output = Tensor::FromProto(std::move(*response.mutable_output()));
  if (!output.ok()) return output.status();
  result.output = *std::move(output);
  if (response.has_residual_out()) {
    absl::StatusOr<Tensor> residual_out =
        Tensor::FromProto(std::move(*response.mutable_residual_out()));
    if (!residual_out.ok()) return residual_out.status();
    result.residual_out = *std::move(residual_out);
  }
  result.request_id = std::move(*response.mutable_request_id());
  result.timing = response.timing();
  return result;
}

}  // namespace normd
