// Normalize through the real normd (CPU backend) on loopback: values against the fp64 reference for
// every dtype, with and without residual, by inline weight and by weight_id; the server's info and
// health; content-addressed weight ids.
#include <gtest/gtest.h>

#include <random>

#include "grpc/health/v1/health.grpc.pb.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/http_get.h"
#include "tests/integration/suite_normd.h"
#include "tests/integration/tensor_util.h"

namespace normd::testing {
namespace {

class NormalizeTest : public SuiteNormdTest<NormalizeTest> {
 protected:
  void SetUp() override {
    SuiteNormdTest::SetUp();
    stub_ = normd::v1::Normalizer::NewStub(server_->NewChannel());
  }

  grpc::Status Normalize(const normd::v1::NormalizeRequest& request,
                         normd::v1::NormalizeResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub_->Normalize(&context, request, response);
  }

  std::unique_ptr<normd::v1::Normalizer::Stub> stub_;
};

TEST_F(NormalizeTest, HealthIsServing) {
  auto health = grpc::health::v1::Health::NewStub(server_->NewChannel());
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(health->Check(&context, request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(NormalizeTest, SeedLessonExample) {
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = MakeTensor(DType::kFloat32, {1, 2}, {3.0f, 4.0f});
  *request.mutable_weight() = MakeTensor(DType::kFloat32, {2}, {1.0f, 2.0f});
  request.set_eps(0.0f);
  request.set_request_id("seed");
  normd::v1::NormalizeResponse response;
  ASSERT_TRUE(Normalize(request, &response).ok());
  const std::vector<float> y = DecodeTensor(response.output());
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 0.848528f, 1e-6);
  EXPECT_NEAR(y[1], 2.262742f, 1e-6);
  EXPECT_EQ(response.request_id(), "seed");
  EXPECT_EQ(response.timing().batch_requests(), 1);
  EXPECT_EQ(response.timing().batch_rows(), 1);
  EXPECT_FALSE(response.has_residual_out());
}

TEST_F(NormalizeTest, AllZeroRowGivesZerosAndNanStaysInItsRow) {
  normd::v1::NormalizeRequest request;
  std::vector<float> x = {0, 0, 0, 0, 1, NAN, 2, 3, 1, 2, 3, 4};
  *request.mutable_input() = MakeTensor(DType::kBFloat16, {3, 4}, x);
  *request.mutable_weight() = MakeTensor(DType::kFloat32, {4}, {1, 1, 1, 1});
  request.set_eps(1e-6f);
  normd::v1::NormalizeResponse response;
  ASSERT_TRUE(Normalize(request, &response).ok());
  const std::vector<float> y = DecodeTensor(response.output());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], 0.0f) << i;
  EXPECT_TRUE(std::isnan(y[4]));
  for (int i = 8; i < 12; ++i) EXPECT_TRUE(std::isfinite(y[i])) << i;
}

struct ValueCase {
  DType dtype;
  DType weight_dtype;
  bool residual;
  float weight_offset;
  int64_t rows;
  int64_t hidden;
};

class NormalizeValuesTest : public NormalizeTest,
                            public ::testing::WithParamInterface<ValueCase> {};

TEST_P(NormalizeValuesTest, MatchesReference) {
  const ValueCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.rows * 7919 + c.hidden));
  normd::v1::NormalizeRequest request =
      MakeRequest(c.dtype, c.rows, c.hidden, c.residual, rng, c.weight_dtype);
  request.set_weight_offset(c.weight_offset);
  request.set_eps(1e-5f);
  normd::v1::NormalizeResponse response;
  const grpc::Status status = Normalize(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(CompareWithReference(request, response), "");
}

std::vector<ValueCase> AllValueCases() {
  std::vector<ValueCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType weight_dtype : {dtype, DType::kFloat32}) {
      for (bool residual : {false, true}) {
        for (float offset : {0.0f, 1.0f}) {
          cases.push_back({dtype, weight_dtype, residual, offset, 19, 111});
          cases.push_back({dtype, weight_dtype, residual, offset, 3, 4096});
        }
      }
      if (weight_dtype == DType::kFloat32) break;  // float32 input: one weight dtype
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, NormalizeValuesTest, ::testing::ValuesIn(AllValueCases()),
                         [](const ::testing::TestParamInfo<ValueCase>& info) {
                           const ValueCase& c = info.param;
                           return std::string(DTypeName(c.dtype)) + "_w" +
                                  DTypeName(c.weight_dtype) +
                                  (c.residual ? "_residual" : "_plain") +
                                  (c.weight_offset != 0 ? "_offset1" : "") + "_" +
                                  std::to_string(c.rows) + "x" + std::to_string(c.hidden);
                         });

// Tensors of 32 MiB: their responses are written into buffers kept from earlier ones
// (server/core/large_buffer_pool.h). Two requests in a row with different values, the second with a
// residual: both must match the reference (no bytes of the first left in the second), and /metrics
// must show buffers handed out again.
TEST_F(NormalizeTest, ThirtyTwoMebibyteResponsesMatchTheReferenceInReusedBuffers) {
  for (const bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "with a residual" : "plain");
    std::mt19937 rng(residual ? 32 : 23);
    normd::v1::NormalizeRequest request = MakeRequest(DType::kBFloat16, 4096, 4096, residual, rng);
    normd::v1::NormalizeResponse response;
    const grpc::Status status = Normalize(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.output().data().size(), size_t{32} << 20);
    EXPECT_EQ(CompareWithReference(request, response), "");
  }
  absl::StatusOr<std::string> metrics = HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_NE(metrics->find("normd_response_pool_idle_bytes"), std::string::npos);
  const std::string reused_series = "normd_response_pool_takes_total{source=\"reused\"} ";
  const size_t at = metrics->find(reused_series);
  ASSERT_NE(at, std::string::npos) << *metrics;
  EXPECT_GE(std::stod(metrics->substr(at + reused_series.size(), 20)), 1)
      << "no buffer was handed out a second time";
}

TEST_F(NormalizeTest, ThreeDimensionalInputKeepsItsShape) {
  std::mt19937 rng(5);
  normd::v1::NormalizeRequest request = MakeRequest(DType::kFloat16, 6, 64, true, rng);
  request.mutable_input()->clear_shape();
  for (int64_t d : {2, 3, 64}) request.mutable_input()->add_shape(d);
  *request.mutable_residual()->mutable_shape() = request.input().shape();
  normd::v1::NormalizeResponse response;
  ASSERT_TRUE(Normalize(request, &response).ok());
  ASSERT_EQ(response.output().shape_size(), 3);
  EXPECT_EQ(response.output().shape(1), 3);
  EXPECT_EQ(CompareWithReference(request, response), "");
}

TEST_F(NormalizeTest, WeightIdMatchesInlineWeight) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    std::mt19937 rng(17 + static_cast<int>(dtype));
    normd::v1::NormalizeRequest request =
        MakeRequest(dtype, 5, 300, dtype == DType::kBFloat16, rng, dtype);
    const normd::v1::Tensor weight = request.weight();

    normd::v1::RegisterWeightRequest reg;
    *reg.mutable_weight() = weight;
    normd::v1::RegisterWeightResponse reg_response;
    grpc::ClientContext reg_context;
    ASSERT_TRUE(stub_->RegisterWeight(&reg_context, reg, &reg_response).ok());
    ASSERT_FALSE(reg_response.weight_id().empty());

    request.set_weight_id(reg_response.weight_id());  // replaces the inline weight (oneof)
    ASSERT_FALSE(request.has_weight());
    normd::v1::NormalizeResponse response;
    const grpc::Status status = Normalize(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(CompareWithReference(request, response, &weight), "") << DTypeName(dtype);
  }
}

TEST_F(NormalizeTest, WeightIdsAreContentAddressed) {
  auto register_weight = [&](const normd::v1::Tensor& w) {
    normd::v1::RegisterWeightRequest reg;
    *reg.mutable_weight() = w;
    normd::v1::RegisterWeightResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(stub_->RegisterWeight(&context, reg, &response).ok());
    return response.weight_id();
  };
  const std::vector<float> values = {1, 2, 3, 4};
  const std::string a = register_weight(MakeTensor(DType::kFloat32, {4}, values));
  EXPECT_EQ(register_weight(MakeTensor(DType::kFloat32, {4}, values)), a);
  EXPECT_NE(register_weight(MakeTensor(DType::kBFloat16, {4}, values)), a);
  EXPECT_NE(register_weight(MakeTensor(DType::kFloat32, {4}, {1, 2, 3, 5})), a);
}

TEST_F(NormalizeTest, ServerInfoDescribesTheBackendAndLimits) {
  grpc::ClientContext context;
  normd::v1::ServerInfo info;
  ASSERT_TRUE(stub_->GetServerInfo(&context, normd::v1::GetServerInfoRequest(), &info).ok());
  EXPECT_EQ(info.backend(), TestBackend());
  EXPECT_FALSE(info.version().empty());
  ASSERT_GE(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).kind(), TestBackend());
  EXPECT_GT(info.devices(0).memory_bytes(), 0);
  EXPECT_EQ(info.max_hidden(), 65536);
  EXPECT_EQ(info.max_request_bytes(), int64_t{256} << 20);
  EXPECT_EQ(info.max_batch_rows(), 8192);
}

}  // namespace
}  // namespace normd::testing
