// NormalizeStream under a memory budget (--max-memory-bytes), against the real binary on loopback:
// responses a client never reads stay charged while their requests' messages do not, streams that
// never read on many connections stay within the budget, idle streams hold their next read's room
// (others wait, then are refused naming the flags), and a stream whose client stops reading is
// cancelled after --stream-stall-timeout. As in hostile_stream_test.cc, normd_inflight_requests
// must return to 0 after each.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/hostile_clients.h"
#include "tests/integration/normd_process.h"
#include "tests/integration/tensor_util.h"
#include "tests/wait_until.h"

namespace normd::testing {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

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
TEST(StreamMemoryBudgetTest, NeverReadResponsesStayChargedAndTheirMessagesDoNot) {
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
TEST(StreamMemoryBudgetTest, NeverReadingStreamsOnManyConnectionsStayWithinTheBudget) {
  NormdProcess server;
  constexpr int64_t kBudget = int64_t{64} << 20;
  // Without the stall timeouts, which would cancel the streams holding responses meanwhile (a
  // synchronous client cannot Finish such a stream without reading or cancelling it).
  ASSERT_TRUE(server
                  .Start({"--backend=cpu", absl::StrCat("--max-memory-bytes=", kBudget),
                          "--stream-stall-timeout=0", "--stream-stall-timeout-under-pressure=0"})
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
TEST(StreamMemoryBudgetTest, IdleStreamsHoldTheirReadRoomAndOthersWaitThenAreRefused) {
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

// The stall tests' starting point: normd under a 64 MiB budget (payloads queued up to 16 MiB) with
// the given --stream-stall-timeout and --stream-stall-timeout-under-pressure, and a stream that
// writes 1 MiB requests and never reads, holding 12 unsent responses (--stream-max-inflight=12),
// which leave no room for `larger` (6 MiB).
struct StalledStream {
  NormdProcess server;
  NormalizeRequest request;
  NormalizeRequest larger;
  std::unique_ptr<normd::v1::Normalizer::Stub> stub;
  std::unique_ptr<normd::v1::Normalizer::Stub> unary_stub;
  std::unique_ptr<NeverReadingWriter> silent;
  // A test that stopped early leaves the writer running: end it so that its thread can be joined.
  ~StalledStream() {
    if (silent != nullptr && silent->thread.joinable()) {
      silent->context.TryCancel();
      silent->thread.join();
    }
  }
};

::testing::AssertionResult StartStalledStream(StalledStream& s, const std::string& stall_timeout,
                                              const std::string& pressure_timeout, uint32_t seed) {
  if (absl::Status started =
          s.server.Start({"--backend=cpu", "--max-memory-bytes=67108864",
                          "--stream-max-inflight=12", "--stream-stall-timeout=" + stall_timeout,
                          "--stream-stall-timeout-under-pressure=" + pressure_timeout});
      !started.ok()) {
    return ::testing::AssertionFailure() << started << "\n" << s.server.log();
  }
  std::mt19937 rng(seed);
  s.request = MakeRequest(DType::kFloat32, 64, 4096, false, rng);
  s.larger = MakeRequest(DType::kFloat32, 384, 4096, false, rng);
  s.stub = normd::v1::Normalizer::NewStub(s.server.NewChannel());
  s.unary_stub = normd::v1::Normalizer::NewStub(s.server.NewChannel());
  s.silent = std::make_unique<NeverReadingWriter>(*s.stub, s.request);
  if (!WaitForStreamAnswers(s.server, 12)) {
    return ::testing::AssertionFailure() << "the stream's requests were never answered";
  }
  return ::testing::AssertionSuccess();
}

// A stream whose client stops reading holds its unsent responses, and under a budget their charge;
// past --stream-stall-timeout normd cancels it and the charge comes back, while a client that reads
// slowly (a response every 100 ms, within the timeout) keeps its stream. (The shorter timeout under
// pressure is off here: the next test has it.)
TEST(StreamMemoryBudgetTest, AStreamWhoseClientStopsReadingIsCancelledAfterTheStallTimeout) {
  StalledStream setup;
  ASSERT_TRUE(StartStalledStream(setup, "2s", "0", 17));
  NormdProcess& server = setup.server;
  const NormalizeRequest& request = setup.request;
  const NormalizeRequest& larger = setup.larger;
  auto& stub = setup.stub;
  auto& unary_stub = setup.unary_stub;
  NeverReadingWriter& silent = *setup.silent;
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
  // A slow reader: 16 requests of 1 MiB, a response read every 100 ms, checked once all are in.
  // gRPC holds a few responses on the client's side, so each write waits for a few reads: reading
  // without checking in between keeps that well under a second, far from the 2-s timeout even
  // when a sanitizer build's test process is starved by the tests running beside it.
  grpc::ClientContext slow_context;
  auto slow = stub->NormalizeStream(&slow_context);
  std::thread slow_writer([&] {
    for (int i = 0; i < 16; ++i) slow->Write(request);
    slow->WritesDone();
  });
  std::vector<NormalizeResponse> slow_responses;
  while (slow->Read(&response)) {
    slow_responses.push_back(response);
    absl::SleepFor(absl::Milliseconds(100));
  }
  slow_writer.join();
  const grpc::Status slow_status = slow->Finish();
  EXPECT_TRUE(slow_status.ok()) << slow_status.error_message();
  int slow_answers = 0;
  for (const NormalizeResponse& answer : slow_responses) {
    if (CompareWithReference(request, answer).empty()) ++slow_answers;
  }
  EXPECT_EQ(slow_answers, 16);
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

// While memory is short (a call waits for room or is refused for it), a stream whose client stopped
// reading is cancelled after --stream-stall-timeout-under-pressure instead of
// --stream-stall-timeout: a client retrying a refused call is answered within seconds rather than
// for the next minute. With no call short of memory, the stream keeps its responses.
TEST(StreamMemoryBudgetTest, WhileMemoryIsShortAStalledStreamIsCancelledSooner) {
  StalledStream setup;
  ASSERT_TRUE(StartStalledStream(setup, "60s", "1s", 19));
  NormdProcess& server = setup.server;
  const NormalizeRequest& larger = setup.larger;
  auto& unary_stub = setup.unary_stub;
  NeverReadingWriter& silent = *setup.silent;
  absl::SleepFor(absl::Milliseconds(2500));
  EXPECT_FALSE(silent.stopped.load()) << "cancelled after 2.5 s with no call short of memory";
  // The larger request does not fit beside the 12 held responses: it is refused (or waits), and
  // the stream is cancelled at the watch's next check (once a second), which gives it room.
  const absl::Time start = absl::Now();
  NormalizeResponse response;
  const grpc::Status answered = NormalizeUntilAnswered(*unary_stub, larger, &response);
  const absl::Duration waited = absl::Now() - start;
  ASSERT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(CompareWithReference(larger, response), "");
  EXPECT_LT(waited, absl::Seconds(6)) << "the call short of memory was not given room soon";
  EXPECT_TRUE(WaitUntil([&] { return silent.stopped.load(); }, absl::Seconds(5)))
      << "normd did not end the stalled stream";
  silent.thread.join();
  silent.context.TryCancel();
  EXPECT_EQ(silent.call->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

}  // namespace
}  // namespace normd::testing
