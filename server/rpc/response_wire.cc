#include "server/rpc/response_wire.h"

#include <cstdlib>
#include <new>
#include <vector>

#include "absl/time/time.h"
#include "server/core/large_buffer_pool.h"
#include "server/rpc/wire_format.h"

namespace normd {
namespace {

using wire::AppendVarint;
using wire::kResponseOutputField;
using wire::kResponseResidualOutField;
using wire::kTensorDataField;
using wire::LengthDelimitedTag;
using wire::VarintSize;

// What an output tensor takes from the request's tensor it is shaped like: everything but the data.
void CopyDtypeAndShape(const normd::v1::Tensor& like, normd::v1::Tensor& out) {
  out.set_dtype(like.dtype());
  *out.mutable_shape() = like.shape();
}

void FillTiming(const LaunchReport& report, normd::v1::Timing& timing) {
  timing.set_queue_us(absl::ToInt64Microseconds(report.queue_wait));
  timing.set_compute_us(absl::ToInt64Microseconds(report.compute));
  timing.set_batch_rows(report.batch_rows);
  timing.set_batch_requests(report.batch_requests);
}

}  // namespace

void ResponseWire::PrepareTensor(int field_number, const normd::v1::Tensor& like, size_t data_bytes,
                                 TensorField& field) {
  // The tensor's own fields but its data, encoded by protobuf; the data field then goes last (the
  // wire format lets a message's fields come in any order).
  normd::v1::Tensor meta;
  CopyDtypeAndShape(like, meta);
  const std::string meta_bytes = meta.SerializeAsString();
  const size_t message_bytes = meta_bytes.size() +
                               VarintSize(LengthDelimitedTag(kTensorDataField)) +
                               VarintSize(data_bytes) + data_bytes;

  field.head.clear();
  AppendVarint(LengthDelimitedTag(field_number), field.head);
  AppendVarint(message_bytes, field.head);
  field.head += meta_bytes;
  AppendVarint(LengthDelimitedTag(kTensorDataField), field.head);
  AppendVarint(data_bytes, field.head);

  field.pooled = data_bytes >= LargeBufferPool::kMinBytes;
  if (field.pooled) {
    field.bytes = LargeBufferPool::TakeSharedSlice(data_bytes, &field.data);
    return;
  }
  // malloc leaves the bytes as they are (std::string::resize would zero them first); the slice
  // frees them when gRPC drops its last reference, after sending, or when this object goes unsent.
  void* data = std::malloc(data_bytes == 0 ? 1 : data_bytes);
  if (data == nullptr) throw std::bad_alloc();
  // (A lambda, not std::free itself: the standard does not promise that its address may be taken.)
  field.bytes = grpc::Slice(data, data_bytes, [](void* bytes) { std::free(bytes); });
  field.data = data;
}

void ResponseWire::PrepareRegionTensor(int field_number, const normd::v1::Tensor& like,
                                       const normd::v1::RegionReference& region,
                                       TensorField& field) {
  normd::v1::Tensor meta;
  CopyDtypeAndShape(like, meta);
  *meta.mutable_region() = region;
  const std::string meta_bytes = meta.SerializeAsString();
  field.head.clear();
  AppendVarint(LengthDelimitedTag(field_number), field.head);
  AppendVarint(meta_bytes.size(), field.head);
  field.head += meta_bytes;
  field.in_region = true;
}

void ResponseWire::Prepare(const normd::v1::NormalizeRequest& request, int64_t data_bytes,
                           bool with_residual_out, const normd::v1::RegionReference* output_region,
                           const normd::v1::RegionReference* residual_out_region) {
  const auto bytes = static_cast<size_t>(data_bytes);
  if (output_region != nullptr) {
    PrepareRegionTensor(kResponseOutputField, request.input(), *output_region, output_);
  } else {
    PrepareTensor(kResponseOutputField, request.input(), bytes, output_);
  }
  if (with_residual_out && residual_out_region != nullptr) {
    PrepareRegionTensor(kResponseResidualOutField, request.residual(), *residual_out_region,
                        residual_out_);
  } else if (with_residual_out) {
    PrepareTensor(kResponseResidualOutField, request.residual(), bytes, residual_out_);
  }
  request_id_ = request.request_id();
}

grpc::ByteBuffer ResponseWire::Finish(const LaunchReport& report) {
  // request_id and timing, encoded by protobuf as a response of their own: concatenated messages
  // parse as one with the fields of both.
  normd::v1::NormalizeResponse rest;
  rest.set_request_id(std::move(request_id_));
  FillTiming(report, *rest.mutable_timing());

  std::vector<grpc::Slice> slices;
  slices.reserve(5);
  for (TensorField* field : {&output_, &residual_out_}) {
    if (field->in_region) {
      slices.emplace_back(field->head);
      field->in_region = false;
      continue;
    }
    if (field->data == nullptr) continue;
    if (field->pooled) LargeBufferPool::ReleaseWrites(field->data);
    slices.emplace_back(field->head);
    slices.push_back(std::move(field->bytes));
    field->data = nullptr;
  }
  slices.emplace_back(rest.SerializeAsString());
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace normd
