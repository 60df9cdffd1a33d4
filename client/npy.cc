#include "client/npy.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace normd {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

// The value text of `key` in the header dict: from after "'key':" to the next top-level ',' or '}'.
absl::StatusOr<std::string> DictValue(const std::string& header, const std::string& key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t pos = header.find(quoted);
  if (pos == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("npy header: no ", quoted));
  pos = header.find(':', pos + quoted.size());
  if (pos == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("npy header: no value for ", quoted));
  int depth = 0;
  size_t end = pos + 1;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(pos + 1, end - pos - 1)));
}

}  // namespace

size_t NpyArray::item_size() const { return descr == "<f8" ? 8 : descr == "<f4" ? 4 : 2; }

int64_t NpyArray::count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<NpyArray> ParseNpy(const std::string& bytes) {
  if (bytes.size() < 10 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0) {
    return absl::InvalidArgumentError("not a .npy file (no \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError("truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy format version ", major, " is not supported"));
  }
  if (bytes.size() < header_start + header_len)
    return absl::InvalidArgumentError("truncated .npy header");
  const std::string header = bytes.substr(header_start, header_len);

  NpyArray array;
  absl::StatusOr<std::string> descr = DictValue(header, "descr");
  if (!descr.ok()) return descr.status();
  array.descr = std::string(absl::StripSuffix(absl::StripPrefix(*descr, "'"), "'"));
  if (array.descr == "|u2" || array.descr == "=u2") array.descr = "<u2";
  if (array.descr != "<f4" && array.descr != "<f2" && array.descr != "<u2" &&
      array.descr != "<f8") {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy dtype ", array.descr,
                     " is not supported; use float32, float16, or uint16 "
                     "holding bf16 bits (little-endian)"));
  }
  absl::StatusOr<std::string> fortran = DictValue(header, "fortran_order");
  if (!fortran.ok()) return fortran.status();
  if (*fortran != "False") {
    return absl::InvalidArgumentError(
        ".npy is in Fortran order; save it with np.ascontiguousarray first");
  }
  absl::StatusOr<std::string> shape = DictValue(header, "shape");
  if (!shape.ok()) return shape.status();
  const std::string dims = std::string(absl::StripSuffix(absl::StripPrefix(*shape, "("), ")"));
  for (absl::string_view d : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t v;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(d), &v) || v < 0) {
      return absl::InvalidArgumentError(absl::StrCat(".npy shape ", *shape, " is malformed"));
    }
    array.shape.push_back(v);
  }
  const size_t need = static_cast<size_t>(array.count()) * array.item_size();
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != need) {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy data is ", bytes.size() - data_start, " bytes; shape (",
                     absl::StrJoin(array.shape, ", "), ") of ", array.descr, " needs ", need));
  }
  array.data = bytes.substr(data_start);
  return array;
}

std::string SerializeNpy(const NpyArray& array) {
  std::string shape = absl::StrJoin(array.shape, ", ");
  if (array.shape.size() == 1) shape += ",";  // Python's one-element tuple
  std::string header = absl::StrCat("{'descr': '", array.descr,
                                    "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Magic (6) + version (2) + length (2) + header + '\n' is padded with spaces to a multiple of 64.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic, kMagicSize);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out += array.data;
  return out;
}

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open for reading"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<NpyArray> array = ParseNpy(buffer.str());
  if (!array.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", array.status().message()));
  return array;
}

absl::Status WriteNpyFile(const std::string& path, const NpyArray& array) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open for writing"));
  const std::string bytes = SerializeNpy(array);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace normd
