#include "kernels/reference.h"

#include <cmath>
#include <cstddef>

namespace normd {

void RmsNormReference(DType dtype, int64_t hidden, const RmsNormSegment& segment, double* output,
                      double* residual_out) {
  const auto h_count = static_cast<size_t>(hidden);
  for (int64_t row = 0; row < segment.rows; ++row) {
    const size_t base = static_cast<size_t>(row) * h_count;
    double sum_squares = 0.0;
    for (size_t i = 0; i < h_count; ++i) {
      double h = LoadAsFloat(segment.input, dtype, base + i);
      if (segment.residual != nullptr) h += LoadAsFloat(segment.residual, dtype, base + i);
      // Park h in the output while the row's sum is formed; scaled in place below.
      output[base + i] = h;
      if (segment.residual != nullptr && residual_out != nullptr) residual_out[base + i] = h;
      sum_squares += h * h;
    }
    const double inv_rms = 1.0 / std::sqrt(sum_squares / static_cast<double>(hidden) +
                                           static_cast<double>(segment.eps));
    for (size_t i = 0; i < h_count; ++i) {
      const double w = LoadAsFloat(segment.weight, segment.weight_dtype, i);
      output[base + i] *= inv_rms * (static_cast<double>(segment.weight_offset) + w);
    }
  }
}

}  // namespace normd
