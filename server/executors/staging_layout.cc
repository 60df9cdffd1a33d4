#include "server/executors/staging_layout.h"

#include <vector>

#include "base/streaming_copy.h"

namespace normd {
namespace {

// The copies that put a tensor's bytes at `to`, a destination the device reads next: one job per
// piece, with streaming stores when the tensor is large enough to gain from them
// (base/streaming_copy.h), whatever the sizes of its pieces.
void AddCopyJobsBypassingCaches(const TensorBytes& bytes, void* to, std::vector<CopyJob>& jobs) {
  const bool streaming = static_cast<size_t>(bytes.size()) >= kStreamingCopyMinBytes;
  char* out = static_cast<char*>(to);
  for (const auto& [data, size] : bytes.pieces()) {
    jobs.push_back(CopyJob{out, data, size, streaming});
    out += size;
  }
}

int64_t AlignUp(int64_t v) { return (v + kStagingAlign - 1) / kStagingAlign * kStagingAlign; }

char* At(void* base, int64_t offset) { return static_cast<char*>(base) + offset; }
const char* At(const void* base, int64_t offset) { return static_cast<const char*>(base) + offset; }

// Gives a tensor `bytes` at the end of a buffer (`end`) if it lives in `kind` of memory; otherwise
// leaves its offset `at` as it is.
void PlaceIf(TensorMemory memory, TensorMemory kind, int64_t bytes, int64_t& at, int64_t& end) {
  if (memory != kind) return;
  at = end;
  end += bytes;
}

}  // namespace

StagingLayout LayOutLaunch(const Launch& launch) {
  const size_t n = launch.items.size();
  const auto itemsize = static_cast<int64_t>(ItemSize(launch.dtype));
  StagingLayout layout;
  layout.weight_at.assign(n, -1);
  layout.input_at.assign(n, 0);
  layout.residual_at.assign(n, -1);
  layout.output_at.assign(n, 0);
  layout.residual_out_at.assign(n, -1);
  int64_t up = AlignUp(static_cast<int64_t>(n * sizeof(RmsNormSegment)));
  for (size_t i = 0; i < n; ++i) {
    const ValidatedRequest& r = launch.items[i]->request;
    if (r.registered_weight == nullptr) {
      layout.weight_at[i] = up;
      up += AlignUp(r.hidden * static_cast<int64_t>(ItemSize(r.weight_dtype)));
    }
  }
  layout.rows_at = up;
  int64_t down = 0;
  // Only normd's own tensors are staged; a region's stay at -1 (see the header).
  auto stage = [](TensorMemory memory, int64_t bytes, int64_t& at, int64_t& end) {
    PlaceIf(memory, TensorMemory::kNormd, bytes, at, end);
  };
  for (size_t i = 0; i < n; ++i) {
    const ValidatedRequest& r = launch.items[i]->request;
    const int64_t bytes = AlignUp(r.elements() * itemsize);
    layout.input_at[i] = -1;
    layout.output_at[i] = -1;
    stage(r.input_memory, bytes, layout.input_at[i], up);
    stage(r.output_memory, bytes, layout.output_at[i], down);
  }
  for (size_t i = 0; i < n; ++i) {
    const ValidatedRequest& r = launch.items[i]->request;
    if (!r.has_residual()) continue;
    const int64_t bytes = AlignUp(r.elements() * itemsize);
    stage(r.residual_memory, bytes, layout.residual_at[i], up);
    stage(r.residual_out_memory, bytes, layout.residual_out_at[i], down);
  }
  layout.up_bytes = up;
  layout.down_bytes = down;
  return layout;
}

RegionStagingLayout LayOutRegionStaging(const Launch& launch) {
  const size_t n = launch.items.size();
  const auto itemsize = static_cast<int64_t>(ItemSize(launch.dtype));
  RegionStagingLayout layout;
  layout.input_at.assign(n, -1);
  layout.residual_at.assign(n, -1);
  layout.output_at.assign(n, -1);
  layout.residual_out_at.assign(n, -1);
  auto place = [](TensorMemory memory, int64_t bytes, int64_t& at, int64_t& end) {
    PlaceIf(memory, TensorMemory::kSharedHost, bytes, at, end);
  };
  for (size_t i = 0; i < n; ++i) {
    const ValidatedRequest& r = launch.items[i]->request;
    const int64_t bytes = AlignUp(r.elements() * itemsize);
    place(r.input_memory, bytes, layout.input_at[i], layout.up_bytes);
    place(r.output_memory, bytes, layout.output_at[i], layout.down_bytes);
    if (r.has_residual()) {
      place(r.residual_memory, bytes, layout.residual_at[i], layout.up_bytes);
      place(r.residual_out_memory, bytes, layout.residual_out_at[i], layout.down_bytes);
    }
  }
  return layout;
}

absl::Status PackLaunch(const Launch& launch, const StagingLayout& layout, void* up_host,
                        const void* up_device, void* down_device,
                        const DeviceWeightLookup& device_weight, CopyPool* copies) {
  auto* table = static_cast<RmsNormSegment*>(up_host);
  std::vector<CopyJob> rows;
  int64_t first_row = 0;
  for (size_t i = 0; i < launch.items.size(); ++i) {
    const ValidatedRequest& r = launch.items[i]->request;
    RmsNormSegment seg{};
    // Straight from where the request's bytes arrived (TensorBytes), which the device reads next
    // and the CPU never: see base/streaming_copy.h. A tensor in a client's region is neither
    // copied nor touched: the table points at it.
    const WorkItem& item = *launch.items[i];
    if (layout.input_at[i] >= 0) {
      AddCopyJobsBypassingCaches(r.input, At(up_host, layout.input_at[i]), rows);
      seg.input = At(up_device, layout.input_at[i]);
    } else {
      seg.input = r.input.contiguous();
    }
    seg.output = layout.output_at[i] >= 0 ? At(down_device, layout.output_at[i]) : item.output;
    if (r.has_residual()) {
      if (layout.residual_at[i] >= 0) {
        AddCopyJobsBypassingCaches(r.residual, At(up_host, layout.residual_at[i]), rows);
        seg.residual = At(up_device, layout.residual_at[i]);
      } else {
        seg.residual = r.residual.contiguous();
      }
      seg.residual_out = layout.residual_out_at[i] >= 0 ? At(down_device, layout.residual_out_at[i])
                                                        : item.residual_out;
    }
    if (r.registered_weight != nullptr) {
      absl::StatusOr<const void*> weight = device_weight(*r.registered_weight);
      if (!weight.ok()) return weight.status();
      seg.weight = *weight;
    } else {
      r.weight.CopyTo(At(up_host, layout.weight_at[i]));  // small: on this thread, cached stores
      seg.weight = At(up_device, layout.weight_at[i]);
    }
    seg.weight_dtype = r.weight_dtype;
    seg.first_row = first_row;
    seg.rows = r.rows;
    seg.eps = r.eps;
    seg.weight_offset = r.weight_offset;
    first_row += r.rows;
    table[i] = seg;
  }
  RunCopies(copies, rows);
  return absl::OkStatus();
}

void UnpackLaunch(const Launch& launch, const StagingLayout& layout, const void* down_host,
                  CopyPool* copies) {
  const auto itemsize = static_cast<int64_t>(ItemSize(launch.dtype));
  // Into the responses' own buffers, which gRPC reads next: ordinary stores.
  std::vector<CopyJob> outputs;
  for (size_t i = 0; i < launch.items.size(); ++i) {
    const WorkItem& item = *launch.items[i];
    const int64_t bytes = item.request.elements() * itemsize;
    if (layout.output_at[i] >= 0) {  // else written in its region already
      outputs.push_back(CopyJob{item.output, At(down_host, layout.output_at[i]), bytes, false});
    }
    if (layout.residual_out_at[i] >= 0) {
      outputs.push_back(
          CopyJob{item.residual_out, At(down_host, layout.residual_out_at[i]), bytes, false});
    }
  }
  RunCopies(copies, outputs);
}

}  // namespace normd
