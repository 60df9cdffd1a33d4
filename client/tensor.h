// Tensors on the client side: TensorView (the caller's data, borrowed, as it is) and Tensor (a
// result, owning the bytes the server sent), and the marshalling between them and normd.v1.Tensor.
//
// A TensorView never copies: it points at the caller's floats, or at uint16_t values holding fp16
// or bf16 bits. Encoding writes straight into the protobuf's bytes field (one resize, then one
// memcpy or one conversion loop), so the only copy is the one into the message gRPC serializes. A
// result Tensor takes the response's bytes string by move, so decoding copies nothing either.
#ifndef NORMD_CLIENT_TENSOR_H_
#define NORMD_CLIENT_TENSOR_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/dtype.h"
#include "normd/v1/normd.pb.h"

namespace normd {

// The caller's data, borrowed: it must stay alive until the call that reads it returns (encoding
// happens inside Client::Prepare / Normalize / RegisterWeight, not later).
class TensorView {
 public:
  // An empty `shape` means one dimension, the span's length.
  static TensorView Float32(std::span<const float> values, std::vector<int64_t> shape = {});
  static TensorView Float16(std::span<const uint16_t> bits, std::vector<int64_t> shape = {});
  static TensorView BFloat16(std::span<const uint16_t> bits, std::vector<int64_t> shape = {});
  // `count` elements of `dtype` at `data`.
  TensorView(DType dtype, const void* data, size_t count, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const void* data() const { return data_; }
  size_t count() const { return count_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t num_bytes() const { return count_ * ItemSize(dtype_); }

 private:
  DType dtype_;
  const void* data_;
  size_t count_;
  std::vector<int64_t> shape_;
};

// A tensor the server returned. Owns its bytes.
class Tensor {
 public:
  Tensor() = default;
  // Takes `proto`'s bytes by move; checks that they match its dtype and shape. A tensor that normd
  // wrote into a region has no bytes here: region() says where they are.
  static absl::StatusOr<Tensor> FromProto(normd::v1::Tensor&& proto);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t count() const { return bytes_.size() / ItemSize(dtype_); }
  const std::string& bytes() const { return bytes_; }
  // Typed access without a copy: float32() for a float32 tensor, bits() for fp16/bf16 (their 16-bit
  // patterns); the other one is empty. The bytes live in a heap-allocated std::string, whose
  // storage is aligned for any fundamental type.
  std::span<const float> float32() const;
  std::span<const uint16_t> bits() const;
  // Every element widened to float (exact for all three dtypes).
  std::vector<float> ToFloat() const;
  // Set when the bytes were written into a region (NormalizeOptions::output_region).
  const std::optional<normd::v1::RegionReference>& region() const { return region_; }

 private:
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  std::string bytes_;
  std::optional<normd::v1::RegionReference> region_;
};

// Fills `out` from `view`, converting the elements to `wire_dtype` on the way when it differs from
// the view's dtype (rounding to nearest even; NaN and Inf preserved). Checks the shape against the
// count.
absl::Status EncodeTensor(const TensorView& view, DType wire_dtype, normd::v1::Tensor* out);

// Conversions of whole spans, for callers that hold float data and want fp16/bf16 bits or back.
std::vector<uint16_t> FloatsToBits(std::span<const float> values, DType dtype);
std::vector<float> BitsToFloats(std::span<const uint16_t> bits, DType dtype);

// "fp32"/"float32", "fp16"/"float16", "bf16"/"bfloat16" to a DType.
absl::StatusOr<DType> ParseDType(const std::string& name);

}  // namespace normd

#endif  // NORMD_CLIENT_TENSOR_H_
