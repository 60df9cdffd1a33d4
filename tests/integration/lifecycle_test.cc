// normd's lifecycle and limits through the real binary: SIGTERM drains without losing an accepted
// request; load past --max-queue-bytes is refused promptly with RESOURCE_EXHAUSTED while memory
// stays bounded; expired deadlines are answered DEADLINE_EXCEEDED; --malloc-arenas is checked and
// taken.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <regex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/normd_process.h"
#include "tests/integration/tensor_util.h"
#include "tests/wait_until.h"

namespace normd::testing {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

// One round: 16 clients keep normd busy, SIGTERM comes once `answered_before` of their requests
// have been answered, and every request normd accepted must be answered OK (and match the
// reference).
void SigtermUnderLoadOnce(int answered_before) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  std::atomic<int> ok{0}, refused{0}, lost{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&, c] {
      auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
      std::mt19937 rng(static_cast<uint32_t>(c));
      const NormalizeRequest request = MakeRequest(DType::kBFloat16, 64, 4096, c % 2 == 0, rng);
      while (!stop.load()) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        NormalizeResponse response;
        const grpc::Status status = stub->Normalize(&context, request, &response);
        if (status.ok()) {
          ++ok;
          if (!CompareWithReference(request, response).empty()) ++lost;
        } else if (status.error_code() == grpc::UNAVAILABLE ||
                   status.error_code() == grpc::CANCELLED) {
          // Refused: normd answers UNAVAILABLE once draining; gRPC fails with CANCELLED a call it
          // was still receiving when it stopped taking calls. Whether any such call had been
          // accepted by normd is checked below against the server's own count.
          ++refused;
          absl::SleepFor(absl::Milliseconds(5));  // a client's back-off, not a wait for anything
        } else {
          ADD_FAILURE() << "request failed: " << status.error_code() << " '"
                        << status.error_message() << "'";
          ++lost;
        }
      }
    });
  }
  // SIGTERM lands while the clients keep sending, after a number of answers that differs by round
  // (counted, not timed: a sanitizer build answers slowly, and each client checks every answer
  // against the fp64 reference before it sends again).
  EXPECT_TRUE(WaitUntil([&] { return ok.load() >= answered_before; }))
      << ok.load() << " answered of " << answered_before;
  const int ok_before = ok.load();
  const int exit_status = server.StopWith(SIGTERM);
  stop.store(true);
  for (auto& t : clients) t.join();
  EXPECT_GT(ok_before, 0);
  EXPECT_EQ(lost.load(), 0) << server.log();
  ASSERT_TRUE(WIFEXITED(exit_status)) << exit_status << "\n" << server.log();
  EXPECT_EQ(WEXITSTATUS(exit_status), 0) << server.log();
  // normd's own count: every request it accepted was answered OK, and each of those reached a
  // client.
  std::smatch match;
  const std::string log = server.log();
  ASSERT_TRUE(std::regex_search(log, match, std::regex(R"(answered: (\d+) ok, (\d+) not ok)")))
      << log;
  EXPECT_EQ(std::stoi(match[2]), 0) << log;
  EXPECT_EQ(std::stoi(match[1]), ok.load()) << log;
}

// The drain, repeated 20 times, SIGTERM landing at a different moment of the load each time.
TEST(LifecycleTest, SigtermUnderLoadLosesNoAcceptedRequestTwentyTimes) {
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    SigtermUnderLoadOnce(/*answered_before=*/1 + round);
    if (HasFailure()) break;  // one round's report is enough
  }
}

TEST(LifecycleTest, OverloadIsRefusedPromptlyAndMemoryStaysBounded) {
  NormdProcess server;
  // Room for one request of 1 MiB at a time (from admission until its response is sent), so that
  // any two of the 32 clients overlapping make a refusal. With room for 4, one CI run under ASan on
  // a loaded machine saw no refusal at all: the requests reached normd one by one.
  ASSERT_TRUE(server.Start({"--backend=cpu", "--cpu-threads=1", "--max-queue-bytes=1048576"}).ok())
      << server.log();
  const int64_t rss_idle = server.ResidentBytes();
  std::atomic<int> ok{0}, exhausted{0}, other{0};
  std::atomic<int64_t> max_rss{0}, slowest_refusal_us{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 32; ++c) {
    clients.emplace_back([&, c] {
      auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
      std::mt19937 rng(static_cast<uint32_t>(c));
      const NormalizeRequest request = MakeRequest(DType::kFloat32, 64, 4096, false, rng);  // 1 MiB
      for (int i = 0; i < 20; ++i) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        NormalizeResponse response;
        const absl::Time start = absl::Now();
        const grpc::Status status = stub->Normalize(&context, request, &response);
        if (status.ok()) {
          ++ok;
        } else if (status.error_code() == grpc::RESOURCE_EXHAUSTED) {
          ++exhausted;
          const int64_t us = absl::ToInt64Microseconds(absl::Now() - start);
          int64_t prev = slowest_refusal_us.load();
          while (us > prev && !slowest_refusal_us.compare_exchange_weak(prev, us)) {
          }
        } else {
          if (++other == 1)
            ADD_FAILURE() << "first other error: " << status.error_code() << " "
                          << status.error_message();
        }
        const int64_t rss = server.ResidentBytes();
        int64_t prev = max_rss.load();
        while (rss > prev && !max_rss.compare_exchange_weak(prev, rss)) {
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(exhausted.load(), 0) << "32 clients of 1 MiB each never passed a 1 MiB queue budget";
  EXPECT_EQ(other.load(), 0);
  // Bounded: the queue holds at most 1 MiB of payload (plus its response), whatever 32 clients
  // offer. gRPC's own buffers for messages it has read but normd has not yet admitted come on top;
  // 256 MiB over idle is a generous bound that unbounded queueing (32 x 20 MiB offered) would pass.
  if (!kSanitizedBuild)
    EXPECT_LT(max_rss.load() - rss_idle, int64_t{256} << 20)
        << "idle " << rss_idle << " max " << max_rss.load();
  // Recovery: with the load gone, a request is served at once.
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(1);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 64, 4096, false, rng);
  NormalizeResponse response;
  grpc::ClientContext context;
  EXPECT_TRUE(stub->Normalize(&context, request, &response).ok());
}

TEST(LifecycleTest, ExpiredDeadlineIsDeadlineExceeded) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(2);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 256, 4096, false, rng);
  for (int i = 0; i < 5; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::microseconds(1));
    NormalizeResponse response;
    EXPECT_EQ(stub->Normalize(&context, request, &response).error_code(), grpc::DEADLINE_EXCEEDED);
  }
  // And the server serves on.
  grpc::ClientContext context;
  NormalizeResponse response;
  EXPECT_TRUE(stub->Normalize(&context, request, &response).ok());
}

// --malloc-arenas: a negative count stops normd at start with a message naming the flag; by default
// it is one arena per 4 cores (at least 1); an explicit count is taken as given, and normd serves
// with it.
TEST(LifecycleTest, MallocArenasAreCheckedDefaultedPerCoresAndTaken) {
  {
    NormdProcess server;
    EXPECT_FALSE(server.Start({"--backend=cpu", "--malloc-arenas=-1"}, absl::Seconds(20)).ok());
    EXPECT_TRUE(server.WaitForLog("--malloc_arenas = -1 must be >= 0")) << server.log();
  }
  // Cores normd may run on: it inherits this process's affinity mask and counts that, not the
  // machine.
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  ASSERT_EQ(sched_getaffinity(0, sizeof(affinity), &affinity), 0);
  const int per_cores = std::max(1, CPU_COUNT(&affinity) / 4);
  for (const auto& [args, expected] :
       {std::pair<std::vector<std::string>, int>{{"--backend=cpu"}, per_cores},
        {{"--backend=cpu", "--malloc-arenas=3"}, 3}}) {
    NormdProcess server;
    ASSERT_TRUE(server.Start(args).ok()) << server.log();
    EXPECT_TRUE(absl::StrContains(server.log(), absl::StrCat("malloc_arenas=", expected)))
        << server.log();
    auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
    std::mt19937 rng(3);
    const NormalizeRequest request = MakeRequest(DType::kBFloat16, 64, 4096, true, rng);
    grpc::ClientContext context;
    NormalizeResponse response;
    ASSERT_TRUE(stub->Normalize(&context, request, &response).ok());
    EXPECT_EQ(CompareWithReference(request, response), "");
  }
}

}  // namespace
}  // namespace normd::testing
