// Shared-memory regions on the client side: a tensor's place in a region (RegionTensor), and a
// region registered with normd (RegisteredRegion, which unregisters itself when destroyed).
//
// A region is registered on the Client's connection (Client::RegisterSystemRegion,
// RegisterCudaRegion; docs/SHARED_MEMORY.md) and usable only on it. Requests name tensors in it
// with RegionTensor: Client::Normalize(RegionTensor input, ...) and NormalizeOptions'
// residual_region, output_region and residual_out_region.
#ifndef NORMD_CLIENT_REGION_H_
#define NORMD_CLIENT_REGION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/dtype.h"
#include "normd/v1/normd.pb.h"

namespace normd {

class Client;

// `shape` elements of `dtype` at byte `offset` of the region `region_id`.
struct RegionTensor {
  std::string region_id;
  int64_t offset = 0;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;

  // product(shape) x the element size.
  int64_t byte_length() const;
  // The reference a request carries (normd.v1.RegionReference).
  normd::v1::RegionReference Reference() const;
};

// A region registered on a Client's connection. Movable; unregisters on destruction (errors are
// ignored then: the session may have ended already). The Client must outlive it.
class RegisteredRegion {
 public:
  RegisteredRegion() = default;
  RegisteredRegion(RegisteredRegion&& other) noexcept { *this = std::move(other); }
  RegisteredRegion& operator=(RegisteredRegion&& other) noexcept;
  ~RegisteredRegion();

  const std::string& id() const { return id_; }
  int64_t byte_size() const { return byte_size_; }
  // A tensor of this region.
  RegionTensor Tensor(int64_t offset, DType dtype, std::vector<int64_t> shape) const {
    return RegionTensor{id_, offset, dtype, std::move(shape)};
  }
  // Unregisters now, with the status of normd's answer. Idempotent.
  absl::Status Unregister();

 private:
  friend class Client;
  RegisteredRegion(Client* client, std::string id, int64_t byte_size)
      : client_(client), id_(std::move(id)), byte_size_(byte_size) {}

  Client* client_ = nullptr;  // null once unregistered (or moved from)
  std::string id_;
  int64_t byte_size_ = 0;
};

}  // namespace normd

#endif  // NORMD_CLIENT_REGION_H_
