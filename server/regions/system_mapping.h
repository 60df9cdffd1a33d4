// A client's POSIX shared-memory object, mapped into normd for the life of one system region.
//
// normd opens the object by the name the client sends, with normd's own permissions. Unchecked,
// that would let a client have normd read or write an object of another user (a confused deputy),
// so the object must belong to the user normd identified the client as (PeerIdentity::uid), be a
// regular file (what /dev/shm holds; glibc's shm_open refuses symbolic links) and hold the region
// [offset, offset + byte_size) when it is registered. The client can still shrink it afterwards;
// touching a page past its new end raises SIGBUS, which the executors guard against
// (server/executors/sigbus_guard.h).
//
// The mapping is shared and writable (outputs are written into it) and populated at once, so that
// the first request does not pay its page faults.
#ifndef NORMD_SERVER_REGIONS_SYSTEM_MAPPING_H_
#define NORMD_SERVER_REGIONS_SYSTEM_MAPPING_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace normd {

class SystemMapping {
 public:
  // Maps byte_size bytes at `offset` of the object `shm_name` ("/name"), which `owner` must own.
  // INVALID_ARGUMENT for a malformed name or range, NOT_FOUND for a missing object,
  // PERMISSION_DENIED for an object of another user (or one normd may not open).
  static absl::StatusOr<std::unique_ptr<SystemMapping>> Open(const std::string& shm_name,
                                                             int64_t offset, int64_t byte_size,
                                                             uid_t owner);
  ~SystemMapping();
  SystemMapping(const SystemMapping&) = delete;
  SystemMapping& operator=(const SystemMapping&) = delete;

  // The region's first byte (not necessarily page-aligned) and its size.
  char* data() const { return data_; }
  int64_t size() const { return size_; }
  // The object's identity: two regions of the same object alias where their object ranges
  // overlap.
  std::string object_key() const;
  int64_t object_offset() const { return object_offset_; }

 private:
  SystemMapping() = default;

  void* map_ = nullptr;  // page-aligned start of the mapping
  size_t map_bytes_ = 0;
  char* data_ = nullptr;
  int64_t size_ = 0;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  int64_t object_offset_ = 0;
};

}  // namespace normd

#endif  // NORMD_SERVER_REGIONS_SYSTEM_MAPPING_H_
