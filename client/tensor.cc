#include "client/tensor.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace normd {
namespace {

std::vector<int64_t> ShapeOr1D(std::vector<int64_t> shape, size_t count) {
  if (shape.empty()) shape.push_back(static_cast<int64_t>(count));
  return shape;
}

absl::StatusOr<int64_t> ElementCount(const std::vector<int64_t>& shape) {
  if (shape.empty()) return absl::InvalidArgumentError("shape: no dimensions");
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape [", absl::StrJoin(shape, ", "),
                                                     "]: every dimension must be positive"));
    }
    count *= d;
  }
  return count;
}

}  // namespace

TensorView TensorView::Float32(std::span<const float> values, std::vector<int64_t> shape) {
  return TensorView(DType::kFloat32, values.data(), values.size(), std::move(shape));
}
TensorView TensorView::Float16(std::span<const uint16_t> bits, std::vector<int64_t> shape) {
  return TensorView(DType::kFloat16, bits.data(), bits.size(), std::move(shape));
}
TensorView TensorView::BFloat16(std::span<const uint16_t> bits, std::vector<int64_t> shape) {
  return TensorView(DType::kBFloat16, bits.data(), bits.size(), std::move(shape));
}
TensorView::TensorView(DType dtype, const void* data, size_t count, std::vector<int64_t> shape)
    : dtype_(dtype), data_(data), count_(count), shape_(ShapeOr1D(std::move(shape), count)) {}

absl::StatusOr<Tensor> Tensor::FromProto(normd::v1::Tensor&& proto) {
  const int dtype = static_cast<int>(proto.dtype());
  if (dtype < 1 || dtype > 3)
    return absl::InternalError(absl::StrCat("response tensor: unknown dtype ", dtype));
  Tensor t;
  t.dtype_ = static_cast<DType>(dtype);
  t.shape_.assign(proto.shape().begin(), proto.shape().end());
  absl::StatusOr<int64_t> count = ElementCount(t.shape_);
  if (!count.ok())
    return absl::InternalError(absl::StrCat("response tensor: ", count.status().message()));
  if (proto.has_region() && proto.data().empty()) {
    t.region_ = std::move(*proto.mutable_region());
    return t;
  }
  t.bytes_ = std::move(*proto.mutable_data());
  if (t.bytes_.size() != static_cast<size_t>(*count) * ItemSize(t.dtype_)) {
    return absl::InternalError(absl::StrCat("response tensor: ", t.bytes_.size(), " bytes for ",
                                            *count, " elements of ", DTypeName(t.dtype_)));
  }
  return t;
}

std::span<const float> Tensor::float32() const {
  if (dtype_ != DType::kFloat32) return {};
  return {reinterpret_cast<const float*>(bytes_.data()), count()};
}

std::span<const uint16_t> Tensor::bits() const {
  if (dtype_ == DType::kFloat32) return {};
  return {reinterpret_cast<const uint16_t*>(bytes_.data()), count()};
}

std::vector<float> Tensor::ToFloat() const {
  std::vector<float> out(count());
  for (size_t i = 0; i < out.size(); ++i) out[i] = LoadAsFloat(bytes_.data(), dtype_, i);
  return out;
}

absl::Status EncodeTensor(const TensorView& view, DType wire_dtype, normd::v1::Tensor* out) {
  absl::StatusOr<int64_t> count = ElementCount(view.shape());
  if (!count.ok()) return count.status();
  if (static_cast<size_t>(*count) != view.count()) {
    return absl::InvalidArgumentError(absl::StrCat("shape [", absl::StrJoin(view.shape(), ", "),
                                                   "] needs ", *count, " elements; the data has ",
                                                   view.count()));
  }
  out->set_dtype(static_cast<normd::v1::DType>(wire_dtype));
  out->mutable_shape()->Assign(view.shape().begin(), view.shape().end());
  std::string* bytes = out->mutable_data();
  // resize zero-fills, once; writing in place afterwards avoids a second buffer.
  bytes->resize(view.count() * ItemSize(wire_dtype));
  if (wire_dtype == view.dtype()) {
    if (!bytes->empty()) std::memcpy(bytes->data(), view.data(), bytes->size());
    return absl::OkStatus();
  }
  for (size_t i = 0; i < view.count(); ++i) {
    StoreFromFloat(bytes->data(), wire_dtype, i, LoadAsFloat(view.data(), view.dtype(), i));
  }
  return absl::OkStatus();
}

std::vector<uint16_t> FloatsToBits(std::span<const float> values, DType dtype) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = dtype == DType::kBFloat16 ? FloatToBFloat16(values[i]) : FloatToFloat16(values[i]);
  }
  return out;
}

std::vector<float> BitsToFloats(std::span<const uint16_t> bits, DType dtype) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    out[i] = dtype == DType::kBFloat16 ? BFloat16ToFloat(bits[i]) : Float16ToFloat(bits[i]);
  }
  return out;
}

absl::StatusOr<DType> ParseDType(const std::string& name) {
  if (name == "fp32" || name == "float32" || name == "f32") return DType::kFloat32;
  if (name == "fp16" || name == "float16" || name == "f16") return DType::kFloat16;
  if (name == "bf16" || name == "bfloat16") return DType::kBFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("dtype '", name, "': expected fp32, fp16 or bf16"));
}

}  // namespace normd
