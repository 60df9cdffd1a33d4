#include "server/core/large_buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <utility>

namespace normd {
namespace {

// The idle bytes the shared pool keeps until main sets --response-pool-bytes.
constexpr size_t kDefaultMaxIdleBytes = size_t{256} << 20;

void* Map(size_t bytes) {
  // MAP_POPULATE: the kernel fills in every page now, in one call, rather than one fault per 4 KiB
  // page when the output is first written.
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return data == MAP_FAILED ? nullptr : data;
}

}  // namespace

LargeBufferPool::~LargeBufferPool() {
  normd::MutexLock lock(&mu_);
  for (auto& [bytes, buffers] : idle_) {
    for (void* data : buffers) munmap(data, bytes);
  }
}

LargeBufferPool& LargeBufferPool::Shared() {
  static LargeBufferPool* pool =
      new LargeBufferPool(kDefaultMaxIdleBytes);  // never destroyed: see header
  return *pool;
}

void* LargeBufferPool::Take(size_t bytes) {
  {
    normd::MutexLock lock(&mu_);
    if (auto it = idle_.find(bytes); it != idle_.end() && !it->second.empty()) {
      void* data = it->second.back();  // the most recently used: likeliest still in the caches
      it->second.pop_back();
      idle_bytes_ -= bytes;
      ++reused_;
      // Pairs with ReleaseWrites and GiveToShared: the last response's writes came before.
      sync_internal::Acquired(data);
      return data;
    }
    ++mapped_;
  }
  return Map(bytes);
}

void LargeBufferPool::Give(void* data, size_t bytes) {
  std::vector<std::pair<void*, size_t>> unmap;
  {
    normd::MutexLock lock(&mu_);
    idle_[bytes].push_back(data);
    idle_bytes_ += bytes;
    UnmapOverBudget(unmap);
  }
  for (auto& [buffer, size] : unmap) munmap(buffer, size);
}

void LargeBufferPool::UnmapOverBudget(std::vector<std::pair<void*, size_t>>& unmap) {
  // The least recently given back of the largest size first: one large mapping frees the most.
  for (auto it = idle_.rbegin(); idle_bytes_ > max_idle_bytes_ && it != idle_.rend(); ++it) {
    std::vector<void*>& buffers = it->second;
    while (idle_bytes_ > max_idle_bytes_ && !buffers.empty()) {
      unmap.emplace_back(buffers.front(), it->first);
      buffers.erase(buffers.begin());
      idle_bytes_ -= it->first;
    }
  }
}

void LargeBufferPool::SetMaxIdleBytes(size_t max_idle_bytes) {
  std::vector<std::pair<void*, size_t>> unmap;
  {
    normd::MutexLock lock(&mu_);
    max_idle_bytes_ = max_idle_bytes;
    UnmapOverBudget(unmap);
  }
  for (auto& [buffer, size] : unmap) munmap(buffer, size);
}

void LargeBufferPool::ReleaseWrites(const void* data) { sync_internal::Released(data); }

void LargeBufferPool::GiveToShared(void* data, size_t bytes) {
  // A slice dropped unsent (a failed call) is given back by a thread that the writer's hand-off to
  // gRPC ordered after it (the reactor's annotations), so releasing here covers its writes too.
  sync_internal::Released(data);
  Shared().Give(data, bytes);
}

grpc::Slice LargeBufferPool::TakeSharedSlice(size_t bytes, void** data) {
  // Only the shared pool makes slices: a slice's destroy function is a plain function, told the
  // buffer and its length but not which pool it came from.
  void* buffer = Shared().Take(bytes);
  if (buffer == nullptr) throw std::bad_alloc();
  *data = buffer;
  return grpc::Slice(buffer, bytes, &LargeBufferPool::GiveToShared);
}

size_t LargeBufferPool::idle_bytes() const {
  normd::MutexLock lock(&mu_);
  return idle_bytes_;
}

int64_t LargeBufferPool::reused() const {
  normd::MutexLock lock(&mu_);
  return reused_;
}

int64_t LargeBufferPool::mapped() const {
  normd::MutexLock lock(&mu_);
  return mapped_;
}

ScratchBytes::ScratchBytes(size_t bytes)
    : bytes_(bytes),
      pooled_(bytes >= LargeBufferPool::kMinBytes),
      data_(pooled_ ? LargeBufferPool::Shared().Take(bytes) : std::malloc(bytes == 0 ? 1 : bytes)) {
  if (data_ == nullptr) throw std::bad_alloc();
}

ScratchBytes::~ScratchBytes() {
  if (pooled_) {
    LargeBufferPool::Shared().Give(data_, bytes_);
  } else {
    std::free(data_);
  }
}

}  // namespace normd
