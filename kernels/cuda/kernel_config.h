// How a launch is shaped: the kernel kind and its parameters (KernelConfig), what the launcher
// knows of a launch (LaunchTraits) and of the device (DeviceFeatures), and the choice between
// them. Internal to the CUDA library and its tests and benchmarks (not part of the public
// rmsnorm_cuda.h): the sweep that regenerates the choice tables and the tests that force each
// configuration call the entry points at the end. Plain C++.
//
// The choice is data: a table per GPU architecture (kernels/cuda/tables/sm_<N>.csv, measured by
// `normd_kernel_bench sweep`, docs/KERNELS.md) maps (dtype, residual, weight dtype, vector path,
// H, rows) points to the fastest configuration measured there; a launch takes the configuration of
// the nearest point that can run it (kernel_table.h). GPUs without a table get DefaultConfig.
#ifndef NORMD_KERNELS_CUDA_KERNEL_CONFIG_H_
#define NORMD_KERNELS_CUDA_KERNEL_CONFIG_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

namespace normd::cuda::internal {

// The kernels (docs/KERNELS.md says why each exists).
enum class KernelKind {
  kRows,     // G threads per row hold it in registers; one read (rows_kernel.cuh)
  kReload,   // G threads per row; the row re-read from L1 for the output (rows_kernel.cuh)
  kLoop,     // one block per row, walked twice; any H, any alignment (loop_kernel.cuh)
  kCluster,  // C CTAs of a cluster per row, partial sums pushed between them (cluster_kernel.cuh)
};

struct KernelConfig {
  KernelKind kind = KernelKind::kRows;
  // kRows, kReload, kCluster: 16-byte vectors per thread (1, 2, 4; 8 for fp32 kRows); the threads
  // per row (per CTA for kCluster) follow from H.
  int vectors = 1;
  // kRows, kReload: rows share blocks of this many threads while a row takes fewer (128 or 256).
  int block_threads = 256;
  int ctas = 0;       // kCluster: 2, 4, 8 or 16
  bool lean = false;  // kLoop: the 32-register variant
  bool operator==(const KernelConfig& o) const {
    return kind == o.kind && vectors == o.vectors && block_threads == o.block_threads &&
           ctas == o.ctas && lean == o.lean;
  }
  bool operator!=(const KernelConfig& o) const { return !(*this == o); }
};

// "rows n=2 b=256", "reload n=4 b=128", "cluster c=8 n=1", "loop lean", ... (the sweep's and the
// table's notation; ParseConfig reads it back).
NORMD_CUDA_API std::string Describe(const KernelConfig& config);
NORMD_CUDA_API bool ParseConfig(const std::string& text, KernelConfig* config);

// What the launcher knows of the device it launches on.
struct DeviceFeatures {
  int sm = 0;               // compute capability, major * 10 + minor (0: unknown)
  int multiprocessors = 0;  // 0: unknown
  // The device runs thread block clusters AND the code image loaded for it has the cluster kernel
  // compiled in (a build's PTX for an older architecture, JIT-compiled for a newer GPU, has not).
  bool clusters = false;
};

// How a launch's segments stand against the 16-byte vector path.
enum class Alignment {
  kVector,   // every segment's pointers are 16-byte aligned and a row is whole vectors
  kElement,  // a row is not whole vectors, or a pointer is not aligned
  kUnknown,  // a device table whose contents the host has not seen: decided per row at run time
};

struct LaunchTraits {
  DType dtype = DType::kBFloat16;
  int64_t hidden = 0;
  int64_t rows = 0;
  bool residual = false;      // a segment may carry a residual
  bool fp32_weights = false;  // a segment of a 16-bit launch may have fp32 weights
  Alignment alignment = Alignment::kVector;
  bool table = false;  // rows come from a device segment table (else one segment by value)
};

// A configuration resolved for one launch. threads_per_row == 0: it cannot run this launch.
struct LaunchShape {
  KernelConfig config;
  int threads_per_row = 0;  // G (kCluster: threads per CTA)
  int rows_per_block = 0;
  int threads_per_block = 0;
  int64_t blocks = 0;  // kCluster: CTAs (rows * C)
  bool valid() const { return threads_per_row > 0; }
};

NORMD_CUDA_API LaunchShape ResolveShape(const KernelConfig& config, const LaunchTraits& traits,
                                        const DeviceFeatures& device);

// Every configuration worth timing for a launch (what the sweep times), each resolvable.
NORMD_CUDA_API std::vector<KernelConfig> CandidateConfigs(const LaunchTraits& traits,
                                                          const DeviceFeatures& device);

// The configuration for GPUs without a table (see kernel_choice.cc); always resolvable.
NORMD_CUDA_API KernelConfig DefaultConfig(const LaunchTraits& traits, const DeviceFeatures& device);

// The table's configuration for the launch where the device's architecture has a table and a
// point of it can run the launch, else DefaultConfig; always resolvable.
NORMD_CUDA_API KernelConfig ChooseConfig(const LaunchTraits& traits, const DeviceFeatures& device);

// The current device's features, asked once per device and remembered.
NORMD_CUDA_API DeviceFeatures CurrentDeviceFeatures();

// Whether the code image loaded for `kernel` on the current device was compiled for sm_90 or
// newer (cudaFuncGetAttributes' ptxVersion), i.e. has the cluster paths rather than their traps.
NORMD_CUDA_API bool KernelImageHasClusters(const void* kernel);

// For tests and sweeps: launch with this configuration (refused with cudaErrorInvalidValue where
// it cannot run the launch) and/or as if the device had these features (e.g. no clusters, to run
// the pre-sm_90 choice on an H200). Null: as the public entry points would.
struct LaunchOverrides {
  const KernelConfig* config = nullptr;
  const DeviceFeatures* features = nullptr;
};

NORMD_CUDA_API cudaError_t RmsNormWith(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                                       cudaStream_t stream, const RmsNormOptions& options,
                                       const LaunchOverrides& overrides);
NORMD_CUDA_API cudaError_t RmsNormBatchedWith(const RmsNormLaunch& launch,
                                              const RmsNormSegment* host_segments,
                                              cudaStream_t stream, const RmsNormOptions& options,
                                              const LaunchOverrides& overrides);

// The shape the public entry points would launch (the same traits and choice), for tests.
NORMD_CUDA_API LaunchShape ChosenShape(const LaunchTraits& traits, const DeviceFeatures& device);

// Whether the library has a kernel build for `shape` under `traits` (every resolvable shape must).
NORMD_CUDA_API bool HasBuildFor(const LaunchTraits& traits, const LaunchShape& shape);

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_KERNEL_CONFIG_H_
