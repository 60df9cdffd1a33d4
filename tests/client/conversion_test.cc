// The client's marshalling and dtype conversions (kernels/dtype.h, used by EncodeTensor): round to
// nearest even, NaN and Inf preserved, fp16 subnormals and overflow; and the .npy reader/writer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "client/npy.h"
#include "client/tensor.h"

namespace normd {
namespace {

struct ConversionCase {
  const char* name;
  float value;
  DType dtype;
  uint16_t bits;
};

constexpr float kInf = std::numeric_limits<float>::infinity();

const ConversionCase kCases[] = {
    {"bf16 one", 1.0f, DType::kBFloat16, 0x3F80},
    {"bf16 tie rounds to even (down)", 1.00390625f, DType::kBFloat16, 0x3F80},  // 1 + 2^-8
    {"bf16 tie rounds to even (up)", 1.01171875f, DType::kBFloat16, 0x3F82},    // 1 + 3 * 2^-8
    {"bf16 above the tie rounds up", 1.0040f, DType::kBFloat16, 0x3F81},
    {"bf16 -inf", -kInf, DType::kBFloat16, 0xFF80},
    {"bf16 overflow to inf", 3.4028235e38f, DType::kBFloat16, 0x7F80},
    {"fp16 one", 1.0f, DType::kFloat16, 0x3C00},
    {"fp16 tie rounds to even (down)", 1.00048828125f, DType::kFloat16, 0x3C00},  // 1 + 2^-11
    {"fp16 tie rounds to even (up)", 1.00146484375f, DType::kFloat16, 0x3C02},    // 1 + 3 * 2^-11
    {"fp16 max", 65504.0f, DType::kFloat16, 0x7BFF},
    {"fp16 overflow to inf", 65520.0f, DType::kFloat16, 0x7C00},
    {"fp16 smallest subnormal", 5.9604645e-8f, DType::kFloat16, 0x0001},
    {"fp16 underflow to zero", 2.0e-8f, DType::kFloat16, 0x0000},
    {"fp16 -inf", -kInf, DType::kFloat16, 0xFC00},
    {"fp16 negative zero", -0.0f, DType::kFloat16, 0x8000},
};

TEST(ConversionTest, TableOfValues) {
  for (const ConversionCase& c : kCases) {
    SCOPED_TRACE(c.name);
    const float value[] = {c.value};
    EXPECT_EQ(FloatsToBits(value, c.dtype)[0], c.bits);
    // And back, exactly, when the value is representable.
    const uint16_t bits[] = {c.bits};
    const float back = BitsToFloats(bits, c.dtype)[0];
    if (FloatsToBits(std::vector<float>{back}, c.dtype)[0] != c.bits) ADD_FAILURE() << "round trip";
  }
}

TEST(ConversionTest, NanStaysNan) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const float nan[] = {std::numeric_limits<float>::quiet_NaN(),
                         -std::numeric_limits<float>::quiet_NaN()};
    const std::vector<uint16_t> bits = FloatsToBits(nan, dtype);
    const std::vector<float> back = BitsToFloats(bits, dtype);
    EXPECT_TRUE(std::isnan(back[0]));
    EXPECT_TRUE(std::isnan(back[1]));
  }
}

// Every fp16 and bf16 bit pattern widens to float and narrows back to itself (NaNs stay NaN).
TEST(ConversionTest, EveryBitPatternRoundTrips) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const std::vector<float> wide = BitsToFloats(all, dtype);
    const std::vector<uint16_t> narrow = FloatsToBits(wide, dtype);
    for (size_t i = 0; i < all.size(); ++i) {
      if (std::isnan(wide[i])) {
        EXPECT_TRUE(std::isnan(BitsToFloats(std::vector<uint16_t>{narrow[i]}, dtype)[0])) << i;
      } else {
        ASSERT_EQ(narrow[i], all[i]) << DTypeName(dtype) << " " << i;
      }
    }
  }
}

TEST(EncodeTensorTest, ConvertsIntoTheMessageBytes) {
  const std::vector<float> x = {1.0f, -2.0f, 0.5f, 65520.0f};
  normd::v1::Tensor proto;
  ASSERT_TRUE(EncodeTensor(TensorView::Float32(x, {2, 2}), DType::kFloat16, &proto).ok());
  EXPECT_EQ(proto.dtype(), normd::v1::DTYPE_FLOAT16);
  ASSERT_EQ(proto.shape_size(), 2);
  ASSERT_EQ(proto.data().size(), 8u);
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(proto.data().data());
  EXPECT_EQ(bits[0], 0x3C00);
  EXPECT_EQ(bits[1], 0xC000);
  EXPECT_EQ(bits[3], 0x7C00);
  // Same dtype: a byte copy.
  ASSERT_TRUE(EncodeTensor(TensorView::Float32(x, {4}), DType::kFloat32, &proto).ok());
  EXPECT_EQ(std::memcmp(proto.data().data(), x.data(), 16), 0);
  // Decoding takes the bytes back by move.
  absl::StatusOr<Tensor> t = Tensor::FromProto(std::move(proto));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToFloat(), x);
  EXPECT_EQ(t->float32().size(), 4u);
  EXPECT_TRUE(t->bits().empty());
}

TEST(EncodeTensorTest, RejectsShapeMismatch) {
  const std::vector<float> x(6);
  normd::v1::Tensor proto;
  EXPECT_EQ(EncodeTensor(TensorView::Float32(x, {4, 2}), DType::kFloat32, &proto).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeTensor(TensorView::Float32(x, {6, 0}), DType::kFloat32, &proto).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NpyTest, RoundTripEveryDtype) {
  for (const char* descr : {"<f4", "<f2", "<u2"}) {
    NpyArray a;
    a.descr = descr;
    a.shape = {3, 5};
    a.data.assign(15 * a.item_size(), '\x3c');
    const std::string bytes = SerializeNpy(a);
    EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u);  // header padded like NumPy's
    absl::StatusOr<NpyArray> b = ParseNpy(bytes);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->descr, descr);
    EXPECT_EQ(b->shape, a.shape);
    EXPECT_EQ(b->data, a.data);
  }
  NpyArray one;
  one.descr = "<f4";
  one.shape = {7};
  one.data.assign(28, '\0');
  absl::StatusOr<NpyArray> parsed = ParseNpy(SerializeNpy(one));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->shape, std::vector<int64_t>{7});
}

TEST(NpyTest, RejectsWhatItCannotRead) {
  EXPECT_FALSE(ParseNpy("not an npy file").ok());
  NpyArray a;
  a.descr = "<i4";
  a.shape = {1};
  a.data = "abcd";
  EXPECT_FALSE(ParseNpy(SerializeNpy(a)).ok());
  a.descr = "<f4";
  std::string truncated = SerializeNpy(a);
  truncated.pop_back();
  EXPECT_FALSE(ParseNpy(truncated).ok());
}

}  // namespace
}  // namespace normd
