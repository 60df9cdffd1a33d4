// Every kernel configuration, forced, against the fp64 reference: every configuration the sweep
// times at a shape (CandidateConfigs), hence every one a table can pick, at shapes that reach each
// kernel's paths (one vector per row, the element path, rows that leave blocks part full, H past
// what the register kernels hold); every configuration the built-in table picks, at its own
// points; and the choice made as if the device had no clusters (the pre-sm_90 path) or no table.
// Same tolerances, poisoning and guards as rmsnorm_cuda_test.cc.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/single_segment_runs.h"

namespace normd::gputest {
namespace {

using cuda::internal::CandidateConfigs;
using cuda::internal::CurrentDeviceFeatures;
using cuda::internal::Describe;
using cuda::internal::DeviceFeatures;
using cuda::internal::KernelConfig;
using cuda::internal::KernelKind;

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

std::string Label(DType dtype, int64_t hidden, int64_t rows, const RunSpec& spec) {
  return std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
         " rows=" + std::to_string(rows) + " weight=" + DTypeName(spec.weight_dtype) +
         (spec.residual ? " +residual" : "") + (spec.in_place ? " in place" : "");
}

// Runs `in` with every candidate configuration for each weight dtype and residual (every fourth
// run in place, with weight_offset 1). Returns false at the first failing run.
bool RunEveryCandidate(const Inputs& in, const DeviceFeatures& device, Random& rng) {
  std::vector<DType> weight_dtypes = {in.dtype};
  if (in.dtype != DType::kFloat32) weight_dtypes.push_back(DType::kFloat32);
  int run = 0;
  for (const DType weight_dtype : weight_dtypes) {
    for (const bool residual : {false, true}) {
      RunSpec spec;
      spec.weight_dtype = weight_dtype;
      spec.residual = residual;
      spec.overrides.features = &device;
      for (const KernelConfig& config : CandidateConfigs(TraitsOf(in, spec), device)) {
        spec.in_place = run % 4 == 3;
        spec.offset = run % 4 == 3 ? 1.0f : 0.0f;
        ++run;
        spec.overrides.config = &config;
        const std::string what = Label(in.dtype, in.hidden, in.rows, spec) + " " + Describe(config);
        if (RunAndCheck(in, spec, rng, what) != 0) return false;
      }
    }
  }
  return true;
}

class EveryCandidate : public ::testing::TestWithParam<int64_t> {};

// Rows 1, 19 and 300 (64 past H 16384) (part-full blocks of row groups, clusters of few rows) at
// H of one vector,
// the element path (111, 4100 in 16 bits), and past the register kernels (20480, 65536).
TEST_P(EveryCandidate, MatchesReference) {
  NORMD_REQUIRE_DEVICE();
  const int64_t hidden = GetParam();
  const DeviceFeatures device = CurrentDeviceFeatures();
  Random rng(ProcessSeed() ^ static_cast<uint64_t>(hidden * 77));
  for (const DType dtype : kDTypes) {
    const int64_t h = hidden == 0 ? 16 / static_cast<int64_t>(ItemSize(dtype)) : hidden;
    for (const int64_t rows : {int64_t{1}, int64_t{19}, h > 16384 ? int64_t{64} : int64_t{300}}) {
      const Inputs in(dtype, h, rows, rng);
      ASSERT_TRUE(RunEveryCandidate(in, device, rng));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Hidden, EveryCandidate,
                         ::testing::Values(0, 111, 1024, 3000, 4100, 7168, 12288, 16384, 20480,
                                           65536),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return info.param == 0 ? std::string("OneVector")
                                                  : "H" + std::to_string(info.param);
                         });

// Every candidate at a few small shapes: the test compute-sanitizer's memcheck and racecheck run
// (every kernel build the others reach, in seconds rather than minutes under the tools).
TEST(RmsNormCudaConfigs, EveryCandidateAtFewRowsForSanitizers) {
  NORMD_REQUIRE_DEVICE();
  const DeviceFeatures device = CurrentDeviceFeatures();
  Random rng(ProcessSeed() ^ 0x5a5a);
  for (const DType dtype : {DType::kBFloat16, DType::kFloat32}) {
    for (const int64_t hidden : {111, 1024, 4096, 20480}) {
      const Inputs in(dtype, hidden, 3, rng);
      ASSERT_TRUE(RunEveryCandidate(in, device, rng));
    }
  }
}

// Every configuration of the built-in table for this device, at up to two of the points where it
// is the choice (rows capped at 4M elements to keep the reference quick), forced.
TEST(RmsNormCudaConfigs, TablePicksMatchReference) {
  NORMD_REQUIRE_DEVICE();
  const DeviceFeatures device = CurrentDeviceFeatures();
  const cuda::internal::KernelTable* table = cuda::internal::BuiltInTable(device.sm);
  if (table == nullptr || table->entries().empty()) {
    GTEST_SKIP() << "no measured table for sm_" << device.sm << " (launches take DefaultConfig)";
  }
  Random rng(ProcessSeed() ^ 0x7ab1e);
  std::map<std::string, int> runs;
  int checked = 0;
  for (const auto& e : table->entries()) {
    if (runs[Describe(e.config)]++ >= 2) continue;
    const int64_t rows = std::clamp<int64_t>((int64_t{1} << 22) / e.hidden, 1, e.rows);
    const Inputs in(e.dtype, e.hidden, rows, rng);
    RunSpec spec;
    spec.weight_dtype = e.fp32_weights ? DType::kFloat32 : e.dtype;
    spec.residual = e.residual;
    spec.overrides.config = &e.config;
    if (!e.vector) {
      // Element-path points have H that is not whole vectors: as measured.
      ASSERT_NE((e.hidden * static_cast<int64_t>(ItemSize(e.dtype))) % 16, 0);
    }
    ASSERT_EQ(
        RunAndCheck(in, spec, rng, Label(e.dtype, e.hidden, rows, spec) + " " + Describe(e.config)),
        0);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The automatic choice as a GPU without clusters (sm_80, or an sm_90 build whose image lacks them)
// and as one without a table (sm_100) would make it, run on this device: every H class and rows
// from latency- to throughput-bound. The choice must never take the cluster kernel without
// clusters.
TEST(RmsNormCudaConfigs, ChoiceWithoutClustersOrTable) {
  NORMD_REQUIRE_DEVICE();
  const DeviceFeatures real = CurrentDeviceFeatures();
  const DeviceFeatures no_clusters{real.sm, real.multiprocessors, false};
  const DeviceFeatures ampere{80, 108, false};
  const DeviceFeatures untabled{100, real.multiprocessors, real.clusters};
  Random rng(ProcessSeed() ^ 0xfa11);
  for (const DType dtype : {DType::kBFloat16, DType::kFloat32}) {
    for (const int64_t hidden : {111, 4096, 7168, 16384, 65536}) {
      for (const int64_t rows : {1, 8, 64, 3000}) {
        if (hidden * rows > (int64_t{1} << 24)) continue;  // the reference stays quick
        const Inputs in(dtype, hidden, rows, rng);
        for (const DeviceFeatures* device : {&no_clusters, &ampere, &untabled}) {
          for (const bool residual : {false, true}) {
            RunSpec spec;
            spec.weight_dtype = dtype;
            spec.residual = residual;
            spec.overrides.features = device;
            const KernelConfig chosen = cuda::internal::ChooseConfig(TraitsOf(in, spec), *device);
            if (!device->clusters) ASSERT_NE(chosen.kind, KernelKind::kCluster);
            const std::string what = Label(dtype, hidden, rows, spec) + " as sm_" +
                                     std::to_string(device->sm) + " " + Describe(chosen);
            ASSERT_EQ(RunAndCheck(in, spec, rng, what), 0);
          }
        }
      }
    }
  }
}

// The H200's own code image has the cluster kernel compiled in, and the launcher knows it (the
// gate reads the loaded image, not the device's major version).
TEST(RmsNormCudaConfigs, ImageGateSeesClusters) {
  NORMD_REQUIRE_DEVICE();
  const DeviceFeatures device = CurrentDeviceFeatures();
  if (device.sm < 90) GTEST_SKIP() << "sm_" << device.sm << " has no clusters";
  EXPECT_TRUE(device.clusters) << "sm_" << device.sm << ": cluster kernel not in the loaded image";
}

}  // namespace
}  // namespace normd::gputest
