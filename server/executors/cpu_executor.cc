#include "server/executors/cpu_executor.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "kernels/cpu_rmsnorm.h"
#include "server/core/large_buffer_pool.h"
#include "server/executors/sigbus_guard.h"

namespace normd {
namespace {

// Below this many elements a chunk is not worth a hand-off to another thread (a wake-up costs a few
// microseconds; one core normalizes about 64K bf16 elements in roughly that time).
constexpr int64_t kMinElementsPerChunk = 64 * 1024;

struct RowChunk {
  size_t segment;
  int64_t row_begin;
  int64_t row_end;
};

// What a request learns when its region shrank under the launch.
absl::Status RegionTruncated() {
  return absl::FailedPreconditionError(
      "shared memory: a region this request reads or writes was truncated by its owner while "
      "normd computed (SIGBUS on its pages); its output is incomplete. Keep a registered region's "
      "object at its size until it is unregistered");
}

}  // namespace

CpuExecutor::CpuExecutor(int threads)
    // A chunk of rows takes far longer than a wake-up: the pool's threads sleep between launches,
    // and the worker sleeps while they finish.
    : pool_(TaskPoolOptions{threads, absl::ZeroDuration(), /*spin_until_done=*/false,
                            "normd-cpu-pool"}) {}

absl::Status CpuExecutor::Start(const Launch& launch, StageTimes& stages) {
  const absl::Time start = absl::Now();
  std::vector<RmsNormSegment> segments;
  segments.reserve(launch.items.size());
  // Tensors that arrived in several pieces (TensorBytes) are gathered, since the kernel reads rows
  // whole, and so are those in one piece at an address that is not a multiple of the element size
  // (a slice of the received message can start anywhere), which the kernel's element reads need.
  std::vector<std::unique_ptr<ScratchBytes>> gathered;
  auto aligned = [&gathered](const TensorBytes& bytes, DType dtype,
                             TensorMemory memory) -> const void* {
    if (!bytes.present()) return nullptr;
    // In a region: one piece, aligned (the references were checked), and never gathered: a copy
    // here would touch it outside the guard below.
    if (memory != TensorMemory::kNormd) return bytes.contiguous();
    if (const void* one_piece = bytes.contiguous();
        one_piece != nullptr && reinterpret_cast<uintptr_t>(one_piece) % ItemSize(dtype) == 0) {
      return one_piece;
    }
    gathered.push_back(std::make_unique<ScratchBytes>(static_cast<size_t>(bytes.size())));
    bytes.CopyTo(gathered.back()->data());
    return gathered.back()->data();
  };
  int64_t first_row = 0;
  for (const auto& item : launch.items) {
    const ValidatedRequest& r = item->request;
    segments.push_back(RmsNormSegment{aligned(r.input, launch.dtype, r.input_memory), item->output,
                                      aligned(r.residual, launch.dtype, r.residual_memory),
                                      item->residual_out,
                                      aligned(r.weight, r.weight_dtype, TensorMemory::kNormd),
                                      first_row, r.rows, r.eps, r.weight_offset, r.weight_dtype});
    first_row += r.rows;
  }
  // Requests with a tensor in a client's system region run guarded (sigbus_guard.h); a fault fails
  // that request alone.
  const size_t n = launch.items.size();
  std::vector<char> guarded(n, 0);
  auto faulted = std::make_unique<std::atomic<bool>[]>(n);
  for (size_t i = 0; i < n; ++i) {
    guarded[i] = launch.items[i]->request.uses(TensorMemory::kSharedHost) ? 1 : 0;
    faulted[i].store(false, std::memory_order_relaxed);
  }
  // Split rows into chunks big enough to pay for a thread hand-off, a few per thread for balance.
  const int64_t total_elements = launch.rows * launch.hidden;
  const int64_t max_chunks = int64_t{pool_.threads()} * 4;
  const int64_t chunks_wanted =
      std::clamp<int64_t>(total_elements / kMinElementsPerChunk, 1, max_chunks);
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, (launch.rows + chunks_wanted - 1) / chunks_wanted);
  std::vector<RowChunk> chunks;
  for (size_t s = 0; s < segments.size(); ++s) {
    for (int64_t row = 0; row < segments[s].rows; row += rows_per_chunk) {
      chunks.push_back({s, row, std::min(segments[s].rows, row + rows_per_chunk)});
    }
  }
  pool_.Run(static_cast<int64_t>(chunks.size()), [&](int64_t i) {
    const RowChunk& c = chunks[static_cast<size_t>(i)];
    auto rows = [&] {
      RmsNormCpuRows(launch.dtype, launch.hidden, segments[c.segment], c.row_begin, c.row_end);
    };
    if (guarded[c.segment] == 0) {
      rows();
    } else if (!faulted[c.segment].load(std::memory_order_relaxed) &&
               !RunGuardedAgainstSigbus(rows)) {
      faulted[c.segment].store(true, std::memory_order_relaxed);
    }
  });
  for (size_t i = 0; i < n; ++i) {
    if (faulted[i].load(std::memory_order_relaxed)) launch.items[i]->failure = RegionTruncated();
  }
  stages.cpu = absl::Now() - start;
  return absl::OkStatus();
}

}  // namespace normd
