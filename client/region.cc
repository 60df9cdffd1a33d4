#include "client/region.h"

#include <utility>

#include "client/normd_client.h"

namespace normd {

int64_t RegionTensor::byte_length() const {
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  return elements * static_cast<int64_t>(ItemSize(dtype));
}

normd::v1::RegionReference RegionTensor::Reference() const {
  normd::v1::RegionReference reference;
  reference.set_region_id(region_id);
  reference.set_offset(offset);
  reference.set_byte_length(byte_length());
  return reference;
}

RegisteredRegion& RegisteredRegion::operator=(RegisteredRegion&& other) noexcept {
  if (this != &other) {
    Unregister().IgnoreError();
    client_ = std::exchange(other.client_, nullptr);
    id_ = std::move(other.id_);
    byte_size_ = other.byte_size_;
  }
  return *this;
}

RegisteredRegion::~RegisteredRegion() { Unregister().IgnoreError(); }

absl::Status RegisteredRegion::Unregister() {
  Client* client = std::exchange(client_, nullptr);
  if (client == nullptr) return absl::OkStatus();
  return client->UnregisterRegion(id_);
}

}  // namespace normd
