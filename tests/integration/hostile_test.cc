// Hostile and broken clients against the real binary on loopback, one message at a time: bytes that
// are not a protobuf, shapes that lie about their size, 1 µs deadlines. (Streams that are abused,
// and clients that vanish, are in hostile_stream_test.cc.) Each test runs a well-behaved client
// (hostile_clients.h: one small Normalize every 5 ms) for its whole length and checks that it was
// served, OK and with normal latency, while another client misbehaves; after each,
// normd_inflight_requests on /metrics must return to 0. The suites are sized to run in well under
// 40 s on 2 cores.
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <random>
#include <thread>

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

// A NormalizeStream through the generic API: a good message, then `bad` bytes, then half-close.
class BadStreamMessage final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  BadStreamMessage(const std::shared_ptr<grpc::Channel>& channel, const std::string& good,
                   const std::string& bad)
      : stub_(channel), good_(ToByteBuffer(good)), bad_(ToByteBuffer(bad)) {
    context_.set_deadline(In(absl::Seconds(10)));
    stub_.PrepareBidiStreamingCall(&context_, "/normd.v1.Normalizer/NormalizeStream",
                                   grpc::StubOptions(), this);
    normd::HandingToLibrary(this);  // see base/mutex.h: gRPC's hand-offs, stated for TSan
    StartWrite(&good_);
    StartRead(&response_);
    StartCall();
    done_.WaitForNotification();
  }
  int responses() const { return responses_; }
  const grpc::Status& status() const { return status_; }

  void OnWriteDone(bool ok) override {
    normd::TakenBackFromLibrary(this);
    const bool write_bad_next = ok && writes_++ == 0;
    normd::HandingToLibrary(this);
    if (write_bad_next) {
      StartWrite(&bad_);
    } else {
      StartWritesDone();
    }
  }
  void OnReadDone(bool ok) override {
    normd::TakenBackFromLibrary(this);
    if (!ok) return;
    ++responses_;
    normd::HandingToLibrary(this);
    StartRead(&response_);
  }
  void OnDone(const grpc::Status& status) override {
    normd::TakenBackFromLibrary(this);
    status_ = status;
    done_.Notify();
  }

 private:
  grpc::GenericStub stub_;
  grpc::ClientContext context_;
  grpc::ByteBuffer good_, bad_, response_;
  int writes_ = 0;
  int responses_ = 0;
  grpc::Status status_;
  normd::Notification done_;
};

TEST(HostileTest, BytesThatAreNotAProtobufAreRefused) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  WellBehavedClient good(server);
  std::mt19937 rng(3);
  std::string valid;
  MakeRequest(DType::kFloat32, 2, 64, false, rng).SerializeToString(&valid);
  std::string random(4096, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  struct Case {
    const char* name;
    std::string bytes;
  };
  const Case kCases[] = {
      {"random bytes", random},
      {"all 0xff", std::string(1000, '\xff')},
      {"truncated valid message", valid.substr(0, valid.size() / 2)},
      {"field 1 claims 2 GiB of length", std::string("\x0a\xff\xff\xff\xff\x07", 6)},
      {"unterminated varint", std::string("\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11)},
      {"end-group without start", std::string("\x0c", 1)},
      {"nested 100000 deep", std::string(100000, '\x0a')},
  };
  grpc::GenericStub generic(server.NewChannel());
  for (const Case& c : kCases) {
    for (int i = 0; i < 20;
         ++i) {  // repeated, so that a leak per bad call would show in the RSS below
      grpc::ClientContext context;
      context.set_deadline(In(absl::Seconds(10)));
      const grpc::ByteBuffer request = ToByteBuffer(c.bytes);
      grpc::ByteBuffer response;
      normd::Notification done;
      grpc::Status status;
      generic.UnaryCall(&context, "/normd.v1.Normalizer/Normalize", grpc::StubOptions(), &request,
                        &response, [&](grpc::Status s) {
                          status = std::move(s);
                          done.Notify();
                        });
      done.WaitForNotification();
      // normd parses Normalize's bytes itself (the method is registered raw) and says what is
      // wrong; gRPC's typed handler would answer UNIMPLEMENTED with no message.
      EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT)
          << c.name << ": " << status.error_message();
      EXPECT_NE(status.error_message().find("not a normd.v1.NormalizeRequest"), std::string::npos)
          << c.name << ": " << status.error_message();
    }
    // On a stream, after one good message: the good one is answered, and the stream must not end OK
    // as if the client had half-closed (that would drop the bad message silently).
    BadStreamMessage stream(server.NewChannel(), valid, c.bytes);
    EXPECT_EQ(stream.responses(), 1) << c.name;
    EXPECT_FALSE(stream.status().ok()) << c.name << ": a stream with a bad message ended OK";
    EXPECT_TRUE(good.WaitForMoreCalls(1))
        << "after " << c.name << ": the well-behaved client was not served";
    if (HasFailure()) break;  // later cases would only repeat it (the server's report follows)
  }
  ExpectServedNormally("not a protobuf", good.Stop());
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

TEST(HostileTest, ShapesThatLieAboutTheirSizeAreRefused) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  const int64_t rss_before = server.ResidentBytes();
  WellBehavedClient good(server);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    const char* name;
    std::vector<int64_t> shape;
  };
  const Case kCases[] = {
      {"2^40 rows of 4096, 16 bytes of data", {int64_t{1} << 40, 4096}},
      {"product overflows int64", {kMax, kMax, 2}},
      {"product wraps to a small number", {int64_t{1} << 62, 4, 4}},
      {"hidden 2^62", {1, int64_t{1} << 62}},
      {"negative dimension", {-4, 1}},
      {"zero dimension", {0, 4}},
      {"64 dimensions of 2^20", std::vector<int64_t>(64, int64_t{1} << 20)},
      {"rows times hidden = 4 but 10^6 dimensions of 1", std::vector<int64_t>(1000000, 1)},
  };
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  for (const Case& c : kCases) {
    NormalizeRequest request;
    request.mutable_input()->set_dtype(normd::v1::DTYPE_FLOAT32);
    for (int64_t d : c.shape) request.mutable_input()->add_shape(d);
    request.mutable_input()->set_data(std::string(16, '\0'));
    request.mutable_weight()->set_dtype(normd::v1::DTYPE_FLOAT32);
    request.mutable_weight()->add_shape(4);
    request.mutable_weight()->set_data(std::string(16, '\0'));
    for (bool stream : {false, true}) {
      grpc::ClientContext context;
      context.set_deadline(In(absl::Seconds(10)));
      grpc::Status status;
      if (stream) {
        auto call = stub->NormalizeStream(&context);
        call->Write(request);
        call->WritesDone();
        NormalizeResponse response;
        while (call->Read(&response)) {
        }
        status = call->Finish();
      } else {
        NormalizeResponse response;
        status = stub->Normalize(&context, request, &response);
      }
      EXPECT_TRUE(status.error_code() == grpc::INVALID_ARGUMENT ||
                  status.error_code() == grpc::RESOURCE_EXHAUSTED)
          << c.name << (stream ? " (stream)" : "") << ": " << status.error_code() << " "
          << status.error_message();
    }
    EXPECT_TRUE(good.WaitForMoreCalls(1))
        << "after " << c.name << ": the well-behaved client was not served";
  }
  ExpectServedNormally("lying shapes", good.Stop());
  // Nothing was allocated for the shapes claimed (2^40 rows would be 16 PiB).
  if (!kSanitizedBuild) EXPECT_LT(server.ResidentBytes() - rss_before, int64_t{64} << 20);
  EXPECT_EQ(WaitForNoInflight(server), 0);
}

TEST(HostileTest, OneMicrosecondDeadlinesUnderConcurrency) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  WellBehavedClient good(server);
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(9);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 128, 4096, false, rng);
  std::atomic<int> exceeded{0}, ok{0}, other{0}, calls{0};
  // Each thread makes at least 50 calls, and goes on until the well-behaved client has been served
  // three times while they all ran.
  std::atomic<bool> good_served{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50 || !good_served.load(); ++i) {
        ++calls;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::microseconds(1));
        NormalizeResponse response;
        grpc::Status status;
        if (t % 2 == 0) {
          status = stub->Normalize(&context, request, &response);
        } else {
          auto call = stub->NormalizeStream(&context);
          call->Write(request);
          call->WritesDone();
          while (call->Read(&response)) {
          }
          status = call->Finish();
        }
        if (status.error_code() == grpc::DEADLINE_EXCEEDED) {
          ++exceeded;
        } else if (status.ok()) {
          ++ok;  // possible in principle; 1 µs is shorter than any call takes
        } else {
          ++other;
          ADD_FAILURE() << status.error_code() << " " << status.error_message();
        }
      }
    });
  }
  EXPECT_TRUE(good.WaitForMoreCalls(3))
      << "the well-behaved client was not served during the 1 us deadline calls";
  good_served.store(true);
  for (auto& t : threads) t.join();
  std::printf("[figure] 1 us deadlines: %d DEADLINE_EXCEEDED, %d ok, %d other of %d\n",
              exceeded.load(), ok.load(), other.load(), calls.load());
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(exceeded.load(), 0);
  EXPECT_EQ(WaitForNoInflight(server), 0);
  ExpectServedNormally("1 us deadlines", good.Stop());
}

}  // namespace
}  // namespace normd::testing
