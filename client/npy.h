// A small reader and writer of NumPy .npy files (format versions 1.0, 2.0 and 3.0), for normctl and
// the tests: little-endian float32 ('<f4'), float16 ('<f2'), uint16 ('<u2': bf16 bits, as normd's
// tools write bf16) and float64 ('<f8', read only: normctl narrows it to float32). C order only.
#ifndef NORMD_CLIENT_NPY_H_
#define NORMD_CLIENT_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace normd {

struct NpyArray {
  std::string descr;           // '<f4', '<f2', '<u2' or '<f8'
  std::vector<int64_t> shape;  // () is a scalar: one element
  std::string data;            // raw little-endian elements, C order

  size_t item_size() const;
  int64_t count() const;
};

// Parses the bytes of a .npy file.
absl::StatusOr<NpyArray> ParseNpy(const std::string& bytes);
// Serializes as format 1.0 (a header padded to a multiple of 64 bytes, as NumPy writes it).
std::string SerializeNpy(const NpyArray& array);

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path);
absl::Status WriteNpyFile(const std::string& path, const NpyArray& array);

}  // namespace normd

#endif  // NORMD_CLIENT_NPY_H_
