// A request tensor's bytes where they arrived: one or more pieces of received memory, in order, not
// owned (RequestWire keeps gRPC's received slices alive while the request lives).
//
// Why pieces: gRPC hands a received message over as a list of slices (HTTP/2 DATA frames of 16 KiB
// by default), and parsing a `bytes` field into a std::string copies it out of them. normd reads a
// tensor's data from the slices instead: the CUDA executor copies each piece straight into pinned
// staging memory, which it had to copy into anyway, so that a byte is copied once on its way in,
// not twice. An executor that needs the tensor contiguous (the CPU backend's kernel) gathers it,
// which is the copy the parse used to make.
#ifndef NORMD_SERVER_CORE_TENSOR_BYTES_H_
#define NORMD_SERVER_CORE_TENSOR_BYTES_H_

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace normd {

class TensorBytes {
 public:
  TensorBytes() = default;  // absent (a request without a residual)

  // Bytes in one piece (present even when empty).
  static TensorBytes Contiguous(const void* data, int64_t size) {
    TensorBytes bytes;
    bytes.present_ = true;
    bytes.Append(data, size);
    return bytes;
  }
  // Present with no pieces yet; Append adds them in order.
  static TensorBytes Empty() {
    TensorBytes bytes;
    bytes.present_ = true;
    return bytes;
  }
  void Append(const void* data, int64_t size) {
    if (size > 0) pieces_.emplace_back(static_cast<const char*>(data), size);
    size_ += size;
  }

  bool present() const { return present_; }
  // The pieces in order: (address, bytes).
  const absl::InlinedVector<std::pair<const char*, int64_t>, 1>& pieces() const { return pieces_; }
  int64_t size() const { return size_; }
  size_t piece_count() const { return pieces_.size(); }
  // The bytes when they are in one piece; an empty tensor's is a valid, empty range. nullptr when
  // they are in several pieces (gather them with CopyTo).
  const void* contiguous() const {
    if (pieces_.empty()) return "";
    return pieces_.size() == 1 ? pieces_[0].first : nullptr;
  }

  // memcpy of all the bytes to `to` (at least size() bytes).
  void CopyTo(void* to) const {
    char* out = static_cast<char*>(to);
    for (const auto& [data, size] : pieces_) {
      std::memcpy(out, data, static_cast<size_t>(size));
      out += size;
    }
  }

 private:
  absl::InlinedVector<std::pair<const char*, int64_t>, 1> pieces_;
  int64_t size_ = 0;
  bool present_ = false;
};

}  // namespace normd

#endif  // NORMD_SERVER_CORE_TENSOR_BYTES_H_
