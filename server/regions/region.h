// One registered region: the memory a request's references resolve to, and what keeps that memory
// mapped (or opened) while requests use it.
//
// Ownership: the registry holds each region by shared_ptr until it is unregistered or its session
// ends; every request that points into it holds another (ValidatedRequest::region_holds). The
// memory is released, and its bytes given back to --max-shared-memory-bytes, when the last holder
// lets go: a request in flight never touches unmapped memory.
#ifndef NORMD_SERVER_REGIONS_REGION_H_
#define NORMD_SERVER_REGIONS_REGION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/core/work.h"
#include "server/regions/device_memory.h"
#include "server/regions/system_mapping.h"

namespace normd {

struct Region {
  enum class Kind { kSystem, kCuda };

  Region() = default;
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region() {
    if (pinned) device_memory->Unpin(mapping->data());
    mapping.reset();
    if (opened.has_value()) device_memory->Close(*opened);
    if (on_release) on_release();
  }

  TensorMemory memory() const {
    return kind == Kind::kSystem ? TensorMemory::kSharedHost : TensorMemory::kDevice;
  }

  std::string id;
  Kind kind = Kind::kSystem;
  std::string label;
  std::string owner_peer;  // the connection that registered it
  char* base = nullptr;    // the region's first byte: host (system) or device (CUDA) address
  int64_t byte_size = 0;
  int device = -1;  // CUDA: normd's ordinal of its GPU
  // Regions of the same key may share bytes (two registrations of one object or allocation);
  // alias_offset is where this one starts within it. References are checked for overlap in these
  // coordinates.
  std::string alias_key;
  int64_t alias_offset = 0;

  std::unique_ptr<SystemMapping> mapping;    // system regions
  DeviceMemory* device_memory = nullptr;     // with the CUDA backend
  bool pinned = false;                       // a system region registered with the driver
  std::optional<OpenedDeviceMemory> opened;  // CUDA regions
  std::function<void()> on_release;          // the registry's accounting
};

}  // namespace normd

#endif  // NORMD_SERVER_REGIONS_REGION_H_
