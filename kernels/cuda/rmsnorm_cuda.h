// RMSNorm (with optional fused residual add) on NVIDIA GPUs: the host entry points of the CUDA
// library normd::cuda_kernels (libnormd_cuda_kernels.so). The math is kernels/rmsnorm.h's, exactly:
// fp32 accumulation, variance from the unrounded h = x + r, eps inside the root, one rounding at
// the output.
//
// Every entry point only enqueues work on `stream` and returns the launch's cudaError_t
// (cudaErrorInvalidValue for arguments it can check on the host). All pointers are device pointers.
// Supported: dtype fp32 / fp16 / bf16; weight of the launch dtype or fp32; 1 <= hidden <=
// kMaxHidden; output may equal input; residual_out may equal residual (in place). Any pointer
// alignment works (16-byte vector accesses are used only where every pointer of a segment allows
// them).
//
// This header is plain C++: g++ includes it; it declares no kernels and no CUDA-only types.
#ifndef NORMD_KERNELS_CUDA_RMSNORM_CUDA_H_
#define NORMD_KERNELS_CUDA_RMSNORM_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

// The library is built with hidden visibility; these entry points are its exports.
#define NORMD_CUDA_API __attribute__((visibility("default")))

namespace normd::cuda {

// The largest hidden size the kernels accept. Rows up to 16384 elements are held on chip and read
// once; longer rows are read twice (the second time mostly from L2).
inline constexpr int64_t kMaxHidden = 65536;

struct RmsNormOptions {
  // Launch with programmatic dependent launch (sm_90+): the kernel may start while the preceding
  // kernel in the stream finishes, and waits for it (griddepcontrol.wait) before reading the
  // segment table, the input or the residual. Helps back-to-back small launches, e.g. replayed from
  // a CUDA graph.
  bool programmatic_dependent_launch = false;
  // Only with programmatic_dependent_launch and the single-segment entry point: read the weight
  // before that wait. The caller promises the preceding kernel does not write the weight.
  bool weight_before_dependency_wait = false;
  // Tuning overrides for benchmarks (0 = automatic). threads_per_row: a power of two up to 32 or a
  // multiple of 32 up to 512; vectors_per_thread: 1, 2, 4 (or 8 for fp32): 16-byte vectors each
  // thread holds. An override that cannot hold a row of `hidden` elements is refused with
  // cudaErrorInvalidValue.
  int threads_per_row = 0;
  int vectors_per_thread = 0;
  // Single-segment launches only: whether to stream the rows through shared memory with the copy
  // engine (RmsNormStagedKernel, sm_90) instead of holding them in registers. kAuto decides by the
  // shape; kOn still falls back to the register kernel where the staged one cannot run (older GPU,
  // unaligned pointers, a stage larger than shared memory allows).
  enum class Staging { kAuto, kOff, kOn };
  Staging staging = Staging::kAuto;
  // Tuning override for benchmarks: stages per block (2..8; 0 = as many as fit).
  int staged_stages = 0;
  // Tuning override for benchmarks: the two-pass kernel (the row read twice, the second time
  // mostly from L2) even where the row would fit the register kernel.
  bool two_pass = false;
  // Whether to run the lean two-pass kernel (one block of up to 512 threads per row, at most 32
  // registers so that four such blocks share a multiprocessor; the row is read twice, the second
  // time from L1/L2, with Triton's eviction hints). kAuto takes it for single-segment launches of
  // the shapes where it measured faster than the register kernel on the H200 (LeanTwoPassWins in
  // kernel_shapes.cu, docs/KERNELS.md "v6"); kOn forces it (tests, benchmarks); batched launches
  // never take it under kAuto.
  enum class LeanTwoPass { kAuto, kOff, kOn };
  LeanTwoPass lean_two_pass = LeanTwoPass::kAuto;
  // CTAs that share one row in the cluster kernel (RmsNormClusterKernel, sm_90): each loads,
  // normalizes and stores 1/C of the row, so a launch of few rows spreads its bytes over C times
  // as many multiprocessors. 0: automatic (H <= 16384, rows that move >= 96 KB with their outputs,
  // launches of at most 128 CTAs: where it measured faster on the H200, docs/KERNELS.md "v7";
  // since v12 the push kernel below takes such single-segment launches, so the cluster kernel
  // runs them for segment tables); 1: never; 2, 4 or 8: forced where the row fits C blocks of 512
  // threads (else refused with cudaErrorInvalidValue). On GPUs without clusters the register
  // kernel runs.
  int cluster_ctas = 0;
  // CTAs that share one row in the split-row kernel (RmsNormSplitRowKernel): each reads the whole
  // row to sum its squares but normalizes and stores only 1/C of it, with no communication
  // between them, so a launch of few rows spreads its stores and weight reads over C times as many
  // multiprocessors without the cluster kernel's barrier. 0: automatic (ChosenSplitShape in
  // kernel_shapes.cu: 1-16 rows of 10-128 KB, where it measured faster on the H200,
  // docs/KERNELS.md "v11"; since v13 only where the push kernel below is off or cannot run, i.e.
  // GPUs before sm_90: the split needs the same single segment on the vector path); 1: never;
  // 2..8: forced (with threads_per_row as the CTA's threads, else the fewest vectors per thread
  // that fit 512 threads; refused with cudaErrorInvalidValue where 512 threads of up to 8 vectors
  // cannot hold the row, or with cluster_ctas > 1 too). Single-segment launches on the vector path
  // whose outputs do not overlap their inputs only; others get the kernel that would have run
  // without it (and without threads_per_row, which was the split's).
  int split_ctas = 0;
  // Whether a row split over C CTAs may be a thread block cluster whose CTAs share their partial
  // sums (RmsNormSplitPushKernel, sm_90): each CTA reads only its 1/C of the row (x, and r) and
  // pushes its partial sum of squares into the others' shared memory, instead of every CTA reading
  // the whole row as the split-row kernel's do. kAuto takes it for single-segment launches of up
  // to 128 rows that move 10 KB or more per row (more from 17 rows on) and for every H > 16384 at
  // up to 128 rows, where it measured faster on the H200 (ChosenPushShape in kernel_shapes.cu,
  // docs/KERNELS.md "v12" and "v13"; C = 16 for up to 4 rows of 128 KB or more where the device
  // places such clusters); kOn forces it, with split_ctas as C (2, 4, 8 or 16; 0: as kAuto would)
  // and threads_per_row as the CTA's threads (0: one vector each, up to 256 threads); kOff never.
  // Launches it cannot take (a segment table, off the vector path, GPUs before sm_90) get the
  // kernel that would have run without it (and, with kOn, without split_ctas and threads_per_row,
  // which were the push kernel's).
  enum class SplitPush { kAuto, kOff, kOn };
  SplitPush split_push = SplitPush::kAuto;
  // Throughput-bound register launches of about one wave of blocks (single segment with a
  // residual, vector path) read the weight after the row's reduction; with this each block first
  // copies the row's weight into shared memory (cp.async) while its rows load, so that the read
  // after the reduction does not wait on L2. Off only for A/B benchmarks.
  bool weights_through_shared = true;
  // Whether to run the reload kernel (RmsNormReloadKernel: G threads per row, one, two or four
  // 16-byte vectors each, the row read twice, the second time from L1; 32 registers for one or two
  // vectors, so that a multiprocessor holds 2048 threads, more for two with a residual and for
  // four; blocks of up to 1024 threads). kAuto takes it for single-segment launches of the shapes
  // where it measured faster than the other kernels on the H200 (ReloadWins and ReloadVectorsFor
  // in kernel_shapes.cu, docs/KERNELS.md "v8" and "v9"); kOn forces it where a row fits 1024
  // threads of four vectors (H <= 16384), with vectors_per_thread (1, 2 or 4) and threads_per_row
  // (up to 1024) as the other overrides it takes; batched launches, unaligned pointers and rows it
  // cannot hold get the kernel that would have run without it.
  enum class Reload { kAuto, kOff, kOn };
  Reload reload = Reload::kAuto;
  // Whether to run the warp-row kernel (RmsNormWarpRowKernel: one warp per row, the row and its
  // weight held in registers for a single pass, 32 threads per row fixed at compile time; rows of
  // up to 128 vectors, i.e. H <= 1024 of a 16-bit type or 512 of fp32). kAuto takes it for
  // single-segment launches of the shapes where it measured faster on the H200 (WarpRowWins in
  // kernel_shapes.cu, docs/KERNELS.md "v15"); kOn forces it, with vectors_per_thread (1, 2 or 4;
  // else the fewest that hold the row) and rows_per_block as the overrides it takes (a row it
  // cannot hold is refused with cudaErrorInvalidValue); batched launches and unaligned pointers
  // get the kernel that would have run without it.
  enum class WarpRow { kAuto, kOff, kOn };
  WarpRow warp_row = WarpRow::kAuto;
  // Tuning override for benchmarks: rows per block where the register, reload or warp-row kernel
  // runs row groups of fewer than 128 threads (0: automatic: 256-thread blocks, or the warp-row
  // kernel's kWarpRowRowsPerBlock). Blocks must stay whole warps of at most 512 threads (256 for
  // the warp-row kernel; else refused with cudaErrorInvalidValue); it does not change which
  // kernel runs, and kernels of one row per block ignore it.
  int rows_per_block = 0;
};

// The kernel shape the launchers pick for a hidden size (exposed for benchmarks and notes).
struct KernelShape {
  bool two_pass = false;       // true for hidden > 16384: one block per row, the row read twice
  bool lean = false;           // two_pass only: the lean variant (RmsNormOptions::LeanTwoPass)
  int cluster_ctas = 1;        // > 1: the cluster kernel, C CTAs of threads_per_block per row
  int split_ctas = 1;          // > 1: the split-row kernel, C CTAs of threads_per_row per row
                               // (each thread holding vectors_per_thread of the whole row)
  bool split_push = false;     // split_ctas > 1 only: the push kernel (RmsNormOptions::split_push):
                               // each thread holding vectors_per_thread of its CTA's share
  bool push_per_warp = false;  // split_push only: each warp pushes its own partial sum (else the
                               // CTA's, after a block reduction); kernel_shapes.cu says where
  int threads_per_row = 0;     // G (the cluster kernel: all C CTAs' threads)
  int vectors_per_thread = 0;  // register path only
  bool reload = false;         // the reload kernel (RmsNormOptions::Reload)
  // The reload kernel with four vectors per thread: its 64-register build (weights loaded with the
  // row, one 1024-thread block per multiprocessor) rather than the 32-register one. Always with a
  // residual.
  bool reload_wide = false;
  bool warp_row = false;  // the warp-row kernel (RmsNormOptions::WarpRow): threads_per_row 32
  int rows_per_block = 0;
  int threads_per_block = 0;
};

// The shape for (dtype, hidden, rows in the launch, whether residuals may be present) with
// `options`' overrides; threads_per_row == 0 if they are invalid.
NORMD_CUDA_API KernelShape ChooseKernelShape(DType dtype, int64_t hidden, int64_t rows,
                                             bool residual, const RmsNormOptions& options = {});

// The staged kernel's shape for a single segment (`rows` 0: no decision by size): rows per tile and
// stages; rows_per_tile == 0 where it cannot run (H over 16384, a row not a whole number of 16-byte
// vectors, a stage over the shared-memory budget, options.staging == kOff) or, under kAuto, where
// the register kernel is the faster one or the reload kernel is chosen (RmsNormOptions::reload).
struct StagedShape {
  int threads_per_row = 0;
  int vectors_per_thread = 0;
  int rows_per_tile = 0;
  int stages = 0;
  int threads_per_block = 0;
  int64_t shared_bytes = 0;  // dynamic shared memory per block
};
NORMD_CUDA_API StagedShape ChooseStagedShape(DType dtype, int64_t hidden, int64_t rows,
                                             bool residual, const RmsNormOptions& options = {});

// One launch over every segment of `launch`. launch.segments points to a DEVICE-resident table of
// launch.num_segments segments, in launch-row order (segment k covers launch rows [first_row,
// first_row + rows)); launch.total_rows is the sum of their rows. Segments may differ in eps,
// weight, weight dtype, weight_offset and residual (or none); they share dtype and hidden. The
// table's contents are not checked on the host: a weight_dtype other than fp32 is read as the
// launch dtype.
NORMD_CUDA_API cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream);
NORMD_CUDA_API cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream,
                                          const RmsNormOptions& options);

// One segment passed by value (no table): the low-latency path. segment.first_row is ignored; the
// segment's rows are rows 0 .. segment.rows - 1 of its own pointers.
NORMD_CUDA_API cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                                   cudaStream_t stream);
NORMD_CUDA_API cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                                   cudaStream_t stream, const RmsNormOptions& options);

}  // namespace normd::cuda

// A C entry for ctypes (bench/cuda/compare_kernels.py): RmsNorm on one segment. dtype and
// weight_dtype are DType's numbers (1 fp32, 2 fp16, 3 bf16); residual and residual_out may be null;
// stream is a cudaStream_t (0 for the legacy default stream); pdl != 0 asks for programmatic
// dependent launch with the weight read before the wait. Returns the cudaError_t as an int.
extern "C" NORMD_CUDA_API int normd_cuda_rmsnorm(int dtype, int64_t hidden, int64_t rows,
                                                 const void* input, void* output,
                                                 const void* residual, void* residual_out,
                                                 const void* weight, int weight_dtype, float eps,
                                                 float weight_offset, void* stream, int pdl);

// normd_cuda_rmsnorm with RmsNormOptions' tuning overrides, for sweeps that time our kernel's
// variants the way compare_kernels.py times it (bench/cuda/shape_sweep.py). reload, lean,
// staging and warp_row: 0 automatic, 1 off, 2 on; vectors_per_thread, threads_per_row,
// cluster_ctas, split_ctas, rows_per_block: 0 automatic, else the override; pdl: 0 none, 1
// programmatic dependent launch with the weight read after the wait, 2 with it read before (as
// normd_cuda_rmsnorm's pdl != 0).
extern "C" NORMD_CUDA_API int normd_cuda_rmsnorm_tuned(
    int dtype, int64_t hidden, int64_t rows, const void* input, void* output, const void* residual,
    void* residual_out, const void* weight, int weight_dtype, float eps, float weight_offset,
    void* stream, int pdl, int reload, int lean, int staging, int vectors_per_thread,
    int threads_per_row, int cluster_ctas, int split_ctas, int warp_row, int rows_per_block);

#endif  // NORMD_KERNELS_CUDA_RMSNORM_CUDA_H_
