// LoadServerConfig's handling of --busy-poll-us (automatic by default, explicit values kept,
// nonsense refused), and the automatic rule itself (server/config/server_config.h).
#include "server/config/server_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "absl/flags/reflection.h"
#include "server/executors/copy_pool.h"

namespace normd {
namespace {

absl::StatusOr<ServerConfig> Load(std::vector<std::string> args) {
  args.insert(args.begin(), "normd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return LoadServerConfig(static_cast<int>(argv.size()), argv.data());
}

TEST(ServerConfigTest, BusyPollIsAutomaticByDefault) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->busy_poll_automatic);
  // Left for the backend to decide: the CPU backend keeps it off.
  EXPECT_EQ(config->batch.busy_poll, absl::ZeroDuration());
}

TEST(ServerConfigTest, BusyPollGivenExplicitlyIsKept) {
  absl::FlagSaver restore_flags;
  for (const auto& [flag, expected] :
       {std::pair<std::string, absl::Duration>{"--busy-poll-us=0", absl::ZeroDuration()},
        {"--busy-poll-us=250", absl::Microseconds(250)}}) {
    SCOPED_TRACE(flag);
    absl::StatusOr<ServerConfig> config = Load({flag});
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_FALSE(config->busy_poll_automatic);
    EXPECT_EQ(config->batch.busy_poll, expected);
  }
}

TEST(ServerConfigTest, BusyPollBelowMinusOneIsRefusedWithTheValue) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> config = Load({"--busy-poll-us=-5"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("--busy_poll_us = -5"), std::string::npos)
      << config.status();
}

TEST(ServerConfigTest, CopyThreadsAndSpinAreReadAndCheckedWithTheirValues) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> config = Load({"--copy-threads=3", "--copy-spin-us=250"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->copy_threads, 3);
  EXPECT_EQ(config->copy_spin, absl::Microseconds(250));
  EXPECT_FALSE(config->copy_spin_as_busy_poll);
  config = Load({"--copy-threads=-1"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("--copy_threads = -1"), std::string::npos)
      << config.status();
  config = Load({"--company-min-requests=0"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("company_min_requests"), std::string::npos)
      << config.status();
}

TEST(ServerConfigTest, ParallelCopyThresholdIsReadAndChecked) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->parallel_copy_min_bytes, kParallelCopyMinBytes);
  config = Load({"--parallel-copy-min-bytes=1048576"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->parallel_copy_min_bytes, 1048576);
  config = Load({"--parallel-copy-min-bytes=-1"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("--parallel_copy_min_bytes = -1 must be >= 0"),
            std::string::npos)
      << config.status();
}

TEST(ServerConfigTest, ResponsePoolBudgetIsReadAndChecked) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->response_pool_bytes, int64_t{1} << 30) << "automatic: --max-queue-bytes, 1 GiB";
  config = Load({"--max-queue-bytes=4294967296"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->response_pool_bytes, int64_t{4} << 30)
      << "automatic: --max-queue-bytes, not capped at the allocator's 1 GiB per arena";
  config = Load({"--max-queue-bytes=1000"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->response_pool_bytes, int64_t{32} << 20) << "automatic: at least 32 MiB";
  config = Load({"--response-pool-bytes=0"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->response_pool_bytes, 0);
  config = Load({"--response-pool-bytes=-5"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("--response_pool_bytes = -5 must be >= 0"),
            std::string::npos)
      << config.status();
}

TEST(ServerConfigTest, CompanyMemoryAndMaximumAreReadAndChecked) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->batch.company_max_requests, 20);
  EXPECT_EQ(config->batch.company_memory, 8);
  config = Load({"--company-max-requests=40", "--company-memory=1"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->batch.company_max_requests, 40);
  EXPECT_EQ(config->batch.company_memory, 1);
  config = Load({"--company-memory=0"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("--company_memory = 0 must be in [1, 1024]"),
            std::string::npos)
      << config.status();
  config =
      Load({"--company-memory=8", "--company-max-requests=4"});  // under --company-min-requests' 9
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find(
                "--company_max_requests = 4 is below --company_min_requests = 9"),
            std::string::npos)
      << config.status();
}

TEST(ServerConfigTest, AutomaticCopyThreadsAreHalfTheCpusPerWorkerUpToFour) {
  EXPECT_EQ(AutomaticCopyThreads(/*usable_cpus=*/16, /*cuda_workers=*/2), 4);  // the H200 machine
  EXPECT_EQ(AutomaticCopyThreads(12, 2), 3);
  EXPECT_EQ(AutomaticCopyThreads(2, 1), 1);  // a 2-core machine: the worker's thread alone
  EXPECT_EQ(AutomaticCopyThreads(3, 2), 1);
  EXPECT_EQ(AutomaticCopyThreads(128, 16), 4);  // eight GPUs, two workers each
  EXPECT_EQ(AutomaticCopyThreads(16, 0), 1);
}

TEST(ServerConfigTest, ReplyThreadsAreReadAndCheckedWithTheirValue) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> config = Load({"--reply-threads=3"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->reply_threads, 3);
  config = Load({"--reply-threads=-2"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("--reply_threads = -2"), std::string::npos)
      << config.status();
}

TEST(ServerConfigTest, AutomaticReplyThreadsAreHalfTheCpusPerWorkerUpToFour) {
  EXPECT_EQ(AutomaticReplyThreads(/*usable_cpus=*/16, /*cuda_workers=*/2), 4);  // the H200 machine
  EXPECT_EQ(AutomaticReplyThreads(2, 1), 1);  // a 2-core machine: the worker answers alone
  EXPECT_EQ(AutomaticReplyThreads(128, 16), 4);
  EXPECT_EQ(AutomaticReplyThreads(16, 0), 1);
}

TEST(ServerConfigTest, AutomaticBusyPollNeedsFourCpusPerWorker) {
  EXPECT_EQ(AutomaticBusyPoll(/*usable_cpus=*/16, /*cuda_workers=*/2),
            kBusyPollAutomatic);  // the H200 machine
  EXPECT_EQ(AutomaticBusyPoll(8, 2), kBusyPollAutomatic);
  EXPECT_EQ(AutomaticBusyPoll(7, 2), absl::ZeroDuration());
  EXPECT_EQ(AutomaticBusyPoll(2, 2), absl::ZeroDuration());   // a laptop or CI VM with a GPU
  EXPECT_EQ(AutomaticBusyPoll(128, 16), kBusyPollAutomatic);  // eight GPUs, two workers each
  EXPECT_EQ(AutomaticBusyPoll(16, 0), absl::ZeroDuration());
}

TEST(ServerConfigTest, SharedMemoryIsOffByDefaultAndTakesItsKinds) {
  absl::FlagSaver restore_flags;
  absl::StatusOr<ServerConfig> off = Load({});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->shared_memory_system || off->shared_memory_cuda);
  EXPECT_TRUE(off->listen_unix.empty());
  absl::FlagSaver restore_after_both;
  absl::StatusOr<ServerConfig> both =
      Load({"--shared-memory=system, cuda", "--max-regions-per-client=3",
            "--max-shared-memory-bytes=4096", "--listen-unix=/tmp/n.sock"});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_TRUE(both->shared_memory_system && both->shared_memory_cuda);
  EXPECT_EQ(both->max_regions_per_client, 3);
  EXPECT_EQ(both->max_shared_memory_bytes, 4096);
  EXPECT_EQ(both->listen_unix, "/tmp/n.sock");
  for (const auto& [flag, message] :
       {std::pair<std::string, std::string>{"--shared-memory=system,gpu",
                                            "'gpu' is not a region kind"},
        {"--max-regions-per-client=0", "--max_regions_per_client = 0 must be positive"},
        {"--max-shared-memory-bytes=-1", "--max_shared_memory_bytes = -1 must be positive"}}) {
    SCOPED_TRACE(flag);
    absl::FlagSaver restore_between_cases;  // flags keep what the last Load set
    absl::StatusOr<ServerConfig> bad = Load({flag});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find(message), std::string::npos) << bad.status();
  }
}

// The tuning flags live in their own file (kept out of --help) but are still normd's: their
// environment twins apply, and the command line still wins.
TEST(ServerConfigTest, TuningFlagsReadTheirEnvironmentTwins) {
  absl::FlagSaver restore_flags;
  ASSERT_EQ(setenv("NORMD_COMPANY_MEMORY", "3", /*overwrite=*/1), 0);
  absl::StatusOr<ServerConfig> from_env = Load({});
  absl::StatusOr<ServerConfig> from_line = Load({"--company-memory=5"});
  ASSERT_EQ(unsetenv("NORMD_COMPANY_MEMORY"), 0);
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  ASSERT_TRUE(from_line.ok()) << from_line.status();
  EXPECT_EQ(from_env->batch.company_memory, 3);
  EXPECT_EQ(from_line->batch.company_memory, 5);
}

}  // namespace
}  // namespace normd
