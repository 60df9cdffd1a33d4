// The choice of kernel configuration, on the host (these run without a device, in CI too): the
// notation round-trips, the built-in tables parse and every point's configuration is one the
// sweep times and resolves there, a table point looks up its own configuration, the rule between
// points, and over a dense scan of launches every choice resolves, has a kernel build, and never
// takes clusters on a device without them. Properties, not thread counts: a retune changes the
// table, not these tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"

namespace normd::gputest {
namespace {

using cuda::internal::Alignment;
using cuda::internal::CandidateConfigs;
using cuda::internal::ChooseConfig;
using cuda::internal::Describe;
using cuda::internal::DeviceFeatures;
using cuda::internal::KernelConfig;
using cuda::internal::KernelKind;
using cuda::internal::KernelTable;
using cuda::internal::LaunchTraits;
using cuda::internal::ParseConfig;
using cuda::internal::ResolveShape;

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
const DeviceFeatures kH200{90, 132, true};
const DeviceFeatures kDevices[] = {kH200,           {90, 132, false}, {80, 108, false},
                                   {89, 76, false}, {100, 148, true}, {0, 0, false}};

LaunchTraits Traits(DType dtype, int64_t hidden, int64_t rows, bool residual, bool fp32_weights,
                    Alignment alignment, bool table) {
  LaunchTraits t;
  t.dtype = dtype;
  t.hidden = hidden;
  t.rows = rows;
  t.residual = residual;
  t.fp32_weights = fp32_weights && dtype != DType::kFloat32;
  t.alignment = alignment;
  t.table = table;
  return t;
}

// The alignment a launch of aligned buffers has at H.
Alignment AlignmentAt(DType dtype, int64_t hidden) {
  return (hidden * static_cast<int64_t>(ItemSize(dtype))) % 16 == 0 ? Alignment::kVector
                                                                    : Alignment::kElement;
}

TEST(RmsNormCudaChoice, NotationRoundTrips) {
  for (const DType dtype : kDTypes) {
    for (const int64_t rows : {1, 64, 100000}) {
      const LaunchTraits t = Traits(dtype, 4096, rows, true, false, Alignment::kVector, false);
      for (const KernelConfig& c : CandidateConfigs(t, kH200)) {
        KernelConfig back;
        ASSERT_TRUE(ParseConfig(Describe(c), &back)) << Describe(c);
        EXPECT_EQ(back, c) << Describe(c) << " read back as " << Describe(back);
      }
    }
  }
  KernelConfig c;
  EXPECT_FALSE(ParseConfig("rows n=2 b=256 w=after", &c));  // no longer a parameter
  EXPECT_FALSE(ParseConfig("warp n=1", &c));
  EXPECT_FALSE(ParseConfig("cluster c=8 n", &c));
}

// Every point of a built-in table holds a configuration the sweep times there (so the tests that
// force every candidate cover it) and that resolves there, and looking the point up gives it.
TEST(RmsNormCudaChoice, BuiltInTablePointsAreCandidatesAndLookUpToThemselves) {
  const KernelTable* table = cuda::internal::BuiltInTable(90);
  ASSERT_NE(table, nullptr) << "kernels/cuda/tables/sm_90.csv did not parse";
  for (const auto& e : table->entries()) {
    const LaunchTraits t = Traits(e.dtype, e.hidden, e.rows, e.residual, e.fp32_weights,
                                  e.vector ? Alignment::kVector : Alignment::kElement, false);
    const std::string what = std::string(DTypeName(e.dtype)) + " H=" + std::to_string(e.hidden) +
                             " rows=" + std::to_string(e.rows) + (e.residual ? " +r" : "") +
                             (e.fp32_weights ? " fp32 w" : "") + ": " + Describe(e.config);
    ASSERT_TRUE(ResolveShape(e.config, t, kH200).valid()) << what;
    const std::vector<KernelConfig> candidates = CandidateConfigs(t, kH200);
    EXPECT_NE(std::find(candidates.begin(), candidates.end(), e.config), candidates.end()) << what;
    KernelConfig looked_up;
    ASSERT_TRUE(table->Lookup(t, kH200, &looked_up)) << what;
    EXPECT_EQ(looked_up, e.config) << what << " looked up as " << Describe(looked_up);
  }
}

// The rule between points: the nearest point in log2 H + log2 rows that can run the launch; fp16
// falls back to bf16's points and fp32 weights to the input's where the table has none.
TEST(RmsNormCudaChoice, NearestPointThatRunsTheLaunch) {
  const std::string csv =
      "# a made-up table\n"
      "dtype,residual,weights,path,hidden,rows,config,us\n"
      "bf16,0,input,vector,1024,8,rows n=1 b=256,1.0\n"
      "bf16,0,input,vector,1024,8192,reload n=2 b=256,2.0\n"
      "bf16,0,input,vector,8192,8192,reload n=4 b=256,3.0\n"
      "bf16,0,input,vector,8192,8,cluster c=8 n=1,4.0\n";
  KernelTable table;
  std::string error;
  ASSERT_TRUE(KernelTable::Parse(csv, &table, &error)) << error;
  ASSERT_EQ(table.entries().size(), 4u);
  auto lookup = [&](DType dtype, int64_t hidden, int64_t rows, const DeviceFeatures& device) {
    KernelConfig c;
    EXPECT_TRUE(table.Lookup(Traits(dtype, hidden, rows, false, false, Alignment::kVector, false),
                             device, &c));
    return Describe(c);
  };
  EXPECT_EQ(lookup(DType::kBFloat16, 1000, 6, kH200), "rows n=1 b=256");
  EXPECT_EQ(lookup(DType::kBFloat16, 1536, 4000, kH200), "reload n=2 b=256");
  EXPECT_EQ(lookup(DType::kFloat16, 7000, 20000, kH200), "reload n=4 b=256");  // bf16's points
  EXPECT_EQ(lookup(DType::kBFloat16, 8192, 8, kH200), "cluster c=8 n=1");
  // Without clusters, and with held rows of one vector per thread unable to hold H 8192 (512
  // threads of 8 elements): the nearest point that runs the launch.
  EXPECT_EQ(lookup(DType::kBFloat16, 8192, 8, DeviceFeatures{90, 132, false}), "reload n=4 b=256");
  EXPECT_EQ(lookup(DType::kBFloat16, 1024, 2, DeviceFeatures{80, 108, false}), "rows n=1 b=256");
  KernelConfig c;
  EXPECT_FALSE(
      table.Lookup(Traits(DType::kFloat32, 1024, 8, false, false, Alignment::kVector, false), kH200,
                   &c));  // no fp32 slice
  EXPECT_FALSE(KernelTable::Parse("dtype,hidden\nbf16,8\n", &table, &error));
  EXPECT_NE(error.find("no column"), std::string::npos) << error;
  EXPECT_FALSE(KernelTable::Parse(
      "dtype,residual,weights,path,hidden,rows,config\nbf16,0,input,vector,99999999,1,loop\n",
      &table, &error));
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
}

// Over a dense scan of launches (every dtype, H from 1 to kMaxHidden in uneven steps, rows from
// 0 to a million, residual, weights, alignment, single or table) and devices, the choice always
// resolves, has a kernel build, never takes clusters where the device has none, and the default
// (GPUs without a table) never takes them at all.
TEST(RmsNormCudaChoice, EveryLaunchGetsARunnableConfiguration) {
  std::vector<int64_t> hiddens;
  for (int64_t h = 1; h <= cuda::kMaxHidden; h = h < 64 ? h + 7 : h * 9 / 8 + 1)
    hiddens.push_back(h);
  hiddens.insert(hiddens.end(), {4096, 12288, 16384, 16385, 32768, cuda::kMaxHidden});
  int64_t launches = 0;
  for (const DeviceFeatures& device : kDevices) {
    for (const DType dtype : kDTypes) {
      for (const int64_t hidden : hiddens) {
        for (const int64_t rows : {0, 1, 3, 8, 50, 129, 1000, 5000, 70000, 1000000}) {
          for (int bits = 0; bits < 16; ++bits) {
            const bool residual = bits & 1, fp32_weights = bits & 2, table = bits & 4;
            Alignment alignment = AlignmentAt(dtype, hidden);
            if (bits & 8) alignment = table ? Alignment::kUnknown : Alignment::kElement;
            const LaunchTraits t =
                Traits(dtype, hidden, rows, residual, fp32_weights, alignment, table);
            const KernelConfig chosen = ChooseConfig(t, device);
            const auto shape = ResolveShape(chosen, t, device);
            ASSERT_TRUE(shape.valid()) << Describe(chosen) << " H=" << hidden << " rows=" << rows;
            ASSERT_TRUE(cuda::internal::HasBuildFor(t, shape)) << Describe(chosen);
            if (!device.clusters) ASSERT_NE(chosen.kind, KernelKind::kCluster);
            ASSERT_NE(cuda::internal::DefaultConfig(t, device).kind, KernelKind::kCluster);
            ++launches;
          }
        }
      }
    }
  }
  EXPECT_GT(launches, 100000);
}

// Every candidate the sweep can time at a launch resolves and has a kernel build.
TEST(RmsNormCudaChoice, EveryCandidateHasABuild) {
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {1, 8, 111, 1024, 4100, 12288, 16384, 20000, 65536}) {
      for (const int64_t rows : {1, 64, 8192}) {
        for (int bits = 0; bits < 8; ++bits) {
          const bool residual = bits & 1, fp32_weights = bits & 2, table = bits & 4;
          const LaunchTraits t = Traits(dtype, hidden, rows, residual, fp32_weights,
                                        AlignmentAt(dtype, hidden), table);
          const std::vector<KernelConfig> candidates = CandidateConfigs(t, kH200);
          EXPECT_FALSE(candidates.empty());
          for (const KernelConfig& c : candidates) {
            const auto shape = ResolveShape(c, t, kH200);
            ASSERT_TRUE(shape.valid()) << Describe(c);
            ASSERT_TRUE(cuda::internal::HasBuildFor(t, shape)) << Describe(c) << " H=" << hidden;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace normd::gputest
