// The warp-row kernel (RmsNormWarpRowKernel: one warp per row, the row and its weight held in
// registers for one pass) against the fp64 reference: forced (RmsNormOptions::WarpRow::kOn) at
// every vector count per lane and several rows per block, in place, off the vector path (where
// the launcher falls back), and its automatic choice at the shapes it was measured on. Same
// tolerances, poisoning and guards as rmsnorm_cuda_test.cc. Each case first asserts that the
// warp-row kernel is the one chosen, so a silent fallback would fail rather than pass.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/single_segment_runs.h"

namespace normd::gputest {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

cuda::RmsNormOptions WarpRow(int vectors_per_thread, int rows_per_block) {
  cuda::RmsNormOptions options;
  options.warp_row = cuda::RmsNormOptions::WarpRow::kOn;
  options.vectors_per_thread = vectors_per_thread;
  options.rows_per_block = rows_per_block;
  return options;
}

// H of one vector (lanes 1-31 idle), 125 vectors (the last three lanes of the fourth vector idle)
// and 128 (every lane busy) x vectors per lane from the fewest that hold the row to four x rows
// {1, 19, 989, 70000} (partial last blocks) x weight dtype x residual x weight_offset, with 1, 2,
// 4 and 8 rows per block in turn; and in place.
TEST(RmsNormCudaWarpRow, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x3A3A);
  int turn = 0;
  for (const DType dtype : kDTypes) {
    const int64_t vec_elems = 16 / static_cast<int64_t>(ItemSize(dtype));
    for (const int64_t vectors : {int64_t{1}, int64_t{125}, int64_t{128}}) {
      const int64_t hidden = vectors * vec_elems;
      int fewest = 1;
      while (32 * fewest < vectors) fewest *= 2;
      for (int n = fewest; n <= 4; n *= 2) {
        const int rows_per_block = 1 << (turn++ % 4);
        const cuda::RmsNormOptions options = WarpRow(n, rows_per_block);
        const std::string label =
            " warp-row x" + std::to_string(n) + " b" + std::to_string(rows_per_block);
        SweepRowsWeightsResidual(dtype, hidden, options, label, rng,
                                 [&](int64_t rows, bool residual, const std::string& what) {
                                   const cuda::KernelShape shape = cuda::ChooseKernelShape(
                                       dtype, hidden, rows, residual, options);
                                   EXPECT_TRUE(shape.warp_row) << what;
                                   EXPECT_EQ(shape.vectors_per_thread, n) << what;
                                   EXPECT_EQ(shape.threads_per_block, 32 * rows_per_block) << what;
                                   return shape.warp_row;
                                 });
        if (HasFatalFailure()) return;
        // In place: each lane reads its vectors before it overwrites them.
        const std::string what =
            std::string(DTypeName(dtype)) + label + " in place H=" + std::to_string(hidden);
        SCOPED_TRACE(what);
        const Inputs inputs(dtype, hidden, 301, rng);
        ASSERT_EQ(RunAndCheck(inputs, DType::kFloat32, true, true, 0.0f, options, rng, what), 0);
      }
    }
  }
}

// Every instance of the warp-row kernel (dtype x vectors per lane x residual x weight dtype) at
// few rows of 29, 61 and 125 vectors (one, two and four per lane, the last lanes idle) with 1 and
// 8 rows per block (a block mostly past the last row), in place or not. Small enough for
// compute-sanitizer's memcheck and racecheck (bench/cuda/run_h200.sh, step sanitizer).
TEST(RmsNormCudaWarpRow, EveryVariantAtFewRows) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x6D6D);
  for (const DType dtype : kDTypes) {
    for (const auto& [vectors, n] : {std::pair{29, 1}, std::pair{61, 2}, std::pair{125, 4}}) {
      const int64_t hidden = vectors * (16 / static_cast<int64_t>(ItemSize(dtype)));
      const Inputs inputs(dtype, hidden, 5, rng);
      for (const int rows_per_block : {1, 8}) {
        for (const DType weight_dtype : {dtype, DType::kFloat32}) {
          for (const bool residual : {false, true}) {
            for (const bool in_place : {false, true}) {
              const std::string what =
                  std::string(DTypeName(dtype)) + " warp-row x" + std::to_string(n) + " b" +
                  std::to_string(rows_per_block) + " weight=" + DTypeName(weight_dtype) +
                  (residual ? " +residual" : "") + (in_place ? " in place" : "");
              SCOPED_TRACE(what);
              const cuda::RmsNormOptions options = WarpRow(n, rows_per_block);
              ASSERT_TRUE(
                  cuda::ChooseKernelShape(dtype, hidden, inputs.rows, residual, options).warp_row);
              ASSERT_EQ(RunAndCheck(inputs, weight_dtype, residual, in_place,
                                    residual ? 1.0f : 0.0f, options, rng, what),
                        0);
            }
          }
        }
      }
    }
  }
}

// Forced where the launcher cannot run it: 16-bit rows of 500 elements are not whole 16-byte
// vectors, so the kernel that would have run without it (the register kernel) must, correctly.
TEST(RmsNormCudaWarpRow, FallsBackOffTheVectorPath) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x4B4B);
  const cuda::RmsNormOptions options = WarpRow(0, 0);
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    ASSERT_TRUE(cuda::ChooseKernelShape(dtype, 500, 77, true, options).warp_row);
    const Inputs inputs(dtype, 500, 77, rng);
    for (const bool residual : {false, true}) {
      const std::string what =
          std::string(DTypeName(dtype)) + " warp-row forced H=500" + (residual ? " +residual" : "");
      SCOPED_TRACE(what);
      ASSERT_EQ(RunAndCheck(inputs, dtype, residual, false, 1.0f, options, rng, what), 0);
    }
  }
}

// The automatic choice (v15): 16-bit H 1024 at 1024 and 16384 rows, plain and with a residual,
// row counts the H sweep of rmsnorm_cuda_test.cc does not reach for it.
TEST(RmsNormCudaWarpRow, AutomaticChoice) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x5C5C);
  const cuda::RmsNormOptions automatic;
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const int64_t rows : {int64_t{1024}, int64_t{16384}}) {
      const Inputs inputs(dtype, 1024, rows, rng);
      for (const bool residual : {false, true}) {
        const std::string what = std::string(DTypeName(dtype)) +
                                 " automatic H=1024 rows=" + std::to_string(rows) +
                                 (residual ? " +residual" : "");
        SCOPED_TRACE(what);
        ASSERT_TRUE(cuda::ChooseKernelShape(dtype, 1024, rows, residual, automatic).warp_row);
        ASSERT_EQ(RunAndCheck(inputs, dtype, residual, false, residual ? 1.0f : 0.0f, automatic,
                              rng, what),
                  0);
      }
    }
  }
}

}  // namespace
}  // namespace normd::gputest
