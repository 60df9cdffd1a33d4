// The shared-memory transport for requests whose tensors live in the caller's own memory
// (TensorView): the input (and residual) are copied into a region this transport owns, normd
// reads them there and writes the outputs there, and they are copied back into the result. The
// wire carries a few hundred bytes instead of the tensors: one memcpy each way on the client
// replaces protobuf's serialization, the socket and the server's copies. Callers that can keep
// their tensors in a region (client/region.h) skip those two copies too.
//
//   auto transport = normd::SharedMemoryTransport::Create(*client, 64 << 20).value();
//   auto y = transport->Normalize(normd::TensorView::BFloat16(x, {rows, hidden}), weight);
//
// Needs a normd on this host started with --shared-memory=system (Client::RegisterSystemRegion
// says what else). Thread-safe; one request at a time goes through the region (callers wait for
// each other), so use one transport per concurrent caller.
#ifndef NORMD_CLIENT_SHM_TRANSPORT_H_
#define NORMD_CLIENT_SHM_TRANSPORT_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "client/normd_client.h"

namespace normd {

class SharedMemoryTransport {
 public:
  // A region of `capacity_bytes` registered on `client`'s connection; requests whose tensors (in
  // and out, in their wire dtype) need more are refused with RESOURCE_EXHAUSTED. `client` must
  // outlive the transport.
  static absl::StatusOr<std::unique_ptr<SharedMemoryTransport>> Create(Client& client,
                                                                       int64_t capacity_bytes);

  // As Client::Normalize, through the region. options.residual_region, output_region and
  // residual_out_region must be unset (this transport places the tensors itself).
  absl::StatusOr<NormalizeResult> Normalize(const TensorView& input, const WeightSource& weight,
                                            const NormalizeOptions& options = {});

  const RegisteredRegion& region() const { return region_; }

 private:
  SharedMemoryTransport(Client& client, std::unique_ptr<SharedMemory> memory,
                        RegisteredRegion region)
      : client_(client), memory_(std::move(memory)), region_(std::move(region)) {}

  Client& client_;
  std::unique_ptr<SharedMemory> memory_;
  RegisteredRegion region_;
  normd::Mutex mu_;  // one request in the region at a time
};

}  // namespace normd

#endif  // NORMD_CLIENT_SHM_TRANSPORT_H_
