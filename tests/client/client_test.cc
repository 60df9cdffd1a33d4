// normd::Client against the real normd on loopback: every call style and dtype checked against the
// fp64 reference, weight re-registration after a restart, deadlines, and round_robin with retries
// over two replicas while one of them stops.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/normd_client.h"
#include "tests/client/client_test_util.h"
#include "tests/integration/http_get.h"
#include "tests/integration/suite_normd.h"
#include "tests/wait_until.h"

namespace normd::testing {
namespace {

struct Data {
  std::vector<float> x, r, w;
};

Data RandomData(int64_t rows, int64_t hidden, uint32_t seed) {
  std::mt19937 rng(seed);
  return {RandomValues(static_cast<size_t>(rows * hidden), rng),
          RandomValues(static_cast<size_t>(rows * hidden), rng),
          RandomValues(static_cast<size_t>(hidden), rng)};
}

std::unique_ptr<Client> Connect(const std::string& target) {
  ClientOptions options;
  options.target = target;
  options.default_deadline = absl::Seconds(20);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

class ClientTest : public SuiteNormdTest<ClientTest> {
 protected:
  void SetUp() override {
    SuiteNormdTest::SetUp();
    client_ = Connect(server_->address());
    ASSERT_NE(client_, nullptr);
  }
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, LimitsComeFromTheServer) {
  EXPECT_EQ(client_->max_request_bytes(), int64_t{256} << 20);
  absl::StatusOr<bool> serving = client_->IsServing();
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_TRUE(*serving);
  absl::StatusOr<normd::v1::ServerInfo> info = client_->GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend(), "cpu");
}

// Every dtype, given as float (converted on the wire) and as its own bits, with and without
// residual.
TEST_F(ClientTest, BlockingEveryDtypeMatchesReference) {
  const int64_t rows = 5, hidden = 111;
  const Data d = RandomData(rows, hidden, 7);
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (bool residual : {false, true}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), residual ? " residual" : ""));
      NormalizeOptions options;
      options.eps = 1e-5f;
      options.weight_offset = 1.0f;
      options.request_id = "r1";
      const std::vector<uint16_t> xb =
          FloatsToBits(d.x, dtype == DType::kFloat32 ? DType::kBFloat16 : dtype);
      const std::vector<uint16_t> rb =
          FloatsToBits(d.r, dtype == DType::kFloat32 ? DType::kBFloat16 : dtype);
      // fp32 goes as floats; fp16/bf16 as the caller's own 16-bit data.
      const TensorView input = dtype == DType::kFloat32
                                   ? TensorView::Float32(d.x, {rows, hidden})
                                   : TensorView(dtype, xb.data(), xb.size(), {rows, hidden});
      if (residual) {
        options.residual = dtype == DType::kFloat32
                               ? TensorView::Float32(d.r, {rows, hidden})
                               : TensorView(dtype, rb.data(), rb.size(), {rows, hidden});
      }
      absl::StatusOr<PreparedRequest> prepared =
          client_->Prepare(input, TensorView::Float32(d.w), options);
      ASSERT_TRUE(prepared.ok()) << prepared.status();
      absl::StatusOr<NormalizeResult> result = client_->Normalize(*prepared);
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(CheckResult(*prepared, *result), "");
      EXPECT_EQ(result->output.dtype(), dtype);
      EXPECT_EQ(result->output.shape(), (std::vector<int64_t>{rows, hidden}));
      EXPECT_EQ(result->residual_out.has_value(), residual);
      EXPECT_EQ(result->request_id, "r1");
      EXPECT_EQ(result->timing.batch_rows() >= rows, true);
      if (dtype == DType::kFloat32) {
        EXPECT_EQ(result->output.float32().size(), static_cast<size_t>(rows * hidden));
      } else {
        EXPECT_EQ(result->output.bits().size(), static_cast<size_t>(rows * hidden));
      }
    }
  }
}

TEST_F(ClientTest, WireDtypeConvertsFloatInput) {
  const Data d = RandomData(3, 64, 8);
  NormalizeOptions options;
  options.wire_dtype = DType::kBFloat16;
  absl::StatusOr<PreparedRequest> prepared =
      client_->Prepare(TensorView::Float32(d.x, {3, 64}), TensorView::Float32(d.w), options);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->proto().input().dtype(), normd::v1::DTYPE_BFLOAT16);
  EXPECT_EQ(prepared->proto().input().data().size(), 3u * 64u * 2u);
  absl::StatusOr<NormalizeResult> result = client_->Normalize(*prepared);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(CheckResult(*prepared, *result), "");
}

TEST_F(ClientTest, CallbackAndFuture) {
  const Data d = RandomData(2, 256, 9);
  const std::vector<uint16_t> xh = FloatsToBits(d.x, DType::kFloat16);
  const TensorView input = TensorView::Float16(xh, {2, 256});
  std::promise<absl::StatusOr<NormalizeResult>> from_callback;
  client_->NormalizeAsync(
      input, TensorView::Float32(d.w), {},
      [&](absl::StatusOr<NormalizeResult> r) { from_callback.set_value(std::move(r)); });
  std::future<absl::StatusOr<NormalizeResult>> future =
      client_->NormalizeFuture(input, TensorView::Float32(d.w));
  absl::StatusOr<PreparedRequest> prepared = client_->Prepare(input, TensorView::Float32(d.w));
  ASSERT_TRUE(prepared.ok());
  absl::StatusOr<NormalizeResult> results[] = {from_callback.get_future().get(), future.get()};
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(CheckResult(*prepared, *r), "");
  }
  // A marshalling error reaches the callback too, at once.
  absl::Status error;
  client_->NormalizeAsync(TensorView::Float32(d.x, {3, 256}), TensorView::Float32(d.w), {},
                          [&](absl::StatusOr<NormalizeResult> r) { error = r.status(); });
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument) << error;
}

TEST_F(ClientTest, StreamSessionAnswersInOrder) {
  std::vector<std::shared_ptr<const PreparedRequest>> requests;
  std::vector<Data> data;
  for (int i = 0; i < 40; ++i) data.push_back(RandomData(1 + i % 3, 128, 100 + i));
  for (int i = 0; i < 40; ++i) {
    NormalizeOptions options;
    options.request_id = absl::StrCat("s", i);
    const int64_t rows = 1 + i % 3;
    absl::StatusOr<PreparedRequest> p = client_->Prepare(
        TensorView::Float32(data[i].x, {rows, 128}), TensorView::Float32(data[i].w), options);
    ASSERT_TRUE(p.ok());
    requests.push_back(std::make_shared<const PreparedRequest>(*std::move(p)));
  }
  std::unique_ptr<StreamSession> session = client_->OpenStream();
  std::vector<std::future<absl::StatusOr<NormalizeResult>>> futures;
  for (const auto& r : requests) futures.push_back(session->Send(r));
  for (size_t i = 0; i < futures.size(); ++i) {
    absl::StatusOr<NormalizeResult> result = futures[i].get();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->request_id, absl::StrCat("s", i));
    EXPECT_EQ(CheckResult(*requests[i], *result), "");
  }
  EXPECT_TRUE(session->Finish().ok());
}

TEST_F(ClientTest, RegisteredWeightSendsOnlyItsId) {
  const Data d = RandomData(4, 96, 11);
  absl::StatusOr<Weight> weight = client_->RegisterWeight(TensorView::Float32(d.w));
  ASSERT_TRUE(weight.ok()) << weight.status();
  EXPECT_FALSE(weight->id().empty());
  absl::StatusOr<PreparedRequest> prepared =
      client_->Prepare(TensorView::Float32(d.x, {4, 96}), *weight);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->proto().weight_id(), weight->id());
  EXPECT_FALSE(prepared->proto().has_weight());
  absl::StatusOr<NormalizeResult> result = client_->Normalize(*prepared);
  ASSERT_TRUE(result.ok()) << result.status();
  normd::v1::Tensor w = MakeTensor(DType::kFloat32, {96}, d.w);
  EXPECT_EQ(CheckResult(*prepared, *result, &w), "");
}

TEST_F(ClientTest, ExpiredDeadline) {
  // 16 MiB of fp32 cannot cross gRPC, be computed and come back within a millisecond.
  const int64_t rows = 64, hidden = 65536;
  std::vector<float> x(static_cast<size_t>(rows * hidden), 1.0f),
      w(static_cast<size_t>(hidden), 1.0f);
  NormalizeOptions options;
  options.deadline = absl::Milliseconds(1);
  absl::StatusOr<NormalizeResult> result =
      client_->Normalize(TensorView::Float32(x, {rows, hidden}), TensorView::Float32(w), options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
  // The client's default deadline applies when the call sets none, and the server still answers.
  options.deadline = absl::ZeroDuration();
  EXPECT_TRUE(
      client_->Normalize(TensorView::Float32(x, {rows, hidden}), TensorView::Float32(w), options)
          .ok());
}

TEST_F(ClientTest, CallerMistakesAreInvalidArgument) {
  std::vector<float> x(10), w(5);
  absl::StatusOr<NormalizeResult> r =
      client_->Normalize(TensorView::Float32(x, {3, 5}), TensorView::Float32(w));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("input"), std::string::npos) << r.status();
  // The server's own validation comes back with its message.
  std::vector<float> w4(4);
  r = client_->Normalize(TensorView::Float32(x, {2, 5}), TensorView::Float32(w4));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
}

TEST_F(ClientTest, AFailedCallNamesTheServerItWasSentTo) {
  std::vector<float> x(10), w5(5), w4(4);
  const std::string server = absl::StrCat("ipv4:127.0.0.1:", server_->port());
  // Refused by the server: blocking and asynchronous calls both name it.
  absl::StatusOr<NormalizeResult> r =
      client_->Normalize(TensorView::Float32(x, {2, 5}), TensorView::Float32(w4));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(PeerOf(r.status()), server);
  r = client_->NormalizeFuture(TensorView::Float32(x, {2, 5}), TensorView::Float32(w4)).get();
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(PeerOf(r.status()), server);
  // Refused by the client before anything was sent: no server to name.
  r = client_->Normalize(TensorView::Float32(x, {3, 5}), TensorView::Float32(w5));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(PeerOf(r.status()), "");
  // Failed in the channel, no server reached (nothing listens on port 1): none named either, not
  // the channel's target, which is what gRPC's ClientContext::peer() says for such a call.
  ClientOptions unreachable;
  unreachable.target = "127.0.0.1:1";
  unreachable.max_request_bytes = 1 << 20;  // no GetServerInfo call at Connect
  absl::StatusOr<std::unique_ptr<Client>> nowhere = Client::Connect(unreachable);
  ASSERT_TRUE(nowhere.ok()) << nowhere.status();
  r = (*nowhere)->Normalize(TensorView::Float32(x, {2, 5}), TensorView::Float32(w5));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(PeerOf(r.status()), "");
  r = (*nowhere)->NormalizeFuture(TensorView::Float32(x, {2, 5}), TensorView::Float32(w5)).get();
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(PeerOf(r.status()), "");
}

// The weight survives a server restart: the client registers it again on NOT_FOUND, in every call
// style.
TEST(ClientRestartTest, WeightReRegisteredAfterRestart) {
  auto first = std::make_unique<NormdProcess>();
  ASSERT_TRUE(first->Start({"--backend=cpu"}).ok()) << first->log();
  const int port = first->port();
  // Calls made while the replacement is still starting wait for it rather than fail.
  ClientOptions options;
  options.target = first->address();
  options.wait_for_ready = true;
  absl::StatusOr<std::unique_ptr<Client>> connected = Client::Connect(options);
  ASSERT_TRUE(connected.ok());
  std::unique_ptr<Client> client = *std::move(connected);
  const Data d = RandomData(2, 64, 12);
  absl::StatusOr<Weight> weight = client->RegisterWeight(TensorView::Float32(d.w));
  ASSERT_TRUE(weight.ok()) << weight.status();
  const TensorView input = TensorView::Float32(d.x, {2, 64});
  ASSERT_TRUE(client->Normalize(input, *weight).ok());

  // A NormdProcess starts once, so each restart is a new one on the same port.
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    ASSERT_EQ(first->StopWith(SIGTERM), 0);
    first = std::make_unique<NormdProcess>();
    ASSERT_TRUE(first->Start({"--backend=cpu", absl::StrCat("--listen=127.0.0.1:", port)}).ok())
        << first->log();
    absl::StatusOr<NormalizeResult> result;
    if (round == 0) {
      result = client->Normalize(input, *weight);
    } else if (round == 1) {
      result = client->NormalizeFuture(input, *weight).get();
    } else {
      absl::StatusOr<PreparedRequest> p = client->Prepare(input, *weight);
      ASSERT_TRUE(p.ok());
      std::unique_ptr<StreamSession> session = client->OpenStream();
      result = session->Send(std::make_shared<const PreparedRequest>(*std::move(p))).get();
      EXPECT_TRUE(session->Finish().ok());
    }
    ASSERT_TRUE(result.ok()) << result.status();
    absl::StatusOr<PreparedRequest> p = client->Prepare(input, TensorView::Float32(d.w));
    EXPECT_EQ(CheckResult(*p, *result), "");
  }
}

// round_robin over two replicas; one drains and exits mid-run; UNAVAILABLE is retried on the other.
TEST(ClientRoundRobinTest, NoFailedCallWhileOneReplicaStops) {
  NormdProcess a, b;
  ASSERT_TRUE(a.Start({"--backend=cpu"}).ok()) << a.log();
  ASSERT_TRUE(b.Start({"--backend=cpu"}).ok()) << b.log();
  std::unique_ptr<Client> client =
      Connect(absl::StrCat("ipv4:127.0.0.1:", a.port(), ",127.0.0.1:", b.port()));
  const Data d = RandomData(4, 512, 13);
  absl::StatusOr<PreparedRequest> prepared =
      client->Prepare(TensorView::Float32(d.x, {4, 512}), TensorView::Float32(d.w));
  ASSERT_TRUE(prepared.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::mutex error_mu;
  std::string first_error;
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      while (!stop) {
        absl::StatusOr<NormalizeResult> r = client->Normalize(*prepared);
        if (r.ok()) {
          ++ok;
        } else {
          ++failed;
          std::lock_guard<std::mutex> lock(error_mu);
          if (first_error.empty()) first_error = r.status().ToString();
        }
      }
    });
  }
  // Calls flow over both replicas; then one drains and exits while they go on, and as many again
  // are answered after it has gone.
  constexpr int kCalls = 100;
  EXPECT_TRUE(WaitUntil([&] { return ok.load() >= kCalls || failed.load() > 0; }));
  EXPECT_GT(ScrapeSum(a.metrics_port(), "normd_requests_total",
                      {{"method", "Normalize"}, {"code", "OK"}}),
            0)
      << "round_robin sent nothing to the replica that stops";
  const int before = ok;
  EXPECT_EQ(a.StopWith(SIGTERM), 0);
  EXPECT_TRUE(WaitUntil([&] { return ok.load() >= before + kCalls || failed.load() > 0; }));
  stop = true;
  for (auto& t : callers) t.join();
  EXPECT_EQ(failed, 0) << first_error;
  EXPECT_GE(before, kCalls);
  EXPECT_GE(ok, before + kCalls);
}

}  // namespace
}  // namespace normd::testing
