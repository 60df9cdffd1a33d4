#include "server/rpc/request_validation.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace normd {
namespace {

// The shape as "[2, 3, 4096]". A shape of very many dimensions is cut after the first few: the
// message travels in the call's trailers, which gRPC bounds, and a client that sent a million
// dimensions learns nothing more from seeing them all.
std::string ShapeString(const normd::v1::Tensor& tensor) {
  constexpr int kShown = 8;
  const int dims = tensor.shape_size();
  if (dims <= kShown) return absl::StrCat("[", absl::StrJoin(tensor.shape(), ", "), "]");
  return absl::StrCat("[",
                      absl::StrJoin(tensor.shape().begin(), tensor.shape().begin() + kShown, ", "),
                      ", ... (", dims, " dimensions)]");
}

absl::Status CheckWeight(const ValidatedRequest& out, DType weight_dtype, int64_t weight_rows,
                         int64_t weight_hidden, int shape_dims, absl::string_view shape) {
  if (shape_dims != 1) {
    return absl::InvalidArgumentError(absl::StrCat("weight: shape ", shape, " has ", shape_dims,
                                                   " dimensions; expected 1-D [", out.hidden, "]"));
  }
  if (weight_rows != 1 || weight_hidden != out.hidden) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight: length ", weight_hidden, " does not match the input's hidden size ", out.hidden));
  }
  if (weight_dtype != out.dtype && weight_dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat("weight: dtype ", DTypeName(weight_dtype),
                                                   " must be the input's (", DTypeName(out.dtype),
                                                   ") or float32"));
  }
  return absl::OkStatus();
}

absl::Status ResolveWeight(const normd::v1::NormalizeRequest& request, TensorBytes weight_data,
                           WeightRegistry& weights, ValidatedRequest& out) {
  switch (request.weight_source_case()) {
    case normd::v1::NormalizeRequest::kWeight: {
      DType dtype;
      int64_t rows, hidden;
      NORMD_RETURN_IF_ERROR(
          ValidateTensor(request.weight(), weight_data.size(), "weight", &dtype, &rows, &hidden));
      NORMD_RETURN_IF_ERROR(CheckWeight(out, dtype, rows, hidden, request.weight().shape_size(),
                                        ShapeString(request.weight())));
      out.weight = std::move(weight_data);
      out.weight_dtype = dtype;
      return absl::OkStatus();
    }
    case normd::v1::NormalizeRequest::kWeightId: {
      auto weight = weights.Find(request.weight_id());
      if (weight == nullptr) {
        return absl::NotFoundError(
            absl::StrCat("weight_id: '", request.weight_id(),
                         "' is not registered on this server (unknown or evicted); "
                         "register it again with RegisterWeight"));
      }
      NORMD_RETURN_IF_ERROR(CheckWeight(out, weight->dtype, 1, weight->hidden, 1,
                                        absl::StrCat("[", weight->hidden, "]")));
      out.weight =
          TensorBytes::Contiguous(weight->bytes.data(), static_cast<int64_t>(weight->bytes.size()));
      out.weight_dtype = weight->dtype;
      out.registered_weight = std::move(weight);
      return absl::OkStatus();
    }
    case normd::v1::NormalizeRequest::WEIGHT_SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("weight: missing; set weight (a [hidden] tensor) or weight_id");
}

}  // namespace

absl::Status ValidateTensor(const normd::v1::Tensor& tensor, absl::string_view field, DType* dtype,
                            int64_t* rows, int64_t* hidden) {
  return ValidateTensor(tensor, static_cast<int64_t>(tensor.data().size()), field, dtype, rows,
                        hidden);
}

absl::Status ValidateTensor(const normd::v1::Tensor& tensor, int64_t data_bytes,
                            absl::string_view field, DType* dtype, int64_t* rows, int64_t* hidden) {
  const int raw_dtype = tensor.dtype();
  if (raw_dtype != normd::v1::DTYPE_FLOAT32 && raw_dtype != normd::v1::DTYPE_FLOAT16 &&
      raw_dtype != normd::v1::DTYPE_BFLOAT16) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        ".dtype: ", raw_dtype == 0 ? "unspecified (0)" : absl::StrCat("unknown (", raw_dtype, ")"),
        "; expected DTYPE_FLOAT32 (1), DTYPE_FLOAT16 (2) or DTYPE_BFLOAT16 (3)"));
  }
  *dtype = static_cast<DType>(raw_dtype);
  if (tensor.shape_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".shape: empty; a tensor needs at least one dimension (the last is hidden)"));
  }
  int64_t elements = 1;
  for (int i = 0; i < tensor.shape_size(); ++i) {
    const int64_t dim = tensor.shape(i);
    if (dim <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".shape[", i, "] = ", dim, " in ",
                                                     ShapeString(tensor),
                                                     ": every dimension must be positive"));
    }
    if (elements > std::numeric_limits<int64_t>::max() / dim) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".shape: ", ShapeString(tensor),
                                                     " has more elements than int64 can count"));
    }
    elements *= dim;
  }
  const auto itemsize = static_cast<int64_t>(ItemSize(*dtype));
  if (elements > std::numeric_limits<int64_t>::max() / itemsize) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".shape: ", ShapeString(tensor),
                                                   " is larger in bytes than int64 can count"));
  }
  const int64_t expected = elements * itemsize;
  const int64_t actual = data_bytes;
  if (actual != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, tensor.has_region() ? ".region.byte_length: " : ".data: ", actual,
                     " bytes; shape ", ShapeString(tensor), " of ", DTypeName(*dtype), " needs ",
                     elements, " x ", itemsize, " = ", expected, " bytes"));
  }
  *hidden = tensor.shape(tensor.shape_size() - 1);
  *rows = elements / *hidden;
  return absl::OkStatus();
}

TensorBytes InputDataIn(const normd::v1::NormalizeRequest& request) {
  const std::string& input = request.input().data();
  return TensorBytes::Contiguous(input.data(), static_cast<int64_t>(input.size()));
}

TensorBytes ResidualDataIn(const normd::v1::NormalizeRequest& request) {
  if (!request.has_residual()) return TensorBytes();
  const std::string& residual = request.residual().data();
  return TensorBytes::Contiguous(residual.data(), static_cast<int64_t>(residual.size()));
}

TensorBytes WeightDataIn(const normd::v1::NormalizeRequest& request) {
  if (!request.has_weight()) return TensorBytes();
  const std::string& weight = request.weight().data();
  return TensorBytes::Contiguous(weight.data(), static_cast<int64_t>(weight.size()));
}

absl::StatusOr<ValidatedRequest> ValidateNormalizeRequest(
    const normd::v1::NormalizeRequest& request, const ValidationLimits& limits,
    WeightRegistry& weights) {
  return ValidateNormalizeRequest(request, InputDataIn(request), ResidualDataIn(request),
                                  WeightDataIn(request), limits, weights);
}

absl::StatusOr<ValidatedRequest> ValidateNormalizeRequest(
    const normd::v1::NormalizeRequest& request, TensorBytes input_data, TensorBytes residual_data,
    TensorBytes weight_data, const ValidationLimits& limits, WeightRegistry& weights) {
  ValidatedRequest out;
  if (!request.has_input()) {
    return absl::InvalidArgumentError("input: missing; a NormalizeRequest needs an input tensor");
  }
  NORMD_RETURN_IF_ERROR(ValidateTensor(request.input(), input_data.size(), "input", &out.dtype,
                                       &out.rows, &out.hidden));
  if (out.hidden > limits.max_hidden) {
    return absl::InvalidArgumentError(absl::StrCat("hidden: ", out.hidden,
                                                   " (the input's last dimension) exceeds "
                                                   "--max-hidden = ",
                                                   limits.max_hidden));
  }
  out.input = std::move(input_data);

  NORMD_RETURN_IF_ERROR(ResolveWeight(request, std::move(weight_data), weights, out));

  if (request.has_residual()) {
    const normd::v1::Tensor& residual = request.residual();
    if (static_cast<int>(residual.dtype()) != static_cast<int>(out.dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "residual.dtype: ", normd::v1::DType_Name(residual.dtype()), " differs from the input's ",
          normd::v1::DType_Name(request.input().dtype())));
    }
    if (!std::equal(residual.shape().begin(), residual.shape().end(),
                    request.input().shape().begin(), request.input().shape().end())) {
      return absl::InvalidArgumentError(absl::StrCat("residual.shape: ", ShapeString(residual),
                                                     " differs from the input's ",
                                                     ShapeString(request.input())));
    }
    DType dtype;
    int64_t rows, hidden;
    NORMD_RETURN_IF_ERROR(
        ValidateTensor(residual, residual_data.size(), "residual", &dtype, &rows, &hidden));
    out.residual = std::move(residual_data);
  }

  const float eps = request.eps();
  if (!std::isfinite(eps) || eps < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat("eps: ", eps, " must be finite and >= 0"));
  }
  out.eps = eps;
  const float weight_offset = request.weight_offset();
  if (!std::isfinite(weight_offset)) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight_offset: ", weight_offset, " must be finite"));
  }
  out.weight_offset = weight_offset;
  return out;
}

}  // namespace normd
