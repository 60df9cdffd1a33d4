// The shared-memory transport against the real normd (CPU backend), through the client library:
// tensors in system regions give the same bytes as the bytes transport, over normd's Unix socket
// and over loopback, in place, with residuals, mixed with inline tensors, on streams, batched
// together with inline requests, listed and counted on /metrics.
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/region_test_util.h"

namespace normd::testing {
namespace {

constexpr int64_t kRows = 19, kHidden = 500;
constexpr int64_t kTensorBytes = kRows * kHidden * 2;  // bf16
// Tensors at 4 KiB steps in the test's region.
constexpr int64_t kSlot = (kTensorBytes + 4095) / 4096 * 4096;

class SharedMemoryTest : public RegionSuiteTest<SharedMemoryTest> {
 public:
  static constexpr char kTag[] = "shm";

 protected:
  void SetUp() override {
    RegionSuiteTest::SetUp();
    client_ = ConnectOwn("unix:" + SocketPath());
    ASSERT_NE(client_, nullptr);
    absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(8 * kSlot);
    ASSERT_TRUE(memory.ok()) << memory.status();
    memory_ = *std::move(memory);
    weight_.resize(kHidden);
    std::normal_distribution<float> normal;
    for (float& w : weight_) w = 1.0f + 0.1f * normal(rng_);
  }

  // The bf16 tensor in slot `slot` of the memory.
  std::span<uint16_t> Slot(int slot) {
    return memory_->View<uint16_t>(slot * kSlot, kRows * kHidden).value();
  }
  std::string SlotBytes(int slot) {
    return std::string(memory_->data() + slot * kSlot, kTensorBytes);
  }
  RegionTensor At(const RegisteredRegion& region, int slot) {
    return region.Tensor(slot * kSlot, DType::kBFloat16, {kRows, kHidden});
  }

  std::mt19937 rng_{42};
  std::unique_ptr<Client> client_;
  std::unique_ptr<SharedMemory> memory_;
  std::vector<float> weight_;
};

TEST_F(SharedMemoryTest, InputAndOutputInARegionMatchTheBytesTransport) {
  FillBf16(Slot(0), rng_);
  absl::StatusOr<InlineResult> expected =
      ComputeInline(*client_, Slot(0), {}, weight_, kRows, kHidden);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<RegisteredRegion> region = client_->RegisterSystemRegion(*memory_, "test");
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(region->id().size(), 32u);
  NormalizeOptions options;
  options.output_region = At(*region, 1);
  absl::StatusOr<NormalizeResult> result =
      client_->Normalize(At(*region, 0), TensorView::Float32(weight_), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->output.bytes().empty()) << "the output went into the region";
  ASSERT_TRUE(result->output.region().has_value());
  EXPECT_EQ(result->output.region()->offset(), kSlot);
  EXPECT_EQ(result->output.shape(), (std::vector<int64_t>{kRows, kHidden}));
  EXPECT_EQ(SlotBytes(1), expected->output);
}

TEST_F(SharedMemoryTest, InPlaceWithAResidualInTheRegion) {
  FillBf16(Slot(0), rng_);
  FillBf16(Slot(1), rng_);
  absl::StatusOr<InlineResult> expected =
      ComputeInline(*client_, Slot(0), Slot(1), weight_, kRows, kHidden);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<RegisteredRegion> region = client_->RegisterSystemRegion(*memory_);
  ASSERT_TRUE(region.ok()) << region.status();
  // output = input and residual_out = residual: the two overlaps the transport allows.
  NormalizeOptions options;
  options.residual_region = At(*region, 1);
  options.output_region = At(*region, 0);
  options.residual_out_region = At(*region, 1);
  absl::StatusOr<NormalizeResult> result =
      client_->Normalize(At(*region, 0), TensorView::Float32(weight_), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(SlotBytes(0), expected->output);
  EXPECT_EQ(SlotBytes(1), expected->residual_out);
}

TEST_F(SharedMemoryTest, InlineAndRegionTensorsMixInOneRequest) {
  FillBf16(Slot(0), rng_);
  std::vector<uint16_t> input(Slot(0).begin(), Slot(0).end());
  absl::StatusOr<InlineResult> expected =
      ComputeInline(*client_, input, {}, weight_, kRows, kHidden);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<RegisteredRegion> region = client_->RegisterSystemRegion(*memory_);
  ASSERT_TRUE(region.ok()) << region.status();
  // Inline input, output into the region.
  NormalizeOptions to_region;
  to_region.output_region = At(*region, 2);
  absl::StatusOr<NormalizeResult> first = client_->Normalize(
      TensorView::BFloat16(input, {kRows, kHidden}), TensorView::Float32(weight_), to_region);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(SlotBytes(2), expected->output);
  // Input in the region, output in the response.
  absl::StatusOr<NormalizeResult> second =
      client_->Normalize(At(*region, 0), TensorView::Float32(weight_));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->output.bytes(), expected->output);
  EXPECT_FALSE(second->output.region().has_value());
}

TEST_F(SharedMemoryTest, LoopbackConnectionsUseRegionsToo) {
  std::unique_ptr<Client> tcp = ConnectOwn(server_->address());
  ASSERT_NE(tcp, nullptr);
  FillBf16(Slot(0), rng_);
  absl::StatusOr<InlineResult> expected = ComputeInline(*tcp, Slot(0), {}, weight_, kRows, kHidden);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<RegisteredRegion> region = tcp->RegisterSystemRegion(*memory_);
  ASSERT_TRUE(region.ok()) << region.status();
  NormalizeOptions options;
  options.output_region = At(*region, 3);
  absl::StatusOr<NormalizeResult> result =
      tcp->Normalize(At(*region, 0), TensorView::Float32(weight_), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(SlotBytes(3), expected->output);
}

TEST_F(SharedMemoryTest, StreamMessagesNameRegions) {
  absl::StatusOr<RegisteredRegion> region = client_->RegisterSystemRegion(*memory_);
  ASSERT_TRUE(region.ok()) << region.status();
  std::unique_ptr<StreamSession> stream = client_->OpenStream();
  std::vector<std::future<absl::StatusOr<NormalizeResult>>> answers;
  std::vector<std::string> expected;
  for (int i = 0; i < 3; ++i) {
    FillBf16(Slot(i), rng_);
    absl::StatusOr<InlineResult> inline_result =
        ComputeInline(*client_, Slot(i), {}, weight_, kRows, kHidden);
    ASSERT_TRUE(inline_result.ok()) << inline_result.status();
    expected.push_back(inline_result->output);
    NormalizeOptions options;
    options.output_region = At(*region, 4 + i);
    absl::StatusOr<PreparedRequest> prepared =
        client_->Prepare(At(*region, i), TensorView::Float32(weight_), options);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    answers.push_back(stream->Send(std::make_shared<const PreparedRequest>(*std::move(prepared))));
  }
  for (auto& answer : answers) {
    absl::StatusOr<NormalizeResult> result = answer.get();
    EXPECT_TRUE(result.ok()) << result.status();
  }
  EXPECT_TRUE(stream->Finish().ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(SlotBytes(4 + i), expected[i]) << "message " << i;
}

TEST_F(SharedMemoryTest, RegionsAreListedAndCounted) {
  const int port = server_->metrics_port();
  const std::string regions = R"(normd_shared_memory_regions{kind="system"})";
  const std::string bytes = R"(normd_shared_memory_bytes{kind="system"})";
  const std::string by_transport = R"(normd_requests_by_transport_total{transport="system"})";
  // Earlier tests' regions go once their clients' sessions end.
  ASSERT_TRUE(WaitForMetric(port, regions, 0));
  absl::StatusOr<double> requests_before = MetricSample(port, by_transport);
  ASSERT_TRUE(requests_before.ok()) << requests_before.status();
  {
    absl::StatusOr<RegisteredRegion> region = client_->RegisterSystemRegion(*memory_, "listed");
    ASSERT_TRUE(region.ok()) << region.status();
    absl::StatusOr<std::vector<normd::v1::RegionInfo>> listed = client_->ListRegions();
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].region_id(), region->id());
    EXPECT_EQ((*listed)[0].label(), "listed");
    EXPECT_EQ((*listed)[0].kind(), normd::v1::REGION_KIND_SYSTEM);
    EXPECT_EQ((*listed)[0].byte_size(), memory_->size());
    EXPECT_EQ(MetricSample(port, regions).value_or(-1), 1);
    EXPECT_EQ(MetricSample(port, bytes).value_or(-1), static_cast<double>(memory_->size()));
    ASSERT_TRUE(client_->Normalize(At(*region, 0), TensorView::Float32(weight_)).ok());
  }  // unregistered here
  EXPECT_EQ(MetricSample(port, regions).value_or(-1), 0);
  EXPECT_EQ(MetricSample(port, bytes).value_or(-1), 0);
  EXPECT_EQ(MetricSample(port, by_transport).value_or(-1), *requests_before + 1);
  absl::StatusOr<std::vector<normd::v1::RegionInfo>> after = client_->ListRegions();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
}

// Requests naming regions ride in the same launches as inline ones: with a long queue delay, four
// of each sent together go out as one launch of eight.
TEST(SharedMemoryBatchingTest, RegionAndInlineRequestsShareLaunches) {
  NormdProcess server;
  const std::string socket = UnixSocketPath("batch");
  ASSERT_TRUE(server
                  .Start({"--backend=cpu", "--shared-memory=system", "--listen-unix=" + socket,
                          "--max-queue-delay-us=500000"})
                  .ok())
      << server.log();
  std::unique_ptr<Client> client = ConnectOwn("unix:" + socket);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(8 * kSlot);
  ASSERT_TRUE(memory.ok());
  std::mt19937 rng(7);
  std::vector<float> weight(kHidden, 1.0f);
  absl::StatusOr<RegisteredRegion> region = client->RegisterSystemRegion(**memory);
  ASSERT_TRUE(region.ok()) << region.status();
  std::vector<uint16_t> input(kRows * kHidden);
  FillBf16(input, rng);
  std::memcpy((*memory)->data(), input.data(), kTensorBytes);
  std::vector<std::future<absl::StatusOr<NormalizeResult>>> answers;
  for (int i = 0; i < 4; ++i) {
    NormalizeOptions options;
    options.output_region = region->Tensor((i + 1) * kSlot, DType::kBFloat16, {kRows, kHidden});
    absl::StatusOr<PreparedRequest> prepared =
        client->Prepare(region->Tensor(0, DType::kBFloat16, {kRows, kHidden}),
                        TensorView::Float32(weight), options);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    answers.push_back(
        client->NormalizeFuture(std::make_shared<const PreparedRequest>(*std::move(prepared))));
    answers.push_back(client->NormalizeFuture(TensorView::BFloat16(input, {kRows, kHidden}),
                                              TensorView::Float32(weight)));
  }
  for (auto& answer : answers) {
    absl::StatusOr<NormalizeResult> result = answer.get();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->timing.batch_requests(), 8);
  }
}

}  // namespace
}  // namespace normd::testing
