// Host launchers of the RMSNorm kernels (rmsnorm_kernels.cuh, rmsnorm_two_pass_kernel.cuh,
// rmsnorm_cluster_kernel.cuh, and through kernel_instances.cuh the staged, reload, warp-row,
// split-row and push kernels): take the kernel and shape that kernel_shapes.cu chooses from the
// dtype, hidden size and rows (the kernel template's instance from kernel_instances.cuh), check
// what can be checked on the host, and launch with cudaLaunchKernelEx (so that programmatic
// dependent launch and clusters are one attribute away).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/kernel_instances.cuh"
#include "kernels/cuda/rmsnorm_cluster_kernel.cuh"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/cuda/rmsnorm_kernels.cuh"
#include "kernels/cuda/rmsnorm_two_pass_kernel.cuh"

namespace normd::cuda {
namespace {

using internal::CeilDiv;
using internal::KernelParams;
using internal::PushKernelFor;
using internal::ReloadKernelFor;
using internal::RowKernelFor;
using internal::SplitPushKernelFor;
using internal::SplitRowKernelFor;
using internal::StagedKernelFor;
using internal::ValidDType;
using internal::WarpRowKernelFor;

// Launches of at most this many blocks (under two waves of the H200's 132 multiprocessors) are
// latency-bound: their kernels load the weight together with the row instead of after the
// reduction.
constexpr int64_t kLatencyBoundBlocks = 256;
// RmsNormOptions::weights_through_shared applies to late-weight launches with a residual of at most
// this many blocks (one wave of 128-thread blocks at 8 per multiprocessor of the H200's 132: with a
// single wave the L2 round trip of the weight after the reduction is not hidden behind other
// blocks) and weights of at most the default dynamic shared memory. Measured at 1024 rows
// (docs/KERNELS.md "v7"): fused launches 3-10% faster, plain 16-bit ones 0-4% slower (the copies
// go out ahead of the row's loads), so plain launches keep reading the weight from global memory.
constexpr int64_t kSharedWeightMaxBlocks = 1056;
constexpr int64_t kSharedWeightMaxBytes = 48 << 10;

// The launch attribute that groups blocks in clusters of `ctas` along x.
cudaLaunchAttribute ClusterDimension(int ctas) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(ctas);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  return attribute;
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
  if (cluster_ctas > 1) attributes[count++] = ClusterDimension(cluster_ctas);
  config.attrs = count > 0 ? attributes : nullptr;
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, kernel, params);
}

// Whether `kernel` can run in clusters of `ctas` > 8 CTAs (a non-portable size) of `threads`
// threads on the current device: it opts in (cudaFuncAttributeNonPortableClusterSizeAllowed) and
// at least one such cluster fits (the H100 and H200 place clusters of 16; a MIG slice or another
// part may not). Asked once per device, kernel, size and block size and remembered: neither call
// is a stream operation, but keeping them out of every launch keeps them out of stream captures
// after the first.
bool LargeClustersRun(void (*kernel)(KernelParams), int ctas, int threads) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int, int>, bool> known;
  const auto key = std::make_tuple(device, reinterpret_cast<const void*>(kernel), ctas, threads);
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  bool runs = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) ==
              cudaSuccess;
  if (runs) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(ctas));
    config.blockDim = dim3(static_cast<unsigned>(threads));
    cudaLaunchAttribute cluster = ClusterDimension(ctas);
    config.attrs = &cluster;
    config.numAttrs = 1;
    int clusters = 0;
    runs =
        cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) == cudaSuccess && clusters > 0;
  }
  if (!runs) (void)cudaGetLastError();  // the refusal must not reach the caller's next check
  known[key] = runs;
  return runs;
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

// Whether this launch is one segment on the vector path: what the reload and push kernels need
// (and the split-row kernel, with more).
bool SingleSegmentOnVectorPath(DType dtype, const KernelParams& params) {
  if (params.table != nullptr) return false;
  switch (dtype) {
    case DType::kFloat32:
      return internal::CanVectorize<float>(params.single, params.hidden);
    case DType::kFloat16:
      return internal::CanVectorize<__half>(params.single, params.hidden);
    case DType::kBFloat16:
      return internal::CanVectorize<__nv_bfloat16>(params.single, params.hidden);
  }
  return false;
}

// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) overlap (null: no range).
bool Overlap(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  if (a == nullptr || b == nullptr) return false;
  const auto begin_a = reinterpret_cast<uintptr_t>(a);
  const auto begin_b = reinterpret_cast<uintptr_t>(b);
  return begin_a < begin_b + static_cast<uintptr_t>(b_bytes) &&
         begin_b < begin_a + static_cast<uintptr_t>(a_bytes);
}

// Whether the split-row kernel can take this launch: one segment, on the vector path, and no
// output overlapping an input (its CTAs read the whole row while others store their shares).
bool SplitRowCanRun(DType dtype, const KernelParams& params) {
  if (!SingleSegmentOnVectorPath(dtype, params)) return false;
  const RmsNormSegment& s = params.single;
  const int64_t bytes = s.rows * params.hidden * static_cast<int64_t>(ItemSize(dtype));
  const void* written[] = {s.output, s.residual_out};
  for (const void* w : written) {
    if (Overlap(w, bytes, s.input, bytes) || Overlap(w, bytes, s.residual, bytes)) return false;
  }
  return true;
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
  if (shape.split_ctas > 1) {  // C CTAs per row: the push kernel (as a cluster) or the split
    const int64_t ctas = params.total_rows * shape.split_ctas;
    if (ctas > INT_MAX) return cudaErrorInvalidValue;
    params.split_ctas = shape.split_ctas;
    if (shape.split_push) {
      void (*push)(KernelParams) =
          residual ? SplitPushKernelFor<T, true>(shape) : SplitPushKernelFor<T, false>(shape);
      if (push == nullptr) return cudaErrorInvalidValue;
      return LaunchKernel(push, params, ctas, shape.threads_per_block, 0, pdl, stream,
                          shape.split_ctas);
    }
    void (*split)(KernelParams) = residual ? SplitRowKernelFor<T, true>(shape.vectors_per_thread)
                                           : SplitRowKernelFor<T, false>(shape.vectors_per_thread);
    if (split == nullptr) return cudaErrorInvalidValue;
    return LaunchKernel(split, params, ctas, shape.threads_per_block, 0, pdl, stream);
  }
  const int64_t blocks = CeilDiv(params.total_rows, shape.rows_per_block);
  if (blocks > INT_MAX) return cudaErrorInvalidValue;
  void (*kernel)(KernelParams) = nullptr;
  const bool early = blocks <= kLatencyBoundBlocks;
  // The weight through shared memory (RmsNormOptions::weights_through_shared): its bytes.
  size_t shared_bytes = 0;
  if (options.weights_through_shared && !shape.reload && !shape.warp_row && residual && !early &&
      blocks <= kSharedWeightMaxBlocks && params.table == nullptr &&
      internal::CanVectorize<T>(params.single, params.hidden)) {
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
  if (shape.warp_row) {
    kernel = WarpRowKernelFor<T>(params.single, shape.vectors_per_thread);
  } else if (shape.reload) {
    kernel = ReloadKernelFor<T>(params.single, shape);
  } else if (shape.two_pass) {
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

// residual: whether any segment may carry a residual (always true for a device table).
cudaError_t Launch(DType dtype, KernelParams params, bool residual, const RmsNormOptions& options,
                   cudaStream_t stream) {
  // The kernel the options choose; where this launch cannot run it, the one chosen with that
  // kernel turned off, and so on (each turn switches one option off for good, so this ends). Every
  // fallback starts from the previous one's options: starting from the caller's again could bring
  // back a kernel already found unable to run (a push for a segment table after the split-row
  // kernel's fallback did that: an illegal address in normd's batched launches, call push_c).
  RmsNormOptions chosen = options;
  KernelShape shape;
  int device = 0;
  for (;;) {
    shape = ChooseKernelShape(dtype, params.hidden, params.total_rows, residual, chosen);
    if (shape.threads_per_row == 0) return cudaErrorInvalidValue;
    if (shape.split_push &&
        !(SingleSegmentOnVectorPath(dtype, params) && DeviceIsSm90OrNewer(&device))) {
      // A segment table, off the vector path, or no clusters (before sm_90).
      if (chosen.split_push == RmsNormOptions::SplitPush::kOn) {
        chosen.split_ctas = 0;  // forced with the push, they were its C and G
        chosen.threads_per_row = 0;
      }
      chosen.split_push = RmsNormOptions::SplitPush::kOff;
    } else if (shape.split_push && shape.split_ctas > internal::kMaxClusterCtas &&
               !LargeClustersRun(PushKernelFor(dtype, residual, shape), shape.split_ctas,
                                 shape.threads_per_block)) {
      // Clusters past 8 CTAs that this device cannot place: the push kernel with C = 8 (forced
      // with the rest of the choice; the automatic choice took the push already).
      chosen.split_push = RmsNormOptions::SplitPush::kOn;
      chosen.split_ctas = internal::kMaxClusterCtas;
    } else if (shape.reload && !SingleSegmentOnVectorPath(dtype, params)) {
      chosen.reload = RmsNormOptions::Reload::kOff;
    } else if (shape.warp_row && !SingleSegmentOnVectorPath(dtype, params)) {
      chosen.warp_row = RmsNormOptions::WarpRow::kOff;
    } else if (shape.split_ctas > 1 && !shape.split_push && !SplitRowCanRun(dtype, params)) {
      chosen.split_ctas = 1;
      // A forced split's threads_per_row is the split kernel's CTA size, not a row group that the
      // fallback could take (16-bit H 7168 in 128 threads needs 8 vectors each, which the
      // register kernel refuses). The automatic split is never taken with threads_per_row set.
      chosen.threads_per_row = 0;
    } else if (shape.cluster_ctas > 1 && !DeviceIsSm90OrNewer(&device)) {
      chosen.cluster_ctas = 1;  // no clusters before sm_90: the register kernel
    } else {
      break;
    }
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
  // The lean and reload kernels' automatic choices were measured on single segments only (and the
  // reload and warp-row kernels take no table).
  RmsNormOptions batched_options = options;
  if (batched_options.lean_two_pass == RmsNormOptions::LeanTwoPass::kAuto) {
    batched_options.lean_two_pass = RmsNormOptions::LeanTwoPass::kOff;
  }
  batched_options.reload = RmsNormOptions::Reload::kOff;
  batched_options.warp_row = RmsNormOptions::WarpRow::kOff;
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
  return normd_cuda_rmsnorm_tuned(dtype, hidden, rows, input, output, residual, residual_out,
                                  weight, weight_dtype, eps, weight_offset, stream,
                                  pdl != 0 ? 2 : 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}

extern "C" int normd_cuda_rmsnorm_tuned(int dtype, int64_t hidden, int64_t rows, const void* input,
                                        void* output, const void* residual, void* residual_out,
                                        const void* weight, int weight_dtype, float eps,
                                        float weight_offset, void* stream, int pdl, int reload,
                                        int lean, int staging, int vectors_per_thread,
                                        int threads_per_row, int cluster_ctas, int split_ctas,
                                        int warp_row, int rows_per_block) {
  using Options = normd::cuda::RmsNormOptions;
  if (pdl < 0 || pdl > 2 || reload < 0 || reload > 2 || lean < 0 || lean > 2 || staging < 0 ||
      staging > 2 || warp_row < 0 || warp_row > 2) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  Options options;
  options.programmatic_dependent_launch = pdl != 0;
  options.weight_before_dependency_wait = pdl == 2;
  // 0, 1, 2 are kAuto, kOff, kOn in all four enums.
  options.reload = static_cast<Options::Reload>(reload);
  options.lean_two_pass = static_cast<Options::LeanTwoPass>(lean);
  options.staging = static_cast<Options::Staging>(staging);
  options.warp_row = static_cast<Options::WarpRow>(warp_row);
  options.vectors_per_thread = vectors_per_thread;
  options.threads_per_row = threads_per_row;
  options.cluster_ctas = cluster_ctas;
  options.split_ctas = split_ctas;
  options.rows_per_block = rows_per_block;
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
  return static_cast<int>(normd::cuda::RmsNorm(static_cast<normd::DType>(dtype), hidden, segment,
                                               static_cast<cudaStream_t>(stream), options));
}
