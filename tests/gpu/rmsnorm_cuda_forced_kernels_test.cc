// Kernels forced by RmsNormOptions whatever the automatic choice would be, against the fp64
// reference: the staged kernel (rows streamed through shared memory by the copy engine,
// RmsNormStagedKernel; Staging::kOn), the lean two-pass kernel (LeanTwoPass::kOn), the reload
// kernel (Reload::kOn), the cluster kernel (cluster_ctas), the split-row kernel (split_ctas) and
// the push kernel (SplitPush::kOn); and, with the same helpers, the reload kernel's automatic
// choice for many fp32 rows with a residual, at row counts rmsnorm_cuda_test.cc's H sweep does not
// reach.
// Same tolerances, poisoning and guards as rmsnorm_cuda_test.cc. Each case first asserts that the
// forced kernel is the one chosen, so a silent fallback to the register kernel would fail rather
// than pass.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/single_segment_runs.h"

namespace normd::gputest {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

cuda::RmsNormOptions Staged(int stages = 0) {
  cuda::RmsNormOptions options;
  options.staging = cuda::RmsNormOptions::Staging::kOn;
  options.staged_stages = stages;
  return options;
}

// H x rows (1 row, partial last tiles, many tiles per block) x dtype x weight dtype x residual x
// weight_offset.
TEST(RmsNormCudaStaged, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x7777);
  for (const DType dtype : kDTypes) {
    const int64_t vec_elems = 16 / static_cast<int64_t>(ItemSize(dtype));
    for (const int64_t hidden : {vec_elems, int64_t{1024}, int64_t{3000}, int64_t{4096},
                                 int64_t{5120}, int64_t{7168}, int64_t{8192}, int64_t{16384}}) {
      SweepRowsWeightsResidual(dtype, hidden, Staged(), "", rng,
                               [&](int64_t rows, bool residual, const std::string& what) {
                                 const cuda::StagedShape shape = cuda::ChooseStagedShape(
                                     dtype, hidden, rows, residual, Staged());
                                 // fp32 rows of 16384 with a residual: one stage (x and r) is 128
                                 // KB, no room for two.
                                 if (dtype == DType::kFloat32 && hidden == 16384 && residual) {
                                   EXPECT_EQ(shape.rows_per_tile, 0) << what;
                                   return false;
                                 }
                                 EXPECT_GT(shape.rows_per_tile, 0) << what << ": no staged shape";
                                 return shape.rows_per_tile > 0;
                               });
      if (HasFatalFailure()) return;
    }
  }
}

// Every stage count from 2 to 8 that fits the shared-memory budget (each a different ring of
// barriers and parities), with enough tiles per block that the ring wraps many times and a partial
// last tile. Counts past the budget give no staged shape.
TEST(RmsNormCudaStaged, EveryStageCount) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x8888);
  for (const DType dtype : {DType::kBFloat16, DType::kFloat32}) {
    const int64_t vec_elems = 16 / static_cast<int64_t>(ItemSize(dtype));
    // 16-byte rows: 512 per tile, so all 8 stages fit; 4096: 32 KB tiles, up to 6 (3 fused). Either
    // gives each block over 2 x 8 tiles.
    for (const auto& [hidden, rows] : {std::pair<int64_t, int64_t>{vec_elems, 2000003},
                                       std::pair<int64_t, int64_t>{4096, 8003}}) {
      const Inputs inputs(dtype, hidden, rows, rng);
      for (const bool residual : {false, true}) {
        const int most = cuda::ChooseStagedShape(dtype, hidden, rows, residual, Staged()).stages;
        ASSERT_GE(most, 2);
        for (int stages = 2; stages <= 8; ++stages) {
          const std::string what = std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
                                   " stages=" + std::to_string(stages) +
                                   (residual ? " +residual" : "");
          SCOPED_TRACE(what);
          const cuda::StagedShape shape =
              cuda::ChooseStagedShape(dtype, hidden, rows, residual, Staged(stages));
          if (stages > most) {
            EXPECT_EQ(shape.rows_per_tile, 0) << what << ": past the budget";
            continue;
          }
          ASSERT_EQ(shape.stages, stages) << what;
          ASSERT_EQ(RunAndCheck(inputs, dtype, residual, false, 0.0f, Staged(stages), rng, what),
                    0);
        }
      }
    }
  }
}

// output == input and residual_out == residual: a tile is read into shared memory before any of
// its rows is written, and later tiles are other rows.
TEST(RmsNormCudaStaged, InPlace) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x9999);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {1024, 4096, 16384}) {
      const bool residual = !(dtype == DType::kFloat32 && hidden == 16384);
      const std::string what =
          std::string(DTypeName(dtype)) + " in place H=" + std::to_string(hidden);
      SCOPED_TRACE(what);
      const Inputs inputs(dtype, hidden, 3001, rng);
      ASSERT_EQ(RunAndCheck(inputs, DType::kFloat32, residual, true, 0.0f, Staged(), rng, what), 0);
    }
  }
}

cuda::RmsNormOptions Lean() {
  cuda::RmsNormOptions options;
  options.lean_two_pass = cuda::RmsNormOptions::LeanTwoPass::kOn;
  options.staging = cuda::RmsNormOptions::Staging::kOff;
  return options;
}

// The lean two-pass kernel: H (one vector, the element path at 111, one and several iterations per
// pass, past 16384) x rows x dtype x weight dtype x residual x weight_offset, and in place.
TEST(RmsNormCudaLean, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0xBBBB);
  for (const DType dtype : kDTypes) {
    const int64_t vec_elems = 16 / static_cast<int64_t>(ItemSize(dtype));
    for (const int64_t hidden :
         {vec_elems, int64_t{111}, int64_t{1024}, int64_t{3000}, int64_t{4096}, int64_t{7168},
          int64_t{8192}, int64_t{16384}, int64_t{20000}, int64_t{65536}}) {
      SweepRowsWeightsResidual(dtype, hidden, Lean(), " lean", rng,
                               [&](int64_t rows, bool residual, const std::string& what) {
                                 const cuda::KernelShape shape =
                                     cuda::ChooseKernelShape(dtype, hidden, rows, residual, Lean());
                                 EXPECT_TRUE(shape.two_pass && shape.lean) << what;
                                 return shape.lean;
                               });
      if (HasFatalFailure()) return;
      // In place: each thread reads its vectors in both passes before it overwrites them.
      const std::string what =
          std::string(DTypeName(dtype)) + " lean in place H=" + std::to_string(hidden);
      SCOPED_TRACE(what);
      const Inputs inputs(dtype, hidden, 301, rng);
      ASSERT_EQ(RunAndCheck(inputs, DType::kFloat32, true, true, 0.0f, Lean(), rng, what), 0);
    }
  }
}

cuda::RmsNormOptions Reload(int vectors_per_thread) {
  cuda::RmsNormOptions options;
  options.reload = cuda::RmsNormOptions::Reload::kOn;
  options.vectors_per_thread = vectors_per_thread;
  options.staging = cuda::RmsNormOptions::Staging::kOff;
  return options;
}

// The reload kernel (the row read twice, the second time from L1), forced with 1 and 2 vectors per
// thread in turn (at least what fits the row in 1024 threads: 4 for fp32 rows of 16384), and with 4
// at H 8192 and (4096 rows, plain) 7168: H (one vector and 1024: several rows per
// warp or block; idle threads at 3000 and 5120; up to 16384, 1024-thread blocks) x rows x dtype x
// weight dtype x residual x weight_offset, and in place.
TEST(RmsNormCudaReload, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0xDDDD);
  int turn = 0;
  for (const DType dtype : kDTypes) {
    const int64_t vec_elems = 16 / static_cast<int64_t>(ItemSize(dtype));
    for (const int64_t hidden : {vec_elems, int64_t{1024}, int64_t{3000}, int64_t{4096},
                                 int64_t{5120}, int64_t{7168}, int64_t{8192}, int64_t{16384}}) {
      const int64_t vectors = hidden / vec_elems;
      int n = 1 << (turn++ % 2);
      while (vectors > int64_t{1024} * n) n *= 2;
      std::vector<int> counts = {n};
      if (hidden == 8192) counts.push_back(4);
      for (const int count : counts) {
        const std::string label = " reload x" + std::to_string(count);
        SweepRowsWeightsResidual(dtype, hidden, Reload(count), label, rng,
                                 [&](int64_t rows, bool residual, const std::string& what) {
                                   const cuda::KernelShape shape = cuda::ChooseKernelShape(
                                       dtype, hidden, rows, residual, Reload(count));
                                   EXPECT_TRUE(shape.reload && shape.vectors_per_thread == count)
                                       << what;
                                   return shape.reload;
                                 });
        if (HasFatalFailure()) return;
        // In place: each thread reads its vectors in both passes before it overwrites them.
        const std::string what =
            std::string(DTypeName(dtype)) + label + " in place H=" + std::to_string(hidden);
        SCOPED_TRACE(what);
        const Inputs inputs(dtype, hidden, 301, rng);
        ASSERT_EQ(RunAndCheck(inputs, DType::kFloat32, true, true, 0.0f, Reload(count), rng, what),
                  0);
      }
      if (hidden == 7168) {
        // Plain 16-bit rows of 7168 from 4096 rows take four vectors in the 64-register build
        // (KernelShape::reload_wide), which the row counts above do not reach.
        const std::string what = std::string(DTypeName(dtype)) + " reload x4 H=7168 rows=4096";
        SCOPED_TRACE(what);
        const cuda::KernelShape shape =
            cuda::ChooseKernelShape(dtype, hidden, 4096, false, Reload(4));
        ASSERT_TRUE(shape.reload && shape.vectors_per_thread == 4);
        EXPECT_EQ(shape.reload_wide, dtype != DType::kFloat32);
        const Inputs inputs(dtype, hidden, 4096, rng);
        ASSERT_EQ(RunAndCheck(inputs, dtype, false, false, 0.0f, Reload(4), rng, what), 0);
      }
    }
  }
}

// Every variant of the reload kernel (dtype x vectors per thread (1, 2, 4) x residual x weight
// dtype, and for two vectors with a residual both register caps) at few rows: several rows per
// block (H 1024), idle threads (3000), 1024-thread blocks (8192 of fp32, 16384), in place or not.
// Small enough for compute-sanitizer's memcheck and racecheck (bench/cuda/run_h200.sh, step
// sanitizer).
TEST(RmsNormCudaReload, EveryVariantAtFewRows) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0xEEEE);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {1024, 3000, 8192, 16384}) {
      const Inputs inputs(dtype, hidden, 5, rng);
      for (const int n : {1, 2, 4}) {
        if (hidden / (16 / static_cast<int64_t>(ItemSize(dtype))) > 1024 * n) continue;
        for (const DType weight_dtype : {dtype, DType::kFloat32}) {
          for (const bool residual : {false, true}) {
            for (const bool in_place : {false, true}) {
              const std::string what =
                  std::string(DTypeName(dtype)) + " reload x" + std::to_string(n) +
                  " H=" + std::to_string(hidden) + " weight=" + DTypeName(weight_dtype) +
                  (residual ? " +residual" : "") + (in_place ? " in place" : "");
              SCOPED_TRACE(what);
              ASSERT_TRUE(
                  cuda::ChooseKernelShape(dtype, hidden, inputs.rows, residual, Reload(n)).reload);
              const float offset = residual ? 1.0f : 0.0f;
              ASSERT_EQ(RunAndCheck(inputs, weight_dtype, residual, in_place, offset, Reload(n),
                                    rng, what),
                        0);
            }
          }
        }
      }
    }
  }
}

// The automatic choice of the reload kernel for many fp32 rows with a residual (v14): two vectors
// per thread at H 3000 (idle threads in the last warp), four at H 5120 and 7168 (the 64-register
// build), at row counts the H sweep of rmsnorm_cuda_test.cc does not reach for them.
TEST(RmsNormCudaReload, AutomaticChoiceForManyFp32RowsWithResidual) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0xABAB);
  const cuda::RmsNormOptions automatic;
  struct Case {
    int64_t hidden, rows;
    int vectors_per_thread;
  };
  for (const Case& c : {Case{3000, 16384, 2}, Case{5120, 4096, 4}, Case{7168, 16384, 4}}) {
    const std::string what = "fp32 automatic +residual H=" + std::to_string(c.hidden) +
                             " rows=" + std::to_string(c.rows);
    SCOPED_TRACE(what);
    const cuda::KernelShape shape =
        cuda::ChooseKernelShape(DType::kFloat32, c.hidden, c.rows, true, automatic);
    ASSERT_TRUE(shape.reload);
    ASSERT_EQ(shape.vectors_per_thread, c.vectors_per_thread);
    const Inputs inputs(DType::kFloat32, c.hidden, c.rows, rng);
    ASSERT_EQ(RunAndCheck(inputs, DType::kFloat32, true, false, 1.0f, automatic, rng, what), 0);
  }
}

// The automatic choice of the reload kernel at 1024-4095 rows (v16): 16-bit rows with a residual
// of H 5120 (two vectors per thread), 7168 and 8192 (four, the 64-register build), plain fp32 rows
// of H 1024 (one); row counts the H sweep of rmsnorm_cuda_test.cc does not reach for them.
TEST(RmsNormCudaReload, AutomaticChoiceAtFewThousandRows) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0xCDCD);
  const cuda::RmsNormOptions automatic;
  struct Case {
    DType dtype;
    int64_t hidden, rows;
    bool residual;
    int vectors_per_thread;
  };
  for (const Case& c :
       {Case{DType::kBFloat16, 5120, 1024, true, 2}, Case{DType::kFloat16, 7168, 2047, true, 4},
        Case{DType::kBFloat16, 8192, 4095, true, 4}, Case{DType::kFloat32, 1024, 3001, false, 1}}) {
    const std::string what = std::string(DTypeName(c.dtype)) +
                             " automatic H=" + std::to_string(c.hidden) +
                             " rows=" + std::to_string(c.rows) + (c.residual ? " +residual" : "");
    SCOPED_TRACE(what);
    const cuda::KernelShape shape =
        cuda::ChooseKernelShape(c.dtype, c.hidden, c.rows, c.residual, automatic);
    ASSERT_TRUE(shape.reload);
    ASSERT_EQ(shape.vectors_per_thread, c.vectors_per_thread);
    const Inputs inputs(c.dtype, c.hidden, c.rows, rng);
    // Weights of the input's dtype, and fp32 weights of a 16-bit row.
    for (const DType weight_dtype : {c.dtype, DType::kFloat32}) {
      if (weight_dtype == c.dtype && c.dtype == DType::kFloat32) continue;  // fp32: run once
      ASSERT_EQ(RunAndCheck(inputs, weight_dtype, c.residual, false, c.residual ? 1.0f : 0.0f,
                            automatic, rng, what + " weight=" + DTypeName(weight_dtype)),
                0);
    }
  }
}

cuda::RmsNormOptions Cluster(int ctas) {
  cuda::RmsNormOptions options;
  options.cluster_ctas = ctas;
  options.staging = cuda::RmsNormOptions::Staging::kOff;
  return options;
}

// The cluster kernel (each row split over C CTAs, the sum of squares completed through
// distributed shared memory), forced with C = 2, 4 and 8 in turn (at least the C that fits the row
// in 512-thread CTAs): H (one vector, the element path at 1, 111 and 500 (fp32: 125 vectors,
// 16-bit: 62.5), several widths up to 16384) x rows x dtype x weight dtype x residual x
// weight_offset, and in place.
TEST(RmsNormCudaCluster, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0xCCCC);
  int turn = 0;
  for (const DType dtype : kDTypes) {
    const int64_t vec_elems = 16 / static_cast<int64_t>(ItemSize(dtype));
    for (const int64_t hidden : {vec_elems, int64_t{1}, int64_t{111}, int64_t{500}, int64_t{3000},
                                 int64_t{4096}, int64_t{7168}, int64_t{16384}}) {
      int ctas = 2 << (turn++ % 3);
      while ((hidden + vec_elems - 1) / vec_elems > int64_t{512} * ctas) ctas *= 2;
      const std::string label = " cluster " + std::to_string(ctas);
      SweepRowsWeightsResidual(dtype, hidden, Cluster(ctas), label, rng,
                               [&](int64_t rows, bool residual, const std::string& what) {
                                 const cuda::KernelShape shape = cuda::ChooseKernelShape(
                                     dtype, hidden, rows, residual, Cluster(ctas));
                                 EXPECT_EQ(shape.cluster_ctas, ctas) << what;
                                 return shape.cluster_ctas == ctas;
                               });
      if (HasFatalFailure()) return;
      // In place: each thread reads its elements before it overwrites them.
      const std::string what =
          std::string(DTypeName(dtype)) + label + " in place H=" + std::to_string(hidden);
      SCOPED_TRACE(what);
      const Inputs inputs(dtype, hidden, 7, rng);
      ASSERT_EQ(RunAndCheck(inputs, DType::kFloat32, true, true, 0.0f, Cluster(ctas), rng, what),
                0);
    }
  }
}

cuda::RmsNormOptions SplitRow(int ctas) {
  cuda::RmsNormOptions options;
  options.split_ctas = ctas;
  options.staging = cuda::RmsNormOptions::Staging::kOff;
  return options;
}

// The split-row kernel (each of C CTAs sums the whole row, stores 1/C of it), forced with C = 2, 4
// and 8 in turn, automatic threads: H on the vector path (65 vectors of 16-bit, the widths
// up to 16384) x rows x dtype x weight dtype x residual x weight_offset. The C CTAs of a row must
// agree on its scale, and between them write every element once.
TEST(RmsNormCudaSplitRow, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x5B11);
  int turn = 0;
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {int64_t{520}, int64_t{3000}, int64_t{4096}, int64_t{5120},
                                 int64_t{7168}, int64_t{8192}, int64_t{16384}}) {
      const int ctas = 2 << (turn++ % 3);
      const std::string label = " split " + std::to_string(ctas);
      SweepRowsWeightsResidual(dtype, hidden, SplitRow(ctas), label, rng,
                               [&](int64_t rows, bool residual, const std::string& what) {
                                 const cuda::KernelShape shape = cuda::ChooseKernelShape(
                                     dtype, hidden, rows, residual, SplitRow(ctas));
                                 EXPECT_GT(shape.split_ctas, 1) << what;
                                 EXPECT_LE(shape.split_ctas, ctas) << what;
                                 return shape.split_ctas > 1;
                               });
      if (HasFatalFailure()) return;
    }
  }
}

// Every split size at a few rows, small enough for compute-sanitizer: dtype x H x C x threads
// (automatic, and 128 where they hold the row) x residual, with programmatic dependent launch (the
// weight read before the wait) every third case, so that each combination meets both.
TEST(RmsNormCudaSplitRow, EverySizeAtFewRows) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x5B13);
  int turn = 0;
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {int64_t{520}, int64_t{4096}, int64_t{7168}}) {
      const Inputs inputs(dtype, hidden, 3, rng);
      for (const int ctas : {2, 4, 8}) {
        for (const int threads : {0, 128}) {
          for (const bool residual : {false, true}) {
            cuda::RmsNormOptions options = SplitRow(ctas);
            options.threads_per_row = threads;
            options.programmatic_dependent_launch = (turn++ % 3) == 1;
            options.weight_before_dependency_wait = options.programmatic_dependent_launch;
            const std::string what = std::string(DTypeName(dtype)) + " split " +
                                     std::to_string(ctas) + "x" + std::to_string(threads) +
                                     " H=" + std::to_string(hidden) +
                                     (residual ? " +residual" : "") +
                                     (options.programmatic_dependent_launch ? " pdl" : "");
            SCOPED_TRACE(what);
            const cuda::KernelShape shape =
                cuda::ChooseKernelShape(dtype, hidden, 3, residual, options);
            if (threads != 0 && shape.threads_per_row == 0) continue;  // 128 x 8 is too few
            ASSERT_GT(shape.split_ctas, 1);
            ASSERT_EQ(RunAndCheck(inputs, dtype, residual, false, 1.0f, options, rng, what), 0);
          }
        }
      }
    }
  }
}

cuda::RmsNormOptions Push(int ctas, int threads) {
  cuda::RmsNormOptions options;
  options.split_push = cuda::RmsNormOptions::SplitPush::kOn;
  options.split_ctas = ctas;
  options.threads_per_row = threads;
  return options;
}

// The push kernel (a row's C CTAs a cluster, each reading its share only and pushing its partial
// sum into the others' shared memory), forced: every C (16: a non-portable cluster size) x threads
// x residual x PDL at 3 and 16 rows, H up to 65536 (past the register kernels' 16384), in place in
// every fourth case (each CTA reads and writes only its own share), weights of fp32 and of the
// input's dtype in turn.
TEST(RmsNormCudaSplitPush, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x5B16);
  int turn = 0;
  int pushed = 0;
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden :
         {int64_t{520}, int64_t{4096}, int64_t{7168}, int64_t{16384}, int64_t{65536}}) {
      for (const int64_t rows : {int64_t{3}, int64_t{16}}) {
        const Inputs inputs(dtype, hidden, rows, rng);
        for (const int ctas : {2, 4, 8, 16}) {
          for (const int threads : {0, 128}) {
            for (const bool residual : {false, true}) {
              cuda::RmsNormOptions options = Push(ctas, threads);
              const int case_number = turn++;
              options.programmatic_dependent_launch = case_number % 3 == 1;
              options.weight_before_dependency_wait = options.programmatic_dependent_launch;
              const bool in_place = case_number % 4 == 3;
              const DType weight_dtype = case_number % 2 == 0 ? dtype : DType::kFloat32;
              const std::string what =
                  std::string(DTypeName(dtype)) + " push " + std::to_string(ctas) + "x" +
                  std::to_string(threads) + " H=" + std::to_string(hidden) +
                  " rows=" + std::to_string(rows) + (residual ? " +residual" : "") +
                  (in_place ? " in place" : "") + " weight " + DTypeName(weight_dtype) +
                  (options.programmatic_dependent_launch ? " pdl" : "");
              SCOPED_TRACE(what);
              const cuda::KernelShape shape =
                  cuda::ChooseKernelShape(dtype, hidden, rows, residual, options);
              // Shares over 8 vectors per thread (128 threads, or fp32 65536 over 2 CTAs): refused.
              if (shape.threads_per_row == 0) continue;
              ASSERT_TRUE(shape.split_push);
              ASSERT_EQ(shape.split_ctas, ctas);
              ++pushed;
              ASSERT_EQ(
                  RunAndCheck(inputs, weight_dtype, residual, in_place, 1.0f, options, rng, what),
                  0);
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(pushed, 444);  // the 480 cases above, less the 36 whose share is too large
}

// Where the split-row kernel must not run, a forced split still computes the right answer with the
// kernel that would have run without it: in place (a CTA storing its share would change the row
// another CTA is still reading) and off the vector path (a row of 4100 16-bit elements is not a
// whole number of 16-byte vectors). With threads_per_row forced too (the split's CTA size), the
// fallback chooses its own: 16-bit H 7168 in 128 threads would need 8 vectors per thread, which
// the register kernel refuses (cudaErrorInvalidValue before the fallback dropped it).
TEST(RmsNormCudaSplitRow, FallsBackWhereItCannotRun) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x5B12);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {int64_t{4096}, int64_t{4100}, int64_t{7168}}) {
      for (const int threads : {0, 128}) {
        cuda::RmsNormOptions options = SplitRow(8);
        options.threads_per_row = threads;
        const cuda::KernelShape shape = cuda::ChooseKernelShape(dtype, hidden, 3, true, options);
        if (shape.threads_per_row == 0) continue;  // fp32 H 7168: 128 threads of 8 vectors too few
        ASSERT_GT(shape.split_ctas, 1);
        const Inputs inputs(dtype, hidden, 3, rng);
        for (const bool in_place : {true, false}) {
          if (!in_place && hidden != 4100) continue;  // MatchesReference's cases
          const std::string what = std::string(DTypeName(dtype)) + " split 8x" +
                                   std::to_string(threads) + " H=" + std::to_string(hidden) +
                                   (in_place ? " in place" : "");
          SCOPED_TRACE(what);
          for (const bool residual : {false, true}) {
            ASSERT_EQ(RunAndCheck(inputs, dtype, residual, in_place, 0.0f, options, rng, what), 0);
          }
        }
      }
    }
  }
}

// Where the push kernel cannot run, a forced push still computes the right answer with the kernel
// that would have run without it: off the vector path (4100 and 7170 16-bit elements are not a
// whole number of 16-byte vectors), with the push's C and G forced too (128 threads
// would be the split's CTA size or a row group the fallback may refuse). Batched launches (a
// segment table) are covered by RmsNormCudaBatched with the automatic choice.
TEST(RmsNormCudaSplitPush, FallsBackWhereItCannotRun) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x5B17);
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const int64_t hidden : {int64_t{4100}, int64_t{7170}}) {
      for (const int threads : {0, 128}) {
        const cuda::RmsNormOptions options = Push(8, threads);
        const std::string what = std::string(DTypeName(dtype)) +
                                 " forced push H=" + std::to_string(hidden) +
                                 " threads=" + std::to_string(threads);
        SCOPED_TRACE(what);
        const Inputs inputs(dtype, hidden, 5, rng);
        ASSERT_EQ(RunAndCheck(inputs, dtype, true, false, 1.0f, options, rng, what), 0);
      }
    }
  }
}

// Shapes the staged kernel cannot take: no staged shape, and kOn still computes them (with the
// register kernel); unaligned pointers fall back the same way (rmsnorm_cuda_test.cc's
// MisalignedPointers runs under the automatic choice, this one under kOn).
TEST(RmsNormCudaStaged, FallsBackWhereItCannotRun) {
  for (const int64_t hidden : {int64_t{3}, int64_t{111}, int64_t{20000}}) {
    EXPECT_EQ(
        cuda::ChooseStagedShape(DType::kBFloat16, hidden, 4096, false, Staged()).rows_per_tile, 0)
        << "H=" << hidden;
  }
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kFloat32, 16384, 4096, true, Staged()).rows_per_tile, 0);
  cuda::RmsNormOptions off = Staged();
  off.staging = cuda::RmsNormOptions::Staging::kOff;
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kBFloat16, 4096, 65536, false, off).rows_per_tile, 0);
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kBFloat16, 4096, 65536, false, Staged(1)).rows_per_tile,
            0);
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kBFloat16, 4096, 65536, false, Staged(9)).rows_per_tile,
            0);

  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0xAAAA);
  for (const int64_t hidden : {int64_t{111}, int64_t{20000}}) {
    const std::string what = "bf16 fallback H=" + std::to_string(hidden);
    const Inputs inputs(DType::kBFloat16, hidden, 37, rng);
    ASSERT_EQ(RunAndCheck(inputs, DType::kBFloat16, true, false, 0.0f, Staged(), rng, what), 0);
  }
  const int64_t hidden = 4096;
  const int64_t rows = 77;
  const size_t bytes = static_cast<size_t>(rows * hidden) * 2;
  DeviceBuffer dx(bytes, 2), dy(bytes), dw(hidden * 2);
  const HostBytes x =
      RandomTensor(DType::kBFloat16, static_cast<size_t>(rows * hidden), -2, 2, rng);
  const HostBytes w = RandomTensor(DType::kBFloat16, static_cast<size_t>(hidden), -1.5f, 1.5f, rng);
  dx.Upload(x.data(), bytes);
  dw.Upload(w.data(), w.size());
  dy.Fill(kPoisonByte);
  RmsNormSegment seg;
  seg.input = dx.get();
  seg.output = dy.get();
  seg.weight = dw.get();
  seg.weight_dtype = DType::kBFloat16;
  seg.rows = rows;
  NORMD_CUDA_OK(cuda::RmsNorm(DType::kBFloat16, hidden, seg, nullptr, Staged()));
  NORMD_CUDA_OK(cudaDeviceSynchronize());
  HostBytes y(bytes);
  dy.Download(y.data(), bytes);
  RmsNormSegment host = seg;
  host.input = x.data();
  host.weight = w.data();
  ASSERT_EQ(CheckRows(DType::kBFloat16, hidden, host, y.data(), nullptr,
                      RowsToCheck(rows, hidden, rng), "bf16 misaligned input under kOn"),
            0);
}

}  // namespace
}  // namespace normd::gputest
