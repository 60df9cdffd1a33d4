#include "tests/integration/tensor_util.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/reference.h"
#include "kernels/rmsnorm.h"

namespace normd::testing {
namespace {

// The spacing of the dtype's values around |x|: one unit in the last place.
double UlpOf(DType dtype, double x) {
  const int mantissa_bits = dtype == DType::kFloat16 ? 10 : dtype == DType::kBFloat16 ? 7 : 23;
  const int min_exponent = dtype == DType::kFloat16 ? -14 : -126;
  int exponent = std::ilogb(std::max(std::abs(x), 1e-300));
  exponent = std::max(exponent, min_exponent);
  return std::ldexp(1.0, exponent - mantissa_bits);
}

}  // namespace

normd::v1::Tensor MakeTensor(DType dtype, const std::vector<int64_t>& shape,
                             const std::vector<float>& values) {
  normd::v1::Tensor t;
  t.set_dtype(static_cast<normd::v1::DType>(dtype));
  for (int64_t d : shape) t.add_shape(d);
  std::string* data = t.mutable_data();
  data->resize(values.size() * ItemSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) StoreFromFloat(data->data(), dtype, i, values[i]);
  return t;
}

std::vector<float> DecodeTensor(const normd::v1::Tensor& tensor) {
  const auto dtype = static_cast<DType>(tensor.dtype());
  const size_t n = tensor.data().size() / ItemSize(dtype);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = LoadAsFloat(tensor.data().data(), dtype, i);
  return out;
}

std::vector<float> RandomValues(size_t count, std::mt19937& rng, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

normd::v1::NormalizeRequest MakeRequest(DType dtype, int64_t rows, int64_t hidden, bool residual,
                                        std::mt19937& rng, DType weight_dtype) {
  const auto n = static_cast<size_t>(rows * hidden);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = MakeTensor(dtype, {rows, hidden}, RandomValues(n, rng));
  *request.mutable_weight() =
      MakeTensor(weight_dtype, {hidden}, RandomValues(static_cast<size_t>(hidden), rng));
  if (residual)
    *request.mutable_residual() = MakeTensor(dtype, {rows, hidden}, RandomValues(n, rng, 0.5f));
  request.set_eps(1e-6f);
  return request;
}

std::string CompareWithReference(const normd::v1::NormalizeRequest& request,
                                 const normd::v1::NormalizeResponse& response,
                                 const normd::v1::Tensor* registered_weight) {
  const normd::v1::Tensor& weight =
      registered_weight != nullptr ? *registered_weight : request.weight();
  const auto dtype = static_cast<DType>(request.input().dtype());
  const int64_t hidden = request.input().shape(request.input().shape_size() - 1);
  const int64_t rows =
      static_cast<int64_t>(request.input().data().size() / ItemSize(dtype)) / hidden;
  if (response.output().dtype() != request.input().dtype())
    return "output dtype differs from the input's";
  if (!std::equal(response.output().shape().begin(), response.output().shape().end(),
                  request.input().shape().begin(), request.input().shape().end())) {
    return "output shape differs from the input's";
  }
  if (response.output().data().size() != request.input().data().size())
    return "output byte count is wrong";

  RmsNormSegment segment;
  segment.input = request.input().data().data();
  segment.residual = request.has_residual() ? request.residual().data().data() : nullptr;
  segment.weight = weight.data().data();
  segment.weight_dtype = static_cast<DType>(weight.dtype());
  segment.rows = rows;
  segment.eps = request.eps();
  segment.weight_offset = request.weight_offset();
  std::vector<double> expected(static_cast<size_t>(rows * hidden)), expected_h(expected.size());
  RmsNormReference(dtype, hidden, segment, expected.data(), expected_h.data());

  const std::vector<float> got = DecodeTensor(response.output());
  for (int64_t r = 0; r < rows; ++r) {
    // fp32 values near zero are judged against the row's scale: their relative error is unbounded
    // even for a correctly rounded fp32 computation of h * inv_rms * w.
    double row_scale = 0.0;
    for (int64_t i = 0; i < hidden; ++i)
      row_scale = std::max(row_scale, std::abs(expected[r * hidden + i]));
    for (int64_t i = 0; i < hidden; ++i) {
      const size_t k = static_cast<size_t>(r * hidden + i);
      const double want = expected[k];
      const double tolerance =
          dtype == DType::kFloat32 ? 1e-5 * std::abs(want) + 1e-6 * row_scale : UlpOf(dtype, want);
      if (!(std::abs(got[k] - want) <= tolerance)) {
        return absl::StrCat("output[", r, ", ", i, "] = ", got[k], ", reference ", want,
                            " (tolerance ", tolerance, ", ", DTypeName(dtype), ")");
      }
    }
  }
  if (request.has_residual()) {
    if (!response.has_residual_out()) return "residual_out missing";
    const std::vector<float> got_h = DecodeTensor(response.residual_out());
    if (got_h.size() != expected_h.size()) return "residual_out has the wrong size";
    for (size_t k = 0; k < got_h.size(); ++k) {
      // residual_out is h rounded once to the dtype: exact.
      const float want = LoadAsFloat(
          MakeTensor(dtype, {1}, {static_cast<float>(expected_h[k])}).data().data(), dtype, 0);
      if (got_h[k] != want)
        return absl::StrCat("residual_out[", k, "] = ", got_h[k], ", expected ", want);
    }
  } else if (response.has_residual_out()) {
    return "residual_out present without a residual";
  }
  return "";
}

}  // namespace normd::testing
