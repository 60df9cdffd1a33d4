// A request's references into shared-memory regions (Tensor.region on the input and the residual,
// output_region, residual_out_region), resolved for the connection that sent it.
//
// Each reference must name a region of that connection (the registry says NOT_FOUND or
// PERMISSION_DENIED otherwise) and lie inside it: offset >= 0, byte_length >= 0, and offset +
// byte_length <= the region's size, checked without ever forming the sum. The tensor's address
// must be a multiple of its element size. Tensors may not share bytes, except output = input
// exactly (in place) and residual_out = residual exactly: overlap is judged in the coordinates of
// the object or allocation behind the regions, so two registrations of one object do not hide
// it. A request with any tensor in GPU memory keeps all of them there, in regions of one GPU (the
// kernel then runs on them in place, with no host copy). Errors are INVALID_ARGUMENT naming the
// field and the numbers.
#ifndef NORMD_SERVER_RPC_REGION_REFERENCES_H_
#define NORMD_SERVER_RPC_REGION_REFERENCES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "normd/v1/normd.pb.h"
#include "server/core/work.h"
#include "server/regions/region_registry.h"

namespace normd {

// Whether the request names any region (and so needs the peer and the registry).
bool UsesRegions(const normd::v1::NormalizeRequest& request);

struct ResolvedRegions {
  // The input's and the residual's bytes where the request sent them: `input_data`,
  // `residual_data` when inline, else in their region.
  TensorBytes input;
  TensorBytes residual;
  TensorMemory input_memory = TensorMemory::kNormd;
  TensorMemory residual_memory = TensorMemory::kNormd;
  // Where the outputs go when in a region, and their lengths.
  void* output = nullptr;
  void* residual_out = nullptr;
  int64_t output_bytes = 0;
  int64_t residual_out_bytes = 0;
  TensorMemory output_memory = TensorMemory::kNormd;
  TensorMemory residual_out_memory = TensorMemory::kNormd;
  int device = -1;
  std::vector<std::shared_ptr<const void>> holds;
};

// Resolves the request's references for `peer`; `regions` is null when shared memory is off
// (every reference is then refused with FAILED_PRECONDITION). `input_data` and `residual_data` are
// the tensors' inline bytes (RequestWire's).
absl::StatusOr<ResolvedRegions> ResolveRegionReferences(const normd::v1::NormalizeRequest& request,
                                                        TensorBytes input_data,
                                                        TensorBytes residual_data,
                                                        const std::string& peer,
                                                        const RegionRegistry* regions);

// Points a validated request's outputs into their regions, checking that each holds exactly the
// output's bytes (the input's size), and hands it the regions to hold.
absl::Status ApplyRegions(ResolvedRegions resolved, ValidatedRequest& validated);

}  // namespace normd

#endif  // NORMD_SERVER_RPC_REGION_REFERENCES_H_
