#include "tests/integration/region_test_util.h"

#include <unistd.h>

#include <atomic>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernels/dtype.h"
#include "tests/integration/http_get.h"
#include "tests/wait_until.h"

namespace normd::testing {

std::string UnixSocketPath(const std::string& tag) {
  static std::atomic<int> counter{0};
  return absl::StrCat("/tmp/normd-", tag, "-", getpid(), "-", counter.fetch_add(1), ".sock");
}

std::unique_ptr<Client> ConnectOwn(const std::string& target) {
  ClientOptions options;
  options.target = target;
  options.own_connection = true;
  options.max_attempts = 1;
  options.default_deadline = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  return client.ok() ? *std::move(client) : nullptr;
}

void FillBf16(std::span<uint16_t> out, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  for (uint16_t& v : out) v = FloatToBFloat16(normal(rng));
}

absl::StatusOr<InlineResult> ComputeInline(Client& client, std::span<const uint16_t> input,
                                           std::span<const uint16_t> residual,
                                           std::span<const float> weight, int64_t rows,
                                           int64_t hidden) {
  NormalizeOptions options;
  if (!residual.empty()) options.residual = TensorView::BFloat16(residual, {rows, hidden});
  absl::StatusOr<NormalizeResult> result = client.Normalize(
      TensorView::BFloat16(input, {rows, hidden}), TensorView::Float32(weight), options);
  if (!result.ok()) return result.status();
  InlineResult out;
  out.output = result->output.bytes();
  if (result->residual_out) out.residual_out = result->residual_out->bytes();
  return out;
}

absl::StatusOr<double> MetricSample(int metrics_port, const std::string& series) {
  absl::StatusOr<std::string> body = HttpGet(metrics_port, "/metrics");
  if (!body.ok()) return body.status();
  std::istringstream in(*body);
  for (std::string line; std::getline(in, line);) {
    if (!absl::StartsWith(line, series + " ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(series.size() + 1), &value)) return value;
  }
  return absl::NotFoundError(absl::StrCat(series, " is not on /metrics"));
}

bool WaitForMetric(int metrics_port, const std::string& series, double value,
                   absl::Duration timeout) {
  return WaitUntil(
      [&] {
        absl::StatusOr<double> got = MetricSample(metrics_port, series);
        return got.ok() && *got == value;
      },
      timeout);
}

}  // namespace normd::testing
