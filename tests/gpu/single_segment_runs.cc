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
      dr(bytes),
      dy(bytes),
      dro(bytes),
      dw(static_cast<size_t>(hidden) * 4) {
  dx.Upload(x.data(), bytes);
  dr.Upload(r.data(), bytes);
}

int64_t RunAndCheck(const Inputs& in, const RunSpec& spec, Random& rng, const std::string& what) {
  const DType dtype = in.dtype;
  const bool residual = spec.residual;
  const bool in_place = spec.in_place;
  const HostBytes w =
      RandomTensor(spec.weight_dtype, static_cast<size_t>(in.hidden), -1.5f, 1.5f, rng);
  const DeviceBuffer& dy = in.dy;
  const DeviceBuffer& dro = in.dro;
  const DeviceBuffer& dw = in.dw;
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
  seg.weight_dtype = spec.weight_dtype;
  seg.rows = in.rows;
  seg.eps = (rng.Next() & 1) ? 1e-6f : 1e-5f;
  seg.weight_offset = spec.offset;
  const cudaError_t launched =
      cuda::internal::RmsNormWith(dtype, in.hidden, seg, nullptr, spec.options, spec.overrides);
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

cuda::internal::LaunchTraits TraitsOf(const Inputs& in, const RunSpec& spec) {
  cuda::internal::LaunchTraits t;
  t.dtype = in.dtype;
  t.hidden = in.hidden;
  t.rows = in.rows;
  t.residual = spec.residual;
  t.fp32_weights = in.dtype != DType::kFloat32 && spec.weight_dtype == DType::kFloat32;
  t.alignment = (in.hidden * static_cast<int64_t>(ItemSize(in.dtype))) % 16 == 0
                    ? cuda::internal::Alignment::kVector
                    : cuda::internal::Alignment::kElement;
  t.table = false;
  return t;
}

}  // namespace normd::gputest
