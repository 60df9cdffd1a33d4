// A Normalize call's message is read only when --max-memory-bytes has room for it: clients whose
// requests do not fit wait (their bytes held back by HTTP/2 flow control) and are then answered,
// none refused or lost; and the call keeps a unary call's shape on the wire
// (normalize_call_reactor.h).
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "base/mutex.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/hostile_clients.h"
#include "tests/integration/normd_process.h"
#include "tests/integration/tensor_util.h"

namespace normd::testing {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

// A call on `method` through the generic API that sends `messages` (none: a bare half-close) and
// reads whatever comes back; the status it ended with.
grpc::Status CallWithMessages(const std::shared_ptr<grpc::Channel>& channel,
                              const std::string& method, const std::vector<std::string>& messages) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(In(absl::Seconds(30)));
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, method, &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  cq.Next(&tag, &ok);
  for (const std::string& m : messages) {
    call->Write(ToByteBuffer(m), reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
  }
  call->WritesDone(reinterpret_cast<void*>(3));
  cq.Next(&tag, &ok);
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(4));
  cq.Next(&tag, &ok);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

TEST(MemoryBoundTest, ClientsLargerThanTheFreeRoomWaitAndAreAllAnswered) {
  NormdProcess server;
  // 64 MiB: requests admitted up to 32 MiB, --max-request-bytes 8 MiB, and a call reserves 16 MiB
  // (its message and a response as large) before its message is read, so two are read at a time.
  ASSERT_TRUE(server.Start({"--backend=cpu", "--max-memory-bytes=67108864"}).ok()) << server.log();
  constexpr int kClients = 16;
  std::mt19937 rng(11);
  // 6 MiB each: 96 MiB received at once, were every message read as it came.
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 384, 4096, false, rng);
  // Counted from normd's size once serving: about 20 MiB on the CPU backend, ~160 MiB on the CUDA
  // backend, whose driver maps that much at start whatever the load.
  const int64_t idle_rss = server.ResidentBytes();
  std::atomic<bool> sampling{true};
  std::atomic<int64_t> peak_rss{0};
  std::thread sampler([&] {
    while (sampling.load()) {
      peak_rss.store(std::max(peak_rss.load(), server.ResidentBytes()));
      absl::SleepFor(absl::Milliseconds(5));
    }
  });
  std::vector<grpc::Status> statuses(kClients);
  std::vector<std::string> mismatches(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      // A connection each: gRPC's per-connection stream limit bounds nothing across them.
      auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
      grpc::ClientContext context;
      context.set_deadline(In(absl::Seconds(120)));
      NormalizeResponse response;
      statuses[c] = stub->Normalize(&context, request, &response);
      if (statuses[c].ok()) mismatches[c] = CompareWithReference(request, response);
    });
  }
  for (std::thread& t : clients) t.join();
  sampling.store(false);
  sampler.join();
  for (int c = 0; c < kClients; ++c) {
    EXPECT_TRUE(statuses[c].ok()) << "client " << c << ": " << statuses[c].error_message();
    EXPECT_EQ(mismatches[c], "") << "client " << c;
  }
  EXPECT_EQ(WaitForNoInflight(server), 0);
  if (!kSanitizedBuild) {
    // The budget plus 64 MiB over the idle size (on CUDA this includes pinned staging).
    EXPECT_LE(peak_rss.load() - idle_rss, int64_t{64 + 64} << 20)
        << "peak RSS " << (peak_rss.load() >> 20) << " MiB, idle " << (idle_rss >> 20) << " MiB";
  }
}

TEST(MemoryBoundTest, ANormalizeCallCarriesExactlyOneRequest) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu", "--max-memory-bytes=67108864"}).ok()) << server.log();
  const grpc::Status none =
      CallWithMessages(server.NewChannel(), "/normd.v1.Normalizer/Normalize", {});
  EXPECT_EQ(none.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << none.error_message();
  EXPECT_NE(none.error_message().find("sent none"), std::string::npos) << none.error_message();
  std::mt19937 rng(3);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 2, 64, false, rng);
  const std::string bytes = request.SerializeAsString();
  const grpc::Status two =
      CallWithMessages(server.NewChannel(), "/normd.v1.Normalizer/Normalize", {bytes, bytes});
  EXPECT_EQ(two.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << two.error_message();
  EXPECT_NE(two.error_message().find("more than one"), std::string::npos) << two.error_message();
  const grpc::Status one =
      CallWithMessages(server.NewChannel(), "/normd.v1.Normalizer/Normalize", {bytes});
  EXPECT_TRUE(one.ok()) << one.error_message();
  const grpc::Status unknown =
      CallWithMessages(server.NewChannel(), "/normd.v1.Normalizer/NoSuchMethod", {"x"});
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::UNIMPLEMENTED) << unknown.error_message();
  // normd still serves.
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  grpc::ClientContext context;
  context.set_deadline(In(absl::Seconds(30)));
  NormalizeResponse response;
  ASSERT_TRUE(stub->Normalize(&context, request, &response).ok());
  EXPECT_EQ(CompareWithReference(request, response), "");
}

// Two calls that open and never send their message hold the whole admitted share (each reserved
// room before its read); a third call waits, and leaves when its deadline passes. Once the two are
// cancelled their reservations come back and calls are served again.
TEST(MemoryBoundTest, AWaitingCallLeavesAtItsDeadlineAndNoReservationIsLeft) {
  NormdProcess server;
  // 64 MiB: a 32 MiB admitted share, 16 MiB reserved per call before its read.
  ASSERT_TRUE(server.Start({"--backend=cpu", "--max-memory-bytes=67108864"}).ok()) << server.log();
  grpc::GenericStub stub(server.NewChannel());
  grpc::CompletionQueue cq;
  grpc::ClientContext silent_context[2];
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> silent[2];
  void* tag = nullptr;
  bool ok = false;
  for (int i = 0; i < 2; ++i) {
    silent[i] = stub.PrepareCall(&silent_context[i], "/normd.v1.Normalizer/Normalize", &cq);
    silent[i]->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  }
  std::mt19937 rng(5);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 2, 64, false, rng);
  auto typed = normd::v1::Normalizer::NewStub(server.NewChannel());
  NormalizeResponse response;
  {
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(1)));
    const grpc::Status waited = typed->Normalize(&context, request, &response);
    EXPECT_EQ(waited.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << waited.error_message();
  }
  for (int i = 0; i < 2; ++i) silent_context[i].TryCancel();
  for (int i = 0; i < 2; ++i) {
    grpc::Status status;
    silent[i]->Finish(&status, reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  // Every reservation is back: large calls are served, one after another.
  const NormalizeRequest large = MakeRequest(DType::kFloat32, 384, 4096, false, rng);  // 6 MiB
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(30)));
    const grpc::Status status = typed->Normalize(&context, large, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(CompareWithReference(large, response), "");
  }
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

}  // namespace
}  // namespace normd::testing
