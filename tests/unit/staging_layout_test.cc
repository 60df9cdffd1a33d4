// The staging layouts (server/executors/staging_layout.h): a launch's tensors in system regions are
// left out of the pinned staging buffers and get room of their own in the device-only region
// staging, aligned and without overlap; tensors elsewhere get none there.
#include "server/executors/staging_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace normd {
namespace {

constexpr int64_t kRows = 3, kHidden = 1000;
constexpr int64_t kBytes = kRows * kHidden * 2;           // bf16
constexpr int64_t kAligned = (kBytes + 255) / 256 * 256;  // kStagingAlign

struct Where {
  TensorMemory input, output;
  bool residual;
  TensorMemory residual_in, residual_out;
};

Launch MakeLaunch(const std::vector<Where>& items, std::vector<uint16_t>& data) {
  Launch launch;
  launch.dtype = DType::kBFloat16;
  launch.hidden = kHidden;
  for (const Where& w : items) {
    auto item = std::make_unique<WorkItem>();
    ValidatedRequest& r = item->request;
    r.dtype = DType::kBFloat16;
    r.rows = kRows;
    r.hidden = kHidden;
    r.input = TensorBytes::Contiguous(data.data(), kBytes);
    r.input_memory = w.input;
    r.output_memory = w.output;
    if (w.residual) {
      r.residual = TensorBytes::Contiguous(data.data(), kBytes);
      r.residual_memory = w.residual_in;
      r.residual_out_memory = w.residual_out;
    }
    r.weight = TensorBytes::Contiguous(data.data(), kHidden * 2);
    r.weight_dtype = DType::kBFloat16;
    launch.rows += kRows;
    launch.items.push_back(std::move(item));
  }
  return launch;
}

TEST(StagingLayoutTest, SystemRegionTensorsGetDeviceRoomAndNoPinnedRoom) {
  using M = TensorMemory;
  std::vector<uint16_t> data(kRows * kHidden);
  const Launch launch =
      MakeLaunch({{M::kSharedHost, M::kNormd, false, M::kNormd, M::kNormd},
                  {M::kSharedHost, M::kSharedHost, true, M::kSharedHost, M::kSharedHost},
                  {M::kNormd, M::kNormd, true, M::kNormd, M::kNormd},
                  {M::kDevice, M::kSharedHost, true, M::kSharedHost, M::kDevice}},
                 data);
  const RegionStagingLayout regions = LayOutRegionStaging(launch);
  EXPECT_EQ(regions.input_at, (std::vector<int64_t>{0, kAligned, -1, -1}));
  EXPECT_EQ(regions.residual_at, (std::vector<int64_t>{-1, 2 * kAligned, -1, 3 * kAligned}));
  EXPECT_EQ(regions.output_at, (std::vector<int64_t>{-1, 0, -1, 2 * kAligned}));
  EXPECT_EQ(regions.residual_out_at, (std::vector<int64_t>{-1, kAligned, -1, -1}));
  EXPECT_EQ(regions.up_bytes, 4 * kAligned);
  EXPECT_EQ(regions.down_bytes, 3 * kAligned);

  // The pinned staging holds exactly the tensors the region staging does not (or the device has).
  const StagingLayout staged = LayOutLaunch(launch);
  for (size_t i = 0; i < launch.items.size(); ++i) {
    const ValidatedRequest& r = launch.items[i]->request;
    EXPECT_EQ(staged.input_at[i] >= 0, r.input_memory == M::kNormd) << i;
    EXPECT_EQ(staged.output_at[i] >= 0, r.output_memory == M::kNormd) << i;
    EXPECT_EQ(staged.residual_at[i] >= 0, r.has_residual() && r.residual_memory == M::kNormd) << i;
  }
}

TEST(StagingLayoutTest, ALaunchWithoutSystemRegionsNeedsNoRegionStaging) {
  using M = TensorMemory;
  std::vector<uint16_t> data(kRows * kHidden);
  const Launch launch = MakeLaunch({{M::kNormd, M::kNormd, true, M::kNormd, M::kNormd},
                                    {M::kDevice, M::kDevice, false, M::kNormd, M::kNormd}},
                                   data);
  const RegionStagingLayout regions = LayOutRegionStaging(launch);
  EXPECT_EQ(regions.up_bytes, 0);
  EXPECT_EQ(regions.down_bytes, 0);
  EXPECT_EQ(regions.input_at, (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(regions.output_at, (std::vector<int64_t>{-1, -1}));
}

}  // namespace
}  // namespace normd
