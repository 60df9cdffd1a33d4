// UsableCpuCount (server/config/usable_cpus.h) must follow the affinity mask and the cgroup CPU
// quota, not the machine's CPU count: normd sizes its threads by it.
#include "server/config/usable_cpus.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace normd {
namespace {

TEST(UsableCpuCountTest, AffinityCountFollowsTheMask) {
  cpu_set_t original;
  CPU_ZERO(&original);
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(AffinityCpuCount(), CPU_COUNT(&original));

  // Narrow this thread to the first CPU it may use: the count must drop to 1 whatever the machine
  // has.
  int first = 0;
  while (!CPU_ISSET(first, &original)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int narrowed = AffinityCpuCount();
  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(narrowed, 1);
}

// CgroupCpuQuota over fake /proc and /sys trees: the quota Kubernetes' `cpu: 2` or `docker run
// --cpus` writes, in both cgroup versions, nested, and absent.
class CgroupQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/normd_cgroup_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    const std::filesystem::path full = root_ + path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full) << text;
  }

  std::string root_;
};

constexpr char kV2Mountinfo[] =
    "30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
constexpr char kV1Mountinfo[] =
    "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "32 30 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";

TEST_F(CgroupQuotaTest, ReadsCgroupV2CpuMax) {
  Write("/proc/self/mountinfo", kV2Mountinfo);
  Write("/proc/self/cgroup", "0::/kubepods/pod1/normd\n");
  Write("/sys/fs/cgroup/kubepods/pod1/normd/cpu.max", "250000 100000\n");
  const auto quota = CgroupCpuQuota(root_);
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(*quota, 2.5);
}

TEST_F(CgroupQuotaTest, TakesTheTightestQuotaOnTheWayUp) {
  Write("/proc/self/mountinfo", kV2Mountinfo);
  Write("/proc/self/cgroup", "0::/kubepods/pod1/normd\n");
  Write("/sys/fs/cgroup/kubepods/pod1/normd/cpu.max", "max 100000\n");
  Write("/sys/fs/cgroup/kubepods/pod1/cpu.max", "200000 100000\n");
  Write("/sys/fs/cgroup/kubepods/cpu.max", "800000 100000\n");
  const auto quota = CgroupCpuQuota(root_);
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(*quota, 2.0);
}

TEST_F(CgroupQuotaTest, NoQuotaWhenEveryLevelSaysMax) {
  Write("/proc/self/mountinfo", kV2Mountinfo);
  Write("/proc/self/cgroup", "0::/system.slice/normd.service\n");
  Write("/sys/fs/cgroup/system.slice/normd.service/cpu.max", "max 100000\n");
  EXPECT_FALSE(CgroupCpuQuota(root_).has_value());
}

TEST_F(CgroupQuotaTest, ReadsCgroupV1CfsQuota) {
  Write("/proc/self/mountinfo", kV1Mountinfo);
  Write("/proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  const auto quota = CgroupCpuQuota(root_);
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(*quota, 1.5);
}

TEST_F(CgroupQuotaTest, V1MinusOneMeansNoQuota) {
  Write("/proc/self/mountinfo", kV1Mountinfo);
  Write("/proc/self/cgroup", "4:cpu,cpuacct:/\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(CgroupCpuQuota(root_).has_value());
}

// Inside a container the hierarchy is mounted from the container's own cgroup: /proc/self/cgroup
// names the full path, and the mount's root (mountinfo's fourth field) is stripped from it.
TEST_F(CgroupQuotaTest, ContainerMountShowsItsOwnCgroupAsRoot) {
  Write("/proc/self/mountinfo", "40 30 0:35 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  Write("/proc/self/cgroup", "0::/docker/abc\n");
  Write("/sys/fs/cgroup/cpu.max", "100000 100000\n");
  const auto quota = CgroupCpuQuota(root_);
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(*quota, 1.0);
}

// A hybrid system mounts cgroup v2 without the cpu controller beside v1's cpu hierarchy.
TEST_F(CgroupQuotaTest, HybridReadsTheV1CpuController) {
  Write(
      "/proc/self/mountinfo",
      std::string(kV1Mountinfo) + "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  Write("/proc/self/cgroup", "4:cpu,cpuacct:/ci\n0::/\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/ci/cpu.cfs_quota_us", "300000\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/ci/cpu.cfs_period_us", "100000\n");
  const auto quota = CgroupCpuQuota(root_);
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(*quota, 3.0);
}

TEST_F(CgroupQuotaTest, NothingReadableMeansNoQuota) {
  EXPECT_FALSE(CgroupCpuQuota(root_).has_value());
}

TEST(UsableCpuCountTest, NeverAboveTheAffinityMaskNorBelowOne) {
  const int usable = UsableCpuCount();
  EXPECT_GE(usable, 1);
  EXPECT_LE(usable, AffinityCpuCount());
  if (const auto quota = CgroupCpuQuota()) {
    EXPECT_LE(usable, std::max(1, static_cast<int>(*quota)));
  }
}

}  // namespace
}  // namespace normd
