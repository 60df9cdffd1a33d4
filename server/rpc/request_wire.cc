#include "server/rpc/request_wire.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/wire_format.h"

namespace normd {
namespace {

using wire::kFixed32;
using wire::kFixed64;
using wire::kLengthDelimited;
using wire::kVarint;
// As the walk compares them with a tag's field number.
constexpr uint64_t kRequestInputField = wire::kRequestInputField;
constexpr uint64_t kRequestResidualField = wire::kRequestResidualField;
constexpr uint64_t kRequestWeightField = wire::kRequestWeightField;
constexpr uint64_t kRequestWeightIdField = wire::kRequestWeightIdField;
constexpr uint64_t kTensorDataField = wire::kTensorDataField;

// Reads the received slices as one stream of bytes, up to a limit (a submessage's end). Copyable: a
// copy remembers a position to read again from.
class SliceReader {
 public:
  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(&slices) {
    for (const grpc::Slice& s : slices) end_ += static_cast<int64_t>(s.size());
    Advance(0);  // past empty slices at the front, so that Here() addresses a byte
  }

  int64_t position() const { return position_; }
  int64_t remaining() const { return end_ - position_; }
  bool at_end() const { return position_ >= end_; }

  // This reader limited to its next `length` bytes (length <= remaining()).
  SliceReader Limited(int64_t length) const {
    SliceReader limited = *this;
    limited.end_ = position_ + length;
    return limited;
  }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_end()) return false;
      const uint8_t byte = static_cast<uint8_t>(*Here());
      Advance(1);
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // more than ten bytes: not a varint
  }

  // A tag and a length as protobuf reads them. Protobuf reads a tag from at most 5 bytes into 32
  // bits and a length from at most 5 bytes up to 2 GiB less 16, so an encoding padded with zero
  // groups or past those bounds may read differently there than as a 64-bit varint here. Real
  // encoders write neither; false for them, and the message is left to protobuf's whole parse.
  bool ReadTag(uint64_t* tag) { return ReadMinimalVarint(tag, kMaxTag); }
  bool ReadLength(uint64_t* length) {
    return ReadMinimalVarint(length, kMaxLength) && *length <= static_cast<uint64_t>(remaining());
  }

  bool Skip(int64_t bytes) {
    return Consume(bytes, [](const char*, int64_t) {});
  }

  // Appends the next `bytes` bytes to `out` (copying), or to `pieces` as pieces of the slices.
  bool ReadInto(int64_t bytes, std::string& out) {
    return Consume(
        bytes, [&out](const char* data, int64_t n) { out.append(data, static_cast<size_t>(n)); });
  }
  bool ReadPieces(int64_t bytes, TensorBytes& pieces) {
    return Consume(bytes, [&pieces](const char* data, int64_t n) { pieces.Append(data, n); });
  }

 private:
  static constexpr uint64_t kMaxTag = 0xffffffffu;
  static constexpr uint64_t kMaxLength = 0x7fffffffu - 16;  // protobuf's ReadSize bound

  // A varint in its shortest encoding and no larger than `max`.
  bool ReadMinimalVarint(uint64_t* value, uint64_t max) {
    const int64_t start = position_;
    return ReadVarint(value) && *value <= max &&
           static_cast<size_t>(position_ - start) == wire::VarintSize(*value);
  }

  const char* Here() const {
    return reinterpret_cast<const char*>((*slices_)[slice_].begin()) +
           static_cast<ptrdiff_t>(offset_);
  }
  int64_t LeftInSlice() const { return static_cast<int64_t>((*slices_)[slice_].size()) - offset_; }
  // Moves `bytes` forward within the current slice (at most to its end), then past empty slices.
  void Advance(int64_t bytes) {
    offset_ += bytes;
    position_ += bytes;
    while (slice_ < slices_->size() && offset_ == static_cast<int64_t>((*slices_)[slice_].size())) {
      ++slice_;
      offset_ = 0;
    }
  }
  template <typename Sink>
  bool Consume(int64_t bytes, Sink sink) {
    if (bytes < 0 || bytes > remaining()) return false;
    while (bytes > 0) {
      const int64_t step = std::min(bytes, LeftInSlice());
      sink(Here(), step);
      Advance(step);
      bytes -= step;
    }
    return true;
  }

  const std::vector<grpc::Slice>* slices_;
  size_t slice_ = 0;
  int64_t offset_ = 0;
  int64_t position_ = 0;
  int64_t end_ = 0;
};

using wire::AppendVarint;

// Moves past one field's value of wire type `wire_type`. Groups (3, 4) and the undefined types are
// left to protobuf: false.
bool SkipValue(SliceReader& in, uint64_t wire_type) {
  uint64_t value = 0;
  switch (wire_type) {
    case kVarint:
      return in.ReadVarint(&value);
    case kFixed64:
      return in.Skip(8);
    case kLengthDelimited:
      return in.ReadLength(&value) && in.Skip(static_cast<int64_t>(value));
    case kFixed32:
      return in.Skip(4);
    default:
      return false;
  }
}

// Copies one Tensor message's fields but its data into `skeleton`, and records the data (the last
// data field, as protobuf keeps) in `data` as pieces of the slices.
bool StripTensorData(SliceReader tensor, std::string& skeleton, TensorBytes& data, bool& has_data) {
  while (!tensor.at_end()) {
    SliceReader field = tensor;
    uint64_t tag = 0;
    if (!tensor.ReadTag(&tag)) return false;
    if ((tag >> 3) == kTensorDataField && (tag & 7) == kLengthDelimited) {
      uint64_t length = 0;
      if (!tensor.ReadLength(&length)) return false;
      data = TensorBytes::Empty();
      has_data = true;
      if (!tensor.ReadPieces(static_cast<int64_t>(length), data)) return false;
      continue;
    }
    if (!SkipValue(tensor, tag & 7)) return false;
    if (!field.ReadInto(tensor.position() - field.position(), skeleton)) return false;
  }
  return true;
}

// INVALID_ARGUMENT for bytes that are not a request. Protobuf gives no reason for a parse it
// refuses (gRPC passes on InitializationErrorString, empty in proto3), so `why` is usually empty.
absl::Status NotARequest(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "not a normd.v1.NormalizeRequest (", why.empty() ? "protobuf could not parse it" : why, ")"));
}

}  // namespace

absl::Status RequestWire::Parse(const grpc::ByteBuffer& bytes) {
  slices_.clear();
  if (bytes.Dump(&slices_).ok()) {
    switch (ParseSkeleton()) {
      case Skeleton::kParsed:
        return absl::OkStatus();
      case Skeleton::kRefused:
        // The skeleton is the message less two complete `bytes` fields: protobuf refuses both or
        // neither (the fuzz target holds the two parses to that), so the whole parse is spared.
        slices_.clear();
        message_.Clear();
        return NotARequest("");
      case Skeleton::kLeftToProtobuf:
        break;
    }
  }
  slices_.clear();
  return ParseWhole(bytes);
}

RequestWire::Skeleton RequestWire::ParseSkeleton() {
  SliceReader in(slices_);
  std::string skeleton;
  // Each tensor field's data as stripped so far, and whether a data field was seen.
  struct Stripped {
    TensorBytes data;
    bool seen = false;
  } input_data, residual_data, weight_data;
  while (!in.at_end()) {
    SliceReader field = in;
    uint64_t tag = 0;
    if (!in.ReadTag(&tag)) return Skeleton::kLeftToProtobuf;
    const uint64_t number = tag >> 3;
    const bool length_delimited = (tag & 7) == kLengthDelimited;
    // A weight_id replaces the oneof's weight with everything parsed into it so far.
    if (number == kRequestWeightIdField && length_delimited) weight_data = Stripped{};
    if ((number == kRequestInputField || number == kRequestResidualField ||
         number == kRequestWeightField) &&
        length_delimited) {
      uint64_t length = 0;
      if (!in.ReadLength(&length)) return Skeleton::kLeftToProtobuf;
      std::string tensor;
      Stripped& stripped = number == kRequestInputField      ? input_data
                           : number == kRequestResidualField ? residual_data
                                                             : weight_data;
      if (!StripTensorData(in.Limited(static_cast<int64_t>(length)), tensor, stripped.data,
                           stripped.seen)) {
        return Skeleton::kLeftToProtobuf;
      }
      in.Skip(static_cast<int64_t>(length));
      AppendVarint(tag, skeleton);
      AppendVarint(tensor.size(), skeleton);
      skeleton += tensor;
      continue;
    }
    if (!SkipValue(in, tag & 7)) return Skeleton::kLeftToProtobuf;
    if (!field.ReadInto(in.position() - field.position(), skeleton))
      return Skeleton::kLeftToProtobuf;
  }
  // Protobuf's own checks and merges on everything else.
  if (!message_.ParseFromString(skeleton)) return Skeleton::kRefused;
  // A field protobuf did not see (or, for the weight, replaced) is absent; one seen without data
  // is present and empty.
  const auto data_of = [](bool field_present, Stripped& stripped) {
    if (!field_present) return TensorBytes();
    return stripped.seen ? std::move(stripped.data) : TensorBytes::Empty();
  };
  input_ = data_of(true, input_data);
  residual_ = data_of(message_.has_residual(), residual_data);
  weight_ = data_of(message_.has_weight(), weight_data);
  data_in_slices_ = true;
  return Skeleton::kParsed;
}

absl::Status RequestWire::ParseWhole(const grpc::ByteBuffer& bytes) {
  message_.Clear();
  data_in_slices_ = false;
  grpc::ByteBuffer parsed_from(
      bytes);  // shares the slices: Deserialize empties the buffer it is given
  if (grpc::Status parsed = grpc::SerializationTraits<normd::v1::NormalizeRequest>::Deserialize(
          &parsed_from, &message_);
      !parsed.ok()) {
    return NotARequest(parsed.error_message());
  }
  input_ = InputDataIn(message_);
  residual_ = ResidualDataIn(message_);
  weight_ = WeightDataIn(message_);
  return absl::OkStatus();
}

}  // namespace normd
