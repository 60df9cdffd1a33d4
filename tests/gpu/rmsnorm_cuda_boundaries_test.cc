// The edges of what each kernel configuration takes, against the fp64 reference: the largest row
// each configuration holds and one vector less (one vector more must be refused on the host), the
// automatic choice around H 12288 with fp32 weights and a residual (where a block once asked for
// 48 KiB of dynamic shared memory on top of its static shared memory and failed to launch), and
// row counts on both sides of a block of row groups.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/single_segment_runs.h"

namespace normd::gputest {
namespace {

using cuda::internal::CurrentDeviceFeatures;
using cuda::internal::Describe;
using cuda::internal::DeviceFeatures;
using cuda::internal::KernelConfig;
using cuda::internal::KernelKind;

std::string Label(DType dtype, int64_t hidden, int64_t rows, const RunSpec& spec) {
  return std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
         " rows=" + std::to_string(rows) + " weight=" + DTypeName(spec.weight_dtype) +
         (spec.residual ? " +residual" : "");
}

KernelConfig Config(KernelKind kind, int vectors, int ctas = 0) {
  KernelConfig c;
  c.kind = kind;
  c.vectors = vectors;
  c.ctas = ctas;
  return c;
}

// The largest H (in whole vectors, up to kMaxHidden) that `config` resolves for, or 0.
int64_t LargestHidden(const KernelConfig& config, cuda::internal::LaunchTraits traits,
                      const DeviceFeatures& device) {
  const int64_t step = 16 / static_cast<int64_t>(ItemSize(traits.dtype));
  int64_t largest = 0;
  for (int64_t h = step; h <= cuda::kMaxHidden; h += step) {
    traits.hidden = h;
    if (cuda::internal::ResolveShape(config, traits, device).valid()) largest = h;
  }
  return largest;
}

// Each configuration with a largest row below kMaxHidden: that row and one vector less are
// correct, one vector more is refused before the device.
TEST(RmsNormCudaBoundaries, LargestRowEachConfigHolds) {
  NORMD_REQUIRE_DEVICE();
  const DeviceFeatures device = CurrentDeviceFeatures();
  Random rng(ProcessSeed() ^ 0xb0b0);
  std::vector<KernelConfig> configs;
  for (const int n : {1, 2, 4, 8}) {
    configs.push_back(Config(KernelKind::kRows, n));
    configs.push_back(Config(KernelKind::kReload, n));
    for (const int c : {2, 8}) configs.push_back(Config(KernelKind::kCluster, n, c));
  }
  for (const DType dtype : {DType::kBFloat16, DType::kFloat32}) {
    for (const bool residual : {false, true}) {
      RunSpec spec;
      spec.weight_dtype = dtype;
      spec.residual = residual;
      for (const KernelConfig& config : configs) {
        cuda::internal::LaunchTraits traits;
        traits.dtype = dtype;
        traits.rows = 3;
        traits.residual = residual;
        const int64_t largest = LargestHidden(config, traits, device);
        if (largest == 0 || largest == cuda::kMaxHidden) continue;
        const int64_t step = 16 / static_cast<int64_t>(ItemSize(dtype));
        for (const int64_t hidden : {largest - step, largest}) {
          const Inputs in(dtype, hidden, 3, rng);
          spec.overrides.config = &config;
          ASSERT_EQ(
              RunAndCheck(in, spec, rng, Label(dtype, hidden, 3, spec) + " " + Describe(config)),
              0);
        }
        const Inputs past(dtype, largest + step, 1, rng);
        RmsNormSegment seg;
        seg.input = past.dx.get();
        seg.output = past.dx.get();
        seg.weight = past.dx.get();
        seg.weight_dtype = dtype;
        seg.rows = 1;
        if (residual) {  // the limits with a residual differ (two reloaded vectors: 512 threads)
          seg.residual = past.dr.get();
          seg.residual_out = past.dr.get();
        }
        EXPECT_EQ(
            cuda::internal::RmsNormWith(dtype, largest + step, seg, nullptr, {}, spec.overrides),
            cudaErrorInvalidValue)
            << Describe(config) << " at H " << largest + step;
      }
    }
  }
}

// The launches that failed before (fp32 weights and a residual, H 12276-12288, 257-1023 rows):
// whatever the automatic choice is, it launches and is right.
TEST(RmsNormCudaBoundaries, AutomaticChoiceAroundH12288WithFp32Weights) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x12288);
  for (const DType dtype : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
    for (int64_t hidden = 12276; hidden <= 12288; hidden += dtype == DType::kFloat32 ? 1 : 4) {
      for (const int64_t rows : {257, 1023}) {
        const Inputs in(dtype, hidden, rows, rng);
        RunSpec spec;
        spec.weight_dtype = DType::kFloat32;
        spec.residual = true;
        ASSERT_EQ(RunAndCheck(in, spec, rng, Label(dtype, hidden, rows, spec)), 0);
      }
    }
  }
}

// Row groups of 32 threads in blocks of 128 and 256: row counts one short of, at, and one past a
// block, and around one wave of blocks.
TEST(RmsNormCudaBoundaries, RowsAroundBlocksOfRowGroups) {
  NORMD_REQUIRE_DEVICE();
  const DeviceFeatures device = CurrentDeviceFeatures();
  Random rng(ProcessSeed() ^ 0x4040);
  const int64_t wave = device.multiprocessors > 0 ? device.multiprocessors : 132;
  for (const KernelKind kind : {KernelKind::kRows, KernelKind::kReload}) {
    for (const int block : {128, 256}) {
      KernelConfig config = Config(kind, 1);
      config.block_threads = block;
      const int64_t per_block = block / 32;  // bf16 H 256: 32 vectors, 32 threads of one
      for (const int64_t rows :
           {per_block - 1, per_block, per_block + 1, wave * per_block - 1, wave * per_block + 1}) {
        const Inputs in(DType::kBFloat16, 256, rows, rng);
        RunSpec spec;
        spec.weight_dtype = DType::kBFloat16;
        spec.residual = rows % 2 == 1;
        spec.overrides.config = &config;
        ASSERT_EQ(
            RunAndCheck(in, spec, rng, Label(in.dtype, 256, rows, spec) + " " + Describe(config)),
            0);
      }
    }
  }
}

}  // namespace
}  // namespace normd::gputest
