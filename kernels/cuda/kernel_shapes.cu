// The shape choosers: which kernel (register rows, two-pass, lean two-pass, cluster, staged) and
// which thread mapping a launch of `rows` rows of `hidden` elements gets, from the dtype, H, rows
// and RmsNormOptions' overrides. Host code only, with the thresholds the H200 measurements chose
// (docs/KERNELS.md); rmsnorm_cuda.cu launches what they choose. Declared in rmsnorm_cuda.h, so that
// tests and the kernel benchmark can ask for the shape without launching.
#include <algorithm>

#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/rmsnorm_cluster_kernel.cuh"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/rmsnorm_reload_kernel.cuh"
#include "kernels/cuda/rmsnorm_split_push_kernel.cuh"
#include "kernels/cuda/rmsnorm_split_row_kernel.cuh"
#include "kernels/cuda/rmsnorm_staged_kernel.cuh"
#include "kernels/cuda/rmsnorm_two_pass_kernel.cuh"
#include "kernels/cuda/rmsnorm_warp_row_kernel.cuh"

namespace normd::cuda {
namespace {

using internal::CeilDiv;
using internal::ValidDType;
// Rows up to this many elements stay in registers (issue 3: read once for H <= 16384).
constexpr int64_t kRegisterMaxHidden = 16384;
// The automatic shape spreads a row over up to this many threads when rows are few.
constexpr int kPreferredGroupThreads = 256;
// "Few rows": rows * threads_per_row under this many threads (about a third of the H200's 132 x
// 2048 resident threads). Chosen from the shape sweep (docs/KERNELS.md): 1024 x 4096 bf16 ran 7.8
// us as 128 x 4 and 9.2 us as 256 x 2; 1024 x 1024 ran 4.7 us as 128 x 1 and 5.1 us as 32 x 4.
constexpr int64_t kSpreadBelowThreads = 100000;
// Blocks of row groups smaller than 128 threads hold several rows, up to this many threads.
constexpr int kSmallGroupBlockThreads = 256;

// The cluster kernel under the automatic choice: rows that move at least kClusterMinRowBytes (x and
// the output, with a residual also r and residual_out), in launches that stay within
// kClusterMaxCtas CTAs (about one per multiprocessor of the H200's 132); C the smallest power of
// two (up to 8) that leaves each CTA at most kClusterCtaVectors 16-byte vectors of the row. On the
// H200 the cluster costs ~0.2 us (without PDL) to ~0.45 us (with) over one block per row, and saves
// ~20 ns per KB a multiprocessor no longer moves (docs/KERNELS.md "v7").
constexpr int64_t kClusterMinRowBytes = 96 << 10;
constexpr int64_t kClusterMaxCtas = 128;
constexpr int64_t kClusterCtaVectors = 128;

// The split-row kernel under the automatic choice (docs/KERNELS.md "v11"; graph-replayed launches
// of 1-64 rows on the H200, bench/cuda/results/h200_2026-12-03_split_b): rows that move from
// kSplitMinRowBytes up to kSplitMaxRowBytes (x and the output, with a residual also r and
// residual_out), C the largest power of two up to 8 with rows * C <= kSplitMaxCtas: 8 CTAs per row
// for 1-4 rows, 4 up to 8 rows, 2 up to 16 (geometric mean 0.88, 0.90 and 0.93 of the time without
// the split over the grid's shapes there; 1.02-1.03 at worst). With 2 CTAs at 32 rows it won at
// 27 of 36 shapes and lost up to 5%, at 64 rows at 8 of 44. Rows of 8 KB or less gained nothing
// (0.98-1.03), rows of 128 KB or more with a residual tied or lost to the cluster kernel
// (1.00-1.14). G: 256 threads (kSplitThreads; the fastest of 128, 256 and the fewest vectors in 512
// at most shapes, 64 was slow; of every whole-warp G from 128 to 512 at the issue's small-batch
// shapes, split_g) where they hold the row in up to 4 vectors each, else the fewest vectors in 512.
constexpr int64_t kSplitMinRowBytes = 10 << 10;
constexpr int64_t kSplitMaxRowBytes = 128 << 10;  // exclusive
constexpr int64_t kSplitMaxCtas = 32;
constexpr int64_t kSplitThreads = 256;

// The push kernel under the automatic choice (docs/KERNELS.md "v12"; graph-replayed launches of
// 1-128 rows on the H200, bench/cuda/results/h200_2026-12-03_push_b, against the kernel the
// library chose before, C = 2, 4 and 8): up to kPushFewRows rows, rows that move more than
// kPushFewRowsMinBytes (0.72-0.99 of the time before at 20-128 KB, 16-bit plain H 4096 0.99-1.00,
// fp32 fused H 2048 1.00-1.02; 16 KB and less lost 1-15%); from there up to kPushMaxRows, rows
// with a residual moving >= 32 KB (0.81-0.99) and plain rows >= 64 KB (0.77-1.00; 40-48 KB lost
// up to 6%); and every H past kRegisterMaxHidden up to kPushMaxRows rows (0.13-0.75: one CTA per
// row read it twice before). C: 8 (the best or within 3% up to 64 rows), 2 from 65 rows of
// H <= 16384 (there C = 8 took up to 1.5x the time of C = 2). G: one 16-byte vector per thread up
// to 256 threads (the fastest of 32-256 threads at the issue's small-batch shapes, call push_b),
// then up to 4 vectors, then 512 threads.
// Since v13 (docs/KERNELS.md "v13"; call perwarp_b): up to kPushVeryFewRows rows, rows of
// kPushVeryFewRowsMinBytes or more too (with per-warp pushes, forced on against off: 0.92-0.97 at
// 12-16 KB, 16-bit plain H 3000 and 4096, bf16 fused H 2048, fp32 plain H 2048; fp32 fused H 1024
// 0.99-1.00; 8 KB rows lost 1-12%; none was measured between 8 and 12 KB). C = 16 for up to
// kPushWideRows rows of kPushWideMinBytes or more from H 16384 (0.78-1.00 of C = 8's time at all 33
// such shapes of H 16384-65536; 64 KB rows lost 3%; from 8 rows C = 16 lost at 15 of 22 shapes).
constexpr int64_t kPushFewRows = 32;
constexpr int64_t kPushFewRowsMinBytes = 16 << 10;  // exclusive
constexpr int64_t kPushVeryFewRows = 16;
constexpr int64_t kPushVeryFewRowsMinBytes = 10 << 10;
constexpr int64_t kPushWideRows = 4;
constexpr int64_t kPushWideMinBytes = 128 << 10;
constexpr int64_t kPushMinBytesWithResidual = 32 << 10;
constexpr int64_t kPushMinBytesPlain = 64 << 10;
constexpr int64_t kPushMaxRows = 128;
constexpr int64_t kPushManyCtasRows = 64;  // past this, C = 2 for H <= kRegisterMaxHidden
constexpr int64_t kPushThreads = 256;
// Blocks of up to kPushPerWarpMaxThreads threads of one vector each, in launches of up to
// kPushVeryFewRows rows, push each warp's sum (KernelShape::push_per_warp): no block barrier before
// the exchange, 0.92-0.98 of the time of pushing the block's sum at 1-16 rows of 4096 and 7168
// (call perwarp_b, G of 64 and 128). Not for bigger blocks (8 or 16 warps: C * W pushes per CTA,
// up to 1.3x the time, call warps) nor from 32 rows on (0.96-1.06x).
constexpr int64_t kPushPerWarpMaxThreads = 128;

// Shared memory the staged kernel's stages may take per block (sm_90 allows 227 KB): enough for
// several 32 KB tiles, so that each multiprocessor always has one or more on their way.
constexpr int64_t kStagedSharedBudget = 192 << 10;
// The automatic choice takes the staged kernel from these sizes on (see ChooseStagedShape).
constexpr int64_t kStagedAutoMinHidden = 8192;  // exclusive
constexpr int64_t kStagedAutoMinRows = 1024;
// Bytes per tile the staged kernel aims at (R rows of one tensor): large copies, several per stage
// budget.
constexpr int64_t kStagedTileBytes = 32 << 10;

int64_t PowerOfTwoCeil(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Threads of a row group that covers `vectors`: a power of two up to 32, else a multiple of 32.
int64_t GroupThreadsFor(int64_t vectors) {
  return vectors <= 32 ? PowerOfTwoCeil(vectors) : CeilDiv(vectors, 32) * 32;
}

// Whether g threads form a row group: a power of two up to 32, or whole warps.
bool WholeGroup(int64_t g) { return g > 0 && (g <= 32 ? (g & (g - 1)) == 0 : g % 32 == 0); }

bool ValidGroupThreads(int g) { return WholeGroup(g) && g <= internal::kMaxBlockThreads; }

// 16-byte vectors per row of `hidden` elements (the last one partial where H does not fill it).
int64_t VectorsPerRow(DType dtype, int64_t hidden) {
  return CeilDiv(hidden, 16 / static_cast<int64_t>(ItemSize(dtype)));
}

// A register-path shape (register or reload kernel) of groups of g threads, n vectors each: groups
// under 128 threads share blocks of kSmallGroupBlockThreads, or `rows_per_block` rows where that
// is given (RmsNormOptions::rows_per_block; threads_per_row == 0 where such a block would not be
// whole warps of at most kMaxBlockThreads).
KernelShape GroupShape(int64_t g, int64_t n, bool reload, int rows_per_block) {
  KernelShape shape;
  if (g < 128 && rows_per_block != 0) {
    const int64_t threads = g * rows_per_block;
    if (rows_per_block < 0 || threads > internal::kMaxBlockThreads || threads % 32 != 0) {
      return shape;
    }
  }
  shape.reload = reload;
  shape.threads_per_row = static_cast<int>(g);
  shape.vectors_per_thread = static_cast<int>(n);
  if (g >= 128) {
    shape.rows_per_block = 1;
  } else if (rows_per_block != 0) {
    shape.rows_per_block = rows_per_block;
  } else {
    shape.rows_per_block = static_cast<int>(std::max<int64_t>(1, kSmallGroupBlockThreads / g));
  }
  shape.threads_per_block = shape.rows_per_block * shape.threads_per_row;
  return shape;
}

bool ValidVectorsPerThread(DType d, int n) {
  return n == 1 || n == 2 || n == 4 || (n == 8 && d == DType::kFloat32);
}

// Where the lean two-pass kernel beat the register kernel on the H200 at rows >= 4096
// (docs/KERNELS.md "v6", bench/cuda/results/h200_2026-11-30_lean_v3): 16-bit with a residual at H
// 1024, 4096, 8192 (and 7168 from 16384 rows), fp32 with a residual at H 1024 and 4096 (and 3000
// from 16384 rows), fp32 plain at H 4096, 7168, 8192. In the next call it was faster at 32 of these
// 39 shapes and within 2.5% at the rest. Elsewhere it lost: 16-bit plain rows everywhere (0.7-0.9x
// the register kernel's speed), H 5120 (a second, mostly idle iteration per pass), H 16384. Other H
// keep the register kernel: the rule is what was measured, not a model. Since v9 the reload kernel
// takes the rows with a residual it had here, since v10 plain fp32 H 8192 and H 7168 below 16384
// rows, and since v14 fp32 H 3000 with a residual (see ReloadWins): plain fp32 rows are left.
bool LeanTwoPassWins(DType dtype, int64_t hidden, int64_t rows, bool residual) {
  if (rows < 4096 || dtype != DType::kFloat32 || residual) return false;
  return hidden == 4096 || (hidden == 7168 && rows >= 16384);
}

// Where the reload kernel beat the automatic choice on the H200 (docs/KERNELS.md "v8",
// bench/cuda/results/h200_2026-12-01_v8, _reload_fused and _reload_fp32): plain 16-bit rows at
// every H of issue 3's grid (1024 to 16384) and row count from 1024 to 65536 (two vectors per
// thread: 0.87-0.99 of the register kernel's time); plain fp32 rows at H 5120 (0.95-0.99), at H
// 1024 and 3000 from 4096 rows (0.97-0.99) and at H 3000, 7168 and 8192 below 4096 rows (measured
// at 1024: 0.96-0.99); 16-bit rows of 16384 with a residual (1024 threads of two vectors: 0.92-0.98
// of the staged kernel's time). Elsewhere it gained 3% or less or lost (fp32 H 7168 and 8192 from
// 4096 rows, where the lean kernel is faster), and launches of fewer rows were not timed (the
// register kernel's early weights serve them). v9 (h200_2026-12-01_roomy), rows with a residual,
// with the vectors per thread of ReloadVectorsFor: 16-bit H 3000 (0.96 of the register kernel's
// time at 1024 rows, 0.97-0.99 from 4096), and from 4096 rows H 1024 and 4096 (0.97-1.00 of the
// lean kernel's), H 5120 (0.97-0.99 of the register kernel's), 7168 and 8192 (0.97-0.99 of the
// lean kernel's); fp32 H 1024 (0.91 at 1024 rows, 0.98-1.00 from 4096) and H 4096 from 4096 rows
// (0.97-0.99). At 1024 rows of 16-bit H 1024, 4096, 5120, 7168, 8192 it lost 1-8%. Call
// wide_fused, four vectors per thread with a residual: fp32 H 16384 at 1024 and 4096 rows
// (0.95-0.97 of the register kernel's time; not timed from 16384 rows) and H 8192 at 1024 rows
// (0.98). v10 (calls sweep1 and tight: our variants timed under do_bench beside the anchors, the
// way the targets are measured, bench/cuda/shape_sweep.py): plain fp32 H 8192 at every row count
// and H 16384 from 4096 rows in four vectors per thread (0.99-1.00 of torch.compile's time against
// 1.02-1.03 for the lean kernel and 1.09 for the staged one), H 4096 at 1024 rows (0.99 against
// the register kernel's 1.03), H 7168 at 4096 rows (call sweep2: 1.01 against the lean kernel's
// 1.03-1.04), but H 5120 only from 4096 rows (at 1024 the register kernel was faster in both
// calls); 16-bit H 4096 with a residual at 1024 rows in four vectors (0.96-1.00
// against 1.00-1.07). v14 (calls fused_big, v14 and v14b, do_bench, 3 interleaved rounds, beside
// a copy of the same bytes): fp32 rows with a residual at 16384 and 65536 rows of H 3000 (two
// vectors per thread: 0.97-0.99 of the lean kernel's time), 5120, 8192 and 16384 (four: 0.96-0.98
// of the register or staged kernel's time; 4.21-4.32 TB/s, as fast as the copy or faster); at
// 4096 rows of H 5120 and 8192 (four: 0.95-0.97 of the register kernel's time in two calls) and
// 16384 and 65536 rows of H 7168 (four: 0.97). At 4096 rows of H 3000 two vectors tied (0.98 and
// 1.00 in two calls): the register kernel stays. v16 (calls fp32_warp and rows1024, do_bench, 3 and
// 5 interleaved rounds at 1024 rows, beside the register kernel that ran them): 16-bit rows with a
// residual of H 5120 (two vectors: 0.91-0.99 of the register kernel's time), 7168 and 8192 (four:
// 0.93-0.96), and plain fp32 H 1024 (one vector, 256-thread blocks: 0.77).
bool ReloadWins(DType dtype, int64_t hidden, int64_t rows, bool residual) {
  if (rows < 1024 || hidden < 1024 || hidden > kRegisterMaxHidden) return false;
  if (residual && dtype == DType::kFloat32) {
    switch (hidden) {
      case 1024:
      case 8192:
      case 16384:
        return true;
      case 4096:
      case 5120:
        return rows >= 4096;
      case 3000:
      case 7168:
        return rows >= 16384;
      default:
        return false;
    }
  }
  if (residual) {
    return hidden == 3000 || hidden == 4096 || hidden == 5120 || hidden == 7168 || hidden == 8192 ||
           hidden == kRegisterMaxHidden || (rows >= 4096 && hidden == 1024);
  }
  if (dtype != DType::kFloat32) return true;
  if (hidden == 8192) return true;
  if (rows < 4096) return hidden == 1024 || hidden == 3000 || hidden == 4096 || hidden == 7168;
  return hidden == 1024 || hidden == 3000 || hidden == 5120 || hidden == kRegisterMaxHidden ||
         (hidden == 7168 && rows < 16384);
}

// The reload kernel's vectors per thread unless overridden (ReloadShape doubles them where the row
// would need more than 1024 threads): for plain rows two, but four for 16-bit H 16384 (0.97-0.99
// of the time of 1024 threads of two, call wide) and H 7168 from 4096 rows (0.99); with a residual
// two where they measured faster than one (v9: 16-bit H 5120, 7168, 8192, and 3000 below 4096
// rows; fp32 H 4096), four at H 16384 (16-bit: 0.98-0.99 of 1024 threads of two, call
// wide_fused) and fp32 H 8192, else one. v10, from do_bench's figures (calls sweep1 and tight,
// 3 interleaved rounds; the 32-register build of four vectors for plain rows): four for plain
// 16-bit H 7168 at 1024 rows too, H 5120 and 8192 at 1024 rows (0.93-1.03 of the anchors against
// 1.07-1.13 for two); plain fp32 H 3000, 4096, 7168 at 1024 rows, H 1024 at 4096 rows (0.94-0.98
// against 1.01-1.08); with a residual, 16-bit H 1024 below 16384 rows and H 4096 below 4096 rows
// (0.87-1.05 against 0.99-1.11). Call sweep2 (rows >= 4096, 3 rounds): four for plain 16-bit H
// 1024 from 16384 rows (0.94-1.00 against 0.97-1.02 for two; in call v10's comparison 0.99-1.00 at
// 65536 rows against 1.01 before, but 1.02-1.12 at 16384 rows against 0.94-1.12: the closest
// call), plain fp32 H 5120 and 7168 at 4096 rows (1.01-1.02 against 1.03-1.05 for two and the
// lean kernel). v14 (calls fused_big and v14): fp32 with a residual, two at H 3000 (0.99 of four's
// time, 0.91-0.92 of one's) and four at H 5120 and 7168 (0.98 of two's). v16 (calls fp32_warp and
// rows1024, 1024 rows): plain fp32 H 1024 one (0.77 of the register kernel's time; two 0.79, four
// 0.98); 16-bit with a residual, H 7168 and 8192 four below 4096 rows (0.97-1.03 of two's in two
// calls, faster at 7 of 8 points), H 5120 two (four 1.01-1.11 of two's).
int ReloadVectorsFor(DType dtype, int64_t hidden, int64_t rows, bool residual) {
  if (!residual && dtype != DType::kFloat32) {
    if (hidden == 16384 || hidden == 7168) return 4;
    if (hidden == 1024) return rows >= 16384 ? 4 : 2;
    return rows < 4096 && (hidden == 5120 || hidden == 8192) ? 4 : 2;
  }
  if (!residual) {
    if (hidden == 8192 || hidden == 16384) return 4;
    if (rows < 4096 && hidden == 1024) return 1;
    if (rows < 4096) return hidden == 3000 || hidden == 4096 || hidden == 7168 ? 4 : 2;
    return rows < 16384 && (hidden == 1024 || hidden == 5120 || hidden == 7168) ? 4 : 2;
  }
  if (hidden == 16384) return 4;
  if (dtype == DType::kFloat32) {
    if (hidden == 5120 || hidden == 7168 || hidden == 8192) return 4;
    return hidden == 3000 || hidden == 4096 ? 2 : 1;
  }
  if (hidden == 1024) return rows < 16384 ? 4 : 1;
  if (hidden == 4096) return rows < 4096 ? 4 : 1;
  if (hidden == 3000) return rows < 4096 ? 2 : 1;
  if (hidden == 7168 || hidden == 8192) return rows < 4096 ? 4 : 2;
  return hidden == 5120 ? 2 : 1;
}

// Whether plain rows of four vectors per thread take the 64-register build of the reload kernel
// (weights loaded with the row, fewer blocks per multiprocessor) instead of the 32-register one:
// 16-bit H 7168 from 4096 rows, the one shape where it measured faster (call tight: 0.98-1.00 of
// the 32-register build's time, 224-thread blocks).
bool ReloadWideWins(DType dtype, int64_t hidden, int64_t rows) {
  return dtype != DType::kFloat32 && hidden == 7168 && rows >= 4096;
}

// The reload kernel's shape for rows of `vectors` 16-byte vectors: `vectors_per_thread` (0:
// `automatic_vectors`, doubled while that would need more than 1024 threads) in groups of the
// fewest whole warps (or a power of two up to 32) that hold them, or of `threads_per_row` (0:
// automatic); threads_per_row == 0 where the row does not fit 1024 threads of four vectors or the
// overrides cannot hold it.
KernelShape ReloadShape(int64_t vectors, int automatic_vectors, int vectors_per_thread,
                        int threads_per_row, int rows_per_block) {
  KernelShape shape;
  int64_t n = vectors_per_thread != 0 ? vectors_per_thread : automatic_vectors;
  if (vectors_per_thread == 0 && threads_per_row != 0) {
    n = CeilDiv(vectors, threads_per_row);  // the fewest vectors that the given threads hold
    if (n == 3) n = 4;
  } else if (vectors_per_thread == 0) {
    while (CeilDiv(vectors, n) > internal::kReloadMaxThreads) n *= 2;
  }
  if (n != 1 && n != 2 && n != 4) return shape;
  const int64_t g = threads_per_row != 0 ? threads_per_row : GroupThreadsFor(CeilDiv(vectors, n));
  if (g > internal::kReloadMaxThreads || !WholeGroup(g) || g * n < vectors) return shape;
  return GroupShape(g, n, /*reload=*/true, rows_per_block);
}

// The reload kernel's shape if this launch takes it: forced (kOn), or under kAuto with no other
// tuning override where ReloadWins; and only where it holds the row (else threads_per_row == 0).
// ChooseKernelShape returns it, and ChooseStagedShape yields to it, so the two agree.
KernelShape ChosenReloadShape(DType dtype, int64_t hidden, int64_t rows, bool residual,
                              const RmsNormOptions& options) {
  const bool other_overrides = options.threads_per_row != 0 || options.vectors_per_thread != 0;
  const bool chosen = options.reload == RmsNormOptions::Reload::kOn ||
                      (options.reload == RmsNormOptions::Reload::kAuto && !other_overrides &&
                       ReloadWins(dtype, hidden, rows, residual));
  if (!chosen || hidden > kRegisterMaxHidden || options.two_pass || options.cluster_ctas > 1 ||
      options.split_ctas > 1) {
    return KernelShape{};
  }
  KernelShape shape =
      ReloadShape(VectorsPerRow(dtype, hidden), ReloadVectorsFor(dtype, hidden, rows, residual),
                  options.vectors_per_thread, options.threads_per_row, options.rows_per_block);
  // Four vectors with a residual always take the 64-register build (the launcher's rule).
  shape.reload_wide =
      shape.vectors_per_thread == 4 && (residual || ReloadWideWins(dtype, hidden, rows));
  return shape;
}

// The warp-row kernel's rows per block unless overridden: 128-thread blocks (call warp_row, 16-bit
// H 1024 at 1024 and 16384 rows: four rows took 0.90-1.03 of the time of two, 0.82-1.03 of one
// (32-thread blocks, at most 32 per multiprocessor) and 0.91-1.01 of eight).
constexpr int kWarpRowRowsPerBlock = 4;

// Where the warp-row kernel beat the automatic choice before it on the H200 (v15, calls hold and
// warp_row; do_bench, 3-5 interleaved rounds, four rows per block): 16-bit rows of H 1024 at 1024
// rows (0.82-0.83 of the reload kernel's time, bf16 plain and with a residual) and 16384 rows
// (plain 0.91, with a residual 0.96-0.98). At 4096 rows it tied (0.91-1.05, three of four points
// slower) and at 65536 it lost (1.02-1.03): the reload kernel stays from 4096 rows below 16384 and
// from 65536. Rows between measured counts take the kernel of the count below them. fp32 rows of
// 1024 would need eight vectors per lane, which it has no build for; other H were not measured.
bool WarpRowWins(DType dtype, int64_t hidden, int64_t rows) {
  if (dtype == DType::kFloat32 || hidden != 1024) return false;
  return (rows >= 1024 && rows < 4096) || (rows >= 16384 && rows < 65536);
}

// The warp-row kernel's shape if this launch takes it: forced (kOn), or under kAuto with no other
// tuning override where WarpRowWins. `none` (threads_per_row 1, warp_row false) where it is not
// chosen; threads_per_row == 0 where it is forced but cannot hold the row (more than 32 x 4
// vectors), or with an override it does not take (another kernel forced, threads_per_row other
// than 32, rows_per_block past kWarpRowMaxThreads).
KernelShape ChosenWarpRowShape(DType dtype, int64_t hidden, int64_t rows,
                               const RmsNormOptions& options, bool overridden) {
  KernelShape none;
  none.threads_per_row = 1;
  const bool forced = options.warp_row == RmsNormOptions::WarpRow::kOn;
  const bool other_kernel_forced = options.two_pass || options.cluster_ctas > 1 ||
                                   options.split_ctas > 1 ||
                                   options.reload == RmsNormOptions::Reload::kOn ||
                                   options.lean_two_pass == RmsNormOptions::LeanTwoPass::kOn;
  KernelShape shape;
  if (!forced) {
    // Under kAuto, only where no other kernel (the staged one included) or tuning override is
    // asked for.
    if (options.warp_row == RmsNormOptions::WarpRow::kOff || overridden || other_kernel_forced ||
        options.staging == RmsNormOptions::Staging::kOn || !WarpRowWins(dtype, hidden, rows)) {
      return none;
    }
  } else if (other_kernel_forced ||
             (options.threads_per_row != 0 && options.threads_per_row != 32)) {
    return shape;
  }
  const int64_t vectors = VectorsPerRow(dtype, hidden);
  int64_t n = options.vectors_per_thread;
  if (n == 0) {
    n = 1;
    while (n < 4 && 32 * n < vectors) n *= 2;
  }
  if ((n != 1 && n != 2 && n != 4) || 32 * n < vectors) return shape;
  const int64_t b = options.rows_per_block != 0 ? options.rows_per_block : kWarpRowRowsPerBlock;
  if (b < 1 || 32 * b > internal::kWarpRowMaxThreads) return shape;
  shape.warp_row = true;
  shape.threads_per_row = 32;
  shape.vectors_per_thread = static_cast<int>(n);
  shape.rows_per_block = static_cast<int>(b);
  shape.threads_per_block = static_cast<int>(32 * b);
  return shape;
}

// The cluster size for a launch: 1 for none, 0 for an invalid override. Under the automatic choice
// (never with other tuning overrides), launches of few rows of H <= 16384 that move at least
// kClusterMinRowBytes per row.
int ClusterCtasFor(DType dtype, int64_t hidden, int64_t vectors, int64_t rows, bool residual,
                   const RmsNormOptions& options, bool overridden) {
  if (options.cluster_ctas != 0) {
    const int c = options.cluster_ctas;
    return c == 1 || c == 2 || c == 4 || c == internal::kMaxClusterCtas ? c : 0;
  }
  const int64_t row_bytes = (residual ? 4 : 2) * hidden * static_cast<int64_t>(ItemSize(dtype));
  if (overridden || hidden > kRegisterMaxHidden || row_bytes < kClusterMinRowBytes) {
    return 1;
  }
  int c = 1;
  while (c < internal::kMaxClusterCtas && CeilDiv(vectors, c) > kClusterCtaVectors) c <<= 1;
  while (c > 1 && rows * c > kClusterMaxCtas) c >>= 1;
  // Too many rows for a cluster large enough to hold the row in 512-thread CTAs: none.
  return CeilDiv(vectors, c) <= internal::kMaxBlockThreads ? c : 1;
}

// The split-row kernel's shape for rows of `vectors` 16-byte vectors over `ctas` CTAs (fewer where
// the row has fewer vectors): G = `threads` (0: the fewest vectors per thread that fit 512
// threads), in whole warps, kN the power of two of vectors per thread that makes G threads hold
// the row, up to 8. threads_per_row == 0 where that cannot hold the row; split_ctas == 1 where
// there is nothing to split.
KernelShape SplitShape(int64_t vectors, int64_t ctas, int64_t threads) {
  KernelShape shape;
  int64_t n = 1;
  int64_t g = threads;
  if (threads != 0) {
    if (threads % 32 != 0 || threads > internal::kMaxBlockThreads) return shape;
    n = PowerOfTwoCeil(CeilDiv(vectors, threads));
  } else {
    while (CeilDiv(vectors, n) > internal::kMaxBlockThreads) n <<= 1;
    g = std::max<int64_t>(32, CeilDiv(CeilDiv(vectors, n), 32) * 32);
  }
  if (n > internal::kMaxSplitVectors) return shape;
  shape.split_ctas = static_cast<int>(std::min(ctas, vectors));
  shape.threads_per_row = static_cast<int>(g);
  shape.vectors_per_thread = static_cast<int>(n);
  shape.rows_per_block = 1;
  shape.threads_per_block = static_cast<int>(g);
  return shape;
}

// The split-row kernel's shape if this launch takes it (split_ctas > 1), else a shape with
// split_ctas == 1; threads_per_row == 0 for an override that cannot hold the row or comes with a
// forced cluster. Forced, threads_per_row overrides G. Under the automatic choice (no other tuning
// override): see kSplitMinRowBytes.
KernelShape ChosenSplitShape(DType dtype, int64_t hidden, int64_t vectors, int64_t rows,
                             bool residual, const RmsNormOptions& options, bool overridden) {
  KernelShape none;
  none.threads_per_row = 1;  // "no split", valid
  int64_t ctas = options.split_ctas;
  if (ctas == 1) return none;
  if (ctas != 0) {
    if (ctas < 0 || ctas > internal::kMaxSplitCtas || options.cluster_ctas > 1 ||
        hidden > kRegisterMaxHidden) {
      return KernelShape{};
    }
    KernelShape shape = SplitShape(vectors, ctas, options.threads_per_row);
    return shape.threads_per_row != 0 && shape.split_ctas == 1 ? none : shape;
  }
  const int64_t row_bytes = (residual ? 4 : 2) * hidden * static_cast<int64_t>(ItemSize(dtype));
  if (overridden || hidden > kRegisterMaxHidden || row_bytes < kSplitMinRowBytes ||
      row_bytes >= kSplitMaxRowBytes) {
    return none;
  }
  ctas = internal::kMaxSplitCtas;
  while (ctas > 1 && rows * ctas > kSplitMaxCtas) ctas >>= 1;
  if (ctas < 2) return none;
  const int64_t threads = vectors <= 4 * kSplitThreads
                              ? std::min(kSplitThreads, CeilDiv(vectors, 32) * 32)
                              : 0;  // the fewest vectors in 512
  const KernelShape shape = SplitShape(vectors, ctas, threads);
  return shape.threads_per_row != 0 && shape.split_ctas > 1 ? shape : none;
}

// The push kernel's shape for `rows` rows of `vectors` 16-byte vectors over `ctas` CTAs: G =
// `threads` (0: one vector per thread up to kPushThreads, then up to 4 vectors, then 512 threads)
// over the CTA's share, kN the power of two of vectors per thread that makes G threads hold it, up
// to 8. threads_per_row == 0 where that cannot hold the share.
KernelShape PushShape(int64_t vectors, int64_t ctas, int64_t threads, int64_t rows) {
  KernelShape shape;
  const int64_t share = CeilDiv(vectors, ctas);
  int64_t g = threads != 0 ? threads : std::min(kPushThreads, CeilDiv(share, 32) * 32);
  if (g % 32 != 0 || g > internal::kMaxBlockThreads) return shape;
  int64_t n = 1;
  while (n * g < share) {
    if (n == 4 && threads == 0 && g < internal::kMaxBlockThreads) {
      g = internal::kMaxBlockThreads;
    } else {
      n <<= 1;
    }
  }
  if (n > internal::kMaxSplitVectors) return shape;
  shape.split_ctas = static_cast<int>(ctas);
  shape.split_push = true;
  shape.push_per_warp = n == 1 && g <= kPushPerWarpMaxThreads && rows <= kPushVeryFewRows;
  shape.threads_per_row = static_cast<int>(g);
  shape.vectors_per_thread = static_cast<int>(n);
  shape.rows_per_block = 1;
  shape.threads_per_block = static_cast<int>(g);
  return shape;
}

// The push kernel's shape if this launch takes it (split_push), else a shape without it;
// threads_per_row == 0 for a forced push whose overrides cannot hold the row. See kPushFewRows.
KernelShape ChosenPushShape(DType dtype, int64_t hidden, int64_t vectors, int64_t rows,
                            bool residual, const RmsNormOptions& options, bool overridden) {
  KernelShape none;
  none.threads_per_row = 1;  // "no push", valid
  if (options.split_push == RmsNormOptions::SplitPush::kOff) return none;
  const int64_t automatic_ctas = hidden > kRegisterMaxHidden || rows <= kPushManyCtasRows ? 8 : 2;
  if (options.split_push == RmsNormOptions::SplitPush::kOn) {
    const int64_t ctas = options.split_ctas != 0 ? options.split_ctas : automatic_ctas;
    if (ctas < 2 || ctas > internal::kMaxPushCtas || (ctas & (ctas - 1)) != 0 ||
        options.cluster_ctas > 1 || vectors < ctas) {
      return KernelShape{};
    }
    return PushShape(vectors, ctas, options.threads_per_row, rows);
  }
  if (overridden || rows > kPushMaxRows) return none;
  const int64_t row_bytes = (residual ? 4 : 2) * hidden * static_cast<int64_t>(ItemSize(dtype));
  const bool wins = hidden > kRegisterMaxHidden ||
                    (rows <= kPushVeryFewRows && row_bytes >= kPushVeryFewRowsMinBytes) ||
                    (rows <= kPushFewRows ? row_bytes > kPushFewRowsMinBytes
                                          : row_bytes >= (residual ? kPushMinBytesWithResidual
                                                                   : kPushMinBytesPlain));
  if (!wins) return none;
  const bool wide = rows <= kPushWideRows && hidden >= kRegisterMaxHidden &&
                    row_bytes >= kPushWideMinBytes;  // (measured from H 16384 only)
  const KernelShape shape =
      PushShape(vectors, wide ? internal::kMaxPushCtas : automatic_ctas, 0, rows);
  return shape.threads_per_row != 0 ? shape : none;
}

}  // namespace

KernelShape ChooseKernelShape(DType dtype, int64_t hidden, int64_t rows, bool residual,
                              const RmsNormOptions& options) {
  KernelShape shape;
  if (!ValidDType(dtype) || hidden < 1 || hidden > kMaxHidden) return shape;
  const bool overridden = options.two_pass || options.threads_per_row != 0 ||
                          options.vectors_per_thread != 0 || options.cluster_ctas > 1 ||
                          options.split_ctas > 1 || options.reload == RmsNormOptions::Reload::kOn ||
                          options.warp_row == RmsNormOptions::WarpRow::kOn;
  const int64_t vectors = VectorsPerRow(dtype, hidden);
  if (const KernelShape warp_row = ChosenWarpRowShape(dtype, hidden, rows, options, overridden);
      warp_row.threads_per_row != 1) {
    return warp_row;  // the warp-row kernel, or an invalid override
  }
  if (options.lean_two_pass == RmsNormOptions::LeanTwoPass::kOn ||
      (options.lean_two_pass == RmsNormOptions::LeanTwoPass::kAuto && !overridden &&
       LeanTwoPassWins(dtype, hidden, rows, residual))) {
    // One vector per thread per pass where the row allows, in whole warps, at most 512 threads.
    shape.two_pass = true;
    shape.lean = true;
    shape.threads_per_row = static_cast<int>(std::min<int64_t>(
        internal::kTwoPassThreads, std::max<int64_t>(32, CeilDiv(vectors, 32) * 32)));
    shape.rows_per_block = 1;
    shape.threads_per_block = shape.threads_per_row;
    return shape;
  }
  // Else the kernel it would have been.
  if (const KernelShape reload = ChosenReloadShape(dtype, hidden, rows, residual, options);
      reload.threads_per_row != 0) {
    return reload;
  }
  if (const KernelShape push =
          ChosenPushShape(dtype, hidden, vectors, rows, residual, options, overridden);
      push.threads_per_row == 0 || push.split_push) {
    return push;  // the push kernel, or an invalid override
  }
  if (const KernelShape split =
          ChosenSplitShape(dtype, hidden, vectors, rows, residual, options, overridden);
      split.threads_per_row == 0 || split.split_ctas > 1) {
    return split;  // the split-row kernel, or an invalid override
  }
  const int cluster_ctas =
      ClusterCtasFor(dtype, hidden, vectors, rows, residual, options, overridden);
  if (cluster_ctas != 1) {
    // One vector per thread (the element path: kVecElems elements) over C CTAs of whole warps.
    if (cluster_ctas < 1) return shape;  // an invalid override
    const int64_t per_cta = CeilDiv(vectors, cluster_ctas);
    if (per_cta > internal::kMaxBlockThreads) return shape;  // the row does not fit
    shape.cluster_ctas = cluster_ctas;
    shape.threads_per_block = static_cast<int>(std::max<int64_t>(32, CeilDiv(per_cta, 32) * 32));
    shape.threads_per_row = cluster_ctas * shape.threads_per_block;
    shape.vectors_per_thread = 1;
    shape.rows_per_block = 1;
    return shape;
  }
  if (hidden > kRegisterMaxHidden || options.two_pass) {
    shape.two_pass = true;
    shape.threads_per_row = internal::kTwoPassThreads;
    shape.rows_per_block = 1;
    shape.threads_per_block = internal::kTwoPassThreads;
    return shape;
  }
  const int max_n = dtype == DType::kFloat32 ? 8 : 4;
  int64_t n = 1;
  int64_t g = 0;
  if (options.vectors_per_thread != 0 || options.threads_per_row != 0) {
    if (options.vectors_per_thread != 0 &&
        !ValidVectorsPerThread(dtype, options.vectors_per_thread)) {
      return shape;
    }
    if (options.threads_per_row != 0 && !ValidGroupThreads(options.threads_per_row)) return shape;
    if (options.vectors_per_thread != 0 && options.threads_per_row != 0) {
      n = options.vectors_per_thread;
      g = options.threads_per_row;
    } else if (options.vectors_per_thread != 0) {
      n = options.vectors_per_thread;
      g = GroupThreadsFor(CeilDiv(vectors, n));
    } else {
      g = options.threads_per_row;
      n = 1;
      while (n < max_n && g * n < vectors) n <<= 1;
    }
    if (g * n < vectors || g > internal::kMaxBlockThreads) return shape;
  } else if (residual) {
    // x and r both in flight: the fewest vectors per thread that keep the group within
    // kPreferredGroupThreads (measured best for fused add on the H200, docs/KERNELS.md).
    for (n = 1; n <= max_n; n <<= 1) {
      g = GroupThreadsFor(CeilDiv(vectors, n));
      if (g <= kPreferredGroupThreads) break;
    }
    if (n > max_n) {
      n = max_n;
      g = GroupThreadsFor(CeilDiv(vectors, n));
    }
    // Few rows of fp32 past 8192: 8 vectors per thread has no early-weight kernel (it spills), so
    // latency-bound launches take 4 vectors in up to 512 threads instead.
    if (n == 8 && rows * g < kSpreadBelowThreads &&
        GroupThreadsFor(CeilDiv(vectors, 4)) <= internal::kMaxBlockThreads) {
      n = 4;
      g = GroupThreadsFor(CeilDiv(vectors, 4));
    }
  } else {
    // 4 vectors (64 bytes) per thread keep enough loads in flight per multiprocessor (measured on
    // the H200: docs/KERNELS.md); fp32 rows past 8192 need 8 to fit 512 threads.
    n = 4;
    g = GroupThreadsFor(CeilDiv(vectors, n));
    if (g > internal::kMaxBlockThreads) {
      n = 8;
      g = GroupThreadsFor(CeilDiv(vectors, n));
    }
    // Few rows: spread each over more threads (shorter per-thread chains, more of the chip busy),
    // while the group stays within kPreferredGroupThreads.
    while (n > 1 && rows * g < kSpreadBelowThreads) {
      const int64_t g2 = GroupThreadsFor(CeilDiv(vectors, n / 2));
      if (g2 > kPreferredGroupThreads) break;
      n /= 2;
      g = g2;
    }
  }
  return GroupShape(g, n, /*reload=*/false, options.rows_per_block);
}

StagedShape ChooseStagedShape(DType dtype, int64_t hidden, int64_t rows, bool residual,
                              const RmsNormOptions& options) {
  StagedShape shape;
  if (!ValidDType(dtype) || hidden < 1 || hidden > kRegisterMaxHidden) return shape;
  if (options.staging == RmsNormOptions::Staging::kOff || options.two_pass) return shape;
  if (options.staged_stages != 0 &&
      (options.staged_stages < 2 || options.staged_stages > internal::kMaxStages)) {
    return shape;
  }
  // Under kAuto, only where the A/B on the H200 measured the staged kernel faster at every row
  // count from 1024 to 65536 (bench/cuda/results/h200_staged_ab.csv): rows past 8192 elements
  // whose register kernel is short of registers, i.e. with a residual (16-bit x and r: 512-thread
  // groups of ~98 registers, one per multiprocessor; +5-7%) or fp32 (8 vectors per thread; +11-20%
  // plain). Elsewhere the register kernel was 2-15% faster: it keeps more rows in flight per
  // multiprocessor than one staged block's lockstep tiles.
  if (options.staging == RmsNormOptions::Staging::kAuto &&
      !(hidden > kStagedAutoMinHidden && rows >= kStagedAutoMinRows &&
        (residual || dtype == DType::kFloat32))) {
    return shape;
  }
  // Where the warp-row kernel is forced (it refuses rows it cannot hold) or the reload kernel is
  // chosen and holds the row (forced, or measured faster: 16-bit fused H 16384), they run instead.
  if (options.staging == RmsNormOptions::Staging::kAuto &&
      options.warp_row == RmsNormOptions::WarpRow::kOn) {
    return shape;
  }
  if (options.staging == RmsNormOptions::Staging::kAuto &&
      ChosenReloadShape(dtype, hidden, rows, residual, options).threads_per_row != 0) {
    return shape;
  }
  const int64_t item = static_cast<int64_t>(ItemSize(dtype));
  const int64_t row_bytes = hidden * item;
  if (row_bytes % 16 != 0) return shape;
  const int64_t vectors = row_bytes / 16;
  // Up to 4 vectors per thread, as in the register kernel; fp32 rows past 8192 take 8 in 512.
  const int64_t g =
      std::min<int64_t>(GroupThreadsFor(CeilDiv(vectors, 4)), internal::kMaxBlockThreads);
  const int64_t n = PowerOfTwoCeil(CeilDiv(vectors, g));
  if (n > (dtype == DType::kFloat32 ? 8 : 4)) return shape;
  // Rows per tile: as many groups as a block holds, fewer if that passes kStagedTileBytes.
  int64_t r = std::max<int64_t>(1, internal::kMaxBlockThreads / g);
  r = std::max<int64_t>(1, std::min(r, kStagedTileBytes / row_bytes));
  const int64_t stage_bytes = r * row_bytes * (residual ? 2 : 1);
  int64_t stages = std::min<int64_t>(internal::kMaxStages, kStagedSharedBudget / stage_bytes);
  if (options.staged_stages != 0) stages = options.staged_stages;
  if (stages < 2 || stages * stage_bytes > kStagedSharedBudget) return shape;
  shape.threads_per_row = static_cast<int>(g);
  shape.vectors_per_thread = static_cast<int>(n);
  shape.rows_per_tile = static_cast<int>(r);
  shape.stages = static_cast<int>(stages);
  shape.threads_per_block = static_cast<int>(r * g);
  shape.shared_bytes = stages * stage_bytes;
  return shape;
}

}  // namespace normd::cuda
