// The memory budget: one number an operator sets (--max-memory-bytes) for all the memory normd
// holds for requests, and the limits normd derives from it; and the bound on pinned staging memory
// (--max-pinned-bytes), which the CUDA backend holds apart from it.
//
// What normd holds for a request, and what bounds each part under a budget M:
//   - being read: a Normalize call, and a NormalizeStream before each of its messages, reserves
//     room in the admitted share (below) before normd asks gRPC for the message, and waits for it
//     (server/rpc/normalize_call_reactor.h, normalize_stream_reactor.h), so what gRPC holds for a
//     waiting call is its HTTP/2 stream window; a stream also stays charged for the window gRPC
//     granted its next message while the last one arrived. gRPC's own resource quota
//     (--grpc-resource-quota: sized M / 2, it counts what the transport reads, and the bytes normd
//     keeps of admitted requests) is a second bound; but gRPC 1.51 enforces it by sending GOAWAY
//     and cancelling streams with ENHANCE_YOUR_CALM, requests that normd had accepted among them,
//     so it is the operator's choice, off by default.
//   - admitted (queued, computing, or answered and waiting for gRPC to send the response): each
//     request is charged its message as received plus its response, and Normalize reservations and
//     admitted requests together stay within M / 2 (server/scheduling/memory_gate.h);
//   - kept for reuse after it was freed: idle response buffers (--response-pool-bytes) and the
//     allocator's free memory (per arena, --max-queue-bytes), each lowered to M / 4.
// The two halves overlap (an admitted request's message is in both), so the parts normd holds
// stay within M. Requests larger than M / 8 are refused by gRPC (--max-request-bytes is lowered to
// it), so that one request's message and response fit the admitted share with room for others.
#ifndef NORMD_SERVER_CONFIG_MEMORY_BUDGET_H_
#define NORMD_SERVER_CONFIG_MEMORY_BUDGET_H_

#include <cstdint>
#include <string>

namespace normd {

struct ServerConfig;

struct MemoryPlan {
  int64_t admitted_bytes = 0;   // the scheduler's bound on admitted requests' memory (0: none)
  int64_t transport_bytes = 0;  // gRPC's resource quota, if --grpc-resource-quota (0: none)
};

// The shares of --max-memory-bytes (all zero when it is 0, the default: no memory budget); the
// quota's only with `grpc_quota`.
MemoryPlan PlanMemory(int64_t max_memory_bytes, bool grpc_quota);

// Applies a memory budget to the configuration: lowers --max-request-bytes, --max-queue-bytes and
// the automatic --response-pool-bytes to fit it (never raises them), and returns a line for the
// log saying what was applied ("" without a budget).
std::string FitConfigToMemoryBudget(ServerConfig& config);

// The most bytes one pinned staging buffer may grow to ahead of need under --max-pinned-bytes
// (0: unbounded): the budget split over a GPU's workers, 2 slots each, an up and a down buffer per
// slot.
int64_t StagingBufferBytes(const ServerConfig& config);

// Lowers --max-request-bytes and --max-batch-bytes so that a launch's payload fits half a staging
// buffer (the other half left for its inline weights and segment table); a line for the log, or "".
std::string FitConfigToPinnedBudget(ServerConfig& config);

}  // namespace normd

#endif  // NORMD_SERVER_CONFIG_MEMORY_BUDGET_H_
