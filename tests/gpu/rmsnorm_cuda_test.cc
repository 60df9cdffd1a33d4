// The CUDA RMSNorm kernels against the fp64 reference (kernels/reference.h), on a real device.
// Tolerances: fp32 within 1e-5 of the value (plus 1e-7 of the row's largest output, for values near
// zero); fp16/bf16 within one unit in the last place of the output dtype. Outputs are poisoned
// (NaN) before every run and checked written.
#include "kernels/cuda/rmsnorm_cuda.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"
#include "tests/gpu/gpu_test_util.h"

namespace normd::gputest {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

std::string Describe(DType dtype, int64_t hidden, int64_t rows, DType weight_dtype, bool residual,
                     float offset, bool batched) {
  return std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
         " rows=" + std::to_string(rows) + " weight=" + std::string(DTypeName(weight_dtype)) +
         (residual ? " +residual" : "") + " offset=" + std::to_string(offset) +
         (batched ? " batched" : " single");
}

// Runs one segment through RmsNorm, or through RmsNormBatched with a one-entry device table (its
// host copy given or not: with it the launch runs as RmsNorm, without it on the table's builds).
cudaError_t RunOne(DType dtype, int64_t hidden, const RmsNormSegment& segment, bool batched,
                   bool host_copy) {
  if (!batched) return cuda::RmsNorm(dtype, hidden, segment, nullptr);
  RmsNormSegment* table = nullptr;
  cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&table), sizeof(RmsNormSegment));
  if (err != cudaSuccess) return err;
  err = cudaMemcpy(table, &segment, sizeof segment, cudaMemcpyHostToDevice);
  RmsNormLaunch launch;
  launch.dtype = dtype;
  launch.hidden = hidden;
  launch.total_rows = segment.rows;
  launch.segments = table;
  launch.num_segments = 1;
  if (err == cudaSuccess) {
    err = host_copy ? cuda::RmsNormBatched(launch, &segment, nullptr)
                    : cuda::RmsNormBatched(launch, nullptr);
  }
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  cudaFree(table);
  return err;
}

class RmsNormSweep : public ::testing::TestWithParam<int64_t> {};

// H x rows x dtype x weight dtype x residual x weight_offset, single and batched entry points.
TEST_P(RmsNormSweep, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  const int64_t hidden = GetParam();
  // Many rows where the reference stays quick: 70000 up to H 500, 9000 (past every throughput
  // threshold of the table) up to H 4096.
  std::vector<int64_t> row_counts = {1, 19, 989};
  if (hidden <= 500) row_counts.push_back(70000);
  if (hidden > 500 && hidden <= 4096) row_counts.push_back(9000);
  Random rng(ProcessSeed() ^ static_cast<uint64_t>(hidden));
  for (const DType dtype : kDTypes) {
    for (const int64_t rows : row_counts) {
      const size_t count = static_cast<size_t>(rows * hidden);
      const size_t bytes = count * ItemSize(dtype);
      const HostBytes x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      const HostBytes r = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      DeviceBuffer dx(bytes), dr(bytes), dy(bytes), dro(bytes);
      ASSERT_TRUE(dx.ok() && dr.ok() && dy.ok() && dro.ok());
      dx.Upload(x.data(), bytes);
      dr.Upload(r.data(), bytes);
      HostBytes y(bytes), ro(bytes);
      std::vector<DType> weight_dtypes = {dtype};
      if (dtype != DType::kFloat32) weight_dtypes.push_back(DType::kFloat32);
      for (const DType weight_dtype : weight_dtypes) {
        const HostBytes w =
            RandomTensor(weight_dtype, static_cast<size_t>(hidden), -1.5f, 1.5f, rng);
        DeviceBuffer dw(w.size());
        dw.Upload(w.data(), w.size());
        for (const bool residual : {false, true}) {
          for (const float offset : {0.0f, 1.0f}) {
            const bool batched = offset != 0.0f;
            const bool host_copy = batched && residual;
            const std::string what =
                Describe(dtype, hidden, rows, weight_dtype, residual, offset, batched);
            SCOPED_TRACE(what);
            RmsNormSegment seg;
            seg.input = dx.get();
            seg.output = dy.get();
            seg.residual = residual ? dr.get() : nullptr;
            seg.residual_out = residual ? dro.get() : nullptr;
            seg.weight = dw.get();
            seg.weight_dtype = weight_dtype;
            seg.rows = rows;
            seg.eps = (rng.Next() & 1) ? 1e-6f : 1e-5f;
            seg.weight_offset = offset;
            dy.Fill(kPoisonByte);
            dro.Fill(kPoisonByte);
            NORMD_CUDA_OK(RunOne(dtype, hidden, seg, batched, host_copy));
            NORMD_CUDA_OK(cudaDeviceSynchronize());
            dy.Download(y.data(), bytes);
            EXPECT_EQ(CountPoisoned(dtype, y.data(), count), 0) << "output elements not written";
            if (residual) {
              dro.Download(ro.data(), bytes);
              EXPECT_EQ(CountPoisoned(dtype, ro.data(), count), 0) << "residual_out not written";
            }
            RmsNormSegment host = seg;
            host.input = x.data();
            host.residual = residual ? r.data() : nullptr;
            host.weight = w.data();
            const int64_t bad =
                CheckRows(dtype, hidden, host, y.data(), residual ? ro.data() : nullptr,
                          RowsToCheck(rows, hidden, rng), what);
            ASSERT_EQ(bad, 0) << what;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Hidden, RmsNormSweep,
                         ::testing::Values(1, 3, 111, 500, 3000, 4096, 5120, 7168, 8192, 16384,
                                           65536),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return "H" + std::to_string(info.param);
                         });

// Base pointers offset by 2, 4, 6 bytes (fp32: 4, 8, 12), each pointer its own offset too: the
// kernels must fall back to element accesses, stay exact, and write nothing outside the buffers.
TEST(RmsNormCuda, MisalignedPointers) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x5151);
  for (const DType dtype : kDTypes) {
    const size_t item = ItemSize(dtype);
    for (const int64_t hidden : {111, 3000, 4096, 16384, 20000}) {
      for (const int shift :
           {1, 2, 3, 8}) {  // in elements: 2/4/6 (fp32 4/8/12) bytes, and 16/32 bytes
        const int64_t rows = 37;
        const size_t count = static_cast<size_t>(rows * hidden);
        const size_t bytes = count * item;
        const size_t off = static_cast<size_t>(shift) * item;
        // Different offsets per pointer: input shifted, output 2 elements further, residual
        // aligned.
        DeviceBuffer dx(bytes, off), dy(bytes, (off + 2 * item) % 16), dr(bytes, 0),
            dro(bytes, (off + item) % 16), dw(hidden * item, off % 16);
        const HostBytes x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
        const HostBytes r = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
        const HostBytes w = RandomTensor(dtype, static_cast<size_t>(hidden), -1.5f, 1.5f, rng);
        dx.Upload(x.data(), bytes);
        dr.Upload(r.data(), bytes);
        dw.Upload(w.data(), w.size());
        for (const bool residual : {false, true}) {
          const std::string what = std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
                                   " shift=" + std::to_string(off) + (residual ? " +residual" : "");
          SCOPED_TRACE(what);
          dy.Fill(kPoisonByte);
          dro.Fill(kPoisonByte);
          dy.ArmGuards();
          dro.ArmGuards();
          RmsNormSegment seg;
          seg.input = dx.get();
          seg.output = dy.get();
          seg.residual = residual ? dr.get() : nullptr;
          seg.residual_out = residual ? dro.get() : nullptr;
          seg.weight = dw.get();
          seg.weight_dtype = dtype;
          seg.rows = rows;
          NORMD_CUDA_OK(cuda::RmsNorm(dtype, hidden, seg, nullptr));
          NORMD_CUDA_OK(cudaDeviceSynchronize());
          HostBytes y(bytes), ro(bytes);
          dy.Download(y.data(), bytes);
          if (residual) dro.Download(ro.data(), bytes);
          EXPECT_TRUE(dy.GuardsIntact()) << "wrote outside the output";
          EXPECT_TRUE(dro.GuardsIntact()) << "wrote outside residual_out";
          RmsNormSegment host = seg;
          host.input = x.data();
          host.residual = residual ? r.data() : nullptr;
          host.weight = w.data();
          ASSERT_EQ(CheckRows(dtype, hidden, host, y.data(), residual ? ro.data() : nullptr,
                              RowsToCheck(rows, hidden, rng), what),
                    0);
        }
      }
    }
  }
}

// All-zero rows give exactly zero (eps > 0), never NaN; also h = x + r = 0 with a residual.
TEST(RmsNormCuda, ZeroRowsGiveZero) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x2222);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {3, 111, 4096, 7168, 65536}) {
      const int64_t rows = 9;
      const size_t count = static_cast<size_t>(rows * hidden);
      const size_t bytes = count * ItemSize(dtype);
      HostBytes x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      HostBytes r(bytes, 0);
      // Rows 2 and 7 zero in x; row 5: r = -x, so h = 0 only with the residual.
      for (int64_t i = 0; i < hidden; ++i) {
        StoreFromFloat(x.data(), dtype, 2 * hidden + i, 0.0f);
        StoreFromFloat(x.data(), dtype, 7 * hidden + i, 0.0f);
        StoreFromFloat(r.data(), dtype, 5 * hidden + i,
                       -LoadAsFloat(x.data(), dtype, 5 * hidden + i));
      }
      const HostBytes w = RandomTensor(dtype, static_cast<size_t>(hidden), -1.5f, 1.5f, rng);
      DeviceBuffer dx(bytes), dr(bytes), dy(bytes), dro(bytes), dw(w.size());
      dx.Upload(x.data(), bytes);
      dr.Upload(r.data(), bytes);
      dw.Upload(w.data(), w.size());
      for (const bool residual : {false, true}) {
        dy.Fill(kPoisonByte);
        dro.Fill(kPoisonByte);
        RmsNormSegment seg;
        seg.input = dx.get();
        seg.output = dy.get();
        seg.residual = residual ? dr.get() : nullptr;
        seg.residual_out = residual ? dro.get() : nullptr;
        seg.weight = dw.get();
        seg.weight_dtype = dtype;
        seg.rows = rows;
        seg.weight_offset = 1.0f;
        NORMD_CUDA_OK(cuda::RmsNorm(dtype, hidden, seg, nullptr));
        NORMD_CUDA_OK(cudaDeviceSynchronize());
        HostBytes y(bytes);
        dy.Download(y.data(), bytes);
        for (const int64_t row : {int64_t{2}, int64_t{7}, residual ? int64_t{5} : int64_t{2}}) {
          for (int64_t i = 0; i < hidden; ++i) {
            ASSERT_EQ(LoadAsFloat(y.data(), dtype, static_cast<size_t>(row * hidden + i)), 0.0f)
                << DTypeName(dtype) << " H=" << hidden << " row " << row << " element " << i;
          }
        }
        RmsNormSegment host = seg;
        host.input = x.data();
        host.residual = residual ? r.data() : nullptr;
        host.weight = w.data();
        ASSERT_EQ(CheckRows(dtype, hidden, host, y.data(), nullptr, RowsToCheck(rows, hidden, rng),
                            std::string(DTypeName(dtype)) + " zero rows"),
                  0);
      }
    }
  }
}

// A NaN in one row makes that row NaN and leaves every other row (several share a warp or a block
// for small H) correct.
TEST(RmsNormCuda, NanConfinedToItsRow) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x3333);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {1, 3, 111, 4096, 65536}) {
      const int64_t rows = 64;
      const int64_t nan_row = 13;
      const size_t count = static_cast<size_t>(rows * hidden);
      const size_t bytes = count * ItemSize(dtype);
      HostBytes x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      StoreFromFloat(x.data(), dtype, static_cast<size_t>(nan_row * hidden + hidden / 2),
                     std::numeric_limits<float>::quiet_NaN());
      const HostBytes w = RandomTensor(dtype, static_cast<size_t>(hidden), -1.5f, 1.5f, rng);
      DeviceBuffer dx(bytes), dy(bytes), dw(w.size());
      dx.Upload(x.data(), bytes);
      dw.Upload(w.data(), w.size());
      dy.Fill(kPoisonByte);
      RmsNormSegment seg;
      seg.input = dx.get();
      seg.output = dy.get();
      seg.weight = dw.get();
      seg.weight_dtype = dtype;
      seg.rows = rows;
      NORMD_CUDA_OK(cuda::RmsNorm(dtype, hidden, seg, nullptr));
      NORMD_CUDA_OK(cudaDeviceSynchronize());
      HostBytes y(bytes);
      dy.Download(y.data(), bytes);
      for (int64_t i = 0; i < hidden; ++i) {
        ASSERT_TRUE(
            std::isnan(LoadAsFloat(y.data(), dtype, static_cast<size_t>(nan_row * hidden + i))));
      }
      std::vector<int64_t> others;
      for (int64_t row = 0; row < rows; ++row) {
        if (row != nan_row) others.push_back(row);
      }
      RmsNormSegment host = seg;
      host.input = x.data();
      host.weight = w.data();
      ASSERT_EQ(CheckRows(dtype, hidden, host, y.data(), nullptr, others,
                          std::string(DTypeName(dtype)) + " NaN row, H=" + std::to_string(hidden)),
                0);
    }
  }
}

// output == input and residual_out == residual.
TEST(RmsNormCuda, InPlace) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x4444);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {3, 500, 4096, 16384, 65536}) {
      const int64_t rows = 77;
      const size_t count = static_cast<size_t>(rows * hidden);
      const size_t bytes = count * ItemSize(dtype);
      const HostBytes x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      const HostBytes r = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      const HostBytes w =
          RandomTensor(DType::kFloat32, static_cast<size_t>(hidden), -1.5f, 1.5f, rng);
      DeviceBuffer dx(bytes), dr(bytes), dw(w.size());
      dx.Upload(x.data(), bytes);
      dr.Upload(r.data(), bytes);
      dw.Upload(w.data(), w.size());
      RmsNormSegment seg;
      seg.input = dx.get();
      seg.output = dx.get();
      seg.residual = dr.get();
      seg.residual_out = dr.get();
      seg.weight = dw.get();
      seg.weight_dtype = DType::kFloat32;
      seg.rows = rows;
      NORMD_CUDA_OK(cuda::RmsNorm(dtype, hidden, seg, nullptr));
      NORMD_CUDA_OK(cudaDeviceSynchronize());
      HostBytes y(bytes), ro(bytes);
      dx.Download(y.data(), bytes);
      dr.Download(ro.data(), bytes);
      RmsNormSegment host = seg;
      host.input = x.data();
      host.residual = r.data();
      host.weight = w.data();
      ASSERT_EQ(CheckRows(dtype, hidden, host, y.data(), ro.data(), RowsToCheck(rows, hidden, rng),
                          std::string(DTypeName(dtype)) + " in place H=" + std::to_string(hidden)),
                0);
    }
  }
}

}  // namespace
}  // namespace normd::gputest
