#include "server/config/memory_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/config/server_config.h"

namespace normd {

MemoryPlan PlanMemory(int64_t max_memory_bytes, bool grpc_quota) {
  MemoryPlan plan;
  if (max_memory_bytes <= 0) return plan;
  plan.admitted_bytes = max_memory_bytes / 2;
  if (grpc_quota) plan.transport_bytes = max_memory_bytes / 2;
  return plan;
}

std::string FitConfigToMemoryBudget(ServerConfig& config) {
  if (config.max_memory_bytes <= 0) return "";
  const MemoryPlan plan = PlanMemory(config.max_memory_bytes, config.grpc_resource_quota);
  // A request's message and its response (about as large) must fit the admitted share with room
  // for others: an eighth of the budget is a quarter of that share each way.
  config.max_request_bytes = std::min(config.max_request_bytes, config.max_memory_bytes / 8);
  // --max-queue-bytes counts payload only (input and residual), a part of what the admitted share
  // counts; it also sets how much freed memory the allocator keeps per arena.
  config.max_queue_bytes = std::min(config.max_queue_bytes, plan.admitted_bytes / 2);
  if (config.response_pool_automatic) {
    config.response_pool_bytes = std::min(config.response_pool_bytes, plan.admitted_bytes / 2);
  }
  return absl::StrCat(
      "memory budget (--max-memory-bytes=", config.max_memory_bytes, "): requests admitted up to ",
      plan.admitted_bytes, " bytes (message and response), gRPC's resource quota ",
      plan.transport_bytes > 0 ? absl::StrCat(plan.transport_bytes, " bytes") : std::string("off"),
      ", --max-request-bytes ", config.max_request_bytes, ", --max-queue-bytes ",
      config.max_queue_bytes, ", --response-pool-bytes ", config.response_pool_bytes);
}

int64_t StagingBufferBytes(const ServerConfig& config) {
  if (config.max_pinned_bytes <= 0) return 0;
  return config.max_pinned_bytes / (int64_t{4} * std::max(config.workers_per_gpu, 1));
}

std::string FitConfigToPinnedBudget(ServerConfig& config) {
  const int64_t buffer = StagingBufferBytes(config);
  if (buffer <= 0) return "";
  config.max_request_bytes = std::min(config.max_request_bytes, buffer / 2);
  config.batch.max_bytes = std::min(config.batch.max_bytes, buffer / 2);
  return absl::StrCat("pinned staging budget (--max-pinned-bytes=", config.max_pinned_bytes,
                      "): staging buffers up to ", buffer, " bytes each, --max-request-bytes ",
                      config.max_request_bytes, ", --max-batch-bytes ", config.batch.max_bytes);
}

}  // namespace normd
