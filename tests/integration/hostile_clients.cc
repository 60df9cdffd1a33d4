#include "tests/integration/hostile_clients.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <regex>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/http_get.h"
#include "tests/integration/tensor_util.h"

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
  absl::StatusOr<std::string> text = HttpGet(server.metrics_port(), "/metrics");
  if (!text.ok()) return -1;
  static const std::regex kInflight(R"((^|\n)normd_inflight_requests (\S+))");
  std::smatch match;
  if (!std::regex_search(*text, match, kInflight)) return -1;
  return static_cast<int64_t>(std::stod(match[2]));
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
    if (!status.ok() || !CompareWithReference(request, response).empty()) {
      if (summary_.failures++ == 0) {
        summary_.first_failure = absl::StrCat(status.error_code(), " ", status.error_message());
      }
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
}

void ExpectServedNormally(const char* test, const WellBehavedClient::Summary& s) {
  std::printf("[figure] %s: well-behaved client %d calls, %d failed, p50 %s p99 %s max %s\n", test,
              s.calls, s.failures, absl::FormatDuration(s.p50).c_str(),
              absl::FormatDuration(s.p99).c_str(), absl::FormatDuration(s.max).c_str());
  EXPECT_GT(s.calls, 0);
  EXPECT_EQ(s.failures, 0) << s.first_failure;
  // Sanitizers slow normd 2-15x: there the bound only says "still answered promptly".
  EXPECT_LT(s.p50, kSanitizedBuild ? absl::Milliseconds(500) : absl::Milliseconds(50));
  EXPECT_LT(s.max, kSanitizedBuild ? absl::Seconds(10) : absl::Seconds(2));
}

}  // namespace normd::testing
