// Hostile clients of NormalizeStream and clients that vanish, against the real binary on loopback:
// 2000 streams on one connection, more streams than --max-concurrent-streams allows, a stream that
// is never read, clients that vanish mid-stream and mid-batch (cancelled, and a client process
// SIGKILLed). Streams under a memory budget: stream_memory_budget_test.cc. As in hostile_test.cc, a
// well-behaved client runs throughout and must be served normally, and normd_inflight_requests must
// return to 0 after each.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/hostile_clients.h"
#include "tests/integration/http_get.h"
#include "tests/integration/normd_process.h"
#include "tests/integration/tensor_util.h"
#include "tests/wait_until.h"

extern char** environ;

namespace normd::testing {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

// Set in a child copy of this test binary: the address the child client attacks (see
// HostileChildClient).
constexpr char kChildTargetEnv[] = "NORMD_HOSTILE_CHILD_TARGET";

// One NormalizeStream: writes `requests` copies of one request, half-closes (at once, or when
// Close() is called if `half_close_when_told`), reads every response.
class SmallStream final : public grpc::ClientBidiReactor<NormalizeRequest, NormalizeResponse> {
 public:
  SmallStream(normd::v1::Normalizer::Stub* stub, const NormalizeRequest* request, int requests,
              normd::BlockingCounter* done, std::atomic<int>* ok, std::atomic<int>* responses,
              bool half_close_when_told = false)
      : request_(request),
        left_to_write_(requests),
        half_close_when_told_(half_close_when_told),
        done_(done),
        ok_(ok),
        responses_(responses) {
    context_.set_deadline(In(absl::Seconds(60)));
    stub->async()->NormalizeStream(&context_, this);
    normd::HandingToLibrary(this);  // see base/mutex.h: gRPC's hand-offs, stated for TSan
    StartWrite(request_);
    StartRead(&response_);
    StartCall();
  }
  void Close() { StartWritesDone(); }
  void OnWriteDone(bool ok) override {
    normd::TakenBackFromLibrary(this);
    const bool write_more = ok && --left_to_write_ > 0;
    normd::HandingToLibrary(this);
    if (write_more) {
      StartWrite(request_);
    } else if (!half_close_when_told_ || !ok) {
      StartWritesDone();
    }
  }
  void OnReadDone(bool ok) override {
    normd::TakenBackFromLibrary(this);
    if (!ok) return;
    responses_->fetch_add(1);
    normd::HandingToLibrary(this);
    StartRead(&response_);
  }
  void OnDone(const grpc::Status& status) override {
    normd::TakenBackFromLibrary(this);
    if (status.ok()) ok_->fetch_add(1);
    done_->DecrementCount();
  }

 private:
  grpc::ClientContext context_;
  const NormalizeRequest* request_;
  NormalizeResponse response_;
  int left_to_write_;
  const bool half_close_when_told_;
  normd::BlockingCounter* done_;
  std::atomic<int>* ok_;
  std::atomic<int>* responses_;
};

// --max-concurrent-streams bounds the calls one connection has open in normd: with 60 streams held
// open on one connection and a limit of 50, exactly 50 get their answer; the other 10 wait in the
// client (not refused) and are served as soon as earlier streams close. That no more than 50 got
// through is read from normd itself once it has answered all it accepted: the 10 were started
// before the first 50 were answered, on the same connection, so had normd let them through they
// would have come with the first 50.
TEST(HostileTest, StreamsBeyondTheConnectionLimitWaitForAFreeSlot) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu", "--max-concurrent-streams=50"}).ok()) << server.log();
  auto channel = server.NewChannel();
  auto stub = normd::v1::Normalizer::NewStub(channel);
  std::mt19937 rng(8);
  const NormalizeRequest request = MakeRequest(DType::kBFloat16, 1, 256, false, rng);
  constexpr int kStreams = 60, kLimit = 50;
  normd::BlockingCounter done(kStreams);
  std::atomic<int> ok{0}, responses{0};
  std::vector<std::unique_ptr<SmallStream>> streams;  // each writes one request and stays open
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<SmallStream>(stub.get(), &request, 1, &done, &ok, &responses,
                                                    /*half_close_when_told=*/true));
  }
  ASSERT_TRUE(WaitUntil([&] { return responses.load() >= kLimit; }))
      << responses.load() << " streams answered of the " << kLimit << " allowed";
  // Every request normd accepted has been answered, and it answered as many as the limit allows.
  EXPECT_EQ(WaitForNoInflight(server), 0);
  EXPECT_EQ(ScrapeSum(server.metrics_port(), "normd_requests_total",
                      {{"method", "NormalizeStream"}, {"code", "OK"}}),
            kLimit)
      << "normd answered streams past the limit while " << kStreams << " were held open";
  EXPECT_EQ(responses.load(), kLimit) << "streams answered while " << kStreams << " were held open";
  for (auto& stream : streams) stream->Close();
  done.Wait();
  EXPECT_EQ(ok.load(), kStreams);
  EXPECT_EQ(responses.load(), kStreams);
}

TEST(HostileTest, TwoThousandStreamsOnOneConnection) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  WellBehavedClient good(server);
  constexpr int kStreams = 2000;
  auto channel =
      server.NewChannel();  // one channel, one connection: HTTP/2 multiplexes every stream
  auto stub = normd::v1::Normalizer::NewStub(channel);
  std::mt19937 rng(5);
  const NormalizeRequest request = MakeRequest(DType::kBFloat16, 2, 256, false, rng);
  normd::BlockingCounter done(kStreams);
  std::atomic<int> ok{0}, responses{0};
  const absl::Time start = absl::Now();
  std::vector<std::unique_ptr<SmallStream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(
        std::make_unique<SmallStream>(stub.get(), &request, 3, &done, &ok, &responses));
  }
  EXPECT_TRUE(good.WaitForMoreCalls(3))
      << "the well-behaved client was not served beside 2000 streams";
  done.Wait();
  std::printf("[figure] 2000 streams on one connection: %d ok, %d responses, in %s\n", ok.load(),
              responses.load(), absl::FormatDuration(absl::Now() - start).c_str());
  EXPECT_EQ(ok.load(), kStreams);
  EXPECT_EQ(responses.load(), 3 * kStreams);
  ExpectServedNormally("2000 streams", good.Stop());
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

TEST(HostileTest, StreamThatIsNeverReadKeepsServerMemoryBounded) {
  NormdProcess server;
  constexpr int kMaxInflight = 4;
  ASSERT_TRUE(
      server.Start({"--backend=cpu", absl::StrCat("--stream-max-inflight=", kMaxInflight)}).ok())
      << server.log();
  WellBehavedClient good(server);
  const int64_t rss_before = server.ResidentBytes();
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(6);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 64, 4096, false, rng);  // 1 MiB
  constexpr int kOffered = 256;  // 256 MiB offered
  grpc::ClientContext context;
  auto call = stub->NormalizeStream(&context);
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; i < kOffered && call->Write(request); ++i) written.fetch_add(1);
  });
  // normd takes kMaxInflight of the stream's requests and answers them; their responses, never
  // read, then hold the stream's slots, so normd reads no more of it. (Counted as answered, not as
  // in flight: a computed response waiting to be written is no longer a request in flight, so the
  // in-flight gauge shows the four only while they compute.)
  EXPECT_TRUE(WaitForStreamAnswers(server, kMaxInflight))
      << "normd never answered the stream's first " << kMaxInflight << " requests";
  // Flow control then stops the writer once gRPC's windows are full.
  WaitForWriterToStall(written, [&] { return written.load() >= kOffered; });
  const int64_t rss_stalled = server.ResidentBytes();
  // Served while the stream is stalled; and normd's memory has not grown meanwhile.
  EXPECT_TRUE(good.WaitForMoreCalls(3))
      << "the well-behaved client was not served beside a never-read stream";
  const int64_t rss_later = server.ResidentBytes();
  std::printf(
      "[figure] never-read stream (--stream-max-inflight=%d, 1 MiB requests): client wrote %d of "
      "%d, server RSS +%.1f MiB (stalled), +%.1f MiB (after 3 more good calls)\n",
      kMaxInflight, written.load(), kOffered,
      static_cast<double>(rss_stalled - rss_before) / (1 << 20),
      static_cast<double>(rss_later - rss_before) / (1 << 20));
  EXPECT_LT(written.load(), kOffered) << "the writer was never stopped by flow control";
  // The server holds at most kMaxInflight requests and responses (8 MiB) plus HTTP/2 windows and
  // buffers; 64 MiB is a bound that reading the 256 MiB offered would break.
  if (!kSanitizedBuild) {
    EXPECT_LT(rss_stalled - rss_before, int64_t{64} << 20);
    EXPECT_LT(rss_later - rss_before, int64_t{64} << 20);
  }
  context.TryCancel();
  writer.join();
  call->Finish();
  ExpectServedNormally("never-read stream", good.Stop());
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

// Runs only in a child copy of this binary (see ClientsThatVanishMidStreamAndMidBatch): streams and
// unary calls from 8 threads as fast as it can, until its parent SIGKILLs it.
// DISABLED_: not a test of its own, only the client process that
// ClientsThatVanishMidStreamAndMidBatch starts (with --gtest_also_run_disabled_tests) and kills.
TEST(HostileChildClient, DISABLED_RunsUntilKilled) {
  const char* target = std::getenv(kChildTargetEnv);
  ASSERT_NE(target, nullptr) << "runs only as the child of ClientsThatVanishMidStreamAndMidBatch";
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([target, t] {
      auto stub = normd::v1::Normalizer::NewStub(
          grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
      std::mt19937 rng(static_cast<uint32_t>(t));
      const NormalizeRequest request = MakeRequest(DType::kBFloat16, 64, 4096, t % 2 == 0, rng);
      while (true) {
        grpc::ClientContext context;
        NormalizeResponse response;
        if (t % 2 == 0) {
          stub->Normalize(&context, request, &response);
          continue;
        }
        auto call = stub->NormalizeStream(&context);
        for (int i = 0; i < 16; ++i) call->Write(request);
        call->Read(&response);  // then keep writing with most responses unread
        for (int i = 0; i < 16; ++i) call->Write(request);
        call->WritesDone();
        while (call->Read(&response)) {
        }
        call->Finish();
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST(HostileTest, ClientsThatVanishMidStreamAndMidBatch) {
  NormdProcess server;
  // Partial launches wait 20 ms for company, so that cancellations land while requests sit in a
  // batch.
  ASSERT_TRUE(server.Start({"--backend=cpu", "--max-queue-delay-us=20000"}).ok()) << server.log();
  WellBehavedClient good(server);
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(8);
  const NormalizeRequest request = MakeRequest(DType::kFloat16, 32, 2048, true, rng);

  // 1. Cancelled in-process: unary calls and streams cancelled at random points, 0 to 100 ms in.
  std::vector<std::thread> cancellers;
  std::atomic<int> cancelled{0}, completed{0}, unexpected{0};
  for (int t = 0; t < 8; ++t) {
    cancellers.emplace_back([&, t] {
      std::mt19937 local(static_cast<uint32_t>(t));
      for (int i = 0; i < 25; ++i) {
        grpc::ClientContext context;
        const absl::Duration cancel_after = absl::Microseconds(local() % 100000);
        std::thread cancel([&] {
          absl::SleepFor(cancel_after);
          context.TryCancel();
        });
        grpc::Status status;
        NormalizeResponse response;
        if (t % 2 == 0) {
          status = stub->Normalize(&context, request, &response);
        } else {
          auto call = stub->NormalizeStream(&context);
          for (int k = 0; k < 8 && call->Write(request); ++k) {
          }
          call->WritesDone();
          while (call->Read(&response)) {
          }
          status = call->Finish();
        }
        cancel.join();
        if (status.ok()) {
          ++completed;
        } else if (status.error_code() == grpc::CANCELLED) {
          ++cancelled;
        } else {
          ++unexpected;
          ADD_FAILURE() << status.error_code() << " " << status.error_message();
        }
      }
    });
  }
  for (auto& t : cancellers) t.join();
  EXPECT_GT(cancelled.load(), 0);
  EXPECT_EQ(unexpected.load(), 0);

  // 2. A client process SIGKILLed mid-stream and mid-batch: its connections just drop.
  const std::string self = "/proc/self/exe";
  std::vector<std::string> args = {self,
                                   "--gtest_filter=HostileChildClient.DISABLED_RunsUntilKilled",
                                   "--gtest_also_run_disabled_tests"};
  std::vector<std::string> env = {absl::StrCat(kChildTargetEnv, "=", server.address())};
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  int killed_with_inflight = 0;
  for (int round = 0; round < 3; ++round) {
    pid_t child = -1;
    ASSERT_EQ(posix_spawn(&child, self.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
    // Kill it once it has requests in the server: more in flight than the well-behaved client's
    // one. Counts what the wait saw: a second scrape could find the child between requests (seen
    // under ASan).
    int64_t inflight = 0;
    WaitUntil([&] { return (inflight = InflightRequests(server)) > 1; });
    killed_with_inflight += inflight > 1;
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  }
  std::printf(
      "[figure] vanishing clients: %d cancelled, %d completed; child killed with requests in "
      "flight "
      "%d of 3 times\n",
      cancelled.load(), completed.load(), killed_with_inflight);
  EXPECT_EQ(killed_with_inflight, 3);
  // Every slot the vanished clients held is released, and the server answers as before.
  EXPECT_EQ(WaitForNoInflight(server), 0) << server.log();
  ExpectServedNormally("vanishing clients", good.Stop());
  grpc::ClientContext context;
  NormalizeResponse response;
  EXPECT_TRUE(stub->Normalize(&context, request, &response).ok());
}

}  // namespace
}  // namespace normd::testing
