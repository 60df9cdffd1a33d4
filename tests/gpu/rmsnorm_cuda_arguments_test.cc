// Host-side checks of the CUDA library, which run without a device too: arguments refused before
// they reach it, and the shape choosers' rules (kernel_shapes.cu) for the lean, reload,
// warp-row, cluster and split-row kernels, and that every automatic shape covers its row.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"
#include "tests/gpu/gpu_test_util.h"

namespace normd::gputest {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// Host-side checks: refused arguments never reach the device, and an empty launch is a no-op. These
// run without a device too.
TEST(RmsNormCudaArguments, RefusedOnTheHost) {
  RmsNormSegment seg;
  int dummy = 0;
  seg.input = &dummy;
  seg.output = &dummy;
  seg.weight = &dummy;
  seg.rows = 4;
  seg.weight_dtype = DType::kFloat32;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, 0, seg, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, cuda::kMaxHidden + 1, seg, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::RmsNorm(static_cast<DType>(7), 64, seg, nullptr), cudaErrorInvalidValue);
  RmsNormSegment bad_weight = seg;
  bad_weight.weight_dtype = DType::kBFloat16;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, 64, bad_weight, nullptr), cudaErrorInvalidValue);
  RmsNormSegment no_out = seg;
  no_out.residual = &dummy;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 64, no_out, nullptr), cudaErrorInvalidValue);
  RmsNormSegment empty = seg;
  empty.rows = 0;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 64, empty, nullptr), cudaSuccess);
  RmsNormLaunch launch;
  launch.dtype = DType::kBFloat16;
  launch.hidden = 64;
  launch.total_rows = 0;
  EXPECT_EQ(cuda::RmsNormBatched(launch, nullptr), cudaSuccess);
  launch.total_rows = 3;
  EXPECT_EQ(cuda::RmsNormBatched(launch, nullptr), cudaErrorInvalidValue);  // no table
  cuda::RmsNormOptions too_small;
  too_small.threads_per_row = 32;
  too_small.vectors_per_thread = 1;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 4096, seg, nullptr, too_small), cudaErrorInvalidValue);
}

// The automatic choice takes the lean two-pass kernel only where it was measured faster (see
// LeanTwoPassWins), and the options can force it either way.
TEST(RmsNormCudaArguments, LeanTwoPassChoice) {
  using Lean = cuda::RmsNormOptions::LeanTwoPass;
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 16384, false).lean);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 4096, 4096, false).lean);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 3000, 65536, true).lean);    // reload (v14)
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 8192, 16384, false).lean);   // reload (v10)
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 65536, true).lean);   // reload (v9)
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 65536, false).lean);  // 16-bit plain
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 5120, 65536, true).lean);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 4096, 1024, false).lean);  // too few rows
  cuda::RmsNormOptions off;
  off.lean_two_pass = Lean::kOff;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 16384, false, off).lean);
  cuda::RmsNormOptions on;
  on.lean_two_pass = Lean::kOn;
  const cuda::KernelShape forced = cuda::ChooseKernelShape(DType::kBFloat16, 3000, 7, false, on);
  EXPECT_TRUE(forced.two_pass && forced.lean);
  EXPECT_EQ(forced.threads_per_block, 384);  // 375 vectors in whole warps
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 65536, 7, false, on).threads_per_block, 512);
}

// The automatic choice takes the reload kernel only where it was measured faster (see ReloadWins):
// plain 16-bit rows of H 1024 to 16384 from 1024 rows (two or four vectors per thread), plain fp32
// rows at the H and row counts where they won, rows with a residual at the H and row counts where
// they won (one, two or four vectors per thread, see ReloadVectorsFor); the options force it (where
// the row fits 1024 threads of four vectors) or forbid it.
TEST(RmsNormCudaArguments, ReloadChoice) {
  using Reload = cuda::RmsNormOptions::Reload;
  // 16-bit H 1024 at 16384 rows takes the warp-row kernel (WarpRowChoice): with it off, the
  // reload kernel's shapes there.
  cuda::RmsNormOptions no_warp_row;
  no_warp_row.warp_row = cuda::RmsNormOptions::WarpRow::kOff;
  const cuda::KernelShape bf16 = cuda::ChooseKernelShape(DType::kBFloat16, 5120, 65536, false);
  EXPECT_TRUE(bf16.reload);
  EXPECT_EQ(bf16.vectors_per_thread, 2);
  EXPECT_EQ(bf16.threads_per_row, 320);  // 640 vectors
  // Four vectors per thread for 16-bit H 16384 and 7168, H 5120 and 8192 at 1024 rows.
  const cuda::KernelShape wide = cuda::ChooseKernelShape(DType::kFloat16, 16384, 1024, false);
  EXPECT_TRUE(wide.reload);
  EXPECT_EQ(wide.vectors_per_thread, 4);
  EXPECT_EQ(wide.threads_per_block, 512);
  EXPECT_FALSE(wide.reload_wide);  // the 32-register build
  const cuda::KernelShape h7168 = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 4096, false);
  EXPECT_EQ(h7168.threads_per_row, 224);
  EXPECT_TRUE(h7168.reload_wide);  // the 64-register build measured faster there
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1024, false).reload_wide);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8192, 1024, false).vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8192, 4096, false).vectors_per_thread, 2);
  EXPECT_EQ(
      cuda::ChooseKernelShape(DType::kBFloat16, 1024, 4096, false, no_warp_row).threads_per_row,
      64);
  EXPECT_EQ(
      cuda::ChooseKernelShape(DType::kBFloat16, 1024, 16384, false, no_warp_row).threads_per_row,
      32);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 65536, false).threads_per_row, 32);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 1024, 16384, false).vectors_per_thread, 2);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 5120, 4096, false).vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 5120, 16384, false).vectors_per_thread, 2);
  const cuda::KernelShape narrow =
      cuda::ChooseKernelShape(DType::kBFloat16, 1024, 4096, false, no_warp_row);
  EXPECT_TRUE(narrow.reload);
  EXPECT_EQ(narrow.threads_per_row, 64);
  EXPECT_EQ(narrow.rows_per_block, 4);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 3000, 4096, false).reload);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 5120, 65536, false).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 5120, 65536, false).threads_per_row, 640);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 1024, false).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 7168, 4096, false).vectors_per_thread, 4);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 16384, false).reload);  // lean
  // fp32 H 1024 below 4096 rows (v16): one vector per thread, one row per 256-thread block.
  for (const int64_t rows : {int64_t{1024}, int64_t{4095}}) {
    const cuda::KernelShape fp32_1024 = cuda::ChooseKernelShape(DType::kFloat32, 1024, rows, false);
    EXPECT_TRUE(fp32_1024.reload) << rows;
    EXPECT_EQ(fp32_1024.vectors_per_thread, 1) << rows;
    EXPECT_EQ(fp32_1024.threads_per_block, 256) << rows;
  }
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 1024, 1023, false).reload);
  // fp32 H 8192 and, from 4096 rows, 16384: four vectors per thread (1024 threads for 16384).
  const cuda::KernelShape fp32_16k = cuda::ChooseKernelShape(DType::kFloat32, 16384, 65536, false);
  EXPECT_TRUE(fp32_16k.reload);
  EXPECT_EQ(fp32_16k.threads_per_block, 1024);
  EXPECT_FALSE(fp32_16k.reload_wide);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 16384, 1024, false).reload);  // staged
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 8192, 65536, false).threads_per_row, 512);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 4096, 1024, false).vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 1024, 4096, false).vectors_per_thread, 4);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 5120, 1024, false).reload);
  // With a residual (16-bit): one vector per thread at H 1024, 3000 (from 4096 rows) and 4096; two
  // at 3000 below 4096 rows, 5120, and 7168 and 8192 from 4096 rows; four at 7168 and 8192 below
  // 4096 rows (v16); H 1024 only from 4096 rows.
  const cuda::KernelShape fused_one = cuda::ChooseKernelShape(DType::kBFloat16, 4096, 65536, true);
  EXPECT_TRUE(fused_one.reload);
  EXPECT_EQ(fused_one.vectors_per_thread, 1);
  EXPECT_EQ(fused_one.threads_per_row, 512);
  const cuda::KernelShape fused_two = cuda::ChooseKernelShape(DType::kFloat16, 7168, 4096, true);
  EXPECT_TRUE(fused_two.reload);
  EXPECT_EQ(fused_two.vectors_per_thread, 2);
  EXPECT_EQ(fused_two.threads_per_block, 448);  // the variant given 40 registers (<= 512 threads)
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 3000, 1024, true).vectors_per_thread, 2);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 3000, 4096, true).vectors_per_thread, 1);
  const cuda::KernelShape fused_four = cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1024, true);
  EXPECT_EQ(fused_four.vectors_per_thread, 4);
  EXPECT_TRUE(fused_four.reload_wide);  // four with a residual: always the 64-register build
  EXPECT_EQ(
      cuda::ChooseKernelShape(DType::kFloat16, 1024, 4096, true, no_warp_row).vectors_per_thread,
      4);
  EXPECT_EQ(
      cuda::ChooseKernelShape(DType::kFloat16, 1024, 16384, true, no_warp_row).vectors_per_thread,
      1);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat16, 1024, 65536, true).vectors_per_thread, 1);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 2048, true).reload);
  const cuda::KernelShape h5120 = cuda::ChooseKernelShape(DType::kBFloat16, 5120, 1024, true);
  EXPECT_TRUE(h5120.reload);
  EXPECT_EQ(h5120.vectors_per_thread, 2);
  for (const int64_t hidden : {int64_t{7168}, int64_t{8192}}) {
    for (const DType dtype : {DType::kBFloat16, DType::kFloat16}) {
      const cuda::KernelShape few = cuda::ChooseKernelShape(dtype, hidden, 1024, true);
      EXPECT_TRUE(few.reload && few.reload_wide) << hidden;
      EXPECT_EQ(few.vectors_per_thread, 4) << hidden;
      EXPECT_EQ(few.threads_per_row, hidden / 32) << hidden;
      EXPECT_EQ(cuda::ChooseKernelShape(dtype, hidden, 4095, true).vectors_per_thread, 4) << hidden;
      EXPECT_EQ(cuda::ChooseKernelShape(dtype, hidden, 4096, true).vectors_per_thread, 2) << hidden;
    }
  }
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 1024, 1024, true).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 4096, 4096, true).vectors_per_thread, 2);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 4096, 1024, true).reload);
  // fp32 with a residual (v14): four vectors per thread (the 64-register build) at H 5120 from
  // 4096 rows, at H 8192 and 16384 at every row count from 1024, at H 7168 from 16384 rows; two at
  // H 3000 from 16384 rows.
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 5120, 2048, true).reload);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 3000, 4096, true).reload);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 4096, true).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 7168, 16384, true).vectors_per_thread, 4);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 6144, 65536, true).reload);  // not measured
  for (const int64_t rows : {int64_t{16384}, int64_t{65536}}) {
    const cuda::KernelShape h3000 = cuda::ChooseKernelShape(DType::kFloat32, 3000, rows, true);
    EXPECT_TRUE(h3000.reload && !h3000.lean);
    EXPECT_EQ(h3000.vectors_per_thread, 2);
    EXPECT_EQ(h3000.threads_per_row, 384);  // 750 vectors in whole warps
  }
  for (const int64_t rows : {int64_t{4096}, int64_t{16384}, int64_t{65536}}) {
    for (const int64_t hidden : {int64_t{5120}, int64_t{8192}, int64_t{16384}}) {
      const cuda::KernelShape four = cuda::ChooseKernelShape(DType::kFloat32, hidden, rows, true);
      EXPECT_TRUE(four.reload) << hidden;
      EXPECT_EQ(four.vectors_per_thread, 4) << hidden;
      EXPECT_EQ(four.threads_per_row, hidden / 16) << hidden;
      EXPECT_TRUE(four.reload_wide) << hidden;
      EXPECT_EQ(cuda::ChooseStagedShape(DType::kFloat32, hidden, rows, true).rows_per_tile, 0);
    }
  }
  // Rows of 16384 with a residual: 512 threads of four vectors instead of the staged kernel
  // (16-bit), or 1024 threads of four instead of the register or staged kernel (fp32).
  const cuda::KernelShape fused_wide = cuda::ChooseKernelShape(DType::kBFloat16, 16384, 4096, true);
  EXPECT_TRUE(fused_wide.reload);
  EXPECT_EQ(fused_wide.threads_per_row, 512);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 16384, 4096, true).threads_per_row, 1024);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 8192, 1024, true).threads_per_row, 512);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 8192, 2048, true).reload);
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kBFloat16, 16384, 4096, true).rows_per_tile, 0);
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kFloat32, 16384, 4096, false).rows_per_tile, 0);
  EXPECT_GT(cuda::ChooseStagedShape(DType::kFloat32, 16384, 1024, false).rows_per_tile, 0);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1000, false).reload);  // few rows
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 512, 65536, false).reload);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 20000, 65536, false).reload);
  cuda::RmsNormOptions off;
  off.reload = Reload::kOff;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 65536, false, off).reload);
  cuda::RmsNormOptions on;
  on.reload = Reload::kOn;
  const cuda::KernelShape fused = cuda::ChooseKernelShape(DType::kBFloat16, 3000, 7, true, on);
  EXPECT_TRUE(fused.reload);
  EXPECT_EQ(fused.vectors_per_thread, 2);  // the automatic count: two at H 3000 below 4096 rows
  EXPECT_EQ(fused.threads_per_row, 192);   // 375 vectors in whole warps
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 2048, 7, true, on).vectors_per_thread, 1);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 7, true, on).vectors_per_thread, 4);
  on.vectors_per_thread = 1;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8192, 7, false, on).threads_per_row, 1024);
  // fp32 H 16384 (4096 vectors): four vectors per thread.
  on.vectors_per_thread = 0;
  const cuda::KernelShape fp32_wide = cuda::ChooseKernelShape(DType::kFloat32, 16384, 7, true, on);
  EXPECT_TRUE(fp32_wide.reload);
  EXPECT_EQ(fp32_wide.vectors_per_thread, 4);
  EXPECT_EQ(fp32_wide.threads_per_block, 1024);
  on.vectors_per_thread = 4;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 7, true, on).threads_per_row, 128);
  on.vectors_per_thread = 8;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 4096, 7, false, on).reload);
}

// The automatic choice splits each row over a cluster of CTAs only for rows that move >= 96 KB
// (x, output, and r and residual_out with a residual) in launches of few rows (at most 128 CTAs in
// all); cluster_ctas forces or forbids it.
// The cluster kernel's automatic rule, with the split-row kernel (which takes most of its shapes
// since v11) ruled out; then the shapes it keeps where the push kernel cannot run (segment tables,
// GPUs before sm_90: the launcher chooses again with the push off).
TEST(RmsNormCudaArguments, ClusterChoice) {
  {
    cuda::RmsNormOptions no_push;
    no_push.split_push = cuda::RmsNormOptions::SplitPush::kOff;
    const cuda::KernelShape kept =
        cuda::ChooseKernelShape(DType::kFloat32, 16384, 1, true, no_push);
    EXPECT_EQ(kept.cluster_ctas, 8);  // 256 KB
    EXPECT_EQ(kept.split_ctas, 1);
    EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 8, true, no_push).cluster_ctas, 8);
  }
  cuda::RmsNormOptions no_split;
  no_split.split_ctas = 1;
  no_split.split_push = cuda::RmsNormOptions::SplitPush::kOff;
  auto choose = [&](DType dtype, int64_t hidden, int64_t rows, bool residual) {
    return cuda::ChooseKernelShape(dtype, hidden, rows, residual, no_split);
  };
  const cuda::KernelShape one = choose(DType::kFloat32, 7168, 1, true);
  EXPECT_EQ(one.cluster_ctas, 8);  // 1792 vectors: 224 per CTA
  EXPECT_EQ(one.threads_per_block, 224);
  EXPECT_EQ(one.threads_per_row, 8 * 224);
  EXPECT_EQ(choose(DType::kFloat32, 7168, 8, true).cluster_ctas, 8);
  EXPECT_EQ(choose(DType::kFloat32, 7168, 32, true).cluster_ctas, 4);
  // 64 rows: a cluster of 2 would leave 896 vectors per CTA, over 512 threads.
  EXPECT_EQ(choose(DType::kFloat32, 7168, 64, true).cluster_ctas, 1);
  const cuda::KernelShape wide = choose(DType::kBFloat16, 16384, 1, true);
  EXPECT_EQ(wide.cluster_ctas, 8);
  EXPECT_EQ(wide.threads_per_block, 256);
  EXPECT_EQ(choose(DType::kBFloat16, 16384, 1, false).cluster_ctas, 1);  // 64 KB
  EXPECT_EQ(choose(DType::kBFloat16, 7168, 1, true).cluster_ctas, 1);    // 56 KB
  EXPECT_EQ(choose(DType::kFloat32, 20000, 1, true).cluster_ctas, 1);
  EXPECT_EQ(choose(DType::kFloat32, 7168, 1000, true).cluster_ctas, 1);
  cuda::RmsNormOptions never;
  never.cluster_ctas = 1;
  never.split_ctas = 1;
  never.split_push = cuda::RmsNormOptions::SplitPush::kOff;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 7168, 1, true, never).cluster_ctas, 1);
  cuda::RmsNormOptions forced;
  forced.cluster_ctas = 2;
  const cuda::KernelShape two = cuda::ChooseKernelShape(DType::kFloat32, 3000, 5000, true, forced);
  EXPECT_EQ(two.cluster_ctas, 2);
  EXPECT_EQ(two.threads_per_block, 384);  // 750 vectors: 375 per CTA in whole warps
  forced.cluster_ctas = 3;                // not a supported size
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, forced).threads_per_row, 0);
  forced.cluster_ctas = 8;  // 8192 vectors: 1024 per CTA, over 512 threads
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 65536, 1, false, forced).threads_per_row, 0);
}

// The split-row kernel's shapes: C as forced (fewer only where the row has fewer vectors), G the
// fewest vectors per thread in 512 threads or the threads_per_row given, invalid overrides
// refused, and the automatic choice within 128 CTAs.
TEST(RmsNormCudaArguments, SplitRowChoice) {
  cuda::RmsNormOptions forced;
  forced.split_ctas = 8;
  // bf16 H 7168: 896 vectors, 448 threads of 2.
  const cuda::KernelShape eight = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, true, forced);
  EXPECT_EQ(eight.split_ctas, 8);
  EXPECT_EQ(eight.threads_per_block, 448);
  EXPECT_EQ(eight.vectors_per_thread, 2);
  forced.split_ctas = 4;
  forced.threads_per_row = 128;  // fp32 H 4096: 1024 vectors, 128 threads of 8
  const cuda::KernelShape four =
      cuda::ChooseKernelShape(DType::kFloat32, 4096, 5000, false, forced);
  EXPECT_EQ(four.split_ctas, 4);
  EXPECT_EQ(four.threads_per_block, 128);
  EXPECT_EQ(four.vectors_per_thread, 8);
  forced.threads_per_row = 96;  // fp32 H 16384: 4096 vectors would need 43 per thread
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 16384, 1, false, forced).threads_per_row, 0);
  forced.threads_per_row = 100;  // not whole warps
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 4096, 1, false, forced).threads_per_row, 0);
  forced.threads_per_row = 0;
  forced.split_ctas = 2;  // bf16 H 8: one vector, nothing to split
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8, 1, false, forced).split_ctas, 1);
  EXPECT_GT(cuda::ChooseKernelShape(DType::kBFloat16, 8, 1, false, forced).threads_per_row, 0);
  const cuda::KernelShape wide = cuda::ChooseKernelShape(DType::kFloat32, 16384, 1, false, forced);
  EXPECT_EQ(wide.split_ctas, 2);  // 4096 vectors: 512 threads of 8
  EXPECT_EQ(wide.vectors_per_thread, 8);
  forced.split_ctas = 9;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, forced).threads_per_row, 0);
  forced.split_ctas = 4;
  forced.cluster_ctas = 4;  // two ways of splitting a row at once
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, forced).threads_per_row, 0);
  // The automatic choice (call split_b): 8 CTAs per row up to 4 rows, 4 up to 8, 2 up to 16, for
  // rows that move 10 KB to 128 KB; 256 threads where they hold the row in 4 vectors each. Since
  // v12 the push kernel takes most of these shapes; the split's rule is what runs where the push
  // cannot (the launcher chooses again with it off), and at rows of 10-16 KB.
  cuda::RmsNormOptions no_push;
  no_push.split_push = cuda::RmsNormOptions::SplitPush::kOff;
  auto split_of = [&](DType dtype, int64_t hidden, int64_t rows, bool residual) {
    return cuda::ChooseKernelShape(dtype, hidden, rows, residual, no_push);
  };
  const cuda::KernelShape fused_one = split_of(DType::kBFloat16, 7168, 1, true);
  EXPECT_EQ(fused_one.split_ctas, 8);
  EXPECT_FALSE(fused_one.split_push);
  EXPECT_EQ(fused_one.threads_per_block, 256);
  EXPECT_EQ(fused_one.vectors_per_thread, 4);
  EXPECT_EQ(split_of(DType::kBFloat16, 7168, 4, false).split_ctas, 8);
  EXPECT_EQ(split_of(DType::kBFloat16, 7168, 8, false).split_ctas, 4);
  EXPECT_EQ(split_of(DType::kBFloat16, 7168, 16, false).split_ctas, 2);
  EXPECT_EQ(split_of(DType::kBFloat16, 7168, 17, false).split_ctas, 1);
  const cuda::KernelShape fp32_one = split_of(DType::kFloat32, 7168, 1, false);
  EXPECT_EQ(fp32_one.split_ctas, 8);  // 1792 vectors: the fewest in 512 threads, 448 of 4
  EXPECT_EQ(fp32_one.threads_per_block, 448);
  EXPECT_EQ(fp32_one.vectors_per_thread, 4);
  EXPECT_EQ(split_of(DType::kBFloat16, 1024, 1, true).split_ctas, 1);    // 8 KB
  EXPECT_EQ(split_of(DType::kBFloat16, 3000, 1, false).split_ctas, 8);   // 12 KB
  EXPECT_EQ(split_of(DType::kBFloat16, 16384, 1, true).split_ctas, 1);   // 128 KB
  EXPECT_EQ(split_of(DType::kBFloat16, 16384, 1, false).split_ctas, 8);  // 64 KB
  // Under the whole automatic choice the push kernel takes these rows since v13 (the split runs
  // only where the push is off or cannot run: GPUs before sm_90; segment tables take neither).
  const cuda::KernelShape taken = cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false);
  EXPECT_EQ(taken.split_ctas, 8);  // 16 KB
  EXPECT_TRUE(taken.split_push);
  cuda::RmsNormOptions tuned;  // another tuning override: no automatic split
  tuned.vectors_per_thread = 2;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, tuned).split_ctas, 1);
  cuda::RmsNormOptions never = no_push;
  never.split_ctas = 1;
  for (const int64_t rows : {1, 8, 16, 64, 128}) {
    EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, rows, false, never).split_ctas, 1);
    const cuda::KernelShape automatic =
        cuda::ChooseKernelShape(DType::kBFloat16, 4096, rows, false);
    EXPECT_LE(rows * automatic.split_ctas, 128) << rows;
  }
}

// The push kernel's shapes (call push_b): under the automatic choice, launches of up to 32 rows
// moving more than 16 KB per row, up to 128 rows moving >= 32 KB with a residual or >= 64 KB
// without, and every H past 16384 up to 128 rows; C = 8, or 2 from 65 rows of H <= 16384; one
// vector per thread up to 256 threads. Forced (kOn): C and G as given, invalid ones refused; kOff
// and other tuning overrides: never.
TEST(RmsNormCudaArguments, PushChoice) {
  const cuda::KernelShape one = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, true);
  EXPECT_TRUE(one.split_push);
  EXPECT_EQ(one.split_ctas, 8);
  EXPECT_EQ(one.threads_per_block, 128);  // 896 vectors: 112 per CTA
  EXPECT_EQ(one.vectors_per_thread, 1);
  EXPECT_TRUE(one.push_per_warp);  // 4 warps, 1 row
  EXPECT_EQ(one.cluster_ctas, 1);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kBFloat16, 5120, 32, false).split_push);    // 20 KB
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 8, false).split_push);     // 16 KB
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kBFloat16, 3000, 16, false).split_push);    // 12 KB
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 32, false).split_push);   // 16 KB
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 2048, 1, false).split_push);    // 8 KB
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 2048, 1, false).split_push);      // 16 KB
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 64, true).split_push);     // 32 KB
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 12288, 64, false).split_push);  // 48 KB
  const cuda::KernelShape many = cuda::ChooseKernelShape(DType::kBFloat16, 16384, 128, false);
  EXPECT_TRUE(many.split_push);  // 64 KB
  EXPECT_EQ(many.split_ctas, 2);
  EXPECT_EQ(many.threads_per_block, 256);  // 2048 vectors: 1024 per CTA, 256 threads of 4
  EXPECT_EQ(many.vectors_per_thread, 4);
  EXPECT_FALSE(many.push_per_warp);  // 8 warps
  const cuda::KernelShape rows32 = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 32, true);
  EXPECT_TRUE(rows32.split_push);
  EXPECT_EQ(rows32.threads_per_block, 128);
  EXPECT_FALSE(rows32.push_per_warp);  // past 16 rows
  // Clusters of 16 for up to 4 rows of 128 KB or more from H 16384.
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 65536, 4, true).split_ctas, 16);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 32768, 1, false).split_ctas, 16);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 1, false).split_ctas, 8);  // 64 KB
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 8192, 1, true).split_ctas, 8);     // H < 16384
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 32768, 8, false).split_ctas, 8);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 64, false).split_ctas, 8);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 129, false).split_push);
  const cuda::KernelShape longest = cuda::ChooseKernelShape(DType::kFloat32, 65536, 128, true);
  EXPECT_TRUE(longest.split_push);
  EXPECT_EQ(longest.split_ctas, 8);
  EXPECT_EQ(longest.threads_per_block, 512);  // 16384 vectors: 2048 per CTA, 512 threads of 4
  EXPECT_EQ(longest.vectors_per_thread, 4);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 65536, 129, true).two_pass);
  cuda::RmsNormOptions off;
  off.split_push = cuda::RmsNormOptions::SplitPush::kOff;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, true, off).split_push);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kBFloat16, 65536, 1, true, off).two_pass);
  cuda::RmsNormOptions tuned;  // another tuning override: no automatic push
  tuned.split_ctas = 4;        // (the split-row kernel's C)
  const cuda::KernelShape split = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, true, tuned);
  EXPECT_FALSE(split.split_push);
  EXPECT_EQ(split.split_ctas, 4);
  cuda::RmsNormOptions on;
  on.split_push = cuda::RmsNormOptions::SplitPush::kOn;
  const cuda::KernelShape small = cuda::ChooseKernelShape(DType::kBFloat16, 1024, 1000, false, on);
  EXPECT_TRUE(small.split_push);   // forced where the rule would not take it
  EXPECT_EQ(small.split_ctas, 2);  // 1000 rows: C as the rule's
  EXPECT_EQ(small.threads_per_block, 64);
  on.split_ctas = 4;
  on.threads_per_row = 64;  // bf16 H 7168: 224 vectors per CTA, 64 threads of 4
  const cuda::KernelShape forced = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, false, on);
  EXPECT_EQ(forced.split_ctas, 4);
  EXPECT_EQ(forced.threads_per_block, 64);
  EXPECT_EQ(forced.vectors_per_thread, 4);
  on.threads_per_row = 32;  // fp32 H 65536 over 4: 4096 vectors per CTA would need 128 each
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 65536, 1, false, on).threads_per_row, 0);
  on.threads_per_row = 0;
  for (const int bad : {3, 32, -2}) {
    on.split_ctas = bad;
    EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, false, on).threads_per_row, 0)
        << bad;
  }
  on.split_ctas = 16;  // a non-portable cluster size, opted into by the launcher
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 8, true, on).threads_per_block, 64);
  on.split_ctas = 8;  // bf16 H 8: one vector, fewer than the CTAs
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8, 1, false, on).threads_per_row, 0);
}

// The warp-row kernel (v15): automatically for 16-bit rows of H 1024 from 1024 rows below 4096
// and from 16384 below 65536, plain or with a residual, four vectors per lane in 128-thread
// blocks; forced where 32 lanes of up to four vectors hold the row, refused where they do not or
// with an override it does not take.
TEST(RmsNormCudaArguments, WarpRowChoice) {
  using WarpRow = cuda::RmsNormOptions::WarpRow;
  for (const DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    for (const bool residual : {false, true}) {
      for (const int64_t rows : {1024, 4095, 16384, 65535}) {
        const cuda::KernelShape s = cuda::ChooseKernelShape(dtype, 1024, rows, residual);
        EXPECT_TRUE(s.warp_row) << rows;
        EXPECT_FALSE(s.reload) << rows;
        EXPECT_EQ(s.threads_per_row, 32);
        EXPECT_EQ(s.vectors_per_thread, 4);
        EXPECT_EQ(s.rows_per_block, 4);
        EXPECT_EQ(s.threads_per_block, 128);
      }
      for (const int64_t rows : {1023, 4096, 16383, 65536}) {
        EXPECT_FALSE(cuda::ChooseKernelShape(dtype, 1024, rows, residual).warp_row) << rows;
      }
      EXPECT_FALSE(cuda::ChooseKernelShape(dtype, 1000, 16384, residual).warp_row);  // not measured
      EXPECT_FALSE(cuda::ChooseKernelShape(dtype, 2048, 16384, residual).warp_row);
    }
  }
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 1024, 16384, false).warp_row);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 512, 16384, false).warp_row);
  // Off, or another tuning override: the kernel that would have run without it.
  cuda::RmsNormOptions off;
  off.warp_row = WarpRow::kOff;
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 16384, false, off).reload);
  // rows_per_block sets the reload kernel's blocks of row groups too, within 512 threads.
  off.rows_per_block = 2;
  const cuda::KernelShape reload_two =
      cuda::ChooseKernelShape(DType::kBFloat16, 1024, 16384, false, off);
  EXPECT_TRUE(reload_two.reload);
  EXPECT_EQ(reload_two.threads_per_block, 64);
  off.rows_per_block = 32;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 16384, false, off).threads_per_row, 0);
  cuda::RmsNormOptions lean;
  lean.lean_two_pass = cuda::RmsNormOptions::LeanTwoPass::kOn;
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 16384, false, lean).lean);
  cuda::RmsNormOptions vectors;
  vectors.vectors_per_thread = 2;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 16384, false, vectors).warp_row);
  // Forced: the fewest vectors per lane that hold the row, or the override.
  cuda::RmsNormOptions on;
  on.warp_row = WarpRow::kOn;
  const cuda::KernelShape fp32_512 = cuda::ChooseKernelShape(DType::kFloat32, 512, 3, true, on);
  EXPECT_TRUE(fp32_512.warp_row);
  EXPECT_EQ(fp32_512.vectors_per_thread, 4);  // 128 vectors
  const cuda::KernelShape bf16_500 = cuda::ChooseKernelShape(DType::kBFloat16, 500, 1, false, on);
  EXPECT_TRUE(bf16_500.warp_row);             // the launcher falls back: not whole vectors
  EXPECT_EQ(bf16_500.vectors_per_thread, 2);  // 63 vectors
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat16, 8, 1, false, on).vectors_per_thread, 1);
  on.rows_per_block = 8;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 5, false, on).threads_per_block, 256);
  on.rows_per_block = 1;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 5, false, on).threads_per_block, 32);
  // Refused: rows past 32 x 4 vectors, fewer vectors than the row needs, blocks past 256
  // threads, other group sizes, another kernel forced with it.
  on.rows_per_block = 0;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 1024, 5, false, on).threads_per_row, 0);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 2048, 5, false, on).threads_per_row, 0);
  cuda::RmsNormOptions too_few = on;
  too_few.vectors_per_thread = 2;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 5, false, too_few).threads_per_row, 0);
  too_few.vectors_per_thread = 3;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8, 5, false, too_few).threads_per_row, 0);
  cuda::RmsNormOptions big_blocks = on;
  big_blocks.rows_per_block = 16;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 5, false, big_blocks).threads_per_row,
            0);
  cuda::RmsNormOptions wide_group = on;
  wide_group.threads_per_row = 64;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 5, false, wide_group).threads_per_row,
            0);
  cuda::RmsNormOptions with_reload = on;
  with_reload.reload = cuda::RmsNormOptions::Reload::kOn;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 5, false, with_reload).threads_per_row,
            0);
  // ... and by the launcher: the forced kernel that cannot hold the row never falls back.
  int dummy = 0;
  RmsNormSegment seg;
  seg.input = &dummy;
  seg.output = &dummy;
  seg.weight = &dummy;
  seg.weight_dtype = DType::kFloat32;
  seg.rows = 1;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 1024, seg, nullptr, on), cudaErrorInvalidValue);
  // The C entry takes warp_row 0-2.
  EXPECT_EQ(normd_cuda_rmsnorm_tuned(static_cast<int>(DType::kBFloat16), 1024, 0, nullptr, nullptr,
                                     nullptr, nullptr, nullptr, static_cast<int>(DType::kBFloat16),
                                     1e-6f, 0.0f, nullptr, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0),
            static_cast<int>(cudaErrorInvalidValue));
}

TEST(RmsNormCudaArguments, ShapesCoverTheRow) {
  for (const DType dtype : kDTypes) {
    for (int64_t hidden = 1; hidden <= cuda::kMaxHidden; hidden += 1 + hidden / 7) {
      for (const int64_t rows : {1, 1000, 16384, 100000}) {
        const cuda::KernelShape s = cuda::ChooseKernelShape(dtype, hidden, rows, rows == 1000);
        ASSERT_GT(s.threads_per_row, 0) << hidden;
        if (s.two_pass) {
          if (!s.lean) EXPECT_GT(hidden, 16384);
          EXPECT_LE(s.threads_per_block, 512);
          EXPECT_EQ(s.threads_per_block % 32, 0);
          continue;
        }
        const int64_t vec = 16 / static_cast<int64_t>(ItemSize(dtype));
        if (s.split_push) {  // one row over C blocks of G threads of N vectors each
          EXPECT_LE(rows, 128) << hidden;
          EXPECT_GE(int64_t{s.split_ctas} * s.threads_per_row * s.vectors_per_thread * vec, hidden)
              << hidden;
          EXPECT_EQ(s.threads_per_block, s.threads_per_row);
          EXPECT_EQ(s.threads_per_block % 32, 0);
          continue;
        }
        EXPECT_GE(int64_t{s.threads_per_row} * s.vectors_per_thread * vec, hidden) << hidden;
        EXPECT_LE(s.threads_per_block, s.reload ? 1024 : 512);
        if (s.split_ctas > 1) {  // C blocks of G threads, each holding the whole row
          EXPECT_LE(rows * s.split_ctas, 128) << hidden;
          EXPECT_EQ(s.threads_per_block, s.threads_per_row);
          EXPECT_EQ(s.threads_per_block % 32, 0);
          continue;
        }
        if (s.cluster_ctas > 1) {  // one row over C blocks
          EXPECT_LE(rows * s.cluster_ctas, 128) << hidden;
          EXPECT_EQ(s.threads_per_row, s.cluster_ctas * s.threads_per_block);
          EXPECT_EQ(s.threads_per_block % 32, 0);
          continue;
        }
        EXPECT_EQ(s.threads_per_block % s.threads_per_row, 0);
      }
    }
  }
}

}  // namespace
}  // namespace normd::gputest
