// Hostile clients of NormalizeStream and clients that vanish, against the real binary on loopback:
// 2000 streams on one connection, more streams than --max-concurrent-streams allows, a stream that
// is never read, clients that vanish mid-stream and mid-batch (cancelled, and a client process
// SIGKILLed). As in hostile_test.cc, a well-behaved client runs throughout and must be served
// normally, and normd_inflight_requests must return to 0 after each.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
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

// Waits until normd has answered `count` NormalizeStream requests OK (false if it never does).
bool WaitForStreamAnswers(const NormdProcess& server, int count) {
  return WaitUntil([&] {
    return ScrapeSum(server.metrics_port(), "normd_requests_total",
                     {{"method", "NormalizeStream"}, {"code", "OK"}}) >= count;
  });
}

// Waits until a writer that never reads has stalled: flow control stops it once gRPC's windows are
// full, and that nothing more is written can only be seen as no progress, so the writer is taken as
// stalled once a full second of real time passes without a write. (A pause of the machine can only
// make that come early, which makes the checks that follow less sensitive, never fail on a server
// that works.) Returns early once `finished` holds: the writer has stopped writing for good.
void WaitForWriterToStall(const std::atomic<int>& written, const std::function<bool()>& finished) {
  for (int last = -1; written.load() != last && !finished();) {
    last = written.load();
    absl::SleepFor(absl::Seconds(1));
  }
}

// Calls Normalize with `request` until it is answered OK (up to 100 tries, 100 ms apart: a charge
// being given back takes a moment to reach the gate); returns the last status.
grpc::Status NormalizeUntilAnswered(normd::v1::Normalizer::Stub& stub,
                                    const NormalizeRequest& request, NormalizeResponse* response) {
  grpc::Status status;
  for (int attempt = 0; attempt < 100; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(30)));
    status = stub.Normalize(&context, request, response);
    if (status.ok()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return status;
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

// A NormalizeStream whose client writes `request` (up to 256 times, as fast as normd takes them)
// from a thread of its own and never reads a response.
struct NeverReadingWriter {
  NeverReadingWriter(normd::v1::Normalizer::Stub& stub, const NormalizeRequest& request)
      : call(stub.NormalizeStream(&context)), thread([this, &request] {
          for (int i = 0; i < 256 && call->Write(request); ++i) written.fetch_add(1);
          stopped.store(true);
        }) {}
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<NormalizeRequest, NormalizeResponse>> call;
  std::atomic<int> written{0};
  std::atomic<bool> stopped{false};
  std::thread thread;  // last: started once the members it uses exist
};

// A stream that writes and never reads keeps its unsent responses in normd, charged until they
// are written, while each request's own message is freed, and its charge given back, once it is
// computed: the stalled stream holds its responses and nothing more. The charge comes back when the
// stream goes.
TEST(HostileStreamTest, NeverReadResponsesStayChargedAndTheirMessagesDoNot) {
  NormdProcess server;
  // 64 MiB: requests and responses admitted up to 32 MiB, payloads queued up to 16 MiB, a unary
  // call's wait for room a reservation of 16 MiB (twice --max-request-bytes, lowered to 8 MiB).
  // Each 1 MiB request (64 x 4096 float32) has a 1 MiB response and 1 MiB of payload.
  constexpr int kStreamSlots = 12;
  ASSERT_TRUE(server
                  .Start({"--backend=cpu", "--max-memory-bytes=67108864",
                          absl::StrCat("--stream-max-inflight=", kStreamSlots)})
                  .ok())
      << server.log();
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  // Unary calls on a connection of their own: traffic on the stream's connection could let its
  // client take more responses (gRPC grows a busy connection's windows), freeing slots meanwhile.
  auto unary_stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(7);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 64, 4096, false, rng);  // 1 MiB
  const NormalizeRequest larger = MakeRequest(DType::kFloat32, 384, 4096, false, rng);  // 6 MiB
  NeverReadingWriter silent(*stub, request);
  // The stream fills its slots with responses it never reads before any other call is made: a
  // unary call in flight meanwhile would share the budget with the stream's last requests.
  EXPECT_TRUE(WaitForStreamAnswers(server, kStreamSlots))
      << "normd never answered the stream's first " << kStreamSlots << " requests";
  WaitForWriterToStall(silent.written, [&] { return silent.stopped.load(); });
  NormalizeResponse response;
  if (silent.stopped.load()) {
    ADD_FAILURE() << "the never-read stream ended after " << silent.written.load()
                  << " writes; normd's log:\n"
                  << server.log();
  } else {
    // The stream's 12 responses hold 12 MiB of memory and of payload, and the window gRPC granted
    // for its next message 1 MiB more (with room left for the stream's own next read, 16 MiB, so
    // that the stream never waits in the gate ahead of the call). Were its messages still charged
    // too (25 MiB), a unary call's 16 MiB reservation would not fit beside them: it would wait
    // 10 s and be refused naming --max-memory-bytes. It fits, and the call is answered.
    grpc::ClientContext unary;
    unary.set_deadline(In(absl::Seconds(30)));
    const absl::Time start = absl::Now();
    const grpc::Status answered = unary_stub->Normalize(&unary, request, &response);
    // EXPECT, not ASSERT: the stream and its writer thread are still to be taken down below.
    EXPECT_TRUE(answered.ok()) << answered.error_message();
    if (answered.ok()) EXPECT_EQ(CompareWithReference(request, response), "");
    EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "the call waited for room";
    // The responses themselves stay charged: 6 MiB more payload does not fit beside them.
    grpc::ClientContext refused_call;
    refused_call.set_deadline(In(absl::Seconds(30)));
    const grpc::Status refused = unary_stub->Normalize(&refused_call, larger, &response);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << refused.error_message();
    EXPECT_NE(refused.error_message().find("--max-queue-bytes"), std::string::npos)
        << refused.error_message();
  }
  silent.context.TryCancel();
  silent.thread.join();
  silent.call->Finish();
  EXPECT_EQ(WaitForNoInflight(server), 0);
  // The stream is gone, and with it its charge: the larger request is answered.
  const grpc::Status answered = NormalizeUntilAnswered(*unary_stub, larger, &response);
  ASSERT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(CompareWithReference(larger, response), "");
}

// A NormalizeStream that writes and never reads, on each of 40 connections, with 6 MiB messages:
// under --max-memory-bytes a stream reads its next message only once it holds room for it (twice
// --max-request-bytes, 16 MiB here), so the streams wait for room with their messages on the
// clients' side, and those that wait past the gate's 10 s are refused naming the flags. (At this
// scale normd also stayed within the bound before stream reads waited; 1,000 connections did not:
// tests/soak/overload_memory.py, scenario b.)
TEST(HostileStreamTest, NeverReadingStreamsOnManyConnectionsStayWithinTheBudget) {
  NormdProcess server;
  constexpr int64_t kBudget = int64_t{64} << 20;
  // Without the stall timeout, which would cancel the streams holding responses meanwhile (a
  // synchronous client cannot Finish such a stream without reading or cancelling it).
  ASSERT_TRUE(server
                  .Start({"--backend=cpu", absl::StrCat("--max-memory-bytes=", kBudget),
                          "--stream-stall-timeout=0"})
                  .ok())
      << server.log();
  std::mt19937 rng(11);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 384, 4096, false, rng);  // 6 MiB
  constexpr int kConnections = 40;
  struct Silent {
    std::unique_ptr<normd::v1::Normalizer::Stub> stub;
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<NormalizeRequest, NormalizeResponse>> call;
    std::atomic<bool> ended{false};  // Write failed: normd ended the stream
  };
  std::vector<std::unique_ptr<Silent>> streams;
  std::vector<std::thread> writers;
  const int64_t rss_before = server.ResidentBytes();
  for (int i = 0; i < kConnections; ++i) {
    auto stream = std::make_unique<Silent>();
    stream->stub = normd::v1::Normalizer::NewStub(server.NewChannel());
    stream->call = stream->stub->NormalizeStream(&stream->context);
    Silent* raw = stream.get();
    writers.emplace_back([raw, &request] {
      for (int m = 0; m < 4; ++m) {
        if (!raw->call->Write(request)) {
          raw->ended.store(true);
          return;
        }
      }
    });
    streams.push_back(std::move(stream));
  }
  // Twelve seconds of the attack, sampling normd's memory: past the gate's 10 s wait.
  int64_t peak = rss_before;
  for (const absl::Time end = absl::Now() + absl::Seconds(12); absl::Now() < end;) {
    peak = std::max(peak, server.ResidentBytes());
    absl::SleepFor(absl::Milliseconds(50));
  }
  int ended = 0;
  for (const auto& stream : streams) ended += stream->ended.load() ? 1 : 0;
  std::printf(
      "[figure] %d never-reading streams of 6 MiB messages, --max-memory-bytes=64 MiB: server RSS "
      "+%.1f MiB at peak, %d streams ended by normd\n",
      kConnections, static_cast<double>(peak - rss_before) / (1 << 20), ended);
  // The budget plus 64 MiB: taking in one message per stream would add 240 MiB.
  if (!kSanitizedBuild) EXPECT_LT(peak - rss_before, kBudget + (int64_t{64} << 20));
  // The streams normd ended first (their status is read before any cancellation), then the rest.
  int refused_waiting = 0;
  auto finish = [&](Silent& stream) {
    const grpc::Status status = stream.call->Finish();
    // Refused, or cancelled here (a stream whose unread responses keep it open).
    EXPECT_TRUE(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                status.error_code() == grpc::StatusCode::CANCELLED)
        << status.error_code() << " " << status.error_message();
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
        status.error_message().find("--max-request-bytes") != std::string::npos) {
      ++refused_waiting;
    }
  };
  for (int i = 0; i < kConnections; ++i) {
    if (!streams[i]->ended.load()) continue;
    writers[i].join();
    finish(*streams[i]);
  }
  for (int i = 0; i < kConnections; ++i) {
    if (!writers[i].joinable()) continue;
    streams[i]->context.TryCancel();
    writers[i].join();
    finish(*streams[i]);
  }
  // Two streams' responses and windows fill the 32 MiB admitted share; the others wait and are
  // refused.
  EXPECT_GE(refused_waiting, kConnections / 2) << ended << " streams ended during the attack";
  EXPECT_EQ(WaitForNoInflight(server), 0);
  // Every charge came back: the 6 MiB request, whose read needs 16 MiB of the 32 MiB admitted
  // share, is answered.
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  NormalizeResponse response;
  const grpc::Status answered = NormalizeUntilAnswered(*stub, request, &response);
  ASSERT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(CompareWithReference(request, response), "");
}

// What the bound costs: a stream waiting for its client's next message holds its read's
// reservation. Two streams that send nothing hold the whole admitted share of a 64 MiB budget
// (2 x 16 MiB), so a third stream waits for room, and is refused after the gate's 10 s, naming the
// flags; a stream cancelled while it waits leaves the queue; once the idle streams close, streams
// are served again.
TEST(HostileStreamTest, IdleStreamsHoldTheirReadRoomAndOthersWaitThenAreRefused) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu", "--max-memory-bytes=67108864"}).ok()) << server.log();
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(13);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 4, 1024, false, rng);
  grpc::ClientContext idle_context[2];
  std::unique_ptr<grpc::ClientReaderWriter<NormalizeRequest, NormalizeResponse>> idle[2];
  for (int i = 0; i < 2; ++i) idle[i] = stub->NormalizeStream(&idle_context[i]);
  absl::SleepFor(absl::Milliseconds(500));  // both are open and hold their reservations
  // A stream cancelled while it waits, and one that waits until the gate gives up.
  grpc::ClientContext cancelled_context;
  auto cancelled = stub->NormalizeStream(&cancelled_context);
  grpc::ClientContext waiting_context;
  const absl::Time start = absl::Now();
  auto waiting = stub->NormalizeStream(&waiting_context);
  EXPECT_TRUE(waiting->Write(request));  // a small message passes the 64 KiB window
  absl::SleepFor(absl::Seconds(1));
  cancelled_context.TryCancel();
  EXPECT_EQ(cancelled->Finish().error_code(), grpc::StatusCode::CANCELLED);
  NormalizeResponse response;
  EXPECT_FALSE(waiting->Read(&response)) << "answered while two idle streams hold the budget";
  const grpc::Status refused = waiting->Finish();
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  for (const char* part : {"stream message 0", "--max-memory-bytes", "--max-request-bytes"}) {
    EXPECT_NE(refused.error_message().find(part), std::string::npos)
        << part << " not in: " << refused.error_message();
  }
  EXPECT_GE(waited, absl::Seconds(9)) << "refused before the gate's wait ran out";
  EXPECT_LT(waited, absl::Seconds(20));
  // The idle streams half-close: their reads end, their room comes back, and streams are served.
  for (int i = 0; i < 2; ++i) {
    idle[i]->WritesDone();
    EXPECT_TRUE(idle[i]->Finish().ok());
  }
  grpc::ClientContext served_context;
  served_context.set_deadline(In(absl::Seconds(5)));
  auto served = stub->NormalizeStream(&served_context);
  ASSERT_TRUE(served->Write(request));
  served->WritesDone();
  ASSERT_TRUE(served->Read(&response));
  EXPECT_EQ(CompareWithReference(request, response), "");
  const grpc::Status ok = served->Finish();
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

// A stream whose client stops reading holds its unsent responses, and under a budget their charge;
// past --stream-stall-timeout normd cancels it and the charge comes back, while a client that reads
// slowly (a response every 300 ms, within the timeout) keeps its stream.
TEST(HostileStreamTest, AStreamWhoseClientStopsReadingIsCancelledAfterTheStallTimeout) {
  NormdProcess server;
  // 64 MiB: payloads queued up to 16 MiB; 12 unsent 1 MiB responses leave no room for 6 MiB more.
  ASSERT_TRUE(server
                  .Start({"--backend=cpu", "--max-memory-bytes=67108864",
                          "--stream-max-inflight=12", "--stream-stall-timeout=2s"})
                  .ok())
      << server.log();
  std::mt19937 rng(17);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 64, 4096, false, rng);  // 1 MiB
  const NormalizeRequest larger = MakeRequest(DType::kFloat32, 384, 4096, false, rng);  // 6 MiB
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  auto unary_stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  // The stalled stream: writes and never reads.
  NeverReadingWriter silent(*stub, request);
  EXPECT_TRUE(WaitForStreamAnswers(server, 12)) << "the stream's requests were never answered";
  NormalizeResponse response;
  {
    // While its responses are held, the larger request's payload does not fit: it is answered only
    // once the stall timeout has cancelled the stream (which a slow machine may reach first).
    grpc::ClientContext unary;
    unary.set_deadline(In(absl::Seconds(30)));
    const grpc::Status first = unary_stub->Normalize(&unary, larger, &response);
    if (first.ok()) {
      EXPECT_TRUE(WaitUntil([&] { return silent.stopped.load(); }, absl::Seconds(2)))
          << "answered while the stalled stream held its responses";
    } else {
      EXPECT_EQ(first.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << first.error_message();
    }
  }
  // Cancelled 2-3 s after its first unread response (the watch is checked once a second).
  const absl::Time stalled = absl::Now();
  EXPECT_TRUE(WaitUntil([&] { return silent.stopped.load(); }, absl::Seconds(10)))
      << "normd did not end the stalled stream";
  const absl::Duration took = absl::Now() - stalled;
  silent.thread.join();
  // The client has unread responses: gRPC gives it the stream's status only once it reads them, or
  // cancels.
  silent.context.TryCancel();
  EXPECT_EQ(silent.call->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_LT(took, absl::Seconds(6));
  // Its charge came back: the larger request is answered.
  const grpc::Status answered = NormalizeUntilAnswered(*unary_stub, larger, &response);
  ASSERT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(CompareWithReference(larger, response), "");
  // A slow reader: 16 requests of 1 MiB, a response read every 300 ms (about 5 s in all, each
  // write waiting for the client to read, but never for 2 s).
  grpc::ClientContext slow_context;
  auto slow = stub->NormalizeStream(&slow_context);
  std::thread slow_writer([&] {
    for (int i = 0; i < 16; ++i) slow->Write(request);
    slow->WritesDone();
  });
  int slow_answers = 0;
  while (slow->Read(&response)) {
    if (CompareWithReference(request, response).empty()) ++slow_answers;
    absl::SleepFor(absl::Milliseconds(300));
  }
  slow_writer.join();
  const grpc::Status slow_status = slow->Finish();
  EXPECT_TRUE(slow_status.ok()) << slow_status.error_message();
  EXPECT_EQ(slow_answers, 16);
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
