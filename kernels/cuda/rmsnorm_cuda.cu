// The host entry points (rmsnorm_cuda.h, kernel_config.h): what the launcher knows of a launch
// (LaunchTraits) and of the device (DeviceFeatures), the configuration chosen for it
// (kernel_choice.cc), the kernel build that runs it (kernel_instances.h), and the launch itself
// through cudaLaunchKernelEx, so that programmatic dependent launch and clusters are one attribute
// away.
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/kernel_instances.h"
#include "kernels/cuda/kernel_limits.h"
#include "kernels/cuda/kernel_params.h"
#include "kernels/cuda/rmsnorm_cuda.h"

namespace normd::cuda {
namespace internal {
namespace {

cudaLaunchAttribute ClusterDimension(int ctas) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(ctas);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  return attribute;
}

// One launch of `kernel` with programmatic dependent launch when `pdl`, in clusters of
// `cluster_ctas` blocks when that is > 1 (blocks a multiple of it).
cudaError_t LaunchKernel(KernelFunction kernel, const KernelParams& params, int64_t blocks,
                         int threads_per_block, size_t shared_bytes, bool pdl, cudaStream_t stream,
                         int cluster_ctas) {
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

// Remembers, per device and kernel, the answer of a question asked once (a device query or an
// attribute set): neither is a stream operation, but keeping them out of every launch keeps them
// out of stream captures after the first.
template <typename Key>
class OnceAnswers {
 public:
  template <typename Ask>
  bool Get(const Key& key, Ask ask) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = known_.find(key); it != known_.end()) return it->second;
    const bool answer = ask();
    if (!answer) (void)cudaGetLastError();  // a refusal must not reach the caller's next check
    known_[key] = answer;
    return answer;
  }

 private:
  std::mutex mutex_;
  std::map<Key, bool> known_;
};

// Whether `kernel` can run in clusters of `ctas` > 8 CTAs (a non-portable size) of `threads`
// threads on the current device: it opts in and at least one such cluster fits (a MIG slice or
// another part may not place clusters of 16).
bool LargeClustersRun(KernelFunction kernel, int ctas, int threads) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  static OnceAnswers<std::tuple<int, const void*, int, int>> answers;
  return answers.Get(
      std::make_tuple(device, reinterpret_cast<const void*>(kernel), ctas, threads), [&] {
        if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
            cudaSuccess) {
          return false;
        }
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(static_cast<unsigned>(ctas));
        config.blockDim = dim3(static_cast<unsigned>(threads));
        cudaLaunchAttribute cluster = ClusterDimension(ctas);
        config.attrs = &cluster;
        config.numAttrs = 1;
        int clusters = 0;
        return cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) == cudaSuccess &&
               clusters > 0;
      });
}

bool VectorPath(DType dtype, const RmsNormSegment& s, int64_t hidden) {
  auto aligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; };
  return (hidden * static_cast<int64_t>(ItemSize(dtype))) % 16 == 0 && aligned(s.input) &&
         aligned(s.output) && aligned(s.weight) &&
         (s.residual == nullptr || (aligned(s.residual) && aligned(s.residual_out)));
}

// Whether the table's segments with rows tile the launch's rows in order and are rows of one
// tensor each for x, y (and r, residual_out, present in all or none): segment k's pointers at its
// first row of those tensors.
// If so, *view is that tensor pair as one segment of the launch's rows (weight and eps unset:
// they stay per segment).
bool ContiguousView(const RmsNormSegment* host, const RmsNormLaunch& launch, RmsNormSegment* view) {
  const int64_t row_bytes = launch.hidden * static_cast<int64_t>(ItemSize(launch.dtype));
  auto base = [&](const void* p, int64_t first_row) {
    return static_cast<const char*>(p) - first_row * row_bytes;
  };
  const RmsNormSegment* first = nullptr;
  int64_t next_row = 0;  // the segments must tile the launch's rows, in order
  for (int32_t i = 0; i < launch.num_segments; ++i) {
    const RmsNormSegment& s = host[i];
    if (s.rows == 0) continue;
    if (s.first_row != next_row || s.rows < 0) return false;
    next_row += s.rows;
    if (first == nullptr) {
      first = &s;
      continue;
    }
    const bool residual = first->residual != nullptr;
    if ((s.residual != nullptr) != residual ||
        base(s.input, s.first_row) != base(first->input, first->first_row) ||
        base(s.output, s.first_row) != base(first->output, first->first_row) ||
        (residual &&
         (base(s.residual, s.first_row) != base(first->residual, first->first_row) ||
          base(s.residual_out, s.first_row) != base(first->residual_out, first->first_row)))) {
      return false;
    }
  }
  if (first == nullptr || next_row != launch.total_rows) return false;
  *view = RmsNormSegment{};
  view->input = base(first->input, first->first_row);
  view->output = const_cast<char*>(base(first->output, first->first_row));
  if (first->residual != nullptr) {
    view->residual = base(first->residual, first->first_row);
    view->residual_out = const_cast<char*>(base(first->residual_out, first->first_row));
  }
  view->rows = launch.total_rows;
  view->weight = nullptr;
  return true;
}

// The cluster shape with C = 8 instead of 16 (more vectors per thread where the share needs
// them), for a device that cannot place clusters of 16; invalid where none holds the row.
LaunchShape WithPortableClusters(LaunchShape shape, const LaunchTraits& traits,
                                 const DeviceFeatures& device) {
  KernelConfig c = shape.config;
  c.ctas = kPortableClusterCtas;
  for (; c.vectors <= 4; c.vectors *= 2) {
    const LaunchShape portable = ResolveShape(c, traits, device);
    if (portable.valid()) return portable;
  }
  return LaunchShape{};
}

cudaError_t Launch(KernelParams params, const LaunchTraits& traits, const RmsNormOptions& options,
                   const LaunchOverrides& overrides, cudaStream_t stream) {
  const DeviceFeatures device =
      overrides.features != nullptr ? *overrides.features : CurrentDeviceFeatures();
  const KernelConfig config =
      overrides.config != nullptr ? *overrides.config : ChooseConfig(traits, device);
  LaunchShape shape = ResolveShape(config, traits, device);
  if (!shape.valid()) return cudaErrorInvalidValue;
  if (params.total_rows == 0) return cudaSuccess;
  const bool contiguous = params.contiguous != 0;
  KernelFunction kernel = KernelFor(traits, shape, contiguous);
  if (shape.config.kind == KernelKind::kCluster && shape.config.ctas > kPortableClusterCtas &&
      !LargeClustersRun(kernel, shape.config.ctas, shape.threads_per_block)) {
    shape = WithPortableClusters(shape, traits, device);
    if (!shape.valid()) return cudaErrorInvalidValue;
    kernel = KernelFor(traits, shape, contiguous);
  }
  if (kernel == nullptr) return cudaErrorInvalidValue;
  params.threads_per_row = shape.threads_per_row;
  params.rows_per_block = shape.rows_per_block;
  params.ctas = shape.config.kind == KernelKind::kCluster ? shape.config.ctas : 1;
  return LaunchKernel(kernel, params, shape.blocks, shape.threads_per_block, /*shared_bytes=*/0,
                      options.programmatic_dependent_launch, stream, params.ctas);
}

cudaError_t LaunchSingle(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                         cudaStream_t stream, const RmsNormOptions& options,
                         const LaunchOverrides& overrides) {
  if (!ValidDType(dtype) || segment.rows < 0 || hidden < 1 || hidden > kMaxHidden) {
    return cudaErrorInvalidValue;
  }
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
  LaunchTraits traits;
  traits.dtype = dtype;
  traits.hidden = hidden;
  traits.rows = segment.rows;
  traits.residual = segment.residual != nullptr;
  traits.fp32_weights = dtype != DType::kFloat32 && segment.weight_dtype == DType::kFloat32;
  traits.alignment = VectorPath(dtype, segment, hidden) ? Alignment::kVector : Alignment::kElement;
  traits.table = false;
  return Launch(params, traits, options, overrides, stream);
}

}  // namespace

DeviceFeatures CurrentDeviceFeatures() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return DeviceFeatures{};
  }
  static std::mutex mutex;
  static std::map<int, DeviceFeatures> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(device); it != known.end()) return it->second;
  DeviceFeatures features;
  int major = 0, minor = 0, multiprocessors = 0, cluster_launch = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) ==
          cudaSuccess) {
    features.sm = major * 10 + minor;
    features.multiprocessors = multiprocessors;
  }
  if (cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device) != cudaSuccess) {
    cluster_launch = 0;
  }
  // Any cluster build stands for all: they are compiled in one go for the same architectures.
  LaunchShape probe;
  probe.config.kind = KernelKind::kCluster;
  probe.config.vectors = 2;
  probe.config.ctas = 2;
  probe.threads_per_block = 256;
  features.clusters =
      cluster_launch != 0 &&
      KernelImageHasClusters(reinterpret_cast<const void*>(Fp32KernelFor(probe, BuildTraits{})));
  (void)cudaGetLastError();
  known[device] = features;
  return features;
}

bool HasBuildFor(const LaunchTraits& traits, const LaunchShape& shape) {
  return shape.valid() && KernelFor(traits, shape) != nullptr;
}

bool KernelImageHasClusters(const void* kernel) {
  cudaFuncAttributes attributes = {};
  if (kernel == nullptr || cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  // ptxVersion is the virtual architecture the loaded code was compiled from: 90 for the sm_90a
  // build, 80 or 89 where the driver JIT-compiled an older architecture's PTX for this GPU.
  return attributes.ptxVersion >= 90;
}

cudaError_t RmsNormWith(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                        cudaStream_t stream, const RmsNormOptions& options,
                        const LaunchOverrides& overrides) {
  return LaunchSingle(dtype, hidden, segment, stream, options, overrides);
}

cudaError_t RmsNormBatchedWith(const RmsNormLaunch& launch, const RmsNormSegment* host_segments,
                               cudaStream_t stream, const RmsNormOptions& options,
                               const LaunchOverrides& overrides) {
  if (!ValidDType(launch.dtype) || launch.total_rows < 0 || launch.hidden < 1 ||
      launch.hidden > kMaxHidden) {
    return cudaErrorInvalidValue;
  }
  if (launch.total_rows > 0 && (launch.segments == nullptr || launch.num_segments < 1)) {
    return cudaErrorInvalidValue;
  }
  // One segment known on the host: passed by value, as RmsNorm does (no table to read first).
  if (host_segments != nullptr && launch.num_segments == 1 && host_segments[0].first_row == 0 &&
      host_segments[0].rows == launch.total_rows) {
    return LaunchSingle(launch.dtype, launch.hidden, host_segments[0], stream, options, overrides);
  }
  KernelParams params = {};
  params.table = launch.segments;
  params.num_segments = launch.num_segments;
  params.hidden = launch.hidden;
  params.total_rows = launch.total_rows;
  params.weight_before_wait = 0;  // the weight pointer itself comes from the table
  LaunchTraits traits;
  traits.dtype = launch.dtype;
  traits.hidden = launch.hidden;
  traits.rows = launch.total_rows;
  traits.table = true;
  const bool sixteen_bit = launch.dtype != DType::kFloat32;
  if (host_segments == nullptr) {
    // Unseen table: every segment may have a residual and fp32 weights, and each is put on the
    // vector or the element path at run time.
    traits.residual = true;
    traits.fp32_weights = sixteen_bit;
    traits.alignment = Alignment::kUnknown;
  } else {
    traits.residual = false;
    traits.fp32_weights = false;
    traits.alignment = Alignment::kVector;
    const bool inline_rows =
        launch.num_segments <= kInlineSegments && launch.total_rows <= UINT32_MAX;
    for (int32_t i = 0; i < launch.num_segments; ++i) {
      if (inline_rows) params.first_rows[i] = static_cast<uint32_t>(host_segments[i].first_row);
      const RmsNormSegment& s = host_segments[i];
      if (s.weight_dtype != launch.dtype && s.weight_dtype != DType::kFloat32) {
        return cudaErrorInvalidValue;
      }
      traits.residual = traits.residual || s.residual != nullptr;
      traits.fp32_weights =
          traits.fp32_weights || (sixteen_bit && s.weight_dtype == DType::kFloat32);
      if (s.rows > 0 && !VectorPath(launch.dtype, s, launch.hidden)) {
        traits.alignment = Alignment::kElement;
      }
    }
    if (inline_rows) {
      params.inline_segments = launch.num_segments;
      if (traits.alignment == Alignment::kVector) {
        params.contiguous = ContiguousView(host_segments, launch, &params.single) ? 1 : 0;
      }
    }
  }
  return Launch(params, traits, options, overrides, stream);
}

}  // namespace internal

cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream) {
  return internal::RmsNormBatchedWith(launch, nullptr, stream, RmsNormOptions{}, {});
}

cudaError_t RmsNormBatched(const RmsNormLaunch& launch, cudaStream_t stream,
                           const RmsNormOptions& options) {
  return internal::RmsNormBatchedWith(launch, nullptr, stream, options, {});
}

cudaError_t RmsNormBatched(const RmsNormLaunch& launch, const RmsNormSegment* host_segments,
                           cudaStream_t stream, const RmsNormOptions& options) {
  return internal::RmsNormBatchedWith(launch, host_segments, stream, options, {});
}

cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                    cudaStream_t stream) {
  return internal::LaunchSingle(dtype, hidden, segment, stream, RmsNormOptions{}, {});
}

cudaError_t RmsNorm(DType dtype, int64_t hidden, const RmsNormSegment& segment, cudaStream_t stream,
                    const RmsNormOptions& options) {
  return internal::LaunchSingle(dtype, hidden, segment, stream, options, {});
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

extern "C" int normd_cuda_rmsnorm_batched(int dtype, int64_t hidden, int64_t total_rows,
                                          const void* device_segments, int num_segments,
                                          const void* host_segments, void* stream) {
  normd::RmsNormLaunch launch;
  launch.dtype = static_cast<normd::DType>(dtype);
  launch.hidden = hidden;
  launch.total_rows = total_rows;
  launch.segments = static_cast<const normd::RmsNormSegment*>(device_segments);
  launch.num_segments = num_segments;
  return static_cast<int>(normd::cuda::RmsNormBatched(
      launch, static_cast<const normd::RmsNormSegment*>(host_segments),
      static_cast<cudaStream_t>(stream), normd::cuda::RmsNormOptions{}));
}

extern "C" int normd_cuda_segment_bytes() {
  return static_cast<int>(sizeof(normd::RmsNormSegment));
}
