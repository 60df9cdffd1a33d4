// Shared memory on the CUDA backend, against the real normd (--backend=cuda --shared-memory=
// system,cuda) on a GPU machine: system regions computed straight from and into the client's
// pages, cuda regions (GPU memory of this process, exported with CUDA IPC) computed in place,
// each matching the bytes transport; cuda regions' own checks; unregistering under load. Label
// gpu: without a CUDA device every test skips, saying so. tests/gpu/run_shared_memory_h200.sh runs
// these (and compute-sanitizer memcheck over normd while they run).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cuda_region_memory.h"
#include "tests/integration/http_get.h"
#include "tests/integration/region_test_util.h"

namespace normd::testing {
namespace {

constexpr int64_t kRows = 64, kHidden = 4096, kBytes = kRows * kHidden * 2;  // bf16

bool HaveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// bf16 outputs of two computations agree within one unit in the last place (different kernels
// may sum in another order).
std::string CompareBf16(const std::string& got, const std::string& want) {
  if (got.size() != want.size()) return absl::StrCat(got.size(), " bytes against ", want.size());
  for (size_t i = 0; i + 1 < got.size(); i += 2) {
    uint16_t a, b;
    std::memcpy(&a, got.data() + i, 2);
    std::memcpy(&b, want.data() + i, 2);
    const float x = BFloat16ToFloat(a), y = BFloat16ToFloat(b);
    if (std::isnan(y) ? !std::isnan(x) : std::fabs(x - y) > std::ldexp(std::fabs(y), -7) + 1e-30f) {
      return absl::StrCat("element ", i / 2, ": ", x, " against ", y);
    }
  }
  return "";
}

class SharedMemoryGpuTest : public RegionSuiteTest<SharedMemoryGpuTest> {
 public:
  static constexpr char kTag[] = "shmgpu";
  static std::vector<std::string> SuiteFlags() {
    return {"--backend=cuda", "--shared-memory=system,cuda", "--listen-unix=" + SocketPath()};
  }
  static void SetUpTestSuite() {
    // NormdProcess gives normd the backend NORMD_TEST_BACKEND names (cpu when unset).
    setenv("NORMD_TEST_BACKEND", "cuda", /*overwrite=*/1);
    if (HaveDevice()) RegionSuiteTest::SetUpTestSuite();
  }

 protected:
  void SetUp() override {
    if (!HaveDevice()) GTEST_SKIP() << "no CUDA device: the shared-memory GPU tests need one";
    RegionSuiteTest::SetUp();
    client_ = ConnectOwn("unix:" + SocketPath());
    ASSERT_NE(client_, nullptr);
    input_.resize(kRows * kHidden);
    residual_.resize(input_.size());
    FillBf16(input_, rng_);
    FillBf16(residual_, rng_);
    weight_.assign(kHidden, 1.0f);
    std::normal_distribution<float> normal;
    for (float& w : weight_) w += 0.1f * normal(rng_);
  }

  std::mt19937 rng_{11};
  std::unique_ptr<Client> client_;
  std::vector<uint16_t> input_, residual_;
  std::vector<float> weight_;
};

TEST_F(SharedMemoryGpuTest, SystemRegionsAreComputedOnTheGpu) {
  absl::StatusOr<InlineResult> expected =
      ComputeInline(*client_, input_, residual_, weight_, kRows, kHidden);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(4 * kBytes);
  ASSERT_TRUE(memory.ok());
  std::memcpy((*memory)->data(), input_.data(), kBytes);
  std::memcpy((*memory)->data() + 2 * kBytes, residual_.data(), kBytes);
  absl::StatusOr<RegisteredRegion> region = client_->RegisterSystemRegion(**memory);
  ASSERT_TRUE(region.ok()) << region.status();
  NormalizeOptions options;
  options.residual_region = region->Tensor(2 * kBytes, DType::kBFloat16, {kRows, kHidden});
  options.output_region = region->Tensor(kBytes, DType::kBFloat16, {kRows, kHidden});
  options.residual_out_region = options.residual_region;  // in place
  absl::StatusOr<NormalizeResult> result = client_->Normalize(
      region->Tensor(0, DType::kBFloat16, {kRows, kHidden}), TensorView::Float32(weight_), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(CompareBf16(std::string((*memory)->data() + kBytes, kBytes), expected->output), "");
  EXPECT_EQ(std::string((*memory)->data() + 2 * kBytes, kBytes), expected->residual_out);
}

// A large launch's system-region tensors are copied to the device and back by the copy engines
// (rather than reached through the mapping): the result matches the bytes transport, in place and
// with a residual, the launch has an h2d stage (a launch computed through the mapping has none),
// and such requests running beside inline ones, maybe in one launch, each get their own answer.
TEST_F(SharedMemoryGpuTest, LargeSystemRegionTensorsGoThroughTheCopyEngines) {
  constexpr int64_t kLargeRows = 1024, kLarge = kLargeRows * kHidden * 2;  // 8 MiB of bf16
  std::vector<uint16_t> input(kLargeRows * kHidden), residual(input.size());
  FillBf16(input, rng_);
  FillBf16(residual, rng_);
  absl::StatusOr<InlineResult> expected =
      ComputeInline(*client_, input, residual, weight_, kLargeRows, kHidden);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(6 * kLarge);
  ASSERT_TRUE(memory.ok());
  char* const base = (*memory)->data();
  auto place = [&](int slot) {  // the input at `slot`, the residual at the next
    std::memcpy(base + slot * kLarge, input.data(), kLarge);
    std::memcpy(base + (slot + 1) * kLarge, residual.data(), kLarge);
  };
  absl::StatusOr<RegisteredRegion> region = client_->RegisterSystemRegion(**memory);
  ASSERT_TRUE(region.ok()) << region.status();
  auto tensor = [&](int slot) {
    return region->Tensor(slot * kLarge, DType::kBFloat16, {kLargeRows, kHidden});
  };
  auto in_place = [&](int slot) {
    NormalizeOptions options;
    options.residual_region = tensor(slot + 1);
    options.output_region = tensor(slot);
    options.residual_out_region = options.residual_region;
    return client_->Normalize(tensor(slot), TensorView::Float32(weight_), options);
  };
  auto check = [&](int slot) {
    EXPECT_EQ(CompareBf16(std::string(base + slot * kLarge, kLarge), expected->output), "");
    EXPECT_EQ(std::string(base + (slot + 1) * kLarge, kLarge), expected->residual_out);
  };

  const int port = server_->metrics_port();
  const double h2d_before =
      ScrapeSum(port, "normd_stage_duration_seconds_count", {{"stage", "h2d"}});
  place(0);
  absl::StatusOr<NormalizeResult> alone = in_place(0);
  ASSERT_TRUE(alone.ok()) << alone.status();
  check(0);
  EXPECT_GT(ScrapeSum(port, "normd_stage_duration_seconds_count", {{"stage", "h2d"}}), h2d_before)
      << "the launch was not copied by the copy engines";

  for (int round = 0; round < 3; ++round) {
    place(2);
    place(4);
    std::vector<std::future<absl::StatusOr<NormalizeResult>>> calls;
    calls.push_back(std::async(std::launch::async, [&] { return in_place(2); }));
    calls.push_back(std::async(std::launch::async, [&] { return in_place(4); }));
    auto inline_call = [&] {
      NormalizeOptions options;
      options.residual = TensorView::BFloat16(residual, {kLargeRows, kHidden});
      return client_->Normalize(TensorView::BFloat16(input, {kLargeRows, kHidden}),
                                TensorView::Float32(weight_), options);
    };
    calls.push_back(std::async(std::launch::async, inline_call));
    calls.push_back(std::async(std::launch::async, inline_call));
    for (size_t i = 0; i < calls.size(); ++i) {
      absl::StatusOr<NormalizeResult> r = calls[i].get();
      ASSERT_TRUE(r.ok()) << r.status();
      if (i >= 2) {
        EXPECT_EQ(CompareBf16(r->output.bytes(), expected->output), "");
        ASSERT_TRUE(r->residual_out.has_value());
        EXPECT_EQ(r->residual_out->bytes(), expected->residual_out);
      }
    }
    check(2);
    check(4);
  }
}

TEST_F(SharedMemoryGpuTest, CudaRegionsAreComputedInPlace) {
  absl::StatusOr<InlineResult> expected =
      ComputeInline(*client_, input_, residual_, weight_, kRows, kHidden);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<std::unique_ptr<CudaRegionMemory>> memory =
      CudaRegionMemory::Allocate(0, 2 * kBytes);
  ASSERT_TRUE(memory.ok()) << memory.status();
  ASSERT_TRUE((*memory)->CopyFromHost(0, input_.data(), kBytes).ok());
  ASSERT_TRUE((*memory)->CopyFromHost(kBytes, residual_.data(), kBytes).ok());
  absl::StatusOr<RegisteredRegion> region = RegisterCudaRegion(*client_, **memory, "gpu");
  ASSERT_TRUE(region.ok()) << region.status();
  const RegionTensor input = region->Tensor(0, DType::kBFloat16, {kRows, kHidden});
  const RegionTensor residual = region->Tensor(kBytes, DType::kBFloat16, {kRows, kHidden});
  NormalizeOptions options;
  options.residual_region = residual;
  options.output_region = input;  // in place
  options.residual_out_region = residual;
  absl::StatusOr<NormalizeResult> result =
      client_->Normalize(input, TensorView::Float32(weight_), options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::string output(kBytes, '\0'), residual_out(kBytes, '\0');
  ASSERT_TRUE((*memory)->CopyToHost(0, output.data(), kBytes).ok());
  ASSERT_TRUE((*memory)->CopyToHost(kBytes, residual_out.data(), kBytes).ok());
  EXPECT_EQ(CompareBf16(output, expected->output), "");
  EXPECT_EQ(residual_out, expected->residual_out);
}

TEST_F(SharedMemoryGpuTest, CudaRegionsAreChecked) {
  absl::StatusOr<std::unique_ptr<CudaRegionMemory>> memory = CudaRegionMemory::Allocate(0, kBytes);
  ASSERT_TRUE(memory.ok()) << memory.status();
  // A UUID no GPU has; a handle of the wrong size; a range past the allocation.
  absl::StatusOr<RegisteredRegion> region =
      client_->RegisterCudaRegion((*memory)->ipc_handle(), std::string(16, '\x7f'), 0, kBytes);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kNotFound) << region.status();
  region = client_->RegisterCudaRegion("short", (*memory)->device_uuid(), 0, kBytes);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kInvalidArgument) << region.status();
  region =
      client_->RegisterCudaRegion((*memory)->ipc_handle(), (*memory)->device_uuid(), 16, kBytes);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kInvalidArgument) << region.status();
  region = RegisterCudaRegion(*client_, **memory);
  ASSERT_TRUE(region.ok()) << region.status();
  // GPU memory in, host memory out: refused (a request in GPU memory stays there).
  absl::StatusOr<NormalizeResult> mixed = client_->Normalize(
      region->Tensor(0, DType::kBFloat16, {kRows, kHidden}), TensorView::Float32(weight_));
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument) << mixed.status();
  EXPECT_TRUE(absl::StrContains(mixed.status().message(), "output: not in a cuda region"));
  // Another connection's.
  std::unique_ptr<Client> other = ConnectOwn("unix:" + SocketPath());
  ASSERT_TRUE(other != nullptr && other->OpenRegionSession().ok());
  NormalizeOptions options;
  options.output_region = region->Tensor(0, DType::kBFloat16, {kRows, kHidden});
  absl::StatusOr<NormalizeResult> stolen = other->Normalize(
      region->Tensor(0, DType::kBFloat16, {kRows, kHidden}), TensorView::Float32(weight_), options);
  EXPECT_EQ(stolen.status().code(), absl::StatusCode::kPermissionDenied) << stolen.status();
}

// One-row requests in cuda regions from many threads ride together in launches.
TEST_F(SharedMemoryGpuTest, OneRowCudaRequestsShareLaunches) {
  constexpr int kThreads = 16, kEach = 50;
  constexpr int64_t kRow = kHidden * 2;
  absl::StatusOr<std::unique_ptr<CudaRegionMemory>> memory =
      CudaRegionMemory::Allocate(0, 2 * kThreads * kRow);
  ASSERT_TRUE(memory.ok());
  for (int t = 0; t < 2 * kThreads; ++t) {
    ASSERT_TRUE((*memory)->CopyFromHost(t * kRow, input_.data(), kRow).ok());
  }
  absl::StatusOr<RegisteredRegion> region = RegisterCudaRegion(*client_, **memory);
  ASSERT_TRUE(region.ok()) << region.status();
  std::atomic<int64_t> requests{0}, in_shared_launches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      NormalizeOptions options;
      options.output_region = region->Tensor((kThreads + t) * kRow, DType::kBFloat16, {1, kHidden});
      const RegionTensor input = region->Tensor(t * kRow, DType::kBFloat16, {1, kHidden});
      for (int i = 0; i < kEach; ++i) {
        absl::StatusOr<NormalizeResult> r =
            client_->Normalize(input, TensorView::Float32(weight_), options);
        ASSERT_TRUE(r.ok()) << r.status();
        ++requests;
        if (r->timing.batch_requests() > 1) ++in_shared_launches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(requests.load(), kThreads * kEach);
  EXPECT_GT(in_shared_launches.load(), requests.load() / 2);
}

// Unregistering cuda and system regions while requests use them: each completes or is refused,
// none touches memory closed under it (compute-sanitizer memcheck watches normd meanwhile).
TEST_F(SharedMemoryGpuTest, UnregisteringUnderLoad) {
  for (bool cuda : {true, false}) {
    std::unique_ptr<CudaRegionMemory> device;
    std::unique_ptr<SharedMemory> host;
    absl::StatusOr<RegisteredRegion> region;
    if (cuda) {
      device = CudaRegionMemory::Allocate(0, 5 * kBytes).value();
      ASSERT_TRUE(device->CopyFromHost(0, input_.data(), kBytes).ok());
      region = RegisterCudaRegion(*client_, *device);
    } else {
      host = SharedMemory::Create(5 * kBytes).value();
      std::memcpy(host->data(), input_.data(), kBytes);
      region = client_->RegisterSystemRegion(*host);
    }
    ASSERT_TRUE(region.ok()) << region.status();
    std::atomic<int> ok{0}, refused{0};
    std::atomic<bool> unregistered{false};
    std::vector<std::thread> senders;
    for (int t = 0; t < 4; ++t) {
      senders.emplace_back([&, t] {
        NormalizeOptions options;
        options.output_region =
            region->Tensor((t + 1) * kBytes, DType::kBFloat16, {kRows, kHidden});
        const RegionTensor input = region->Tensor(0, DType::kBFloat16, {kRows, kHidden});
        for (int after = 0; after < 3;) {
          absl::StatusOr<NormalizeResult> r =
              client_->Normalize(input, TensorView::Float32(weight_), options);
          if (r.ok()) {
            ++ok;
          } else {
            EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
            ++refused;
          }
          if (unregistered.load()) ++after;
        }
      });
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (ok.load() < 8 && refused.load() == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    ASSERT_TRUE(region->Unregister().ok());
    unregistered.store(true);
    for (auto& s : senders) s.join();
    EXPECT_GE(refused.load(), 4) << (cuda ? "cuda" : "system");
  }
  EXPECT_TRUE(
      client_
          ->Normalize(TensorView::BFloat16(input_, {kRows, kHidden}), TensorView::Float32(weight_))
          .ok());
}

}  // namespace
}  // namespace normd::testing
