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
// Tensors of 32 MiB and more (LargeBufferPool::kMinBytes, glibc's mmap threshold) take their
// buffers from LargeBufferPool, which keeps such buffers for the next response once gRPC has sent
// them: freshly mapped, every 4 KiB page of one would fault while the output is written. (Before
// the pool such responses were built by protobuf, with a zero-fill and a serializer copy of their
// tensors; see large_buffer_pool.h.)
//
// Threads: one owner at a time (the call's reactor, then the worker that writes the outputs); not
// synchronized.
#ifndef NORMD_SERVER_RPC_RESPONSE_WIRE_H_
#define NORMD_SERVER_RPC_RESPONSE_WIRE_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <memory>
#include <string>

#include "normd/v1/normd.pb.h"
#include "server/core/work.h"

namespace normd {

class ResponseWire {
 public:
  ResponseWire() = default;
  ResponseWire(const ResponseWire&) = delete;
  ResponseWire& operator=(const ResponseWire&) = delete;

  // Shapes `output` like the request's input and, with `with_residual_out`, `residual_out` like its
  // residual, each of `data_bytes` bytes, and keeps the request_id. The data buffers are allocated
  // here and are uninitialized. Call once, after the request has been validated (which made
  // `data_bytes` the size of its input and residual). A tensor written into a region instead
  // (`output_region`, `residual_out_region` not null) gets no buffer: the response carries its
  // dtype, shape and that reference, and no data.
  void Prepare(const normd::v1::NormalizeRequest& request, int64_t data_bytes,
               bool with_residual_out, const normd::v1::RegionReference* output_region = nullptr,
               const normd::v1::RegionReference* residual_out_region = nullptr);

  // Where the executor writes each output tensor's bytes; null for residual_out without a residual,
  // and for a tensor written into a region.
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
    void* data = nullptr;    // where the executor writes: `bytes`
    bool pooled = false;     // `bytes` is LargeBufferPool's
    bool in_region = false;  // `head` is the whole field: the data went into a region
  };
  static void PrepareTensor(int field_number, const normd::v1::Tensor& like, size_t data_bytes,
                            TensorField& field);
  static void PrepareRegionTensor(int field_number, const normd::v1::Tensor& like,
                                  const normd::v1::RegionReference& region, TensorField& field);

  TensorField output_;
  TensorField residual_out_;
  std::string request_id_;
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_RESPONSE_WIRE_H_
