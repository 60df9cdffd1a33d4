// The memory budget's shares and how it fits the other limits (server/config/memory_budget.h).
#include "server/config/memory_budget.h"

#include <gtest/gtest.h>

#include "server/config/server_config.h"

namespace normd {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

ServerConfig Defaults() {
  ServerConfig c;
  c.max_request_bytes = 256 * kMiB;
  c.max_queue_bytes = 1024 * kMiB;
  c.response_pool_bytes = 1024 * kMiB;
  c.response_pool_automatic = true;
  c.batch.max_bytes = 256 * kMiB;
  c.workers_per_gpu = 2;
  return c;
}

TEST(MemoryBudgetTest, NoBudgetChangesNothing) {
  ServerConfig c = Defaults();
  EXPECT_EQ(FitConfigToMemoryBudget(c), "");
  EXPECT_EQ(FitConfigToPinnedBudget(c), "");
  EXPECT_EQ(c.max_request_bytes, 256 * kMiB);
  EXPECT_EQ(PlanMemory(0, true).admitted_bytes, 0);
  EXPECT_EQ(StagingBufferBytes(c), 0);
}

TEST(MemoryBudgetTest, BudgetSplitsIntoAdmittedAndTransportSharesAndLowersTheLimits) {
  ServerConfig c = Defaults();
  c.max_memory_bytes = 512 * kMiB;
  const MemoryPlan plan = PlanMemory(c.max_memory_bytes, /*grpc_quota=*/true);
  EXPECT_EQ(plan.admitted_bytes, 256 * kMiB);
  EXPECT_EQ(plan.transport_bytes, 256 * kMiB);
  EXPECT_EQ(PlanMemory(c.max_memory_bytes, /*grpc_quota=*/false).transport_bytes, 0);
  EXPECT_NE(FitConfigToMemoryBudget(c).find("--max-memory-bytes=536870912"), std::string::npos);
  EXPECT_EQ(c.max_request_bytes, 64 * kMiB);  // a 32 MiB request (4096 x 4096 bf16) still fits
  EXPECT_EQ(c.max_queue_bytes, 128 * kMiB);
  EXPECT_EQ(c.response_pool_bytes, 128 * kMiB);
}

TEST(MemoryBudgetTest, BudgetNeverRaisesALimitAndKeepsAnExplicitPool) {
  ServerConfig c = Defaults();
  c.max_memory_bytes = 64 * 1024 * kMiB;
  c.response_pool_automatic = false;
  c.response_pool_bytes = 0;
  FitConfigToMemoryBudget(c);
  EXPECT_EQ(c.max_request_bytes, 256 * kMiB);
  EXPECT_EQ(c.max_queue_bytes, 1024 * kMiB);
  EXPECT_EQ(c.response_pool_bytes, 0);
}

TEST(MemoryBudgetTest, PinnedBudgetBoundsEachStagingBufferAndWhatALaunchCarries) {
  ServerConfig c = Defaults();
  c.max_pinned_bytes = 1024 * kMiB;  // two workers, two slots each, an up and a down buffer
  EXPECT_EQ(StagingBufferBytes(c), 128 * kMiB);
  EXPECT_NE(FitConfigToPinnedBudget(c), "");
  EXPECT_EQ(c.max_request_bytes, 64 * kMiB);
  EXPECT_EQ(c.batch.max_bytes, 64 * kMiB);
}

}  // namespace
}  // namespace normd
