// The shared-memory regions clients have registered, by connection.
//
// Identity: a region belongs to the connection that registered it, named by its gRPC peer string,
// which is unique among live connections (peer_identity.h). Every request naming a region must
// come on that connection: another connection gets PERMISSION_DENIED even with the right id, and
// ids are 128 random bits besides, so they cannot be guessed.
//
// Lifetime: connection-bound. A connection opens one region session (the OpenRegionSession call,
// which stays open) before registering regions; when the session ends (the client cancels it, its
// connection closes, the process dies, or normd shuts down) its regions are released. That is why
// peers can serve as identities: while a session is open its connection is alive, so no other
// connection can have its peer string. A region is released when unregistered or when its session
// ends, and its memory is unmapped once the last request using it is done (region.h).
//
// Limits: at most --max-regions-per-client regions per session, and --max-shared-memory-bytes over
// every region (until released); past either, RESOURCE_EXHAUSTED saying which. Registration is
// refused with PERMISSION_DENIED from a peer not on this host, and with FAILED_PRECONDITION for a
// kind --shared-memory does not enable.
//
// Thread-safe. Mapping, pinning and opening (milliseconds) happen outside the lock.
#ifndef NORMD_SERVER_REGIONS_REGION_REGISTRY_H_
#define NORMD_SERVER_REGIONS_REGION_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "server/observability/region_metrics.h"
#include "server/regions/device_memory.h"
#include "server/regions/peer_identity.h"
#include "server/regions/region.h"

namespace normd {

struct RegionRegistryOptions {
  bool system = false;  // --shared-memory includes "system"
  bool cuda = false;    // ... "cuda"
  int64_t max_bytes = 0;
  int64_t max_regions_per_client = 0;
};

class RegionRegistry {
 public:
  // `peers` must outlive the registry; `device_memory` (the CUDA backend's; null on the CPU
  // backend) and `metrics` may be null, and otherwise must outlive every region.
  RegionRegistry(RegionRegistryOptions options, const PeerDirectory& peers,
                 DeviceMemory* device_memory, RegionMetrics* metrics);
  ~RegionRegistry();

  const RegionRegistryOptions& options() const { return options_; }
  bool enabled() const { return options_.system || options_.cuda; }

  // Opens `peer`'s session and returns its token. `end` is called exactly once, outside the lock,
  // by whichever ends the session (EndSession or EndAllSessions), after its regions are released,
  // with the status the session's call should end with.
  absl::StatusOr<uint64_t> OpenSession(const std::string& peer,
                                       std::function<void(const absl::Status&)> end);
  // Ends the session `token` of `peer` if it is still open (the client cancelled it, or its
  // connection closed).
  void EndSession(const std::string& peer, uint64_t token);
  // Shutdown: ends every session and refuses new ones.
  void EndAllSessions();

  struct Registered {
    std::string id;
    int64_t byte_size = 0;
  };
  absl::StatusOr<Registered> RegisterSystem(const std::string& peer, const std::string& shm_name,
                                            int64_t offset, int64_t byte_size, std::string label);
  absl::StatusOr<Registered> RegisterCuda(const std::string& peer, absl::string_view ipc_handle,
                                          absl::string_view device_uuid, int64_t offset,
                                          int64_t byte_size, std::string label);
  absl::Status Unregister(const std::string& peer, absl::string_view id);
  // `peer`'s regions, in no particular order.
  std::vector<std::shared_ptr<const Region>> List(const std::string& peer) const;

  // The region `id` for a reference that `peer` sent; `field` names the reference in errors.
  absl::StatusOr<std::shared_ptr<const Region>> Find(const std::string& peer, absl::string_view id,
                                                     absl::string_view field) const;

  // Bytes of regions not yet released (what --max-shared-memory-bytes bounds).
  int64_t bytes_held() const;

 private:
  struct Session {
    uint64_t token = 0;
    std::function<void(const absl::Status&)> end;
    absl::flat_hash_set<std::string> regions;
    int64_t pending = 0;  // registrations under way
  };
  // Checks the peer, the kind and the limits, and reserves a place and the bytes for one region.
  absl::StatusOr<uint64_t> Reserve(const std::string& peer, bool kind_enabled,
                                   absl::string_view kind, int64_t byte_size);
  // Gives back a reservation that did not become a region.
  void Unreserve(const std::string& peer, uint64_t token, int64_t byte_size);
  // Adds a built region to its session (reserved by `token`), or releases it when that session
  // has ended meanwhile.
  absl::StatusOr<Registered> Admit(const std::string& peer, uint64_t token,
                                   std::unique_ptr<Region> region);
  // Ends every session and refuses new ones: the sessions' regions go to `released` and their
  // `end`s are returned, for the caller to release and call outside the lock.
  std::vector<std::function<void(const absl::Status&)>> CloseAll(
      std::vector<std::shared_ptr<Region>>& released);
  // Removes `session`'s regions from the map, for the caller to release outside the lock.
  std::vector<std::shared_ptr<Region>> TakeRegionsLocked(Session& session)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Released(Region::Kind kind, int64_t bytes);

  const RegionRegistryOptions options_;
  const PeerDirectory& peers_;
  DeviceMemory* const device_memory_;
  RegionMetrics* const metrics_;

  mutable normd::Mutex mu_;
  absl::flat_hash_map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);  // by peer
  absl::flat_hash_map<std::string, std::shared_ptr<Region>> regions_ ABSL_GUARDED_BY(mu_);
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t bytes_held_ ABSL_GUARDED_BY(mu_) = 0;  // reserved, registered or still in use
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace normd

#endif  // NORMD_SERVER_REGIONS_REGION_REGISTRY_H_
