#include "server/rpc/weight_registry.h"

#include <openssl/evp.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace normd {

std::string WeightRegistry::ContentId(DType dtype, int64_t hidden, absl::string_view bytes) {
  // SHA-256 over a small header and the bytes; 128 bits of it are plenty to make collisions moot.
  const std::string header =
      absl::StrCat("normd.weight.v1:", static_cast<int>(dtype), ":", hidden, ":");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, header.data(), header.size());
  EVP_DigestUpdate(ctx, bytes.data(), bytes.size());
  EVP_DigestFinal_ex(ctx, digest, &digest_len);
  EVP_MD_CTX_free(ctx);
  const std::string hex =
      absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), 16));
  return absl::StrCat("w-", DTypeName(dtype), "-", hidden, "-", hex);
}

absl::StatusOr<std::string> WeightRegistry::Register(DType dtype, int64_t hidden,
                                                     std::string bytes) {
  const auto size = static_cast<int64_t>(bytes.size());
  if (size > max_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("weight: ", size, " bytes exceed --max-weight-bytes = ", max_bytes_));
  }
  std::string id = ContentId(dtype, hidden, bytes);
  auto weight =
      std::make_shared<RegisteredWeight>(RegisteredWeight{id, dtype, hidden, std::move(bytes)});
  normd::MutexLock lock(&mu_);
  if (weights_.Find(id) != nullptr) return id;
  weights_.EvictTo(max_bytes_ - size);
  weights_.Insert(id, std::move(weight), size);
  return id;
}

std::shared_ptr<const RegisteredWeight> WeightRegistry::Find(absl::string_view id) {
  normd::MutexLock lock(&mu_);
  const auto* weight = weights_.Find(id);
  return weight == nullptr ? nullptr : *weight;
}

int64_t WeightRegistry::count() const {
  normd::MutexLock lock(&mu_);
  return static_cast<int64_t>(weights_.size());
}

int64_t WeightRegistry::bytes() const {
  normd::MutexLock lock(&mu_);
  return weights_.bytes();
}

}  // namespace normd
