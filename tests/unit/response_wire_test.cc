// ResponseWire (server/rpc/response_wire.h) must produce bytes that protobuf parses as exactly the
// response normd used to build with protobuf itself: output and residual_out with the request's
// dtype, shape and the bytes written through output()/residual_out(), the request_id, and the
// launch's timing. The cases cover the lengths where a varint grows (127/128 bytes, 16 KiB),
// tensors of one element, shapes of several dimensions, an empty request_id, requests with and
// without a residual, and responses at and just under the size from which the tensors' buffers come
// from LargeBufferPool.
#include "server/rpc/response_wire.h"

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/core/large_buffer_pool.h"

namespace normd {
namespace {

std::string FlattenBytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices)
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return bytes;
}

normd::v1::Tensor RandomTensor(normd::v1::DType dtype, const std::vector<int64_t>& shape,
                               size_t data_bytes, std::mt19937_64& random) {
  normd::v1::Tensor tensor;
  tensor.set_dtype(dtype);
  for (int64_t d : shape) tensor.add_shape(d);
  std::string data(data_bytes, '\0');
  for (size_t i = 0; i < data_bytes; i += 8) {
    const uint64_t word = random();
    std::memcpy(&data[i], &word, std::min<size_t>(8, data_bytes - i));
  }
  tensor.set_data(std::move(data));
  return tensor;
}

struct Case {
  const char* name;
  normd::v1::DType dtype;
  std::vector<int64_t> shape;
  size_t data_bytes;
  bool residual;
  const char* request_id;
};

const Case kCases[] = {
    {"one fp32 element", normd::v1::DTYPE_FLOAT32, {1}, 4, false, "a"},
    {"one fp32 element with residual", normd::v1::DTYPE_FLOAT32, {1, 1}, 4, true, ""},
    {"127 bytes of data (one-byte length)", normd::v1::DTYPE_FLOAT32, {127}, 127, false, "x"},
    {"128 bytes of data (two-byte length)",
     normd::v1::DTYPE_BFLOAT16,
     {2, 32},
     128,
     true,
     "req-128"},
    {"16 KiB (three-byte length)", normd::v1::DTYPE_FLOAT16, {2, 4, 2048}, 16384, true, "id"},
    {"512 KiB, 64 x 4096 bf16", normd::v1::DTYPE_BFLOAT16, {64, 4096}, 64 * 4096 * 2, false, ""},
    {"32 MiB, 4096 x 4096 bf16: buffers from LargeBufferPool",
     normd::v1::DTYPE_BFLOAT16,
     {4096, 4096},
     LargeBufferPool::kMinBytes,
     true,
     "big"},
    {"one byte under that, from malloc",
     normd::v1::DTYPE_BFLOAT16,
     {1},
     LargeBufferPool::kMinBytes - 1,
     false,
     "odd"},
    {"three dimensions and a request_id of over 127 bytes",
     normd::v1::DTYPE_FLOAT32,
     {3, 1, 5},
     60,
     true,
     "request with a long id, longer than one hundred and twenty-seven bytes so that its length "
     "takes "
     "two bytes on the wire as well......"},
};

TEST(ResponseWireTest, ParsesAsTheResponseProtobufWouldHaveBuilt) {
  std::mt19937_64 random(11);
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    normd::v1::NormalizeRequest request;
    *request.mutable_input() = RandomTensor(c.dtype, c.shape, c.data_bytes, random);
    if (c.residual)
      *request.mutable_residual() = RandomTensor(c.dtype, c.shape, c.data_bytes, random);
    request.set_request_id(c.request_id);

    // What the executor would compute: here, any bytes, different for the two outputs.
    const normd::v1::Tensor output = RandomTensor(c.dtype, c.shape, c.data_bytes, random);
    const normd::v1::Tensor residual_out = RandomTensor(c.dtype, c.shape, c.data_bytes, random);
    const LaunchReport report{absl::Microseconds(17), absl::Microseconds(5), 321, 7};

    // As RequestWire hands it over: the tensors' data left in the received slices, not in the
    // message.
    request.mutable_input()->clear_data();
    if (c.residual) request.mutable_residual()->clear_data();
    ResponseWire wire;
    wire.Prepare(request, static_cast<int64_t>(c.data_bytes), c.residual);
    ASSERT_NE(wire.output(), nullptr);
    ASSERT_EQ(wire.residual_out() != nullptr, c.residual);
    std::memcpy(wire.output(), output.data().data(), c.data_bytes);
    if (c.residual) std::memcpy(wire.residual_out(), residual_out.data().data(), c.data_bytes);
    const grpc::ByteBuffer bytes = wire.Finish(report);

    normd::v1::NormalizeResponse expected;
    *expected.mutable_output() = output;
    if (c.residual) *expected.mutable_residual_out() = residual_out;
    expected.set_request_id(c.request_id);
    expected.mutable_timing()->set_queue_us(17);
    expected.mutable_timing()->set_compute_us(5);
    expected.mutable_timing()->set_batch_rows(321);
    expected.mutable_timing()->set_batch_requests(7);

    const std::string flat = FlattenBytes(bytes);
    normd::v1::NormalizeResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(flat));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, expected))
        << "parsed: " << parsed.ShortDebugString().substr(0, 300);
    // Nothing more than protobuf's own encoding: the same fields, in another order.
    EXPECT_EQ(flat.size(), expected.ByteSizeLong());
  }
}

TEST(ResponseWireTest, AResponseNeverFinishedFreesItsBuffers) {
  // Under ASan/LSan (CI's asan preset) a buffer kept alive past the object would be reported as a
  // leak.
  std::mt19937_64 random(12);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = RandomTensor(normd::v1::DTYPE_FLOAT32, {4, 256}, 4096, random);
  *request.mutable_residual() = RandomTensor(normd::v1::DTYPE_FLOAT32, {4, 256}, 4096, random);
  ResponseWire wire;
  wire.Prepare(request, 4096, /*with_residual_out=*/true);
  std::memset(wire.output(), 1, 4096);
  std::memset(wire.residual_out(), 2, 4096);
}

TEST(ResponseWireTest, ThirtyTwoMebibyteResponsesReuseTheBuffersOfEarlierOnes) {
  std::mt19937_64 random(14);
  normd::v1::NormalizeRequest request;
  const size_t bytes = LargeBufferPool::kMinBytes;
  *request.mutable_input() = RandomTensor(normd::v1::DTYPE_BFLOAT16, {4096, 4096}, bytes, random);
  request.mutable_input()->clear_data();
  LargeBufferPool& pool = LargeBufferPool::Shared();
  // Sent (finished, then the bytes dropped as gRPC drops them) and never finished, in turn: either
  // way the buffer goes back to the pool, and the next response of that size takes it.
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    const int64_t reused_before = pool.reused();
    {
      ResponseWire wire;
      wire.Prepare(request, static_cast<int64_t>(bytes), /*with_residual_out=*/false);
      std::memset(wire.output(), round, bytes);
      if (round % 2 == 0) {
        const grpc::ByteBuffer sent = wire.Finish({});
        EXPECT_GT(sent.Length(), bytes);
        EXPECT_LE(sent.Length(), bytes + 64) << "the tensor and a few bytes of fields";
      }
    }
    EXPECT_GE(pool.idle_bytes(), bytes);
    if (round > 0) EXPECT_EQ(pool.reused(), reused_before + 1) << "the previous round's buffer";
  }
}

TEST(ResponseWireTest, TheFinishedBytesOutliveTheWire) {
  std::mt19937_64 random(13);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = RandomTensor(normd::v1::DTYPE_BFLOAT16, {8, 512}, 8192, random);
  grpc::ByteBuffer bytes;
  {
    ResponseWire wire;
    wire.Prepare(request, 8192, /*with_residual_out=*/false);
    std::memset(wire.output(), 0x5a, 8192);
    bytes = wire.Finish({});
  }
  normd::v1::NormalizeResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(FlattenBytes(bytes)));
  EXPECT_EQ(parsed.output().data(), std::string(8192, '\x5a'));
  EXPECT_FALSE(parsed.has_residual_out());
}

}  // namespace
}  // namespace normd
