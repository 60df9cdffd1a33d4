// Registered weights: content-addressed, bounded in bytes, least-recently-used eviction.
//
// A client registers a weight once and then names it by id in every Normalize, so the weight's
// bytes cross the network once. The id is a digest of the dtype, hidden size and bytes: the same
// weight always gets the same id, on any normd, across restarts, so a client can re-register after
// an eviction and keep using the id it has.
//
// Thread-safe. Lookups hand out shared_ptr: a request that found a weight keeps it alive even if
// the registry evicts it before the request's launch runs.
#ifndef NORMD_SERVER_RPC_WEIGHT_REGISTRY_H_
#define NORMD_SERVER_RPC_WEIGHT_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/lru_cache.h"
#include "base/mutex.h"
#include "kernels/dtype.h"
#include "server/core/work.h"

namespace normd {

class WeightRegistry {
 public:
  explicit WeightRegistry(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // The id a weight of these contents gets (pure function of its arguments).
  static std::string ContentId(DType dtype, int64_t hidden, absl::string_view bytes);

  // Stores the weight (or refreshes it if present) and returns its id. Evicts least-recently-used
  // weights to stay within max_bytes; RESOURCE_EXHAUSTED if this one alone is larger.
  absl::StatusOr<std::string> Register(DType dtype, int64_t hidden, std::string bytes);

  // The weight with this id, or nullptr when unknown or evicted. Counts as a use for LRU.
  std::shared_ptr<const RegisteredWeight> Find(absl::string_view id);

  int64_t count() const;
  int64_t bytes() const;

 private:
  const int64_t max_bytes_;
  mutable normd::Mutex mu_;
  LruCache<std::shared_ptr<const RegisteredWeight>> weights_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_WEIGHT_REGISTRY_H_
