#include "server/rpc/region_rpcs.h"

#include "absl/strings/str_cat.h"

namespace normd {
namespace {

// How long a label may be: it is the client's note for ListRegions, not a payload.
constexpr size_t kMaxLabelBytes = 256;

absl::Status Off() {
  return absl::FailedPreconditionError(
      "shared memory is off on this server (start normd with --shared-memory=system, cuda, or "
      "system,cuda)");
}

absl::Status CheckLabel(const std::string& label) {
  if (label.size() <= kMaxLabelBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("label: ", label.size(), " bytes; at most ", kMaxLabelBytes));
}

void Fill(const RegionRegistry::Registered& registered, normd::v1::RegisterRegionResponse* out) {
  out->set_region_id(registered.id);
  out->set_byte_size(registered.byte_size);
}

}  // namespace

absl::Status RegisterSystemRegion(RegionRegistry* regions, const std::string& peer,
                                  const normd::v1::RegisterSystemRegionRequest& request,
                                  normd::v1::RegisterRegionResponse* response) {
  if (regions == nullptr) return Off();
  if (absl::Status s = CheckLabel(request.label()); !s.ok()) return s;
  absl::StatusOr<RegionRegistry::Registered> registered = regions->RegisterSystem(
      peer, request.shm_name(), request.offset(), request.byte_size(), request.label());
  if (!registered.ok()) return registered.status();
  Fill(*registered, response);
  return absl::OkStatus();
}

absl::Status RegisterCudaRegion(RegionRegistry* regions, const std::string& peer,
                                const normd::v1::RegisterCudaRegionRequest& request,
                                normd::v1::RegisterRegionResponse* response) {
  if (regions == nullptr) return Off();
  if (absl::Status s = CheckLabel(request.label()); !s.ok()) return s;
  absl::StatusOr<RegionRegistry::Registered> registered =
      regions->RegisterCuda(peer, request.ipc_handle(), request.device_uuid(), request.offset(),
                            request.byte_size(), request.label());
  if (!registered.ok()) return registered.status();
  Fill(*registered, response);
  return absl::OkStatus();
}

absl::Status UnregisterRegion(RegionRegistry* regions, const std::string& peer,
                              const normd::v1::UnregisterRegionRequest& request) {
  if (regions == nullptr) return Off();
  return regions->Unregister(peer, request.region_id());
}

absl::Status ListRegions(const RegionRegistry* regions, const std::string& peer,
                         normd::v1::ListRegionsResponse* response) {
  if (regions == nullptr) return Off();
  for (const auto& region : regions->List(peer)) {
    normd::v1::RegionInfo* info = response->add_regions();
    info->set_region_id(region->id);
    info->set_kind(region->kind == Region::Kind::kSystem ? normd::v1::REGION_KIND_SYSTEM
                                                         : normd::v1::REGION_KIND_CUDA);
    info->set_label(region->label);
    info->set_byte_size(region->byte_size);
  }
  return absl::OkStatus();
}

}  // namespace normd
