#include "server/rpc/region_references.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace normd {
namespace {

using normd::v1::RegionReference;

// One reference of the request, resolved.
struct Resolved {
  const char* field = "";  // "input.region", "output_region", ...
  const RegionReference* reference = nullptr;
  std::shared_ptr<const Region> region;
  int64_t begin = 0;  // in the coordinates of region->alias_key
  int64_t length = 0;
};

// The element size of a raw dtype, or 0 for one ValidateTensor will refuse.
int64_t ItemSizeOf(normd::v1::DType dtype) {
  switch (dtype) {
    case normd::v1::DTYPE_FLOAT32:
      return 4;
    case normd::v1::DTYPE_FLOAT16:
    case normd::v1::DTYPE_BFLOAT16:
      return 2;
    default:
      return 0;
  }
}

absl::Status ResolveOne(const char* field, const RegionReference& reference, int64_t itemsize,
                        const std::string& peer, const RegionRegistry& regions, Resolved& out) {
  out.field = field;
  out.reference = &reference;
  absl::StatusOr<std::shared_ptr<const Region>> region =
      regions.Find(peer, reference.region_id(), field);
  if (!region.ok()) return region.status();
  const Region& r = **region;
  const int64_t offset = reference.offset(), length = reference.byte_length();
  if (offset < 0 || length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": offset ", offset, " and byte_length ", length, " must be >= 0"));
  }
  // Overflow-safe: offset + length is never formed.
  if (offset > r.byte_size || length > r.byte_size - offset) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": offset ", offset, " + byte_length ",
                                                   length, " is past the end of region '", r.id,
                                                   "' (", r.byte_size, " bytes)"));
  }
  const auto address = reinterpret_cast<uintptr_t>(r.base + offset);
  if (itemsize > 0 && address % static_cast<uintptr_t>(itemsize) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".offset: ", offset, " puts the tensor at an address that is not a multiple of ",
        itemsize, " bytes, its element size (the region starts at byte ", r.alias_offset,
        " of its object)"));
  }
  out.region = *std::move(region);
  out.begin = r.alias_offset + offset;
  out.length = length;
  return absl::OkStatus();
}

bool Overlap(const Resolved& a, const Resolved& b) {
  if (a.region == nullptr || b.region == nullptr || a.length == 0 || b.length == 0) return false;
  if (a.region->alias_key != b.region->alias_key) return false;
  return a.begin < b.begin + b.length && b.begin < a.begin + a.length;
}

bool Identical(const Resolved& a, const Resolved& b) {
  return a.region->alias_key == b.region->alias_key && a.begin == b.begin && a.length == b.length;
}

absl::Status CheckOverlaps(const Resolved& input, const Resolved& residual, const Resolved& output,
                           const Resolved& residual_out) {
  const Resolved* all[] = {&input, &residual, &output, &residual_out};
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = i + 1; j < 4; ++j) {
      const Resolved& a = *all[i];
      const Resolved& b = *all[j];
      if (!Overlap(a, b)) continue;
      const bool in_place = (i == 0 && j == 2) || (i == 1 && j == 3);
      if (in_place && Identical(a, b)) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          b.field, ": bytes [", b.reference->offset(), ", ", b.reference->offset() + b.length,
          ") of region '", b.region->id, "' overlap ", a.field, "'s bytes [", a.reference->offset(),
          ", ", a.reference->offset() + a.length, ") of region '", a.region->id,
          "'; only output = input and residual_out = residual, exactly (in place), may share "
          "bytes"));
    }
  }
  return absl::OkStatus();
}

TensorBytes BytesIn(const Resolved& r) {
  return TensorBytes::Contiguous(r.region->base + r.reference->offset(), r.length);
}

}  // namespace

bool UsesRegions(const normd::v1::NormalizeRequest& request) {
  return request.input().has_region() || request.residual().has_region() ||
         request.has_output_region() || request.has_residual_out_region();
}

absl::StatusOr<ResolvedRegions> ResolveRegionReferences(const normd::v1::NormalizeRequest& request,
                                                        TensorBytes input_data,
                                                        TensorBytes residual_data,
                                                        const std::string& peer,
                                                        const RegionRegistry* regions) {
  ResolvedRegions out;
  out.input = std::move(input_data);
  out.residual = std::move(residual_data);
  if (!UsesRegions(request)) return out;
  if (regions == nullptr || !regions->enabled()) {
    return absl::FailedPreconditionError(
        "region references: shared memory is off on this server (start normd with "
        "--shared-memory=system, cuda, or system,cuda)");
  }
  const int64_t itemsize = ItemSizeOf(request.input().dtype());
  Resolved input, residual, output, residual_out;
  if (request.input().has_region()) {
    if (out.input.size() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input: has both data (", out.input.size(), " bytes) and region; send one"));
    }
    if (absl::Status s =
            ResolveOne("input.region", request.input().region(), itemsize, peer, *regions, input);
        !s.ok()) {
      return s;
    }
    out.input = BytesIn(input);
    out.input_memory = input.region->memory();
  }
  if (request.has_residual() && request.residual().has_region()) {
    if (out.residual.size() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "residual: has both data (", out.residual.size(), " bytes) and region; send one"));
    }
    if (absl::Status s =
            ResolveOne("residual.region", request.residual().region(),
                       ItemSizeOf(request.residual().dtype()), peer, *regions, residual);
        !s.ok()) {
      return s;
    }
    out.residual = BytesIn(residual);
    out.residual_memory = residual.region->memory();
  }
  if (request.has_output_region()) {
    if (absl::Status s =
            ResolveOne("output_region", request.output_region(), itemsize, peer, *regions, output);
        !s.ok()) {
      return s;
    }
    out.output = output.region->base + request.output_region().offset();
    out.output_bytes = output.length;
    out.output_memory = output.region->memory();
  }
  if (request.has_residual_out_region()) {
    if (!request.has_residual()) {
      return absl::InvalidArgumentError(
          "residual_out_region: set, but the request has no residual (residual_out exists only "
          "with one)");
    }
    if (absl::Status s = ResolveOne("residual_out_region", request.residual_out_region(), itemsize,
                                    peer, *regions, residual_out);
        !s.ok()) {
      return s;
    }
    out.residual_out = residual_out.region->base + request.residual_out_region().offset();
    out.residual_out_bytes = residual_out.length;
    out.residual_out_memory = residual_out.region->memory();
  }
  if (absl::Status s = CheckOverlaps(input, residual, output, residual_out); !s.ok()) return s;

  // GPU memory: all of the request's tensors in regions of one GPU.
  const Resolved* tensors[] = {&input, &residual, &output, &residual_out};
  const char* names[] = {"input", "residual", "output", "residual_out"};
  const bool present[] = {true, request.has_residual(), true, request.has_residual()};
  bool any_device = false;
  for (const Resolved* t : tensors) {
    any_device |= t->region != nullptr && t->region->kind == Region::Kind::kCuda;
  }
  if (any_device) {
    for (size_t i = 0; i < 4; ++i) {
      if (!present[i]) continue;
      const Resolved& t = *tensors[i];
      if (t.region == nullptr || t.region->kind != Region::Kind::kCuda) {
        return absl::InvalidArgumentError(absl::StrCat(
            names[i],
            ": not in a cuda region, while another tensor of the request is; a request in GPU "
            "memory keeps its input, output (and residual, residual_out) all in cuda regions"));
      }
      if (out.device >= 0 && t.region->device != out.device) {
        return absl::InvalidArgumentError(absl::StrCat(
            names[i], ": its cuda region is on GPU ", t.region->device,
            ", another tensor's on GPU ", out.device, "; a request's tensors share one GPU"));
      }
      out.device = t.region->device;
    }
  }
  for (const Resolved* t : tensors) {
    if (t->region != nullptr) out.holds.push_back(t->region);
  }
  return out;
}

absl::Status ApplyRegions(ResolvedRegions resolved, ValidatedRequest& validated) {
  const int64_t bytes = validated.input.size();
  if (resolved.output_memory != TensorMemory::kNormd && resolved.output_bytes != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("output_region.byte_length: ", resolved.output_bytes,
                     ", but the output (shaped like the input) is ", bytes, " bytes"));
  }
  if (resolved.residual_out_memory != TensorMemory::kNormd &&
      resolved.residual_out_bytes != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("residual_out_region.byte_length: ", resolved.residual_out_bytes,
                     ", but residual_out (shaped like the input) is ", bytes, " bytes"));
  }
  validated.input_memory = resolved.input_memory;
  validated.residual_memory = resolved.residual_memory;
  validated.output_memory = resolved.output_memory;
  validated.residual_out_memory = resolved.residual_out_memory;
  validated.output_in_region = resolved.output;
  validated.residual_out_in_region = resolved.residual_out;
  validated.device = resolved.device;
  validated.region_holds = std::move(resolved.holds);
  return absl::OkStatus();
}

}  // namespace normd
