// CopyPool (server/executors/copy_pool.h): every byte of every job copied, nothing outside them
// touched, for any thread count, launch after launch, with helpers sleeping or polling between
// launches; and the packer (server/executors/staging_layout.h) writing the same staging bytes with
// a pool as without one.
#include "server/executors/copy_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "server/executors/staging_layout.h"

namespace normd {
namespace {

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// Copies `sizes` pieces of a source into a destination at shifted, unaligned offsets, with gaps
// between them, and checks the pieces arrived and the gaps kept their poison.
void CheckOneLaunch(CopyPool& pool, std::mt19937_64& rng, const std::vector<int64_t>& sizes,
                    bool streaming) {
  int64_t total = 0;
  for (int64_t s : sizes) total += s + 37;  // a gap after each piece
  const std::vector<uint8_t> from = RandomBytes(rng, static_cast<size_t>(total));
  std::vector<uint8_t> to(static_cast<size_t>(total) + 16, 0xA5);
  std::vector<CopyJob> jobs;
  int64_t at = 0;
  for (int64_t s : sizes) {
    jobs.push_back(CopyJob{to.data() + 3 + at, from.data() + at, s, streaming});
    at += s + 37;
  }
  pool.Run(jobs);
  at = 0;
  for (size_t j = 0; j < sizes.size(); ++j) {
    const int64_t s = sizes[j];
    for (int64_t k = 0; k < s; ++k) {
      ASSERT_EQ(to[static_cast<size_t>(3 + at + k)], from[static_cast<size_t>(at + k)])
          << "job " << j << " of " << s << " bytes, byte " << k;
    }
    for (int64_t k = s; k < s + 37; ++k) {
      ASSERT_EQ(to[static_cast<size_t>(3 + at + k)], 0xA5) << "gap after job " << j << " written";
    }
    at += s + 37;
  }
  for (int k = 0; k < 3; ++k)
    ASSERT_EQ(to[static_cast<size_t>(k)], 0xA5) << "byte before the first job written";
}

TEST(CopyPoolTest, CopiesEveryJobWhateverTheThreadsAndSizes) {
  std::mt19937_64 rng(7);
  for (int threads : {1, 2, 4}) {
    CopyPool pool(threads, absl::ZeroDuration());
    EXPECT_EQ(pool.threads(), threads);
    for (bool streaming : {false, true}) {
      SCOPED_TRACE(testing::Message() << threads << " threads, streaming " << streaming);
      CheckOneLaunch(pool, rng, {}, streaming);
      CheckOneLaunch(pool, rng, {1}, streaming);
      // Just under and over the parallel threshold, in one job and in gRPC-sized pieces.
      CheckOneLaunch(pool, rng, {kParallelCopyMinBytes - 1}, streaming);
      CheckOneLaunch(pool, rng, {kParallelCopyMinBytes + 1}, streaming);
      CheckOneLaunch(pool, rng, std::vector<int64_t>(40, 16 << 10), streaming);
      // A large odd job next to small ones: cut into pieces, each of which lands where it belongs.
      CheckOneLaunch(pool, rng, {5, (3 << 20) + 13, 100, (1 << 20) - 3}, streaming);
    }
  }
}

TEST(CopyPoolTest, LaunchesUnderTheThresholdAreCopiedByTheCallerAlone) {
  std::mt19937_64 rng(11);
  CopyPool pool(4, absl::ZeroDuration(), /*parallel_min_bytes=*/int64_t{1} << 20);
  CheckOneLaunch(pool, rng, std::vector<int64_t>(32, 16 << 10), /*streaming=*/true);  // 512 KiB
  EXPECT_EQ(pool.split_launches(), 0) << "a launch under the threshold woke the helpers";
  CheckOneLaunch(pool, rng, {(1 << 20) + 64}, /*streaming=*/true);
  EXPECT_EQ(pool.split_launches(), 1);
  // The default threshold splits the 512 KiB launch; a threshold of 0 splits every launch of more
  // than one piece (a single piece has no one to share it with), and every byte still lands where
  // it belongs.
  CopyPool by_default(4, absl::ZeroDuration());
  CheckOneLaunch(by_default, rng, std::vector<int64_t>(32, 16 << 10), /*streaming=*/false);
  EXPECT_EQ(by_default.split_launches(), 1);
  CopyPool always(3, absl::ZeroDuration(), /*parallel_min_bytes=*/0);
  CheckOneLaunch(always, rng, {1}, /*streaming=*/false);
  EXPECT_EQ(always.split_launches(), 0);
  CheckOneLaunch(always, rng, {5, 100, 3}, /*streaming=*/true);
  EXPECT_EQ(always.split_launches(), 1);
}

TEST(CopyPoolTest, LaunchAfterLaunchWithHelpersSleepingOrPolling) {
  std::mt19937_64 rng(11);
  for (absl::Duration spin : {absl::ZeroDuration(), absl::Milliseconds(2)}) {
    CopyPool pool(3, spin);
    for (int launch = 0; launch < 60; ++launch) {
      SCOPED_TRACE(testing::Message() << "spin " << spin << ", launch " << launch);
      std::vector<int64_t> sizes(1 + rng() % 6);
      for (int64_t& s : sizes) s = static_cast<int64_t>(rng() % (200 << 10));
      CheckOneLaunch(pool, rng, sizes, launch % 2 == 0);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(CopyPoolTest, RunCopiesWithoutAPoolCopiesOnTheCaller) {
  std::mt19937_64 rng(3);
  const std::vector<uint8_t> from = RandomBytes(rng, 300 << 10);
  std::vector<uint8_t> to(from.size(), 0);
  RunCopies(nullptr, {CopyJob{to.data(), from.data(), static_cast<int64_t>(from.size()), true}});
  EXPECT_EQ(to, from);
}

// The packer with a pool writes the staging buffer a packer without one writes, and unpacks into
// the same outputs: three 64 x 4096 bf16 requests (512 KiB each, over the threshold), the second
// with a residual, their bytes in 16 KiB pieces as gRPC delivers them.
TEST(CopyPoolTest, PackAndUnpackWithAPoolMatchTheCallerAlone) {
  std::mt19937_64 rng(5);
  constexpr int64_t kRows = 64, kHidden = 4096;
  constexpr int64_t kBytes = kRows * kHidden * 2;
  std::vector<std::vector<uint8_t>> inputs, residuals, weights;
  std::vector<std::vector<uint8_t>> outputs(3, std::vector<uint8_t>(kBytes)),
      residual_outs(3, std::vector<uint8_t>(kBytes));
  Launch launch;
  launch.dtype = DType::kBFloat16;
  launch.hidden = kHidden;
  for (int i = 0; i < 3; ++i) {
    inputs.push_back(RandomBytes(rng, kBytes));
    residuals.push_back(RandomBytes(rng, kBytes));
    weights.push_back(RandomBytes(rng, kHidden * 2));
    auto item = std::make_unique<WorkItem>();
    ValidatedRequest& r = item->request;
    r.dtype = DType::kBFloat16;
    r.rows = kRows;
    r.hidden = kHidden;
    r.input = TensorBytes::Empty();
    for (int64_t at = 0; at < kBytes; at += 16 << 10)
      r.input.Append(inputs.back().data() + at, 16 << 10);
    if (i == 1) {
      r.residual = TensorBytes::Empty();
      for (int64_t at = 0; at < kBytes; at += 16 << 10)
        r.residual.Append(residuals.back().data() + at, 16 << 10);
      item->residual_out = residual_outs[1].data();
    }
    r.weight =
        TensorBytes::Contiguous(weights.back().data(), static_cast<int64_t>(weights.back().size()));
    r.weight_dtype = DType::kBFloat16;
    r.eps = 1e-5f;
    item->output = outputs[static_cast<size_t>(i)].data();
    launch.rows += kRows;
    launch.bytes += r.payload_bytes();
    launch.items.push_back(std::move(item));
  }
  const StagingLayout layout = LayOutLaunch(launch);
  const auto no_registered = [](const RegisteredWeight&) -> absl::StatusOr<const void*> {
    return absl::InternalError("no registered weights here");
  };
  std::vector<uint8_t> alone(static_cast<size_t>(layout.up_bytes), 0), pooled(alone.size(), 0);
  const std::vector<uint8_t> down = RandomBytes(rng, static_cast<size_t>(layout.down_bytes));
  CopyPool pool(4, absl::ZeroDuration());
  ASSERT_TRUE(PackLaunch(launch, layout, alone.data(), alone.data(),
                         const_cast<uint8_t*>(down.data()), no_registered)
                  .ok());
  ASSERT_TRUE(PackLaunch(launch, layout, pooled.data(), alone.data(),
                         const_cast<uint8_t*>(down.data()), no_registered, &pool)
                  .ok());
  EXPECT_TRUE(alone == pooled) << "the pooled pack differs from the caller's own";
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(0, std::memcmp(pooled.data() + layout.input_at[i], inputs[i].data(), kBytes))
        << "input " << i;
  }
  EXPECT_EQ(0, std::memcmp(pooled.data() + layout.residual_at[1], residuals[1].data(), kBytes));

  UnpackLaunch(launch, layout, down.data(), &pool);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(0, std::memcmp(outputs[i].data(), down.data() + layout.output_at[i], kBytes))
        << "output " << i;
  }
  EXPECT_EQ(0,
            std::memcmp(residual_outs[1].data(), down.data() + layout.residual_out_at[1], kBytes));
}

}  // namespace
}  // namespace normd
