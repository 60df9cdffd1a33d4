// Host launchers of the RMSNorm kernels (rmsnorm_kernels.cuh, rmsnorm_two_pass_kernel.cuh,
// rmsnorm_staged_kernel.cuh, rmsnorm_cluster_kernel.cuh): pick the kernel and its shape from the
// dtype, hidden size and rows, check what can be checked on the host, and launch with
// cudaLaunchKernelEx (so that programmatic dependent launch and clusters are one attribute away).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>

#include "kernels/cuda/rmsnorm_cluster_kernel.cuh"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/rmsnorm_staged_kernel.cuh"
#include "kernels/cuda/rmsnorm_two_pass_kernel.cuh"

namespace normd::cuda {
namespace {

using internal::KernelParams;

// Rows up to this many elements stay in registers (issue 3: read once for H <= 16384).
constexpr int64_t kRegisterMaxHidden = 16384;
// The automatic shape spreads a row over up to this many threads when rows are few.
constexpr int kPreferredGroupThreads = 256;
// "Few rows": rows * threads_per_row under this many threads (about a third of the H200's 132 x
// 2048 resident threads). Chosen from the shape sweep (docs/KERNELS.md): 1024 x 4096 bf16 ran 7.8
// us as 128 x 4 and 9.2 us as 256 x 2; 1024 x 1024 ran 4.7 us as 128 x 1 and 5.1 us as 32 x 4.
constexpr int64_t kSpreadBelowThreads = 100000;
// Launches of at most this many blocks (under two waves of the H200's 132 multiprocessors) are
// latency-bound: their kernels load the weight together with the row instead of after the
// reduction.
constexpr int64_t kLatencyBoundBlocks = 256;
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

// RmsNormOptions::weights_through_shared applies to late-weight launches with a residual of at most
// this many blocks (one wave of 128-thread blocks at 8 per multiprocessor of the H200's 132: with a
// single wave the L2 round trip of the weight after the reduction is not hidden behind other
// blocks) and weights of at most the default dynamic shared memory. Measured at 1024 rows
// (docs/KERNELS.md "v7"): fused launches 3-10% faster, plain 16-bit ones 0-4% slower (the copies
// go out ahead of the row's loads), so plain launches keep reading the weight from global memory.
constexpr int64_t kSharedWeightMaxBlocks = 1056;
constexpr int64_t kSharedWeightMaxBytes = 48 << 10;

// Shared memory the staged kernel's stages may take per block (sm_90 allows 227 KB): enough for
// several 32 KB tiles, so that each multiprocessor always has one or more on their way.
constexpr int64_t kStagedSharedBudget = 192 << 10;
// The automatic choice takes the staged kernel from these sizes on (see ChooseStagedShape).
constexpr int64_t kStagedAutoMinHidden = 8192;  // exclusive
constexpr int64_t kStagedAutoMinRows = 1024;
// Bytes per tile the staged kernel aims at (R rows of one tensor): large copies, several per stage
// budget.
constexpr int64_t kStagedTileBytes = 32 << 10;

bool ValidDType(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t PowerOfTwoCeil(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Threads of a row group that covers `vectors`: a power of two up to 32, else a multiple of 32.
int64_t GroupThreadsFor(int64_t vectors) {
  return vectors <= 32 ? PowerOfTwoCeil(vectors) : CeilDiv(vectors, 32) * 32;
}

bool ValidGroupThreads(int g) {
  if (g <= 0 || g > internal::kMaxBlockThreads) return false;
  return g <= 32 ? (g & (g - 1)) == 0 : g % 32 == 0;
}

bool ValidVectorsPerThread(DType d, int n) {
  return n == 1 || n == 2 || n == 4 || (n == 8 && d == DType::kFloat32);
}

// One launch of `kernel` over `blocks` blocks, with programmatic dependent launch when `pdl`.
// cluster_ctas > 1: in clusters of that many blocks (blocks must be a multiple of it).
cudaError_t LaunchKernel(void (*kernel)(KernelParams), const KernelParams& params, int64_t blocks,
                         int threads_per_block, size_t shared_bytes, bool pdl, cudaStream_t stream,
                         int cluster_ctas = 1) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads_per_block));
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[2];
  unsigned count = 0;
  if (pdl) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count].val.programmaticStreamSerializationAllowed = 1;
    ++count;
  }
  if (cluster_ctas > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = static_cast<unsigned>(cluster_ctas);
    attributes[count].val.clusterDim.y = 1;
    attributes[count].val.clusterDim.z = 1;
    ++count;
  }
  config.attrs = count > 0 ? attributes : nullptr;
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, kernel, params);
}

// Whether the current device runs thread block clusters and the copy engine's bulk copies (sm_90);
// the device's number in *device.
bool DeviceIsSm90OrNewer(int* device) {
  int major = 0;
  return cudaGetDevice(device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, *device) ==
             cudaSuccess &&
         major >= 9;
}

template <typename T, bool kEarlyWeights, bool kResidual,
          internal::WeightKind kW = internal::WeightKind::kEither>
void (*RowKernelFor(int vectors_per_thread))(KernelParams) {
  switch (vectors_per_thread) {
    case 1:
      return internal::RmsNormRowKernel<T, 1, kEarlyWeights, kResidual, kW>;
    case 2:
      return internal::RmsNormRowKernel<T, 2, kEarlyWeights, kResidual, kW>;
    case 4:
      return internal::RmsNormRowKernel<T, 4, kEarlyWeights, kResidual, kW>;
    case 8:
      // fp32 only (H up to 16384 in 512 threads); the early-weight variant spills, so never that.
      if constexpr (sizeof(T) == 4) return internal::RmsNormRowKernel<T, 8, false, kResidual>;
      return nullptr;
    default:
      return nullptr;
  }
}

template <typename T>
cudaError_t LaunchTyped(KernelParams params, const KernelShape& shape, bool residual,
                        const RmsNormOptions& options, cudaStream_t stream) {
  const bool pdl = options.programmatic_dependent_launch;
  if (shape.cluster_ctas > 1) {
    const int64_t ctas = params.total_rows * shape.cluster_ctas;
    if (ctas > INT_MAX) return cudaErrorInvalidValue;
    return LaunchKernel(residual ? internal::RmsNormClusterKernel<T, true>
                                 : internal::RmsNormClusterKernel<T, false>,
                        params, ctas, shape.threads_per_block, 0, pdl, stream, shape.cluster_ctas);
  }
  const int64_t blocks = CeilDiv(params.total_rows, shape.rows_per_block);
  if (blocks > INT_MAX) return cudaErrorInvalidValue;
  void (*kernel)(KernelParams) = nullptr;
  const bool early = blocks <= kLatencyBoundBlocks;
  // The weight through shared memory (RmsNormOptions::weights_through_shared): its bytes.
  size_t shared_bytes = 0;
  if (options.weights_through_shared && residual && !early && blocks <= kSharedWeightMaxBlocks &&
      params.table == nullptr && internal::CanVectorize<T>(params.single, params.hidden)) {
    // RmsNorm admits weights of the input's dtype or fp32 only.
    const int64_t bytes =
        params.hidden * static_cast<int64_t>(ItemSize(params.single.weight_dtype));
    if (bytes <= kSharedWeightMaxBytes) {
      shared_bytes = static_cast<size_t>(bytes);
      params.shared_weights = 1;
    }
  }
  // One segment of 16-bit weights like its 16-bit input, known on the host: the lean and the
  // throughput-bound register kernels then take the variant that knows it (see WeightKind). A
  // batched launch's segments may mix weight dtypes.
  const bool weights_like_input =
      sizeof(T) == 2 && params.table == nullptr && params.single.weight_dtype != DType::kFloat32;
  if (shape.two_pass) {
    if (shape.lean) {
      constexpr auto kLike = internal::WeightKind::kLikeInput;
      if (weights_like_input) {
        kernel = residual ? internal::RmsNormTwoPassKernel<T, true, true, kLike>
                          : internal::RmsNormTwoPassKernel<T, true, false, kLike>;
      } else {
        kernel = residual ? internal::RmsNormTwoPassKernel<T, true, true>
                          : internal::RmsNormTwoPassKernel<T, true, false>;
      }
    } else {
      kernel = internal::RmsNormTwoPassKernel<T>;
    }
  } else if (early) {
    kernel = residual ? RowKernelFor<T, true, true>(shape.vectors_per_thread)
                      : RowKernelFor<T, true, false>(shape.vectors_per_thread);
  } else {
    if constexpr (sizeof(T) == 2) {
      // Throughput-bound: the variant that keeps half the weight registers. Only here among the
      // register kernels: latency-bound launches are not short of registers.
      if (weights_like_input) {
        constexpr auto kLike = internal::WeightKind::kLikeInput;
        kernel = residual ? RowKernelFor<T, false, true, kLike>(shape.vectors_per_thread)
                          : RowKernelFor<T, false, false, kLike>(shape.vectors_per_thread);
      }
    }
    if (kernel == nullptr) {
      kernel = residual ? RowKernelFor<T, false, true>(shape.vectors_per_thread)
                        : RowKernelFor<T, false, false>(shape.vectors_per_thread);
    }
  }
  if (kernel == nullptr) return cudaErrorInvalidValue;

  return LaunchKernel(kernel, params, blocks, shape.threads_per_block, shared_bytes, pdl, stream);
}

template <typename T, bool kResidual, internal::WeightKind kW>
void (*StagedKernelFor(int vectors_per_thread))(KernelParams) {
  switch (vectors_per_thread) {
    case 1:
      return internal::RmsNormStagedKernel<T, 1, kResidual, kW>;
    case 2:
      return internal::RmsNormStagedKernel<T, 2, kResidual, kW>;
    case 4:
      return internal::RmsNormStagedKernel<T, 4, kResidual, kW>;
    case 8:
      if constexpr (sizeof(T) == 4) return internal::RmsNormStagedKernel<T, 8, kResidual, kW>;
      return nullptr;
    default:
      return nullptr;
  }
}

template <typename T>
void (*StagedKernelFor(const StagedShape& shape, bool residual,
                       bool weights_like_input))(KernelParams) {
  constexpr auto kLike = internal::WeightKind::kLikeInput;
  const int n = shape.vectors_per_thread;
  // fp32 weights under a 16-bit input: the variant that reads them (fp32 inputs have only those).
  if constexpr (sizeof(T) == 2) {
    constexpr auto kEither = internal::WeightKind::kEither;
    if (!weights_like_input) {
      return residual ? StagedKernelFor<T, true, kEither>(n)
                      : StagedKernelFor<T, false, kEither>(n);
    }
  }
  return residual ? StagedKernelFor<T, true, kLike>(n) : StagedKernelFor<T, false, kLike>(n);
}

// Persistent blocks: as many per multiprocessor as its shared memory and registers hold (the
// occupancy calculator's answer), never more blocks than tiles.
template <typename T>
cudaError_t LaunchStagedTyped(KernelParams params, const StagedShape& shape, bool residual,
                              bool pdl, int device, cudaStream_t stream) {
  const bool weights_like_input = sizeof(T) == 4 || params.single.weight_dtype != DType::kFloat32;
  void (*kernel)(KernelParams) = StagedKernelFor<T>(shape, residual, weights_like_input);
  if (kernel == nullptr) return cudaErrorInvalidValue;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(shape.shared_bytes));
  int multiprocessors = 0;
  int per_multiprocessor = 0;
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  }
  if (err == cudaSuccess) {
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel,
                                                        shape.threads_per_block,
                                                        static_cast<size_t>(shape.shared_bytes));
  }
  if (err != cudaSuccess) return err;
  if (per_multiprocessor < 1) return cudaErrorInvalidConfiguration;
  params.threads_per_row = shape.threads_per_row;
  params.rows_per_block = shape.rows_per_tile;
  params.stages = shape.stages;
  const int64_t tiles = CeilDiv(params.total_rows, shape.rows_per_tile);
  const int64_t blocks = std::min<int64_t>(tiles, int64_t{multiprocessors} * per_multiprocessor);

  return LaunchKernel(kernel, params, blocks, shape.threads_per_block,
                      static_cast<size_t>(shape.shared_bytes), pdl, stream);
}

// Launches the staged kernel for this single segment if it can run here: its pointers pass the
// kernels' own vector-path rule (CanVectorize) and the device has the copy engine's bulk copies
// (sm_90 or newer). False when it did not launch.
template <typename T>
bool TryLaunchStaged(const KernelParams& params, const StagedShape& shape, bool pdl,
                     cudaStream_t stream, cudaError_t* result) {
  const RmsNormSegment& seg = params.single;
  int device = 0;
  if (!internal::CanVectorize<T>(seg, params.hidden) || !DeviceIsSm90OrNewer(&device)) return false;
  *result = LaunchStagedTyped<T>(params, shape, seg.residual != nullptr, pdl, device, stream);
  return true;
}

// The staged kernel for this single segment, if it should and can run it.
bool LaunchStagedIfChosen(DType dtype, const KernelParams& params, const RmsNormOptions& options,
                          cudaStream_t stream, cudaError_t* result) {
  if (options.staging == RmsNormOptions::Staging::kOff || params.total_rows == 0) return false;
  const StagedShape shape = ChooseStagedShape(dtype, params.hidden, params.total_rows,
                                              params.single.residual != nullptr, options);
  if (shape.rows_per_tile == 0) return false;
  const bool pdl = options.programmatic_dependent_launch;
  switch (dtype) {
    case DType::kFloat32:
      return TryLaunchStaged<float>(params, shape, pdl, stream, result);
    case DType::kFloat16:
      return TryLaunchStaged<__half>(params, shape, pdl, stream, result);
    case DType::kBFloat16:
      return TryLaunchStaged<__nv_bfloat16>(params, shape, pdl, stream, result);
  }
  return false;
}

// Where the lean two-pass kernel beat the register kernel on the H200 at rows >= 4096 (docs/KERNELS.md
// "v6", bench/cuda/results/h200_2026-11-30_lean_v3): 16-bit with a residual at H 1024, 4096, 8192
// (and 7168 from 16384 rows), fp32 with a residual at H 1024 and 4096 (and 3000 from 16384 rows),
// fp32 plain at H 4096, 7168, 8192. In the next call it was faster at 32 of these 39 shapes and
// within 2.5% at the rest. Elsewhere it lost: 16-bit plain rows everywhere (0.7-0.9x the register
// kernel's speed), H 5120 (a second, mostly idle iteration per pass), H 16384. Other H keep the
// register kernel: the rule is what was measured, not a model.
bool LeanTwoPassWins(DType dtype, int64_t hidden, int64_t rows, bool residual) {
  if (rows < 4096) return false;
  if (dtype == DType::kFloat32) {
    if (!residual) return hidden == 4096 || hidden == 7168 || hidden == 8192;
    return hidden == 1024 || hidden == 4096 || (hidden == 3000 && rows >= 16384);
  }
  if (!residual) return false;
  return hidden == 1024 || hidden == 4096 || hidden == 8192 || (hidden == 7168 && rows >= 16384);
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

// residual: whether any segment may carry a residual (always true for a device table).
cudaError_t Launch(DType dtype, KernelParams params, bool residual, const RmsNormOptions& options,
                   cudaStream_t stream) {
  KernelShape shape = ChooseKernelShape(dtype, params.hidden, params.total_rows, residual, options);
  if (shape.threads_per_row == 0) return cudaErrorInvalidValue;
  int device = 0;
  if (shape.cluster_ctas > 1 && !DeviceIsSm90OrNewer(&device)) {
    RmsNormOptions no_cluster = options;  // no clusters before sm_90: the register kernel
    no_cluster.cluster_ctas = 1;
    shape = ChooseKernelShape(dtype, params.hidden, params.total_rows, residual, no_cluster);
    if (shape.threads_per_row == 0) return cudaErrorInvalidValue;
  }
  params.threads_per_row = shape.threads_per_row;
  params.rows_per_block = shape.rows_per_block;
  if (params.total_rows == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kFloat32:
      return LaunchTyped<float>(params, shape, residual, options, stream);
    case DType::kFloat16:
      return LaunchTyped<__half>(params, shape, residual, options, stream);
    case DType::kBFloat16:
      return LaunchTyped<__nv_bfloat16>(params, shape, residual, options, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

KernelShape ChooseKernelShape(DType dtype, int64_t hidden, int64_t rows, bool residual,
                              const RmsNormOptions& options) {
  KernelShape shape;
  if (!ValidDType(dtype) || hidden < 1 || hidden > kMaxHidden) return shape;
  const bool overridden = options.two_pass || options.threads_per_row != 0 ||
                          options.vectors_per_thread != 0 || options.cluster_ctas > 1;
  const int64_t vec_elems = 16 / static_cast<int64_t>(ItemSize(dtype));
  const int64_t vectors = CeilDiv(hidden, vec_elems);  // 16-byte vectors per row
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
  shape.threads_per_row = static_cast<int>(g);
  shape.vectors_per_thread = static_cast<int>(n);
  shape.rows_per_block =
      g >= 128 ? 1 : static_cast<int>(std::max<int64_t>(1, kSmallGroupBlockThreads / g));
  shape.threads_per_block = shape.rows_per_block * shape.threads_per_row;
  return shape;
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

cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream) {
  return RmsNormBatched(launch, stream, RmsNormOptions{});
}

cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream,
                           const RmsNormOptions& options) {
  if (!ValidDType(launch.dtype) || launch.total_rows < 0) return cudaErrorInvalidValue;
  if (launch.total_rows > 0 && (launch.segments == nullptr || launch.num_segments < 1)) {
    return cudaErrorInvalidValue;
  }
  KernelParams params = {};
  params.table = launch.segments;
  params.num_segments = launch.num_segments;
  params.hidden = launch.hidden;
  params.total_rows = launch.total_rows;
  params.weight_before_wait = 0;  // the weight pointer itself comes from the table
  // The lean kernel's automatic choice was measured on single segments only.
  RmsNormOptions batched_options = options;
  if (batched_options.lean_two_pass == RmsNormOptions::LeanTwoPass::kAuto) {
    batched_options.lean_two_pass = RmsNormOptions::LeanTwoPass::kOff;
  }
  return Launch(launch.dtype, params, /*residual=*/true, batched_options, stream);
}

cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                    cudaStream_t stream) {
  return RmsNorm(dtype, hidden, segment, stream, RmsNormOptions{});
}

cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment, cudaStream_t stream,
                    const RmsNormOptions& options) {
  if (!ValidDType(dtype) || segment.rows < 0) return cudaErrorInvalidValue;
  if (segment.weight_dtype != dtype && segment.weight_dtype != DType::kFloat32) {
    return cudaErrorInvalidValue;
  }
  if (segment.rows > 0 &&
      (segment.input == nullptr || segment.output == nullptr || segment.weight == nullptr ||
       (segment.residual != nullptr && segment.residual_out == nullptr))) {
    return cudaErrorInvalidValue;
  }
  KernelParams params = {};
  params.single = segment;
  params.single.first_row = 0;
  params.table = nullptr;
  params.num_segments = 1;
  params.hidden = hidden;
  params.total_rows = segment.rows;
  params.weight_before_wait =
      options.programmatic_dependent_launch && options.weight_before_dependency_wait ? 1 : 0;
  cudaError_t staged = cudaSuccess;
  if (LaunchStagedIfChosen(dtype, params, options, stream, &staged)) return staged;
  return Launch(dtype, params, segment.residual != nullptr, options, stream);
}

}  // namespace normd::cuda

extern "C" int normd_cuda_rmsnorm(int dtype, int64_t hidden, int64_t rows, const void* input,
                                  void* output, const void* residual, void* residual_out,
                                  const void* weight, int weight_dtype, float eps,
                                  float weight_offset, void* stream, int pdl) {
  normd::RmsNormSegment segment;
  segment.input = input;
  segment.output = output;
  segment.residual = residual;
  segment.residual_out = residual_out;
  segment.weight = weight;
  segment.rows = rows;
  segment.eps = eps;
  segment.weight_offset = weight_offset;
  segment.weight_dtype = static_cast<normd::DType>(weight_dtype);
  normd::cuda::RmsNormOptions options;
  options.programmatic_dependent_launch = pdl != 0;
  options.weight_before_dependency_wait = pdl != 0;
  return static_cast<int>(normd::cuda::RmsNorm(static_cast<normd::DType>(dtype), hidden, segment,
                                               static_cast<cudaStream_t>(stream), options));
}
