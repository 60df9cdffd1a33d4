// Shared memory a client process creates to pass tensors to normd by reference (normd's
// --shared-memory=system; docs/SHARED_MEMORY.md): a POSIX shared-memory object under a fresh random
// name, readable and writable by its user only, mapped into this process.
//
//   auto memory = normd::SharedMemory::Create(64 << 20).value();
//   std::span<uint16_t> x = memory->View<uint16_t>(0, rows * hidden).value();  // write the input
//   auto region = client->RegisterSystemRegion(*memory).value();                // normd maps it
//   auto y = client->Normalize(region.Tensor(0, DType::kBFloat16, {rows, hidden}), weight,
//                              {.output_region = region.Tensor(out_at, DType::kBFloat16,
//                                                              {rows, hidden})});
//
// The object is removed (shm_unlink) and unmapped when the SharedMemory is destroyed; normd keeps
// its own mapping of a registered region until the region is unregistered. Keep the object at its
// size while it is registered: normd fails a request whose region shrank under it.
#ifndef NORMD_CLIENT_SHARED_MEMORY_H_
#define NORMD_CLIENT_SHARED_MEMORY_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace normd {

class SharedMemory {
 public:
  // A new object of `bytes` bytes, zero-filled, named "/normd-<pid>-<random>".
  static absl::StatusOr<std::unique_ptr<SharedMemory>> Create(int64_t bytes);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  const std::string& name() const { return name_; }  // as shm_open takes it
  int64_t size() const { return size_; }
  char* data() const { return data_; }

  // `count` elements of T from byte `offset`, checked against the size and T's alignment.
  template <typename T>
  absl::StatusOr<std::span<T>> View(int64_t offset, size_t count) const {
    if (offset < 0 || offset > size_ || count > static_cast<size_t>(size_ - offset) / sizeof(T)) {
      return absl::OutOfRangeError(absl::StrCat("view of ", count, " x ", sizeof(T),
                                                " bytes at offset ", offset, " is outside the ",
                                                size_, " bytes of ", name_));
    }
    if (offset % static_cast<int64_t>(alignof(T)) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("view at offset ", offset, " is not aligned to ", alignof(T), " bytes"));
    }
    return std::span<T>(reinterpret_cast<T*>(data_ + offset), count);
  }

 private:
  SharedMemory(std::string name, char* data, int64_t size)
      : name_(std::move(name)), data_(data), size_(size) {}

  const std::string name_;
  char* const data_;
  const int64_t size_;
};

}  // namespace normd

#endif  // NORMD_CLIENT_SHARED_MEMORY_H_
