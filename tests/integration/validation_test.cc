// Every bad input gets a clear gRPC error naming the field and the numbers, and normd keeps
// serving. One table: adding a case is one line.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/suite_normd.h"
#include "tests/integration/tensor_util.h"

namespace normd::testing {
namespace {

using normd::v1::NormalizeRequest;

struct BadRequest {
  const char* name;
  std::function<void(NormalizeRequest&)> mutate;
  grpc::StatusCode code;
  std::vector<std::string> message_parts;  // each must appear in the error message
};

const BadRequest kBadRequests[] = {
    {"input_missing",
     [](NormalizeRequest& r) { r.clear_input(); },
     grpc::INVALID_ARGUMENT,
     {"input", "missing"}},
    {"dtype_unspecified",
     [](NormalizeRequest& r) { r.mutable_input()->set_dtype(normd::v1::DTYPE_UNSPECIFIED); },
     grpc::INVALID_ARGUMENT,
     {"input.dtype", "unspecified"}},
    {"dtype_unknown",
     [](NormalizeRequest& r) { r.mutable_input()->set_dtype(static_cast<normd::v1::DType>(9)); },
     grpc::INVALID_ARGUMENT,
     {"input.dtype", "9"}},
    {"shape_empty",
     [](NormalizeRequest& r) { r.mutable_input()->clear_shape(); },
     grpc::INVALID_ARGUMENT,
     {"input.shape", "empty"}},
    {"shape_zero_dim",
     [](NormalizeRequest& r) { r.mutable_input()->set_shape(0, 0); },
     grpc::INVALID_ARGUMENT,
     {"input.shape[0] = 0", "positive"}},
    {"shape_negative_dim",
     [](NormalizeRequest& r) { r.mutable_input()->set_shape(1, -8); },
     grpc::INVALID_ARGUMENT,
     {"input.shape[1] = -8"}},
    {"shape_overflows_int64",
     [](NormalizeRequest& r) {
       r.mutable_input()->set_shape(0, int64_t{1} << 40);
       r.mutable_input()->set_shape(1, int64_t{1} << 40);
     },
     grpc::INVALID_ARGUMENT,
     {"input.shape", "int64"}},
    {"shape_of_many_dimensions_is_cut_in_the_message",
     [](NormalizeRequest& r) {
       r.mutable_input()->clear_shape();
       for (int i = 0; i < 1000; ++i) r.mutable_input()->add_shape(1);
     },
     grpc::INVALID_ARGUMENT,
     {"input.data", "[1, 1, 1, 1, 1, 1, 1, 1, ... (1000 dimensions)]"}},
    {"data_too_short",
     [](NormalizeRequest& r) { r.mutable_input()->mutable_data()->resize(10); },
     grpc::INVALID_ARGUMENT,
     {"input.data", "10 bytes", "256"}},
    {"data_too_long",
     [](NormalizeRequest& r) { r.mutable_input()->mutable_data()->append("xx"); },
     grpc::INVALID_ARGUMENT,
     {"input.data", "258 bytes", "256"}},
    {"hidden_over_max",
     [](NormalizeRequest& r) {
       r.mutable_input()->clear_shape();
       r.mutable_input()->add_shape(1);
       r.mutable_input()->add_shape(70000);
       r.mutable_input()->mutable_data()->resize(70000 * 2);
     },
     grpc::INVALID_ARGUMENT,
     {"hidden", "70000", "65536"}},
    {"weight_missing",
     [](NormalizeRequest& r) { r.clear_weight(); },
     grpc::INVALID_ARGUMENT,
     {"weight", "missing"}},
    {"weight_wrong_length",
     [](NormalizeRequest& r) {
       r.mutable_weight()->set_shape(0, 16);
       r.mutable_weight()->mutable_data()->resize(16 * 4);
     },
     grpc::INVALID_ARGUMENT,
     {"weight", "16", "32"}},
    {"weight_not_1d",
     [](NormalizeRequest& r) {
       r.mutable_weight()->clear_shape();
       r.mutable_weight()->add_shape(2);
       r.mutable_weight()->add_shape(16);
     },
     grpc::INVALID_ARGUMENT,
     {"weight", "[2, 16]", "1-D"}},
    {"weight_other_dtype",
     [](NormalizeRequest& r) {
       r.mutable_weight()->set_dtype(normd::v1::DTYPE_BFLOAT16);
       r.mutable_weight()->mutable_data()->resize(32 * 2);
     },
     grpc::INVALID_ARGUMENT,
     {"weight", "bfloat16", "float16", "float32"}},
    {"weight_data_wrong",
     [](NormalizeRequest& r) { r.mutable_weight()->mutable_data()->resize(3); },
     grpc::INVALID_ARGUMENT,
     {"weight.data", "3 bytes"}},
    {"weight_id_unknown",
     [](NormalizeRequest& r) { r.set_weight_id("w-nope"); },
     grpc::NOT_FOUND,
     {"weight_id", "w-nope"}},
    {"residual_other_dtype",
     [](NormalizeRequest& r) {
       r.mutable_residual()->set_dtype(normd::v1::DTYPE_FLOAT32);
       r.mutable_residual()->mutable_data()->resize(4 * 32 * 4);
     },
     grpc::INVALID_ARGUMENT,
     {"residual.dtype", "DTYPE_FLOAT32", "DTYPE_FLOAT16"}},
    {"residual_other_shape",
     [](NormalizeRequest& r) {
       r.mutable_residual()->set_shape(0, 2);
       r.mutable_residual()->mutable_data()->resize(2 * 32 * 2);
     },
     grpc::INVALID_ARGUMENT,
     {"residual.shape", "[2, 32]", "[4, 32]"}},
    {"residual_data_wrong",
     [](NormalizeRequest& r) { r.mutable_residual()->mutable_data()->resize(7); },
     grpc::INVALID_ARGUMENT,
     {"residual.data", "7 bytes"}},
    {"eps_nan",
     [](NormalizeRequest& r) { r.set_eps(NAN); },
     grpc::INVALID_ARGUMENT,
     {"eps", "nan"}},
    {"eps_infinite",
     [](NormalizeRequest& r) { r.set_eps(INFINITY); },
     grpc::INVALID_ARGUMENT,
     {"eps", "inf"}},
    {"eps_negative",
     [](NormalizeRequest& r) { r.set_eps(-1e-6f); },
     grpc::INVALID_ARGUMENT,
     {"eps", "-1e-06"}},
    {"weight_offset_nan",
     [](NormalizeRequest& r) { r.set_weight_offset(NAN); },
     grpc::INVALID_ARGUMENT,
     {"weight_offset", "nan"}},
    {"weight_offset_infinite",
     [](NormalizeRequest& r) { r.set_weight_offset(-INFINITY); },
     grpc::INVALID_ARGUMENT,
     {"weight_offset", "inf"}},
};

// The table runs against two normds: one without a memory budget, where gRPC reads a Normalize
// call's message whole and the typed handler validates it, and one with --max-memory-bytes, where
// normd reads the message itself once the budget has room (normalize_call_reactor.h). Both must
// answer every case the same way.
template <typename Suite>
class ValidationFixture : public SuiteNormdTest<Suite, ::testing::TestWithParam<BadRequest>> {
 protected:
  // A valid fp16 request of 4 x 32 with a residual: each case breaks one thing about it.
  static NormalizeRequest ValidRequest() {
    std::mt19937 rng(3);
    return MakeRequest(DType::kFloat16, 4, 32, /*residual=*/true, rng, DType::kFloat32);
  }

  static grpc::Status Call(const NormalizeRequest& request,
                           normd::v1::NormalizeResponse* response) {
    auto stub = normd::v1::Normalizer::NewStub(Suite::server_->NewChannel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub->Normalize(&context, request, response);
  }

  static void ExpectRefusedThenServing(const BadRequest& bad) {
    NormalizeRequest request = ValidRequest();
    bad.mutate(request);
    normd::v1::NormalizeResponse response;
    const grpc::Status status = Call(request, &response);
    EXPECT_EQ(status.error_code(), bad.code) << status.error_message();
    for (const std::string& part : bad.message_parts) {
      EXPECT_NE(status.error_message().find(part), std::string::npos)
          << "message '" << status.error_message() << "' lacks '" << part << "'";
    }
    // The server is still up and right.
    const NormalizeRequest good = ValidRequest();
    normd::v1::NormalizeResponse good_response;
    ASSERT_TRUE(Call(good, &good_response).ok());
    EXPECT_EQ(CompareWithReference(good, good_response), "");
  }

  static void ExpectOverMaxRequestBytesRefused() {
    std::mt19937 rng(4);
    // 2 x 300K fp32 = 2.4 MB, over the 1 MiB --max-request-bytes these servers run with.
    const NormalizeRequest big = MakeRequest(DType::kFloat32, 2, 300000, false, rng);
    normd::v1::NormalizeResponse response;
    const grpc::Status status = Call(big, &response);
    EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << status.error_message();
    normd::v1::NormalizeResponse good_response;
    EXPECT_TRUE(Call(ValidRequest(), &good_response).ok());
  }
};

class ValidationTest : public ValidationFixture<ValidationTest> {
 public:
  static std::vector<std::string> SuiteFlags() {
    return {"--backend=cpu", "--max-request-bytes=1048576"};
  }
};

class ValidationUnderBudgetTest : public ValidationFixture<ValidationUnderBudgetTest> {
 public:
  static std::vector<std::string> SuiteFlags() {
    return {"--backend=cpu", "--max-request-bytes=1048576", "--max-memory-bytes=67108864"};
  }
};

std::string CaseName(const ::testing::TestParamInfo<BadRequest>& info) { return info.param.name; }

TEST_P(ValidationTest, AnswersWithFieldAndNumbersThenKeepsServing) {
  ExpectRefusedThenServing(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Table, ValidationTest, ::testing::ValuesIn(kBadRequests), CaseName);

TEST_P(ValidationUnderBudgetTest, AnswersWithFieldAndNumbersThenKeepsServing) {
  ExpectRefusedThenServing(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Table, ValidationUnderBudgetTest, ::testing::ValuesIn(kBadRequests),
                         CaseName);

TEST_F(ValidationTest, RequestOverMaxRequestBytesIsResourceExhausted) {
  ExpectOverMaxRequestBytesRefused();
}

TEST_F(ValidationUnderBudgetTest, RequestOverMaxRequestBytesIsResourceExhausted) {
  ExpectOverMaxRequestBytesRefused();
}

TEST_F(ValidationTest, RegisterWeightRejectsBadTensors) {
  auto stub = normd::v1::Normalizer::NewStub(server_->NewChannel());
  normd::v1::RegisterWeightRequest request;
  normd::v1::RegisterWeightResponse response;
  {
    grpc::ClientContext context;
    const grpc::Status status = stub->RegisterWeight(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("weight"), std::string::npos);
  }
  *request.mutable_weight() = MakeTensor(DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  {
    grpc::ClientContext context;
    const grpc::Status status = stub->RegisterWeight(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("1-D"), std::string::npos) << status.error_message();
  }
}

}  // namespace
}  // namespace normd::testing
