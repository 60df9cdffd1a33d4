#include "server/executors/cpu_executor.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "kernels/cpu_rmsnorm.h"
#include "server/core/large_buffer_pool.h"

namespace normd {
namespace {

// Below this many elements a chunk is not worth a hand-off to another thread (a wake-up costs a few
// microseconds; one core normalizes about 64K bf16 elements in roughly that time).
constexpr int64_t kMinElementsPerChunk = 64 * 1024;

struct RowChunk {
  const RmsNormSegment* segment;
  int64_t row_begin;
  int64_t row_end;
};

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
  auto aligned = [&gathered](const TensorBytes& bytes, DType dtype) -> const void* {
    if (!bytes.present()) return nullptr;
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
    segments.push_back(RmsNormSegment{aligned(r.input, launch.dtype), item->output,
                                      aligned(r.residual, launch.dtype), item->residual_out,
                                      aligned(r.weight, r.weight_dtype), first_row, r.rows, r.eps,
                                      r.weight_offset, r.weight_dtype});
    first_row += r.rows;
  }
  // Split rows into chunks big enough to pay for a thread hand-off, a few per thread for balance.
  const int64_t total_elements = launch.rows * launch.hidden;
  const int64_t max_chunks = int64_t{pool_.threads()} * 4;
  const int64_t chunks_wanted =
      std::clamp<int64_t>(total_elements / kMinElementsPerChunk, 1, max_chunks);
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, (launch.rows + chunks_wanted - 1) / chunks_wanted);
  std::vector<RowChunk> chunks;
  for (const RmsNormSegment& segment : segments) {
    for (int64_t row = 0; row < segment.rows; row += rows_per_chunk) {
      chunks.push_back({&segment, row, std::min(segment.rows, row + rows_per_chunk)});
    }
  }
  pool_.Run(static_cast<int64_t>(chunks.size()), [&](int64_t i) {
    const RowChunk& c = chunks[static_cast<size_t>(i)];
    RmsNormCpuRows(launch.dtype, launch.hidden, *c.segment, c.row_begin, c.row_end);
  });
  stages.cpu = absl::Now() - start;
  return absl::OkStatus();
}

}  // namespace normd
