// Shared memory when clients misbehave or go away, against the real normd (CPU backend): a region
// shrunk under normd fails its requests and nothing else, a client that dies has its regions
// released, limits are RESOURCE_EXHAUSTED, and unregistering a region with requests in flight lets
// them complete (run under ASan and TSan in CI: none may touch memory after it is unmapped).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/region_test_util.h"
#include "tests/wait_until.h"

extern char** environ;

namespace normd::testing {
namespace {

const std::string kRegionsSeries = R"(normd_shared_memory_regions{kind="system"})";
const std::string kBytesSeries = R"(normd_shared_memory_bytes{kind="system"})";
const std::string kSessionsSeries = "normd_shared_memory_sessions";

class SharedMemoryFailureTest : public RegionSuiteTest<SharedMemoryFailureTest> {
 public:
  static constexpr char kTag[] = "shmfail";
};

// Truncates the object `name` to `bytes` from this process, as a careless client would.
void Truncate(const std::string& name, off_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0) << name;
  ASSERT_EQ(ftruncate(fd, bytes), 0);
  close(fd);
}

TEST_F(SharedMemoryFailureTest, ARegionShrunkUnderNormdFailsItsRequestsAlone) {
  // Large enough that the CPU backend spreads its rows over several threads.
  constexpr int64_t kRows = 256, kHidden = 4096, kBytes = kRows * kHidden * 2;
  std::unique_ptr<Client> client = ConnectOwn("unix:" + SocketPath());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(2 * kBytes);
  ASSERT_TRUE(memory.ok());
  absl::StatusOr<RegisteredRegion> region = client->RegisterSystemRegion(**memory);
  ASSERT_TRUE(region.ok()) << region.status();
  const std::vector<float> weight(kHidden, 1.0f);
  const RegionTensor input = region->Tensor(0, DType::kBFloat16, {kRows, kHidden});
  NormalizeOptions options;
  options.output_region = region->Tensor(kBytes, DType::kBFloat16, {kRows, kHidden});
  ASSERT_TRUE(client->Normalize(input, TensorView::Float32(weight), options).ok());
  // The client's own mapping of the object is not touched again: it would fault too.
  Truncate((*memory)->name(), 0);
  // The CPU backend's pages past the end fault, and the request fails. The CUDA backend's kernels
  // reach the pages the driver keeps locked: no fault, the request completes (on stale pages).
  const bool faults = TestBackend() == "cpu";
  auto expect_refused = [&](const absl::StatusOr<NormalizeResult>& result) {
    if (!faults && result.ok()) return;
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
    EXPECT_TRUE(absl::StrContains(result.status().message(), "truncated by its owner"))
        << result.status();
  };
  for (int i = 0; i < 3; ++i) {
    expect_refused(client->Normalize(input, TensorView::Float32(weight), options));
  }
  // An inline output, with the input still in the shrunk region: the same.
  expect_refused(client->Normalize(input, TensorView::Float32(weight)));
  // normd serves on: the bytes transport, and a fresh region.
  std::vector<uint16_t> x(kRows * kHidden, 0x3f80);
  EXPECT_TRUE(
      client->Normalize(TensorView::BFloat16(x, {kRows, kHidden}), TensorView::Float32(weight))
          .ok());
  absl::StatusOr<std::unique_ptr<SharedMemory>> fresh = SharedMemory::Create(kBytes);
  ASSERT_TRUE(fresh.ok());
  absl::StatusOr<RegisteredRegion> fresh_region = client->RegisterSystemRegion(**fresh);
  ASSERT_TRUE(fresh_region.ok()) << fresh_region.status();
  EXPECT_TRUE(client
                  ->Normalize(fresh_region->Tensor(0, DType::kBFloat16, {kRows, kHidden}),
                              TensorView::Float32(weight))
                  .ok());
}

TEST_F(SharedMemoryFailureTest, DeletingTheNameLeavesTheRegionWorking) {
  std::unique_ptr<Client> client = ConnectOwn("unix:" + SocketPath());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(4096);
  ASSERT_TRUE(memory.ok());
  absl::StatusOr<RegisteredRegion> region = client->RegisterSystemRegion(**memory);
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_EQ(shm_unlink((*memory)->name().c_str()), 0);  // the object lives while mapped
  std::span<uint16_t> x = (*memory)->View<uint16_t>(0, 64).value();
  for (uint16_t& v : x) v = 0x4000;  // 2.0
  NormalizeOptions options;
  options.output_region = region->Tensor(1024, DType::kBFloat16, {1, 64});
  absl::StatusOr<NormalizeResult> result =
      client->Normalize(region->Tensor(0, DType::kBFloat16, {1, 64}),
                        TensorView::Float32(std::vector<float>(64, 1.0f)), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*memory)->View<uint16_t>(1024, 64).value()[0], 0x3f80);  // 2 / rms(2) = 1.0
}

// The client dies (SIGKILL) holding a region it never unregistered: its session ends with its
// connection, and the region is released.
TEST_F(SharedMemoryFailureTest, ADeadClientsRegionsAreReleased) {
  const int port = server_->metrics_port();
  ASSERT_TRUE(WaitForMetric(port, kRegionsSeries, 0));
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  const std::string target = "unix:" + SocketPath();
  // $NORMD_REGION_CLIENT when set, else the build tree's, else normd_region_client on PATH (a
  // bundle of the build run on another machine, where the build tree's path does not exist).
  const char* from_env = std::getenv("NORMD_REGION_CLIENT");
  std::string client_path =
      from_env != nullptr && *from_env != '\0' ? from_env : NORMD_REGION_CLIENT_PATH;
  const bool search_path =
      (from_env == nullptr || *from_env == '\0') && access(client_path.c_str(), X_OK) != 0;
  if (search_path) client_path = "normd_region_client";
  std::vector<char*> argv = {const_cast<char*>(client_path.c_str()),
                             const_cast<char*>(target.c_str()), const_cast<char*>("65536"),
                             nullptr};
  pid_t child = -1;
  const int spawned = search_path
                          ? posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), environ)
                          : posix_spawn(&child, argv[0], &actions, nullptr, argv.data(), environ);
  ASSERT_EQ(spawned, 0) << "cannot start " << client_path << ": " << std::strerror(spawned)
                        << " (set NORMD_REGION_CLIENT to the normd_region_client binary)";
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  FILE* from_child = fdopen(out[0], "r");
  char line[128] = {};
  const bool registered =
      std::fgets(line, sizeof line, from_child) != nullptr && absl::StartsWith(line, "registered ");
  std::fclose(from_child);
  EXPECT_TRUE(registered) << line;
  EXPECT_TRUE(WaitForMetric(port, kRegionsSeries, 1));
  EXPECT_EQ(MetricSample(port, kBytesSeries).value_or(-1), 65536);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(WaitForMetric(port, kRegionsSeries, 0))
      << "the dead client's region is still registered";
  EXPECT_TRUE(WaitForMetric(port, kBytesSeries, 0));
  EXPECT_TRUE(WaitForMetric(port, kSessionsSeries, 0));
}

TEST(SharedMemoryLimitsTest, PastTheLimitsIsResourceExhausted) {
  NormdProcess server;
  const std::string socket = UnixSocketPath("limits");
  ASSERT_TRUE(server
                  .Start({"--backend=cpu", "--shared-memory=system", "--listen-unix=" + socket,
                          "--max-regions-per-client=2", "--max-shared-memory-bytes=1048576"})
                  .ok())
      << server.log();
  std::unique_ptr<Client> client = ConnectOwn("unix:" + socket);
  std::unique_ptr<Client> other = ConnectOwn("unix:" + socket);
  ASSERT_TRUE(client != nullptr && other != nullptr);
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(2 << 20);
  ASSERT_TRUE(memory.ok());
  absl::StatusOr<RegisteredRegion> first = client->RegisterSystemRegion((*memory)->name(), 0, 4096);
  absl::StatusOr<RegisteredRegion> second =
      client->RegisterSystemRegion((*memory)->name(), 4096, 4096);
  ASSERT_TRUE(first.ok() && second.ok());
  absl::StatusOr<RegisteredRegion> third =
      client->RegisterSystemRegion((*memory)->name(), 8192, 4096);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted) << third.status();
  EXPECT_TRUE(absl::StrContains(third.status().message(), "--max-regions-per-client = 2"))
      << third.status();
  // The count is per connection; the bytes are normd's.
  absl::StatusOr<RegisteredRegion> others = other->RegisterSystemRegion((*memory)->name(), 0, 4096);
  EXPECT_TRUE(others.ok()) << others.status();
  absl::StatusOr<RegisteredRegion> too_big =
      other->RegisterSystemRegion((*memory)->name(), 0, 1 << 20);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted) << too_big.status();
  EXPECT_TRUE(absl::StrContains(too_big.status().message(), "--max-shared-memory-bytes = 1048576"))
      << too_big.status();
  ASSERT_TRUE(second->Unregister().ok());
  third = client->RegisterSystemRegion((*memory)->name(), 8192, 4096);
  EXPECT_TRUE(third.ok()) << third.status();
}

// A request waiting in the queue holds its region: unregistering it meanwhile answers OK at once,
// and the request still completes, right, from memory that stays mapped until it is done.
TEST(SharedMemoryInFlightTest, UnregisteringWaitsForTheRequestsUsingTheRegion) {
  NormdProcess server;
  const std::string socket = UnixSocketPath("inflight");
  ASSERT_TRUE(server
                  .Start({"--backend=cpu", "--shared-memory=system", "--listen-unix=" + socket,
                          "--max-queue-delay-us=2000000"})
                  .ok())
      << server.log();
  std::unique_ptr<Client> client = ConnectOwn("unix:" + socket);
  ASSERT_NE(client, nullptr);
  constexpr int64_t kHidden = 256;
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(4096);
  ASSERT_TRUE(memory.ok());
  // The span is kept first: a range over the temporary StatusOr's value() would dangle.
  const std::span<uint16_t> input = (*memory)->View<uint16_t>(0, kHidden).value();
  for (uint16_t& v : input) v = 0x4000;  // 2.0
  absl::StatusOr<RegisteredRegion> region = client->RegisterSystemRegion(**memory);
  ASSERT_TRUE(region.ok()) << region.status();
  NormalizeOptions options;
  options.output_region = region->Tensor(2048, DType::kBFloat16, {1, kHidden});
  auto answer = client->NormalizeFuture(std::make_shared<const PreparedRequest>(
      client
          ->Prepare(region->Tensor(0, DType::kBFloat16, {1, kHidden}),
                    TensorView::Float32(std::vector<float>(kHidden, 1.0f)), options)
          .value()));
  // The request is queued (the launch waits 2 s for company, long enough for a sanitizer build to
  // look and unregister meanwhile) once normd counts it in flight.
  ASSERT_TRUE(WaitForMetric(server.metrics_port(), "normd_inflight_requests", 1));
  ASSERT_TRUE(region->Unregister().ok());
  EXPECT_EQ(MetricSample(server.metrics_port(), kRegionsSeries).value_or(-1), 0);
  EXPECT_EQ(MetricSample(server.metrics_port(), kBytesSeries).value_or(-1), 4096)
      << "the bytes count until the request using them is done";
  absl::StatusOr<NormalizeResult> result = answer.get();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*memory)->View<uint16_t>(2048, kHidden).value()[0], 0x3f80);
  EXPECT_TRUE(WaitForMetric(server.metrics_port(), kBytesSeries, 0));
}

// Many requests on a region while it is unregistered: each completes or is refused NOT_FOUND,
// normd never touches the memory after it is unmapped (ASan, TSan in CI) and serves on.
TEST_F(SharedMemoryFailureTest, UnregisteringUnderLoadFailsNothingElse) {
  constexpr int64_t kRows = 64, kHidden = 4096, kBytes = kRows * kHidden * 2;
  std::unique_ptr<Client> client = ConnectOwn("unix:" + SocketPath());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(5 * kBytes);
  ASSERT_TRUE(memory.ok());
  absl::StatusOr<RegisteredRegion> region = client->RegisterSystemRegion(**memory);
  ASSERT_TRUE(region.ok()) << region.status();
  const std::vector<float> weight(kHidden, 1.0f);
  std::atomic<int> ok{0}, not_found{0}, other{0};
  std::atomic<bool> unregistered{false};
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      NormalizeOptions options;
      options.output_region = region->Tensor((t + 1) * kBytes, DType::kBFloat16, {kRows, kHidden});
      const RegionTensor input = region->Tensor(0, DType::kBFloat16, {kRows, kHidden});
      // Until a few requests after the unregistration have been refused.
      for (int after = 0; after < 3;) {
        absl::StatusOr<NormalizeResult> r =
            client->Normalize(input, TensorView::Float32(weight), options);
        if (r.ok()) {
          ++ok;
        } else if (r.status().code() == absl::StatusCode::kNotFound) {
          ++not_found;
        } else {
          ++other;
          ADD_FAILURE() << r.status();
        }
        if (unregistered.load()) ++after;
      }
    });
  }
  EXPECT_TRUE(WaitUntil([&] { return ok.load() >= 8 || other.load() > 0; }));
  ASSERT_TRUE(region->Unregister().ok());
  unregistered.store(true);
  for (auto& s : senders) s.join();
  EXPECT_GE(ok.load(), 8);
  EXPECT_GE(not_found.load(), 4);
  EXPECT_EQ(other.load(), 0);
  EXPECT_TRUE(WaitForMetric(server_->metrics_port(), kBytesSeries, 0));
  std::vector<uint16_t> x(kRows * kHidden, 0x3f80);
  EXPECT_TRUE(
      client->Normalize(TensorView::BFloat16(x, {kRows, kHidden}), TensorView::Float32(weight))
          .ok());
}

}  // namespace
}  // namespace normd::testing
