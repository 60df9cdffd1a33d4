// A NormalizeRequest as received: every field parsed by protobuf except the tensors' data (the
// input's, the residual's and an inline weight's), which stays in gRPC's received slices and is
// read from there (TensorBytes).
//
// How: the message's wire bytes are walked once; everything but those `bytes` fields (tags,
// lengths, dtype, shape, eps, ids, unknown fields) is copied into a small skeleton message, with
// the three tensors' lengths rewritten, and protobuf parses the skeleton with its full semantics
// (UTF-8 checks on strings, merging of repeated submessages, the oneof). A data field stripped from
// the skeleton is recorded as pieces of the slices instead; where protobuf would keep the last of
// several, so does this, and a weight_id clears the weight's data before it as the oneof does. A
// skeleton protobuf refuses is a message protobuf refuses (it is the message less complete `bytes`
// fields). Anything else unusual on the wire (a group, a malformed field) falls back to protobuf's
// parse of the whole message, so that odd encodings are accepted or refused exactly as protobuf
// does; the data then lives in the parsed message.
//
// Why the weight too: a one-row request's inline weight is as large as its input (or twice, in
// float32), and copying it into the skeleton and then again into protobuf's string was most of the
// parse's time on gRPC's thread. Like the input, a weight split over two slices stays in its two
// pieces: the CUDA executor copies it into staging piece by piece, the CPU executor gathers it.
//
// Threads: one owner at a time, like the call that holds it.
#ifndef NORMD_SERVER_RPC_REQUEST_WIRE_H_
#define NORMD_SERVER_RPC_REQUEST_WIRE_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "normd/v1/normd.pb.h"
#include "server/core/tensor_bytes.h"

namespace normd {

class RequestWire {
 public:
  RequestWire() = default;
  RequestWire(const RequestWire&) = delete;
  RequestWire& operator=(const RequestWire&) = delete;

  // Parses `bytes` (which may be cleared afterwards: the slices are shared, not copied). Call once.
  // INVALID_ARGUMENT, saying so, when they are not a NormalizeRequest.
  absl::Status Parse(const grpc::ByteBuffer& bytes);

  // The request; its input and residual carry no data when the data is in the slices.
  const normd::v1::NormalizeRequest& message() const { return message_; }
  // The input's and the residual's data wherever they are; residual_data() is absent without a
  // residual field.
  const TensorBytes& input_data() const { return input_; }
  const TensorBytes& residual_data() const { return residual_; }
  // An inline weight's data wherever it is; absent when the request has no weight field (a
  // weight_id).
  const TensorBytes& weight_data() const { return weight_; }
  // Whether the data stayed in the received slices (false after a fallback to protobuf's parse).
  bool data_in_slices() const { return data_in_slices_; }

 private:
  // The walk described above: the request parsed, refused by protobuf, or left to protobuf's parse
  // of the whole message.
  enum class Skeleton { kParsed, kRefused, kLeftToProtobuf };
  Skeleton ParseSkeleton();
  absl::Status ParseWhole(const grpc::ByteBuffer& bytes);

  std::vector<grpc::Slice> slices_;  // the received message, shared with gRPC
  normd::v1::NormalizeRequest message_;
  TensorBytes input_;
  TensorBytes residual_;
  TensorBytes weight_;
  bool data_in_slices_ = false;
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_REQUEST_WIRE_H_
