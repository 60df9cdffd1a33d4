// Single-segment runs checked against the fp64 reference (single_segment_runs.h).
#include "tests/gpu/single_segment_runs.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/rmsnorm.h"

namespace normd::gputest {

Inputs::Inputs(DType dtype, int64_t hidden, int64_t rows, Random& rng)
    : dtype(dtype),
      hidden(hidden),
      rows(rows),
      count(static_cast<size_t>(rows * hidden)),
      bytes(count * ItemSize(dtype)),
      x(RandomTensor(dtype, count, -2.0f, 2.0f, rng)),
      r(RandomTensor(dtype, count, -2.0f, 2.0f, rng)),
      dx(bytes),
      dr(bytes) {
  dx.Upload(x.data(), bytes);
  dr.Upload(r.data(), bytes);
}

int64_t RunAndCheck(const Inputs& in, DType weight_dtype, bool residual, bool in_place,
                    float offset, const cuda::RmsNormOptions& options, Random& rng,
                    const std::string& what) {
  const DType dtype = in.dtype;
  const HostBytes w = RandomTensor(weight_dtype, static_cast<size_t>(in.hidden), -1.5f, 1.5f, rng);
  DeviceBuffer dy(in.bytes), dro(in.bytes), dw(w.size());
  EXPECT_TRUE(in.dx.ok() && in.dr.ok() && dy.ok() && dro.ok() && dw.ok()) << what;
  dw.Upload(w.data(), w.size());
  if (in_place) {  // the kernel overwrites its inputs: run on copies of them
    dy.Upload(in.x.data(), in.bytes);
    dro.Upload(in.r.data(), in.bytes);
  } else {
    dy.Fill(kPoisonByte);
    dro.Fill(kPoisonByte);
  }
  dy.ArmGuards();
  dro.ArmGuards();
  RmsNormSegment seg;
  seg.input = in_place ? dy.get() : in.dx.get();
  seg.output = dy.get();
  seg.residual = residual ? (in_place ? dro.get() : in.dr.get()) : nullptr;
  seg.residual_out = residual ? dro.get() : nullptr;
  seg.weight = dw.get();
  seg.weight_dtype = weight_dtype;
  seg.rows = in.rows;
  seg.eps = (rng.Next() & 1) ? 1e-6f : 1e-5f;
  seg.weight_offset = offset;
  const cudaError_t launched = cuda::RmsNorm(dtype, in.hidden, seg, nullptr, options);
  EXPECT_EQ(launched, cudaSuccess) << what << ": " << cudaGetErrorString(launched);
  const cudaError_t synced = cudaDeviceSynchronize();
  EXPECT_EQ(synced, cudaSuccess) << what << ": " << cudaGetErrorString(synced);
  if (launched != cudaSuccess || synced != cudaSuccess) return 1;
  HostBytes y(in.bytes), ro(in.bytes);
  dy.Download(y.data(), in.bytes);
  EXPECT_EQ(CountPoisoned(dtype, y.data(), in.count), 0) << what << ": output elements not written";
  EXPECT_TRUE(dy.GuardsIntact()) << what << ": wrote outside the output";
  if (residual) {
    dro.Download(ro.data(), in.bytes);
    EXPECT_EQ(CountPoisoned(dtype, ro.data(), in.count), 0) << what << ": residual_out not written";
    EXPECT_TRUE(dro.GuardsIntact()) << what << ": wrote outside residual_out";
  }
  RmsNormSegment host = seg;
  host.input = in.x.data();
  host.residual = residual ? in.r.data() : nullptr;
  host.weight = w.data();
  return CheckRows(dtype, in.hidden, host, y.data(), residual ? ro.data() : nullptr,
                   RowsToCheck(in.rows, in.hidden, rng), what);
}

void SweepRowsWeightsResidual(
    DType dtype, int64_t hidden, const cuda::RmsNormOptions& options, const std::string& label,
    Random& rng, const std::function<bool(int64_t, bool, const std::string&)>& admits) {
  std::vector<int64_t> row_counts = {1, 19, 989};
  if (hidden <= 4096) row_counts.push_back(70000);
  std::vector<DType> weight_dtypes = {dtype};
  if (dtype != DType::kFloat32) weight_dtypes.push_back(DType::kFloat32);
  for (const int64_t rows : row_counts) {
    const Inputs inputs(dtype, hidden, rows, rng);
    for (const DType weight_dtype : weight_dtypes) {
      for (const bool residual : {false, true}) {
        const float offset = residual ? 1.0f : 0.0f;
        const std::string what = std::string(DTypeName(dtype)) + label +
                                 " H=" + std::to_string(hidden) + " rows=" + std::to_string(rows) +
                                 " weight=" + DTypeName(weight_dtype) +
                                 (residual ? " +residual" : "");
        SCOPED_TRACE(what);
        if (!admits(rows, residual, what)) continue;
        ASSERT_EQ(RunAndCheck(inputs, weight_dtype, residual, false, offset, options, rng, what),
                  0);
      }
    }
  }
}

}  // namespace normd::gputest
