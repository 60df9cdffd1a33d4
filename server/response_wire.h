// A NormalizeResponse built as wire bytes around output buffers the executors write into directly.
//
// Built the usual way, a response costs two passes over its tensors on top of the computation:
// sizing the message's `bytes` field zero-fills it (std::string::resize), and serializing the
// message copies it into gRPC's send buffer. Here each output tensor's data is a buffer of its own,
// left uninitialized, that the executor (CPU, or the copy out of pinned staging memory) fills, and
// that the response's grpc::ByteBuffer then references as one of its slices, not copied. Only the
// few bytes around the data (field tags, lengths, dtype, shape, request_id, timing) are encoded,
// with protobuf for everything but the data field's tag and length. The bytes parse as the same
// normd.v1.NormalizeResponse a client would get from protobuf's own serializer (field order aside,
// which the wire format leaves free).
//
// Except for responses with a tensor of kMaxReferencedDataBytes or more, which are built by
// protobuf as before. Such buffers are at glibc's mmap threshold (server/main.cc sets it to 32 MiB,
// its largest), so malloc maps them fresh unless its heap holds a free chunk that large, and every
// 4 KiB page then faults while the output is written. Protobuf's serializer copies a response into
// 1 MiB slices from the heap, which (as measured, not by design) leaves the heap holding such
// chunks; with the outputs referenced instead, each 32 MiB request cost two fresh mappings (its
// output, and the request's bytes when parsed), at 0.79x the throughput on the development VM and
// about twice the server time on the H200 (docs/BENCHMARKS.md, 2026-11-30).
//
// Threads: one owner at a time (the call's reactor, then the worker that writes the outputs); not
// synchronized.
#ifndef NORMD_SERVER_RESPONSE_WIRE_H_
#define NORMD_SERVER_RESPONSE_WIRE_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <memory>
#include <string>

#include "normd/v1/normd.pb.h"
#include "server/work_item.h"

namespace normd {

class ResponseWire {
 public:
  static constexpr size_t kMaxReferencedDataBytes = size_t{32} << 20;

  ResponseWire() = default;
  ResponseWire(const ResponseWire&) = delete;
  ResponseWire& operator=(const ResponseWire&) = delete;

  // Shapes `output` like the request's input and, with `with_residual_out`, `residual_out` like its
  // residual, each of `data_bytes` bytes, and keeps the request_id. The data buffers are allocated
  // here and are uninitialized. Call once, after the request has been validated (which made
  // `data_bytes` the size of its input and residual).
  void Prepare(const normd::v1::NormalizeRequest& request, int64_t data_bytes, bool with_residual_out);

  // Where the executor writes each output tensor's bytes; null for residual_out without a residual.
  void* output() const { return output_.data; }
  void* residual_out() const { return residual_out_.data; }

  // The response's wire bytes, with `report` as its timing. The data buffers travel with the
  // returned buffer (gRPC frees them once sent); this object is spent afterwards.
  grpc::ByteBuffer Finish(const LaunchReport& report);

 private:
  // One tensor field of the response: everything up to its data, and the data.
  struct TensorField {
    std::string head;   // field tag, message length, dtype, shape, the data field's tag and length
    grpc::Slice bytes;  // owns `data`
    void* data = nullptr;  // where the executor writes: `bytes`, or message_'s data field
  };
  static void PrepareTensor(int field_number, const normd::v1::Tensor& like, size_t data_bytes,
                            TensorField& field);

  TensorField output_;
  TensorField residual_out_;
  std::string request_id_;
  // Set for a response built by protobuf (a tensor that large): the fields' `data` then point into
  // it, and their `head` and `bytes`, and request_id_, stay empty.
  std::unique_ptr<normd::v1::NormalizeResponse> message_;
};

}  // namespace normd

#endif  // NORMD_SERVER_RESPONSE_WIRE_H_
