#include "tests/integration/hostile_clients.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/http_get.h"
#include "tests/integration/tensor_util.h"
#include "tests/wait_until.h"

namespace normd::testing {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

std::chrono::system_clock::time_point In(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

int64_t InflightRequests(const NormdProcess& server) {
  return static_cast<int64_t>(ScrapeSum(server.metrics_port(), "normd_inflight_requests"));
}

int64_t WaitForNoInflight(const NormdProcess& server, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  int64_t inflight = InflightRequests(server);
  while (inflight != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    inflight = InflightRequests(server);
  }
  return inflight;
}

WellBehavedClient::WellBehavedClient(const NormdProcess& server)
    : stub_(normd::v1::Normalizer::NewStub(server.NewChannel())), thread_([this] { Run(); }) {}

bool WellBehavedClient::WaitForMoreCalls(int more, absl::Duration timeout) {
  normd::MutexLock lock(&mu_);
  struct Target {
    const int* ok;
    const int* failed;
    int ok_wanted, failed_before;
  } target{&calls_ok_, &calls_failed_, calls_ok_ + more, calls_failed_};
  mu_.AwaitWithDeadline(
      absl::Condition(
          +[](Target* t) { return *t->ok >= t->ok_wanted || *t->failed != t->failed_before; },
          &target),
      absl::Now() + timeout);
  return calls_ok_ >= target.ok_wanted && calls_failed_ == target.failed_before;
}

WellBehavedClient::Summary WellBehavedClient::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  std::sort(latencies_.begin(), latencies_.end());
  summary_.calls = static_cast<int>(latencies_.size());
  if (!latencies_.empty()) {
    summary_.p50 = latencies_[latencies_.size() / 2];
    summary_.p99 = latencies_[latencies_.size() * 99 / 100];
    summary_.max = latencies_.back();
  }
  return summary_;
}

void WellBehavedClient::Run() {
  std::mt19937 rng(11);
  const NormalizeRequest request = MakeRequest(DType::kFloat32, 4, 1024, false, rng);
  while (!stop_.load()) {
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(10)));
    NormalizeResponse response;
    const absl::Time start = absl::Now();
    const grpc::Status status = stub_->Normalize(&context, request, &response);
    latencies_.push_back(absl::Now() - start);
    const bool ok = status.ok() && CompareWithReference(request, response).empty();
    if (!ok && summary_.failures++ == 0) {
      summary_.first_failure = absl::StrCat(status.error_code(), " ", status.error_message());
    }
    {
      normd::MutexLock lock(&mu_);
      ++(ok ? calls_ok_ : calls_failed_);
    }
    absl::SleepFor(absl::Milliseconds(5));  // its pace: a client, not a load generator
  }
}

void ExpectServedNormally(const char* test, const WellBehavedClient::Summary& s) {
  std::printf("[figure] %s: well-behaved client %d calls, %d failed, p50 %s p99 %s max %s\n", test,
              s.calls, s.failures, absl::FormatDuration(s.p50).c_str(),
              absl::FormatDuration(s.p99).c_str(), absl::FormatDuration(s.max).c_str());
  EXPECT_GT(s.calls, 0);
  EXPECT_EQ(s.failures, 0) << s.first_failure;
}

bool WaitForStreamAnswers(const NormdProcess& server, int count) {
  return WaitUntil([&] {
    return ScrapeSum(server.metrics_port(), "normd_requests_total",
                     {{"method", "NormalizeStream"}, {"code", "OK"}}) >= count;
  });
}

void WaitForWriterToStall(const std::atomic<int>& written, const std::function<bool()>& finished) {
  for (int last = -1; written.load() != last && !finished();) {
    last = written.load();
    absl::SleepFor(absl::Seconds(1));
  }
}

}  // namespace normd::testing
