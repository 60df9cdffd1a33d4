// The bodies of the unary region RPCs (RegisterSystemRegion, RegisterCudaRegion,
// UnregisterRegion, ListRegions) for one call's peer; NormalizerService answers with their status.
// `regions` is null when shared memory is off: each then fails with FAILED_PRECONDITION.
#ifndef NORMD_SERVER_RPC_REGION_RPCS_H_
#define NORMD_SERVER_RPC_REGION_RPCS_H_

#include <string>

#include "absl/status/status.h"
#include "normd/v1/normd.pb.h"
#include "server/regions/region_registry.h"

namespace normd {

absl::Status RegisterSystemRegion(RegionRegistry* regions, const std::string& peer,
                                  const normd::v1::RegisterSystemRegionRequest& request,
                                  normd::v1::RegisterRegionResponse* response);
absl::Status RegisterCudaRegion(RegionRegistry* regions, const std::string& peer,
                                const normd::v1::RegisterCudaRegionRequest& request,
                                normd::v1::RegisterRegionResponse* response);
absl::Status UnregisterRegion(RegionRegistry* regions, const std::string& peer,
                              const normd::v1::UnregisterRegionRequest& request);
absl::Status ListRegions(const RegionRegistry* regions, const std::string& peer,
                         normd::v1::ListRegionsResponse* response);

}  // namespace normd

#endif  // NORMD_SERVER_RPC_REGION_RPCS_H_
