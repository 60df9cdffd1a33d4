// The few pieces of protobuf's wire format that normd writes and reads by hand around the tensors'
// data (ResponseWire builds responses around the output buffers; RequestWire parses requests around
// the input bytes), and the field numbers involved, from proto/normd/v1/normd.proto. Both wires'
// unit tests parse or build the same messages with protobuf to hold these to it.
#ifndef NORMD_SERVER_RPC_WIRE_FORMAT_H_
#define NORMD_SERVER_RPC_WIRE_FORMAT_H_

#include <google/protobuf/io/coded_stream.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace normd::wire {

// Wire types.
inline constexpr uint64_t kVarint = 0;
inline constexpr uint64_t kFixed64 = 1;
inline constexpr uint64_t kLengthDelimited = 2;  // messages, bytes, strings
inline constexpr uint64_t kFixed32 = 5;

inline constexpr uint64_t LengthDelimitedTag(int field_number) {
  return (static_cast<uint64_t>(field_number) << 3) | kLengthDelimited;
}

// Field numbers.
inline constexpr int kTensorDataField = 3;
inline constexpr int kRequestInputField = 1;
inline constexpr int kRequestWeightField = 2;
inline constexpr int kRequestWeightIdField = 3;
inline constexpr int kRequestResidualField = 5;
inline constexpr int kResponseOutputField = 1;
inline constexpr int kResponseResidualOutField = 2;

inline void AppendVarint(uint64_t value, std::string& out) {
  uint8_t bytes[10];  // a varint of 64 bits takes at most 10 bytes
  const uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(value, bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
}

inline size_t VarintSize(uint64_t value) {
  return google::protobuf::io::CodedOutputStream::VarintSize64(value);
}

}  // namespace normd::wire

#endif  // NORMD_SERVER_RPC_WIRE_FORMAT_H_
