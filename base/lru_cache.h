// A map from string keys to values, bounded in bytes by its owner, that evicts the least recently
// used entries first.
//
// It keeps the order and the byte count; the owner decides when to evict and what an evicted value
// must release (the weight registry drops host bytes, a CUDA executor frees device memory after
// waiting for the launches that may still read it). Not thread-safe: the owner locks.
#ifndef NORMD_BASE_LRU_CACHE_H_
#define NORMD_BASE_LRU_CACHE_H_

#include <cstdint>
#include <list>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace normd {

template <typename Value>
class LruCache {
 public:
  // The value under `key`, now the most recently used; nullptr when absent.
  Value* Find(absl::string_view key) {
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, it->second);
    return &it->second->value;
  }

  // Adds `value` of `bytes` under `key`, which must be absent, as the most recently used.
  Value& Insert(std::string key, Value value, int64_t bytes) {
    entries_.push_front(Entry{key, std::move(value), bytes});
    by_key_.emplace(std::move(key), entries_.begin());
    bytes_ += bytes;
    return entries_.front().value;
  }

  // Evicts least recently used entries until at most `max_bytes` remain, handing each evicted value
  // to `on_evict` before it is destroyed.
  template <typename OnEvict>
  void EvictTo(int64_t max_bytes, OnEvict&& on_evict) {
    while (bytes_ > max_bytes && !entries_.empty()) {
      Entry& oldest = entries_.back();
      on_evict(oldest.value);
      bytes_ -= oldest.bytes;
      by_key_.erase(oldest.key);
      entries_.pop_back();
    }
  }
  void EvictTo(int64_t max_bytes) {
    EvictTo(max_bytes, [](Value&) {});
  }

  int64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string key;
    Value value;
    int64_t bytes;
  };
  std::list<Entry> entries_;  // most recently used first
  absl::flat_hash_map<std::string, typename std::list<Entry>::iterator> by_key_;
  int64_t bytes_ = 0;
};

}  // namespace normd

#endif  // NORMD_BASE_LRU_CACHE_H_
