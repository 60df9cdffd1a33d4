#include "server/regions/region_registry.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace normd {
namespace {

constexpr size_t kIdBytes = 16;  // 128 bits from the kernel's random source

absl::StatusOr<std::string> NewRegionId() {
  char bytes[kIdBytes];
  size_t filled = 0;
  while (filled < sizeof bytes) {
    const ssize_t n = getrandom(bytes + filled, sizeof bytes - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(
          absl::StrCat("getrandom for a region id failed: ", std::strerror(errno)));
    }
    filled += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(absl::string_view(bytes, sizeof bytes));
}

RegionMetrics::Kind MetricsKind(Region::Kind kind) {
  return kind == Region::Kind::kSystem ? RegionMetrics::Kind::kSystem : RegionMetrics::Kind::kCuda;
}

absl::Status NoSession(const std::string& peer) {
  return absl::FailedPreconditionError(absl::StrCat(
      "no region session is open on this connection (peer '", peer,
      "'): call OpenRegionSession first and keep it open while the regions are in use"));
}

}  // namespace

RegionRegistry::RegionRegistry(RegionRegistryOptions options, const PeerDirectory& peers,
                               DeviceMemory* device_memory, RegionMetrics* metrics)
    : options_(options), peers_(peers), device_memory_(device_memory), metrics_(metrics) {}

RegionRegistry::~RegionRegistry() {
  // By now the server's shutdown has ended every session call, so no `end` is left to call; a
  // region still held by a request would be released by it (none is, after the drain).
  std::vector<std::shared_ptr<Region>> released;
  CloseAll(released);
}

std::vector<std::function<void(const absl::Status&)>> RegionRegistry::CloseAll(
    std::vector<std::shared_ptr<Region>>& released) {
  std::vector<std::function<void(const absl::Status&)>> ends;
  normd::MutexLock lock(&mu_);
  closed_ = true;
  for (auto& [peer, session] : sessions_) {
    std::vector<std::shared_ptr<Region>> taken = TakeRegionsLocked(session);
    released.insert(released.end(), taken.begin(), taken.end());
    ends.push_back(std::move(session.end));
    if (metrics_ != nullptr) metrics_->SessionClosed();
  }
  sessions_.clear();
  return ends;
}

absl::StatusOr<uint64_t> RegionRegistry::OpenSession(const std::string& peer,
                                                     std::function<void(const absl::Status&)> end) {
  if (!enabled()) {
    return absl::FailedPreconditionError(
        "shared memory is off on this server (start normd with --shared-memory=system, cuda, or "
        "system,cuda)");
  }
  if (!peers_.Identify(peer).local) {
    return absl::PermissionDeniedError(absl::StrCat(
        "peer '", peer,
        "' is not on this host: shared memory needs a connection over normd's Unix socket "
        "(--listen-unix) or loopback"));
  }
  normd::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("normd is shutting down");
  if (sessions_.contains(peer)) {
    return absl::AlreadyExistsError(
        absl::StrCat("this connection (peer '", peer, "') already has a region session open"));
  }
  Session& session = sessions_[peer];
  session.token = next_token_++;
  session.end = std::move(end);
  if (metrics_ != nullptr) metrics_->SessionOpened();
  return session.token;
}

std::vector<std::shared_ptr<Region>> RegionRegistry::TakeRegionsLocked(Session& session) {
  std::vector<std::shared_ptr<Region>> taken;
  for (const std::string& id : session.regions) {
    auto it = regions_.find(id);
    if (it == regions_.end()) continue;
    if (metrics_ != nullptr) metrics_->RegionUnregistered(MetricsKind(it->second->kind));
    taken.push_back(std::move(it->second));
    regions_.erase(it);
  }
  session.regions.clear();
  return taken;
}

void RegionRegistry::EndSession(const std::string& peer, uint64_t token) {
  std::function<void(const absl::Status&)> end;
  std::vector<std::shared_ptr<Region>> released;
  {
    normd::MutexLock lock(&mu_);
    auto it = sessions_.find(peer);
    if (it == sessions_.end() || it->second.token != token) return;  // ended already
    released = TakeRegionsLocked(it->second);
    end = std::move(it->second.end);
    sessions_.erase(it);
    if (metrics_ != nullptr) metrics_->SessionClosed();
  }
  released.clear();  // unmapped here, or by the last request still using one
  if (end) end(absl::CancelledError("the client ended its region session"));
}

void RegionRegistry::EndAllSessions() {
  std::vector<std::shared_ptr<Region>> released;
  std::vector<std::function<void(const absl::Status&)>> ends = CloseAll(released);
  released.clear();
  const absl::Status shutting_down =
      absl::UnavailableError("normd is shutting down; the session's regions are released");
  for (auto& end : ends) {
    if (end) end(shutting_down);
  }
}

absl::StatusOr<uint64_t> RegionRegistry::Reserve(const std::string& peer, bool kind_enabled,
                                                 absl::string_view kind, int64_t byte_size) {
  if (!kind_enabled) {
    return absl::FailedPreconditionError(absl::StrCat(
        kind, " regions are off on this server (its --shared-memory does not include '", kind,
        "')"));
  }
  if (byte_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("byte_size: ", byte_size, " must be > 0"));
  }
  normd::MutexLock lock(&mu_);
  auto it = sessions_.find(peer);
  if (it == sessions_.end()) return NoSession(peer);
  Session& session = it->second;
  const auto held = static_cast<int64_t>(session.regions.size()) + session.pending;
  if (held >= options_.max_regions_per_client) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "regions: this connection holds ", held, " regions, the most --max-regions-per-client = ",
        options_.max_regions_per_client, " allows; unregister one first"));
  }
  // Overflow-safe: bytes_held_ <= max_bytes always.
  if (byte_size > options_.max_bytes - bytes_held_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "byte_size: ", byte_size, " more bytes would bring the regions mapped to ", bytes_held_,
        " + ", byte_size, ", over --max-shared-memory-bytes = ", options_.max_bytes,
        " (regions count until released, after the requests using them)"));
  }
  bytes_held_ += byte_size;
  ++session.pending;
  return session.token;
}

void RegionRegistry::Unreserve(const std::string& peer, uint64_t token, int64_t byte_size) {
  normd::MutexLock lock(&mu_);
  bytes_held_ -= byte_size;
  auto it = sessions_.find(peer);
  if (it != sessions_.end() && it->second.token == token) --it->second.pending;
}

void RegionRegistry::Released(Region::Kind kind, int64_t bytes) {
  if (metrics_ != nullptr) metrics_->BytesReleased(MetricsKind(kind), bytes);
  normd::MutexLock lock(&mu_);
  bytes_held_ -= bytes;
}

absl::StatusOr<RegionRegistry::Registered> RegionRegistry::Admit(const std::string& peer,
                                                                 uint64_t token,
                                                                 std::unique_ptr<Region> region) {
  const Region::Kind kind = region->kind;
  const int64_t bytes = region->byte_size;
  absl::StatusOr<std::string> id = NewRegionId();
  if (!id.ok()) {
    Unreserve(peer, token, bytes);
    return id.status();  // the region is released here, uncounted
  }
  // From here the region's release gives its bytes back.
  region->on_release = [this, kind, bytes] { Released(kind, bytes); };
  if (metrics_ != nullptr) metrics_->RegionRegistered(MetricsKind(kind), bytes);
  std::shared_ptr<Region> shared(std::move(region));
  {
    normd::MutexLock lock(&mu_);
    auto it = sessions_.find(peer);
    if (it != sessions_.end() && it->second.token == token) {
      --it->second.pending;
      shared->id = *id;
      shared->owner_peer = peer;
      it->second.regions.insert(*id);
      regions_.emplace(*id, std::move(shared));
      return Registered{*std::move(id), bytes};
    }
  }
  // The session ended while the region was being mapped: the region goes with it (released as
  // `shared` goes out of scope, outside the lock).
  if (metrics_ != nullptr) metrics_->RegionUnregistered(MetricsKind(kind));
  return absl::UnavailableError("the region session ended while the region was being registered");
}

absl::StatusOr<RegionRegistry::Registered> RegionRegistry::RegisterSystem(
    const std::string& peer, const std::string& shm_name, int64_t offset, int64_t byte_size,
    std::string label) {
  const PeerIdentity identity = peers_.Identify(peer);
  if (!identity.local) {
    return absl::PermissionDeniedError(
        absl::StrCat("peer '", peer, "' is not on this host: shared memory is for local clients"));
  }
  if (!identity.uid.has_value()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot tell which user peer '", peer, "' runs as, so normd cannot check that it owns '",
        shm_name.substr(0, 300), "'"));
  }
  absl::StatusOr<uint64_t> token = Reserve(peer, options_.system, "system", byte_size);
  if (!token.ok()) return token.status();
  absl::StatusOr<std::unique_ptr<SystemMapping>> mapping =
      SystemMapping::Open(shm_name, offset, byte_size, *identity.uid);
  if (!mapping.ok()) {
    Unreserve(peer, *token, byte_size);
    return mapping.status();
  }
  auto region = std::make_unique<Region>();
  region->kind = Region::Kind::kSystem;
  region->label = std::move(label);
  region->base = (*mapping)->data();
  region->byte_size = byte_size;
  region->alias_key = (*mapping)->object_key();
  region->alias_offset = offset;
  region->mapping = *std::move(mapping);
  if (device_memory_ != nullptr) {
    if (absl::Status pinned = device_memory_->Pin(region->base, byte_size); !pinned.ok()) {
      Unreserve(peer, *token, byte_size);
      return pinned;
    }
    region->device_memory = device_memory_;
    region->pinned = true;
  }
  return Admit(peer, *token, std::move(region));
}

absl::StatusOr<RegionRegistry::Registered> RegionRegistry::RegisterCuda(
    const std::string& peer, absl::string_view ipc_handle, absl::string_view device_uuid,
    int64_t offset, int64_t byte_size, std::string label) {
  if (!peers_.Identify(peer).local) {
    return absl::PermissionDeniedError(
        absl::StrCat("peer '", peer, "' is not on this host: shared memory is for local clients"));
  }
  if (options_.cuda && device_memory_ == nullptr) {
    return absl::FailedPreconditionError("cuda regions need the CUDA backend (--backend=cuda)");
  }
  if (offset < 0) {
    return absl::InvalidArgumentError(absl::StrCat("offset: ", offset, " must be >= 0"));
  }
  absl::StatusOr<uint64_t> token = Reserve(peer, options_.cuda, "cuda", byte_size);
  if (!token.ok()) return token.status();
  absl::StatusOr<OpenedDeviceMemory> opened = device_memory_->Open(ipc_handle, device_uuid);
  if (!opened.ok()) {
    Unreserve(peer, *token, byte_size);
    return opened.status();
  }
  if (offset > opened->bytes || byte_size > opened->bytes - offset) {
    device_memory_->Close(*opened);
    Unreserve(peer, *token, byte_size);
    return absl::InvalidArgumentError(
        absl::StrCat("byte_size: offset ", offset, " + byte_size ", byte_size,
                     " is past the end of the allocation (", opened->bytes, " bytes)"));
  }
  auto region = std::make_unique<Region>();
  region->kind = Region::Kind::kCuda;
  region->label = std::move(label);
  region->base = opened->base + offset;
  region->byte_size = byte_size;
  region->device = opened->device;
  region->alias_key =
      absl::StrCat("cuda:", opened->device, ":", reinterpret_cast<uintptr_t>(opened->base));
  region->alias_offset = offset;
  region->device_memory = device_memory_;
  region->opened = *opened;
  return Admit(peer, *token, std::move(region));
}

absl::Status RegionRegistry::Unregister(const std::string& peer, absl::string_view id) {
  std::shared_ptr<Region> released;
  {
    normd::MutexLock lock(&mu_);
    auto it = regions_.find(id);
    if (it == regions_.end()) {
      return absl::NotFoundError(absl::StrCat("region_id: '", id.substr(0, 100),
                                              "' is not registered (unknown, already "
                                              "unregistered, or its session ended)"));
    }
    if (it->second->owner_peer != peer) {
      return absl::PermissionDeniedError(
          absl::StrCat("region_id: region '", id, "' was registered by another connection"));
    }
    auto session = sessions_.find(peer);
    if (session != sessions_.end()) session->second.regions.erase(id);
    if (metrics_ != nullptr) metrics_->RegionUnregistered(MetricsKind(it->second->kind));
    released = std::move(it->second);
    regions_.erase(it);
  }
  released.reset();  // unmapped now, or once the requests using it are done
  return absl::OkStatus();
}

std::vector<std::shared_ptr<const Region>> RegionRegistry::List(const std::string& peer) const {
  std::vector<std::shared_ptr<const Region>> out;
  normd::MutexLock lock(&mu_);
  auto session = sessions_.find(peer);
  if (session == sessions_.end()) return out;
  for (const std::string& id : session->second.regions) {
    auto it = regions_.find(id);
    if (it != regions_.end()) out.push_back(it->second);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const Region>> RegionRegistry::Find(const std::string& peer,
                                                                   absl::string_view id,
                                                                   absl::string_view field) const {
  normd::MutexLock lock(&mu_);
  auto it = regions_.find(id);
  if (it == regions_.end()) {
    return absl::NotFoundError(absl::StrCat(field, ".region_id: '", id.substr(0, 100),
                                            "' is not registered (unknown, unregistered, or "
                                            "its session ended)"));
  }
  if (it->second->owner_peer != peer) {
    return absl::PermissionDeniedError(
        absl::StrCat(field, ".region_id: region '", id,
                     "' was registered by another connection; a region is usable only on the "
                     "connection that registered it"));
  }
  return std::shared_ptr<const Region>(it->second);
}

int64_t RegionRegistry::bytes_held() const {
  normd::MutexLock lock(&mu_);
  return bytes_held_;
}

}  // namespace normd
