// overload_client: the clients of normd's memory-bound overload runs
// (tests/soak/overload_memory.py).
//
// Runs up to three kinds of clients at once against one normd for --seconds, each on its own
// connection, and prints one summary line per kind (key=value, for the script to read):
//   large   --large-clients closed loops of --large-rows x --hidden bf16 requests (4096 x 4096 is
//           32 MiB), answers checked against the fp64 reference;
//   small   --small-clients closed loops of 1 x --hidden bf16 requests, checked the same way, with
//           their latency percentiles (the well-behaved clients whose p99 the runs report);
//   silent  --silent-connections connections, each opening --silent-streams NormalizeStreams that
//           write --silent-rows x --hidden bf16 requests as fast as normd takes them and never read
//           a response.
// A call that ends RESOURCE_EXHAUSTED counts as refused, one that ends UNAVAILABLE because its
// connection got a GOAWAY as refused by gRPC before normd saw it (goaway; a client retries it);
// any other failure, or an OK answer that does not match the reference, counts against the run.
// Exit status 0 unless a client could not start.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/command_line.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/tensor_util.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "normd's address");
ABSL_FLAG(double, seconds, 10, "how long the clients send");
ABSL_FLAG(int, large_clients, 0, "closed-loop clients of large requests");
ABSL_FLAG(int64_t, large_rows, 4096, "rows of a large request");
ABSL_FLAG(int, small_clients, 0, "closed-loop clients of 1-row requests");
ABSL_FLAG(int, silent_connections, 0, "connections whose streams write and never read");
ABSL_FLAG(int, silent_streams, 1, "NormalizeStreams each silent connection opens");
ABSL_FLAG(int64_t, silent_rows, 64, "rows of a silent stream's requests");
ABSL_FLAG(int64_t, hidden, 4096, "hidden size of every request");
ABSL_FLAG(double, call_deadline_s, 120, "deadline of each unary call");

namespace normd::testing {
namespace {

using normd::v1::Normalizer;
using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

// Each client its own HTTP/2 connection: channels with distinct arguments share no subchannel.
std::shared_ptr<grpc::Channel> NewConnection(int index) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  args.SetMaxReceiveMessageSize(-1);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("normd.overload_client.connection", index);
  return grpc::CreateCustomChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(),
                                   args);
}

// What one kind of client saw. Latencies are of OK calls only.
struct Tally {
  absl::Mutex mu;
  int64_t ok = 0, refused = 0, goaway = 0, other = 0, wrong = 0;
  std::string first_other, first_refused;
  std::vector<absl::Duration> latencies;

  void Add(const grpc::Status& status, bool matches, absl::Duration latency) {
    absl::MutexLock lock(&mu);
    if (status.ok() && matches) {
      ++ok;
      latencies.push_back(latency);
    } else if (status.ok()) {
      ++wrong;
    } else if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      if (refused++ == 0) first_refused = status.error_message();
    } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
               status.error_message() == "GOAWAY received") {
      ++goaway;
    } else {
      if (other++ == 0) {
        first_other = absl::StrCat(status.error_code(), " ", status.error_message());
      }
    }
  }

  std::string Line(const char* kind) {
    absl::MutexLock lock(&mu);
    std::sort(latencies.begin(), latencies.end());
    auto at = [&](double q) {
      if (latencies.empty()) return int64_t{-1};
      return absl::ToInt64Microseconds(latencies[static_cast<size_t>(q * (latencies.size() - 1))]);
    };
    return absl::StrCat(kind, " ok=", ok, " refused=", refused, " goaway=", goaway,
                        " other=", other, " wrong=", wrong, " p50_us=", at(0.5),
                        " p99_us=", at(0.99), " max_us=", at(1.0), " first_other='", first_other,
                        "' first_refused='", first_refused, "'");
  }
};

// One request and the check of its answers: the first OK answer is compared with the fp64
// reference; later ones that are byte-identical to a verified answer pass at once, and any other is
// compared with the reference again (a backend may round differently in another launch shape).
class CheckedRequest {
 public:
  CheckedRequest(int64_t rows, int64_t hidden, uint32_t seed) {
    std::mt19937 rng(seed);
    request_ = MakeRequest(DType::kBFloat16, rows, hidden, /*residual=*/false, rng);
  }
  const NormalizeRequest& request() const { return request_; }

  bool Matches(const NormalizeResponse& response) {
    {
      absl::MutexLock lock(&mu_);
      if (!verified_.empty() && response.output().data() == verified_) return true;
    }
    if (!CompareWithReference(request_, response).empty()) return false;
    absl::MutexLock lock(&mu_);
    verified_ = response.output().data();
    return true;
  }

 private:
  NormalizeRequest request_;
  absl::Mutex mu_;
  std::string verified_;
};

void ClosedLoop(int index, CheckedRequest* checked, absl::Time end, Tally* tally) {
  std::unique_ptr<Normalizer::Stub> stub = Normalizer::NewStub(NewConnection(index));
  const absl::Duration deadline = absl::Seconds(absl::GetFlag(FLAGS_call_deadline_s));
  while (absl::Now() < end) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    NormalizeResponse response;
    const absl::Time start = absl::Now();
    const grpc::Status status = stub->Normalize(&context, checked->request(), &response);
    const absl::Duration latency = absl::Now() - start;
    tally->Add(status, status.ok() && checked->Matches(response), latency);
    // A refused client backs off a little, as a real one would, instead of spinning.
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      absl::SleepFor(absl::Milliseconds(5));
    }
  }
}

// A NormalizeStream that writes one request after another and never reads.
class SilentStream : public grpc::ClientBidiReactor<NormalizeRequest, NormalizeResponse> {
 public:
  SilentStream(Normalizer::Stub* stub, const NormalizeRequest* request) : request_(request) {
    stub->async()->NormalizeStream(&context_, this);
    StartWrite(request_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return;
    written_.fetch_add(1);
    StartWrite(request_);
  }
  void OnDone(const grpc::Status& status) override {
    status_ = status;
    done_.Notify();
  }
  // Cancels the stream and waits until gRPC is done with it; returns how it ended.
  grpc::Status Stop() {
    context_.TryCancel();
    done_.WaitForNotification();
    return status_;
  }
  int64_t written() const { return written_.load(); }

 private:
  const NormalizeRequest* request_;
  grpc::ClientContext context_;
  std::atomic<int64_t> written_{0};
  grpc::Status status_;
  absl::Notification done_;
};

int Run() {
  const int64_t hidden = absl::GetFlag(FLAGS_hidden);
  // Built only when used: 4096 x 4096 random values take a while on a busy machine.
  CheckedRequest large(absl::GetFlag(FLAGS_large_clients) > 0 ? absl::GetFlag(FLAGS_large_rows) : 1,
                       hidden, 1);
  CheckedRequest small(1, hidden, 2);
  std::mt19937 rng(3);
  const NormalizeRequest silent_request = MakeRequest(
      DType::kBFloat16, absl::GetFlag(FLAGS_silent_rows), hidden, /*residual=*/false, rng);

  // Silent streams first, so that the closed loops run while they hold whatever normd gives them.
  std::vector<std::unique_ptr<Normalizer::Stub>> silent_stubs;
  std::vector<std::unique_ptr<SilentStream>> silent;
  for (int c = 0; c < absl::GetFlag(FLAGS_silent_connections); ++c) {
    silent_stubs.push_back(Normalizer::NewStub(NewConnection(100000 + c)));
    for (int s = 0; s < absl::GetFlag(FLAGS_silent_streams); ++s) {
      silent.push_back(std::make_unique<SilentStream>(silent_stubs.back().get(), &silent_request));
    }
  }
  // The clock starts once everything is built and the silent streams are open.
  const absl::Time end = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_seconds));
  Tally large_tally, small_tally;
  std::vector<std::thread> threads;
  for (int i = 0; i < absl::GetFlag(FLAGS_large_clients); ++i) {
    threads.emplace_back(ClosedLoop, i, &large, end, &large_tally);
  }
  for (int i = 0; i < absl::GetFlag(FLAGS_small_clients); ++i) {
    threads.emplace_back(ClosedLoop, 1000 + i, &small, end, &small_tally);
  }
  for (auto& t : threads) t.join();
  if (const absl::Duration left = end - absl::Now(); left > absl::ZeroDuration()) {
    absl::SleepFor(left);
  }

  int64_t written = 0, refused = 0, goaway = 0, cancelled = 0, other = 0;
  std::string first_other;
  for (auto& stream : silent) {
    written += stream->written();
    const grpc::Status status = stream->Stop();
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++refused;
    } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
               status.error_message() == "GOAWAY received") {
      ++goaway;
    } else if (status.error_code() == grpc::StatusCode::CANCELLED) {
      ++cancelled;  // still open at the end: cancelled here
    } else if (other++ == 0) {
      first_other = absl::StrCat(status.error_code(), " ", status.error_message());
    }
  }
  if (absl::GetFlag(FLAGS_large_clients) > 0)
    std::printf("%s\n", large_tally.Line("large").c_str());
  if (absl::GetFlag(FLAGS_small_clients) > 0)
    std::printf("%s\n", small_tally.Line("small").c_str());
  if (!silent.empty()) {
    std::printf(
        "silent streams=%zu written=%lld refused=%lld goaway=%lld cancelled=%lld "
        "other=%lld first_other='%s'\n",
        silent.size(), static_cast<long long>(written), static_cast<long long>(refused),
        static_cast<long long>(goaway), static_cast<long long>(cancelled),
        static_cast<long long>(other), first_other.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace normd::testing

int main(int argc, char** argv) {
  normd::ParseCommandLineWithDashes(argc, argv);
  return normd::testing::Run();
}
