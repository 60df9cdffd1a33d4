// RequestWire (server/rpc/request_wire.h) must decode exactly what protobuf decodes, keeping the
// input's, residual's and inline weight's data in the received slices for what protobuf's
// serializer writes (the fast path, checked with data_in_slices() so that a silent fallback fails
// the test), and handing anything odd to protobuf: repeated tensor fields (merged, last data wins),
// unknown fields, a group, invalid UTF-8 in a string, truncated bytes.
// tests/fuzz/fuzz_normalize_request.cc compares the two on arbitrary bytes.
#include "server/rpc/request_wire.h"

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace normd {
namespace {

// `bytes` in slices of `piece` bytes, as gRPC hands a received message over.
grpc::ByteBuffer InSlices(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Gathered(const TensorBytes& bytes) {
  std::string out(static_cast<size_t>(bytes.size()), '\0');
  bytes.CopyTo(out.data());
  return out;
}

normd::v1::Tensor Tensor(normd::v1::DType dtype, std::vector<int64_t> shape, size_t bytes,
                         std::mt19937& random) {
  normd::v1::Tensor t;
  t.set_dtype(dtype);
  for (int64_t d : shape) t.add_shape(d);
  std::string data(bytes, '\0');
  for (char& c : data) c = static_cast<char>(random());
  t.set_data(std::move(data));
  return t;
}

// Parses `bytes` both ways and expects the same request; returns whether the wire kept the data in
// the slices.
bool ExpectSameAsProtobuf(const std::string& bytes, size_t piece) {
  normd::v1::NormalizeRequest expected;
  EXPECT_TRUE(expected.ParseFromString(bytes));
  RequestWire wire;
  const absl::Status parsed = wire.Parse(InSlices(bytes, piece));
  EXPECT_TRUE(parsed.ok()) << parsed;
  normd::v1::NormalizeRequest rebuilt = wire.message();
  EXPECT_EQ(wire.input_data().size(), static_cast<int64_t>(expected.input().data().size()));
  if (rebuilt.has_input()) rebuilt.mutable_input()->set_data(Gathered(wire.input_data()));
  EXPECT_EQ(wire.residual_data().present(), expected.has_residual());
  if (rebuilt.has_residual()) rebuilt.mutable_residual()->set_data(Gathered(wire.residual_data()));
  EXPECT_EQ(wire.weight_data().present(), expected.has_weight());
  if (rebuilt.has_weight()) {
    rebuilt.mutable_weight()->set_data(Gathered(wire.weight_data()));
  }
  EXPECT_EQ(rebuilt.SerializeAsString(), expected.SerializeAsString());
  return wire.data_in_slices();
}

TEST(RequestWireTest, ProtobufsOwnEncodingKeepsTheDataInTheSlices) {
  std::mt19937 random(1);
  for (const bool residual : {false, true}) {
    for (const bool inline_weight : {false, true}) {
      normd::v1::NormalizeRequest request;
      *request.mutable_input() =
          Tensor(normd::v1::DTYPE_BFLOAT16, {64, 4096}, 64 * 4096 * 2, random);
      if (residual)
        *request.mutable_residual() =
            Tensor(normd::v1::DTYPE_BFLOAT16, {64, 4096}, 64 * 4096 * 2, random);
      if (inline_weight) {
        *request.mutable_weight() = Tensor(normd::v1::DTYPE_FLOAT32, {4096}, 4096 * 4, random);
      } else {
        request.set_weight_id("sha256:abc");
      }
      request.set_eps(1e-6f);
      request.set_weight_offset(1.0f);
      request.set_request_id("r-1");
      const std::string bytes = request.SerializeAsString();
      // One slice; gRPC's 16 KiB frames; odd pieces that cut tags and lengths in two.
      for (const size_t piece : {bytes.size(), size_t{16384}, size_t{7}, size_t{1}}) {
        SCOPED_TRACE(testing::Message() << "residual " << residual << ", inline weight "
                                        << inline_weight << ", pieces of " << piece);
        EXPECT_TRUE(ExpectSameAsProtobuf(bytes, piece));
      }
      RequestWire wire;
      ASSERT_TRUE(wire.Parse(InSlices(bytes, 16384)).ok());
      EXPECT_GT(wire.input_data().piece_count(), 1u);  // spread over the slices, not gathered
      EXPECT_EQ(wire.input_data().contiguous(), nullptr);
      EXPECT_TRUE(wire.message().input().data().empty());
      EXPECT_TRUE(wire.message().weight().data().empty());  // not copied into the message
      if (inline_weight) {
        EXPECT_EQ(wire.weight_data().size(), 4096 * 4);
        // 16 KiB of weight in 16 KiB slices crosses a slice boundary: left in its two pieces,
        // not copied, as the input is.
        EXPECT_EQ(wire.weight_data().piece_count(), 2u);
        EXPECT_EQ(Gathered(wire.weight_data()), request.weight().data());
      }
    }
  }
}

// An inline weight inside one slice is read where it arrived, not copied.
TEST(RequestWireTest, WeightInOneSliceStaysInIt) {
  std::mt19937 random(5);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = Tensor(normd::v1::DTYPE_BFLOAT16, {1, 64}, 128, random);
  *request.mutable_weight() = Tensor(normd::v1::DTYPE_BFLOAT16, {64}, 128, random);
  const std::string bytes = request.SerializeAsString();
  const grpc::ByteBuffer buffer = InSlices(bytes, bytes.size());
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  RequestWire wire;
  ASSERT_TRUE(wire.Parse(buffer).ok());
  const char* begin = reinterpret_cast<const char*>(slices[0].begin());
  const char* weight = static_cast<const char*>(wire.weight_data().contiguous());
  ASSERT_NE(weight, nullptr);
  EXPECT_GE(weight, begin);
  EXPECT_LE(weight + 128, begin + slices[0].size());
  EXPECT_EQ(std::string(weight, 128), request.weight().data());
}

// weight and weight_id are a oneof: whichever comes last on the wire wins, and a weight that comes
// after a weight_id starts afresh, without the data of a weight before it.
TEST(RequestWireTest, WeightIdAndWeightReplaceEachOtherAsInProtobuf) {
  std::mt19937 random(6);
  normd::v1::NormalizeRequest input, weight, weight_without_data, id;
  *input.mutable_input() = Tensor(normd::v1::DTYPE_FLOAT32, {1, 4}, 16, random);
  *weight.mutable_weight() = Tensor(normd::v1::DTYPE_FLOAT32, {4}, 16, random);
  weight_without_data.mutable_weight()->set_dtype(normd::v1::DTYPE_FLOAT32);
  id.set_weight_id("sha256:abc");
  const std::string in = input.SerializeAsString(), w = weight.SerializeAsString(),
                    bare = weight_without_data.SerializeAsString(), i = id.SerializeAsString();
  for (const std::string& bytes :
       {in + w + i, in + i + w, in + w + i + bare, in + w + bare, in + w + w}) {
    SCOPED_TRACE(testing::Message() << "message of " << bytes.size() << " bytes");
    for (const size_t piece : {bytes.size(), size_t{3}})
      EXPECT_TRUE(ExpectSameAsProtobuf(bytes, piece));
  }
  RequestWire wire;
  ASSERT_TRUE(wire.Parse(InSlices(in + w + i + bare, 3)).ok());
  EXPECT_TRUE(wire.message().has_weight());
  EXPECT_EQ(wire.weight_data().size(), 0);  // the first weight's data went with the weight_id
}

TEST(RequestWireTest, DataInOneSliceIsContiguous) {
  std::mt19937 random(2);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = Tensor(normd::v1::DTYPE_FLOAT32, {2, 8}, 64, random);
  request.set_weight_id("w");
  const std::string bytes = request.SerializeAsString();
  RequestWire wire;
  ASSERT_TRUE(wire.Parse(InSlices(bytes, bytes.size())).ok());
  ASSERT_NE(wire.input_data().contiguous(), nullptr);
  EXPECT_EQ(std::string(static_cast<const char*>(wire.input_data().contiguous()), 64),
            request.input().data());
  EXPECT_FALSE(wire.residual_data().present());
}

TEST(RequestWireTest, RepeatedTensorFieldsMergeAsInProtobuf) {
  std::mt19937 random(3);
  normd::v1::NormalizeRequest first, second, third;
  *first.mutable_input() = Tensor(normd::v1::DTYPE_FLOAT32, {2}, 8, random);
  *second.mutable_input() =
      Tensor(normd::v1::DTYPE_FLOAT32, {3}, 12, random);        // shape appends, data wins
  third.mutable_input()->set_dtype(normd::v1::DTYPE_BFLOAT16);  // no data: the last stays
  normd::v1::NormalizeRequest empty_residual;
  empty_residual.mutable_residual();  // present, empty
  const std::string bytes = first.SerializeAsString() + second.SerializeAsString() +
                            third.SerializeAsString() + empty_residual.SerializeAsString();
  EXPECT_TRUE(ExpectSameAsProtobuf(bytes, 5));
  RequestWire wire;
  ASSERT_TRUE(wire.Parse(InSlices(bytes, 5)).ok());
  EXPECT_EQ(Gathered(wire.input_data()), second.input().data());
  EXPECT_TRUE(wire.residual_data().present());
  EXPECT_EQ(wire.residual_data().size(), 0);
}

TEST(RequestWireTest, UnknownFieldsAndOtherWireTypesAreKept) {
  std::mt19937 random(4);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = Tensor(normd::v1::DTYPE_FLOAT32, {4}, 16, random);
  std::string bytes = request.SerializeAsString();
  bytes += std::string("\x78\x05", 2);  // field 15, varint 5: unknown
  bytes += std::string("\x08\x01", 2);  // field 1 as a varint: unknown to protobuf too
  bytes += std::string("\x85\x01\x01\x02\x03\x04", 6);  // field 16, fixed32
  EXPECT_TRUE(ExpectSameAsProtobuf(bytes, 3));
}

TEST(RequestWireTest, OddEncodingsGoToProtobuf) {
  std::mt19937 random(5);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = Tensor(normd::v1::DTYPE_FLOAT32, {4}, 16, random);
  // A group (field 9, start and end): legal, left to protobuf.
  const std::string with_group = request.SerializeAsString() + std::string("\x4b\x4c", 2);
  EXPECT_FALSE(ExpectSameAsProtobuf(with_group, 4));
  // Invalid UTF-8 in request_id: protobuf refuses, and so does the wire, with protobuf's reason.
  const std::string bad_utf8 = request.SerializeAsString() + std::string("\x3a\x02\xc3\x28", 4);
  normd::v1::NormalizeRequest unused;
  ASSERT_FALSE(unused.ParseFromString(bad_utf8));
  RequestWire wire;
  const absl::Status status = wire.Parse(InSlices(bad_utf8, 3));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a normd.v1.NormalizeRequest"), std::string::npos) << status;
}

// Tags and lengths padded with zero groups. Protobuf reads a length from at most 5 bytes and a tag
// from at most 5, so a padding it accepts must decode the same here, and one it refuses (the fuzz
// target's find: a residual whose length 0 took 6 bytes) must be refused here too.
TEST(RequestWireTest, PaddedTagsAndLengthsDecodeAsInProtobuf) {
  std::mt19937 random(7);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = Tensor(normd::v1::DTYPE_FLOAT32, {4}, 16, random);
  const std::string plain = request.SerializeAsString();
  // Residual (field 5), length 0 written in 2 bytes; then its tag written in 2 bytes.
  EXPECT_FALSE(ExpectSameAsProtobuf(plain + std::string("\x2a\x80\x00", 3), 4));
  EXPECT_FALSE(ExpectSameAsProtobuf(plain + std::string("\xaa\x00\x00", 3), 4));
  // A tensor's data (field 3) of 2 bytes, its length written in 5 bytes.
  EXPECT_FALSE(
      ExpectSameAsProtobuf(plain + std::string("\x2a\x08\x1a\x82\x80\x80\x80\x00\x01\x02", 10), 3));
  for (const std::string& refused : {
           plain + std::string("\x2a\x80\x80\x80\x80\x80\x00", 7),  // length in 6 bytes
           plain + std::string("\xaa\x80\x80\x80\x80\x00\x00", 7),  // tag in 6 bytes
       }) {
    normd::v1::NormalizeRequest unused;
    ASSERT_FALSE(unused.ParseFromString(refused));
    RequestWire wire;
    EXPECT_EQ(wire.Parse(InSlices(refused, 3)).code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(RequestWireTest, TruncatedBytesAreRefused) {
  std::mt19937 random(6);
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = Tensor(normd::v1::DTYPE_BFLOAT16, {8, 64}, 1024, random);
  request.set_weight_id("w");
  const std::string bytes = request.SerializeAsString();
  for (const size_t cut : {size_t{1}, size_t{2}, size_t{5}, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    RequestWire wire;
    const absl::Status status = wire.Parse(InSlices(bytes.substr(0, cut), 16));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
}

}  // namespace
}  // namespace normd
